/*
 * doc.c: YAML (libyaml event API) and JSON (jansson) into one node tree.
 *
 * Nodes and their strings live in an arena owned by the document, so a
 * parse is a handful of large allocations and one free.
 */
#include "doc.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "qty.h"
#include "yfast.h"

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

static struct mf_node *
from_json(struct mf_doc *doc, json_t *j, int depth, enum mf_rc *rc);

static struct mf_node *
json_children(struct mf_doc *doc, json_t *j, struct mf_node *n, int depth,
    enum mf_rc *rc)
{
	struct mf_node *tail = NULL, *c;
	const char *key;
	json_t *v;
	size_t i;

	if (json_is_array(j)) {
		json_array_foreach (j, i, v) {
			c = from_json(doc, v, depth + 1, rc);
			if (c == NULL)
				return NULL;
			append(n, &tail, c);
		}
		return n;
	}
	json_object_foreach (j, key, v) {
		c = from_json(doc, v, depth + 1, rc);
		if (c == NULL)
			return NULL;
		c->key = arena_strndup(doc, key, strlen(key));
		if (c->key == NULL)
			return NULL;
		append(n, &tail, c);
	}
	return n;
}

static struct mf_node *
from_json(struct mf_doc *doc, json_t *j, int depth, enum mf_rc *rc)
{
	char num[40];
	const char *text = NULL;
	size_t len = 0;
	struct mf_node *n;

	switch (json_typeof(j)) {
	case JSON_OBJECT:
	case JSON_ARRAY:
		if (depth > MF_DOC_MAX_DEPTH ||
		    json_object_size(j) > MF_DOC_MAX_KEYS) {
			*rc = MF_ETOOBIG;
			return NULL;
		}
		n = new_node(doc, json_is_object(j) ? MF_NODE_MAP : MF_NODE_SEQ,
		    0, 0);
		return n == NULL ? NULL : json_children(doc, j, n, depth, rc);
	case JSON_STRING:
		n = new_node(doc, MF_NODE_STR, 0, 0);
		text = json_string_value(j);
		len = json_string_length(j);
		break;
	case JSON_INTEGER:
		n = new_node(doc, MF_NODE_NUM, 0, 0);
		len = (size_t)snprintf(num, sizeof(num),
		    "%" JSON_INTEGER_FORMAT, json_integer_value(j));
		text = num;
		break;
	case JSON_REAL:
		n = new_node(doc, MF_NODE_NUM, 0, 0);
		len = (size_t)snprintf(num, sizeof(num), "%.17g",
		    json_real_value(j));
		text = num;
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		n = new_node(doc, MF_NODE_BOOL, 0, 0);
		text = json_is_true(j) ? "true" : "false";
		len = strlen(text);
		break;
	default:
		n = new_node(doc, MF_NODE_NULL, 0, 0);
		text = "null";
		len = 4;
		break;
	}
	if (n == NULL)
		return NULL;
	n->text = arena_strndup(doc, text, len);
	n->len = len;
	return n->text == NULL ? NULL : n;
}

/*
 * jansson reports an allocation that failed mid-parse as a syntax error, or
 * not at all, so its allocations are watched: a parse that ran out of
 * memory is MF_ENOMEM, never a 400 or a wrong document.  The hooks go in at the
 * first JSON parse, which memfloord and memfloor do (loading the model configs)
 * before any other thread starts.
 */
static _Thread_local int json_nomem;

static void *
json_alloc(size_t n)
{
	void *p = malloc(n);

	json_nomem |= p == NULL;
	return p;
}

static void
json_free(void *p)
{
	free(p);
}

static void
json_hooks(void)
{
	json_set_alloc_funcs(json_alloc, json_free);
}

static enum mf_rc
parse_json(struct mf_doc *doc, const char *buf, size_t len,
    struct mf_error *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	enum mf_rc rc = MF_ENOMEM;
	json_error_t jerr;
	json_t *j;

	pthread_once(&once, json_hooks);
	json_nomem = 0;
	j = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
	    &jerr);
	/* Where jansson's lexer cannot grow a string it drops the byte and
	 * goes on: a parse that saw a failed allocation is never trusted. */
	if (json_nomem) {
		json_decref(j);
		return mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
		    "out of memory");
	}
	if (j == NULL)
		return mf_error_set(err, MF_EINVAL, NULL, jerr.line,
		    jerr.column, "not valid JSON: %s", jerr.text);
	doc->root = from_json(doc, j, 1, &rc);
	json_decref(j);
	if (doc->root != NULL)
		return MF_OK;
	if (doc->nodes >= MF_DOC_MAX_NODES)
		rc = MF_ETOOBIG;
	return mf_error_set(err, rc, NULL, 0, 0, "%s",
	    rc == MF_ETOOBIG ? "document nested deeper than 64 levels or "
	                       "holding too many values" :
	                       "out of memory");
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
	if (fmt == MF_DOC_JSON)
		rc = parse_json(doc, buf, len, err);
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
