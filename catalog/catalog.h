/*
 * catalog.h: the GPU catalogue (design section 4).
 *
 * A loaded catalogue is an immutable snapshot: request threads read it
 * through a reference taken with mf_cat_ref and released with mf_cat_unref;
 * a reload builds a new snapshot and swaps it in, never touching one that
 * a request may be reading.
 */
#ifndef MF_CATALOG_H
#define MF_CATALOG_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "../admission/base/err.h"
#include "../admission/estimate/estimate.h"
#include "../admission/fix/fix.h"
#include "../admission/time/time.h"

#define MF_CAT_MAX_GPUS 20000
#define MF_CAT_MAX_LABELS 64
#define MF_CAT_MAX_COUNT 1024 /* bound on gpusPerNode, maxNodes, maxCount */
#define MF_CAT_MAX_BYTES (16u << 20) /* catalogue file size cap */
/* The reference card when the catalogue names none (design 21). */
#define MF_CAT_REFERENCE "H100"

struct mf_label {
	char *key;
	char *value;
};

/* The runs of a card's own members that answers write alike
 * (mf_cat_card_write): memory and memoryBytes, in a placement, a smallest
 * fit and the catalogue's listing; labels, in a placement and the
 * listing. */
enum mf_card_part { MF_CARD_MEMORY, MF_CARD_LABELS, MF_CARD_PARTS };

/*
 * How a Slurm job asks for a GPU of this type (design section 16); each
 * field NULL when the catalogue does not set it, all NULL for a GPU
 * without a slurm mapping.  gres is "gpu:TYPE"; partition is one
 * partition name; constraint is features joined by & or |.
 */
struct mf_slurm {
	char *gres;
	char *partition;
	char *constraint;
};

struct mf_gpu {
	char *name;
	int64_t memory;      /* bytes per GPU */
	int memory_format;   /* enum mf_qty_format, for printing */
	double hourly_price; /* USD per GPU-hour, >= 0 */
	/* Speed relative to the catalogue's reference card on a job whose
	 * work is not known (a floor without a model): relativeThroughput,
	 * else the achieved bf16 FLOPS over the reference's (mf_cat_parse);
	 * > 0.  throughput_given: relativeThroughput was written, and then
	 * overrides the modelled ratio of every job (design 21). */
	double throughput;
	int throughput_given;
	struct mf_speed speed; /* the card's figures (design 21) */
	int64_t gpus_per_node; /* [1, 1024], default 8 */
	int64_t max_nodes;     /* most nodes one job may span, [1, 1024],
	                          default 1 */
	int64_t max_count;     /* most GPUs of this type one job may get, in
	                          [1, min(1024, gpus_per_node x max_nodes)];
	                          default that bound */
	/*
	 * What vLLM finds on this card (design 19; the entry's vllm map):
	 * the total memory CUDA reports, which vLLM's budget is a share of
	 * (its log's total_gpu_memory; 0: memory); what it holds outside
	 * PyTorch at tensor parallel 1, and what NCCL and the custom
	 * all-reduce add at 2 or more (MF_NON_TORCH_DEFAULT,
	 * MF_ALL_REDUCE_DEFAULT when not given).
	 */
	int64_t cuda_memory;
	int64_t non_torch;
	int64_t all_reduce;
	int vllm_format; /* the three's enum mf_qty_format, unused */
	size_t nlabels;
	struct mf_label *labels;
	/* dcgmModelName: the GPU model dcgm-exporter reports (its modelName
	 * label), for a card whose labels name no nvidia.com/gpu.product;
	 * NULL when not given. */
	char *dcgm_model;
	struct mf_slurm slurm;
	int line; /* where the entry starts in the file */
	/* Each part's members as JSON, made from the card's memory and
	 * labels when the catalogue is read, for every answer to copy; NULL
	 * for a card made elsewhere (a test's), written member by member. */
	char *json[MF_CARD_PARTS];
	size_t json_len[MF_CARD_PARTS];
};

/*
 * How an admission review selects nodes (design 18): product puts the
 * placed card's labels in the pod's nodeSelector; memory adds a required
 * node affinity on GPU Feature Discovery's nvidia.com/gpu.memory label and
 * preferred terms for the placed card and its alternatives.
 */
enum mf_k8s_select {
	MF_K8S_SELECT_PRODUCT, /* the default */
	MF_K8S_SELECT_MEMORY
};

struct mf_catalog {
	double headroom;                  /* [0, 0.9), default 0.10 */
	double multi_gpu_efficiency;      /* (0, 1], default 0.9 */
	double inter_node_efficiency;     /* (0, 1], default 0.8: each
	                                     doubling of nodes keeps this
	                                     share of speed */
	double time_factor[MF_FIX_COUNT]; /* checkpointing 1.35, others 1.0 */
	int64_t cuda_graph_reserve;       /* bytes a vllm server keeps for CUDA
	                                     graphs, default 1Gi (design 14) */
	int cuda_graph_format;            /* its enum mf_qty_format */
	enum mf_estimator estimator;      /* estimator: default pytorch */
	size_t ngpus;                     /* >= 1 */
	struct mf_gpu *gpus;              /* in file order */
	enum mf_k8s_select k8s_select;    /* kubernetes.select */
	/* The card referenceHours are measured on (design 21), default H100,
	 * and that card; ref is NULL when the catalogue names no such card
	 * and every card gives relativeThroughput (then no card is
	 * modelled: the hours are design 6's). */
	char *reference;
	const struct mf_gpu *ref;
	/* observations: (design 23): a device figure is held against the
	 * card's memory less margin; other cards fall by no more than
	 * max_lowering; the daemon refreshes its summaries every
	 * refresh_seconds; a run whose DCGM series had no sample for
	 * finish_after seconds is over (its Prometheus reader). */
	double obs_margin;
	double obs_max_lowering;
	int64_t obs_refresh_seconds;
	int64_t obs_finish_after;
	uint64_t version; /* set by the owner that serves it; 0 until then */
	time_t loaded_at;
	char *source; /* file name, or "<memory>" */
	int refs;     /* atomic; private to catalog.c */
};

/*
 * Parse and validate a catalogue.  name is used in errors
 * ("gpus.yaml:12: gpus[3].memory: ..."): err->message is
 * "NAME:LINE: FIELD: problem".  The result has one reference.
 */
enum mf_rc mf_cat_parse(const char *buf, size_t len, const char *name,
    struct mf_catalog **out, struct mf_error *err);
/* Read path (at most MF_CAT_MAX_BYTES) and mf_cat_parse it. */
enum mf_rc
mf_cat_load(const char *path, struct mf_catalog **out, struct mf_error *err);

/* Take a reference; returns cat.  NULL is accepted and returned. */
struct mf_catalog *mf_cat_ref(struct mf_catalog *cat);
/* Drop a reference; the last one frees.  NULL is a no-op. */
void mf_cat_unref(struct mf_catalog *cat);

/* Whether g is timed by its own figures (design 21): the catalogue has a
 * modelled reference card, and g is it or gives no relativeThroughput;
 * else g is timed through the reference card, or by design 6. */
int mf_cat_own_speed(const struct mf_catalog *cat, const struct mf_gpu *g);
/* The GPU of that name, or NULL. */
const struct mf_gpu *
mf_cat_find(const struct mf_catalog *cat, const char *name);
struct mf_jw;
/* Write part of gpu's members with w: the JSON made with the catalogue
 * where w writes JSON, else member by member, the same text. */
void mf_cat_card_write(struct mf_jw *w, const struct mf_gpu *gpu,
    enum mf_card_part part);
/* Whether the GPU has a slurm mapping. */
int mf_cat_has_slurm(const struct mf_gpu *gpu);
/* The TYPE of the GPU's "gpu:TYPE" gres, or NULL without one. */
const char *mf_cat_gres_type(const struct mf_gpu *gpu);
/* Sort cards cheapest per reference hour first (mf_cat_unit_cost), then
 * by name: the order the catalogue is listed in for a floor. */
void mf_cat_cheapest_first(const struct mf_gpu **gpus, size_t n);
/* The cards with at least min_memory bytes: with min_memory > 0 cheapest
 * first (mf_cat_cheapest_first), else all in the file's order.  A
 * malloc'd array of *n pointers into cat (free() it), NULL when out of
 * memory. */
const struct mf_gpu **
mf_cat_fitting(const struct mf_catalog *cat, int64_t min_memory, size_t *n);
/* Dollars per reference hour on one card: hourlyPrice / relativeThroughput,
 * the cost of a one-GPU job per hour it takes on the reference GPU.
 * Inline, as the placement search asks it of every card. */
static inline double
mf_cat_unit_cost(const struct mf_gpu *gpu)
{
	return gpu->hourly_price / gpu->throughput;
}
/* Nodes a job of count GPUs of this type spans: ceil(count / gpusPerNode). */
static inline int64_t
mf_cat_nodes(const struct mf_gpu *gpu, int64_t count)
{
	return (count + gpu->gpus_per_node - 1) / gpu->gpus_per_node;
}
/* Usable bytes of a card: memory x (1 - the catalogue's headroom), rounded
 * down; mf_cat_usable_at with a headroom of the caller's (a vllm job's
 * 1 - gpuMemoryUtilization). */
int64_t mf_cat_usable(const struct mf_catalog *cat, const struct mf_gpu *gpu);
int64_t mf_cat_usable_at(const struct mf_gpu *gpu, double headroom);
/* mf_cat_usable_at in two steps, for many cards at one headroom: the share
 * kept, in billionths (headroom clamped to [0, 1]), then a card's usable
 * bytes at it (see catalog.c for why in integers). */
#define MF_CAT_KEEP_SCALE INT64_C(1000000000)
int64_t mf_cat_keep(double headroom);
static inline int64_t
mf_cat_usable_keep(const struct mf_gpu *gpu, int64_t keep)
{
	if (gpu == NULL || gpu->memory <= 0)
		return 0;
	return gpu->memory / MF_CAT_KEEP_SCALE * keep +
	    gpu->memory % MF_CAT_KEEP_SCALE * keep / MF_CAT_KEEP_SCALE;
}

/* The catalogue's rows in the table of fields (fields.h;
 * catalog_fields.c): a whole catalogue, and one of its GPUs. */
struct mf_field;
extern const struct mf_field mf_fields_catalog;
extern const struct mf_field mf_fields_gpu;

/* What the catalogue gives a workload until a catalogue does: its
 * rows' defaults of cudaGraphReserve and estimator, and the bytes outside
 * PyTorch's allocator and of an all-reduce's buffers. */
void mf_cat_workload_defaults(struct mf_workload *w);

#endif
