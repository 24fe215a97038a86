/*
 * review_pod.c: the pod spec's part of an admitted review's patch: which
 * container gets the GPUs (design 18) and the node selection, by product
 * (design 11) or by memory (design 18), with the cards the pod's own
 * constraints rule out.  By memory, what memfloor added before (the
 * annotation ANN_AFFINITY says what) is replaced, and the pod's own left.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/jw.h"
#include "review_int.h"

#define GPU_MEMORY_LABEL "nvidia.com/gpu.memory"
#define REQUIRED "requiredDuringSchedulingIgnoredDuringExecution"
#define PREFERRED "preferredDuringSchedulingIgnoredDuringExecution"
#define GPU_RESOURCE "nvidia.com/gpu"

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
		mf_review_deny(rv, 400, why);
		return -1;
	}
	if (v == NULL)
		return 0;
	if (!is_str(v)) {
		mf_review_deny_annotation(rv, ANN_CONTAINER,
		    "must be a string");
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
		mf_review_deny_annotation(rv, ANN_CONTAINER, why);
		return -1;
	}
	snprintf(why, sizeof(why), "no container of the pod is named '%.63s'",
	    str_of(v));
	mf_review_deny_annotation(rv, ANN_CONTAINER, why);
	return -1;
}

/*
 * What is said to the GPU container c that asks (its resources.what) for
 * other GPUs than placed: leave it out, or state the job's count, a pod's
 * GPUs times the pods, that makes it right.
 */
static void
target_asks(char *text, size_t size, const struct review *rv,
    const struct mf_node *c, const char *what, const struct gpu_ask *a,
    const char *placed)
{
	int n = snprintf(text, size,
	    "container %s: resources.%s %s is %s, but the placement is %s; leave it out",
	    container_name(c), what, GPU_RESOURCE, a->text, placed);

	if (a->n > 0 && n >= 0 && (size_t)n < size)
		snprintf(text + n, size - (size_t)n,
		    " or set resources.gpu.count: %lld in %s",
		    (long long)(a->n * rv->pods), ANN_SPEC);
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
				target_asks(text, sizeof(text), rv, c, what[k],
				    &a, placed);
			else
				snprintf(text, sizeof(text),
				    "%s %s: resources.%s %s is %s, but GPUs go only to container %s (annotation %s chooses it)",
				    init ? "init container" : "container",
				    container_name(c), what[k], GPU_RESOURCE,
				    a.text, gpu_name, ANN_CONTAINER);
			mf_review_deny(rv, 400, text);
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
	char n[24], base[TEXT_MAX], at[TEXT_MAX];
	struct mf_buf t;

	mf_buf_fixed(&t, n, sizeof(n));
	mf_buf_int(&t, count);
	mf_buf_fixed(&t, base, sizeof(base));
	mf_buf_str(&t, rv->pod_path);
	mf_buf_str(&t, "/containers/");
	mf_buf_int(&t, i);
	mf_buf_str(&t, "/resources");
	if (!is_map(res)) {
		mf_patch_begin(pt, "add", base, NULL);
		mf_jw_open_lit(&pt->w, "value", '{');
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
			mf_buf_fixed(&t, at, sizeof(at));
			mf_buf_str(&t, base);
			mf_buf_str(&t, "/");
			mf_buf_str(&t, what[k]);
			mf_patch_str(pt, "add", at, GPU_RESOURCE, n);
			continue;
		}
		mf_patch_begin(pt, "add", base, what[k]);
		write_gpu_map(&pt->w, "value", n);
		mf_patch_end(pt);
	}
}

/* The value card g's labels give key (NULL: none, or no key). */
static const char *
label_value(const struct mf_gpu *g, const char *key)
{
	for (size_t i = 0; key != NULL && i < g->nlabels; i++)
		if (streq(g->labels[i].key, key))
			return g->labels[i].value;
	return NULL;
}

/* --- node selection: product (design 11) -------------------------------- */

/* Whether card g's labels pin key, to value when value is not NULL. */
static int
card_pins(const struct mf_gpu *g, const char *key, const char *value)
{
	const char *v = label_value(g, key);

	return v != NULL && (value == NULL || streq(v, value));
}

/*
 * Whether the pods' selector key: value is memfloor's own: the object
 * bears an earlier review's placement, which put there the labels of a
 * card of the catalogue, and a card pins key to value.  A re-review
 * replaces it, or drops it when the new card has no such key, and warns
 * of neither.
 */
static int
own_selector(const struct review *rv, const char *key, const char *value)
{
	const struct mf_catalog *cat = rv->api->cat;

	if (value == NULL ||
	    mf_node_get(rv->annotations, ANN_PLACEMENT) == NULL)
		return 0;
	for (size_t i = 0; i < cat->ngpus; i++)
		if (card_pins(&cat->gpus[i], key, value))
			return 1;
	return 0;
}

static void
patch_selector(struct review *rv, const struct mf_gpu *gpu)
{
	const struct mf_node *sel = mf_node_get(rv->pod, "nodeSelector");
	struct mf_patch *pt = &rv->patch;
	const struct mf_label *l;
	const char *old;
	char base[TEXT_MAX];
	struct mf_buf t;

	mf_buf_fixed(&t, base, sizeof(base));
	mf_buf_str(&t, rv->pod_path);
	mf_buf_str(&t, "/nodeSelector");
	if (gpu->nlabels == 0)
		return;
	if (!is_map(sel)) {
		mf_patch_begin(pt, "add", base, NULL);
		mf_jw_open_lit(&pt->w, "value", '{');
		for (size_t i = 0; i < gpu->nlabels; i++)
			mf_jw_str(&pt->w, gpu->labels[i].key,
			    gpu->labels[i].value);
		mf_jw_close(&pt->w, '}');
		mf_patch_end(pt);
		return;
	}
	for (const struct mf_node *c = sel->child; c != NULL; c = c->next)
		if (!card_pins(gpu, c->key, NULL) &&
		    own_selector(rv, c->key, str_of(c)))
			mf_patch_str(pt, "remove", base, c->key, NULL);
	for (size_t i = 0; i < gpu->nlabels; i++) {
		l = &gpu->labels[i];
		old = str_at(sel, l->key);
		if (old != NULL && strcmp(old, l->value) != 0 &&
		    !own_selector(rv, l->key, old))
			mf_review_warn(rv, "nodeSelector %s: %s replaced by %s",
			    l->key, old, l->value);
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
	assert(d->nalt <= MF_MAX_ALTERNATIVES);
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
		mf_jw_str_lit(w, "key", GPU_MEMORY_LABEL);
		mf_jw_str_lit(w, "operator", "Gt");
		mf_jw_open_lit(w, "values", '[');
		mf_jw_str(w, NULL, gt);
	} else {
		assert(levels > 0 &&
		    (size_t)levels <= sizeof(lists) / sizeof(lists[0]));
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
	mf_jw_int_lit(w, "weight", weight);
	mf_jw_open_lit(w, "preference", '{');
	mf_jw_open_lit(w, "matchExpressions", '[');
	for (size_t i = 0; i < gpu->nlabels; i++) {
		mf_jw_open(w, NULL, '{');
		mf_jw_str_lit(w, "key", gpu->labels[i].key);
		mf_jw_str_lit(w, "operator", "In");
		mf_jw_open_lit(w, "values", '[');
		mf_jw_str(w, NULL, gpu->labels[i].value);
		mf_jw_close(w, ']');
		mf_jw_close(w, '}');
	}
	mf_jw_close(w, ']');
	mf_jw_close(w, '}');
	mf_jw_close(w, '}');
}

/* The preferred terms for the cards want[0..k) of cards, as the list w's
 * member key. */
static void
write_preferred(struct mf_jw *w, const char *key,
    const struct mf_gpu *const *cards, const size_t *want, size_t k)
{
	mf_jw_open(w, key, '[');
	for (size_t j = 0; j < k; j++)
		write_pref_term(w, NULL, cards[want[j]], pref_weight(want[j]));
	mf_jw_close(w, ']');
}

/* Whether the expression e is "key op [value]". */
static int
expr_is(const struct mf_node *e, const char *key, const char *op,
    const char *value)
{
	const struct mf_node *vals = mf_node_get(e, "values");

	return streq(str_at(e, "key"), key) &&
	    streq(str_at(e, "operator"), op) && seq_len(vals) == 1 &&
	    streq(str_of(seq_at(vals, 0)), value);
}

/* --- what memfloor added before (ANN_AFFINITY) --------------------------- */

/*
 * What memfloor added to the pod's node affinity when it patched it
 * before (a Job reviewed again, or created from one it patched): the
 * annotation ANN_AFFINITY on the pods' metadata, as write_record wrote
 * it.  With none, nothing in the pod's affinity is memfloor's: an
 * expression the same as memfloor's may be the pod's own.
 */
struct mine {
	struct mf_doc *doc;              /* owned; may be NULL */
	const struct mf_node *required;  /* the memory expression, or NULL */
	const struct mf_node *preferred; /* the preferred terms, or NULL */
};

/* Whether a and b are the same JSON value (a map's members in any
 * order); never when either is NULL. */
static int
same_value(const struct mf_node *a, const struct mf_node *b)
{
	const struct mf_node *x, *y;

	if (a == NULL || b == NULL || a->type != b->type || a->len != b->len)
		return 0;
	if (a->type == MF_NODE_MAP) {
		for (x = a->child; x != NULL; x = x->next)
			if (!same_value(x, mf_node_get(b, x->key)))
				return 0;
		return 1;
	}
	if (a->type == MF_NODE_SEQ) {
		for (x = a->child, y = b->child; x != NULL && y != NULL;
		     x = x->next, y = y->next)
			if (!same_value(x, y))
				return 0;
		return 1;
	}
	return a->type == MF_NODE_NULL || streq(a->text, b->text);
}

/* The index in the list of the first element that is v; -1 when none is
 * (or v is NULL). */
static long
find_value(const struct mf_node *list, const struct mf_node *v)
{
	const struct mf_node *e;
	size_t i;

	if (v == NULL)
		return -1;
	EACH(list, i, e)
	if (same_value(e, v))
		return (long)i;
	return -1;
}

/* Whether the preferred term t is one memfloor added. */
static int
is_mine(const struct mine *m, const struct mf_node *t)
{
	return find_value(m->preferred, t) >= 0;
}

/*
 * *m from the pods' ANN_AFFINITY.  A value that is not memfloor's record
 * (no JSON object, a required that is no object, more preferred terms
 * than memfloor writes) is warned of and read as none.  -1 when out of
 * memory; free m->doc after.
 */
static int
read_mine(struct review *rv, struct mine *m)
{
	const struct mf_node *v =
	    mf_node_get(mf_node_get(rv->pod_meta, "annotations"), ANN_AFFINITY);
	const struct mf_node *root, *req, *pref;
	struct mf_error err;
	enum mf_rc rc;

	memset(m, 0, sizeof(*m));
	if (v == NULL)
		return 0;
	memset(&err, 0, sizeof(err));
	rc = is_str(v) ?
	    mf_doc_parse(v->text, v->len, MF_DOC_JSON, &m->doc, &err) :
	    MF_EINVAL;
	if (rc == MF_ENOMEM)
		return -1;
	root = rc == MF_OK ? mf_doc_root(m->doc) : NULL;
	req = mf_node_get(root, "required");
	pref = mf_node_get(root, "preferred");
	if (!is_map(root) || (req != NULL && !is_map(req)) ||
	    (pref != NULL && !is_seq(pref)) ||
	    seq_len(pref) > 1 + MF_MAX_ALTERNATIVES) {
		mf_review_warn(rv,
		    "annotation %s is not what memfloor writes; the node affinity is kept as the pod's own",
		    ANN_AFFINITY);
		return 0;
	}
	m->required = req;
	m->preferred = pref;
	return 0;
}

/*
 * The record of what the patch leaves of memfloor's own in the pod's node
 * affinity, the value of ANN_AFFINITY, into rv->affinity: {"required":
 * the memory expression for gt (when required: it is memfloor's in some
 * term), "preferred": [the terms for want[0..k) of cards]}.
 */
static void
write_record(struct review *rv, int required, const char *gt,
    const struct mf_gpu *const *cards, const size_t *want, size_t k)
{
	struct mf_jw w;

	mf_jw_init(&w, &rv->affinity);
	mf_jw_open(&w, NULL, '{');
	if (required)
		write_memory(&w, "required", gt, 0);
	write_preferred(&w, "preferred", cards, want, k);
	mf_jw_close(&w, '}');
}

/* --- merged into the pod's node affinity -------------------------------- */

/* Whether the preferred term t prefers the card as write_pref_term does,
 * at weight (at any when weight is negative). */
static int
term_prefers(const struct mf_node *t, const struct mf_gpu *gpu, int weight)
{
	const struct mf_node *exprs =
	    mf_node_get(mf_node_get(t, "preference"), "matchExpressions");
	const struct mf_node *w = mf_node_get(t, "weight");
	long long have;

	if (seq_len(exprs) != gpu->nlabels)
		return 0;
	if (weight >= 0 &&
	    (w == NULL || w->type != MF_NODE_NUM || !whole(w->text, &have) ||
	        have != weight))
		return 0;
	for (size_t k = 0; k < gpu->nlabels; k++)
		if (!expr_is(seq_at(exprs, k), gpu->labels[k].key, "In",
		        gpu->labels[k].value))
			return 0;
	return 1;
}

/* Whether the list of preferred terms prefs prefers the card already by a
 * term of the pod's own (whatever its weight). */
static int
prefers(const struct mf_node *prefs, const struct mine *m,
    const struct mf_gpu *gpu)
{
	const struct mf_node *t;
	size_t i;

	EACH(prefs, i, t)
	if (!is_mine(m, t) && term_prefers(t, gpu, -1))
		return 1;
	return 0;
}

/*
 * The cards of cards[0..n) memfloor prefers, their indices into want:
 * all but those without labels to prefer them by and those the pod's
 * preferred terms, prefs, prefer already.  Returns how many.
 */
static size_t
want_cards(const struct mf_node *prefs, const struct mine *m,
    const struct mf_gpu *const *cards, size_t n, size_t *want)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (cards[i]->nlabels > 0 && !prefers(prefs, m, cards[i]))
			want[k++] = i;
	return k;
}

/*
 * Into an existing list of preferred terms, prefs: the terms for
 * want[0..k) of cards, over memfloor's own terms of before in their
 * places (one already the same left alone), the rest of its own removed
 * (each removal takes one off the indices after it), and those left
 * over added at the end.  The pod's own terms stay where they are.
 */
static void
merge_preferred(struct review *rv, const char *base,
    const struct mf_node *prefs, const struct mine *m,
    const struct mf_gpu *const *cards, const size_t *want, size_t k)
{
	struct mf_patch *pt = &rv->patch;
	const struct mf_node *t;
	size_t i, j = 0, removed = 0;
	char at[192], idx[24];

	snprintf(at, sizeof(at), "%s/%s", base, PREFERRED);
	EACH(prefs, i, t)
	{
		if (!is_mine(m, t))
			continue;
		snprintf(idx, sizeof(idx), "%zu", i - removed);
		if (j == k) {
			mf_patch_str(pt, "remove", at, idx, NULL);
			removed++;
			continue;
		}
		if (!term_prefers(t, cards[want[j]], pref_weight(want[j]))) {
			mf_patch_begin(pt, "replace", at, idx);
			write_pref_term(&pt->w, "value", cards[want[j]],
			    pref_weight(want[j]));
			mf_patch_end(pt);
		}
		j++;
	}
	for (; j < k; j++) {
		mf_patch_begin(pt, "add", at, "-");
		write_pref_term(&pt->w, "value", cards[want[j]],
		    pref_weight(want[j]));
		mf_patch_end(pt);
	}
}

/* Whether a required term has neither expressions nor fields: such a
 * term matches no node (component-helpers' nodeaffinity,
 * isEmptyNodeSelectorTerm), and ANDing into it would widen it. */
static int
empty_term(const struct mf_node *t)
{
	return seq_len(mf_node_get(t, "matchExpressions")) == 0 &&
	    seq_len(mf_node_get(t, "matchFields")) == 0;
}

/* Whether the list of expressions exprs holds the memory expression
 * write_memory writes for gt. */
static int
has_memory(const struct mf_node *exprs, const char *gt)
{
	const struct mf_node *e;
	size_t i;

	EACH(exprs, i, e)
	if (expr_is(e, GPU_MEMORY_LABEL, "Gt", gt))
		return 1;
	return 0;
}

/*
 * The memory expression for gt into the required term t, the i-th of the
 * list at at: over memfloor's own of before (m->required) where the term
 * has it, else ANDed in, unless the term has the same already (the pod's
 * own).  Whether the term then carries memfloor's.
 */
static int
merge_term(struct review *rv, const char *at, size_t i, const struct mf_node *t,
    const char *gt, const struct mine *m)
{
	const struct mf_node *exprs = mf_node_get(t, "matchExpressions");
	long j = find_value(exprs, m->required);
	struct mf_patch *pt = &rv->patch;
	char term[320], idx[24];

	snprintf(term, sizeof(term), "%s/%zu/matchExpressions", at, i);
	if (j >= 0) {
		if (expr_is(seq_at(exprs, (size_t)j), GPU_MEMORY_LABEL, "Gt",
		        gt))
			return 1;
		snprintf(idx, sizeof(idx), "%ld", j);
		mf_patch_begin(pt, "replace", term, idx);
		write_memory(&pt->w, "value", gt, 0);
		mf_patch_end(pt);
		return 1;
	}
	if (has_memory(exprs, gt))
		return 0;
	if (is_seq(exprs)) {
		mf_patch_begin(pt, "add", term, "-");
		write_memory(&pt->w, "value", gt, 0);
	} else {
		mf_patch_begin(pt, "add", term, NULL);
		mf_jw_open_lit(&pt->w, "value", '[');
		write_memory(&pt->w, NULL, gt, 0);
		mf_jw_close(&pt->w, ']');
	}
	mf_patch_end(pt);
	return 1;
}

/*
 * The memory expression ANDed into every required term the pod has (terms
 * are ORed, so each must carry it), or one term when it has none.  A term
 * that matches no node is left as it is.  Whether the expression is
 * memfloor's in some term.
 */
static int
merge_required(struct review *rv, const char *base, const struct mf_node *na,
    const char *gt, const struct mine *m)
{
	const struct mf_node *req = mf_node_get(na, REQUIRED);
	const struct mf_node *terms = mf_node_get(req, "nodeSelectorTerms"), *t;
	struct mf_patch *pt = &rv->patch;
	char at[256];
	int own = 0;
	size_t i;

	if (!is_map(req)) {
		mf_patch_begin(pt, "add", base, REQUIRED);
		write_memory(&pt->w, "value", gt, 2);
		mf_patch_end(pt);
		return 1;
	}
	snprintf(at, sizeof(at), "%s/%s/nodeSelectorTerms", base, REQUIRED);
	if (!is_seq(terms) || seq_len(terms) == 0) {
		mf_patch_begin(pt, "add", at, is_seq(terms) ? "-" : NULL);
		if (is_seq(terms))
			write_memory(&pt->w, "value", gt, 1);
		else {
			mf_jw_open_lit(&pt->w, "value", '[');
			write_memory(&pt->w, NULL, gt, 1);
			mf_jw_close(&pt->w, ']');
		}
		mf_patch_end(pt);
		return 1;
	}
	EACH(terms, i, t)
	{
		if (!is_map(t) || empty_term(t))
			continue; /* refused by the API server, or matching none
			           */
		own |= merge_term(rv, at, i, t, gt, m);
	}
	return own;
}

/*
 * select: memory.  GPU Feature Discovery labels a node's GPU memory in
 * MiB, so a floor of F bytes wants a label of at least ceil(F / 2^20):
 * "Gt ceil(F / 2^20) - 1".  What memfloor added before (m) is replaced,
 * and what it adds now recorded in rv->affinity.
 */
static void
patch_affinity(struct review *rv, int64_t floor,
    const struct mf_gpu *const *cards, size_t n, const struct mine *m)
{
	const struct mf_node *aff = mf_node_get(rv->pod, "affinity");
	const struct mf_node *na = mf_node_get(aff, "nodeAffinity");
	const struct mf_node *prefs = mf_node_get(na, PREFERRED);
	struct mf_patch *pt = &rv->patch;
	size_t want[1 + MF_MAX_ALTERNATIVES], k;
	char base[96], gt[24];
	int64_t mib = floor / (1 << 20) + (floor % (1 << 20) != 0);
	int own = 1;

	assert(n <= sizeof(want) / sizeof(want[0]));
	snprintf(gt, sizeof(gt), "%lld", (long long)(mib - 1));
	snprintf(base, sizeof(base), "%s/affinity", rv->pod_path);
	k = want_cards(prefs, m, cards, n, want);
	if (!is_map(aff) || !is_map(na)) {
		mf_patch_begin(pt, "add", base,
		    is_map(aff) ? "nodeAffinity" : NULL);
		mf_jw_open_lit(&pt->w, "value", '{');
		if (!is_map(aff))
			mf_jw_open_lit(&pt->w, "nodeAffinity", '{');
		write_memory(&pt->w, REQUIRED, gt, 2);
		write_preferred(&pt->w, PREFERRED, cards, want, k);
		if (!is_map(aff))
			mf_jw_close(&pt->w, '}');
		mf_jw_close(&pt->w, '}');
		mf_patch_end(pt);
	} else {
		mf_copy(base + strlen(base), sizeof(base) - strlen(base),
		    "/nodeAffinity");
		own = merge_required(rv, base, na, gt, m);
		if (is_seq(prefs)) {
			merge_preferred(rv, base, prefs, m, cards, want, k);
		} else {
			mf_patch_begin(pt, "add", base, PREFERRED);
			write_preferred(&pt->w, "value", cards, want, k);
			mf_patch_end(pt);
		}
	}
	write_record(rv, own, gt, cards, want, k);
}

/* --- cards the pod's own constraints rule out ---------------------------- */

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
	const char *have;
	long long a, b;
	int found = 0;
	size_t i;

	have = label_value(gpu, key);
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

/* Whether the required term t may take a node with the card's labels;
 * memfloor's expression of before, mine, which the patch replaces, does
 * not count. */
static int
term_admits(const struct mf_node *t, const struct mf_gpu *gpu,
    const struct mf_node *mine)
{
	const struct mf_node *e;
	size_t i;

	if (empty_term(t))
		return 0;
	EACH(mf_node_get(t, "matchExpressions"), i, e)
	if (!same_value(e, mine) && !expr_admits(e, gpu))
		return 0;
	return 1;
}

/* Whether the pod's required node affinity (and, when selector is set,
 * its own nodeSelector) leaves the card's nodes a way in; mine as
 * term_admits. */
static int
card_admitted(const struct review *rv, const struct mf_gpu *gpu, int selector,
    const struct mf_node *mine)
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
	if (is_map(t) && term_admits(t, gpu, mine))
		return 1;
	return 0;
}

/*
 * Warn when the pod's own constraints exclude every card placed: it would
 * wait for nodes memfloor did not choose.  The product selector replaces
 * the pod's selector keys itself (with a warning each), so only the
 * memory selection, which keeps them, checks the nodeSelector; and it
 * replaces its own expression of before, mine (NULL: none).
 */
static void
check_excluded(struct review *rv, const struct mf_gpu *const *cards, size_t n,
    int memory, const struct mf_node *mine)
{
	char names[MF_REVIEW_WARNING_MAX + 1] = "";
	size_t used = 0;

	for (size_t i = 0; i < n; i++)
		if (card_admitted(rv, cards[i], memory, mine))
			return;
	for (size_t i = 0; i < n && used + 1 < sizeof(names); i++)
		used += (size_t)snprintf(names + used, sizeof(names) - used,
		    "%s%s", i > 0 ? ", " : "", cards[i]->name);
	mf_review_warn(rv,
	    "the pod's required node affinity%s excludes every card placed: %s",
	    memory ? " or nodeSelector" : "", names);
}

/* --- the pod's patch ---------------------------------------------------- */

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

int
mf_review_patch_pod(struct review *rv, const struct mf_decision *d,
    int64_t want, const char *placed)
{
	const struct mf_placement *p = &d->placement;
	const struct mf_gpu *cards[1 + MF_MAX_ALTERNATIVES];
	int memory = rv->api->cat->k8s_select == MF_K8S_SELECT_MEMORY;
	struct mine m;
	long target;
	size_t n;

	target = place_gpus(rv, want, placed);
	if (target < 0)
		return -1;
	memset(&m, 0, sizeof(m));
	if (memory && read_mine(rv, &m) != 0) {
		rv->nomem = 1;
		return -1;
	}
	n = placed_cards(d, memory, cards);
	check_excluded(rv, cards, n, memory, m.required);
	if (memory)
		patch_affinity(rv, d->floor, cards, n, &m);
	else
		patch_selector(rv, p->gpu);
	patch_gpus(rv,
	    seq_at(mf_node_get(rv->pod, "containers"), (size_t)target), target,
	    want);
	mf_doc_free(m.doc);
	return 0;
}
