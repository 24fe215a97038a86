/*
 * test_estimate.c: the memory buckets of design section 5.
 *
 * The Llama 3.1 8B rows are the design's reference figures (GB = 10^9
 * bytes, to the digit shown), with the exact byte counts worked out by
 * hand beside them; the other rows use small models whose figures are
 * worked out in the comments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "estimate.h"
#include "models.h"

/*
 * h 3, L 1, a 1, kv 1, d 3, I 5, V 7, tied: embeddings 21; attention
 * 4*3*3 = 36, MLP 3*3*5 = 45, norms 6: layer 87; final norm 3.  P = 111,
 * odd, for the figures that round.
 */
static const struct mf_model micro = {
	.hidden = 3,
	.layers = 1,
	.heads = 1,
	.kv_heads = 1,
	.head_dim = 3,
	.intermediate = 5,
	.vocab = 7,
	.tied_embeddings = 1,
	.norms_per_layer = 2,
};

#define P8B INT64_C(8030261248)

/* Bytes in tenths of a GB, rounded half up: 16,060,522,496 -> 161. */
static int64_t
tenths(int64_t bytes)
{
	return (bytes + 50000000) / 100000000;
}

/* The Llama 8B workload of the reference post: s 4096, b 1. */
static struct mf_workload
ref_workload(void)
{
	struct mf_workload w;

	mf_workload_defaults(&w);
	w.seq_len = 4096;
	w.micro_batch = 1;
	return w;
}

/* Compute, and check what holds for every estimate. */
static struct mf_estimate
est(const struct mf_model *m, const struct mf_workload *w)
{
	struct mf_estimate e;
	int64_t sum = 0;
	int b;

	assert_int_equal(mf_est_compute(m, w, &e), MF_OK);
	for (b = 0; b < MF_B_COUNT; b++) {
		assert_true(e.bucket[b] >= 0);
		sum += e.bucket[b];
	}
	assert_int_equal(e.total, sum);
	assert_true(e.per_gpu <= e.total);
	return e;
}

static void
test_est_reference_full(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	e = est(&llama8b, &w);
	assert_int_equal(e.params, P8B);
	assert_int_equal(e.trainable, P8B);
	/* 2P = 16,060,522,496: 16.1 GB. */
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(16060522496));
	assert_int_equal(tenths(e.bucket[MF_B_WEIGHTS]), 161);
	/* 2P + 12P = 14P = 112,423,657,472: 112.4 GB. */
	assert_int_equal(e.bucket[MF_B_GRADIENTS], INT64_C(16060522496));
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], INT64_C(96363134976));
	assert_int_equal(tenths(e.bucket[MF_B_GRADIENTS] +
	                     e.bucket[MF_B_OPTIMIZER]),
	    1124);
	/* 32 * 4096 * 1 * 4096 * 34 = 18,253,611,008: 18.3 GB. */
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(18253611008));
	assert_int_equal(tenths(e.bucket[MF_B_ACTIVATIONS]), 183);
	/* 4096 * 1 * 128256 * 4 = 2,101,346,304: 2.1 GB. */
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(2101346304));
	assert_int_equal(tenths(e.bucket[MF_B_LOGITS]), 21);
	assert_int_equal(e.bucket[MF_B_ADAPTERS], 0);
	assert_int_equal(e.bucket[MF_B_KVCACHE], 0);
	assert_int_equal(e.bucket[MF_B_SHARDING], 0);
	/* 16.06 + 112.42 + 18.25 + 2.10: 148,839,137,280, 148.8 GB. */
	assert_int_equal(e.total, INT64_C(148839137280));
	assert_int_equal(tenths(e.total), 1488);
	assert_int_equal(e.per_gpu, e.total);
}

static void
test_est_reference_eager(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.attention = MF_EAGER;
	e = est(&llama8b, &w);
	/*
	 * L*s*b*(34h + 5as) = 32*4096*(34*4096 + 5*32*4096)
	 * = 32*4096*4096*194 = 104,152,956,928: 104.2 GB.
	 */
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(104152956928));
	assert_int_equal(tenths(e.bucket[MF_B_ACTIVATIONS]), 1042);
	/* Flash, like sdpa, drops the attention term. */
	w.attention = MF_FLASH;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(18253611008));
}

static void
test_est_reference_microbatch(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.micro_batch = 8;
	e = est(&llama8b, &w);
	/* 8 * 18,253,611,008 = 146,028,888,064: 146.0 GB. */
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(146028888064));
	assert_int_equal(tenths(e.bucket[MF_B_ACTIVATIONS]), 1460);
	/* Logits grow with b too: 8 * 2,101,346,304. */
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(16810770432));
}

static void
test_est_reference_checkpointing(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.checkpointing = 1;
	e = est(&llama8b, &w);
	/* 2*s*b*h*L = 2*4096*4096*32 = 1,073,741,824: 1.1 GB. */
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(1073741824));
	assert_int_equal(tenths(e.bucket[MF_B_ACTIVATIONS]), 11);
	/* 148,839,137,280 - 18,253,611,008 + 1,073,741,824. */
	assert_int_equal(e.total, INT64_C(131659268096));
	assert_int_equal(tenths(e.total), 1317);
	/* Checkpointing ignores the attention kind. */
	w.attention = MF_EAGER;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(1073741824));
}

static void
test_est_reference_adam8bit(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.checkpointing = 1;
	w.optimizer = MF_ADAM8BIT;
	e = est(&llama8b, &w);
	/* 6P = 48,181,567,488. */
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], INT64_C(48181567488));
	/* 131,659,268,096 - 6P = 83,477,700,608 (design 8): 83.5 GB. */
	assert_int_equal(e.total, INT64_C(83477700608));
	assert_int_equal(tenths(e.total), 835);
}

static void
test_est_reference_lora(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.checkpointing = 1;
	w.method = MF_LORA;
	w.lora_rank = 16;
	w.lora_targets = MF_LORA_ALL_LINEAR;
	e = est(&llama8b, &w);
	/* T = 41,943,040 (see test_model.c). */
	assert_int_equal(e.trainable, 41943040);
	/* 16T = 671,088,640: 0.7 GB. */
	assert_int_equal(e.bucket[MF_B_ADAPTERS], 671088640);
	assert_int_equal(tenths(e.bucket[MF_B_ADAPTERS]), 7);
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(16060522496));
	assert_int_equal(e.bucket[MF_B_GRADIENTS], 0);
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], 0);
	/*
	 * 16,060,522,496 + 671,088,640 + 1,073,741,824 + 2,101,346,304
	 * = 19,906,699,264: 19.9 GB.
	 */
	assert_int_equal(e.total, INT64_C(19906699264));
	assert_int_equal(tenths(e.total), 199);
}

static void
test_est_reference_qlora(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.checkpointing = 1;
	w.method = MF_QLORA;
	e = est(&llama8b, &w);
	/* P/2 = 4,015,130,624. */
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(4015130624));
	assert_int_equal(e.trainable, 41943040);
	/*
	 * 4,015,130,624 + 671,088,640 + 1,073,741,824 + 2,101,346,304
	 * = 7,861,307,392: 7.9 GB.
	 */
	assert_int_equal(e.total, INT64_C(7861307392));
	assert_int_equal(tenths(e.total), 79);
}

static void
test_est_reference_fsdp(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.checkpointing = 1;
	w.shard_gpus = 8;
	e = est(&llama8b, &w);
	/* 2 layers of 218,112,000 parameters at 2 bytes: 872,448,000. */
	assert_int_equal(e.bucket[MF_B_SHARDING], 872448000);
	/*
	 * Per GPU: weights 2P/8 = 2,007,565,312, gradients the same,
	 * optimizer 12P/8 = 12,045,391,872; activations 1,073,741,824;
	 * logits 2,101,346,304: 19,235,610,624 before the sharding
	 * buffers, 19.2 GB.
	 */
	assert_int_equal(e.per_gpu - e.bucket[MF_B_SHARDING],
	    INT64_C(19235610624));
	assert_int_equal(tenths(e.per_gpu - e.bucket[MF_B_SHARDING]), 192);
	assert_int_equal(e.per_gpu, INT64_C(20108058624));
	/* The whole job: 131,659,268,096 + 872,448,000. */
	assert_int_equal(e.total, INT64_C(132531716096));
	/* Buckets stay whole-job figures. */
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(16060522496));
}

static void
test_est_reference_inference(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	/* 2 * 32 * 8 * 128 * 2 = 131,072 bytes per token: 0.13 MB. */
	assert_int_equal(mf_model_kv_bytes_per_token(&llama8b, 2), 131072);
	assert_int_equal((131072 + 5000) / 10000, 13);
	mf_workload_defaults(&w);
	w.kind = MF_INFERENCE;
	w.concurrency = 32;
	w.context_len = 8192;
	e = est(&llama8b, &w);
	/* 131,072 * 32 * 8,192 = 34,359,738,368: 34.4 GB. */
	assert_int_equal(e.bucket[MF_B_KVCACHE], INT64_C(34359738368));
	assert_int_equal(tenths(e.bucket[MF_B_KVCACHE]), 344);
	/* Weights 2P; nothing else. */
	assert_int_equal(e.total, INT64_C(16060522496) + INT64_C(34359738368));
	assert_int_equal(e.trainable, 0);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], 0);
	assert_int_equal(e.bucket[MF_B_LOGITS], 0);
	assert_int_equal(e.bucket[MF_B_GRADIENTS], 0);
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], 0);
	/* fp8 halves the cache: 17,179,869,184; fp16 is bf16's size. */
	w.kv_dtype = MF_KV_FP8;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_KVCACHE],
	    INT64_C(17179869184));
	w.kv_dtype = MF_KV_FP16;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_KVCACHE],
	    INT64_C(34359738368));
	/* fp32 weights: 4P = 32,121,044,992. */
	w.precision = MF_FP32;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_WEIGHTS],
	    INT64_C(32121044992));
}

static void
test_est_fp32(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	mf_workload_defaults(&w);
	w.precision = MF_FP32;
	w.attention = MF_EAGER;
	w.seq_len = 8;
	w.micro_batch = 2;
	e = est(&tiny, &w);
	/* P = 138,048: weights and gradients 4P = 552,192; AdamW 8P. */
	assert_int_equal(e.bucket[MF_B_WEIGHTS], 552192);
	assert_int_equal(e.bucket[MF_B_GRADIENTS], 552192);
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], 1104384);
	/*
	 * L*s*b*(34h + 5as) = 2*8*2*(2,176 + 160) = 74,752, doubled for
	 * fp32: 149,504.
	 */
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], 149504);
	/* s*b*V*4 = 8*2*1000*4 = 64,000, whatever the precision. */
	assert_int_equal(e.bucket[MF_B_LOGITS], 64000);
	/* 552,192*2 + 1,104,384 + 149,504 + 64,000. */
	assert_int_equal(e.total, 2422272);
	/* Checkpointing: 2*s*b*h*L = 2*8*2*64*2 = 4,096, doubled: 8,192. */
	w.checkpointing = 1;
	assert_int_equal(est(&tiny, &w).bucket[MF_B_ACTIVATIONS], 8192);
}

static void
test_est_optimizers(void **state)
{
	struct mf_workload w;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 1;
	/* Bytes per parameter, P = 138,048. */
	w.optimizer = MF_ADAM8BIT;
	assert_int_equal(est(&tiny, &w).bucket[MF_B_OPTIMIZER], 6 * 138048);
	w.optimizer = MF_SGD;
	assert_int_equal(est(&tiny, &w).bucket[MF_B_OPTIMIZER], 8 * 138048);
	w.precision = MF_FP32;
	assert_int_equal(est(&tiny, &w).bucket[MF_B_OPTIMIZER], 4 * 138048);
	w.optimizer = MF_ADAM8BIT;
	assert_int_equal(est(&tiny, &w).bucket[MF_B_OPTIMIZER], 2 * 138048);
	/* fp16 is bf16's size. */
	w.precision = MF_FP16;
	w.optimizer = MF_ADAMW;
	assert_int_equal(est(&tiny, &w).bucket[MF_B_WEIGHTS], 2 * 138048);
	assert_int_equal(est(&tiny, &w).bucket[MF_B_OPTIMIZER], 12 * 138048);
}

static void
test_est_lora_variants(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 1;
	w.method = MF_LORA;
	w.lora_rank = 4;
	/*
	 * r 4 on tiny: q 64+64, k 64+32, v 64+32, o 64+64 = 448; gate, up,
	 * down 3*(64+128) = 576; 1,024 per layer, 2 layers, times 4:
	 * T = 8,192.
	 */
	e = est(&tiny, &w);
	assert_int_equal(e.trainable, 8192);
	assert_int_equal(e.bucket[MF_B_ADAPTERS], 16 * 8192);
	w.optimizer = MF_ADAM8BIT;
	assert_int_equal(est(&tiny, &w).bucket[MF_B_ADAPTERS], 10 * 8192);
	/* SGD: fp32 weight, gradient and momentum. */
	w.optimizer = MF_SGD;
	assert_int_equal(est(&tiny, &w).bucket[MF_B_ADAPTERS], 12 * 8192);
	/* Attention only: 448 * 2 * 4 = 3,584. */
	w.optimizer = MF_ADAMW;
	w.lora_targets = MF_LORA_ATTENTION;
	assert_int_equal(est(&tiny, &w).trainable, 3584);
	/* LoRA on fp32 weights: 4P. */
	w.precision = MF_FP32;
	assert_int_equal(est(&tiny, &w).bucket[MF_B_WEIGHTS], 4 * 138048);
}

static void
test_est_rounding(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 2;
	/* QLoRA holds P/2 rounded up: 111 / 2 -> 56, in any precision. */
	w.method = MF_QLORA;
	assert_int_equal(est(&micro, &w).bucket[MF_B_WEIGHTS], 56);
	w.precision = MF_FP32;
	assert_int_equal(est(&micro, &w).bucket[MF_B_WEIGHTS], 56);

	/*
	 * Full, bf16, AdamW over 4 GPUs: weights 222, gradients 222,
	 * optimizer 1,332; sharding buffers 4 * 87 = 348; activations
	 * 1*2*1*3*34 = 204; logits 2*1*7*4 = 56.  Total 2,384.  Per GPU
	 * 222/4 -> 56 (55.5 up), 56, 1,332/4 = 333, then 348 + 204 + 56:
	 * 1,053.
	 */
	mf_workload_defaults(&w);
	w.seq_len = 2;
	w.shard_gpus = 4;
	e = est(&micro, &w);
	assert_int_equal(e.bucket[MF_B_SHARDING], 348);
	assert_int_equal(e.total, 2384);
	assert_int_equal(e.per_gpu, 1053);
}

/*
 * The need on N shards of one estimate: the micro model's full bf16 AdamW
 * job over 4 GPUs (the buckets of test_est_rounding: weights and gradients
 * 222, optimizer 1,332, the rest 348 + 204 + 56 = 608):
 *   N = 1: 222 + 222 + 1,332 + 608 = 2,384, the total
 *   N = 3: 74 + 74 + 444 + 608 = 1,200
 *   N = 4: 56 + 56 + 333 + 608 = 1,053, the estimate's own per_gpu
 *   N = 5: 45 + 45 + 267 (266.4 up) + 608 = 965
 *   unbounded: 1 + 1 + 1 + 608 = 611
 */
static void
test_est_per_gpu(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 2;
	w.shard_gpus = 4;
	e = est(&micro, &w);
	assert_int_equal(mf_est_per_gpu(&e, 1), 2384);
	assert_int_equal(mf_est_per_gpu(&e, 3), 1200);
	assert_int_equal(mf_est_per_gpu(&e, 4), 1053);
	assert_int_equal(mf_est_per_gpu(&e, 4), e.per_gpu);
	assert_int_equal(mf_est_per_gpu(&e, 5), 965);
	assert_int_equal(mf_est_per_gpu(&e, INT64_MAX), 611);
}

static void
test_est_sharding_only_full(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	/* One GPU: no buffers, nothing divided. */
	w.shard_gpus = 1;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_SHARDING], 0);
	assert_int_equal(e.per_gpu, e.total);
	/* FSDP is for full training: LoRA and inference ignore it. */
	w.shard_gpus = 8;
	w.method = MF_LORA;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_SHARDING], 0);
	assert_int_equal(e.per_gpu, e.total);
	w.kind = MF_INFERENCE;
	w.method = MF_FULL;
	w.context_len = 16;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_SHARDING], 0);
	assert_int_equal(e.per_gpu, e.total);
}

static void
test_est_head_dim_inference(void **state)
{
	struct mf_model m = given_head_dim;
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	mf_workload_defaults(&w);
	w.kind = MF_INFERENCE;
	w.concurrency = 2;
	w.context_len = 10;
	e = est(&m, &w);
	/* 2 * 3 * 2 * 32 (head_dim, not 96/4) * 2 = 768 per token; x 20. */
	assert_int_equal(e.bucket[MF_B_KVCACHE], 15360);
	/* P = 428,448 (see test_model.c), 2 bytes each. */
	assert_int_equal(e.bucket[MF_B_WEIGHTS], 856896);
}

static void
test_est_overflow(void **state)
{
	struct mf_model big = largest;
	struct mf_workload w = ref_workload();
	struct mf_estimate e, before;

	(void)state;
	memset(&before, 0x5a, sizeof(before));
	e = before;
	/* Parameters alone pass 2^63 (see test_model.c). */
	assert_int_equal(mf_est_compute(&big, &w, &e), MF_ERANGE);
	assert_memory_equal(&e, &before, sizeof(e));
	/* s = 2^42: L*s*h*34 = 2^5 * 2^42 * 2^12 * 34 passes 2^63. */
	w.seq_len = INT64_C(1) << 42;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_ERANGE);
	assert_memory_equal(&e, &before, sizeof(e));
	/* Eager's L*s*b*5*a*s = 2^5 * 2^30 * 5 * 2^5 * 2^30 passes 2^63. */
	w.seq_len = INT64_C(1) << 30;
	w.attention = MF_EAGER;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_ERANGE);
	/* Inference: 131,072 * 2^30 * 2^30 passes 2^63. */
	mf_workload_defaults(&w);
	w.kind = MF_INFERENCE;
	w.concurrency = INT64_C(1) << 30;
	w.context_len = INT64_C(1) << 30;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_ERANGE);
	/* LoRA rank 2^40: T = 2^40 * 1,310,720 * 32 passes 2^63. */
	w = ref_workload();
	w.method = MF_LORA;
	w.lora_rank = INT64_C(1) << 40;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_ERANGE);
	assert_memory_equal(&e, &before, sizeof(e));
}

static void
test_est_bad_workload(void **state)
{
	struct mf_workload good = ref_workload(), w;
	struct mf_estimate e, before;

	(void)state;
	memset(&before, 0x5a, sizeof(before));
	e = before;
	w = good;
	w.seq_len = -1;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w = good;
	w.micro_batch = -1;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w = good;
	w.shard_gpus = 0;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w = good;
	w.lora_rank = -16;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w = good;
	w.concurrency = -1;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w = good;
	w.kind = (enum mf_kind)7;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w = good;
	w.kv_dtype = (enum mf_kv_dtype)3;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	assert_memory_equal(&e, &before, sizeof(e));
}

static void
test_workload_defaults(void **state)
{
	struct mf_workload w;

	(void)state;
	memset(&w, 0x5a, sizeof(w));
	mf_workload_defaults(&w);
	/* Design 3. */
	assert_int_equal(w.kind, MF_TRAINING);
	assert_int_equal(w.method, MF_FULL);
	assert_int_equal(w.precision, MF_BF16);
	assert_int_equal(w.optimizer, MF_ADAMW);
	assert_int_equal(w.attention, MF_SDPA);
	assert_int_equal(w.checkpointing, 0);
	assert_int_equal(w.micro_batch, 1);
	assert_int_equal(w.lora_rank, 16);
	assert_int_equal(w.lora_targets, MF_LORA_ALL_LINEAR);
	assert_int_equal(w.shard_gpus, 1);
	assert_int_equal(w.kv_dtype, MF_KV_BF16);
}

static void
test_bucket_names(void **state)
{
	(void)state;
	assert_string_equal(mf_bucket_name(MF_B_WEIGHTS), "weights");
	assert_string_equal(mf_bucket_name(MF_B_GRADIENTS), "gradients");
	assert_string_equal(mf_bucket_name(MF_B_OPTIMIZER), "optimizer");
	assert_string_equal(mf_bucket_name(MF_B_ADAPTERS), "adapters");
	assert_string_equal(mf_bucket_name(MF_B_ACTIVATIONS), "activations");
	assert_string_equal(mf_bucket_name(MF_B_LOGITS), "logits");
	assert_string_equal(mf_bucket_name(MF_B_KVCACHE), "kvCache");
	assert_string_equal(mf_bucket_name(MF_B_SHARDING), "shardingBuffers");
	assert_null(mf_bucket_name(MF_B_COUNT));
	assert_null(mf_bucket_name((enum mf_bucket) - 1));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_est_reference_full),
		cmocka_unit_test(test_est_reference_eager),
		cmocka_unit_test(test_est_reference_microbatch),
		cmocka_unit_test(test_est_reference_checkpointing),
		cmocka_unit_test(test_est_reference_adam8bit),
		cmocka_unit_test(test_est_reference_lora),
		cmocka_unit_test(test_est_reference_qlora),
		cmocka_unit_test(test_est_reference_fsdp),
		cmocka_unit_test(test_est_reference_inference),
		cmocka_unit_test(test_est_fp32),
		cmocka_unit_test(test_est_optimizers),
		cmocka_unit_test(test_est_lora_variants),
		cmocka_unit_test(test_est_rounding),
		cmocka_unit_test(test_est_per_gpu),
		cmocka_unit_test(test_est_sharding_only_full),
		cmocka_unit_test(test_est_head_dim_inference),
		cmocka_unit_test(test_est_overflow),
		cmocka_unit_test(test_est_bad_workload),
		cmocka_unit_test(test_workload_defaults),
		cmocka_unit_test(test_bucket_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
