/*
 * jw.h: a writer of answers straight into a struct mf_buf, as JSON or as
 * block-style YAML, behind the same calls.
 *
 * The answers on the request path are written with this rather than
 * built as a jansson tree and dumped: it allocates nothing but the
 * output buffer and formats numbers without printf.  Every call takes the
 * member name (NULL inside arrays and at the top); a buffer failure is
 * sticky in the mf_buf's rc.  Each write takes room in the buffer for its
 * worst case (a string with anything to escape, at six bytes a byte) and
 * writes in place, so a write near the buffer's cap may fail although it
 * would have fitted.
 *
 * YAML is one document ("---" first), two spaces an indent, keys plain
 * when YAML reads them back as the same string and double-quoted
 * otherwise, strings always double-quoted.  A double-quoted YAML scalar
 * takes JSON's escapes; YAML also escapes what a YAML 1.1 or 1.2 reader
 * would not take as it is (DEL, the C1 controls NEL among them, U+2028,
 * U+2029, U+FEFF, U+FFFE and U+FFFF), so the YAML reads back as the JSON
 * does.  An empty mapping or sequence is written "{}" or "[]".
 */
#ifndef MF_JW_H
#define MF_JW_H

#include <stdint.h>

#include "buf.h"

/* Deepest nesting the writer keeps; an answer nests six levels at most.
 * Opening deeper is a programmer error: asserted, and the buffer fails
 * with MF_EINVAL where asserts are off. */
#define MF_JW_DEPTH 16

enum mf_jw_form { MF_JW_JSON, MF_JW_YAML };

struct mf_jw {
	struct mf_buf *b;
	enum mf_jw_form form;
	int depth;
	int started;            /* YAML: the document's first line is out */
	int count[MF_JW_DEPTH]; /* members written at each open level */
	char brace[MF_JW_DEPTH];
	int indent[MF_JW_DEPTH]; /* YAML: the column of the level's members */
};

/* A JSON writer; mf_jw_init_form for either form. */
void mf_jw_init(struct mf_jw *w, struct mf_buf *b);
void mf_jw_init_form(struct mf_jw *w, struct mf_buf *b, enum mf_jw_form form);
/* '{' or '[' */
void mf_jw_open(struct mf_jw *w, const char *key, char brace);
void mf_jw_close(struct mf_jw *w, char brace);
/* NULL s writes null. */
void mf_jw_str(struct mf_jw *w, const char *key, const char *s);
/* The n bytes at data as a string in base64 (RFC 4648, padded): how
 * Kubernetes takes bytes in JSON. */
void mf_jw_base64(struct mf_jw *w, const char *key, const void *data, size_t n);
void mf_jw_int(struct mf_jw *w, const char *key, int64_t v);
/* v rounded to decimals places, trailing zeros dropped ("32.4", "12.0"). */
void mf_jw_num(struct mf_jw *w, const char *key, double v, int decimals);
void mf_jw_bool(struct mf_jw *w, const char *key, int v);
void mf_jw_null(struct mf_jw *w, const char *key);
/* End the document: JSON gets its closing newline (YAML lines have
 * theirs).  Returns the buffer's rc. */
enum mf_rc mf_jw_finish(struct mf_jw *w);

#endif
