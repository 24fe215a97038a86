/*
 * est_serve.c: an inference job's buckets (design 14), the same under
 * every estimator: the weights in their stored dtype, the KV cache and,
 * served by vLLM, the forward's activation peak (forward.c) and the
 * CUDA-graph reserve.
 */
#include "est.h"
#include "forward.h"
#include "quant.h"

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
	e->bucket[MF_B_ACTIVATIONS] = mf_forward_peak(m, w->batched_tokens,
	    w->concurrency < w->batched_tokens ? w->concurrency :
	                                         w->batched_tokens,
	    e->formula[MF_B_ACTIVATIONS]);
	mf_text_init(&f, e->formula[MF_B_GRAPHS]);
	mf_text_str(&f, "cudaGraphReserve");
	e->bucket[MF_B_GRAPHS] = w->graph_reserve;
}
