/*
 * forward.c: the activation peak of one no-grad forward (design 14).
 *
 * A serving engine (vLLM) profiles the card with one forward over its
 * largest batch of tokens, flattened across up to seqs sequences, and
 * leaves for the KV cache what that forward's peak does not take.  The
 * peak is the largest of a few phases, each a set of tensors alive at
 * once: three moments of attention, a norm, the MLP (or the experts) of
 * one layer, and the logits of the last token of each sequence with the
 * sampler's top-k/top-p filter.  Layers run one after another, so the layer
 * count does not appear.
 *
 * Every term is one tensor, measured by tests/torch/forward.py (make
 * torch), which runs the blocks of tests/torch/blocks.py under no_grad
 * and fails when this function is off the profiler's peak by more than
 * 2% or below it.  The blocks are written as the Hugging Face reference
 * writes them, which in places keeps more than vLLM's fused kernels
 * (noted at each phase): the figure may be above vLLM's own, never below
 * what the measured forward needs.  Where vLLM's kernels keep more than
 * the reference (fused MoE holds every routed copy of every token at
 * once) the blocks emulate the kernel's memory.
 *
 * Symbols (estimate.c's): h, a, kv, d, ad = a x d, kvd = kv x d, I, Ie
 * (a routed expert's width), Is (the shared expert's), E, k, V; t the
 * tokens, reqs the sequences (vLLM's num_reqs); the activation bytes e =
 * 2 are written as
 * numbers.
 */
#include "forward.h"

#include <assert.h>
#include <string.h>

#include "../base/internal.h"

#define EB 2 /* activation bytes: bf16 or fp16 */

/* Sums of terms and their text: terms.c. */

struct dims {
	int64_t h, ad, kvd;
};

/*
 * Attention, per token, at its three fullest moments; all hold the
 * layer's input (eh: the caller's, which the residual keeps) and its
 * normalised copy (eh).
 * - RoPE of q: q, k and v as projected (ad + 2kvd; Phi-3's one qkv, the
 *   same bytes), and rope's q x cos, rotate_half(q) and its product with
 *   sin (3ad).
 * - RoPE of k: q before and after (2ad), k and v (2kvd), and rope's three
 *   of k (3kvd).
 * - o_proj: q and k after RoPE, v (ad + 2kvd), the kernel's output (ad)
 *   and o_proj's (eh).
 * The fused kernel (flash or paged) allocates only its output: it holds
 * no s x s scores (blocks.py's flash_rows).  vLLM rotates q and k in
 * place, in one qkv tensor: it holds 3eh + e(2ad + 2kvd) at most, the
 * third moment, which the first two can pass.
 */
static void
attention(const struct dims *x, struct mf_terms p[3])
{
	mf_term(&p[0], 2 * EB, "h", x->h);
	mf_term(&p[0], 4 * EB, "ad", x->ad);
	mf_term(&p[0], 2 * EB, "kvd", x->kvd);
	mf_term(&p[1], 2 * EB, "h", x->h);
	mf_term(&p[1], 2 * EB, "ad", x->ad);
	mf_term(&p[1], 5 * EB, "kvd", x->kvd);
	mf_term(&p[2], 3 * EB, "h", x->h);
	mf_term(&p[2], 2 * EB, "ad", x->ad);
	mf_term(&p[2], 2 * EB, "kvd", x->kvd);
}

/*
 * RMSNorm, per token, as the reference upcasts: its input in fp32 and
 * that times rsqrt of the variance (8h), the variance and its rsqrt (8),
 * with the layer's input and the residual sum that is normalised (2eh).
 * Gemma's norm after the MLP is the fullest: the layer's input, the
 * residual and the MLP's output (3eh), the fp32 input and its product
 * with (1 + w) (8h) and that cast back (eh); its (1 + w) in fp32 is 4h
 * bytes a norm, not a token (see mf_forward_peak).  vLLM's fused
 * residual-add norm works in place and keeps none of it.
 */
static void
norm(const struct mf_model *m, struct mf_terms *p)
{
	if (m->block == MF_BLOCK_GEMMA) {
		mf_term(p, 4 * EB + 8, "h", m->hidden);
		return;
	}
	mf_term(p, 2 * EB + 8, "h", m->hidden);
	mf_term(p, 8, "", 1);
}

/*
 * The MLP, per token, with the layer's input, the residual sum and its
 * normalised copy (3eh), at down_proj, whose output (eh) is alive.
 * - SwiGLU / GeGLU: act(gate), up and their product (3eI); vLLM's fused
 *   gate_up (2eI) and act-and-mul (eI) hold the same.
 * - Phi-3: its gate_up (2eI), which the chunk's views keep, act(gate)
 *   and the product (4eI); vLLM holds 3eI.
 * - Experts, as vLLM's fused MoE holds them whatever the routing: the
 *   router's logits (eE), the top-k weights (ek; their fp32 softmax over
 *   E is gone by then), their int64 indices, the order of the routed
 *   copies and their token numbers (24k), the kernel's three buffers per
 *   routed copy, gate and up (2eIe), act-and-mul (eIe) and the weighted
 *   down projection (eh), and the output (eh).  vLLM from 0.7 shares
 *   the first and last buffer; its sorted ids are int32: it holds less.
 * - Qwen2-MoE runs its shared expert first, as vLLM does: the shared MLP
 *   (4eh + 3eIs) is its own phase, and its gated output (eh) is alive
 *   while the routed experts run.
 * Returns the number of phases written into p (1 or 2).
 */
static int
mlp(const struct mf_model *m, struct mf_terms *p)
{
	int64_t h = m->hidden, k = m->experts_per_tok;
	int64_t ie = mf_model_expert_width(m);

	if (m->experts == 0) {
		mf_term(p, 4 * EB, "h", h);
		mf_term(p, (m->block == MF_BLOCK_PHI3 ? 4 : 3) * EB, "I",
		    m->intermediate);
		return 1;
	}
	if (m->shared_intermediate > 0) {
		mf_term(p, 4 * EB, "h", h);
		mf_term(p, 3 * EB, "Is", m->shared_intermediate);
		p++;
		mf_term(p, EB, "h", h);
	}
	mf_term(p, 4 * EB, "h", h);
	mf_term(p, EB, "kh", mf_cmul(k, h));
	mf_term(p, 3 * EB, "kIe", mf_cmul(k, ie));
	mf_term(p, EB, "E", m->experts);
	mf_term(p, EB + 24, "k", k);
	return m->shared_intermediate > 0 ? 2 : 1;
}

/*
 * The logits phase, after the last layer, at its fullest moment: vLLM's
 * profile run samples with top-k and top-p (vllm/v1/worker/
 * gpu_model_runner.py, _dummy_sampler_run: temperature 0.5, top_p 0.9,
 * top_k V - 1, no logprobs, no penalties), twice, the second time with a
 * generator, which takes TopKTopPSampler.forward_native (vllm 0.33,
 * vllm/v1/sample/ops/topk_topp_sampler.py).  There the top-k/top-p filter
 * is Triton's (apply_top_k_top_p_triton, topk_topp_triton.py), which
 * masks the fp32 logits in place; the softmax and the exponential noise
 * of random_sample follow, and that is the peak.  Triton's filter keeps a
 * buffer of at most one row of V fp32 a streaming multiprocessor, cached
 * across calls (132 rows, 68 MB, for Llama 3 on an H100): not counted.
 * FlashInfer's sampler, the first call's, holds no more.  Gemma-2's
 * soft-capping holds two eV at a time, before the sampler: less.
 */
static void
logits(const struct mf_model *m, struct mf_terms *tok, struct mf_terms *seq)
{
	int64_t h = m->hidden, v = m->vocab;

	mf_term(tok, EB, "h", h); /* every token's hidden state, the runner's */
	mf_term(seq, EB, "h", h); /* the last token's, which the runner keeps */
	mf_term(seq, EB, "h", h); /* its random stand-in (rand_like), kept */
	mf_term(seq, EB, "V", v); /* the 16-bit logits */
	mf_term(seq, 4, "V", v);  /* the sampler's fp32 copy, masked in place */
	mf_term(seq, 4, "V", v);  /* its softmax (fp32) */
	mf_term(seq, 4, "V", v);  /* the exponential noise (fp32) */
	/* The dummy metadata, a value a sequence: */
	mf_term(seq, 4, "", 1); /* temperature (fp32) */
	mf_term(seq, 4, "", 1); /* top_p (fp32) */
	mf_term(seq, 8, "", 1); /* top_k (int64) */
	mf_term(seq, 4, "", 1); /* the frequency penalty (fp32) */
	mf_term(seq, 4, "", 1); /* the presence penalty (fp32) */
	mf_term(seq, 4, "", 1); /* the repetition penalty (fp32) */
	mf_term(seq, 4, "", 1); /* the first call's ids (int32), which the
	                         * warm-up call with a generator runs beside */
	mf_term(seq, 8, "", 1); /* the greedy ids (int64) */
	mf_term(seq, 8, "", 1); /* the random ids (int64), the argmax made
	                         * while the softmax and the noise live */
}

/*
 * The V0 engine's logits phase (vllm/model_executor/layers/sampler.py up to
 * vLLM 0.7.x; vllm/worker/model_runner.py profile_run samples every
 * sequence with top_p 0.99 and top_k V - 1, so the filter runs), at its
 * fullest moment, the gather that re-sorts the filtered logits.  Per
 * sequence: the logits (b bytes a value: 16-bit before vLLM 0.5.5; from
 * 0.5.5, pull request 2937, an fp32 copy beside the runner's 16-bit
 * ones), the sorted logits, the softmax of the sorted logits and its
 * cumulative sum, the re-sorted output (5b), their int64 order and its
 * inverse (16), the boolean masks (top-p, top-k and their union to 0.2.7,
 * _apply_top_p_top_k; top-k and top-p from 0.3.0, _apply_top_k_top_p,
 * pull request 1885: 3, then 2), from 0.3.0 the k-th largest value
 * gathered (b), and the sampling tensors (sampling_metadata.py
 * SamplingTensors: temperature, top-p, min-p and three penalties in the
 * 16-bit logits' dtype, top-k in int32: 16).  Once: the arange(V) int64
 * row the inverse order is scattered from (8V).  Per token, before 0.5.0
 * (pull request 5289 made them only with penalties): the prompt tokens,
 * int64 (8).  The softmax, log_softmax and exponential noise that follow
 * hold less.  Not counted: the sort's own workspace (CUDA's segmented
 * radix sort; the CPU's sort holds a row of its own, which
 * tests/torch/forward.py takes off).
 * vLLM 0.2.5's _apply_top_p_top_k (before pull request 1889) is fullest
 * earlier, at the argsort of the order that re-sorts the logits: the
 * logits, sorted, probs and cumsum (4 x 2), the order (8), the top-p and
 * top-k masks (2), and argsort's sorted copy of the order and its indices
 * (16); with top-p (16-bit) and top-k (int32) a sequence (6), and no
 * sampling tensors, prompt tokens or arange row left.
 */
static void
logits_v0(const struct mf_model *m, enum mf_sampler s, struct mf_terms *tok,
    struct mf_terms *seq)
{
	int64_t h = m->hidden, v = m->vocab;
	int b = s == MF_SAMPLER_V0_32 ? 4 : EB;

	mf_term(tok, EB, "h", h); /* every token's hidden state */
	if (s == MF_SAMPLER_V0_A16) {
		mf_term(seq, EB, "h", h); /* the last token's */
		mf_term(seq, 4 * EB + 26, "V", v);
		mf_term(seq, EB + 4, "", 1);
		return;
	}
	if (s == MF_SAMPLER_V0_P16 || s == MF_SAMPLER_V0_16P)
		mf_term(tok, 8, "", 1); /* its prompt token (int64) */
	mf_term(seq, EB, "h", h); /* the last token's, index_select's copy */
	if (s == MF_SAMPLER_V0_32)
		mf_term(seq, EB, "V", v); /* the runner's 16-bit logits */
	mf_term(seq, 5 * b, "V", v);
	mf_term(seq, 16 + (s == MF_SAMPLER_V0_P16 ? 3 : 2), "V", v);
	mf_term(seq, 16 + (s == MF_SAMPLER_V0_P16 ? 0 : b), "", 1);
}

int64_t
mf_forward_peak(const struct mf_model *m, int64_t tokens, int64_t seqs,
    char *formula)
{
	return mf_forward_peak_sampler(m, tokens, seqs, MF_SAMPLER_V1, formula);
}

int64_t
mf_forward_peak_sampler(const struct mf_model *m, int64_t tokens, int64_t seqs,
    enum mf_sampler s, char *formula)
{
	struct mf_terms p[6], tok, seq;
	struct dims x;
	struct mf_text f;
	int64_t per = 0, layer, out, gconst = 0, once = 0;
	int n = 4;

	mf_text_init(&f, formula);
	memset(p, 0, sizeof(p));
	memset(&tok, 0, sizeof(tok));
	memset(&seq, 0, sizeof(seq));
	x.h = m->hidden;
	x.ad = mf_cmul(m->heads, m->head_dim);
	x.kvd = mf_cmul(m->kv_heads, m->head_dim);
	attention(&x, p);
	norm(m, &p[3]);
	n += mlp(m, &p[4]);
	assert(n <= (int)(sizeof(p) / sizeof(p[0])));
	for (int i = 0; i < n; i++)
		per = mf_max_poisoned(per, mf_terms_bytes(&p[i]));
	/* RoPE's cos and sin, made once a forward (2ed). */
	per = mf_cadd(per, mf_cmul(2 * EB, m->head_dim));
	layer = mf_cmul(tokens, per);
	if (m->block == MF_BLOCK_GEMMA) {
		/* Gemma's (1 + w) in fp32, in its norm's phase; counted in
		 * whichever phase is the peak, above by at most 4h bytes. */
		gconst = mf_cmul(4, m->hidden);
		layer = mf_cadd(layer, gconst);
	}
	if (s == MF_SAMPLER_V1)
		logits(m, &tok, &seq);
	else
		logits_v0(m, s, &tok, &seq);
	if (s != MF_SAMPLER_V1 && s != MF_SAMPLER_V0_A16)
		once = mf_cmul(8, m->vocab); /* the V0 filter's arange(V) */
	out = mf_cadd(mf_cadd(mf_cmul(tokens, mf_terms_bytes(&tok)),
	                  mf_cmul(seqs, mf_terms_bytes(&seq))),
	    once);
	if (formula != NULL)
		formula[0] = '\0';
	mf_text_str(&f, "max(t x (");
	mf_text_int(&f, 2 * EB);
	mf_text_str(&f, "d + max(");
	for (int i = 0; i < n; i++) {
		if (i > 0)
			mf_text_str(&f, ", ");
		mf_text_terms(&f, &p[i]);
	}
	mf_text_str(&f, "))");
	if (gconst > 0)
		mf_text_str(&f, " + 4h");
	mf_text_str(&f, tok.n > 1 ? ", t x (" : ", t x ");
	mf_text_terms(&f, &tok);
	if (tok.n > 1)
		mf_text_str(&f, ")");
	mf_text_str(&f, " + reqs x (");
	mf_text_terms(&f, &seq);
	mf_text_str(&f, ")");
	if (once > 0)
		mf_text_str(&f, " + 8V");
	mf_text_str(&f, ")");
	return mf_max_poisoned(layer, out);
}
