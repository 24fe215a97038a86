/*
 * doc_tree.c: the document tree: its arena, its nodes, finding a member.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc_tree.h"
#include "../base/str.h"

#define ARENA_BLOCK 8192

void *
mf_doc_alloc_block(struct mf_doc *doc, size_t n)
{
	size_t size = n > ARENA_BLOCK ? n : ARENA_BLOCK;
	struct mf_doc_block *b = malloc(sizeof(*b) + size);

	if (b == NULL)
		return NULL;
	b->size = size;
	b->used = n;
	b->next = doc->blocks;
	doc->blocks = b;
	return b->data;
}

void
mf_doc_clear(struct mf_doc *doc)
{
	struct mf_doc_block *b, *next;

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
	mf_doc_clear(doc);
	free(doc);
}

const struct mf_node *
mf_doc_root(const struct mf_doc *doc)
{
	return doc->root;
}

const struct mf_node *
mf_node_get(const struct mf_node *map, const char *key)
{
	const struct mf_node *c;

	if (map == NULL || map->type != MF_NODE_MAP)
		return NULL;
	for (c = map->child; c != NULL; c = c->next)
		if (mf_streq(c->key, key))
			return c;
	return NULL;
}

void
mf_doc_path_key(char *buf, size_t size, const char *s, size_t len)
{
	size_t at = strlen(buf);

	snprintf(buf + at, size - at, "%s%.*s", at > 0 ? "." : "",
	    len > (size_t)INT_MAX ? INT_MAX : (int)len, s);
}

void
mf_doc_path_index(char *buf, size_t size, size_t i)
{
	size_t at = strlen(buf);

	snprintf(buf + at, size - at, "[%zu]", i);
}

enum mf_rc
mf_doc_duplicate(struct mf_error *err, char *path, size_t size, const char *s,
    size_t len, int line, int column)
{
	mf_doc_path_key(path, size, s, len);
	return mf_error_set(err, MF_EINVAL, path, line, column,
	    "duplicate key");
}
