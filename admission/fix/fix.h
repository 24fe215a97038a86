/*
 * fix.h: the memory fixes of design section 7, in the order the reference
 * post applies them: four cumulative ones, then four alternatives; then
 * those of an inference job (design 14): the KV cache in fp8, int8 or
 * int4 weights, tensor parallel; more data-parallel GPUs, for a job of
 * either kind that misses a limit; and the two that change what is
 * served, a shorter context and fewer sequences.
 *
 * Every fact about a fix lives in one row of fix.c's table: its id, the
 * manifest field and value it sets, the code change a user makes, whether
 * it is a modelling decision (it changes what is trained), whether it is
 * one of the post's cumulative steps, when it applies to a workload and
 * what it does to one.  Placement, rendering, the manifest reader, the
 * catalogue and the review all ask the table.
 */
#ifndef MF_FIX_H
#define MF_FIX_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

enum mf_fix {
	MF_FIX_SDPA,          /* eager -> sdpa attention */
	MF_FIX_MICROBATCH,    /* micro-batch b -> 1 with b accumulation steps */
	MF_FIX_AUTOCAST,      /* fp32 -> bf16 */
	MF_FIX_CHECKPOINTING, /* gradient checkpointing */
	MF_FIX_ADAM8BIT,      /* 8-bit Adam */
	MF_FIX_LORA,          /* modelling decision */
	MF_FIX_QLORA,         /* modelling decision */
	MF_FIX_FSDP,          /* full shard over N GPUs */
	MF_FIX_KVFP8,         /* inference: fp8 KV cache */
	MF_FIX_INT8,          /* inference: int8 weights */
	MF_FIX_INT4,          /* inference: int4 weights */
	MF_FIX_TENSOR,        /* inference: tensor parallel over N GPUs */
	MF_FIX_REPLICAS,      /* "count": data parallel over more GPUs */
	MF_FIX_CONTEXT,       /* inference: the longest context that fits */
	MF_FIX_CONCURRENCY,   /* inference: the most sequences that fit */
	MF_FIX_COUNT
};

/* Sets of fixes are unsigned bit masks: bit i is enum mf_fix i. */
#define MF_FIXBIT(f) (1u << (f))

/*
 * The first fix of *set, which is not empty and holds fixes only, taken
 * out of it: a set's fixes in their order, a step each and none for those
 * it lacks, as
 *	for (unsigned left = set; left != 0;) { f = mf_fix_take(&left); ... }
 */
static inline enum mf_fix
mf_fix_take(unsigned *set)
{
	enum mf_fix f;

	assert(*set != 0);
	f = (enum mf_fix)__builtin_ctz(*set);
	assert(f < MF_FIX_COUNT);
	*set &= *set - 1;
	return f;
}

/* How a fix's manifest value is written. */
enum mf_fix_value {
	MF_FIXV_STRING, /* value as it is */
	MF_FIXV_BOOL,   /* "true" */
	MF_FIXV_INT,    /* a whole number, as written in value */
	MF_FIXV_GPUS,   /* from the GPUs the entry finds (value is NULL):
	                   fsdp, tensor and count; a placement's from its
	                   count (mf_fix_gpus_value) */
	MF_FIXV_AMOUNT  /* another number the entry finds (value is NULL):
	                   tokens for context, sequences for concurrency */
};

struct mf_fix_info {
	const char *id;    /* "sdpa", ... */
	const char *field; /* the manifest field it sets, dotted */
	const char *value; /* the value it sets there (see kind) */
	enum mf_fix_value kind;
	const char *code; /* the code change a user makes */
	int modelling;    /* changes what is trained or served (LoRA, QLoRA,
	                     context, concurrency) */
	int cumulative;   /* one of the post's cumulative steps */
	int searched;     /* admission may apply it by itself (allowedFixes);
	                     context and concurrency only answer a rejection */
	const char *serve_code; /* an inference job's code change, when it
	                           is not code; else NULL */
};

/* The row of f; NULL past the end. */
const struct mf_fix_info *mf_fix_info(enum mf_fix f);
/* "sdpa", "microbatch", ...; NULL past the end. */
const char *mf_fix_name(enum mf_fix f);
/* -1 when name is not a fix id. */
int mf_fix_lookup(const char *name);
/* Every id, ", "-separated in table order ("sdpa, microbatch, ...") into
 * buf of size bytes (MF_FIX_IDS_MAX holds them all); returns buf. */
#define MF_FIX_IDS_MAX 192
char *mf_fix_ids(char *buf, size_t size);

/* The code change of fix f for a job of kind inference (nonzero) or
 * training. */
const char *mf_fix_code(enum mf_fix f, int inference);

/*
 * The order in which sets of fixes are preferred at equal cost: the set
 * that changes what is run least first (design 6).  A modelling decision
 * ranks after every fix that is not one; otherwise a fix later in the
 * table changes more (kvfp8, then int8, int4, tensor, count).  Sets
 * compare by their most intrusive fix first: the lower key wins, and the
 * empty set's key is 0.
 */
unsigned mf_fix_order(unsigned fixes);

/* The value a fix sets, as the manifest spells it ("true", "adam8bit",
 * "2" for fsdp over 2 GPUs: amount), into buf of size bytes; returns buf. */
char *mf_fix_value_text(enum mf_fix f, int64_t amount, char *buf, size_t size);

struct mf_job;
struct mf_workload;

/* Whether fix changes anything for the workload w of job. */
int mf_fix_applies(const struct mf_job *job, const struct mf_workload *w,
    enum mf_fix fix);
/*
 * The value the field of f, a fix that sets a GPU count (MF_FIXV_GPUS),
 * takes for a job of workload w (as written) run on gpus GPUs: the tensor
 * fix's tensor-parallel size, gpus / w->pipeline, since a replica is
 * tensor x pipeline GPUs and the tensor fix never adds replicas; fsdp's
 * shards and count's GPUs, gpus.
 */
int64_t
mf_fix_gpus_value(enum mf_fix f, const struct mf_workload *w, int64_t gpus);
/* The workload with the fixes of the set applied, the job run on gpus
 * GPUs (fsdp shards over them, tensor splits each pipeline stage over
 * mf_fix_gpus_value of them; count, context and concurrency are not
 * applied here: the count is the job's, the other two a rejection's). */
void mf_fix_apply(struct mf_workload *w, unsigned fixes, int64_t gpus);

#endif
