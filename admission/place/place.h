/*
 * place.h: placement of a job on the catalogue card that is cheapest to
 * finish (design section 6), and the fixes that make a rejected job fit
 * (design section 7).  No allocation: a decision is a plain value that
 * borrows GPU entries from the catalogue it was made with.
 */
#ifndef MF_PLACE_H
#define MF_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "../../catalog/catalog.h"
#include "../base/err.h"
#include "../estimate/estimate.h"
#include "../fingerprint/fingerprint.h"
#include "../fix/fix.h"
#include "../manifest/manifest.h"
#include "../time/time.h"

#define MF_MAX_ALTERNATIVES 8
/* Design 23: the cards one job's observations may name. */
#define MF_OBS_CARDS 16
/* What the runs of one job (one fingerprint) measured on one card. */
struct mf_obs_card {
	char card[128]; /* the catalogue's name */
	int64_t runs;   /* observations */
	int64_t peak;   /* bytes a GPU, the largest observed; -1: none */
	int device;     /* peak is the device's figure (DCGM), not torch's */
	double tokens_per_second; /* the median observed; <= 0: none */
};

/* A job's observations (struct mf_job's observed): plain data. */
struct mf_observed {
	/* The fingerprint of the job as written, whose runs these are:
	 * the decision's too when it is placed as written. */
	char fingerprint[MF_FP_HEX];
	size_t n;
	struct mf_obs_card card[MF_OBS_CARDS];
};

/* Where observations moved a placement's figures; runs 0: they did not. */
struct mf_obs_note {
	int64_t runs;     /* observations behind the figures */
	int here;         /* measured on this card, not moved by a ratio */
	int device;       /* the peak is a device figure */
	int64_t estimate; /* the need the estimate gives, bytes a GPU */
	double memory;    /* need / estimate */
	double speed;     /* observed over modelled speed; 1: none */
	double est_hours; /* the hours the model gives */
};
#define MF_MAX_WARNINGS 8

struct mf_placement {
	const struct mf_gpu *gpu; /* borrowed from the catalogue */
	int64_t count;
	int64_t nodes;       /* nodes the count spans: mf_cat_nodes */
	unsigned fixes;      /* fixes admission applied (MF_FIXBIT) */
	unsigned order;      /* mf_fix_order(fixes): ranks ties in cost */
	int64_t need;        /* bytes per GPU: derived need, or the floor */
	double spare;        /* (memory - need) / memory */
	double hourly_price; /* hourlyPrice x count */
	double hours; /* to finish; valid when the job has referenceHours */
	double cost;  /* likewise */
	double cost_per_ref_hour; /* cost / referenceHours: the ranking key */
	/* The referenceHours of the job with the fixes written in: its own x
	 * their time factor; 0 when that is the job's own. */
	double reference_hours;
	/* The spec.resources.gpu.count it also sets: count, where the job
	 * with the fixes written in would run on another; 0 otherwise. */
	int64_t count_change;
	/* Inference (design 14): sequences of contextLength that fit on
	 * this card, and the tokens each of concurrency sequences may have;
	 * 0 for training. */
	int64_t max_seqs;
	int64_t max_context;
	/* Design 21, when the catalogue's reference card is modelled and
	 * the job has a model (else step.seconds is 0): one step of the job
	 * on this placement, with its terms' formulas, and the tokens it
	 * advances the job by (every replica's). */
	struct mf_step step;
	int64_t tokens_per_step;
	double cost_per_mtok; /* cost of a million of its tokens (output
	                         tokens, serving) */
	int timed; /* hours and cost are the job's (it gives a duration) */
	struct mf_obs_note observed; /* design 23 */
};

/* One entry of a rejection's fix list. */
struct mf_fix_option {
	enum mf_fix fix;
	unsigned fixes; /* every fix this entry includes */
	int64_t gpus;   /* GPUs the entry runs on (fsdp: the shard count) */
	int64_t amount; /* the number its manifest change sets: GPUs (fsdp,
	                   tensor, count), tokens (context), sequences
	                   (concurrency) */
	/* The spec.duration.referenceHours its manifest change also sets:
	 * referenceHours describes the job as written, so a fix that changes
	 * the run time (a time factor) scales it; 0 when it is unchanged. */
	double reference_hours;
	/* The spec.resources.gpu.count it also sets: gpus, where the job with
	 * the fixes written in would run on another (a tensor fix on a job
	 * whose count was its own tensor size); 0 otherwise. */
	int64_t count_change;
	int64_t need; /* bytes per GPU after the fixes */
	int64_t
	    min_memory; /* suggested floor: need / (1 - headroom), whole GiB */
	int placed;     /* placement below is valid */
	/* Where the job goes with the manifest change written into it: the
	 * cheapest placement within the limits, with the allowed fixes
	 * admission adds by itself (placement.fixes has them all). */
	struct mf_placement placement;
};

enum mf_limit {
	MF_LIMIT_NONE = -1,
	MF_LIMIT_HOURLY_PRICE, /* limits.maxHourlyPrice */
	MF_LIMIT_COST,         /* limits.maxCost */
	MF_LIMIT_DEADLINE      /* limits.deadlineHours */
};

struct mf_decision {
	int admitted;
	int from_model;   /* need.source: "model", else "minMemory" */
	int64_t need;     /* bytes per GPU of the workload as placed */
	int64_t floor;    /* the minMemory in effect, bytes */
	int floor_format; /* enum mf_qty_format of floor */
	struct mf_placement placement; /* when admitted */
	struct mf_workload work; /* the workload as placed (fixes applied) */
	enum mf_limit limit;     /* rejection: the limit that dropped the last
	                            fitting candidate */
	char reason[320];        /* rejection: one sentence */
	int suggested;           /* index into fixes, or -1 */
	/* The fingerprint (design 23) of the job as placed: with its
	 * placement's fixes over its count, or as written when rejected;
	 * the answer's and the store's, worked out once. */
	char fingerprint[MF_FP_HEX];
	size_t nalt, nfixes, nwarn;
	int worked; /* step_work is filled */
	/* Past here, mf_place writes only what it fills: est when
	 * from_model, step_work when worked, and the first nalt, nfixes and
	 * nwarn entries. */
	struct mf_estimate est; /* estimate of work, when from_model */
	/* mf_work_of work with est's figures, as the search worked it out;
	 * mf_place fills it when from_model and the work is not refused. */
	struct mf_work step_work;
	struct mf_placement
	    alt[MF_MAX_ALTERNATIVES]; /* next cheapest, one per GPU type */
	struct mf_fix_option
	    fixes[MF_FIX_COUNT]; /* rejection: design 7 order */
	char warnings[MF_MAX_WARNINGS][160];
};

/*
 * Decide where job goes on cat.  job must have a model unless it has a
 * floor (model_source URL must have been resolved).  MF_ERANGE with err
 * filled when the job's figures overflow, MF_EINVAL when its layout is
 * one no framework starts (mf_job_check_layout); out is complete on MF_OK.
 * With job->pods, every count is that many pods of the same GPUs, each on
 * one node.
 */
enum mf_rc mf_place(const struct mf_job *job, const struct mf_catalog *cat,
    struct mf_decision *out, struct mf_error *err);
/* mf_place for a caller that shows no estimate and of the alternatives
 * only their cards and counts (the AdmissionReview): out->est holds its
 * figures alone (mf_est_figures), its formulas not written; out->alt what
 * ranked them (card, count, need, price, hours, cost), their step, serving
 * figures, cost a million tokens and written referenceHours 0. */
enum mf_rc
mf_place_no_formulas(const struct mf_job *job, const struct mf_catalog *cat,
    struct mf_decision *out, struct mf_error *err);

/*
 * Whether vLLM and the training frameworks start tensor parallel over t
 * GPUs for model m: t divides the attention heads, and the KV heads
 * divide t or t divides them (a KV head replicated whole).
 */
int mf_tensor_valid(const struct mf_model *m, int64_t t);
/*
 * MF_EINVAL, naming spec.workload.parallelism.tensor, the rule and the
 * nearest size that keeps it, when the job's tensor-parallel size breaks
 * mf_tensor_valid; MF_OK otherwise (and for a job whose model is not
 * known yet).
 */
enum mf_rc mf_job_check_layout(const struct mf_job *job, struct mf_error *err);

/*
 * Design 23's calibration: what the model gives job as placed (its fixes
 * in its workload; mf_fp_read's) on count GPUs of card g of cat: the need
 * a GPU the placement reckons there (*need) and the tokens a second of the
 * whole job (*tokens_per_second; 0 when the catalogue's reference card is
 * not modelled).  Observations play no part.  MF_EINVAL or MF_ERANGE as
 * mf_place; the out-parameters are untouched on error.
 */
enum mf_rc mf_place_modelled(const struct mf_job *job,
    const struct mf_catalog *cat, const struct mf_gpu *g, int64_t count,
    int64_t *need, double *tokens_per_second, struct mf_error *err);
/* Suggested floor: bytes / (1 - headroom) rounded up to a whole GiB; -1
 * when that does not fit in 63 bits (or bytes is negative). */
int64_t mf_floor_for(int64_t bytes, double headroom);
/* Smallest card (by memory, then price, then name) that job runs on
 * (mf_place_runs_on) and whose memory holds bytes with headroom kept
 * free; NULL when none. */
const struct mf_gpu *mf_smallest_fit(const struct mf_catalog *cat,
    const struct mf_job *job, int64_t bytes, double headroom);
/* Whether job can run on g whatever its memory: its float8 matmuls (fp8
 * tensor cores, design 22) and its vLLM server's start (maxNumSeqs
 * against vLLM's default tokens a step there, design 14). */
int mf_place_runs_on(const struct mf_job *job, const struct mf_gpu *g);
/* The share of every card kept free for workload w: 1 -
 * gpuMemoryUtilization for a vllm server (design 14), else the
 * catalogue's headroom. */
double mf_headroom(const struct mf_catalog *cat, const struct mf_workload *w);
/* An inference job with a model: its placements answer maxConcurrency
 * and maxContextLength (design 14). */
int mf_job_serves(const struct mf_job *job);
/* What a job takes from the catalogue it is estimated against: the CUDA
 * graph reserve of a vllm server.  mf_place binds its own copy; an
 * estimate made outside it calls this first. */
void mf_job_bind(struct mf_job *job, const struct mf_catalog *cat);
/* What a vllm workload takes from the card it runs on: vLLM's defaults of
 * the settings w leaves 0 (mf_vllm_defaults, by the card's tier) and the
 * card's memory outside PyTorch.  Other workloads are left as they are. */
void mf_work_bind_card(struct mf_workload *w, const struct mf_gpu *g);
/*
 * Whether the job asks what its model cannot give (design 19): a
 * sequenceLength (training) or contextLength (inference) past the
 * model's context limit (max_position_embeddings, or its rope-scaling
 * limit) is MF_EINVAL naming both numbers; so is inference on a
 * quantization_config of a method memfloor does not know, unless
 * weightsDtype says how the weights are stored.  mf_place checks it; an
 * estimate made outside it calls this first, once a configUrl's model is
 * fetched.
 */
enum mf_rc mf_job_check_model(const struct mf_job *job, struct mf_error *err);
/* "limits.maxCost", ...; NULL for MF_LIMIT_NONE. */
const char *mf_limit_name(enum mf_limit limit);

#endif
