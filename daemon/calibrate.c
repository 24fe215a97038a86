/*
 * calibrate.c: the estimator's error on this site's own jobs (design 23,
 * "Seen"): every observation against what the library gives the job its
 * fingerprint's admission recorded (the job as placed), on the
 * observation's card and count, grouped by recipe (method, precision,
 * gradientCheckpointing, framework) and card.  Worked out when asked (GET
 * /v1/calibration, /metrics), never on an admission's path.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../admission/base/str.h"
#include "../admission/fingerprint/fingerprint.h"
#include "../admission/manifest/manifest.h"
#include "../admission/place/place.h"
#include "../store/store.h"
#include "memfloord.h"

/* One observation against the model: its group and its errors (speed
 * NAN when the run or the model has none). */
struct row {
	int method, precision, ckpt;
	int framework;    /* the release (mf_framework_name), -1: none */
	const char *card; /* the observation's */
	double memory, speed;
};

/* The job of the latest fingerprint asked, so that its observations read
 * it once, and what the model gave it on the latest card and count (the
 * store lists a fingerprint's observations by card). */
struct job_cache {
	char fingerprint[MF_FP_HEX];
	int ok;
	struct mf_job job;
	char card[MF_STORE_CARD_MAX];
	int64_t count;
	int modelled; /* need and tps are card and count's: 1, 0 not known,
	                 -1 refused */
	int64_t need;
	double tps;
};

static void
load_job(struct mf_store *st, const char *fp, struct job_cache *jc)
{
	struct mf_error err;
	int64_t count;
	char *text;

	if (strcmp(jc->fingerprint, fp) == 0)
		return;
	mf_copy(jc->fingerprint, sizeof(jc->fingerprint), fp);
	jc->modelled = 0;
	text = mf_store_job(st, fp);
	jc->ok = text != NULL &&
	    mf_fp_read(text, strlen(text), &jc->job, &count, &err) == MF_OK;
	if (text != NULL && !jc->ok)
		mfd_log(MFD_WARN, "calibration: fingerprint %s: %s", fp,
		    err.text);
	free(text);
}

/* The peak an observation measured, one GPU: torch's, else the
 * device's; -1 when none. */
static int64_t
observed_peak(const struct mf_observation *o)
{
	if (o->peak_reserved > 0)
		return o->peak_reserved;
	if (o->peak_allocated > 0)
		return o->peak_allocated;
	return o->device_used > 0 ? o->device_used : -1;
}

/* What the model gives jc's job on count GPUs of card g: 0, or -1 when
 * the library refuses it. */
static int
modelled(struct job_cache *jc, const struct mf_catalog *cat,
    const struct mf_gpu *g, int64_t count)
{
	struct mf_error err;

	if (jc->modelled != 0 && jc->count == count &&
	    strcmp(jc->card, g->name) == 0)
		return jc->modelled > 0 ? 0 : -1;
	mf_copy(jc->card, sizeof(jc->card), g->name);
	jc->count = count;
	jc->modelled = 1;
	if (mf_place_modelled(&jc->job, cat, g, count, &jc->need, &jc->tps,
	        &err) != MF_OK)
		jc->modelled = -1;
	return jc->modelled > 0 ? 0 : -1;
}

/* o against jc's job on cat into *r: 0, or -1 when it cannot be (an
 * unknown card, no peak, a job the library refuses). */
static int
row_of(const struct mf_observation *o, struct job_cache *jc,
    const struct mf_catalog *cat, struct row *r)
{
	const struct mf_gpu *g = mf_cat_find(cat, o->card);
	int64_t peak = observed_peak(o);
	double v = mf_obs_speed(o);

	if (!jc->ok || g == NULL || peak <= 0 ||
	    modelled(jc, cat, g, o->count) != 0)
		return -1;
	r->method = jc->job.work.method;
	r->precision = jc->job.work.precision;
	r->ckpt = jc->job.work.checkpointing;
	r->framework = jc->job.framework_given ? jc->job.framework : -1;
	r->card = o->card;
	r->memory = (double)jc->need / (double)peak - 1;
	r->speed = v > 0 && jc->tps > 0 ? jc->tps / v - 1 : NAN;
	return 0;
}

static int
cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->method != y->method)
		return x->method < y->method ? -1 : 1;
	if (x->precision != y->precision)
		return x->precision < y->precision ? -1 : 1;
	if (x->ckpt != y->ckpt)
		return x->ckpt < y->ckpt ? -1 : 1;
	if (x->framework != y->framework)
		return x->framework < y->framework ? -1 : 1;
	return strcmp(x->card, y->card);
}

static int
same_group(const struct row *a, const struct row *b)
{
	return a->method == b->method && a->precision == b->precision &&
	    a->ckpt == b->ckpt && a->framework == b->framework &&
	    strcmp(a->card, b->card) == 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median and the worst (the least: the unsafe side) of v[0..n),
 * which it sorts; n 0 leaves *f empty. */
static void
figure(double *v, size_t n, struct mfd_calib_figure *f)
{
	f->n = n;
	if (n == 0)
		return;
	qsort(v, n, sizeof(*v), cmp_double);
	f->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	f->worst = v[0];
}

/* The group of r[0..n), one recipe and card; scratch holds n figures. */
static void
group_of(const struct row *r, size_t n, double *scratch,
    struct mfd_calib_group *g)
{
	size_t ns = 0;

	memset(g, 0, sizeof(*g));
	g->method = mf_workload_enum_name("method", r[0].method);
	g->precision = mf_workload_enum_name("precision", r[0].precision);
	g->checkpointing =
	    mf_workload_enum_name("gradientCheckpointing", r[0].ckpt);
	g->framework = mf_framework_name(r[0].framework);
	mf_copy(g->card, sizeof(g->card), r[0].card);
	g->count = (int64_t)n;
	for (size_t i = 0; i < n; i++)
		scratch[i] = r[i].memory;
	figure(scratch, n, &g->memory);
	for (size_t i = 0; i < n; i++)
		if (!isnan(r[i].speed))
			scratch[ns++] = r[i].speed;
	figure(scratch, ns, &g->speed);
}

/* The groups of rows[0..n), which it sorts; NULL on allocation failure. */
static struct mfd_calibration *
groups_of(struct row *rows, size_t n)
{
	struct mfd_calibration *c = malloc(sizeof(*c) + n * sizeof(c->g[0]));
	double *scratch = malloc((n ? n : 1) * sizeof(*scratch));
	size_t i = 0, j;

	if (c == NULL || scratch == NULL) {
		free(c);
		free(scratch);
		return NULL;
	}
	qsort(rows, n, sizeof(*rows), cmp_row);
	c->n = 0;
	while (i < n) {
		for (j = i + 1; j < n && same_group(&rows[i], &rows[j]); j++)
			;
		group_of(&rows[i], j - i, scratch, &c->g[c->n++]);
		i = j;
	}
	free(scratch);
	return c;
}

struct mfd_calibration *
mfd_calibrate(struct mf_store *st, size_t max, struct mf_error *err)
{
	struct mf_observation *list = NULL;
	struct mfd_calibration *c = NULL;
	struct job_cache *jc = calloc(1, sizeof(*jc));
	struct mf_catalog *cat;
	struct row *rows = NULL;
	size_t n = 0, nr = 0;

	mfd_state_take(&cat, NULL);
	if (jc == NULL || cat == NULL) {
		mf_error_set(err, jc ? MF_EINVAL : MF_ENOMEM, NULL, 0, 0,
		    jc ? "no catalogue loaded" : "out of memory");
		goto out;
	}
	if (mf_store_list(st, NULL, max, &list, &n, err) != MF_OK)
		goto out;
	rows = malloc((n ? n : 1) * sizeof(*rows));
	if (rows == NULL) {
		mf_error_set(err, MF_ENOMEM, NULL, 0, 0, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		load_job(st, list[i].fingerprint, jc);
		if (row_of(&list[i], jc, cat, &rows[nr]) == 0)
			nr++;
	}
	c = groups_of(rows, nr);
	if (c == NULL)
		mf_error_set(err, MF_ENOMEM, NULL, 0, 0, "out of memory");
out:
	free(rows);
	free(list);
	free(jc);
	mf_cat_unref(cat);
	return c;
}

void
mfd_calibration_free(struct mfd_calibration *c)
{
	free(c);
}
