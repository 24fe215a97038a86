/*
 * fuzz_observation.c: the body of POST /v1/observations (design 23) from
 * arbitrary bytes, read against the shipped catalogue and models.
 *
 * Seeds: tests/fuzz/corpus/observation/ (by fingerprint, by the device's
 * figure, by the job's manifest).  Every input either fails with an error that
 * says something, or reads into an observation whose parts agree: a fingerprint
 * of 32 hex digits, a card of the catalogue, a count of 1 or more, a memory
 * figure, none above the card's memory, allocated within reserved, speeds
 * positive or absent (a step's two together), a known source.  Nothing is kept:
 * the parser touches no store.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "observe.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int ok)
{
	if (!ok)
		abort();
}

static void
check_observation(const struct mf_observation *o)
{
	const struct mf_gpu *g = mf_cat_find(cat, o->card);

	check(mf_fp_valid(o->fingerprint));
	check(g != NULL);
	check(o->count >= 1);
	check(o->peak_reserved > 0 || o->device_used > 0);
	check(o->peak_reserved <= g->memory && o->device_used <= g->memory);
	check(o->peak_allocated <= o->peak_reserved);
	check(o->tokens_per_second == -1 || o->tokens_per_second > 0);
	check((o->step_seconds == -1) == (o->tokens_per_step == -1));
	check(o->step_seconds == -1 || o->step_seconds > 0);
	check(strcmp(o->source, "torch") == 0 ||
	    strcmp(o->source, "dcgm") == 0 || strcmp(o->source, "log") == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mf_observation o;
	struct mf_error err;
	struct mf_api api;
	int named = -1;
	enum mf_rc rc;

	load_once();
	api = (struct mf_api){ cat, models, NULL, NULL };
	memset(&err, 0, sizeof(err));
	rc = mf_obs_read((const char *)data, size, MF_DOC_AUTO, &api, &o,
	    &named, &err);
	if (rc != MF_OK) {
		check(err.text[0] != '\0');
		return 0;
	}
	check(named == 0 || named == 1);
	check_observation(&o);
	return 0;
}
