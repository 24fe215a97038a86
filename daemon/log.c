#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "../admission/base/buf.h"
#include "../admission/base/str.h"
#include "memfloord.h"

/*
 * Request lines wait in buf, written out with one write(2) when the next
 * would not fit or FLUSH_MS after the first went in, as nginx's
 * access_log buffer= flush=: a write of its own per request was a third
 * of the daemon's system calls.  Every other line flushes buf first and
 * goes out at once, so lines keep their order and errors are not late.
 */
#define BUF_SIZE (64 * 1024)
#define FLUSH_MS 100

enum sink { SINK_STDERR, SINK_SYSLOG, SINK_NONE };

static int json_lines;
static enum mfd_level max_level = MFD_INFO;
static atomic_int sink;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake; /* buf is no longer empty, or stopping */
static pthread_t flusher;
static int buffering, stopping; /* these and buf: under lock */
static char buf[BUF_SIZE];
static size_t used;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void
mfd_log_init(int json, enum mfd_level level)
{
	json_lines = json;
	max_level = level;
}

int
mfd_log_enabled(enum mfd_level level)
{
	return level <= max_level && atomic_load(&sink) != SINK_NONE;
}

/*
 * A line being written into a caller's array; appends past its end are
 * cut.  end leaves room for the "}\n" that ends a line.
 */
struct text {
	char *p, *end;
};

static void
add(struct text *t, const char *s, size_t n)
{
	if (n > (size_t)(t->end - t->p))
		n = (size_t)(t->end - t->p);
	memcpy(t->p, s, n);
	t->p += n;
}

static void
add_str(struct text *t, const char *s)
{
	add(t, s, strlen(s));
}

static void
add_num(struct text *t, long v)
{
	char digits[24], *d = digits + sizeof(digits);
	unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;

	d = mf_digits(u, d);
	if (v < 0)
		*--d = '-';
	add(t, d, (size_t)(digits + sizeof(digits) - d));
}

long long
mfd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
mfd_cond_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
}

void
mfd_due_in(struct timespec *due, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, due);
	due->tv_sec += ms / 1000;
	due->tv_nsec += ms % 1000 * 1000000L;
	if (due->tv_nsec >= 1000000000L) {
		due->tv_sec++;
		due->tv_nsec -= 1000000000L;
	}
}

/* s escaped, at most max bytes of it, never half an escape nor half a
 * character: control characters and DEL as \u00XX, so that no line can
 * be ended, forged or a terminal steered from within; bytes that are not
 * UTF-8 become U+FFFD, as in the answers.  With quotes, '"' and '\\'
 * are escaped too: a JSON string or a quoted text field. */
static void
add_escaped_as(struct text *t, const char *s, size_t max, int quotes)
{
	static const char hex[] = "0123456789abcdef";
	char *stop = t->end - t->p > (ptrdiff_t)max ? t->p + max : t->end;

	for (; s != NULL && *s != '\0' && stop - t->p >= 6; s++) {
		unsigned char c = (unsigned char)*s;
		size_t u =
		    c >= 0x80 ? mf_utf8_len((const unsigned char *)s) : 1;

		if (u == 0) {
			memcpy(t->p, "\xef\xbf\xbd", 3);
			t->p += 3;
		} else if (u > 1) {
			memcpy(t->p, s, u);
			t->p += u;
			s += u - 1;
		} else if (quotes && (c == '"' || c == '\\')) {
			*t->p++ = '\\';
			*t->p++ = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			memcpy(t->p, "\\u00", 4);
			t->p[4] = hex[c >> 4];
			t->p[5] = hex[c & 15];
			t->p += 6;
		} else {
			*t->p++ = (char)c;
		}
	}
}

static void
add_escaped(struct text *t, const char *s, size_t max)
{
	add_escaped_as(t, s, max, 1);
}

/* Short writes and EINTR go on; an error drops the rest: nowhere to say. */
static void
write_all(const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(STDERR_FILENO, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void
flush_locked(void)
{
	write_all(buf, used);
	used = 0;
}

static void *
flush_loop(void *arg)
{
	struct timespec due;
	int rc;

	(void)arg;
	pthread_mutex_lock(&lock);
	while (!stopping) {
		/* Idle, it sleeps until a line comes: no wakeups. */
		if (used == 0) {
			pthread_cond_wait(&wake, &lock);
			continue;
		}
		mfd_due_in(&due, FLUSH_MS);
		/* A wakeup before due is a new line or a flush by a writer. */
		rc = 0;
		while (!stopping && used > 0 && rc == 0)
			rc = pthread_cond_timedwait(&wake, &lock, &due);
		flush_locked();
	}
	flush_locked();
	pthread_mutex_unlock(&lock);
	return NULL;
}

int
mfd_log_buffer(void)
{
	int rc;

	if (buffering)
		return 0;
	mfd_cond_monotonic(&wake);
	rc = pthread_create(&flusher, NULL, flush_loop, NULL);
	if (rc != 0) {
		pthread_cond_destroy(&wake);
		return -1;
	}
	pthread_mutex_lock(&lock);
	buffering = 1;
	pthread_mutex_unlock(&lock);
	return 0;
}

void
mfd_log_fini(void)
{
	int started;

	pthread_mutex_lock(&lock);
	started = buffering;
	buffering = 0;
	stopping = 1;
	if (started)
		pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
	if (!started)
		return;
	/* It writes out what is left before it returns. */
	pthread_join(flusher, NULL);
	pthread_cond_destroy(&wake);
	stopping = 0;
}

/*
 * Whether a syslog daemon listens on /dev/log, tried as glibc's syslog(3)
 * connects.  Without one, glibc tries again for every line: socket,
 * connect, close and getpid under its lock, four calls a request.
 */
static int
syslog_listens(void)
{
	static const int types[] = { SOCK_DGRAM, SOCK_STREAM };
	struct sockaddr_un sun;
	int fd, ok;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, "/dev/log", sizeof("/dev/log"));
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		fd = socket(AF_UNIX, types[i], 0);
		if (fd < 0)
			continue;
		ok = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
		close(fd);
		if (ok)
			return 1;
	}
	return 0;
}

/*
 * Without a syslog socket the lines are dropped, said once on stderr
 * while it is still there: a detached daemon has nowhere else to write.
 * The socket is not looked for again: syslog daemons start before the
 * services that log to them, so one missing now is not coming.
 */
void
mfd_log_syslog(void)
{
	int listens = syslog_listens();

	if (!listens)
		mfd_log(MFD_WARN,
		    "no syslog socket at /dev/log: log lines are dropped from now on; run with -d to log to stderr");
	else
		openlog("memfloord", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	/* Under lock, so no request line is left in buf for stderr. */
	pthread_mutex_lock(&lock);
	flush_locked();
	atomic_store(&sink, listens ? SINK_SYSLOG : SINK_NONE);
	pthread_mutex_unlock(&lock);
}

/* The time and the level, and for JSON the opening of the object. */
static void
stamp(struct text *t, enum mfd_level level)
{
	/* The date and time to the second, made once a second a thread. */
	static _Thread_local char when[32];
	static _Thread_local size_t when_len;
	static _Thread_local time_t when_sec = -1;
	struct timespec ts;
	struct tm tm;
	char ms[5];
	long m;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec != when_sec) {
		gmtime_r(&ts.tv_sec, &tm);
		when_len =
		    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
		when_sec = ts.tv_sec;
	}
	m = ts.tv_nsec / 1000000;
	ms[0] = '.';
	ms[1] = (char)('0' + m / 100);
	ms[2] = (char)('0' + m / 10 % 10);
	ms[3] = (char)('0' + m % 10);
	ms[4] = 'Z';
	if (json_lines)
		add_str(t, "{\"ts\":\"");
	add(t, when, when_len);
	add(t, ms, sizeof(ms));
	add_str(t, json_lines ? "\",\"level\":\"" : " ");
	assert((size_t)level < sizeof(level_names) / sizeof(level_names[0]));
	add_str(t, level_names[level]);
	add_str(t, json_lines ? "\"," : " ");
}

/*
 * Not stdio: stderr's lock made request threads queue behind each other
 * for a write(2) each; here a request line costs them a memcpy.  A write
 * holds whole lines, so lines from threads never interleave.  The line is
 * out[0, t->p) with what syslog is sent starting at body.
 */
static void
emit(enum mfd_level level, char *out, const char *body, struct text *t,
    int request)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	int s = atomic_load(&sink);
	size_t n;

	if (s == SINK_SYSLOG) {
		*t->p = '\0';
		assert((size_t)level < sizeof(prio) / sizeof(prio[0]));
		syslog(prio[level], "%s", body);
	}
	if (s != SINK_STDERR)
		return;
	if (json_lines)
		*t->p++ = '}';
	*t->p++ = '\n';
	n = (size_t)(t->p - out);
	pthread_mutex_lock(&lock);
	/* sink is read again: mfd_log_syslog may have flushed buf since. */
	if (request && buffering && atomic_load(&sink) == SINK_STDERR) {
		if (used + n > sizeof(buf))
			flush_locked();
		if (used == 0)
			pthread_cond_signal(&wake);
		memcpy(buf + used, out, n);
		used += n;
	} else {
		flush_locked();
		write_all(out, n);
	}
	pthread_mutex_unlock(&lock);
}

void
mfd_log(enum mfd_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mfd_vlog(level, fmt, ap);
	va_end(ap);
}

void
mfd_vlog(enum mfd_level level, const char *fmt, va_list ap)
{
	char msg[1024], out[2300];
	struct text t = { out, out + sizeof(out) - 2 };
	const char *body;

	if (!mfd_log_enabled(level))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	stamp(&t, level);
	body = t.p;
	if (json_lines) {
		add_str(&t, "\"msg\":\"");
		add_escaped(&t, msg, sizeof(out));
		add_str(&t, "\"");
	} else {
		/* A message may carry a client's or a file's bytes. */
		add_escaped_as(&t, msg, sizeof(out), 0);
	}
	emit(level, out, body, &t, 0);
}

void
mfd_log_request(const char *method, const char *path, int status, long usec,
    const char *job, const char *decision, const char *field)
{
	char out[4096];
	struct text t = { out, out + sizeof(out) - 2 };
	const char *body;
	int j = json_lines;

	if (!mfd_log_enabled(MFD_INFO))
		return;
	stamp(&t, MFD_INFO);
	body = t.p;
	add_str(&t,
	    j ? "\"msg\":\"request\",\"method\":\"" : "request method=");
	/* Any token libmicrohttpd takes as a method (quotes, controls). */
	add_escaped(&t, method, 64);
	add_str(&t, j ? "\",\"path\":\"" : " path=\"");
	add_escaped(&t, path, 500);
	add_str(&t, j ? "\",\"status\":" : "\" status=");
	add_num(&t, status);
	add_str(&t, j ? ",\"us\":" : " us=");
	add_num(&t, usec);
	add_str(&t, j ? ",\"job\":\"" : " job=\"");
	/* Every byte of a name the manifest accepts (253), escaped. */
	add_escaped(&t, job, 253 * 6);
	add_str(&t, j ? "\",\"decision\":\"" : "\" decision=");
	add_str(&t, decision);
	if (j)
		add_str(&t, "\"");
	if (field != NULL && field[0] != '\0') {
		add_str(&t, j ? ",\"field\":\"" : " field=\"");
		add_escaped(&t, field, 400);
		add_str(&t, "\"");
	}
	emit(MFD_INFO, out, body, &t, 1);
}
