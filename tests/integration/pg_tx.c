/*
 * pg_tx.c: a PostgreSQL store's transaction whose connection is lost
 * between two of its statements (closed without a word, as a failover, a
 * proxy's restart or a network fault ends it) is never reported
 * committed, none of its statements commits on the connection made
 * after, and the store goes on once it is ended.  The writer of
 * admissions runs its batches so (store/queue.c: BEGIN, a statement a
 * job, COMMIT), and this program runs the same statements through the
 * store's own back end, connected through a proxy of its own that it
 * cuts.
 *
 * Usage: pg_tx DIR PORT DB: the server's socket directory and port (it
 * listens on its Unix socket) and a database of the program's own;
 * tests/integration/postgres.sh starts the server.  Prints "ok - ..." or
 * "FAIL - ..." a check; exits 1 when one failed.
 */
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "store_int.h"

#define INSERT \
	"INSERT INTO observations (fingerprint, card, count, source, " \
	"created_at) VALUES ('0123456789abcdef0123456789abcdef', 'H100', 1, " \
	"'torch', 0)"
#define PAIRS 8

static int failed;

static void
check(int ok, const char *what, const struct mf_error *err)
{
	printf("%s - %s", ok ? "ok" : "FAIL", what);
	if (!ok && err != NULL)
		printf(" (%s)", err->text);
	printf("\n");
	failed |= !ok;
}

static void
sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

/* The proxy: TCP on 127.0.0.1 to the server's Unix socket, a connection
 * a pair of descriptors (the client's, the server's; -1 unused). */
static struct {
	int lfd, port;
	struct sockaddr_un server;
	int fd[PAIRS][2];
	int ask[2], told[2]; /* pipes: 'c' cut, 'q' quit; told when done */
	pthread_t thread;
} px;

static void
close_pair(int i)
{
	for (int k = 0; k < 2; k++) {
		if (px.fd[i][k] >= 0)
			close(px.fd[i][k]);
		px.fd[i][k] = -1;
	}
}

static void
take(void)
{
	int c = accept(px.lfd, NULL, NULL), s, i;

	if (c < 0)
		return;
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	for (i = 0; i < PAIRS && px.fd[i][0] >= 0; i++)
		;
	if (s < 0 || i == PAIRS ||
	    connect(s, (struct sockaddr *)&px.server, sizeof(px.server)) != 0) {
		close(c);
		if (s >= 0)
			close(s);
		return;
	}
	px.fd[i][0] = c;
	px.fd[i][1] = s;
}

/* What one side of pair i sent, to the other; the pair closed at its
 * end. */
static void
pass_on(int i, int k)
{
	char buf[8192];
	ssize_t n = read(px.fd[i][k], buf, sizeof(buf)), w;

	for (ssize_t at = 0; n > 0 && at < n; at += w)
		if ((w = write(px.fd[i][!k], buf + at, (size_t)(n - at))) <= 0)
			n = -1;
	if (n <= 0)
		close_pair(i);
}

static void *
relay(void *arg)
{
	struct pollfd p[2 + 2 * PAIRS];
	char c;

	(void)arg;
	for (;;) {
		p[0] = (struct pollfd){ px.ask[0], POLLIN, 0 };
		p[1] = (struct pollfd){ px.lfd, POLLIN, 0 };
		for (int i = 0; i < PAIRS; i++)
			for (int k = 0; k < 2; k++)
				p[2 + 2 * i + k] =
				    (struct pollfd){ px.fd[i][k], POLLIN, 0 };
		if (poll(p, 2 + 2 * PAIRS, -1) < 0)
			continue;
		if (p[0].revents != 0) {
			if (read(px.ask[0], &c, 1) != 1)
				c = 'q';
			for (int i = 0; i < PAIRS; i++)
				close_pair(i);
			if (write(px.told[1], &c, 1) != 1 || c == 'q')
				return NULL;
			continue;
		}
		if (p[1].revents & POLLIN)
			take();
		for (int i = 0; i < PAIRS; i++)
			for (int k = 0; k < 2; k++)
				if (px.fd[i][k] >= 0 &&
				    (p[2 + 2 * i + k].revents &
				        (POLLIN | POLLHUP)))
					pass_on(i, k);
	}
}

static int
proxy_start(const char *dir, const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	memset(px.fd, -1, sizeof(px.fd));
	px.server.sun_family = AF_UNIX;
	snprintf(px.server.sun_path, sizeof(px.server.sun_path),
	    "%s/.s.PGSQL.%s", dir, port);
	px.lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (px.lfd < 0 || bind(px.lfd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(px.lfd, 8) != 0 ||
	    getsockname(px.lfd, (struct sockaddr *)&a, &len) != 0 ||
	    pipe(px.ask) != 0 || pipe(px.told) != 0)
		return -1;
	px.port = ntohs(a.sin_port);
	return pthread_create(&px.thread, NULL, relay, NULL) == 0 ? 0 : -1;
}

/* Ask the proxy: 'c' closes every connection through it, 'q' too and
 * stops it; returns once it has. */
static int
proxy_ask(char c)
{
	char done;

	return write(px.ask[1], &c, 1) == 1 && read(px.told[0], &done, 1) == 1 ?
	    0 :
	    -1;
}

/* The first column of the first row of sql on c, an integer; -1 when
 * it fails. */
static long
count(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	long n = -1;

	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return n;
}

/* Close the store's connection without a word.  It was made over a
 * second ago, so that the store would make another at once when it
 * finds this one closed. */
static int
cut(void)
{
	sleep_ms(1200);
	return proxy_ask('c');
}

/* sql through the store's back end, as the writer runs it. */
static enum mf_rc
run(struct mf_store *s, const char *sql, struct mf_error *err)
{
	enum mf_rc rc;

	pthread_mutex_lock(&s->db_lock);
	rc = s->ops->run(s, sql, NULL, 0, NULL, err);
	pthread_mutex_unlock(&s->db_lock);
	return rc;
}

static long
rows(PGconn *admin)
{
	return count(admin, "SELECT count(*) FROM observations");
}

int
main(int argc, char **argv)
{
	struct mf_store *s = NULL;
	struct mf_error err;
	struct mf_observation o;
	char url[512], direct[512];
	PGconn *admin;
	long before;

	if (argc != 4) {
		fprintf(stderr, "usage: pg_tx DIR PORT DB\n");
		return 2;
	}
	if (proxy_start(argv[1], argv[2]) != 0) {
		printf("FAIL - the proxy starts\n");
		return 1;
	}
	snprintf(url, sizeof(url), "postgresql://memfloor@127.0.0.1:%d/%s",
	    px.port, argv[3]);
	snprintf(direct, sizeof(direct),
	    "postgresql://memfloor@/%s?host=%s&port=%s", argv[3], argv[1],
	    argv[2]);
	memset(&err, 0, sizeof(err));
	if (mf_store_open(url, &s, &err) != MF_OK) {
		printf("FAIL - the store opens (%s)\n", err.text);
		return 1;
	}
	admin = PQconnectdb(direct);
	if (PQstatus(admin) != CONNECTION_OK) {
		printf("FAIL - a second connection (%s)\n",
		    PQerrorMessage(admin));
		return 1;
	}

	before = rows(admin);
	check(before >= 0, "the table counted", NULL);

	/* Lost before COMMIT: COMMIT fails, and nothing was committed. */
	check(run(s, "BEGIN", &err) == MF_OK, "BEGIN", &err);
	check(run(s, INSERT, &err) == MF_OK, "a statement in it", &err);
	check(cut() == 0, "its connection closed", NULL);
	check(run(s, "COMMIT", &err) == MF_EIO,
	    "COMMIT after the connection was lost: an error", NULL);
	check(rows(admin) == before, "nothing committed", NULL);

	/* Lost before a statement: it fails rather than commit on its own
	 * on a new connection; ROLLBACK ends the transaction. */
	check(run(s, "BEGIN", &err) == MF_OK, "BEGIN again", &err);
	check(cut() == 0, "its connection closed", NULL);
	check(run(s, INSERT, &err) == MF_EIO,
	    "a statement after the connection was lost: an error", NULL);
	check(run(s, "ROLLBACK", &err) == MF_OK, "ROLLBACK ends it", &err);
	check(rows(admin) == before, "nothing committed", NULL);

	/* The store goes on: an observation is kept. */
	memset(&o, 0, sizeof(o));
	snprintf(o.fingerprint, sizeof(o.fingerprint), "%s",
	    "fedcba9876543210fedcba9876543210");
	snprintf(o.card, sizeof(o.card), "H100");
	snprintf(o.source, sizeof(o.source), "torch");
	o.count = 1;
	o.peak_reserved = 1 << 30;
	o.peak_allocated = o.device_used = -1;
	o.tokens_per_second = o.step_seconds = o.tokens_per_step = -1;
	check(mf_store_add(s, &o, &err) == MF_OK && o.id > 0,
	    "an observation after: kept", &err);
	check(rows(admin) == before + 1, "and there", NULL);

	PQfinish(admin);
	mf_store_close(s);
	proxy_ask('q');
	pthread_join(px.thread, NULL);
	return failed;
}
