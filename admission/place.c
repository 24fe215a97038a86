/*
 * place.c: the cheapest-to-finish search.
 *
 * Every way of running the job is first listed as a plan: a set of applied
 * fixes, the GPU counts it may run on (the job's own, or with fsdp 2 up to
 * the largest maxCount) and its memory estimate.  Then every card tries
 * the plans, least cost first, and the best candidate of each card
 * competes for the placement.
 *
 * Counts are not tried one by one.  At fixed fixes the cost to finish on
 * count c, refH x tf / (eff^log2(c) x ie^log2(nodes)) x price / throughput,
 * never falls as c grows and the need per GPU never grows, so a card's best
 * count is the fewest that fit, found from a bound on the estimate and
 * checked by bisection.  It moves up only as far as the limits ask (hours
 * can fall with more GPUs where cost does not) and, where more GPUs cost
 * no more (multiGpuEfficiency 1 within a node), to the count with the most
 * spare memory, which design 6 ranks before fewer GPUs.
 */
#include "place.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qty.h"
#include "internal.h"

#define GIB (INT64_C(1) << 30)
/*
 * Plans: a training job's fix sets, at most one a pattern of its eight
 * fixes; an inference job's are fewer (autocast, kvfp8, int8 or int4, and
 * tensor over each of its TP counts: 2 x 2 x 3 x (1 + MAX_TP) = 132 at
 * most).
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
	int64_t tensor; /* GPUs of a tensor-parallel group: within a node */
	int64_t lo, hi; /* the GPU counts it may run on */
	int64_t need;   /* bytes per GPU on lo GPUs */
	/* lo < hi (fsdp): the need on one GPU and on unboundedly many */
	int64_t one, inf;
	double time_factor;
	/* The cost factor on lo GPUs of one node: the least there is. */
	double k_lo;
	struct mf_estimate est; /* of the workload on lo GPUs */
};

/* x^log2(n) for n up to MF_CAT_MAX_COUNT, worked out when first asked. */
struct powers {
	double v[MF_CAT_MAX_COUNT + 1];
	uint64_t known[MF_CAT_MAX_COUNT / 64 + 1];
};

struct search {
	const struct mf_job *job;
	const struct mf_catalog *cat;
	double headroom;   /* the share of a card kept free: mf_headroom */
	double ref_hours;  /* referenceHours, or 1 for ranking only */
	int64_t max_count; /* the largest maxCount of the catalogue */
	size_t ntp;        /* tensor-parallel counts the model takes */
	int64_t tp[MAX_TP];
	int flat;    /* multiGpuEfficiency so near 1 that counts may tie */
	int limited; /* the job has a limit */
	size_t nplan;
	struct plan plan[MAX_PLANS];
	/* The cheapest candidate that fit in memory, limits aside. */
	int have_fit;
	struct mf_placement cheapest_fit;
	/* eff^log2(count) and ie^log2(nodes) as power() works them out */
	struct powers gpu_speedup, node_speedup;
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

static int
nfixes(unsigned fixes)
{
	int n = 0;

	for (; fixes != 0; fixes &= fixes - 1)
		n++;
	return n;
}

/* Whether two costs are equal but for rounding. */
static int
ties(double a, double b)
{
	double hi = a > b ? a : b;

	return fabs(a - b) <= COST_TOL * hi;
}

/* <0 when a ranks before b: cost, fewer fixes, more spare, fewer GPUs, name. */
static int
rank(const struct mf_placement *a, const struct mf_placement *b)
{
	if (!ties(a->cost_per_ref_hour, b->cost_per_ref_hour))
		return a->cost_per_ref_hour < b->cost_per_ref_hour ? -1 : 1;
	if (nfixes(a->fixes) != nfixes(b->fixes))
		return nfixes(a->fixes) - nfixes(b->fixes);
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

/* Bytes per GPU of plan pl on count GPUs. */
static int64_t
need_at(const struct plan *pl, int64_t count)
{
	return pl->lo == pl->hi ? pl->need : mf_est_per_gpu(&pl->est, count);
}

/* p: plan pl on count GPUs of g, where it needs need bytes a GPU. */
static void
candidate_of(struct search *s, const struct mf_gpu *g, const struct plan *pl,
    int64_t count, int64_t need, struct mf_placement *p)
{
	double k;

	p->gpu = g;
	p->count = count;
	p->nodes = mf_cat_nodes(g, count);
	p->fixes = pl->fixes;
	p->need = need;
	p->spare = (double)(g->memory - p->need) / (double)g->memory;
	p->hourly_price = g->hourly_price * (double)count;
	k = cost_factor(s, pl->time_factor, count, p->nodes);
	p->cost = k * mf_cat_unit_cost(g);
	p->hours = k / (g->throughput * (double)count);
	p->cost_per_ref_hour = p->cost / s->ref_hours;
	p->max_seqs = p->max_context = 0;
	if (mf_job_serves(s->job)) {
		int64_t usable = mf_cat_usable_at(g, s->headroom);

		p->max_seqs = mf_est_max_seqs(&pl->est, usable);
		p->max_context = mf_est_max_context(&pl->est, usable,
		    s->job->work.concurrency);
	}
}

static void
candidate(struct search *s, const struct mf_gpu *g, const struct plan *pl,
    int64_t count, struct mf_placement *p)
{
	candidate_of(s, g, pl, count, need_at(pl, count), p);
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
 * rest + sum b_i / c, the fewest is nearly always c itself.
 */
static int64_t
fewest_fit(const struct plan *pl, int64_t usable, int64_t hi)
{
	int64_t lo = pl->lo, up = hi, mid;

	if (lo > hi)
		return 0;
	if (pl->lo == pl->hi)
		return pl->need <= usable ? lo : 0;
	if (usable < pl->inf)
		return 0;
	if (usable > pl->inf && (pl->one - pl->inf) / (usable - pl->inf) < hi)
		up = (pl->one - pl->inf + (usable - pl->inf) - 1) /
		    (usable - pl->inf);
	if (up < lo)
		up = lo;
	if (up == hi && need_at(pl, hi) > usable)
		return 0;
	if (up == lo || need_at(pl, up - 1) > usable)
		return up;
	for (up--; lo < up;) {
		mid = lo + (up - lo) / 2;
		if (need_at(pl, mid) <= usable)
			up = mid;
		else
			lo = mid + 1;
	}
	return up;
}

/*
 * The fewest GPUs from c, whose candidate p is late but within price,
 * up to hi that meet every limit; 0 when none does.  Hourly price and cost
 * only grow with the count, so the first count over them ends the search.
 * Hours do not only fall: within one node count the speed goes as
 * c^(1 + log2 eff), which rises when eff > 0.5, and each step to more
 * nodes multiplies it by ie^(log2 of the step).  So every node count's
 * range of counts is searched on its own, its fastest count being its last
 * (eff > 0.5) or its first.
 */
static int64_t
meet_deadline(struct search *s, const struct mf_gpu *g, const struct plan *pl,
    int64_t c, int64_t hi, struct mf_placement *p)
{
	int rising = s->cat->multi_gpu_efficiency > 0.5;
	int64_t end, mid, lo;

	for (c++; c <= hi; c = end + 1) {
		end = mf_cat_nodes(g, c) * g->gpus_per_node;
		if (end > hi)
			end = hi;
		candidate(s, g, pl, rising ? end : c, p);
		if (late(s->job, p) && over_price(s->job, p))
			return 0;
		if (late(s->job, p))
			continue;
		for (lo = c; rising && lo < end;) {
			mid = lo + (end - lo) / 2;
			candidate(s, g, pl, mid, p);
			if (late(s->job, p))
				lo = mid + 1;
			else
				end = mid;
		}
		candidate(s, g, pl, rising ? end : c, p);
		return over_price(s->job, p) ? 0 : p->count;
	}
	return 0;
}

/* Whether the candidate of pl on count GPUs of g ties cost factor k and,
 * with limits, meets them. */
static int
tie_ok(struct search *s, const struct mf_gpu *g, const struct plan *pl,
    int64_t count, double k, int limits)
{
	struct mf_placement p;

	candidate(s, g, pl, count, &p);
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
widest_tie(struct search *s, const struct mf_gpu *g, const struct plan *pl,
    int64_t c, int64_t hi, int limits)
{
	double k = cost_factor(s, pl->time_factor, c, mf_cat_nodes(g, c));
	int64_t lo = c, mid, least;

	while (lo < hi) {
		mid = lo + (hi - lo + 1) / 2;
		if (tie_ok(s, g, pl, mid, k, limits))
			lo = mid;
		else
			hi = mid - 1;
	}
	least = need_at(pl, lo);
	for (hi = lo, lo = c; lo < hi;) {
		mid = lo + (hi - lo) / 2;
		if (need_at(pl, mid) == least)
			hi = mid;
		else
			lo = mid + 1;
	}
	return hi;
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

/* A card as the search tries it. */
struct card {
	const struct mf_gpu *g;
	int64_t usable; /* bytes a GPU holds: all of them without a model */
	double unit;    /* cost over cost factor: price / throughput */
};

/*
 * Whether a candidate on count GPUs of best's card with this cost, fixes
 * and need ranks no better than best by rank()'s keys.
 */
static int
ranks_after(double cost, unsigned fixes, int64_t need, int64_t count,
    const struct mf_placement *best)
{
	double memory = (double)best->gpu->memory;
	double spare = (double)(best->gpu->memory - need) / memory;

	if (!ties(cost, best->cost))
		return cost > best->cost;
	if (nfixes(fixes) != nfixes(best->fixes))
		return nfixes(fixes) > nfixes(best->fixes);
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
	int64_t hi = pl->hi < g->max_count ? pl->hi : g->max_count;
	int64_t fewest, c, need;
	double cost;

	if (pl->tensor > g->gpus_per_node)
		return 0;
	fewest = fewest_fit(pl, cd->usable, hi);
	if (fewest == 0)
		return 0;
	need = need_at(pl, fewest);
	if (best != NULL) {
		cost = cost_factor(s, pl->time_factor, fewest,
		           mf_cat_nodes(g, fewest)) *
		    cd->unit;
		if (s->flat ? cost > best->cost && !ties(cost, best->cost) :
		              ranks_after(cost, pl->fixes, need, fewest, best))
			return 0;
	}
	if (s->flat)
		candidate(s, g, pl, widest_tie(s, g, pl, fewest, hi, 0), p);
	else
		candidate_of(s, g, pl, fewest, need, p);
	note_fit(s, p);
	if (violated(s->job, p) == MF_LIMIT_NONE)
		return 1;
	candidate(s, g, pl, fewest, p);
	c = fewest;
	if (over_price(s->job, p))
		return 0;
	if (late(s->job, p))
		c = meet_deadline(s, g, pl, fewest, hi, p);
	if (c == 0)
		return 0;
	if (s->flat)
		candidate(s, g, pl, widest_tie(s, g, pl, c, hi, 1), p);
	return 1;
}

/*
 * Best candidate of card g over the plans pl[0..n); 0 if none fits within
 * the limits.  The plans are in order of least cost: once one's least
 * cost is above the best so far, so is every later one's; one with more
 * fixes than the best needs a lower cost to win.
 */
static int
best_on(struct search *s, const struct mf_gpu *g, const struct plan *pl,
    size_t n, struct mf_placement *best)
{
	const struct mf_job *job = s->job;
	struct card cd = { g, INT64_MAX, mf_cat_unit_cost(g) };
	struct mf_placement p;
	double least;
	int found = 0;

	if (g->memory < job->min_memory)
		return 0;
	if (job->model_source != MF_MODEL_NONE)
		cd.usable = mf_cat_usable_at(g, s->headroom);
	for (size_t i = 0; i < n; i++) {
		least = pl[i].k_lo * cd.unit;
		if (found && least > best->cost && !ties(least, best->cost))
			break;
		if (found && nfixes(pl[i].fixes) > nfixes(best->fixes) &&
		    (least > best->cost || ties(least, best->cost)))
			continue;
		if (try_plan(s, &cd, &pl[i], found ? best : NULL, &p) &&
		    (!found || rank(&p, best) < 0)) {
			*best = p;
			found = 1;
		}
	}
	return found;
}

/* Insert p into the ranked list top[0..*n), keeping at most max. */
static void
keep_top(struct mf_placement *top, size_t *n, size_t max,
    const struct mf_placement *p)
{
	size_t i = *n;

	if (i == max && rank(p, &top[max - 1]) >= 0)
		return;
	if (i == max)
		i--;
	else
		(*n)++;
	while (i > 0 && rank(p, &top[i - 1]) < 0) {
		top[i] = top[i - 1];
		i--;
	}
	top[i] = *p;
}

/* Plan order: least cost factor first, then fewer fixes. */
static int
by_least(const void *pa, const void *pb)
{
	const struct plan *a = pa, *b = pb;

	if (!ties(a->k_lo, b->k_lo))
		return a->k_lo < b->k_lo ? -1 : 1;
	return nfixes(a->fixes) - nfixes(b->fixes);
}

/*
 * The GPU counts a fix set may run on: the job's own, or with fsdp (and no
 * count asked for) 2 up to the largest maxCount in the catalogue.
 */
static void
counts(const struct search *s, unsigned fixes, int64_t tp, int64_t *lo,
    int64_t *hi)
{
	*lo = *hi = s->job->count;
	if ((fixes & MF_FIXBIT(MF_FIX_FSDP)) && !s->job->count_given) {
		*lo = 2;
		*hi = s->max_count < 2 ? 2 : s->max_count;
	}
	if (fixes & MF_FIXBIT(MF_FIX_TENSOR))
		*lo = *hi = tp;
}

static void
plan_costs(struct search *s, struct plan *pl)
{
	pl->time_factor = time_factor(s->cat, pl->fixes);
	pl->k_lo = cost_factor(s, pl->time_factor, pl->lo, 1);
}

/* Workload w (the job's, or one a fix entry changed) with fixes applied,
 * on its counts (tp: a tensor fix's); MF_ERANGE on overflow. */
static enum mf_rc
plan_of(struct search *s, struct mf_workload w, unsigned fixes, int64_t tp,
    struct plan *pl)
{
	pl->fixes = fixes;
	counts(s, fixes, tp, &pl->lo, &pl->hi);
	mf_fix_apply(&w, fixes, pl->lo);
	pl->tensor = w.tensor;
	if (mf_est_compute(&s->job->model, &w, &pl->est) != MF_OK)
		return MF_ERANGE;
	pl->need = pl->est.per_gpu;
	pl->one = mf_est_per_gpu(&pl->est, 1);
	pl->inf = mf_est_per_gpu(&pl->est, INT64_MAX);
	plan_costs(s, pl);
	return MF_OK;
}

static enum mf_rc
make_plan(struct search *s, unsigned fixes, int64_t tp, struct plan *pl)
{
	return plan_of(s, s->job->work, fixes, tp, pl);
}

/* A minMemory-only job has one plan: no fixes, its count, its floor. */
static void
floor_plan(struct search *s, struct plan *pl)
{
	memset(pl, 0, sizeof(*pl));
	pl->lo = pl->hi = s->job->count;
	pl->tensor = 1;
	pl->need = s->job->min_memory;
	plan_costs(s, pl);
}

static enum mf_rc
list_plans(struct search *s, struct mf_error *err)
{
	const struct mf_job *job = s->job;
	unsigned allowed = 0;

	if (job->model_source == MF_MODEL_NONE) {
		floor_plan(s, &s->plan[s->nplan++]);
		return MF_OK;
	}
	for (int f = 0; f < MF_FIX_COUNT; f++)
		if ((job->allowed_fixes & MF_FIXBIT(f)) &&
		    mf_fix_info((enum mf_fix)f)->searched &&
		    mf_fix_applies(job, &job->work, (enum mf_fix)f))
			allowed |= MF_FIXBIT(f);
	if (s->ntp == 0)
		allowed &= ~MF_FIXBIT(MF_FIX_TENSOR);
	/* Every subset of allowed, the empty set included; with tensor,
	 * once for each of its counts. */
	for (unsigned sub = allowed;; sub = (sub - 1) & allowed) {
		size_t n = sub & MF_FIXBIT(MF_FIX_TENSOR) ? s->ntp : 1;

		for (size_t i = 0; i < n && mf_fix_compatible(sub); i++)
			if (s->nplan == MAX_PLANS ||
			    make_plan(s, sub, s->tp[i], &s->plan[s->nplan++]) !=
			        MF_OK)
				return mf_est_range_error(err);
		if (sub == 0)
			break;
	}
	qsort(s->plan, s->nplan, sizeof(s->plan[0]), by_least);
	return MF_OK;
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
	int64_t node = 1;

	s->ntp = 0;
	if (s->job->model_source == MF_MODEL_NONE)
		return;
	for (size_t i = 0; i < s->cat->ngpus; i++)
		if (s->cat->gpus[i].gpus_per_node > node)
			node = s->cat->gpus[i].gpus_per_node;
	for (int64_t t = 2; t <= node && s->ntp < MAX_TP; t++)
		if (m->heads % t == 0 &&
		    (m->kv_heads % t == 0 || t % m->kv_heads == 0))
			s->tp[s->ntp++] = t;
}

static void
search_init(struct search *s, const struct mf_job *job,
    const struct mf_catalog *cat)
{
	s->job = job;
	s->cat = cat;
	s->headroom = mf_headroom(cat, &job->work);
	s->ref_hours = job->reference_hours > 0 ? job->reference_hours : 1.0;
	s->max_count = 1;
	for (size_t i = 0; i < cat->ngpus; i++)
		if (cat->gpus[i].max_count > s->max_count)
			s->max_count = cat->gpus[i].max_count;
	s->flat = cat->multi_gpu_efficiency >= FLAT_EFFICIENCY;
	tensor_counts(s);
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
	struct mf_placement top[MF_MAX_ALTERNATIVES + 1], p;
	size_t n = 0;

	for (size_t i = 0; i < s->cat->ngpus; i++)
		if (best_on(s, &s->cat->gpus[i], s->plan, s->nplan, &p))
			keep_top(top, &n, MF_MAX_ALTERNATIVES + 1, &p);
	d->admitted = n > 0;
	if (n == 0)
		return;
	d->placement = top[0];
	d->nalt = n - 1;
	memcpy(d->alt, top + 1, (n - 1) * sizeof(top[0]));
}

/* The cheapest placement of one plan, within limits. */
static int
cheapest_with(struct search *s, const struct plan *pl,
    struct mf_placement *best)
{
	struct mf_placement p;
	int found = 0;

	for (size_t i = 0; i < s->cat->ngpus; i++)
		if (best_on(s, &s->cat->gpus[i], pl, 1, &p) &&
		    (!found || rank(&p, best) < 0)) {
			*best = p;
			found = 1;
		}
	return found;
}

/* The fewest GPUs on which pl fits on some card; 0 when none. */
static int64_t
fewest_anywhere(const struct search *s, const struct plan *pl)
{
	int64_t best = 0, c, hi;

	for (size_t i = 0; i < s->cat->ngpus; i++) {
		const struct mf_gpu *g = &s->cat->gpus[i];

		if (g->memory < s->job->min_memory ||
		    pl->tensor > g->gpus_per_node)
			continue;
		hi = pl->hi < g->max_count ? pl->hi : g->max_count;
		c = fewest_fit(pl, mf_cat_usable_at(g, s->headroom), hi);
		if (c > 0 && (best == 0 || c < best))
			best = c;
	}
	return best;
}

/*
 * Entry e for fix, made of plan pl: on the fewest GPUs that fit somewhere
 * (fsdp), else on the most there are; amount is what its manifest change
 * sets, but for fsdp, whose amount is that count.
 */
static enum mf_rc
entry_of(struct search *s, enum mf_fix fix, struct plan *pl, int64_t amount,
    struct mf_fix_option *e)
{
	int64_t c = fewest_anywhere(s, pl);

	if (c == 0)
		c = pl->hi;
	pl->need = need_at(pl, c);
	pl->lo = pl->hi = c;
	plan_costs(s, pl);
	e->fix = fix;
	e->fixes = pl->fixes;
	e->gpus = c;
	e->amount = fix == MF_FIX_FSDP ? c : amount;
	e->need = pl->need;
	e->min_memory = mf_floor_for(pl->need, s->headroom);
	if (e->min_memory < 0)
		return MF_ERANGE;
	e->placed = cheapest_with(s, pl, &e->placement);
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
	int64_t best = 0, v, usable, want;
	double least = 0, cost;

	want = fix == MF_FIX_CONTEXT ? w->context_len : w->concurrency;
	for (size_t i = 0; i < s->cat->ngpus; i++) {
		const struct mf_gpu *g = &s->cat->gpus[i];

		if (g->memory < s->job->min_memory || g->max_count < pl->lo ||
		    pl->tensor > g->gpus_per_node)
			continue;
		usable = mf_cat_usable_at(g, s->headroom);
		v = fix == MF_FIX_CONTEXT ?
		    mf_est_max_context(&pl->est, usable, w->concurrency) :
		    mf_est_max_seqs(&pl->est, usable);
		if (v < 1 || v >= want)
			continue;
		cost = cost_factor(s, pl->time_factor, pl->lo,
		           mf_cat_nodes(g, pl->lo)) *
		    mf_cat_unit_cost(g);
		if (best == 0 || cost < least ||
		    (ties(cost, least) && v > best)) {
			best = v;
			least = cost;
		}
	}
	return best;
}

/*
 * Entry e for fix with the set fixes; *made is 0 when the fix has no
 * entry to give (no tensor count the model takes; no shorter context or
 * fewer sequences that fit).
 */
static enum mf_rc
fix_entry(struct search *s, enum mf_fix fix, unsigned fixes,
    struct mf_fix_option *e, int *made)
{
	struct mf_workload w = s->job->work;
	struct plan pl;
	int64_t amount = 0;
	size_t i;

	*made = 1;
	if (fix == MF_FIX_TENSOR) {
		/* The fewest GPUs that fit somewhere, else the most. */
		for (i = 0; i < s->ntp; i++) {
			if (make_plan(s, fixes, s->tp[i], &pl) != MF_OK)
				return MF_ERANGE;
			if (fewest_anywhere(s, &pl) > 0)
				break;
		}
		*made = s->ntp > 0;
		return *made ? entry_of(s, fix, &pl, pl.lo, e) : MF_OK;
	}
	if (fix == MF_FIX_CONTEXT || fix == MF_FIX_CONCURRENCY) {
		if (make_plan(s, 0, 0, &pl) != MF_OK)
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
	if (plan_of(s, w, fixes, 0, &pl) != MF_OK)
		return MF_ERANGE;
	return entry_of(s, fix, &pl, amount, e);
}

/* The rejection's fix list, in the post's order (design 7), then an
 * inference job's (design 14). */
static enum mf_rc
list_fixes(struct search *s, struct mf_decision *d)
{
	const struct mf_job *job = s->job;
	unsigned cum = 0;
	enum mf_rc rc = MF_OK;
	int f, made;

	d->nfixes = 0;
	d->suggested = -1;
	for (f = 0; f < MF_FIX_COUNT && rc == MF_OK; f++) {
		if (!mf_fix_applies(job, &job->work, (enum mf_fix)f))
			continue;
		if (mf_fix_info((enum mf_fix)f)->cumulative)
			cum |= MF_FIXBIT(f);
		rc = fix_entry(s, (enum mf_fix)f, cum | MF_FIXBIT(f),
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

		if (g->max_count >= s->job->count &&
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
	if (d->admitted)
		mf_fix_apply(&d->work, d->placement.fixes, d->placement.count);
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

	mf_job_bind(job, cat);
	memset(&d, 0, sizeof(d));
	d.limit = MF_LIMIT_NONE;
	d.suggested = -1;
	d.from_model = job->model_source != MF_MODEL_NONE;
	search_init(&s, job, cat);
	rc = list_plans(&s, err);
	if (rc != MF_OK)
		goto out;
	search_cards(&s, &d);
	rc = describe(&s, &d);
	if (rc != MF_OK)
		goto range;
	rc = set_floor(&s, &d);
	if (rc != MF_OK)
		goto range;
	if (!d.admitted) {
		explain_rejection(&s, &d);
		if (d.from_model && (rc = list_fixes(&s, &d)) != MF_OK)
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
