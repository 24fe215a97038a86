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
 *
 * LoRA under FSDP (design 22), as torchtune 0.6.1's distributed LoRA
 * recipe wraps it (training/_distributed.py, shard_model with
 * get_shard_conditions: each layers.i, adapters and all, one unit, then
 * the model) and accelerate's FSDP2 wrapping of a PEFT model: a unit
 * gathers its frozen base in the base's dtype and its adapters in theirs
 * (torch 2.13 all-gathers a unit of mixed dtypes), Ug = U x the base's
 * bytes + A x the adapters' (A a layer's adapter parameters, T / L).
 * Only the adapters have gradients, so a unit's unsharded gradients and
 * its reduce-scatter input are A x the adapters' bytes each, and the
 * frozen head and final norm have none (H = 0).  During a layer's
 * backward: the root, the layer and the prefetched one gathered
 * (min(L, 2)), the layer's adapter gradients and, from L = 3, the last
 * unit's reduce-scatter input.  With reshardAfterForward false, L + 1
 * units, as with full fine-tuning: every layer gathered and an
 * all-gather's output beside its copy-out; or, in backward, the layers
 * with a unit's adapter gradients and the last reduce-scatter input
 * (R + L x Ug + 2 x A x a, the larger when the adapters outweigh the
 * base's half of a unit).  Measured by
 * tests/torch/dist.py on PEFT's adapters (fp32 and bf16) under
 * fully_shard over gloo.
 *
 * sharding.cpuOffload (design 22: FSDP2's CPUOffloadPolicy, torchtune's
 * fsdp_cpu_offload): the shards live on the host, so a unit's all-gather
 * first copies its shards to the GPU (FSDPParam.all_gather_inputs,
 * .to(device)), alive beside the all-gather's output until its copy-in:
 * ceil(Ug / N) more at an all-gather, at the start of forward (2R + Ug +
 * ceil(Ug / N)) and at a layer's prefetch in backward (R + H + 2Ug +
 * ceil(Ug / N), with the last unit's reduce-scatter input from L = 3),
 * which for full fine-tuning never passes R + H + 4U.  Measured on the
 * simulated device of tests/torch/dist.py (OffloadSim), which counts the
 * copies, the host's shards, gradients and optimizer state left out.  On
 * one GPU (sharding.gpus 1) there is no all-gather: a unit is copied in,
 * parameter by parameter, when it is used (FSDPParamGroup.
 * wait_for_unshard, world size 1), so nothing is prefetched and the root
 * is not held twice; what it holds there was measured below the figures
 * above (full: R + H + 3U; LoRA: R + Ug + 2 x A x a and a parameter's
 * copy), which the estimate keeps as their bound rather than a formula of
 * its own.
 */
#include <stdio.h>

#include "est.h"

/* The bytes a unit is gathered in: the base's (16-bit but for fp32). */
static int64_t
gathered_bytes(const struct mf_workload *w)
{
	return w->precision == MF_FP32 ? 4 : 2;
}

/* sep, then "n x sym" (sym alone when n is 1) into f. */
static void
term(struct mf_text *f, const char *sep, int64_t n, const char *sym)
{
	mf_text_str(f, sep);
	if (n != 1) {
		mf_text_int(f, n);
		mf_text_str(f, " x ");
	}
	mf_text_str(f, sym);
}

/* The layers gathered (*g) and the units' gradients (*r) a layer's
 * backward holds with the layers resharded: the layer and the prefetched
 * one, its gradients and from L = 3 the last reduce-scatter input. */
static void
in_flight(const struct mf_model *m, int64_t *g, int64_t *r)
{
	*g = m->layers < 2 ? m->layers : 2;
	*r = m->layers >= 3 ? 2 : 1;
}

/* Whether an all-gather copies the host's shards to the GPU first. */
static int
copies(const struct mf_workload *w)
{
	return w->shard_cpu_offload && w->shard_gpus > 1;
}

/* Full fine-tuning: max(2R + U (+ ceil(U / N) offloading), R + H + kU)
 * x bytes, and its text. */
static int64_t
full_buffers(const struct mf_model *m, const struct mf_workload *w,
    int64_t root, struct mf_text *f)
{
	int64_t u = mf_model_layer_params(m), head = 0, k, g, r, start;

	if (!m->no_head)
		head = mf_cadd(mf_cmul(mf_model_vocab_rows(m), m->hidden),
		    m->hidden);
	in_flight(m, &g, &r);
	k = w->reshard_after_forward ? g + r : mf_cadd(m->layers, 1);
	start = mf_cadd(mf_cmul(2, root), u);
	mf_text_str(f, "max(2 x root params + layer params");
	if (copies(w)) {
		start = mf_cadd(start, mf_cdiv_up(u, w->shard_gpus));
		mf_text_str(f, " + ceil(layer params / N)");
	}
	mf_text_str(f, ", root params + head params + ");
	mf_text_int(f, k);
	mf_text_str(f, " x layer params) x ");
	mf_text_int(f, gathered_bytes(w));
	return mf_cmul(mf_max_poisoned(start,
	                   mf_cadd(mf_cadd(root, head), mf_cmul(k, u))),
	    gathered_bytes(w));
}

/* The candidates of LoRA with the layers kept: R + (L + 1) Ug, and
 * R + L x Ug + 2 x A x a. */
static int64_t
lora_kept(const struct mf_model *m, int64_t root, int64_t ug, int64_t ad,
    const char *rb, const char *grads, struct mf_text *f)
{
	term(f, ", ", 1, rb);
	term(f, " + ", mf_cadd(m->layers, 1), "Ug");
	term(f, ", ", 1, rb);
	term(f, " + ", m->layers, "Ug");
	term(f, " + ", 2, grads);
	return mf_max_poisoned(mf_cadd(root,
	                           mf_cmul(mf_cadd(m->layers, 1), ug)),
	    mf_cadd(mf_cadd(root, mf_cmul(m->layers, ug)), mf_cmul(2, ad)));
}

/* Offloading, at a layer's prefetch in backward: R + 2Ug + ceil(Ug / N)
 * and the last reduce-scatter input from L = 3. */
static int64_t
lora_prefetch(const struct mf_model *m, const struct mf_workload *w,
    int64_t root, int64_t ug, int64_t ad, const char *rb, const char *grads,
    struct mf_text *f)
{
	int64_t v = mf_cadd(mf_cadd(root, mf_cmul(2, ug)),
	    mf_cdiv_up(ug, w->shard_gpus));

	term(f, ", ", 1, rb);
	mf_text_str(f, " + 2 x Ug + ceil(Ug / N)");
	if (m->layers < 3)
		return v;
	term(f, " + ", 1, grads);
	return mf_cadd(v, ad);
}

/* LoRA: a unit Ug = U x b + A x a (A = ceil(T / L)), its adapter
 * gradients A x a; the root R x b.  max(2R + Ug, R + g x Ug + r x A x a)
 * and the candidates of offloading and of the layers kept; its text. */
static int64_t
lora_buffers(const struct mf_model *m, const struct mf_workload *w,
    int64_t root, struct mf_text *f)
{
	int64_t b = gathered_bytes(w), a = mf_est_lora_bytes(w), g, r, peak;
	int64_t ad = mf_cmul(mf_cdiv_up(mf_model_lora_params(m, w->lora_rank,
	                                    mf_est_lora_mask(w)),
	                         m->layers > 0 ? m->layers : 1),
	    a);
	int64_t ug = mf_cadd(mf_cmul(mf_model_layer_params(m), b), ad);
	char rb[32], grads[32];

	snprintf(rb, sizeof(rb), "root params x %lld", (long long)b);
	snprintf(grads, sizeof(grads), "ceil(T / L) x %lld", (long long)a);
	in_flight(m, &g, &r);
	root = mf_cmul(root, b);
	peak = mf_cadd(mf_cmul(2, root), ug);
	term(f, "max(", 2, rb);
	mf_text_str(f, " + Ug");
	if (copies(w)) {
		peak = mf_cadd(peak, mf_cdiv_up(ug, w->shard_gpus));
		mf_text_str(f, " + ceil(Ug / N)");
	}
	if (!w->reshard_after_forward)
		peak = mf_max_poisoned(peak,
		    lora_kept(m, root, ug, ad, rb, grads, f));
	else {
		peak = mf_max_poisoned(peak,
		    mf_cadd(mf_cadd(root, mf_cmul(g, ug)), mf_cmul(r, ad)));
		term(f, ", ", 1, rb);
		term(f, " + ", g, "Ug");
		term(f, " + ", r, grads);
		if (copies(w) && m->layers >= 2)
			peak = mf_max_poisoned(peak,
			    lora_prefetch(m, w, root, ug, ad, rb, grads, f));
	}
	mf_text_str(f, ")");
	return peak;
}

void
mf_est_fsdp(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	int64_t root;
	struct mf_text f;

	if (!mf_est_fsdp_on(w))
		return;
	root =
	    mf_model_params(m) - mf_cmul(m->layers, mf_model_layer_params(m));
	mf_text_init(&f, mf_est_text(e, MF_B_SHARDING));
	e->bucket[MF_B_SHARDING] = w->method == MF_FULL ?
	    full_buffers(m, w, root, &f) :
	    lora_buffers(m, w, root, &f);
}
