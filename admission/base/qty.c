/*
 * qty.c: Kubernetes resource quantities as byte sizes.
 *
 * The grammar is that of k8s.io/apimachinery/pkg/api/resource:
 *
 *	quantity ::= [+-] number suffix
 *	number   ::= digits | digits "." | digits "." digits | "." digits
 *	suffix   ::= "" | k M G T P E | Ki Mi Gi Ti Pi Ei | m u n
 *	           | ("e" | "E") [+-] digits
 *
 * with one tightening: the number needs at least one digit, so a bare
 * suffix ("Gi"), a bare sign or a bare "." is not a quantity.
 *
 * The value is computed exactly.  The text becomes a digit string D with no
 * leading or trailing zeros and a value D * 10^e10 * 2^e2 (e2 is 10 per
 * binary suffix step).  D is multiplied out by 2^e2 in decimal; the digits
 * of the product then show both the whole part, checked against 2^63 - 1,
 * and whether anything is left after the decimal point.  Nothing goes
 * through floating point.
 * Where Kubernetes would round a value finer than 1n, or cap a binary value
 * at 2^63 - 1, this code reports the fraction or the overflow instead: a
 * byte size must be exact.
 */
#include "qty.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"

/* No byte size needs more text than this; longer input is not a quantity. */
#define MAXLEN 64

/*
 * Exponents are clamped to this magnitude while they are read.  Any value
 * with a larger exponent is already out of range or fractional, and the
 * clamp keeps the exponent sums far from int overflow.
 */
#define EXPCAP 100000

/* Decimal digits that always fit in a uint64_t: 10^19 < 2^64. */
#define U64DIGITS 19

struct scan {
	/* digit values, most significant first; 2^60 adds 19 digits */
	unsigned char dig[MAXLEN + U64DIGITS];
	int ndig;
	int e10;
	int e2;
	bool negative;
	bool subunit;
	enum mf_qty_format format;
};

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static void
add_digit(struct scan *sc, char c)
{
	if (sc->ndig == 0 && c == '0')
		return;
	assert((size_t)sc->ndig < sizeof(sc->dig));
	sc->dig[sc->ndig++] = (unsigned char)(c - '0');
}

/* Scan [+-] number from s[*pos..len); *pos ends on the first suffix byte. */
static enum mf_qty_err
scan_number(const char *s, size_t len, size_t *pos, struct scan *sc)
{
	size_t i = *pos, start;
	size_t ndigits = 0;

	if (i < len && (s[i] == '+' || s[i] == '-')) {
		sc->negative = s[i] == '-';
		i++;
	}
	for (start = i; i < len && is_digit(s[i]); i++)
		add_digit(sc, s[i]);
	ndigits += i - start;
	if (i < len && s[i] == '.') {
		for (start = ++i; i < len && is_digit(s[i]); i++) {
			add_digit(sc, s[i]);
			sc->e10--;
		}
		ndigits += i - start;
	}
	if (ndigits == 0)
		return MF_QTY_SYNTAX;
	assert((size_t)sc->ndig <= sizeof(sc->dig));
	while (sc->ndig > 0 && sc->dig[sc->ndig - 1] == 0) {
		sc->ndig--;
		sc->e10++;
	}
	*pos = i;
	return MF_QTY_OK;
}

/* Read "[+-]digits" (all of s[0..len)) into *exp, clamped to EXPCAP. */
static enum mf_qty_err
scan_exponent(const char *s, size_t len, int *exp)
{
	size_t i = 0;
	bool negative = false;
	int v = 0;

	if (i < len && (s[i] == '+' || s[i] == '-')) {
		negative = s[i] == '-';
		i++;
	}
	if (i == len)
		return MF_QTY_SYNTAX;
	for (; i < len; i++) {
		if (!is_digit(s[i]))
			return MF_QTY_SYNTAX;
		v = v * 10 + (s[i] - '0');
		if (v > EXPCAP)
			v = EXPCAP;
	}
	*exp = negative ? -v : v;
	return MF_QTY_OK;
}

static const char *const dec_suffix[] = { "", "k", "M", "G", "T", "P", "E" };
static const char *const bin_suffix[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi",
	"Ei" };
static const char *const sub_suffix[] = { "m", "u", "n" };

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int
suffix_index(const char *const *table, size_t n, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strlen(table[i]) == len && memcmp(table[i], s, len) == 0)
			return (int)i;
	return -1;
}

/* Interpret the whole of s[0..len) as a suffix. */
static enum mf_qty_err
scan_suffix(const char *s, size_t len, struct scan *sc)
{
	int dec, bin, exp;

	dec = suffix_index(dec_suffix, NELEM(dec_suffix), s, len);
	bin = suffix_index(bin_suffix, NELEM(bin_suffix), s, len);
	if (dec >= 0) {
		sc->format = MF_QTY_DECIMAL;
		sc->e10 += 3 * dec;
	} else if (bin >= 0) {
		sc->format = MF_QTY_BINARY;
		sc->e2 = 10 * bin;
	} else if (suffix_index(sub_suffix, NELEM(sub_suffix), s, len) >= 0) {
		sc->subunit = true;
	} else if (len > 1 && (s[0] == 'e' || s[0] == 'E')) {
		if (scan_exponent(s + 1, len - 1, &exp) != MF_QTY_OK)
			return MF_QTY_SYNTAX;
		sc->format = MF_QTY_EXPONENT;
		sc->e10 += exp;
	} else {
		return MF_QTY_SYNTAX;
	}
	return MF_QTY_OK;
}

/* Multiply the digit string by 2^e2 in place, leaving e2 zero. */
static void
apply_binary(struct scan *sc)
{
	int i, carry;

	assert((size_t)sc->ndig <= sizeof(sc->dig));
	for (; sc->e2 > 0; sc->e2--) {
		carry = 0;
		for (i = sc->ndig - 1; i >= 0; i--) {
			int cur = sc->dig[i] * 2 + carry;

			sc->dig[i] = (unsigned char)(cur % 10);
			carry = cur / 10;
		}
		if (carry != 0) {
			memmove(sc->dig + 1, sc->dig, (size_t)sc->ndig);
			sc->dig[0] = (unsigned char)carry;
			sc->ndig++;
		}
	}
}

/*
 * The whole part of N * 10^e10 (N is the digit string, e2 already applied)
 * is the first ndig + e10 digits of N followed by e10 zeros when e10 > 0.
 * Range is judged on it, before any fraction: a whole part above 2^63 - 1
 * is out of range whether or not a fraction follows.
 */
static enum mf_qty_err
whole_part(const struct scan *sc, uint64_t *out)
{
	int nwhole = sc->ndig + (sc->e10 < 0 ? sc->e10 : 0);
	int nzero = sc->e10 > 0 ? sc->e10 : 0;
	uint64_t v = 0;
	int i;

	if (nwhole + nzero > U64DIGITS)
		return MF_QTY_RANGE;
	for (i = 0; i < nwhole; i++)
		v = v * 10 + sc->dig[i];
	for (i = 0; i < nzero; i++)
		v *= 10;
	if (v > (uint64_t)INT64_MAX)
		return MF_QTY_RANGE;
	*out = v;
	return MF_QTY_OK;
}

static enum mf_qty_err
evaluate(struct scan *sc, int64_t *out)
{
	enum mf_qty_err err;
	uint64_t v = 0;
	int i;

	if (sc->ndig == 0 || sc->negative)
		return MF_QTY_NOTPOSITIVE;
	/* The value is at least 10^(ndig - 1 + e10): more than 2^63 - 1. */
	if (sc->ndig - 1 + sc->e10 > U64DIGITS - 1)
		return MF_QTY_RANGE;
	/* A whole number below 10^18 times 2^e2: 64 bits are enough. */
	if (sc->e10 >= 0 && sc->ndig + sc->e10 <= 18) {
		for (i = 0; i < sc->ndig; i++)
			v = v * 10 + sc->dig[i];
		for (i = 0; i < sc->e10; i++)
			v *= 10;
		if (v > (uint64_t)INT64_MAX >> sc->e2)
			return MF_QTY_RANGE;
		*out = (int64_t)(v << sc->e2);
		return MF_QTY_OK;
	}
	apply_binary(sc);
	err = whole_part(sc, &v);
	if (err != MF_QTY_OK)
		return err;
	i = sc->ndig + sc->e10 > 0 ? sc->ndig + sc->e10 : 0;
	for (; i < sc->ndig; i++)
		if (sc->dig[i] != 0)
			return MF_QTY_FRACTION;
	*out = (int64_t)v;
	return MF_QTY_OK;
}

/* mf_qty_parse_bytes, a value below min refused as MF_QTY_SMALL. */
static enum mf_qty_err
parse(const char *s, size_t len, int64_t min, int64_t *bytes,
    enum mf_qty_format *format)
{
	struct scan sc;
	enum mf_qty_err err;
	size_t pos = 0;
	int64_t v = 0;

	if (s == NULL || len == 0)
		return MF_QTY_EMPTY;
	if (len > MAXLEN)
		return MF_QTY_SYNTAX;
	memset(&sc, 0, sizeof(sc));
	err = scan_number(s, len, &pos, &sc);
	if (err == MF_QTY_OK)
		err = scan_suffix(s + pos, len - pos, &sc);
	if (err == MF_QTY_OK && sc.subunit)
		err = MF_QTY_SUBUNIT;
	if (err == MF_QTY_OK)
		err = evaluate(&sc, &v);
	if (err == MF_QTY_OK && v < min)
		err = MF_QTY_SMALL;
	if (err != MF_QTY_OK)
		return err;
	*bytes = v;
	if (format != NULL)
		*format = sc.format;
	return MF_QTY_OK;
}

enum mf_qty_err
mf_qty_parse_bytes(const char *s, size_t len, int64_t *bytes,
    enum mf_qty_format *format)
{
	return parse(s, len, INT64_MIN, bytes, format);
}

const char *
mf_qty_strerror(enum mf_qty_err err)
{
	switch (err) {
	case MF_QTY_OK:
		return "is a valid quantity";
	case MF_QTY_EMPTY:
		return "is empty";
	case MF_QTY_SYNTAX:
		return "is not a quantity";
	case MF_QTY_SUBUNIT:
		return "uses a sub-unit suffix (m, u or n), not a byte size";
	case MF_QTY_FRACTION:
		return "is not a whole number of bytes";
	case MF_QTY_NOTPOSITIVE:
		return "is not a positive number of bytes";
	case MF_QTY_RANGE:
		return "is more than 2^63-1 bytes";
	case MF_QTY_SMALL:
		return "is less than 1Gi, less than any GPU holds";
	}
	return "is not a valid quantity";
}

enum mf_qty_err
mf_qty_parse_memory(const char *s, size_t len, int64_t *bytes,
    enum mf_qty_format *format)
{
	return parse(s, len, MF_QTY_MEMORY_MIN, bytes, format);
}

/* Whether s[0..len) is digits with at most one '.': a bare number. */
static bool
bare_number(const char *s, size_t len)
{
	size_t dots = 0, digits = 0;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '.')
			dots++;
		else if (is_digit(s[i]))
			digits++;
		else
			return false;
	}
	return digits > 0 && dots <= 1;
}

/*
 * The hint for a size written with a trailing B ("80GB", "80GiB", "80B"):
 * how the same size is written as a quantity.  0 when s is not such a
 * size.
 */
static int
unit_hint(const char *s, size_t len, char *buf, size_t size)
{
	static const char letters[] = "kMGTPE";
	const char *l;
	size_t n;
	int i;

	if (len < 2 || len > MAXLEN || (s[len - 1] != 'B' && s[len - 1] != 'b'))
		return 0;
	n = len - 1;
	if (n > 1 && s[n - 1] == 'i')
		n--; /* "80GiB": the binary letter before "iB" */
	if (bare_number(s, n))
		return snprintf(buf, size,
		           ": memory is written %.*s (bytes), %.*sG (10^9 bytes) or %.*sGi (2^30 bytes)",
		           (int)n, s, (int)n, s, (int)n, s) > 0;
	l = strchr(letters, s[n - 1] == 'K' ? 'k' : s[n - 1]);
	if (s[n - 1] == '\0' || l == NULL || !bare_number(s, n - 1))
		return 0;
	i = (int)(l - letters) + 1;
	return snprintf(buf, size,
	           ": memory is written %.*s%c (10^%d bytes) or %.*s%ci (2^%d bytes)",
	           (int)(n - 1), s, *l, 3 * i, (int)(n - 1), s,
	           *l == 'k' ? 'K' : *l, 10 * i) > 0;
}

char *
mf_qty_explain(const char *s, size_t len, enum mf_qty_err err, char *buf,
    size_t size)
{
	int shown = len < 40 ? (int)len : 40, as_gib;
	char hint[160] = "";
	int64_t v = 0;

	if (size == 0)
		return buf;
	if (s == NULL)
		s = "";
	/* A count of a few digits is most likely GiB with the unit left
	 * out: suggest it back ("80" -> 80Gi); else the usual example. */
	as_gib = bare_number(s, len) && len <= 4;

	if (err == MF_QTY_SMALL &&
	    mf_qty_parse_bytes(s, len, &v, NULL) == MF_QTY_OK) {
		snprintf(buf, size,
		    "'%.*s' is %lld bytes, less than 1Gi: a GPU's memory is written with its unit, e.g. %.*sGi",
		    shown, s, (long long)v, as_gib ? shown : 2,
		    as_gib ? s : "80");
		return buf;
	}
	if (err == MF_QTY_SYNTAX)
		unit_hint(s, len, hint, sizeof(hint));
	snprintf(buf, size, "'%.*s' %s%s", shown, s, mf_qty_strerror(err),
	    hint);
	return buf;
}

/* Largest power of base (1000 or 1024) that leaves a whole mantissa, as
 * Kubernetes picks: its exponent, the mantissa left in *m (not 0). */
static int
split(uint64_t *m, uint64_t base)
{
	int i = 0;

	while (*m % base == 0) {
		*m /= base;
		i++;
	}
	return i;
}

/*
 * Zero prints "0" and a negative value is a '-' before the text of its
 * magnitude, as Kubernetes prints them; a binary magnitude below 1Ki prints
 * in the decimal family (Kubernetes does the same).  An unknown family
 * prints as an exponent, Kubernetes' fallback.  The text is written from
 * its end: suffix, then mantissa, then sign.
 */
size_t
mf_qty_format(int64_t bytes, enum mf_qty_format format, char *buf, size_t size)
{
	char tmp[MF_QTY_STRMAX], *end = tmp + sizeof(tmp), *p = end;
	uint64_t m = bytes < 0 ? 0 - (uint64_t)bytes : (uint64_t)bytes;
	const char *suffix = "";
	size_t len, copy;
	int e;

	if (format == MF_QTY_BINARY && m < 1024)
		format = MF_QTY_DECIMAL;
	if (m != 0 && format == MF_QTY_BINARY) {
		e = split(&m, 1024);
		assert(e >= 0 &&
		    (size_t)e < sizeof(bin_suffix) / sizeof(bin_suffix[0]));
		suffix = bin_suffix[e];
	} else if (m != 0) {
		e = 3 * split(&m, 1000);
		if (format == MF_QTY_DECIMAL) {
			assert(e >= 0 &&
			    (size_t)(e / 3) <
			        sizeof(dec_suffix) / sizeof(dec_suffix[0]));
			suffix = dec_suffix[e / 3];
		} else if (e != 0) {
			p = mf_digits((uint64_t)e, p);
			*--p = 'e';
		}
	}
	len = strlen(suffix);
	p -= len;
	memcpy(p, suffix, len);
	p = mf_digits(m, p);
	if (bytes < 0)
		*--p = '-';
	len = (size_t)(end - p);
	if (buf == NULL || size == 0)
		return len;
	copy = len < size - 1 ? len : size - 1;
	memcpy(buf, p, copy);
	buf[copy] = '\0';
	return len;
}
