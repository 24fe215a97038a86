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
	if (b.rc != MF_OK) {
		mf_buf_free(&b);
		return NULL;
	}
	return mf_buf_take(&b);
}
