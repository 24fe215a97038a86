/*
 * place_plan.c: the plans of a search, each a set of fixes with the GPU
 * counts it may run on and its estimate, listed least cost first with an
 * index of their bounds.
 *
 * A plan's counts are the multiples of its step in [lo, hi]: 1 but for a
 * count fix over replicas of tensor x pipeline GPUs, and for a job that
 * runs as Kubernetes pods (job->pods), where each pod takes the same
 * GPUs of one node.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "place_int.h"

/*
 * Below this multiGpuEfficiency no two counts up to 1024 tie in cost: one
 * more GPU multiplies the cost factor by at least
 * eff^-log2(1024/1023) = 1 + 1.4e-9 at eff = 1 - 1e-6.
 */
#define FLAT_EFFICIENCY (1 - 1e-6)

double
mf_place_time_factor(const struct mf_catalog *cat, unsigned fixes)
{
	double f = 1.0;

	for (int i = 0; i < MF_FIX_COUNT; i++)
		if (fixes & MF_FIXBIT(i))
			f *= cat->time_factor[i];
	return f;
}

/* Plan order: least cost factor first, then the fixes that change least. */
static int
by_least(const void *pa, const void *pb)
{
	const struct plan *a = pa, *b = pb;

	if (!mf_place_ties(a->k_lo, b->k_lo))
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

/* The plan's cost factor on its fewest GPUs of one node: the order plans
 * are tried in; timed, on the reference card. */
static void
plan_costs(struct search *s, struct plan *pl)
{
	const struct mf_gpu *ref = s->cat->ref;

	pl->time_factor = mf_place_time_factor(s->cat, pl->fixes);
	pl->k_lo = mf_place_cost_factor(s, ref, pl, pl->lo,
	    s->timed ? mf_place_nodes(s, ref, pl->lo) : 1);
}

enum mf_rc
mf_place_figures(struct search *s, const struct mf_workload *w,
    struct mf_estimate *out)
{
	if (!s->have_figures || memcmp(&s->figures_of, w, sizeof(*w)) != 0) {
		s->have_figures = 0;
		if (mf_est_figures(&s->job->model, w, &s->figures) != MF_OK)
			return MF_ERANGE;
		s->figures_of = *w;
		s->have_figures = 1;
	}
	mf_est_copy_figures(out, &s->figures);
	return MF_OK;
}

void
mf_place_seed_figures(struct search *s, const struct mf_estimate *e)
{
	s->figures_of = s->job->work;
	mf_vllm_defaults(&s->figures_of, mf_vllm_tier(0, 0));
	mf_est_copy_figures(&s->figures, e);
	s->have_figures = 1;
}

enum mf_rc
mf_place_work(struct search *s, const struct mf_workload *w,
    const struct mf_estimate *e, struct mf_work *out)
{
	if (!s->have_work || memcmp(&s->work_of, w, sizeof(*w)) != 0 ||
	    !mf_est_same_figures(&s->work_est, e)) {
		s->have_work = 0;
		if (mf_work_of(&s->job->model, w, e, &s->work) != MF_OK)
			return MF_ERANGE;
		s->work_of = *w;
		mf_est_copy_figures(&s->work_est, e);
		s->have_work = 1;
	}
	*out = s->work;
	return MF_OK;
}

/*
 * est of w, and for a vllm job pl's tier deltas: the estimate is made at
 * the defaults of a card of no known tier and without the memory outside
 * PyTorch, which cards add (mf_place_card_delta).
 */
static enum mf_rc
tier_deltas(struct search *s, struct mf_workload w, struct mf_estimate *est,
    struct plan *pl)
{
	struct mf_workload t;
	struct mf_estimate e;
	int base = mf_vllm_tier(0, 0);

	if (mf_place_engine_budget(&w))
		w.non_torch = w.all_reduce = 0;
	t = w;
	mf_vllm_defaults(&w, base);
	if (mf_place_figures(s, &w, est) != MF_OK)
		return MF_ERANGE;
	for (int i = 0; mf_place_engine_budget(&w) && i < MF_VLLM_TIERS; i++) {
		struct mf_workload x = t;

		if (i == base)
			continue;
		mf_vllm_defaults(&x, i);
		if (mf_est_figures(&s->job->model, &x, &e) != MF_OK)
			return MF_ERANGE;
		/* More tokens and sequences never need less: a card's need
		 * is never below the plan's (mf_place_card_delta, and
		 * plans_within in place_search.c). */
		if (e.per_gpu > est->per_gpu)
			pl->tier_delta[i] = e.per_gpu - est->per_gpu;
	}
	return MF_OK;
}

enum mf_rc
mf_place_plan(struct search *s, struct mf_workload w, unsigned fixes,
    int64_t tp, int64_t lo, int64_t hi, struct mf_estimate *est,
    struct plan *pl)
{
	memset(pl, 0, sizeof(*pl));
	pl->fixes = fixes;
	pl->order = mf_fix_order(fixes);
	/* A tensor fix's replica: tp GPUs a stage. */
	mf_fix_apply(&w, fixes, tp * w.pipeline);
	counts(s, &w, fixes, tp, lo, hi, pl);
	pl->tensor = w.tensor;
	pl->sharded = (fixes & MF_FIXBIT(MF_FIX_FSDP)) != 0;
	pl->est = est;
	if (s->job->model_source == MF_MODEL_NONE) {
		mf_est_clear(est, 0);
		pl->need = pl->bound = s->job->min_memory;
		plan_costs(s, pl);
		return MF_OK;
	}
	if (pl->sharded)
		w.shard_gpus = pl->lo;
	if (tier_deltas(s, w, est, pl) != MF_OK)
		return MF_ERANGE;
	if (s->timed && mf_place_work(s, &w, est, &pl->work) != MF_OK)
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

enum mf_rc
mf_place_list_sets(struct search *s, const struct mf_workload *w, unsigned base,
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
			if (mf_place_plan(s, *w, set, own ? s->tp[i] : tp, lo,
			        hi, &s->est[s->nplan], pl) != MF_OK)
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

	for (unsigned left = job->allowed_fixes; left != 0;) {
		enum mf_fix f = mf_fix_take(&left);

		if (mf_fix_info(f)->searched &&
		    mf_fix_applies(job, &job->work, f))
			allowed |= MF_FIXBIT(f);
	}
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

void
mf_place_search_init(struct search *s, const struct mf_job *job,
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
	s->timed = 0;
	tensor_counts(s);
	s->allowed = allowed_of(s);
	s->limited = job->max_hourly_price >= 0 || job->max_cost >= 0 ||
	    job->deadline_hours >= 0;
	s->nplan = 0;
	s->have_fit = 0;
	s->have_figures = 0;
	s->have_work = 0;
	s->last_unit.have = s->ref_unit.have = 0;
	memset(s->gpu_speedup.known, 0, sizeof(s->gpu_speedup.known));
	memset(s->node_speedup.known, 0, sizeof(s->node_speedup.known));
}
