/*
 * formula.h: the value of a formula an estimate writes, for the tests that
 * check a formula against its bytes (test_estimate.c, test_forward.c).
 */
#ifndef MF_TEST_FORMULA_H
#define MF_TEST_FORMULA_H

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate.h"

/*
 * A formula's value: numbers, the symbols of design 5 and estimate.c,
 * juxtaposition and "x" for products, "/", "+", parentheses, max(a, b,
 * ...), ceil(a).  " (fp32)" is a note, not arithmetic.
 */
struct sym {
	const char *name;
	double value;
};

/* The symbols of a model's shapes, which every formula may use. */
#define MODEL_SYMS(m) \
	{ "h", (double)(m)->hidden }, { "L", (double)(m)->layers }, \
	    { "V", (double)(m)->vocab }, { "a", (double)(m)->heads }, \
	    { "kv", (double)(m)->kv_heads }, { "d", (double)(m)->head_dim }, \
	    { "I", (double)(m)->intermediate }, \
	    { "Ie", (double)mf_model_expert_width(m) }, \
	    { "Is", (double)(m)->shared_intermediate }, \
	    { "E", (double)(m)->experts }, \
	{ \
		"k", (double)(m)->experts_per_tok \
	}

struct expr {
	const char *p;
	const struct sym *syms;
	size_t nsyms;
	int bad;
};

static double sum(struct expr *x);

static void
skip_spaces(struct expr *x)
{
	while (*x->p == ' ')
		x->p++;
}

static double
factor(struct expr *x)
{
	double v;
	size_t i, best = 0, n;

	skip_spaces(x);
	if (strncmp(x->p, "ceil(", 5) == 0) {
		x->p += 5;
		v = ceil(sum(x));
		x->bad |= *x->p != ')';
		x->p++;
		return v;
	}
	if (strncmp(x->p, "max(", 4) == 0) {
		x->p += 4;
		v = sum(x);
		while (*x->p == ',') {
			double w;

			x->p++;
			w = sum(x);
			v = w > v ? w : v;
		}
		x->bad |= *x->p != ')';
		x->p++;
		return v;
	}
	if (*x->p == '(') {
		x->p++;
		v = sum(x);
		x->bad |= *x->p != ')';
		x->p++;
		return v;
	}
	if (isdigit((unsigned char)*x->p)) {
		char *end;

		v = strtod(x->p, &end);
		x->p = end;
		return v;
	}
	/* The longest symbol that starts here. */
	for (i = 0; i < x->nsyms; i++) {
		n = strlen(x->syms[i].name);
		if (strncmp(x->p, x->syms[i].name, n) == 0 &&
		    (best == 0 || n > strlen(x->syms[best - 1].name)))
			best = i + 1;
	}
	if (best == 0) {
		x->bad = 1;
		return 0;
	}
	x->p += strlen(x->syms[best - 1].name);
	return x->syms[best - 1].value;
}

static double
product(struct expr *x)
{
	double v = factor(x);

	for (;;) {
		skip_spaces(x);
		if (strncmp(x->p, "x ", 2) == 0) {
			x->p += 2;
			v *= factor(x);
		} else if (*x->p == '/') {
			x->p++;
			v /= factor(x);
		} else if (*x->p != '\0' && *x->p != '+' && *x->p != '-' &&
		    *x->p != ')' && *x->p != ',' && !x->bad) {
			v *= factor(x);
		} else {
			return v;
		}
	}
}

static double
sum(struct expr *x)
{
	double v = product(x);

	for (;;) {
		skip_spaces(x);
		if (*x->p == '+') {
			x->p++;
			v += product(x);
		} else if (*x->p == '-') {
			x->p++;
			v -= product(x);
		} else {
			return v;
		}
	}
}

static double
evaluate(const char *formula, const struct sym *syms, size_t nsyms, int *bad)
{
	char text[MF_FORMULA_MAX];
	struct expr x;
	char *note;
	double v;

	snprintf(text, sizeof(text), "%s", formula);
	note = strstr(text, " (fp32)");
	if (note != NULL)
		*note = '\0';
	x.p = text;
	x.syms = syms;
	x.nsyms = nsyms;
	x.bad = 0;
	v = sum(&x);
	*bad = x.bad || *x.p != '\0';
	return v;
}

#endif
