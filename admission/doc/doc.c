/*
 * doc.c: the choice of reader (YAML in doc_yaml.c, JSON in doc_json.c)
 * and the typed readers of the tree's nodes.
 */
#include "doc.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc_tree.h"
#include "../base/internal.h"
#include "../base/str.h"

enum mf_rc
mf_doc_parse_kept(const char *buf, size_t len, enum mf_doc_format fmt,
    const struct mf_doc_keep *keep, struct mf_doc **out, struct mf_error *err)
{
	struct mf_doc *doc;
	enum mf_rc rc;

	if (fmt == MF_DOC_AUTO) {
		size_t i = 0;

		while (i < len && strchr(" \t\r\n", buf[i]) != NULL &&
		    buf[i] != '\0')
			i++;
		fmt = i < len && (buf[i] == '{' || buf[i] == '[') ?
		    MF_DOC_JSON :
		    MF_DOC_YAML;
	}
	/* A keep list is for JSON only: YAML is always read whole. */
	assert(keep == NULL || fmt == MF_DOC_JSON || fmt == MF_DOC_JSON_WIDE);
	doc = malloc(sizeof(*doc));
	if (doc == NULL)
		return mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
		    "out of memory");
	/* Cleared by assignment, not by calloc, which glibc before 2.41
	 * serves past the thread's cache of freed chunks (sourceware.org
	 * glibc commit 226e3b0a4136), nor by memset, which GCC joins with
	 * the malloc into a calloc.  A request's document is made and freed
	 * on every request (a 24-byte calloc and free: about 0.1k more than
	 * malloc, callgrind; docs/performance.md). */
	*doc = (struct mf_doc){ 0 };
	if (fmt == MF_DOC_JSON || fmt == MF_DOC_JSON_WIDE)
		rc = mf_doc_json(doc, buf, len,
		    fmt == MF_DOC_JSON ? MF_DOC_MAX_KEYS : MF_DOC_MAX_NODES,
		    keep, err);
	else
		rc = mf_doc_yaml(doc, buf, len, err);
	if (rc != MF_OK) {
		mf_doc_free(doc);
		return rc;
	}
	*out = doc;
	return MF_OK;
}

enum mf_rc
mf_doc_parse(const char *buf, size_t len, enum mf_doc_format fmt,
    struct mf_doc **out, struct mf_error *err)
{
	return mf_doc_parse_kept(buf, len, fmt, NULL, out, err);
}

/* --- readers --------------------------------------------------------- */

const char *
mf_node_type_name(enum mf_node_type type)
{
	switch (type) {
	case MF_NODE_NULL:
		return "null";
	case MF_NODE_BOOL:
		return "a boolean";
	case MF_NODE_NUM:
		return "a number";
	case MF_NODE_STR:
		return "a string";
	case MF_NODE_SEQ:
		return "a list";
	case MF_NODE_MAP:
		return "a mapping";
	}
	return "unknown";
}

static enum mf_rc
wrong_type(const struct mf_node *n, const char *path, const char *want,
    struct mf_error *err)
{
	return mf_error_set(err, MF_EINVAL, path, n->line, n->column,
	    "must be %s, not %s", want, mf_node_type_name(n->type));
}

static enum mf_rc
bad_value(const struct mf_node *n, const char *path, const char *why,
    struct mf_error *err)
{
	return mf_error_set(err, MF_EINVAL, path, n->line, n->column,
	    "'%.40s' %s", n->text, why);
}

/* Digits a number's text may have for digits() to read it: below 10^15,
 * so below 2^53, exact as a double too. */
#define DIGITS_MAX 15

/* Whether n's text is only decimal digits, at most DIGITS_MAX of them
 * (nearly every number a document gives), and then its value in *v, as
 * strtoll and strtod read it, without their calls. */
static int
digits(const struct mf_node *n, int64_t *v)
{
	int64_t x = 0;

	if (n->len == 0 || n->len > DIGITS_MAX)
		return 0;
	for (size_t i = 0; i < n->len; i++) {
		unsigned d = (unsigned char)n->text[i] - (unsigned)'0';

		if (d > 9)
			return 0;
		x = x * 10 + (int64_t)d;
	}
	*v = x;
	return 1;
}

/* n's text, a number, as a whole number: as strtoll reads it, or a whole
 * real of at most 9e15 ("1e3", "12.0"). */
static enum mf_rc
whole(const struct mf_node *n, const char *path, int64_t *v,
    struct mf_error *err)
{
	long long x;
	char *end;

	if (digits(n, v))
		return MF_OK;
	errno = 0;
	x = strtoll(n->text, &end, 10);
	if (*end != '\0') {
		double d = strtod(n->text, &end);

		if (*end != '\0' || d != floor(d) || !isfinite(d) ||
		    fabs(d) > 9e15)
			return bad_value(n, path, "is not a whole number", err);
		x = (long long)d;
	} else if (errno == ERANGE) {
		return bad_value(n, path, "is out of range", err);
	}
	*v = x;
	return MF_OK;
}

enum mf_rc
mf_node_int(const struct mf_node *n, const char *path, int64_t min, int64_t max,
    int64_t *out, struct mf_error *err)
{
	int64_t v = 0;

	if (n->type != MF_NODE_NUM)
		return wrong_type(n, path, "an integer", err);
	if (whole(n, path, &v, err) != MF_OK)
		return MF_EINVAL;
	if (v < min || v > max)
		return mf_error_set(err, MF_EINVAL, path, n->line, n->column,
		    "%" PRId64 " is out of range [%" PRId64 ", %" PRId64 "]", v,
		    min, max);
	*out = v;
	return MF_OK;
}

enum mf_rc
mf_node_double(const struct mf_node *n, const char *path, double min,
    double max, double *out, struct mf_error *err)
{
	char *end;
	int64_t d;
	double v;

	if (n->type != MF_NODE_NUM)
		return wrong_type(n, path, "a number", err);
	if (digits(n, &d)) {
		v = (double)d;
	} else {
		v = strtod(n->text, &end);
		if (*end != '\0' || !isfinite(v))
			return bad_value(n, path, "is not a finite number",
			    err);
	}
	if (v < min || v > max)
		return mf_error_set(err, MF_EINVAL, path, n->line, n->column,
		    "%g is out of range [%g, %g]", v, min, max);
	*out = v;
	return MF_OK;
}

enum mf_rc
mf_node_bool(const struct mf_node *n, const char *path, int *out,
    struct mf_error *err)
{
	if (n->type != MF_NODE_BOOL)
		return wrong_type(n, path, "true or false", err);
	*out = n->text[0] == 't' || n->text[0] == 'T';
	return MF_OK;
}

enum mf_rc
mf_node_str(const struct mf_node *n, const char *path, const char **out,
    struct mf_error *err)
{
	if (n->type != MF_NODE_STR)
		return wrong_type(n, path, "a string", err);
	*out = n->text;
	return MF_OK;
}

enum mf_rc
mf_node_map(const struct mf_node *n, const char *path, const char *const *known,
    struct mf_error *err)
{
	const struct mf_node *c;
	char field[128];

	if (n->type != MF_NODE_MAP)
		return wrong_type(n, path, "a mapping", err);
	for (c = n->child; c != NULL && known != NULL; c = c->next) {
		int found = 0;

		for (int i = 0; known[i] != NULL && !found; i++)
			found = mf_streq(c->key, known[i]);
		if (!found)
			return mf_error_set(err, MF_EINVAL,
			    mf_path(field, sizeof(field), path, c->key),
			    c->key_line, c->key_column, "unknown field");
	}
	return MF_OK;
}

char *
mf_path(char *buf, size_t size, const char *parent, const char *key)
{
	size_t p = parent ? strlen(parent) : 0, k = strlen(key), n = 0;

	if (size == 0)
		return buf;
	if (p > 0 && p + 1 < size) {
		memcpy(buf, parent, p);
		buf[p] = '.';
		n = p + 1;
	}
	if (k > size - 1 - n)
		k = size - 1 - n;
	memcpy(buf + n, key, k);
	buf[n + k] = '\0';
	return buf;
}
