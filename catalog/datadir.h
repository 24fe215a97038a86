/*
 * datadir.h: where the shipped data (gpus.yaml, models/) is found when no
 * -f or -m names it, one rule for memfloor and memfloord.
 *
 * First the source tree the program was built in: catalog/NAME in the
 * directory above the executable or the one above that (build/memfloord,
 * build/asan/memfloord); then the installed data, MF_DATADIR/NAME.  The
 * executable's own path is used, not the current directory, so a program
 * finds the same data wherever it is started from.
 */
#ifndef MF_DATADIR_H
#define MF_DATADIR_H

#include <stddef.h>

/*
 * The first place where name (a file or directory) exists, written to buf
 * (size bytes); NULL when there is none: then tried says where it looked
 * ("A or B"), for the error.  tried may be NULL.
 */
const char *mf_data_find(const char *name, char *buf, size_t size, char *tried,
    size_t tried_size);

/* Model directories at most: the shipped one and those -m names. */
#define MF_DATA_MAX_MODEL_DIRS 16

struct mf_data_models {
	const char *dirs[MF_DATA_MAX_MODEL_DIRS]; /* in the order read */
	size_t n;
	char shipped[4096 + 64]; /* where dirs[0] points when shipped */
	int has_shipped;
};

/*
 * The model directories, in the order they are read: the shipped models
 * (mf_data_find("models")) when found, then each of given[0..ngiven) (-m),
 * a later directory's model of a name replacing an earlier one's; a
 * directory named twice (through symlinks too) is read once.  0, or -1
 * with why filled (why_size bytes) when there is none at all or more than
 * MF_DATA_MAX_MODEL_DIRS.  out borrows the given strings.
 */
int mf_data_model_dirs(const char *const *given, size_t ngiven,
    struct mf_data_models *out, char *why, size_t why_size);

#endif
