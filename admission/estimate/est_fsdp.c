/*
 * est_fsdp.c: what FSDP's fully_shard (torch >= 2.4, FSDP2) holds beside
 * the shards, the estimator pytorch's shardingBuffers (design 19).  The
 * estimator post keeps the reference post's 2 x layer x 2 (est_state.c).
 *
 * sharding.units model: the units Hugging Face's FSDP2 wrapping
 * (accelerate's transformer layer policy) and torchtune's LoRA configs
 * make: every decoder layer one unit, and the root unit the model itself,
 * which holds what is not in a layer: the embeddings, the final norm and
 * the head.  sharding.units ends (below): torchtune's
 * custom_sharded_layers: ['tok_embeddings', 'output'] (its 8B_full and
 * 70B_full configs) and torchtitan 0.2 (apply_fsdp) make the embeddings
 * and the head units of their own.
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
 *   (_fsdp_state.py, _lazy_init: torchtune and accelerate pass
 *   reshard_after_forward to fully_shard, and so ask); resharded, it is
 *   gathered again at the start of backward, its all-gather's output
 *   beside its copy-out (2R) with every activation held;
 * - the gradients of the head and the final norm, made first in
 *   backward, stay unsharded until the root's post-backward at the end
 *   of backward.
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
 * The phases of the step (mf_est_fsdp_phased: the layers resharded after
 * forward, several GPUs, one pipeline stage).  The transient bucket
 * counts the largest of the step's short-lived tensors, but each is held
 * at one phase only: the loss's (its backward) at the loss, from the end
 * of the last layer's forward to the start of its backward; a layer's
 * (its MLP's backward, eager attention's, LoRA's forward) in the layers'
 * forward and backward.  So each moment counts beside its phase's own:
 * at the loss the root gathered again (2R), or with the last layer
 * prefetched and the head's gradients (R + U + H; offloading, the last
 * layer's shards copied, R + U + ceil(U / N)), less the step's transient
 * beyond the loss's; in the layers a layer's backward, less the step's
 * transient beyond a layer's.  The logits are counted at both: freed
 * before the layers' backward, they cover the residual stream's gradient
 * and what a layer's backward holds beside its largest candidate, which
 * est_transient.c's candidates were measured under (tests/torch/dist.py's
 * fsdp2-lora-offload is 148,656 bytes above the step counted without
 * them).  The meter of dist.py keeps each phase's most apart; each case
 * is met (the final norm's gradient, not made yet at the head's backward,
 * 2h over where the head's moment is the most).  Unphased, every moment
 * beside the activations counts with the step's whole transient.
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
 * fully_shard over gloo.  QLoRA's units are LoRA's with a 4-bit base
 * (lora_unit): torchtune's NF4Tensor gathered whole, bitsandbytes'
 * Linear4bit its packed codes alone, its quant_state whole on every GPU
 * (e->weights_whole); dist.py's fsdp*-qlora-tt and fsdp*-qlora-bnb cases.
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
 *
 * sharding.units ends (torchtune 0.6.1, training/_distributed.py
 * shard_model: fully_shard on the modules named in custom_sharded_layers
 * and on layers.i, each with the recipe's reshard_after_forward, then on
 * the model; the root keeps the final norm alone).  In backward the units
 * run head, layers L - 1 ... 0, embeddings; unit p's gathered bytes S(p)
 * (the head's and the embeddings' V x h x b; a layer's U x b, Ug for
 * LoRA) and its unsharded gradients G(p) (full: S(p); LoRA: a layer's
 * A x a, none for the frozen ends); S and G are 0 outside the units.  The
 * most held, measured by tests/torch/dist.py (fully_shard over gloo, every
 * buffer sampled), is the root's parameters (and for full fine-tuning the
 * final norm's gradient, unsharded until the root's post-backward) plus
 * the most over p of:
 * - during p's backward, its parameters and gradients, the next unit's
 *   prefetched all-gather and the last unit's reduce-scatter input:
 *   S(p) + G(p) + S(p + 1) + G(p - 1) (fsdp2-ends and fsdp4-ends: 4U
 *   between two layers; fsdp2-ends-root: the one layer, the embeddings
 *   prefetched and the head's reduce-scatter input, 2U + 2Vh;
 *   fsdp2-lora-ends: 2Ug + 2A x a);
 * - a unit's copy-out in forward (its pre_forward's wait_for_unshard),
 *   its all-gather's output beside its parameters: 2 x S(p)
 *   (fsdp2-lora-ends-root: an end's, 2Vh, the most where the frozen ends
 *   have no gradients);
 * - offloading, at p's prefetch of the next unit, the next unit's shards
 *   copied to the GPU: S(p) + S(p + 1) + ceil(S(p + 1) / N) + G(p - 1)
 *   (fsdp2-ends-offload-root: U + 1.5Vh + Vh; fsdp4-lora-ends-offload:
 *   2Ug + ceil(Ug / 4) + A x a).
 * Each case of the harness is met exactly, 2 and 4 ranks.  With the layers
 * kept after forward (fsdp4-ends-keep measured 2Vh + 5U + 2h against the
 * root unit's 3Vh + 5U + 2h), on one GPU (fsdp1-ends-offload, half the
 * root unit's figure) and with tied embeddings (not measured: the head is
 * the embeddings' unit) the root unit's figures are taken as the bound.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "est.h"

/* The bytes a unit is gathered in: the base's (16-bit but for fp32). */
static int64_t
gathered_bytes(const struct mf_workload *w)
{
	return w->precision == MF_FP32 ? 4 : 2;
}

/*
 * LoRA's unit: a layer's frozen base as it is gathered, and its adapters
 * (A = ceil(T / L) at a bytes): *ug = the base + A x a, *ad = A x a, the
 * adapters' unsharded gradients.  The base is U x b; QLoRA's is its 4-bit
 * linears and the rest of the layer at b.  torchao's NF4Tensor
 * all-gathers its packed codes, absmax and factors (fully_shard shards
 * each of them, torchao 0.15, dtypes/nf4tensor.py, nf4_split): the
 * linears as e->quant stores them (quant.c counts the code tables too, a
 * kilobyte a linear).  bitsandbytes' Linear4bit gathers its packed codes
 * alone, its quant_state whole on every GPU (e->weights_whole).  -1
 * poisoned.
 */
static void
lora_unit(const struct mf_model *m, const struct mf_workload *w,
    const struct mf_estimate *e, int64_t *ug, int64_t *ad)
{
	int64_t l = m->layers > 0 ? m->layers : 1, u = mf_model_layer_params(m);
	int64_t base = mf_cmul(u, gathered_bytes(w)), q;
	struct mf_quant_sum s;

	*ad = mf_cmul(mf_cdiv_up(mf_model_lora_params(m, w->lora_rank,
	                             mf_est_lora_mask(w)),
	                  l),
	    mf_est_lora_bytes(w));
	if (w->method == MF_QLORA) {
		mf_quant_sum(m, &e->quant, &s);
		q = w->qlora_quantizer == MF_QZ_TORCHAO ? s.bytes : s.packed;
		base = s.pq < 0 || q < 0 ?
		    -1 :
		    mf_cadd(mf_cdiv_up(q, l),
		        mf_cmul(mf_cless(u, s.pq / l), gathered_bytes(w)));
	}
	*ug = base < 0 ? -1 : mf_cadd(base, *ad);
}

int
mf_est_fsdp_phased(const struct mf_workload *w)
{
	return mf_est_fsdp_on(w) && w->reshard_after_forward &&
	    w->shard_gpus > 1 && w->pipeline == 1;
}

/*
 * Phased, the text factors the step's transient out of the moments:
 * "max(moment + loss transient, moment + layer transient, moment -
 * activations - logits) - transient" (phase_end writes the last).
 */

/* A moment of a phase (v bytes) that holds its own transient (own
 * bytes, written sym) where the step counts its whole: what the moment
 * adds to the step; " + sym" after v's text into f.  -1 poisoned. */
static int64_t
beside(const struct mf_estimate *e, int64_t v, int64_t own, const char *sym,
    struct mf_text *f)
{
	mf_text_str(f, " + ");
	mf_text_str(f, sym);
	return mf_cless(v, mf_cless(e->bucket[MF_B_TRANSIENT], own));
}

/* A moment at the loss, beside the loss's transient. */
static int64_t
at_loss(const struct mf_estimate *e, int64_t v, struct mf_text *f)
{
	return beside(e, v, e->loss_transient, "loss transient", f);
}

/* A moment of the layers' forward or backward, beside a layer's
 * transient; unphased, v itself, nothing written. */
static int64_t
in_layers(const struct mf_workload *w, const struct mf_estimate *e, int64_t v,
    struct mf_text *f)
{
	if (!mf_est_fsdp_phased(w))
		return v;
	return beside(e, v, e->layer_transient, "layer transient", f);
}

/* What a moment apart from the activations (v bytes) holds beyond the
 * step's activations, logits and transient, its text after v's into f:
 * 0 when the step holds more; -1 poisoned. */
static int64_t
beyond(const struct mf_workload *w, const struct mf_estimate *e, int64_t v,
    struct mf_text *f)
{
	mf_text_str(f,
	    mf_est_fsdp_phased(w) ? " - activations - logits" :
	                            " - activations - logits - transient");
	return mf_cless(v,
	    mf_cadd(mf_cadd(e->bucket[MF_B_ACTIVATIONS],
	                e->bucket[MF_B_LOGITS]),
	        e->bucket[MF_B_TRANSIENT]));
}

/* The end of the moments' max, and phased the step's transient after. */
static void
phase_end(const struct mf_workload *w, struct mf_text *f)
{
	mf_text_str(f, mf_est_fsdp_phased(w) ? ") - transient" : ")");
}

/* Whether a candidate of v bytes takes the place of the most so far,
 * peak: it holds more, or it is poisoned (-1), which a poisoned most
 * keeps. */
static int
outranks(int64_t v, int64_t peak)
{
	return v < 0 ? peak >= 0 : peak >= 0 && v > peak;
}

/* " x unit" into f, nothing for a unit of 1. */
static void
times(struct mf_text *f, int64_t unit)
{
	if (unit != 1) {
		mf_text_str(f, " x ");
		mf_text_int(f, unit);
	}
}

/* The root re-gathered at the start of backward, resharded after forward
 * (fully_shard told reshard_after_forward, as torchtune and accelerate
 * tell it, reshards the root too): its all-gather's output beside its
 * copy-out, with the activations, 2 x root x unit, its text ", 2 x sym
 * x unit" into f; 0, nothing written, with the layers kept. */
static int64_t
regathered(const struct mf_workload *w, int64_t root, int64_t unit,
    const char *sym, struct mf_text *f)
{
	if (!w->reshard_after_forward)
		return 0;
	mf_text_str(f, ", 2 x ");
	mf_text_str(f, sym);
	times(f, unit);
	return mf_cmul(mf_cmul(2, root), unit);
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

/* Full fine-tuning at the loss, phased: the most of the root gathered
 * again (2R), the root with the last layer prefetched and the head's
 * gradients (R + U + H) and, offloading, the root with the last layer's
 * shards copied (R + U + ceil(U / N)); the text of the most into f. */
static int64_t
full_at_loss(const struct mf_model *m, const struct mf_workload *w,
    int64_t root, int64_t head, struct mf_text *f)
{
	int64_t u = mf_model_layer_params(m);
	int64_t v[3] = { mf_cmul(2, root), mf_cadd(mf_cadd(root, u), head),
		copies(w) ?
		    mf_cadd(mf_cadd(root, u), mf_cdiv_up(u, w->shard_gpus)) :
		    0 };
	static const char *const text[3] = { "2 x root params",
		"(root params + head params + layer params)",
		"(root params + layer params + ceil(layer params / N))" };
	int64_t peak = v[0];
	const char *said = text[0];

	for (int i = 1; i < 3; i++)
		if (outranks(v[i], peak)) {
			peak = v[i];
			said = text[i];
		}
	mf_text_str(f, said);
	return peak;
}

/* Full fine-tuning: max(the moments at the loss, R + H + kU in the
 * layers, 2R + U (+ ceil(U / N) offloading) beyond the step) x bytes,
 * and its text. */
static int64_t
full_buffers(const struct mf_model *m, const struct mf_workload *w,
    int64_t root, const struct mf_estimate *e, struct mf_text *f)
{
	int64_t u = mf_model_layer_params(m), b = gathered_bytes(w);
	int64_t head = 0, k, g, r, held, apart, loss = 0;

	if (!m->no_head)
		head = mf_cadd(mf_cmul(mf_model_vocab_rows(m), m->hidden),
		    m->hidden);
	in_flight(m, &g, &r);
	k = w->reshard_after_forward ? g + r : mf_cadd(m->layers, 1);
	mf_text_str(f, "max(");
	if (mf_est_fsdp_phased(w)) {
		loss = mf_cmul(full_at_loss(m, w, root, head, f), b);
		times(f, b);
		loss = at_loss(e, loss, f);
		mf_text_str(f, ", ");
	}
	held = mf_cmul(mf_cadd(mf_cadd(root, head), mf_cmul(k, u)), b);
	apart = mf_cadd(mf_cmul(2, root), u);
	mf_text_str(f, "(root params + head params + ");
	mf_text_int(f, k);
	mf_text_str(f, " x layer params) x ");
	mf_text_int(f, b);
	held = in_layers(w, e, held, f);
	if (!mf_est_fsdp_phased(w))
		held = mf_max_poisoned(held,
		    regathered(w, root, b, "root params", f));
	mf_text_str(f, ", (2 x root params + layer params");
	if (copies(w)) {
		apart = mf_cadd(apart, mf_cdiv_up(u, w->shard_gpus));
		mf_text_str(f, " + ceil(layer params / N)");
	}
	mf_text_str(f, ") x ");
	mf_text_int(f, b);
	apart = beyond(w, e, mf_cmul(apart, b), f);
	phase_end(w, f);
	return mf_max_poisoned(loss, mf_max_poisoned(held, apart));
}

/* The candidates of LoRA with the layers kept: R + (L + 1) Ug, and
 * R + L x Ug + 2 x A x a. */
static int64_t
lora_kept(const struct mf_model *m, int64_t root, int64_t ug, int64_t ad,
    const char *rb, const char *grads, struct mf_text *f)
{
	term(f, "", 1, rb);
	term(f, " + ", mf_cadd(m->layers, 1), "Ug");
	term(f, ", ", 1, rb);
	term(f, " + ", m->layers, "Ug");
	term(f, " + ", 2, grads);
	return mf_max_poisoned(mf_cadd(root,
	                           mf_cmul(mf_cadd(m->layers, 1), ug)),
	    mf_cadd(mf_cadd(root, mf_cmul(m->layers, ug)), mf_cmul(2, ad)));
}

/* Offloading, at a layer's prefetch in backward: R + 2Ug + ceil(Ug / N)
 * and the last reduce-scatter input from L = 3; its text into f. */
static int64_t
lora_prefetch(const struct mf_model *m, const struct mf_workload *w,
    int64_t root, int64_t ug, int64_t ad, const char *rb, const char *grads,
    struct mf_text *f)
{
	int64_t v = mf_cadd(mf_cadd(root, mf_cmul(2, ug)),
	    mf_cdiv_up(ug, w->shard_gpus));

	term(f, "", 1, rb);
	mf_text_str(f, " + 2 x Ug + ceil(Ug / N)");
	if (m->layers < 3)
		return v;
	term(f, " + ", 1, grads);
	return mf_cadd(v, ad);
}

/* LoRA at the loss, phased: the most of the root gathered again (2R)
 * and the root with the last layer prefetched (R + Ug, and offloading its
 * shards copied, ceil(Ug / N)); the text of the most into f. */
static int64_t
lora_at_loss(const struct mf_workload *w, int64_t root, int64_t ug,
    const char *rb, struct mf_text *f)
{
	int64_t v = mf_cadd(root, ug);

	if (copies(w))
		v = mf_cadd(v, mf_cdiv_up(ug, w->shard_gpus));
	if (!outranks(v, mf_cmul(2, root))) {
		term(f, "", 2, rb);
		return mf_cmul(2, root);
	}
	term(f, "", 1, rb);
	mf_text_str(f, copies(w) ? " + Ug + ceil(Ug / N)" : " + Ug");
	return v;
}

/* LoRA's layers resharded after forward: the most of a layer's
 * backward, R + g x Ug + r x A x a, and offloading a layer's prefetch;
 * the text of the most into f. */
static int64_t
lora_in_layers(const struct mf_model *m, const struct mf_workload *w,
    int64_t root, int64_t ug, int64_t ad, const char *rb, const char *grads,
    struct mf_text *f)
{
	int64_t g, r, held, pre = 0;
	struct mf_text none;

	in_flight(m, &g, &r);
	held = mf_cadd(mf_cadd(root, mf_cmul(g, ug)), mf_cmul(r, ad));
	if (copies(w) && m->layers >= 2) {
		mf_text_init(&none, NULL);
		pre = lora_prefetch(m, w, root, ug, ad, rb, grads, &none);
	}
	if (outranks(pre, held))
		return lora_prefetch(m, w, root, ug, ad, rb, grads, f);
	term(f, "", 1, rb);
	term(f, " + ", g, "Ug");
	term(f, " + ", r, grads);
	return held;
}

/* LoRA: a unit Ug = U x b + A x a (A = ceil(T / L)), its adapter
 * gradients A x a; the root R x b.  max(the moments at the loss, R + g x
 * Ug + r x A x a and the candidates of offloading in the layers, or
 * those of the layers kept; 2R + Ug beyond the step); its text. */
static int64_t
lora_buffers(const struct mf_model *m, const struct mf_workload *w,
    int64_t root, const struct mf_estimate *e, struct mf_text *f)
{
	int64_t b = gathered_bytes(w), a = mf_est_lora_bytes(w), held;
	int64_t ad, ug, apart, loss = 0;
	char rb[32], grads[32];

	lora_unit(m, w, e, &ug, &ad);

	snprintf(rb, sizeof(rb), "root params x %lld", (long long)b);
	snprintf(grads, sizeof(grads), "ceil(T / L) x %lld", (long long)a);
	root = mf_cmul(root, b);
	mf_text_str(f, "max(");
	if (mf_est_fsdp_phased(w)) {
		loss = at_loss(e, lora_at_loss(w, root, ug, rb, f), f);
		mf_text_str(f, ", ");
	}
	if (!w->reshard_after_forward)
		held = lora_kept(m, root, ug, ad, rb, grads, f);
	else
		held = lora_in_layers(m, w, root, ug, ad, rb, grads, f);
	held = in_layers(w, e, held, f);
	if (!mf_est_fsdp_phased(w))
		held = mf_max_poisoned(held, regathered(w, root, 1, rb, f));
	apart = mf_cadd(mf_cmul(2, root), ug);
	term(f, ", ", 2, rb);
	mf_text_str(f, " + Ug");
	if (copies(w)) {
		apart = mf_cadd(apart, mf_cdiv_up(ug, w->shard_gpus));
		mf_text_str(f, " + ceil(Ug / N)");
	}
	apart = beyond(w, e, apart, f);
	phase_end(w, f);
	return mf_max_poisoned(loss, mf_max_poisoned(held, apart));
}

/*
 * sharding.units ends.  A moment's bytes as counts of its terms: an end
 * (the head or the embeddings, as gathered), a layer's unit, a layer's
 * unsharded gradients (LoRA's adapters'; full fine-tuning counts them as
 * a unit), and the host's shards of an end or of a layer copied to the GPU
 * (ceil(S / N)).
 */
enum { T_END, T_UNIT, T_GRADS, T_COPY_END, T_COPY_UNIT, T_COUNT };
enum { K_NONE, K_END, K_LAYER };

struct moment {
	int n[T_COUNT];
};

/* The kind of the unit at position p in backward order: 0 the head, 1 to
 * L the layers, L + 1 the embeddings. */
static int
kind_at(const struct mf_model *m, int64_t p)
{
	if (p == 0 || p == m->layers + 1)
		return K_END;
	return p > 0 && p <= m->layers ? K_LAYER : K_NONE;
}

/* The unit of kind k gathered, into t. */
static void
add_unit(struct moment *t, int k)
{
	int i = k == K_END ? T_END : T_UNIT;

	assert(i < T_COUNT);
	if (k != K_NONE)
		t->n[i]++;
}

/* The unit of kind k's unsharded gradients (LoRA's frozen ends have
 * none), into t. */
static void
add_grads(struct moment *t, int k, int full)
{
	int i = full ? T_UNIT : T_GRADS;

	assert(i < T_COUNT);
	if (k == K_LAYER)
		t->n[i]++;
	else if (k == K_END && full)
		t->n[T_END]++;
}

/* The unit of kind k's shards copied from the host, into t. */
static void
add_copy(struct moment *t, int k)
{
	int i = k == K_END ? T_COPY_END : T_COPY_UNIT;

	assert(i < T_COUNT);
	if (k != K_NONE)
		t->n[i]++;
}

/* Whether a's bytes are never above b's: each count no more than b's,
 * a copy of the shards counted as the whole unit (ceil(S / N) <= S for
 * N >= 2) against b's terms less its copies. */
static int
below(const struct moment *a, const struct moment *b)
{
	int up[T_COUNT];

	memcpy(up, a->n, sizeof(up));
	up[T_END] += up[T_COPY_END];
	up[T_UNIT] += up[T_COPY_UNIT];
	return up[T_END] <= b->n[T_END] && up[T_UNIT] <= b->n[T_UNIT] &&
	    up[T_GRADS] <= b->n[T_GRADS];
}

/* t among the n moments of ms unless one of them holds as much. */
static int
keep(struct moment *ms, int n, const struct moment *t)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		if (below(t, &ms[i]) ||
		    memcmp(t->n, ms[i].n, sizeof(t->n)) == 0)
			return n;
	/* Those t holds as much as, out. */
	for (int i = 0; i < n; i++)
		if (!below(&ms[i], t))
			ms[k++] = ms[i];
	ms[k++] = *t;
	return k;
}

/* The moments of unit p (est_fsdp.c's header), added to the n of ms. */
static int
moments_at(const struct mf_model *m, const struct mf_workload *w, int64_t p,
    struct moment *ms, int n)
{
	int full = w->method == MF_FULL, k = kind_at(m, p);
	int next = kind_at(m, p + 1), last = kind_at(m, p - 1);
	struct moment a = { { 0 } }, c = { { 0 } }, d = { { 0 } };

	add_unit(&a, k);
	add_grads(&a, k, full);
	add_unit(&a, next);
	add_grads(&a, last, full);
	n = keep(ms, n, &a);
	add_unit(&d, k);
	add_unit(&d, k);
	n = keep(ms, n, &d);
	if (!copies(w) || next == K_NONE)
		return n;
	add_unit(&c, k);
	add_unit(&c, next);
	add_copy(&c, next);
	add_grads(&c, last, full);
	return keep(ms, n, &c);
}

/* n x sym into f, " + " before it but for the first term (*first). */
static void
term_of(struct mf_text *f, int *first, int n, const char *sym)
{
	if (n == 0)
		return;
	term(f, *first ? "" : " + ", n, sym);
	*first = 0;
}

/* A moment's bytes, each term valued by vals. */
static int64_t
moment_bytes(const struct moment *t, const int64_t *vals)
{
	int64_t v = 0;

	for (int i = 0; i < T_COUNT; i++)
		v = mf_cadd(v, mf_cmul(t->n[i], vals[i]));
	return v;
}

/* A moment's text into f, each term's symbol in syms, " x unit" after
 * (between parentheses where it has terms of two kinds) but for a unit
 * of 1. */
static void
moment_text(const struct moment *t, const char *const *syms, int64_t unit,
    struct mf_text *f)
{
	int first = 1, kinds = 0;

	for (int i = 0; i < T_COUNT; i++)
		kinds += t->n[i] != 0;
	if (unit != 1 && kinds > 1)
		mf_text_str(f, "(");
	for (int i = 0; i < T_COUNT; i++)
		term_of(f, &first, t->n[i], syms[i]);
	if (unit != 1 && kinds > 1)
		mf_text_str(f, ")");
	times(f, unit);
}

/* The moments of sharding.units ends, by the phase of the step they
 * fall in (all of them phased): the head's, at the loss; the layers',
 * beside a layer's forward or backward; the embeddings', before the
 * first layer's forward and after its backward (apart). */
struct ends {
	struct moment loss[4], layers[16], apart[4];
	int n_loss, n_layers, n_apart;
};

/* The positions whose moments differ: the head; the last layer, one
 * between two layers, the first; the embeddings. */
static void
ends_moments(const struct mf_model *m, const struct mf_workload *w,
    struct ends *t)
{
	const int64_t at[] = { 1, 2, m->layers };

	t->n_loss = moments_at(m, w, 0, t->loss, 0);
	t->n_layers = 0;
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		if (at[i] <= m->layers)
			t->n_layers =
			    moments_at(m, w, at[i], t->layers, t->n_layers);
	t->n_apart = moments_at(m, w, m->layers + 1, t->apart, 0);
}

/* The most of the n moments of ms x unit, valued by vals, and the text
 * of the one that holds it with syms. */
static int64_t
ends_phase(const struct moment *ms, int n, const int64_t *vals,
    const char *const *syms, int64_t unit, struct mf_text *f)
{
	int most = 0;
	int64_t peak = moment_bytes(&ms[0], vals), v;

	for (int i = 1; i < n; i++) {
		v = moment_bytes(&ms[i], vals);
		if (outranks(v, peak)) {
			peak = v;
			most = i;
		}
	}
	moment_text(&ms[most], syms, unit, f);
	return mf_cmul(peak, unit);
}

/* max(the moments at the loss, in the layers and apart, each beyond what
 * the step counts there), each term valued by vals, written with syms
 * (" x unit" after each but for a unit of 1). */
static int64_t
ends_max(const struct mf_workload *w, const struct ends *t, const int64_t *vals,
    const char *const *syms, int64_t unit, const struct mf_estimate *e,
    struct mf_text *f)
{
	int64_t loss, held, apart;

	mf_text_str(f, "max(");
	loss = ends_phase(t->loss, t->n_loss, vals, syms, unit, f);
	loss = at_loss(e, loss, f);
	mf_text_str(f, ", ");
	held = ends_phase(t->layers, t->n_layers, vals, syms, unit, f);
	held = in_layers(w, e, held, f);
	mf_text_str(f, ", ");
	apart = ends_phase(t->apart, t->n_apart, vals, syms, unit, f);
	apart = beyond(w, e, apart, f);
	phase_end(w, f);
	return mf_max_poisoned(loss, mf_max_poisoned(held, apart));
}

/* Full fine-tuning, units ends: the final norm and its gradient, and the
 * most of the moments, in elements, x b. */
static int64_t
ends_full(const struct mf_model *m, const struct mf_workload *w, int64_t norm,
    const struct mf_estimate *e, struct mf_text *f)
{
	static const char *const syms[T_COUNT] = { "Vh", "layer params", "",
		"ceil(Vh / N)", "ceil(layer params / N)" };
	int64_t b = gathered_bytes(w), u = mf_model_layer_params(m);
	int64_t vh = mf_cmul(mf_model_vocab_rows(m), m->hidden);
	int64_t vals[T_COUNT] = { vh, u, 0, mf_cdiv_up(vh, w->shard_gpus),
		mf_cdiv_up(u, w->shard_gpus) };
	struct ends t;

	ends_moments(m, w, &t);
	mf_text_str(f, "2 x (root params - 2Vh) x ");
	mf_text_int(f, b);
	mf_text_str(f, " + ");
	return mf_cadd(mf_cmul(mf_cmul(2, norm), b),
	    ends_max(w, &t, vals, syms, b, e, f));
}

/* LoRA, units ends: the final norm, and the most of the moments in
 * bytes: an end V x h x b, a unit Ug, its adapters' gradients
 * ceil(T / L) x a. */
static int64_t
ends_lora(const struct mf_model *m, const struct mf_workload *w, int64_t norm,
    const struct mf_estimate *e, struct mf_text *f)
{
	int64_t b = gathered_bytes(w), a = mf_est_lora_bytes(w), vh, ug, ad;
	char end[32], grads[32], copy_end[40];
	const char *syms[T_COUNT] = { end, "Ug", grads, copy_end,
		"ceil(Ug / N)" };
	struct ends t;

	ends_moments(m, w, &t);
	vh = mf_cmul(mf_cmul(mf_model_vocab_rows(m), m->hidden), b);
	lora_unit(m, w, e, &ug, &ad);
	int64_t vals[T_COUNT] = { vh, ug, ad, mf_cdiv_up(vh, w->shard_gpus),
		mf_cdiv_up(ug, w->shard_gpus) };

	snprintf(end, sizeof(end), "Vh x %lld", (long long)b);
	snprintf(grads, sizeof(grads), "ceil(T / L) x %lld", (long long)a);
	snprintf(copy_end, sizeof(copy_end), "ceil(Vh x %lld / N)",
	    (long long)b);
	mf_text_str(f, "(root params - 2Vh) x ");
	mf_text_int(f, b);
	mf_text_str(f, " + ");
	return mf_cadd(mf_cmul(norm, b), ends_max(w, &t, vals, syms, 1, e, f));
}

/* Whether sharding.units ends is modelled as its own: several GPUs, the
 * layers resharded after forward, an untied head (est_fsdp.c's header);
 * otherwise the root unit's figures are its bound. */
static int
ends_modelled(const struct mf_model *m, const struct mf_workload *w)
{
	return w->shard_units == MF_UNITS_ENDS && w->shard_gpus > 1 &&
	    w->reshard_after_forward && w->tensor == 1 && w->pipeline == 1 &&
	    !m->tied_embeddings && !m->no_embed && !m->no_head;
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
	if (ends_modelled(m, w)) {
		/* The root less the ends: the final norm. */
		root -= mf_cmul(2, mf_cmul(mf_model_vocab_rows(m), m->hidden));
		e->bucket[MF_B_SHARDING] = w->method == MF_FULL ?
		    ends_full(m, w, root, e, &f) :
		    ends_lora(m, w, root, e, &f);
		return;
	}
	e->bucket[MF_B_SHARDING] = w->method == MF_FULL ?
	    full_buffers(m, w, root, e, &f) :
	    lora_buffers(m, w, root, e, &f);
}
