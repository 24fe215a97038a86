#include "datadir.h"

#include <limits.h>
#include <stdio.h>
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
