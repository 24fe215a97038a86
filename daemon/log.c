#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "memfloord.h"

static int json_lines;
static enum mfd_level max_level = MFD_INFO;
static int to_syslog;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void
mfd_log_init(int json, enum mfd_level level, int use_syslog)
{
	json_lines = json;
	max_level = level;
	to_syslog = use_syslog;
	if (to_syslog)
		openlog("memfloord", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

int
mfd_log_enabled(enum mfd_level level)
{
	return level <= max_level;
}

/* Escape s into out for a JSON string or a quoted text field. */
static void
escape(const char *s, char *out, size_t size)
{
	size_t o = 0;

	for (; s != NULL && *s != '\0' && o + 7 < size; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			o += (size_t)snprintf(out + o, size - o, "\\u%04x", c);
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = '\0';
}

static void
emit(enum mfd_level level, const char *line)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char when[32], out[2300];
	struct timespec ts;
	struct tm tm;
	int n;

	if (to_syslog) {
		syslog(prio[level], "%s", line);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	if (json_lines)
		n = snprintf(out, sizeof(out),
		    "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",%s}\n", when,
		    ts.tv_nsec / 1000000, level_names[level], line);
	else
		n = snprintf(out, sizeof(out), "%s.%03ldZ %s %s\n", when,
		    ts.tv_nsec / 1000000, level_names[level], line);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(out)) {
		n = sizeof(out) - 1;
		out[n - 1] = '\n';
	}
	/*
	 * One write(2) a line, not stdio: stderr's lock made request threads
	 * queue behind each other, and a single write keeps lines whole.
	 */
	if (write(STDERR_FILENO, out, (size_t)n) < 0)
		return;
}

void
mfd_log(enum mfd_level level, const char *fmt, ...)
{
	char msg[1024], esc[2048], line[2100];
	va_list ap;

	if (!mfd_log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!json_lines) {
		emit(level, msg);
		return;
	}
	escape(msg, esc, sizeof(esc));
	snprintf(line, sizeof(line), "\"msg\":\"%s\"", esc);
	emit(level, line);
}

void
mfd_log_request(const char *method, const char *path, int status, long usec,
    const char *job, const char *decision)
{
	char p[512], j[160], line[800];

	if (!mfd_log_enabled(MFD_INFO))
		return;
	escape(path, p, sizeof(p));
	escape(job, j, sizeof(j));
	if (json_lines)
		snprintf(line, sizeof(line),
		    "\"msg\":\"request\",\"method\":"
		    "\"%s\",\"path\":\"%s\",\"status\":%d,\"us\":%ld,\"job\":"
		    "\"%s\",\"decision\":\"%s\"",
		    method, p, status, usec, j, decision);
	else
		snprintf(line, sizeof(line),
		    "request method=%s path=\"%s\" "
		    "status=%d us=%ld job=\"%s\" decision=%s",
		    method, p, status, usec, j, decision);
	emit(MFD_INFO, line);
}
