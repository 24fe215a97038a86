/*
 * est_fsdp.c: what FSDP's fully_shard (torch >= 2.4, FSDP2) holds beside
 * the shards, the estimator pytorch's shardingBuffers (design 19).  The
 * estimator post keeps the reference post's 2 x layer x 2 (est_state.c).
 *
 * The units are those Hugging Face's FSDP2 wrapping (accelerate's
 * transformer layer policy) and torchtune make: every decoder layer one
 * unit, and the root unit the model itself, which holds what is not in a
 * layer: the embeddings, the final norm and the head.  torchtitan wraps
 * the embeddings, and the final norm with the head, as units of their
 * own, which frees them earlier: the root unit is the larger case.
 *
 * fully_shard's buffers (torch 2.13, torch/distributed/fsdp/_fully_shard/
 * _fsdp_param_group.py), one unit's parameters each, in the dtype the
 * unit is gathered in:
 * - a unit in use is all-gathered whole (its unsharded parameters);
 * - in backward a unit's pre-backward prefetches the next unit's
 *   all-gather (_backward_prefetch), whose output lives until that unit
 *   starts;
 * - a unit's unsharded gradients, until its post-backward copies them
 *   into the reduce-scatter's input, which is kept until the next unit's
 *   reduce-scatter (reduce_scatter_states, one by default);
 * - the root unit is not resharded after forward unless the caller asks
 *   (_lazy_init), and the gradients of the head and the final norm, made
 *   first in backward, stay unsharded until the root's post-backward at
 *   the end of backward.
 * So during a layer's backward, with the activations still held: the
 * root unit whole (R), the head's and final norm's gradients (H), and
 * the layer's parameters, its gradients, the prefetched layer's and the
 * last layer's reduce-scatter input: 4 layers (min(L + 1, 4) with fewer
 * layers).  With reshardAfterForward false every layer stays gathered
 * from forward to its backward: L + 1 layers.  At the start of forward
 * and at the end of backward the root is held twice (its all-gather's
 * output beside its parameters; its gradients beside their reduce-scatter
 * input) with one layer: 2R + U.  Measured by tests/torch/dist.py on
 * fully_shard over gloo, every buffer sampled at each of FSDP's steps.
 */
#include "est.h"

/* The layers a layer's backward holds gathered or in flight. */
static int64_t
held_layers(const struct mf_model *m, const struct mf_workload *w)
{
	if (!w->reshard_after_forward)
		return mf_cadd(m->layers, 1);
	return m->layers + 1 < 4 ? m->layers + 1 : 4;
}

void
mf_est_fsdp(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	int64_t u = mf_model_layer_params(m), root, head = 0, k, peak;
	int64_t bytes = w->precision == MF_FP32 ? 4 : 2;
	struct mf_text f;

	if (w->method != MF_FULL || w->shard_gpus <= 1)
		return;
	root = mf_model_params(m) - mf_cmul(m->layers, u);
	if (!m->no_head)
		head = mf_cadd(mf_cmul(mf_model_vocab_rows(m), m->hidden),
		    m->hidden);
	k = held_layers(m, w);
	peak = mf_max_poisoned(mf_cadd(mf_cmul(2, root), u),
	    mf_cadd(mf_cadd(root, head), mf_cmul(k, u)));
	mf_text_init(&f, e->formula[MF_B_SHARDING]);
	mf_text_str(&f,
	    "max(2 x root params + layer params, root params + "
	    "head params + ");
	mf_text_int(&f, k);
	mf_text_str(&f, " x layer params) x ");
	mf_text_int(&f, bytes);
	e->bucket[MF_B_SHARDING] = mf_cmul(peak, bytes);
}
