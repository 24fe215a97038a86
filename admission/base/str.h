/*
 * str.h: the string helpers every module shares: bounded copies, decimal
 * digits, UTF-8 checks and the cleaning of text that came from a client.
 */
#ifndef MF_STR_H
#define MF_STR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* src into dst, a buffer of size bytes (> 0): cut to fit, always
 * NUL-terminated.  Returns dst. */
char *mf_copy(char *dst, size_t size, const char *src);

/* Whether a and b are the same string.  In line, their first bytes
 * compared before any call: the names a list is searched for mostly differ
 * there. */
static inline int
mf_streq(const char *a, const char *b)
{
	return a[0] == b[0] && strcmp(a, b) == 0;
}

/* mf_digits out of line, for any v; mf_digits calls it for 10 and up. */
char *mf_digits_long(uint64_t v, char *end);

/* The decimal digits of v, written so they end just before end; returns
 * where they start.  Numbers are written often enough to skip printf, and
 * one digit (a count, a whole part below ten) often enough to be in line. */
static inline char *
mf_digits(uint64_t v, char *end)
{
	if (v >= 10)
		return mf_digits_long(v, end);
	*--end = (char)('0' + v);
	return end;
}

/*
 * v as printf's "%.2f" writes it, into buf of size (> 0) bytes, cut to fit
 * and NUL-terminated; returns the whole text's length, as snprintf.  Below
 * 2^53 (every price and cost) in whole numbers: v's exact binary value
 * times 100, rounded half to even, as printf rounds it.
 */
size_t mf_cents(double v, char *buf, size_t size);

/*
 * Length of the valid UTF-8 sequence (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF) at s, or 0.  s is NUL-terminated, and
 * a NUL ends the checks before they read past it.
 */
size_t mf_utf8_len(const unsigned char *s);

/* Replace every byte of s that does not start a valid UTF-8 sequence with
 * '?', in place: text quoted from input may be cut mid-character. */
void mf_utf8_fix(char *s);

/* Replace every control character of s[0..n) but newline and tab (a NUL
 * too), and DEL, with '?', in place: text a terminal shows. */
void mf_scrub(char *s, size_t n);

#endif
