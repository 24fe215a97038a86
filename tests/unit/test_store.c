/*
 * test_store.c: the store of observations (design 23) on a file of its
 * own: made and migrated, observations added, listed and taken back,
 * an addition whose commit cannot be written refused, admissions
 * recorded through the queue, the file reopened; and files
 * that are not memfloor's refused and left as they were; which database
 * --store names and how it is named in messages (a URL's password left
 * out), and a PostgreSQL that cannot be reached refused at once.  The
 * PostgreSQL store against a server is tests/integration/postgres.sh's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <sqlite3.h>

#include "store.h"
#include "files.h"
#include "msg.h"

#define FP_A "0123456789abcdef0123456789abcdef"
#define FP_B "fedcba9876543210fedcba9876543210"

struct scratch {
	char dir[64];
	char path[128];
};

static int
setup(void **state)
{
	struct scratch *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return -1;
	snprintf(s->dir, sizeof(s->dir), "/tmp/mf-store.XXXXXX");
	if (mkdtemp(s->dir) == NULL)
		return -1;
	snprintf(s->path, sizeof(s->path), "%s/store.db", s->dir);
	*state = s;
	return 0;
}

static int
teardown(void **state)
{
	struct scratch *s = *state;
	char p[160];
	static const char *const suffix[] = { "", "-wal", "-shm", "-journal" };

	for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", s->path, suffix[i]);
		unlink(p);
	}
	rmdir(s->dir);
	free(s);
	return 0;
}

static struct mf_store *
open_ok(const char *path)
{
	struct mf_store *st = NULL;
	struct mf_error err;

	memset(&err, 0, sizeof(err));
	if (mf_store_open(path, &st, &err) != MF_OK)
		fail_msg("open %s: %s", path, MSG(&err));
	return st;
}

static struct mf_observation
observation(const char *fp, int64_t peak)
{
	struct mf_observation o;

	memset(&o, 0, sizeof(o));
	snprintf(o.fingerprint, sizeof(o.fingerprint), "%s", fp);
	snprintf(o.card, sizeof(o.card), "H100");
	snprintf(o.source, sizeof(o.source), "torch");
	o.count = 2;
	o.peak_reserved = peak;
	o.peak_allocated = -1;
	o.device_used = -1;
	o.tokens_per_second = 1500.5;
	o.step_seconds = -1;
	o.tokens_per_step = -1;
	return o;
}

static int64_t
pragma(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t v = -1;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
	    SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void
test_store_made_and_migrated(void **state)
{
	struct scratch *s = *state;
	struct mf_store *st = open_ok(s->path);

	mf_store_close(st);
	assert_int_equal(pragma(s->path, "PRAGMA user_version"),
	    MF_STORE_SCHEMA);
	assert_int_equal(pragma(s->path, "PRAGMA application_id"), 0x6d666c72);
	/* Opened again, it is migrated no further and still memfloor's. */
	st = open_ok(s->path);
	mf_store_close(st);
	assert_int_equal(pragma(s->path,
	                     "SELECT count(*) FROM sqlite_master WHERE type = "
	                     "'table' AND name IN ('observations', "
	                     "'admissions')"),
	    2);
}

static void
test_store_add_list_delete(void **state)
{
	struct scratch *s = *state;
	struct mf_store *st = open_ok(s->path);
	struct mf_observation a = observation(FP_A, 1000), b, *list = NULL;
	struct mf_error err;
	size_t n = 0;

	b = observation(FP_A, 2000);
	assert_int_equal(mf_store_add(st, &a, &err), MF_OK);
	assert_int_equal(mf_store_add(st, &b, &err), MF_OK);
	assert_true(b.id > a.id && a.id > 0);
	assert_true(a.created_at > 0);
	assert_int_equal(mf_store_list(st, FP_A, 100, &list, &n, &err), MF_OK);
	assert_int_equal(n, 2);
	assert_int_equal(list[0].id, a.id);
	assert_int_equal(list[1].peak_reserved, 2000);
	assert_int_equal(list[0].peak_allocated, -1);
	assert_true(list[0].tokens_per_second == 1500.5);
	assert_true(list[0].step_seconds < 0);
	assert_string_equal(list[0].card, "H100");
	assert_string_equal(list[0].source, "torch");
	free(list);
	assert_int_equal(mf_store_list(st, FP_B, 100, &list, &n, &err), MF_OK);
	assert_int_equal(n, 0);
	free(list);
	assert_int_equal(mf_store_delete(st, a.id, &err), MF_OK);
	assert_int_equal(mf_store_delete(st, a.id, &err), MF_ENOTFOUND);
	mf_store_close(st);
	/* What was acknowledged is there when the file is opened again. */
	st = open_ok(s->path);
	assert_int_equal(mf_store_list(st, FP_A, 100, &list, &n, &err), MF_OK);
	assert_int_equal(n, 1);
	assert_int_equal(list[0].id, b.id);
	free(list);
	mf_store_close(st);
}

/* The size of path's write-ahead log. */
static off_t
wal_size(const char *path)
{
	char wal[160];
	struct stat sb;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	assert_int_equal(stat(wal, &sb), 0);
	return sb.st_size;
}

/* A commit that cannot be written (the log may not grow: the file size
 * limit, as a full disk) is an error, and nothing is kept: an
 * observation is acknowledged only once it is committed. */
static void
test_store_add_fails_when_its_commit_does(void **state)
{
	struct scratch *s = *state;
	struct mf_store *st = open_ok(s->path);
	struct mf_observation a = observation(FP_A, 1000), b, c, *list = NULL;
	struct mf_error err;
	struct rlimit was, cap;
	size_t n = 0;

	b = observation(FP_A, 2000);
	c = observation(FP_A, 3000);
	assert_int_equal(mf_store_add(st, &a, &err), MF_OK);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
	signal(SIGXFSZ, SIG_IGN);
	cap = was;
	cap.rlim_cur = (rlim_t)wal_size(s->path);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &cap), 0);
	assert_int_equal(mf_store_add(st, &b, &err), MF_EIO);
	assert_int_equal(mf_store_delete(st, a.id, &err), MF_EIO);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(mf_store_list(st, FP_A, 100, &list, &n, &err), MF_OK);
	assert_int_equal(n, 1);
	assert_int_equal(list[0].id, a.id);
	free(list);
	/* The store goes on. */
	assert_int_equal(mf_store_add(st, &c, &err), MF_OK);
	assert_true(c.id > a.id);
	mf_store_close(st);
}

/* A run's observation with the id its reader gave (design 23): kept
 * once, by this handle or another on the same file (a second replica);
 * the store's own ids go on. */
static void
test_store_run_kept_once(void **state)
{
	struct scratch *s = *state;
	struct mf_store *st = open_ok(s->path), *other = open_ok(s->path);
	struct mf_observation a = observation(FP_A, 1000), b, c, *list = NULL;
	struct mf_error err;
	size_t n = 0;

	a.id = MF_STORE_RUN_ID + 12345;
	b = a;
	c = observation(FP_A, 2000);
	assert_int_equal(mf_store_add(st, &a, &err), MF_OK);
	assert_true(a.id == MF_STORE_RUN_ID + 12345);
	assert_int_equal(mf_store_add(other, &b, &err), MF_OK);
	assert_int_equal(b.id, 0);
	assert_int_equal(mf_store_add(st, &c, &err), MF_OK);
	assert_true(c.id > 0 && c.id != a.id);
	assert_int_equal(mf_store_list(st, FP_A, 100, &list, &n, &err), MF_OK);
	assert_int_equal(n, 2);
	free(list);
	mf_store_close(other);
	mf_store_close(st);
}

/* A job of a floor of gib GiB, no model. */
static struct mf_job
floor_job(int64_t gib)
{
	struct mf_job job;

	memset(&job, 0, sizeof(job));
	job.model_source = MF_MODEL_NONE;
	job.min_memory = gib << 30;
	job.count = 1;
	return job;
}

static void
test_store_admissions_through_the_queue(void **state)
{
	struct scratch *s = *state;
	struct mf_store *st = open_ok(s->path);
	struct mf_job one = floor_job(1), two = floor_job(2);
	char *job;

	assert_int_equal(mf_store_knows(st, FP_A), 0);
	assert_int_equal(mf_store_admitted(st, FP_A, &one, 0, 2, "H100"), 0);
	/* Known at once, and written by then, within the writer's window
	 * (a second): an observation kept after it finds its job. */
	assert_int_equal(mf_store_knows(st, FP_A), 1);
	job = mf_store_job(st, FP_A);
	assert_non_null(job);
	free(job);
	assert_int_equal(mf_store_admitted(st, FP_A, &two, 0, 2, "H100"), 0);
	/* The job is the caller's no longer: the store copied it. */
	two.min_memory = 0;
	mf_store_flush(st);
	/* The latest admission's job as placed, written canonically: its
	 * floor (2 GiB) and its count. */
	job = mf_store_job(st, FP_A);
	assert_non_null(job);
	assert_non_null(strstr(job, "\"minMemory\":2147483648,"));
	assert_non_null(strstr(job, "\"count\":2}"));
	free(job);
	assert_null(mf_store_job(st, FP_B));
	assert_int_equal(mf_store_dropped(st), 0);
	/* Admissions of one job within the writer's window: each counted,
	 * in the entry waiting, however the writer's batches fall. */
	for (int i = 0; i < 50; i++)
		assert_int_equal(mf_store_admitted(st, FP_A, &one, 0, 2,
		                     "H100"),
		    0);
	/* Queued, then closed: close writes what the queue holds. */
	assert_int_equal(mf_store_admitted(st, FP_B, &one, 0, 1, "A100"), 0);
	mf_store_close(st);
	st = open_ok(s->path);
	assert_int_equal(mf_store_knows(st, FP_B), 1);
	assert_int_equal(
	    pragma(s->path, "SELECT times FROM admissions WHERE card = 'H100'"),
	    52);
	mf_store_close(st);
	assert_int_equal(mf_store_admitted(NULL, FP_A, &one, 0, 1, "H100"), -1);
}

/* path, written with data, is refused naming it and left as it was. */
static void
refused(const char *path, const char *want)
{
	struct mf_store *st = NULL;
	struct mf_error err;
	char *before, *after;
	size_t n0 = 0, n1 = 0;

	before = slurp(path, &n0);
	assert_non_null(before);
	memset(&err, 0, sizeof(err));
	assert_int_equal(mf_store_open(path, &st, &err), MF_EINVAL);
	assert_null(st);
	assert_non_null(strstr(MSG(&err), path));
	assert_non_null(strstr(MSG(&err), want));
	after = slurp(path, &n1);
	assert_non_null(after);
	assert_int_equal(n0, n1);
	assert_memory_equal(before, after, n0);
	free(before);
	free(after);
}

static void
test_store_refuses_a_file_not_sqlite(void **state)
{
	struct scratch *s = *state;
	FILE *f = fopen(s->path, "w");

	assert_non_null(f);
	fputs("observations: none\n", f);
	fclose(f);
	refused(s->path, "not an SQLite database");
}

static void
test_store_refuses_another_database(void **state)
{
	struct scratch *s = *state;
	sqlite3 *db;

	assert_int_equal(sqlite3_open(s->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
	                     "CREATE TABLE accounts (name TEXT);"
	                     "INSERT INTO accounts VALUES ('alice')",
	                     NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(db);
	refused(s->path, "not a memfloor store");
}

static void
test_store_refuses_a_newer_schema(void **state)
{
	struct scratch *s = *state;
	struct mf_store *st = open_ok(s->path);
	sqlite3 *db;

	mf_store_close(st);
	assert_int_equal(sqlite3_open(s->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL,
	                     NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(db);
	refused(s->path, "newer");
}

static void
test_store_kind_of_a_url(void **state)
{
	(void)state;
	assert_int_equal(mf_store_kind_of("postgresql://db/memfloor"),
	    MF_STORE_POSTGRES);
	assert_int_equal(mf_store_kind_of("postgres://u@db:5432/m"),
	    MF_STORE_POSTGRES);
	assert_int_equal(mf_store_kind_of("PostgreSQL://db/m"),
	    MF_STORE_POSTGRES);
	assert_int_equal(mf_store_kind_of("build/memfloor.db"), MF_STORE_FILE);
	/* A file whose name starts like a scheme is still a file. */
	assert_int_equal(mf_store_kind_of("postgresql:memfloor.db"),
	    MF_STORE_FILE);
	assert_int_equal(mf_store_kind_of("./postgres://x"), MF_STORE_FILE);
	assert_int_equal(mf_store_kind_of(""), MF_STORE_FILE);
}

/* where redacted into a buffer of size bytes is want. */
static void
redacts(const char *where, size_t size, const char *want)
{
	char out[256];

	assert_true(size <= sizeof(out));
	assert_string_equal(mf_store_redact(where, out, size), want);
}

static void
test_store_redact_leaves_out_the_password(void **state)
{
	(void)state;
	redacts("postgresql://memfloor:s3cret@db.internal:5432/obs", 256,
	    "postgresql://memfloor:***@db.internal:5432/obs");
	redacts("postgres://u:p@a@h/d", 256, "postgres://u:***@h/d");
	redacts("postgresql://u:pa/ss@h:5432/d", 256,
	    "postgresql://u:***@h:5432/d");
	redacts("postgresql://h/d@b", 256, "postgresql://h/d@b");
	redacts("postgresql://memfloor@db/obs?sslmode=require", 256,
	    "postgresql://memfloor@db/obs?sslmode=require");
	redacts(
	    "postgresql://db/obs?user=m&password=s3cret&sslmode=verify-full",
	    256, "postgresql://db/obs?user=m&password=***&sslmode=verify-full");
	redacts("postgresql:///obs?password=x", 256,
	    "postgresql:///obs?password=***");
	redacts("postgresql://", 256, "postgresql://");
	redacts("postgresql://:@", 256, "postgresql://:***@");
	redacts("build/memfloor.db", 256, "build/memfloor.db");
	/* Cut to fit, never past the buffer, the password never shown. */
	redacts("postgresql://memfloor:s3cret@db/obs", 24,
	    "postgresql://memfloor:*");
	redacts("postgresql://memfloor:s3cret@db/obs", 1, "");
}

/* libpq's message about where, scrubbed, is want. */
static void
scrubs(const char *where, const char *text, const char *want)
{
	char out[256];

	assert_string_equal(mf_store_scrub(where, text, out, sizeof(out)),
	    want);
}

static void
test_store_scrub_hides_what_libpq_quotes(void **state)
{
	(void)state;
	/* libpq quotes the URL, or the part it could not read. */
	scrubs("postgres://u:secret@[::1",
	    "end of string reached in URI: \"postgres://u:secret@[::1\"",
	    "end of string reached in URI: \"postgres://u:***@[::1\"");
	scrubs("postgresql://u:sec%zzret@h/d",
	    "invalid percent-encoded token: \"sec%zzret\"",
	    "invalid percent-encoded token: \"***\"");
	scrubs("postgresql://h/d?user=u&password=pw1&x=y",
	    "invalid URI query parameter: \"x\" in password=pw1&x=y",
	    "invalid URI query parameter: \"x\" in password=***&x=y");
	/* No password: the text as it is; a file's too. */
	scrubs("postgresql://u@h/d", "u@h: refused", "u@h: refused");
	scrubs("postgresql://u:@h/d?password=", "u:@h", "u:@h");
	scrubs("store.db", "store.db: secret", "store.db: secret");
}

static void
test_store_refuses_a_database_it_cannot_reach(void **state)
{
	struct mf_store *st = NULL;
	struct mf_error err;
	char where[160];
	struct scratch *s = *state;

	/* A Unix socket directory with no server in it. */
	snprintf(where, sizeof(where),
	    "postgresql://memfloor:s3cret@/memfloor?host=%s&port=5", s->dir);
	memset(&err, 0, sizeof(err));
	assert_int_equal(mf_store_open(where, &st, &err), MF_EIO);
	assert_null(st);
	assert_non_null(strstr(MSG(&err), "memfloor:***@/memfloor?host="));
	assert_non_null(strstr(MSG(&err), "cannot connect"));
	assert_null(strstr(MSG(&err), "s3cret"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_store_made_and_migrated,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_add_list_delete,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_store_add_fails_when_its_commit_does, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_run_kept_once, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_store_admissions_through_the_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_store_refuses_a_file_not_sqlite, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_store_refuses_another_database, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_store_refuses_a_newer_schema, setup, teardown),
		cmocka_unit_test(test_store_kind_of_a_url),
		cmocka_unit_test(test_store_redact_leaves_out_the_password),
		cmocka_unit_test(test_store_scrub_hides_what_libpq_quotes),
		cmocka_unit_test_setup_teardown(
		    test_store_refuses_a_database_it_cannot_reach, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
