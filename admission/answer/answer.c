/*
 * answer.c: an estimate's answer as values (answer.h), from the library's
 * own rules: the headroom, floor and smallest fit of place.h, the layout
 * of estimate.h, and the other estimator run on the same workload when
 * the answer shows its figure.
 */
#include "answer.h"

#include <string.h>

#include "../place/place.h"

void
mf_est_answer_other(const struct mf_job *job, const struct mf_estimate *e,
    struct mf_est_answer *a)
{
	struct mf_workload other = job->work;
	struct mf_estimate o;
	double lo, hi;

	other.estimator = a->other;
	if (mf_est_figures(&job->model, &other, &o) != MF_OK)
		return;
	a->other_per_gpu = o.per_gpu;
	lo = (double)(o.per_gpu < e->per_gpu ? o.per_gpu : e->per_gpu);
	hi = (double)(o.per_gpu < e->per_gpu ? e->per_gpu : o.per_gpu);
	a->shown = lo > 0 && hi > lo * MF_OTHER_SHOWN;
}

void
mf_est_answer(const struct mf_job *job, const struct mf_estimate *e,
    const struct mf_catalog *cat, struct mf_est_answer *a)
{
	memset(a, 0, sizeof(*a));
	a->other = e->estimator == MF_EST_POST ? MF_EST_PYTORCH : MF_EST_POST;
	a->other_per_gpu = -1;
	a->headroom = mf_headroom(cat, &job->work);
	a->floor = mf_floor_for(e->per_gpu, a->headroom);
	a->fit = mf_smallest_fit(cat, job, e->per_gpu, a->headroom);
	a->fit_hours = a->fit_cost = -1;
	/* Design 6's hours; a modelled catalogue's are the job's work on
	 * the card, which the admission's placements give (design 21). */
	if (a->fit != NULL && job->reference_hours > 0 &&
	    (cat->ref == NULL || job->model_source == MF_MODEL_NONE)) {
		a->fit_hours = job->reference_hours / a->fit->throughput;
		a->fit_cost = a->fit_hours * a->fit->hourly_price;
	}
	a->stage_layers = mf_est_stage_layers(&job->model, &job->work);
}
