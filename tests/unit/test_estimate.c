/*
 * test_estimate.c: the memory buckets of design section 5 (the estimator
 * post) and of design 13 (the estimator pytorch).
 *
 * The Llama 3.1 8B rows are the design's reference figures (GB = 10^9
 * bytes, to the digit shown), with the exact byte counts worked out by
 * hand beside them; the other rows use small models whose figures are
 * worked out in the comments.  Every test of the post's arithmetic runs
 * the estimator post (post_defaults); the pytorch tests follow them.
 */
#include <ctype.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "estimate/estimate.h"
#include "formula.h"
#include "base/internal.h"
#include "manifest/manifest.h"
#include "models.h"

/* A refused estimate names spec.workload and its cause by code: an
 * overflow only for MF_ERANGE. */
static void
test_est_error(void **state)
{
	struct mf_error err;

	(void)state;
	assert_int_equal(mf_est_error(MF_ERANGE, &err), MF_ERANGE);
	assert_string_equal(err.field, "spec.workload");
	assert_string_equal(err.text,
	    "the memory figures of this job overflow 63 bits");
	assert_int_equal(mf_est_error(MF_EINVAL, &err), MF_EINVAL);
	assert_string_equal(err.field, "spec.workload");
	assert_string_equal(err.text,
	    "holds a figure outside its field's bounds");
	assert_int_equal(mf_est_error(MF_ENOMEM, &err), MF_ENOMEM);
	assert_null(strstr(err.text, "overflow"));
}

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
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Design 3's defaults with the estimator post, whose figures these are. */
static void
post_defaults(struct mf_workload *w)
{
	mf_workload_defaults(w);
	w->estimator = MF_EST_POST;
}

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

	post_defaults(&w);
	w.seq_len = 4096;
	w.micro_batch = 1;
	return w;
}

/* Design 3's defaults, serving seqs sequences of ctx tokens. */
static struct mf_workload
serving(int64_t seqs, int64_t ctx)
{
	struct mf_workload w;

	mf_workload_defaults(&w);
	w.kind = MF_INFERENCE;
	w.concurrency = seqs;
	w.context_len = ctx;
	return w;
}

/* Compute, and check what holds for every estimate. */
/*
 * mf_est_figures gives mf_est_compute's figures, e's, and writes no
 * formula: those of f, filled with 'x' first, are still 'x';
 * mf_est_copy_figures copies the figures alone, which
 * mf_est_same_figures compares.
 */
static void
same_figures(const struct mf_model *m, const struct mf_workload *w,
    const struct mf_estimate *e)
{
	static struct mf_estimate f, g;

	memset(f.formula, 'x', sizeof(f.formula));
	memset(f.gpu_formula, 'x', sizeof(f.gpu_formula));
	assert_int_equal(mf_est_figures(m, w, &f), MF_OK);
	assert_int_equal(f.figures_only, 1);
	assert_int_equal(e->figures_only, 0);
	assert_int_equal(f.params, e->params);
	assert_int_equal(f.trainable, e->trainable);
	assert_memory_equal(f.bucket, e->bucket, sizeof(e->bucket));
	assert_memory_equal(f.stage, e->stage, sizeof(e->stage));
	assert_int_equal(f.total, e->total);
	assert_int_equal(f.shards, e->shards);
	assert_int_equal(f.per_gpu, e->per_gpu);
	assert_int_equal(f.kv_token, e->kv_token);
	assert_int_equal(f.kv_token_job, e->kv_token_job);
	assert_int_equal(f.block, e->block);
	assert_int_equal(f.seq_tokens, e->seq_tokens);
	assert_int_equal(f.quant.format, e->quant.format);
	assert_ptr_equal(f.quant_source, e->quant_source);
	for (size_t i = 0; i < sizeof(f.formula); i++) {
		assert_int_equal(((const char *)f.formula)[i], 'x');
		assert_int_equal(((const char *)f.gpu_formula)[i], 'x');
	}
	/* A copy of e's figures is an estimate of figures alone. */
	mf_est_copy_figures(&f, e);
	assert_int_equal(f.figures_only, 1);
	assert_memory_equal(f.stage, e->stage, sizeof(e->stage));
	assert_int_equal(f.per_gpu, e->per_gpu);
	assert_int_equal(f.formula[0][0], 'x');
	assert_int_equal(mf_est_figures(m, w, &g), MF_OK);
	assert_true(mf_est_same_figures(&f, &g));
	g.per_gpu++;
	assert_false(mf_est_same_figures(&f, &g));
}

static struct mf_estimate
est(const struct mf_model *m, const struct mf_workload *w)
{
	struct mf_estimate e;
	int64_t sum = 0;
	int b;

	assert_int_equal(mf_est_compute(m, w, &e), MF_OK);
	same_figures(m, w, &e);
	for (b = 0; b < MF_B_COUNT; b++) {
		assert_true(e.bucket[b] >= 0);
		/* A paged optimizer's state is not counted (design 22). */
		if (b != MF_B_PAGED)
			sum += e.bucket[b];
	}
	assert_int_equal(e.total, sum);
	/* Buckets are one micro-batch of the whole job; a pipeline's first
	 * stage keeps pipeline micro-batches in flight, which can be more. */
	assert_true(e.per_gpu <= e.total || w->pipeline > 1);
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
	post_defaults(&w);
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

/*
 * Serving terms (design 14) on Llama 3.1 8B, worked by hand.  Linear
 * weights Plin = 32 x (2 x 4096 x (4096 + 1024) + 3 x 4096 x 14336) =
 * 6,979,321,856; the rest, 16-bit always, P - Plin = 1,050,939,392 (the
 * embeddings and head, 2 x 128256 x 4096, and the norms, 65 x 4096).
 */
static void
test_est_serving(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	assert_int_equal(mf_model_linear_params(&llama8b), INT64_C(6979321856));
	w = serving(2, 8200);
	/*
	 * int8 and fp8: a byte a linear weight, 6,979,321,856 + 2 x
	 * 1,050,939,392 = 9,081,200,640, and their fp32 scales: int8 one an
	 * output row, (4,096 + 1,024 + 1,024 + 4,096 + 14,336 + 14,336 +
	 * 4,096) x 32 = 1,376,256 rows, 5,505,024 bytes; fp8 one a tensor, 7
	 * x 32 = 224 tensors, 896 bytes.
	 */
	w.weights_dtype = MF_WD_INT8;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_WEIGHTS],
	    INT64_C(9081200640) + INT64_C(5505024));
	w.weights_dtype = MF_WD_FP8;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_WEIGHTS],
	    INT64_C(9081200640) + 896);
	/* int4: Plin / 2 = 3,489,660,928, and an fp16 scale per 128 weights,
	 * 54,525,952 x 2 = 109,051,904: 5,700,591,616 with the rest. */
	w.weights_dtype = MF_WD_INT4;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_WEIGHTS],
	    INT64_C(5700591616));
	/* Groups of 64: 109,051,904 scales, 218,103,808 bytes. */
	w.group_size = 64;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_WEIGHTS],
	    INT64_C(5809643520));
	/*
	 * Paged KV cache: 8,200 tokens in blocks of 16 take 513 blocks,
	 * 8,208 tokens: 131,072 x 2 x 8,208 = 2,151,677,952 (unpaged 131,072
	 * x 2 x 8,200 = 2,149,580,800); the CUDA graphs' 369Mi default (a
	 * log's 0.36 GiB, estimate.h), and the 164Mi outside PyTorch at TP 1.
	 */
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_KVCACHE], INT64_C(2149580800));
	w.server = MF_SERVER_VLLM;
	e = est(&llama8b, &w);
	assert_int_equal(e.seq_tokens, 8208);
	assert_int_equal(e.bucket[MF_B_KVCACHE], INT64_C(2151677952));
	assert_int_equal(e.bucket[MF_B_GRAPHS], INT64_C(369) << 20);
	assert_int_equal(e.bucket[MF_B_NONTORCH], INT64_C(164) << 20);
	assert_true(e.bucket[MF_B_ACTIVATIONS] > 0);
	w.block_size = 7; /* 1,172 blocks of 7: 8,204 tokens */
	assert_int_equal(est(&llama8b, &w).seq_tokens, 8204);
}

/*
 * maxConcurrency and maxContextLength on a card of 43.2e9 usable bytes
 * (an L40S at 10% headroom): Llama 3.1 8B in bf16 leaves 43.2e9 -
 * 16,060,522,496 = 27,139,477,504 bytes of KV cache, 131,072 a token.
 * Sequences of 8,192 tokens: 27,139,477,504 / 1,073,741,824 = 25.3 ->
 * 25.  Tokens for each of 32 sequences: / 4,194,304 = 6,470.6 -> 6,470;
 * in whole blocks of 16, 404 blocks: 6,464.
 */
static void
test_est_max_served(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	w = serving(32, 8192);
	e = est(&llama8b, &w);
	assert_int_equal(mf_est_max_seqs(&e, INT64_C(43200000000)), 25);
	assert_int_equal(e.block, 1);
	assert_int_equal(mf_est_max_context(&e, INT64_C(43200000000), 32),
	    6470);
	/* A card that holds no more than the weights serves nothing. */
	assert_int_equal(mf_est_max_seqs(&e, INT64_C(16060522496)), 0);
	assert_int_equal(mf_est_max_context(&e, INT64_C(16060522496), 32), 0);
	/*
	 * Paged in blocks of 16, as vllm's cache is; only the block changes,
	 * so that the bytes free for the cache stay those above.
	 */
	w.server = MF_SERVER_VLLM;
	assert_int_equal(est(&llama8b, &w).block, 16);
	e.block = 16;
	assert_int_equal(mf_est_max_context(&e, INT64_C(43200000000), 32),
	    6464);
}

/*
 * vLLM under tensor parallel 4, Llama 3.1 70B (h 8192, L 80, a 64, kv 8,
 * I 28672, V 128256, a multiple of 64 already): a GPU holds 16 heads, 2
 * KV heads and 7,168 of the MLP's width, a layer 8192 x 2048 + 2 x 8192 x
 * 256 + 2048 x 8192 + 3 x 8192 x 7168 + 2 x 8192 = 213,925,888, x 80 =
 * 17,114,071,040; and a quarter of the vocabulary of both the embeddings
 * and the head (VocabParallelEmbedding, ParallelLMHead): 2 x 32,064 x
 * 8192 = 525,336,576, with the final norm 8,192.  17,639,415,808
 * parameters, 35,278,831,616 bytes (32.86 GiB; vLLM logs "Model loading
 * took 32.89 GiB" and so on for this model at TP 4).  KV: 2 x 80 x 2 x
 * 128 x 2 = 81,920 a token on a GPU, 327,680 on the job's four.  Outside
 * PyTorch: 164Mi + 1833Mi = 2,094,006,272 a GPU.
 */
static void
test_est_vllm_tensor(void **state)
{
	struct mf_model m = llama8b;
	struct mf_workload w = serving(1, 1024);
	struct mf_estimate e;

	(void)state;
	m.hidden = 8192;
	m.layers = 80;
	m.heads = 64;
	m.intermediate = 28672;
	assert_int_equal(mf_model_params(&m), INT64_C(70553706496));
	w.server = MF_SERVER_VLLM;
	w.tensor = 4;
	e = est(&m, &w);
	assert_int_equal(e.stage[MF_B_WEIGHTS], INT64_C(35278831616));
	assert_int_equal(e.kv_token, 81920);
	assert_int_equal(e.kv_token_job, 327680);
	assert_int_equal(e.stage[MF_B_NONTORCH], INT64_C(2094006272));
	assert_int_equal(e.bucket[MF_B_NONTORCH], 4 * INT64_C(2094006272));
	/* Served plainly, every GPU holds the whole vocabulary: three
	 * quarters more of each matrix, 2 x 3 x 262,668,288 parameters at 2
	 * bytes. */
	w.server = MF_SERVER_NONE;
	e = est(&m, &w);
	assert_int_equal(e.stage[MF_B_WEIGHTS],
	    INT64_C(35278831616) + 2 * 2 * 3 * INT64_C(262668288));
}

/*
 * serverVersion (design 22): Llama 3.1 70B at TP 4 (test_est_vllm_tensor's
 * shapes), 16 sequences of 4,096 tokens, each release family's
 * accounting.  The V0 engine's profile run (0.2.5 to 0.7.x): 256
 * sequences of max(4096, 2048) = 4,096 tokens; the logits phase is the
 * peak (forward.c's logits_v0, V 128,256): every token's hidden state,
 * 2h = 16,384, with its int64 prompt token before 0.5.0; per sequence the
 * last token's (16,384), the sampling tensors (16) and the sampler's V
 * terms; once an arange(V) row, 8V = 1,026,048:
 * - 0.2.5: fullest at the argsort, 34V = 4,360,704, with top-p and top-k
 *   (6), and no sampling tensors, prompt tokens or arange row: 4096 x
 *   16,384 = 67,108,864 and 256 x 4,377,094 = 1,120,536,064,
 *   1,187,644,928; and every all-reduce's input kept, 2 x 80 x 4096 x
 *   8192 x 2 = 10,737,418,240.
 * - 0.2.6: 4096 x 16,392 = 67,141,632; 29V = 3,719,424, 256 x 3,735,824
 *   = 956,370,944: 1,024,538,624.
 * - 0.3.0 to 0.4.x: 28V = 3,591,168 and the k-th value (2), 256 x
 *   3,607,570 = 923,537,920: 991,705,600.
 * - 0.5.0 to 0.5.4: without the prompt tokens, 4096 x 16,384 =
 *   67,108,864: 991,672,832.
 * - 0.5.5 to 0.7.x: 40V = 5,130,240 and the k-th value (4), 256 x
 *   5,146,644 = 1,317,540,864: 1,385,675,776.
 * The layer's peak on a GPU's share (h 8192, ad 2048, kvd 256, I 7168):
 * the MLP's 8h + 6I = 108,544 with 4d = 512, x 4096 = 446,693,376, below.
 * Outside PyTorch a GPU holds 164Mi + 1833Mi = 2,094,006,272, and to
 * 0.3.0 the CUDA context's 620Mi more: 2,744,123,392.  CUDA graphs are
 * taken from the budget from 0.21.0 only.
 */
static void
test_est_vllm_release(void **state)
{
	struct mf_model m = llama8b;
	struct mf_workload w = serving(16, 4096), now;
	struct mf_estimate e, cur;

	(void)state;
	m.hidden = 8192;
	m.layers = 80;
	m.heads = 64;
	m.intermediate = 28672;
	w.server = MF_SERVER_VLLM;
	w.tensor = 4;
	w.graph_reserve = INT64_C(369) << 20;
	w.server_version = MF_VLLM_VERSION(0, 2, 5);
	e = est(&m, &w);
	assert_int_equal(e.stage[MF_B_ACTIVATIONS],
	    INT64_C(1187644928) + INT64_C(10737418240));
	assert_int_equal(e.stage[MF_B_NONTORCH], INT64_C(2744123392));
	assert_int_equal(e.stage[MF_B_GRAPHS], 0);
	w.server_version = MF_VLLM_VERSION(0, 2, 6);
	e = est(&m, &w);
	assert_int_equal(e.stage[MF_B_ACTIVATIONS], INT64_C(1024538624));
	assert_int_equal(e.stage[MF_B_NONTORCH], INT64_C(2744123392));
	assert_int_equal(e.stage[MF_B_GRAPHS], 0);
	w.server_version = MF_VLLM_VERSION(0, 3, 0);
	e = est(&m, &w);
	assert_int_equal(e.stage[MF_B_ACTIVATIONS], INT64_C(991705600));
	assert_int_equal(e.stage[MF_B_NONTORCH], INT64_C(2744123392));
	/* 0.3.1: the context no longer counted. */
	w.server_version = MF_VLLM_VERSION(0, 3, 1);
	e = est(&m, &w);
	assert_int_equal(e.stage[MF_B_ACTIVATIONS], INT64_C(991705600));
	assert_int_equal(e.stage[MF_B_NONTORCH], INT64_C(2094006272));
	w.server_version = MF_VLLM_VERSION(0, 5, 4);
	e = est(&m, &w);
	assert_int_equal(e.stage[MF_B_ACTIVATIONS], INT64_C(991672832));
	assert_int_equal(e.stage[MF_B_NONTORCH], INT64_C(2094006272));
	w.server_version = MF_VLLM_VERSION(0, 7, 3);
	e = est(&m, &w);
	assert_int_equal(e.stage[MF_B_ACTIVATIONS], INT64_C(1385675776));
	assert_int_equal(e.stage[MF_B_NONTORCH], INT64_C(2094006272));
	assert_int_equal(e.stage[MF_B_GRAPHS], 0);
	/* From 0.8.0 the current defaults and sampler; the graphs from
	 * 0.21.0, where the accounting is the current one. */
	now = w;
	now.server_version = 0;
	cur = est(&m, &now);
	w.server_version = MF_VLLM_VERSION(0, 8, 0);
	e = est(&m, &w);
	assert_int_equal(e.stage[MF_B_ACTIVATIONS],
	    cur.stage[MF_B_ACTIVATIONS]);
	assert_int_equal(e.stage[MF_B_GRAPHS], 0);
	assert_int_equal(cur.stage[MF_B_GRAPHS], INT64_C(369) << 20);
	w.server_version = MF_VLLM_VERSION(0, 21, 0);
	e = est(&m, &w);
	assert_memory_equal(e.stage, cur.stage, sizeof(e.stage));
	assert_string_equal(e.formula[MF_B_NONTORCH],
	    cur.formula[MF_B_NONTORCH]);
}

/*
 * The V0 engine's profile run (serverVersion before 0.8.0) whatever the
 * card: 256 sequences of max(contextLength, 2048) tokens; from 0.5.3 past
 * 32,768 tokens chunked prefill's 512, 2048 from 0.6.5.  A setting the
 * job gives stays.
 */
static void
test_est_vllm_release_defaults(void **state)
{
	struct mf_workload w = serving(1, 1024), r;

	(void)state;
	w.server = MF_SERVER_VLLM;
	w.server_version = MF_VLLM_VERSION(0, 4, 0);
	for (int tier = 0; tier < MF_VLLM_TIERS; tier++) {
		r = w;
		mf_vllm_defaults(&r, tier);
		assert_int_equal(r.batched_tokens, 2048);
		assert_int_equal(r.max_num_seqs, 256);
	}
	w.context_len = 65536;
	r = w;
	mf_vllm_defaults(&r, 0);
	assert_int_equal(r.batched_tokens, 65536);
	w.server_version = MF_VLLM_VERSION(0, 5, 3);
	r = w;
	mf_vllm_defaults(&r, 0);
	assert_int_equal(r.batched_tokens, 512);
	w.server_version = MF_VLLM_VERSION(0, 6, 5);
	r = w;
	mf_vllm_defaults(&r, 0);
	assert_int_equal(r.batched_tokens, 2048);
	w.context_len = 32768;
	r = w;
	mf_vllm_defaults(&r, 0);
	assert_int_equal(r.batched_tokens, 32768);
	w.batched_tokens = 1000;
	w.max_num_seqs = 8;
	r = w;
	mf_vllm_defaults(&r, 0);
	assert_int_equal(r.batched_tokens, 1000);
	assert_int_equal(r.max_num_seqs, 8);
	/* From 0.8.0, the card's tier: 8192 and 1024 from 70 GiB. */
	w = serving(1, 1024);
	w.server = MF_SERVER_VLLM;
	w.server_version = MF_VLLM_VERSION(0, 8, 0);
	mf_vllm_defaults(&w, mf_vllm_tier(INT64_C(80) << 30, 0));
	assert_int_equal(w.batched_tokens, 8192);
	assert_int_equal(w.max_num_seqs, 1024);
	assert_true(mf_vllm_release_known(MF_VLLM_VERSION(0, 2, 5)));
	assert_false(mf_vllm_release_known(MF_VLLM_VERSION(0, 2, 4)));
	assert_true(mf_vllm_release_known(0));
}

/*
 * What one GPU holds under tensor and pipeline parallelism (design 15),
 * Llama 3.1 8B serving 32 sequences of 8,192 tokens.
 * - Tensor 4: a GPU holds 8 of 32 heads, 2 of 8 KV heads and 3,584 of
 *   the MLP's 14,336: a layer is 2 x 4096 x 1024 + 2 x 4096 x 256 + 3 x
 *   4096 x 3584 + 2 x 4096 = 54,534,144, x 32 = 1,745,092,608, with the
 *   embeddings, head and final norm (1,050,677,248) 2,795,769,856
 *   parameters: 5,591,539,712 bytes.  KV: 2 x 32 x 2 x 128 x 2 = 32,768 a
 *   token.  The all-reduce's output: 8,192 x 4096 x 2 = 67,108,864.
 * - Tensor 16: 8 KV heads < 16, so each GPU keeps one whole: 2 x 32 x 1
 *   x 128 x 2 = 16,384 a token, not 8,192.
 * - Pipeline 2: 16 layers a stage, 218,112,000 parameters each; the first
 *   stage holds the embeddings (128256 x 4096 = 525,336,576), the last
 *   the final norm (4,096) and the head (525,336,576), so the last is the
 *   largest: 3,489,792,000 + 525,340,672 = 4,015,132,672 parameters,
 *   8,030,265,344 bytes.  KV 2 x 16 x 8 x 128 x 2 = 65,536 a token; the
 *   hidden states sent and received, 2 x 8,192 x 4096 x 2 = 134,217,728.
 */
static void
test_est_parallel(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	w = serving(32, 8192);
	w.tensor = 4;
	e = est(&llama8b, &w);
	assert_int_equal(e.stage[MF_B_WEIGHTS], INT64_C(5591539712));
	assert_int_equal(e.kv_token, 32768);
	assert_int_equal(e.stage[MF_B_KVCACHE], INT64_C(32768) * 32 * 8192);
	assert_int_equal(e.stage[MF_B_COMM], INT64_C(67108864));
	/* The whole job's buckets stay whole: 2P; every GPU's buffer. */
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(16060522496));
	assert_int_equal(e.bucket[MF_B_COMM], 4 * INT64_C(67108864));
	assert_int_equal(e.per_gpu,
	    INT64_C(5591539712) + INT64_C(32768) * 32 * 8192 +
	        INT64_C(67108864));
	w.tensor = 16;
	assert_int_equal(est(&llama8b, &w).kv_token, 16384);
	w.tensor = 1;
	w.pipeline = 2;
	e = est(&llama8b, &w);
	assert_int_equal(e.stage[MF_B_WEIGHTS], INT64_C(8030265344));
	assert_int_equal(e.kv_token, 65536);
	assert_int_equal(e.stage[MF_B_COMM], INT64_C(134217728));
	assert_int_equal(mf_est_bucket_per_gpu(&e, MF_B_WEIGHTS),
	    INT64_C(8030265344));
}

/*
 * Pipeline training (design 15), the post's arithmetic on Llama 3.1 8B at
 * s = 4096, full fine-tune with AdamW (16 bytes a parameter), pipeline 2.
 * A layer's activations are s x h x 34 = 570,425,344 bytes.  1F1B keeps
 * two micro-batches in flight on the first stage: 16 layers x 2 =
 * 18,253,611,008; the last keeps one, 9,126,805,504, and the logits, s x
 * V x 4 = 2,101,346,304.  State: 16 x 4,015,128,576 = 64,242,057,216 on
 * the first, 16 x 4,015,132,672 = 64,242,122,752 on the last; each sends
 * and receives a hidden state, 2 x 4096 x 4096 x 2 = 67,108,864.  First:
 * 82,562,777,088; last: 75,537,383,424; the first is the largest.
 */
static void
test_est_pipeline_training(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.pipeline = 2;
	e = est(&llama8b, &w);
	assert_int_equal(e.stage[MF_B_ACTIVATIONS], INT64_C(18253611008));
	assert_int_equal(e.stage[MF_B_LOGITS], 0);
	assert_int_equal(e.stage[MF_B_COMM], INT64_C(67108864));
	assert_int_equal(e.per_gpu, INT64_C(82562777088));
	/* The whole job's buckets are one micro-batch of the whole model. */
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], 32 * INT64_C(570425344));
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(2101346304));
}

/*
 * Training under tensor parallel 8 divides the embeddings and the head by
 * the vocabulary, as DTensor shards them (torchtitan): Llama 3.1 8B, a
 * GPU holds 1,004,015,616 parameters (test_model.c's
 * test_shard_vocab_parallel), 2,008,031,232 bytes of weights and as many
 * of gradients, and 12 x 1,004,015,616 = 12,048,187,392 of AdamW's state.
 * Whole on each GPU they were 2 x 525,336,576 more parameters than the
 * 2 x 65,667,072 of its share.
 */
static void
test_est_tensor_training_vocab(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.tensor = 8;
	e = est(&llama8b, &w);
	assert_int_equal(e.stage[MF_B_WEIGHTS], INT64_C(2008031232));
	assert_int_equal(e.stage[MF_B_GRADIENTS], INT64_C(2008031232));
	assert_int_equal(e.stage[MF_B_OPTIMIZER], INT64_C(12048187392));
	/* The whole job's weights stay P x 2. */
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(16060522496));
}

/*
 * Sequence and loss parallel (design 19) on Llama 3.1 8B over tensor 8,
 * s = 4096, b = 1, bf16, sdpa; a GPU holds a = 4, kv = 1, I = 1,792 and
 * 16,032 of the 128,256 vocabulary rows (ad = 512, kvd = 128).
 * - A layer keeps, a token: the norms' outputs 2 x 2h = 16,384, which the
 *   projections keep gathered whole; attention 4ad + 4kvd + 4a = 2,576;
 *   the MLP 8I = 14,336: 33,296 of every token; and what the norms keep
 *   of their own, 2 x ((4 + 2)h + 4) = 49,160, of a GPU's ceil(4096 / 8)
 *   = 512 tokens under sequence parallel.  RoPE's 4d = 512 a token.
 *   Without: 4096 x (32 x (33,296 + 49,160) + 512) = 10,809,769,984;
 *   with: 4096 x (32 x 33,296 + 512) + 512 x 32 x 49,160 = 4,366,270,464
 *   + 805,437,440 = 5,171,707,904.
 * - Outside the layers, a token: the final norm's output 2h = 8,192,
 *   the fp32 log-softmax 4 x 16,032 = 64,128 under loss parallel (4 x
 *   128,256 = 513,024 without), labels and ids 16 and the embedding's
 *   mask 2; the final norm's own (4 + 2)h + 4 = 24,580.  Both: 4096 x
 *   72,338 + 512 x 24,580 = 296,296,448 + 12,584,960 = 308,881,408;
 *   neither: 4096 x (8,192 + 513,024 + 18 + 24,580) = 2,235,654,144.
 * - The loss's backward under loss parallel: 12 x 4096 x 16,032 =
 *   788,004,864, above the MLP's 4096 x 6 x 1,792 and the step's 8 x
 *   65,667,072; without it 8 x 4096 x 128,256 and the all-gather of the
 *   logits, its output 2 x 128,256 and its input 2 x 16,032 a token:
 *   4096 x 1,314,624 = 5,384,699,904.
 */
static void
test_est_sequence_loss_parallel(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.estimator = MF_EST_PYTORCH;
	w.attention = MF_SDPA;
	w.tensor = 8;
	e = est(&llama8b, &w);
	assert_int_equal(e.stage[MF_B_ACTIVATIONS], INT64_C(10809769984));
	assert_int_equal(e.stage[MF_B_LOGITS], INT64_C(2235654144));
	assert_int_equal(e.stage[MF_B_TRANSIENT], INT64_C(5384699904));
	w.sequence_parallel = 1;
	w.loss_parallel = 1;
	e = est(&llama8b, &w);
	assert_int_equal(e.stage[MF_B_ACTIVATIONS], INT64_C(5171707904));
	assert_int_equal(e.stage[MF_B_LOGITS], INT64_C(308881408));
	assert_int_equal(e.stage[MF_B_TRANSIENT], INT64_C(788004864));
	assert_string_equal(e.gpu_formula[MF_B_TRANSIENT],
	    "max(s x b x Vl x 12, s x b x 6I, Pmax x 8)");
	/*
	 * The whole job's buckets count each tensor once, as without:
	 * 4096 x (32 x (16h + 4ad + 4kvd + 4a + 8I + 8) + 4d) =
	 * 26,326,597,632 bytes of activations.
	 */
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(26326597632));
	/*
	 * Checkpointing: each layer's input is the residual stream, divided
	 * too: 4096 x (512 + 33,296) + 512 x (32 x 2h + 49,160) =
	 * 138,477,568 + 159,387,648, and the 4096 positions the checkpoints
	 * keep (8 bytes each): 297,897,984.
	 */
	w.checkpointing = 1;
	assert_int_equal(est(&llama8b, &w).stage[MF_B_ACTIVATIONS],
	    INT64_C(297897984));
	/* On one GPU the fields change nothing. */
	w.tensor = 1;
	w.checkpointing = 0;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(26326597632));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
}

/*
 * What fully_shard adds to the step (est_fsdp.c), Llama 3.1 8B over 8:
 * the root unit R = embeddings, head and final norm = 2 x 525,336,576 +
 * 4,096 = 1,050,677,248; the head's and final norm's gradients H =
 * 525,340,672; a layer U = 218,112,000.  The step's transient is the
 * loss's, s x b x V x 8 = 4,202,692,608; a layer's is its MLP's
 * backward, s x b x 6I = 352,321,536.  At the loss the root re-gathered,
 * 2R = 2,101,354,496, above the root with the last layer prefetched and
 * the head's gradients, R + U + H = 1,794,129,920: 4,202,708,992 bytes,
 * beside the loss's own transient.  During a layer's backward R + H + 4U
 * = 2,448,465,920, 4,896,931,840 bytes, but beside a layer's transient:
 * 4,896,931,840 - (4,202,692,608 - 352,321,536) = 1,046,560,768.  The
 * root held twice with a layer at the start of forward, 2R + U =
 * 2,319,466,496, comes before any activation (less the step's
 * activations, logits and transient, which hold more).  Keeping every
 * layer gathered (reshardAfterForward false), the phases are not told
 * apart: R + H + 33U = 8,773,713,920, 17,547,427,840 bytes.  The post
 * keeps 2U x 2.
 */
static void
test_est_fsdp_buffers(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_model wide = tiny;

	(void)state;
	w.estimator = MF_EST_PYTORCH;
	w.shard_gpus = 8;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_SHARDING],
	    INT64_C(4202708992));
	w.reshard_after_forward = 0;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_SHARDING],
	    INT64_C(17547427840));
	w.estimator = MF_EST_POST;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_SHARDING], 872448000);
	/*
	 * tiny (tied, L 2): R = 64,000 + 64 and the tied matrix's gradient
	 * H = 64,064; U = 36,992.  At the loss R + U + H = 165,120 above 2R
	 * = 128,128: 330,240 bytes.  In a layer's backward min(L + 1, 4) = 3
	 * layers, R + H + 3U = 239,104 x 2 = 478,208, is less than the
	 * step's transient (the loss's, s x b x V x 8 = 32,768,000) holds
	 * beyond a layer's (s x b x 6I = 3,145,728): 330,240 bytes.  With a
	 * vocabulary of 10,000: R = H = 640,064, at the loss R + U + H =
	 * 1,317,120 above 2R = 1,280,128: 2,634,240 bytes.  Untied, R =
	 * 1,280,064: the root re-gathered, 2R = 2,560,128, beats R + U + H
	 * = 1,957,120; the start of forward's 2R + U = 2,597,120 x 2 =
	 * 5,194,240 is apart from the step's activations, logits and
	 * transient (514,080,768 bytes at s 4096): 5,120,256 bytes.
	 */
	w.estimator = MF_EST_PYTORCH;
	w.reshard_after_forward = 1;
	assert_int_equal(est(&tiny, &w).bucket[MF_B_SHARDING], 330240);
	wide.vocab = 10000;
	assert_int_equal(est(&wide, &w).bucket[MF_B_SHARDING], 2634240);
	wide.tied_embeddings = 0;
	assert_int_equal(est(&wide, &w).bucket[MF_B_SHARDING], 5120256);
}

static void
test_est_fp32(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	post_defaults(&w);
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
	post_defaults(&w);
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
	post_defaults(&w);
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
	post_defaults(&w);
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
	post_defaults(&w);
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
	/* The figures below are the post's arithmetic on the micro model. */
	w.estimator = MF_EST_POST;
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

/*
 * LoRA under FSDP over 8 GPUs (design 22), Llama 3.1 8B, all-linear rank
 * 16, fp32 adapters on the bf16 base, s 4096: a layer U = 2 x 4096^2 +
 * 2 x 4096 x 1024 + 3 x 4096 x 14336 + 2 x 4096 = 218,112,000, the root
 * 8,030,261,248 - 32 x U = 1,050,677,248, a layer's adapters A = 16 x
 * (8192 + 5120 + 5120 + 8192 + 3 x 18432) = 1,310,720 (T = 32 A =
 * 41,943,040).  A unit gathered: Ug = 2U + 4A = 441,466,880.
 * - reshard after forward: during a layer's backward 2R + 2Ug + 2 x 4A =
 *   2,101,354,496 + 882,933,760 + 10,485,760 = 2,994,774,016; the root
 *   re-gathered at the start of backward, 2 x 2R = 4,202,708,992; the
 *   start of forward, 2 x 2R + Ug = 4,644,175,872, less the step's
 *   activations, logits and transient (gigabytes at s 4096):
 *   4,202,708,992;
 * - layers kept: max(the first, 2R + 33 Ug = 16,669,761,536, 2R + 32 Ug
 *   + 2 x 4A = 16,238,780,416) = 16,669,761,536.
 * Per GPU the base 16,060,522,496 / 8 = 2,007,565,312 and the adapters
 * 16T = 671,088,640 / 8 = 83,886,080.  The estimator post's buffers: 4U =
 * 872,448,000.  Inference ignores sharding (QLoRA's:
 * test_est_sharding_qlora).
 */
static void
test_est_sharding_lora(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 4096;
	w.method = MF_LORA;
	w.shard_gpus = 8;
	e = est(&llama8b, &w);
	assert_int_equal(e.trainable, INT64_C(41943040));
	assert_int_equal(e.shards, 8);
	assert_int_equal(e.bucket[MF_B_SHARDING], INT64_C(4202708992));
	assert_int_equal(mf_est_bucket_per_gpu(&e, MF_B_WEIGHTS),
	    INT64_C(2007565312));
	assert_int_equal(mf_est_bucket_per_gpu(&e, MF_B_ADAPTERS),
	    INT64_C(83886080));
	assert_int_equal(e.per_gpu,
	    e.total - INT64_C(16060522496) - INT64_C(671088640) +
	        INT64_C(2007565312) + INT64_C(83886080));
	w.reshard_after_forward = 0;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_SHARDING],
	    INT64_C(16669761536));
	w.estimator = MF_EST_POST;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_SHARDING],
	    INT64_C(872448000));
	w.method = MF_LORA;
	w.tensor = 2;
	assert_true(mf_est_shard_refused(&w, NULL, 0));
	w.tensor = 1;
	w.kind = MF_INFERENCE;
	w.context_len = 16;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_SHARDING], 0);
	assert_int_equal(e.per_gpu, e.total);
}

/*
 * QLoRA under FSDP over 8 GPUs, Llama 3.1 8B, q_proj and v_proj at rank
 * 16, bf16 adapters, the layers kept after forward.  A layer's 4-bit
 * linears as quant.c stores them, the packed codes n/2, the absmax n/64,
 * the second level 4 x ceil(n / 16384) and the code tables 1092 each:
 *   q, o (n 16,777,216)    8,388,608 + 262,144 + 4,096 + 1,092   x 2
 *   k, v (n 4,194,304)     2,097,152 +  65,536 + 1,024 + 1,092   x 2
 *   gate, up, down (58,720,256)
 *                         29,360,128 + 917,504 + 14,336 + 1,092  x 3
 * codes 109,051,904 and quant_state 3,468,764 a layer; with its norms,
 * 8,192 x 2, and its adapters, A = 16 x (8192 + 5120) = 212,992 at 2
 * bytes (425,984).  The weights are 32 x 112,520,668 + (P - Pq) x 2 =
 * 5,702,540,160.
 * - qlora.quantizer torchao (torchtune): fully_shard shards an NF4Tensor
 *   whole and a unit gathers all of it, Ug = 112,520,668 + 16,384 +
 *   425,984 = 112,963,036.  Kept, the root R x 2 = 2,101,354,496 and
 *   33 Ug: 5,829,134,684, above 2R + 32 Ug + 2 x 2A.  A GPU's weights
 *   5,702,540,160 / 8 = 712,817,520.
 * - bitsandbytes (accelerate's FSDP-QLoRA): the codes sharded and
 *   gathered, the quant_state, 32 x 3,468,764 = 111,000,448, whole on
 *   every GPU: weights (5,702,540,160 - 111,000,448) / 8 + 111,000,448 =
 *   809,942,912; Ug = 109,051,904 + 16,384 + 425,984 = 109,494,272, kept
 *   2R + 33 Ug = 5,714,665,472.
 * Resharded, the root gathered again at the loss, 2 x 2R =
 * 4,202,708,992, is the most either way.  cpuOffload and kbitPrep are
 * refused.
 */
static void
test_est_sharding_qlora(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;
	char why[512];

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 2048;
	w.method = MF_QLORA;
	w.precision = MF_BF16_TRUE;
	w.checkpointing = MF_CKPT_FULL;
	w.lora_targets = MF_LORA_LIST;
	w.lora_modules = MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_V);
	w.lora_dtype = MF_LORA_BF16;
	w.shard_gpus = 8;
	w.reshard_after_forward = 0;
	e = est(&llama8b, &w);
	assert_int_equal(e.trainable, INT64_C(6815744));
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(5702540160));
	assert_int_equal(e.weights_whole, INT64_C(111000448));
	assert_int_equal(mf_est_bucket_per_gpu(&e, MF_B_WEIGHTS),
	    INT64_C(809942912));
	assert_int_equal(e.bucket[MF_B_SHARDING], INT64_C(5714665472));
	w.qlora_quantizer = MF_QZ_TORCHAO;
	e = est(&llama8b, &w);
	assert_int_equal(e.weights_whole, 0);
	assert_int_equal(mf_est_bucket_per_gpu(&e, MF_B_WEIGHTS),
	    INT64_C(712817520));
	assert_int_equal(e.bucket[MF_B_SHARDING], INT64_C(5829134684));
	w.reshard_after_forward = 1;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_SHARDING],
	    INT64_C(4202708992));
	w.qlora_quantizer = MF_QZ_BITSANDBYTES;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_SHARDING],
	    INT64_C(4202708992));
	w.shard_units = MF_UNITS_ENDS;
	assert_false(mf_est_shard_refused(&w, NULL, 0));
	w.shard_units = MF_UNITS_MODEL;
	w.shard_cpu_offload = 1;
	assert_true(mf_est_shard_refused(&w, why, sizeof(why)));
	assert_non_null(strstr(why, "this job has cpuOffload: true"));
	w.shard_cpu_offload = 0;
	w.qlora_kbit_prep = 1;
	assert_true(mf_est_shard_refused(&w, NULL, 0));
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
}

/* Llama 3.1 70B as its config.json gives it: P = 70,553,706,496. */
static const struct mf_model llama70b = {
	.hidden = 8192,
	.layers = 80,
	.heads = 64,
	.kv_heads = 8,
	.head_dim = 128,
	.intermediate = 28672,
	.vocab = 128256,
	.norms_per_layer = 2,
	.max_context = 131072,
	.positions = 131072,
	.rope_factor = 1,
};

/*
 * sharding.units ends (est_fsdp.c), Llama 3.1 8B over 8 GPUs, bf16: the
 * units in backward order head, 32 layers, embeddings; Vh = 128256 x 4096
 * = 525,336,576, U = 218,112,000, the root the final norm, 4096.  Full
 * fine-tuning: the head's backward (its parameters and gradients, the
 * last layer prefetched) and the embeddings' (theirs and the first
 * layer's reduce-scatter input, with no activation left: apart, less
 * the step's activations, logits and transient), 2Vh + U =
 * 1,268,785,152, at the loss beside its own transient (the step's), above
 * 3U + Vh = 1,179,672,576 at the outer layers and 4U = 872,448,000
 * between two, which are beside a layer's; x 2 = 2,537,570,304 and the
 * norm and its gradient, 2 x 4096 x 2: 2,537,586,688, against the root
 * unit's 4,202,708,992 (test_est_fsdp_buffers).  Offloading adds
 * nothing: the most at a prefetch is U + Vh + ceil(Vh / 8) + U =
 * 1,027,227,648 (the head's, Vh + U + ceil(U / 8) = 770,712,576), and
 * the formula writes each phase's most alone.  LoRA (test_est_sharding_lora's
 * Ug = 441,466,880 bytes, A x 4 = 5,242,880): an end's copy-out, 2 x Vh x 2 =
 * 2,101,346,304, above the first layer's backward Ug + 4A + Vh x 2 + 4A =
 * 1,502,625,792; with the norm, 4096 x 2: 2,101,354,496.  The layers kept
 * after forward, one GPU and a tied head keep the root unit's figures.
 */
#define FORMULA_ENDS_8B \
	"2 x (root params - 2Vh) x 2 + max((2 x Vh + layer params) x 2 + " \
	"loss transient, (Vh + 3 x layer params) x 2 + layer transient, (2 " \
	"x Vh + layer params) x 2 - activations - logits) - transient"

static void
test_est_units_ends(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;
	int64_t model;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 4096;
	w.shard_gpus = 8;
	model = est(&llama8b, &w).bucket[MF_B_SHARDING];
	w.shard_units = MF_UNITS_ENDS;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_SHARDING], INT64_C(2537586688));
	assert_string_equal(e.formula[MF_B_SHARDING], FORMULA_ENDS_8B);
	w.shard_cpu_offload = 1;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_SHARDING], INT64_C(2537586688));
	assert_string_equal(e.formula[MF_B_SHARDING], FORMULA_ENDS_8B);
	w.shard_cpu_offload = 0;
	w.method = MF_LORA;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_SHARDING], INT64_C(2101354496));
	w.method = MF_FULL;
	w.reshard_after_forward = 0;
	e = est(&llama8b, &w);
	w.shard_units = MF_UNITS_MODEL;
	assert_int_equal(e.bucket[MF_B_SHARDING],
	    est(&llama8b, &w).bucket[MF_B_SHARDING]);
	w.reshard_after_forward = 1;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_SHARDING], model);
}

/*
 * torchtune's 70B_full on 8 GPUs (examples/llama-70b-torchtune-offload
 * .yaml), its loss standard here: Vh = 128256 x 8192 = 1,050,673,152, U
 * = 855,654,400 (q and o 8192^2, k and v 8192 x 1024, the MLP 3 x 8192 x
 * 28672, two norms).  The step's transient is the loss's, s x b x V x 8
 * = 4,202,692,608; a layer's, s x b x 6I = 704,643,072, is 3,498,049,536
 * less.  At the loss the head's backward, 2Vh + U = 2,957,000,704, above
 * its prefetch offloading, Vh + U + ceil(U / 8) = 2,013,284,352: x 2,
 * 5,914,001,408.  The last layer's backward, its parameters and
 * gradients, the layer before prefetched and the head's reduce-scatter
 * input, 3U + Vh = 3,617,636,352 (above 4U = 3,422,617,600), x 2 =
 * 7,235,272,704, beside a layer's transient: 3,737,223,168.  With the
 * norm and its gradient (2 x 8192 x 2): 5,914,034,176.  The root unit's:
 * at the loss 2R = 2 x 2,101,354,496, above R + U + H = 4,007,690,240,
 * x 2 = 8,405,417,984; in a layer's backward R + H + 4U = 2,101,354,496
 * + 1,050,681,344 + 3,422,617,600 = 6,574,653,440, x 2 = 13,149,306,880,
 * less 3,498,049,536: 9,651,257,344.
 */
static void
formulas_agree(const struct mf_model *m, const struct mf_workload *w);

static void
test_est_units_ends_70b(void **state)
{
	struct mf_workload w;
	struct mf_model l2 = llama70b;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 2048;
	w.micro_batch = 2;
	w.shard_gpus = 8;
	w.shard_cpu_offload = 1;
	w.precision = MF_BF16_TRUE;
	w.checkpointing = MF_CKPT_FULL;
	assert_int_equal(est(&llama70b, &w).bucket[MF_B_SHARDING],
	    INT64_C(9651257344));
	w.shard_units = MF_UNITS_ENDS;
	assert_int_equal(est(&llama70b, &w).bucket[MF_B_SHARDING],
	    INT64_C(5914034176));
	/*
	 * Llama 2 70B's vocabulary of 32,000 over 2 GPUs, the root unit: at
	 * the loss the root with the last layer's shards copied, R + U +
	 * ceil(U / 2) = 524,296,192 + 855,654,400 + 427,827,200 =
	 * 1,807,777,792, above R + U + H = 1,642,102,784 and 2R =
	 * 1,048,592,384 (x 2 = 3,615,555,584, the loss's transient the
	 * step's); in a layer's backward R + H + 4U = 4,209,065,984, x 2 less
	 * the loss's transient beyond a layer's (1,048,576,000 - 704,643,072):
	 * 8,074,199,040, the most.  The longest of the formulas, whole.
	 */
	l2.vocab = 32000;
	w.shard_units = MF_UNITS_MODEL;
	w.shard_gpus = 2;
	assert_int_equal(est(&l2, &w).bucket[MF_B_SHARDING],
	    INT64_C(8074199040));
	formulas_agree(&l2, &w);
}

/*
 * sharding.cpuOffload (design 22), Llama 3.1 8B over 8 GPUs, s 4096: the
 * weights, gradients and optimizer state on the host, none on a GPU, and
 * no optimizer step on it.  Full fine-tuning's buffers (U = 218,112,000,
 * R = 1,050,677,248, H = 128256 x 4096 + 4096 = 525,340,672): at the
 * loss 2R = 2,101,354,496, above R + U + H = 1,794,129,920 and the
 * prefetch's R + U + ceil(U / 8) = 1,296,053,248, x 2 = 4,202,708,992;
 * in a layer's backward R + H + 4U = 2,448,465,920, x 2 less the loss's
 * transient beyond a layer's (test_est_fsdp_buffers), 1,046,560,768; the
 * start of forward's 2R + U + ceil(U / 8) = 2,346,730,496, before any
 * activation.  On one GPU (no all-gather, no copies, the phases not told
 * apart) R + H + 4U x 2 = 4,896,931,840.  LoRA's
 * (test_est_sharding_lora's Ug = 441,466,880, A x 4 = 5,242,880, 2R =
 * 2,101,354,496 bytes): at the loss the root re-gathered at the start of
 * backward, 2 x 2,101,354,496 = 4,202,708,992, above R + Ug + ceil(Ug /
 * 8) = 2,598,004,736, beside the loss's own transient (the step's); in
 * the layers R + 2Ug + 2 x 4A = 2,994,774,016 and the prefetch's R + 2Ug
 * + ceil(Ug / 8) + 4A = 3,044,714,496, each beside a layer's transient
 * only; the start of forward's 4,202,708,992 + Ug + ceil(Ug /
 * 8) = 4,699,359,232 comes before any activation, which hold more.
 */
static void
test_est_cpu_offload(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 4096;
	w.shard_gpus = 8;
	w.shard_cpu_offload = 1;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_WEIGHTS], 0);
	assert_int_equal(e.bucket[MF_B_GRADIENTS], 0);
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], 0);
	assert_int_equal(e.bucket[MF_B_SHARDING], INT64_C(4202708992));
	assert_int_equal(e.per_gpu,
	    e.bucket[MF_B_ACTIVATIONS] + e.bucket[MF_B_LOGITS] +
	        e.bucket[MF_B_TRANSIENT] + e.bucket[MF_B_SHARDING]);
	assert_non_null(strstr(e.formula[MF_B_WEIGHTS], "host memory: P x 2"));
	w.shard_gpus = 1;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_SHARDING], INT64_C(4896931840));
	assert_int_equal(e.bucket[MF_B_WEIGHTS], 0);
	w.shard_gpus = 8;
	w.method = MF_LORA;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ADAPTERS], 0);
	assert_int_equal(e.bucket[MF_B_SHARDING], INT64_C(4202708992));
	/* Not measured: with tensor parallel, activation offloading, the
	 * optimizer in backward. */
	w.method = MF_FULL;
	w.tensor = 2;
	assert_true(mf_est_shard_refused(&w, NULL, 0));
	w.tensor = 1;
	w.shard_gpus = 1;
	w.checkpointing = MF_CKPT_FULL;
	w.activation_offload = 1;
	assert_true(mf_est_shard_refused(&w, NULL, 0));
	w.activation_offload = 0;
	w.optimizer_in_backward = 1;
	w.precision = MF_BF16_TRUE;
	assert_true(mf_est_shard_refused(&w, NULL, 0));
}

static void
test_est_head_dim_inference(void **state)
{
	struct mf_model m = given_head_dim;
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	post_defaults(&w);
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
	post_defaults(&w);
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
	post_defaults(&w);
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

/* --- the estimator pytorch (design 13) -------------------------------- */

/*
 * Llama 3.1 8B, s 4096, b 1, bf16 (e = 2), sdpa: h 4096, a 32, kv 8, d
 * 128, I 14336, V 128256, L 32.  Per layer and token, worked out from the
 * terms of estimate.c (each measured by tests/torch/measure.py):
 *   norms 2 x ((4 + 2e)h + 4)                      =  65,544
 *   attention 2e x ad + 2e x kvd + 4a (q, out; k, v; lse)
 *             4 x 4096 + 4 x 1024 + 128            =  20,608
 *   MLP 4e x I = 8 x 14,336                        = 114,688
 *   layer                                          = 200,840
 * activations 4096 x (32 x 200,840 + 2e x d = 512) = 26,326,597,632
 * logits 4096 x ((4 + 2e)h + 4V + 20)              =  2,235,645,952
 * transient max(8 x V x s, 8 x V x h): s = h here  =  4,202,692,608
 * total 2P + 2P + 12P + the three                  = 161,249,116,160
 * (the post's 148,839,137,280; 161.2 against 148.8 GB).
 */
static void
test_torch_llama8b(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.estimator = MF_EST_PYTORCH;
	e = est(&llama8b, &w);
	assert_int_equal(e.estimator, MF_EST_PYTORCH);
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(16060522496));
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], INT64_C(96363134976));
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(26326597632));
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(2235645952));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
	assert_int_equal(e.total, INT64_C(161249116160));
	assert_int_equal(tenths(e.total), 1612);
	/*
	 * Eager: q, the repeated k and v, the output (4e x ad = 32,768) and
	 * the fp32 softmax with its 16-bit cast ((4 + e) x a x s =
	 * 786,432): layer 999,432; activations 4096 x (32 x 999,432 + 512)
	 * = 130,999,648,256.  The transient stays the loss's: softmax
	 * backward's (4 + e) x a x s x s = 3,221,225,472 is smaller.
	 */
	w.attention = MF_EAGER;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(130999648256));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
	/*
	 * Checkpointing: the layers' inputs, one layer recomputed, RoPE's
	 * cos and sin and the positions the checkpoints keep (8 bytes a
	 * position): 4096 x (32 x 2h + 200,840 + 512 + 8) = 1,898,512,384.
	 */
	w.attention = MF_SDPA;
	w.checkpointing = 1;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(1898512384));
	/*
	 * fp32 (e = 4): norms 2 x (12h + 4) = 98,312, attention 8 x 4096 +
	 * 8 x 1024 + 128 = 41,088, MLP 16 x I = 229,376: layer 368,776;
	 * 4096 x (32 x 368,776 + 1,024) = 48,340,402,176.  Logits 4096 x
	 * (12h + 4V + 20) = 2,302,754,816; transient max(8Vs, 4 x V x h).
	 */
	w.checkpointing = 0;
	w.precision = MF_FP32;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(48340402176));
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(2302754816));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
}

/*
 * Design 19's precisions and checkpointing on Llama 3.1 8B (s = 4096, b =
 * 1, sdpa, AdamW), by hand.  P = 8,030,261,248; the linear weights
 * autocast casts, the output head's included, Pc = P - V x h - 65h =
 * 7,504,658,432.
 */
static void
test_torch_recipes(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.estimator = MF_EST_PYTORCH;
	assert_int_equal(mf_est_autocast_params(&llama8b), INT64_C(7504658432));
	/*
	 * bf16-mixed: fp32 weights and their 16-bit copies, 4P + 2Pc =
	 * 47,130,361,856; fp32 gradients 4P; fp32 moments 8P.  A layer:
	 * fp32 norms 2 x (8h + 4) with q, k, v's and gate, up's 16-bit
	 * casts 10h (106,504), attention 4ad + 4kvd + 4a (20,608), MLP 8I
	 * (114,688): 241,800; fp32 RoPE 8d a position: 4096 x (32 x 241,800
	 * + 1,024) = 31,697,403,904.  Logits: the final norm's 8h and
	 * lm_head's cast 2h: 4096 x (10h + 4V + 20) = 2,269,200,384.
	 */
	w.precision = MF_BF16_MIXED;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(47130361856));
	assert_int_equal(e.bucket[MF_B_GRADIENTS], INT64_C(32121044992));
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], INT64_C(64242089984));
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(31697403904));
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(2269200384));
	w.precision = MF_FP16_MIXED;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(47130361856));
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(31697403904));
	/*
	 * bf16-true: 16-bit weights and gradients, 2P each, bf16 moments 4P
	 * = 32,121,044,992, no master; the activations are bf16's; the
	 * step's sqrt(v) and its quotient, 2 x 2 bytes of the largest
	 * parameter (V x h: 2,101,346,304), stay under the loss's 8Vs.
	 */
	w.precision = MF_BF16_TRUE;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(16060522496));
	assert_int_equal(e.bucket[MF_B_GRADIENTS], INT64_C(16060522496));
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], INT64_C(32121044992));
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(26326597632));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
	w.precision = MF_FP16;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], INT64_C(96363134976));
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(26326597632));
	/*
	 * Every 4th layer checkpointed (bf16): 8 layers keep their input,
	 * 24 their activations (a layer: 200,840), and the last, one of the
	 * 8, is recomputed on top: 4096 x (25 x 200,840 + 8 x 2h + 4d + 8)
	 * = 20,836,581,376.  Every 3rd: 10 checkpointed, the last two
	 * layers not, whose activations are freed before any recomputation:
	 * 4096 x (22 x 200,840 + 10 x 2h + 520) = 18,435,768,320.
	 */
	w.precision = MF_BF16;
	w.checkpointing = MF_CKPT_FULL;
	w.ckpt_every = 4;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(20836581376));
	w.ckpt_every = 3;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(18435768320));
	/*
	 * Per op (torchtitan's policy): a layer keeps q's, v's, gate's and
	 * down's outputs, the kernel's output and logsumexp (2ad + 2kvd +
	 * 2I + 2h + 2ad + 4a = 55,424) and its input (2h); the last layer
	 * is recomputed (200,840) around its kept outputs: 4096 x (31 x
	 * 55,424 + 32 x 2h + 200,840 + 4d + 8) = 8,936,030,208.
	 */
	w.checkpointing = MF_CKPT_OP;
	w.ckpt_every = 1;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(8936030208));
}

/*
 * Activation offloading (design 19, torchtune's OffloadActivations) on
 * Llama 3.1 8B, every layer checkpointed, s = 4096, b = 1, by hand; a
 * layer keeps 200,840 bytes a token in bf16 (test_torch_llama8b).
 * bf16-true: the layer recomputing and the one brought back before it
 * keep their inputs on the GPU, the other 30 are in host memory: 4096 x
 * (200,840 + 2 x 2h + 4d + 8) = 4096 x 217,744 = 891,879,424, where
 * checkpointing alone keeps 1,898,512,384.  The token ids (8 bytes a
 * token) move too: logits 4096 x (8h + 4V + 12) = 2,235,613,184; the
 * state and the transient are as without offloading: 2P + 2P + 4P +
 * 4,202,692,608, 71,572,275,200 bytes a GPU against checkpointing's
 * 72,578,940,928.
 */
static void
test_torch_offload(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.estimator = MF_EST_PYTORCH;
	w.precision = MF_BF16_TRUE;
	w.checkpointing = MF_CKPT_FULL;
	w.activation_offload = 1;
	assert_true(mf_est_offloads(&w));
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(891879424));
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(2235613184));
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], INT64_C(32121044992));
	w.activation_offload = 0;
	assert_int_equal(est(&llama8b, &w).per_gpu, INT64_C(72578940928));
	w.activation_offload = 1;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
	assert_int_equal(e.per_gpu, INT64_C(71572275200));
	assert_string_equal(e.formula[MF_B_ACTIVATIONS],
	    "s x b x (1 x (16h + 4ad + 4kvd + 4a + 8I + 8) + 2 x 2h) + s x 4d "
	    "+ s x 8");
	/*
	 * fp32: the first norm's x.to(float32) is the input itself, which
	 * the recomputed layer keeps (368,776 a token, test_torch_llama8b):
	 * no input more.  4096 x (368,776 + 8d + 8) = 1,514,733,568; logits
	 * 4096 x (12h + 4V + 12) = 2,302,722,048.
	 */
	w.precision = MF_FP32;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(1514733568));
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(2302722048));
	/*
	 * LoRA r16 all-linear, bf16: a layer keeps 28h + 8ad + 4kvd + 4a +
	 * 10I + 28r + 8 = 295,496 a token; the embeddings' output, which
	 * transformers makes a leaf that requires a gradient, stays on the
	 * GPU beside the two inputs: 4096 x (295,496 + 3 x 2h + 520) =
	 * 1,313,144,832 (checkpointing alone: 4096 x (295,496 + 32 x 2h +
	 * 520) = 2,286,223,360).  Frozen embeddings keep no token ids: the
	 * logits are LoRA's, 4096 x (4h + 4V + 12) = 2,168,504,320.
	 */
	w.precision = MF_BF16;
	w.method = MF_LORA;
	w.lora_rank = 16;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(1313144832));
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(2168504320));
	w.activation_offload = 0;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(2286223360));
	/*
	 * A tensor under min_offload_size (1024 bytes) stays: at s = 64 the
	 * token ids are 512 bytes, 64 x (8h + 4V + 20) = 34,931,968; the
	 * inputs (2h x 64) move: 64 x (200,840 + 2 x 2h + 520) = 13,935,616.
	 * At s = 128 the ids are 1024 bytes and move: 128 x 545,804.
	 */
	w.method = MF_FULL;
	w.activation_offload = 1;
	w.seq_len = 64;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(13935616));
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(34931968));
	w.seq_len = 128;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(69862912));
	/* The post's arithmetic has no offloading: its 2sbhL stays. */
	w = ref_workload();
	w.checkpointing = MF_CKPT_FULL;
	w.activation_offload = 1;
	assert_false(mf_est_offloads(&w));
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(1073741824));
	/* Outside what was measured (mf_est_offload_refused) there is no
	 * estimate: without every layer checkpointed, every 2nd, under
	 * FSDP or tensor parallel. */
	w.checkpointing = MF_CKPT_NONE;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w.checkpointing = MF_CKPT_FULL;
	w.ckpt_every = 2;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w.ckpt_every = 1;
	w.shard_gpus = 4;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w.shard_gpus = 1;
	w.tensor = 2;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w.tensor = 1;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_OK);
}

/* The tokens whose hidden states parallel layouts send (estimate.c). */
static int64_t
forward_tokens(const struct mf_workload *w)
{
	if (w->kind == MF_TRAINING)
		return w->seq_len * w->micro_batch;
	return w->server == MF_SERVER_VLLM ? w->batched_tokens : w->context_len;
}

/* w with vLLM's defaults where it leaves them to the card, as an estimate
 * without a card takes them (below 70 GiB). */
static struct mf_workload
resolved(const struct mf_workload *w)
{
	struct mf_workload r = *w;

	mf_vllm_defaults(&r, mf_vllm_tier(0, 0));
	return r;
}

/* The counts of the weights' quantized part (QLoRA's NF4 for the
 * transient's Qmax, whose weights the post's arithmetic leaves whole). */
static struct mf_quant_sum
quant_counts(const struct mf_model *m, const struct mf_workload *w,
    const struct mf_estimate *e)
{
	struct mf_quant_sum s;
	struct mf_quant q = e->quant;

	if (w->method == MF_QLORA)
		mf_quant_nf4(w->qlora_block, w->qlora_double_quant, &q);
	mf_quant_sum(m, &q, &s);
	return s;
}

/* Parameters outside the layers, and the head's with the final norm's
 * (est_fsdp.c's root and head). */
static int64_t
root_params(const struct mf_model *m)
{
	return mf_model_params(m) - m->layers * mf_model_layer_params(m);
}

static int64_t
head_params(const struct mf_model *m)
{
	return m->no_head ? 0 : mf_model_vocab_rows(m) * m->hidden + m->hidden;
}

/* A LoRA layer's FSDP unit in bytes: U x b + ceil(T / L) x a; QLoRA's
 * base its 4-bit linears as quant.c stores them (bitsandbytes': the
 * packed codes alone) and the rest of the layer at b. */
static int64_t
lora_unit(const struct mf_model *m, const struct mf_workload *w)
{
	int64_t t = mf_model_lora_params(m, w->lora_rank, mf_est_lora_mask(w));
	int64_t l = m->layers > 0 ? m->layers : 1,
	        b = w->precision == MF_FP32 ? 4 : 2;
	int64_t base = mf_model_layer_params(m) * b;
	struct mf_quant q;
	struct mf_quant_sum s;

	if (w->method == MF_QLORA) {
		mf_quant_nf4(w->qlora_block, w->qlora_double_quant, &q);
		mf_quant_sum(m, &q, &s);
		base = ((w->qlora_quantizer == MF_QZ_TORCHAO ? s.bytes :
		                                               s.packed) +
		           l - 1) /
		        l +
		    (mf_model_layer_params(m) - s.pq / l) * b;
	}
	return base + (t + l - 1) / l * (w->lora_dtype == MF_LORA_FP32 ? 4 : 2);
}

/*
 * Check formulas, each of bytes[b], against m's shapes (the whole model,
 * or one GPU's share for the per-GPU formulas) under w, for the estimate
 * e; P is params.
 */
/*
 * bitsandbytes 0.50.2's 8-bit state of m's tensors (optim/optimizer.py):
 * the elements of tensors under min_8bit_size (4096), the 256-element
 * blocks and the count of the others, and the elements of those a paged
 * optimizer pages (1e5 or more).
 */
struct bnb {
	int64_t small, blocks, paged, tensors;
};

static struct bnb
bnb_counts(const struct mf_model *m, const struct mf_workload *w)
{
	struct mf_tensor v[MF_MODEL_MAX_TENSORS];
	size_t n = mf_model_tensors(m, v);
	struct bnb b = { 0, 0, 0, 0 };

	for (size_t i = 0; i < n; i++) {
		if (v[i].numel < 4096) {
			b.small += v[i].numel * v[i].count;
			continue;
		}
		b.tensors += v[i].count;
		b.blocks += (v[i].numel + 255) / 256 * v[i].count;
		if (w->optimizer == MF_PAGED_ADAMW8BIT && v[i].numel >= 100000)
			b.paged += v[i].numel * v[i].count;
	}
	return b;
}

static void
formulas_of(const struct mf_model *m, const struct mf_workload *w,
    const struct mf_estimate *e, int64_t params, const int64_t *bytes,
    char (*formula)[MF_FORMULA_MAX], const char *what)
{
	struct mf_quant_sum q = quant_counts(m, w, e);
	struct mf_workload r = resolved(w);
	struct bnb b8 = bnb_counts(m, w);
	/* The loading bucket's: the step is every other bucket counted;
	 * Xmax, the largest 16-bit parameter of QLoRA (est_load.c). */
	double step = 0, xmax = (double)m->hidden;

	for (int b = 0; b < MF_B_COUNT; b++)
		if (b != MF_B_LOADING && mf_est_counted((enum mf_bucket)b))
			step += (double)bytes[b];
	if (!m->no_embed || !m->no_head)
		xmax = (double)m->vocab * (double)m->hidden;
	if ((double)m->experts * (double)m->hidden > xmax)
		xmax = (double)m->experts * (double)m->hidden;
	const struct sym syms[] = {
		{ "weights", (double)bytes[MF_B_WEIGHTS] },
		/* What a moment apart from the activations holds beyond
		 * them (est_fsdp.c). */
		{ "activations", (double)bytes[MF_B_ACTIVATIONS] },
		{ "logits", (double)bytes[MF_B_LOGITS] },
		{ "transient", (double)bytes[MF_B_TRANSIENT] },
		/* Two of its candidates, for FSDP's phases (est_fsdp.c). */
		{ "loss transient",
		    (double)(bytes == e->stage ? e->gpu_loss_transient :
		                                 e->loss_transient) },
		{ "layer transient",
		    (double)(bytes == e->stage ? e->gpu_layer_transient :
		                                 e->layer_transient) },
		{ "step", step },
		{ "Xmax", xmax },
		/* bitsandbytes' 8-bit state, tensor by tensor. */
		{ "Ps", (double)b8.small },
		{ "B8", (double)b8.blocks },
		{ "Pp", (double)b8.paged },
		{ "N8", (double)b8.tensors },
		{ "P", (double)params },
		{ "T",
		    (double)(w->method == MF_FULL ?
		            params :
		            mf_model_lora_params(m, w->lora_rank,
		                mf_est_lora_mask(w))) },
		{ "s", (double)w->seq_len },
		{ "b", (double)w->micro_batch },
		MODEL_SYMS(m),
		{ "Vl", (double)mf_model_vocab_rows(m) },
		{ "seqs", (double)w->concurrency },
		/* The profile run's sequences and tokens. */
		{ "reqs",
		    (double)(r.max_num_seqs < r.batched_tokens ?
		            r.max_num_seqs :
		            r.batched_tokens) },
		{ "t", (double)r.batched_tokens },
		{ "nonTorch", (double)w->non_torch },
		{ "allReduce", (double)w->all_reduce },
		{ "Plin", (double)mf_model_linear_params(m) },
		{ "Pc", (double)mf_est_autocast_params(m) },
		{ "Pq", (double)q.pq },
		{ "Wq", (double)q.packed },
		{ "S", (double)q.scales },
		{ "S2", (double)q.scales2 },
		{ "nq", (double)q.tensors },
		{ "R", (double)q.rows },
		{ "Qmax", (double)q.largest },
		{ "TP", (double)w->tensor },
		{ "PP", (double)w->pipeline },
		{ "tokens", (double)forward_tokens(&r) },
		{ "cudaGraphReserve", (double)w->graph_reserve },
		{ "cudaContext", (double)(INT64_C(620) << 20) },
		{ "ctx", (double)w->context_len },
		{ "N", (double)w->shard_gpus },
		{ "r", (double)w->lora_rank },
		{ "layer params", (double)mf_model_layer_params(m) },
		/* A LoRA layer's FSDP unit as gathered: its base in the
		 * base's dtype, its adapters in theirs (est_fsdp.c). */
		{ "Ug", (double)lora_unit(m, w) },
		{ "root params", (double)root_params(m) },
		{ "head params", (double)head_params(m) },
		/* A decoder layer's largest tensor (optimizerInBackward's
		 * gradients with tied embeddings). */
		{ "Pl", (double)mf_model_largest_layer_param(m) },
		/* The widest output of a linear LoRA's targets reach. */
		{ "Omax",
		    (double)mf_model_lora_widest(m, mf_est_lora_mask(w)) },
		/* With LoRA the largest trainable tensor is an adapter's. */
		{ "Pmax",
		    w->method == MF_FULL ?
		        (double)mf_model_largest_param(m) :
		        (double)mf_model_lora_largest(m, w->lora_rank,
		            mf_est_lora_mask(w)) },
	};
	int bad;

	for (int b = 0; b < MF_B_COUNT; b++) {
		double v;

		if (bytes[b] == 0)
			continue;
		v = evaluate(formula[b], syms, NELEM(syms), &bad);
		if (bad ||
		    fabs(v - (double)bytes[b]) > 1e-9 * (double)bytes[b] + 1) {
			print_error("%s %s%s: '%s' is %.0f, the bytes %lld\n",
			    mf_estimator_name(w->estimator), what,
			    mf_bucket_name((enum mf_bucket)b), formula[b], v,
			    (long long)bytes[b]);
			fail();
		}
	}
}

/*
 * Check every bucket of m under w against its formula, and under tensor
 * or expert parallel without pipeline stages each bucket one GPU holds
 * against its per-GPU formula, on that GPU's share of m.
 */
static void
formulas_agree(const struct mf_model *m, const struct mf_workload *w)
{
	struct mf_estimate e = est(m, w);
	struct mf_model part;

	formulas_of(m, w, &e, e.params, e.bucket, e.formula, "");
	if (w->pipeline > 1 || (w->tensor == 1 && w->expert == 1))
		return;
	/* The vocabulary padded as layout.c's vocab_pad pads it. */
	mf_model_shard(m, w->tensor, w->expert, m->layers, 1, 1,
	    w->kind == MF_TRAINING          ? MF_VOCAB_PAD_DTENSOR :
	        w->server == MF_SERVER_VLLM ? MF_VOCAB_PAD_VLLM :
	                                      0,
	    &part);
	for (int b = 0; b < MF_B_COUNT; b++)
		if (e.gpu_formula[b][0] == '\0')
			memcpy(e.gpu_formula[b], e.formula[b],
			    sizeof e.formula[b]);
	formulas_of(&part, w, &e, mf_model_params(&part), e.stage,
	    e.gpu_formula, "per GPU ");
}

/* The units ends never hold more than the root unit (est_fsdp.c: each
 * of their moments is below R + H + 4U or 2R + U, R holding both ends). */
static void
ends_below_model(const struct mf_model *m, const struct mf_workload *w)
{
	struct mf_workload model = *w;

	if (w->shard_units != MF_UNITS_ENDS)
		return;
	model.shard_units = MF_UNITS_MODEL;
	assert_true(est(m, w).bucket[MF_B_SHARDING] <=
	    est(m, &model).bucket[MF_B_SHARDING]);
}

/* Blocks beside Llama's, small, with their architecture facts set. */
static const struct mf_model gemma2ish = {
	.hidden = 96,
	.layers = 3,
	.heads = 4,
	.kv_heads = 2,
	.head_dim = 48,
	.intermediate = 384,
	.vocab = 400,
	.tied_embeddings = 1,
	.norms_per_layer = 4,
	.block = MF_BLOCK_GEMMA,
	.attn_softcap = 1,
	.final_softcap = 1,
};

static const struct mf_model phi3ish = {
	.hidden = 80,
	.layers = 2,
	.heads = 5,
	.kv_heads = 5,
	.head_dim = 16,
	.intermediate = 224,
	.vocab = 300,
	.norms_per_layer = 2,
	.block = MF_BLOCK_PHI3,
};

static const struct mf_model mixtralish = {
	.hidden = 96,
	.layers = 2,
	.heads = 6,
	.kv_heads = 3,
	.head_dim = 16,
	.intermediate = 160,
	.vocab = 300,
	.experts = 5,
	.experts_per_tok = 2,
	.renorm_topk = 1,
	.norms_per_layer = 2,
	.block = MF_BLOCK_MIXTRAL,
};

static const struct mf_model qwen2moeish = {
	.hidden = 80,
	.layers = 2,
	.heads = 4,
	.kv_heads = 1,
	.head_dim = 20,
	.intermediate = 192,
	.vocab = 320,
	.experts = 8,
	.experts_per_tok = 2,
	.expert_intermediate = 64,
	.shared_intermediate = 160,
	.qkv_bias = 1,
	.norms_per_layer = 2,
	.block = MF_BLOCK_QWEN2MOE,
};

/*
 * The same for what design 14 and 15 add: every weights dtype (int4 with
 * two group sizes), with and without vllm (two block sizes), and parallel
 * layouts of tensor, pipeline and expert, for training and inference.
 */
static void
serving_formulas_match_bytes(const struct mf_model *const *models, size_t n)
{
	/* A release of each of serverVersion's families, and none. */
	static const int64_t versions[] = { 0, MF_VLLM_VERSION(0, 2, 5),
		MF_VLLM_VERSION(0, 2, 6), MF_VLLM_VERSION(0, 3, 0),
		MF_VLLM_VERSION(0, 4, 2), MF_VLLM_VERSION(0, 5, 1),
		MF_VLLM_VERSION(0, 7, 3), MF_VLLM_VERSION(0, 12, 0) };
	struct mf_workload w;

	for (size_t i = 0; i < n; i++)
		for (int v = 0; v < 6 * 2 * 2 * 4 * 2; v++) {
			int x = v;

			w = serving(3, 100);
			w.batched_tokens = 64;
			w.max_num_seqs = x % 5 == 0 ? 0 : 3;
			w.weights_dtype = (enum mf_weights_dtype)(x % 6),
			x /= 6;
			w.group_size = x % 2 ? 32 : 128, x /= 2;
			w.server = x % 2 ? MF_SERVER_VLLM : MF_SERVER_NONE;
			w.block_size = x % 2 ? 16 : 7, x /= 2;
			w.tensor = x % 2 ? 2 : 1;
			w.pipeline = x / 2 % 2 ? 2 : 1, x /= 4;
			w.expert = x % 2 ? 2 : 1;
			w.server_version = versions[v % NELEM(versions)];
			formulas_agree(models[i], &w);
			w.server_version = 0;
			/* The same layouts for training. */
			w.kind = MF_TRAINING;
			w.weights_dtype = MF_WD_DEFAULT;
			w.server = MF_SERVER_NONE;
			w.seq_len = 32;
			w.estimator = (enum mf_estimator)(v % 2);
			formulas_agree(models[i], &w);
			/* Design 19's layout fields and activation
			 * offloading, spread over the cases; s = 31 leaves a
			 * short last sequence-parallel shard. */
			w.sequence_parallel = v / 7 % 2;
			w.loss_parallel = v / 11 % 2;
			w.checkpointing = v / 5 % 3; /* none, full, op */
			w.ckpt_every = v / 23 % 2 ? 2 : 1;
			w.precision = (enum mf_precision)(v / 29 % 6);
			w.method = (enum mf_method)(v / 3 % 3);
			w.shard_gpus = v / 13 % 2 ? 2 : 1;
			w.reshard_after_forward = v / 17 % 2;
			w.seq_len = v / 19 % 2 ? 31 : 32;
			w.activation_offload = v / 31 % 2;
			if (mf_est_offload_refused(&w, NULL, 0))
				w.activation_offload = 0;
			w.shard_cpu_offload = v / 37 % 2;
			if (mf_est_shard_refused(&w, NULL, 0))
				w.shard_cpu_offload = 0;
			w.shard_units = (enum mf_shard_units)(v / 41 % 2);
			/* QLoRA is not sharded (mf_est_shard_refused). */
			if (mf_est_shard_refused(&w, NULL, 0))
				w.shard_gpus = 1;
			formulas_agree(models[i], &w);
			ends_below_model(models[i], &w);
		}
}

/*
 * Every bucket's formula evaluates to its bytes: both estimators, every
 * kind, method, optimizer, precision and attention, without
 * checkpointing, with it on every layer, on every third and per op, with
 * and without FSDP, micro-batch 1 and 3, with the optimizer in backward
 * where it is modelled, on every block.
 */
static void
test_formulas_match_bytes(void **state)
{
	const struct mf_model *models[] = { &llama8b, &tiny, &given_head_dim,
		&micro, &gemma2ish, &phi3ish, &mixtralish, &qwen2moeish };
	struct mf_workload w;
	size_t n = 0;

	(void)state;
	for (size_t i = 0; i < NELEM(models); i++)
		for (int v = 0; v < 2 * 2 * 3 * 4 * 6 * 3 * 4 * 2 * 2; v++) {
			int x = v;

			mf_workload_defaults(&w);
			w.estimator = (enum mf_estimator)(x % 2), x /= 2;
			w.kind = x % 2 ? MF_INFERENCE : MF_TRAINING, x /= 2;
			w.method = (enum mf_method)(x % 3), x /= 3;
			w.optimizer = (enum mf_optimizer)(x % 4), x /= 4;
			w.precision = (enum mf_precision)(x % 6), x /= 6;
			w.attention = (enum mf_attention)(x % 3), x /= 3;
			w.checkpointing = x % 4 == 3 ? MF_CKPT_OP :
			    x % 4                    ? MF_CKPT_FULL :
			                               MF_CKPT_NONE;
			w.ckpt_every = x % 4 == 2 ? 3 : 1, x /= 4;
			w.shard_gpus = x % 2 ? 4 : 1, x /= 2;
			w.micro_batch = x % 2 ? 3 : 1;
			w.seq_len = 64;
			w.concurrency = 4;
			w.context_len = 128;
			w.kv_dtype = (enum mf_kv_dtype)(v % 3);
			if (mf_est_shard_refused(&w, NULL, 0))
				w.shard_gpus = 1;
			formulas_agree(models[i], &w);
			/* The optimizer in backward, where it is modelled. */
			w.optimizer_in_backward = 1;
			if (!mf_est_oib_refused(&w, 1, NULL, 0))
				formulas_agree(models[i], &w);
			n++;
		}
	assert_int_equal(n, 8 * 13824);
	serving_formulas_match_bytes(models, NELEM(models));
}

/* h 64, V 10, one layer: a head wider than the few tokens of a step. */
static const struct mf_model widehead = {
	.hidden = 64,
	.layers = 1,
	.heads = 1,
	.kv_heads = 1,
	.head_dim = 64,
	.intermediate = 4,
	.vocab = 10,
	.norms_per_layer = 2,
};

/*
 * loss: chunked (design 19), torchtune's CEWithChunkedOutputLoss in C
 * pieces of q = ceil(s / C) tokens: what the loss keeps is the standard
 * loss's (logits), and the transient is the largest of the loss's
 * forward (every piece's 16-bit logits, 2V a token, and one piece's fp32
 * upcast, b x q x 4V), one piece's loss backward (b x q x 8V) and a
 * trained head's backward (two weight gradients and their sum, less the
 * gradient, (3 x 2 - g)Vh, the logits gradients of n - 2 pieces, the two
 * pieces' input gradients, less the saved log-softmax, 4V a token, freed
 * by then), beside the MLP's and the optimizer step's.
 */
static void
test_torch_chunked_loss(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e, standard;

	(void)state;
	w.estimator = MF_EST_PYTORCH;
	w.precision = MF_BF16_TRUE;
	standard = est(&llama8b, &w);
	w.loss = MF_LOSS_CHUNKED;
	w.loss_chunks = 8;
	/*
	 * Llama 3.1 8B, s 4096, b 1, 8 pieces of 512 tokens, bf16-true with
	 * AdamW.  logits as the standard loss's, 4096 x (8h + 4V + 20) =
	 * 2,235,645,952.  Loss forward 4096 x 2V + 512 x 4V = 1,313,341,440;
	 * a piece's backward 512 x 8V = 525,336,576; the head's backward 4Vh
	 * (2,101,346,304) + 6 x 512 x 2V (788,004,864) + 1,024 x 2h
	 * (8,388,608) - 4096 x 4V (2,101,346,304) = 796,393,472; the MLP's
	 * 4096 x 6I = 352,321,536; the step's 4 bytes of V x h:
	 * 2,101,346,304, the largest, where the standard loss's 8Vs is
	 * 4,202,692,608.  Per GPU 2P + 2P + 4P + 26,326,597,632 +
	 * 2,235,645,952 + 2,101,346,304 = 94,905,679,872.
	 */
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(2235645952));
	assert_int_equal(e.bucket[MF_B_LOGITS], standard.bucket[MF_B_LOGITS]);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS],
	    standard.bucket[MF_B_ACTIVATIONS]);
	assert_int_equal(standard.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(2101346304));
	assert_int_equal(e.per_gpu, INT64_C(94905679872));
	/* SGD on bf16 weights steps without temporaries: the loss's forward,
	 * 1,313,341,440. */
	w.optimizer = MF_SGD;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(1313341440));
	/* One piece: its forward 4096 x (2V + 4V) = 3,152,019,456, its
	 * backward the standard's 4096 x 8V = 4,202,692,608. */
	w.loss_chunks = 1;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
	/*
	 * s 512, 8 pieces of 64: forward 512 x 2V + 64 x 4V = 164,167,680;
	 * the head's 4Vh + 6 x 64 x 2V (98,500,608) + 128 x 2h (1,048,576)
	 * - 512 x 4V (262,668,288) = 1,938,227,200, the largest.
	 */
	w.loss_chunks = 8;
	w.seq_len = 512;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(1938227200));
	/* LoRA's head is frozen: bf16 with AdamW, s 4096, the forward's
	 * 1,313,341,440 (the adapters' step is far smaller). */
	w = ref_workload();
	w.estimator = MF_EST_PYTORCH;
	w.method = MF_LORA;
	w.loss = MF_LOSS_CHUNKED;
	w.loss_chunks = 8;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(1313341440));
	/*
	 * bf16-mixed, b 2, s 4, 4 pieces of one token (n 4, the last one
	 * token), SGD (no step temporaries), h 64, V 10: forward 8 x 2V + 2
	 * x 4V = 240; a piece's backward 2 x 8V = 160; the head's: the
	 * 16-bit weight gradients less the fp32 gradient, (6 - 4)Vh = 1,280,
	 * the logits gradients of 2 x 2 tokens, 2V each (80), the first
	 * piece's fp32 input gradient beside its freed 16-bit cast, 2 x 2h
	 * (256), less 8 x 4V (320): 1,296; the MLP's 8 x 6I = 192.
	 */
	mf_workload_defaults(&w);
	w.seq_len = 4;
	w.micro_batch = 2;
	w.precision = MF_BF16_MIXED;
	w.optimizer = MF_SGD;
	w.loss = MF_LOSS_CHUNKED;
	w.loss_chunks = 4;
	e = est(&widehead, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], 1296);
	/* fp32, b 1: (12 - 4)Vh = 5,120 + 2 x 1 x 4V (80) + the two pieces'
	 * input gradients, (1 + 1) x 4h (512), less 4 x 4V (160): 5,552. */
	w.micro_batch = 1;
	w.precision = MF_FP32;
	e = est(&widehead, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], 5552);
}

/*
 * loss: chunked with compile: true (design 22), the pieces' cross-entropy
 * compiled as torchtune's compile_loss compiles it (est_loss.c,
 * tests/torch/compile_loss.py): each piece keeps its logits in the compute
 * dtype (2V a token in bf16) and two fp32 values a token where eager keeps
 * the fp32 log-softmax (4V); the loss's forward holds nothing beyond them,
 * a piece's backward its logits gradient (b x q x 2V), and a trained
 * head's backward frees the pieces' logits (2V a token) by the second sum.
 */
static void
test_torch_compiled_chunked_loss(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.estimator = MF_EST_PYTORCH;
	w.precision = MF_BF16_TRUE;
	w.optimizer = MF_SGD;
	w.loss = MF_LOSS_CHUNKED;
	w.loss_chunks = 8;
	w.compile = 1;
	assert_false(mf_est_compile_refused(&llama8b, &w, NULL, 0));
	/*
	 * Llama 3.1 8B, s 4096, b 1, 8 pieces of 512 tokens, bf16-true, SGD
	 * (no step temporaries).  logits 4096 x (8h + 2V + 28) = 4096 x
	 * 289,308 = 1,185,005,568 (eager's 4096 x (8h + 4V + 20) =
	 * 2,235,645,952).  A piece's backward 512 x 2V = 131,334,144; the
	 * head's backward 4Vh (2,101,346,304) + 6 x 512 x 2V (788,004,864) +
	 * 1,024 x 2h (8,388,608) - 4096 x 2V (1,050,673,152) =
	 * 1,847,066,624, the largest (eager's forward 1,313,341,440 is gone).
	 */
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(1185005568));
	assert_string_equal(e.formula[MF_B_LOGITS], "s x b x (8h + 2V + 28)");
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(1847066624));
	assert_non_null(strstr(e.formula[MF_B_TRANSIENT],
	    "max(b x ceil(s / 8) x V x 2, 4Vh + b x 6 x ceil(s / 8) x V x 2 + "
	    "(s - 6 x ceil(s / 8)) x 2h - s x b x V x 2, "));
	/* One piece: no head's sum, its backward 4096 x 2V =
	 * 1,050,673,152. */
	w.loss_chunks = 1;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(1050673152));
	/*
	 * fp32: the pieces' logits are fp32 already, as eager's
	 * log-softmax: logits 4096 x (12h + 4V + 28) = 2,302,787,584, eager's
	 * and 8 a token; the head's backward
	 * (12 - 4)Vh (4,202,692,608) + 6 x 512 x 4V (1,576,009,728) + 1,024 x
	 * 4h (16,777,216) - 4096 x 4V (2,101,346,304) = 3,694,133,248.
	 */
	w.precision = MF_FP32;
	w.loss_chunks = 8;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(2302787584));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(3694133248));
	/* LoRA (a frozen head), bf16-true: logits 4096 x (4h + 2V + 20) =
	 * 1,117,863,936; the loss's piece 512 x 2V = 131,334,144 is below
	 * the MLP's 4096 x 6I = 352,321,536. */
	w.precision = MF_BF16_TRUE;
	w.method = MF_LORA;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(1117863936));
	assert_non_null(
	    strstr(e.formula[MF_B_TRANSIENT], "max(b x ceil(s / 8) x V x 2, "));
}

/*
 * lossUpcast: output (design 22), LitGPT's loops under Lightning Fabric
 * (est_loss.c): the logits bucket keeps the standard loss's and the
 * model's output held in fp32 (4V a token) and, for LoRA under autocast,
 * a 16-bit copy of the frozen head a piece of 128 tokens beyond the
 * weights bucket's; the loss's transient is the largest of the next
 * step's 16-bit output (el x V a token), a piece's fp32 loss gradients
 * (8V a row) and, in full training, the gathered gradients beside the
 * slice's zeros (4V a token).
 */
static void
test_torch_output_upcast(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e, standard;

	(void)state;
	w.estimator = MF_EST_PYTORCH;
	w.precision = MF_BF16_TRUE;
	standard = est(&llama8b, &w);
	w.loss_upcast = MF_UPCAST_OUTPUT;
	/*
	 * Llama 3.1 8B, s 4096, b 1, full, bf16-true, AdamW: logits the
	 * standard's 2,235,645,952 + 4096 x 4V (2,101,346,304) =
	 * 4,336,992,256; the loss's max(4096 x 2V = 1,050,673,152, 4096 x
	 * 4V = 2,101,346,304, 128 x 8V = 131,334,144) = 2,101,346,304, as
	 * the step's 4 bytes of V x h; per GPU the chunked loss's
	 * 94,905,679,872 (same transient, logits 2,235,645,952) +
	 * 2,101,346,304 = 97,007,026,176.
	 */
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(4336992256));
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS],
	    standard.bucket[MF_B_ACTIVATIONS]);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(2101346304));
	assert_int_equal(e.per_gpu, INT64_C(97007026176));
	/* SGD: no step temporaries; still 4096 x 4V. */
	w.optimizer = MF_SGD;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(2101346304));
	/* LoRA, bf16 (no autocast): logits + 4096 x 4V; the next step's
	 * 16-bit output, 4096 x 2V = 1,050,673,152, above a piece's 128 x
	 * 8V, the MLP's and LoRA's forward (4096 x 14336 x 10 =
	 * 587,202,560). */
	w = ref_workload();
	w.estimator = MF_EST_PYTORCH;
	w.method = MF_LORA;
	standard = est(&llama8b, &w);
	w.loss_upcast = MF_UPCAST_OUTPUT;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_LOGITS] - standard.bucket[MF_B_LOGITS],
	    INT64_C(2101346304));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(1050673152));
	/* bf16-mixed (LitGPT's LoRA default): 32 pieces, 31 copies of the
	 * head beyond the weights bucket's, 31 x 2Vh = 32,570,867,712. */
	w.precision = MF_BF16_MIXED;
	w.loss_upcast = MF_UPCAST_LOSS;
	standard = est(&llama8b, &w);
	w.loss_upcast = MF_UPCAST_OUTPUT;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_LOGITS] - standard.bucket[MF_B_LOGITS],
	    INT64_C(2101346304) + INT64_C(32570867712));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(1050673152));
	/*
	 * Few tokens: h 64, V 10, s 4, b 2, full fp32 with SGD: no 16-bit
	 * output; a piece is the 8 rows, 8 x 8V = 640, above 8 x 4V (320)
	 * and the MLP's 8 x 12I (384).  LoRA: the same 640.
	 */
	mf_workload_defaults(&w);
	w.seq_len = 4;
	w.micro_batch = 2;
	w.precision = MF_FP32;
	w.optimizer = MF_SGD;
	w.loss_upcast = MF_UPCAST_OUTPUT;
	e = est(&widehead, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], 640);
	/* The post's arithmetic counts the standard loss whatever w says. */
	w.estimator = MF_EST_POST;
	assert_false(mf_est_output_upcast(&w));
}

/* lossUpcast: output's formulas evaluate to their bytes (every
 * precision, method and optimizer, s 31, 64 and 300, b 1 and 3, with and
 * without FSDP), and it is refused on Gemma-2's final soft-capping and
 * under tensor or pipeline parallel. */
static void
test_output_upcast_formulas(void **state)
{
	const struct mf_model *models[] = { &llama8b, &tiny, &given_head_dim,
		&micro, &phi3ish, &mixtralish, &qwen2moeish, &widehead };
	const int64_t seqs[] = { 31, 64, 300 };
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	for (size_t i = 0; i < NELEM(models); i++)
		for (int v = 0; v < 6 * 3 * 4 * 3 * 2 * 2; v++) {
			int x = v;

			mf_workload_defaults(&w);
			w.loss_upcast = MF_UPCAST_OUTPUT;
			w.precision = (enum mf_precision)(x % 6), x /= 6;
			w.method = (enum mf_method)(x % 3), x /= 3;
			w.optimizer = (enum mf_optimizer)(x % 4), x /= 4;
			w.seq_len = seqs[x % 3], x /= 3;
			w.micro_batch = x % 2 ? 3 : 1, x /= 2;
			w.shard_gpus = x % 2 ? 4 : 1;
			if (mf_est_shard_refused(&w, NULL, 0))
				w.shard_gpus = 1;
			formulas_agree(models[i], &w);
		}
	mf_workload_defaults(&w);
	w.seq_len = 64;
	w.loss_upcast = MF_UPCAST_OUTPUT;
	assert_int_equal(mf_est_compute(&gemma2ish, &w, &e), MF_EINVAL);
	w.tensor = 2;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w.tensor = 1;
	w.pipeline = 2;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w.pipeline = 1;
	w.loss_upcast = (enum mf_loss_upcast)2;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
}

/*
 * loss's formulas (chunked or fused) evaluate to their bytes: every
 * precision, method and optimizer, 1, 3 and 8 pieces, sdpa and eager, s 31
 * and 64, b 1 and 3, with and without FSDP, on every block that takes it;
 * and it is refused on Gemma-2's final soft-capping and under tensor or
 * pipeline parallel (mf_est_loss_refused).
 */
static void
loss_formulas_agree(enum mf_loss loss)
{
	const struct mf_model *models[] = { &llama8b, &tiny, &given_head_dim,
		&micro, &phi3ish, &mixtralish, &qwen2moeish, &widehead };
	const int64_t chunks[] = { 1, 3, 8 };
	struct mf_workload w;
	struct mf_estimate e;

	for (size_t i = 0; i < NELEM(models); i++)
		for (int v = 0; v < 6 * 3 * 3 * 3 * 2 * 2 * 2 * 2; v++) {
			int x = v;

			mf_workload_defaults(&w);
			w.loss = loss;
			w.precision = (enum mf_precision)(x % 6), x /= 6;
			w.method = (enum mf_method)(x % 3), x /= 3;
			w.optimizer = (enum mf_optimizer)(x % 4), x /= 4;
			w.loss_chunks = chunks[x % 3], x /= 3;
			w.attention = x % 2 ? MF_EAGER : MF_SDPA, x /= 2;
			w.seq_len = x % 2 ? 31 : 64, x /= 2;
			w.micro_batch = x % 2 ? 3 : 1, x /= 2;
			w.shard_gpus = x % 2 ? 4 : 1;
			if (mf_est_shard_refused(&w, NULL, 0))
				w.shard_gpus = 1;
			formulas_agree(models[i], &w);
			ends_below_model(models[i], &w);
			/* compiled, where it is modelled (the loss's pieces
			 * compiled, est_loss.c) */
			w.compile = 1;
			if (!mf_est_compile_refused(models[i], &w, NULL, 0)) {
				formulas_agree(models[i], &w);
				ends_below_model(models[i], &w);
			}
		}
	mf_workload_defaults(&w);
	w.seq_len = 64;
	w.loss = loss;
	assert_int_equal(mf_est_compute(&gemma2ish, &w, &e), MF_EINVAL);
	w.tensor = 2;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w.tensor = 1;
	w.pipeline = 2;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
}

/* The chunked loss's formulas, and a piece count or loss out of range. */
static void
test_chunked_formulas(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	loss_formulas_agree(MF_LOSS_CHUNKED);
	mf_workload_defaults(&w);
	w.seq_len = 64;
	w.loss = MF_LOSS_CHUNKED;
	w.loss_chunks = 0;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w.loss_chunks = 8;
	w.loss = (enum mf_loss)3;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
}

/*
 * loss: fused (design 19), Liger-Kernel's fused linear cross-entropy
 * (est_loss.c): the logits bucket keeps the final norm's own and the
 * input's gradient (eh x h a token), no logits and no labels; the loss's
 * moment holds the norm's output and the labels' copies, one chunk's
 * logits (c = next_power_of_2(ceil(s x b / ceil(V / h))) tokens) and, for
 * a trained head, the portable path's product and its fp32 copy (el + 4
 * of Vh); a layer's backward has the residual stream's gradient beside it.
 */
static void
test_torch_fused_loss(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e, standard;

	(void)state;
	w.estimator = MF_EST_PYTORCH;
	w.precision = MF_BF16_TRUE;
	standard = est(&llama8b, &w);
	w.loss = MF_LOSS_FUSED;
	/*
	 * Llama 3.1 8B, s 4096, b 1, bf16-true with AdamW.  logits: the
	 * norm's x in fp32 and normalised x (6h), the input's gradient (2h),
	 * token ids and rsqrt (12): 4096 x (8h + 12) = 134,266,880.  Chunks
	 * of 128 tokens (ceil(V / h) = 32, 4096 / 32).  The loss's moment:
	 * 4096 x (2h + 5) = 33,574,912, the padded labels 8 x 4097 = 32,776,
	 * a chunk's logits 128 x 2V = 32,833,536 and 6Vh = 3,152,019,456:
	 * 3,218,460,680, above the MLP's 4096 x (6I + 2h) = 385,875,968 and
	 * the step's 4Vh = 2,101,346,304.  Per GPU 8P (64,242,089,984) +
	 * 26,326,597,632 + 134,266,880 + 3,218,460,680 = 93,921,415,176.
	 */
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS],
	    standard.bucket[MF_B_ACTIVATIONS]);
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(134266880));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(3218460680));
	assert_int_equal(e.per_gpu, INT64_C(93921415176));
	/*
	 * fp32 with SGD (no step temporaries): logits 4096 x (8h + 4h + 12)
	 * = 201,375,744; the moment 4096 x (4h + 5) + 32,776 + 128 x 4V
	 * (65,667,072) + 4Vh (2,101,346,304) = 2,234,175,496, the largest.
	 */
	w.precision = MF_FP32;
	w.optimizer = MF_SGD;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(201375744));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(2234175496));
	/*
	 * LoRA, bf16, b 2: the head is frozen.  logits 8192 x (4h + 2h + 4)
	 * = 201,359,360; chunks of 256 tokens; the moment 8192 x (2h + 5) +
	 * 8 x 2 x 4097 + 8 x 8192 + 256 x 2V + 256 x 2h = 135,045,136; the
	 * LoRA forward on the widest target (I) beside the residual
	 * gradient, 8192 x (10I + 2h) = 1,241,513,984, the largest.
	 */
	w = ref_workload();
	w.estimator = MF_EST_PYTORCH;
	w.method = MF_LORA;
	w.micro_batch = 2;
	w.loss = MF_LOSS_FUSED;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(201359360));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(1241513984));
}

/* The fused loss's formulas (lossChunks changes nothing for it). */
static void
test_fused_formulas(void **state)
{
	(void)state;
	loss_formulas_agree(MF_LOSS_FUSED);
}

/*
 * LoRA's forward (est_pytorch.c, lora_forward): PEFT's adapter on a
 * frozen linear holds the base's output (e a value), lora_B's fp32 output
 * and its product with the scaling (4 each), (e + 8) bytes a value of the
 * widest output of a targeted linear, a candidate of transient.  Phi-3's
 * fused gate_up (2I) makes it the largest with a small vocabulary.
 */
static void
test_torch_lora_forward(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 96;
	w.checkpointing = MF_CKPT_FULL;
	w.method = MF_LORA;
	w.lora_rank = 4;
	w.lora_targets = MF_LORA_ALL_LINEAR;
	/*
	 * phi3ish, r 4: qkv_proj 80 + 240, o 80 + 80, gate_up 80 + 448,
	 * down 224 + 80: 1,312 a layer, 2 layers, T = 10,496; 16T =
	 * 167,936.  transient: the loss's 96 x 300 x 8 = 230,400, the MLP's
	 * 96 x 6 x 224 = 129,024, LoRA's forward on gate_up 96 x 448 x 10
	 * = 430,080, the step's on gate_up's B 4 x 448 x 4 = 7,168.
	 */
	e = est(&phi3ish, &w);
	assert_int_equal(e.trainable, 10496);
	assert_int_equal(e.bucket[MF_B_ADAPTERS], 167936);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], 430080);
	assert_string_equal(e.formula[MF_B_TRANSIENT],
	    "max(s x b x V x 8, s x b x 6I, s x b x Omax x 10, Pmax x 4)");
	/*
	 * Attention only, fp32: T = 2 x 4 x (320 + 160) = 3,840; the widest
	 * output is qkv_proj's 240: 96 x 240 x 12 = 276,480, above the
	 * loss's 230,400 and the MLP's 96 x 12 x 224 = 258,048.
	 */
	w.lora_targets = MF_LORA_ATTENTION;
	w.precision = MF_FP32;
	e = est(&phi3ish, &w);
	assert_int_equal(e.trainable, 3840);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], 276480);
	/* Full training has no adapter. */
	w.method = MF_FULL;
	e = est(&phi3ish, &w);
	assert_string_equal(e.formula[MF_B_TRANSIENT],
	    "max(s x b x V x 8, s x b x 12I, Pmax x 8)");
	/*
	 * Llama 3.1 8B, r 16 all-linear, s 4096: gate's and up's 4096 x
	 * 14,336 x 10 = 587,202,560 stays under the loss's 4096 x 128,256 x
	 * 8 = 4,202,692,608.
	 */
	mf_workload_defaults(&w);
	w.seq_len = 4096;
	w.checkpointing = MF_CKPT_FULL;
	w.method = MF_LORA;
	w.lora_rank = 16;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
}

/*
 * LoRA's targets as a list of module names (design 22): PEFT's and
 * torchtune's default for Llama, [q_proj, v_proj], on Llama 3.1 8B, r 16,
 * s 4096, b 1, bf16, no checkpointing.
 */
static void
test_torch_lora_list(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 4096;
	w.method = MF_LORA;
	w.lora_rank = 16;
	w.lora_targets = MF_LORA_LIST;
	w.lora_modules = MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_V);
	/* T = 32 x 16 x ((4,096 + 4,096) + (4,096 + 1,024)) = 6,815,744
	 * (PEFT's print_trainable_parameters for Llama 3 8B, q and v, r 16);
	 * fp32 weight, gradient and two moments: 16T = 109,051,904. */
	e = est(&llama8b, &w);
	assert_int_equal(e.trainable, 6815744);
	assert_int_equal(e.bucket[MF_B_ADAPTERS], 109051904);
	/*
	 * A layer a token: the norms 8h + 8, sdpa's q and output 4ad, k and
	 * v 4kvd, the logsumexp 4a, the frozen MLP 6I, q's and v's fp32 input
	 * copies 8h and lora_A's outputs 8r: 65,536 + 8 + 16,384 + 4,096 +
	 * 128 + 86,016 + 32,768 + 128 = 172,296 (in h: 8h + 8h = 16h).  L
	 * = 32: 5,513,472, less the first layer's first norm (4h + 4 =
	 * 16,388): 5,497,084 x 4,096 = 22,516,056,064, and RoPE's cos and
	 * sin 4,096 x 4 x 128 = 2,097,152: 22,518,153,216.
	 */
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(22518153216));
	assert_string_equal(e.formula[MF_B_ACTIVATIONS],
	    "s x b x (L x (16h + 4ad + 4kvd + 4a + 6I + 8r + 8) - 4h - 4) + s x 4d");
	/*
	 * Eager: q 2ad, the repeated k and v 4ad, the scores 6as (fp32
	 * softmax and its bf16 cast); the first layer also keeps no q,
	 * which only k's gradient needs (2ad = 8,192): 962,696 x 32 -
	 * 24,580 = 30,781,692 a token, x 4,096 + 2,097,152 =
	 * 126,083,907,584.
	 */
	w.attention = MF_EAGER;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(126083907584));
	assert_string_equal(e.formula[MF_B_ACTIVATIONS],
	    "s x b x (L x (16h + 6ad + 6as + 6I + 8r + 8) - (4h + 2ad + 4)) + s x 4d");
	/* Phi-3's fused names: qkv_proj 80 + 240 and down_proj 224 + 80,
	 * 624 a layer, 2 layers, r 4: T = 4,992. */
	w.lora_rank = 4;
	w.lora_modules = MF_LORA_BIT(MF_LIN_QKV) | MF_LORA_BIT(MF_LIN_DOWN);
	assert_int_equal(est(&phi3ish, &w).trainable, 4992);
}

/*
 * lora.dtype bf16 (design 22), as torchtune keeps a bf16 model's adapters:
 * weights, gradients and AdamW's moments 2 bytes each, no master copy;
 * the adapters take their bf16 inputs as they are, so q's and v's share
 * the norm's output (2h once) and lora_B keeps lora_A's bf16 output (2r
 * each).  Llama 3.1 8B, [q_proj, v_proj], r 16, s 4096, bf16, sdpa.
 */
static void
test_torch_lora_dtype(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	mf_workload_defaults(&w);
	assert_int_equal(w.lora_dtype, MF_LORA_FP32);
	w.seq_len = 4096;
	w.method = MF_LORA;
	w.lora_rank = 16;
	w.lora_targets = MF_LORA_LIST;
	w.lora_modules = MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_V);
	w.lora_dtype = MF_LORA_BF16;
	/* 8T = 8 x 6,815,744 = 54,525,952. */
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ADAPTERS], 54525952);
	assert_string_equal(e.formula[MF_B_ADAPTERS], "T x 8");
	/*
	 * A layer a token: 8h + 8 (norms), 4ad + 4kvd + 4a (sdpa), 6I (the
	 * frozen MLP), 2h (q's and v's one input), 4r: 10h = 40,960, + 8 +
	 * 16,384 + 4,096 + 128 + 86,016 + 64 = 147,656.  x 32 = 4,724,992,
	 * less the first layer's first norm, 4h + 4 = 16,388:
	 * 4,708,604 x 4,096 = 19,286,441,984, + 2,097,152 (cos, sin):
	 * 19,288,539,136.
	 */
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(19288539136));
	assert_string_equal(e.formula[MF_B_ACTIVATIONS],
	    "s x b x (L x (10h + 4ad + 4kvd + 4a + 6I + 4r + 8) - 4h - 4) + s x 4d");
	/* The adapter's forward: base output, lora_B's output and its
	 * product with the scaling, 2 bytes each: Omax x 6. */
	assert_non_null(strstr(e.formula[MF_B_TRANSIENT], "Omax x 6"));
	/* 8-bit Adam: 2 + 2 + two 8-bit moments; SGD: weight, gradient and
	 * momentum, 2 each. */
	w.optimizer = MF_ADAM8BIT;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_ADAPTERS], 6 * 6815744);
	w.optimizer = MF_SGD;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_ADAPTERS], 6 * 6815744);
}

/*
 * qlora.kbitPrep (design 22): PEFT's prepare_model_for_kbit_training casts
 * Llama 3.1 8B's parameters that are not 4-bit to fp32: embeddings and
 * lm_head 2 x 128,256 x 4096 = 1,050,673,152, norms 65 x 4096 = 266,240;
 * P - Pq = 1,050,939,392, 2 bytes more each: 2,101,878,784.  The layers
 * and the loss then keep what fp32 activations keep.
 */
static void
test_torch_kbit_prep(void **state)
{
	struct mf_workload w, f32;
	struct mf_estimate plain, prep, fp32;

	(void)state;
	mf_workload_defaults(&w);
	assert_int_equal(w.qlora_kbit_prep, 0);
	w.seq_len = 1024;
	w.method = MF_QLORA;
	w.checkpointing = MF_CKPT_FULL;
	plain = est(&llama8b, &w);
	w.qlora_kbit_prep = 1;
	prep = est(&llama8b, &w);
	assert_int_equal(prep.bucket[MF_B_WEIGHTS] - plain.bucket[MF_B_WEIGHTS],
	    INT64_C(2101878784));
	assert_non_null(strstr(prep.formula[MF_B_WEIGHTS], " + (P - Pq) x 2"));
	f32 = w;
	f32.qlora_kbit_prep = 0;
	f32.precision = MF_FP32;
	fp32 = est(&llama8b, &f32);
	assert_int_equal(prep.bucket[MF_B_ACTIVATIONS],
	    fp32.bucket[MF_B_ACTIVATIONS]);
	assert_int_equal(prep.bucket[MF_B_LOGITS], fp32.bucket[MF_B_LOGITS]);
	assert_true(
	    prep.bucket[MF_B_ACTIVATIONS] > plain.bucket[MF_B_ACTIVATIONS]);
}

/* w as Llama's PEFT default under bf16-true: method on q_proj and v_proj
 * with bf16 adapters, s = 1024, b = 1. */
static void
qv_bf16(struct mf_workload *w, enum mf_method method)
{
	w->seq_len = 1024;
	w->method = method;
	w->precision = MF_BF16_TRUE;
	w->lora_targets = MF_LORA_LIST;
	w->lora_modules = MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_V);
	w->lora_dtype = MF_LORA_BF16;
}

/* w's activations on Llama 3.1 8B. */
static int64_t
activations(const struct mf_workload *w)
{
	return est(&llama8b, w).bucket[MF_B_ACTIVATIONS];
}

/*
 * qlora.keepsInput (design 22): bitsandbytes 0.42.0's 4-bit matmul holds
 * each quantized linear's input to backward.  Llama 3.1 8B, QLoRA on q_proj
 * and v_proj, bf16-true, s = 1024, b = 1.  With bf16 adapters the first
 * norm's output is the adapters' own input, already kept; the second
 * norm's (2h = 8,192 bytes a token) and down_proj's input (2I = 28,672)
 * are new: 36,864 x 32 layers x 1,024 tokens = 1,207,959,552.  With fp32
 * adapters the adapters keep a cast copy, so the first norm's output is
 * new too (2h), but in the first layer, where it needs no gradient:
 * (45,056 x 32 - 8,192) x 1,024 = 1,468,006,400.
 */
static void
test_torch_keeps_input(void **state)
{
	struct mf_workload w;
	struct mf_estimate keep;
	int64_t drop;

	(void)state;
	mf_workload_defaults(&w);
	assert_int_equal(w.qlora_keeps_input, 0);
	qv_bf16(&w, MF_QLORA);
	drop = activations(&w);
	w.qlora_keeps_input = 1;
	keep = est(&llama8b, &w);
	assert_int_equal(keep.bucket[MF_B_ACTIVATIONS] - drop,
	    INT64_C(1207959552));
	assert_non_null(strstr(keep.formula[MF_B_ACTIVATIONS], "12h"));
	assert_non_null(strstr(keep.formula[MF_B_ACTIVATIONS], "8I"));
	w.lora_dtype = MF_LORA_FP32;
	keep = est(&llama8b, &w);
	w.qlora_keeps_input = 0;
	assert_int_equal(keep.bucket[MF_B_ACTIVATIONS] - activations(&w),
	    INT64_C(1468006400));
	/* A method other than QLoRA has no 4-bit matmul. */
	w.method = MF_LORA;
	drop = activations(&w);
	w.qlora_keeps_input = 1;
	assert_int_equal(activations(&w), drop);
}

/*
 * lora.dropout (design 22): each adapter keeps its dropped input in its
 * dtype and a one-byte mask.  Llama 3.1 8B, LoRA on q_proj and v_proj,
 * bf16-true with bf16 adapters, s = 1024, b = 1: without dropout the two
 * adapters share the norm's output (2h); with it each keeps 2h + h, 6h:
 * 4h = 16,384 bytes a token a layer more.  The first layer keeps no mask
 * (its input needs no gradient): (16,384 x 32 - 8,192) x 1,024 =
 * 528,482,304.  With fp32 adapters each already keeps its cast (4h), which
 * dropout's output replaces: the two masks alone, 2h = 8,192 bytes,
 * (8,192 x 32 - 8,192) x 1,024 = 260,046,848.
 */
static void
test_torch_lora_dropout(void **state)
{
	struct mf_workload w;
	int64_t plain;

	(void)state;
	mf_workload_defaults(&w);
	assert_true(w.lora_dropout == 0);
	qv_bf16(&w, MF_LORA);
	plain = activations(&w);
	w.lora_dropout = 0.05;
	assert_int_equal(activations(&w) - plain, INT64_C(528482304));
	w.lora_dtype = MF_LORA_FP32;
	plain = activations(&w);
	w.lora_dropout = 0;
	assert_int_equal(plain - activations(&w), INT64_C(260046848));
}

/*
 * The loading moment (design 22, est_load.c): Llama 3.1 8B, QLoRA with
 * kbitPrep on PEFT's default targets for Llama (q_proj, v_proj, r 16),
 * s = 256, b = 1, checkpointing (examples/llama-8b-qlora-loading.yaml).
 * PEFT casts lm_head last: the prepared weights, 7,804,418,944
 * (test_torch_kbit_prep's 5,702,540,160 + 2,101,878,784), and lm_head's
 * 16-bit original, 128,256 x 4096 x 2 = 1,050,673,152: 8,855,092,096.
 * Quantizing the largest linear (gate_proj, 14,336 x 4096 = 58,720,256
 * weights) beside the 16-bit kept parameters holds 5,702,540,160 +
 * 117,440,512 + 917,504 x 8 = 5,827,320,704, less.  The step holds the
 * weights, the adapters (32 x 16 x (4096 + 4096 + 4096 + 1024) =
 * 6,815,744 weights, 16 bytes each: 109,051,904), activations, logits and
 * transient; the loading bucket is what the cast needs beyond them, and
 * perGpuBytes the cast's 8,855,092,096.  At s = 4096 the step is the
 * peak, and the bucket is 0.
 */
static void
test_torch_loading(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;
	int64_t step = 0;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 256;
	w.method = MF_QLORA;
	w.qlora_kbit_prep = 1;
	w.checkpointing = MF_CKPT_FULL;
	w.lora_targets = MF_LORA_LIST;
	w.lora_modules = MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_V);
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(7804418944));
	assert_int_equal(e.bucket[MF_B_ADAPTERS], INT64_C(109051904));
	for (int b = 0; b < MF_B_COUNT; b++)
		if (b != MF_B_LOADING && mf_est_counted((enum mf_bucket)b))
			step += e.bucket[b];
	assert_true(step < INT64_C(8855092096));
	assert_int_equal(e.per_gpu, INT64_C(8855092096));
	assert_int_equal(e.bucket[MF_B_LOADING], INT64_C(8855092096) - step);
	assert_int_equal(e.total, e.per_gpu);
	assert_int_equal(mf_est_peak_moment(&e), MF_PEAK_LOADING);
	assert_string_equal(e.formula[MF_B_LOADING],
	    "max(weights - (P - Pq) x 2 + Qmax x 2 + ceil(Qmax / 64) x 8, weights + Xmax x 2) - step");
	/* Without kbitPrep only quantizing is loading's, which the step's
	 * weights and transient cover. */
	w.qlora_kbit_prep = 0;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_LOADING], 0);
	/* The long sequence: the step is the peak. */
	w.qlora_kbit_prep = 1;
	w.seq_len = 4096;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_LOADING], 0);
	assert_int_equal(mf_est_peak_moment(&e), MF_PEAK_STEP);
	/* The post's arithmetic has no loading. */
	w.seq_len = 256;
	w.estimator = MF_EST_POST;
	assert_int_equal(est(&llama8b, &w).bucket[MF_B_LOADING], 0);
}

/* Terms with a negative coef: written " - cS", subtracted from the sum,
 * and a sum the negatives outweigh is 0. */
static void
test_terms_signed(void **state)
{
	struct mf_terms t = { 0 };
	char buf[MF_FORMULA_MAX];
	struct mf_text f;

	(void)state;
	mf_term(&t, 20, "h", 4096);
	mf_term(&t, -2, "I", 14336);
	mf_term(&t, 8, "", 1);
	mf_text_init(&f, buf);
	mf_text_terms(&f, &t);
	assert_string_equal(buf, "20h - 2I + 8");
	/* 81,920 - 28,672 + 8 */
	assert_int_equal(mf_terms_bytes(&t), 53256);
	mf_term(&t, -30, "h", 4096);
	mf_text_init(&f, buf);
	mf_text_terms(&f, &t);
	assert_string_equal(buf, "-10h - 2I + 8");
	assert_int_equal(mf_terms_bytes(&t), 0);
}

/*
 * torchtune's load (qlora.quantizer torchao): the model built whole, its
 * adapters too, and torchao's to_nf4 of the largest linear, gate_proj's
 * Qmax = 4096 x 14336 = 58,720,256 weights:
 *   Qmax x 5                   293,601,280
 *   ceil(Qmax / 64) x 3          2,752,512
 *   ceil(Qmax / 16384) x 2           7,168
 *   min(Qmax, 2^20) x 64        67,108,864
 *   + 34                                34
 *                               363,469,858
 * beside the weights without kbitPrep (7,804,418,944 less the fp32 half
 * of P - Pq = 1,050,939,392: 5,702,540,160) and the fp32 adapters'
 * weights (6,815,744 x 4 = 27,262,976): 6,093,272,994.  On 16 tokens that
 * is under the step, whose transient is torchao's eager dequantization
 * of the same weight (est_transient.c):
 *   Qmax x 14                  822,083,584
 *   ceil(Qmax / 64) x 2          1,835,008
 *                              823,918,592
 * beside the weights, the adapters (6,815,744 x 16 = 109,051,904), the
 * activations (6,959,360) and the logits (8,470,720): 6,650,940,736.
 * bitsandbytes' loading moment is under its step too.
 */
static void
test_torch_loading_torchao(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 16;
	w.method = MF_QLORA;
	w.checkpointing = MF_CKPT_FULL;
	w.lora_targets = MF_LORA_LIST;
	w.lora_modules = MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_V);
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(5702540160));
	assert_int_equal(e.trainable, INT64_C(6815744));
	assert_int_equal(e.bucket[MF_B_LOADING], 0);
	w.qlora_quantizer = MF_QZ_TORCHAO;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(823918592));
	assert_int_equal(e.per_gpu, INT64_C(6650940736));
	assert_int_equal(e.bucket[MF_B_LOADING], 0);
	assert_int_equal(mf_est_peak_moment(&e), MF_PEAK_STEP);
}

/*
 * Compiled, torchtune's QLoRA base (qlora.quantizer torchao) saves each
 * layer's dequantized weights, 2 bytes each, where bitsandbytes' saves
 * none (est_pytorch.c, nf4_compiled).  Llama 3.1 8B's layer:
 *   q_proj, o_proj  4096 x 4096 x 2    33,554,432
 *   k_proj, v_proj  1024 x 4096 x 2     8,388,608
 *   gate, up, down 14336 x 4096 x 3   176,160,768
 *   Pq / L                            218,103,808, x 2 = 436,207,616
 * Checkpointed, the recomputed layer's alone: 436,207,616.  Not, every
 * layer's, less the first's q, k and v ((16,777,216 + 2 x 4,194,304) x 2
 * = 50,331,648): 32 x 436,207,616 - 50,331,648 = 13,908,312,064.  Its
 * eager dequantization is not a transient then: the graph makes the
 * weight it saves.
 */
/* Checkpointed as ckpt, what torchao's compiled base keeps beyond
 * bitsandbytes' (its activations less theirs); with the formula of each
 * bucket in tao and bnb. */
static int64_t
torchao_kept(struct mf_workload *w, enum mf_checkpointing ckpt,
    struct mf_estimate *bnb, struct mf_estimate *tao)
{
	w->checkpointing = ckpt;
	w->qlora_quantizer = MF_QZ_BITSANDBYTES;
	*bnb = est(&llama8b, w);
	w->qlora_quantizer = MF_QZ_TORCHAO;
	*tao = est(&llama8b, w);
	return tao->bucket[MF_B_ACTIVATIONS] - bnb->bucket[MF_B_ACTIVATIONS];
}

static void
test_torch_compile_torchao(void **state)
{
	struct mf_workload w;
	struct mf_estimate bnb, tao;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 2048;
	w.micro_batch = 2;
	w.compile = 1;
	w.method = MF_QLORA;
	w.lora_dtype = MF_LORA_BF16;
	w.lora_targets = MF_LORA_LIST;
	w.lora_modules = MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_V);
	assert_int_equal(torchao_kept(&w, MF_CKPT_FULL, &bnb, &tao),
	    INT64_C(436207616));
	assert_non_null(strstr(tao.formula[MF_B_ACTIVATIONS], " + Pq / L x 2"));
	assert_null(strstr(tao.formula[MF_B_TRANSIENT], "Qmax"));
	assert_non_null(strstr(bnb.formula[MF_B_TRANSIENT], "Qmax x 2"));
	assert_int_equal(torchao_kept(&w, MF_CKPT_NONE, &bnb, &tao),
	    INT64_C(13908312064));
	assert_non_null(
	    strstr(tao.formula[MF_B_ACTIVATIONS], " + Pq x 2 - Wqkv x 2"));
}

/*
 * The optimizer in backward, compiled: a layer's backward graph returns
 * all its weights' gradients at once (est_state.c, oib_gradients).
 * Llama 3.1 8B's layer, 218,103,808 weights and two norms of 4096:
 * 218,112,000, under Pmax (the embeddings, 128,256 x 4096 = 525,336,576),
 * which stays the gradients: 1,050,673,152 in bf16-true.  With a
 * vocabulary of 1,000 Pmax is gate_proj's 58,720,256 and the layer's
 * gradients the most: 218,112,000 x 2 = 436,224,000.
 */
static void
test_torch_compile_oib(void **state)
{
	struct mf_model small = llama8b;
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 256;
	w.precision = MF_BF16_TRUE;
	w.compile = 1;
	w.optimizer_in_backward = 1;
	assert_false(mf_est_compile_refused(&llama8b, &w, NULL, 0));
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_GRADIENTS], INT64_C(1050673152));
	assert_string_equal(e.formula[MF_B_GRADIENTS], "Pmax x 2");
	small.vocab = 1000;
	e = est(&small, &w);
	assert_int_equal(e.bucket[MF_B_GRADIENTS], INT64_C(436224000));
	assert_string_equal(e.formula[MF_B_GRADIENTS], "layer params x 2");
	w.compile = 0;
	e = est(&small, &w);
	assert_int_equal(e.bucket[MF_B_GRADIENTS], INT64_C(117440512));
}

/* A list's name the model has not is refused, naming it and listing the
 * model's; lm_head is not modelled. */
static void
test_lora_list_refused(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;
	char why[512];

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 64;
	w.method = MF_LORA;
	w.lora_targets = MF_LORA_LIST;
	w.lora_modules = MF_LORA_BIT(MF_LIN_GATE_UP);
	assert_true(mf_est_lora_refused(&llama8b, &w, why, sizeof(why)));
	assert_string_equal(why,
	    "'gate_up_proj' is not a module of this model; the ones it has: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj");
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	assert_false(mf_est_lora_refused(&phi3ish, &w, why, sizeof(why)));
	w.lora_modules = MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_GATE);
	assert_true(mf_est_lora_refused(&mixtralish, &w, why, sizeof(why)));
	assert_string_equal(why,
	    "'gate_proj' is not a module of this model that a list may name (its routed experts are 3-D parameters, not modules); the ones it has: q_proj, k_proj, v_proj, o_proj");
	w.lora_modules = MF_LORA_HEAD;
	assert_true(mf_est_lora_refused(&llama8b, &w, why, sizeof(why)));
	assert_non_null(
	    strstr(why, "lm_head: LoRA on the output head is not modelled"));
	/* A bit no name has (a mask read back from elsewhere) is refused,
	 * and said without a name. */
	w.lora_modules = 1u << 20;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	assert_true(mf_est_lora_refused(&llama8b, &w, why, sizeof(why)));
	assert_non_null(strstr(why, "'?' is not a module"));
	/* all-linear and attention name no module. */
	w.lora_targets = MF_LORA_ATTENTION;
	assert_false(mf_est_lora_refused(&llama8b, &w, why, sizeof(why)));
}

/* LoRA with SGD holds 12 bytes an adapter parameter, and says so. */
static void
test_lora_sgd_formula(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	for (int est_i = 0; est_i < MF_EST_COUNT; est_i++) {
		mf_workload_defaults(&w);
		w.estimator = (enum mf_estimator)est_i;
		w.seq_len = 16;
		w.method = MF_LORA;
		w.optimizer = MF_SGD;
		e = est(&llama8b, &w);
		assert_string_equal(e.formula[MF_B_ADAPTERS], "T x 12");
		assert_int_equal(e.bucket[MF_B_ADAPTERS], 12 * e.trainable);
	}
}

/*
 * optimizerInBackward (design 19), as torchtune runs it: each weight is
 * stepped as soon as its gradient is made and the gradient freed, so one
 * is alive at a time, the largest (Pmax); a tied embedding's first
 * gradient, the head's, waits for the embeddings' own through the layers'
 * backward, beside the largest of a layer's (Pl).  The rest is the plain
 * step's: the step's temporaries stay a candidate of transient.
 */
/*
 * bitsandbytes' 8-bit AdamW, paged or not, on Llama 3.1 8B (design 22),
 * tensor by tensor as bitsandbytes 0.50.2 keeps it: no tensor under 4096
 * elements (the norms are 4096 each), so two uint8 moments a weight, 2P =
 * 16,060,522,496, and an fp32 absmax for each moment a 256-element block:
 * every tensor is a multiple of 256, B8 = P / 256 = 31,368,208, 8 bytes
 * each, 250,945,664; the quantization maps, 2 x 256 x 4 = 2048 bytes,
 * once, or with the optimizer in backward once for each of the 291
 * tensors (embeddings, head, final norm, 64 norms, 7 x 32 linears):
 * 595,968.  PagedAdamW8bit pages the moments of the tensors of 1e5
 * elements or more, all but the 65 norms: Pp = P - 65 x 4096 =
 * 8,029,995,008, 2 bytes each, 16,059,990,016 in pagedOptimizer, which
 * is not counted; on the device stay the norms' moments (266,240 x 2 =
 * 532,480), the absmax and the maps.
 */
static void
test_torch_8bit_state(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.estimator = MF_EST_PYTORCH;
	w.precision = MF_BF16_TRUE;
	w.optimizer = MF_ADAM8BIT;
	e = est(&llama8b, &w);
	/* 16,060,522,496 + 250,945,664 + 2048. */
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], INT64_C(16311470208));
	assert_int_equal(e.bucket[MF_B_PAGED], 0);
	w.optimizer_in_backward = 1;
	e = est(&llama8b, &w);
	/* 16,060,522,496 + 250,945,664 + 595,968. */
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], INT64_C(16312064128));
	assert_string_equal(e.formula[MF_B_OPTIMIZER],
	    "(P - Ps) x 2 + B8 x 8 + Ps x 8 + N8 x 2048");
	w.optimizer = MF_PAGED_ADAMW8BIT;
	e = est(&llama8b, &w);
	/* 532,480 + 250,945,664 + 595,968. */
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], INT64_C(252074112));
	assert_int_equal(e.bucket[MF_B_PAGED], INT64_C(16059990016));
	assert_string_equal(e.formula[MF_B_PAGED], "Pp x 2");
	/*
	 * Weights 2P 16,060,522,496, gradients Pmax x 2 1,050,673,152,
	 * optimizer 252,074,112, activations 26,326,597,632, logits
	 * 2,235,645,952, transient 8 x s x V = 4,202,692,608 (the 8-bit
	 * kernel holds no temporaries): 50,128,205,952, the paged state
	 * apart.
	 */
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
	assert_int_equal(e.total, INT64_C(50128205952));
	assert_int_equal(e.per_gpu, INT64_C(50128205952));
	/* bf16 keeps its fp32 master copy, 4P more, on the device; the
	 * post's arithmetic keeps P x 6 whatever the optimizer pages. */
	w.optimizer_in_backward = 0;
	w.precision = MF_BF16;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_OPTIMIZER],
	    INT64_C(252074112) - 595968 + 2048 + 4 * INT64_C(8030261248));
	w.estimator = MF_EST_POST;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], 6 * INT64_C(8030261248));
	assert_int_equal(e.bucket[MF_B_PAGED], 0);
}

/*
 * The optimizer in backward with activation offloading (torchtune's
 * recipe takes both; offload.py measured them together): Llama 3.1 8B,
 * bf16-true, checkpointed, s 4096, b 1.  The buckets are each recipe's
 * own: weights 2P 16,060,522,496, gradients Pmax x 2 1,050,673,152,
 * moments 4P 32,121,044,992, offloaded activations 4096 x (200,840 +
 * 4h) + 4096 x (4d + 8) = 891,879,424, logits without the ids 4096 x (8h
 * + 4V + 12) = 2,235,613,184, transient 8 x s x V = 4,202,692,608:
 * 56,562,425,856 (71.6 GB offloaded with every gradient, 15.0 GB more).
 * As torchtune's 8B_full_single_device config runs it, with
 * PagedAdamW8bit, b 2: moments on the device 252,074,112
 * (test_torch_8bit_state), activations 8192 x 217,224 + 2,129,920 =
 * 1,781,628,928, logits 8192 x 545,804 = 4,471,226,368, transient
 * 8,405,385,216: 32,021,510,272.
 */
static void
test_torch_offload_in_backward(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.estimator = MF_EST_PYTORCH;
	w.precision = MF_BF16_TRUE;
	w.checkpointing = MF_CKPT_FULL;
	w.activation_offload = 1;
	w.optimizer_in_backward = 1;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_GRADIENTS], INT64_C(1050673152));
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(891879424));
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(2235613184));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
	assert_int_equal(e.total, INT64_C(56562425856));
	w.optimizer = MF_PAGED_ADAMW8BIT;
	w.micro_batch = 2;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(1781628928));
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(4471226368));
	assert_int_equal(e.per_gpu, INT64_C(32021510272));
}

/* The tensors of every model hold its parameters. */
static void
test_model_tensors(void **state)
{
	const struct mf_model *models[] = { &llama8b, &tiny, &given_head_dim,
		&micro, &gemma2ish, &phi3ish, &mixtralish, &qwen2moeish };

	(void)state;
	for (size_t i = 0; i < NELEM(models); i++) {
		struct mf_tensor v[MF_MODEL_MAX_TENSORS];
		size_t n = mf_model_tensors(models[i], v);
		int64_t sum = 0;

		for (size_t k = 0; k < n; k++)
			sum += v[k].numel * v[k].count;
		assert_int_equal(sum, mf_model_params(models[i]));
	}
}

static void
test_torch_optimizer_in_backward(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.estimator = MF_EST_PYTORCH;
	w.precision = MF_BF16_TRUE;
	w.optimizer_in_backward = 1;
	/*
	 * Llama 3.1 8B, bf16-true: the largest tensor is the head's (and the
	 * untied embeddings') V x h = 128,256 x 4096 = 525,336,576, above a
	 * layer's 4096 x 14,336 = 58,720,256: gradients 2 x 525,336,576 =
	 * 1,050,673,152, where every gradient was 2P = 16,060,522,496.
	 * Weights 2P, moments 4P; activations and logits as without;
	 * transient max(8 x s x V = 4,202,692,608, 6 x I x s = 352,321,536,
	 * 4 x Pmax = 2,101,346,304).  Total 16,060,522,496 + 1,050,673,152
	 * + 32,121,044,992 + 26,326,597,632 + 2,235,645,952 + 4,202,692,608
	 * = 81,997,176,832 (82.0 GB, 97.0 GB without).
	 */
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(16060522496));
	assert_int_equal(e.bucket[MF_B_GRADIENTS], INT64_C(1050673152));
	assert_string_equal(e.formula[MF_B_GRADIENTS], "Pmax x 2");
	assert_int_equal(e.bucket[MF_B_OPTIMIZER], INT64_C(32121044992));
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(26326597632));
	assert_int_equal(e.bucket[MF_B_LOGITS], INT64_C(2235645952));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
	assert_int_equal(e.total, INT64_C(81997176832));
	assert_int_equal(e.per_gpu, INT64_C(81997176832));
	/* Checkpointing, as torchtune's configs run it: activations
	 * 1,898,512,384 (test_torch_llama8b): 57,569,091,584. */
	w.checkpointing = MF_CKPT_FULL;
	e = est(&llama8b, &w);
	assert_int_equal(e.total, INT64_C(57569091584));
	/*
	 * fp32: weights 4P = 32,121,044,992, gradients 4 x Pmax =
	 * 2,101,346,304, moments 8P = 64,242,089,984, activations
	 * 48,340,402,176 and logits 2,302,754,816 (test_torch_llama8b),
	 * transient max(8 x s x V, 8 x Pmax), both 4,202,692,608 (s = h):
	 * 153,310,330,880.
	 */
	w.checkpointing = MF_CKPT_NONE;
	w.precision = MF_FP32;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_GRADIENTS], INT64_C(2101346304));
	assert_string_equal(e.formula[MF_B_GRADIENTS], "Pmax x 4");
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
	assert_int_equal(e.total, INT64_C(153310330880));
	/* The state is shared: post's gradients are the same. */
	w.estimator = MF_EST_POST;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_GRADIENTS], INT64_C(2101346304));
	/*
	 * tiny ties its embeddings: V x h = 1000 x 64 = 64,000 held, and a
	 * layer's largest, gate's 64 x 128 = 8,192 (q's 64 x 64 = 4,096):
	 * bf16-true (64,000 + 8,192) x 2 = 144,384.
	 */
	w.estimator = MF_EST_PYTORCH;
	w.precision = MF_BF16_TRUE;
	w.seq_len = 64;
	e = est(&tiny, &w);
	assert_int_equal(e.bucket[MF_B_GRADIENTS], 144384);
	assert_string_equal(e.formula[MF_B_GRADIENTS], "(V x h + Pl) x 2");
	/*
	 * transformers' experts are one 3-D tensor a layer: gate_up_proj, E
	 * x 2I x h = 5 x 320 x 96 = 153,600, above V x h = 28,800:
	 * 307,200.
	 */
	e = est(&mixtralish, &w);
	assert_int_equal(e.bucket[MF_B_GRADIENTS], 307200);
	/* What it is not modelled with is out of the estimate's domain. */
	w.precision = MF_BF16;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
	w.precision = MF_BF16_TRUE;
	w.method = MF_LORA;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
}

/*
 * What optimizerInBackward is refused with, each reason naming what this
 * job has; nothing when it is off or what it is modelled with.
 */
static void
test_optimizer_in_backward_refused(void **state)
{
	struct mf_workload w;
	char why[512];
	static const struct {
		int field, value;
		const char *has;
	} cases[] = {
		{ 0, MF_LORA, "this job has method: lora" },
		{ 0, MF_QLORA, "this job has method: qlora" },
		{ 1, MF_BF16, "this job has precision: bf16 (the default)" },
		{ 1, MF_FP16, "refuse fp16; this job has precision: fp16" },
		{ 1, MF_BF16_MIXED, "this job has precision: bf16-mixed" },
		{ 1, MF_FP16_MIXED, "this job has precision: fp16-mixed" },
		{ 2, MF_SGD, "this job has optimizer: sgd" },
		{ 3, 4, "this job has sharding.gpus: 4" },
		{ 4, 2, "parallelism tensor 1, pipeline 2, expert 1" },
	};

	(void)state;
	mf_workload_defaults(&w);
	w.precision = MF_BF16_TRUE;
	assert_false(mf_est_oib_refused(&w, 4, why, sizeof(why)));
	w.optimizer_in_backward = 1;
	assert_false(mf_est_oib_refused(&w, 1, why, sizeof(why)));
	assert_false(mf_est_oib_refused(&w, 1, NULL, 0));
	/* bitsandbytes' 8-bit optimizers, one a weight (optim_bwd.py). */
	w.optimizer = MF_ADAM8BIT;
	assert_false(mf_est_oib_refused(&w, 1, NULL, 0));
	w.optimizer = MF_PAGED_ADAMW8BIT;
	assert_false(mf_est_oib_refused(&w, 1, NULL, 0));
	w.optimizer = MF_ADAMW;
	w.precision = MF_FP32;
	assert_false(mf_est_oib_refused(&w, 1, NULL, 0));
	assert_true(mf_est_oib_refused(&w, 2, why, sizeof(why)));
	assert_non_null(strstr(why, "resources.gpu.count: 2"));
	for (size_t i = 0; i < NELEM(cases); i++) {
		mf_workload_defaults(&w);
		w.precision = MF_BF16_TRUE;
		w.optimizer_in_backward = 1;
		if (cases[i].field == 0)
			w.method = (enum mf_method)cases[i].value;
		else if (cases[i].field == 1)
			w.precision = (enum mf_precision)cases[i].value;
		else if (cases[i].field == 2)
			w.optimizer = (enum mf_optimizer)cases[i].value;
		else if (cases[i].field == 3)
			w.shard_gpus = cases[i].value;
		else
			w.pipeline = cases[i].value;
		why[0] = '\0';
		assert_true(mf_est_oib_refused(&w, 1, why, sizeof(why)));
		if (strstr(why, cases[i].has) == NULL)
			fail_msg("'%s' lacks '%s'", why, cases[i].has);
		/* A short buffer is cut, never overrun. */
		assert_true(mf_est_oib_refused(&w, 1, why, 8));
		assert_int_equal(strlen(why), 7);
	}
}

/*
 * compile: true (design 22): each decoder layer compiled keeps, a token,
 * its norms' inputs and outputs (2 x 2e h) and rsqrt (2 x 4), attention as
 * eager does (2e ad + 2e kvd + 4a) and the MLP's 3eI
 * (tests/torch/compile.py).  Llama 3.1 8B (h 4096, ad 4096, kvd 1024, a
 * 32, I 14336, L 32), s 4096, b 1.  bf16-true: 8h + 4ad + 4kvd + 4a + 6I
 * + 8 = 32,768 + 16,384 + 4,096 + 128 + 86,016 + 8 = 139,400 a token a
 * layer; 4096 x 32 x 139,400 + RoPE's s x 4d (2,097,152) =
 * 18,273,533,952, against eager's 200,840 a token a layer:
 * 26,326,597,632.  fp32: 16h + 8ad + 8kvd + 4a + 12I + 8 = 278,664;
 * 4096 x 32 x 278,664 + s x 8d (4,194,304) = 36,529,242,112.  Every
 * layer checkpointed (bf16-true): one compiled layer recomputed, 4096 x
 * 139,400 = 570,982,400, the 32 inputs 4096 x 32 x 2h = 1,073,741,824,
 * RoPE 2,097,152 and the positions s x 8 = 32,768: 1,646,854,144.
 */
static void
test_torch_compile(void **state)
{
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.estimator = MF_EST_PYTORCH;
	w.precision = MF_BF16_TRUE;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(26326597632));
	w.compile = 1;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(18273533952));
	assert_non_null(strstr(e.formula[MF_B_ACTIVATIONS],
	    "8h + 4ad + 4kvd + 4a + 6I + 8"));
	w.precision = MF_FP32;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(36529242112));
	w.precision = MF_BF16_TRUE;
	w.checkpointing = MF_CKPT_FULL;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(1646854144));
}

/*
 * compile: true with LoRA (tests/torch/compile_lora.py): a compiled layer
 * over a frozen base keeps each norm's input (2 x 2h) and rsqrt (2 x 4),
 * attention as uncompiled (4ad + 4kvd + 4a), the MLP's gate and up
 * outputs (4I), one fp32 cast of the first norm's output that q's and
 * v's adapters share (4h) and lora_A's outputs (8r).  Llama 3.1 8B,
 * [q_proj, v_proj], r 16, s 4096, b 1, bf16, fp32 adapters: 16,384 + 8 +
 * 16,384 + 4,096 + 128 + 57,344 + 16,384 + 128 = 110,856 a token a layer
 * (8h + 4ad + 4kvd + 4a + 4I + 8r + 8); x 32 = 3,547,392, less the first
 * layer's first norm (2h + 4 = 8,196): 3,539,196 x 4,096 =
 * 14,496,546,816, + RoPE's 2,097,152 = 14,498,643,968, against
 * 22,518,153,216 uncompiled (test_torch_lora_list).  all-linear with
 * bf16 adapters:
 * no casts; the two norms' outputs (2 x 2h) and down_proj's input (2I)
 * are kept for the adapters, o_proj's input is the attention's output
 * already kept, lora_A's outputs 7 x 2r: 8h + 4ad + 4kvd + 4a + 6I + 14r
 * + 8 = 139,624; x 32 - 8,196 = 4,459,772 x 4,096 + 2,097,152 =
 * 18,269,323,264.  QLoRA (NF4 linears in bf16, fp32 adapters) keeps what
 * LoRA keeps: bitsandbytes' matmul saves no dequantized weight compiled
 * either.
 */
static void
test_torch_compile_lora(void **state)
{
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 4096;
	w.method = MF_LORA;
	w.lora_rank = 16;
	w.lora_targets = MF_LORA_LIST;
	w.lora_modules = MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_V);
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(22518153216));
	w.compile = 1;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(14498643968));
	assert_string_equal(e.formula[MF_B_ACTIVATIONS],
	    "s x b x (L x (8h + 4ad + 4kvd + 4a + 4I + 8r + 8) - 2h - 4) + s x 4d");
	w.method = MF_QLORA;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(14498643968));
	w.method = MF_LORA;
	w.lora_targets = MF_LORA_ALL_LINEAR;
	w.lora_dtype = MF_LORA_BF16;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(18269323264));
	assert_string_equal(e.formula[MF_B_ACTIVATIONS],
	    "s x b x (L x (8h + 4ad + 4kvd + 4a + 6I + 14r + 8) - 2h - 4) + s x 4d");
}

/*
 * compile with LoRA and every layer checkpointed (est_pytorch.c,
 * recompute_terms): the activations are the checkpoints' inputs and one
 * compiled layer, Llama 3.1 8B all-linear, rank 16, bf16 with fp32
 * adapters, s = 4096: 4096 x (12h + 8ad + 4kvd + 4a + 8I + 28r + 8 + 32 x
 * 2h) + s x 4d + s x 8 = 4096 x (201,288 + 262,144) + 2,097,152 + 32,768
 * = 1,900,347,392.  The layer's backward graph runs its forward again and
 * holds, beyond that layer, eager's layer (28h + 8ad + 4kvd + 4a + 10I +
 * 28r + 8) less the compiled one, 16h + 2I, the MLP's backward through
 * the frozen weights, 3e I = 6I, gate's, up's and down's adapter paths
 * and the product in fp32, 4 x 4I, and the incoming gradient's fp32 cast
 * for down's lora_B, 4h: 20h + 24I = 425,984 bytes a token, 4096 x that
 * = 1,744,830,464, under the loss's 8 x s x V = 4,202,692,608 with the
 * 128,256 tokens of Llama 3's vocabulary, and the transient with 32,000
 * (the loss's 1,048,576,000).  [q_proj, v_proj]: eager's 16h + 4ad +
 * 4kvd + 4a + 6I + 8r + 8 less the compiled 8h + 4ad + 4kvd + 4a + 4I +
 * 8r + 8, 8h + 2I, and the MLP's 6I, no adapter on it: 8h + 8I = 147,456
 * a token, 603,979,776, under that loss.
 */
static void
test_torch_compile_lora_ckpt(void **state)
{
	struct mf_model small = llama8b;
	struct mf_workload w;
	struct mf_estimate e;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 4096;
	w.method = MF_LORA;
	w.lora_rank = 16;
	w.lora_targets = MF_LORA_ALL_LINEAR;
	w.checkpointing = MF_CKPT_FULL;
	w.compile = 1;
	assert_false(mf_est_compile_refused(&llama8b, &w, NULL, 0));
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_ACTIVATIONS], INT64_C(1900347392));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
	assert_string_equal(e.formula[MF_B_TRANSIENT],
	    "max(s x b x V x 8, s x b x 6I, s x b x Omax x 10, s x b x (20h + 24I), Pmax x 4)");
	small.vocab = 32000;
	e = est(&small, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(1744830464));
	w.method = MF_QLORA;
	e = est(&small, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(1744830464));
	w.method = MF_LORA;
	w.lora_targets = MF_LORA_LIST;
	w.lora_modules = MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_V);
	e = est(&small, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(1048576000));
	assert_non_null(strstr(e.formula[MF_B_TRANSIENT], "s x b x (8h + 8I)"));
	/* Without checkpointing, no such candidate. */
	w.checkpointing = MF_CKPT_NONE;
	e = est(&small, &w);
	assert_null(strstr(e.formula[MF_B_TRANSIENT], "h + "));
}

/*
 * compile under FSDP (tests/torch/dist.py, fsdp2-compile and
 * fsdp2-lora-compile: fully_shard's buffers as without compile, each
 * layer's graph as on one GPU): Llama 3.1 8B LoRA over 8, checkpointing,
 * s 4096.  The buffers are the uncompiled job's, and the activations
 * and logits the compiled job's on one GPU, less than the uncompiled.
 */
static void
test_torch_compile_fsdp(void **state)
{
	struct mf_workload w;
	struct mf_estimate sharded, one, both;

	(void)state;
	mf_workload_defaults(&w);
	w.seq_len = 4096;
	w.method = MF_LORA;
	w.checkpointing = MF_CKPT_FULL;
	w.shard_gpus = 8;
	sharded = est(&llama8b, &w);
	w.compile = 1;
	assert_false(mf_est_compile_refused(&llama8b, &w, NULL, 0));
	both = est(&llama8b, &w);
	w.shard_gpus = 1;
	one = est(&llama8b, &w);
	assert_int_equal(both.bucket[MF_B_SHARDING],
	    sharded.bucket[MF_B_SHARDING]);
	assert_int_equal(both.bucket[MF_B_ACTIVATIONS],
	    one.bucket[MF_B_ACTIVATIONS]);
	assert_int_equal(both.bucket[MF_B_LOGITS], one.bucket[MF_B_LOGITS]);
	assert_true(
	    both.bucket[MF_B_ACTIVATIONS] < sharded.bucket[MF_B_ACTIVATIONS]);
}

/* A refused LoRA case of test_torch_compile_refused: lora.dtype value
 * (field 10) on an fp32 model for bf16, (field 11) a list without q, k or
 * v, or (13) QLoRA with kbitPrep. */
static void
compile_lora_case(struct mf_workload *w, int field, int value)
{
	if (field == 13) {
		w->method = MF_QLORA;
		w->qlora_kbit_prep = value;
		return;
	}
	w->method = MF_LORA;
	w->lora_dtype = (enum mf_lora_dtype)value;
	if (w->lora_dtype == MF_LORA_BF16)
		w->precision = MF_FP32;
	if (field == 11) {
		w->lora_targets = MF_LORA_LIST;
		w->lora_modules =
		    MF_LORA_BIT(MF_LIN_O) | MF_LORA_BIT(MF_LIN_DOWN);
	}
}

/* What compile is not modelled with is refused with what the job has
 * (mf_est_compile_refused), by the estimate too. */
static void
test_torch_compile_refused(void **state)
{
	static const struct {
		int field;
		int value;
		const char *has;
	} cases[] = {
		{ 13, 1, "qlora.kbitPrep: true" },
		{ 10, MF_LORA_FP16, "this job has lora.dtype: fp16" },
		{ 10, MF_LORA_BF16, "lora.dtype: bf16 with precision: fp32" },
		{ 11, MF_LORA_FP32, "lora.targets has none of them" },
		{ 1, MF_BF16_MIXED, "this job has precision: bf16-mixed" },
		{ 1, MF_FP16, "this job has precision: fp16" },
		{ 2, MF_EAGER, "this job has attention: eager" },
		{ 2, MF_FLASH, "this job has attention: flash" },
		{ 3, MF_LOSS_FUSED, "this job has loss: fused" },
		{ 4, MF_CKPT_OP, "per op" },
		{ 5, 2, "every Nth layer" },
		{ 6, 1, "this job has activationOffload: true" },
		{ 8, 2, "pipeline 2" },
		{ 9, 2, "parallelism tensor 2" },
	};
	struct mf_model qwen2 = llama8b;
	struct mf_workload w;
	struct mf_estimate e;
	char why[512];

	(void)state;
	mf_workload_defaults(&w);
	w.compile = 1;
	assert_false(mf_est_compile_refused(&llama8b, &w, why, sizeof(why)));
	w.method = MF_LORA;
	assert_false(mf_est_compile_refused(&llama8b, &w, why, sizeof(why)));
	w.lora_dtype = MF_LORA_BF16;
	assert_false(mf_est_compile_refused(&llama8b, &w, why, sizeof(why)));
	/* QLoRA with bf16 adapters (torchtune's) as with fp32 ones. */
	w.method = MF_QLORA;
	assert_false(mf_est_compile_refused(&llama8b, &w, why, sizeof(why)));
	w.lora_dtype = MF_LORA_FP32;
	assert_false(mf_est_compile_refused(&llama8b, &w, why, sizeof(why)));
	w.method = MF_FULL;
	w.lora_dtype = MF_LORA_FP32;
	w.precision = MF_FP32;
	w.checkpointing = MF_CKPT_FULL;
	assert_false(mf_est_compile_refused(&llama8b, &w, NULL, 0));
	/* The model's block: waits for the model, then Llama's alone. */
	qwen2.qkv_bias = 1;
	assert_false(mf_est_compile_refused(NULL, &w, NULL, 0));
	assert_true(mf_est_compile_refused(&qwen2, &w, why, sizeof(why)));
	assert_non_null(strstr(why, "qwen2"));
	assert_true(mf_est_compile_refused(&phi3ish, &w, why, sizeof(why)));
	assert_non_null(strstr(why, "another block"));
	assert_int_equal(mf_est_compute(&phi3ish, &w, &e), MF_EINVAL);
	for (size_t i = 0; i < NELEM(cases); i++) {
		mf_workload_defaults(&w);
		w.compile = 1;
		if (cases[i].field == 0)
			w.method = (enum mf_method)cases[i].value;
		else if (cases[i].field == 1)
			w.precision = (enum mf_precision)cases[i].value;
		else if (cases[i].field == 2)
			w.attention = (enum mf_attention)cases[i].value;
		else if (cases[i].field == 3)
			w.loss = (enum mf_loss)cases[i].value;
		else if (cases[i].field == 4)
			w.checkpointing = cases[i].value;
		else if (cases[i].field == 5) {
			w.checkpointing = MF_CKPT_FULL;
			w.ckpt_every = cases[i].value;
		} else if (cases[i].field == 6) {
			w.checkpointing = MF_CKPT_FULL;
			w.activation_offload = 1;
		} else if (cases[i].field == 7) {
			w.precision = MF_BF16_TRUE;
			w.optimizer_in_backward = 1;
		} else if (cases[i].field == 8)
			w.pipeline = cases[i].value;
		else if (cases[i].field == 9)
			w.tensor = cases[i].value;
		else
			compile_lora_case(&w, cases[i].field, cases[i].value);
		why[0] = '\0';
		assert_true(mf_est_compile_refused(NULL, &w, why, sizeof(why)));
		if (strstr(why, cases[i].has) == NULL)
			fail_msg("'%s' lacks '%s'", why, cases[i].has);
		assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
		/* A short buffer is cut, never overrun. */
		assert_true(mf_est_compile_refused(NULL, &w, why, 8));
		assert_int_equal(strlen(why), 7);
	}
	/* Not asked, or not training: nothing refused. */
	w.compile = 0;
	assert_false(mf_est_compile_refused(NULL, &w, why, sizeof(why)));
}

/*
 * float8 (design 22) on Llama 3.1 8B, s 4096, b 1, sdpa, by hand.
 * bf16-mixed: torchao's Float8Linear saves its fp32 weight itself and
 * autocast copies only the head: weights 4P + 2Vh = 4 x 8,030,261,248 +
 * 2 x 128,256 x 4096 = 32,121,044,992 + 1,050,673,152 = 33,171,718,144,
 * against 4P + 2Pc = 47,130,361,856 without; activations and logits as
 * without (tests/torch/float8.py).  The transient: a float8 linear's
 * backward (est_pytorch.c, float8_backward), T = 4096, e = 2.  gate_proj
 * (o 14336, i 4096): To = oi = 58,720,256, Ti = 16,777,216; its second
 * cast of the gradient, (10 + e) To + e Ti + oi = 12 x 58,720,256 + 2 x
 * 16,777,216 + 58,720,256 = 796,917,760, above its weight's cast (3 To +
 * 9 oi = 704,643,072), and down_proj's input cast (o 4096, i 14336: 4 To
 * + 11 Ti + oi = 67,108,864 + 645,922,816 + 58,720,256 = 771,751,936);
 * rowwise's fp32 output scales (down's grad-weight: 5 To + 4 Ti + 5 oi =
 * 612,368,384) stay below.  The loss's s x V x 8 = 4,202,692,608 is
 * larger, so with V 1000 (loss 32,768,000; the MLP's 6I s 352,321,536;
 * Pmax x 8 with Pmax gate's 58,720,256: 469,762,048) it is the bucket.
 */
static void
test_torch_float8(void **state)
{
	struct mf_model small_v = llama8b;
	struct mf_workload w = ref_workload();
	struct mf_estimate e;

	(void)state;
	w.estimator = MF_EST_PYTORCH;
	w.precision = MF_BF16_MIXED;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(47130361856));
	w.float8 = MF_F8_TENSORWISE;
	e = est(&llama8b, &w);
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(33171718144));
	assert_non_null(strstr(e.formula[MF_B_WEIGHTS], "P x 4 + V x h x 2"));
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(4202692608));
	w.precision = MF_BF16;
	small_v.vocab = 1000;
	e = est(&small_v, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(796917760));
	assert_non_null(strstr(e.formula[MF_B_TRANSIENT],
	    "s x b x (12 x o + 2 x i) + 1 x o x i (float8 gate_proj: o 14336, "
	    "i 4096)"));
	w.float8 = MF_F8_ROWWISE;
	e = est(&small_v, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(796917760));
	w.float8 = MF_F8_NONE;
	e = est(&small_v, &w);
	assert_int_equal(e.bucket[MF_B_TRANSIENT], INT64_C(469762048));
}

/* What float8 is not measured with is refused with what the job has
 * (mf_est_float8_refused), by the estimate too. */
static void
test_torch_float8_refused(void **state)
{
	static const struct {
		int field;
		int value;
		const char *has;
	} cases[] = {
		{ 0, MF_QLORA, "a 4-bit base has none" },
		{ 0, MF_LORA, "this job has method: lora" },
		{ 1, MF_FP32, "this job has precision: fp32" },
		{ 1, MF_FP16, "this job has precision: fp16" },
		{ 1, MF_FP16_MIXED, "this job has precision: fp16-mixed" },
		{ 2, 1, "this job has compile: true" },
		{ 3, MF_CKPT_OP, "gradientCheckpointing: op" },
		{ 4, 1, "activationOffload" },
		{ 5, 1, "optimizerInBackward" },
		{ 6, 2, "sharding.gpus 2" },
		{ 7, 2, "parallelism tensor 2" },
	};
	struct mf_model qwen2 = llama8b;
	struct mf_workload w;
	struct mf_estimate e;
	char why[768];

	(void)state;
	mf_workload_defaults(&w);
	w.float8 = MF_F8_ROWWISE;
	assert_false(mf_est_float8_refused(&llama8b, &w, why, sizeof(why)));
	w.precision = MF_BF16_TRUE;
	w.checkpointing = MF_CKPT_FULL;
	assert_false(mf_est_float8_refused(&llama8b, &w, NULL, 0));
	qwen2.qkv_bias = 1;
	assert_false(mf_est_float8_refused(NULL, &w, NULL, 0));
	assert_true(mf_est_float8_refused(&qwen2, &w, why, sizeof(why)));
	assert_non_null(strstr(why, "qwen2"));
	assert_true(mf_est_float8_refused(&phi3ish, &w, why, sizeof(why)));
	assert_non_null(strstr(why, "another block"));
	assert_int_equal(mf_est_compute(&phi3ish, &w, &e), MF_EINVAL);
	for (size_t i = 0; i < NELEM(cases); i++) {
		mf_workload_defaults(&w);
		w.float8 = MF_F8_TENSORWISE;
		if (cases[i].field == 0)
			w.method = (enum mf_method)cases[i].value;
		else if (cases[i].field == 1)
			w.precision = (enum mf_precision)cases[i].value;
		else if (cases[i].field == 2)
			w.compile = cases[i].value;
		else if (cases[i].field == 3)
			w.checkpointing = cases[i].value;
		else if (cases[i].field == 4) {
			w.checkpointing = MF_CKPT_FULL;
			w.activation_offload = 1;
		} else if (cases[i].field == 5) {
			w.precision = MF_BF16_TRUE;
			w.optimizer_in_backward = 1;
		} else if (cases[i].field == 6)
			w.shard_gpus = cases[i].value;
		else
			w.tensor = cases[i].value;
		why[0] = '\0';
		assert_true(mf_est_float8_refused(NULL, &w, why, sizeof(why)));
		if (strstr(why, cases[i].has) == NULL)
			fail_msg("'%s' lacks '%s'", why, cases[i].has);
		assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_EINVAL);
		assert_true(mf_est_float8_refused(NULL, &w, why, 8));
		assert_int_equal(strlen(why), 7);
	}
	w.float8 = MF_F8_NONE;
	assert_false(mf_est_float8_refused(NULL, &w, why, sizeof(why)));
}

/* The default is pytorch; names and parsing of both. */
static void
test_estimator_names(void **state)
{
	struct mf_workload w;
	enum mf_estimator e = MF_EST_COUNT;

	(void)state;
	mf_workload_defaults(&w);
	assert_int_equal(w.estimator, MF_EST_PYTORCH);
	assert_string_equal(mf_estimator_name(MF_EST_PYTORCH), "pytorch");
	assert_string_equal(mf_estimator_name(MF_EST_POST), "post");
	assert_null(mf_estimator_name(MF_EST_COUNT));
	assert_int_equal(mf_estimator_parse("post", &e), MF_OK);
	assert_int_equal(e, MF_EST_POST);
	assert_int_equal(mf_estimator_parse("Post", &e), MF_EINVAL);
	assert_int_equal(mf_estimator_parse(NULL, &e), MF_EINVAL);
	assert_int_equal(e, MF_EST_POST);
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
	assert_string_equal(mf_bucket_name(MF_B_TRANSIENT), "transient");
	assert_string_equal(mf_bucket_name(MF_B_KVCACHE), "kvCache");
	assert_string_equal(mf_bucket_name(MF_B_SHARDING), "shardingBuffers");
	assert_string_equal(mf_bucket_name(MF_B_GRAPHS), "cudaGraphs");
	assert_string_equal(mf_bucket_name(MF_B_COMM), "commBuffers");
	assert_null(mf_bucket_name(MF_B_COUNT));
	assert_null(mf_bucket_name((enum mf_bucket) - 1));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_torch_llama8b),
		cmocka_unit_test(test_torch_recipes),
		cmocka_unit_test(test_torch_optimizer_in_backward),
		cmocka_unit_test(test_optimizer_in_backward_refused),
		cmocka_unit_test(test_torch_offload),
		cmocka_unit_test(test_est_error),
		cmocka_unit_test(test_est_serving),
		cmocka_unit_test(test_est_max_served),
		cmocka_unit_test(test_est_parallel),
		cmocka_unit_test(test_est_vllm_tensor),
		cmocka_unit_test(test_est_vllm_release),
		cmocka_unit_test(test_est_vllm_release_defaults),
		cmocka_unit_test(test_est_pipeline_training),
		cmocka_unit_test(test_est_tensor_training_vocab),
		cmocka_unit_test(test_est_sequence_loss_parallel),
		cmocka_unit_test(test_est_fsdp_buffers),
		cmocka_unit_test(test_formulas_match_bytes),
		cmocka_unit_test(test_torch_chunked_loss),
		cmocka_unit_test(test_chunked_formulas),
		cmocka_unit_test(test_torch_compiled_chunked_loss),
		cmocka_unit_test(test_torch_output_upcast),
		cmocka_unit_test(test_output_upcast_formulas),
		cmocka_unit_test(test_torch_fused_loss),
		cmocka_unit_test(test_fused_formulas),
		cmocka_unit_test(test_lora_sgd_formula),
		cmocka_unit_test(test_torch_lora_forward),
		cmocka_unit_test(test_torch_lora_list),
		cmocka_unit_test(test_lora_list_refused),
		cmocka_unit_test(test_torch_lora_dtype),
		cmocka_unit_test(test_torch_kbit_prep),
		cmocka_unit_test(test_torch_keeps_input),
		cmocka_unit_test(test_torch_lora_dropout),
		cmocka_unit_test(test_torch_loading),
		cmocka_unit_test(test_torch_loading_torchao),
		cmocka_unit_test(test_torch_compile_torchao),
		cmocka_unit_test(test_torch_compile_oib),
		cmocka_unit_test(test_terms_signed),
		cmocka_unit_test(test_estimator_names),
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
		cmocka_unit_test(test_torch_8bit_state),
		cmocka_unit_test(test_model_tensors),
		cmocka_unit_test(test_torch_offload_in_backward),
		cmocka_unit_test(test_torch_compile),
		cmocka_unit_test(test_torch_compile_lora),
		cmocka_unit_test(test_torch_compile_lora_ckpt),
		cmocka_unit_test(test_torch_compile_refused),
		cmocka_unit_test(test_torch_compile_fsdp),
		cmocka_unit_test(test_torch_float8),
		cmocka_unit_test(test_torch_float8_refused),
		cmocka_unit_test(test_est_lora_variants),
		cmocka_unit_test(test_est_rounding),
		cmocka_unit_test(test_est_per_gpu),
		cmocka_unit_test(test_est_sharding_lora),
		cmocka_unit_test(test_est_sharding_qlora),
		cmocka_unit_test(test_est_cpu_offload),
		cmocka_unit_test(test_est_units_ends),
		cmocka_unit_test(test_est_units_ends_70b),
		cmocka_unit_test(test_est_head_dim_inference),
		cmocka_unit_test(test_est_overflow),
		cmocka_unit_test(test_est_bad_workload),
		cmocka_unit_test(test_workload_defaults),
		cmocka_unit_test(test_bucket_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
