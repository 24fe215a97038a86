/*
 * place_time.c: the hours of a candidate (design 21 over design 6).  On
 * a catalogue whose reference card is modelled, a job with a model is
 * timed by its work on each card (time/time.h): the seconds a unit of its
 * work takes there (a token trained, an output token served, a request of
 * a batch), times the units the job gives or that referenceHours take on
 * the reference card.  Otherwise design 6's arithmetic stands:
 * referenceHours x time factors over relativeThroughput, the GPUs' and
 * the nodes' efficiencies.
 */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "place_int.h"

/* Whether g is timed through the reference card: it writes
 * relativeThroughput (the reference card itself is always modelled). */
static int
by_reference(const struct search *s, const struct mf_gpu *g)
{
	return !mf_cat_own_speed(s->cat, g);
}

/* A batch of requests is timed by the request; the rest by the token. */
static int
by_request(const struct search *s)
{
	return s->job->work.kind == MF_INFERENCE && s->job->requests > 0;
}

/*
 * Seconds a unit of work wk takes on count GPUs of g over nodes nodes: a
 * modelled card's step, else the reference card's over relativeThroughput
 * (design 21: it overrides the modelled ratio).  *st, when not NULL, is
 * the step on the card that is modelled.
 */
static double
unit_seconds(const struct search *s, const struct mf_gpu *g,
    const struct mf_work *wk, int64_t count, int64_t nodes, struct mf_step *st)
{
	const struct mf_gpu *ref = s->cat->ref;
	struct mf_step one;
	int64_t replicas = count / wk->gpus;
	double u;

	if (st == NULL)
		st = &one;
	if (by_reference(s, g))
		return unit_seconds(s, ref, wk, count,
		           mf_place_nodes(s, ref, count), st) /
		    g->throughput;
	mf_step_of(wk, &g->speed, count, nodes, st);
	if (st->seconds <= 0 || replicas < 1)
		return INFINITY;
	if (by_request(s))
		u = mf_request_seconds(wk, &g->speed,
		    s->job->work.output_tokens);
	else
		u = st->seconds / (double)wk->tokens;
	return u / (double)replicas;
}

/* unit_seconds without the step, the last answer kept (s->last_unit,
 * s->ref_unit for the reference card): the same work (compared whole: a
 * plan's may sit on the stack), card, count and nodes give the same
 * seconds. */
static double
memo_seconds(struct search *s, const struct mf_gpu *g, const struct mf_work *wk,
    int64_t count, int64_t nodes)
{
	struct unit_memo *m = g == s->cat->ref ? &s->ref_unit : &s->last_unit;

	if (m->have && m->g == g && m->count == count && m->nodes == nodes &&
	    memcmp(&m->wk, wk, sizeof(*wk)) == 0)
		return m->seconds;
	m->seconds = unit_seconds(s, g, wk, count, nodes, NULL);
	memcpy(&m->wk, wk, sizeof(*wk));
	m->g = g;
	m->count = count;
	m->nodes = nodes;
	m->have = 1;
	return m->seconds;
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

/* Design 6: refH x tf / (eff^log2(count) x ie^log2(nodes)). */
static double
design6_factor(struct search *s, double tf, int64_t count, int64_t nodes)
{
	double k = s->ref_hours * tf /
	    power(&s->gpu_speedup, s->cat->multi_gpu_efficiency, count);

	if (nodes > 1)
		k /= power(&s->node_speedup, s->cat->inter_node_efficiency,
		    nodes);
	return k;
}

double
mf_place_cost_factor(struct search *s, const struct mf_gpu *g,
    const struct plan *pl, int64_t count, int64_t nodes)
{
	if (!s->timed)
		return design6_factor(s, pl->time_factor, count, nodes);
	return s->units * memo_seconds(s, g, &pl->work, count, nodes) / 3600 *
	    (double)count;
}

double
mf_place_card_speed(const struct search *s, const struct mf_gpu *g)
{
	return s->timed ? 1.0 : g->throughput;
}

double
mf_place_least(struct search *s, const struct card *cd, const struct plan *pl)
{
	if (!s->timed)
		return pl->k_lo * cd->unit;
	return mf_place_cost_factor(s, cd->g, pl, pl->lo,
	           mf_place_nodes(s, cd->g, pl->lo)) *
	    cd->unit;
}

int64_t
mf_place_written_count(const struct search *s, unsigned fixes, int64_t gpus)
{
	for (unsigned left = fixes; left != 0;)
		if (mf_fix_info(mf_fix_take(&left))->kind == MF_FIXV_GPUS)
			return gpus;
	return s->job->count;
}

int64_t
mf_place_count_change(const struct search *s, unsigned fixes, int64_t count)
{
	const struct mf_job *job = s->job;
	struct mf_workload w = job->work;

	if (fixes & MF_FIXBIT(MF_FIX_REPLICAS))
		return 0;
	/* The job's count as read: written, or its parallelism's.  Where it
	 * was not written, a count written is the one the manifest with the
	 * fixes' fields gives anyway. */
	mf_fix_apply(&w, fixes, count);
	return mf_job_gpus(&w, job->count_given ? job->count : 0) == count ?
	    0 :
	    count;
}

double
mf_place_reference_hours(struct search *s, const struct plan *pl, int64_t c)
{
	const struct mf_job *job = s->job;
	double h;

	if (job->reference_hours <= 0)
		return 0;
	if (!s->timed)
		return pl->time_factor != 1.0 ?
		    job->reference_hours * pl->time_factor :
		    0;
	if (c < pl->work.gpus)
		c = pl->work.gpus;
	h = s->units *
	    memo_seconds(s, s->cat->ref, &pl->work, c,
	        mf_place_nodes(s, s->cat->ref, c)) /
	    3600;
	return fabs(h - job->reference_hours) > 1e-9 * h ? h : 0;
}

void
mf_place_no_step(struct mf_placement *p)
{
	memset(&p->step, 0, sizeof(p->step));
	p->tokens_per_step = 0;
}

void
mf_place_step(const struct search *s, const struct plan *pl,
    struct mf_placement *p)
{
	const struct mf_gpu *g = p->gpu;

	mf_place_no_step(p);
	if (!s->timed)
		return;
	if (by_reference(s, g))
		g = s->cat->ref;
	mf_step_of(&pl->work, &g->speed, p->count,
	    mf_place_nodes(s, g, p->count), &p->step);
	if (by_reference(s, p->gpu)) {
		/* The reference card's step over relativeThroughput; its MFU
		 * of this card's own peak, unknown where it gives no flops. */
		p->step.seconds /= p->gpu->throughput;
		for (int t = 0; t < MF_ST_COUNT; t++)
			p->step.term[t] /= p->gpu->throughput;
		p->step.tokens_per_second *= p->gpu->throughput;
		p->step.mfu =
		    mf_step_mfu(&pl->work, &p->gpu->speed, p->step.seconds);
	}
	p->tokens_per_step = pl->work.tokens * (p->count / pl->work.gpus);
}

double
mf_place_cost_per_mtok(const struct search *s, double cost)
{
	double tokens = s->units;

	if (!s->timed)
		return 0;
	if (by_request(s))
		tokens *= (double)s->job->work.output_tokens;
	return cost / tokens * 1e6;
}

/* The work of the job as written, for referenceHours on the reference
 * card: the estimate at vLLM's defaults for no card known, as a plan's
 * (mf_place_plan), and the work of the workload as the plan has it, whose
 * work vLLM's batch defaults do not change (time/ reads neither). */
static enum mf_rc
base_work(struct search *s, struct mf_work *out)
{
	struct mf_workload w = s->job->work, d = w;
	struct mf_estimate e;

	mf_vllm_defaults(&d, mf_vllm_tier(0, 0));
	if (mf_place_figures(s, &d, &e) != MF_OK)
		return MF_ERANGE;
	return mf_place_work(s, &w, &e, out);
}

enum mf_rc
mf_place_time_init(struct search *s, int64_t written)
{
	const struct mf_job *job = s->job;
	const struct mf_gpu *ref = s->cat->ref;
	struct mf_work wk;
	int64_t c;
	double u;

	s->timed = ref != NULL && job->model_source != MF_MODEL_NONE;
	s->units = 0;
	if (!s->timed)
		return MF_OK;
	if (base_work(s, &wk) != MF_OK)
		return MF_ERANGE;
	c = written > wk.gpus ? written - written % wk.gpus : wk.gpus;
	u = memo_seconds(s, ref, &wk, c, mf_place_nodes(s, ref, c));
	if (!(u > 0) || !isfinite(u))
		return MF_ERANGE;
	if (job->tokens > 0)
		s->units = (double)job->tokens;
	else if (job->requests > 0)
		s->units = (double)job->requests;
	else
		s->units = s->ref_hours * 3600 / u;
	/* What the job takes on the reference card: the figure a
	 * reference hour's cost is of. */
	s->ref_hours = s->units * u / 3600;
	return MF_OK;
}
