/*
 * review_int.h: what the files of the review share (review.c, which reads
 * the AdmissionReview, decides and answers; review_pod.c, which writes the
 * pod spec's part of the patch), and nothing outside them uses.  The
 * public API is review.h.
 */
#ifndef MF_REVIEW_INT_H
#define MF_REVIEW_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../doc/doc.h"
#include "patch.h"
#include "../place/place.h"
#include "review.h"
#include "../base/buf.h"
#include "../base/str.h"

#define ANN_MIN "memfloor.dev/min-memory"
#define ANN_SPEC "memfloor.dev/spec"
#define ANN_PLACEMENT "memfloor.dev/placement"
#define ANN_COST "memfloor.dev/estimated-cost"
#define ANN_CONTAINER "memfloor.dev/container"
/* On the pods (a Pod's own annotations, a Job's pod template's): what
 * memfloor added to their node affinity (select: memory, design 18), so
 * that a later review replaces it and leaves the pod's own alone. */
#define ANN_AFFINITY "memfloor.dev/node-affinity"
/* The pods' label that carries the job's fingerprint (design 23). */
#define LABEL_FINGERPRINT "memfloor.dev/fingerprint"
#define MAX_WARNINGS 16 /* in one response */

enum target { TARGET_NONE, TARGET_POD, TARGET_JOB };

/* One review in progress.  JSON values are borrowed from the request. */
struct review {
	const struct mf_api *api;
	const char *uid;
	const char *operation;
	const struct mf_node *request;
	const struct mf_node *object;      /* NULL when absent or null */
	enum target target;                /* what the object is, once read */
	const struct mf_node *annotations; /* the object's, when it opted in */
	const struct mf_node *pod;         /* the pod spec */
	const char *pod_path;              /* its JSON Pointer */
	const struct mf_node *pod_meta;    /* the pods' metadata: a Pod's own, a
	                                      Job's template's; may be NULL */
	const char *name; /* for the decision and the log; may be NULL */
	int64_t pods; /* pods the job runs as, each on one node (design 11) */
	struct mf_patch patch;  /* owned */
	struct mf_buf affinity; /* owned: the ANN_AFFINITY value to write, or
	                           empty (review_pod.c) */
	const char *patched;    /* the patch's text, once allowed; in patch */
	size_t patched_len;
	int denied; /* status.code and message are set */
	int code;
	size_t nwarn;
	int nomem; /* an allocation failed: answer 500 */
	enum mf_verdict verdict;
	/* Last: not zeroed (see mf_api_review). */
	char message[MF_REVIEW_MESSAGE_MAX + 1];
	char warnings[MAX_WARNINGS][MF_REVIEW_WARNING_MAX + 1];
};

/* The request is read as a doc.h tree; these say what kind a node is
 * (NULL is none of them). */
static inline int
is_map(const struct mf_node *n)
{
	return n != NULL && n->type == MF_NODE_MAP;
}

static inline int
is_seq(const struct mf_node *n)
{
	return n != NULL && n->type == MF_NODE_SEQ;
}

static inline int
is_str(const struct mf_node *n)
{
	return n != NULL && n->type == MF_NODE_STR;
}

static inline const char *
str_of(const struct mf_node *n)
{
	return is_str(n) ? n->text : NULL;
}

static inline const char *
str_at(const struct mf_node *o, const char *key)
{
	return str_of(mf_node_get(o, key));
}

static inline size_t
seq_len(const struct mf_node *n)
{
	return is_seq(n) ? n->len : 0;
}

/* The i-th element of a list, or NULL. */
static inline const struct mf_node *
seq_at(const struct mf_node *n, size_t i)
{
	const struct mf_node *c = is_seq(n) ? n->child : NULL;

	while (c != NULL && i-- > 0)
		c = c->next;
	return c;
}

/* Every element c of the list n (none when n is no list), i counting. */
#define EACH(n, i, c) \
	for ((i) = 0, (c) = is_seq(n) ? (n)->child : NULL; (c) != NULL; \
	     (c) = (c)->next, (i)++)

static inline int
streq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/*
 * The room for a JSON Pointer or an annotation's value put together piece
 * by piece (buf.h's mf_buf_fixed): a request writes several, and printf
 * would cost more than the rest of the patch.  Cut to fit.
 */
#define TEXT_MAX 160

/* v as a whole number into *out; 0 when it is none. */
static inline int
whole(const char *v, long long *out)
{
	char *end;

	if (v == NULL || v[0] == '\0')
		return 0;
	*out = strtoll(v, &end, 10);
	return *end == '\0';
}

/* A warning for the answer (at most MAX_WARNINGS; later ones are
 * dropped), cut to MF_REVIEW_WARNING_MAX bytes. */
void mf_review_warn(struct review *rv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Deny the review with the HTTP code and message (cut to fit). */
void mf_review_deny(struct review *rv, int code, const char *message);
/* Deny it 400: "annotation ANNOTATION: WHAT". */
void mf_review_deny_annotation(struct review *rv, const char *annotation,
    const char *what);

/*
 * The pod spec's part of the patch for d's placement (rv->pod set): want
 * GPUs (a pod's share) on the container that gets them, checked against
 * what every container asks (placed: the placement in words, for the
 * denial), and the node selection (the product's label, or node affinity
 * by memory, with the ANN_AFFINITY value in rv->affinity).  0, or -1
 * after denying the review or running out of memory (rv->nomem).
 */
int mf_review_patch_pod(struct review *rv, const struct mf_decision *d,
    int64_t want, const char *placed);

#endif
