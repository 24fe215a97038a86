/*
 * est_serve.c: an inference job's buckets (design 14), the same under
 * every estimator: the weights in their stored dtype, the KV cache and,
 * served by vLLM, the forward's activation peak (forward.c) and the
 * CUDA-graph reserve.
 */
#include "est.h"
#include "forward.h"

int64_t
mf_est_linear_bytes(enum mf_weights_dtype wd, int64_t n, int64_t group)
{
	switch (wd) {
	case MF_WD_FP8:
	case MF_WD_INT8:
		return n;
	case MF_WD_INT4:
		/* Two weights a byte, and an fp16 scale a group. */
		return mf_cadd(mf_cdiv_up(n, 2),
		    mf_cmul(2, mf_cdiv_up(n, group)));
	case MF_WD_DEFAULT:
	case MF_WD_BF16:
	case MF_WD_FP16:
		break;
	}
	return mf_cmul(2, n);
}

/*
 * Inference weights: the linear layers' Plin weights in weightsDtype, the
 * rest (embeddings, norms, biases, router, output head) in 16 bits; all
 * in fp32 when precision is fp32 and no weightsDtype is given.
 */
static void
inference_weights(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	enum mf_weights_dtype wd = w->weights_dtype;
	int64_t lin = mf_model_linear_params(m);
	struct mf_text f;

	if (wd == MF_WD_DEFAULT || wd == MF_WD_BF16 || wd == MF_WD_FP16) {
		mf_est_per_param(e, MF_B_WEIGHTS, "P", e->params,
		    wd == MF_WD_DEFAULT && w->precision == MF_FP32 ? 4 : 2);
		return;
	}
	mf_text_init(&f, e->formula[MF_B_WEIGHTS]);
	if (wd == MF_WD_INT4) {
		mf_text_str(&f, "ceil(Plin / 2) + ceil(Plin / ");
		mf_text_int(&f, w->group_size);
		mf_text_str(&f, ") x 2");
	} else {
		mf_text_str(&f, "Plin x 1");
	}
	mf_text_str(&f, " + (P - Plin) x 2");
	e->bucket[MF_B_WEIGHTS] =
	    mf_cadd(mf_est_linear_bytes(wd, lin, w->group_size),
	        mf_cmul(2, e->params - lin));
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
