/*
 * doc_skim.c: a JSON value that a keep list leaves out, checked and
 * counted in one loop with no call per value, nothing built: what the
 * reader (doc_json.c) would refuse, or is not sure of, is left to it.
 */
#include <assert.h>
#include <string.h>

#include "doc_skim.h"

/*
 * Past the 16-byte blocks of string text from p that hold only printable
 * ASCII and escapes of one character: where a block holds anything else
 * (the closing quote, \\u, a control character, UTF-8) or the input is
 * too near its end, that byte.  An escape is taken from the block's bits
 * with no new scan: JSON in a JSON string (kubectl's
 * last-applied-configuration) escapes every quote.
 */
static const char *
skim_blocks(const char *p, const char *end, int *escaped)
{
#ifdef MF_SCAN_SSE2
	const char *next;
	unsigned m, i;

	/* 17: an escape may end one past the block. */
	while (end - p >= 17) {
		m = mf_scan_mark16(MF_RUN_PLAIN, p);
		next = p + 16;
		while (m != 0) {
			i = (unsigned)__builtin_ctz(m);
			if (p[i] != '\\' || !mf_scan_short_escape(p[i + 1]))
				return p + i;
			*escaped = 1;
			if (i == 15)
				next = p + 17;
			m &= ~(3u << i);
		}
		p = next;
	}
#else
	(void)end;
	(void)escaped;
#endif
	return p;
}

/* The rest of the string whose text starts at p, checked: where it ends
 * (past its closing quote), or NULL for anything left to mf_json_string.
 * *escaped is set when it has an escape. */
static const char *
skim_escaped(const struct mf_jparse *j, const char *p, int *escaped)
{
	uint32_t c;
	size_t n;

	for (;;) {
		p = skim_blocks(p, j->end, escaped);
		p = mf_scan_plain(p, j->end);
		if (p == j->end)
			return NULL;
		if (*p == '"')
			return p + 1;
		if (*p == '\\') {
			if (j->end - p < 2)
				return NULL;
			*escaped = 1;
			if (mf_scan_short_escape(p[1])) {
				p += 2;
				continue;
			}
			if (p[1] != 'u')
				return NULL;
			p = mf_scan_unicode(p + 2, j->end, &c);
			if (p == NULL)
				return NULL;
			continue;
		}
		if ((unsigned char)*p < 0x20)
			return NULL;
		n = mf_scan_utf8((const unsigned char *)p,
		    (const unsigned char *)j->end);
		if (n == 0)
			return NULL;
		p += n;
	}
}

/* skim_string, with the common case, a string of printable ASCII without
 * escapes, in line. */
static inline const char *
skim_string(const struct mf_jparse *j, const char *p, int *escaped)
{
	p = mf_scan_plain(p, j->end);
	if (p < j->end && *p == '"')
		return p + 1;
	return skim_escaped(j, p, escaped);
}

/* The number at p checked: where it ends, or NULL for anything left to
 * jnumber (an error, an exponent, a number long enough to overflow). */
static const char *
skim_number(const char *p, const char *end)
{
	const char *q = p;
	int real = 0;

	if (q < end && *q == '-')
		q++;
	if (q < end && *q == '0')
		q++;
	else if (q < end && *q >= '1' && *q <= '9')
		while (q < end && *q >= '0' && *q <= '9')
			q++;
	else
		return NULL;
	if (q < end && *q == '.') {
		real = 1;
		if (++q >= end || *q < '0' || *q > '9')
			return NULL;
		while (q < end && *q >= '0' && *q <= '9')
			q++;
	}
	if (q < end && (*q == 'e' || *q == 'E'))
		return NULL;
	/* 18 characters are below 2^63; 300 digits below DBL_MAX. */
	return q - p <= (real ? 300 : 18) ? q : NULL;
}

/* The string, number, true, false or null at p: where it ends, or NULL. */
static const char *
skim_scalar(const struct mf_jparse *j, const char *p)
{
	static const char *const words[] = { "true", "false", "null" };
	size_t n;
	int escaped;

	if (p >= j->end)
		return NULL;
	if (*p == '"')
		return skim_string(j, p + 1, &escaped);
	for (size_t i = 0; i < 3; i++) {
		if (*p != words[i][0])
			continue;
		n = strlen(words[i]);
		return (size_t)(j->end - p) >= n &&
		        memcmp(p, words[i], n) == 0 ?
		    p + n :
		    NULL;
	}
	return skim_number(p, j->end);
}

/*
 * The name at p of a member of the object o, onto the stack, and its ':':
 * where its value starts, or NULL (doc_json.c's jname and jmember say
 * why).  Names are compared decoded: one with an escape (managedFields has
 * many) is decoded by mf_json_string, which cannot fail on what
 * skim_string took.
 */
static const char *
skim_name(struct mf_jparse *j, const char *p, struct mf_jobj *o)
{
	size_t nk = j->nkeys - o->base, len;
	const char *q, *s = p + 1, *at = j->p;
	int escaped = 0;

	if (p >= j->end || *p != '"')
		return NULL;
	q = skim_string(j, p + 1, &escaped);
	if (q == NULL)
		return NULL;
	len = (size_t)(q - 1 - s);
	if (escaped) {
		j->p = p;
		s = mf_json_string(j, 0, &len);
		j->p = at;
	}
	if (s == NULL ||
	    (nk < MF_JSON_LINEAR_KEYS && mf_json_has_key(j, o, nk, s, len)) ||
	    nk >= j->max_keys || mf_json_push_key(j, s, len) != 0)
		return NULL;
	q = mf_scan_blank(q, j->end);
	return q < j->end && *q == ':' ? q + 1 : NULL;
}

/*
 * The value at j->p (at depth) checked with no call per value: the
 * collections open are a stack of their closing brackets.  1 when it is
 * valid, j->p past it and counted as jvalue would; 0, and nothing changed
 * but skim_from, when it meets anything it leaves to jvalue.  A value
 * that starts before skim_from is not tried: so no byte is skimmed twice.
 */
int
mf_json_skim(struct mf_jparse *j, int depth)
{
	char close[MF_DOC_MAX_DEPTH + 1];
	struct mf_jobj obj[MF_DOC_MAX_DEPTH + 1];
	const char *p = j->p, *at;
	size_t nodes = j->doc->nodes, keys = j->nkeys;
	int level = 0, name = 0; /* name: a member's name comes first */

	for (;;) {
		at = p = mf_scan_blank(p, j->end);
		if (name) {
			/* A name is read only inside an object opened below. */
			assert(level > 0 && level <= MF_DOC_MAX_DEPTH);
			p = skim_name(j, p, &obj[level - 1]);
			if (p == NULL)
				goto fail;
			at = p = mf_scan_blank(p, j->end);
			name = 0;
		}
		if (p < j->end && (*p == '{' || *p == '[')) {
			if (depth + level > MF_DOC_MAX_DEPTH ||
			    nodes >= MF_DOC_MAX_NODES)
				goto fail;
			nodes++;
			assert(level < MF_DOC_MAX_DEPTH);
			close[level] = *p == '{' ? '}' : ']';
			obj[level].base = j->nkeys;
			obj[level++].lens = 0;
			at = p = mf_scan_blank(p + 1, j->end);
			if (p < j->end && *p == close[level - 1]) {
				p++;
				level--;
			} else {
				name = close[level - 1] == '}';
				continue;
			}
		} else {
			p = skim_scalar(j, p);
			if (p == NULL || nodes >= MF_DOC_MAX_NODES)
				goto fail;
			nodes++;
		}
		/* After a value: the next one, or the end of collections. */
		while (level > 0) {
			at = p = mf_scan_blank(p, j->end);
			if (p < j->end && *p == ',') {
				name = close[level - 1] == '}';
				p++;
				break;
			}
			if (p >= j->end || *p != close[level - 1])
				goto fail;
			p++;
			level--;
			if (close[level] == '}' &&
			    j->nkeys - obj[level].base > MF_JSON_LINEAR_KEYS &&
			    mf_json_repeated_key(j, obj[level].base) != NULL)
				goto fail;
			j->nkeys = obj[level].base;
		}
		if (level == 0)
			break;
	}
	j->p = p;
	j->doc->nodes = nodes;
	return 1;
fail:
	j->nkeys = keys;
	j->skim_from = at + 1;
	return 0;
}
