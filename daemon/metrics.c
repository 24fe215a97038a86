#include <stdatomic.h>
#include <stdio.h>

#include "../admission/buf.h"
#include "memfloord.h"

static const int codes[] = { 200, 400, 403, 404, 405, 411, 413, 415, 500, 502,
	503 };
#define NCODES (sizeof(codes) / sizeof(codes[0]))
#define CODE_OTHER NCODES

/* Upper bounds of the duration histogram, in microseconds. */
static const long bounds[] = { 100, 250, 500, 1000, 2500, 5000, 10000, 25000,
	100000, 1000000 };
#define NBOUNDS (sizeof(bounds) / sizeof(bounds[0]))

static atomic_ulong requests[MFD_R_COUNT][NCODES + 1];
static atomic_ulong hist[NBOUNDS + 1]; /* per bucket, not cumulative */
static atomic_ulong hist_sum_us;
static atomic_ulong admissions[2];
static atomic_ulong reloads[2];

static const char *const routes[MFD_R_COUNT] = {
	"/v1/admit",
	"/v1/estimate",
	"/v1/diagnose",
	"/v1/admission-review",
	"/v1/catalog",
	"/v1/models",
	"/healthz",
	"/readyz",
	"/metrics",
	"/",
	"other",
};

const char *
mfd_route_path(enum mfd_route r)
{
	return routes[r];
}

void
mfd_metrics_request(enum mfd_route r, int status, long usec)
{
	size_t c = CODE_OTHER, b = 0;

	for (size_t i = 0; i < NCODES; i++)
		if (codes[i] == status)
			c = i;
	atomic_fetch_add_explicit(&requests[r][c], 1, memory_order_relaxed);
	while (b < NBOUNDS && usec > bounds[b])
		b++;
	atomic_fetch_add_explicit(&hist[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&hist_sum_us, (unsigned long)usec,
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
}

static void
render_requests(struct mf_buf *b)
{
	mf_buf_printf(b,
	    "# HELP memfloor_requests_total HTTP requests by "
	    "route and status code.\n# TYPE memfloor_requests_total counter\n");
	for (int r = 0; r < MFD_R_COUNT; r++)
		for (size_t c = 0; c <= NCODES; c++) {
			unsigned long n = atomic_load(&requests[r][c]);

			if (n == 0)
				continue;
			if (c == CODE_OTHER)
				mf_buf_printf(b,
				    "memfloor_requests_total{route="
				    "\"%s\",code=\"other\"} %lu\n",
				    routes[r], n);
			else
				mf_buf_printf(b,
				    "memfloor_requests_total{route="
				    "\"%s\",code=\"%d\"} %lu\n",
				    routes[r], codes[c], n);
		}
}

static void
render_histogram(struct mf_buf *b)
{
	unsigned long cum = 0;

	mf_buf_printf(b,
	    "# HELP memfloor_request_duration_seconds Time from "
	    "request to response.\n# TYPE memfloor_request_duration_seconds "
	    "histogram\n");
	for (size_t i = 0; i < NBOUNDS; i++) {
		cum += atomic_load(&hist[i]);
		mf_buf_printf(b,
		    "memfloor_request_duration_seconds_bucket{le="
		    "\"%g\"} %lu\n",
		    (double)bounds[i] / 1e6, cum);
	}
	cum += atomic_load(&hist[NBOUNDS]);
	mf_buf_printf(b,
	    "memfloor_request_duration_seconds_bucket{le=\"+Inf\"} "
	    "%lu\nmemfloor_request_duration_seconds_sum %.6f\n"
	    "memfloor_request_duration_seconds_count %lu\n",
	    cum, (double)atomic_load(&hist_sum_us) / 1e6, cum);
}

char *
mfd_metrics_render(uint64_t catalog_version, size_t catalog_gpus)
{
	struct mf_buf b;

	mf_buf_init(&b, 1u << 20);
	render_requests(&b);
	render_histogram(&b);
	mf_buf_printf(&b,
	    "# HELP memfloor_admissions_total Admission decisions."
	    "\n# TYPE memfloor_admissions_total counter\n"
	    "memfloor_admissions_total{decision=\"admitted\"} %lu\n"
	    "memfloor_admissions_total{decision=\"rejected\"} %lu\n",
	    atomic_load(&admissions[1]), atomic_load(&admissions[0]));
	mf_buf_printf(&b,
	    "# HELP memfloor_catalog_reloads_total Catalogue "
	    "reloads by result.\n# TYPE memfloor_catalog_reloads_total "
	    "counter\n"
	    "memfloor_catalog_reloads_total{result=\"ok\"} %lu\n"
	    "memfloor_catalog_reloads_total{result=\"error\"} %lu\n",
	    atomic_load(&reloads[1]), atomic_load(&reloads[0]));
	mf_buf_printf(&b,
	    "# HELP memfloor_catalog_version Version of the "
	    "catalogue in service.\n# TYPE memfloor_catalog_version gauge\n"
	    "memfloor_catalog_version %llu\n# HELP memfloor_catalog_gpus GPU "
	    "types in the catalogue in service.\n# TYPE memfloor_catalog_gpus "
	    "gauge\nmemfloor_catalog_gpus %zu\n",
	    (unsigned long long)catalog_version, catalog_gpus);
	if (b.rc != MF_OK) {
		mf_buf_free(&b);
		return NULL;
	}
	return mf_buf_take(&b);
}
