#include "render.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
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
	    "true", "torch.utils.checkpoint.checkpoint(layer, x, "
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

static json_t *
quantity(int64_t bytes, int format)
{
	char q[MF_QTY_STRMAX];

	mf_qty_format(bytes, (enum mf_qty_format)format, q, sizeof(q));
	return json_string(q);
}

static double
round_to(double v, double unit)
{
	return round(v / unit) * unit;
}

static json_t *
fix_list(unsigned fixes)
{
	json_t *a = json_array();

	for (int f = 0; a != NULL && f < MF_FIX_COUNT; f++)
		if ((fixes & MF_FIXBIT(f)) &&
		    json_array_append_new(a, json_string(mf_fix_name(f))) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *
labels(const struct mf_gpu *g)
{
	json_t *o = json_object();

	for (size_t i = 0; o != NULL && i < g->nlabels; i++)
		if (json_object_set_new(o, g->labels[i].key,
		    json_string(g->labels[i].value)) < 0) {
			json_decref(o);
			return NULL;
		}
	return o;
}

/* Hours and cost are null when the job has no referenceHours. */
static json_t *
placement(const struct mf_job *job, const struct mf_placement *p)
{
	int timed = job->reference_hours > 0;

	return json_pack("{s:s, s:I, s:o, s:I, s:f, s:f, s:o, s:o, s:f, "
	    "s:o, s:o}",
	    "gpu", p->gpu->name, "count", (json_int_t)p->count,
	    "memory", quantity(p->gpu->memory, p->gpu->memory_format),
	    "memoryBytes", (json_int_t)p->gpu->memory,
	    "spareFraction", round_to(p->spare, 1e-4),
	    "hourlyPrice", round_to(p->hourly_price, 1e-4),
	    "hours", timed ? json_real(round_to(p->hours, 1e-3)) : json_null(),
	    "cost", timed ? json_real(round_to(p->cost, 1e-2)) : json_null(),
	    "costPerReferenceHour", round_to(p->cost_per_ref_hour, 1e-4),
	    "fixes", fix_list(p->fixes), "labels", labels(p->gpu));
}

static json_t *
placements(const struct mf_job *job, const struct mf_placement *p, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < n; i++)
		if (json_array_append_new(a, placement(job, &p[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *
manifest_change(const struct mf_fix_option *e)
{
	json_t *o = json_object();
	char gpus[24];

	snprintf(gpus, sizeof(gpus), "%lld", (long long)e->gpus);
	for (int f = 0; o != NULL && f < MF_FIX_COUNT; f++) {
		const char *v = changes[f].value ? changes[f].value : gpus;

		if (!(e->fixes & MF_FIXBIT(f)))
			continue;
		if (json_object_set_new(o, changes[f].manifest,
		    strcmp(v, "true") == 0 ? json_true() :
		    strspn(v, "0123456789") == strlen(v) ?
		    json_integer(strtoll(v, NULL, 10)) : json_string(v)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *
code_change(unsigned fixes)
{
	json_t *a = json_array();

	for (int f = 0; a != NULL && f < MF_FIX_COUNT; f++)
		if ((fixes & MF_FIXBIT(f)) &&
		    json_array_append_new(a, json_string(changes[f].code)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *
fix_entries(const struct mf_job *job, const struct mf_decision *d)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < d->nfixes; i++) {
		const struct mf_fix_option *e = &d->fixes[i];
		json_t *o = json_pack("{s:s, s:o, s:I, s:I, s:o, s:o, s:o, "
		    "s:o, s:b}",
		    "fix", mf_fix_name(e->fix), "fixes", fix_list(e->fixes),
		    "gpus", (json_int_t)e->gpus, "needBytes", (json_int_t)e->need,
		    "minMemory", quantity(e->min_memory, MF_QTY_BINARY),
		    "placement", e->placed ? placement(job, &e->placement) :
		    json_null(), "manifestChange", manifest_change(e),
		    "codeChange", code_change(e->fixes),
		    "modellingDecision", e->fix == MF_FIX_LORA ||
		    e->fix == MF_FIX_QLORA);

		if (json_array_append_new(a, o) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *
string_list(const char (*s)[160], size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < n; i++)
		if (json_array_append_new(a, json_string(s[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *
need(const struct mf_job *job, const struct mf_decision *d)
{
	return json_pack("{s:s, s:o, s:o}",
	    "source", d->from_model ? "model" : "minMemory",
	    "perGpuBytes", d->from_model ? json_integer(d->need) : json_null(),
	    "minMemoryBytes", job->min_memory > 0 ?
	    json_integer(job->min_memory) : json_null());
}

json_t *
mf_render_decision(const struct mf_job *job, const struct mf_decision *d,
    const struct mf_catalog *cat)
{
	json_t *o;

	o = json_pack("{s:b, s:s, s:o, s:o, s:o}", "admitted", d->admitted,
	    "job", job->name ? job->name : "", "need", need(job, d),
	    "minMemory", quantity(d->floor, d->floor_format),
	    "warnings", string_list(d->warnings, d->nwarn));
	if (o == NULL)
		return NULL;
	if (d->admitted) {
		json_object_set_new(o, "placement",
		    placement(job, &d->placement));
		json_object_set_new(o, "alternatives",
		    placements(job, d->alt, d->nalt));
	} else {
		json_object_set_new(o, "reason", json_string(d->reason));
		json_object_set_new(o, "limit", d->limit == MF_LIMIT_NONE ?
		    json_null() : json_string(mf_limit_name(d->limit)));
		json_object_set_new(o, "fixes", fix_entries(job, d));
		json_object_set_new(o, "suggested", d->suggested < 0 ?
		    json_null() :
		    json_string(mf_fix_name(d->fixes[d->suggested].fix)));
	}
	if (d->from_model) {
		struct mf_job placed = *job;

		placed.work = d->work;
		json_object_set_new(o, "estimate",
		    mf_render_estimate(&placed, &d->est, cat));
	}
	return o;
}

/* The formula of a bucket as the reference post writes it. */
static void
formula(enum mf_bucket b, const struct mf_workload *w, char *buf,
    size_t size)
{
	static const int opt_bytes[2][3] = { { 12, 6, 8 }, { 8, 2, 4 } };
	int fp32 = w->precision == MF_FP32;
	const char *x2 = fp32 ? " x 2 (fp32)" : "";

	switch (b) {
	case MF_B_WEIGHTS:
		snprintf(buf, size, "P x %s", w->method == MF_QLORA &&
		    w->kind == MF_TRAINING ? "0.5" : fp32 ? "4" : "2");
		break;
	case MF_B_GRADIENTS:
		snprintf(buf, size, "P x %d", fp32 ? 4 : 2);
		break;
	case MF_B_OPTIMIZER:
		snprintf(buf, size, "P x %d",
		    opt_bytes[fp32][w->optimizer]);
		break;
	case MF_B_ADAPTERS:
		snprintf(buf, size, "T x %d",
		    w->optimizer == MF_ADAM8BIT ? 10 : 16);
		break;
	case MF_B_ACTIVATIONS:
		if (w->checkpointing)
			snprintf(buf, size, "2 x s x b x h x L%s", x2);
		else if (w->attention == MF_EAGER)
			snprintf(buf, size, "L x s x b x h x (34 + 5as/h)%s",
			    x2);
		else
			snprintf(buf, size, "L x s x b x h x 34%s", x2);
		break;
	case MF_B_LOGITS:
		snprintf(buf, size, "s x b x V x 4");
		break;
	case MF_B_KVCACHE:
		snprintf(buf, size, "2 x L x kv x d x %d x seqs x ctx",
		    w->kv_dtype == MF_KV_FP8 ? 1 : 2);
		break;
	case MF_B_SHARDING:
		snprintf(buf, size, "2 x layer params x 2");
		break;
	default:
		snprintf(buf, size, "-");
		break;
	}
}

static json_t *
buckets(const struct mf_estimate *e, const struct mf_workload *w)
{
	json_t *a = json_array();
	char f[64];

	for (int b = 0; a != NULL && b < MF_B_COUNT; b++) {
		if (e->bucket[b] == 0)
			continue;
		formula((enum mf_bucket)b, w, f, sizeof(f));
		if (json_array_append_new(a, json_pack("{s:s, s:I, s:s}",
		    "name", mf_bucket_name((enum mf_bucket)b),
		    "bytes", (json_int_t)e->bucket[b], "formula", f)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *
smallest_fit(const struct mf_job *job, const struct mf_estimate *e,
    const struct mf_catalog *cat)
{
	const struct mf_gpu *g = mf_smallest_fit(cat, e->per_gpu);
	int timed = job->reference_hours > 0;
	double hours;

	if (g == NULL)
		return json_null();
	hours = timed ? job->reference_hours / g->throughput : 0;
	return json_pack("{s:s, s:o, s:I, s:f, s:o, s:o}", "gpu", g->name,
	    "memory", quantity(g->memory, g->memory_format),
	    "memoryBytes", (json_int_t)g->memory, "hourlyPrice",
	    g->hourly_price, "hours", timed ?
	    json_real(round_to(hours, 1e-3)) : json_null(), "cost", timed ?
	    json_real(round_to(hours * g->hourly_price, 1e-2)) : json_null());
}

json_t *
mf_render_estimate(const struct mf_job *job, const struct mf_estimate *e,
    const struct mf_catalog *cat)
{
	const struct mf_workload *w = &job->work;
	json_t *o;

	o = json_pack("{s:I, s:I, s:o, s:I, s:I, s:o, s:o}",
	    "parameters", (json_int_t)e->params,
	    "trainableParameters", (json_int_t)e->trainable,
	    "buckets", buckets(e, &job->work),
	    "totalBytes", (json_int_t)e->total,
	    "perGpuBytes", (json_int_t)e->per_gpu,
	    "minMemory", quantity(mf_floor_for(e->per_gpu, cat->headroom),
	    MF_QTY_BINARY), "smallestFit", smallest_fit(job, e, cat));
	if (o != NULL && w->kind == MF_INFERENCE)
		json_object_set_new(o, "kvCacheBytesPerToken", json_integer(
		    mf_model_kv_bytes_per_token(&job->model,
		    w->kv_dtype == MF_KV_FP8 ? 1 : 2)));
	return o;
}

static json_t *
gpu_json(const struct mf_catalog *cat, const struct mf_gpu *g)
{
	return json_pack("{s:s, s:o, s:I, s:I, s:f, s:f, s:I, s:f, s:o}",
	    "name", g->name, "memory", quantity(g->memory, g->memory_format),
	    "memoryBytes", (json_int_t)g->memory,
	    "usableBytes", (json_int_t)mf_cat_usable(cat, g),
	    "hourlyPrice", g->hourly_price,
	    "relativeThroughput", g->throughput,
	    "maxCount", (json_int_t)g->max_count,
	    "costPerReferenceHour", round_to(g->hourly_price / g->throughput,
	    1e-4), "labels", labels(g));
}

static int
by_cost(const void *a, const void *b)
{
	const struct mf_gpu *x = *(const struct mf_gpu *const *)a;
	const struct mf_gpu *y = *(const struct mf_gpu *const *)b;
	double cx = x->hourly_price / x->throughput;
	double cy = y->hourly_price / y->throughput;

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

static json_t *
time_factors(const struct mf_catalog *cat)
{
	json_t *o = json_object();

	for (int f = 0; o != NULL && f < MF_FIX_COUNT; f++)
		json_object_set_new(o, mf_fix_name(f),
		    json_real(cat->time_factor[f]));
	return o;
}

json_t *
mf_render_catalog(const struct mf_catalog *cat, int64_t min_memory,
    int min_format)
{
	const struct mf_gpu **v;
	char when[32];
	struct tm tm;
	json_t *o, *a;
	size_t n;

	v = fitting(cat, min_memory, &n);
	a = json_array();
	for (size_t i = 0; v != NULL && a != NULL && i < n; i++)
		json_array_append_new(a, gpu_json(cat, v[i]));
	free(v);
	gmtime_r(&cat->loaded_at, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	o = json_pack("{s:I, s:s, s:s, s:f, s:f, s:o, s:o}",
	    "version", (json_int_t)cat->version, "loadedAt", when,
	    "source", cat->source ? cat->source : "",
	    "headroom", cat->headroom,
	    "multiGpuEfficiency", cat->multi_gpu_efficiency,
	    "timeFactors", time_factors(cat), "gpus", a);
	if (o != NULL && min_memory > 0)
		json_object_set_new(o, "minMemory",
		    quantity(min_memory, min_format));
	return o;
}

json_t *
mf_render_models(const struct mf_models *models)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < mf_models_count(models); i++)
		json_array_append_new(a, json_pack("{s:s, s:I}", "name",
		    mf_models_name(models, i), "parameters",
		    (json_int_t)mf_model_params(mf_models_at(models, i))));
	return a == NULL ? NULL : json_pack("{s:o}", "models", a);
}

json_t *
mf_render_error(const struct mf_error *err)
{
	return json_pack("{s:s, s:o, s:o, s:o}", "error", err->message,
	    "field", err->field[0] ? json_string(err->field) : json_null(),
	    "line", err->line > 0 ? json_integer(err->line) : json_null(),
	    "column", err->column > 0 ? json_integer(err->column) :
	    json_null());
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
			used += (size_t)snprintf(buf + used, size - used, "%s%s",
			    used ? "," : "", mf_fix_name(f));
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

static const char placement_head[] = "GPU            COUNT     GB  SPARE "
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
		mf_buf_printf(&b, "need: %.1f GB per GPU (derived), minMemory "
		    "%s\n", gb(d->need), q);
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

char *
mf_text_estimate(const struct mf_job *job, const struct mf_estimate *e,
    const struct mf_catalog *cat)
{
	const struct mf_gpu *g = mf_smallest_fit(cat, e->per_gpu);
	char f[64], q[MF_QTY_STRMAX];
	struct mf_buf b;

	mf_buf_init(&b, TEXT_MAX);
	mf_buf_printf(&b, "%s: %lld parameters, %lld trainable\n\n",
	    job->name, (long long)e->params, (long long)e->trainable);
	mf_buf_printf(&b, "%-16s %-36s %8s\n", "BUCKET", "FORMULA", "GB");
	for (int i = 0; i < MF_B_COUNT; i++) {
		if (e->bucket[i] == 0)
			continue;
		formula((enum mf_bucket)i, &job->work, f, sizeof(f));
		mf_buf_printf(&b, "%-16s %-36s %8.1f\n",
		    mf_bucket_name((enum mf_bucket)i), f, gb(e->bucket[i]));
	}
	mf_buf_printf(&b, "%-16s %-36s %8.1f\n", "total", "", gb(e->total));
	if (e->per_gpu != e->total)
		mf_buf_printf(&b, "%-16s %-36s %8.1f\n", "per GPU",
		    "weights, gradients, optimizer / N", gb(e->per_gpu));
	mf_qty_format(mf_floor_for(e->per_gpu, cat->headroom), MF_QTY_BINARY,
	    q, sizeof(q));
	mf_buf_printf(&b, "\nminMemory %s (%.0f%% headroom); smallest fit: "
	    "%s\n", q, cat->headroom * 100, g ? g->name : "none");
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
	mf_buf_printf(&b, "catalogue version %llu from %s, headroom %.0f%%\n\n"
	    "%-14s %8s %8s %10s %6s %10s\n", (unsigned long long)cat->version,
	    cat->source, cat->headroom * 100, "GPU", "GB", "$/HOUR",
	    "THROUGHPUT", "MAX", "$/REF-H");
	for (size_t i = 0; i < n; i++)
		mf_buf_printf(&b, "%-14s %8.1f %8.3f %10.3f %6lld %10.3f\n",
		    v[i]->name, gb(v[i]->memory), v[i]->hourly_price,
		    v[i]->throughput, (long long)v[i]->max_count,
		    v[i]->hourly_price / v[i]->throughput);
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

static void yaml_node(struct mf_buf *b, const json_t *j, int indent,
    int inline_first);

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
	return strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
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
