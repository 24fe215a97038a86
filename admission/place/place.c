/*
 * place.c: a decision (mf_place): the search over the plans of the job,
 * the floor in effect, the warnings, and for a rejection its reason and
 * its fixes.  The files of the placement are listed in place_int.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "place_int.h"
#include "../base/qty.h"

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

/* The warnings of design 7, each where its fix applies (fix.c: not
 * accumulation or autocast with the optimizer in backward). */
static void
add_warnings(const struct mf_job *job, struct mf_decision *d)
{
	const struct mf_workload *w = &d->work;

	if (!d->admitted)
		return;
	if (w->kind == MF_TRAINING && w->attention == MF_EAGER)
		warn(d,
		    "eager attention stores the s x s scores: attn_implementation=\"sdpa\" frees them");
	if (mf_fix_applies(job, w, MF_FIX_AUTOCAST))
		warn(d,
		    "fp32 without autocast: bf16 autocast halves weights and activations");
	if (mf_fix_applies(job, w, MF_FIX_MICROBATCH))
		warn(d,
		    "microBatch %lld: 1 with %lld accumulation steps keeps the batch and frees activation memory",
		    (long long)w->micro_batch, (long long)w->micro_batch);
	/* docs/time.md, What is not modelled: only a modelled step
	 * (design 21) claims the job's work; design 6 scales its hours. */
	if (w->shard_cpu_offload && d->placement.step.seconds > 0)
		warn(d,
		    "sharding.cpuOffload: the modelled step leaves out the host's optimizer step and the shards' PCIe copies");
	if (d->placement.spare < 0.10)
		warn(d, "only %.0f%% of %s memory is spare",
		    d->placement.spare * 100, d->placement.gpu->name);
}

/* float8 (design 22): the cards passed over for want of fp8 tensor
 * cores, named. */
static void
warn_no_fp8(const struct mf_job *job, const struct mf_catalog *cat,
    struct mf_decision *d)
{
	char names[160];

	if (!d->admitted ||
	    mf_place_passed_over(job, cat, mf_place_runs_float8, names,
	        sizeof(names)) == 0)
		return;
	warn(d, "float8 needs fp8 tensor cores: not considered %s", names);
}

/* maxNumSeqs without maxNumBatchedTokens: the cards passed over because
 * vLLM's default tokens a step there are fewer (mf_place_starts_vllm),
 * counted (their names would pass a warning's length). */
static void
warn_vllm_start(const struct mf_job *job, const struct mf_catalog *cat,
    struct mf_decision *d)
{
	size_t n;

	if (!d->admitted || !mf_vllm_seqs_given(&job->work))
		return;
	n = mf_place_passed_over(job, cat, mf_place_starts_vllm, NULL, 0);
	if (n == 0)
		return;
	warn(d,
	    "maxNumSeqs %lld: not considered %zu card%s where vLLM's default maxNumBatchedTokens is fewer, which vLLM refuses",
	    (long long)job->work.max_num_seqs, n, n == 1 ? "" : "s");
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

/* d's estimate of figures alone: through the search's (vLLM's defaults
 * for no card known where the workload has none, as mf_est_compute takes
 * them), the plan's when the workload placed is the same. */
static enum mf_rc
figures_of(struct search *s, struct mf_decision *d)
{
	struct mf_workload w = d->work;

	mf_vllm_defaults(&w, mf_vllm_tier(0, 0));
	return mf_place_figures(s, &w, &d->est);
}

/*
 * d->est with its formulas, of the job's workload as given, before the
 * search: the answer's estimate unless a fix or a serving engine's card
 * changes the workload, and the figures the search asks for first
 * (mf_place_seed_figures).  0 when the estimate is refused, as the
 * search then finds for itself.
 */
static int
own_estimate(struct search *s, struct mf_decision *d)
{
	if (mf_est_compute(&s->job->model, &s->job->work, &d->est) != MF_OK)
		return 0;
	mf_place_seed_figures(s, &d->est);
	return 1;
}

/* d->step_work: the search's when it worked out the same workload with
 * the same figures (the job's own, timed), else worked out here. */
static enum mf_rc
step_work(struct search *s, struct mf_decision *d)
{
	struct mf_estimate f;

	mf_est_copy_figures(&f, &d->est);
	return mf_place_work(s, &d->work, &f, &d->step_work);
}

/* d's workload as placed and its need; the estimate's formulas too
 * unless figures_only, made again only where own (own_estimate's) is
 * not of that workload. */
static enum mf_rc
describe(struct search *s, int figures_only, int own, struct mf_decision *d)
{
	const struct mf_job *job = s->job;
	enum mf_rc rc = MF_OK;

	d->work = job->work;
	if (d->admitted) {
		mf_fix_apply(&d->work, d->placement.fixes, d->placement.count);
		mf_work_bind_card(&d->work, d->placement.gpu);
	}
	if (!d->from_model) {
		d->need = job->min_memory;
		return MF_OK;
	}
	if (figures_only)
		rc = figures_of(s, d);
	else if (!own || memcmp(&d->work, &job->work, sizeof(d->work)) != 0)
		rc = mf_est_compute(&job->model, &d->work, &d->est);
	if (rc != MF_OK)
		return MF_ERANGE;
	if (!figures_only)
		d->worked = step_work(s, d) == MF_OK;
	d->need = d->est.per_gpu;
	/* Design 23: the need the runs measured on the card placed. */
	if (d->admitted && d->placement.observed.runs > 0)
		d->need = d->placement.need;
	return MF_OK;
}

/* The fingerprint of the job as placed (as written when rejected): the
 * one its runs were looked up under when that is the same job. */
static void
fingerprint(const struct mf_job *given, struct mf_decision *d)
{
	unsigned fixes = d->admitted ? d->placement.fixes : 0;
	int64_t count = d->admitted ? d->placement.count : given->count;

	if (fixes == 0 && count == given->count && given->observed != NULL)
		memcpy(d->fingerprint, given->observed->fingerprint,
		    sizeof(d->fingerprint));
	else
		mf_fp_job(given, fixes, count, d->fingerprint);
}

/* mf_place; the estimate's formulas and the alternatives' figures unless
 * figures_only. */
static enum mf_rc
place(const struct mf_job *given, const struct mf_catalog *cat,
    int figures_only, struct mf_decision *out, struct mf_error *err)
{
	struct mf_job bound = *given, *job = &bound;
	struct search s;
	struct mf_decision *d = out;
	enum mf_rc rc;
	int own = 0;

	rc = mf_job_check_model(given, err);
	if (rc != MF_OK)
		return rc;
	mf_job_bind(job, cat);
	/* As pods, every pod takes a GPU at least. */
	if (job->pods > 0 && !job->count_given)
		job->count = job->pods;
	rc = mf_job_check_layout(job, err);
	if (rc != MF_OK)
		return rc;
	memset(d, 0, offsetof(struct mf_decision, est));
	d->limit = MF_LIMIT_NONE;
	d->suggested = -1;
	d->from_model = job->model_source != MF_MODEL_NONE;
	mf_place_search_init(&s, job, cat);
	if (!figures_only && d->from_model)
		own = own_estimate(&s, d);
	rc = mf_place_time_init(&s, given->count);
	if (rc == MF_OK)
		rc = mf_place_list_sets(&s, &job->work, 0, s.allowed, 0, 0, 0);
	if (rc != MF_OK)
		goto range;
	mf_place_obs_init(&s);
	mf_place_search_cards(&s, figures_only ? 1 : MF_MAX_ALTERNATIVES + 1,
	    d);
	rc = describe(&s, figures_only, own, d);
	if (rc != MF_OK)
		goto range;
	rc = set_floor(&s, d);
	if (rc != MF_OK)
		goto range;
	if (!d->admitted) {
		mf_place_explain(&s, d);
		rc = mf_place_list_fixes(&s, d);
		if (rc != MF_OK)
			goto range;
	}
	add_warnings(job, d);
	warn_no_fp8(job, cat, d);
	warn_vllm_start(job, cat, d);
	fingerprint(given, d);
	goto out;
range:
	mf_est_error(rc, err);
out:
	return rc;
}

enum mf_rc
mf_place(const struct mf_job *job, const struct mf_catalog *cat,
    struct mf_decision *out, struct mf_error *err)
{
	return place(job, cat, 0, out, err);
}

enum mf_rc
mf_place_no_formulas(const struct mf_job *job, const struct mf_catalog *cat,
    struct mf_decision *out, struct mf_error *err)
{
	return place(job, cat, 1, out, err);
}
