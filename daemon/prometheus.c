/*
 * prometheus.c: the Prometheus reader (prometheus.h): its thread, the
 * three queries over libcurl, the runs they make and what becomes of
 * each.  The answers are read by prom_parse.c.
 */
#include <assert.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../admission/base/buf.h"
#include "../admission/base/str.h"
#include "../store/store.h"
#include "prometheus.h"

#define URL_MAX 2048
#define QUERY_MAX 1024
#define CONNECT_MS 5000L
#define QUERY_MS 20000L
/* The series whose runs were handled (kept, or skipped and said), at
 * most: a run that stays in the window is not handled again. */
#define HANDLED_MAX 4096
/* The subquery's step: at most this, and at most a quarter of
 * finishAfter, so that a step falls after the last sample of a run
 * before the run counts as over. */
#define STEP_MAX_SECONDS 60

/* The labels every query groups by: each name of each part the parser
 * reads (prometheus.h). */
#define BY_ONE(s) ", " s
#define BY \
	MFD_PROM_FP_LABEL ", " MFD_PROM_MODEL_LABEL MFD_PROM_NS_LABELS(BY_ONE) \
	    MFD_PROM_POD_LABELS(BY_ONE) MFD_PROM_HOST_LABELS(BY_ONE)
#define SERIES "DCGM_FI_DEV_FB_USED{" MFD_PROM_FP_LABEL "!=\"\"}"

enum query { Q_PEAK, Q_LAST, Q_GPUS, Q_COUNT };

/* Each query: the head of its expression, and whether it is a subquery
 * (the series' sample times, whose largest is the last sample's). */
static const struct {
	const char *head;
	int sub;
} queries[Q_COUNT] = {
	[Q_PEAK] = { "max by (" BY ") (max_over_time(", 0 },
	[Q_LAST] = { "max by (" BY ") (max_over_time(timestamp(", 1 },
	[Q_GPUS] = { "count by (" BY ") (max_over_time(", 0 },
};

/* A run: the series of one fingerprint, model, pod and host. */
struct run {
	const struct mfd_prom_series *id; /* its peak's series */
	double peak_mib;
	double last; /* Unix seconds of its last sample */
	double gpus;
};

/* Set before the thread starts, read-only after. */
static char url[URL_MAX];
static char *auth_header;
static const char *ca_file;
static unsigned window;

static pthread_t thread;
static int started;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static atomic_int stop;

/* The latest run handled of one series (its fingerprint, namespace,
 * pod, model and host, hashed): the time of its last sample. */
struct handled {
	uint64_t series;
	double last;
};

/* Touched by the reader's thread only. */
static int down;
static struct handled handled[HANDLED_MAX];
static size_t nhandled, handled_next;

/* --- the flags ------------------------------------------------------- */

/* The file's one token as a malloc'd header; NULL logged. */
static char *
read_token(const char *path)
{
	char *token, *h = NULL;
	size_t n;

	if (mfd_tokens_read("--prometheus-token-file", path, &token, 1, &n) !=
	    0)
		return NULL;
	n = strlen(token) + sizeof("Authorization: Bearer ");
	if ((h = malloc(n)) != NULL)
		snprintf(h, n, "Authorization: Bearer %s", token);
	mfd_tokens_free(&token, 1);
	return h;
}

/* Whether u is an http or https URL with a host; 0 or -1. */
static int
good_url(const char *u)
{
	CURLU *h = curl_url();
	char *scheme = NULL;
	int ok;

	ok = h != NULL && strlen(u) < URL_MAX - 16 &&
	    curl_url_set(h, CURLUPART_URL, u, 0) == CURLUE_OK &&
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    (strcmp(scheme, "http") == 0 || strcmp(scheme, "https") == 0);
	curl_free(scheme);
	curl_url_cleanup(h);
	return ok ? 0 : -1;
}

int
mfd_prom_check(const struct mfd_config *cfg)
{
	char *h;
	FILE *f;

	if (cfg->prometheus_url == NULL) {
		if (cfg->prometheus_token == NULL && cfg->prometheus_ca == NULL)
			return 0;
		mfd_log(MFD_ERROR,
		    "--prometheus-token-file and --prometheus-ca need --prometheus URL");
		return -1;
	}
	if (cfg->store_path == NULL) {
		mfd_log(MFD_ERROR,
		    "--prometheus needs --store: the peaks it reads are kept there");
		return -1;
	}
	if (good_url(cfg->prometheus_url) != 0) {
		mfd_log(MFD_ERROR,
		    "--prometheus '%.200s': not an http:// or https:// URL",
		    cfg->prometheus_url);
		return -1;
	}
	if (cfg->prometheus_ca != NULL) {
		if ((f = fopen(cfg->prometheus_ca, "r")) == NULL) {
			mfd_log(MFD_ERROR, "--prometheus-ca %s: %s",
			    cfg->prometheus_ca, strerror(errno));
			return -1;
		}
		fclose(f);
	}
	if (cfg->prometheus_token == NULL)
		return 0;
	h = read_token(cfg->prometheus_token);
	free(h);
	return h != NULL ? 0 : -1;
}

/* --- one query ------------------------------------------------------- */

static size_t
on_data(char *data, size_t size, size_t n, void *arg)
{
	/* 0 stops the transfer past the cap; the buffer says why. */
	return mf_buf_add(arg, data, size * n) == MF_OK ? size * n : 0;
}

/* A query in flight ends when the reader is stopped. */
static int
on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
    curl_off_t un)
{
	(void)arg;
	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return atomic_load(&stop);
}

/* The expression of query q over the window, with the subquery's step. */
static void
expression(enum query q, long step, char *out, size_t size)
{
	assert(q < Q_COUNT);
	if (queries[q].sub)
		snprintf(out, size, "%s" SERIES ")[%us:%lds]))",
		    queries[q].head, window, step);
	else
		snprintf(out, size, "%s" SERIES "[%us]))", queries[q].head,
		    window);
}

static int
easy_options(CURL *e, struct curl_slist *hdrs, struct mf_buf *b, char *ebuf)
{
	int ok = curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;

	ok = ok && curl_easy_setopt(e, CURLOPT_URL, url) == CURLE_OK;
	ok = ok && curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs) == CURLE_OK;
	ok = ok &&
	    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_MS) ==
	        CURLE_OK;
	ok =
	    ok && curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, QUERY_MS) == CURLE_OK;
	ok = ok &&
	    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data) == CURLE_OK;
	ok = ok && curl_easy_setopt(e, CURLOPT_WRITEDATA, b) == CURLE_OK;
	ok = ok && curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L) == CURLE_OK;
	ok = ok &&
	    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress) ==
	        CURLE_OK;
	ok = ok && curl_easy_setopt(e, CURLOPT_ERRORBUFFER, ebuf) == CURLE_OK;
	ok = ok &&
	    curl_easy_setopt(e, CURLOPT_USERAGENT, "memfloord") == CURLE_OK;
	if (ok && ca_file != NULL)
		ok = curl_easy_setopt(e, CURLOPT_CAINFO, ca_file) == CURLE_OK;
	return ok ? 0 : -1;
}

/* POST expr to /api/v1/query: the body into b, and the HTTP status;
 * -1 with why (size bytes) when there is no answer. */
static long
post(CURL *e, const char *expr, struct mf_buf *b, char *why, size_t size)
{
	char ebuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	char *q = curl_easy_escape(e, expr, 0);
	char form[3 * QUERY_MAX + 8];
	long code = -1;
	CURLcode rc = CURLE_OUT_OF_MEMORY;

	if (auth_header != NULL)
		hdrs = curl_slist_append(hdrs, auth_header);
	if (q != NULL && (auth_header == NULL || hdrs != NULL) &&
	    easy_options(e, hdrs, b, ebuf) == 0) {
		snprintf(form, sizeof(form), "query=%s", q);
		curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, form);
		rc = curl_easy_perform(e);
	}
	if (rc == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	else if (rc == CURLE_WRITE_ERROR && b->rc == MF_ETOOBIG)
		snprintf(why, size, "an answer of more than %u bytes",
		    MFD_PROM_BODY_MAX);
	else
		snprintf(why, size, "%s",
		    ebuf[0] ? ebuf : curl_easy_strerror(rc));
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, NULL);
	curl_free(q);
	curl_slist_free_all(hdrs);
	return code;
}

/* The series query q answers into *list and *n: 0, or -1 with why. */
static int
ask(CURL *e, enum query q, long step, struct mfd_prom_series **list, size_t *n,
    char *why, size_t size)
{
	char expr[QUERY_MAX], msg[MF_ERROR_MAX];
	struct mf_error err;
	struct mf_buf b;
	size_t skipped = 0;
	enum mf_rc prc;
	long code;
	int rc = -1;

	expression(q, step, expr, sizeof(expr));
	mf_buf_init(&b, MFD_PROM_BODY_MAX);
	memset(&err, 0, sizeof(err));
	code = post(e, expr, &b, why, size);
	if (code < 0)
		goto out;
	prc = mfd_prom_parse(b.data ? b.data : "", b.len, list, n, &skipped,
	    &err);
	if (prc == MF_OK && code == 200) {
		rc = 0;
		goto out;
	}
	if (prc == MF_OK) {
		free(*list);
		*list = NULL;
	}
	snprintf(why, size, "HTTP %ld: %s", code,
	    prc == MF_OK ? "an answer of a query, but not of status 200" :
	                   mf_error_message(&err, msg, sizeof(msg)));
out:
	mf_buf_free(&b);
	return rc;
}

/* --- the runs -------------------------------------------------------- */

static int
cmp_series(const void *a, const void *b)
{
	const struct mfd_prom_series *x = a, *y = b;
	int c = strcmp(x->fingerprint, y->fingerprint);

	if (c == 0)
		c = strcmp(x->ns, y->ns);
	if (c == 0)
		c = strcmp(x->pod, y->pod);
	if (c == 0)
		c = strcmp(x->model, y->model);
	return c != 0 ? c : strcmp(x->host, y->host);
}

/*
 * The series of list[0..*n) (sorted) that read the same (cmp_series) made
 * one, of the largest value.  The grouping keeps apart what the parser
 * does not: the target's namespace and pod beside exported_namespace and
 * exported_pod, two of them when the dcgm-exporter pod was replaced during
 * a run, on the same GPUs.  The largest is the run's peak, last sample
 * and GPUs alike.
 */
static void
merge_same(struct mfd_prom_series *list, size_t *n)
{
	size_t k = 0;

	for (size_t i = 1; i < *n; i++) {
		if (cmp_series(&list[k], &list[i]) != 0)
			list[++k] = list[i];
		else if (list[i].value > list[k].value)
			list[k].value = list[i].value;
	}
	if (*n > 0)
		*n = k + 1;
}

/* The value of id's series in list[0..n) (sorted), or -1. */
static double
value_of(const struct mfd_prom_series *id, const struct mfd_prom_series *list,
    size_t n)
{
	const struct mfd_prom_series *hit;

	if (n == 0)
		return -1;
	hit = bsearch(id, list, n, sizeof(*list), cmp_series);
	return hit != NULL ? hit->value : -1;
}

#define FNV_BASIS 14695981039346656037ULL
#define FNV_PRIME 1099511628211ULL

/* FNV-1a of s, on from h. */
static uint64_t
fnv(uint64_t h, const char *s)
{
	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * FNV_PRIME;
	return h;
}

/* The hash of the series id, each label ended by a NUL: what cmp_series
 * compares. */
static uint64_t
series_hash(const struct mfd_prom_series *id)
{
	const char *part[] = { id->fingerprint, id->ns, id->pod, id->model,
		id->host };
	uint64_t h = FNV_BASIS;

	for (size_t i = 0; i < sizeof(part) / sizeof(part[0]); i++)
		h = fnv(h, part[i]) * FNV_PRIME;
	return h;
}

/* The latest run handled of the series hashed h; NULL when none. */
static struct handled *
handled_of(uint64_t h)
{
	assert(nhandled <= HANDLED_MAX);
	for (size_t i = 0; i < nhandled; i++)
		if (handled[i].series == h)
			return &handled[i];
	return NULL;
}

/* The run of the series hashed h whose last sample was at last handled;
 * prev its earlier run's entry, or NULL. */
static void
mark_handled(struct handled *prev, uint64_t h, double last)
{
	if (prev == NULL) {
		assert(handled_next < HANDLED_MAX);
		prev = &handled[handled_next];
		handled_next = (handled_next + 1) % HANDLED_MAX;
		if (nhandled < HANDLED_MAX)
			nhandled++;
	}
	prev->series = h;
	prev->last = last;
}

/* The name of r: its fingerprint, its pod and the time of its last
 * sample (milliseconds), the same for every reader once r is over. */
static void
run_name(const struct run *r, char *out, size_t size)
{
	snprintf(out, size, "%s %s/%s %lld", r->id->fingerprint, r->id->ns,
	    r->id->pod, (long long)llround(r->last * 1000));
}

/* r, named name, as the observation it makes; -1 when its figures
 * cannot be one.  Its id is the name's, so that a run read again, here
 * or by another replica, is kept once. */
static int
observation_of(const struct run *r, const char *name, struct mf_observation *o)
{
	memset(o, 0, sizeof(*o));
	o->id =
	    MF_STORE_RUN_ID + (int64_t)(fnv(FNV_BASIS, name) % MF_STORE_RUN_ID);
	o->peak_reserved = o->peak_allocated = -1;
	o->tokens_per_second = o->step_seconds = o->tokens_per_step = -1;
	mf_copy(o->fingerprint, sizeof(o->fingerprint), r->id->fingerprint);
	mf_copy(o->card, sizeof(o->card), r->id->model);
	mf_copy(o->source, sizeof(o->source), "dcgm");
	if (!(r->gpus >= 1 && r->gpus <= 65536 && r->peak_mib < 1e12))
		return -1;
	o->count = (int64_t)r->gpus;
	/* DCGM_FI_DEV_FB_USED is in MiB. */
	o->device_used = (int64_t)llround(r->peak_mib * 1048576.0);
	return 0;
}

/* Keep r's peak, saying what became of it; 0 when r is done with, -1
 * when it is to be tried again next period (the store failed). */
static int
record(const struct run *r, const char *name)
{
	struct mf_observation o;
	struct mf_error err;
	enum mfd_obs_kept k;

	memset(&err, 0, sizeof(err));
	if (observation_of(r, name, &o) != 0) {
		mfd_metrics_prom_run(MFD_OBS_INVALID);
		mfd_log(MFD_WARN,
		    "prometheus: run %s on %s: %g GPUs, %g MiB: not figures of a run; skipped",
		    name, r->id->model, r->gpus, r->peak_mib);
		return 0;
	}
	k = mfd_obs_record(&o, &err);
	mfd_metrics_prom_run((int)k);
	switch (k) {
	case MFD_OBS_KEPT:
		mfd_log(MFD_INFO,
		    "prometheus: run %s: kept observation %lld, %lld bytes on %s x%lld",
		    name, (long long)o.id, (long long)o.device_used, o.card,
		    (long long)o.count);
		return 0;
	case MFD_OBS_DUPLICATE:
		mfd_log(MFD_DEBUG, "prometheus: run %s: kept before", name);
		return 0;
	case MFD_OBS_UNKNOWN:
		mfd_log(MFD_WARN,
		    "prometheus: run %s: the store knows no admission of fingerprint %s; skipped",
		    name, o.fingerprint);
		return 0;
	case MFD_OBS_INVALID:
		mfd_log(MFD_WARN, "prometheus: run %s on %s: %s: %s; skipped",
		    name, r->id->model, err.field, err.text);
		return 0;
	case MFD_OBS_FAILED:
		break;
	}
	mfd_log(MFD_ERROR, "prometheus: run %s: %s; tried again next period",
	    name, err.text);
	return -1;
}

/*
 * Each run of peaks (its last sample and GPUs from last and gpus, all
 * three sorted) that is over by now: kept once.  A pod name used again
 * (a bare pod deleted and made anew, a StatefulSet's) makes a series
 * whose window may still hold the earlier run: its peak and GPUs would
 * be both runs', so the later run waits until the earlier one's last
 * sample has left the window.
 */
static void
handle_runs(const struct mfd_prom_series *peaks, size_t np,
    const struct mfd_prom_series *last, size_t nl,
    const struct mfd_prom_series *gpus, size_t ng, long finish_after)
{
	char name[MF_FP_HEX + MFD_PROM_NS_MAX + MFD_PROM_POD_MAX + 32];
	struct handled *prev;
	struct run r;
	uint64_t h;

	for (size_t i = 0; i < np; i++) {
		r.id = &peaks[i];
		r.peak_mib = peaks[i].value;
		r.last = value_of(r.id, last, nl);
		r.gpus = value_of(r.id, gpus, ng);
		/* Prometheus's time of the answer, not this host's clock. */
		if (r.last < 0 || peaks[i].at - r.last < (double)finish_after)
			continue;
		h = series_hash(r.id);
		prev = handled_of(h);
		if (prev != NULL &&
		    (prev->last >= r.last ||
		        peaks[i].at - window <= prev->last))
			continue;
		run_name(&r, name, sizeof(name));
		if (record(&r, name) == 0)
			mark_handled(prev, h, r.last);
	}
}

/* --- the reader ------------------------------------------------------ */

/* A failed read: said once an outage. */
static void
outage(const char *why, long period)
{
	if (down)
		return;
	down = 1;
	mfd_log(MFD_ERROR,
	    "prometheus %s: %s; nothing is read from it until it answers (asked every %ld s)",
	    url, why, period);
}

/* The catalogue's period and finishAfter, in seconds (their defaults
 * while none is in service). */
static void
settings(long *period, long *finish_after)
{
	struct mf_catalog *cat;

	*period = 10;
	*finish_after = 300;
	mfd_state_take(&cat, NULL);
	if (cat != NULL) {
		*period = (long)cat->obs_refresh_seconds;
		*finish_after = (long)cat->obs_finish_after;
	}
	mf_cat_unref(cat);
}

/*
 * A run is kept once finishAfter has passed since its last sample and
 * while that sample is still within the window, and the reader looks once
 * a period: a window that leaves less than a period (and a step) after
 * finishAfter lets runs leave it unseen.  Said once for each such pair of
 * settings.
 */
static void
check_window(long period, long finish_after, long step)
{
	static long said_finish = -1, said_period = -1;

	if (finish_after + period + step < (long)window) {
		said_finish = said_period = -1;
		return;
	}
	if (said_finish == finish_after && said_period == period)
		return;
	said_finish = finish_after;
	said_period = period;
	mfd_log(MFD_WARN,
	    "prometheus: observations.finishAfter (%ld s) and refreshSeconds (%ld s) leave no time within --prometheus-window (%u s): a run can leave the window before it is seen over, and is not kept",
	    finish_after, period, window);
}

/* One period's read: the three queries, then the runs. */
static void
read_once(CURL *e, long period, long finish_after)
{
	struct mfd_prom_series *list[Q_COUNT] = { NULL };
	size_t n[Q_COUNT] = { 0 };
	long step = finish_after / 4;
	char why[CURL_ERROR_SIZE + MF_ERROR_MAX + 32];
	int q;

	step = step < 1 ? 1 : step > STEP_MAX_SECONDS ? STEP_MAX_SECONDS : step;
	check_window(period, finish_after, step);
	for (q = 0; q < Q_COUNT && !atomic_load(&stop); q++)
		if (ask(e, (enum query)q, step, &list[q], &n[q], why,
		        sizeof(why)) != 0)
			break;
	if (q < Q_COUNT) {
		if (!atomic_load(&stop)) {
			mfd_metrics_prom_read(0);
			outage(why, period);
		}
		goto out;
	}
	mfd_metrics_prom_read(1);
	if (down)
		mfd_log(MFD_INFO, "prometheus %s answers again", url);
	down = 0;
	for (q = 0; q < Q_COUNT; q++) {
		qsort(list[q], n[q], sizeof(*list[q]), cmp_series);
		merge_same(list[q], &n[q]);
	}
	handle_runs(list[Q_PEAK], n[Q_PEAK], list[Q_LAST], n[Q_LAST],
	    list[Q_GPUS], n[Q_GPUS], finish_after);
out:
	for (q = 0; q < Q_COUNT; q++)
		free(list[q]);
}

static void *
loop(void *arg)
{
	CURL *e = curl_easy_init();
	long period, finish_after;
	struct timespec due;

	(void)arg;
	if (e == NULL)
		mfd_log(MFD_ERROR, "prometheus: no libcurl handle; not read");
	while (e != NULL && !atomic_load(&stop)) {
		settings(&period, &finish_after);
		curl_easy_reset(e);
		read_once(e, period, finish_after);
		pthread_mutex_lock(&lock);
		mfd_due_in(&due, period * 1000L);
		while (!atomic_load(&stop) &&
		    pthread_cond_timedwait(&wake, &lock, &due) == 0)
			;
		pthread_mutex_unlock(&lock);
	}
	curl_easy_cleanup(e);
	return NULL;
}

int
mfd_prom_start(const struct mfd_config *cfg)
{
	size_t n;

	if (cfg->prometheus_url == NULL)
		return 0;
	if (mfd_prom_check(cfg) != 0)
		return -1;
	n = strlen(cfg->prometheus_url);
	/* good_url held it to URL_MAX - 16: room for the path. */
	assert(n < sizeof(url) - 16);
	while (n > 0 && cfg->prometheus_url[n - 1] == '/')
		n--;
	snprintf(url, sizeof(url), "%.*s/api/v1/query", (int)n,
	    cfg->prometheus_url);
	if (cfg->prometheus_token != NULL &&
	    (auth_header = read_token(cfg->prometheus_token)) == NULL)
		return -1;
	ca_file = cfg->prometheus_ca;
	window = cfg->prometheus_window ? cfg->prometheus_window :
	                                  MFD_PROM_WINDOW_DEFAULT;
	atomic_store(&stop, 0);
	mfd_cond_monotonic(&wake);
	if (pthread_create(&thread, NULL, loop, NULL) != 0) {
		mfd_log(MFD_ERROR, "prometheus: cannot start its reader");
		free(auth_header);
		auth_header = NULL;
		return -1;
	}
	started = 1;
	mfd_log(MFD_INFO, "prometheus: reading DCGM peaks from %s", url);
	return 0;
}

void
mfd_prom_stop(void)
{
	if (!started)
		return;
	pthread_mutex_lock(&lock);
	atomic_store(&stop, 1);
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
	pthread_join(thread, NULL);
	pthread_cond_destroy(&wake);
	started = 0;
	free(auth_header);
	auth_header = NULL;
}
