#include "jw.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void
mf_jw_init(struct mf_jw *w, struct mf_buf *b)
{
	memset(w, 0, sizeof(*w));
	w->b = b;
}

/* Length of the valid UTF-8 sequence at s (RFC 3629), or 0.  s is
 * NUL-terminated, and a NUL ends the checks before they read past it. */
static size_t
utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[0] == 0xe0 && s[1] < 0xa0) ||
		    (s[0] == 0xed && s[1] > 0x9f))
			return 0;
		return 3;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[3] & 0xc0) != 0x80 || (s[0] == 0xf0 && s[1] < 0x90) ||
		    (s[0] == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

/* Bytes quoted() may write for a string of n bytes: \u00XX or \ufffd
 * for each byte at worst, and the quotes. */
#define QUOTED_MAX(n) (6 * (n) + 2)

/* Copied as it is: printable ASCII but '"' and '\\'. */
#define PLAIN(c) ((c)-0x20u < 0x60u && (c) != '"' && (c) != '\\')

/*
 * Whether any of the eight bytes in x needs more than a copy: a control
 * character, '"', '\\' or a byte of a UTF-8 sequence.  Once no byte has
 * its high bit set, no subtraction below borrows from its neighbour.
 */
static int
special8(uint64_t x)
{
	const uint64_t ones = 0x0101010101010101u, high = ones * 0x80;
	uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');

	return ((x - ones * 0x20) | (q - ones) | (b - ones) | x) & high ? 1 : 0;
}

/* s, n bytes before its NUL, as a JSON string at p; returns where it
 * ends. */
static char *
quoted(char *p, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const char *end = s + n;
	uint64_t x;

	*p++ = '"';
	for (;;) {
		unsigned char c;
		size_t u;

		/* Plain text eight bytes at a time, then byte by byte. */
		while (end - s >= 8) {
			memcpy(&x, s, 8);
			if (special8(x))
				break;
			memcpy(p, &x, 8);
			p += 8;
			s += 8;
		}
		while (s < end && PLAIN((unsigned char)*s))
			*p++ = *s++;
		if (s == end)
			break;
		c = (unsigned char)*s;
		if (c >= 0x80) {
			/* Input cut mid-character, or never UTF-8. */
			u = utf8_len((const unsigned char *)s);
			if (u == 0) {
				memcpy(p, "\\ufffd", 6);
				p += 6;
				s++;
			}
			while (u-- > 0)
				*p++ = *s++;
			continue;
		}
		*p++ = '\\';
		if (c == '"' || c == '\\') {
			*p++ = (char)c;
		} else if (c == '\n') {
			*p++ = 'n';
		} else {
			memcpy(p, "u00", 3);
			p[3] = hex[c >> 4];
			p[4] = hex[c & 15];
			p += 5;
		}
		s++;
	}
	*p++ = '"';
	return p;
}

/*
 * Every member starts here: room for the separator, the name and value
 * more bytes, with the separator and the name written.  NULL once the
 * buffer has failed.
 */
static char *
member(struct mf_jw *w, const char *key, size_t value)
{
	size_t k = key != NULL ? strlen(key) : 0;
	char *p = mf_buf_room(w->b, 1 + QUOTED_MAX(k) + 1 + value);

	if (p == NULL)
		return NULL;
	if (w->depth > 0 && w->count[w->depth - 1]++ > 0)
		*p++ = ',';
	if (key != NULL) {
		p = quoted(p, key, k);
		*p++ = ':';
	}
	return p;
}

/* The n bytes at s, written at p; returns where they end. */
static char *
copy(char *p, const char *s, size_t n)
{
	while (n-- > 0)
		*p++ = *s++;
	return p;
}

void
mf_jw_open(struct mf_jw *w, const char *key, char brace)
{
	char *p = member(w, key, 1);

	if (w->depth < MF_JW_DEPTH)
		w->count[w->depth] = 0;
	w->depth++;
	if (p == NULL)
		return;
	*p++ = brace;
	mf_buf_done(w->b, p);
}

void
mf_jw_close(struct mf_jw *w, char brace)
{
	char *p = mf_buf_room(w->b, 1);

	w->depth--;
	if (p == NULL)
		return;
	*p++ = brace;
	mf_buf_done(w->b, p);
}

void
mf_jw_str(struct mf_jw *w, const char *key, const char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;
	char *p = member(w, key, s != NULL ? QUOTED_MAX(n) : 4);

	if (p == NULL)
		return;
	mf_buf_done(w->b, s != NULL ? quoted(p, s, n) : copy(p, "null", 4));
}

void
mf_jw_int(struct mf_jw *w, const char *key, int64_t v)
{
	char buf[24], *p, *end = buf + sizeof(buf), *at;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	p = mf_digits(u, end);
	if (v < 0)
		*--p = '-';
	at = member(w, key, (size_t)(end - p));
	if (at != NULL)
		mf_buf_done(w->b, copy(at, p, (size_t)(end - p)));
}

void
mf_jw_num(struct mf_jw *w, const char *key, double v, int decimals)
{
	static const double scale[] = { 1, 10, 100, 1e3, 1e4, 1e5, 1e6 };
	char buf[48], *p, *end = buf + sizeof(buf), *at;
	uint64_t units, whole, frac;
	int d = decimals < 0 ? 0 : decimals > 6 ? 6 : decimals;

	if (!isfinite(v) || fabs(v) * scale[d] > 9e15) {
		int n =
		    snprintf(buf, sizeof(buf), "%.17g", isfinite(v) ? v : 0);

		p = buf;
		end = buf + n;
	} else {
		units = (uint64_t)llround(fabs(v) * scale[d]);
		whole = units / (uint64_t)scale[d];
		frac = units % (uint64_t)scale[d];
		while (d > 1 && frac % 10 == 0) {
			frac /= 10;
			d--;
		}
		/* At least one decimal, so the number reads as a real. */
		p = end;
		for (int i = 0; i < (d > 0 ? d : 1); i++, frac /= 10)
			*--p = (char)('0' + frac % 10);
		*--p = '.';
		p = mf_digits(whole, p);
		if (v < 0 && units != 0)
			*--p = '-';
	}
	at = member(w, key, (size_t)(end - p));
	if (at != NULL)
		mf_buf_done(w->b, copy(at, p, (size_t)(end - p)));
}

void
mf_jw_bool(struct mf_jw *w, const char *key, int v)
{
	char *p = member(w, key, 5);

	if (p != NULL)
		mf_buf_done(w->b, v ? copy(p, "true", 4) : copy(p, "false", 5));
}

void
mf_jw_null(struct mf_jw *w, const char *key)
{
	char *p = member(w, key, 4);

	if (p != NULL)
		mf_buf_done(w->b, copy(p, "null", 4));
}
