/*
 * est_state.c: the state a training step keeps, the same under every
 * estimator: weights, gradients, optimizer state, LoRA's adapters and
 * FSDP's sharding buffers, as the precision's recipe keeps them (design
 * 19; the table below): bf16 and fp16, 16-bit weights and gradients with
 * fp32 master weights and moments (DeepSpeed, Megatron); fp32 throughout;
 * *-mixed, fp32 weights, gradients and moments under autocast, which
 * keeps a 16-bit copy of every linear weight from its cast to the
 * backward that uses it (HF Trainer's bf16=True on an fp32 model,
 * Lightning's bf16-mixed); bf16-true, weights, gradients and moments all
 * 16-bit (torchtune, LitGPT).  8-bit Adam keeps two 8-bit moments (and
 * the master copy where there is one); a frozen base (in the precision's
 * weights) with fp32 adapters for LoRA.
 *
 * Choices where the design is silent:
 * - sharding applies to training, full and LoRA (design 22): the frozen
 *   base is the weights FSDP shards, the adapters the state it shards
 *   with them (estimate.c); with inference shard_gpus is ignored;
 * - LoRA adapters with SGD hold 12 bytes per trainable parameter (fp32
 *   weight, gradient and momentum), between AdamW's 16 and 8-bit Adam's 10.
 * - 16-bit adapters (lora.dtype bf16 or fp16, design 22) keep their
 *   gradients and optimizer state in their own dtype with no master copy,
 *   as torchtune's recipes step a bf16 model's adapters (torch.optim.AdamW
 *   makes its moments like the parameter): AdamW 8 bytes, 8-bit Adam 6,
 *   SGD 6.
 */
#include <assert.h>
#include <string.h>

#include "est.h"
#include "../model/quant.h"

void
mf_est_per_param(struct mf_estimate *e, enum mf_bucket b, const char *sym,
    int64_t count, int64_t n)
{
	struct mf_text f;

	assert(b >= 0 && b < MF_B_COUNT);
	mf_text_init(&f, mf_est_text(e, b));
	mf_text_str(&f, sym);
	mf_text_str(&f, " x ");
	mf_text_int(&f, n);
	e->bucket[b] = mf_cmul(count, n);
}

static const struct mf_est_precision precisions[] = {
	[MF_BF16] = { 2, 2, 4, 4, 2, 0 },
	[MF_FP16] = { 2, 2, 4, 4, 2, 0 },
	[MF_FP32] = { 4, 4, 0, 4, 4, 0 },
	[MF_BF16_MIXED] = { 4, 4, 0, 4, 2, 1 },
	[MF_BF16_TRUE] = { 2, 2, 0, 2, 2, 0 },
	[MF_FP16_MIXED] = { 4, 4, 0, 4, 2, 1 },
};

const struct mf_est_precision *
mf_est_precision(enum mf_precision p)
{
	if ((unsigned)p >= sizeof(precisions) / sizeof(precisions[0]))
		p = MF_BF16;
	return &precisions[p];
}

int64_t
mf_est_hidden_bytes(const struct mf_workload *w)
{
	const struct mf_est_precision *pr = mf_est_precision(w->precision);

	return pr->mixed ? 4 : pr->act;
}

int64_t
mf_est_autocast_params(const struct mf_model *m)
{
	int64_t n = mf_model_linear_params(m), experts;

	if (m->experts > 0) {
		/* The routed experts out; the routers (and Qwen2-MoE's
		 * shared expert's gate) in. */
		experts = mf_cmul(m->layers,
		    mf_cmul(m->experts,
		        mf_cmul(3,
		            mf_cmul(m->hidden, mf_model_expert_width(m)))));
		n = mf_cadd(n - experts,
		    mf_cmul(m->layers,
		        mf_cmul(m->hidden,
		            m->experts + (m->shared_intermediate > 0))));
	}
	if (!m->no_head)
		n = mf_cadd(n, mf_cmul(m->vocab, m->hidden));
	return n;
}

/* Optimizer state per parameter: the master copy and the moments. */
static int64_t
optimizer_bytes(enum mf_optimizer o, const struct mf_est_precision *pr)
{
	switch (o) {
	case MF_ADAM8BIT:
	case MF_PAGED_ADAMW8BIT:
		return pr->master + 2;
	case MF_SGD:
		return pr->master + pr->moment;
	case MF_ADAMW:
		break;
	}
	return pr->master + 2 * pr->moment;
}

/*
 * bitsandbytes' 8-bit Adam, as 0.50.2 keeps its state a tensor
 * (bitsandbytes/optim/optimizer.py, Optimizer2State.init_state and
 * Optimizer8bit.get_state_buffer): a tensor under min_8bit_size (4096)
 * elements keeps two fp32 moments, 8 bytes an element; a larger one two
 * uint8 moments and an fp32 absmax for each moment a block of 256
 * elements (blocks rounded up a tensor).  A paged optimizer allocates the
 * moments of a tensor of 1e5 elements or more in CUDA unified memory
 * (F.get_paged), the rest, absmax included, as device tensors.  Each
 * optimizer copies its two quantization maps (create_dynamic_map, 256
 * fp32 each) to the device with its first 8-bit tensor: once, or with
 * the optimizer in backward (one optimizer a weight, torchtune) once for
 * each 8-bit tensor, N8 of them.  Ps: the elements of tensors under
 * 4096; B8: the 256-element blocks of the others; Pp: the elements of
 * tensors of 1e5 or more (0 unless paged).  Measured on transformers'
 * models, each weight's optimizer made by bitsandbytes' own init_state,
 * by tests/torch/optim_bwd.py.
 */
#define BNB_MIN_8BIT 4096
#define BNB_BLOCK 256
#define BNB_PAGED_MIN 100000
#define BNB_QMAPS (2 * 256 * 4)

struct bnb_state {
	int64_t small, blocks, paged, tensors;
};

static void
bnb_state(const struct mf_model *m, int paged, struct bnb_state *s)
{
	struct mf_tensor v[MF_MODEL_MAX_TENSORS];
	size_t n = mf_model_tensors(m, v);

	memset(s, 0, sizeof(*s));
	assert(n <= MF_MODEL_MAX_TENSORS);
	for (size_t i = 0; i < n; i++) {
		int64_t k = v[i].count, t = v[i].numel;

		if (t < BNB_MIN_8BIT) {
			s->small = mf_cadd(s->small, mf_cmul(k, t));
			continue;
		}
		s->tensors = mf_cadd(s->tensors, k);
		s->blocks =
		    mf_cadd(s->blocks, mf_cmul(k, mf_cdiv_up(t, BNB_BLOCK)));
		if (paged && t >= BNB_PAGED_MIN)
			s->paged = mf_cadd(s->paged, mf_cmul(k, t));
	}
}

/* Full training's 8-bit state under the estimator pytorch: the master
 * copy where there is one, and bnb_state's, the paged moments apart. */
static void
bnb_optimizer(const struct mf_model *m, const struct mf_workload *w,
    const struct mf_est_precision *pr, struct mf_estimate *e)
{
	int paged = w->optimizer == MF_PAGED_ADAMW8BIT;
	int64_t P = e->params, b;
	struct bnb_state s;
	struct mf_text f;

	bnb_state(m, paged, &s);
	mf_text_init(&f, mf_est_text(e, MF_B_OPTIMIZER));
	b = mf_cmul(P, pr->master);
	if (pr->master > 0) {
		mf_text_str(&f, "P x ");
		mf_text_int(&f, pr->master);
		mf_text_str(&f, " + ");
	}
	mf_text_str(&f, paged ? "(P - Ps - Pp) x 2" : "(P - Ps) x 2");
	mf_text_str(&f, " + B8 x 8 + Ps x 8 + ");
	b = mf_cadd(b, mf_cmul(2, P - s.small - s.paged));
	b = mf_cadd(b, mf_cmul(8, mf_cadd(s.blocks, s.small)));
	if (s.tensors > 0 && w->optimizer_in_backward) {
		mf_text_str(&f, "N8 x ");
		b = mf_cadd(b, mf_cmul(s.tensors, BNB_QMAPS));
	} else if (s.tensors > 0)
		b = mf_cadd(b, BNB_QMAPS);
	mf_text_int(&f, s.tensors > 0 ? BNB_QMAPS : 0);
	e->bucket[MF_B_OPTIMIZER] = b;
	if (paged)
		mf_est_per_param(e, MF_B_PAGED, "Pp", s.paged, 2);
}

/*
 * PEFT's prepare_model_for_kbit_training (peft/utils/other.py, 0.21.2):
 * every parameter that is not a bitsandbytes 4-bit one and is 16-bit is
 * cast to fp32, so the embeddings, norms and lm_head take 4 bytes a
 * parameter, not 2: (P - Pq) x 2 more.  Measured on transformers' Llama
 * with bitsandbytes' Linear4bit (tests/torch/quant.py, kbit cases).
 */
static void
kbit_prep(const struct mf_model *m, struct mf_estimate *e)
{
	struct mf_quant_sum s;

	mf_quant_sum(m, &e->quant, &s);
	if (s.pq < 0 || e->params < s.pq || e->bucket[MF_B_WEIGHTS] < 0) {
		e->bucket[MF_B_WEIGHTS] = -1;
		return;
	}
	mf_text_around(mf_est_text(e, MF_B_WEIGHTS), "",
	    " + (P - Pq) x 2 (kbitPrep: fp32)");
	e->bucket[MF_B_WEIGHTS] =
	    mf_cadd(e->bucket[MF_B_WEIGHTS], mf_cmul(2, e->params - s.pq));
}

/*
 * bitsandbytes' quant_state under FSDP: what quant.c stores of its 4-bit
 * weights but the packed codes (their absmax, second level and code
 * tables).  fully_shard shards a Params4bit's codes and leaves its
 * quant_state, which the module holds, whole on every GPU
 * (tests/torch/dist.py's fsdp2-qlora), so it is e->weights_whole.
 */
static void
whole_quant_state(const struct mf_model *m, struct mf_estimate *e)
{
	struct mf_quant_sum s;

	mf_quant_sum(m, &e->quant, &s);
	if (s.bytes < 0 || s.packed < 0) {
		e->bucket[MF_B_WEIGHTS] = -1;
		return;
	}
	e->weights_whole = mf_cless(s.bytes, s.packed);
}

/* Weights: P x the precision's bytes, and under autocast the 16-bit
 * copies of the linear weights it keeps for backward (Pc x 2); QLoRA's
 * 4-bit base as bitsandbytes stores it (quant.c), or under the estimator
 * post the reference post's P x 0.5. */
static void
weights(const struct mf_model *m, const struct mf_workload *w,
    const struct mf_est_precision *pr, struct mf_estimate *e)
{
	struct mf_text f;

	mf_text_init(&f, mf_est_text(e, MF_B_WEIGHTS));
	if (w->method == MF_QLORA && w->estimator == MF_EST_POST) {
		mf_text_str(&f, "P x 0.5");
		e->bucket[MF_B_WEIGHTS] = mf_cdiv_up(e->params, 2);
		return;
	}
	if (w->method == MF_QLORA) {
		mf_quant_nf4(w->qlora_block, w->qlora_double_quant, &e->quant);
		e->quant_source = "qlora";
		e->bucket[MF_B_WEIGHTS] = mf_quant_weights(m, &e->quant,
		    mf_est_text(e, MF_B_WEIGHTS));
		if (w->qlora_kbit_prep)
			kbit_prep(m, e);
		if (w->qlora_quantizer == MF_QZ_BITSANDBYTES &&
		    mf_est_fsdp_on(w))
			whole_quant_state(m, e);
		return;
	}
	mf_text_str(&f, "P x ");
	mf_text_int(&f, pr->weight);
	e->bucket[MF_B_WEIGHTS] = mf_cmul(e->params, pr->weight);
	if (!pr->mixed)
		return;
	if (w->float8 != MF_F8_NONE) {
		/*
		 * torchao's Float8Linear saves its fp32 weight itself for
		 * backward (float8/float8_linear.py: save_for_backward(
		 * input_hp, weight_hp_t), the parameter's transpose, no new
		 * storage) and casts it to fp8 only for the matmul: autocast
		 * copies none of the layers' linears, only the head, which
		 * stays an nn.Linear (torchtitan's train configs:
		 * filter_fqns = ["output"]).  tests/torch/float8.py: the
		 * 16-bit weights saved are the head's V x h x 2 alone.
		 */
		if (m->no_head)
			return;
		mf_text_str(&f, " + V x h x 2");
		e->bucket[MF_B_WEIGHTS] = mf_cadd(e->bucket[MF_B_WEIGHTS],
		    mf_cmul(2, mf_cmul(m->vocab, m->hidden)));
		return;
	}
	mf_text_str(&f, " + Pc x 2");
	e->bucket[MF_B_WEIGHTS] = mf_cadd(e->bucket[MF_B_WEIGHTS],
	    mf_cmul(2, mf_est_autocast_params(m)));
}

/* Adapter weight, gradient and optimizer state, a bytes each. */
static int64_t
adapter_bytes(enum mf_optimizer o, int64_t a)
{
	switch (o) {
	case MF_ADAM8BIT:
	case MF_PAGED_ADAMW8BIT:
		return 2 * a + 2;
	case MF_SGD:
		return 3 * a;
	case MF_ADAMW:
		break;
	}
	return 4 * a;
}

int64_t
mf_est_lora_bytes(const struct mf_workload *w)
{
	return w->lora_dtype == MF_LORA_FP32 ? 4 : 2;
}

int64_t
mf_est_grad_bytes(const struct mf_workload *w)
{
	if (w->method == MF_LORA || w->method == MF_QLORA)
		return mf_est_lora_bytes(w);
	return mf_est_precision(w->precision)->grad;
}

/* Whether the optimizer in backward steps tied embeddings (below). */
static int
oib_tied(const struct mf_model *m, const struct mf_workload *w)
{
	return w->optimizer_in_backward && w->method == MF_FULL &&
	    m->tied_embeddings && !m->no_head && !m->no_embed;
}

/*
 * Gradients with the optimizer in backward (design 19), as torchtune 0.6.1
 * runs it (training.register_optim_in_bwd_hooks): a post-accumulate-grad
 * hook on every weight steps that weight's own torch.optim.AdamW and sets
 * its gradient to None.  The autograd engine runs a weight's accumulation,
 * and so its step, as soon as the node that made the gradient returns, so
 * the weights' gradients live one at a time: the largest, Pmax x g.  Tied
 * embeddings are the exception: the head's gradient, made first in
 * backward, waits in the engine's buffer for the embeddings' own, made
 * last, so it is held through every layer's backward beside the layer
 * weight's being stepped: (V x h + Pl) x g, Pl the largest tensor of a
 * layer.  (The embeddings' backward then holds the two and their sum,
 * 3 x V x h x g, with no activation left: less than these with the step's
 * temporaries of V x h, 2g a weight, in transient.)  Compiled (compile:
 * true), a layer's backward graph returns all of its weights' gradients
 * together before the engine accumulates the first, so a layer's are
 * alive at once: the layer's parameters take Pl's place, and Pmax's where
 * they are more.  Measured on transformers' models with torchtune's hooks
 * by tests/torch/optim_bwd.py, compiled too.
 */
static void
oib_gradients(const struct mf_model *m, const struct mf_workload *w,
    const struct mf_est_precision *pr, struct mf_estimate *e)
{
	struct mf_text f;
	int64_t n,
	    pl = w->compile ? mf_model_layer_params(m) :
	                      mf_model_largest_layer_param(m);
	const char *sym = w->compile ? "layer params" : "Pl";

	mf_text_init(&f, mf_est_text(e, MF_B_GRADIENTS));
	if (oib_tied(m, w)) {
		mf_text_str(&f, "(V x h + ");
		mf_text_str(&f, sym);
		mf_text_str(&f, ") x ");
		n = mf_cadd(mf_cmul(m->vocab, m->hidden), pl);
	} else if (w->compile && pl > mf_model_largest_param(m)) {
		mf_text_str(&f, "layer params x ");
		n = pl;
	} else {
		mf_text_str(&f, "Pmax x ");
		n = mf_model_largest_param(m);
	}
	mf_text_int(&f, pr->grad);
	e->bucket[MF_B_GRADIENTS] = mf_cmul(n, pr->grad);
}

/* Whether full training's optimizer state is bitsandbytes' per tensor
 * (bnb_optimizer); the post's arithmetic keeps its P x 2 moments. */
static int
eight_bit(const struct mf_workload *w)
{
	return w->estimator == MF_EST_PYTORCH &&
	    (w->optimizer == MF_ADAM8BIT || w->optimizer == MF_PAGED_ADAMW8BIT);
}

/* The step's temporaries cover it with AdamW; 8-bit Adam's kernel has
 * none (tests/torch/optim_bwd.py, qwen2 tied head step). */
int64_t
mf_est_oib_tied(const struct mf_model *m, const struct mf_workload *w,
    struct mf_text *f)
{
	int64_t g = 2 * mf_est_precision(w->precision)->grad;

	if (!oib_tied(m, w))
		return 0;
	mf_text_str(f, ", V x h x ");
	mf_text_int(f, g);
	return mf_cmul(mf_cmul(m->vocab, m->hidden), g);
}

void
mf_est_state(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	const struct mf_est_precision *pr = mf_est_precision(w->precision);
	int64_t P = e->params, T;
	struct mf_text f;

	weights(m, w, pr, e);
	if (w->method == MF_FULL) {
		e->trainable = P;
		if (w->optimizer_in_backward)
			oib_gradients(m, w, pr, e);
		else
			mf_est_per_param(e, MF_B_GRADIENTS, "P", P, pr->grad);
		if (eight_bit(w))
			bnb_optimizer(m, w, pr, e);
		else
			mf_est_per_param(e, MF_B_OPTIMIZER, "P", P,
			    optimizer_bytes(w->optimizer, pr));
	} else {
		T = mf_model_lora_params(m, w->lora_rank, mf_est_lora_mask(w));
		e->trainable = T;
		mf_est_per_param(e, MF_B_ADAPTERS, "T", T,
		    adapter_bytes(w->optimizer, mf_est_lora_bytes(w)));
	}
	if (mf_est_fsdp_on(w)) {
		/* The post's: one layer gathered while the next is
		 * prefetched (the estimator pytorch's in est_fsdp.c). */
		mf_text_init(&f, mf_est_text(e, MF_B_SHARDING));
		mf_text_str(&f, "2 x layer params x 2");
		e->bucket[MF_B_SHARDING] = mf_cmul(4, mf_model_layer_params(m));
	}
}
