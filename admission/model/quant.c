/*
 * quant.c: quantized weight storage (quant.h).
 *
 * NF4 is counted tensor by tensor as bitsandbytes 0.50 stores it
 * (functional.py quantize_4bit and quantize_blockwise, QuantState), and
 * measured so by tests/torch/quant.py on bitsandbytes' own Params4bit:
 * the packed weights, uint8 of ceil(n / 2); without double quantization
 * absmax, fp32 of ceil(n / blocksize), and code, fp32 of 16 (64 bytes);
 * with it absmax uint8 of ceil(n / blocksize), offset (fp32, 4 bytes),
 * state2.absmax, fp32 of ceil(blocks / 256), and state2.code, fp32 of
 * 256 (1,024 bytes), beside the 64 bytes of code.
 *
 * The scaled formats as vLLM's linear methods hold them: AWQ qweight
 * (int32 of out x in / 8), scales (fp16, in / group x out) and qzeros
 * (int32, in / group x out / 8); GPTQ qweight, scales, qzeros and g_idx
 * (int32 of in); compressed-tensors weight_packed and weight_scale (and
 * weight_zero_point when asymmetric); fp8 one byte a weight and fp32
 * scales by tensor, row or block.
 */
#include "quant.h"

#include <assert.h>
#include <string.h>

#include "../base/internal.h"
#include "model.h"

/* Bytes of the fp32 code tables a 4-bit tensor carries: NF4's 16 values,
 * and with double quantization the offset and the 256 of the second
 * level (measured: tests/torch/quant.py). */
#define NF4_CODE 64
#define NF4_DQ_CONST (NF4_CODE + 4 + 1024)
/* Absmax values a second-level block of double quantization. */
#define NF4_DQ_BLOCK 256

static int64_t
cdiv(int64_t a, int64_t n)
{
	if (a < 0 || n < 1)
		return -1;
	return a / n + (a % n != 0);
}

void
mf_quant_none(struct mf_quant *q)
{
	memset(q, 0, sizeof(*q));
	q->format = MF_Q_16BIT;
	q->method = "none";
	q->bits = 16;
}

void
mf_quant_nf4(int64_t block, int double_quant, struct mf_quant *q)
{
	mf_quant_none(q);
	q->format = MF_Q_NF4;
	q->method = "nf4";
	q->bits = 4;
	q->group = block;
	q->scale_bytes = double_quant ? 1 : 4;
	q->double_quant = double_quant;
}

void
mf_quant_scaled(const char *method, int bits, int64_t group, int scale_bytes,
    struct mf_quant *q)
{
	mf_quant_none(q);
	q->format = MF_Q_SCALED;
	q->method = method;
	q->bits = bits;
	q->group = group;
	q->scale_bytes = scale_bytes;
}

/* Scales of an out x in weight. */
static int64_t
scales_of(const struct mf_quant *q, int64_t out, int64_t in)
{
	if (q->format == MF_Q_NF4)
		return cdiv(mf_cmul(out, in), q->group);
	if (q->block_out > 0 && q->block_in > 0)
		return mf_cmul(cdiv(out, q->block_out), cdiv(in, q->block_in));
	if (q->group == MF_Q_PER_TENSOR)
		return 1;
	if (q->group == MF_Q_PER_ROW)
		return out;
	return mf_cmul(out, cdiv(in, q->group));
}

int64_t
mf_quant_tensor_bytes(const struct mf_quant *q, int64_t out, int64_t in)
{
	int64_t n = mf_cmul(out, in), s = scales_of(q, out, in), b;

	switch (q->format) {
	case MF_Q_NF4:
		b = mf_cadd(cdiv(n, 2), mf_cmul(s, q->scale_bytes));
		if (!q->double_quant)
			return mf_cadd(b, NF4_CODE);
		return mf_cadd(b,
		    mf_cadd(mf_cmul(4, cdiv(s, NF4_DQ_BLOCK)), NF4_DQ_CONST));
	case MF_Q_SCALED:
		b = mf_cadd(cdiv(mf_cmul(n, q->bits), 8),
		    mf_cmul(s, q->scale_bytes));
		if (q->zero_points)
			b = mf_cadd(b, cdiv(mf_cmul(s, q->bits), 8));
		if (q->g_idx)
			b = mf_cadd(b, mf_cmul(4, in));
		return b;
	case MF_Q_16BIT:
		break;
	}
	return mf_cmul(2, n);
}

static int
kept(const struct mf_quant *q, const struct mf_linear *l)
{
	if (q->format == MF_Q_16BIT || (q->keep & (1u << l->kind)))
		return 1;
	if (l->owner == MF_LIN_ROUTED)
		return (q->keep & MF_Q_KEEP_ROUTED) != 0;
	if (l->owner == MF_LIN_SHARED)
		return (q->keep & MF_Q_KEEP_SHARED) != 0;
	return 0;
}

void
mf_quant_sum(const struct mf_model *m, const struct mf_quant *q,
    struct mf_quant_sum *out)
{
	struct mf_linear v[MF_MODEL_MAX_LINEARS];
	size_t n = mf_model_linears(m, v);
	struct mf_quant_sum s;
	int64_t c, sc;

	memset(&s, 0, sizeof(s));
	assert(n <= MF_MODEL_MAX_LINEARS);
	for (size_t i = 0; i < n; i++) {
		if (kept(q, &v[i]) || v[i].count == 0)
			continue;
		c = v[i].count;
		sc = scales_of(q, v[i].out, v[i].in);
		s.pq = mf_cadd(s.pq, mf_cmul(c, mf_cmul(v[i].out, v[i].in)));
		s.packed = mf_cadd(s.packed,
		    mf_cmul(c,
		        cdiv(mf_cmul(mf_cmul(v[i].out, v[i].in), q->bits), 8)));
		s.scales = mf_cadd(s.scales, mf_cmul(c, sc));
		s.scales2 =
		    mf_cadd(s.scales2, mf_cmul(c, cdiv(sc, NF4_DQ_BLOCK)));
		s.tensors = mf_cadd(s.tensors, c);
		s.rows = mf_cadd(s.rows, mf_cmul(c, v[i].in));
		if (mf_cmul(v[i].out, v[i].in) > s.largest)
			s.largest = mf_cmul(v[i].out, v[i].in);
		s.bytes = mf_cadd(s.bytes,
		    mf_cmul(c, mf_quant_tensor_bytes(q, v[i].out, v[i].in)));
	}
	*out = s;
}

/* "S x 2" with the scale bytes (one byte: "S"). */
static void
times(struct mf_text *f, const char *sym, int64_t n)
{
	mf_text_str(f, sym);
	if (n == 1)
		return;
	mf_text_str(f, " x ");
	mf_text_int(f, n);
}

static void
formula_of(const struct mf_quant *q, char *formula)
{
	struct mf_text f;

	mf_text_init(&f, formula);
	if (q->format == MF_Q_16BIT) {
		mf_text_str(&f, "P x 2");
		return;
	}
	mf_text_str(&f, "Wq + ");
	times(&f, "S", q->scale_bytes);
	if (q->format == MF_Q_NF4) {
		mf_text_str(&f,
		    q->double_quant ? " + S2 x 4 + nq x " : " + nq x ");
		mf_text_int(&f, q->double_quant ? NF4_DQ_CONST : NF4_CODE);
	}
	if (q->zero_points) {
		mf_text_str(&f, " + S x ");
		mf_text_int(&f, q->bits);
		mf_text_str(&f, " / 8");
	}
	if (q->g_idx)
		mf_text_str(&f, " + R x 4");
	mf_text_str(&f, " + (P - Pq) x 2");
}

int64_t
mf_quant_weights(const struct mf_model *m, const struct mf_quant *q,
    char *formula)
{
	int64_t p = mf_model_params(m);
	struct mf_quant_sum s;

	formula_of(q, formula);
	if (q->format == MF_Q_16BIT)
		return mf_cmul(2, p);
	mf_quant_sum(m, q, &s);
	if (s.pq < 0 || p < s.pq)
		return -1;
	return mf_cadd(s.bytes, mf_cmul(2, p - s.pq));
}
