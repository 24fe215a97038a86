/*
 * harness.h: integration tests against a running memfloord.
 *
 * it_daemon_*: start the real daemon on a free loopback port (MEMFLOORD,
 * else build/memfloord), keep what it logs, signal it, wait for it, and
 * always kill it in the end.  it_request/it_send: HTTP with libcurl.
 * it_tmpdir and the file helpers: scratch space under $TMPDIR, removed at
 * exit.  Nothing here uses cmocka: a failure is a return value, so the
 * functions are safe to call from any thread.
 */
#ifndef IT_HARNESS_H
#define IT_HARNESS_H

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

struct it_daemon;

struct it_response {
	long status; /* HTTP status; 0 when no answer came */
	char *body;  /* NUL-terminated, owned; "" when empty */
	size_t len;
	char *content_type; /* owned, or NULL when the answer had none */
	char *headers;      /* every header line as received, owned */
	char error[256];    /* libcurl's message when status is 0 */
};

/* One request.  Zero every field you do not set. */
struct it_req {
	const char *method; /* "GET", "POST", ... */
	const char *path;   /* "/v1/admit?x=y" */
	const char *body;   /* NULL: no body */
	size_t len;
	/* "Name: value" lines, NULL-terminated, or NULL */
	const char *const *headers;
	int chunked;         /* send the body without a length */
	size_t piece;        /* bytes per write; 0: all at once */
	int delay_ms;        /* sleep before each piece */
	atomic_size_t *sent; /* bytes handed over so far, or NULL */
	int timeout_ms;      /* whole exchange; 0: 10 s */
};

/* The repository root (MF_TOP, else "."); rel under it, written to buf. */
const char *it_top(void);
char *it_path(char *buf, size_t size, const char *rel);

/*
 * A fresh directory under $TMPDIR (else /tmp); the harness owns the string
 * and removes the directory and everything in it at exit.  NULL on error.
 */
const char *it_tmpdir(void);
/* Write data to path through a temporary file renamed over it. */
int it_write_file(const char *path, const void *data, size_t len);
/* A file's bytes, NUL-terminated, malloc'd; NULL on error. */
char *it_read_file(const char *path, size_t *len);
/* Copy a file (atomically, as it_write_file). */
int it_copy_file(const char *from, const char *to);
/*
 * head, then a comment of x's ending in a newline, len bytes in all
 * (malloc'd): a valid document of an exact size.  NULL when len is not
 * above strlen(head) + 2 or on allocation failure.
 */
char *it_padded(const char *head, size_t len);
/* rm -r; 0 when path is gone. */
int it_rmtree(const char *path);

/*
 * Start `memfloord -d -l 127.0.0.1:0 ARGS...` (args NULL-terminated, may
 * be NULL) and wait until it says which port it took.  NULL when it did
 * not start; then what it logged is on our stderr.  The daemon dies with
 * this process even when the tests are killed.
 */
struct it_daemon *it_daemon_start(const char *const *args);
int it_daemon_port(const struct it_daemon *d);
pid_t it_daemon_pid(const struct it_daemon *d);
/* 0, or -1 once the daemon was reaped. */
int it_daemon_signal(struct it_daemon *d, int sig);
/*
 * Wait up to timeout_ms for the daemon to exit: its exit status, 128 +
 * the signal that killed it, or -1 when it is still running.  Once it
 * has exited, the log holds everything it wrote.
 */
int it_daemon_wait(struct it_daemon *d, int timeout_ms);
/* What the daemon wrote to stderr so far; malloc'd. */
char *it_daemon_log(struct it_daemon *d);
/* How many times needle occurs in the log. */
int it_daemon_log_count(struct it_daemon *d, const char *needle);
/* Wait until needle occurs n times; 0, or -1 on timeout or exit. */
int it_daemon_log_wait(struct it_daemon *d, const char *needle, int n,
    int timeout_ms);
/* SIGKILL when still running, reap, free.  NULL is a no-op. */
void it_daemon_stop(struct it_daemon *d);
/* Sanitizer reports ("runtime error", "Sanitizer") in the log so far. */
int it_daemon_reports(struct it_daemon *d);
/*
 * End the daemon the way an operator does, with SIGTERM, then stop it: 0
 * when it exited 0 within timeout_ms and logged no sanitizer report (an
 * ASan build checks for leaks as it exits); else -1, with its whole log on
 * stderr.  NULL is a no-op.
 */
int it_daemon_finish(struct it_daemon *d, int timeout_ms);

/*
 * Send q to the daemon and fill r (release with it_response_free, also on
 * failure).  0 when an answer came, -1 otherwise (r->error says why).
 */
int it_send(const struct it_daemon *d, const struct it_req *q,
    struct it_response *r);
/* it_send with only method, path, body and headers. */
int it_request(const struct it_daemon *d, const char *method, const char *path,
    const char *body, size_t len, const char *const *headers,
    struct it_response *r);
void it_response_free(struct it_response *r);
/* The value of header name (case-insensitive) in buf, "" when absent. */
char *it_response_header(const struct it_response *r, const char *name,
    char *buf, size_t size);
/* The body as JSON (new reference), or NULL when it is not JSON. */
json_t *it_json(const struct it_response *r);
/* The value at a dotted path ("placement.gpu", "alternatives.0.gpu") in
 * j (borrowed), or NULL. */
json_t *it_jpath(json_t *j, const char *path);

/*
 * Send raw bytes on a new connection and read until the daemon closes it
 * or timeout_ms passes; the bytes read, NUL-terminated, malloc'd.  NULL
 * when the connection could not be made.
 */
char *
it_raw(const struct it_daemon *d, const char *data, size_t len, int timeout_ms);
/* A TCP connection to 127.0.0.1:port, or -1. */
int it_connect(int port);
/* Send all n bytes of p on fd (no SIGPIPE); stops quietly when the peer
 * has gone, as a test of what the daemon does then wants. */
void it_send_all(int fd, const char *p, size_t n);
/* Whether a TCP connection to the daemon's port is accepted. */
int it_can_connect(int port);

/*
 * Run argv to completion (at most timeout_ms, then SIGKILL) with stdout
 * and stderr in *output (malloc'd).  Exit status, 128 + signal, or -1.
 */
int it_run(const char *const *argv, int timeout_ms, char **output);
/* The daemon to test: MEMFLOORD, else build/memfloord. */
const char *it_memfloord(void);

/* Kill every daemon still running and remove every temporary directory;
 * also runs at exit. */
void it_cleanup(void);

void it_sleep_ms(int ms);
long it_now_ms(void);

#endif
