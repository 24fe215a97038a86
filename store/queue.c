/*
 * queue.c: admissions, recorded off the answer's path: a request thread
 * appends to a list and returns; the writer thread commits what the list
 * holds in one transaction and takes it off the list after.  An admission
 * of a job (fingerprint, card and count) already waiting is counted in
 * that entry, and the writer gathers for MF_STORE_WINDOW_MS before it
 * commits: one statement a job a window, however many admissions.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../admission/base/str.h"
#include "store_int.h"

/* The job as placed, for the writer: what mf_fp_write reads of it, the
 * strings it borrows (which the request frees) left out. */
static void
placed_copy(struct mf_job *to, const struct mf_job *job)
{
	*to = *job;
	to->name = to->model_name = to->config_url = NULL;
	to->observed = NULL;
}

/* Under s->lock: whether p's job waits already, not yet taken by the
 * writer; then that entry counts p and takes its text (the latest
 * admission's, as a row's update takes it). */
static int
counted(struct mf_store *s, struct pending *p)
{
	for (struct pending *q = s->head; q != NULL; q = q->next)
		if (!q->taken && q->count == p->count &&
		    strcmp(q->fingerprint, p->fingerprint) == 0 &&
		    strcmp(q->card, p->card) == 0) {
			q->times++;
			q->at = p->at;
			q->job = p->job;
			q->fixes = p->fixes;
			return 1;
		}
	return 0;
}

int
mf_store_admitted(struct mf_store *s, const char *fingerprint,
    const struct mf_job *job, unsigned fixes, int64_t count, const char *card)
{
	struct pending *p;

	if (s == NULL || (p = calloc(1, sizeof(*p))) == NULL) {
		if (s != NULL)
			atomic_fetch_add(&s->dropped, 1);
		return -1;
	}
	mf_copy(p->fingerprint, sizeof(p->fingerprint), fingerprint);
	mf_copy(p->card, sizeof(p->card), card);
	placed_copy(&p->job, job);
	p->fixes = fixes;
	p->count = count;
	p->at = (int64_t)time(NULL);
	p->times = 1;
	pthread_mutex_lock(&s->lock);
	if (counted(s, p)) {
		pthread_mutex_unlock(&s->lock);
		free(p);
		return 0;
	}
	if (s->queued >= MF_STORE_QUEUE_MAX || s->stop) {
		pthread_mutex_unlock(&s->lock);
		atomic_fetch_add(&s->dropped, 1);
		free(p);
		return -1;
	}
	if (s->tail != NULL)
		s->tail->next = p;
	else
		s->head = p;
	s->tail = p;
	s->queued++;
	s->enqueued++;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* Commit first..last in one transaction: 0, -1 when a statement failed
 * (the batch is dropped), 1 when the database could not be reached (it
 * is tried again). */
static int
write_batch(struct mf_store *s, struct pending *first,
    const struct pending *last)
{
	int failed = 0;

	pthread_mutex_lock(&s->db_lock);
	if (mf_store_exec(s, s->ops->begin) != 0) {
		pthread_mutex_unlock(&s->db_lock);
		return atomic_load(&s->up) ? -1 : 1;
	}
	for (const struct pending *p = first;; p = p->next) {
		failed |= mf_store_write_admission(s, p) != 0;
		if (p == last || failed)
			break;
	}
	if (!failed && mf_store_exec(s, "COMMIT") == 0) {
		pthread_mutex_unlock(&s->db_lock);
		return 0;
	}
	/* Whether it was reached is the statement's, not the rollback's. */
	failed = atomic_load(&s->up) ? -1 : 1;
	mf_store_exec(s, "ROLLBACK");
	pthread_mutex_unlock(&s->db_lock);
	return failed;
}

static void
free_batch(struct pending *first, const struct pending *last)
{
	struct pending *p = first, *next;

	for (;;) {
		int end = p == last;

		next = p->next;
		free(p);
		if (end)
			break;
		p = next;
	}
}

/* Under s->lock: a second for the database to come back, or stop. */
static void
stall(struct mf_store *s)
{
	struct timespec due;

	s->stalled = 1;
	pthread_cond_broadcast(&s->done);
	clock_gettime(CLOCK_REALTIME, &due);
	due.tv_sec += 1;
	while (
	    !s->stop && pthread_cond_timedwait(&s->wake, &s->lock, &due) == 0)
		;
	s->stalled = 0;
}

/* Under s->lock: MF_STORE_WINDOW_MS for more admissions to come, unless
 * the store stops or a flush waits. */
static void
gather(struct mf_store *s)
{
	struct timespec due;

	clock_gettime(CLOCK_REALTIME, &due);
	due.tv_nsec += MF_STORE_WINDOW_MS * 1000000L;
	due.tv_sec += due.tv_nsec / 1000000000L;
	due.tv_nsec %= 1000000000L;
	while (!s->stop && !s->hurry &&
	    pthread_cond_timedwait(&s->wake, &s->lock, &due) == 0)
		;
}

static void *
writer(void *arg)
{
	struct mf_store *s = arg;
	struct pending *first, *last;
	size_t n;
	int rc;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (s->head == NULL && !s->stop)
			pthread_cond_wait(&s->wake, &s->lock);
		if (s->head == NULL)
			break;
		gather(s);
		first = s->head;
		last = s->tail;
		n = s->queued;
		for (struct pending *p = first; p != last->next; p = p->next)
			p->taken = 1;
		pthread_mutex_unlock(&s->lock);
		rc = write_batch(s, first, last);
		pthread_mutex_lock(&s->lock);
		if (rc > 0 && !s->stop) {
			/* Waiting again: an admission of one of their jobs
			 * counts in its entry, not in one more beside it. */
			for (struct pending *p = first; p != last->next;
			     p = p->next)
				p->taken = 0;
			stall(s);
			continue;
		}
		if (rc != 0)
			atomic_fetch_add(&s->dropped, n);
		s->head = last->next;
		if (s->head == NULL)
			s->tail = NULL;
		s->queued -= n;
		s->written += n;
		pthread_cond_broadcast(&s->done);
		pthread_mutex_unlock(&s->lock);
		free_batch(first, last);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int
mf_store_queue_start(struct mf_store *s)
{
	if (pthread_create(&s->writer, NULL, writer, s) != 0)
		return -1;
	s->writer_running = 1;
	return 0;
}

void
mf_store_queue_stop(struct mf_store *s)
{
	if (!s->writer_running)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->writer, NULL);
	s->writer_running = 0;
}

void
mf_store_flush(struct mf_store *s)
{
	uint64_t target;

	if (s == NULL)
		return;
	pthread_mutex_lock(&s->lock);
	target = s->enqueued;
	s->hurry++;
	pthread_cond_signal(&s->wake);
	while (s->written < target && s->writer_running && !s->stalled)
		pthread_cond_wait(&s->done, &s->lock);
	s->hurry--;
	pthread_mutex_unlock(&s->lock);
}

size_t
mf_store_queued(struct mf_store *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = s->queued;
	pthread_mutex_unlock(&s->lock);
	return n;
}

uint64_t
mf_store_dropped(struct mf_store *s)
{
	return s ? atomic_load(&s->dropped) : 0;
}

int
mf_store_knows_queued(struct mf_store *s, const char *fingerprint)
{
	int found = 0;

	pthread_mutex_lock(&s->lock);
	for (const struct pending *p = s->head; p != NULL && !found;
	     p = p->next)
		found = strcmp(p->fingerprint, fingerprint) == 0;
	pthread_mutex_unlock(&s->lock);
	return found;
}
