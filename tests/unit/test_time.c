/*
 * test_time.c: the hours half of cheapest to finish (design 21): the work
 * of a step (matmul FLOPs worked out by hand below, for Llama 3.1 8B:
 * h 4096, L 32, a 32, kv 8, d 128, I 14336, V 128256, its linear
 * projections' weights 6,979,321,856), its time on a card, and the
 * placement that follows from it.  The physics the design asks of the
 * model hold whatever its constants: doubling the tokens doubles the
 * hours, recomputation slows a step, LoRA is faster a token than full
 * fine-tuning, bandwidth moves decode and FLOPS large training, NVSwitch
 * scales better than PCIe.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <math.h>

#include "doc/doc.h"
#include "estimate/estimate.h"
#include "manifest/manifest.h"
#include "place/place.h"
#include "answer/render.h"
#include "time/time.h"
#include "catalog.h"
#include "files.h"
#include "models.h"
#include "msg.h"
#include "placed.h"

static struct mf_models *models;

/* An H100 SXM as the shipped catalogue gives it. */
static const struct mf_speed h100 = {
	.arch = MF_ARCH_HOPPER,
	.flops = { [MF_DT_BF16] = INT64_C(989400000000000),
	    [MF_DT_FP16] = INT64_C(989400000000000),
	    [MF_DT_FP8] = INT64_C(1979000000000000),
	    [MF_DT_FP32] = INT64_C(67000000000000) },
	.bandwidth = INT64_C(3350000000000),
	.link = MF_LINK_NVSWITCH,
	.link_bw = INT64_C(450000000000),
	.net_bw = INT64_C(50000000000),
};

static int
setup(void **state)
{
	(void)state;
	return shipped_data(NULL, &models);
}

static int
teardown(void **state)
{
	(void)state;
	mf_models_free(models);
	return 0;
}

static struct mf_workload
training(int64_t s, int64_t b)
{
	struct mf_workload w;

	mf_workload_defaults(&w);
	w.kind = MF_TRAINING;
	w.seq_len = s;
	w.micro_batch = b;
	return w;
}

static void
near(double got, double want, double rel)
{
	if (fabs(got - want) > rel * fabs(want))
		fail_msg("%.6g, want %.6g (within %g)", got, want, rel);
}

/*
 * A token's forward at s = 4096 (sdpa: a causal kernel multiplies a query
 * with (s + 1) / 2 keys on average): the linears 2 x 6,979,321,856 =
 * 13,958,643,712, the head 2 x 4096 x 128256 = 1,050,673,152, attention
 * 4 x 2048.5 x 32 x 128 x 32 = 1,074,003,968: 16,083,320,832, x 4096
 * tokens = 65,877,282,127,872.  Full fine-tuning: backward twice that,
 * nothing recomputed.
 */
static void
test_time_flops_full(void **state)
{
	struct mf_workload w = training(4096, 1);
	struct mf_flops f;

	(void)state;
	mf_work_flops(&llama8b, &w, &f);
	near(f.fwd, 65877282127872.0, 1e-12);
	near(f.bwd, 2 * 65877282127872.0, 1e-12);
	assert_true(f.rec == 0);
	/* Eager attention multiplies every query with all s keys: 4 x 4096
	 * x 32 x 128 x 32 = 2,147,483,648 a token, not 1,074,003,968. */
	w.attention = MF_EAGER;
	mf_work_flops(&llama8b, &w, &f);
	near(f.fwd, 4096.0 * (13958643712.0 + 1050673152.0 + 2147483648.0),
	    1e-12);
}

/*
 * Checkpointing every layer runs a layer's forward again but its last
 * matmul, down_proj (2 x 14336 x 4096 = 117,440,512 a token), which torch
 * never reruns (tests/torch/flops.py): a layer's forward is
 * (13,958,643,712 + 1,074,003,968) / 32 = 469,770,240 a token, so
 * 4096 x 32 x (469,770,240 - 117,440,512) = 46,180,562,108,416.
 */
static void
test_time_flops_recompute(void **state)
{
	struct mf_workload w = training(4096, 1);
	struct mf_flops f;

	(void)state;
	w.checkpointing = MF_CKPT_FULL;
	mf_work_flops(&llama8b, &w, &f);
	near(f.rec, 46180562108416.0, 1e-12);
	/* Every second layer: half of it. */
	w.ckpt_every = 2;
	mf_work_flops(&llama8b, &w, &f);
	near(f.rec, 46180562108416.0 / 2, 1e-12);
}

/*
 * LoRA rank 16 on every linear: the adapters' forward is 2 x 16 x the
 * linears' in + out, 41,943,040 / 16 x 2 x 16 = 83,886,080 a token; the
 * frozen base's backward is its input gradients alone (one matmul, not
 * two), attention's and the adapters' twice; without checkpointing layer
 * 0's q, k and v get no input gradient (the embeddings are frozen):
 * 2 x 4096 x (32 + 16) x 128 = 50,331,648 for the base, 3 x 2 x 16 x
 * 4096 = 393,216 for their lora_A.
 */
static void
test_time_flops_lora(void **state)
{
	struct mf_workload w = training(4096, 1);
	struct mf_flops f;
	double lin = 13958643712.0, head = 1050673152.0, attn = 1074003968.0;
	double lora = 83886080.0;

	(void)state;
	w.method = MF_LORA;
	w.lora_rank = 16;
	w.lora_targets = MF_LORA_ALL_LINEAR;
	mf_work_flops(&llama8b, &w, &f);
	near(f.fwd, 4096 * (lin + head + attn + lora), 1e-12);
	near(f.bwd,
	    4096 * (lin + head + 2 * attn + 2 * lora - 50331648.0 - 393216.0),
	    1e-12);
	/*
	 * A list (design 22), [q_proj, v_proj]: T = 6,815,744, the adapters'
	 * forward 2T = 13,631,488 a token; layer 0 skips the base's q, k and
	 * v input gradients and q's and v's lora_A's, 2 x 2 x 16 x 4096 =
	 * 131,072 each.
	 */
	lora = 13631488.0;
	w.lora_targets = MF_LORA_LIST;
	w.lora_modules = MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_V);
	mf_work_flops(&llama8b, &w, &f);
	near(f.fwd, 4096 * (lin + head + attn + lora), 1e-12);
	near(f.bwd,
	    4096 * (lin + head + 2 * attn + 2 * lora - 50331648.0 - 262144.0),
	    1e-12);
	/* Eager (no causal skip: 4 x 4096 x 32 x 128 a layer, 67,108,864):
	 * k needs no gradient in layer 0, a quarter of its attention's
	 * backward, 33,554,432. */
	w.attention = MF_EAGER;
	attn = 4.0 * 4096 * 32 * 128 * 32;
	mf_work_flops(&llama8b, &w, &f);
	near(f.bwd,
	    4096 *
	        (lin + head + 2 * attn + 2 * lora - 50331648.0 - 262144.0 -
	            33554432.0),
	    1e-12);
}

/* Decode at 4096 tokens: the linears and the head once, attention over
 * all 4096 keys: 13,958,643,712 + 1,050,673,152 + 4 x 4096 x 4096 x 32. */
static void
test_time_flops_decode(void **state)
{
	struct mf_workload w;
	struct mf_flops f;

	(void)state;
	mf_workload_defaults(&w);
	w.kind = MF_INFERENCE;
	w.context_len = 4096;
	mf_work_flops(&llama8b, &w, &f);
	near(f.decode, 13958643712.0 + 1050673152.0 + 4.0 * 4096 * 4096 * 32,
	    1e-12);
}

/* The work and one step of w on count GPUs of card. */
static struct mf_step
step_of(const struct mf_model *m, struct mf_workload w,
    const struct mf_speed *card, int64_t count, int64_t nodes)
{
	struct mf_estimate e;
	struct mf_work wk;
	struct mf_step st;

	assert_int_equal(mf_est_compute(m, &w, &e), MF_OK);
	assert_int_equal(mf_work_of(m, &w, &e, &wk), MF_OK);
	mf_step_of(&wk, card, count, nodes, &st);
	assert_true(st.seconds > 0);
	return st;
}

/* The step is its terms' sum; MFU is the forward and backward's FLOPs
 * over the step at the card's peak. */
static void
test_time_step_terms(void **state)
{
	struct mf_workload w = training(4096, 1);
	struct mf_step st = step_of(&llama8b, w, &h100, 1, 1);
	struct mf_flops f;

	(void)state;
	near(st.seconds, st.term[0] + st.term[1] + st.term[2], 1e-12);
	assert_true(st.term[MF_ST_COMM] == 0);
	mf_work_flops(&llama8b, &w, &f);
	near(st.mfu, (f.fwd + f.bwd) / (st.seconds * 989.4e12), 1e-9);
	near(st.tokens_per_second, 4096 / st.seconds, 1e-12);
	/* The formulas show the card's figures (H100: 989.4 TFLOP/s at
	 * Hopper's 0.803, 3.35 TB/s at 0.92) and a GPU's FLOPs. */
	char text[MF_STEP_FORMULA_MAX], want[MF_STEP_FORMULA_MAX];
	struct mf_buf b;

	mf_buf_fixed(&b, text, sizeof(text));
	mf_step_formula(&st, MF_ST_MATMUL, &b);
	snprintf(want, sizeof(want),
	    "max(%.4g FLOP / (9.894e+14 FLOP/s x 0.803), %.4g B / (3.35e+12 B/s x 0.92))",
	    f.fwd + f.bwd + f.rec, st.fig[MF_SF_MM_BYTES]);
	assert_string_equal(text, want);
	mf_buf_fixed(&b, text, sizeof(text));
	mf_step_formula(&st, MF_ST_COMM, &b);
	assert_string_equal(text,
	    "ring bytes / 4.5e+11 B/s, less what overlaps");
	/* A card without figures is not modelled. */
	struct mf_speed none = { 0 };
	struct mf_estimate e;
	struct mf_work wk;

	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_OK);
	assert_int_equal(mf_work_of(&llama8b, &w, &e, &wk), MF_OK);
	mf_step_of(&wk, &none, 1, 1, &st);
	assert_true(st.seconds == 0);
}

static void
test_time_recompute_slows(void **state)
{
	struct mf_workload w = training(4096, 1);
	double plain = step_of(&llama8b, w, &h100, 1, 1).seconds;

	(void)state;
	w.checkpointing = MF_CKPT_FULL;
	assert_true(step_of(&llama8b, w, &h100, 1, 1).seconds > plain);
	w.checkpointing = MF_CKPT_OP;
	assert_true(step_of(&llama8b, w, &h100, 1, 1).seconds > plain);
}

/* Gradient accumulation shares the optimizer step among its
 * micro-batches: a step of each is faster, its FLOPs the same. */
static void
test_time_accumulation(void **state)
{
	struct mf_workload w = training(2048, 1);
	struct mf_step one = step_of(&llama8b, w, &h100, 1, 1);

	(void)state;
	w.grad_accum = 16;
	assert_true(step_of(&llama8b, w, &h100, 1, 1).seconds < one.seconds);
	near(step_of(&llama8b, w, &h100, 1, 1).term[MF_ST_MATMUL],
	    one.term[MF_ST_MATMUL], 1e-12);
}

static void
test_time_lora_faster(void **state)
{
	struct mf_workload w = training(4096, 1);
	double full = step_of(&llama8b, w, &h100, 1, 1).seconds;

	(void)state;
	w.method = MF_LORA;
	w.lora_rank = 16;
	w.lora_targets = MF_LORA_ATTENTION;
	assert_true(step_of(&llama8b, w, &h100, 1, 1).seconds < full);
}

/* A card like h100 with its FLOPS or its bandwidth times k. */
static struct mf_speed
scaled(double flops, double bandwidth)
{
	struct mf_speed c = h100;

	for (int d = 0; d < MF_DT_COUNT; d++)
		c.flops[d] = (int64_t)((double)c.flops[d] * flops);
	c.bandwidth = (int64_t)((double)c.bandwidth * bandwidth);
	return c;
}

/*
 * Decode reads every weight for a few tokens: twice the bandwidth nearly
 * halves a step, twice the FLOPS hardly moves it.  Training 70B on long
 * sequences is the other way round.
 */
static void
test_time_bandwidth_and_flops(void **state)
{
	struct mf_speed fast_mem = scaled(1, 2), fast_math = scaled(2, 1);
	const struct mf_model *big =
	    mf_models_find(models, "meta-llama/Llama-3.1-70B");
	struct mf_workload w;
	double base;

	(void)state;
	mf_workload_defaults(&w);
	w.kind = MF_INFERENCE;
	w.context_len = 4096;
	w.concurrency = 1;
	base = step_of(&llama8b, w, &h100, 1, 1).seconds;
	assert_int_equal(step_of(&llama8b, w, &h100, 1, 1).bound,
	    MF_BOUND_MEMORY);
	assert_true(base / step_of(&llama8b, w, &fast_mem, 1, 1).seconds > 1.8);
	assert_true(
	    base / step_of(&llama8b, w, &fast_math, 1, 1).seconds < 1.1);
	assert_non_null(big);
	w = training(8192, 4);
	w.checkpointing = MF_CKPT_FULL;
	base = step_of(big, w, &h100, 1, 1).seconds;
	assert_int_equal(step_of(big, w, &h100, 1, 1).bound, MF_BOUND_COMPUTE);
	assert_true(base / step_of(big, w, &fast_math, 1, 1).seconds > 1.5);
	assert_true(base / step_of(big, w, &fast_mem, 1, 1).seconds < 1.3);
}

/* Data parallel over 8 GPUs: the gradients' all-reduce hides behind the
 * backward over NVSwitch, not over PCIe through the host. */
static void
test_time_nvswitch_scales(void **state)
{
	struct mf_speed pcie = h100;
	struct mf_workload w = training(2048, 1);
	double one, nvs, pc;

	(void)state;
	pcie.link = MF_LINK_PCIE_NO_P2P;
	pcie.link_bw = INT64_C(25000000000);
	one = step_of(&llama8b, w, &h100, 1, 1).tokens_per_second;
	nvs = step_of(&llama8b, w, &h100, 8, 1).tokens_per_second / 8;
	pc = step_of(&llama8b, w, &pcie, 8, 1).tokens_per_second / 8;
	assert_true(nvs > pc);
	assert_true(nvs <= one * (1 + 1e-12));
	/* Over two nodes the ring crosses the network. */
	assert_true(
	    step_of(&llama8b, w, &h100, 16, 2).tokens_per_second / 16 < nvs);
}

/*
 * Data parallel all-reduces the gradients in the dtype the estimate keeps
 * them in.  LoRA r16 on every linear of Llama 3.1 8B trains T =
 * 41,943,040 adapter parameters, fp32 by default (PEFT upcasts them; the
 * estimate's adapters are T x 16, four 4-byte copies): 167,772,160 bytes,
 * not T x 2; 16-bit adapters (lora.dtype: bf16) 83,886,080.  A full
 * fine-tune in bf16 reduces its 16-bit gradients, P x 2 = 8,030,261,248 x
 * 2 = 16,060,522,496.  Over 8 GPUs of a PCIe card at 25 GB/s the ring
 * moves 2 x 7/8 of the fp32 gradients a GPU, 0.0117440512 s, less what
 * the backward hides.
 */
static void
test_time_lora_grad_bytes(void **state)
{
	struct mf_workload w = training(2048, 1);
	struct mf_speed pcie = h100;
	struct mf_estimate e;
	struct mf_work wk;
	struct mf_step st;
	double ring = 2.0 * 7 / 8 * 167772160 / 25e9, bwd;

	(void)state;
	w.method = MF_LORA;
	w.lora_rank = 16;
	w.lora_targets = MF_LORA_ALL_LINEAR;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_OK);
	assert_int_equal(e.trainable, INT64_C(41943040));
	assert_int_equal(mf_work_of(&llama8b, &w, &e, &wk), MF_OK);
	near(wk.grad_bytes, 167772160.0, 1e-15);
	pcie.link = MF_LINK_PCIE;
	pcie.link_bw = INT64_C(25000000000);
	mf_step_of(&wk, &pcie, 8, 1, &st);
	bwd = (wk.bwd + wk.rec) / (wk.fwd + wk.bwd + wk.rec) *
	    (st.term[MF_ST_MATMUL] + st.term[MF_ST_MEMORY]);
	near(ring, 0.0117440512, 1e-12);
	near(st.term[MF_ST_COMM], ring > bwd ? ring - bwd : 0, 1e-9);
	w.lora_dtype = MF_LORA_BF16;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_OK);
	assert_int_equal(mf_work_of(&llama8b, &w, &e, &wk), MF_OK);
	near(wk.grad_bytes, 83886080.0, 1e-15);
	w = training(2048, 1);
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_OK);
	assert_int_equal(mf_work_of(&llama8b, &w, &e, &wk), MF_OK);
	near(wk.grad_bytes, 16060522496.0, 1e-15);
}

/*
 * Data parallel's all-reduce hides behind the backward, not behind the
 * optimizer's step, which waits for the reduced gradients.  A full
 * fine-tune of Llama 3.1 8B in bf16 over two nodes of 8 H100s reduces
 * P x 2 = 16,060,522,496 bytes; the ring moves 2 x 15/16 of them a GPU at
 * the network's 50 GB/s, 0.6022695936 s, less the backward's share of the
 * matmul and memory terms without the optimizer's bytes (at 3.35 TB/s x
 * Hopper's 0.92).
 */
static void
test_time_dp_optimizer_after_backward(void **state)
{
	struct mf_workload w = training(2048, 1);
	struct mf_estimate e;
	struct mf_work wk;
	struct mf_step st;
	double ring = 2.0 * 15 / 16 * 16060522496.0 / 50e9, opt, bwd;

	(void)state;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_OK);
	assert_int_equal(mf_work_of(&llama8b, &w, &e, &wk), MF_OK);
	mf_step_of(&wk, &h100, 16, 2, &st);
	opt = wk.opt_bytes / (3.35e12 * 0.92);
	assert_true(opt > 0);
	bwd = (wk.bwd + wk.rec) / (wk.fwd + wk.bwd + wk.rec) *
	    (st.term[MF_ST_MATMUL] + st.term[MF_ST_MEMORY] - opt);
	near(ring, 0.6022695936, 1e-12);
	assert_true(ring > bwd);
	near(st.term[MF_ST_COMM], ring - bwd, 1e-9);
}

/* The workload of a manifest's spec (text after "spec:\n"), as read. */
static struct mf_workload
spec_work(const char *spec)
{
	struct mf_error err;
	struct mf_doc *doc;
	struct mf_job job;
	char text[1024];

	snprintf(text, sizeof(text),
	    "apiVersion: memfloor.dev/v1\nkind: Job\nmetadata:\n  name: t\n"
	    "spec:\n%s",
	    spec);
	if (mf_doc_parse(text, strlen(text), MF_DOC_YAML, &doc, &err) !=
	        MF_OK ||
	    mf_job_read(mf_doc_root(doc), "", models, &job, &err) != MF_OK)
		fail_msg("%s", MSG(&err));
	mf_doc_free(doc);
	return job.work;
}

/*
 * FSDP all-gathers the weights as they are stored.  FSDP-QLoRA of Llama
 * 3.1 70B as accelerate runs it (examples/llama-70b-fsdp-qlora.yaml's
 * manifest over 16 GPUs): the weights are 42,709,076,992 bytes, of which
 * bitsandbytes' quant_state, S x 4 + nq x 64 = 68,451,041,280 / 64 x 4 + 560 x
 * 64 = 4,278,225,920, is held whole on every GPU and not gathered:
 * 38,430,851,072 gathered a pass, not P x 2 = 141,107,412,992.  Over two
 * nodes of H100 the ring runs at the network's 50 GB/s: 15/16 of it a
 * GPU, 0.720578 s a pass, forward and (resharded) backward.
 */
static void
test_time_fsdp_qlora_gather(void **state)
{
	const struct mf_model *big =
	    mf_models_find(models, "meta-llama/Llama-3.1-70B");
	struct mf_workload w = spec_work(
	    "  model: {name: meta-llama/Llama-3.1-70B}\n"
	    "  workload:\n    framework: transformers\n    method: qlora\n"
	    "    gradientCheckpointing: true\n    sequenceLength: 2048\n"
	    "    sharding: {gpus: 16}\n");
	struct mf_estimate e;
	struct mf_work wk;
	struct mf_step st;
	double g = 38430851072.0 * 15 / 16 / 50e9, pass, fwd, bwd, want;

	(void)state;
	assert_non_null(big);
	assert_int_equal(mf_est_compute(big, &w, &e), MF_OK);
	assert_int_equal(e.bucket[MF_B_WEIGHTS], INT64_C(42709076992));
	assert_int_equal(e.weights_whole, INT64_C(4278225920));
	assert_int_equal(mf_work_of(big, &w, &e, &wk), MF_OK);
	near(wk.gather_bytes, 38430851072.0, 1e-15);
	assert_int_equal(wk.gathers, 2);
	mf_step_of(&wk, &h100, 16, 2, &st);
	/* What the forward's and the backward's compute hides: not the
	 * optimizer's step over each rank's sixteenth of the state, after
	 * the backward. */
	pass = st.term[MF_ST_MATMUL] + st.term[MF_ST_MEMORY] -
	    wk.opt_bytes / 16 / (3.35e12 * 0.92);
	fwd = wk.fwd / (wk.fwd + wk.bwd + wk.rec) * pass;
	bwd = pass - fwd;
	want = (g > fwd ? g - fwd : 0) +
	    (g + wk.scatter_bytes * 15 / 16 / 50e9 > bwd ?
	            g + wk.scatter_bytes * 15 / 16 / 50e9 - bwd :
	            0);
	near(g, 0.72057845760, 1e-9);
	near(st.term[MF_ST_COMM], want, 1e-9);
}

/* --- placement ------------------------------------------------------------ */

#define CATALOG \
	"apiVersion: memfloor.dev/v1\nkind: GpuCatalog\nreference: REF\n" \
	"gpus:\n" \
	"  - name: REF\n    memory: 80Gi\n    hourlyPrice: 3\n" \
	"    relativeThroughput: 1\n" \
	"    architecture: hopper\n" \
	"    flops: {bf16: 989.4T, fp16: 989.4T}\n" \
	"    memoryBandwidth: 3.35T\n" \
	"    interconnect: {kind: nvswitch, bandwidth: 450G}\n" \
	"  - name: HALF\n    memory: 80Gi\n    hourlyPrice: 1\n" \
	"    relativeThroughput: 0.5\n" \
	"  - name: DOUBLE\n    memory: 80Gi\n    hourlyPrice: 5\n" \
	"    relativeThroughput: 2\n" \
	"    flops: {bf16: 494.7T, fp16: 494.7T}\n"

#define JOB \
	"apiVersion: memfloor.dev/v1\nkind: Job\nmetadata:\n  name: t\n" \
	"spec:\n  model:\n    name: meta-llama/Llama-3.1-8B\n" \
	"  workload:\n    sequenceLength: 2048\n" \
	"    method: lora\n    lora: {rank: 16, targets: all-linear}\n" \
	"    gradientCheckpointing: true\n"

/* The decision on CATALOG for JOB with duration; json, when not NULL,
 * its JSON answer, for the caller to free. */
static struct mf_decision
admit_json(const char *duration, char **json)
{
	static struct mf_catalog *cat;
	struct mf_decision d;
	struct mf_error err;
	struct mf_doc *doc;
	struct mf_job job;
	char text[1024];

	if (cat == NULL &&
	    mf_cat_parse(CATALOG, strlen(CATALOG), "t.yaml", &cat, &err) !=
	        MF_OK)
		fail_msg("catalogue: %s", MSG(&err));
	snprintf(text, sizeof(text), JOB "  duration:\n    %s\n", duration);
	if (mf_doc_parse(text, strlen(text), MF_DOC_YAML, &doc, &err) !=
	        MF_OK ||
	    mf_job_read(mf_doc_root(doc), "", models, &job, &err) != MF_OK ||
	    mf_place(&job, cat, &d, &err) != MF_OK)
		fail_msg("%s", MSG(&err));
	if (json != NULL) {
		struct mf_buf b;
		struct mf_jw w;

		mf_buf_init(&b, 1u << 20);
		mf_jw_init(&w, &b);
		mf_write_decision(&w, NULL, &job, &d, cat);
		assert_int_equal(b.rc, MF_OK);
		*json = b.data;
	}
	mf_doc_free(doc);
	assert_true(d.admitted);
	return d;
}

static struct mf_decision
admit(const char *duration)
{
	return admit_json(duration, NULL);
}

/*
 * Hours follow the tokens: twice as many take twice as long.  A job of
 * referenceHours takes them on the reference card (modelled, though it
 * writes relativeThroughput: the card others are timed through); a card with
 * relativeThroughput 0.5 takes twice as long (its override), and so it
 * costs 2 x $1 against $3 an hour.
 */
static void
test_time_place_hours(void **state)
{
	struct mf_decision a = admit("tokens: 1000000000");
	struct mf_decision b = admit("tokens: 2000000000");
	struct mf_decision r = admit("referenceHours: 10");

	(void)state;
	near(on(&b, "REF")->hours, 2 * on(&a, "REF")->hours, 1e-9);
	near(on(&b, "HALF")->cost, 2 * on(&a, "HALF")->cost, 1e-9);
	near(on(&a, "REF")->hours,
	    1e9 / on(&a, "REF")->step.tokens_per_second / 3600, 1e-9);
	near(on(&r, "REF")->hours, 10, 1e-9);
	near(on(&r, "HALF")->hours, 20, 1e-9);
	near(on(&r, "HALF")->step.tokens_per_second,
	    on(&r, "REF")->step.tokens_per_second / 2, 1e-9);
	assert_string_equal(r.placement.gpu->name, "HALF");
	near(r.placement.cost, 20 * 1.0, 1e-9);
}

/*
 * A card timed through relativeThroughput runs the reference card's step
 * over it, and its MFU is the model's FLOPs over that step at the card's
 * own peak: DOUBLE (relativeThroughput 2, bf16 494.7T, half REF's
 * 989.4T) takes half REF's step at half its peak, four times REF's MFU.
 * Llama 3.1 8B LoRA r16 all-linear at s 2048: (forward + backward) / (REF's
 * step / 2 x 494.7e12).  HALF gives no flops: its peak is not known, and
 * neither is its MFU, which the answer says is null.
 */
static void
test_time_place_mfu(void **state)
{
	struct mf_workload w = training(2048, 1);
	char *json;
	struct mf_decision d = admit_json("tokens: 1000000000", &json);
	const struct mf_placement *ref = on(&d, "REF");
	const struct mf_placement *dbl = on(&d, "DOUBLE");
	struct mf_flops f;

	(void)state;
	w.method = MF_LORA;
	w.lora_rank = 16;
	w.lora_targets = MF_LORA_ALL_LINEAR;
	w.checkpointing = MF_CKPT_FULL;
	mf_work_flops(&llama8b, &w, &f);
	near(ref->step.mfu, (f.fwd + f.bwd) / (ref->step.seconds * 989.4e12),
	    1e-9);
	near(dbl->step.seconds, ref->step.seconds / 2, 1e-12);
	near(dbl->step.mfu,
	    (f.fwd + f.bwd) / (ref->step.seconds / 2 * 494.7e12), 1e-9);
	near(dbl->step.mfu, 4 * ref->step.mfu, 1e-9);
	assert_true(on(&d, "HALF")->step.mfu == 0);
	assert_non_null(strstr(json, "{\"gpu\":\"HALF\","));
	assert_non_null(strstr(strstr(json, "{\"gpu\":\"HALF\","),
	    "\"mfu\":null,\"bound\""));
	free(json);
}

/*
 * float8 (design 22): the decoder layers' linears run all three of their
 * matmuls in fp8, forward 2 x 6,979,321,856 a token, backward twice it:
 * 3 x 4096 x 13,958,643,712 = 171,523,813,933,056 at s = 4096; every
 * layer checkpointed adds a layer's linears but down_proj again, 4096 x
 * 32 x (436,207,616 - 117,440,512) = 41,781,441,855,488.  The step's
 * matmul term: the rest at bf16's 989.4 TFLOP/s, those at fp8's 1979,
 * both at Hopper's 0.803.  The memory term holds torchao's casts around
 * each matmul besides (work.c, float8_casts).
 */
static void
test_time_float8(void **state)
{
	struct mf_workload w = training(4096, 1);
	struct mf_estimate e;
	struct mf_work wk, plain;
	struct mf_step st, st0;
	double mm, c, m;

	(void)state;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_OK);
	assert_int_equal(mf_work_of(&llama8b, &w, &e, &plain), MF_OK);
	assert_true(plain.fp8 == 0);
	w.float8 = MF_F8_TENSORWISE;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_OK);
	assert_int_equal(mf_work_of(&llama8b, &w, &e, &wk), MF_OK);
	near(wk.fp8, 171523813933056.0, 1e-12);
	near(wk.fwd + wk.bwd + wk.rec, plain.fwd + plain.bwd + plain.rec,
	    1e-12);
	mf_step_of(&wk, &h100, 1, 1, &st);
	mf_step_of(&plain, &h100, 1, 1, &st0);
	mm = wk.fwd + wk.bwd + wk.rec;
	c = ((mm - wk.fp8) / 989.4e12 + wk.fp8 / 1979e12) / 0.803;
	m = wk.mm_bytes / (3.35e12 * 0.92);
	near(st.term[MF_ST_MATMUL], c > m ? c : m, 1e-12);
	assert_true(st.term[MF_ST_MATMUL] < st0.term[MF_ST_MATMUL]);
	/* The casts (work.c, float8_casts; tests/torch/traffic.py
	 * --float8): a layer's linears read 5 x 4096 + 4096 + 14336 = 38912
	 * input and write 4096 + 2 x 1024 + 4096 + 2 x 14336 + 4096 = 43008
	 * output elements a token, and hold 4096 x (2 x 4096 + 2 x 1024) + 3
	 * x 4096 x 14336 = 218103808 weights; 32 layers, 4096 tokens.
	 * Tensorwise, 33 bytes an element of each cast: forward the input
	 * and the weight, backward those again and the grad_output twice. */
	near(wk.bytes - plain.bytes,
	    4096.0 * 32 * (33.0 * 38912 * 2 + 66.0 * 43008) +
	        33.0 * 218103808 * 32 * 2,
	    1e-12);
	near(wk.bytes - plain.bytes, 1169304846336.0, 1e-12);
	/* 24 ops a linear forward, 48 backward, 7 linears, 32 layers. */
	near(wk.kernels - plain.kernels, (24.0 + 48) * 7 * 32, 1e-12);
	assert_true(st.term[MF_ST_MEMORY] > st0.term[MF_ST_MEMORY]);
	char text[MF_STEP_FORMULA_MAX], want[MF_STEP_FORMULA_MAX];
	struct mf_buf b;

	mf_buf_fixed(&b, text, sizeof(text));
	mf_step_formula(&st, MF_ST_MATMUL, &b);
	snprintf(want, sizeof(want),
	    "max(%.4g FLOP / (9.894e+14 FLOP/s x 0.803) + %.4g fp8 FLOP / "
	    "(1.979e+15 FLOP/s x 0.803), %.4g B / (3.35e+12 B/s x 0.92))",
	    mm - wk.fp8, wk.fp8, st.fig[MF_SF_MM_BYTES]);
	assert_string_equal(text, want);
	w.float8 = MF_F8_ROWWISE;
	w.checkpointing = MF_CKPT_FULL;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_OK);
	assert_int_equal(mf_work_of(&llama8b, &w, &e, &wk), MF_OK);
	near(wk.fp8, 171523813933056.0 + 41781441855488.0, 1e-12);
	/* Rowwise (bf16: forward input 32.5, weight 33.05, output 0.43, a
	 * row 112.1, a column 49.9; backward 45.5, 44.95, 65.57, 111.9,
	 * 174.1), every layer's forward recomputed: 7 x 32 = 224 linears,
	 * 38912 x 32 inputs and 43008 x 32 outputs a token. */
	w.checkpointing = MF_CKPT_FULL;
	w.float8 = MF_F8_NONE;
	assert_int_equal(mf_est_compute(&llama8b, &w, &e), MF_OK);
	assert_int_equal(mf_work_of(&llama8b, &w, &e, &plain), MF_OK);
	near(wk.bytes - plain.bytes,
	    2 *
	            (4096.0 *
	                    (32.5 * 38912 * 32 + 0.43 * 43008 * 32 +
	                        112.1 * 224) +
	                33.05 * 218103808 * 32 + 49.9 * (38912 + 43008) * 32) +
	        4096.0 *
	            (45.5 * 38912 * 32 + 65.57 * 43008 * 32 + 111.9 * 224) +
	        44.95 * 218103808 * 32 + 174.1 * (38912 + 43008) * 32,
	    1e-12);
	near(wk.bytes - plain.bytes, 1714135831674.88, 1e-12);
	near(wk.kernels - plain.kernels, (30.0 + 68 + 30) * 224, 1e-12);
}

#define F8_CATALOG(cards) \
	"apiVersion: memfloor.dev/v1\nkind: GpuCatalog\nreference: NOFP8\n" \
	"gpus:\n" cards
#define F8_CARD(name, price, fp8) \
	"  - name: " name "\n    memory: 200Gi\n    hourlyPrice: " price "\n" \
	"    architecture: hopper\n" \
	"    flops: {bf16: 989.4T, fp16: 989.4T" fp8 "}\n" \
	"    memoryBandwidth: 3.35T\n" \
	"    interconnect: {kind: nvswitch, bandwidth: 450G}\n"

/* A full fine-tune of Llama 3.1 8B on the catalogue cat_text, float8 as
 * given; *cat, which the decision points into, for the caller to
 * release. */
static struct mf_decision
place_float8(const char *cat_text, const char *float8, struct mf_catalog **cat)
{
	struct mf_decision d;
	struct mf_error err;
	struct mf_doc *doc;
	struct mf_job job;
	char text[1024];

	if (mf_cat_parse(cat_text, strlen(cat_text), "t.yaml", cat, &err) !=
	    MF_OK)
		fail_msg("catalogue: %s", MSG(&err));
	snprintf(text, sizeof(text),
	    "apiVersion: memfloor.dev/v1\nkind: Job\nmetadata:\n  name: t\n"
	    "spec:\n  model:\n    name: meta-llama/Llama-3.1-8B\n"
	    "  workload:\n    sequenceLength: 2048\n    microBatch: 1\n"
	    "    float8: %s\n"
	    "  duration:\n    tokens: 1000000000\n",
	    float8);
	if (mf_doc_parse(text, strlen(text), MF_DOC_YAML, &doc, &err) !=
	        MF_OK ||
	    mf_job_read(mf_doc_root(doc), "", models, &job, &err) != MF_OK ||
	    mf_place(&job, *cat, &d, &err) != MF_OK)
		fail_msg("%s: %s", float8, MSG(&err));
	mf_doc_free(doc);
	return d;
}

/*
 * A card without fp8 tensor cores (no flops.fp8) cannot run float8: the
 * cheaper such card is chosen without float8 and passed over with it,
 * the warning naming it; with no card that has them, the job is
 * rejected for that reason.
 */
static void
test_time_float8_cards(void **state)
{
	static const char both[] = F8_CATALOG(
	    F8_CARD("FP8", "3", ", fp8: 1979T") F8_CARD("NOFP8", "1", ""));
	static const char none[] = F8_CATALOG(F8_CARD("NOFP8", "1", ""));
	struct mf_catalog *cat;
	struct mf_decision d;

	(void)state;
	d = place_float8(both, "none", &cat);
	assert_true(d.admitted);
	assert_string_equal(d.placement.gpu->name, "NOFP8");
	mf_cat_unref(cat);
	d = place_float8(both, "tensorwise", &cat);
	assert_true(d.admitted);
	assert_string_equal(d.placement.gpu->name, "FP8");
	assert_int_equal(d.nalt, 0);
	assert_int_equal(d.nwarn, 1);
	assert_string_equal(d.warnings[0],
	    "float8 needs fp8 tensor cores: not considered NOFP8");
	mf_cat_unref(cat);
	d = place_float8(none, "rowwise", &cat);
	assert_false(d.admitted);
	assert_string_equal(d.reason,
	    "float8 needs fp8 tensor cores, and no card in the catalogue "
	    "gives flops.fp8");
	mf_cat_unref(cat);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_flops_full),
		cmocka_unit_test(test_time_flops_recompute),
		cmocka_unit_test(test_time_flops_lora),
		cmocka_unit_test(test_time_flops_decode),
		cmocka_unit_test(test_time_step_terms),
		cmocka_unit_test(test_time_recompute_slows),
		cmocka_unit_test(test_time_lora_faster),
		cmocka_unit_test(test_time_accumulation),
		cmocka_unit_test(test_time_bandwidth_and_flops),
		cmocka_unit_test(test_time_nvswitch_scales),
		cmocka_unit_test(test_time_fsdp_qlora_gather),
		cmocka_unit_test(test_time_lora_grad_bytes),
		cmocka_unit_test(test_time_dp_optimizer_after_backward),
		cmocka_unit_test(test_time_place_hours),
		cmocka_unit_test(test_time_place_mfu),
		cmocka_unit_test(test_time_float8),
		cmocka_unit_test(test_time_float8_cards),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
