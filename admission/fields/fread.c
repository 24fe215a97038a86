/*
 * fread.c: the reader of fields.h's table: a document's tree walked
 * against its rows, each value checked and stored where its row says.
 *
 * An object is read in four passes over its members: each is looked up
 * (an unknown one is an error); those that are not objects are read; their
 * conditions are checked; then the objects are, conditions first.  So a
 * condition always sees the values it names, which are scalars of the same or
 * an enclosing object.  A member's path is written only for an error or an
 * object, not for every value read.
 */
#include "fields.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/internal.h"
#include "../base/qty.h"
#include "../base/str.h"

#define PATHMAX 128
#define LISTMAX 224

static char *
slot_in(void *const *dst, const struct mf_field *f, size_t offset)
{
	if (f->base == MF_FB_NONE || dst[f->base] == NULL)
		return NULL;
	return (char *)dst[f->base] + offset;
}

static char *
slot(const struct mf_fread *r, const struct mf_field *f)
{
	return slot_in(r->dst, f, f->offset);
}

/* A checked value into its slot, size bytes from v; a NULL slot (the
 * document is only checked, or the row stores nothing) takes nothing. */
static enum mf_rc
store(char *at, const void *v, size_t size)
{
	if (at != NULL)
		memcpy(at, v, size);
	return MF_OK;
}

static enum mf_rc
fail(struct mf_fread *r, const char *path, const char *key, int line,
    int column, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* An error about the member key of path, at line and column. */
static enum mf_rc
fail(struct mf_fread *r, const char *path, const char *key, int line,
    int column, const char *fmt, ...)
{
	char field[PATHMAX];
	va_list ap;

	if (r->err == NULL)
		return MF_EINVAL;
	if (key != NULL)
		mf_path(field, sizeof(field), path, key);
	else
		mf_copy(field, sizeof(field), path != NULL ? path : "");
	va_start(ap, fmt);
	mf_error_vset(r->err, MF_EINVAL, field[0] ? field : NULL, line, column,
	    fmt, ap);
	va_end(ap);
	return MF_EINVAL;
}

/* doc.h's readers were given no path: give their error the member's. */
static enum mf_rc
named(struct mf_fread *r, enum mf_rc rc, const char *path, const char *key)
{
	if (rc != MF_OK && r->err != NULL)
		mf_path(r->err->field, sizeof(r->err->field), path, key);
	return rc;
}

static enum mf_rc
wrong_type(struct mf_fread *r, const struct mf_node *n, const char *path,
    const char *key, const char *want)
{
	return fail(r, path, key, n->line, n->column, "must be %s, not %s",
	    want, mf_node_type_name(n->type));
}

/* --- names --------------------------------------------------------------- */

const char *
mf_fields_name(const struct mf_field *f, int v)
{
	if (f->name_of != NULL)
		return f->name_of(v);
	for (const struct mf_fname *nm = f->names; nm && nm->name; nm++)
		if (nm->value == v)
			return nm->name;
	return NULL;
}

static int
is_bool_name(const char *name)
{
	return strcmp(name, "true") == 0 || strcmp(name, "false") == 0;
}

/* The value of the name text (a boolean when is_bool), or -1. */
static int
lookup(const struct mf_field *f, const char *text, int is_bool)
{
	const char *nm;

	if (f->name_of != NULL) {
		for (int i = 0; !is_bool && (nm = f->name_of(i)) != NULL; i++)
			if (strcmp(nm, text) == 0)
				return i;
		return -1;
	}
	for (const struct mf_fname *e = f->names; e->name != NULL; e++)
		if (mf_streq(e->name, text) && is_bool_name(e->name) == is_bool)
			return e->value;
	return -1;
}

/* "bf16, fp16, fp32" (and "or N from 1 to 4096" for a count) into buf. */
static char *
name_list(const struct mf_field *f, char *buf, size_t size)
{
	size_t used = 0;
	const char *nm;

	buf[0] = '\0';
	for (int i = 0; used < size; i++) {
		nm = f->name_of != NULL ? f->name_of(i) : f->names[i].name;
		if (nm == NULL)
			break;
		used += (size_t)snprintf(buf + used, size - used, "%s%s",
		    i ? ", " : "", nm);
	}
	if (f->type == MF_FT_ENUM && f->max > 0 && used < size)
		snprintf(buf + used, size - used, " or %s from %lld to %lld",
		    f->noun, (long long)f->min, (long long)f->max);
	return buf;
}

/* --- scalars -------------------------------------------------------------- */

static enum mf_rc
read_string(struct mf_fread *r, const struct mf_field *f,
    const struct mf_node *n, const char *path, char *at)
{
	char *copy;

	if (n->type != MF_NODE_STR)
		return wrong_type(r, n, path, n->key, "a string");
	if (f->max > 0 &&
	    (n->len < (size_t)f->min || n->len > (size_t)f->max) &&
	    f->form == NULL)
		return fail(r, path, n->key, n->line, n->column,
		    "must be %lld to %lld characters", (long long)f->min,
		    (long long)f->max);
	if (f->form != NULL &&
	    (n->len > (size_t)f->max ||
	        !mf_fields_form_ok(f->form, n->text, n->len)))
		return fail(r, path, n->key, n->line, n->column,
		    "'%.72s' is not %s", n->text, f->form->text);
	if (at == NULL)
		return MF_OK;
	if (!(f->flags & MF_FF_OWN)) {
		memcpy(at, &n->text, sizeof(n->text));
		return MF_OK;
	}
	copy = malloc(n->len + 1);
	if (copy == NULL)
		return mf_error_set(r->err, MF_ENOMEM, NULL, 0, 0,
		    "out of memory");
	memcpy(copy, n->text, n->len + 1);
	memcpy(at, &copy, sizeof(copy));
	return MF_OK;
}

/* The title of the document of kind, or NULL. */
static const char *
document_title(const char *kind)
{
	if (strcmp(kind, MF_FIELDS_JOB_KIND) == 0)
		return MF_FIELDS_JOB_TITLE;
	if (strcmp(kind, MF_FIELDS_CATALOG_KIND) == 0)
		return MF_FIELDS_CATALOG_TITLE;
	return NULL;
}

static enum mf_rc
read_const(struct mf_fread *r, const struct mf_field *f,
    const struct mf_node *n, const char *path)
{
	const char *title;

	if (n->type != MF_NODE_STR)
		return wrong_type(r, n, path, n->key, "a string");
	if (strcmp(n->text, f->text) == 0)
		return MF_OK;
	/* Another document of the table: say which, and what this takes. */
	title = strcmp(f->key, "kind") == 0 ? document_title(n->text) : NULL;
	if (title != NULL)
		return fail(r, path, n->key, n->line, n->column,
		    "'%s' is the kind of a %s; this takes kind %s", n->text,
		    title, f->text);
	return fail(r, path, n->key, n->line, n->column, "'%.40s' is not '%s'",
	    n->text, f->text);
}

static enum mf_rc read_set(struct mf_fread *r, const struct mf_field *f,
    const struct mf_node *n, const char *path, char *at);

/* An ENUM's list: item's names (a SET) into offset2, f->ival into at. */
static enum mf_rc
read_enum_list(struct mf_fread *r, const struct mf_field *f,
    const struct mf_node *n, const char *path, char *at)
{
	char list[LISTMAX];
	int v = f->ival;
	enum mf_rc rc;

	if (n->child == NULL)
		return fail(r, path, n->key, n->line, n->column,
		    "is an empty list: give at least one of %s",
		    name_list(f->item, list, sizeof(list)));
	rc = read_set(r, f->item, n, path,
	    at != NULL ? slot_in(r->dst, f, f->offset2) : NULL);
	if (rc == MF_OK)
		store(at, &v, sizeof(v));
	return rc;
}

static enum mf_rc
read_enum(struct mf_fread *r, const struct mf_field *f, const struct mf_node *n,
    const char *path, char *at)
{
	char list[LISTMAX];
	int64_t count = f->min;
	int v = -1;

	if (n->type == MF_NODE_STR)
		v = lookup(f, n->text, 0);
	else if (n->type == MF_NODE_BOOL)
		v = lookup(f,
		    n->text[0] == 't' || n->text[0] == 'T' ? "true" : "false",
		    1);
	else if (n->type == MF_NODE_NUM && f->max > 0) {
		if (named(r,
		        mf_node_int(n, NULL, f->min, f->max, &count, r->err),
		        path, n->key) != MF_OK)
			return MF_EINVAL;
		v = f->ival;
	} else if (n->type == MF_NODE_SEQ && f->item != NULL)
		return read_enum_list(r, f, n, path, at);
	else
		return fail(r, path, n->key, n->line, n->column,
		    "must be one of %s%s, not %s",
		    name_list(f, list, sizeof(list)),
		    f->item != NULL ? " or a list of names" : "",
		    mf_node_type_name(n->type));
	if (v < 0 && n->type == MF_NODE_STR && lookup(f, n->text, 1) >= 0)
		return fail(r, path, n->key, n->line, n->column,
		    "'%.40s' is a string: write %s without quotes", n->text,
		    n->text);
	if (v < 0)
		return fail(r, path, n->key, n->line, n->column,
		    "'%.40s' is not one of %s", n->text,
		    name_list(f, list, sizeof(list)));
	store(at, &v, sizeof(v));
	if (at != NULL && f->max > 0)
		store(slot_in(r->dst, f, f->offset2), &count, sizeof(count));
	else if (at != NULL && f->item != NULL)
		/* A name, not a list: no list is left of a value read before
		 * (a framework's). */
		store(slot_in(r->dst, f, f->offset2), &(unsigned){ 0 },
		    sizeof(unsigned));
	return MF_OK;
}

static enum mf_rc
read_int(struct mf_fread *r, const struct mf_field *f, const struct mf_node *n,
    const char *path, char *at)
{
	char list[LISTMAX];
	size_t used = 0;
	int64_t v;
	int i;

	if (named(r, mf_node_int(n, NULL, f->min, f->max, &v, r->err), path,
	        n->key) != MF_OK)
		return MF_EINVAL;
	for (i = 0; f->ints != NULL && f->ints[i] != 0 && f->ints[i] != v; i++)
		used += (size_t)snprintf(list + used,
		    used < sizeof(list) ? sizeof(list) - used : 0, "%s%lld",
		    i ? ", " : "", (long long)f->ints[i]);
	if (f->ints != NULL && f->ints[i] == 0)
		return fail(r, path, n->key, n->line, n->column,
		    "%lld is not one of %s", (long long)v, list);
	return store(at, &v, sizeof(v));
}

static enum mf_rc
read_number(struct mf_fread *r, const struct mf_field *f,
    const struct mf_node *n, const char *path, char *at)
{
	double v;

	if (named(r, mf_node_double(n, NULL, -HUGE_VAL, HUGE_VAL, &v, r->err),
	        path, n->key) != MF_OK)
		return MF_EINVAL;
	if (v < f->lo || v > f->hi || (f->lo_open && v == f->lo) ||
	    (f->hi_open && v == f->hi))
		return fail(r, path, n->key, n->line, n->column,
		    "%.40s is out of range %c%.15g, %.15g%c", n->text,
		    f->lo_open ? '(' : '[', f->lo, f->hi,
		    f->hi_open ? ')' : ']');
	v += 0.0; /* -0 becomes 0 */
	return store(at, &v, sizeof(v));
}

static enum mf_rc
read_bytes(struct mf_fread *r, const struct mf_field *f,
    const struct mf_node *n, const char *path, char *at)
{
	enum mf_qty_format format;
	enum mf_qty_err qe;
	char why[sizeof(r->err->text)];
	int64_t v;
	int fi;

	if (n->type != MF_NODE_STR && n->type != MF_NODE_NUM)
		return wrong_type(r, n, path, n->key,
		    "a quantity such as 88Gi");
	qe = f->type == MF_FT_MEMORY ?
	    mf_qty_parse_memory(n->text, n->len, &v, &format) :
	    mf_qty_parse_bytes(n->text, n->len, &v, &format);
	if (qe != MF_QTY_OK)
		return fail(r, path, n->key, n->line, n->column, "%s",
		    mf_qty_explain(n->text, n->len, qe, why, sizeof(why)));
	if (at == NULL)
		return MF_OK;
	fi = (int)format;
	memcpy(at, &v, sizeof(v));
	memcpy(slot_in(r->dst, f, f->offset2), &fi, sizeof(fi));
	return MF_OK;
}

/* A SET: a list of names, each a bit of an unsigned mask. */
static enum mf_rc
read_set(struct mf_fread *r, const struct mf_field *f, const struct mf_node *n,
    const char *path, char *at)
{
	char list[LISTMAX], p[PATHMAX];
	const struct mf_node *e;
	unsigned mask = 0;
	size_t i = 0;
	int v;

	if (n->type != MF_NODE_SEQ)
		return fail(r, path, n->key, n->line, n->column,
		    "must be a list, not %s (%s)", mf_node_type_name(n->type),
		    name_list(f, list, sizeof(list)));
	for (e = n->child; e != NULL; e = e->next, i++) {
		v = e->type == MF_NODE_STR ? lookup(f, e->text, 0) : -1;
		if (v >= 0) {
			mask |= 1u << v;
			continue;
		}
		mf_path(p, sizeof(p), path, n->key);
		snprintf(p + strlen(p), sizeof(p) - strlen(p), "[%zu]", i);
		/* A list, a mapping or null has no text to quote: name it. */
		if (e->type == MF_NODE_SEQ || e->type == MF_NODE_MAP ||
		    e->type == MF_NODE_NULL)
			return fail(r, p, NULL, e->line, e->column,
			    "is %s, not %s (%s)", mf_node_type_name(e->type),
			    f->noun, name_list(f, list, sizeof(list)));
		return fail(r, p, NULL, e->line, e->column,
		    "'%.40s' is not %s (%s)", e->text ? e->text : "", f->noun,
		    name_list(f, list, sizeof(list)));
	}
	return store(at, &mask, sizeof(mask));
}

/* A member that is not an object: path is its parent's. */
static enum mf_rc
read_value(struct mf_fread *r, const struct mf_field *f,
    const struct mf_node *n, const char *path, char *at)
{
	int b;

	switch (f->type) {
	case MF_FT_STRING:
		return read_string(r, f, n, path, at);
	case MF_FT_CONST:
		return read_const(r, f, n, path);
	case MF_FT_ENUM:
		return read_enum(r, f, n, path, at);
	case MF_FT_BOOL:
		if (named(r, mf_node_bool(n, NULL, &b, r->err), path, n->key) !=
		    MF_OK)
			return MF_EINVAL;
		return store(at, &b, sizeof(b));
	case MF_FT_INT:
		return read_int(r, f, n, path, at);
	case MF_FT_NUMBER:
		return read_number(r, f, n, path, at);
	case MF_FT_BYTES:
	case MF_FT_MEMORY:
		return read_bytes(r, f, n, path, at);
	case MF_FT_SET:
		return read_set(r, f, n, path, at);
	default:
		break;
	}
	assert(0 && "not a value");
	return MF_EINVAL;
}

/* --- maps, lists, configs ------------------------------------------------ */

static size_t
elem_size(const struct mf_field *f)
{
	switch (f->type) {
	case MF_FT_NUMBER:
		return sizeof(double);
	case MF_FT_INT:
		return sizeof(int64_t);
	default:
		return sizeof(int);
	}
}

/* A MAP: each key checked (a name, or its form), each value read with
 * item, into the array at the row's slot when the keys are names. */
static enum mf_rc
read_map(struct mf_fread *r, const struct mf_field *f, const struct mf_node *n,
    const char *path)
{
	char p[PATHMAX], list[LISTMAX], *at = slot(r, f), *to;
	const struct mf_node *e;
	enum mf_rc rc;
	int v = -1;

	if (n->type != MF_NODE_MAP)
		return wrong_type(r, n, path, n->key, "a mapping");
	mf_path(p, sizeof(p), path, n->key);
	if (f->max > 0 && n->len > (size_t)f->max)
		return fail(r, p, NULL, n->line, n->column,
		    "%zu entries, more than %lld", n->len, (long long)f->max);
	for (e = n->child; e != NULL; e = e->next) {
		if (f->names != NULL || f->name_of != NULL) {
			v = lookup(f, e->key, 0);
			if (v < 0)
				return fail(r, p, e->key, e->key_line,
				    e->key_column, "is not %s (%s)", f->noun,
				    name_list(f, list, sizeof(list)));
		} else if (f->form != NULL &&
		    !mf_fields_form_ok(f->form, e->key, strlen(e->key))) {
			return fail(r, p, e->key, e->key_line, e->key_column,
			    "is not %s", f->form->text);
		}
		to = at != NULL && v >= 0 ?
		    at + (size_t)v * elem_size(f->item) :
		    NULL;
		rc = read_value(r, f->item, e, p, to);
		if (rc != MF_OK)
			return rc;
	}
	return (f->flags & MF_FF_HOOK) ? r->hook(r, f, n, p) : MF_OK;
}

static enum mf_rc
read_list(struct mf_fread *r, const struct mf_field *f, const struct mf_node *n,
    const char *path)
{
	char p[PATHMAX];

	if (n->type != MF_NODE_SEQ)
		return wrong_type(r, n, path, n->key, "a list");
	mf_path(p, sizeof(p), path, n->key);
	if (n->len == 0 && f->min > 0)
		return fail(r, p, NULL, n->line, n->column,
		    "at least one %s is required", f->noun);
	if (f->max > 0 && n->len > (size_t)f->max) {
		fail(r, p, NULL, n->line, n->column, "%zu %ss, more than %lld",
		    n->len, f->noun, (long long)f->max);
		return MF_ETOOBIG;
	}
	return r->hook(r, f, n, p);
}

static enum mf_rc
read_member(struct mf_fread *r, const struct mf_field *f,
    const struct mf_node *n, const char *path)
{
	char p[PATHMAX];
	enum mf_rc rc;
	int one = 1;

	switch (f->type) {
	case MF_FT_MAP:
		return read_map(r, f, n, path);
	case MF_FT_LIST:
		return read_list(r, f, n, path);
	case MF_FT_CONFIG:
		if (n->type != MF_NODE_MAP)
			return wrong_type(r, n, path, n->key, "a mapping");
		return r->hook(r, f, n, mf_path(p, sizeof(p), path, n->key));
	default:
		break;
	}
	rc = read_value(r, f, n, path, slot(r, f));
	if (rc == MF_OK && (f->flags & MF_FF_MARK) && slot(r, f) != NULL)
		memcpy(slot_in(r->dst, f, f->offset2), &one, sizeof(one));
	if (rc == MF_OK && (f->flags & MF_FF_HOOK))
		rc = r->hook(r, f, n, mf_path(p, sizeof(p), path, n->key));
	return rc;
}

/* --- conditions ---------------------------------------------------------- */

static int
value_in(void *const *dst, const struct mf_field *f)
{
	const char *at = slot_in(dst, f, f->offset);
	int v = 0;

	assert(at != NULL && "a condition names a stored field");
	if (at != NULL)
		memcpy(&v, at, sizeof(v));
	return v;
}

static int
holds(void *const *dst, const struct mf_fwhen *w)
{
	int v = value_in(dst, w->field);

	return v >= 0 && v < 32 && (w->values >> v & 1u);
}

/*
 * f's first condition that dst's values do not meet: one of f's own, or
 * its value's (MF_FF_VALUE_WHEN; *name is then the value's name, else
 * NULL); NULL when f applies.
 */
static const struct mf_fwhen *
unmet(const struct mf_field *f, void *const *dst, const char **name)
{
	int v;

	*name = NULL;
	for (int k = 0; k < MF_FWHEN_MAX && f->when[k].field != NULL; k++)
		if (!holds(dst, &f->when[k]))
			return &f->when[k];
	if (!(f->flags & MF_FF_VALUE_WHEN))
		return NULL;
	v = value_in(dst, f);
	for (const struct mf_fname *e = f->names; e->name != NULL; e++)
		if (e->value == v && e->when.field != NULL &&
		    !holds(dst, &e->when)) {
			*name = e->name;
			return &e->when;
		}
	return NULL;
}

int
mf_fields_applies(const struct mf_field *f, void *const *dst)
{
	const char *name;

	return unmet(f, dst, &name) == NULL;
}

/* What the condition's row c holds, v, in words into buf: its name, or
 * for a default that has no name the row's text for it (weightsDtype's),
 * and " (the default)" after a default. */
static void
held(const struct mf_field *c, int v, char *buf, size_t size)
{
	const char *name = mf_fields_name(c, v);
	int by_default =
	    v == c->idef && ((c->flags & MF_FF_DEFAULT) || name == NULL);

	if (name == NULL) {
		assert(by_default && c->text != NULL &&
		    "a value without a name is its row's default, in its text");
		name = c->text;
	}
	snprintf(buf, size, "%s%s", name, by_default ? " (the default)" : "");
}

/* "has no effect here: it applies only with kind: inference, and this job
 * has kind: training (the default)"; value quotes the value at fault. */
static enum mf_rc
no_effect(struct mf_fread *r, const struct mf_node *n, const char *path,
    const struct mf_fwhen *w, const char *value)
{
	const struct mf_field *c = w->field;
	char need[LISTMAX], have[LISTMAX];
	size_t used = 0;
	int v = value_in(r->dst, c), k = 0;

	need[0] = '\0';
	for (int i = 0; i < 32 && used < sizeof(need); i++)
		if ((w->values >> i & 1u) && mf_fields_name(c, i) != NULL)
			used += (size_t)snprintf(need + used,
			    sizeof(need) - used, "%s%s", k++ ? " or " : "",
			    mf_fields_name(c, i));
	held(c, v, have, sizeof(have));
	if (value != NULL)
		return fail(r, path, n->key, n->line, n->column,
		    "'%s' has no effect here: it applies only with %s: %s, and this job has %s: %s",
		    value, c->key, need, c->key, have);
	return fail(r, path, n->key, n->key_line, n->key_column,
	    "has no effect here: it applies only with %s: %s, and this job has %s: %s",
	    c->key, need, c->key, have);
}

static enum mf_rc
check_when(struct mf_fread *r, const struct mf_field *f,
    const struct mf_node *n, const char *path)
{
	const char *name;
	const struct mf_fwhen *w = unmet(f, r->dst, &name);

	return w == NULL ? MF_OK : no_effect(r, n, path, w, name);
}

/* --- objects ------------------------------------------------------------- */

const struct mf_field *
mf_fields_find(const struct mf_field *obj, const char *key)
{
	for (size_t i = 0; i < obj->nsub; i++)
		if (mf_streq(obj->sub[i].key, key))
			return &obj->sub[i];
	return NULL;
}

const struct mf_field *
mf_fields_at(const struct mf_field *obj, const char *path)
{
	char key[64];
	size_t n;

	while (obj != NULL && *path != '\0') {
		n = strcspn(path, ".");
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		if (obj->type == MF_FT_LIST)
			obj = obj->item;
		obj = obj->type == MF_FT_OBJECT || obj->type == MF_FT_MAP ?
		    mf_fields_find(obj, key) :
		    NULL;
		path += n + (path[n] == '.');
	}
	return obj;
}

/* The members read before all others, in the rows' order: a document's
 * kind, so that a catalogue sent for a Job is told so, not that its
 * headroom is unknown; the workload's kind and method, then its framework,
 * whose hook sets the defaults the other members then replace. */
static enum mf_rc
read_first(struct mf_fread *r, const struct mf_field *obj,
    const struct mf_node *n, const char *path)
{
	const struct mf_field *f;
	const struct mf_node *m;
	enum mf_rc rc;

	for (size_t i = 0; i < obj->nsub; i++) {
		f = &obj->sub[i];
		if (!(f->flags & MF_FF_FIRST))
			continue;
		m = mf_node_get(n, f->key);
		if (m == NULL && !(f->flags & MF_FF_REQUIRED))
			continue;
		if (m == NULL)
			return fail(r, path, f->key, n->line, n->column,
			    "is required ('%s')", f->text);
		rc = read_member(r, f, m, path);
		if (rc != MF_OK)
			return rc;
	}
	return MF_OK;
}

/* The first member of the OBJECT f that must be given, or NULL. */
static const struct mf_field *
first_required(const struct mf_field *f)
{
	for (size_t k = 0; f->type == MF_FT_OBJECT && k < f->nsub; k++)
		if (f->sub[k].flags & MF_FF_REQUIRED)
			return &f->sub[k];
	return NULL;
}

/* The members required, each named by the deepest field a user must
 * write ("metadata.name"). */
static enum mf_rc
check_members(struct mf_fread *r, const struct mf_field *obj,
    const struct mf_node *n, const char *path, uint64_t seen)
{
	const struct mf_field *f, *in;
	char p[PATHMAX], q[PATHMAX];

	for (size_t i = 0; (obj->flags & MF_FF_REQUIRES) && i < obj->nsub;
	     i++) {
		f = &obj->sub[i];
		if (!(f->flags & MF_FF_REQUIRED) || (seen >> i & 1u))
			continue;
		mf_path(p, sizeof(p), path, f->key);
		/* An object missing: the field inside it a user must write. */
		for (in = first_required(f); in != NULL;
		     in = first_required(f)) {
			mf_copy(q, sizeof(q), p);
			mf_path(p, sizeof(p), q, in->key);
			f = in;
		}
		return fail(r, p, NULL, n->line, n->column,
		    f->type == MF_FT_CONST ? "is required ('%s')" :
		                             "is required%s",
		    f->type == MF_FT_CONST ? f->text : "");
	}
	return MF_OK;
}

/* The members of obj a one-of or non-empty rule names: "name, config,
 * configUrl". */
static char *
member_list(const struct mf_field *obj, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < obj->nsub && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%s",
		    i ? ", " : "", obj->sub[i].key);
	return buf;
}

static enum mf_rc
read_object(struct mf_fread *r, const struct mf_field *obj,
    const struct mf_node *n, const char *path)
{
	const struct mf_field *rows[MF_FIELDS_MAX_MEMBERS], *f;
	const struct mf_node *c;
	char p[PATHMAX], list[LISTMAX];
	uint64_t seen = 0;
	enum mf_rc rc = MF_OK;
	size_t i;

	if (n->type != MF_NODE_MAP)
		return fail(r, path, NULL, n->line, n->column,
		    "must be a mapping, not %s", mf_node_type_name(n->type));
	rc = read_first(r, obj, n, path);
	for (c = n->child, i = 0; rc == MF_OK && c != NULL; c = c->next, i++) {
		f = mf_fields_find(obj, c->key);
		if (f == NULL)
			return fail(r, path, c->key, c->key_line, c->key_column,
			    "unknown field");
		/* No key twice (doc.c), so a known member has a row. */
		assert(i < MF_FIELDS_MAX_MEMBERS && obj->nsub <= 64);
		rows[i] = f;
		seen |= UINT64_C(1) << (f - obj->sub);
	}
	if (rc != MF_OK)
		return rc;
	if ((obj->flags & MF_FF_ONE_OF) && n->len != 1)
		return fail(r, path, NULL, n->line, n->column,
		    "give exactly one of %s",
		    member_list(obj, list, sizeof(list)));
	if ((obj->flags & MF_FF_NONEMPTY) && n->len == 0)
		return fail(r, path, NULL, n->line, n->column,
		    "is empty: give at least one of %s",
		    member_list(obj, list, sizeof(list)));
	for (c = n->child, i = 0; rc == MF_OK && c != NULL; c = c->next, i++)
		if (rows[i]->type != MF_FT_OBJECT &&
		    !(rows[i]->flags & MF_FF_FIRST))
			rc = read_member(r, rows[i], c, path);
	for (c = n->child, i = 0; rc == MF_OK && c != NULL; c = c->next, i++)
		if (rows[i]->type != MF_FT_OBJECT)
			rc = check_when(r, rows[i], c, path);
	for (c = n->child, i = 0; rc == MF_OK && c != NULL; c = c->next, i++) {
		if (rows[i]->type != MF_FT_OBJECT)
			continue;
		rc = check_when(r, rows[i], c, path);
		if (rc == MF_OK)
			rc = read_object(r, rows[i], c,
			    mf_path(p, sizeof(p), path, c->key));
	}
	return rc == MF_OK ? check_members(r, obj, n, path, seen) : rc;
}

enum mf_rc
mf_fields_read(struct mf_fread *r, const struct mf_field *obj,
    const struct mf_node *n, const char *path)
{
	/* A document with nothing in it: no body, only comments, "---". */
	if ((obj->flags & MF_FF_FIRST) && n->type == MF_NODE_NULL &&
	    (n->text == NULL || n->text[0] == '\0'))
		return mf_error_set(r->err, MF_EINVAL, NULL, n->line, n->column,
		    "the document is empty: a %s (apiVersion memfloor.dev/v1, kind %s) is a mapping",
		    obj->title, obj->key);
	/* A document's row: its kind is FIRST (MF_FF_FIRST on an OBJECT). */
	if (n->type != MF_NODE_MAP && obj->type == MF_FT_OBJECT &&
	    (obj->flags & MF_FF_FIRST))
		return fail(r, path, NULL, n->line, n->column,
		    "a %s must be a mapping, not %s", obj->title,
		    mf_node_type_name(n->type));
	return read_object(r, obj, n, path);
}

int
mf_fields_form_ok(const struct mf_form *f, const char *s, size_t len)
{
	return f->ok(s, len);
}

/* --- defaults ------------------------------------------------------------ */

static void
map_defaults(const struct mf_field *f, void *const *dst)
{
	char *at = slot_in(dst, f, f->offset);
	int v;

	if (at == NULL || f->item->type != MF_FT_NUMBER)
		return;
	for (int i = 0; mf_fields_name(f, i) != NULL; i++)
		memcpy(at + (size_t)i * sizeof(double), &f->item->ddef,
		    sizeof(double));
	for (size_t i = 0; i < f->nsub; i++) {
		v = lookup(f, f->sub[i].key, 0);
		assert(v >= 0 && "a key of its own is a name");
		if (v >= 0)
			memcpy(at + (size_t)v * sizeof(double), &f->sub[i].ddef,
			    sizeof(double));
	}
}

void
mf_fields_default(const struct mf_field *f, void *const *dst)
{
	char *at = slot_in(dst, f, f->offset);
	int iv = (int)f->idef;

	if (at == NULL)
		return;
	switch (f->type) {
	case MF_FT_ENUM:
		memcpy(at, &iv, sizeof(iv));
		if (f->max > 0)
			memcpy(slot_in(dst, f, f->offset2), &f->min,
			    sizeof(f->min));
		break;
	case MF_FT_BOOL:
		memcpy(at, &iv, sizeof(iv));
		break;
	case MF_FT_INT:
		memcpy(at, &f->idef, sizeof(f->idef));
		break;
	case MF_FT_NUMBER:
		memcpy(at, &f->ddef, sizeof(f->ddef));
		break;
	case MF_FT_BYTES:
	case MF_FT_MEMORY:
		memcpy(at, &f->idef, sizeof(f->idef));
		iv = MF_QTY_BINARY;
		memcpy(slot_in(dst, f, f->offset2), &iv, sizeof(iv));
		break;
	default:
		break;
	}
}

void
mf_fields_defaults(const struct mf_field *obj, void *const *dst)
{
	const struct mf_field *f;

	for (size_t i = 0; i < obj->nsub; i++) {
		f = &obj->sub[i];
		if (f->type == MF_FT_OBJECT)
			mf_fields_defaults(f, dst);
		else if (f->type == MF_FT_MAP)
			map_defaults(f, dst);
		mf_fields_default(f, dst);
	}
}
