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

#include "buf.h"
#include "err.h"

/*
 * int64 arithmetic that saturates to an error instead of wrapping, for the
 * estimate and the parameter counts.  -1 in means -1 out, so a chain of
 * operations reports one overflow at its end.
 */
enum mf_cop { MF_COP_MUL, MF_COP_ADD };

/* a op b, or -1 when either is negative or the result passes 2^63 - 1. */
static inline int64_t
mf_checked(enum mf_cop op, int64_t a, int64_t b)
{
	int64_t r;
	int over = op == MF_COP_MUL ? __builtin_mul_overflow(a, b, &r) :
	                              __builtin_add_overflow(a, b, &r);

	return a < 0 || b < 0 || over ? -1 : r;
}

static inline int64_t
mf_cmul(int64_t a, int64_t b)
{
	return mf_checked(MF_COP_MUL, a, b);
}

static inline int64_t
mf_cadd(int64_t a, int64_t b)
{
	return mf_checked(MF_COP_ADD, a, b);
}

/* a less b, 0 where b is the more; -1 when either is negative. */
static inline int64_t
mf_cless(int64_t a, int64_t b)
{
	if (a < 0 || b < 0)
		return -1;
	return a > b ? a - b : 0;
}

/*
 * The reference count of an immutable snapshot (the catalogue, the model
 * set), a plain int the GCC/Clang __atomic builtins give the semantics of
 * an atomic counter.  Taking a reference needs no ordering; the
 * release-acquire on the last drop makes every write to the snapshot
 * visible to the thread that frees it.
 */
static inline void
mf_ref_take(int *refs)
{
	__atomic_add_fetch(refs, 1, __ATOMIC_RELAXED);
}

/* Drop a reference: 1 when it was the last, and the caller frees. */
static inline int
mf_ref_drop(int *refs)
{
	return __atomic_sub_fetch(refs, 1, __ATOMIC_ACQ_REL) == 0;
}

/*
 * The NULL-accepting x_ref and x_unref of a snapshot p with an int refs:
 * MF_REF(p) takes a reference and is p; MF_UNREF(p) drops one and is 1
 * when it was the last, for the caller to free p.  p is evaluated more
 * than once: pass a plain variable.
 */
#define MF_REF(p) ((p) != NULL ? (mf_ref_take(&(p)->refs), (p)) : NULL)
#define MF_UNREF(p) ((p) != NULL && mf_ref_drop(&(p)->refs))

/* Writes "parent.key" into buf (the dotted path of a field); returns buf. */
char *mf_path(char *buf, size_t size, const char *parent, const char *key);

/* The input error of a workload an estimate or a placement refused with
 * rc, naming spec.workload: its figures pass 2^63 - 1 (MF_ERANGE), a
 * figure lies outside its field's bounds (MF_EINVAL: the manifest's
 * reader refuses those first), or memory ran out; returns rc. */
enum mf_rc mf_est_error(enum mf_rc rc, struct mf_error *err);

/* Whether the fixes of the set may be applied together: never lora and
 * qlora, nor int8 and int4; fsdp never with qlora; count never
 * with fsdp or tensor, which choose their own counts. */
int mf_fix_compatible(unsigned fixes);

/*
 * A sum of terms coef x symbol, each symbol's value given (terms.c): the
 * bytes are the sum of coef x value, the text "16h + 8I + 4ad + 8", terms
 * with a zero coefficient left out.  A term past MF_MAX_TERMS is dropped,
 * which the formula tests would see.
 */
#define MF_MAX_TERMS 16

struct mf_terms {
	int n;
	int64_t coef[MF_MAX_TERMS];
	int64_t value[MF_MAX_TERMS];
	const char *sym[MF_MAX_TERMS]; /* "" for a constant */
};

/* Add coef x sym (of value value), to the term of sym if there is one. */
void mf_term(struct mf_terms *t, int64_t coef, const char *sym, int64_t value);
/* Sum of coef x value, checked: -1 past 2^63 - 1; the terms of a
 * negative coef subtracted, 0 where they take more than the rest. */
int64_t mf_terms_bytes(const struct mf_terms *t);
/* The larger of a and b; -1 when either is. */
int64_t mf_max_poisoned(int64_t a, int64_t b);

/* Formula text into a buffer of MF_FORMULA_MAX bytes (estimate.h): buf.h's
 * builder over it, cut short past its room; a NULL buffer takes nothing. */
struct mf_text {
	struct mf_buf b;
};

void mf_text_init(struct mf_text *f, char *buf);
void mf_text_str(struct mf_text *f, const char *s);
void mf_text_int(struct mf_text *f, int64_t v);
/* The terms as "16h + 8I + 8" (a negative coef as " - 2I"): symbols in
 * the order added, then the constant; "0" when none. */
void mf_text_terms(struct mf_text *f, const struct mf_terms *t);
/* The formula in buf (MF_FORMULA_MAX bytes; NULL takes nothing) written
 * again between before and after: "PP x (" it ")". */
void mf_text_around(char *buf, const char *before, const char *after);

#endif
