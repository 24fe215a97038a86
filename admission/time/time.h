/*
 * time.h: the hours half of cheapest to finish (design 21): the work of
 * one step of a job (matmul FLOPs, the other bytes it moves, what it
 * communicates), from the model shape and the workload the memory
 * estimate reads, and that step's time on a card from the card's FLOPS,
 * memory bandwidth and links.  Pure arithmetic: no I/O, no allocation.
 *
 * A kernel is bound by compute or by memory; the step is the sum of its
 * matmul time, its memory time and the communication that does not
 * overlap with compute.  Every coefficient is a measured fact, cited
 * where it is used (time.c, work.c).
 */
#ifndef MF_TIME_H
#define MF_TIME_H

#include <stddef.h>
#include <stdint.h>

#include "../base/buf.h"
#include "../estimate/estimate.h"
#include "../model/model.h"

/*
 * The least a kernel takes, launch to finish: XLA's measured GEMM table
 * for sm_90 (H100) times its smallest bf16 GEMM, 256 x 256 x 512
 * (67,108,864 FLOP), at 11.5 TFLOP/s, 5.8 microseconds, of which the
 * arithmetic is under 0.1 (tensorflow/tensorflow
 * third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h,
 * kDefaultMatmulPTable); its larger shapes fall on the same line, a
 * fixed time plus the roofline's (docs/time.md).
 */
#define MF_KERNEL_SECONDS 5.8e-6

/* The data types a card computes matmuls in, as catalogue flops names
 * them. */
enum mf_dtype {
	MF_DT_BF16,
	MF_DT_FP16,
	MF_DT_FP8,
	MF_DT_TF32,
	MF_DT_FP32,
	MF_DT_COUNT
};

/* A card's generation: it selects the achieved shares' defaults. */
enum mf_arch {
	MF_ARCH_NONE,
	MF_ARCH_AMPERE,
	MF_ARCH_ADA,
	MF_ARCH_HOPPER,
	MF_ARCH_BLACKWELL,
	MF_ARCH_COUNT
};

/* How the GPUs of one node reach each other. */
enum mf_link {
	MF_LINK_NVSWITCH,
	MF_LINK_NVLINK,
	MF_LINK_PCIE,
	MF_LINK_PCIE_NO_P2P
};

/* The most bytes of one part of a step formula (struct mf_formula_part). */
#define MF_FORMULA_PART_MAX 62

/* Text a step formula shows that is the same for every step on a card;
 * n == 0: not made. */
struct mf_formula_part {
	unsigned char n;
	char s[MF_FORMULA_PART_MAX + 1];
};

/*
 * The parts of its step formulas a card's figures make, formatted once
 * (mf_speed_parts_make) rather than for every answer: the matmuls' " FLOP
 * / (PEAK FLOP/s x SHARE)" at each dtype's peak, float8's " fp8 FLOP /
 * (...)", " B / (BANDWIDTH B/s x SHARE)", the ring's "ring bytes / BW B/s,
 * less what overlaps" within one node and over several, and the kernel
 * launches' " kernels x SECONDS s".
 */
struct mf_speed_parts {
	struct mf_formula_part peak[MF_DT_COUNT];
	struct mf_formula_part peak8, bandwidth, ring[2], kernels;
};

/*
 * A card's speed (the catalogue's figures, design 21); 0 where the
 * catalogue gives none.  A card with flops[bf16] and bandwidth is
 * modelled; one without is timed through relativeThroughput.
 */
struct mf_speed {
	int arch;                   /* enum mf_arch */
	int64_t flops[MF_DT_COUNT]; /* dense FLOP/s a GPU */
	int64_t bandwidth;          /* memory, bytes/s */
	double eff_matmul;          /* achieved share of flops; 0: arch's */
	double eff_memory;          /* of bandwidth; 0: arch's */
	int link;                   /* enum mf_link */
	int64_t link_bw;            /* within a node, bytes/s a GPU, one way */
	int64_t net_bw;             /* between nodes, bytes/s a GPU */
	int format; /* the quantities' enum mf_qty_format, unused */
	/* Made by mf_speed_parts_make once the figures above are final (a
	 * catalogue's, as it is loaded); all zero: not made, and the
	 * formulas format the figures themselves. */
	struct mf_speed_parts parts;
};

/* "bf16", ...; "ampere", ...; "nvswitch", ...: NULL out of range. */
const char *mf_dtype_name(enum mf_dtype d);
const char *mf_arch_name(enum mf_arch a);
const char *mf_link_name(enum mf_link l);
/* The achieved shares of s: its own, else its architecture's (time.c
 * cites the measurements); 0 for MF_ARCH_NONE without its own. */
double mf_speed_matmul(const struct mf_speed *s);
double mf_speed_memory(const struct mf_speed *s);
/* Whether s is modelled: it gives bf16 FLOPS and memory bandwidth. */
int mf_speed_known(const struct mf_speed *s);
/* s->parts from s's figures, which must not change after: a part that
 * does not fit is left unmade. */
void mf_speed_parts_make(struct mf_speed *s);

/*
 * The work of one step of one replica (the tensor x pipeline GPUs that
 * hold one copy of the model), whole, before it is divided over them.
 * Training: one micro-batch of s x b tokens, forward, backward,
 * recomputation and the optimizer step.  Inference: one decode step of
 * concurrency sequences (tokens = concurrency) and, apart, the prefill of
 * one prompt.
 */
struct mf_work {
	enum mf_kind kind;
	enum mf_dtype dtype; /* what the matmuls compute in */
	int64_t tokens;      /* tokens a step of one replica */
	int64_t gpus;        /* GPUs of a replica: tensor x pipeline */
	int64_t tensor;
	/* Matmul FLOPs of the step (training) or of a decode step. */
	double fwd, bwd, rec;
	/* Of those, the FLOPs that run in fp8 on a card with fp8 tensor
	 * cores whatever dtype is: float8's linears (design 22). */
	double fp8;
	/* Bytes the matmuls read and write: the weights each reads, the
	 * inputs and outputs; and every other kernel's bytes (elementwise
	 * and reductions, the loss, the optimizer step, dequantization;
	 * the KV cache a decode step reads). */
	double mm_bytes, bytes;
	double opt_bytes; /* the optimizer step's, which FSDP divides */
	/* Kernels the step launches, each at least MF_KERNEL_SECONDS. */
	double kernels;
	/* Communication of a step, bytes: data parallel's gradients (all
	 * reduced), FSDP's all-gathers of the weights (a pass each: forward,
	 * and backward unless resharding is off) and reduce-scatter of the
	 * gradients, tensor parallel's activations (all-reduced). */
	double grad_bytes, gather_bytes, scatter_bytes, tp_bytes;
	double tp_collectives; /* tensor parallel's all-reduces a step */
	int gathers;           /* FSDP all-gather passes a step: 1 or 2 */
	int64_t shards;        /* FSDP ranks; 1: none */
	/* Inference: the prefill of one prompt of prompt tokens. */
	int64_t prompt;
	double prefill_flops, prefill_bytes;
};

/*
 * The work of one step of w on m (whole, unsharded model; w as placed,
 * fixes applied), whose memory estimate e gives the bytes the weights and
 * a token's KV cache take.  Inference: decode at w->concurrency sequences of
 * context (prompt + output / 2 when the job gives output tokens, else
 * its contextLength).  MF_EINVAL for a workload mf_est_compute refuses.
 */
enum mf_rc mf_work_of(const struct mf_model *m, const struct mf_workload *w,
    const struct mf_estimate *e, struct mf_work *out);

/* Matmul FLOPs of one training step of w on m, by part: what
 * tests/torch/flops.py holds to FlopCounterMode.  Inference: the
 * prefill of one sequence of contextLength tokens and one decode step of
 * one sequence attending to contextLength tokens. */
struct mf_flops {
	double fwd, bwd, rec;
	double prefill, decode;
};
void mf_work_flops(const struct mf_model *m, const struct mf_workload *w,
    struct mf_flops *out);

enum mf_bound { MF_BOUND_COMPUTE, MF_BOUND_MEMORY, MF_BOUND_COMM };
const char *mf_bound_name(enum mf_bound b);

enum mf_step_term { MF_ST_MATMUL, MF_ST_MEMORY, MF_ST_COMM, MF_ST_COUNT };
/* "matmul", "memory", "communication". */
const char *mf_step_term_name(enum mf_step_term t);

/* The step's own figures the terms' formulas show: a GPU's matmul FLOPs,
 * the matmuls' bytes, the other kernels' and the optimizer's bytes, the
 * kernels, a GPU's FLOPs in fp8.  The card's (its peak FLOPS, bandwidth,
 * achieved shares, links) are the card's own (struct mf_speed_parts). */
enum mf_step_fig {
	MF_SF_FLOPS,
	MF_SF_MM_BYTES,
	MF_SF_BYTES,
	MF_SF_KERNELS,
	MF_SF_FP8,
	MF_SF_COUNT
};

/* The most bytes mf_step_formula writes. */
#define MF_STEP_FORMULA_MAX 240

/* One step of a job on a card. */
struct mf_step {
	double seconds;           /* the step, all terms */
	double term[MF_ST_COUNT]; /* seconds of each */
	double tokens_per_second; /* the job's: every replica */
	double mfu;               /* model FLOPs / (seconds x peak), or 0 */
	enum mf_bound bound;      /* the largest term */
	/* What the terms' arithmetic is of: the formulas are written from
	 * these when an answer shows them (mf_step_formula), not for every
	 * candidate. */
	double fig[MF_SF_COUNT];
	/* And the card, the matmuls' dtype and the nodes they are of: the
	 * card's part of the formulas, as it has them made
	 * (mf_speed_parts_make), else written from its figures.  The step's
	 * formulas are not written after the card is gone. */
	const struct mf_speed *card;
	enum mf_dtype dtype;
	int64_t nodes;
};

/*
 * The step of wk on count GPUs of card over nodes nodes (count a multiple
 * of wk->gpus).  A card that is not modelled (mf_speed_known) gives a step
 * of 0 seconds.
 */
void mf_step_of(const struct mf_work *wk, const struct mf_speed *card,
    int64_t count, int64_t nodes, struct mf_step *out);
/*
 * The MFU of a step of wk that takes seconds, on card: the forward and
 * backward's matmul FLOPs a GPU over seconds at card's peak for wk's
 * dtype (bf16's where it has none of that dtype).  0 where card gives no
 * flops: its peak is not known (a card timed through relativeThroughput
 * alone).
 */
double mf_step_mfu(const struct mf_work *wk, const struct mf_speed *card,
    double seconds);
/* Term t's arithmetic, from st's figures, added to b. */
void mf_step_formula(const struct mf_step *st, enum mf_step_term t,
    struct mf_buf *b);

/*
 * Inference: seconds to serve one request of wk->prompt prompt tokens and
 * output tokens at wk->tokens sequences a replica, on one replica of
 * card: its prefill and its share of output decode steps.
 */
double mf_request_seconds(const struct mf_work *wk, const struct mf_speed *card,
    int64_t output);

#endif
