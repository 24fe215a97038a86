/*
 * place_reason.c: the sentence that says why a job was rejected: the
 * limit that rules out the cheapest fit, or what no card of the
 * catalogue holds.
 */
#include <stdio.h>

#include "place_int.h"
#include "../base/qty.h"

static const struct mf_gpu *
largest_card(const struct search *s)
{
	const struct mf_gpu *best = NULL;

	for (size_t i = 0; i < s->cat->ngpus; i++) {
		const struct mf_gpu *g = &s->cat->gpus[i];

		if (mf_place_most(s, g) >= s->job->count &&
		    mf_place_runs_on(s->job, g) &&
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

	d->limit = mf_place_violated(job, p);
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

void
mf_place_explain(const struct search *s, struct mf_decision *d)
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
	if (big == NULL && job->work.kind == MF_TRAINING &&
	    job->work.float8 != MF_F8_NONE &&
	    mf_place_passed_over(job, s->cat, mf_place_runs_float8, q, 0) ==
	        s->cat->ngpus) {
		snprintf(d->reason, sizeof(d->reason),
		    "float8 needs fp8 tensor cores, and no card in the catalogue gives flops.fp8");
		return;
	}
	if (big == NULL &&
	    mf_place_passed_over(job, s->cat, mf_place_starts_vllm, q, 0) ==
	        s->cat->ngpus) {
		snprintf(d->reason, sizeof(d->reason),
		    "maxNumSeqs %lld is more than vLLM's default maxNumBatchedTokens on every card in the catalogue, and vLLM refuses to start with fewer tokens a step than sequences: give maxNumBatchedTokens, at least %lld",
		    (long long)job->work.max_num_seqs,
		    (long long)job->work.max_num_seqs);
		return;
	}
	if (big == NULL) {
		snprintf(d->reason, sizeof(d->reason),
		    "no card in the catalogue takes %lld GPUs per job (maxCount)%s",
		    (long long)job->count,
		    job->work.kind == MF_TRAINING &&
		            job->work.float8 != MF_F8_NONE ?
		        " among those with fp8 tensor cores (flops.fp8), which float8 needs" :
		        "");
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
		if (mf_est_counted((enum mf_bucket)i) &&
		    mf_est_bucket_per_gpu(&d->est, (enum mf_bucket)i) >
		        mf_est_bucket_per_gpu(&d->est, (enum mf_bucket)b))
			b = i;
	if (mf_place_engine_budget(&job->work))
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
