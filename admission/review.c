#include "review.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "doc.h"
#include "jw.h"
#include "manifest.h"
#include "patch.h"
#include "place.h"
#include "qty.h"
#include "render.h"

#define REVIEW_VERSION "admission.k8s.io/v1"
#define ANN_MIN "memfloor.dev/min-memory"
#define ANN_SPEC "memfloor.dev/spec"
#define ANN_PLACEMENT "memfloor.dev/placement"
#define ANN_COST "memfloor.dev/estimated-cost"
#define ANN_CONTAINER "memfloor.dev/container"
#define GPU_MEMORY_LABEL "nvidia.com/gpu.memory"
#define REQUIRED "requiredDuringSchedulingIgnoredDuringExecution"
#define PREFERRED "preferredDuringSchedulingIgnoredDuringExecution"
#define GPU_RESOURCE "nvidia.com/gpu"

#define PATCH_MAX (1u << 20)    /* the patch text, before base64 */
#define RESPONSE_MAX (2u << 20) /* the answer, with the patch in base64 */
#define MESSAGE_BUF (8u << 10)  /* a denial message before it is cut */
#define MAX_WARNINGS 16         /* in one response */

enum target { TARGET_NONE, TARGET_POD, TARGET_JOB };

/* One review in progress.  JSON values are borrowed from the request. */
struct review {
	const struct mf_api *api;
	const char *uid;
	const char *operation;
	const struct mf_node *request;
	const struct mf_node *object;      /* NULL when absent or null */
	enum target target;                /* what the object is, once read */
	const struct mf_node *annotations; /* the object's, when it opted in */
	const struct mf_node *pod;         /* the pod spec */
	const char *pod_path;              /* its JSON Pointer */
	const char *name; /* for the decision and the log; may be NULL */
	int64_t pods; /* pods the job runs as, each on one node (design 11) */
	struct mf_patch patch; /* owned */
	const char *patched;   /* the patch's text, once allowed; in patch */
	size_t patched_len;
	int denied; /* status.code and message are set */
	int code;
	size_t nwarn;
	int nomem; /* an allocation failed: answer 500 */
	enum mf_verdict verdict;
	/* Last: not zeroed (see mf_api_review). */
	char message[MF_REVIEW_MESSAGE_MAX + 1];
	char warnings[MAX_WARNINGS][MF_REVIEW_WARNING_MAX + 1];
};

/* --- small helpers ---------------------------------------------------- */

/* The request is read as a doc.h tree; these say what kind a node is
 * (NULL is none of them). */
static int
is_map(const struct mf_node *n)
{
	return n != NULL && n->type == MF_NODE_MAP;
}

static int
is_seq(const struct mf_node *n)
{
	return n != NULL && n->type == MF_NODE_SEQ;
}

static int
is_str(const struct mf_node *n)
{
	return n != NULL && n->type == MF_NODE_STR;
}

static const char *
str_of(const struct mf_node *n)
{
	return is_str(n) ? n->text : NULL;
}

static const char *
str_at(const struct mf_node *o, const char *key)
{
	return str_of(mf_node_get(o, key));
}

static size_t
seq_len(const struct mf_node *n)
{
	return is_seq(n) ? n->len : 0;
}

/* The i-th element of a list, or NULL. */
static const struct mf_node *
seq_at(const struct mf_node *n, size_t i)
{
	const struct mf_node *c = is_seq(n) ? n->child : NULL;

	while (c != NULL && i-- > 0)
		c = c->next;
	return c;
}

/* Every element c of the list n (none when n is no list), i counting. */
#define EACH(n, i, c) \
	for ((i) = 0, (c) = is_seq(n) ? (n)->child : NULL; (c) != NULL; \
	     (c) = (c)->next, (i)++)

static int
streq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
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

static void warnf(struct review *rv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
warnf(struct review *rv, const char *fmt, ...)
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

static void
deny(struct review *rv, int code, const char *message)
{
	char text[MF_REVIEW_MESSAGE_MAX + 2];

	mf_copy(text, sizeof(text), message);
	mf_utf8_fix(text);
	clip(text, MF_REVIEW_MESSAGE_MAX);
	rv->denied = 1;
	rv->code = code;
	mf_copy(rv->message, sizeof(rv->message), text);
}

static void
deny_annotation(struct review *rv, const char *annotation, const char *what)
{
	char text[MF_REVIEW_MESSAGE_MAX + 2];

	snprintf(text, sizeof(text), "annotation %s: %s", annotation, what);
	deny(rv, 400, text);
}

static void
deny_error(struct review *rv, const char *annotation,
    const struct mf_error *err)
{
	char msg[MF_ERROR_MAX];

	deny_annotation(rv, annotation,
	    mf_error_message(err, msg, sizeof(msg)));
}

/* "field: value, ..." of what the fixes of e set in the manifest. */
static void
changes_text(struct mf_buf *b, const struct mf_fix_option *e)
{
	const char *sep = "";
	char v[32];

	for (int f = 0; f < MF_FIX_COUNT; f++) {
		if (!(e->fixes & MF_FIXBIT(f)))
			continue;
		mf_buf_printf(b, "%s%s: %s", sep, mf_fix_info(f)->field,
		    mf_fix_value_text(f, e->amount, v, sizeof(v)));
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

static void
deny_rejection(struct review *rv, const struct mf_job *job,
    const struct mf_decision *d)
{
	struct mf_buf b;

	mf_buf_init(&b, MESSAGE_BUF);
	mf_buf_printf(&b, "%s", d->reason);
	suggestion_text(&b, "; suggested fix: ", job, d);
	if (b.rc == MF_ENOMEM)
		rv->nomem = 1;
	else
		deny(rv, 403, b.data);
	mf_buf_free(&b);
	rv->verdict = MF_VERDICT_REJECTED;
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
		deny_annotation(rv, ANN_MIN, "must be a string");
		return -1;
	}
	qe = mf_qty_parse_memory(v->text, v->len, bytes, &f);
	if (qe != MF_QTY_OK) {
		mf_qty_explain(v->text, v->len, qe, why, sizeof(why));
		deny_annotation(rv, ANN_MIN, why);
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
		deny_annotation(rv, ANN_SPEC, "must be a string");
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
		deny_annotation(rv, ANN_SPEC,
		    "spec.model.configUrl: is not fetched for an admission review; name a model GET /v1/models lists or give its config inline");
		return -1;
	}
	if (min != NULL && job->min_memory != min_bytes)
		warnf(rv, "%s %s ignored: %s sets resources.gpu.minMemory",
		    ANN_MIN, min, ANN_SPEC);
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
		return is_map(spec) ? spec : NULL;
	}
	rv->pod_path = "/spec/template/spec";
	spec = mf_node_get(mf_node_get(spec, "template"), "spec");
	return is_map(spec) ? spec : NULL;
}

/*
 * Text put together piece by piece (pointers, the placement annotation):
 * a request writes several, and printf would cost more than the rest of
 * the patch.  Cut to fit, always NUL-terminated.
 */
struct text {
	char s[160];
	size_t n;
};

static struct text *
text_add(struct text *t, const char *s)
{
	size_t k = strlen(s);

	if (k > sizeof(t->s) - 1 - t->n)
		k = sizeof(t->s) - 1 - t->n;
	memcpy(t->s + t->n, s, k);
	t->n += k;
	t->s[t->n] = '\0';
	return t;
}

static struct text *
text_num(struct text *t, int64_t v)
{
	char digits[24];
	uint64_t u = (uint64_t)v;

	digits[sizeof(digits) - 1] = '\0';
	if (v < 0) {
		text_add(t, "-");
		u = 0 - u;
	}
	return text_add(t, mf_digits(u, digits + sizeof(digits) - 1));
}

/* t, emptied, holding s. */
static struct text *
text_set(struct text *t, const char *s)
{
	t->n = 0;
	t->s[0] = '\0';
	return text_add(t, s);
}

/* A container's name for messages. */
static const char *
container_name(const struct mf_node *c)
{
	const char *name = str_at(c, "name");

	return name != NULL && name[0] != '\0' ? name : "?";
}

/* --- which container gets the GPUs (design 18) ------------------------- */

/* What a container asks of nvidia.com/gpu in resources.requests or
 * resources.limits. */
struct gpu_ask {
	int set;       /* the key is there */
	int64_t n;     /* whole GPUs, or -1 when it is no whole number */
	char text[32]; /* as written, for messages */
};

static void
read_ask(const struct mf_node *c, const char *what, struct gpu_ask *a)
{
	const struct mf_node *v =
	    mf_node_get(mf_node_get(mf_node_get(c, "resources"), what),
	        GPU_RESOURCE);
	size_t len;

	memset(a, 0, sizeof(*a));
	a->n = -1;
	if (v == NULL)
		return;
	a->set = 1;
	/* A string quantity, or a number as doc.h writes it ("%lld"). */
	if (!is_str(v) && v->type != MF_NODE_NUM) {
		mf_copy(a->text, sizeof(a->text), "?");
		return;
	}
	mf_copy(a->text, sizeof(a->text), v->text);
	len = v->len;
	if (len == 0 || len > 9 || strspn(v->text, "0123456789") != len)
		return;
	a->n = strtoll(v->text, NULL, 10);
}

/*
 * The index in containers of the container that gets the GPUs: the one
 * the annotation memfloor.dev/container names, else the first.  -1 after
 * denying the review.
 */
static long
gpu_container(struct review *rv, const struct mf_node *cs)
{
	const struct mf_node *v = mf_node_get(rv->annotations, ANN_CONTAINER);
	const struct mf_node *inits = mf_node_get(rv->pod, "initContainers"),
	                     *c;
	char why[200];
	size_t i;

	if (seq_len(cs) == 0) {
		snprintf(why, sizeof(why),
		    "the pod spec at %s has no containers", rv->pod_path);
		deny(rv, 400, why);
		return -1;
	}
	if (v == NULL)
		return 0;
	if (!is_str(v)) {
		deny_annotation(rv, ANN_CONTAINER, "must be a string");
		return -1;
	}
	EACH(cs, i, c)
	if (streq(str_at(c, "name"), str_of(v)))
		return (long)i;
	EACH(inits, i, c)
	if (streq(str_at(c, "name"), str_of(v))) {
		snprintf(why, sizeof(why),
		    "'%.63s' is an init container; GPUs go only to a container of the pod's containers",
		    str_of(v));
		deny_annotation(rv, ANN_CONTAINER, why);
		return -1;
	}
	snprintf(why, sizeof(why), "no container of the pod is named '%.63s'",
	    str_of(v));
	deny_annotation(rv, ANN_CONTAINER, why);
	return -1;
}

/*
 * Deny when an entry of list (containers, or initContainers when init)
 * asks for GPUs the placement does not give it: want (a pod's share of
 * the placement, placed) to the entry at target, none to any other.  0
 * when every entry agrees.
 */
static int
check_asks(struct review *rv, const struct mf_node *list, int init, long target,
    int64_t want, const char *placed, const char *gpu_name)
{
	static const char *const what[] = { "requests", "limits" };
	char text[MF_REVIEW_MESSAGE_MAX + 2];
	struct gpu_ask a;
	const struct mf_node *c;
	size_t i;

	EACH(list, i, c)
	{
		int64_t mine = (long)i == target ? want : 0;

		for (size_t k = 0; k < 2; k++) {
			read_ask(c, what[k], &a);
			if (!a.set || a.n == mine)
				continue;
			if ((long)i == target)
				snprintf(text, sizeof(text),
				    "container %s: resources.%s %s is %s, but the placement is %s; leave it out or set resources.gpu.count: %s in %s",
				    container_name(c), what[k], GPU_RESOURCE,
				    a.text, placed, a.text, ANN_SPEC);
			else
				snprintf(text, sizeof(text),
				    "%s %s: resources.%s %s is %s, but GPUs go only to container %s (annotation %s chooses it)",
				    init ? "init container" : "container",
				    container_name(c), what[k], GPU_RESOURCE,
				    a.text, gpu_name, ANN_CONTAINER);
			deny(rv, 400, text);
			return -1;
		}
	}
	return 0;
}

/* {"nvidia.com/gpu": n} as member key of w's object. */
static void
write_gpu_map(struct mf_jw *w, const char *key, const char *n)
{
	mf_jw_open(w, key, '{');
	mf_jw_str(w, GPU_RESOURCE, n);
	mf_jw_close(w, '}');
}

/* The GPU container's requests and limits of nvidia.com/gpu, both count
 * (check_asks has made sure that those it sets already agree). */
static void
patch_gpus(struct review *rv, const struct mf_node *c, long i, int64_t count)
{
	static const char *const what[] = { "limits", "requests" };
	const struct mf_node *res = mf_node_get(c, "resources"), *m;
	struct mf_patch *pt = &rv->patch;
	struct text num, path, at;
	const char *base, *n;

	n = text_num(text_set(&num, ""), count)->s;
	text_num(text_add(text_set(&path, rv->pod_path), "/containers/"), i);
	base = text_add(&path, "/resources")->s;
	if (!is_map(res)) {
		mf_patch_begin(pt, "add", base, NULL);
		mf_jw_open(&pt->w, "value", '{');
		for (size_t k = 0; k < 2; k++)
			write_gpu_map(&pt->w, what[k], n);
		mf_jw_close(&pt->w, '}');
		mf_patch_end(pt);
		return;
	}
	for (size_t k = 0; k < 2; k++) {
		m = mf_node_get(res, what[k]);
		if (is_map(m) && mf_node_get(m, GPU_RESOURCE) != NULL)
			continue;
		if (is_map(m)) {
			text_add(text_add(text_set(&at, base), "/"), what[k]);
			mf_patch_str(pt, "add", at.s, GPU_RESOURCE, n);
			continue;
		}
		mf_patch_begin(pt, "add", base, what[k]);
		write_gpu_map(&pt->w, "value", n);
		mf_patch_end(pt);
	}
}

/* --- node selection: product (design 11) -------------------------------- */

static void
patch_selector(struct review *rv, const struct mf_gpu *gpu)
{
	const struct mf_node *sel = mf_node_get(rv->pod, "nodeSelector");
	struct mf_patch *pt = &rv->patch;
	const struct mf_label *l;
	const char *old, *base;
	struct text path;

	base = text_add(text_set(&path, rv->pod_path), "/nodeSelector")->s;
	if (gpu->nlabels == 0)
		return;
	if (!is_map(sel)) {
		mf_patch_begin(pt, "add", base, NULL);
		mf_jw_open(&pt->w, "value", '{');
		for (size_t i = 0; i < gpu->nlabels; i++)
			mf_jw_str(&pt->w, gpu->labels[i].key,
			    gpu->labels[i].value);
		mf_jw_close(&pt->w, '}');
		mf_patch_end(pt);
		return;
	}
	for (size_t i = 0; i < gpu->nlabels; i++) {
		l = &gpu->labels[i];
		old = str_at(sel, l->key);
		if (old != NULL && strcmp(old, l->value) != 0)
			warnf(rv, "nodeSelector %s: %s replaced by %s", l->key,
			    old, l->value);
		mf_patch_str(pt, "add", base, l->key, l->value);
	}
}

/* --- node selection: memory (design 18) --------------------------------- */

/*
 * The cards the pod may land on, cheapest first: the placement, then
 * (select: memory) each alternative with the same GPU count, since the
 * patched pod asks for that many wherever it runs.  Returns how many.
 */
static size_t
placed_cards(const struct mf_decision *d, int memory, const struct mf_gpu **out)
{
	size_t n = 0;

	out[n++] = d->placement.gpu;
	for (size_t i = 0; memory && i < d->nalt; i++)
		if (d->alt[i].count == d->placement.count)
			out[n++] = d->alt[i].gpu;
	return n;
}

/*
 * The memory expression {"key": nvidia.com/gpu.memory, "operator": "Gt",
 * "values": [gt]} at levels 0, wrapped in a term {"matchExpressions":
 * [...]} at 1, and in {"nodeSelectorTerms": [a term]} at 2: the levels a
 * pod's affinity lacks.
 */
static void
write_memory(struct mf_jw *w, const char *key, const char *gt, int levels)
{
	static const char *const lists[] = { "matchExpressions",
		"nodeSelectorTerms" };

	mf_jw_open(w, key, '{');
	if (levels == 0) {
		mf_jw_str(w, "key", GPU_MEMORY_LABEL);
		mf_jw_str(w, "operator", "Gt");
		mf_jw_open(w, "values", '[');
		mf_jw_str(w, NULL, gt);
	} else {
		mf_jw_open(w, lists[levels - 1], '[');
		write_memory(w, NULL, gt, levels - 1);
	}
	mf_jw_close(w, ']');
	mf_jw_close(w, '}');
}

/* Weight of the i-th card's preferred term: 100, 90, ... (at most nine
 * cards, so never below 20; the scheduler takes weights 1 to 100). */
static int
pref_weight(size_t i)
{
	return 100 - 10 * (int)i;
}

/* {"weight": w, "preference": {"matchExpressions": [labels In]}} */
static void
write_pref_term(struct mf_jw *w, const char *key, const struct mf_gpu *gpu,
    int weight)
{
	mf_jw_open(w, key, '{');
	mf_jw_int(w, "weight", weight);
	mf_jw_open(w, "preference", '{');
	mf_jw_open(w, "matchExpressions", '[');
	for (size_t i = 0; i < gpu->nlabels; i++) {
		mf_jw_open(w, NULL, '{');
		mf_jw_str(w, "key", gpu->labels[i].key);
		mf_jw_str(w, "operator", "In");
		mf_jw_open(w, "values", '[');
		mf_jw_str(w, NULL, gpu->labels[i].value);
		mf_jw_close(w, ']');
		mf_jw_close(w, '}');
	}
	mf_jw_close(w, ']');
	mf_jw_close(w, '}');
	mf_jw_close(w, '}');
}

/* Cards, in order, without labels to prefer them by are left out. */
static void
write_preferred(struct mf_jw *w, const char *key,
    const struct mf_gpu *const *cards, size_t n)
{
	mf_jw_open(w, key, '[');
	for (size_t i = 0; i < n; i++)
		if (cards[i]->nlabels > 0)
			write_pref_term(w, NULL, cards[i], pref_weight(i));
	mf_jw_close(w, ']');
}

/* Into an existing list of preferred terms: one add at its end each. */
static void
append_preferred(struct review *rv, const char *base,
    const struct mf_gpu *const *cards, size_t n)
{
	char at[192];

	snprintf(at, sizeof(at), "%s/%s/-", base, PREFERRED);
	for (size_t i = 0; i < n; i++) {
		if (cards[i]->nlabels == 0)
			continue;
		mf_patch_begin(&rv->patch, "add", at, NULL);
		write_pref_term(&rv->patch.w, "value", cards[i],
		    pref_weight(i));
		mf_patch_end(&rv->patch);
	}
}

/*
 * The memory expression ANDed into every required term the pod has (terms
 * are ORed, so each must carry it), or one term when it has none.
 */
static void
merge_required(struct review *rv, const char *base, const struct mf_node *na,
    const char *gt)
{
	const struct mf_node *req = mf_node_get(na, REQUIRED);
	const struct mf_node *terms = mf_node_get(req, "nodeSelectorTerms"), *t;
	struct mf_patch *pt = &rv->patch;
	char at[256];
	size_t i;

	if (!is_map(req)) {
		mf_patch_begin(pt, "add", base, REQUIRED);
		write_memory(&pt->w, "value", gt, 2);
		mf_patch_end(pt);
		return;
	}
	snprintf(at, sizeof(at), "%s/%s/nodeSelectorTerms", base, REQUIRED);
	if (!is_seq(terms) || seq_len(terms) == 0) {
		mf_patch_begin(pt, "add", at, is_seq(terms) ? "-" : NULL);
		if (is_seq(terms))
			write_memory(&pt->w, "value", gt, 1);
		else {
			mf_jw_open(&pt->w, "value", '[');
			write_memory(&pt->w, NULL, gt, 1);
			mf_jw_close(&pt->w, ']');
		}
		mf_patch_end(pt);
		return;
	}
	EACH(terms, i, t)
	{
		char term[320];

		if (!is_map(t))
			continue; /* the API server refuses the pod anyway */
		snprintf(term, sizeof(term), "%s/%zu/matchExpressions", at, i);
		if (is_seq(mf_node_get(t, "matchExpressions"))) {
			mf_patch_begin(pt, "add", term, "-");
			write_memory(&pt->w, "value", gt, 0);
		} else {
			mf_patch_begin(pt, "add", term, NULL);
			mf_jw_open(&pt->w, "value", '[');
			write_memory(&pt->w, NULL, gt, 0);
			mf_jw_close(&pt->w, ']');
		}
		mf_patch_end(pt);
	}
}

/*
 * select: memory.  GPU Feature Discovery labels a node's GPU memory in
 * MiB, so a floor of F bytes wants a label of at least ceil(F / 2^20):
 * "Gt ceil(F / 2^20) - 1".
 */
static void
patch_affinity(struct review *rv, int64_t floor,
    const struct mf_gpu *const *cards, size_t n)
{
	const struct mf_node *aff = mf_node_get(rv->pod, "affinity");
	const struct mf_node *na = mf_node_get(aff, "nodeAffinity");
	struct mf_patch *pt = &rv->patch;
	char base[96], gt[24];
	int64_t mib = floor / (1 << 20) + (floor % (1 << 20) != 0);

	snprintf(gt, sizeof(gt), "%lld", (long long)(mib - 1));
	snprintf(base, sizeof(base), "%s/affinity", rv->pod_path);
	if (!is_map(aff) || !is_map(na)) {
		mf_patch_begin(pt, "add", base,
		    is_map(aff) ? "nodeAffinity" : NULL);
		mf_jw_open(&pt->w, "value", '{');
		if (!is_map(aff))
			mf_jw_open(&pt->w, "nodeAffinity", '{');
		write_memory(&pt->w, REQUIRED, gt, 2);
		write_preferred(&pt->w, PREFERRED, cards, n);
		if (!is_map(aff))
			mf_jw_close(&pt->w, '}');
		mf_jw_close(&pt->w, '}');
		mf_patch_end(pt);
		return;
	}
	mf_copy(base + strlen(base), sizeof(base) - strlen(base),
	    "/nodeAffinity");
	merge_required(rv, base, na, gt);
	if (is_seq(mf_node_get(na, PREFERRED))) {
		append_preferred(rv, base, cards, n);
		return;
	}
	mf_patch_begin(pt, "add", base, PREFERRED);
	write_preferred(&pt->w, "value", cards, n);
	mf_patch_end(pt);
}

/* --- cards the pod's own constraints rule out ---------------------------- */

/* v as a whole number into *out; 0 when it is none. */
static int
whole(const char *v, long long *out)
{
	char *end;

	if (v == NULL || v[0] == '\0')
		return 0;
	*out = strtoll(v, &end, 10);
	return *end == '\0';
}

/*
 * Whether a node with the card's labels may satisfy one matchExpression.
 * A key the card's labels do not name may still be on the node, so it
 * may; an operator this code does not know is left to the API server.
 */
static int
expr_admits(const struct mf_node *e, const struct mf_gpu *gpu)
{
	const char *key = str_at(e, "key"), *op = str_at(e, "operator");
	const struct mf_node *vals = mf_node_get(e, "values"), *v;
	const char *have = NULL;
	long long a, b;
	int found = 0;
	size_t i;

	for (i = 0; key != NULL && i < gpu->nlabels; i++)
		if (strcmp(gpu->labels[i].key, key) == 0)
			have = gpu->labels[i].value;
	if (have == NULL || op == NULL)
		return 1;
	if (strcmp(op, "DoesNotExist") == 0)
		return 0;
	if (strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0) {
		if (!whole(have, &a) || !whole(str_of(seq_at(vals, 0)), &b))
			return 0;
		return op[0] == 'G' ? a > b : a < b;
	}
	EACH(vals, i, v)
	found |= streq(str_of(v), have);
	if (strcmp(op, "In") == 0)
		return found;
	if (strcmp(op, "NotIn") == 0)
		return !found;
	return 1;
}

static int
term_admits(const struct mf_node *t, const struct mf_gpu *gpu)
{
	const struct mf_node *e;
	size_t i;

	EACH(mf_node_get(t, "matchExpressions"), i, e)
	if (!expr_admits(e, gpu))
		return 0;
	return 1;
}

/* Whether the pod's required node affinity (and, when selector is set,
 * its own nodeSelector) leaves the card's nodes a way in. */
static int
card_admitted(const struct review *rv, const struct mf_gpu *gpu, int selector)
{
	const struct mf_node *sel = mf_node_get(rv->pod, "nodeSelector");
	const struct mf_node *terms, *t;
	const char *v;
	size_t i;

	for (i = 0; selector && i < gpu->nlabels; i++) {
		v = str_at(sel, gpu->labels[i].key);
		if (v != NULL && strcmp(v, gpu->labels[i].value) != 0)
			return 0;
	}
	terms = mf_node_get(mf_node_get(mf_node_get(mf_node_get(rv->pod,
	                                                "affinity"),
	                                    "nodeAffinity"),
	                        REQUIRED),
	    "nodeSelectorTerms");
	if (seq_len(terms) == 0)
		return 1;
	EACH(terms, i, t)
	if (is_map(t) && term_admits(t, gpu))
		return 1;
	return 0;
}

/*
 * Warn when the pod's own constraints exclude every card placed: it would
 * wait for nodes memfloor did not choose.  The product selector replaces
 * the pod's selector keys itself (with a warning each), so only the
 * memory selection, which keeps them, checks the nodeSelector.
 */
static void
check_excluded(struct review *rv, const struct mf_gpu *const *cards, size_t n,
    int memory)
{
	char names[MF_REVIEW_WARNING_MAX + 1] = "";
	size_t used = 0;

	for (size_t i = 0; i < n; i++)
		if (card_admitted(rv, cards[i], memory))
			return;
	for (size_t i = 0; i < n && used + 1 < sizeof(names); i++)
		used += (size_t)snprintf(names + used, sizeof(names) - used,
		    "%s%s", i > 0 ? ", " : "", cards[i]->name);
	warnf(rv,
	    "the pod's required node affinity%s excludes every card placed: %s",
	    memory ? " or nodeSelector" : "", names);
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

/* Which container gets the GPUs (want of them, placed being the
 * placement in words), checked against what every container asks for;
 * -1 after denying the review. */
static long
place_gpus(struct review *rv, int64_t want, const char *placed)
{
	const struct mf_node *cs = mf_node_get(rv->pod, "containers");
	long target = gpu_container(rv, cs);
	const char *name;

	if (target < 0)
		return -1;
	name = container_name(seq_at(cs, (size_t)target));
	if (check_asks(rv, cs, 0, target, want, placed, name) != 0 ||
	    check_asks(rv, mf_node_get(rv->pod, "initContainers"), 1, -1, want,
	        placed, name) != 0)
		return -1;
	return target;
}

static void
answer_patch(struct review *rv)
{
	rv->patched = mf_patch_text(&rv->patch, &rv->patched_len);
	if (rv->patched == NULL)
		rv->nomem = 1;
}

/* The placement in words: "B200 x 8", as pods "B200 x 16 (2 pods of
 * 8)". */
static void
placement_text(const struct review *rv, const struct mf_placement *p,
    struct text *t)
{
	text_num(text_add(text_set(t, p->gpu->name), " x "), p->count);
	if (rv->pods > 1)
		text_add(text_num(text_add(text_num(text_add(t, " ("),
		                               rv->pods),
		                      " pods of "),
		             p->count / rv->pods),
		    ")");
}

static void
allow_placed(struct review *rv, const struct mf_job *job,
    const struct mf_decision *d)
{
	const struct mf_placement *p = &d->placement;
	const struct mf_gpu *cards[1 + MF_MAX_ALTERNATIVES];
	int memory = rv->api->cat->k8s_select == MF_K8S_SELECT_MEMORY;
	int64_t per_pod = p->count / rv->pods;
	/* "%.2f" of any double fits. */
	char floor[MF_QTY_STRMAX], cost[512];
	struct text placement;
	long target;
	size_t n;

	placement_text(rv, p, &placement);
	target = place_gpus(rv, per_pod, placement.s);
	if (target < 0)
		return;
	n = placed_cards(d, memory, cards);
	check_excluded(rv, cards, n, memory);
	if (memory)
		patch_affinity(rv, d->floor, cards, n);
	else
		patch_selector(rv, p->gpu);
	patch_gpus(rv,
	    seq_at(mf_node_get(rv->pod, "containers"), (size_t)target), target,
	    per_pod);
	patch_annotation(rv, ANN_PLACEMENT, placement.s);
	mf_qty_format(d->floor, (enum mf_qty_format)d->floor_format, floor,
	    sizeof(floor));
	patch_annotation(rv, ANN_MIN, floor);
	if (job->reference_hours > 0)
		snprintf(cost, sizeof(cost), "%.2f", p->cost);
	patch_annotation(rv, ANN_COST, job->reference_hours > 0 ? cost : NULL);
	answer_patch(rv);
	rv->verdict = MF_VERDICT_ADMITTED;
}

/* --- pods and nodes (design 11) ---------------------------------------- */

/* The Job's spec.KEY as a whole number, dflt when it is absent or null;
 * -1 when it is no whole number. */
static int64_t
job_int(const struct review *rv, const char *key, int64_t dflt)
{
	const struct mf_node *v =
	    mf_node_get(mf_node_get(rv->object, "spec"), key);
	long long n;

	if (v == NULL || v->type == MF_NODE_NULL)
		return dflt;
	if (v->type != MF_NODE_NUM || !whole(v->text, &n) || n < 0 ||
	    n > MF_JOB_MAX_GPUS)
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
		snprintf(why, sizeof(why),
		    "spec.parallelism must be a whole number from 0 to %d",
		    MF_JOB_MAX_GPUS);
		deny(rv, 400, why);
		return -1;
	}
	if (!streq(mode, "Indexed")) {
		if (par > 1)
			warnf(rv,
			    "parallelism %lld: each pod is placed as the whole job; completionMode: Indexed places one job over them",
			    (long long)par);
		return 1;
	}
	if (par <= 1)
		return 1;
	if (comp != par) {
		snprintf(why, sizeof(why),
		    "spec.completions must equal spec.parallelism (%lld): an Indexed Job is placed as parallelism pods that run together, one a completion index",
		    (long long)par);
		deny(rv, 400, why);
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
	deny_annotation(rv, ANN_SPEC, why);
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
	return mf_place(&as, rv->api->cat, d, err);
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
		if (b.rc == MF_ENOMEM)
			rv->nomem = 1;
		else
			deny(rv, 403, b.data);
		rv->verdict = MF_VERDICT_REJECTED;
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
		deny(rv, 400, text);
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
	rc = mf_place(&job, rv->api->cat, d, &err);
	if (rc == MF_ENOMEM) {
		rv->nomem = 1;
		goto out;
	}
	if (rc != MF_OK) {
		deny_error(rv, doc != NULL ? ANN_SPEC : ANN_MIN, &err);
		goto out;
	}
	for (size_t i = 0; i < d->nwarn; i++)
		warnf(rv, "%s", d->warnings[i]);
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
	mf_jw_str(&w, "apiVersion", REVIEW_VERSION);
	mf_jw_str(&w, "kind", "AdmissionReview");
	mf_jw_open(&w, "response", '{');
	mf_jw_str(&w, "uid", rv->uid);
	mf_jw_bool(&w, "allowed", !rv->denied);
	if (rv->denied) {
		mf_jw_open(&w, "status", '{');
		mf_jw_int(&w, "code", rv->code);
		mf_jw_str(&w, "message", rv->message);
		mf_jw_close(&w, '}');
	} else if (rv->patched != NULL) {
		mf_jw_str(&w, "patchType", "JSONPatch");
		mf_jw_base64(&w, "patch", rv->patched, rv->patched_len);
	}
	if (rv->nwarn > 0) {
		mf_jw_open(&w, "warnings", '[');
		for (size_t i = 0; i < rv->nwarn; i++)
			mf_jw_str(&w, NULL, rv->warnings[i]);
		mf_jw_close(&w, ']');
	}
	mf_jw_close(&w, '}');
	mf_jw_close(&w, '}');
	if (mf_jw_finish(&w) != MF_OK) {
		mf_buf_free(&b);
		mf_answer_jtext(ans, MF_ANS_INTERNAL, NULL);
		return;
	}
	mf_answer_jtext(ans, MF_ANS_OK, mf_buf_take(&b));
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

static const struct mf_doc_keep keep_template[] = {
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
	MF_DOC_KEEP_END,
};

static const struct mf_doc_keep keep_metadata[] = {
	MF_DOC_KEEP("name", NULL),
	MF_DOC_KEEP("generateName", NULL),
	MF_DOC_KEEP("annotations", keep_annotations),
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
	mf_copy(text, sizeof(text), err.text);
	mf_error_set(&err, rc, NULL, err.line, err.column, "the body is %s",
	    text);
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
	free(rv);
	mf_doc_free(doc);
}
