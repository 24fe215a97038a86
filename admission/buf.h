/*
 * buf.h: a growing text buffer with a hard cap (after curl's dynbuf).
 *
 * The first failure (past the cap, out of memory) is sticky: every later
 * append does nothing and returns it, so a writer checks rc once, at the
 * end.
 */
#ifndef MF_BUF_H
#define MF_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "str.h"

struct mf_buf {
	char *data; /* NUL-terminated once anything was added; owned */
	size_t len;
	size_t cap;
	size_t max;    /* the cap: appending past it fails with MF_ETOOBIG */
	enum mf_rc rc; /* first failure; later appends do nothing */
};

/* An empty buffer that may grow to max bytes.  Needs no free until used. */
void mf_buf_init(struct mf_buf *b, size_t max);
enum mf_rc mf_buf_add(struct mf_buf *b, const char *data, size_t len);
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
 * returned, so a caller needs no check of its own: rc still says why.
 */
char *mf_buf_take(struct mf_buf *b);
void mf_buf_free(struct mf_buf *b);

#endif
