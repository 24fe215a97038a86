/*
 * doc.h: a parsed YAML or JSON document as one tree of nodes with positions.
 *
 * Manifests, the catalogue and model configs arrive as YAML or JSON; both
 * parse into this tree so one walker reads either and reports the line and
 * column of a bad YAML value.  YAML is read as libyaml's events, from
 * yfast.h's reader when the document is in the block style it reads and
 * from libyaml otherwise: aliases are refused, nesting is capped,
 * duplicate keys are refused.
 * Plain YAML scalars resolve by the YAML 1.2 core schema (null, true/false,
 * numbers); quoted scalars are always strings.
 */
#ifndef MF_DOC_H
#define MF_DOC_H

#include <stddef.h>
#include <stdint.h>

#include "../base/err.h"

enum mf_node_type {
	MF_NODE_NULL,
	MF_NODE_BOOL, /* text is "true" or "false" */
	MF_NODE_NUM,  /* text is the number as written */
	MF_NODE_STR,
	MF_NODE_SEQ,
	MF_NODE_MAP
};

struct mf_node {
	enum mf_node_type type;
	int line; /* 1-based position of the value; 0 for JSON */
	int column;
	const char *key; /* member name when the parent is a map, else NULL */
	int key_line;    /* where that name is; 0 for JSON */
	int key_column;
	const char *text;      /* scalars: NUL-terminated text; else NULL */
	size_t len;            /* scalars: text length; SEQ/MAP: child count */
	struct mf_node *child; /* SEQ/MAP: first child, in document order */
	struct mf_node *next;  /* next sibling */
};

enum mf_doc_format {
	MF_DOC_AUTO, /* JSON when the first non-blank byte is '{' or '[' */
	MF_DOC_YAML,
	MF_DOC_JSON,
	MF_DOC_JSON_WIDE /* JSON whose objects may hold any number of keys
	                    (Kubernetes objects), up to MF_DOC_MAX_NODES */
};

#define MF_DOC_MAX_DEPTH 64
#define MF_DOC_MAX_NODES 200000
#define MF_DOC_MAX_KEYS 4096 /* per mapping */

struct mf_doc;

/*
 * Parse buf[0..len) (need not be NUL-terminated) as one document.  On
 * success *out owns every node and string; free it with mf_doc_free.  On
 * error *out is untouched and err says what and where: MF_EINVAL for bad
 * syntax, aliases, duplicate keys or a second document; MF_ETOOBIG past
 * MF_DOC_MAX_DEPTH or MF_DOC_MAX_NODES; MF_ENOMEM.
 */
enum mf_rc mf_doc_parse(const char *buf, size_t len, enum mf_doc_format fmt,
    struct mf_doc **out, struct mf_error *err);

/*
 * Which members of a JSON object mf_doc_parse_kept builds: those a list
 * names (it ends with a NULL key), each with the list for its own value
 * (sub NULL: all of it).  A list's elements are kept as the list is; a
 * scalar is built whatever the list.
 */
struct mf_doc_keep {
	const char *key;
	size_t len; /* strlen(key) */
	const struct mf_doc_keep *sub;
};

/* An entry of a keep list, key a string literal; the list's last. */
#define MF_DOC_KEEP(key, sub) \
	{ \
		(key), sizeof(key) - 1, (sub) \
	}
#define MF_DOC_KEEP_END \
	{ \
		NULL, 0, NULL \
	}

/*
 * mf_doc_parse, building only what keep names (NULL: everything, as
 * mf_doc_parse).  A value left out is read and checked as strictly, with
 * the same errors, positions and limits, and is absent from the tree: a
 * map's len counts only the members kept.  A reader that looks only at
 * what keep names sees what mf_doc_parse would have given it.  keep is
 * for JSON only (fmt MF_DOC_JSON or MF_DOC_JSON_WIDE, or MF_DOC_AUTO that
 * finds JSON); for YAML it must be NULL.
 */
enum mf_rc
mf_doc_parse_kept(const char *buf, size_t len, enum mf_doc_format fmt,
    const struct mf_doc_keep *keep, struct mf_doc **out, struct mf_error *err);
const struct mf_node *mf_doc_root(const struct mf_doc *doc);
void mf_doc_free(struct mf_doc *doc);

/* Member key of map, or NULL (also when map is NULL or not a map). */
const struct mf_node *mf_node_get(const struct mf_node *map, const char *key);

/* "mapping", "string", ... for error messages. */
const char *mf_node_type_name(enum mf_node_type type);

/*
 * Typed readers.  path names the node in errors ("spec.workload.microBatch").
 * On a wrong type or a value out of [min, max] they fill err with the
 * node's position and return MF_EINVAL, leaving *out untouched.
 */
enum mf_rc mf_node_int(const struct mf_node *n, const char *path, int64_t min,
    int64_t max, int64_t *out, struct mf_error *err);
enum mf_rc mf_node_double(const struct mf_node *n, const char *path, double min,
    double max, double *out, struct mf_error *err);
enum mf_rc mf_node_bool(const struct mf_node *n, const char *path, int *out,
    struct mf_error *err);
/* Strings only (not numbers); *out borrows the node's text. */
enum mf_rc mf_node_str(const struct mf_node *n, const char *path,
    const char **out, struct mf_error *err);
/* MF_OK when n is a map whose keys are all in the NULL-terminated known. */
enum mf_rc mf_node_map(const struct mf_node *n, const char *path,
    const char *const *known, struct mf_error *err);

#endif
