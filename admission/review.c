#include "review.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "doc.h"
#include "manifest.h"
#include "place.h"
#include "qty.h"
#include "render.h"

#define REVIEW_VERSION "admission.k8s.io/v1"
#define ANN_MIN "memfloor.dev/min-memory"
#define ANN_SPEC "memfloor.dev/spec"
#define ANN_PLACEMENT "memfloor.dev/placement"
#define ANN_COST "memfloor.dev/estimated-cost"
#define GPU_RESOURCE "nvidia.com/gpu"

#define POINTER_MAX (64u << 10) /* one JSON Pointer, escaped */
#define MESSAGE_BUF (8u << 10)  /* a denial message before it is cut */
#define MAX_WARNINGS 16         /* in one response */
#define GRAFT_MAX 8             /* members of a mapping copied by a graft */

enum target { TARGET_NONE, TARGET_POD, TARGET_JOB };

/* One review in progress.  JSON values are borrowed from the request. */
struct review {
	const struct mf_api *api;
	const char *uid;
	const char *operation;
	json_t *request;
	json_t *object;       /* NULL when absent or null */
	json_t *annotations;  /* the object's, when it opted in */
	json_t *pod;          /* the pod spec */
	const char *pod_path; /* its JSON Pointer */
	const char *name;     /* for the decision and the log; may be NULL */
	json_t *response;     /* owned: the AdmissionReview's response */
	json_t *patch;        /* owned */
	json_t *warnings;     /* owned */
	int nomem;            /* an allocation failed: answer 500 */
	enum mf_verdict verdict;
};

/* --- small helpers ---------------------------------------------------- */

static const char *
str_at(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static int
streq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/*
 * Set key of o to v, noting a failed allocation (NULL o or v).  jansson's
 * *_new calls steal v even when they fail.
 */
static void
put(struct review *rv, json_t *o, const char *key, json_t *v)
{
	if (json_object_set_new(o, key, v) != 0)
		rv->nomem = 1;
}

static void
push(struct review *rv, json_t *a, json_t *v)
{
	if (json_array_append_new(a, v) != 0)
		rv->nomem = 1;
}

/*
 * Cut s to at most max bytes: at a space when one is in the second half,
 * never inside a UTF-8 sequence, trailing punctuation dropped, and "..."
 * to show the cut.  s must hold max + 1 bytes.
 */
static void
clip(char *s, size_t max)
{
	size_t cut, i;

	if (strlen(s) <= max)
		return;
	cut = max - 3;
	while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
		cut--;
	for (i = cut; i > max / 2; i--)
		if (s[i] == ' ') {
			cut = i;
			break;
		}
	while (cut > 0 && strchr(" ,;:.(", s[cut - 1]) != NULL)
		cut--;
	memcpy(s + cut, "...", 4);
}

/* Length of the valid UTF-8 sequence at s (as jansson checks it), or 0. */
static size_t
utf8_seq(const unsigned char *s)
{
	size_t n;
	uint32_t v;

	if (s[0] < 0x80)
		return 1;
	if (s[0] < 0xC2 || s[0] > 0xF4)
		return 0;
	n = s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
	v = s[0] & (0x7Fu >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3Fu);
	}
	if ((n == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ||
	    (n == 4 && (v < 0x10000 || v > 0x10FFFF)))
		return 0;
	return n;
}

/*
 * Replace every byte that does not start a valid UTF-8 sequence with '?':
 * messages quote input cut at a byte count, and JSON strings must be
 * valid UTF-8.
 */
static void
fix_utf8(char *s)
{
	unsigned char *p = (unsigned char *)s;
	size_t n;

	while (*p != '\0') {
		n = utf8_seq(p);
		if (n == 0)
			*p++ = '?';
		else
			p += n;
	}
}

static void warnf(struct review *rv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
warnf(struct review *rv, const char *fmt, ...)
{
	char text[256];
	va_list ap;

	if (json_array_size(rv->warnings) >= MAX_WARNINGS)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	fix_utf8(text);
	clip(text, MF_REVIEW_WARNING_MAX);
	push(rv, rv->warnings, json_string(text));
}

static char *
base64(const char *s, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                          "abcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = (const unsigned char *)s;
	char *out = malloc(4 * ((n + 2) / 3) + 1), *o = out;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		*o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		*o++ = i + 2 < n ? tab[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* base + "/" + key escaped as RFC 6901 says (~ as ~0, / as ~1). */
static char *
pointer(const char *base, const char *key)
{
	struct mf_buf b;
	char *s = NULL;
	size_t n;

	mf_buf_init(&b, POINTER_MAX);
	mf_buf_printf(&b, "%s/", base);
	while (*key != '\0') {
		n = strcspn(key, "~/");
		mf_buf_add(&b, key, n);
		key += n;
		if (*key != '\0')
			mf_buf_add(&b, *key++ == '~' ? "~0" : "~1", 2);
	}
	if (b.rc == MF_OK)
		s = mf_buf_take(&b);
	mf_buf_free(&b);
	return s;
}

/*
 * Append {"op", "path": base/key (or base when key is NULL), "value"}
 * (value stolen; NULL only for "remove").
 */
static void
op(struct review *rv, const char *verb, const char *base, const char *key,
    json_t *value)
{
	char *path = key != NULL ? pointer(base, key) : NULL;
	json_t *o = NULL;

	if (key == NULL || path != NULL)
		o = json_pack("{s:s, s:s}", "op", verb, "path",
		    key != NULL ? path : base);
	free(path);
	if (value != NULL)
		put(rv, o, "value", value);
	else if (strcmp(verb, "remove") != 0)
		rv->nomem = 1;
	push(rv, rv->patch, o);
}

/* --- the envelope ------------------------------------------------------ */

static enum mf_rc
need_string(const json_t *o, const char *key, const char *path,
    const char **out, struct mf_error *err)
{
	const json_t *v = json_object_get(o, key);

	if (v == NULL || json_is_null(v))
		return mf_error_set(err, MF_EINVAL, path, 0, 0, "is required");
	if (!json_is_string(v))
		return mf_error_set(err, MF_EINVAL, path, 0, 0,
		    "must be a string");
	*out = json_string_value(v);
	return MF_OK;
}

static enum mf_rc
check_header(const json_t *root, struct mf_error *err)
{
	static const char *const want[][2] = {
		{ "apiVersion", REVIEW_VERSION },
		{ "kind", "AdmissionReview" },
	};
	const char *s;

	if (!json_is_object(root))
		return mf_error_set(err, MF_EINVAL, NULL, 0, 0,
		    "an AdmissionReview must be a JSON object");
	for (size_t i = 0; i < 2; i++) {
		if (need_string(root, want[i][0], want[i][0], &s, err) != MF_OK)
			return MF_EINVAL;
		if (strcmp(s, want[i][1]) != 0)
			return mf_error_set(err, MF_EINVAL, want[i][0], 0, 0,
			    "'%.40s' is not '%s'%s", s, want[i][1],
			    i == 0 ?
			        " (set admissionReviewVersions: [v1] in the "
			        "webhook configuration)" :
			        "");
	}
	return MF_OK;
}

/* The request's fields that every review needs. */
static enum mf_rc
read_envelope(json_t *root, struct review *rv, struct mf_error *err)
{
	json_t *req, *obj;

	if (check_header(root, err) != MF_OK)
		return MF_EINVAL;
	req = json_object_get(root, "request");
	if (req == NULL || json_is_null(req))
		return mf_error_set(err, MF_EINVAL, "request", 0, 0,
		    "is required");
	if (!json_is_object(req))
		return mf_error_set(err, MF_EINVAL, "request", 0, 0,
		    "must be an object");
	if (need_string(req, "uid", "request.uid", &rv->uid, err) != MF_OK)
		return MF_EINVAL;
	if (rv->uid[0] == '\0')
		return mf_error_set(err, MF_EINVAL, "request.uid", 0, 0,
		    "must not be empty");
	if (need_string(req, "operation", "request.operation", &rv->operation,
	        err) != MF_OK)
		return MF_EINVAL;
	obj = json_object_get(req, "object");
	if (obj != NULL && !json_is_null(obj) && !json_is_object(obj))
		return mf_error_set(err, MF_EINVAL, "request.object", 0, 0,
		    "must be an object");
	rv->request = req;
	rv->object = json_is_object(obj) ? obj : NULL;
	if (rv->object == NULL &&
	    (streq(rv->operation, "CREATE") || streq(rv->operation, "UPDATE")))
		return mf_error_set(err, MF_EINVAL, "request.object", 0, 0,
		    "is required for %s", rv->operation);
	return MF_OK;
}

/* Pod or Job, from request.kind, else from the object's own fields. */
static enum target
target_of(const struct review *rv)
{
	const json_t *k = json_object_get(rv->request, "kind");
	const char *group = "", *version, *kind, *api, *slash;
	size_t glen = 0;

	if (json_is_object(k)) {
		group = str_at(k, "group") ? str_at(k, "group") : "";
		glen = strlen(group);
		version = str_at(k, "version");
		kind = str_at(k, "kind");
	} else {
		api = str_at(rv->object, "apiVersion");
		kind = str_at(rv->object, "kind");
		if (api == NULL)
			return TARGET_NONE;
		slash = strchr(api, '/');
		group = api;
		glen = slash != NULL ? (size_t)(slash - api) : 0;
		version = slash != NULL ? slash + 1 : api;
	}
	if (!streq(version, "v1") || kind == NULL)
		return TARGET_NONE;
	if (glen == 0 && strcmp(kind, "Pod") == 0)
		return TARGET_POD;
	if (glen == 5 && strncmp(group, "batch", 5) == 0 &&
	    strcmp(kind, "Job") == 0)
		return TARGET_JOB;
	return TARGET_NONE;
}

/*
 * Whether admission runs: CREATE or UPDATE of a Pod or Job itself (no
 * subresource) that carries an opt-in annotation.
 */
static int
opted_in(struct review *rv)
{
	const char *sub = str_at(rv->request, "subResource");
	json_t *meta, *ann;

	if (!streq(rv->operation, "CREATE") && !streq(rv->operation, "UPDATE"))
		return 0;
	if (sub != NULL && sub[0] != '\0')
		return 0;
	if (target_of(rv) == TARGET_NONE)
		return 0;
	meta = json_object_get(rv->object, "metadata");
	ann = json_object_get(meta, "annotations");
	if (!json_is_object(ann) ||
	    (json_object_get(ann, ANN_MIN) == NULL &&
	        json_object_get(ann, ANN_SPEC) == NULL))
		return 0;
	rv->annotations = ann;
	return 1;
}

static const char *
object_name(const struct review *rv)
{
	const json_t *meta = json_object_get(rv->object, "metadata");
	const char *keys[] = { "name", "generateName" }, *s;

	for (size_t i = 0; i < 2; i++) {
		s = str_at(meta, keys[i]);
		if (s != NULL && s[0] != '\0')
			return s;
	}
	s = str_at(rv->request, "name");
	return s != NULL && s[0] != '\0' ? s : NULL;
}

/* --- denial ------------------------------------------------------------ */

static void
deny(struct review *rv, int code, const char *message)
{
	char text[MF_REVIEW_MESSAGE_MAX + 2];

	mf_copy(text, sizeof(text), message);
	fix_utf8(text);
	clip(text, MF_REVIEW_MESSAGE_MAX);
	put(rv, rv->response, "allowed", json_false());
	put(rv, rv->response, "status",
	    json_pack("{s:i, s:s}", "code", code, "message", text));
}

static void
deny_annotation(struct review *rv, const char *annotation, const char *what)
{
	char text[MF_REVIEW_MESSAGE_MAX + 2];

	snprintf(text, sizeof(text), "annotation %s: %s", annotation, what);
	deny(rv, 400, text);
}

/* "key: value, ..." of a fix's manifestChange object. */
static void
changes_text(struct mf_buf *b, json_t *changes)
{
	const char *key, *sep = "";
	json_t *v;
	char *s;

	json_object_foreach (changes, key, v) {
		if (json_is_string(v)) {
			mf_buf_printf(b, "%s%s: %s", sep, key,
			    json_string_value(v));
		} else {
			s = json_dumps(v, JSON_ENCODE_ANY);
			mf_buf_printf(b, "%s%s: %s", sep, key, s ? s : "?");
			free(s);
		}
		sep = ", ";
	}
}

/* "; suggested fix: fsdp over 2 GPUs (spec...: 2), placement H100 x2" */
static void
suggestion_text(struct mf_buf *b, const struct mf_job *job,
    const struct mf_decision *d, const json_t *decision)
{
	const struct mf_fix_option *e;
	json_t *entry;

	if (d->suggested < 0) {
		if (d->from_model)
			mf_buf_printf(b, "; no fix makes it fit");
		return;
	}
	e = &d->fixes[d->suggested];
	entry = json_array_get(json_object_get(decision, "fixes"),
	    (size_t)d->suggested);
	if (e->fix == MF_FIX_FSDP)
		mf_buf_printf(b, "; suggested fix: fsdp over %lld GPUs (",
		    (long long)e->gpus);
	else
		mf_buf_printf(b, "; suggested fix: %s (", mf_fix_name(e->fix));
	changes_text(b, json_object_get(entry, "manifestChange"));
	mf_buf_printf(b, "), placement %s x%lld", e->placement.gpu->name,
	    (long long)e->placement.count);
	if (job->reference_hours > 0)
		mf_buf_printf(b, ", $%.2f to finish", e->placement.cost);
	if (e->fix == MF_FIX_LORA || e->fix == MF_FIX_QLORA)
		mf_buf_printf(b, " (a modelling decision)");
}

static void
deny_rejection(struct review *rv, const struct mf_job *job,
    const struct mf_decision *d)
{
	json_t *decision = mf_render_decision(job, d, rv->api->cat);
	struct mf_buf b;

	mf_buf_init(&b, MESSAGE_BUF);
	mf_buf_printf(&b, "%s", d->reason);
	suggestion_text(&b, job, d, decision);
	json_decref(decision);
	if (decision == NULL || b.rc == MF_ENOMEM)
		rv->nomem = 1;
	else
		deny(rv, 403, b.data);
	mf_buf_free(&b);
	rv->verdict = MF_VERDICT_REJECTED;
}

/* --- the job from the annotations -------------------------------------- */

/* Copies that lay the min-memory annotation into a spec's node tree. */
struct graft {
	struct mf_node spec, res, gpu, qty;
	struct mf_node kids[3][GRAFT_MAX];
};

/*
 * A copy of map (NULL: an empty one) named key, with member in place of
 * the child of the same key or appended.  NULL when map is no mapping or
 * too big to copy: the spec reader then refuses it as it stands.
 */
static struct mf_node *
with_member(struct mf_node *copy, struct mf_node *kids,
    const struct mf_node *map, const char *key, const struct mf_node *member)
{
	const struct mf_node *c;
	size_t n = 0;
	int found = 0;

	if (map != NULL && (map->type != MF_NODE_MAP || map->len >= GRAFT_MAX))
		return NULL;
	memset(copy, 0, sizeof(*copy));
	if (map != NULL)
		*copy = *map;
	copy->type = MF_NODE_MAP;
	copy->key = key;
	for (c = map != NULL ? map->child : NULL; c != NULL; c = c->next) {
		found |= strcmp(c->key, member->key) == 0;
		kids[n++] = strcmp(c->key, member->key) == 0 ? *member : *c;
	}
	if (!found)
		kids[n++] = *member;
	for (size_t i = 0; i < n; i++)
		kids[i].next = i + 1 < n ? &kids[i + 1] : NULL;
	copy->child = &kids[0];
	copy->len = n;
	return copy;
}

/* spec (NULL: none) with resources.gpu.minMemory set to qty. */
static const struct mf_node *
graft_floor(struct graft *g, const struct mf_node *spec, const char *qty)
{
	const struct mf_node *res = mf_node_get(spec, "resources");
	const struct mf_node *gpu = mf_node_get(res, "gpu");
	struct mf_node *n;

	memset(&g->qty, 0, sizeof(g->qty));
	g->qty.type = MF_NODE_STR;
	g->qty.key = "minMemory";
	g->qty.text = qty;
	g->qty.len = strlen(qty);
	n = with_member(&g->gpu, g->kids[0], gpu, "gpu", &g->qty);
	if (n != NULL)
		n = with_member(&g->res, g->kids[1], res, "resources", n);
	if (n != NULL)
		n = with_member(&g->spec, g->kids[2], spec, NULL, n);
	return n != NULL ? n : spec;
}

static int
spec_sets_floor(const struct mf_node *spec)
{
	return mf_node_get(mf_node_get(mf_node_get(spec, "resources"), "gpu"),
	           "minMemory") != NULL;
}

/* Check the min-memory annotation; *text stays NULL when it is absent. */
static int
read_min(struct review *rv, const char **text, int64_t *bytes)
{
	const json_t *v = json_object_get(rv->annotations, ANN_MIN);
	enum mf_qty_err qe;
	char why[160];

	*text = NULL;
	if (v == NULL)
		return 0;
	if (!json_is_string(v)) {
		deny_annotation(rv, ANN_MIN, "must be a string");
		return -1;
	}
	qe = mf_qty_parse_bytes(json_string_value(v), json_string_length(v),
	    bytes, NULL);
	if (qe != MF_QTY_OK) {
		snprintf(why, sizeof(why), "'%.40s' %s", json_string_value(v),
		    mf_qty_strerror(qe));
		deny_annotation(rv, ANN_MIN, why);
		return -1;
	}
	*text = json_string_value(v);
	return 0;
}

/* Parse the spec annotation; *doc stays NULL when it is absent. */
static int
read_spec_doc(struct review *rv, struct mf_doc **doc)
{
	const json_t *v = json_object_get(rv->annotations, ANN_SPEC);
	struct mf_error err;
	enum mf_rc rc;

	*doc = NULL;
	if (v == NULL)
		return 0;
	if (!json_is_string(v)) {
		deny_annotation(rv, ANN_SPEC, "must be a string");
		return -1;
	}
	memset(&err, 0, sizeof(err));
	rc = mf_doc_parse(json_string_value(v), json_string_length(v),
	    MF_DOC_AUTO, doc, &err);
	if (rc == MF_ENOMEM)
		rv->nomem = 1;
	else if (rc != MF_OK)
		deny_annotation(rv, ANN_SPEC, err.message);
	return rc == MF_OK ? 0 : -1;
}

/*
 * The job the annotations describe.  *doc owns its strings (NULL without
 * a spec annotation).  On a bad annotation the review is denied and -1
 * returned.
 */
static int
read_job(struct review *rv, struct mf_doc **doc, struct mf_job *job)
{
	const struct mf_node *spec;
	const char *min;
	struct mf_error err;
	struct graft g;
	int64_t min_bytes = 0;

	if (read_min(rv, &min, &min_bytes) != 0 || read_spec_doc(rv, doc) != 0)
		return -1;
	spec = *doc != NULL ? mf_doc_root(*doc) : NULL;
	if (min != NULL && !spec_sets_floor(spec))
		spec = graft_floor(&g, spec, min);
	memset(&err, 0, sizeof(err));
	if (mf_job_read_spec(spec, "spec", rv->name, rv->api->models, job,
	        &err) != MF_OK) {
		deny_annotation(rv, *doc != NULL ? ANN_SPEC : ANN_MIN,
		    err.message);
		return -1;
	}
	/* The catalogue's estimator: a review has no query. */
	job->work.estimator = rv->api->cat->estimator;
	if (job->model_source == MF_MODEL_URL) {
		deny_annotation(rv, ANN_SPEC,
		    "spec.model.configUrl: is not fetched for an admission "
		    "review; name a shipped model or give its config inline");
		return -1;
	}
	if (min != NULL && job->min_memory != min_bytes)
		warnf(rv, "%s %s ignored: %s sets resources.gpu.minMemory",
		    ANN_MIN, min, ANN_SPEC);
	return 0;
}

/* --- the patch ---------------------------------------------------------- */

/* The pod spec and its pointer; NULL when the object has none. */
static json_t *
find_pod(struct review *rv)
{
	json_t *spec = json_object_get(rv->object, "spec");

	if (target_of(rv) == TARGET_POD) {
		rv->pod_path = "/spec";
		return json_is_object(spec) ? spec : NULL;
	}
	rv->pod_path = "/spec/template/spec";
	spec = json_object_get(json_object_get(spec, "template"), "spec");
	return json_is_object(spec) ? spec : NULL;
}

static void
patch_selector(struct review *rv, const struct mf_gpu *gpu)
{
	json_t *sel = json_object_get(rv->pod, "nodeSelector"), *all;
	const struct mf_label *l;
	const char *old;
	char base[64];

	snprintf(base, sizeof(base), "%s/nodeSelector", rv->pod_path);
	if (gpu->nlabels == 0)
		return;
	if (!json_is_object(sel)) {
		all = json_object();
		for (size_t i = 0; i < gpu->nlabels; i++)
			put(rv, all, gpu->labels[i].key,
			    json_string(gpu->labels[i].value));
		op(rv, "add", base, NULL, all);
		return;
	}
	for (size_t i = 0; i < gpu->nlabels; i++) {
		l = &gpu->labels[i];
		old = str_at(sel, l->key);
		if (old != NULL && strcmp(old, l->value) != 0)
			warnf(rv, "nodeSelector %s: %s replaced by %s", l->key,
			    old, l->value);
		op(rv, "add", base, l->key, json_string(l->value));
	}
}

/* A container's own GPU limit, when it differs from count. */
static void
check_limit(struct review *rv, const json_t *c, const json_t *v,
    const char *count)
{
	const char *name = str_at(c, "name");
	char have[32];

	if (json_is_string(v))
		snprintf(have, sizeof(have), "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(have, sizeof(have), "%lld",
		    (long long)json_integer_value(v));
	else
		snprintf(have, sizeof(have), "?");
	if (strcmp(have, count) != 0)
		warnf(rv, "container %s keeps %s %s; the placement has %s",
		    name != NULL ? name : "?", GPU_RESOURCE, have, count);
}

/* Every container without its own GPU limit gets one of count. */
static void
patch_limits(struct review *rv, int64_t count)
{
	json_t *cs = json_object_get(rv->pod, "containers"), *c, *res, *lim;
	char base[96], limits[112], n[24];
	size_t i;

	snprintf(n, sizeof(n), "%lld", (long long)count);
	json_array_foreach (cs, i, c) {
		if (!json_is_object(c))
			continue;
		res = json_object_get(c, "resources");
		lim = json_object_get(res, "limits");
		snprintf(base, sizeof(base), "%s/containers/%zu/resources",
		    rv->pod_path, i);
		snprintf(limits, sizeof(limits), "%s/limits", base);
		if (!json_is_object(res))
			op(rv, "add", base, NULL,
			    json_pack("{s:{s:s}}", "limits", GPU_RESOURCE, n));
		else if (!json_is_object(lim))
			op(rv, "add", limits, NULL,
			    json_pack("{s:s}", GPU_RESOURCE, n));
		else if (json_object_get(lim, GPU_RESOURCE) == NULL)
			op(rv, "add", limits, GPU_RESOURCE, json_string(n));
		else
			check_limit(rv, c, json_object_get(lim, GPU_RESOURCE),
			    n);
	}
}

/* Add the annotation, or replace it; value NULL removes it. */
static void
patch_annotation(struct review *rv, const char *key, const char *value)
{
	int has = json_object_get(rv->annotations, key) != NULL;

	if (value == NULL) {
		if (has)
			op(rv, "remove", "/metadata/annotations", key, NULL);
		return;
	}
	op(rv, has ? "replace" : "add", "/metadata/annotations", key,
	    json_string(value));
}

static void
allow_placed(struct review *rv, const struct mf_job *job,
    const struct mf_decision *d)
{
	const struct mf_placement *p = &d->placement;
	/* A GPU name is at most 63 characters; "%.2f" of any double fits. */
	char placement[128], floor[MF_QTY_STRMAX], cost[512];
	char *json = NULL, *b64 = NULL;

	patch_selector(rv, p->gpu);
	patch_limits(rv, p->count);
	snprintf(placement, sizeof(placement), "%s x %lld", p->gpu->name,
	    (long long)p->count);
	patch_annotation(rv, ANN_PLACEMENT, placement);
	mf_qty_format(d->floor, (enum mf_qty_format)d->floor_format, floor,
	    sizeof(floor));
	patch_annotation(rv, ANN_MIN, floor);
	snprintf(cost, sizeof(cost), "%.2f", p->cost);
	patch_annotation(rv, ANN_COST, job->reference_hours > 0 ? cost : NULL);
	if (!rv->nomem)
		json = json_dumps(rv->patch, JSON_COMPACT);
	if (json != NULL)
		b64 = base64(json, strlen(json));
	if (b64 == NULL)
		rv->nomem = 1;
	put(rv, rv->response, "allowed", json_true());
	put(rv, rv->response, "patchType", json_string("JSONPatch"));
	put(rv, rv->response, "patch", json_string(b64 != NULL ? b64 : ""));
	free(json);
	free(b64);
	rv->verdict = MF_VERDICT_ADMITTED;
}

/* Admission proper, for an object that opted in. */
static void
admit(struct review *rv)
{
	struct mf_decision *d = NULL;
	struct mf_doc *doc = NULL;
	struct mf_error err;
	struct mf_job job;
	char text[96];

	rv->pod = find_pod(rv);
	if (rv->pod == NULL) {
		snprintf(text, sizeof(text), "the object has no pod spec at %s",
		    rv->pod_path);
		deny(rv, 400, text);
		return;
	}
	if (read_job(rv, &doc, &job) != 0)
		goto out;
	d = malloc(sizeof(*d));
	if (d == NULL) {
		rv->nomem = 1;
		goto out;
	}
	memset(&err, 0, sizeof(err));
	if (mf_place(&job, rv->api->cat, d, &err) != MF_OK) {
		deny_annotation(rv, doc != NULL ? ANN_SPEC : ANN_MIN,
		    err.message);
		goto out;
	}
	for (size_t i = 0; i < d->nwarn; i++)
		warnf(rv, "%s", d->warnings[i]);
	if (d->admitted)
		allow_placed(rv, &job, d);
	else
		deny_rejection(rv, &job, d);
out:
	free(d);
	mf_doc_free(doc);
}

/* --- the call ------------------------------------------------------------ */

static void
answer_invalid(struct mf_answer *ans, struct mf_error *err)
{
	fix_utf8(err->message);
	mf_answer_err(ans, MF_EINVAL, err, MF_OUT_JSON);
}

static void
respond(struct review *rv, struct mf_answer *ans)
{
	json_t *review;

	if (json_object_get(rv->response, "allowed") == NULL)
		put(rv, rv->response, "allowed", json_true());
	if (json_array_size(rv->warnings) > 0)
		put(rv, rv->response, "warnings", json_incref(rv->warnings));
	if (rv->nomem) {
		mf_answer_json(ans, MF_ANS_INTERNAL, NULL, MF_OUT_JSON);
		return;
	}
	review = json_pack("{s:s, s:s, s:O}", "apiVersion", REVIEW_VERSION,
	    "kind", "AdmissionReview", "response", rv->response);
	mf_answer_json(ans, MF_ANS_OK, review, MF_OUT_JSON);
	ans->verdict = rv->verdict;
}

void
mf_api_review(const struct mf_api *api, const char *body, size_t len,
    enum mf_doc_format fmt, enum mf_output out, struct mf_answer *ans)
{
	(void)fmt;
	(void)out;
	struct review rv;
	struct mf_error err;
	json_error_t jerr;
	json_t *root;

	memset(ans, 0, sizeof(*ans));
	memset(&rv, 0, sizeof(rv));
	memset(&err, 0, sizeof(err));
	memset(&jerr, 0, sizeof(jerr));
	rv.api = api;
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL &&
	    json_error_code(&jerr) == json_error_out_of_memory) {
		mf_answer_json(ans, MF_ANS_INTERNAL, NULL, MF_OUT_JSON);
		return;
	}
	if (root == NULL) {
		mf_error_set(&err, MF_EINVAL, NULL, jerr.line, jerr.column,
		    "the body is not JSON: %s", jerr.text);
		answer_invalid(ans, &err);
		return;
	}
	if (read_envelope(root, &rv, &err) != MF_OK) {
		answer_invalid(ans, &err);
		goto out;
	}
	rv.name = object_name(&rv);
	mf_copy(ans->job, sizeof(ans->job), rv.name ? rv.name : "");
	rv.response = json_pack("{s:s}", "uid", rv.uid);
	rv.patch = json_array();
	rv.warnings = json_array();
	if (rv.response == NULL || rv.patch == NULL || rv.warnings == NULL)
		rv.nomem = 1;
	else if (opted_in(&rv))
		admit(&rv);
	respond(&rv, ans);
out:
	json_decref(rv.response);
	json_decref(rv.patch);
	json_decref(rv.warnings);
	json_decref(root);
}
