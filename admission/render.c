#include "render.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "jw.h"
#include "qty.h"

#define TEXT_MAX (4u << 20)

static const struct {
	const char *manifest; /* dotted field */
	const char *value;    /* its new value, as YAML */
	const char *code;
} changes[MF_FIX_COUNT] = {
	[MF_FIX_SDPA] = { "spec.workload.attention", "sdpa",
	    "AutoModelForCausalLM.from_pretrained(..., "
	    "attn_implementation=\"sdpa\")" },
	[MF_FIX_MICROBATCH] = { "spec.workload.microBatch", "1",
	    "per_device_train_batch_size=1, gradient_accumulation_steps="
	    "<old micro-batch>" },
	[MF_FIX_AUTOCAST] = { "spec.workload.precision", "bf16",
	    "with torch.autocast(\"cuda\", dtype=torch.bfloat16): loss = "
	    "model(**batch).loss" },
	[MF_FIX_CHECKPOINTING] = { "spec.workload.gradientCheckpointing",
	    "true",
	    "torch.utils.checkpoint.checkpoint(layer, x, "
	    "use_reentrant=False)" },
	[MF_FIX_ADAM8BIT] = { "spec.workload.optimizer", "adam8bit",
	    "optimizer = bnb.optim.Adam8bit(model.parameters(), lr=lr)" },
	[MF_FIX_LORA] = { "spec.workload.method", "lora",
	    "model = peft.get_peft_model(model, LoraConfig(r=16, "
	    "target_modules=\"all-linear\"))" },
	[MF_FIX_QLORA] = { "spec.workload.method", "qlora",
	    "from_pretrained(..., quantization_config=BitsAndBytesConfig("
	    "load_in_4bit=True, bnb_4bit_quant_type=\"nf4\")), then "
	    "peft.get_peft_model(model, LoraConfig(r=16, "
	    "target_modules=\"all-linear\"))" },
	[MF_FIX_FSDP] = { "spec.workload.sharding.gpus", NULL,
	    "for layer in model.model.layers: fully_shard(layer); "
	    "fully_shard(model)" },
};

const char *
mf_fix_code(enum mf_fix fix)
{
	return (unsigned)fix < MF_FIX_COUNT ? changes[fix].code : NULL;
}

#define JSON_MAX (16u << 20)

static void
quantity(struct mf_jw *w, const char *key, int64_t bytes, int format)
{
	char q[MF_QTY_STRMAX];

	mf_qty_format(bytes, (enum mf_qty_format)format, q, sizeof(q));
	mf_jw_str(w, key, q);
}

static void
fix_list(struct mf_jw *w, const char *key, unsigned fixes)
{
	mf_jw_open(w, key, '[');
	for (int f = 0; f < MF_FIX_COUNT; f++)
		if (fixes & MF_FIXBIT(f))
			mf_jw_str(w, NULL, mf_fix_name(f));
	mf_jw_close(w, ']');
}

static void
labels(struct mf_jw *w, const struct mf_gpu *g)
{
	mf_jw_open(w, "labels", '{');
	for (size_t i = 0; i < g->nlabels; i++)
		mf_jw_str(w, g->labels[i].key, g->labels[i].value);
	mf_jw_close(w, '}');
}

/* Hours and cost are null when the job has no referenceHours. */
static void
placement(struct mf_jw *w, const char *key, const struct mf_job *job,
    const struct mf_placement *p)
{
	int timed = job->reference_hours > 0;

	mf_jw_open(w, key, '{');
	mf_jw_str(w, "gpu", p->gpu->name);
	mf_jw_int(w, "count", p->count);
	quantity(w, "memory", p->gpu->memory, p->gpu->memory_format);
	mf_jw_int(w, "memoryBytes", p->gpu->memory);
	mf_jw_num(w, "spareFraction", p->spare, 4);
	mf_jw_num(w, "hourlyPrice", p->hourly_price, 4);
	if (timed) {
		mf_jw_num(w, "hours", p->hours, 3);
		mf_jw_num(w, "cost", p->cost, 2);
	} else {
		mf_jw_null(w, "hours");
		mf_jw_null(w, "cost");
	}
	mf_jw_num(w, "costPerReferenceHour", p->cost_per_ref_hour, 4);
	fix_list(w, "fixes", p->fixes);
	labels(w, p->gpu);
	mf_jw_close(w, '}');
}

static void
manifest_change(struct mf_jw *w, const struct mf_fix_option *e)
{
	mf_jw_open(w, "manifestChange", '{');
	for (int f = 0; f < MF_FIX_COUNT; f++) {
		const char *v = changes[f].value;

		if (!(e->fixes & MF_FIXBIT(f)))
			continue;
		if (v == NULL)
			mf_jw_int(w, changes[f].manifest, e->gpus);
		else if (strcmp(v, "true") == 0)
			mf_jw_bool(w, changes[f].manifest, 1);
		else if (strcmp(v, "1") == 0)
			mf_jw_int(w, changes[f].manifest, 1);
		else
			mf_jw_str(w, changes[f].manifest, v);
	}
	mf_jw_close(w, '}');
}

static void
code_change(struct mf_jw *w, unsigned fixes)
{
	mf_jw_open(w, "codeChange", '[');
	for (int f = 0; f < MF_FIX_COUNT; f++)
		if (fixes & MF_FIXBIT(f))
			mf_jw_str(w, NULL, changes[f].code);
	mf_jw_close(w, ']');
}

static void
fix_entries(struct mf_jw *w, const struct mf_job *job,
    const struct mf_decision *d)
{
	mf_jw_open(w, "fixes", '[');
	for (size_t i = 0; i < d->nfixes; i++) {
		const struct mf_fix_option *e = &d->fixes[i];

		mf_jw_open(w, NULL, '{');
		mf_jw_str(w, "fix", mf_fix_name(e->fix));
		fix_list(w, "fixes", e->fixes);
		mf_jw_int(w, "gpus", e->gpus);
		mf_jw_int(w, "needBytes", e->need);
		quantity(w, "minMemory", e->min_memory, MF_QTY_BINARY);
		if (e->placed)
			placement(w, "placement", job, &e->placement);
		else
			mf_jw_null(w, "placement");
		manifest_change(w, e);
		code_change(w, e->fixes);
		mf_jw_bool(w, "modellingDecision",
		    e->fix == MF_FIX_LORA || e->fix == MF_FIX_QLORA);
		mf_jw_close(w, '}');
	}
	mf_jw_close(w, ']');
}

static void
need(struct mf_jw *w, const struct mf_job *job, const struct mf_decision *d)
{
	mf_jw_open(w, "need", '{');
	mf_jw_str(w, "source", d->from_model ? "model" : "minMemory");
	if (d->from_model)
		mf_jw_int(w, "perGpuBytes", d->need);
	else
		mf_jw_null(w, "perGpuBytes");
	if (job->min_memory > 0)
		mf_jw_int(w, "minMemoryBytes", job->min_memory);
	else
		mf_jw_null(w, "minMemoryBytes");
	mf_jw_close(w, '}');
}

static void
write_estimate(struct mf_jw *w, const char *key, const struct mf_job *job,
    const struct mf_estimate *e, const struct mf_catalog *cat);

static void
write_decision(struct mf_jw *w, const struct mf_job *job,
    const struct mf_decision *d, const struct mf_catalog *cat)
{
	mf_jw_open(w, NULL, '{');
	mf_jw_bool(w, "admitted", d->admitted);
	mf_jw_str(w, "job", job->name ? job->name : "");
	mf_jw_str(w, "estimator", mf_estimator_name(d->work.estimator));
	need(w, job, d);
	quantity(w, "minMemory", d->floor, d->floor_format);
	mf_jw_open(w, "warnings", '[');
	for (size_t i = 0; i < d->nwarn; i++)
		mf_jw_str(w, NULL, d->warnings[i]);
	mf_jw_close(w, ']');
	if (d->admitted) {
		placement(w, "placement", job, &d->placement);
		mf_jw_open(w, "alternatives", '[');
		for (size_t i = 0; i < d->nalt; i++)
			placement(w, NULL, job, &d->alt[i]);
		mf_jw_close(w, ']');
	} else {
		mf_jw_str(w, "reason", d->reason);
		mf_jw_str(w, "limit", mf_limit_name(d->limit));
		fix_entries(w, job, d);
		mf_jw_str(w, "suggested",
		    d->suggested < 0 ? NULL :
		                       mf_fix_name(d->fixes[d->suggested].fix));
	}
	if (d->from_model) {
		struct mf_job placed = *job;

		placed.work = d->work;
		write_estimate(w, "estimate", &placed, &d->est, cat);
	}
	mf_jw_close(w, '}');
}

/* Run a writer into a fresh buffer; the text, or NULL. */
static char *
finish(struct mf_buf *b)
{
	char *text;

	mf_buf_add(b, "\n", 1);
	text = b->rc == MF_OK ? mf_buf_take(b) : NULL;
	mf_buf_free(b);
	return text;
}

char *
mf_json_decision(const struct mf_job *job, const struct mf_decision *d,
    const struct mf_catalog *cat)
{
	struct mf_buf b;
	struct mf_jw w;

	mf_buf_init(&b, JSON_MAX);
	mf_jw_init(&w, &b);
	write_decision(&w, job, d, cat);
	return finish(&b);
}

json_t *
mf_render_decision(const struct mf_job *job, const struct mf_decision *d,
    const struct mf_catalog *cat)
{
	char *text = mf_json_decision(job, d, cat);
	json_t *j = text ? json_loads(text, 0, NULL) : NULL;

	free(text);
	return j;
}

static void
buckets(struct mf_jw *w, const struct mf_estimate *e)
{
	mf_jw_open(w, "buckets", '[');
	for (int b = 0; b < MF_B_COUNT; b++) {
		if (e->bucket[b] == 0)
			continue;
		mf_jw_open(w, NULL, '{');
		mf_jw_str(w, "name", mf_bucket_name((enum mf_bucket)b));
		mf_jw_int(w, "bytes", e->bucket[b]);
		mf_jw_str(w, "formula", e->formula[b]);
		mf_jw_close(w, '}');
	}
	mf_jw_close(w, ']');
}

static void
smallest_fit(struct mf_jw *w, const struct mf_job *job,
    const struct mf_estimate *e, const struct mf_catalog *cat)
{
	const struct mf_gpu *g = mf_smallest_fit(cat, e->per_gpu);
	double hours;

	if (g == NULL) {
		mf_jw_null(w, "smallestFit");
		return;
	}
	mf_jw_open(w, "smallestFit", '{');
	mf_jw_str(w, "gpu", g->name);
	quantity(w, "memory", g->memory, g->memory_format);
	mf_jw_int(w, "memoryBytes", g->memory);
	mf_jw_num(w, "hourlyPrice", g->hourly_price, 4);
	if (job->reference_hours > 0) {
		hours = job->reference_hours / g->throughput;
		mf_jw_num(w, "hours", hours, 3);
		mf_jw_num(w, "cost", hours * g->hourly_price, 2);
	} else {
		mf_jw_null(w, "hours");
		mf_jw_null(w, "cost");
	}
	mf_jw_close(w, '}');
}

static void
write_estimate(struct mf_jw *w, const char *key, const struct mf_job *job,
    const struct mf_estimate *e, const struct mf_catalog *cat)
{
	const struct mf_workload *wl = &job->work;

	mf_jw_open(w, key, '{');
	mf_jw_str(w, "estimator", mf_estimator_name(e->estimator));
	mf_jw_int(w, "parameters", e->params);
	mf_jw_int(w, "trainableParameters", e->trainable);
	buckets(w, e);
	mf_jw_int(w, "totalBytes", e->total);
	mf_jw_int(w, "perGpuBytes", e->per_gpu);
	quantity(w, "minMemory", mf_floor_for(e->per_gpu, cat->headroom),
	    MF_QTY_BINARY);
	smallest_fit(w, job, e, cat);
	if (wl->kind == MF_INFERENCE)
		mf_jw_int(w, "kvCacheBytesPerToken",
		    mf_model_kv_bytes_per_token(&job->model,
		        wl->kv_dtype == MF_KV_FP8 ? 1 : 2));
	mf_jw_close(w, '}');
}

char *
mf_json_estimate(const struct mf_job *job, const struct mf_estimate *e,
    const struct mf_catalog *cat)
{
	struct mf_buf b;
	struct mf_jw w;

	mf_buf_init(&b, JSON_MAX);
	mf_jw_init(&w, &b);
	write_estimate(&w, NULL, job, e, cat);
	return finish(&b);
}

static void
gpu_json(struct mf_jw *w, const struct mf_catalog *cat, const struct mf_gpu *g)
{
	mf_jw_open(w, NULL, '{');
	mf_jw_str(w, "name", g->name);
	quantity(w, "memory", g->memory, g->memory_format);
	mf_jw_int(w, "memoryBytes", g->memory);
	mf_jw_int(w, "usableBytes", mf_cat_usable(cat, g));
	mf_jw_num(w, "hourlyPrice", g->hourly_price, 6);
	mf_jw_num(w, "relativeThroughput", g->throughput, 6);
	mf_jw_int(w, "maxCount", g->max_count);
	mf_jw_num(w, "costPerReferenceHour", mf_cat_unit_cost(g), 4);
	labels(w, g);
	mf_jw_close(w, '}');
}

static int
by_cost(const void *a, const void *b)
{
	const struct mf_gpu *x = *(const struct mf_gpu *const *)a;
	const struct mf_gpu *y = *(const struct mf_gpu *const *)b;
	double cx = mf_cat_unit_cost(x), cy = mf_cat_unit_cost(y);

	if (cx != cy)
		return cx < cy ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Cards with at least min_memory, cheapest per reference hour first; NULL
 * on allocation failure.  *n is the count. */
static const struct mf_gpu **
fitting(const struct mf_catalog *cat, int64_t min_memory, size_t *n)
{
	const struct mf_gpu **v = malloc((cat->ngpus + 1) * sizeof(*v));

	*n = 0;
	if (v == NULL)
		return NULL;
	for (size_t i = 0; i < cat->ngpus; i++)
		if (cat->gpus[i].memory >= min_memory)
			v[(*n)++] = &cat->gpus[i];
	if (min_memory > 0)
		qsort(v, *n, sizeof(*v), by_cost);
	return v;
}

char *
mf_json_catalog(const struct mf_catalog *cat, int64_t min_memory,
    int min_format)
{
	const struct mf_gpu **v;
	struct mf_buf b;
	struct mf_jw w;
	char when[32];
	struct tm tm;
	size_t n;

	v = fitting(cat, min_memory, &n);
	if (v == NULL)
		return NULL;
	gmtime_r(&cat->loaded_at, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	mf_buf_init(&b, JSON_MAX);
	mf_jw_init(&w, &b);
	mf_jw_open(&w, NULL, '{');
	mf_jw_int(&w, "version", (int64_t)cat->version);
	mf_jw_str(&w, "loadedAt", when);
	mf_jw_str(&w, "source", cat->source ? cat->source : "");
	mf_jw_num(&w, "headroom", cat->headroom, 6);
	mf_jw_num(&w, "multiGpuEfficiency", cat->multi_gpu_efficiency, 6);
	mf_jw_open(&w, "timeFactors", '{');
	for (int f = 0; f < MF_FIX_COUNT; f++)
		mf_jw_num(&w, mf_fix_name(f), cat->time_factor[f], 6);
	mf_jw_close(&w, '}');
	if (min_memory > 0)
		quantity(&w, "minMemory", min_memory, min_format);
	mf_jw_open(&w, "gpus", '[');
	for (size_t i = 0; i < n; i++)
		gpu_json(&w, cat, v[i]);
	mf_jw_close(&w, ']');
	mf_jw_close(&w, '}');
	free(v);
	return finish(&b);
}

char *
mf_json_models(const struct mf_models *models)
{
	struct mf_buf b;
	struct mf_jw w;

	mf_buf_init(&b, JSON_MAX);
	mf_jw_init(&w, &b);
	mf_jw_open(&w, NULL, '{');
	mf_jw_open(&w, "models", '[');
	for (size_t i = 0; i < mf_models_count(models); i++) {
		mf_jw_open(&w, NULL, '{');
		mf_jw_str(&w, "name", mf_models_name(models, i));
		mf_jw_int(&w, "parameters",
		    mf_model_params(mf_models_at(models, i)));
		mf_jw_close(&w, '}');
	}
	mf_jw_close(&w, ']');
	mf_jw_close(&w, '}');
	return finish(&b);
}

char *
mf_json_error(const struct mf_error *err)
{
	struct mf_buf b;
	struct mf_jw w;

	mf_buf_init(&b, JSON_MAX);
	mf_jw_init(&w, &b);
	mf_jw_open(&w, NULL, '{');
	mf_jw_str(&w, "error", err->message);
	mf_jw_str(&w, "field", err->field[0] ? err->field : NULL);
	if (err->line > 0) {
		mf_jw_int(&w, "line", err->line);
		mf_jw_int(&w, "column", err->column);
	} else {
		mf_jw_null(&w, "line");
		mf_jw_null(&w, "column");
	}
	mf_jw_close(&w, '}');
	return finish(&b);
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
	size_t used = 0;

	buf[0] = '\0';
	for (int f = 0; f < MF_FIX_COUNT && used < size; f++)
		if (fixes & MF_FIXBIT(f))
			used += (size_t)snprintf(buf + used, size - used,
			    "%s%s", used ? "," : "", mf_fix_name(f));
	if (used == 0)
		snprintf(buf, size, "-");
}

static void
text_placement(struct mf_buf *b, const struct mf_job *job,
    const struct mf_placement *p)
{
	char f[96];

	fix_names(p->fixes, f, sizeof(f));
	mf_buf_printf(b, "%-14s %5lld %6.1f %5.0f%% %8.2f ", p->gpu->name,
	    (long long)p->count, gb(p->gpu->memory), p->spare * 100,
	    p->hourly_price);
	if (job->reference_hours > 0)
		mf_buf_printf(b, "%8.1f %9.2f", p->hours, p->cost);
	else
		mf_buf_printf(b, "%8s %9s", "-", "-");
	mf_buf_printf(b, " %8.3f  %s\n", p->cost_per_ref_hour, f);
}

static const char placement_head[] =
    "GPU            COUNT     GB  SPARE "
    "  $/HOUR    HOURS      COST  $/REF-H  FIXES\n";

static void
text_fixes(struct mf_buf *b, const struct mf_job *job,
    const struct mf_decision *d)
{
	char f[96], q[MF_QTY_STRMAX];

	mf_buf_printf(b, "\n%-14s %-40s %5s %9s %-9s  %s\n", "FIX", "INCLUDES",
	    "GPUS", "GB/GPU", "MINMEMORY", "CHEAPEST PLACEMENT");
	for (size_t i = 0; i < d->nfixes; i++) {
		const struct mf_fix_option *e = &d->fixes[i];

		fix_names(e->fixes, f, sizeof(f));
		mf_qty_format(e->min_memory, MF_QTY_BINARY, q, sizeof(q));
		mf_buf_printf(b, "%-14s %-40s %5lld %9.1f %-9s  ",
		    mf_fix_name(e->fix), f, (long long)e->gpus, gb(e->need), q);
		if (!e->placed)
			mf_buf_printf(b, "none\n");
		else if (job->reference_hours > 0)
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

	mf_buf_init(&b, TEXT_MAX);
	mf_qty_format(d->floor, d->floor_format, q, sizeof(q));
	mf_buf_printf(&b, "%s  %s\n", d->admitted ? "ADMITTED" : "REJECTED",
	    job->name);
	if (d->from_model)
		mf_buf_printf(&b,
		    "need: %.1f GB per GPU (derived), minMemory "
		    "%s\n",
		    gb(d->need), q);
	else
		mf_buf_printf(&b, "need: minMemory %s\n", q);
	if (d->admitted) {
		mf_buf_printf(&b, "\n%s", placement_head);
		text_placement(&b, job, &d->placement);
		for (size_t i = 0; i < d->nalt; i++)
			text_placement(&b, job, &d->alt[i]);
	} else {
		mf_buf_printf(&b, "reason: %s\n", d->reason);
		if (d->nfixes > 0)
			text_fixes(&b, job, d);
	}
	for (size_t i = 0; i < d->nwarn; i++)
		mf_buf_printf(&b, "%swarning: %s\n", i ? "" : "\n",
		    d->warnings[i]);
	if (b.rc != MF_OK) {
		mf_buf_free(&b);
		return NULL;
	}
	return mf_buf_take(&b);
}

/*
 * When the two estimators differ by more than 5% per GPU, say both: a
 * reader who knows the post's figure sees why this one differs.
 */
static void
both_figures(struct mf_buf *b, const struct mf_job *job,
    const struct mf_estimate *e)
{
	struct mf_workload other = job->work;
	struct mf_estimate o;
	const struct mf_estimate *post, *torch;
	double lo, hi;

	other.estimator =
	    e->estimator == MF_EST_POST ? MF_EST_PYTORCH : MF_EST_POST;
	if (mf_est_compute(&job->model, &other, &o) != MF_OK)
		return;
	lo = (double)(o.per_gpu < e->per_gpu ? o.per_gpu : e->per_gpu);
	hi = (double)(o.per_gpu < e->per_gpu ? e->per_gpu : o.per_gpu);
	if (lo <= 0 || hi <= lo * 1.05)
		return;
	post = e->estimator == MF_EST_POST ? e : &o;
	torch = e->estimator == MF_EST_POST ? &o : e;
	mf_buf_printf(b,
	    "post's arithmetic: %.1f GB; measured PyTorch: %.1f GB "
	    "(estimator in force: %s)\n",
	    gb(post->per_gpu), gb(torch->per_gpu),
	    mf_estimator_name(e->estimator));
}

char *
mf_text_estimate(const struct mf_job *job, const struct mf_estimate *e,
    const struct mf_catalog *cat)
{
	const struct mf_gpu *g = mf_smallest_fit(cat, e->per_gpu);
	char q[MF_QTY_STRMAX];
	struct mf_buf b;

	mf_buf_init(&b, TEXT_MAX);
	mf_buf_printf(&b, "%s: %lld parameters, %lld trainable\n\n", job->name,
	    (long long)e->params, (long long)e->trainable);
	/* The formula column is as wide as its longest, 36 at least. */
	int fw = 36;

	for (int i = 0; i < MF_B_COUNT; i++)
		if (e->bucket[i] != 0 && (int)strlen(e->formula[i]) > fw)
			fw = (int)strlen(e->formula[i]);
	mf_buf_printf(&b, "%-16s %-*s %8s\n", "BUCKET", fw, "FORMULA", "GB");
	for (int i = 0; i < MF_B_COUNT; i++) {
		if (e->bucket[i] == 0)
			continue;
		mf_buf_printf(&b, "%-16s %-*s %8.1f\n",
		    mf_bucket_name((enum mf_bucket)i), fw, e->formula[i],
		    gb(e->bucket[i]));
	}
	mf_buf_printf(&b, "%-16s %-*s %8.1f\n", "total", fw, "", gb(e->total));
	if (e->per_gpu != e->total)
		mf_buf_printf(&b, "%-16s %-*s %8.1f\n", "per GPU", fw,
		    "weights, gradients, optimizer / N", gb(e->per_gpu));
	mf_qty_format(mf_floor_for(e->per_gpu, cat->headroom), MF_QTY_BINARY, q,
	    sizeof(q));
	mf_buf_printf(&b,
	    "\nminMemory %s (%.0f%% headroom); smallest fit: "
	    "%s\n",
	    q, cat->headroom * 100, g ? g->name : "none");
	both_figures(&b, job, e);
	if (b.rc != MF_OK) {
		mf_buf_free(&b);
		return NULL;
	}
	return mf_buf_take(&b);
}

char *
mf_text_catalog(const struct mf_catalog *cat, int64_t min_memory)
{
	const struct mf_gpu **v;
	struct mf_buf b;
	size_t n;

	v = fitting(cat, min_memory, &n);
	if (v == NULL)
		return NULL;
	mf_buf_init(&b, TEXT_MAX);
	mf_buf_printf(&b, "catalogue %s: %zu GPU types, headroom %.0f%%",
	    cat->source, cat->ngpus, cat->headroom * 100);
	if (cat->version > 0)
		mf_buf_printf(&b, ", version %llu",
		    (unsigned long long)cat->version);
	mf_buf_printf(&b, "\n\n%-14s %8s %8s %10s %6s %10s\n", "GPU", "GB",
	    "$/HOUR", "THROUGHPUT", "MAX", "$/REF-H");
	for (size_t i = 0; i < n; i++)
		mf_buf_printf(&b, "%-14s %8.1f %8.3f %10.3f %6lld %10.3f\n",
		    v[i]->name, gb(v[i]->memory), v[i]->hourly_price,
		    v[i]->throughput, (long long)v[i]->max_count,
		    mf_cat_unit_cost(v[i]));
	free(v);
	if (b.rc != MF_OK) {
		mf_buf_free(&b);
		return NULL;
	}
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
	if (b.rc != MF_OK) {
		mf_buf_free(&b);
		return NULL;
	}
	return mf_buf_take(&b);
}

/* --- YAML ------------------------------------------------------------ */

static void
yaml_node(struct mf_buf *b, const json_t *j, int indent, int inline_first);

static void
yaml_scalar(struct mf_buf *b, const json_t *j)
{
	char *s = json_dumps(j, JSON_ENCODE_ANY | MF_JSON_FLAGS);

	if (s == NULL) {
		b->rc = MF_ENOMEM;
		return;
	}
	mf_buf_printf(b, "%s\n", s);
	free(s);
}

static int
is_empty_collection(const json_t *j)
{
	return (json_is_object(j) && json_object_size(j) == 0) ||
	    (json_is_array(j) && json_array_size(j) == 0);
}

/* A key that YAML reads back as the same string without quotes. */
static int
plain_key(const char *k)
{
	if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z')))
		return 0;
	if (strcasecmp(k, "true") == 0 || strcasecmp(k, "false") == 0 ||
	    strcasecmp(k, "null") == 0 || strcasecmp(k, "yes") == 0 ||
	    strcasecmp(k, "no") == 0 || strcasecmp(k, "on") == 0 ||
	    strcasecmp(k, "off") == 0)
		return 0;
	return strspn(k,
	           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	           "0123456789_.-/") == strlen(k);
}

/* What follows "key:" or "- ": the value inline, or a nested block. */
static void
yaml_after(struct mf_buf *b, const json_t *v, int indent, int in_seq)
{
	if (is_empty_collection(v)) {
		mf_buf_printf(b, " %s\n", json_is_object(v) ? "{}" : "[]");
	} else if (json_is_object(v) && in_seq) {
		mf_buf_printf(b, " ");
		yaml_node(b, v, indent + 2, 1);
	} else if (json_is_object(v) || json_is_array(v)) {
		mf_buf_printf(b, "\n");
		yaml_node(b, v, indent + 2, 0);
	} else {
		mf_buf_printf(b, " ");
		yaml_scalar(b, v);
	}
}

/* inline_first: the first line's indent was already written ("- "). */
static void
yaml_node(struct mf_buf *b, const json_t *j, int indent, int inline_first)
{
	const char *key;
	json_t *v;
	size_t i;

	if (json_is_array(j)) {
		json_array_foreach (j, i, v) {
			mf_buf_printf(b, "%*s-", indent, "");
			yaml_after(b, v, indent, 1);
		}
		return;
	}
	json_object_foreach ((json_t *)j, key, v) {
		int pad = inline_first ? 0 : indent;

		inline_first = 0;
		if (plain_key(key)) {
			mf_buf_printf(b, "%*s%s:", pad, "", key);
		} else {
			json_t *k = json_string(key);
			char *ks = k ? json_dumps(k, JSON_ENCODE_ANY) : NULL;

			mf_buf_printf(b, "%*s%s:", pad, "", ks ? ks : "\"\"");
			free(ks);
			json_decref(k);
		}
		yaml_after(b, v, indent, 0);
	}
}

char *
mf_yaml_dump(const json_t *j)
{
	struct mf_buf b;

	mf_buf_init(&b, TEXT_MAX * 4);
	mf_buf_printf(&b, "---\n");
	if (is_empty_collection(j))
		mf_buf_printf(&b, "%s\n", json_is_object(j) ? "{}" : "[]");
	else if (json_is_object(j) || json_is_array(j))
		yaml_node(&b, j, 0, 0);
	else
		yaml_scalar(&b, j);
	if (b.rc != MF_OK) {
		mf_buf_free(&b);
		return NULL;
	}
	return mf_buf_take(&b);
}
