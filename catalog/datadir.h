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

#endif
