/*
 * test_manifest.c: the Job manifest of design section 3, read strictly.
 *
 * Fixtures are found under $MF_TOP (the repository root; "." when unset):
 * tests/data/unit/job-*.{yaml,json} and the shipped catalog/models.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "doc/doc.h"
#include "fields/fields.h"
#include "fingerprint/fingerprint.h"
#include "fix/fix.h"
#include "manifest/manifest.h"
#include "model/model.h"
#include "base/qty.h"
#include "files.h"
#include "msg.h"

#define GIB (INT64_C(1) << 30)

static const struct mf_models *models;

/* A fixture under the top of the tree, whole; the caller frees it. */
static char *
fixture(const char *rel)
{
	char path[512], *buf;

	buf = slurp(top_path(path, sizeof(path), rel), NULL);
	if (buf == NULL)
		fail_msg("cannot read %s", path);
	return buf;
}

static int
setup(void **state)
{
	struct mf_models *m = NULL;

	(void)state;
	if (shipped_data(NULL, &m) != 0)
		return -1;
	models = m;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	mf_models_free((struct mf_models *)models);
	models = NULL;
	return 0;
}

/* Parse text (AUTO) and read it; *doc must be freed by the caller. */
static enum mf_rc
read_job(const char *text, struct mf_doc **doc, struct mf_job *job,
    struct mf_error *err)
{
	enum mf_rc rc;

	memset(err, 0, sizeof(*err));
	rc = mf_doc_parse(text, strlen(text), MF_DOC_AUTO, doc, err);
	if (rc != MF_OK) {
		print_message("parse: %s\n", MSG(err));
		return rc;
	}
	return mf_job_read(mf_doc_root(*doc), "", models, job, err);
}

static void
read_ok(const char *text, struct mf_doc **doc, struct mf_job *job)
{
	struct mf_error err;
	enum mf_rc rc;

	rc = read_job(text, doc, job, &err);
	if (rc != MF_OK)
		print_message("unexpected: %s\n", MSG(&err));
	assert_int_equal(rc, MF_OK);
}

/*
 * Reading fails with MF_EINVAL on field; line and column are checked
 * unless negative; the message holds part; the job is untouched.
 */
static void
expect_err_at(const char *text, const char *field, int line, int column,
    const char *part)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;
	struct mf_error err;
	enum mf_rc rc;

	memset(&job, 0xa5, sizeof(job));
	rc = read_job(text, &doc, &job, &err);
	assert_non_null(doc);
	mf_doc_free(doc);
	assert_int_equal(rc, MF_EINVAL);
	assert_string_equal(err.field, field);
	if (line >= 0)
		assert_int_equal(err.line, line);
	if (column >= 0)
		assert_int_equal(err.column, column);
	if (strstr(MSG(&err), part) == NULL)
		fail_msg("message '%s' lacks '%s'", MSG(&err), part);
	for (size_t i = 0; i < sizeof(job); i++)
		if (((unsigned char *)&job)[i] != 0xa5)
			fail_msg("job written at byte %zu on error", i);
}

/* expect_err_at without the column. */
static void
expect_err(const char *text, const char *field, int line, const char *part)
{
	expect_err_at(text, field, line, -1, part);
}

#define HDR "apiVersion: memfloor.dev/v1\nkind: Job\nmetadata:\n  name: t\n"
/* A valid spec header: "spec:" is line 5, the floor on line 8. */
#define SPEC HDR "spec:\n  resources:\n    gpu:\n      minMemory: 40Gi\n"
/* The shipped Llama 3.1 8B: spec.model on line 6, its name on line 7. */
#define MSPEC HDR "spec:\n  model:\n    name: meta-llama/Llama-3.1-8B\n"

/* --- fields --- */

/* Every field of design 3 that full fine-tuning takes, in job-full: none
 * of them is at its default. */
static void
check_full(const struct mf_job *job)
{
	const struct mf_workload *w = &job->work;
	const struct mf_model *llama;

	assert_string_equal(job->name, "llama-8b-full");
	/* 88Gi = 88 x 2^30 = 94,489,280,512 bytes. */
	assert_int_equal(job->min_memory, INT64_C(94489280512));
	assert_int_equal(job->min_memory_format, MF_QTY_BINARY);
	assert_int_equal(job->count, 2);
	assert_true(job->count_given);
	assert_int_equal(job->model_source, MF_MODEL_NAMED);
	assert_string_equal(job->model_name, "meta-llama/Llama-3.1-8B");
	assert_null(job->config_url);
	llama = mf_models_find(models, "meta-llama/Llama-3.1-8B");
	assert_non_null(llama);
	assert_int_equal(job->model.hidden, llama->hidden);
	assert_int_equal(job->model.layers, llama->layers);
	assert_int_equal(job->model.heads, llama->heads);
	assert_int_equal(job->model.kv_heads, llama->kv_heads);
	assert_int_equal(job->model.intermediate, llama->intermediate);
	assert_int_equal(job->model.vocab, llama->vocab);
	assert_int_equal(mf_model_params(&job->model), INT64_C(8030261248));
	assert_int_equal(w->kind, MF_TRAINING);
	assert_int_equal(w->method, MF_FULL);
	assert_int_equal(w->seq_len, 4096);
	assert_int_equal(w->micro_batch, 2);
	assert_int_equal(w->precision, MF_FP16);
	assert_int_equal(w->optimizer, MF_ADAM8BIT);
	assert_int_equal(w->checkpointing, 1);
	assert_int_equal(w->attention, MF_FLASH);
	assert_int_equal(w->shard_gpus, 2);
	assert_true(job->reference_hours == 12);
	assert_true(job->max_hourly_price == 20.5);
	assert_true(job->max_cost == 500);
	assert_true(job->deadline_hours == 24);
	assert_int_equal(job->allowed_fixes,
	    MF_FIXBIT(MF_FIX_CHECKPOINTING) | MF_FIXBIT(MF_FIX_ADAM8BIT) |
	        MF_FIXBIT(MF_FIX_FSDP));
}

static void
test_read_full_yaml(void **state)
{
	char *text = fixture("tests/data/unit/job-full.yaml");
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(text, &doc, &job);
	check_full(&job);
	mf_doc_free(doc);
	free(text);
}

static void
test_read_full_json(void **state)
{
	char *text = fixture("tests/data/unit/job-full.json");
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(text, &doc, &job);
	check_full(&job);
	mf_doc_free(doc);
	free(text);
}

/* Defaults of design 3: count 1, training, full, b 1, bf16, adamw, no
 * checkpointing, sdpa, LoRA r16 all-linear, kvCacheDtype bf16; no limits,
 * no referenceHours, no fixes allowed. */
static void
test_read_defaults(void **state)
{
	char *text = fixture("tests/data/unit/job-minimal.yaml");
	struct mf_doc *doc = NULL;
	struct mf_job job;
	const struct mf_workload *w = &job.work;

	(void)state;
	read_ok(text, &doc, &job);
	assert_string_equal(job.name, "floor-only");
	/* 40Gi = 40 x 2^30. */
	assert_int_equal(job.min_memory, 40 * GIB);
	assert_int_equal(job.count, 1);
	assert_false(job.count_given);
	assert_int_equal(job.model_source, MF_MODEL_NONE);
	assert_null(job.model_name);
	assert_null(job.config_url);
	assert_int_equal(w->kind, MF_TRAINING);
	assert_int_equal(w->method, MF_FULL);
	assert_int_equal(w->seq_len, 0);
	assert_int_equal(w->micro_batch, 1);
	assert_int_equal(w->precision, MF_BF16);
	assert_int_equal(w->optimizer, MF_ADAMW);
	assert_int_equal(w->checkpointing, 0);
	assert_int_equal(w->attention, MF_SDPA);
	assert_int_equal(w->lora_rank, 16);
	assert_int_equal(w->lora_targets, MF_LORA_ALL_LINEAR);
	assert_int_equal(w->shard_gpus, 1);
	assert_int_equal(w->kv_dtype, MF_KV_BF16);
	assert_int_equal(w->context_len, 0);
	assert_true(job.reference_hours == 0);
	assert_true(job.max_hourly_price < 0);
	assert_true(job.max_cost < 0);
	assert_true(job.deadline_hours < 0);
	assert_int_equal(job.allowed_fixes, 0);
	mf_doc_free(doc);
	free(text);
}

/* An inline config.json reads into the same shapes as the shipped file:
 * 8,030,261,248 parameters (shared/models/README.md). */
static void
test_read_inline_config(void **state)
{
	char *text = fixture("tests/data/unit/job-inline.yaml");
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(text, &doc, &job);
	assert_int_equal(job.model_source, MF_MODEL_INLINE);
	assert_null(job.model_name);
	assert_int_equal(job.model.hidden, 4096);
	assert_int_equal(job.model.layers, 32);
	assert_int_equal(job.model.heads, 32);
	assert_int_equal(job.model.kv_heads, 8);
	assert_int_equal(job.model.head_dim, 128);
	assert_int_equal(mf_model_params(&job.model), INT64_C(8030261248));
	assert_int_equal(job.work.method, MF_LORA);
	assert_int_equal(job.work.seq_len, 2048);
	assert_int_equal(job.work.lora_rank, 8);
	assert_int_equal(job.work.lora_targets, MF_LORA_ATTENTION);
	assert_int_equal(job.min_memory, 0);
	mf_doc_free(doc);
	free(text);
}

static void
test_read_inference(void **state)
{
	char *text = fixture("tests/data/unit/job-inference.yaml");
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(text, &doc, &job);
	assert_int_equal(job.work.kind, MF_INFERENCE);
	assert_int_equal(job.work.concurrency, 32);
	assert_int_equal(job.work.context_len, 8192);
	assert_int_equal(job.work.seq_len, 0);
	assert_int_equal(job.work.kv_dtype, MF_KV_FP8);
	mf_doc_free(doc);
	free(text);
}

/* Design 19's precisions and checkpointing, each as the workload holds
 * it; a value outside them is an error that lists the known ones. */
static void
test_read_recipe(void **state)
{
	static const struct {
		const char *text;
		int precision, ckpt;
		int64_t every;
	} cases[] = {
		{ "precision: bf16-mixed", MF_BF16_MIXED, MF_CKPT_NONE, 1 },
		{ "precision: bf16-true", MF_BF16_TRUE, MF_CKPT_NONE, 1 },
		{ "precision: fp16-mixed", MF_FP16_MIXED, MF_CKPT_NONE, 1 },
		{ "gradientCheckpointing: true", MF_BF16, MF_CKPT_FULL, 1 },
		{ "gradientCheckpointing: op", MF_BF16, MF_CKPT_OP, 1 },
		{ "gradientCheckpointing: 4", MF_BF16, MF_CKPT_FULL, 4 },
		{ "gradientCheckpointing: false", MF_BF16, MF_CKPT_NONE, 1 },
	};
	char text[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mf_doc *doc = NULL;
		struct mf_job job;

		snprintf(text, sizeof(text), SPEC "  workload:\n    %s\n",
		    cases[i].text);
		read_ok(text, &doc, &job);
		assert_int_equal(job.work.precision, cases[i].precision);
		assert_int_equal(job.work.checkpointing, cases[i].ckpt);
		assert_int_equal(job.work.ckpt_every, cases[i].every);
		mf_doc_free(doc);
	}
	expect_err(SPEC "  workload:\n    precision: bf16-amp\n",
	    "spec.workload.precision", 10,
	    "'bf16-amp' is not one of bf16, bf16-mixed, bf16-true, fp16, "
	    "fp16-mixed, fp32");
	expect_err(SPEC "  workload:\n    gradientCheckpointing: 0\n",
	    "spec.workload.gradientCheckpointing", 10, "");
	expect_err(SPEC "  workload:\n    gradientCheckpointing: selective\n",
	    "spec.workload.gradientCheckpointing", 10,
	    "not one of false, true, op or a number of layers N");
}

/* lora.targets: all-linear, attention, or a list of module names (design
 * 22), PEFT's target_modules; lines 8 to 11 below MSPEC. */
#define LORA MSPEC "  workload:\n    method: lora\n    sequenceLength: 64\n"

static void
test_read_lora_targets(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(LORA "    lora:\n      targets: [q_proj, v_proj]\n", &doc,
	    &job);
	assert_int_equal(job.work.lora_targets, MF_LORA_LIST);
	assert_int_equal(job.work.lora_modules,
	    MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_V));
	assert_int_equal(job.targets_line, 12);
	mf_doc_free(doc);
	read_ok(LORA "    lora: {targets: [gate_up_proj, lm_head]}\n", &doc,
	    &job);
	assert_int_equal(job.work.lora_modules,
	    MF_LORA_BIT(MF_LIN_GATE_UP) | MF_LORA_HEAD);
	mf_doc_free(doc);
	read_ok(LORA "    lora: {targets: attention}\n", &doc, &job);
	assert_int_equal(job.work.lora_targets, MF_LORA_ATTENTION);
	mf_doc_free(doc);
	expect_err(LORA "    lora:\n      targets: [q_proj, qproj]\n",
	    "spec.workload.lora.targets[1]", 12,
	    "'qproj' is not a module name (q_proj, k_proj, v_proj, qkv_proj, o_proj, gate_proj, up_proj, gate_up_proj, down_proj, lm_head)");
	expect_err(LORA "    lora:\n      targets: []\n",
	    "spec.workload.lora.targets", 12,
	    "is an empty list: give at least one of q_proj");
	expect_err(LORA "    lora:\n      targets: 4\n",
	    "spec.workload.lora.targets", 12,
	    "must be one of all-linear, attention or a list of names");
	expect_err(LORA "    lora:\n      targets: all\n",
	    "spec.workload.lora.targets", 12,
	    "'all' is not one of all-linear, attention");
	/* lora.dtype: the adapters' dtype, fp32 by default (PEFT's). */
	read_ok(LORA, &doc, &job);
	assert_int_equal(job.work.lora_dtype, MF_LORA_FP32);
	mf_doc_free(doc);
	read_ok(LORA "    lora: {dtype: bf16}\n", &doc, &job);
	assert_int_equal(job.work.lora_dtype, MF_LORA_BF16);
	mf_doc_free(doc);
	expect_err(LORA "    lora:\n      dtype: fp8\n",
	    "spec.workload.lora.dtype", 12,
	    "'fp8' is not one of fp32, bf16, fp16");
}

/* qlora.kbitPrep: PEFT's prepare_model_for_kbit_training, with qlora. */
static void
test_read_kbit_prep(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(MSPEC "  workload:\n    method: qlora\n    sequenceLength: 64\n"
	              "    qlora: {kbitPrep: true}\n",
	    &doc, &job);
	assert_int_equal(job.work.qlora_kbit_prep, 1);
	mf_doc_free(doc);
	/* With method lora the qlora block has no effect: refused. */
	expect_err(LORA "    qlora: {kbitPrep: true}\n", "spec.workload.qlora",
	    11, "");
}

/* configUrl is kept for the fetcher; the model is filled later. */
static void
test_read_config_url(void **state)
{
	char *text = fixture("tests/data/unit/job-url.json");
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(text, &doc, &job);
	assert_int_equal(job.model_source, MF_MODEL_URL);
	assert_string_equal(job.config_url,
	    "https://models.example/llama/config.json");
	assert_int_equal(job.work.seq_len, 1024);
	mf_doc_free(doc);
	free(text);
}

/* sharding.gpus sets the count when count is not written. */
static void
test_read_sharding_sets_count(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(MSPEC "  workload:\n    sequenceLength: 4096\n"
	              "    sharding: {gpus: 4}\n",
	    &doc, &job);
	assert_int_equal(job.work.shard_gpus, 4);
	assert_int_equal(job.count, 4);
	assert_true(job.count_given);
	mf_doc_free(doc);
	/* count and sharding.gpus agree. */
	read_ok(MSPEC
	    "  workload:\n    sequenceLength: 4096\n"
	    "    sharding: {gpus: 4}\n  resources:\n    gpu:\n      count: 4\n",
	    &doc, &job);
	assert_int_equal(job.count, 4);
	mf_doc_free(doc);
	/* LoRA under FSDP (design 22). */
	read_ok(MSPEC "  workload:\n    method: lora\n"
	              "    sequenceLength: 4096\n    sharding: {gpus: 8}\n",
	    &doc, &job);
	assert_int_equal(job.work.method, MF_LORA);
	assert_int_equal(job.work.shard_gpus, 8);
	assert_int_equal(job.count, 8);
	assert_int_equal(job.work.shard_cpu_offload, 0);
	mf_doc_free(doc);
	/* FSDP with CPU offload on one GPU. */
	read_ok(MSPEC "  workload:\n    sequenceLength: 4096\n"
	              "    sharding: {gpus: 1, cpuOffload: true}\n",
	    &doc, &job);
	assert_int_equal(job.work.shard_gpus, 1);
	assert_int_equal(job.work.shard_cpu_offload, 1);
	assert_int_equal(job.count, 1);
	mf_doc_free(doc);
}

/* Quantities in every notation of design 2. */
static void
test_read_min_memory_forms(void **state)
{
	static const struct {
		const char *text;
		int64_t bytes;
	} cases[] = {
		{ "88Gi", INT64_C(94489280512) },  /* 88 x 2^30 */
		{ "94.5G", INT64_C(94500000000) }, /* 94.5 x 10^9 */
		{ "2e9", INT64_C(2000000000) },
		{ "\"5E9\"", INT64_C(5000000000) },
		{ "1Gi", INT64_C(1) << 30 }, /* the least a GPU holds */
		{ "80000000000", INT64_C(80000000000) },
	};
	char text[512];
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text),
		    HDR "spec:\n  resources:\n"
		        "    gpu:\n      minMemory: %s\n",
		    cases[i].text);
		read_ok(text, &doc, &job);
		assert_int_equal(job.min_memory, cases[i].bytes);
		mf_doc_free(doc);
	}
}

/* Metadata may carry Kubernetes' other members. */
static void
test_read_metadata_extras(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok("apiVersion: memfloor.dev/v1\nkind: Job\nmetadata:\n"
	        "  name: t\n  namespace: ml\n  labels: {a: b}\n"
	        "  annotations: {c: d}\nspec:\n  resources:\n    gpu:\n"
	        "      minMemory: 1Gi\n",
	    &doc, &job);
	assert_string_equal(job.name, "t");
	mf_doc_free(doc);
}

/*
 * Read the bare spec text (the annotation memfloor.dev/spec) under path,
 * with a floor from outside it; the text must parse.  *doc holds what
 * *job borrows, for the caller to free.
 */
static enum mf_rc
read_spec_text(const char *text, const char *path, int64_t floor,
    struct mf_doc **doc, struct mf_job *job, struct mf_error *err)
{
	assert_int_equal(mf_doc_parse(text, strlen(text), MF_DOC_YAML, doc,
	                     err),
	    MF_OK);
	return mf_job_read_spec_floor(mf_doc_root(*doc), path, "pod-x", models,
	    floor, floor > 0 ? MF_QTY_BINARY : 0, job, err);
}

/* The annotation form: a bare spec under a caller's path, which prefixes
 * every field in errors. */
static void
test_read_spec_only(void **state)
{
	const char *good = "resources:\n  gpu:\n    minMemory: 16Gi\n";
	const char *bad = "resources:\n  gpu:\n    minMemory: 16Gi\n"
	                  "workload:\n  atention: eager\n";
	struct mf_doc *doc = NULL;
	struct mf_job job;
	struct mf_error err;

	(void)state;
	assert_int_equal(read_spec_text(good, "spec", 0, &doc, &job, &err),
	    MF_OK);
	assert_string_equal(job.name, "pod-x");
	assert_int_equal(job.min_memory, 16 * GIB);
	mf_doc_free(doc);
	assert_int_equal(read_spec_text(bad, "memfloor.dev/spec", 0, &doc, &job,
	                     &err),
	    MF_EINVAL);
	assert_string_equal(err.field, "memfloor.dev/spec.workload.atention");
	assert_int_equal(err.line, 5);
	mf_doc_free(doc);
}

/* A floor from outside the spec (the min-memory annotation): the job's
 * minMemory, with no spec at all or with a model; a spec's own wins. */
static void
test_read_spec_with_floor(void **state)
{
	const char *own = "resources:\n  gpu:\n    minMemory: 16Gi\n";
	const char *model = "model:\n  name: meta-llama/Llama-3.1-8B\n"
	                    "workload:\n  sequenceLength: 4096\n";
	struct mf_doc *doc = NULL;
	struct mf_job job;
	struct mf_error err;

	(void)state;
	assert_int_equal(mf_job_read_spec_floor(NULL, "spec", "pod-x", models,
	                     88 * GIB, MF_QTY_BINARY, &job, &err),
	    MF_OK);
	assert_int_equal(job.min_memory, 88 * GIB);
	assert_int_equal(job.model_source, MF_MODEL_NONE);
	/* Neither a floor nor a model: the floor is still required. */
	assert_int_equal(mf_job_read_spec_floor(NULL, "spec", "pod-x", models,
	                     0, 0, &job, &err),
	    MF_EINVAL);
	assert_string_equal(err.field, "spec.resources.gpu.minMemory");
	assert_int_equal(read_spec_text(own, "spec", 88 * GIB, &doc, &job,
	                     &err),
	    MF_OK);
	assert_int_equal(job.min_memory, 16 * GIB);
	mf_doc_free(doc);
	assert_int_equal(read_spec_text(model, "spec", 88 * GIB, &doc, &job,
	                     &err),
	    MF_OK);
	assert_int_equal(job.min_memory, 88 * GIB);
	assert_int_equal(job.model_source, MF_MODEL_NAMED);
	mf_doc_free(doc);
}

/* --- errors --- */

/* An unknown member at any level names its full path. */
static void
test_err_unknown_fields(void **state)
{
	(void)state;
	expect_err(SPEC "  workloads: {}\n", "spec.workloads", 9, "unknown");
	expect_err(SPEC "  workload:\n    microbatch: 2\n",
	    "spec.workload.microbatch", 10, "unknown field");
	expect_err(SPEC "  workload:\n    method: lora\n    lora:\n"
	                "      rank: 8\n      target: attention\n",
	    "spec.workload.lora.target", 13, "unknown field");
	expect_err(SPEC "  limits:\n    maxPrice: 3\n", "spec.limits.maxPrice",
	    10, "unknown field");
	expect_err(SPEC "  duration:\n    hours: 3\n", "spec.duration.hours",
	    10, "unknown field");
	expect_err(SPEC "  workload:\n    sharding: {gpus: 2, mode: full}\n",
	    "spec.workload.sharding.mode", 10, "unknown field");
	expect_err(HDR "spec:\n  resources:\n    gpu:\n      minMemory: 1Gi\n"
	               "      memory: 1Gi\n",
	    "spec.resources.gpu.memory", 9, "unknown");
	expect_err(HDR "spec:\n  resources:\n    cpu: 1\n",
	    "spec.resources.cpu", 7, "unknown field");
	expect_err(MSPEC "    revision: main\n", "spec.model.revision", 8,
	    "unknown field");
	expect_err(SPEC "status: {}\n", "status", 9, "unknown field");
	expect_err(HDR "  nam: x\nspec: {}\n", "metadata.nam", 5, "unknown");
}

/*
 * The line of an unknown field is the line its name is on, also when its
 * value is a block mapping that starts on the next line:
 *
 *     9   workload:
 *    10     loraa:
 *    11       rank: 8
 */
static void
test_err_unknown_field_line(void **state)
{
	(void)state;
	expect_err(SPEC "  workload:\n    loraa:\n      rank: 8\n",
	    "spec.workload.loraa", 10, "unknown field");
}

/* Wrong types name the field and the type found. */
static void
test_err_types(void **state)
{
	(void)state;
	expect_err(SPEC "      count: \"2\"\n", "spec.resources.gpu.count", 9,
	    "must be an integer, not a string");
	expect_err(SPEC "  workload:\n    gradientCheckpointing: yes\n",
	    "spec.workload.gradientCheckpointing", 10,
	    "'yes' is not one of false, true, op or a number of layers N "
	    "from 1 to 4096");
	expect_err(SPEC "  workload:\n    microBatch: 1.5\n",
	    "spec.workload.microBatch", 10, "not a whole number");
	expect_err(SPEC "  workload: [training]\n", "spec.workload", 9,
	    "must be a mapping, not a list");
	expect_err(SPEC "  allowedFixes: checkpointing\n", "spec.allowedFixes",
	    9, "must be a list");
	expect_err(SPEC "  limits:\n    maxCost: \"500\"\n  duration:\n"
	                "    referenceHours: 1\n",
	    "spec.limits.maxCost", 10, "must be a number, not a string");
	expect_err(SPEC "  workload:\n    attention: 3\n",
	    "spec.workload.attention", 10,
	    "must be one of sdpa, flash, eager, not a number");
	expect_err(SPEC "  workload:\n    method: dora\n",
	    "spec.workload.method", 10,
	    "'dora' is not one of full, lora, "
	    "qlora");
	expect_err(SPEC "  workload:\n    kvCacheDtype: int4\n",
	    "spec.workload.kvCacheDtype", 10, "not one of bf16, fp16, fp8");
	expect_err(SPEC "  workload:\n    method: lora\n"
	                "    lora: {targets: mlp}\n",
	    "spec.workload.lora.targets", 11,
	    "not one of all-linear, "
	    "attention");
	expect_err(HDR "spec: [1]\n", "spec", 5, "must be a mapping");
	expect_err(MSPEC "  workload:\n    sequenceLength: 4096\n"
	                 "    sharding: 2\n",
	    "spec.workload.sharding", 10, "must be a mapping");
	expect_err("apiVersion: memfloor.dev/v1\nkind: Job\nmetadata:\n"
	           "  name: 12\nspec: {}\n",
	    "metadata.name", 4, "must be a string, not a number");
}

/* Counts and sizes out of their bounds. */
static void
test_err_bounds(void **state)
{
	(void)state;
	expect_err(SPEC "      count: -1\n", "spec.resources.gpu.count", 9,
	    "-1 is out of range [1, 1024]");
	expect_err(SPEC "      count: 0\n", "spec.resources.gpu.count", 9,
	    "out of range");
	expect_err(SPEC "      count: 1025\n", "spec.resources.gpu.count", 9,
	    "out of range");
	expect_err(MSPEC "  workload:\n    sequenceLength: 0\n",
	    "spec.workload.sequenceLength", 9, "out of range");
	/* 2^21 = 2,097,152 is the cap. */
	expect_err(MSPEC "  workload:\n    sequenceLength: 2097153\n",
	    "spec.workload.sequenceLength", 9, "out of range");
	expect_err(SPEC "  workload:\n    microBatch: -4\n",
	    "spec.workload.microBatch", 10, "out of range");
	expect_err(SPEC "  workload:\n    method: qlora\n    lora: {rank: 0}\n",
	    "spec.workload.lora.rank", 11, "out of range");
	expect_err(SPEC "  workload:\n    sharding: {gpus: 0}\n",
	    "spec.workload.sharding.gpus", 10, "out of range");
	expect_err(SPEC "  duration:\n    referenceHours: 0\n",
	    "spec.duration.referenceHours", 10, "out of range");
	expect_err(SPEC "  limits:\n    maxHourlyPrice: -1\n",
	    "spec.limits.maxHourlyPrice", 10, "out of range");
	expect_err(SPEC "  limits:\n    maxCost: .inf\n  duration:\n"
	                "    referenceHours: 1\n",
	    "spec.limits.maxCost", 10, "not a finite number");
}

/*
 * A bad quantity names the field with its line and column:
 *
 *     8       minMemory: 88Gx      the value starts at column 18
 */
static void
test_err_quantity(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;
	struct mf_error err;

	(void)state;
	assert_int_equal(read_job(HDR "spec:\n  resources:\n    gpu:\n"
	                              "      minMemory: 88Gx\n",
	                     &doc, &job, &err),
	    MF_EINVAL);
	assert_string_equal(err.field, "spec.resources.gpu.minMemory");
	assert_string_equal(MSG(&err),
	    "spec.resources.gpu.minMemory: "
	    "'88Gx' is not a quantity (line 8, column 18)");
	assert_int_equal(err.line, 8);
	assert_int_equal(err.column, 18);
	mf_doc_free(doc);
	expect_err(HDR "spec:\n  resources:\n    gpu:\n      minMemory: 500m\n",
	    "spec.resources.gpu.minMemory", 8, "sub-unit");
	expect_err(HDR "spec:\n  resources:\n    gpu:\n      minMemory: 0\n",
	    "spec.resources.gpu.minMemory", 8, "not a positive");
	expect_err(HDR "spec:\n  resources:\n    gpu:\n"
	               "      minMemory: 88 Gi\n",
	    "spec.resources.gpu.minMemory", 8, "not a quantity");
	expect_err(HDR "spec:\n  resources:\n    gpu:\n      minMemory: 9Ei\n",
	    "spec.resources.gpu.minMemory", 8, "2^63");
}

/* The same errors from JSON: no position. */
static void
test_err_json(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;
	struct mf_error err;

	(void)state;
	assert_int_equal(read_job("{\"apiVersion\": \"memfloor.dev/v1\", "
	                          "\"kind\": \"Job\", \"metadata\": {\"name\": "
	                          "\"j\"}, \"spec\": "
	                          "{\"resources\": {\"gpu\": {\"minMemory\": "
	                          "\"88Gx\"}}}}",
	                     &doc, &job, &err),
	    MF_EINVAL);
	assert_string_equal(err.field, "spec.resources.gpu.minMemory");
	assert_string_equal(MSG(&err),
	    "spec.resources.gpu.minMemory: "
	    "'88Gx' is not a quantity");
	assert_int_equal(err.line, 0);
	mf_doc_free(doc);
	expect_err("{\"apiVersion\": \"memfloor.dev/v1\", \"kind\": \"Job\", "
	           "\"metadata\": {\"name\": \"j\"}, \"spec\": {\"resources\": "
	           "{\"gpu\": {\"minMemory\": \"1Gi\", \"count\": 1.5}}}}",
	    "spec.resources.gpu.count", 0, "whole number");
	expect_err("{\"apiVersion\": \"memfloor.dev/v1\", \"kind\": \"Job\", "
	           "\"metadata\": {\"name\": \"j\"}, \"spec\": {\"resources\": "
	           "{\"gpu\": {\"minMemory\": \"1Gi\"}}, \"wokload\": {}}}",
	    "spec.wokload", 0, "unknown field");
}

static void
test_err_header(void **state)
{
	(void)state;
	expect_err("apiVersion: memfloor.dev/v2\nkind: Job\nmetadata:\n"
	           "  name: t\nspec: {}\n",
	    "apiVersion", 1, "memfloor.dev/v1");
	expect_err("apiVersion: memfloor.dev/v1\nkind: Pod\nmetadata:\n"
	           "  name: t\nspec: {}\n",
	    "kind", 2, "'Pod' is not 'Job'");
	expect_err("kind: Job\nmetadata:\n  name: t\nspec: {}\n", "apiVersion",
	    -1, "required");
	expect_err("apiVersion: memfloor.dev/v1\nmetadata:\n  name: t\n"
	           "spec: {}\n",
	    "kind", -1, "required");
	expect_err("apiVersion: memfloor.dev/v1\nkind: Job\nspec: {}\n",
	    "metadata.name", -1, "required");
	expect_err("apiVersion: memfloor.dev/v1\nkind: Job\nmetadata:\n"
	           "  namespace: x\nspec: {}\n",
	    "metadata.name", -1, "required");
	expect_err("apiVersion: memfloor.dev/v1\nkind: Job\nmetadata:\n"
	           "  name: \"\"\nspec: {}\n",
	    "metadata.name", 4, "1 to 253");
	expect_err(HDR, "spec", -1, "required");
	expect_err("apiVersion: 1\nkind: Job\nmetadata:\n  name: t\n",
	    "apiVersion", 1, "must be a string");
}

/* The root must be a mapping. */
static void
test_err_root(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;
	struct mf_error err;

	(void)state;
	assert_int_equal(read_job("- 1\n", &doc, &job, &err), MF_EINVAL);
	assert_non_null(strstr(MSG(&err), "mapping"));
	mf_doc_free(doc);
	assert_int_equal(read_job("", &doc, &job, &err), MF_EINVAL);
	mf_doc_free(doc);
}

/* spec.model: exactly one of name, config, configUrl. */
static void
test_err_model(void **state)
{
	(void)state;
	expect_err(HDR "spec:\n  model:\n    name: meta-llama/Llama-3.1-8B\n"
	               "    configUrl: https://h/c.json\n  workload:\n"
	               "    sequenceLength: 1\n",
	    "spec.model", 7, "exactly one of");
	expect_err(HDR "spec:\n  model:\n    config: {hidden_size: 8}\n"
	               "    configUrl: https://h/c.json\n",
	    "spec.model", -1, "exactly one of");
	expect_err(HDR "spec:\n  model: {}\n", "spec.model", -1,
	    "exactly one of");
	expect_err(HDR "spec:\n  model:\n    name: meta-llama/Llama-9-8B\n"
	               "  workload:\n    sequenceLength: 1\n",
	    "spec.model.name", 7,
	    "'meta-llama/Llama-9-8B' is not a known model: GET /v1/models lists the models served (shipped and memfloord -m DIR); give its config.json as spec.model.config, or its URL as spec.model.configUrl (a host memfloord --model-host allows)");
	expect_err(HDR "spec:\n  model:\n    name: 8\n", "spec.model.name", 7,
	    "must be a string");
	expect_err(HDR "spec:\n  model:\n    configUrl: 8\n",
	    "spec.model.configUrl", 7, "must be a string");
	/* An inline config is read by the model module: its errors carry
	 * the path below spec.model.config. */
	expect_err(HDR "spec:\n  model:\n    config:\n      hidden_size: 4096\n"
	               "  workload:\n    sequenceLength: 1\n",
	    "spec.model.config.num_hidden_layers", -1, "missing");
}

/* Without a models registry no name resolves. */
static void
test_err_no_registry(void **state)
{
	const char *text = MSPEC "  workload:\n    sequenceLength: 1\n";
	struct mf_doc *doc = NULL;
	struct mf_job job;
	struct mf_error err;

	(void)state;
	assert_int_equal(mf_doc_parse(text, strlen(text), MF_DOC_YAML, &doc,
	                     &err),
	    MF_OK);
	assert_int_equal(mf_job_read(mf_doc_root(doc), "", NULL, &job, &err),
	    MF_EINVAL);
	assert_string_equal(err.field, "spec.model.name");
	mf_doc_free(doc);
}

/* The second entry of allowedFixes is not a fix id. */
static void
test_err_allowed_fixes(void **state)
{
	(void)state;
	expect_err(SPEC "  allowedFixes: [checkpointing, fsdq]\n",
	    "spec.allowedFixes[1]", 9, "'fsdq' is not a fix");
	expect_err(SPEC "  allowedFixes:\n    - sdpa\n    - 3\n",
	    "spec.allowedFixes[1]", 11, "is not a fix");
	/* What was given is named: a list has no text to quote. */
	expect_err(SPEC "  allowedFixes: [[lora]]\n", "spec.allowedFixes[0]", 9,
	    "is a list, not a fix");
	expect_err(SPEC "  allowedFixes: [{lora: 1}]\n", "spec.allowedFixes[0]",
	    9, "is a mapping, not a fix");
}

/* Every fix id is accepted; a repeat is harmless. */
static void
test_read_all_fixes(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(SPEC "  allowedFixes: [sdpa, microbatch, autocast, "
	             "checkpointing, adam8bit, lora, qlora, fsdp, kvfp8, "
	             "int8, int4, tensor, count, context, concurrency, sdpa]\n",
	    &doc, &job);
	assert_int_equal(job.allowed_fixes, (1u << MF_FIX_COUNT) - 1);
	mf_doc_free(doc);
	read_ok(SPEC "  allowedFixes: []\n", &doc, &job);
	assert_int_equal(job.allowed_fixes, 0);
	mf_doc_free(doc);
}

/*
 * Serving and parallelism (design 14, 15): the fields read, and a field
 * that would be ignored, or a count that disagrees, is an error.
 */
#define INF "  workload:\n    kind: inference\n    contextLength: 4096\n"

static void
test_read_serving(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(MSPEC INF "    weightsDtype: int4\n    groupSize: 64\n"
	                  "    server: vllm\n    gpuMemoryUtilization: 0.85\n"
	                  "    maxNumBatchedTokens: 4096\n    blockSize: 32\n"
	                  "    parallelism: {tensor: 4, pipeline: 2}\n",
	    &doc, &job);
	assert_int_equal(job.work.weights_dtype, MF_WD_INT4);
	assert_int_equal(job.work.group_size, 64);
	assert_int_equal(job.work.server, MF_SERVER_VLLM);
	assert_true(job.work.gpu_util == 0.85);
	assert_int_equal(job.work.batched_tokens, 4096);
	assert_int_equal(job.work.block_size, 32);
	assert_int_equal(job.work.tensor, 4);
	assert_int_equal(job.work.pipeline, 2);
	assert_int_equal(job.work.expert, 1);
	/* A replica of 4 x 2 GPUs. */
	assert_int_equal(job.count, 8);
	assert_true(job.count_given);
	mf_doc_free(doc);
	/* Two replicas given by the count. */
	read_ok(MSPEC "  resources:\n    gpu:\n      count: 8\n" INF
	              "    parallelism: {tensor: 4}\n",
	    &doc, &job);
	assert_int_equal(job.count, 8);
	mf_doc_free(doc);
}

static void
test_err_serving(void **state)
{
	(void)state;
	expect_err(MSPEC INF "    groupSize: 64\n", "spec.workload.groupSize",
	    11, "applies only with weightsDtype: int4");
	expect_err(MSPEC INF "    blockSize: 16\n", "spec.workload.blockSize",
	    11, "applies only with server: vllm");
	expect_err(MSPEC "  workload:\n    sequenceLength: 4096\n"
	                 "    server: vllm\n",
	    "spec.workload.server", 10, "applies only with kind: inference");
	expect_err(MSPEC INF "    weightsDtype: int3\n",
	    "spec.workload.weightsDtype", 11, "int4");
	expect_err(MSPEC INF "    server: vllm\n    gpuMemoryUtilization: 0\n",
	    "spec.workload.gpuMemoryUtilization", 12, "");
	expect_err(MSPEC INF "    parallelism: {tensor: 0}\n",
	    "spec.workload.parallelism.tensor", -1, "");
	expect_err(MSPEC INF "    parallelism: {data: 2}\n",
	    "spec.workload.parallelism.data", -1, "");
	expect_err(MSPEC "  resources:\n    gpu:\n      count: 6\n" INF
	                 "    parallelism: {tensor: 4}\n",
	    "spec.resources.gpu.count", 10,
	    "is 6, not a multiple of the 4 GPUs one replica");
}

/*
 * A request's promptTokens and outputTokens fit in contextLength (vLLM
 * refuses a longer request); the error is at promptTokens, or at
 * outputTokens where it alone fills the context or no prompt is given
 * (the prompt is then contextLength).  The values start at column 19.
 */
static void
test_err_request_past_context(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	expect_err_at(MSPEC INF
	    "    promptTokens: 4000\n    outputTokens: 200\n"
	    "  duration:\n    requests: 1000\n",
	    "spec.workload.promptTokens", 11, 19,
	    "4000 tokens and outputTokens 200 make a request of 4200 tokens, "
	    "more than contextLength 4096");
	expect_err_at(MSPEC INF "    promptTokens: 5000\n",
	    "spec.workload.promptTokens", 11, 19,
	    "5000 tokens are more than contextLength 4096");
	expect_err_at(MSPEC INF
	    "    promptTokens: 100\n    outputTokens: 4096\n",
	    "spec.workload.outputTokens", 12, 19,
	    "4096 tokens leave no room for a prompt in contextLength 4096");
	/* Both past the context: promptTokens, in flow style too. */
	expect_err_at(MSPEC
	    "  workload: {kind: inference, contextLength: 8192, "
	    "promptTokens: 4000000, outputTokens: 4000000}\n"
	    "  duration: {requests: 1000}\n",
	    "spec.workload.promptTokens", 8, 66,
	    "make a request of 8000000 tokens, more than contextLength 8192");
	read_ok(MSPEC INF "    promptTokens: 3896\n    outputTokens: 200\n",
	    &doc, &job);
	assert_int_equal(job.work.prompt_tokens + job.work.output_tokens, 4096);
	mf_doc_free(doc);
	read_ok(MSPEC INF "    promptTokens: 4096\n", &doc, &job);
	mf_doc_free(doc);
}

/*
 * vLLM refuses to start with maxNumBatchedTokens under maxNumSeqs; where
 * the manifest states both, the error is at maxNumBatchedTokens.  One
 * left to the card's default is not checked.
 */
static void
test_err_batched_under_seqs(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	expect_err_at(MSPEC INF
	    "    server: vllm\n    maxNumBatchedTokens: 16\n"
	    "    maxNumSeqs: 256\n",
	    "spec.workload.maxNumBatchedTokens", 12, 26,
	    "16 tokens are fewer than maxNumSeqs 256: vLLM refuses to start");
	expect_err_at(MSPEC
	    "  workload: {kind: inference, contextLength: 8192, "
	    "server: vllm, maxNumBatchedTokens: 16, "
	    "maxNumSeqs: 256}\n",
	    "spec.workload.maxNumBatchedTokens", 8, 87,
	    "fewer than maxNumSeqs 256");
	read_ok(MSPEC INF "    server: vllm\n    maxNumBatchedTokens: 256\n"
	                  "    maxNumSeqs: 256\n",
	    &doc, &job);
	mf_doc_free(doc);
	read_ok(MSPEC INF "    server: vllm\n    maxNumBatchedTokens: 16\n",
	    &doc, &job);
	assert_int_equal(job.work.max_num_seqs, 0);
	mf_doc_free(doc);
}

/*
 * maxNumSeqs alone, above vLLM's default maxNumBatchedTokens on every
 * card: vLLM does not raise the default to the sequences and refuses to
 * start (vllm/config/scheduler.py).  The most a card defaults to is
 * 16384 (from 160 GiB, vllm/engine/arg_utils.py get_batch_defaults); the
 * V0 engine (before 0.8.0) takes max(contextLength, 2048) on every card,
 * max(4096, 2048) = 4096 here.  Above some cards' default only, the
 * placement passes those cards over (test_place.c).
 */
static void
test_err_seqs_over_default_tokens(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	expect_err_at(MSPEC INF "    server: vllm\n    maxNumSeqs: 16385\n",
	    "spec.workload.maxNumSeqs", 12, 17,
	    "16385 sequences are more than 16384, the most tokens a step vLLM takes by default for this job on any card (maxNumBatchedTokens), and vLLM refuses to start with fewer tokens a step than sequences: give maxNumBatchedTokens, at least 16385");
	read_ok(MSPEC INF "    server: vllm\n    maxNumSeqs: 16384\n", &doc,
	    &job);
	mf_doc_free(doc);
	expect_err_at(MSPEC INF "    server: vllm\n    serverVersion: 0.7.3\n"
	                        "    maxNumSeqs: 4097\n",
	    "spec.workload.maxNumSeqs", 13, 17,
	    "4097 sequences are more than 4096,");
	read_ok(MSPEC INF "    server: vllm\n    serverVersion: 0.7.3\n"
	                  "    maxNumSeqs: 4096\n",
	    &doc, &job);
	mf_doc_free(doc);
	read_ok(MSPEC INF "    server: vllm\n    maxNumBatchedTokens: 32768\n"
	                  "    maxNumSeqs: 32768\n",
	    &doc, &job);
	mf_doc_free(doc);
}

/*
 * A field that applies only with a value its condition's row holds by a
 * default without a name (weightsDtype's) says that default in the row's
 * words, at the field's key.
 */
static void
test_err_no_effect_unnamed_default(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;
	struct mf_error err;

	(void)state;
	expect_err_at(MSPEC INF "    groupSize: 64\n",
	    "spec.workload.groupSize", 11, 5,
	    "has no effect here: it applies only with weightsDtype: int4, and "
	    "this job has weightsDtype: that of the model's "
	    "quantization_config, else of precision (the default)");
	assert_int_equal(read_job(MSPEC INF "    groupSize: 64\n", &doc, &job,
	                     &err),
	    MF_EINVAL);
	assert_null(strchr(MSG(&err), '?'));
	mf_doc_free(doc);
	expect_err_at(MSPEC INF "    weightsDtype: bf16\n    groupSize: 64\n",
	    "spec.workload.groupSize", 12, 5,
	    "and this job has weightsDtype: bf16 (line 12");
}

/*
 * A count must be a whole number of the replicas the job's parallelism
 * takes (data parallel), or with sharding the product with sharding.gpus;
 * the error says the rule applied, at the count's value (column 14).
 */
static void
test_err_count_not_replicas(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;
	struct mf_error err;

	(void)state;
	expect_err_at(MSPEC "  resources:\n    gpu:\n      count: 3\n" INF
	                    "    parallelism: {tensor: 2}\n",
	    "spec.resources.gpu.count", 10, 14,
	    "is 3, not a multiple of the 2 GPUs one replica of the job's "
	    "parallelism takes (tensor 2 x pipeline 1): a count is a whole "
	    "number of replicas");
	assert_int_equal(read_job(MSPEC
	                     "  resources:\n    gpu:\n      count: 3\n" INF
	                     "    parallelism: {tensor: 2}\n",
	                     &doc, &job, &err),
	    MF_EINVAL);
	assert_null(strstr(MSG(&err), "sharding"));
	mf_doc_free(doc);
	read_ok(MSPEC "  resources:\n    gpu:\n      count: 4\n" INF
	              "    parallelism: {tensor: 2}\n",
	    &doc, &job);
	assert_int_equal(job.count, 4);
	mf_doc_free(doc);
	/* The brief's flow style: the count's value on line 6. */
	expect_err_at(HDR "spec:\n  model: {name: meta-llama/Llama-3.1-8B}\n"
	                  "  resources: {gpu: {count: 3}}\n"
	                  "  workload: {kind: inference, contextLength: 8192, "
	                  "parallelism: {tensor: 2}}\n",
	    "spec.resources.gpu.count", 7, 28, "not a multiple of the 2 GPUs");
	/* With sharding the product, at the count too. */
	expect_err_at(MSPEC "  resources:\n    gpu:\n      count: 4\n"
	                    "  workload:\n    sequenceLength: 4096\n"
	                    "    sharding: {gpus: 8}\n",
	    "spec.resources.gpu.count", 10, 14,
	    "is 4 but workload.sharding.gpus is 8");
	expect_err_at(MSPEC "  resources:\n    gpu:\n      count: 4\n"
	                    "  workload:\n    sequenceLength: 4096\n"
	                    "    sharding: {gpus: 2}\n"
	                    "    parallelism: {tensor: 4}\n",
	    "spec.resources.gpu.count", 10, 14,
	    "is 4 but the job's parallelism takes 8 GPUs (tensor 4 x pipeline 1 "
	    "x sharding.gpus 2)");
}

/* --- the recipes of design 19 --- */

/* A training job with the workload text w (after "  workload:\n"): a
 * model and a sequence length. */
#define RECIPE(w) MSPEC "  workload:\n    sequenceLength: 2048\n" w

/* precision's six names, each its own enum value. */
static void
test_read_precisions(void **state)
{
	static const struct {
		const char *name;
		enum mf_precision value;
	} cases[] = {
		{ "bf16", MF_BF16 },
		{ "bf16-mixed", MF_BF16_MIXED },
		{ "bf16-true", MF_BF16_TRUE },
		{ "fp16", MF_FP16 },
		{ "fp16-mixed", MF_FP16_MIXED },
		{ "fp32", MF_FP32 },
	};
	char text[512];
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), RECIPE("    precision: %s\n"),
		    cases[i].name);
		read_ok(text, &doc, &job);
		assert_int_equal(job.work.precision, cases[i].value);
		mf_doc_free(doc);
	}
	expect_err(RECIPE("    precision: bf16-amp\n"),
	    "spec.workload.precision", 10,
	    "'bf16-amp' is not one of bf16, bf16-mixed, bf16-true, fp16, "
	    "fp16-mixed, fp32");
}

/* gradientCheckpointing: false, true, op or every Nth layer. */
static void
test_read_checkpointing(void **state)
{
	static const struct {
		const char *text;
		enum mf_checkpointing ckpt;
		int64_t every;
	} cases[] = {
		{ "false", MF_CKPT_NONE, 1 },
		{ "true", MF_CKPT_FULL, 1 },
		{ "op", MF_CKPT_OP, 1 },
		{ "1", MF_CKPT_FULL, 1 },
		{ "4", MF_CKPT_FULL, 4 },
	};
	char text[512];
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text),
		    RECIPE("    gradientCheckpointing: %s\n"), cases[i].text);
		read_ok(text, &doc, &job);
		assert_int_equal(job.work.checkpointing, cases[i].ckpt);
		assert_int_equal(job.work.ckpt_every, cases[i].every);
		mf_doc_free(doc);
	}
	expect_err(RECIPE("    gradientCheckpointing: 0\n"),
	    "spec.workload.gradientCheckpointing", 10,
	    "0 is out of range [1, 4096]");
	expect_err(RECIPE("    gradientCheckpointing: selective\n"),
	    "spec.workload.gradientCheckpointing", 10,
	    "'selective' is not one of false, true, op or a number of layers");
	expect_err(RECIPE("    gradientCheckpointing: \"true\"\n"),
	    "spec.workload.gradientCheckpointing", 10,
	    "'true' is a string: write true without quotes");
	expect_err(RECIPE("    gradientCheckpointing: [op]\n"),
	    "spec.workload.gradientCheckpointing", 10, "not a list");
}

/* loss and its chunks, offload and the optimizer in backward. */
static void
test_read_loss_offload(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(RECIPE("    loss: chunked\n    lossChunks: 16\n"
	               "    activationOffload: true\n"
	               "    gradientCheckpointing: true\n"),
	    &doc, &job);
	assert_int_equal(job.work.loss, MF_LOSS_CHUNKED);
	assert_int_equal(job.work.loss_chunks, 16);
	assert_true(job.work.activation_offload);
	mf_doc_free(doc);
	read_ok(RECIPE("    loss: chunked\n"), &doc, &job);
	assert_int_equal(job.work.loss, MF_LOSS_CHUNKED);
	assert_int_equal(job.work.loss_chunks, 8);
	assert_false(job.work.activation_offload);
	mf_doc_free(doc);
	expect_err(RECIPE("    loss: cce\n"), "spec.workload.loss", 10,
	    "'cce' is not one of standard, chunked, fused");
	expect_err(RECIPE("    lossChunks: 4\n"), "spec.workload.lossChunks",
	    10,
	    "has no effect here: it applies only with loss: chunked, and this "
	    "job has loss: standard (the default)");
	expect_err(RECIPE("    loss: fused\n    lossChunks: 4\n"),
	    "spec.workload.lossChunks", 11, "this job has loss: fused");
	/* lossUpcast: the standard loss's, its two names. */
	read_ok(RECIPE("    lossUpcast: output\n"), &doc, &job);
	assert_int_equal(job.work.loss_upcast, MF_UPCAST_OUTPUT);
	mf_doc_free(doc);
	read_ok(RECIPE(""), &doc, &job);
	assert_int_equal(job.work.loss_upcast, MF_UPCAST_LOSS);
	mf_doc_free(doc);
	expect_err(RECIPE("    lossUpcast: none\n"), "spec.workload.lossUpcast",
	    10, "'none' is not one of loss, output");
	expect_err(RECIPE("    loss: fused\n    lossUpcast: output\n"),
	    "spec.workload.lossUpcast", 11,
	    "has no effect here: it applies only with loss: standard, and "
	    "this job has loss: fused");
	expect_err(RECIPE("    loss: chunked\n    lossUpcast: output\n"),
	    "spec.workload.lossUpcast", 11, "this job has loss: chunked");
	expect_err(MSPEC
	    "  workload:\n    kind: inference\n"
	    "    contextLength: 4096\n    activationOffload: true\n",
	    "spec.workload.activationOffload", 11,
	    "applies only with kind: training, and this job has kind: "
	    "inference");
}

/*
 * float8: none by default; tensorwise or rowwise where the estimate
 * models it (full fine-tuning, bf16, bf16-true or bf16-mixed); an
 * unknown value lists the known; QLoRA, LoRA, fp32 refused at the field
 * with the reason (mf_est_float8_refused), and for training only.
 */
static void
test_read_float8(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(RECIPE(""), &doc, &job);
	assert_int_equal(job.work.float8, MF_F8_NONE);
	mf_doc_free(doc);
	read_ok(RECIPE("    float8: tensorwise\n"), &doc, &job);
	assert_int_equal(job.work.float8, MF_F8_TENSORWISE);
	assert_int_equal(job.float8_line, 10);
	mf_doc_free(doc);
	read_ok(RECIPE("    float8: rowwise\n    precision: bf16-mixed\n"),
	    &doc, &job);
	assert_int_equal(job.work.float8, MF_F8_ROWWISE);
	mf_doc_free(doc);
	expect_err(RECIPE("    float8: blockwise\n"), "spec.workload.float8",
	    10, "'blockwise' is not one of none, tensorwise, rowwise");
	expect_err(RECIPE("    method: qlora\n    float8: rowwise\n"),
	    "spec.workload.float8", 11,
	    "casts each linear's high-precision weight to fp8 (torchao 0.15, "
	    "float8/float8_linear.py: matmul_with_hp_or_float8_args), and a "
	    "4-bit base has none");
	expect_err(RECIPE("    method: lora\n    float8: tensorwise\n"),
	    "spec.workload.float8", 11, "this job has method: lora");
	expect_err(RECIPE("    float8: tensorwise\n    precision: fp32\n"),
	    "spec.workload.float8", 10, "this job has precision: fp32");
	expect_err(MSPEC "  workload:\n    kind: inference\n"
	                 "    contextLength: 4096\n    float8: rowwise\n",
	    "spec.workload.float8", 11,
	    "applies only with kind: training, and this job has kind: "
	    "inference");
}

/*
 * compile: false by default; true where the estimate models it (full
 * fine-tuning, LoRA or QLoRA, every layer checkpointed or none; bf16,
 * bf16-true or fp32, sdpa, the standard loss, one GPU); anything else refused
 * at the field, with what it is modelled with and what this job has
 * (mf_est_compile_refused), and for training only.
 */
static void
test_read_compile(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(RECIPE(""), &doc, &job);
	assert_false(job.work.compile);
	mf_doc_free(doc);
	read_ok(RECIPE("    compile: true\n    precision: fp32\n"
	               "    gradientCheckpointing: true\n"),
	    &doc, &job);
	assert_true(job.work.compile);
	assert_int_equal(job.compile_line, 10);
	mf_doc_free(doc);
	read_ok(RECIPE("    method: lora\n    compile: false\n"), &doc, &job);
	assert_false(job.work.compile);
	mf_doc_free(doc);
	read_ok(RECIPE("    method: lora\n    compile: true\n"), &doc, &job);
	assert_true(job.work.compile);
	mf_doc_free(doc);
	read_ok(RECIPE("    method: qlora\n    compile: true\n"), &doc, &job);
	assert_true(job.work.compile);
	mf_doc_free(doc);
	read_ok(RECIPE("    method: lora\n    compile: true\n"
	               "    gradientCheckpointing: true\n"),
	    &doc, &job);
	assert_true(job.work.compile);
	mf_doc_free(doc);
	expect_err(RECIPE("    method: lora\n    compile: true\n"
	                  "    gradientCheckpointing: 2\n"),
	    "spec.workload.compile", 11, "every Nth layer");
	expect_err(RECIPE("    compile: true\n    precision: bf16-mixed\n"),
	    "spec.workload.compile", 10, "this job has precision: bf16-mixed");
	expect_err(RECIPE("    compile: true\n    loss: fused\n"),
	    "spec.workload.compile", 10, "this job has loss: fused");
	expect_err(RECIPE("    compile: true\n    gradientCheckpointing: 2\n"),
	    "spec.workload.compile", 10, "every Nth layer");
	expect_err(MSPEC "  workload:\n    kind: inference\n"
	                 "    contextLength: 4096\n    compile: true\n",
	    "spec.workload.compile", 11,
	    "applies only with kind: training, and this job has kind: "
	    "inference");
}

/*
 * optimizerInBackward as torchtune 0.6.1 runs it and the estimate models
 * it: full fine-tuning in bf16-true or fp32 with AdamW or bitsandbytes'
 * 8-bit AdamW, paged or not, on one GPU.  Every
 * other combination is refused at the field, with what it is modelled
 * with and what this job has (estimate.c's mf_est_oib_refused).
 */
static void
test_read_optimizer_in_backward(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(RECIPE("    precision: bf16-true\n"
	               "    optimizerInBackward: true\n"),
	    &doc, &job);
	assert_true(job.work.optimizer_in_backward);
	mf_doc_free(doc);
	read_ok(RECIPE("    precision: fp32\n    optimizerInBackward: true\n"
	               "    gradientCheckpointing: true\n"
	               "    attention: eager\n"),
	    &doc, &job);
	assert_true(job.work.optimizer_in_backward);
	mf_doc_free(doc);
	/* false is the default, and goes with everything. */
	read_ok(RECIPE("    method: lora\n    optimizerInBackward: false\n"),
	    &doc, &job);
	assert_false(job.work.optimizer_in_backward);
	mf_doc_free(doc);
	expect_err(RECIPE("    optimizerInBackward: true\n"),
	    "spec.workload.optimizerInBackward", 10,
	    "is modelled with precision bf16-true or fp32, as torchtune runs it "
	    "(the weights their own master copy): fp32 master weights (bf16) "
	    "and autocast (bf16-mixed, fp16-mixed) are not torchtune's and "
	    "were not measured; this job has precision: bf16 (the default)");
	expect_err(RECIPE("    precision: fp16\n"
	                  "    optimizerInBackward: true\n"),
	    "spec.workload.optimizerInBackward", 11,
	    "torchtune's full fine-tuning recipes refuse fp16");
	expect_err(RECIPE("    precision: bf16-mixed\n"
	                  "    optimizerInBackward: true\n"),
	    "spec.workload.optimizerInBackward", 11,
	    "this job has precision: bf16-mixed");
	expect_err(RECIPE("    optimizerInBackward: true\n    method: lora\n"
	                  "    precision: bf16-true\n"),
	    "spec.workload.optimizerInBackward", 10,
	    "applies to full fine-tuning only: torchtune 0.6.1 steps the "
	    "optimizer in backward in its full fine-tuning recipes "
	    "(full_finetune_single_device, full_finetune_distributed), and its "
	    "LoRA and QLoRA recipes have no optimizer_in_bwd; this job has "
	    "method: lora");
	expect_err(RECIPE("    method: qlora\n    optimizerInBackward: true\n"),
	    "spec.workload.optimizerInBackward", 11,
	    "this job has method: qlora");
	expect_err(RECIPE("    precision: bf16-true\n    optimizer: sgd\n"
	                  "    optimizerInBackward: true\n"),
	    "spec.workload.optimizerInBackward", 12,
	    "is modelled with optimizer adamw, adam8bit or paged-adamw8bit "
	    "(one optimizer for each weight, as torchtune makes them): SGD "
	    "was not measured; this job has optimizer: sgd");
	/* bitsandbytes' 8-bit optimizers, one a weight (torchtune's
	 * llama3_1/8B_full_single_device.yaml: PagedAdamW8bit). */
	read_ok(RECIPE("    precision: bf16-true\n"
	               "    optimizer: paged-adamw8bit\n"
	               "    optimizerInBackward: true\n"),
	    &doc, &job);
	assert_int_equal(job.work.optimizer, MF_PAGED_ADAMW8BIT);
	assert_true(job.work.optimizer_in_backward);
	mf_doc_free(doc);
	read_ok(RECIPE("    precision: bf16-true\n    optimizer: adam8bit\n"
	               "    optimizerInBackward: true\n"),
	    &doc, &job);
	assert_int_equal(job.work.optimizer, MF_ADAM8BIT);
	mf_doc_free(doc);
	/* An unknown optimizer lists the known ones. */
	expect_err(RECIPE("    optimizer: paged-adamw\n"),
	    "spec.workload.optimizer", 10,
	    "'paged-adamw' is not one of adamw, adam8bit, sgd, "
	    "paged-adamw8bit");
	expect_err(RECIPE("    precision: bf16-true\n    sharding: {gpus: 8}\n"
	                  "    optimizerInBackward: true\n"),
	    "spec.workload.optimizerInBackward", 12,
	    "is not modelled with FSDP: torchtune 0.6.1's "
	    "full_finetune_distributed steps FSDP2's sharded weights in "
	    "backward, which has not been measured; this job has "
	    "sharding.gpus: 8");
	expect_err(RECIPE("    precision: bf16-true\n"
	                  "    parallelism: {tensor: 2}\n"
	                  "    optimizerInBackward: true\n"),
	    "spec.workload.optimizerInBackward", 12,
	    "this job has parallelism tensor 2, pipeline 1, expert 1");
	expect_err(MSPEC "  resources:\n    gpu:\n      count: 2\n"
	                 "  workload:\n    sequenceLength: 2048\n"
	                 "    precision: bf16-true\n"
	                 "    optimizerInBackward: true\n",
	    "spec.workload.optimizerInBackward", 14,
	    "is modelled on one GPU: torchtune's recipe for several shards with "
	    "FSDP, and DistributedDataParallel holds every gradient in its "
	    "buckets; this job has resources.gpu.count: 2");
	/* With activation offloading, as torchtune's recipe takes both
	 * (offload.py measured them together). */
	read_ok(RECIPE("    precision: bf16-true\n"
	               "    gradientCheckpointing: true\n"
	               "    activationOffload: true\n"
	               "    optimizerInBackward: true\n"),
	    &doc, &job);
	assert_true(job.work.optimizer_in_backward);
	assert_true(job.work.activation_offload);
	mf_doc_free(doc);
	/* Serving has no optimizer: the field's own rule says so first. */
	expect_err(MSPEC INF "    optimizerInBackward: true\n",
	    "spec.workload.optimizerInBackward", 11,
	    "applies only with kind: training");
}

/*
 * activationOffload as it is modelled (manifest.c's check_offload): with
 * every layer checkpointed, on a GPU that holds every layer whole, not
 * under FSDP; otherwise a 400 naming it, at its line (10 here).
 */
static void
test_read_offload_layouts(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(RECIPE("    activationOffload: true\n"
	               "    gradientCheckpointing: true\n"
	               "    method: lora\n    precision: fp32\n"),
	    &doc, &job);
	assert_true(job.work.activation_offload);
	mf_doc_free(doc);
	/* Replicas of the job, each GPU with the whole model. */
	read_ok(MSPEC "  resources:\n    gpu:\n      count: 4\n"
	              "  workload:\n    sequenceLength: 2048\n"
	              "    activationOffload: true\n"
	              "    gradientCheckpointing: true\n",
	    &doc, &job);
	mf_doc_free(doc);
	expect_err(RECIPE("    activationOffload: true\n"),
	    "spec.workload.activationOffload", 10,
	    "needs gradientCheckpointing: true: torchtune's recipes refuse");
	expect_err(RECIPE("    activationOffload: true\n"
	                  "    gradientCheckpointing: op\n"),
	    "spec.workload.activationOffload", 10,
	    "needs gradientCheckpointing: true");
	expect_err(RECIPE("    activationOffload: true\n"
	                  "    gradientCheckpointing: 2\n"),
	    "spec.workload.activationOffload", 10,
	    "needs gradientCheckpointing: true");
	expect_err(RECIPE("    activationOffload: true\n"
	                  "    gradientCheckpointing: true\n"
	                  "    parallelism: {tensor: 2}\n"),
	    "spec.workload.activationOffload", 10,
	    "is not modelled under tensor, pipeline or expert parallel");
	expect_err(RECIPE("    activationOffload: true\n"
	                  "    gradientCheckpointing: true\n"
	                  "    parallelism: {pipeline: 4}\n"),
	    "spec.workload.activationOffload", 10,
	    "is not modelled under tensor, pipeline or expert parallel");
	expect_err(RECIPE("    activationOffload: true\n"
	                  "    gradientCheckpointing: true\n"
	                  "    sharding: {gpus: 8}\n"),
	    "spec.workload.activationOffload", 10,
	    "is not modelled under FSDP (workload.sharding.gpus 8)");
}

/*
 * The losses not modelled are 400s naming the field (design 19): chunked
 * or fused under tensor or pipeline parallel; more pieces than a sequence
 * has tokens, or fewer than one.
 */
static void
test_err_loss(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	expect_err(RECIPE("    loss: fused\n    parallelism:\n"
	                  "      tensor: 2\n"),
	    "spec.workload.loss", 10,
	    "fused is not modelled under tensor or pipeline parallel (parallelism.tensor 2, pipeline 1): Liger's fused linear cross-entropy is modelled on one GPU and under FSDP; use loss: standard");
	expect_err(RECIPE("    loss: chunked\n    parallelism:\n"
	                  "      tensor: 2\n"),
	    "spec.workload.loss", 10,
	    "chunked is not modelled under tensor or pipeline parallel (parallelism.tensor 2, pipeline 1): torchtune's chunked loss is modelled on one GPU and under FSDP; use loss: standard");
	expect_err(RECIPE("    parallelism:\n      pipeline: 4\n"
	                  "    loss: chunked\n"),
	    "spec.workload.loss", 12, "(parallelism.tensor 1, pipeline 4)");
	expect_err(RECIPE("    loss: chunked\n    lossChunks: 0\n"),
	    "spec.workload.lossChunks", 11, "0 is out of range [1, 1024]");
	expect_err(RECIPE("    loss: chunked\n    lossChunks: 2000\n"),
	    "spec.workload.lossChunks", 11, "2000 is out of range [1, 1024]");
	expect_err(MSPEC "  workload:\n    sequenceLength: 16\n"
	                 "    loss: chunked\n    lossChunks: 17\n",
	    "spec.workload.lossChunks", 11,
	    "17 pieces are more than the 16 tokens of a sequence (sequenceLength): each piece needs at least one");
	expect_err(RECIPE("    lossUpcast: output\n    parallelism:\n"
	                  "      pipeline: 2\n"),
	    "spec.workload.lossUpcast", 10,
	    "standard with lossUpcast: output is not modelled under tensor or pipeline parallel (parallelism.tensor 1, pipeline 2): LitGPT's loop over Fabric's fp32 output is measured on one GPU's model; use lossUpcast: loss");
	/* Framework-supplied, it is refused at the same field. */
	expect_err(MSPEC "  workload:\n    framework: litgpt\n"
	                 "    sequenceLength: 64\n"
	                 "    parallelism:\n      tensor: 2\n",
	    "spec.workload.lossUpcast", -1, "use lossUpcast: loss");
	/* As many pieces as tokens, and FSDP, are modelled. */
	read_ok(MSPEC "  workload:\n    sequenceLength: 16\n"
	              "    loss: chunked\n    lossChunks: 16\n"
	              "    sharding:\n      gpus: 8\n",
	    &doc, &job);
	assert_int_equal(job.work.loss_chunks, 16);
	assert_int_equal(job.loss_line, 10);
	assert_int_equal(job.loss_column, 11);
	mf_doc_free(doc);
	/* fused has no pieces: a sequence shorter than lossChunks' default
	 * reads. */
	read_ok(MSPEC "  workload:\n    sequenceLength: 4\n"
	              "    loss: fused\n",
	    &doc, &job);
	assert_int_equal(job.work.loss, MF_LOSS_FUSED);
	mf_doc_free(doc);
}

/* QLoRA as bitsandbytes stores it: the block a absmax, double quant. */
static void
test_read_qlora(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(RECIPE("    method: qlora\n"
	               "    qlora: {blockSize: 128, doubleQuant: false}\n"),
	    &doc, &job);
	assert_int_equal(job.work.method, MF_QLORA);
	assert_int_equal(job.work.qlora_block, 128);
	assert_false(job.work.qlora_double_quant);
	mf_doc_free(doc);
	read_ok(RECIPE("    method: qlora\n"), &doc, &job);
	assert_int_equal(job.work.qlora_block, 64);
	assert_true(job.work.qlora_double_quant);
	mf_doc_free(doc);
	expect_err(RECIPE("    method: qlora\n    qlora: {blockSize: 100}\n"),
	    "spec.workload.qlora.blockSize", 11,
	    "100 is not one of 32, 64, 128, 256, 512, 1024, 2048, 4096");
	expect_err(RECIPE("    method: lora\n    qlora: {blockSize: 64}\n"),
	    "spec.workload.qlora", 11,
	    "applies only with method: qlora, and this job has method: lora");
	expect_err(RECIPE("    qlora: {doubleQuant: true}\n"),
	    "spec.workload.qlora", 10,
	    "this job has method: full (the default)");
	expect_err(RECIPE("    method: qlora\n    qlora: {blocksize: 64}\n"),
	    "spec.workload.qlora.blocksize", 11, "unknown field");
}

/* FSDP's reshard, tensor parallel's sequence and loss parallel, vLLM's
 * sequences. */
static void
test_read_parallel_recipes(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(RECIPE("    sharding: {gpus: 4, reshardAfterForward: false}\n"
	               "    parallelism: {sequenceParallel: true, "
	               "lossParallel: true}\n"),
	    &doc, &job);
	assert_int_equal(job.work.shard_gpus, 4);
	assert_false(job.work.reshard_after_forward);
	assert_true(job.work.sequence_parallel);
	assert_true(job.work.loss_parallel);
	mf_doc_free(doc);
	read_ok(MSPEC INF "    server: vllm\n    maxNumSeqs: 512\n", &doc,
	    &job);
	assert_int_equal(job.work.max_num_seqs, 512);
	mf_doc_free(doc);
	/* Not given: vLLM's default for the card (0 until placed). */
	read_ok(MSPEC INF "    server: vllm\n", &doc, &job);
	assert_int_equal(job.work.max_num_seqs, 0);
	mf_doc_free(doc);
	expect_err(MSPEC INF "    maxNumSeqs: 512\n",
	    "spec.workload.maxNumSeqs", 11, "applies only with server: vllm");
	expect_err(RECIPE("    maxNumSeqs: 512\n"), "spec.workload.maxNumSeqs",
	    10, "applies only with kind: inference");
	expect_err(MSPEC INF "    parallelism: {tensor: 2, "
	                     "sequenceParallel: true}\n",
	    "spec.workload.parallelism.sequenceParallel", 11,
	    "applies only with kind: training");
	expect_err(RECIPE("    sharding: {gpus: 2, reshardAfterForward: 1}\n"),
	    "spec.workload.sharding.reshardAfterForward", 10,
	    "must be true or false, not a number");
}

/*
 * serverVersion (design 22): a vLLM release as a number, MAJOR x 10^6 +
 * MINOR x 10^3 + PATCH; not given, 0 (the current accounting).  Not a
 * release, or one before 0.2.5, is a 400 naming the field and the range.
 */
static void
test_read_server_version(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(MSPEC INF "    server: vllm\n    serverVersion: 0.7.3\n", &doc,
	    &job);
	assert_int_equal(job.work.server_version, 7003);
	mf_doc_free(doc);
	read_ok(MSPEC INF "    server: vllm\n    serverVersion: \"0.2.6\"\n",
	    &doc, &job);
	assert_int_equal(job.work.server_version, 2006);
	mf_doc_free(doc);
	read_ok(MSPEC INF "    server: vllm\n    serverVersion: 1.10.100\n",
	    &doc, &job);
	assert_int_equal(job.work.server_version, 1010100);
	mf_doc_free(doc);
	read_ok(MSPEC INF "    server: vllm\n", &doc, &job);
	assert_int_equal(job.work.server_version, 0);
	mf_doc_free(doc);
	expect_err(MSPEC INF "    server: vllm\n    serverVersion: 0.2.4\n",
	    "spec.workload.serverVersion", 12,
	    "'0.2.4' is older than the vLLM releases memfloor models (0.2.5 and later)");
	expect_err(MSPEC INF "    server: vllm\n    serverVersion: \"0.7\"\n",
	    "spec.workload.serverVersion", 12,
	    "is not a vLLM release, MAJOR.MINOR.PATCH (0.7.3)");
	/* YAML reads 0.7 as a number. */
	expect_err(MSPEC INF "    server: vllm\n    serverVersion: 0.7\n",
	    "spec.workload.serverVersion", 12, "must be a string");
	expect_err(MSPEC INF "    server: vllm\n    serverVersion: v0.7.3\n",
	    "spec.workload.serverVersion", 12, "is not a vLLM release");
	expect_err(MSPEC INF "    server: vllm\n    serverVersion: 0.7.3.1\n",
	    "spec.workload.serverVersion", 12, "is not a vLLM release");
	expect_err(MSPEC INF "    server: vllm\n    serverVersion: 0.7.3000\n",
	    "spec.workload.serverVersion", 12, "is not a vLLM release");
	expect_err(MSPEC INF "    serverVersion: 0.7.3\n",
	    "spec.workload.serverVersion", 11,
	    "applies only with server: vllm");
}

/* maxCost and deadlineHours need referenceHours; maxHourlyPrice does not. */
static void
test_err_limits_need_hours(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	expect_err(SPEC "  limits:\n    maxCost: 500\n",
	    "spec.duration.referenceHours", -1, "required");
	expect_err(SPEC "  limits:\n    deadlineHours: 5\n",
	    "spec.duration.referenceHours", -1, "required");
	read_ok(SPEC "  limits:\n    maxHourlyPrice: 5\n", &doc, &job);
	assert_true(job.max_hourly_price == 5);
	assert_true(job.max_cost < 0);
	mf_doc_free(doc);
	/* Zero is a limit, not "no limit". */
	read_ok(SPEC "  limits:\n    maxCost: 0\n  duration:\n"
	             "    referenceHours: 2\n",
	    &doc, &job);
	assert_true(job.max_cost == 0);
	mf_doc_free(doc);
}

/* Design 21: one duration; tokens train, requests serve and need the
 * output of a request; tokens alone satisfy the limits. */
static void
test_err_duration(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	expect_err(MSPEC "  duration:\n    referenceHours: 2\n"
	                 "    tokens: 1000\n",
	    "spec.duration", -1,
	    "gives more than one of referenceHours, tokens and requests");
	expect_err(MSPEC "  workload:\n    kind: inference\n"
	                 "    contextLength: 4096\n"
	                 "  duration:\n    tokens: 1000\n",
	    "spec.duration.tokens", -1, "applies to training");
	expect_err(MSPEC "  workload:\n    sequenceLength: 4096\n"
	                 "  duration:\n    requests: 1000\n",
	    "spec.duration.requests", -1, "applies to inference");
	expect_err(MSPEC "  workload:\n    kind: inference\n"
	                 "    contextLength: 4096\n"
	                 "  duration:\n    requests: 1000\n",
	    "spec.workload.outputTokens", -1, "required by duration.requests");
	read_ok(MSPEC "  workload:\n    kind: inference\n"
	              "    contextLength: 4096\n    promptTokens: 1000\n"
	              "    outputTokens: 200\n"
	              "  duration:\n    requests: 5000\n"
	              "  limits:\n    maxCost: 100\n",
	    &doc, &job);
	assert_int_equal(job.requests, 5000);
	assert_int_equal(job.work.prompt_tokens, 1000);
	assert_int_equal(job.work.output_tokens, 200);
	mf_doc_free(doc);
	read_ok(MSPEC "  workload:\n    sequenceLength: 4096\n"
	              "  duration:\n    tokens: 3000000000\n",
	    &doc, &job);
	assert_int_equal(job.tokens, INT64_C(3000000000));
	mf_doc_free(doc);
}

/* FSDP sharding is for full fine-tuning (sharding's when in the table);
 * count must agree with it. */
static void
test_err_sharding(void **state)
{
	(void)state;
	/* QLoRA under FSDP with cpuOffload, and LoRA under FSDP with tensor
	 * parallel, are not modelled (mf_est_shard_refused). */
	expect_err(MSPEC "  workload:\n    method: qlora\n"
	                 "    sequenceLength: 4096\n"
	                 "    sharding: {gpus: 2, cpuOffload: true}\n",
	    "spec.workload.sharding", 11,
	    "is modelled for QLoRA without cpuOffload or qlora.kbitPrep, as tests/torch/dist.py measured it");
	expect_err(MSPEC "  workload:\n    method: lora\n"
	                 "    sequenceLength: 4096\n    sharding: {gpus: 2}\n"
	                 "    parallelism: {tensor: 2}\n",
	    "spec.workload.sharding", 11,
	    "LoRA under FSDP with tensor, pipeline or expert parallelism has not been measured");
	expect_err(MSPEC "  workload:\n    sequenceLength: 4096\n"
	                 "    gradientCheckpointing: true\n"
	                 "    activationOffload: true\n"
	                 "    sharding: {gpus: 1, cpuOffload: true}\n",
	    "spec.workload.sharding", 12,
	    "cpuOffload is not modelled together with activationOffload");
	expect_err(MSPEC "  workload:\n    sequenceLength: 4096\n"
	                 "    sharding: {gpus: 2, cpuOffload: yes}\n",
	    "spec.workload.sharding.cpuOffload", 10, "");
	expect_err(MSPEC "  workload:\n    kind: inference\n"
	                 "    contextLength: 4096\n    sharding: {gpus: 2}\n",
	    "spec.workload.sharding", 11,
	    "applies only with kind: training, and this job has kind: "
	    "inference");
	expect_err(MSPEC
	    "  resources:\n    gpu:\n      count: 4\n"
	    "  workload:\n    sequenceLength: 4096\n    sharding: {gpus: 8}\n",
	    "spec.resources.gpu.count", -1,
	    "is 4 but workload.sharding.gpus "
	    "is 8");
	expect_err(MSPEC "  workload:\n    sequenceLength: 4096\n"
	                 "    sharding: {}\n",
	    "spec.workload.sharding.gpus", -1, "required");
}

/*
 * Fields that change nothing for the workload are refused, naming the
 * field and why (issue 27): the serving fields in training, the training
 * fields in inference, a method other than full in inference, a lora block
 * with method full.
 */
static void
test_err_no_effect(void **state)
{
	static const char *const serving[] = { "concurrency: 8",
		"contextLength: 4096", "kvCacheDtype: fp8" };
	static const char *const training[] = { "optimizer: sgd",
		"lora: {rank: 8}", "microBatch: 2", "sequenceLength: 4096",
		"gradientCheckpointing: true" };
	char text[512], field[64];
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	for (size_t i = 0; i < sizeof(serving) / sizeof(serving[0]); i++) {
		snprintf(text, sizeof(text), RECIPE("    %s\n"), serving[i]);
		snprintf(field, sizeof(field), "spec.workload.%.*s",
		    (int)strcspn(serving[i], ":"), serving[i]);
		expect_err(text, field, 10,
		    "has no effect here: it applies only with kind: inference, "
		    "and this job has kind: training (the default)");
	}
	for (size_t i = 0; i < sizeof(training) / sizeof(training[0]); i++) {
		snprintf(text, sizeof(text), MSPEC INF "    %s\n", training[i]);
		snprintf(field, sizeof(field), "spec.workload.%.*s",
		    (int)strcspn(training[i], ":"), training[i]);
		expect_err(text, field, 11,
		    "has no effect here: it applies only with kind: training, "
		    "and this job has kind: inference");
	}
	/* The value at fault is quoted, at the value's position. */
	expect_err(MSPEC INF "    method: lora\n", "spec.workload.method", 11,
	    "'lora' has no effect here: it applies only with kind: training");
	expect_err(MSPEC INF "    method: qlora\n", "spec.workload.method", 11,
	    "'qlora' has no effect here");
	read_ok(MSPEC INF "    method: full\n", &doc, &job);
	assert_int_equal(job.work.method, MF_FULL);
	mf_doc_free(doc);
	expect_err(RECIPE("    lora: {rank: 8}\n"), "spec.workload.lora", 10,
	    "has no effect here: it applies only with method: lora or qlora, "
	    "and this job has method: full (the default)");
	expect_err(RECIPE("    method: full\n    lora: {rank: 8}\n"),
	    "spec.workload.lora", 11, "and this job has method: full");
	/* The kind may come after the field it rules out. */
	expect_err(MSPEC
	    "  workload:\n    optimizer: sgd\n    kind: inference\n"
	    "    contextLength: 4096\n",
	    "spec.workload.optimizer", 9, "applies only with kind: training");
	/* JSON: the same, without a position. */
	expect_err("{\"apiVersion\": \"memfloor.dev/v1\", \"kind\": \"Job\", "
	           "\"metadata\": {\"name\": \"j\"}, \"spec\": {\"model\": "
	           "{\"name\": \"meta-llama/Llama-3.1-8B\"}, \"workload\": "
	           "{\"sequenceLength\": 64, \"kvCacheDtype\": \"fp8\"}}}",
	    "spec.workload.kvCacheDtype", 0,
	    "applies only with kind: inference");
}

/* A GPU memory quantity below 1Gi is a unit left out; 80GB is told how
 * memory is written (issue 27). */
static void
test_err_memory_meant(void **state)
{
	(void)state;
	expect_err(HDR "spec:\n  resources:\n    gpu:\n      minMemory: 80\n",
	    "spec.resources.gpu.minMemory", 8,
	    "'80' is 80 bytes, less than 1Gi: a GPU's memory is written with "
	    "its unit, e.g. 80Gi");
	/* 10^9 bytes is 0.93Gi. */
	expect_err(HDR "spec:\n  resources:\n    gpu:\n      minMemory: 1G\n",
	    "spec.resources.gpu.minMemory", 8,
	    "'1G' is 1000000000 bytes, less than 1Gi");
	expect_err(HDR "spec:\n  resources:\n    gpu:\n      minMemory: 80GB\n",
	    "spec.resources.gpu.minMemory", 8,
	    "'80GB' is not a quantity: memory is written 80G (10^9 bytes) or "
	    "80Gi (2^30 bytes)");
	expect_err(HDR "spec:\n  resources:\n    gpu:\n"
	               "      minMemory: 141GiB\n",
	    "spec.resources.gpu.minMemory", 8,
	    "memory is written 141G (10^9 bytes) or 141Gi (2^30 bytes)");
}

/* The kind is read first: a catalogue is told it is one, not that its
 * headroom is unknown; an empty document is told it is empty. */
static void
test_err_kind_first(void **state)
{
	(void)state;
	expect_err("apiVersion: memfloor.dev/v1\nheadroom: 0.1\n"
	           "gpus: []\nkind: GpuCatalog\n",
	    "kind", 4,
	    "kind: 'GpuCatalog' is the kind of a memfloor GPU catalogue; this "
	    "takes kind Job");
	expect_err("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: t\n"
	           "spec: {template: {}}\n",
	    "apiVersion", 1, "'batch/v1' is not 'memfloor.dev/v1'");
	expect_err("", "", 1,
	    "the document is empty: a memfloor Job manifest (apiVersion "
	    "memfloor.dev/v1, kind Job) is a mapping");
	expect_err("# only a comment\n", "", 1, "the document is empty");
	expect_err("---\n", "", -1, "the document is empty");
}

/* A model needs its lengths; a floor alone needs none. */
static void
test_err_model_lengths(void **state)
{
	(void)state;
	expect_err(MSPEC, "spec.workload.sequenceLength", -1,
	    "required for training with a model");
	expect_err(MSPEC "  workload:\n    method: qlora\n",
	    "spec.workload.sequenceLength", -1, "required");
	expect_err(MSPEC "  workload:\n    kind: inference\n"
	                 "    concurrency: 8\n",
	    "spec.workload.contextLength", -1, "required for inference");
	expect_err(HDR "spec:\n  workload:\n    sequenceLength: 4096\n",
	    "spec.resources.gpu.minMemory", -1, "required when no model");
	expect_err(HDR "spec: {}\n", "spec.resources.gpu.minMemory", -1,
	    "required");
}

/* --- framework (design 22) --- */

/* Bit i of job->from_framework for field, or 0 when framework v does not
 * supply it for method m. */
static unsigned
fw_bit(int v, enum mf_method m, const char *field)
{
	const char *f;

	for (int i = 0; (f = mf_framework_field(v, m, 0, i)) != NULL; i++)
		if (strcmp(f, field) == 0)
			return 1u << i;
	return 0;
}

/* The value of a framework's name, as the reader gives it. */
static int
fw_value(const char *name)
{
	const char *nm;

	for (int v = 0; (nm = mf_framework_name(v)) != NULL; v++)
		if (strcmp(nm, name) == 0)
			return v;
	fail_msg("no framework %s", name);
	return -1;
}

#define TT_LORA_MODULES \
	(MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_V) | \
	    MF_LORA_BIT(MF_LIN_O) | MF_LORA_BIT(MF_LIN_GATE) | \
	    MF_LORA_BIT(MF_LIN_UP) | MF_LORA_BIT(MF_LIN_DOWN))

/* torchtune's 8B_lora_single_device.yaml, field by field (framework.c's
 * citations), every one from the framework; the framework written before
 * the method still takes the method's recipe. */
static void
test_read_framework_torchtune(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;
	const struct mf_workload *w = &job.work;

	(void)state;
	read_ok(MSPEC "  workload:\n    framework: torchtune\n"
	              "    method: lora\n    sequenceLength: 64\n",
	    &doc, &job);
	assert_int_equal(job.framework_given, 1);
	assert_int_equal(job.framework, fw_value("torchtune"));
	assert_int_equal(w->precision, MF_BF16_TRUE);
	assert_int_equal(w->checkpointing, MF_CKPT_FULL);
	assert_int_equal(w->ckpt_every, 1);
	assert_int_equal(w->attention, MF_SDPA);
	assert_int_equal(w->loss, MF_LOSS_CHUNKED);
	assert_int_equal(w->loss_chunks, 8);
	assert_int_equal(w->activation_offload, 0);
	assert_int_equal(w->optimizer, MF_ADAMW);
	assert_int_equal(w->lora_rank, 8);
	assert_int_equal(w->lora_targets, MF_LORA_LIST);
	assert_int_equal(w->lora_modules, TT_LORA_MODULES);
	assert_int_equal(w->lora_dtype, MF_LORA_BF16);
	assert_true(w->lora_dropout == 0);
	assert_int_equal(w->compile, 0);
	/* Twelve fields, every one from the framework. */
	assert_null(mf_framework_field(job.framework, MF_LORA, 0, 12));
	assert_int_equal(job.from_framework, (1u << 12) - 1);
	mf_doc_free(doc);
	/* qlora adds torchao's NF4 storage, double-quantized; full the
	 * optimizer in backward. */
	read_ok(MSPEC "  workload:\n    method: qlora\n"
	              "    framework: torchtune@0.4\n    sequenceLength: 64\n",
	    &doc, &job);
	assert_int_equal(w->qlora_block, 64);
	assert_int_equal(w->qlora_double_quant, 1);
	assert_int_equal(w->qlora_kbit_prep, 0);
	assert_int_equal(w->lora_dtype, MF_LORA_BF16);
	mf_doc_free(doc);
	read_ok(MSPEC "  workload:\n    framework: torchtune\n"
	              "    sequenceLength: 64\n",
	    &doc, &job);
	assert_int_equal(w->optimizer_in_backward, 1);
	assert_int_equal(w->optimizer, MF_PAGED_ADAMW8BIT);
	assert_int_not_equal(fw_bit(job.framework, MF_FULL, "optimizer"), 0);
	mf_doc_free(doc);
	/* targets a name where the framework's is a list: no list is left
	 * (the job, and its fingerprint, as all-linear written alone). */
	read_ok(MSPEC "  workload:\n    framework: torchtune\n"
	              "    method: lora\n    sequenceLength: 64\n"
	              "    lora: {targets: all-linear}\n",
	    &doc, &job);
	assert_int_equal(w->lora_targets, MF_LORA_ALL_LINEAR);
	assert_int_equal(w->lora_modules, 0);
	mf_doc_free(doc);
}

/* A sharded full job takes torchtune's distributed recipe (8B_full.yaml:
 * optimizer_in_bwd False, AdamW), which FSDP models; the same job written
 * without sharding the single-device one. */
static void
test_read_framework_sharded(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;
	int v = fw_value("torchtune");

	(void)state;
	read_ok(MSPEC "  workload:\n    framework: torchtune\n"
	              "    sequenceLength: 64\n    sharding: {gpus: 2}\n",
	    &doc, &job);
	assert_int_equal(job.framework_sharded, 1);
	assert_int_equal(job.work.optimizer_in_backward, 0);
	assert_int_equal(job.work.optimizer, MF_ADAMW);
	assert_int_equal(job.work.checkpointing, MF_CKPT_FULL);
	assert_int_not_equal(fw_bit(v, MF_FULL, "optimizerInBackward"), 0);
	assert_non_null(mf_framework_field(v, MF_FULL, 1, 0));
	assert_int_equal(job.from_framework & 1u, 1u);
	mf_doc_free(doc);
	read_ok(MSPEC "  workload:\n    framework: torchtune\n"
	              "    sequenceLength: 64\n",
	    &doc, &job);
	assert_int_equal(job.framework_sharded, 0);
	assert_int_equal(job.work.optimizer_in_backward, 1);
	mf_doc_free(doc);
}

/* The bit of field among the sharded recipe's fields of release v. */
static unsigned
fw_sharded_bit(int v, enum mf_method m, const char *field)
{
	const char *f;

	for (int i = 0; (f = mf_framework_field(v, m, 1, i)) != NULL; i++)
		if (strcmp(f, field) == 0)
			return 1u << i;
	return 0;
}

/* sharding.units: model by default; torchtune's distributed full recipe
 * (8B_full, 70B_full: custom_sharded_layers ['tok_embeddings', 'output'])
 * and torchtitan 0.2 (apply_fsdp) supply ends, torchtune's LoRA configs
 * and torchtitan 0.1 model; the manifest's value wins. */
static void
test_read_units(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;
	int tt = fw_value("torchtune");
	unsigned bit;

	(void)state;
	read_ok(RECIPE("    sharding: {gpus: 8}\n"), &doc, &job);
	assert_int_equal(job.work.shard_units, MF_UNITS_MODEL);
	mf_doc_free(doc);
	read_ok(RECIPE("    sharding: {gpus: 8, units: ends}\n"), &doc, &job);
	assert_int_equal(job.work.shard_units, MF_UNITS_ENDS);
	assert_int_equal(job.work.shard_gpus, 8);
	mf_doc_free(doc);
	expect_err(RECIPE("    sharding: {gpus: 8, units: head}\n"),
	    "spec.workload.sharding.units", 10, "model");
	read_ok(MSPEC "  workload:\n    framework: torchtune\n"
	              "    sequenceLength: 64\n"
	              "    sharding: {gpus: 8, cpuOffload: true}\n",
	    &doc, &job);
	assert_int_equal(job.work.shard_units, MF_UNITS_ENDS);
	assert_int_equal(job.work.shard_gpus, 8);
	assert_int_equal(job.work.shard_cpu_offload, 1);
	bit = fw_sharded_bit(tt, MF_FULL, "sharding.units");
	assert_int_not_equal(bit, 0);
	assert_int_equal(job.from_framework & bit, bit);
	mf_doc_free(doc);
	read_ok(MSPEC "  workload:\n    framework: torchtune\n"
	              "    sequenceLength: 64\n"
	              "    sharding: {gpus: 8, units: model}\n",
	    &doc, &job);
	assert_int_equal(job.work.shard_units, MF_UNITS_MODEL);
	assert_int_equal(job.from_framework & bit, 0);
	mf_doc_free(doc);
	read_ok(MSPEC "  workload:\n    framework: torchtune\n"
	              "    method: lora\n    sequenceLength: 64\n"
	              "    sharding: {gpus: 2}\n",
	    &doc, &job);
	assert_int_equal(job.work.shard_units, MF_UNITS_MODEL);
	assert_int_not_equal(fw_sharded_bit(tt, MF_LORA, "sharding.units"), 0);
	mf_doc_free(doc);
	read_ok(MSPEC "  workload:\n    framework: torchtitan\n"
	              "    sequenceLength: 64\n    sharding: {gpus: 4}\n",
	    &doc, &job);
	assert_int_equal(job.work.shard_units, MF_UNITS_ENDS);
	assert_int_equal(job.work.shard_gpus, 4);
	mf_doc_free(doc);
	read_ok(MSPEC "  workload:\n    framework: torchtitan@0.1\n"
	              "    sequenceLength: 64\n    sharding: {gpus: 4}\n",
	    &doc, &job);
	assert_int_equal(job.work.shard_units, MF_UNITS_MODEL);
	mf_doc_free(doc);
	/* One GPU's recipe states no units. */
	read_ok(MSPEC "  workload:\n    framework: torchtitan\n"
	              "    sequenceLength: 64\n",
	    &doc, &job);
	assert_int_equal(job.work.shard_units, MF_UNITS_MODEL);
	assert_int_equal(job.work.shard_gpus, 1);
	mf_doc_free(doc);
}

/* A field the manifest states wins, and is not in fromFramework;
 * lossChunks alone is taken, the framework's chunked loss read first. */
static void
test_read_framework_stated_wins(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;
	int v = fw_value("torchtune");
	unsigned stated;

	(void)state;
	read_ok(MSPEC
	    "  workload:\n    method: lora\n    framework: torchtune\n"
	    "    sequenceLength: 64\n    lossChunks: 16\n"
	    "    gradientCheckpointing: false\n"
	    "    lora: {dtype: fp32}\n",
	    &doc, &job);
	assert_int_equal(job.work.loss, MF_LOSS_CHUNKED);
	assert_int_equal(job.work.loss_chunks, 16);
	assert_int_equal(job.work.checkpointing, MF_CKPT_NONE);
	assert_int_equal(job.work.lora_dtype, MF_LORA_FP32);
	assert_int_equal(job.work.lora_rank, 8);
	stated = fw_bit(v, MF_LORA, "lossChunks") |
	    fw_bit(v, MF_LORA, "gradientCheckpointing") |
	    fw_bit(v, MF_LORA, "lora.dtype");
	assert_int_equal(__builtin_popcount(stated), 3);
	assert_int_equal(job.from_framework, ((1u << 12) - 1) & ~stated);
	mf_doc_free(doc);
}

/* transformers' Trainer and PEFT, torchtitan and LitGPT as framework.c
 * cites them. */
static void
test_read_framework_others(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;
	const struct mf_workload *w = &job.work;

	(void)state;
	read_ok(MSPEC "  workload:\n    method: qlora\n"
	              "    framework: transformers\n    sequenceLength: 64\n",
	    &doc, &job);
	assert_int_equal(w->precision, MF_BF16_TRUE);
	assert_int_equal(w->checkpointing, MF_CKPT_NONE);
	assert_int_equal(w->loss, MF_LOSS_STANDARD);
	assert_int_equal(w->lora_rank, 8);
	assert_int_equal(w->lora_targets, MF_LORA_LIST);
	assert_int_equal(w->lora_modules,
	    MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_V));
	assert_int_equal(w->lora_dtype, MF_LORA_FP32);
	assert_int_equal(w->qlora_block, 64);
	assert_int_equal(w->qlora_double_quant, 0);
	assert_int_equal(w->qlora_kbit_prep, 0);
	mf_doc_free(doc);
	read_ok(MSPEC "  workload:\n    framework: torchtitan@0.1\n"
	              "    sequenceLength: 64\n",
	    &doc, &job);
	assert_int_equal(w->precision, MF_BF16_MIXED);
	assert_int_equal(w->checkpointing, MF_CKPT_OP);
	assert_int_equal(w->sequence_parallel, 1);
	assert_int_equal(w->loss_parallel, 1);
	mf_doc_free(doc);
	read_ok(MSPEC "  workload:\n    method: lora\n    framework: litgpt\n"
	              "    sequenceLength: 64\n",
	    &doc, &job);
	assert_int_equal(w->precision, MF_BF16_MIXED);
	assert_int_equal(w->lora_dtype, MF_LORA_FP32);
	/* LitGPT's loop holds Fabric's fp32 output: supplied. */
	assert_int_not_equal(fw_bit(job.framework, MF_LORA, "loss"), 0);
	assert_int_not_equal(fw_bit(job.framework, MF_LORA, "lossUpcast"), 0);
	assert_int_equal(w->loss, MF_LOSS_STANDARD);
	assert_int_equal(w->loss_upcast, MF_UPCAST_OUTPUT);
	mf_doc_free(doc);
	read_ok(MSPEC "  workload:\n    method: qlora\n"
	              "    framework: litgpt@0.4.5\n    sequenceLength: 64\n",
	    &doc, &job);
	assert_int_equal(w->precision, MF_BF16_TRUE);
	assert_int_equal(w->lora_dtype, MF_LORA_BF16);
	assert_int_equal(w->qlora_double_quant, 0);
	mf_doc_free(doc);
}

/* Every release's recipe for every method it has reads (its values are
 * the manifest's), names rows that exist, and fingerprints as the same job
 * with no framework: the framework is not the job, its values are. */
static void
test_read_framework_every_release(void **state)
{
	static const char *const methods[] = { "full", "lora", "qlora" };
	char text[512], path[128];
	struct mf_doc *doc = NULL, *plain = NULL;
	struct mf_job job, none;
	char a[MF_FP_HEX], b[MF_FP_HEX];
	const char *f;

	(void)state;
	for (int v = 0; mf_framework_name(v) != NULL; v++)
		for (int m = 0; m < 3; m++) {
			for (int i = 0; (f = mf_framework_field(v,
			                     (enum mf_method)m, 0, i)) != NULL;
			     i++) {
				snprintf(path, sizeof(path), "spec.workload.%s",
				    f);
				assert_non_null(
				    mf_fields_at(&mf_fields_job, path));
			}
			if (mf_framework_field(v, (enum mf_method)m, 0, 0) ==
			    NULL)
				continue;
			snprintf(text, sizeof(text),
			    MSPEC
			    "  workload:\n    method: %s\n"
			    "    framework: '%s'\n    sequenceLength: 64\n",
			    methods[m], mf_framework_name(v));
			read_ok(text, &doc, &job);
			assert_int_equal(job.framework, v);
			read_ok(MSPEC "  workload:\n    sequenceLength: 64\n",
			    &plain, &none);
			none.work = job.work;
			mf_fp_job(&job, 0, 1, a);
			mf_fp_job(&none, 0, 1, b);
			assert_string_equal(a, b);
			mf_doc_free(plain);
			mf_doc_free(doc);
		}
}

/* Without framework nothing is supplied and the defaults are section 3's. */
static void
test_read_framework_absent(void **state)
{
	struct mf_doc *doc = NULL;
	struct mf_job job;

	(void)state;
	read_ok(MSPEC "  workload:\n    method: lora\n    sequenceLength: 64\n",
	    &doc, &job);
	assert_int_equal(job.framework_given, 0);
	assert_int_equal(job.from_framework, 0);
	assert_int_equal(job.work.lora_targets, MF_LORA_ALL_LINEAR);
	assert_int_equal(job.work.precision, MF_BF16);
	mf_doc_free(doc);
}

static void
test_err_framework(void **state)
{
	(void)state;
	/* An unknown framework or release: the known ones listed. */
	expect_err(MSPEC "  workload:\n    framework: torchtune@0.3\n",
	    "spec.workload.framework", 9,
	    "'torchtune@0.3' is not one of transformers, transformers@5.24, torchtune, torchtune@0.6, torchtune@0.4, torchtitan");
	expect_err(MSPEC "  workload:\n    framework: deepspeed\n",
	    "spec.workload.framework", 9, "litgpt@0.4.5");
	/* torchtitan has no LoRA recipe. */
	expect_err(MSPEC "  workload:\n    method: lora\n"
	                 "    framework: torchtitan\n    sequenceLength: 64\n",
	    "spec.workload.framework", 10,
	    "'torchtitan' has no recipe for method lora: its recipes are method full");
	/* A recipe is a training job's. */
	expect_err(MSPEC "  workload:\n    kind: inference\n"
	                 "    framework: torchtune\n    contextLength: 64\n",
	    "spec.workload.framework", 10, "has no effect here");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_full_yaml),
		cmocka_unit_test(test_read_full_json),
		cmocka_unit_test(test_read_defaults),
		cmocka_unit_test(test_read_inline_config),
		cmocka_unit_test(test_read_inference),
		cmocka_unit_test(test_read_lora_targets),
		cmocka_unit_test(test_read_kbit_prep),
		cmocka_unit_test(test_read_recipe),
		cmocka_unit_test(test_read_config_url),
		cmocka_unit_test(test_read_sharding_sets_count),
		cmocka_unit_test(test_read_min_memory_forms),
		cmocka_unit_test(test_read_metadata_extras),
		cmocka_unit_test(test_read_spec_only),
		cmocka_unit_test(test_read_spec_with_floor),
		cmocka_unit_test(test_read_all_fixes),
		cmocka_unit_test(test_read_serving),
		cmocka_unit_test(test_err_serving),
		cmocka_unit_test(test_err_request_past_context),
		cmocka_unit_test(test_err_batched_under_seqs),
		cmocka_unit_test(test_err_seqs_over_default_tokens),
		cmocka_unit_test(test_err_no_effect_unnamed_default),
		cmocka_unit_test(test_err_count_not_replicas),
		cmocka_unit_test(test_err_unknown_fields),
		cmocka_unit_test(test_err_unknown_field_line),
		cmocka_unit_test(test_err_types),
		cmocka_unit_test(test_err_bounds),
		cmocka_unit_test(test_err_quantity),
		cmocka_unit_test(test_err_json),
		cmocka_unit_test(test_err_header),
		cmocka_unit_test(test_err_root),
		cmocka_unit_test(test_err_model),
		cmocka_unit_test(test_err_no_registry),
		cmocka_unit_test(test_err_allowed_fixes),
		cmocka_unit_test(test_read_precisions),
		cmocka_unit_test(test_read_checkpointing),
		cmocka_unit_test(test_read_loss_offload),
		cmocka_unit_test(test_read_optimizer_in_backward),
		cmocka_unit_test(test_read_compile),
		cmocka_unit_test(test_read_float8),
		cmocka_unit_test(test_read_offload_layouts),
		cmocka_unit_test(test_read_qlora),
		cmocka_unit_test(test_read_parallel_recipes),
		cmocka_unit_test(test_read_server_version),
		cmocka_unit_test(test_err_limits_need_hours),
		cmocka_unit_test(test_err_duration),
		cmocka_unit_test(test_err_sharding),
		cmocka_unit_test(test_err_model_lengths),
		cmocka_unit_test(test_err_loss),
		cmocka_unit_test(test_err_no_effect),
		cmocka_unit_test(test_err_memory_meant),
		cmocka_unit_test(test_err_kind_first),
		cmocka_unit_test(test_read_framework_torchtune),
		cmocka_unit_test(test_read_framework_sharded),
		cmocka_unit_test(test_read_units),
		cmocka_unit_test(test_read_framework_stated_wins),
		cmocka_unit_test(test_read_framework_others),
		cmocka_unit_test(test_read_framework_every_release),
		cmocka_unit_test(test_read_framework_absent),
		cmocka_unit_test(test_err_framework),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
