/*
 * fuzz_review.c: libFuzzer harness for POST /v1/admission-review.
 *
 * The shipped catalogue and models (catalog/, from the directory the
 * fuzzer runs in, or $MF_TOP) are loaded once.  An input that starts with
 * '{' or blank space is the whole request body; any other input is a first
 * byte choosing where the rest goes in an annotated Pod review (bit 0: the
 * memfloor.dev/spec annotation or memfloor.dev/min-memory; bit 1: a Job
 * instead of a Pod; bit 2: a nodeSelector already set; bit 3: the
 * catalogue selects by memory; bit 4: a required node affinity and a
 * sidecar init container already set), so the annotation readers and the
 * patch builder are reached without valid JSON around them.  A whole body
 * is answered twice, with kubernetes.select product and memory, and read
 * as JSON by doc.h and by jansson: one accepts it exactly when the other
 * does (doc.h may also refuse it as too deep or too big, and refuses a
 * NUL byte, where jansson stops reading).  doc.h with a keep list fails
 * exactly as doc.h reading everything, and the review, which reads the
 * body with its own keep list, answers such a body with that error.
 *
 * Every answer is JSON.  A 200 is an admission.k8s.io/v1 AdmissionReview
 * whose response has a uid and allowed; a denial has status.code 400 or
 * 403 and a message of at most 1000 bytes; a patch is base64 of a JSON
 * array of add/replace/remove operations on absolute pointers; every
 * warning is under 120 bytes.  A 400 says why in "error".
 *
 * Seeds: tests/fuzz/corpus/review/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api.h"
#include "doc/doc.h"
#include "model/model.h"
#include "review/review.h"
#include "catalog.h"
#include "fuzz.h"
#include "msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
b64(int c)
{
	const char *tab = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	                  "0123456789+/";
	const char *p = c != 0 ? strchr(tab, c) : NULL;

	return p != NULL ? (int)(p - tab) : -1;
}

/* The decoded patch as JSON; aborts on bad base64. */
static json_t *
decode_patch(const char *s)
{
	size_t n = strlen(s), o = 0;
	char *out;
	json_t *j;

	if (n % 4 != 0 || (out = malloc(n / 4 * 3 + 1)) == NULL)
		abort();
	for (size_t i = 0; i < n; i += 4) {
		int v[4];

		for (int k = 0; k < 4; k++)
			if ((v[k] = s[i + k] == '=' ? 0 : b64(s[i + k])) < 0)
				abort();
		out[o++] = (char)(v[0] << 2 | v[1] >> 4);
		if (s[i + 2] != '=')
			out[o++] = (char)((v[1] & 15) << 4 | v[2] >> 2);
		if (s[i + 3] != '=')
			out[o++] = (char)((v[2] & 3) << 6 | v[3]);
	}
	j = json_loadb(out, o, 0, NULL);
	free(out);
	if (j == NULL)
		abort();
	return j;
}

static void
check_patch(const json_t *resp)
{
	const char *type =
	    json_string_value(json_object_get(resp, "patchType"));
	const char *p = json_string_value(json_object_get(resp, "patch"));
	json_t *patch, *o;
	const char *verb, *path;
	size_t i;

	if (p == NULL || type == NULL || strcmp(type, "JSONPatch") != 0)
		abort();
	patch = decode_patch(p);
	if (!json_is_array(patch) || json_array_size(patch) == 0)
		abort();
	json_array_foreach (patch, i, o) {
		verb = json_string_value(json_object_get(o, "op"));
		path = json_string_value(json_object_get(o, "path"));
		if (verb == NULL || path == NULL || path[0] != '/' ||
		    (strcmp(verb, "add") != 0 && strcmp(verb, "replace") != 0 &&
		        strcmp(verb, "remove") != 0) ||
		    (json_object_get(o, "value") == NULL) !=
		        (strcmp(verb, "remove") == 0))
			abort();
	}
	json_decref(patch);
}

static void
check_review(const json_t *j)
{
	const json_t *resp = json_object_get(j, "response"), *st, *w;
	const char *msg;
	json_int_t code;
	size_t i;

	if (strcmp(json_string_value(json_object_get(j, "apiVersion")),
	        "admission.k8s.io/v1") != 0 ||
	    !json_is_string(json_object_get(resp, "uid")) ||
	    !json_is_boolean(json_object_get(resp, "allowed")))
		abort();
	if (json_is_false(json_object_get(resp, "allowed"))) {
		st = json_object_get(resp, "status");
		code = json_integer_value(json_object_get(st, "code"));
		msg = json_string_value(json_object_get(st, "message"));
		if ((code != 400 && code != 403) || msg == NULL ||
		    strlen(msg) > 1000 || json_object_get(resp, "patch"))
			abort();
	} else if (json_object_get(resp, "patch") != NULL) {
		check_patch(resp);
	}
	json_array_foreach (json_object_get(resp, "warnings"), i, w)
		if (!json_is_string(w) || strlen(json_string_value(w)) >= 120)
			abort();
}

static void
check(const struct mf_answer *ans)
{
	json_t *j;

	if (ans->body == NULL || strlen(ans->body) != ans->len)
		abort();
	j = json_loadb(ans->body, ans->len, 0, NULL);
	if (j == NULL)
		abort();
	if (ans->kind == MF_ANS_OK)
		check_review(j);
	else if (ans->kind == MF_ANS_INVALID &&
	    !json_is_string(json_object_get(j, "error")))
		abort();
	else if (ans->kind != MF_ANS_OK && ans->kind != MF_ANS_INVALID &&
	    ans->kind != MF_ANS_INTERNAL)
		abort();
	json_decref(j);
}

/* An annotated review around text; NULL when text is not UTF-8. */
static char *
wrap(unsigned mode, const char *text, size_t len)
{
	json_t *value = json_stringn(text, len), *r;
	char *body;

	if (value == NULL)
		return NULL;
	r = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s, s:s}, "
	              "s:{s:s, s:s, s:{s:s, s:{s:o}}, s:{s:[{s:s}, {s:s, "
	              "s:{}}]}}}}",
	    "apiVersion", "admission.k8s.io/v1", "kind", "AdmissionReview",
	    "request", "uid", "fuzz", "operation", "CREATE", "kind", "group",
	    mode & 2 ? "batch" : "", "version", "v1", "kind",
	    mode & 2 ? "Job" : "Pod", "object", "apiVersion", "v1", "kind",
	    "Pod", "metadata", "name", "fuzz", "annotations",
	    mode & 1 ? "memfloor.dev/min-memory" : "memfloor.dev/spec", value,
	    "spec", "containers", "name", "a", "name", "b", "resources");
	if (r == NULL)
		return NULL;
	if (mode & 2) {
		json_t *o = json_object_get(json_object_get(r, "request"),
		           "object"),
		       *spec = json_object_get(o, "spec");

		json_object_set_new(o, "spec",
		    json_pack("{s:{s:O}}", "template", "spec", spec));
	}
	if (mode & 16) {
		json_t *o = json_object_get(json_object_get(r, "request"),
		           "object"),
		       *spec = json_object_get(o, "spec");

		if (mode & 2)
			spec =
			    json_object_get(json_object_get(spec, "template"),
			        "spec");
		json_object_set_new(spec, "affinity",
		    json_pack("{s:{s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}}",
		        "nodeAffinity",
		        "requiredDuringSchedulingIgnoredDuringExecution",
		        "nodeSelectorTerms", "matchExpressions", "key",
		        "nvidia.com/gpu.product", "operator", "NotIn", "values",
		        "NVIDIA-B200"));
		json_object_set_new(spec, "initContainers",
		    json_pack("[{s:s, s:s}]", "name", "side", "restartPolicy",
		        "Always"));
	}
	if (mode & 4) {
		json_t *o =
		    json_object_get(json_object_get(r, "request"), "object");

		json_object_set_new(json_object_get(mode & 2 ?
		                            json_object_get(json_object_get(o,
		                                                "spec"),
		                                "template") :
		                            o,
		                        "spec"),
		    "nodeSelector", json_pack("{s:s}", "zone", "a"));
	}
	body = json_dumps(r, 0);
	json_decref(r);
	return body;
}

/* A keep list for the reader: some members kept at each level, most of
 * any body skipped. */
static const struct mf_doc_keep keep_name[] = {
	MF_DOC_KEEP("name", NULL),
	MF_DOC_KEEP_END,
};

static const struct mf_doc_keep keep_object[] = {
	MF_DOC_KEEP("metadata", keep_name),
	MF_DOC_KEEP("spec", NULL),
	MF_DOC_KEEP_END,
};

static const struct mf_doc_keep keep_request[] = {
	MF_DOC_KEEP("uid", NULL),
	MF_DOC_KEEP("object", keep_object),
	MF_DOC_KEEP_END,
};

static const struct mf_doc_keep keep_some[] = {
	MF_DOC_KEEP("kind", NULL),
	MF_DOC_KEEP("request", keep_request),
	MF_DOC_KEEP_END,
};

/* doc.h with keep_some fails as doc.h reading everything (rc, whole). */
static void
same_when_kept(const uint8_t *data, size_t size, enum mf_rc rc,
    const struct mf_error *whole)
{
	struct mf_doc *doc = NULL;
	struct mf_error err;

	memset(&err, 0, sizeof(err));
	if (mf_doc_parse_kept((const char *)data, size, MF_DOC_JSON_WIDE,
	        keep_some, &doc, &err) != rc ||
	    (rc != MF_OK &&
	        (strcmp(err.text, whole->text) != 0 ||
	            err.line != whole->line || err.column != whole->column))) {
		fprintf(stderr, "read whole: %s; with a keep list: %s\n",
		    MSG(whole), MSG(&err));
		abort();
	}
	mf_doc_free(doc);
}

/*
 * doc.h's JSON reader accepts what jansson accepts, and no more, and the
 * same with a keep list.  rc and err are what doc.h said of the whole
 * body (as the review reads it: MF_DOC_JSON_WIDE).
 */
static void
same_acceptance(const uint8_t *data, size_t size, enum mf_rc *wide,
    struct mf_error *werr)
{
	struct mf_doc *doc = NULL;
	struct mf_error err;
	enum mf_rc rc;
	json_t *j;

	memset(werr, 0, sizeof(*werr));
	*wide = mf_doc_parse((const char *)data, size, MF_DOC_JSON_WIDE, &doc,
	    werr);
	mf_doc_free(doc);
	doc = NULL;
	same_when_kept(data, size, *wide, werr);
	/* jansson reads a NUL as the end of the input; doc.h refuses it. */
	if (memchr(data, 0, size) != NULL)
		return;
	j = json_loadb((const char *)data, size,
	    JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
	rc = mf_doc_parse((const char *)data, size, MF_DOC_JSON, &doc, &err);
	if ((rc == MF_OK) != (j != NULL) && rc != MF_ETOOBIG &&
	    rc != MF_ENOMEM) {
		fprintf(stderr, "doc.h %s, jansson %s: %s\n",
		    rc == MF_OK ? "accepts" : "refuses",
		    j != NULL ? "accepts" : "refuses", MSG(&err));
		abort();
	}
	json_decref(j);
	mf_doc_free(doc);
}

/* A body doc.h refuses is answered 400 with doc.h's error, as the review
 * words it: "the body is ..." unless it names a field. */
static void
same_refusal(const struct mf_answer *ans, enum mf_rc rc,
    const struct mf_error *whole)
{
	struct mf_error want;
	json_t *j;
	const char *got;

	if (rc != MF_EINVAL && rc != MF_ETOOBIG)
		return;
	want = *whole;
	if (whole->field[0] == '\0')
		mf_error_set(&want, rc, NULL, whole->line, whole->column,
		    "the body is %s", whole->text);
	j = json_loadb(ans->body, ans->len, 0, NULL);
	got = json_string_value(json_object_get(j, "error"));
	if (ans->kind != MF_ANS_INVALID || got == NULL ||
	    strcmp(got, MSG(&want)) != 0) {
		fprintf(stderr, "review: %.*s; doc.h: %s\n", (int)ans->len,
		    ans->body, MSG(&want));
		abort();
	}
	json_decref(j);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mf_catalog by_memory;
	struct mf_api api;
	struct mf_answer ans;
	struct mf_error err;
	enum mf_rc rc;
	char *body = NULL;

	load_once();
	/* The same cards, borrowed, selected by memory. */
	by_memory = *cat;
	by_memory.k8s_select = MF_K8S_SELECT_MEMORY;
	memset(&api, 0, sizeof(api));
	api.cat = cat;
	api.models = models;
	if (size > 0 && strchr("{ \t\r\n", data[0]) == NULL) {
		body = wrap(data[0], (const char *)data + 1, size - 1);
		if (body == NULL)
			return 0;
		if (data[0] & 8)
			api.cat = &by_memory;
		mf_api_review(&api, body, strlen(body), MF_DOC_JSON,
		    MF_OUT_JSON, &ans);
		check(&ans);
		mf_answer_free(&ans);
		free(body);
		return 0;
	}
	same_acceptance(data, size, &rc, &err);
	for (int i = 0; i < 2; i++) {
		api.cat = i == 0 ? cat : &by_memory;
		mf_api_review(&api, (const char *)data, size, MF_DOC_JSON,
		    MF_OUT_JSON, &ans);
		check(&ans);
		same_refusal(&ans, rc, &err);
		mf_answer_free(&ans);
	}
	return 0;
}
