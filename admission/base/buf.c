#include "buf.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
mf_buf_init(struct mf_buf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

void
mf_buf_fixed(struct mf_buf *b, char *storage, size_t size)
{
	memset(b, 0, sizeof(*b));
	b->data = storage;
	b->cap = b->max = size;
	b->fixed = 1;
	if (size == 0)
		b->rc = MF_ETOOBIG;
	else
		storage[0] = '\0';
}

/* What of data[0..len) fits a fixed buffer that is full past it. */
static void
cut(struct mf_buf *b, const char *data, size_t len)
{
	size_t room = b->max - 1 - b->len;

	if (len > room)
		len = room;
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

static enum mf_rc
reserve(struct mf_buf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->rc != MF_OK)
		return b->rc;
	if (more >= b->max - b->len || b->len + more + 1 > b->max)
		return b->rc = MF_ETOOBIG;
	if (b->len + more + 1 <= b->cap)
		return MF_OK;
	/* Most answers fit the first allocation. */
	cap = b->cap ? b->cap : 1024;
	while (cap < b->len + more + 1)
		cap *= 2;
	if (cap > b->max)
		cap = b->max;
	p = realloc(b->data, cap);
	if (p == NULL)
		return b->rc = MF_ENOMEM;
	b->data = p;
	b->cap = cap;
	return MF_OK;
}

enum mf_rc
mf_buf_add_slow(struct mf_buf *b, const char *data, size_t len)
{
	if (b->rc != MF_OK)
		return b->rc;
	if (reserve(b, len) != MF_OK) {
		if (b->fixed)
			cut(b, data, len);
		return b->rc;
	}
	/* Room now: the fast path's copy. */
	return mf_buf_add(b, data, len);
}

enum mf_rc
mf_buf_int(struct mf_buf *b, int64_t v)
{
	char d[24], *end = d + sizeof(d), *s;

	s = mf_digits(v < 0 ? 0 - (uint64_t)v : (uint64_t)v, end);
	if (v < 0)
		*--s = '-';
	return mf_buf_add(b, s, (size_t)(end - s));
}

char *
mf_buf_grow(struct mf_buf *b, size_t n)
{
	return reserve(b, n) == MF_OK ? b->data + b->len : NULL;
}

enum mf_rc
mf_buf_printf(struct mf_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->rc != MF_OK)
		return b->rc;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return b->rc = MF_EINVAL;
	if (reserve(b, (size_t)n) != MF_OK) {
		if (b->fixed && b->rc == MF_ETOOBIG && b->len < b->max) {
			va_start(ap, fmt);
			vsnprintf(b->data + b->len, b->max - b->len, fmt, ap);
			va_end(ap);
			b->len = b->max - 1;
		}
		return b->rc;
	}
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return MF_OK;
}

char *
mf_buf_take(struct mf_buf *b)
{
	char *p = b->data;

	assert(!b->fixed);
	if (b->rc != MF_OK) {
		mf_buf_free(b);
		return NULL;
	}
	if (p == NULL)
		p = calloc(1, 1);
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

void
mf_buf_free(struct mf_buf *b)
{
	if (b->fixed)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
