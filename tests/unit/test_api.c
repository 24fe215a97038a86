/*
 * test_api.c: the answer layer (api.h).  Every request in examples/ goes
 * through the library as JSON, YAML and text: the JSON must be the
 * checked-in NAME.response.json, the YAML must read back (through libyaml)
 * as the same tree, and the text must name the job and its floor.
 *
 * Then an allocation-failure run, after curl's torture mode: for an admit,
 * a rejection, an estimate, a diagnosis, a review (admitted, and denied)
 * and a catalogue load,
 * the first run counts the allocations and each later run fails the n-th
 * of them.  Every run must end in the full answer or in a clean 500 (for
 * the catalogue, MF_ENOMEM), never in another answer, and must free all
 * it allocated.  This binary is linked with --wrap for malloc, calloc,
 * realloc, strdup and free (the Makefile says so).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "catalog.h"
#include "doc/doc.h"
#include "files.h"
#include "msg.h"
#include "review/review.h"

/* --- the allocator ----------------------------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
void __wrap_free(void *p);

static long allocs;       /* allocations so far in this run */
static long fail_at = -1; /* the allocation that fails, or -1 */
static long live;         /* allocated and not yet freed */

static int
refuse(void)
{
	return allocs++ == fail_at;
}

void *
__wrap_malloc(size_t n)
{
	void *p = refuse() ? NULL : __real_malloc(n);

	live += p != NULL;
	return p;
}

void *
__wrap_calloc(size_t k, size_t n)
{
	void *p = refuse() ? NULL : __real_calloc(k, n);

	live += p != NULL;
	return p;
}

void *
__wrap_realloc(void *p, size_t n)
{
	void *q = refuse() ? NULL : __real_realloc(p, n);

	live += p == NULL && q != NULL;
	return q;
}

char *
__wrap_strdup(const char *s)
{
	char *p = refuse() ? NULL : __real_strdup(s);

	live += p != NULL;
	return p;
}

void
__wrap_free(void *p)
{
	live -= p != NULL;
	__real_free(p);
}

/* --- what every test shares --------------------------------------------- */

struct env {
	struct mf_catalog *cat;
	struct mf_models *models;
	struct mf_api api;
};

static int
setup(void **state)
{
	static struct env e;

	memset(&e, 0, sizeof(e));
	if (shipped_data(&e.cat, &e.models) != 0)
		return -1;
	e.api.cat = e.cat;
	e.api.models = e.models;
	*state = &e;
	return 0;
}

static int
teardown(void **state)
{
	struct env *e = *state;

	mf_models_free(e->models);
	mf_cat_unref(e->cat);
	return 0;
}

/* The call an example's first line names: "# POST /v1/admit". */
static mf_api_call
call_of(const char *body, const char *name)
{
	if (strstr(name, ".txt") != NULL)
		return mf_api_diagnose;
	if (strncmp(body, "# POST /v1/estimate", 19) == 0)
		return mf_api_estimate;
	if (strncmp(body, "# POST /v1/admit", 16) == 0)
		return mf_api_admit;
	return NULL;
}

/* --- YAML against JSON -------------------------------------------------- */

static void same_tree(const json_t *j, const struct mf_node *n, const char *at);

static void
same_scalar(const json_t *j, const struct mf_node *n, const char *at)
{
	char *text;

	if (json_is_string(j)) {
		if (n->type != MF_NODE_STR ||
		    strcmp(n->text, json_string_value(j)) != 0)
			fail_msg("%s: YAML '%s', JSON '%s'", at,
			    n->text ? n->text : "", json_string_value(j));
		return;
	}
	if (json_is_null(j)) {
		if (n->type != MF_NODE_NULL)
			fail_msg("%s: not null in YAML", at);
		return;
	}
	if (json_is_boolean(j)) {
		if (n->type != MF_NODE_BOOL ||
		    strcmp(n->text, json_is_true(j) ? "true" : "false") != 0)
			fail_msg("%s: boolean differs", at);
		return;
	}
	/* A number: the same value, whatever the text. */
	text = json_dumps(j, JSON_ENCODE_ANY);
	if (n->type != MF_NODE_NUM ||
	    strtod(n->text, NULL) != json_number_value(j))
		fail_msg("%s: YAML %s, JSON %s", at, n->text ? n->text : "?",
		    text ? text : "?");
	free(text);
}

static void
same_tree(const json_t *j, const struct mf_node *n, const char *at)
{
	char sub[512];

	if (json_is_object(j)) {
		const char *key;
		json_t *v;

		if (n->type != MF_NODE_MAP || n->len != json_object_size(j))
			fail_msg("%s: not the same mapping", at);
		json_object_foreach ((json_t *)j, key, v) {
			snprintf(sub, sizeof(sub), "%s.%s", at, key);
			if (mf_node_get(n, key) == NULL)
				fail_msg("%s: missing in YAML", sub);
			same_tree(v, mf_node_get(n, key), sub);
		}
		return;
	}
	if (json_is_array(j)) {
		const struct mf_node *c = n->child;

		if (n->type != MF_NODE_SEQ || n->len != json_array_size(j))
			fail_msg("%s: not the same list", at);
		for (size_t i = 0; i < json_array_size(j); i++, c = c->next) {
			snprintf(sub, sizeof(sub), "%s[%zu]", at, i);
			same_tree(json_array_get(j, i), c, sub);
		}
		return;
	}
	same_scalar(j, n, at);
}

/* The text names the framework and each field the recipe's fromFramework
 * lists, as the JSON does. */
static void
text_framework(const char *name, const json_t *recipe, const char *text)
{
	const json_t *fw = json_object_get(recipe, "framework"), *f;
	char want[128];
	size_t i;

	if (!json_is_string(fw))
		return;
	snprintf(want, sizeof(want), "recipe: from %s:", json_string_value(fw));
	if (strstr(text, want) == NULL)
		fail_msg("%s: the text answer lacks '%s'", name, want);
	json_array_foreach (json_object_get(recipe, "fromFramework"), i, f)
		if (strstr(strstr(text, want), json_string_value(f)) == NULL)
			fail_msg(
			    "%s: the text answer lacks %s from the framework",
			    name, json_string_value(f));
}

/* --- every example ------------------------------------------------------ */

static void
check_example(const struct env *e, const char *name)
{
	char path[4096], want_path[4096];
	struct mf_answer ans;
	struct mf_doc *doc = NULL;
	struct mf_error err;
	json_t *want, *got;
	const char *dot;
	mf_api_call fn;
	char *body;
	size_t len = 0;

	body = slurp(top_path(path, sizeof(path), name), &len);
	assert_non_null(body);
	fn = call_of(body, name);
	if (fn == NULL) {
		free(body);
		return;
	}
	dot = strrchr(name, '.');
	snprintf(want_path, sizeof(want_path), "%s/%.*s.response.json", top(),
	    (int)(dot - name), name);
	want = json_load_file(want_path, 0, NULL);
	if (want == NULL)
		fail_msg("%s: no readable %s", name, want_path);

	fn(&e->api, body, len, MF_DOC_AUTO, MF_OUT_JSON, &ans);
	got = json_loads(ans.body, 0, NULL);
	/* The examples' answers leave out the fingerprint, a digest of the
	 * job (test_fingerprint.c): it is the one the answer says it is. */
	if (got != NULL && json_object_get(got, "fingerprint") != NULL) {
		assert_string_equal(json_string_value(
		                        json_object_get(got, "fingerprint")),
		    ans.fingerprint);
		json_object_set(want, "fingerprint",
		    json_object_get(got, "fingerprint"));
	}
	if (got == NULL || !json_equal(got, want))
		fail_msg("%s: the JSON answer differs from %s:\n%s", name,
		    want_path, ans.body);
	mf_answer_free(&ans);

	fn(&e->api, body, len, MF_DOC_AUTO, MF_OUT_YAML, &ans);
	assert_string_equal(ans.content_type, "application/yaml");
	if (mf_doc_parse(ans.body, ans.len, MF_DOC_YAML, &doc, &err) != MF_OK)
		fail_msg("%s: the YAML answer does not parse: %s\n%s", name,
		    MSG(&err), ans.body);
	same_tree(want, mf_doc_root(doc), name);
	mf_doc_free(doc);
	mf_answer_free(&ans);

	fn(&e->api, body, len, MF_DOC_AUTO, MF_OUT_TEXT, &ans);
	if (json_is_string(json_object_get(want, "job")) &&
	    strstr(ans.body, json_string_value(json_object_get(want, "job"))) ==
	        NULL)
		fail_msg("%s: the text answer lacks the job's name", name);
	if (json_is_string(json_object_get(want, "minMemory")) &&
	    strstr(ans.body,
	        json_string_value(json_object_get(want, "minMemory"))) == NULL)
		fail_msg("%s: the text answer lacks minMemory", name);
	if (json_is_string(json_object_get(want, "cause")) &&
	    strstr(ans.body,
	        json_string_value(json_object_get(want, "cause"))) == NULL)
		fail_msg("%s: the text answer lacks the cause", name);
	/* The text says what the recipe object says of offloading. */
	if (json_is_true(json_object_get(json_object_get(want, "recipe"),
	        "activationOffload")) &&
	    strstr(ans.body, "activationOffload: the layers' inputs in host") ==
	        NULL)
		fail_msg("%s: the text answer lacks activationOffload", name);
	text_framework(name, json_object_get(want, "recipe"), ans.body);
	mf_answer_free(&ans);
	json_decref(got);
	json_decref(want);
	free(body);
}

static void
test_api_every_example(void **state)
{
	const struct env *e = *state;
	char dir[4096], name[512];
	struct dirent *de;
	int n = 0;
	DIR *d;

	d = opendir(top_path(dir, sizeof(dir), "examples"));
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		size_t k = strlen(de->d_name);

		if (k < 5 ||
		    (strcmp(de->d_name + k - 5, ".yaml") != 0 &&
		        strcmp(de->d_name + k - 4, ".txt") != 0))
			continue;
		snprintf(name, sizeof(name), "examples/%s", de->d_name);
		check_example(e, name);
		n++;
	}
	closedir(d);
	/* The examples of design 5's figures and section 10's formats. */
	assert_true(n >= 20);
}

/* --- allocation failures ------------------------------------------------ */

struct run {
	mf_api_call fn;
	const char *file; /* a request in the tree */
};

static const struct run runs[] = {
	{ mf_api_admit, "examples/llama-8b-8bit-admit.yaml" },
	{ mf_api_admit, "examples/llama-70b-full-reject.yaml" },
	{ mf_api_admit, "examples/min-memory-88Gi.yaml" },
	{ mf_api_estimate, "examples/llama-8b-full-adamw.yaml" },
	{ mf_api_diagnose, "tests/data/unit/diagnose-job.json" },
	{ mf_api_review, "examples/k8s-admissionreview.json" },
	{ mf_api_review, "tests/data/review/pod-eager.json" },
};

/* Run fn once with the n-th allocation failing (-1: none); the answer's
 * body (malloc'd with the real allocator) and kind. */
static char *
one_run(const struct env *e, const struct run *r, const char *body, size_t len,
    long n, enum mf_answer_kind *kind)
{
	struct mf_answer ans;
	char *copy;
	long before = live;

	allocs = 0;
	fail_at = n;
	r->fn(&e->api, body, len, MF_DOC_AUTO, MF_OUT_JSON, &ans);
	fail_at = -1;
	*kind = ans.kind;
	copy = __real_strdup(ans.body);
	mf_answer_free(&ans);
	if (live != before)
		fail_msg("%s: allocation %ld failing leaks %ld blocks", r->file,
		    n, live - before);
	return copy;
}

static void
test_api_allocation_failures(void **state)
{
	const struct env *e = *state;
	char path[4096];

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		const struct run *r = &runs[i];
		enum mf_answer_kind want_kind, kind;
		char *want, *got, *body;
		long total;
		size_t len = 0;

		body = slurp(top_path(path, sizeof(path), r->file), &len);
		assert_non_null(body);
		want = one_run(e, r, body, len, -1, &want_kind);
		total = allocs;
		assert_true(total > 0);
		for (long n = 0; n < total; n++) {
			got = one_run(e, r, body, len, n, &kind);
			if (kind == MF_ANS_INTERNAL)
				assert_non_null(strstr(got, "out of memory"));
			else if (kind != want_kind || strcmp(got, want) != 0)
				fail_msg("%s: allocation %ld of %ld failing "
				         "gives another answer:\n%s",
				    r->file, n, total, got);
			__real_free(got);
		}
		__real_free(want);
		free(body);
	}
}

static void
test_api_catalog_load_allocation_failures(void **state)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;
	char path[4096];
	long total, before = live;
	enum mf_rc rc;

	(void)state;
	top_path(path, sizeof(path), "catalog/gpus.yaml");
	allocs = 0;
	assert_int_equal(mf_cat_load(path, &cat, &err), MF_OK);
	total = allocs;
	mf_cat_unref(cat);
	for (long n = 0; n < total; n++) {
		cat = NULL;
		allocs = 0;
		fail_at = n;
		rc = mf_cat_load(path, &cat, &err);
		fail_at = -1;
		if (rc == MF_OK)
			mf_cat_unref(cat);
		else if (rc != MF_ENOMEM)
			fail_msg("allocation %ld failing: %s", n, MSG(&err));
		if (live != before)
			fail_msg("allocation %ld failing leaks %ld blocks", n,
			    live - before);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_api_every_example),
		cmocka_unit_test(test_api_allocation_failures),
		cmocka_unit_test(test_api_catalog_load_allocation_failures),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
