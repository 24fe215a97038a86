/*
 * estimate.c: the memory buckets of design section 5.
 *
 * Every figure is computed with checked arithmetic: an intermediate that
 * would pass 2^63 - 1 becomes -1 and poisons everything computed from it,
 * and mf_est_compute turns a poisoned bucket into MF_ERANGE.
 *
 * Choices where the design is silent:
 * - a workload outside its domain (a negative count, shard_gpus < 1, an
 *   enum value out of range) is MF_EINVAL and leaves *out untouched;
 * - sharding applies to full training only, the one method FSDP is offered
 *   for; with any other workload shard_gpus is ignored and the estimate is
 *   that of one GPU, which can only overstate the need;
 * - LoRA adapters with SGD hold 12 bytes per trainable parameter (fp32
 *   weight, gradient and momentum), between AdamW's 16 and 8-bit Adam's 10.
 *
 * Two estimators (design 13) share weights, gradients, optimizer state,
 * adapters, sharding buffers and the KV cache: the recipe both assume is
 * 16-bit weights and gradients with fp32 master weights and moments
 * (8-bit moments for adam8bit), a frozen base with fp32 adapters for
 * LoRA.  They differ in what a training step keeps besides: post has the
 * reference post's GPT-block activations (34 + 5as/h per token and
 * hidden unit) and fp32 logits; pytorch counts, tensor by tensor, what
 * PyTorch >= 2.0 keeps for backward in the block the config's model_type
 * names, and the largest short-lived allocation of the step (transient).
 * Every pytorch coefficient is a measured fact: tests/torch/measure.py
 * builds small models of each block as its Hugging Face reference writes
 * it and measures, with Debian's torch 1.13 on CPU, the bytes saved for
 * backward (saved_tensors_hooks, distinct storages, parameters out) and
 * the peak of a whole step, and fails when these functions are off by
 * more than 2% or below the peak (make torch; the table in README.md).
 *
 * Each bucket's formula text is written by the function that computes
 * its bytes, from the same terms, so the two cannot disagree
 * (test_estimate.c evaluates every formula back to its bytes).
 */
#include "estimate.h"

#include <string.h>

#include "forward.h"
#include "internal.h"

/* a / n rounded up, for a >= 0 and n >= 1; -1 stays -1. */
static int64_t
cdiv_up(int64_t a, int64_t n)
{
	if (a < 0)
		return -1;
	return a / n + (a % n != 0);
}

void
mf_workload_defaults(struct mf_workload *w)
{
	memset(w, 0, sizeof(*w));
	w->kind = MF_TRAINING;
	w->method = MF_FULL;
	w->precision = MF_BF16;
	w->optimizer = MF_ADAMW;
	w->attention = MF_SDPA;
	w->checkpointing = 0;
	w->seq_len = 0;
	w->micro_batch = 1;
	w->lora_rank = 16;
	w->lora_targets = MF_LORA_ALL_LINEAR;
	w->shard_gpus = 1;
	w->concurrency = 1;
	w->context_len = 0;
	w->kv_dtype = MF_KV_BF16;
	w->weights_dtype = MF_WD_DEFAULT;
	w->group_size = 128;
	w->server = MF_SERVER_NONE;
	w->gpu_util = 0.9;
	w->batched_tokens = 8192;
	w->block_size = 16;
	w->graph_reserve = MF_GRAPH_RESERVE_DEFAULT;
	w->tensor = w->pipeline = w->expert = 1;
	w->estimator = MF_EST_PYTORCH;
}

const char *
mf_bucket_name(enum mf_bucket b)
{
	static const char *const names[MF_B_COUNT] = {
		[MF_B_WEIGHTS] = "weights",
		[MF_B_GRADIENTS] = "gradients",
		[MF_B_OPTIMIZER] = "optimizer",
		[MF_B_ADAPTERS] = "adapters",
		[MF_B_ACTIVATIONS] = "activations",
		[MF_B_LOGITS] = "logits",
		[MF_B_TRANSIENT] = "transient",
		[MF_B_KVCACHE] = "kvCache",
		[MF_B_SHARDING] = "shardingBuffers",
		[MF_B_GRAPHS] = "cudaGraphs",
		[MF_B_COMM] = "commBuffers",
	};

	if ((unsigned)b >= MF_B_COUNT)
		return NULL;
	return names[b];
}

static const char *const estimators[MF_EST_COUNT] = {
	[MF_EST_PYTORCH] = "pytorch",
	[MF_EST_POST] = "post",
};

const char *
mf_estimator_name(enum mf_estimator e)
{
	return (unsigned)e < MF_EST_COUNT ? estimators[e] : NULL;
}

enum mf_rc
mf_estimator_parse(const char *name, enum mf_estimator *out)
{
	for (int i = 0; name != NULL && i < MF_EST_COUNT; i++)
		if (strcmp(name, estimators[i]) == 0) {
			*out = (enum mf_estimator)i;
			return MF_OK;
		}
	return MF_EINVAL;
}

/* --- formula text: terms.c ----------------------------------------------- */

static int
workload_ok(const struct mf_workload *w)
{
	if ((unsigned)w->kind > MF_INFERENCE ||
	    (unsigned)w->method > MF_QLORA ||
	    (unsigned)w->precision > MF_FP32 ||
	    (unsigned)w->optimizer > MF_SGD ||
	    (unsigned)w->attention > MF_EAGER ||
	    (unsigned)w->lora_targets > MF_LORA_ATTENTION ||
	    (unsigned)w->kv_dtype > MF_KV_FP8 ||
	    (unsigned)w->weights_dtype > MF_WD_INT4 ||
	    (unsigned)w->server > MF_SERVER_VLLM ||
	    (unsigned)w->estimator >= MF_EST_COUNT)
		return 0;
	return w->seq_len >= 0 && w->micro_batch >= 0 && w->lora_rank >= 0 &&
	    w->shard_gpus >= 1 && w->concurrency >= 0 && w->context_len >= 0 &&
	    w->group_size >= 1 && w->batched_tokens >= 1 &&
	    w->block_size >= 1 && w->graph_reserve >= 0 && w->tensor >= 1 &&
	    w->pipeline >= 1 && w->expert >= 1;
}

/* bytes = P x n (or T x n), with its formula. */
static void
per_param(struct mf_estimate *e, enum mf_bucket b, const char *sym,
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

/* Weights, gradients, optimizer, adapters and sharding buffers: the same
 * recipe under both estimators. */
static void
state(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	int64_t P = e->params, T;
	int fp32 = w->precision == MF_FP32;
	struct mf_text f;

	if (w->method == MF_QLORA) {
		mf_text_init(&f, e->formula[MF_B_WEIGHTS]);
		mf_text_str(&f, "P x 0.5");
		e->bucket[MF_B_WEIGHTS] = cdiv_up(P, 2);
	} else {
		per_param(e, MF_B_WEIGHTS, "P", P, fp32 ? 4 : 2);
	}
	if (w->method == MF_FULL) {
		e->trainable = P;
		per_param(e, MF_B_GRADIENTS, "P", P, fp32 ? 4 : 2);
		per_param(e, MF_B_OPTIMIZER, "P", P,
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
		per_param(e, MF_B_ADAPTERS, "T", T,
		    adapter_bytes(w->optimizer));
	}
}

/* --- post: design section 5 ------------------------------------------- */

/*
 * L * s*b*h*(34 + 5*a*s/h), computed as L*s*b*(34*h + 5*a*s) so that no
 * fraction is lost; sdpa and flash keep no attention matrix (L*s*b*h*34);
 * checkpointing keeps one input per layer (2*s*b*h*L).  fp32 doubles.
 */
static void
post_activations(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	int fp32 = w->precision == MF_FP32;
	int64_t sb, per;
	struct mf_text f;

	mf_text_init(&f, e->formula[MF_B_ACTIVATIONS]);
	sb = mf_cmul(w->seq_len, w->micro_batch);
	if (w->checkpointing) {
		mf_text_str(&f, "2 x s x b x h x L");
		per = mf_cmul(2, m->hidden);
	} else if (w->attention == MF_EAGER) {
		mf_text_str(&f, "L x s x b x h x (34 + 5as/h)");
		per = mf_cadd(mf_cmul(34, m->hidden),
		    mf_cmul(5, mf_cmul(m->heads, w->seq_len)));
	} else {
		mf_text_str(&f, "L x s x b x h x 34");
		per = mf_cmul(34, m->hidden);
	}
	if (fp32)
		mf_text_str(&f, " x 2 (fp32)");
	per = mf_cmul(mf_cmul(m->layers, sb), per);
	e->bucket[MF_B_ACTIVATIONS] = fp32 ? mf_cmul(2, per) : per;
}

static void
post_training(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	struct mf_text f;

	state(m, w, e);
	post_activations(m, w, e);
	mf_text_init(&f, e->formula[MF_B_LOGITS]);
	mf_text_str(&f, "s x b x V x 4");
	e->bucket[MF_B_LOGITS] =
	    mf_cmul(mf_cmul(w->seq_len, w->micro_batch), mf_cmul(m->vocab, 4));
}

/* --- pytorch: what PyTorch keeps, measured ----------------------------- */

/*
 * Bytes per token, per layer, kept for backward by a training forward
 * (symbols: e = 2 for bf16/fp16, 4 for fp32, the activations' dtype; ad
 * = a x d, kvd = kv x d).  Measured by tests/torch/measure.py (make
 * torch; the README's table) on every shipped block, bf16 and fp32,
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
		step = cdiv_up(step, w->shard_gpus);
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

	state(m, w, e);
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

int64_t
mf_est_linear_bytes(enum mf_weights_dtype wd, int64_t n, int64_t group)
{
	switch (wd) {
	case MF_WD_FP8:
	case MF_WD_INT8:
		return n;
	case MF_WD_INT4:
		/* Two weights a byte, and an fp16 scale a group. */
		return mf_cadd(cdiv_up(n, 2), mf_cmul(2, cdiv_up(n, group)));
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
		per_param(e, MF_B_WEIGHTS, "P", e->params,
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

/* a rounded up to a whole number of n; -1 stays -1. */
static int64_t
round_up(int64_t a, int64_t n)
{
	return mf_cmul(cdiv_up(a, n), n);
}

/*
 * Weights and a KV cache of seqs sequences of ctx tokens; with vllm, the
 * activation peak of one forward over maxNumBatchedTokens tokens
 * (forward.c), the CUDA-graph reserve and each sequence's tokens in whole
 * blocks of blockSize (paged attention allocates a block at a time).
 */
static void
inference(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	int kvb = w->kv_dtype == MF_KV_FP8 ? 1 : 2, vllm;
	struct mf_text f;

	vllm = w->server == MF_SERVER_VLLM;
	inference_weights(m, w, e);
	e->kv_token = mf_model_kv_bytes_per_token(m, kvb);
	e->block = vllm ? w->block_size : 1;
	e->seq_tokens = round_up(w->context_len, e->block);
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

/* Bucket b as one GPU of an FSDP full shard over n holds it. */
static int64_t
per_gpu_bucket(const int64_t *bucket, enum mf_bucket b, int64_t n)
{
	if (b == MF_B_WEIGHTS || b == MF_B_GRADIENTS || b == MF_B_OPTIMIZER)
		return cdiv_up(bucket[b], n);
	return bucket[b];
}

int64_t
mf_est_per_gpu(const struct mf_estimate *e, int64_t shards)
{
	int64_t sum = 0;

	for (int b = 0; b < MF_B_COUNT; b++)
		sum = mf_cadd(sum,
		    per_gpu_bucket(e->stage, (enum mf_bucket)b, shards));
	return sum;
}

int64_t
mf_est_bucket_per_gpu(const struct mf_estimate *e, enum mf_bucket b)
{
	if ((unsigned)b >= MF_B_COUNT)
		return 0;
	return per_gpu_bucket(e->stage, b, e->shards);
}

/* Every bucket of m under w, whole, with params and trainable. */
static void
buckets_of(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	e->params = mf_model_params(m);
	if (w->kind == MF_INFERENCE)
		inference(m, w, e);
	else if (w->estimator == MF_EST_POST)
		post_training(m, w, e);
	else
		torch_training(m, w, e);
	/* What lives outside the layers stays on the stage with the head. */
	if (m->no_head)
		e->bucket[MF_B_LOGITS] = 0;
}

/*
 * Tokens a forward runs at once: those whose hidden states tensor and
 * pipeline parallel send.  Training: s x b; vllm: maxNumBatchedTokens;
 * plain inference: one sequence's prefill.
 */
static int64_t
forward_tokens(const struct mf_workload *w)
{
	if (w->kind == MF_TRAINING)
		return mf_cmul(w->seq_len, w->micro_batch);
	return w->server == MF_SERVER_VLLM ? w->batched_tokens : w->context_len;
}

/*
 * One GPU of a pipeline stage (first, last, or both when there is one
 * stage) of the layout w asks for: the buckets of the model's share on
 * it (mf_model_shard).  Pipeline training runs 1F1B, so the first stage
 * keeps the activations of P micro-batches in flight (stage i keeps P -
 * i): times P here, the last stage's once.  Communication buffers, a
 * hidden state of the forward's tokens each (e bytes an element, e the
 * activations' dtype): tensor parallel's all-reduce writes its output
 * into a new tensor beside its input; a pipeline stage sends one and
 * receives one.
 */
static void
stage_buckets(const struct mf_model *m, const struct mf_workload *w, int first,
    int last, int64_t *stage, int64_t *kv_token)
{
	int64_t layers = cdiv_up(m->layers, w->pipeline), th, comm = 0;
	struct mf_model part;
	struct mf_estimate e;

	mf_model_shard(m, w->tensor, w->expert, layers, first, last, &part);
	memset(&e, 0, sizeof(e));
	buckets_of(&part, w, &e);
	if (w->kind == MF_TRAINING && first)
		e.bucket[MF_B_ACTIVATIONS] =
		    mf_cmul(e.bucket[MF_B_ACTIVATIONS], w->pipeline);
	th = mf_cmul(forward_tokens(w),
	    mf_cmul(m->hidden, w->precision == MF_FP32 ? 4 : 2));
	if (w->tensor > 1)
		comm = th;
	if (w->pipeline > 1)
		comm = mf_cadd(comm, mf_cmul(2, th));
	e.bucket[MF_B_COMM] = comm;
	memcpy(stage, e.bucket, sizeof(e.bucket));
	*kv_token = e.kv_token;
}

static int64_t
stage_sum(const int64_t *stage, int64_t shards)
{
	int64_t sum = 0;

	for (int b = 0; b < MF_B_COUNT; b++)
		sum = mf_cadd(sum,
		    per_gpu_bucket(stage, (enum mf_bucket)b, shards));
	return sum;
}

/*
 * e->stage: what one GPU of the largest stage holds; the middle stages
 * hold no more than the first or the last.  The whole job's
 * communication buffers are every GPU's of a replica.
 */
static void
layout(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	int64_t last[MF_B_COUNT], kv_token, n;

	if (w->tensor == 1 && w->pipeline == 1 && w->expert == 1) {
		memcpy(e->stage, e->bucket, sizeof(e->bucket));
		return;
	}
	/* Every stage holds as many layers, so as much KV cache a token. */
	stage_buckets(m, w, 1, w->pipeline == 1, e->stage, &e->kv_token);
	if (w->pipeline > 1) {
		stage_buckets(m, w, 0, 1, last, &kv_token);
		if (stage_sum(last, e->shards) > stage_sum(e->stage, e->shards))
			memcpy(e->stage, last, sizeof(last));
	}
	e->bucket[MF_B_COMM] =
	    mf_cmul(e->stage[MF_B_COMM], mf_cmul(w->tensor, w->pipeline));
	if (e->bucket[MF_B_COMM] > 0) {
		struct mf_text f;

		/* Hidden states a GPU keeps: 1 for tensor parallel's
		 * all-reduce, 2 for a stage's send and receive. */
		n = (w->tensor > 1 ? 1 : 0) + (w->pipeline > 1 ? 2 : 0);
		mf_text_init(&f, e->formula[MF_B_COMM]);
		mf_text_str(&f, "TP x PP x ");
		mf_text_int(&f, n);
		mf_text_str(&f, " x tokens x h x ");
		mf_text_int(&f, w->precision == MF_FP32 ? 4 : 2);
	}
}

int64_t
mf_est_max_seqs(const struct mf_estimate *e, int64_t usable)
{
	int64_t kv = mf_est_bucket_per_gpu(e, MF_B_KVCACHE);
	int64_t free = usable - (e->per_gpu - kv), seq;

	seq = mf_cmul(e->kv_token, e->seq_tokens);
	if (free <= 0 || seq <= 0)
		return 0;
	return free / seq;
}

int64_t
mf_est_max_context(const struct mf_estimate *e, int64_t usable, int64_t seqs)
{
	int64_t kv = mf_est_bucket_per_gpu(e, MF_B_KVCACHE);
	int64_t free = usable - (e->per_gpu - kv), per;

	per = mf_cmul(e->kv_token, seqs);
	if (free <= 0 || per <= 0 || e->block < 1)
		return 0;
	return free / per / e->block * e->block;
}

enum mf_rc
mf_est_compute(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *out)
{
	struct mf_estimate e;
	int b;

	if (!workload_ok(w))
		return MF_EINVAL;
	memset(&e, 0, sizeof(e));
	e.estimator = w->estimator;
	buckets_of(m, w, &e);
	e.shards =
	    w->kind == MF_TRAINING && w->method == MF_FULL ? w->shard_gpus : 1;
	layout(m, w, &e);
	for (b = 0; b < MF_B_COUNT; b++)
		e.total = mf_cadd(e.total, e.bucket[b]);
	e.per_gpu = mf_est_per_gpu(&e, e.shards);
	if (e.params < 0 || e.trainable < 0 || e.total < 0 || e.per_gpu < 0 ||
	    e.kv_token < 0 || e.seq_tokens < 0)
		return MF_ERANGE;
	*out = e;
	return MF_OK;
}

enum mf_rc
mf_est_range_error(struct mf_error *err)
{
	return mf_error_set(err, MF_ERANGE, "spec.workload", 0, 0,
	    "the memory figures of this job overflow 63 bits");
}
