/*
 * records.c: the statements of the store, one text for both databases:
 * observations added, listed and taken back, admissions written and
 * looked up.  Each runs under db_lock through the back end's run.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../admission/base/buf.h"
#include "../admission/base/str.h"
#include "store_int.h"

const char mf_sql_insert[] =
    "INSERT INTO observations (fingerprint, card, count, peak_reserved,"
    " peak_allocated, device_used, tokens_per_second, step_seconds,"
    " tokens_per_step, source, created_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id";
/* The same with the id a reader gave: a run kept already is left as it
 * is, and answers no row. */
const char mf_sql_insert_id[] =
    "INSERT INTO observations (fingerprint, card, count, peak_reserved,"
    " peak_allocated, device_used, tokens_per_second, step_seconds,"
    " tokens_per_step, source, created_at, id)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
    " ON CONFLICT (id) DO NOTHING RETURNING id";
const char mf_sql_delete[] = "DELETE FROM observations WHERE id = $1"
                             " RETURNING id";
const char mf_sql_list[] =
    "SELECT id, fingerprint, card, count, peak_reserved, peak_allocated,"
    " device_used, tokens_per_second, step_seconds, tokens_per_step,"
    " source, created_at FROM observations WHERE fingerprint = $1"
    " ORDER BY id LIMIT $2";
const char mf_sql_all[] =
    "SELECT id, fingerprint, card, count, peak_reserved, peak_allocated,"
    " device_used, tokens_per_second, step_seconds, tokens_per_step,"
    " source, created_at FROM observations"
    " ORDER BY fingerprint, card, id LIMIT $1";
/* One row a job as placed on a card: admissions of it again count and
 * move seen_at. */
const char mf_sql_admit[] =
    "INSERT INTO admissions (fingerprint, job, card, count, created_at,"
    " seen_at, times) VALUES ($1, $2, $3, $4, $5, $6, $7)"
    " ON CONFLICT (fingerprint, card, count) DO UPDATE SET"
    " job = excluded.job, seen_at = excluded.seen_at,"
    " times = admissions.times + excluded.times";
const char mf_sql_job[] = "SELECT job FROM admissions WHERE fingerprint = $1"
                          " ORDER BY seen_at DESC LIMIT 1";

static struct sqlv
v_int(int64_t v)
{
	return (struct sqlv){ .type = v < 0 ? SQLV_NULL : SQLV_INT, .i = v };
}

static struct sqlv
v_count(int64_t v)
{
	return (struct sqlv){ .type = SQLV_INT, .i = v };
}

static struct sqlv
v_real(double v)
{
	return (struct sqlv){ .type = v < 0 ? SQLV_NULL : SQLV_REAL, .d = v };
}

static struct sqlv
v_text(const char *t)
{
	return (struct sqlv){ .type = SQLV_TEXT, .t = t };
}

/* A column as a figure, -1 when NULL. */
static int64_t
c_int(const struct sqlv *c)
{
	return c->type == SQLV_NULL ? -1 : c->i;
}

static double
c_real(const struct sqlv *c)
{
	return c->type == SQLV_NULL ? -1 : c->d;
}

static const char *
c_text(const struct sqlv *c)
{
	return c->type == SQLV_TEXT ? c->t : "";
}

/* The first column of the first row, an integer, into *(int64_t *)arg. */
static int
first_int(void *arg, const struct sqlv *cols, size_t n)
{
	if (n > 0)
		*(int64_t *)arg = c_int(&cols[0]);
	return 1;
}

/* The statement under db_lock; s->up follows whether it reached the
 * database. */
static enum mf_rc
locked_run(struct mf_store *s, const char *sql, const struct sqlv *p, size_t np,
    const struct sql_rows *rows, struct mf_error *err)
{
	enum mf_rc rc;

	pthread_mutex_lock(&s->db_lock);
	rc = s->ops->run(s, sql, p, np, rows, err);
	pthread_mutex_unlock(&s->db_lock);
	return rc;
}

enum mf_rc
mf_store_add(struct mf_store *s, struct mf_observation *o, struct mf_error *err)
{
	int64_t now = (int64_t)time(NULL), id = -1;
	const struct sqlv p[] = { v_text(o->fingerprint), v_text(o->card),
		v_count(o->count), v_int(o->peak_reserved),
		v_int(o->peak_allocated), v_int(o->device_used),
		v_real(o->tokens_per_second), v_real(o->step_seconds),
		v_real(o->tokens_per_step), v_text(o->source), v_count(now),
		v_count(o->id) };
	const struct sql_rows rows = { first_int, &id };
	size_t np = sizeof(p) / sizeof(p[0]);
	enum mf_rc rc;

	rc = o->id > 0 ? locked_run(s, mf_sql_insert_id, p, np, &rows, err) :
	                 locked_run(s, mf_sql_insert, p, np - 1, &rows, err);
	if (rc != MF_OK)
		return rc;
	if (id <= 0 && o->id > 0) {
		o->id = 0;
		return MF_OK;
	}
	if (id <= 0)
		return mf_error_set(err, MF_EIO, NULL, 0, 0,
		    "store: add: no id came back");
	o->id = id;
	o->created_at = now;
	return MF_OK;
}

enum mf_rc
mf_store_delete(struct mf_store *s, int64_t id, struct mf_error *err)
{
	const struct sqlv p[] = { v_count(id) };
	int64_t gone = -1;
	const struct sql_rows rows = { first_int, &gone };
	enum mf_rc rc = locked_run(s, mf_sql_delete, p, 1, &rows, err);

	if (rc == MF_OK && gone != id)
		rc = mf_error_set(err, MF_ENOTFOUND, NULL, 0, 0,
		    "no observation %lld", (long long)id);
	return rc;
}

static void
read_row(const struct sqlv *c, struct mf_observation *o)
{
	o->id = c_int(&c[0]);
	mf_copy(o->fingerprint, sizeof(o->fingerprint), c_text(&c[1]));
	mf_copy(o->card, sizeof(o->card), c_text(&c[2]));
	o->count = c_int(&c[3]);
	o->peak_reserved = c_int(&c[4]);
	o->peak_allocated = c_int(&c[5]);
	o->device_used = c_int(&c[6]);
	o->tokens_per_second = c_real(&c[7]);
	o->step_seconds = c_real(&c[8]);
	o->tokens_per_step = c_real(&c[9]);
	mf_copy(o->source, sizeof(o->source), c_text(&c[10]));
	o->created_at = c_int(&c[11]);
}

/* The list being read: at most max rows; nomem when one could not be
 * kept. */
struct reading {
	struct mf_observation *list;
	size_t n, cap, max;
	int nomem;
};

static int
take_row(void *arg, const struct sqlv *cols, size_t n)
{
	struct reading *r = arg;
	struct mf_observation *p;

	if (n < 12 || r->n >= r->max)
		return 1;
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 16;
		p = realloc(r->list, r->cap * sizeof(*p));
		if (p == NULL) {
			r->nomem = 1;
			return 1;
		}
		r->list = p;
	}
	read_row(cols, &r->list[r->n++]);
	return 0;
}

enum mf_rc
mf_store_list(struct mf_store *s, const char *fingerprint, size_t max,
    struct mf_observation **out, size_t *n, struct mf_error *err)
{
	struct reading r = { NULL, 0, 0, max, 0 };
	const struct sql_rows rows = { take_row, &r };
	const struct sqlv one[] = { v_text(fingerprint ? fingerprint : ""),
		v_count((int64_t)max) };
	const struct sqlv every[] = { v_count((int64_t)max) };
	enum mf_rc rc;

	if (fingerprint != NULL)
		rc = locked_run(s, mf_sql_list, one, 2, &rows, err);
	else
		rc = locked_run(s, mf_sql_all, every, 1, &rows, err);
	if (rc == MF_OK && r.nomem)
		rc = mf_error_set(err, MF_ENOMEM, NULL, 0, 0, "out of memory");
	if (rc != MF_OK) {
		free(r.list);
		return rc;
	}
	*out = r.list;
	*n = r.n;
	return MF_OK;
}

/* The job as placed, canonically (mf_fp_write), into b: MF_OK or
 * MF_ENOMEM. */
static enum mf_rc
placed_text(const struct pending *p, struct mf_buf *b)
{
	struct mf_jw w;

	mf_buf_init(b, 1u << 16);
	mf_jw_init(&w, b);
	mf_fp_write(&w, NULL, &p->job, p->fixes, p->count);
	return mf_jw_finish(&w);
}

int
mf_store_write_admission(struct mf_store *s, const struct pending *p)
{
	struct mf_buf b;
	int rc = -1;

	if (placed_text(p, &b) == MF_OK) {
		const struct sqlv v[] = { v_text(p->fingerprint),
			v_text(b.data), v_text(p->card), v_count(p->count),
			v_count(p->at), v_count(p->at), v_count(p->times) };

		rc = s->ops->run(s, mf_sql_admit, v, sizeof(v) / sizeof(v[0]),
		         NULL, NULL) == MF_OK ?
		    0 :
		    -1;
	}
	mf_buf_free(&b);
	return rc;
}

/* The job of a row, copied; found set. */
struct found_job {
	char *job;
	int found, nomem;
};

static int
take_job(void *arg, const struct sqlv *cols, size_t n)
{
	struct found_job *f = arg;
	const char *t = n > 0 ? c_text(&cols[0]) : "";

	f->found = 1;
	f->job = strdup(t);
	f->nomem = f->job == NULL;
	return 1;
}

/* The job of fingerprint's latest admission (malloc'd), "" when none
 * (found 0), NULL on failure. */
static char *
latest_job(struct mf_store *s, const char *fingerprint, int *found)
{
	struct found_job f = { NULL, 0, 0 };
	const struct sql_rows rows = { take_job, &f };
	const struct sqlv p[] = { v_text(fingerprint) };

	*found = 0;
	if (locked_run(s, mf_sql_job, p, 1, &rows, NULL) != MF_OK || f.nomem) {
		free(f.job);
		return NULL;
	}
	*found = f.found;
	return f.found ? f.job : calloc(1, 1);
}

int
mf_store_knows(struct mf_store *s, const char *fingerprint)
{
	int found;
	char *job;

	/* Queued only: written first, so that what names it (an observation)
	 * never stands in the database without it. */
	if (mf_store_knows_queued(s, fingerprint))
		mf_store_flush(s);
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
