/*
 * doc_scan.h: the JSON reader's scanners (doc_json.c, doc_skim.c), and
 * nothing outside them uses: runs of blank space and of string text found
 * 16 bytes at a time with SSE2 (every x86-64 has it), else 8 at a time in
 * a word; MF_DOC_SWAR builds the word loops alone, to test them where
 * SSE2 is.  In line: the reader calls them for every token.
 */
#ifndef MF_DOC_SCAN_H
#define MF_DOC_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__) && defined(__GNUC__) && !defined(MF_DOC_SWAR)
#include <emmintrin.h>
#define MF_SCAN_SSE2 1
#endif

/* The index, in memory order, of the first byte of a word whose top bit
 * is set in m (not 0). */
static inline size_t
mf_scan_first_marked(uint64_t m)
{
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (size_t)__builtin_ctzll(m) / 8;
#elif defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return (size_t)__builtin_clzll(m) / 8;
#else
	unsigned char b[8];
	size_t i = 0;

	memcpy(b, &m, 8);
	while ((b[i] & 0x80) == 0)
		i++;
	return i;
#endif
}

/*
 * Runs the reader skips a word or a block at a time: the spaces of an
 * indentation, and the text of a string up to a quote, a backslash, a
 * control character or a byte of UTF-8.  A mark is a byte that ends the
 * run: of eight in a word, its top bit (one above the first may be set
 * wrongly, by a borrow; the first is exact); of sixteen, one bit each, the
 * first byte's lowest.
 */
enum mf_scan_run { MF_RUN_SPACES, MF_RUN_PLAIN };

static inline uint64_t
mf_scan_mark8(enum mf_scan_run r, uint64_t x)
{
	const uint64_t ones = 0x0101010101010101u, high = ones * 0x80,
	               low = ~high;
	uint64_t q, b, t;

	if (r == MF_RUN_SPACES) {
		/* The top bit of each byte that is not a space. */
		t = x ^ (ones * ' ');
		return (((t & low) + low) | t) & high;
	}
	q = x ^ (ones * '"');
	b = x ^ (ones * '\\');
	return ((x - ones * 0x20) | (q - ones) | (b - ones) | x) & high;
}

#ifdef MF_SCAN_SSE2
static inline unsigned
mf_scan_mark16(enum mf_scan_run r, const char *p)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);

	if (r == MF_RUN_SPACES)
		return ~(unsigned)_mm_movemask_epi8(
		           _mm_cmpeq_epi8(x, _mm_set1_epi8(' '))) &
		    0xffffu;
	/* Compared as signed bytes, those from 0x80 are below ' ' too. */
	return (unsigned)_mm_movemask_epi8(
	    _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
	                     _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
	        _mm_cmplt_epi8(x, _mm_set1_epi8(' '))));
}
#endif

/* Whether c goes on a run of kind r. */
static inline int
mf_scan_in_run(enum mf_scan_run r, unsigned char c)
{
	if (r == MF_RUN_SPACES)
		return c == ' ';
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* Where the run of kind r from p ends: 16 bytes at a time with SSE2, 8 in
 * a word, then the last few one by one. */
static inline const char *
mf_scan_run_end(enum mf_scan_run r, const char *p, const char *end)
{
	uint64_t w, m;

#ifdef MF_SCAN_SSE2
	unsigned m16;

	while (end - p >= 16) {
		m16 = mf_scan_mark16(r, p);
		if (m16 != 0)
			return p + __builtin_ctz(m16);
		p += 16;
	}
#endif
	while (end - p >= 8) {
		memcpy(&w, p, 8);
		m = mf_scan_mark8(r, w);
		if (m != 0)
			return p + mf_scan_first_marked(m);
		p += 8;
	}
	while (p < end && mf_scan_in_run(r, (unsigned char)*p))
		p++;
	return p;
}

/* Where the spaces at p end: indented JSON has long runs of them. */
static inline const char *
mf_scan_spaces(const char *p, const char *end)
{
	return mf_scan_run_end(MF_RUN_SPACES, p, end);
}

/* Where the run of printable ASCII without '"' or '\\' from p ends. */
static inline const char *
mf_scan_plain(const char *p, const char *end)
{
	return mf_scan_run_end(MF_RUN_PLAIN, p, end);
}

/*
 * Where the blank space at p ends, the long way (mf_scan_blank's).  Out of
 * line, as few tokens need it, and static, a copy in each file that calls
 * it: a call within the file lets GCC keep its callers' registers that it
 * does not use (-fipa-ra); the reader's hot loops ran 1% more instructions
 * when it was in doc_scan.c.
 */
static __attribute__((noinline, unused)) const char *
mf_scan_blank_run(const char *p, const char *end)
{
	while (p < end && (unsigned char)*p <= ' ') {
		if (*p == ' ')
			p = mf_scan_spaces(p, end);
		else if (*p == '\n' || *p == '\r' || *p == '\t')
			p++;
		else
			break;
	}
	return p;
}

/* Where the blank space at p ends.  Most tokens follow the last with none
 * or one space between ("key": value), or, indented, a newline and
 * spaces: those cost no loop but the one over the spaces. */
static inline const char *
mf_scan_blank(const char *p, const char *end)
{
	if (p < end && (unsigned char)*p > ' ')
		return p;
	if (end - p >= 2 && *p == ' ' && (unsigned char)p[1] > ' ')
		return p + 1;
	if (p < end && *p == '\n') {
		p = mf_scan_spaces(p + 1, end);
		if (p < end && (unsigned char)*p > ' ')
			return p;
	}
	return mf_scan_blank_run(p, end);
}

/* The character the escape \\c of one character stands for, or 0 when
 * \\c is not one (\\u takes four hex digits). */
static inline char
mf_scan_short_escape(char c)
{
	switch (c) {
	case '"':
	case '\\':
	case '/':
		return c;
	case 'b':
		return '\b';
	case 'f':
		return '\f';
	case 'n':
		return '\n';
	case 'r':
		return '\r';
	case 't':
		return '\t';
	default:
		return 0;
	}
}

/* Length of the valid UTF-8 sequence (RFC 3629) at s, before end; 0 if
 * there is none. */
size_t mf_scan_utf8(const unsigned char *s, const unsigned char *end);

/* One \u escape (p after the 'u', before end), a surrogate pair whole,
 * into *c: where the text goes on, or NULL when it is not a valid one (or
 * stands for U+0000). */
const char *mf_scan_unicode(const char *p, const char *end, uint32_t *c);

#endif
