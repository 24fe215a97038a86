/*
 * checked.h: int64 arithmetic that saturates to an error instead of
 * wrapping, for the estimate and the parameter counts.  -1 in means -1
 * out, so a chain of operations reports one overflow at its end.
 */
#ifndef MF_CHECKED_H
#define MF_CHECKED_H

#include <stdint.h>

/* a * b, or -1 when either is negative or the product passes 2^63 - 1. */
static inline int64_t
mf_cmul(int64_t a, int64_t b)
{
	int64_t r;

	if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r))
		return -1;
	return r;
}

/* a + b, or -1 when either is negative or the sum passes 2^63 - 1. */
static inline int64_t
mf_cadd(int64_t a, int64_t b)
{
	int64_t r;

	if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r))
		return -1;
	return r;
}

#endif
