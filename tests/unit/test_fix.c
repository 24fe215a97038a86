/*
 * test_fix.c: the fix table's rules (fix.h): the order in which sets of
 * fixes are preferred at equal cost, which sets go together, when the
 * count fix applies, the code change a fix gives a job of each kind, and
 * the value a fix that sets a GPU count writes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fix/fix.h"
#include "manifest/manifest.h"
#include "base/internal.h"

#define BIT(f) MF_FIXBIT(MF_FIX_##f)

/*
 * A set ranks by its most intrusive fix first (design 6): the serving
 * fixes kvfp8, int8, int4, tensor, then count; the post's steps before
 * 8-bit Adam and FSDP; every modelling decision after all of them.
 */
static void
test_fix_order_of_sets(void **state)
{
	(void)state;
	assert_int_equal(mf_fix_order(0), 0);
	assert_true(mf_fix_order(BIT(KVFP8)) < mf_fix_order(BIT(INT8)));
	assert_true(mf_fix_order(BIT(INT8)) < mf_fix_order(BIT(INT4)));
	assert_true(mf_fix_order(BIT(INT4)) < mf_fix_order(BIT(TENSOR)));
	assert_true(mf_fix_order(BIT(TENSOR)) < mf_fix_order(BIT(REPLICAS)));
	/* Two mild fixes before one that changes more. */
	assert_true(
	    mf_fix_order(BIT(KVFP8) | BIT(INT8)) < mf_fix_order(BIT(INT4)));
	assert_true(
	    mf_fix_order(BIT(INT4)) < mf_fix_order(BIT(KVFP8) | BIT(INT4)));
	assert_true(mf_fix_order(BIT(CHECKPOINTING) | BIT(ADAM8BIT)) <
	    mf_fix_order(BIT(FSDP)));
	/* A modelling decision after everything that is not one. */
	assert_true(mf_fix_order(BIT(FSDP) | BIT(CHECKPOINTING) |
	                BIT(REPLICAS)) < mf_fix_order(BIT(LORA)));
	assert_true(mf_fix_order(BIT(LORA)) < mf_fix_order(BIT(QLORA)));
	assert_true(mf_fix_order(BIT(QLORA)) < mf_fix_order(BIT(CONTEXT)));
}

/* count takes the job's own replicas: never with fsdp or tensor, which
 * choose their counts themselves. */
static void
test_fix_count_compatible(void **state)
{
	(void)state;
	assert_true(mf_fix_compatible(BIT(REPLICAS)));
	assert_true(mf_fix_compatible(
	    BIT(REPLICAS) | BIT(CHECKPOINTING) | BIT(ADAM8BIT) | BIT(LORA)));
	assert_true(mf_fix_compatible(BIT(REPLICAS) | BIT(KVFP8) | BIT(INT4)));
	assert_false(mf_fix_compatible(BIT(REPLICAS) | BIT(FSDP)));
	assert_false(mf_fix_compatible(BIT(REPLICAS) | BIT(TENSOR)));
}

/* count applies to a job of either kind that FSDP does not shard. */
static void
test_fix_count_applies(void **state)
{
	struct mf_job job;

	(void)state;
	memset(&job, 0, sizeof(job));
	job.count = 1;
	mf_workload_defaults(&job.work);
	assert_true(mf_fix_applies(&job, &job.work, MF_FIX_REPLICAS));
	job.work.kind = MF_INFERENCE;
	assert_true(mf_fix_applies(&job, &job.work, MF_FIX_REPLICAS));
	job.work.kind = MF_TRAINING;
	job.work.shard_gpus = 4;
	job.count = job.count_given = 4;
	assert_false(mf_fix_applies(&job, &job.work, MF_FIX_REPLICAS));
	assert_string_equal(mf_fix_name(MF_FIX_REPLICAS), "count");
	assert_int_equal(mf_fix_lookup("count"), MF_FIX_REPLICAS);
	assert_int_equal(mf_fix_info(MF_FIX_REPLICAS)->kind, MF_FIXV_GPUS);
}

/* A training job on 2 GPUs that sdpa and microbatch have something to
 * change in. */
static void
fixable_job(struct mf_job *job)
{
	memset(job, 0, sizeof(*job));
	job->count = 2;
	job->count_given = 1;
	mf_workload_defaults(&job->work);
	job->work.attention = MF_EAGER;
	job->work.micro_batch = 4;
}

/*
 * With the optimizer in backward only the fixes that keep it as torchtune
 * runs it and the estimate models it apply: sdpa and checkpointing; not
 * microbatch (gradient accumulation, which torchtune refuses with
 * optimizer_in_bwd), count (more GPUs), nor autocast, lora, qlora and
 * fsdp, whose workloads mf_est_oib_refused refuses; adam8bit is.
 */
static void
test_fix_optimizer_in_backward(void **state)
{
	struct mf_job job;
	struct mf_workload *w = &job.work;

	(void)state;
	fixable_job(&job);
	for (int f = 0; f < MF_FIX_COUNT; f++)
		if (f != MF_FIX_AUTOCAST && f < MF_FIX_KVFP8)
			assert_true(mf_fix_applies(&job, w, (enum mf_fix)f));
	assert_true(mf_fix_applies(&job, w, MF_FIX_REPLICAS));
	w->precision = MF_BF16_TRUE;
	w->optimizer_in_backward = 1;
	assert_true(mf_fix_applies(&job, w, MF_FIX_SDPA));
	assert_true(mf_fix_applies(&job, w, MF_FIX_CHECKPOINTING));
	assert_false(mf_fix_applies(&job, w, MF_FIX_MICROBATCH));
	/* bitsandbytes' AdamW8bit a weight, as torchtune makes them. */
	assert_true(mf_fix_applies(&job, w, MF_FIX_ADAM8BIT));
	assert_false(mf_fix_applies(&job, w, MF_FIX_LORA));
	assert_false(mf_fix_applies(&job, w, MF_FIX_QLORA));
	assert_false(mf_fix_applies(&job, w, MF_FIX_FSDP));
	assert_false(mf_fix_applies(&job, w, MF_FIX_REPLICAS));
	/* fp32 to bf16, whose fp32 master weights torchtune does not keep. */
	w->precision = MF_FP32;
	assert_false(mf_fix_applies(&job, w, MF_FIX_AUTOCAST));
	w->optimizer_in_backward = 0;
	assert_true(mf_fix_applies(&job, w, MF_FIX_AUTOCAST));
}

/*
 * With activation offloading every fix applies but fsdp, whose workload
 * mf_est_offload_refused refuses (measured on one GPU), and more GPUs of
 * data parallel (count) keep it.
 */
static void
test_fix_activation_offload(void **state)
{
	struct mf_job job;
	struct mf_workload *w = &job.work;

	(void)state;
	fixable_job(&job);
	w->precision = MF_FP32;
	w->checkpointing = MF_CKPT_FULL;
	w->activation_offload = 1;
	for (int f = 0; f < MF_FIX_KVFP8; f++)
		if (f != MF_FIX_CHECKPOINTING)
			assert_int_equal(mf_fix_applies(&job, w,
			                     (enum mf_fix)f),
			    f != MF_FIX_FSDP);
	assert_true(mf_fix_applies(&job, w, MF_FIX_REPLICAS));
	w->activation_offload = 0;
	assert_true(mf_fix_applies(&job, w, MF_FIX_FSDP));
}

/* A training job and a served one run data parallel differently. */
static void
test_fix_code_by_kind(void **state)
{
	(void)state;
	assert_non_null(
	    strstr(mf_fix_code(MF_FIX_REPLICAS, 0), "DistributedDataParallel"));
	assert_string_equal(mf_fix_code(MF_FIX_REPLICAS, 1),
	    "vllm serve MODEL --data-parallel-size N");
	/* A fix with one code change gives it to both. */
	assert_string_equal(mf_fix_code(MF_FIX_KVFP8, 0),
	    mf_fix_code(MF_FIX_KVFP8, 1));
	assert_null(mf_fix_code(MF_FIX_COUNT, 0));
}

/*
 * A fix that sets a GPU count is told the GPUs the job runs on.  A
 * replica is tensor x pipeline GPUs and the tensor fix adds none: on 16
 * GPUs with pipeline 2 each stage is tensor parallel over 16 / 2 = 8;
 * fsdp shards over all 16.
 */
static void
test_fix_gpus_pipeline(void **state)
{
	struct mf_workload w;

	(void)state;
	mf_workload_defaults(&w);
	w.kind = MF_INFERENCE;
	w.pipeline = 2;
	assert_int_equal(mf_fix_gpus_value(MF_FIX_TENSOR, &w, 16), 8);
	assert_int_equal(mf_fix_gpus_value(MF_FIX_FSDP, &w, 16), 16);
	assert_int_equal(mf_fix_gpus_value(MF_FIX_REPLICAS, &w, 16), 16);
	mf_fix_apply(&w, BIT(TENSOR), 16);
	assert_int_equal(w.tensor, 8);
	assert_int_equal(w.pipeline, 2);
	w.pipeline = 1;
	mf_fix_apply(&w, BIT(TENSOR), 4);
	assert_int_equal(w.tensor, 4);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fix_order_of_sets),
		cmocka_unit_test(test_fix_count_compatible),
		cmocka_unit_test(test_fix_count_applies),
		cmocka_unit_test(test_fix_code_by_kind),
		cmocka_unit_test(test_fix_gpus_pipeline),
		cmocka_unit_test(test_fix_optimizer_in_backward),
		cmocka_unit_test(test_fix_activation_offload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
