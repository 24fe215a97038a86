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

void
mf_vllm_defaults(struct mf_workload *w, int tier)
{
	const struct vllm_tier *t;

	assert(tier >= 0 &&
	    (size_t)tier < sizeof(vllm_tiers) / sizeof(vllm_tiers[0]));
	t = &vllm_tiers[tier];

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
 * What vLLM finds outside PyTorch on a GPU (gpu_worker.py
 * determine_available_memory takes it from the KV cache's budget):
 * cuBLAS workspaces, and at tensor > 1 NCCL's and the custom
 * all-reduce's buffers; the card's figures (mf_place binds them).
 */
static void
non_torch(const struct mf_workload *w, struct mf_estimate *e)
{
	struct mf_text f;

	mf_text_init(&f, e->formula[MF_B_NONTORCH]);
	mf_text_str(&f, w->tensor > 1 ? "nonTorch + allReduce" : "nonTorch");
	e->bucket[MF_B_NONTORCH] =
	    w->tensor > 1 ? mf_cadd(w->non_torch, w->all_reduce) : w->non_torch;
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
	    mf_quant_weights(m, &e->quant, e->formula[MF_B_WEIGHTS]);
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
	struct mf_text f;

	vllm = w->server == MF_SERVER_VLLM;
	inference_weights(m, w, e);
	e->kv_token = mf_model_kv_bytes_per_token(m, kvb);
	e->block = vllm ? w->block_size : 1;
	e->seq_tokens = mf_round_up(w->context_len, e->block);
	mf_text_init(&f, e->formula[MF_B_KVCACHE]);
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
	e->bucket[MF_B_ACTIVATIONS] = mf_forward_peak(m, w->batched_tokens,
	    w->max_num_seqs < w->batched_tokens ? w->max_num_seqs :
	                                          w->batched_tokens,
	    e->formula[MF_B_ACTIVATIONS]);
	mf_text_init(&f, e->formula[MF_B_GRAPHS]);
	mf_text_str(&f, "cudaGraphReserve");
	e->bucket[MF_B_GRAPHS] = w->graph_reserve;
	non_torch(w, e);
}
