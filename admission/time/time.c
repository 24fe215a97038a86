/*
 * time.c: a step's time on a card (design 21): the matmuls at the card's
 * achieved FLOPS, the other kernels' bytes at its achieved bandwidth, a
 * fixed time each kernel launch costs, and the communication compute does
 * not hide.
 */
#include <assert.h>
#include <math.h>

#include "time.h"
#include "../base/buf.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const char *const dtypes[MF_DT_COUNT] = { "bf16", "fp16", "fp8", "tf32",
	"fp32" };
static const char *const archs[MF_ARCH_COUNT] = { "none", "ampere", "ada",
	"hopper", "blackwell" };
static const char *const links[] = { "nvswitch", "nvlink", "pcie",
	"pcie-no-p2p" };

const char *
mf_dtype_name(enum mf_dtype d)
{
	return (unsigned)d < MF_DT_COUNT ? dtypes[d] : NULL;
}

const char *
mf_arch_name(enum mf_arch a)
{
	return (unsigned)a < MF_ARCH_COUNT ? archs[a] : NULL;
}

const char *
mf_link_name(enum mf_link l)
{
	return (unsigned)l < NELEM(links) ? links[l] : NULL;
}

/*
 * The achieved shares of an architecture, measured on large kernels.
 * matmul: the best bf16 GEMM over the card's dense peak
 * (stas00/ml-engineering compute/accelerator/README.md, "Maximum
 * Achievable Matmul FLOPS comparison table": A100 SXM 86.9%, H100 SXM
 * 80.3%, B200 77.6%); no Ada card is measured there, so Ada takes the
 * lowest of the three.  memory: STREAM triad over the datasheet's
 * bandwidth (te42kyfo/gpu-benches gpu-stream/a100_80.txt 86%, l40.txt 93%,
 * h100_pcie.txt 92%); no Blackwell card is measured there, so it takes
 * the lowest of the HBM cards', the A100's.
 */
static const double arch_matmul[MF_ARCH_COUNT] = { 0, 0.869, 0.776, 0.803,
	0.776 };
static const double arch_memory[MF_ARCH_COUNT] = { 0, 0.86, 0.93, 0.92, 0.86 };

double
mf_speed_matmul(const struct mf_speed *s)
{
	if (s->eff_matmul > 0)
		return s->eff_matmul;
	return (unsigned)s->arch < MF_ARCH_COUNT ? arch_matmul[s->arch] : 0;
}

double
mf_speed_memory(const struct mf_speed *s)
{
	if (s->eff_memory > 0)
		return s->eff_memory;
	return (unsigned)s->arch < MF_ARCH_COUNT ? arch_memory[s->arch] : 0;
}

int
mf_speed_known(const struct mf_speed *s)
{
	return s->flops[MF_DT_BF16] > 0 && s->bandwidth > 0 &&
	    mf_speed_matmul(s) > 0 && mf_speed_memory(s) > 0;
}

const char *
mf_bound_name(enum mf_bound b)
{
	static const char *const names[] = { "compute", "memory",
		"communication" };

	return (unsigned)b < NELEM(names) ? names[b] : NULL;
}

const char *
mf_step_term_name(enum mf_step_term t)
{
	static const char *const names[MF_ST_COUNT] = { "matmul", "memory",
		"communication" };

	return (unsigned)t < MF_ST_COUNT ? names[t] : NULL;
}

/* The FLOPS the step's matmuls run at on s: its dtype's, bf16 where the
 * card has no such tensor cores (fp8 weights are then dequantized). */
static double
peak_of(const struct mf_speed *s, enum mf_dtype d)
{
	assert((unsigned)d < MF_DT_COUNT);
	return (double)(s->flops[d] > 0 ? s->flops[d] : s->flops[MF_DT_BF16]);
}

/*
 * A ring's bytes on the wire a GPU: all-reduce 2 (n - 1) / n of the
 * buffer, all-gather and reduce-scatter (n - 1) / n (Patarasuk and Yuan
 * 2009; NCCL's "bus bandwidth", nccl-tests doc/PERFORMANCE.md).
 */
static double
ring(double bytes, int64_t n, int all_reduce)
{
	if (n <= 1)
		return 0;
	return bytes * (all_reduce ? 2.0 : 1.0) * (double)(n - 1) / (double)n;
}

/*
 * The least an all-reduce takes within a node, whatever its size: what
 * nccl-tests' all_reduce_perf measured for 8 bytes.  Over NVSwitch about
 * 6 microseconds (8 x H100 80GB HBM3, NVIDIA/nccl issue 1259); over PCIe,
 * where GeForce cards go through the host, 42.56 microseconds (8 x RTX
 * 4090, NVIDIA/nccl issue 1530; 8 x RTX 3090 took 54.18, issue 1439).
 * No measurement of an NVLink bridge's was found: it takes NVSwitch's.
 */
static double
link_latency(const struct mf_speed *s)
{
	return s->link == MF_LINK_PCIE || s->link == MF_LINK_PCIE_NO_P2P ?
	    42.56e-6 :
	    6e-6;
}

/* Tensor parallel's all-reduces, a step: their bytes over the node's
 * link, and each its least time. */
static double
tp_comm(const struct mf_work *wk, const struct mf_speed *s)
{
	if (wk->tensor <= 1 || s->link_bw <= 0)
		return 0;
	return ring(wk->tp_bytes, wk->tensor, 1) / (double)s->link_bw +
	    wk->tp_collectives * link_latency(s);
}

/* The bandwidth a ring over count GPUs on nodes nodes runs at: the
 * slowest link it crosses.  The catalogue requires network of every card
 * timed on more GPUs than a node holds (mf_cat_parse); past the largest
 * maxCount, where a card may lack it, the ring keeps its link's. */
static double
ring_bw(const struct mf_speed *s, int64_t nodes)
{
	if (nodes > 1 && s->net_bw > 0 &&
	    (s->link_bw <= 0 || s->net_bw < s->link_bw))
		return (double)s->net_bw;
	return (double)s->link_bw;
}

static double
pos(double x)
{
	return x > 0 ? x : 0;
}

/*
 * The communication of a training step compute does not hide, a GPU:
 * data parallel's all-reduce runs beside the backward (PyTorch DDP's
 * buckets), FSDP's forward all-gather beside the forward and its backward
 * all-gather and reduce-scatter beside the backward (prefetching);
 * tensor parallel's all-reduces sit between a layer's matmuls and hide
 * behind nothing.
 */
static double
train_comm(const struct mf_work *wk, const struct mf_speed *s, int64_t count,
    int64_t nodes, double fwd_s, double bwd_s)
{
	int64_t replicas = count / wk->gpus;
	double bw = ring_bw(s, nodes), t = 0, g;

	if (bw <= 0)
		return tp_comm(wk, s);
	if (wk->shards > 1) {
		/* FSDP shards over every data-parallel rank. */
		g = ring(wk->gather_bytes / (double)wk->gpus, replicas, 0) / bw;
		t += pos(g - fwd_s);
		t += pos(g * (wk->gathers - 1) +
		    ring(wk->scatter_bytes / (double)wk->gpus, replicas, 0) /
		        bw -
		    bwd_s);
	} else if (replicas > 1) {
		t += pos(
		    ring(wk->grad_bytes / (double)wk->gpus, replicas, 1) / bw -
		    bwd_s);
	}
	return t + tp_comm(wk, s);
}

/* Seconds of a kernel class: flops at the achieved FLOPS or bytes at the
 * achieved bandwidth, whichever binds. */
static double
roofline(double flops, double bytes, double fl, double bw)
{
	double c = flops / fl, m = bytes / bw;

	return c > m ? c : m;
}

/* The largest term's bound: matmuls that wait on their bytes (a decode
 * step reading every weight) are memory's. */
static enum mf_bound
bound_of(const double t[MF_ST_COUNT], int mm_on_bytes)
{
	if (t[MF_ST_COMM] > t[MF_ST_MATMUL] && t[MF_ST_COMM] > t[MF_ST_MEMORY])
		return MF_BOUND_COMM;
	if (t[MF_ST_MEMORY] > t[MF_ST_MATMUL] || mm_on_bytes)
		return MF_BOUND_MEMORY;
	return MF_BOUND_COMPUTE;
}

/* The parts of struct mf_speed_parts. */
enum part { P_PEAK, P_PEAK8, P_BANDWIDTH, P_RING, P_KERNELS };

/* "UNIT / (PEAK PER x SHARE)": work over a card's peak at its achieved
 * share. */
static void
rate(struct mf_buf *b, const char *unit, double peak, const char *per,
    double share)
{
	mf_buf_str(b, unit);
	mf_buf_str(b, " / (");
	mf_buf_g(b, peak, 4);
	mf_buf_str(b, per);
	mf_buf_str(b, " x ");
	mf_buf_g(b, share, 3);
	mf_buf_str(b, ")");
}

/* Part k of the formulas of a step on s whose matmuls compute in d, over
 * nodes nodes: written from s's figures. */
static void
write_part(struct mf_buf *b, const struct mf_speed *s, enum part k,
    enum mf_dtype d, int64_t nodes)
{
	switch (k) {
	case P_PEAK8:
	case P_PEAK:
		rate(b, k == P_PEAK8 ? " fp8 FLOP" : " FLOP",
		    peak_of(s, k == P_PEAK8 ? MF_DT_FP8 : d), " FLOP/s",
		    mf_speed_matmul(s));
		break;
	case P_BANDWIDTH:
		rate(b, " B", (double)s->bandwidth, " B/s", mf_speed_memory(s));
		break;
	case P_RING:
		mf_buf_str(b, "ring bytes / ");
		mf_buf_g(b, ring_bw(s, nodes), 4);
		mf_buf_str(b, " B/s, less what overlaps");
		break;
	case P_KERNELS:
		mf_buf_str(b, " kernels x ");
		mf_buf_g(b, MF_KERNEL_SECONDS, 6);
		mf_buf_str(b, " s");
		break;
	}
}

/* Part k on d and nodes, made from s's figures; n 0 when it does not
 * fit. */
static struct mf_formula_part
made(const struct mf_speed *s, enum part k, enum mf_dtype d, int64_t nodes)
{
	struct mf_formula_part p;
	struct mf_buf b;

	mf_buf_fixed(&b, p.s, sizeof(p.s));
	write_part(&b, s, k, d, nodes);
	p.n = b.rc == MF_OK ? (unsigned char)b.len : 0;
	return p;
}

void
mf_speed_parts_make(struct mf_speed *s)
{
	struct mf_speed_parts *p = &s->parts;

	for (int d = 0; d < MF_DT_COUNT; d++)
		p->peak[d] = made(s, P_PEAK, (enum mf_dtype)d, 1);
	p->peak8 = made(s, P_PEAK8, MF_DT_FP8, 1);
	p->bandwidth = made(s, P_BANDWIDTH, MF_DT_BF16, 1);
	p->ring[0] = made(s, P_RING, MF_DT_BF16, 1);
	p->ring[1] = made(s, P_RING, MF_DT_BF16, 2);
	p->kernels = made(s, P_KERNELS, MF_DT_BF16, 1);
}

/* Where mf_speed_parts_make keeps part k on d and nodes. */
static const struct mf_formula_part *
part_of(const struct mf_speed_parts *p, enum part k, enum mf_dtype d,
    int64_t nodes)
{
	switch (k) {
	case P_PEAK:
		assert((unsigned)d < MF_DT_COUNT);
		return &p->peak[d];
	case P_PEAK8:
		return &p->peak8;
	case P_BANDWIDTH:
		return &p->bandwidth;
	case P_RING:
		return &p->ring[nodes > 1];
	default:
		return &p->kernels;
	}
}

/* Part k of st's formulas: as its card has it made, else written now. */
static void
part(struct mf_buf *b, const struct mf_step *st, enum part k)
{
	const struct mf_formula_part *p =
	    part_of(&st->card->parts, k, st->dtype, st->nodes);

	if (p->n > 0)
		mf_buf_add(b, p->s, p->n);
	else
		write_part(b, st->card, k, st->dtype, st->nodes);
}

void
mf_step_formula(const struct mf_step *st, enum mf_step_term t, struct mf_buf *b)
{
	const double *f = st->fig;

	assert(st->card != NULL);
	if (t == MF_ST_MATMUL) {
		mf_buf_str(b, "max(");
		mf_buf_g(b, f[MF_SF_FLOPS] - f[MF_SF_FP8], 4);
		part(b, st, P_PEAK);
		if (f[MF_SF_FP8] > 0) {
			mf_buf_str(b, " + ");
			mf_buf_g(b, f[MF_SF_FP8], 4);
			part(b, st, P_PEAK8);
		}
		mf_buf_str(b, ", ");
		mf_buf_g(b, f[MF_SF_MM_BYTES], 4);
		part(b, st, P_BANDWIDTH);
		mf_buf_str(b, ")");
	} else if (t == MF_ST_MEMORY) {
		mf_buf_g(b, f[MF_SF_BYTES], 4);
		part(b, st, P_BANDWIDTH);
		mf_buf_str(b, " + ");
		/* printf's %.0f: to nearest, ties to even. */
		mf_buf_int(b, (int64_t)nearbyint(f[MF_SF_KERNELS]));
		part(b, st, P_KERNELS);
	} else {
		part(b, st, P_RING);
	}
}

/* The figures of out's formulas: mm the matmul FLOPs of a GPU, bytes
 * the other kernels' and the optimizer's; and what the card's part of
 * them is of. */
static void
figures(const struct mf_work *wk, const struct mf_speed *card, double mm,
    double bytes, int64_t nodes, struct mf_step *out)
{
	double *f = out->fig;

	f[MF_SF_FLOPS] = mm;
	f[MF_SF_MM_BYTES] = wk->mm_bytes / (double)wk->gpus;
	f[MF_SF_BYTES] = bytes;
	f[MF_SF_KERNELS] = wk->kernels;
	f[MF_SF_FP8] = wk->fp8 / (double)wk->gpus;
	out->card = card;
	out->dtype = wk->dtype;
	out->nodes = nodes;
}

/*
 * Seconds of the step's matmul FLOPs, all of a replica's, at s's achieved
 * FLOPS: float8's (wk->fp8, design 22) at the card's fp8 FLOPS, the rest
 * at those of the step's dtype; the achieved share the same for both (no
 * separate fp8 share is measured).
 */
static double
matmul_seconds(const struct mf_work *wk, const struct mf_speed *s)
{
	double mm = wk->fwd + wk->bwd + wk->rec;

	return ((mm - wk->fp8) / peak_of(s, wk->dtype) +
	           wk->fp8 / peak_of(s, MF_DT_FP8)) /
	    mf_speed_matmul(s);
}

void
mf_step_of(const struct mf_work *wk, const struct mf_speed *card, int64_t count,
    int64_t nodes, struct mf_step *out)
{
	double peak = peak_of(card, wk->dtype), g = (double)wk->gpus;
	double fl = peak * mf_speed_matmul(card);
	double bw = (double)card->bandwidth * mf_speed_memory(card);
	double mm = wk->fwd + wk->bwd + wk->rec, fwd_share, opt, c, pass;
	double *t = out->term;

	*out = (struct mf_step){ 0 };
	if (!mf_speed_known(card) || count < wk->gpus)
		return;
	c = wk->fp8 > 0 ? matmul_seconds(wk, card) / g : mm / g / fl;
	t[MF_ST_MATMUL] = c > wk->mm_bytes / g / bw ? c : wk->mm_bytes / g / bw;
	/* FSDP steps each rank's shard of the optimizer state alone. */
	opt = wk->opt_bytes / (wk->shards > 1 ? (double)(count / wk->gpus) : 1);
	t[MF_ST_MEMORY] =
	    (wk->bytes + opt) / g / bw + wk->kernels * MF_KERNEL_SECONDS;
	fwd_share = mm > 0 ? wk->fwd / mm : 1;
	/* The passes' compute hides the collectives; the optimizer's step
	 * waits for the gradients, and hides none. */
	pass = t[MF_ST_MATMUL] + t[MF_ST_MEMORY] - opt / g / bw;
	if (wk->kind == MF_TRAINING)
		t[MF_ST_COMM] = train_comm(wk, card, count, nodes,
		    fwd_share * pass, (1 - fwd_share) * pass);
	else
		t[MF_ST_COMM] = tp_comm(wk, card);
	out->seconds = t[0] + t[1] + t[2];
	out->bound = bound_of(t, c < wk->mm_bytes / g / bw);
	if (out->seconds <= 0)
		return;
	out->tokens_per_second =
	    (double)wk->tokens * (double)(count / wk->gpus) / out->seconds;
	out->mfu = mf_step_mfu(wk, card, out->seconds);
	figures(wk, card, mm / g, (wk->bytes + opt) / g, nodes, out);
}

double
mf_step_mfu(const struct mf_work *wk, const struct mf_speed *card,
    double seconds)
{
	double peak = peak_of(card, wk->dtype);

	if (!(peak > 0) || !(seconds > 0))
		return 0;
	return (wk->fwd + wk->bwd) / (double)wk->gpus / (seconds * peak);
}

double
mf_request_seconds(const struct mf_work *wk, const struct mf_speed *card,
    int64_t output)
{
	struct mf_step st;
	double peak = peak_of(card, wk->dtype), g = (double)wk->gpus;
	double prefill;

	if (!mf_speed_known(card) || wk->tokens <= 0)
		return 0;
	mf_step_of(wk, card, wk->gpus, 1, &st);
	prefill = roofline(wk->prefill_flops / g, wk->prefill_bytes / g,
	    peak * mf_speed_matmul(card),
	    (double)card->bandwidth * mf_speed_memory(card));
	return prefill + (double)output * st.seconds / (double)wk->tokens;
}
