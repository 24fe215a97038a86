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
#include "qty.h"

/* Deepest nesting the writer keeps; an answer nests six levels at most.
 * Opening deeper is a programmer error: asserted, and the buffer fails
 * with MF_EINVAL where asserts are off. */
#define MF_JW_DEPTH 16

enum mf_jw_form { MF_JW_JSON, MF_JW_YAML };

struct mf_jw {
	struct mf_buf *b;
	enum mf_jw_form form;
	int depth;
	int started;             /* YAML: the document's first line is out */
	int comma;               /* JSON: the next member follows another */
	int count[MF_JW_DEPTH];  /* YAML: members written at each open level */
	char brace[MF_JW_DEPTH]; /* YAML: each open level's { or [ */
	int indent[MF_JW_DEPTH]; /* YAML: the column of the level's members */
};

/* A JSON writer; mf_jw_init_form for either form. */
void mf_jw_init(struct mf_jw *w, struct mf_buf *b);
void mf_jw_init_form(struct mf_jw *w, struct mf_buf *b, enum mf_jw_form form);

/*
 * Each call below takes the member's name as key and n: key's length,
 * its bytes written between quotes as they are (a name of the source:
 * printable ASCII but '"', '\\' and DEL, checked where the sanitizers
 * are on, as curl's DEBUGASSERT), or MF_JW_MEASURE: measured and escaped
 * as need be.  The calls without the _n take any name, measured; the
 * calls with _lit take a string literal, its length taken at compile time.
 */
#define MF_JW_MEASURE SIZE_MAX

/* '{' or '[' */
void mf_jw_open_n(struct mf_jw *w, const char *key, size_t n, char brace);
void mf_jw_close(struct mf_jw *w, char brace);
/* NULL s writes null. */
void mf_jw_str_n(struct mf_jw *w, const char *key, size_t n, const char *s);
/* s of len bytes, a NUL at s[len], as mf_jw_str_n: text just formatted,
 * whose length is known. */
void mf_jw_text_n(struct mf_jw *w, const char *key, size_t n, const char *s,
    size_t len);
/*
 * A string member whose text the caller makes in place: text, a fixed
 * buffer (buf.h) over the writer's own of max bytes, takes it, and
 * mf_jw_text_end ends the member.  Nothing else is written to w between
 * the two.  For text of the caller's own making, printable ASCII but '"',
 * '\\' and DEL (checked where the sanitizers are on), which goes between
 * the quotes as it is; past max it is cut, as a fixed buffer cuts.
 */
void mf_jw_text_begin(struct mf_jw *w, const char *key, size_t n, size_t max,
    struct mf_buf *text);
void mf_jw_text_end(struct mf_jw *w, const struct mf_buf *text);
/* The size bytes at data as a string in base64 (RFC 4648, padded): how
 * Kubernetes takes bytes in JSON. */
void
mf_jw_base64(struct mf_jw *w, const char *key, const void *data, size_t size);
void mf_jw_int_n(struct mf_jw *w, const char *key, size_t n, int64_t v);
/* v rounded to decimals places, trailing zeros dropped ("32.4", "12.0"). */
void
mf_jw_num_n(struct mf_jw *w, const char *key, size_t n, double v, int decimals);
void mf_jw_bool_n(struct mf_jw *w, const char *key, size_t n, int v);
/* bytes as a quantity string in format (qty.h: "80Gi", "24G"). */
void mf_jw_qty_n(struct mf_jw *w, const char *key, size_t n, int64_t bytes,
    enum mf_qty_format format);
void mf_jw_null_n(struct mf_jw *w, const char *key, size_t n);
/*
 * JSON only: members that a JSON writer made beforehand, len bytes of
 * "name":value separated by commas, written as they are after the members
 * before them: text made once for many answers (a card's, catalog.h).  A
 * YAML writer is a programmer error: asserted, and its buffer fails with
 * MF_EINVAL where asserts are off.
 */
void mf_jw_json_members(struct mf_jw *w, const char *text, size_t len);

static inline void
mf_jw_open(struct mf_jw *w, const char *key, char brace)
{
	mf_jw_open_n(w, key, MF_JW_MEASURE, brace);
}

static inline void
mf_jw_str(struct mf_jw *w, const char *key, const char *s)
{
	mf_jw_str_n(w, key, MF_JW_MEASURE, s);
}

static inline void
mf_jw_int(struct mf_jw *w, const char *key, int64_t v)
{
	mf_jw_int_n(w, key, MF_JW_MEASURE, v);
}

static inline void
mf_jw_num(struct mf_jw *w, const char *key, double v, int decimals)
{
	mf_jw_num_n(w, key, MF_JW_MEASURE, v, decimals);
}

/* A figure that may not be known: v, or null where v is negative. */
static inline void
mf_jw_int_known(struct mf_jw *w, const char *key, int64_t v)
{
	if (v < 0)
		mf_jw_null_n(w, key, MF_JW_MEASURE);
	else
		mf_jw_int_n(w, key, MF_JW_MEASURE, v);
}

static inline void
mf_jw_bool(struct mf_jw *w, const char *key, int v)
{
	mf_jw_bool_n(w, key, MF_JW_MEASURE, v);
}

static inline void
mf_jw_null(struct mf_jw *w, const char *key)
{
	mf_jw_null_n(w, key, MF_JW_MEASURE);
}

/* The same with a literal key ("" key fails to compile for anything else). */
#define MF_JW_LIT(key) "" key, sizeof(key) - 1
#define mf_jw_open_lit(w, key, brace) mf_jw_open_n(w, MF_JW_LIT(key), brace)
#define mf_jw_str_lit(w, key, s) mf_jw_str_n(w, MF_JW_LIT(key), s)
#define mf_jw_text_lit(w, key, s, len) mf_jw_text_n(w, MF_JW_LIT(key), s, len)
#define mf_jw_int_lit(w, key, v) mf_jw_int_n(w, MF_JW_LIT(key), v)
#define mf_jw_num_lit(w, key, v, decimals) \
	mf_jw_num_n(w, MF_JW_LIT(key), v, decimals)
#define mf_jw_bool_lit(w, key, v) mf_jw_bool_n(w, MF_JW_LIT(key), v)
#define mf_jw_qty_lit(w, key, bytes, format) \
	mf_jw_qty_n(w, MF_JW_LIT(key), bytes, format)
#define mf_jw_null_lit(w, key) mf_jw_null_n(w, MF_JW_LIT(key))

/* End the document: JSON gets its closing newline (YAML lines have
 * theirs).  Returns the buffer's rc. */
enum mf_rc mf_jw_finish(struct mf_jw *w);

#endif
