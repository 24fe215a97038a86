/*
 * est_serve.c: an inference job's buckets (design 14), the same under
 * every estimator: the weights in their stored dtype, the KV cache and,
 * served by vLLM, the forward's activation peak (forward.c) and the
 * CUDA-graph reserve.
 */
#include <assert.h>

#include "est.h"
#include "forward.h"
#include "../model/quant.h"

#define GIB (INT64_C(1) << 30)

/* vllm/engine/arg_utils.py, get_batch_defaults: by the card's memory,
 * largest first; an A100 takes the last row whatever its memory. */
static const struct vllm_tier {
	int64_t memory;
	int a100_too;
	int64_t batched_tokens, max_num_seqs;
} vllm_tiers[] = {
	{ 160 * GIB, 1, 16384, 1024 }, /* B200, B300 */
	{ 70 * GIB, 0, 8192, 1024 },   /* H100, H200 */
	{ 0, 1, 2048, 256 },           /* every other card */
};

_Static_assert(sizeof(vllm_tiers) / sizeof(vllm_tiers[0]) == MF_VLLM_TIERS,
    "a row a tier");

/*
 * vLLM's accounting by release (design 22's serverVersion), each family
 * from its first release on (the row of the largest from at or below the
 * job's release; 0, the current accounting, takes the last).  How each
 * release found its KV cache's budget, from its own source:
 * - 0.2.5 (pull request 2031): worker.py profile_num_available_blocks
 *   takes peak_memory = total - free after the profile run, so the CUDA
 *   context counts (MF_EST_CONTEXT, est.h), and so does what torch's
 *   allocator keeps reserved: at tensor > 1 torch.distributed.all_reduce
 *   records its input on NCCL's stream, whose block is not reused until
 *   the collective is seen done, and the profile run's forward keeps every
 *   layer's two (o_proj's and down_proj's), 2 x L x t x h x 2 bytes, at
 *   most (issue 2150's memory trace; pull request 2031 measured Llama 2
 *   70B at TP 4 on A100s falling from 31615 blocks to 20865).
 * - 0.2.6 (2151: TORCH_NCCL_AVOID_RECORD_STREAMS): the inputs freed; the
 *   sampler's re-sort gathers with a scattered inverse, not argsort, and
 *   its settings are tensors (1889).
 * - 0.3.0: the same; the sampler's top-k/top-p rewritten (1885).
 * - 0.3.1 (2863): peak_memory = init_gpu_memory - free, the context no
 *   longer counted; 0.6.4 (9352) and 0.6.5 (10511) count torch's peak and
 *   the memory outside it apart, which memfloor counts the same way.
 * - 0.5.0 (5289): the profile run's prompt tokens no longer copied to
 *   the GPU for the sampler.
 * - 0.5.3 (6666): chunked prefill on by default past 32,768 tokens.
 * - 0.5.5 (2937): the sampler works on an fp32 copy of the logits.
 * - 0.6.5 (10544): chunked prefill's default 2048 tokens, not 512.
 * - 0.8.0: the V1 engine by default, with today's sampler and defaults.
 * - 0.21.0: the CUDA graphs' memory taken from the budget (before, they
 *   were captured after the KV cache, in the share vLLM leaves).
 * Up to 0.7.x the V0 engine's defaults hold (config.py SchedulerConfig,
 * arg_utils.py EngineArgs): max_num_seqs 256, max_num_batched_tokens
 * max(max_model_len, 2048), or chunked prefill's (512, then 2048);
 * max_model_len is the job's contextLength (--max-model-len).
 */
static const struct vllm_release {
	int64_t from;
	int context;     /* the CUDA context is in the peak */
	int v0;          /* the V0 engine's defaults */
	int64_t chunked; /* chunked prefill past 32,768 tokens, with this
	                    maxNumBatchedTokens; 0: off by default */
	enum mf_sampler sampler;
	int graphs; /* the CUDA graphs are taken from the budget */
	int kept;   /* at tensor > 1 every all-reduce's input stays reserved
	               to the forward's end */
} releases[] = {
	{ MF_VLLM_OLDEST, 1, 1, 0, MF_SAMPLER_V0_A16, 0, 1 },
	{ MF_VLLM_VERSION(0, 2, 6), 1, 1, 0, MF_SAMPLER_V0_P16, 0, 0 },
	{ MF_VLLM_VERSION(0, 3, 0), 1, 1, 0, MF_SAMPLER_V0_16P, 0, 0 },
	{ MF_VLLM_VERSION(0, 3, 1), 0, 1, 0, MF_SAMPLER_V0_16P, 0, 0 },
	{ MF_VLLM_VERSION(0, 5, 0), 0, 1, 0, MF_SAMPLER_V0_16, 0, 0 },
	{ MF_VLLM_VERSION(0, 5, 3), 0, 1, 512, MF_SAMPLER_V0_16, 0, 0 },
	{ MF_VLLM_VERSION(0, 5, 5), 0, 1, 512, MF_SAMPLER_V0_32, 0, 0 },
	{ MF_VLLM_VERSION(0, 6, 5), 0, 1, 2048, MF_SAMPLER_V0_32, 0, 0 },
	{ MF_VLLM_VERSION(0, 8, 0), 0, 0, 0, MF_SAMPLER_V1, 0, 0 },
	{ MF_VLLM_VERSION(0, 21, 0), 0, 0, 0, MF_SAMPLER_V1, 1, 0 },
};

#define NRELEASES (sizeof(releases) / sizeof(releases[0]))

static const struct vllm_release *
release_of(int64_t version)
{
	size_t i = NRELEASES - 1;

	/* 0, the current accounting, is the last family's. */
	for (; version != 0 && i > 0; i--) {
		assert(i < NRELEASES);
		if (releases[i].from <= version)
			break;
	}
	assert(i < NRELEASES);
	return &releases[i];
}

int
mf_est_vllm_context(const struct mf_workload *w)
{
	return w->server == MF_SERVER_VLLM &&
	    release_of(w->server_version)->context;
}

int
mf_vllm_release_known(int64_t version)
{
	return version == 0 || version >= releases[0].from;
}

int
mf_vllm_tier(int64_t memory, int a100)
{
	size_t i;

	/* The last tier takes every card. */
	for (i = 0; i + 1 < sizeof(vllm_tiers) / sizeof(vllm_tiers[0]); i++)
		if (memory >= vllm_tiers[i].memory &&
		    (!a100 || vllm_tiers[i].a100_too))
			break;
	return (int)i;
}

/* The V0 engine's defaults, whatever the card (releases[]). */
static void
v0_defaults(struct mf_workload *w)
{
	const struct vllm_release *r = release_of(w->server_version);

	if (w->batched_tokens == 0)
		w->batched_tokens = r->chunked > 0 && w->context_len > 32768 ?
		    r->chunked :
		    (w->context_len > 2048 ? w->context_len : 2048);
	if (w->max_num_seqs == 0)
		w->max_num_seqs = 256;
}

void
mf_vllm_defaults(struct mf_workload *w, int tier)
{
	const struct vllm_tier *t;

	assert(tier >= 0 &&
	    (size_t)tier < sizeof(vllm_tiers) / sizeof(vllm_tiers[0]));
	t = &vllm_tiers[tier];
	if (release_of(w->server_version)->v0) {
		v0_defaults(w);
		return;
	}

	if (w->max_num_seqs == 0) {
		w->max_num_seqs = t->max_num_seqs;
		if (w->batched_tokens == 0)
			w->batched_tokens = t->batched_tokens;
		if (w->max_num_seqs > w->batched_tokens)
			w->max_num_seqs = w->batched_tokens;
	}
	if (w->batched_tokens == 0)
		w->batched_tokens = t->batched_tokens;
}

/*
 * A max_num_batched_tokens left unset takes its default whatever
 * max_num_seqs is given, and vLLM then refuses to start below it:
 * vllm-project/vllm, vllm/engine/arg_utils.py,
 * _set_default_max_num_seqs_and_batched_tokens_args, lowers only an unset
 * max_num_seqs to the tokens (min(max_num_seqs, max_num_batched_tokens)),
 * and vllm/config/scheduler.py, SchedulerConfig.verify_max_model_len,
 * raises "max_num_batched_tokens (2048) must be greater than or equal to
 * max_num_seqs (4096)"; the V0 engine's SchedulerConfig._verify_args
 * (vllm/config.py, to 0.7.x) has the same check over its own defaults.
 */
int64_t
mf_vllm_batched_tokens(const struct mf_workload *w, int tier)
{
	struct mf_workload d = *w;

	mf_vllm_defaults(&d, tier);
	return d.batched_tokens;
}

int
mf_vllm_seqs_given(const struct mf_workload *w)
{
	return w->kind == MF_INFERENCE && w->server == MF_SERVER_VLLM &&
	    w->max_num_seqs > 0;
}

int
mf_vllm_starts(const struct mf_workload *w, int tier)
{
	return !mf_vllm_seqs_given(w) ||
	    mf_vllm_batched_tokens(w, tier) >= w->max_num_seqs;
}

/*
 * What vLLM finds outside PyTorch on a GPU (gpu_worker.py
 * determine_available_memory takes it from the KV cache's budget):
 * cuBLAS workspaces, and at tensor > 1 NCCL's and the custom
 * all-reduce's buffers; the card's figures (mf_place binds them).
 */
static void
non_torch(const struct mf_workload *w, struct mf_estimate *e)
{
	struct mf_text f;
	int ctx = mf_est_vllm_context(w);

	mf_text_init(&f, mf_est_text(e, MF_B_NONTORCH));
	mf_text_str(&f, w->tensor > 1 ? "nonTorch + allReduce" : "nonTorch");
	if (ctx)
		mf_text_str(&f, " + " MF_EST_CONTEXT_TEXT);
	e->bucket[MF_B_NONTORCH] =
	    w->tensor > 1 ? mf_cadd(w->non_torch, w->all_reduce) : w->non_torch;
	if (ctx)
		e->bucket[MF_B_NONTORCH] =
		    mf_cadd(e->bucket[MF_B_NONTORCH], MF_EST_CONTEXT);
}

/* vLLM 0.2.5 at tensor > 1: every all-reduce's input of the profile run
 * reserved to the forward's end (releases[]), with the activations. */
static void
kept_inputs(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	e->bucket[MF_B_ACTIVATIONS] = mf_cadd(e->bucket[MF_B_ACTIVATIONS],
	    mf_cmul(mf_cmul(4, m->layers),
	        mf_cmul(w->batched_tokens, m->hidden)));
	mf_text_around(mf_est_text(e, MF_B_ACTIVATIONS), "",
	    " + 2 x L x t x 2h");
}

void
mf_est_weights_quant(const struct mf_model *m, const struct mf_workload *w,
    struct mf_quant *q, const char **source)
{
	switch (w->weights_dtype) {
	case MF_WD_FP8:
		/* vLLM's fp8 of a 16-bit checkpoint: an fp32 scale a tensor. */
		mf_quant_scaled("fp8", 8, MF_Q_PER_TENSOR, 4, q);
		break;
	case MF_WD_INT8:
		/* W8A8 int8: an fp32 scale an output row. */
		mf_quant_scaled("int8", 8, MF_Q_PER_ROW, 4, q);
		break;
	case MF_WD_INT4:
		/* Design 14: an fp16 scale a group of groupSize weights. */
		mf_quant_scaled("int4", 4, w->group_size, 2, q);
		break;
	case MF_WD_BF16:
	case MF_WD_FP16:
		mf_quant_none(q);
		break;
	case MF_WD_DEFAULT:
		*q = m->quant;
		*source = m->quant.format == MF_Q_16BIT ? "precision" :
		                                          "quantization_config";
		return;
	}
	*source = "weightsDtype";
}

/*
 * Inference weights: the linear layers' weights as stored (weightsDtype,
 * else the config's quantization_config, quant.c), the rest
 * (embeddings, norms, biases, router, output head) in 16 bits; all in
 * fp32 when precision is fp32 and nothing else is said.
 */
static void
inference_weights(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	mf_est_weights_quant(m, w, &e->quant, &e->quant_source);
	if (e->quant.format == MF_Q_16BIT && w->precision == MF_FP32 &&
	    w->weights_dtype == MF_WD_DEFAULT) {
		mf_est_per_param(e, MF_B_WEIGHTS, "P", e->params, 4);
		return;
	}
	e->bucket[MF_B_WEIGHTS] =
	    mf_quant_weights(m, &e->quant, mf_est_text(e, MF_B_WEIGHTS));
}

/*
 * Weights and a KV cache of seqs sequences of ctx tokens; with vllm, the
 * activation peak of one forward over maxNumBatchedTokens tokens
 * (forward.c), the CUDA-graph reserve and each sequence's tokens in whole
 * blocks of blockSize (paged attention allocates a block at a time).
 */
void
mf_est_inference(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	int kvb = w->kv_dtype == MF_KV_FP8 ? 1 : 2, vllm;
	const struct vllm_release *r;
	struct mf_text f;

	vllm = w->server == MF_SERVER_VLLM;
	inference_weights(m, w, e);
	e->kv_token = mf_model_kv_bytes_per_token(m, kvb);
	e->block = vllm ? w->block_size : 1;
	e->seq_tokens = mf_round_up(w->context_len, e->block);
	mf_text_init(&f, mf_est_text(e, MF_B_KVCACHE));
	mf_text_str(&f, "2 x L x kv x d x ");
	mf_text_int(&f, kvb);
	if (vllm) {
		mf_text_str(&f, " x seqs x ceil(ctx / ");
		mf_text_int(&f, w->block_size);
		mf_text_str(&f, ") x ");
		mf_text_int(&f, w->block_size);
	} else {
		mf_text_str(&f, " x seqs x ctx");
	}
	e->bucket[MF_B_KVCACHE] =
	    mf_cmul(e->kv_token, mf_cmul(w->concurrency, e->seq_tokens));
	if (!vllm)
		return;
	/* The profile run's dummy batch: maxNumBatchedTokens over
	 * min(maxNumSeqs, tokens) sequences (gpu_model_runner.py
	 * _dummy_run), whatever the job's concurrency. */
	r = release_of(w->server_version);
	e->bucket[MF_B_ACTIVATIONS] =
	    mf_forward_peak_sampler(m, w->batched_tokens,
	        w->max_num_seqs < w->batched_tokens ? w->max_num_seqs :
	                                              w->batched_tokens,
	        r->sampler, mf_est_text(e, MF_B_ACTIVATIONS));
	if (r->kept && w->tensor > 1)
		kept_inputs(m, w, e);
	mf_text_init(&f, mf_est_text(e, MF_B_GRAPHS));
	mf_text_str(&f, r->graphs ? "cudaGraphReserve" : "0");
	e->bucket[MF_B_GRAPHS] = r->graphs ? w->graph_reserve : 0;
	non_torch(w, e);
}
