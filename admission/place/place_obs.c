/*
 * place_obs.c: what the runs of a job measured, used at its next
 * admission (design 23).  On a card with observations the largest
 * observed peak stands where the estimate stood: a torch peak under the
 * card's headroom, a device figure (DCGM) against the card's memory less
 * the catalogue's observations.margin.  Other cards take the largest
 * observed/estimated ratio, lowered by no more than
 * observations.maxLowering (a device figure raises
 * only, on its own card too).  Observed speed replaces the modelled one on its
 * card and scales the others by the same ratio.
 *
 * A need n on a card of usable bytes u moved by a ratio r fits when
 * n x r <= u: the search keeps its needs and takes u / r as the card's
 * usable bytes, and fill reports n x r beside n.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "place_int.h"

/* The plan of the job as written (no fixes), or NULL. */
static const struct plan *
own_plan(const struct search *s)
{
	assert(s->nplan <= MAX_PLANS);
	for (size_t i = 0; i < s->nplan; i++)
		if (s->plan[i].fixes == 0)
			return &s->plan[i];
	return NULL;
}

/* The modelled tokens/s of pl on count GPUs of g; 0 when not timed. */
static double
modelled_speed(struct search *s, const struct mf_gpu *g, const struct plan *pl,
    int64_t count)
{
	double k;

	if (!s->timed || s->units <= 0)
		return 0;
	k = mf_place_cost_factor(s, g, pl, count, mf_place_nodes(s, g, count));
	return k > 0 ? s->units * (double)count / (k * 3600) : 0;
}

/* The observed card o's need ratio (0: no peak) and speed ratio (0: no
 * speed). */
static void
card_ratios(struct search *s, const struct plan *pl, int64_t count,
    const struct mf_obs_card *o, double *mem, double *speed)
{
	const struct mf_gpu *g = mf_cat_find(s->cat, o->card);
	double model;

	*mem = 0;
	*speed = 0;
	if (o->peak > 0 && s->obs_estimate > 0)
		*mem = (double)o->peak / (double)s->obs_estimate;
	if (g == NULL || o->tokens_per_second <= 0)
		return;
	model = modelled_speed(s, g, pl, count);
	if (model > 0)
		*speed = o->tokens_per_second / model;
}

void
mf_place_obs_init(struct search *s)
{
	const struct mf_observed *obs = s->job->observed;
	const struct plan *pl = own_plan(s);
	int64_t count, most_runs = 0;
	double other = 0;

	s->other_mem = s->other_speed = 1;
	s->obs_runs = s->obs_estimate = 0;
	if (obs == NULL || obs->n == 0 || pl == NULL)
		return;
	assert(obs->n <= MF_OBS_CARDS);
	count = s->job->count < pl->lo ? pl->lo : s->job->count;
	s->obs_estimate = mf_place_need_at(pl, count);
	for (size_t i = 0; i < obs->n; i++) {
		const struct mf_obs_card *o = &obs->card[i];
		double r;

		card_ratios(s, pl, count, o, &s->obs_mem[i], &s->obs_speed[i]);
		s->obs_runs += o->runs;
		r = s->obs_mem[i];
		if (o->device && r < 1)
			r = r > 0 ? 1 : 0;
		if (r > other)
			other = r;
		if (s->obs_speed[i] > 0 && o->runs > most_runs) {
			most_runs = o->runs;
			s->other_speed = s->obs_speed[i];
		}
	}
	if (other > 0)
		s->other_mem = other < 1 - s->cat->obs_max_lowering ?
		    1 - s->cat->obs_max_lowering :
		    other;
}

/* The index of g in the job's observations, or -1. */
static int
observed_at(const struct mf_observed *obs, const struct mf_gpu *g)
{
	assert(obs->n <= MF_OBS_CARDS);
	for (size_t i = 0; i < obs->n; i++)
		if (strcmp(obs->card[i].card, g->name) == 0)
			return (int)i;
	return -1;
}

void
mf_place_obs_card(const struct search *s, struct card *cd)
{
	const struct mf_observed *obs = s->job->observed;
	struct mf_obs_note *n = &cd->obs;
	int64_t base = cd->usable;
	int i;

	memset(n, 0, sizeof(*n));
	if (s->obs_runs == 0)
		return;
	i = observed_at(obs, cd->g);
	n->runs = s->obs_runs;
	n->memory = s->other_mem;
	n->speed = s->other_speed;
	if (i >= 0) {
		assert(i < MF_OBS_CARDS);
		n->runs = obs->card[i].runs;
		n->here = 1;
		/* A device figure is the whole card's (CUDA context and
		 * all): it raises a low estimate, never lowers one
		 * (design 23). */
		if (s->obs_mem[i] > 0 &&
		    !(obs->card[i].device && s->obs_mem[i] < 1)) {
			n->memory = s->obs_mem[i];
			n->device = obs->card[i].device;
		}
		if (s->obs_speed[i] > 0)
			n->speed = s->obs_speed[i];
	}
	if (n->device)
		base =
		    (int64_t)((double)cd->g->memory * (1 - s->cat->obs_margin));
	if (cd->usable != INT64_MAX)
		cd->usable = (int64_t)((double)base / n->memory);
	cd->speed *= n->speed;
	cd->unit = cd->g->hourly_price / cd->speed;
}

enum mf_rc
mf_place_modelled(const struct mf_job *given, const struct mf_catalog *cat,
    const struct mf_gpu *g, int64_t count, int64_t *need,
    double *tokens_per_second, struct mf_error *err)
{
	struct mf_job job = *given;
	const struct plan *pl;
	struct search *s;
	enum mf_rc rc;

	job.count = count;
	job.count_given = 1;
	job.allowed_fixes = 0;
	job.observed = NULL;
	rc = mf_job_check_model(&job, err);
	if (rc != MF_OK)
		return rc;
	mf_job_bind(&job, cat);
	rc = mf_job_check_layout(&job, err);
	if (rc != MF_OK)
		return rc;
	/* The search holds every plan's estimate: too large for a stack. */
	s = malloc(sizeof(*s));
	if (s == NULL)
		return mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
		    "out of memory");
	mf_place_search_init(s, &job, cat);
	s->allowed = 0;
	rc = mf_place_time_init(s, count);
	if (rc == MF_OK)
		rc = mf_place_list_sets(s, &job.work, 0, 0, 0, 0, 0);
	pl = rc == MF_OK ? own_plan(s) : NULL;
	if (rc == MF_OK && pl == NULL)
		rc = MF_ERANGE;
	if (rc == MF_OK) {
		*need = mf_cadd(mf_place_need_at(pl, count),
		    mf_place_card_delta(s, g, pl));
		*tokens_per_second = modelled_speed(s, g, pl, count);
	}
	free(s);
	if (rc != MF_OK && rc != MF_ENOMEM)
		mf_est_error(rc, err);
	return rc;
}
