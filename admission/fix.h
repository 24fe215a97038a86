/*
 * fix.h: the memory fixes of design section 7, in the order the reference
 * post applies them: four cumulative ones, then four alternatives.
 */
#ifndef MF_FIX_H
#define MF_FIX_H

enum mf_fix {
	MF_FIX_SDPA,          /* eager -> sdpa attention */
	MF_FIX_MICROBATCH,    /* micro-batch b -> 1 with b accumulation steps */
	MF_FIX_AUTOCAST,      /* fp32 -> bf16 */
	MF_FIX_CHECKPOINTING, /* gradient checkpointing */
	MF_FIX_ADAM8BIT,      /* 8-bit Adam */
	MF_FIX_LORA,          /* modelling decision */
	MF_FIX_QLORA,         /* modelling decision */
	MF_FIX_FSDP,          /* full shard over N GPUs */
	MF_FIX_COUNT
};

/* Sets of fixes are unsigned bit masks: bit i is enum mf_fix i. */
#define MF_FIXBIT(f) (1u << (f))

/* "sdpa", "microbatch", ...; NULL past the end. */
const char *mf_fix_name(enum mf_fix f);
/* -1 when name is not a fix id. */
int mf_fix_lookup(const char *name);

#endif
