/*
 * store.h: what the runs memfloor admitted measured, kept (design 23):
 * observations, and the admissions that tie a fingerprint to the job as
 * placed.  One SQLite file in WAL mode, its schema versioned
 * (PRAGMA user_version, under memfloor's PRAGMA application_id) and
 * migrated when it is opened.
 *
 * The layer between the library and the daemon: it includes the library
 * and SQLite, nothing of fetch/, daemon/ or cli/.  A struct mf_store may
 * be used from any thread (the connection is SQLite's serialized mode);
 * a write returns once it is durable.  Admissions go through a queue
 * drained by the store's own writer thread, so that the answer to an
 * admit never waits on the file.
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
#define MF_STORE_CARD_MAX 128
#define MF_STORE_SOURCE_MAX 16

/* One run's measurements on one card.  A figure not given is -1. */
struct mf_observation {
	int64_t id; /* set by mf_store_add */
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

struct mf_store;

/*
 * Open the store at path, creating it when there is no file (or an empty
 * one), and migrate its schema.  A file that is not SQLite, an SQLite
 * database that is not memfloor's, or one of a newer schema is MF_EINVAL
 * naming the file, and is left as it was.  *out is untouched on error.
 */
enum mf_rc
mf_store_open(const char *path, struct mf_store **out, struct mf_error *err);
/* Drain the admissions queued, stop the writer, close.  NULL is a no-op. */
void mf_store_close(struct mf_store *s);

/* Keep o (its id and created_at are set); MF_EIO when SQLite fails. */
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
 * An admission: the job's fingerprint, the job as placed (canonical JSON;
 * taken, freed by the store), the card and count.  Queued for the writer
 * thread and returned at once; 0, or -1 when the queue is full or the
 * store is NULL (job freed then too).
 */
int mf_store_admitted(struct mf_store *s, const char *fingerprint, char *job,
    const char *card, int64_t count);
/* Whether an admission of fingerprint is kept or queued: 1, 0, or -1
 * when SQLite fails. */
int mf_store_knows(struct mf_store *s, const char *fingerprint);
/* The job as placed of fingerprint's latest admission (malloc'd), or
 * NULL when none (or on failure). */
char *mf_store_job(struct mf_store *s, const char *fingerprint);
/* Wait until every admission queued before the call is written (tests,
 * and a clean stop). */
void mf_store_flush(struct mf_store *s);
/* Admissions dropped because the queue was full, or not written. */
uint64_t mf_store_dropped(struct mf_store *s);

#endif
