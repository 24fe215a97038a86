/*
 * doc_tree.h: the document tree (doc_tree.c) as its readers build it
 * (doc.c, doc_yaml.c, doc_json.c, doc_skim.c), which nothing else uses.
 * The public API is doc.h.
 *
 * Nodes and their strings live in an arena owned by the document, so a
 * parse is a handful of large allocations and one free.
 */
#ifndef MF_DOC_TREE_H
#define MF_DOC_TREE_H

#include <stddef.h>
#include <string.h>

#include "doc.h"

/* One of the arena's blocks: data[0..used) taken, the newest first. */
struct mf_doc_block {
	struct mf_doc_block *next;
	size_t used, size;
	max_align_t data[];
};

struct mf_doc {
	struct mf_doc_block *blocks;
	struct mf_node *root;
	size_t nodes; /* built or counted, at most MF_DOC_MAX_NODES */
};

/* mf_doc_alloc's n bytes in a new block. */
void *mf_doc_alloc_block(struct mf_doc *doc, size_t n);

/* n bytes aligned for any type, owned by doc; NULL when out of memory.
 * In line: every node and string of a document takes its room here. */
static inline void *
mf_doc_alloc(struct mf_doc *doc, size_t n)
{
	struct mf_doc_block *b = doc->blocks;

	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) *
	    sizeof(max_align_t);
	if (b == NULL || b->size - b->used < n)
		return mf_doc_alloc_block(doc, n);
	b->used += n;
	return (char *)b->data + b->used - n;
}

/* Back to an empty document: every block freed, doc zeroed. */
void mf_doc_clear(struct mf_doc *doc);

/* A zeroed node of type at line:column, counted; NULL past
 * MF_DOC_MAX_NODES (doc->nodes says so) or when out of memory.  In line:
 * the JSON reader makes one for every value. */
static inline struct mf_node *
mf_doc_node(struct mf_doc *doc, enum mf_node_type type, int line, int column)
{
	struct mf_node *n;

	if (doc->nodes >= MF_DOC_MAX_NODES)
		return NULL;
	n = mf_doc_alloc(doc, sizeof(*n));
	if (n == NULL)
		return NULL;
	memset(n, 0, sizeof(*n));
	n->type = type;
	n->line = line;
	n->column = column;
	doc->nodes++;
	return n;
}

/* s[0..len) and a NUL, in doc's arena; NULL when out of memory. */
static inline char *
mf_doc_strndup(struct mf_doc *doc, const char *s, size_t len)
{
	char *p = mf_doc_alloc(doc, len + 1);

	if (p != NULL) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

/* Append child to parent's list; tail tracks the last child. */
static inline void
mf_doc_append(struct mf_node *parent, struct mf_node **tail,
    struct mf_node *child)
{
	if (*tail == NULL)
		parent->child = child;
	else
		(*tail)->next = child;
	*tail = child;
	parent->len++;
}

/*
 * Where a reader's error names a value: the path in buf (size bytes,
 * NUL-terminated; "" at the top) one step deeper, by the member name s of
 * len bytes (".s", or "s" first) or by the index i ("[i]"), as the fields'
 * errors name it ("spec.containers[0].name").  Cut to fit.
 */
void mf_doc_path_key(char *buf, size_t size, const char *s, size_t len);
void mf_doc_path_index(char *buf, size_t size, size_t i);

/* A duplicate key's error: the mapping at path already has the member
 * name s of len bytes; line and column are the second's.  Returns
 * MF_EINVAL. */
enum mf_rc mf_doc_duplicate(struct mf_error *err, char *path, size_t size,
    const char *s, size_t len, int line, int column);

/*
 * The two readers, each into the empty doc: doc->root set on success; on
 * error err set, with the return code, and doc holding what was built
 * (the caller frees it).  max_keys caps an object's members; keep as in
 * mf_doc_parse_kept (NULL: everything).
 */
enum mf_rc mf_doc_yaml(struct mf_doc *doc, const char *buf, size_t len,
    struct mf_error *err);
enum mf_rc mf_doc_json(struct mf_doc *doc, const char *buf, size_t len,
    size_t max_keys, const struct mf_doc_keep *keep, struct mf_error *err);

#endif
