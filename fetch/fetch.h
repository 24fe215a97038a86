/*
 * fetch.h: model configs from URLs (design section 9).
 *
 * Only hosts the operator allowed with --model-host are fetched: "HOST" or
 * "HOST:PORT" allows https, "http://HOST[:PORT]" also allows plain http.
 * One fetcher thread drives every transfer with a libcurl multi handle, so
 * no server thread ever waits on the network: the server suspends the
 * connection, and the fetcher calls back when the transfer is over.
 * Bodies are capped at MFD_FETCH_MAX bytes and transfers at
 * MFD_FETCH_TIMEOUT_MS (redirects included); a redirect is followed only
 * to an allowed host, at most MFD_FETCH_MAX_REDIRECTS times.  The configs
 * that were read are cached, as models, by URL (MFD_FETCH_CACHE entries,
 * oldest evicted, kept MFD_FETCH_TTL seconds): the caller keeps one with
 * mfd_fetch_keep once it has read the body as a config, and looks for one
 * with mfd_fetch_cached before it fetches; a body that failed, was not
 * JSON or lacked a field is never kept.
 */
#ifndef MFD_FETCH_H
#define MFD_FETCH_H

#include <stddef.h>

#include "../admission/model.h"

#define MFD_FETCH_MAX (256u << 10)
#define MFD_FETCH_TIMEOUT_MS 5000
#define MFD_FETCH_MAX_REDIRECTS 3
#define MFD_FETCH_CACHE 64
#define MFD_FETCH_TTL 600

enum mfd_fetch_status {
	MFD_FETCH_OK,
	MFD_FETCH_DENIED,  /* scheme or host not allowed (HTTP 400) */
	MFD_FETCH_BADURL,  /* not a URL (400) */
	MFD_FETCH_TIMEOUT, /* (502) */
	MFD_FETCH_HTTP, /* the server answered a status other than 200 (502) */
	MFD_FETCH_TOOBIG,  /* over MFD_FETCH_MAX (502) */
	MFD_FETCH_FAILED,  /* could not connect, TLS failure, ... (502) */
	MFD_FETCH_REDIRECT /* redirected to a host not allowed, or too often
	                      (502) */
};

struct mfd_fetch_result {
	enum mfd_fetch_status status;
	char *body; /* MFD_FETCH_OK: malloc'd, NUL-terminated; else NULL */
	size_t len;
	char message[256]; /* a sentence naming the URL and what happened */
};

/* The callback owns res->body (free() it). */
typedef void (*mfd_fetch_done)(void *arg, struct mfd_fetch_result *res);

/* Remember the allowed hosts and start the fetcher thread; -1 on failure. */
int mfd_fetch_init(const char *const *hosts, size_t nhosts);
/* Stop the thread; transfers still running end with MFD_FETCH_FAILED. */
void mfd_fetch_fini(void);
/* MFD_FETCH_OK when url may be fetched, else DENIED or BADURL and why. */
enum mfd_fetch_status
mfd_fetch_allowed(const char *url, char *message, size_t size);
/* Keep the model read from the config fetched for url (copied). */
void mfd_fetch_keep(const char *url, const struct mf_model *model);
/* 1 and the model kept for url in *model when it is fresh; else 0 and
 * *model untouched. */
int mfd_fetch_cached(const char *url, struct mf_model *model);
/*
 * Fetch url in the background; done(arg, &res) runs exactly once, on the
 * fetcher thread (or on the caller's thread when url is refused at once).
 */
void mfd_fetch_start(const char *url, mfd_fetch_done done, void *arg);

#endif
