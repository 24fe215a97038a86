/*
 * review.h: the Kubernetes mutating admission webhook (design section 11),
 * POST /v1/admission-review.
 *
 * A batch/v1 Job or v1 Pod opts in with annotations on the object:
 *
 *   memfloor.dev/min-memory  a quantity: the per-GPU floor
 *   memfloor.dev/spec        YAML or JSON of a manifest's spec (design 3)
 *
 * With both, the annotation's quantity is the spec's
 * resources.gpu.minMemory unless the spec sets its own; then the spec's
 * wins and a warning says the annotation was ignored.
 *
 * Everything else passes unchanged (allowed, no patch): other kinds,
 * objects without either annotation, operations other than CREATE and
 * UPDATE, subresource requests (pods/status, ...).  An admitted object is
 * allowed with a JSON Patch (RFC 6902) on the pod spec (Pod: /spec, Job:
 * /spec/template/spec) that selects nodes as the catalogue's
 * kubernetes.select says (design 18):
 *   - product (the default): adds the GPU's catalogue labels to the
 *     nodeSelector, one add of the whole map when there is none, else one
 *     add per key (a key already set to another value is replaced, with a
 *     warning);
 *   - memory: ANDs "nvidia.com/gpu.memory Gt M" (GPU Feature Discovery's
 *     label, in MiB; M = ceil(floor / 2^20) - 1) into every required
 *     nodeSelectorTerm (one term when there is none), and adds preferred
 *     terms for the placed card and each alternative with the same GPU
 *     count, cheapest first, weights 100, 90, ...; the nodeSelector and
 *     the pod's own terms stay as they are.  The annotation
 *     memfloor.dev/node-affinity on the pods (a Pod's metadata, a Job's
 *     spec.template.metadata) records what memfloor's patch leaves of its
 *     own, as JSON: {"required": the memory expression, "preferred": [the
 *     terms]} ("required" left out where every term had that expression
 *     of the pod's own).  Reviewed again (an UPDATE, or a CREATE of an
 *     object copied from one patched), the expression and terms it names
 *     are memfloor's: each is replaced in place, or left when the same,
 *     its terms no longer wanted removed, and the rest of the pod's
 *     affinity is the pod's own, never changed.  Without it (or with a
 *     value that is not such a record, warned of) an expression or term
 *     the same as memfloor's is the pod's and is not added twice.
 * A warning says so when the pod's required node affinity (and, for
 * memory, its nodeSelector) excludes every card placed.  The patch
 *   - gives the GPUs to one container: the one the annotation
 *     memfloor.dev/container names, else the first of containers; never
 *     to initContainers (sidecars included); its resources.requests and
 *     resources.limits of nvidia.com/gpu are both set to the count, as a
 *     string.  A container that sets either to anything else (the GPU
 *     container: not the count; any other container or init container:
 *     not 0) is denied with status.code 400 and a message naming it, as
 *     is an annotation naming no container;
 *   - adds (or replaces, when present) the annotations
 *     memfloor.dev/placement ("H100 x 2"), memfloor.dev/min-memory (the
 *     floor in effect, canonical) and memfloor.dev/estimated-cost (USD
 *     with two decimals; without spec.duration.referenceHours there is no
 *     cost, and a stale one is removed).
 *   - sets the label memfloor.dev/fingerprint of the pods the object runs
 *     as (a Pod's metadata.labels, a Job's spec.template.metadata.labels,
 *     created when absent) to the job's fingerprint as placed, the one
 *     its admit answer carries (fingerprint.h, design 23).
 * A pod's GPUs all come from one node, so a pod is placed within one
 * (gpusPerNode): a Pod and a Job run as one pod, and an Indexed Job
 * (completionMode: Indexed) with parallelism N > 1, which must have N
 * completions, as N pods of the same G GPUs, each pod's GPU container
 * getting G (the count is N x G; a count the spec sets must split so); a
 * Job that is not Indexed places each of its pods as the whole job (with
 * a warning when parallelism > 1).  A job that fits no pod on one node is
 * denied with status.code 403 and the placement it needs over nodes, how
 * to run it there (an Indexed Job of that many pods, placed, or a JobSet,
 * LeaderWorkerSet or PyTorchJob) and the fix that would fit one node.
 * A rejected object is denied with status.code 403 and a message with the
 * reason and the suggested fix.  A bad annotation (not a quantity, spec
 * not YAML, an unknown spec field, a configUrl model) is denied with
 * status.code 400 and a message naming the annotation.  response.warnings
 * holds the decision's warnings, each cut to under 120 bytes.  dryRun
 * requests are answered the same way: deciding has no side effects.
 */
#ifndef MF_REVIEW_H
#define MF_REVIEW_H

#include <stddef.h>

#include "../api.h"

/* Longest warning and denial message, in bytes, terminator excluded. */
#define MF_REVIEW_WARNING_MAX 119
#define MF_REVIEW_MESSAGE_MAX 1000

/*
 * Answer the AdmissionReview in body[0..len) (need not be NUL-terminated).
 * ans is filled completely, always as JSON: MF_ANS_OK with an
 * AdmissionReview response for every well-formed review (allowed or
 * denied); MF_ANS_INVALID with {"error", "field"} when the body is not an
 * admission.k8s.io/v1 AdmissionReview with a request and a uid;
 * MF_ANS_INTERNAL when memory ran out.  ans->job is the object's name
 * (metadata.name, else generateName, else request.name) and ans->verdict
 * is set when admission ran.  Release with mf_answer_free.  fmt and out
 * are there for the mf_api_call shape and ignored: an AdmissionReview is
 * JSON both ways.
 */
void mf_api_review(const struct mf_api *api, const char *body, size_t len,
    enum mf_doc_format fmt, enum mf_output out, struct mf_answer *ans);

#endif
