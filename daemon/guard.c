/*
 * guard.c: every connection's deadline, and the budget of request bodies.
 *
 * libmicrohttpd's connection timeout counts idle time only: a client that
 * sends a byte every few seconds keeps its connection, and the body it
 * holds, for as long as it likes.  Here every connection is on a list
 * with a deadline: the request timeout from when it was accepted or from
 * the request line of a later request, until the answer is sent; between
 * requests, the idle timeout for the next one to begin.  A thread looks
 * at the list four times a second and shuts down the socket of a
 * connection past its deadline; libmicrohttpd then reads the end of
 * stream and closes the connection itself, with its callbacks.  The
 * socket is only shut down, never closed here, and a connection leaves
 * the list (under the lock) before libmicrohttpd closes its socket, so
 * the descriptor cannot be another connection's by then.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../admission/base/buf.h"
#include "guard.h"

#define TICK_MS 250
#define LOG_EVERY_MS 1000

struct mfd_conn {
	struct mfd_conn *prev, *next;
	int fd;
	long long deadline; /* ms on the monotonic clock; 0: none (suspended) */
	int in_request;
	int served; /* a request was answered: the next runs from its line */
	int expired;
	char addr[INET6_ADDRSTRLEN + 8];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static struct mfd_conn head = { &head, &head, -1, 0, 0, 0, 0, "" };
static long long request_ms, idle_ms;
static pthread_t ticker;
static int running, stopping;

/* Lines about clients, at most one a LOG_EVERY_MS: under lock. */
static long long last_line;
static unsigned long unsaid;

static atomic_size_t body_used;
static size_t body_limit;

/* "10.0.0.7:51234", "[fd00::7]:51234". */
static void
format_addr(const struct sockaddr *sa, char *out, size_t size)
{
	char host[INET6_ADDRSTRLEN];
	unsigned port = 0;

	mf_copy(out, size, "?");
	if (sa == NULL)
		return;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		if (inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host)))
			snprintf(out, size, "%s:%u", host, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 =
		    (const struct sockaddr_in6 *)sa;

		port = ntohs(in6->sin6_port);
		if (inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host)))
			snprintf(out, size, "[%s]:%u", host, port);
	}
}

/* A line about a client, or a count of them for the next line. */
static void
say_locked(const struct mfd_conn *c, const char *what)
{
	long long t = mfd_now_ms();

	if (last_line != 0 && t - last_line < LOG_EVERY_MS) {
		unsaid++;
		return;
	}
	if (unsaid > 0)
		mfd_log(MFD_WARN,
		    "http: connection from %s closed: %s (and %lu more connections since the last such line)",
		    c->addr, what, unsaid);
	else
		mfd_log(MFD_WARN, "http: connection from %s closed: %s",
		    c->addr, what);
	last_line = t;
	unsaid = 0;
}

static void
expire_locked(long long t)
{
	for (struct mfd_conn *c = head.next; c != &head; c = c->next) {
		if (c->deadline == 0 || c->expired || t < c->deadline)
			continue;
		c->expired = 1;
		shutdown(c->fd, SHUT_RDWR);
	}
}

static void *
tick_loop(void *arg)
{
	struct timespec due;

	(void)arg;
	pthread_mutex_lock(&lock);
	while (!stopping) {
		mfd_due_in(&due, TICK_MS);
		pthread_cond_timedwait(&wake, &lock, &due);
		expire_locked(mfd_now_ms());
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int
mfd_guard_start(unsigned request_s, unsigned idle_s, size_t body_bytes)
{
	request_ms = (long long)request_s * 1000;
	idle_ms = (long long)idle_s * 1000;
	body_limit = body_bytes;
	mfd_cond_monotonic(&wake);
	stopping = 0;
	if (pthread_create(&ticker, NULL, tick_loop, NULL) != 0)
		return -1;
	running = 1;
	return 0;
}

void
mfd_guard_stop(void)
{
	if (!running)
		return;
	pthread_mutex_lock(&lock);
	stopping = 1;
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
	pthread_join(ticker, NULL);
	running = 0;
}

struct mfd_conn *
mfd_guard_open(int fd, const struct sockaddr *peer)
{
	struct mfd_conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->fd = fd;
	format_addr(peer, c->addr, sizeof(c->addr));
	pthread_mutex_lock(&lock);
	c->deadline = mfd_now_ms() + request_ms;
	c->next = &head;
	c->prev = head.prev;
	head.prev->next = c;
	head.prev = c;
	pthread_mutex_unlock(&lock);
	return c;
}

void
mfd_guard_close(struct mfd_conn *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&lock);
	c->prev->next = c->next;
	c->next->prev = c->prev;
	if (c->expired)
		say_locked(c,
		    c->in_request ?
		        "request not finished within the request timeout" :
		        "no request within the timeout");
	else if (c->in_request)
		say_locked(c, "the client went away mid-request");
	pthread_mutex_unlock(&lock);
	free(c);
}

/*
 * Under the lock: c's deadline becomes t (0: none), or stays where it is
 * earlier with earliest; in_request becomes in (-1: as it is).  A NULL c
 * is a no-op.
 */
static void
set_deadline(struct mfd_conn *c, int in, long long t, int earliest)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&lock);
	if (in >= 0)
		c->in_request = in;
	if (!earliest || c->deadline == 0 || t < c->deadline)
		c->deadline = t;
	pthread_mutex_unlock(&lock);
}

void
mfd_guard_begin(struct mfd_conn *c)
{
	/* The first request's time runs from the connection's start, a
	 * later one's from its request line (not from the idle deadline
	 * before it).  served is the connection's thread's alone. */
	set_deadline(c, 1, mfd_now_ms() + request_ms, c != NULL && !c->served);
}

void
mfd_guard_end(struct mfd_conn *c, int answered)
{
	if (!answered)
		return;
	if (c != NULL)
		c->served = 1;
	set_deadline(c, 0, mfd_now_ms() + idle_ms, 0);
}

void
mfd_guard_suspend(struct mfd_conn *c, int suspended)
{
	/* A suspended connection waits on a fetch, which has its own cap. */
	set_deadline(c, -1, suspended ? 0 : mfd_now_ms() + request_ms, 0);
}

const char *
mfd_guard_addr(const struct mfd_conn *c)
{
	return c != NULL ? c->addr : "?";
}

int
mfd_guard_body_take(size_t n)
{
	size_t used = atomic_fetch_add(&body_used, n);

	if (used + n <= body_limit)
		return 0;
	atomic_fetch_sub(&body_used, n);
	return -1;
}

void
mfd_guard_body_give(size_t n)
{
	atomic_fetch_sub(&body_used, n);
}

size_t
mfd_guard_body_used(void)
{
	return atomic_load(&body_used);
}
