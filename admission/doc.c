/*
 * doc.c: YAML (libyaml event API) and JSON (read here) into one node tree.
 *
 * Nodes and their strings live in an arena owned by the document, so a
 * parse is a handful of large allocations and one free.
 */
#include "doc.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "buf.h"
#include "qty.h"
#include "yfast.h"
#include "internal.h"

#define ARENA_BLOCK 8192

struct block {
	struct block *next;
	size_t used, size;
	max_align_t data[];
};

struct mf_doc {
	struct block *blocks;
	struct mf_node *root;
	size_t nodes;
};

static void *
arena_alloc(struct mf_doc *doc, size_t n)
{
	struct block *b = doc->blocks;
	size_t align = sizeof(max_align_t);

	n = (n + align - 1) / align * align;
	if (b == NULL || b->size - b->used < n) {
		size_t size = n > ARENA_BLOCK ? n : ARENA_BLOCK;

		b = malloc(sizeof(*b) + size);
		if (b == NULL)
			return NULL;
		b->size = size;
		b->used = 0;
		b->next = doc->blocks;
		doc->blocks = b;
	}
	b->used += n;
	return (char *)b->data + b->used - n;
}

static char *
arena_strndup(struct mf_doc *doc, const char *s, size_t len)
{
	char *p = arena_alloc(doc, len + 1);

	if (p != NULL) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

/* Back to an empty document. */
static void
doc_clear(struct mf_doc *doc)
{
	struct block *b, *next;

	for (b = doc->blocks; b != NULL; b = next) {
		next = b->next;
		free(b);
	}
	memset(doc, 0, sizeof(*doc));
}

void
mf_doc_free(struct mf_doc *doc)
{
	if (doc == NULL)
		return;
	doc_clear(doc);
	free(doc);
}

const struct mf_node *
mf_doc_root(const struct mf_doc *doc)
{
	return doc->root;
}

static struct mf_node *
new_node(struct mf_doc *doc, enum mf_node_type type, int line, int column)
{
	struct mf_node *n;

	if (doc->nodes >= MF_DOC_MAX_NODES)
		return NULL;
	n = arena_alloc(doc, sizeof(*n));
	if (n == NULL)
		return NULL;
	memset(n, 0, sizeof(*n));
	n->type = type;
	n->line = line;
	n->column = column;
	doc->nodes++;
	return n;
}

/* Append child to parent's list; tail tracks the last child. */
static void
append(struct mf_node *parent, struct mf_node **tail, struct mf_node *child)
{
	if (*tail == NULL)
		parent->child = child;
	else
		(*tail)->next = child;
	*tail = child;
	parent->len++;
}

/* --- YAML ------------------------------------------------------------ */

static int
is_number(const char *s)
{
	const char *p = s;
	int digits = 0;

	if (*p == '+' || *p == '-')
		p++;
	if (*p != '.' && (*p < '0' || *p > '9'))
		return 0;
	if (strcmp(p, ".inf") == 0 || strcmp(p, ".Inf") == 0 ||
	    strcmp(p, ".INF") == 0)
		return 1;
	if (p == s &&
	    (strcmp(p, ".nan") == 0 || strcmp(p, ".NaN") == 0 ||
	        strcmp(p, ".NAN") == 0))
		return 1;
	for (; *p >= '0' && *p <= '9'; p++)
		digits++;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			digits++;
	if (digits == 0)
		return 0;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (*p < '0' || *p > '9')
			return 0;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return *p == '\0';
}

/* YAML 1.2 core schema resolution of a plain scalar. */
static enum mf_node_type
resolve_plain(const char *s)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };
	static const char *const bools[] = { "true", "True", "TRUE", "false",
		"False", "FALSE" };

	/* Most values are words that none of these can be. */
	switch (s[0]) {
	case '\0':
	case '~':
	case 'n':
	case 'N':
	case 't':
	case 'T':
	case 'f':
	case 'F':
		break;
	default:
		return is_number(s) ? MF_NODE_NUM : MF_NODE_STR;
	}
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (strcmp(s, nulls[i]) == 0)
			return MF_NODE_NULL;
	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++)
		if (strcmp(s, bools[i]) == 0)
			return MF_NODE_BOOL;
	return is_number(s) ? MF_NODE_NUM : MF_NODE_STR;
}

struct frame {
	struct mf_node *node;
	struct mf_node *tail;
	const char *key; /* map: pending key, NULL when a key is expected */
	int key_line, key_column;
};

struct yparse {
	struct mf_doc *doc;
	struct frame stack[MF_DOC_MAX_DEPTH];
	int depth;
	int done; /* the root node is complete */
	struct mf_error *err;
};

static int
ypos(const yaml_mark_t *m, int *column)
{
	*column = (int)m->column + 1;
	return (int)m->line + 1;
}

static enum mf_rc
yerr(struct yparse *p, enum mf_rc rc, const yaml_mark_t *m, const char *what)
{
	int line, column;

	line = ypos(m, &column);
	return mf_error_set(p->err, rc, NULL, line, column, "%s", what);
}

/* Attach a finished node to the open collection, or make it the root. */
static enum mf_rc
place(struct yparse *p, struct mf_node *n, const yaml_event_t *ev)
{
	struct frame *f;

	if (p->depth == 0) {
		p->doc->root = n;
		p->done = 1;
		return MF_OK;
	}
	f = &p->stack[p->depth - 1];
	if (f->node->type == MF_NODE_SEQ) {
		append(f->node, &f->tail, n);
		return MF_OK;
	}
	if (f->key == NULL) {
		if (f->node->len >= MF_DOC_MAX_KEYS)
			return yerr(p, MF_ETOOBIG, &ev->start_mark,
			    "a mapping holds too many keys");
		if (n->type == MF_NODE_SEQ || n->type == MF_NODE_MAP)
			return yerr(p, MF_EINVAL, &ev->start_mark,
			    "a mapping key must be a scalar");
		if (mf_node_get(f->node, n->text) != NULL) {
			int line, column;

			line = ypos(&ev->start_mark, &column);
			return mf_error_set(p->err, MF_EINVAL, NULL, line,
			    column, "duplicate key '%.64s'", n->text);
		}
		f->key = n->text;
		f->key_line = n->line;
		f->key_column = n->column;
		return MF_OK;
	}
	n->key = f->key;
	n->key_line = f->key_line;
	n->key_column = f->key_column;
	f->key = NULL;
	append(f->node, &f->tail, n);
	return MF_OK;
}

static enum mf_rc
yscalar(struct yparse *p, const yaml_event_t *ev)
{
	const char *text = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	struct mf_node *n;
	int line, column;

	if (memchr(text, '\0', len) != NULL)
		return yerr(p, MF_EINVAL, &ev->start_mark,
		    "a NUL character is not allowed in a value");
	line = ypos(&ev->start_mark, &column);
	n = new_node(p->doc, MF_NODE_STR, line, column);
	if (n == NULL)
		goto fail;
	n->text = arena_strndup(p->doc, text, len);
	if (n->text == NULL)
		goto fail;
	n->len = len;
	/* The event's value need not end in a NUL (mf_yfast's do not). */
	if (ev->data.scalar.plain_implicit &&
	    ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
		n->type = resolve_plain(n->text);
	return place(p, n, ev);
fail:
	if (p->doc->nodes >= MF_DOC_MAX_NODES)
		return yerr(p, MF_ETOOBIG, &ev->start_mark,
		    "too many values in the document");
	return yerr(p, MF_ENOMEM, &ev->start_mark, "out of memory");
}

static enum mf_rc
yopen(struct yparse *p, const yaml_event_t *ev, enum mf_node_type type)
{
	struct mf_node *n;
	int line, column;

	if (p->depth == MF_DOC_MAX_DEPTH)
		return yerr(p, MF_ETOOBIG, &ev->start_mark,
		    "nesting deeper than 64 levels");
	line = ypos(&ev->start_mark, &column);
	n = new_node(p->doc, type, line, column);
	if (n == NULL)
		return yerr(p,
		    p->doc->nodes >= MF_DOC_MAX_NODES ? MF_ETOOBIG : MF_ENOMEM,
		    &ev->start_mark, "too many values in the document");
	p->stack[p->depth].node = n;
	p->stack[p->depth].tail = NULL;
	p->stack[p->depth].key = NULL;
	p->depth++;
	return MF_OK;
}

static enum mf_rc
yclose(struct yparse *p, const yaml_event_t *ev)
{
	struct mf_node *n = p->stack[--p->depth].node;

	return place(p, n, ev);
}

static enum mf_rc
yevent(struct yparse *p, const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (p->done)
			return yerr(p, MF_EINVAL, &ev->start_mark,
			    "only one document is allowed");
		return MF_OK;
	case YAML_ALIAS_EVENT:
		return yerr(p, MF_EINVAL, &ev->start_mark,
		    "aliases are not allowed");
	case YAML_SCALAR_EVENT:
		return yscalar(p, ev);
	case YAML_SEQUENCE_START_EVENT:
		return yopen(p, ev, MF_NODE_SEQ);
	case YAML_MAPPING_START_EVENT:
		return yopen(p, ev, MF_NODE_MAP);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return yclose(p, ev);
	default:
		return MF_OK;
	}
}

static int
fast_event(void *p, const yaml_event_t *ev)
{
	return yevent(p, ev) != MF_OK;
}

/*
 * Most documents are in the part of YAML that mf_yfast reads, many times
 * faster than libyaml.  The rest, and every error, is libyaml's to read
 * and report, from the start.
 */
static enum mf_rc
parse_yaml(struct mf_doc *doc, const char *buf, size_t len,
    struct mf_error *err)
{
	struct mf_error ignored;
	struct yparse p = { .doc = doc, .err = &ignored };
	yaml_parser_t parser;
	yaml_event_t ev;
	enum mf_rc rc = MF_OK;
	int end = 0;

	if (mf_yfast(buf, len, fast_event, &p) == 0)
		return MF_OK;
	doc_clear(doc);
	p = (struct yparse){ .doc = doc, .err = err };
	if (!yaml_parser_initialize(&parser))
		return mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
		    "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (rc == MF_OK && !end) {
		if (!yaml_parser_parse(&parser, &ev)) {
			rc = mf_error_set(err, MF_EINVAL, NULL,
			    (int)parser.problem_mark.line + 1,
			    (int)parser.problem_mark.column + 1,
			    "not valid YAML: %s",
			    parser.problem ? parser.problem : "syntax error");
			break;
		}
		end = ev.type == YAML_STREAM_END_EVENT;
		rc = yevent(&p, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (rc == MF_OK && doc->root == NULL) {
		doc->root = new_node(doc, MF_NODE_NULL, 1, 1);
		if (doc->root == NULL)
			rc = mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
			    "out of memory");
	}
	return rc;
}

/* --- JSON ------------------------------------------------------------ */

/*
 * RFC 8259 JSON read straight into the tree, as jansson reads it with
 * JSON_REJECT_DUPLICATES | JSON_DECODE_ANY: strings must be valid UTF-8
 * without NUL, an integer must fit in 64 bits and is written back as
 * "%lld" (so "-0" is "0"), a real as "%.17g", and one value fills the
 * input but for blank space.  Errors carry the 1-based line and column of
 * the byte at fault.
 */
struct jparse {
	struct mf_doc *doc;
	const char *start, *p, *end;
	struct mf_error *err;
	enum mf_rc rc;   /* of the first failure */
	size_t max_keys; /* per object */
};

#define LINEAR_KEYS 16 /* objects larger are checked for duplicates sorted */
#define JSON_TOO_BIG \
	"document nested deeper than 64 levels or holding too many values"

static enum mf_rc
jfail(struct jparse *j, const char *at, const char *what)
{
	int line = 1, column = 1;

	for (const char *q = j->start; q < at && q < j->end; q++) {
		if (*q == '\n') {
			line++;
			column = 1;
		} else {
			column++;
		}
	}
	j->rc = MF_EINVAL;
	return mf_error_set(j->err, MF_EINVAL, NULL, line, column,
	    "not valid JSON: %s", what);
}

static enum mf_rc
jlimit(struct jparse *j, enum mf_rc rc)
{
	j->rc = rc;
	return mf_error_set(j->err, rc, NULL, 0, 0, "%s",
	    rc == MF_ETOOBIG ? JSON_TOO_BIG : "out of memory");
}

static void
jblank(struct jparse *j)
{
	while (j->p < j->end &&
	    (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
		j->p++;
}

/* A new node, or NULL with the error set (too many nodes, no memory). */
static struct mf_node *
jnode(struct jparse *j, enum mf_node_type type)
{
	struct mf_node *n = new_node(j->doc, type, 0, 0);

	if (n == NULL)
		jlimit(j,
		    j->doc->nodes >= MF_DOC_MAX_NODES ? MF_ETOOBIG : MF_ENOMEM);
	return n;
}

static int
hex4(const char *s, uint32_t *out)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return 0;
	}
	*out = v;
	return 1;
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

/* Length of the valid UTF-8 sequence (RFC 3629) at s, before end; 0 if
 * there is none. */
static size_t
utf8_at(const unsigned char *s, const unsigned char *end)
{
	size_t n = s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
	uint32_t v;

	if (s[0] < 0xC2 || s[0] > 0xF4 || (size_t)(end - s) < n)
		return 0;
	v = s[0] & (0x7Fu >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3Fu);
	}
	if ((n == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ||
	    (n == 4 && (v < 0x10000 || v > 0x10FFFF)))
		return 0;
	return n;
}

/* One \u escape (p after the 'u'), a surrogate pair whole, into *c. */
static const char *
junicode(struct jparse *j, const char *p, uint32_t *c)
{
	uint32_t lo;

	if (j->end - p < 4 || !hex4(p, c))
		return NULL;
	p += 4;
	if (*c >= 0xDC00 && *c <= 0xDFFF)
		return NULL;
	if (*c >= 0xD800 && *c <= 0xDBFF) {
		if (j->end - p < 6 || p[0] != '\\' || p[1] != 'u' ||
		    !hex4(p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
			return NULL;
		*c = 0x10000 + ((*c - 0xD800) << 10) + (lo - 0xDC00);
		p += 6;
	}
	return *c == 0 ? NULL : p;
}

/* Whether any of the eight bytes in x ends an escape-free run of a
 * string: '"', '\\', a control character or a byte of a UTF-8 sequence. */
static int
jstop8(uint64_t x)
{
	const uint64_t ones = 0x0101010101010101u, high = ones * 0x80;
	uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');

	return ((x - ones * 0x20) | (q - ones) | (b - ones) | x) & high ? 1 : 0;
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
jescape(struct jparse *j, const char *p, const char *close, char **o)
{
	const char *next;
	uint32_t c;
	char ch;

	switch (p + 1 < close ? p[1] : '\0') {
	case '"':
	case '\\':
	case '/':
		ch = p[1];
		break;
	case 'b':
		ch = '\b';
		break;
	case 'f':
		ch = '\f';
		break;
	case 'n':
		ch = '\n';
		break;
	case 'r':
		ch = '\r';
		break;
	case 't':
		ch = '\t';
		break;
	case 'u':
		next = junicode(j, p + 2, &c);
		if (next != NULL && next <= close) {
			*o = put_utf8(*o, c);
			return next;
		}
		jfail(j, p, "invalid \\u escape");
		return NULL;
	default:
		jfail(j, p, "invalid escape");
		return NULL;
	}
	*(*o)++ = ch;
	return p + 2;
}

/*
 * The string at j->p (its opening quote) into the arena; *len its length.
 * A string without escapes is checked a word at a time and copied whole;
 * one with escapes is decoded a byte at a time after memchr found its
 * closing quote.  The decoded text is never longer than the source.
 */
static char *
jstring(struct jparse *j, size_t *len)
{
	const char *p = j->p + 1, *close, *q;
	char *out, *o;
	uint64_t w;

	/* Most strings have no escape: find their end a word at a time. */
	q = p;
	while (j->end - q >= 8) {
		memcpy(&w, q, 8);
		if (jstop8(w))
			break;
		q += 8;
	}
	while (q < j->end && *q != '"' && *q != '\\' &&
	    (unsigned char)*q >= 0x20 && (unsigned char)*q < 0x80)
		q++;
	if (q < j->end && *q == '"') {
		out = arena_strndup(j->doc, p, (size_t)(q - p));
		if (out == NULL)
			jlimit(j, MF_ENOMEM);
		*len = (size_t)(q - p);
		j->p = q + 1;
		return out;
	}
	close = jclose(p, j->end);
	if (close == NULL) {
		jfail(j, j->end, "unterminated string");
		return NULL;
	}
	out = arena_alloc(j->doc, (size_t)(close - p) + 1);
	if (out == NULL) {
		jlimit(j, MF_ENOMEM);
		return NULL;
	}
	o = out;
	while (p < close) {
		unsigned char b = (unsigned char)*p;
		size_t n;

		if (b == '\\') {
			p = jescape(j, p, close, &o);
			if (p == NULL)
				return NULL;
			continue;
		}
		if (b < 0x20) {
			jfail(j, p, "control character in a string");
			return NULL;
		}
		if (b < 0x80) {
			*o++ = *p++;
			continue;
		}
		n = utf8_at((const unsigned char *)p,
		    (const unsigned char *)close);
		if (n == 0) {
			jfail(j, p, "invalid UTF-8 in a string");
			return NULL;
		}
		memcpy(o, p, n);
		o += n;
		p += n;
	}
	*o = '\0';
	*len = (size_t)(o - out);
	j->p = close + 1;
	return out;
}

static struct mf_node *
jnumber(struct jparse *j)
{
	const char *p = j->p, *digits;
	char text[40];
	int real = 0;
	uint64_t v = 0;
	size_t len;
	struct mf_node *n;
	double d;

	if (p < j->end && *p == '-')
		p++;
	digits = p;
	if (p < j->end && *p == '0')
		p++;
	else
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	if (p == digits) {
		jfail(j, j->p, "invalid number");
		return NULL;
	}
	if (p < j->end && *p == '.') {
		real = 1;
		if (++p >= j->end || *p < '0' || *p > '9') {
			jfail(j, p, "invalid number");
			return NULL;
		}
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < j->end && (*p == 'e' || *p == 'E')) {
		real = 1;
		p++;
		if (p < j->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= j->end || *p < '0' || *p > '9') {
			jfail(j, p, "invalid number");
			return NULL;
		}
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	if ((size_t)(p - j->p) >= sizeof(text) && !real) {
		jfail(j, j->p, "too big integer");
		return NULL;
	}
	if (!real) {
		for (const char *q = digits; q < p; q++) {
			if (v > (UINT64_C(1) << 63) / 10 ||
			    v * 10 + (uint64_t)(*q - '0') >
			        (UINT64_C(1) << 63) - (*j->p != '-')) {
				jfail(j, j->p, "too big integer");
				return NULL;
			}
			v = v * 10 + (uint64_t)(*q - '0');
		}
		char *s = mf_digits(v, text + sizeof(text));

		if (*j->p == '-' && v != 0)
			*--s = '-';
		len = (size_t)(text + sizeof(text) - s);
		memmove(text, s, len);
	} else {
		char *copy = arena_strndup(j->doc, j->p, (size_t)(p - j->p));

		if (copy == NULL) {
			jlimit(j, MF_ENOMEM);
			return NULL;
		}
		errno = 0;
		d = strtod(copy, NULL);
		if (errno == ERANGE && isinf(d)) {
			jfail(j, j->p, "real number overflow");
			return NULL;
		}
		len = (size_t)snprintf(text, sizeof(text), "%.17g", d);
	}
	n = jnode(j, MF_NODE_NUM);
	if (n == NULL)
		return NULL;
	n->text = arena_strndup(j->doc, text, len);
	n->len = len;
	if (n->text == NULL)
		jlimit(j, MF_ENOMEM);
	j->p = p;
	return n->text != NULL ? n : NULL;
}

static struct mf_node *jvalue(struct jparse *j, int depth);

static struct mf_node *
jword(struct jparse *j, const char *word, enum mf_node_type type)
{
	size_t len = strlen(word);
	struct mf_node *n;

	if ((size_t)(j->end - j->p) < len || memcmp(j->p, word, len) != 0) {
		jfail(j, j->p, "invalid token");
		return NULL;
	}
	n = jnode(j, type);
	if (n == NULL)
		return NULL;
	n->text = type == MF_NODE_NULL ? "null" : word;
	n->len = len;
	j->p += len;
	return n;
}

static int
by_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether the keys of the object n (which starts at start) are unique:
 * sorted, O(n log n), for objects too large to check key by key. */
static int
unique_keys(struct jparse *j, const struct mf_node *n, const char *start)
{
	const char **keys = malloc(n->len * sizeof(*keys));
	const struct mf_node *c;
	size_t i = 0;
	int ok = 1;

	if (keys == NULL) {
		jlimit(j, MF_ENOMEM);
		return 0;
	}
	for (c = n->child; c != NULL; c = c->next)
		keys[i++] = c->key;
	qsort((void *)keys, n->len, sizeof(*keys), by_key);
	for (i = 1; ok && i < n->len; i++)
		ok = strcmp(keys[i - 1], keys[i]) != 0;
	free((void *)keys);
	if (!ok)
		jfail(j, start, "duplicate object key");
	return ok;
}

/* The members of the object or elements of the array at j->p. */
static struct mf_node *
jcollection(struct jparse *j, int depth)
{
	int map = *j->p == '{';
	char close = map ? '}' : ']';
	const char *start = j->p;
	struct mf_node *n, *c, *tail = NULL;
	const char *key = NULL, *at;
	size_t klen;

	if (depth > MF_DOC_MAX_DEPTH) {
		jlimit(j, MF_ETOOBIG);
		return NULL;
	}
	n = jnode(j, map ? MF_NODE_MAP : MF_NODE_SEQ);
	if (n == NULL)
		return NULL;
	j->p++;
	jblank(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		return n;
	}
	for (;;) {
		if (map) {
			at = j->p;
			if (j->p >= j->end || *j->p != '"') {
				jfail(j, j->p, "string or '}' expected");
				return NULL;
			}
			key = jstring(j, &klen);
			if (key == NULL)
				return NULL;
			if (n->len < LINEAR_KEYS &&
			    mf_node_get(n, key) != NULL) {
				jfail(j, at, "duplicate object key");
				return NULL;
			}
			if (n->len >= j->max_keys) {
				jlimit(j, MF_ETOOBIG);
				return NULL;
			}
			jblank(j);
			if (j->p >= j->end || *j->p != ':') {
				jfail(j, j->p, "':' expected");
				return NULL;
			}
			j->p++;
		}
		c = jvalue(j, depth + 1);
		if (c == NULL)
			return NULL;
		c->key = key;
		append(n, &tail, c);
		jblank(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			jblank(j);
			continue;
		}
		if (j->p < j->end && *j->p == close) {
			j->p++;
			return map && n->len > LINEAR_KEYS &&
			        !unique_keys(j, n, start) ?
			    NULL :
			    n;
		}
		jfail(j, j->p,
		    map ? "',' or '}' expected" : "',' or ']' expected");
		return NULL;
	}
}

static struct mf_node *
jvalue(struct jparse *j, int depth)
{
	struct mf_node *n;
	size_t len;
	char *s;

	jblank(j);
	if (j->p >= j->end) {
		jfail(j, j->p, "'[', '{' or a value expected");
		return NULL;
	}
	switch (*j->p) {
	case '{':
	case '[':
		return jcollection(j, depth);
	case '"':
		s = jstring(j, &len);
		if (s == NULL)
			return NULL;
		n = jnode(j, MF_NODE_STR);
		if (n != NULL) {
			n->text = s;
			n->len = len;
		}
		return n;
	case 't':
		return jword(j, "true", MF_NODE_BOOL);
	case 'f':
		return jword(j, "false", MF_NODE_BOOL);
	case 'n':
		return jword(j, "null", MF_NODE_NULL);
	default:
		if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))
			return jnumber(j);
		jfail(j, j->p, "invalid token");
		return NULL;
	}
}

static enum mf_rc
parse_json(struct mf_doc *doc, const char *buf, size_t len, size_t max_keys,
    struct mf_error *err)
{
	struct jparse j = { doc, buf, buf, buf + len, err, MF_OK, max_keys };

	doc->root = jvalue(&j, 1);
	if (doc->root == NULL)
		return j.rc != MF_OK ? j.rc : jlimit(&j, MF_ENOMEM);
	jblank(&j);
	if (j.p < j.end) {
		doc->root = NULL;
		return jfail(&j, j.p, "end of file expected");
	}
	return MF_OK;
}

enum mf_rc
mf_doc_parse(const char *buf, size_t len, enum mf_doc_format fmt,
    struct mf_doc **out, struct mf_error *err)
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
	doc = calloc(1, sizeof(*doc));
	if (doc == NULL)
		return mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
		    "out of memory");
	if (fmt == MF_DOC_JSON || fmt == MF_DOC_JSON_WIDE)
		rc = parse_json(doc, buf, len,
		    fmt == MF_DOC_JSON ? MF_DOC_MAX_KEYS : MF_DOC_MAX_NODES,
		    err);
	else
		rc = parse_yaml(doc, buf, len, err);
	if (rc != MF_OK) {
		mf_doc_free(doc);
		return rc;
	}
	*out = doc;
	return MF_OK;
}

/* --- readers --------------------------------------------------------- */

const struct mf_node *
mf_node_get(const struct mf_node *map, const char *key)
{
	const struct mf_node *c;

	if (map == NULL || map->type != MF_NODE_MAP)
		return NULL;
	/* The first byte turns most members away without a call. */
	for (c = map->child; c != NULL; c = c->next)
		if (c->key[0] == key[0] && strcmp(c->key, key) == 0)
			return c;
	return NULL;
}

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

enum mf_rc
mf_node_int(const struct mf_node *n, const char *path, int64_t min, int64_t max,
    int64_t *out, struct mf_error *err)
{
	long long v;
	char *end;

	if (n->type != MF_NODE_NUM)
		return wrong_type(n, path, "an integer", err);
	errno = 0;
	v = strtoll(n->text, &end, 10);
	if (*end != '\0') {
		double d = strtod(n->text, &end);

		if (*end != '\0' || d != floor(d) || !isfinite(d) ||
		    fabs(d) > 9e15)
			return bad_value(n, path, "is not a whole number", err);
		v = (long long)d;
	} else if (errno == ERANGE) {
		return bad_value(n, path, "is out of range", err);
	}
	if (v < min || v > max)
		return mf_error_set(err, MF_EINVAL, path, n->line, n->column,
		    "%lld is out of range [%" PRId64 ", %" PRId64 "]", v, min,
		    max);
	*out = v;
	return MF_OK;
}

enum mf_rc
mf_node_double(const struct mf_node *n, const char *path, double min,
    double max, double *out, struct mf_error *err)
{
	char *end;
	double v;

	if (n->type != MF_NODE_NUM)
		return wrong_type(n, path, "a number", err);
	v = strtod(n->text, &end);
	if (*end != '\0' || !isfinite(v))
		return bad_value(n, path, "is not a finite number", err);
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
mf_node_enum(const struct mf_node *n, const char *path,
    const char *const *names, int *out, struct mf_error *err)
{
	char list[160] = "";
	size_t used = 0;

	if (n->type != MF_NODE_STR)
		return wrong_type(n, path, "a string", err);
	for (int i = 0; names[i] != NULL; i++)
		if (strcmp(n->text, names[i]) == 0) {
			*out = i;
			return MF_OK;
		}
	for (int i = 0; names[i] != NULL && used < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used,
		    "%s%s", i ? ", " : "", names[i]);
	return mf_error_set(err, MF_EINVAL, path, n->line, n->column,
	    "'%.40s' is not one of %s", n->text, list);
}

enum mf_rc
mf_node_bytes(const struct mf_node *n, const char *path, int64_t *out,
    int *format, struct mf_error *err)
{
	enum mf_qty_format f;
	enum mf_qty_err qe;
	int64_t v;

	if (n->type != MF_NODE_STR && n->type != MF_NODE_NUM)
		return wrong_type(n, path, "a quantity such as 88Gi", err);
	qe = mf_qty_parse_bytes(n->text, n->len, &v, &f);
	if (qe != MF_QTY_OK)
		return bad_value(n, path, mf_qty_strerror(qe), err);
	*out = v;
	if (format != NULL)
		*format = (int)f;
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
			found = c->key[0] == known[i][0] &&
			    strcmp(c->key, known[i]) == 0;
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
