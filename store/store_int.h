/*
 * store_int.h: what the store's files share: the handle, its queue of
 * admissions (queue.c), the statements both databases run (records.c),
 * and the two back ends behind them: SQLite (sqlite.c) and PostgreSQL
 * (pg.c), each one struct store_ops.
 */
#ifndef MF_STORE_INT_H
#define MF_STORE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* An admission waiting for the writer thread. */
struct pending {
	struct pending *next;
	char fingerprint[MF_FP_HEX];
	struct mf_job job; /* its borrowed strings cleared */
	unsigned fixes;
	char card[MF_STORE_CARD_MAX];
	int64_t count;
	int64_t at;    /* Unix seconds: the last of them */
	int64_t times; /* admissions of the job it stands for */
	int taken;     /* in the batch the writer is committing */
};

/* A parameter of a statement or a column of a row: NULL, an integer, a
 * real or a text (borrowed: valid for the call, or the row, only). */
enum sqlv_type { SQLV_NULL, SQLV_INT, SQLV_REAL, SQLV_TEXT };
struct sqlv {
	enum sqlv_type type;
	int64_t i;
	double d;
	const char *t;
};

/* Called with each row of a statement (cols[0..n)); nonzero stops. */
struct sql_rows {
	int (*row)(void *arg, const struct sqlv *cols, size_t n);
	void *arg;
};

struct store_ops {
	const char *name; /* "SQLite", "PostgreSQL" */
	/* What starts a transaction that writes. */
	const char *begin;
	/*
	 * Open the database where names (s->where), check it is memfloor's
	 * and migrate it; set s->db.  MF_EINVAL naming it when it is not
	 * memfloor's or is of a newer schema (left as it is), MF_EIO when it
	 * cannot be reached.  s->db stays NULL on error.
	 */
	enum mf_rc (*open)(struct mf_store *s, struct mf_error *err);
	void (*close)(struct mf_store *s); /* s->db NULL: a no-op */
	/*
	 * Run sql (the text records.c shares: $1, $2, ... in the order they
	 * appear) with p[0..np), under db_lock held by the caller; each row
	 * to rows (NULL: none wanted).  MF_OK, or MF_EIO with err (and
	 * s->up 0 when the database could not be reached).  A row callback's
	 * nonzero stops the rows without an error.
	 */
	enum mf_rc (*run)(struct mf_store *s, const char *sql,
	    const struct sqlv *p, size_t np, const struct sql_rows *rows,
	    struct mf_error *err);
};

extern const struct store_ops mf_store_sqlite;
extern const struct store_ops mf_store_pg;

struct mf_store {
	const struct store_ops *ops;
	void *db;    /* the back end's connection */
	char *where; /* the file or the URL, as given */
	/* How to name it in messages: the URL without its password. */
	char name[256];
	/* Whether the last statement reached the database. */
	atomic_int up;
	/* One statement sequence at a time on the connection: a writer's
	 * transaction never takes in another thread's statement. */
	pthread_mutex_t db_lock;
	/* The queue: entries stay in it until they are committed, so
	 * mf_store_knows sees an admission at every moment. */
	pthread_mutex_t lock;
	pthread_cond_t wake; /* an entry came, or stop */
	pthread_cond_t done; /* a batch was written, or the writer waits */
	struct pending *head, *tail;
	size_t queued;
	uint64_t enqueued, written; /* entries ever queued, ever handled */
	int stop;
	int hurry;   /* mf_store_flush waits: write without a window */
	int stalled; /* the writer waits for the database to come back */
	int writer_running;
	pthread_t writer;
	atomic_uint_least64_t dropped;
};

/* Start the writer thread: 0, or -1. */
int mf_store_queue_start(struct mf_store *s);
/* Write what is queued and stop the writer (when it runs). */
void mf_store_queue_stop(struct mf_store *s);
/* Write one admission, under db_lock, inside the caller's transaction:
 * 0 or -1. */
int mf_store_write_admission(struct mf_store *s, const struct pending *p);
/* Whether an admission of fingerprint waits in the queue. */
int mf_store_knows_queued(struct mf_store *s, const char *fingerprint);
/* sql with no parameter and no row under db_lock held by the caller:
 * 0 or -1. */
int mf_store_exec(struct mf_store *s, const char *sql);

/* The data statements' text, the same for both databases. */
extern const char mf_sql_insert[], mf_sql_insert_id[], mf_sql_delete[],
    mf_sql_list[], mf_sql_all[], mf_sql_admit[], mf_sql_job[];

/* The SQLite migrations of the schema, migrations[v - 1] taking a file
 * from version v - 1 to v (sqlite.c); PostgreSQL's in pg.c. */

#endif
