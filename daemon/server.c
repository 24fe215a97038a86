/*
 * server.c: HTTP with libmicrohttpd: an internal thread pool, one struct
 * request per request, freed in the completion callback.  Routing, content
 * negotiation and the HTTP status of each answer live here; what the
 * answer says comes from admission/api.c.
 *
 * The pool polls with poll(2), not epoll: libmicrohttpd 0.9.75's epoll
 * mode misses a client's end of stream when it arrives with the last
 * data, so a client that vanished mid-body held its request until the
 * 30 s connection timeout (and held up a drain as long).  Throughput
 * measured with tests/bench/bench.sh is the same either way.
 */
#include <assert.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../admission/base/buf.h"
#include "../admission/review/review.h"
#include "../fetch/fetch.h"
#include "guard.h"
#include "http_layer.h"
#include "memfloord.h"
#include "tls.h"

/* Bytes of an over-long body read and dropped before the connection is
 * closed instead. */
#define DROP_MAX (64u << 20)
#define DRAIN_SECONDS 30
#define IDLE_SECONDS 30
/* Seconds a client refused for the body budget is told to wait. */
#define RETRY_AFTER "1"

/* BODY_NONE: GET (and HEAD); BODY_OBSERVATION: GET, or POST with a
 * body; BODY_DELETE: DELETE; else POST with this body. */
enum body {
	BODY_NONE,
	BODY_MANIFEST,
	BODY_TEXT,
	BODY_REVIEW,
	BODY_OBSERVATION,
	BODY_DELETE
};

struct request;
typedef void (*handler_fn)(struct request *r, struct MHD_Connection *c,
    struct mf_answer *ans);

struct route {
	const char *path;
	enum mfd_route id;
	enum body body; /* the methods it takes, and its body */
	handler_fn fn;
	mf_api_call call; /* what do_api runs for a POST route */
	int phased;       /* an admit or an estimate: read, fetch, decide */
	enum mf_call job_call;
};

struct request {
	const struct route *route;
	struct timespec start;
	struct mf_buf body;
	enum mf_output out;
	enum mf_doc_format fmt;
	int early;  /* status decided before the body ended, or 0 */
	int unread; /* answered before its body was read: the connection
	               closes after the answer */
	size_t dropped;
	size_t charged; /* bytes of the body budget this body holds */
	int status;
	char job[254];
	char field[128]; /* the error's, for the log */
	char why[256];   /* an early answer's message, when made up */
	enum mf_verdict verdict;
	char method[8];
	char path[256];
	/* An admit or an estimate, read; its spec.model.configUrl and what
	 * the fetcher brought back. */
	struct mf_request *req;
	const char *url; /* borrowed from req */
	struct MHD_Connection *conn;
	int fetched; /* the fetcher called back */
	struct mf_fetch_result fetch;
};

/*
 * What memfloord keeps for a connection: its guard, and its request.
 * libmicrohttpd reads a connection's requests one at a time, and ends each
 * (on_completed) before it reads the next and before it gives the
 * connection up (on_connection; in 0.9.75 MHD_connection_close_ ends the
 * request, MHD_cleanup_connections later gives the connection up, the
 * order the guard's end already counted on).  So one request serves them
 * all, and none is allocated.
 */
struct conn {
	struct mfd_conn *guard;
	struct request request;
};

/* The guard of r's connection, whose own request r is. */
static struct mfd_conn *
guard_of(struct request *r)
{
	char *at = (char *)r - offsetof(struct conn, request);

	return ((struct conn *)at)->guard;
}

/* One libmicrohttpd daemon for each --listen address. */
static struct MHD_Daemon *daemons[MFD_MAX_LISTEN];
static size_t ndaemons;
/* on_uri's mark for a request line with %00 in it (see there). */
static char nul_in_uri;
static size_t max_body;
static atomic_int in_flight;
static atomic_int draining;

/* --- handlers -------------------------------------------------------- */

/* The catalogue and the models in service, held for one call. */
static struct mf_api
api_begin(void)
{
	struct mf_catalog *cat;
	struct mf_models *m;

	mfd_state_take(&cat, &m);
	return (struct mf_api){ cat, m, NULL,
		mfd_obs_kept() ? mfd_obs_observed : NULL };
}

static void
api_end(struct mf_api *api)
{
	mf_cat_unref((struct mf_catalog *)api->cat);
	mf_models_free((struct mf_models *)api->models);
}

/*
 * The routes that call the library with the catalogue and the models in
 * service held for the call: a POST route's call on the body, GET
 * /v1/catalog and GET /v1/models.
 */
static void
do_api(struct request *r, struct MHD_Connection *c, struct mf_answer *ans)
{
	struct mf_api api = api_begin();

	if (r->route->call != NULL)
		r->route->call(&api, r->body.data, r->body.len, r->fmt, r->out,
		    ans);
	else if (r->route->id == MFD_R_CATALOG)
		mf_api_catalog(&api,
		    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
		        "minMemory"),
		    r->out, ans);
	else
		mf_api_models(&api, r->out, ans);
	api_end(&api);
}

static void
do_schema(struct request *r, struct MHD_Connection *c, struct mf_answer *ans)
{
	mf_api_schema(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
	                  "kind"),
	    r->out, ans);
}

static char *
dup_text(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);

	if (p != NULL)
		memcpy(p, s, n);
	return p;
}

static void
do_healthz(struct request *r, struct MHD_Connection *c, struct mf_answer *ans)
{
	(void)r;
	(void)c;
	memset(ans, 0, sizeof(*ans));
	mf_answer_text(ans, MF_ANS_OK, dup_text("ok\n"));
}

static void
do_readyz(struct request *r, struct MHD_Connection *c, struct mf_answer *ans)
{
	struct mf_catalog *cat;

	(void)c;
	mfd_state_take(&cat, NULL);
	if (cat != NULL && !atomic_load(&draining)) {
		memset(ans, 0, sizeof(*ans));
		mf_answer_text(ans, MF_ANS_OK, dup_text("ready\n"));
	} else {
		mf_api_error(MF_ANS_INTERNAL, NULL,
		    cat ? "shutting down" : "no catalogue loaded", r->out, ans);
		r->early = MHD_HTTP_SERVICE_UNAVAILABLE;
	}
	mf_cat_unref(cat);
}

static void
do_metrics(struct request *r, struct MHD_Connection *c, struct mf_answer *ans)
{
	struct mfd_calibration *calib;
	struct mf_catalog *cat;
	struct mfd_gauges g;

	(void)r;
	(void)c;
	mfd_state_take(&cat, NULL);
	calib = mfd_obs_calibration();
	g = (struct mfd_gauges){ cat ? cat->version : 0, cat ? cat->ngpus : 0,
		mfd_tls_generations(), calib, 0, 0, 0 };
	g.store = mfd_obs_queue(&g.store_queued, &g.store_dropped) == 0;
	memset(ans, 0, sizeof(*ans));
	mf_answer_text(ans, MF_ANS_OK, mfd_metrics_render(&g));
	mfd_calibration_free(calib);
	ans->content_type = "text/plain; version=0.0.4; charset=utf-8";
	mf_cat_unref(cat);
}

static void
do_page(struct request *r, struct MHD_Connection *c, struct mf_answer *ans)
{
	(void)c;
	mfd_page(r->path, ans);
}

/* The observations (observe.c): the status is the route's own. */
static void
do_observations(struct request *r, struct MHD_Connection *c,
    struct mf_answer *ans)
{
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);

	if (r->route->body == BODY_DELETE)
		r->early = mfd_obs_delete(auth,
		    r->path + strlen(r->route->path), r->out, ans);
	else if (strcmp(r->method, "POST") == 0) {
		struct mf_api api = api_begin();

		r->early = mfd_obs_post(&api, auth, r->body.data, r->body.len,
		    r->fmt, r->out, ans);
		api_end(&api);
	} else
		r->early =
		    mfd_obs_list(MHD_lookup_connection_value(c,
		                     MHD_GET_ARGUMENT_KIND, "fingerprint"),
		        r->out, ans);
}

static void
do_calibration(struct request *r, struct MHD_Connection *c,
    struct mf_answer *ans)
{
	(void)c;
	r->early = mfd_obs_calibration_answer(r->out, ans);
}

static const struct route routes[] = {
	{ "/v1/admit", MFD_R_ADMIT, BODY_MANIFEST, NULL, NULL, 1,
	    MF_CALL_ADMIT },
	{ "/v1/estimate", MFD_R_ESTIMATE, BODY_MANIFEST, NULL, NULL, 1,
	    MF_CALL_ESTIMATE },
	{ "/v1/diagnose", MFD_R_DIAGNOSE, BODY_TEXT, do_api, mf_api_diagnose, 0,
	    0 },
	{ "/v1/admission-review", MFD_R_REVIEW, BODY_REVIEW, do_api,
	    mf_api_review, 0, 0 },
	{ "/v1/catalog", MFD_R_CATALOG, BODY_NONE, do_api, NULL, 0, 0 },
	{ "/v1/models", MFD_R_MODELS, BODY_NONE, do_api, NULL, 0, 0 },
	{ "/v1/schema", MFD_R_SCHEMA, BODY_NONE, do_schema, NULL, 0, 0 },
	{ "/healthz", MFD_R_HEALTHZ, BODY_NONE, do_healthz, NULL, 0, 0 },
	{ "/readyz", MFD_R_READYZ, BODY_NONE, do_readyz, NULL, 0, 0 },
	{ "/metrics", MFD_R_METRICS, BODY_NONE, do_metrics, NULL, 0, 0 },
	{ "/v1/observations", MFD_R_OBSERVATIONS, BODY_OBSERVATION,
	    do_observations, NULL, 0, 0 },
	/* A path that goes on past it: /v1/observations/ID. */
	{ "/v1/observations/", MFD_R_OBSERVATION, BODY_DELETE, do_observations,
	    NULL, 0, 0 },
	{ "/v1/calibration", MFD_R_CALIBRATION, BODY_NONE, do_calibration, NULL,
	    0, 0 },
	{ "/", MFD_R_PAGE, BODY_NONE, do_page, NULL, 0, 0 },
	{ "/page.js", MFD_R_PAGE, BODY_NONE, do_page, NULL, 0, 0 },
	{ "/page.css", MFD_R_PAGE, BODY_NONE, do_page, NULL, 0, 0 },
};

/* --- plumbing -------------------------------------------------------- */

static int
http_status(enum mf_answer_kind kind)
{
	switch (kind) {
	case MF_ANS_OK:
		return MHD_HTTP_OK;
	case MF_ANS_REJECTED:
		return MHD_HTTP_FORBIDDEN;
	case MF_ANS_INVALID:
		return MHD_HTTP_BAD_REQUEST;
	case MF_ANS_TOOBIG:
		return MHD_HTTP_CONTENT_TOO_LARGE;
	case MF_ANS_UPSTREAM:
		return MHD_HTTP_BAD_GATEWAY;
	default:
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
}

/* The methods a route takes, for Allow. */
static const char *
allowed(const struct route *rt)
{
	switch (rt->body) {
	case BODY_NONE:
		return "GET, HEAD";
	case BODY_OBSERVATION:
		return "GET, HEAD, POST";
	case BODY_DELETE:
		return "DELETE";
	default:
		return "POST";
	}
}

static int
method_ok(const struct route *rt, const char *method)
{
	int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;

	switch (rt->body) {
	case BODY_NONE:
		return get;
	case BODY_OBSERVATION:
		return get || strcmp(method, "POST") == 0;
	case BODY_DELETE:
		return strcmp(method, "DELETE") == 0;
	default:
		return strcmp(method, "POST") == 0;
	}
}

/* Whether a request of method on rt has a body. */
static int
takes_body(const struct route *rt, const char *method)
{
	if (rt->body == BODY_OBSERVATION)
		return strcmp(method, "POST") == 0;
	return rt->body != BODY_NONE && rt->body != BODY_DELETE;
}

static enum MHD_Result
send_answer(struct MHD_Connection *c, struct request *r, int status,
    struct mf_answer *ans)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	size_t len = ans->len;
	char *body = mf_answer_take(ans);

	/* The body goes to libmicrohttpd as it is, not copied. */
	resp = body != NULL ?
	    MHD_create_response_from_buffer_with_free_callback(len, body,
	        free) :
	    MHD_create_response_from_buffer(len, ans->body,
	        MHD_RESPMEM_PERSISTENT);
	if (resp == NULL) {
		free(body);
		mf_answer_free(ans);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	    ans->content_type);
	if (r->route != NULL && r->route->id == MFD_R_PAGE)
		mfd_page_headers(resp);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
		    allowed(r->route));
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
		    "Bearer");
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE && r->early == status)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER,
		    RETRY_AFTER);
	/* A body whose framing is not known cannot be skipped, and one
	 * answered before it was read is not: libmicrohttpd closes the
	 * connection after such an answer. */
	if (status == MHD_HTTP_NOT_IMPLEMENTED || r->unread)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION,
		    "close");
	ret = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	r->status = status;
	mf_copy(r->job, sizeof(r->job), ans->job);
	mf_copy(r->field, sizeof(r->field), ans->field);
	r->verdict = ans->verdict;
	mf_answer_free(ans);
	return ret;
}

static enum MHD_Result
send_error(struct MHD_Connection *c, struct request *r, int status,
    const char *field, const char *message)
{
	struct mf_answer ans;

	mf_api_error(MF_ANS_INVALID, field, message, r->out, &ans);
	return send_answer(c, r, status, &ans);
}

/* A route's path, or for BODY_DELETE a path that goes on past it. */
static const struct route *
find_route(const char *url)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const char *p = routes[i].path;

		if (strcmp(p, url) == 0 ||
		    (routes[i].body == BODY_DELETE &&
		        strncmp(p, url, strlen(p)) == 0 && url[strlen(p)]))
			return &routes[i];
	}
	return NULL;
}

/*
 * The query parameters each route takes, case and all; any other is a 400,
 * so a typo (?minmemory=) is never silently ignored.
 */
#define MAX_PARAMS 3
static const char *const known_params[MFD_R_COUNT][MAX_PARAMS] = {
	[MFD_R_ADMIT] = { "estimator" },
	[MFD_R_ESTIMATE] = { "estimator" },
	/* The API server adds ?timeout=5s to every webhook call. */
	[MFD_R_REVIEW] = { "timeout" },
	[MFD_R_CATALOG] = { "minMemory" },
	[MFD_R_SCHEMA] = { "kind" },
	[MFD_R_OBSERVATIONS] = { "fingerprint" },
};

struct params {
	enum mfd_route route;
	const char *unknown, *twice;
	unsigned seen; /* bit i: known_params[route][i] was given */
	char why[256];
};

static enum MHD_Result
check_param(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	struct params *p = cls;
	const char *const *k;

	assert(p->route >= 0 && p->route < MFD_R_COUNT);
	k = known_params[p->route];

	(void)kind;
	(void)value;
	for (int i = 0; i < MAX_PARAMS && k[i] != NULL; i++) {
		if (strcmp(key, k[i]) != 0)
			continue;
		if (p->seen & (1u << i))
			p->twice = k[i];
		p->seen |= 1u << i;
		return p->twice != NULL ? MHD_NO : MHD_YES;
	}
	p->unknown = key;
	return MHD_NO;
}

/* NULL when every query parameter is one the route takes, once; else
 * the message, and the parameter at fault in *field. */
static const char *
bad_params(struct MHD_Connection *c, const struct route *rt, char *why,
    size_t size, const char **field)
{
	struct params p = { rt->id, NULL, NULL, 0, "" };
	const char *const *k;
	size_t n = 0;

	assert(rt->id >= 0 && rt->id < MFD_R_COUNT);
	k = known_params[rt->id];
	char takes[128];

	/* The page's query string is its view, read by its script. */
	if (rt->id == MFD_R_PAGE)
		return NULL;
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, check_param, &p);
	*field = p.twice != NULL ? p.twice : p.unknown;
	if (p.twice != NULL)
		return "query parameter given twice";
	if (p.unknown == NULL)
		return NULL;
	takes[0] = '\0';
	for (int i = 0; i < MAX_PARAMS && k[i] != NULL; i++)
		n += (size_t)snprintf(takes + n, sizeof(takes) - n, "%s%s",
		    i ? ", " : "", k[i]);
	snprintf(why, size, "unknown query parameter: %s takes %s", rt->path,
	    n ? takes : "none");
	return why;
}

/* Checks that need only the headers h: 404, 405, 411, 413, 415, 501.
 * *field names a query parameter at fault, else stays NULL. */
static int
early_status(struct MHD_Connection *c, struct request *r, const char *method,
    const struct mfd_headers *h, const char **why, const char **field)
{
	const struct route *rt = r->route;
	const char *len = h->v[MFD_H_CONTENT_LENGTH];
	const char *te = h->v[MFD_H_TRANSFER_ENCODING];
	int fmt;

	/* libmicrohttpd reads only "chunked"; any other coding would leave
	 * it waiting for a body it cannot delimit (RFC 9112 6.1: 501). */
	if (te != NULL && strcasecmp(te, "chunked") != 0)
		return *why =
		           "Transfer-Encoding must be chunked (no other transfer coding is supported)",
		       MHD_HTTP_NOT_IMPLEMENTED;
	if (rt == NULL)
		return *why = "no such endpoint", MHD_HTTP_NOT_FOUND;
	if (!method_ok(rt, method))
		return *why = "method not allowed", MHD_HTTP_METHOD_NOT_ALLOWED;
	if ((*why = bad_params(c, rt, r->why, sizeof(r->why), field)) != NULL)
		return MHD_HTTP_BAD_REQUEST;
	if (!takes_body(rt, method))
		return 0;
	/* RFC 9112 6.3: two lengths, or a length and chunked, frame the
	 * body two ways; a proxy may read the other one (smuggling). */
	if (h->lengths > 1 || (len != NULL && te != NULL))
		return *why =
		           "the body is framed twice (Content-Length and another length or Transfer-Encoding)",
		       MHD_HTTP_BAD_REQUEST;
	if (len == NULL && te == NULL)
		return *why = "a body with Content-Length is required",
		       MHD_HTTP_LENGTH_REQUIRED;
	if (h->length > max_body)
		return *why = "body over the size limit",
		       MHD_HTTP_CONTENT_TOO_LARGE;
	fmt =
	    mfd_body_format(h->v[MFD_H_CONTENT_TYPE], rt->body == BODY_REVIEW);
	if (fmt < 0)
		return *why = rt->body == BODY_REVIEW ?
		           "an AdmissionReview must be application/json" :
		           "Content-Type must be YAML, JSON or text",
		       MHD_HTTP_UNSUPPORTED_MEDIA_TYPE;
	r->fmt = (enum mf_doc_format)fmt;
	return 0;
}

static int
fetch_status(enum mf_fetch_status st)
{
	return st == MF_FETCH_DENIED || st == MF_FETCH_BADURL ?
	    MHD_HTTP_BAD_REQUEST :
	    MHD_HTTP_BAD_GATEWAY;
}

/* Runs on the fetcher thread. */
static void
on_fetched(void *arg, struct mf_fetch_result *res)
{
	struct request *r = arg;

	mfd_metrics_fetch(
	    res->status != MF_FETCH_OK ? MFD_FETCHED_ERROR : MFD_FETCHED_NEW);
	r->fetch = *res;
	r->fetched = 1;
	mfd_guard_suspend(guard_of(r), 0);
	MHD_resume_connection(r->conn);
}

/* Ask the fetcher for the job's config and park the connection; MHD
 * calls on_request again once on_fetched resumes it. */
static enum MHD_Result
park(struct MHD_Connection *c, struct request *r)
{
	r->conn = c;
	mfd_guard_suspend(guard_of(r), 1);
	MHD_suspend_connection(c);
	mf_fetch_start(r->url, on_fetched, r);
	return MHD_YES;
}

/*
 * An admit or an estimate: the body is read once; a model at a URL comes
 * from the cache, else from the fetcher, and a config that was read is
 * kept (never one that failed, was not JSON or lacked a field); then the
 * decision.
 */
static enum MHD_Result
phased(struct MHD_Connection *c, struct request *r)
{
	struct mf_answer ans;
	struct mf_api api;
	struct mf_model m;
	char why[256];

	if (r->req == NULL) {
		api = api_begin();
		/* ?estimator=pytorch|post (design 13); the library checks it.
		 */
		api.estimator = MHD_lookup_connection_value(c,
		    MHD_GET_ARGUMENT_KIND, "estimator");
		mf_api_prepare(&api, r->route->job_call, r->body.data,
		    r->body.len, r->fmt, r->out, &r->req, &ans);
		api_end(&api);
		if (r->req == NULL)
			return send_answer(c, r, http_status(ans.kind), &ans);
		r->url = mf_request_url(r->req);
		if (r->url != NULL &&
		    mf_fetch_allowed(r->url, why, sizeof(why)) != MF_FETCH_OK)
			return send_error(c, r, MHD_HTTP_BAD_REQUEST,
			    "spec.model.configUrl", why);
		if (r->url != NULL && !mf_fetch_cached(r->url, &m))
			return park(c, r);
		if (r->url != NULL) {
			mfd_metrics_fetch(MFD_FETCHED_CACHE);
			mf_request_model(r->req, &m);
		}
	} else if (r->fetch.status != MF_FETCH_OK) {
		return send_error(c, r, fetch_status(r->fetch.status),
		    "spec.model.configUrl", r->fetch.message);
	} else if (mf_request_config(r->req, r->fetch.body, r->fetch.len, &m,
	               &ans) != MF_OK) {
		return send_answer(c, r, http_status(ans.kind), &ans);
	} else {
		mf_fetch_keep(r->url, &m);
	}
	api = api_begin();
	mf_api_decide(&api, r->req, &ans);
	api_end(&api);
	mfd_obs_admitted(&ans);
	return send_answer(c, r, http_status(ans.kind), &ans);
}

#define BUSY_MESSAGE \
	"the server is receiving as many request bodies as its memory " \
	"allows (--max-body-memory); try again shortly"

static const char *
early_message(int status)
{
	switch (status) {
	case MHD_HTTP_CONTENT_TOO_LARGE:
		return "body over the size limit";
	case MHD_HTTP_SERVICE_UNAVAILABLE:
		return BUSY_MESSAGE;
	default:
		return "out of memory";
	}
}

/*
 * Whether a body over the limit is read and dropped before the 413.  A
 * client that sends its body without waiting for 100 Continue would not
 * read an answer sent mid-body: closing on unread data resets the
 * connection.  So up to DROP_MAX bytes are drained first, as they are for
 * a chunked body; a client that waits is answered at once.
 */
static int
drains(const struct mfd_headers *h)
{
	const char *expect = h->v[MFD_H_EXPECT];

	return (expect == NULL || strcasecmp(expect, "100-continue") != 0) &&
	    h->v[MFD_H_CONTENT_LENGTH] != NULL && h->length <= DROP_MAX;
}

/*
 * Room for n more bytes of body within the budget of all bodies being
 * received (--max-body-memory): what mf_buf may allocate for them, at
 * most twice what it then holds, is taken first and trued up after.  -1
 * when the budget has no room: the client is answered 503.
 */
static int
body_room(struct request *r, size_t n)
{
	size_t need = r->body.len + n + 1, old = r->body.cap, worst;

	if (need <= old || r->body.rc != MF_OK || need > r->body.max)
		return 0; /* no growth, or mf_buf_add refuses it */
	worst = need > r->body.max / 2 ? r->body.max : 2 * need;
	if (worst < 256)
		worst = 256;
	if (mfd_guard_body_take(worst - old) != 0)
		return -1;
	mf_buf_room(&r->body, n);
	mfd_guard_body_give(worst - r->body.cap);
	r->charged += r->body.cap - old;
	return 0;
}

/*
 * A body whose declared length does not fit the budget is answered 503 at
 * once, before any of it is read, and the connection closes after the
 * answer: a client holding its body open (or sending it slowly) is told to
 * come back instead of waiting for its deadline, and the daemon reads
 * nothing more of it.  libmicrohttpd 0.9.75 sends an answer queued at the
 * headers, and only then, before the body (connection.c,
 * MHD_queue_response); a chunked body that runs out of budget later is
 * still read to its end, and dropped, before its 503.
 */
static enum MHD_Result
refuse_busy(struct MHD_Connection *c, struct request *r)
{
	r->early = MHD_HTTP_SERVICE_UNAVAILABLE;
	r->unread = 1;
	return send_error(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
	    BUSY_MESSAGE);
}

/* c's own, or NULL for one on_connection could not open. */
static struct conn *
conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *info;

	info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return info ? info->socket_context : NULL;
}

/* c's request, begun; NULL for a connection without its own. */
static struct request *
begin(struct MHD_Connection *c, const char *url, const char *method,
    const struct mfd_headers *h)
{
	struct conn *k = conn_of(c);
	struct request *r;

	if (k == NULL)
		return NULL;
	r = &k->request;
	memset(r, 0, sizeof(*r));
	clock_gettime(CLOCK_MONOTONIC, &r->start);
	r->route = find_route(url);
	r->out = mfd_negotiate(h->v[MFD_H_ACCEPT]);
	mf_buf_init(&r->body, max_body + 1);
	mf_copy(r->method, sizeof(r->method), method);
	mf_copy(r->path, sizeof(r->path), url);
	atomic_fetch_add(&in_flight, 1);
	return r;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *data, size_t *size,
    void **con_cls)
{
	struct request *r = *con_cls;
	struct mf_answer ans;
	struct mfd_headers h;
	const char *why = NULL, *field = NULL;
	int status;

	(void)cls;
	(void)version;
	if (r == NULL || (void *)r == &nul_in_uri) {
		int nul = r != NULL;

		mfd_headers_read(c, &h);
		r = *con_cls = begin(c, url, method, &h);
		if (r == NULL)
			return MHD_NO;
		if (nul)
			return send_error(c, r, MHD_HTTP_BAD_REQUEST, NULL,
			    "the path or query holds %00 (a NUL byte)");
		status = early_status(c, r, method, &h, &why, &field);
		/* A chunked body's room grows as it is read. */
		if (status == 0 && takes_body(r->route, method) &&
		    body_room(r, h.length) != 0)
			return refuse_busy(c, r);
		if (status == MHD_HTTP_CONTENT_TOO_LARGE && drains(&h)) {
			r->early = status;
			return MHD_YES;
		}
		if (status != 0)
			return send_error(c, r, status, field, why);
		return MHD_YES;
	}
	if (*size > 0) {
		if (r->early == 0 && body_room(r, *size) != 0)
			r->early = MHD_HTTP_SERVICE_UNAVAILABLE;
		if (r->early == 0 && mf_buf_add(&r->body, data, *size) != MF_OK)
			r->early = r->body.rc == MF_ETOOBIG ?
			    MHD_HTTP_CONTENT_TOO_LARGE :
			    MHD_HTTP_INTERNAL_SERVER_ERROR;
		if (r->early != 0 && (r->dropped += *size) > DROP_MAX)
			return MHD_NO;
		*size = 0;
		return MHD_YES;
	}
	if (r->early != 0)
		return send_error(c, r, r->early, NULL,
		    early_message(r->early));
	if (takes_body(r->route, r->method) && r->body.len == 0)
		return send_error(c, r, MHD_HTTP_BAD_REQUEST, NULL,
		    "the body is empty");
	if (r->route->phased)
		return phased(c, r);
	r->route->fn(r, c, &ans);
	status = r->early != 0 ? r->early : http_status(ans.kind);
	return send_answer(c, r, status, &ans);
}

static long
usec_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000000L +
	    (t.tv_nsec - t0->tv_nsec) / 1000;
}

static void
on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	static const char *const verdicts[] = { "-", "admitted", "rejected" };
	struct request *r = *con_cls;
	long us;

	(void)cls;
	(void)c;
	if (r == NULL || (void *)r == &nul_in_uri)
		return;
	us = usec_since(&r->start);
	if (r->status == 0)
		r->status =
		    toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? 200 : 499;
	assert((size_t)r->verdict < sizeof(verdicts) / sizeof(verdicts[0]));
	mfd_log_request(r->method, r->path, r->status, us, r->job,
	    verdicts[r->verdict], r->field);
	mfd_metrics_request(r->route ? r->route->id : MFD_R_OTHER, r->status,
	    us);
	mfd_metrics_admission(r->verdict);
	mfd_guard_end(guard_of(r), toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
	mf_buf_free(&r->body);
	mfd_guard_body_give(r->charged);
	mf_request_free(r->req);
	free(r->fetch.body);
	*con_cls = NULL;
	atomic_fetch_sub(&in_flight, 1);
}

static void
on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
    enum MHD_ConnectionNotificationCode code)
{
	const union MHD_ConnectionInfo *fd, *peer;
	struct conn *k;

	(void)cls;
	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		k = *socket_context;
		if (k != NULL)
			mfd_guard_close(k->guard);
		free(k);
		*socket_context = NULL;
		return;
	}
	fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	peer = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (fd == NULL)
		return;
	k = malloc(sizeof(*k));
	if (k != NULL)
		k->guard = mfd_guard_open(fd->connect_fd,
		    peer ? peer->client_addr : NULL);
	if (k != NULL && k->guard == NULL) {
		free(k);
		k = NULL;
	}
	*socket_context = k;
	/* A connection without a deadline is not served. */
	if (k == NULL)
		shutdown(fd->connect_fd, SHUT_RDWR);
}

/*
 * The request line is in: a later request's deadline starts now.  The URI
 * is still escaped here: %00 would be unescaped to a NUL that cuts the
 * path or a value short, so it is marked for on_request to refuse.
 */
static void *
on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct conn *k = conn_of(c);

	(void)cls;
	mfd_guard_begin(k != NULL ? k->guard : NULL);
	return strstr(uri, "%00") != NULL ? &nul_in_uri : NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/*
 * libmicrohttpd's own lines, one a second at most: a client refused at
 * the connection caps is one line each, and a flood of them is itself
 * a way to fill the disk.
 */
static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static time_t last;
	static unsigned long unsaid;
	unsigned long n;
	char msg[512], *nl;
	time_t now = time(NULL);

	(void)cls;
	pthread_mutex_lock(&lock);
	if (now == last) {
		unsaid++;
		pthread_mutex_unlock(&lock);
		return;
	}
	last = now;
	n = unsaid;
	unsaid = 0;
	pthread_mutex_unlock(&lock);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	nl = strchr(msg, '\n');
	if (nl != NULL)
		*nl = '\0';
	if (n > 0)
		mfd_log(MFD_WARN, "http: %s (and %lu more lines like it)", msg,
		    n);
	else
		mfd_log(MFD_WARN, "http: %s", msg);
}

/*
 * "127.0.0.1:8080" and "0.0.0.0:8080" (IPv4), "[::1]:8080" and "[::]:8080"
 * (IPv6 only), ":8080": every address of both families, one socket for
 * IPv6 that takes IPv4 too (a Kubernetes cluster may be IPv4, IPv6 or
 * dual-stack), or IPv4 alone on a host without IPv6.
 */
static int
ipv6_works(void)
{
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

static int
parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	const char *colon = strrchr(s, ':');
	char host[64];
	long port;
	char *end;

	if (colon == NULL || (size_t)(colon - s) >= sizeof(host))
		return -1;
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || colon[1] == '\0' || port < 0 || port > 65535)
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		host[strlen(host) - 1] = '\0';
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
		return inet_pton(AF_INET6, host + 1, &in6->sin6_addr) == 1 ? 0 :
		                                                             -1;
	}
	if (host[0] == '\0' && ipv6_works()) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		in6->sin6_addr = in6addr_any;
		*len = sizeof(*in6);
		return 0;
	}
	in4->sin_family = AF_INET;
	in4->sin_port = htons((uint16_t)port);
	*len = sizeof(*in4);
	if (host[0] == '\0')
		return 0;
	return inet_pton(AF_INET, host, &in4->sin_addr) == 1 ? 0 : -1;
}

static int
bound_port(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *info;

	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	return info ? info->port : -1;
}

int
mfd_server_check(const struct mfd_config *cfg)
{
	struct sockaddr_storage ss;
	socklen_t sslen;

	assert(cfg->nlisten <= MFD_MAX_LISTEN);
	for (size_t i = 0; i < cfg->nlisten; i++) {
		if (parse_listen(cfg->listen[i], &ss, &sslen) != 0) {
			mfd_log(MFD_ERROR,
			    "--listen %s: not ADDR:PORT (127.0.0.1:8080, [::1]:8080, :8080)",
			    cfg->listen[i]);
			return -1;
		}
	}
	if (cfg->tls_key != NULL && cfg->tls_cert == NULL) {
		mfd_log(MFD_ERROR, "--tls-key needs --tls-cert");
		return -1;
	}
	if (cfg->tls_cert == NULL)
		return 0;
	if (mfd_tls_init(cfg) != 0)
		return -1;
	mfd_tls_fini();
	return 0;
}

/* Why a listening socket could not be had, and what to do: said. */
static void
say_cannot_listen(const char *addr, int errnum)
{
	mfd_log(MFD_ERROR,
	    "cannot listen on %s: %s%s; choose another address with -l ADDR:PORT (make run LISTEN=ADDR:PORT)",
	    addr, strerror(errnum),
	    errnum == EADDRINUSE ?
	        " (another process has it: ss -ltnp shows which)" :
	        errnum == EACCES ?
	        " (a port below 1024 needs CAP_NET_BIND_SERVICE)" :
	        "");
}

/* A libmicrohttpd daemon listening on addr; NULL (said) on failure. */
static struct MHD_Daemon *
listen_on(const struct mfd_config *cfg, const char *addr)
{
	struct mfd_http_layer http = mfd_http_layer(cfg->threads);
	unsigned flags =
	    http.flags | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
	struct sockaddr_storage ss;
	struct MHD_Daemon *d;
	socklen_t sslen;

	parse_listen(addr, &ss, &sslen);
	if (ss.ss_family == AF_INET6)
		flags |= addr[0] == ':' ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
	if (cfg->tls_cert != NULL)
		flags |= MHD_USE_TLS;
	errno = 0;
	d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, NULL,
	    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_SOCK_ADDR,
	    (struct sockaddr *)&ss, MHD_OPTION_ARRAY, http.options,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)IDLE_SECONDS,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
	    MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    (unsigned int)cfg->max_conns_per_ip, MHD_OPTION_ARRAY,
	    mfd_tls_options(), MHD_OPTION_END);
	if (d == NULL) {
		say_cannot_listen(addr, errno);
		return NULL;
	}
	if (mfd_defer_accept(d) != 0)
		mfd_log(MFD_WARN,
		    "%s: connections are accepted before their first bytes "
		    "(TCP_DEFER_ACCEPT: %s)",
		    addr, strerror(errno));
	mfd_log(MFD_INFO, "listening on %s port %d (%s, %u thread%s)", addr,
	    bound_port(d), cfg->tls_cert ? "https" : "http", cfg->threads,
	    cfg->threads == 1 ? "" : "s");
	return d;
}

/* Stop every daemon started; with drain, let requests in flight end. */
static void
stop_all(int drain)
{
	struct timespec tick = { 0, 10 * 1000000L };
	MHD_socket s;

	atomic_store(&draining, 1);
	assert(ndaemons <= MFD_MAX_LISTEN);
	for (size_t i = 0; i < ndaemons; i++) {
		s = MHD_quiesce_daemon(daemons[i]);
		if (s != MHD_INVALID_SOCKET)
			close(s);
	}
	for (int i = 0;
	     drain && i < DRAIN_SECONDS * 100 && atomic_load(&in_flight) > 0;
	     i++)
		nanosleep(&tick, NULL);
	for (size_t i = 0; i < ndaemons; i++)
		MHD_stop_daemon(daemons[i]);
	ndaemons = 0;
}

/*
 * Every --listen address has a daemon of its own (libmicrohttpd listens on
 * one socket a daemon), each with the whole thread pool; they share the
 * handlers, the deadlines and the body budget.
 */
int
mfd_server_start(const struct mfd_config *cfg)
{
	if (mfd_server_check(cfg) != 0)
		return -1;
	max_body = cfg->max_body;
	if (cfg->tls_cert != NULL && mfd_tls_init(cfg) != 0)
		return -1;
	if (mfd_guard_start(cfg->request_timeout, IDLE_SECONDS,
	        cfg->max_body_memory) != 0) {
		mfd_log(MFD_ERROR, "cannot start the request deadline thread");
		return -1;
	}
	assert(cfg->nlisten <= MFD_MAX_LISTEN && ndaemons == 0);
	for (size_t i = 0; i < cfg->nlisten; i++) {
		assert(ndaemons < MFD_MAX_LISTEN);
		daemons[ndaemons] = listen_on(cfg, cfg->listen[i]);
		if (daemons[ndaemons] == NULL) {
			stop_all(0);
			mfd_guard_stop();
			return -1;
		}
		ndaemons++;
	}
	if (mfd_tls_watch() != 0)
		mfd_log(MFD_WARN, "cannot watch %s; reload it with SIGHUP",
		    cfg->tls_cert);
	return 0;
}

void
mfd_server_stop(void)
{
	stop_all(1);
	mfd_guard_stop();
	mfd_tls_fini();
}

void
mfd_server_reload_tls(void)
{
	mfd_tls_reload();
}
