/*
 * quant.h: how quantized linear weights are stored, the one owner of it
 * (design 14, 19).  QLoRA's frozen base (est_state.c), inference's
 * weightsDtype and a checkpoint's quantization_config (est_serve.c,
 * model.c) all ask it.  Only the decoder layers' linear projections
 * (mf_model_linears) are quantized: embeddings, norms, biases, the router
 * and the output head stay 16-bit.  Pure arithmetic; no allocation.
 */
#ifndef MF_QUANT_H
#define MF_QUANT_H

#include <stdint.h>

struct mf_model;

enum mf_qformat {
	MF_Q_16BIT, /* not quantized: 2 bytes a weight */
	/*
	 * bitsandbytes 4-bit (Params4bit + QuantState, functional.py
	 * quantize_4bit): two weights a byte, an absmax a block of group
	 * weights, fp32; with double quantization the absmax is 8-bit, with
	 * an fp32 absmax a block of 256 of them, an fp32 offset and the
	 * 256-entry fp32 code of that second level; and the 16-entry fp32
	 * code of NF4 a tensor either way.
	 */
	MF_Q_NF4,
	/*
	 * Integers (or fp8) of bits bits, packed, with scales: one a group
	 * of group weights along the input of each output row (group > 0),
	 * one an output row (group == MF_Q_PER_ROW), one a tensor (group ==
	 * MF_Q_PER_TENSOR) or one a block_out x block_in block; zero points
	 * of bits bits a scale, packed (AWQ, asymmetric GPTQ and
	 * compressed-tensors); GPTQ's int32 group index an input row.
	 */
	MF_Q_SCALED
};

#define MF_Q_PER_ROW (-1)
#define MF_Q_PER_TENSOR 0

/* Linear kinds kept 16-bit: a bit (1u << enum mf_linear_kind), and one
 * for every routed expert's and the shared expert's projections. */
#define MF_Q_KEEP_ROUTED (1u << 20)
#define MF_Q_KEEP_SHARED (1u << 21)

struct mf_quant {
	enum mf_qformat format;
	const char *method; /* "awq", "gptq", "nf4", ...: a static string */
	int bits;
	int64_t group;
	int64_t block_out, block_in; /* > 0: block scales (fp8) */
	int scale_bytes;             /* a scale: 2 (fp16) or 4 (fp32) */
	int zero_points;
	int g_idx;
	int double_quant; /* MF_Q_NF4 */
	unsigned keep;    /* MF_Q_KEEP_* and kind bits kept 16-bit */
};

/* 16-bit storage: what every model is without a quantization. */
void mf_quant_none(struct mf_quant *q);
/* bitsandbytes NF4 of blocks of block weights, double quantized or not. */
void mf_quant_nf4(int64_t block, int double_quant, struct mf_quant *q);
/* Packed integers of bits bits in groups of group weights with scales
 * of scale_bytes each (group as struct mf_quant's). */
void mf_quant_scaled(const char *method, int bits, int64_t group,
    int scale_bytes, struct mf_quant *q);

/* Bytes of one out x in weight stored as q; -1 on overflow. */
int64_t
mf_quant_tensor_bytes(const struct mf_quant *q, int64_t out, int64_t in);

/*
 * The quantized part of m under q: pq the weights quantized, packed the
 * bytes they take packed (bits / 8 a weight, a tensor rounded up to a
 * whole byte), scales the
 * scales (NF4: the absmax blocks) and scales2 NF4's second-level blocks,
 * tensors the quantized tensors, rows their input rows (GPTQ's group
 * indices), largest the elements of the largest one, and bytes what they
 * take.  Every count is -1 on overflow.
 */
struct mf_quant_sum {
	int64_t pq, packed, scales, scales2, tensors, rows, largest, bytes;
};
void mf_quant_sum(const struct mf_model *m, const struct mf_quant *q,
    struct mf_quant_sum *out);

/*
 * Bytes of m's weights under q: the quantized linears (mf_quant_sum) and
 * every other parameter at 2 bytes, with the arithmetic, in the symbols
 * P, Pq, Wq (packed), S, S2, nq and R of mf_quant_sum, written into formula
 * (MF_FORMULA_MAX bytes, estimate.h; NULL takes nothing).  -1 on overflow.
 */
int64_t mf_quant_weights(const struct mf_model *m, const struct mf_quant *q,
    char *formula);

#endif
