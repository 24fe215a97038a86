/*
 * terms.c: sums of coef x symbol terms and the formula text written from
 * them, shared by the estimators (estimate.c, forward.c): a bucket's bytes
 * and its formula come from the same terms, so they cannot disagree.
 */
#include <assert.h>
#include <string.h>

#include "estimate.h"
#include "../base/internal.h"
#include "../base/str.h"

void
mf_term(struct mf_terms *t, int64_t coef, const char *sym, int64_t value)
{
	assert(t->n >= 0 && t->n <= MF_MAX_TERMS);
	for (int i = 0; i < t->n; i++)
		if (mf_streq(t->sym[i], sym)) {
			t->coef[i] += coef;
			return;
		}
	if (t->n == MF_MAX_TERMS)
		return;
	t->coef[t->n] = coef;
	t->value[t->n] = value;
	t->sym[t->n] = sym;
	t->n++;
}

int64_t
mf_terms_bytes(const struct mf_terms *t)
{
	int64_t add = 0, sub = 0;

	assert(t->n >= 0 && t->n <= MF_MAX_TERMS);
	/* The checked sums take no negative operand: the terms subtracted
	 * are summed apart. */
	for (int i = 0; i < t->n; i++) {
		if (t->coef[i] < 0)
			sub = mf_cadd(sub, mf_cmul(-t->coef[i], t->value[i]));
		else
			add = mf_cadd(add, mf_cmul(t->coef[i], t->value[i]));
	}
	return mf_cless(add, sub);
}

int64_t
mf_max_poisoned(int64_t a, int64_t b)
{
	if (a < 0 || b < 0)
		return -1;
	return a > b ? a : b;
}

void
mf_text_init(struct mf_text *f, char *buf)
{
	mf_buf_fixed(&f->b, buf, buf != NULL ? MF_FORMULA_MAX : 0);
}

void
mf_text_str(struct mf_text *f, const char *s)
{
	if (f->b.data != NULL)
		mf_buf_str(&f->b, s);
}

void
mf_text_int(struct mf_text *f, int64_t v)
{
	if (f->b.data != NULL)
		mf_buf_int(&f->b, v);
}

void
mf_text_around(char *buf, const char *before, const char *after)
{
	char was[MF_FORMULA_MAX];
	struct mf_text f;

	if (buf == NULL)
		return;
	memcpy(was, buf, sizeof(was));
	mf_text_init(&f, buf);
	mf_text_str(&f, before);
	mf_text_str(&f, was);
	mf_text_str(&f, after);
}

void
mf_text_terms(struct mf_text *f, const struct mf_terms *t)
{
	int first = 1;

	assert(t->n >= 0 && t->n <= MF_MAX_TERMS);
	if (f->b.data == NULL)
		return;
	/* Symbols first, in the order added, the constant last. */
	for (int j = 0; j < 2 * t->n; j++) {
		int i = j % t->n;

		assert(i < MF_MAX_TERMS);
		if (t->coef[i] == 0 || (j < t->n) != (t->sym[i][0] != '\0'))
			continue;
		if (t->coef[i] < 0)
			mf_text_str(f, first ? "-" : " - ");
		else if (!first)
			mf_text_str(f, " + ");
		first = 0;
		mf_text_int(f, t->coef[i] < 0 ? -t->coef[i] : t->coef[i]);
		mf_text_str(f, t->sym[i]);
	}
	if (first)
		mf_text_str(f, "0");
}
