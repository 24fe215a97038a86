/*
 * test_kueue.c: the catalogue as Kueue ResourceFlavors (design 18).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kueue.h"
#include "msg.h"

#define HDR "apiVersion: memfloor.dev/v1\nkind: GpuCatalog\ngpus:\n"

static struct mf_catalog *
parse(const char *text)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;

	if (mf_cat_parse(text, strlen(text), "dir/t.yaml", &cat, &err) != MF_OK)
		print_error("%s\n", MSG(&err));
	assert_non_null(cat);
	return cat;
}

/* Two cards: names in lower case, labels quoted, "---" between. */
static void
test_kueue_flavors_text(void **state)
{
	struct mf_catalog *cat = parse(HDR
	    "  - name: H100\n    memory: 80G\n    hourlyPrice: 3\n"
	    "    relativeThroughput: 1\n    labels:\n"
	    "      nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n"
	    "      example.com/pool: 'true'\n"
	    "  - name: L4.x\n    memory: 24G\n    hourlyPrice: 1\n"
	    "    relativeThroughput: 0.1\n    labels: {nvidia.com/gpu.product: "
	    "NVIDIA-L4}\n");
	struct mf_error err;
	struct mf_buf out;

	(void)state;
	mf_buf_init(&out, 1 << 16);
	assert_int_equal(mf_kueue_flavors(cat, &out, &err), MF_OK);
	assert_string_equal(out.data,
	    "# Kueue ResourceFlavors, one per GPU type of dir/t.yaml\n"
	    "# (memfloor catalog kueue).\n"
	    "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\n"
	    "metadata:\n  name: h100\nspec:\n  nodeLabels:\n"
	    "    \"nvidia.com/gpu.product\": \"NVIDIA-H100-80GB-HBM3\"\n"
	    "    \"example.com/pool\": \"true\"\n"
	    "---\n"
	    "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\n"
	    "metadata:\n  name: l4.x\nspec:\n  nodeLabels:\n"
	    "    \"nvidia.com/gpu.product\": \"NVIDIA-L4\"\n");
	mf_buf_free(&out);
	mf_cat_unref(cat);
}

static void
expect_refused(const char *gpus, const char *message)
{
	struct mf_catalog *cat;
	struct mf_error err;
	struct mf_buf out;
	char text[2048];

	snprintf(text, sizeof(text), "%s%s", HDR, gpus);
	cat = parse(text);
	mf_buf_init(&out, 1 << 16);
	memset(&err, 0, sizeof(err));
	assert_int_equal(mf_kueue_flavors(cat, &out, &err), MF_EINVAL);
	assert_string_equal(MSG(&err), message);
	mf_buf_free(&out);
	mf_cat_unref(cat);
}

#define CARD(name, labels) \
	"  - name: " name "\n    memory: 16G\n    hourlyPrice: 1\n" \
	"    relativeThroughput: 1\n    labels: " labels "\n"

/* Entries start on lines 4, 9, ...: five lines each. */
static void
test_kueue_refusals(void **state)
{
	(void)state;
	expect_refused(CARD("RTX_4090", "{a: b}"),
	    "t.yaml:4: gpus[0].name: 'RTX_4090' in lower case is no "
	    "Kubernetes object name (a-z, 0-9, '-' and '.', starting and "
	    "ending with a letter or digit)");
	expect_refused(CARD("-a", "{a: b}"),
	    "t.yaml:4: gpus[0].name: '-a' in lower case is no Kubernetes "
	    "object name (a-z, 0-9, '-' and '.', starting and ending with a "
	    "letter or digit)");
	expect_refused(CARD("a..b", "{a: b}"),
	    "t.yaml:4: gpus[0].name: 'a..b' in lower case is no Kubernetes "
	    "object name (a-z, 0-9, '-' and '.', starting and ending with a "
	    "letter or digit)");
	expect_refused(CARD("H100", "{a: b}") CARD("h100", "{a: c}"),
	    "t.yaml:9: gpus[1].name: 'h100' is flavor h100, as gpus[0] "
	    "(line 4) is");
	expect_refused(CARD("A", "{}"),
	    "t.yaml:4: gpus[0].labels: none: a ResourceFlavor without "
	    "nodeLabels matches every node");
	expect_refused(CARD("A",
	                   "{a: v, b: v, c: v, d: v, e: v, f: v, g: v, h: v, "
	                   "i: v}"),
	    "t.yaml:4: gpus[0].labels: 9 labels, more than the 8 nodeLabels "
	    "of a Kueue ResourceFlavor");
}

/* Eight labels are Kueue's limit, and allowed. */
static void
test_kueue_eight_labels(void **state)
{
	struct mf_catalog *cat = parse(
	    HDR CARD("A", "{a: v, b: v, c: v, d: v, e: v, f: v, g: v, h: v}"));
	struct mf_error err;
	struct mf_buf out;

	(void)state;
	mf_buf_init(&out, 1 << 16);
	assert_int_equal(mf_kueue_flavors(cat, &out, &err), MF_OK);
	assert_non_null(strstr(out.data, "    \"h\": \"v\"\n"));
	mf_buf_free(&out);
	mf_cat_unref(cat);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kueue_flavors_text),
		cmocka_unit_test(test_kueue_refusals),
		cmocka_unit_test(test_kueue_eight_labels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
