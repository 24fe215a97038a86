/*
 * fields.h: the one table of the fields a user writes, the Job manifest
 * (design 3, 14, 15, 19) and the GPU catalogue (design 4).
 *
 * A row says a field's name, type, bounds or allowed values, unit,
 * default, the workloads it applies to and its one-line doc; each
 * document's rows live with the module that owns its structs (the Job's
 * in manifest/job_fields.c, the catalogue's in catalog/catalog_fields.c).
 * The readers of the manifest and the catalogue (fread.c), their
 * unknown-field and no-effect errors, the defaults, GET /v1/schema and the
 * docs' field lists (schema.c) all read it, as Redis's dispatcher, ACLs and
 * help read its command table: a field added is a row added.
 */
#ifndef MF_FIELDS_H
#define MF_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "../base/buf.h"
#include "../doc/doc.h"
#include "../base/err.h"
#include "../base/jw.h"

enum mf_ftype {
	MF_FT_OBJECT, /* a mapping of the rows in sub */
	MF_FT_LIST,   /* a list of item's objects, read by the hook */
	MF_FT_MAP,    /* keys of keyform or names to values of item; sub
	                 holds the keys with defaults of their own */
	MF_FT_SET,    /* a list of names, stored as a bit mask (unsigned) */
	MF_FT_STRING, /* const char * (char *, copied, with MF_FF_OWN) */
	MF_FT_CONST,  /* a string that must be text */
	MF_FT_ENUM,   /* one of names, stored as int; "false" and "true"
	                 among them are booleans; with max > 0 also a whole
	                 number in [min, max] (int64_t at offset2), which
	                 stores ival; with item (a SET) also a list of at
	                 least one of item's names (its mask, unsigned at
	                 offset2), which stores ival */
	MF_FT_BOOL,   /* stored as int */
	MF_FT_INT,    /* int64_t in [min, max], one of ints when given */
	MF_FT_NUMBER, /* double between lo and hi */
	MF_FT_BYTES,  /* a quantity of bytes (design 2): int64_t, and its
	                 enum mf_qty_format as int at offset2 */
	MF_FT_MEMORY, /* a GPU's memory: BYTES of at least MF_QTY_MEMORY_MIN */
	MF_FT_CONFIG  /* a mapping the hook reads whole (a config.json) */
};

/* The struct a row's value lands in: mf_fread.dst[base]. */
enum mf_fbase {
	MF_FB_NONE, /* checked, not kept */
	MF_FB_JOB,  /* struct mf_job */
	MF_FB_WORK, /* struct mf_workload */
	MF_FB_CAT,  /* struct mf_catalog */
	MF_FB_GPU,  /* struct mf_gpu */
	MF_FB_COUNT
};

enum {
	MF_FF_REQUIRED = 1 << 0,  /* the member must be given */
	MF_FF_REQUIRES = 1 << 1,  /* OBJECT: a member is REQUIRED */
	MF_FF_ONE_OF = 1 << 2,    /* OBJECT: exactly one member */
	MF_FF_NONEMPTY = 1 << 3,  /* OBJECT: at least one member */
	MF_FF_OWN = 1 << 4,       /* STRING: copied; the struct frees it */
	MF_FF_HOOK = 1 << 5,      /* read by mf_fread.hook */
	MF_FF_FIRST = 1 << 6,     /* read before the object's other
	                             members, in the rows' order (a
	                             document's kind; the workload's kind,
	                             method and framework); on an OBJECT: a
	                             document, whose kind is FIRST */
	MF_FF_MARK = 1 << 7,      /* offset2 is an int set to 1 when given */
	MF_FF_DEFAULT = 1 << 8,   /* idef or ddef is a default the docs
	                             state; else it means "not given" */
	MF_FF_VALUE_WHEN = 1 << 9 /* ENUM: a name has a when of its own */
};

struct mf_field;

/* A condition: the row applies when field (an ENUM row of the same or an
 * enclosing object) holds a value v with bit v of values set. */
struct mf_fwhen {
	const struct mf_field *field;
	unsigned values;
};

#define MF_FWHEN_MAX 2

/* A name of an ENUM or SET row and the value it stores. */
struct mf_fname {
	const char *name;
	int value;
	const char *doc;      /* one line, or NULL */
	struct mf_fwhen when; /* the value applies only then (field NULL:
	                         always) */
};

/* A string's form: the test, and the same as an ECMA-262 regular
 * expression for the schema (tests/unit/test_fields.c holds them equal). */
struct mf_form {
	int (*ok)(const char *s, size_t len);
	const char *pattern;
	const char *text; /* "a GPU name (1 to 63 characters of ...)" */
};

struct mf_field {
	const char *key;
	enum mf_ftype type;
	enum mf_fbase base;
	unsigned flags;
	size_t offset;  /* in dst[base] */
	size_t offset2; /* BYTES: the format; ENUM: the count; MARK */
	const struct mf_field *sub; /* OBJECT: members; MAP: keys of their
	                               own; nsub of them */
	size_t nsub;
	const struct mf_field *item;       /* LIST, MAP: each value's row;
	                                      ENUM: a list's (a SET) */
	const struct mf_fname *names;      /* ENUM, SET, MAP keys: ends with
	                                      a NULL name */
	const char *(*name_of)(int value); /* or names from their own table:
	                                      value 0, 1, ... until NULL */
	const char *noun;           /* what a name is ("a fix"), for errors */
	const struct mf_form *form; /* STRING, MAP keys */
	const int64_t *ints;        /* INT: the values allowed, 0-ended */
	int64_t min, max; /* INT, ENUM counts; STRING length; LIST, MAP:
	                     entries (max 0: unbounded) */
	double lo, hi;    /* NUMBER, with the ends open or closed */
	int lo_open, hi_open;
	int64_t idef;     /* INT, BOOL, ENUM, BYTES: the value before reading */
	double ddef;      /* NUMBER */
	int ival;         /* ENUM: what a whole number stores */
	const char *text; /* CONST: the value; else a default that is no
	                     value ("that of precision"), for the docs */
	struct mf_fwhen when[MF_FWHEN_MAX];
	const char *unit;    /* "tokens", "bytes", "USD per hour", or NULL */
	const char *title;   /* a label, a few words */
	const char *doc;     /* one line */
	const char *example; /* a value to start from where there is no
	                        default (sequenceLength 4096), or NULL */
};

/* The most members one object of the table has (test_fields.c). */
#define MF_FIELDS_MAX_MEMBERS 40

/* The documents the table reads (mf_fields_job in manifest.h,
 * mf_fields_catalog in catalog.h): each one's kind, its row's key, and its
 * title.  The reader of one names the other when given its kind. */
#define MF_FIELDS_JOB_KIND "Job"
#define MF_FIELDS_JOB_TITLE "memfloor Job manifest"
#define MF_FIELDS_CATALOG_KIND "GpuCatalog"
#define MF_FIELDS_CATALOG_TITLE "memfloor GPU catalogue"

/* The row of obj's member key, or NULL. */
const struct mf_field *
mf_fields_find(const struct mf_field *obj, const char *key);
/* The row at a dotted path below obj ("spec.workload.lora.rank"), or
 * NULL. */
const struct mf_field *
mf_fields_at(const struct mf_field *obj, const char *path);
/* The name of f's value v, or NULL. */
const char *mf_fields_name(const struct mf_field *f, int v);

/* Put the value each row holds before reading (idef, ddef) into the
 * structs of dst below obj; a NULL dst[base] is skipped. */
void mf_fields_defaults(const struct mf_field *obj, void *const *dst);
/* The same for the one scalar row f. */
void mf_fields_default(const struct mf_field *f, void *const *dst);
/* Whether f applies to the values dst holds: its conditions, and its
 * value's own (MF_FF_VALUE_WHEN), hold. */
int mf_fields_applies(const struct mf_field *f, void *const *dst);

struct mf_fread;
/*
 * Reads a row flagged MF_FF_HOOK, n at path: a LIST or CONFIG whole, a MAP
 * once its keys and values are checked, a scalar once it is checked and
 * stored.  Returns MF_OK or fills r->err.
 */
typedef enum mf_rc (*mf_fhook)(struct mf_fread *r, const struct mf_field *f,
    const struct mf_node *n, const char *path);

struct mf_fread {
	void *dst[MF_FB_COUNT];
	mf_fhook hook;
	void *ctx; /* the hook's */
	struct mf_error *err;
};

/*
 * Read the mapping n as the OBJECT row obj, at path (for errors; "" at the
 * top).  A member no row names is "unknown field"; a member whose when
 * does not hold is "has no effect here"; a value of the wrong type or out
 * of bounds names the field, its line and column.  An object's scalars are
 * read before its objects, so that a condition sees every value it
 * depends on.  Values land in r->dst; on error what was read stays there
 * (the caller discards it).
 */
enum mf_rc mf_fields_read(struct mf_fread *r, const struct mf_field *obj,
    const struct mf_node *n, const char *path);

/* Whether s[0..len) has form f. */
int mf_fields_form_ok(const struct mf_form *f, const char *s, size_t len);

/*
 * The JSON Schema (draft 2020-12) of the document obj (mf_fields_job or
 * mf_fields_catalog), written with w (JSON or YAML) as one value; w's
 * buffer says whether it all fitted.  Each property carries the row's
 * title, doc, unit ("x-memfloor-unit"), default (or "x-memfloor-default",
 * a default that is no value: "that of precision") and examples and, where it
 * applies only to some workloads, "x-memfloor-when" ({"spec.workload.kind":
 * ["inference"]}, and "x-memfloor-value-when" for values with a condition
 * of their own) beside the if/then rules that refuse it elsewhere.
 */
void mf_fields_schema(const struct mf_field *obj, struct mf_jw *w);
/* The field list of the document obj in Markdown (docs/manifest.md,
 * docs/catalog.md), appended to b. */
enum mf_rc mf_fields_markdown(const struct mf_field *obj, struct mf_buf *b);

#endif
