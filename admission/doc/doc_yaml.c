/*
 * doc_yaml.c: YAML into the document tree, from libyaml's events: mf_yfast's
 * when the document is in the part of YAML it reads, else libyaml's own.
 * Aliases are refused, nesting and keys are capped, duplicate keys are
 * refused, plain scalars resolve by the YAML 1.2 core schema.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "doc_tree.h"
#include "yfast.h"

static int
is_number(const char *s)
{
	const char *p = s;
	int digits = 0;

	if (*p == '+' || *p == '-')
		p++;
	if (*p != '.' && (*p < '0' || *p > '9'))
		return 0;
	if (*p == '.') {
		if (strcmp(p, ".inf") == 0 || strcmp(p, ".Inf") == 0 ||
		    strcmp(p, ".INF") == 0)
			return 1;
		if (p == s &&
		    (strcmp(p, ".nan") == 0 || strcmp(p, ".NaN") == 0 ||
		        strcmp(p, ".NAN") == 0))
			return 1;
	}
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

/* YAML 1.2 core schema resolution of a plain scalar, s of len bytes:
 * null is "", "~" and three spellings of four letters, a bool three of four
 * or five; only words of those lengths are compared, four or five bytes at
 * once. */
static enum mf_node_type
resolve_plain(const char *s, size_t len)
{
	static const char nulls[][4] = { { 'n', 'u', 'l', 'l' },
		{ 'N', 'u', 'l', 'l' }, { 'N', 'U', 'L', 'L' } };
	static const char trues[][4] = { { 't', 'r', 'u', 'e' },
		{ 'T', 'r', 'u', 'e' }, { 'T', 'R', 'U', 'E' } };
	static const char falses[][5] = { { 'f', 'a', 'l', 's', 'e' },
		{ 'F', 'a', 'l', 's', 'e' }, { 'F', 'A', 'L', 'S', 'E' } };

	if (len == 0 || (len == 1 && s[0] == '~'))
		return MF_NODE_NULL;
	for (size_t i = 0; len == 4 && i < 3; i++) {
		if (memcmp(s, nulls[i], 4) == 0)
			return MF_NODE_NULL;
		if (memcmp(s, trues[i], 4) == 0)
			return MF_NODE_BOOL;
	}
	for (size_t i = 0; len == 5 && i < 3; i++)
		if (memcmp(s, falses[i], 5) == 0)
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
	int done;      /* the root node is complete */
	int printable; /* the events are mf_yfast's: printable ASCII */
	struct mf_error *err;
};

static int
ypos(const yaml_mark_t *m, int *column)
{
	*column = (int)m->column + 1;
	return (int)m->line + 1;
}

/* Where libyaml's parser failed: its problem's mark, but for a reader's
 * error (bytes that are not UTF-8, a character YAML refuses), which has
 * only the byte offset: the line and column of that byte in buf, each
 * character (not byte) a column, as libyaml counts them. */
static yaml_mark_t
ymark(const yaml_parser_t *parser, const char *buf, size_t len)
{
	yaml_mark_t m = parser->problem_mark;
	size_t i;

	if (parser->error != YAML_READER_ERROR)
		return m;
	memset(&m, 0, sizeof(m));
	/* A byte order mark is no character of the first line. */
	i = len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
	for (; i < parser->problem_offset && i < len; i++) {
		if (buf[i] == '\n') {
			m.line++;
			m.column = 0;
		} else if (((unsigned char)buf[i] & 0xc0) != 0x80) {
			m.column++;
		}
	}
	return m;
}

static enum mf_rc
yerr(struct yparse *p, enum mf_rc rc, const yaml_mark_t *m, const char *what)
{
	int line, column;

	line = ypos(m, &column);
	return mf_error_set(p->err, rc, NULL, line, column, "%s", what);
}

/* The error for the key n of the innermost mapping, which has it: named
 * by its path, each open mapping's pending key and each sequence's index
 * (a mapping's key being a collection, refused when it closes, has
 * none). */
static enum mf_rc
duplicate(struct yparse *p, const struct mf_node *n, const yaml_event_t *ev)
{
	char path[sizeof(p->err->field)] = "";
	int line, column;

	assert(p->depth <= MF_DOC_MAX_DEPTH);
	for (int i = 0; i + 1 < p->depth; i++) {
		const struct frame *f = &p->stack[i];

		if (f->node->type == MF_NODE_SEQ)
			mf_doc_path_index(path, sizeof(path), f->node->len);
		else if (f->key != NULL)
			mf_doc_path_key(path, sizeof(path), f->key,
			    strlen(f->key));
	}
	line = ypos(&ev->start_mark, &column);
	return mf_doc_duplicate(p->err, path, sizeof(path), n->text, n->len,
	    line, column);
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
	assert(p->depth <= MF_DOC_MAX_DEPTH);
	f = &p->stack[p->depth - 1];
	if (f->node->type == MF_NODE_SEQ) {
		mf_doc_append(f->node, &f->tail, n);
		return MF_OK;
	}
	if (f->key == NULL) {
		if (f->node->len >= MF_DOC_MAX_KEYS)
			return yerr(p, MF_ETOOBIG, &ev->start_mark,
			    "a mapping holds too many keys");
		if (n->type == MF_NODE_SEQ || n->type == MF_NODE_MAP)
			return yerr(p, MF_EINVAL, &ev->start_mark,
			    "a mapping key must be a scalar");
		if (mf_node_get(f->node, n->text) != NULL)
			return duplicate(p, n, ev);
		f->key = n->text;
		f->key_line = n->line;
		f->key_column = n->column;
		return MF_OK;
	}
	n->key = f->key;
	n->key_line = f->key_line;
	n->key_column = f->key_column;
	f->key = NULL;
	mf_doc_append(f->node, &f->tail, n);
	return MF_OK;
}

static enum mf_rc
yscalar(struct yparse *p, const yaml_event_t *ev)
{
	const char *text = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	struct mf_node *n;
	int line, column;

	if (!p->printable && memchr(text, '\0', len) != NULL)
		return yerr(p, MF_EINVAL, &ev->start_mark,
		    "a NUL character is not allowed in a value");
	line = ypos(&ev->start_mark, &column);
	n = mf_doc_node(p->doc, MF_NODE_STR, line, column);
	if (n == NULL)
		goto fail;
	n->text = mf_doc_strndup(p->doc, text, len);
	if (n->text == NULL)
		goto fail;
	n->len = len;
	/* The event's value need not end in a NUL (mf_yfast's do not). */
	if (ev->data.scalar.plain_implicit &&
	    ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
		n->type = resolve_plain(n->text, len);
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

	if (p->depth >= MF_DOC_MAX_DEPTH)
		return yerr(p, MF_ETOOBIG, &ev->start_mark,
		    "nesting deeper than 64 levels");
	line = ypos(&ev->start_mark, &column);
	n = mf_doc_node(p->doc, type, line, column);
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
	struct mf_node *n;

	/* libyaml and mf_yfast close only what they opened. */
	assert(p->depth > 0 && p->depth <= MF_DOC_MAX_DEPTH);
	n = p->stack[--p->depth].node;
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

/* p ready for doc's events, mf_yfast's when printable, errors to err:
 * its stack is filled as collections open, not cleared (64 frames). */
static void
ystart(struct yparse *p, struct mf_doc *doc, int printable,
    struct mf_error *err)
{
	p->doc = doc;
	p->depth = 0;
	p->done = 0;
	p->printable = printable;
	p->err = err;
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
enum mf_rc
mf_doc_yaml(struct mf_doc *doc, const char *buf, size_t len,
    struct mf_error *err)
{
	struct mf_error ignored;
	struct yparse p;
	yaml_parser_t parser;
	yaml_event_t ev;
	enum mf_rc rc = MF_OK;
	int end = 0;

	ystart(&p, doc, 1, &ignored);
	if (mf_yfast(buf, len, fast_event, &p) == 0)
		return MF_OK;
	mf_doc_clear(doc);
	ystart(&p, doc, 0, err);
	if (!yaml_parser_initialize(&parser))
		return mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
		    "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (rc == MF_OK && !end) {
		if (!yaml_parser_parse(&parser, &ev)) {
			yaml_mark_t m = ymark(&parser, buf, len);
			int line, column;

			line = ypos(&m, &column);
			rc = mf_error_set(err, MF_EINVAL, NULL, line, column,
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
		doc->root = mf_doc_node(doc, MF_NODE_NULL, 1, 1);
		if (doc->root == NULL)
			rc = mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
			    "out of memory");
	}
	return rc;
}
