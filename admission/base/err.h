/*
 * err.h: return codes and input errors shared by every memfloor module.
 *
 * Fallible functions return an enum mf_rc (0 = MF_OK).  Codes are
 * append-only.  Functions that fail on bad input also fill a struct
 * mf_error with what a user needs to fix it: the file, the field path, the
 * problem, and the line and column where the input was YAML.  Errors stay
 * parts until the edge that shows them.
 */
#ifndef MF_ERR_H
#define MF_ERR_H

#include <stdarg.h>
#include <stddef.h>

enum mf_rc {
	MF_OK = 0,
	MF_EINVAL,    /* the input is wrong; the mf_error says where and why */
	MF_ENOMEM,    /* an allocation failed */
	MF_ETOOBIG,   /* the input exceeds a hard cap (size, depth, count) */
	MF_ENOTFOUND, /* a named thing (model, file) does not exist */
	MF_EIO,       /* reading a file failed; errno-style text in mf_error */
	MF_ERANGE     /* a figure does not fit in 63 bits */
};

/*
 * An input error as parts, formatted once by whoever talks to the user
 * (mf_error_message).  Every part may be empty or 0.
 */
struct mf_error {
	char file[128];  /* the file the input came from; "" for a request */
	char field[128]; /* dotted path such as "spec.resources.gpu.count" */
	char text[320];  /* the problem, without field or position */
	int line; /* 1-based; 0 when not known (JSON input, computed values) */
	int column; /* 1-based; 0 when not known */
};

/* Longest formatted message, terminator included. */
#define MF_ERROR_MAX 640

/* Text for a return code; never NULL. */
const char *mf_strerror(enum mf_rc rc);

/*
 * Fill err (which may be NULL: then nothing happens) with field (NULL:
 * none), the position and the text, and return rc; file is cleared.
 */
enum mf_rc
mf_error_set(struct mf_error *err, enum mf_rc rc, const char *field, int line,
    int column, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* mf_error_set with the text's arguments in ap, for a function of its own
 * arguments (fmt, ...) that says where the error is; ap is used up. */
enum mf_rc mf_error_vset(struct mf_error *err, enum mf_rc rc, const char *field,
    int line, int column, const char *fmt, va_list ap)
    __attribute__((format(printf, 6, 0)));

/* Say which file err is about (NULL err: nothing); returns rc. */
enum mf_rc
mf_error_in_file(struct mf_error *err, enum mf_rc rc, const char *file);

/*
 * The message a user reads, into buf (size bytes; MF_ERROR_MAX holds any):
 * "FILE:LINE: FIELD: TEXT" for an error in a file (as compilers and
 * `memfloord -n` say it), else "FIELD: TEXT (line L, column C)" for a
 * request body, leaving out what is unknown.  Returns buf.
 */
char *mf_error_message(const struct mf_error *err, char *buf, size_t size);

#endif
