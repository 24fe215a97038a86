/*
 * fuzz_catalog.c: mf_cat_parse on arbitrary bytes.
 *
 * Seeds: tests/fuzz/corpus/catalog/ (the shipped catalogue and the test
 * fixtures).  Every input either parses into a snapshot whose fields lie
 * in their documented bounds or fails with an error that names the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const struct mf_catalog *cat)
{
	if (cat->ngpus < 1 || cat->ngpus > MF_CAT_MAX_GPUS ||
	    !(cat->headroom >= 0 && cat->headroom < 0.9) ||
	    !(cat->multi_gpu_efficiency > 0 &&
	        cat->multi_gpu_efficiency <= 1) ||
	    !(cat->inter_node_efficiency > 0 &&
	        cat->inter_node_efficiency <= 1))
		abort();
	for (size_t i = 0; i < cat->ngpus; i++) {
		const struct mf_gpu *g = &cat->gpus[i];

		if (g->memory <= 0 || mf_cat_usable(cat, g) > g->memory ||
		    mf_cat_usable(cat, g) < 0 || !(g->hourly_price >= 0) ||
		    !(g->throughput > 0) || g->max_count < 1 ||
		    g->max_count > MF_CAT_MAX_COUNT || g->gpus_per_node < 1 ||
		    g->gpus_per_node > MF_CAT_MAX_COUNT || g->max_nodes < 1 ||
		    g->max_nodes > MF_CAT_MAX_COUNT ||
		    g->max_count > g->gpus_per_node * g->max_nodes ||
		    g->nlabels > MF_CAT_MAX_LABELS ||
		    mf_cat_find(cat, g->name) != g)
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;

	if (mf_cat_parse((const char *)data, size, "fuzz", &cat, &err) ==
	    MF_OK) {
		check(cat);
		mf_cat_unref(cat);
	} else if (strcmp(err.file, "fuzz") != 0 || err.text[0] == '\0') {
		abort();
	}
	return 0;
}
