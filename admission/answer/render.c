#include "render.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "../base/buf.h"
#include "../base/jw.h"
#include "../base/qty.h"

#define TEXT_MAX (4u << 20)

#define JSON_MAX (16u << 20)
/* Why the paged optimizer's state is apart from the total (design 22). */
#define PAGED_NOTE \
	"the 8-bit moments bitsandbytes' paged optimizer keeps in CUDA unified memory, which pages to the host under pressure instead of failing: not counted toward the fit; the host needs room for them, and a step that pages them runs slower"

static void
fix_list(struct mf_jw *w, const char *key, unsigned fixes)
{
	mf_jw_open(w, key, '[');
	for (unsigned left = fixes; left != 0;)
		mf_jw_str(w, NULL, mf_fix_name(mf_fix_take(&left)));
	mf_jw_close(w, ']');
}

/*
 * The Slurm request of count GPUs over nodes, exactly count: the gres a
 * node ("gpu:h100:2", "gpu:2" where the mapping names no type; sbatch
 * --gres is a node's) when the count divides evenly, else the GPUs of the
 * whole job ("h100:9", "9"; sbatch --gpus, which Slurm spreads over the
 * nodes with at least one on each).  Rounding a count up to a whole
 * number a node would hold GPUs the placement neither needs nor prices.
 */
static void
slurm_request(struct mf_jw *w, const struct mf_gpu *g, int64_t count,
    int64_t nodes)
{
	const char *type = mf_cat_gres_type(g);
	char req[96];

	if (nodes <= 1 || count % nodes == 0) {
		snprintf(req, sizeof(req), "%s:%lld",
		    g->slurm.gres != NULL ? g->slurm.gres : "gpu",
		    (long long)(count / (nodes > 1 ? nodes : 1)));
		mf_jw_str_lit(w, "gres", req);
	} else {
		snprintf(req, sizeof(req), "%s%s%lld", type != NULL ? type : "",
		    type != NULL ? ":" : "", (long long)count);
		mf_jw_str_lit(w, "gpus", req);
	}
	if (nodes > 1)
		mf_jw_int_lit(w, "nodes", nodes);
}

/*
 * A card's slurm mapping, absent when it has none.  With count > 0 it is
 * a placement's request (slurm_request), else the mapping's gres.
 */
static void
slurm_map(struct mf_jw *w, const struct mf_gpu *g, int64_t count, int64_t nodes)
{
	const struct mf_slurm *s = &g->slurm;

	if (!mf_cat_has_slurm(g))
		return;
	mf_jw_open_lit(w, "slurm", '{');
	if (count > 0)
		slurm_request(w, g, count, nodes);
	else if (s->gres != NULL)
		mf_jw_str_lit(w, "gres", s->gres);
	if (s->partition != NULL)
		mf_jw_str_lit(w, "partition", s->partition);
	if (s->constraint != NULL)
		mf_jw_str_lit(w, "constraint", s->constraint);
	mf_jw_close(w, '}');
}

/*
 * The manifest fields fixes set on job: those set from a GPU count
 * (fsdp, tensor, count) for the job run on gpus GPUs, another amount
 * (tokens, sequences) amount; the count fix's field, resources.gpu.count,
 * where count > 0; and referenceHours when it changes (reference_hours >
 * 0).
 */
static void
manifest_change(struct mf_jw *w, const struct mf_job *job, unsigned fixes,
    int64_t gpus, int64_t amount, int64_t count, double reference_hours)
{
	mf_jw_open_lit(w, "manifestChange", '{');
	for (unsigned left = fixes; left != 0;) {
		enum mf_fix f = mf_fix_take(&left);
		const struct mf_fix_info *fi = mf_fix_info(f);

		switch (fi->kind) {
		case MF_FIXV_GPUS:
			mf_jw_int(w, fi->field,
			    mf_fix_gpus_value(f, &job->work, gpus));
			break;
		case MF_FIXV_AMOUNT:
			mf_jw_int(w, fi->field, amount);
			break;
		case MF_FIXV_BOOL:
			mf_jw_bool(w, fi->field, 1);
			break;
		case MF_FIXV_INT:
			mf_jw_int(w, fi->field, strtoll(fi->value, NULL, 10));
			break;
		case MF_FIXV_STRING:
			mf_jw_str(w, fi->field, fi->value);
			break;
		}
	}
	if (count > 0)
		mf_jw_int(w, mf_fix_info(MF_FIX_REPLICAS)->field, count);
	if (reference_hours > 0)
		mf_jw_num_lit(w, "spec.duration.referenceHours",
		    reference_hours, 6);
	mf_jw_close(w, '}');
}

/* Term t's arithmetic, as the member "formula": numbers and words,
 * written where the answer goes. */
static void
formula(struct mf_jw *w, const struct mf_step *st, enum mf_step_term t)
{
	struct mf_buf b;

	mf_jw_text_begin(w, MF_JW_LIT("formula"), MF_STEP_FORMULA_MAX - 1, &b);
	mf_step_formula(st, t, &b);
	mf_jw_text_end(w, &b);
}

/* A placement's speed and step (design 21), when its hours are
 * modelled. */
static void
step(struct mf_jw *w, const struct mf_placement *p)
{
	const struct mf_step *st = &p->step;

	if (st->seconds <= 0)
		return;
	mf_jw_num_lit(w, "costPerMillionTokens", p->cost_per_mtok, 4);
	mf_jw_num_lit(w, "tokensPerSecond", st->tokens_per_second, 1);
	if (st->mfu > 0)
		mf_jw_num_lit(w, "mfu", st->mfu, 3);
	else
		mf_jw_null_lit(w, "mfu");
	mf_jw_str_lit(w, "bound", mf_bound_name(st->bound));
	mf_jw_open_lit(w, "time", '{');
	mf_jw_num_lit(w, "stepSeconds", st->seconds, 6);
	mf_jw_int_lit(w, "tokensPerStep", p->tokens_per_step);
	mf_jw_open_lit(w, "terms", '[');
	for (int t = 0; t < MF_ST_COUNT; t++) {
		mf_jw_open(w, NULL, '{');
		mf_jw_str_lit(w, "name", mf_step_term_name(t));
		mf_jw_num_lit(w, "seconds", st->term[t], 6);
		formula(w, st, (enum mf_step_term)t);
		mf_jw_close(w, '}');
	}
	mf_jw_close(w, ']');
	mf_jw_close(w, '}');
}

/* Design 23: which figures of a placement the job's runs measured, from
 * how many, with the estimate beside them; left out when none did. */
static void
observed(struct mf_jw *w, const struct mf_placement *p)
{
	const struct mf_obs_note *n = &p->observed;

	if (n->runs == 0)
		return;
	mf_jw_open_lit(w, "observed", '{');
	mf_jw_int_lit(w, "runs", n->runs);
	mf_jw_bool_lit(w, "onThisCard", n->here);
	mf_jw_str_lit(w, "peak", n->device ? "device" : "torch");
	mf_jw_int_lit(w, "needBytes", p->need);
	mf_jw_int_lit(w, "estimatedNeedBytes", n->estimate);
	mf_jw_num_lit(w, "needRatio", n->memory, 4);
	mf_jw_num_lit(w, "speedRatio", n->speed, 4);
	if (p->step.seconds > 0) {
		mf_jw_num_lit(w, "tokensPerSecond",
		    p->step.tokens_per_second * n->speed, 3);
		mf_jw_num_lit(w, "estimatedTokensPerSecond",
		    p->step.tokens_per_second, 3);
	}
	if (p->timed) {
		mf_jw_num_lit(w, "hours", p->hours, 3);
		mf_jw_num_lit(w, "estimatedHours", n->est_hours, 3);
	}
	mf_jw_close(w, '}');
}

/* A placement; amount is what a context or concurrency fix among its
 * fixes sets (an entry's), 0 for the others. */
static void
placement(struct mf_jw *w, const char *key, const struct mf_job *job,
    const struct mf_placement *p, int64_t amount)
{
	int timed = p->timed;

	mf_jw_open(w, key, '{');
	mf_jw_str_lit(w, "gpu", p->gpu->name);
	mf_jw_int_lit(w, "count", p->count);
	mf_jw_int_lit(w, "nodes", p->nodes);
	mf_cat_card_write(w, p->gpu, MF_CARD_MEMORY);
	mf_jw_num_lit(w, "spareFraction", p->spare, 6);
	mf_jw_num_lit(w, "hourlyPrice", p->hourly_price, 4);
	if (timed) {
		mf_jw_num_lit(w, "hours", p->hours, 3);
		mf_jw_num_lit(w, "cost", p->cost, 2);
	} else {
		mf_jw_null_lit(w, "hours");
		mf_jw_null_lit(w, "cost");
	}
	mf_jw_num_lit(w, "costPerReferenceHour", p->cost_per_ref_hour, 6);
	step(w, p);
	observed(w, p);
	if (mf_job_serves(job)) {
		mf_jw_int_lit(w, "maxConcurrency", p->max_seqs);
		mf_jw_int_lit(w, "maxContextLength", p->max_context);
	}
	fix_list(w, "fixes", p->fixes);
	/* What the job as placed sets: its fixes on the placement's GPUs,
	 * as mf_fix_apply does, and the hours of the job so written. */
	manifest_change(w, job, p->fixes, p->count, amount, p->count_change,
	    p->reference_hours);
	mf_cat_card_write(w, p->gpu, MF_CARD_LABELS);
	slurm_map(w, p->gpu, p->count, p->nodes);
	mf_jw_close(w, '}');
}

static void
code_change(struct mf_jw *w, const struct mf_job *job, unsigned fixes)
{
	mf_jw_open_lit(w, "codeChange", '[');
	for (unsigned left = fixes; left != 0;)
		mf_jw_str(w, NULL,
		    mf_fix_code(mf_fix_take(&left),
		        job->work.kind == MF_INFERENCE));
	mf_jw_close(w, ']');
}

static void
fix_entries(struct mf_jw *w, const struct mf_job *job,
    const struct mf_decision *d)
{
	assert(d->nfixes <= MF_FIX_COUNT);
	mf_jw_open_lit(w, "fixes", '[');
	for (size_t i = 0; i < d->nfixes; i++) {
		const struct mf_fix_option *e = &d->fixes[i];

		mf_jw_open(w, NULL, '{');
		mf_jw_str_lit(w, "fix", mf_fix_name(e->fix));
		fix_list(w, "fixes", e->fixes);
		mf_jw_int_lit(w, "gpus", e->gpus);
		mf_jw_int_lit(w, "needBytes", e->need);
		mf_jw_qty_lit(w, "minMemory", e->min_memory, MF_QTY_BINARY);
		if (e->placed)
			placement(w, "placement", job, &e->placement,
			    e->amount);
		else
			mf_jw_null_lit(w, "placement");
		manifest_change(w, job, e->fixes, e->gpus, e->amount,
		    e->count_change, e->reference_hours);
		code_change(w, job, e->fixes);
		mf_jw_bool_lit(w, "modellingDecision",
		    mf_fix_info(e->fix)->modelling);
		mf_jw_close(w, '}');
	}
	mf_jw_close(w, ']');
}

static void
need(struct mf_jw *w, const struct mf_job *job, const struct mf_decision *d)
{
	mf_jw_open_lit(w, "need", '{');
	mf_jw_str_lit(w, "source", d->from_model ? "model" : "minMemory");
	if (d->from_model)
		mf_jw_int_lit(w, "perGpuBytes", d->need);
	else
		mf_jw_null_lit(w, "perGpuBytes");
	if (job->min_memory > 0)
		mf_jw_int_lit(w, "minMemoryBytes", job->min_memory);
	else
		mf_jw_null_lit(w, "minMemoryBytes");
	mf_jw_close(w, '}');
}

void
mf_write_decision(struct mf_jw *w, const char *key, const struct mf_job *job,
    const struct mf_decision *d, const struct mf_catalog *cat)
{
	assert(d->nwarn <= MF_MAX_WARNINGS && d->nalt <= MF_MAX_ALTERNATIVES &&
	    d->suggested < MF_FIX_COUNT);
	mf_jw_open(w, key, '{');
	mf_jw_bool_lit(w, "admitted", d->admitted);
	mf_jw_str_lit(w, "job", job->name ? job->name : "");
	mf_jw_str_lit(w, "fingerprint", d->fingerprint);
	mf_jw_str_lit(w, "estimator", mf_estimator_name(d->work.estimator));
	need(w, job, d);
	mf_jw_qty_lit(w, "minMemory", d->floor,
	    (enum mf_qty_format)d->floor_format);
	mf_jw_open_lit(w, "warnings", '[');
	for (size_t i = 0; i < d->nwarn; i++)
		mf_jw_str(w, NULL, d->warnings[i]);
	mf_jw_close(w, ']');
	if (d->admitted) {
		observed(w, &d->placement);
		placement(w, "placement", job, &d->placement, 0);
		mf_jw_open_lit(w, "alternatives", '[');
		for (size_t i = 0; i < d->nalt; i++)
			placement(w, NULL, job, &d->alt[i], 0);
		mf_jw_close(w, ']');
	} else {
		mf_jw_str_lit(w, "reason", d->reason);
		mf_jw_str_lit(w, "limit", mf_limit_name(d->limit));
		fix_entries(w, job, d);
		mf_jw_str_lit(w, "suggested",
		    d->suggested < 0 ? NULL :
		                       mf_fix_name(d->fixes[d->suggested].fix));
	}
	if (d->from_model) {
		struct mf_job placed = *job;

		placed.work = d->work;
		mf_write_estimate(w, "estimate", &placed, NULL, &d->est,
		    d->worked ? &d->step_work : NULL, cat);
	}
	mf_jw_close(w, '}');
}

/* The two candidates of one GPU's transient that FSDP's formula names
 * where it tells the phases of the step apart (est_fsdp.c). */
static void
phase_transients(struct mf_jw *w, const struct mf_workload *wl,
    const struct mf_estimate *e)
{
	if (e->estimator != MF_EST_PYTORCH || !mf_est_fsdp_phased(wl))
		return;
	mf_jw_int_lit(w, "lossTransient", e->gpu_loss_transient);
	mf_jw_int_lit(w, "layerTransient", e->gpu_layer_transient);
}

static void
buckets(struct mf_jw *w, const struct mf_workload *wl,
    const struct mf_estimate *e)
{
	mf_jw_open_lit(w, "buckets", '[');
	for (int b = 0; b < MF_B_COUNT; b++) {
		if (e->bucket[b] == 0 || !mf_est_counted((enum mf_bucket)b))
			continue;
		mf_jw_open(w, NULL, '{');
		mf_jw_str_lit(w, "name", mf_bucket_name((enum mf_bucket)b));
		mf_jw_int_lit(w, "bytes", e->bucket[b]);
		mf_jw_int_lit(w, "perGpuBytes",
		    mf_est_bucket_per_gpu(e, (enum mf_bucket)b));
		mf_jw_str_lit(w, "formula", e->formula[b]);
		if (e->gpu_formula[b][0] != '\0' &&
		    strcmp(e->gpu_formula[b], e->formula[b]) != 0)
			mf_jw_str_lit(w, "perGpuFormula", e->gpu_formula[b]);
		if (b == MF_B_SHARDING)
			phase_transients(w, wl, e);
		mf_jw_close(w, '}');
	}
	mf_jw_close(w, ']');
}

/* What a paged optimizer keeps in CUDA unified memory, apart from the
 * buckets and the fit (mf_est_counted), with why. */
static void
paged(struct mf_jw *w, const struct mf_estimate *e)
{
	if (e->bucket[MF_B_PAGED] == 0)
		return;
	mf_jw_open_lit(w, "pagedOptimizer", '{');
	mf_jw_int_lit(w, "bytes", e->bucket[MF_B_PAGED]);
	mf_jw_int_lit(w, "perGpuBytes", mf_est_bucket_per_gpu(e, MF_B_PAGED));
	mf_jw_str_lit(w, "formula", e->formula[MF_B_PAGED]);
	mf_jw_str_lit(w, "note", PAGED_NOTE);
	mf_jw_close(w, '}');
}

static void
smallest_fit(struct mf_jw *w, const struct mf_est_answer *a)
{
	const struct mf_gpu *g = a->fit;

	if (g == NULL) {
		mf_jw_null_lit(w, "smallestFit");
		return;
	}
	mf_jw_open_lit(w, "smallestFit", '{');
	mf_jw_str_lit(w, "gpu", g->name);
	mf_cat_card_write(w, g, MF_CARD_MEMORY);
	mf_jw_num_lit(w, "hourlyPrice", g->hourly_price, 4);
	if (a->fit_hours >= 0) {
		mf_jw_num_lit(w, "hours", a->fit_hours, 3);
		mf_jw_num_lit(w, "cost", a->fit_cost, 2);
	} else {
		mf_jw_null_lit(w, "hours");
		mf_jw_null_lit(w, "cost");
	}
	mf_jw_close(w, '}');
}

/* The framework named (design 22) and the fields whose values came from
 * it, as paths under spec.workload; nothing without one. */
static void
from_framework(struct mf_jw *w, const struct mf_job *job)
{
	const char *f;

	if (!job->framework_given)
		return;
	mf_jw_str_lit(w, "framework", mf_framework_name(job->framework));
	mf_jw_open_lit(w, "fromFramework", '[');
	for (int i = 0;
	     (f = mf_framework_field(job->framework, job->work.method,
	          job->framework_sharded, i)) != NULL;
	     i++)
		if (job->from_framework >> i & 1u)
			mf_jw_str(w, NULL, f);
	mf_jw_close(w, ']');
}

/* The same in words, for the text estimate. */
static void
text_framework(struct mf_buf *b, const struct mf_job *job)
{
	const char *f;
	int k = 0;

	if (!job->framework_given)
		return;
	mf_buf_printf(b, "recipe: from %s:", mf_framework_name(job->framework));
	for (int i = 0;
	     (f = mf_framework_field(job->framework, job->work.method,
	          job->framework_sharded, i)) != NULL;
	     i++)
		if (job->from_framework >> i & 1u)
			mf_buf_printf(b, "%s %s", k++ ? "," : "", f);
	mf_buf_printf(b, "%s\n",
	    k ? "" : " nothing (the manifest states every field it sets)");
}

/*
 * The recipe a training estimate modelled (design 19), each field as the
 * manifest names it: the precision, the attention counted (Gemma-2's sdpa
 * is eager), the checkpointing (false, true, op or every Nth layer),
 * activation offloading as the estimator counted it (mf_est_offloads:
 * the post's arithmetic has none), optimizer-in-backward (est_state.c),
 * compile when the job compiles (est_pytorch.c), float8 when the job asks
 * for it (est_pytorch.c, est_state.c), and the loss as the estimator
 * counted it (mf_est_loss: standard, or chunked with its lossChunks; the
 * standard with lossUpcast output, mf_est_output_upcast); with a
 * framework, which one and the fields it supplied (from_framework); and
 * the moment that sets e's peak, loading or the step (design 22).
 */
static void
recipe(struct mf_jw *w, const struct mf_job *job, const struct mf_estimate *e)
{
	const struct mf_workload *wl = &job->work;

	if (wl->kind != MF_TRAINING)
		return;
	mf_jw_open_lit(w, "recipe", '{');
	mf_jw_str_lit(w, "precision",
	    mf_workload_enum_name("precision", wl->precision));
	mf_jw_str_lit(w, "attention",
	    mf_workload_enum_name("attention",
	        mf_est_attention(&job->model, wl)));
	if (wl->checkpointing == MF_CKPT_OP)
		mf_jw_str_lit(w, "gradientCheckpointing", "op");
	else if (wl->checkpointing == MF_CKPT_FULL && wl->ckpt_every > 1)
		mf_jw_int_lit(w, "gradientCheckpointing", wl->ckpt_every);
	else
		mf_jw_bool_lit(w, "gradientCheckpointing",
		    wl->checkpointing != 0);
	mf_jw_str_lit(w, "loss",
	    mf_workload_enum_name("loss", mf_est_loss(wl)));
	if (mf_est_loss(wl) == MF_LOSS_CHUNKED)
		mf_jw_int_lit(w, "lossChunks", wl->loss_chunks);
	if (mf_est_output_upcast(wl))
		mf_jw_str_lit(w, "lossUpcast", "output");
	mf_jw_bool_lit(w, "activationOffload", mf_est_offloads(wl));
	mf_jw_bool_lit(w, "optimizerInBackward", wl->optimizer_in_backward);
	if (wl->compile)
		mf_jw_bool_lit(w, "compile", 1);
	if (wl->float8 != MF_F8_NONE)
		mf_jw_str_lit(w, "float8",
		    mf_workload_enum_name("float8", wl->float8));
	from_framework(w, job);
	mf_jw_str_lit(w, "peakMoment",
	    mf_peak_moment_name(mf_est_peak_moment(e)));
	mf_jw_close(w, '}');
}

/* Activation offloading in words, when the job asks for it. */
static void
text_offload(struct mf_buf *b, const struct mf_workload *wl)
{
	if (mf_est_offloads(wl))
		mf_buf_printf(b,
		    "activationOffload: the layers' inputs in host memory but those in flight (torchtune's OffloadActivations)\n");
	else if (wl->activation_offload)
		mf_buf_printf(b,
		    "activationOffload: not in the post's arithmetic, which keeps every activation on the GPU\n");
}

/* The recipe in words, for the text estimate; the moment of the peak
 * when it is loading (design 22). */
static void
text_recipe(struct mf_buf *b, const struct mf_job *job,
    const struct mf_estimate *e)
{
	const struct mf_workload *wl = &job->work;
	char ckpt[48], loss[48];

	if (wl->kind != MF_TRAINING)
		return;
	if (wl->checkpointing == MF_CKPT_OP)
		snprintf(ckpt, sizeof(ckpt), "op");
	else if (wl->checkpointing == MF_CKPT_FULL && wl->ckpt_every > 1)
		snprintf(ckpt, sizeof(ckpt), "every %lld layers",
		    (long long)wl->ckpt_every);
	else
		snprintf(ckpt, sizeof(ckpt), "%s",
		    wl->checkpointing ? "true" : "false");
	if (mf_est_loss(wl) == MF_LOSS_CHUNKED)
		snprintf(loss, sizeof(loss), "chunked, lossChunks %lld",
		    (long long)wl->loss_chunks);
	else if (mf_est_output_upcast(wl))
		snprintf(loss, sizeof(loss), "standard, lossUpcast output");
	else
		snprintf(loss, sizeof(loss), "%s",
		    mf_workload_enum_name("loss", mf_est_loss(wl)));
	mf_buf_printf(b,
	    "recipe: precision %s, attention %s, gradientCheckpointing %s, loss %s\n",
	    mf_workload_enum_name("precision", wl->precision),
	    mf_workload_enum_name("attention",
	        mf_est_attention(&job->model, wl)),
	    ckpt, loss);
	if (wl->optimizer_in_backward)
		mf_buf_printf(b,
		    "recipe: optimizerInBackward true (each weight stepped as its gradient is made, torchtune)\n");
	if (wl->float8 != MF_F8_NONE)
		mf_buf_printf(b,
		    "recipe: float8 %s (torchao's float8 linears in the decoder layers, their matmuls at the card's fp8 FLOPS)\n",
		    mf_workload_enum_name("float8", wl->float8));
	text_offload(b, wl);
	text_framework(b, job);
	if (mf_est_peak_moment(e) == MF_PEAK_LOADING)
		mf_buf_printf(b,
		    "recipe: peakMoment loading (loading and quantizing the base, with PEFT's fp32 cast under kbitPrep, needs more than the step: the bucket loading)\n");
}

/* How the weights are stored, when it is not plain 16-bit training. */
static void
weights_storage(struct mf_jw *w, const struct mf_estimate *e)
{
	const struct mf_quant *q = &e->quant;

	if (e->quant_source == NULL)
		return;
	mf_jw_open_lit(w, "weightsStorage", '{');
	mf_jw_str_lit(w, "method",
	    q->format == MF_Q_16BIT ? "none" : q->method);
	mf_jw_int_lit(w, "bits", q->bits);
	if (q->format == MF_Q_NF4 || q->group > 0)
		mf_jw_int_lit(w, "groupSize", q->group);
	if (q->format == MF_Q_NF4)
		mf_jw_bool_lit(w, "doubleQuant", q->double_quant);
	if (q->format == MF_Q_SCALED)
		mf_jw_bool_lit(w, "zeroPoints", q->zero_points);
	mf_jw_str_lit(w, "source", e->quant_source);
	mf_jw_close(w, '}');
}

/* The work of the job's step (design 21): its matmul FLOPs (what
 * tests/torch/flops.py holds to FlopCounterMode): training, one
 * micro-batch's forward, backward and recomputation; inference, a prefill
 * of contextLength tokens and a decode step of a sequence at that
 * length. */
static void
work(struct mf_jw *w, const struct mf_job *job, const struct mf_estimate *e,
    const struct mf_work *given)
{
	struct mf_flops f;
	struct mf_work wk;

	if (job->model_source == MF_MODEL_NONE)
		return;
	if (given != NULL)
		wk = *given;
	else if (mf_work_of(&job->model, &job->work, e, &wk) != MF_OK)
		return;
	mf_work_flops(&job->model, &job->work, &f);
	mf_jw_open_lit(w, "work", '{');
	mf_jw_int_lit(w, "tokensPerStep", wk.tokens);
	/* The bytes the other kernels move, and the kernels, of a step (a
	 * decode step's KV cache reads, for inference): what
	 * tests/torch/traffic.py measures. */
	mf_jw_num_lit(w, "bytes", wk.bytes + wk.opt_bytes, 0);
	mf_jw_num_lit(w, "kernels", wk.kernels, 0);
	mf_jw_open_lit(w, "flops", '{');
	if (job->work.kind == MF_INFERENCE) {
		mf_jw_num_lit(w, "prefill", f.prefill, 0);
		mf_jw_num_lit(w, "decode", f.decode, 0);
	} else {
		mf_jw_num_lit(w, "forward", f.fwd, 0);
		mf_jw_num_lit(w, "backward", f.bwd, 0);
		mf_jw_num_lit(w, "recompute", f.rec, 0);
		mf_jw_num_lit(w, "total", f.fwd + f.bwd + f.rec, 0);
		/* Of the total, float8's (design 22), at fp8 FLOPS. */
		if (wk.fp8 > 0)
			mf_jw_num_lit(w, "fp8", wk.fp8, 0);
	}
	mf_jw_close(w, '}');
	mf_jw_close(w, '}');
}

void
mf_write_estimate(struct mf_jw *w, const char *key, const struct mf_job *job,
    const char *fp, const struct mf_estimate *e, const struct mf_work *wk,
    const struct mf_catalog *cat)
{
	const struct mf_workload *wl = &job->work;
	struct mf_est_answer a;

	mf_est_answer(job, e, cat, &a);
	mf_jw_open(w, key, '{');
	if (fp != NULL)
		mf_jw_str_lit(w, "fingerprint", fp);
	mf_jw_str_lit(w, "estimator", mf_estimator_name(e->estimator));
	mf_jw_int_lit(w, "parameters", e->params);
	mf_jw_int_lit(w, "trainableParameters", e->trainable);
	recipe(w, job, e);
	buckets(w, wl, e);
	paged(w, e);
	work(w, job, e, wk);
	mf_jw_int_lit(w, "totalBytes", e->total);
	mf_jw_int_lit(w, "perGpuBytes", e->per_gpu);
	mf_jw_qty_lit(w, "minMemory", a.floor, MF_QTY_BINARY);
	smallest_fit(w, &a);
	weights_storage(w, e);
	if (wl->kind == MF_INFERENCE) {
		/* One GPU's, as the KV bucket's perGpuBytes; and the job's,
		 * every GPU of a replica together. */
		mf_jw_int_lit(w, "kvCacheBytesPerToken", e->kv_token);
		mf_jw_int_lit(w, "kvCacheBytesPerTokenJob", e->kv_token_job);
	}
	mf_jw_close(w, '}');
}

/* A card's speed figures (design 21), with the achieved shares in
 * effect (its own, else its architecture's); none for a card without
 * them. */
static void
speed_json(struct mf_jw *w, const struct mf_speed *s)
{
	if (!mf_speed_known(s))
		return;
	mf_jw_str_lit(w, "architecture", mf_arch_name(s->arch));
	mf_jw_open_lit(w, "flops", '{');
	for (int d = 0; d < MF_DT_COUNT; d++)
		if (s->flops[d] > 0)
			mf_jw_int(w, mf_dtype_name(d), s->flops[d]);
	mf_jw_close(w, '}');
	mf_jw_int_lit(w, "memoryBandwidth", s->bandwidth);
	mf_jw_open_lit(w, "efficiency", '{');
	mf_jw_num_lit(w, "matmul", mf_speed_matmul(s), 4);
	mf_jw_num_lit(w, "memory", mf_speed_memory(s), 4);
	mf_jw_close(w, '}');
	if (s->link_bw > 0) {
		mf_jw_open_lit(w, "interconnect", '{');
		mf_jw_str_lit(w, "kind", mf_link_name(s->link));
		mf_jw_int_lit(w, "bandwidth", s->link_bw);
		mf_jw_close(w, '}');
	}
	if (s->net_bw > 0) {
		mf_jw_open_lit(w, "network", '{');
		mf_jw_int_lit(w, "bandwidth", s->net_bw);
		mf_jw_close(w, '}');
	}
}

static void
gpu_json(struct mf_jw *w, const struct mf_catalog *cat, const struct mf_gpu *g)
{
	mf_jw_open(w, NULL, '{');
	mf_jw_str_lit(w, "name", g->name);
	mf_cat_card_write(w, g, MF_CARD_MEMORY);
	mf_jw_int_lit(w, "usableBytes", mf_cat_usable(cat, g));
	mf_jw_num_lit(w, "hourlyPrice", g->hourly_price, 6);
	mf_jw_num_lit(w, "relativeThroughput", g->throughput, 6);
	mf_jw_bool_lit(w, "relativeThroughputGiven", g->throughput_given);
	speed_json(w, &g->speed);
	mf_jw_int_lit(w, "gpusPerNode", g->gpus_per_node);
	mf_jw_int_lit(w, "maxNodes", g->max_nodes);
	mf_jw_int_lit(w, "maxCount", g->max_count);
	mf_jw_num_lit(w, "costPerReferenceHour", mf_cat_unit_cost(g), 4);
	mf_cat_card_write(w, g, MF_CARD_LABELS);
	slurm_map(w, g, 0, 0);
	mf_jw_close(w, '}');
}

void
mf_write_catalog(struct mf_jw *w, const struct mf_catalog *cat,
    int64_t min_memory, int min_format)
{
	const struct mf_gpu **v;
	char when[32];
	struct tm tm;
	size_t n;

	v = mf_cat_fitting(cat, min_memory, &n);
	if (v == NULL) {
		w->b->rc = MF_ENOMEM;
		return;
	}
	gmtime_r(&cat->loaded_at, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	mf_jw_open(w, NULL, '{');
	mf_jw_int_lit(w, "version", (int64_t)cat->version);
	mf_jw_str_lit(w, "loadedAt", when);
	mf_jw_str_lit(w, "source", cat->source ? cat->source : "");
	mf_jw_num_lit(w, "headroom", cat->headroom, 6);
	if (cat->ref != NULL)
		mf_jw_str_lit(w, "reference", cat->ref->name);
	mf_jw_num_lit(w, "multiGpuEfficiency", cat->multi_gpu_efficiency, 6);
	mf_jw_num_lit(w, "interNodeEfficiency", cat->inter_node_efficiency, 6);
	mf_jw_open_lit(w, "timeFactors", '{');
	for (int f = 0; f < MF_FIX_COUNT; f++)
		mf_jw_num(w, mf_fix_name(f), cat->time_factor[f], 6);
	mf_jw_close(w, '}');
	if (min_memory > 0)
		mf_jw_qty_lit(w, "minMemory", min_memory,
		    (enum mf_qty_format)min_format);
	mf_jw_open_lit(w, "gpus", '[');
	for (size_t i = 0; i < n; i++)
		gpu_json(w, cat, v[i]);
	mf_jw_close(w, ']');
	mf_jw_close(w, '}');
	free(v);
}

void
mf_write_models(struct mf_jw *w, const struct mf_models *models)
{
	mf_jw_open(w, NULL, '{');
	mf_jw_open_lit(w, "models", '[');
	for (size_t i = 0; i < mf_models_count(models); i++) {
		mf_jw_open(w, NULL, '{');
		mf_jw_str_lit(w, "name", mf_models_name(models, i));
		mf_jw_int_lit(w, "parameters",
		    mf_model_params(mf_models_at(models, i)));
		mf_jw_close(w, '}');
	}
	mf_jw_close(w, ']');
	mf_jw_close(w, '}');
}

void
mf_write_error(struct mf_jw *w, const struct mf_error *err)
{
	char msg[MF_ERROR_MAX];

	mf_jw_open(w, NULL, '{');
	mf_jw_str_lit(w, "error", mf_error_message(err, msg, sizeof(msg)));
	mf_jw_str_lit(w, "field", err->field[0] ? err->field : NULL);
	if (err->line > 0) {
		mf_jw_int_lit(w, "line", err->line);
		mf_jw_int_lit(w, "column", err->column);
	} else {
		mf_jw_null_lit(w, "line");
		mf_jw_null_lit(w, "column");
	}
	mf_jw_close(w, '}');
}

/* --- text ------------------------------------------------------------ */

static double
gb(int64_t bytes)
{
	return (double)bytes / 1e9;
}

static void
fix_names(unsigned fixes, char *buf, size_t size)
{
	struct mf_buf b;

	mf_buf_fixed(&b, buf, size);
	for (unsigned left = fixes; left != 0;) {
		if (b.len > 0)
			mf_buf_str(&b, ",");
		mf_buf_str(&b, mf_fix_name(mf_fix_take(&left)));
	}
	if (b.len == 0)
		mf_buf_str(&b, "-");
}

static void
text_placement(struct mf_buf *b, const struct mf_job *job,
    const struct mf_placement *p, int speed)
{
	char f[96];

	fix_names(p->fixes, f, sizeof(f));
	mf_buf_printf(b, "%-14s %5lld %5lld %6.1f %5.0f%% %8.2f ", p->gpu->name,
	    (long long)p->count, (long long)p->nodes, gb(p->gpu->memory),
	    p->spare * 100, p->hourly_price);
	if (p->timed)
		mf_buf_printf(b, "%8.1f ", p->hours);
	else
		mf_buf_printf(b, "%8s ", "-");
	if (speed)
		mf_buf_printf(b, "%8.0f %-13s ", p->step.tokens_per_second,
		    p->step.seconds > 0 ? mf_bound_name(p->step.bound) : "-");
	if (p->timed)
		mf_buf_printf(b, "%9.2f", p->cost);
	else
		mf_buf_printf(b, "%9s", "-");
	mf_buf_printf(b, " %8.3f  ", p->cost_per_ref_hour);
	if (mf_job_serves(job))
		mf_buf_printf(b, "%8lld %8lld  ", (long long)p->max_seqs,
		    (long long)p->max_context);
	mf_buf_printf(b, "%s\n", f);
}

/* The table's head: the speed columns (design 21) where the placements
 * have a modelled step. */
static void
text_placement_head(struct mf_buf *b, const struct mf_job *job, int speed)
{
	mf_buf_printf(b,
	    "\nGPU            COUNT NODES     GB  SPARE   $/HOUR    HOURS %s     COST  $/REF-H  %sFIXES\n",
	    speed ? "   TOK/S BOUND         " : "",
	    mf_job_serves(job) ? "MAX-SEQS  MAX-CTX  " : "");
}

static void
text_fixes(struct mf_buf *b, const struct mf_decision *d)
{
	char f[96], q[MF_QTY_STRMAX], name[48];

	assert(d->nfixes <= MF_FIX_COUNT && d->suggested < MF_FIX_COUNT);
	mf_buf_printf(b, "\n%-18s %-36s %5s %9s %-9s  %s\n", "FIX", "INCLUDES",
	    "GPUS", "GB/GPU", "MINMEMORY", "CHEAPEST PLACEMENT");
	for (size_t i = 0; i < d->nfixes; i++) {
		const struct mf_fix_option *e = &d->fixes[i];

		fix_names(e->fixes, f, sizeof(f));
		mf_qty_format(e->min_memory, MF_QTY_BINARY, q, sizeof(q));
		/* context and concurrency: the amount they set. */
		if (e->fix == MF_FIX_CONTEXT || e->fix == MF_FIX_CONCURRENCY)
			snprintf(name, sizeof(name), "%s %lld",
			    mf_fix_name(e->fix), (long long)e->amount);
		else
			snprintf(name, sizeof(name), "%s", mf_fix_name(e->fix));
		mf_buf_printf(b, "%-18s %-36s %5lld %9.1f %-9s  ", name, f,
		    (long long)e->gpus, gb(e->need), q);
		if (!e->placed)
			mf_buf_printf(b, "none\n");
		else if (e->placement.timed)
			mf_buf_printf(b, "%s x%lld, $%.2f\n",
			    e->placement.gpu->name,
			    (long long)e->placement.count, e->placement.cost);
		else
			mf_buf_printf(b, "%s x%lld, $%.3f per reference hour\n",
			    e->placement.gpu->name,
			    (long long)e->placement.count,
			    e->placement.cost_per_ref_hour);
	}
	if (d->suggested >= 0)
		mf_buf_printf(b, "\nsuggested: %s\n",
		    mf_fix_name(d->fixes[d->suggested].fix));
}

char *
mf_text_decision(const struct mf_job *job, const struct mf_decision *d)
{
	char q[MF_QTY_STRMAX];
	struct mf_buf b;

	assert(d->nalt <= MF_MAX_ALTERNATIVES && d->nwarn <= MF_MAX_WARNINGS);
	mf_buf_init(&b, TEXT_MAX);
	mf_qty_format(d->floor, d->floor_format, q, sizeof(q));
	mf_buf_printf(&b, "%s  %s\n", d->admitted ? "ADMITTED" : "REJECTED",
	    job->name);
	if (d->from_model)
		mf_buf_printf(&b,
		    "need: %.1f GB per GPU (derived), minMemory %s\n",
		    gb(d->need), q);
	else
		mf_buf_printf(&b, "need: minMemory %s\n", q);
	if (d->admitted) {
		int speed = d->placement.step.seconds > 0;

		text_placement_head(&b, job, speed);
		text_placement(&b, job, &d->placement, speed);
		for (size_t i = 0; i < d->nalt; i++)
			text_placement(&b, job, &d->alt[i], speed);
	} else {
		mf_buf_printf(&b, "reason: %s\n", d->reason);
		if (d->nfixes > 0)
			text_fixes(&b, d);
	}
	for (size_t i = 0; i < d->nwarn; i++)
		mf_buf_printf(&b, "%swarning: %s\n", i ? "" : "\n",
		    d->warnings[i]);
	return mf_buf_take(&b);
}

/*
 * Both estimators' figures when the answer shows the other's (answer.h's
 * rule): a reader who knows the post's figure sees why this one differs.
 */
static void
both_figures(struct mf_buf *b, const struct mf_estimate *e,
    const struct mf_est_answer *a)
{
	int post = e->estimator == MF_EST_POST;

	if (!a->shown)
		return;
	mf_buf_printf(b,
	    "post's arithmetic: %.1f GB; measured PyTorch: %.1f GB (estimator in force: %s)\n",
	    gb(post ? e->per_gpu : a->other_per_gpu),
	    gb(post ? a->other_per_gpu : e->per_gpu),
	    mf_estimator_name(e->estimator));
}

/*
 * What each GPU holds, in words, for a job over several: its share of the
 * layout the workload asks (design 15), and an inference job's KV cache a
 * token on it.
 */
static void
text_layout(struct mf_buf *b, const struct mf_job *job,
    const struct mf_estimate *e, const struct mf_est_answer *a)
{
	const struct mf_workload *w = &job->work;

	if (e->per_gpu == e->total)
		return;
	mf_buf_printf(b, "\neach GPU holds");
	if (w->pipeline > 1)
		mf_buf_printf(b,
		    " the largest of %lld pipeline stages (%lld layers; the first also the embeddings, the last the head),",
		    (long long)w->pipeline, (long long)a->stage_layers);
	if (w->tensor > 1)
		mf_buf_printf(b,
		    " 1/%lld of the linear layers, attention heads and KV heads (at least one),",
		    (long long)w->tensor);
	if (w->expert > 1)
		mf_buf_printf(b, " 1/%lld of the routed experts,",
		    (long long)w->expert);
	if (e->shards > 1)
		mf_buf_printf(b,
		    " 1/%lld of the weights, gradients and optimizer state (FSDP),",
		    (long long)e->shards);
	mf_buf_printf(b, " %.1f GB in all\n", gb(e->per_gpu));
	if (w->kind == MF_INFERENCE)
		mf_buf_printf(b,
		    "KV cache per token: %lld bytes on a GPU, %lld on the job's GPUs\n",
		    (long long)e->kv_token, (long long)e->kv_token_job);
	if (e->quant_source != NULL && e->quant.format != MF_Q_16BIT)
		mf_buf_printf(b, "weights stored as %s, %d bits (from %s)\n",
		    e->quant.method, e->quant.bits, e->quant_source);
}

char *
mf_text_estimate(const struct mf_job *job, const struct mf_estimate *e,
    const struct mf_catalog *cat)
{
	char q[MF_QTY_STRMAX];
	struct mf_est_answer a;
	struct mf_buf b;

	mf_est_answer(job, e, cat, &a);
	mf_est_answer_other(job, e, &a);
	mf_buf_init(&b, TEXT_MAX);
	mf_buf_printf(&b, "%s: %lld parameters, %lld trainable\n", job->name,
	    (long long)e->params, (long long)e->trainable);
	text_recipe(&b, job, e);
	mf_buf_printf(&b, "\n");
	/* The formula column is as wide as its longest, 36 at least. */
	int fw = 36;

	for (int i = 0; i < MF_B_COUNT; i++)
		if (e->bucket[i] != 0 && (int)strlen(e->formula[i]) > fw)
			fw = (int)strlen(e->formula[i]);
	/* A job over several GPUs also says what one of them holds. */
	int split = e->per_gpu != e->total;

	mf_buf_printf(&b, "%-16s %-*s %8s%s\n", "BUCKET", fw, "FORMULA", "GB",
	    split ? "   GB/GPU" : "");
	for (int i = 0; i < MF_B_COUNT; i++) {
		if (e->bucket[i] == 0 || !mf_est_counted((enum mf_bucket)i))
			continue;
		mf_buf_printf(&b, "%-16s %-*s %8.1f",
		    mf_bucket_name((enum mf_bucket)i), fw, e->formula[i],
		    gb(e->bucket[i]));
		if (split)
			mf_buf_printf(&b, " %8.1f",
			    gb(mf_est_bucket_per_gpu(e, (enum mf_bucket)i)));
		mf_buf_printf(&b, "\n");
	}
	mf_buf_printf(&b, "%-16s %-*s %8.1f", "total", fw, "", gb(e->total));
	if (split)
		mf_buf_printf(&b, " %8.1f", gb(e->per_gpu));
	mf_buf_printf(&b, "\n");
	if (e->bucket[MF_B_PAGED] != 0)
		mf_buf_printf(&b, "%-16s %-*s %8.1f  not in the total: %s\n",
		    mf_bucket_name(MF_B_PAGED), fw, e->formula[MF_B_PAGED],
		    gb(e->bucket[MF_B_PAGED]), PAGED_NOTE);
	text_layout(&b, job, e, &a);
	mf_qty_format(a.floor, MF_QTY_BINARY, q, sizeof(q));
	mf_buf_printf(&b,
	    "\nminMemory %s (%.0f%% headroom); smallest fit: %s\n", q,
	    a.headroom * 100, a.fit ? a.fit->name : "none");
	both_figures(&b, e, &a);
	return mf_buf_take(&b);
}

char *
mf_text_catalog(const struct mf_catalog *cat, int64_t min_memory,
    int min_format)
{
	const struct mf_gpu **v;
	char q[MF_QTY_STRMAX];
	struct mf_buf b;
	size_t n;

	v = mf_cat_fitting(cat, min_memory, &n);
	if (v == NULL)
		return NULL;
	mf_buf_init(&b, TEXT_MAX);
	mf_buf_printf(&b, "catalogue %s: %zu GPU types, headroom %.0f%%",
	    cat->source, cat->ngpus, cat->headroom * 100);
	if (cat->version > 0)
		mf_buf_printf(&b, ", version %llu",
		    (unsigned long long)cat->version);
	/* Say what was left out, so the count above the rows adds up. */
	if (min_memory > 0) {
		mf_qty_format(min_memory, (enum mf_qty_format)min_format, q,
		    sizeof(q));
		mf_buf_printf(&b,
		    "\n%zu of them with at least %s of memory (minMemory), cheapest per reference hour first",
		    n, q);
	}
	mf_buf_printf(&b, "\n\n%-14s %8s %8s %10s %9s %5s %6s %10s\n", "GPU",
	    "GB", "$/HOUR", "THROUGHPUT", "GPUS/NODE", "NODES", "MAX",
	    "$/REF-H");
	for (size_t i = 0; i < n; i++)
		mf_buf_printf(&b,
		    "%-14s %8.1f %8.3f %10.3f %9lld %5lld %6lld %10.3f\n",
		    v[i]->name, gb(v[i]->memory), v[i]->hourly_price,
		    v[i]->throughput, (long long)v[i]->gpus_per_node,
		    (long long)v[i]->max_nodes, (long long)v[i]->max_count,
		    mf_cat_unit_cost(v[i]));
	free(v);
	return mf_buf_take(&b);
}

char *
mf_text_models(const struct mf_models *models)
{
	struct mf_buf b;

	mf_buf_init(&b, TEXT_MAX);
	mf_buf_printf(&b, "%-40s %16s\n", "MODEL", "PARAMETERS");
	for (size_t i = 0; i < mf_models_count(models); i++)
		mf_buf_printf(&b, "%-40s %16lld\n", mf_models_name(models, i),
		    (long long)mf_model_params(mf_models_at(models, i)));
	return mf_buf_take(&b);
}
