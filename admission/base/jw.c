#include "jw.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <threads.h>

#include "str.h"

void
mf_jw_init_form(struct mf_jw *w, struct mf_buf *b, enum mf_jw_form form)
{
	memset(w, 0, sizeof(*w));
	w->b = b;
	w->form = form;
}

void
mf_jw_init(struct mf_jw *w, struct mf_buf *b)
{
	mf_jw_init_form(w, b, MF_JW_JSON);
}

/* Bytes quoted() may write for a string of n bytes: \u00XX or \ufffd
 * for each byte at worst, and the quotes. */
#define QUOTED_MAX(n) (6 * (n) + 2)

/* Copied as it is: printable ASCII but '"' and '\\' (JSON keeps DEL). */
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

/*
 * The code point of the valid UTF-8 sequence of u bytes at s when a YAML
 * reader would not take it as it is in a double-quoted scalar, else 0:
 * the C1 controls (NEL, U+0085, a line break to YAML 1.1, among them),
 * the line and paragraph separators, the byte order mark, U+FFFE, U+FFFF.
 */
static unsigned
yaml_unsafe(const unsigned char *s, size_t u)
{
	unsigned cp;

	if (u == 2 && s[0] == 0xc2 && s[1] < 0xa0)
		return s[1];
	if (u != 3)
		return 0;
	cp = (unsigned)(s[0] & 0x0f) << 12 | (unsigned)(s[1] & 0x3f) << 6 |
	    (s[2] & 0x3fu);
	if (cp == 0x2028 || cp == 0x2029 || cp == 0xfeff || cp >= 0xfffe)
		return cp;
	return 0;
}

/*
 * The n bytes at s, written at p; returns where they end.  A name or a
 * number is short: up to 32 bytes go as two moves of a fixed size that
 * overlap (the last ending at n), not as a call.
 */
static inline char *
copy(char *p, const char *s, size_t n)
{
	if (n >= 16 && n <= 32) {
		memcpy(p, s, 16);
		memcpy(p + n - 16, s + n - 16, 16);
	} else if (n >= 8 && n < 16) {
		memcpy(p, s, 8);
		memcpy(p + n - 8, s + n - 8, 8);
	} else if (n >= 4 && n < 8) {
		memcpy(p, s, 4);
		memcpy(p + n - 4, s + n - 4, 4);
	} else if (n > 0 && n < 4) {
		p[0] = s[0];
		p[n / 2] = s[n / 2];
		p[n - 1] = s[n - 1];
	} else {
		memcpy(p, s, n);
	}
	return p + n;
}

static char *
uescape(char *p, unsigned cp)
{
	static const char hex[] = "0123456789abcdef";

	memcpy(p, "\\u", 2);
	p[2] = hex[cp >> 12 & 15];
	p[3] = hex[cp >> 8 & 15];
	p[4] = hex[cp >> 4 & 15];
	p[5] = hex[cp & 15];
	return p + 6;
}

/* The bytes from s to end escaped at p, invalid UTF-8 replaced; returns
 * where they end.  yaml also escapes what YAML does not take raw. */
static char *
escaped(char *p, const char *s, const char *end, int yaml)
{
	while (s < end) {
		unsigned char c = (unsigned char)*s;
		size_t u;

		if (PLAIN(c) && !(yaml && c == 0x7f)) {
			*p++ = *s++;
			continue;
		}
		if (c >= 0x80) {
			const unsigned char *us = (const unsigned char *)s;
			unsigned cp;

			/* Input cut mid-character, or never UTF-8: U+FFFD. */
			u = mf_utf8_len(us);
			cp = u == 0 ? 0xfffd : yaml ? yaml_unsafe(us, u) : 0;
			if (cp != 0)
				p = uescape(p, cp);
			else
				p = copy(p, s, u);
			s += u == 0 ? 1 : u;
			continue;
		}
		if (c == '"' || c == '\\' || c == '\n') {
			*p++ = '\\';
			*p++ = c == '\n' ? 'n' : (char)c;
		} else {
			p = uescape(p, c);
		}
		s++;
	}
	return p;
}

/* Whether s, n bytes before its NUL, is written between its quotes as it
 * is: nearly every string is. */
static inline int
as_is(const struct mf_jw *w, const char *s, size_t n)
{
	return plain(s, n) &&
	    !(w->form == MF_JW_YAML && memchr(s, 0x7f, n) != NULL);
}

/* The bytes quoted() writes at most for s, as_is(s) being raw. */
static size_t
quoted_room(size_t n, int raw)
{
	return raw ? n + 2 : QUOTED_MAX(n);
}

/* s, n bytes before its NUL, as a quoted string at p; raw is as_is(s).
 * Returns where it ends. */
static char *
quoted(const struct mf_jw *w, char *p, const char *s, size_t n, int raw)
{
	*p++ = '"';
	if (raw) {
		p = copy(p, s, n);
	} else {
		p = escaped(p, s, s + n, w->form == MF_JW_YAML);
	}
	*p++ = '"';
	return p;
}

/* A key that YAML reads back as the same string without quotes. */
static int
plain_key(const char *k, size_t n)
{
	static const char *const words[] = { "true", "false", "null", "yes",
		"no", "on", "off" };

	if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z')))
		return 0;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasecmp(k, words[i]) == 0)
			return 0;
	return strspn(k,
	           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/") ==
	    n;
}

/* A member's name: its bytes (NULL: none), their length, whether they
 * go between quotes as they are. */
struct key {
	const char *s;
	size_t n;
	int raw;
};

/* A source's name claims to be plain; where the sanitizers are on, the
 * claim is checked. */
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
#define CHECK_SOURCE_NAME(s, n) \
	assert(plain(s, n) && memchr(s, 0x7f, n) == NULL)
#else
#define CHECK_SOURCE_NAME(s, n) ((void)0)
#endif

/* The name s of n bytes, or MF_JW_MEASURE: measured and checked. */
static inline struct key
name(const struct mf_jw *w, const char *s, size_t n)
{
	if (s == NULL)
		return (struct key){ NULL, 0, 1 };
	if (n != MF_JW_MEASURE) {
		CHECK_SOURCE_NAME(s, n);
		return (struct key){ s, n, 1 };
	}
	n = strlen(s);
	return (struct key){ s, n, as_is(w, s, n) };
}

/* --- JSON ---------------------------------------------------------- */

/*
 * Every JSON member starts here: room for the separator, the name and
 * value more bytes, with the separator and the name written.  NULL once
 * the buffer has failed.
 */
static inline char *
jmember(struct mf_jw *w, struct key k, size_t value)
{
	char *p = mf_buf_room(w->b, 1 + quoted_room(k.n, k.raw) + 1 + value);

	if (p == NULL)
		return NULL;
	*p = ',';
	p += w->comma;
	w->comma = 1;
	if (k.s != NULL) {
		p = quoted(w, p, k.s, k.n, k.raw);
		*p++ = ':';
	}
	return p;
}

/* --- YAML ---------------------------------------------------------- */

/*
 * A level's first member follows its header: nothing at the document's
 * top (marked by this indent; its members are at column 0), "key:" (the
 * member starts a new line) or, for a mapping in a sequence, "-" (the
 * first member goes on the dash's line).
 */
#define YAML_TOP (-1)

/* Room YAML may need beyond JSON's: "---\n", the indent, "- ", "\n". */
#define YAML_EXTRA(indent) ((size_t)(indent) + 16)

/*
 * Every YAML member starts here: the document marker once, what ends the
 * parent's header before its first member, the indent, and "key:" or "-".
 * *top is set for a value at the document's top, which takes no space
 * before it.  NULL once the buffer has failed.
 */
static char *
ymember(struct mf_jw *w, struct key k, size_t value, int *top)
{
	int d = w->depth, ind, first;
	char *p;

	assert(d <= MF_JW_DEPTH);
	ind = d > 0 ? w->indent[d - 1] : 0;
	p = mf_buf_room(w->b,
	    YAML_EXTRA(ind < 0 ? 0 : ind) + QUOTED_MAX(k.n) + 1 + value);
	*top = d == 0;
	if (p == NULL)
		return NULL;
	if (!w->started) {
		p = copy(p, "---\n", 4);
		w->started = 1;
	}
	if (d == 0)
		return p;
	first = w->count[d - 1]++ == 0;
	if (ind == YAML_TOP) {
		ind = 0;
	} else if (first && w->brace[d - 1] == '{' && d >= 2 &&
	    w->brace[d - 2] == '[') {
		/* A mapping in a sequence: its first member after "- ". */
		*p++ = ' ';
		ind = 0;
	} else if (first) {
		*p++ = '\n';
	}
	memset(p, ' ', (size_t)ind);
	p += ind;
	if (w->brace[d - 1] == '[') {
		*p++ = '-';
	} else if (k.s != NULL && plain_key(k.s, k.n)) {
		p = copy(p, k.s, k.n);
		*p++ = ':';
	} else {
		p = quoted(w, p, k.s != NULL ? k.s : "", k.n, k.raw);
		*p++ = ':';
	}
	return p;
}

/* --- both ---------------------------------------------------------- */

/* A YAML member's start and the space before its value: out of line, so
 * that JSON's, nearly every answer, is inlined at each call. */
static __attribute__((noinline)) char *
ymember_value(struct mf_jw *w, struct key key, size_t value)
{
	int top;
	char *p = ymember(w, key, value + 2, &top);

	if (p != NULL && !top)
		*p++ = ' ';
	return p;
}

/* Room for value bytes after the member's name, written; NULL on
 * failure.  The value follows what is returned; mf_jw_end ends it. */
static inline char *
member(struct mf_jw *w, struct key key, size_t value)
{
	if (w->form == MF_JW_JSON)
		return jmember(w, key, value);
	return ymember_value(w, key, value);
}

/* The member's value ends at p. */
static void
end(struct mf_jw *w, char *p)
{
	if (w->form == MF_JW_YAML)
		*p++ = '\n';
	mf_buf_done(w->b, p);
}

void
mf_jw_open_n(struct mf_jw *w, const char *key, size_t n, char brace)
{
	int d = w->depth, top = 0;
	char *p;

	assert(d < MF_JW_DEPTH);
	if (d >= MF_JW_DEPTH) {
		if (w->b->rc == MF_OK)
			w->b->rc = MF_EINVAL;
		w->depth++;
		return;
	}
	if (w->form == MF_JW_JSON) {
		/* JSON keeps no level's state: its brace says it all. */
		p = jmember(w, name(w, key, n), 1);
		w->depth++;
		if (p == NULL)
			return;
		*p++ = brace;
		w->comma = 0;
		mf_buf_done(w->b, p);
		return;
	}
	p = ymember(w, name(w, key, n), 0, &top);
	w->count[d] = 0;
	w->brace[d] = brace;
	/* Members two columns in from their parent's; the top's at 0. */
	w->indent[d] = d == 0 ?
	    YAML_TOP :
	    (w->indent[d - 1] < 0 ? 0 : w->indent[d - 1]) + 2;
	w->depth++;
	if (p != NULL)
		mf_buf_done(w->b, p);
}

void
mf_jw_close(struct mf_jw *w, char brace)
{
	int d = --w->depth;
	char *p;

	if (d >= MF_JW_DEPTH)
		return;
	p = mf_buf_room(w->b, 4);
	if (p == NULL)
		return;
	if (w->form == MF_JW_JSON) {
		*p++ = brace;
		w->comma = 1;
	} else if (w->count[d] == 0) {
		/* An empty one: "{}" or "[]" where its members would go. */
		if (w->indent[d] != YAML_TOP)
			*p++ = ' ';
		*p++ = brace == '}' ? '{' : '[';
		*p++ = brace;
		*p++ = '\n';
	}
	mf_buf_done(w->b, p);
}

/* The string s of len bytes, a NUL at s[len], as a member. */
static inline void
string(struct mf_jw *w, struct key key, const char *s, size_t len)
{
	int raw = as_is(w, s, len);
	char *p = member(w, key, quoted_room(len, raw));

	if (p != NULL)
		end(w, quoted(w, p, s, len, raw));
}

void
mf_jw_str_n(struct mf_jw *w, const char *key, size_t n, const char *s)
{
	if (s != NULL)
		string(w, name(w, key, n), s, strlen(s));
	else
		mf_jw_null_n(w, key, n);
}

void
mf_jw_text_n(struct mf_jw *w, const char *key, size_t n, const char *s,
    size_t len)
{
	string(w, name(w, key, n), s, len);
}

void
mf_jw_text_begin(struct mf_jw *w, const char *key, size_t n, size_t max,
    struct mf_buf *text)
{
	char *p = member(w, name(w, key, n), max + 2);

	if (p == NULL) {
		mf_buf_fixed(text, NULL, 0);
		return;
	}
	*p++ = '"';
	mf_buf_fixed(text, p, max + 1);
}

void
mf_jw_text_end(struct mf_jw *w, const struct mf_buf *text)
{
	char *p;

	/* Nothing was begun: the writer had failed. */
	if (text->data == NULL)
		return;
	CHECK_SOURCE_NAME(text->data, text->len);
	p = text->data + text->len;
	*p++ = '"';
	end(w, p);
}

/* The eight bytes at s as a big-endian number. */
static uint64_t
be64(const unsigned char *s)
{
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t v;

	memcpy(&v, s, 8);
	return __builtin_bswap64(v);
#else
	uint64_t v = 0;

	for (int k = 0; k < 8; k++)
		v = v << 8 | s[k];
	return v;
#endif
}

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The two characters of every 12 bits, made once: half the lookups. */
static char b64_pairs[4096][2];
static once_flag b64_once = ONCE_FLAG_INIT;

static void
make_pairs(void)
{
	for (size_t i = 0; i < 4096; i++) {
		b64_pairs[i][0] = b64[(i >> 6) & 63];
		b64_pairs[i][1] = b64[i & 63];
	}
}

void
mf_jw_base64(struct mf_jw *w, const char *key, const void *data, size_t size)
{
	const unsigned char *s = data;
	size_t n = size;
	char *p = member(w, name(w, key, MF_JW_MEASURE), 4 * ((n + 2) / 3) + 2);
	size_t i = 0;
	uint64_t six;
	uint32_t v;

	if (p == NULL)
		return;
	call_once(&b64_once, make_pairs);
	*p++ = '"';
	/* Six bytes at a time, read as the top of a big-endian word of
	 * eight, twelve bits a lookup; then three. */
	for (; n - i >= 8; i += 6, p += 8) {
		six = be64(s + i);
		memcpy(p, b64_pairs[six >> 52], 2);
		memcpy(p + 2, b64_pairs[(six >> 40) & 4095], 2);
		memcpy(p + 4, b64_pairs[(six >> 28) & 4095], 2);
		memcpy(p + 6, b64_pairs[(six >> 16) & 4095], 2);
	}
	for (; n - i >= 3; i += 3, p += 4) {
		v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		p[0] = b64[(v >> 18) & 63];
		p[1] = b64[(v >> 12) & 63];
		p[2] = b64[(v >> 6) & 63];
		p[3] = b64[v & 63];
	}
	if (i < n) {
		v = (uint32_t)s[i] << 16 |
		    (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
		p[0] = b64[(v >> 18) & 63];
		p[1] = b64[(v >> 12) & 63];
		p[2] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		p[3] = '=';
		p += 4;
	}
	*p++ = '"';
	end(w, p);
}

/* A number's text, already formatted at [s, e), as a member. */
static inline void
number(struct mf_jw *w, struct key key, const char *s, const char *e)
{
	char *at = member(w, key, (size_t)(e - s));

	if (at != NULL)
		end(w, copy(at, s, (size_t)(e - s)));
}

void
mf_jw_int_n(struct mf_jw *w, const char *key, size_t n, int64_t v)
{
	char buf[24], *p, *e = buf + sizeof(buf);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	p = mf_digits(u, e);
	if (v < 0)
		*--p = '-';
	number(w, name(w, key, n), p, e);
}

void
mf_jw_num_n(struct mf_jw *w, const char *key, size_t n, double v, int decimals)
{
	static const double scale[] = { 1, 10, 100, 1e3, 1e4, 1e5, 1e6 };
	static const uint64_t uscale[] = { 1, 10, 100, 1000, 10000, 100000,
		1000000 };
	char buf[48], *p, *e = buf + sizeof(buf);
	uint64_t units, whole, frac;
	double a;
	int d = decimals < 0 ? 0 : decimals > 6 ? 6 : decimals;

	assert((size_t)d < sizeof(scale) / sizeof(scale[0]));
	assert((size_t)d < sizeof(uscale) / sizeof(uscale[0]));

	if (!isfinite(v) || fabs(v) * scale[d] > 9e15) {
		int len =
		    snprintf(buf, sizeof(buf), "%.17g", isfinite(v) ? v : 0);

		number(w, name(w, key, n), buf, buf + len);
		return;
	}
	/* llround's, halves away from zero: under 2^53, a's fraction is
	 * exact. */
	a = fabs(v) * scale[d];
	units = (uint64_t)a;
	units += a - (double)units >= 0.5;
	whole = units / uscale[d];
	frac = units % uscale[d];
	while (d > 1 && frac % 10 == 0) {
		frac /= 10;
		d--;
	}
	/* The d decimals, or one, so the number reads as a real. */
	p = mf_digits(frac, e);
	while (e - p < d)
		*--p = '0';
	*--p = '.';
	p = mf_digits(whole, p);
	if (v < 0 && units != 0)
		*--p = '-';
	number(w, name(w, key, n), p, e);
}

void
mf_jw_bool_n(struct mf_jw *w, const char *key, size_t n, int v)
{
	char *p = member(w, name(w, key, n), 5);

	if (p != NULL)
		end(w, v ? copy(p, "true", 4) : copy(p, "false", 5));
}

void
mf_jw_qty_n(struct mf_jw *w, const char *key, size_t n, int64_t bytes,
    enum mf_qty_format format)
{
	char q[MF_QTY_STRMAX];
	size_t len = mf_qty_format(bytes, format, q, sizeof(q));

	/* MF_QTY_STRMAX holds any quantity (qty.h). */
	assert(len < sizeof(q));
	mf_jw_text_n(w, key, n, q, len);
}

void
mf_jw_null_n(struct mf_jw *w, const char *key, size_t n)
{
	char *p = member(w, name(w, key, n), 4);

	if (p != NULL)
		end(w, copy(p, "null", 4));
}

void
mf_jw_json_members(struct mf_jw *w, const char *text, size_t len)
{
	char *p;

	assert(w->form == MF_JW_JSON);
	if (w->form != MF_JW_JSON) {
		if (w->b->rc == MF_OK)
			w->b->rc = MF_EINVAL;
		return;
	}
	p = mf_buf_room(w->b, 1 + len);
	if (p == NULL)
		return;
	*p = ',';
	p += w->comma;
	w->comma = 1;
	memcpy(p, text, len);
	mf_buf_done(w->b, p + len);
}

enum mf_rc
mf_jw_finish(struct mf_jw *w)
{
	if (w->form == MF_JW_JSON)
		mf_buf_add(w->b, "\n", 1);
	return w->b->rc;
}
