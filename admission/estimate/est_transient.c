/*
 * est_transient.c: the transient bucket of the estimator pytorch (design
 * 13): the largest short-lived allocation of a training step, alive at
 * its peak on top of what the other buckets hold, among the candidates
 * below.  Measured as est_pytorch.c's buckets are (tests/torch/measure.py
 * and the harnesses each candidate cites).
 */
#include <assert.h>

#include "est.h"
#include "../model/quant.h"

/*
 * Bytes per element of the largest parameter that the optimizer step
 * holds as temporaries, the step taken one parameter at a time (the
 * foreach implementation holds temporaries the size of the whole state
 * instead).  With an fp32 master copy (bf16, fp16): the fp32 copy of the
 * 16-bit gradient (4) and AdamW's denominator sqrt(v) + eps (4).  Where
 * the weights are their own master (fp32, *-mixed, bf16-true):
 * torch.optim.AdamW's single-tensor step, sqrt(v) and its quotient by
 * the bias correction, alive together, in the moments' dtype (2 x 4, or
 * 2 x 2 for bf16-true; tests/torch/measure.py, bf16-true).  8-bit Adam
 * updates in blocks inside its kernel and SGD keeps no denominator.
 * LoRA's adapters are fp32 (their denominator: 4).  The same with the
 * optimizer in backward, one torch.optim.AdamW a weight (torchtune): its
 * foreach step holds one of the two and its fused step none, the GPU's
 * default and the option (tests/torch/optim_bwd.py).
 */
static int64_t
step_temp_bytes(const struct mf_workload *w)
{
	const struct mf_est_precision *pr = mf_est_precision(w->precision);
	int64_t denom = 4;

	if (w->method != MF_FULL)
		return w->optimizer == MF_ADAMW ? 4 : 0;
	if (pr->master == 0)
		denom = 2 * pr->moment;
	return (pr->master > 0 ? 4 : 0) +
	    (w->optimizer == MF_ADAMW ? denom : 0);
}

/*
 * transient: the largest short-lived allocation of a step, alive at the
 * step's peak on top of what the other buckets hold; the candidates
 * below never overlap, and the bucket is the largest.
 * - The loss's backward: nll_loss's gradient and log_softmax's, fp32 s x
 *   b x V each, alive while the saved log-softmax is (8 x s x b x V).
 *   Under loss parallel, of a GPU's Vl vocabulary rows, three: torch's
 *   loss_parallel() holds 12 x s x b x Vl beside the saved log-softmax
 *   (tests/torch/dist.py, case tp2-lp-loss, where it is the step's
 *   peak), as torchtitan 0.3's _LossParallelCrossEntropy does (its
 *   backward, components/loss.py: the gradient's zeros, exp(log-probs)
 *   and their sum times the incoming gradient).  A chunked or fused loss
 *   holds less, a piece at a time (est_loss.c).
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
 * - LoRA's forward, in each layer and again in its recomputation under
 *   checkpointing (lora_forward).
 * - A checkpointed compiled LoRA layer's backward, whose graph runs the
 *   layer's forward again before its backward (compiled_recompute).
 * - float8 (design 22): a float8 linear's backward, in each layer, with
 *   everything saved (float8_backward).
 * - The optimizer step: the temporaries of the largest parameter (Pmax,
 *   see step_temp_bytes); FSDP over N GPUs steps a 1/N shard of it.
 *   With the optimizer in backward (torchtune) each weight is stepped
 *   inside backward, with the activations not yet released and
 *   backward's pending gradients alive, yet still one of the four: the
 *   engine steps a weight as soon as the node that made its gradient
 *   returns, and that node has released what it saved, which covers the
 *   gradients it leaves pending; the residual stream's gradient is
 *   covered by what the loss and the final norm released first (logits).
 *   Measured at every step of every case by tests/torch/optim_bwd.py:
 *   what is alive beside the gradients and the step's temporaries stays
 *   within activations and logits (by 0.7% at the closest).
 * - QLoRA: the 16-bit copy of a 4-bit weight that bitsandbytes'
 *   MatMul4Bit dequantizes in forward and again in backward, the largest
 *   (Qmax weights, 2 bytes each), with the fp32 absmax that double
 *   quantization dequantizes first (4 bytes a block; quant.c).
 *   torchao's NF4Tensor (qlora.quantizer torchao: torchtune's
 *   linear_nf4, whose forward and backward each take weight.to(bf16))
 *   dequantizes in eager steps, all alive at its last (torchao 0.15,
 *   dtypes/nf4tensor.py, get_original_weight): the two halves of the
 *   packed codes as int64 indices (8 bytes a weight), their bf16 values
 *   (2), each half scaled (2) and the two stacked into the weight (2),
 *   beside the bf16 absmax of every block (2 bytes a block):
 *   tests/torch/quant.py measures 14n + 2 ceil(n / 64) on torchtune's
 *   FrozenNF4Linear.
 */
/* Bytes a weight torchao's eager dequantization holds at its peak. */
#define TORCHAO_DEQUANT 14

/* torchao's dequantized weight, its term ", Qmax x 14 + ...". */
static int64_t
dequant_torchao(const struct mf_workload *w, int64_t qmax, struct mf_text *f)
{
	mf_text_str(f, ", Qmax x ");
	mf_text_int(f, TORCHAO_DEQUANT);
	mf_text_str(f, " + ceil(Qmax / ");
	mf_text_int(f, w->qlora_block);
	mf_text_str(f, ") x 2");
	return mf_cadd(mf_cmul(TORCHAO_DEQUANT, qmax),
	    mf_cmul(2, mf_cdiv_up(qmax, w->qlora_block)));
}

/* QLoRA's dequantized weight, and its term ", Qmax x 2 + ...". */
static int64_t
dequant(const struct mf_model *m, const struct mf_workload *w,
    struct mf_text *f)
{
	struct mf_quant_sum s;
	struct mf_quant q;
	int64_t b;

	mf_quant_nf4(w->qlora_block, w->qlora_double_quant, &q);
	mf_quant_sum(m, &q, &s);
	if (w->qlora_quantizer == MF_QZ_TORCHAO)
		return dequant_torchao(w, s.largest, f);
	b = mf_cmul(2, s.largest);
	mf_text_str(f, ", Qmax x 2");
	if (!w->qlora_double_quant)
		return b;
	mf_text_str(f, " + ceil(Qmax / ");
	mf_text_int(f, w->qlora_block);
	mf_text_str(f, ") x 4");
	return mf_cadd(b, mf_cmul(4, mf_cdiv_up(s.largest, w->qlora_block)));
}

/*
 * The gradient of the residual stream that reaches a layer's backward,
 * beside what the layer holds there: eh bytes a token of h.  The logits
 * of a standard or chunked loss, freed before any layer's backward, are
 * far larger and cover it; a fused loss keeps no logits, and the
 * gradient counts (tests/torch/fused.py, the LoRA cases, where the MLP's
 * backward of the last layer is the step's peak with it alive: 2h a
 * token in bf16).  0 for the other losses.
 */
static int64_t
rg_bytes(const struct mf_workload *w)
{
	return mf_est_loss(w) == MF_LOSS_FUSED ? mf_est_hidden_bytes(w) : 0;
}

/* " + rgh), " or ", ": the end of a layer's candidate. */
static void
text_residual(struct mf_text *f, int64_t rg)
{
	if (rg > 0) {
		mf_text_str(f, " + ");
		mf_text_int(f, rg);
		mf_text_str(f, "h)");
	}
	mf_text_str(f, ", ");
}

/*
 * LoRA's forward, its term "s x b x Omax x (e + 8), " into f (16-bit
 * adapters, lora.dtype: e + 4).  PEFT's
 * lora.Linear adds the adapter to the frozen base's output, result +
 * lora_B(lora_A(x)) * scaling, with fp32 adapters: the base's output (e
 * bytes a value, the activations' dtype; bitsandbytes' 4-bit layer
 * returns, and clones, its compute dtype), lora_B's fp32 output and its
 * product with the scaling (4 each) are alive together, and then that
 * product, the base's output and their fp32 sum, before the sum is cast
 * back: (e + 8) bytes a value of the linear's output, for every token, on
 * top of what the layers keep; the largest is the widest output a target
 * reaches (Omax: Phi-3's fused gate_up, 2I, twice a Llama block's I).
 * Under checkpointing the last layer's recomputation makes it again,
 * above every layer's input.  Like the MLP's backward it is counted
 * beside the logits, which are not alive then (not made yet in forward,
 * freed by the loss's backward before any recomputation): the safe
 * side.  On the CPU the add of a 16-bit and an fp32 tensor first copies
 * the 16-bit one to fp32, 4 bytes a value more (TensorIterator's
 * compute_types makes such temporaries only on the CPU; a GPU's kernel
 * casts as it reads), which the harness's CPU peaks hold and the
 * estimate, of a GPU, does not.
 * Measured where it is the peak of the step: Phi-3 LoRA all-linear in
 * bf16, the last layer's gate_up in its recomputation under
 * checkpointing, and in the forward without it (tests/torch/measure.py,
 * PEAK: FIT[4], and CHECK[8], a small vocabulary; tests/torch/offload.py,
 * case 2, offloaded).
 */
static int64_t
lora_forward(const struct mf_model *m, const struct mf_workload *w,
    int64_t ebytes, int64_t rg, struct mf_text *f)
{
	int64_t sb = mf_cmul(w->seq_len, w->micro_batch);
	int64_t n = ebytes + 2 * mf_est_lora_bytes(w);

	mf_text_str(f, rg > 0 ? "s x b x (Omax x " : "s x b x Omax x ");
	mf_text_int(f, n);
	text_residual(f, rg);
	return mf_cmul(sb,
	    mf_cadd(mf_cmul(n, mf_model_lora_widest(m, mf_est_lora_mask(w))),
	        mf_cmul(rg, m->hidden)));
}

/*
 * A layer's candidate "s x b x nSYM, " into f, and its bytes, with the
 * residual stream's gradient beside it when the loss is fused (rg bytes
 * of h a token, rg_bytes).
 */
static int64_t
layer_candidate(const struct mf_model *m, const struct mf_workload *w,
    int64_t n, const char *sym, int64_t value, int64_t rg, struct mf_text *f)
{
	int64_t sb = mf_cmul(w->seq_len, w->micro_batch);

	mf_text_str(f, rg > 0 ? "s x b x (" : "s x b x ");
	mf_text_int(f, n);
	mf_text_str(f, sym);
	text_residual(f, rg);
	return mf_cmul(sb, mf_cadd(mf_cmul(n, value), mf_cmul(rg, m->hidden)));
}

/*
 * float8 (design 22): the backward of one of torchao's Float8Linear, a
 * layer's linear of in i and out o over T = s x b tokens, beside what a
 * plain linear's holds; the incoming gradient (e x T x o) is alive
 * throughout.  torchao 0.15, float8/float8_linear.py
 * (matmul_with_hp_or_float8_args.backward) casts, in order, the gradient
 * for grad-input, the weight, then the gradient again and the saved input
 * for grad-weight, every fp8 result (1 byte a value) alive until the
 * backward returns.  A cast of n values (float8_training_tensor.py,
 * _ToFloat8ConstrFunc: tensor.to(float32) * scale, then
 * float8_utils.py, to_fp8_saturated: clamp, .to(fp8)) holds the fp32
 * product, its clamp and the fp8 result together: 9n.  Each matmul
 * (float8_ops.py, preprocess_addmm) may copy its operands to the layouts
 * _scaled_mm takes (1 byte a value each); the rowwise recipe's
 * grad-input and grad-weight matmuls, without fast accumulation, scale
 * their output by an fp32 outer product of the row scales
 * (addmm_float8_unwrapped: post_inverse_scale, 4 bytes a value of the
 * output).  The stages, in units of T x o, T x i and o x i, the
 * grad-input (e x T x i) counted from its matmul on and the grad-weight
 * left to the gradients bucket:
 *   gradient's cast        9 T o
 *   weight's cast          T o + 9 o i
 *   grad-input matmul      2 T o + 2 o i + (e + 4r) T i
 *   gradient's second cast 10 T o + o i + e T i
 *   input's cast           2 T o + o i + (e + 9) T i
 *   grad-weight matmul     3 T o + (1 + 4r) o i + (e + 2) T i
 * r = 1 for rowwise, 0 for tensorwise.  The forward's casts (the input's
 * and the weight's, 9n at most with one fp8 result beside) come with
 * less saved and are covered.  Checked on the whole step by
 * tests/torch/float8.py (the step's peak under perGpuBytes).
 */
struct f8_stage {
	int64_t to, ti, oi; /* coefficients of T x o, T x i, o x i */
};

static int64_t
f8_stage_bytes(const struct f8_stage *st, int64_t T, int64_t i, int64_t o)
{
	return mf_cadd(mf_cadd(mf_cmul(st->to, mf_cmul(T, o)),
	                   mf_cmul(st->ti, mf_cmul(T, i))),
	    mf_cmul(st->oi, mf_cmul(o, i)));
}

/* The largest stage of the float8 backward of the layers' linears, its
 * term "s x b x (A x o + B x i) + C x o x i (float8 NAME: o O, i I), "
 * into f, with the residual stream's gradient beside it when the loss is
 * fused (rg bytes of h a token, rg_bytes); 0, and nothing written,
 * without float8. */
static int64_t
float8_backward(const struct mf_model *m, const struct mf_workload *w,
    int64_t e, int64_t rg, struct mf_text *f)
{
	struct mf_linear v[MF_MODEL_MAX_LINEARS];
	size_t n;
	int64_t r = w->float8 == MF_F8_ROWWISE, T, best = 0, b;
	const struct f8_stage stages[] = {
		{ 9 + e, 0, 0 },
		{ 1 + e, 0, 9 },
		{ 2 + e, e + 4 * r, 2 },
		{ 10 + e, e, 1 },
		{ 2 + e, e + 9, 1 },
		{ 3 + e, e + 2, 1 + 4 * r },
	};
	const struct f8_stage *won = NULL;
	const struct mf_linear *at = NULL;

	if (w->float8 == MF_F8_NONE)
		return 0;
	n = mf_model_linears(m, v);
	T = mf_cmul(w->seq_len, w->micro_batch);
	assert(n <= MF_MODEL_MAX_LINEARS);
	for (size_t k = 0; k < n; k++)
		for (size_t j = 0; j < sizeof(stages) / sizeof(stages[0]);
		     j++) {
			b = f8_stage_bytes(&stages[j], T, v[k].in, v[k].out);
			if (won == NULL || b > best || b < 0) {
				best = b;
				won = &stages[j];
				at = &v[k];
			}
		}
	if (won == NULL)
		return 0;
	mf_text_str(f, "s x b x ");
	mf_text_str(f, won->ti > 0 ? "(" : "");
	mf_text_int(f, won->to);
	mf_text_str(f, " x o");
	if (won->ti > 0) {
		mf_text_str(f, " + ");
		mf_text_int(f, won->ti);
		mf_text_str(f, " x i)");
	}
	if (won->oi > 0) {
		mf_text_str(f, " + ");
		mf_text_int(f, won->oi);
		mf_text_str(f, " x o x i");
	}
	mf_text_str(f, " (float8 ");
	mf_text_str(f, mf_linear_name(at->kind));
	mf_text_str(f, ": o ");
	mf_text_int(f, at->out);
	mf_text_str(f, ", i ");
	mf_text_int(f, at->in);
	mf_text_str(f, ")");
	if (rg > 0) {
		mf_text_str(f, " + s x b x ");
		mf_text_int(f, rg);
		mf_text_str(f, "h");
	}
	mf_text_str(f, ", ");
	return mf_cadd(best, mf_cmul(T, mf_cmul(rg, m->hidden)));
}

/*
 * A checkpointed compiled LoRA layer's backward, its term "s x b x
 * (TERMS), " into f (recompute_terms in est_pytorch.c, which says what
 * it holds): the recomputed forward's values as eager keeps them less
 * the compiled layer the activations count, signs written out, and the
 * MLP's backward with its adapters' paths.  Like the MLP's backward a
 * layer's own, counted beside the logits, which the loss's backward has
 * freed by then: the safe side.  0, and nothing written, without terms.
 */
static int64_t
compiled_recompute(const struct mf_workload *w, const struct mf_terms *rc,
    struct mf_text *f)
{
	int64_t b;

	if (rc == NULL || rc->n == 0)
		return 0;
	mf_text_str(f, "s x b x (");
	mf_text_terms(f, rc);
	mf_text_str(f, "), ");
	b = mf_terms_bytes(rc);
	return b < 0 ? -1 : mf_cmul(mf_cmul(w->seq_len, w->micro_batch), b);
}

void
mf_est_torch_transient(const struct mf_model *m, const struct mf_workload *w,
    int64_t ebytes, int64_t vl, const struct mf_terms *rc,
    struct mf_estimate *e)
{
	int64_t loss, attn = 0, mlp, width, step, pmax;
	int64_t n = step_temp_bytes(w), rg = rg_bytes(w);
	const char *wsym = "I";
	struct mf_text f;

	width = m->intermediate;
	if (m->experts > 0) {
		width = mf_model_expert_width(m);
		wsym = "Ie";
		if (m->shared_intermediate > width) {
			width = m->shared_intermediate;
			wsym = "Is";
		}
	}
	pmax = w->method == MF_FULL ?
	    mf_model_largest_param(m) :
	    mf_model_lora_largest(m, w->lora_rank, mf_est_lora_mask(w));
	step = mf_cmul(pmax, n);
	mf_text_init(&f, mf_est_text(e, MF_B_TRANSIENT));
	/* A pipeline stage without the head computes no loss. */
	loss = mf_est_loss_transient(m, w, ebytes, vl, &f);
	if (mf_est_attention(m, w) == MF_EAGER)
		attn = layer_candidate(m, w, 4 + ebytes, "as",
		    mf_cmul(m->heads, w->seq_len), rg, &f);
	mlp = layer_candidate(m, w, 3 * ebytes, wsym, width, rg, &f);
	/* A float8 linear's backward, like the MLP's a layer's own. */
	mlp = mf_max_poisoned(mlp, float8_backward(m, w, ebytes, rg, &f));
	/* LoRA's forward, like the MLP's backward a layer's own. */
	if (w->method != MF_FULL)
		mlp = mf_max_poisoned(mlp, lora_forward(m, w, ebytes, rg, &f));
	/* A checkpointed compiled LoRA layer's backward, a layer's own. */
	mlp = mf_max_poisoned(mlp, compiled_recompute(w, rc, &f));
	/* Pmax: the largest trainable tensor (with LoRA, an adapter). */
	if (w->shard_cpu_offload) {
		/* FSDP's CPU offload steps the host's shards: nothing on the
		 * GPU. */
		step = 0;
		mf_text_str(&f, "0");
	} else {
		mf_text_str(&f, "Pmax x ");
		mf_text_int(&f, n);
	}
	if (w->shard_gpus > 1 && !w->shard_cpu_offload) {
		/* FSDP steps each GPU's shard of every parameter. */
		step = mf_cdiv_up(step, w->shard_gpus);
		mf_text_str(&f, " / N");
	}
	/* QLoRA's dequantized weight, a layer's own; compiled, torchao's
	 * is made in the layer's graph and saved (activations). */
	if (w->method == MF_QLORA &&
	    !(w->compile && w->qlora_quantizer == MF_QZ_TORCHAO))
		mlp = mf_max_poisoned(mlp, dequant(m, w, &f));
	step = mf_max_poisoned(step, mf_est_oib_tied(m, w, &f));
	mf_text_str(&f, ")");
	e->bucket[MF_B_TRANSIENT] = mf_max_poisoned(mf_max_poisoned(loss, attn),
	    mf_max_poisoned(mlp, step));
	e->loss_transient = loss;
	e->layer_transient = mf_max_poisoned(attn, mlp);
}
