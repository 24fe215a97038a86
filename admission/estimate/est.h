/*
 * est.h: what the files of the estimate share (estimate.c, est_state.c,
 * est_post.c, est_pytorch.c, est_loss.c, est_serve.c, layout.c), and
 * nothing outside them uses.  The public API is estimate.h.
 */
#ifndef MF_EST_H
#define MF_EST_H

#include <assert.h>
#include <stdint.h>

#include "estimate.h"
#include "../base/internal.h"

/* a / n rounded up, for a >= 0 and n >= 1; -1 stays -1. */
static inline int64_t
mf_cdiv_up(int64_t a, int64_t n)
{
	if (a < 0)
		return -1;
	return a / n + (a % n != 0);
}

/* a rounded up to a whole number of n; -1 stays -1. */
static inline int64_t
mf_round_up(int64_t a, int64_t n)
{
	return mf_cmul(mf_cdiv_up(a, n), n);
}

/*
 * One estimator's arithmetic of a training step (design 13): fills the
 * buckets of e (params already set) for model m under w.  Inference is
 * the same under every estimator (est_serve.c).
 */
struct mf_est_ops {
	const char *name;
	void (*training)(const struct mf_model *m, const struct mf_workload *w,
	    struct mf_estimate *e);
};

extern const struct mf_est_ops mf_est_post;    /* est_post.c */
extern const struct mf_est_ops mf_est_pytorch; /* est_pytorch.c */

/*
 * What a training precision keeps (design 19), in bytes: a parameter's
 * weight and gradient, the optimizer's fp32 master copy of it (none where
 * the weights are the master), one moment (AdamW's m or v, SGD's
 * momentum) in the dtype the recipe keeps it, and an activation element e
 * of the layers' 16-bit work; mixed: autocast over fp32 weights, which
 * keeps 16-bit copies of the linear weights (mf_est_autocast_params) and
 * an fp32 residual stream.  One row per enum mf_precision (est_state.c).
 */
struct mf_est_precision {
	int weight, grad, master, moment, act, mixed;
};

const struct mf_est_precision *mf_est_precision(enum mf_precision p);

/* Bytes of an adapter's element (lora.dtype): 4, or 2 for bf16 and
 * fp16. */
int64_t mf_est_lora_bytes(const struct mf_workload *w);

/* The activations' element bytes the layers and their hidden states
 * work in: 4 for fp32 and for the fp32 residual stream of autocast. */
int64_t mf_est_hidden_bytes(const struct mf_workload *w);

/* Where bucket b's formula is written: e->formula[b], or NULL for an
 * estimate of figures alone (mf_est_figures), which the mf_text_*
 * writers take as nothing to write. */
static inline char *
mf_est_text(struct mf_estimate *e, enum mf_bucket b)
{
	assert(b >= 0 && b < MF_B_COUNT);
	return e->figures_only ? NULL : e->formula[b];
}

/* bytes = P x n (or T x n) into bucket b, with its formula "sym x n". */
void mf_est_per_param(struct mf_estimate *e, enum mf_bucket b, const char *sym,
    int64_t count, int64_t n);

/* Weights, gradients, optimizer, adapters and sharding buffers: the state
 * of training, the same under every estimator (est_state.c). */
void mf_est_state(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e);
/*
 * With the optimizer in backward and tied embeddings, the embeddings'
 * backward holds the head's gradient, the embeddings' own and their sum,
 * 3 x V x h x g, of which the gradients bucket counts one and a layer
 * weight's: a transient candidate of V x h x 2g (", V x h x 2g" into f,
 * its bytes); 0, and nothing written, otherwise.
 */
int64_t mf_est_oib_tied(const struct mf_model *m, const struct mf_workload *w,
    struct mf_text *f);

/* shardingBuffers as fully_shard holds them, for FSDP over
 * w->shard_gpus > 1 (est_fsdp.c), what they add to the step's peak: e's
 * activations, logits and transient are set; nothing otherwise. */
void mf_est_fsdp(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e);

/*
 * What the standard loss over the model's output upcast and held by the
 * loop (lossUpcast: output, LitGPT's) keeps beside the logits bucket's
 * terms: the held fp32 output, s x b x 4 x vl, and the 16-bit copies of a
 * frozen lm_head autocast makes for its pieces; " + ..." into f; 0 for
 * the other losses (est_loss.c).
 */
int64_t mf_est_output_held(const struct mf_model *m,
    const struct mf_workload *w, int64_t vl, struct mf_text *f);

/*
 * What the loss of a training step holds for a moment beyond what it
 * keeps for backward, one candidate of the transient bucket, with its
 * text "max(... , " into f (est_loss.c): ebytes the activations' element
 * bytes, vl the logits' width (V, or a GPU's vocabulary rows under loss
 * parallel).  0 for a pipeline stage without the head.
 */
int64_t mf_est_loss_transient(const struct mf_model *m,
    const struct mf_workload *w, int64_t ebytes, int64_t vl, struct mf_text *f);

/*
 * Whether an estimate of w counts the loading moment (est_load.c): QLoRA
 * training under the estimator pytorch, on one GPU's model.
 */
int mf_est_loads(const struct mf_workload *w);
/*
 * The loading moment (est_load.c): with e's step buckets and stage laid
 * out, the bucket MF_B_LOADING (and its stage) the bytes by which
 * loading and quantizing the base, and PEFT's fp32 cast, need more than
 * the step per GPU; left 0 when they need no more, or when
 * mf_est_loads(w) is 0; -1 on overflow.
 */
void mf_est_loading(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e);
/* The transient bucket of the estimator pytorch into e (est_transient.c):
 * ebytes the activations' element bytes, vl the logits' width (V, or a
 * GPU's vocabulary rows under loss parallel), rc what a checkpointed
 * compiled LoRA layer's backward holds a token beyond the activations
 * (est_pytorch.c, recompute_terms; no terms for other jobs). */
void mf_est_torch_transient(const struct mf_model *m,
    const struct mf_workload *w, int64_t ebytes, int64_t vl,
    const struct mf_terms *rc, struct mf_estimate *e);

/* The buckets of an inference job (est_serve.c). */
void mf_est_inference(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e);

/* Every bucket of m under w, whole, with params and trainable
 * (estimate.c). */
void mf_est_buckets(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e);

/* Bucket b of bucket[] as one GPU of an FSDP full shard over n holds it:
 * the weights, gradients and optimizer state divided, the rest whole. */
int64_t mf_est_gpu_bucket(const int64_t *bucket, enum mf_bucket b, int64_t n);

/* e->stage, and the whole job's communication buffers, for the tensor,
 * pipeline and expert layout of w (layout.c). */
void mf_est_layout(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e);

/*
 * Whether w's vLLM release counts the CUDA context in its peak (peak_memory
 * = total - free, vLLM 0.2.5 to 0.3.0: est_serve.c's releases[]).
 */
int mf_est_vllm_context(const struct mf_workload *w);
/*
 * What peak_memory = total - free counts above the current accounting at
 * TP 1: the CUDA context and what the allocator holds above torch's
 * peak.  vllm-project/vllm pull request 2031 measured the change from
 * torch's peak to total - free, Llama 2 7B on one A100 80GB: 7449 blocks
 * to 7351, 98 blocks of 8 MiB (16 tokens of 2 x 32 x 4096 x 2 bytes), 784
 * MiB; less the 164 MiB vLLM later counts outside PyTorch at TP 1
 * (MF_NON_TORCH_DEFAULT, which nonTorch already holds): 620 MiB, written
 * cudaContext in the formula.
 */
#define MF_EST_CONTEXT (INT64_C(620) << 20)
#define MF_EST_CONTEXT_TEXT "cudaContext"

#endif
