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

/* Appends are most of the writer's work: copy in place when there is
 * room, and leave growth and caps to mf_buf_add. */
static void
put(struct mf_jw *w, const char *s, size_t n)
{
	struct mf_buf *b = w->b;

	if (b->rc == MF_OK && b->cap - b->len > n) {
		memcpy(b->data + b->len, s, n);
		b->len += n;
		b->data[b->len] = '\0';
		return;
	}
	mf_buf_add(b, s, n);
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

static void
quoted(struct mf_jw *w, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *run = s;
	char esc[7];

	put(w, "\"", 1);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		size_t n;

		if (c >= 0x80) {
			/* Input cut mid-character, or never UTF-8. */
			n = utf8_len((const unsigned char *)s);
			if (n > 0) {
				s += n - 1;
				continue;
			}
			put(w, run, (size_t)(s - run));
			put(w, "\\ufffd", 6);
			run = s + 1;
			continue;
		}
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		put(w, run, (size_t)(s - run));
		run = s + 1;
		esc[0] = '\\';
		if (c == '"' || c == '\\') {
			esc[1] = (char)c;
			put(w, esc, 2);
		} else if (c == '\n') {
			put(w, "\\n", 2);
		} else {
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			put(w, esc, 6);
		}
	}
	put(w, run, (size_t)(s - run));
	put(w, "\"", 1);
}

/* The separator and the member name, if any. */
static void
member(struct mf_jw *w, const char *key)
{
	char head[80];
	size_t n = 0, k;

	if (w->depth > 0 && w->count[w->depth - 1]++ > 0)
		head[n++] = ',';
	if (key == NULL) {
		put(w, head, n);
		return;
	}
	/* Member names are short ASCII literals: one append for the lot. */
	for (k = 0; key[k] != '\0'; k++) {
		unsigned char c = (unsigned char)key[k];

		if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\')
			break;
	}
	if (key[k] == '\0' && k + 4 < sizeof(head)) {
		head[n++] = '"';
		memcpy(head + n, key, k);
		n += k;
		head[n++] = '"';
		head[n++] = ':';
		put(w, head, n);
		return;
	}
	put(w, head, n);
	quoted(w, key);
	put(w, ":", 1);
}

void
mf_jw_open(struct mf_jw *w, const char *key, char brace)
{
	member(w, key);
	put(w, &brace, 1);
	if (w->depth < MF_JW_DEPTH)
		w->count[w->depth] = 0;
	w->depth++;
}

void
mf_jw_close(struct mf_jw *w, char brace)
{
	w->depth--;
	put(w, &brace, 1);
}

void
mf_jw_str(struct mf_jw *w, const char *key, const char *s)
{
	member(w, key);
	if (s == NULL)
		put(w, "null", 4);
	else
		quoted(w, s);
}

void
mf_jw_int(struct mf_jw *w, const char *key, int64_t v)
{
	char buf[24], *p;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	member(w, key);
	p = mf_digits(u, buf + sizeof(buf));
	if (v < 0)
		*--p = '-';
	put(w, p, (size_t)(buf + sizeof(buf) - p));
}

void
mf_jw_num(struct mf_jw *w, const char *key, double v, int decimals)
{
	static const double scale[] = { 1, 10, 100, 1e3, 1e4, 1e5, 1e6 };
	char buf[48], *p, *end = buf + sizeof(buf);
	uint64_t units, whole, frac;
	int d = decimals < 0 ? 0 : decimals > 6 ? 6 : decimals;

	member(w, key);
	if (!isfinite(v) || fabs(v) * scale[d] > 9e15) {
		int n =
		    snprintf(buf, sizeof(buf), "%.17g", isfinite(v) ? v : 0);

		put(w, buf, (size_t)n);
		return;
	}
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
	put(w, p, (size_t)(end - p));
}

void
mf_jw_bool(struct mf_jw *w, const char *key, int v)
{
	member(w, key);
	put(w, v ? "true" : "false", v ? 4 : 5);
}

void
mf_jw_null(struct mf_jw *w, const char *key)
{
	member(w, key);
	put(w, "null", 4);
}
