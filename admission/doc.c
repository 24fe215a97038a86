/*
 * doc.c: YAML (libyaml event API) and JSON (read here) into one node tree.
 *
 * Nodes and their strings live in an arena owned by the document, so a
 * parse is a handful of large allocations and one free.
 */
#include "doc.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* JSON's strings and blank space are scanned 16 bytes at a time with SSE2
 * (every x86-64 has it), else 8 at a time in a word; MF_DOC_SWAR builds
 * the word loops alone, to test them where SSE2 is. */
#if defined(__SSE2__) && defined(__GNUC__) && !defined(MF_DOC_SWAR)
#include <emmintrin.h>
#define JSON_SSE2 1
#endif

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
 *
 * A value the keep list leaves out is first skimmed (jskim): one loop
 * that takes only what it is sure of and builds nothing.  When it meets
 * anything else (an error, a limit, a name with an escape, an exponent)
 * the value is read again by the functions that build the tree, with no
 * node to fill (out NULL): they fail with the error and at the byte a
 * built value would.  Member names of every open object, kept or not, are
 * on one stack (keys) for the duplicate check; a name without escapes
 * stays in the input there.
 */
struct jkey {
	const char *s; /* decoded; not NUL-terminated when in the input */
	size_t len;
};

/* An open object: its names are keys[base] on; lens has a bit for each
 * length (mod 64) of a name among its first LINEAR_KEYS, and kept, when
 * it is built with a keep list, one for each length of a name the list
 * names (a skimmed object has none). */
struct jobj {
	size_t base;
	uint64_t lens, kept;
};

/* A name's bit in those sets. */
static inline uint64_t
length_bit(size_t len)
{
	return (uint64_t)1 << (len & 63);
}

struct jparse {
	struct mf_doc *doc;
	const char *start, *p, *end;
	struct mf_error *err;
	enum mf_rc rc;     /* of the first failure */
	size_t max_keys;   /* per object */
	struct jkey *keys; /* names of the open objects, outermost first */
	size_t nkeys, cap;
	const char *skim_from; /* jskim tries no value that starts before */
};

#define LINEAR_KEYS 16 /* objects larger are checked for duplicates sorted */
#define FIRST_KEYS 64  /* names kept on the stack, before the heap */
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

/* The index, in memory order, of the first byte of a word whose top bit
 * is set in m (not 0). */
static size_t
first_marked(uint64_t m)
{
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (size_t)__builtin_ctzll(m) / 8;
#elif defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return (size_t)__builtin_clzll(m) / 8;
#else
	unsigned char b[8];
	size_t i = 0;

	memcpy(b, &m, 8);
	while ((b[i] & 0x80) == 0)
		i++;
	return i;
#endif
}

/*
 * Runs the reader skips a word or a block at a time: the spaces of an
 * indentation, and the text of a string up to a quote, a backslash, a
 * control character or a byte of UTF-8.  A mark is a byte that ends the
 * run: of eight in a word, its top bit (one above the first may be set
 * wrongly, by a borrow; the first is exact); of sixteen, one bit each, the
 * first byte's lowest.
 */
enum run { RUN_SPACES, RUN_PLAIN };

static inline uint64_t
mark8(enum run r, uint64_t x)
{
	const uint64_t ones = 0x0101010101010101u, high = ones * 0x80,
	               low = ~high;
	uint64_t q, b, t;

	if (r == RUN_SPACES) {
		/* The top bit of each byte that is not a space. */
		t = x ^ (ones * ' ');
		return (((t & low) + low) | t) & high;
	}
	q = x ^ (ones * '"');
	b = x ^ (ones * '\\');
	return ((x - ones * 0x20) | (q - ones) | (b - ones) | x) & high;
}

#ifdef JSON_SSE2
static inline unsigned
mark16(enum run r, const char *p)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);

	if (r == RUN_SPACES)
		return ~(unsigned)_mm_movemask_epi8(
		           _mm_cmpeq_epi8(x, _mm_set1_epi8(' '))) &
		    0xffffu;
	/* Compared as signed bytes, those from 0x80 are below ' ' too. */
	return (unsigned)_mm_movemask_epi8(
	    _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
	                     _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
	        _mm_cmplt_epi8(x, _mm_set1_epi8(' '))));
}
#endif

/* Whether c goes on a run of kind r. */
static inline int
in_run(enum run r, unsigned char c)
{
	if (r == RUN_SPACES)
		return c == ' ';
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* Where the run of kind r from p ends: 16 bytes at a time with SSE2, 8 in
 * a word, then the last few one by one. */
static inline const char *
run_end(enum run r, const char *p, const char *end)
{
	uint64_t w, m;

#ifdef JSON_SSE2
	unsigned m16;

	while (end - p >= 16) {
		m16 = mark16(r, p);
		if (m16 != 0)
			return p + __builtin_ctz(m16);
		p += 16;
	}
#endif
	while (end - p >= 8) {
		memcpy(&w, p, 8);
		m = mark8(r, w);
		if (m != 0)
			return p + first_marked(m);
		p += 8;
	}
	while (p < end && in_run(r, (unsigned char)*p))
		p++;
	return p;
}

/* Where the spaces at p end: indented JSON has long runs of them. */
static inline const char *
spaces_end(const char *p, const char *end)
{
	return run_end(RUN_SPACES, p, end);
}

/* Where the run of printable ASCII without '"' or '\\' from p ends. */
static inline const char *
jplain(const char *p, const char *end)
{
	return run_end(RUN_PLAIN, p, end);
}
static const char *
blank_run(const char *p, const char *end)
{
	while (p < end && (unsigned char)*p <= ' ') {
		if (*p == ' ')
			p = spaces_end(p, end);
		else if (*p == '\n' || *p == '\r' || *p == '\t')
			p++;
		else
			break;
	}
	return p;
}

/* Where the blank space at p ends.  Most tokens follow the last with none
 * or one space between ("key": value), or, indented, a newline and
 * spaces: those cost no loop but the one over the spaces. */
static inline const char *
blank_end(const char *p, const char *end)
{
	if (p < end && (unsigned char)*p > ' ')
		return p;
	if (end - p >= 2 && *p == ' ' && (unsigned char)p[1] > ' ')
		return p + 1;
	if (p < end && *p == '\n') {
		p = spaces_end(p + 1, end);
		if (p < end && (unsigned char)*p > ' ')
			return p;
	}
	return blank_run(p, end);
}

static void
jblank(struct jparse *j)
{
	j->p = blank_end(j->p, j->end);
}

/*
 * One more value: a node of type into *out, or, when out is NULL, only
 * counted.  -1 with the error set (too many values, no memory).
 */
static int
jnode(struct jparse *j, enum mf_node_type type, struct mf_node **out)
{
	if (out == NULL) {
		if (j->doc->nodes >= MF_DOC_MAX_NODES) {
			jlimit(j, MF_ETOOBIG);
			return -1;
		}
		j->doc->nodes++;
		return 0;
	}
	*out = new_node(j->doc, type, 0, 0);
	if (*out == NULL) {
		jlimit(j,
		    j->doc->nodes >= MF_DOC_MAX_NODES ? MF_ETOOBIG : MF_ENOMEM);
		return -1;
	}
	return 0;
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
junicode(const struct jparse *j, const char *p, uint32_t *c)
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

/* The character the escape \\c of one character stands for, or 0 when
 * \\c is not one (\\u takes four hex digits). */
static inline char
short_escape(char c)
{
	switch (c) {
	case '"':
	case '\\':
	case '/':
		return c;
	case 'b':
		return '\b';
	case 'f':
		return '\f';
	case 'n':
		return '\n';
	case 'r':
		return '\r';
	case 't':
		return '\t';
	default:
		return 0;
	}
}

/* The escape at p (its backslash, before close) decoded to *o; where the
 * text goes on, or NULL after failing. */
static const char *
jescape(struct jparse *j, const char *p, const char *close, char **o)
{
	char e = p + 1 < close ? p[1] : '\0', ch = short_escape(e);
	const char *next;
	uint32_t c;

	if (ch != 0) {
		*(*o)++ = ch;
		return p + 2;
	}
	if (e != 'u') {
		jfail(j, p, "invalid escape");
		return NULL;
	}
	next = junicode(j, p + 2, &c);
	if (next != NULL && next <= close) {
		*o = put_utf8(*o, c);
		return next;
	}
	jfail(j, p, "invalid \\u escape");
	return NULL;
}

/*
 * The text p..close of a string (inside its quotes) checked and decoded
 * into o; the end of what was written, or NULL after failing.  Decoding
 * never lengthens the text.
 */
static char *
jdecode(struct jparse *j, const char *p, const char *close, char *o)
{
	const char *run;
	size_t n;

	while (p < close) {
		run = p;
		p = jplain(p, close);
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
			jfail(j, p, "control character in a string");
			return NULL;
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
	return o;
}

/* The text p[0..len), its quotes' inside, into the arena; NULL when there
 * is no memory. */
static const char *
jcopy(struct jparse *j, const char *p, size_t len)
{
	const char *out = arena_strndup(j->doc, p, len);

	if (out == NULL)
		jlimit(j, MF_ENOMEM);
	return out;
}

/* jstring's string with escapes, its text from p and the first escape
 * or byte to check at q: decoded after memchr found its closing quote. */
static const char *
jescaped(struct jparse *j, const char *p, const char *q, size_t *len)
{
	const char *close = jclose(q, j->end);
	char *out, *o;

	if (close == NULL) {
		jfail(j, j->end, "unterminated string");
		return NULL;
	}
	out = arena_alloc(j->doc, (size_t)(close - p) + 1);
	if (out == NULL) {
		jlimit(j, MF_ENOMEM);
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

/*
 * The string at j->p (its opening quote); *len its decoded length.  NULL
 * after failing, else its text: NUL-terminated in the arena when copy or
 * when it has escapes, else left in the input.  A string without escapes,
 * nearly every one, is found 16 or 8 bytes at a time, in line.
 */
static inline const char *
jstring(struct jparse *j, int copy, size_t *len)
{
	const char *p = j->p + 1, *q = jplain(p, j->end);

	if (q < j->end && *q == '"') {
		*len = (size_t)(q - p);
		j->p = q + 1;
		return copy ? jcopy(j, p, *len) : p;
	}
	return jescaped(j, p, q, len);
}

/* The number at j->p checked; where it ends, *real whether it has a
 * fraction or an exponent.  NULL after failing. */
static const char *
jnumber_end(struct jparse *j, int *real)
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
		jfail(j, j->p, "invalid number");
		return NULL;
	}
	if (p < j->end && *p == '.') {
		*real = 1;
		if (++p >= j->end || *p < '0' || *p > '9') {
			jfail(j, p, "invalid number");
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
			jfail(j, p, "invalid number");
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
jinteger(struct jparse *j, const char *end, char *text)
{
	const char *digits = j->p + (*j->p == '-');
	uint64_t v = 0;
	size_t len;
	char *s;

	if ((size_t)(end - j->p) >= 40) {
		jfail(j, j->p, "too big integer");
		return 0;
	}
	for (const char *q = digits; q < end; q++) {
		if (v > (UINT64_C(1) << 63) / 10 ||
		    v * 10 + (uint64_t)(*q - '0') >
		        (UINT64_C(1) << 63) - (*j->p != '-')) {
			jfail(j, j->p, "too big integer");
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
jreal(struct jparse *j, const char *end, char *text)
{
	char *copy = arena_strndup(j->doc, j->p, (size_t)(end - j->p));
	double d;

	if (copy == NULL) {
		jlimit(j, MF_ENOMEM);
		return 0;
	}
	errno = 0;
	d = strtod(copy, NULL);
	if (errno == ERANGE && isinf(d)) {
		jfail(j, j->p, "real number overflow");
		return 0;
	}
	return (size_t)snprintf(text, 40, "%.17g", d);
}

static int
jnumber(struct jparse *j, struct mf_node **out)
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
	(*out)->text = arena_strndup(j->doc, text, len);
	(*out)->len = len;
	if ((*out)->text == NULL) {
		jlimit(j, MF_ENOMEM);
		return -1;
	}
	return 0;
}

static int
jword(struct jparse *j, const char *word, enum mf_node_type type,
    struct mf_node **out)
{
	size_t len = strlen(word);

	if ((size_t)(j->end - j->p) < len || memcmp(j->p, word, len) != 0) {
		jfail(j, j->p, "invalid token");
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

static int
by_key(const void *a, const void *b)
{
	const struct jkey *x = a, *y = b;
	int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);

	return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

static int
same_key(const struct jkey *a, const char *s, size_t len)
{
	return a->len == len && memcmp(a->s, s, len) == 0;
}

/*
 * Whether s[0..len) is one of the object's first n names, and its length
 * noted: a name whose length (mod 64) no earlier name had is compared with
 * none.
 */
static inline int
has_key(const struct jparse *j, struct jobj *o, size_t n, const char *s,
    size_t len)
{
	uint64_t bit = length_bit(len);

	if ((o->lens & bit) == 0) {
		o->lens |= bit;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (same_key(&j->keys[o->base + i], s, len))
			return 1;
	return 0;
}

/* Room for twice as many names, on the heap once parse_json's FIRST_KEYS
 * are full; -1 when there is no memory. */
static int
grow_keys(struct jparse *j)
{
	size_t cap = 2 * j->cap;
	struct jkey *grown;

	if (j->cap == FIRST_KEYS) {
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

/* s[0..len) onto the stack of names; -1 when there is no memory. */
static int
push_key(struct jparse *j, const char *s, size_t len)
{
	if (j->nkeys == j->cap && grow_keys(j) != 0)
		return -1;
	j->keys[j->nkeys].s = s;
	j->keys[j->nkeys++].len = len;
	return 0;
}

/*
 * The member name s[0..len) of the object o onto the stack: refused when
 * it repeats one of the first LINEAR_KEYS names (at, where it is) or the
 * object is full.  -1 after failing.
 */
static int
jname(struct jparse *j, struct jobj *o, const char *at, const char *s,
    size_t len)
{
	size_t nk = j->nkeys - o->base;

	if (nk < LINEAR_KEYS && has_key(j, o, nk, s, len)) {
		jfail(j, at, "duplicate object key");
		return -1;
	}
	if (nk >= j->max_keys) {
		jlimit(j, MF_ETOOBIG);
		return -1;
	}
	if (push_key(j, s, len) != 0) {
		jlimit(j, MF_ENOMEM);
		return -1;
	}
	return 0;
}

/* Whether the names from keys[base] on are unique: sorted, O(n log n),
 * for objects too large to check name by name.  Their order on the stack
 * is lost. */
static int
unique_keys(struct jparse *j, size_t base)
{
	struct jkey *k = j->keys + base;
	size_t n = j->nkeys - base;

	qsort(k, n, sizeof(*k), by_key);
	for (size_t i = 1; i < n; i++)
		if (same_key(&k[i - 1], k[i].s, k[i].len))
			return 0;
	return 1;
}

/* --- skimming what is not kept --- */

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
#ifdef JSON_SSE2
	const char *next;
	unsigned m, i;

	/* 17: an escape may end one past the block. */
	while (end - p >= 17) {
		m = mark16(RUN_PLAIN, p);
		next = p + 16;
		while (m != 0) {
			i = (unsigned)__builtin_ctz(m);
			if (p[i] != '\\' || !short_escape(p[i + 1]))
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
 * (past its closing quote), or NULL for anything left to jstring.
 * *escaped is set when it has an escape. */
static const char *
skim_escaped(const struct jparse *j, const char *p, int *escaped)
{
	uint32_t c;
	size_t n;

	for (;;) {
		p = skim_blocks(p, j->end, escaped);
		p = jplain(p, j->end);
		if (p == j->end)
			return NULL;
		if (*p == '"')
			return p + 1;
		if (*p == '\\') {
			if (j->end - p < 2)
				return NULL;
			*escaped = 1;
			if (short_escape(p[1])) {
				p += 2;
				continue;
			}
			if (p[1] != 'u')
				return NULL;
			p = junicode(j, p + 2, &c);
			if (p == NULL)
				return NULL;
			continue;
		}
		if ((unsigned char)*p < 0x20)
			return NULL;
		n = utf8_at((const unsigned char *)p,
		    (const unsigned char *)j->end);
		if (n == 0)
			return NULL;
		p += n;
	}
}

/* skim_string, with the common case, a string of printable ASCII without
 * escapes, in line. */
static inline const char *
skim_string(const struct jparse *j, const char *p, int *escaped)
{
	p = jplain(p, j->end);
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
skim_scalar(const struct jparse *j, const char *p)
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
 * where its value starts, or NULL (jname and jmember say why).  Names are
 * compared decoded: one with an escape (managedFields has many) is decoded
 * by jstring, which cannot fail on what skim_string took.
 */
static const char *
skim_name(struct jparse *j, const char *p, struct jobj *o)
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
		s = jstring(j, 0, &len);
		j->p = at;
	}
	if (s == NULL || (nk < LINEAR_KEYS && has_key(j, o, nk, s, len)) ||
	    nk >= j->max_keys || push_key(j, s, len) != 0)
		return NULL;
	q = blank_end(q, j->end);
	return q < j->end && *q == ':' ? q + 1 : NULL;
}

/*
 * The value at j->p (at depth) checked with no call per value: the
 * collections open are a stack of their closing brackets.  1 when it is
 * valid, j->p past it and counted as jvalue would; 0, and nothing changed
 * but skim_from, when it meets anything it leaves to jvalue.  A value
 * that starts before skim_from is not tried: so no byte is skimmed twice.
 */
static int
jskim(struct jparse *j, int depth)
{
	char close[MF_DOC_MAX_DEPTH + 1];
	struct jobj obj[MF_DOC_MAX_DEPTH + 1];
	const char *p = j->p, *at;
	size_t nodes = j->doc->nodes, keys = j->nkeys;
	int level = 0, name = 0; /* name: a member's name comes first */

	for (;;) {
		at = p = blank_end(p, j->end);
		if (name) {
			p = skim_name(j, p, &obj[level - 1]);
			if (p == NULL)
				goto fail;
			at = p = blank_end(p, j->end);
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
			at = p = blank_end(p + 1, j->end);
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
			at = p = blank_end(p, j->end);
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
			    j->nkeys - obj[level].base > LINEAR_KEYS &&
			    !unique_keys(j, obj[level].base))
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

/* A bit for each length (mod 64) of a name keep names. */
static uint64_t
kept_lengths(const struct mf_doc_keep *keep)
{
	uint64_t bits = 0;

	for (; keep != NULL && keep->key != NULL; keep++)
		bits |= length_bit(keep->len);
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

static int jvalue(struct jparse *j, int depth, const struct mf_doc_keep *keep,
    struct mf_node **out);

/* The value at j->p only checked: skimmed, or read by jvalue where the
 * skim leaves it. */
static inline int
jskipped(struct jparse *j, int depth)
{
	if (j->p >= j->skim_from && jskim(j, depth))
		return 0;
	return jvalue(j, depth, NULL, NULL);
}

/* The value at j->p into the collection n as its member key (n NULL:
 * only checked). */
static int
jchild(struct jparse *j, int depth, const struct mf_doc_keep *keep,
    struct mf_node *n, struct mf_node **tail, const char *key)
{
	struct mf_node *c;

	if (n == NULL)
		return jvalue(j, depth, NULL, NULL);
	if (jvalue(j, depth, keep, &c) != 0)
		return -1;
	c->key = key;
	append(n, tail, c);
	return 0;
}

/*
 * One member of an object: name, ':' and value.  The value goes into the
 * object n (when n is not NULL and keep keeps it) or is only checked.
 */
static int
jmember(struct jparse *j, int depth, const struct mf_doc_keep *keep,
    struct mf_node *n, struct jobj *o, struct mf_node **tail)
{
	const struct mf_doc_keep *k = NULL;
	const char *at = j->p, *key;
	size_t klen;

	if (j->p >= j->end || *j->p != '"') {
		jfail(j, j->p, "string or '}' expected");
		return -1;
	}
	key = jstring(j, n != NULL && keep == NULL, &klen);
	if (key == NULL || jname(j, o, at, key, klen) != 0)
		return -1;
	jblank(j);
	if (j->p >= j->end || *j->p != ':') {
		jfail(j, j->p, "':' expected");
		return -1;
	}
	j->p++;
	if (n != NULL && keep != NULL) {
		if ((o->kept & length_bit(klen)) != 0)
			k = kept(keep, key, klen);
		if (k == NULL)
			return jskipped(j, depth);
		key = arena_strndup(j->doc, key, klen);
		if (key == NULL) {
			jlimit(j, MF_ENOMEM);
			return -1;
		}
	}
	return jchild(j, depth, k != NULL ? k->sub : NULL, n, tail, key);
}

/* The members of the object or elements of the array at j->p, into a
 * node at *out (out NULL: only checked). */
static int
jcollection(struct jparse *j, int depth, const struct mf_doc_keep *keep,
    struct mf_node **out)
{
	int map = *j->p == '{';
	char close = map ? '}' : ']';
	const char *start = j->p;
	struct mf_node *n = NULL, *tail = NULL;
	struct jobj o = { j->nkeys, 0, 0 };

	if (depth > MF_DOC_MAX_DEPTH) {
		jlimit(j, MF_ETOOBIG);
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
		jfail(j, j->p,
		    map ? "',' or '}' expected" : "',' or ']' expected");
		return -1;
	}
	j->p++;
	if (map && j->nkeys - o.base > LINEAR_KEYS && !unique_keys(j, o.base)) {
		jfail(j, start, "duplicate object key");
		return -1;
	}
	j->nkeys = o.base;
	return 0;
}

/* The value at j->p into *out, its members as keep says (NULL: all); out
 * NULL: only checked.  -1 after failing. */
static int
jvalue(struct jparse *j, int depth, const struct mf_doc_keep *keep,
    struct mf_node **out)
{
	const char *s;
	size_t len;

	if (out == NULL && j->p >= j->skim_from && jskim(j, depth))
		return 0;
	jblank(j);
	if (j->p >= j->end) {
		jfail(j, j->p, "'[', '{' or a value expected");
		return -1;
	}
	switch (*j->p) {
	case '{':
	case '[':
		return jcollection(j, depth, keep, out);
	case '"':
		s = jstring(j, out != NULL, &len);
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
		jfail(j, j->p, "invalid token");
		return -1;
	}
}

static enum mf_rc
parse_json(struct mf_doc *doc, const char *buf, size_t len, size_t max_keys,
    const struct mf_doc_keep *keep, struct mf_error *err)
{
	struct jkey first[FIRST_KEYS];
	struct jparse j = { doc, buf, buf, buf + len, err, MF_OK, max_keys,
		first, 0, FIRST_KEYS, buf };
	enum mf_rc rc = MF_OK;

	if (jvalue(&j, 1, keep, &doc->root) != 0) {
		rc = j.rc != MF_OK ? j.rc : jlimit(&j, MF_ENOMEM);
	} else {
		jblank(&j);
		if (j.p < j.end)
			rc = jfail(&j, j.p, "end of file expected");
	}
	if (j.keys != first)
		free(j.keys);
	if (rc != MF_OK)
		doc->root = NULL;
	return rc;
}

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
	doc = calloc(1, sizeof(*doc));
	if (doc == NULL)
		return mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
		    "out of memory");
	if (fmt == MF_DOC_JSON || fmt == MF_DOC_JSON_WIDE)
		rc = parse_json(doc, buf, len,
		    fmt == MF_DOC_JSON ? MF_DOC_MAX_KEYS : MF_DOC_MAX_NODES,
		    keep, err);
	else
		rc = parse_yaml(doc, buf, len, err);
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
