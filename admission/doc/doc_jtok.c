/*
 * doc_jtok.c: what the JSON reader (doc_json.c) and its skimmer
 * (doc_skim.c) both need of a token: an error at its byte, a string with
 * escapes checked and decoded, the stack of the open objects' names.
 */
#include <stdlib.h>
#include <string.h>

#include "doc_jtok.h"

#define JSON_TOO_BIG \
	"document nested deeper than 64 levels or holding too many values"

/* The line of the byte at in j's input; *column its column. */
static int
position(const struct mf_jparse *j, const char *at, int *column)
{
	int line = 1;

	*column = 1;
	for (const char *q = j->start; q < at && q < j->end; q++) {
		if (*q == '\n') {
			line++;
			*column = 1;
		} else {
			(*column)++;
		}
	}
	return line;
}

/* The error "not valid JSON: WHAT" at the byte at, of the field path
 * (NULL: none); into j alone when it has no err (path_name's). */
static enum mf_rc
fail(struct mf_jparse *j, const char *at, const char *path, const char *what)
{
	int line, column;

	j->rc = MF_EINVAL;
	if (j->err == NULL)
		return MF_EINVAL;
	line = position(j, at, &column);
	return mf_error_set(j->err, MF_EINVAL, path, line, column,
	    "not valid JSON: %s", what);
}

enum mf_rc
mf_json_fail(struct mf_jparse *j, const char *at, const char *what)
{
	return fail(j, at, NULL, what);
}

static char *
jdecode(struct mf_jparse *j, const char *p, const char *close, char *o);

/* An open collection, as json_path reads the input again. */
struct open {
	char brace;        /* '{' or '[' */
	int value;         /* an object's: at a member's value, not its name */
	const char *name;  /* an object's member at hand, as the input has it */
	size_t len, index; /* the name's length; an array's element at hand */
};

/* The name of the member o has at hand onto the path in buf, decoded:
 * the input before the error is valid JSON, so it decodes (else it goes
 * as it is, and nothing is said). */
static void
path_name(const struct mf_jparse *j, const struct open *o, char *buf,
    size_t size)
{
	struct mf_jparse quiet = *j;
	char *name = malloc(o->len + 1), *end = NULL;

	quiet.err = NULL;
	if (name != NULL)
		end = jdecode(&quiet, o->name, o->name + o->len, name);
	if (end != NULL)
		mf_doc_path_key(buf, size, name, (size_t)(end - name));
	else
		mf_doc_path_key(buf, size, o->name, o->len);
	free(name);
}

/*
 * The path, into buf, of the value or member name at at, after the valid
 * JSON j's input starts with: each open object's member at hand, each
 * open array's element.  Read again only for an error: the reader keeps
 * no path.
 */
static void
json_path(const struct mf_jparse *j, const char *at, char *buf, size_t size)
{
	struct open o[MF_DOC_MAX_DEPTH + 1], *top = NULL;
	int depth = 0;

	for (const char *p = j->start; p < at; p++) {
		top = depth > 0 && depth <= MF_DOC_MAX_DEPTH + 1 ?
		    &o[depth - 1] :
		    NULL;
		if (*p == '{' || *p == '[') {
			if (depth <= MF_DOC_MAX_DEPTH)
				o[depth] =
				    (struct open){ *p, *p == '[', NULL, 0, 0 };
			depth++;
		} else if (*p == '}' || *p == ']') {
			depth--;
		} else if (*p == ',' && top != NULL) {
			top->value = top->brace == '[';
			top->index++;
		} else if (*p == ':' && top != NULL) {
			top->value = 1;
		} else if (*p == '"') {
			const char *q = p + 1;

			while (q < at && *q != '"')
				q += *q == '\\' ? 2 : 1;
			if (top != NULL && !top->value) {
				top->name = p + 1;
				top->len = (size_t)(q - p - 1);
			}
			p = q;
		}
	}
	buf[0] = '\0';
	for (int i = 0; i < depth && i <= MF_DOC_MAX_DEPTH; i++) {
		if (o[i].brace == '[')
			mf_doc_path_index(buf, size, o[i].index);
		else if (o[i].value)
			path_name(j, &o[i], buf, size);
	}
}

enum mf_rc
mf_json_duplicate(struct mf_jparse *j, const char *at, const struct mf_jkey *k)
{
	char path[sizeof(j->err->field)];
	int line, column;

	json_path(j, at, path, sizeof(path));
	line = position(j, at, &column);
	j->rc = MF_EINVAL;
	return mf_doc_duplicate(j->err, path, sizeof(path), k->s, k->len, line,
	    column);
}

enum mf_rc
mf_json_fail_value(struct mf_jparse *j, const char *at, const char *what)
{
	char path[sizeof(j->err->field)];

	if (j->err == NULL)
		return fail(j, at, NULL, what);
	json_path(j, at, path, sizeof(path));
	return fail(j, at, path[0] != '\0' ? path : NULL, what);
}

enum mf_rc
mf_json_limit(struct mf_jparse *j, enum mf_rc rc)
{
	j->rc = rc;
	return mf_error_set(j->err, rc, NULL, 0, 0, "%s",
	    rc == MF_ETOOBIG ? JSON_TOO_BIG : "out of memory");
}

static char *
put_utf8(char *o, uint32_t c)
{
	if (c < 0x80) {
		*o++ = (char)c;
	} else if (c < 0x800) {
		*o++ = (char)(0xC0 | c >> 6);
		*o++ = (char)(0x80 | (c & 0x3F));
	} else if (c < 0x10000) {
		*o++ = (char)(0xE0 | c >> 12);
		*o++ = (char)(0x80 | ((c >> 6) & 0x3F));
		*o++ = (char)(0x80 | (c & 0x3F));
	} else {
		*o++ = (char)(0xF0 | c >> 18);
		*o++ = (char)(0x80 | ((c >> 12) & 0x3F));
		*o++ = (char)(0x80 | ((c >> 6) & 0x3F));
		*o++ = (char)(0x80 | (c & 0x3F));
	}
	return o;
}

/* The quote that closes the string whose text starts at p (one not
 * escaped by an odd run of backslashes), or NULL. */
static const char *
jclose(const char *p, const char *end)
{
	const char *q;
	size_t n;

	while ((q = memchr(p, '"', (size_t)(end - p))) != NULL) {
		for (n = 0; q - n > p && q[-1 - (ptrdiff_t)n] == '\\'; n++)
			;
		if (n % 2 == 0)
			return q;
		p = q + 1;
	}
	return NULL;
}

/* The escape at p (its backslash, before close) decoded to *o; where the
 * text goes on, or NULL after failing. */
static const char *
jescape(struct mf_jparse *j, const char *p, const char *close, char **o)
{
	char e = p + 1 < close ? p[1] : '\0', ch = mf_scan_short_escape(e);
	const char *next;
	uint32_t c;

	if (ch != 0) {
		*(*o)++ = ch;
		return p + 2;
	}
	if (e != 'u') {
		mf_json_fail_value(j, p, "invalid escape");
		return NULL;
	}
	next = mf_scan_unicode(p + 2, j->end, &c);
	if (next != NULL && next <= close) {
		*o = put_utf8(*o, c);
		return next;
	}
	mf_json_fail_value(j, p, "invalid \\u escape");
	return NULL;
}

/*
 * The text p..close of a string (inside its quotes) checked and decoded
 * into o; the end of what was written, or NULL after failing.  Decoding
 * never lengthens the text.
 */
static char *
jdecode(struct mf_jparse *j, const char *p, const char *close, char *o)
{
	const char *run;
	size_t n;

	while (p < close) {
		run = p;
		p = mf_scan_plain(p, close);
		memcpy(o, run, (size_t)(p - run));
		o += p - run;
		if (p == close)
			break;
		if (*p == '\\') {
			p = jescape(j, p, close, &o);
			if (p == NULL)
				return NULL;
			continue;
		}
		if ((unsigned char)*p < 0x20) {
			mf_json_fail_value(j, p,
			    "control character in a string");
			return NULL;
		}
		n = mf_scan_utf8((const unsigned char *)p,
		    (const unsigned char *)close);
		if (n == 0) {
			mf_json_fail_value(j, p, "invalid UTF-8 in a string");
			return NULL;
		}
		memcpy(o, p, n);
		o += n;
		p += n;
	}
	return o;
}

const char *
mf_json_escaped(struct mf_jparse *j, const char *p, const char *q, size_t *len)
{
	const char *close = jclose(q, j->end);
	char *out, *o;

	if (close == NULL) {
		mf_json_fail(j, j->end, "unterminated string");
		return NULL;
	}
	out = mf_doc_alloc(j->doc, (size_t)(close - p) + 1);
	if (out == NULL) {
		mf_json_limit(j, MF_ENOMEM);
		return NULL;
	}
	memcpy(out, p, (size_t)(q - p));
	o = jdecode(j, q, close, out + (q - p));
	if (o == NULL)
		return NULL;
	j->p = close + 1;
	*o = '\0';
	*len = (size_t)(o - out);
	return out;
}

static int
by_key(const void *a, const void *b)
{
	const struct mf_jkey *x = a, *y = b;
	int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);

	return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

int
mf_json_grow_keys(struct mf_jparse *j)
{
	size_t cap = 2 * j->cap;
	struct mf_jkey *grown;

	if (j->cap == MF_JSON_FIRST_KEYS) {
		grown = malloc(cap * sizeof(*j->keys));
		if (grown != NULL)
			memcpy(grown, j->keys, j->nkeys * sizeof(*j->keys));
	} else {
		grown = realloc(j->keys, cap * sizeof(*j->keys));
	}
	if (grown == NULL)
		return -1;
	j->keys = grown;
	j->cap = cap;
	return 0;
}

const struct mf_jkey *
mf_json_repeated_key(struct mf_jparse *j, size_t base)
{
	struct mf_jkey *k = j->keys + base;
	size_t n = j->nkeys - base;

	qsort(k, n, sizeof(*k), by_key);
	for (size_t i = 1; i < n; i++)
		if (mf_json_same_key(&k[i - 1], k[i].s, k[i].len))
			return &k[i];
	return NULL;
}
