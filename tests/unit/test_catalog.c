/*
 * test_catalog.c: the GPU catalogue (design section 4).
 *
 * Files are found under $MF_TOP (the repository root; "." when unset).
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

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "catalog.h"
#include "base/jw.h"
#include "base/qty.h"
#include "files.h"
#include "msg.h"

#define GB 1000000000LL

/* Four lines of a valid catalogue: the GPU's fields start on line 4. */
#define HDR "apiVersion: memfloor.dev/v1\nkind: GpuCatalog\n"
#define GPU_A \
	"  - name: A\n    memory: 16G\n    hourlyPrice: 0.5\n" \
	"    relativeThroughput: 1\n"

static struct mf_catalog *
parse_ok(const char *text)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;
	enum mf_rc rc;

	rc = mf_cat_parse(text, strlen(text), "t.yaml", &cat, &err);
	if (rc != MF_OK)
		print_message("unexpected: %s\n", MSG(&err));
	assert_int_equal(rc, MF_OK);
	assert_non_null(cat);
	return cat;
}

/* The parse fails with rc, leaves *out alone and reports exactly this. */
static void
expect_fail(const char *text, enum mf_rc want, const char *field, int line,
    const char *message)
{
	struct mf_catalog sentinel, *cat = &sentinel;
	struct mf_error err;
	enum mf_rc rc;

	memset(&err, 0, sizeof(err));
	rc = mf_cat_parse(text, strlen(text), "t.yaml", &cat, &err);
	if (rc == MF_OK)
		mf_cat_unref(cat);
	assert_int_equal(rc, want);
	assert_ptr_equal(cat, &sentinel);
	assert_string_equal(MSG(&err), message);
	assert_string_equal(err.field, field);
	assert_int_equal(err.line, line);
}

/*
 * One-GPU catalogue whose entry has the given "key: value" lines; the
 * first is on line 4, the k-th (from 0) on line 4 + k.
 */
static const char *
gpu_doc(const char *first, ...)
{
	static char buf[4096];
	const char *s = first;
	size_t used;
	va_list ap;

	used = (size_t)snprintf(buf, sizeof(buf), "%sgpus:\n", HDR);
	va_start(ap, first);
	for (int i = 0; s != NULL; i++, s = va_arg(ap, const char *))
		used += (size_t)snprintf(buf + used, sizeof(buf) - used,
		    "%s%s\n", i == 0 ? "  - " : "    ", s);
	va_end(ap);
	assert_true(used < sizeof(buf));
	return buf;
}

/* estimator: pytorch (the default) or post (design 13). */
static void
test_estimator_key(void **state)
{
	struct mf_catalog *cat;

	(void)state;
	cat = parse_ok(HDR "gpus:\n" GPU_A);
	assert_int_equal(cat->estimator, MF_EST_PYTORCH);
	mf_cat_unref(cat);
	cat = parse_ok(HDR "estimator: post\ngpus:\n" GPU_A);
	assert_int_equal(cat->estimator, MF_EST_POST);
	mf_cat_unref(cat);
	cat = parse_ok(HDR "estimator: pytorch\ngpus:\n" GPU_A);
	assert_int_equal(cat->estimator, MF_EST_PYTORCH);
	mf_cat_unref(cat);
	expect_fail(HDR "estimator: gpt\ngpus:\n" GPU_A, MF_EINVAL, "estimator",
	    3, "t.yaml:3: estimator: 'gpt' is not one of pytorch, post");
}

/* --- the shipped catalogue ------------------------------------------ */

static struct mf_catalog *
load_file(const char *file)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;
	char path[512];
	enum mf_rc rc;

	rc = mf_cat_load(top_path(path, sizeof(path), file), &cat, &err);
	if (rc != MF_OK)
		print_message("%s\n", MSG(&err));
	assert_int_equal(rc, MF_OK);
	return cat;
}

static struct mf_catalog *
load_shipped(void)
{
	return load_file("catalog/gpus.yaml");
}

/* The reference post's listing, decimal sizes and all (design 20). */
static struct mf_catalog *
load_post(void)
{
	return load_file("catalog/post-listing.yaml");
}

static void
test_shipped_loads(void **state)
{
	struct mf_catalog *cat = load_shipped();

	(void)state;
	assert_int_equal(cat->ngpus, 12);
	assert_true(cat->headroom == 0.10);
	assert_true(cat->multi_gpu_efficiency == 0.9);
	assert_true(cat->time_factor[MF_FIX_CHECKPOINTING] == 1.35);
	assert_true(cat->time_factor[MF_FIX_ADAM8BIT] == 1.0);
	/* design 18: the shipped default stays product */
	assert_int_equal(cat->k8s_select, MF_K8S_SELECT_PRODUCT);
	assert_int_equal(cat->refs, 1);
	assert_non_null(strstr(cat->source, "gpus.yaml"));
	mf_cat_unref(cat);
}

/*
 * The reference post's cards and prices (design section 4), each with the
 * memory its driver reports (design 20): nvidia-smi's MiB, the source
 * beside each in gpus.yaml.  The post's listing keeps its decimal sizes.
 */
#define MIB (INT64_C(1) << 20)
static void
test_shipped_post_prices(void **state)
{
	static const struct {
		const char *name;
		int64_t memory, listed;
		double price;
	} post[] = {
		{ "RTX-A4000", 16376 * MIB, 16 * GB, 0.173 },
		{ "RTX-3090", 24576 * MIB, 24 * GB, 0.180 },
		{ "RTX-PRO-6000", 97887 * MIB, 96 * GB, 1.35 },
		{ "B200", 183359 * MIB, 180 * GB, 5.50 },
		{ "H200", 143771 * MIB, 141 * GB, -1 },
	};
	struct mf_catalog *cat = load_shipped(), *listing = load_post();
	const struct mf_gpu *g;

	(void)state;
	assert_int_equal(listing->ngpus, 5);
	for (size_t i = 0; i < sizeof(post) / sizeof(post[0]); i++) {
		g = mf_cat_find(cat, post[i].name);
		assert_non_null(g);
		assert_int_equal(g->memory, post[i].memory);
		assert_int_equal(g->memory_format, MF_QTY_BINARY);
		if (post[i].price >= 0)
			assert_true(g->hourly_price == post[i].price);
		g = mf_cat_find(listing, post[i].name);
		assert_non_null(g);
		assert_int_equal(g->memory, post[i].listed);
		if (post[i].price >= 0)
			assert_true(g->hourly_price == post[i].price);
	}
	mf_cat_unref(listing);
	mf_cat_unref(cat);
}

static void
test_shipped_common_cards(void **state)
{
	static const struct {
		const char *name;
		int64_t memory;
	} cards[] = {
		{ "H100", 81559 * MIB },
		{ "A100-40GB", 40960 * MIB },
		{ "A100-80GB", 81920 * MIB },
		{ "L40S", 46068 * MIB },
		{ "L4", 23034 * MIB },
		{ "RTX-4090", 24564 * MIB },
		{ "RTX-A6000", 49140 * MIB },
	};
	struct mf_catalog *cat = load_shipped();
	const struct mf_gpu *g;

	(void)state;
	for (size_t i = 0; i < sizeof(cards) / sizeof(cards[0]); i++) {
		g = mf_cat_find(cat, cards[i].name);
		assert_non_null(g);
		assert_int_equal(g->memory, cards[i].memory);
	}
	/* vLLM's total_gpu_memory of an H100, 79.22 GiB: 81,121 MiB. */
	assert_int_equal(mf_cat_find(cat, "H100")->cuda_memory, 81121 * MIB);
	/* Over PCIe the all-reduce adds 92Mi; NVLink cards the default. */
	assert_int_equal(mf_cat_find(cat, "RTX-4090")->all_reduce, 92 * MIB);
	assert_int_equal(mf_cat_find(cat, "H100")->all_reduce, 1833 * MIB);
	/* H100 SXM is the throughput reference. */
	assert_true(mf_cat_find(cat, "H100")->throughput == 1.0);
	for (size_t i = 0; i < cat->ngpus; i++) {
		g = &cat->gpus[i];
		assert_int_equal(g->nlabels, 1);
		assert_string_equal(g->labels[0].key, "nvidia.com/gpu.product");
		assert_true(g->throughput > 0 && g->throughput < 3);
		assert_int_equal(g->gpus_per_node, 8);
		assert_true(g->max_count >= 1 &&
		    g->max_count <= g->gpus_per_node * g->max_nodes);
	}
	/* The data-centre cards span up to 4 nodes of 8; the rest one. */
	for (size_t i = 0; i < sizeof(cards) / sizeof(cards[0]); i++) {
		g = mf_cat_find(cat, cards[i].name);
		assert_int_equal(g->max_nodes,
		    strcmp(g->name, "H100") == 0 ||
		            strncmp(g->name, "A100-", 5) == 0 ?
		        4 :
		        1);
	}
	assert_int_equal(mf_cat_find(cat, "B200")->max_nodes, 4);
	assert_int_equal(mf_cat_find(cat, "H200")->max_nodes, 4);
	assert_int_equal(mf_cat_find(cat, "RTX-PRO-6000")->max_nodes, 1);
	assert_int_equal(mf_cat_find(cat, "H100")->max_count, 32);
	assert_int_equal(mf_cat_find(cat, "L40S")->max_count, 8);
	assert_int_equal(mf_cat_find(cat, "RTX-4090")->max_count, 4);
	assert_true(cat->inter_node_efficiency == 0.8);
	assert_string_equal(mf_cat_find(cat, "RTX-PRO-6000")->labels[0].value,
	    "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition");
	mf_cat_unref(cat);
}

/* The smallest card that holds need bytes; equal sizes go to the cheaper. */
static const struct mf_gpu *
smallest_fit(const struct mf_catalog *cat, int64_t need)
{
	const struct mf_gpu *best = NULL, *g;

	for (size_t i = 0; i < cat->ngpus; i++) {
		g = &cat->gpus[i];
		if (mf_cat_usable(cat, g) < need)
			continue;
		if (best == NULL || g->memory < best->memory ||
		    (g->memory == best->memory &&
		        g->hourly_price < best->hourly_price))
			best = g;
	}
	return best;
}

/*
 * Design section 5, last row, against the post's listing: the smallest
 * card with 10% headroom for the post's per-GPU figures.  QLoRA 7.9 GB >
 * 0 and <= 16 x 0.9 = 14.4; LoRA 19.9 GB > 14.4 and <= 24 x 0.9 = 21.6;
 * 8-bit Adam 83.5 GB > 24 x 0.9 and <= 96 x 0.9 = 86.4; AdamW +
 * checkpointing 131.7 GB > 141 x 0.9 = 126.9 and <= 180 x 0.9 = 162.
 */
static void
test_post_smallest_fit(void **state)
{
	struct mf_catalog *cat = load_post();

	(void)state;
	assert_string_equal(smallest_fit(cat, 7900000000)->name, "RTX-A4000");
	assert_string_equal(smallest_fit(cat, 19900000000)->name, "RTX-3090");
	assert_string_equal(smallest_fit(cat, 83500000000)->name,
	    "RTX-PRO-6000");
	assert_string_equal(smallest_fit(cat, 131700000000)->name, "B200");
	assert_null(smallest_fit(cat, 162000000001));
	mf_cat_unref(cat);
}

/*
 * The same figures on the shipped catalogue, where each card holds what
 * its driver reports, x 0.9 (mf_cat_usable_at): 16376Mi =
 * 17,171,480,576 bytes, 15,454,332,518 usable; the L4's 23034Mi,
 * 24,152,899,584 and 21,737,609,625, the smallest to hold 19.9 GB (the
 * RTX 3090's 24576Mi is larger); 97887Mi, 92,377,763,020; 143771Mi (the
 * H200), 150,754,820,096 and 135,679,338,086, which now holds the 131.7
 * GB that needed a B200 under the post's decimal sizes; the B200's
 * 183359Mi, 192,265,846,784 and 173,039,262,105 at most.
 */
static void
test_shipped_smallest_fit(void **state)
{
	struct mf_catalog *cat = load_shipped();

	(void)state;
	assert_string_equal(smallest_fit(cat, 7900000000)->name, "RTX-A4000");
	assert_string_equal(smallest_fit(cat, 19900000000)->name, "L4");
	assert_string_equal(smallest_fit(cat, 83500000000)->name,
	    "RTX-PRO-6000");
	assert_string_equal(smallest_fit(cat, 131700000000)->name, "H200");
	assert_string_equal(smallest_fit(cat, 173039262105)->name, "B200");
	assert_null(smallest_fit(cat, 173039262106));
	mf_cat_unref(cat);
}

/* --- good inputs and defaults ---------------------------------------- */

static void
test_parse_defaults(void **state)
{
	struct mf_catalog *cat = parse_ok(HDR "gpus:\n" GPU_A);

	(void)state;
	assert_true(cat->headroom == 0.10);
	assert_true(cat->multi_gpu_efficiency == 0.9);
	assert_true(cat->inter_node_efficiency == 0.8);
	for (int f = 0; f < MF_FIX_COUNT; f++)
		assert_true(cat->time_factor[f] ==
		    (f == MF_FIX_CHECKPOINTING ? 1.35 : 1.0));
	assert_int_equal(cat->ngpus, 1);
	assert_string_equal(cat->gpus[0].name, "A");
	assert_int_equal(cat->gpus[0].memory, 16 * GB);
	assert_int_equal(cat->gpus[0].memory_format, MF_QTY_DECIMAL);
	assert_true(cat->gpus[0].hourly_price == 0.5);
	assert_true(cat->gpus[0].throughput == 1.0);
	/* One node of 8 GPUs: maxCount 8 x 1. */
	assert_int_equal(cat->gpus[0].gpus_per_node, 8);
	assert_int_equal(cat->gpus[0].max_nodes, 1);
	assert_int_equal(cat->gpus[0].max_count, 8);
	assert_int_equal(cat->gpus[0].nlabels, 0);
	assert_null(cat->gpus[0].labels);
	assert_int_equal(cat->gpus[0].line, 4);
	assert_string_equal(cat->source, "t.yaml");
	assert_int_equal(cat->version, 0);
	assert_true(cat->loaded_at > 0);
	mf_cat_unref(cat);
}

/*
 * A card's vllm map (design 19): the memory CUDA reports and what vLLM
 * holds outside PyTorch; without it, 0 (the card's memory) and the
 * defaults of estimate.h, 164Mi and 1833Mi.
 */
static void
test_parse_vllm(void **state)
{
	struct mf_catalog *cat = parse_ok(HDR "gpus:\n" GPU_A);

	(void)state;
	assert_int_equal(cat->gpus[0].cuda_memory, 0);
	assert_int_equal(cat->gpus[0].non_torch, INT64_C(164) << 20);
	assert_int_equal(cat->gpus[0].all_reduce, INT64_C(1833) << 20);
	mf_cat_unref(cat);
	cat = parse_ok(gpu_doc("name: A", "memory: 16G", "hourlyPrice: 1",
	    "relativeThroughput: 1",
	    "vllm: {cudaMemory: 14.5Gi, nonTorchMemory: 100Mi, "
	    "allReduceMemory: 92Mi}",
	    NULL));
	/* 14.5 x 2^30 = 15,569,256,448. */
	assert_int_equal(cat->gpus[0].cuda_memory, INT64_C(15569256448));
	assert_int_equal(cat->gpus[0].non_torch, INT64_C(100) << 20);
	assert_int_equal(cat->gpus[0].all_reduce, INT64_C(92) << 20);
	mf_cat_unref(cat);
	expect_fail(gpu_doc("name: A", "memory: 16G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "vllm:", "  cudaMemory: 17G",
	                NULL),
	    MF_EINVAL, "gpus[0].vllm.cudaMemory", 9,
	    "t.yaml:9: gpus[0].vllm.cudaMemory: is more than the card's memory (16000000000 bytes)");
	expect_fail(gpu_doc("name: A", "memory: 16G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "vllm: {nccl: 1Gi}", NULL),
	    MF_EINVAL, "gpus[0].vllm.nccl", 8,
	    "t.yaml:8: gpus[0].vllm.nccl: unknown field");
}

static void
test_parse_overrides(void **state)
{
	struct mf_catalog *cat = parse_ok(
	    HDR "headroom: 0\n"
	        "multiGpuEfficiency: 1\n"
	        "interNodeEfficiency: 1\n"
	        "timeFactors: {checkpointing: 1.3, sdpa: 0.8, fsdp: 100}\n"
	        "gpus:\n"
	        "  - name: x.Y_z-9\n"
	        "    memory: 88Gi\n"
	        "    hourlyPrice: 0\n"
	        "    relativeThroughput: 1000\n"
	        "    gpusPerNode: 1024\n"
	        "    maxNodes: 1024\n"
	        "    maxCount: 1024\n"
	        "    labels:\n"
	        "      nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n"
	        "      zone: \"\"\n");
	const struct mf_gpu *g = &cat->gpus[0];

	(void)state;
	assert_true(cat->headroom == 0);
	assert_true(cat->multi_gpu_efficiency == 1);
	assert_true(cat->inter_node_efficiency == 1);
	assert_true(cat->time_factor[MF_FIX_CHECKPOINTING] == 1.3);
	assert_true(cat->time_factor[MF_FIX_SDPA] == 0.8);
	assert_true(cat->time_factor[MF_FIX_FSDP] == 100);
	assert_true(cat->time_factor[MF_FIX_LORA] == 1.0);
	assert_string_equal(g->name, "x.Y_z-9");
	/* 88Gi = 88 x 2^30 = 94,489,280,512 bytes (design section 2). */
	assert_int_equal(g->memory, 94489280512LL);
	assert_int_equal(g->memory_format, MF_QTY_BINARY);
	assert_true(g->hourly_price == 0);
	assert_true(g->throughput == 1000);
	assert_int_equal(g->gpus_per_node, 1024);
	assert_int_equal(g->max_nodes, 1024);
	assert_int_equal(g->max_count, 1024);
	assert_int_equal(g->nlabels, 2);
	assert_string_equal(g->labels[0].key, "nvidia.com/gpu.product");
	assert_string_equal(g->labels[0].value, "NVIDIA-H100-80GB-HBM3");
	assert_string_equal(g->labels[1].key, "zone");
	assert_string_equal(g->labels[1].value, "");
	mf_cat_unref(cat);
}

/* part of g's members as form writes them, inside an object; the text
 * is the caller's to free. */
static char *
card_text(const struct mf_gpu *g, enum mf_card_part part, enum mf_jw_form form)
{
	struct mf_buf b;
	struct mf_jw w;

	mf_buf_init(&b, 1 << 16);
	mf_jw_init_form(&w, &b, form);
	mf_jw_open(&w, NULL, '{');
	mf_jw_int(&w, "before", 1);
	mf_cat_card_write(&w, g, part);
	mf_jw_int(&w, "after", 2);
	mf_jw_close(&w, '}');
	assert_int_equal(mf_jw_finish(&w), MF_OK);
	return mf_buf_take(&b);
}

/* A card's memory and labels, as every answer writes them: the JSON made
 * with the catalogue is the text written member by member, in place among
 * other members; YAML is written member by member. */
static void
test_card_members(void **state)
{
	struct mf_catalog *cat =
	    parse_ok(HDR "gpus:\n"
	                 "  - name: A\n"
	                 "    memory: 88Gi\n"
	                 "    hourlyPrice: 1\n"
	                 "    relativeThroughput: 1\n"
	                 "    labels:\n"
	                 "      nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n"
	                 "      zone: \"\"\n"
	                 "  - name: B\n"
	                 "    memory: 24G\n"
	                 "    hourlyPrice: 1\n"
	                 "    relativeThroughput: 1\n");
	static const char *const json[2][MF_CARD_PARTS] = {
		{ "{\"before\":1,\"memory\":\"88Gi\",\"memoryBytes\":94489280512,"
		  "\"after\":2}\n",
		    "{\"before\":1,\"labels\":{\"nvidia.com/gpu.product\":"
		    "\"NVIDIA-H100-80GB-HBM3\",\"zone\":\"\"},\"after\":2}\n" },
		/* 24G = 24 x 10^9 bytes (design section 2). */
		{ "{\"before\":1,\"memory\":\"24G\",\"memoryBytes\":24000000000,"
		  "\"after\":2}\n",
		    "{\"before\":1,\"labels\":{},\"after\":2}\n" },
	};
	struct mf_catalog *shipped = load_shipped();
	char *t;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		for (int k = 0; k < MF_CARD_PARTS; k++) {
			assert_non_null(cat->gpus[i].json[k]);
			t = card_text(&cat->gpus[i], (enum mf_card_part)k,
			    MF_JW_JSON);
			assert_string_equal(t, json[i][k]);
			free(t);
		}
	}
	t = card_text(&cat->gpus[0], MF_CARD_LABELS, MF_JW_YAML);
	assert_string_equal(t,
	    "---\nbefore: 1\nlabels:\n"
	    "  nvidia.com/gpu.product: \"NVIDIA-H100-80GB-HBM3\"\n"
	    "  zone: \"\"\nafter: 2\n");
	free(t);
	/* Every shipped card's made text is its member-by-member text. */
	for (size_t i = 0; i < shipped->ngpus; i++) {
		struct mf_gpu bare = shipped->gpus[i];

		memset(bare.json, 0, sizeof(bare.json));
		for (int k = 0; k < MF_CARD_PARTS; k++) {
			char *made = card_text(&shipped->gpus[i],
			    (enum mf_card_part)k, MF_JW_JSON);

			t = card_text(&bare, (enum mf_card_part)k, MF_JW_JSON);
			assert_string_equal(made, t);
			free(made);
			free(t);
		}
	}
	mf_cat_unref(shipped);
	mf_cat_unref(cat);
}

static void
test_parse_boundaries(void **state)
{
	struct mf_catalog *cat;

	(void)state;
	cat = parse_ok(HDR "headroom: 0.89\nmultiGpuEfficiency: 0.01\n"
	                   "gpus:\n" GPU_A);
	assert_true(cat->headroom == 0.89);
	mf_cat_unref(cat);
	cat = parse_ok(gpu_doc("name: "
	                       "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
	                       "VWXYZ0123456789-",
	    "memory: 1Gi", "hourlyPrice: 1000000", "relativeThroughput: 0.001",
	    "maxCount: 1", NULL));
	assert_int_equal(strlen(cat->gpus[0].name), 63);
	/* 1Gi, the least a card may hold (design 20, issue 27). */
	assert_int_equal(cat->gpus[0].memory, INT64_C(1) << 30);
	assert_true(cat->gpus[0].hourly_price == 1e6);
	assert_int_equal(cat->gpus[0].max_count, 1);
	mf_cat_unref(cat);
}

static void
test_parse_json(void **state)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;
	char path[512];

	(void)state;
	assert_int_equal(mf_cat_load(top_path(path, sizeof(path),
	                                 "tests/data/catalog/good-full.json"),
	                     &cat, &err),
	    MF_OK);
	assert_int_equal(cat->ngpus, 2);
	assert_true(cat->headroom == 0);
	assert_true(cat->time_factor[MF_FIX_SDPA] == 0.8);
	assert_true(cat->inter_node_efficiency == 0.7);
	assert_int_equal(cat->gpus[0].gpus_per_node, 8);
	assert_int_equal(cat->gpus[0].max_nodes, 128);
	assert_int_equal(cat->gpus[0].max_count, 1024);
	/* The second card takes the defaults: one node of 8. */
	assert_int_equal(cat->gpus[1].gpus_per_node, 8);
	assert_int_equal(cat->gpus[1].max_nodes, 1);
	assert_int_equal(cat->gpus[1].max_count, 8);
	assert_int_equal(cat->gpus[0].nlabels, 2);
	assert_int_equal(cat->gpus[1].memory, 2 * GB);
	mf_cat_unref(cat);
}

/* A JSON error has no line: the message is "NAME: FIELD: problem". */
static void
test_parse_json_error(void **state)
{
	(void)state;
	expect_fail("{\"apiVersion\": \"memfloor.dev/v1\", \"kind\": "
	            "\"GpuCatalog\", \"gpus\": [{\"name\": \"A\", \"memory\": "
	            "\"1x\", "
	            "\"hourlyPrice\": 1, \"relativeThroughput\": 1}]}",
	    MF_EINVAL, "gpus[0].memory", 0,
	    "t.yaml: gpus[0].memory: '1x' is not a quantity");
}

static void
test_parse_minimal_fixture(void **state)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;
	char path[512];

	(void)state;
	assert_int_equal(mf_cat_load(top_path(path, sizeof(path),
	                                 "tests/data/catalog/"
	                                 "good-minimal.yaml"),
	                     &cat, &err),
	    MF_OK);
	/* 24Gi = 24 x 1,073,741,824 = 25,769,803,776. */
	assert_int_equal(cat->gpus[0].memory, 25769803776LL);
	assert_int_equal(cat->gpus[0].line, 5);
	assert_string_equal(cat->source, path);
	mf_cat_unref(cat);
}

/* 10,000 entries parse, keep their order and lines. */
static void
test_parse_ten_thousand(void **state)
{
	const size_t n = 10000;
	size_t size = 100 + n * 100, used;
	struct mf_catalog *cat = NULL;
	struct mf_error err;
	char *buf = malloc(size);

	(void)state;
	assert_non_null(buf);
	used = (size_t)snprintf(buf, size, "%sgpus:\n", HDR);
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(buf + used, size - used,
		    "  - {name: g%05zu, memory: %zuG, hourlyPrice: 1.5, "
		    "relativeThroughput: 0.5}\n",
		    i, i + 2);
	assert_true(used < size);
	assert_int_equal(mf_cat_parse(buf, used, "big.yaml", &cat, &err),
	    MF_OK);
	assert_int_equal(cat->ngpus, n);
	assert_string_equal(cat->gpus[9999].name, "g09999");
	assert_int_equal(cat->gpus[9999].memory, 10001 * GB);
	/* Header: 3 lines, so entry i is on line 4 + i. */
	assert_int_equal(cat->gpus[9999].line, 10003);
	assert_non_null(mf_cat_find(cat, "g05000"));
	mf_cat_unref(cat);

	/* A repeated name at the very end is still found, and where. */
	used += (size_t)snprintf(buf + used, size - used,
	    "  - {name: g00007, memory: 2G, hourlyPrice: 1, "
	    "relativeThroughput: 1}\n");
	assert_int_equal(mf_cat_parse(buf, used, "big.yaml", &cat, &err),
	    MF_EINVAL);
	assert_string_equal(err.field, "gpus[10000].name");
	assert_int_equal(err.line, 10004);
	assert_string_equal(MSG(&err),
	    "big.yaml:10004: gpus[10000].name: "
	    "'g00007' is already the name of gpus[7] (line 11)");
	free(buf);
}

/* More entries than the caps allow is refused as too big, not a crash. */
static void
test_parse_too_many_gpus(void **state)
{
	const size_t n = MF_CAT_MAX_GPUS + 1;
	size_t size = 100 + n * 100, used;
	struct mf_catalog *cat = NULL;
	struct mf_error err;
	char *buf = malloc(size);

	(void)state;
	assert_non_null(buf);
	used = (size_t)snprintf(buf, size, "%sgpus:\n", HDR);
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(buf + used, size - used,
		    "- {name: g%zu, memory: 1Gi, hourlyPrice: 0, "
		    "relativeThroughput: 1}\n",
		    i);
	assert_true(used < size);
	assert_int_equal(mf_cat_parse(buf, used, "huge.yaml", &cat, &err),
	    MF_ETOOBIG);
	assert_null(cat);
	assert_int_equal(strncmp(MSG(&err), "huge.yaml:", 10), 0);
	free(buf);
}

/* --- the top level ---------------------------------------------------- */

static void
test_top_api_version(void **state)
{
	(void)state;
	expect_fail("kind: GpuCatalog\ngpus:\n" GPU_A, MF_EINVAL, "apiVersion",
	    1, "t.yaml:1: apiVersion: is required ('memfloor.dev/v1')");
	expect_fail("apiVersion: memfloor.dev/v2\nkind: "
	            "GpuCatalog\ngpus:\n" GPU_A,
	    MF_EINVAL, "apiVersion", 1,
	    "t.yaml:1: apiVersion: "
	    "'memfloor.dev/v2' is not 'memfloor.dev/v1'");
	expect_fail("apiVersion: 1\nkind: GpuCatalog\ngpus:\n" GPU_A, MF_EINVAL,
	    "apiVersion", 1,
	    "t.yaml:1: apiVersion: must be a string, not a number");
}

static void
test_top_kind(void **state)
{
	(void)state;
	expect_fail("apiVersion: memfloor.dev/v1\nkind: Job\ngpus:\n" GPU_A,
	    MF_EINVAL, "kind", 2,
	    "t.yaml:2: kind: 'Job' is the kind of a memfloor Job manifest; this takes kind GpuCatalog");
	expect_fail("apiVersion: memfloor.dev/v1\ngpus:\n" GPU_A, MF_EINVAL,
	    "kind", 1, "t.yaml:1: kind: is required ('GpuCatalog')");
}

static void
test_top_unknown_key(void **state)
{
	(void)state;
	expect_fail(HDR "headrom: 0.2\ngpus:\n" GPU_A, MF_EINVAL, "headrom", 3,
	    "t.yaml:3: headrom: unknown field");
}

static void
test_top_not_a_mapping(void **state)
{
	(void)state;
	expect_fail("", MF_EINVAL, "", 1,
	    "t.yaml:1: the document is empty: a memfloor GPU catalogue "
	    "(apiVersion memfloor.dev/v1, kind GpuCatalog) is a mapping");
	expect_fail("null\n", MF_EINVAL, "", 1,
	    "t.yaml:1: a memfloor GPU catalogue must be a mapping, not null");
	expect_fail("\n\n- a\n- b\n", MF_EINVAL, "", 3,
	    "t.yaml:3: a memfloor GPU catalogue must be a mapping, not a list");
}

static void
test_top_headroom(void **state)
{
	(void)state;
	expect_fail(HDR "headroom: 0.9\ngpus:\n" GPU_A, MF_EINVAL, "headroom",
	    3, "t.yaml:3: headroom: 0.9 is out of range [0, 0.9)");
	expect_fail(HDR "headroom: -0.1\ngpus:\n" GPU_A, MF_EINVAL, "headroom",
	    3, "t.yaml:3: headroom: -0.1 is out of range [0, 0.9)");
	expect_fail(HDR "headroom: .nan\ngpus:\n" GPU_A, MF_EINVAL, "headroom",
	    3, "t.yaml:3: headroom: '.nan' is not a finite number");
	expect_fail(HDR "headroom: '0.1'\ngpus:\n" GPU_A, MF_EINVAL, "headroom",
	    3, "t.yaml:3: headroom: must be a number, not a string");
}

static void
test_top_efficiency(void **state)
{
	(void)state;
	expect_fail(HDR "multiGpuEfficiency: 0\ngpus:\n" GPU_A, MF_EINVAL,
	    "multiGpuEfficiency", 3,
	    "t.yaml:3: multiGpuEfficiency: 0 is out of range (0, 1]");
	expect_fail(HDR "multiGpuEfficiency: 1.01\ngpus:\n" GPU_A, MF_EINVAL,
	    "multiGpuEfficiency", 3,
	    "t.yaml:3: multiGpuEfficiency: 1.01 is out of range (0, 1]");
}

static void
test_top_inter_node_efficiency(void **state)
{
	struct mf_catalog *cat;

	(void)state;
	cat = parse_ok(HDR "interNodeEfficiency: 0.01\ngpus:\n" GPU_A);
	assert_true(cat->inter_node_efficiency == 0.01);
	mf_cat_unref(cat);
	expect_fail(HDR "interNodeEfficiency: 0\ngpus:\n" GPU_A, MF_EINVAL,
	    "interNodeEfficiency", 3,
	    "t.yaml:3: interNodeEfficiency: 0 is out of range (0, 1]");
	expect_fail(HDR "interNodeEfficiency: 1.5\ngpus:\n" GPU_A, MF_EINVAL,
	    "interNodeEfficiency", 3,
	    "t.yaml:3: interNodeEfficiency: 1.5 is out of range (0, 1]");
	expect_fail(HDR "interNodeEficiency: 0.8\ngpus:\n" GPU_A, MF_EINVAL,
	    "interNodeEficiency", 3,
	    "t.yaml:3: interNodeEficiency: unknown field");
}

static void
test_top_time_factors(void **state)
{
	(void)state;
	expect_fail(HDR
	    "timeFactors:\n  lora: 1\n  gradcheck: 1.2\ngpus:\n" GPU_A,
	    MF_EINVAL, "timeFactors.gradcheck", 5,
	    "t.yaml:5: timeFactors.gradcheck: is not a fix (sdpa, microbatch, "
	    "autocast, checkpointing, adam8bit, lora, qlora, fsdp, kvfp8, int8, int4, tensor, count, context, concurrency)");
	expect_fail(HDR "timeFactors: {checkpointing: 0}\ngpus:\n" GPU_A,
	    MF_EINVAL, "timeFactors.checkpointing", 3,
	    "t.yaml:3: timeFactors.checkpointing: 0 is out of range (0, 100]");
	expect_fail(HDR "timeFactors: {fsdp: 100.5}\ngpus:\n" GPU_A, MF_EINVAL,
	    "timeFactors.fsdp", 3,
	    "t.yaml:3: timeFactors.fsdp: 100.5 is out of range (0, 100]");
	expect_fail(HDR "timeFactors: {fsdp: fast}\ngpus:\n" GPU_A, MF_EINVAL,
	    "timeFactors.fsdp", 3,
	    "t.yaml:3: timeFactors.fsdp: must be a number, not a string");
	expect_fail(HDR "timeFactors: [checkpointing]\ngpus:\n" GPU_A,
	    MF_EINVAL, "timeFactors", 3,
	    "t.yaml:3: timeFactors: must be a mapping, not a list");
}

static void
test_top_gpus(void **state)
{
	(void)state;
	expect_fail(HDR, MF_EINVAL, "gpus", 1, "t.yaml:1: gpus: is required");
	expect_fail(HDR "gpus: []\n", MF_EINVAL, "gpus", 3,
	    "t.yaml:3: gpus: at least one GPU is required");
	expect_fail(HDR "gpus:\n", MF_EINVAL, "gpus", 3,
	    "t.yaml:3: gpus: must be a list, not null");
	expect_fail(HDR "gpus: {A: 1}\n", MF_EINVAL, "gpus", 3,
	    "t.yaml:3: gpus: must be a list, not a mapping");
	expect_fail(HDR "gpus:\n  - H100\n", MF_EINVAL, "gpus[0]", 4,
	    "t.yaml:4: gpus[0]: must be a mapping, not a string");
}

/* kubernetes.select: product unless memory is written (design 18). */
static void
test_top_kubernetes(void **state)
{
	struct mf_catalog *cat;

	(void)state;
	cat = parse_ok(HDR "gpus:\n" GPU_A);
	assert_int_equal(cat->k8s_select, MF_K8S_SELECT_PRODUCT);
	mf_cat_unref(cat);
	cat = parse_ok(HDR "kubernetes: {select: memory}\ngpus:\n" GPU_A);
	assert_int_equal(cat->k8s_select, MF_K8S_SELECT_MEMORY);
	mf_cat_unref(cat);
	cat = parse_ok(HDR "kubernetes:\n  select: product\ngpus:\n" GPU_A);
	assert_int_equal(cat->k8s_select, MF_K8S_SELECT_PRODUCT);
	mf_cat_unref(cat);
	cat = parse_ok(HDR "kubernetes: {}\ngpus:\n" GPU_A);
	assert_int_equal(cat->k8s_select, MF_K8S_SELECT_PRODUCT);
	mf_cat_unref(cat);
	expect_fail(HDR "kubernetes: {select: memroy}\ngpus:\n" GPU_A,
	    MF_EINVAL, "kubernetes.select", 3,
	    "t.yaml:3: kubernetes.select: 'memroy' is not one of product, "
	    "memory");
	expect_fail(HDR "kubernetes:\n  selector: memory\ngpus:\n" GPU_A,
	    MF_EINVAL, "kubernetes.selector", 4,
	    "t.yaml:4: kubernetes.selector: unknown field");
	expect_fail(HDR "kubernetes: memory\ngpus:\n" GPU_A, MF_EINVAL,
	    "kubernetes", 3,
	    "t.yaml:3: kubernetes: must be a mapping, not a string");
	expect_fail(HDR "kubernetes: {select: 1}\ngpus:\n" GPU_A, MF_EINVAL,
	    "kubernetes.select", 3,
	    "t.yaml:3: kubernetes.select: must be one of product, memory, not a number");
}

/* --- one GPU entry --------------------------------------------------- */

static void
test_gpu_unknown_key(void **state)
{
	(void)state;
	expect_fail(gpu_doc("name: A", "memory: 16G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "memroy: 32G", NULL),
	    MF_EINVAL, "gpus[0].memroy", 8,
	    "t.yaml:8: gpus[0].memroy: unknown field");
}

static void
test_gpu_name(void **state)
{
	(void)state;
	expect_fail(gpu_doc("memory: 16G", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].name", 4,
	    "t.yaml:4: gpus[0].name: is required");
	expect_fail(gpu_doc("memory: 16G", "name: ''", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].name", 5,
	    "t.yaml:5: gpus[0].name: '' is not a GPU name (1 to 63 characters "
	    "of [A-Za-z0-9._-])");
	expect_fail(gpu_doc("name: H100 SXM", "memory: 16G", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].name", 4,
	    "t.yaml:4: gpus[0].name: 'H100 SXM' is not a GPU name (1 to 63 "
	    "characters of [A-Za-z0-9._-])");
	expect_fail(gpu_doc("name: "
	                    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX"
	                    "YZ0123456789-_",
	                "memory: 16G", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].name", 4,
	    "t.yaml:4: gpus[0].name: "
	    "'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_'"
	    " is not a GPU name (1 to 63 characters of [A-Za-z0-9._-])");
	expect_fail(gpu_doc("name: 4090", "memory: 24G", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].name", 4,
	    "t.yaml:4: gpus[0].name: must be a string, not a number");
}

/*
 * A card's memory below 1Gi is a unit left out (issue 27): 80 is 80 bytes,
 * not 80Gi, and would be served as 0.0 GB.  80GB is told how memory is
 * written.
 */
static void
test_gpu_memory_meant(void **state)
{
	(void)state;
	expect_fail(gpu_doc("name: A", "memory: 80", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].memory", 5,
	    "t.yaml:5: gpus[0].memory: '80' is 80 bytes, less than 1Gi: a "
	    "GPU's memory is written with its unit, e.g. 80Gi");
	/* 1023Mi = 1,072,693,248 bytes, a MiB short of 1Gi. */
	expect_fail(gpu_doc("name: A", "memory: 1023Mi", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].memory", 5,
	    "t.yaml:5: gpus[0].memory: '1023Mi' is 1072693248 bytes, less "
	    "than 1Gi: a GPU's memory is written with its unit, e.g. 80Gi");
	expect_fail(gpu_doc("name: A", "memory: 80GB", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].memory", 5,
	    "t.yaml:5: gpus[0].memory: '80GB' is not a quantity: memory is "
	    "written 80G (10^9 bytes) or 80Gi (2^30 bytes)");
}

/* A Job manifest given as a catalogue is told its kind first, not that
 * its spec is an unknown field. */
static void
test_top_kind_first(void **state)
{
	(void)state;
	expect_fail("apiVersion: memfloor.dev/v1\nmetadata: {name: j}\n"
	            "spec: {}\nkind: Job\n",
	    MF_EINVAL, "kind", 4,
	    "t.yaml:4: kind: 'Job' is the kind of a memfloor Job manifest; "
	    "this takes kind GpuCatalog");
	expect_fail("apiVersion: memfloor.dev/v1\nheadroom: 0.1\n", MF_EINVAL,
	    "kind", 1, "t.yaml:1: kind: is required ('GpuCatalog')");
}

static void
test_gpu_duplicate_name(void **state)
{
	(void)state;
	expect_fail(HDR
	    "gpus:\n" GPU_A
	    "  - {name: B, memory: 2G, hourlyPrice: 1, relativeThroughput: 1}\n"
	    "  - {name: A, memory: 2G, hourlyPrice: 1, relativeThroughput: 1}\n"
	    "  - {name: B, memory: 3G, hourlyPrice: 1, relativeThroughput: 1}"
	    "\n",
	    MF_EINVAL, "gpus[2].name", 9,
	    "t.yaml:9: gpus[2].name: 'A' is "
	    "already the name of gpus[0] (line 4)");
}

static void
test_gpu_memory(void **state)
{
	(void)state;
	expect_fail(gpu_doc("name: A", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].memory", 4,
	    "t.yaml:4: gpus[0].memory: is required");
	expect_fail(gpu_doc("name: A", "memory: 96Gx", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].memory", 5,
	    "t.yaml:5: gpus[0].memory: '96Gx' is not a quantity");
	expect_fail(gpu_doc("name: A", "memory: 0", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].memory", 5,
	    "t.yaml:5: gpus[0].memory: '0' is not a positive number of bytes");
	expect_fail(gpu_doc("name: A", "memory: -16G", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].memory", 5,
	    "t.yaml:5: gpus[0].memory: '-16G' is not a positive number of "
	    "bytes");
	expect_fail(gpu_doc("name: A", "memory: 1.5", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].memory", 5,
	    "t.yaml:5: gpus[0].memory: '1.5' is not a whole number of bytes");
	expect_fail(gpu_doc("name: A", "memory: 100m", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].memory", 5,
	    "t.yaml:5: gpus[0].memory: '100m' uses a sub-unit suffix (m, u or "
	    "n), not a byte size");
	expect_fail(gpu_doc("name: A", "memory: [16G]", "hourlyPrice: 1",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].memory", 5,
	    "t.yaml:5: gpus[0].memory: must be a quantity such as 88Gi, not a "
	    "list");
}

static void
test_gpu_price(void **state)
{
	(void)state;
	expect_fail(gpu_doc("name: A", "memory: 2G", "relativeThroughput: 1",
	                NULL),
	    MF_EINVAL, "gpus[0].hourlyPrice", 4,
	    "t.yaml:4: gpus[0].hourlyPrice: is required");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: -0.01",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].hourlyPrice", 6,
	    "t.yaml:6: gpus[0].hourlyPrice: -0.01 is out of range "
	    "[0, 1000000]");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1e7",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].hourlyPrice", 6,
	    "t.yaml:6: gpus[0].hourlyPrice: 1e7 is out of range "
	    "[0, 1000000]");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: .inf",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].hourlyPrice", 6,
	    "t.yaml:6: gpus[0].hourlyPrice: '.inf' is not a finite number");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: $1.35",
	                "relativeThroughput: 1", NULL),
	    MF_EINVAL, "gpus[0].hourlyPrice", 6,
	    "t.yaml:6: gpus[0].hourlyPrice: must be a number, not a string");
}

/*
 * Design 21: a card gives its figures or relativeThroughput.  A modelled
 * card's throughput (what a job without a model is timed by) is its
 * achieved bf16 FLOPS over the reference's: Ada's share of 0.776 of
 * 362.05T over Hopper's 0.803 of 989.4T, 280.9508 / 794.4882 = 0.3536249.
 */
#define H100_FIGURES \
	"  - name: H100\n    memory: 80Gi\n    hourlyPrice: 3\n" \
	"    architecture: hopper\n    flops: {bf16: 989.4T}\n" \
	"    memoryBandwidth: 3.35T\n"
#define H100_CARD \
	H100_FIGURES "    interconnect: {kind: nvswitch, bandwidth: 450G}\n"
#define L40S_CARD \
	"  - name: L40S\n    memory: 48G\n    hourlyPrice: 1\n" \
	"    architecture: ada\n    flops: {bf16: 362.05T, fp8: 733T}\n" \
	"    memoryBandwidth: 864G\n" \
	"    interconnect: {kind: pcie, bandwidth: 25G}\n"

static void
test_gpu_speed(void **state)
{
	static const char named[] = HDR "# hours are measured on\n"
	                                "reference: ZZ\ngpus:\n" GPU_A;
	struct mf_catalog *cat;
	const struct mf_gpu *g;
	struct mf_error err;

	(void)state;
	cat = parse_ok(HDR "gpus:\n" H100_CARD L40S_CARD GPU_A);
	assert_ptr_equal(cat->ref, &cat->gpus[0]);
	g = mf_cat_find(cat, "L40S");
	assert_non_null(g);
	assert_false(g->throughput_given);
	assert_true(fabs(g->throughput - 0.3536249) < 1e-6);
	assert_int_equal(g->speed.arch, MF_ARCH_ADA);
	assert_true(g->speed.flops[MF_DT_FP8] == INT64_C(733000000000000));
	assert_true(g->speed.bandwidth == INT64_C(864000000000));
	assert_int_equal(g->speed.link, MF_LINK_PCIE);
	assert_true(g->speed.link_bw == INT64_C(25000000000));
	/* A: relativeThroughput, which overrides the model for it. */
	assert_true(mf_cat_find(cat, "A")->throughput_given);
	mf_cat_unref(cat);
	/* Figures without a reference card to convert referenceHours by:
	 * the default's error is at the cards' list, a named one's at its
	 * name (line 4, column 12). */
	expect_fail(HDR "gpus:\n" L40S_CARD, MF_EINVAL, "reference", 3,
	    "t.yaml:3: reference: no GPU named 'H100' in the catalogue: name the card referenceHours are measured on");
	expect_fail(named, MF_EINVAL, "reference", 4,
	    "t.yaml:4: reference: no GPU named 'ZZ' in the catalogue: name the card referenceHours are measured on");
	memset(&err, 0, sizeof(err));
	assert_int_equal(mf_cat_parse(named, strlen(named), "t.yaml", &cat,
	                     &err),
	    MF_EINVAL);
	assert_int_equal(err.column, 12);
	/* A reference card that is not modelled. */
	expect_fail(HDR "reference: A\ngpus:\n" GPU_A L40S_CARD, MF_EINVAL,
	    "reference", 5,
	    "t.yaml:5: reference: 'A' gives no flops.bf16, memoryBandwidth and architecture: the modelled cards' hours are converted through it");
	/* Figures without an architecture have no achieved shares. */
	expect_fail(gpu_doc("name: B", "memory: 2G", "hourlyPrice: 1",
	                "flops: {bf16: 100T}", "memoryBandwidth: 1T", NULL),
	    MF_EINVAL, "gpus[0].relativeThroughput", 4,
	    "t.yaml:4: gpus[0].relativeThroughput: is required unless the card gives flops.bf16, memoryBandwidth and architecture (design 21)");
}

/*
 * Design 21: a card timed by its figures that may take more GPUs than a
 * node holds (maxNodes 2: maxCount 2 x 8 = 16 > 8) gives network; so does
 * the reference card where any card may, every job being timed on it at
 * its own count.  A card timed through relativeThroughput needs none, nor
 * one whose maxCount stays within a node.  Likewise a card that may take
 * more than one GPU of a node gives interconnect.
 */
#define NET "    network: {bandwidth: 50G}\n"
static void
test_gpu_network(void **state)
{
	struct mf_catalog *cat;

	(void)state;
	expect_fail(HDR "gpus:\n" H100_CARD "    maxNodes: 2\n", MF_EINVAL,
	    "gpus[0].network", 4,
	    "t.yaml:4: gpus[0].network: is required of a card timed by its figures that may span nodes (maxCount 16, gpusPerNode 8): rings between nodes run at network.bandwidth (design 21)");
	cat = parse_ok(HDR "gpus:\n" H100_CARD "    maxNodes: 2\n" NET);
	assert_true(cat->gpus[0].speed.net_bw == INT64_C(50000000000));
	mf_cat_unref(cat);
	/* Within a node: nothing crosses the network. */
	cat = parse_ok(
	    HDR "gpus:\n" H100_CARD "    maxNodes: 2\n    maxCount: 8\n");
	assert_true(cat->gpus[0].speed.net_bw == 0);
	mf_cat_unref(cat);
	/* Another card timed by its figures, the L40S from line 12. */
	expect_fail(HDR "gpus:\n" H100_CARD NET L40S_CARD "    maxNodes: 2\n",
	    MF_EINVAL, "gpus[1].network", 12,
	    "t.yaml:12: gpus[1].network: is required of a card timed by its figures that may span nodes (maxCount 16, gpusPerNode 8): rings between nodes run at network.bandwidth (design 21)");
	/* A card timed through relativeThroughput on 4 nodes, with figures or
	 * without: the reference card is timed on 32 GPUs for it. */
	expect_fail(HDR "gpus:\n" H100_CARD GPU_A "    maxNodes: 4\n",
	    MF_EINVAL, "gpus[0].network", 4,
	    "t.yaml:4: gpus[0].network: is required of the reference card when a job may take more GPUs than its node holds ('A' takes up to 32, gpusPerNode 8): jobs are timed on it at their own count (design 21)");
	cat = parse_ok(HDR "gpus:\n" H100_CARD NET GPU_A "    maxNodes: 4\n"
	                   "    architecture: ada\n"
	                   "    flops: {bf16: 362.05T}\n"
	                   "    memoryBandwidth: 864G\n");
	assert_true(cat->gpus[1].throughput_given);
	assert_true(cat->gpus[1].speed.net_bw == 0);
	assert_false(mf_cat_own_speed(cat, &cat->gpus[1]));
	assert_true(mf_cat_own_speed(cat, &cat->gpus[0]));
	mf_cat_unref(cat);
	/* No modelled reference card: design 6 times every card. */
	cat = parse_ok(HDR "gpus:\n" GPU_A "    maxNodes: 4\n");
	assert_false(mf_cat_own_speed(cat, &cat->gpus[0]));
	mf_cat_unref(cat);
	/* Several GPUs of a node: their collectives cross the interconnect,
	 * which such a card gives; one GPU a node crosses none. */
	expect_fail(HDR "gpus:\n" H100_FIGURES, MF_EINVAL,
	    "gpus[0].interconnect", 4,
	    "t.yaml:4: gpus[0].interconnect: is required of a card timed by its figures that may take more than one GPU of a node ('H100' takes up to 8, gpusPerNode 8): collectives within a node run at interconnect.bandwidth (design 21)");
	cat = parse_ok(HDR "gpus:\n" H100_FIGURES "    maxCount: 1\n");
	mf_cat_unref(cat);
	cat = parse_ok(HDR "gpus:\n" H100_FIGURES
	                   "    gpusPerNode: 1\n    maxNodes: 2\n" NET);
	assert_true(cat->gpus[0].speed.link_bw == 0);
	mf_cat_unref(cat);
}

/* observations: (design 23), with its defaults. */
static void
test_observations_key(void **state)
{
	struct mf_catalog *cat;

	(void)state;
	cat = parse_ok(HDR "gpus:\n" GPU_A);
	assert_true(cat->obs_margin == 0.05);
	assert_true(cat->obs_max_lowering == 0.10);
	assert_int_equal(cat->obs_refresh_seconds, 10);
	assert_int_equal(cat->obs_finish_after, 300);
	mf_cat_unref(cat);
	cat =
	    parse_ok(HDR "observations: {margin: 0.02, maxLowering: 0.2, "
	                 "refreshSeconds: 60, finishAfter: 20}\ngpus:\n" GPU_A);
	assert_true(cat->obs_margin == 0.02);
	assert_true(cat->obs_max_lowering == 0.2);
	assert_int_equal(cat->obs_refresh_seconds, 60);
	assert_int_equal(cat->obs_finish_after, 20);
	mf_cat_unref(cat);
	cat = parse_ok(
	    HDR "gpus:\n" GPU_A "    dcgmModelName: NVIDIA Custom 16GB\n");
	assert_string_equal(cat->gpus[0].dcgm_model, "NVIDIA Custom 16GB");
	mf_cat_unref(cat);
	cat = parse_ok(HDR "gpus:\n" GPU_A);
	assert_null(cat->gpus[0].dcgm_model);
	mf_cat_unref(cat);
	expect_fail(HDR "observations: {finishAfter: 0}\ngpus:\n" GPU_A,
	    MF_EINVAL, "observations.finishAfter", 3,
	    "t.yaml:3: observations.finishAfter: 0 is out of range [1, 604800]");
	expect_fail(HDR "observations: {refreshSeconds: 0}\ngpus:\n" GPU_A,
	    MF_EINVAL, "observations.refreshSeconds", 3,
	    "t.yaml:3: observations.refreshSeconds: 0 is out of range [1, 86400]");
}

static void
test_gpu_throughput(void **state)
{
	(void)state;
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1", NULL),
	    MF_EINVAL, "gpus[0].relativeThroughput", 4,
	    "t.yaml:4: "
	    "gpus[0].relativeThroughput: is required unless the card gives flops.bf16, memoryBandwidth and architecture (design 21)");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 0", NULL),
	    MF_EINVAL, "gpus[0].relativeThroughput", 7,
	    "t.yaml:7: "
	    "gpus[0].relativeThroughput: 0 is out of range (0, 1000]");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1000.5", NULL),
	    MF_EINVAL, "gpus[0].relativeThroughput", 7,
	    "t.yaml:7: "
	    "gpus[0].relativeThroughput: 1000.5 is out of range (0, 1000]");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: -.inf", NULL),
	    MF_EINVAL, "gpus[0].relativeThroughput", 7,
	    "t.yaml:7: "
	    "gpus[0].relativeThroughput: '-.inf' is not a finite number");
}

static void
test_gpu_max_count(void **state)
{
	(void)state;
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "maxCount: 0", NULL),
	    MF_EINVAL, "gpus[0].maxCount", 8,
	    "t.yaml:8: gpus[0].maxCount: 0 is out of range [1, 1024]");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "maxCount: 1025", NULL),
	    MF_EINVAL, "gpus[0].maxCount", 8,
	    "t.yaml:8: gpus[0].maxCount: 1025 is out of range [1, 1024]");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "maxCount: 2.5", NULL),
	    MF_EINVAL, "gpus[0].maxCount", 8,
	    "t.yaml:8: gpus[0].maxCount: '2.5' is not a whole number");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "maxCount: eight", NULL),
	    MF_EINVAL, "gpus[0].maxCount", 8,
	    "t.yaml:8: gpus[0].maxCount: must be an integer, not a string");
}

/*
 * maxCount defaults to gpusPerNode x maxNodes: 4 x 3 = 12; 64 x 64 = 4096
 * is capped at 1024.  An explicit maxCount may be less than the nodes
 * hold (5 of 4 x 3), never more.
 */
static void
test_gpu_nodes(void **state)
{
	struct mf_catalog *cat;

	(void)state;
	cat = parse_ok(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	    "relativeThroughput: 1", "gpusPerNode: 4", "maxNodes: 3", NULL));
	assert_int_equal(cat->gpus[0].gpus_per_node, 4);
	assert_int_equal(cat->gpus[0].max_nodes, 3);
	assert_int_equal(cat->gpus[0].max_count, 12);
	/* 10 GPUs on nodes of 4 span ceil(10 / 4) = 3 nodes; 8 span 2. */
	assert_int_equal(mf_cat_nodes(&cat->gpus[0], 10), 3);
	assert_int_equal(mf_cat_nodes(&cat->gpus[0], 8), 2);
	assert_int_equal(mf_cat_nodes(&cat->gpus[0], 1), 1);
	mf_cat_unref(cat);
	cat = parse_ok(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	    "relativeThroughput: 1", "gpusPerNode: 64", "maxNodes: 64", NULL));
	assert_int_equal(cat->gpus[0].max_count, 1024);
	mf_cat_unref(cat);
	cat = parse_ok(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	    "relativeThroughput: 1", "gpusPerNode: 4", "maxNodes: 3",
	    "maxCount: 5", NULL));
	assert_int_equal(cat->gpus[0].max_count, 5);
	mf_cat_unref(cat);
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "gpusPerNode: 4",
	                "maxNodes: 3", "maxCount: 13", NULL),
	    MF_EINVAL, "gpus[0].maxCount", 10,
	    "t.yaml:10: gpus[0].maxCount: 13 is more than gpusPerNode x "
	    "maxNodes (4 x 3 = 12)");
	/* The defaults hold one node of 8. */
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "maxCount: 9", NULL),
	    MF_EINVAL, "gpus[0].maxCount", 8,
	    "t.yaml:8: gpus[0].maxCount: 9 is more than gpusPerNode x "
	    "maxNodes (8 x 1 = 8)");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "gpusPerNode: 0", NULL),
	    MF_EINVAL, "gpus[0].gpusPerNode", 8,
	    "t.yaml:8: gpus[0].gpusPerNode: 0 is out of range [1, 1024]");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "maxNodes: 1025", NULL),
	    MF_EINVAL, "gpus[0].maxNodes", 8,
	    "t.yaml:8: gpus[0].maxNodes: 1025 is out of range [1, 1024]");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "maxNodes: 1.5", NULL),
	    MF_EINVAL, "gpus[0].maxNodes", 8,
	    "t.yaml:8: gpus[0].maxNodes: '1.5' is not a whole number");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "gpusPerNodes: 4", NULL),
	    MF_EINVAL, "gpus[0].gpusPerNodes", 8,
	    "t.yaml:8: gpus[0].gpusPerNodes: unknown field");
}

static void
test_gpu_labels(void **state)
{
	char buf[8192];
	size_t used;

	(void)state;
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "labels: [a]", NULL),
	    MF_EINVAL, "gpus[0].labels", 8,
	    "t.yaml:8: gpus[0].labels: must be a mapping, not a list");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "labels: {gpu: true}", NULL),
	    MF_EINVAL, "gpus[0].labels.gpu", 8,
	    "t.yaml:8: gpus[0].labels.gpu: must be a string, not a boolean");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "labels: {gpu: 'a b'}", NULL),
	    MF_EINVAL, "gpus[0].labels.gpu", 8,
	    "t.yaml:8: gpus[0].labels.gpu: 'a b' is not a Kubernetes label "
	    "value (at most 63 characters of [A-Za-z0-9._-])");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "labels: {gpu: -x}", NULL),
	    MF_EINVAL, "gpus[0].labels.gpu", 8,
	    "t.yaml:8: gpus[0].labels.gpu: '-x' is not a Kubernetes label "
	    "value (at most 63 characters of [A-Za-z0-9._-])");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "labels: {Nvidia.com/gpu: x}",
	                NULL),
	    MF_EINVAL, "gpus[0].labels.Nvidia.com/gpu", 8,
	    "t.yaml:8: gpus[0].labels.Nvidia.com/gpu: is not a Kubernetes "
	    "label key ([prefix/]name, name at most 63 characters of "
	    "[A-Za-z0-9._-])");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "labels: {a/b/c: x}", NULL),
	    MF_EINVAL, "gpus[0].labels.a/b/c", 8,
	    "t.yaml:8: gpus[0].labels.a/b/c: is not a Kubernetes label key "
	    "([prefix/]name, name at most 63 characters of [A-Za-z0-9._-])");

	/* A key longer than err->field still gives one clean message. */
	snprintf(buf, sizeof(buf), "%s",
	    gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	        "relativeThroughput: 1",
	        "labels: {"
	        "a123456789.b123456789.c123456789.d123456789.e123456789."
	        "f123456789.g123456789.h123456789.i123456789.j123456789.com/x: "
	        "'a b'}",
	        NULL));
	/* 127 characters: "gpus[0].labels." (15), 10 x 11, "co". */
	expect_fail(buf, MF_EINVAL,
	    "gpus[0].labels."
	    "a123456789.b123456789.c123456789.d123456789.e123456789."
	    "f123456789.g123456789.h123456789.i123456789.j123456789.co",
	    8,
	    "t.yaml:8: gpus[0].labels."
	    "a123456789.b123456789.c123456789.d123456789.e123456789."
	    "f123456789.g123456789.h123456789.i123456789.j123456789.co: "
	    "'a b' is not a Kubernetes label value (at most 63 characters "
	    "of [A-Za-z0-9._-])");

	/* 65 labels, one more than MF_CAT_MAX_LABELS. */
	used = (size_t)snprintf(buf, sizeof(buf),
	    HDR "gpus:\n" GPU_A "    labels:\n");
	for (int i = 0; i < MF_CAT_MAX_LABELS + 1; i++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used,
		    "      k%d: v\n", i);
	assert_true(used < sizeof(buf));
	expect_fail(buf, MF_EINVAL, "gpus[0].labels", 9,
	    "t.yaml:9: gpus[0].labels: 65 entries, more than 64");
}

static void
test_gpu_slurm(void **state)
{
	struct mf_catalog *cat;
	char buf[1024];

	(void)state;
	cat = parse_ok(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	    "relativeThroughput: 1",
	    "slurm: {gres: gpu:h100_80g, partition: gpu-a.1, "
	    "constraint: 'h100&ib|roce'}",
	    NULL));
	assert_true(mf_cat_has_slurm(&cat->gpus[0]));
	assert_string_equal(cat->gpus[0].slurm.gres, "gpu:h100_80g");
	assert_string_equal(mf_cat_gres_type(&cat->gpus[0]), "h100_80g");
	assert_string_equal(cat->gpus[0].slurm.partition, "gpu-a.1");
	assert_string_equal(cat->gpus[0].slurm.constraint, "h100&ib|roce");
	mf_cat_unref(cat);

	/* Each field alone; none at all is no mapping. */
	cat = parse_ok(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	    "relativeThroughput: 1", "slurm: {partition: big}", NULL));
	assert_true(mf_cat_has_slurm(&cat->gpus[0]));
	assert_null(cat->gpus[0].slurm.gres);
	assert_null(mf_cat_gres_type(&cat->gpus[0]));
	assert_null(cat->gpus[0].slurm.constraint);
	mf_cat_unref(cat);
	cat = parse_ok(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	    "relativeThroughput: 1", NULL));
	assert_false(mf_cat_has_slurm(&cat->gpus[0]));
	assert_null(mf_cat_gres_type(&cat->gpus[0]));
	mf_cat_unref(cat);

	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "slurm: gpu:h100", NULL),
	    MF_EINVAL, "gpus[0].slurm", 8,
	    "t.yaml:8: gpus[0].slurm: must be a mapping, not a string");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "slurm: {}", NULL),
	    MF_EINVAL, "gpus[0].slurm", 8,
	    "t.yaml:8: gpus[0].slurm: is empty: give at least one of gres, "
	    "partition, constraint");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "slurm: {gres: gpu:a, qos: x}",
	                NULL),
	    MF_EINVAL, "gpus[0].slurm.qos", 8,
	    "t.yaml:8: gpus[0].slurm.qos: unknown field");
	expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	                "relativeThroughput: 1", "slurm: {gres: 7}", NULL),
	    MF_EINVAL, "gpus[0].slurm.gres", 8,
	    "t.yaml:8: gpus[0].slurm.gres: must be a string, not a number");

	static const char *const bad_gres[] = { "h100", "gpu:", "gpu:h100:2",
		"gpu:h 100", "gpu:h100,nvme", "gres:gpu:h100", "GPU:h100",
		"gpu:h100=1",
		"gpu:"
		"a123456789b123456789c123456789d123456789e123456789f123456789"
		"xyzw",
		NULL };
	for (int i = 0; bad_gres[i] != NULL; i++) {
		char want[512];

		snprintf(buf, sizeof(buf), "slurm: {gres: '%s'}", bad_gres[i]);
		snprintf(want, sizeof(want),
		    "t.yaml:8: gpus[0].slurm.gres: '%s' is not a Slurm GPU "
		    "gres (gpu:TYPE, TYPE 1 to 63 characters of "
		    "[A-Za-z0-9._-])",
		    bad_gres[i]);
		expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
		                "relativeThroughput: 1", buf, NULL),
		    MF_EINVAL, "gpus[0].slurm.gres", 8, want);
	}
	/* 63 characters of type is the most. */
	cat = parse_ok(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	    "relativeThroughput: 1",
	    "slurm: {gres: gpu:a123456789b123456789c123456789d123456789"
	    "e123456789f123456789xyz}",
	    NULL));
	assert_int_equal(strlen(mf_cat_gres_type(&cat->gpus[0])), 63);
	mf_cat_unref(cat);

	static const char *const bad_partition[] = { "gpu,big", "gpu big",
		"a:b", "", "p=1", NULL };
	for (int i = 0; bad_partition[i] != NULL; i++) {
		char want[512];

		snprintf(buf, sizeof(buf), "slurm: {partition: '%s'}",
		    bad_partition[i]);
		snprintf(want, sizeof(want),
		    "t.yaml:8: gpus[0].slurm.partition: '%s' is not a Slurm "
		    "partition name (1 to 63 characters of [A-Za-z0-9._-])",
		    bad_partition[i]);
		expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
		                "relativeThroughput: 1", buf, NULL),
		    MF_EINVAL, "gpus[0].slurm.partition", 8, want);
	}

	static const char *const bad_constraint[] = { "&h100", "h100|", "a&&b",
		"a b", "[a*2]", "a,b", "!a", "", NULL };
	for (int i = 0; bad_constraint[i] != NULL; i++) {
		char want[512];

		snprintf(buf, sizeof(buf), "slurm: {constraint: '%s'}",
		    bad_constraint[i]);
		snprintf(want, sizeof(want),
		    "t.yaml:8: gpus[0].slurm.constraint: '%s' is not a Slurm "
		    "constraint (features of [A-Za-z0-9._-] joined by & or |, "
		    "at most 255 characters)",
		    bad_constraint[i]);
		expect_fail(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
		                "relativeThroughput: 1", buf, NULL),
		    MF_EINVAL, "gpus[0].slurm.constraint", 8, want);
	}
	/* 255 characters is the most, 256 too many. */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "slurm: {constraint: ", 20);
	memset(buf + 20, 'f', 255);
	memcpy(buf + 275, "}", 1);
	cat = parse_ok(gpu_doc("name: A", "memory: 2G", "hourlyPrice: 1",
	    "relativeThroughput: 1", buf, NULL));
	assert_int_equal(strlen(cat->gpus[0].slurm.constraint), 255);
	mf_cat_unref(cat);
	memset(buf + 20, 'f', 256);
	memcpy(buf + 276, "}", 1);
	{
		struct mf_catalog *none = NULL;
		struct mf_error err;
		const char *doc = gpu_doc("name: A", "memory: 2G",
		    "hourlyPrice: 1", "relativeThroughput: 1", buf, NULL);

		assert_int_equal(mf_cat_parse(doc, strlen(doc), "t.yaml", &none,
		                     &err),
		    MF_EINVAL);
		assert_string_equal(err.field, "gpus[0].slurm.constraint");
	}
}

/* Cards that share a gres type must have the same memory. */
static void
test_gpu_slurm_shared_gres(void **state)
{
	struct mf_catalog *cat;

	(void)state;
	cat = parse_ok(HDR "gpus:\n"
	                   "  - {name: L4, memory: 24G, hourlyPrice: 0.8, "
	                   "relativeThroughput: 0.1, slurm: {gres: gpu:l4}}\n"
	                   "  - {name: L4-spot, memory: 24G, hourlyPrice: 0.3, "
	                   "relativeThroughput: 0.1, slurm: {gres: gpu:l4, "
	                   "partition: spot}}\n");
	assert_int_equal(cat->ngpus, 2);
	mf_cat_unref(cat);
	expect_fail(HDR "gpus:\n"
	                "  - {name: A, memory: 40G, hourlyPrice: 1, "
	                "relativeThroughput: 1, slurm: {gres: gpu:a100}}\n"
	                "  - {name: B, memory: 80G, hourlyPrice: 1, "
	                "relativeThroughput: 1, slurm: {gres: gpu:b}}\n"
	                "  - {name: C, memory: 40G, hourlyPrice: 1, "
	                "relativeThroughput: 1, slurm: {gres: gpu:a100}}\n"
	                "  - {name: D, memory: 80G, hourlyPrice: 1,\n"
	                "     relativeThroughput: 1, slurm: {gres: gpu:a100}}\n"
	                "  - {name: E, memory: 81G, hourlyPrice: 1, "
	                "relativeThroughput: 1, slurm: {gres: gpu:b}}\n",
	    MF_EINVAL, "gpus[3].slurm.gres", 8,
	    "t.yaml:8: gpus[3].slurm.gres: 'gpu:a100' is also the gres of "
	    "gpus[0] (line 4), whose memory differs: Slurm could give either "
	    "card");
}

/* --- the document ---------------------------------------------------- */

static void
test_doc_syntax(void **state)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;
	char path[512];

	(void)state;
	assert_int_equal(mf_cat_load(top_path(path, sizeof(path),
	                                 "tests/data/catalog/bad-syntax.yaml"),
	                     &cat, &err),
	    MF_EINVAL);
	assert_null(cat);
	assert_string_equal(err.field, "");
	assert_int_equal(err.line, 6);
	assert_int_equal(strncmp(MSG(&err),
	                     "bad-syntax.yaml:6: not valid "
	                     "YAML: ",
	                     35),
	    0);
}

static void
test_doc_alias_refused(void **state)
{
	(void)state;
	expect_fail(HDR "gpus:\n  - &a {name: A, memory: 2G, hourlyPrice: 1, "
	                "relativeThroughput: 1}\n  - *a\n",
	    MF_EINVAL, "", 5, "t.yaml:5: aliases are not allowed");
}

static void
test_doc_duplicate_key(void **state)
{
	(void)state;
	expect_fail(HDR "headroom: 0.1\nheadroom: 0.2\ngpus:\n" GPU_A,
	    MF_EINVAL, "headroom", 4, "t.yaml:4: headroom: duplicate key");
}

static void
test_doc_two_documents(void **state)
{
	(void)state;
	expect_fail(HDR "gpus:\n" GPU_A "---\n" HDR "gpus:\n" GPU_A, MF_EINVAL,
	    "", 8, "t.yaml:8: only one document is allowed");
}

static void
test_parse_too_big(void **state)
{
	size_t len = MF_CAT_MAX_BYTES + 1;
	struct mf_catalog *cat = NULL;
	struct mf_error err;
	char *buf = malloc(len);

	(void)state;
	assert_non_null(buf);
	memset(buf, ' ', len);
	assert_int_equal(mf_cat_parse(buf, len, "t.yaml", &cat, &err),
	    MF_ETOOBIG);
	assert_null(cat);
	assert_string_equal(MSG(&err),
	    "t.yaml: 16777217 bytes, more than "
	    "the 16777216 a catalogue may hold");
	free(buf);
}

static void
test_parse_null_name_and_err(void **state)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;
	const char *text = HDR "gpus: []\n";

	(void)state;
	assert_int_equal(mf_cat_parse(text, strlen(text), NULL, &cat, NULL),
	    MF_EINVAL);
	assert_int_equal(mf_cat_parse(text, strlen(text), NULL, &cat, &err),
	    MF_EINVAL);
	assert_string_equal(MSG(&err),
	    "<memory>:3: gpus: at least one GPU is required");
	assert_int_equal(mf_cat_parse(NULL, 0, NULL, &cat, &err), MF_EINVAL);
	assert_null(cat);
}

/* --- files ----------------------------------------------------------- */

/* Each bad fixture is refused with its base name, line and field. */
static void
test_load_bad_fixtures(void **state)
{
	static const struct {
		const char *file, *field;
		int line;
		const char *message;
	} bad[] = {
		{ "bad-memory.yaml", "gpus[3].memory", 12,
		    "bad-memory.yaml:12: gpus[3].memory: '96Gx' is not a "
		    "quantity" },
		{ "bad-duplicate.yaml", "gpus[2].name", 6,
		    "bad-duplicate.yaml:6: gpus[2].name: 'H100' is already the "
		    "name of gpus[0] (line 4)" },
		{ "bad-unknown-key.yaml", "gpus[0].maxcount", 8,
		    "bad-unknown-key.yaml:8: gpus[0].maxcount: unknown field" },
		{ "bad-alias.yaml", "", 5,
		    "bad-alias.yaml:5: aliases are not allowed" },
		{ "bad-time-factor.yaml", "timeFactors.gradientCheckpointing",
		    5,
		    "bad-time-factor.yaml:5: "
		    "timeFactors.gradientCheckpointing: "
		    "is not a fix (sdpa, microbatch, autocast, checkpointing, "
		    "adam8bit, lora, qlora, fsdp, kvfp8, int8, int4, tensor, count, context, concurrency)" },
		{ "bad-label.yaml", "gpus[0].labels.nvidia.com/gpu.product", 9,
		    "bad-label.yaml:9: gpus[0].labels.nvidia.com/gpu.product: "
		    "'NVIDIA GeForce RTX 3090' is not a Kubernetes label value "
		    "(at most 63 characters of [A-Za-z0-9._-])" },
		{ "bad-slurm-gres.yaml", "gpus[0].slurm.gres", 9,
		    "bad-slurm-gres.yaml:9: gpus[0].slurm.gres: 'gpu:h100:2' "
		    "is not a Slurm GPU gres (gpu:TYPE, TYPE 1 to 63 "
		    "characters of [A-Za-z0-9._-])" },
		{ "bad-slurm-shared.yaml", "gpus[2].slurm.gres", 19,
		    "bad-slurm-shared.yaml:19: gpus[2].slurm.gres: 'gpu:a100' "
		    "is also the gres of gpus[0] (line 4), whose memory "
		    "differs: Slurm could give either card" },
		{ "bad-headroom.yaml", "headroom", 3,
		    "bad-headroom.yaml:3: headroom: must be a number, not a "
		    "string" },
	};
	struct mf_catalog *cat;
	struct mf_error err;
	char rel[256], path[512];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cat = NULL;
		snprintf(rel, sizeof(rel), "tests/data/catalog/%s",
		    bad[i].file);
		assert_int_equal(mf_cat_load(top_path(path, sizeof(path), rel),
		                     &cat, &err),
		    MF_EINVAL);
		assert_null(cat);
		assert_string_equal(MSG(&err), bad[i].message);
		assert_string_equal(err.field, bad[i].field);
		assert_int_equal(err.line, bad[i].line);
	}
}

static void
test_load_missing(void **state)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;

	(void)state;
	assert_int_equal(mf_cat_load("/nonexistent/dir/gpus.yaml", &cat, &err),
	    MF_ENOTFOUND);
	assert_null(cat);
	assert_string_equal(MSG(&err),
	    "/nonexistent/dir/gpus.yaml: "
	    "cannot open: No such file or directory");
	assert_int_equal(err.line, 0);
	assert_string_equal(err.field, "");
}

static void
test_load_directory(void **state)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;

	(void)state;
	assert_int_equal(mf_cat_load("/", &cat, &err), MF_EIO);
	assert_null(cat);
	assert_string_equal(MSG(&err), "/: not a regular file (a directory)");
}

/* Write len bytes: text, then comment lines, to a new temporary file. */
static void
write_padded(char *path, const char *text, size_t len)
{
	size_t tlen = strlen(text), off;
	char *buf = malloc(len);
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_non_null(buf);
	memcpy(buf, text, tlen);
	memset(buf + tlen, '#', len - tlen);
	for (off = tlen + 99; off < len; off += 100)
		buf[off] = '\n';
	buf[len - 1] = '\n';
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
	free(buf);
}

/* Exactly MF_CAT_MAX_BYTES loads; one byte more is refused. */
static void
test_load_size_cap(void **state)
{
	char path[] = "/tmp/test_catalog.XXXXXX";
	struct mf_catalog *cat = NULL;
	struct mf_error err;
	char expect[600];

	(void)state;
	write_padded(path, HDR "gpus:\n" GPU_A, MF_CAT_MAX_BYTES);
	assert_int_equal(mf_cat_load(path, &cat, &err), MF_OK);
	assert_int_equal(cat->ngpus, 1);
	mf_cat_unref(cat);
	cat = NULL;
	unlink(path);

	memcpy(path, "/tmp/test_catalog.XXXXXX", sizeof(path));
	write_padded(path, HDR "gpus:\n" GPU_A, MF_CAT_MAX_BYTES + 1);
	assert_int_equal(mf_cat_load(path, &cat, &err), MF_ETOOBIG);
	assert_null(cat);
	snprintf(expect, sizeof(expect),
	    "%s: larger than the 16777216 bytes "
	    "a catalogue may hold",
	    path);
	assert_string_equal(MSG(&err), expect);
	unlink(path);
}

/* --- snapshot references and lookups ---------------------------------- */

static void
test_ref_counts(void **state)
{
	struct mf_catalog *cat = parse_ok(HDR "gpus:\n" GPU_A);

	(void)state;
	assert_int_equal(cat->refs, 1);
	assert_ptr_equal(mf_cat_ref(cat), cat);
	assert_int_equal(cat->refs, 2);
	mf_cat_unref(cat);
	assert_int_equal(cat->refs, 1);
	mf_cat_unref(cat); /* frees: ASan reports a leak otherwise */
	assert_null(mf_cat_ref(NULL));
	mf_cat_unref(NULL);
}

static void *
ref_worker(void *arg)
{
	struct mf_catalog *cat = arg;

	for (int i = 0; i < 100000; i++) {
		mf_cat_ref(cat);
		mf_cat_unref(cat);
	}
	mf_cat_unref(cat); /* the reference the spawner took for us */
	return NULL;
}

/* References taken and dropped by many threads at once balance. */
static void
test_ref_threads(void **state)
{
	struct mf_catalog *cat = parse_ok(HDR "gpus:\n" GPU_A);
	pthread_t t[4];

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, ref_worker,
		                     mf_cat_ref(cat)),
		    0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(cat->refs, 1);
	mf_cat_unref(cat);
}

static void
test_find(void **state)
{
	struct mf_catalog *cat = parse_ok(HDR
	    "gpus:\n" GPU_A
	    "  - {name: B, memory: 2G, hourlyPrice: 1, relativeThroughput: 1}"
	    "\n");

	(void)state;
	assert_ptr_equal(mf_cat_find(cat, "B"), &cat->gpus[1]);
	assert_ptr_equal(mf_cat_find(cat, "A"), &cat->gpus[0]);
	assert_null(mf_cat_find(cat, "a"));
	assert_null(mf_cat_find(cat, "C"));
	assert_null(mf_cat_find(cat, NULL));
	assert_null(mf_cat_find(NULL, "A"));
	mf_cat_unref(cat);
}

static void
test_usable(void **state)
{
	struct mf_catalog cat = { .headroom = 0.10 };
	struct mf_gpu gpu = { .memory = 96 * GB };

	(void)state;
	/* 96 GB x 0.9 = 86.4 GB: the RTX PRO 6000 of design section 5. */
	assert_int_equal(mf_cat_usable(&cat, &gpu), 86400000000LL);
	gpu.memory = 24 * GB; /* x 0.9 = 21.6 GB */
	assert_int_equal(mf_cat_usable(&cat, &gpu), 21600000000LL);
	/* 88Gi = 94,489,280,512 x 0.9 = 85,040,352,460.8, down to ...460. */
	gpu.memory = 94489280512LL;
	assert_int_equal(mf_cat_usable(&cat, &gpu), 85040352460LL);
	/* 100 x (1 - 0.15) = 85 exactly; 0.15 as a double is below 0.15. */
	cat.headroom = 0.15;
	gpu.memory = 100;
	assert_int_equal(mf_cat_usable(&cat, &gpu), 85);
	/* 7 x 0.85 = 5.95, down to 5. */
	gpu.memory = 7;
	assert_int_equal(mf_cat_usable(&cat, &gpu), 5);
	/* No headroom: all of the largest size, no overflow. */
	cat.headroom = 0;
	gpu.memory = INT64_MAX;
	assert_int_equal(mf_cat_usable(&cat, &gpu), INT64_MAX);
	/*
	 * (2^63 - 1) x 0.11 = 9223372036854775807 x 11 / 100
	 * = 101457092405402533877 / 100 = 1014570924054025338.77.
	 */
	cat.headroom = 0.89;
	assert_int_equal(mf_cat_usable(&cat, &gpu), 1014570924054025338LL);
	assert_int_equal(mf_cat_usable(NULL, &gpu), 0);
	assert_int_equal(mf_cat_usable(&cat, NULL), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_estimator_key),
		cmocka_unit_test(test_shipped_loads),
		cmocka_unit_test(test_shipped_post_prices),
		cmocka_unit_test(test_shipped_common_cards),
		cmocka_unit_test(test_post_smallest_fit),
		cmocka_unit_test(test_shipped_smallest_fit),
		cmocka_unit_test(test_parse_defaults),
		cmocka_unit_test(test_parse_overrides),
		cmocka_unit_test(test_parse_vllm),
		cmocka_unit_test(test_card_members),
		cmocka_unit_test(test_parse_boundaries),
		cmocka_unit_test(test_parse_json),
		cmocka_unit_test(test_parse_json_error),
		cmocka_unit_test(test_parse_minimal_fixture),
		cmocka_unit_test(test_parse_ten_thousand),
		cmocka_unit_test(test_parse_too_many_gpus),
		cmocka_unit_test(test_parse_too_big),
		cmocka_unit_test(test_parse_null_name_and_err),
		cmocka_unit_test(test_top_api_version),
		cmocka_unit_test(test_top_kind),
		cmocka_unit_test(test_top_unknown_key),
		cmocka_unit_test(test_top_not_a_mapping),
		cmocka_unit_test(test_top_kind_first),
		cmocka_unit_test(test_gpu_memory_meant),
		cmocka_unit_test(test_top_headroom),
		cmocka_unit_test(test_top_efficiency),
		cmocka_unit_test(test_top_inter_node_efficiency),
		cmocka_unit_test(test_top_time_factors),
		cmocka_unit_test(test_top_gpus),
		cmocka_unit_test(test_top_kubernetes),
		cmocka_unit_test(test_gpu_unknown_key),
		cmocka_unit_test(test_gpu_name),
		cmocka_unit_test(test_gpu_duplicate_name),
		cmocka_unit_test(test_gpu_memory),
		cmocka_unit_test(test_gpu_price),
		cmocka_unit_test(test_gpu_throughput),
		cmocka_unit_test(test_gpu_speed),
		cmocka_unit_test(test_gpu_network),
		cmocka_unit_test(test_observations_key),
		cmocka_unit_test(test_gpu_max_count),
		cmocka_unit_test(test_gpu_nodes),
		cmocka_unit_test(test_gpu_labels),
		cmocka_unit_test(test_gpu_slurm),
		cmocka_unit_test(test_gpu_slurm_shared_gres),
		cmocka_unit_test(test_doc_syntax),
		cmocka_unit_test(test_doc_alias_refused),
		cmocka_unit_test(test_doc_duplicate_key),
		cmocka_unit_test(test_doc_two_documents),
		cmocka_unit_test(test_load_bad_fixtures),
		cmocka_unit_test(test_load_missing),
		cmocka_unit_test(test_load_directory),
		cmocka_unit_test(test_load_size_cap),
		cmocka_unit_test(test_ref_counts),
		cmocka_unit_test(test_ref_threads),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_usable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
