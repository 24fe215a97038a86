/*
 * file.h: reading a whole input file into memory, with a cap, for the
 * catalogue, the model configs, the daemon's token and TLS files and the
 * command line.
 */
#ifndef MF_FILE_H
#define MF_FILE_H

#include <stddef.h>

#include "err.h"

/*
 * Read path ("-" is standard input) into *buf (malloc'd, NUL-terminated;
 * *len bytes before the NUL).  what names the file's kind in the error
 * for one over max bytes ("a catalogue"): "PATH: larger than the MAX bytes
 * WHAT may hold".  A path must name a regular file (through symlinks):
 * anything else, a named pipe or a directory, is MF_EIO "not a regular
 * file (a named pipe)" at once, never waited on; standard input may be
 * a pipe.  Errors name the file: MF_ENOTFOUND when it does not exist
 * ("cannot open: ..."), MF_EIO when it cannot be read, MF_ETOOBIG,
 * MF_ENOMEM.  *buf and *len are untouched on error.
 */
enum mf_rc mf_file_read(const char *path, size_t max, const char *what,
    char **buf, size_t *len, struct mf_error *err);
/*
 * mf_file_read for what a person names on the command line: path may
 * also be a stream, read to its end as cat(1) reads it (a named pipe,
 * waited on for its writer; the /dev/fd/N of a shell's process
 * substitution, "memfloor admit <(git show main:train.yaml)"); only a
 * directory is refused.
 */
enum mf_rc mf_input_read(const char *path, size_t max, const char *what,
    char **buf, size_t *len, struct mf_error *err);

#endif
