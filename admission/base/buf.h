/*
 * buf.h: the text builder (after curl's dynbuf): a buffer that grows on
 * the heap up to a hard cap, or one over the caller's array (a formula, a
 * JSON Pointer, a line), cut to fit it.
 *
 * The first failure (past the cap, out of memory) is sticky: every later
 * append does nothing and returns it, so a writer checks rc once, at the
 * end.
 */
#ifndef MF_BUF_H
#define MF_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "err.h"
#include "str.h"

struct mf_buf {
	char *data; /* NUL-terminated once anything was added; owned */
	size_t len;
	size_t cap;
	size_t max;    /* the cap: appending past it fails with MF_ETOOBIG */
	enum mf_rc rc; /* first failure; later appends do nothing */
	int fixed;     /* over the caller's array (mf_buf_fixed) */
};

/* An empty buffer that may grow to max bytes.  Needs no free until used. */
void mf_buf_init(struct mf_buf *b, size_t max);
/*
 * An empty buffer over storage[0..size): it never grows, and what passes
 * its end is cut off (rc MF_ETOOBIG), the text always NUL-terminated.
 * size 0 (storage may be NULL) takes nothing.  Never taken; mf_buf_free
 * leaves storage alone.
 */
void mf_buf_fixed(struct mf_buf *b, char *storage, size_t size);
/* mf_buf_add's slow path: growing, the cap, a cut, a failure. */
enum mf_rc mf_buf_add_slow(struct mf_buf *b, const char *data, size_t len);

/* data[0..len) appended.  Inline: a JSON Pointer is put together of a
 * few pieces, a formula of a dozen. */
static inline enum mf_rc
mf_buf_add(struct mf_buf *b, const char *data, size_t len)
{
	if (b->rc != MF_OK || b->cap - b->len <= len)
		return mf_buf_add_slow(b, data, len);
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return MF_OK;
}

/* The NUL-terminated s. */
static inline enum mf_rc
mf_buf_str(struct mf_buf *b, const char *s)
{
	return mf_buf_add(b, s, strlen(s));
}
/* v in decimal ("%lld"), without printf. */
enum mf_rc mf_buf_int(struct mf_buf *b, int64_t v);
/*
 * v as printf's "%.{prec}g" writes it (1 <= prec <= 15), byte for byte,
 * without printf where the digits are plain: those of v scaled to prec
 * significant digits and rounded, unless v is too near a tie between two
 * roundings for a double's arithmetic to tell (then printf's exact ones).
 */
enum mf_rc mf_buf_g(struct mf_buf *b, double v, int prec);
enum mf_rc mf_buf_printf(struct mf_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Grow b for n more bytes and a NUL; mf_buf_room's slow path. */
char *mf_buf_grow(struct mf_buf *b, size_t n);

/*
 * Room for n more bytes and a NUL: where they go (data + len), or NULL
 * once the buffer has failed (rc says why).  The caller writes up to n
 * bytes there and calls mf_buf_done with where it stopped.  Inline: the
 * JSON writer asks for room for every member.
 */
static inline char *
mf_buf_room(struct mf_buf *b, size_t n)
{
	if (b->rc == MF_OK && b->cap - b->len > n)
		return b->data + b->len;
	return mf_buf_grow(b, n);
}

static inline void
mf_buf_done(struct mf_buf *b, char *end)
{
	b->len = (size_t)(end - b->data);
	*end = '\0';
}

/*
 * Hand the text to the caller (free() it) and leave the buffer empty; an
 * empty buffer gives "".  After a failure the text is freed and NULL
 * returned, so a caller needs no check of its own: rc still says why.  Not
 * for a fixed buffer, whose text is its storage.
 */
char *mf_buf_take(struct mf_buf *b);
void mf_buf_free(struct mf_buf *b);

#endif
