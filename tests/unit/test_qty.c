/*
 * test_qty.c: Kubernetes quantities as byte sizes.
 *
 * Most rows come from the tables of k8s.io/apimachinery's
 * pkg/api/resource/quantity_test.go (TestQuantityParse, TestQuantityString,
 * TestQuantityParseEmit, TestNewSet), with the expected byte counts worked
 * out by hand in the comments.  Where Kubernetes keeps a value that is not a
 * whole, positive, 63-bit byte count, the row expects the byte-size error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/qty.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

#define KI (INT64_C(1) << 10)
#define MI (INT64_C(1) << 20)
#define GI (INT64_C(1) << 30)
#define TI (INT64_C(1) << 40)
#define PI (INT64_C(1) << 50)
#define EI (INT64_C(1) << 60)

#define K INT64_C(1000)
#define M (K * K)
#define G (K * M)
#define T (K * G)
#define P (K * T)
#define E (K * P)

struct ok_case {
	const char *in;
	int64_t bytes;
	enum mf_qty_format format;
};

struct err_case {
	const char *in;
	enum mf_qty_err err;
};

struct fmt_case {
	int64_t bytes;
	enum mf_qty_format format;
	const char *out;
};

static void
check_ok(const struct ok_case *c, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int64_t bytes = -1;
		enum mf_qty_format format = (enum mf_qty_format) - 1;
		enum mf_qty_err err;

		err = mf_qty_parse_bytes(c[i].in, strlen(c[i].in), &bytes,
		    &format);
		if (err != MF_QTY_OK || bytes != c[i].bytes ||
		    format != c[i].format) {
			print_error("'%s': err %d bytes %lld format %d, want "
			            "%lld format %d\n",
			    c[i].in, (int)err, (long long)bytes, (int)format,
			    (long long)c[i].bytes, (int)c[i].format);
			fail();
		}
	}
}

static void
check_err(const struct err_case *c, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int64_t bytes = 12345;
		enum mf_qty_format format = MF_QTY_EXPONENT;
		enum mf_qty_err err;

		err = mf_qty_parse_bytes(c[i].in, strlen(c[i].in), &bytes,
		    &format);
		if (err != c[i].err) {
			print_error("'%s': err %d, want %d\n", c[i].in,
			    (int)err, (int)c[i].err);
			fail();
		}
		/* Out-parameters are untouched on error. */
		assert_int_equal(bytes, 12345);
		assert_int_equal(format, MF_QTY_EXPONENT);
	}
}

static void
check_fmt(const struct fmt_case *c, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char buf[MF_QTY_STRMAX];
		size_t len;

		len = mf_qty_format(c[i].bytes, c[i].format, buf, sizeof(buf));
		if (strcmp(buf, c[i].out) != 0 || len != strlen(c[i].out)) {
			print_error("%lld/%d: got '%s' (%zu), want '%s'\n",
			    (long long)c[i].bytes, (int)c[i].format, buf, len,
			    c[i].out);
			fail();
		}
	}
}

static void
test_parse_design_figures(void **state)
{
	static const struct ok_case c[] = {
		/* 88 * 2^30 = 94,489,280,512 */
		{ "88Gi", INT64_C(94489280512), MF_QTY_BINARY },
		/* 94.5 * 10^9 = 94,500,000,000 */
		{ "94.5G", INT64_C(94500000000), MF_QTY_DECIMAL },
		{ "96G", 96 * G, MF_QTY_DECIMAL },
		{ "1e9", G, MF_QTY_EXPONENT },
		{ "5E3", 5 * K, MF_QTY_EXPONENT },
		/* 1.5 * 10^3 */
		{ "1.5e3", 1500, MF_QTY_EXPONENT },
		/* 1.5 * 2^30 = 3 * 2^29 = 1,610,612,736 */
		{ "1.5Gi", INT64_C(1610612736), MF_QTY_BINARY },
		{ "+1Gi", GI, MF_QTY_BINARY },
		/* 0.1 * 1000 */
		{ "0.1k", 100, MF_QTY_DECIMAL },
	};

	(void)state;
	check_ok(c, NELEM(c));
}

static void
test_parse_binary_suffixes(void **state)
{
	static const struct ok_case c[] = {
		{ "1Ki", KI, MF_QTY_BINARY },
		{ "8Ki", 8 * KI, MF_QTY_BINARY },
		{ "7Mi", 7 * MI, MF_QTY_BINARY },
		{ "6Gi", 6 * GI, MF_QTY_BINARY },
		{ "5Ti", 5 * TI, MF_QTY_BINARY },
		{ "4Pi", 4 * PI, MF_QTY_BINARY },
		{ "3Ei", 3 * EI, MF_QTY_BINARY },
		{ "10Ti", 10 * TI, MF_QTY_BINARY },
		{ "100Ti", 100 * TI, MF_QTY_BINARY },
		{ "1024Mi", GI, MF_QTY_BINARY },
		/* 0.5 * 2^20 = 2^19 */
		{ "0.5Mi", INT64_C(524288), MF_QTY_BINARY },
		/* 1.5 * 1024 */
		{ "1.5Ki", 1536, MF_QTY_BINARY },
		/* 0.0009765625 = 2^-10, times 2^10 */
		{ "0.0009765625Ki", 1, MF_QTY_BINARY },
		/*
		 * 5^40 * 10^-40 = 2^-40, times 2^60 = 2^20; 5^40 is
		 * 9094947017729282379150390625 (28 digits).
		 */
		{ "0.0000000000009094947017729282379150390625Ei", MI,
		    MF_QTY_BINARY },
	};

	(void)state;
	check_ok(c, NELEM(c));
}

static void
test_parse_decimal_suffixes(void **state)
{
	static const struct ok_case c[] = {
		{ "1", 1, MF_QTY_DECIMAL },
		{ "9", 9, MF_QTY_DECIMAL },
		{ "8k", 8 * K, MF_QTY_DECIMAL },
		{ "50k", 50 * K, MF_QTY_DECIMAL },
		{ "7M", 7 * M, MF_QTY_DECIMAL },
		{ "6G", 6 * G, MF_QTY_DECIMAL },
		{ "5T", 5 * T, MF_QTY_DECIMAL },
		{ "40T", 40 * T, MF_QTY_DECIMAL },
		{ "300T", 300 * T, MF_QTY_DECIMAL },
		{ "2P", 2 * P, MF_QTY_DECIMAL },
		{ "1E", E, MF_QTY_DECIMAL },
		{ "1000M", G, MF_QTY_DECIMAL },
		{ "007", 7, MF_QTY_DECIMAL },
	};

	(void)state;
	check_ok(c, NELEM(c));
}

static void
test_parse_decimal_fractions(void **state)
{
	static const struct ok_case c[] = {
		/* 100.035 * 10^3 */
		{ "100.035k", 100035, MF_QTY_DECIMAL },
		/* 10.035 * 10^6 */
		{ "10.035M", 10035 * K, MF_QTY_DECIMAL },
		{ "8.1k", 8100, MF_QTY_DECIMAL },
		{ "7.123456M", 7123456, MF_QTY_DECIMAL },
		{ "6.987654321G", INT64_C(6987654321), MF_QTY_DECIMAL },
		/* 5444 * 10^9 */
		{ "5.444T", 5444 * G, MF_QTY_DECIMAL },
		/* 401 * 10^11 */
		{ "40.1T", 401 * 100 * G, MF_QTY_DECIMAL },
		{ "300.2T", 3002 * 100 * G, MF_QTY_DECIMAL },
		/* 25 * 10^14 */
		{ "2.5P", 25 * 100 * T, MF_QTY_DECIMAL },
		/* 101 * 10^16 */
		{ "1.01E", 101 * 10 * P, MF_QTY_DECIMAL },
		{ "1.", 1, MF_QTY_DECIMAL },
		{ "1.G", G, MF_QTY_DECIMAL },
		{ ".5k", 500, MF_QTY_DECIMAL },
		{ "1.000", 1, MF_QTY_DECIMAL },
	};

	(void)state;
	check_ok(c, NELEM(c));
}

static void
test_parse_exponents(void **state)
{
	static const struct ok_case c[] = {
		{ "1e3", K, MF_QTY_EXPONENT },
		{ "1E6", M, MF_QTY_EXPONENT },
		{ "1e9", G, MF_QTY_EXPONENT },
		{ "1E12", T, MF_QTY_EXPONENT },
		{ "1e15", P, MF_QTY_EXPONENT },
		{ "1E18", E, MF_QTY_EXPONENT },
		{ "1e14", 100 * T, MF_QTY_EXPONENT },
		{ "1e13", 10 * T, MF_QTY_EXPONENT },
		{ "1e0", 1, MF_QTY_EXPONENT },
		{ "1e+3", K, MF_QTY_EXPONENT },
		{ "1e003", K, MF_QTY_EXPONENT },
		/* 1.2 * 10^3 */
		{ "1.2e3", 1200, MF_QTY_EXPONENT },
		/* 1.3 * 10^6 */
		{ "1.3E+6", 1300 * K, MF_QTY_EXPONENT },
		{ "1.40e9", 1400 * M, MF_QTY_EXPONENT },
		/* 153 * 10^10 */
		{ "1.53E12", 153 * 10 * G, MF_QTY_EXPONENT },
		{ "1.6e15", 1600 * T, MF_QTY_EXPONENT },
		{ "1.7E18", 1700 * P, MF_QTY_EXPONENT },
		/* negative exponents with a whole result */
		{ "1000e-3", 1, MF_QTY_EXPONENT },
		{ "1500e-1", 150, MF_QTY_EXPONENT },
		{ "0.5e1", 5, MF_QTY_EXPONENT },
	};

	(void)state;
	check_ok(c, NELEM(c));
}

static void
test_parse_limits(void **state)
{
	static const struct ok_case c[] = {
		{ "9223372036854775807", INT64_MAX, MF_QTY_DECIMAL },
		/* 9.223372036854775807 * 10^18 = 2^63 - 1 */
		{ "9.223372036854775807E", INT64_MAX, MF_QTY_DECIMAL },
		{ "9223372036854775.807k", INT64_MAX, MF_QTY_DECIMAL },
		{ "9223372036854775807e0", INT64_MAX, MF_QTY_EXPONENT },
		{ "92233720368547758070e-1", INT64_MAX, MF_QTY_EXPONENT },
		{ "+9223372036854775807", INT64_MAX, MF_QTY_DECIMAL },
		/* 7 * 2^60 = 8,070,450,532,247,928,832 < 2^63 */
		{ "7Ei", 7 * EI, MF_QTY_BINARY },
		/* 8191 * 2^50 = 2^63 - 2^50 */
		{ "8191Pi", 8191 * PI, MF_QTY_BINARY },
		/* 2^53 - 1 Ki = 2^63 - 2^10 */
		{ "9007199254740991Ki", INT64_MAX - 1023, MF_QTY_BINARY },
		{ "1e18", E, MF_QTY_EXPONENT },
		{ "0000000000000000000000000000000"
		  "000000000000000000000000000001",
		    1, MF_QTY_DECIMAL },
	};

	(void)state;
	check_ok(c, NELEM(c));
}

static void
test_parse_range(void **state)
{
	static const struct err_case c[] = {
		{ "9223372036854775808", MF_QTY_RANGE },
		{ "18446744073709551616", MF_QTY_RANGE },
		{ "9.223372036854775808E", MF_QTY_RANGE },
		/* 8 * 2^60 = 2^63; Kubernetes caps it at 2^63 - 1 */
		{ "8Ei", MF_QTY_RANGE },
		{ "9Ei", MF_QTY_RANGE },
		{ "8192Pi", MF_QTY_RANGE },
		{ "9223372036854775807Ki", MF_QTY_RANGE },
		/* 12 * 10^18 > 9.22 * 10^18; Kubernetes keeps it */
		{ "12E", MF_QTY_RANGE },
		{ "10E", MF_QTY_RANGE },
		{ "1e19", MF_QTY_RANGE },
		{ "1e999999999999999999999999", MF_QTY_RANGE },
		{ "1000000000000000000000000000000.0", MF_QTY_RANGE },
		/* range is judged on the whole part, before any fraction */
		{ "1000000000000000000000000000000.5", MF_QTY_RANGE },
		{ "9223372036854775808.5", MF_QTY_RANGE },
		{ "9999999999999999999.5Ei", MF_QTY_RANGE },
		/* 2^63 + 0.5 * 2^10 */
		{ "9007199254740992.5Ki", MF_QTY_RANGE },
	};

	(void)state;
	check_err(c, NELEM(c));
}

static void
test_parse_fraction(void **state)
{
	static const struct err_case c[] = {
		{ "1.5", MF_QTY_FRACTION },
		{ "0.001", MF_QTY_FRACTION },
		{ "0.0005k", MF_QTY_FRACTION }, /* 0.5 */
		{ "0.005", MF_QTY_FRACTION },
		{ "0.5", MF_QTY_FRACTION },
		{ "9.01", MF_QTY_FRACTION },
		{ "0.5e0", MF_QTY_FRACTION },
		{ "0.5e-1", MF_QTY_FRACTION },
		{ "1E-3", MF_QTY_FRACTION },
		{ "1.1E-9", MF_QTY_FRACTION },
		{ "25E-1", MF_QTY_FRACTION },   /* 2.5 */
		{ "1500e-3", MF_QTY_FRACTION }, /* 1.5 */
		{ ".001", MF_QTY_FRACTION },
		{ ".0001k", MF_QTY_FRACTION }, /* 0.1 */
		/* 100.035 * 1024 = 102435.84 */
		{ "100.035Ki", MF_QTY_FRACTION },
		/* 0.05 * 2^30 = 53687091.2 */
		{ "0.05Gi", MF_QTY_FRACTION },
		/* 0.025 * 2^40 = 27487790694.4 */
		{ "0.025Ti", MF_QTY_FRACTION },
		/* 1.1 * 1024 = 1126.4 */
		{ "1.1Ki", MF_QTY_FRACTION },
		/* 2^-11 * 2^10 = 0.5 */
		{ "0.00048828125Ki", MF_QTY_FRACTION },
		/* Kubernetes rounds this up to 2n */
		{ "0.000000000001Ki", MF_QTY_FRACTION },
		/* Kubernetes rounds this up to exactly 1 at nano precision */
		{ "0.9999999999", MF_QTY_FRACTION },
		{ "1e-999999999999999999999999", MF_QTY_FRACTION },
		/* whole part 2^63 - 1 fits; the half does not make it whole */
		{ "9223372036854775807.5", MF_QTY_FRACTION },
	};

	(void)state;
	check_err(c, NELEM(c));
}

static void
test_parse_not_positive(void **state)
{
	static const struct err_case c[] = {
		{ "0", MF_QTY_NOTPOSITIVE },
		{ "0Ki", MF_QTY_NOTPOSITIVE },
		{ "0k", MF_QTY_NOTPOSITIVE },
		{ "0Mi", MF_QTY_NOTPOSITIVE },
		{ "0M", MF_QTY_NOTPOSITIVE },
		{ "0Gi", MF_QTY_NOTPOSITIVE },
		{ "0G", MF_QTY_NOTPOSITIVE },
		{ "0Ti", MF_QTY_NOTPOSITIVE },
		{ "0T", MF_QTY_NOTPOSITIVE },
		{ "0e9", MF_QTY_NOTPOSITIVE },
		{ "0.0", MF_QTY_NOTPOSITIVE },
		{ "-0", MF_QTY_NOTPOSITIVE },
		{ "+0", MF_QTY_NOTPOSITIVE },
		{ "-1", MF_QTY_NOTPOSITIVE },
		{ "-1Gi", MF_QTY_NOTPOSITIVE },
		{ "-88Gi", MF_QTY_NOTPOSITIVE },
		{ "-1.5", MF_QTY_NOTPOSITIVE },
		{ "-1e9", MF_QTY_NOTPOSITIVE },
		{ "-9Ei", MF_QTY_NOTPOSITIVE },
	};

	(void)state;
	check_err(c, NELEM(c));
}

static void
test_parse_subunit(void **state)
{
	static const struct err_case c[] = {
		{ "1m", MF_QTY_SUBUNIT },
		{ "100m", MF_QTY_SUBUNIT },
		{ "1000m", MF_QTY_SUBUNIT },
		{ "4u", MF_QTY_SUBUNIT },
		{ "5n", MF_QTY_SUBUNIT },
		{ "3.001n", MF_QTY_SUBUNIT },
		{ "0.9n", MF_QTY_SUBUNIT },
		{ "0n", MF_QTY_SUBUNIT },
		{ "0u", MF_QTY_SUBUNIT },
		{ "0m", MF_QTY_SUBUNIT },
		{ "-1m", MF_QTY_SUBUNIT },
	};

	(void)state;
	check_err(c, NELEM(c));
}

static void
test_parse_syntax(void **state)
{
	static const struct err_case c[] = {
		/* Kubernetes' invalid list */
		{ "1.1.M", MF_QTY_SYNTAX },
		{ "1+1.0M", MF_QTY_SYNTAX },
		{ "0.1mi", MF_QTY_SYNTAX },
		{ "0.1am", MF_QTY_SYNTAX },
		{ "aoeu", MF_QTY_SYNTAX },
		{ ".5i", MF_QTY_SYNTAX },
		{ "1i", MF_QTY_SYNTAX },
		{ "-3.01i", MF_QTY_SYNTAX },
		{ "-3.01e-", MF_QTY_SYNTAX },
		{ " 1", MF_QTY_SYNTAX },
		{ "1 ", MF_QTY_SYNTAX },
		/* bare suffix, sign or point; Kubernetes reads these as 0 */
		{ "Gi", MF_QTY_SYNTAX },
		{ "k", MF_QTY_SYNTAX },
		{ "+", MF_QTY_SYNTAX },
		{ "-", MF_QTY_SYNTAX },
		{ ".", MF_QTY_SYNTAX },
		{ "-.", MF_QTY_SYNTAX },
		{ ".Gi", MF_QTY_SYNTAX },
		{ "+Ki", MF_QTY_SYNTAX },
		/* junk, case and whitespace */
		{ "88Gx", MF_QTY_SYNTAX },
		{ "1K", MF_QTY_SYNTAX },
		{ "1ki", MF_QTY_SYNTAX },
		{ "1gi", MF_QTY_SYNTAX },
		{ "1GI", MF_QTY_SYNTAX },
		{ "1Gb", MF_QTY_SYNTAX },
		{ "1GiB", MF_QTY_SYNTAX },
		{ "1 Gi", MF_QTY_SYNTAX },
		{ "1\tGi", MF_QTY_SYNTAX },
		{ "1Gi\n", MF_QTY_SYNTAX },
		{ "0x10", MF_QTY_SYNTAX },
		{ "1,000", MF_QTY_SYNTAX },
		{ "1_000", MF_QTY_SYNTAX },
		{ "++1", MF_QTY_SYNTAX },
		{ "+-1", MF_QTY_SYNTAX },
		{ "1..", MF_QTY_SYNTAX },
		{ "1-", MF_QTY_SYNTAX },
		/* malformed exponents */
		{ "1e", MF_QTY_SYNTAX },
		{ "1e+", MF_QTY_SYNTAX },
		{ "1E-", MF_QTY_SYNTAX },
		{ "1e3m", MF_QTY_SYNTAX },
		{ "1e3Ki", MF_QTY_SYNTAX },
		{ "1Ei3", MF_QTY_SYNTAX },
		{ "1e1.5", MF_QTY_SYNTAX },
		{ "1e+-3", MF_QTY_SYNTAX },
		{ "1ee3", MF_QTY_SYNTAX },
		{ "e3", MF_QTY_SYNTAX },
		{ "1Gi1", MF_QTY_SYNTAX },
		{ "1kk", MF_QTY_SYNTAX },
		/* 65 characters: past the length cap */
		{ "00000000000000000000000000000000"
		  "000000000000000000000000000000001",
		    MF_QTY_SYNTAX },
	};

	(void)state;
	check_err(c, NELEM(c));
}

static void
test_parse_length_bounds(void **state)
{
	/* 64 characters: the longest accepted text */
	static const char at_cap[] = "00000000000000000000000000000000"
	                             "00000000000000000000000000000001";
	int64_t bytes = 0;

	(void)state;
	assert_int_equal(strlen(at_cap), 64);
	assert_int_equal(mf_qty_parse_bytes(at_cap, 64, &bytes, NULL),
	    MF_QTY_OK);
	assert_int_equal(bytes, 1);
	/* The length counts, not a NUL: "88Gi" read as its first 2 bytes. */
	assert_int_equal(mf_qty_parse_bytes("88Gi", 2, &bytes, NULL),
	    MF_QTY_OK);
	assert_int_equal(bytes, 88);
	assert_int_equal(mf_qty_parse_bytes("1\0Gi", 4, &bytes, NULL),
	    MF_QTY_SYNTAX);
}

static void
test_parse_empty(void **state)
{
	int64_t bytes = 7;

	(void)state;
	assert_int_equal(mf_qty_parse_bytes("", 0, &bytes, NULL), MF_QTY_EMPTY);
	assert_int_equal(mf_qty_parse_bytes("1Gi", 0, &bytes, NULL),
	    MF_QTY_EMPTY);
	assert_int_equal(mf_qty_parse_bytes(NULL, 0, &bytes, NULL),
	    MF_QTY_EMPTY);
	assert_int_equal(bytes, 7);
}

static void
test_parse_format_optional(void **state)
{
	int64_t bytes = 0;

	(void)state;
	assert_int_equal(mf_qty_parse_bytes("2Ki", 3, &bytes, NULL), MF_QTY_OK);
	assert_int_equal(bytes, 2048);
}

static void
test_format_binary(void **state)
{
	static const struct fmt_case c[] = {
		/* TestQuantityString, BinarySI rows */
		{ GI, MF_QTY_BINARY, "1Gi" },
		{ 300 * MI, MF_QTY_BINARY, "300Mi" },
		{ 6 * KI, MF_QTY_BINARY, "6Ki" },
		{ 1001 * GI, MF_QTY_BINARY, "1001Gi" },
		{ TI, MF_QTY_BINARY, "1Ti" },
		{ 5, MF_QTY_BINARY, "5" },
		{ 1025, MF_QTY_BINARY, "1025" },
		/* design figures: 1.5Gi = 1536 * 2^20 */
		{ 88 * GI, MF_QTY_BINARY, "88Gi" },
		{ 3 * (GI / 2), MF_QTY_BINARY, "1536Mi" },
		{ 1536, MF_QTY_BINARY, "1536" },
		{ KI, MF_QTY_BINARY, "1Ki" },
		{ PI, MF_QTY_BINARY, "1Pi" },
		{ 7 * EI, MF_QTY_BINARY, "7Ei" },
		/* 2^62 = 4 * 2^60 */
		{ INT64_C(1) << 62, MF_QTY_BINARY, "4Ei" },
		/* not a multiple of 1024: plain integer, not "2k" */
		{ 2000, MF_QTY_BINARY, "2000" },
		/* below 1Ki Kubernetes switches to DecimalSI */
		{ 1000, MF_QTY_BINARY, "1k" },
		{ 1023, MF_QTY_BINARY, "1023" },
		{ INT64_MAX, MF_QTY_BINARY, "9223372036854775807" },
	};

	(void)state;
	check_fmt(c, NELEM(c));
}

static void
test_format_decimal(void **state)
{
	static const struct fmt_case c[] = {
		/* TestQuantityString and TestNewSet, DecimalSI rows */
		{ G, MF_QTY_DECIMAL, "1G" },
		{ 300 * M, MF_QTY_DECIMAL, "300M" },
		{ T, MF_QTY_DECIMAL, "1T" },
		{ E, MF_QTY_DECIMAL, "1E" },
		{ 1234567 * M, MF_QTY_DECIMAL, "1234567M" },
		{ 3 * K, MF_QTY_DECIMAL, "3k" },
		{ 1, MF_QTY_DECIMAL, "1" },
		{ K, MF_QTY_DECIMAL, "1k" },
		{ 1234 * K, MF_QTY_DECIMAL, "1234k" },
		/* 1500 is not a whole number of k */
		{ 1500, MF_QTY_DECIMAL, "1500" },
		/* design figures */
		{ INT64_C(94500000000), MF_QTY_DECIMAL, "94500M" },
		{ 96 * G, MF_QTY_DECIMAL, "96G" },
		{ 10 * G, MF_QTY_DECIMAL, "10G" },
		{ 100 * K, MF_QTY_DECIMAL, "100k" },
		{ 1024, MF_QTY_DECIMAL, "1024" },
		{ 9 * E, MF_QTY_DECIMAL, "9E" },
		{ INT64_MAX, MF_QTY_DECIMAL, "9223372036854775807" },
	};

	(void)state;
	check_fmt(c, NELEM(c));
}

static void
test_format_exponent(void **state)
{
	static const struct fmt_case c[] = {
		/* TestQuantityString, DecimalExponent rows */
		{ G, MF_QTY_EXPONENT, "1e9" },
		{ 300 * M, MF_QTY_EXPONENT, "300e6" },
		{ T, MF_QTY_EXPONENT, "1e12" },
		{ K, MF_QTY_EXPONENT, "1e3" },
		{ 3 * K, MF_QTY_EXPONENT, "3e3" },
		/* TestNewSet: 1000000 -> "1e6" */
		{ M, MF_QTY_EXPONENT, "1e6" },
		{ 5 * K, MF_QTY_EXPONENT, "5e3" },
		{ 1500, MF_QTY_EXPONENT, "1500" },
		{ 1, MF_QTY_EXPONENT, "1" },
		{ E, MF_QTY_EXPONENT, "1e18" },
		{ INT64_MAX, MF_QTY_EXPONENT, "9223372036854775807" },
	};

	(void)state;
	check_fmt(c, NELEM(c));
}

static void
test_format_outside_contract(void **state)
{
	static const struct fmt_case c[] = {
		/* zero and negatives print as Kubernetes prints them */
		{ 0, MF_QTY_BINARY, "0" },
		{ 0, MF_QTY_DECIMAL, "0" },
		{ -GI, MF_QTY_BINARY, "-1Gi" },
		{ -5, MF_QTY_BINARY, "-5" },
		{ -3 * K, MF_QTY_DECIMAL, "-3k" },
		{ -G, MF_QTY_EXPONENT, "-1e9" },
		/* -2^63 = -8 * 2^60 */
		{ INT64_MIN, MF_QTY_BINARY, "-8Ei" },
		{ INT64_MIN, MF_QTY_DECIMAL, "-9223372036854775808" },
		/* an unknown family prints as an exponent, like Kubernetes */
		{ M, (enum mf_qty_format)42, "1e6" },
	};

	(void)state;
	check_fmt(c, NELEM(c));
}

static void
test_format_truncates(void **state)
{
	char buf[4];

	(void)state;
	memset(buf, 'x', sizeof(buf));
	/* "94500M" needs 6 characters */
	assert_int_equal(mf_qty_format(INT64_C(94500000000), MF_QTY_DECIMAL,
	                     buf, sizeof(buf)),
	    6);
	assert_string_equal(buf, "945");
	assert_int_equal(mf_qty_format(88 * GI, MF_QTY_BINARY, buf, 1), 4);
	assert_string_equal(buf, "");
	assert_int_equal(mf_qty_format(88 * GI, MF_QTY_BINARY, NULL, 0), 4);
	assert_int_equal(mf_qty_format(88 * GI, MF_QTY_BINARY, buf,
	                     sizeof(buf)),
	    4);
	assert_string_equal(buf, "88G");
}

static void
test_format_fits_strmax(void **state)
{
	static const int64_t v[] = { INT64_MAX, INT64_MIN, INT64_MIN + 1,
		INT64_MAX - 1023, 1 };
	static const enum mf_qty_format f[] = { MF_QTY_BINARY, MF_QTY_DECIMAL,
		MF_QTY_EXPONENT };
	char buf[MF_QTY_STRMAX];
	size_t i, j;

	(void)state;
	for (i = 0; i < NELEM(v); i++)
		for (j = 0; j < NELEM(f); j++)
			assert_true(mf_qty_format(v[i], f[j], buf,
			                sizeof(buf)) < MF_QTY_STRMAX);
}

static void
test_format_parse_emit(void **state)
{
	/* TestQuantityParseEmit rows that are byte sizes */
	static const struct {
		const char *in, *out;
	} c[] = {
		{ "1Ki", "1Ki" },
		{ "1Mi", "1Mi" },
		{ "1Gi", "1Gi" },
		{ "1024Mi", "1Gi" },
		{ "1000M", "1G" },
		{ "90112Mi", "88Gi" },
		{ "1.5Gi", "1536Mi" },
		{ "94.5G", "94500M" },
		{ "1e9", "1e9" },
		{ "5E3", "5e3" },
		{ "1.5e3", "1500" },
		{ "0.5Ki", "512" },
		{ "+1Gi", "1Gi" },
		{ "1500", "1500" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(c); i++) {
		char buf[MF_QTY_STRMAX];
		enum mf_qty_format format;
		int64_t bytes;

		assert_int_equal(mf_qty_parse_bytes(c[i].in, strlen(c[i].in),
		                     &bytes, &format),
		    MF_QTY_OK);
		mf_qty_format(bytes, format, buf, sizeof(buf));
		assert_string_equal(buf, c[i].out);
	}
}

static void
test_strerror_never_null(void **state)
{
	int e;

	(void)state;
	for (e = MF_QTY_OK; e <= MF_QTY_RANGE + 1; e++)
		assert_non_null(mf_qty_strerror((enum mf_qty_err)e));
	assert_string_equal(mf_qty_strerror(MF_QTY_SYNTAX),
	    "is not a quantity");
}

/* A GPU's memory is at least 1Gi = 1,073,741,824 bytes; less is a unit
 * left out, and the out-parameters stay as they were. */
static void
test_memory_at_least_1gi(void **state)
{
	int64_t v = -7;
	enum mf_qty_format f = MF_QTY_EXPONENT;

	(void)state;
	assert_int_equal(mf_qty_parse_memory("1Gi", 3, &v, &f), MF_QTY_OK);
	assert_int_equal(v, INT64_C(1073741824));
	assert_int_equal(f, MF_QTY_BINARY);
	assert_int_equal(mf_qty_parse_memory("1073741824", 10, &v, NULL),
	    MF_QTY_OK);
	v = -7;
	f = MF_QTY_EXPONENT;
	assert_int_equal(mf_qty_parse_memory("1073741823", 10, &v, &f),
	    MF_QTY_SMALL);
	/* 10^9 is 0.93Gi; 80 is 80 bytes. */
	assert_int_equal(mf_qty_parse_memory("1G", 2, &v, &f), MF_QTY_SMALL);
	assert_int_equal(mf_qty_parse_memory("80", 2, &v, &f), MF_QTY_SMALL);
	assert_int_equal(v, -7);
	assert_int_equal(f, MF_QTY_EXPONENT);
	assert_int_equal(mf_qty_parse_memory("2G", 2, &v, &f), MF_QTY_OK);
	assert_int_equal(v, INT64_C(2000000000));
	/* Other errors are the byte parser's. */
	assert_int_equal(mf_qty_parse_memory("88Gx", 4, &v, &f), MF_QTY_SYNTAX);
}

static void
expect_explain(const char *s, enum mf_qty_err err, const char *want)
{
	char buf[256];

	assert_string_equal(mf_qty_explain(s, strlen(s), err, buf, sizeof(buf)),
	    want);
}

/* What a user most likely meant, where it is clear. */
static void
test_explain(void **state)
{
	(void)state;
	expect_explain("80", MF_QTY_SMALL,
	    "'80' is 80 bytes, less than 1Gi: a GPU's memory is written with "
	    "its unit, e.g. 80Gi");
	/* Many digits are bytes meant as bytes: the usual example. */
	expect_explain("1136496", MF_QTY_SMALL,
	    "'1136496' is 1136496 bytes, less than 1Gi: a GPU's memory is "
	    "written with its unit, e.g. 80Gi");
	expect_explain("512Mi", MF_QTY_SMALL,
	    "'512Mi' is 536870912 bytes, less than 1Gi: a GPU's memory is "
	    "written with its unit, e.g. 80Gi");
	expect_explain("80GB", MF_QTY_SYNTAX,
	    "'80GB' is not a quantity: memory is written 80G (10^9 bytes) or "
	    "80Gi (2^30 bytes)");
	expect_explain("80GiB", MF_QTY_SYNTAX,
	    "'80GiB' is not a quantity: memory is written 80G (10^9 bytes) or "
	    "80Gi (2^30 bytes)");
	expect_explain("1.5TB", MF_QTY_SYNTAX,
	    "'1.5TB' is not a quantity: memory is written 1.5T (10^12 bytes) or "
	    "1.5Ti (2^40 bytes)");
	expect_explain("64KB", MF_QTY_SYNTAX,
	    "'64KB' is not a quantity: memory is written 64k (10^3 bytes) or "
	    "64Ki (2^10 bytes)");
	expect_explain("80B", MF_QTY_SYNTAX,
	    "'80B' is not a quantity: memory is written 80 (bytes), 80G (10^9 "
	    "bytes) or 80Gi (2^30 bytes)");
	/* No hint where none is clear. */
	expect_explain("88Gx", MF_QTY_SYNTAX, "'88Gx' is not a quantity");
	expect_explain("GB", MF_QTY_SYNTAX, "'GB' is not a quantity");
	expect_explain("80 GB", MF_QTY_SYNTAX, "'80 GB' is not a quantity");
	expect_explain("0", MF_QTY_NOTPOSITIVE,
	    "'0' is not a positive number of bytes");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_design_figures),
		cmocka_unit_test(test_parse_binary_suffixes),
		cmocka_unit_test(test_parse_decimal_suffixes),
		cmocka_unit_test(test_parse_decimal_fractions),
		cmocka_unit_test(test_parse_exponents),
		cmocka_unit_test(test_parse_limits),
		cmocka_unit_test(test_parse_range),
		cmocka_unit_test(test_parse_fraction),
		cmocka_unit_test(test_parse_not_positive),
		cmocka_unit_test(test_parse_subunit),
		cmocka_unit_test(test_parse_syntax),
		cmocka_unit_test(test_parse_length_bounds),
		cmocka_unit_test(test_parse_empty),
		cmocka_unit_test(test_parse_format_optional),
		cmocka_unit_test(test_format_binary),
		cmocka_unit_test(test_format_decimal),
		cmocka_unit_test(test_format_exponent),
		cmocka_unit_test(test_format_outside_contract),
		cmocka_unit_test(test_format_truncates),
		cmocka_unit_test(test_format_fits_strmax),
		cmocka_unit_test(test_format_parse_emit),
		cmocka_unit_test(test_strerror_never_null),
		cmocka_unit_test(test_memory_at_least_1gi),
		cmocka_unit_test(test_explain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
