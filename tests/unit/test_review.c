/*
 * test_review.c: the Kubernetes AdmissionReview endpoint (design 11).
 *
 * Inputs are the real AdmissionReview samples of shared/testdata/admission
 * copied to tests/data/review/ with memfloor's annotations added, and
 * examples/k8s-admissionreview.json.  Decisions use the shipped cards as
 * design 6 times them (DESIGN6 below) and the shipped models; files are
 * found under $MF_TOP (the repository root; "." when unset).
 *
 * Cost per reference hour of one card (price / relativeThroughput), the
 * ranking key when a job has no referenceHours (design 6):
 *   RTX-A4000 16G   0.173 / 0.0775 = 2.232
 *   B200     180G   5.50  / 2.274  = 2.419
 *   RTX-3090  24G   0.180 / 0.0718 = 2.507
 *   RTX-4090  24G   0.44  / 0.167  = 2.635
 *   RTX-PRO-6000 96G 1.35 / 0.509  = 2.652
 *   L40S      48G   0.99  / 0.366  = 2.705
 *   H100 80G 2.99, RTX-A6000 3.14, H200 141G 3.50, L4 3.61, A100s > 4
 * So a floor of at most 16G goes to the RTX-A4000 and any larger floor up
 * to 180G to the B200.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "api.h"
#include "base/qty.h"
#include "doc/doc.h"
#include "fingerprint/fingerprint.h"
#include "manifest/manifest.h"
#include "model/model.h"
#include "place/place.h"
#include "review/review.h"
#include "catalog.h"
#include "files.h"
#include "msg.h"

#define DATA "tests/data/review/"

static struct mf_catalog *cat;
/* The shipped cards as design 6 times them (each by its
 * relativeThroughput: tests/data/catalog/design6.yaml), which the
 * figures below are worked out on. */
#define DESIGN6 "tests/data/catalog/design6.yaml"

static struct mf_catalog *cat_memory; /* the shipped one, select: memory */
static struct mf_models *models;

/* --- helpers ------------------------------------------------------------ */

/* The shipped catalogue with "kubernetes: {select: memory}" added. */
static int
load_memory_catalog(void)
{
	static const char add[] = "kubernetes:\n  select: memory\n";
	struct mf_error err;
	char path[512], *text, *both;
	size_t len = 0;
	enum mf_rc rc;

	text = slurp(top_path(path, sizeof(path), DESIGN6), &len);
	if (text == NULL)
		return -1;
	both = malloc(len + sizeof(add));
	if (both == NULL) {
		free(text);
		return -1;
	}
	memcpy(both, text, len);
	memcpy(both + len, add, sizeof(add));
	rc = mf_cat_parse(both, strlen(both), "gpus.yaml", &cat_memory, &err);
	free(text);
	free(both);
	if (rc != MF_OK)
		print_error("%s\n", MSG(&err));
	return rc == MF_OK && cat_memory->k8s_select == MF_K8S_SELECT_MEMORY ?
	    0 :
	    -1;
}

static int
setup(void **state)
{
	struct mf_error err;
	char path[512];

	(void)state;
	if (mf_cat_load(top_path(path, sizeof(path), DESIGN6), &cat, &err) !=
	        MF_OK ||
	    mf_models_load(top_path(path, sizeof(path), "catalog/models"),
	        &models, &err) != MF_OK) {
		print_error("%s\n", MSG(&err));
		return -1;
	}
	/*
	 * The figures here (need, fixes, messages) are the post's arithmetic
	 * (design 5); a review uses its catalogue's estimator, and the
	 * shipped one's is pytorch.
	 */
	cat->estimator = MF_EST_POST;
	if (load_memory_catalog() != 0)
		return -1;
	cat_memory->estimator = MF_EST_POST;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	mf_cat_unref(cat);
	mf_cat_unref(cat_memory);
	mf_models_free(models);
	return 0;
}

static json_t *
load(const char *rel)
{
	json_error_t jerr;
	char path[512];
	json_t *j;

	j = json_load_file(top_path(path, sizeof(path), rel), 0, &jerr);
	if (j == NULL)
		print_error("%s: %s\n", rel, jerr.text);
	assert_non_null(j);
	return j;
}

/* request.object of a review */
static json_t *
object_of(json_t *review)
{
	return json_object_get(json_object_get(review, "request"), "object");
}

/* request.object.metadata.annotations of a review */
static json_t *
annotations(json_t *review)
{
	json_t *a =
	    json_object_get(json_object_get(object_of(review), "metadata"),
	        "annotations");

	assert_non_null(a);
	return a;
}

static void
annotate(json_t *review, const char *key, const char *value)
{
	assert_int_equal(json_object_set_new(annotations(review), key,
	                     json_string(value)),
	    0);
}

/* Send text; the answer must be JSON. */
static json_t *
send_text(const char *text, size_t len, struct mf_answer *ans)
{
	struct mf_api api = { .cat = cat, .models = models };
	json_error_t jerr;
	json_t *j;

	mf_api_review(&api, text, len, MF_DOC_JSON, MF_OUT_JSON, ans);
	assert_non_null(ans->body);
	assert_string_equal(ans->content_type, "application/json");
	j = json_loadb(ans->body, ans->len, 0, &jerr);
	assert_non_null(j);
	return j;
}

/* Send review (kept); the answer is a 200 AdmissionReview for uid. */
static json_t *
send_review(json_t *review, struct mf_answer *ans)
{
	char *text = json_dumps(review, 0);
	const char *uid;
	json_t *j, *resp;

	assert_non_null(text);
	j = send_text(text, strlen(text), ans);
	free(text);
	assert_int_equal(ans->kind, MF_ANS_OK);
	assert_string_equal(json_string_value(json_object_get(j, "apiVersion")),
	    "admission.k8s.io/v1");
	assert_string_equal(json_string_value(json_object_get(j, "kind")),
	    "AdmissionReview");
	resp = json_object_get(j, "response");
	assert_non_null(resp);
	uid = json_string_value(
	    json_object_get(json_object_get(review, "request"), "uid"));
	assert_string_equal(json_string_value(json_object_get(resp, "uid")),
	    uid);
	return j;
}

static json_t *
response(json_t *answer)
{
	return json_object_get(answer, "response");
}

static int
b64_value(int c)
{
	const char *tab = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	                  "0123456789+/";
	const char *p = c != 0 ? strchr(tab, c) : NULL;

	return p != NULL ? (int)(p - tab) : -1;
}

/* RFC 4648 base64 with padding, decoded independently of the code. */
static char *
b64_decode(const char *s)
{
	size_t n = strlen(s), o = 0;
	char *out;

	assert_int_equal(n % 4, 0);
	out = malloc(n / 4 * 3 + 1);
	assert_non_null(out);
	for (size_t i = 0; i < n; i += 4) {
		int v[4];

		for (int k = 0; k < 4; k++) {
			v[k] = s[i + k] == '=' ? 0 : b64_value(s[i + k]);
			assert_true(v[k] >= 0);
		}
		out[o++] = (char)(v[0] << 2 | v[1] >> 4);
		if (s[i + 2] != '=')
			out[o++] = (char)((v[1] & 15) << 4 | v[2] >> 2);
		if (s[i + 3] != '=')
			out[o++] = (char)((v[2] & 3) << 6 | v[3]);
	}
	out[o] = '\0';
	return out;
}

/* The decoded JSON Patch of an allowed answer. */
static json_t *
patch_of(json_t *answer, char **raw)
{
	json_t *resp = response(answer), *patch;
	json_error_t jerr;
	char *text;

	assert_true(json_is_true(json_object_get(resp, "allowed")));
	assert_string_equal(json_string_value(
	                        json_object_get(resp, "patchType")),
	    "JSONPatch");
	text = b64_decode(json_string_value(json_object_get(resp, "patch")));
	patch = json_loads(text, 0, &jerr);
	assert_non_null(patch);
	assert_true(json_is_array(patch));
	if (raw != NULL)
		*raw = text;
	else
		free(text);
	return patch;
}

static json_t *
find_op(json_t *patch, const char *path)
{
	size_t i;
	json_t *o;

	json_array_foreach (patch, i, o)
		if (strcmp(json_string_value(json_object_get(o, "path")),
		        path) == 0)
			return o;
	return NULL;
}

/* How many ops of the patch have a path that starts with prefix. */
static size_t
ops_under(json_t *patch, const char *prefix)
{
	size_t i, n = 0;
	json_t *o;

	json_array_foreach (patch, i, o)
		n += strncmp(json_string_value(json_object_get(o, "path")),
		         prefix, strlen(prefix)) == 0;
	return n;
}

/* The patch has exactly one op at path: verb with value (JSON text). */
static void
expect_op(json_t *patch, const char *verb, const char *path, const char *value)
{
	json_t *o = find_op(patch, path), *want;

	if (o == NULL)
		print_error("no op at %s\n", path);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "op")), verb);
	if (value == NULL) {
		assert_null(json_object_get(o, "value"));
		return;
	}
	want = json_loads(value, JSON_DECODE_ANY, NULL);
	assert_non_null(want);
	assert_true(json_equal(json_object_get(o, "value"), want));
	json_decref(want);
}

static int
has_warning(json_t *answer, const char *part)
{
	json_t *w = json_object_get(response(answer), "warnings"), *s;
	size_t i;

	json_array_foreach (w, i, s)
		if (strstr(json_string_value(s), part) != NULL)
			return 1;
	return 0;
}

static void
expect_warnings_short(json_t *answer)
{
	json_t *w = json_object_get(response(answer), "warnings"), *s;
	size_t i;

	json_array_foreach (w, i, s)
		assert_true(strlen(json_string_value(s)) < 120);
}

static void
expect_unchanged(json_t *answer)
{
	json_t *resp = response(answer);

	assert_true(json_is_true(json_object_get(resp, "allowed")));
	assert_null(json_object_get(resp, "patch"));
	assert_null(json_object_get(resp, "patchType"));
	assert_null(json_object_get(resp, "status"));
}

/* The denial's status code; its message goes to *message (borrowed). */
static int
denial(json_t *answer, const char **message)
{
	json_t *resp = response(answer), *st = json_object_get(resp, "status");

	assert_true(json_is_false(json_object_get(resp, "allowed")));
	assert_null(json_object_get(resp, "patch"));
	assert_non_null(st);
	*message = json_string_value(json_object_get(st, "message"));
	assert_non_null(*message);
	assert_true(strlen(*message) <= 1000);
	return (int)json_integer_value(json_object_get(st, "code"));
}

/* --- pass-through ----------------------------------------------------- */

/* The unannotated kube-rs sample is allowed exactly as it came. */
static void
test_review_passthrough_without_annotations(void **state)
{
	json_t *rv = load(DATA "pod-plain.json"), *a;
	struct mf_answer ans;

	(void)state;
	a = send_review(rv, &ans);
	expect_unchanged(a);
	assert_null(json_object_get(response(a), "warnings"));
	assert_string_equal(ans.job, "echo-pod");
	assert_int_equal(ans.verdict, MF_VERDICT_NONE);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* The k8s.io/api all-fields fixture: a custom kind, operation
 * "operationValue", dryRun: valid, so allowed unchanged. */
static void
test_review_passthrough_other_kind(void **state)
{
	json_t *rv = load(DATA "allfields.json"), *a;
	struct mf_answer ans;

	(void)state;
	a = send_review(rv, &ans);
	expect_unchanged(a);
	assert_string_equal(ans.job, "nameValue");
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* Annotated, but DELETE with no object: nothing to place. */
static void
test_review_passthrough_delete(void **state)
{
	json_t *rv = load(DATA "pod-delete.json"), *a;
	struct mf_answer ans;

	(void)state;
	a = send_review(rv, &ans);
	expect_unchanged(a);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* An annotated Pod seen through a subresource (pods/status). */
static void
test_review_passthrough_subresource(void **state)
{
	json_t *rv = load(DATA "pod-min-memory.json"), *a;
	struct mf_answer ans;

	(void)state;
	json_object_set_new(json_object_get(rv, "request"), "subResource",
	    json_string("status"));
	json_object_set_new(json_object_get(rv, "request"), "operation",
	    json_string("UPDATE"));
	a = send_review(rv, &ans);
	expect_unchanged(a);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* A Deployment with the annotation is no Pod or Job. */
static void
test_review_passthrough_deployment(void **state)
{
	json_t *rv = load(DATA "pod-min-memory.json"), *a;
	struct mf_answer ans;

	(void)state;
	json_object_set_new(json_object_get(rv, "request"), "kind",
	    json_pack("{s:s, s:s, s:s}", "group", "apps", "version", "v1",
	        "kind", "Deployment"));
	a = send_review(rv, &ans);
	expect_unchanged(a);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* --- admitted: the patch -------------------------------------------------- */

/*
 * min-memory 88Gi = 94,489,280,512 bytes: RTX-PRO-6000 (96G), H200 and
 * B200 hold it; the B200 is cheapest per reference hour (2.419).  The pod
 * has no nodeSelector: one add of the whole map.  Its container has
 * "resources": {} and so gets a limits and a requests object, equal.  The
 * annotation exists, so min-memory is replaced; no referenceHours, so no cost.
 */
static void
test_review_pod_creates_node_selector(void **state)
{
	json_t *rv = load(DATA "pod-min-memory.json"), *a, *patch;
	struct mf_answer ans;

	(void)state;
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	assert_int_equal(json_array_size(patch), 6);
	expect_op(patch, "add", "/spec/nodeSelector",
	    "{\"nvidia.com/gpu.product\": \"NVIDIA-B200\"}");
	expect_op(patch, "add", "/spec/containers/0/resources/limits",
	    "{\"nvidia.com/gpu\": \"1\"}");
	expect_op(patch, "add", "/spec/containers/0/resources/requests",
	    "{\"nvidia.com/gpu\": \"1\"}");
	expect_op(patch, "add", "/metadata/annotations/memfloor.dev~1placement",
	    "\"B200 x 1\"");
	expect_op(patch, "replace",
	    "/metadata/annotations/memfloor.dev~1min-memory", "\"88Gi\"");
	assert_null(find_op(patch,
	    "/metadata/annotations/memfloor.dev~1estimated-cost"));
	assert_int_equal(ans.verdict, MF_VERDICT_ADMITTED);
	assert_string_equal(ans.job, "echo-pod");
	json_decref(patch);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/*
 * min-memory 12Gi = 12,884,901,888 bytes fits the RTX-A4000 (16G), the
 * cheapest per reference hour (2.232).  The pod's nodeSelector exists: the
 * label is added as a key, '/' escaped as ~1.  Only the first container
 * gets the GPU (design 18), requests and limits alike; the sidecar with
 * its own limits, the one without resources and the one that pins
 * nvidia.com/gpu "0" get nothing.
 */
static void
test_review_pod_adds_selector_key(void **state)
{
	json_t *rv = load(DATA "pod-selector.json"), *a, *patch;
	struct mf_answer ans;
	char *raw;

	(void)state;
	a = send_review(rv, &ans);
	patch = patch_of(a, &raw);
	assert_non_null(
	    strstr(raw, "\"/spec/nodeSelector/nvidia.com~1gpu.product\""));
	expect_op(patch, "add", "/spec/nodeSelector/nvidia.com~1gpu.product",
	    "\"NVIDIA-RTX-A4000\"");
	assert_null(find_op(patch, "/spec/nodeSelector"));
	expect_op(patch, "add", "/spec/containers/0/resources/limits",
	    "{\"nvidia.com/gpu\": \"1\"}");
	expect_op(patch, "add", "/spec/containers/0/resources/requests",
	    "{\"nvidia.com/gpu\": \"1\"}");
	for (int i = 1; i <= 3; i++) {
		char at[32];

		snprintf(at, sizeof(at), "/spec/containers/%d/", i);
		assert_int_equal(ops_under(patch, at), 0);
	}
	expect_op(patch, "add", "/metadata/annotations/memfloor.dev~1placement",
	    "\"RTX-A4000 x 1\"");
	expect_op(patch, "replace",
	    "/metadata/annotations/memfloor.dev~1min-memory", "\"12Gi\"");
	/* 1 selector key + limits and requests + 2 annotations + the label */
	assert_int_equal(json_array_size(patch), 6);
	assert_null(json_object_get(response(a), "warnings"));
	free(raw);
	json_decref(patch);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/*
 * The example Job: LoRA r16 all-linear with checkpointing on Llama 3.1 8B
 * needs 19.9 GB per GPU (design 5).  Cards whose 90% holds it: every card
 * of 24G or more (21.6 GB usable); the B200 is cheapest per reference
 * hour.  Floor: 19,906,699,264 / 0.9 = 22,118,554,738 bytes = 20.6 GiB,
 * rounded up to 21Gi.  Cost: 12 h / 2.274 = 5.277 h at $5.50 = $29.02
 * (the user's own checkpointing is no fix admission applied, so no time
 * factor).  Paths go through the pod template.
 */
static void
test_review_job_patches_template(void **state)
{
	json_t *rv = load("examples/k8s-admissionreview.json"), *a, *patch;
	struct mf_answer ans;

	(void)state;
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	expect_op(patch, "add", "/spec/template/spec/nodeSelector",
	    "{\"nvidia.com/gpu.product\": \"NVIDIA-B200\"}");
	expect_op(patch, "add",
	    "/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu",
	    "\"1\"");
	expect_op(patch, "add",
	    "/spec/template/spec/containers/0/resources/requests/"
	    "nvidia.com~1gpu",
	    "\"1\"");
	expect_op(patch, "add", "/metadata/annotations/memfloor.dev~1placement",
	    "\"B200 x 1\"");
	expect_op(patch, "add",
	    "/metadata/annotations/memfloor.dev~1min-memory", "\"21Gi\"");
	expect_op(patch, "add",
	    "/metadata/annotations/memfloor.dev~1estimated-cost", "\"29.02\"");
	assert_int_equal(json_array_size(patch), 7);
	assert_string_equal(ans.job, "llama-8b-lora");
	assert_int_equal(ans.verdict, MF_VERDICT_ADMITTED);
	json_decref(patch);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/*
 * Both annotations: the floor 88Gi comes from min-memory, the count 2 from
 * the spec.  Per reference hour over 2 GPUs (speed x 2 x 0.9): B200
 * 2 x 5.50 / (2.274 x 1.8) = 2.687, RTX-PRO-6000 2.947, H200 3.889: B200 x 2.
 * The train container requests nvidia.com/gpu 2 with no limit: its limit
 * becomes 2 as well (not 1), and the logger container gets nothing.
 */
static void
test_review_job_count_from_spec(void **state)
{
	json_t *rv = load(DATA "job-count.json"), *a, *patch;
	struct mf_answer ans;

	(void)state;
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	expect_op(patch, "add", "/spec/template/spec/nodeSelector",
	    "{\"nvidia.com/gpu.product\": \"NVIDIA-B200\"}");
	expect_op(patch, "add",
	    "/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu",
	    "\"2\"");
	assert_null(find_op(patch,
	    "/spec/template/spec/containers/0/"
	    "resources/requests/nvidia.com~1gpu"));
	assert_null(find_op(patch,
	    "/spec/template/spec/containers/1/"
	    "resources/limits/nvidia.com~1gpu"));
	expect_op(patch, "add", "/metadata/annotations/memfloor.dev~1placement",
	    "\"B200 x 2\"");
	expect_op(patch, "replace",
	    "/metadata/annotations/memfloor.dev~1min-memory", "\"88Gi\"");
	/* selector, one limit, two annotations, the label */
	assert_int_equal(json_array_size(patch), 5);
	assert_null(json_object_get(response(a), "warnings"));
	/* metadata.name is absent: generateName names the job */
	assert_string_equal(ans.job, "train-");
	json_decref(patch);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* The spec's own minMemory wins over the annotation, with a warning. */
static void
test_review_spec_floor_wins(void **state)
{
	json_t *rv = load(DATA "pod-min-memory.json"), *a, *patch;
	struct mf_answer ans;

	(void)state;
	annotate(rv, "memfloor.dev/min-memory", "8Gi");
	annotate(rv, "memfloor.dev/spec",
	    "{\"resources\": {\"gpu\": {\"minMemory\": \"90112Mi\"}}}");
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	/* 90112Mi = 88Gi: B200, and the canonical form */
	expect_op(patch, "replace",
	    "/metadata/annotations/memfloor.dev~1min-memory", "\"88Gi\"");
	expect_op(patch, "add", "/spec/nodeSelector",
	    "{\"nvidia.com/gpu.product\": \"NVIDIA-B200\"}");
	assert_true(has_warning(a, "memfloor.dev/min-memory 8Gi ignored"));
	json_decref(patch);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* Existing placement and cost annotations are replaced; a stale cost goes
 * when the job has no referenceHours. */
static void
test_review_annotations_replace_and_remove(void **state)
{
	json_t *rv = load(DATA "pod-min-memory.json"), *a, *patch;
	struct mf_answer ans;

	(void)state;
	annotate(rv, "memfloor.dev/placement", "H100 x 8");
	annotate(rv, "memfloor.dev/estimated-cost", "12.00");
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	expect_op(patch, "replace",
	    "/metadata/annotations/memfloor.dev~1placement", "\"B200 x 1\"");
	expect_op(patch, "remove",
	    "/metadata/annotations/memfloor.dev~1estimated-cost", NULL);
	json_decref(patch);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* dryRun changes nothing about the answer. */
static void
test_review_dry_run_same(void **state)
{
	json_t *rv = load(DATA "pod-min-memory.json"), *a, *b;
	struct mf_answer ans, ans2;

	(void)state;
	a = send_review(rv, &ans);
	json_object_set_new(json_object_get(rv, "request"), "dryRun",
	    json_true());
	b = send_review(rv, &ans2);
	assert_true(json_equal(a, b));
	json_decref(a);
	json_decref(b);
	json_decref(rv);
	mf_answer_free(&ans);
	mf_answer_free(&ans2);
}

/*
 * Label keys with '~' and '/' are escaped as ~0 and ~1 (RFC 6901).  A
 * catalogue refuses '~' in a label key (no Kubernetes label has one), so
 * the test puts it into a loaded catalogue's entry by hand.
 */
static void
test_review_pointer_escapes(void **state)
{
	static const char text[] =
	    "apiVersion: memfloor.dev/v1\n"
	    "kind: GpuCatalog\ngpus:\n  - name: X\n    memory: 16G\n"
	    "    hourlyPrice: 1\n    relativeThroughput: 1\n    labels:\n"
	    "      example.com/ab: v\n";
	struct mf_catalog *own = NULL, *shipped = cat;
	json_t *rv = load(DATA "pod-selector.json"), *a, *patch;
	struct mf_answer ans;
	struct mf_error err;

	(void)state;
	assert_int_equal(mf_cat_parse(text, sizeof(text) - 1, "t.yaml", &own,
	                     &err),
	    MF_OK);
	free(own->gpus[0].labels[0].key);
	own->gpus[0].labels[0].key = strdup("example.com/a~b/~1");
	assert_non_null(own->gpus[0].labels[0].key);
	cat = own;
	a = send_review(rv, &ans);
	cat = shipped;
	patch = patch_of(a, NULL);
	expect_op(patch, "add", "/spec/nodeSelector/example.com~1a~0b~1~01",
	    "\"v\"");
	json_decref(patch);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
	mf_cat_unref(own);
}

/* A selector key the pod already pins to another value is overwritten,
 * with a warning cut under 120 bytes. */
static void
test_review_long_warning_cut(void **state)
{
	json_t *rv = load(DATA "pod-selector.json"), *a, *patch, *sel;
	struct mf_answer ans;
	char old[301];
	const char *w;

	(void)state;
	memset(old, 'q', 300);
	old[300] = '\0';
	for (int i = 10; i < 300; i += 11)
		old[i] = ' ';
	sel = json_object_get(json_object_get(object_of(rv), "spec"),
	    "nodeSelector");
	json_object_set_new(sel, "nvidia.com/gpu.product", json_string(old));
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	expect_op(patch, "add", "/spec/nodeSelector/nvidia.com~1gpu.product",
	    "\"NVIDIA-RTX-A4000\"");
	assert_true(has_warning(a, "nodeSelector nvidia.com/gpu.product"));
	expect_warnings_short(a);
	w = json_string_value(
	    json_array_get(json_object_get(response(a), "warnings"), 0));
	assert_string_equal(w + strlen(w) - 3, "...");
	assert_true(w[strlen(w) - 4] == 'q');
	json_decref(patch);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/*
 * Two cards: OLD, whose labels pin two keys, and NEW, pinning one and
 * cheaper; the review's catalogue while a test runs (the shared one back
 * after it, passed or not).
 */
static struct mf_catalog *shared_cat;

static int
use_two_cards(void **state)
{
	static const char text[] =
	    "apiVersion: memfloor.dev/v1\nkind: GpuCatalog\ngpus:\n"
	    "  - name: OLD\n    memory: 80G\n    hourlyPrice: 2\n"
	    "    relativeThroughput: 1\n    labels:\n"
	    "      nvidia.com/gpu.product: P-OLD\n"
	    "      example.com/fabric: ib\n"
	    "  - name: NEW\n    memory: 80G\n    hourlyPrice: 1\n"
	    "    relativeThroughput: 1\n    labels:\n"
	    "      nvidia.com/gpu.product: P-NEW\n";
	struct mf_catalog *two;
	struct mf_error err;

	(void)state;
	if (mf_cat_parse(text, strlen(text), "t.yaml", &two, &err) != MF_OK) {
		print_error("%s\n", MSG(&err));
		return -1;
	}
	shared_cat = cat;
	cat = two;
	return 0;
}

static int
use_shared_cards(void **state)
{
	(void)state;
	mf_cat_unref(cat);
	cat = shared_cat;
	return 0;
}

/*
 * A pod an earlier review placed (its memfloor.dev/placement) on OLD,
 * reviewed again: the selector memfloor wrote is its own, so OLD's
 * product is replaced by NEW's and OLD's other key removed, with no
 * warning; the pod's own key stays.  Without the placement annotation
 * the product was the pod's own: replaced with a warning, and the other
 * key left.
 */
static void
test_review_own_selector_replaced(void **state)
{
	json_t *rv = load(DATA "pod-selector.json"), *a, *patch, *sel;
	struct mf_answer ans;

	(void)state;
	sel = json_object_get(json_object_get(object_of(rv), "spec"),
	    "nodeSelector");
	json_object_set_new(sel, "nvidia.com/gpu.product",
	    json_string("P-OLD"));
	json_object_set_new(sel, "example.com/fabric", json_string("ib"));
	annotate(rv, "memfloor.dev/placement", "OLD x 1");
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	expect_op(patch, "add", "/spec/nodeSelector/nvidia.com~1gpu.product",
	    "\"P-NEW\"");
	expect_op(patch, "remove", "/spec/nodeSelector/example.com~1fabric",
	    NULL);
	assert_null(find_op(patch, "/spec/nodeSelector/kubernetes.io~1os"));
	assert_false(has_warning(a, "nodeSelector"));
	json_decref(patch);
	json_decref(a);
	mf_answer_free(&ans);
	json_object_del(annotations(rv), "memfloor.dev/placement");
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	expect_op(patch, "add", "/spec/nodeSelector/nvidia.com~1gpu.product",
	    "\"P-NEW\"");
	assert_null(find_op(patch, "/spec/nodeSelector/example.com~1fabric"));
	assert_true(has_warning(a,
	    "nodeSelector nvidia.com/gpu.product: P-OLD replaced by P-NEW"));
	json_decref(patch);
	json_decref(a);
	mf_answer_free(&ans);
	json_decref(rv);
}

/* --- which container gets the GPUs (design 18) --------------------------- */

#define SIDECAR "examples/k8s-sidecar-admissionreview.json"
#define TPL "/spec/template/spec"

/* request.object's pod spec: a Pod's spec, a Job's template spec. */
static json_t *
pod_spec(json_t *review)
{
	json_t *spec = json_object_get(object_of(review), "spec");
	json_t *tpl =
	    json_object_get(json_object_get(spec, "template"), "spec");

	return tpl != NULL ? tpl : spec;
}

static json_t *
container(json_t *review, const char *list, size_t i)
{
	json_t *c = json_array_get(json_object_get(pod_spec(review), list), i);

	assert_non_null(c);
	return c;
}

/* Set resources.<what>["nvidia.com/gpu"] of container c to v (stolen). */
static void
set_gpu(json_t *c, const char *what, json_t *v)
{
	json_t *res = json_object_get(c, "resources"), *m;

	if (res == NULL) {
		res = json_object();
		json_object_set_new(c, "resources", res);
	}
	m = json_object_get(res, what);
	if (m == NULL) {
		m = json_object();
		json_object_set_new(res, what, m);
	}
	assert_int_equal(json_object_set_new(m, "nvidia.com/gpu", v), 0);
}

/* The review is denied with code and exactly message. */
static void
expect_denied(json_t *rv, int code, const char *message)
{
	struct mf_answer ans;
	const char *msg;
	json_t *a;

	a = send_review(rv, &ans);
	assert_int_equal(denial(a, &msg), code);
	if (strcmp(msg, message) != 0)
		print_error("%s\n", msg);
	assert_string_equal(msg, message);
	json_decref(a);
	mf_answer_free(&ans);
}

/* memfloor.dev/container names the third container, which has no
 * resources: it gets requests and limits, the first gets nothing. */
static void
test_review_container_annotation(void **state)
{
	json_t *rv = load(DATA "pod-selector.json"), *a, *patch;
	struct mf_answer ans;

	(void)state;
	annotate(rv, "memfloor.dev/container", "trainer");
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	expect_op(patch, "add", "/spec/containers/2/resources",
	    "{\"limits\": {\"nvidia.com/gpu\": \"1\"},"
	    " \"requests\": {\"nvidia.com/gpu\": \"1\"}}");
	assert_int_equal(ops_under(patch, "/spec/containers/0/"), 0);
	assert_int_equal(ops_under(patch, "/spec/containers/"), 1);
	json_decref(patch);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* A name that is no container, an init container's name, no string. */
static void
test_review_container_annotation_bad(void **state)
{
	json_t *rv;

	(void)state;
	rv = load(DATA "pod-selector.json");
	annotate(rv, "memfloor.dev/container", "nobody");
	expect_denied(rv, 400,
	    "annotation memfloor.dev/container: no container of the pod is "
	    "named 'nobody'");
	json_decref(rv);
	rv = load(SIDECAR);
	annotate(rv, "memfloor.dev/container", "log-shipper");
	expect_denied(rv, 400,
	    "annotation memfloor.dev/container: 'log-shipper' is an init "
	    "container; GPUs go only to a container of the pod's containers");
	json_object_set_new(annotations(rv), "memfloor.dev/container",
	    json_integer(1));
	expect_denied(rv, 400,
	    "annotation memfloor.dev/container: must be a string");
	json_decref(rv);
}

/*
 * The chosen container already limits nvidia.com/gpu to the placement's
 * count (as "1", then as the number 1): the limit stays, requests get the
 * same count.  12Gi: RTX-A4000 x 1.
 */
static void
test_review_own_limit_kept(void **state)
{
	json_t *rv = load(DATA "pod-conflict.json"), *a, *patch;
	struct mf_answer ans;

	(void)state;
	annotate(rv, "memfloor.dev/container", "pinned");
	for (int round = 0; round < 2; round++) {
		if (round == 1)
			set_gpu(container(rv, "containers", 3), "limits",
			    json_integer(1));
		a = send_review(rv, &ans);
		patch = patch_of(a, NULL);
		expect_op(patch, "add", "/spec/containers/3/resources/requests",
		    "{\"nvidia.com/gpu\": \"1\"}");
		assert_int_equal(ops_under(patch, "/spec/containers/"), 1);
		/* selector key, requests, placement, min-memory, label */
		assert_int_equal(json_array_size(patch), 5);
		json_decref(patch);
		json_decref(a);
		mf_answer_free(&ans);
	}
	json_decref(rv);
}

/* The fourth container limits nvidia.com/gpu to 1 but the first gets the
 * GPU: it would take a second GPU memfloor did not place. */
static void
test_review_other_container_gpu_denied(void **state)
{
	json_t *rv = load(DATA "pod-conflict.json");
	struct mf_answer ans;

	(void)state;
	expect_denied(rv, 400,
	    "container pinned: resources.limits nvidia.com/gpu is 1, but GPUs "
	    "go only to container echo-server (annotation "
	    "memfloor.dev/container chooses it)");
	json_decref(send_review(rv, &ans));
	assert_int_equal(ans.verdict, MF_VERDICT_NONE);
	mf_answer_free(&ans);
	json_decref(rv);
}

/*
 * job-count without its spec annotation: 88Gi on one GPU, B200 x 1, but
 * the train container requests 2 (the placement would have set its limit
 * to 1 before design 18).  Then with count 2 and a limit of 3.
 */
static void
test_review_requests_disagree_denied(void **state)
{
	json_t *rv = load(DATA "job-count.json");

	(void)state;
	json_object_del(annotations(rv), "memfloor.dev/spec");
	expect_denied(rv, 400,
	    "container train: resources.requests nvidia.com/gpu is 2, but the "
	    "placement is B200 x 1; leave it out or set resources.gpu.count: "
	    "2 in memfloor.dev/spec");
	json_decref(rv);
	rv = load(DATA "job-count.json");
	set_gpu(container(rv, "containers", 0), "limits", json_string("3"));
	expect_denied(rv, 400,
	    "container train: resources.limits nvidia.com/gpu is 3, but the "
	    "placement is B200 x 2; leave it out or set resources.gpu.count: "
	    "3 in memfloor.dev/spec");
	/* No count is 2.5 GPUs, nor 0: left out, then. */
	set_gpu(container(rv, "containers", 0), "limits", json_string("2.5"));
	expect_denied(rv, 400,
	    "container train: resources.limits nvidia.com/gpu is 2.5, but the "
	    "placement is B200 x 2; leave it out");
	set_gpu(container(rv, "containers", 0), "limits", json_string("0"));
	expect_denied(rv, 400,
	    "container train: resources.limits nvidia.com/gpu is 0, but the "
	    "placement is B200 x 2; leave it out");
	json_decref(rv);
}

/*
 * The sidecar example on the product catalogue: 40Gi goes to the B200.
 * The annotation names train, the second container; neither init
 * container (fetch-weights, and log-shipper, a sidecar with restartPolicy
 * Always) nor the metrics container gets a GPU.  An init container that
 * asks for one is denied.
 */
static void
test_review_init_containers_no_gpu(void **state)
{
	json_t *rv = load(SIDECAR), *a, *patch;
	struct mf_answer ans;

	(void)state;
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	expect_op(patch, "add", TPL "/nodeSelector/nvidia.com~1gpu.product",
	    "\"NVIDIA-B200\"");
	expect_op(patch, "add",
	    TPL "/containers/1/resources/limits/nvidia.com~1gpu", "\"1\"");
	expect_op(patch, "add",
	    TPL "/containers/1/resources/requests/nvidia.com~1gpu", "\"1\"");
	assert_int_equal(ops_under(patch, TPL "/initContainers"), 0);
	assert_int_equal(ops_under(patch, TPL "/containers/0/"), 0);
	assert_int_equal(ops_under(patch, TPL "/affinity"), 0);
	json_decref(patch);
	json_decref(a);
	mf_answer_free(&ans);
	set_gpu(container(rv, "initContainers", 1), "limits", json_string("1"));
	expect_denied(rv, 400,
	    "init container log-shipper: resources.limits nvidia.com/gpu is "
	    "1, but GPUs go only to container train (annotation "
	    "memfloor.dev/container chooses it)");
	json_decref(rv);
}

/* --- select: memory (design 18) ------------------------------------------- */

/* Send rv to the select: memory catalogue. */
static json_t *
send_memory(json_t *rv, struct mf_answer *ans)
{
	struct mf_catalog *shipped = cat;
	json_t *a;

	cat = cat_memory;
	a = send_review(rv, ans);
	cat = shipped;
	return a;
}

/* {"weight": w, "preference": {"matchExpressions": [product In [p]]}} */
static void
expect_pref(json_t *term, int weight, const char *product)
{
	json_t *e =
	    json_array_get(json_object_get(json_object_get(term, "preference"),
	                       "matchExpressions"),
	        0);

	assert_int_equal(json_integer_value(json_object_get(term, "weight")),
	    weight);
	assert_string_equal(json_string_value(json_object_get(e, "key")),
	    "nvidia.com/gpu.product");
	assert_string_equal(json_string_value(json_object_get(e, "operator")),
	    "In");
	assert_string_equal(json_string_value(
	                        json_array_get(json_object_get(e, "values"),
	                            0)),
	    product);
}

#define REQ_KEY "requiredDuringSchedulingIgnoredDuringExecution"
#define PREF_KEY "preferredDuringSchedulingIgnoredDuringExecution"

/* {"key": nvidia.com/gpu.memory, "operator": "Gt", "values": [gt]} */
static json_t *
mem_expr(const char *gt)
{
	return json_pack("{s:s, s:s, s:[s]}", "key", "nvidia.com/gpu.memory",
	    "operator", "Gt", "values", gt);
}

static json_t *
pref_term(int weight, const char *product)
{
	return json_pack("{s:i, s:{s:[{s:s, s:s, s:[s]}]}}", "weight", weight,
	    "preference", "matchExpressions", "key", "nvidia.com/gpu.product",
	    "operator", "In", "values", product);
}

#define ANN_AFFINITY "memfloor.dev/node-affinity"
#define ANN_AFFINITY_PTR "memfloor.dev~1node-affinity"

/*
 * The record memfloor keeps of what it added to a pod's node affinity
 * (design 18, the annotation ANN_AFFINITY): {"required": req (stolen; left
 * out when NULL), "preferred": the first n of products, weights 100, 90,
 * ...}.
 */
static json_t *
record(json_t *req, const char *const *products, size_t n)
{
	json_t *r = json_pack("{s:[]}", "preferred");

	for (size_t i = 0; i < n; i++)
		json_array_append_new(json_object_get(r, "preferred"),
		    pref_term(100 - 10 * (int)i, products[i]));
	if (req != NULL)
		json_object_set_new(r, "required", req);
	return r;
}

/*
 * The patch adds the record want (stolen) at path: the annotation's own
 * pointer, or that of an annotations map it creates.  Its text is JSON,
 * compared as such.
 */
static void
expect_record(json_t *patch, const char *path, json_t *want)
{
	json_t *o = find_op(patch, path), *v, *got;
	json_error_t jerr;

	if (o == NULL)
		print_error("no op at %s\n", path);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "op")), "add");
	v = json_object_get(o, "value");
	if (json_is_object(v))
		v = json_object_get(v, ANN_AFFINITY);
	assert_true(json_is_string(v));
	got = json_loads(json_string_value(v), 0, &jerr);
	assert_non_null(got);
	if (!json_equal(got, want))
		print_error("record %s\n", json_string_value(v));
	assert_true(json_equal(got, want));
	json_decref(got);
	json_decref(want);
}

/* The patch has an op at path: verb with the value want (stolen). */
static void
expect_op_value(json_t *patch, const char *verb, const char *path, json_t *want)
{
	json_t *o = find_op(patch, path);

	if (o == NULL)
		print_error("no op at %s\n", path);
	assert_non_null(o);
	assert_non_null(want);
	assert_string_equal(json_string_value(json_object_get(o, "op")), verb);
	assert_true(json_equal(json_object_get(o, "value"), want));
	json_decref(want);
}

/*
 * 88Gi = 90,112 MiB, so "Gt 90111".  The cards that hold it, cheapest per
 * reference hour first: B200 2.419, RTX-PRO-6000 2.652, H200 3.50, all
 * one GPU.  The pod has no affinity: one add of the whole of it, and no
 * nodeSelector.  Then 40G = 40,000,000,000 / 1,048,576 = 38,146.97 MiB,
 * which rounds up to 38,147: "Gt 38146".
 */
static void
test_review_memory_affinity_created(void **state)
{
	json_t *rv = load(DATA "pod-min-memory.json"), *a, *patch;
	struct mf_answer ans;
	char *text;

	(void)state;
	a = send_memory(rv, &ans);
	patch = patch_of(a, NULL);
	expect_op_value(patch, "add", "/spec/affinity",
	    json_pack("{s:{s:{s:[{s:[o]}]}, s:[o, o, o]}}", "nodeAffinity",
	        REQ_KEY, "nodeSelectorTerms", "matchExpressions",
	        mem_expr("90111"), PREF_KEY, pref_term(100, "NVIDIA-B200"),
	        pref_term(90, "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"),
	        pref_term(80, "NVIDIA-H200")));
	assert_int_equal(ops_under(patch, "/spec/nodeSelector"), 0);
	expect_op(patch, "add", "/spec/containers/0/resources/limits",
	    "{\"nvidia.com/gpu\": \"1\"}");
	expect_op(patch, "add", "/metadata/annotations/memfloor.dev~1placement",
	    "\"B200 x 1\"");
	/* What it added, on the Pod's own annotations. */
	expect_record(patch, "/metadata/annotations/" ANN_AFFINITY_PTR,
	    json_pack("{s:o, s:[o, o, o]}", "required", mem_expr("90111"),
	        "preferred", pref_term(100, "NVIDIA-B200"),
	        pref_term(90, "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"),
	        pref_term(80, "NVIDIA-H200")));
	/* affinity, limits, requests, placement, min-memory, label, record */
	assert_int_equal(json_array_size(patch), 7);
	json_decref(patch);
	json_decref(a);
	mf_answer_free(&ans);
	annotate(rv, "memfloor.dev/min-memory", "40G");
	a = send_memory(rv, &ans);
	patch = patch_of(a, NULL);
	expect_pref(
	    json_array_get(
	        json_object_get(json_object_get(json_object_get(find_op(patch,
	                                                            "/spec/"
	                                                            "affinity"),
	                                            "value"),
	                            "nodeAffinity"),
	            PREF_KEY),
	        0),
	    100, "NVIDIA-B200");
	text = json_dumps(patch, JSON_COMPACT);
	assert_non_null(strstr(text, "\"values\":[\"38146\"]"));
	free(text);
	json_decref(patch);
	json_decref(a);
	mf_answer_free(&ans);
	json_decref(rv);
}

#define NODE_AFFINITY TPL "/affinity/nodeAffinity/"
#define REQ NODE_AFFINITY REQ_KEY "/nodeSelectorTerms"
#define PREFERRED NODE_AFFINITY PREF_KEY

/* The cards the sidecar Job is placed on by memory, cheapest first
 * (test_review_memory_terms_merged says why). */
static const char *const sidecar_cards[] = { "NVIDIA-B200",
	"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "NVIDIA-L40S",
	"NVIDIA-H100-80GB-HBM3", "NVIDIA-RTX-A6000", "NVIDIA-H200",
	"NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-SXM4-80GB" };

/*
 * The sidecar example: 40Gi = 40,960 MiB, "Gt 40959", ANDed into both of
 * the Job's required terms.  Cards of at least 40Gi (42.9 GB), cheapest
 * per reference hour first (prices / relativeThroughput): B200 2.419,
 * RTX-PRO-6000 2.652, L40S 2.705, H100 2.99, RTX-A6000 3.14, H200 3.50,
 * A100-40GB 4.10, A100-80GB 5.21; the A100-40GB's driver reports 40960
 * MiB, exactly 40Gi, so it is one of them (design 20; at its marketing
 * 40G it was not).  Weights fall by ten from 100.  The nodeSelector is
 * left as it is.
 */
static void
test_review_memory_terms_merged(void **state)
{
	json_t *rv = load(SIDECAR), *a, *patch, *pref;
	struct mf_answer ans;

	(void)state;
	a = send_memory(rv, &ans);
	patch = patch_of(a, NULL);
	expect_op_value(patch, "add", REQ "/0/matchExpressions/-",
	    mem_expr("40959"));
	expect_op_value(patch, "add", REQ "/1/matchExpressions/-",
	    mem_expr("40959"));
	pref = json_object_get(find_op(patch, PREFERRED), "value");
	assert_int_equal(json_array_size(pref), 8);
	for (size_t i = 0; i < 8; i++)
		expect_pref(json_array_get(pref, i), 100 - 10 * (int)i,
		    sidecar_cards[i]);
	assert_int_equal(ops_under(patch, TPL "/nodeSelector"), 0);
	assert_int_equal(ops_under(patch, TPL "/initContainers"), 0);
	assert_int_equal(ops_under(patch, TPL "/containers/0/"), 0);
	expect_op(patch, "add",
	    TPL "/containers/1/resources/requests/nvidia.com~1gpu", "\"1\"");
	/* $29.02: 12 h / 2.274 x $5.50 on the B200 */
	expect_op(patch, "add",
	    "/metadata/annotations/memfloor.dev~1estimated-cost", "\"29.02\"");
	/* What it added, in annotations the template gets: the expression
	 * and the eight terms. */
	expect_record(patch, "/spec/template/metadata/annotations",
	    record(mem_expr("40959"), sidecar_cards, 8));
	/* 2 terms, preferred, limits, requests, 3 annotations, label, record */
	assert_int_equal(json_array_size(patch), 10);
	assert_null(json_object_get(response(a), "warnings"));
	json_decref(patch);
	json_decref(a);
	mf_answer_free(&ans);
	json_decref(rv);
}

/* The patch of rv on the memory catalogue (the caller frees it). */
static json_t *
memory_patch(json_t *rv)
{
	struct mf_answer ans;
	json_t *a, *patch;

	a = send_memory(rv, &ans);
	patch = patch_of(a, NULL);
	json_decref(a);
	mf_answer_free(&ans);
	return patch;
}

static json_t *
node_affinity(json_t *rv)
{
	return json_object_get(json_object_get(pod_spec(rv), "affinity"),
	    "nodeAffinity");
}

/* The sidecar Job as memfloor patched it at a floor: gt's expression ANDed
 * into each of its required terms, which are returned. */
static json_t *
floor_in_every_term(json_t *rv, const char *gt)
{
	json_t *terms =
	    json_object_get(json_object_get(node_affinity(rv), REQ_KEY),
	        "nodeSelectorTerms");
	json_t *t;
	size_t i;

	json_array_foreach (terms, i, t)
		json_array_append_new(json_object_get(t, "matchExpressions"),
		    mem_expr(gt));
	return terms;
}

/* Every shape of affinity a pod may already have. */
static void
test_review_memory_shapes(void **state)
{
	json_t *rv, *patch, *terms, *na;

	(void)state;
	/* A term of matchFields only gets a matchExpressions list. */
	rv = load(SIDECAR);
	terms = json_object_get(json_object_get(node_affinity(rv), REQ_KEY),
	    "nodeSelectorTerms");
	json_array_set_new(terms, 1,
	    json_pack("{s:[{s:s, s:s, s:[s]}]}", "matchFields", "key",
	        "metadata.name", "operator", "In", "values", "node-7"));
	patch = memory_patch(rv);
	expect_op_value(patch, "add", REQ "/1/matchExpressions",
	    json_pack("[o]", mem_expr("40959")));
	json_decref(patch);
	/* A term of neither (an empty list is none) matches no node: ANDing
	 * the memory into it would widen it. */
	json_array_set_new(terms, 1, json_pack("{s:[]}", "matchExpressions"));
	patch = memory_patch(rv);
	assert_int_equal(ops_under(patch, REQ "/1"), 0);
	expect_op_value(patch, "add", REQ "/0/matchExpressions/-",
	    mem_expr("40959"));
	json_decref(patch);
	/* Preferred terms of its own: ours are appended, one add each. */
	json_object_set_new(node_affinity(rv), PREF_KEY,
	    json_pack("[{s:i, s:{s:[{s:s, s:s, s:[s]}]}}]", "weight", 5,
	        "preference", "matchExpressions", "key", "disk", "operator",
	        "In", "values", "ssd"));
	patch = memory_patch(rv);
	assert_int_equal(ops_under(patch, PREFERRED "/-"), 8);
	assert_null(find_op(patch, PREFERRED));
	expect_pref(json_object_get(find_op(patch, PREFERRED "/-"), "value"),
	    100, "NVIDIA-B200");
	json_decref(patch);
	/* Required without terms: [] gets one, absent gets a list. */
	json_object_set_new(json_object_get(node_affinity(rv), REQ_KEY),
	    "nodeSelectorTerms", json_array());
	patch = memory_patch(rv);
	expect_op_value(patch, "add", REQ "/-",
	    json_pack("{s:[o]}", "matchExpressions", mem_expr("40959")));
	json_decref(patch);
	json_object_del(node_affinity(rv), REQ_KEY);
	patch = memory_patch(rv);
	expect_op_value(patch, "add", TPL "/affinity/nodeAffinity/" REQ_KEY,
	    json_pack("{s:[{s:[o]}]}", "nodeSelectorTerms", "matchExpressions",
	        mem_expr("40959")));
	json_decref(patch);
	/* An affinity without nodeAffinity (pod anti-affinity only). */
	na = json_object_get(pod_spec(rv), "affinity");
	json_object_del(na, "nodeAffinity");
	json_object_set_new(na, "podAntiAffinity", json_object());
	patch = memory_patch(rv);
	na = json_object_get(find_op(patch, TPL "/affinity/nodeAffinity"),
	    "value");
	assert_non_null(json_object_get(na, REQ_KEY));
	assert_int_equal(json_array_size(json_object_get(na, PREF_KEY)), 8);
	assert_null(find_op(patch, TPL "/affinity"));
	json_decref(patch);
	json_decref(rv);
}

/*
 * The sidecar Job as memfloor patched it (test_review_memory_terms_merged)
 * but without its record (annotation ANN_AFFINITY), so nothing in it is
 * known to be memfloor's: reviewed again (its update while suspended, as
 * Kueue makes it), nothing is added twice.  Cards it no longer prefers are
 * added, at their weights; a memory expression of another value is the
 * pod's own, and memfloor's is ANDed beside it.
 */
static void
test_review_memory_patched_again(void **state)
{
	json_t *rv = load(SIDECAR), *patch, *terms, *t, *pref;
	size_t i, k;

	(void)state;
	terms = floor_in_every_term(rv, "40959");
	pref = json_array();
	for (i = 0; i < 8; i++)
		json_array_append_new(pref,
		    pref_term(100 - 10 * (int)i, sidecar_cards[i]));
	json_object_set_new(node_affinity(rv), PREF_KEY, pref);
	patch = memory_patch(rv);
	assert_int_equal(ops_under(patch, NODE_AFFINITY), 0);
	json_decref(patch);
	/* Three cards no longer preferred, and term 0's floor the pod's. */
	for (i = 0; i < 3; i++)
		json_array_remove(pref, json_array_size(pref) - 1);
	json_array_set_new(json_object_get(json_array_get(terms, 0),
	                       "matchExpressions"),
	    json_array_size(
	        json_object_get(json_array_get(terms, 0), "matchExpressions")) -
	        1,
	    mem_expr("1000"));
	patch = memory_patch(rv);
	assert_int_equal(ops_under(patch, PREFERRED "/-"), 3);
	assert_int_equal(ops_under(patch, REQ), 1);
	expect_op_value(patch, "add", REQ "/0/matchExpressions/-",
	    mem_expr("40959"));
	assert_int_equal(ops_under(patch, NODE_AFFINITY), 4);
	k = 5;
	json_array_foreach (patch, i, t)
		if (strcmp(json_string_value(json_object_get(t, "path")),
		        PREFERRED "/-") == 0) {
			expect_pref(json_object_get(t, "value"),
			    100 - 10 * (int)k, sidecar_cards[k]);
			k++;
		}
	assert_int_equal(k, 8);
	json_decref(patch);
	json_decref(rv);
}

/* The Job's pod template's metadata. */
static json_t *
template_meta(json_t *rv)
{
	return json_object_get(json_object_get(json_object_get(object_of(rv),
	                                           "spec"),
	                           "template"),
	    "metadata");
}

/*
 * The sidecar Job as memfloor patched it at its floor of 40Gi, record and
 * all (test_review_memory_terms_merged), with an expression and a
 * preferred term of its own, reviewed again at 88Gi (a Job created from
 * it, or its update).  88Gi = 90,112 MiB: "Gt 90111" replaces memfloor's
 * "Gt 40959" where it stands in each term, and the pod's own "Gt 1000"
 * stays.  The cards of 88Gi, cheapest first: B200, RTX-PRO-6000, H200
 * (test_review_memory_affinity_created), at 100, 90, 80: memfloor's first
 * two terms (after the pod's own at 0) are those already, its third is
 * replaced by the H200's, its other five removed, each at index 4 once
 * the one before it is gone.  The record then says what it left.
 */
static void
test_review_memory_own_replaced(void **state)
{
	static const char *const at88[] = { "NVIDIA-B200",
		"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "NVIDIA-H200" };
	json_t *rv = load(SIDECAR), *patch, *terms, *t, *pref, *own, *rec;
	char *text;
	size_t i;

	(void)state;
	terms = floor_in_every_term(rv, "40959");
	json_array_append_new(json_object_get(json_array_get(terms, 0),
	                          "matchExpressions"),
	    mem_expr("1000"));
	own = json_pack("{s:i, s:{s:[{s:s, s:s, s:[s]}]}}", "weight", 5,
	    "preference", "matchExpressions", "key", "disk", "operator", "In",
	    "values", "ssd");
	pref = json_pack("[O]", own);
	for (i = 0; i < 8; i++)
		json_array_append_new(pref,
		    pref_term(100 - 10 * (int)i, sidecar_cards[i]));
	json_object_set_new(node_affinity(rv), PREF_KEY, pref);
	rec = record(mem_expr("40959"), sidecar_cards, 8);
	text = json_dumps(rec, JSON_COMPACT);
	json_object_set_new(template_meta(rv), "annotations",
	    json_pack("{s:s}", ANN_AFFINITY, text));
	free(text);
	json_decref(rec);

	/* The same floor again: nothing in the affinity moves. */
	patch = memory_patch(rv);
	assert_int_equal(ops_under(patch, NODE_AFFINITY), 0);
	expect_record(patch,
	    "/spec/template/metadata/annotations/" ANN_AFFINITY_PTR,
	    record(mem_expr("40959"), sidecar_cards, 8));
	json_decref(patch);

	annotate(rv, "memfloor.dev/spec",
	    "resources: {gpu: {minMemory: 88Gi}}\nduration: {referenceHours: 12}\n");
	patch = memory_patch(rv);
	expect_op_value(patch, "replace", REQ "/0/matchExpressions/1",
	    mem_expr("90111"));
	expect_op_value(patch, "replace", REQ "/1/matchExpressions/2",
	    mem_expr("90111"));
	assert_int_equal(ops_under(patch, REQ), 2);
	expect_op_value(patch, "replace", PREFERRED "/3",
	    pref_term(80, "NVIDIA-H200"));
	assert_int_equal(ops_under(patch, PREFERRED "/4"), 5);
	json_array_foreach (patch, i, t)
		if (strcmp(json_string_value(json_object_get(t, "path")),
		        PREFERRED "/4") == 0)
			assert_string_equal(json_string_value(
			                        json_object_get(t, "op")),
			    "remove");
	assert_int_equal(ops_under(patch, NODE_AFFINITY), 8);
	expect_record(patch,
	    "/spec/template/metadata/annotations/" ANN_AFFINITY_PTR,
	    record(mem_expr("90111"), at88, 3));
	json_decref(patch);
	json_decref(own);
	json_decref(rv);
}

/*
 * A record that is not memfloor's (edited by hand): warned of, and the
 * pod's affinity read as its own, as without one.
 */
static void
test_review_memory_record_not_ours(void **state)
{
	json_t *rv = load(SIDECAR), *a, *w, *patch;
	struct mf_answer ans;

	(void)state;
	json_object_set_new(template_meta(rv), "annotations",
	    json_pack("{s:s}", ANN_AFFINITY, "Gt 40959"));
	a = send_memory(rv, &ans);
	w = json_object_get(response(a), "warnings");
	assert_int_equal(json_array_size(w), 1);
	assert_non_null(strstr(json_string_value(json_array_get(w, 0)),
	    "annotation memfloor.dev/node-affinity is not what memfloor writes"));
	patch = patch_of(a, NULL);
	expect_op_value(patch, "add", REQ "/0/matchExpressions/-",
	    mem_expr("40959"));
	json_decref(patch);
	json_decref(a);
	mf_answer_free(&ans);
	json_decref(rv);
}

static int
warned_excluded(json_t *rv, int memory)
{
	struct mf_answer ans;
	json_t *a;
	int w;

	a = memory ? send_memory(rv, &ans) : send_review(rv, &ans);
	assert_true(json_is_true(json_object_get(response(a), "allowed")));
	w = has_warning(a, "excludes every card placed");
	expect_warnings_short(a);
	json_decref(a);
	mf_answer_free(&ans);
	return w;
}

/* Each required term gets "product In [values]". */
static void
require_product(json_t *rv, const char *op, const char *v0, const char *v1)
{
	json_t *terms =
	           json_object_get(json_object_get(node_affinity(rv), REQ_KEY),
	               "nodeSelectorTerms"),
	       *t;
	size_t i;

	json_array_foreach (terms, i, t)
		json_array_append_new(json_object_get(t, "matchExpressions"),
		    json_pack("{s:s, s:s, s:[s]}", "key",
		        "nvidia.com/gpu.product", "operator", op, "values",
		        i == 0 ? v0 : v1));
}

/*
 * A required node affinity (or, with select: memory, a nodeSelector) that
 * no card placed can satisfy is reported in a warning; the review is
 * still allowed.
 */
static void
test_review_excluded_reported(void **state)
{
	json_t *rv;

	(void)state;
	rv = load(SIDECAR);
	assert_false(warned_excluded(rv, 1));
	/* the L4 (24G) holds no 40Gi: none of the seven cards is an L4 */
	require_product(rv, "In", "NVIDIA-L4", "NVIDIA-L4");
	assert_true(warned_excluded(rv, 1));
	json_decref(rv);
	rv = load(SIDECAR);
	/* the second term lets the H200, the sixth card, in */
	require_product(rv, "In", "NVIDIA-L4", "NVIDIA-H200");
	assert_false(warned_excluded(rv, 1));
	json_decref(rv);
	rv = load(SIDECAR);
	json_object_set_new(json_object_get(pod_spec(rv), "nodeSelector"),
	    "nvidia.com/gpu.product", json_string("NVIDIA-L4"));
	assert_true(warned_excluded(rv, 1));
	json_decref(rv);
	/* product: only the B200 is placed; both terms refuse it */
	rv = load(SIDECAR);
	require_product(rv, "NotIn", "NVIDIA-B200", "NVIDIA-B200");
	assert_true(warned_excluded(rv, 0));
	json_decref(rv);
	rv = load(SIDECAR);
	require_product(rv, "NotIn", "NVIDIA-B200", "NVIDIA-H200");
	assert_false(warned_excluded(rv, 0));
	/* A term of no expressions and no fields matches no node: it lets
	 * no card in. */
	json_array_set_new(json_object_get(json_object_get(node_affinity(rv),
	                                       REQ_KEY),
	                       "nodeSelectorTerms"),
	    1, json_object());
	assert_true(warned_excluded(rv, 0));
	json_decref(rv);
}

/* --- denied ------------------------------------------------------------- */

/* 200G is more than the largest card, the B200 (183359 MiB, 192.3 GB):
 * 403. */
static void
test_review_denied_too_big(void **state)
{
	json_t *rv = load(DATA "pod-too-big.json"), *a;
	struct mf_answer ans;
	const char *msg;

	(void)state;
	a = send_review(rv, &ans);
	assert_int_equal(denial(a, &msg), 403);
	assert_non_null(strstr(msg, "200G"));
	assert_non_null(strstr(msg, "B200 (192.3 GB)"));
	assert_int_equal(ans.kind, MF_ANS_OK);
	assert_int_equal(ans.verdict, MF_VERDICT_REJECTED);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/*
 * Full AdamW with eager attention at s = 4096: 16.1 + 16.1 + 96.4 + 104.2
 * (eager activations) + 2.1 = 234.7 GB, more than the B200's 162 GB
 * usable.  The first fix, sdpa, brings it to 148.8 GB, which the B200
 * holds; sdpa has no time factor: 12 / 2.274 x 5.50 = $29.02.
 */
static void
test_review_denied_with_fix(void **state)
{
	json_t *rv = load(DATA "pod-eager.json"), *a;
	struct mf_answer ans;
	const char *msg;

	(void)state;
	a = send_review(rv, &ans);
	assert_int_equal(denial(a, &msg), 403);
	assert_non_null(strstr(msg, "234.7 GB"));
	assert_non_null(strstr(msg,
	    "suggested fix: sdpa "
	    "(spec.workload.attention: sdpa), placement B200 x1, "
	    "$29.02 to finish"));
	assert_int_equal(ans.verdict, MF_VERDICT_REJECTED);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/*
 * Full AdamW, sdpa, s = 4096 needs 148.8 GB on one card; maxHourlyPrice 5
 * rules out the only card that holds it (B200, $5.50), and fsdp is
 * allowed.  Over N GPUs: 16 P / N + 18.25 (activations) + 2.10 (logits) +
 * 2 x 218,112,000 (largest layer) x 2 bytes = 0.87 GB.  N = 2: 64.24 +
 * 21.23 = 85.47 GB, which the RTX-PRO-6000 holds (86.4 GB usable) at
 * $2.70/h: 2.70 / (0.509 x 2 x 0.9) = 2.947 per reference hour.  N = 3:
 * 64.05 GB, RTX-PRO-6000 x3 $4.05/h, 4.05 / (0.509 x 3 x 0.9^1.585) =
 * 3.13; A100-80GB x3 6.15; N = 4 and up cost over $5/h on every card
 * that holds them.  So RTX-PRO-6000 x 2, each container limited to 2.
 */
static void
test_review_fsdp_applied_by_admission(void **state)
{
	json_t *rv = load(DATA "pod-eager.json"), *a, *patch;
	struct mf_answer ans;

	(void)state;
	annotate(rv, "memfloor.dev/spec",
	    "model: {name: "
	    "meta-llama/Llama-3.1-8B}\nworkload: {sequenceLength: 4096}\n"
	    "limits: {maxHourlyPrice: 5}\nallowedFixes: [fsdp]\n");
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	expect_op(patch, "add", "/spec/nodeSelector",
	    "{\"nvidia.com/"
	    "gpu.product\": \"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition\"}");
	expect_op(patch, "add", "/spec/containers/0/resources/limits",
	    "{\"nvidia.com/gpu\": \"2\"}");
	expect_op(patch, "add", "/metadata/annotations/memfloor.dev~1placement",
	    "\"RTX-PRO-6000 x 2\"");
	json_decref(patch);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/*
 * Llama 3.1 70B (P = 70,553,706,496), full AdamW: 16 P = 1,128.9 GB.
 * Checkpointing (2 s b h L = 5.37 GB of activations) and 8-bit Adam
 * (10 P = 705.5 GB) fit no card; LoRA and QLoRA fit but are modelling
 * decisions; fsdp over 8 with checkpointing: 141.1 + 5.37 + 2.10
 * (logits) + 2 x 855,654,400 (largest layer) x 2 bytes = 3.42 GB = 152.0 GB
 * per GPU over 8; over 7, 161.3 + 10.9 = 172.2 GB, which the B200 holds
 * (183359 MiB x 0.9 = 173.04 GB usable) and no smaller card does; over 6,
 * 188.1 + 10.9 = 199.0 GB, which it does not.  So the suggestion is fsdp
 * over 7 GPUs on B200 x7.
 */
static void
test_review_denied_fsdp_message(void **state)
{
	json_t *rv = load(DATA "pod-eager.json"), *a;
	struct mf_answer ans;
	const char *msg;

	(void)state;
	annotate(rv, "memfloor.dev/spec",
	    "model: {name: "
	    "meta-llama/Llama-3.1-70B}\nworkload: {sequenceLength: 4096}\n");
	a = send_review(rv, &ans);
	assert_int_equal(denial(a, &msg), 403);
	if (strstr(msg, "suggested fix: fsdp over 7 GPUs") == NULL)
		print_error("%s\n", msg);
	assert_non_null(strstr(msg,
	    "; suggested fix: fsdp over 7 GPUs "
	    "(spec.workload.gradientCheckpointing: true, "
	    "spec.workload.sharding.gpus: 7), placement B200 x7"));
	assert_null(strstr(msg, "to finish"));
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* --- a pod's GPUs on one node (design 11) ------------------------------- */

/*
 * Llama 3.1 70B (P = 70,553,706,496, h 8192, L 80, V 128,256), full AdamW
 * at s = 2048, referenceHours 100.  16 P = 1,128,859,303,936 bytes shard
 * over N GPUs; each GPU also keeps activations L s h 34 =
 * 45,634,027,520 (checkpointing: 2 s h L = 2,684,354,560), logits s V 4 =
 * 1,050,673,152 and the sharding buffers 2 x 855,654,400 (largest layer)
 * x 2 = 3,422,617,600.  On a B200 (162e9 usable):
 *   fsdp:  N = 10: 112.89 + 50.11 = 162.99 GB, too much; N = 11: 152.73,
 *          so 11 GPUs, two nodes of 8;
 *   + checkpointing: N = 7: 161.27 + 7.16 = 168.42, too much; N = 8:
 *          141.11 + 7.16 = 148.27, one node.  Hours 100 x 1.35 / (2.274
 *          x 8 x 0.9^3) = 10.1795, cost x $44/h = $447.90.
 * No other card holds either on one node (H200: 126.9 GB usable).
 */
#define SPEC_70B(fixes) \
	"model: {name: meta-llama/Llama-3.1-70B}\n" \
	"workload: {sequenceLength: 2048}\n" \
	"duration: {referenceHours: 100}\nallowedFixes: [" fixes "]\n"

/* examples/k8s-admissionreview.json's Job with the 70B spec above and
 * spec.parallelism, completions and completionMode (0 / NULL: unset). */
static json_t *
job_70b(const char *fixes, int parallelism, int completions, const char *mode)
{
	json_t *rv = load("examples/k8s-admissionreview.json");
	json_t *spec = json_object_get(object_of(rv), "spec");

	annotate(rv, "memfloor.dev/spec", fixes);
	json_object_del(spec, "parallelism");
	json_object_del(spec, "completions");
	json_object_del(spec, "completionMode");
	if (parallelism > 0)
		json_object_set_new(spec, "parallelism",
		    json_integer(parallelism));
	if (completions > 0)
		json_object_set_new(spec, "completions",
		    json_integer(completions));
	if (mode != NULL)
		json_object_set_new(spec, "completionMode", json_string(mode));
	return rv;
}

#define GPU_LIMIT \
	"/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu"

/*
 * A plain Job is one pod: placed within a node, with checkpointing and
 * fsdp rather than fsdp alone over 10 GPUs on two nodes.  The B200's
 * 183359 MiB hold 173,039,262,105 bytes after headroom; with checkpointing
 * 16P / 7 = 161,265,614,848 and the rest (activations 2 x 2048 x 8192 x
 * 80 = 2,684,354,560, logits 1,050,673,152, sharding buffers
 * 3,422,617,600) make 168.4e9, which 7 GPUs hold: 1.35 x 100 / (7 x
 * 0.9^log2(7) x 2.274) = 11.400 hours x $38.50 = $438.90.
 */
static void
test_review_job_within_one_node(void **state)
{
	json_t *rv =
	           job_70b(SPEC_70B("checkpointing, fsdp"), 1, 1, "NonIndexed"),
	       *a, *patch;
	struct mf_answer ans;

	(void)state;
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	expect_op(patch, "add", GPU_LIMIT, "\"7\"");
	expect_op(patch, "add", "/metadata/annotations/memfloor.dev~1placement",
	    "\"B200 x 7\"");
	expect_op(patch, "add",
	    "/metadata/annotations/memfloor.dev~1estimated-cost", "\"438.90\"");
	json_decref(patch);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/*
 * With fsdp alone nothing fits one node: the denial gives the placement
 * over nodes, B200 x 10 on 2 nodes (1,128,859,303,936 / (173,039,262,105
 * - 50,107,318,272) = 9.18): speed 2.274 x 10 x 0.9^log2(10) x
 * 0.8^log2(2) = 12.820, 7.801 hours at $55.00/h = $429.03; as an Indexed
 * Job of 2 pods the count is a multiple of 2: 10, 2 pods of 5; and, within
 * one node, checkpointing (which admission pairs with fsdp over 7, see
 * above).
 */
static void
test_review_job_over_nodes_denied(void **state)
{
	json_t *rv = job_70b(SPEC_70B("fsdp"), 0, 0, NULL), *a;
	struct mf_answer ans;
	const char *msg;

	(void)state;
	a = send_review(rv, &ans);
	assert_int_equal(denial(a, &msg), 403);
	assert_non_null(strstr(msg,
	    "no placement fits a pod of one node, and a pod's GPUs all come "
	    "from one node: it needs B200 x 10 over 2 nodes ($429.03 to "
	    "finish)"));
	assert_non_null(strstr(msg,
	    "Indexed Job (completionMode: Indexed, parallelism and "
	    "completions 2, one pod a node: memfloor places it as 2 pods of "
	    "B200 x 5"));
	assert_non_null(strstr(msg, "JobSet, LeaderWorkerSet or PyTorchJob"));
	assert_non_null(strstr(msg,
	    "within one node, the fix checkpointing "
	    "(spec.workload.gradientCheckpointing: true, "
	    "spec.duration.referenceHours: 135), placement B200 x7, $438.90"));
	assert_int_equal(ans.verdict, MF_VERDICT_REJECTED);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* An Indexed Job of 2 pods: 10 GPUs, each pod's container 5. */
static void
test_review_indexed_job_pods(void **state)
{
	json_t *rv = job_70b(SPEC_70B("fsdp"), 2, 2, "Indexed"), *a, *patch;
	struct mf_answer ans;

	(void)state;
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	expect_op(patch, "add", GPU_LIMIT, "\"5\"");
	expect_op(patch, "add", "/metadata/annotations/memfloor.dev~1placement",
	    "\"B200 x 10 (2 pods of 5)\"");
	json_decref(patch);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* --- the fingerprint label (design 23) ----------------------------------- */

#define LABEL "memfloor.dev/fingerprint"
#define LABEL_PTR "memfloor.dev~1fingerprint"

/*
 * The library's own fingerprint of the job a review's annotations
 * describe: spec (the memfloor.dev/spec text, NULL without one) with the
 * floor min (memfloor.dev/min-memory, NULL without one), placed as pods
 * pods on the review's catalogue; what the admit answer carries for it.
 */
static void
placed_fingerprint(const char *spec, const char *min, int64_t pods,
    char hex[MF_FP_HEX])
{
	struct mf_decision *d = malloc(sizeof(*d));
	enum mf_qty_format f = MF_QTY_DECIMAL;
	struct mf_doc *doc = NULL;
	struct mf_error err;
	int64_t bytes = 0;
	struct mf_job job;

	assert_non_null(d);
	if (min != NULL)
		assert_int_equal(mf_qty_parse_memory(min, strlen(min), &bytes,
		                     &f),
		    MF_QTY_OK);
	if (spec != NULL)
		assert_int_equal(mf_doc_parse(spec, strlen(spec), MF_DOC_AUTO,
		                     &doc, &err),
		    MF_OK);
	assert_int_equal(mf_job_read_spec_floor(doc != NULL ? mf_doc_root(doc) :
	                                                      NULL,
	                     "spec", "job", models, bytes, (int)f, &job, &err),
	    MF_OK);
	job.work.estimator = cat->estimator;
	job.pods = pods;
	assert_int_equal(mf_place(&job, cat, d, &err), MF_OK);
	assert_true(d->admitted);
	mf_fp_job(&job, d->placement.fixes, d->placement.count, hex);
	free(d);
	mf_doc_free(doc);
}

/* The annotation key of review, or NULL. */
static const char *
annotation_of(json_t *review, const char *key)
{
	return json_string_value(json_object_get(annotations(review), key));
}

/* The label's op: an add of want at base/labels/KEY when the labels are
 * there (labels), else of {"memfloor.dev/fingerprint": want} at
 * base/labels. */
static void
expect_label(json_t *patch, const char *base, int labels, const char *want)
{
	char at[128], value[128];

	assert_true(mf_fp_valid(want));
	snprintf(at, sizeof(at), "%s/labels", base);
	assert_int_equal(ops_under(patch, at), 1);
	if (labels) {
		snprintf(at, sizeof(at), "%s/labels/" LABEL_PTR, base);
		snprintf(value, sizeof(value), "\"%s\"", want);
	} else {
		snprintf(at, sizeof(at), "%s/labels", base);
		snprintf(value, sizeof(value), "{\"" LABEL "\": \"%s\"}", want);
	}
	expect_op(patch, "add", at, value);
}

/*
 * A Pod carries the label itself: its labels exist (app: echo-server), so
 * the key is added, '/' escaped as ~1; without labels the map is added.
 * The value is the job as placed (88Gi: B200 x 1).
 */
static void
test_review_fingerprint_label_pod(void **state)
{
	json_t *rv = load(DATA "pod-min-memory.json"), *a, *patch, *meta;
	struct mf_answer ans;
	char want[MF_FP_HEX], *raw;

	(void)state;
	placed_fingerprint(NULL, annotation_of(rv, "memfloor.dev/min-memory"),
	    1, want);
	a = send_review(rv, &ans);
	patch = patch_of(a, &raw);
	assert_non_null(strstr(raw, "\"/metadata/labels/" LABEL_PTR "\""));
	expect_label(patch, "/metadata", 1, want);
	free(raw);
	json_decref(patch);
	json_decref(a);
	mf_answer_free(&ans);
	meta = json_object_get(object_of(rv), "metadata");
	json_object_del(meta, "labels");
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	expect_label(patch, "/metadata", 0, want);
	json_decref(patch);
	json_decref(a);
	mf_answer_free(&ans);
	json_decref(rv);
}

/*
 * A Job's label goes on its pod template (the pods are what dcgm-exporter
 * sees), not on the Job: the example's template has labels; a template
 * without metadata gets {"labels": {...}}; a fingerprint already there
 * (a stale one) is overwritten by the add.
 */
static void
test_review_fingerprint_label_job(void **state)
{
	json_t *rv = load("examples/k8s-admissionreview.json"), *a, *patch;
	json_t *tpl;
	struct mf_answer ans;
	char want[MF_FP_HEX], value[128];

	(void)state;
	placed_fingerprint(annotation_of(rv, "memfloor.dev/spec"), NULL, 1,
	    want);
	tpl =
	    json_object_get(json_object_get(object_of(rv), "spec"), "template");
	json_object_set_new(json_object_get(json_object_get(tpl, "metadata"),
	                        "labels"),
	    LABEL, json_string("0123456789abcdef0123456789abcdef"));
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	expect_label(patch, "/spec/template/metadata", 1, want);
	assert_null(find_op(patch, "/metadata/labels"));
	json_decref(patch);
	json_decref(a);
	mf_answer_free(&ans);
	json_object_del(tpl, "metadata");
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	snprintf(value, sizeof(value), "{\"labels\": {\"" LABEL "\": \"%s\"}}",
	    want);
	expect_op(patch, "add", "/spec/template/metadata", value);
	assert_int_equal(ops_under(patch, "/spec/template/metadata"), 1);
	json_decref(patch);
	json_decref(a);
	mf_answer_free(&ans);
	json_decref(rv);
}

/*
 * An Indexed Job of 2 pods (B200 x 10, 2 pods of 5): every pod carries the
 * fingerprint of the whole job as placed, fsdp over 10 GPUs, the same as
 * the job placed anywhere (B200 x 10 over 2 nodes) and not that of the job
 * as written (one GPU, no fix).
 */
static void
test_review_fingerprint_label_indexed(void **state)
{
	json_t *rv = job_70b(SPEC_70B("fsdp"), 2, 2, "Indexed"), *a, *patch;
	char want[MF_FP_HEX], anywhere[MF_FP_HEX], written[MF_FP_HEX];
	struct mf_answer ans;
	struct mf_error err;
	struct mf_doc *doc;
	struct mf_job job;

	(void)state;
	placed_fingerprint(SPEC_70B("fsdp"), NULL, 2, want);
	placed_fingerprint(SPEC_70B("fsdp"), NULL, 0, anywhere);
	assert_string_equal(want, anywhere);
	assert_int_equal(mf_doc_parse(SPEC_70B("fsdp"),
	                     strlen(SPEC_70B("fsdp")), MF_DOC_AUTO, &doc, &err),
	    MF_OK);
	assert_int_equal(mf_job_read_spec(mf_doc_root(doc), "spec", "job",
	                     models, &job, &err),
	    MF_OK);
	mf_fp_job(&job, 0, job.count, written);
	mf_doc_free(doc);
	assert_string_not_equal(want, written);
	a = send_review(rv, &ans);
	patch = patch_of(a, NULL);
	expect_op(patch, "add", "/metadata/annotations/memfloor.dev~1placement",
	    "\"B200 x 10 (2 pods of 5)\"");
	expect_label(patch, "/spec/template/metadata", 1, want);
	json_decref(patch);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* Pods that do not run together, or a count that does not split. */
static void
test_review_indexed_job_bad(void **state)
{
	json_t *rv = job_70b(SPEC_70B("fsdp"), 2, 3, "Indexed"), *a;
	struct mf_answer ans;
	const char *msg;

	(void)state;
	a = send_review(rv, &ans);
	assert_int_equal(denial(a, &msg), 400);
	assert_non_null(strstr(msg,
	    "spec.completions must equal "
	    "spec.parallelism (2)"));
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
	rv = job_70b("resources: {gpu: {count: 13}}\n" SPEC_70B("fsdp"), 2, 2,
	    "Indexed");
	a = send_review(rv, &ans);
	assert_int_equal(denial(a, &msg), 400);
	assert_non_null(strstr(msg, "the job's 13 GPUs"));
	assert_non_null(strstr(msg, "do not split into the Job's 2 pods"));
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
	/* A pod's 4 GPUs of an Indexed Job of 2 pods: the job's count that
	 * makes them right is 8. */
	rv = job_70b(SPEC_70B("fsdp"), 2, 2, "Indexed");
	set_gpu(container(rv, "containers", 0), "requests", json_string("4"));
	expect_denied(rv, 400,
	    "container train: resources.requests nvidia.com/gpu is 4, but the "
	    "placement is B200 x 10 (2 pods of 5); leave it out or set "
	    "resources.gpu.count: 8 in memfloor.dev/spec");
	json_decref(rv);
}

/* The 70B Job that is not Indexed with parallelism pods is admitted, each
 * pod placed as the whole job, and says so. */
static void
expect_each_pod_whole(int parallelism, int completions)
{
	json_t *rv = job_70b(SPEC_70B("checkpointing, fsdp"), parallelism,
	           completions, NULL),
	       *a;
	struct mf_answer ans;
	char want[80];

	a = send_review(rv, &ans);
	json_decref(patch_of(a, NULL));
	snprintf(want, sizeof(want),
	    "parallelism %d: each pod is placed as the whole job", parallelism);
	assert_true(has_warning(a, want));
	expect_warnings_short(a);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* A bare Pod is one pod too; a Job that is not Indexed places each of its
 * pods as the whole job, and says so. */
static void
test_review_pod_and_parallel_job(void **state)
{
	json_t *rv = load(DATA "pod-eager.json"), *a;
	struct mf_answer ans;
	const char *msg;

	(void)state;
	annotate(rv, "memfloor.dev/spec", SPEC_70B("fsdp"));
	a = send_review(rv, &ans);
	assert_int_equal(denial(a, &msg), 403);
	assert_non_null(strstr(msg, "it needs B200 x 10 over 2 nodes"));
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
	expect_each_pod_whole(3, 0);
	/* More pods than a job takes GPUs: the same. */
	expect_each_pod_whole(2000, 10000);
	/* Indexed, those pods are one job of at least 2000 GPUs. */
	rv = job_70b(SPEC_70B("checkpointing, fsdp"), 2000, 2000, "Indexed");
	a = send_review(rv, &ans);
	assert_int_equal(denial(a, &msg), 400);
	assert_non_null(strstr(msg, "spec.parallelism 2000: an Indexed Job"));
	assert_non_null(strstr(msg, "at most 1024 GPUs"));
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* --- bad annotations: a valid review, denied with code 400 --------------- */

static void
test_review_bad_quantity_denied_400(void **state)
{
	json_t *rv = load(DATA "pod-bad-quantity.json"), *a;
	struct mf_answer ans;
	const char *msg;

	(void)state;
	a = send_review(rv, &ans);
	assert_int_equal(ans.kind, MF_ANS_OK);
	assert_int_equal(denial(a, &msg), 400);
	assert_string_equal(msg,
	    "annotation memfloor.dev/min-memory: '88Gx' "
	    "is not a quantity");
	assert_int_equal(ans.verdict, MF_VERDICT_NONE);
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* The annotation text's line 5, column 3 holds the typo. */
static void
test_review_bad_spec_denied_400(void **state)
{
	json_t *rv = load(DATA "pod-bad-spec.json"), *a;
	struct mf_answer ans;
	const char *msg;

	(void)state;
	a = send_review(rv, &ans);
	assert_int_equal(ans.kind, MF_ANS_OK);
	assert_int_equal(denial(a, &msg), 400);
	assert_string_equal(msg,
	    "annotation memfloor.dev/spec: "
	    "spec.workload.methd: unknown field (line 5, column 3)");
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

static void
test_review_bad_spec_variants_denied_400(void **state)
{
	static const struct {
		const char *spec;
		const char *part;
	} cases[] = {
		{ "model: [unclosed", "annotation memfloor.dev/spec: " },
		{ "", "annotation memfloor.dev/spec: spec: must be a mapping" },
		{ "model: {configUrl: https://h/c.json}\nworkload: "
		  "{sequenceLength: 1}",
		    "spec.model.configUrl" },
		{ "model: {name: nobody/none}", "spec.model.name" },
		{ "a: &x 1\nb: *x", "annotation memfloor.dev/spec: " },
	};
	struct mf_answer ans;
	const char *msg;
	json_t *rv, *a;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rv = load(DATA "pod-plain.json");
		annotate(rv, "memfloor.dev/spec", cases[i].spec);
		a = send_review(rv, &ans);
		assert_int_equal(denial(a, &msg), 400);
		if (strstr(msg, cases[i].part) == NULL)
			print_error("%zu: %s\n", i, msg);
		assert_non_null(strstr(msg, cases[i].part));
		json_decref(a);
		json_decref(rv);
		mf_answer_free(&ans);
	}
}

/* An annotation that is not a string (never sent by Kubernetes). */
static void
test_review_annotation_not_string_denied_400(void **state)
{
	json_t *rv = load(DATA "pod-plain.json"), *a;
	struct mf_answer ans;
	const char *msg;

	(void)state;
	json_object_set_new(annotations(rv), "memfloor.dev/min-memory",
	    json_integer(5));
	a = send_review(rv, &ans);
	assert_int_equal(denial(a, &msg), 400);
	assert_string_equal(msg,
	    "annotation memfloor.dev/min-memory: must be "
	    "a string");
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* A Job without spec.template.spec has nothing to place. */
static void
test_review_job_without_pod_spec_denied_400(void **state)
{
	json_t *rv = load(DATA "job-count.json"), *a, *obj;
	struct mf_answer ans;
	const char *msg;

	(void)state;
	obj = object_of(rv);
	json_object_del(json_object_get(obj, "spec"), "template");
	a = send_review(rv, &ans);
	assert_int_equal(denial(a, &msg), 400);
	assert_non_null(strstr(msg, "/spec/template/spec"));
	json_decref(a);
	json_decref(rv);
	mf_answer_free(&ans);
}

/* --- not an AdmissionReview: HTTP 400 ------------------------------------ */

static void
expect_invalid(const char *text, const char *field, const char *part)
{
	struct mf_answer ans;
	json_t *j;
	const char *e;

	j = send_text(text, strlen(text), &ans);
	assert_int_equal(ans.kind, MF_ANS_INVALID);
	e = json_string_value(json_object_get(j, "error"));
	assert_non_null(e);
	if (strstr(e, part) == NULL)
		print_error("%s\n", e);
	assert_non_null(strstr(e, part));
	if (field != NULL)
		assert_string_equal(json_string_value(
		                        json_object_get(j, "field")),
		    field);
	json_decref(j);
	mf_answer_free(&ans);
}

#define HEAD \
	"\"apiVersion\":\"admission.k8s.io/v1\"," \
	"\"kind\":\"AdmissionReview\""

static void
test_review_malformed_invalid(void **state)
{
	(void)state;
	expect_invalid("", NULL, "the body is not valid JSON");
	expect_invalid("apiVersion: admission.k8s.io/v1", NULL,
	    "the body is not valid JSON");
	expect_invalid("{\"a\":1,\"a\":2}", "a", "a: duplicate key");
	/* In the Job, wide objects and skimmed members alike: named by its
	 * path in the body. */
	expect_invalid("{" HEAD ",\"request\":{\"object\":{\"spec\":"
	               "{\"template\":{\"x\":1,\"x\":2}}}}}",
	    "request.object.spec.template.x", "duplicate key");
	expect_invalid("[]", NULL, "JSON object");
	expect_invalid("{\"kind\":\"AdmissionReview\",\"request\":{}}",
	    "apiVersion", "is required");
	expect_invalid("{\"apiVersion\":\"admission.k8s.io/v1beta1\","
	               "\"kind\":\"AdmissionReview\",\"request\":{\"uid\":"
	               "\"u\"}}",
	    "apiVersion",
	    "'admission.k8s.io/v1beta1' is not "
	    "'admission.k8s.io/v1'");
	expect_invalid("{\"apiVersion\":\"admission.k8s.io/v1\","
	               "\"kind\":\"Pod\"}",
	    "kind", "'Pod' is not 'AdmissionReview'");
	expect_invalid("{" HEAD "}", "request", "is required");
	expect_invalid("{" HEAD ",\"request\":[]}", "request", "an object");
	expect_invalid("{" HEAD ",\"request\":{\"operation\":\"CREATE\"}}",
	    "request.uid", "is required");
	expect_invalid("{" HEAD ",\"request\":{\"uid\":7}}", "request.uid",
	    "a string");
	expect_invalid("{" HEAD ",\"request\":{\"uid\":\"\"}}", "request.uid",
	    "empty");
	expect_invalid("{" HEAD ",\"request\":{\"uid\":\"u\"}}",
	    "request.operation", "is required");
	expect_invalid("{" HEAD ",\"request\":{\"uid\":\"u\","
	               "\"operation\":\"CREATE\"}}",
	    "request.object", "is required for CREATE");
	expect_invalid("{" HEAD ",\"request\":{\"uid\":\"u\","
	               "\"operation\":\"CREATE\",\"object\":\"x\"}}",
	    "request.object", "an object");
}

/* A response-only review (the docs' allow sample) has no request. */
static void
test_review_response_sample_invalid(void **state)
{
	char path[512];
	struct mf_answer ans;
	FILE *f;
	char buf[4096];
	size_t n;
	json_t *j;

	(void)state;
	f = fopen(top_path(path, sizeof(path), DATA "response-allow.json"),
	    "rb");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	j = send_text(buf, n, &ans);
	assert_int_equal(ans.kind, MF_ANS_INVALID);
	assert_string_equal(json_string_value(json_object_get(j, "field")),
	    "request");
	json_decref(j);
	mf_answer_free(&ans);
}

/* Bytes past a NUL or junk after the document are refused, not read. */
static void
test_review_trailing_junk_invalid(void **state)
{
	static const char text[] = "{" HEAD "} x";
	struct mf_answer ans;
	json_t *j;

	(void)state;
	j = send_text(text, sizeof(text) - 1, &ans);
	assert_int_equal(ans.kind, MF_ANS_INVALID);
	json_decref(j);
	mf_answer_free(&ans);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_review_passthrough_without_annotations),
		cmocka_unit_test(test_review_passthrough_other_kind),
		cmocka_unit_test(test_review_passthrough_delete),
		cmocka_unit_test(test_review_passthrough_subresource),
		cmocka_unit_test(test_review_passthrough_deployment),
		cmocka_unit_test(test_review_pod_creates_node_selector),
		cmocka_unit_test(test_review_pod_adds_selector_key),
		cmocka_unit_test(test_review_job_patches_template),
		cmocka_unit_test(test_review_job_count_from_spec),
		cmocka_unit_test(test_review_spec_floor_wins),
		cmocka_unit_test(test_review_annotations_replace_and_remove),
		cmocka_unit_test(test_review_dry_run_same),
		cmocka_unit_test(test_review_pointer_escapes),
		cmocka_unit_test(test_review_long_warning_cut),
		cmocka_unit_test_setup_teardown(
		    test_review_own_selector_replaced, use_two_cards,
		    use_shared_cards),
		cmocka_unit_test(test_review_container_annotation),
		cmocka_unit_test(test_review_container_annotation_bad),
		cmocka_unit_test(test_review_own_limit_kept),
		cmocka_unit_test(test_review_other_container_gpu_denied),
		cmocka_unit_test(test_review_requests_disagree_denied),
		cmocka_unit_test(test_review_init_containers_no_gpu),
		cmocka_unit_test(test_review_memory_affinity_created),
		cmocka_unit_test(test_review_memory_terms_merged),
		cmocka_unit_test(test_review_memory_shapes),
		cmocka_unit_test(test_review_memory_patched_again),
		cmocka_unit_test(test_review_memory_own_replaced),
		cmocka_unit_test(test_review_memory_record_not_ours),
		cmocka_unit_test(test_review_excluded_reported),
		cmocka_unit_test(test_review_denied_too_big),
		cmocka_unit_test(test_review_denied_with_fix),
		cmocka_unit_test(test_review_fsdp_applied_by_admission),
		cmocka_unit_test(test_review_denied_fsdp_message),
		cmocka_unit_test(test_review_bad_quantity_denied_400),
		cmocka_unit_test(test_review_bad_spec_denied_400),
		cmocka_unit_test(test_review_bad_spec_variants_denied_400),
		cmocka_unit_test(test_review_job_within_one_node),
		cmocka_unit_test(test_review_job_over_nodes_denied),
		cmocka_unit_test(test_review_indexed_job_pods),
		cmocka_unit_test(test_review_fingerprint_label_pod),
		cmocka_unit_test(test_review_fingerprint_label_job),
		cmocka_unit_test(test_review_fingerprint_label_indexed),
		cmocka_unit_test(test_review_indexed_job_bad),
		cmocka_unit_test(test_review_pod_and_parallel_job),
		cmocka_unit_test(test_review_annotation_not_string_denied_400),
		cmocka_unit_test(test_review_job_without_pod_spec_denied_400),
		cmocka_unit_test(test_review_malformed_invalid),
		cmocka_unit_test(test_review_response_sample_invalid),
		cmocka_unit_test(test_review_trailing_junk_invalid),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
