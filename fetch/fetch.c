/*
 * fetch.c: model configs from allowed URLs, driven by one thread that owns
 * a libcurl multi handle.  Server threads only queue work and are called
 * back; nothing here ever makes them wait on the network.
 *
 * The URL is parsed once with libcurl's URL API and that same parsed
 * handle is given to the transfer (CURLOPT_CURLU), so the host checked
 * against --model-host is the host libcurl connects to.  Redirects are
 * followed here, not by libcurl, so that each target passes the same check.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../admission/base/buf.h"
#include "fetch.h"

#define URL_MAX 4096  /* longer configUrls are refused as bad URLs */
#define SHOWN_URL 120 /* characters of a URL quoted in a message */
#define SHOWN_HOST 60
#define JOBS_MAX 256  /* fetches queued or in flight at once */
#define POLL_MS 1000  /* longest wait for network activity or new work */
#define ENTRY_MAX 512 /* length of a --model-host value */

struct allowed {
	char *host;
	long port; /* 0: the scheme's default port only */
	int http;  /* plain http is allowed too */
};

struct job {
	struct job *next;
	char *url; /* as requested: the cache key, quoted in messages */
	CURLU *u;  /* the URL being fetched now (after redirects) */
	CURL *easy;
	mf_fetch_done done;
	void *arg;
	struct mf_buf body; /* the 200 body so far, at most MF_FETCH_MAX */
	int redirects;
	long long deadline; /* monotonic ms, for all hops together */
	char errbuf[CURL_ERROR_SIZE];
};

struct entry {
	char *url;              /* NULL: a free slot */
	struct mf_model model;  /* the config, read */
	long long stored;       /* monotonic ms, for the TTL */
	unsigned long long seq; /* order of insertion, for eviction */
};
/* Set by mf_fetch_init before the thread starts; read-only until fini. */
static mf_fetch_log logger;
static struct allowed *hosts;
static size_t nhosts;
static int curl_ready;

/* lock guards queue, njobs and running; multi is woken under it. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct job *queue;
static struct job **queue_tail = &queue;
static size_t njobs;
static int running;
static CURLM *multi;
static pthread_t thread;
/* Jobs handed to libcurl: touched by the fetcher thread only. */
static struct job *active;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry cache[MF_FETCH_CACHE];
static unsigned long long cache_seq;

/* --- messages -------------------------------------------------------- */

static void note(enum mf_fetch_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A line for the caller's log, when it gave one. */
static void
note(enum mf_fetch_level level, const char *fmt, ...)
{
	va_list ap;

	if (logger == NULL)
		return;
	va_start(ap, fmt);
	logger(level, fmt, ap);
	va_end(ap);
}

/* Milliseconds on the monotonic clock, for deadlines and ages. */
static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Where the user name and password of a URL in s end (after the last '@'
 * of its authority), or NULL when it has none; a redirect's Location is
 * quoted too, before it is parsed.
 */
static const char *
after_userinfo(const char *s)
{
	const char *auth = strstr(s, "://"), *at = NULL;

	if (auth == NULL)
		return NULL;
	for (auth += 3; *auth != '\0' && strchr("/?#", *auth) == NULL; auth++)
		if (*auth == '@')
			at = auth;
	return at != NULL ? at + 1 : NULL;
}

/*
 * Copy s for a message or a log line: at most max characters, anything but
 * printable ASCII shown as '?' (the text ends up in JSON and in logs), "..."
 * where it was cut, and never a URL's user name or password.  out has room
 * for max + 4 bytes.
 */
static void
show(char *out, const char *s, size_t max)
{
	const char *cred = after_userinfo(s), *end;
	size_t i = 0;

	if (cred != NULL) {
		/* "https://user:pw@host/x" is quoted "https://host/x". */
		for (end = strstr(s, "://") + 3; s < end && i < max; s++)
			out[i++] = *s >= 0x20 && *s < 0x7f ? *s : '?';
		s = cred;
	}
	for (; *s != '\0' && i < max; s++)
		out[i++] = *s >= 0x20 && *s < 0x7f ? *s : '?';
	if (*s != '\0') {
		memcpy(out + i, "...", 3);
		i += 3;
	}
	out[i] = '\0';
}

static void say(char *msg, size_t size, const char *url, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* msg = "URL: what happened". */
static void
say(char *msg, size_t size, const char *url, const char *fmt, ...)
{
	char what[200], u[SHOWN_URL + 4];
	va_list ap;

	if (msg == NULL || size == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	show(u, url, SHOWN_URL);
	snprintf(msg, size, "%s: %s", u, what);
}

/* --- policy ---------------------------------------------------------- */

static long
default_port(const char *scheme)
{
	return strcasecmp(scheme, "http") == 0 ? 80 : 443;
}

static long
url_port(CURLU *u)
{
	char *p = NULL, *end;
	long port = -1;

	if (curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) ==
	    CURLUE_OK) {
		port = strtol(p, &end, 10);
		if (end == p || *end != '\0')
			port = -1;
	}
	curl_free(p);
	return port;
}

static int
is_web(const char *scheme)
{
	return strcasecmp(scheme, "http") == 0 ||
	    strcasecmp(scheme, "https") == 0;
}

static int
has_userinfo(CURLU *u)
{
	char *s = NULL;
	int has = 0;

	if (curl_url_get(u, CURLUPART_USER, &s, 0) == CURLUE_OK)
		has = 1;
	curl_free(s);
	s = NULL;
	if (curl_url_get(u, CURLUPART_PASSWORD, &s, 0) == CURLUE_OK)
		has = 1;
	curl_free(s);
	return has;
}

/* A URL with a user name or password is quoted without them. */
static void
show_url(char *out, size_t max, const char *url, CURLU *u)
{
	CURLU *v = NULL;
	char *clean = NULL;

	show(out, url, max);
	if (!has_userinfo(u))
		return;
	snprintf(out, max + 4, "(a URL with a user name or password)");
	v = curl_url_dup(u);
	if (v != NULL &&
	    curl_url_set(v, CURLUPART_USER, NULL, 0) == CURLUE_OK &&
	    curl_url_set(v, CURLUPART_PASSWORD, NULL, 0) == CURLUE_OK &&
	    curl_url_get(v, CURLUPART_URL, &clean, 0) == CURLUE_OK)
		show(out, clean, max);
	curl_free(clean);
	curl_url_cleanup(v);
}

/* Parse url into *out; shown gets the URL as messages quote it. */
static enum mf_fetch_status
parse(const char *url, CURLU **out, char *shown, char *msg, size_t size)
{
	CURLU *u;
	CURLUcode uc;

	if (url == NULL || *url == '\0') {
		say(msg, size, "\"\"", "not a URL");
		return MF_FETCH_BADURL;
	}
	if (strlen(url) > URL_MAX) {
		say(msg, size, url, "not a URL (longer than %d characters)",
		    URL_MAX);
		return MF_FETCH_BADURL;
	}
	u = curl_url();
	if (u == NULL) {
		say(msg, size, url, "out of memory");
		return MF_FETCH_FAILED;
	}
	uc = curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME);
	if (uc != CURLUE_OK) {
		say(msg, size, url, "not a URL (%s)", curl_url_strerror(uc));
		curl_url_cleanup(u);
		return MF_FETCH_BADURL;
	}
	show_url(shown, SHOWN_URL, url, u);
	*out = u;
	return MF_FETCH_OK;
}

/* Is scheme://host:port covered by an allowed entry?  Say why not. */
static enum mf_fetch_status
match(const char *shown, const char *scheme, const char *host, long port,
    char *msg, size_t size)
{
	int http = strcasecmp(scheme, "http") == 0;
	int host_seen = 0, scheme_seen = 0;
	char h[SHOWN_HOST + 4];
	size_t i;

	for (i = 0; i < nhosts; i++) {
		long want = hosts[i].port;

		if (strcasecmp(hosts[i].host, host) != 0)
			continue;
		host_seen = 1;
		if (http && !hosts[i].http)
			continue;
		scheme_seen = 1;
		if (want == 0)
			want = default_port(scheme);
		if (port == want)
			return MF_FETCH_OK;
	}
	show(h, host, SHOWN_HOST);
	if (!host_seen)
		say(msg, size, shown, "host %s is not allowed (--model-host)",
		    h);
	else if (!scheme_seen)
		say(msg, size, shown,
		    "plain http is not allowed for host %s (--model-host http://%s)",
		    h, h);
	else
		say(msg, size, shown,
		    "port %ld is not allowed for host %s (--model-host)", port,
		    h);
	return MF_FETCH_DENIED;
}

static enum mf_fetch_status
policy(CURLU *u, const char *shown, char *msg, size_t size)
{
	char *scheme = NULL, *host = NULL, s[24];
	enum mf_fetch_status st = MF_FETCH_DENIED;
	long port;

	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
		say(msg, size, shown, "not a URL (no scheme)");
		st = MF_FETCH_BADURL;
		goto out;
	}
	if (!is_web(scheme)) {
		show(s, scheme, sizeof(s) - 4);
		say(msg, size, shown,
		    "scheme %s is not allowed (http or https only)", s);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    *host == '\0') {
		say(msg, size, shown, "not a URL (no host)");
		st = MF_FETCH_BADURL;
		goto out;
	}
	port = url_port(u);
	st = match(shown, scheme, host, port, msg, size);
	if (st == MF_FETCH_OK && has_userinfo(u)) {
		say(msg, size, shown,
		    "a user name or password in the URL is not allowed");
		st = MF_FETCH_DENIED;
	}
out:
	curl_free(scheme);
	curl_free(host);
	return st;
}

/* Parse and check url; *out is the parsed URL when the answer is OK. */
static enum mf_fetch_status
check(const char *url, CURLU **out, char *msg, size_t size)
{
	CURLU *u = NULL;
	char shown[SHOWN_URL + 4];
	enum mf_fetch_status st;

	if (msg != NULL && size > 0)
		msg[0] = '\0';
	st = parse(url, &u, shown, msg, size);
	if (st != MF_FETCH_OK)
		return st;
	st = policy(u, shown, msg, size);
	if (st != MF_FETCH_OK || out == NULL)
		curl_url_cleanup(u);
	else
		*out = u;
	return st;
}

enum mf_fetch_status
mf_fetch_allowed(const char *url, char *message, size_t size)
{
	return check(url, NULL, message, size);
}

/* --- the allowed hosts ----------------------------------------------- */

static int
entry_extra(CURLU *u)
{
	static const CURLUPart parts[] = { CURLUPART_USER, CURLUPART_PASSWORD,
		CURLUPART_QUERY, CURLUPART_FRAGMENT };
	char *s = NULL;
	size_t i;
	int extra = 0;

	for (i = 0; i < sizeof(parts) / sizeof(parts[0]) && !extra; i++) {
		if (curl_url_get(u, parts[i], &s, 0) == CURLUE_OK)
			extra = 1;
		curl_free(s);
		s = NULL;
	}
	if (!extra && curl_url_get(u, CURLUPART_PATH, &s, 0) == CURLUE_OK &&
	    strcmp(s, "/") != 0)
		extra = 1;
	curl_free(s);
	return extra;
}

/* "HOST", "HOST:PORT", "http://HOST[:PORT]" or "https://HOST[:PORT]". */
static int
entry_parse(const char *entry, struct allowed *a)
{
	char full[ENTRY_MAX + 16], *scheme = NULL, *host = NULL;
	CURLU *u = curl_url();
	int rc = -1;

	if (u == NULL || strlen(entry) > ENTRY_MAX)
		goto out;
	snprintf(full, sizeof(full), "%s%s",
	    strstr(entry, "://") != NULL ? "" : "https://", entry);
	if (curl_url_set(u, CURLUPART_URL, full, CURLU_NON_SUPPORT_SCHEME) !=
	        CURLUE_OK ||
	    entry_extra(u) ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    !is_web(scheme) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    *host == '\0')
		goto out;
	a->port = url_port(u);
	if (a->port <= 0)
		goto out;
	if (a->port == default_port(scheme))
		a->port = 0;
	a->http = strcasecmp(scheme, "http") == 0;
	a->host = strdup(host);
	if (a->host != NULL)
		rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return rc;
}

static void
hosts_free(void)
{
	size_t i;

	for (i = 0; i < nhosts; i++)
		free(hosts[i].host);
	free(hosts);
	hosts = NULL;
	nhosts = 0;
}

static int
hosts_set(const char *const *list, size_t n)
{
	size_t i;

	if (n == 0)
		return 0;
	hosts = calloc(n, sizeof(*hosts));
	if (hosts == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if (list[i] == NULL || entry_parse(list[i], &hosts[i]) != 0) {
			note(MF_FETCH_LOG_ERROR,
			    "--model-host %s: not HOST, HOST:PORT or http://HOST[:PORT]",
			    list[i] != NULL ? list[i] : "(null)");
			hosts_free();
			return -1;
		}
		nhosts++;
	}
	return 0;
}

/* --- the cache ------------------------------------------------------- */

static void
entry_clear(struct entry *e)
{
	free(e->url);
	memset(e, 0, sizeof(*e));
}

/* The slot for url: its own, a free one, or the oldest. */
static struct entry *
cache_slot(const char *url)
{
	struct entry *oldest = &cache[0];
	size_t i;

	for (i = 0; i < MF_FETCH_CACHE; i++)
		if (cache[i].url != NULL && strcmp(cache[i].url, url) == 0)
			return &cache[i];
	for (i = 0; i < MF_FETCH_CACHE; i++) {
		if (cache[i].url == NULL)
			return &cache[i];
		if (cache[i].seq < oldest->seq)
			oldest = &cache[i];
	}
	return oldest;
}

static void
cache_clear(void)
{
	size_t i;

	pthread_mutex_lock(&cache_lock);
	for (i = 0; i < MF_FETCH_CACHE; i++)
		entry_clear(&cache[i]);
	pthread_mutex_unlock(&cache_lock);
}

void
mf_fetch_keep(const char *url, const struct mf_model *model)
{
	struct entry *e;
	char *u;

	if (url == NULL || model == NULL || (u = strdup(url)) == NULL)
		return;
	pthread_mutex_lock(&cache_lock);
	e = cache_slot(url);
	entry_clear(e);
	e->url = u;
	e->model = *model;
	e->stored = now_ms();
	e->seq = ++cache_seq;
	pthread_mutex_unlock(&cache_lock);
}

int
mf_fetch_cached(const char *url, struct mf_model *model)
{
	long long now = now_ms();
	int hit = 0;
	size_t i;

	if (url == NULL || model == NULL)
		return 0;
	pthread_mutex_lock(&cache_lock);
	for (i = 0; i < MF_FETCH_CACHE; i++) {
		struct entry *e = &cache[i];

		if (e->url == NULL || strcmp(e->url, url) != 0)
			continue;
		if (now - e->stored >= (long long)MF_FETCH_TTL * 1000) {
			entry_clear(e);
			break;
		}
		*model = e->model;
		hit = 1;
		break;
	}
	pthread_mutex_unlock(&cache_lock);
	return hit;
}

/* --- transfers (fetcher thread) -------------------------------------- */

static void
job_free(struct job *j)
{
	if (j == NULL)
		return;
	if (j->easy != NULL)
		curl_easy_cleanup(j->easy);
	curl_url_cleanup(j->u);
	mf_buf_free(&j->body);
	free(j->url);
	free(j);
}

static void
unlink_active(struct job *j)
{
	struct job **p;

	for (p = &active; *p != NULL; p = &(*p)->next) {
		if (*p == j) {
			*p = j->next;
			break;
		}
	}
	j->next = NULL;
}

/* Hand res to the caller and forget the job. */
static void
complete(struct job *j, struct mf_fetch_result *res)
{
	char u[SHOWN_URL + 4];

	if (res->status == MF_FETCH_OK) {
		show(u, j->url, SHOWN_URL);
		note(MF_FETCH_LOG_INFO, "model config %s: %zu bytes", u,
		    res->len);
	} else {
		note(MF_FETCH_LOG_WARN, "model config %s", res->message);
	}
	j->done(j->arg, res);
	pthread_mutex_lock(&lock);
	njobs--;
	pthread_mutex_unlock(&lock);
	job_free(j);
}
static void
fail(struct job *j, enum mf_fetch_status st, const char *why)
{
	struct mf_fetch_result res = { st, NULL, 0, "" };

	say(res.message, sizeof(res.message), j->url, "%s", why);
	complete(j, &res);
}

/* Only a 200 body is kept, and only up to MF_FETCH_MAX bytes. */
static size_t
on_data(char *data, size_t size, size_t n, void *arg)
{
	struct job *j = arg;
	size_t len = size * n;
	long code = 0;

	curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200)
		return len;
	/* Past the cap or out of memory: 0 stops the transfer, and the
	 * buffer's rc says which. */
	return mf_buf_add(&j->body, data, len) == MF_OK ? len : 0;
}

/* CURLOPT_PROTOCOLS_STR came with libcurl 7.85 (Ubuntu 22.04 has 7.81). */
static CURLcode
only_web(CURL *e)
{
#if LIBCURL_VERSION_NUM >= 0x075500
	return curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	return curl_easy_setopt(e, CURLOPT_PROTOCOLS,
	    (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
}

static int
easy_setup(struct job *j)
{
	CURL *e = curl_easy_init();
	int ok;

	if (e == NULL)
		return -1;
	j->easy = e;
	ok = only_web(e) == CURLE_OK;
	ok = ok && curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK;
	ok = ok && curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
	ok = ok &&
	    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE,
	        (curl_off_t)MF_FETCH_MAX) == CURLE_OK;
	ok = ok &&
	    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data) == CURLE_OK;
	ok = ok && curl_easy_setopt(e, CURLOPT_WRITEDATA, j) == CURLE_OK;
	ok = ok && curl_easy_setopt(e, CURLOPT_PRIVATE, j) == CURLE_OK;
	ok = ok &&
	    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, j->errbuf) == CURLE_OK;
	ok = ok &&
	    curl_easy_setopt(e, CURLOPT_USERAGENT, "memfloord") == CURLE_OK;
	return ok ? 0 : -1;
}

/*
 * Start (or restart, after a redirect) the transfer of u, with what is
 * left of the time allowed.  The job takes u.  0, or -1 with *st set.
 */
static int
issue(struct job *j, CURLU *u, enum mf_fetch_status *st)
{
	long long left = j->deadline - now_ms();
	CURLU *old = j->u;
	CURLcode rc;

	j->u = u;
	rc = curl_easy_setopt(j->easy, CURLOPT_CURLU, u);
	curl_url_cleanup(old);
	*st = MF_FETCH_FAILED;
	if (rc != CURLE_OK)
		return -1;
	if (left <= 0) {
		*st = MF_FETCH_TIMEOUT;
		return -1;
	}
	mf_buf_free(&j->body);
	mf_buf_init(&j->body, MF_FETCH_MAX + 1);
	j->errbuf[0] = '\0';
	if (curl_easy_setopt(j->easy, CURLOPT_TIMEOUT_MS, (long)left) !=
	        CURLE_OK ||
	    curl_easy_setopt(j->easy, CURLOPT_CONNECTTIMEOUT_MS, (long)left) !=
	        CURLE_OK ||
	    curl_multi_add_handle(multi, j->easy) != CURLM_OK)
		return -1;
	j->next = active;
	active = j;
	return 0;
}

static void
fail_issue(struct job *j, enum mf_fetch_status st)
{
	char why[64];

	if (st == MF_FETCH_TIMEOUT)
		snprintf(why, sizeof(why), "timed out after %d s",
		    MF_FETCH_TIMEOUT_MS / 1000);
	else
		snprintf(why, sizeof(why), "could not start the transfer");
	fail(j, st, why);
}

/* A new job onto the network. */
static void
begin(struct job *j)
{
	enum mf_fetch_status st;
	CURLU *u = j->u;

	j->u = NULL;
	j->deadline = now_ms() + MF_FETCH_TIMEOUT_MS;
	if (easy_setup(j) != 0) {
		curl_url_cleanup(u);
		fail(j, MF_FETCH_FAILED, "could not start the transfer");
		return;
	}
	if (issue(j, u, &st) != 0)
		fail_issue(j, st);
}

/* A 3xx with a Location: follow it when allowed.  0 when re-issued. */
static int
redirect(struct job *j, const char *loc, struct mf_fetch_result *res)
{
	char why[256], to[84];
	enum mf_fetch_status st;
	CURLU *u = NULL;

	show(to, loc, 80);
	if (j->redirects >= MF_FETCH_MAX_REDIRECTS) {
		res->status = MF_FETCH_REDIRECT;
		say(res->message, sizeof(res->message), j->url,
		    "redirected more than %d times", MF_FETCH_MAX_REDIRECTS);
		return -1;
	}
	if (check(loc, &u, why, sizeof(why)) != MF_FETCH_OK) {
		note(MF_FETCH_LOG_INFO, "redirect refused: %s", why);
		res->status = MF_FETCH_REDIRECT;
		say(res->message, sizeof(res->message), j->url,
		    "redirected to %s which is not allowed", to);
		return -1;
	}
	j->redirects++;
	if (issue(j, u, &st) == 0)
		return 0;
	res->status = st;
	if (st == MF_FETCH_TIMEOUT)
		say(res->message, sizeof(res->message), j->url,
		    "timed out after %d s", MF_FETCH_TIMEOUT_MS / 1000);
	else
		say(res->message, sizeof(res->message), j->url,
		    "could not follow the redirect");
	return -1;
}

/* Decide what a finished transfer means; 0 when it goes on (redirect). */
static int
outcome(struct job *j, CURLcode rc, struct mf_fetch_result *res)
{
	char *m = res->message, *loc = NULL;
	size_t size = sizeof(res->message);
	long code = 0;

	curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 300 && code < 400)
		curl_easy_getinfo(j->easy, CURLINFO_REDIRECT_URL, &loc);
	res->status = MF_FETCH_FAILED;
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		res->status = MF_FETCH_TIMEOUT;
		say(m, size, j->url, "timed out after %d s",
		    MF_FETCH_TIMEOUT_MS / 1000);
	} else if (loc != NULL) {
		return redirect(j, loc, res);
	} else if (code != 0 && code != 200) {
		res->status = MF_FETCH_HTTP;
		say(m, size, j->url, "answered HTTP %ld", code);
	} else if (rc == CURLE_FILESIZE_EXCEEDED || j->body.rc == MF_ETOOBIG) {
		res->status = MF_FETCH_TOOBIG;
		say(m, size, j->url, "larger than %u KiB", MF_FETCH_MAX >> 10);
	} else if (j->body.rc != MF_OK) {
		say(m, size, j->url, "out of memory");
	} else if (rc != CURLE_OK) {
		say(m, size, j->url, "could not fetch: %s",
		    j->errbuf[0] != '\0' ? j->errbuf : curl_easy_strerror(rc));
	} else {
		res->status = MF_FETCH_OK;
		res->len = j->body.len;
		res->body = mf_buf_take(&j->body);
		if (res->body == NULL) {
			res->status = MF_FETCH_FAILED;
			say(m, size, j->url, "out of memory");
		}
	}
	return -1;
}

static void
reap(void)
{
	struct mf_fetch_result res;
	struct job *j;
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		j = NULL;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &j);
		curl_multi_remove_handle(multi, msg->easy_handle);
		unlink_active(j);
		memset(&res, 0, sizeof(res));
		if (outcome(j, msg->data.result, &res) != 0)
			complete(j, &res);
	}
}

static void
cancel(struct job *list)
{
	struct job *j;

	while (list != NULL) {
		j = list;
		list = j->next;
		if (j->easy != NULL)
			curl_multi_remove_handle(multi, j->easy);
		fail(j, MF_FETCH_FAILED, "cancelled: the daemon is stopping");
	}
}

static void *
fetcher(void *unused)
{
	struct job *fresh, *j;
	int go, still;

	(void)unused;
	for (;;) {
		pthread_mutex_lock(&lock);
		go = running;
		fresh = queue;
		queue = NULL;
		queue_tail = &queue;
		pthread_mutex_unlock(&lock);
		if (!go) {
			cancel(fresh);
			break;
		}
		while (fresh != NULL) {
			j = fresh;
			fresh = j->next;
			j->next = NULL;
			begin(j);
		}
		curl_multi_perform(multi, &still);
		reap();
		curl_multi_poll(multi, NULL, 0, POLL_MS, NULL);
	}
	fresh = active;
	active = NULL;
	cancel(fresh);
	return NULL;
}

/* --- the public calls ------------------------------------------------ */

static void
refuse(mf_fetch_done done, void *arg, enum mf_fetch_status st,
    const char *message)
{
	struct mf_fetch_result res = { st, NULL, 0, "" };

	mf_copy(res.message, sizeof(res.message), message);
	note(MF_FETCH_LOG_INFO, "model config %s", res.message);
	done(arg, &res);
}

void
mf_fetch_start(const char *url, mf_fetch_done done, void *arg)
{
	char msg[256];
	enum mf_fetch_status st;
	struct job *j;
	CURLU *u = NULL;
	int up;

	st = check(url, &u, msg, sizeof(msg));
	if (st != MF_FETCH_OK) {
		refuse(done, arg, st, msg);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (j == NULL || (j->url = strdup(url)) == NULL) {
		free(j);
		curl_url_cleanup(u);
		say(msg, sizeof(msg), url, "out of memory");
		refuse(done, arg, MF_FETCH_FAILED, msg);
		return;
	}
	j->u = u;
	j->done = done;
	j->arg = arg;
	pthread_mutex_lock(&lock);
	up = running;
	if (!up || njobs >= JOBS_MAX) {
		pthread_mutex_unlock(&lock);
		say(msg, sizeof(msg), url, "%s",
		    up ? "too many model fetches in progress" :
		         "fetching is not running");
		job_free(j);
		refuse(done, arg, MF_FETCH_FAILED, msg);
		return;
	}
	njobs++;
	*queue_tail = j;
	queue_tail = &j->next;
	curl_multi_wakeup(multi);
	pthread_mutex_unlock(&lock);
}

static void
warn_sync_dns(void)
{
	const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);

	if (nhosts > 0 && (v->features & CURL_VERSION_ASYNCHDNS) == 0)
		note(MF_FETCH_LOG_WARN,
		    "libcurl %s resolves host names synchronously: a slow lookup delays other model fetches",
		    v->version);
}

int
mf_fetch_init(const char *const *list, size_t n, mf_fetch_log log)
{
	if (curl_ready) {
		note(MF_FETCH_LOG_ERROR, "model fetching is already running");
		return -1;
	}
	logger = log;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		note(MF_FETCH_LOG_ERROR, "libcurl could not start");
		return -1;
	}
	curl_ready = 1;
	if (hosts_set(list, n) != 0)
		goto fail;
	multi = curl_multi_init();
	if (multi == NULL)
		goto fail;
	warn_sync_dns();
	running = 1;
	if (pthread_create(&thread, NULL, fetcher, NULL) != 0) {
		running = 0;
		note(MF_FETCH_LOG_ERROR,
		    "cannot start the model fetcher thread");
		goto fail;
	}
	return 0;
fail:
	mf_fetch_fini();
	return -1;
}

void
mf_fetch_fini(void)
{
	int was;

	if (!curl_ready)
		return;
	pthread_mutex_lock(&lock);
	was = running;
	running = 0;
	if (was)
		curl_multi_wakeup(multi);
	pthread_mutex_unlock(&lock);
	if (was)
		pthread_join(thread, NULL);
	if (multi != NULL)
		curl_multi_cleanup(multi);
	multi = NULL;
	hosts_free();
	cache_clear();
	curl_global_cleanup();
	curl_ready = 0;
	logger = NULL;
}
