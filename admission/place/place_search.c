/*
 * place_search.c: the cheapest-to-finish search over cards and counts,
 * with what its inner loop asks of a card (the bytes the job may take of
 * it, what a vllm job needs there beyond its plan, the most GPUs the job
 * may take, the nodes or pods a count spans) and of a candidate (its
 * cost, its rank, the limit it breaks), kept in one file so that the loop
 * over cards and plans calls them inlined.
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
#include <assert.h>
#include <math.h>
#include <string.h>

#include <stdio.h>

#include "place_int.h"

/* Relative difference under which two costs tie (rank). */
#define COST_TOL 1e-9

int64_t
mf_place_need_at(const struct plan *pl, int64_t count)
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

int
mf_place_ties(double a, double b)
{
	double hi = a > b ? a : b;

	return fabs(a - b) <= COST_TOL * hi;
}

/* <0 when a ranks before b: cost, the fixes that change least (design 6,
 * mf_fix_order), more spare, fewer GPUs, name. */
static int
rank(const struct mf_placement *a, const struct mf_placement *b)
{
	if (!mf_place_ties(a->cost_per_ref_hour, b->cost_per_ref_hour))
		return a->cost_per_ref_hour < b->cost_per_ref_hour ? -1 : 1;
	if (a->order != b->order)
		return a->order < b->order ? -1 : 1;
	if (a->spare != b->spare)
		return a->spare > b->spare ? -1 : 1;
	if (a->count != b->count)
		return a->count < b->count ? -1 : 1;
	return strcmp(a->gpu->name, b->gpu->name);
}

enum mf_limit
mf_place_violated(const struct mf_job *job, const struct mf_placement *p)
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

int64_t
mf_place_nodes(const struct search *s, const struct mf_gpu *g, int64_t count)
{
	int64_t pod = s->pods > 0 ? count / s->pods : 0, per;

	/* A count that is not whole pods of one node each (the reference
	 * card's, timing another card: place_time.c) fills nodes. */
	if (pod < 1 || pod > g->gpus_per_node)
		return count <= g->gpus_per_node ? 1 : mf_cat_nodes(g, count);
	per = g->gpus_per_node / pod;
	return (s->pods + per - 1) / per;
}

int64_t
mf_place_most(const struct search *s, const struct mf_gpu *g)
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

	if (mf_place_engine_budget(&s->job->work) && g->cuda_memory > 0)
		t.memory = g->cuda_memory;
	return mf_cat_usable_keep(&t, s->keep);
}

int64_t
mf_place_card_delta(const struct search *s, const struct mf_gpu *g,
    const struct plan *pl)
{
	int t;

	if (!mf_place_engine_budget(&s->job->work) ||
	    s->job->model_source == MF_MODEL_NONE)
		return 0;
	t = mf_place_card_tier(g);
	assert(t >= 0 && t < MF_VLLM_TIERS);
	return mf_cadd(pl->tier_delta[t],
	    pl->tensor > 1 ? mf_cadd(g->non_torch, g->all_reduce) :
	                     g->non_torch);
}

int
mf_place_card(const struct search *s, const struct mf_gpu *g, struct card *cd)
{
	cd->g = g;
	cd->usable = INT64_MAX;
	if (s->job->model_source != MF_MODEL_NONE)
		cd->usable = card_usable(s, g);
	cd->most = mf_place_most(s, g);
	cd->speed = mf_place_card_speed(s, g);
	cd->unit = g->hourly_price / cd->speed;
	mf_place_obs_card(s, cd);
	return g->memory >= s->job->min_memory && cd->most > 0 &&
	    mf_place_runs_on(s->job, g);
}

int
mf_place_runs_on(const struct mf_job *job, const struct mf_gpu *g)
{
	return mf_place_runs_float8(job, g) && mf_place_starts_vllm(job, g);
}

int
mf_place_runs_float8(const struct mf_job *job, const struct mf_gpu *g)
{
	return job->work.kind != MF_TRAINING ||
	    job->work.float8 == MF_F8_NONE || g->speed.flops[MF_DT_FP8] > 0;
}

size_t
mf_place_passed_over(const struct mf_job *job, const struct mf_catalog *cat,
    int (*runs)(const struct mf_job *, const struct mf_gpu *), char *names,
    size_t size)
{
	size_t n = 0, at = 0;
	int k;

	if (size > 0)
		names[0] = '\0';
	for (size_t i = 0; i < cat->ngpus; i++) {
		if (runs(job, &cat->gpus[i]))
			continue;
		if (at < size) {
			k = snprintf(names + at, size - at, "%s%s",
			    n > 0 ? ", " : "", cat->gpus[i].name);
			at += k > 0 ? (size_t)k : 0;
		}
		n++;
	}
	return n;
}

int64_t
mf_place_plan_hi(const struct plan *pl, const struct card *cd)
{
	int64_t hi = pl->hi < cd->most ? pl->hi : cd->most;

	return pl->step > 1 ? hi - hi % pl->step : hi;
}

/*
 * The last count from c, a multiple of st up to hi, on as many nodes of
 * the card as c: mf_place_nodes never falls as the count grows.
 */
static int64_t
range_end(const struct search *s, const struct card *cd, int64_t c, int64_t hi,
    int64_t st)
{
	int64_t nodes = mf_place_nodes(s, cd->g, c), end, mid;

	if (s->pods == 0) {
		end = nodes * cd->g->gpus_per_node;
		end = end < hi ? end : hi;
		return end - end % st;
	}
	for (end = hi; c < end;) {
		mid = c + ((end - c) / st + 1) / 2 * st;
		if (mf_place_nodes(s, cd->g, mid) == nodes)
			c = mid;
		else
			end = mid - st;
	}
	return c;
}

int64_t
mf_place_context_cap(const struct search *s, int64_t v)
{
	int64_t max = s->job->model.max_context;

	return max > 0 && v > max ? max : v;
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
	p->hours = k / (cd->speed * (double)count);
	p->cost_per_ref_hour = p->cost / s->ref_hours;
	p->reference_hours = 0;
	p->count_change = 0;
	p->max_seqs = p->max_context = 0;
	p->timed = mf_job_has_duration(s->job) &&
	    (s->timed || s->job->reference_hours > 0);
	p->observed = cd->obs;
	if (cd->obs.runs > 0) {
		/* Design 23: the need observed beside the estimate's. */
		p->observed.estimate = need;
		p->observed.est_hours = p->hours * cd->obs.speed;
		p->need = (int64_t)((double)need * cd->obs.memory + 0.5);
		p->spare = (double)(g->memory - p->need) / (double)g->memory;
	}
}

/* p: plan pl on count GPUs of the card, where it needs need bytes a GPU. */
static void
candidate_of(struct search *s, const struct card *cd, const struct plan *pl,
    int64_t count, int64_t need, struct mf_placement *p)
{
	int64_t nodes = mf_place_nodes(s, cd->g, count);

	fill(s, cd, pl, count, nodes, need,
	    mf_place_cost_factor(s, cd->g, pl, count, nodes), p);
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
	usable = card_usable(s, p->gpu) - mf_place_card_delta(s, p->gpu, pl);
	p->max_seqs = mf_est_max_seqs(pl->est, usable);
	p->max_context = mf_place_context_cap(s,
	    mf_est_max_context(pl->est, usable, s->job->work.concurrency));
}

/* What a kept candidate says beside its cost: its serving figures, its
 * step (design 21) and the referenceHours and count of its manifest
 * change. */
static void
kept_figures(struct search *s, const struct plan *pl, struct mf_placement *p)
{
	serve_figures(s, pl, p);
	mf_place_step(s, pl, p);
	p->reference_hours = mf_place_reference_hours(s, pl,
	    mf_place_written_count(s, p->fixes, p->count));
	p->count_change = mf_place_count_change(s, p->fixes, p->count);
	p->cost_per_mtok = mf_place_cost_per_mtok(s, p->cost);
}

/* A kept candidate whose caller shows no more than what ranked it: fill's
 * figures alone (its referenceHours and serving figures 0 there), the
 * others as an untimed search leaves them. */
static void
unfigured(struct mf_placement *p)
{
	mf_place_no_step(p);
	p->cost_per_mtok = 0;
}

static void
candidate(struct search *s, const struct card *cd, const struct plan *pl,
    int64_t count, struct mf_placement *p)
{
	candidate_of(s, cd, pl, count,
	    mf_cadd(mf_place_need_at(pl, count),
	        mf_place_card_delta(s, cd->g, pl)),
	    p);
}

/* The limits that only more GPUs break: hourly price and cost. */
static int
over_price(const struct mf_job *job, const struct mf_placement *p)
{
	enum mf_limit l = mf_place_violated(job, p);

	return l == MF_LIMIT_HOURLY_PRICE || l == MF_LIMIT_COST;
}

static int
late(const struct mf_job *job, const struct mf_placement *p)
{
	return job->deadline_hours >= 0 && p->hours > job->deadline_hours;
}

int64_t
mf_place_fewest_fit(const struct plan *pl, int64_t usable, int64_t hi)
{
	int64_t lo = pl->lo, up = hi, mid, a, b;

	if (lo > hi || usable < pl->bound)
		return 0;
	if (!pl->sharded || lo == hi)
		return mf_place_need_at(pl, lo) <= usable ? lo : 0;
	if (usable > pl->inf) {
		a = pl->one - pl->inf;
		b = usable - pl->inf;
		if (a / b + (a % b != 0) <= hi)
			up = a / b + (a % b != 0);
	}
	if (up < lo)
		up = lo;
	if (up == hi && mf_place_need_at(pl, hi) > usable)
		return 0;
	if (up > lo && mf_place_need_at(pl, up - 1) <= usable)
		for (up--; lo < up;) {
			mid = lo + (up - lo) / 2;
			if (mf_place_need_at(pl, mid) <= usable)
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
	int rising = s->timed || s->cat->multi_gpu_efficiency > 0.5;
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
	return mf_place_ties(mf_place_cost_factor(s, cd->g, pl, count, p.nodes),
	           k) &&
	    (!limits || mf_place_violated(s->job, &p) == MF_LIMIT_NONE);
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
	double k =
	    mf_place_cost_factor(s, cd->g, pl, c, mf_place_nodes(s, cd->g, c));
	int64_t st = pl->step, lo = c, mid, least;

	while (lo < hi) {
		mid = lo + ((hi - lo) / st + 1) / 2 * st;
		if (tie_ok(s, cd, pl, mid, k, limits))
			lo = mid;
		else
			hi = mid - st;
	}
	least = mf_place_need_at(pl, lo);
	for (hi = lo, lo = c; lo < hi;) {
		mid = lo + (hi - lo) / st / 2 * st;
		if (mf_place_need_at(pl, mid) == least)
			hi = mid;
		else
			lo = mid + st;
	}
	return hi;
}

/*
 * Whether a candidate on count GPUs of best's card with this cost, fixes
 * and need ranks no better than best by rank's keys.
 */
static int
ranks_after(double cost, unsigned order, int64_t need, int64_t count,
    const struct mf_placement *best)
{
	double memory = (double)best->gpu->memory;
	double spare = (double)(best->gpu->memory - need) / memory;

	if (!mf_place_ties(cost, best->cost))
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
	hi = mf_place_plan_hi(pl, cd);
	delta = mf_place_card_delta(s, g, pl);
	fewest = mf_place_fewest_fit(pl, cd->usable - delta, hi);
	if (fewest == 0)
		return 0;
	need = mf_cadd(mf_place_need_at(pl, fewest), delta);
	nodes = mf_place_nodes(s, g, fewest);
	k = mf_place_cost_factor(s, g, pl, fewest, nodes);
	cost = k * cd->unit;
	if (best != NULL &&
	    (s->flat ? cost > best->cost && !mf_place_ties(cost, best->cost) :
	               ranks_after(cost, pl->order, need, fewest, best)))
		return 0;
	if (s->flat)
		candidate(s, cd, pl, widest_tie(s, cd, pl, fewest, hi, 0), p);
	else
		fill(s, cd, pl, fewest, nodes, need, k, p);
	note_fit(s, p);
	if (mf_place_violated(s->job, p) == MF_LIMIT_NONE)
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

	if (!mf_place_card(s, g, &cd))
		return 0;
	set = plans_within(s, cd.usable);
	for (size_t k = 0; set != NULL && k * 64 < s->nplan; k++) {
		/* A bit of word k is plan k * 64 + its place. */
		assert(k < SET_WORDS && k * 64 + 63 < MAX_PLANS);
		for (uint64_t m = set->w[k]; m != 0; m &= m - 1) {
			pl = &s->plan[k * 64 + (size_t)__builtin_ctzll(m)];
			least = mf_place_least(s, &cd, pl);
			/* Plans come least cost first on every card but
			 * when timed, where the order is the reference
			 * card's: a plan above the bar is passed over. */
			if (bar != NULL && least > bar->cost &&
			    !mf_place_ties(least, bar->cost)) {
				if (s->timed)
					continue;
				return found;
			}
			if (found && least > best->cost &&
			    !mf_place_ties(least, best->cost)) {
				if (s->timed)
					continue;
				return 1;
			}
			if (found && pl->order > best->order &&
			    (least > best->cost ||
			        mf_place_ties(least, best->cost)))
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

void
mf_place_search_cards(struct search *s, size_t figured, struct mf_decision *d)
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
	/* keep_top keeps no more than top holds. */
	assert(n <= sizeof(top) / sizeof(top[0]));
	for (size_t i = 0; i < n; i++)
		if (i < figured)
			kept_figures(s, top[i].pl, &top[i].p);
		else
			unfigured(&top[i].p);
	d->admitted = n > 0;
	if (n == 0)
		return;
	d->placement = top[0].p;
	d->nalt = n - 1;
	assert(d->nalt <= MF_MAX_ALTERNATIVES);
	for (size_t i = 0; i < d->nalt; i++)
		d->alt[i] = top[i + 1].p;
}

int
mf_place_cheapest(struct search *s, struct mf_placement *best)
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
		kept_figures(s, b.pl, &b.p);
		*best = b.p;
	}
	return found;
}
