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

enum mf_model_source {
	MF_MODEL_NONE,
	MF_MODEL_NAMED,  /* a shipped config */
	MF_MODEL_INLINE, /* spec.model.config */
	MF_MODEL_URL /* spec.model.configUrl: model is filled once fetched */
};

struct mf_job {
	const char *name;      /* metadata.name; borrowed from the document */
	int64_t min_memory;    /* bytes; 0 when not given */
	int min_memory_format; /* enum mf_qty_format of minMemory */
	int64_t count;         /* GPUs per job, default 1 */
	int count_given; /* resources.gpu.count or workload.sharding set */
	enum mf_model_source model_source;
	const char *model_name; /* shipped name, or NULL; borrowed */
	const char *config_url; /* or NULL; borrowed */
	struct mf_model model;  /* valid unless model_source is NONE or URL */
	struct mf_workload work;
	double reference_hours;  /* 0 when not given */
	double max_hourly_price; /* < 0 when not given; same for the next two */
	double max_cost;
	double deadline_hours;
	unsigned allowed_fixes; /* MF_FIXBIT set */
	/*
	 * Kubernetes (review.c sets it; the reader leaves it 0): the job
	 * runs as this many pods, each on one node with count / pods GPUs.
	 * 0: any count the catalogue allows, over as many nodes as it takes.
	 */
	int64_t pods;
	/* Where workload.sequenceLength and contextLength are written, for
	 * the errors that need the model (mf_job_check_model); 0: not
	 * given, or JSON. */
	int seq_line, seq_column, context_line, context_column;
	/* Where workload.loss is written, for the same; 0: not given. */
	int loss_line, loss_column;
};

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
 * The manifest's name of value v of the enumerated spec.workload field key
 * ("precision", "attention", ...), as a request writes it; NULL for an
 * unknown key or value.
 */
const char *mf_workload_enum_name(const char *key, int v);

#endif
