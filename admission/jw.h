/*
 * jw.h: a JSON writer straight into a struct mf_buf.
 *
 * The answers on the request path are written with this rather than
 * built as a jansson tree and dumped: it allocates nothing but the
 * output buffer and formats numbers without printf.  Every call takes the
 * member name (NULL inside arrays and at the top); a buffer failure is
 * sticky in the mf_buf's rc.  Each write takes room in the buffer for its
 * worst case (a string escaped at six bytes a byte) and writes in place,
 * so a write near the buffer's cap may fail although it would have fitted.
 */
#ifndef MF_JW_H
#define MF_JW_H

#include <stdint.h>

#include "buf.h"

#define MF_JW_DEPTH 16

struct mf_jw {
	struct mf_buf *b;
	int depth;
	int count[MF_JW_DEPTH]; /* members written at each open level */
};

void mf_jw_init(struct mf_jw *w, struct mf_buf *b);
/* Length of the valid UTF-8 sequence (RFC 3629) at s, or 0 when it is
 * not one.  s is NUL-terminated; a NUL ends the checks before they read
 * past it. */
size_t mf_jw_utf8_len(const char *s);
/* '{' or '[' */
void mf_jw_open(struct mf_jw *w, const char *key, char brace);
void mf_jw_close(struct mf_jw *w, char brace);
/* NULL s writes null. */
void mf_jw_str(struct mf_jw *w, const char *key, const char *s);
void mf_jw_int(struct mf_jw *w, const char *key, int64_t v);
/* v rounded to decimals places, trailing zeros dropped ("32.4", "12.0"). */
void mf_jw_num(struct mf_jw *w, const char *key, double v, int decimals);
void mf_jw_bool(struct mf_jw *w, const char *key, int v);
void mf_jw_null(struct mf_jw *w, const char *key);

#endif
