#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>

#include "../admission/base/buf.h"
#include "memfloord.h"

static const int codes[] = { 200, 201, 204, 400, 401, 403, 404, 405, 411, 413,
	415, 499, 500, 501, 502, 503 };
#define NCODES (sizeof(codes) / sizeof(codes[0]))
#define CODE_OTHER NCODES

/* Upper bounds of the duration histogram, in microseconds: past a second
 * for configUrl fetches (5 s) and the request deadline (10 s). */
static const long bounds[] = { 100, 250, 500, 1000, 2500, 5000, 10000, 25000,
	100000, 250000, 1000000, 2500000, 5000000, 10000000, 30000000 };
#define NBOUNDS (sizeof(bounds) / sizeof(bounds[0]))

static atomic_ulong requests[MFD_R_COUNT][NCODES + 1];
/* per route and bucket, not cumulative */
static atomic_ulong hist[MFD_R_COUNT][NBOUNDS + 1];
static atomic_ulong hist_sum_us[MFD_R_COUNT];
static atomic_ulong admissions[2];
static atomic_ulong reloads[2];
static atomic_int catalog_invalid; /* the last load of the file failed */
static atomic_ulong tls_reloads[2];
static atomic_ulong fetches[MFD_FETCHED_N];
static atomic_ulong prom_reads[2];
/* by enum mfd_obs_kept, in its order */
static const char *const prom_outcomes[] = { "kept", "duplicate", "invalid",
	"unknown", "failed" };
#define NOUTCOMES (sizeof(prom_outcomes) / sizeof(prom_outcomes[0]))
_Static_assert(NOUTCOMES == MFD_OBS_FAILED + 1,
    "a name for each enum mfd_obs_kept");
static atomic_ulong prom_runs[NOUTCOMES];

static const char *const fetch_results[MFD_FETCHED_N] = { "ok", "cached",
	"error" };

static const char *const routes[MFD_R_COUNT] = {
	"/v1/admit",
	"/v1/estimate",
	"/v1/diagnose",
	"/v1/admission-review",
	"/v1/catalog",
	"/v1/models",
	"/v1/schema",
	"/healthz",
	"/readyz",
	"/metrics",
	"/",
	"/v1/observations",
	"/v1/observations/ID",
	"/v1/calibration",
	"other",
};

const char *
mfd_route_path(enum mfd_route r)
{
	assert(r >= 0 && r < MFD_R_COUNT);
	return routes[r];
}

void
mfd_metrics_request(enum mfd_route r, int status, long usec)
{
	size_t c = CODE_OTHER, b = 0;

	assert(r >= 0 && r < MFD_R_COUNT);
	for (size_t i = 0; i < NCODES; i++)
		if (codes[i] == status)
			c = i;
	atomic_fetch_add_explicit(&requests[r][c], 1, memory_order_relaxed);
	while (b < NBOUNDS && usec > bounds[b])
		b++;
	atomic_fetch_add_explicit(&hist[r][b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&hist_sum_us[r], (unsigned long)usec,
	    memory_order_relaxed);
}

void
mfd_metrics_admission(enum mf_verdict v)
{
	if (v != MF_VERDICT_NONE)
		atomic_fetch_add_explicit(&admissions[v == MF_VERDICT_ADMITTED],
		    1, memory_order_relaxed);
}

void
mfd_metrics_reload(int ok)
{
	atomic_fetch_add_explicit(&reloads[ok != 0], 1, memory_order_relaxed);
	atomic_store(&catalog_invalid, ok == 0);
}

void
mfd_metrics_tls_reload(int ok)
{
	atomic_fetch_add_explicit(&tls_reloads[ok != 0], 1,
	    memory_order_relaxed);
}

void
mfd_metrics_fetch(enum mfd_fetch_outcome o)
{
	assert(o >= 0 && o < MFD_FETCHED_N);
	atomic_fetch_add_explicit(&fetches[o], 1, memory_order_relaxed);
}

void
mfd_metrics_prom_read(int ok)
{
	atomic_fetch_add_explicit(&prom_reads[ok != 0], 1,
	    memory_order_relaxed);
}

void
mfd_metrics_prom_run(int kept)
{
	assert(kept >= 0 && (size_t)kept < NOUTCOMES);
	atomic_fetch_add_explicit(&prom_runs[kept], 1, memory_order_relaxed);
}

/* The Prometheus reader's counters (all 0 without --prometheus). */
static void
render_prometheus(struct mf_buf *b)
{
	mf_buf_printf(b,
	    "# HELP memfloor_prometheus_reads_total Periods of the Prometheus reader (--prometheus) by result: every query answered, or not.\n# TYPE memfloor_prometheus_reads_total counter\n"
	    "memfloor_prometheus_reads_total{result=\"ok\"} %lu\n"
	    "memfloor_prometheus_reads_total{result=\"error\"} %lu\n",
	    atomic_load(&prom_reads[1]), atomic_load(&prom_reads[0]));
	mf_buf_printf(b,
	    "# HELP memfloor_prometheus_runs_total Finished runs the Prometheus reader handed on, by what became of them.\n# TYPE memfloor_prometheus_runs_total counter\n");
	for (size_t i = 0; i < NOUTCOMES; i++)
		mf_buf_printf(b,
		    "memfloor_prometheus_runs_total{outcome=\"%s\"} %lu\n",
		    prom_outcomes[i], atomic_load(&prom_runs[i]));
}

/* The store's queue of admissions (design 23), with --store. */
static void
render_store(struct mf_buf *b, const struct mfd_gauges *g)
{
	if (!g->store)
		return;
	mf_buf_printf(b,
	    "# HELP memfloor_store_admissions_queued Admissions waiting to be recorded in the store: one a job, however many times it was admitted meanwhile.\n# TYPE memfloor_store_admissions_queued gauge\n"
	    "memfloor_store_admissions_queued %zu\n"
	    "# HELP memfloor_store_admissions_dropped_total Admissions not recorded: the queue was full, or their statement failed.\n# TYPE memfloor_store_admissions_dropped_total counter\n"
	    "memfloor_store_admissions_dropped_total %llu\n",
	    g->store_queued, (unsigned long long)g->store_dropped);
}

static void
render_requests(struct mf_buf *b)
{
	mf_buf_printf(b,
	    "# HELP memfloor_requests_total HTTP requests by route and status code.\n# TYPE memfloor_requests_total counter\n");
	for (int r = 0; r < MFD_R_COUNT; r++)
		for (size_t c = 0; c <= NCODES; c++) {
			unsigned long n = atomic_load(&requests[r][c]);

			if (n == 0)
				continue;
			if (c == CODE_OTHER)
				mf_buf_printf(b,
				    "memfloor_requests_total{route=\"%s\",code=\"other\"} %lu\n",
				    routes[r], n);
			else
				mf_buf_printf(b,
				    "memfloor_requests_total{route=\"%s\",code=\"%d\"} %lu\n",
				    routes[r], codes[c], n);
		}
}

static void
render_route_histogram(struct mf_buf *b, int r)
{
	unsigned long cum = 0;

	assert(r >= 0 && r < MFD_R_COUNT);
	for (size_t i = 0; i < NBOUNDS; i++) {
		cum += atomic_load(&hist[r][i]);
		mf_buf_printf(b,
		    "memfloor_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %lu\n",
		    routes[r], (double)bounds[i] / 1e6, cum);
	}
	cum += atomic_load(&hist[r][NBOUNDS]);
	mf_buf_printf(b,
	    "memfloor_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %lu\n"
	    "memfloor_request_duration_seconds_sum{route=\"%s\"} %.6f\n"
	    "memfloor_request_duration_seconds_count{route=\"%s\"} %lu\n",
	    routes[r], cum, routes[r],
	    (double)atomic_load(&hist_sum_us[r]) / 1e6, routes[r], cum);
}

static void
render_histogram(struct mf_buf *b)
{
	mf_buf_printf(b,
	    "# HELP memfloor_request_duration_seconds Time from request to response, by route.\n# TYPE memfloor_request_duration_seconds histogram\n");
	for (int r = 0; r < MFD_R_COUNT; r++)
		render_route_histogram(b, r);
}

static void
render_daemon(struct mf_buf *b, size_t tls_generations)
{
	mf_buf_printf(b,
	    "# HELP memfloor_catalog_file_invalid 1 while the catalogue file on disk failed its last load (the previous one is in service).\n# TYPE memfloor_catalog_file_invalid gauge\n"
	    "memfloor_catalog_file_invalid %d\n",
	    atomic_load(&catalog_invalid));
	mf_buf_printf(b,
	    "# HELP memfloor_tls_reloads_total TLS certificate reloads by result.\n# TYPE memfloor_tls_reloads_total counter\n"
	    "memfloor_tls_reloads_total{result=\"ok\"} %lu\n"
	    "memfloor_tls_reloads_total{result=\"error\"} %lu\n"
	    "# HELP memfloor_tls_certificate_generations Certificates held: "
	    "the one in service and those a handshake may still read.\n"
	    "# TYPE memfloor_tls_certificate_generations gauge\n"
	    "memfloor_tls_certificate_generations %zu\n",
	    atomic_load(&tls_reloads[1]), atomic_load(&tls_reloads[0]),
	    tls_generations);
	mf_buf_printf(b,
	    "# HELP memfloor_config_fetches_total spec.model.configUrl configs by where they came from: fetched, from the cache, or an error.\n# TYPE memfloor_config_fetches_total counter\n");
	for (int i = 0; i < MFD_FETCHED_N; i++)
		mf_buf_printf(b,
		    "memfloor_config_fetches_total{result=\"%s\"} %lu\n",
		    fetch_results[i], atomic_load(&fetches[i]));
}

/* s as a label value: backslash, quote and newline escaped. */
static void
label(struct mf_buf *b, const char *name, const char *s)
{
	mf_buf_printf(b, ",%s=\"", name);
	for (; s != NULL && *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			mf_buf_printf(b, "\\%c", *s);
		else if (*s == '\n')
			mf_buf_printf(b, "\\n");
		else
			mf_buf_printf(b, "%c", *s);
	}
	mf_buf_printf(b, "\"");
}

static void
calib_labels(struct mf_buf *b, const char *kind,
    const struct mfd_calib_group *g)
{
	mf_buf_printf(b, "{kind=\"%s\"", kind);
	label(b, "card", g->card);
	label(b, "method", g->method);
	label(b, "precision", g->precision);
	label(b, "gradient_checkpointing", g->checkpointing);
	label(b, "framework", g->framework);
}

static void
render_calib_figure(struct mf_buf *b, const char *kind,
    const struct mfd_calib_group *g, const struct mfd_calib_figure *f)
{
	if (f->n == 0)
		return;
	mf_buf_printf(b, "memfloor_calibration_error");
	calib_labels(b, kind, g);
	mf_buf_printf(b, ",stat=\"median\"} %.6g\n", f->median);
	mf_buf_printf(b, "memfloor_calibration_error");
	calib_labels(b, kind, g);
	mf_buf_printf(b, ",stat=\"worst\"} %.6g\n", f->worst);
	mf_buf_printf(b, "memfloor_calibration_observations");
	calib_labels(b, kind, g);
	mf_buf_printf(b, "} %zu\n", f->n);
}

/* Design 23's calibration, a series a kind, recipe, card and statistic. */
static void
render_calibration(struct mf_buf *b, const struct mfd_calibration *c)
{
	if (c == NULL)
		return;
	mf_buf_printf(b,
	    "# HELP memfloor_calibration_error The model's figure over the observed one, less 1 (positive: the safe side), by kind (memory, speed), card and recipe: the median and the worst.\n# TYPE memfloor_calibration_error gauge\n"
	    "# HELP memfloor_calibration_observations Observations behind memfloor_calibration_error.\n# TYPE memfloor_calibration_observations gauge\n");
	for (size_t i = 0; i < c->n; i++) {
		render_calib_figure(b, "memory", &c->g[i], &c->g[i].memory);
		render_calib_figure(b, "speed", &c->g[i], &c->g[i].speed);
	}
}

char *
mfd_metrics_render(const struct mfd_gauges *g)
{
	struct mf_buf b;

	mf_buf_init(&b, 1u << 20);
	render_requests(&b);
	render_histogram(&b);
	render_daemon(&b, g->tls_generations);
	mf_buf_printf(&b,
	    "# HELP memfloor_admissions_total Admission decisions.\n# TYPE memfloor_admissions_total counter\n"
	    "memfloor_admissions_total{decision=\"admitted\"} %lu\n"
	    "memfloor_admissions_total{decision=\"rejected\"} %lu\n",
	    atomic_load(&admissions[1]), atomic_load(&admissions[0]));
	mf_buf_printf(&b,
	    "# HELP memfloor_catalog_reloads_total Catalogue reloads by result.\n# TYPE memfloor_catalog_reloads_total counter\n"
	    "memfloor_catalog_reloads_total{result=\"ok\"} %lu\n"
	    "memfloor_catalog_reloads_total{result=\"error\"} %lu\n",
	    atomic_load(&reloads[1]), atomic_load(&reloads[0]));
	mf_buf_printf(&b,
	    "# HELP memfloor_catalog_version Version of the catalogue in service.\n# TYPE memfloor_catalog_version gauge\n"
	    "memfloor_catalog_version %llu\n# HELP memfloor_catalog_gpus GPU types in the catalogue in service.\n# TYPE memfloor_catalog_gpus "
	    "gauge\nmemfloor_catalog_gpus %zu\n",
	    (unsigned long long)g->catalog_version, g->catalog_gpus);
	render_calibration(&b, g->calibration);
	render_prometheus(&b);
	render_store(&b, g);
	if (b.rc != MF_OK) {
		mf_buf_free(&b);
		return NULL;
	}
	return mf_buf_take(&b);
}
