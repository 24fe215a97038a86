#include "datadir.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MF_DATADIR
#define MF_DATADIR "/usr/local/share/memfloor"
#endif

/* Directories above the executable's that may hold catalog/. */
#define TREE_DEPTH 2

static int
exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* The executable's directory, or -1 when /proc/self/exe is not there. */
static int
exe_dir(char *dir, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", dir, size - 1);
	char *slash;

	if (n <= 0)
		return -1;
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	if (slash == NULL)
		return -1;
	*slash = '\0';
	return 0;
}

const char *
mf_data_find(const char *name, char *buf, size_t size, char *tried,
    size_t tried_size)
{
	char dir[PATH_MAX], first[PATH_MAX + 64] = "";
	char *slash;

	if (exe_dir(dir, sizeof(dir)) == 0) {
		for (int up = 1; up <= TREE_DEPTH; up++) {
			slash = strrchr(dir, '/');
			if (slash == NULL)
				break;
			*slash = '\0';
			snprintf(buf, size, "%s/catalog/%s", dir, name);
			if (up == 1)
				snprintf(first, sizeof(first), "%s", buf);
			if (exists(buf))
				return buf;
		}
	}
	snprintf(buf, size, "%s/%s", MF_DATADIR, name);
	if (exists(buf))
		return buf;
	if (tried != NULL)
		snprintf(tried, tried_size, "%s%s%s", first,
		    first[0] ? " or " : "", buf);
	return NULL;
}

/* Whether a and b name one directory (by their real paths when both
 * resolve, else as written). */
static int
same_dir(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	if (realpath(a, ra) != NULL && realpath(b, rb) != NULL)
		return strcmp(ra, rb) == 0;
	return strcmp(a, b) == 0;
}

/* Append dir unless it is there already; -1 when out is full. */
static int
add_dir(struct mf_data_models *out, const char *dir)
{
	assert(out->n <= MF_DATA_MAX_MODEL_DIRS);
	for (size_t i = 0; i < out->n; i++)
		if (same_dir(out->dirs[i], dir))
			return 0;
	if (out->n == MF_DATA_MAX_MODEL_DIRS)
		return -1;
	out->dirs[out->n++] = dir;
	return 0;
}

int
mf_data_model_dirs(const char *const *given, size_t ngiven,
    struct mf_data_models *out, char *why, size_t why_size)
{
	char tried[2 * PATH_MAX + 160];

	memset(out, 0, sizeof(*out));
	if (mf_data_find("models", out->shipped, sizeof(out->shipped), tried,
	        sizeof(tried)) != NULL) {
		assert(out->n < MF_DATA_MAX_MODEL_DIRS);
		out->dirs[out->n++] = out->shipped;
		out->has_shipped = 1;
	}
	for (size_t i = 0; i < ngiven; i++) {
		if (add_dir(out, given[i]) != 0) {
			snprintf(why, why_size,
			    "more than %d model directories (the shipped one and -m's)",
			    MF_DATA_MAX_MODEL_DIRS);
			return -1;
		}
	}
	if (out->n > 0)
		return 0;
	snprintf(why, why_size,
	    "no model configs: looked for %s; name a directory with -m DIR",
	    tried);
	return -1;
}
