/*
 * test_fingerprint.c: the fingerprint of a job (design 23): one digest for
 * the same job however it is written, another for any change that moves
 * its memory.
 *
 * Fixtures are found under $MF_TOP: the shipped catalog/models.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/jw.h"
#include "doc/doc.h"
#include "fingerprint/fingerprint.h"
#include "fix/fix.h"
#include "manifest/manifest.h"
#include "model/model.h"
#include "files.h"
#include "msg.h"

static const struct mf_models *models;

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

/* text's job into *job, from *doc (the caller frees it). */
static void
job_of(const char *text, struct mf_doc **doc, struct mf_job *job)
{
	struct mf_error err;

	*doc = NULL;
	if (mf_doc_parse(text, strlen(text), MF_DOC_AUTO, doc, &err) != MF_OK)
		fail_msg("parse: %s", MSG(&err));
	if (mf_job_read(mf_doc_root(*doc), "", models, job, &err) != MF_OK)
		fail_msg("job: %s", MSG(&err));
}

/* The record of job placed with fixes over count GPUs (mf_fp_write) into
 * b, a new buffer the caller frees. */
static void
record_of(struct mf_buf *b, const struct mf_job *job, unsigned fixes,
    int64_t count)
{
	struct mf_jw w;

	mf_buf_init(b, 1 << 16);
	mf_jw_init(&w, b);
	mf_fp_write(&w, NULL, job, fixes, count);
	assert_int_equal(mf_jw_finish(&w), MF_OK);
}

/* The fingerprint of text's job placed with fixes over count GPUs (0:
 * the job's own count). */
static void
fingerprint(const char *text, unsigned fixes, int64_t count,
    char hex[MF_FP_HEX])
{
	struct mf_doc *doc;
	struct mf_job job;

	job_of(text, &doc, &job);
	mf_fp_job(&job, fixes, count ? count : job.count, hex);
	assert_true(mf_fp_valid(hex));
	mf_doc_free(doc);
}

static const char named_yaml[] = "apiVersion: memfloor.dev/v1\n"
                                 "kind: Job\n"
                                 "metadata:\n"
                                 "  name: first\n"
                                 "spec:\n"
                                 "  model:\n"
                                 "    name: meta-llama/Llama-3.1-8B\n"
                                 "  workload:\n"
                                 "    kind: training\n"
                                 "    sequenceLength: 4096\n"
                                 "    microBatch: 2\n"
                                 "    precision: bf16\n"
                                 "  duration:\n"
                                 "    referenceHours: 12\n";

/* The same job in JSON, another name, fields in another order, its
 * duration and limits other, the shipped config inline. */
static char *
inline_json(const char *workload)
{
	char path[512], *config, *out;
	size_t n;

	config = slurp(top_path(path, sizeof(path),
	                   "catalog/models/meta-llama/Llama-3.1-8B.json"),
	    NULL);
	assert_non_null(config);
	n = strlen(config) + 512;
	out = malloc(n);
	assert_non_null(out);
	snprintf(out, n,
	    "{\"spec\": {\"duration\": {\"referenceHours\": 30},"
	    " \"workload\": %s, \"model\": {\"config\": %s}},"
	    " \"metadata\": {\"name\": \"second\"}, \"kind\": \"Job\","
	    " \"apiVersion\": \"memfloor.dev/v1\"}",
	    workload, config);
	free(config);
	return out;
}

static void
test_fingerprint_same_job_two_ways(void **state)
{
	char a[MF_FP_HEX], b[MF_FP_HEX];
	char *json = inline_json("{\"precision\": \"bf16\", \"microBatch\": 2,"
	                         " \"sequenceLength\": 4096}");

	(void)state;
	fingerprint(named_yaml, 0, 0, a);
	fingerprint(json, 0, 0, b);
	assert_string_equal(a, b);
	free(json);
}

static void
test_fingerprint_workload_field_changes_it(void **state)
{
	char a[MF_FP_HEX], b[MF_FP_HEX];
	char *json = inline_json("{\"precision\": \"bf16\", \"microBatch\": 2,"
	                         " \"sequenceLength\": 2048}");

	(void)state;
	fingerprint(named_yaml, 0, 0, a);
	fingerprint(json, 0, 0, b);
	assert_string_not_equal(a, b);
	free(json);
}

/*
 * A framework's value that the manifest made inapplicable is not the
 * job's: litgpt's recipe (framework.c, LIT_COMMON) sets lossUpcast, which
 * applies to the standard loss only; under loss: chunked the job is the
 * one its other values, written out, make, and the answer does not list
 * lossUpcast as the framework's.
 */
static void
test_fingerprint_framework_value_not_applying(void **state)
{
	static const char head[] =
	    "apiVersion: memfloor.dev/v1\nkind: Job\nmetadata: {name: t}\n"
	    "spec:\n  model: {name: meta-llama/Llama-3.1-8B}\n"
	    "  workload:\n    method: lora\n    loss: chunked\n"
	    "    sequenceLength: 2048\n";
	char by_framework[512], written[512], a[MF_FP_HEX], b[MF_FP_HEX];
	struct mf_doc *doc;
	struct mf_job job;

	(void)state;
	snprintf(by_framework, sizeof(by_framework),
	    "%s    framework: litgpt\n", head);
	snprintf(written, sizeof(written),
	    "%s    precision: bf16-mixed\n    gradientCheckpointing: false\n"
	    "    attention: sdpa\n    optimizer: adamw\n"
	    "    lora: {rank: 8, targets: [q_proj, v_proj], dropout: 0.05,"
	    " dtype: fp32}\n",
	    head);
	fingerprint(by_framework, 0, 0, a);
	fingerprint(written, 0, 0, b);
	assert_string_equal(a, b);
	job_of(by_framework, &doc, &job);
	for (int i = 0; mf_framework_field(job.framework, job.work.method,
	                    job.framework_sharded, i) != NULL;
	     i++)
		if (strcmp(mf_framework_field(job.framework, job.work.method,
		               job.framework_sharded, i),
		        "lossUpcast") == 0)
			assert_false(job.from_framework >> i & 1u);
	mf_doc_free(doc);
}

/* What a request holds moves the time, not the memory: it counts. */
static void
test_fingerprint_prompt_changes_it(void **state)
{
	static const char serve[] = "apiVersion: memfloor.dev/v1\n"
	                            "kind: Job\n"
	                            "metadata:\n"
	                            "  name: serve\n"
	                            "spec:\n"
	                            "  model:\n"
	                            "    name: meta-llama/Llama-3.1-8B\n"
	                            "  workload:\n"
	                            "    kind: inference\n"
	                            "    concurrency: 4\n"
	                            "    contextLength: 4096\n";
	char text[sizeof(serve) + 32], a[MF_FP_HEX], b[MF_FP_HEX];

	(void)state;
	snprintf(text, sizeof(text), "%s    promptTokens: %d\n", serve, 1000);
	fingerprint(text, 0, 0, a);
	snprintf(text, sizeof(text), "%s    promptTokens: %d\n", serve, 2000);
	fingerprint(text, 0, 0, b);
	assert_string_not_equal(a, b);
}

static void
test_fingerprint_count_changes_it(void **state)
{
	char a[MF_FP_HEX], b[MF_FP_HEX];

	(void)state;
	fingerprint(named_yaml, 0, 1, a);
	fingerprint(named_yaml, 0, 2, b);
	assert_string_not_equal(a, b);
}

/* A fix admission applies and the same change written by hand are one
 * job. */
static void
test_fingerprint_fix_as_written(void **state)
{
	char a[MF_FP_HEX], b[MF_FP_HEX], c[MF_FP_HEX];
	char *json = inline_json("{\"precision\": \"bf16\", \"microBatch\": 2,"
	                         " \"sequenceLength\": 4096,"
	                         " \"gradientCheckpointing\": true}");

	(void)state;
	fingerprint(named_yaml, MF_FIXBIT(MF_FIX_CHECKPOINTING), 0, a);
	fingerprint(json, 0, 0, b);
	fingerprint(named_yaml, 0, 0, c);
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	free(json);
}

/* The canonical text names no job and holds the shape and the count. */
static void
test_fingerprint_canonical_text(void **state)
{
	struct mf_doc *doc;
	struct mf_job job;
	struct mf_buf b;

	(void)state;
	job_of(named_yaml, &doc, &job);
	record_of(&b, &job, 0, 3);
	assert_non_null(strstr(b.data, "\"hidden\":4096"));
	assert_non_null(strstr(b.data, "\"seq_len\":4096"));
	assert_non_null(strstr(b.data, "\"count\":3"));
	assert_null(strstr(b.data, "first"));
	assert_null(strstr(b.data, "Llama"));
	mf_buf_free(&b);
	mf_doc_free(doc);
}

/* The job as placed read back (mf_fp_read) is the job placed: its
 * fingerprint, with no fixes, is the placed job's, and its count the
 * count; a text of another version, or cut short, is refused. */
static void
test_fingerprint_read_back(void **state)
{
	char a[MF_FP_HEX], b[MF_FP_HEX];
	struct mf_doc *doc;
	struct mf_job job, back;
	struct mf_error err;
	struct mf_buf buf;
	int64_t count = 0;
	char *v2;

	(void)state;
	job_of(named_yaml, &doc, &job);
	record_of(&buf, &job, MF_FIXBIT(MF_FIX_CHECKPOINTING), 2);
	assert_int_equal(mf_fp_read(buf.data, buf.len, &back, &count, &err),
	    MF_OK);
	assert_int_equal(count, 2);
	assert_int_equal(back.work.checkpointing, MF_CKPT_FULL);
	mf_fp_job(&job, MF_FIXBIT(MF_FIX_CHECKPOINTING), 2, a);
	mf_fp_job(&back, 0, count, b);
	assert_string_equal(a, b);
	assert_int_equal(mf_fp_read(buf.data, buf.len / 2, &back, &count, &err),
	    MF_EINVAL);
	v2 = strstr(buf.data, "\"v\":1");
	assert_non_null(v2);
	v2[4] = '2';
	assert_int_equal(mf_fp_read(buf.data, buf.len, &back, &count, &err),
	    MF_EINVAL);
	assert_string_equal(err.field, "v");
	mf_buf_free(&buf);
	mf_doc_free(doc);
}

/* A job's framework is in its record and read back from it, though not in
 * its digest: a record without one (written before it was kept) reads as
 * none, and one naming a framework memfloor does not know is refused. */
static void
test_fingerprint_read_back_framework(void **state)
{
	static const char framework_yaml[] =
	    "apiVersion: memfloor.dev/v1\n"
	    "kind: Job\n"
	    "metadata:\n"
	    "  name: tuned\n"
	    "spec:\n"
	    "  model:\n"
	    "    name: meta-llama/Llama-3.1-8B\n"
	    "  workload:\n"
	    "    framework: torchtune@0.6\n"
	    "    method: lora\n"
	    "    sequenceLength: 2048\n"
	    "  duration:\n"
	    "    referenceHours: 12\n";
	char a[MF_FP_HEX], b[MF_FP_HEX], *at;
	struct mf_doc *doc;
	struct mf_job job, back;
	struct mf_error err;
	struct mf_buf buf;
	int64_t count = 0;

	(void)state;
	job_of(framework_yaml, &doc, &job);
	record_of(&buf, &job, 0, 1);
	assert_non_null(strstr(buf.data, "\"framework\":\"torchtune@0.6\""));
	assert_int_equal(mf_fp_read(buf.data, buf.len, &back, &count, &err),
	    MF_OK);
	assert_true(back.framework_given);
	assert_string_equal(mf_framework_name(back.framework), "torchtune@0.6");
	mf_fp_job(&job, 0, 1, a);
	mf_fp_job(&back, 0, count, b);
	assert_string_equal(a, b);

	/* Written before the framework was kept: none. */
	at = strstr(buf.data, "\"framework\":\"torchtune@0.6\",");
	assert_non_null(at);
	memmove(at, at + strlen("\"framework\":\"torchtune@0.6\","),
	    strlen(at + strlen("\"framework\":\"torchtune@0.6\",")) + 1);
	assert_int_equal(mf_fp_read(buf.data, strlen(buf.data), &back, &count,
	                     &err),
	    MF_OK);
	assert_false(back.framework_given);
	mf_fp_job(&back, 0, count, b);
	assert_string_equal(a, b);
	mf_buf_free(&buf);

	/* A name memfloor does not know. */
	record_of(&buf, &job, 0, 1);
	at = strstr(buf.data, "torchtune@0.6");
	assert_non_null(at);
	memcpy(at, "torchtune@9.9", strlen("torchtune@9.9"));
	assert_int_equal(mf_fp_read(buf.data, buf.len, &back, &count, &err),
	    MF_EINVAL);
	assert_string_equal(err.field, "framework");
	mf_buf_free(&buf);
	mf_doc_free(doc);
}

static void
hex(const unsigned char *sum, char *out)
{
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", sum[i]);
}

/* FIPS 180-4's examples, and one a block long past the padding's edge. */
static void
test_fingerprint_sha256_vectors(void **state)
{
	unsigned char sum[32];
	char text[65], million[1000];
	const char *two =
	    "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

	(void)state;
	mf_fp_sha256("abc", 3, sum);
	hex(sum, text);
	assert_string_equal(text,
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	mf_fp_sha256("", 0, sum);
	hex(sum, text);
	assert_string_equal(text,
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	mf_fp_sha256(two, strlen(two), sum);
	hex(sum, text);
	assert_string_equal(text,
	    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(million, 'a', sizeof(million));
	mf_fp_sha256(million, sizeof(million), sum);
	hex(sum, text);
	assert_string_equal(text,
	    "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

static void
test_fingerprint_valid(void **state)
{
	(void)state;
	assert_true(mf_fp_valid("0123456789abcdef0123456789abcdef"));
	assert_false(mf_fp_valid("0123456789ABCDEF0123456789abcdef"));
	assert_false(mf_fp_valid("0123456789abcdef0123456789abcde"));
	assert_false(mf_fp_valid("0123456789abcdef0123456789abcdef0"));
	assert_false(mf_fp_valid(""));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fingerprint_same_job_two_ways),
		cmocka_unit_test(test_fingerprint_workload_field_changes_it),
		cmocka_unit_test(test_fingerprint_prompt_changes_it),
		cmocka_unit_test(test_fingerprint_count_changes_it),
		cmocka_unit_test(test_fingerprint_fix_as_written),
		cmocka_unit_test(test_fingerprint_canonical_text),
		cmocka_unit_test(test_fingerprint_read_back),
		cmocka_unit_test(test_fingerprint_read_back_framework),
		cmocka_unit_test(test_fingerprint_framework_value_not_applying),
		cmocka_unit_test(test_fingerprint_sha256_vectors),
		cmocka_unit_test(test_fingerprint_valid),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
