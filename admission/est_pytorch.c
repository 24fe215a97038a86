/*
 * est_pytorch.c: the estimator pytorch, the default (design 13): it
 * counts, tensor by tensor, what PyTorch >= 2.0 keeps for backward in the
 * block the config's model_type names, and the largest short-lived
 * allocation of the step (transient), beside the shared state.
 *
 * Every coefficient is a measured fact: tests/torch/measure.py builds
 * small models of each block and measures the bytes saved for backward
 * (saved_tensors_hooks, distinct storages, parameters out) and the peak
 * of a whole step, and fails when these functions are off by more than
 * 2% or below the peak (make torch; docs/estimators.md has the table).
 */
#include <string.h>

#include "est.h"

/*
 * Bytes per token, per layer, kept for backward by a training forward
 * (symbols: e = 2 for bf16/fp16, 4 for fp32, the activations' dtype; ad
 * = a x d, kvd = kv x d).  Measured by tests/torch/measure.py (make
 * torch; docs/estimators.md's table) on every shipped block, bf16 and fp32,
 * fused and eager; each term is one tensor the autograd graph holds.
 */
struct shapes {
	int64_t h, a, kv, d, ad, kvd, I, s;
	int64_t e;   /* activation bytes: 2, or 4 for fp32 */
	int lora;    /* LoRA or QLoRA: a frozen base with adapters */
	int all;     /* LoRA targets all-linear, not attention only */
	int64_t r;   /* LoRA rank */
	int64_t per; /* per layer, per token (terms) */
};

/*
 * RMSNorm upcasts its input: x.to(float32) is kept (pow and mul save it:
 * 4h, which with fp32 activations is the input itself), and the rsqrt
 * of the variance (4 bytes a token).  Llama's norm multiplies the weight
 * by the normalised x cast back (kept for the weight's gradient: eh) and
 * its output is a new tensor the next projections keep (eh).  Gemma's
 * multiplies in fp32 by (1 + w): it keeps the normalised x in fp32 (4h)
 * and (1 + w) itself (4h bytes a norm, not a token: see gemma_norms_const)
 * and casts the product back, which the next projections keep (eh); the
 * norms after attention and MLP feed the residual add, which keeps
 * nothing.  The mean of x^2 saves nothing in torch >= 2 (torch 1.13's
 * mean saves its input: the harness takes it as sum / n).
 */
static void
norm_terms(const struct mf_model *m, const struct shapes *x, struct mf_terms *t)
{
	int64_t h = m->hidden, e = x->e, pre = 2, post = m->norms_per_layer - 2;

	mf_term(t, m->norms_per_layer * 4, "", 1);
	if (x->lora) {
		/* A frozen weight needs neither the normalised x nor, as the
		 * projections are frozen too, the output (see lora_terms). */
		mf_term(t, m->norms_per_layer * 4, "h", h);
		return;
	}
	if (m->block != MF_BLOCK_GEMMA) {
		mf_term(t, m->norms_per_layer * (4 + 2 * e), "h", h);
		return;
	}
	mf_term(t, pre * (8 + e) + post * 8, "h", h);
}

/* Gemma's (1 + w) in fp32, kept by each norm's multiply: 4h a norm. */
static int64_t
gemma_norms_const(const struct mf_model *m)
{
	return m->block == MF_BLOCK_GEMMA ? 4 * m->norms_per_layer : 0;
}

/*
 * Attention.  Fused (sdpa's flash kernel, flash-attn): the kernel keeps q
 * and k after RoPE (ad, kvd), v as projected (kvd; Phi-3's v is a view of
 * its one qkv projection, which it keeps whole: ad + 2kvd), the output
 * (ad, which o_proj keeps too) and the logsumexp in fp32 (4a).
 * Eager: q after RoPE (ad), the repeated k and v (ad each), the scores'
 * softmax in fp32 (4as) and, in 16 bits, its cast back (eas) that
 * multiplies v, and the output made contiguous for o_proj (ad); Gemma-2's
 * soft-capping keeps its tanh (eas).  torch.matmul folds batch and heads
 * into one dimension: with b = 1 that is a view, so an unrepeated v (kv =
 * a) is kept as projected (Phi-3: its qkv) and, with kv = 1, the
 * repeated k and v are stride-0 views of kvd; otherwise it copies (ad).
 */
static void
attention_terms(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_terms *t)
{
	int64_t e = x->e, one = w->micro_batch == 1;
	int phi3 = m->block == MF_BLOCK_PHI3;

	/* q; and the output: the kernel's, or eager's copy that o_proj
	 * keeps for its weight's gradient (a frozen o_proj does not). */
	mf_term(t, w->attention == MF_EAGER && x->lora ? e : 2 * e, "ad",
	    x->ad);
	if (w->attention != MF_EAGER) {
		mf_term(t, e, "kvd", x->kvd);
		if (phi3)
			mf_term(t, e, "ad", x->ad);
		mf_term(t, phi3 ? 2 * e : e, "kvd", x->kvd);
		mf_term(t, 4, "a", x->a);
		return;
	}
	if (one && x->kv == 1)
		mf_term(t, e, "kvd", x->kvd);
	else
		mf_term(t, e, "ad", x->ad);
	if (one && (x->kv == x->a || x->kv == 1)) {
		if (phi3)
			mf_term(t, e, "ad", x->ad);
		mf_term(t, phi3 ? 2 * e : e, "kvd", x->kvd);
	} else {
		mf_term(t, e, "ad", x->ad);
	}
	mf_term(t, 4 + (e == 2 ? e : 0) + (m->attn_softcap ? e : 0), "as",
	    mf_cmul(x->a, x->s));
}

/*
 * MLP.  Dense SwiGLU / GeGLU: the gate projection's output (act's input),
 * act's output and the up projection's output (the product keeps both),
 * and the product (down_proj's input): 4eI.  Phi-3's gate_up is one
 * tensor of 2I, chunked: the same bytes.
 * Mixture of experts, per token: the router's softmax in fp32 (4E) and
 * top-k's indices (int64, 8k); Mixtral (and Qwen2-MoE with
 * norm_topk_prob) renormalises the top-k weights in place, which keeps a
 * copy of them and their sum (4k + 4).  Each of the
 * k routed copies of a token keeps its gathered input (eh), its expert's
 * 4e x Ie, the expert's output (eh) and its routing weight (e) that the
 * product keeps, the product that index_add_ keeps (eh), and the int64
 * positions torch.where gives (16).  Qwen2-MoE's shared expert keeps 4e
 * x Is, its sigmoid gate (e) and its output (eh).
 */
static void
mlp_terms(const struct mf_model *m, const struct shapes *x, struct mf_terms *t)
{
	int64_t e = x->e, k = m->experts_per_tok;

	/* A frozen down_proj keeps no copy of its input, nor a frozen
	 * expert's gate and up of theirs (LoRA's copies: lora_terms). */
	int64_t keep = x->lora ? 3 : 4;

	if (m->experts == 0) {
		mf_term(t, keep * e, "I", x->I);
		return;
	}
	mf_term(t, (keep - 1) * e, "kh", mf_cmul(k, x->h));
	mf_term(t, keep * e, "kIe", mf_cmul(k, mf_model_expert_width(m)));
	mf_term(t, 4, "E", m->experts);
	mf_term(t, e + 16 + 8, "k", k);
	if (m->renorm_topk) {
		mf_term(t, 4, "k", k);
		mf_term(t, 4, "", 1);
	}
	if (m->shared_intermediate > 0) {
		mf_term(t, keep * e, "Is", m->shared_intermediate);
		mf_term(t, e, "h", x->h);
		mf_term(t, e, "", 1);
	}
}

/*
 * LoRA's adapters, as PEFT runs them: the frozen base keeps nothing of
 * its input (a frozen weight needs no gradient; QLoRA's 4-bit matmul in
 * bitsandbytes keeps only the quantised weight), and each adapter casts
 * its input to its fp32 weights' dtype, a copy that lora_A keeps (4 x
 * in), and lora_B keeps lora_A's output (4r).  With 16-bit activations
 * every targeted linear makes its own copy: q, k and v three of the same
 * input (Phi-3's one qkv_proj, one), gate and up two (Phi-3's gate_up,
 * one).  With fp32 ones the cast is the input itself, shared: q, k, v's
 * and gate, up's once; o_proj's is the fused kernel's output, already
 * kept (eager's contiguous copy is kept only here).  all-linear also
 * adds each routed expert's copies (per routed token: gate and up's, and
 * down's 4 x Ie), the router's and Qwen2-MoE's shared expert's and its
 * gate's.  Measured by tests/torch/measure.py (its LoRA cases).
 */
static void
lora_terms(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_terms *t)
{
	int sixteen = x->e == 2, phi3 = m->block == MF_BLOCK_PHI3;
	int64_t k = m->experts_per_tok, n = phi3 ? 2 : 4;

	mf_term(t, sixteen && !phi3 ? 12 : 4, "h", x->h);
	if (sixteen || w->attention == MF_EAGER)
		mf_term(t, 4, "ad", x->ad);
	if (!x->all) {
		mf_term(t, 4 * n, "r", x->r);
		return;
	}
	if (m->experts == 0) {
		mf_term(t, sixteen && !phi3 ? 8 : 4, "h", x->h);
		mf_term(t, 4, "I", x->I);
		n += phi3 ? 2 : 3;
	} else {
		mf_term(t, 4, "h", x->h); /* the router's */
		mf_term(t, sixteen ? 8 : 4, "kh", mf_cmul(k, x->h));
		mf_term(t, 4, "kIe", mf_cmul(k, mf_model_expert_width(m)));
		mf_term(t, 12, "kr", mf_cmul(k, x->r));
		n += 1;
	}
	if (m->experts > 0 && m->shared_intermediate > 0) {
		mf_term(t, sixteen ? 12 : 0, "h", x->h);
		mf_term(t, 4, "Is", m->shared_intermediate);
		n += 4;
	}
	mf_term(t, 4 * n, "r", x->r);
}

static void
layer_terms(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_terms *t)
{
	memset(t, 0, sizeof(*t));
	norm_terms(m, x, t);
	attention_terms(m, w, x, t);
	mlp_terms(m, x, t);
	if (x->lora)
		lora_terms(m, w, x, t);
}

/*
 * activations = s x b x (L x layer + 2ed) (+ L x Gemma's (1 + w)): RoPE's
 * cos and sin, made once a forward in the activations' dtype, are kept by
 * every layer's q and k (2ed a token).  Checkpointing (non-reentrant, a
 * layer at a time) keeps each layer's input (eh) and the cos and sin it
 * was given, and backward recomputes one layer at a time, whose
 * activations are alive while it runs through it: s x b x (L x eh + 2ed
 * + layer).
 */
static void
torch_activations(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_estimate *e)
{
	int64_t sb, per, gconst, bytes;
	struct mf_terms t;
	struct mf_text f;

	layer_terms(m, w, x, &t);
	sb = mf_cmul(w->seq_len, w->micro_batch);
	per = mf_terms_bytes(&t);
	gconst = mf_cmul(gemma_norms_const(m), x->h);
	mf_text_init(&f, e->formula[MF_B_ACTIVATIONS]);
	mf_text_str(&f, "s x b x (");
	if (w->checkpointing) {
		mf_text_str(&f, "L x ");
		mf_text_int(&f, x->e);
		mf_text_str(&f, "h + ");
		mf_text_int(&f, 2 * x->e);
		mf_text_str(&f, "d + ");
		mf_text_terms(&f, &t);
		mf_text_str(&f, ")");
		per = mf_cadd(mf_cadd(mf_cmul(m->layers, mf_cmul(x->e, x->h)),
		                  mf_cmul(2 * x->e, x->d)),
		    per);
		bytes = mf_cadd(mf_cmul(sb, per), gconst);
	} else {
		mf_text_str(&f, "L x (");
		mf_text_terms(&f, &t);
		mf_text_str(&f, ") + ");
		mf_text_int(&f, 2 * x->e);
		mf_text_str(&f, "d");
		per = mf_cadd(mf_cmul(m->layers, per), mf_cmul(2 * x->e, x->d));
		if (x->lora && per >= 4 * x->h + 4) {
			/*
			 * The frozen embeddings need no gradient, so the
			 * first layer's first norm keeps nothing.
			 */
			mf_text_str(&f, " - 4h - 4");
			per -= 4 * x->h + 4;
		}
		mf_text_str(&f, ")");
		bytes = mf_cadd(mf_cmul(sb, per), mf_cmul(m->layers, gconst));
		if (gconst > 0)
			mf_text_str(&f, " + L x ");
	}
	if (gconst > 0) {
		if (w->checkpointing)
			mf_text_str(&f, " + ");
		mf_text_int(&f, gemma_norms_const(m));
		mf_text_str(&f, "h");
		if (x->lora && !w->checkpointing && bytes >= 4 * x->h) {
			mf_text_str(&f, " - 4h");
			bytes -= 4 * x->h;
		}
	}
	e->bucket[MF_B_ACTIVATIONS] = bytes;
}

/*
 * logits: what a forward keeps outside the layers, per token: the final
 * norm (as a layer's first norm), the fp32 log-softmax of the logits
 * that cross_entropy keeps (4V; logits.float() itself keeps nothing),
 * the int64 token ids the embedding keeps and the labels nll_loss keeps
 * (16); Gemma-2's final soft-capping keeps its tanh (eV).
 */
static void
torch_logits(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_estimate *e)
{
	int gemma = m->block == MF_BLOCK_GEMMA;
	int64_t sb, bytes;
	struct mf_terms t;
	struct mf_text f;

	memset(&t, 0, sizeof(t));
	if (x->lora)
		/* A frozen norm weight and lm_head: x in fp32 only. */
		mf_term(&t, 4, "h", x->h);
	else
		mf_term(&t, gemma ? 8 + x->e : 4 + 2 * x->e, "h", x->h);
	mf_term(&t, m->final_softcap ? 4 + x->e : 4, "V", m->vocab);
	/* rsqrt; labels; token ids, which frozen embeddings do not keep. */
	mf_term(&t, 4 + 8 + (x->lora ? 0 : 8), "", 1);
	sb = mf_cmul(w->seq_len, w->micro_batch);
	bytes = mf_cmul(sb, mf_terms_bytes(&t));
	mf_text_init(&f, e->formula[MF_B_LOGITS]);
	mf_text_str(&f, "s x b x (");
	mf_text_terms(&f, &t);
	mf_text_str(&f, ")");
	if (gemma) {
		/* The final norm's (1 + w) in fp32. */
		mf_text_str(&f, " + 4h");
		bytes = mf_cadd(bytes, mf_cmul(4, x->h));
	}
	e->bucket[MF_B_LOGITS] = bytes;
}

/*
 * Bytes per element of the largest parameter that the optimizer step
 * holds as temporaries, the step written as a loop over parameters (the
 * foreach implementation holds temporaries the size of the whole state
 * instead): the fp32 copy of a 16-bit gradient (4) and AdamW's
 * denominator sqrt(v) + eps (4).  8-bit Adam updates in blocks inside
 * its kernel and SGD keeps no denominator.  LoRA's adapters are fp32.
 */
static int64_t
step_temp_bytes(const struct mf_workload *w)
{
	int sixteen = w->precision != MF_FP32 && w->method == MF_FULL;

	return (sixteen ? 4 : 0) + (w->optimizer == MF_ADAMW ? 4 : 0);
}

/*
 * transient: the largest short-lived allocation of a step, alive at the
 * step's peak on top of what the other buckets hold; the four below
 * never overlap, and the bucket is the largest.
 * - The loss's backward: nll_loss's gradient and log_softmax's, fp32 s x
 *   b x V each, alive while the saved log-softmax is (8 x s x b x V).
 * - Eager attention's backward, in each layer: softmax's backward holds
 *   its incoming gradient in fp32 and its result in the scores' dtype, a
 *   x s x s a sequence each, alive with everything saved ((4 + e) x a x
 *   s x s x b; measured at s = 512 by tests/torch/measure.py, where it is
 *   the peak).  The fused kernels work in tiles and hold no such thing.
 * - The MLP's backward, in each layer: the gradient of the product and
 *   the two it makes, for act's output and up's, e x I each, alive with
 *   everything saved (3e x I x s x b; with experts, the widest expert,
 *   which at most every token goes to).  Measured where it is the peak:
 *   a small vocabulary and LoRA, which keeps no gradient of the base
 *   weights to leave room (tests/torch/measure.py, CHECK[7]).
 * - The optimizer step: the temporaries of the largest parameter (Pmax,
 *   see step_temp_bytes); FSDP over N GPUs steps a 1/N shard of it.
 */
static void
torch_transient(const struct mf_model *m, const struct mf_workload *w,
    int64_t ebytes, struct mf_estimate *e)
{
	int64_t sb, loss, attn = 0, mlp, width, step, pmax;
	int64_t n = step_temp_bytes(w);
	const char *wsym = "I";
	struct mf_text f;

	sb = mf_cmul(w->seq_len, w->micro_batch);
	/* A pipeline stage without the head computes no loss. */
	loss = m->no_head ? 0 : mf_cmul(sb, mf_cmul(8, m->vocab));
	width = m->intermediate;
	if (m->experts > 0) {
		width = mf_model_expert_width(m);
		wsym = "Ie";
		if (m->shared_intermediate > width) {
			width = m->shared_intermediate;
			wsym = "Is";
		}
	}
	mlp = mf_cmul(sb, mf_cmul(3 * ebytes, width));
	pmax = w->method == MF_FULL ?
	    mf_model_largest_param(m) :
	    mf_model_lora_largest(m, w->lora_rank, w->lora_targets);
	step = mf_cmul(pmax, n);
	mf_text_init(&f, e->formula[MF_B_TRANSIENT]);
	mf_text_str(&f, "max(s x b x V x 8, ");
	if (w->attention == MF_EAGER) {
		attn = mf_cmul(mf_cmul(sb, 4 + ebytes),
		    mf_cmul(m->heads, w->seq_len));
		mf_text_str(&f, "s x b x ");
		mf_text_int(&f, 4 + ebytes);
		mf_text_str(&f, "as, ");
	}
	mf_text_str(&f, "s x b x ");
	mf_text_int(&f, 3 * ebytes);
	mf_text_str(&f, wsym);
	mf_text_str(&f, ", ");
	/* Pmax: the largest trainable tensor (with LoRA, an adapter). */
	mf_text_str(&f, "Pmax x ");
	mf_text_int(&f, n);
	if (w->method == MF_FULL && w->shard_gpus > 1) {
		/* FSDP steps each GPU's shard of every parameter. */
		step = mf_cdiv_up(step, w->shard_gpus);
		mf_text_str(&f, " / N");
	}
	mf_text_str(&f, ")");
	e->bucket[MF_B_TRANSIENT] = mf_max_poisoned(mf_max_poisoned(loss, attn),
	    mf_max_poisoned(mlp, step));
}

static void
torch_training(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	struct shapes x;

	mf_est_state(m, w, e);
	x.h = m->hidden;
	x.a = m->heads;
	x.kv = m->kv_heads;
	x.d = m->head_dim;
	x.ad = mf_cmul(m->heads, m->head_dim);
	x.kvd = mf_cmul(m->kv_heads, m->head_dim);
	x.I = m->intermediate;
	x.s = w->seq_len;
	x.e = w->precision == MF_FP32 ? 4 : 2;
	x.lora = w->method != MF_FULL;
	x.all = w->lora_targets == MF_LORA_ALL_LINEAR;
	x.r = w->lora_rank;
	torch_activations(m, w, &x, e);
	torch_logits(m, w, &x, e);
	torch_transient(m, w, x.e, e);
}

const struct mf_est_ops mf_est_pytorch = { "pytorch", torch_training };
