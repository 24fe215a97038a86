/*
 * sqlite.c: the store in an SQLite file: opened only when it is
 * memfloor's (or new), in WAL mode with commits durable when they return,
 * its schema migrated in one transaction; the shared statements run on
 * the connection (SQLite's serialized mode).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "store_int.h"

/* PRAGMA application_id of a memfloor store: "mflr". */
#define APP_ID 0x6d666c72
/* The most columns a statement of records.c answers. */
#define COLS_MAX 16
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

static int
exec(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

/* From version to MF_STORE_SCHEMA, in one transaction. */
static enum mf_rc
migrate(sqlite3 *db, int64_t version, struct mf_error *err)
{
	char set[96];

	if (version == MF_STORE_SCHEMA)
		return MF_OK;
	if (exec(db, "BEGIN IMMEDIATE") != 0)
		return db_fail(err, db, "migrate");
	for (int64_t v = version; v < MF_STORE_SCHEMA; v++) {
		assert(v >= 0 && v < MF_STORE_SCHEMA);
		if (exec(db, migrations[v]) != 0) {
			db_fail(err, db, "migrate");
			exec(db, "ROLLBACK");
			return MF_EIO;
		}
	}
	snprintf(set, sizeof(set),
	    "PRAGMA application_id = %d; PRAGMA user_version = %d", APP_ID,
	    MF_STORE_SCHEMA);
	if (exec(db, set) != 0 || exec(db, "COMMIT") != 0) {
		db_fail(err, db, "migrate");
		exec(db, "ROLLBACK");
		return MF_EIO;
	}
	return MF_OK;
}

/* WAL, and a commit durable when it returns (synchronous FULL). */
static enum mf_rc
configure(sqlite3 *db, struct mf_error *err)
{
	sqlite3_stmt *st;
	int wal = 0;

	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &st,
	        NULL) == SQLITE_OK) {
		wal = sqlite3_step(st) == SQLITE_ROW &&
		    strcmp((const char *)sqlite3_column_text(st, 0), "wal") ==
		        0;
		sqlite3_finalize(st);
	}
	if (!wal || exec(db, "PRAGMA synchronous = FULL") != 0)
		return db_fail(err, db, "WAL mode");
	return MF_OK;
}

static enum mf_rc
lite_open(struct mf_store *s, struct mf_error *err)
{
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX;
	sqlite3 *db = NULL;
	int64_t version = 0;
	int fresh;
	enum mf_rc rc = sniff(s->where, &fresh, err);

	if (rc != MF_OK)
		return rc;
	if (fresh)
		flags |= SQLITE_OPEN_CREATE;
	if (sqlite3_open_v2(s->where, &db, flags, NULL) != SQLITE_OK) {
		rc = fail(err, MF_EIO, s->where,
		    db ? sqlite3_errmsg(db) : "cannot open");
		sqlite3_close(db);
		return rc;
	}
	rc = check_owner(db, s->where, &version, err);
	if (rc == MF_OK)
		rc = configure(db, err);
	if (rc == MF_OK)
		rc = migrate(db, version, err);
	if (rc != MF_OK) {
		sqlite3_close(db);
		return rc;
	}
	s->db = db;
	return MF_OK;
}

static void
lite_close(struct mf_store *s)
{
	sqlite3_close(s->db);
	s->db = NULL;
}

/* p[0..np) bound to $1..$np. */
static int
bind_all(sqlite3_stmt *st, const struct sqlv *p, size_t np)
{
	char name[24];
	int rc = SQLITE_OK;

	for (size_t i = 0; i < np && rc == SQLITE_OK; i++) {
		int k;

		snprintf(name, sizeof(name), "$%zu", i + 1);
		k = sqlite3_bind_parameter_index(st, name);
		if (k == 0)
			return -1;
		switch (p[i].type) {
		case SQLV_NULL:
			rc = sqlite3_bind_null(st, k);
			break;
		case SQLV_INT:
			rc = sqlite3_bind_int64(st, k, p[i].i);
			break;
		case SQLV_REAL:
			rc = sqlite3_bind_double(st, k, p[i].d);
			break;
		case SQLV_TEXT:
			rc =
			    sqlite3_bind_text(st, k, p[i].t, -1, SQLITE_STATIC);
			break;
		}
	}
	return rc == SQLITE_OK ? 0 : -1;
}

/* The current row of st into cols (n of them). */
static void
read_cols(sqlite3_stmt *st, struct sqlv *cols, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int c = (int)i;

		memset(&cols[i], 0, sizeof(cols[i]));
		switch (sqlite3_column_type(st, c)) {
		case SQLITE_NULL:
			cols[i].type = SQLV_NULL;
			break;
		case SQLITE_INTEGER:
			cols[i].type = SQLV_INT;
			cols[i].i = sqlite3_column_int64(st, c);
			cols[i].d = (double)cols[i].i;
			break;
		case SQLITE_FLOAT:
			cols[i].type = SQLV_REAL;
			cols[i].d = sqlite3_column_double(st, c);
			cols[i].i = (int64_t)cols[i].d;
			break;
		default:
			cols[i].type = SQLV_TEXT;
			cols[i].t = (const char *)sqlite3_column_text(st, c);
			if (cols[i].t == NULL)
				cols[i].t = "";
			break;
		}
	}
}

static enum mf_rc
lite_run(struct mf_store *s, const char *sql, const struct sqlv *p, size_t np,
    const struct sql_rows *rows, struct mf_error *err)
{
	struct sqlv cols[COLS_MAX];
	sqlite3_stmt *st;
	size_t n;
	int step;

	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return db_fail(err, s->db, "prepare");
	if (bind_all(st, p, np) != 0) {
		sqlite3_finalize(st);
		return db_fail(err, s->db, "bind");
	}
	n = (size_t)sqlite3_column_count(st);
	assert(n <= COLS_MAX);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		if (rows == NULL)
			continue;
		read_cols(st, cols, n);
		if (rows->row(rows->arg, cols, n) != 0)
			break;
	}
	/* Rows stopped early end the statement here: an INSERT or DELETE
	 * ... RETURNING commits now, and its commit may fail
	 * (sqlite.org/c3ref/reset.html). */
	if (step == SQLITE_ROW && sqlite3_reset(st) == SQLITE_OK)
		step = SQLITE_DONE;
	if (step != SQLITE_DONE) {
		db_fail(err, s->db, "step");
		sqlite3_finalize(st);
		return MF_EIO;
	}
	sqlite3_finalize(st);
	return MF_OK;
}

const struct store_ops mf_store_sqlite = {
	"SQLite",
	"BEGIN IMMEDIATE",
	lite_open,
	lite_close,
	lite_run,
};
