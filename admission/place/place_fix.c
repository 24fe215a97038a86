/*
 * place_fix.c: the fixes of a rejection (design 7, and an inference
 * job's, design 14): for each fix that changes the job, the manifest
 * change, the need and floor it gives, and where the job goes with it.
 */
#include <assert.h>

#include "place_int.h"

/* The fewest GPUs on which pl fits on some card; 0 when none. */
/* The fewest GPUs on which pl fits on some card; 0 when none. */
static int64_t
fewest_anywhere(const struct search *s, const struct plan *pl)
{
	struct card cd;
	int64_t best = 0, c;

	for (size_t i = 0; i < s->cat->ngpus; i++) {
		if (!mf_place_card(s, &s->cat->gpus[i], &cd) ||
		    pl->tensor > cd.g->gpus_per_node)
			continue;
		c = mf_place_fewest_fit(pl,
		    cd.usable - mf_place_card_delta(s, cd.g, pl),
		    mf_place_plan_hi(pl, &cd));
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
	if (mf_place_list_sets(s, w, set, s->allowed, tp, lo, hi) != MF_OK)
		return MF_ERANGE;
	e->placed = mf_place_cheapest(s, &e->placement);
	return MF_OK;
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
	e->need = mf_place_need_at(pl, c);
	e->min_memory = mf_floor_for(e->need, s->headroom);
	if (e->min_memory < 0 ||
	    entry_placement(s, w, pl->fixes, tp, pin ? c : 0, c, e) != MF_OK)
		return MF_ERANGE;
	if (!e->placed && fix == MF_FIX_FSDP && s->limited && c < pl->hi) {
		if (entry_placement(s, w, pl->fixes, tp, c, pl->hi, e) != MF_OK)
			return MF_ERANGE;
		if (e->placed)
			e->gpus = e->amount = e->placement.count;
	}
	/* What its manifest change writes beside its fixes' fields. */
	e->reference_hours = mf_place_reference_hours(s, pl,
	    mf_place_written_count(s, e->fixes, e->gpus));
	e->count_change = mf_place_count_change(s, e->fixes, e->gpus);
	return MF_OK;
}

/*
 * The largest context (or concurrency) that fits, with everything else
 * as the job asks, on the card that is cheapest to run it on, below what
 * the job asks; 0 when no card takes even one block (or sequence).  A
 * context shorter than a request's promptTokens and outputTokens is not
 * offered: the manifest would refuse it (check_request in manifest.c).
 */
static int64_t
served_amount(struct search *s, const struct plan *pl, enum mf_fix fix)
{
	const struct mf_workload *w = &s->job->work;
	int64_t best = 0, v, want, fewest = 1;
	double least = 0, cost;
	struct card cd;

	want = fix == MF_FIX_CONTEXT ? w->context_len : w->concurrency;
	if (fix == MF_FIX_CONTEXT && w->prompt_tokens + w->output_tokens > 1)
		fewest = w->prompt_tokens + w->output_tokens;
	for (size_t i = 0; i < s->cat->ngpus; i++) {
		if (!mf_place_card(s, &s->cat->gpus[i], &cd) ||
		    cd.most < pl->lo || pl->tensor > cd.g->gpus_per_node)
			continue;
		v = fix == MF_FIX_CONTEXT ?
		    mf_place_context_cap(s,
		        mf_est_max_context(pl->est,
		            cd.usable - mf_place_card_delta(s, cd.g, pl),
		            w->concurrency)) :
		    mf_est_max_seqs(pl->est,
		        cd.usable - mf_place_card_delta(s, cd.g, pl));
		if (v < fewest || v >= want)
			continue;
		cost = mf_place_cost_factor(s, cd.g, pl, pl->lo,
		           mf_place_nodes(s, cd.g, pl->lo)) *
		    cd.unit;
		if (best == 0 || cost < least ||
		    (mf_place_ties(cost, least) && v > best)) {
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
		if (mf_place_plan(s, *w, sets[i], 0, 0, 0, &est, &pl) != MF_OK)
			return MF_ERANGE;
		e->fix = MF_FIX_REPLICAS;
		e->fixes = sets[i];
		e->need = pl.need;
		/* A floor is the whole card's, a model's need is kept free of
		 * the headroom. */
		e->min_memory = s->job->model_source == MF_MODEL_NONE ?
		    s->job->min_memory :
		    mf_floor_for(pl.need, s->headroom);
		if (e->min_memory < 0 ||
		    entry_placement(s, w, sets[i], 0, 0, 0, e) != MF_OK)
			return MF_ERANGE;
		*made = e->placed && e->placement.count > s->job->count;
	}
	if (*made) {
		e->gpus = e->amount = e->placement.count;
		e->reference_hours = mf_place_reference_hours(s, &pl,
		    mf_place_written_count(s, e->fixes, e->amount));
	}
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
		if (*made &&
		    mf_place_plan(s, w, fixes, t, 0, 0, &est, &pl) != MF_OK)
			return MF_ERANGE;
		return *made ? entry_of(s, fix, &w, &pl, t, t, e) : MF_OK;
	}
	if (fix == MF_FIX_TENSOR) {
		/* The fewest GPUs that fit somewhere, else the most. */
		for (i = 0; i < s->ntp; i++) {
			t = s->tp[i];
			if (mf_place_plan(s, w, fixes, t, 0, 0, &est, &pl) !=
			    MF_OK)
				return MF_ERANGE;
			if (fewest_anywhere(s, &pl) > 0)
				break;
		}
		*made = s->ntp > 0;
		return *made ? entry_of(s, fix, &w, &pl, t, t, e) : MF_OK;
	}
	if (fix == MF_FIX_CONTEXT || fix == MF_FIX_CONCURRENCY) {
		if (mf_place_plan(s, w, 0, 0, 0, 0, &est, &pl) != MF_OK)
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
	if (mf_place_plan(s, w, fixes, 0, 0, 0, &est, &pl) != MF_OK)
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

enum mf_rc
mf_place_list_fixes(struct search *s, struct mf_decision *d)
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
		memset(&d->fixes[d->nfixes], 0, sizeof(d->fixes[0]));
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
