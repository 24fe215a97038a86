/*
 * doc_tree.c: the document tree: its arena, its nodes, finding a member.
 */
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
