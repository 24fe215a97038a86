/*
 * err.h: return codes and input errors shared by every memfloor module.
 *
 * Fallible functions return an enum mf_rc (0 = MF_OK).  Codes are
 * append-only.  Functions that fail on bad input also fill a struct
 * mf_error with what a user needs to fix it: the field path, a sentence,
 * and the line and column where the input was YAML.
 */
#ifndef MF_ERR_H
#define MF_ERR_H

enum mf_rc {
	MF_OK = 0,
	MF_EINVAL,    /* the input is wrong; the mf_error says where and why */
	MF_ENOMEM,    /* an allocation failed */
	MF_ETOOBIG,   /* the input exceeds a hard cap (size, depth, count) */
	MF_ENOTFOUND, /* a named thing (model, file) does not exist */
	MF_EIO,       /* reading a file failed; errno-style text in mf_error */
	MF_ERANGE     /* a figure does not fit in 63 bits */
};

struct mf_error {
	char field[128];   /* dotted path such as "spec.resources.gpu.count"; ""
	                      if none */
	char message[320]; /* a whole sentence, starting with the field when
	                      there is one */
	int line; /* 1-based; 0 when not known (JSON input, computed values) */
	int column; /* 1-based; 0 when not known */
};

/* Text for a return code; never NULL. */
const char *mf_strerror(enum mf_rc rc);

/*
 * Fill err (which may be NULL: then nothing happens) and return rc.  The
 * message becomes "FIELD: TEXT" (or just TEXT when field is NULL or empty),
 * followed by " (line L, column C)" when line > 0.
 */
enum mf_rc
mf_error_set(struct mf_error *err, enum mf_rc rc, const char *field, int line,
    int column, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#endif
