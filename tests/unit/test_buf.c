/*
 * test_buf.c: the text builder's contract (buf.h): the cap, the sticky
 * first failure, what mf_buf_take hands over, and a buffer over the
 * caller's array, cut to fit; and what a file read (file.h) takes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/file.h"

static void
test_buf_grows_to_the_cap(void **state)
{
	struct mf_buf b;
	char chunk[100];

	(void)state;
	memset(chunk, 'x', sizeof(chunk));
	mf_buf_init(&b, 1000);
	/* 999 bytes and the NUL fill the cap exactly. */
	for (int i = 0; i < 9; i++)
		assert_int_equal(mf_buf_add(&b, chunk, 100), MF_OK);
	assert_int_equal(mf_buf_add(&b, chunk, 99), MF_OK);
	assert_int_equal(b.len, 999);
	assert_int_equal(b.data[999], '\0');
	assert_true(b.cap <= 1000);
	assert_int_equal(mf_buf_add(&b, chunk, 1), MF_ETOOBIG);
	assert_int_equal(b.len, 999);
	mf_buf_free(&b);
}

/* After a failure nothing is appended, however small: the fast path
 * (room to spare) must not write past a failure. */
static void
test_buf_failure_is_sticky(void **state)
{
	struct mf_buf b;
	char big[600];

	(void)state;
	memset(big, 'x', sizeof(big));
	mf_buf_init(&b, 512);
	assert_int_equal(mf_buf_add(&b, "abc", 3), MF_OK);
	assert_int_equal(mf_buf_add(&b, big, sizeof(big)), MF_ETOOBIG);
	/* There is room for these two in what was allocated. */
	assert_int_equal(mf_buf_add(&b, "d", 1), MF_ETOOBIG);
	assert_int_equal(mf_buf_printf(&b, "%d", 5), MF_ETOOBIG);
	assert_null(mf_buf_room(&b, 1));
	assert_string_equal(b.data, "abc");
	assert_int_equal(b.len, 3);
	assert_int_equal(b.rc, MF_ETOOBIG);
	mf_buf_free(&b);
}

static void
test_buf_printf(void **state)
{
	struct mf_buf b;

	(void)state;
	mf_buf_init(&b, 64);
	assert_int_equal(mf_buf_printf(&b, "%s-%03d", "a", 7), MF_OK);
	assert_int_equal(mf_buf_printf(&b, "%c", '!'), MF_OK);
	assert_string_equal(b.data, "a-007!");
	assert_int_equal(b.len, 6);
	/* 64 bytes with the NUL do not fit in a cap of 64. */
	assert_int_equal(mf_buf_printf(&b, "%058d", 1), MF_ETOOBIG);
	assert_string_equal(b.data, "a-007!");
	mf_buf_free(&b);
}

/* take hands over the text and empties the buffer; an empty buffer gives
 * ""; after a failure it frees the text and gives NULL. */
static void
test_buf_take(void **state)
{
	struct mf_buf b;
	char big[100], *t;

	(void)state;
	mf_buf_init(&b, 64);
	t = mf_buf_take(&b);
	assert_non_null(t);
	assert_string_equal(t, "");
	free(t);
	mf_buf_add(&b, "hello", 5);
	t = mf_buf_take(&b);
	assert_string_equal(t, "hello");
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	free(t);
	memset(big, 'x', sizeof(big));
	mf_buf_add(&b, "hello", 5);
	mf_buf_add(&b, big, sizeof(big));
	assert_null(mf_buf_take(&b));
	assert_null(b.data);
	assert_int_equal(b.rc, MF_ETOOBIG);
	mf_buf_free(&b);
}

/* room/done write in place, as the JSON writer does. */
static void
test_buf_room_and_done(void **state)
{
	struct mf_buf b;
	char *p;

	(void)state;
	mf_buf_init(&b, 64);
	p = mf_buf_room(&b, 10);
	assert_non_null(p);
	memcpy(p, "0123", 4);
	mf_buf_done(&b, p + 4);
	assert_string_equal(b.data, "0123");
	assert_null(mf_buf_room(&b, 60));
	assert_int_equal(b.rc, MF_ETOOBIG);
	mf_buf_free(&b);
}

/* Over an array of 8 bytes: 7 characters and the NUL, the rest cut off,
 * and nothing after the cut; the array is the text and is never freed. */
static void
test_buf_fixed_cuts_to_fit(void **state)
{
	char s[8], t[8], none[1] = { 'x' };
	struct mf_buf b;

	(void)state;
	mf_buf_fixed(&b, s, sizeof(s));
	assert_string_equal(s, "");
	assert_int_equal(mf_buf_str(&b, "/spec"), MF_OK);
	assert_int_equal(mf_buf_str(&b, "/containers"), MF_ETOOBIG);
	assert_string_equal(s, "/spec/c");
	assert_int_equal(b.len, 7);
	assert_int_equal(mf_buf_str(&b, ""), MF_ETOOBIG);
	assert_int_equal(mf_buf_int(&b, 5), MF_ETOOBIG);
	assert_string_equal(s, "/spec/c");
	mf_buf_free(&b);
	assert_string_equal(s, "/spec/c");
	/* printf cut the same way, as snprintf would. */
	mf_buf_fixed(&b, t, sizeof(t));
	assert_int_equal(mf_buf_printf(&b, "%s", "ab"), MF_OK);
	assert_int_equal(mf_buf_printf(&b, "%d-%d", 1234, 5678), MF_ETOOBIG);
	assert_string_equal(t, "ab1234-");
	/* No room at all: nothing written, not even the NUL. */
	mf_buf_fixed(&b, none, 0);
	assert_int_equal(mf_buf_str(&b, "a"), MF_ETOOBIG);
	assert_int_equal(none[0], 'x');
	mf_buf_fixed(&b, NULL, 0);
	assert_int_equal(mf_buf_int(&b, 1), MF_ETOOBIG);
}

/* Integers as "%lld" writes them, both ends of int64 included. */
static void
test_buf_int(void **state)
{
	static const int64_t v[] = { 0, 7, -7, 10, 99, 100, -100, 1234567890123,
		INT64_MAX, INT64_MIN };
	char want[32], got[32];
	struct mf_buf b;

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(want, sizeof(want), "%lld", (long long)v[i]);
		mf_buf_fixed(&b, got, sizeof(got));
		assert_int_equal(mf_buf_int(&b, v[i]), MF_OK);
		assert_string_equal(got, want);
	}
}

/* v through mf_buf_g and through printf's %.*g: the same bytes. */
static void
same_as_printf(double v, int prec)
{
	char got[64], want[64];
	struct mf_buf b;

	mf_buf_fixed(&b, got, sizeof(got));
	assert_int_equal(mf_buf_g(&b, v, prec), MF_OK);
	snprintf(want, sizeof(want), "%.*g", prec, v);
	if (strcmp(got, want) != 0)
		fail_msg("%.17g at %d: got %s, printf %s", v, prec, got, want);
}

static void
test_buf_g_is_printfs(void **state)
{
	/* The cases of each branch: fixed and exponential on both sides of
	 * C11's bounds (-4 <= X < P), a carry into the next power of ten,
	 * trailing zeros dropped, exact ties (printf rounds the binary
	 * value: 0.125 to even, 2.5e-5 is below its tie), the fallbacks. */
	static const double cases[] = { 0, -0.0, 1, -1, 0.5, 0.125, 2.5e-5,
		1e-4, 9.9995e-5, 0.0001234, 1e-5, 1234, 12345, 99995, 9999.5,
		1e15, 2.438e14, 5.038e14, 0.776, 0.86, 5.8e-6, 1.429e11,
		123456789012345678.0, 1e300, 5e-324, 1.0 / 3, 2.0 / 3, 1e22,
		1e23, HUGE_VAL, -HUGE_VAL, NAN };
	unsigned long long x = 88172645463325252ull;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (int p = 1; p <= 15; p++)
			same_as_printf(cases[i], p);
	/* And a spread of doubles, every exponent, from a fixed xorshift. */
	for (int i = 0; i < 200000; i++) {
		double v;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(&v, &x, sizeof(v));
		same_as_printf(v, 1 + i % 15);
		same_as_printf((double)(x % 1000000) / 1000, 1 + i % 15);
		same_as_printf((double)(x >> 11) / 1e6, 1 + i % 15);
	}
}

/* mf_digits(v) ending at end is printf's "%llu". */
static void
same_digits(uint64_t v, char *end)
{
	char want[24];

	snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
	assert_string_equal(mf_digits(v, end), want);
}

static void
test_str_copy_and_digits(void **state)
{
	char d[4], buf[24];

	(void)state;
	assert_string_equal(mf_copy(d, sizeof(d), "abcdef"), "abc");
	assert_string_equal(mf_copy(d, sizeof(d), ""), "");
	buf[23] = '\0';
	assert_string_equal(mf_digits(0, buf + 23), "0");
	assert_string_equal(mf_digits(UINT64_MAX, buf + 23),
	    "18446744073709551615");
	/* Each power of ten and its neighbours, and a thousand numbers of
	 * every length (a linear congruential sequence, shifted), as printf
	 * writes them. */
	for (uint64_t p = 1; p <= UINT64_MAX / 10; p *= 10)
		for (uint64_t v = p - 1; v <= p + 1; v++)
			same_digits(v, buf + 23);
	for (uint64_t i = 0, x = 1; i < 1000; i++) {
		x = x * 6364136223846793005u + 1442695040888963407u;
		same_digits(x >> (i % 64), buf + 23);
	}
}

/* mf_cents(v) is printf's "%.2f" of v. */
static void
same_cents(double v)
{
	char got[400], want[400];
	size_t n = mf_cents(v, got, sizeof(got));

	snprintf(want, sizeof(want), "%.2f", v);
	assert_string_equal(got, want);
	assert_int_equal(n, strlen(want));
}

static void
test_str_cents(void **state)
{
	static const double given[] = { 0.0, -0.0, 0.004, 0.005, 0.006, 0.015,
		0.125, 0.375, 0.625, 1.005, 2.675, 31.83, 32.265, -1.235,
		-0.001, 0x1p-11, 0x1p-12, 0x1p-1074, 0x1p52 - 0.5, 0x1p53 - 1,
		0x1p53, 1e300, -1e300 };
	char cut[6];

	(void)state;
	for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++)
		same_cents(given[i]);
	same_cents(INFINITY);
	same_cents(-INFINITY);
	same_cents(NAN);
	/* Every multiple of 1/200 and of 1/8 up to 1,000: the halves that
	 * are exact binary values, which round to even, and those that
	 * are not. */
	for (int k = 0; k <= 200000; k++)
		same_cents(k / 200.0);
	for (int k = 0; k <= 8000; k++)
		same_cents(k / 8.0);
	/* Doubles of every exponent from 2^-20 to 2^60, their mantissas a
	 * linear congruential sequence, and both signs. */
	for (uint64_t i = 0, x = 1; i < 200000; i++) {
		double v;

		x = x * 6364136223846793005u + 1442695040888963407u;
		v = ldexp((double)(x >> 11) / 0x1p53, (int)(i % 81) - 20);
		same_cents(i % 2 ? -v : v);
	}
	/* Cut to fit, the whole length returned. */
	assert_int_equal(mf_cents(123456.789, cut, sizeof(cut)), 9);
	assert_string_equal(cut, "12345");
}

static void
test_str_utf8(void **state)
{
	char s[] = "ok \xc3\xa9 \xff \xe2\x82 \xed\xa0\x80 \xf4\x90\x80\x80";
	char t[] = "a\x01\tb\x7f\n";
	char u[] = "a\0b";

	(void)state;
	assert_int_equal(mf_utf8_len((const unsigned char *)"\xc3\xa9"), 2);
	assert_int_equal(mf_utf8_len((const unsigned char *)"\xe2\x82\xac"), 3);
	assert_int_equal(mf_utf8_len((const unsigned char *)"\xf0\x9f\x98\x80"),
	    4);
	assert_int_equal(mf_utf8_len((const unsigned char *)"\xc0\xaf"), 0);
	assert_int_equal(mf_utf8_len((const unsigned char *)"\xe2\x82"), 0);
	mf_utf8_fix(s);
	assert_string_equal(s, "ok \xc3\xa9 ? ?? ??? ????");
	mf_scrub(t, strlen(t));
	assert_string_equal(t, "a?\tb?\n");
	/* A NUL within the length is scrubbed too: the text is its bytes. */
	mf_scrub(u, sizeof(u) - 1);
	assert_memory_equal(u, "a?b\0", sizeof(u));
}

/* mf_file_read(path) fails with rc and says "PATH: text". */
static void
read_fails(const char *path, enum mf_rc rc, const char *text)
{
	char *buf = NULL, msg[MF_ERROR_MAX], want[MF_ERROR_MAX];
	struct mf_error err;
	size_t len = 7;

	assert_int_equal(mf_file_read(path, 100, "a test file", &buf, &len,
	                     &err),
	    rc);
	assert_null(buf);
	assert_int_equal(len, 7);
	snprintf(want, sizeof(want), "%s: %s", path, text);
	assert_string_equal(mf_error_message(&err, msg, sizeof(msg)), want);
}

/*
 * A path must name a regular file.  A named pipe with no writer is
 * refused at once: opening it to read would wait for a writer, and a
 * reload would wait with it (the alarm ends the program if it does).  A
 * directory is refused alike; a symlink to a regular file is read.
 */
static void
test_file_regular_only(void **state)
{
	char dir[] = "/tmp/test_buf.XXXXXX", fifo[64], file[64], sym[64];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/pipe", dir);
	snprintf(file, sizeof(file), "%s/file", dir);
	snprintf(sym, sizeof(sym), "%s/link", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(5);
	read_fails(fifo, MF_EIO, "not a regular file (a named pipe)");
	alarm(0);
	read_fails(dir, MF_EIO, "not a regular file (a directory)");
	f = fopen(file, "w");
	assert_non_null(f);
	assert_int_equal(fputs("abc\n", f), 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(symlink("file", sym), 0);
	assert_int_equal(mf_file_read(sym, 100, "a test file", &buf, &len,
	                     NULL),
	    MF_OK);
	assert_int_equal(len, 4);
	assert_string_equal(buf, "abc\n");
	free(buf);
	unlink(sym);
	unlink(file);
	unlink(fifo);
	rmdir(dir);
}

/*
 * What a person names on the command line may be a stream: a named pipe
 * is read to its end once its writer comes (the /dev/fd/N of a shell's
 * process substitution is one); a directory is still refused.
 */
static void
test_input_reads_streams(void **state)
{
	char dir[] = "/tmp/test_buf.XXXXXX", fifo[64];
	char *buf = NULL;
	size_t len = 0;
	struct mf_error err;
	pid_t pid;
	int status;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/pipe", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		FILE *w = fopen(fifo, "w");

		_exit(w != NULL && fputs("kind: Job\n", w) >= 0 &&
		            fclose(w) == 0 ?
		        0 :
		        1);
	}
	alarm(5);
	assert_int_equal(mf_input_read(fifo, 100, "an input", &buf, &len, &err),
	    MF_OK);
	alarm(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(len, 10);
	assert_string_equal(buf, "kind: Job\n");
	free(buf);
	buf = NULL;
	assert_int_equal(mf_input_read(dir, 100, "an input", &buf, &len, &err),
	    MF_EIO);
	assert_null(buf);
	unlink(fifo);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buf_grows_to_the_cap),
		cmocka_unit_test(test_buf_failure_is_sticky),
		cmocka_unit_test(test_buf_printf),
		cmocka_unit_test(test_buf_take),
		cmocka_unit_test(test_buf_room_and_done),
		cmocka_unit_test(test_buf_fixed_cuts_to_fit),
		cmocka_unit_test(test_buf_int),
		cmocka_unit_test(test_buf_g_is_printfs),
		cmocka_unit_test(test_str_copy_and_digits),
		cmocka_unit_test(test_str_cents),
		cmocka_unit_test(test_str_utf8),
		cmocka_unit_test(test_file_regular_only),
		cmocka_unit_test(test_input_reads_streams),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
