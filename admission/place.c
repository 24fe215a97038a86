/*
 * place.c: the cheapest-to-finish search.
 *
 * Every way of running the job is first listed as a plan: a set of applied
 * fixes, the GPU counts it may run on (the job's own; with fsdp 2 up to
 * the largest maxCount; with count the job's and more) and its memory
 * estimate.  Then every card tries the plans, least cost first, and the
 * best candidate of each card competes for the placement.
 *
 * Counts are not tried one by one.  At fixed fixes the cost to finish on
 * count c, refH x tf / (eff^log2(c) x ie^log2(nodes)) x price / throughput,
 * never falls as c grows and the need per GPU never grows, so a card's best
 * count is the fewest that fit, found from a bound on the estimate and
 * checked by bisection.  It moves up only as far as the limits ask (hours
 * can fall with more GPUs where cost does not) and, where more GPUs cost
 * no more (multiGpuEfficiency 1 within a node), to the count with the most
 * spare memory, which design 6 ranks before fewer GPUs.
 *
 * A plan's counts are the multiples of its step in [lo, hi]: 1 but for a
 * count fix over replicas of tensor x pipeline GPUs, and for a job that
 * runs as Kubernetes pods (job->pods), where each pod takes the same
 * GPUs of one node.
 */
#include "place.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qty.h"
#include "internal.h"

#define GIB (INT64_C(1) << 30)
/*
 * Plans: a training job's fix sets, at most one a pattern of its nine
 * fixes (count among them); an inference job's are fewer (autocast,
 * kvfp8, int8 or int4, count, and tensor over each of its TP counts).
 */
#define MAX_PLANS 256u
/* Tensor-parallel counts a tensor fix tries: 2 up to a node's GPUs. */
#define MAX_TP 10
/* Relative difference under which two costs tie (rank()). */
#define COST_TOL 1e-9
/*
 * Below this multiGpuEfficiency no two counts up to 1024 tie in cost: one
 * more GPU multiplies the cost factor by at least
 * eff^-log2(1024/1023) = 1 + 1.4e-9 at eff = 1 - 1e-6.
 */
#define FLAT_EFFICIENCY (1 - 1e-6)

struct plan {
	unsigned fixes;
	unsigned order; /* mf_fix_order(fixes): the tie-break after cost */
	int sharded;    /* fsdp: the need falls as the count grows */
	int64_t tensor; /* GPUs of a tensor-parallel group: within a node */
	int64_t lo, hi; /* the GPU counts it may run on, multiples of step */
	int64_t step;
	int64_t need; /* bytes per GPU on lo GPUs */
	/* sharded: the need on one GPU and on unboundedly many */
	int64_t one, inf;
	int64_t bound; /* no count of the plan needs less: need, or inf */
	struct mf_est_split split; /* sharded: est taken apart, for need_at */
	double time_factor;
	/* The cost factor on lo GPUs of one node: the least there is. */
	double k_lo;
	/* A vllm job's need on a card of each tier of vLLM's defaults less
	 * need (mf_vllm_tier; 0 where the job gives both settings).  The
	 * card's memory outside PyTorch is added to it (card_delta). */
	int64_t tier_delta[MF_VLLM_TIERS];
	const struct mf_estimate *est; /* of the workload on lo GPUs */
};

/* x^log2(n) for n up to MF_CAT_MAX_COUNT, worked out when first asked. */
struct powers {
	double v[MF_CAT_MAX_COUNT + 1];
	uint64_t known[MF_CAT_MAX_COUNT / 64 + 1];
};

/* Sets of plans, a bit each by its index in the search's list. */
#define SET_WORDS (MAX_PLANS / 64)
struct plan_set {
	uint64_t w[SET_WORDS];
};

struct search {
	const struct mf_job *job;
	const struct mf_catalog *cat;
	double headroom;   /* the share of a card kept free: mf_headroom */
	int64_t keep;      /* mf_cat_keep(headroom) */
	double ref_hours;  /* referenceHours, or 1 for ranking only */
	int64_t max_count; /* the largest maxCount of the catalogue */
	int64_t node;      /* the most GPUs a node of the catalogue holds */
	int64_t pods;      /* job->pods */
	unsigned allowed;  /* fixes of allowedFixes admission may apply */
	size_t ntp;        /* tensor-parallel counts the model takes */
	int64_t tp[MAX_TP];
	int flat;    /* multiGpuEfficiency so near 1 that counts may tie */
	int limited; /* the job has a limit */
	size_t nplan;
	struct plan plan[MAX_PLANS];
	struct mf_estimate est[MAX_PLANS]; /* plan[i].est, in list order */
	/*
	 * The plans' bounds, distinct and rising, and for each the plans
	 * whose bound is at most it: a card tries only the plans its memory
	 * may hold, found by bisection, not by asking every plan.
	 */
	size_t nbound;
	int64_t bound[MAX_PLANS];
	struct plan_set within[MAX_PLANS];
	/* The cheapest candidate that fit in memory, limits aside. */
	int have_fit;
	struct mf_placement cheapest_fit;
	/* eff^log2(count) and ie^log2(nodes) as power() works them out */
	struct powers gpu_speedup, node_speedup;
};

/* A card as the search tries it. */
struct card {
	const struct mf_gpu *g;
	int64_t usable; /* bytes a GPU holds: all of them without a model */
	int64_t most;   /* the most GPUs the job may take of it */
	double unit;    /* cost over cost factor: price / throughput */
};

const char *
mf_limit_name(enum mf_limit limit)
{
	switch (limit) {
	case MF_LIMIT_HOURLY_PRICE:
		return "limits.maxHourlyPrice";
	case MF_LIMIT_COST:
		return "limits.maxCost";
	case MF_LIMIT_DEADLINE:
		return "limits.deadlineHours";
	default:
		return NULL;
	}
}

int64_t
mf_floor_for(int64_t bytes, double headroom)
{
	double gib = ceil((double)bytes / (1.0 - headroom) / (double)GIB);

	/* Design 2: a byte size fits in 63 bits; a floor past it is no
	 * quantity at all, not the largest one. */
	if (bytes < 0 || !(gib <= (double)(INT64_MAX / GIB)))
		return -1;
	return (int64_t)gib * GIB;
}

void
mf_job_bind(struct mf_job *job, const struct mf_catalog *cat)
{
	job->work.graph_reserve = cat->cuda_graph_reserve;
}

/* A serving engine sizes the card: its utilization, not the headroom. */
static int
engine_budget(const struct mf_workload *w)
{
	return w->kind == MF_INFERENCE && w->server == MF_SERVER_VLLM;
}

/* vLLM's tier of defaults on g: by its memory, and whether it is an A100
 * (vLLM tells by the device name; here the name or the product label). */
static int
card_tier(const struct mf_gpu *g)
{
	int a100 = strstr(g->name, "A100") != NULL;

	for (size_t i = 0; !a100 && i < g->nlabels; i++)
		a100 = strstr(g->labels[i].value, "A100") != NULL;
	return mf_vllm_tier(g->cuda_memory > 0 ? g->cuda_memory : g->memory,
	    a100);
}

/* " (max_position_embeddings)" and so on: where m's limit comes from. */
static void
context_source(const struct mf_model *m, char *buf, size_t size)
{
	if (m->rope_original > 0)
		snprintf(buf, size,
		    "rope_scaling original_max_position_embeddings %lld x factor %g",
		    (long long)m->rope_original, m->rope_factor);
	else if (m->rope_factor != 1)
		snprintf(buf, size,
		    "max_position_embeddings %lld x rope_scaling factor %g",
		    (long long)m->positions, m->rope_factor);
	else
		snprintf(buf, size, "max_position_embeddings");
}

enum mf_rc
mf_job_check_model(const struct mf_job *job, struct mf_error *err)
{
	const struct mf_model *m = &job->model;
	int train = job->work.kind == MF_TRAINING;
	int64_t tokens = train ? job->work.seq_len : job->work.context_len;
	char from[96];

	if (job->model_source == MF_MODEL_NONE)
		return MF_OK;
	if (!train && m->quant_unknown[0] != '\0' &&
	    job->work.weights_dtype == MF_WD_DEFAULT)
		return mf_error_set(err, MF_EINVAL, "spec.model", 0, 0,
		    "quantization_config.quant_method '%s' is not a format memfloor knows (known: %s): give spec.workload.weightsDtype",
		    m->quant_unknown, mf_quant_methods());
	if (m->max_context == 0 || tokens <= m->max_context)
		return MF_OK;
	context_source(m, from, sizeof(from));
	return mf_error_set(err, MF_EINVAL,
	    train ? "spec.workload.sequenceLength" :
	            "spec.workload.contextLength",
	    train ? job->seq_line : job->context_line,
	    train ? job->seq_column : job->context_column,
	    "%lld tokens is more than the model's context limit, %lld (%s)",
	    (long long)tokens, (long long)m->max_context, from);
}

/* Tokens a sequence may hold: v, no more than the model takes. */
static int64_t
context_cap(const struct search *s, int64_t v)
{
	int64_t max = s->job->model.max_context;

	return max > 0 && v > max ? max : v;
}

void
mf_work_bind_card(struct mf_workload *w, const struct mf_gpu *g)
{
	if (!engine_budget(w))
		return;
	mf_vllm_defaults(w, card_tier(g));
	w->non_torch = g->non_torch;
	w->all_reduce = g->all_reduce;
}

int
mf_job_serves(const struct mf_job *job)
{
	return job->work.kind == MF_INFERENCE &&
	    job->model_source != MF_MODEL_NONE;
}

double
mf_headroom(const struct mf_catalog *cat, const struct mf_workload *w)
{
	if (engine_budget(w))
		return 1.0 - w->gpu_util;
	return cat->headroom;
}

const struct mf_gpu *
mf_smallest_fit(const struct mf_catalog *cat, int64_t bytes, double headroom)
{
	const struct mf_gpu *best = NULL, *g;

	for (size_t i = 0; i < cat->ngpus; i++) {
		g = &cat->gpus[i];
		if (mf_cat_usable_at(g, headroom) < bytes)
			continue;
		if (best == NULL || g->memory < best->memory ||
		    (g->memory == best->memory &&
		        (g->hourly_price < best->hourly_price ||
		            (g->hourly_price == best->hourly_price &&
		                strcmp(g->name, best->name) < 0))))
			best = g;
	}
	return best;
}

int
mf_tensor_valid(const struct mf_model *m, int64_t t)
{
	return t >= 1 && m->kv_heads >= 1 && m->heads % t == 0 &&
	    (m->kv_heads % t == 0 || t % m->kv_heads == 0);
}

/* The valid tensor-parallel size nearest t below it (*below, 0 when
 * none) and above it (*above, 0 past the attention heads). */
static void
nearest_tensor(const struct mf_model *m, int64_t t, int64_t *below,
    int64_t *above)
{
	*below = *above = 0;
	for (int64_t v = t - 1; v >= 1 && *below == 0; v--)
		if (mf_tensor_valid(m, v))
			*below = v;
	for (int64_t v = t + 1; v <= m->heads && *above == 0; v++)
		if (mf_tensor_valid(m, v))
			*above = v;
}

enum mf_rc
mf_job_check_layout(const struct mf_job *job, struct mf_error *err)
{
	const struct mf_model *m = &job->model;
	int64_t t = job->work.tensor, below, above;
	char near[64];

	if (job->model_source == MF_MODEL_NONE ||
	    job->model_source == MF_MODEL_URL || t <= 1 ||
	    mf_tensor_valid(m, t))
		return MF_OK;
	nearest_tensor(m, t, &below, &above);
	/* The nearer of the two, both when they are as near. */
	if (above == 0 || (below != 0 && t - below < above - t))
		snprintf(near, sizeof(near), "%lld", (long long)below);
	else if (below == 0 || above - t < t - below)
		snprintf(near, sizeof(near), "%lld", (long long)above);
	else
		snprintf(near, sizeof(near), "%lld or %lld", (long long)below,
		    (long long)above);
	return mf_error_set(err, MF_EINVAL, "spec.workload.parallelism.tensor",
	    0, 0,
	    "is %lld, which vLLM and the training frameworks do not start: tensor parallel splits the attention heads, so it must divide the model's %lld attention heads, and its %lld KV heads must divide it or it them; the nearest that does is %s",
	    (long long)t, (long long)m->heads, (long long)m->kv_heads, near);
}

/* Whether two costs are equal but for rounding. */
static int
ties(double a, double b)
{
	double hi = a > b ? a : b;

	return fabs(a - b) <= COST_TOL * hi;
}

/* <0 when a ranks before b: cost, the fixes that change least (design 6,
 * mf_fix_order), more spare, fewer GPUs, name. */
static int
rank(const struct mf_placement *a, const struct mf_placement *b)
{
	if (!ties(a->cost_per_ref_hour, b->cost_per_ref_hour))
		return a->cost_per_ref_hour < b->cost_per_ref_hour ? -1 : 1;
	if (a->order != b->order)
		return a->order < b->order ? -1 : 1;
	if (a->spare != b->spare)
		return a->spare > b->spare ? -1 : 1;
	if (a->count != b->count)
		return a->count < b->count ? -1 : 1;
	return strcmp(a->gpu->name, b->gpu->name);
}

static double
time_factor(const struct mf_catalog *cat, unsigned fixes)
{
	double f = 1.0;

	for (int i = 0; i < MF_FIX_COUNT; i++)
		if (fixes & MF_FIXBIT(i))
			f *= cat->time_factor[i];
	return f;
}

/* x^log2(n), kept in t->v[n] for the counts a card may take, since cards
 * try the same few; a bit a count says which are worked out, so that a
 * search starts by clearing 136 bytes, not the 8 KiB of the values. */
static double
power(struct powers *t, double x, int64_t n)
{
	uint64_t bit;

	if (n > MF_CAT_MAX_COUNT)
		return pow(x, log2((double)n));
	bit = UINT64_C(1) << (n % 64);
	if (!(t->known[n / 64] & bit)) {
		t->v[n] = pow(x, log2((double)n));
		t->known[n / 64] |= bit;
	}
	return t->v[n];
}

/* refH x tf / (eff^log2(count) x ie^log2(nodes)): cost is this times
 * price / throughput, hours this / (throughput x count). */
static double
cost_factor(struct search *s, double tf, int64_t count, int64_t nodes)
{
	double k = s->ref_hours * tf /
	    power(&s->gpu_speedup, s->cat->multi_gpu_efficiency, count);

	if (nodes > 1)
		k /= power(&s->node_speedup, s->cat->inter_node_efficiency,
		    nodes);
	return k;
}

/*
 * The nodes count GPUs of g span: as many as they fill, or with pods,
 * those the pods fill, each pod's count / pods GPUs on one node.
 */
static int64_t
nodes_of(const struct search *s, const struct mf_gpu *g, int64_t count)
{
	int64_t per;

	if (s->pods == 0)
		return count <= g->gpus_per_node ? 1 : mf_cat_nodes(g, count);
	per = g->gpus_per_node / (count / s->pods);
	return (s->pods + per - 1) / per;
}

/*
 * The most GPUs the job may take of g: its maxCount; with pods, the most
 * that many pods of one size may take, each on one node, on at most
 * maxNodes nodes: ceil(pods / floor(gpusPerNode / G)) <= maxNodes holds
 * for G <= gpusPerNode / ceil(pods / maxNodes).  0 when none.
 */
static int64_t
most_of(const struct search *s, const struct mf_gpu *g)
{
	int64_t q, per_pod;

	if (s->pods == 0)
		return g->max_count;
	q = (s->pods + g->max_nodes - 1) / g->max_nodes;
	per_pod = g->gpus_per_node / q;
	if (per_pod > g->max_count / s->pods)
		per_pod = g->max_count / s->pods;
	return per_pod * s->pods;
}

/* The bytes of g the job may take: vLLM's budget is a share of the
 * memory CUDA reports, cudaMemory. */
static int64_t
card_usable(const struct search *s, const struct mf_gpu *g)
{
	struct mf_gpu t = *g;

	if (engine_budget(&s->job->work) && g->cuda_memory > 0)
		t.memory = g->cuda_memory;
	return mf_cat_usable_keep(&t, s->keep);
}

/*
 * What a vllm job needs on g beyond its plan's estimate: the profile run
 * at g's defaults (tier_delta) and g's memory outside PyTorch, at the
 * plan's tensor parallel; never below 0, so a card's usable bytes bound
 * its plans from above (plans_within).  0 for any other job.
 */
static int64_t
card_delta(const struct search *s, const struct mf_gpu *g,
    const struct plan *pl)
{
	int t;

	if (!engine_budget(&s->job->work) ||
	    s->job->model_source == MF_MODEL_NONE)
		return 0;
	t = card_tier(g);
	assert(t >= 0 && t < MF_VLLM_TIERS);
	return mf_cadd(pl->tier_delta[t],
	    pl->tensor > 1 ? mf_cadd(g->non_torch, g->all_reduce) :
	                     g->non_torch);
}

/* Card g as the search tries it; 0 when the job can take none of it. */
static int
card_of(const struct search *s, const struct mf_gpu *g, struct card *cd)
{
	cd->g = g;
	cd->usable = INT64_MAX;
	if (s->job->model_source != MF_MODEL_NONE)
		cd->usable = card_usable(s, g);
	cd->most = most_of(s, g);
	cd->unit = mf_cat_unit_cost(g);
	return g->memory >= s->job->min_memory && cd->most > 0;
}

/* The most GPUs pl may run on of cd's card: a multiple of its step. */
static int64_t
plan_hi(const struct plan *pl, const struct card *cd)
{
	int64_t hi = pl->hi < cd->most ? pl->hi : cd->most;

	return pl->step > 1 ? hi - hi % pl->step : hi;
}

/* Bytes per GPU of plan pl on count GPUs: mf_est_per_gpu, from its
 * parts. */
static int64_t
need_at(const struct plan *pl, int64_t count)
{
	const struct mf_est_split *sp = &pl->split;
	int64_t sum = sp->rest;

	if (!pl->sharded || count == pl->lo)
		return pl->need;
	assert(sp->nparts <= MF_EST_MAX_PARTS);
	for (int i = 0; i < sp->nparts; i++)
		sum += sp->part[i] / count + (sp->part[i] % count != 0);
	return sum;
}

/* p: plan pl on count GPUs of the card over nodes, where it needs need
 * bytes a GPU and its cost factor is k. */
static void
fill(const struct search *s, const struct card *cd, const struct plan *pl,
    int64_t count, int64_t nodes, int64_t need, double k,
    struct mf_placement *p)
{
	const struct mf_gpu *g = cd->g;

	p->gpu = g;
	p->count = count;
	p->nodes = nodes;
	p->fixes = pl->fixes;
	p->order = pl->order;
	p->need = need;
	p->spare = (double)(g->memory - need) / (double)g->memory;
	p->hourly_price = g->hourly_price * (double)count;
	p->cost = k * cd->unit;
	p->hours = k / (g->throughput * (double)count);
	p->cost_per_ref_hour = p->cost / s->ref_hours;
	p->reference_hours = 0;
	if (s->job->reference_hours > 0 && pl->time_factor != 1.0)
		p->reference_hours = s->job->reference_hours * pl->time_factor;
	p->max_seqs = p->max_context = 0;
}

/* p: plan pl on count GPUs of the card, where it needs need bytes a GPU. */
static void
candidate_of(struct search *s, const struct card *cd, const struct plan *pl,
    int64_t count, int64_t need, struct mf_placement *p)
{
	int64_t nodes = nodes_of(s, cd->g, count);

	fill(s, cd, pl, count, nodes, need,
	    cost_factor(s, pl->time_factor, count, nodes), p);
}

/* An inference placement's serving figures (design 14), once it is kept:
 * the candidates the search drops never need them. */
static void
serve_figures(const struct search *s, const struct plan *pl,
    struct mf_placement *p)
{
	int64_t usable;

	if (!mf_job_serves(s->job))
		return;
	usable = card_usable(s, p->gpu) - card_delta(s, p->gpu, pl);
	p->max_seqs = mf_est_max_seqs(pl->est, usable);
	p->max_context = context_cap(s,
	    mf_est_max_context(pl->est, usable, s->job->work.concurrency));
}

static void
candidate(struct search *s, const struct card *cd, const struct plan *pl,
    int64_t count, struct mf_placement *p)
{
	candidate_of(s, cd, pl, count,
	    mf_cadd(need_at(pl, count), card_delta(s, cd->g, pl)), p);
}

static enum mf_limit
violated(const struct mf_job *job, const struct mf_placement *p)
{
	if (job->max_hourly_price >= 0 &&
	    p->hourly_price > job->max_hourly_price)
		return MF_LIMIT_HOURLY_PRICE;
	if (job->max_cost >= 0 && p->cost > job->max_cost)
		return MF_LIMIT_COST;
	if (job->deadline_hours >= 0 && p->hours > job->deadline_hours)
		return MF_LIMIT_DEADLINE;
	return MF_LIMIT_NONE;
}

/* The limits that only more GPUs break: hourly price and cost. */
static int
over_price(const struct mf_job *job, const struct mf_placement *p)
{
	enum mf_limit l = violated(job, p);

	return l == MF_LIMIT_HOURLY_PRICE || l == MF_LIMIT_COST;
}

static int
late(const struct mf_job *job, const struct mf_placement *p)
{
	return job->deadline_hours >= 0 && p->hours > job->deadline_hours;
}

/*
 * The fewest GPUs in [pl->lo, hi] on which pl needs at most usable bytes,
 * or 0.  The need on c GPUs is rest + sum ceil(b_i / c) (mf_est_per_gpu),
 * so with one = need(1) and inf = need(unbounded) = rest + (the number of
 * b_i), ceil(b / c) - 1 <= (b - 1) / c gives need(c) <= inf + (one - inf)
 * / c: c = ceil((one - inf) / (usable - inf)) fits, and since need(c) >=
 * rest + sum b_i / c, the fewest is nearly always c itself.  The need
 * never grows with the count, so the fewest multiple of the step is the
 * fewest count rounded up to one.
 */
static int64_t
fewest_fit(const struct plan *pl, int64_t usable, int64_t hi)
{
	int64_t lo = pl->lo, up = hi, mid, a, b;

	if (lo > hi || usable < pl->bound)
		return 0;
	if (!pl->sharded || lo == hi)
		return need_at(pl, lo) <= usable ? lo : 0;
	if (usable > pl->inf) {
		a = pl->one - pl->inf;
		b = usable - pl->inf;
		if (a / b + (a % b != 0) <= hi)
			up = a / b + (a % b != 0);
	}
	if (up < lo)
		up = lo;
	if (up == hi && need_at(pl, hi) > usable)
		return 0;
	if (up > lo && need_at(pl, up - 1) <= usable)
		for (up--; lo < up;) {
			mid = lo + (up - lo) / 2;
			if (need_at(pl, mid) <= usable)
				up = mid;
			else
				lo = mid + 1;
		}
	if (pl->step > 1)
		up += (pl->step - up % pl->step) % pl->step;
	return up <= hi ? up : 0;
}

static void
note_fit(struct search *s, const struct mf_placement *p)
{
	if (!s->limited)
		return; /* the best placement is the cheapest fit */
	if (!s->have_fit || rank(p, &s->cheapest_fit) < 0) {
		s->cheapest_fit = *p;
		s->have_fit = 1;
	}
}

/*
 * The last count from c, a multiple of st up to hi, on as many nodes of
 * the card as c: nodes_of never falls as the count grows.
 */
static int64_t
range_end(const struct search *s, const struct card *cd, int64_t c, int64_t hi,
    int64_t st)
{
	int64_t nodes = nodes_of(s, cd->g, c), end, mid;

	if (s->pods == 0) {
		end = nodes * cd->g->gpus_per_node;
		end = end < hi ? end : hi;
		return end - end % st;
	}
	for (end = hi; c < end;) {
		mid = c + ((end - c) / st + 1) / 2 * st;
		if (nodes_of(s, cd->g, mid) == nodes)
			c = mid;
		else
			end = mid - st;
	}
	return c;
}

/*
 * The fewest GPUs from c, whose candidate p is late but within price,
 * up to hi that meet every limit; 0 when none does.  Hourly price and cost
 * only grow with the count, so the first count over them ends the search.
 * Hours do not only fall: within one node count the speed goes as
 * c^(1 + log2 eff), which rises when eff > 0.5, and each step to more
 * nodes multiplies it by ie^(log2 of the step).  So every node count's
 * range of counts is searched on its own, its fastest count being its last
 * (eff > 0.5) or its first.  Counts are multiples of the plan's step.
 */
static int64_t
meet_deadline(struct search *s, const struct card *cd, const struct plan *pl,
    int64_t c, int64_t hi, struct mf_placement *p)
{
	int rising = s->cat->multi_gpu_efficiency > 0.5;
	int64_t st = pl->step, end, mid, lo;

	for (c += st; c <= hi; c = end + st) {
		end = range_end(s, cd, c, hi, st);
		candidate(s, cd, pl, rising ? end : c, p);
		if (late(s->job, p) && over_price(s->job, p))
			return 0;
		if (late(s->job, p))
			continue;
		for (lo = c; rising && lo < end;) {
			mid = lo + (end - lo) / st / 2 * st;
			candidate(s, cd, pl, mid, p);
			if (late(s->job, p))
				lo = mid + st;
			else
				end = mid;
		}
		candidate(s, cd, pl, rising ? end : c, p);
		return over_price(s->job, p) ? 0 : p->count;
	}
	return 0;
}

/* Whether the candidate of pl on count GPUs of the card ties cost factor
 * k and, with limits, meets them. */
static int
tie_ok(struct search *s, const struct card *cd, const struct plan *pl,
    int64_t count, double k, int limits)
{
	struct mf_placement p;

	candidate(s, cd, pl, count, &p);
	return ties(cost_factor(s, pl->time_factor, count, p.nodes), k) &&
	    (!limits || violated(s->job, &p) == MF_LIMIT_NONE);
}

/*
 * With s->flat, counts above c may cost the same as c, and then the most
 * spare memory ranks first, then the fewer GPUs (design 6): the best is
 * the fewest GPUs that reach the least need of the counts up to hi that
 * tie c in cost (and meet the limits, which c does).  Ties and limits
 * hold on a range of counts from c: cost and hourly price never fall, and
 * a tie on more GPUs takes fewer hours.
 */
static int64_t
widest_tie(struct search *s, const struct card *cd, const struct plan *pl,
    int64_t c, int64_t hi, int limits)
{
	double k = cost_factor(s, pl->time_factor, c, nodes_of(s, cd->g, c));
	int64_t st = pl->step, lo = c, mid, least;

	while (lo < hi) {
		mid = lo + ((hi - lo) / st + 1) / 2 * st;
		if (tie_ok(s, cd, pl, mid, k, limits))
			lo = mid;
		else
			hi = mid - st;
	}
	least = need_at(pl, lo);
	for (hi = lo, lo = c; lo < hi;) {
		mid = lo + (hi - lo) / st / 2 * st;
		if (need_at(pl, mid) == least)
			hi = mid;
		else
			lo = mid + st;
	}
	return hi;
}

/*
 * Whether a candidate on count GPUs of best's card with this cost, fixes
 * and need ranks no better than best by rank()'s keys.
 */
static int
ranks_after(double cost, unsigned order, int64_t need, int64_t count,
    const struct mf_placement *best)
{
	double memory = (double)best->gpu->memory;
	double spare = (double)(best->gpu->memory - need) / memory;

	if (!ties(cost, best->cost))
		return cost > best->cost;
	if (order != best->order)
		return order > best->order;
	if (spare != best->spare)
		return spare < best->spare;
	return count >= best->count;
}

/*
 * The best candidate p of plan pl on the card within the limits; 0 if
 * none, or if it ranks no better than best (when not NULL).  The best
 * that fits, limits aside, is noted for the rejection's reason.  Counts
 * above the fewest cost more, so the fewest decides against best, but for
 * cost alone where counts may tie (s->flat).
 */
static int
try_plan(struct search *s, const struct card *cd, const struct plan *pl,
    const struct mf_placement *best, struct mf_placement *p)
{
	const struct mf_gpu *g = cd->g;
	int64_t hi, fewest, c, need, nodes, delta;
	double k, cost;

	if (pl->tensor > g->gpus_per_node)
		return 0;
	hi = plan_hi(pl, cd);
	delta = card_delta(s, g, pl);
	fewest = fewest_fit(pl, cd->usable - delta, hi);
	if (fewest == 0)
		return 0;
	need = mf_cadd(need_at(pl, fewest), delta);
	nodes = nodes_of(s, g, fewest);
	k = cost_factor(s, pl->time_factor, fewest, nodes);
	cost = k * cd->unit;
	if (best != NULL &&
	    (s->flat ? cost > best->cost && !ties(cost, best->cost) :
	               ranks_after(cost, pl->order, need, fewest, best)))
		return 0;
	if (s->flat)
		candidate(s, cd, pl, widest_tie(s, cd, pl, fewest, hi, 0), p);
	else
		fill(s, cd, pl, fewest, nodes, need, k, p);
	note_fit(s, p);
	if (violated(s->job, p) == MF_LIMIT_NONE)
		return 1;
	candidate(s, cd, pl, fewest, p);
	c = fewest;
	if (over_price(s->job, p))
		return 0;
	if (late(s->job, p))
		c = meet_deadline(s, cd, pl, fewest, hi, p);
	if (c == 0)
		return 0;
	if (s->flat)
		candidate(s, cd, pl, widest_tie(s, cd, pl, c, hi, 1), p);
	return 1;
}

/* The plans a card of usable bytes may hold; NULL when none. */
static const struct plan_set *
plans_within(const struct search *s, int64_t usable)
{
	size_t lo = 0, hi = s->nbound, mid;

	/* The first bound above usable; the one before it is the last at
	 * most usable. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		assert(mid < MAX_PLANS);
		if (s->bound[mid] <= usable)
			lo = mid + 1;
		else
			hi = mid;
	}
	assert(lo <= MAX_PLANS);
	return lo == 0 ? NULL : &s->within[lo - 1];
}

/*
 * Best candidate of card g over the search's plans; 0 if none fits within
 * the limits, else *which is the plan it is of.  The plans are in order of
 * least cost: once one's least cost is above the best so far, so is every
 * later one's; one whose fixes change more than the best's needs a lower
 * cost to win.  Only the plans the card's memory may hold are tried.
 */
static int
best_on(struct search *s, const struct mf_gpu *g,
    const struct mf_placement *bar, struct mf_placement *best,
    const struct plan **which)
{
	const struct plan_set *set;
	const struct plan *pl;
	struct mf_placement p;
	struct card cd;
	double least;
	int found = 0;

	if (!card_of(s, g, &cd))
		return 0;
	set = plans_within(s, cd.usable);
	for (size_t k = 0; set != NULL && k * 64 < s->nplan; k++) {
		/* A bit of word k is plan k * 64 + its place. */
		assert(k < SET_WORDS && k * 64 + 63 < MAX_PLANS);
		for (uint64_t m = set->w[k]; m != 0; m &= m - 1) {
			pl = &s->plan[k * 64 + (size_t)__builtin_ctzll(m)];
			least = pl->k_lo * cd.unit;
			if (bar != NULL && least > bar->cost &&
			    !ties(least, bar->cost))
				return found;
			if (found && least > best->cost &&
			    !ties(least, best->cost))
				return 1;
			if (found && pl->order > best->order &&
			    (least > best->cost || ties(least, best->cost)))
				continue;
			if (try_plan(s, &cd, pl, found ? best : NULL, &p) &&
			    (!found || rank(&p, best) < 0)) {
				*best = p;
				*which = pl;
				found = 1;
			}
		}
	}
	return found;
}

/* A candidate as the search keeps it: with the plan it is of. */
struct kept {
	struct mf_placement p;
	const struct plan *pl;
};

/* Insert c into the ranked list top[0..*n), keeping at most max. */
static void
keep_top(struct kept *top, size_t *n, size_t max, const struct kept *c)
{
	size_t i = *n;

	if (i == max && rank(&c->p, &top[max - 1].p) >= 0)
		return;
	if (i == max)
		i--;
	else
		(*n)++;
	while (i > 0 && rank(&c->p, &top[i - 1].p) < 0) {
		top[i] = top[i - 1];
		i--;
	}
	top[i] = *c;
}

/* Plan order: least cost factor first, then the fixes that change least. */
static int
by_least(const void *pa, const void *pb)
{
	const struct plan *a = pa, *b = pb;

	if (!ties(a->k_lo, b->k_lo))
		return a->k_lo < b->k_lo ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/*
 * The GPU counts a fix set may run on, w being the workload with the set
 * applied: the job's own; with fsdp (and no count asked for) 2 up to the
 * largest maxCount in the catalogue; with tensor a replica of tp x
 * pipeline GPUs; with count the job's and more, in whole replicas.  As
 * Kubernetes pods, a count splits into pods of whole tensor-parallel
 * groups (count: of whole replicas).  pin_lo > 0 pins them to pin_lo up
 * to pin_hi.  lo > hi when no count does.
 */
static void
counts(const struct search *s, const struct mf_workload *w, unsigned fixes,
    int64_t tp, int64_t pin_lo, int64_t pin_hi, struct plan *pl)
{
	const struct mf_job *job = s->job;
	int64_t replica = w->tensor * w->pipeline;
	int replicas = (fixes & MF_FIXBIT(MF_FIX_REPLICAS)) != 0;

	pl->lo = pl->hi = job->count;
	pl->step = replicas ? replica : 1;
	if ((fixes & MF_FIXBIT(MF_FIX_FSDP)) && !job->count_given) {
		pl->lo = 2;
		pl->hi = s->max_count < 2 ? 2 : s->max_count;
	}
	if (fixes & MF_FIXBIT(MF_FIX_TENSOR))
		pl->lo = pl->hi = tp * w->pipeline;
	if (replicas)
		pl->hi = s->max_count;
	if (pin_lo > 0) {
		pl->lo = pin_lo;
		pl->hi = pin_hi;
	}
	if (s->pods > 0)
		pl->step = s->pods * (replicas ? replica : w->tensor);
	pl->lo += (pl->step - pl->lo % pl->step) % pl->step;
	pl->hi -= pl->hi % pl->step;
}

static void
plan_costs(struct search *s, struct plan *pl)
{
	pl->time_factor = time_factor(s->cat, pl->fixes);
	pl->k_lo = cost_factor(s, pl->time_factor, pl->lo, 1);
}

/*
 * Workload w (the job's, or one a fix entry changed) with fixes applied,
 * on its counts (tp: a tensor fix's; lo > 0: the counts lo to hi instead),
 * its estimate in *est; MF_ERANGE on overflow.  A job without a model
 * needs its floor at any count.
 */
/*
 * est of w, and for a vllm job pl's tier deltas: the estimate is made at
 * the defaults of a card of no known tier and without the memory outside
 * PyTorch, which cards add (card_delta).
 */
static enum mf_rc
tier_deltas(const struct search *s, struct mf_workload w,
    struct mf_estimate *est, struct plan *pl)
{
	struct mf_workload t;
	struct mf_estimate e;
	int base = mf_vllm_tier(0, 0);

	if (engine_budget(&w))
		w.non_torch = w.all_reduce = 0;
	t = w;
	mf_vllm_defaults(&w, base);
	if (mf_est_compute(&s->job->model, &w, est) != MF_OK)
		return MF_ERANGE;
	for (int i = 0; engine_budget(&w) && i < MF_VLLM_TIERS; i++) {
		struct mf_workload x = t;

		if (i == base)
			continue;
		mf_vllm_defaults(&x, i);
		if (mf_est_compute(&s->job->model, &x, &e) != MF_OK)
			return MF_ERANGE;
		/* More tokens and sequences never need less: a card's need
		 * is never below the plan's (card_delta, plans_within). */
		if (e.per_gpu > est->per_gpu)
			pl->tier_delta[i] = e.per_gpu - est->per_gpu;
	}
	return MF_OK;
}

static enum mf_rc
plan_of(struct search *s, struct mf_workload w, unsigned fixes, int64_t tp,
    int64_t lo, int64_t hi, struct mf_estimate *est, struct plan *pl)
{
	memset(pl, 0, sizeof(*pl));
	pl->fixes = fixes;
	pl->order = mf_fix_order(fixes);
	mf_fix_apply(&w, fixes, tp);
	counts(s, &w, fixes, tp, lo, hi, pl);
	pl->tensor = w.tensor;
	pl->sharded = (fixes & MF_FIXBIT(MF_FIX_FSDP)) != 0;
	pl->est = est;
	if (s->job->model_source == MF_MODEL_NONE) {
		memset(est, 0, sizeof(*est));
		pl->need = pl->bound = s->job->min_memory;
		plan_costs(s, pl);
		return MF_OK;
	}
	if (pl->sharded)
		w.shard_gpus = pl->lo;
	if (tier_deltas(s, w, est, pl) != MF_OK)
		return MF_ERANGE;
	pl->need = est->per_gpu;
	mf_est_split(est, &pl->split);
	pl->one = mf_est_per_gpu(est, 1);
	pl->inf = mf_est_per_gpu(est, INT64_MAX);
	pl->bound = pl->sharded && pl->lo < pl->hi ? pl->inf : pl->need;
	plan_costs(s, pl);
	return MF_OK;
}

static int
by_value(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;

	return a < b ? -1 : a > b;
}

/* s->bound and s->within for the plans as listed. */
static void
index_bounds(struct search *s)
{
	size_t n = 0;

	assert(s->nplan <= MAX_PLANS);
	for (size_t i = 0; i < s->nplan; i++)
		s->bound[i] = s->plan[i].bound;
	qsort(s->bound, s->nplan, sizeof(s->bound[0]), by_value);
	for (size_t i = 0; i < s->nplan; i++) {
		assert(n < MAX_PLANS);
		if (n == 0 || s->bound[i] != s->bound[n - 1])
			s->bound[n++] = s->bound[i];
	}
	s->nbound = n;
	for (size_t j = 0; j < n; j++) {
		memset(&s->within[j], 0, sizeof(s->within[j]));
		for (size_t i = 0; i < s->nplan; i++) {
			assert(i / 64 < SET_WORDS);
			if (s->plan[i].bound <= s->bound[j])
				s->within[j].w[i / 64] |= UINT64_C(1)
				    << (i % 64);
		}
	}
}

/*
 * The plans of workload w with the fixes of base and each subset of
 * extra (each of a tensor fix's counts), into s->plan, least cost first;
 * lo > 0 pins their counts to lo..hi.  MF_ERANGE on overflow.
 */
static enum mf_rc
list_sets(struct search *s, const struct mf_workload *w, unsigned base,
    unsigned extra, int64_t tp, int64_t lo, int64_t hi)
{
	struct plan *pl;

	s->nplan = 0;
	if (s->ntp == 0 && !(base & MF_FIXBIT(MF_FIX_TENSOR)))
		extra &= ~MF_FIXBIT(MF_FIX_TENSOR);
	extra &= ~base;
	/* Every subset of extra, the empty set included; with tensor, once
	 * for each of its counts. */
	for (unsigned sub = extra;; sub = (sub - 1) & extra) {
		unsigned set = base | sub;
		int own = (sub & MF_FIXBIT(MF_FIX_TENSOR)) != 0;
		size_t n = own ? s->ntp : 1;

		assert(n <= MAX_TP);

		for (size_t i = 0; i < n && mf_fix_compatible(set); i++) {
			if (s->nplan == MAX_PLANS)
				return MF_ERANGE;
			pl = &s->plan[s->nplan];
			if (plan_of(s, *w, set, own ? s->tp[i] : tp, lo, hi,
			        &s->est[s->nplan], pl) != MF_OK)
				return MF_ERANGE;
			s->nplan += pl->lo <= pl->hi;
		}
		if (sub == 0)
			break;
	}
	qsort(s->plan, s->nplan, sizeof(s->plan[0]), by_least);
	index_bounds(s);
	return MF_OK;
}

/* The fixes of allowedFixes admission may apply by itself to the job. */
static unsigned
allowed_of(const struct search *s)
{
	const struct mf_job *job = s->job;
	unsigned allowed = 0;

	for (int f = 0; f < MF_FIX_COUNT; f++)
		if ((job->allowed_fixes & MF_FIXBIT(f)) &&
		    mf_fix_info((enum mf_fix)f)->searched &&
		    mf_fix_applies(job, &job->work, (enum mf_fix)f))
			allowed |= MF_FIXBIT(f);
	/* A floor alone takes more GPUs, and no fix of a model. */
	if (job->model_source == MF_MODEL_NONE)
		allowed &= MF_FIXBIT(MF_FIX_REPLICAS);
	/* As pods, a tensor-parallel group stays in one pod. */
	if (s->pods > 1)
		allowed &= ~MF_FIXBIT(MF_FIX_TENSOR);
	return allowed;
}

/*
 * The counts a tensor fix may split the model over, fewest first: those
 * that divide the attention heads, with the KV heads divided or
 * replicated whole (as vLLM and Megatron ask), up to the most GPUs a
 * node of the catalogue holds.
 */
static void
tensor_counts(struct search *s)
{
	const struct mf_model *m = &s->job->model;

	s->ntp = 0;
	if (s->job->model_source == MF_MODEL_NONE)
		return;
	for (int64_t t = 2; t <= s->node && s->ntp < MAX_TP; t++)
		if (mf_tensor_valid(m, t))
			s->tp[s->ntp++] = t;
}

static void
search_init(struct search *s, const struct mf_job *job,
    const struct mf_catalog *cat)
{
	s->job = job;
	s->cat = cat;
	s->headroom = mf_headroom(cat, &job->work);
	s->keep = mf_cat_keep(s->headroom);
	s->ref_hours = job->reference_hours > 0 ? job->reference_hours : 1.0;
	s->pods = job->pods;
	s->max_count = s->node = 1;
	for (size_t i = 0; i < cat->ngpus; i++) {
		if (cat->gpus[i].max_count > s->max_count)
			s->max_count = cat->gpus[i].max_count;
		if (cat->gpus[i].gpus_per_node > s->node)
			s->node = cat->gpus[i].gpus_per_node;
	}
	s->flat = cat->multi_gpu_efficiency >= FLAT_EFFICIENCY;
	tensor_counts(s);
	s->allowed = allowed_of(s);
	s->limited = job->max_hourly_price >= 0 || job->max_cost >= 0 ||
	    job->deadline_hours >= 0;
	s->nplan = 0;
	s->have_fit = 0;
	memset(s->gpu_speedup.known, 0, sizeof(s->gpu_speedup.known));
	memset(s->node_speedup.known, 0, sizeof(s->node_speedup.known));
}

/* Rank every card's best candidate; fill placement and alternatives. */
static void
search_cards(struct search *s, struct mf_decision *d)
{
	struct kept top[MF_MAX_ALTERNATIVES + 1], c;
	size_t n = 0;

	for (size_t i = 0; i < s->cat->ngpus; i++) {
		const struct mf_placement *bar = NULL;

		/* The list is full: a card must beat its last. */
		if (n == MF_MAX_ALTERNATIVES + 1)
			bar = &top[n - 1].p;
		if (best_on(s, &s->cat->gpus[i], bar, &c.p, &c.pl))
			keep_top(top, &n, MF_MAX_ALTERNATIVES + 1, &c);
	}
	for (size_t i = 0; i < n; i++)
		serve_figures(s, top[i].pl, &top[i].p);
	d->admitted = n > 0;
	if (n == 0)
		return;
	d->placement = top[0].p;
	d->nalt = n - 1;
	assert(d->nalt <= MF_MAX_ALTERNATIVES);
	for (size_t i = 0; i < d->nalt; i++)
		d->alt[i] = top[i + 1].p;
}

/* The cheapest placement of s's plans, within limits. */
static int
cheapest(struct search *s, struct mf_placement *best)
{
	struct kept c, b;
	int found = 0;

	for (size_t i = 0; i < s->cat->ngpus; i++)
		if (best_on(s, &s->cat->gpus[i], found ? &b.p : NULL, &c.p,
		        &c.pl) &&
		    (!found || rank(&c.p, &b.p) < 0)) {
			b = c;
			found = 1;
		}
	if (found) {
		serve_figures(s, b.pl, &b.p);
		*best = b.p;
	}
	return found;
}

/* The fewest GPUs on which pl fits on some card; 0 when none. */
static int64_t
fewest_anywhere(const struct search *s, const struct plan *pl)
{
	struct card cd;
	int64_t best = 0, c;

	for (size_t i = 0; i < s->cat->ngpus; i++) {
		if (!card_of(s, &s->cat->gpus[i], &cd) ||
		    pl->tensor > cd.g->gpus_per_node)
			continue;
		c = fewest_fit(pl, cd.usable - card_delta(s, cd.g, pl),
		    plan_hi(pl, &cd));
		if (c > 0 && (best == 0 || c < best))
			best = c;
	}
	return best;
}

/*
 * Where the job goes with the fixes of an entry written into it: the
 * cheapest placement, within limits, of workload w with the fixes of set
 * (tp: its tensor count) on the counts lo..hi (lo 0: the set's own), and
 * each subset of the allowed fixes admission adds by itself, as it would
 * when the manifest change is sent again.
 */
static enum mf_rc
entry_placement(struct search *s, const struct mf_workload *w, unsigned set,
    int64_t tp, int64_t lo, int64_t hi, struct mf_fix_option *e)
{
	if (list_sets(s, w, set, s->allowed, tp, lo, hi) != MF_OK)
		return MF_ERANGE;
	e->placed = cheapest(s, &e->placement);
	return MF_OK;
}

/* What entry e's manifest change writes beside its fixes' fields: the
 * referenceHours of the job run with them (design 6's time factors). */
static void
entry_hours(const struct search *s, struct mf_fix_option *e)
{
	double tf = time_factor(s->cat, e->fixes);

	e->reference_hours = 0;
	if (s->job->reference_hours > 0 && tf != 1.0)
		e->reference_hours = s->job->reference_hours * tf;
}

/*
 * Entry e for fix with the set fixes of plan pl, on c GPUs (the fewest
 * that fit somewhere, else the most there are); amount is what its
 * manifest change sets, but for fsdp, whose amount is that count.  An
 * fsdp entry whose count the limits rule out takes more GPUs.
 */
static enum mf_rc
entry_of(struct search *s, enum mf_fix fix, const struct mf_workload *w,
    struct plan *pl, int64_t tp, int64_t amount, struct mf_fix_option *e)
{
	int64_t c = fewest_anywhere(s, pl);
	int pin = pl->sharded || (fix == MF_FIX_TENSOR);

	if (c == 0)
		c = pl->lo <= pl->hi ? pl->hi : pl->lo;
	e->fix = fix;
	e->fixes = pl->fixes;
	e->gpus = c;
	e->amount = fix == MF_FIX_FSDP ? c : amount;
	e->need = need_at(pl, c);
	e->min_memory = mf_floor_for(e->need, s->headroom);
	entry_hours(s, e);
	if (e->min_memory < 0 ||
	    entry_placement(s, w, pl->fixes, tp, pin ? c : 0, c, e) != MF_OK)
		return MF_ERANGE;
	if (!e->placed && fix == MF_FIX_FSDP && s->limited && c < pl->hi) {
		if (entry_placement(s, w, pl->fixes, tp, c, pl->hi, e) != MF_OK)
			return MF_ERANGE;
		if (e->placed)
			e->gpus = e->amount = e->placement.count;
	}
	return MF_OK;
}

/*
 * The largest context (or concurrency) that fits, with everything else
 * as the job asks, on the card that is cheapest to run it on, below what
 * the job asks; 0 when no card takes even one block (or sequence).
 */
static int64_t
served_amount(struct search *s, const struct plan *pl, enum mf_fix fix)
{
	const struct mf_workload *w = &s->job->work;
	int64_t best = 0, v, want;
	double least = 0, cost;
	struct card cd;

	want = fix == MF_FIX_CONTEXT ? w->context_len : w->concurrency;
	for (size_t i = 0; i < s->cat->ngpus; i++) {
		if (!card_of(s, &s->cat->gpus[i], &cd) || cd.most < pl->lo ||
		    pl->tensor > cd.g->gpus_per_node)
			continue;
		v = fix == MF_FIX_CONTEXT ?
		    context_cap(s,
		        mf_est_max_context(pl->est,
		            cd.usable - card_delta(s, cd.g, pl),
		            w->concurrency)) :
		    mf_est_max_seqs(pl->est,
		        cd.usable - card_delta(s, cd.g, pl));
		if (v < 1 || v >= want)
			continue;
		cost = cost_factor(s, pl->time_factor, pl->lo,
		           nodes_of(s, cd.g, pl->lo)) *
		    cd.unit;
		if (best == 0 || cost < least ||
		    (ties(cost, least) && v > best)) {
			best = v;
			least = cost;
		}
	}
	return best;
}

/*
 * The count entry: the job as it is (else with the post's cumulative
 * fixes cum) on more data-parallel GPUs, the fewest that meet the limits
 * on the card that is cheapest then.  *made is 0 when no count does.
 */
static enum mf_rc
count_entry(struct search *s, unsigned cum, struct mf_fix_option *e, int *made)
{
	const struct mf_workload *w = &s->job->work;
	unsigned sets[2] = { MF_FIXBIT(MF_FIX_REPLICAS),
		cum | MF_FIXBIT(MF_FIX_REPLICAS) };
	struct mf_estimate est;
	struct plan pl;

	*made = 0;
	for (size_t i = 0; i < 2 && !*made; i++) {
		if (i == 1 && cum == 0)
			break;
		if (plan_of(s, *w, sets[i], 0, 0, 0, &est, &pl) != MF_OK)
			return MF_ERANGE;
		e->fix = MF_FIX_REPLICAS;
		e->fixes = sets[i];
		e->need = pl.need;
		/* A floor is the whole card's, a model's need is kept free of
		 * the headroom. */
		e->min_memory = s->job->model_source == MF_MODEL_NONE ?
		    s->job->min_memory :
		    mf_floor_for(pl.need, s->headroom);
		entry_hours(s, e);
		if (e->min_memory < 0 ||
		    entry_placement(s, w, sets[i], 0, 0, 0, e) != MF_OK)
			return MF_ERANGE;
		*made = e->placed && e->placement.count > s->job->count;
	}
	if (*made)
		e->gpus = e->amount = e->placement.count;
	return MF_OK;
}

/*
 * The largest tensor-parallel count within a node that the model takes,
 * for a job whose own is more than any node holds; 0 when none.
 */
static int64_t
node_tensor(const struct search *s)
{
	assert(s->ntp <= MAX_TP);
	return s->ntp > 0 ? s->tp[s->ntp - 1] : 0;
}

/*
 * Entry e for fix with the set fixes; *made is 0 when the fix has no
 * entry to give (no tensor count the model takes; no shorter context or
 * fewer sequences that fit; no count that meets the limits).
 */
static enum mf_rc
fix_entry(struct search *s, enum mf_fix fix, unsigned fixes, unsigned cum,
    struct mf_fix_option *e, int *made)
{
	struct mf_workload w = s->job->work;
	struct mf_estimate est;
	struct plan pl;
	int64_t amount = 0, t = 0;
	size_t i;

	*made = 1;
	assert(s->ntp <= MAX_TP);
	if (fix == MF_FIX_REPLICAS)
		return count_entry(s, cum, e, made);
	if (fix == MF_FIX_TENSOR && w.tensor > s->node) {
		/* Tensor parallel stays within a node: the most it takes. */
		t = node_tensor(s);
		*made = t > 0;
		w.tensor = 1;
		if (*made && plan_of(s, w, fixes, t, 0, 0, &est, &pl) != MF_OK)
			return MF_ERANGE;
		return *made ? entry_of(s, fix, &w, &pl, t, t, e) : MF_OK;
	}
	if (fix == MF_FIX_TENSOR) {
		/* The fewest GPUs that fit somewhere, else the most. */
		for (i = 0; i < s->ntp; i++) {
			t = s->tp[i];
			if (plan_of(s, w, fixes, t, 0, 0, &est, &pl) != MF_OK)
				return MF_ERANGE;
			if (fewest_anywhere(s, &pl) > 0)
				break;
		}
		*made = s->ntp > 0;
		return *made ? entry_of(s, fix, &w, &pl, t, pl.lo, e) : MF_OK;
	}
	if (fix == MF_FIX_CONTEXT || fix == MF_FIX_CONCURRENCY) {
		if (plan_of(s, w, 0, 0, 0, 0, &est, &pl) != MF_OK)
			return MF_ERANGE;
		amount = served_amount(s, &pl, fix);
		if (amount == 0) {
			*made = 0;
			return MF_OK;
		}
		if (fix == MF_FIX_CONTEXT)
			w.context_len = amount;
		else
			w.concurrency = amount;
	}
	if (plan_of(s, w, fixes, 0, 0, 0, &est, &pl) != MF_OK)
		return MF_ERANGE;
	return entry_of(s, fix, &w, &pl, 0, amount, e);
}

/* Whether the rejection lists fix: those that change the job; for a job
 * without a model only count, and for a tensor-parallel group past every
 * node only tensor. */
static int
listed(const struct search *s, enum mf_fix fix)
{
	const struct mf_job *job = s->job;

	if (job->model_source == MF_MODEL_NONE)
		return fix == MF_FIX_REPLICAS &&
		    mf_fix_applies(job, &job->work, fix);
	/* Past every node only a smaller tensor-parallel group helps. */
	if (job->work.tensor > s->node)
		return fix == MF_FIX_TENSOR;
	if (fix == MF_FIX_TENSOR && s->pods > 1)
		return 0;
	return mf_fix_applies(job, &job->work, fix);
}

/* The rejection's fix list, in the post's order (design 7), then an
 * inference job's (design 14). */
static enum mf_rc
list_fixes(struct search *s, struct mf_decision *d)
{
	unsigned cum = 0;
	enum mf_rc rc = MF_OK;
	int f, made;

	d->nfixes = 0;
	d->suggested = -1;
	for (f = 0; f < MF_FIX_COUNT && rc == MF_OK; f++) {
		if (!listed(s, (enum mf_fix)f))
			continue;
		if (mf_fix_info((enum mf_fix)f)->cumulative)
			cum |= MF_FIXBIT(f);
		/* One entry a fix at most: nfixes <= f. */
		assert(d->nfixes < MF_FIX_COUNT);
		rc = fix_entry(s, (enum mf_fix)f, cum | MF_FIXBIT(f), cum,
		    &d->fixes[d->nfixes], &made);
		d->nfixes += made != 0;
	}
	for (size_t i = 0; i < d->nfixes && d->suggested < 0; i++)
		if (d->fixes[i].placed &&
		    !mf_fix_info(d->fixes[i].fix)->modelling)
			d->suggested = (int)i;
	for (size_t i = 0; i < d->nfixes && d->suggested < 0; i++)
		if (d->fixes[i].placed)
			d->suggested = (int)i;
	return rc;
}

static const struct mf_gpu *
largest_card(const struct search *s)
{
	const struct mf_gpu *best = NULL;

	for (size_t i = 0; i < s->cat->ngpus; i++) {
		const struct mf_gpu *g = &s->cat->gpus[i];

		if (most_of(s, g) >= s->job->count &&
		    (best == NULL || g->memory > best->memory))
			best = g;
	}
	return best;
}

static double
gb(int64_t bytes)
{
	return (double)bytes / 1e9;
}

/* Dollars to the cent, or to three figures below a cent: a cost of
 * $0.004 against a limit of $0.001 must not read "$0.00". */
static void
dollars(char *buf, size_t size, double v)
{
	if (v > 0 && v < 0.01)
		snprintf(buf, size, "$%.3g", v);
	else
		snprintf(buf, size, "$%.2f", v);
}

/* "limits.maxCost $500.00 rules out every fitting placement: ..." */
static void
explain_limit(const struct search *s, struct mf_decision *d)
{
	const struct mf_job *job = s->job;
	const struct mf_placement *p = &s->cheapest_fit;
	char limit[48], hourly[32], cost[32];

	d->limit = violated(job, p);
	switch (d->limit) {
	case MF_LIMIT_HOURLY_PRICE:
		dollars(hourly, sizeof(hourly), job->max_hourly_price);
		snprintf(limit, sizeof(limit), "%s per hour", hourly);
		break;
	case MF_LIMIT_COST:
		dollars(limit, sizeof(limit), job->max_cost);
		break;
	default:
		snprintf(limit, sizeof(limit), "%g hours", job->deadline_hours);
		break;
	}
	dollars(hourly, sizeof(hourly), p->hourly_price);
	if (job->reference_hours <= 0) {
		snprintf(d->reason, sizeof(d->reason),
		    "%s %s rules out every fitting placement: the cheapest, %s x%lld, costs %s per hour",
		    mf_limit_name(d->limit), limit, p->gpu->name,
		    (long long)p->count, hourly);
		return;
	}
	dollars(cost, sizeof(cost), p->cost);
	snprintf(d->reason, sizeof(d->reason),
	    "%s %s rules out every fitting placement: the cheapest, %s x%lld, costs %s per hour, %s in all and takes %.1f hours",
	    mf_limit_name(d->limit), limit, p->gpu->name, (long long)p->count,
	    hourly, cost, p->hours);
}

static void
explain_rejection(const struct search *s, struct mf_decision *d)
{
	const struct mf_job *job = s->job;
	const struct mf_gpu *big = largest_card(s);
	char q[MF_QTY_STRMAX], kept[48];
	int b = 0;

	if (s->have_fit) {
		explain_limit(s, d);
		return;
	}
	if (job->work.tensor > s->node) {
		snprintf(d->reason, sizeof(d->reason),
		    "tensor parallel stays within a node: parallelism.tensor %lld is more than the %lld GPUs of the largest node in the catalogue (gpusPerNode)",
		    (long long)job->work.tensor, (long long)s->node);
		return;
	}
	if (big == NULL) {
		snprintf(d->reason, sizeof(d->reason),
		    "no card in the catalogue takes %lld GPUs per job (maxCount)",
		    (long long)job->count);
		return;
	}
	if (!d->from_model || job->min_memory > big->memory) {
		/* Both sides in GB: 179Gi against 180G reads as 179 > 180. */
		mf_qty_format(job->min_memory, job->min_memory_format, q,
		    sizeof(q));
		snprintf(d->reason, sizeof(d->reason),
		    "minMemory %s (%.1f GB) is more than the largest card in the catalogue, %s (%.1f GB)",
		    q, gb(job->min_memory), big->name, gb(big->memory));
		return;
	}
	for (int i = 1; i < MF_B_COUNT; i++)
		if (mf_est_bucket_per_gpu(&d->est, (enum mf_bucket)i) >
		    mf_est_bucket_per_gpu(&d->est, (enum mf_bucket)b))
			b = i;
	if (engine_budget(&job->work))
		snprintf(kept, sizeof(kept), "at gpuMemoryUtilization %.2f",
		    job->work.gpu_util);
	else
		snprintf(kept, sizeof(kept), "after %.0f%% headroom",
		    s->headroom * 100);
	snprintf(d->reason, sizeof(d->reason),
	    "the job needs %.1f GB per GPU, the largest part %s (%.1f GB), but the largest usable card, %s, holds %.1f GB %s",
	    gb(d->need), mf_bucket_name((enum mf_bucket)b),
	    gb(mf_est_bucket_per_gpu(&d->est, (enum mf_bucket)b)), big->name,
	    gb(mf_cat_usable_at(big, s->headroom)), kept);
}

static void warn(struct mf_decision *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
warn(struct mf_decision *d, const char *fmt, ...)
{
	va_list ap;

	if (d->nwarn == MF_MAX_WARNINGS)
		return;
	va_start(ap, fmt);
	vsnprintf(d->warnings[d->nwarn++], sizeof(d->warnings[0]), fmt, ap);
	va_end(ap);
}

static void
add_warnings(struct mf_decision *d)
{
	const struct mf_workload *w = &d->work;

	if (!d->admitted)
		return;
	if (w->kind == MF_TRAINING && w->attention == MF_EAGER)
		warn(d,
		    "eager attention stores the s x s scores: attn_implementation=\"sdpa\" frees them");
	if (w->precision == MF_FP32)
		warn(d,
		    "fp32 without autocast: bf16 autocast halves weights and activations");
	if (w->kind == MF_TRAINING && w->micro_batch > 1)
		warn(d,
		    "microBatch %lld: 1 with %lld accumulation steps keeps the batch and frees activation memory",
		    (long long)w->micro_batch, (long long)w->micro_batch);
	if (d->placement.spare < 0.10)
		warn(d, "only %.0f%% of %s memory is spare",
		    d->placement.spare * 100, d->placement.gpu->name);
}

/* The floor in effect: the user's, unless the derived need is above it. */
static enum mf_rc
set_floor(const struct search *s, struct mf_decision *d)
{
	const struct mf_job *job = s->job;
	double usable = (double)job->min_memory * (1.0 - s->headroom);
	char q[MF_QTY_STRMAX], u[MF_QTY_STRMAX];

	d->floor = job->min_memory;
	d->floor_format = job->min_memory_format;
	if (!d->from_model ||
	    (job->min_memory > 0 && (double)d->need <= usable))
		return MF_OK;
	d->floor = mf_floor_for(d->need, s->headroom);
	d->floor_format = MF_QTY_BINARY;
	if (d->floor < 0)
		return MF_ERANGE;
	if (job->min_memory == 0)
		return MF_OK;
	mf_qty_format(job->min_memory, job->min_memory_format, u, sizeof(u));
	mf_qty_format(d->floor, MF_QTY_BINARY, q, sizeof(q));
	warn(d, "minMemory %s is below what the model needs; using %s", u, q);
	return MF_OK;
}

static enum mf_rc
describe(const struct search *s, struct mf_decision *d)
{
	const struct mf_job *job = s->job;

	d->work = job->work;
	if (d->admitted) {
		mf_fix_apply(&d->work, d->placement.fixes, d->placement.count);
		mf_work_bind_card(&d->work, d->placement.gpu);
	}
	if (!d->from_model) {
		d->need = job->min_memory;
		return MF_OK;
	}
	if (mf_est_compute(&job->model, &d->work, &d->est) != MF_OK)
		return MF_ERANGE;
	d->need = d->est.per_gpu;
	return MF_OK;
}

enum mf_rc
mf_place(const struct mf_job *given, const struct mf_catalog *cat,
    struct mf_decision *out, struct mf_error *err)
{
	struct mf_job bound = *given, *job = &bound;
	struct search s;
	struct mf_decision d;
	enum mf_rc rc;

	rc = mf_job_check_model(given, err);
	if (rc != MF_OK)
		return rc;
	mf_job_bind(job, cat);
	/* As pods, every pod takes a GPU at least. */
	if (job->pods > 0 && !job->count_given)
		job->count = job->pods;
	rc = mf_job_check_layout(job, err);
	if (rc != MF_OK)
		return rc;
	memset(&d, 0, sizeof(d));
	d.limit = MF_LIMIT_NONE;
	d.suggested = -1;
	d.from_model = job->model_source != MF_MODEL_NONE;
	search_init(&s, job, cat);
	rc = list_sets(&s, &job->work, 0, s.allowed, 0, 0, 0);
	if (rc != MF_OK)
		goto range;
	search_cards(&s, &d);
	rc = describe(&s, &d);
	if (rc != MF_OK)
		goto range;
	rc = set_floor(&s, &d);
	if (rc != MF_OK)
		goto range;
	if (!d.admitted) {
		explain_rejection(&s, &d);
		rc = list_fixes(&s, &d);
		if (rc != MF_OK)
			goto range;
	}
	add_warnings(&d);
	*out = d;
	goto out;
range:
	mf_est_range_error(err);
out:
	return rc;
}
