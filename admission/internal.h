/*
 * internal.h: what the library's modules share among themselves, and no
 * program outside admission/ and catalog/ uses (make lint checks that the
 * daemon and the command line do not include it).  Each module's public
 * API is in its own header.
 */
#ifndef MF_INTERNAL_H
#define MF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/*
 * int64 arithmetic that saturates to an error instead of wrapping, for the
 * estimate and the parameter counts.  -1 in means -1 out, so a chain of
 * operations reports one overflow at its end.
 */
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

/* Writes "parent.key" into buf (the dotted path of a field); returns buf. */
char *mf_path(char *buf, size_t size, const char *parent, const char *key);

/* The input error of a workload whose figures pass 2^63 - 1 (a 400 naming
 * spec.workload); returns MF_ERANGE. */
enum mf_rc mf_est_range_error(struct mf_error *err);

/* Whether the fixes of the set may be applied together: never lora and
 * qlora, and fsdp only for full fine-tuning. */
int mf_fix_compatible(unsigned fixes);

#endif
