/*
 * test_quant.c: quantized weight storage (admission/model/quant.c).
 *
 * The NF4 tensors' bytes are those tests/torch/quant.py measured on
 * bitsandbytes 0.50's Params4bit and QuantState (packed weights, absmax,
 * code, offset, state2); the rest is hand arithmetic in the comments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/model.h"
#include "models.h"
#include "model/quant.h"

/*
 * One tensor of bitsandbytes NF4, blocks of 64:
 * - 4096 x 4096 without double quantization: 8,388,608 packed bytes,
 *   262,144 fp32 absmax (1,048,576 bytes) and the 64-byte code:
 *   9,437,248;
 * - with it: 262,144 uint8 absmax, 1,024 second-level fp32 absmax (4,096
 *   bytes), the code, the offset and the second level's code (64 + 4 +
 *   1,024): 8,655,940;
 * - 100 x 70 with it: 3,500 packed, 110 absmax, one second-level block
 *   (4) and 1,092: 4,706.
 */
static void
test_quant_nf4_tensor(void **state)
{
	struct mf_quant q;

	(void)state;
	mf_quant_nf4(64, 0, &q);
	assert_int_equal(mf_quant_tensor_bytes(&q, 4096, 4096), 9437248);
	assert_int_equal(mf_quant_tensor_bytes(&q, 14336, 4096), 33030208);
	mf_quant_nf4(64, 1, &q);
	assert_int_equal(mf_quant_tensor_bytes(&q, 4096, 4096), 8655940);
	assert_int_equal(mf_quant_tensor_bytes(&q, 1024, 4096), 2164804);
	assert_int_equal(mf_quant_tensor_bytes(&q, 100, 70), 4706);
}

/*
 * Llama 3.1 8B in NF4, blocks of 64, double quantized (the QLoRA
 * recipe): the linears' 6,979,321,856 weights packed 3,489,660,928;
 * 109,051,904 absmax bytes; every tensor's blocks a multiple of 256, so
 * 425,984 second-level blocks, 1,703,936 bytes; 224 tensors x 1,092 =
 * 244,608; the other 1,050,939,392 parameters at 2 bytes, 2,101,878,784.
 * 5,702,540,160 in all, inside the published 5.7-6.0 GB.  Without double
 * quantization: 436,207,616 of absmax and 224 x 64 = 14,336 of code,
 * 6,027,761,664.
 */
static void
test_quant_nf4_llama8b(void **state)
{
	struct mf_quant_sum s;
	struct mf_quant q;

	(void)state;
	mf_quant_nf4(64, 1, &q);
	mf_quant_sum(&llama8b, &q, &s);
	assert_int_equal(s.pq, INT64_C(6979321856));
	assert_int_equal(s.packed, INT64_C(3489660928));
	assert_int_equal(s.scales, INT64_C(109051904));
	assert_int_equal(s.scales2, 425984);
	assert_int_equal(s.tensors, 224);
	assert_int_equal(s.largest, INT64_C(58720256)); /* 14,336 x 4,096 */
	assert_int_equal(mf_quant_weights(&llama8b, &q, NULL),
	    INT64_C(5702540160));
	mf_quant_nf4(64, 0, &q);
	assert_int_equal(mf_quant_weights(&llama8b, &q, NULL),
	    INT64_C(6027761664));
}

/*
 * AWQ (4 bits, groups of 128, fp16 scales, packed 4-bit zeros) of Llama
 * 3.1 8B: 3,489,660,928 packed, 54,525,952 scales x 2 = 109,051,904,
 * zeros 54,525,952 / 2 = 27,262,976, and 2,101,878,784 of the rest:
 * 5,727,854,592.  GPTQ adds an int32 group index an input row: (4,096 x
 * 6 + 14,336) x 32 = 1,245,184 rows, 4,980,736 bytes.  Keeping down_proj
 * 16-bit puts its 32 x 58,720,256 weights back at 2 bytes: + 32 x
 * (117,440,512 - 29,360,128 - 917,504 - 229,376) with the zeros and
 * scales of groups of 128 gone (458,752 scales a tensor).
 */
static void
test_quant_group_formats(void **state)
{
	struct mf_quant q;
	int64_t awq = INT64_C(5727854592);

	(void)state;
	mf_quant_scaled("awq", 4, 128, 2, &q);
	q.zero_points = 1;
	assert_int_equal(mf_quant_weights(&llama8b, &q, NULL), awq);
	q.g_idx = 1;
	assert_int_equal(mf_quant_weights(&llama8b, &q, NULL),
	    awq + INT64_C(4980736));
	q.g_idx = 0;
	q.keep = 1u << MF_LIN_DOWN;
	assert_int_equal(mf_quant_weights(&llama8b, &q, NULL),
	    awq +
	        32 *
	            (INT64_C(117440512) - INT64_C(29360128) - INT64_C(917504) -
	                INT64_C(229376)));
}

/* Per row, per tensor and 128 x 128 blocks of fp32 scales (fp8): 4,096 x
 * 14,336 takes 58,720,256 bytes and 4 x 14,336, 4 or 4 x 32 x 112. */
static void
test_quant_scale_layouts(void **state)
{
	struct mf_quant q;
	int64_t n = INT64_C(58720256);

	(void)state;
	mf_quant_scaled("fp8", 8, MF_Q_PER_ROW, 4, &q);
	assert_int_equal(mf_quant_tensor_bytes(&q, 14336, 4096), n + 57344);
	mf_quant_scaled("fp8", 8, MF_Q_PER_TENSOR, 4, &q);
	assert_int_equal(mf_quant_tensor_bytes(&q, 14336, 4096), n + 4);
	q.block_out = q.block_in = 128;
	assert_int_equal(mf_quant_tensor_bytes(&q, 4096, 14336),
	    n + 4 * 32 * 112);
	mf_quant_none(&q);
	assert_int_equal(mf_quant_tensor_bytes(&q, 4096, 14336), 2 * n);
	assert_int_equal(mf_quant_weights(&llama8b, &q, NULL),
	    2 * INT64_C(8030261248));
}

/* Each MoE expert is a tensor of its own; the shared expert too. */
static void
test_quant_experts(void **state)
{
	struct mf_model m = llama8b;
	struct mf_quant_sum s;
	struct mf_quant q;

	(void)state;
	m.experts = 8;
	m.experts_per_tok = 2;
	m.block = MF_BLOCK_MIXTRAL;
	mf_quant_nf4(64, 0, &q);
	mf_quant_sum(&m, &q, &s);
	/* 4 attention tensors and 8 x 3 experts a layer. */
	assert_int_equal(s.tensors, 32 * (4 + 24));
	assert_int_equal(s.pq, mf_model_linear_params(&m));
	q.keep = MF_Q_KEEP_ROUTED;
	mf_quant_sum(&m, &q, &s);
	assert_int_equal(s.tensors, 32 * 4);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quant_nf4_tensor),
		cmocka_unit_test(test_quant_nf4_llama8b),
		cmocka_unit_test(test_quant_group_formats),
		cmocka_unit_test(test_quant_scale_layouts),
		cmocka_unit_test(test_quant_experts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
