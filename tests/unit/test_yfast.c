/*
 * test_yfast.c: the fast YAML reader gives libyaml's very events for the
 * YAML it reads, reads the shipped files, and gives up on the rest.
 */
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "doc/doc.h"
#include "doc/yfast.h"
#include "files.h"
#include "yevents.h"

/* mf_yfast reads text, with the events libyaml gives. */
static void
same_as_libyaml(const char *name, const char *text, size_t len)
{
	struct ytext fast = { 0 }, slow = { 0 };

	if (mf_yfast(text, len, ytext_event, &fast) != 0)
		fail_msg("%s: mf_yfast gave up", name);
	if (ytext_libyaml(text, len, &slow) != 0)
		fail_msg("%s: libyaml rejects it", name);
	if (strcmp(fast.s, slow.s) != 0)
		fail_msg("%s: events differ\nfast:\n%slibyaml:\n%s", name,
		    fast.s, slow.s);
	free(fast.s);
	free(slow.s);
}

static void
gives_up(const char *text, size_t len)
{
	struct ytext fast = { 0 };

	if (mf_yfast(text, len, ytext_event, &fast) == 0)
		fail_msg("mf_yfast read '%s'", text);
	free(fast.s);
}

static void
test_subset(void **state)
{
	static const char *const docs[] = {
		"a: 1\n",
		"a: 1",
		"---\na: b\n",
		"--- # a comment\na: b\n",
		"# head\n\na: b # tail\n  # indented comment\nc: d\n",
		"a:\n  b:\n    c: 1\n  d: 2\ne: 3\n",
		"  a: 1\n  b: 2\n",
		"a:\nb: ~\nc:\n",
		"a:\n- x\n- y\nb: 1\n",
		"a:\n  - x\n  -   y\n",
		"a:\n  - k: v\n    j:\n    - 1\n  - m: n\n  - [p, q]\n",
		"a: [1, two, \"3\", '4', -5, -x]\nb: []\nc: [ x y ]\n",
		"a: {b: 1, c: \"d\"}\ne: {}\nf: { g : h }\n",
		"'q': 1\n\"r\" : 2\ns: \"\"\nt: ''\nu: \"a # b\"\n",
		"a: b:c\nd: http://x/y\ne: a#b\nf: x  \ng: a  b\nh: it's\n",
		"a: -1\nb: -.5\nc: .inf\nd: 1e3\ne: null\nf: true\ng: 88Gi\n",
		"a: b [c] {d}, e\n",
	};
	char name[32];

	(void)state;
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		snprintf(name, sizeof(name), "docs[%zu]", i);
		same_as_libyaml(name, docs[i], strlen(docs[i]));
	}
}

/* The catalogue and every example except the Kubernetes Jobs, whose
 * annotations are block scalars. */
static void
test_shipped_files(void **state)
{
	char pattern[512], path[512];
	glob_t g;
	size_t len = 0, n = 0;
	char *text;

	(void)state;
	text = slurp(top_path(path, sizeof(path), "catalog/gpus.yaml"), &len);
	assert_non_null(text);
	same_as_libyaml(path, text, len);
	free(text);
	assert_int_equal(glob(top_path(pattern, sizeof(pattern),
	                          "examples/*.yaml"),
	                     0, NULL, &g),
	    0);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		if (strstr(g.gl_pathv[i], "/k8s-job") != NULL)
			continue;
		text = slurp(g.gl_pathv[i], &len);
		assert_non_null(text);
		same_as_libyaml(g.gl_pathv[i], text, len);
		free(text);
		n++;
	}
	globfree(&g);
	assert_true(n >= 10);
}

static void
test_gives_up(void **state)
{
	static const char *const docs[] = {
		"",
		"# only a comment\n",
		"a\n",
		"- a\n",
		"[a]\n",
		"a:\tb\n",
		"a: b\r\n",
		"a: \xc3\xa9\n",
		"a: &x 1\nb: *x\n",
		"a: !!str 1\n",
		"a: |\n  b\n",
		"a: >\n  b\n",
		"a: b\n  c\n",
		"a: \"b\n  c\"\n",
		"a: \"b\\n\"\n",
		"a: 'it''s'\n",
		"a: [b, [c]]\n",
		"a: {b: {c: 1}}\n",
		"a: [b,]\n",
		"a: {b}\n",
		"a: {b: c:d}\n",
		"a: 1\n---\nb: 2\n",
		"a: 1\n...\n",
		"%YAML 1.1\n---\na: 1\n",
		"? a\n: b\n",
		"a:\n- - b\n",
		"a:\n-\n  b: 1\n",
		"a: b: c\n",
		"a: 1\n- b\n",
		"a:\n  b: 1\n c: 2\n",
		"a: \"b\" c\n",
		"a: b #c\nd:#e\n",
		"a: @b\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
		gives_up(docs[i], strlen(docs[i]));
}

/* maps mappings, each the only value of the one before. */
static size_t
nested(char *doc, size_t size, int maps)
{
	size_t n = 0;

	for (int d = 0; d < maps - 1; d++)
		n += (size_t)snprintf(doc + n, size - n, "%*sk:\n", 2 * d, "");
	n += (size_t)snprintf(doc + n, size - n, "%*sk: v\n", 2 * (maps - 1),
	    "");
	return n;
}

/* Past MF_DOC_MAX_DEPTH it leaves the error to libyaml's reading. */
static void
test_depth(void **state)
{
	char doc[8192];

	(void)state;
	same_as_libyaml("deepest", doc,
	    nested(doc, sizeof(doc), MF_DOC_MAX_DEPTH));
	gives_up(doc, nested(doc, sizeof(doc), MF_DOC_MAX_DEPTH + 1));
}

static int stops_after;

static int
stop_sink(void *ctx, const yaml_event_t *ev)
{
	int *seen = ctx;

	(void)ev;
	return ++*seen == stops_after;
}

/* A sink that says stop is obeyed at once. */
static void
test_sink_stops(void **state)
{
	static const char doc[] = "a: 1\nb: [2, 3]\nc: {d: 4}\n";
	int seen;

	(void)state;
	for (stops_after = 1; stops_after <= 8; stops_after++) {
		seen = 0;
		assert_int_equal(mf_yfast(doc, strlen(doc), stop_sink, &seen),
		    -1);
		assert_int_equal(seen, stops_after);
	}
}

/*
 * Every byte value at each of sixteen places in a comment, so at every
 * place in a word of eight: the reader goes on past printable ASCII and
 * gives up on anything else (the check is made a word at a time).
 */
static void
test_every_byte_everywhere(void **state)
{
	static const char head[] = "a: b # ";
	char doc[64];
	size_t n = sizeof(head) - 1;

	(void)state;
	for (int c = 0; c < 256; c++) {
		if (c == '\n')
			continue;
		for (size_t at = 0; at < 16; at++) {
			struct ytext fast = { 0 };
			int printable = c >= 0x20 && c <= 0x7e;

			memcpy(doc, head, n);
			memset(doc + n, 'x', 16);
			doc[n + at] = (char)c;
			memcpy(doc + n + 16, "\nd: e\n", 7);
			if ((mf_yfast(doc, n + 22, ytext_event, &fast) == 0) !=
			    printable)
				fail_msg("byte 0x%02x at %zu: %s", c, at,
				    printable ? "gave up" : "read");
			free(fast.s);
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_subset),
		cmocka_unit_test(test_shipped_files),
		cmocka_unit_test(test_gives_up),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_sink_stops),
		cmocka_unit_test(test_every_byte_everywhere),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
