/*
 * work.c: the work of one step of a job (design 21), from the model shape
 * and the workload the memory estimate reads: matmul FLOPs by part, the
 * bytes the other kernels move, and what the step communicates.
 *
 * The FLOPs are those torch.utils.flop_counter.FlopCounterMode counts on
 * transformers' own modules (tests/torch/flops.py, make torch, within 1%
 * on every case): 2 x out x in a token for each linear a token passes
 * (a routed expert only for the top-k a token goes to), 2 x s_k x a x d
 * each for attention's scores and values, the output head.
 */
#include <assert.h>

#include "time.h"

/* Bytes of an element of the activations and of the weights a training
 * step's matmuls read: 4 in fp32, else 2. */
static int64_t
act_bytes(const struct mf_workload *w)
{
	return w->precision == MF_FP32 ? 4 : 2;
}

static enum mf_dtype
train_dtype(const struct mf_workload *w)
{
	switch (w->precision) {
	case MF_FP32:
		/* torch.backends.cuda.matmul.allow_tf32 is False by default
		 * since PyTorch 1.12: an fp32 matmul runs in fp32. */
		return MF_DT_FP32;
	case MF_FP16:
	case MF_FP16_MIXED:
		return MF_DT_FP16;
	default:
		return MF_DT_BF16;
	}
}

/*
 * The linears' forward FLOPs a token, 2 x out x in each; routed experts
 * count the top-k of E a token is sent to.  Into lin; the router (h x E
 * a layer) and Qwen2-MoE's shared expert gate (h x 1) beside them.
 */
static double
linear_flops(const struct mf_model *m)
{
	struct mf_linear v[MF_MODEL_MAX_LINEARS];
	size_t n = mf_model_linears(m, v);
	double sum = 0, h = (double)m->hidden, L = (double)m->layers;

	assert(n <= MF_MODEL_MAX_LINEARS);
	for (size_t i = 0; i < n; i++) {
		double f = 2.0 * (double)v[i].out * (double)v[i].in *
		    (double)v[i].count;
		if (v[i].owner == MF_LIN_ROUTED)
			f *= (double)m->experts_per_tok / (double)m->experts;
		sum += f;
	}
	if (m->experts > 0)
		sum += 2.0 * h * (double)m->experts * L;
	if (m->shared_intermediate > 0)
		sum += 2.0 * h * L;
	return sum;
}

/* The output head, 2 x h x V a token. */
static double
head_flops(const struct mf_model *m)
{
	return 2.0 * (double)m->hidden * (double)m->vocab;
}

/*
 * Attention's two matmuls (scores Q K^T and the values), a token of a
 * sequence of s, all layers: 2 x 2 x s_k x a x d, where s_k is the keys a
 * query is multiplied with: every s of them in eager attention's bmm
 * (the causal mask is applied after), (s + 1) / 2 on average in a causal
 * fused kernel, which skips the masked blocks (FlashAttention-2,
 * Dao 2023, section 3.1).
 */
static double
attn_flops(const struct mf_model *m, double s, int causal_skip)
{
	double sk = causal_skip ? (s + 1) / 2 : s;

	return 4.0 * sk * (double)m->heads * (double)m->head_dim *
	    (double)m->layers;
}

/* The adapters' forward FLOPs a token: 2 x r x (in + out) a linear. */
static double
lora_flops(const struct mf_model *m, const struct mf_workload *w)
{
	if (w->method == MF_FULL)
		return 0;
	return 2.0 *
	    (double)mf_model_lora_params(m, w->lora_rank, mf_est_lora_mask(w));
}

/* The FLOPs of a linear of kind k of the layer (routed experts: all a
 * token is sent to), a token. */
static double
kind_flops(const struct mf_model *m, enum mf_linear_kind k,
    enum mf_linear_owner owner)
{
	struct mf_linear v[MF_MODEL_MAX_LINEARS];
	size_t n = mf_model_linears(m, v);
	double sum = 0;

	assert(n <= MF_MODEL_MAX_LINEARS);
	for (size_t i = 0; i < n; i++) {
		double f = 2.0 * (double)v[i].out * (double)v[i].in;

		if (v[i].kind != k || v[i].owner != owner)
			continue;
		if (owner == MF_LIN_ROUTED)
			f *= (double)m->experts_per_tok;
		sum += f;
	}
	return sum;
}

/*
 * Whether recomputation stops before a layer's last matmul: torch's
 * non-reentrant checkpoint (the default) stops recomputing once the last
 * tensor backward needs is recovered, and a matmul's inputs are saved
 * before it runs, so the layer's last matmul is not run again unless an
 * op after it saves its output: Gemma-2's post-feedforward norm, an MoE
 * layer's routing weights and shared expert gate (tests/torch/flops.py).
 */
static int
early_stop(const struct mf_model *m)
{
	return m->block != MF_BLOCK_GEMMA && m->experts == 0;
}

/*
 * A layer's recomputation under per-op selective checkpointing as
 * torchtitan's SelectiveAC runs it (est_pytorch.c's mm_out), a token:
 * every second aten.mm of the layer, counted in order, is recomputed;
 * addmm (Qwen2's biased q, k, v) and bmm are saved and not counted;
 * grouped_mm (transformers' routed experts) is always recomputed; the
 * early stop drops a recomputed last matmul.  Llama, Mistral and
 * Gemma-2: k, o and up; Qwen2: gate; Phi-3: o.  Qwen2-MoE measured: the
 * routed experts, the shared expert's gate and up and its gate.
 */
static double
op_recompute_flops(const struct mf_model *m)
{
	struct mf_linear v[MF_MODEL_MAX_LINEARS];
	size_t n = mf_model_linears(m, v), last = 0;
	double sum = 0, L = (double)m->layers;
	int mm = 0;

	assert(n <= MF_MODEL_MAX_LINEARS);
	if (m->experts > 0)
		return L *
		    (kind_flops(m, MF_LIN_GATE, MF_LIN_ROUTED) +
		        kind_flops(m, MF_LIN_UP, MF_LIN_ROUTED) +
		        kind_flops(m, MF_LIN_DOWN, MF_LIN_ROUTED) +
		        kind_flops(m, MF_LIN_GATE_UP, MF_LIN_ROUTED) +
		        kind_flops(m, MF_LIN_GATE, MF_LIN_SHARED) +
		        kind_flops(m, MF_LIN_UP, MF_LIN_SHARED) +
		        (m->shared_intermediate > 0 ? 2.0 * (double)m->hidden :
		                                      0));
	for (size_t i = 0; i < n; i++) {
		int biased = m->qkv_bias &&
		    (v[i].kind == MF_LIN_Q || v[i].kind == MF_LIN_K ||
		        v[i].kind == MF_LIN_V);
		if (biased)
			continue;
		if (++mm % 2 == 0) {
			sum += 2.0 * (double)v[i].out * (double)v[i].in;
			last = i + 1;
		}
	}
	if (last == n && early_stop(m))
		sum -= 2.0 * (double)v[n - 1].out * (double)v[n - 1].in;
	return L * sum;
}

/* The FLOPs of a layer's last matmul, a token: down_proj, or with LoRA
 * on down_proj its lora_B (r -> h). */
static double
last_matmul_flops(const struct mf_model *m, const struct mf_workload *w)
{
	if (w->method != MF_FULL &&
	    (mf_est_lora_mask(w) & MF_LORA_BIT(MF_LIN_DOWN)))
		return 2.0 * (double)w->lora_rank * (double)m->hidden;
	return kind_flops(m, MF_LIN_DOWN, MF_LIN_LAYER);
}

/* The base's input-gradient FLOPs of a layer's linears of the kinds in
 * kinds, and their adapters' (lora_A's, r x in) where the mask reaches
 * them, a token. */
static double
input_grad_flops(const struct mf_model *m, const struct mf_workload *w,
    unsigned kinds)
{
	struct mf_linear v[MF_MODEL_MAX_LINEARS];
	size_t n = mf_model_linears(m, v);
	unsigned mask = mf_est_lora_mask(w);
	double sum = 0;

	assert(n <= MF_MODEL_MAX_LINEARS);
	for (size_t i = 0; i < n; i++) {
		if (v[i].owner != MF_LIN_LAYER ||
		    !(kinds & MF_LORA_BIT(v[i].kind)))
			continue;
		sum += 2.0 * (double)v[i].out * (double)v[i].in;
		if (mask & MF_LORA_BIT(v[i].kind))
			sum += 2.0 * (double)w->lora_rank * (double)v[i].in;
	}
	return sum;
}

#define KINDS_QKV \
	(MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_K) | \
	    MF_LORA_BIT(MF_LIN_V) | MF_LORA_BIT(MF_LIN_QKV))
#define KINDS_GATE_UP \
	(MF_LORA_BIT(MF_LIN_GATE) | MF_LORA_BIT(MF_LIN_UP) | \
	    MF_LORA_BIT(MF_LIN_GATE_UP))

/*
 * What a LoRA or QLoRA backward skips where the embeddings are frozen and
 * nothing makes their output require a gradient (no checkpointing:
 * transformers' gradient_checkpointing_enable calls
 * enable_input_require_grads), a token: in the first layer nothing before
 * the first adapter requires a gradient.  q, k and v take the norm of the
 * embedding, so neither the base's input gradient nor their adapters'
 * lora_A input gradients are computed; without an adapter on q, k or v
 * attention's backward is not run either, nor o_proj's input gradients;
 * without one on o_proj too, gate's and up's; without one on those,
 * down's (design 22's lists: tests/torch/flops.py).  all-linear and
 * attention target q, k and v.  Eager attention's two bmm compute the
 * gradient of an input only where it requires one: with an adapter on
 * some of q, k and v, q's, k's and v's of those, and the probabilities'
 * with one on q or k (a quarter of its backward each); a fused kernel
 * computes all of them.
 */
static double
frozen_input_flops(const struct mf_model *m, const struct mf_workload *w,
    double attn_layer, int eager)
{
	unsigned mask = mf_est_lora_own(m, w);
	unsigned o = MF_LORA_BIT(MF_LIN_O), down = MF_LORA_BIT(MF_LIN_DOWN);
	unsigned q = MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_QKV);
	unsigned k = MF_LORA_BIT(MF_LIN_K) | MF_LORA_BIT(MF_LIN_QKV);
	unsigned v = MF_LORA_BIT(MF_LIN_V) | MF_LORA_BIT(MF_LIN_QKV);
	double skip;

	if (w->method == MF_FULL || w->checkpointing != MF_CKPT_NONE)
		return 0;
	skip = input_grad_flops(m, w, KINDS_QKV);
	if ((mask & KINDS_QKV) && eager)
		skip += attn_layer / 2 *
		    (!(mask & q) + !(mask & k) + !(mask & v) +
		        !(mask & (q | k)));
	if (mask & KINDS_QKV)
		return skip;
	skip += 2 * attn_layer + input_grad_flops(m, w, o);
	if (mask & o)
		return skip;
	skip += input_grad_flops(m, w, KINDS_GATE_UP);
	if (mask & KINDS_GATE_UP)
		return skip;
	return skip + input_grad_flops(m, w, down);
}

void
mf_work_flops(const struct mf_model *m, const struct mf_workload *w,
    struct mf_flops *out)
{
	enum mf_attention at = mf_est_attention(m, w);
	int skip = at != MF_EAGER;
	double lin = linear_flops(m), head = head_flops(m);
	double T, s, attn, lora, layer;
	int64_t L = m->layers;

	*out = (struct mf_flops){ 0 };
	if (w->kind == MF_INFERENCE) {
		s = (double)w->context_len;
		out->prefill = s * (lin + attn_flops(m, s, skip)) + head;
		out->decode = lin + head +
		    4.0 * s * (double)m->heads * (double)m->head_dim *
		        (double)L;
		return;
	}
	s = (double)w->seq_len;
	T = s * (double)w->micro_batch;
	attn = attn_flops(m, s, skip);
	lora = lora_flops(m, w);
	layer = lin + attn + lora;
	out->fwd = T * (layer + head);
	/* Backward: a trained weight's matmul twice (the input's gradient
	 * and the weight's); a frozen base once (the input's); attention's
	 * two inputs both. */
	if (w->method == MF_FULL)
		out->bwd = 2 * out->fwd;
	else
		out->bwd = T *
		    (lin + head + 2 * attn + 2 * lora -
		        frozen_input_flops(m, w, attn / (double)L, !skip));
	if (w->checkpointing == MF_CKPT_FULL) {
		int64_t every = w->ckpt_every > 0 ? w->ckpt_every : 1;
		double one = layer / (double)L;

		if (early_stop(m))
			one -= last_matmul_flops(m, w);
		out->rec = T * one * (double)(L / every);
	} else if (w->checkpointing == MF_CKPT_OP) {
		out->rec = T * op_recompute_flops(m);
	}
}

/*
 * What a training step's kernels other than matmuls move, a token a
 * layer (bytes) and how many kernels a layer launches, forward, backward
 * and recomputed forward: measured by tests/torch/traffic.py on
 * transformers' Llama block (a dispatch mode summing each aten op's
 * inputs and outputs; 11 shapes, fitted to within 0.1%), in bf16 with
 * sdpa, and in fp32 under bf16 autocast (its norms, residual stream and
 * RoPE in fp32).  Eager attention adds its softmax over the scores, per
 * token a x s of them.  fp32 is the bf16 form at 4 bytes an element (no
 * upcast copies: an upper bound).
 */
struct traffic {
	double h, I, qk; /* coefficients of h, I and (a + kv) x d */
};
static const struct traffic bf16_fwd = { 84, 10, 20 },
                            bf16_bwd = { 214, 18, 32 },
                            bf16_rec = { 78, 10, 20 },
                            mixed_fwd = { 106, 10, 36 },
                            mixed_bwd = { 286, 18, 58 },
                            mixed_rec = { 96, 10, 36 };
/* Eager attention over sdpa: bytes a score (forward and recomputed;
 * backward), and repeat_kv's copies of k and v, coefficients of a x d and
 * kv x d (forward 12 and 4; backward 21 of a x d). */
#define EAGER_SCORE_FWD 28.0
#define EAGER_SCORE_BWD 26.3

/* Kernels a layer launches (bf16, sdpa): forward 38, backward 71,
 * recomputed forward 36; eager attention 10, 11, 10 more; autocast 10,
 * 16, 10 more; LoRA 42, 52 and 39 more over 7 adapted linears. */
static const double kernels_16[3] = { 38, 71, 36 },
                    kernels_eager[3] = { 10, 11, 10 },
                    kernels_mixed[3] = { 10, 16, 10 },
                    kernels_lora[3] = { 42.0 / 7, 52.0 / 7, 39.0 / 7 };
/* LoRA's forward, backward and recomputed forward (PEFT: the adapters in
 * fp32, the input cast to them, the scaling, the add): bytes an element
 * of an adapted linear's input and output, a token (70944, 70588 and
 * 64800 bytes a layer over Llama's 2224 + 2400 at h 256); under autocast,
 * whose inputs are already cast, 9.3, 9.0 and 8.75. */
static const double lora_bytes[3] = { 15.3, 15.3, 14.0 },
                    lora_bytes_mixed[3] = { 9.3, 9.0, 8.75 };
/* Autocast's weight casts: 6 bytes (fp32 read, bf16 written) a layer
 * weight element, each pass. */
#define WEIGHT_CAST 6.0

static int
mixed(const struct mf_workload *w)
{
	return w->precision == MF_BF16_MIXED || w->precision == MF_FP16_MIXED;
}

static double
form(const struct traffic *t, const struct mf_model *m)
{
	double I = (double)(m->experts > 0 ?
	        mf_model_expert_width(m) * m->experts_per_tok +
	            m->shared_intermediate :
	        m->intermediate);

	return t->h * (double)m->hidden + t->I * I +
	    t->qk * (double)((m->heads + m->kv_heads) * m->head_dim);
}

/* The adapted linears' inputs and outputs a token passes, a layer: the
 * routed experts' adapters are not run a token each (PEFT wraps
 * transformers' fused experts whole). */
static double
lora_io(const struct mf_model *m, const struct mf_workload *w)
{
	struct mf_linear v[MF_MODEL_MAX_LINEARS];
	size_t n;
	double routed = 0;

	if (w->method == MF_FULL || w->lora_rank <= 0)
		return 0;
	n = mf_model_linears(m, v);
	assert(n <= MF_MODEL_MAX_LINEARS);
	for (size_t i = 0; (mf_est_lora_mask(w) & MF_LORA_MOE) && i < n; i++)
		if (v[i].owner == MF_LIN_ROUTED)
			routed +=
			    (double)(v[i].in + v[i].out) * (double)v[i].count;
	return ((double)mf_model_lora_params(m, 1, mf_est_lora_mask(w)) -
	           routed) /
	    (double)m->layers;
}

/* The linears a layer adapts: none in full fine-tuning; Phi-3's fused
 * qkv_proj and gate_up_proj one each; all-linear on a mixture of experts
 * counted as a dense layer's 7. */
static double
lora_linears(const struct mf_model *m, const struct mf_workload *w)
{
	if (w->method == MF_FULL)
		return 0;
	if ((mf_est_lora_mask(w) & MF_LORA_MOE) && m->experts > 0)
		return 7;
	return __builtin_popcount(mf_est_lora_own(m, w));
}

/* Bytes a token, a layer, of pass p (0 forward, 1 backward, 2
 * recomputed forward); lio is lora_io(m, w), the same for every pass. */
static double
layer_bytes(const struct mf_model *m, const struct mf_workload *w, int p,
    double lio)
{
	const struct traffic *t16[3] = { &bf16_fwd, &bf16_bwd, &bf16_rec };
	const struct traffic *tm[3] = { &mixed_fwd, &mixed_bwd, &mixed_rec };
	double b;

	assert(p >= 0 && p < 3);
	b = form(mixed(w) ? tm[p] : t16[p], m);

	if (w->precision == MF_FP32)
		b *= 2;
	if (mf_est_attention(m, w) == MF_EAGER)
		b += (p == 1 ? EAGER_SCORE_BWD : EAGER_SCORE_FWD) *
		        (double)m->heads * (double)w->seq_len +
		    (double)m->head_dim *
		        (p == 1 ? 21.0 * (double)m->heads :
		                  12.0 * (double)m->heads +
		                    4.0 * (double)m->kv_heads);
	return b + (mixed(w) ? lora_bytes_mixed : lora_bytes)[p] * lio;
}

/* Kernels a layer launches in pass p; lin is lora_linears(m, w). */
static double
layer_kernels(const struct mf_model *m, const struct mf_workload *w, int p,
    double lin)
{
	double k;

	assert(p >= 0 && p < 3);
	k = kernels_16[p];
	if (mf_est_attention(m, w) == MF_EAGER)
		k += kernels_eager[p];
	if (mixed(w))
		k += kernels_mixed[p];
	return k + kernels_lora[p] * lin;
}

/* The loss over the vocabulary, a token: logits cast to fp32,
 * log_softmax, nll forward (18 bytes an entry) and backward (26),
 * whatever the precision (tests/torch/traffic.py). */
#define LOSS_BYTES 44.0

/*
 * The optimizer step, bytes a trained parameter: PyTorch's AdamW
 * (foreach, the default on CUDA) moves 21 bytes an element byte of the
 * stepped copy (42 in bf16, 84 in fp32: tests/torch/traffic.py); 8-bit
 * Adam's fused kernel reads and writes the weight and its two one-byte
 * moments and reads the gradient; SGD the weight and the gradient.  The
 * stepped copy is fp32 but in bf16-true; LoRA's adapters are fp32
 * (PEFT's autocast_adapter_dtype).
 */
static double
optimizer_bytes(const struct mf_workload *w, int64_t trained)
{
	double wb =
	    w->precision == MF_BF16_TRUE && w->method == MF_FULL ? 2 : 4;
	double gb = wb;

	if (w->optimizer == MF_ADAM8BIT || w->optimizer == MF_PAGED_ADAMW8BIT)
		return (double)trained * (2 * wb + gb + 4);
	if (w->optimizer == MF_SGD)
		return (double)trained * (2 * wb + gb);
	/* A master copy also casts the 16-bit gradient up and writes the
	 * 16-bit weight back: 6 + 6 bytes. */
	if (w->method == MF_FULL &&
	    (w->precision == MF_BF16 || w->precision == MF_FP16))
		return (double)trained * (21 * wb + 12);
	return (double)trained * 21 * wb;
}

/* Elements a token's matmuls read and write beside the weights: each
 * linear's input and output (the head's too). */
static double
linear_io(const struct mf_model *m)
{
	struct mf_linear v[MF_MODEL_MAX_LINEARS];
	size_t n = mf_model_linears(m, v);
	double sum = (double)m->hidden + (double)m->vocab;

	assert(n <= MF_MODEL_MAX_LINEARS);
	for (size_t i = 0; i < n; i++) {
		double k = v[i].owner == MF_LIN_ROUTED ?
		    (double)m->experts_per_tok / (double)m->experts :
		    1.0;
		sum += k * (double)(v[i].in + v[i].out) * (double)v[i].count;
	}
	return sum;
}

/*
 * The FLOPs of a step that float8 (design 22) runs in fp8: the decoder
 * layers' linears, the head left 16-bit (torchtitan's filter_fqns =
 * ["output"]).  Both of torchao's recipes cast every operand of all three
 * of a linear's matmuls, output, grad-input and grad-weight (torchao
 * 0.15, float8/config.py, Float8LinearConfig.from_recipe_name:
 * tensorwise's casts default to dynamic tensorwise scaling, rowwise's to
 * axiswise, none disabled; float8_linear.py runs each matmul on the fp8
 * operands), so the layers' linears' forward, their backward's twice it
 * and what full checkpointing recomputes of them, as mf_work_flops counts
 * them (full fine-tuning of a dense model: mf_est_float8_refused).
 * Attention's matmuls and the head stay in the step's dtype.  0 without
 * float8.
 */
static double
float8_flops(const struct mf_model *m, const struct mf_workload *w)
{
	double T, lin, one, L = (double)m->layers;
	int64_t every = w->ckpt_every > 0 ? w->ckpt_every : 1;

	if (w->float8 == MF_F8_NONE)
		return 0;
	T = (double)w->seq_len * (double)w->micro_batch;
	lin = linear_flops(m);
	if (w->checkpointing != MF_CKPT_FULL)
		return 3 * T * lin;
	one = lin / L;
	if (early_stop(m))
		one -= last_matmul_flops(m, w);
	return 3 * T * lin + T * one * (double)(m->layers / every);
}

/*
 * float8's casts (design 22), beside what the same layers move
 * unconverted: in eager torchao 0.15 casts each operand of a linear's
 * three matmuls to fp8 on its own (float8/float8_linear.py,
 * matmul_with_hp_or_float8_args: forward the input and the weight;
 * backward the grad_output twice, the weight and the input again), each
 * cast abs, an amax, the scale's arithmetic, a multiply, a clamp and the
 * fp8 conversion (float8_scaling_utils.py, hp_tensor_to_float8_dynamic;
 * float8_utils.py, tensor_to_amax, amax_to_scale, to_fp8_saturated),
 * then preprocess_addmm's layout copies and, for rowwise's backward
 * matmuls, the product of the output with the scales' fp32 outer product
 * (float8_ops.py, addmm_float8_unwrapped; its forward matmul takes
 * use_fast_accum and the scales directly).  Bytes an element of a
 * linear's casts' operands, a pass (0 forward, 1 backward; a recomputed
 * forward moves the forward's, measured the same): the input's (tokens x in),
 * the weight's (in x out), the grad_output's (tokens x out), and a row of a
 * token (T x the linears) and a column (in + out) of rowwise's scales, over
 * what the same layer unconverted moves (under autocast the weight's cast is
 * the fp32 weight's, and autocast's own 6-byte cast of it is gone).  Measured
 * by tests/torch/traffic.py --float8 (the difference of the float8 layer and
 * the same layer unconverted, on transformers' Llama block, fitted over 7
 * shapes, max residual 0.06%; tensorwise's row and column terms, its
 * scalars' bytes, under 0.07, left out).
 */
struct f8_cast {
	double in, weight, out, row, col;
};
static const struct f8_cast f8_tensorwise[2] = {
	{ 33, 33, 0, 0, 0 },
	{ 33, 33, 66, 0, 0 },
};
static const struct f8_cast f8_tensorwise_mixed[2] = {
	{ 33, 27, 0, 0, 0 },
	{ 33, 33, 66, 0, 0 },
};
static const struct f8_cast f8_rowwise[2] = {
	{ 32.5, 33.05, 0.43, 112.1, 49.9 },
	{ 45.5, 44.95, 65.57, 111.9, 174.1 },
};
static const struct f8_cast f8_rowwise_mixed[2] = {
	{ 32.49, 27.05, 0.45, 112.2, 51.7 },
	{ 45.51, 44.95, 65.56, 111.8, 176.3 },
};
/* Ops a float8 linear launches beyond an unconverted one's, a pass, the
 * scale's arithmetic on 0-dim device tensors counted (the same run: a
 * layer's recomputed forward makes one more, not counted). */
static const double f8_ops_tensorwise[2] = { 24, 48 },
                    f8_ops_tensorwise_mixed[2] = { 22, 47 },
                    f8_ops_rowwise[2] = { 30, 68 },
                    f8_ops_rowwise_mixed[2] = { 28, 67 };

/* The bytes and kernels float8's casts add to a step into out, rl the
 * share of the layers whose forward is recomputed; nothing without
 * float8. */
static void
float8_casts(const struct mf_model *m, const struct mf_workload *w, double rl,
    struct mf_work *out)
{
	struct mf_linear v[MF_MODEL_MAX_LINEARS];
	size_t n = mf_model_linears(m, v);
	int row = w->float8 == MF_F8_ROWWISE, mx = mixed(w);
	const struct f8_cast *c = row ?
	    (mx ? f8_rowwise_mixed : f8_rowwise) :
	    (mx ? f8_tensorwise_mixed : f8_tensorwise);
	const double *ops = row ?
	    (mx ? f8_ops_rowwise_mixed : f8_ops_rowwise) :
	    (mx ? f8_ops_tensorwise_mixed : f8_ops_tensorwise);
	double T = (double)w->seq_len * (double)w->micro_batch;
	double ins = 0, outs = 0, wts = 0, lins = 0;

	assert(n <= MF_MODEL_MAX_LINEARS);
	if (w->float8 == MF_F8_NONE)
		return;
	for (size_t i = 0; i < n; i++) {
		double k = (double)v[i].count;

		ins += k * (double)v[i].in;
		outs += k * (double)v[i].out;
		wts += k * (double)v[i].in * (double)v[i].out;
		lins += k;
	}
	/* Forward, backward, and the forward again on rl of the layers. */
	for (int i = 0; i < 3; i++) {
		int p = i == 1;
		double share = i == 2 ? rl : 1;

		out->bytes += share *
		    (T * (c[p].in * ins + c[p].out * outs + c[p].row * lins) +
		        c[p].weight * wts + c[p].col * (ins + outs));
		out->kernels += share * ops[p] * lins;
	}
}

/*
 * The weight bytes FSDP all-gathers a pass: the sharded parameters as
 * they are stored, P x e for 16-bit or fp32 weights.  QLoRA's 4-bit base
 * is gathered as the estimate stores it, its sharded weights: the packed
 * codes, in bitsandbytes' quant_storage dtype, and the unquantized rest.
 * bitsandbytes' Params4bit keeps only the codes as its data and the
 * quant_state (absmax, code tables) as an attribute the Linear4bit module
 * also holds, which FSDP does not gather but recovers from the module
 * (bitsandbytes/nn/modules.py, Params4bit._quantize and
 * fix_4bit_weight_quant_state_from_module: "the quant state got lost
 * when the parameter got converted.  This happens for example for
 * fsdp"; docs/source/fsdp_qlora.md): the estimate's weights_whole, on
 * every GPU.  torchao's NF4Tensor (torchtune) gathers its codes, scalers
 * and factors (torchao/dtypes/nf4tensor.py, fsdp_pre_all_gather; its
 * scalar mean and 16-entry table go as metadata), and weights_whole is 0
 * there.
 */
static double
gathered(const struct mf_workload *w, const struct mf_estimate *e, double plain)
{
	if (w->method != MF_QLORA)
		return plain;
	return (double)e->bucket[MF_B_WEIGHTS] - (double)e->weights_whole;
}

static void
training_work(const struct mf_model *m, const struct mf_workload *w,
    const struct mf_estimate *e, struct mf_work *out)
{
	struct mf_flops f;
	double T = (double)out->tokens, eb = (double)act_bytes(w);
	double L = (double)m->layers, h = (double)m->hidden;
	double passes, rec = 0, rl, P = (double)e->params, lio, lin;
	int64_t accum = w->grad_accum > 0 ? w->grad_accum : 1;

	mf_work_flops(m, w, &f);
	out->fwd = f.fwd;
	out->bwd = f.bwd;
	out->rec = f.rec;
	out->fp8 = float8_flops(m, w);
	if (f.fwd > 0)
		rec = f.rec / f.fwd;
	/* The weights a pass reads: forward, the backward's one or two
	 * matmuls a weight, what recomputation runs again. */
	passes = 1 + (w->method == MF_FULL ? 2 : 1) + rec;
	/* The share of the layers whose forward runs again: full
	 * checkpointing's; per-op's reruns every layer's other kernels. */
	rl = w->checkpointing == MF_CKPT_OP ?
	    1 :
	    w->checkpointing == MF_CKPT_FULL ?
	    (double)(m->layers / (w->ckpt_every > 0 ? w->ckpt_every : 1)) / L :
	    0;
	out->mm_bytes = passes * eb * (T * linear_io(m) + P);
	lio = lora_io(m, w);
	out->bytes = T * L *
	        (layer_bytes(m, w, 0, lio) + layer_bytes(m, w, 1, lio) +
	            rl * layer_bytes(m, w, 2, lio)) +
	    T * LOSS_BYTES * (double)m->vocab;
	/* Gradient accumulation steps the optimizer once in grad_accum
	 * micro-batches, and data parallel all-reduces once (DDP's
	 * no_sync); FSDP reduce-scatters every micro-batch. */
	out->opt_bytes = optimizer_bytes(w, e->trainable) / (double)accum;
	/* Autocast casts each weight a pass: forward, recomputed forward,
	 * and backward where the weight trains; the head's too. */
	if (mixed(w))
		out->bytes += WEIGHT_CAST *
		    ((double)mf_model_linear_params(m) *
		            (1 + rl + (w->method == MF_FULL)) +
		        h * (double)m->vocab * (1 + (w->method == MF_FULL)));
	lin = lora_linears(m, w);
	out->kernels = L *
	    (layer_kernels(m, w, 0, lin) + layer_kernels(m, w, 1, lin) +
	        rl * layer_kernels(m, w, 2, lin));
	float8_casts(m, w, rl, out);
	/* QLoRA dequantizes each 4-bit weight to 16 bits before each use:
	 * reads half a byte a weight (and its scales), writes two. */
	if (w->method == MF_QLORA)
		out->bytes +=
		    (double)mf_model_linear_params(m) * 2.5 * (1 + 1 + rec);
	/* The gradients as the estimate keeps them, each in its
	 * parameter's dtype: LoRA's adapters in lora.dtype, fp32 by default
	 * as PEFT's autocast_adapter_dtype upcasts them
	 * (peft/tuners/tuners_utils.py, BaseTuner._cast_adapter_dtype). */
	out->grad_bytes = (double)e->trainable * (double)mf_est_grad_bytes(w);
	out->shards = w->shard_gpus > 1 ? w->shard_gpus : 1;
	out->gather_bytes = gathered(w, e, P * eb);
	out->scatter_bytes = out->grad_bytes;
	out->grad_bytes /= (double)accum;
	out->gathers = w->reshard_after_forward ? 2 : 1;
	/* Megatron's tensor parallel all-reduces a layer's activations
	 * after attention and after the MLP, forward and backward (and
	 * again where recomputed): s x b x h x e each. */
	out->tp_bytes = (4 + 2 * rec) * L * T * h * eb;
	out->tp_collectives = (4 + 2 * rl) * L;
}

/* The routed experts' weights, every layer's. */
static double
routed_params(const struct mf_model *m)
{
	struct mf_linear v[MF_MODEL_MAX_LINEARS];
	size_t n = mf_model_linears(m, v);
	double sum = 0;

	assert(n <= MF_MODEL_MAX_LINEARS);
	for (size_t i = 0; i < n; i++)
		if (v[i].owner == MF_LIN_ROUTED)
			sum += (double)v[i].out * (double)v[i].in *
			    (double)v[i].count;
	return sum;
}

static void
inference_work(const struct mf_model *m, const struct mf_workload *w,
    const struct mf_estimate *e, struct mf_work *out)
{
	struct mf_workload one = *w;
	struct mf_flops f;
	double C = (double)out->tokens,
	       weights = (double)e->bucket[MF_B_WEIGHTS];
	double ctx = (double)w->context_len, eb = 2, share = 1;
	/* A prompt not given is what the context leaves after the output
	 * (the manifest keeps the two within it). */
	int64_t prompt = w->prompt_tokens > 0 ?
	    w->prompt_tokens :
	    w->context_len - w->output_tokens;

	if (w->output_tokens > 0)
		ctx = (double)prompt + (double)w->output_tokens / 2;
	one.context_len = (int64_t)ctx;
	mf_work_flops(m, &one, &f);
	out->fwd = C * f.decode;
	if (w->weights_dtype == MF_WD_FP8)
		out->dtype = MF_DT_FP8;
	/* A decode step reads each routed expert some token of the batch
	 * goes to: of E, each missed by all C tokens with (1 - k/E)^C. */
	if (m->experts > 0) {
		double miss = 1,
		       k = (double)m->experts_per_tok / (double)m->experts;
		for (int64_t i = 0; i < w->concurrency && miss > 1e-9; i++)
			miss *= 1 - k;
		share = 1 - miss * routed_params(m) / (double)e->params;
	}
	out->mm_bytes = weights * share + C * eb * linear_io(m);
	/* vLLM replays a decode step as a CUDA graph: no launch each. */
	out->bytes = C * ctx * (double)e->kv_token_job;
	out->tp_bytes = 2 * (double)m->layers * C * (double)m->hidden * eb;
	out->tp_collectives = 2 * (double)m->layers;
	out->prompt = prompt;
	one.context_len = prompt;
	mf_work_flops(m, &one, &f);
	out->prefill_flops = f.prefill;
	out->prefill_bytes = weights + (double)prompt * (double)e->kv_token_job;
}

enum mf_rc
mf_work_of(const struct mf_model *m, const struct mf_workload *w,
    const struct mf_estimate *e, struct mf_work *out)
{
	struct mf_work wk = { 0 };

	if (m->layers <= 0 || m->hidden <= 0 || w->tensor < 1 ||
	    w->pipeline < 1)
		return MF_EINVAL;
	wk.kind = w->kind;
	wk.tensor = w->tensor;
	wk.gpus = w->tensor * w->pipeline;
	wk.shards = 1;
	if (w->kind == MF_INFERENCE) {
		wk.dtype = w->precision == MF_FP16 ? MF_DT_FP16 : MF_DT_BF16;
		wk.tokens = w->concurrency;
		inference_work(m, w, e, &wk);
	} else {
		wk.dtype = train_dtype(w);
		wk.tokens = w->seq_len * w->micro_batch;
		training_work(m, w, e, &wk);
	}
	*out = wk;
	return MF_OK;
}
