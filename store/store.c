/*
 * store.c: the SQLite file: opened only when it is memfloor's (or new),
 * its schema migrated in one transaction, and the statements of the
 * observations and the admissions.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../admission/base/str.h"
#include "store_int.h"

/* PRAGMA application_id of a memfloor store: "mflr". */
#define APP_ID 0x6d666c72
/* What an SQLite file starts with (its header string). */
static const char sqlite_magic[16] = "SQLite format 3";

/* The schema, one step a version: migrations[v - 1] takes a file from
 * version v - 1 to v. */
static const char *const migrations[MF_STORE_SCHEMA] = {
	"CREATE TABLE observations ("
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" fingerprint TEXT NOT NULL, card TEXT NOT NULL,"
	" count INTEGER NOT NULL, peak_reserved INTEGER,"
	" peak_allocated INTEGER, device_used INTEGER,"
	" tokens_per_second REAL, step_seconds REAL, tokens_per_step REAL,"
	" source TEXT NOT NULL, created_at INTEGER NOT NULL);"
	"CREATE INDEX observations_fingerprint ON observations (fingerprint);"
	/* One row a job as placed on a card: an admission of it again
	 * counts and moves seen_at. */
	"CREATE TABLE admissions ("
	" fingerprint TEXT NOT NULL, job TEXT NOT NULL, card TEXT NOT NULL,"
	" count INTEGER NOT NULL, created_at INTEGER NOT NULL,"
	" seen_at INTEGER NOT NULL, times INTEGER NOT NULL,"
	" PRIMARY KEY (fingerprint, card, count));",
};

static enum mf_rc
fail(struct mf_error *err, enum mf_rc rc, const char *path, const char *why)
{
	mf_error_set(err, rc, NULL, 0, 0, "%s: %s", path, why);
	return rc;
}

static enum mf_rc
db_fail(struct mf_error *err, sqlite3 *db, const char *what)
{
	mf_error_set(err, MF_EIO, NULL, 0, 0, "store: %s: %s", what,
	    sqlite3_errmsg(db));
	return MF_EIO;
}

/* Whether path is a new store (no file, or an empty one: *fresh 1) or an
 * SQLite file (*fresh 0); MF_EINVAL or MF_EIO naming path otherwise. */
static enum mf_rc
sniff(const char *path, int *fresh, struct mf_error *err)
{
	char head[sizeof(sqlite_magic)];
	struct stat st;
	size_t n;
	FILE *f;

	*fresh = 1;
	if (stat(path, &st) != 0)
		return errno == ENOENT ?
		    MF_OK :
		    fail(err, MF_EIO, path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fail(err, MF_EINVAL, path, "not a regular file");
	if (st.st_size == 0)
		return MF_OK;
	*fresh = 0;
	if ((f = fopen(path, "rb")) == NULL)
		return fail(err, MF_EIO, path, strerror(errno));
	n = fread(head, 1, sizeof(head), f);
	fclose(f);
	if (n != sizeof(head) || memcmp(head, sqlite_magic, sizeof(head)) != 0)
		return fail(err, MF_EINVAL, path,
		    "not an SQLite database, so not a memfloor store; left as it is (give --store a new file)");
	return MF_OK;
}

/* The integer the single-row, single-column sql answers; -1 on error. */
static int64_t
query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Whether the database is memfloor's (or an empty one) of a schema this
 * code reads; *version is its schema. */
static enum mf_rc
check_owner(sqlite3 *db, const char *path, int64_t *version,
    struct mf_error *err)
{
	int64_t app = query_int(db, "PRAGMA application_id");
	int64_t tables = query_int(db, "SELECT count(*) FROM sqlite_master");
	char why[160];

	*version = query_int(db, "PRAGMA user_version");
	if (app < 0 || tables < 0 || *version < 0)
		return fail(err, MF_EINVAL, path,
		    "not a readable SQLite database; left as it is");
	if (app != APP_ID && !(app == 0 && tables == 0 && *version == 0)) {
		snprintf(why, sizeof(why),
		    "an SQLite database that is not a memfloor store (application_id %lld); left as it is (give --store a new file)",
		    (long long)app);
		return fail(err, MF_EINVAL, path, why);
	}
	if (*version > MF_STORE_SCHEMA) {
		snprintf(why, sizeof(why),
		    "schema %lld is newer than this memfloord's (%d); left as it is",
		    (long long)*version, MF_STORE_SCHEMA);
		return fail(err, MF_EINVAL, path, why);
	}
	return MF_OK;
}

int
mf_store_exec(struct mf_store *s, const char *sql)
{
	return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

/* From version to MF_STORE_SCHEMA, in one transaction. */
static enum mf_rc
migrate(struct mf_store *s, int64_t version, struct mf_error *err)
{
	char set[96];

	if (version == MF_STORE_SCHEMA)
		return MF_OK;
	if (mf_store_exec(s, "BEGIN IMMEDIATE") != 0)
		return db_fail(err, s->db, "migrate");
	for (int64_t v = version; v < MF_STORE_SCHEMA; v++) {
		assert(v >= 0 && v < MF_STORE_SCHEMA);
		if (mf_store_exec(s, migrations[v]) != 0) {
			db_fail(err, s->db, "migrate");
			mf_store_exec(s, "ROLLBACK");
			return MF_EIO;
		}
	}
	snprintf(set, sizeof(set),
	    "PRAGMA application_id = %d; PRAGMA user_version = %d", APP_ID,
	    MF_STORE_SCHEMA);
	if (mf_store_exec(s, set) != 0 || mf_store_exec(s, "COMMIT") != 0) {
		db_fail(err, s->db, "migrate");
		mf_store_exec(s, "ROLLBACK");
		return MF_EIO;
	}
	return MF_OK;
}

/* WAL, and a commit durable when it returns (synchronous FULL). */
static enum mf_rc
configure(struct mf_store *s, struct mf_error *err)
{
	sqlite3_stmt *st;
	int wal = 0;

	sqlite3_busy_timeout(s->db, 5000);
	if (sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st,
	        NULL) == SQLITE_OK) {
		wal = sqlite3_step(st) == SQLITE_ROW &&
		    strcmp((const char *)sqlite3_column_text(st, 0), "wal") ==
		        0;
		sqlite3_finalize(st);
	}
	if (!wal || mf_store_exec(s, "PRAGMA synchronous = FULL") != 0)
		return db_fail(err, s->db, "WAL mode");
	return MF_OK;
}

static struct mf_store *
store_new(void)
{
	struct mf_store *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	pthread_mutex_init(&s->db_lock, NULL);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	pthread_cond_init(&s->done, NULL);
	atomic_init(&s->dropped, 0);
	return s;
}

enum mf_rc
mf_store_open(const char *path, struct mf_store **out, struct mf_error *err)
{
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX;
	struct mf_store *s;
	int64_t version = 0;
	int fresh;
	enum mf_rc rc = sniff(path, &fresh, err);

	if (rc != MF_OK)
		return rc;
	if ((s = store_new()) == NULL)
		return mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
		    "out of memory");
	if (fresh)
		flags |= SQLITE_OPEN_CREATE;
	if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
		rc = fail(err, MF_EIO, path,
		    s->db ? sqlite3_errmsg(s->db) : "cannot open");
		goto out;
	}
	rc = check_owner(s->db, path, &version, err);
	if (rc == MF_OK)
		rc = configure(s, err);
	if (rc == MF_OK)
		rc = migrate(s, version, err);
	if (rc == MF_OK && mf_store_queue_start(s) != 0)
		rc = mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
		    "store: no writer thread");
out:
	if (rc != MF_OK) {
		mf_store_close(s);
		return rc;
	}
	*out = s;
	return MF_OK;
}

void
mf_store_close(struct mf_store *s)
{
	if (s == NULL)
		return;
	mf_store_queue_stop(s);
	sqlite3_close(s->db);
	pthread_mutex_destroy(&s->db_lock);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->done);
	free(s);
}
