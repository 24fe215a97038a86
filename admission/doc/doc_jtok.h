/*
 * doc_jtok.h: the JSON reader's state and tokens (doc_jtok.c), which the
 * reader (doc_json.c) and its skimmer of what a keep list leaves out
 * (doc_skim.c) share, and nothing else uses.
 *
 * Member names of every open object, kept or not, are on one stack (keys)
 * for the duplicate check; a name without escapes stays in the input there.
 */
#ifndef MF_DOC_JTOK_H
#define MF_DOC_JTOK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "doc_scan.h"
#include "doc_tree.h"

/* Objects with more names are checked for duplicates sorted. */
#define MF_JSON_LINEAR_KEYS 16
/* Names kept on mf_doc_json's stack, before the heap. */
#define MF_JSON_FIRST_KEYS 64

struct mf_jkey {
	const char *s; /* decoded; not NUL-terminated when in the input */
	size_t len;
};

/* An open object: its names are keys[base] on; lens has a bit for each
 * length (mod 64) of a name among its first MF_JSON_LINEAR_KEYS, and kept,
 * when it is built with a keep list, one for each length of a name the
 * list names (a skimmed object has none). */
struct mf_jobj {
	size_t base;
	uint64_t lens, kept;
};

/* A name's bit in those sets. */
static inline uint64_t
mf_json_length_bit(size_t len)
{
	return (uint64_t)1 << (len & 63);
}

struct mf_jparse {
	struct mf_doc *doc;
	const char *start, *p, *end;
	struct mf_error *err;
	enum mf_rc rc;        /* of the first failure */
	size_t max_keys;      /* per object */
	struct mf_jkey *keys; /* names of the open objects, outermost first */
	size_t nkeys, cap;
	/* mf_json_skim tries no value that starts before */
	const char *skim_from;
};

static inline int
mf_json_same_key(const struct mf_jkey *a, const char *s, size_t len)
{
	return a->len == len && memcmp(a->s, s, len) == 0;
}

/*
 * Whether s[0..len) is one of the object's first n names, and its length
 * noted: a name whose length (mod 64) no earlier name had is compared with
 * none.
 */
static inline int
mf_json_has_key(const struct mf_jparse *j, struct mf_jobj *o, size_t n,
    const char *s, size_t len)
{
	uint64_t bit = mf_json_length_bit(len);

	if ((o->lens & bit) == 0) {
		o->lens |= bit;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (mf_json_same_key(&j->keys[o->base + i], s, len))
			return 1;
	return 0;
}

/* Room for twice as many names, on the heap once mf_doc_json's
 * MF_JSON_FIRST_KEYS are full; -1 when there is no memory. */
int mf_json_grow_keys(struct mf_jparse *j);

/* s[0..len) onto the stack of names; -1 when there is no memory. */
static inline int
mf_json_push_key(struct mf_jparse *j, const char *s, size_t len)
{
	if (j->nkeys == j->cap && mf_json_grow_keys(j) != 0)
		return -1;
	j->keys[j->nkeys].s = s;
	j->keys[j->nkeys++].len = len;
	return 0;
}

/* A name from keys[base] on that another there repeats, or NULL: sorted,
 * O(n log n), for objects too large to check name by name.  Their order
 * on the stack is lost. */
const struct mf_jkey *mf_json_repeated_key(struct mf_jparse *j, size_t base);

/* The error "duplicate key", named by the path of the member k: at is its
 * name in the input, or the start of the object that has it twice.
 * Returns MF_EINVAL. */
enum mf_rc
mf_json_duplicate(struct mf_jparse *j, const char *at, const struct mf_jkey *k);

/* The error "not valid JSON: WHAT" at the byte at, into j and its err;
 * returns MF_EINVAL. */
enum mf_rc mf_json_fail(struct mf_jparse *j, const char *at, const char *what);
/* The same, for a value (a number, a string's text) at the byte at after
 * valid JSON: named by the value's path, as mf_json_duplicate names a
 * key's (none at the top, or in a member's name at the top). */
enum mf_rc
mf_json_fail_value(struct mf_jparse *j, const char *at, const char *what);

/* The error of a limit passed (rc MF_ETOOBIG) or of no memory (MF_ENOMEM)
 * into j and its err; returns rc. */
enum mf_rc mf_json_limit(struct mf_jparse *j, enum mf_rc rc);

/* mf_json_string's string with escapes, its text from p and the first
 * escape or byte to check at q: decoded after memchr found its closing
 * quote.  Out of line: few strings have escapes. */
const char *
mf_json_escaped(struct mf_jparse *j, const char *p, const char *q, size_t *len);

/* The text p[0..len), its quotes' inside, into the arena; NULL when there
 * is no memory. */
static inline const char *
mf_json_copy(struct mf_jparse *j, const char *p, size_t len)
{
	const char *out = mf_doc_strndup(j->doc, p, len);

	if (out == NULL)
		mf_json_limit(j, MF_ENOMEM);
	return out;
}

/*
 * The string at j->p (its opening quote); *len its decoded length.  NULL
 * after failing, else its text: NUL-terminated in the arena when copy or
 * when it has escapes, else left in the input.  A string without escapes,
 * nearly every one, is found 16 or 8 bytes at a time, in line.
 */
static inline const char *
mf_json_string(struct mf_jparse *j, int copy, size_t *len)
{
	const char *p = j->p + 1, *q = mf_scan_plain(p, j->end);

	if (q < j->end && *q == '"') {
		*len = (size_t)(q - p);
		j->p = q + 1;
		return copy ? mf_json_copy(j, p, *len) : p;
	}
	return mf_json_escaped(j, p, q, len);
}

#endif
