/*
 * files.h: the repository's own files, for unit tests.  Paths are relative
 * to $MF_TOP (the top of the tree; "." when unset or empty).
 */
#ifndef MF_TEST_FILES_H
#define MF_TEST_FILES_H

#include <stdio.h>
#include <stdlib.h>

#include "catalog.h"
#include "model/model.h"
#include "msg.h"

static inline const char *
top(void)
{
	const char *t = getenv("MF_TOP");

	return t != NULL && t[0] != '\0' ? t : ".";
}

static inline char *
top_path(char *buf, size_t size, const char *rel)
{
	snprintf(buf, size, "%s/%s", top(), rel);
	return buf;
}

/* The whole file at path, NUL-terminated, or NULL; the caller frees it. */
static inline char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0) {
		fclose(f);
		return NULL;
	}
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf != NULL) {
		buf[n] = '\0';
		if (len != NULL)
			*len = (size_t)n;
	}
	return buf;
}

/*
 * The shipped catalogue into *cat and the shipped models into *models
 * (each when not NULL), for a test's setup: 0, or -1 with the error
 * printed.
 */
static inline int
shipped_data(struct mf_catalog **cat, struct mf_models **models)
{
	struct mf_error err;
	char path[512];

	if ((models != NULL &&
	        mf_models_load(top_path(path, sizeof(path), "catalog/models"),
	            models, &err) != MF_OK) ||
	    (cat != NULL &&
	        mf_cat_load(top_path(path, sizeof(path), "catalog/gpus.yaml"),
	            cat, &err) != MF_OK)) {
		fprintf(stderr, "setup: %s\n", MSG(&err));
		return -1;
	}
	return 0;
}

#endif
