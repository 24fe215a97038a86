/*
 * test_fields.c: the table of fields (the Job's rows in
 * admission/manifest/job_fields.c, the catalogue's in
 * catalog/catalog_fields.c) holds together: its flags say what its rows
 * say, its string forms and their regular expressions agree, every manifest
 * field a fix sets is a row, and the defaults are those of the design.
 */
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api.h"
#include "catalog.h"
#include "estimate/estimate.h"
#include "fields/fields.h"
#include "fix/fix.h"
#include "manifest/manifest.h"

#define GIB (INT64_C(1) << 30)

/* Strings that try each form's edges. */
static const char *const samples[] = { "", "a", "A", "0", "A-1", "a_b.c", "-a",
	"a-", ".a", "a.", "a b", "a/b", "/b", "a/", "x.y/z", "x..y/z", "-x.y/z",
	"x-.y/z", "X.y/z", "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3",
	"gpu:h100", "gpu:", "gpu:a b", "gpu:a:b", "GPU:h100", "a&b", "a|b|c",
	"a||b", "&a", "a&", "a&b|c_d.e", "\xc3\xa9", "a\tb",
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"gpu:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"gpu:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	NULL };

/* The test and the regular expression of form f agree on every sample
 * (the expressions use nothing POSIX ERE reads otherwise than ECMA-262). */
static void
check_form(const struct mf_form *f)
{
	regex_t re;
	int ok, match;

	assert_int_equal(regcomp(&re, f->pattern, REG_EXTENDED | REG_NOSUB), 0);
	for (int i = 0; samples[i] != NULL; i++) {
		ok = mf_fields_form_ok(f, samples[i], strlen(samples[i])) != 0;
		match = regexec(&re, samples[i], 0, NULL, 0) == 0;
		if (ok != match)
			fail_msg("%s: '%s' is %s by the test, %s by %s",
			    f->text, samples[i], ok ? "taken" : "refused",
			    match ? "taken" : "refused", f->pattern);
	}
	regfree(&re);
}

/* The rows of obj and of every object below it, with the objects that
 * enclose each (for the conditions, which may name only those). */
struct walk {
	const struct mf_field *above[8];
	int depth;
	int forms, rows;
};

static int
encloses(const struct walk *w, const struct mf_field *row)
{
	for (int d = 0; d < w->depth; d++) {
		const struct mf_field *o = w->above[d];

		if (row >= o->sub && row < o->sub + o->nsub)
			return 1;
	}
	return 0;
}

static void check_object(struct walk *w, const struct mf_field *obj);

static void
check_row(struct walk *w, const struct mf_field *f)
{
	w->rows++;
	assert_non_null(f->key);
	if (f->form != NULL) {
		check_form(f->form);
		w->forms++;
	}
	for (int k = 0; k < MF_FWHEN_MAX && f->when[k].field != NULL; k++) {
		/* A condition names an enum read before the row is. */
		assert_int_equal(f->when[k].field->type, MF_FT_ENUM);
		if (!encloses(w, f->when[k].field))
			fail_msg(
			    "%s: its condition on %s is not in an enclosing object",
			    f->key, f->when[k].field->key);
	}
	if (f->type == MF_FT_ENUM && f->names != NULL) {
		int has = 0;

		for (const struct mf_fname *e = f->names; e->name; e++)
			has |= e->when.field != NULL;
		if (has != !!(f->flags & MF_FF_VALUE_WHEN))
			fail_msg("%s: MF_FF_VALUE_WHEN says %d, its names %d",
			    f->key, !!(f->flags & MF_FF_VALUE_WHEN), has);
	}
	if ((f->type == MF_FT_LIST || f->type == MF_FT_MAP) && f->item != NULL)
		check_row(w, f->item);
	if (f->type == MF_FT_LIST && f->item->type == MF_FT_OBJECT)
		check_object(w, f->item);
	if (f->type == MF_FT_OBJECT)
		check_object(w, f);
}

static void
check_object(struct walk *w, const struct mf_field *obj)
{
	int required = 0, first = 0;

	assert_true(obj->nsub <= MF_FIELDS_MAX_MEMBERS);
	assert_true(w->depth < 8);
	w->above[w->depth++] = obj;
	for (size_t i = 0; i < obj->nsub; i++) {
		const struct mf_field *f = &obj->sub[i];

		required |= (f->flags & MF_FF_REQUIRED) != 0;
		first |= (f->flags & MF_FF_FIRST) != 0;
		/* read_first reads a value, never an object. */
		if ((f->flags & MF_FF_FIRST) && f->type == MF_FT_OBJECT)
			fail_msg("%s: %s, an object, is MF_FF_FIRST", obj->key,
			    f->key);
		assert_non_null(f->doc);
		for (size_t k = 0; k < i; k++)
			if (strcmp(obj->sub[k].key, f->key) == 0)
				fail_msg("%s: %s twice", obj->key, f->key);
		assert_ptr_equal(mf_fields_find(obj, f->key), f);
		check_row(w, f);
	}
	if (required != !!(obj->flags & MF_FF_REQUIRES))
		fail_msg("%s: MF_FF_REQUIRES says %d, its members %d", obj->key,
		    !!(obj->flags & MF_FF_REQUIRES), required);
	/* A document (MF_FF_FIRST on an object) has its kind FIRST. */
	if ((obj->flags & MF_FF_FIRST) && !first)
		fail_msg(
		    "%s: MF_FF_FIRST says a document, and no member is first",
		    obj->key);
	w->depth--;
}

static void
test_fields_table_holds(void **state)
{
	struct walk w = { { NULL }, 0, 0, 0 };

	(void)state;
	check_object(&w, &mf_fields_job);
	check_object(&w, &mf_fields_catalog);
	/* The six forms of the catalogue's strings were all tried. */
	assert_true(w.forms >= 6);
}

/* Every manifest field a fix sets (fix.c) is a row. */
static void
test_fields_fix_fields(void **state)
{
	(void)state;
	for (int i = 0; i < MF_FIX_COUNT; i++) {
		const char *field = mf_fix_info((enum mf_fix)i)->field;

		if (mf_fields_at(&mf_fields_job, field) == NULL)
			fail_msg("fix %s sets %s, which no row names",
			    mf_fix_name((enum mf_fix)i), field);
	}
}

static void
test_fields_at(void **state)
{
	(void)state;
	assert_string_equal(mf_fields_at(&mf_fields_job,
	                        "spec.workload.lora.rank")
	                        ->key,
	    "rank");
	assert_string_equal(mf_fields_at(&mf_fields_catalog, "gpus.slurm.gres")
	                        ->key,
	    "gres");
	assert_null(mf_fields_at(&mf_fields_job, "spec.workload.lora.rnak"));
	assert_null(mf_fields_at(&mf_fields_job, "spec.workload.kind.x"));
	assert_ptr_equal(mf_api_document("Job"), &mf_fields_job);
	assert_ptr_equal(mf_api_document("GpuCatalog"), &mf_fields_catalog);
	assert_null(mf_api_document("Pod"));
}

/* The defaults of design 3, 14, 15 and 19, as the rows give them. */
static void
test_fields_workload_defaults(void **state)
{
	struct mf_workload w;

	(void)state;
	memset(&w, 0x5a, sizeof(w));
	mf_workload_defaults(&w);
	assert_int_equal(w.kind, MF_TRAINING);
	assert_int_equal(w.method, MF_FULL);
	assert_int_equal(w.precision, MF_BF16);
	assert_int_equal(w.optimizer, MF_ADAMW);
	assert_int_equal(w.attention, MF_SDPA);
	assert_int_equal(w.checkpointing, MF_CKPT_NONE);
	assert_int_equal(w.seq_len, 0);
	assert_int_equal(w.micro_batch, 1);
	assert_int_equal(w.lora_rank, 16);
	assert_int_equal(w.lora_targets, MF_LORA_ALL_LINEAR);
	assert_int_equal(w.shard_gpus, 1);
	assert_int_equal(w.concurrency, 1);
	assert_int_equal(w.context_len, 0);
	assert_int_equal(w.kv_dtype, MF_KV_BF16);
	assert_int_equal(w.weights_dtype, MF_WD_DEFAULT);
	assert_int_equal(w.group_size, 128);
	assert_int_equal(w.server, MF_SERVER_NONE);
	assert_true(w.gpu_util == 0.9);
	/* vLLM's defaults for the card it runs on (mf_vllm_defaults). */
	assert_int_equal(w.batched_tokens, 0);
	assert_int_equal(w.max_num_seqs, 0);
	assert_int_equal(w.block_size, 16);
	/* 369Mi, 164Mi and 1833Mi: the logs estimate.h cites. */
	assert_int_equal(w.graph_reserve, INT64_C(369) << 20);
	assert_int_equal(w.non_torch, INT64_C(164) << 20);
	assert_int_equal(w.all_reduce, INT64_C(1833) << 20);
	assert_int_equal(w.tensor, 1);
	assert_int_equal(w.pipeline, 1);
	assert_int_equal(w.expert, 1);
	assert_int_equal(w.estimator, MF_EST_PYTORCH);
	/* Design 19: every layer when checkpointing is true, a standard
	 * loss (8 pieces when chunked), nothing offloaded, NF4 blocks of 64
	 * with double quantization, FSDP resharding after forward, no
	 * sequence or loss parallel, vLLM's 256 sequences. */
	assert_int_equal(w.ckpt_every, 1);
	assert_int_equal(w.loss, MF_LOSS_STANDARD);
	assert_int_equal(w.loss_chunks, 8);
	assert_false(w.activation_offload);
	assert_false(w.optimizer_in_backward);
	assert_int_equal(w.qlora_block, 64);
	assert_true(w.qlora_double_quant);
	assert_true(w.reshard_after_forward);
	assert_false(w.sequence_parallel);
	assert_false(w.loss_parallel);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields_table_holds),
		cmocka_unit_test(test_fields_fix_fields),
		cmocka_unit_test(test_fields_at),
		cmocka_unit_test(test_fields_workload_defaults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
