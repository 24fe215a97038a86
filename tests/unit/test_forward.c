/*
 * test_forward.c: the activation peak of a serving engine's profile run
 * (design 14, admission/estimate/forward.c), on the shipped Llama 3.1 8B and
 * Mixtral 8x7B, with the arithmetic worked out by hand beside each
 * figure; every shipped model's formula evaluates to its bytes; overflow
 * is -1.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "files.h"
#include "formula.h"
#include "estimate/forward.h"
#include "model/model.h"
#include "models.h"
#include "msg.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static struct mf_models *shipped;

static int
setup(void **state)
{
	(void)state;
	return shipped_data(NULL, &shipped);
}

static int
teardown(void **state)
{
	(void)state;
	mf_models_free(shipped);
	shipped = NULL;
	return 0;
}

static const struct mf_model *
model(const char *name)
{
	const struct mf_model *m = mf_models_find(shipped, name);

	assert_non_null(m);
	return m;
}

/* The formula of m at tokens and seqs evaluates to the bytes. */
static void
formula_agrees(const struct mf_model *m, int64_t tokens, int64_t seqs)
{
	const struct sym syms[] = {
		{ "t", (double)tokens },
		{ "reqs", (double)seqs },
		MODEL_SYMS(m),
	};
	char formula[MF_FORMULA_MAX];
	int64_t bytes = mf_forward_peak(m, tokens, seqs, formula);
	double v;
	int bad;

	assert_true(bytes > 0);
	v = evaluate(formula, syms, NELEM(syms), &bad);
	if (bad || fabs(v - (double)bytes) > 1e-9 * (double)bytes + 1) {
		print_error("'%s' is %.0f, the bytes %lld\n", formula, v,
		    (long long)bytes);
		fail();
	}
}

/*
 * Llama 3.1 8B: h 4096, a 32, kv 8, d 128 (ad 4096, kvd 1024), I 14336,
 * V 128256.  Per token, e = 2:
 *   RoPE of q    4h + 8ad + 4kvd   = 16,384 + 32,768 + 4,096  =  53,248
 *   RoPE of k    4h + 4ad + 10kvd  = 16,384 + 16,384 + 10,240 =  43,008
 *   o_proj       6h + 4ad + 4kvd   = 24,576 + 16,384 + 4,096  =  45,056
 *   norm         12h + 8                                      =  49,160
 *   MLP          8h + 6I           = 32,768 + 86,016          = 118,784
 * the MLP, plus cos and sin (4d = 512): 119,296 a token.
 * The logits phase, per sequence: two hidden states (4h = 16,384), the
 * 16-bit logits, the fp32 copy masked in place by Triton's top-k/top-p,
 * its softmax and the exponential noise (14V = 2V + 4V + 4V + 4V =
 * 1,795,584), the dummy metadata (28), the first call's, the greedy and
 * the random ids (20): 1,812,016.  t 8192 in 256 sequences: 8192 x
 * 119,296 = 977,272,832; the logits, 8192 x 2h + 256 x 1,812,016 =
 * 67,108,864 + 463,876,096 = 530,984,960, are below.
 */
static void
test_forward_llama8b(void **state)
{
	const struct mf_model *m = model("meta-llama/Llama-3.1-8B");
	char formula[MF_FORMULA_MAX];

	(void)state;
	assert_int_equal(mf_forward_peak(m, 8192, 256, formula),
	    INT64_C(977272832));
	assert_string_equal(formula,
	    "max(t x (4d + max(4h + 8ad + 4kvd, 4h + 4ad + 10kvd, "
	    "6h + 4ad + 4kvd, 12h + 8, 8h + 6I)), "
	    "t x 2h + reqs x (4h + 14V + 48))");
	/*
	 * 512 sequences of one token: the layer's 512 x 119,296 =
	 * 61,079,552 is below the logits', 512 x 2h + 512 x 1,812,016 =
	 * 4,194,304 + 927,752,192 = 931,946,496.
	 */
	assert_int_equal(mf_forward_peak(m, 512, 512, formula),
	    INT64_C(931946496));
	/* The hand-written shape is the shipped one. */
	assert_int_equal(mf_forward_peak(&llama8b, 8192, 256, NULL),
	    INT64_C(977272832));
}

/*
 * The V0 engine's sampler (serverVersion before 0.8.0; 0.2.5's below),
 * Llama 3.1 8B, 512 sequences of one token, where the logits are the peak
 * (the layer's 512 x 119,296 = 61,079,552 is below).  Every token's
 * hidden state, 2h = 8,192 (with its int64 prompt token before 0.5.0, 8);
 * per sequence the last one's, 2h = 8,192, the sampling tensors (six
 * 16-bit values and an int32, 16) and the sampler's V terms, V 128,256;
 * once an arange(V) int64 row, 8V = 1,026,048:
 * - 0.2.6 (16-bit logits, sorted, probs, cumsum, output: 5 x 2; order and
 *   inverse 16; three masks 3): 29V = 3,719,424.  512 x 8,200 =
 *   4,198,400; 512 x (8,192 + 3,719,424 + 16) = 1,908,547,584:
 *   1,913,772,032.
 * - 0.3.0 (two masks, 28V = 3,591,168, and the k-th value, 2): 4,198,400
 *   + 512 x 3,599,378 = 1,842,881,536: 1,848,105,984.
 * - 0.5.0 (no prompt tokens): 4,194,304 + 1,842,881,536 + 1,026,048 =
 *   1,848,101,888.
 * - 0.5.5 (an fp32 copy, 5 x 4, beside the runner's 16-bit logits, 2;
 *   the k-th value 4): 40V = 5,130,240; 4,194,304 + 512 x 5,138,452 =
 *   2,630,887,424: 2,636,107,776.
 */
static void
test_forward_v0_samplers(void **state)
{
	const struct mf_model *m = model("meta-llama/Llama-3.1-8B");
	char formula[MF_FORMULA_MAX];

	(void)state;
	/* 0.2.5, fullest at the argsort (4 x 2 + 8 + 2 + 16 = 34V =
	 * 4,360,704), top-p and top-k (6), nothing once: 512 x 8,192 =
	 * 4,194,304 and 512 x 4,368,902 = 2,236,877,824: 2,241,072,128. */
	assert_int_equal(mf_forward_peak_sampler(m, 512, 512, MF_SAMPLER_V0_A16,
	                     formula),
	    INT64_C(2241072128));
	assert_string_equal(formula,
	    "max(t x (4d + max(4h + 8ad + 4kvd, 4h + 4ad + 10kvd, "
	    "6h + 4ad + 4kvd, 12h + 8, 8h + 6I)), "
	    "t x 2h + reqs x (2h + 34V + 6))");
	assert_int_equal(mf_forward_peak_sampler(m, 512, 512, MF_SAMPLER_V0_P16,
	                     formula),
	    INT64_C(1913772032));
	assert_string_equal(formula,
	    "max(t x (4d + max(4h + 8ad + 4kvd, 4h + 4ad + 10kvd, "
	    "6h + 4ad + 4kvd, 12h + 8, 8h + 6I)), "
	    "t x (2h + 8) + reqs x (2h + 29V + 16) + 8V)");
	assert_int_equal(mf_forward_peak_sampler(m, 512, 512, MF_SAMPLER_V0_16P,
	                     formula),
	    INT64_C(1848105984));
	assert_int_equal(mf_forward_peak_sampler(m, 512, 512, MF_SAMPLER_V0_16,
	                     formula),
	    INT64_C(1848101888));
	assert_int_equal(mf_forward_peak_sampler(m, 512, 512, MF_SAMPLER_V0_32,
	                     formula),
	    INT64_C(2636107776));
	assert_string_equal(formula,
	    "max(t x (4d + max(4h + 8ad + 4kvd, 4h + 4ad + 10kvd, "
	    "6h + 4ad + 4kvd, 12h + 8, 8h + 6I)), "
	    "t x 2h + reqs x (2h + 40V + 20) + 8V)");
	/* The current sampler's is mf_forward_peak's. */
	assert_int_equal(mf_forward_peak_sampler(m, 512, 512, MF_SAMPLER_V1,
	                     NULL),
	    mf_forward_peak(m, 512, 512, NULL));
}

/*
 * Mixtral 8x7B: Llama's attention (the three moments and the norm as
 * above), Ie = I = 14336, E 8, k 2, V 32000.  The experts, per token:
 *   8h (input, residual, normalised, output)               =  32,768
 *   2kh (the weighted down projections, k of them)          =  16,384
 *   6kIe (gate and up, act-and-mul, k of each)              = 172,032
 *   2E (router logits) + 26k (weights, indices, order)      =      68
 * 221,252, plus 4d = 512: 221,764 a token.  t 8192 in 256 sequences:
 * 8192 x 221,764 = 1,816,690,688, above the logits' 8192 x 2h + 256 x
 * (4h + 14V + 48) = 67,108,864 + 256 x 464,432 = 67,108,864 +
 * 118,894,592 = 186,003,456.
 */
static void
test_forward_mixtral(void **state)
{
	const struct mf_model *m = model("mistralai/Mixtral-8x7B-v0.1");
	char formula[MF_FORMULA_MAX];

	(void)state;
	assert_int_equal(mf_forward_peak(m, 8192, 256, formula),
	    INT64_C(1816690688));
	assert_string_equal(formula,
	    "max(t x (4d + max(4h + 8ad + 4kvd, 4h + 4ad + 10kvd, "
	    "6h + 4ad + 4kvd, 12h + 8, 8h + 2kh + 6kIe + 2E + 26k)), "
	    "t x 2h + reqs x (4h + 14V + 48))");
	/*
	 * 16 sequences of one token: 16 x 221,764 = 3,548,224 against
	 * 16 x 2h + 16 x 464,432 = 131,072 + 7,430,912 = 7,561,984.
	 */
	assert_int_equal(mf_forward_peak(m, 16, 16, formula), INT64_C(7561984));
}

/* Every shipped model, at batches where each phase wins. */
static void
test_forward_formulas_match_bytes(void **state)
{
	static const int64_t batch[][2] = { { 8192, 256 }, { 2048, 1 },
		{ 512, 512 }, { 1, 1 }, { 100000, 7 } };
	size_t n = mf_models_count(shipped);

	(void)state;
	assert_true(n >= 8);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < NELEM(batch); j++)
			formula_agrees(mf_models_at(shipped, i), batch[j][0],
			    batch[j][1]);
}

/* Gemma-2's (1 + w) in fp32 is 4h once, not a token's. */
static void
test_forward_gemma_constant(void **state)
{
	const struct mf_model *m = model("google/gemma-2-9b");
	int64_t one = mf_forward_peak(m, 1, 0, NULL);
	int64_t two = mf_forward_peak(m, 2, 0, NULL);

	(void)state;
	assert_int_equal(2 * one - two, 4 * m->hidden);
}

static void
test_forward_overflow(void **state)
{
	char formula[MF_FORMULA_MAX];

	(void)state;
	assert_int_equal(mf_forward_peak(&llama8b, INT64_MAX, 1, formula), -1);
	assert_true(strncmp(formula, "max(t x (", 9) == 0);
	assert_int_equal(mf_forward_peak(&llama8b, 1, INT64_MAX, NULL), -1);
	assert_int_equal(mf_forward_peak(&llama8b, -1, 1, NULL), -1);
	assert_int_equal(mf_forward_peak(&llama8b, 1, -1, NULL), -1);
	/* Every dimension at its cap: 8ad is 2^35 a token, times 2^34. */
	assert_int_equal(mf_forward_peak(&largest, INT64_C(1) << 34, 1, NULL),
	    -1);
	assert_true(mf_forward_peak(&largest, 1, 1, NULL) > 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forward_llama8b),
		cmocka_unit_test(test_forward_v0_samplers),
		cmocka_unit_test(test_forward_mixtral),
		cmocka_unit_test(test_forward_formulas_match_bytes),
		cmocka_unit_test(test_forward_gemma_constant),
		cmocka_unit_test(test_forward_overflow),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
