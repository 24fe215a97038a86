/*
 * observe.c: the observations' routes (design 23) over the store: POST
 * /v1/observations (a bearer token's), GET /v1/observations?fingerprint=,
 * DELETE /v1/observations/ID (a bearer token's), and the admissions
 * recorded off the answer's path.  Without --store every route answers
 * 404, saying so, and admissions are not recorded.
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../admission/base/buf.h"
#include "../admission/base/jw.h"
#include "../admission/base/str.h"
#include "../admission/place/place.h"
#include "../store/observe.h"
#include "../store/store.h"
#include "memfloord.h"

#define TOKENS_MAX 64
/* The most observations GET answers with. */
#define LIST_MAX 1000

static struct mf_store *store;
static char *tokens[TOKENS_MAX];
static size_t ntokens;

static int
read_tokens(const char *path)
{
	return mfd_tokens_read("--observe-token-file", path, tokens, TOKENS_MAX,
	    &ntokens);
}

static void
free_tokens(void)
{
	mfd_tokens_free(tokens, ntokens);
	ntokens = 0;
}

/*
 * The summaries of design 23, a (fingerprint, card) each: the runs, the
 * largest peak (torch's, else the device's) and the median tokens/s.
 * Built from the store at start, after this replica's own writes and
 * every observations.refreshSeconds (the catalogue in service's); an admission
 * takes a reference to the snapshot in service under a mutex held for a few
 * instructions and never waits on SQLite.
 */
#define REFRESH_DEFAULT_SECONDS 10
/* The most observations a summary is built from. */
#define SUMMARY_ROWS 100000

struct summary {
	char fingerprint[MF_FP_HEX];
	struct mf_obs_card c;
};

struct summaries {
	atomic_int refs;
	size_t n;
	struct summary s[]; /* by fingerprint, then card */
};

static pthread_mutex_t sum_swap = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t sum_build = PTHREAD_MUTEX_INITIALIZER;
static struct summaries *sums;
static pthread_t refresher;
static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t refresh_cond;
static int refresh_stop, refresh_started;

static void
sums_unref(struct summaries *m)
{
	if (m != NULL && atomic_fetch_sub(&m->refs, 1) == 1)
		free(m);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The summary of list[0..n), the observations of one fingerprint and
 * card; speeds is scratch for n figures. */
static void
summarize(const struct mf_observation *list, size_t n, double *speeds,
    struct summary *out)
{
	int64_t torch = -1, device = -1;
	size_t ns = 0;

	memset(out, 0, sizeof(*out));
	memcpy(out->fingerprint, list[0].fingerprint, MF_FP_HEX);
	mf_copy(out->c.card, sizeof(out->c.card), list[0].card);
	out->c.runs = (int64_t)n;
	for (size_t i = 0; i < n; i++) {
		const struct mf_observation *o = &list[i];
		int64_t t =
		    o->peak_reserved > 0 ? o->peak_reserved : o->peak_allocated;
		double v = mf_obs_speed(o);

		if (t > torch)
			torch = t;
		if (o->device_used > device)
			device = o->device_used;
		if (v > 0)
			speeds[ns++] = v;
	}
	out->c.peak = torch > 0 ? torch : device;
	out->c.device = torch <= 0 && device > 0;
	out->c.tokens_per_second = -1;
	if (ns == 0)
		return;
	qsort(speeds, ns, sizeof(*speeds), cmp_double);
	out->c.tokens_per_second =
	    ns % 2 ? speeds[ns / 2] : (speeds[ns / 2 - 1] + speeds[ns / 2]) / 2;
}

static int
same_group(const struct mf_observation *a, const struct mf_observation *b)
{
	return strcmp(a->fingerprint, b->fingerprint) == 0 &&
	    strcmp(a->card, b->card) == 0;
}

/* The summaries of list[0..n), sorted as the store lists them; NULL on
 * allocation failure. */
static struct summaries *
sums_of(const struct mf_observation *list, size_t n)
{
	struct summaries *m = malloc(sizeof(*m) + n * sizeof(m->s[0]));
	double *speeds = malloc((n ? n : 1) * sizeof(*speeds));
	size_t i = 0, j;

	if (m == NULL || speeds == NULL) {
		free(m);
		free(speeds);
		return NULL;
	}
	atomic_init(&m->refs, 1);
	m->n = 0;
	while (i < n) {
		for (j = i + 1; j < n && same_group(&list[i], &list[j]); j++)
			;
		summarize(&list[i], j - i, speeds, &m->s[m->n++]);
		i = j;
	}
	free(speeds);
	return m;
}

/* Whether the store is in an outage, as the log last said; and the store
 * as the log names it (a URL without its password). */
static atomic_int outage;
static char store_name[256];

/*
 * What a call of the store (what) came to, for the log: an outage (the
 * database not reachable) said when it starts and when it ends, not at
 * every call while it lasts; any other failure every time.
 */
static void
store_said(enum mf_rc rc, const char *what, const char *text)
{
	if (rc != MF_OK && !mf_store_up(store)) {
		if (atomic_exchange(&outage, 1) == 0)
			mfd_log(MFD_ERROR,
			    "observations (%s): %s; admissions answer from the summaries in memory, writes answer 503 until it is back",
			    what, text);
		return;
	}
	if (atomic_exchange(&outage, 0) == 1)
		mfd_log(MFD_INFO, "observations: %s is reachable again",
		    store_name);
	if (rc != MF_OK)
		mfd_log(MFD_ERROR, "observations (%s): %s", what, text);
}

/* Whether the store holds more observations than the summaries read:
 * said when it starts to and when it no longer does. */
static void
said_full(int full)
{
	static int was;

	if (full && !was)
		mfd_log(MFD_WARN,
		    "observations: the store holds more than %d; the summaries are made of the first %d by fingerprint, and the jobs past them are admitted on their estimates",
		    SUMMARY_ROWS, SUMMARY_ROWS);
	else if (!full && was)
		mfd_log(MFD_INFO,
		    "observations: the summaries are made of every observation again");
	was = full;
}

/* Rebuild the summaries from the store and put them in service; a store
 * that fails keeps those in service (logged, an outage once). */
static void
sums_refresh(const char *why)
{
	struct mf_observation *list = NULL;
	struct summaries *m, *old;
	struct mf_error err;
	size_t n = 0;

	pthread_mutex_lock(&sum_build);
	if (mf_store_list(store, NULL, SUMMARY_ROWS, &list, &n, &err) !=
	    MF_OK) {
		store_said(MF_EIO, why, err.text);
		pthread_mutex_unlock(&sum_build);
		return;
	}
	store_said(MF_OK, why, NULL);
	said_full(n == SUMMARY_ROWS);
	m = sums_of(list, n);
	free(list);
	if (m != NULL) {
		pthread_mutex_lock(&sum_swap);
		old = sums;
		sums = m;
		pthread_mutex_unlock(&sum_swap);
		sums_unref(old);
	}
	pthread_mutex_unlock(&sum_build);
}

static int
cmp_fp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct summary *)elem)->fingerprint);
}

int
mfd_obs_kept(void)
{
	return store != NULL;
}

void
mfd_obs_observed(const char *fp, struct mf_observed *out)
{
	struct summaries *m;
	const struct summary *hit;
	size_t i;

	out->n = 0;
	pthread_mutex_lock(&sum_swap);
	m = sums;
	if (m != NULL)
		atomic_fetch_add(&m->refs, 1);
	pthread_mutex_unlock(&sum_swap);
	if (m == NULL)
		return;
	hit = bsearch(fp, m->s, m->n, sizeof(m->s[0]), cmp_fp);
	if (hit != NULL) {
		i = (size_t)(hit - m->s);
		while (i > 0 && strcmp(m->s[i - 1].fingerprint, fp) == 0)
			i--;
		for (; i < m->n && out->n < MF_OBS_CARDS &&
		     strcmp(m->s[i].fingerprint, fp) == 0;
		     i++)
			out->card[out->n++] = m->s[i].c;
	}
	sums_unref(m);
}

/* The catalogue's observations.refreshSeconds, in milliseconds; its
 * default when none is in service. */
static long
refresh_ms(void)
{
	struct mf_catalog *cat;
	struct mf_models *models;
	long ms = REFRESH_DEFAULT_SECONDS * 1000L;

	mfd_state_take(&cat, &models);
	if (cat != NULL)
		ms = (long)cat->obs_refresh_seconds * 1000L;
	mf_cat_unref(cat);
	mf_models_free(models);
	return ms;
}

static void *
refresh_loop(void *arg)
{
	struct timespec due;

	(void)arg;
	pthread_mutex_lock(&refresh_lock);
	while (!refresh_stop) {
		mfd_due_in(&due, refresh_ms());
		if (pthread_cond_timedwait(&refresh_cond, &refresh_lock,
		        &due) == 0 ||
		    refresh_stop)
			continue;
		pthread_mutex_unlock(&refresh_lock);
		sums_refresh("refresh");
		pthread_mutex_lock(&refresh_lock);
	}
	pthread_mutex_unlock(&refresh_lock);
	return NULL;
}

/* The summaries built and their refresher started; without it they are
 * still refreshed on this replica's writes (logged). */
static void
sums_start(void)
{
	sums_refresh("start");
	mfd_cond_monotonic(&refresh_cond);
	refresh_stop = 0;
	if (pthread_create(&refresher, NULL, refresh_loop, NULL) == 0)
		refresh_started = 1;
	else
		mfd_log(MFD_ERROR,
		    "observations: no refresh thread; summaries follow this replica's writes only");
}

static void
sums_stop(void)
{
	struct summaries *old;

	if (refresh_started) {
		pthread_mutex_lock(&refresh_lock);
		refresh_stop = 1;
		pthread_cond_signal(&refresh_cond);
		pthread_mutex_unlock(&refresh_lock);
		pthread_join(refresher, NULL);
		refresh_started = 0;
	}
	pthread_mutex_lock(&sum_swap);
	old = sums;
	sums = NULL;
	pthread_mutex_unlock(&sum_swap);
	sums_unref(old);
}

/* Open the store, saying why not: a file that is not memfloor's stays
 * as it is and stops the daemon. */
static struct mf_store *
open_store(const char *path)
{
	struct mf_store *s = NULL;
	char msg[MF_ERROR_MAX];
	struct mf_error err;

	memset(&err, 0, sizeof(err));
	if (mf_store_open(path, &s, &err) != MF_OK) {
		mfd_log(MFD_ERROR, "--store %s",
		    mf_error_message(&err, msg, sizeof(msg)));
		return NULL;
	}
	return s;
}

int
mfd_obs_check(const struct mfd_config *cfg)
{
	struct mf_store *s;

	if (cfg->observe_tokens != NULL && cfg->store_path == NULL) {
		mfd_log(MFD_ERROR, "--observe-token-file needs --store");
		return -1;
	}
	if (cfg->store_path == NULL)
		return 0;
	if ((s = open_store(cfg->store_path)) == NULL)
		return -1;
	mf_store_close(s);
	if (cfg->observe_tokens != NULL && read_tokens(cfg->observe_tokens))
		return -1;
	free_tokens();
	return 0;
}

int
mfd_obs_start(const struct mfd_config *cfg)
{
	if (cfg->store_path == NULL) {
		mfd_log(MFD_INFO,
		    "no --store: observations are not kept (design 23)");
		return 0;
	}
	if (cfg->observe_tokens != NULL && read_tokens(cfg->observe_tokens))
		return -1;
	if ((store = open_store(cfg->store_path)) == NULL) {
		free_tokens();
		return -1;
	}
	mf_store_redact(cfg->store_path, store_name, sizeof(store_name));
	mfd_log(MFD_INFO, "observations kept in %s%s", store_name,
	    ntokens ? "" : " (no --observe-token-file: not written)");
	sums_start();
	return 0;
}

void
mfd_obs_stop(void)
{
	if (store != NULL)
		sums_stop();
	mf_store_close(store);
	store = NULL;
	free_tokens();
}

int
mfd_obs_queue(size_t *queued, uint64_t *dropped)
{
	if (store == NULL)
		return -1;
	*queued = mf_store_queued(store);
	*dropped = mf_store_dropped(store);
	return 0;
}

void
mfd_obs_admitted(struct mf_answer *ans)
{
	if (store == NULL || ans->verdict != MF_VERDICT_ADMITTED ||
	    ans->placed == NULL)
		return;
	mf_store_admitted(store, ans->fingerprint, ans->placed,
	    ans->placed_fixes, ans->placed_count, ans->placed_card);
}

/* a and b equal, in a time that does not depend on where they differ. */
static int
same_token(const char *given, size_t n, const char *token)
{
	size_t len = strlen(token);
	unsigned char diff = (unsigned char)(n != len);

	for (size_t i = 0; i < len; i++)
		diff |= (unsigned char)token[i] ^
		    (unsigned char)(i < n ? given[i] : 0);
	return diff == 0;
}

/* 0 when auth carries a token of the file; else the status (401, 403)
 * with its answer in ans. */
static int
authorize(const char *auth, enum mf_output out, struct mf_answer *ans)
{
	int ok = 0;
	size_t n;

	if (auth == NULL || strncmp(auth, "Bearer ", 7) != 0) {
		mf_api_error(MF_ANS_INVALID, NULL,
		    "writing observations takes Authorization: Bearer TOKEN (--observe-token-file)",
		    out, ans);
		return 401;
	}
	auth += 7;
	n = strlen(auth);
	assert(ntokens <= TOKENS_MAX);
	for (size_t i = 0; i < ntokens; i++)
		ok |= same_token(auth, n, tokens[i]);
	if (ok)
		return 0;
	mf_api_error(MF_ANS_INVALID, NULL,
	    ntokens ? "the bearer token is not one of --observe-token-file's" :
	              "writing observations is off (no --observe-token-file)",
	    out, ans);
	return 403;
}

static int
no_store(enum mf_output out, struct mf_answer *ans)
{
	mf_api_error(MF_ANS_INVALID, NULL,
	    "observations are not kept: memfloord runs without --store", out,
	    ans);
	return 404;
}

static void
write_speed(struct mf_jw *w, const char *key, double v)
{
	if (v < 0)
		mf_jw_null(w, key);
	else
		mf_jw_num(w, key, v, 6);
}

static void
write_obs(struct mf_jw *w, const struct mf_observation *o)
{
	mf_jw_open(w, NULL, '{');
	mf_jw_int(w, "id", o->id);
	mf_jw_str(w, "fingerprint", o->fingerprint);
	mf_jw_str(w, "card", o->card);
	mf_jw_int(w, "count", o->count);
	mf_jw_int_known(w, "peakReservedBytes", o->peak_reserved);
	mf_jw_int_known(w, "peakAllocatedBytes", o->peak_allocated);
	mf_jw_int_known(w, "deviceUsedBytes", o->device_used);
	write_speed(w, "tokensPerSecond", o->tokens_per_second);
	write_speed(w, "stepSeconds", o->step_seconds);
	write_speed(w, "tokensPerStep", o->tokens_per_step);
	mf_jw_str(w, "source", o->source);
	mf_jw_int(w, "createdAt", o->created_at);
	mf_jw_close(w, '}');
}

/* The document in d as the answer, JSON or YAML, ans cleared first as
 * every answer of this module is. */
static void
answer_doc(struct mf_answer_doc *d, enum mf_output out, struct mf_answer *ans)
{
	memset(ans, 0, sizeof(*ans));
	mf_answer_doc_end(d, MF_ANS_OK, out, ans);
}

/* The error err says, as a 400 (500 when memory ran out, 413 past a
 * cap). */
static int
bad_body(enum mf_rc rc, const struct mf_error *err, enum mf_output out,
    struct mf_answer *ans)
{
	memset(ans, 0, sizeof(*ans));
	mf_answer_err(ans, rc, err, out);
	if (rc == MF_ETOOBIG)
		return 413;
	return rc == MF_ENOMEM ? 500 : 400;
}

/*
 * The one way an observation is kept, posted or read from Prometheus: held
 * to the rules against the catalogue in service (mf_obs_check), its
 * fingerprint known to the store when it came alone (named), written, and
 * the summaries refreshed.  err says why not (MFD_OBS_FAILED: the store's
 * text).
 */
static enum mfd_obs_kept
keep(struct mf_observation *o, int named, struct mf_error *err)
{
	struct mf_catalog *cat;
	enum mf_rc rc;
	int k;

	mfd_state_take(&cat, NULL);
	rc = cat ?
	    mf_obs_check(cat, o, err) :
	    mf_error_set(err, MF_EINVAL, NULL, 0, 0, "no catalogue loaded");
	mf_cat_unref(cat);
	if (rc != MF_OK)
		return MFD_OBS_INVALID;
	if (named && (k = mf_store_knows(store, o->fingerprint)) <= 0) {
		mf_error_set(err, MF_EINVAL, "fingerprint", 0, 0, "%s",
		    k < 0 ?
		        "the store could not be read" :
		        "no admission of this fingerprint is known: post the job instead");
		return k < 0 ? MFD_OBS_FAILED : MFD_OBS_UNKNOWN;
	}
	if (mf_store_add(store, o, err) != MF_OK)
		return MFD_OBS_FAILED;
	if (o->id == 0)
		return MFD_OBS_DUPLICATE;
	sums_refresh(o->source);
	return MFD_OBS_KEPT;
}

enum mfd_obs_kept
mfd_obs_record(struct mf_observation *o, struct mf_error *err)
{
	if (store == NULL) {
		mf_error_set(err, MF_EINVAL, NULL, 0, 0,
		    "observations are not kept (no --store)");
		return MFD_OBS_FAILED;
	}
	return keep(o, 1, err);
}

/* The status and answer of what keep said. */
static int
kept_status(enum mfd_obs_kept k, const struct mf_error *err, enum mf_output out,
    struct mf_answer *ans)
{
	switch (k) {
	case MFD_OBS_KEPT:
	case MFD_OBS_DUPLICATE:
		return 0;
	case MFD_OBS_INVALID:
	case MFD_OBS_UNKNOWN:
		mf_api_error(MF_ANS_INVALID, err->field[0] ? err->field : NULL,
		    err->text, out, ans);
		return 400;
	case MFD_OBS_FAILED:
		break;
	}
	store_said(MF_EIO, "write", err->text);
	mf_api_error(MF_ANS_INTERNAL, NULL,
	    strcmp(err->field, "fingerprint") == 0 ?
	        "the store could not be read" :
	        "the store could not write",
	    out, ans);
	return 503;
}

int
mfd_obs_post(const struct mf_api *api, const char *auth, const char *body,
    size_t len, enum mf_doc_format fmt, enum mf_output out,
    struct mf_answer *ans)
{
	struct mf_observation o;
	struct mf_error err;
	struct mf_answer_doc d;
	struct mf_jw *w;
	int named = 0, status;
	enum mf_rc rc;

	if (store == NULL)
		return no_store(out, ans);
	if ((status = authorize(auth, out, ans)) != 0)
		return status;
	memset(&err, 0, sizeof(err));
	rc = api->cat ?
	    mf_obs_read(body, len, fmt, api, &o, &named, &err) :
	    mf_error_set(&err, MF_EINVAL, NULL, 0, 0, "no catalogue loaded");
	if (rc != MF_OK)
		return bad_body(rc, &err, out, ans);
	status = kept_status(keep(&o, named, &err), &err, out, ans);
	if (status != 0)
		return status;
	w = mf_answer_doc_begin(&d, out);
	mf_jw_open(w, NULL, '{');
	mf_jw_int(w, "id", o.id);
	mf_jw_str(w, "fingerprint", o.fingerprint);
	mf_jw_close(w, '}');
	answer_doc(&d, out, ans);
	return ans->kind == MF_ANS_OK ? 201 : 500;
}

int
mfd_obs_list(const char *fingerprint, enum mf_output out, struct mf_answer *ans)
{
	struct mf_observation *list = NULL;
	struct mf_error err;
	struct mf_answer_doc d;
	struct mf_jw *w;
	size_t n = 0;

	if (store == NULL)
		return no_store(out, ans);
	if (fingerprint == NULL || !mf_fp_valid(fingerprint)) {
		mf_api_error(MF_ANS_INVALID, "fingerprint",
		    "?fingerprint= takes a fingerprint (32 hex digits)", out,
		    ans);
		return 400;
	}
	if (mf_store_list(store, fingerprint, LIST_MAX, &list, &n, &err) !=
	    MF_OK) {
		store_said(MF_EIO, "list", err.text);
		mf_api_error(MF_ANS_INTERNAL, NULL, err.text, out, ans);
		return 503;
	}
	w = mf_answer_doc_begin(&d, out);
	mf_jw_open(w, NULL, '{');
	mf_jw_str(w, "fingerprint", fingerprint);
	mf_jw_open(w, "observations", '[');
	for (size_t i = 0; i < n; i++)
		write_obs(w, &list[i]);
	mf_jw_close(w, ']');
	mf_jw_close(w, '}');
	free(list);
	answer_doc(&d, out, ans);
	return ans->kind == MF_ANS_OK ? 200 : 500;
}

/* The decimal id of a path, or -1. */
static int64_t
parse_id(const char *s)
{
	int64_t v = 0;

	if (*s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

int
mfd_obs_delete(const char *auth, const char *id, enum mf_output out,
    struct mf_answer *ans)
{
	struct mf_error err;
	int64_t v;
	int status;
	enum mf_rc rc;

	if (store == NULL)
		return no_store(out, ans);
	if ((status = authorize(auth, out, ans)) != 0)
		return status;
	v = parse_id(id);
	if (v <= 0) {
		mf_api_error(MF_ANS_INVALID, NULL, "no such observation", out,
		    ans);
		return 404;
	}
	rc = mf_store_delete(store, v, &err);
	if (rc == MF_ENOTFOUND) {
		mf_api_error(MF_ANS_INVALID, NULL, err.text, out, ans);
		return 404;
	}
	if (rc != MF_OK) {
		store_said(rc, "delete", err.text);
		mf_api_error(MF_ANS_INTERNAL, NULL, "the store could not write",
		    out, ans);
		return 503;
	}
	sums_refresh("deleted");
	memset(ans, 0, sizeof(*ans));
	ans->content_type = "application/json";
	return 204;
}

struct mfd_calibration *
mfd_obs_calibration(void)
{
	struct mfd_calibration *c;
	struct mf_error err;

	if (store == NULL)
		return NULL;
	c = mfd_calibrate(store, SUMMARY_ROWS, &err);
	if (c == NULL)
		store_said(MF_EIO, "calibration", err.text);
	return c;
}

static void
write_calib_figure(struct mf_jw *w, const char *key,
    const struct mfd_calib_figure *f)
{
	if (f->n == 0) {
		mf_jw_null(w, key);
		return;
	}
	mf_jw_open(w, key, '{');
	mf_jw_num(w, "median", f->median, 6);
	mf_jw_num(w, "worst", f->worst, 6);
	mf_jw_close(w, '}');
}

static void
write_calib_group(struct mf_jw *w, const struct mfd_calib_group *g)
{
	mf_jw_open(w, NULL, '{');
	mf_jw_str(w, "method", g->method ? g->method : "");
	mf_jw_str(w, "precision", g->precision ? g->precision : "");
	mf_jw_str(w, "gradientCheckpointing",
	    g->checkpointing ? g->checkpointing : "");
	mf_jw_str(w, "framework", g->framework);
	mf_jw_str(w, "card", g->card);
	mf_jw_int(w, "count", g->count);
	write_calib_figure(w, "memory", &g->memory);
	write_calib_figure(w, "speed", &g->speed);
	mf_jw_close(w, '}');
}

int
mfd_obs_calibration_answer(enum mf_output out, struct mf_answer *ans)
{
	struct mfd_calibration *c;
	struct mf_error err;
	struct mf_answer_doc d;
	struct mf_jw *w;

	if (store == NULL)
		return no_store(out, ans);
	c = mfd_calibrate(store, SUMMARY_ROWS, &err);
	if (c == NULL) {
		mf_api_error(MF_ANS_INTERNAL, NULL, err.text, out, ans);
		return 503;
	}
	w = mf_answer_doc_begin(&d, out);
	mf_jw_open(w, NULL, '{');
	mf_jw_open(w, "groups", '[');
	for (size_t i = 0; i < c->n; i++)
		write_calib_group(w, &c->g[i]);
	mf_jw_close(w, ']');
	mf_jw_close(w, '}');
	mfd_calibration_free(c);
	answer_doc(&d, out, ans);
	return ans->kind == MF_ANS_OK ? 200 : 500;
}
