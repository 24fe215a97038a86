/*
 * fetch.h: model configs from URLs (design section 9).
 *
 * Only hosts the operator allowed with --model-host are fetched: "HOST" or
 * "HOST:PORT" allows https, "http://HOST[:PORT]" also allows plain http.
 * One fetcher thread drives every transfer with a libcurl multi handle, so
 * no server thread ever waits on the network: the server suspends the
 * connection, and the fetcher calls back when the transfer is over.
 * Bodies are capped at MF_FETCH_MAX bytes and transfers at
 * MF_FETCH_TIMEOUT_MS (redirects included); a redirect is followed only
 * to an allowed host, at most MF_FETCH_MAX_REDIRECTS times.  The configs
 * that were read are cached, as models, by URL (MF_FETCH_CACHE entries,
 * oldest evicted, kept MF_FETCH_TTL seconds): the caller keeps one with
 * mf_fetch_keep once it has read the body as a config, and looks for one
 * with mf_fetch_cached before it fetches; a body that failed, was not
 * JSON or lacked a field is never kept.
 */
#ifndef MF_FETCH_H
#define MF_FETCH_H

#include <stdarg.h>
#include <stddef.h>

#include "../admission/model/model.h"

#define MF_FETCH_MAX (256u << 10)
#define MF_FETCH_TIMEOUT_MS 5000
#define MF_FETCH_MAX_REDIRECTS 3
#define MF_FETCH_CACHE 64
#define MF_FETCH_TTL 600

enum mf_fetch_status {
	MF_FETCH_OK,
	MF_FETCH_DENIED,  /* scheme or host not allowed (HTTP 400) */
	MF_FETCH_BADURL,  /* not a URL (400) */
	MF_FETCH_TIMEOUT, /* (502) */
	MF_FETCH_HTTP,   /* the server answered a status other than 200 (502) */
	MF_FETCH_TOOBIG, /* over MF_FETCH_MAX (502) */
	MF_FETCH_FAILED, /* could not connect, TLS failure, ... (502) */
	MF_FETCH_REDIRECT /* redirected to a host not allowed, or too often
	                      (502) */
};

struct mf_fetch_result {
	enum mf_fetch_status status;
	char *body; /* MF_FETCH_OK: malloc'd, NUL-terminated; else NULL */
	size_t len;
	char message[256]; /* a sentence naming the URL and what happened */
};

/* The callback owns res->body (free() it). */
typedef void (*mf_fetch_done)(void *arg, struct mf_fetch_result *res);

/* How much a line of the fetcher's matters. */
enum mf_fetch_level {
	MF_FETCH_LOG_ERROR, /* it cannot start */
	MF_FETCH_LOG_WARN,  /* a fetch failed; a slow resolver */
	MF_FETCH_LOG_INFO   /* a fetch done; a redirect or a URL refused */
};

/*
 * Where the fetcher's lines go (the daemon's log, the command line's
 * stderr): fmt and ap as vprintf's, a line without its newline.  Called on
 * the fetcher's thread and on those that call mf_fetch_start, maybe at
 * once: it must be thread-safe.
 */
typedef void (
    *mf_fetch_log)(enum mf_fetch_level level, const char *fmt, va_list ap);

/*
 * Remember the allowed hosts and start the fetcher thread; -1 on failure,
 * said through log.  log (NULL: say nothing) is used until mf_fetch_fini.
 */
int mf_fetch_init(const char *const *hosts, size_t nhosts, mf_fetch_log log);
/* Stop the thread; transfers still running end with MF_FETCH_FAILED. */
void mf_fetch_fini(void);
/* MF_FETCH_OK when url may be fetched, else DENIED or BADURL and why. */
enum mf_fetch_status
mf_fetch_allowed(const char *url, char *message, size_t size);
/* Keep the model read from the config fetched for url (copied). */
void mf_fetch_keep(const char *url, const struct mf_model *model);
/* 1 and the model kept for url in *model when it is fresh; else 0 and
 * *model untouched. */
int mf_fetch_cached(const char *url, struct mf_model *model);
/*
 * Fetch url in the background; done(arg, &res) runs exactly once, on the
 * fetcher thread (or on the caller's thread when url is refused at once).
 */
void mf_fetch_start(const char *url, mf_fetch_done done, void *arg);

#endif
