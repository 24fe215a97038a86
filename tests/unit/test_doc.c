/*
 * test_doc.c: the document tree (YAML and JSON into one node tree), its
 * caps and its typed readers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <math.h>

#include "doc/doc.h"
#include "msg.h"
#include "base/internal.h"

static struct mf_doc *
parse_ok(const char *text, enum mf_doc_format fmt)
{
	struct mf_doc *doc = NULL;
	struct mf_error err;
	enum mf_rc rc;

	memset(&err, 0, sizeof(err));
	rc = mf_doc_parse(text, strlen(text), fmt, &doc, &err);
	if (rc != MF_OK)
		print_message("unexpected: %s\n", MSG(&err));
	assert_int_equal(rc, MF_OK);
	assert_non_null(doc);
	assert_non_null(mf_doc_root(doc));
	return doc;
}

/*
 * The parse fails with rc and a message holding part, and leaves *out
 * alone.  line and column are checked unless negative.
 */
static void
expect_fail(const char *text, size_t len, enum mf_doc_format fmt,
    enum mf_rc want, int line, int column, const char *part)
{
	struct mf_doc *doc = (struct mf_doc *)&doc;
	struct mf_error err;
	enum mf_rc rc;

	memset(&err, 0, sizeof(err));
	rc = mf_doc_parse(text, len, fmt, &doc, &err);
	if (rc == MF_OK)
		mf_doc_free(doc);
	assert_int_equal(rc, want);
	assert_ptr_equal(doc, (struct mf_doc *)&doc);
	if (line >= 0)
		assert_int_equal(err.line, line);
	if (line >= 0 && column >= 0)
		assert_int_equal(err.column, column);
	if (strstr(MSG(&err), part) == NULL)
		fail_msg("message '%s' lacks '%s'", MSG(&err), part);
}

/* The return code of parsing text; nothing is kept. */
static enum mf_rc
parse_rc(const char *text, enum mf_doc_format fmt)
{
	struct mf_doc *doc = NULL;
	struct mf_error err;
	enum mf_rc rc;

	rc = mf_doc_parse(text, strlen(text), fmt, &doc, &err);
	mf_doc_free(doc);
	return rc;
}

static const struct mf_node *
at(const struct mf_doc *doc, const char *key)
{
	const struct mf_node *n = mf_node_get(mf_doc_root(doc), key);

	if (n == NULL)
		fail_msg("no key '%s'", key);
	return n;
}

static void
expect_type(const struct mf_doc *doc, const char *key, enum mf_node_type type,
    const char *text)
{
	const struct mf_node *n = at(doc, key);

	if (n->type != type)
		fail_msg("%s: type %d, want %d", key, n->type, type);
	if (text != NULL)
		assert_string_equal(n->text, text);
}

/* --- scalars --- */

/* YAML 1.2 core schema: null is empty, ~, null, Null, NULL; quoted "" is a
 * string. */
static void
test_scalar_null(void **state)
{
	struct mf_doc *doc = parse_ok("a:\nb: ~\nc: null\nd: Null\n"
	                              "e: NULL\nf: \"\"\ng: nULL\n",
	    MF_DOC_YAML);

	(void)state;
	expect_type(doc, "a", MF_NODE_NULL, NULL);
	expect_type(doc, "b", MF_NODE_NULL, NULL);
	expect_type(doc, "c", MF_NODE_NULL, NULL);
	expect_type(doc, "d", MF_NODE_NULL, NULL);
	expect_type(doc, "e", MF_NODE_NULL, NULL);
	expect_type(doc, "f", MF_NODE_STR, "");
	expect_type(doc, "g", MF_NODE_STR, "nULL");
	mf_doc_free(doc);
}

/* Only true/false in three casings; YAML 1.1's yes/no/on/off are strings. */
static void
test_scalar_bool(void **state)
{
	struct mf_doc *doc = parse_ok("a: true\nb: True\nc: TRUE\nd: false\n"
	                              "e: False\nf: FALSE\ng: yes\nh: off\ni: "
	                              "\"true\"\nj: tRUE\n",
	    MF_DOC_YAML);

	(void)state;
	expect_type(doc, "a", MF_NODE_BOOL, "true");
	expect_type(doc, "b", MF_NODE_BOOL, NULL);
	expect_type(doc, "c", MF_NODE_BOOL, NULL);
	expect_type(doc, "d", MF_NODE_BOOL, "false");
	expect_type(doc, "e", MF_NODE_BOOL, NULL);
	expect_type(doc, "f", MF_NODE_BOOL, NULL);
	expect_type(doc, "g", MF_NODE_STR, "yes");
	expect_type(doc, "h", MF_NODE_STR, "off");
	expect_type(doc, "i", MF_NODE_STR, "true");
	expect_type(doc, "j", MF_NODE_STR, "tRUE");
	mf_doc_free(doc);
}

/* Numbers keep the text as written; quoting makes a string. */
static void
test_scalar_numbers(void **state)
{
	struct mf_doc *doc =
	    parse_ok("a: 12\nb: -3\nc: +4\nd: 0.5\ne: .5\n"
	             "f: 1e9\ng: 5E3\nh: 2.5e-3\ni: .inf\nj: -.Inf\nk: .nan\n"
	             "l: \"12\"\nm: '12'\nn: 12abc\no: 1_000\np: 1e\nq: -.nan\n"
	             "r: 5.\ns: !!str 12\n",
	        MF_DOC_YAML);

	(void)state;
	expect_type(doc, "a", MF_NODE_NUM, "12");
	expect_type(doc, "b", MF_NODE_NUM, "-3");
	expect_type(doc, "c", MF_NODE_NUM, "+4");
	expect_type(doc, "d", MF_NODE_NUM, "0.5");
	expect_type(doc, "e", MF_NODE_NUM, ".5");
	expect_type(doc, "f", MF_NODE_NUM, "1e9");
	expect_type(doc, "g", MF_NODE_NUM, "5E3");
	expect_type(doc, "h", MF_NODE_NUM, "2.5e-3");
	expect_type(doc, "i", MF_NODE_NUM, ".inf");
	expect_type(doc, "j", MF_NODE_NUM, "-.Inf");
	expect_type(doc, "k", MF_NODE_NUM, ".nan");
	expect_type(doc, "l", MF_NODE_STR, "12");
	expect_type(doc, "m", MF_NODE_STR, "12");
	expect_type(doc, "n", MF_NODE_STR, "12abc");
	expect_type(doc, "o", MF_NODE_STR, "1_000");
	expect_type(doc, "p", MF_NODE_STR, "1e");
	/* The core schema's .nan takes no sign. */
	expect_type(doc, "q", MF_NODE_STR, "-.nan");
	expect_type(doc, "r", MF_NODE_NUM, "5.");
	expect_type(doc, "s", MF_NODE_STR, "12");
	assert_int_equal(at(doc, "f")->len, 3);
	mf_doc_free(doc);
}

/* JSON values map onto the same types; a JSON string "12" stays a string. */
static void
test_scalar_json(void **state)
{
	struct mf_doc *doc =
	    parse_ok("{\"a\": 12, \"b\": 2.5, \"c\": true, "
	             "\"d\": false, \"e\": null, \"f\": \"12\", \"g\": 1e9, "
	             "\"h\": [1, {}], \"i\": -7}",
	        MF_DOC_JSON);
	const struct mf_node *h;

	(void)state;
	expect_type(doc, "a", MF_NODE_NUM, "12");
	expect_type(doc, "b", MF_NODE_NUM, "2.5");
	expect_type(doc, "c", MF_NODE_BOOL, "true");
	expect_type(doc, "d", MF_NODE_BOOL, "false");
	expect_type(doc, "e", MF_NODE_NULL, NULL);
	expect_type(doc, "f", MF_NODE_STR, "12");
	expect_type(doc, "g", MF_NODE_NUM, NULL);
	expect_type(doc, "i", MF_NODE_NUM, "-7");
	h = at(doc, "h");
	assert_int_equal(h->type, MF_NODE_SEQ);
	assert_int_equal(h->len, 2);
	assert_int_equal(h->child->type, MF_NODE_NUM);
	assert_null(h->child->key);
	assert_int_equal(h->child->next->type, MF_NODE_MAP);
	assert_int_equal(h->child->next->len, 0);
	assert_null(h->child->next->next);
	/* JSON carries no positions. */
	assert_int_equal(h->line, 0);
	assert_int_equal(h->column, 0);
	mf_doc_free(doc);
}

/* --- structure and positions --- */

/*
 * Line and column are 1-based and point at the value:
 *
 *     1 a: 1            '1' at column 4
 *     2 b:
 *     3   c: x          block mapping b starts at its first key, 3:3;
 *     4   d: [1, "2", ~]    'x' at 3:6; the list at 4:6, its items at
 *                           columns 7, 10 and 15
 */
static void
test_positions(void **state)
{
	struct mf_doc *doc =
	    parse_ok("a: 1\nb:\n  c: x\n  d: [1, \"2\", ~]\n", MF_DOC_YAML);
	const struct mf_node *root = mf_doc_root(doc), *b, *c, *d, *i;

	(void)state;
	assert_int_equal(root->type, MF_NODE_MAP);
	assert_int_equal(root->len, 2);
	assert_int_equal(root->line, 1);
	assert_int_equal(root->column, 1);
	assert_null(root->key);
	assert_int_equal(at(doc, "a")->line, 1);
	assert_int_equal(at(doc, "a")->column, 4);
	b = at(doc, "b");
	assert_int_equal(b->line, 3);
	assert_int_equal(b->column, 3);
	c = mf_node_get(b, "c");
	assert_non_null(c);
	assert_int_equal(c->line, 3);
	assert_int_equal(c->column, 6);
	d = mf_node_get(b, "d");
	assert_non_null(d);
	assert_int_equal(d->type, MF_NODE_SEQ);
	assert_int_equal(d->len, 3);
	assert_int_equal(d->line, 4);
	assert_int_equal(d->column, 6);
	i = d->child;
	assert_int_equal(i->column, 7);
	assert_int_equal(i->next->column, 10);
	assert_int_equal(i->next->type, MF_NODE_STR);
	assert_int_equal(i->next->next->column, 15);
	assert_int_equal(i->next->next->type, MF_NODE_NULL);
	/* Children keep document order and their member names. */
	assert_string_equal(b->child->key, "c");
	assert_string_equal(b->child->next->key, "d");
	mf_doc_free(doc);
}

/* A block list under a key. */
static void
test_positions_block_list(void **state)
{
	struct mf_doc *doc =
	    parse_ok("a:\n  - 1\n  - b: 2\n    c: 3\n", MF_DOC_YAML);
	const struct mf_node *a = at(doc, "a"), *m;

	(void)state;
	assert_int_equal(a->type, MF_NODE_SEQ);
	assert_int_equal(a->len, 2);
	assert_int_equal(a->child->line, 2);
	assert_int_equal(a->child->column, 5);
	m = a->child->next;
	assert_int_equal(m->type, MF_NODE_MAP);
	assert_int_equal(mf_node_get(m, "c")->line, 4);
	assert_int_equal(mf_node_get(m, "c")->column, 8);
	mf_doc_free(doc);
}

/* An empty input is one null document. */
static void
test_empty_document(void **state)
{
	struct mf_doc *doc = parse_ok("", MF_DOC_YAML);

	(void)state;
	assert_int_equal(mf_doc_root(doc)->type, MF_NODE_NULL);
	mf_doc_free(doc);
	doc = parse_ok("# only a comment\n", MF_DOC_AUTO);
	assert_int_equal(mf_doc_root(doc)->type, MF_NODE_NULL);
	mf_doc_free(doc);
}

/* The buffer need not end in NUL: only len bytes are read. */
static void
test_not_nul_terminated(void **state)
{
	const char text[] = "a: 1\nb: 2\n";
	struct mf_doc *doc = NULL;
	struct mf_error err;

	(void)state;
	/* "a: 1\n" only. */
	assert_int_equal(mf_doc_parse(text, 5, MF_DOC_YAML, &doc, &err), MF_OK);
	assert_int_equal(mf_doc_root(doc)->len, 1);
	assert_null(mf_node_get(mf_doc_root(doc), "b"));
	mf_doc_free(doc);
	assert_int_equal(mf_doc_parse("{\"a\":1}xyz", 7, MF_DOC_JSON, &doc,
	                     &err),
	    MF_OK);
	mf_doc_free(doc);
}

/* AUTO reads JSON when the first non-blank byte is { or [. */
static void
test_auto_format(void **state)
{
	struct mf_doc *doc;

	(void)state;
	doc = parse_ok(" \n\t{\"a\": 1}", MF_DOC_AUTO);
	assert_int_equal(at(doc, "a")->line, 0); /* JSON: no positions */
	mf_doc_free(doc);
	doc = parse_ok("[1, 2]", MF_DOC_AUTO);
	assert_int_equal(mf_doc_root(doc)->type, MF_NODE_SEQ);
	mf_doc_free(doc);
	doc = parse_ok("a: 1\n", MF_DOC_AUTO);
	assert_int_equal(at(doc, "a")->line, 1);
	mf_doc_free(doc);
	/* YAML is a superset for this text, but JSON was not asked for. */
	doc = parse_ok("{\"a\": 1}", MF_DOC_YAML);
	assert_int_equal(at(doc, "a")->line, 1);
	mf_doc_free(doc);
}

/* --- refusals --- */

/* Aliases are refused with the alias's position (line 2, column 4);
 * an anchor alone is harmless. */
static void
test_alias_refused(void **state)
{
	const char *t = "a: &x 1\nb: *x\n";
	struct mf_doc *doc;

	(void)state;
	expect_fail(t, strlen(t), MF_DOC_YAML, MF_EINVAL, 2, 4, "alias");
	t = "a: &x [1, 2]\nb:\n  - *x\n";
	expect_fail(t, strlen(t), MF_DOC_YAML, MF_EINVAL, 3, 5, "alias");
	doc = parse_ok("a: &x 1\nb: 2\n", MF_DOC_YAML);
	mf_doc_free(doc);
}

/* A billion-laughs document stops at the first alias: "b: &b [*a" puts
 * it at line 2, column 8. */
static void
test_alias_laughs(void **state)
{
	const char *t = "a: &a [\"lol\", \"lol\"]\n"
	                "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
	                "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n";

	(void)state;
	expect_fail(t, strlen(t), MF_DOC_AUTO, MF_EINVAL, 2, 8, "alias");
}

/* n nested flow lists around an optional scalar, in YAML or JSON. */
static char *
nested(int n, const char *inner)
{
	size_t len = (size_t)n * 2 + strlen(inner) + 1;
	char *s = malloc(len);

	assert_non_null(s);
	memset(s, '[', (size_t)n);
	memcpy(s + n, inner, strlen(inner));
	memset(s + n + strlen(inner), ']', (size_t)n);
	s[len - 1] = '\0';
	return s;
}

/* n nested block mappings "a:" holding "a: 1" at the bottom. */
static char *
nested_block(int n)
{
	size_t cap = (size_t)n * (size_t)(2 * n + 4) + 16, used = 0;
	char *s = malloc(cap);

	assert_non_null(s);
	for (int i = 0; i < n; i++)
		used += (size_t)snprintf(s + used, cap - used, "%*sa:%s", 2 * i,
		    "", i == n - 1 ? " 1\n" : "\n");
	return s;
}

/* 64 levels of collections are allowed, in either syntax, with a value at
 * the bottom; the 65th is refused. */
static void
test_depth_64_yaml(void **state)
{
	struct mf_doc *doc;
	const struct mf_node *n;
	char *s;
	int depth = 0;

	(void)state;
	s = nested(64, "1");
	doc = parse_ok(s, MF_DOC_YAML);
	for (n = mf_doc_root(doc); n->type == MF_NODE_SEQ; n = n->child)
		depth++;
	assert_int_equal(depth, 64);
	assert_string_equal(n->text, "1");
	mf_doc_free(doc);
	free(s);
	s = nested_block(64);
	doc = parse_ok(s, MF_DOC_YAML);
	mf_doc_free(doc);
	free(s);
}

static void
test_depth_65_yaml(void **state)
{
	char *s;

	(void)state;
	/* The 65th '[' is at column 65. */
	s = nested(65, "");
	expect_fail(s, strlen(s), MF_DOC_YAML, MF_ETOOBIG, 1, 65, "64");
	free(s);
	s = nested_block(65);
	expect_fail(s, strlen(s), MF_DOC_YAML, MF_ETOOBIG, 65, 129, "64");
	free(s);
}

static void
test_depth_64_json(void **state)
{
	struct mf_doc *doc;
	enum mf_rc rc;
	char *s;

	(void)state;
	s = nested(64, "");
	doc = parse_ok(s, MF_DOC_JSON);
	mf_doc_free(doc);
	free(s);
	/* The same 64 levels with a value inside: the value is no level. */
	s = nested(64, "1");
	rc = parse_rc(s, MF_DOC_JSON);
	free(s);
	assert_int_equal(rc, MF_OK);
}

static void
test_depth_65_json(void **state)
{
	char *s;

	(void)state;
	s = nested(65, "");
	expect_fail(s, strlen(s), MF_DOC_JSON, MF_ETOOBIG, -1, 0, "64");
	free(s);
	/* Far past jansson's own limit: still an input error. */
	s = nested(5000, "");
	assert_true(strlen(s) == 10000);
	{
		struct mf_doc *doc = NULL;
		struct mf_error err;

		assert_int_not_equal(mf_doc_parse(s, strlen(s), MF_DOC_JSON,
		                         &doc, &err),
		    MF_OK);
		assert_null(doc);
	}
	free(s);
}

/* The field a failed parse of text names. */
static void
expect_field(const char *text, size_t len, enum mf_doc_format fmt,
    const char *field)
{
	struct mf_doc *doc = NULL;
	struct mf_error err;

	memset(&err, 0, sizeof(err));
	assert_int_equal(mf_doc_parse(text, len, fmt, &doc, &err), MF_EINVAL);
	assert_string_equal(err.field, field);
}

/* Duplicate keys are refused at the second key, at any level, named by
 * the path of the key: each mapping's key and each sequence's index
 * above it. */
static void
test_duplicate_yaml(void **state)
{
	const char *t = "a: 1\na: 2\n";
	struct mf_doc *doc;

	(void)state;
	expect_fail(t, strlen(t), MF_DOC_YAML, MF_EINVAL, 2, 1,
	    "a: duplicate key");
	t = "b:\n  x: 1\n  y: 2\n  x: 3\n";
	expect_fail(t, strlen(t), MF_DOC_YAML, MF_EINVAL, 4, 3,
	    "b.x: duplicate key");
	t = "{a: 1, a: 1}";
	expect_fail(t, strlen(t), MF_DOC_YAML, MF_EINVAL, 1, 8,
	    "a: duplicate key");
	/* Through sequences, in block and flow style, by either reader. */
	t = "a:\n- b: 1\n- c:\n    x y:\n    - 1\n    - d: 2\n      d: 3\n";
	expect_field(t, strlen(t), MF_DOC_YAML, "a[1].c.x y[1].d");
	t = "a: [{b: 1}, {c: {'x y': [1, {d: 2, d: 3}]}}]\n";
	expect_field(t, strlen(t), MF_DOC_YAML, "a[1].c.x y[1].d");
	/* The same key in different mappings is fine. */
	doc = parse_ok("a:\n  a: 1\nb:\n  a: 2\n", MF_DOC_YAML);
	mf_doc_free(doc);
}

static void
test_duplicate_json(void **state)
{
	const char *t = "{\"a\": 1,\n \"a\": 2}";
	struct mf_doc *doc;

	(void)state;
	expect_fail(t, strlen(t), MF_DOC_JSON, MF_EINVAL, 2, 2,
	    "a: duplicate key");
	/* Named by its path, read again from the input: names with
	 * brackets, commas and escaped quotes in them do not count, and
	 * they are named decoded, as YAML's are. */
	t = "{\"a\": [{\"b\": \"],{\"}, {\"c,\\\"\": {\"x\": [1, "
	    "{\"d\": [2, {}], \"d\": 3}]}}]}";
	expect_field(t, strlen(t), MF_DOC_JSON, "a[1].c,\".x[1].d");
	t = "{\"\\u0062\\/\": {\"x\": 1, \"\\u0078\": 2}}";
	expect_field(t, strlen(t), MF_DOC_JSON, "b/.x");
	doc = parse_ok("{\"a\": {\"a\": 1}, \"b\": {\"a\": 2}}", MF_DOC_JSON);
	mf_doc_free(doc);
}

/* Bytes libyaml's reader refuses are placed at their own line and
 * column (characters, not bytes, as libyaml counts them), not at the
 * start: the reader's errors carry a byte offset alone. */
static void
test_yaml_reader_error_at_byte(void **state)
{
	const char *t = "a: 1\nb:\n  c: \xe2\x82\xac\xff\n";

	(void)state;
	expect_fail(t, strlen(t), MF_DOC_YAML, MF_EINVAL, 3, 7,
	    "invalid leading UTF-8 octet");
	t = "\xef\xbb\xbf"
	    "a: \xff\n";
	expect_fail(t, strlen(t), MF_DOC_YAML, MF_EINVAL, 1, 4,
	    "invalid leading UTF-8 octet");
	t = "a: 1\nb: x\xe2\x82";
	expect_fail(t, strlen(t), MF_DOC_YAML, MF_EINVAL, 2, 5,
	    "incomplete UTF-8 octet sequence");
}

/* An error in a value (a number, a string's text) names the value's
 * path; one in a member's name the object that has it, none at the top. */
static void
test_json_value_error_field(void **state)
{
	static const struct {
		const char *text, *field;
	} cases[] = {
		{ "{\"a\": {\"b\": [1, 1e400]}}", "a.b[1]" },
		{ "{\"a\": {\"b\": 99999999999999999999}}", "a.b" },
		{ "{\"a\": {\"b\": -}}", "a.b" },
		{ "[0, {\"a\": 1.e3}]", "[1].a" },
		{ "{\"a\\u0062\": {\"c\": \"x\\q\"}}", "ab.c" },
		{ "{\"a\": \"x\\ud800\"}", "a" },
		{ "{\"a\": {\"b\\q\": 1}}", "a" },
		{ "{\"a\\q\": 1}", "" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_field(cases[i].text, strlen(cases[i].text), MF_DOC_JSON,
		    cases[i].field);
}

/* One document per input; "---" before the only one is fine. */
static void
test_two_documents(void **state)
{
	const char *t = "---\na: 1\n---\nb: 2\n";
	struct mf_doc *doc;

	(void)state;
	expect_fail(t, strlen(t), MF_DOC_YAML, MF_EINVAL, 3, 1, "one document");
	t = "a: 1\n...\nb: 2\n";
	expect_fail(t, strlen(t), MF_DOC_YAML, MF_EINVAL, -1, 0, "");
	doc = parse_ok("---\na: 1\n...\n", MF_DOC_YAML);
	mf_doc_free(doc);
}

/*
 * JSON syntax errors carry jansson's 1-based line and column:
 *
 *     1 {"a": 1,
 *     2  "b": }        '}' is the 7th character of line 2
 */
static void
test_json_error_position(void **state)
{
	const char *t = "{\"a\": 1,\n \"b\": }";

	(void)state;
	expect_fail(t, strlen(t), MF_DOC_JSON, MF_EINVAL, 2, 7,
	    "not valid JSON");
	t = "{\"a\": 1} {\"b\": 2}";
	expect_fail(t, strlen(t), MF_DOC_JSON, MF_EINVAL, -1, 0,
	    "not valid JSON");
	t = "";
	expect_fail(t, 0, MF_DOC_JSON, MF_EINVAL, -1, 0, "not valid JSON");
}

static void
test_yaml_error_position(void **state)
{
	const char *t = "a: [1, 2\n";

	(void)state;
	expect_fail(t, strlen(t), MF_DOC_YAML, MF_EINVAL, 2, 1,
	    "not valid YAML");
	t = "a: 1\n b: 2\n";
	expect_fail(t, strlen(t), MF_DOC_YAML, MF_EINVAL, 2, -1,
	    "not valid YAML");
}

/* A NUL inside a value (YAML escape \0, or a raw byte) is refused. */
static void
test_nul_refused(void **state)
{
	const char *t = "a: \"x\\0y\"\n";
	const char raw[] = "a: x\0y\n";

	(void)state;
	expect_fail(t, strlen(t), MF_DOC_YAML, MF_EINVAL, 1, 4, "NUL");
	expect_fail(raw, sizeof(raw) - 1, MF_DOC_YAML, MF_EINVAL, -1, 0, "");
	t = "{\"a\": \"x\\u0000y\"}";
	expect_fail(t, strlen(t), MF_DOC_JSON, MF_EINVAL, -1, 0, "");
}

/* A mapping key must be a scalar. */
static void
test_complex_key_refused(void **state)
{
	const char *t = "? [a]\n: b\n";

	(void)state;
	expect_fail(t, strlen(t), MF_DOC_YAML, MF_EINVAL, 1, -1,
	    "key must be a scalar");
}

/* "k0: 1\nk1: 1\n..." with n keys, as YAML; or the JSON object. */
static char *
many_keys(size_t n, int json)
{
	size_t cap = n * 16 + 4, used = 0;
	char *s = malloc(cap);

	assert_non_null(s);
	if (json)
		s[used++] = '{';
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(s + used, cap - used,
		    json ? "%s\"k%zu\": 1" : "%sk%zu: 1\n",
		    i && json ? ", " : "", i);
	if (json)
		s[used++] = '}';
	s[used] = '\0';
	return s;
}

/* MF_DOC_MAX_KEYS (4096) keys in a mapping are allowed; one more is not.
 * The 4097th key is on line 4097. */
static void
test_max_keys_yaml(void **state)
{
	struct mf_doc *doc;
	char *s;

	(void)state;
	s = many_keys(MF_DOC_MAX_KEYS, 0);
	doc = parse_ok(s, MF_DOC_YAML);
	assert_int_equal(mf_doc_root(doc)->len, MF_DOC_MAX_KEYS);
	mf_doc_free(doc);
	free(s);
	s = many_keys(MF_DOC_MAX_KEYS + 1, 0);
	expect_fail(s, strlen(s), MF_DOC_YAML, MF_ETOOBIG, MF_DOC_MAX_KEYS + 1,
	    1, "too many keys");
	free(s);
}

static void
test_max_keys_json(void **state)
{
	struct mf_doc *doc;
	enum mf_rc rc;
	char *s;

	(void)state;
	s = many_keys(MF_DOC_MAX_KEYS, 1);
	doc = parse_ok(s, MF_DOC_JSON);
	assert_int_equal(mf_doc_root(doc)->len, MF_DOC_MAX_KEYS);
	mf_doc_free(doc);
	free(s);
	s = many_keys(MF_DOC_MAX_KEYS + 1, 1);
	rc = parse_rc(s, MF_DOC_JSON);
	free(s);
	assert_int_equal(rc, MF_ETOOBIG);
}

/* "[0,0,...]" with n items: n + 1 nodes with the list. */
static char *
many_items(size_t n)
{
	char *s = malloc(n * 2 + 2);

	assert_non_null(s);
	s[0] = '[';
	for (size_t i = 0; i < n; i++) {
		s[1 + 2 * i] = '0';
		s[2 + 2 * i] = i + 1 < n ? ',' : ']';
	}
	s[2 * n + 1] = '\0';
	return s;
}

/* MF_DOC_MAX_NODES counts every value, the list itself included. */
static void
test_max_nodes(void **state)
{
	struct mf_doc *doc;
	char *s;

	(void)state;
	s = many_items(MF_DOC_MAX_NODES - 1);
	doc = parse_ok(s, MF_DOC_YAML);
	assert_int_equal(mf_doc_root(doc)->len, MF_DOC_MAX_NODES - 1);
	mf_doc_free(doc);
	doc = parse_ok(s, MF_DOC_JSON);
	mf_doc_free(doc);
	free(s);
	s = many_items(MF_DOC_MAX_NODES);
	expect_fail(s, strlen(s), MF_DOC_YAML, MF_ETOOBIG, -1, 0, "");
	expect_fail(s, strlen(s), MF_DOC_JSON, MF_ETOOBIG, -1, 0, "");
	free(s);
}

/* --- JSON read with a keep list --- */

static const struct mf_doc_keep keep_inner[] = {
	MF_DOC_KEEP("name", NULL),
	MF_DOC_KEEP_END,
};

/* Keep "a" whole, "list" with only each element's "name", "o" with
 * nothing of its own. */
static const struct mf_doc_keep keep_test[] = {
	MF_DOC_KEEP("a", NULL),
	MF_DOC_KEEP("list", keep_inner),
	MF_DOC_KEEP("o", keep_inner + 1),
	MF_DOC_KEEP_END,
};

/* Only what the list names is built; a map's len counts those. */
static void
test_kept_members(void **state)
{
	const char *t = "{\"skip\": {\"x\": [1, \"a\\\"b\", null]}, "
	                "\"a\": {\"b\": [true, 2.5]}, "
	                "\"list\": [{\"name\": \"n\\u00e9\", \"env\": [1]}, 3, "
	                "\"s\"], \"o\": {\"name\": 1}, \"z\": \"\\u0041\"}";
	const struct mf_node *root, *a, *list, *e;
	struct mf_doc *doc = NULL;
	struct mf_error err;

	(void)state;
	assert_int_equal(mf_doc_parse_kept(t, strlen(t), MF_DOC_JSON_WIDE,
	                     keep_test, &doc, &err),
	    MF_OK);
	root = mf_doc_root(doc);
	assert_int_equal(root->len, 3);
	assert_null(mf_node_get(root, "skip"));
	assert_null(mf_node_get(root, "z"));
	a = mf_node_get(root, "a");
	assert_int_equal(mf_node_get(a, "b")->len, 2);
	assert_string_equal(mf_node_get(a, "b")->child->next->text, "2.5");
	list = mf_node_get(root, "list");
	assert_int_equal(list->type, MF_NODE_SEQ);
	assert_int_equal(list->len, 3);
	e = list->child;
	assert_int_equal(e->len, 1);
	assert_string_equal(mf_node_get(e, "name")->text, "n\xc3\xa9");
	assert_null(mf_node_get(e, "env"));
	assert_string_equal(e->next->text, "3");
	assert_string_equal(e->next->next->text, "s");
	assert_int_equal(mf_node_get(root, "o")->type, MF_NODE_MAP);
	assert_int_equal(mf_node_get(root, "o")->len, 0);
	mf_doc_free(doc);
	/* No list: everything, as mf_doc_parse. */
	assert_int_equal(mf_doc_parse_kept(t, strlen(t), MF_DOC_JSON, NULL,
	                     &doc, &err),
	    MF_OK);
	assert_int_equal(mf_doc_root(doc)->len, 5);
	assert_string_equal(mf_node_get(mf_doc_root(doc), "z")->text, "A");
	mf_doc_free(doc);
}

/* text parsed whole and with keep_test: the same rc, message, line and
 * column. */
static void
same_as_whole(const char *text, size_t len)
{
	struct mf_doc *whole = NULL, *some = NULL;
	struct mf_error e1, e2;
	enum mf_rc r1, r2;

	memset(&e1, 0, sizeof(e1));
	memset(&e2, 0, sizeof(e2));
	r1 = mf_doc_parse(text, len, MF_DOC_JSON_WIDE, &whole, &e1);
	r2 = mf_doc_parse_kept(text, len, MF_DOC_JSON_WIDE, keep_test, &some,
	    &e2);
	if (r1 != r2 ||
	    (r1 != MF_OK &&
	        (strcmp(MSG(&e1), MSG(&e2)) != 0 || e1.line != e2.line ||
	            e1.column != e2.column)))
		fail_msg("%.60s: whole %d '%s', kept %d '%s'", text, r1,
		    MSG(&e1), r2, MSG(&e2));
	mf_doc_free(whole);
	mf_doc_free(some);
}

/*
 * A value left out is checked as strictly as a built one: every way to
 * break one inside a skipped member fails as it fails when built, and
 * the escapes, nesting and numbers a skim takes are taken.
 */
static void
test_kept_skipped_errors(void **state)
{
	static const char *const inner[] = {
		/* taken */
		"\"a\\\"b\\\\c\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\"",
		"{\"k:{\\\"name\\\":\\\"x\\\"}\": {}, \"k:{\\\"name\\\":\\\"y\\\"}\": 1}",
		"[[], {}, [[{\"a\": [null, true, false]}]]]",
		"[0, -0, 1.5, -12.25e3, 1E-400, 123456789012345678]",
		"[9223372036854775807, -9223372036854775808]",
		"\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\"",
		"{\"a\\u0062\": 1, \"ac\": 2}",
		/* broken */
		"\"abc",
		"\"a\\x\"",
		"\"a\\u12\"",
		"\"a\\u12g4\"",
		"\"\\ud83d\"",
		"\"\\udc00x\"",
		"\"\\u0000\"",
		"\"a\x01\"",
		"\"a\xc3\"",
		"\"a\xed\xa0\x80\"",
		"\"a\\q unterminated",
		"{\"a\": 1, \"a\": 2}",
		"{\"a\\u0062\": 1, \"ab\": 2}",
		"{\"a\": 1, \"b\": 2, \"c\": 3, \"d\": 4, \"e\": 5, \"f\": 6, "
		"\"g\": 7, \"h\": 8, \"i\": 9, \"j\": 10, \"c\": 11}",
		"{\"x\": {\"a\": 1}, \"y\": {\"a\": 1}, \"x\": 2}",
		"{\"a\" 1}",
		"{\"a\": 1,}",
		"{1: 2}",
		"[1, 2,]",
		"[1 2]",
		"[01]",
		"[-]",
		"[1.]",
		"[1e]",
		"[1e400]",
		"[-1e400]",
		"[9223372036854775808]",
		"[-9223372036854775809]",
		"[12345678901234567890123456789012345678901]",
		"[tru]",
		"[nul, 1]",
		"[+1]",
		"{\"a\": [}",
		"[\"a\": 1]",
		"",
		"{",
		"[",
	};
	char text[512];
	int n;

	(void)state;
	for (size_t i = 0; i < sizeof(inner) / sizeof(inner[0]); i++) {
		n = snprintf(text, sizeof(text),
		    "{\"a\": 1,\n  \"skip\": {\"deeper\": [%s]}, \"b\": 2}",
		    inner[i]);
		same_as_whole(text, (size_t)n);
		n = snprintf(text, sizeof(text), "{\"skip\": %s}", inner[i]);
		same_as_whole(text, (size_t)n);
		/* Cut anywhere, the value fails where it did. */
		for (int cut = 0; cut < n; cut++)
			same_as_whole(text, (size_t)cut);
	}
}

/*
 * Whatever ends a run of plain text (an escape, valid or not, UTF-8, a
 * control character, the closing quote) at every place in a long string,
 * first in it or after an escape, and at every distance from the input's
 * end, in a skipped value and a skipped name: the scans of 16 and 8 bytes
 * meet it at each offset of their blocks, an escape that crosses into the
 * next block among them, and take or refuse the string as the built
 * reading does (a skim that gives up is only slower: jvalue reads it).
 */
static void
test_kept_string_stops_everywhere(void **state)
{
	static const char *const stop[] = { "\\\"", "\\\\", "\\/", "\\n",
		"\\u00e9", "\\ud83d\\ude00", "\\\\\\\"", "\xc3\xa9", "\\x",
		"\\u12", "\x01", "\xc3", "\"" };
	char s[128], text[512];
	int n;

	(void)state;
	/* After an escape as well: the string is then scanned from it. */
	for (size_t i = 0; i < 2 * sizeof(stop) / sizeof(stop[0]); i++) {
		for (int at = 0; at <= 40; at++) {
			snprintf(s, sizeof(s), "%s%.*s%s%s",
			    i % 2 == 0 ? "" : "\\t", at,
			    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP",
			    stop[i / 2], "0123456789012345678901234567890123");
			n = snprintf(text, sizeof(text),
			    "{\"skip\": [\"%s\", {\"%s\": 1}], \"a\": \"%s\"}",
			    s, s, s);
			same_as_whole(text, (size_t)n);
			for (int cut = 0; cut < n; cut++)
				same_as_whole(text, (size_t)cut);
		}
	}
}

/* Duplicates among the names past the 16th, found sorted at the object's
 * start after the object is read, and the error that comes first. */
static void
test_kept_skipped_duplicates_sorted(void **state)
{
	char text[1024];
	size_t n = 0;

	(void)state;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "{\"skip\": {");
	for (int i = 0; i < 20; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
		    "\"k%d\": %d, ", i, i);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "\"k3\": 0}}");
	same_as_whole(text, n);
	expect_fail(text, n, MF_DOC_JSON, MF_EINVAL, 1, 10,
	    "skip.k3: duplicate key");
	/* A later syntax error inside the object is reported first. */
	memcpy(text + n - 3, "x}}", 3);
	same_as_whole(text, n);
	expect_fail(text, n, MF_DOC_JSON, MF_EINVAL, 1, (int)n - 2,
	    "invalid token");
}

/* Nesting and the value count are the same limits when skipped. */
static void
test_kept_skipped_limits(void **state)
{
	char *inner, *s;
	size_t len;

	(void)state;
	for (int depth = 62; depth <= 64; depth++) {
		inner = nested(depth, "");
		len = strlen(inner) + 16;
		s = malloc(len);
		assert_non_null(s);
		snprintf(s, len, "{\"skip\": %s}", inner);
		same_as_whole(s, strlen(s));
		snprintf(s, len, "{\"o\": %s}", inner);
		same_as_whole(s, strlen(s));
		free(s);
		free(inner);
	}
	/* The object and the list are two values of MF_DOC_MAX_NODES. */
	for (size_t items = MF_DOC_MAX_NODES - 3; items <= MF_DOC_MAX_NODES - 1;
	     items++) {
		inner = many_items(items);
		len = strlen(inner) + 16;
		s = malloc(len);
		assert_non_null(s);
		snprintf(s, len, "{\"skip\": %s}", inner);
		same_as_whole(s, strlen(s));
		free(s);
		free(inner);
	}
}

static void
test_free_null(void **state)
{
	(void)state;
	mf_doc_free(NULL);
}

/* --- lookups --- */

static void
test_node_get(void **state)
{
	struct mf_doc *doc = parse_ok("a: [1]\nb: {c: 2}\n", MF_DOC_YAML);

	(void)state;
	assert_null(mf_node_get(NULL, "a"));
	assert_null(mf_node_get(mf_doc_root(doc), "z"));
	/* Not a map. */
	assert_null(mf_node_get(at(doc, "a"), "a"));
	assert_null(mf_node_get(at(doc, "a")->child, "a"));
	assert_non_null(mf_node_get(at(doc, "b"), "c"));
	mf_doc_free(doc);
}

static void
test_type_names(void **state)
{
	(void)state;
	assert_string_equal(mf_node_type_name(MF_NODE_MAP), "a mapping");
	assert_string_equal(mf_node_type_name(MF_NODE_SEQ), "a list");
	assert_string_equal(mf_node_type_name(MF_NODE_STR), "a string");
	assert_string_equal(mf_node_type_name(MF_NODE_NUM), "a number");
	assert_string_equal(mf_node_type_name(MF_NODE_BOOL), "a boolean");
	assert_string_equal(mf_node_type_name(MF_NODE_NULL), "null");
}

static void
test_path(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(mf_path(buf, sizeof(buf), "", "spec"), "spec");
	assert_string_equal(mf_path(buf, sizeof(buf), NULL, "spec"), "spec");
	assert_string_equal(mf_path(buf, sizeof(buf), "spec.workload", "lora"),
	    "spec.workload.lora");
	/* Too small: whatever is kept, it is terminated inside the buffer. */
	memset(buf, 'x', sizeof(buf));
	assert_true(strlen(mf_path(buf, 8, "spec.workload", "lora")) < 8);
	assert_true(strlen(mf_path(buf, 3, "", "lora")) < 3);
}

/* --- typed readers --- */

/* The reader failed with a message exactly text; out is untouched. */
static void
expect_msg(enum mf_rc rc, const struct mf_error *err, const char *field,
    const char *text)
{
	assert_int_equal(rc, MF_EINVAL);
	assert_string_equal(err->field, field);
	assert_string_equal(MSG(err), text);
}

/*
 *     1 a: 12
 *     2 b: 0
 *     3 c: 1e9        1,000,000,000: whole
 *     4 d: 2.5
 *     5 e: "12"
 *     6 f: 99999999999999999999    past 2^63 - 1
 *     7 g: -5
 *     8 h: 12.0
 */
static void
test_node_int(void **state)
{
	struct mf_doc *doc =
	    parse_ok("a: 12\nb: 0\nc: 1e9\nd: 2.5\ne: \"12\"\n"
	             "f: 99999999999999999999\ng: -5\nh: 12.0\n",
	        MF_DOC_YAML);
	struct mf_error err;
	int64_t v = 77;

	(void)state;
	assert_int_equal(mf_node_int(at(doc, "a"), "x.a", 1, 100, &v, &err),
	    MF_OK);
	assert_int_equal(v, 12);
	assert_int_equal(mf_node_int(at(doc, "c"), "x.c", 1, INT64_MAX, &v,
	                     &err),
	    MF_OK);
	assert_int_equal(v, 1000000000);
	assert_int_equal(mf_node_int(at(doc, "h"), "x.h", 1, 100, &v, &err),
	    MF_OK);
	assert_int_equal(v, 12);
	assert_int_equal(mf_node_int(at(doc, "g"), "x.g", -10, 10, &v, &err),
	    MF_OK);
	assert_int_equal(v, -5);
	v = 77;
	expect_msg(mf_node_int(at(doc, "b"), "spec.resources.gpu.count", 1,
	               1024, &v, &err),
	    &err, "spec.resources.gpu.count",
	    "spec.resources.gpu.count: 0 is out of range [1, 1024] "
	    "(line 2, column 4)");
	assert_int_equal(err.line, 2);
	assert_int_equal(err.column, 4);
	expect_msg(mf_node_int(at(doc, "d"), "x.d", 1, 100, &v, &err), &err,
	    "x.d", "x.d: '2.5' is not a whole number (line 4, column 4)");
	expect_msg(mf_node_int(at(doc, "e"), "x.e", 1, 100, &v, &err), &err,
	    "x.e", "x.e: must be an integer, not a string (line 5, column 4)");
	expect_msg(mf_node_int(at(doc, "f"), "x.f", 1, INT64_MAX, &v, &err),
	    &err, "x.f",
	    "x.f: '99999999999999999999' is out of range "
	    "(line 6, column 4)");
	expect_msg(mf_node_int(at(doc, "g"), "x.g", 1, 100, &v, &err), &err,
	    "x.g", "x.g: -5 is out of range [1, 100] (line 7, column 4)");
	assert_int_equal(v, 77);
	mf_doc_free(doc);
}

/* JSON nodes have no position: the message ends without one. */
static void
test_node_int_json(void **state)
{
	struct mf_doc *doc = parse_ok("{\"a\": 0, \"b\": 4096.0}", MF_DOC_JSON);
	struct mf_error err;
	int64_t v = 0;

	(void)state;
	expect_msg(mf_node_int(at(doc, "a"), "x.a", 1, 8, &v, &err), &err,
	    "x.a", "x.a: 0 is out of range [1, 8]");
	assert_int_equal(err.line, 0);
	assert_int_equal(mf_node_int(at(doc, "b"), "x.b", 1, 4096, &v, &err),
	    MF_OK);
	assert_int_equal(v, 4096);
	mf_doc_free(doc);
}

static void
test_node_double(void **state)
{
	struct mf_doc *doc = parse_ok("a: 0.25\nb: -1\nc: .inf\nd: x\n"
	                              "e: 7\n",
	    MF_DOC_YAML);
	struct mf_error err;
	double v = 9;

	(void)state;
	assert_int_equal(mf_node_double(at(doc, "a"), "x.a", 0, 1, &v, &err),
	    MF_OK);
	assert_true(v == 0.25);
	assert_int_equal(mf_node_double(at(doc, "e"), "x.e", 0, 10, &v, &err),
	    MF_OK);
	assert_true(v == 7);
	v = 9;
	expect_msg(mf_node_double(at(doc, "b"), "x.b", 0, 1, &v, &err), &err,
	    "x.b", "x.b: -1 is out of range [0, 1] (line 2, column 4)");
	expect_msg(mf_node_double(at(doc, "c"), "x.c", 0, 1e300, &v, &err),
	    &err, "x.c",
	    "x.c: '.inf' is not a finite number "
	    "(line 3, column 4)");
	expect_msg(mf_node_double(at(doc, "d"), "x.d", 0, 1, &v, &err), &err,
	    "x.d", "x.d: must be a number, not a string (line 4, column 4)");
	assert_true(v == 9);
	mf_doc_free(doc);
}

/* Numbers of digits alone, read without strtoll and strtod up to fifteen
 * digits, and by them past it: the same values either way, leading zeros
 * and all; a sign or a point goes to them. */
static void
test_node_digits(void **state)
{
	struct mf_doc *doc =
	    parse_ok("{\"a\": 999999999999999, \"b\": 1000000000000000, "
	             "\"c\": 9223372036854775807, \"d\": 7, \"f\": 0}",
	        MF_DOC_JSON);
	struct mf_doc *yaml =
	    parse_ok("a: 000012\nb: +12\ne: -0\n", MF_DOC_YAML);
	struct mf_error err;
	int64_t v = 0;
	double d = 0;

	(void)state;
	assert_int_equal(mf_node_int(at(doc, "a"), "a", 0, INT64_MAX, &v, &err),
	    MF_OK);
	assert_true(v == INT64_C(999999999999999));
	assert_int_equal(mf_node_int(at(doc, "b"), "b", 0, INT64_MAX, &v, &err),
	    MF_OK);
	assert_true(v == INT64_C(1000000000000000));
	assert_int_equal(mf_node_int(at(doc, "c"), "c", 0, INT64_MAX, &v, &err),
	    MF_OK);
	assert_true(v == INT64_MAX);
	assert_int_equal(mf_node_double(at(doc, "a"), "a", 0, 1e300, &d, &err),
	    MF_OK);
	assert_true(d == 999999999999999.0);
	assert_int_equal(mf_node_double(at(doc, "d"), "d", 0, 10, &d, &err),
	    MF_OK);
	assert_true(d == 7);
	/* -0 is strtod's: negative zero (JSON's reader writes it 0); 0 is
	 * positive. */
	assert_int_equal(mf_node_double(at(yaml, "e"), "e", -1, 1, &d, &err),
	    MF_OK);
	assert_true(d == 0 && signbit(d));
	assert_int_equal(mf_node_double(at(doc, "f"), "f", -1, 1, &d, &err),
	    MF_OK);
	assert_true(d == 0 && !signbit(d));
	assert_int_equal(mf_node_int(at(yaml, "a"), "a", 0, 100, &v, &err),
	    MF_OK);
	assert_int_equal(v, 12);
	assert_int_equal(mf_node_int(at(yaml, "b"), "b", 0, 100, &v, &err),
	    MF_OK);
	assert_int_equal(v, 12);
	assert_int_equal(mf_node_double(at(yaml, "a"), "a", 0, 100, &d, &err),
	    MF_OK);
	assert_true(d == 12);
	mf_doc_free(yaml);
	mf_doc_free(doc);
}

static void
test_node_bool(void **state)
{
	struct mf_doc *doc =
	    parse_ok("a: True\nb: false\nc: yes\n", MF_DOC_YAML);
	struct mf_error err;
	int v = 5;

	(void)state;
	assert_int_equal(mf_node_bool(at(doc, "a"), "x.a", &v, &err), MF_OK);
	assert_int_equal(v, 1);
	assert_int_equal(mf_node_bool(at(doc, "b"), "x.b", &v, &err), MF_OK);
	assert_int_equal(v, 0);
	v = 5;
	expect_msg(mf_node_bool(at(doc, "c"), "x.c", &v, &err), &err, "x.c",
	    "x.c: must be true or false, not a string (line 3, column 4)");
	assert_int_equal(v, 5);
	mf_doc_free(doc);
}

static void
test_node_str(void **state)
{
	struct mf_doc *doc = parse_ok("a: flash\nb: 12\n", MF_DOC_YAML);
	struct mf_error err;
	const char *s = NULL;

	(void)state;
	assert_int_equal(mf_node_str(at(doc, "a"), "x.a", &s, &err), MF_OK);
	assert_string_equal(s, "flash");
	expect_msg(mf_node_str(at(doc, "b"), "x.b", &s, &err), &err, "x.b",
	    "x.b: must be a string, not a number (line 2, column 4)");
	assert_string_equal(s, "flash");
	mf_doc_free(doc);
}

/* Unknown member: the error names its full path. */
static void
test_node_map(void **state)
{
	static const char *const known[] = { "rank", "targets", NULL };
	struct mf_doc *doc = parse_ok("lora:\n  rank: 8\n  tragets: all\n"
	                              "list: [1]\n",
	    MF_DOC_YAML);
	struct mf_error err;

	(void)state;
	assert_int_equal(mf_node_map(at(doc, "lora"), "spec.workload.lora",
	                     known, &err),
	    MF_EINVAL);
	/* The position is the unknown key's, where the typo is. */
	assert_string_equal(err.field, "spec.workload.lora.tragets");
	assert_string_equal(MSG(&err),
	    "spec.workload.lora.tragets: unknown "
	    "field (line 3, column 3)");
	assert_int_equal(err.line, 3);
	/* known NULL: any member. */
	assert_int_equal(mf_node_map(at(doc, "lora"), "x", NULL, &err), MF_OK);
	expect_msg(mf_node_map(at(doc, "list"), "spec.workload.lora", known,
	               &err),
	    &err, "spec.workload.lora",
	    "spec.workload.lora: must be "
	    "a mapping, not a list (line 4, column 7)");
	mf_doc_free(doc);
}

/* A NULL error pointer is allowed everywhere. */
static void
test_null_err(void **state)
{
	struct mf_doc *doc = parse_ok("a: x\n", MF_DOC_YAML);
	struct mf_doc *out = NULL;
	int64_t v;

	(void)state;
	assert_int_equal(mf_node_int(at(doc, "a"), "a", 0, 1, &v, NULL),
	    MF_EINVAL);
	assert_int_equal(mf_doc_parse("a: *x", 5, MF_DOC_YAML, &out, NULL),
	    MF_EINVAL);
	assert_null(out);
	mf_doc_free(doc);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalar_null),
		cmocka_unit_test(test_scalar_bool),
		cmocka_unit_test(test_scalar_numbers),
		cmocka_unit_test(test_scalar_json),
		cmocka_unit_test(test_positions),
		cmocka_unit_test(test_positions_block_list),
		cmocka_unit_test(test_empty_document),
		cmocka_unit_test(test_not_nul_terminated),
		cmocka_unit_test(test_auto_format),
		cmocka_unit_test(test_alias_refused),
		cmocka_unit_test(test_alias_laughs),
		cmocka_unit_test(test_depth_64_yaml),
		cmocka_unit_test(test_depth_65_yaml),
		cmocka_unit_test(test_depth_64_json),
		cmocka_unit_test(test_depth_65_json),
		cmocka_unit_test(test_duplicate_yaml),
		cmocka_unit_test(test_duplicate_json),
		cmocka_unit_test(test_json_value_error_field),
		cmocka_unit_test(test_yaml_reader_error_at_byte),
		cmocka_unit_test(test_two_documents),
		cmocka_unit_test(test_json_error_position),
		cmocka_unit_test(test_yaml_error_position),
		cmocka_unit_test(test_nul_refused),
		cmocka_unit_test(test_complex_key_refused),
		cmocka_unit_test(test_max_keys_yaml),
		cmocka_unit_test(test_max_keys_json),
		cmocka_unit_test(test_max_nodes),
		cmocka_unit_test(test_kept_members),
		cmocka_unit_test(test_kept_skipped_errors),
		cmocka_unit_test(test_kept_string_stops_everywhere),
		cmocka_unit_test(test_kept_skipped_duplicates_sorted),
		cmocka_unit_test(test_kept_skipped_limits),
		cmocka_unit_test(test_free_null),
		cmocka_unit_test(test_node_get),
		cmocka_unit_test(test_type_names),
		cmocka_unit_test(test_path),
		cmocka_unit_test(test_node_int),
		cmocka_unit_test(test_node_int_json),
		cmocka_unit_test(test_node_double),
		cmocka_unit_test(test_node_digits),
		cmocka_unit_test(test_node_bool),
		cmocka_unit_test(test_node_str),
		cmocka_unit_test(test_node_map),
		cmocka_unit_test(test_null_err),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
