/*
 * est_pytorch.c: the estimator pytorch, the default (design 13): it
 * counts, tensor by tensor, what PyTorch >= 2.0 keeps for backward in the
 * block the config's model_type names, beside the shared state; the
 * largest short-lived allocation of the step (transient) is
 * est_transient.c's.
 *
 * Every coefficient is a measured fact: tests/torch/measure.py builds
 * small models of each architecture with transformers' own modules
 * (PyTorch 2.13 on the CPU; LoRA by PEFT) and measures the bytes saved
 * for backward (saved_tensors_hooks, distinct storages, parameters out)
 * and the peak of a whole step, and fails when these functions are off by
 * more than 2% or below the peak (make torch; docs/estimators.md has the
 * table).  Where a GPU's kernels keep something else than the CPU's, the
 * comment says which this models and why.
 */
#include <assert.h>
#include <string.h>

#include "est.h"
#include "../model/quant.h"

/*
 * Bytes per token, per layer, kept for backward by a training forward
 * (symbols: e = 2 for bf16/fp16, 4 for fp32, the activations' dtype; ad
 * = a x d, kvd = kv x d).  Measured by tests/torch/measure.py (make
 * torch; docs/estimators.md's table) on every shipped block, bf16 and fp32,
 * fused and eager; each term is one tensor the autograd graph holds.
 */
struct shapes {
	int64_t h, a, kv, d, ad, kvd, I, s;
	int64_t e;     /* activation bytes: 2, or 4 for fp32 */
	int64_t eh;    /* the residual stream's and RoPE's: 4 under autocast */
	int mixed;     /* autocast's norms (mixed_norm_terms) */
	int lora;      /* LoRA or QLoRA: a frozen base with adapters */
	int compiled;  /* compile: each layer compiled (norm_terms) */
	int kept_in;   /* QLoRA's 4-bit matmuls keep their inputs
	                  (kept_input_terms) */
	int drop;      /* LoRA's input dropout (lora_terms) */
	unsigned mask; /* the modules LoRA reaches (mf_est_lora_mask) */
	unsigned own;  /* of those, a layer's own (mf_est_lora_own) */
	int64_t ab;    /* an adapter's element bytes (lora.dtype) */
	int64_t r;     /* LoRA rank */
	int64_t per;   /* per layer, per token (terms) */
	int64_t sp;    /* sequence parallel: the GPUs a sequence's norms and
	                  residual stream are divided over; 1: none */
	int64_t vl;    /* the logits' width: V, or a GPU's vocabulary rows
	                  under loss parallel */
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
 * nothing.  The mean of x^2 saves nothing (torch >= 2).
 */
/*
 * Under autocast (bf16-mixed on an fp32 model) the residual stream and
 * the norms stay fp32: a norm keeps its input and the normalised x (8h)
 * and the rsqrt (4), and each linear it feeds casts its output to 16 bits
 * on its own, a copy the linear keeps (2h each: Llama's q, k, v and gate,
 * up; Phi-3's qkv and gate_up); the rest of the layer works in 16 bits as
 * under bf16 (the SDPA kernel's inputs are cast, eager's fp32 softmax is
 * cast for its matmul).  Measured on transformers' Llama and Phi-3 under
 * torch.autocast (tests/torch/measure.py, bf16-mixed).
 */
static void
mixed_norm_terms(const struct mf_model *m, struct mf_terms *t,
    struct mf_terms *own)
{
	int phi3 = m->block == MF_BLOCK_PHI3;

	mf_term(own, 2 * 4, "", 1);
	mf_term(own, 2 * 8, "h", m->hidden);
	mf_term(t, 2 * (phi3 ? 2 : 5), "h", m->hidden);
}

/*
 * What a norm keeps of its own (its fp32 input, the rsqrt, the normalised
 * x; Gemma's products in fp32) goes to own, the copies its output is kept
 * as by what it feeds to t: under sequence parallel a GPU's norms see its
 * 1 / T of a sequence, and their output is gathered whole before the
 * projections (torchtitan's plan: SequenceParallel on every norm,
 * PrepareModuleInput; tests/torch/dist.py).  Without it own is t.
 */
static void
norm_terms(const struct mf_model *m, const struct shapes *x, struct mf_terms *t,
    struct mf_terms *own)
{
	int64_t h = m->hidden, e = x->e, pre = 2, post = m->norms_per_layer - 2;

	if (x->mixed) {
		mixed_norm_terms(m, t, own);
		return;
	}
	mf_term(own, m->norms_per_layer * 4, "", 1);
	if (x->compiled && x->lora) {
		/* Compiled over a frozen base: each norm keeps its input
		 * (eh), the rest recomputed; what an adapter keeps of its
		 * output is lora_terms' (tests/torch/compile_lora.py). */
		mf_term(own, m->norms_per_layer * e, "h", h);
		return;
	}
	if (x->compiled) {
		/* Each layer compiled (compile_model; Llama's block): 2e h
		 * a norm, the rest recomputed in backward, measured with
		 * inductor (tests/torch/compile.py, docs/estimators.md).
		 */
		mf_term(own, m->norms_per_layer * e, "h", h);
		mf_term(t, m->norms_per_layer * e, "h", h);
		return;
	}
	if (x->lora) {
		/* A frozen weight needs neither the normalised x nor, as the
		 * projections are frozen too, the output (see lora_terms). */
		mf_term(own, m->norms_per_layer * 4, "h", h);
		return;
	}
	if (m->block != MF_BLOCK_GEMMA) {
		mf_term(own, m->norms_per_layer * (4 + e), "h", h);
		mf_term(t, m->norms_per_layer * e, "h", h);
		return;
	}
	mf_term(own, pre * 8 + post * 8, "h", h);
	mf_term(t, pre * e, "h", h);
}

/* Gemma's (1 + w) in fp32, kept by each norm's multiply: 4h a norm. */
static int64_t
gemma_norms_const(const struct mf_model *m)
{
	return m->block == MF_BLOCK_GEMMA ? 4 * m->norms_per_layer : 0;
}

/*
 * The attention a job runs.  Gemma-2 soft-caps its scores, which SDPA
 * cannot: transformers refuses sdpa for it and, when none is asked for,
 * falls back to eager (PreTrainedModel.get_correct_attn_implementation),
 * so its sdpa is counted as eager.  flash (flash-attn) soft-caps inside
 * its kernel.
 */
enum mf_attention
mf_est_attention(const struct mf_model *m, const struct mf_workload *w)
{
	if (w->attention == MF_SDPA && m->attn_softcap)
		return MF_EAGER;
	return w->attention;
}

/* Activation offloading is the estimator pytorch's (the post's
 * arithmetic has none), for training (job_fields.c). */
int
mf_est_offloads(const struct mf_workload *w)
{
	return w->activation_offload && w->kind == MF_TRAINING &&
	    w->estimator == MF_EST_PYTORCH;
}

enum mf_loss
mf_est_loss(const struct mf_workload *w)
{
	return w->estimator == MF_EST_PYTORCH ? w->loss : MF_LOSS_STANDARD;
}

/*
 * Attention.  Fused (sdpa, flash): the kernel keeps q and k after RoPE
 * (ad, kvd), v as projected (kvd: transformers passes enable_gqa to SDPA
 * without a mask, so the kv heads are not repeated, on a GPU as on the
 * CPU; Phi-3's v is a view of its one qkv projection, which it keeps
 * whole: ad + 2kvd), the output (ad, which o_proj keeps too) and the
 * logsumexp in fp32 (4a).  Phi-3's RoPE concatenates (partial rotary),
 * so its q is laid out heads first, and an SDPA kernel whose output
 * takes q's layout (the CPU's flash kernel; cuDNN's, which torch prefers
 * on Hopper and Blackwell: cudnn/MHA.cpp alloc_with_matching_layout)
 * returns heads first too: transformers' transpose(1, 2).contiguous()
 * then copies it for o_proj (ad more; flash-attn's output and torch's
 * CUDA flash kernel's are tokens first, which makes that copy a view:
 * the estimate keeps the copy for sdpa, the safe side).  Measured on
 * transformers' Phi-3 with sdpa (tests/torch/measure.py FIT[4], FIT[5]).
 * Eager: q after RoPE (ad), the repeated k and v (ad each), the scores'
 * softmax in fp32 (4as) and, in 16 bits, its cast back (eas) that
 * multiplies v, and the output made contiguous for o_proj (ad); Gemma-2's
 * soft-capping keeps its tanh (eas).  torch.matmul folds batch and heads
 * into one dimension: with b = 1 that is a view, so an unrepeated v (kv =
 * a) is kept as projected (Phi-3: its qkv) and, with kv = 1, the
 * repeated k and v are stride-0 views of kvd; otherwise it copies (ad).
 */
/* Whether o_proj keeps its input: trained, or an adapter's of the
 * activations' dtype (no cast). */
static int
o_copy(const struct shapes *x)
{
	return !x->lora || (x->e == x->ab && (x->mask & MF_LORA_BIT(MF_LIN_O)));
}

static void
attention_terms(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_terms *t)
{
	int64_t e = x->e, one = w->micro_batch == 1;
	int phi3 = m->block == MF_BLOCK_PHI3;
	enum mf_attention att = mf_est_attention(m, w);

	/* q; and the output: the kernel's, or eager's copy that o_proj
	 * keeps for its weight's gradient (a frozen o_proj does not). */
	mf_term(t, att == MF_EAGER && x->lora ? e : 2 * e, "ad", x->ad);
	if (att != MF_EAGER) {
		mf_term(t, e, "kvd", x->kvd);
		/* Phi-3: the qkv v is a view of, and under sdpa the copy of
		 * the output that o_proj keeps (a frozen o_proj keeps none,
		 * unless o_proj's adapter's fp32 input is that copy). */
		if (phi3)
			mf_term(t, e + (att == MF_SDPA && o_copy(x) ? e : 0),
			    "ad", x->ad);
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
 * Mixture of experts, as transformers runs its experts (grouped_mm, its
 * default on a GPU as on the CPU: integrations/moe.py,
 * grouped_mm_experts_forward), per token: the router's softmax in fp32
 * (4E) and top-k's indices (int64, 8k); Mixtral (and Qwen2-MoE with
 * norm_topk_prob) renormalises the top-k weights in place, which keeps a
 * copy of them and their sum (4k + 4).  The k routed copies of a token,
 * sorted by expert, keep: the gathered input the first grouped_mm keeps
 * (eh), the expert's 4e x Ie, the down projection's output that the
 * routing weight multiplies (eh), that weight (fp32 for Mixtral, whose
 * router does not cast it back; e for Qwen2-MoE), and three int64
 * orders (24: the gather's, the weights' and the one that undoes the
 * sort).  Qwen2-MoE's shared expert keeps 4e x Is, its sigmoid gate (e)
 * and its output (eh).  With LoRA (not measured: PEFT's all-linear does
 * not reach transformers' 3-D expert weights) a frozen expert keeps
 * neither its gathered input nor its down projection's.
 */
static void
mlp_terms(const struct mf_model *m, const struct shapes *x, struct mf_terms *t)
{
	int64_t e = x->e, k = m->experts_per_tok;
	int64_t wb = m->block == MF_BLOCK_MIXTRAL ? 4 : e;

	/* A frozen down_proj keeps no copy of its input, nor a frozen
	 * expert's gate and up of theirs (LoRA's copies: lora_terms); a
	 * compiled layer keeps 3eI too (tests/torch/compile.py), and a
	 * compiled one over a frozen base gate's and up's outputs alone,
	 * 2eI (tests/torch/compile_lora.py). */
	int64_t keep = 4 - (x->lora ? 1 : 0) - (x->compiled ? 1 : 0);

	if (m->experts == 0) {
		mf_term(t, keep * e, "I", x->I);
		return;
	}
	mf_term(t, (keep - 2) * e, "kh", mf_cmul(k, x->h));
	mf_term(t, keep * e, "kIe", mf_cmul(k, mf_model_expert_width(m)));
	mf_term(t, 4, "E", m->experts);
	mf_term(t, wb + 24 + 8, "k", k);
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

/* The projections that take the first norm's output (q, k, v; Phi-3's
 * qkv) and the second's (gate, up; Phi-3's gate_up). */
#define ATTN_IN \
	(MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_K) | \
	    MF_LORA_BIT(MF_LIN_V) | MF_LORA_BIT(MF_LIN_QKV))
#define MLP_IN \
	(MF_LORA_BIT(MF_LIN_GATE) | MF_LORA_BIT(MF_LIN_UP) | \
	    MF_LORA_BIT(MF_LIN_GATE_UP))

/* How many of a layer's own linears (no routed or shared expert's) of
 * the kinds in kinds LoRA reaches. */
static int64_t
lora_count(const struct shapes *x, unsigned kinds)
{
	return __builtin_popcount(x->own & kinds);
}

/* Whether each adapter keeps a copy of its input of its own: a cast to its
 * dtype, or dropout's output (lora_terms); otherwise the input itself. */
static int
own_copies(const struct shapes *x)
{
	return x->e != x->ab || x->drop;
}

/*
 * LoRA's adapters, as PEFT runs them: the frozen base keeps nothing of
 * its input (a frozen weight needs no gradient; QLoRA's 4-bit matmul in
 * bitsandbytes keeps only the quantised weight), and each adapter casts
 * its input to its fp32 weights' dtype, a copy that lora_A keeps (4 x
 * in), and lora_B keeps lora_A's output (4r).  With 16-bit activations
 * every targeted linear makes its own copy: each of q, k and v targeted
 * one of the same input (Phi-3's one qkv_proj, one), each of gate and up
 * one (Phi-3's gate_up, one).  With fp32 ones the cast is the input
 * itself, shared: q, k, v's and gate, up's once whichever of them are
 * targeted; o_proj's is the fused kernel's output, already kept (eager's
 * contiguous copy is kept only here).  all-linear also adds each routed
 * expert's copies (per routed token: gate and up's, and down's 4 x Ie),
 * the router's and Qwen2-MoE's shared expert's and its gate's.  A list
 * of modules (design 22) keeps the copies of those it names.  Measured
 * by tests/torch/measure.py (its LoRA cases: all-linear, attention and
 * lists).  Compiled (compile: true), the adapters that take one norm's
 * output share one cast of it (the partitioner's graph casts once), so
 * each of the two inputs keeps one copy, ab h, or the norm's output
 * itself, e h, when the adapters' dtype is the activations'; o_proj's
 * and down_proj's adapters and lora_A's outputs keep what they keep
 * uncompiled (tests/torch/compile_lora.py: [q_proj, v_proj] and
 * all-linear, fp32 and bf16 adapters; QLoRA's NF4 linears in bf16 keep
 * the same, no dequantized weight).  With lora.dropout above 0 each
 * adapter keeps its own dropped input in its dtype and the fused
 * dropout's bool mask, (ab + 1) a value of its input, where it kept the
 * input or its cast (tests/torch/dropout.py, GPU's native_dropout).
 */
static void
lora_terms(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_terms *t)
{
	int sixteen = x->e == 2, own = own_copies(x);
	int64_t k = m->experts_per_tok, n, in, copy = x->ab + (x->drop ? 1 : 0);
	int each = own && !x->compiled; /* a copy for each adapter */

	n = lora_count(x, ~0u);
	in = lora_count(x, ATTN_IN);
	if (in > 0)
		mf_term(t, copy * (each ? in : 1), "h", x->h);
	if ((x->mask & MF_LORA_BIT(MF_LIN_O)) &&
	    (own || mf_est_attention(m, w) == MF_EAGER))
		mf_term(t, copy, "ad", x->ad);
	if (m->experts == 0) {
		in = lora_count(x, MLP_IN);
		if (in > 0)
			mf_term(t, copy * (each ? in : 1), "h", x->h);
		if (x->mask & MF_LORA_BIT(MF_LIN_DOWN))
			mf_term(t, copy, "I", x->I);
	} else if (x->mask & MF_LORA_MOE) {
		/* Measured with fp32 adapters; 16-bit ones keep less. */
		mf_term(t, 4, "h", x->h); /* the router's */
		mf_term(t, sixteen ? 8 : 4, "kh", mf_cmul(k, x->h));
		mf_term(t, 4, "kIe", mf_cmul(k, mf_model_expert_width(m)));
		mf_term(t, 12, "kr", mf_cmul(k, x->r));
		n += 1;
		if (m->shared_intermediate > 0) {
			mf_term(t, sixteen ? 12 : 0, "h", x->h);
			mf_term(t, 4, "Is", m->shared_intermediate);
			n += 4;
		}
		mf_term(t, 4 * n, "r", x->r);
		return;
	}
	mf_term(t, x->ab * n, "r", x->r);
}

/*
 * What bitsandbytes' 4-bit matmul kept before 0.43.2 (qlora.keepsInput):
 * MatMul4Bit.forward held its input for backward whenever it needed a
 * gradient (bitsandbytes 0.42.0, bitsandbytes/autograd/_functions.py:
 * "ctx.tensors = (A, B)"; bitsandbytes-foundation/bitsandbytes#1270,
 * commit 9e75374, in 0.43.2, keeps B alone).  So each quantized linear's
 * input lives to backward: those that lora_terms and attention_terms do
 * not already keep are the first norm's output unless an adapter of q, k
 * or v keeps it as its own input (not a copy of its own: a cast, or
 * dropout's output, own_copies), eager attention's
 * contiguous output unless o_proj's adapter keeps it (the fused kernels'
 * is theirs), the second norm's output unless gate's or up's adapter
 * keeps it, and down_proj's input unless its adapter keeps it.  Measured
 * by tests/torch/quant.py (its keepsInput cases: MatMul4Bit with that one
 * line of 0.42.0).
 */
static void
kept_input_terms(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_terms *t)
{
	unsigned mk = x->own;
	int own = own_copies(x);

	if (!(mk & ATTN_IN) || own)
		mf_term(t, x->e, "h", x->h);
	if (mf_est_attention(m, w) == MF_EAGER &&
	    (!(mk & MF_LORA_BIT(MF_LIN_O)) || own))
		mf_term(t, x->e, "ad", x->ad);
	if (!(mk & MLP_IN) || own)
		mf_term(t, x->e, "h", x->h);
	if (m->experts > 0) {
		/* Routed experts are no linears (transformers' 3-D weights):
		 * a shared expert's down_proj alone; by the same rule, not
		 * measured (quant.py builds no QLoRA mixture of experts). */
		if (m->shared_intermediate > 0)
			mf_term(t, x->e, "Is", m->shared_intermediate);
		return;
	}
	if (!(mk & MF_LORA_BIT(MF_LIN_DOWN)) || own)
		mf_term(t, x->e, "I", x->I);
}

/*
 * What the first layer does not keep under LoRA without checkpointing:
 * the frozen embeddings need no gradient, so nothing before the first
 * adapter does (transformers' activation_checkpointing_enable makes the
 * embeddings' output require a gradient, enable_input_require_grads, so
 * with checkpointing the layer keeps its own).  Its first norm keeps
 * nothing.  Eager attention's matmuls keep an input only for the other's
 * gradient: q without an adapter on k, the repeated k without one on q,
 * the probabilities' 16-bit cast without one on v, and without one on q
 * or k neither the softmax (nor Gemma-2's tanh) nor the repeated v.  A
 * list without q, k or v (design 22) keeps nothing of attention either,
 * but for o_proj's adapter its input, the fused kernel's output (fp32;
 * a 16-bit copy is lora_terms').  A list of the MLP's alone is counted
 * so too (what its layer keeps before the MLP's adapters is more: the
 * safe side).  Measured by tests/torch/measure.py (its LoRA lists).
 * Compiled, the first norm keeps its input, e h, where uncompiled it
 * keeps the fp32 cast, 4h: the first layer keeps neither
 * (tests/torch/compile_lora.py).
 */
static void
frozen_terms(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_terms *off)
{
	unsigned mk = x->own;
	int q = (mk & (MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_QKV))) != 0;
	int k = (mk & (MF_LORA_BIT(MF_LIN_K) | MF_LORA_BIT(MF_LIN_QKV))) != 0;
	int v = (mk & (MF_LORA_BIT(MF_LIN_V) | MF_LORA_BIT(MF_LIN_QKV))) != 0;
	int64_t e = x->e, one = w->micro_batch == 1;

	memset(off, 0, sizeof(*off));
	mf_term(off, x->compiled ? e : 4, "h", x->h);
	mf_term(off, 4, "", 1);
	/* Nor does a 4-bit matmul keep an input that needs no gradient, nor
	 * dropout a mask. */
	if (x->kept_in && (!(mk & ATTN_IN) || own_copies(x)))
		mf_term(off, e, "h", x->h);
	if (x->drop)
		mf_term(off, lora_count(x, ATTN_IN), "h", x->h);
	if (!(mk & ATTN_IN)) {
		attention_terms(m, w, x, off);
		if ((mk & MF_LORA_BIT(MF_LIN_O)) && !own_copies(x) &&
		    mf_est_attention(m, w) != MF_EAGER)
			mf_term(off, -e, "ad", x->ad);
		if ((mk & MF_LORA_BIT(MF_LIN_O)) && x->drop)
			mf_term(off, 1, "ad", x->ad);
		return;
	}
	if (mf_est_attention(m, w) != MF_EAGER || m->block == MF_BLOCK_PHI3)
		return;
	if (!k)
		mf_term(off, e, "ad", x->ad);
	if (!q)
		mf_term(off, e, one && x->kv == 1 ? "kvd" : "ad",
		    one && x->kv == 1 ? x->kvd : x->ad);
	if (!v && e == 2)
		mf_term(off, e, "as", mf_cmul(x->a, x->s));
	if (q || k)
		return;
	/* Only v: the repeated v, the softmax, and the tanh. */
	mf_term(off, e, one && (x->kv == x->a || x->kv == 1) ? "kvd" : "ad",
	    one && (x->kv == x->a || x->kv == 1) ? x->kvd : x->ad);
	mf_term(off, (e == 2 ? 4 : 0) + (m->attn_softcap ? e : 0), "as",
	    mf_cmul(x->a, x->s));
}

/* The first layer's bytes frozen_terms leaves out, taken from bytes (of
 * tok tokens), and " - 4h - 4" (compiled: " - eh - 4"; or " - (terms)")
 * into f. */
static int64_t
first_layer_frozen(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, int64_t tok, int64_t bytes, struct mf_text *f)
{
	struct mf_terms off;
	int64_t sub;

	frozen_terms(m, w, x, &off);
	sub = mf_cmul(tok, mf_terms_bytes(&off));
	if (sub < 0 || bytes < sub)
		return bytes;
	/* frozen_terms' first two terms, the norm's and 4, alone. */
	if (off.n == 2 && off.coef[0] == (x->compiled ? x->e : 4) &&
	    off.coef[1] == 4) {
		mf_text_str(f, " - ");
		mf_text_int(f, off.coef[0]);
		mf_text_str(f, "h - 4");
	} else {
		mf_text_str(f, " - (");
		mf_text_terms(f, &off);
		mf_text_str(f, ")");
	}
	return bytes - sub;
}

/* A layer's terms: t of every token, own of a GPU's share of the tokens
 * under sequence parallel (norm_terms); own may be t. */
static void
layer_terms(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_terms *t, struct mf_terms *own)
{
	memset(t, 0, sizeof(*t));
	memset(own, 0, sizeof(*own));
	norm_terms(m, x, t, own);
	attention_terms(m, w, x, t);
	mlp_terms(m, x, t);
	if (x->lora)
		lora_terms(m, w, x, t);
	if (x->kept_in)
		kept_input_terms(m, w, x, t);
}

/*
 * What a checkpointed compiled LoRA layer's backward holds at its peak
 * beyond the compiled layer that torch_activations counts (the transient
 * candidate of est_transient.c), into t; nothing (t->n 0) for another
 * job.  Compiled under transformers' non-reentrant checkpoint, AOTAutograd
 * partitions the layer so that its forward graph keeps only its inputs
 * and its backward graph runs the whole forward again and then its
 * backward, as one inductor graph that frees each value after its last
 * read (the backward graph's mm calls of the recomputed q, k, v, o, gate,
 * up and its run_with_rng_state of the attention: tests/torch/compile_lora.py,
 * TORCH_LOGS=output_code).  So the compiled layer's saved set (layer_terms
 * compiled) is not what is alive there: the recomputed forward's values
 * that backward reads are, at most what eager autograd keeps of the layer
 * (layer_terms uncompiled; the graph fuses some of them away), and its
 * peak is at the MLP's backward, the first it runs, where besides them it
 * holds: the gradients of the product and the two it makes through the
 * frozen weights, e x I each (3e I, the MLP's backward of
 * est_transient.c); for each adapted MLP linear (gate, up, down) its
 * adapter path's gradient in the adapters' dtype (ab I each: down's input
 * gradient through lora_A, gate's and up's outputs' through lora_B); the
 * product itself computed in the adapters' dtype when gate or up is
 * adapted (PEFT's base output plus the adapter's promotes it: ab I); and
 * the layer's incoming gradient cast to the adapters' dtype for down's
 * lora_B (ab h).  Counted as eager's layer less the compiled one plus
 * those: s x b x (eager - compiled + 3eI + ab x (n + g)I + ab h), n the
 * adapted MLP linears, g 1 when gate or up is one of them.  Read off the
 * backward graph's output code at its peak in tests/torch/compile_lora.py's
 * FIT[0] (mistral h 96, I 256) and FIT[1] (llama h 112, I 320), the same
 * buffers in both: all-linear, fp32 adapters on bf16, 34I = 2e + 2ab of
 * gate's and up's frozen and adapter outputs (of eager's set) and 3e + 4ab
 * of the MLP's backward; bf16 adapters on bf16 and fp32 on fp32, 11e I
 * (ab = e); [q_proj, v_proj] (FIT[0], bf16 and fp32), 4e I, within
 * eager's MLP (3e I) and its backward (3e I); the attention's and the
 * norms' buffers within eager's.  The step's peak with
 * it: compile_lora.py, every checkpointed run, FIT and CHECK.
 */
static void
recompute_terms(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_terms *t)
{
	struct shapes eager = *x;
	struct mf_terms c;
	unsigned gu = MF_LORA_BIT(MF_LIN_GATE) | MF_LORA_BIT(MF_LIN_UP);
	unsigned mk = x->own;
	int64_t n;

	memset(t, 0, sizeof(*t));
	if (!x->compiled || !x->lora || w->checkpointing != MF_CKPT_FULL)
		return;
	eager.compiled = 0;
	layer_terms(m, w, &eager, t, t);
	layer_terms(m, w, x, &c, &c);
	assert(c.n >= 0 && c.n <= MF_MAX_TERMS);
	for (int i = 0; i < c.n; i++)
		mf_term(t, -c.coef[i], c.sym[i], c.value[i]);
	n = lora_count(x, gu | MF_LORA_BIT(MF_LIN_DOWN));
	mf_term(t, 3 * x->e + x->ab * (n + ((mk & gu) ? 1 : 0)), "I", x->I);
	if (mk & MF_LORA_BIT(MF_LIN_DOWN))
		mf_term(t, x->ab, "h", x->h);
}

/*
 * The layers a job checkpoints whole: every ckpt_every-th, counted from
 * the first as torchtitan (selective_ac_option N) and torchtune
 * (ac_option N) count (the N-th, the 2N-th, ...): floor(L / N), the
 * fewest of the ways to choose them (transformers' every_n_layers takes
 * the first, the (N+1)-th, ...: ceil(L / N)).
 */
static int64_t
checkpointed_layers(const struct mf_model *m, const struct mf_workload *w)
{
	if (w->checkpointing != MF_CKPT_FULL)
		return 0;
	return m->layers / (w->ckpt_every > 0 ? w->ckpt_every : 1);
}

/* What every checkpoint keeps of what its layer is called with, besides
 * the hidden states: the positions (int64, 8 bytes a position) and, for
 * eager attention, the causal masks, one b x s x s in the activations'
 * dtype for each kind of layer (Gemma-2's sliding and global: two).
 * Measured on transformers' models (tests/torch/measure.py, eager with
 * checkpointing). */
static int64_t
checkpoint_inputs(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_text *f)
{
	int64_t masks = m->block == MF_BLOCK_GEMMA ? 2 : 1, bytes;

	bytes = mf_cmul(8, w->seq_len);
	if (mf_est_attention(m, w) != MF_EAGER)
		return bytes;
	mf_text_str(f, " + ");
	mf_text_int(f, masks * x->eh);
	mf_text_str(f, "b x s x s");
	return mf_cadd(bytes,
	    mf_cmul(mf_cmul(masks * x->eh, w->micro_batch),
	        mf_cmul(w->seq_len, w->seq_len)));
}

/*
 * torchtune's min_offload_size, as its recipes run OffloadActivations
 * (training/_activation_offloading.py, the default 1024): a saved tensor
 * of fewer bytes stays on the GPU.
 */
#define OFFLOAD_MIN 1024

/* Whether activation offloading moves a saved tensor of n bytes. */
static int
offloaded(const struct mf_workload *w, int64_t n)
{
	return mf_est_offloads(w) && n >= OFFLOAD_MIN;
}

/*
 * The checkpointed layers' inputs on the GPU at the peak of backward:
 * all lc, but under torchtune's activation offloading (design 19, with
 * every layer checkpointed, as its recipes require:
 * mf_est_offload_refused).  Torch 2.13's non-reentrant checkpoint saves a
 * layer's positional input, the hidden states, as a saved tensor
 * (utils/checkpoint.py, _CheckpointFrame.save_inputs), which OffloadActivations
 * moves to host memory; the keyword inputs (positions, RoPE's cos and sin, the
 * masks) stay in the checkpoint's closure on the GPU, and what a layer saves
 * inside its checkpoint goes to the checkpoint's own hooks, recomputed
 * on the GPU in backward (the layer's terms).  Backward brings an input
 * back when its layer recomputes and lets it go after the next autograd
 * node that brings one back (_activation_offloading.py lines 264-266 and
 * 334-338): with a 16-bit residual stream, whose first RMSNorm's
 * x.to(float32) is a copy, the previous layer's input is still held
 * while a layer recomputes: two.  With an fp32 one the cast is the input
 * itself, which the recomputation saves: that view makes torchtune let
 * go of it as soon as its node is done (lines 297-323, record_stream),
 * and the layer in flight holds it as its first norm's fp32 x, a term of
 * the layer already: none more.  transformers' LoRA with checkpointing
 * makes the embeddings' output a leaf that requires a gradient
 * (enable_input_require_grads), which the graph keeps on the GPU all
 * through backward beside its host copy: one more.  Measured on
 * torchtune's own OffloadActivations over transformers' models of every
 * shipped block (tests/torch/offload.py), where freeing follows the
 * references, as torch.cuda.memory_allocated counts; when a copy lands
 * and when a block freed on the copy stream is reused only a GPU's
 * streams show.
 */
static int64_t
inputs_on_gpu(const struct mf_workload *w, const struct shapes *x, int64_t lc)
{
	int64_t sb = mf_cmul(w->seq_len, w->micro_batch), n;

	if (!offloaded(w, mf_cmul(sb, mf_cmul(x->eh, x->h))))
		return lc;
	n = x->eh == 2 ? (lc < 2 ? lc : 2) : 0;
	return n + (x->lora ? 1 : 0);
}

/* " + n x " (or " + L x " where n is every layer) into f. */
static void
text_layers(struct mf_text *f, int64_t n, int64_t L, const char *lead)
{
	mf_text_str(f, lead);
	if (n == L)
		mf_text_str(f, "L");
	else
		mf_text_int(f, n);
	mf_text_str(f, " x ");
}

/*
 * Per-op selective checkpointing as torchtitan 0.3.0 runs it
 * (torchtitan/distributed/activation_checkpoint.py, SelectiveAC): every
 * layer is checkpointed, and its forward keeps, besides the input (eh),
 * the outputs of the ops on its save list: torch's compute-intensive ops
 * (mm, addmm, bmm, the SDPA kernels), linear, topk and max, but every
 * second mm or linear of the layer, counted in order, is recomputed
 * instead.  transformers' Llama block runs q, k, v, o, gate, up, down:
 * q, v, gate and down are kept (a biased projection, Qwen2's q, k and v,
 * is an addmm: kept and not counted, so o and up are); Phi-3's qkv, o,
 * gate_up, down: qkv and gate_up.  The fused kernel keeps its output and
 * logsumexp (ad, 4a); eager attention's two bmm keep the scores (as,
 * before soft-capping and softmax) and the output (ad).  Measured on
 * transformers' models through torch.utils.checkpoint's
 * create_selective_checkpoint_contexts with torchtitan's policy
 * (tests/torch/measure.py, op).
 */
struct mm_out {
	int64_t coef;
	const char *sym;
	int64_t value;
	int biased;
};

static void
op_terms(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_terms *t)
{
	int64_t e = x->e, b = m->qkv_bias;
	const struct mm_out llama[] = { { 1, "ad", x->ad, (int)b },
		{ 1, "kvd", x->kvd, (int)b }, { 1, "kvd", x->kvd, (int)b },
		{ 1, "h", x->h, 0 }, { 1, "I", x->I, 0 }, { 1, "I", x->I, 0 },
		{ 1, "h", x->h, 0 } };
	/* Phi-3's qkv: its ad here, its 2kvd with it below. */
	const struct mm_out phi3[] = { { 1, "ad", x->ad, 0 },
		{ 1, "h", x->h, 0 }, { 2, "I", x->I, 0 }, { 1, "h", x->h, 0 } };
	int isphi3 = m->block == MF_BLOCK_PHI3, count = 0;
	const struct mm_out *v = isphi3 ? phi3 : llama;
	size_t n = isphi3 ? 4 : 7;

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < n; i++) {
		if (!v[i].biased && ++count % 2 == 0)
			continue;
		mf_term(t, e * v[i].coef, v[i].sym, v[i].value);
		if (isphi3 && i == 0)
			mf_term(t, 2 * e, "kvd", x->kvd);
	}
	mf_term(t, e, "ad", x->ad);
	if (mf_est_attention(m, w) == MF_EAGER)
		mf_term(t, e, "as", mf_cmul(x->a, x->s));
	else
		mf_term(t, 4, "a", x->a);
}

/* A GPU's tokens of a micro-batch under sequence parallel: b x ceil(s /
 * T), each sequence divided (DTensor's Shard(1)); s x b without it. */
static int64_t
sp_tokens(const struct mf_workload *w, const struct shapes *x)
{
	return mf_cmul(w->micro_batch, mf_cdiv_up(w->seq_len, x->sp));
}

/*
 * Under sequence parallel (x->sp GPUs) the part of the activations of
 * every token, n layers of t, into f and bytes, and the lead of the part
 * of a GPU's tokens: "s x b x (n x (t)) + b x ceil(s / TP) x (".
 */
static int64_t
sp_whole_part(struct mf_text *f, int64_t n, int64_t L, const struct mf_terms *t,
    int64_t sb)
{
	if (n > 0) {
		text_layers(f, n, L, "");
		mf_text_str(f, "(");
		mf_text_terms(f, t);
		mf_text_str(f, ")");
	} else {
		mf_text_str(f, "0");
	}
	mf_text_str(f, ") + b x ceil(s / TP) x (");
	return mf_cmul(mf_cmul(sb, mf_terms_bytes(t)), n);
}

/*
 * activations with per-op selective checkpointing: every layer keeps its
 * input and its saved outputs (sac, op_terms), and backward recomputes
 * the last layer on top of them, whose saved outputs are handed to the
 * recomputation, not made again: s x b x ((L - 1) x sac + L x eh +
 * layer) + s x (2ed + 8) (+ eager's masks, + Gemma-2's (1 + w) of the
 * recomputed layer).  Under sequence parallel the inputs and the
 * recomputed layer's norms are of a GPU's tokens (torch_activations).
 */
static void
op_activations(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, const struct mf_terms *layer,
    const struct mf_terms *own, struct mf_estimate *e)
{
	int64_t sb = mf_cmul(w->seq_len, w->micro_batch), bytes, pos, part;
	struct mf_terms sac;
	struct mf_text f;

	op_terms(m, w, x, &sac);
	mf_text_init(&f, mf_est_text(e, MF_B_ACTIVATIONS));
	mf_text_str(&f, "s x b x (");
	mf_text_int(&f, m->layers - 1);
	mf_text_str(&f, " x (");
	mf_text_terms(&f, &sac);
	mf_text_str(&f, ") + ");
	bytes = mf_cmul(m->layers - 1, mf_terms_bytes(&sac));
	part = mf_cmul(m->layers, mf_cmul(x->eh, x->h));
	if (own != layer) {
		/*
		 * Sequence parallel: the inputs and the recomputed layer's
		 * norms are of a GPU's tokens, and torchtitan's save list
		 * keeps the reduce-scatters' outputs too (its
		 * _c10d_functional.reduce_scatter_tensor: o's and down's, 2eh
		 * a layer; tests/torch/dist.py, case tp2-sp-op).
		 */
		mf_text_terms(&f, layer);
		mf_text_str(&f, ") + b x ceil(s / TP) x (L x ");
		mf_text_int(&f, x->eh);
		mf_text_str(&f, "h + ");
		mf_text_int(&f, m->layers - 1);
		mf_text_str(&f, " x ");
		mf_text_int(&f, 2 * x->e);
		mf_text_str(&f, "h + ");
		mf_text_terms(&f, own);
		bytes = mf_cmul(sb, mf_cadd(bytes, mf_terms_bytes(layer)));
		part = mf_cadd(part, mf_cmul(m->layers - 1, 2 * x->e * x->h));
		part = mf_cmul(sp_tokens(w, x),
		    mf_cadd(part, mf_terms_bytes(own)));
		bytes = mf_cadd(bytes, part);
	} else {
		mf_text_str(&f, "L x ");
		mf_text_int(&f, x->eh);
		mf_text_str(&f, "h + ");
		mf_text_terms(&f, layer);
		bytes = mf_cadd(bytes, mf_cadd(part, mf_terms_bytes(layer)));
		bytes = mf_cmul(sb, bytes);
	}
	mf_text_str(&f, ") + s x ");
	mf_text_int(&f, 2 * x->eh);
	mf_text_str(&f, "d + s x 8");
	pos = mf_cmul(w->seq_len, mf_cmul(2 * x->eh, x->d));
	pos = mf_cadd(pos, checkpoint_inputs(m, w, x, &f));
	bytes = mf_cadd(bytes, pos);
	if (gemma_norms_const(m) > 0) {
		mf_text_str(&f, " + ");
		mf_text_int(&f, gemma_norms_const(m));
		mf_text_str(&f, "h");
		bytes = mf_cadd(bytes, mf_cmul(gemma_norms_const(m), x->h));
	}
	e->bucket[MF_B_ACTIVATIONS] = bytes;
}

/*
 * Compiled, torchao's NF4 base (qlora.quantizer torchao, each layer
 * compiled as torchtune's compile: True) is dequantized inside the layer's
 * graph, and the partitioner saves the bf16 weights it made for backward
 * rather than dequantizing again: each of the n layers alive at the peak
 * keeps its 4-bit linears' weights, 2 bytes each (Pq / L of them).  With
 * first set the first layer is among them, and it leaves out q_proj's,
 * k_proj's and v_proj's (Wqkv): its input needs no gradient.  bitsandbytes'
 * MatMul4Bit, opaque to the graph, keeps none.  tests/torch/compile_lora.py
 * measures both.  " + Pq x 2" (or " + n x Pq / L x 2") and " - Wqkv x 2"
 * into f.
 */
static int64_t
nf4_compiled(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, int64_t n, int first, struct mf_text *f)
{
	struct mf_linear v[MF_MODEL_MAX_LINEARS];
	size_t k;
	int64_t pq = 0, qkv = 0, bytes;

	if (!x->compiled || w->method != MF_QLORA ||
	    w->qlora_quantizer != MF_QZ_TORCHAO || n == 0 || m->layers <= 0)
		return 0;
	k = mf_model_linears(m, v);
	assert(k <= MF_MODEL_MAX_LINEARS);
	for (size_t i = 0; i < k; i++) {
		int64_t one = mf_cmul(v[i].out, v[i].in);

		pq = mf_cadd(pq, mf_cmul(one, v[i].count));
		if (v[i].kind <= MF_LIN_QKV)
			qkv = mf_cadd(qkv, one);
	}
	if (n == m->layers) {
		mf_text_str(f, " + Pq x 2");
	} else {
		mf_text_str(f, " + ");
		if (n > 1) {
			mf_text_int(f, n);
			mf_text_str(f, " x ");
		}
		mf_text_str(f, "Pq / L x 2");
	}
	bytes = mf_cmul(mf_cmul(pq / m->layers, n), 2);
	if (!first)
		return bytes;
	mf_text_str(f, " - Wqkv x 2");
	return bytes - mf_cmul(qkv, 2);
}

/*
 * activations = s x b x L x layer + s x 2ed (+ L x Gemma's (1 + w)):
 * RoPE's cos and sin, made once a forward in the activations' dtype for
 * one sequence's positions (transformers' position_ids are 1 x s, so not
 * once per sequence of the batch) and kept by every layer's q and k.
 * Checkpointing (non-reentrant, a layer at a time): the Lc checkpointed
 * layers keep their input (eh) and, once for all, what they are called
 * with (checkpoint_inputs); the other Lf keep their activations; backward
 * recomputes one layer at a time, whose activations are alive while it
 * runs through it: on top of everything else when the last layer is one
 * of the checkpointed (L a multiple of N; otherwise the last layers'
 * activations are freed before any recomputation).  Every layer: s x b x
 * (L x eh + layer) + s x (2ed + 8) (+ the masks).  Under activation
 * offloading the inputs on the GPU are inputs_on_gpu's, the others'
 * copies are in host memory: s x b x (2 x eh + layer) + s x (2ed + 8)
 * with a 16-bit residual stream, s x b x layer + s x (2ed + 8) with an
 * fp32 one (LoRA: one more input).
 * Under sequence parallel (design 19) what the norms keep of their own
 * (layer_terms' own) and the checkpointed layers' inputs, the residual
 * stream, are of a GPU's b x ceil(s / TP) tokens: s x b x L x t + b x
 * ceil(s / TP) x L x own + s x 2ed; RoPE's cos and sin are of the whole
 * sequence, which attention sees gathered (tests/torch/dist.py).
 */
static void
torch_activations(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_estimate *e)
{
	int64_t sb, tok, per, gconst, bytes = 0, lc, lf, top, n, pos, in;
	struct mf_terms t, o, *own = x->sp > 1 ? &o : &t;
	struct mf_text f;

	layer_terms(m, w, x, &t, own);
	if (w->checkpointing == MF_CKPT_OP && m->experts == 0) {
		op_activations(m, w, x, &t, own, e);
		return;
	}
	sb = mf_cmul(w->seq_len, w->micro_batch);
	/* The tokens of the terms own and of the layers' inputs. */
	tok = sp_tokens(w, x);
	gconst = mf_cmul(gemma_norms_const(m), x->h);
	lc = checkpointed_layers(m, w);
	lf = m->layers - lc;
	top = lc > 0 && m->layers % w->ckpt_every == 0;
	n = lf + top; /* layers whose activations are alive at the peak */
	mf_text_init(&f, mf_est_text(e, MF_B_ACTIVATIONS));
	mf_text_str(&f, "s x b x (");
	if (own != &t)
		bytes = sp_whole_part(&f, n, m->layers, &t, sb);
	per = mf_terms_bytes(own);
	if (n > 0) {
		text_layers(&f, n, m->layers, "");
		mf_text_str(&f, "(");
		mf_text_terms(&f, own);
		mf_text_str(&f, ")");
	}
	bytes = mf_cadd(bytes, mf_cmul(mf_cmul(tok, per), n));
	if (x->lora && lc == 0 && w->checkpointing == MF_CKPT_NONE)
		bytes = first_layer_frozen(m, w, x, tok, bytes, &f);
	in = inputs_on_gpu(w, x, lc);
	if (in > 0) {
		/* Offloaded, the inputs are a count, whatever L is. */
		text_layers(&f, in, mf_est_offloads(w) ? 0 : m->layers,
		    n > 0 ? " + " : "");
		mf_text_int(&f, x->eh);
		mf_text_str(&f, "h");
		bytes = mf_cadd(bytes,
		    mf_cmul(mf_cmul(tok, in), mf_cmul(x->eh, x->h)));
	}
	mf_text_str(&f, ") + s x ");
	mf_text_int(&f, 2 * x->eh);
	mf_text_str(&f, "d");
	pos = mf_cmul(w->seq_len, mf_cmul(2 * x->eh, x->d));
	if (lc > 0) {
		mf_text_str(&f, " + s x 8");
		pos = mf_cadd(pos, checkpoint_inputs(m, w, x, &f));
	}
	bytes = mf_cadd(bytes, pos);
	if (gconst > 0 && n > 0) {
		text_layers(&f, n, m->layers, " + ");
		mf_text_int(&f, gemma_norms_const(m));
		mf_text_str(&f, "h");
		bytes = mf_cadd(bytes, mf_cmul(n, gconst));
		if (x->lora && w->checkpointing == MF_CKPT_NONE &&
		    bytes >= 4 * x->h) {
			/* Nor its (1 + w). */
			mf_text_str(&f, " - 4h");
			bytes -= 4 * x->h;
		}
	}
	bytes = mf_cadd(bytes,
	    nf4_compiled(m, w, x, n,
	        x->lora && lc == 0 && w->checkpointing == MF_CKPT_NONE, &f));
	e->bucket[MF_B_ACTIVATIONS] = bytes;
}

/*
 * What the embeddings keep a token for backward: the int64 token ids,
 * which activation offloading moves to host memory (8 x s x b bytes, once
 * that is min_offload_size), and under tensor parallel the
 * vocabulary-parallel embedding's mask.  The rest of what lives outside
 * the layers stays on the GPU at the loss's backward, the peak it is part
 * of: the loss is taken outside torchtune's offloading context, lm_head's
 * input is kept under its NoOpManager, and the final norm's tensors are
 * the last OffloadActivations moved, still held in its forward stash
 * (max_fwd_stash_size 5, _activation_offloading.py lines 155-163) until
 * the first node of backward that brings one back (lines 329-332), after
 * the loss's (tests/torch/offload.py).
 */
static int64_t
token_ids(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x)
{
	int64_t ids = 8;

	if (offloaded(w, mf_cmul(8, mf_cmul(w->seq_len, w->micro_batch))))
		ids = 0;
	return ids + (m->tp > 1 ? x->e : 0);
}

/*
 * logits: what a forward keeps outside the layers, per token: the final
 * norm (as a layer's first norm), the fp32 log-softmax of the logits
 * that cross_entropy keeps (4V; logits.float() itself keeps nothing),
 * the int64 token ids the embedding keeps and the labels nll_loss keeps
 * (16); Gemma-2's final soft-capping keeps its tanh (eV).
 * Under tensor parallel the vocabulary-parallel embedding also keeps the
 * mask it multiplies its rows' lookups by (e a token, torchtitan 0.3's
 * Embedding).  Under sequence parallel what the final norm keeps of its
 * own is of a GPU's b x ceil(s / TP) tokens (its output is gathered whole
 * for lm_head, ColwiseParallel(input_layouts=Shard(1))); under loss
 * parallel the logits stay divided by the vocabulary (lm_head's output
 * Shard(-1), torch's loss_parallel): a GPU's log-softmax is of its Vl
 * rows.  Measured by tests/torch/dist.py.
 * A chunked loss (torchtune's) keeps the same bytes: each piece's
 * log-softmax, 4V a token in all; a trained lm_head keeps its pieces of
 * the norm's output, views of it (copies when b > 1, torch.chunk cutting
 * each sequence); nll_loss the pieces of the labels, views or copies, 8
 * a token (tests/torch/loss.py).  Compiled (compile: true, torchtune's
 * compile_loss: each piece's compute_cross_entropy one inductor graph),
 * the pieces' logits themselves in the compute dtype (el V a token, 2 under
 * autocast) instead of the log-softmax, and two fp32 values a token, each
 * row's max and log-sum-exp (8; tests/torch/compile_loss.py, est_loss.c).
 * A fused loss (Liger's, est_loss.c) keeps neither the logits nor the
 * labels nor the norm's output, but the input's gradient it computes in
 * the forward, in the norm output's dtype (eh x h a token; under autocast
 * the fp32 norm's, 4h); the head weight's gradient it keeps too is the
 * gradients bucket's (tests/torch/fused.py).
 */
static void
torch_logits(const struct mf_model *m, const struct mf_workload *w,
    const struct shapes *x, struct mf_estimate *e)
{
	int gemma = m->block == MF_BLOCK_GEMMA;
	int64_t sb, bytes, ids;
	struct mf_terms t, o, *own = x->sp > 1 ? &o : &t;
	struct mf_text f;
	int fused = mf_est_loss(w) == MF_LOSS_FUSED;
	int closs = mf_est_loss(w) == MF_LOSS_CHUNKED && w->compile;

	memset(&t, 0, sizeof(t));
	memset(&o, 0, sizeof(o));
	if (x->lora) {
		/* A frozen norm weight and lm_head: x in fp32 only. */
		mf_term(own, 4, "h", x->h);
	} else {
		/* Under autocast: x and the normalised x in fp32, and
		 * lm_head's 16-bit cast of the output (10h). */
		mf_term(own, gemma || x->mixed ? 8 : 4 + x->e, "h", x->h);
		if (!fused)
			mf_term(&t, x->mixed ? 2 : x->e, "h", x->h);
	}
	if (fused)
		mf_term(&t, x->eh, "h", x->h);
	else if (closs)
		mf_term(&t, mf_est_precision(w->precision)->act, "V", x->vl);
	else
		mf_term(&t, m->final_softcap ? 4 + x->e : 4,
		    x->vl != m->vocab ? "Vl" : "V", x->vl);
	/* labels (none kept by a fused loss); token ids, which frozen
	 * embeddings do not keep, and the vocabulary-parallel embedding's
	 * mask; rsqrt. */
	ids = (fused ? 0 : 8) + (x->lora ? 0 : token_ids(m, w, x));
	if (ids > 0)
		mf_term(&t, ids, "", 1);
	if (closs) /* the compiled pieces' max and log-sum-exp */
		mf_term(&t, 8, "", 1);
	mf_term(own, 4, "", 1);
	sb = mf_cmul(w->seq_len, w->micro_batch);
	bytes = mf_cmul(sb, mf_terms_bytes(&t));
	mf_text_init(&f, mf_est_text(e, MF_B_LOGITS));
	mf_text_str(&f, "s x b x (");
	mf_text_terms(&f, &t);
	mf_text_str(&f, ")");
	if (own != &t) {
		mf_text_str(&f, " + b x ceil(s / TP) x (");
		mf_text_terms(&f, own);
		mf_text_str(&f, ")");
		bytes = mf_cadd(bytes,
		    mf_cmul(sp_tokens(w, x), mf_terms_bytes(own)));
	}
	/* The output LitGPT's loop holds (lossUpcast: output, est_loss.c). */
	bytes = mf_cadd(bytes, mf_est_output_held(m, w, x->vl, &f));
	if (gemma) {
		/* The final norm's (1 + w) in fp32. */
		mf_text_str(&f, " + 4h");
		bytes = mf_cadd(bytes, mf_cmul(4, x->h));
	}
	e->bucket[MF_B_LOGITS] = bytes;
}

static void
torch_training(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	struct shapes x;
	struct mf_terms rc;
	struct mf_workload fp32;

	mf_est_state(m, w, e);
	/*
	 * PEFT's prepare_model_for_kbit_training casts the embeddings and the
	 * norms to fp32: the residual stream, the norms' outputs and the
	 * 4-bit linears' outputs (bitsandbytes casts each back to its input's
	 * dtype) are fp32, and lm_head's logits too, so the layers and the
	 * loss keep what they keep with fp32 activations (tests/torch/quant.py,
	 * kbit cases: exact).
	 */
	if (w->method == MF_QLORA && w->qlora_kbit_prep) {
		fp32 = *w;
		fp32.precision = MF_FP32;
		w = &fp32;
	}
	x.h = m->hidden;
	x.a = m->heads;
	x.kv = m->kv_heads;
	x.d = m->head_dim;
	x.ad = mf_cmul(m->heads, m->head_dim);
	x.kvd = mf_cmul(m->kv_heads, m->head_dim);
	x.I = m->intermediate;
	x.s = w->seq_len;
	x.lora = w->method != MF_FULL;
	x.compiled = w->compile;
	x.kept_in = w->method == MF_QLORA && w->qlora_keeps_input;
	x.drop = x.lora && w->lora_dropout > 0;
	x.e = mf_est_precision(w->precision)->act;
	x.eh = mf_est_hidden_bytes(w);
	x.mixed = mf_est_precision(w->precision)->mixed;
	if (x.mixed &&
	    (x.lora || m->experts > 0 || m->block == MF_BLOCK_GEMMA)) {
		/*
		 * Not measured under autocast (Gemma-2's norms, transformers'
		 * experts, which grouped_mm runs in the weights' fp32, PEFT's
		 * adapters): counted as fp32, which keeps more.
		 */
		x.e = 4;
		x.mixed = 0;
	}
	x.mask = mf_est_lora_mask(w);
	x.own = mf_est_lora_own(m, w);
	x.ab = mf_est_lora_bytes(w);
	x.r = w->lora_rank;
	/* A tensor-parallel share (mf_model_shard) under sequence or loss
	 * parallel; the whole model's buckets count each tensor once. */
	x.sp = w->sequence_parallel && m->tp > 1 ? m->tp : 1;
	x.vl =
	    w->loss_parallel && m->tp > 1 ? mf_model_vocab_rows(m) : m->vocab;
	torch_activations(m, w, &x, e);
	torch_logits(m, w, &x, e);
	recompute_terms(m, w, &x, &rc);
	mf_est_torch_transient(m, w, x.e, x.vl, &rc, e);
	mf_est_fsdp(m, w, e);
}

const struct mf_est_ops mf_est_pytorch = { "pytorch", torch_training };
