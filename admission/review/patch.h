/*
 * patch.h: an RFC 6902 JSON Patch written straight into a buffer with the
 * JSON writer of jw.h, for the admission review's answer.
 *
 * Paths are JSON Pointers (RFC 6901): a base the caller writes already
 * escaped ("/spec/template/spec/nodeSelector") and, optionally, one member
 * name that is escaped here ('~' as "~0", '/' as "~1").  A failure (no
 * memory, a path or patch over its cap) is sticky in the buffer's rc.
 */
#ifndef MF_PATCH_H
#define MF_PATCH_H

#include <stddef.h>

#include "../base/buf.h"
#include "../base/jw.h"

#define MF_PATCH_PATH_MAX 1024 /* one pointer, escaped, with its NUL */

struct mf_patch {
	struct mf_buf b; /* owned: the patch text */
	struct mf_jw w;  /* write an op's "value" member with it */
	size_t nops;
};

/* An empty patch that may grow to max bytes; needs mf_patch_free. */
void mf_patch_init(struct mf_patch *p, size_t max);
/*
 * Open {"op": verb, "path": base "/" key} (base alone when key is NULL).
 * Unless verb is "remove", the caller then writes the member "value" with
 * p->w; mf_patch_end closes the op.
 */
void mf_patch_begin(struct mf_patch *p, const char *verb, const char *base,
    const char *key);
void mf_patch_end(struct mf_patch *p);
/* One whole op whose value is the string value (NULL: no value). */
void mf_patch_str(struct mf_patch *p, const char *verb, const char *base,
    const char *key, const char *value);
/*
 * Close the list and return its text (borrowed from p, len bytes), or
 * NULL when the patch failed.  Nothing may be added afterwards.
 */
const char *mf_patch_text(struct mf_patch *p, size_t *len);
void mf_patch_free(struct mf_patch *p);

#endif
