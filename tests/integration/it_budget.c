/*
 * it_budget.c: the body budget's 503 reaches the client.
 *
 * memfloord runs with --max-body-memory 8388608 (8 MiB).  Twenty clients
 * each declare a 1 MiB body (Content-Length: 1048576, the default
 * --max-body) and send half of it, then hold it open.  A body is charged
 * what its buffer may grow to before any of it is read: 1048576 bytes and
 * the NUL the buffer keeps after them, 1048577.  Seven fit (7 x 1048577 =
 * 7340039 <= 8388608 < 8 x 1048577 = 8388616); the other thirteen must be
 * answered at once, while the seven still hold their bodies, with 503,
 * Retry-After and Connection: close, never left waiting for the request
 * deadline.  Then the seven send the rest of their bodies, a real PyTorch
 * message padded to 1 MiB, and each must get its diagnosis; and once they
 * are done the budget must take a whole body again.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define CLIENTS 20
#define BODY_LEN (1u << 20)
#define FIT 7 /* floor(8388608 / 1048577) */
#define ANSWER_MAX 4096

/* pytorch/pytorch#16417 (2024 comment), tests/data/oom/messages.txt. */
static const char oom[] =
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate "
    "22.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 11.06 MiB "
    "is free. Including non-PyTorch memory, this process has 23.60 GiB "
    "memory in use. Of the allocated memory 22.90 GiB is allocated by "
    "PyTorch, and 194.87 MiB is reserved by PyTorch but unallocated.\n";

static struct it_daemon *daemon_;

struct client {
	int fd;
	char got[ANSWER_MAX];
	size_t len;
	int closed;
};

/* What the daemon sent so far is appended to c->got; c->closed once it
 * closed (or reset) the connection. */
static void
take(struct client *c)
{
	char chunk[1024];
	ssize_t n;

	for (;;) {
		n = recv(c->fd, chunk, sizeof(chunk), MSG_DONTWAIT);
		if (n > 0) {
			size_t k = (size_t)n < sizeof(c->got) - 1 - c->len ?
			    (size_t)n :
			    sizeof(c->got) - 1 - c->len;

			memcpy(c->got + c->len, chunk, k);
			c->len += k;
			c->got[c->len] = '\0';
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			c->closed = 1;
		return;
	}
}

/* Until every client in [0, n) has a whole answer head, or ms pass. */
static void
wait_answers(struct client *cs, int n, int ms)
{
	long until = it_now_ms() + ms;

	while (it_now_ms() < until) {
		int pending = 0;

		for (int i = 0; i < n; i++) {
			if (strstr(cs[i].got, "\r\n\r\n") == NULL &&
			    !cs[i].closed) {
				take(&cs[i]);
				pending +=
				    strstr(cs[i].got, "\r\n\r\n") == NULL;
			}
		}
		if (pending == 0)
			return;
		it_sleep_ms(20);
	}
}

static int
answered(const struct client *c, const char *status)
{
	return strncmp(c->got, status, strlen(status)) == 0;
}

static void
open_client(struct client *c, int port, const char *body)
{
	struct timeval tv = { 1, 0 };
	char head[256];

	memset(c, 0, sizeof(*c));
	c->fd = it_connect(port);
	assert_true(c->fd >= 0);
	/* A daemon that stops reading must not stall the test. */
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	snprintf(head, sizeof(head),
	    "POST /v1/diagnose HTTP/1.1\r\nHost: x\r\n"
	    "Content-Type: text/plain\r\nContent-Length: %u\r\n\r\n",
	    BODY_LEN);
	it_send_all(c->fd, head, strlen(head));
	it_send_all(c->fd, body, BODY_LEN / 2);
}

static void
test_budget_refusals_reach_the_clients(void **state)
{
	static struct client cs[CLIENTS + 1];
	char *body = malloc(BODY_LEN);
	int port = it_daemon_port(daemon_), refused = 0, held = 0;

	(void)state;
	assert_non_null(body);
	/* The message, then comment-like padding to exactly 1 MiB. */
	memset(body, '#', BODY_LEN);
	memcpy(body, oom, sizeof(oom) - 1);
	for (int i = 0; i < CLIENTS; i++)
		open_client(&cs[i], port, body);
	/* Every refused client is answered while the others hold on. */
	wait_answers(cs, CLIENTS, 5000);
	for (int i = 0; i < CLIENTS; i++) {
		if (answered(&cs[i], "HTTP/1.1 503 ")) {
			refused++;
			assert_non_null(
			    strstr(cs[i].got, "\r\nRetry-After: 1\r\n"));
			assert_non_null(
			    strstr(cs[i].got, "\r\nConnection: close\r\n"));
			assert_non_null(strstr(cs[i].got, "--max-body-memory"));
		} else {
			assert_int_equal(cs[i].len, 0);
			assert_false(cs[i].closed);
			held++;
		}
	}
	assert_int_equal(refused, CLIENTS - FIT);
	assert_int_equal(held, FIT);
	/* The held ones finish their bodies and are answered in full. */
	for (int i = 0; i < CLIENTS; i++)
		if (!answered(&cs[i], "HTTP/1.1 503 "))
			it_send_all(cs[i].fd, body + BODY_LEN / 2,
			    BODY_LEN / 2);
	wait_answers(cs, CLIENTS, 10000);
	for (int i = 0; i < CLIENTS; i++) {
		if (answered(&cs[i], "HTTP/1.1 503 "))
			continue;
		if (!answered(&cs[i], "HTTP/1.1 200 "))
			fail_msg("client %d: %.200s", i, cs[i].got);
	}
	for (int i = 0; i < CLIENTS; i++)
		close(cs[i].fd);
	/* Their bodies are given back: a whole one fits again. */
	open_client(&cs[CLIENTS], port, body);
	it_send_all(cs[CLIENTS].fd, body + BODY_LEN / 2, BODY_LEN / 2);
	wait_answers(&cs[CLIENTS], 1, 10000);
	if (!answered(&cs[CLIENTS], "HTTP/1.1 200 "))
		fail_msg("after: %.200s", cs[CLIENTS].got);
	assert_non_null(strstr(cs[CLIENTS].got, "\r\n\r\n"));
	close(cs[CLIENTS].fd);
	free(body);
}

/* The log has a line for each refused request, and for each held one
 * answered. */
static void
test_budget_refusals_logged(void **state)
{
	(void)state;
	assert_int_equal(it_daemon_log_wait(daemon_,
	                     "path=\"/v1/diagnose\" status=503 ", CLIENTS - FIT,
	                     5000),
	    0);
	assert_int_equal(it_daemon_log_wait(daemon_,
	                     "path=\"/v1/diagnose\" status=200 ", FIT + 1,
	                     5000),
	    0);
}

static int
setup(void **state)
{
	char cat[4096], models[4096];

	(void)state;
	daemon_ = it_daemon_start((const char *const[]){ "-f",
	    it_path(cat, sizeof(cat), "catalog/gpus.yaml"), "-m",
	    it_path(models, sizeof(models), "catalog/models"),
	    "--max-body-memory", "8388608", NULL });
	return daemon_ == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	int rc;

	(void)state;
	rc = it_daemon_finish(daemon_, 30000);
	daemon_ = NULL;
	return rc;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_refusals_reach_the_clients),
		cmocka_unit_test(test_budget_refusals_logged),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
