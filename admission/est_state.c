/*
 * est_state.c: the state a training step keeps, the same under every
 * estimator: weights, gradients, optimizer state, LoRA's adapters and
 * FSDP's sharding buffers.  The recipe: 16-bit weights and gradients with
 * fp32 master weights and moments (8-bit moments for adam8bit); fp32
 * throughout for fp32; a frozen base with fp32 adapters for LoRA.
 *
 * Choices where the design is silent:
 * - sharding applies to full training only, the one method FSDP is offered
 *   for; with any other workload shard_gpus is ignored and the estimate is
 *   that of one GPU, which can only overstate the need;
 * - LoRA adapters with SGD hold 12 bytes per trainable parameter (fp32
 *   weight, gradient and momentum), between AdamW's 16 and 8-bit Adam's 10.
 */
#include "est.h"

void
mf_est_per_param(struct mf_estimate *e, enum mf_bucket b, const char *sym,
    int64_t count, int64_t n)
{
	struct mf_text f;

	mf_text_init(&f, e->formula[b]);
	mf_text_str(&f, sym);
	mf_text_str(&f, " x ");
	mf_text_int(&f, n);
	e->bucket[b] = mf_cmul(count, n);
}

/* Optimizer state per parameter: fp32 master weights are in the figure. */
static int64_t
optimizer_bytes(enum mf_optimizer o, int fp32)
{
	switch (o) {
	case MF_ADAM8BIT:
		return fp32 ? 2 : 6;
	case MF_SGD:
		return fp32 ? 4 : 8;
	case MF_ADAMW:
		break;
	}
	return fp32 ? 8 : 12;
}

/* Adapter weight, gradient and optimizer state, all fp32. */
static int64_t
adapter_bytes(enum mf_optimizer o)
{
	switch (o) {
	case MF_ADAM8BIT:
		return 10;
	case MF_SGD:
		return 12;
	case MF_ADAMW:
		break;
	}
	return 16;
}

void
mf_est_state(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	int64_t P = e->params, T;
	int fp32 = w->precision == MF_FP32;
	struct mf_text f;

	if (w->method == MF_QLORA) {
		mf_text_init(&f, e->formula[MF_B_WEIGHTS]);
		mf_text_str(&f, "P x 0.5");
		e->bucket[MF_B_WEIGHTS] = mf_cdiv_up(P, 2);
	} else {
		mf_est_per_param(e, MF_B_WEIGHTS, "P", P, fp32 ? 4 : 2);
	}
	if (w->method == MF_FULL) {
		e->trainable = P;
		mf_est_per_param(e, MF_B_GRADIENTS, "P", P, fp32 ? 4 : 2);
		mf_est_per_param(e, MF_B_OPTIMIZER, "P", P,
		    optimizer_bytes(w->optimizer, fp32));
		if (w->shard_gpus > 1) {
			/* Gather one layer while the next is prefetched. */
			mf_text_init(&f, e->formula[MF_B_SHARDING]);
			mf_text_str(&f, "2 x layer params x 2");
			e->bucket[MF_B_SHARDING] =
			    mf_cmul(4, mf_model_layer_params(m));
		}
	} else {
		T = mf_model_lora_params(m, w->lora_rank, w->lora_targets);
		e->trainable = T;
		mf_est_per_param(e, MF_B_ADAPTERS, "T", T,
		    adapter_bytes(w->optimizer));
	}
}
