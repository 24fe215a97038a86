/*
 * est_load.c: the loading moment of a QLoRA job (design 22): what a GPU
 * holds while the base is loaded and quantized, and while PEFT's
 * prepare_model_for_kbit_training casts it, beside the step's peak.
 *
 * transformers 5.24 loads a checkpoint one tensor at a time when it
 * quantizes on the fly (core_model_loading.py,
 * convert_and_load_state_dict_in_model: no worker threads "to avoid
 * worker threads loading full-precision tensors to GPU faster than the
 * main thread can quantize them"): each tensor is read on the host and
 * copied to the GPU in 16 bits (_materialize_copy), and a linear's is
 * handed to bitsandbytes (integrations/bitsandbytes.py, Bnb4bitQuantize),
 * whose Params4bit._quantize calls quantize_4bit (bitsandbytes 0.50.2,
 * functional.py and backends/cuda/ops.py): the packed weight and an fp32
 * absmax a block are allocated beside the 16-bit tensor, and with double
 * quantization the absmax less its mean (another fp32 absmax) is
 * quantized blockwise while both are alive.  So, beside the weights
 * loaded so far (at most the whole base, 16-bit where not quantized):
 *
 *   Qmax x 2 + ceil(Qmax / B) x 8   (B = qlora.blockSize; Qmax x 2 alone
 *                                    without double quantization, whose
 *                                    absmax is the one kept)
 *
 * (tests/torch/loading.py: one Params4bit quantized, 1024 x 512 and
 * 384 x 640, uint8 and bf16 storage, exactly; the whole load of three
 * layers, 5.2% under, the last layer's attention not loaded yet.)
 *
 * PEFT 0.21.2's prepare_model_for_kbit_training (peft/utils/other.py)
 * then casts each 16-bit parameter that is not 4-bit to fp32, one at a
 * time (param.data = param.data.to(torch.float32)): while one is cast its
 * 16-bit original and its fp32 copy are both alive, the others already
 * fp32 or still 16-bit, so at most the prepared weights (the weights
 * bucket with kbitPrep) and the largest such parameter's 16-bit original:
 *
 *   weights + Xmax x 2              (Xmax: V x h, the embeddings or the
 *                                    head, the last one cast when untied)
 *
 * (tests/torch/loading.py: from_pretrained then PEFT's call on Llama and
 * Mistral, exactly; on tied Qwen2, whose embeddings are cast first and
 * the norms after, 0.15% under.)
 *
 * torchtune (qlora.quantizer torchao) builds the whole model on the GPU
 * first, the base's linears as torchao NF4Tensors and the adapters
 * beside them (recipes/lora_finetune_single_device.py, _setup_model),
 * then loads the checkpoint into it: NF4Tensor's copy_ copies each host
 * tensor to the GPU in 16 bits and quantizes it with
 * NF4Tensor.from_tensor (torchao 0.15.0, dtypes/nf4tensor.py), which
 * holds, beside that copy (2n for a weight of n), the scaled blocks (2n),
 * an index a weight (n), a block's absmax and its int8 quantization
 * (ceil(n / B) x (2 + 1)), a 16-bit factor a 256 blocks and the absmax'
 * mean, the 16 codes (2 x 16 + 2 bytes), and, for each chunk of at most
 * CHUNK_SIZE (2^20) weights, the distance of each weight to the 16 codes
 * and its absolute value (16 x 2 x 2 bytes a weight, both alive while abs
 * runs).  So, beside the model and its adapters (T x their bytes):
 *
 *   Qmax x 5 + ceil(Qmax / B) x 3 + ceil(Qmax / 256B) x 2
 *     + min(Qmax, 2^20) x 64 + 34
 *
 * (tests/torch/loading.py: torchtune 0.6.1's lora_llama3 with
 * quantize_base built and loaded in bf16, as its QLoRA configs build it,
 * three shapes, one past CHUNK_SIZE, to the byte; a model built in fp32
 * holds about twice as much and is not measured.)
 *
 * None of these moments holds the activations or logits of the step,
 * and only torchtune's the adapters; a step
 * on a short sequence holds less than Xmax x 2 beside the weights, and
 * then loading sets the peak.  The estimate's peak is the larger of the
 * two moments and the step: the bucket loading holds what loading needs
 * beyond the step's buckets, so that the buckets still add up to
 * perGpuBytes, and is absent when the step is the peak.  Measured by
 * tests/torch/loading.py on transformers' own from_pretrained with
 * BitsAndBytesConfig and PEFT's own call, the checkpoint's tensors counted
 * as host memory and their copies as the GPU's (docs/estimators.md).
 * Modelled on one GPU's model: under tensor, pipeline or expert parallel
 * (not measured) and under the estimator post (the post's arithmetic has
 * no loading) the bucket stays 0.
 */
#include <string.h>

#include "est.h"
#include "../model/quant.h"

/* torchao 0.15.0, dtypes/nf4tensor.py: CHUNK_SIZE, the weights whose
 * nearest codes are found at once. */
#define TORCHAO_CHUNK (INT64_C(1) << 20)
/* torchao 0.15.0, dtypes/nf4tensor.py: to_nf4's scaler_block_size, the
 * blocks a second-level factor (torchtune's FrozenNF4Linear and LoRALinear
 * pass none of their own). */
#define TORCHAO_SCALERS 256

/* The largest parameter bitsandbytes leaves in 16 bits: the embeddings'
 * or the head's V x h where the model has either, else a router's E x h
 * or a norm's h. */
static int64_t
largest_kept(const struct mf_model *m)
{
	int64_t x = m->hidden;

	if (!m->no_embed || !m->no_head)
		x = mf_cmul(m->vocab, m->hidden);
	if (m->experts > 0 && mf_cmul(m->experts, m->hidden) > x)
		x = mf_cmul(m->experts, m->hidden);
	return x;
}

/* torchao's to_nf4 of the largest linear, Qmax weights, beside the
 * weights b and the adapters: b + T x their bytes + its transient. */
static int64_t
to_nf4(const struct mf_workload *w, const struct mf_estimate *e, int64_t b,
    int64_t qmax, struct mf_text *f)
{
	int64_t ab = mf_est_lora_bytes(w);
	int64_t chunk = qmax < TORCHAO_CHUNK ? qmax : TORCHAO_CHUNK;

	mf_text_str(f, " + T x ");
	mf_text_int(f, ab);
	mf_text_str(f, " + Qmax x 5 + ceil(Qmax / ");
	mf_text_int(f, w->qlora_block);
	mf_text_str(f, ") x 3 + ceil(Qmax / ");
	mf_text_int(f, TORCHAO_SCALERS * w->qlora_block);
	mf_text_str(f, ") x 2 + min(Qmax, 2^20) x 64 + 34");
	b = mf_cadd(b, mf_cmul(e->trainable, ab));
	b = mf_cadd(b, mf_cmul(5, qmax));
	b = mf_cadd(b, mf_cmul(3, mf_cdiv_up(qmax, w->qlora_block)));
	b = mf_cadd(b,
	    mf_cmul(2, mf_cdiv_up(qmax, TORCHAO_SCALERS * w->qlora_block)));
	return mf_cadd(b, mf_cadd(mf_cmul(64, chunk), 34));
}

/* The quantization of the largest linear beside the weights loaded
 * before it (16-bit where not quantized), its text into f. */
static int64_t
quantizing(const struct mf_model *m, const struct mf_workload *w,
    const struct mf_estimate *e, struct mf_text *f)
{
	int64_t b = e->stage[MF_B_WEIGHTS], qmax, cast;
	struct mf_quant_sum s;

	mf_quant_sum(m, &e->quant, &s);
	qmax = s.largest;
	mf_text_str(f, "weights");
	if (w->qlora_kbit_prep) {
		/* kbit_prep's fp32 half of the kept parameters, not cast
		 * yet (est_state.c). */
		mf_text_str(f, " - (P - Pq) x 2");
		cast = mf_cmul(2, e->params - s.pq);
		b = b < 0 || cast < 0 || cast > b ? -1 : b - cast;
	}
	if (w->qlora_quantizer == MF_QZ_TORCHAO)
		return to_nf4(w, e, b, qmax, f);
	mf_text_str(f, " + Qmax x 2");
	b = mf_cadd(b, mf_cmul(2, qmax));
	if (!w->qlora_double_quant)
		return b;
	mf_text_str(f, " + ceil(Qmax / ");
	mf_text_int(f, w->qlora_block);
	mf_text_str(f, ") x 8");
	return mf_cadd(b, mf_cmul(8, mf_cdiv_up(qmax, w->qlora_block)));
}

int
mf_est_loads(const struct mf_workload *w)
{
	return w->kind == MF_TRAINING && w->method == MF_QLORA &&
	    w->estimator == MF_EST_PYTORCH && w->tensor == 1 &&
	    w->pipeline == 1 && w->expert == 1 && w->shard_gpus == 1;
}

void
mf_est_loading(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	int64_t load, step;
	char text[MF_FORMULA_MAX];
	struct mf_text f;

	if (!mf_est_loads(w))
		return;
	mf_text_init(&f, text);
	mf_text_str(&f, "max(");
	load = quantizing(m, w, e, &f);
	if (w->qlora_kbit_prep) {
		mf_text_str(&f, ", weights + Xmax x 2");
		load = mf_max_poisoned(load,
		    mf_cadd(e->stage[MF_B_WEIGHTS],
		        mf_cmul(2, largest_kept(m))));
	}
	mf_text_str(&f, ") - step");
	step = mf_est_per_gpu(e, e->shards);
	if (load < 0 || step < 0) {
		e->bucket[MF_B_LOADING] = -1;
		return;
	}
	if (load <= step)
		return;
	e->bucket[MF_B_LOADING] = e->stage[MF_B_LOADING] = load - step;
	if (!e->figures_only)
		memcpy(e->formula[MF_B_LOADING], text, sizeof(text));
}
