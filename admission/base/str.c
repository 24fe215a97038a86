#include "str.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

char *
mf_copy(char *dst, size_t size, const char *src)
{
	size_t n;

	/* Many a copy is of "": no call for it. */
	if (src[0] == '\0') {
		dst[0] = '\0';
		return dst;
	}
	n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
	return dst;
}

char *
mf_digits_long(uint64_t v, char *end)
{
	/* Two digits a division. */
	static const char pairs[] = "00010203040506070809"
	                            "10111213141516171819"
	                            "20212223242526272829"
	                            "30313233343536373839"
	                            "40414243444546474849"
	                            "50515253545556575859"
	                            "60616263646566676869"
	                            "70717273747576777879"
	                            "80818283848586878889"
	                            "90919293949596979899";

	/* Four digits a 64-bit division, their two pairs in 32 bits. */
	while (v >= 10000) {
		uint32_t four = (uint32_t)(v % 10000);

		v /= 10000;
		end -= 4;
		memcpy(end, pairs + 2 * (four / 100), 2);
		memcpy(end + 2, pairs + 2 * (four % 100), 2);
	}
	while (v >= 100) {
		const char *d = pairs + 2 * (v % 100);

		v /= 100;
		*--end = d[1];
		*--end = d[0];
	}
	if (v >= 10) {
		assert(2 * v + 1 < sizeof(pairs));
		*--end = pairs[2 * v + 1];
		*--end = pairs[2 * v];
	} else {
		*--end = (char)('0' + v);
	}
	return end;
}

/* |v| < 2^53 times 100, rounded half to even: v is m x 2^-s exactly,
 * m a whole number below 2^53, so m x 100 fits in 60 bits and what the
 * division by 2^s leaves decides the rounding. */
static uint64_t
hundredths(double v)
{
	int ex, s;
	uint64_t m, q, rem, half;

	m = (uint64_t)ldexp(frexp(fabs(v), &ex), 53) * 100;
	s = 53 - ex;
	if (s >= 64) /* below 2^-11: m x 100 < 2^60 <= half */
		return 0;
	if (s <= 0) /* a whole number of 2^52 or more */
		return m;
	q = m >> s;
	rem = m & ((UINT64_C(1) << s) - 1);
	half = UINT64_C(1) << (s - 1);
	return q + (rem > half || (rem == half && (q & 1)));
}

size_t
mf_cents(double v, char *buf, size_t size)
{
	char text[32], *end = text + sizeof(text) - 1, *p;
	uint64_t c;

	if (!(fabs(v) < 0x1p53))
		return (size_t)snprintf(buf, size, "%.2f", v);
	c = hundredths(v);
	*end = '\0';
	/* The two decimals after a 1, which the point then takes. */
	p = mf_digits(c % 100 + 100, end);
	*p = '.';
	p = mf_digits(c / 100, p);
	if (signbit(v))
		*--p = '-';
	mf_copy(buf, size, p);
	return (size_t)(end - p);
}

static int
cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

size_t
mf_utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return cont(s[1]) ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if (!cont(s[1]) || !cont(s[2]) ||
		    (s[0] == 0xe0 && s[1] < 0xa0) ||
		    (s[0] == 0xed && s[1] > 0x9f))
			return 0;
		return 3;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if (!cont(s[1]) || !cont(s[2]) || !cont(s[3]) ||
		    (s[0] == 0xf0 && s[1] < 0x90) ||
		    (s[0] == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

void
mf_utf8_fix(char *s)
{
	unsigned char *p = (unsigned char *)s;
	size_t n;

	while (*p != '\0') {
		n = mf_utf8_len(p);
		if (n == 0)
			*p++ = '?';
		else
			p += n;
	}
}

void
mf_scrub(char *s, size_t n)
{
	for (char *p = s; p < s + n; p++)
		if (((unsigned char)*p < 0x20 && *p != '\n' && *p != '\t') ||
		    *p == 0x7f)
			*p = '?';
}
