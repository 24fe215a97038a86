/*
 * store_int.h: what the store's files share: the handle, its queue of
 * admissions (queue.c) and the SQLite connection (store.c).
 */
#ifndef MF_STORE_INT_H
#define MF_STORE_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>

#include "store.h"

/* An admission waiting for the writer thread. */
struct pending {
	struct pending *next;
	char fingerprint[MF_FP_HEX];
	char *job; /* owned */
	char card[MF_STORE_CARD_MAX];
	int64_t count;
	int64_t at; /* Unix seconds */
};

struct mf_store {
	sqlite3 *db;
	/* One statement sequence at a time on the connection: a writer's
	 * transaction never takes in another thread's statement. */
	pthread_mutex_t db_lock;
	/* The queue: entries stay in it until they are committed, so
	 * mf_store_knows sees an admission at every moment. */
	pthread_mutex_t lock;
	pthread_cond_t wake; /* an entry came, or stop */
	pthread_cond_t done; /* a batch was written */
	struct pending *head, *tail;
	size_t queued;
	uint64_t enqueued, written; /* entries ever queued, ever handled */
	int stop;
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
/* sql run whole under db_lock held by the caller: 0 or -1. */
int mf_store_exec(struct mf_store *s, const char *sql);

#endif
