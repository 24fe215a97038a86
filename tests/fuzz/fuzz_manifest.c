/*
 * fuzz_manifest.c: a Job manifest from arbitrary bytes to a placement on
 * the shipped catalogue.
 *
 * Seeds: tests/fuzz/corpus/manifest/ (the YAML examples and the unit-test
 * manifests).  The shipped models and catalogue are read once, from
 * $MF_TOP (the repository root; "." when unset).  Every input either fails
 * with an error that says something, or reads into a job whose fields lie
 * in their bounds; the placement of such a job either overflows
 * (MF_ERANGE naming spec.workload) or is a decision whose parts agree:
 * a placement that fits, within the limits, using allowed fixes only and
 * no dearer than its alternatives; or a rejection whose fix list follows
 * design 7.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc/doc.h"
#include "fix/fix.h"
#include "manifest/manifest.h"
#include "model/model.h"
#include "place/place.h"
#include "catalog.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int ok)
{
	if (!ok)
		abort();
}

static void
check_job(const struct mf_job *job)
{
	const struct mf_workload *w = &job->work;

	check(job->name != NULL && job->name[0] != '\0');
	check(job->count >= 1 && job->count <= MF_JOB_MAX_GPUS);
	check(job->min_memory >= 0);
	check(job->min_memory > 0 || job->model_source != MF_MODEL_NONE);
	check(w->shard_gpus == 1 ||
	    job->count == w->shard_gpus * w->tensor * w->pipeline);
	check(job->count % (w->tensor * w->pipeline) == 0);
	/* The standard loss over the held fp32 output is one GPU's model's
	 * (mf_est_loss_refused). */
	check((unsigned)w->loss_upcast <= MF_UPCAST_OUTPUT);
	check(w->kind != MF_TRAINING || w->loss != MF_LOSS_STANDARD ||
	    w->loss_upcast != MF_UPCAST_OUTPUT ||
	    (w->tensor == 1 && w->pipeline == 1));
	check(w->shard_units == MF_UNITS_MODEL ||
	    w->shard_units == MF_UNITS_ENDS);
	check(job->model_source != MF_MODEL_URL || job->config_url != NULL);
	check(job->model_source != MF_MODEL_NAMED || job->model_name != NULL);
	check(job->allowed_fixes < (1u << MF_FIX_COUNT));
	check(job->max_cost < 0 || mf_job_has_duration(job));
	check(job->deadline_hours < 0 || mf_job_has_duration(job));
	check((job->reference_hours > 0) + (job->tokens > 0) +
	        (job->requests > 0) <=
	    1);
}

/* A candidate the search may return for job: it fits and obeys the rules
 * of design 6. */
static void
check_placement(const struct mf_job *job, const struct mf_placement *p,
    int from_model)
{
	unsigned lora = MF_FIXBIT(MF_FIX_LORA) | MF_FIXBIT(MF_FIX_QLORA);
	const struct mf_gpu *g = p->gpu;

	check(g >= cat->gpus && g < cat->gpus + cat->ngpus);
	check(p->count >= 1 && p->count <= g->max_count);
	check(
	    p->nodes == mf_cat_nodes(g, p->count) && p->nodes <= g->max_nodes);
	check(g->memory >= job->min_memory);
	check(!from_model ||
	    p->need <= mf_cat_usable_at(g, mf_headroom(cat, &job->work)));
	/* More GPUs than one only when asked, or by a fix that splits. */
	check(p->count == 1 || job->count_given ||
	    (p->fixes &
	        (MF_FIXBIT(MF_FIX_FSDP) | MF_FIXBIT(MF_FIX_TENSOR) |
	            MF_FIXBIT(MF_FIX_REPLICAS))));
	check(!(p->fixes & MF_FIXBIT(MF_FIX_TENSOR)) ||
	    p->count <= g->gpus_per_node);

	check((p->fixes & lora) != lora);
	/* LoRA shards under FSDP; QLoRA does not (mf_est_shard_refused). */
	check(!(p->fixes & MF_FIXBIT(MF_FIX_QLORA)) ||
	    !(p->fixes & MF_FIXBIT(MF_FIX_FSDP)));
	/* float8 runs on fp8 tensor cores, with none of the fixes it was
	 * not measured with (mf_est_float8_refused). */
	check(job->work.kind != MF_TRAINING || job->work.float8 == MF_F8_NONE ||
	    (g->speed.flops[MF_DT_FP8] > 0 &&
	        !(p->fixes &
	            (lora | MF_FIXBIT(MF_FIX_FSDP) |
	                MF_FIXBIT(MF_FIX_TENSOR)))));
	check(isfinite(p->cost) && p->cost >= 0 && p->hours > 0);
	check(isfinite(p->cost_per_ref_hour) && p->cost_per_ref_hour >= 0);
}

static void
check_admitted(const struct mf_job *job, const struct mf_decision *d)
{
	const struct mf_placement *p = &d->placement;

	check_placement(job, p, d->from_model);
	check((p->fixes & ~job->allowed_fixes) == 0);
	/* An admitted inference job serves what it asked for. */
	check(job->work.kind != MF_INFERENCE || !d->from_model ||
	    (p->max_seqs >= job->work.concurrency &&
	        p->max_context >= job->work.context_len));
	check(job->max_hourly_price < 0 ||
	    p->hourly_price <= job->max_hourly_price);
	check(job->max_cost < 0 || p->cost <= job->max_cost);
	check(job->deadline_hours < 0 || p->hours <= job->deadline_hours);
	check(d->nalt <= MF_MAX_ALTERNATIVES);
	for (size_t i = 0; i < d->nalt; i++) {
		check_placement(job, &d->alt[i], d->from_model);
		check(d->alt[i].gpu != p->gpu);
		check(d->alt[i].cost_per_ref_hour >=
		    p->cost_per_ref_hour * (1 - 1e-9));
	}
	check(d->floor > 0);
	check(d->limit == MF_LIMIT_NONE);
}

static void
check_rejected(const struct mf_job *job, const struct mf_decision *d)
{
	check(d->reason[0] != '\0');
	check(d->nfixes <= MF_FIX_COUNT);
	/* A floor alone has one fix: more GPUs, for a limit. */
	check(d->from_model || d->nfixes == 0 ||
	    (d->nfixes == 1 && d->fixes[0].fix == MF_FIX_REPLICAS));
	check(d->suggested >= -1 && d->suggested < (int)d->nfixes);
	check(d->suggested < 0 || d->fixes[d->suggested].placed);
	for (size_t i = 0; i < d->nfixes; i++) {
		const struct mf_fix_option *e = &d->fixes[i];

		check(i == 0 || e->fix > d->fixes[i - 1].fix);
		check(e->fixes & MF_FIXBIT(e->fix));
		check(e->need > 0 && e->min_memory >= e->need);
		check(e->gpus >= 1);
		if (e->placed) {
			check_placement(job, &e->placement, d->from_model);
			/* Its own fixes, and those admission may add by
			 * itself (docs/api.md). */
			check((e->placement.fixes & e->fixes) == e->fixes);
			check((e->placement.fixes &
			          ~(e->fixes | job->allowed_fixes)) == 0);
		}
	}
}

static void
place(const struct mf_job *job)
{
	struct mf_decision d;
	struct mf_error err;
	enum mf_rc rc;

	rc = mf_place(job, cat, &d, &err);
	if (rc == MF_ERANGE) {
		check(strcmp(err.field, "spec.workload") == 0);
		return;
	}
	/* A layout or a length the model cannot take (a tensor size the
	 * heads do not divide, a context past the model's limit). */
	if (rc == MF_EINVAL) {
		check(
		    err.text[0] != '\0' && strncmp(err.field, "spec.", 5) == 0);
		return;
	}
	check(rc == MF_OK);
	check(d.nwarn <= MF_MAX_WARNINGS);
	if (d.admitted)
		check_admitted(job, &d);
	else
		check_rejected(job, &d);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mf_doc *doc = NULL;
	struct mf_error err;
	struct mf_job job;

	load_once();
	err.text[0] = '\0';
	if (mf_doc_parse((const char *)data, size, MF_DOC_AUTO, &doc, &err) !=
	    MF_OK) {
		check(err.text[0] != '\0');
		return 0;
	}
	err.text[0] = '\0';
	if (mf_job_read(mf_doc_root(doc), "", models, &job, &err) != MF_OK) {
		check(err.text[0] != '\0');
	} else {
		check_job(&job);
		if (job.model_source != MF_MODEL_URL)
			place(&job);
	}
	mf_doc_free(doc);
	return 0;
}
