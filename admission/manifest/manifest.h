/*
 * manifest.h: the Job manifest of design section 3, read from YAML or JSON.
 *
 * Reading is strict: unknown fields, wrong types and values out of bounds
 * are MF_EINVAL with the field path and, for YAML, the line and column.
 */
#ifndef MF_MANIFEST_H
#define MF_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "../doc/doc.h"
#include "../base/err.h"
#include "../estimate/estimate.h"
#include "../model/model.h"

/* Bounds on workload figures; they keep every estimate inside 63 bits. */
#define MF_JOB_MAX_SEQ (INT64_C(1) << 21)
#define MF_JOB_MAX_BATCH 4096
#define MF_JOB_MAX_GPUS 1024
#define MF_JOB_MAX_RANK 4096
#define MF_JOB_MAX_CONCURRENCY (INT64_C(1) << 16)
#define MF_JOB_MAX_CONTEXT (INT64_C(1) << 22)
#define MF_JOB_MAX_GROUP (INT64_C(1) << 20)
#define MF_JOB_MAX_BLOCK 4096
#define MF_JOB_MAX_CHUNKS 1024
#define MF_JOB_MAX_LAYERS 4096 /* gradientCheckpointing: every Nth layer */
#define MF_JOB_MAX_HOURS 1e6
#define MF_JOB_MAX_MONEY 1e12
#define MF_JOB_MAX_TOKENS (INT64_C(1) << 50) /* duration.tokens, requests */

/* The Job's rows in the table of fields (fields.h; job_fields.c): a
 * whole manifest, and its spec (the annotation memfloor.dev/spec). */
struct mf_field;
extern const struct mf_field mf_fields_job;
extern const struct mf_field mf_fields_spec;

/* Every field as the manifest leaves it when not given (design 3, 14,
 * 15, 19): the rows of job_fields.c, which owns each default; the
 * estimator pytorch and cudaGraphReserve's 1Gi until a catalogue says
 * otherwise (mf_cat_workload_defaults). */
void mf_workload_defaults(struct mf_workload *w);

/*
 * Read a whole manifest (apiVersion memfloor.dev/v1, kind Job, metadata,
 * spec) from root.  path is where root sits in the body, for errors: ""
 * for a whole body, "job" for the job inside a diagnose request.  models
 * resolves spec.model.name and may be NULL (then a named model is an
 * error).  Strings in *job borrow from the document, which must outlive
 * the job.  *job is untouched on error.
 */
enum mf_rc mf_job_read(const struct mf_node *root, const char *path,
    const struct mf_models *models, struct mf_job *job, struct mf_error *err);

/*
 * Read only a spec mapping (the Kubernetes annotation memfloor.dev/spec).
 * path prefixes every field in errors; name becomes job->name.
 */
enum mf_rc
mf_job_read_spec(const struct mf_node *spec, const char *path, const char *name,
    const struct mf_models *models, struct mf_job *job, struct mf_error *err);
/*
 * The same with a floor given from outside the spec (the annotation
 * memfloor.dev/min-memory; floor_format is its enum mf_qty_format): it is
 * the job's minMemory unless the spec sets its own.  spec may be NULL, an
 * empty spec.
 */
enum mf_rc mf_job_read_spec_floor(const struct mf_node *spec, const char *path,
    const char *name, const struct mf_models *models, int64_t floor,
    int floor_format, struct mf_job *job, struct mf_error *err);

/*
 * The GPUs a manifest of workload w runs on, count being its
 * resources.gpu.count (0 where it gives none): count where it is a whole
 * number of w's replicas (tensor x pipeline) and w is not sharded, else
 * tensor x pipeline x sharding.gpus.  A manifest that gives another count
 * is refused.
 */
int64_t mf_job_gpus(const struct mf_workload *w, int64_t count);

/* Whether the job says how much work it is (spec.duration:
 * referenceHours, tokens or requests), so that its hours are known. */
int mf_job_has_duration(const struct mf_job *job);

/*
 * spec.workload.framework (design 22; framework.c owns the table): the
 * name of value v, a framework ("torchtune", its latest release measured)
 * or a framework at a release ("torchtune@0.4"), NULL past the last.
 */
const char *mf_framework_name(int v);
/*
 * The path under spec.workload of the i-th field framework v supplies for
 * a training job of method m ("precision", "lora.dtype"), by its
 * distributed recipe when sharded (the manifest states sharding), NULL
 * past the last; fewer than 32.
 */
const char *mf_framework_field(int v, enum mf_method m, int sharded, int i);
struct mf_fread;
/*
 * Put framework v's values for the method w already holds (its
 * distributed recipe when sharded) into the workload r->dst[MF_FB_WORK], read
 * by r's table as a manifest's are; the manifest's own fields, read afterwards,
 * replace them.  n and path are the framework's field, for the error when the
 * framework has no recipe for the method.
 */
enum mf_rc mf_framework_apply(int v, int sharded, struct mf_fread *r,
    const struct mf_node *n, const char *path);

/*
 * The manifest's name of value v of the enumerated spec.workload field key
 * ("precision", "attention", ...), as a request writes it; NULL for an
 * unknown key or value.
 */
const char *mf_workload_enum_name(const char *key, int v);

#endif
