/*
 * it_admit.c: memfloord end to end, over HTTP on a loopback port.
 *
 * The catalogues are the YAML files of tests/data/it/; each one's header
 * works out the figures the tests expect.  The common job is the one of
 * examples/min-memory-88Gi.yaml: minMemory 88Gi = 88 x 2^30 =
 * 94,489,280,512 bytes, 12 reference hours.  With only a floor, a card
 * fits when its memory is at least the floor (no headroom, design 8), and
 * for count 1: hours = 12 / relativeThroughput, cost = hours x hourlyPrice.
 *
 * Against tests/data/it/place.yaml that gives (cards of 88Gi and more):
 *   FAST       12 h x  3.00 = 36.00   spare (141e9 - F) / 141e9 = 0.3299
 *   MID        24 h x  1.80 = 43.20   spare 0 (exactly 88Gi)
 *   CHEAPHOUR  48 h x  1.00 = 48.00   spare (96e9 - F) / 96e9   = 0.0157
 *   BIG         6 h x 10.00 = 60.00   spare (192e9 - F) / 192e9 = 0.5079
 * (F = 94,489,280,512); TINY (48G) and NEAR (94G < 88Gi) never fit.
 */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <yaml.h>

#include "harness.h"
#include "models.h"

#define F88GI INT64_C(94489280512) /* 88 x 1,073,741,824 */
#define MAX_BODY 4096              /* --max-body of the shared daemon */
#define WAIT_MS 10000

/* --- checks that say what they saw ----------------------------------- */

/*
 * bad_*: 0 when the value is as wanted, else say what it is and return 1.
 * CHECK_* fail the test on the spot.
 */
static int
mismatch(json_t *v, const char *path, const char *want, int line)
{
	char *got = v ? json_dumps(v, JSON_ENCODE_ANY) : NULL;

	print_error("line %d: %s is %s, want %s\n", line, path,
	    got ? got : "absent", want);
	free(got);
	return 1;
}

static int
bad_str(json_t *j, const char *path, const char *want, int line)
{
	json_t *v = it_jpath(j, path);
	char w[256];

	if (json_is_string(v) && strcmp(json_string_value(v), want) == 0)
		return 0;
	snprintf(w, sizeof(w), "\"%s\"", want);
	return mismatch(v, path, w, line);
}

static int
bad_int(json_t *j, const char *path, long long want, int line)
{
	json_t *v = it_jpath(j, path);
	char w[32];

	if (json_is_integer(v) && json_integer_value(v) == want)
		return 0;
	snprintf(w, sizeof(w), "%lld", want);
	return mismatch(v, path, w, line);
}

/* A number within tol of want (the JSON may round it). */
static int
bad_num(json_t *j, const char *path, double want, double tol, int line)
{
	json_t *v = it_jpath(j, path);
	char w[64];

	if (json_is_number(v) && fabs(json_number_value(v) - want) <= tol)
		return 0;
	snprintf(w, sizeof(w), "%.10g +- %g", want, tol);
	return mismatch(v, path, w, line);
}

static int
bad_null(json_t *j, const char *path, int line)
{
	json_t *v = it_jpath(j, path);

	return json_is_null(v) ? 0 : mismatch(v, path, "null", line);
}

static int
bad_bool(json_t *j, const char *path, int want, int line)
{
	json_t *v = it_jpath(j, path);

	if (json_is_boolean(v) && json_is_true(v) == want)
		return 0;
	return mismatch(v, path, want ? "true" : "false", line);
}

static int
bad_size(json_t *j, const char *path, size_t want, int line)
{
	json_t *v = it_jpath(j, path);
	char w[64];

	if (json_is_array(v) && json_array_size(v) == want)
		return 0;
	snprintf(w, sizeof(w), "%zu entries", want);
	return mismatch(v, path, w, line);
}

static int
bad_has(const char *text, const char *needle, int line)
{
	if (text != NULL && strstr(text, needle) != NULL)
		return 0;
	print_error("line %d: \"%s\" not in:\n%s\n", line, needle,
	    text ? text : "(null)");
	return 1;
}

static int
bad_status(const struct it_response *r, long want, int line)
{
	if (r->status == want)
		return 0;
	print_error("line %d: status %ld, want %ld (%s); body:\n%s\n", line,
	    r->status, want, r->error, r->body ? r->body : "");
	return 1;
}

#define FAIL_IF(bad) \
	do { \
		if (bad) \
			fail(); \
	} while (0)
#define CHECK_STR(j, p, w) FAIL_IF(bad_str(j, p, w, __LINE__))
#define CHECK_INT(j, p, w) FAIL_IF(bad_int(j, p, w, __LINE__))
#define CHECK_NUM(j, p, w, t) FAIL_IF(bad_num(j, p, w, t, __LINE__))
#define CHECK_NULL(j, p) FAIL_IF(bad_null(j, p, __LINE__))
#define CHECK_BOOL(j, p, w) FAIL_IF(bad_bool(j, p, w, __LINE__))
#define CHECK_SIZE(j, p, w) FAIL_IF(bad_size(j, p, w, __LINE__))
#define CHECK_HAS(t, n) FAIL_IF(bad_has(t, n, __LINE__))
#define CHECK_STATUS(r, w) FAIL_IF(bad_status(r, w, __LINE__))

/* Money to the cent, hours to the thousandth, fractions to 1e-4. */
#define CENT 0.0051
#define MILLI 0.00051
#define FRAC 0.0001

/* --- requests -------------------------------------------------------- */

static void
post_as(const struct it_daemon *d, const char *path, const char *body,
    size_t len, const char *ctype, const char *accept, struct it_response *r)
{
	char h1[128], h2[128];
	const char *hdrs[3] = { NULL, NULL, NULL };
	size_t n = 0;

	if (ctype != NULL) {
		snprintf(h1, sizeof(h1), "Content-Type: %s", ctype);
		hdrs[n++] = h1;
	}
	if (accept != NULL) {
		snprintf(h2, sizeof(h2), "Accept: %s", accept);
		hdrs[n++] = h2;
	}
	it_request(d, "POST", path, body, len, hdrs, r);
}

/* POST a YAML job to /v1/admit; the answer as JSON (never NULL). */
static json_t *
admit(const struct it_daemon *d, const char *yaml, struct it_response *r)
{
	json_t *j;

	post_as(d, "/v1/admit", yaml, strlen(yaml), "application/yaml", NULL,
	    r);
	j = it_json(r);
	if (j == NULL) {
		print_error("not JSON (status %ld, %s):\n%s\n", r->status,
		    r->error, r->body ? r->body : "");
		fail();
	}
	return j;
}

static json_t *
get_json(const struct it_daemon *d, const char *path, struct it_response *r)
{
	json_t *j;

	it_request(d, "GET", path, NULL, 0, NULL, r);
	j = it_json(r);
	if (j == NULL) {
		print_error("GET %s: not JSON (status %ld, %s):\n%s\n", path,
		    r->status, r->error, r->body ? r->body : "");
		fail();
	}
	return j;
}

/*
 * The 88Gi job with more lines: gpu_extra under resources.gpu (it starts
 * on line 11), spec_extra after it (two-space indent, a spec member).
 */
static char *
job88(char *buf, size_t size, const char *gpu_extra, const char *spec_extra)
{
	snprintf(buf, size,
	    "apiVersion: memfloor.dev/v1\n"
	    "kind: Job\n"
	    "metadata:\n"
	    "  name: it-88gi\n"
	    "spec:\n"
	    "  duration:\n"
	    "    referenceHours: 12\n"
	    "  resources:\n"
	    "    gpu:\n"
	    "      minMemory: 88Gi\n"
	    "%s%s",
	    gpu_extra ? gpu_extra : "", spec_extra ? spec_extra : "");
	return buf;
}

static char *
fixture(char *buf, size_t size, const char *name)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "tests/data/it/%s", name);
	return it_path(buf, size, rel);
}

static const char *
models_dir(void)
{
	static char buf[4096];

	return it_path(buf, sizeof(buf), "catalog/models");
}

/* The names of the placement and the alternatives, in order. */
static void
check_order(json_t *j, const char *const *want, size_t n, int line)
{
	char path[64];

	FAIL_IF(bad_str(j, "placement.gpu", want[0], line));
	FAIL_IF(bad_size(j, "alternatives", n - 1, line));
	for (size_t i = 1; i < n; i++) {
		snprintf(path, sizeof(path), "alternatives.%zu.gpu", i - 1);
		FAIL_IF(bad_str(j, path, want[i], line));
	}
}

#define CHECK_ORDER(j, ...) \
	do { \
		static const char *const order_[] = { __VA_ARGS__ }; \
		check_order(j, order_, sizeof(order_) / sizeof(order_[0]), \
		    __LINE__); \
	} while (0)

/* --- the shared daemon: place.yaml ----------------------------------- */

static int
start_place(void **state)
{
	char cat[4096], maxbody[32];
	struct it_daemon *d;

	fixture(cat, sizeof(cat), "place.yaml");
	snprintf(maxbody, sizeof(maxbody), "%d", MAX_BODY);
	d = it_daemon_start((const char *const[]){ "-f", cat, "-m",
	    models_dir(), "--max-body", maxbody, "--threads", "4", NULL });
	*state = d;
	return d == NULL ? -1 : 0;
}

/* Teardown of a test or group whose state is its daemon. */
static int
stop_place(void **state)
{
	int rc = it_daemon_finish(*state, WAIT_MS);

	*state = NULL;
	return rc;
}

static void
test_admit_cheapest_to_finish(void **state)
{
	struct it_daemon *d = *state;
	struct it_response r;
	char path[4096], *yaml;
	json_t *j;

	yaml = it_read_file(it_path(path, sizeof(path),
	                        "examples/min-memory-88Gi.yaml"),
	    NULL);
	assert_non_null(yaml);
	j = admit(d, yaml, &r);
	CHECK_STATUS(&r, 200);
	assert_string_equal(r.content_type, "application/json");
	CHECK_BOOL(j, "admitted", 1);
	CHECK_STR(j, "job", "llama-8b-full");
	CHECK_STR(j, "need.source", "minMemory");
	CHECK_NULL(j, "need.perGpuBytes");
	CHECK_INT(j, "need.minMemoryBytes", F88GI);
	CHECK_STR(j, "minMemory", "88Gi");
	/*
	 * CHEAPHOUR is the cheapest card per hour ($1.00) but takes 48 h:
	 * $48.00.  FAST at $3.00/h takes 12 h: $36.00.
	 */
	CHECK_STR(j, "placement.gpu", "FAST");
	CHECK_INT(j, "placement.count", 1);
	CHECK_INT(j, "placement.memoryBytes", INT64_C(141000000000));
	CHECK_NUM(j, "placement.hourlyPrice", 3.00, CENT);
	CHECK_NUM(j, "placement.hours", 12.0, MILLI);
	CHECK_NUM(j, "placement.cost", 36.00, CENT);
	CHECK_NUM(j, "placement.costPerReferenceHour", 3.0, FRAC);
	/* (141e9 - 94,489,280,512) / 141e9 = 0.329863 */
	CHECK_NUM(j, "placement.spareFraction", 0.329863, FRAC);
	CHECK_SIZE(j, "placement.fixes", 0);
	CHECK_STR(json_object_get(it_jpath(j, "placement.labels"),
	              "example.com/card"),
	    "", "fast");
	CHECK_ORDER(j, "FAST", "MID", "CHEAPHOUR", "BIG");
	/* MID: 12 / 0.5 = 24 h x 1.80 = 43.20; its 88Gi is the floor. */
	CHECK_NUM(j, "alternatives.0.hours", 24.0, MILLI);
	CHECK_NUM(j, "alternatives.0.cost", 43.20, CENT);
	CHECK_NUM(j, "alternatives.0.spareFraction", 0.0, FRAC);
	/* CHEAPHOUR: 12 / 0.25 = 48 h x 1.00 = 48.00. */
	CHECK_NUM(j, "alternatives.1.hours", 48.0, MILLI);
	CHECK_NUM(j, "alternatives.1.cost", 48.00, CENT);
	CHECK_NUM(j, "alternatives.1.hourlyPrice", 1.00, CENT);
	/* BIG: 12 / 2.0 = 6 h x 10.00 = 60.00. */
	CHECK_NUM(j, "alternatives.2.hours", 6.0, MILLI);
	CHECK_NUM(j, "alternatives.2.cost", 60.00, CENT);
	CHECK_SIZE(j, "warnings", 0);
	json_decref(j);
	it_response_free(&r);
	free(yaml);
}

/* The same job as JSON gets the same placement. */
static void
test_admit_json_body(void **state)
{
	static const char body[] =
	    "{\"apiVersion\": \"memfloor.dev/v1\", "
	    "\"kind\": \"Job\", \"metadata\": {\"name\": \"it-json\"}, "
	    "\"spec\": {\"resources\": {\"gpu\": {\"minMemory\": \"88Gi\"}}, "
	    "\"duration\": {\"referenceHours\": 12}}}";
	struct it_response r;
	json_t *j;

	post_as(*state, "/v1/admit", body, strlen(body), "application/json",
	    NULL, &r);
	j = it_json(&r);
	CHECK_STATUS(&r, 200);
	CHECK_STR(j, "job", "it-json");
	CHECK_ORDER(j, "FAST", "MID", "CHEAPHOUR", "BIG");
	CHECK_NUM(j, "placement.cost", 36.00, CENT);
	json_decref(j);
	it_response_free(&r);
}

static void
test_admit_floor_above_every_card(void **state)
{
	struct it_response r;
	char buf[1024];
	json_t *j;

	j = admit(*state,
	    "apiVersion: memfloor.dev/v1\nkind: Job\n"
	    "metadata:\n  name: it-huge\nspec:\n  resources:\n    gpu:\n"
	    "      minMemory: 200Gi\n",
	    &r);
	CHECK_STATUS(&r, 403);
	CHECK_BOOL(j, "admitted", 0);
	CHECK_STR(j, "need.source", "minMemory");
	CHECK_INT(j, "need.minMemoryBytes",
	    INT64_C(214748364800)); /* 200 x 2^30 */
	CHECK_STR(j, "minMemory", "200Gi");
	/* The largest card is BIG, 192G. */
	assert_true(json_is_string(json_object_get(j, "reason")));
	snprintf(buf, sizeof(buf), "%s",
	    json_string_value(json_object_get(j, "reason")));
	CHECK_HAS(buf, "BIG");
	CHECK_HAS(buf, "200Gi");
	CHECK_NULL(j, "limit");
	assert_null(json_object_get(j, "placement"));
	json_decref(j);
	it_response_free(&r);
}

/* Reject with limit, whose name must be in `limit` and in the reason. */
static void
check_limit_reject(const struct it_daemon *d, const char *spec_extra,
    const char *limit)
{
	struct it_response r;
	char yaml[1024];
	json_t *j;

	j = admit(d, job88(yaml, sizeof(yaml), NULL, spec_extra), &r);
	CHECK_STATUS(&r, 403);
	CHECK_BOOL(j, "admitted", 0);
	CHECK_STR(j, "limit", limit);
	CHECK_HAS(json_string_value(json_object_get(j, "reason")), limit);
	json_decref(j);
	it_response_free(&r);
}

static void
test_limit_max_hourly_price(void **state)
{
	struct it_response r;
	char yaml[1024];
	json_t *j;

	/*
	 * 1.8: FAST ($3.00) and BIG ($10.00) are over; MID at exactly $1.80
	 * is not, so the placement moves to MID, then CHEAPHOUR.
	 */
	j = admit(*state,
	    job88(yaml, sizeof(yaml), NULL,
	        "  limits:\n    maxHourlyPrice: 1.8\n"),
	    &r);
	CHECK_STATUS(&r, 200);
	CHECK_ORDER(j, "MID", "CHEAPHOUR");
	CHECK_NUM(j, "placement.cost", 43.20, CENT);
	json_decref(j);
	it_response_free(&r);
	/* 0.99: under every card's price (the cheapest is $1.00). */
	check_limit_reject(*state, "  limits:\n    maxHourlyPrice: 0.99\n",
	    "limits.maxHourlyPrice");
}

static void
test_limit_max_cost(void **state)
{
	struct it_response r;
	char yaml[1024];
	json_t *j;

	/* 48: BIG ($60.00) is over, CHEAPHOUR at exactly $48.00 is not. */
	j = admit(*state,
	    job88(yaml, sizeof(yaml), NULL, "  limits:\n    maxCost: 48\n"),
	    &r);
	CHECK_STATUS(&r, 200);
	CHECK_ORDER(j, "FAST", "MID", "CHEAPHOUR");
	json_decref(j);
	it_response_free(&r);
	/* 35.99: under the cheapest placement, FAST at $36.00. */
	check_limit_reject(*state, "  limits:\n    maxCost: 35.99\n",
	    "limits.maxCost");
}

static void
test_limit_deadline(void **state)
{
	struct it_response r;
	char yaml[1024];
	json_t *j;

	/* 24 h: CHEAPHOUR (48 h) is out, MID at exactly 24 h is in. */
	j = admit(*state,
	    job88(yaml, sizeof(yaml), NULL,
	        "  limits:\n    deadlineHours: 24\n"),
	    &r);
	CHECK_STATUS(&r, 200);
	CHECK_ORDER(j, "FAST", "MID", "BIG");
	json_decref(j);
	it_response_free(&r);
	/* 11.5 h: only BIG (6 h) finishes in time: 6 h x $10 = $60. */
	j = admit(*state,
	    job88(yaml, sizeof(yaml), NULL,
	        "  limits:\n    deadlineHours: 11.5\n"),
	    &r);
	CHECK_STATUS(&r, 200);
	CHECK_ORDER(j, "BIG");
	CHECK_NUM(j, "placement.hours", 6.0, MILLI);
	CHECK_NUM(j, "placement.cost", 60.00, CENT);
	json_decref(j);
	it_response_free(&r);
	/* 5 h: the fastest, BIG, takes 6. */
	check_limit_reject(*state, "  limits:\n    deadlineHours: 5\n",
	    "limits.deadlineHours");
}

static void
test_admit_count_two(void **state)
{
	struct it_response r;
	char yaml[1024];
	json_t *j;

	/*
	 * speed = thr x 2 x 0.9^log2(2) = 1.8 thr; price = 2 x hourlyPrice.
	 * FAST: 12 / 1.8 = 6.6667 h x 6.00 = 40.00 (3.3333 per ref. hour)
	 * MID:  12 / 0.9 = 13.333 h x 3.60 = 48.00
	 * BIG:  12 / 3.6 = 3.3333 h x 20.00 = 66.67
	 * CHEAPHOUR has maxCount 1: not a candidate.
	 */
	j = admit(*state, job88(yaml, sizeof(yaml), "      count: 2\n", NULL),
	    &r);
	CHECK_STATUS(&r, 200);
	CHECK_ORDER(j, "FAST", "MID", "BIG");
	CHECK_INT(j, "placement.count", 2);
	CHECK_NUM(j, "placement.hourlyPrice", 6.00, CENT);
	CHECK_NUM(j, "placement.hours", 12.0 / 1.8, MILLI);
	CHECK_NUM(j, "placement.cost", 40.00, CENT);
	CHECK_NUM(j, "placement.costPerReferenceHour", 40.0 / 12, FRAC);
	CHECK_INT(j, "alternatives.0.count", 2);
	CHECK_NUM(j, "alternatives.0.hours", 12.0 / 0.9, MILLI);
	CHECK_NUM(j, "alternatives.0.cost", 48.00, CENT);
	CHECK_NUM(j, "alternatives.1.hours", 12.0 / 3.6, MILLI);
	CHECK_NUM(j, "alternatives.1.cost", 66.67, CENT);
	json_decref(j);
	it_response_free(&r);
	/*
	 * maxHourlyPrice applies to the price of both GPUs: 6.00 lets FAST
	 * x2 ($6.00) in, 5.99 moves the placement to MID x2 ($3.60).
	 */
	j = admit(*state,
	    job88(yaml, sizeof(yaml), "      count: 2\n",
	        "  limits:\n    maxHourlyPrice: 6\n"),
	    &r);
	CHECK_STATUS(&r, 200);
	CHECK_ORDER(j, "FAST", "MID");
	json_decref(j);
	it_response_free(&r);
	j = admit(*state,
	    job88(yaml, sizeof(yaml), "      count: 2\n",
	        "  limits:\n    maxHourlyPrice: 5.99\n"),
	    &r);
	CHECK_STATUS(&r, 200);
	CHECK_ORDER(j, "MID");
	CHECK_NUM(j, "placement.hourlyPrice", 3.60, CENT);
	json_decref(j);
	it_response_free(&r);
}

/* Floors come back as Kubernetes canonicalises them (design 2). */
static void
check_canonical(const struct it_daemon *d, const char *written,
    const char *canonical, long long bytes, int line)
{
	struct it_response r;
	char yaml[1024];
	json_t *j;
	int bad;

	snprintf(yaml, sizeof(yaml),
	    "apiVersion: memfloor.dev/v1\n"
	    "kind: Job\nmetadata:\n  name: it-q\nspec:\n  resources:\n"
	    "    gpu:\n      minMemory: %s\n",
	    written);
	j = admit(d, yaml, &r);
	bad = bad_status(&r, 200, line) |
	    bad_str(j, "minMemory", canonical, line) |
	    bad_int(j, "need.minMemoryBytes", bytes, line);
	json_decref(j);
	it_response_free(&r);
	FAIL_IF(bad);
}

static void
test_admit_canonical_floor(void **state)
{
	/* 90112 x 2^20 = 88 x 2^30 = 94,489,280,512 */
	check_canonical(*state, "90112Mi", "88Gi", F88GI, __LINE__);
	/* 94.5 x 10^9 = 94,500 x 10^6 */
	check_canonical(*state, "94.5G", "94500M", INT64_C(94500000000),
	    __LINE__);
	/* 0.0625Ti = 64Gi = 68,719,476,736 (fits MID and larger) */
	check_canonical(*state, "0.0625Ti", "64Gi", INT64_C(68719476736),
	    __LINE__);
}

/* --- HTTP errors ----------------------------------------------------- */

/* An error answer: status, and JSON {"error", "field", "line", "column"}. */
static int
bad_error(const struct it_response *r, json_t *j, long status, int line)
{
	if (bad_status(r, status, line))
		return 1;
	if (r->content_type == NULL ||
	    strcmp(r->content_type, "application/json") != 0) {
		print_error("line %d: content type %s\n", line,
		    r->content_type ? r->content_type : "(none)");
		return 1;
	}
	if (!json_is_string(json_object_get(j, "error")) ||
	    json_object_get(j, "field") == NULL ||
	    json_object_get(j, "line") == NULL ||
	    json_object_get(j, "column") == NULL) {
		print_error("line %d: not an error body:\n%s\n", line, r->body);
		return 1;
	}
	return 0;
}

/* Check an error answer and free it. */
static void
check_error(struct it_response *r, long status, int line)
{
	json_t *j = it_json(r);
	int bad = bad_error(r, j, status, line);

	json_decref(j);
	it_response_free(r);
	FAIL_IF(bad);
}

#define CHECK_ERROR(r, s) check_error(r, s, __LINE__)

static void
test_http_404(void **state)
{
	struct it_response r;

	it_request(*state, "GET", "/v1/nothing", NULL, 0, NULL, &r);
	CHECK_ERROR(&r, 404);
	it_request(*state, "POST", "/v1/admitx", "x", 1, NULL, &r);
	CHECK_ERROR(&r, 404);
}

static void
test_http_405(void **state)
{
	struct it_response r;
	char allow[128];

	it_request(*state, "GET", "/v1/admit", NULL, 0, NULL, &r);
	it_response_header(&r, "Allow", allow, sizeof(allow));
	CHECK_ERROR(&r, 405);
	assert_string_equal(allow, "POST");
	it_request(*state, "POST", "/v1/catalog", "x", 1, NULL, &r);
	it_response_header(&r, "Allow", allow, sizeof(allow));
	CHECK_ERROR(&r, 405);
	CHECK_HAS(allow, "GET");
	it_request(*state, "DELETE", "/healthz", NULL, 0, NULL, &r);
	CHECK_ERROR(&r, 405);
}

/* curl always sends a length, so this one goes over a raw socket. */
static void
test_http_411(void **state)
{
	static const char req[] =
	    "POST /v1/admit HTTP/1.1\r\n"
	    "Host: 127.0.0.1\r\nContent-Type: application/yaml\r\n"
	    "Connection: close\r\n\r\n";
	char *out;

	out = it_raw(*state, req, sizeof(req) - 1, 5000);
	assert_non_null(out);
	if (strncmp(out, "HTTP/1.1 411 ", 13) != 0) {
		print_error("answer:\n%s\n", out);
		fail();
	}
	CHECK_HAS(out, "\"error\"");
	free(out);
}

/* A valid 88Gi job padded to exactly len bytes (malloc'd). */
static char *
padded_job(size_t len)
{
	char head[1024], *buf;

	job88(head, sizeof(head), NULL, NULL);
	buf = it_padded(head, len);
	assert_non_null(buf);
	return buf;
}

static void
send_sized(const struct it_daemon *d, size_t len, int chunked, long want,
    int line)
{
	static const char *const hdrs[] = { "Content-Type: application/yaml",
		NULL };
	struct it_req q = { 0 };
	struct it_response r;
	char *body = padded_job(len);
	int bad;

	q.method = "POST";
	q.path = "/v1/admit";
	q.body = body;
	q.len = len;
	q.headers = hdrs;
	q.chunked = chunked;
	it_send(d, &q, &r);
	free(body);
	if (want != 200) {
		check_error(&r, want, line);
		return;
	}
	bad = bad_status(&r, want, line);
	it_response_free(&r);
	FAIL_IF(bad);
}

/* --max-body 4096: 4096 bytes pass, 4097 are 413, with or without a
 * Content-Length. */
static void
test_http_413(void **state)
{
	send_sized(*state, MAX_BODY, 0, 200, __LINE__);
	send_sized(*state, MAX_BODY + 1, 0, 413, __LINE__);
	send_sized(*state, MAX_BODY, 1, 200, __LINE__);
	send_sized(*state, MAX_BODY + 1, 1, 413, __LINE__);
	/* Far over the limit, chunked: still an answer, not a reset. */
	send_sized(*state, 20 * MAX_BODY, 1, 413, __LINE__);
}

static void
test_http_415(void **state)
{
	struct it_response r;
	char yaml[1024];

	job88(yaml, sizeof(yaml), NULL, NULL);
	post_as(*state, "/v1/admit", yaml, strlen(yaml), "image/png", NULL, &r);
	CHECK_ERROR(&r, 415);
}

/* POST yaml; expect 400 naming field at line:column (0: not checked). */
static void
check_400(const struct it_daemon *d, const char *body, const char *ctype,
    const char *field, int line, int column, const char *words, int at)
{
	struct it_response r;
	json_t *j;
	int bad;

	post_as(d, "/v1/admit", body, strlen(body), ctype, NULL, &r);
	j = it_json(&r);
	bad = bad_error(&r, j, 400, at);
	if (field != NULL)
		bad |= bad_str(j, "field", field, at);
	if (line > 0)
		bad |= bad_int(j, "line", line, at);
	if (column > 0)
		bad |= bad_int(j, "column", column, at);
	if (words != NULL)
		bad |= bad_has(json_string_value(json_object_get(j, "error")),
		    words, at);
	json_decref(j);
	it_response_free(&r);
	FAIL_IF(bad);
}

#define YAML "application/yaml"
#define HEAD_LINES \
	"apiVersion: memfloor.dev/v1\nkind: Job\n" \
	"metadata:\n  name: it-bad\nspec:\n  resources:\n    gpu:\n"

static void
test_http_400_unknown_field(void **state)
{
	/* Line 8 is "      minMemroy: 88Gi": the key at column 7. */
	check_400(*state, HEAD_LINES "      minMemroy: 88Gi\n", YAML,
	    "spec.resources.gpu.minMemroy", 8, 7, "unknown", __LINE__);
	check_400(*state,
	    "{\"apiVersion\": \"memfloor.dev/v1\", \"kind\": "
	    "\"Job\", \"metadata\": {\"name\": \"j\"}, \"spec\": "
	    "{\"resources\":"
	    " {\"gpu\": {\"minMemory\": \"88Gi\", \"cuont\": 2}}}}",
	    "application/json", "spec.resources.gpu.cuont", 0, 0, NULL,
	    __LINE__);
}

/*
 * An unknown key whose value is a block mapping: the error points at the
 * key, where the typo is ("  limit:", line 9, column 3), not at the first
 * line of its value ("    maxCost: 3", line 10).
 */
static void
test_http_400_unknown_field_line(void **state)
{
	check_400(*state,
	    HEAD_LINES "      minMemory: 88Gi\n  limit:\n"
	               "    maxCost: 3\n",
	    YAML, "spec.limit", 9, 3, "unknown", __LINE__);
}

static void
test_http_400_wrong_type(void **state)
{
	/* Line 9 "      count: two": the value starts at column 6 + 7 + 1. */
	check_400(*state,
	    HEAD_LINES "      minMemory: 88Gi\n      count: two\n", YAML,
	    "spec.resources.gpu.count", 9, 14, NULL, __LINE__);
	/* Line 8 "      minMemory: [88Gi]": column 6 + 11 + 1. */
	check_400(*state, HEAD_LINES "      minMemory: [88Gi]\n", YAML,
	    "spec.resources.gpu.minMemory", 8, 18, NULL, __LINE__);
}

static void
test_http_400_bad_quantity(void **state)
{
	/* Line 8 "      minMemory: 88Gx": the value at column 18. */
	check_400(*state, HEAD_LINES "      minMemory: 88Gx\n", YAML,
	    "spec.resources.gpu.minMemory", 8, 18, "88Gx", __LINE__);
	/* A sub-unit is no byte size (design 2). */
	check_400(*state, HEAD_LINES "      minMemory: 500m\n", YAML,
	    "spec.resources.gpu.minMemory", 8, 18, NULL, __LINE__);
}

static void
test_http_400_missing_name(void **state)
{
	check_400(*state,
	    "apiVersion: memfloor.dev/v1\nkind: Job\nmetadata:\n"
	    "  namespace: team-a\nspec:\n  resources:\n    gpu:\n"
	    "      minMemory: 88Gi\n",
	    YAML, "metadata.name", 0, 0, NULL, __LINE__);
	check_400(*state,
	    "apiVersion: memfloor.dev/v1\nkind: Job\nspec:\n"
	    "  resources:\n    gpu:\n      minMemory: 88Gi\n",
	    YAML, "metadata.name", 0, 0, NULL, __LINE__);
}

static void
test_http_400_negative_count(void **state)
{
	check_400(*state, HEAD_LINES "      minMemory: 88Gi\n      count: -1\n",
	    YAML, "spec.resources.gpu.count", 9, 14, NULL, __LINE__);
	check_400(*state, HEAD_LINES "      minMemory: 88Gi\n      count: 0\n",
	    YAML, "spec.resources.gpu.count", 9, 14, NULL, __LINE__);
}

static void
test_http_400_alias(void **state)
{
	/* The alias *q is on line 9, column 18. */
	check_400(*state,
	    "apiVersion: memfloor.dev/v1\nkind: Job\nmetadata:\n"
	    "  name: it-alias\n  annotations: {a: &q 88Gi}\nspec:\n"
	    "  resources:\n    gpu:\n      minMemory: *q\n",
	    YAML, NULL, 9, 18, "alias", __LINE__);
}

/* depth collections: the root mapping, metadata, then [ ... ] nested. */
static char *
nested(int depth)
{
	static const char head[] = "apiVersion: memfloor.dev/v1\nkind: Job\n"
	                           "metadata:\n  name: it-deep\n  labels: ";
	size_t n = sizeof(head) - 1, k = (size_t)depth - 2;
	char *buf = malloc(n + 2 * k + 64);

	assert_non_null(buf);
	memcpy(buf, head, n);
	memset(buf + n, '[', k);
	memset(buf + n + k, ']', k);
	snprintf(buf + n + 2 * k, 64, "\nspec: {}\n");
	return buf;
}

static void
test_http_400_nesting(void **state)
{
	struct it_response r;
	char *body;
	json_t *j;

	/* 65 levels: over the cap of 64; the brackets are on line 5. */
	body = nested(65);
	check_400(*state, body, YAML, NULL, 5, 0, "64", __LINE__);
	free(body);
	/* 64 levels: allowed by the parser; whatever else is wrong, it is
	 * not the nesting. */
	body = nested(64);
	post_as(*state, "/v1/admit", body, strlen(body), YAML, NULL, &r);
	j = it_json(&r);
	if (r.status == 400 &&
	    strstr(json_string_value(json_object_get(j, "error")), "deeper") !=
	        NULL) {
		print_error("64 levels refused: %s\n", r.body);
		fail();
	}
	json_decref(j);
	it_response_free(&r);
	free(body);
}

static void
test_http_400_json_nesting(void **state)
{
	char body[512];
	int n;

	n = snprintf(body, sizeof(body),
	    "{\"apiVersion\": \"memfloor.dev/v1\","
	    " \"kind\": \"Job\", \"metadata\": {\"name\": \"d\", \"labels\": ");
	for (int i = 0; i < 70; i++)
		body[n++] = '[';
	for (int i = 0; i < 70; i++)
		body[n++] = ']';
	snprintf(body + n, sizeof(body) - (size_t)n, "}}");
	check_400(*state, body, "application/json", NULL, 0, 0, NULL, __LINE__);
}

static void
test_http_400_invalid_json(void **state)
{
	check_400(*state, "{\"apiVersion\": \"memfloor.dev/v1\",",
	    "application/json", NULL, 0, 0, "JSON", __LINE__);
	/* Sniffed as JSON by its first byte when the type says nothing. */
	check_400(*state, "{\"apiVersion\": }", NULL, NULL, 0, 0, "JSON",
	    __LINE__);
}

/* --- output forms ---------------------------------------------------- */

/* The scalar at a dotted path of a YAML document, or NULL. */
static const char *
yaml_get(yaml_document_t *doc, const char *path)
{
	yaml_node_t *n = yaml_document_get_root_node(doc);
	char key[128];

	while (n != NULL && *path != '\0') {
		size_t len = strcspn(path, ".");
		yaml_node_pair_t *p;
		yaml_node_t *found = NULL;

		snprintf(key, sizeof(key), "%.*s", (int)len, path);
		path += len + (path[len] == '.');
		if (n->type != YAML_MAPPING_NODE)
			return NULL;
		for (p = n->data.mapping.pairs.start;
		     p < n->data.mapping.pairs.top && found == NULL; p++) {
			yaml_node_t *k = yaml_document_get_node(doc, p->key);

			if (k->type == YAML_SCALAR_NODE &&
			    strcmp((char *)k->data.scalar.value, key) == 0)
				found = yaml_document_get_node(doc, p->value);
		}
		n = found;
	}
	return n != NULL && n->type == YAML_SCALAR_NODE ?
	    (const char *)n->data.scalar.value :
	    NULL;
}

static void
check_yaml(yaml_document_t *doc, const char *path, const char *want, int line)
{
	const char *v = yaml_get(doc, path);

	if (v != NULL && strcmp(v, want) == 0)
		return;
	print_error("line %d: YAML %s is %s, want %s\n", line, path,
	    v ? v : "absent", want);
	fail();
}

static void
test_accept_yaml(void **state)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	struct it_response r;
	char yaml[1024];
	int ok;

	job88(yaml, sizeof(yaml), NULL, NULL);
	post_as(*state, "/v1/admit", yaml, strlen(yaml), YAML,
	    "application/yaml", &r);
	CHECK_STATUS(&r, 200);
	assert_string_equal(r.content_type, "application/yaml");
	assert_true(yaml_parser_initialize(&parser));
	yaml_parser_set_input_string(&parser, (unsigned char *)r.body, r.len);
	ok = yaml_parser_load(&parser, &doc);
	yaml_parser_delete(&parser);
	if (!ok) {
		print_error("not YAML:\n%s\n", r.body);
		fail();
	}
	check_yaml(&doc, "admitted", "true", __LINE__);
	check_yaml(&doc, "job", "it-88gi", __LINE__);
	check_yaml(&doc, "minMemory", "88Gi", __LINE__);
	check_yaml(&doc, "need.source", "minMemory", __LINE__);
	check_yaml(&doc, "need.minMemoryBytes", "94489280512", __LINE__);
	check_yaml(&doc, "placement.gpu", "FAST", __LINE__);
	yaml_document_delete(&doc);
	it_response_free(&r);
}

/* Each word of want in text, in that order. */
static void
check_in_order(const char *text, const char *const *want, size_t n, int line)
{
	const char *p = text;

	for (size_t i = 0; i < n; i++) {
		const char *q = strstr(p, want[i]);

		if (q == NULL) {
			print_error("line %d: %s not after position %td in:\n"
			            "%s\n",
			    line, want[i], p - text, text);
			fail();
		}
		p = q + strlen(want[i]);
	}
}

static void
test_accept_text(void **state)
{
	static const char *const order[] = { "\nFAST ", "\nMID ",
		"\nCHEAPHOUR ", "\nBIG " };
	struct it_response r;
	char yaml[1024];

	job88(yaml, sizeof(yaml), NULL, NULL);
	post_as(*state, "/v1/admit", yaml, strlen(yaml), YAML, "text/plain",
	    &r);
	CHECK_STATUS(&r, 200);
	assert_non_null(r.content_type);
	assert_int_equal(strncmp(r.content_type, "text/plain", 10), 0);
	assert_null(it_json(&r));
	CHECK_HAS(r.body, "it-88gi");
	check_in_order(r.body, order, 4, __LINE__);
	assert_null(strstr(r.body, "TINY"));
	assert_null(strstr(r.body, "NEAR"));
	CHECK_HAS(r.body, "36.00");
	it_response_free(&r);
}

/* --- read-only endpoints --------------------------------------------- */

static void
test_catalog_whole(void **state)
{
	struct it_response r;
	json_t *j, *g;
	size_t i;
	int seen = 0;

	j = get_json(*state, "/v1/catalog", &r);
	CHECK_STATUS(&r, 200);
	CHECK_INT(j, "version", 1);
	assert_true(json_is_string(json_object_get(j, "loadedAt")));
	CHECK_SIZE(j, "gpus", 6);
	json_array_foreach (json_object_get(j, "gpus"), i, g) {
		const char *name =
		    json_string_value(json_object_get(g, "name"));

		if (name != NULL && strcmp(name, "MID") == 0) {
			seen = 1;
			CHECK_INT(g, "memoryBytes", F88GI);
			CHECK_NUM(g, "hourlyPrice", 1.80, 1e-9);
			CHECK_NUM(g, "relativeThroughput", 0.5, 1e-9);
			/* The defaults: one node of 8, maxCount 8 x 1. */
			CHECK_INT(g, "gpusPerNode", 8);
			CHECK_INT(g, "maxNodes", 1);
			CHECK_INT(g, "maxCount", 8);
		}
	}
	assert_true(seen);
	CHECK_NUM(j, "interNodeEfficiency", 0.8, 1e-9);
	json_decref(j);
	it_response_free(&r);
}

static void
test_catalog_min_memory(void **state)
{
	struct it_response r;
	json_t *j;
	int bad;

	/*
	 * Cards of 88Gi and more by costPerReferenceHour = hourlyPrice /
	 * relativeThroughput: FAST 3.00 / 1.0 = 3.0, MID 1.80 / 0.5 = 3.6,
	 * CHEAPHOUR 1.00 / 0.25 = 4.0, BIG 10.00 / 2.0 = 5.0.  NEAR (94G) is
	 * 489,280,512 bytes short; MID (exactly 88Gi) is in.
	 */
	j = get_json(*state, "/v1/catalog?minMemory=88Gi", &r);
	CHECK_STATUS(&r, 200);
	CHECK_SIZE(j, "gpus", 4);
	CHECK_STR(j, "gpus.0.name", "FAST");
	CHECK_NUM(j, "gpus.0.costPerReferenceHour", 3.0, FRAC);
	CHECK_STR(j, "gpus.1.name", "MID");
	CHECK_NUM(j, "gpus.1.costPerReferenceHour", 3.6, FRAC);
	CHECK_STR(j, "gpus.2.name", "CHEAPHOUR");
	CHECK_NUM(j, "gpus.2.costPerReferenceHour", 4.0, FRAC);
	CHECK_STR(j, "gpus.3.name", "BIG");
	CHECK_NUM(j, "gpus.3.costPerReferenceHour", 5.0, FRAC);
	json_decref(j);
	it_response_free(&r);
	it_request(*state, "GET", "/v1/catalog?minMemory=88Gx", NULL, 0, NULL,
	    &r);
	j = it_json(&r);
	bad = bad_error(&r, j, 400, __LINE__) |
	    bad_str(j, "field", "minMemory", __LINE__);
	json_decref(j);
	it_response_free(&r);
	FAIL_IF(bad);
}

static void
test_catalog_text(void **state)
{
	static const char *const hdrs[] = { "Accept: text/plain", NULL };
	static const char *const order[] = { "\nFAST ", "\nMID ",
		"\nCHEAPHOUR ", "\nBIG " };
	struct it_response r;

	it_request(*state, "GET", "/v1/catalog?minMemory=88Gi", NULL, 0, hdrs,
	    &r);
	CHECK_STATUS(&r, 200);
	assert_int_equal(strncmp(r.content_type, "text/plain", 10), 0);
	check_in_order(r.body, order, 4, __LINE__);
	assert_null(strstr(r.body, "NEAR"));
	it_response_free(&r);
}

/* Shipped models: one ORG/NAME.json file each under the models dir. */
static size_t
count_models(const char *dir)
{
	struct dirent *e, *f;
	char sub[4096];
	size_t n = 0, len;
	DIR *d, *org;

	d = opendir(dir);
	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
		org = opendir(sub);
		if (org == NULL)
			continue;
		while ((f = readdir(org)) != NULL) {
			len = strlen(f->d_name);
			n += len > 5 &&
			    strcmp(f->d_name + len - 5, ".json") == 0;
		}
		closedir(org);
	}
	closedir(d);
	return n;
}

static void
test_models_list(void **state)
{
	size_t npub = sizeof(published) / sizeof(published[0]);
	size_t i, k, want = count_models(models_dir()), seen = 0;
	struct it_response r;
	json_t *j, *m;

	assert_true(want > 0);
	j = get_json(*state, "/v1/models", &r);
	CHECK_STATUS(&r, 200);
	CHECK_SIZE(j, "models", want);
	json_array_foreach (json_object_get(j, "models"), i, m) {
		const char *name =
		    json_string_value(json_object_get(m, "name"));

		assert_non_null(name);
		for (k = 0; k < npub; k++)
			if (strcmp(name, published[k].name) == 0) {
				CHECK_INT(m, "parameters",
				    published[k].parameters);
				seen++;
			}
	}
	assert_int_equal(seen, npub);
	json_decref(j);
	it_response_free(&r);
}

static void
test_health_ready(void **state)
{
	struct it_response r;

	it_request(*state, "GET", "/healthz", NULL, 0, NULL, &r);
	CHECK_STATUS(&r, 200);
	it_response_free(&r);
	it_request(*state, "GET", "/readyz", NULL, 0, NULL, &r);
	CHECK_STATUS(&r, 200);
	it_response_free(&r);
	it_request(*state, "HEAD", "/healthz", NULL, 0, NULL, &r);
	CHECK_STATUS(&r, 200);
	it_response_free(&r);
}

/* The value of one sample line ("name{labels} value") in /metrics. */
static double
metric(const struct it_daemon *d, const char *sample)
{
	struct it_response r;
	const char *p;
	size_t n = strlen(sample);
	double v = -1;

	if (it_request(d, "GET", "/metrics", NULL, 0, NULL, &r) == 0 &&
	    r.status == 200)
		for (p = r.body; p != NULL; p = strchr(p, '\n')) {
			p += *p == '\n';
			if (strncmp(p, sample, n) == 0 && p[n] == ' ') {
				v = strtod(p + n + 1, NULL);
				break;
			}
		}
	it_response_free(&r);
	return v;
}

/*
 * A request is counted when the daemon has finished with it, which may be
 * a moment after the client has its answer: wait for a count.
 */
static void
wait_metric(const struct it_daemon *d, const char *sample, double want,
    int line)
{
	long until = it_now_ms() + WAIT_MS;
	double v;

	while (
	    fabs((v = metric(d, sample)) - want) > 0.5 && it_now_ms() < until)
		it_sleep_ms(20);
	if (fabs(v - want) <= 0.5)
		return;
	print_error("line %d: %s is %g, want %g\n", line, sample, v, want);
	fail();
}

/* A count once requests still being finished are in it (-1: none yet). */
static double
settled_metric(const struct it_daemon *d, const char *sample)
{
	long until = it_now_ms() + WAIT_MS;
	double v, prev = metric(d, sample);

	for (;;) {
		it_sleep_ms(50);
		v = metric(d, sample);
		if (v == prev || it_now_ms() >= until)
			return v;
		prev = v;
	}
}

static void
test_metrics_counts(void **state)
{
	static const char healthz[] =
	    "memfloor_requests_total{route=\"/healthz\",code=\"200\"}";
	static const char admitted[] =
	    "memfloor_admissions_total{decision=\"admitted\"}";
	static const char rejected[] =
	    "memfloor_admissions_total{decision=\"rejected\"}";
	struct it_response r;
	double h0, a0, x0;
	char yaml[1024];

	h0 = settled_metric(*state, healthz);
	a0 = settled_metric(*state, admitted);
	x0 = settled_metric(*state, rejected);
	assert_true(a0 >= 0 && x0 >= 0);
	for (int i = 0; i < 3; i++) {
		it_request(*state, "GET", "/healthz", NULL, 0, NULL, &r);
		it_response_free(&r);
	}
	json_decref(admit(*state, job88(yaml, sizeof(yaml), NULL, NULL), &r));
	it_response_free(&r);
	json_decref(admit(*state,
	    job88(yaml, sizeof(yaml), NULL, "  limits:\n    maxCost: 1\n"),
	    &r));
	it_response_free(&r);
	/* Three more /healthz answers; h0 is -1 when none was counted yet. */
	wait_metric(*state, healthz, (h0 < 0 ? 0 : h0) + 3, __LINE__);
	wait_metric(*state, admitted, a0 + 1, __LINE__);
	wait_metric(*state, rejected, x0 + 1, __LINE__);
	/* And nothing more a moment later. */
	it_sleep_ms(100);
	assert_true(
	    fabs(metric(*state, healthz) - ((h0 < 0 ? 0 : h0) + 3)) < 0.5);
	assert_true(fabs(metric(*state, "memfloor_catalog_version") - 1) < 0.5);
	assert_true(
	    metric(*state,
	        "memfloor_requests_total{route=\"/v1/admit\",code=\"200\"}") >=
	    1);
	it_request(*state, "GET", "/metrics", NULL, 0, NULL, &r);
	assert_int_equal(strncmp(r.content_type, "text/plain", 10), 0);
	CHECK_HAS(r.body, "# TYPE memfloor_requests_total counter");
	/* Durations by route, with buckets up to the request deadline. */
	CHECK_HAS(r.body,
	    "memfloor_request_duration_seconds_bucket{route=\"/healthz\","
	    "le=\"10\"}");
	CHECK_HAS(r.body,
	    "memfloor_request_duration_seconds_count{route=\"/v1/admit\"}");
	CHECK_HAS(r.body, "memfloor_config_fetches_total{result=\"cached\"}");
	CHECK_HAS(r.body, "memfloor_tls_reloads_total{result=\"ok\"}");
	it_response_free(&r);
}

/*
 * GET /v1/schema: the Job's JSON Schema and, with ?kind=GpuCatalog, the
 * catalogue's; POST is 405 with Allow: GET, HEAD as for the other GET
 * routes; the requests are counted under their own route.
 */
static void
test_schema_route(void **state)
{
	struct it_response r;
	char allow[64];
	json_t *j, *when;

	j = get_json(*state, "/v1/schema", &r);
	CHECK_STATUS(&r, 200);
	assert_int_equal(strncmp(r.content_type, "application/json", 16), 0);
	CHECK_STR(j, "$schema", "https://json-schema.org/draft/2020-12/schema");
	CHECK_STR(j, "properties.kind.const", "Job");
	/* A field of design 19 and its default, from the table. */
	CHECK_STR(j,
	    "properties.spec.properties.workload.properties.loss.default",
	    "standard");
	/* concurrency applies only with kind: inference (its key has dots,
	 * which a path cannot name). */
	when = it_jpath(j,
	    "properties.spec.properties.workload.properties."
	    "concurrency.x-memfloor-when");
	assert_non_null(when);
	assert_string_equal(json_string_value(
	                        json_array_get(json_object_get(when,
	                                           "spec.workload.kind"),
	                            0)),
	    "inference");
	json_decref(j);
	it_response_free(&r);
	j = get_json(*state, "/v1/schema?kind=GpuCatalog", &r);
	CHECK_STATUS(&r, 200);
	CHECK_STR(j, "properties.kind.const", "GpuCatalog");
	CHECK_STR(j, "required.2", "gpus");
	json_decref(j);
	it_response_free(&r);
	it_request(*state, "POST", "/v1/schema", "{}", 2, NULL, &r);
	CHECK_STATUS(&r, 405);
	assert_string_equal(it_response_header(&r, "Allow", allow,
	                        sizeof(allow)),
	    "GET, HEAD");
	it_response_free(&r);
	wait_metric(*state,
	    "memfloor_requests_total{route=\"/v1/schema\",code=\"200\"}", 2,
	    __LINE__);
}

/* --- ties ------------------------------------------------------------ */

static void
test_admit_tie_break(void **state)
{
	struct it_daemon *d;
	struct it_response r;
	char cat[4096], yaml[1024];
	json_t *j;

	fixture(cat, sizeof(cat), "tie.yaml");
	d = it_daemon_start(
	    (const char *const[]){ "-f", cat, "-m", models_dir(), NULL });
	assert_non_null(d);
	*state = d;
	/*
	 * All three cost $24.00 (tie.yaml).  Zeta has the most spare
	 * memory; Alpha and Beta have the same, and Alpha wins on name.
	 */
	j = admit(d, job88(yaml, sizeof(yaml), NULL, NULL), &r);
	CHECK_STATUS(&r, 200);
	CHECK_ORDER(j, "Zeta", "Alpha", "Beta");
	CHECK_NUM(j, "placement.cost", 24.00, CENT);
	CHECK_NUM(j, "alternatives.0.cost", 24.00, CENT);
	CHECK_NUM(j, "alternatives.1.cost", 24.00, CENT);
	CHECK_NUM(j, "placement.spareFraction", 0.329863, FRAC);
	CHECK_NUM(j, "alternatives.0.spareFraction", 0.015736, FRAC);
	json_decref(j);
	it_response_free(&r);
}

/*
 * Same cost, same fixes, same spare memory (1/3), different GPU counts:
 * the placement on fewer GPUs wins (tests/data/it/tie-count.yaml works
 * out the figures).
 */
static void
test_admit_tie_fewer_gpus(void **state)
{
	static const char job[] =
	    "apiVersion: memfloor.dev/v1\n"
	    "kind: Job\n"
	    "metadata:\n"
	    "  name: it-fsdp\n"
	    "spec:\n"
	    "  model:\n"
	    "    config: {hidden_size: 4096, num_hidden_layers: 2,\n"
	    "      num_attention_heads: 4, intermediate_size: 8192,\n"
	    "      vocab_size: 1000, tie_word_embeddings: true}\n"
	    "  workload:\n"
	    "    sequenceLength: 1\n"
	    "  duration:\n"
	    "    referenceHours: 12\n"
	    "  allowedFixes: [fsdp]\n";
	struct it_daemon *d;
	struct it_response r;
	char cat[4096];
	json_t *j;

	fixture(cat, sizeof(cat), "tie-count.yaml");
	d = it_daemon_start(
	    (const char *const[]){ "-f", cat, "-m", models_dir(), NULL });
	assert_non_null(d);
	*state = d;
	j = admit(d, job, &r);
	CHECK_STATUS(&r, 200);
	CHECK_STR(j, "need.source", "model");
	CHECK_INT(j, "need.perGpuBytes", INT64_C(3388690336));
	CHECK_ORDER(j, "Zulu2", "Alpha4");
	CHECK_INT(j, "placement.count", 2);
	CHECK_STR(j, "placement.fixes.0", "fsdp");
	CHECK_NUM(j, "placement.cost", 24.00, CENT);
	CHECK_NUM(j, "placement.hours", 3.0, MILLI);
	CHECK_NUM(j, "placement.spareFraction", 1.0 / 3, FRAC);
	CHECK_INT(j, "alternatives.0.count", 4);
	CHECK_NUM(j, "alternatives.0.cost", 24.00, CENT);
	CHECK_NUM(j, "alternatives.0.spareFraction", 1.0 / 3, FRAC);
	json_decref(j);
	it_response_free(&r);
}

/* --- memfloord -n ---------------------------------------------------- */

static void
test_check_config(void **state)
{
	char cat[4096], bad[4096], *out;
	int rc;

	(void)state;
	fixture(cat, sizeof(cat), "place.yaml");
	rc = it_run((const char *const[]){ it_memfloord(), "-n", "-f", cat,
	                "-m", models_dir(), NULL },
	    10000, &out);
	assert_non_null(out);
	if (rc != 0 || strcmp(out, "configuration OK\n") != 0) {
		print_error("exit %d, said:\n%s\n", rc, out);
		fail();
	}
	free(out);
	/* bad.yaml line 12: "    memory: 141Gx" of gpus[1]. */
	fixture(bad, sizeof(bad), "bad.yaml");
	rc = it_run((const char *const[]){ it_memfloord(), "-n", "-f", bad,
	                "-m", models_dir(), NULL },
	    10000, &out);
	assert_non_null(out);
	if (rc == 0 || strncmp(out, "bad.yaml:12: ", 13) != 0 ||
	    strstr(out, "gpus[1].memory") == NULL ||
	    strstr(out, "configuration OK") != NULL) {
		print_error("exit %d, said:\n%s\n", rc, out);
		fail();
	}
	free(out);
}

/* --- reloads under load ---------------------------------------------- */

/* A client that admits the 88Gi job in a loop and checks every answer
 * against the placements of the valid catalogues. */
struct loop {
	const struct it_daemon *d;
	pthread_t thread;
	int running;
	atomic_int stop;
	atomic_int requests;
	atomic_int failures;
	char first_failure[1024];
	char job[1024];
};

static struct loop loop;
static struct it_daemon *own;

/* FAST $36.00 under place.yaml, MID $43.20 under place-b.yaml. */
static int
valid_answer(const struct it_response *r, char *why, size_t size)
{
	const char *gpu;
	double cost;
	json_t *j;
	int ok;

	if (r->status != 200) {
		snprintf(why, size, "status %ld (%s): %.300s", r->status,
		    r->error, r->body ? r->body : "");
		return 0;
	}
	j = it_json(r);
	gpu = json_string_value(it_jpath(j, "placement.gpu"));
	cost = json_number_value(it_jpath(j, "placement.cost"));
	ok = gpu != NULL &&
	    ((strcmp(gpu, "FAST") == 0 && fabs(cost - 36.00) < CENT) ||
	        (strcmp(gpu, "MID") == 0 && fabs(cost - 43.20) < CENT));
	if (!ok)
		snprintf(why, size, "unexpected answer: %.300s", r->body);
	json_decref(j);
	return ok;
}

static void *
loop_run(void *arg)
{
	static const char *const hdrs[] = { "Content-Type: application/yaml",
		NULL };
	struct loop *l = arg;
	struct it_response r;
	char why[512];

	while (!atomic_load(&l->stop)) {
		it_request(l->d, "POST", "/v1/admit", l->job, strlen(l->job),
		    hdrs, &r);
		if (!valid_answer(&r, why, sizeof(why)) &&
		    atomic_fetch_add(&l->failures, 1) == 0)
			snprintf(l->first_failure, sizeof(l->first_failure),
			    "%s", why);
		atomic_fetch_add(&l->requests, 1);
		it_response_free(&r);
		it_sleep_ms(2);
	}
	return NULL;
}

static void
loop_start(const struct it_daemon *d)
{
	memset(&loop, 0, sizeof(loop));
	loop.d = d;
	job88(loop.job, sizeof(loop.job), NULL, NULL);
	assert_int_equal(pthread_create(&loop.thread, NULL, loop_run, &loop),
	    0);
	loop.running = 1;
}

static void
loop_stop(void)
{
	if (!loop.running)
		return;
	atomic_store(&loop.stop, 1);
	pthread_join(loop.thread, NULL);
	loop.running = 0;
}

static void
check_loop(int min_requests)
{
	loop_stop();
	if (atomic_load(&loop.failures) != 0) {
		print_error("%d of %d requests failed during reloads; first: "
		            "%s\n",
		    atomic_load(&loop.failures), atomic_load(&loop.requests),
		    loop.first_failure);
		fail();
	}
	if (atomic_load(&loop.requests) < min_requests) {
		print_error("only %d requests during reloads\n",
		    atomic_load(&loop.requests));
		fail();
	}
}

static int
teardown_own(void **state)
{
	int rc;

	(void)state;
	loop_stop();
	rc = it_daemon_finish(own, WAIT_MS);
	own = NULL;
	return rc;
}

static long long
catalog_version(const struct it_daemon *d)
{
	struct it_response r;
	long long v = -1;
	json_t *j;

	if (it_request(d, "GET", "/v1/catalog", NULL, 0, NULL, &r) == 0) {
		j = it_json(&r);
		if (json_is_integer(json_object_get(j, "version")))
			v = json_integer_value(json_object_get(j, "version"));
		json_decref(j);
	}
	it_response_free(&r);
	return v;
}

static void
wait_version(const struct it_daemon *d, long long want, int line)
{
	long until = it_now_ms() + WAIT_MS;
	long long v;

	while ((v = catalog_version(d)) != want && it_now_ms() < until)
		it_sleep_ms(20);
	if (v == want)
		return;
	print_error("line %d: catalogue version %lld, want %lld\n", line, v,
	    want);
	fail();
}

/* The placement of the 88Gi job now. */
static void
check_placed(const struct it_daemon *d, const char *gpu, double cost, int line)
{
	struct it_response r;
	char yaml[1024];
	json_t *j;

	int bad;

	j = admit(d, job88(yaml, sizeof(yaml), NULL, NULL), &r);
	bad = bad_status(&r, 200, line) |
	    bad_str(j, "placement.gpu", gpu, line) |
	    bad_num(j, "placement.cost", cost, CENT, line);
	json_decref(j);
	it_response_free(&r);
	FAIL_IF(bad);
}

#define RELOAD_ERRORS "memfloor_catalog_reloads_total{result=\"error\"}"
#define RELOAD_OK "memfloor_catalog_reloads_total{result=\"ok\"}"

static struct it_daemon *
start_watched(const char *catalog)
{
	struct it_daemon *d;

	/* -v logs when the watch is in place: only then is a change seen. */
	d = it_daemon_start((const char *const[]){ "-v", "-f", catalog, "-m",
	    models_dir(), "--threads", "2", NULL });
	assert_non_null(d);
	if (it_daemon_log_wait(d, "watching", 1, WAIT_MS) != 0) {
		char *log = it_daemon_log(d);

		print_error("no watch; log:\n%s\n", log);
		free(log);
		fail();
	}
	return d;
}

static void
test_reload_file(void **state)
{
	char path[4096], a[4096], b[4096], bad[4096];
	const char *dir = it_tmpdir();

	(void)state;
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/gpus.yaml", dir);
	fixture(a, sizeof(a), "place.yaml");
	fixture(b, sizeof(b), "place-b.yaml");
	fixture(bad, sizeof(bad), "bad.yaml");
	assert_int_equal(it_copy_file(a, path), 0);
	own = start_watched(path);
	assert_int_equal(catalog_version(own), 1);
	loop_start(own);

	/* (a) a valid new catalogue renamed over the file. */
	assert_int_equal(it_copy_file(b, path), 0);
	wait_version(own, 2, __LINE__);
	check_placed(own, "MID", 43.20, __LINE__);
	wait_metric(own, RELOAD_OK, 1, __LINE__);

	/* (b) an invalid one: counted, logged, the old one stays. */
	assert_true(fabs(metric(own, "memfloor_catalog_file_invalid")) < 0.5);
	assert_int_equal(it_copy_file(bad, path), 0);
	wait_metric(own, RELOAD_ERRORS, 1, __LINE__);
	/* And the gauge says the file on disk is the bad one. */
	assert_true(
	    fabs(metric(own, "memfloor_catalog_file_invalid") - 1) < 0.5);
	assert_int_equal(catalog_version(own), 2);
	check_placed(own, "MID", 43.20, __LINE__);
	/* The log names the file and line of the problem. */
	assert_int_equal(it_daemon_log_wait(own, "gpus.yaml:12", 1, WAIT_MS),
	    0);

	/* (d) SIGHUP re-reads the file: still invalid, still version 2. */
	assert_int_equal(it_daemon_signal(own, SIGHUP), 0);
	wait_metric(own, RELOAD_ERRORS, 2, __LINE__);
	assert_int_equal(catalog_version(own), 2);

	/* Valid again, then SIGHUP with nothing changed: a new version. */
	assert_int_equal(it_copy_file(a, path), 0);
	wait_version(own, 3, __LINE__);
	assert_true(fabs(metric(own, "memfloor_catalog_file_invalid")) < 0.5);
	check_placed(own, "FAST", 36.00, __LINE__);
	assert_int_equal(it_daemon_signal(own, SIGHUP), 0);
	wait_version(own, 4, __LINE__);
	assert_int_equal(it_daemon_log_wait(own, "(SIGHUP)", 2, WAIT_MS), 0);
	check_placed(own, "FAST", 36.00, __LINE__);
	/* ok: a, valid again, SIGHUP; error: bad file, SIGHUP on it. */
	wait_metric(own, RELOAD_OK, 3, __LINE__);
	wait_metric(own, RELOAD_ERRORS, 2, __LINE__);
	assert_true(fabs(metric(own, "memfloor_catalog_version") - 4) < 0.5);
	check_loop(20);
}

/*
 * The layout of a Kubernetes ConfigMap volume: DIR/gpus.yaml is a link to
 * ..data/gpus.yaml, ..data a link to a timestamped directory.  An update
 * writes a new timestamped directory, points a new link at it and renames
 * that link over ..data, then removes the old directory.
 */
static void
configmap_version(const char *dir, const char *stamp, const char *from)
{
	char sub[2048], file[4096], tmp[4096], data[4096];

	snprintf(sub, sizeof(sub), "%s/%s", dir, stamp);
	snprintf(file, sizeof(file), "%s/gpus.yaml", sub);
	snprintf(tmp, sizeof(tmp), "%s/..data_tmp", dir);
	snprintf(data, sizeof(data), "%s/..data", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(it_copy_file(from, file), 0);
	assert_int_equal(symlink(stamp, tmp), 0);
	assert_int_equal(rename(tmp, data), 0);
}

static void
test_reload_configmap(void **state)
{
	char path[4096], a[4096], b[4096], old[4096];
	const char *dir = it_tmpdir();

	(void)state;
	assert_non_null(dir);
	fixture(a, sizeof(a), "place.yaml");
	fixture(b, sizeof(b), "place-b.yaml");
	configmap_version(dir, "..2026_01_01_00_00_00.000000001", a);
	snprintf(path, sizeof(path), "%s/gpus.yaml", dir);
	assert_int_equal(symlink("..data/gpus.yaml", path), 0);
	own = start_watched(path);
	assert_int_equal(catalog_version(own), 1);
	check_placed(own, "FAST", 36.00, __LINE__);
	loop_start(own);

	configmap_version(dir, "..2026_01_01_00_05_00.000000002", b);
	snprintf(old, sizeof(old), "%s/..2026_01_01_00_00_00.000000001", dir);
	assert_int_equal(it_rmtree(old), 0);
	wait_version(own, 2, __LINE__);
	check_placed(own, "MID", 43.20, __LINE__);
	/* And once more, back to the first catalogue. */
	configmap_version(dir, "..2026_01_01_00_10_00.000000003", a);
	wait_version(own, 3, __LINE__);
	check_placed(own, "FAST", 36.00, __LINE__);
	check_loop(10);
}

/* --- draining on SIGTERM --------------------------------------------- */

#define SLOW_CLIENTS 4
#define SLOW_LEN 1500

struct slow {
	pthread_t thread;
	int started;
	atomic_size_t sent;
	struct it_req q;
	struct it_response r;
};

static struct slow slow[SLOW_CLIENTS];
static char *slow_body;

static void *
slow_run(void *arg)
{
	struct slow *s = arg;

	it_send(own, &s->q, &s->r);
	return NULL;
}

static int
teardown_slow(void **state)
{
	for (int i = 0; i < SLOW_CLIENTS; i++)
		if (slow[i].started) {
			pthread_join(slow[i].thread, NULL);
			it_response_free(&slow[i].r);
			slow[i].started = 0;
		}
	free(slow_body);
	slow_body = NULL;
	return teardown_own(state);
}

static void
slow_start(void)
{
	static const char *const hdrs[] = { "Content-Type: application/yaml",
		NULL };

	slow_body = padded_job(SLOW_LEN);
	for (int i = 0; i < SLOW_CLIENTS; i++) {
		struct slow *s = &slow[i];

		memset(&s->q, 0, sizeof(s->q));
		atomic_store(&s->sent, 0);
		s->q.method = "POST";
		s->q.path = "/v1/admit";
		s->q.body = slow_body;
		s->q.len = SLOW_LEN;
		s->q.headers = hdrs;
		/* 15 pieces of 100 bytes, 100 ms apart: about 1.5 s, so
		 * that a loaded machine still signals mid-body. */
		s->q.piece = 100;
		s->q.delay_ms = 100;
		s->q.sent = &s->sent;
		s->q.timeout_ms = 20000;
		assert_int_equal(pthread_create(&s->thread, NULL, slow_run, s),
		    0);
		s->started = 1;
	}
}

/* The slow clients still sending their body. */
static int
mid_body(void)
{
	int n = 0;

	for (int i = 0; i < SLOW_CLIENTS; i++)
		n += atomic_load(&slow[i].sent) < SLOW_LEN;
	return n;
}

static void
test_sigterm_drains(void **state)
{
	char cat[4096], why[512];
	long until;
	int port, rc;

	(void)state;
	fixture(cat, sizeof(cat), "place.yaml");
	own = it_daemon_start((const char *const[]){ "-f", cat, "-m",
	    models_dir(), "--threads", "4", NULL });
	assert_non_null(own);
	port = it_daemon_port(own);
	slow_start();
	/* Every client is part-way through its body. */
	until = it_now_ms() + WAIT_MS;
	for (int i = 0; i < SLOW_CLIENTS; i++)
		while (atomic_load(&slow[i].sent) < 300 && it_now_ms() < until)
			it_sleep_ms(5);
	for (int i = 0; i < SLOW_CLIENTS; i++)
		assert_true(atomic_load(&slow[i].sent) >= 300);
	/* The signal must find a body part-way; the test is void else. */
	assert_true(mid_body() > 0);
	assert_int_equal(it_daemon_signal(own, SIGTERM), 0);
	assert_int_equal(it_daemon_log_wait(own, "draining", 1, WAIT_MS), 0);
	/* Not accepting any more (the listening socket goes right after
	 * that line)... */
	until = it_now_ms() + WAIT_MS;
	while (it_can_connect(port) && it_now_ms() < until)
		it_sleep_ms(10);
	assert_false(it_can_connect(port));
	/* ...but every request in flight gets its answer. */
	for (int i = 0; i < SLOW_CLIENTS; i++) {
		pthread_join(slow[i].thread, NULL);
		slow[i].started = 0;
		if (!valid_answer(&slow[i].r, why, sizeof(why))) {
			print_error("client %d: %s\n", i, why);
			fail();
		}
		it_response_free(&slow[i].r);
	}
	rc = it_daemon_wait(own, WAIT_MS);
	assert_int_equal(rc, 0);
	assert_true(it_daemon_log_count(own, "status=200") >= SLOW_CLIENTS);
	assert_true(it_daemon_log_count(own, "stopped") == 1);
}

static void
test_sigint_exits(void **state)
{
	char cat[4096];

	(void)state;
	fixture(cat, sizeof(cat), "place.yaml");
	own = it_daemon_start(
	    (const char *const[]){ "-f", cat, "-m", models_dir(), NULL });
	assert_non_null(own);
	assert_int_equal(it_daemon_signal(own, SIGINT), 0);
	assert_int_equal(it_daemon_wait(own, WAIT_MS), 0);
}

int
main(void)
{
	const struct CMUnitTest shared[] = {
		cmocka_unit_test(test_admit_cheapest_to_finish),
		cmocka_unit_test(test_admit_json_body),
		cmocka_unit_test(test_admit_floor_above_every_card),
		cmocka_unit_test(test_limit_max_hourly_price),
		cmocka_unit_test(test_limit_max_cost),
		cmocka_unit_test(test_limit_deadline),
		cmocka_unit_test(test_admit_count_two),
		cmocka_unit_test(test_admit_canonical_floor),
		cmocka_unit_test(test_http_404),
		cmocka_unit_test(test_http_405),
		cmocka_unit_test(test_http_411),
		cmocka_unit_test(test_http_413),
		cmocka_unit_test(test_http_415),
		cmocka_unit_test(test_http_400_unknown_field),
		cmocka_unit_test(test_http_400_unknown_field_line),
		cmocka_unit_test(test_http_400_wrong_type),
		cmocka_unit_test(test_http_400_bad_quantity),
		cmocka_unit_test(test_http_400_missing_name),
		cmocka_unit_test(test_http_400_negative_count),
		cmocka_unit_test(test_http_400_alias),
		cmocka_unit_test(test_http_400_nesting),
		cmocka_unit_test(test_http_400_json_nesting),
		cmocka_unit_test(test_http_400_invalid_json),
		cmocka_unit_test(test_accept_yaml),
		cmocka_unit_test(test_accept_text),
		cmocka_unit_test(test_catalog_whole),
		cmocka_unit_test(test_catalog_min_memory),
		cmocka_unit_test(test_catalog_text),
		cmocka_unit_test(test_models_list),
		cmocka_unit_test(test_schema_route),
		cmocka_unit_test(test_health_ready),
		cmocka_unit_test(test_metrics_counts),
	};
	const struct CMUnitTest own_daemon[] = {
		cmocka_unit_test_teardown(test_admit_tie_break, stop_place),
		cmocka_unit_test_teardown(test_admit_tie_fewer_gpus,
		    stop_place),
		cmocka_unit_test(test_check_config),
		cmocka_unit_test_teardown(test_reload_file, teardown_own),
		cmocka_unit_test_teardown(test_reload_configmap, teardown_own),
		cmocka_unit_test_teardown(test_sigterm_drains, teardown_slow),
		cmocka_unit_test_teardown(test_sigint_exits, teardown_own),
	};
	int failed;

	failed = cmocka_run_group_tests_name("it_admit: one daemon", shared,
	    start_place, stop_place);
	failed += cmocka_run_group_tests_name("it_admit: own daemons",
	    own_daemon, NULL, NULL);
	it_cleanup();
	return failed == 0 ? 0 : 1;
}
