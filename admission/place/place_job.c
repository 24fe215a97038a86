/*
 * place_job.c: what a job asks of its model (a context it takes, a
 * tensor-parallel size it splits into) and of the catalogue (the share of
 * a card kept free, the floor for a need, the smallest card that holds
 * it, what a vllm server takes from the card it runs on).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "place_int.h"

#define GIB (INT64_C(1) << 30)

int64_t
mf_floor_for(int64_t bytes, double headroom)
{
	double gib = ceil((double)bytes / (1.0 - headroom) / (double)GIB);

	/* Design 2: a byte size fits in 63 bits; a floor past it is no
	 * quantity at all, not the largest one. */
	if (bytes < 0 || !(gib <= (double)(INT64_MAX / GIB)))
		return -1;
	return (int64_t)gib * GIB;
}

void
mf_job_bind(struct mf_job *job, const struct mf_catalog *cat)
{
	job->work.graph_reserve = cat->cuda_graph_reserve;
}

int
mf_place_card_tier(const struct mf_gpu *g)
{
	int a100 = strstr(g->name, "A100") != NULL;

	for (size_t i = 0; !a100 && i < g->nlabels; i++)
		a100 = strstr(g->labels[i].value, "A100") != NULL;
	return mf_vllm_tier(g->cuda_memory > 0 ? g->cuda_memory : g->memory,
	    a100);
}

int
mf_place_starts_vllm(const struct mf_job *job, const struct mf_gpu *g)
{
	/* A card's tier only for the jobs whose start it may decide: it is
	 * asked of every card a search tries. */
	return !mf_vllm_seqs_given(&job->work) ||
	    mf_vllm_starts(&job->work, mf_place_card_tier(g));
}

/* " (max_position_embeddings)" and so on: where m's limit comes from. */
static void
context_source(const struct mf_model *m, char *buf, size_t size)
{
	if (m->rope_original > 0)
		snprintf(buf, size,
		    "rope_scaling original_max_position_embeddings %lld x factor %g",
		    (long long)m->rope_original, m->rope_factor);
	else if (m->rope_factor != 1)
		snprintf(buf, size,
		    "max_position_embeddings %lld x rope_scaling factor %g",
		    (long long)m->positions, m->rope_factor);
	else
		snprintf(buf, size, "max_position_embeddings");
}

enum mf_rc
mf_job_check_model(const struct mf_job *job, struct mf_error *err)
{
	const struct mf_model *m = &job->model;
	int train = job->work.kind == MF_TRAINING;
	int64_t tokens = train ? job->work.seq_len : job->work.context_len;
	char from[96], why[512];

	if (job->model_source == MF_MODEL_NONE)
		return MF_OK;
	/* The loss's rule that needs the model (the final soft-capping). */
	if (mf_est_loss_refused(m, &job->work, why, sizeof(why)))
		return mf_error_set(err, MF_EINVAL, "spec.workload.loss",
		    job->loss_line, job->loss_column, "%s", why);
	/* A LoRA list's names against the model's modules. */
	if (mf_est_lora_refused(m, &job->work, why, sizeof(why)))
		return mf_error_set(err, MF_EINVAL,
		    "spec.workload.lora.targets", job->targets_line,
		    job->targets_column, "%s", why);
	/* compile's rule that needs the model (its block). */
	if (mf_est_compile_refused(m, &job->work, why, sizeof(why)))
		return mf_error_set(err, MF_EINVAL, "spec.workload.compile",
		    job->compile_line, job->compile_column, "%s", why);
	/* float8's rule that needs the model (its experts). */
	if (mf_est_float8_refused(m, &job->work, why, sizeof(why)))
		return mf_error_set(err, MF_EINVAL, "spec.workload.float8",
		    job->float8_line, job->float8_column, "%s", why);
	if (!train && m->quant_unknown[0] != '\0' &&
	    job->work.weights_dtype == MF_WD_DEFAULT)
		return mf_error_set(err, MF_EINVAL, "spec.model", 0, 0,
		    "quantization_config.quant_method '%s' is not a format memfloor knows (known: %s): give spec.workload.weightsDtype",
		    m->quant_unknown, mf_quant_methods());
	if (m->max_context == 0 || tokens <= m->max_context)
		return MF_OK;
	context_source(m, from, sizeof(from));
	return mf_error_set(err, MF_EINVAL,
	    train ? "spec.workload.sequenceLength" :
	            "spec.workload.contextLength",
	    train ? job->seq_line : job->context_line,
	    train ? job->seq_column : job->context_column,
	    "%lld tokens is more than the model's context limit, %lld (%s)",
	    (long long)tokens, (long long)m->max_context, from);
}

void
mf_work_bind_card(struct mf_workload *w, const struct mf_gpu *g)
{
	if (!mf_place_engine_budget(w))
		return;
	mf_vllm_defaults(w, mf_place_card_tier(g));
	w->non_torch = g->non_torch;
	w->all_reduce = g->all_reduce;
}

int
mf_job_serves(const struct mf_job *job)
{
	return job->work.kind == MF_INFERENCE &&
	    job->model_source != MF_MODEL_NONE;
}

double
mf_headroom(const struct mf_catalog *cat, const struct mf_workload *w)
{
	if (mf_place_engine_budget(w))
		return 1.0 - w->gpu_util;
	return cat->headroom;
}

const struct mf_gpu *
mf_smallest_fit(const struct mf_catalog *cat, const struct mf_job *job,
    int64_t bytes, double headroom)
{
	const struct mf_gpu *best = NULL, *g;

	for (size_t i = 0; i < cat->ngpus; i++) {
		g = &cat->gpus[i];
		if (mf_cat_usable_at(g, headroom) < bytes ||
		    !mf_place_runs_on(job, g))
			continue;
		if (best == NULL || g->memory < best->memory ||
		    (g->memory == best->memory &&
		        (g->hourly_price < best->hourly_price ||
		            (g->hourly_price == best->hourly_price &&
		                strcmp(g->name, best->name) < 0))))
			best = g;
	}
	return best;
}

int
mf_tensor_valid(const struct mf_model *m, int64_t t)
{
	return t >= 1 && m->kv_heads >= 1 && m->heads % t == 0 &&
	    (m->kv_heads % t == 0 || t % m->kv_heads == 0);
}

/* The valid tensor-parallel size nearest t below it (*below, 0 when
 * none) and above it (*above, 0 past the attention heads). */
static void
nearest_tensor(const struct mf_model *m, int64_t t, int64_t *below,
    int64_t *above)
{
	*below = *above = 0;
	for (int64_t v = t - 1; v >= 1 && *below == 0; v--)
		if (mf_tensor_valid(m, v))
			*below = v;
	for (int64_t v = t + 1; v <= m->heads && *above == 0; v++)
		if (mf_tensor_valid(m, v))
			*above = v;
}

enum mf_rc
mf_job_check_layout(const struct mf_job *job, struct mf_error *err)
{
	const struct mf_model *m = &job->model;
	int64_t t = job->work.tensor, below, above;
	char near[64];

	if (job->model_source == MF_MODEL_NONE ||
	    job->model_source == MF_MODEL_URL || t <= 1 ||
	    mf_tensor_valid(m, t))
		return MF_OK;
	nearest_tensor(m, t, &below, &above);
	/* The nearer of the two, both when they are as near. */
	if (above == 0 || (below != 0 && t - below < above - t))
		snprintf(near, sizeof(near), "%lld", (long long)below);
	else if (below == 0 || above - t < t - below)
		snprintf(near, sizeof(near), "%lld", (long long)above);
	else
		snprintf(near, sizeof(near), "%lld or %lld", (long long)below,
		    (long long)above);
	return mf_error_set(err, MF_EINVAL, "spec.workload.parallelism.tensor",
	    0, 0,
	    "is %lld, which vLLM and the training frameworks do not start: tensor parallel splits the attention heads, so it must divide the model's %lld attention heads, and its %lld KV heads must divide it or it them; the nearest that does is %s",
	    (long long)t, (long long)m->heads, (long long)m->kv_heads, near);
}
