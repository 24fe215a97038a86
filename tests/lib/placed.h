/*
 * placed.h: a decision's placement on a named card, for test assertions:
 * the placement, else the alternative on it; the test fails when the
 * card has neither.  Include after cmocka.h.
 */
#ifndef MF_TEST_PLACED_H
#define MF_TEST_PLACED_H

#include <string.h>

#include "place/place.h"

static const struct mf_placement *
on(const struct mf_decision *d, const char *gpu)
{
	if (strcmp(d->placement.gpu->name, gpu) == 0)
		return &d->placement;
	for (size_t i = 0; i < d->nalt; i++)
		if (strcmp(d->alt[i].gpu->name, gpu) == 0)
			return &d->alt[i];
	fail_msg("no placement on %s", gpu);
	return NULL;
}

#endif
