/*
 * fuzz.h: the shipped catalogue and models, loaded once, for the fuzz
 * harnesses that need them.  Read from $MF_TOP (default: the working
 * directory); a load failure aborts, since no input could be tested.
 */
#ifndef MF_FUZZ_H
#define MF_FUZZ_H

#include <stdio.h>
#include <stdlib.h>

#include "model/model.h"
#include "catalog.h"
#include "msg.h"

static struct mf_models *models;
static struct mf_catalog *cat;

static void
load_once(void)
{
	const char *top = getenv("MF_TOP");
	struct mf_error err;
	char path[512];

	if (cat != NULL)
		return;
	snprintf(path, sizeof(path), "%s/catalog/models", top ? top : ".");
	if (mf_models_load(path, &models, &err) != MF_OK) {
		fprintf(stderr, "%s\n", MSG(&err));
		abort();
	}
	snprintf(path, sizeof(path), "%s/catalog/gpus.yaml", top ? top : ".");
	if (mf_cat_load(path, &cat, &err) != MF_OK) {
		fprintf(stderr, "%s\n", MSG(&err));
		abort();
	}
}

#endif
