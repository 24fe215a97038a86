/*
 * harness.c: start memfloord, talk HTTP to it, clean up after it.
 *
 * The daemon's stderr is a pipe read by one thread per daemon into a log
 * buffer, so a test can wait for a line ("listening on ... port N", a
 * reload) and look at what was logged after the fact.  Every daemon and
 * every scratch directory is on a list that it_cleanup empties at exit; a
 * daemon also gets SIGKILL from the kernel when the test process dies.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define START_TIMEOUT_MS 20000
#define MAX_ARGS 64
#define MAX_TMPDIRS 64

struct it_daemon {
	pid_t pid;
	int reaped;
	int status; /* valid once reaped */
	int fd;     /* read end of the stderr pipe */
	pthread_t reader;
	pthread_mutex_t lock; /* guards log, len, cap, eof */
	pthread_cond_t grew;
	char *log;
	size_t len, cap;
	int eof;
	int port;
	struct it_daemon *next;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct it_daemon *daemons;
static char *tmpdirs[MAX_TMPDIRS];
static size_t ntmpdirs;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* --- small things ---------------------------------------------------- */

long
it_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
it_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void
init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	signal(SIGPIPE, SIG_IGN);
	atexit(it_cleanup);
}

static void
init(void)
{
	pthread_once(&once, init_once);
}

const char *
it_top(void)
{
	const char *t = getenv("MF_TOP");

	return t != NULL && t[0] != '\0' ? t : ".";
}

char *
it_path(char *buf, size_t size, const char *rel)
{
	snprintf(buf, size, "%s/%s", it_top(), rel);
	return buf;
}

const char *
it_memfloord(void)
{
	const char *p = getenv("MEMFLOORD");

	return p != NULL && p[0] != '\0' ? p : "build/memfloord";
}

/* --- files ----------------------------------------------------------- */

const char *
it_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char tmpl[4096];
	char *dir;

	init();
	if (base == NULL || base[0] == '\0')
		base = "/tmp";
	snprintf(tmpl, sizeof(tmpl), "%s/memfloor-it.XXXXXX", base);
	if (mkdtemp(tmpl) == NULL)
		return NULL;
	dir = strdup(tmpl);
	pthread_mutex_lock(&reg_lock);
	if (dir == NULL || ntmpdirs == MAX_TMPDIRS) {
		pthread_mutex_unlock(&reg_lock);
		it_rmtree(tmpl);
		free(dir);
		return NULL;
	}
	tmpdirs[ntmpdirs++] = dir;
	pthread_mutex_unlock(&reg_lock);
	return dir;
}

int
it_rmtree(const char *path)
{
	struct dirent *e;
	struct stat st;
	char sub[4096];
	DIR *d;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	d = opendir(path);
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		it_rmtree(sub);
	}
	closedir(d);
	return rmdir(path);
}

static int
write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
it_write_file(const char *path, const void *data, size_t len)
{
	char tmp[4096];
	int fd, rc;

	snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0)
		return -1;
	rc = write_all(fd, data, len);
	if (close(fd) != 0)
		rc = -1;
	if (rc == 0)
		rc = rename(tmp, path);
	if (rc != 0)
		unlink(tmp);
	return rc;
}

char *
it_read_file(const char *path, size_t *len)
{
	char *buf = NULL, *p;
	size_t used = 0, cap = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		if (cap - used < 4096) {
			cap = cap ? cap * 2 : 8192;
			p = realloc(buf, cap);
			if (p == NULL)
				goto fail;
			buf = p;
		}
		n = read(fd, buf + used, cap - used - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	buf[used] = '\0';
	if (len != NULL)
		*len = used;
	return buf;
fail:
	close(fd);
	free(buf);
	return NULL;
}

int
it_copy_file(const char *from, const char *to)
{
	size_t len;
	char *data = it_read_file(from, &len);
	int rc;

	if (data == NULL)
		return -1;
	rc = it_write_file(to, data, len);
	free(data);
	return rc;
}

/* --- the daemon ------------------------------------------------------ */

static void *
read_log(void *arg)
{
	struct it_daemon *d = arg;
	char chunk[4096], *p;
	ssize_t n;

	for (;;) {
		n = read(d->fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		pthread_mutex_lock(&d->lock);
		if (n <= 0) {
			d->eof = 1;
			pthread_cond_broadcast(&d->grew);
			pthread_mutex_unlock(&d->lock);
			return NULL;
		}
		if (d->cap - d->len <= (size_t)n) {
			size_t cap = d->cap * 2 + (size_t)n + 1;

			p = realloc(d->log, cap);
			if (p != NULL) {
				d->log = p;
				d->cap = cap;
			}
		}
		if (d->cap - d->len > (size_t)n) {
			memcpy(d->log + d->len, chunk, (size_t)n);
			d->len += (size_t)n;
			d->log[d->len] = '\0';
		}
		pthread_cond_broadcast(&d->grew);
		pthread_mutex_unlock(&d->lock);
	}
}

static void
deadline_in(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static int
count_in(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	int count = 0;

	if (hay == NULL || n == 0)
		return 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += n)
		count++;
	return count;
}

int
it_daemon_log_wait(struct it_daemon *d, const char *needle, int n,
    int timeout_ms)
{
	struct timespec until;
	int rc = -1;

	deadline_in(&until, timeout_ms);
	pthread_mutex_lock(&d->lock);
	for (;;) {
		if (count_in(d->log, needle) >= n) {
			rc = 0;
			break;
		}
		if (d->eof ||
		    pthread_cond_timedwait(&d->grew, &d->lock, &until) ==
		        ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int
it_daemon_log_count(struct it_daemon *d, const char *needle)
{
	int n;

	pthread_mutex_lock(&d->lock);
	n = count_in(d->log, needle);
	pthread_mutex_unlock(&d->lock);
	return n;
}

char *
it_daemon_log(struct it_daemon *d)
{
	char *copy;

	pthread_mutex_lock(&d->lock);
	copy = strdup(d->log ? d->log : "");
	pthread_mutex_unlock(&d->lock);
	return copy;
}

/* The port from "listening on ADDR port N ("; -1 until it is logged. */
static int
logged_port(struct it_daemon *d)
{
	const char *p;
	char *end = NULL;
	long port = -1;

	pthread_mutex_lock(&d->lock);
	p = d->log ? strstr(d->log, "listening on ") : NULL;
	p = p ? strstr(p, " port ") : NULL;
	if (p != NULL)
		port = strtol(p + 6, &end, 10);
	/* Only a whole number: the rest of the line may not be here yet. */
	if (end == NULL || *end != ' ')
		port = -1;
	pthread_mutex_unlock(&d->lock);
	return port > 0 && port < 65536 ? (int)port : -1;
}

static void
reg_add(struct it_daemon *d)
{
	pthread_mutex_lock(&reg_lock);
	d->next = daemons;
	daemons = d;
	pthread_mutex_unlock(&reg_lock);
}

static void
reg_remove(struct it_daemon *d)
{
	pthread_mutex_lock(&reg_lock);
	for (struct it_daemon **pp = &daemons; *pp != NULL; pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	pthread_mutex_unlock(&reg_lock);
}

/* In the child: only async-signal-safe calls until exec. */
static void
exec_child(int out, pid_t parent, char *const *argv)
{
	sigset_t none;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	dup2(out, STDOUT_FILENO);
	dup2(out, STDERR_FILENO);
	execv(argv[0], argv);
	_exit(127);
}

static struct it_daemon *
daemon_new(void)
{
	struct it_daemon *d = calloc(1, sizeof(*d));
	pthread_condattr_t ca;

	if (d == NULL)
		return NULL;
	d->fd = -1;
	d->port = -1;
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->grew, &ca);
	pthread_condattr_destroy(&ca);
	return d;
}

/* A pipe whose ends are closed in every program we start. */
static int
cloexec_pipe(int p[2])
{
	if (pipe(p) != 0)
		return -1;
	fcntl(p[0], F_SETFD, FD_CLOEXEC);
	fcntl(p[1], F_SETFD, FD_CLOEXEC);
	return 0;
}

static int
spawn(struct it_daemon *d, char *const *argv)
{
	int p[2];
	pid_t parent = getpid();

	if (cloexec_pipe(p) != 0)
		return -1;
	d->pid = fork();
	if (d->pid == 0)
		exec_child(p[1], parent, argv);
	close(p[1]);
	if (d->pid < 0) {
		close(p[0]);
		return -1;
	}
	d->fd = p[0];
	if (pthread_create(&d->reader, NULL, read_log, d) != 0) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
		d->reaped = 1;
		close(d->fd);
		d->fd = -1;
		return -1;
	}
	return 0;
}

struct it_daemon *
it_daemon_start(const char *const *args)
{
	char *argv[MAX_ARGS + 5];
	struct it_daemon *d;
	size_t n = 0;
	long until;
	char *log;

	init();
	argv[n++] = (char *)it_memfloord();
	argv[n++] = "-d";
	argv[n++] = "-l";
	argv[n++] = "127.0.0.1:0";
	for (size_t i = 0; args != NULL && args[i] != NULL && i < MAX_ARGS; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	d = daemon_new();
	if (d == NULL)
		return NULL;
	if (spawn(d, argv) != 0) {
		free(d);
		return NULL;
	}
	reg_add(d);
	until = it_now_ms() + START_TIMEOUT_MS;
	while ((d->port = logged_port(d)) < 0 && it_now_ms() < until &&
	    it_daemon_wait(d, 0) < 0)
		it_daemon_log_wait(d, " port ", 1, 50);
	if (d->port > 0)
		return d;
	log = it_daemon_log(d);
	fprintf(stderr, "harness: %s did not start; it logged:\n%s\n", argv[0],
	    log ? log : "");
	free(log);
	it_daemon_stop(d);
	return NULL;
}

int
it_daemon_port(const struct it_daemon *d)
{
	return d->port;
}

pid_t
it_daemon_pid(const struct it_daemon *d)
{
	return d->pid;
}

int
it_daemon_signal(struct it_daemon *d, int sig)
{
	if (d->reaped)
		return -1;
	return kill(d->pid, sig);
}

static int
decode_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return -1;
}

/* Wait (until the deadline) for the reader to see the end of the log. */
static void
drain_log(struct it_daemon *d, long until)
{
	struct timespec ts;
	long left = until - it_now_ms();

	deadline_in(&ts, left > 0 ? (int)left : 0);
	pthread_mutex_lock(&d->lock);
	while (!d->eof &&
	    pthread_cond_timedwait(&d->grew, &d->lock, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&d->lock);
}

int
it_daemon_wait(struct it_daemon *d, int timeout_ms)
{
	long until = it_now_ms() + timeout_ms;
	int st;

	while (!d->reaped) {
		pid_t r = waitpid(d->pid, &st, WNOHANG);

		if (r == d->pid) {
			d->reaped = 1;
			d->status = decode_status(st);
			/* Then the log holds all it wrote. */
			drain_log(d, it_now_ms() + 5000);
			break;
		}
		if (r < 0 && errno != EINTR)
			return -1;
		if (it_now_ms() >= until)
			return -1;
		it_sleep_ms(5);
	}
	return d->status;
}

void
it_daemon_stop(struct it_daemon *d)
{
	int st;

	if (d == NULL)
		return;
	reg_remove(d);
	if (!d->reaped) {
		kill(d->pid, SIGKILL);
		while (waitpid(d->pid, &st, 0) < 0 && errno == EINTR)
			;
		d->reaped = 1;
	}
	if (d->fd >= 0) {
		pthread_join(d->reader, NULL);
		close(d->fd);
	}
	pthread_cond_destroy(&d->grew);
	pthread_mutex_destroy(&d->lock);
	free(d->log);
	free(d);
}

char *
it_padded(const char *head, size_t len)
{
	size_t n = strlen(head);
	char *p;

	if (len <= n + 2)
		return NULL;
	p = malloc(len + 1);
	if (p == NULL)
		return NULL;
	memcpy(p, head, n);
	p[n] = '#';
	memset(p + n + 1, 'x', len - n - 2);
	p[len - 1] = '\n';
	p[len] = '\0';
	return p;
}

int
it_daemon_reports(struct it_daemon *d)
{
	return it_daemon_log_count(d, "runtime error") +
	    it_daemon_log_count(d, "Sanitizer");
}

int
it_daemon_finish(struct it_daemon *d, int timeout_ms)
{
	long t0 = it_now_ms();
	int rc, clean;
	char *log;

	if (d == NULL)
		return 0;
	it_daemon_signal(d, SIGTERM);
	rc = it_daemon_wait(d, timeout_ms);
	clean = it_daemon_reports(d) == 0;
	if (rc != 0 || !clean) {
		log = it_daemon_log(d);
		/* Whole: cmocka's messages cut long text. */
		fprintf(stderr,
		    "memfloord: exit status %d after %ld ms (-1: still "
		    "running after %d ms); it logged:\n%s\n",
		    rc, it_now_ms() - t0, timeout_ms, log);
		free(log);
	}
	it_daemon_stop(d);
	return rc == 0 && clean ? 0 : -1;
}

void
it_cleanup(void)
{
	struct it_daemon *d;

	for (;;) {
		pthread_mutex_lock(&reg_lock);
		d = daemons;
		pthread_mutex_unlock(&reg_lock);
		if (d == NULL)
			break;
		it_daemon_stop(d);
	}
	pthread_mutex_lock(&reg_lock);
	while (ntmpdirs > 0) {
		char *dir = tmpdirs[--ntmpdirs];

		it_rmtree(dir);
		free(dir);
	}
	pthread_mutex_unlock(&reg_lock);
}

/* --- HTTP ------------------------------------------------------------ */

struct sink {
	char *data;
	size_t len, cap;
	int failed;
};

static size_t
sink_add(struct sink *s, const char *p, size_t n)
{
	if (s->cap - s->len <= n) {
		size_t cap = s->cap * 2 + n + 1;
		char *q = realloc(s->data, cap);

		if (q == NULL) {
			s->failed = 1;
			return 0;
		}
		s->data = q;
		s->cap = cap;
	}
	memcpy(s->data + s->len, p, n);
	s->len += n;
	s->data[s->len] = '\0';
	return n;
}

static size_t
on_data(char *p, size_t size, size_t n, void *arg)
{
	return sink_add(arg, p, size * n);
}

struct source {
	const struct it_req *q;
	size_t off;
};

static size_t
on_read(char *p, size_t size, size_t n, void *arg)
{
	struct source *s = arg;
	const struct it_req *q = s->q;
	size_t want = size * n, left = q->len - s->off;

	if (left == 0)
		return 0;
	if (q->delay_ms > 0)
		it_sleep_ms(q->delay_ms);
	if (q->piece > 0 && want > q->piece)
		want = q->piece;
	if (want > left)
		want = left;
	memcpy(p, q->body + s->off, want);
	s->off += want;
	if (q->sent != NULL)
		atomic_store(q->sent, s->off);
	return want;
}

static struct curl_slist *
header_list(const struct it_req *q)
{
	struct curl_slist *h = NULL, *t;

	/* No 100-continue round trip: send the body straight away. */
	h = curl_slist_append(h, "Expect:");
	for (size_t i = 0;
	     h != NULL && q->headers != NULL && q->headers[i] != NULL; i++) {
		t = curl_slist_append(h, q->headers[i]);
		if (t == NULL) {
			curl_slist_free_all(h);
			return NULL;
		}
		h = t;
	}
	return h;
}

static void
set_method(CURL *c, const struct it_req *q, struct source *src)
{
	if (q->body != NULL) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, src);
		if (!q->chunked)
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
			    (curl_off_t)q->len);
	} else if (strcmp(q->method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
	} else if (strcmp(q->method, "HEAD") == 0) {
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	}
	/* Any other method, or a body sent with GET or HEAD. */
	if ((strcmp(q->method, "GET") != 0 && strcmp(q->method, "POST") != 0 &&
	        strcmp(q->method, "HEAD") != 0) ||
	    (q->body != NULL && strcmp(q->method, "POST") != 0))
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
}

static void
fill_response(CURL *c, CURLcode cc, struct sink *body, struct sink *hdrs,
    struct it_response *r)
{
	char *ct = NULL;

	r->body = body->data ? body->data : strdup("");
	r->len = body->data ? body->len : 0;
	r->headers = hdrs->data ? hdrs->data : strdup("");
	if (cc != CURLE_OK) {
		r->status = 0;
		return;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK &&
	    ct != NULL)
		r->content_type = strdup(ct);
}

int
it_send(const struct it_daemon *d, const struct it_req *q,
    struct it_response *r)
{
	struct sink body = { 0 }, hdrs = { 0 };
	struct source src = { q, 0 };
	struct curl_slist *h;
	char url[512];
	CURLcode cc = CURLE_OUT_OF_MEMORY;
	CURL *c;

	init();
	memset(r, 0, sizeof(*r));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", d->port, q->path);
	c = curl_easy_init();
	h = header_list(q);
	if (c != NULL && h != NULL) {
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
		    (long)(q->timeout_ms > 0 ? q->timeout_ms : 10000));
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->error);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
		curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
		curl_easy_setopt(c, CURLOPT_HEADERDATA, &hdrs);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
		set_method(c, q, &src);
		cc = curl_easy_perform(c);
	}
	if (cc != CURLE_OK && r->error[0] == '\0')
		snprintf(r->error, sizeof(r->error), "%s",
		    curl_easy_strerror(cc));
	fill_response(c, cc, &body, &hdrs, r);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return r->status > 0 ? 0 : -1;
}

int
it_request(const struct it_daemon *d, const char *method, const char *path,
    const char *body, size_t len, const char *const *headers,
    struct it_response *r)
{
	struct it_req q = { 0 };

	q.method = method;
	q.path = path;
	q.body = body;
	q.len = len;
	q.headers = headers;
	return it_send(d, &q, r);
}

void
it_response_free(struct it_response *r)
{
	free(r->body);
	free(r->content_type);
	free(r->headers);
	r->body = r->content_type = r->headers = NULL;
	r->len = 0;
}

char *
it_response_header(const struct it_response *r, const char *name, char *buf,
    size_t size)
{
	size_t n = strlen(name);
	const char *line = r->headers;

	buf[0] = '\0';
	while (line != NULL && *line != '\0') {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (len > n && strncasecmp(line, name, n) == 0 &&
		    line[n] == ':') {
			const char *v = line + n + 1;

			while (*v == ' ' || *v == '\t')
				v++;
			len -= (size_t)(v - line);
			while (len > 0 &&
			    (v[len - 1] == '\r' || v[len - 1] == ' '))
				len--;
			snprintf(buf, size, "%.*s", (int)len, v);
		}
		line = end ? end + 1 : NULL;
	}
	return buf;
}

json_t *
it_json(const struct it_response *r)
{
	return r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL;
}

json_t *
it_jpath(json_t *j, const char *path)
{
	char key[256];
	const char *p = path;

	while (j != NULL && *p != '\0') {
		size_t n = strcspn(p, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		if (json_is_array(j))
			j = json_array_get(j, strtoul(key, NULL, 10));
		else
			j = json_object_get(j, key);
		p += n + (p[n] == '.');
	}
	return j;
}

/* --- raw sockets ----------------------------------------------------- */

void
it_send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		p += k;
		n -= (size_t)k;
	}
}

int
it_connect(int port)
{
	struct sockaddr_in sa;
	int fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int
it_can_connect(int port)
{
	int fd = it_connect(port);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

static char *
read_until_close(int fd, long until)
{
	struct sink s = { 0 };
	struct pollfd pfd = { fd, POLLIN, 0 };
	char chunk[4096];
	ssize_t n;

	sink_add(&s, "", 0);
	while (!s.failed) {
		long left = until - it_now_ms();

		if (left <= 0)
			break;
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		sink_add(&s, chunk, (size_t)n);
	}
	if (s.failed) {
		free(s.data);
		return NULL;
	}
	return s.data;
}

char *
it_raw(const struct it_daemon *d, const char *data, size_t len, int timeout_ms)
{
	long until = it_now_ms() + timeout_ms;
	char *out;
	int fd;

	init();
	fd = it_connect(d->port);
	if (fd < 0)
		return NULL;
	it_send_all(fd, data, len);
	out = read_until_close(fd, until);
	close(fd);
	return out;
}

/* --- other programs -------------------------------------------------- */

int
it_run(const char *const *argv, int timeout_ms, char **output)
{
	long until = it_now_ms() + timeout_ms;
	pid_t parent = getpid(), pid;
	char *out;
	int p[2], st, rc = -1;

	init();
	*output = NULL;
	if (cloexec_pipe(p) != 0)
		return -1;
	pid = fork();
	if (pid == 0)
		exec_child(p[1], parent, (char *const *)argv);
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -1;
	}
	out = read_until_close(p[0], until);
	close(p[0]);
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			break;
		if ((r < 0 && errno != EINTR) || it_now_ms() >= until) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			free(out);
			return -1;
		}
		it_sleep_ms(5);
	}
	rc = decode_status(st);
	*output = out;
	return rc;
}
