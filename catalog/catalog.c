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

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../admission/buf.h"
#include "../admission/doc.h"
#include "../admission/file.h"
#include "../admission/internal.h"
#include "../admission/qty.h"

#define API_VERSION "memfloor.dev/v1"
#define KIND "GpuCatalog"
#define NAME_MAX_LEN 63
#define LABEL_NAME_MAX 63
#define LABEL_PREFIX_MAX 253
#define DEFAULT_HEADROOM 0.10
#define DEFAULT_EFFICIENCY 0.9
#define DEFAULT_CHECKPOINTING 1.35
#define SLURM_NAME_MAX 63 /* a gres type or a partition name */
#define SLURM_CONSTRAINT_MAX 255
#define DEFAULT_INTER_NODE 0.8
#define DEFAULT_GPUS_PER_NODE 8
#define DEFAULT_MAX_NODES 1

/* A closed or open interval for a number field, and how to print it. */
struct bound {
	double lo, hi;
	int lo_open, hi_open;
	const char *text;
};

static const struct bound headroom_bound = { 0, 0.9, 0, 1, "[0, 0.9)" };
static const struct bound efficiency_bound = { 0, 1, 1, 0, "(0, 1]" };
static const struct bound factor_bound = { 0, 100, 1, 0, "(0, 100]" };
static const struct bound price_bound = { 0, 1e6, 0, 0, "[0, 1000000]" };
static const struct bound throughput_bound = { 0, 1000, 1, 0, "(0, 1000]" };

static const char *const top_keys[] = { "apiVersion", "kind", "headroom",
	"multiGpuEfficiency", "interNodeEfficiency", "timeFactors", "gpus",
	"kubernetes", "estimator", "cudaGraphReserve", NULL };
static const char *const gpu_keys[] = { "name", "memory", "hourlyPrice",
	"relativeThroughput", "gpusPerNode", "maxNodes", "maxCount", "labels",
	"slurm", NULL };
static const char *const slurm_keys[] = { "gres", "partition", "constraint",
	NULL };

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
	char text[sizeof(c->err->text)];
	va_list ap;

	if (c->err == NULL)
		return rc;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	mf_error_set(c->err, rc, field, line, column, "%s", text);
	return mf_error_in_file(c->err, rc, c->name);
}

static enum mf_rc
fail_at(const struct ctx *c, const char *field, const struct mf_node *n,
    const char *what)
{
	return fail(c, MF_EINVAL, field, n->line, n->column, "%s", what);
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
	free(gpu->slurm.gres);
	free(gpu->slurm.partition);
	free(gpu->slurm.constraint);
	free(gpu->name);
}

static void
cat_free(struct mf_catalog *cat)
{
	if (cat == NULL)
		return;
	for (size_t i = 0; i < cat->ngpus; i++)
		gpu_clear(&cat->gpus[i]);
	free(cat->gpus);
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

static enum mf_rc
missing(const struct ctx *c, const char *field, const struct mf_node *parent)
{
	return fail_at(c, field, parent, "required field is missing");
}

/* A number in the interval b, as written in node n. */
static enum mf_rc
read_number(const struct ctx *c, const struct mf_node *n, const char *field,
    const struct bound *b, double *out)
{
	double v;

	if (mf_node_double(n, field, -HUGE_VAL, HUGE_VAL, &v, c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	if (v < b->lo || v > b->hi || (b->lo_open && v == b->lo) ||
	    (b->hi_open && v == b->hi))
		return fail(c, MF_EINVAL, field, n->line, n->column,
		    "%.40s is out of range %s", n->text, b->text);
	*out = v + 0.0; /* -0 becomes 0 */
	return MF_OK;
}

static int
is_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9');
}

/* A GPU name: [A-Za-z0-9._-], 1 to 63 characters. */
static int
gpu_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > NAME_MAX_LEN)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!is_alnum(s[i]) && s[i] != '.' && s[i] != '_' &&
		    s[i] != '-')
			return 0;
	return 1;
}

/*
 * A Kubernetes label name or value: at most 63 characters of [A-Za-z0-9._-]
 * beginning and ending with a letter or digit.  Values may be empty.
 */
static int
label_part_ok(const char *s, size_t len, int empty_ok)
{
	if (len == 0)
		return empty_ok;
	if (len > LABEL_NAME_MAX || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return 0;
	for (size_t i = 1; i + 1 < len; i++)
		if (!is_alnum(s[i]) && s[i] != '.' && s[i] != '_' &&
		    s[i] != '-')
			return 0;
	return 1;
}

/* A DNS-1123 subdomain (a label key's prefix): lower-case, dot-separated. */
static int
dns_subdomain_ok(const char *s, size_t len)
{
	size_t start = 0;

	if (len == 0 || len > LABEL_PREFIX_MAX)
		return 0;
	for (size_t i = 0; i <= len; i++) {
		char ch = i < len ? s[i] : '.';

		if (ch == '.') {
			if (i == start || s[start] == '-' || s[i - 1] == '-')
				return 0;
			start = i + 1;
		} else if (!(ch >= 'a' && ch <= 'z') &&
		    !(ch >= '0' && ch <= '9') && ch != '-') {
			return 0;
		}
	}
	return 1;
}

/* A Kubernetes label key: [prefix/]name. */
static int
label_key_ok(const char *key)
{
	const char *slash = strchr(key, '/');

	if (slash == NULL)
		return label_part_ok(key, strlen(key), 0);
	return dns_subdomain_ok(key, (size_t)(slash - key)) &&
	    label_part_ok(slash + 1, strlen(slash + 1), 0);
}

static enum mf_rc
read_label(const struct ctx *c, const struct mf_node *n, const char *field,
    struct mf_label *label)
{
	const char *value;

	if (!label_key_ok(n->key))
		return fail_at(c, field, n,
		    "is not a Kubernetes label key ([prefix/]name, name at most 63 characters of [A-Za-z0-9._-])");
	if (mf_node_str(n, field, &value, c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	if (!label_part_ok(value, n->len, 1))
		return fail(c, MF_EINVAL, field, n->line, n->column,
		    "'%.63s' is not a Kubernetes label value (at most 63 characters of [A-Za-z0-9._-])",
		    value);
	label->key = dup_str(n->key);
	label->value = dup_str(value);
	if (label->key == NULL || label->value == NULL)
		return no_memory(c);
	return MF_OK;
}

static enum mf_rc
read_labels(const struct ctx *c, const struct mf_node *n, const char *path,
    struct mf_gpu *gpu)
{
	const struct mf_node *child;
	char field[128];
	enum mf_rc rc;

	if (mf_node_map(n, path, NULL, c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	if (n->len > MF_CAT_MAX_LABELS)
		return fail(c, MF_EINVAL, path, n->line, n->column,
		    "%zu labels, more than %d", n->len, MF_CAT_MAX_LABELS);
	if (n->len == 0)
		return MF_OK;
	gpu->labels = calloc(n->len, sizeof(*gpu->labels));
	if (gpu->labels == NULL)
		return no_memory(c);
	for (child = n->child; child != NULL; child = child->next) {
		mf_path(field, sizeof(field), path, child->key);
		/* Counted first so gpu_clear frees a half-read label. */
		rc = read_label(c, child, field, &gpu->labels[gpu->nlabels++]);
		if (rc != MF_OK)
			return rc;
	}
	return MF_OK;
}

/*
 * A Slurm name (a gres type, a partition): 1 to 63 characters of
 * [A-Za-z0-9._-], so that none of Slurm's separators (: , = space) can
 * split it.
 */
static int
slurm_name_ok(const char *s, size_t len)
{
	return gpu_name_ok(s, len) && len <= SLURM_NAME_MAX;
}

/* "gpu:TYPE". */
static int
gres_ok(const char *s, size_t len)
{
	return len > 4 && strncmp(s, "gpu:", 4) == 0 &&
	    slurm_name_ok(s + 4, len - 4);
}

/* Features of [A-Za-z0-9._-] joined by & or |, at most 255 characters. */
static int
constraint_ok(const char *s, size_t len)
{
	size_t start = 0;

	if (len == 0 || len > SLURM_CONSTRAINT_MAX)
		return 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '&' && s[i] != '|') {
			if (!is_alnum(s[i]) && s[i] != '.' && s[i] != '_' &&
			    s[i] != '-')
				return 0;
			continue;
		}
		if (i == start)
			return 0;
		start = i + 1;
	}
	return 1;
}

/* One string field of a slurm mapping, checked by ok. */
static enum mf_rc
read_slurm_str(const struct ctx *c, const struct mf_node *map, const char *path,
    const char *key, int (*ok)(const char *, size_t), const char *form,
    char **out)
{
	const struct mf_node *n = mf_node_get(map, key);
	const char *s;
	char field[128];

	if (n == NULL)
		return MF_OK;
	mf_path(field, sizeof(field), path, key);
	if (mf_node_str(n, field, &s, c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	if (strlen(s) != n->len || !ok(s, n->len))
		return fail(c, MF_EINVAL, field, n->line, n->column,
		    "'%.72s' is not %s", s, form);
	*out = dup_str(s);
	return *out == NULL ? no_memory(c) : MF_OK;
}

static enum mf_rc
read_slurm(const struct ctx *c, const struct mf_node *n, const char *path,
    struct mf_gpu *gpu)
{
	enum mf_rc rc;

	if (mf_node_map(n, path, slurm_keys, c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	if (n->len == 0)
		return fail_at(c, path, n,
		    "names none of gres, partition and constraint");
	rc = read_slurm_str(c, n, path, "gres", gres_ok,
	    "a Slurm GPU gres (gpu:TYPE, TYPE 1 to 63 characters of [A-Za-z0-9._-])",
	    &gpu->slurm.gres);
	if (rc == MF_OK)
		rc = read_slurm_str(c, n, path, "partition", slurm_name_ok,
		    "a Slurm partition name (1 to 63 characters of [A-Za-z0-9._-])",
		    &gpu->slurm.partition);
	if (rc == MF_OK)
		rc = read_slurm_str(c, n, path, "constraint", constraint_ok,
		    "a Slurm constraint (features of [A-Za-z0-9._-] joined by & or |, at most 255 characters)",
		    &gpu->slurm.constraint);
	return rc;
}

static enum mf_rc
read_name(const struct ctx *c, const struct mf_node *map, const char *path,
    struct mf_gpu *gpu)
{
	const struct mf_node *n = mf_node_get(map, "name");
	const char *name;
	char field[128];

	mf_path(field, sizeof(field), path, "name");
	if (n == NULL)
		return missing(c, field, map);
	if (mf_node_str(n, field, &name, c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	if (!gpu_name_ok(name, n->len))
		return fail(c, MF_EINVAL, field, n->line, n->column,
		    "'%.64s' is not a GPU name (1 to 63 characters of [A-Za-z0-9._-])",
		    name);
	gpu->name = dup_str(name);
	return gpu->name == NULL ? no_memory(c) : MF_OK;
}

static enum mf_rc
read_memory(const struct ctx *c, const struct mf_node *map, const char *path,
    struct mf_gpu *gpu)
{
	const struct mf_node *n = mf_node_get(map, "memory");
	char field[128];

	mf_path(field, sizeof(field), path, "memory");
	if (n == NULL)
		return missing(c, field, map);
	if (mf_node_bytes(n, field, &gpu->memory, &gpu->memory_format,
	        c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	return MF_OK;
}

/* A required number field of a GPU entry. */
static enum mf_rc
read_gpu_number(const struct ctx *c, const struct mf_node *map,
    const char *path, const char *key, const struct bound *b, double *out)
{
	const struct mf_node *n = mf_node_get(map, key);
	char field[128];

	mf_path(field, sizeof(field), path, key);
	if (n == NULL)
		return missing(c, field, map);
	return read_number(c, n, field, b, out);
}

/* An optional whole-number field of a GPU entry in [1, MF_CAT_MAX_COUNT];
 * *out keeps its default when the field is absent. */
static enum mf_rc
read_gpu_count(const struct ctx *c, const struct mf_node *map, const char *path,
    const char *key, int64_t *out)
{
	const struct mf_node *n = mf_node_get(map, key);
	char field[128];

	mf_path(field, sizeof(field), path, key);
	if (n != NULL &&
	    mf_node_int(n, field, 1, MF_CAT_MAX_COUNT, out, c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	return MF_OK;
}

/*
 * gpusPerNode, maxNodes and maxCount.  maxCount defaults to what the nodes
 * hold, capped at MF_CAT_MAX_COUNT; more than they hold is an error.
 */
static enum mf_rc
read_counts(const struct ctx *c, const struct mf_node *map, const char *path,
    struct mf_gpu *gpu)
{
	const struct mf_node *n;
	enum mf_rc rc;
	char field[128];
	int64_t held;

	gpu->gpus_per_node = DEFAULT_GPUS_PER_NODE;
	gpu->max_nodes = DEFAULT_MAX_NODES;
	rc = read_gpu_count(c, map, path, "gpusPerNode", &gpu->gpus_per_node);
	if (rc == MF_OK)
		rc = read_gpu_count(c, map, path, "maxNodes", &gpu->max_nodes);
	if (rc != MF_OK)
		return rc;
	held = gpu->gpus_per_node * gpu->max_nodes;
	gpu->max_count = held < MF_CAT_MAX_COUNT ? held : MF_CAT_MAX_COUNT;
	rc = read_gpu_count(c, map, path, "maxCount", &gpu->max_count);
	if (rc != MF_OK || gpu->max_count <= held)
		return rc;
	n = mf_node_get(map, "maxCount");
	mf_path(field, sizeof(field), path, "maxCount");
	return fail(c, MF_EINVAL, field, n->line, n->column,
	    "%lld is more than gpusPerNode x maxNodes (%lld x %lld = %lld)",
	    (long long)gpu->max_count, (long long)gpu->gpus_per_node,
	    (long long)gpu->max_nodes, (long long)held);
}

static enum mf_rc
read_gpu(const struct ctx *c, const struct mf_node *n, const char *path,
    struct mf_gpu *gpu)
{
	const struct mf_node *v;
	char field[128];
	enum mf_rc rc;

	if (mf_node_map(n, path, gpu_keys, c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	gpu->line = n->line;
	rc = read_name(c, n, path, gpu);
	if (rc == MF_OK)
		rc = read_memory(c, n, path, gpu);
	if (rc == MF_OK)
		rc = read_gpu_number(c, n, path, "hourlyPrice", &price_bound,
		    &gpu->hourly_price);
	if (rc == MF_OK)
		rc = read_gpu_number(c, n, path, "relativeThroughput",
		    &throughput_bound, &gpu->throughput);
	if (rc == MF_OK)
		rc = read_counts(c, n, path, gpu);
	if (rc != MF_OK)
		return rc;
	v = mf_node_get(n, "labels");
	mf_path(field, sizeof(field), path, "labels");
	if (v != NULL) {
		rc = read_labels(c, v, field, gpu);
		if (rc != MF_OK)
			return rc;
	}
	v = mf_node_get(n, "slurm");
	mf_path(field, sizeof(field), path, "slurm");
	return v == NULL ? MF_OK : read_slurm(c, v, field, gpu);
}

/* Sort key for the duplicate-name check: by name, then file order. */
static int
by_name(const void *a, const void *b)
{
	const struct mf_gpu *x = *(const struct mf_gpu *const *)a;
	const struct mf_gpu *y = *(const struct mf_gpu *const *)b;
	int d = strcmp(x->name, y->name);

	if (d != 0)
		return d;
	return (x > y) - (x < y);
}

/*
 * Refuse a name used twice, reporting the first entry in file order that
 * repeats an earlier one.  Sorting keeps this O(n log n) for large files.
 */
static enum mf_rc
check_unique(const struct ctx *c, const struct mf_catalog *cat,
    const struct mf_node *seq)
{
	const struct mf_gpu **sorted, *dup = NULL, *first = NULL;
	const struct mf_node *n;
	char field[128];
	size_t i, k;

	sorted = malloc(cat->ngpus * sizeof(*sorted));
	if (sorted == NULL)
		return no_memory(c);
	for (i = 0; i < cat->ngpus; i++)
		sorted[i] = &cat->gpus[i];
	qsort(sorted, cat->ngpus, sizeof(*sorted), by_name);
	for (i = 1; i < cat->ngpus; i++) {
		if (strcmp(sorted[i - 1]->name, sorted[i]->name) != 0)
			continue;
		if (dup == NULL || sorted[i] < dup) {
			dup = sorted[i];
			for (k = i - 1; k > 0 &&
			     strcmp(sorted[k - 1]->name, dup->name) == 0;
			     k--)
				;
			first = sorted[k];
		}
	}
	free((void *)sorted);
	if (dup == NULL)
		return MF_OK;
	i = (size_t)(dup - cat->gpus);
	for (n = seq->child, k = 0; k < i; k++)
		n = n->next;
	n = mf_node_get(n, "name");
	snprintf(field, sizeof(field), "gpus[%zu].name", i);
	return fail(c, MF_EINVAL, field, n->line, n->column,
	    "'%s' is already the name of gpus[%zu] (line %d)", dup->name,
	    (size_t)(first - cat->gpus), first->line);
}

/* Sort key for the shared-gres check: by gres, then file order. */
static int
by_gres(const void *a, const void *b)
{
	const struct mf_gpu *x = *(const struct mf_gpu *const *)a;
	const struct mf_gpu *y = *(const struct mf_gpu *const *)b;
	int d = strcmp(x->slurm.gres, y->slurm.gres);

	if (d != 0)
		return d;
	return (x > y) - (x < y);
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
	const struct mf_gpu **sorted, *bad = NULL, *first = NULL, *head = NULL;
	const struct mf_node *n;
	char field[128];
	size_t i, k, m = 0;

	sorted = malloc(cat->ngpus * sizeof(*sorted));
	if (sorted == NULL)
		return no_memory(c);
	for (i = 0; i < cat->ngpus; i++)
		if (cat->gpus[i].slurm.gres != NULL)
			sorted[m++] = &cat->gpus[i];
	qsort(sorted, m, sizeof(*sorted), by_gres);
	for (i = 0; i < m; i++) {
		if (i == 0 ||
		    strcmp(sorted[i - 1]->slurm.gres, sorted[i]->slurm.gres) !=
		        0)
			head = sorted[i];
		else if (sorted[i]->memory != head->memory &&
		    (bad == NULL || sorted[i] < bad)) {
			bad = sorted[i];
			first = head;
		}
	}
	free((void *)sorted);
	if (bad == NULL)
		return MF_OK;
	i = (size_t)(bad - cat->gpus);
	for (n = seq->child, k = 0; k < i; k++)
		n = n->next;
	n = mf_node_get(mf_node_get(n, "slurm"), "gres");
	snprintf(field, sizeof(field), "gpus[%zu].slurm.gres", i);
	return fail(c, MF_EINVAL, field, n->line, n->column,
	    "'%s' is also the gres of gpus[%zu] (line %d), whose memory differs: Slurm could give either card",
	    bad->slurm.gres, (size_t)(first - cat->gpus), first->line);
}

static enum mf_rc
read_gpus(const struct ctx *c, const struct mf_node *root,
    struct mf_catalog *cat)
{
	const struct mf_node *seq = mf_node_get(root, "gpus"), *n;
	char path[48];
	enum mf_rc rc;

	if (seq == NULL)
		return missing(c, "gpus", root);
	if (seq->type != MF_NODE_SEQ)
		return fail(c, MF_EINVAL, "gpus", seq->line, seq->column,
		    "must be a list, not %s", mf_node_type_name(seq->type));
	if (seq->len == 0)
		return fail_at(c, "gpus", seq, "at least one GPU is required");
	if (seq->len > MF_CAT_MAX_GPUS)
		return fail(c, MF_ETOOBIG, "gpus", seq->line, seq->column,
		    "%zu GPUs, more than %d", seq->len, MF_CAT_MAX_GPUS);
	cat->gpus = calloc(seq->len, sizeof(*cat->gpus));
	if (cat->gpus == NULL)
		return no_memory(c);
	for (n = seq->child; n != NULL; n = n->next) {
		snprintf(path, sizeof(path), "gpus[%zu]", cat->ngpus);
		rc = read_gpu(c, n, path, &cat->gpus[cat->ngpus++]);
		if (rc != MF_OK)
			return rc;
	}
	rc = check_unique(c, cat, seq);
	return rc == MF_OK ? check_gres(c, cat, seq) : rc;
}

static enum mf_rc
read_time_factors(const struct ctx *c, const struct mf_node *n,
    struct mf_catalog *cat)
{
	const struct mf_node *child;
	char field[128], ids[MF_FIX_IDS_MAX];
	enum mf_rc rc;
	int fix;

	if (mf_node_map(n, "timeFactors", NULL, c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	for (child = n->child; child != NULL; child = child->next) {
		mf_path(field, sizeof(field), "timeFactors", child->key);
		fix = mf_fix_lookup(child->key);
		if (fix < 0)
			return fail(c, MF_EINVAL, field, child->line,
			    child->column, "unknown fix (%s)",
			    mf_fix_ids(ids, sizeof(ids)));
		rc = read_number(c, child, field, &factor_bound,
		    &cat->time_factor[fix]);
		if (rc != MF_OK)
			return rc;
	}
	return MF_OK;
}

static const char *const k8s_keys[] = { "select", NULL };
/* In the order of enum mf_k8s_select. */
static const char *const k8s_selects[] = { "product", "memory", NULL };

/* kubernetes: {select: product | memory} */
static enum mf_rc
read_kubernetes(const struct ctx *c, const struct mf_node *n,
    struct mf_catalog *cat)
{
	const struct mf_node *v;
	int select;

	if (mf_node_map(n, "kubernetes", k8s_keys, c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	v = mf_node_get(n, "select");
	if (v == NULL)
		return MF_OK;
	if (mf_node_enum(v, "kubernetes.select", k8s_selects, &select,
	        c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	cat->k8s_select = (enum mf_k8s_select)select;
	return MF_OK;
}

/* A required string field of the top level that must hold one value. */
static enum mf_rc
read_fixed(const struct ctx *c, const struct mf_node *root, const char *key,
    const char *want)
{
	const struct mf_node *n = mf_node_get(root, key);
	const char *s;

	if (n == NULL)
		return missing(c, key, root);
	if (mf_node_str(n, key, &s, c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	if (strcmp(s, want) != 0)
		return fail(c, MF_EINVAL, key, n->line, n->column,
		    "'%.64s' is not %s", s, want);
	return MF_OK;
}

/* estimator: pytorch | post (design 13). */
static enum mf_rc
read_estimator(const struct ctx *c, const struct mf_node *n,
    struct mf_catalog *cat)
{
	const char *s;

	if (mf_node_str(n, "estimator", &s, c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	if (mf_estimator_parse(s, &cat->estimator) != MF_OK)
		return fail(c, MF_EINVAL, "estimator", n->line, n->column,
		    "'%.64s' is not an estimator (pytorch or post)", s);
	return MF_OK;
}

static enum mf_rc
read_catalog(const struct ctx *c, const struct mf_node *root,
    struct mf_catalog *cat)
{
	const struct mf_node *n;
	enum mf_rc rc;

	if (root->type != MF_NODE_MAP)
		return fail(c, MF_EINVAL, NULL, root->line, root->column,
		    "a catalogue must be a mapping, not %s",
		    mf_node_type_name(root->type));
	if (mf_node_map(root, "", top_keys, c->err) != MF_OK)
		return in_file(c, MF_EINVAL);
	rc = read_fixed(c, root, "apiVersion", API_VERSION);
	if (rc == MF_OK)
		rc = read_fixed(c, root, "kind", KIND);
	n = mf_node_get(root, "headroom");
	if (rc == MF_OK && n != NULL)
		rc = read_number(c, n, "headroom", &headroom_bound,
		    &cat->headroom);
	n = mf_node_get(root, "multiGpuEfficiency");
	if (rc == MF_OK && n != NULL)
		rc = read_number(c, n, "multiGpuEfficiency", &efficiency_bound,
		    &cat->multi_gpu_efficiency);
	n = mf_node_get(root, "interNodeEfficiency");
	if (rc == MF_OK && n != NULL)
		rc = read_number(c, n, "interNodeEfficiency", &efficiency_bound,
		    &cat->inter_node_efficiency);
	n = mf_node_get(root, "cudaGraphReserve");
	if (rc == MF_OK && n != NULL &&
	    mf_node_bytes(n, "cudaGraphReserve", &cat->cuda_graph_reserve,
	        &cat->cuda_graph_format, c->err) != MF_OK)
		rc = in_file(c, MF_EINVAL);
	n = mf_node_get(root, "timeFactors");
	if (rc == MF_OK && n != NULL)
		rc = read_time_factors(c, n, cat);
	n = mf_node_get(root, "kubernetes");
	if (rc == MF_OK && n != NULL)
		rc = read_kubernetes(c, n, cat);
	n = mf_node_get(root, "estimator");
	if (rc == MF_OK && n != NULL)
		rc = read_estimator(c, n, cat);
	if (rc == MF_OK)
		rc = read_gpus(c, root, cat);
	return rc;
}

static struct mf_catalog *
cat_new(const char *source)
{
	struct mf_catalog *cat = calloc(1, sizeof(*cat));

	if (cat == NULL)
		return NULL;
	cat->headroom = DEFAULT_HEADROOM;
	cat->multi_gpu_efficiency = DEFAULT_EFFICIENCY;
	cat->inter_node_efficiency = DEFAULT_INTER_NODE;
	cat->cuda_graph_reserve = MF_GRAPH_RESERVE_DEFAULT;
	cat->cuda_graph_format = MF_QTY_BINARY;
	for (int i = 0; i < MF_FIX_COUNT; i++)
		cat->time_factor[i] = 1.0;
	cat->time_factor[MF_FIX_CHECKPOINTING] = DEFAULT_CHECKPOINTING;
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
	struct mf_catalog *cat;
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

/*
 * refs is a plain int in the header; the GCC/Clang __atomic builtins give
 * it the semantics of an atomic counter.  Taking a reference needs no
 * ordering; the release-acquire on the last drop makes every write to the
 * snapshot visible to the thread that frees it.
 */
struct mf_catalog *
mf_cat_ref(struct mf_catalog *cat)
{
	if (cat != NULL)
		__atomic_add_fetch(&cat->refs, 1, __ATOMIC_RELAXED);
	return cat;
}

void
mf_cat_unref(struct mf_catalog *cat)
{
	if (cat != NULL &&
	    __atomic_sub_fetch(&cat->refs, 1, __ATOMIC_ACQ_REL) == 0)
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
