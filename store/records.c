/*
 * records.c: the statements of the store: observations added, listed and
 * taken back, admissions written and looked up.  Each runs under db_lock.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../admission/base/str.h"
#include "store_int.h"

static enum mf_rc
db_fail(struct mf_store *s, const char *what, struct mf_error *err)
{
	mf_error_set(err, MF_EIO, NULL, 0, 0, "store: %s: %s", what,
	    sqlite3_errmsg(s->db));
	return MF_EIO;
}

static void
bind_int(sqlite3_stmt *st, int i, int64_t v)
{
	if (v < 0)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_int64(st, i, v);
}

static void
bind_real(sqlite3_stmt *st, int i, double v)
{
	if (v < 0)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_double(st, i, v);
}

static void
bind_text(sqlite3_stmt *st, int i, const char *s)
{
	sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

static const char insert_sql[] =
    "INSERT INTO observations (fingerprint, card, count, peak_reserved,"
    " peak_allocated, device_used, tokens_per_second, step_seconds,"
    " tokens_per_step, source, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

enum mf_rc
mf_store_add(struct mf_store *s, struct mf_observation *o, struct mf_error *err)
{
	int64_t now = (int64_t)time(NULL);
	enum mf_rc rc = MF_OK;
	sqlite3_stmt *st;

	pthread_mutex_lock(&s->db_lock);
	if (sqlite3_prepare_v2(s->db, insert_sql, -1, &st, NULL) != SQLITE_OK) {
		rc = db_fail(s, "add", err);
		goto out;
	}
	bind_text(st, 1, o->fingerprint);
	bind_text(st, 2, o->card);
	sqlite3_bind_int64(st, 3, o->count);
	bind_int(st, 4, o->peak_reserved);
	bind_int(st, 5, o->peak_allocated);
	bind_int(st, 6, o->device_used);
	bind_real(st, 7, o->tokens_per_second);
	bind_real(st, 8, o->step_seconds);
	bind_real(st, 9, o->tokens_per_step);
	bind_text(st, 10, o->source);
	sqlite3_bind_int64(st, 11, now);
	if (sqlite3_step(st) != SQLITE_DONE) {
		rc = db_fail(s, "add", err);
	} else {
		o->id = sqlite3_last_insert_rowid(s->db);
		o->created_at = now;
	}
	sqlite3_finalize(st);
out:
	pthread_mutex_unlock(&s->db_lock);
	return rc;
}

enum mf_rc
mf_store_delete(struct mf_store *s, int64_t id, struct mf_error *err)
{
	enum mf_rc rc = MF_OK;
	sqlite3_stmt *st;

	pthread_mutex_lock(&s->db_lock);
	if (sqlite3_prepare_v2(s->db, "DELETE FROM observations WHERE id = ?",
	        -1, &st, NULL) != SQLITE_OK) {
		rc = db_fail(s, "delete", err);
		goto out;
	}
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = db_fail(s, "delete", err);
	else if (sqlite3_changes(s->db) == 0)
		rc = mf_error_set(err, MF_ENOTFOUND, NULL, 0, 0,
		    "no observation %lld", (long long)id);
	sqlite3_finalize(st);
out:
	pthread_mutex_unlock(&s->db_lock);
	return rc;
}

static int64_t
col_int(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ?
	    -1 :
	    sqlite3_column_int64(st, i);
}

static double
col_real(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ?
	    -1 :
	    sqlite3_column_double(st, i);
}

static void
col_text(sqlite3_stmt *st, int i, char *dst, size_t size)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	mf_copy(dst, size, t ? (const char *)t : "");
}

static void
read_row(sqlite3_stmt *st, struct mf_observation *o)
{
	o->id = sqlite3_column_int64(st, 0);
	col_text(st, 1, o->fingerprint, sizeof(o->fingerprint));
	col_text(st, 2, o->card, sizeof(o->card));
	o->count = sqlite3_column_int64(st, 3);
	o->peak_reserved = col_int(st, 4);
	o->peak_allocated = col_int(st, 5);
	o->device_used = col_int(st, 6);
	o->tokens_per_second = col_real(st, 7);
	o->step_seconds = col_real(st, 8);
	o->tokens_per_step = col_real(st, 9);
	col_text(st, 10, o->source, sizeof(o->source));
	o->created_at = sqlite3_column_int64(st, 11);
}

static const char list_sql[] =
    "SELECT id, fingerprint, card, count, peak_reserved, peak_allocated,"
    " device_used, tokens_per_second, step_seconds, tokens_per_step,"
    " source, created_at FROM observations WHERE fingerprint = ?"
    " ORDER BY id LIMIT ?";
static const char all_sql[] =
    "SELECT id, fingerprint, card, count, peak_reserved, peak_allocated,"
    " device_used, tokens_per_second, step_seconds, tokens_per_step,"
    " source, created_at FROM observations"
    " ORDER BY fingerprint, card, id LIMIT ?";

/* The rows of st into a list of at most max. */
static enum mf_rc
read_rows(struct mf_store *s, sqlite3_stmt *st, size_t max,
    struct mf_observation **out, size_t *n, struct mf_error *err)
{
	struct mf_observation *list = NULL, *p;
	size_t cap = 0, k = 0;
	int step;

	while ((step = sqlite3_step(st)) == SQLITE_ROW && k < max) {
		if (k == cap) {
			cap = cap ? 2 * cap : 16;
			p = realloc(list, cap * sizeof(*list));
			if (p == NULL) {
				free(list);
				return mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
				    "out of memory");
			}
			list = p;
		}
		read_row(st, &list[k++]);
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE) {
		free(list);
		return db_fail(s, "list", err);
	}
	*out = list;
	*n = k;
	return MF_OK;
}

enum mf_rc
mf_store_list(struct mf_store *s, const char *fingerprint, size_t max,
    struct mf_observation **out, size_t *n, struct mf_error *err)
{
	sqlite3_stmt *st;
	enum mf_rc rc;

	pthread_mutex_lock(&s->db_lock);
	if (sqlite3_prepare_v2(s->db, fingerprint ? list_sql : all_sql, -1, &st,
	        NULL) != SQLITE_OK) {
		rc = db_fail(s, "list", err);
		pthread_mutex_unlock(&s->db_lock);
		return rc;
	}
	if (fingerprint != NULL)
		bind_text(st, 1, fingerprint);
	sqlite3_bind_int64(st, fingerprint ? 2 : 1, (int64_t)max);
	rc = read_rows(s, st, max, out, n, err);
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->db_lock);
	return rc;
}

static const char admit_sql[] =
    "INSERT INTO admissions (fingerprint, job, card, count, created_at,"
    " seen_at, times) VALUES (?, ?, ?, ?, ?, ?, 1)"
    " ON CONFLICT (fingerprint, card, count) DO UPDATE SET"
    " job = excluded.job, seen_at = excluded.seen_at, times = times + 1";

int
mf_store_write_admission(struct mf_store *s, const struct pending *p)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(s->db, admit_sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	bind_text(st, 1, p->fingerprint);
	bind_text(st, 2, p->job);
	bind_text(st, 3, p->card);
	sqlite3_bind_int64(st, 4, p->count);
	sqlite3_bind_int64(st, 5, p->at);
	sqlite3_bind_int64(st, 6, p->at);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
	sqlite3_finalize(st);
	return rc;
}

/* The job of fingerprint's latest admission (malloc'd), "" when none
 * (found 0), NULL on failure. */
static char *
latest_job(struct mf_store *s, const char *fingerprint, int *found)
{
	sqlite3_stmt *st;
	char *job = NULL;
	int step;

	*found = 0;
	pthread_mutex_lock(&s->db_lock);
	if (sqlite3_prepare_v2(s->db,
	        "SELECT job FROM admissions WHERE fingerprint = ?"
	        " ORDER BY seen_at DESC LIMIT 1",
	        -1, &st, NULL) != SQLITE_OK) {
		pthread_mutex_unlock(&s->db_lock);
		return NULL;
	}
	bind_text(st, 1, fingerprint);
	step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(st, 0);
		size_t n = t ? strlen((const char *)t) + 1 : 1;

		*found = 1;
		if ((job = malloc(n)) != NULL)
			mf_copy(job, n, t ? (const char *)t : "");
	} else if (step == SQLITE_DONE) {
		job = calloc(1, 1);
	}
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->db_lock);
	return job;
}

int
mf_store_knows(struct mf_store *s, const char *fingerprint)
{
	int found;
	char *job;

	if (mf_store_knows_queued(s, fingerprint))
		return 1;
	job = latest_job(s, fingerprint, &found);
	if (job == NULL)
		return -1;
	free(job);
	return found;
}

char *
mf_store_job(struct mf_store *s, const char *fingerprint)
{
	int found;
	char *job = latest_job(s, fingerprint, &found);

	if (!found) {
		free(job);
		return NULL;
	}
	return job;
}
