#include "review.h"

#include <assert.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/buf.h"
#include "../doc/doc.h"
#include "../base/jw.h"
#include "../manifest/manifest.h"
#include "patch.h"
#include "../place/place.h"
#include "../base/qty.h"
#include "../base/str.h"
#include "../answer/render.h"
#include "review_int.h"

#define REVIEW_VERSION "admission.k8s.io/v1"
#define PATCH_MAX (1u << 20)    /* the patch text, before base64 */
#define RESPONSE_MAX (2u << 20) /* the answer, with the patch in base64 */
#define MESSAGE_BUF (8u << 10)  /* a denial message before it is cut */
/* The ANN_AFFINITY value: it goes into the patch, so what passes the
 * patch's cap does not fit either. */
#define AFFINITY_MAX PATCH_MAX

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

void
mf_review_warn(struct review *rv, const char *fmt, ...)
{
	char text[256];
	va_list ap;

	if (rv->nwarn >= MAX_WARNINGS)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	mf_utf8_fix(text);
	clip(text, MF_REVIEW_WARNING_MAX);
	mf_copy(rv->warnings[rv->nwarn++], sizeof(rv->warnings[0]), text);
}

/* --- the envelope ------------------------------------------------------ */

static enum mf_rc
need_string(const struct mf_node *o, const char *key, const char *path,
    const char **out, struct mf_error *err)
{
	const struct mf_node *v = mf_node_get(o, key);

	if (v == NULL || v->type == MF_NODE_NULL)
		return mf_error_set(err, MF_EINVAL, path, 0, 0, "is required");
	if (!is_str(v))
		return mf_error_set(err, MF_EINVAL, path, 0, 0,
		    "must be a string");
	*out = v->text;
	return MF_OK;
}

static enum mf_rc
check_header(const struct mf_node *root, struct mf_error *err)
{
	static const char *const want[][2] = {
		{ "apiVersion", REVIEW_VERSION },
		{ "kind", "AdmissionReview" },
	};
	const char *s;

	if (!is_map(root))
		return mf_error_set(err, MF_EINVAL, NULL, 0, 0,
		    "an AdmissionReview must be a JSON object");
	for (size_t i = 0; i < 2; i++) {
		if (need_string(root, want[i][0], want[i][0], &s, err) != MF_OK)
			return MF_EINVAL;
		if (strcmp(s, want[i][1]) != 0)
			return mf_error_set(err, MF_EINVAL, want[i][0], 0, 0,
			    "'%.40s' is not '%s'%s", s, want[i][1],
			    i == 0 ?
			        " (set admissionReviewVersions: [v1] in the webhook configuration)" :
			        "");
	}
	return MF_OK;
}

/* The request's fields that every review needs. */
static enum mf_rc
read_envelope(const struct mf_node *root, struct review *rv,
    struct mf_error *err)
{
	const struct mf_node *req, *obj;

	if (check_header(root, err) != MF_OK)
		return MF_EINVAL;
	req = mf_node_get(root, "request");
	if (req == NULL || req->type == MF_NODE_NULL)
		return mf_error_set(err, MF_EINVAL, "request", 0, 0,
		    "is required");
	if (!is_map(req))
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
	obj = mf_node_get(req, "object");
	if (obj != NULL && obj->type != MF_NODE_NULL && !is_map(obj))
		return mf_error_set(err, MF_EINVAL, "request.object", 0, 0,
		    "must be an object");
	rv->request = req;
	rv->object = is_map(obj) ? obj : NULL;
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
	const struct mf_node *k = mf_node_get(rv->request, "kind");
	const char *group = "", *version, *kind, *api, *slash;
	size_t glen = 0;

	if (is_map(k)) {
		group = str_at(k, "group");
		if (group == NULL)
			group = "";
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
	const struct mf_node *meta, *ann;

	if (!streq(rv->operation, "CREATE") && !streq(rv->operation, "UPDATE"))
		return 0;
	if (sub != NULL && sub[0] != '\0')
		return 0;
	rv->target = target_of(rv);
	if (rv->target == TARGET_NONE)
		return 0;
	meta = mf_node_get(rv->object, "metadata");
	ann = mf_node_get(meta, "annotations");
	if (!is_map(ann) ||
	    (mf_node_get(ann, ANN_MIN) == NULL &&
	        mf_node_get(ann, ANN_SPEC) == NULL))
		return 0;
	rv->annotations = ann;
	return 1;
}

static const char *
object_name(const struct review *rv)
{
	const struct mf_node *meta = mf_node_get(rv->object, "metadata");
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

void
mf_review_deny(struct review *rv, int code, const char *message)
{
	char text[MF_REVIEW_MESSAGE_MAX + 2];

	mf_copy(text, sizeof(text), message);
	mf_utf8_fix(text);
	clip(text, MF_REVIEW_MESSAGE_MAX);
	rv->denied = 1;
	rv->code = code;
	mf_copy(rv->message, sizeof(rv->message), text);
}

void
mf_review_deny_annotation(struct review *rv, const char *annotation,
    const char *what)
{
	char text[MF_REVIEW_MESSAGE_MAX + 2];

	snprintf(text, sizeof(text), "annotation %s: %s", annotation, what);
	mf_review_deny(rv, 400, text);
}

static void
deny_error(struct review *rv, const char *annotation,
    const struct mf_error *err)
{
	char msg[MF_ERROR_MAX];

	mf_review_deny_annotation(rv, annotation,
	    mf_error_message(err, msg, sizeof(msg)));
}

/* "field: value, ..." of what the fixes of e set in the manifest. */
static void
changes_text(struct mf_buf *b, const struct mf_fix_option *e)
{
	const char *sep = "";
	char v[32];

	for (unsigned left = e->fixes; left != 0;) {
		enum mf_fix f = mf_fix_take(&left);

		mf_buf_printf(b, "%s%s: %s", sep, mf_fix_info(f)->field,
		    mf_fix_value_text(f, e->amount, v, sizeof(v)));
		sep = ", ";
	}
	if (e->count_change > 0) {
		mf_buf_printf(b, "%s%s: %lld", sep,
		    mf_fix_info(MF_FIX_REPLICAS)->field,
		    (long long)e->count_change);
		sep = ", ";
	}
	if (e->reference_hours > 0)
		mf_buf_printf(b, "%sspec.duration.referenceHours: %g", sep,
		    e->reference_hours);
}

/* lead "; suggested fix: ", then "fsdp over 2 GPUs (spec...: 2), placement
 * H100 x2" */
static void
suggestion_text(struct mf_buf *b, const char *lead, const struct mf_job *job,
    const struct mf_decision *d)
{
	const struct mf_fix_option *e;

	if (d->suggested < 0) {
		if (d->from_model)
			mf_buf_printf(b, "; no fix makes it fit");
		return;
	}
	assert(d->suggested < MF_FIX_COUNT && (size_t)d->suggested < d->nfixes);
	e = &d->fixes[d->suggested];
	if (e->fix == MF_FIX_FSDP)
		mf_buf_printf(b, "%sfsdp over %lld GPUs (", lead,
		    (long long)e->gpus);
	else
		mf_buf_printf(b, "%s%s (", lead, mf_fix_name(e->fix));
	changes_text(b, e);
	mf_buf_printf(b, "), placement %s x%lld", e->placement.gpu->name,
	    (long long)e->placement.count);
	if (job->reference_hours > 0)
		mf_buf_printf(b, ", $%.2f to finish", e->placement.cost);
	if (mf_fix_info(e->fix)->modelling)
		mf_buf_printf(b, " (a modelling decision)");
}

/* A rejection, denied with b's text, or the review out of memory when b
 * ran out. */
static void
deny_text(struct review *rv, const struct mf_buf *b)
{
	if (b->rc == MF_ENOMEM)
		rv->nomem = 1;
	else
		mf_review_deny(rv, 403, b->data);
	rv->verdict = MF_VERDICT_REJECTED;
}

static void
deny_rejection(struct review *rv, const struct mf_job *job,
    const struct mf_decision *d)
{
	struct mf_buf b;

	mf_buf_init(&b, MESSAGE_BUF);
	mf_buf_printf(&b, "%s", d->reason);
	suggestion_text(&b, "; suggested fix: ", job, d);
	deny_text(rv, &b);
	mf_buf_free(&b);
}

/* --- the job from the annotations -------------------------------------- */

/* Check the min-memory annotation; *text stays NULL when it is absent. */
static int
read_min(struct review *rv, const char **text, int64_t *bytes, int *format)
{
	const struct mf_node *v = mf_node_get(rv->annotations, ANN_MIN);
	enum mf_qty_format f;
	enum mf_qty_err qe;
	char why[256];

	*text = NULL;
	if (v == NULL)
		return 0;
	if (!is_str(v)) {
		mf_review_deny_annotation(rv, ANN_MIN, "must be a string");
		return -1;
	}
	qe = mf_qty_parse_memory(v->text, v->len, bytes, &f);
	if (qe != MF_QTY_OK) {
		mf_qty_explain(v->text, v->len, qe, why, sizeof(why));
		mf_review_deny_annotation(rv, ANN_MIN, why);
		return -1;
	}
	*format = (int)f;
	*text = v->text;
	return 0;
}

/* Parse the spec annotation; *doc stays NULL when it is absent. */
static int
read_spec_doc(struct review *rv, struct mf_doc **doc)
{
	const struct mf_node *v = mf_node_get(rv->annotations, ANN_SPEC);
	struct mf_error err;
	enum mf_rc rc;

	*doc = NULL;
	if (v == NULL)
		return 0;
	if (!is_str(v)) {
		mf_review_deny_annotation(rv, ANN_SPEC, "must be a string");
		return -1;
	}
	memset(&err, 0, sizeof(err));
	rc = mf_doc_parse(v->text, v->len, MF_DOC_AUTO, doc, &err);
	if (rc == MF_ENOMEM)
		rv->nomem = 1;
	else if (rc != MF_OK)
		deny_error(rv, ANN_SPEC, &err);
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
	int64_t min_bytes = 0;
	int min_format = 0;

	if (read_min(rv, &min, &min_bytes, &min_format) != 0 ||
	    read_spec_doc(rv, doc) != 0)
		return -1;
	spec = *doc != NULL ? mf_doc_root(*doc) : NULL;
	memset(&err, 0, sizeof(err));
	if (mf_job_read_spec_floor(spec, "spec", rv->name, rv->api->models,
	        min_bytes, min_format, job, &err) != MF_OK) {
		deny_error(rv, *doc != NULL ? ANN_SPEC : ANN_MIN, &err);
		return -1;
	}
	/* The catalogue's estimator: a review has no query. */
	job->work.estimator = rv->api->cat->estimator;
	if (job->model_source == MF_MODEL_URL) {
		mf_review_deny_annotation(rv, ANN_SPEC,
		    "spec.model.configUrl: is not fetched for an admission review; name a model GET /v1/models lists or give its config inline");
		return -1;
	}
	if (min != NULL && job->min_memory != min_bytes)
		mf_review_warn(rv,
		    "%s %s ignored: %s sets resources.gpu.minMemory", ANN_MIN,
		    min, ANN_SPEC);
	return 0;
}

/* --- the patch ---------------------------------------------------------- */

/* The pod spec and its pointer; NULL when the object has none. */
static const struct mf_node *
find_pod(struct review *rv)
{
	const struct mf_node *spec = mf_node_get(rv->object, "spec");

	if (rv->target == TARGET_POD) {
		rv->pod_path = "/spec";
		rv->pod_meta = mf_node_get(rv->object, "metadata");
		return is_map(spec) ? spec : NULL;
	}
	rv->pod_path = "/spec/template/spec";
	rv->pod_meta = mf_node_get(mf_node_get(spec, "template"), "metadata");
	spec = mf_node_get(mf_node_get(spec, "template"), "spec");
	return is_map(spec) ? spec : NULL;
}

/* --- the answer's patch ----------------------------------------------------
 */

/* Add the annotation, or replace it; value NULL removes it. */
static void
patch_annotation(struct review *rv, const char *key, const char *value)
{
	int has = mf_node_get(rv->annotations, key) != NULL;

	if (value == NULL) {
		if (has)
			mf_patch_str(&rv->patch, "remove",
			    "/metadata/annotations", key, NULL);
		return;
	}
	mf_patch_str(&rv->patch, has ? "replace" : "add",
	    "/metadata/annotations", key, value);
}

/* The member map of w's object: {key: value}. */
static void
write_one(struct mf_jw *w, const char *map, const char *key, const char *value)
{
	mf_jw_open(w, map, '{');
	mf_jw_str(w, key, value);
	mf_jw_close(w, '}');
}

/* key: value into the map (labels, annotations) of the pods' metadata at
 * base: one add of the map where there is none, else one add of the key
 * (which replaces a value already there). */
static void
patch_meta_key(struct review *rv, const char *base, const char *map,
    const char *key, const char *value)
{
	char at[TEXT_MAX];
	struct mf_buf t;

	if (!is_map(mf_node_get(rv->pod_meta, map))) {
		mf_patch_begin(&rv->patch, "add", base, map);
		write_one(&rv->patch.w, "value", key, value);
		mf_patch_end(&rv->patch);
		return;
	}
	mf_buf_fixed(&t, at, sizeof(at));
	mf_buf_str(&t, base);
	mf_buf_str(&t, "/");
	mf_buf_str(&t, map);
	mf_patch_str(&rv->patch, "add", at, key, value);
}

/*
 * The pods' metadata (a Pod's own, a Job's pod template's).  hex, the
 * job's fingerprint as placed (design 23: the decision's, the one its
 * admit answer carries), as the label LABEL_FINGERPRINT, so that what
 * watches the pods (dcgm-exporter with pod labels) names the job; and
 * rv->affinity, where review_pod.c wrote one, as the annotation
 * ANN_AFFINITY.  One add of the metadata where there is none.
 */
static void
patch_pod_metadata(struct review *rv, const char *hex)
{
	const char *base =
	    rv->target == TARGET_POD ? "/metadata" : "/spec/template/metadata";
	const char *record = rv->affinity.len > 0 ? rv->affinity.data : NULL;
	struct mf_patch *pt = &rv->patch;

	if (!is_map(rv->pod_meta)) {
		mf_patch_begin(pt, "add", base, NULL);
		mf_jw_open_lit(&pt->w, "value", '{');
		write_one(&pt->w, "labels", LABEL_FINGERPRINT, hex);
		if (record != NULL)
			write_one(&pt->w, "annotations", ANN_AFFINITY, record);
		mf_jw_close(&pt->w, '}');
		mf_patch_end(pt);
		return;
	}
	patch_meta_key(rv, base, "labels", LABEL_FINGERPRINT, hex);
	if (record != NULL)
		patch_meta_key(rv, base, "annotations", ANN_AFFINITY, record);
}

static void
answer_patch(struct review *rv)
{
	rv->patched = mf_patch_text(&rv->patch, &rv->patched_len);
	if (rv->patched == NULL)
		rv->nomem = 1;
}

/* The placement in words into text[TEXT_MAX]: "B200 x 8", as pods "B200
 * x 16 (2 pods of 8)". */
static void
placement_text(const struct review *rv, const struct mf_placement *p,
    char *text)
{
	struct mf_buf t;

	mf_buf_fixed(&t, text, TEXT_MAX);
	mf_buf_str(&t, p->gpu->name);
	mf_buf_str(&t, " x ");
	mf_buf_int(&t, p->count);
	if (rv->pods > 1) {
		mf_buf_str(&t, " (");
		mf_buf_int(&t, rv->pods);
		mf_buf_str(&t, " pods of ");
		mf_buf_int(&t, p->count / rv->pods);
		mf_buf_str(&t, ")");
	}
}

static void
allow_placed(struct review *rv, const struct mf_job *job,
    const struct mf_decision *d)
{
	const struct mf_placement *p = &d->placement;
	/* "%.2f" of any double fits. */
	char floor[MF_QTY_STRMAX], cost[512], placement[TEXT_MAX];

	placement_text(rv, p, placement);
	if (mf_review_patch_pod(rv, d, p->count / rv->pods, placement) != 0)
		return;
	patch_annotation(rv, ANN_PLACEMENT, placement);
	mf_qty_format(d->floor, (enum mf_qty_format)d->floor_format, floor,
	    sizeof(floor));
	patch_annotation(rv, ANN_MIN, floor);
	if (job->reference_hours > 0)
		mf_cents(p->cost, cost, sizeof(cost));
	patch_annotation(rv, ANN_COST, job->reference_hours > 0 ? cost : NULL);
	patch_pod_metadata(rv, d->fingerprint);
	if (rv->affinity.rc != MF_OK)
		rv->nomem = 1;
	answer_patch(rv);
	rv->verdict = MF_VERDICT_ADMITTED;
}

/* --- pods and nodes (design 11) ---------------------------------------- */

/* The Job's spec.KEY as a whole number (an int32, as the API server
 * keeps it), dflt when it is absent or null; -1 when it is none. */
static int64_t
job_int(const struct review *rv, const char *key, int64_t dflt)
{
	const struct mf_node *v =
	    mf_node_get(mf_node_get(rv->object, "spec"), key);
	long long n;

	if (v == NULL || v->type == MF_NODE_NULL)
		return dflt;
	if (v->type != MF_NODE_NUM || !whole(v->text, &n) || n < 0 ||
	    n > INT32_MAX)
		return -1;
	return n;
}

/*
 * The pods the object runs as, each of them on one node: a Pod, and a
 * Job that is not Indexed or runs its pods one at a time, is one (every
 * pod of a Job that is not Indexed is placed as the whole job); an
 * Indexed Job with parallelism N > 1 runs N pods at once, one a
 * completion index, and so must have N completions.  -1 after denying.
 */
static int64_t
pods_of(struct review *rv)
{
	const char *mode;
	int64_t par, comp;
	char why[400];

	if (rv->target != TARGET_JOB)
		return 1;
	mode = str_at(mf_node_get(rv->object, "spec"), "completionMode");
	par = job_int(rv, "parallelism", 1);
	comp = job_int(rv, "completions", -2);
	if (par < 0) {
		mf_review_deny(rv, 400,
		    "spec.parallelism must be a whole number from 0 to 2147483647");
		return -1;
	}
	if (!streq(mode, "Indexed")) {
		if (par > 1)
			mf_review_warn(rv,
			    "parallelism %lld: each pod is placed as the whole job; completionMode: Indexed places one job over them",
			    (long long)par);
		return 1;
	}
	if (par <= 1)
		return 1;
	if (par > MF_JOB_MAX_GPUS) {
		snprintf(why, sizeof(why),
		    "spec.parallelism %lld: an Indexed Job is placed as that many pods of at least a GPU each, and a job takes at most %d GPUs",
		    (long long)par, MF_JOB_MAX_GPUS);
		mf_review_deny(rv, 400, why);
		return -1;
	}
	if (comp != par) {
		snprintf(why, sizeof(why),
		    "spec.completions must equal spec.parallelism (%lld): an Indexed Job is placed as parallelism pods that run together, one a completion index",
		    (long long)par);
		mf_review_deny(rv, 400, why);
		return -1;
	}
	return par;
}

/* Whether the job's own count splits into rv->pods pods of whole
 * tensor-parallel groups; denies when it does not. */
static int
count_splits(struct review *rv, const struct mf_job *job)
{
	const struct mf_workload *w = &job->work;
	char why[400];

	if (rv->pods <= 1 || !job->count_given ||
	    (job->count % rv->pods == 0 &&
	        job->count / rv->pods % w->tensor == 0))
		return 1;
	snprintf(why, sizeof(why),
	    "the job's %lld GPUs (resources.gpu.count, or its sharding and parallelism) do not split into the Job's %lld pods (spec.parallelism) of whole tensor-parallel groups of %lld",
	    (long long)job->count, (long long)rv->pods, (long long)w->tensor);
	mf_review_deny_annotation(rv, ANN_SPEC, why);
	return 0;
}

/* job placed as pods (0: anywhere, over nodes) into *d; MF_OK or the
 * error of mf_place. */
static enum mf_rc
place_as(const struct review *rv, const struct mf_job *job, int64_t pods,
    struct mf_decision *d, struct mf_error *err)
{
	struct mf_job as = *job;

	as.pods = pods;
	return mf_place_no_formulas(&as, rv->api->cat, d, err);
}

/*
 * The placement the job needs over nodes, and how Kubernetes runs it
 * there, for a job that fits in no pod on one node: "it needs B200 x 13
 * over 2 nodes ...".  0 when it fits nowhere else either.
 */
static int
over_nodes_text(struct review *rv, const struct mf_job *job, struct mf_buf *b)
{
	struct mf_decision *any = malloc(2 * sizeof(*any)), *indexed;
	const struct mf_placement *p;
	int timed = job->reference_hours > 0, told = 0;
	struct mf_error err;

	if (any == NULL) {
		rv->nomem = 1;
		return 0;
	}
	indexed = any + 1;
	p = &any->placement;
	if (place_as(rv, job, 0, any, &err) != MF_OK || !any->admitted)
		goto out;
	mf_buf_printf(b,
	    "no placement fits %s of one node, and a pod's GPUs all come from one node: it needs %s x %lld over %lld nodes",
	    rv->pods > 1 ? "pods" : "a pod", p->gpu->name, (long long)p->count,
	    (long long)p->nodes);
	if (timed)
		mf_buf_printf(b, " ($%.2f to finish)", p->cost);
	mf_buf_printf(b,
	    "; run it over nodes as an Indexed Job (completionMode: Indexed, parallelism and completions %lld, one pod a node",
	    (long long)p->nodes);
	if (place_as(rv, job, p->nodes, indexed, &err) == MF_OK &&
	    indexed->admitted) {
		mf_buf_printf(b,
		    ": memfloor places it as %lld pods of %s x %lld",
		    (long long)p->nodes, indexed->placement.gpu->name,
		    (long long)(indexed->placement.count / p->nodes));
		if (timed)
			mf_buf_printf(b, ", $%.2f", indexed->placement.cost);
	}
	mf_buf_printf(b,
	    "), or as a JobSet, LeaderWorkerSet or PyTorchJob (docs/kubernetes.md)");
	told = 1;
out:
	free(any);
	return told;
}

/* Deny a rejection; one made within nodes says first what it needs over
 * them, then what would fit one. */
static void
deny_placed(struct review *rv, const struct mf_job *job,
    const struct mf_decision *d)
{
	struct mf_buf b;

	mf_buf_init(&b, MESSAGE_BUF);
	if (over_nodes_text(rv, job, &b)) {
		if (d->suggested >= 0)
			suggestion_text(&b, "; within one node, the fix ", job,
			    d);
		deny_text(rv, &b);
	} else if (!rv->nomem) {
		deny_rejection(rv, job, d);
	}
	mf_buf_free(&b);
}

/* Admission proper, for an object that opted in. */
static void
admit(struct review *rv)
{
	struct mf_decision *d = NULL;
	struct mf_doc *doc = NULL;
	struct mf_error err;
	enum mf_rc rc;
	struct mf_job job;
	char text[96];

	rv->pod = find_pod(rv);
	if (rv->pod == NULL) {
		snprintf(text, sizeof(text), "the object has no pod spec at %s",
		    rv->pod_path);
		mf_review_deny(rv, 400, text);
		return;
	}
	if (read_job(rv, &doc, &job) != 0)
		goto out;
	rv->pods = pods_of(rv);
	if (rv->pods < 0 || !count_splits(rv, &job))
		goto out;
	job.pods = rv->pods;
	d = malloc(sizeof(*d));
	if (d == NULL) {
		rv->nomem = 1;
		goto out;
	}
	memset(&err, 0, sizeof(err));
	rc = mf_place_no_formulas(&job, rv->api->cat, d, &err);
	if (rc == MF_ENOMEM) {
		rv->nomem = 1;
		goto out;
	}
	if (rc != MF_OK) {
		deny_error(rv, doc != NULL ? ANN_SPEC : ANN_MIN, &err);
		goto out;
	}
	assert(d->nwarn <= MF_MAX_WARNINGS);
	for (size_t i = 0; i < d->nwarn; i++)
		mf_review_warn(rv, "%s", d->warnings[i]);
	if (d->admitted)
		allow_placed(rv, &job, d);
	else
		deny_placed(rv, &job, d);
out:
	free(d);
	mf_doc_free(doc);
}

/* --- the call ------------------------------------------------------------ */

static void
answer_invalid(struct mf_answer *ans, struct mf_error *err)
{
	mf_answer_err(ans, MF_EINVAL, err, MF_OUT_JSON);
}

/*
 * The AdmissionReview answer, written straight into the buffer:
 * {"apiVersion", "kind", "response": {"uid", "allowed", "patchType" and
 * "patch" or "status", "warnings"}}.
 */
static void
respond(struct review *rv, struct mf_answer *ans)
{
	struct mf_buf b;
	struct mf_jw w;

	if (rv->nomem) {
		mf_answer_jtext(ans, MF_ANS_INTERNAL, NULL);
		return;
	}
	mf_buf_init(&b, RESPONSE_MAX);
	mf_jw_init(&w, &b);
	mf_jw_open(&w, NULL, '{');
	mf_jw_str_lit(&w, "apiVersion", REVIEW_VERSION);
	mf_jw_str_lit(&w, "kind", "AdmissionReview");
	mf_jw_open_lit(&w, "response", '{');
	mf_jw_str_lit(&w, "uid", rv->uid);
	mf_jw_bool_lit(&w, "allowed", !rv->denied);
	if (rv->denied) {
		mf_jw_open_lit(&w, "status", '{');
		mf_jw_int_lit(&w, "code", rv->code);
		mf_jw_str_lit(&w, "message", rv->message);
		mf_jw_close(&w, '}');
	} else if (rv->patched != NULL) {
		mf_jw_str_lit(&w, "patchType", "JSONPatch");
		mf_jw_base64(&w, "patch", rv->patched, rv->patched_len);
	}
	assert(rv->nwarn <= MAX_WARNINGS);
	if (rv->nwarn > 0) {
		mf_jw_open_lit(&w, "warnings", '[');
		for (size_t i = 0; i < rv->nwarn; i++)
			mf_jw_str(&w, NULL, rv->warnings[i]);
		mf_jw_close(&w, ']');
	}
	mf_jw_close(&w, '}');
	mf_jw_close(&w, '}');
	mf_jw_finish(&w);
	mf_answer_jbuf(ans, MF_ANS_OK, &b);
	if (ans->kind == MF_ANS_OK)
		ans->verdict = rv->verdict;
}

/*
 * What of the body the review reads, and so builds (doc.h's keep lists);
 * the rest (managedFields, status, env, volumes, other annotations) is
 * only checked.  A field the functions above read must be named here, or
 * it reads as absent.
 */
static const struct mf_doc_keep keep_container[] = {
	MF_DOC_KEEP("name", NULL),
	MF_DOC_KEEP("resources", NULL),
	MF_DOC_KEEP_END,
};

static const struct mf_doc_keep keep_pod_spec[] = {
	MF_DOC_KEEP("containers", keep_container),
	MF_DOC_KEEP("initContainers", keep_container),
	MF_DOC_KEEP("nodeSelector", NULL),
	MF_DOC_KEEP("affinity", NULL),
	MF_DOC_KEEP_END,
};

/* Of the labels, the one the patch sets. */
static const struct mf_doc_keep keep_labels[] = {
	MF_DOC_KEEP(LABEL_FINGERPRINT, NULL),
	MF_DOC_KEEP_END,
};

/* Of a Job's pod template's annotations, the one review_pod.c reads. */
static const struct mf_doc_keep keep_pod_annotations[] = {
	MF_DOC_KEEP(ANN_AFFINITY, NULL),
	MF_DOC_KEEP_END,
};

static const struct mf_doc_keep keep_template_metadata[] = {
	MF_DOC_KEEP("labels", keep_labels),
	MF_DOC_KEEP("annotations", keep_pod_annotations),
	MF_DOC_KEEP_END,
};

static const struct mf_doc_keep keep_template[] = {
	MF_DOC_KEEP("metadata", keep_template_metadata),
	MF_DOC_KEEP("spec", keep_pod_spec),
	MF_DOC_KEEP_END,
};

/* A Pod's spec is the pod spec; a Job's has it under template. */
static const struct mf_doc_keep keep_spec[] = {
	MF_DOC_KEEP("containers", keep_container),
	MF_DOC_KEEP("initContainers", keep_container),
	MF_DOC_KEEP("nodeSelector", NULL),
	MF_DOC_KEEP("affinity", NULL),
	MF_DOC_KEEP("template", keep_template),
	MF_DOC_KEEP("parallelism", NULL),
	MF_DOC_KEEP("completions", NULL),
	MF_DOC_KEEP("completionMode", NULL),
	MF_DOC_KEEP_END,
};

static const struct mf_doc_keep keep_annotations[] = {
	MF_DOC_KEEP(ANN_MIN, NULL),
	MF_DOC_KEEP(ANN_SPEC, NULL),
	MF_DOC_KEEP(ANN_CONTAINER, NULL),
	MF_DOC_KEEP(ANN_PLACEMENT, NULL),
	MF_DOC_KEEP(ANN_COST, NULL),
	MF_DOC_KEEP(ANN_AFFINITY, NULL),
	MF_DOC_KEEP_END,
};

static const struct mf_doc_keep keep_metadata[] = {
	MF_DOC_KEEP("name", NULL),
	MF_DOC_KEEP("generateName", NULL),
	MF_DOC_KEEP("annotations", keep_annotations),
	MF_DOC_KEEP("labels", keep_labels),
	MF_DOC_KEEP_END,
};

static const struct mf_doc_keep keep_object[] = {
	MF_DOC_KEEP("apiVersion", NULL),
	MF_DOC_KEEP("kind", NULL),
	MF_DOC_KEEP("metadata", keep_metadata),
	MF_DOC_KEEP("spec", keep_spec),
	MF_DOC_KEEP_END,
};

static const struct mf_doc_keep keep_request[] = {
	MF_DOC_KEEP("uid", NULL),
	MF_DOC_KEEP("operation", NULL),
	MF_DOC_KEEP("kind", NULL),
	MF_DOC_KEEP("subResource", NULL),
	MF_DOC_KEEP("name", NULL),
	MF_DOC_KEEP("object", keep_object),
	MF_DOC_KEEP_END,
};

static const struct mf_doc_keep keep_review[] = {
	MF_DOC_KEEP("apiVersion", NULL),
	MF_DOC_KEEP("kind", NULL),
	MF_DOC_KEEP("request", keep_request),
	MF_DOC_KEEP_END,
};

/* The body as a document tree; NULL after answering. */
static struct mf_doc *
read_body(const char *body, size_t len, struct mf_answer *ans)
{
	struct mf_doc *doc = NULL;
	struct mf_error err;
	char text[sizeof(err.text)];
	enum mf_rc rc;

	memset(&err, 0, sizeof(err));
	rc = mf_doc_parse_kept(body, len, MF_DOC_JSON_WIDE, keep_review, &doc,
	    &err);
	if (rc == MF_OK)
		return doc;
	if (rc == MF_ENOMEM) {
		mf_answer_jtext(ans, MF_ANS_INTERNAL, NULL);
		return NULL;
	}
	/* "the body is not valid JSON: ..."; an error that names a field
	 * (a duplicate key) says where in the body by itself. */
	if (err.field[0] == '\0') {
		mf_copy(text, sizeof(text), err.text);
		mf_error_set(&err, rc, NULL, err.line, err.column,
		    "the body is %s", text);
	}
	answer_invalid(ans, &err);
	return NULL;
}

void
mf_api_review(const struct mf_api *api, const char *body, size_t len,
    enum mf_doc_format fmt, enum mf_output out, struct mf_answer *ans)
{
	(void)fmt;
	(void)out;
	struct review *rv;
	struct mf_error err;
	struct mf_doc *doc;

	memset(ans, 0, sizeof(*ans));
	doc = read_body(body, len, ans);
	if (doc == NULL)
		return;
	/* The message and warnings are written before they are read: only
	 * the fields before them start zeroed. */
	rv = malloc(sizeof(*rv));
	if (rv != NULL)
		memset(rv, 0, offsetof(struct review, message));
	if (rv == NULL) {
		mf_answer_jtext(ans, MF_ANS_INTERNAL, NULL);
		mf_doc_free(doc);
		return;
	}
	memset(&err, 0, sizeof(err));
	rv->api = api;
	mf_patch_init(&rv->patch, PATCH_MAX);
	mf_buf_init(&rv->affinity, AFFINITY_MAX);
	if (read_envelope(mf_doc_root(doc), rv, &err) != MF_OK) {
		answer_invalid(ans, &err);
		goto out;
	}
	rv->name = object_name(rv);
	mf_copy(ans->job, sizeof(ans->job), rv->name ? rv->name : "");
	if (opted_in(rv))
		admit(rv);
	respond(rv, ans);
out:
	mf_patch_free(&rv->patch);
	mf_buf_free(&rv->affinity);
	free(rv);
	mf_doc_free(doc);
}
