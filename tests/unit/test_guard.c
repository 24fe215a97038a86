/*
 * test_guard.c: the deadlines of daemon/guard.c on a socket pair, the
 * guard's own ticker shutting down the daemon's end: a request line
 * after an answer has the whole request timeout from it, not what was
 * left of the idle timeout before it; and a connection that never sends
 * one is closed at the idle timeout.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "guard.h"

#define REQUEST_S 2
#define IDLE_S 1

static void
sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

/* Whether the guard has shut the daemon's end of the pair down: the
 * client's end reads the end of the stream. */
static int
cut(int client)
{
	char c;

	return recv(client, &c, 1, MSG_DONTWAIT) == 0;
}

/* A connection on a new socket pair (sv[0] the daemon's end) under a
 * guard just started, its first request answered. */
static struct mfd_conn *
answered(int sv[2])
{
	struct sockaddr_storage peer = { .ss_family = AF_UNIX };
	struct mfd_conn *c;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(mfd_guard_start(REQUEST_S, IDLE_S, 1 << 20), 0);
	c = mfd_guard_open(sv[0], (struct sockaddr *)&peer);
	assert_non_null(c);
	mfd_guard_begin(c);
	mfd_guard_end(c, 1);
	return c;
}

static void
done(struct mfd_conn *c, int sv[2])
{
	mfd_guard_close(c);
	mfd_guard_stop();
	close(sv[0]);
	close(sv[1]);
}

static void
test_guard_later_request_runs_from_its_line(void **state)
{
	int sv[2];
	struct mfd_conn *c = answered(sv);

	(void)state;
	/* The next request line just before the idle deadline: it has
	 * REQUEST_S from here, well past the idle deadline. */
	sleep_ms(IDLE_S * 1000 - 200);
	mfd_guard_begin(c);
	sleep_ms(1000);
	assert_false(cut(sv[1]));
	sleep_ms(REQUEST_S * 1000);
	assert_true(cut(sv[1]));
	done(c, sv);
}

static void
test_guard_idle_connection_closed(void **state)
{
	int sv[2];
	struct mfd_conn *c = answered(sv);

	(void)state;
	sleep_ms(IDLE_S * 1000 + 600);
	assert_true(cut(sv[1]));
	done(c, sv);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guard_later_request_runs_from_its_line),
		cmocka_unit_test(test_guard_idle_connection_closed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
