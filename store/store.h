/*
 * store.h: what the runs memfloor admitted measured, kept (design 23):
 * observations, and the admissions that tie a fingerprint to the job as
 * placed.  Two databases behind one API, with the same statements:
 *
 *   - a file: SQLite in WAL mode, its schema versioned (PRAGMA
 *     user_version, under memfloor's PRAGMA application_id);
 *   - postgresql://... or postgres://... (libpq's URL): PostgreSQL, or a
 *     database that speaks its protocol and plain SQL (CockroachDB,
 *     YugabyteDB), shared by several memfloord replicas; its schema
 *     versioned in the table memfloor_schema.
 *
 * Either is migrated when it is opened.  The layer between the library
 * and the daemon: it includes the library, SQLite and libpq, nothing of
 * fetch/, daemon/ or cli/.  A struct mf_store may be used from any thread
 * (one statement sequence at a time on its connection); a write returns
 * once it is durable.  A PostgreSQL connection that is lost is made again
 * on a later use, at most once a second, each try and each statement
 * bounded in time (MF_STORE_CONNECT_SECONDS, MF_STORE_STATEMENT_MS), so
 * that a database that is down or hung costs a caller little.  Admissions
 * go through a queue drained by the store's own writer thread, so that
 * the answer to an admit never waits on the database.
 */
#ifndef MF_STORE_H
#define MF_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "../admission/base/err.h"
#include "../admission/fingerprint/fingerprint.h"

/* The schema this code writes; an older file is migrated to it. */
#define MF_STORE_SCHEMA 1
/* Admissions waiting for the writer; one past it is dropped and counted
 * (the answer never waits). */
#define MF_STORE_QUEUE_MAX 4096
/* How long the writer gathers admissions before it commits them: the
 * admissions of one job in that window are one row's update, so a busy
 * replica writes once a window, not once an admission. */
#define MF_STORE_WINDOW_MS 1000
#define MF_STORE_CARD_MAX 128
#define MF_STORE_SOURCE_MAX 16
/* The ids a reader gives a run's observation: [2^52, 2^53), above those
 * the store gives in a store's lifetime, and read exactly by a page's
 * JavaScript. */
#define MF_STORE_RUN_ID (INT64_C(1) << 52)
/* PostgreSQL: the longest a connection is waited for (libpq's
 * connect_timeout, unless the URL sets its own), the longest a statement
 * runs (statement_timeout), and a little more, the longest a caller waits
 * for an answer from a database that does not answer at all. */
#define MF_STORE_CONNECT_SECONDS 2
#define MF_STORE_STATEMENT_MS 3000
#define MF_STORE_WAIT_MS 4000

/* One run's measurements on one card.  A figure not given is -1. */
struct mf_observation {
	/* Set by mf_store_add; or given, from MF_STORE_RUN_ID on, by a
	 * reader that names the run it measured (design 23: a run read by
	 * two replicas is kept once). */
	int64_t id;
	char fingerprint[MF_FP_HEX];
	char card[MF_STORE_CARD_MAX]; /* the catalogue's name */
	int64_t count;
	int64_t peak_reserved;    /* bytes, one GPU: max_memory_reserved */
	int64_t peak_allocated;   /* bytes, one GPU: max_memory_allocated */
	int64_t device_used;      /* bytes, one GPU: the device's (DCGM) */
	double tokens_per_second; /* the job's, all its GPUs */
	double step_seconds;
	double tokens_per_step;
	char source[MF_STORE_SOURCE_MAX]; /* torch, dcgm, log */
	int64_t created_at; /* Unix seconds; set by mf_store_add */
};

/* The job's tokens a second that o measured: given, or a step's tokens
 * over its seconds; -1 when it has neither. */
static inline double
mf_obs_speed(const struct mf_observation *o)
{
	if (o->tokens_per_second > 0)
		return o->tokens_per_second;
	if (o->step_seconds > 0 && o->tokens_per_step > 0)
		return o->tokens_per_step / o->step_seconds;
	return -1;
}

struct mf_store;

/* Which database --store names: a URL of PostgreSQL's (its scheme
 * postgresql:// or postgres://, in any case) or else a file. */
enum mf_store_kind { MF_STORE_FILE, MF_STORE_POSTGRES };
enum mf_store_kind mf_store_kind_of(const char *where);
/*
 * where as it may be shown (a log line, an error): a URL's password, if
 * it has one, written "***" (user:***@host); a file's path as it is.
 * Into out (size bytes, cut to fit); returns out.
 */
char *mf_store_redact(const char *where, char *out, size_t size);
/*
 * text (a message about where: libpq's may quote the URL, or a part of
 * it) into out (size bytes, cut to fit) with every password where holds
 * written "***"; returns out.  A file's text is copied as it is.
 */
char *
mf_store_scrub(const char *where, const char *text, char *out, size_t size);

/*
 * Open the store at where (a file, or a PostgreSQL URL: mf_store_kind_of),
 * a file created when there is none (or an empty one), and migrate its
 * schema.  A file that is not SQLite, a database that is not memfloor's
 * (SQLite: another application_id; PostgreSQL: a table that is not
 * memfloor's, named), or one of a newer schema is MF_EINVAL naming it
 * (mf_store_redact's form), and is left as it was; a database that cannot
 * be reached is MF_EIO.  *out is untouched on error.
 */
enum mf_rc
mf_store_open(const char *where, struct mf_store **out, struct mf_error *err);
/* Whether the last statement reached the database (1) or it could not be
 * reached (0): the daemon says when an outage starts and ends.  A file is
 * always 1 unless SQLite failed. */
int mf_store_up(struct mf_store *s);
/* Drain the admissions queued, stop the writer, close.  NULL is a no-op. */
void mf_store_close(struct mf_store *s);

/* Keep o (its id and created_at are set); MF_EIO when the database fails
 * or cannot be reached.  An id given (o->id > 0) is kept as it is; when an
 * observation has it already, nothing is written and o->id is 0. */
enum mf_rc mf_store_add(struct mf_store *s, struct mf_observation *o,
    struct mf_error *err);
/* Take back observation id: MF_OK, MF_ENOTFOUND, or MF_EIO. */
enum mf_rc
mf_store_delete(struct mf_store *s, int64_t id, struct mf_error *err);
/*
 * The observations of fingerprint, oldest first, at most max of them
 * (fingerprint NULL: every fingerprint's, by fingerprint and card):
 * *out (malloc'd; the caller frees it) and *n.  MF_ENOMEM, MF_EIO.
 */
enum mf_rc mf_store_list(struct mf_store *s, const char *fingerprint,
    size_t max, struct mf_observation **out, size_t *n, struct mf_error *err);

/*
 * An admission: the job's fingerprint, and the job placed with fixes over
 * count GPUs of card (copied; its strings are not read).  Queued for the
 * writer thread and returned at once; the writer keeps the job as placed
 * as mf_fp_write writes it.  0, or -1 when the queue is full or the store
 * is NULL.
 */
int mf_store_admitted(struct mf_store *s, const char *fingerprint,
    const struct mf_job *job, unsigned fixes, int64_t count, const char *card);
/* Whether an admission of fingerprint is kept: 1, 0, or -1 when the
 * database fails.  One still queued is written first (mf_store_flush),
 * so that an observation kept after a 1 has its job in the database. */
int mf_store_knows(struct mf_store *s, const char *fingerprint);
/* The job as placed of fingerprint's latest admission (malloc'd), or
 * NULL when none (or on failure). */
char *mf_store_job(struct mf_store *s, const char *fingerprint);
/* Wait until every admission queued before the call is written, or the
 * writer waits for a database that cannot be reached (mf_store_knows,
 * tests, and a clean stop). */
void mf_store_flush(struct mf_store *s);
/* The entries waiting for the writer: one a job (fingerprint, card and
 * count), however many times it was admitted meanwhile. */
size_t mf_store_queued(struct mf_store *s);
/* Admissions dropped because the queue was full, or not written (a
 * statement failed, or the store closed while the database was down). */
uint64_t mf_store_dropped(struct mf_store *s);

#endif
