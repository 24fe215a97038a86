/*
 * doc_json.c: RFC 8259 JSON read straight into the tree, as jansson reads it
 * with JSON_REJECT_DUPLICATES | JSON_DECODE_ANY: strings must be valid UTF-8
 * without NUL, an integer must fit in 64 bits and is written back as
 * "%lld" (so "-0" is "0"), a real as "%.17g", and one value fills the
 * input but for blank space.  Errors carry the 1-based line and column of
 * the byte at fault.
 *
 * A value the keep list leaves out is first skimmed (mf_json_skim, in
 * doc_skim.c): one loop that takes only what it is sure of and builds
 * nothing.  When it meets anything else (an error, a limit, a name with an
 * escape, an exponent) the value is read again by the functions that build
 * the tree, with no node to fill (out NULL): they fail with the error and
 * at the byte a built value would.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc_jtok.h"
#include "doc_skim.h"
#include "../base/str.h"

static inline void
jblank(struct mf_jparse *j)
{
	j->p = mf_scan_blank(j->p, j->end);
}

/*
 * One more value: a node of type into *out, or, when out is NULL, only
 * counted.  -1 with the error set (too many values, no memory).
 */
static int
jnode(struct mf_jparse *j, enum mf_node_type type, struct mf_node **out)
{
	if (out == NULL) {
		if (j->doc->nodes >= MF_DOC_MAX_NODES) {
			mf_json_limit(j, MF_ETOOBIG);
			return -1;
		}
		j->doc->nodes++;
		return 0;
	}
	*out = mf_doc_node(j->doc, type, 0, 0);
	if (*out == NULL) {
		mf_json_limit(j,
		    j->doc->nodes >= MF_DOC_MAX_NODES ? MF_ETOOBIG : MF_ENOMEM);
		return -1;
	}
	return 0;
}

/* The number at j->p checked; where it ends, *real whether it has a
 * fraction or an exponent.  NULL after failing. */
static const char *
jnumber_end(struct mf_jparse *j, int *real)
{
	const char *p = j->p, *digits;

	*real = 0;
	if (p < j->end && *p == '-')
		p++;
	digits = p;
	if (p < j->end && *p == '0')
		p++;
	else
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	if (p == digits) {
		mf_json_fail_value(j, j->p, "invalid number");
		return NULL;
	}
	if (p < j->end && *p == '.') {
		*real = 1;
		if (++p >= j->end || *p < '0' || *p > '9') {
			mf_json_fail_value(j, p, "invalid number");
			return NULL;
		}
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < j->end && (*p == 'e' || *p == 'E')) {
		*real = 1;
		p++;
		if (p < j->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= j->end || *p < '0' || *p > '9') {
			mf_json_fail_value(j, p, "invalid number");
			return NULL;
		}
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	return p;
}

/* The integer j->p..end as text ("%lld") into text[40]; its length, or 0
 * after failing. */
static size_t
jinteger(struct mf_jparse *j, const char *end, char *text)
{
	const char *digits = j->p + (*j->p == '-');
	uint64_t v = 0;
	size_t len;
	char *s;

	if ((size_t)(end - j->p) >= 40) {
		mf_json_fail_value(j, j->p, "too big integer");
		return 0;
	}
	for (const char *q = digits; q < end; q++) {
		if (v > (UINT64_C(1) << 63) / 10 ||
		    v * 10 + (uint64_t)(*q - '0') >
		        (UINT64_C(1) << 63) - (*j->p != '-')) {
			mf_json_fail_value(j, j->p, "too big integer");
			return 0;
		}
		v = v * 10 + (uint64_t)(*q - '0');
	}
	s = mf_digits(v, text + 40);
	if (*j->p == '-' && v != 0)
		*--s = '-';
	len = (size_t)(text + 40 - s);
	memmove(text, s, len);
	return len;
}

/* The real j->p..end as text ("%.17g") into text[40]; its length, or 0
 * after failing. */
static size_t
jreal(struct mf_jparse *j, const char *end, char *text)
{
	char *copy = mf_doc_strndup(j->doc, j->p, (size_t)(end - j->p));
	double d;

	if (copy == NULL) {
		mf_json_limit(j, MF_ENOMEM);
		return 0;
	}
	errno = 0;
	d = strtod(copy, NULL);
	if (errno == ERANGE && isinf(d)) {
		mf_json_fail_value(j, j->p, "real number overflow");
		return 0;
	}
	return (size_t)snprintf(text, 40, "%.17g", d);
}

static int
jnumber(struct mf_jparse *j, struct mf_node **out)
{
	const char *end;
	char text[40];
	int real;
	size_t len;

	end = jnumber_end(j, &real);
	if (end == NULL)
		return -1;
	len = real ? jreal(j, end, text) : jinteger(j, end, text);
	if (len == 0 || jnode(j, MF_NODE_NUM, out) != 0)
		return -1;
	j->p = end;
	if (out == NULL)
		return 0;
	(*out)->text = mf_doc_strndup(j->doc, text, len);
	(*out)->len = len;
	if ((*out)->text == NULL) {
		mf_json_limit(j, MF_ENOMEM);
		return -1;
	}
	return 0;
}

static int
jword(struct mf_jparse *j, const char *word, enum mf_node_type type,
    struct mf_node **out)
{
	size_t len = strlen(word);

	if ((size_t)(j->end - j->p) < len || memcmp(j->p, word, len) != 0) {
		mf_json_fail(j, j->p, "invalid token");
		return -1;
	}
	if (jnode(j, type, out) != 0)
		return -1;
	j->p += len;
	if (out != NULL) {
		(*out)->text = type == MF_NODE_NULL ? "null" : word;
		(*out)->len = len;
	}
	return 0;
}

/*
 * The member name s[0..len) of the object o onto the stack: refused when
 * it repeats one of the first MF_JSON_LINEAR_KEYS names (at, where it is) or
 * the object is full.  -1 after failing.
 */
static int
jname(struct mf_jparse *j, struct mf_jobj *o, const char *at, const char *s,
    size_t len)
{
	size_t nk = j->nkeys - o->base;

	if (nk < MF_JSON_LINEAR_KEYS && mf_json_has_key(j, o, nk, s, len)) {
		mf_json_duplicate(j, at, &(struct mf_jkey){ s, len });
		return -1;
	}
	if (nk >= j->max_keys) {
		mf_json_limit(j, MF_ETOOBIG);
		return -1;
	}
	if (mf_json_push_key(j, s, len) != 0) {
		mf_json_limit(j, MF_ENOMEM);
		return -1;
	}
	return 0;
}

/* A bit for each length (mod 64) of a name keep names. */
static uint64_t
kept_lengths(const struct mf_doc_keep *keep)
{
	uint64_t bits = 0;

	for (; keep != NULL && keep->key != NULL; keep++)
		bits |= mf_json_length_bit(keep->len);
	return bits;
}

/* The entry of keep that names s[0..len), or NULL. */
static const struct mf_doc_keep *
kept(const struct mf_doc_keep *keep, const char *s, size_t len)
{
	for (; keep->key != NULL; keep++)
		if (keep->len == len && keep->key[0] == s[0] &&
		    memcmp(keep->key, s, len) == 0)
			return keep;
	return NULL;
}

static int jvalue(struct mf_jparse *j, int depth,
    const struct mf_doc_keep *keep, struct mf_node **out);

/* The value at j->p only checked: skimmed, or read by jvalue where the
 * skim leaves it. */
static inline int
jskipped(struct mf_jparse *j, int depth)
{
	if (j->p >= j->skim_from && mf_json_skim(j, depth))
		return 0;
	return jvalue(j, depth, NULL, NULL);
}

/* The value at j->p into the collection n as its member key (n NULL:
 * only checked). */
static int
jchild(struct mf_jparse *j, int depth, const struct mf_doc_keep *keep,
    struct mf_node *n, struct mf_node **tail, const char *key)
{
	struct mf_node *c;

	if (n == NULL)
		return jvalue(j, depth, NULL, NULL);
	if (jvalue(j, depth, keep, &c) != 0)
		return -1;
	c->key = key;
	mf_doc_append(n, tail, c);
	return 0;
}

/*
 * One member of an object: name, ':' and value.  The value goes into the
 * object n (when n is not NULL and keep keeps it) or is only checked.
 */
static int
jmember(struct mf_jparse *j, int depth, const struct mf_doc_keep *keep,
    struct mf_node *n, struct mf_jobj *o, struct mf_node **tail)
{
	const struct mf_doc_keep *k = NULL;
	const char *at = j->p, *key;
	size_t klen;

	if (j->p >= j->end || *j->p != '"') {
		mf_json_fail(j, j->p, "string or '}' expected");
		return -1;
	}
	key = mf_json_string(j, n != NULL && keep == NULL, &klen);
	if (key == NULL || jname(j, o, at, key, klen) != 0)
		return -1;
	jblank(j);
	if (j->p >= j->end || *j->p != ':') {
		mf_json_fail(j, j->p, "':' expected");
		return -1;
	}
	j->p++;
	if (n != NULL && keep != NULL) {
		if ((o->kept & mf_json_length_bit(klen)) != 0)
			k = kept(keep, key, klen);
		if (k == NULL)
			return jskipped(j, depth);
		key = mf_doc_strndup(j->doc, key, klen);
		if (key == NULL) {
			mf_json_limit(j, MF_ENOMEM);
			return -1;
		}
	}
	return jchild(j, depth, k != NULL ? k->sub : NULL, n, tail, key);
}

/* The members of the object or elements of the array at j->p, into a
 * node at *out (out NULL: only checked). */
static int
jcollection(struct mf_jparse *j, int depth, const struct mf_doc_keep *keep,
    struct mf_node **out)
{
	int map = *j->p == '{';
	char close = map ? '}' : ']';
	const char *start = j->p;
	const struct mf_jkey *twice;
	struct mf_node *n = NULL, *tail = NULL;
	struct mf_jobj o = { j->nkeys, 0, 0 };

	if (depth > MF_DOC_MAX_DEPTH) {
		mf_json_limit(j, MF_ETOOBIG);
		return -1;
	}
	if (jnode(j, map ? MF_NODE_MAP : MF_NODE_SEQ, out) != 0)
		return -1;
	n = out != NULL ? *out : NULL;
	if (map && n != NULL)
		o.kept = kept_lengths(keep);
	j->p++;
	jblank(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		return 0;
	}
	for (;;) {
		if (map ? jmember(j, depth + 1, keep, n, &o, &tail) :
		          jchild(j, depth + 1, keep, n, &tail, NULL))
			return -1;
		jblank(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			jblank(j);
			continue;
		}
		if (j->p < j->end && *j->p == close)
			break;
		mf_json_fail(j, j->p,
		    map ? "',' or '}' expected" : "',' or ']' expected");
		return -1;
	}
	j->p++;
	if (map && j->nkeys - o.base > MF_JSON_LINEAR_KEYS &&
	    (twice = mf_json_repeated_key(j, o.base)) != NULL) {
		mf_json_duplicate(j, start, twice);
		return -1;
	}
	j->nkeys = o.base;
	return 0;
}

/* The value at j->p into *out, its members as keep says (NULL: all); out
 * NULL: only checked.  -1 after failing. */
static int
jvalue(struct mf_jparse *j, int depth, const struct mf_doc_keep *keep,
    struct mf_node **out)
{
	const char *s;
	size_t len;

	if (out == NULL && j->p >= j->skim_from && mf_json_skim(j, depth))
		return 0;
	jblank(j);
	if (j->p >= j->end) {
		mf_json_fail(j, j->p, "'[', '{' or a value expected");
		return -1;
	}
	switch (*j->p) {
	case '{':
	case '[':
		return jcollection(j, depth, keep, out);
	case '"':
		s = mf_json_string(j, out != NULL, &len);
		if (s == NULL || jnode(j, MF_NODE_STR, out) != 0)
			return -1;
		if (out != NULL) {
			(*out)->text = s;
			(*out)->len = len;
		}
		return 0;
	case 't':
		return jword(j, "true", MF_NODE_BOOL, out);
	case 'f':
		return jword(j, "false", MF_NODE_BOOL, out);
	case 'n':
		return jword(j, "null", MF_NODE_NULL, out);
	default:
		if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))
			return jnumber(j, out);
		mf_json_fail(j, j->p, "invalid token");
		return -1;
	}
}

enum mf_rc
mf_doc_json(struct mf_doc *doc, const char *buf, size_t len, size_t max_keys,
    const struct mf_doc_keep *keep, struct mf_error *err)
{
	struct mf_jkey first[MF_JSON_FIRST_KEYS];
	struct mf_jparse j = { doc, buf, buf, buf + len, err, MF_OK, max_keys,
		first, 0, MF_JSON_FIRST_KEYS, buf };
	enum mf_rc rc = MF_OK;

	if (jvalue(&j, 1, keep, &doc->root) != 0) {
		rc = j.rc != MF_OK ? j.rc : mf_json_limit(&j, MF_ENOMEM);
	} else {
		jblank(&j);
		if (j.p < j.end)
			rc = mf_json_fail(&j, j.p, "end of file expected");
	}
	if (j.keys != first)
		free(j.keys);
	if (rc != MF_OK)
		doc->root = NULL;
	return rc;
}
