/*
 * manifest.c: the Job manifest read through fields.h's table, and the
 * rules across fields that no row states: a floor or a model, the
 * referenceHours that limits need, the count a job's parallelism takes,
 * the layouts activation offloading is modelled in, the lengths a model
 * needs, a request within its context, vLLM's batch against its
 * sequences.
 */
#include "manifest.h"

#include <assert.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../fields/fields.h"
#include "../base/internal.h"

/* Path buffers: deep enough for spec.workload.lora.targets and a prefix. */
#define PATHMAX 128

struct reader {
	const struct mf_models *models;
	struct mf_job *job;
};

/* Whether the workload under root, read as the document row doc, states
 * sharding: a framework's distributed recipe then (framework.c). */
static int
states_sharding(const struct mf_field *doc, const struct mf_node *root)
{
	const struct mf_node *spec =
	    doc == &mf_fields_spec ? root : mf_node_get(root, "spec");

	return mf_node_get(mf_node_get(spec, "workload"), "sharding") != NULL;
}

/* serverVersion, whose form the reader has checked: its number, and a
 * release memfloor has an accounting of (design 22). */
static enum mf_rc
server_version(struct mf_fread *fr, const struct mf_node *n, const char *path,
    struct mf_workload *w)
{
	int64_t part[3] = { 0, 0, 0 };
	int64_t v;
	int i = 0;

	for (size_t k = 0; k < n->len; k++) {
		if (n->text[k] == '.') {
			i++;
			assert(i < 3);
			continue;
		}
		part[i] = part[i] * 10 + (n->text[k] - '0');
	}
	v = MF_VLLM_VERSION(part[0], part[1], part[2]);
	if (!mf_vllm_release_known(v) || v == 0)
		return mf_error_set(fr->err, MF_EINVAL, path, n->line,
		    n->column,
		    "'%.16s' is older than the vLLM releases memfloor models (" MF_VLLM_OLDEST_TEXT
		    " and later)",
		    n->text);
	w->server_version = v;
	return MF_OK;
}

/* The rows job_fields.c hands back: the model, in one of its three ways. */
static enum mf_rc
hook(struct mf_fread *fr, const struct mf_field *f, const struct mf_node *n,
    const char *path)
{
	struct reader *r = fr->ctx;
	struct mf_job *job = r->job;
	const struct mf_model *shipped;

	if (strcmp(f->key, "config") == 0) {
		job->model_source = MF_MODEL_INLINE;
		return mf_model_read(n, path, &job->model, fr->err);
	}
	if (strcmp(f->key, "framework") == 0)
		return mf_framework_apply(job->framework,
		    job->framework_sharded, fr, n, path);
	if (strcmp(f->key, "configUrl") == 0) {
		job->model_source = MF_MODEL_URL;
		return MF_OK;
	}
	if (strcmp(f->key, "serverVersion") == 0)
		return server_version(fr, n, path, &job->work);
	shipped = r->models ? mf_models_find(r->models, job->model_name) : NULL;
	if (shipped == NULL)
		return mf_error_set(fr->err, MF_EINVAL, path, n->line,
		    n->column,
		    "'%.80s' is not a known model: GET /v1/models lists the models served (shipped and memfloord -m DIR); give its config.json as spec.model.config, or its URL as spec.model.configUrl (a host memfloord --model-host allows)",
		    job->model_name);
	job->model_source = MF_MODEL_NAMED;
	job->model = *shipped;
	return MF_OK;
}

/*
 * A count the job gives that its layout does not take, refused at path,
 * line and column with the rule applied: under FSDP the product of the
 * replica and sharding.gpus, else a multiple of the replica.
 */
static enum mf_rc
count_refused(const struct mf_job *job, const char *path, int line, int column,
    struct mf_error *err)
{
	const struct mf_workload *w = &job->work;
	long long count = job->count, tensor = w->tensor,
	          pipeline = w->pipeline, shard = w->shard_gpus;

	if (shard == 1)
		return mf_error_set(err, MF_EINVAL, path, line, column,
		    "is %lld, not a multiple of the %lld GPUs one replica of the job's parallelism takes (tensor %lld x pipeline %lld): a count is a whole number of replicas",
		    count, tensor * pipeline, tensor, pipeline);
	if (tensor * pipeline == 1)
		return mf_error_set(err, MF_EINVAL, path, line, column,
		    "is %lld but workload.sharding.gpus is %lld", count, shard);
	return mf_error_set(err, MF_EINVAL, path, line, column,
	    "is %lld but the job's parallelism takes %lld GPUs (tensor %lld x pipeline %lld x sharding.gpus %lld)",
	    count, tensor * pipeline * shard, tensor, pipeline, shard);
}

int64_t
mf_job_gpus(const struct mf_workload *w, int64_t count)
{
	int64_t replica = w->tensor * w->pipeline;

	if (w->shard_gpus == 1 && count > 0 && count % replica == 0)
		return count;
	return replica * w->shard_gpus;
}

/*
 * The GPUs of a job: a replica of tensor x pipeline GPUs on each of the
 * sharding.gpus FSDP ranks.  A count the job gives must be that product
 * when sharding is given, a multiple of the replica's otherwise (its
 * data-parallel ranks).  n is the count where it is written, or NULL.
 */
static enum mf_rc
check_count(struct mf_job *job, const char *base, const struct mf_node *n,
    int line, int column, struct mf_error *err)
{
	struct mf_workload *w = &job->work;
	int64_t want = mf_job_gpus(w, job->count_given ? job->count : 0);
	char p[PATHMAX];

	if (want > MF_JOB_MAX_GPUS)
		return mf_error_set(err, MF_EINVAL,
		    mf_path(p, sizeof(p), base, "workload.parallelism"), line,
		    column,
		    "tensor x pipeline x sharding.gpus is %lld GPUs, more than %d",
		    (long long)want, MF_JOB_MAX_GPUS);
	if (job->count_given && job->count != want)
		return count_refused(job,
		    mf_path(p, sizeof(p), base, "resources.gpu.count"),
		    n != NULL ? n->line : line, n != NULL ? n->column : column,
		    err);
	/* Experts spread over the GPUs of a stage: its tensor-parallel
	 * group and data-parallel ranks. */
	if ((want / w->pipeline) % w->expert != 0)
		return mf_error_set(err, MF_EINVAL,
		    mf_path(p, sizeof(p), base, "workload.parallelism.expert"),
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
check_lengths(struct mf_job *job, const char *base, int line, int column,
    struct mf_error *err)
{
	struct mf_workload *w = &job->work;
	char p[PATHMAX];

	if (job->model_source == MF_MODEL_NONE)
		return MF_OK;
	if (w->kind == MF_TRAINING && w->seq_len == 0)
		return mf_error_set(err, MF_EINVAL,
		    mf_path(p, sizeof(p), base, "workload.sequenceLength"),
		    line, column, "is required for training with a model");
	if (w->kind == MF_INFERENCE && w->context_len == 0)
		return mf_error_set(err, MF_EINVAL,
		    mf_path(p, sizeof(p), base, "workload.contextLength"), line,
		    column, "is required for inference with a model");
	return MF_OK;
}

/* The error why at workload.name, where it is written under wl (the
 * spec's workload, or NULL). */
static enum mf_rc
refuse_at(const char *base, const struct mf_node *wl, const char *name,
    const char *why, struct mf_error *err)
{
	const struct mf_node *n = mf_node_get(wl, name);
	char p[PATHMAX], field[64];

	snprintf(field, sizeof(field), "workload.%s", name);
	return mf_error_set(err, MF_EINVAL, mf_path(p, sizeof(p), base, field),
	    n != NULL ? n->line : 0, n != NULL ? n->column : 0, "%s", why);
}

/*
 * A request's prompt and output within contextLength, the tokens a
 * sequence's KV cache is sized for, as the time of its decode steps
 * assumes: vLLM's OpenAI server refuses a request whose prompt and
 * max_tokens together pass max_model_len
 * (vllm/entrypoints/openai/serving_engine.py,
 * _validate_prompt_and_tokenize).  A prompt not given is what the
 * context leaves after the output (time/work.c).  The error is at
 * promptTokens, or at outputTokens where the output alone fills the
 * context.
 */
static enum mf_rc
check_request(const struct mf_job *job, const char *base,
    const struct mf_node *wl, struct mf_error *err)
{
	const struct mf_workload *w = &job->work;
	long long ctx = w->context_len, prompt = w->prompt_tokens,
	          output = w->output_tokens;
	char why[320];

	if (w->kind != MF_INFERENCE || ctx == 0)
		return MF_OK;
	if (output >= ctx && prompt < ctx) {
		snprintf(why, sizeof(why),
		    "%lld tokens leave no room for a prompt in contextLength %lld, the tokens a sequence's KV cache holds",
		    output, ctx);
		return refuse_at(base, wl, "outputTokens", why, err);
	}
	if (prompt + output <= ctx)
		return MF_OK;
	if (output == 0)
		snprintf(why, sizeof(why),
		    "%lld tokens are more than contextLength %lld, the tokens a sequence's KV cache holds",
		    prompt, ctx);
	else
		snprintf(why, sizeof(why),
		    "%lld tokens and outputTokens %lld make a request of %lld tokens, more than contextLength %lld, the tokens a sequence's KV cache holds (vLLM refuses such a request)",
		    prompt, output, prompt + output, ctx);
	return refuse_at(base, wl, "promptTokens", why, err);
}

/*
 * vLLM's batch of one step against its sequences: vLLM refuses to start
 * with fewer batched tokens than sequences, one token each
 * ("max_num_batched_tokens (16) must be greater than or equal to
 * max_num_seqs (256)": vllm/config/scheduler.py,
 * SchedulerConfig.verify_max_model_len).  Where the manifest states both,
 * the error is at maxNumBatchedTokens.  Where it states maxNumSeqs alone,
 * the tokens are vLLM's default for the card, which vLLM does not raise
 * to meet them (mf_vllm_starts): above the default of every card it is
 * at maxNumSeqs; above some cards' only, those cards are not considered
 * (mf_place).
 */
static enum mf_rc
check_batch(const struct mf_job *job, const char *base,
    const struct mf_node *wl, struct mf_error *err)
{
	const struct mf_workload *w = &job->work;
	int64_t most = 0;
	char why[320];

	if (w->batched_tokens > 0 && w->max_num_seqs > 0 &&
	    w->batched_tokens < w->max_num_seqs) {
		snprintf(why, sizeof(why),
		    "%lld tokens are fewer than maxNumSeqs %lld: vLLM refuses to start with fewer tokens a step than sequences",
		    (long long)w->batched_tokens, (long long)w->max_num_seqs);
		return refuse_at(base, wl, "maxNumBatchedTokens", why, err);
	}
	for (int t = 0; t < MF_VLLM_TIERS; t++) {
		if (mf_vllm_starts(w, t))
			return MF_OK;
		if (mf_vllm_batched_tokens(w, t) > most)
			most = mf_vllm_batched_tokens(w, t);
	}
	snprintf(why, sizeof(why),
	    "%lld sequences are more than %lld, the most tokens a step vLLM takes by default for this job on any card (maxNumBatchedTokens), and vLLM refuses to start with fewer tokens a step than sequences: give maxNumBatchedTokens, at least %lld",
	    (long long)w->max_num_seqs, (long long)most,
	    (long long)w->max_num_seqs);
	return refuse_at(base, wl, "maxNumSeqs", why, err);
}

/* Activation offloading and sharding where the estimate does not model
 * them (mf_est_offload_refused, mf_est_shard_refused), the error at the
 * field where it is written. */
static enum mf_rc
check_offload(const struct mf_job *job, const char *base,
    const struct mf_node *wl, struct mf_error *err)
{
	char why[320];

	if (mf_est_offload_refused(&job->work, why, sizeof(why)))
		return refuse_at(base, wl, "activationOffload", why, err);
	if (mf_est_shard_refused(&job->work, why, sizeof(why)))
		return refuse_at(base, wl, "sharding", why, err);
	return MF_OK;
}

/* Where the lengths and LoRA's targets are written, for the errors that
 * need the model (mf_job_check_model). */
static void
note_lengths(struct mf_job *job, const struct mf_node *wl)
{
	const struct mf_node *n;

	if ((n = mf_node_get(wl, "sequenceLength")) != NULL) {
		job->seq_line = n->line;
		job->seq_column = n->column;
	}
	if ((n = mf_node_get(wl, "contextLength")) != NULL) {
		job->context_line = n->line;
		job->context_column = n->column;
	}
	if ((n = mf_node_get(mf_node_get(wl, "lora"), "targets")) != NULL) {
		job->targets_line = n->line;
		job->targets_column = n->column;
	}
	if ((n = mf_node_get(wl, "compile")) != NULL) {
		job->compile_line = n->line;
		job->compile_column = n->column;
	}
	if ((n = mf_node_get(wl, "float8")) != NULL) {
		job->float8_line = n->line;
		job->float8_column = n->column;
	}
}

/* The node at path ("lora.dtype") under the mapping n, or NULL. */
static const struct mf_node *
node_at(const struct mf_node *n, const char *path)
{
	char key[PATHMAX];
	const char *dot;

	while (n != NULL && (dot = strchr(path, '.')) != NULL) {
		mf_copy(key, sizeof(key), path);
		if ((size_t)(dot - path) < sizeof(key))
			key[dot - path] = '\0';
		n = mf_node_get(n, key);
		path = dot + 1;
	}
	return mf_node_get(n, path);
}

/*
 * The fields the framework supplied that the manifest does not state
 * (the answer's recipe.fromFramework).  One the manifest made
 * inapplicable (litgpt's lossUpcast under loss: chunked) holds its
 * default again, as it would without the framework: it is neither in the
 * job nor in its fingerprint.
 */
static void
note_framework(struct mf_job *job, const struct mf_node *wl)
{
	const struct mf_field *rows = mf_fields_at(&mf_fields_spec, "workload");
	void *dst[MF_FB_COUNT] = { NULL };
	const struct mf_field *row;
	const char *f;

	dst[MF_FB_JOB] = job;
	dst[MF_FB_WORK] = &job->work;
	job->from_framework = 0;
	for (int i = 0; job->framework_given &&
	     (f = mf_framework_field(job->framework, job->work.method,
	          job->framework_sharded, i)) != NULL;
	     i++) {
		assert(i < 32);
		if (node_at(wl, f) != NULL)
			continue;
		row = mf_fields_at(rows, f);
		assert(row != NULL && "a framework's field is a workload row");
		if (row == NULL || mf_fields_applies(row, dst))
			job->from_framework |= 1u << i;
		else
			mf_fields_default(row, dst);
	}
}

/* A workload field the estimate refuses for the workload, the model aside
 * (refused: mf_est_compile_refused, mf_est_float8_refused;
 * mf_job_check_model asks the rest), the error at the field where it is
 * written. */
static enum mf_rc
check_refused(const struct mf_job *job, const char *base,
    const struct mf_node *wl, const char *field,
    int (*refused)(const struct mf_model *, const struct mf_workload *, char *,
        size_t),
    struct mf_error *err)
{
	char why[768];

	if (!refused(NULL, &job->work, why, sizeof(why)))
		return MF_OK;
	return refuse_at(base, wl, field, why, err);
}

/* optimizerInBackward with what the estimate models it with
 * (mf_est_oib_refused), the error at the field where it is written. */
static enum mf_rc
check_oib(const struct mf_job *job, const char *base, const struct mf_node *wl,
    struct mf_error *err)
{
	char why[512];

	if (job->work.kind != MF_TRAINING ||
	    !mf_est_oib_refused(&job->work, job->count_given ? job->count : 1,
	        why, sizeof(why)))
		return MF_OK;
	return refuse_at(base, wl, "optimizerInBackward", why, err);
}

/*
 * The losses not modelled (mf_est_loss_refused, before the model is
 * known; the standard loss's at lossUpcast), and a chunked loss in more pieces
 * than a sequence has tokens.  Where the loss is written is kept for
 * mf_job_check_model's rule that needs the model.
 */
static enum mf_rc
check_loss(struct mf_job *job, const char *base, const struct mf_node *wl,
    struct mf_error *err)
{
	const struct mf_workload *w = &job->work;
	const struct mf_node *n = mf_node_get(wl, "loss");
	int line = n != NULL ? n->line : 0, column = n != NULL ? n->column : 0;
	char p[PATHMAX], why[512];

	job->loss_line = line;
	job->loss_column = column;
	if (w->kind != MF_TRAINING)
		return MF_OK;
	if (mf_est_loss_refused(NULL, w, why, sizeof(why))) {
		/* The standard loss's refusals are lossUpcast's. */
		const struct mf_node *u = mf_node_get(wl, "lossUpcast");

		if (w->loss == MF_LOSS_STANDARD && u != NULL)
			line = u->line, column = u->column;
		return mf_error_set(err, MF_EINVAL,
		    mf_path(p, sizeof(p), base,
		        w->loss == MF_LOSS_STANDARD ? "workload.lossUpcast" :
		                                      "workload.loss"),
		    line, column, "%s", why);
	}
	if (w->loss == MF_LOSS_CHUNKED && w->seq_len > 0 &&
	    w->loss_chunks > w->seq_len) {
		const struct mf_node *k = mf_node_get(wl, "lossChunks");

		return mf_error_set(err, MF_EINVAL,
		    mf_path(p, sizeof(p), base, "workload.lossChunks"),
		    k != NULL ? k->line : line, k != NULL ? k->column : column,
		    "%lld pieces are more than the %lld tokens of a sequence (sequenceLength): each piece needs at least one",
		    (long long)w->loss_chunks, (long long)w->seq_len);
	}
	return MF_OK;
}

/* Cross-field rules that no single field can check; spec may be NULL.
 * base is the spec's path. */
static enum mf_rc
check_spec(struct mf_job *job, const char *base, const struct mf_node *spec,
    struct mf_error *err)
{
	const struct mf_node *wl = mf_node_get(spec, "workload");
	int line = spec != NULL ? spec->line : 0;
	int column = spec != NULL ? spec->column : 0;
	char p[PATHMAX];
	enum mf_rc rc;

	note_lengths(job, wl);
	note_framework(job, wl);
	if (job->min_memory == 0 && job->model_source == MF_MODEL_NONE)
		return mf_error_set(err, MF_EINVAL,
		    mf_path(p, sizeof(p), base, "resources.gpu.minMemory"),
		    line, column, "is required when no model is given");
	if ((job->max_cost >= 0 || job->deadline_hours >= 0) &&
	    !mf_job_has_duration(job))
		return mf_error_set(err, MF_EINVAL,
		    mf_path(p, sizeof(p), base, "duration.referenceHours"),
		    line, column,
		    "is required by limits.maxCost and limits.deadlineHours (or duration.tokens, duration.requests)");
	if ((job->reference_hours > 0) + (job->tokens > 0) +
	        (job->requests > 0) >
	    1)
		return mf_error_set(err, MF_EINVAL,
		    mf_path(p, sizeof(p), base, "duration"), line, column,
		    "gives more than one of referenceHours, tokens and requests: give one");
	if (job->tokens > 0 && job->work.kind != MF_TRAINING)
		return mf_error_set(err, MF_EINVAL,
		    mf_path(p, sizeof(p), base, "duration.tokens"), line,
		    column,
		    "applies to training; an inference job gives duration.requests");
	if (job->requests > 0 && job->work.kind != MF_INFERENCE)
		return mf_error_set(err, MF_EINVAL,
		    mf_path(p, sizeof(p), base, "duration.requests"), line,
		    column,
		    "applies to inference; a training job gives duration.tokens");
	if (job->requests > 0 && job->work.output_tokens == 0)
		return mf_error_set(err, MF_EINVAL,
		    mf_path(p, sizeof(p), base, "workload.outputTokens"), line,
		    column, "is required by duration.requests");
	rc = check_count(job, base, node_at(spec, "resources.gpu.count"), line,
	    column, err);
	if (rc == MF_OK)
		rc = check_oib(job, base, wl, err);
	if (rc == MF_OK)
		rc = check_offload(job, base, wl, err);
	if (rc == MF_OK)
		rc = check_lengths(job, base, line, column, err);
	if (rc == MF_OK)
		rc = check_request(job, base, wl, err);
	if (rc == MF_OK)
		rc = check_batch(job, base, wl, err);
	if (rc == MF_OK)
		rc = check_loss(job, base, wl, err);
	if (rc == MF_OK)
		rc = check_refused(job, base, wl, "compile",
		    mf_est_compile_refused, err);
	if (rc == MF_OK)
		rc = check_refused(job, base, wl, "float8",
		    mf_est_float8_refused, err);
	return rc;
}

int
mf_job_has_duration(const struct mf_job *job)
{
	return job->reference_hours > 0 || job->tokens > 0 || job->requests > 0;
}

/* A job with every field as it is when not given (job_fields.c's rows). */
static struct mf_job job_template;
static pthread_once_t template_once = PTHREAD_ONCE_INIT;

static void
build_template(void)
{
	void *dst[MF_FB_COUNT] = { NULL };

	dst[MF_FB_JOB] = &job_template;
	dst[MF_FB_WORK] = &job_template.work;
	mf_workload_defaults(&job_template.work);
	mf_fields_defaults(&mf_fields_spec, dst);
}

/* Read root as the document row doc (a whole manifest, or its spec). */
static enum mf_rc
read_job(const struct mf_field *doc, const struct mf_node *root,
    const char *path, const char *name, const struct mf_models *models,
    struct mf_job *job, struct mf_error *err)
{
	struct reader r = { models, job };
	struct mf_fread fr = { { NULL }, hook, &r, err };

	pthread_once(&template_once, build_template);
	*job = job_template;
	job->name = name;
	job->framework_sharded = root != NULL && states_sharding(doc, root);
	fr.dst[MF_FB_JOB] = job;
	fr.dst[MF_FB_WORK] = &job->work;
	return root != NULL ? mf_fields_read(&fr, doc, root, path) : MF_OK;
}

enum mf_rc
mf_job_read_spec_floor(const struct mf_node *spec, const char *path,
    const char *name, const struct mf_models *models, int64_t floor,
    int floor_format, struct mf_job *out, struct mf_error *err)
{
	struct mf_job job;
	enum mf_rc rc;

	rc = read_job(&mf_fields_spec, spec, path, name, models, &job, err);
	if (job.min_memory == 0 && floor > 0) {
		job.min_memory = floor;
		job.min_memory_format = floor_format;
	}
	if (rc == MF_OK)
		rc = check_spec(&job, path, spec, err);
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

enum mf_rc
mf_job_read(const struct mf_node *root, const char *path,
    const struct mf_models *models, struct mf_job *out, struct mf_error *err)
{
	struct mf_job job;
	char p[PATHMAX];
	enum mf_rc rc;

	rc = read_job(&mf_fields_job, root, path, NULL, models, &job, err);
	if (rc == MF_OK)
		rc = check_spec(&job, mf_path(p, sizeof(p), path, "spec"),
		    mf_node_get(root, "spec"), err);
	if (rc == MF_OK)
		*out = job;
	return rc;
}

const char *
mf_workload_enum_name(const char *key, int v)
{
	const struct mf_field *wl, *f;

	/* The spec's row, not a path from the document's top: the answer
	 * asks for a few names on every admit. */
	wl = mf_fields_find(&mf_fields_spec, "workload");
	f = wl != NULL ? mf_fields_find(wl, key) : NULL;
	if (f == NULL || f->type != MF_FT_ENUM)
		return NULL;
	return mf_fields_name(f, v);
}
