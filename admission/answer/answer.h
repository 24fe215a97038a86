/*
 * answer.h: the figures an estimate's answer gives beyond the estimate,
 * worked out here once, so that the writers (render.c: JSON, YAML, text)
 * only spell them: the floor, the smallest card that fits and what it
 * would cost, the layers of the largest pipeline stage, and the other
 * estimator's figure with the one rule for when it is shown.
 */
#ifndef MF_ANSWER_H
#define MF_ANSWER_H

#include <stdint.h>

#include "../../catalog/catalog.h"
#include "../estimate/estimate.h"
#include "../manifest/manifest.h"

/* The other estimator's figure is shown when the larger of the two passes
 * the smaller times this: when they differ by more than 5%. */
#define MF_OTHER_SHOWN 1.05

struct mf_est_answer {
	double headroom; /* the share of a card kept free (mf_headroom) */
	int64_t floor;   /* minMemory: per_gpu with headroom kept free, or -1
	                    past 2^63 (mf_floor_for) */
	/* The smallest card that holds per_gpu with headroom, NULL when none;
	 * the job's hours and cost on one of it, -1 without referenceHours. */
	const struct mf_gpu *fit;
	double fit_hours, fit_cost;
	int64_t stage_layers; /* layers of the largest pipeline stage */
	/* The estimate under the other estimator (post for pytorch, pytorch
	 * for post), other_per_gpu of it per GPU; shown when both are above
	 * 0 and the larger passes the smaller times MF_OTHER_SHOWN.  Not
	 * shown (0) when it could not be worked out, or was not asked for
	 * (mf_est_answer_other). */
	enum mf_estimator other;
	int64_t other_per_gpu;
	int shown;
};

/* The answer's figures for e, the estimate of job's workload, against the
 * catalogue cat (not NULL).  Fills every member of *a, the other
 * estimator's figure as not worked out (other_per_gpu -1, not shown). */
void mf_est_answer(const struct mf_job *job, const struct mf_estimate *e,
    const struct mf_catalog *cat, struct mf_est_answer *a);
/* The other estimator's figure and whether it is shown, into a (filled
 * by mf_est_answer for the same job and e): an estimate more, so only
 * for the answers that show it (the text's; the JSON and YAML carry it
 * nowhere). */
void mf_est_answer_other(const struct mf_job *job, const struct mf_estimate *e,
    struct mf_est_answer *a);

#endif
