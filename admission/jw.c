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

static size_t
utf8_len(const unsigned char *s)
{
	return mf_jw_utf8_len((const char *)s);
}

size_t
mf_jw_utf8_len(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

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

/* Whether the n bytes at s, which has a NUL at s[n], are all plain: a
 * word at a time, the last word overlapping the one before. */
static int
plain(const char *s, size_t n)
{
	uint64_t a, b;
	uint32_t c, d;

	if (n >= 8) {
		for (size_t i = 0; i + 8 < n; i += 8) {
			memcpy(&a, s + i, 8);
			if (special8(a))
				return 0;
		}
		memcpy(&b, s + n - 8, 8);
		return !special8(b);
	}
	if (n >= 4) {
		memcpy(&c, s, 4);
		memcpy(&d, s + n - 4, 4);
		return !special8((uint64_t)c << 32 | d);
	}
	for (size_t i = 0; i < n; i++)
		if (!PLAIN((unsigned char)s[i]))
			return 0;
	return 1;
}

/* The bytes from s to end escaped at p, invalid UTF-8 replaced; returns
 * where they end. */
static char *
escaped(char *p, const char *s, const char *end)
{
	static const char hex[] = "0123456789abcdef";

	while (s < end) {
		unsigned char c = (unsigned char)*s;
		size_t u;

		if (PLAIN(c)) {
			*p++ = *s++;
			continue;
		}
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
	return p;
}

/* s, n bytes before its NUL, as a JSON string at p; returns where it
 * ends.  Nearly every string needs no escape and is copied whole. */
static char *
quoted(char *p, const char *s, size_t n)
{
	*p++ = '"';
	if (plain(s, n)) {
		memcpy(p, s, n);
		p += n;
	} else {
		p = escaped(p, s, s + n);
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
