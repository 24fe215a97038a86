/*
 * place_int.h: what the files of the placement share (place.c, which
 * decides; place_job.c, what a job asks of its model and of a card;
 * place_plan.c, the plans; place_search.c, the search over cards and
 * counts; place_fix.c, the rejection's fixes; place_reason.c, the
 * rejection's sentence), and nothing outside them uses.  The public
 * API is place.h.
 *
 * Every way of running the job is first listed as a plan: a set of
 * applied fixes, the GPU counts it may run on (the job's own; with fsdp 2
 * up to the largest maxCount; with count the job's and more) and its
 * memory estimate.  Then every card tries the plans, least cost first,
 * and the best candidate of each card competes for the placement.
 */
#ifndef MF_PLACE_INT_H
#define MF_PLACE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "place.h"
#include "../base/internal.h"

/*
 * Plans: a training job's fix sets, at most one a pattern of its nine
 * fixes (count among them); an inference job's are fewer (autocast,
 * kvfp8, int8 or int4, count, and tensor over each of its TP counts).
 */
#define MAX_PLANS 256u
/* Tensor-parallel counts a tensor fix tries: 2 up to a node's GPUs. */
#define MAX_TP 10

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
	struct mf_est_split split; /* sharded: est taken apart, for
	                             mf_place_need_at */
	double time_factor;  /* design 6's, of the catalogue's timeFactors */
	struct mf_work work; /* design 21's, when the search is timed */
	/* The cost factor on lo GPUs of one node: the least there is. */
	double k_lo;
	/* A vllm job's need on a card of each tier of vLLM's defaults less
	 * need (mf_vllm_tier; 0 where the job gives both settings).  The
	 * card's memory outside PyTorch is added to it (mf_place_card_delta).
	 */
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
	double headroom; /* the share of a card kept free: mf_headroom */
	int64_t keep;    /* mf_cat_keep(headroom) */
	/* The hours the job takes on the reference card: referenceHours,
	 * or 1 for ranking only; timed, those of its tokens or requests. */
	double ref_hours;
	/* Design 21: the catalogue's reference card is modelled and the job
	 * has a model; then units is its work, in tokens (requests for a
	 * batch of them: mf_place_time_init). */
	int timed;
	double units;
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
	/* eff^log2(count) and ie^log2(nodes) as design 6's cost factor
	 * works them out */
	struct powers gpu_speedup, node_speedup;
	/* Design 23 (place_obs.c): each observed card's need over the
	 * estimate and observed over modelled speed, in job->observed's
	 * order, and what the other cards take from them. */
	double obs_mem[MF_OBS_CARDS], obs_speed[MF_OBS_CARDS];
	double other_mem, other_speed;
	int64_t obs_runs;
	int64_t obs_estimate; /* the need the observed runs were estimated */
	/* The estimate of figures last made (mf_place_figures) and its
	 * workload, when have_figures: the work of referenceHours and the
	 * plan without fixes ask the same one. */
	int have_figures;
	struct mf_workload figures_of;
	struct mf_estimate figures;
	/* The same for the work last worked out (mf_place_work), of its
	 * workload and estimate. */
	int have_work;
	struct mf_workload work_of;
	struct mf_estimate work_est;
	struct mf_work work;
	/* The seconds a unit of work takes on a card at a count, last
	 * worked out (place_time.c): the search asks the same twice in a
	 * row, a card's least cost and then its cost at that count.  The
	 * reference card's are kept apart: referenceHours' units are worked
	 * out on it, and every placement kept asks it again. */
	struct unit_memo {
		int have;
		struct mf_work wk;
		const struct mf_gpu *g;
		int64_t count, nodes;
		double seconds;
	} last_unit, ref_unit;
};

/* A card as the search tries it. */
struct card {
	const struct mf_gpu *g;
	int64_t usable; /* bytes a GPU holds: all of them without a model */
	int64_t most;   /* the most GPUs the job may take of it */
	double unit;    /* cost over cost factor: price / speed */
	double speed;   /* mf_place_card_speed */
	struct mf_obs_note obs; /* design 23: what observations move here */
};

/* --- place_job.c ---------------------------------------------------------- */

/* A serving engine sizes the card: its utilization, not the headroom.
 * Inline: the search asks it of every card and plan. */
static inline int
mf_place_engine_budget(const struct mf_workload *w)
{
	return w->kind == MF_INFERENCE && w->server == MF_SERVER_VLLM;
}
/* vLLM's tier of defaults on g: by its memory, and whether it is an A100
 * (vLLM tells by the device name; here the name or the product label). */
int mf_place_card_tier(const struct mf_gpu *g);

/* --- place_plan.c --------------------------------------------------------- */

/* The product of the catalogue's timeFactors of fixes. */
double mf_place_time_factor(const struct mf_catalog *cat, unsigned fixes);
/*
 * *pl: workload w (the job's, or one a fix entry changed) with fixes
 * applied, on its counts (tp: a tensor fix's; lo > 0: the counts lo to
 * hi instead), its estimate in *est, which pl borrows; MF_ERANGE on
 * overflow.  A job without a model needs its floor at any count.
 */
enum mf_rc mf_place_plan(struct search *s, struct mf_workload w, unsigned fixes,
    int64_t tp, int64_t lo, int64_t hi, struct mf_estimate *est,
    struct plan *pl);
/*
 * The plans of workload w with the fixes of base and each subset of
 * extra (each of a tensor fix's counts), into s->plan, least cost first,
 * and s's index of their bounds; lo > 0 pins their counts to lo..hi.
 * MF_ERANGE on overflow.
 */
enum mf_rc mf_place_list_sets(struct search *s, const struct mf_workload *w,
    unsigned base, unsigned extra, int64_t tp, int64_t lo, int64_t hi);
/*
 * mf_est_figures of s->job's model under w into *out, made once for the
 * same w in one search (its workload byte for byte); MF_ERANGE when the
 * estimate is refused.
 */
enum mf_rc mf_place_figures(struct search *s, const struct mf_workload *w,
    struct mf_estimate *out);
/* s's figures of the job's own workload (at vLLM's defaults for no card
 * known, as mf_est_compute takes them) from e, mf_est_compute's estimate
 * of that workload: mf_place_figures asks for them again. */
void mf_place_seed_figures(struct search *s, const struct mf_estimate *e);
/* mf_work_of s->job's model under w with e's figures into *out, worked
 * out once for the same w and figures in one search; MF_ERANGE when
 * refused. */
enum mf_rc mf_place_work(struct search *s, const struct mf_workload *w,
    const struct mf_estimate *e, struct mf_work *out);
/* s ready for job on cat, with no plans yet: the catalogue's largest
 * count and node, the tensor-parallel counts the model takes and the
 * fixes admission may apply by itself. */
void mf_place_search_init(struct search *s, const struct mf_job *job,
    const struct mf_catalog *cat);

/* --- place_obs.c ---------------------------------------------------------- */
/* s's design 23 factors from s->job->observed, once its plans are
 * listed; without observations every factor is 1. */
void mf_place_obs_init(struct search *s);
/* cd's usable bytes and speed as the observations move them. */
void mf_place_obs_card(const struct search *s, struct card *cd);
/* --- place_search.c ------------------------------------------------------- */

/* Bytes per GPU of plan pl on count GPUs: mf_est_per_gpu, from its
 * parts. */
int64_t mf_place_need_at(const struct plan *pl, int64_t count);
/* Whether two costs are equal but for rounding. */
int mf_place_ties(double a, double b);
/* --- place_time.c --------------------------------------------------------- */

/* s->timed, s->units and s->ref_hours (design 21), referenceHours being
 * the job's on written GPUs of the reference card (its count as written:
 * not the least its pods take); MF_ERANGE when the job's work on the
 * reference card cannot be worked out. */
enum mf_rc mf_place_time_init(struct search *s, int64_t written);
/*
 * The cost factor of plan pl on count GPUs of g over nodes: cost is this
 * times g's price / mf_place_card_speed, hours this / (that speed x
 * count).  Timed, the GPU-hours of the job's units; else design 6's
 * refH x tf / (eff^log2(count) x ie^log2(nodes)).
 */
double mf_place_cost_factor(struct search *s, const struct mf_gpu *g,
    const struct plan *pl, int64_t count, int64_t nodes);
/* 1 when timed (the cost factor is the card's own); else relativeThroughput. */
double mf_place_card_speed(const struct search *s, const struct mf_gpu *g);
/* No count of pl on cd costs less than this. */
double
mf_place_least(struct search *s, const struct card *cd, const struct plan *pl);
/* The GPU count a manifest change with fixes writes: gpus where one of
 * them sets a count (MF_FIXV_GPUS), else the job's own. */
int64_t
mf_place_written_count(const struct search *s, unsigned fixes, int64_t gpus);
/* The spec.resources.gpu.count a manifest change with fixes writes for
 * the job to run on count GPUs (the fixes' fields those of count,
 * mf_fix_gpus_value): count where the manifest with the fixes' fields
 * would give another, 0 where it gives count or a fix of them sets the
 * count itself. */
int64_t
mf_place_count_change(const struct search *s, unsigned fixes, int64_t count);
/* The referenceHours of the job run as pl runs it on count GPUs, for its
 * manifest change: the reference card's hours with pl's fixes; 0 when
 * they are the job's own. */
double mf_place_reference_hours(struct search *s, const struct plan *pl,
    int64_t count);
/* The cost of a million of the job's tokens (output tokens, serving) at
 * cost for its whole work; 0 when the search is not timed. */
double mf_place_cost_per_mtok(const struct search *s, double cost);
/* p's step (design 21, its formulas written) and tokens a step when the
 * search is timed; else mf_place_no_step's. */
void mf_place_step(const struct search *s, const struct plan *pl,
    struct mf_placement *p);
/* No step: its seconds, terms and tokens a step 0. */
void mf_place_no_step(struct mf_placement *p);
/* The first of the job's limits p breaks, in mf_limit order;
 * MF_LIMIT_NONE when it meets them all. */
enum mf_limit
mf_place_violated(const struct mf_job *job, const struct mf_placement *p);
/*
 * The nodes count GPUs of g span: as many as they fill, or with pods,
 * those the pods fill, each pod's count / pods GPUs on one node.
 */
int64_t
mf_place_nodes(const struct search *s, const struct mf_gpu *g, int64_t count);
/*
 * The most GPUs the job may take of g: its maxCount; with pods, the most
 * that many pods of one size may take, each on one node, on at most
 * maxNodes nodes: ceil(pods / floor(gpusPerNode / G)) <= maxNodes holds
 * for G <= gpusPerNode / ceil(pods / maxNodes).  0 when none.
 */
int64_t mf_place_most(const struct search *s, const struct mf_gpu *g);
/*
 * What a vllm job needs on g beyond its plan's estimate: the profile run
 * at g's defaults (tier_delta) and g's memory outside PyTorch, at the
 * plan's tensor parallel; never below 0, so a card's usable bytes bound
 * its plans from above (the search's index of bounds).  0 for any other
 * job.
 */
int64_t mf_place_card_delta(const struct search *s, const struct mf_gpu *g,
    const struct plan *pl);
/* *cd: card g as the search tries it; 0 when the job can take none of
 * it (too little memory, or it does not run there: mf_place_runs_on). */
int
mf_place_card(const struct search *s, const struct mf_gpu *g, struct card *cd);
/* Whether g can run job's matmuls: 0 for a float8 job (design 22) on a
 * card whose catalogue entry gives no flops.fp8 (no fp8 tensor cores:
 * torch._scaled_mm runs on none), 1 otherwise. */
int mf_place_runs_float8(const struct mf_job *job, const struct mf_gpu *g);
/* Whether vLLM starts job's server on g: 0 where the job gives
 * maxNumSeqs and not maxNumBatchedTokens, and vLLM's default tokens on
 * g are fewer than its sequences (mf_vllm_starts), 1 otherwise. */
int mf_place_starts_vllm(const struct mf_job *job, const struct mf_gpu *g);
/* "A, B, C" (at most size bytes): the catalogue's cards job cannot run on
 * by runs (mf_place_runs_float8, mf_place_starts_vllm); how many. */
size_t
mf_place_passed_over(const struct mf_job *job, const struct mf_catalog *cat,
    int (*runs)(const struct mf_job *, const struct mf_gpu *), char *names,
    size_t size);
/* The most GPUs pl may run on of cd's card: a multiple of its step. */
int64_t mf_place_plan_hi(const struct plan *pl, const struct card *cd);
/* Tokens a sequence may hold: v, no more than the model takes. */
int64_t mf_place_context_cap(const struct search *s, int64_t v);
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
int64_t mf_place_fewest_fit(const struct plan *pl, int64_t usable, int64_t hi);
/* Rank every card's best candidate over s's plans; d's admitted,
 * placement and alternatives.  The first figured of them, cheapest first,
 * have their figures worked out (kept_figures); the rest only what ranks
 * them, their step, serving figures and written referenceHours 0. */
void
mf_place_search_cards(struct search *s, size_t figured, struct mf_decision *d);
/* The cheapest placement of s's plans, within limits, into *best; 0 when
 * none. */
int mf_place_cheapest(struct search *s, struct mf_placement *best);

/* --- place_fix.c ---------------------------------------------------------- */

/* d's fixes and suggested: the rejection's fix list, in the post's order
 * (design 7), then an inference job's (design 14).  It lists plans of its
 * own into s.  MF_ERANGE on overflow. */
enum mf_rc mf_place_list_fixes(struct search *s, struct mf_decision *d);

/* --- place_reason.c ------------------------------------------------------- */

/* d's reason (and limit) for a rejection: the limit that ruled out the
 * cheapest fit, else what no card holds.  d's need and est are set. */
void mf_place_explain(const struct search *s, struct mf_decision *d);

#endif
