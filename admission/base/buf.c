#include "buf.h"

#include <assert.h>
#include <math.h>
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

/* 10^i, exact in a double for i <= 22. */
static const double pow10_exact[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
	1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
	1e20, 1e21, 1e22 };
#define POW10_MAX ((int)(sizeof(pow10_exact) / sizeof(pow10_exact[0])) - 1)

/* |v| scaled by 10^-shift (|shift| <= POW10_MAX). */
static double
scaled(double a, int shift)
{
	int at = shift >= 0 ? shift : -shift;

	assert(at <= POW10_MAX);
	return shift >= 0 ? a / pow10_exact[at] : a * pow10_exact[at];
}

/* floor(log10(a)) of a > 0, or one less: from its binary exponent, a
 * in [2^e, 2^(e+1)), floor(e log10 2), without log10.  e x 78913 / 2^18
 * is that floor for 0 <= e <= 1650 (Ryu's log10Pow2, ulfjack/ryu,
 * ryu/common.h), and for -1100 <= e < 0 too (checked against exact
 * arithmetic, every exponent a double has); a subnormal's e comes from
 * frexp. */
static int
decimal_exponent(double a)
{
	uint64_t bits;
	int e;
	int32_t x;

	memcpy(&bits, &a, sizeof(bits));
	e = (int32_t)(bits >> 52 & 0x7ff) - 1023;
	if (e == -1023) {
		(void)frexp(a, &e);
		e--;
	}
	x = e * 78913;
	/* floor division by 2^18, negative x included. */
	return x >= 0 ? x >> 18 : -((-x + (1 << 18) - 1) >> 18);
}

/*
 * The prec significant digits of a > 0 (*digits, in [10^(prec-1),
 * 10^prec)) and its decimal exponent (*exp), rounded to nearest; 0 when
 * a double's arithmetic cannot be sure of them (a tie too near to call,
 * or a scale past the exact powers of ten).
 */
static int
g_digits(double a, int prec, uint64_t *digits, int *exp)
{
	double lo, m, r;
	int e = decimal_exponent(a);

	assert(prec >= 1 && prec - 1 <= POW10_MAX);
	lo = pow10_exact[prec - 1];

	for (int tries = 0; tries < 2; tries++) {
		if (e - prec + 1 > POW10_MAX || prec - 1 - e > POW10_MAX)
			return 0;
		m = scaled(a, e - prec + 1);
		if (m >= lo && m < 10 * lo)
			break;
		e += m < lo ? -1 : 1;
	}
	if (!(m >= lo && m < 10 * lo))
		return 0;
	/* m < 10^15: its integer part is exact as an integer. */
	r = (double)(int64_t)m;
	/* m is a / 10^k rounded once (10^k is exact): within an ulp of
	 * the true quotient; nearer .5 than a few ulps, printf's exact
	 * arithmetic decides. */
	if (fabs(m - r - 0.5) < 1e-9 + m * 1e-15)
		return 0;
	r += m - r > 0.5;
	if (r >= 10 * lo) {
		r = lo;
		e++;
	}
	*digits = (uint64_t)r;
	*exp = e;
	return 1;
}

/* "e+XX" or "e-XX", two digits at least, as printf writes it; a
 * double's decimal exponent has three at most. */
static char *
g_exponent(char *p, int e)
{
	unsigned a = (unsigned)(e < 0 ? -e : e);

	assert(a < 1000);
	*p++ = 'e';
	*p++ = e < 0 ? '-' : '+';
	if (a >= 100)
		*p++ = (char)('0' + a / 100);
	*p++ = (char)('0' + a / 10 % 10);
	*p++ = (char)('0' + a % 10);
	return p;
}

enum mf_rc
mf_buf_g(struct mf_buf *b, double v, int prec)
{
	char d[24], *end = d + sizeof(d), *s, out[48], *p = out;
	uint64_t digits;
	int e, n, point;

	assert(prec >= 1 && prec <= 15);
	if (v == 0 || !isfinite(v) || !g_digits(fabs(v), prec, &digits, &e))
		return mf_buf_printf(b, "%.*g", prec, v);
	s = mf_digits(digits, end);
	/* %g drops the fraction's trailing zeros. */
	for (n = prec; n > 1 && s[n - 1] == '0'; n--)
		;
	if (v < 0)
		*p++ = '-';
	/* Fixed when -4 <= e < prec, else exponential (C11 7.21.6.1). */
	point = e < -4 || e >= prec ? 0 : e;
	if (point < 0) {
		memcpy(p, "0.0000", (size_t)(1 - point));
		p += 1 - point;
	}
	for (int i = 0; i < n || i <= point; i++) {
		if (i == point + 1 && point >= 0)
			*p++ = '.';
		*p++ = i < n ? s[i] : '0';
	}
	if (e < -4 || e >= prec)
		p = g_exponent(p, e);
	return mf_buf_add(b, out, (size_t)(p - out));
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
