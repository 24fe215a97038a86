/*
 * catalog.c: load and validate the GPU catalogue (design section 4).
 *
 * The file is read into the document tree of doc.h and walked once.  Every
 * field is typed and bounded, unknown keys are refused at every level (a
 * typo must not silently change a placement), and the first problem found
 * becomes the error, as "NAME:LINE: FIELD: problem".  Nothing is kept from
 * a catalogue that fails: the caller's snapshot in service stays as it is.
 */
#include "catalog.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../admission/base/buf.h"
#include "../admission/doc/doc.h"
#include "../admission/fields/fields.h"
#include "../admission/base/file.h"
#include "../admission/base/internal.h"
#include "../admission/base/jw.h"
#include "../admission/base/qty.h"

/* What every check needs to report a problem. */
struct ctx {
	const char *name; /* the file name errors start with */
	struct mf_error *err;
};

static enum mf_rc
fail(const struct ctx *c, enum mf_rc rc, const char *field, int line,
    int column, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Fill the error, about this file. */
static enum mf_rc
fail(const struct ctx *c, enum mf_rc rc, const char *field, int line,
    int column, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mf_error_vset(c->err, rc, field, line, column, fmt, ap);
	va_end(ap);
	return mf_error_in_file(c->err, rc, c->name);
}

/* An error the doc.h readers filled, said to be about this file. */
static enum mf_rc
in_file(const struct ctx *c, enum mf_rc rc)
{
	return mf_error_in_file(c->err, rc, c->name);
}

static void
gpu_clear(struct mf_gpu *gpu)
{
	for (size_t i = 0; i < gpu->nlabels; i++) {
		free(gpu->labels[i].key);
		free(gpu->labels[i].value);
	}
	free(gpu->labels);
	free(gpu->dcgm_model);
	free(gpu->slurm.gres);
	free(gpu->slurm.partition);
	free(gpu->slurm.constraint);
	free(gpu->name);
	for (int k = 0; k < MF_CARD_PARTS; k++)
		free(gpu->json[k]);
}

static void
cat_free(struct mf_catalog *cat)
{
	if (cat == NULL)
		return;
	for (size_t i = 0; i < cat->ngpus; i++)
		gpu_clear(&cat->gpus[i]);
	free(cat->gpus);
	free(cat->reference);
	free(cat->source);
	free(cat);
}

static char *
dup_str(const char *s)
{
	size_t len = strlen(s);
	char *p = malloc(len + 1);

	if (p != NULL)
		memcpy(p, s, len + 1);
	return p;
}

static enum mf_rc
no_memory(const struct ctx *c)
{
	return fail(c, MF_ENOMEM, NULL, 0, 0, "out of memory");
}

/*
 * maxCount defaults to what the nodes hold, capped at MF_CAT_MAX_COUNT;
 * more than they hold is an error.  The rows read the three counts.  A
 * vllm.cudaMemory above the card's memory is an error too.
 */
static enum mf_rc
check_counts(const struct ctx *c, const struct mf_node *map, const char *path,
    struct mf_gpu *gpu)
{
	int64_t held = gpu->gpus_per_node * gpu->max_nodes;
	const struct mf_node *n;
	char field[128];

	if (gpu->cuda_memory > gpu->memory) {
		n = mf_node_get(mf_node_get(map, "vllm"), "cudaMemory");
		snprintf(field, sizeof(field), "%s.vllm.cudaMemory", path);
		return fail(c, MF_EINVAL, field, n->line, n->column,
		    "is more than the card's memory (%lld bytes)",
		    (long long)gpu->memory);
	}
	if (gpu->max_count == 0) {
		gpu->max_count =
		    held < MF_CAT_MAX_COUNT ? held : MF_CAT_MAX_COUNT;
		return MF_OK;
	}
	if (gpu->max_count <= held)
		return MF_OK;
	n = mf_node_get(map, "maxCount");
	mf_path(field, sizeof(field), path, "maxCount");
	return fail(c, MF_EINVAL, field, n->line, n->column,
	    "%lld is more than gpusPerNode x maxNodes (%lld x %lld = %lld)",
	    (long long)gpu->max_count, (long long)gpu->gpus_per_node,
	    (long long)gpu->max_nodes, (long long)held);
}

/* A card's labels, checked by the rows: copied. */
static enum mf_rc
read_labels(const struct ctx *c, const struct mf_node *n, struct mf_gpu *gpu)
{
	const struct mf_node *e;

	if (n->len == 0)
		return MF_OK;
	gpu->labels = calloc(n->len, sizeof(*gpu->labels));
	if (gpu->labels == NULL)
		return no_memory(c);
	for (e = n->child; e != NULL; e = e->next) {
		/* Counted first so gpu_clear frees a half-copied label. */
		struct mf_label *l = &gpu->labels[gpu->nlabels++];

		l->key = dup_str(e->key);
		l->value = dup_str(e->text);
		if (l->key == NULL || l->value == NULL)
			return no_memory(c);
	}
	return MF_OK;
}

/* A card and a key two cards may share: its name, its gres. */
struct keyed {
	const char *key;
	const struct mf_gpu *gpu;
};

/* By key, then file order. */
static int
by_key(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	int d = strcmp(x->key, y->key);

	if (d != 0)
		return d;
	return (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

/* Where two cards clash: the later (bad) and the first of its key. */
struct clash {
	const struct mf_gpu *bad, *first; /* bad NULL: no clash */
	const struct mf_node *node;       /* bad's member, for the position */
	char field[128];                  /* its path: "gpus[3].name" */
};

/*
 * The first card in file order (k->bad) whose key (key(card); NULL:
 * none) an earlier card has and that clashes with the first card of that
 * key (k->first): clash(first, card); its member outer (outer.inner when
 * inner is not NULL) in the document's list seq is k->node.  Sorting
 * keeps this O(n log n) for large files.
 */
static enum mf_rc
find_clash(const struct ctx *c, const struct mf_catalog *cat,
    const struct mf_node *seq, const char *(*key)(const struct mf_gpu *),
    int (*clash)(const struct mf_gpu *, const struct mf_gpu *),
    const char *outer, const char *inner, struct clash *k)
{
	struct keyed *v;
	size_t i, m = 0, head = 0, at;

	k->bad = k->first = NULL;
	v = malloc(cat->ngpus * sizeof(*v));
	if (v == NULL)
		return no_memory(c);
	for (i = 0; i < cat->ngpus; i++) {
		v[m].key = key(&cat->gpus[i]);
		v[m].gpu = &cat->gpus[i];
		m += v[m].key != NULL;
	}
	qsort(v, m, sizeof(*v), by_key);
	for (i = 1; i < m; i++) {
		if (strcmp(v[i - 1].key, v[i].key) != 0)
			head = i;
		else if (clash(v[head].gpu, v[i].gpu) &&
		    (k->bad == NULL || v[i].gpu < k->bad)) {
			k->bad = v[i].gpu;
			k->first = v[head].gpu;
		}
	}
	free(v);
	if (k->bad == NULL)
		return MF_OK;
	at = (size_t)(k->bad - cat->gpus);
	for (k->node = seq->child, i = 0; i < at; i++)
		k->node = k->node->next;
	k->node = mf_node_get(k->node, outer);
	if (inner != NULL)
		k->node = mf_node_get(k->node, inner);
	snprintf(k->field, sizeof(k->field), "gpus[%zu].%s%s%s", at, outer,
	    inner != NULL ? "." : "", inner != NULL ? inner : "");
	return MF_OK;
}

static const char *
name_key(const struct mf_gpu *g)
{
	return g->name;
}

static int
any_two(const struct mf_gpu *a, const struct mf_gpu *b)
{
	(void)a;
	(void)b;
	return 1;
}

/* Refuse a name used twice, reporting the first entry in file order that
 * repeats an earlier one. */
static enum mf_rc
check_unique(const struct ctx *c, const struct mf_catalog *cat,
    const struct mf_node *seq)
{
	struct clash k;
	enum mf_rc rc;

	rc = find_clash(c, cat, seq, name_key, any_two, "name", NULL, &k);
	if (rc != MF_OK || k.bad == NULL)
		return rc;
	return fail(c, MF_EINVAL, k.field, k.node->line, k.node->column,
	    "'%s' is already the name of gpus[%zu] (line %d)", k.bad->name,
	    (size_t)(k.first - cat->gpus), k.first->line);
}

static const char *
gres_key(const struct mf_gpu *g)
{
	return g->slurm.gres;
}

static int
memory_differs(const struct mf_gpu *a, const struct mf_gpu *b)
{
	return a->memory != b->memory;
}

/*
 * Slurm cannot tell apart two cards of one gres type, so GPUs that share
 * a gres must have the same memory: job_submit.lua checks a floor against
 * the memory of the type.  Reports the first entry in file order whose
 * memory differs from the first entry of its gres.
 */
static enum mf_rc
check_gres(const struct ctx *c, const struct mf_catalog *cat,
    const struct mf_node *seq)
{
	struct clash k;
	enum mf_rc rc;

	rc = find_clash(c, cat, seq, gres_key, memory_differs, "slurm", "gres",
	    &k);
	if (rc != MF_OK || k.bad == NULL)
		return rc;
	return fail(c, MF_EINVAL, k.field, k.node->line, k.node->column,
	    "'%s' is also the gres of gpus[%zu] (line %d), whose memory differs: Slurm could give either card",
	    k.bad->slurm.gres, (size_t)(k.first - cat->gpus), k.first->line);
}

/* The cards, each read by the rows of mf_fields_gpu; seq's length is
 * checked. */
static enum mf_rc
read_gpus(struct mf_fread *r, const struct mf_field *f,
    const struct mf_node *seq)
{
	const struct ctx *c = r->ctx;
	struct mf_catalog *cat = r->dst[MF_FB_CAT];
	const struct mf_node *n;
	struct mf_gpu *gpu;
	char path[48];
	enum mf_rc rc;

	cat->gpus = calloc(seq->len, sizeof(*cat->gpus));
	if (cat->gpus == NULL)
		return no_memory(c);
	for (n = seq->child; n != NULL; n = n->next) {
		snprintf(path, sizeof(path), "gpus[%zu]", cat->ngpus);
		gpu = &cat->gpus[cat->ngpus++];
		gpu->line = n->line;
		r->dst[MF_FB_GPU] = gpu;
		mf_fields_defaults(f->item, r->dst);
		rc = mf_fields_read(r, f->item, n, path);
		if (rc == MF_OK)
			rc = check_counts(c, n, path, gpu);
		if (rc != MF_OK)
			return rc;
	}
	rc = check_unique(c, cat, seq);
	return rc == MF_OK ? check_gres(c, cat, seq) : rc;
}

/* The rows catalog_fields.c hands back: the cards and their labels. */
static enum mf_rc
hook(struct mf_fread *r, const struct mf_field *f, const struct mf_node *n,
    const char *path)
{
	(void)path;
	if (f->type == MF_FT_LIST)
		return read_gpus(r, f, n);
	return read_labels(r->ctx, n, r->dst[MF_FB_GPU]);
}

/* A card's achieved bf16 FLOPS: what a job whose work is not known is
 * timed by. */
static double
achieved(const struct mf_gpu *g)
{
	return (double)g->speed.flops[MF_DT_BF16] * mf_speed_matmul(&g->speed);
}

/* Where the reference card is named, or for the default where the cards
 * are listed (the gpus key): its line and column, 0 in JSON. */
static void
reference_at(const struct mf_node *root, int *line, int *column)
{
	const struct mf_node *n = mf_node_get(root, "reference");

	if (n != NULL) {
		*line = n->line;
		*column = n->column;
		return;
	}
	n = mf_node_get(root, "gpus");
	*line = n != NULL ? n->key_line : 0;
	*column = n != NULL ? n->key_column : 0;
}

/*
 * Design 21: each card gives relativeThroughput or the figures its time
 * is modelled from; a catalogue with modelled cards names a modelled
 * reference card (referenceHours are measured on it), and their
 * throughput is their achieved bf16 FLOPS over its.
 */
static enum mf_rc
check_speeds(const struct ctx *c, const struct mf_node *root,
    struct mf_catalog *cat)
{
	const char *name = cat->reference ? cat->reference : MF_CAT_REFERENCE;
	const struct mf_gpu *ref = mf_cat_find(cat, name);
	int modelled = 0, line, column;

	for (size_t i = 0; i < cat->ngpus; i++) {
		struct mf_gpu *g = &cat->gpus[i];

		g->throughput_given = g->throughput > 0;
		if (g->throughput_given)
			continue;
		if (!mf_speed_known(&g->speed)) {
			char path[64];

			snprintf(path, sizeof(path),
			    "gpus[%zu].relativeThroughput", i);
			return fail(c, MF_EINVAL, path, g->line, 0,
			    "is required unless the card gives flops.bf16, memoryBandwidth and architecture (design 21)");
		}
		modelled = 1;
	}
	if (ref == NULL && (modelled || cat->reference != NULL)) {
		reference_at(root, &line, &column);
		return fail(c, MF_EINVAL, "reference", line, column,
		    "no GPU named '%s' in the catalogue: name the card referenceHours are measured on",
		    name);
	}
	if (ref == NULL || (!modelled && !mf_speed_known(&ref->speed)))
		return MF_OK;
	if (!mf_speed_known(&ref->speed))
		return fail(c, MF_EINVAL, "reference", ref->line, 0,
		    "'%s' gives no flops.bf16, memoryBandwidth and architecture: the modelled cards' hours are converted through it",
		    name);
	cat->ref = ref;
	for (size_t i = 0; i < cat->ngpus; i++)
		if (!cat->gpus[i].throughput_given)
			cat->gpus[i].throughput =
			    achieved(&cat->gpus[i]) / achieved(ref);
	return MF_OK;
}

int
mf_cat_own_speed(const struct mf_catalog *cat, const struct mf_gpu *g)
{
	return cat->ref != NULL && (g == cat->ref || !g->throughput_given);
}

/*
 * The most GPUs g is timed on by its own figures: its maxCount; the
 * reference card's, the most any card takes, since every job is timed on
 * it at the job's own count (referenceHours, and the cards that give
 * relativeThroughput).  *by: the card that takes them.
 */
static int64_t
timed_count(const struct mf_catalog *cat, const struct mf_gpu *g,
    const struct mf_gpu **by)
{
	*by = g;
	if (g != cat->ref)
		return g->max_count;
	for (size_t i = 0; i < cat->ngpus; i++)
		if (cat->gpus[i].max_count > (*by)->max_count)
			*by = &cat->gpus[i];
	return (*by)->max_count;
}

/*
 * Design 21: a card timed by its own figures on more than one GPU of a
 * node runs its collectives over interconnect.bandwidth, and on more GPUs
 * than a node of it holds runs its rings over the network between nodes,
 * network.bandwidth; without them the collectives would cost nothing, or
 * run between nodes at the interconnect's speed, several times the
 * network's.  Those timed through relativeThroughput need neither.
 */
static enum mf_rc
check_links(const struct ctx *c, const struct mf_catalog *cat)
{
	const struct mf_gpu *g, *by;
	int64_t most;
	char path[64];

	for (size_t i = 0; i < cat->ngpus; i++) {
		g = &cat->gpus[i];
		if (!mf_cat_own_speed(cat, g))
			continue;
		most = timed_count(cat, g, &by);
		if (g->speed.link_bw <= 0 && g->gpus_per_node > 1 && most > 1) {
			snprintf(path, sizeof(path), "gpus[%zu].interconnect",
			    i);
			return fail(c, MF_EINVAL, path, g->line, 0,
			    "is required of a card timed by its figures that may take more than one GPU of a node ('%s' takes up to %lld, gpusPerNode %lld): collectives within a node run at interconnect.bandwidth (design 21)",
			    by->name, (long long)most,
			    (long long)g->gpus_per_node);
		}
		if (g->speed.net_bw > 0 || most <= g->gpus_per_node)
			continue;
		snprintf(path, sizeof(path), "gpus[%zu].network", i);
		if (by == g)
			return fail(c, MF_EINVAL, path, g->line, 0,
			    "is required of a card timed by its figures that may span nodes (maxCount %lld, gpusPerNode %lld): rings between nodes run at network.bandwidth (design 21)",
			    (long long)most, (long long)g->gpus_per_node);
		return fail(c, MF_EINVAL, path, g->line, 0,
		    "is required of the reference card when a job may take more GPUs than its node holds ('%s' takes up to %lld, gpusPerNode %lld): jobs are timed on it at their own count (design 21)",
		    by->name, (long long)most, (long long)g->gpus_per_node);
	}
	return MF_OK;
}

/* part of g's members, one by one. */
static void
card_members(struct mf_jw *w, const struct mf_gpu *g, enum mf_card_part part)
{
	if (part == MF_CARD_MEMORY) {
		mf_jw_qty_lit(w, "memory", g->memory,
		    (enum mf_qty_format)g->memory_format);
		mf_jw_int_lit(w, "memoryBytes", g->memory);
		return;
	}
	assert(part == MF_CARD_LABELS);
	mf_jw_open_lit(w, "labels", '{');
	for (size_t i = 0; i < g->nlabels; i++)
		mf_jw_str(w, g->labels[i].key, g->labels[i].value);
	mf_jw_close(w, '}');
}

void
mf_cat_card_write(struct mf_jw *w, const struct mf_gpu *gpu,
    enum mf_card_part part)
{
	assert(part >= 0 && part < MF_CARD_PARTS);
	if (w->form == MF_JW_JSON && gpu->json[part] != NULL)
		mf_jw_json_members(w, gpu->json[part], gpu->json_len[part]);
	else
		card_members(w, gpu, part);
}

/* g's parts as JSON, for mf_cat_card_write. */
static enum mf_rc
card_json(struct mf_gpu *g)
{
	for (int k = 0; k < MF_CARD_PARTS; k++) {
		struct mf_buf b;
		struct mf_jw w;

		mf_buf_init(&b, MF_CAT_MAX_BYTES);
		mf_jw_init(&w, &b);
		card_members(&w, g, (enum mf_card_part)k);
		if (b.rc != MF_OK) {
			enum mf_rc rc = b.rc;

			mf_buf_free(&b);
			return rc;
		}
		g->json_len[k] = b.len;
		g->json[k] = mf_buf_take(&b);
	}
	return MF_OK;
}

static enum mf_rc
read_catalog(const struct ctx *c, const struct mf_node *root,
    struct mf_catalog *cat)
{
	struct mf_fread r = { { NULL }, hook, (void *)c, c->err };
	enum mf_rc rc;

	r.dst[MF_FB_CAT] = cat;
	rc = mf_fields_read(&r, &mf_fields_catalog, root, "");
	if (rc != MF_OK)
		return in_file(c, rc);
	/* The text of each card's figures in its step formulas, and of its
	 * own members as answers write them, made with the snapshot it
	 * belongs to. */
	for (size_t i = 0; i < cat->ngpus; i++) {
		mf_speed_parts_make(&cat->gpus[i].speed);
		if (card_json(&cat->gpus[i]) != MF_OK)
			return no_memory(c);
	}
	rc = check_speeds(c, root, cat);
	return rc == MF_OK ? check_links(c, cat) : rc;
}

static struct mf_catalog *
cat_new(const char *source)
{
	struct mf_catalog *cat = calloc(1, sizeof(*cat));
	void *dst[MF_FB_COUNT] = { NULL };

	if (cat == NULL)
		return NULL;
	dst[MF_FB_CAT] = cat;
	mf_fields_defaults(&mf_fields_catalog, dst);
	cat->loaded_at = time(NULL);
	cat->refs = 1;
	cat->source = dup_str(source);
	if (cat->source == NULL) {
		free(cat);
		return NULL;
	}
	return cat;
}

enum mf_rc
mf_cat_parse(const char *buf, size_t len, const char *name,
    struct mf_catalog **out, struct mf_error *err)
{
	struct ctx c = { name != NULL ? name : "<memory>", err };
	struct mf_catalog *cat = NULL;
	struct mf_doc *doc = NULL;
	enum mf_rc rc;

	if (len > MF_CAT_MAX_BYTES)
		return fail(&c, MF_ETOOBIG, NULL, 0, 0,
		    "%zu bytes, more than the %u a catalogue may hold", len,
		    MF_CAT_MAX_BYTES);
	rc = mf_doc_parse(buf != NULL ? buf : "", len, MF_DOC_AUTO, &doc, err);
	if (rc != MF_OK)
		return in_file(&c, rc);
	cat = cat_new(c.name);
	if (cat == NULL) {
		rc = no_memory(&c);
		goto out;
	}
	rc = read_catalog(&c, mf_doc_root(doc), cat);
	if (rc != MF_OK)
		goto out;
	*out = cat;
	cat = NULL;
out:
	cat_free(cat);
	mf_doc_free(doc);
	return rc;
}

static const char *
base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL && slash[1] != '\0' ? slash + 1 : path;
}

/*
 * Errors about the file itself name it as given; those about its content
 * name it by base name (mf_cat_parse).
 */
enum mf_rc
mf_cat_load(const char *path, struct mf_catalog **out, struct mf_error *err)
{
	struct ctx c = { path, err };
	struct mf_catalog *cat = NULL;
	char *buf = NULL, *source;
	size_t len = 0;
	enum mf_rc rc;

	rc = mf_file_read(path, MF_CAT_MAX_BYTES, "a catalogue", &buf, &len,
	    err);
	if (rc != MF_OK)
		return rc;
	rc = mf_cat_parse(buf, len, base_name(path), &cat, err);
	free(buf);
	if (rc != MF_OK)
		return rc;
	source = dup_str(path);
	if (source == NULL) {
		mf_cat_unref(cat);
		return no_memory(&c);
	}
	free(cat->source);
	cat->source = source;
	*out = cat;
	return MF_OK;
}

/* refs is a plain int in the header, counted by MF_REF and MF_UNREF
 * (internal.h). */
struct mf_catalog *
mf_cat_ref(struct mf_catalog *cat)
{
	return MF_REF(cat);
}

void
mf_cat_unref(struct mf_catalog *cat)
{
	if (MF_UNREF(cat))
		cat_free(cat);
}

const struct mf_gpu *
mf_cat_find(const struct mf_catalog *cat, const char *name)
{
	if (cat == NULL || name == NULL)
		return NULL;
	for (size_t i = 0; i < cat->ngpus; i++)
		if (strcmp(cat->gpus[i].name, name) == 0)
			return &cat->gpus[i];
	return NULL;
}

int
mf_cat_has_slurm(const struct mf_gpu *gpu)
{
	return gpu != NULL &&
	    (gpu->slurm.gres != NULL || gpu->slurm.partition != NULL ||
	        gpu->slurm.constraint != NULL);
}

const char *
mf_cat_gres_type(const struct mf_gpu *gpu)
{
	if (gpu == NULL || gpu->slurm.gres == NULL)
		return NULL;
	return gpu->slurm.gres + 4; /* after "gpu:", checked on load */
}

static int
by_unit_cost(const void *a, const void *b)
{
	const struct mf_gpu *x = *(const struct mf_gpu *const *)a;
	const struct mf_gpu *y = *(const struct mf_gpu *const *)b;
	double cx = mf_cat_unit_cost(x), cy = mf_cat_unit_cost(y);

	if (cx != cy)
		return cx < cy ? -1 : 1;
	return strcmp(x->name, y->name);
}

void
mf_cat_cheapest_first(const struct mf_gpu **gpus, size_t n)
{
	if (n > 1)
		qsort((void *)gpus, n, sizeof(*gpus), by_unit_cost);
}

const struct mf_gpu **
mf_cat_fitting(const struct mf_catalog *cat, int64_t min_memory, size_t *n)
{
	const struct mf_gpu **v = malloc((cat->ngpus + 1) * sizeof(*v));

	*n = 0;
	if (v == NULL)
		return NULL;
	for (size_t i = 0; i < cat->ngpus; i++)
		if (cat->gpus[i].memory >= min_memory)
			v[(*n)++] = &cat->gpus[i];
	if (min_memory > 0)
		mf_cat_cheapest_first(v, *n);
	return v;
}

/*
 * memory x (1 - headroom), rounded down, in integer arithmetic.  headroom
 * is taken as the decimal the operator wrote, to nine places: the double
 * nearest 0.15 lies below 0.15, and multiplying by it in floating point
 * would make 100 bytes at 15% headroom 84 usable bytes instead of 85.
 * With keep = 10^9 (1 - headroom) exact, memory = q 10^9 + r gives
 * memory x keep / 10^9 = q keep + r keep / 10^9, where q keep <= memory
 * and r keep < 10^18: neither overflows 63 bits.
 */
int64_t
mf_cat_keep(double headroom)
{
	if (!(headroom >= 0))
		headroom = 0;
	if (headroom > 1)
		headroom = 1;
	return MF_CAT_KEEP_SCALE -
	    (int64_t)llround(headroom * (double)MF_CAT_KEEP_SCALE);
}

int64_t
mf_cat_usable_at(const struct mf_gpu *gpu, double headroom)
{
	return mf_cat_usable_keep(gpu, mf_cat_keep(headroom));
}

int64_t
mf_cat_usable(const struct mf_catalog *cat, const struct mf_gpu *gpu)
{
	return cat == NULL ? 0 : mf_cat_usable_at(gpu, cat->headroom);
}
