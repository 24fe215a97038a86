/*
 * test_jw.c: the JSON writer, checked against exact text and, for strings,
 * against jansson's reading of what it wrote.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "doc/doc.h"
#include "base/jw.h"

struct out {
	struct mf_buf b;
	struct mf_jw w;
};

static void
start(struct out *o, size_t max)
{
	mf_buf_init(&o->b, max);
	mf_jw_init(&o->w, &o->b);
}

static void
start_yaml(struct out *o)
{
	mf_buf_init(&o->b, 1 << 16);
	mf_jw_init_form(&o->w, &o->b, MF_JW_YAML);
}

/* The text written; the buffer is freed at the next start. */
static const char *
text(struct out *o)
{
	return o->b.data != NULL ? o->b.data : "";
}

static void
test_jw_nesting_and_separators(void **state)
{
	struct out o;

	(void)state;
	start(&o, 1 << 16);
	mf_jw_open(&o.w, NULL, '{');
	mf_jw_str(&o.w, "a", "x");
	mf_jw_int(&o.w, "b", -12);
	mf_jw_open(&o.w, "c", '[');
	mf_jw_bool(&o.w, NULL, 1);
	mf_jw_bool(&o.w, NULL, 0);
	mf_jw_null(&o.w, NULL);
	mf_jw_open(&o.w, NULL, '{');
	mf_jw_close(&o.w, '}');
	mf_jw_close(&o.w, ']');
	mf_jw_str(&o.w, "d", NULL);
	mf_jw_close(&o.w, '}');
	assert_int_equal(o.b.rc, MF_OK);
	assert_string_equal(text(&o),
	    "{\"a\":\"x\",\"b\":-12,\"c\":[true,false,null,{}],\"d\":null}");
	assert_int_equal(o.b.len, strlen(text(&o)));
	mf_buf_free(&o.b);
}

static void
test_jw_int_limits(void **state)
{
	struct out o;

	(void)state;
	start(&o, 1 << 16);
	mf_jw_open(&o.w, NULL, '[');
	mf_jw_int(&o.w, NULL, 0);
	mf_jw_int(&o.w, NULL, INT64_MAX);
	mf_jw_int(&o.w, NULL, INT64_MIN);
	mf_jw_close(&o.w, ']');
	assert_string_equal(text(&o),
	    "[0,9223372036854775807,-9223372036854775808]");
	mf_buf_free(&o.b);
}

/* A figure not known (negative) is null; 0 and above are the figure. */
static void
test_jw_int_known(void **state)
{
	struct out o;

	(void)state;
	start(&o, 1 << 16);
	mf_jw_open(&o.w, NULL, '{');
	mf_jw_int_known(&o.w, "unknown", -1);
	mf_jw_int_known(&o.w, "least", INT64_MIN);
	mf_jw_int_known(&o.w, "zero", 0);
	mf_jw_int_known(&o.w, "most", INT64_MAX);
	mf_jw_close(&o.w, '}');
	assert_string_equal(text(&o),
	    "{\"unknown\":null,\"least\":null,\"zero\":0,"
	    "\"most\":9223372036854775807}");
	mf_buf_free(&o.b);
}

/* Digits come two at a time: every value to 10,000 and each side of each
 * power of ten, against printf. */
static void
test_jw_int_digits(void **state)
{
	char want[32];
	int64_t v, p = 1;

	(void)state;
	for (int i = 0; i <= 10000 + 3 * 18; i++) {
		struct out o;

		if (i <= 10000) {
			v = i;
		} else {
			if ((i - 10001) % 3 == 0 && p <= INT64_MAX / 10)
				p *= 10;
			v = p - 1 + (i - 10001) % 3;
		}
		snprintf(want, sizeof(want), "%lld", (long long)v);
		start(&o, 1 << 16);
		mf_jw_int(&o.w, NULL, v);
		assert_string_equal(text(&o), want);
		mf_buf_free(&o.b);
	}
}

/* Rounded to the places asked, trailing zeros dropped but one kept. */
static void
test_jw_num_places(void **state)
{
	static const struct {
		double v;
		int places;
		const char *want;
	} cases[] = {
		{ 32.4, 2, "32.4" },
		{ 12.0, 3, "12.0" },
		{ 0.125, 2, "0.13" }, /* half away from zero */
		{ -0.125, 2, "-0.13" },
		{ -0.0001, 2, "0.0" }, /* rounds to zero: no sign */
		{ 1.23456789, 4, "1.2346" },
		{ 7, 0, "7.0" },
		{ 2.5, 9, "2.5" }, /* places capped at 6 */
		{ 1e300, 2, "1.0000000000000001e+300" },
		{ NAN, 2, "0" },
		{ INFINITY, 2, "0" },
	};
	struct out o;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		start(&o, 1 << 16);
		mf_jw_num(&o.w, NULL, cases[i].v, cases[i].places);
		assert_string_equal(text(&o), cases[i].want);
		mf_buf_free(&o.b);
	}
}

/* printf's text of v rounded half away from zero to places (0 to 6), the
 * trailing zeros of its decimals dropped but one kept: what mf_jw_num
 * writes below 9e15 units. */
static void
num_by_printf(char *out, size_t size, double v, int places)
{
	static const double scale[] = { 1, 10, 100, 1e3, 1e4, 1e5, 1e6 };
	long long units = llround(fabs(v) * scale[places]), ten = 1;
	size_t n;

	for (int i = 0; i < places; i++)
		ten *= 10;
	if (places == 0)
		snprintf(out, size, "%s%lld.0", v < 0 && units ? "-" : "",
		    units);
	else
		snprintf(out, size, "%s%lld.%0*lld", v < 0 && units ? "-" : "",
		    units / ten, places, units % ten);
	n = strlen(out);
	while (out[n - 1] == '0' && out[n - 2] != '.')
		out[--n] = '\0';
}

/* Every thousandth to +-20, and 100,000 doubles from 2^-20 to 2^50 at
 * every number of places, as printf writes them. */
static void
test_jw_num_against_printf(void **state)
{
	char want[64];
	struct out o;
	uint64_t x = 0x9e3779b97f4a7c15u;

	(void)state;
	for (int i = 0; i < 40001 + 100000; i++) {
		double v;

		if (i <= 40000) {
			v = (i - 20000) / 1000.0;
		} else {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			v = ldexp((double)(x >> 11) / 9007199254740992.0,
			    (int)(x % 71) - 20);
			if (x & 1)
				v = -v;
		}
		for (int places = 0; places <= 6; places++) {
			if (fabs(v) * pow(10, places) > 9e15)
				continue;
			num_by_printf(want, sizeof(want), v, places);
			start(&o, 1 << 16);
			mf_jw_num(&o.w, NULL, v, places);
			assert_string_equal(text(&o), want);
			mf_buf_free(&o.b);
		}
	}
}

/* Whatever the bytes, the output is JSON and reads back as the input
 * with every byte that is not valid UTF-8 replaced by U+FFFD. */
static void
test_jw_strings_read_back(void **state)
{
	static const struct {
		const char *in, *read_back;
	} cases[] = {
		{ "plain", "plain" },
		{ "q\"b\\s/", "q\"b\\s/" },
		{ "nl\ntab\tcr\r\x01\x1f", "nl\ntab\tcr\r\x01\x1f" },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
		{ "bad \xff end", "bad \xef\xbf\xbd end" },
		{ "cut \xe2\x82", "cut \xef\xbf\xbd\xef\xbf\xbd" },
		{ "overlong \xc0\xaf", "overlong \xef\xbf\xbd\xef\xbf\xbd" },
		{ "surrogate \xed\xa0\x80",
		    "surrogate \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
	};
	struct out o;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_error_t jerr;
		json_t *doc;

		start(&o, 1 << 16);
		mf_jw_open(&o.w, NULL, '{');
		/* The same bytes as a member name and as a value. */
		mf_jw_str(&o.w, cases[i].in, cases[i].in);
		mf_jw_close(&o.w, '}');
		doc = json_loads(text(&o), 0, &jerr);
		assert_non_null(doc);
		assert_string_equal(json_string_value(json_object_get(doc,
		                        cases[i].read_back)),
		    cases[i].read_back);
		json_decref(doc);
		mf_buf_free(&o.b);
	}
}

/* A string of every length to 24 with one byte that needs escaping at
 * each place, or none: the writer checks words of eight and four bytes,
 * the last overlapping the one before. */
static void
test_jw_every_length_and_place(void **state)
{
	static const char specials[] = { '"', '\\', '\n', 0x01, 0x1f };
	char in[32];

	(void)state;
	for (size_t n = 0; n <= 24; n++) {
		for (size_t at = 0; at <= n; at++) {
			for (size_t k = 0; k < sizeof(specials); k++) {
				struct out o;
				json_t *doc;

				for (size_t i = 0; i < n; i++)
					in[i] = (char)('a' + i);
				if (at < n)
					in[at] = specials[k];
				in[n] = '\0';
				start(&o, 1 << 16);
				mf_jw_open(&o.w, NULL, '[');
				mf_jw_str(&o.w, NULL, in);
				mf_jw_close(&o.w, ']');
				doc = json_loads(text(&o), 0, NULL);
				assert_non_null(doc);
				assert_string_equal(json_string_value(
				                        json_array_get(doc, 0)),
				    in);
				/* Escapes only where there is a special byte.
				 */
				assert_int_equal(strchr(text(&o), '\\') != NULL,
				    at < n);
				json_decref(doc);
				mf_buf_free(&o.b);
			}
		}
	}
}

static void
test_jw_escapes_exact(void **state)
{
	struct out o;

	(void)state;
	start(&o, 1 << 16);
	mf_jw_str(&o.w, NULL, "a\"\\\n\x01\x7f");
	assert_string_equal(text(&o), "\"a\\\"\\\\\\n\\u0001\x7f\"");
	mf_buf_free(&o.b);
}

/* RFC 4648's test vectors (section 10), as members and in an array. */
static void
test_jw_base64_vectors(void **state)
{
	static const char *const in[] = { "", "f", "fo", "foo", "foob", "fooba",
		"foobar" };
	static const char *const want = "{\"0\":\"\",\"1\":\"Zg==\","
	                                "\"2\":\"Zm8=\",\"3\":\"Zm9v\","
	                                "\"4\":\"Zm9vYg==\",\"5\":\"Zm9vYmE=\","
	                                "\"6\":\"Zm9vYmFy\",\"b\":[\"/+8A\"]}";
	char key[2] = "0";
	struct out o;

	(void)state;
	start(&o, 1 << 16);
	mf_jw_open(&o.w, NULL, '{');
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++, key[0]++)
		mf_jw_base64(&o.w, key, in[i], strlen(in[i]));
	mf_jw_open(&o.w, "b", '[');
	mf_jw_base64(&o.w, NULL, "\xff\xef\x00", 3);
	mf_jw_close(&o.w, ']');
	mf_jw_close(&o.w, '}');
	assert_int_equal(o.b.rc, MF_OK);
	assert_string_equal(text(&o), want);
	mf_buf_free(&o.b);
}

/* Past the cap the writer stops, says so, and keeps what fitted. */
static void
test_jw_cap(void **state)
{
	char big[600];
	struct out o;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	start(&o, 512);
	mf_jw_open(&o.w, NULL, '[');
	mf_jw_str(&o.w, NULL, "fits");
	mf_jw_str(&o.w, NULL, big);
	mf_jw_int(&o.w, NULL, 1);
	mf_jw_close(&o.w, ']');
	assert_int_equal(o.b.rc, MF_ETOOBIG);
	assert_string_equal(text(&o), "[\"fits\"");
	mf_buf_free(&o.b);
}

/* Members made beforehand go in with the separators the members around
 * them need: first in an object, after others, before others, nested. */
static void
test_jw_json_members(void **state)
{
	static const char made[] = "\"m\":1,\"n\":{\"k\":\"v\"}";
	struct out o;

	(void)state;
	start(&o, 1 << 16);
	mf_jw_open(&o.w, NULL, '{');
	mf_jw_json_members(&o.w, made, strlen(made));
	mf_jw_int(&o.w, "a", 1);
	mf_jw_json_members(&o.w, made, strlen(made));
	mf_jw_open(&o.w, "b", '{');
	mf_jw_json_members(&o.w, made, strlen(made));
	mf_jw_close(&o.w, '}');
	mf_jw_close(&o.w, '}');
	assert_int_equal(o.b.rc, MF_OK);
	assert_string_equal(text(&o),
	    "{\"m\":1,\"n\":{\"k\":\"v\"},\"a\":1,\"m\":1,\"n\":{\"k\":\"v\"},"
	    "\"b\":{\"m\":1,\"n\":{\"k\":\"v\"}}}");
	assert_int_equal(o.b.len, strlen(text(&o)));
	mf_buf_free(&o.b);
	/* Past the cap: nothing of it, and the failure sticks. */
	start(&o, 8);
	mf_jw_open(&o.w, NULL, '{');
	mf_jw_json_members(&o.w, made, strlen(made));
	mf_jw_int(&o.w, "a", 1);
	assert_int_equal(o.b.rc, MF_ETOOBIG);
	assert_string_equal(text(&o), "{");
	mf_buf_free(&o.b);
}

/* A quantity member: the bytes as Kubernetes writes them, in the family
 * given (88 x 2^30 and 24 x 10^9 bytes), in both forms. */
static void
test_jw_qty(void **state)
{
	struct out o;

	(void)state;
	start(&o, 1 << 16);
	mf_jw_open(&o.w, NULL, '{');
	mf_jw_qty_lit(&o.w, "m", INT64_C(94489280512), MF_QTY_BINARY);
	mf_jw_qty_lit(&o.w, "n", INT64_C(24000000000), MF_QTY_DECIMAL);
	mf_jw_close(&o.w, '}');
	assert_int_equal(o.b.rc, MF_OK);
	assert_string_equal(text(&o), "{\"m\":\"88Gi\",\"n\":\"24G\"}");
	mf_buf_free(&o.b);
	start_yaml(&o);
	mf_jw_open(&o.w, NULL, '{');
	mf_jw_qty_lit(&o.w, "m", INT64_C(94489280512), MF_QTY_BINARY);
	mf_jw_close(&o.w, '}');
	assert_int_equal(o.b.rc, MF_OK);
	assert_string_equal(text(&o), "---\nm: \"88Gi\"\n");
	mf_buf_free(&o.b);
}

/* The layout of the YAML back end: what the JSON above would be, as a
 * block document with two spaces an indent. */
static void
test_jw_yaml_layout(void **state)
{
	struct out o;

	(void)state;
	start_yaml(&o);
	mf_jw_open(&o.w, NULL, '{');
	mf_jw_str(&o.w, "a", "x");
	mf_jw_int(&o.w, "b", -12);
	mf_jw_open(&o.w, "c", '[');
	mf_jw_bool(&o.w, NULL, 1);
	mf_jw_null(&o.w, NULL);
	mf_jw_open(&o.w, NULL, '{');
	mf_jw_close(&o.w, '}');
	mf_jw_open(&o.w, NULL, '{');
	mf_jw_num(&o.w, "n", 2.5, 2);
	mf_jw_open(&o.w, "m", '{');
	mf_jw_str(&o.w, "k", NULL);
	mf_jw_close(&o.w, '}');
	mf_jw_open(&o.w, "l", '[');
	mf_jw_close(&o.w, ']');
	mf_jw_close(&o.w, '}');
	mf_jw_open(&o.w, NULL, '[');
	mf_jw_int(&o.w, NULL, 1);
	mf_jw_close(&o.w, ']');
	mf_jw_close(&o.w, ']');
	mf_jw_str(&o.w, "true", "quoted key");
	mf_jw_str(&o.w, "nvidia.com/gpu.product", "plain key");
	mf_jw_str(&o.w, "a b", "quoted key");
	mf_jw_close(&o.w, '}');
	assert_int_equal(mf_jw_finish(&o.w), MF_OK);
	assert_string_equal(text(&o),
	    "---\n"
	    "a: \"x\"\n"
	    "b: -12\n"
	    "c:\n"
	    "  - true\n"
	    "  - null\n"
	    "  - {}\n"
	    "  - n: 2.5\n"
	    "    m:\n"
	    "      k: null\n"
	    "    l: []\n"
	    "  -\n"
	    "    - 1\n"
	    "\"true\": \"quoted key\"\n"
	    "nvidia.com/gpu.product: \"plain key\"\n"
	    "\"a b\": \"quoted key\"\n");
	mf_buf_free(&o.b);
	start_yaml(&o);
	mf_jw_open(&o.w, NULL, '[');
	mf_jw_close(&o.w, ']');
	assert_string_equal(text(&o), "---\n[]\n");
	mf_buf_free(&o.b);
}

/*
 * Whatever the bytes, the YAML reads back (with libyaml, through doc.h) as
 * the JSON does: invalid UTF-8 as U+FFFD, and what YAML does not take raw
 * (DEL, C1 controls such as NEL, U+2028, U+2029, U+FEFF, U+FFFE) escaped.
 */
static void
test_jw_yaml_strings_read_back(void **state)
{
	static const struct {
		const char *in, *read_back;
	} cases[] = {
		{ "plain", "plain" },
		{ "q\"b\\s/: #x", "q\"b\\s/: #x" },
		{ "nl\ntab\tcr\r\x01\x1f", "nl\ntab\tcr\r\x01\x1f" },
		{ "del\x7f", "del\x7f" },
		{ "nel\xc2\x85 c1\xc2\x9f nbsp\xc2\xa0",
		    "nel\xc2\x85 c1\xc2\x9f nbsp\xc2\xa0" },
		{ "ls\xe2\x80\xa8 ps\xe2\x80\xa9 bom\xef\xbb\xbf",
		    "ls\xe2\x80\xa8 ps\xe2\x80\xa9 bom\xef\xbb\xbf" },
		{ "nc\xef\xbf\xbe\xef\xbf\xbf", "nc\xef\xbf\xbe\xef\xbf\xbf" },
		{ "caf\xc3\xa9 \xf0\x9f\x98\x80",
		    "caf\xc3\xa9 \xf0\x9f\x98\x80" },
		{ "bad \xff end", "bad \xef\xbf\xbd end" },
		{ "cut \xe2\x82", "cut \xef\xbf\xbd\xef\xbf\xbd" },
	};
	struct out o;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mf_doc *doc = NULL;
		struct mf_error err;
		const struct mf_node *n;

		start_yaml(&o);
		mf_jw_open(&o.w, NULL, '{');
		mf_jw_str(&o.w, cases[i].in, cases[i].in);
		mf_jw_close(&o.w, '}');
		assert_int_equal(mf_doc_parse(o.b.data, o.b.len, MF_DOC_YAML,
		                     &doc, &err),
		    MF_OK);
		n = mf_doc_root(doc)->child;
		assert_non_null(n);
		assert_string_equal(n->key, cases[i].read_back);
		assert_int_equal(n->type, MF_NODE_STR);
		assert_string_equal(n->text, cases[i].read_back);
		mf_doc_free(doc);
		mf_buf_free(&o.b);
	}
}

/* Nesting deeper than the writer keeps fails the buffer, not memory. */
static void
test_jw_depth_checked(void **state)
{
	struct out o;

	(void)state;
	start(&o, 1 << 16);
	for (int i = 0; i < MF_JW_DEPTH; i++)
		mf_jw_open(&o.w, NULL, '[');
	assert_int_equal(o.b.rc, MF_OK);
	for (int i = 0; i < MF_JW_DEPTH; i++)
		mf_jw_close(&o.w, ']');
	assert_int_equal(mf_jw_finish(&o.w), MF_OK);
	assert_int_equal(o.b.len, 2 * MF_JW_DEPTH + 1);
	mf_buf_free(&o.b);
}

/* A literal name, its length taken at compile time, writes what the same
 * name measured writes: in JSON, and in YAML, where "on" is quoted. */
static void
test_jw_literal_names(void **state)
{
	struct out o;
	char measured[2][256];

	(void)state;
	for (int yaml = 0; yaml < 2; yaml++) {
		for (int lit = 0; lit < 2; lit++) {
			if (yaml)
				start_yaml(&o);
			else
				start(&o, 1 << 16);
			mf_jw_open(&o.w, NULL, '{');
			if (lit) {
				mf_jw_open_lit(&o.w, "top", '{');
				mf_jw_str_lit(&o.w, "nvidia.com/gpu", "1");
				mf_jw_int_lit(&o.w, "on", 7);
				mf_jw_num_lit(&o.w, "hours", 1.25, 2);
				mf_jw_bool_lit(&o.w, "fits", 1);
				mf_jw_null_lit(&o.w, "cost");
			} else {
				mf_jw_open(&o.w, "top", '{');
				mf_jw_str(&o.w, "nvidia.com/gpu", "1");
				mf_jw_int(&o.w, "on", 7);
				mf_jw_num(&o.w, "hours", 1.25, 2);
				mf_jw_bool(&o.w, "fits", 1);
				mf_jw_null(&o.w, "cost");
			}
			mf_jw_close(&o.w, '}');
			mf_jw_close(&o.w, '}');
			assert_int_equal(mf_jw_finish(&o.w), MF_OK);
			if (!lit)
				snprintf(measured[yaml], sizeof(measured[yaml]),
				    "%s", text(&o));
			else
				assert_string_equal(text(&o), measured[yaml]);
			mf_buf_free(&o.b);
		}
	}
	assert_string_equal(measured[0],
	    "{\"top\":{\"nvidia.com/gpu\":\"1\",\"on\":7,\"hours\":1.25,"
	    "\"fits\":true,\"cost\":null}}\n");
	assert_string_equal(measured[1],
	    "---\ntop:\n  nvidia.com/gpu: \"1\"\n  \"on\": 7\n"
	    "  hours: 1.25\n  fits: true\n  cost: null\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jw_nesting_and_separators),
		cmocka_unit_test(test_jw_int_limits),
		cmocka_unit_test(test_jw_int_known),
		cmocka_unit_test(test_jw_int_digits),
		cmocka_unit_test(test_jw_num_places),
		cmocka_unit_test(test_jw_num_against_printf),
		cmocka_unit_test(test_jw_strings_read_back),
		cmocka_unit_test(test_jw_every_length_and_place),
		cmocka_unit_test(test_jw_escapes_exact),
		cmocka_unit_test(test_jw_base64_vectors),
		cmocka_unit_test(test_jw_cap),
		cmocka_unit_test(test_jw_json_members),
		cmocka_unit_test(test_jw_qty),
		cmocka_unit_test(test_jw_yaml_layout),
		cmocka_unit_test(test_jw_yaml_strings_read_back),
		cmocka_unit_test(test_jw_depth_checked),
		cmocka_unit_test(test_jw_literal_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
