#include "manifest.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "fix.h"
#include "internal.h"

/* Path buffers: deep enough for spec.workload.lora.targets and a prefix. */
#define PATHMAX 128

struct reader {
	const char *base; /* path of the spec mapping */
	const struct mf_models *models;
	struct mf_job *job;
	struct mf_error *err;
};

/* The member key of map, with its full path written to buf. */
static const struct mf_node *
member(const struct mf_node *map, const char *parent, const char *key,
    char *buf)
{
	mf_path(buf, PATHMAX, parent, key);
	return mf_node_get(map, key);
}

static enum mf_rc
read_gpu(struct reader *r, const struct mf_node *gpu, const char *path)
{
	static const char *const known[] = { "minMemory", "count", NULL };
	const struct mf_node *n;
	char p[PATHMAX];
	enum mf_rc rc;

	rc = mf_node_map(gpu, path, known, r->err);
	if (rc == MF_OK && (n = member(gpu, path, "minMemory", p)) != NULL)
		rc = mf_node_bytes(n, p, &r->job->min_memory,
		    &r->job->min_memory_format, r->err);
	if (rc == MF_OK && (n = member(gpu, path, "count", p)) != NULL) {
		rc = mf_node_int(n, p, 1, MF_JOB_MAX_GPUS, &r->job->count,
		    r->err);
		r->job->count_given = 1;
	}
	return rc;
}

static enum mf_rc
read_resources(struct reader *r, const struct mf_node *res, const char *path)
{
	static const char *const known[] = { "gpu", NULL };
	const struct mf_node *n;
	char p[PATHMAX];
	enum mf_rc rc;

	rc = mf_node_map(res, path, known, r->err);
	if (rc == MF_OK && (n = member(res, path, "gpu", p)) != NULL)
		rc = read_gpu(r, n, p);
	return rc;
}

static enum mf_rc
read_model(struct reader *r, const struct mf_node *model, const char *path)
{
	static const char *const known[] = { "name", "config", "configUrl",
		NULL };
	const struct mf_node *n;
	struct mf_job *job = r->job;
	const struct mf_model *shipped;
	char p[PATHMAX];
	enum mf_rc rc;

	rc = mf_node_map(model, path, known, r->err);
	if (rc != MF_OK)
		return rc;
	if (model->len != 1)
		return mf_error_set(r->err, MF_EINVAL, path, model->line,
		    model->column,
		    "give exactly one of name, config, configUrl");
	if ((n = member(model, path, "config", p)) != NULL) {
		job->model_source = MF_MODEL_INLINE;
		return mf_model_read(n, p, &job->model, r->err);
	}
	if ((n = member(model, path, "configUrl", p)) != NULL) {
		job->model_source = MF_MODEL_URL;
		return mf_node_str(n, p, &job->config_url, r->err);
	}
	n = member(model, path, "name", p);
	rc = mf_node_str(n, p, &job->model_name, r->err);
	if (rc != MF_OK)
		return rc;
	shipped = r->models ? mf_models_find(r->models, job->model_name) : NULL;
	if (shipped == NULL)
		return mf_error_set(r->err, MF_EINVAL, p, n->line, n->column,
		    "'%.80s' is not a known model: GET /v1/models lists the models served, the shipped ones and those of the -m directories",
		    job->model_name);
	job->model_source = MF_MODEL_NAMED;
	job->model = *shipped;
	return MF_OK;
}

static enum mf_rc
read_lora(struct reader *r, const struct mf_node *lora, const char *path)
{
	static const char *const known[] = { "rank", "targets", NULL };
	static const char *const targets[] = { "all-linear", "attention",
		NULL };
	struct mf_workload *w = &r->job->work;
	const struct mf_node *n;
	char p[PATHMAX];
	enum mf_rc rc;
	int t;

	rc = mf_node_map(lora, path, known, r->err);
	if (rc == MF_OK && (n = member(lora, path, "rank", p)) != NULL)
		rc = mf_node_int(n, p, 1, MF_JOB_MAX_RANK, &w->lora_rank,
		    r->err);
	if (rc == MF_OK && (n = member(lora, path, "targets", p)) != NULL) {
		rc = mf_node_enum(n, p, targets, &t, r->err);
		w->lora_targets = (enum mf_lora_targets)t;
	}
	return rc;
}

static enum mf_rc
read_sharding(struct reader *r, const struct mf_node *sh, const char *path)
{
	static const char *const known[] = { "gpus", NULL };
	const struct mf_node *n;
	char p[PATHMAX];
	enum mf_rc rc;

	rc = mf_node_map(sh, path, known, r->err);
	if (rc != MF_OK)
		return rc;
	n = member(sh, path, "gpus", p);
	if (n == NULL)
		return mf_error_set(r->err, MF_EINVAL, p, sh->line, sh->column,
		    "is required");
	return mf_node_int(n, p, 1, MF_JOB_MAX_GPUS, &r->job->work.shard_gpus,
	    r->err);
}

/* An enumerated workload field: key, its names, where it lands, and the
 * enum value of the first name. */
struct enum_field {
	const char *key;
	const char *const *names;
	size_t offset;
	int base;
};

static const char *const kinds[] = { "training", "inference", NULL };
static const char *const methods[] = { "full", "lora", "qlora", NULL };
/* In the order of enum mf_precision. */
static const char *const precisions[] = { "bf16", "fp16", "fp32", "bf16-mixed",
	"bf16-true", "fp16-mixed", NULL };
static const char *const optimizers[] = { "adamw", "adam8bit", "sgd", NULL };
static const char *const attentions[] = { "sdpa", "flash", "eager", NULL };
static const char *const kvtypes[] = { "bf16", "fp16", "fp8", NULL };
static const char *const wtypes[] = { "bf16", "fp16", "fp8", "int8", "int4",
	NULL };
static const char *const servers[] = { "none", "vllm", NULL };

#define WOFF(f) offsetof(struct mf_workload, f)
static const struct enum_field enum_fields[] = {
	{ "kind", kinds, WOFF(kind), 0 },
	{ "method", methods, WOFF(method), 0 },
	{ "precision", precisions, WOFF(precision), 0 },
	{ "optimizer", optimizers, WOFF(optimizer), 0 },
	{ "attention", attentions, WOFF(attention), 0 },
	{ "kvCacheDtype", kvtypes, WOFF(kv_dtype), 0 },
	{ "weightsDtype", wtypes, WOFF(weights_dtype), MF_WD_BF16 },
	{ "server", servers, WOFF(server), 0 },
};

const char *
mf_workload_enum_name(const char *key, int v)
{
	for (size_t i = 0; i < sizeof(enum_fields) / sizeof(enum_fields[0]);
	     i++) {
		const struct enum_field *f = &enum_fields[i];
		int n = 0;

		if (strcmp(f->key, key) != 0)
			continue;
		while (f->names[n] != NULL)
			n++;
		v -= f->base;
		return v >= 0 && v < n ? f->names[v] : NULL;
	}
	return NULL;
}

struct int_field {
	const char *key;
	int64_t max;
	size_t offset;
};

static const struct int_field int_fields[] = {
	{ "sequenceLength", MF_JOB_MAX_SEQ, WOFF(seq_len) },
	{ "microBatch", MF_JOB_MAX_BATCH, WOFF(micro_batch) },
	{ "concurrency", MF_JOB_MAX_CONCURRENCY, WOFF(concurrency) },
	{ "contextLength", MF_JOB_MAX_CONTEXT, WOFF(context_len) },
	{ "groupSize", MF_JOB_MAX_GROUP, WOFF(group_size) },
	{ "maxNumBatchedTokens", MF_JOB_MAX_CONTEXT, WOFF(batched_tokens) },
	{ "blockSize", MF_JOB_MAX_BLOCK, WOFF(block_size) },
};

/*
 * gradientCheckpointing (design 19): false, true (every layer, whole), op
 * (per-op selective) or a whole number N (every Nth layer, whole).
 */
static enum mf_rc
read_checkpointing(const struct mf_node *n, const char *path,
    struct mf_workload *w, struct mf_error *err)
{
	if (n->type == MF_NODE_BOOL) {
		w->ckpt_every = 1;
		return mf_node_bool(n, path, &w->checkpointing, err);
	}
	if (n->type == MF_NODE_STR && strcmp(n->text, "op") == 0) {
		w->checkpointing = MF_CKPT_OP;
		return MF_OK;
	}
	if (n->type == MF_NODE_NUM) {
		w->checkpointing = MF_CKPT_FULL;
		return mf_node_int(n, path, 1, MF_JOB_MAX_LAYERS,
		    &w->ckpt_every, err);
	}
	return mf_error_set(err, MF_EINVAL, path, n->line, n->column,
	    "'%.40s' is not one of false, true, op or a whole number of "
	    "layers N (every Nth layer)",
	    n->text != NULL ? n->text : "");
}

static enum mf_rc
read_workload_scalars(struct reader *r, const struct mf_node *wl,
    const char *path)
{
	char *w = (char *)&r->job->work;
	const struct mf_node *n;
	char p[PATHMAX];
	enum mf_rc rc = MF_OK;
	int v;

	for (size_t i = 0;
	     rc == MF_OK && i < sizeof(enum_fields) / sizeof(enum_fields[0]);
	     i++) {
		n = member(wl, path, enum_fields[i].key, p);
		if (n == NULL)
			continue;
		rc = mf_node_enum(n, p, enum_fields[i].names, &v, r->err);
		v += enum_fields[i].base;
		/* Every enum field of struct mf_workload is an int-sized enum.
		 */
		if (rc == MF_OK)
			memcpy(w + enum_fields[i].offset, &v, sizeof(v));
	}
	for (size_t i = 0;
	     rc == MF_OK && i < sizeof(int_fields) / sizeof(int_fields[0]);
	     i++) {
		n = member(wl, path, int_fields[i].key, p);
		if (n != NULL)
			rc = mf_node_int(n, p, 1, int_fields[i].max,
			    (int64_t *)(void *)(w + int_fields[i].offset),
			    r->err);
	}
	if (rc == MF_OK &&
	    (n = member(wl, path, "gradientCheckpointing", p)) != NULL)
		rc = read_checkpointing(n, p, &r->job->work, r->err);
	if (rc == MF_OK &&
	    (n = member(wl, path, "gpuMemoryUtilization", p)) != NULL)
		rc = mf_node_double(n, p, 0.01, 1.0, &r->job->work.gpu_util,
		    r->err);
	return rc;
}

static enum mf_rc
read_parallelism(struct reader *r, const struct mf_node *par, const char *path)
{
	static const char *const known[] = { "tensor", "pipeline", "expert",
		NULL };
	int64_t *dst[] = { &r->job->work.tensor, &r->job->work.pipeline,
		&r->job->work.expert };
	const struct mf_node *n;
	char p[PATHMAX];
	enum mf_rc rc;

	rc = mf_node_map(par, path, known, r->err);
	for (size_t i = 0; rc == MF_OK && known[i] != NULL; i++)
		if ((n = member(par, path, known[i], p)) != NULL)
			rc = mf_node_int(n, p, 1, MF_JOB_MAX_GPUS, dst[i],
			    r->err);
	return rc;
}

static int
inference_only(const struct mf_workload *w)
{
	return w->kind == MF_INFERENCE;
}

static int
int4_only(const struct mf_workload *w)
{
	return w->weights_dtype == MF_WD_INT4;
}

static int
vllm_only(const struct mf_workload *w)
{
	return w->server == MF_SERVER_VLLM;
}

/*
 * Fields that only some workloads take: serving fields need inference,
 * the engine's need server vllm, groupSize needs int4 weights.  A field
 * that would be ignored is an error, as a typo is.
 */
static enum mf_rc
check_serving(struct reader *r, const struct mf_node *wl, const char *path)
{
	static const struct {
		const char *key, *needs;
		int (*holds)(const struct mf_workload *);
	} rules[] = {
		{ "weightsDtype", "kind: inference", inference_only },
		{ "server", "kind: inference", inference_only },
		{ "groupSize", "weightsDtype: int4", int4_only },
		{ "gpuMemoryUtilization", "server: vllm", vllm_only },
		{ "maxNumBatchedTokens", "server: vllm", vllm_only },
		{ "blockSize", "server: vllm", vllm_only },
	};
	const struct mf_node *n;
	char p[PATHMAX];

	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		n = member(wl, path, rules[i].key, p);
		if (n != NULL && !rules[i].holds(&r->job->work))
			return mf_error_set(r->err, MF_EINVAL, p, n->line,
			    n->column, "applies only with %s", rules[i].needs);
	}
	return MF_OK;
}

static enum mf_rc
read_workload(struct reader *r, const struct mf_node *wl, const char *path)
{
	static const char *const known[] = { "kind", "method", "sequenceLength",
		"microBatch", "precision", "optimizer", "gradientCheckpointing",
		"attention", "lora", "sharding", "concurrency", "contextLength",
		"kvCacheDtype", "weightsDtype", "groupSize", "server",
		"gpuMemoryUtilization", "maxNumBatchedTokens", "blockSize",
		"parallelism", NULL };
	const struct mf_node *n;
	char p[PATHMAX];
	enum mf_rc rc;

	rc = mf_node_map(wl, path, known, r->err);
	if (rc == MF_OK)
		rc = read_workload_scalars(r, wl, path);
	if (rc == MF_OK && (n = member(wl, path, "lora", p)) != NULL)
		rc = read_lora(r, n, p);
	if (rc == MF_OK && (n = member(wl, path, "sharding", p)) != NULL)
		rc = read_sharding(r, n, p);
	if (rc == MF_OK && (n = member(wl, path, "parallelism", p)) != NULL)
		rc = read_parallelism(r, n, p);
	if (rc == MF_OK)
		rc = check_serving(r, wl, path);
	return rc;
}

static enum mf_rc
read_money(struct reader *r, const struct mf_node *map, const char *path,
    const char *key, double min, double max, double *out)
{
	const struct mf_node *n;
	char p[PATHMAX];

	n = member(map, path, key, p);
	return n == NULL ? MF_OK : mf_node_double(n, p, min, max, out, r->err);
}

static enum mf_rc
read_duration(struct reader *r, const struct mf_node *d, const char *path)
{
	static const char *const known[] = { "referenceHours", NULL };
	enum mf_rc rc;

	rc = mf_node_map(d, path, known, r->err);
	if (rc == MF_OK)
		rc = read_money(r, d, path, "referenceHours", 1e-6,
		    MF_JOB_MAX_HOURS, &r->job->reference_hours);
	return rc;
}

static enum mf_rc
read_limits(struct reader *r, const struct mf_node *l, const char *path)
{
	static const char *const known[] = { "maxHourlyPrice", "maxCost",
		"deadlineHours", NULL };
	struct mf_job *job = r->job;
	enum mf_rc rc;

	rc = mf_node_map(l, path, known, r->err);
	if (rc == MF_OK)
		rc = read_money(r, l, path, "maxHourlyPrice", 0,
		    MF_JOB_MAX_MONEY, &job->max_hourly_price);
	if (rc == MF_OK)
		rc = read_money(r, l, path, "maxCost", 0, MF_JOB_MAX_MONEY,
		    &job->max_cost);
	if (rc == MF_OK)
		rc = read_money(r, l, path, "deadlineHours", 1e-6,
		    MF_JOB_MAX_HOURS, &job->deadline_hours);
	return rc;
}

static enum mf_rc
read_fixes(struct reader *r, const struct mf_node *list, const char *path)
{
	const struct mf_node *n;
	char p[PATHMAX], ids[MF_FIX_IDS_MAX];
	size_t i = 0;
	int f;

	if (list->type != MF_NODE_SEQ)
		return mf_error_set(r->err, MF_EINVAL, path, list->line,
		    list->column, "must be a list of fix ids, not %s",
		    mf_node_type_name(list->type));
	for (n = list->child; n != NULL; n = n->next, i++) {
		snprintf(p, sizeof(p), "%s[%zu]", path, i);
		/* A list, a mapping or null has no text to quote: name it. */
		if (n->type == MF_NODE_SEQ || n->type == MF_NODE_MAP ||
		    n->type == MF_NODE_NULL)
			return mf_error_set(r->err, MF_EINVAL, p, n->line,
			    n->column, "is %s, not a fix (%s)",
			    mf_node_type_name(n->type),
			    mf_fix_ids(ids, sizeof(ids)));
		if (n->type != MF_NODE_STR || (f = mf_fix_lookup(n->text)) < 0)
			return mf_error_set(r->err, MF_EINVAL, p, n->line,
			    n->column, "'%.40s' is not a fix (%s)",
			    n->text ? n->text : "",
			    mf_fix_ids(ids, sizeof(ids)));
		r->job->allowed_fixes |= MF_FIXBIT(f);
	}
	return MF_OK;
}

/*
 * The GPUs of a job: a replica of tensor x pipeline GPUs on each of the
 * sharding.gpus FSDP ranks.  A count the job gives must be that product
 * when sharding or parallelism is given, a multiple of the replica's
 * otherwise (its data-parallel ranks).
 */
static enum mf_rc
check_count(struct reader *r, int line, int column)
{
	struct mf_job *job = r->job;
	struct mf_workload *w = &job->work;
	int64_t replica = w->tensor * w->pipeline, want;
	char p[PATHMAX];

	want = replica * w->shard_gpus;
	if (w->shard_gpus == 1 && job->count_given && job->count % replica == 0)
		want = job->count;
	if (want > MF_JOB_MAX_GPUS)
		return mf_error_set(r->err, MF_EINVAL,
		    mf_path(p, sizeof(p), r->base, "workload.parallelism"),
		    line, column,
		    "tensor x pipeline x sharding.gpus is %lld GPUs, more than %d",
		    (long long)want, MF_JOB_MAX_GPUS);
	if (job->count_given && job->count != want && replica == 1)
		return mf_error_set(r->err, MF_EINVAL,
		    mf_path(p, sizeof(p), r->base, "resources.gpu.count"), line,
		    column, "is %lld but workload.sharding.gpus is %lld",
		    (long long)job->count, (long long)w->shard_gpus);
	if (job->count_given && job->count != want)
		return mf_error_set(r->err, MF_EINVAL,
		    mf_path(p, sizeof(p), r->base, "resources.gpu.count"), line,
		    column,
		    "is %lld but the job's parallelism takes %lld GPUs (tensor %lld x pipeline %lld x sharding.gpus %lld)",
		    (long long)job->count, (long long)want,
		    (long long)w->tensor, (long long)w->pipeline,
		    (long long)w->shard_gpus);
	/* Experts spread over the GPUs of a stage: its tensor-parallel
	 * group and data-parallel ranks. */
	if ((want / w->pipeline) % w->expert != 0)
		return mf_error_set(r->err, MF_EINVAL,
		    mf_path(p, sizeof(p), r->base,
		        "workload.parallelism.expert"),
		    line, column,
		    "is %lld, which does not divide the %lld GPUs of a pipeline stage (tensor x data-parallel ranks)",
		    (long long)w->expert, (long long)(want / w->pipeline));
	if (want > 1) {
		job->count = want;
		job->count_given = 1;
	}
	return MF_OK;
}

/* With a model, the lengths its kind needs. */
static enum mf_rc
check_lengths(struct reader *r, int line, int column)
{
	struct mf_job *job = r->job;
	struct mf_workload *w = &job->work;
	char p[PATHMAX];

	if (job->model_source == MF_MODEL_NONE)
		return MF_OK;
	if (w->kind == MF_TRAINING && w->seq_len == 0)
		return mf_error_set(r->err, MF_EINVAL,
		    mf_path(p, sizeof(p), r->base, "workload.sequenceLength"),
		    line, column, "is required for training with a model");
	if (w->kind == MF_INFERENCE && w->context_len == 0)
		return mf_error_set(r->err, MF_EINVAL,
		    mf_path(p, sizeof(p), r->base, "workload.contextLength"),
		    line, column, "is required for inference with a model");
	return MF_OK;
}

/* Cross-field rules that no single field can check; spec may be NULL. */
static enum mf_rc
check_spec(struct reader *r, const struct mf_node *spec)
{
	struct mf_job *job = r->job;
	struct mf_workload *w = &job->work;
	int line = spec != NULL ? spec->line : 0;
	int column = spec != NULL ? spec->column : 0;
	char p[PATHMAX];
	enum mf_rc rc;

	if (job->min_memory == 0 && job->model_source == MF_MODEL_NONE)
		return mf_error_set(r->err, MF_EINVAL,
		    mf_path(p, sizeof(p), r->base, "resources.gpu.minMemory"),
		    line, column, "is required when no model is given");
	if ((job->max_cost >= 0 || job->deadline_hours >= 0) &&
	    job->reference_hours == 0)
		return mf_error_set(r->err, MF_EINVAL,
		    mf_path(p, sizeof(p), r->base, "duration.referenceHours"),
		    line, column,
		    "is required by limits.maxCost and limits.deadlineHours");
	if (w->shard_gpus > 1 &&
	    (w->kind != MF_TRAINING || w->method != MF_FULL))
		return mf_error_set(r->err, MF_EINVAL,
		    mf_path(p, sizeof(p), r->base, "workload.sharding"), line,
		    column, "FSDP sharding applies to full fine-tuning only");
	rc = check_count(r, line, column);
	return rc == MF_OK ? check_lengths(r, line, column) : rc;
}

typedef enum mf_rc (
    *section_fn)(struct reader *, const struct mf_node *, const char *);

enum mf_rc
mf_job_read_spec_floor(const struct mf_node *spec, const char *path,
    const char *name, const struct mf_models *models, int64_t floor,
    int floor_format, struct mf_job *out, struct mf_error *err)
{
	/* The members of a spec and their readers: the one list of them. */
	static const struct {
		const char *key;
		section_fn fn;
	} sections[] = {
		{ "resources", read_resources },
		{ "model", read_model },
		{ "workload", read_workload },
		{ "duration", read_duration },
		{ "limits", read_limits },
		{ "allowedFixes", read_fixes },
	};
	enum { NSECTIONS = sizeof(sections) / sizeof(sections[0]) };
	const char *known[NSECTIONS + 1];
	struct mf_job job = { .name = name,
		.count = 1,
		.max_hourly_price = -1,
		.max_cost = -1,
		.deadline_hours = -1 };
	struct reader r = { path, models, &job, err };
	const struct mf_node *n;
	char p[PATHMAX];
	enum mf_rc rc;

	for (size_t i = 0; i < NSECTIONS; i++)
		known[i] = sections[i].key;
	known[NSECTIONS] = NULL;
	mf_workload_defaults(&job.work);
	job.work.seq_len = 0;
	job.work.context_len = 0;
	rc = spec != NULL ? mf_node_map(spec, path, known, err) : MF_OK;
	/* A section's path is written only when it is there. */
	for (size_t i = 0; rc == MF_OK && i < NSECTIONS; i++)
		if ((n = mf_node_get(spec, sections[i].key)) != NULL)
			rc = sections[i].fn(&r, n,
			    mf_path(p, sizeof(p), path, sections[i].key));
	if (job.min_memory == 0 && floor > 0) {
		job.min_memory = floor;
		job.min_memory_format = floor_format;
	}
	if (rc == MF_OK)
		rc = check_spec(&r, spec);
	if (rc == MF_OK)
		*out = job;
	return rc;
}

enum mf_rc
mf_job_read_spec(const struct mf_node *spec, const char *path, const char *name,
    const struct mf_models *models, struct mf_job *out, struct mf_error *err)
{
	return mf_job_read_spec_floor(spec, path, name, models, 0, 0, out, err);
}

static enum mf_rc
read_header(const struct mf_node *root, const char *path, const char **name,
    struct mf_error *err)
{
	static const char *const known[] = { "apiVersion", "kind", "metadata",
		"spec", NULL };
	static const char *const meta_known[] = { "name", "namespace", "labels",
		"annotations", NULL };
	const char *want[][2] = { { "apiVersion", "memfloor.dev/v1" },
		{ "kind", "Job" } };
	const struct mf_node *n, *meta;
	char p[PATHMAX], m[PATHMAX];
	const char *s;
	enum mf_rc rc;

	rc = mf_node_map(root, path, known, err);
	for (size_t i = 0; rc == MF_OK && i < 2; i++) {
		n = member(root, path, want[i][0], p);
		if (n == NULL)
			return mf_error_set(err, MF_EINVAL, p, root->line,
			    root->column, "is required ('%s')", want[i][1]);
		rc = mf_node_str(n, p, &s, err);
		if (rc == MF_OK && strcmp(s, want[i][1]) != 0)
			return mf_error_set(err, MF_EINVAL, p, n->line,
			    n->column, "'%.40s' is not '%s'", s, want[i][1]);
	}
	if (rc != MF_OK)
		return rc;
	meta = member(root, path, "metadata", m);
	mf_path(p, sizeof(p), m, "name");
	if (meta == NULL)
		return mf_error_set(err, MF_EINVAL, p, root->line, root->column,
		    "is required");
	rc = mf_node_map(meta, m, meta_known, err);
	if (rc != MF_OK)
		return rc;
	n = mf_node_get(meta, "name");
	if (n == NULL)
		return mf_error_set(err, MF_EINVAL, p, meta->line, meta->column,
		    "is required");
	rc = mf_node_str(n, p, name, err);
	if (rc == MF_OK && (n->len == 0 || n->len > 253))
		return mf_error_set(err, MF_EINVAL, p, n->line, n->column,
		    "must be 1 to 253 characters");
	return rc;
}

enum mf_rc
mf_job_read(const struct mf_node *root, const char *path,
    const struct mf_models *models, struct mf_job *job, struct mf_error *err)
{
	const struct mf_node *spec;
	const char *name = NULL;
	char p[PATHMAX];
	enum mf_rc rc;

	rc = read_header(root, path, &name, err);
	if (rc != MF_OK)
		return rc;
	spec = member(root, path, "spec", p);
	if (spec == NULL)
		return mf_error_set(err, MF_EINVAL, p, root->line, root->column,
		    "is required");
	return mf_job_read_spec(spec, p, name, models, job, err);
}
