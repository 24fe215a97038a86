/*
 * schema.c: fields.h's table as a JSON Schema (draft 2020-12), for GET
 * /v1/schema and editors, and as the Markdown field lists of
 * docs/manifest.md and docs/catalog.md.  Both are written from the rows at
 * run time, so neither can disagree with the reader.
 *
 * A row that applies only to some workloads gets, in the object that holds
 * the field its condition names, an if/then rule that refuses it
 * elsewhere ({"if": {"not": kind is inference}, "then": {"not":
 * {"required": ["concurrency"]}}}); a condition on a field with a default
 * holds when the field is absent and its default is one of the values.
 * The same condition is also an annotation on the property,
 * "x-memfloor-when": {"spec.workload.kind": ["inference"]}, which the web
 * page reads to show a field only where it applies.
 */
#include "fields.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/internal.h"
#include "../base/jw.h"
#include "../base/qty.h"

#define PATHMAX 128
#define DEPTH 8
/* A Kubernetes quantity of bytes (design 2): the schema cannot say "at
 * least 1Gi" of a string, which the reader does. */
#define QTY_PATTERN \
	"^[+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([kMGTPE]|[KMGTPE]i|[eE][+-]?[0-9]+)?$"

/* The objects being written, outermost first, with their paths. */
struct stack {
	const struct mf_field *obj[DEPTH];
	char path[DEPTH][PATHMAX];
	int depth;
};

/* The dotted path of row f of an enclosing object, or NULL. */
static const char *
path_of(const struct stack *st, const struct mf_field *f, char *buf,
    size_t size)
{
	assert(st->depth <= DEPTH);
	for (int d = st->depth - 1; d >= 0; d--) {
		const struct mf_field *o = st->obj[d];

		if (f >= o->sub && f < o->sub + o->nsub)
			return mf_path(buf, size, st->path[d], f->key);
	}
	return NULL;
}

/* The name of value v as JSON: false and true are booleans. */
static void
name_value(struct mf_jw *w, const char *key, const char *name)
{
	if (strcmp(name, "true") == 0 || strcmp(name, "false") == 0)
		mf_jw_bool(w, key, name[0] == 't');
	else
		mf_jw_str(w, key, name);
}

/* The i-th name of f in the table's order, its value in *v; NULL past
 * the last. */
static const char *
nth_name(const struct mf_field *f, int i, int *v)
{
	if (f->name_of != NULL) {
		*v = i;
		return f->name_of(i);
	}
	*v = f->names[i].value;
	return f->names[i].name;
}

/* The names of f whose values are in mask (all: ~0u), as an array, in
 * the table's order. */
static void
names(struct mf_jw *w, const char *key, const struct mf_field *f, unsigned mask)
{
	const char *nm = "";
	int v;

	mf_jw_open(w, key, '[');
	for (int i = 0; nm != NULL; i++) {
		nm = nth_name(f, i, &v);
		if (nm != NULL && v >= 0 && v < 32 && (mask >> v & 1u))
			name_value(w, NULL, nm);
	}
	mf_jw_close(w, ']');
}

/*
 * A row's default, for the JSON Schema and the docs alike: its text (an
 * enum's name, true or false, the integer, the number to 15 figures, the
 * quantity), and what JSON writes it as.
 */
struct dflt {
	enum { DF_NONE, DF_NAME, DF_INT, DF_NUM } kind;
	char text[MF_QTY_STRMAX]; /* also room for %lld and %.15g */
};

static void
default_of(const struct mf_field *f, struct dflt *d)
{
	const char *nm = NULL;

	switch (f->type) {
	case MF_FT_ENUM:
		nm = mf_fields_name(f, (int)f->idef);
		break;
	case MF_FT_BOOL:
		nm = f->idef ? "true" : "false";
		break;
	case MF_FT_INT:
		d->kind = DF_INT;
		snprintf(d->text, sizeof(d->text), "%lld", (long long)f->idef);
		return;
	case MF_FT_NUMBER:
		d->kind = DF_NUM;
		snprintf(d->text, sizeof(d->text), "%.15g", f->ddef);
		return;
	case MF_FT_BYTES:
	case MF_FT_MEMORY:
		d->kind = DF_NAME;
		mf_qty_format(f->idef, MF_QTY_BINARY, d->text, sizeof(d->text));
		return;
	default:
		break;
	}
	d->kind = nm != NULL ? DF_NAME : DF_NONE;
	mf_copy(d->text, sizeof(d->text), nm != NULL ? nm : "");
}

/* The row's default as JSON. */
static void
default_value(struct mf_jw *w, const struct mf_field *f)
{
	struct dflt d;

	default_of(f, &d);
	if (d.kind == DF_INT)
		mf_jw_int(w, "default", f->idef);
	else if (d.kind == DF_NUM)
		mf_jw_num(w, "default", f->ddef, 6);
	else if (d.kind == DF_NAME)
		name_value(w, "default", d.text);
}

/* The bounds of a number: [lo, hi] with either end open. */
static void
number_bounds(struct mf_jw *w, const struct mf_field *f)
{
	mf_jw_num(w, f->lo_open ? "exclusiveMinimum" : "minimum", f->lo, 6);
	mf_jw_num(w, f->hi_open ? "exclusiveMaximum" : "maximum", f->hi, 6);
}

static void
enum_type(struct mf_jw *w, const struct mf_field *f)
{
	if (f->max == 0 && f->item == NULL) {
		names(w, "enum", f, ~0u);
		return;
	}
	mf_jw_open(w, "anyOf", '[');
	mf_jw_open(w, NULL, '{');
	names(w, "enum", f, ~0u);
	mf_jw_close(w, '}');
	mf_jw_open(w, NULL, '{');
	if (f->item != NULL) {
		mf_jw_str(w, "type", "array");
		mf_jw_int(w, "minItems", 1);
		mf_jw_open(w, "items", '{');
		names(w, "enum", f->item, ~0u);
		mf_jw_close(w, '}');
		if (f->item->noun != NULL)
			mf_jw_str(w, "description", f->item->noun);
	} else {
		mf_jw_str(w, "type", "integer");
		mf_jw_int(w, "minimum", f->min);
		mf_jw_int(w, "maximum", f->max);
		if (f->noun != NULL)
			mf_jw_str(w, "description", f->noun);
	}
	mf_jw_close(w, '}');
	mf_jw_close(w, ']');
}

static void
bytes_type(struct mf_jw *w, const struct mf_field *f)
{
	mf_jw_open(w, "anyOf", '[');
	mf_jw_open(w, NULL, '{');
	mf_jw_str(w, "type", "string");
	mf_jw_str(w, "pattern", QTY_PATTERN);
	mf_jw_close(w, '}');
	mf_jw_open(w, NULL, '{');
	mf_jw_str(w, "type", "integer");
	mf_jw_int(w, "minimum", f->min > 0 ? f->min : 1);
	mf_jw_close(w, '}');
	mf_jw_close(w, ']');
}

static void row_schema(struct mf_jw *w, struct stack *st,
    const struct mf_field *f, const char *key, const char *path);

/* What a value of f may be: its type, bounds and allowed values. */
static void
value_type(struct mf_jw *w, struct stack *st, const struct mf_field *f,
    const char *path)
{
	switch (f->type) {
	case MF_FT_STRING:
		mf_jw_str(w, "type", "string");
		if (f->max > 0 && f->form == NULL) {
			mf_jw_int(w, "minLength", f->min);
			mf_jw_int(w, "maxLength", f->max);
		} else if (f->max > 0) {
			mf_jw_int(w, "maxLength", f->max);
		}
		if (f->form != NULL)
			mf_jw_str(w, "pattern", f->form->pattern);
		break;
	case MF_FT_CONST:
		mf_jw_str(w, "const", f->text);
		break;
	case MF_FT_ENUM:
		enum_type(w, f);
		break;
	case MF_FT_BOOL:
		mf_jw_str(w, "type", "boolean");
		break;
	case MF_FT_INT:
		mf_jw_str(w, "type", "integer");
		mf_jw_int(w, "minimum", f->min);
		mf_jw_int(w, "maximum", f->max);
		if (f->ints != NULL) {
			mf_jw_open(w, "enum", '[');
			for (int i = 0; f->ints[i] != 0; i++)
				mf_jw_int(w, NULL, f->ints[i]);
			mf_jw_close(w, ']');
		}
		break;
	case MF_FT_NUMBER:
		mf_jw_str(w, "type", "number");
		number_bounds(w, f);
		break;
	case MF_FT_BYTES:
	case MF_FT_MEMORY:
		bytes_type(w, f);
		break;
	case MF_FT_SET:
		mf_jw_str(w, "type", "array");
		mf_jw_open(w, "items", '{');
		names(w, "enum", f, ~0u);
		mf_jw_close(w, '}');
		break;
	case MF_FT_CONFIG:
		mf_jw_str(w, "type", "object");
		break;
	default:
		(void)st;
		(void)path;
		break;
	}
}

/* --- the rules of an object ---------------------------------------------- */

/* "if the condition field does not hold one of these values". */
static void
condition(struct mf_jw *w, const struct mf_fwhen *c)
{
	const struct mf_field *f = c->field;
	int holds_absent =
	    (f->flags & MF_FF_DEFAULT) && (c->values >> f->idef & 1u);

	mf_jw_open(w, "if", '{');
	mf_jw_open(w, "not", '{');
	mf_jw_open(w, "properties", '{');
	mf_jw_open(w, f->key, '{');
	names(w, "enum", f, c->values);
	mf_jw_close(w, '}');
	mf_jw_close(w, '}');
	if (!holds_absent) {
		mf_jw_open(w, "required", '[');
		mf_jw_str(w, NULL, f->key);
		mf_jw_close(w, ']');
	}
	mf_jw_close(w, '}');
	mf_jw_close(w, '}');
}

/* "then the member at rel (a dotted path below the object) is absent", or
 * with value, "is not that value". */
static void
refusal(struct mf_jw *w, const char *rel, const char *value)
{
	char key[PATHMAX];
	size_t n = strcspn(rel, ".");
	int opened = 0;

	mf_jw_open(w, "then", '{');
	while (rel[n] == '.') {
		mf_copy(key, n + 1 < sizeof(key) ? n + 1 : sizeof(key), rel);
		mf_jw_open(w, "properties", '{');
		mf_jw_open(w, key, '{');
		opened++;
		rel += n + 1;
		n = strcspn(rel, ".");
	}
	if (value != NULL) {
		mf_jw_open(w, "properties", '{');
		mf_jw_open(w, rel, '{');
		mf_jw_open(w, "not", '{');
		name_value(w, "const", value);
		mf_jw_close(w, '}');
		mf_jw_close(w, '}');
		mf_jw_close(w, '}');
	} else {
		mf_jw_open(w, "not", '{');
		mf_jw_open(w, "required", '[');
		mf_jw_str(w, NULL, rel);
		mf_jw_close(w, ']');
		mf_jw_close(w, '}');
	}
	for (; opened > 0; opened--) {
		mf_jw_close(w, '}');
		mf_jw_close(w, '}');
	}
	mf_jw_close(w, '}');
}

static void
rule(struct mf_jw *w, const struct mf_fwhen *c, const char *rel,
    const char *value)
{
	mf_jw_open(w, NULL, '{');
	condition(w, c);
	refusal(w, rel, value);
	mf_jw_close(w, '}');
}

static int
in_object(const struct mf_field *obj, const struct mf_field *f)
{
	return f >= obj->sub && f < obj->sub + obj->nsub;
}

/* The rules of every row at or below obj (rel its path below top) whose
 * condition names a member of top. */
static void
rules_below(struct mf_jw *w, const struct mf_field *top,
    const struct mf_field *obj, const char *rel)
{
	const struct mf_field *f;
	char p[PATHMAX];

	for (size_t i = 0; i < obj->nsub; i++) {
		f = &obj->sub[i];
		mf_path(p, sizeof(p), rel, f->key);
		for (int k = 0; k < MF_FWHEN_MAX && f->when[k].field; k++)
			if (in_object(top, f->when[k].field))
				rule(w, &f->when[k], p, NULL);
		for (const struct mf_fname *e = f->names;
		     (f->flags & MF_FF_VALUE_WHEN) && e->name; e++)
			if (e->when.field && in_object(top, e->when.field))
				rule(w, &e->when, p, e->name);
		if (f->type == MF_FT_OBJECT)
			rules_below(w, top, f, p);
	}
}

/* Whether any row at or below obj has a condition on a member of top. */
static int
has_rules(const struct mf_field *top, const struct mf_field *obj)
{
	const struct mf_field *f;

	for (size_t i = 0; i < obj->nsub; i++) {
		f = &obj->sub[i];
		for (int k = 0; k < MF_FWHEN_MAX && f->when[k].field; k++)
			if (in_object(top, f->when[k].field))
				return 1;
		for (const struct mf_fname *e = f->names;
		     (f->flags & MF_FF_VALUE_WHEN) && e->name; e++)
			if (e->when.field && in_object(top, e->when.field))
				return 1;
		if (f->type == MF_FT_OBJECT && has_rules(top, f))
			return 1;
	}
	return 0;
}

/* --- objects, maps, lists ------------------------------------------------ */

static void
object_schema(struct mf_jw *w, struct stack *st, const struct mf_field *obj,
    const char *path)
{
	int required = 0;

	mf_jw_str(w, "type", "object");
	if (obj->flags & MF_FF_ONE_OF) {
		mf_jw_int(w, "minProperties", 1);
		mf_jw_int(w, "maxProperties", 1);
	} else if (obj->flags & MF_FF_NONEMPTY) {
		mf_jw_int(w, "minProperties", 1);
	}
	assert(st->depth < DEPTH && "the table nests deeper than DEPTH");
	if (st->depth >= DEPTH)
		return;
	st->obj[st->depth] = obj;
	mf_copy(st->path[st->depth], PATHMAX, path);
	st->depth++;
	mf_jw_open(w, "properties", '{');
	for (size_t i = 0; i < obj->nsub; i++) {
		char p[PATHMAX];

		required |= (obj->sub[i].flags & MF_FF_REQUIRED) != 0;
		row_schema(w, st, &obj->sub[i], obj->sub[i].key,
		    mf_path(p, sizeof(p), path, obj->sub[i].key));
	}
	mf_jw_close(w, '}');
	if (required) {
		mf_jw_open(w, "required", '[');
		for (size_t i = 0; i < obj->nsub; i++)
			if (obj->sub[i].flags & MF_FF_REQUIRED)
				mf_jw_str(w, NULL, obj->sub[i].key);
		mf_jw_close(w, ']');
	}
	mf_jw_bool(w, "additionalProperties", 0);
	if (has_rules(obj, obj)) {
		mf_jw_open(w, "allOf", '[');
		rules_below(w, obj, obj, "");
		mf_jw_close(w, ']');
	}
	st->depth--;
}

static void
map_schema(struct mf_jw *w, struct stack *st, const struct mf_field *f,
    const char *path)
{
	mf_jw_str(w, "type", "object");
	if (f->max > 0)
		mf_jw_int(w, "maxProperties", f->max);
	mf_jw_open(w, "propertyNames", '{');
	if (f->names != NULL || f->name_of != NULL)
		names(w, "enum", f, ~0u);
	else if (f->form != NULL)
		mf_jw_str(w, "pattern", f->form->pattern);
	else
		mf_jw_str(w, "type", "string");
	mf_jw_close(w, '}');
	if (f->nsub > 0) {
		mf_jw_open(w, "properties", '{');
		for (size_t i = 0; i < f->nsub; i++) {
			char p[PATHMAX];

			row_schema(w, st, &f->sub[i], f->sub[i].key,
			    mf_path(p, sizeof(p), path, f->sub[i].key));
		}
		mf_jw_close(w, '}');
	}
	mf_jw_open(w, "additionalProperties", '{');
	value_type(w, st, f->item, path);
	if (f->item->flags & MF_FF_DEFAULT)
		default_value(w, f->item);
	mf_jw_close(w, '}');
}

/* "x-memfloor-when": {"spec.workload.kind": ["inference"], ...} */
static void
when_note(struct mf_jw *w, const struct stack *st, const struct mf_field *f)
{
	char p[PATHMAX];

	if (f->when[0].field == NULL && !(f->flags & MF_FF_VALUE_WHEN))
		return;
	if (f->when[0].field != NULL) {
		mf_jw_open(w, "x-memfloor-when", '{');
		for (int k = 0; k < MF_FWHEN_MAX && f->when[k].field; k++)
			if (path_of(st, f->when[k].field, p, sizeof(p)))
				names(w, p, f->when[k].field,
				    f->when[k].values);
		mf_jw_close(w, '}');
	}
	if (!(f->flags & MF_FF_VALUE_WHEN))
		return;
	mf_jw_open(w, "x-memfloor-value-when", '{');
	for (const struct mf_fname *e = f->names; e->name; e++) {
		if (e->when.field == NULL ||
		    !path_of(st, e->when.field, p, sizeof(p)))
			continue;
		mf_jw_open(w, e->name, '{');
		names(w, p, e->when.field, e->when.values);
		mf_jw_close(w, '}');
	}
	mf_jw_close(w, '}');
}

/* The annotations of a row: title, doc, unit, default, example. */
static void
notes(struct mf_jw *w, const struct stack *st, const struct mf_field *f)
{
	int other = f->text != NULL && f->type != MF_FT_CONST;
	char doc[512];

	if (f->title != NULL)
		mf_jw_str(w, "title", f->title);
	if (f->doc != NULL) {
		snprintf(doc, sizeof(doc), "%s%s%s", f->doc,
		    other ? "; default: " : "", other ? f->text : "");
		mf_jw_str(w, "description", doc);
	}
	if (f->unit != NULL)
		mf_jw_str(w, "x-memfloor-unit", f->unit);
	if (other)
		mf_jw_str(w, "x-memfloor-default", f->text);
	if ((f->flags & MF_FF_DEFAULT) && !(f->flags & MF_FF_REQUIRED))
		default_value(w, f);
	if (f->example != NULL) {
		mf_jw_open(w, "examples", '[');
		if (f->type == MF_FT_INT)
			mf_jw_int(w, NULL, strtoll(f->example, NULL, 10));
		else
			mf_jw_str(w, NULL, f->example);
		mf_jw_close(w, ']');
	}
	when_note(w, st, f);
}

static void
row_schema(struct mf_jw *w, struct stack *st, const struct mf_field *f,
    const char *key, const char *path)
{
	mf_jw_open(w, key, '{');
	notes(w, st, f);
	if (f->type == MF_FT_OBJECT) {
		object_schema(w, st, f, path);
	} else if (f->type == MF_FT_MAP) {
		map_schema(w, st, f, path);
	} else if (f->type == MF_FT_LIST) {
		mf_jw_str(w, "type", "array");
		if (f->min > 0)
			mf_jw_int(w, "minItems", f->min);
		if (f->max > 0)
			mf_jw_int(w, "maxItems", f->max);
		row_schema(w, st, f->item, "items", path);
	} else {
		value_type(w, st, f, path);
	}
	mf_jw_close(w, '}');
}

void
mf_fields_schema(const struct mf_field *doc, struct mf_jw *w)
{
	struct stack st = { .depth = 0 };

	mf_jw_open(w, NULL, '{');
	mf_jw_str(w, "$schema", "https://json-schema.org/draft/2020-12/schema");
	notes(w, &st, doc);
	object_schema(w, &st, doc, "");
	mf_jw_close(w, '}');
}

/* --- Markdown ------------------------------------------------------------ */

/* Text for a table cell: '|' escaped, so a form's "& or |" stays in its
 * cell. */
static void
cell(struct mf_buf *b, const char *s)
{
	for (const char *p = s; *p != '\0'; p++)
		if (*p == '|')
			mf_buf_add(b, "\\|", 2);
		else
			mf_buf_add(b, p, 1);
}

static void
md_names(struct mf_buf *b, const struct mf_field *f, unsigned mask,
    const char *sep)
{
	const char *nm = "";
	int n = 0, v;

	for (int i = 0; nm != NULL; i++) {
		nm = nth_name(f, i, &v);
		if (nm != NULL && v >= 0 && v < 32 && (mask >> v & 1u))
			mf_buf_printf(b, "%s`%s`", n++ ? sep : "", nm);
	}
}

static void
md_type(struct mf_buf *b, const struct mf_field *f)
{
	switch (f->type) {
	case MF_FT_OBJECT:
		mf_buf_printf(b, "mapping, below");
		return;
	case MF_FT_LIST:
		mf_buf_printf(b, "list of mappings, below (1 to %lld)",
		    (long long)f->max);
		return;
	case MF_FT_MAP:
		mf_buf_printf(b, "mapping of ");
		if (f->names != NULL || f->name_of != NULL) {
			md_names(b, f, ~0u, ", ");
			mf_buf_printf(b, " to ");
		}
		md_type(b, f->item);
		if (f->max > 0)
			mf_buf_printf(b, ", at most %lld", (long long)f->max);
		return;
	case MF_FT_SET:
		mf_buf_printf(b, "list of ");
		md_names(b, f, ~0u, ", ");
		return;
	case MF_FT_STRING:
		mf_buf_printf(b, "string");
		if (f->form != NULL) {
			mf_buf_printf(b, ": ");
			cell(b, f->form->text);
		} else if (f->max > 0) {
			mf_buf_printf(b, ", %lld to %lld characters",
			    (long long)f->min, (long long)f->max);
		}
		break;
	case MF_FT_CONST:
		mf_buf_printf(b, "`%s`", f->text);
		break;
	case MF_FT_ENUM:
		md_names(b, f, ~0u, " \\| ");
		if (f->item != NULL) {
			mf_buf_printf(b, " \\| list of ");
			md_names(b, f->item, ~0u, ", ");
		}
		if (f->max > 0)
			mf_buf_printf(b, " \\| %s, %lld to %lld", f->noun,
			    (long long)f->min, (long long)f->max);
		break;
	case MF_FT_BOOL:
		mf_buf_printf(b, "`true` \\| `false`");
		break;
	case MF_FT_INT:
		if (f->ints == NULL) {
			mf_buf_printf(b, "integer, %lld to %lld",
			    (long long)f->min, (long long)f->max);
			break;
		}
		mf_buf_printf(b, "one of");
		for (int i = 0; f->ints[i] != 0; i++)
			mf_buf_printf(b, "%s %lld", i ? "," : "",
			    (long long)f->ints[i]);
		break;
	case MF_FT_NUMBER:
		mf_buf_printf(b, "number in %c%.15g, %.15g%c",
		    f->lo_open ? '(' : '[', f->lo, f->hi,
		    f->hi_open ? ')' : ']');
		break;
	case MF_FT_BYTES:
		mf_buf_printf(b, "quantity (`88Gi`, `94.5G`, `1e9`)");
		break;
	case MF_FT_MEMORY:
		mf_buf_printf(b, "quantity, at least `1Gi`");
		break;
	case MF_FT_CONFIG:
		mf_buf_printf(b, "mapping (a config.json)");
		break;
	}
	if (f->unit != NULL)
		mf_buf_printf(b, " (%s)", f->unit);
}

static void
md_default(struct mf_buf *b, const struct mf_field *f)
{
	struct dflt d;

	if (f->flags & MF_FF_REQUIRED) {
		mf_buf_printf(b, "required");
		return;
	}
	if (f->text != NULL && f->type != MF_FT_CONST) {
		cell(b, f->text);
		return;
	}
	if (!(f->flags & MF_FF_DEFAULT))
		return;
	default_of(f, &d);
	if (d.kind != DF_NONE)
		mf_buf_printf(b, "`%s`", d.text);
}

/* "kind: `inference`; server: `vllm`", and the values' own. */
static void
md_when(struct mf_buf *b, const struct mf_field *f)
{
	int n = 0;

	for (int k = 0; k < MF_FWHEN_MAX && f->when[k].field; k++) {
		mf_buf_printf(b, "%s%s: ", n++ ? "; " : "",
		    f->when[k].field->key);
		md_names(b, f->when[k].field, f->when[k].values, " or ");
	}
	for (const struct mf_fname *e = f->names;
	     (f->flags & MF_FF_VALUE_WHEN) && e->name; e++) {
		if (e->when.field == NULL)
			continue;
		mf_buf_printf(b, "%s`%s` only with %s: ", n++ ? "; " : "",
		    e->name, e->when.field->key);
		md_names(b, e->when.field, e->when.values, " or ");
	}
}

/* The values of f that have a doc, or a map's keys that have a default of
 * their own, as a list under its table. */
static void
md_values(struct mf_buf *b, const struct mf_field *f)
{
	int any = 0;

	if (f->type == MF_FT_MAP) {
		for (size_t i = 0; i < f->nsub; i++)
			mf_buf_printf(b, "%s- `%s.%s`: `%.15g`, %s\n",
			    i ? "" : "\n", f->key, f->sub[i].key,
			    f->sub[i].ddef, f->sub[i].doc);
		return;
	}
	for (const struct mf_fname *e = f->names;
	     f->type == MF_FT_ENUM && e != NULL && e->name; e++)
		any |= e->doc != NULL;
	if (!any)
		return;
	mf_buf_printf(b, "\n`%s`:\n\n", f->key);
	for (const struct mf_fname *e = f->names; e->name; e++)
		if (e->doc != NULL)
			mf_buf_printf(b, "- `%s`: %s\n", e->name, e->doc);
}

static void
md_object(struct mf_buf *b, const struct mf_field *obj, const char *path)
{
	const struct mf_field *f;
	char p[PATHMAX];

	/* The doc as a sentence: its first letter a capital. */
	mf_buf_printf(b, "\n### %s%s%s\n\n%c%s.\n\n", path[0] ? "`" : "",
	    path[0] ? path : obj->title, path[0] ? "`" : "",
	    toupper((unsigned char)obj->doc[0]), obj->doc + 1);
	mf_buf_printf(b,
	    "| Field | Type | Default | Applies only with | What |\n"
	    "|---|---|---|---|---|\n");
	for (size_t i = 0; i < obj->nsub; i++) {
		f = &obj->sub[i];
		mf_buf_printf(b, "| `%s` | ", f->key);
		md_type(b, f);
		mf_buf_printf(b, " | ");
		md_default(b, f);
		mf_buf_printf(b, " | ");
		md_when(b, f);
		mf_buf_printf(b, " | ");
		cell(b, f->doc != NULL ? f->doc : "");
		mf_buf_printf(b, " |\n");
	}
	for (size_t i = 0; i < obj->nsub; i++)
		md_values(b, &obj->sub[i]);
	for (size_t i = 0; i < obj->nsub; i++) {
		f = &obj->sub[i];
		if (f->type == MF_FT_OBJECT) {
			md_object(b, f, mf_path(p, sizeof(p), path, f->key));
		} else if (f->type == MF_FT_LIST) {
			snprintf(p, sizeof(p), "%s%s%s[]", path,
			    path[0] ? "." : "", f->key);
			md_object(b, f->item, p);
		}
	}
}

enum mf_rc
mf_fields_markdown(const struct mf_field *doc, struct mf_buf *b)
{
	md_object(b, doc, "");
	return b->rc;
}
