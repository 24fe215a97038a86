/*
 * test_fetch.c: fetch/fetch.c against tests/integration/fetchserver.py, a
 * local HTTP server started once for the whole run.  Each test starts the
 * fetcher with the same allowed hosts and stops it afterwards.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fetch.h"
#include "files.h"

extern char **environ;

#define WAIT_S 20 /* longest wait for any callback */

struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
	long long at; /* monotonic ms when the callback ran */
	pthread_t by;
	struct mf_fetch_result res;
};

static pid_t server_pid;
static long port;
static long closed_port;
static char base[64];
static char host_entry[64], closed_entry[64];
static const char *hosts[7];
static char *ok_body;
static size_t ok_len;

/* --- helpers --------------------------------------------------------- */

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A loopback port with nothing listening on it. */
static long
free_port(void)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	long p = -1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(s, (struct sockaddr *)&a, &alen) == 0)
		p = ntohs(a.sin_port);
	if (s >= 0)
		close(s);
	return p;
}

static int
server_start(void)
{
	char script[4096], line[32], *end;
	char *argv[] = { "python3", script, "--port", "0", NULL };
	posix_spawn_file_actions_t fa;
	int fd[2];
	FILE *f;

	snprintf(script, sizeof(script), "%s/tests/integration/fetchserver.py",
	    top());
	if (pipe(fd) != 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	if (posix_spawnp(&server_pid, "python3", &fa, NULL, argv, environ) != 0)
		server_pid = 0;
	posix_spawn_file_actions_destroy(&fa);
	close(fd[1]);
	f = fdopen(fd[0], "r");
	if (server_pid == 0 || f == NULL ||
	    fgets(line, sizeof(line), f) == NULL) {
		if (f != NULL)
			fclose(f);
		return -1;
	}
	fclose(f);
	port = strtol(line, &end, 10);
	return port > 0 && (*end == '\n' || *end == '\0') ? 0 : -1;
}

static void
server_stop(void)
{
	if (server_pid > 0) {
		kill(server_pid, SIGTERM);
		waitpid(server_pid, NULL, 0);
		server_pid = 0;
	}
}

static void
waiter_init(struct waiter *w)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
}

static void
waiter_fini(struct waiter *w)
{
	free(w->res.body);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
}

static void
on_done(void *arg, struct mf_fetch_result *res)
{
	struct waiter *w = arg;

	pthread_mutex_lock(&w->mu);
	w->done++;
	w->at = now_ms();
	w->by = pthread_self();
	w->res = *res;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* Wait for the callback; fail the test when it does not come. */
static void
wait_for(struct waiter *w)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_S;
	pthread_mutex_lock(&w->mu);
	while (!w->done && rc == 0)
		rc = pthread_cond_timedwait(&w->cv, &w->mu, &until);
	pthread_mutex_unlock(&w->mu);
	assert_int_equal(w->done, 1);
}

static int
is_done(struct waiter *w)
{
	int d;

	pthread_mutex_lock(&w->mu);
	d = w->done;
	pthread_mutex_unlock(&w->mu);
	return d;
}

static void
url_of(char *url, size_t size, const char *path)
{
	snprintf(url, size, "%s%s", base, path);
}

/* Fetch base + path and wait: the result lands in w. */
static void
fetch(struct waiter *w, const char *path)
{
	char url[256];

	url_of(url, sizeof(url), path);
	waiter_init(w);
	mf_fetch_start(url, on_done, w);
	wait_for(w);
}

/* The message the fetcher gives for base + path: "URL: what". */
static void
expect_message(const struct waiter *w, const char *path, const char *what)
{
	char want[512];

	snprintf(want, sizeof(want), "%s%s: %s", base, path, what);
	assert_string_equal(w->res.message, want);
}

static size_t
collect(char *data, size_t size, size_t n, void *arg)
{
	char *buf = arg;
	size_t have = strlen(buf), len = size * n;

	if (have + len < 32) {
		memcpy(buf + have, data, len);
		buf[have + len] = '\0';
	}
	return len;
}

/* How many requests the server saw for path, asked without the fetcher. */
static long
server_hits(const char *path)
{
	char url[256], text[32] = "";
	CURL *e = curl_easy_init();
	long n = -1;

	assert_non_null(e);
	snprintf(url, sizeof(url), "%s/hits?path=%s", base, path);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)text);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 5L);
	if (curl_easy_perform(e) == CURLE_OK)
		n = strtol(text, NULL, 10);
	curl_easy_cleanup(e);
	return n;
}

/* The fetcher's lines up to this level go to stderr (FETCH_VERBOSE: all). */
static enum mf_fetch_level shown = MF_FETCH_LOG_ERROR;

static void log_line(enum mf_fetch_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void
log_line(enum mf_fetch_level level, const char *fmt, va_list ap)
{
	if (level > shown)
		return;
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static int
start_fetcher(void **state)
{
	(void)state;
	return mf_fetch_init(hosts, sizeof(hosts) / sizeof(hosts[0]), log_line);
}

static int
stop_fetcher(void **state)
{
	(void)state;
	mf_fetch_fini();
	return 0;
}

/* --- the policy ------------------------------------------------------ */

static void
expect_allowed(const char *url, enum mf_fetch_status want)
{
	char msg[256];
	enum mf_fetch_status got = mf_fetch_allowed(url, msg, sizeof(msg));

	if (got != want)
		fail_msg("%s: got status %d, want %d (%s)", url, (int)got,
		    (int)want, msg);
	if (want == MF_FETCH_OK)
		assert_string_equal(msg, "");
	else
		assert_true(strlen(msg) > 0);
}

static void
test_allowed_hosts(void **state)
{
	char url[128];

	(void)state;
	/* "models.example.com": https on 443 only. */
	expect_allowed("https://models.example.com/x.json", MF_FETCH_OK);
	expect_allowed("https://MODELS.Example.COM/x.json", MF_FETCH_OK);
	expect_allowed("HTTPS://models.example.com/x.json", MF_FETCH_OK);
	expect_allowed("https://models.example.com:443/x", MF_FETCH_OK);
	expect_allowed("https://models.example.com:8443/x", MF_FETCH_DENIED);
	expect_allowed("http://models.example.com/x", MF_FETCH_DENIED);
	/* "Hub.Example.ORG:8443": https on 8443 only. */
	expect_allowed("https://hub.example.org:8443/x", MF_FETCH_OK);
	expect_allowed("https://hub.example.org/x", MF_FETCH_DENIED);
	expect_allowed("http://hub.example.org:8443/x", MF_FETCH_DENIED);
	/* "http://plain.example": http on 80 and https on 443. */
	expect_allowed("http://plain.example/x", MF_FETCH_OK);
	expect_allowed("https://plain.example/x", MF_FETCH_OK);
	expect_allowed("http://plain.example:8080/x", MF_FETCH_DENIED);
	expect_allowed("http://plain.example:443/x", MF_FETCH_DENIED);
	/* "https://secure.example": the scheme written out, https only. */
	expect_allowed("https://secure.example/x", MF_FETCH_OK);
	expect_allowed("http://secure.example/x", MF_FETCH_DENIED);
	/* "[::1]:9000" */
	expect_allowed("https://[::1]:9000/x", MF_FETCH_OK);
	expect_allowed("https://[::1]/x", MF_FETCH_DENIED);
	/* Hosts that merely look alike. */
	expect_allowed("https://evil.example/x", MF_FETCH_DENIED);
	expect_allowed("https://models.example.com.evil.example/x",
	    MF_FETCH_DENIED);
	expect_allowed("https://evilmodels.example.com/x", MF_FETCH_DENIED);
	expect_allowed("https://sub.models.example.com/x", MF_FETCH_DENIED);
	expect_allowed("https://127.0.0.2/x", MF_FETCH_DENIED);
	/* The test server's entry, with its port. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%ld/ok", port);
	expect_allowed(url, MF_FETCH_OK);
	snprintf(url, sizeof(url), "http://127.0.0.1:%ld/ok",
	    port + 1 == closed_port ? port + 2 : port + 1);
	expect_allowed(url, MF_FETCH_DENIED);
	expect_allowed("http://127.0.0.1/ok", MF_FETCH_DENIED);
}

static void
test_allowed_messages(void **state)
{
	char msg[256];

	(void)state;
	assert_int_equal(mf_fetch_allowed("https://evil.example/x", msg,
	                     sizeof(msg)),
	    MF_FETCH_DENIED);
	assert_string_equal(msg,
	    "https://evil.example/x: host evil.example "
	    "is not allowed (--model-host)");
	assert_int_equal(mf_fetch_allowed("http://models.example.com/x", msg,
	                     sizeof(msg)),
	    MF_FETCH_DENIED);
	assert_string_equal(msg,
	    "http://models.example.com/x: plain http is "
	    "not allowed for host models.example.com (--model-host "
	    "http://models.example.com)");
	assert_int_equal(mf_fetch_allowed("https://models.example.com:8443/x",
	                     msg, sizeof(msg)),
	    MF_FETCH_DENIED);
	assert_string_equal(msg,
	    "https://models.example.com:8443/x: port "
	    "8443 is not allowed for host models.example.com (--model-host)");
	assert_int_equal(mf_fetch_allowed("ftp://models.example.com/x", msg,
	                     sizeof(msg)),
	    MF_FETCH_DENIED);
	assert_string_equal(msg,
	    "ftp://models.example.com/x: scheme ftp is "
	    "not allowed (http or https only)");
	/* A short buffer is cut, not overrun; none at all is fine. */
	assert_int_equal(mf_fetch_allowed("https://evil.example/x", msg, 8),
	    MF_FETCH_DENIED);
	assert_string_equal(msg, "https:/");
	assert_int_equal(mf_fetch_allowed("https://evil.example/x", NULL, 0),
	    MF_FETCH_DENIED);
}

static void
test_allowed_schemes(void **state)
{
	(void)state;
	expect_allowed("ftp://models.example.com/x", MF_FETCH_DENIED);
	expect_allowed("file:///etc/passwd", MF_FETCH_DENIED);
	/* libcurl's URL parser refuses a file:// URL with a host. */
	expect_allowed("file://models.example.com/etc/passwd", MF_FETCH_BADURL);
	expect_allowed("gopher://models.example.com/x", MF_FETCH_DENIED);
	expect_allowed("dict://models.example.com/x", MF_FETCH_DENIED);
	expect_allowed("wss://models.example.com/x", MF_FETCH_DENIED);
}

static void
test_allowed_bad_urls(void **state)
{
	char msg[256], *huge;

	(void)state;
	expect_allowed(NULL, MF_FETCH_BADURL);
	expect_allowed("", MF_FETCH_BADURL);
	expect_allowed("not a url", MF_FETCH_BADURL);
	expect_allowed("models.example.com/x.json", MF_FETCH_BADURL);
	expect_allowed("https://", MF_FETCH_BADURL);
	expect_allowed("https://models.example.com:99999/x", MF_FETCH_BADURL);
	expect_allowed("https://models example.com/x", MF_FETCH_BADURL);
	expect_allowed("https://models.example.com\r\n/x", MF_FETCH_BADURL);
	/* Control bytes never reach the message (it goes into JSON and
	 * logs), and neither do bytes that are not ASCII. */
	assert_int_equal(mf_fetch_allowed("x\x01y\xc3", msg, sizeof(msg)),
	    MF_FETCH_BADURL);
	assert_non_null(strstr(msg, "x?y?: not a URL"));
	huge = malloc(10000);
	assert_non_null(huge);
	memset(huge, 'a', 9999);
	memcpy(huge, "https://models.example.com/", 27);
	huge[9999] = '\0';
	assert_int_equal(mf_fetch_allowed(huge, msg, sizeof(msg)),
	    MF_FETCH_BADURL);
	/* 120 characters of the URL, then "...". */
	assert_non_null(strstr(msg, "aaa...: not a URL (longer than"));
	free(huge);
}

static void
test_allowed_userinfo(void **state)
{
	char msg[256], url[128];

	(void)state;
	/* The host is what follows '@'. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%ld@evil.example/ok",
	    port);
	expect_allowed(url, MF_FETCH_DENIED);
	expect_allowed("https://models.example.com@evil.example/x",
	    MF_FETCH_DENIED);
	expect_allowed("https://models.example.com:443@evil.example/x",
	    MF_FETCH_DENIED);
	/* An allowed host with credentials is refused, and the password is
	 * not repeated in the message. */
	assert_int_equal(mf_fetch_allowed("https://"
	                                  "user:s3cret@models.example.com/x",
	                     msg, sizeof(msg)),
	    MF_FETCH_DENIED);
	assert_null(strstr(msg, "s3cret"));
	assert_non_null(strstr(msg, "user name or password"));
	assert_int_equal(mf_fetch_allowed("https://me:pw@evil.example/x", msg,
	                     sizeof(msg)),
	    MF_FETCH_DENIED);
	assert_null(strstr(msg, "pw@"));
	assert_non_null(strstr(msg, "host evil.example is not allowed"));
	/* The host checked is the host libcurl would connect to: here
	 * models.example.com, with a user name, so refused. */
	expect_allowed("https://evil.example\\@models.example.com/x",
	    MF_FETCH_DENIED);
	/* An encoded '@' is no separator and no host character. */
	expect_allowed("https://models.example.com%40evil.example/x",
	    MF_FETCH_BADURL);
}

static void
test_init_bad_entries(void **state)
{
	static const char *const bad[] = { "", "ftp://models.example.com",
		"https://models.example.com/path",
		"https://u@models.example.com", "models.example.com?q",
		"http://", "models.example.com:0", "models.example.com:99999",
		"bad host" };
	const char *one[1];
	size_t i;

	(void)state;
	/* Already running. */
	assert_int_equal(start_fetcher(NULL), -1);
	mf_fetch_fini();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		one[0] = bad[i];
		if (mf_fetch_init(one, 1, log_line) != -1)
			fail_msg("--model-host '%s' was accepted", bad[i]);
	}
	/* None is fine: nothing is allowed then. */
	assert_int_equal(mf_fetch_init(NULL, 0, log_line), 0);
	expect_allowed("https://models.example.com/x", MF_FETCH_DENIED);
	mf_fetch_fini();
	assert_int_equal(start_fetcher(NULL), 0);
}

/* --- fetching -------------------------------------------------------- */

static void
test_fetch_ok(void **state)
{
	struct waiter w;

	(void)state;
	fetch(&w, "/ok");
	assert_int_equal(w.res.status, MF_FETCH_OK);
	assert_int_equal(w.res.len, ok_len);
	assert_memory_equal(w.res.body, ok_body, ok_len);
	assert_int_equal(w.res.body[w.res.len], '\0');
	/* On the fetcher thread, not this one. */
	assert_false(pthread_equal(w.by, pthread_self()));
	waiter_fini(&w);
}

static void
test_fetch_not_json(void **state)
{
	struct waiter w;

	(void)state;
	/* Fetching does not judge the body; the model reader does. */
	fetch(&w, "/notjson");
	assert_int_equal(w.res.status, MF_FETCH_OK);
	assert_string_equal(w.res.body, "this is not JSON\n");
	waiter_fini(&w);
}

static void
test_fetch_http_404(void **state)
{
	struct waiter w;

	(void)state;
	fetch(&w, "/404");
	assert_int_equal(w.res.status, MF_FETCH_HTTP);
	assert_null(w.res.body);
	expect_message(&w, "/404", "answered HTTP 404");
	waiter_fini(&w);
	/* A big error body is still an HTTP error, not a size error. */
	fetch(&w, "/big-404");
	assert_int_equal(w.res.status, MF_FETCH_HTTP);
	expect_message(&w, "/big-404", "answered HTTP 404");
	waiter_fini(&w);
}

static void
test_fetch_too_big(void **state)
{
	struct waiter w;

	(void)state;
	/* 300 KiB with a Content-Length. */
	fetch(&w, "/big");
	assert_int_equal(w.res.status, MF_FETCH_TOOBIG);
	assert_null(w.res.body);
	expect_message(&w, "/big", "larger than 256 KiB");
	waiter_fini(&w);
	/* 300 KiB chunked: no length up front, cut by the write callback. */
	fetch(&w, "/chunked-big");
	assert_int_equal(w.res.status, MF_FETCH_TOOBIG);
	expect_message(&w, "/chunked-big", "larger than 256 KiB");
	waiter_fini(&w);
}

static void
test_fetch_exactly_the_cap(void **state)
{
	struct waiter w;

	(void)state;
	/* 256 KiB = 256 * 1024 = 262144 bytes is still allowed. */
	fetch(&w, "/exact");
	assert_int_equal(w.res.status, MF_FETCH_OK);
	assert_int_equal(w.res.len, 262144);
	waiter_fini(&w);
	fetch(&w, "/chunked-exact");
	assert_int_equal(w.res.status, MF_FETCH_OK);
	assert_int_equal(w.res.len, 262144);
	waiter_fini(&w);
}

static void
test_fetch_truncated(void **state)
{
	struct waiter w;
	char want[128];

	(void)state;
	/* Content-Length 1000, 100 bytes, then the server hangs up. */
	fetch(&w, "/truncated");
	assert_int_equal(w.res.status, MF_FETCH_FAILED);
	assert_null(w.res.body);
	snprintf(want, sizeof(want), "%s/truncated: could not fetch: ", base);
	assert_memory_equal(w.res.message, want, strlen(want));
	waiter_fini(&w);
}

static void
test_fetch_refused_connection(void **state)
{
	struct waiter w;
	char url[128], want[160];

	(void)state;
	snprintf(url, sizeof(url), "http://127.0.0.1:%ld/ok", closed_port);
	waiter_init(&w);
	mf_fetch_start(url, on_done, &w);
	wait_for(&w);
	assert_int_equal(w.res.status, MF_FETCH_FAILED);
	snprintf(want, sizeof(want), "%s: could not fetch: ", url);
	assert_memory_equal(w.res.message, want, strlen(want));
	waiter_fini(&w);
}

static void
test_fetch_denied_at_once(void **state)
{
	struct waiter w;

	(void)state;
	waiter_init(&w);
	mf_fetch_start("https://evil.example/x", on_done, &w);
	/* Refused on this thread, before mf_fetch_start returns. */
	assert_int_equal(w.done, 1);
	assert_true(pthread_equal(w.by, pthread_self()));
	assert_int_equal(w.res.status, MF_FETCH_DENIED);
	assert_string_equal(w.res.message,
	    "https://evil.example/x: host "
	    "evil.example is not allowed (--model-host)");
	waiter_fini(&w);
	waiter_init(&w);
	mf_fetch_start("no url", on_done, &w);
	assert_int_equal(w.done, 1);
	assert_int_equal(w.res.status, MF_FETCH_BADURL);
	waiter_fini(&w);
}

/* --- redirects ------------------------------------------------------- */

static void
test_redirect_same_host(void **state)
{
	struct waiter w;

	(void)state;
	fetch(&w, "/redirect-ok");
	assert_int_equal(w.res.status, MF_FETCH_OK);
	assert_int_equal(w.res.len, ok_len);
	assert_memory_equal(w.res.body, ok_body, ok_len);
	waiter_fini(&w);
}

static void
test_redirect_not_allowed(void **state)
{
	struct waiter w;
	char what[128];

	(void)state;
	fetch(&w, "/redirect-away");
	assert_int_equal(w.res.status, MF_FETCH_REDIRECT);
	assert_null(w.res.body);
	snprintf(what, sizeof(what),
	    "redirected to http://127.0.0.2:%ld/ok "
	    "which is not allowed",
	    port);
	expect_message(&w, "/redirect-away", what);
	waiter_fini(&w);
	/* The target's user name and password are not repeated. */
	fetch(&w, "/redirect-creds");
	assert_int_equal(w.res.status, MF_FETCH_REDIRECT);
	expect_message(&w, "/redirect-creds", what);
	assert_null(strstr(w.res.message, "secret"));
	waiter_fini(&w);
	fetch(&w, "/redirect-port");
	assert_int_equal(w.res.status, MF_FETCH_REDIRECT);
	expect_message(&w, "/redirect-port",
	    "redirected to "
	    "http://127.0.0.1:1/ok which is not allowed");
	waiter_fini(&w);
	fetch(&w, "/redirect-https");
	assert_int_equal(w.res.status, MF_FETCH_REDIRECT);
	expect_message(&w, "/redirect-https",
	    "redirected to "
	    "https://evil.invalid/ok which is not allowed");
	waiter_fini(&w);
}

static void
test_redirect_limit(void **state)
{
	struct waiter w;

	(void)state;
	/* Three redirects are followed, a fourth is not. */
	fetch(&w, "/redirect-n?n=3");
	assert_int_equal(w.res.status, MF_FETCH_OK);
	assert_int_equal(w.res.len, ok_len);
	waiter_fini(&w);
	fetch(&w, "/redirect-n?n=4");
	assert_int_equal(w.res.status, MF_FETCH_REDIRECT);
	expect_message(&w, "/redirect-n?n=4", "redirected more than 3 times");
	waiter_fini(&w);
	fetch(&w, "/redirect-loop");
	assert_int_equal(w.res.status, MF_FETCH_REDIRECT);
	expect_message(&w, "/redirect-loop", "redirected more than 3 times");
	waiter_fini(&w);
}

/* --- the cache ------------------------------------------------------- */

/* A model as a config read from a URL gives it; h marks which. */
static struct mf_model
model_of(int64_t h)
{
	struct mf_model m = { .hidden = h,
		.layers = 2,
		.heads = 4,
		.kv_heads = 4,
		.head_dim = h / 4,
		.intermediate = 3 * h,
		.vocab = 1000,
		.norms_per_layer = 2 };

	return m;
}

/* What is kept is what the caller read: a fetch alone keeps nothing, and
 * a lookup gives a copy of the model. */
static void
test_cache_keeps_read_models(void **state)
{
	struct mf_model m = model_of(64), got;
	struct waiter w;
	char url[128];

	(void)state;
	url_of(url, sizeof(url), "/counted");
	assert_int_equal(mf_fetch_cached(url, &got), 0);
	fetch(&w, "/counted");
	assert_int_equal(w.res.status, MF_FETCH_OK);
	waiter_fini(&w);
	assert_int_equal(mf_fetch_cached(url, &got), 0);
	mf_fetch_keep(url, &m);
	memset(&got, 0, sizeof(got));
	assert_int_equal(mf_fetch_cached(url, &got), 1);
	assert_memory_equal(&got, &m, sizeof(m));
	assert_int_equal(mf_fetch_cached(NULL, &got), 0);
	assert_int_equal(mf_fetch_cached(url, NULL), 0);
	/* The fetcher itself always goes to the network: the caller looks in
	 * the cache first. */
	fetch(&w, "/counted");
	waiter_fini(&w);
	assert_int_equal(server_hits("/counted"), 2);
}

/* A URL that failed is not in the cache, and a miss leaves the out
 * parameter alone. */
static void
test_cache_skips_failures(void **state)
{
	struct mf_model got;
	struct waiter w;
	char url[128];

	(void)state;
	url_of(url, sizeof(url), "/flaky");
	fetch(&w, "/flaky");
	assert_int_equal(w.res.status, MF_FETCH_HTTP);
	waiter_fini(&w);
	memset(&got, 0x5a, sizeof(got));
	assert_int_equal(mf_fetch_cached(url, &got), 0);
	assert_int_equal(got.hidden, (int64_t)0x5a5a5a5a5a5a5a5aLL);
}

static void
test_cache_evicts_oldest(void **state)
{
	struct mf_model got;
	char path[64], url[128];
	int i;

	(void)state;
	/* MF_FETCH_CACHE + 1 different URLs: the first one goes. */
	for (i = 0; i <= MF_FETCH_CACHE; i++) {
		struct mf_model m = model_of(64 + 4 * i);

		snprintf(path, sizeof(path), "/ok?evict=%d", i);
		url_of(url, sizeof(url), path);
		mf_fetch_keep(url, &m);
	}
	url_of(url, sizeof(url), "/ok?evict=0");
	assert_int_equal(mf_fetch_cached(url, &got), 0);
	for (i = 1; i <= MF_FETCH_CACHE; i++) {
		snprintf(path, sizeof(path), "/ok?evict=%d", i);
		url_of(url, sizeof(url), path);
		assert_int_equal(mf_fetch_cached(url, &got), 1);
		assert_int_equal(got.hidden, 64 + 4 * i);
	}
}

/* --- concurrency ----------------------------------------------------- */

static void
test_fetch_slow_does_not_block(void **state)
{
	struct waiter slow, ok;
	char url[128];
	long long t0;

	(void)state;
	waiter_init(&slow);
	waiter_init(&ok);
	url_of(url, sizeof(url), "/slow");
	t0 = now_ms();
	mf_fetch_start(url, on_done, &slow);
	usleep(200 * 1000);
	url_of(url, sizeof(url), "/ok");
	mf_fetch_start(url, on_done, &ok);
	wait_for(&ok);
	assert_int_equal(ok.res.status, MF_FETCH_OK);
	/* /ok is back well before /slow could be: the server sleeps 10 s. */
	assert_true(ok.at - t0 < 2000);
	assert_false(is_done(&slow));
	wait_for(&slow);
	assert_int_equal(slow.res.status, MF_FETCH_TIMEOUT);
	assert_null(slow.res.body);
	expect_message(&slow, "/slow", "timed out after 5 s");
	/* MF_FETCH_TIMEOUT_MS = 5000, give or take the poll. */
	assert_true(slow.at - t0 >= 4900);
	assert_true(slow.at - t0 < 8000);
	waiter_fini(&slow);
	waiter_fini(&ok);
}

static void
test_fetch_many_at_once(void **state)
{
	enum { N = 24 };
	struct waiter w[N];
	char url[128];
	int i;

	(void)state;
	for (i = 0; i < N; i++) {
		snprintf(url, sizeof(url), "%s/ok?many=%d", base, i % 8);
		waiter_init(&w[i]);
		mf_fetch_start(url, on_done, &w[i]);
	}
	for (i = 0; i < N; i++) {
		wait_for(&w[i]);
		assert_int_equal(w[i].res.status, MF_FETCH_OK);
		assert_int_equal(w[i].res.len, ok_len);
		waiter_fini(&w[i]);
	}
}

static void
test_fini_cancels_transfers(void **state)
{
	struct waiter w;
	char url[128];

	(void)state;
	waiter_init(&w);
	url_of(url, sizeof(url), "/slow?s=3");
	mf_fetch_start(url, on_done, &w);
	usleep(200 * 1000);
	mf_fetch_fini();
	/* fini returns after every callback ran. */
	assert_int_equal(w.done, 1);
	assert_int_equal(w.res.status, MF_FETCH_FAILED);
	assert_non_null(strstr(w.res.message, "cancelled"));
	waiter_fini(&w);
	/* Stopped: nothing is allowed, and the answer comes at once. */
	waiter_init(&w);
	url_of(url, sizeof(url), "/ok");
	mf_fetch_start(url, on_done, &w);
	assert_int_equal(w.done, 1);
	assert_int_not_equal(w.res.status, MF_FETCH_OK);
	waiter_fini(&w);
	assert_int_equal(start_fetcher(NULL), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, start_fetcher, stop_fetcher)

int
main(void)
{
	static const char *const proxies[] = { "http_proxy", "HTTP_PROXY",
		"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
		"no_proxy", "NO_PROXY" };
	const struct CMUnitTest tests[] = {
		T(test_allowed_hosts),
		T(test_allowed_messages),
		T(test_allowed_schemes),
		T(test_allowed_bad_urls),
		T(test_allowed_userinfo),
		T(test_init_bad_entries),
		T(test_fetch_ok),
		T(test_fetch_not_json),
		T(test_fetch_http_404),
		T(test_fetch_too_big),
		T(test_fetch_exactly_the_cap),
		T(test_fetch_truncated),
		T(test_fetch_refused_connection),
		T(test_fetch_denied_at_once),
		T(test_redirect_same_host),
		T(test_redirect_not_allowed),
		T(test_redirect_limit),
		T(test_cache_keeps_read_models),
		T(test_cache_skips_failures),
		T(test_cache_evicts_oldest),
		T(test_fetch_slow_does_not_block),
		T(test_fetch_many_at_once),
		T(test_fini_cancels_transfers),
	};
	char path[4096];
	size_t i;
	int failed;

	for (i = 0; i < sizeof(proxies) / sizeof(proxies[0]); i++)
		unsetenv(proxies[i]);
	if (getenv("FETCH_VERBOSE") != NULL)
		shown = MF_FETCH_LOG_INFO;
	snprintf(path, sizeof(path), "%s/tests/data/fetch/ok.json", top());
	ok_body = slurp(path, &ok_len);
	closed_port = free_port();
	if (ok_body == NULL || closed_port <= 0 || server_start() != 0) {
		fprintf(stderr,
		    "test_fetch: cannot start tests/integration/fetchserver.py "
		    "(run from the top of the tree, or set MF_TOP)\n");
		server_stop();
		free(ok_body);
		return 1;
	}
	snprintf(base, sizeof(base), "http://127.0.0.1:%ld", port);
	snprintf(host_entry, sizeof(host_entry), "http://127.0.0.1:%ld", port);
	snprintf(closed_entry, sizeof(closed_entry), "http://127.0.0.1:%ld",
	    closed_port);
	hosts[0] = host_entry;
	hosts[1] = closed_entry;
	hosts[2] = "models.example.com";
	hosts[3] = "Hub.Example.ORG:8443";
	hosts[4] = "http://plain.example";
	hosts[5] = "[::1]:9000";
	hosts[6] = "https://secure.example";
	curl_global_init(CURL_GLOBAL_DEFAULT);
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	server_stop();
	free(ok_body);
	return failed;
}
