/*
 * observe.c: an observation's body into a struct mf_observation, each
 * field checked where it is read.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../admission/api.h"
#include "../admission/base/str.h"
#include "../admission/fingerprint/fingerprint.h"
#include "../admission/manifest/manifest.h"
#include "../admission/place/place.h"
#include "observe.h"

#define OBS_MAX_GPUS 65536
/* A speed's range: from what the listing's six decimals still show (a
 * smaller one would be listed as 0) to below 1e15. */
#define SPEED_MIN 1e-6
#define SPEED_MAX 1e15

static const char *const known[] = { "job", "fingerprint", "card", "count",
	"peakReservedBytes", "peakAllocatedBytes", "deviceUsedBytes",
	"tokensPerSecond", "stepSeconds", "tokensPerStep", "source", NULL };

static const char *const sources[] = { "torch", "dcgm", "log" };

static int
is_source(const char *s)
{
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		if (strcmp(sources[i], s) == 0)
			return 1;
	return 0;
}

static enum mf_rc
missing(const char *field, const char *what, struct mf_error *err)
{
	return mf_error_set(err, MF_EINVAL, field, 0, 0, "%s", what);
}

/* Whether name is the product label: GPU Feature Discovery writes the
 * driver's name ("NVIDIA H100 80GB HBM3") with hyphens for spaces. */
static int
same_product(const char *label, const char *name)
{
	for (; *label != '\0' && *name != '\0'; label++, name++)
		if (*label != *name && !(*label == '-' && *name == ' '))
			return 0;
	return *label == *name;
}

/* Whether g is the card the driver or DCGM names name: its
 * nvidia.com/gpu.product label, or its dcgmModelName. */
static int
names_card(const struct mf_gpu *g, const char *name)
{
	if (g->dcgm_model != NULL && strcmp(g->dcgm_model, name) == 0)
		return 1;
	for (size_t k = 0; k < g->nlabels; k++)
		if (strcmp(g->labels[k].key, "nvidia.com/gpu.product") == 0 &&
		    same_product(g->labels[k].value, name))
			return 1;
	return 0;
}

/* The card named by a catalogue name, its nvidia.com/gpu.product or its
 * dcgmModelName. */
static const struct mf_gpu *
find_card(const struct mf_catalog *cat, const char *name)
{
	const struct mf_gpu *g = mf_cat_find(cat, name);

	for (size_t i = 0; g == NULL && i < cat->ngpus; i++)
		if (names_card(&cat->gpus[i], name))
			g = &cat->gpus[i];
	return g;
}

/* The job's fingerprint as its admission on api gives it. */
static enum mf_rc
job_fingerprint(const struct mf_node *n, const struct mf_api *api,
    char hex[MF_FP_HEX], struct mf_error *err)
{
	struct mf_job job;
	enum mf_rc rc;

	rc = mf_job_read(n, "job", api->models, &job, err);
	if (rc != MF_OK)
		return rc;
	if (job.model_source == MF_MODEL_URL)
		return missing("job.spec.model.configUrl",
		    "is not fetched for an observation: name the model or give its config inline, or post the fingerprint its admission answered",
		    err);
	return mf_api_admit_fingerprint(api, &job, hex, err);
}

/* job or fingerprint, one of them. */
static enum mf_rc
read_identity(const struct mf_node *root, const struct mf_api *api,
    struct mf_observation *o, int *named, struct mf_error *err)
{
	const struct mf_node *job = mf_node_get(root, "job");
	const struct mf_node *fp = mf_node_get(root, "fingerprint");
	const char *s = NULL;

	if (job != NULL && fp != NULL)
		return missing("fingerprint",
		    "give job or fingerprint, not both", err);
	if (job != NULL) {
		*named = 0;
		return job_fingerprint(job, api, o->fingerprint, err);
	}
	if (fp == NULL)
		return missing("job",
		    "is required: the Job manifest, or its fingerprint", err);
	if (mf_node_str(fp, "fingerprint", &s, err) != MF_OK)
		return MF_EINVAL;
	if (!mf_fp_valid(s))
		return mf_error_set(err, MF_EINVAL, "fingerprint", fp->line,
		    fp->column, "'%.40s' is not a fingerprint (32 hex digits)",
		    s);
	*named = 1;
	mf_copy(o->fingerprint, sizeof(o->fingerprint), s);
	return MF_OK;
}

static enum mf_rc
read_card(const struct mf_node *root, const struct mf_catalog *cat,
    struct mf_observation *o, const struct mf_gpu **gpu, struct mf_error *err)
{
	const struct mf_node *n = mf_node_get(root, "card");
	const char *s = NULL;

	if (n == NULL)
		return missing("card", "is required: a card of the catalogue",
		    err);
	if (mf_node_str(n, "card", &s, err) != MF_OK)
		return MF_EINVAL;
	if ((*gpu = find_card(cat, s)) == NULL)
		return mf_error_set(err, MF_EINVAL, "card", n->line, n->column,
		    "'%.60s' is no card of the catalogue (by name, nvidia.com/gpu.product or dcgmModelName)",
		    s);
	mf_copy(o->card, sizeof(o->card), (*gpu)->name);
	return MF_OK;
}

/* A byte count of one GPU, at most the card's memory; -1 when absent. */
static enum mf_rc
read_bytes(const struct mf_node *root, const char *key, const struct mf_gpu *g,
    int64_t *out, struct mf_error *err)
{
	const struct mf_node *n = mf_node_get(root, key);

	*out = -1;
	if (n == NULL)
		return MF_OK;
	if (mf_node_int(n, key, 1, INT64_MAX, out, err) != MF_OK)
		return MF_EINVAL;
	if (*out > g->memory)
		return mf_error_set(err, MF_EINVAL, key, n->line, n->column,
		    "%lld bytes is more than a %s has (%lld)", (long long)*out,
		    g->name, (long long)g->memory);
	return MF_OK;
}

static enum mf_rc
read_memory(const struct mf_node *root, const struct mf_gpu *g,
    struct mf_observation *o, struct mf_error *err)
{
	if (read_bytes(root, "peakReservedBytes", g, &o->peak_reserved, err) !=
	        MF_OK ||
	    read_bytes(root, "peakAllocatedBytes", g, &o->peak_allocated,
	        err) != MF_OK ||
	    read_bytes(root, "deviceUsedBytes", g, &o->device_used, err) !=
	        MF_OK)
		return MF_EINVAL;
	if (o->peak_reserved < 0 && o->device_used < 0)
		return missing("peakReservedBytes",
		    "is required (torch.cuda.max_memory_reserved), or deviceUsedBytes",
		    err);
	if (o->peak_allocated >= 0 && o->peak_reserved < 0)
		return missing("peakReservedBytes",
		    "is required with peakAllocatedBytes", err);
	if (o->peak_allocated > o->peak_reserved)
		return missing("peakAllocatedBytes",
		    "is more than peakReservedBytes: the allocator reserves what it allocates",
		    err);
	return MF_OK;
}

static int
speed_in_range(double v)
{
	return v >= SPEED_MIN && v < SPEED_MAX;
}

/* A speed kept: absent (-1) or in range. */
static int
speed_ok(double v)
{
	return v == -1 || speed_in_range(v);
}

/* A speed: in range; -1 when absent. */
static enum mf_rc
read_speed(const struct mf_node *root, const char *key, double *out,
    struct mf_error *err)
{
	const struct mf_node *n = mf_node_get(root, key);

	*out = -1;
	if (n == NULL)
		return MF_OK;
	if (mf_node_double(n, key, -HUGE_VAL, HUGE_VAL, out, err) != MF_OK)
		return MF_EINVAL;
	if (!speed_in_range(*out))
		return mf_error_set(err, MF_EINVAL, key, n->line, n->column,
		    "%g: a speed is from %g to below %g", *out, SPEED_MIN,
		    SPEED_MAX);
	return MF_OK;
}

static enum mf_rc
read_speeds(const struct mf_node *root, struct mf_observation *o,
    struct mf_error *err)
{
	if (read_speed(root, "tokensPerSecond", &o->tokens_per_second, err) !=
	        MF_OK ||
	    read_speed(root, "stepSeconds", &o->step_seconds, err) != MF_OK ||
	    read_speed(root, "tokensPerStep", &o->tokens_per_step, err) !=
	        MF_OK)
		return MF_EINVAL;
	if (o->step_seconds < 0 && o->tokens_per_step >= 0)
		return missing("stepSeconds", "is required with tokensPerStep",
		    err);
	if (o->tokens_per_step < 0 && o->step_seconds >= 0)
		return missing("tokensPerStep", "is required with stepSeconds",
		    err);
	return MF_OK;
}

static enum mf_rc
read_rest(const struct mf_node *root, struct mf_observation *o,
    struct mf_error *err)
{
	const struct mf_node *n = mf_node_get(root, "count");
	const char *s = NULL;

	if (n == NULL)
		return missing("count", "is required: the GPUs the run had",
		    err);
	if (mf_node_int(n, "count", 1, OBS_MAX_GPUS, &o->count, err) != MF_OK)
		return MF_EINVAL;
	if ((n = mf_node_get(root, "source")) == NULL)
		return missing("source", "is required: torch, dcgm or log",
		    err);
	if (mf_node_str(n, "source", &s, err) != MF_OK)
		return MF_EINVAL;
	if (!is_source(s))
		return mf_error_set(err, MF_EINVAL, "source", n->line,
		    n->column, "'%.40s' is not a source (torch, dcgm or log)",
		    s);
	mf_copy(o->source, sizeof(o->source), s);
	return MF_OK;
}

/* A memory figure of one GPU: absent (-1), or from 1 to the card's. */
static enum mf_rc
check_bytes(const char *key, int64_t v, const struct mf_gpu *g,
    struct mf_error *err)
{
	if (v == -1 || (v >= 1 && v <= g->memory))
		return MF_OK;
	return mf_error_set(err, MF_EINVAL, key, 0, 0,
	    "%lld bytes is not a figure of a %s (1 to %lld)", (long long)v,
	    g->name, (long long)g->memory);
}

static enum mf_rc
check_memory(const struct mf_observation *o, const struct mf_gpu *g,
    struct mf_error *err)
{
	if (check_bytes("peakReservedBytes", o->peak_reserved, g, err) ||
	    check_bytes("peakAllocatedBytes", o->peak_allocated, g, err) ||
	    check_bytes("deviceUsedBytes", o->device_used, g, err))
		return MF_EINVAL;
	if (o->peak_reserved < 0 && o->device_used < 0)
		return missing("peakReservedBytes",
		    "is required (torch.cuda.max_memory_reserved), or deviceUsedBytes",
		    err);
	if (o->peak_allocated > o->peak_reserved)
		return missing("peakAllocatedBytes",
		    "is more than peakReservedBytes: the allocator reserves what it allocates",
		    err);
	return MF_OK;
}

enum mf_rc
mf_obs_check(const struct mf_catalog *cat, struct mf_observation *o,
    struct mf_error *err)
{
	const struct mf_gpu *g;

	if (!mf_fp_valid(o->fingerprint))
		return missing("fingerprint", "is not 32 hex digits", err);
	if ((g = find_card(cat, o->card)) == NULL)
		return mf_error_set(err, MF_EINVAL, "card", 0, 0,
		    "'%.60s' is no card of the catalogue (by name, nvidia.com/gpu.product or dcgmModelName)",
		    o->card);
	if (o->count < 1 || o->count > OBS_MAX_GPUS)
		return missing("count", "is not from 1 to 65536", err);
	if (check_memory(o, g, err) != MF_OK)
		return MF_EINVAL;
	if (!speed_ok(o->tokens_per_second) || !speed_ok(o->step_seconds) ||
	    !speed_ok(o->tokens_per_step) ||
	    (o->step_seconds < 0) != (o->tokens_per_step < 0))
		return mf_error_set(err, MF_EINVAL, "tokensPerSecond", 0, 0,
		    "speeds are from %g to below %g, and stepSeconds comes with tokensPerStep",
		    SPEED_MIN, SPEED_MAX);
	if (!is_source(o->source))
		return missing("source", "is not torch, dcgm or log", err);
	mf_copy(o->card, sizeof(o->card), g->name);
	return MF_OK;
}

enum mf_rc
mf_obs_read(const char *body, size_t len, enum mf_doc_format fmt,
    const struct mf_api *api, struct mf_observation *out, int *named,
    struct mf_error *err)
{
	struct mf_observation o = { .id = 0 };
	const struct mf_gpu *g = NULL;
	struct mf_doc *doc = NULL;
	const struct mf_node *root;
	int by_name = 0;
	enum mf_rc rc;

	rc = mf_doc_parse(body, len, fmt, &doc, err);
	if (rc != MF_OK)
		return rc;
	root = mf_doc_root(doc);
	if (root == NULL)
		rc = missing(NULL, "the body is empty", err);
	else
		rc = mf_node_map(root, NULL, known, err);
	if (rc == MF_OK)
		rc = read_card(root, api->cat, &o, &g, err);
	if (rc == MF_OK)
		rc = read_rest(root, &o, err);
	if (rc == MF_OK)
		rc = read_memory(root, g, &o, err);
	if (rc == MF_OK)
		rc = read_speeds(root, &o, err);
	if (rc == MF_OK)
		rc = read_identity(root, api, &o, &by_name, err);
	mf_doc_free(doc);
	if (rc != MF_OK)
		return rc;
	*out = o;
	*named = by_name;
	return MF_OK;
}
