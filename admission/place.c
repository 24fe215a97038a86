/*
 * place.c: the cheapest-to-finish search.
 *
 * The search runs in two steps.  First every way of running the job is
 * listed as an option: a set of applied fixes and a GPU count, with the
 * bytes per GPU it needs and its run-time factor.  Options that another
 * option beats everywhere (no more memory, no more time, no more fixes,
 * same count) are dropped.  Then every card is tried with every option
 * left, and the best candidate of each card competes for the placement.
 */
#include "place.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qty.h"

#define GIB (INT64_C(1) << 30)
/* Past this many options, pruning (an optimisation) stops; the table
 * still grows, up to MAX_OPTIONS. */
#define PRUNE_OPTIONS 4096
#define MAX_OPTIONS (1u << 20)

struct option {
	unsigned fixes;
	int64_t count;
	int64_t need;
	double time_factor;
	/*
	 * Cost on a card is k * hourlyPrice / relativeThroughput: with
	 * speed = thr * c * eff^log2(c), cost = refH * tf / speed * price * c
	 * = (refH * tf / eff^log2(c)) * price / thr.
	 */
	double k;
};

struct search {
	const struct mf_job *job;
	const struct mf_catalog *cat;
	double ref_hours; /* referenceHours, or 1 for ranking only */
	size_t nopt, capopt;
	struct option *opt; /* owned */
	/* The cheapest candidate that fit in memory, limits aside. */
	int have_fit;
	struct mf_placement cheapest_fit;
};

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

int64_t
mf_floor_for(int64_t bytes, double headroom)
{
	double gib = ceil((double)bytes / (1.0 - headroom) / (double)GIB);

	/* Design 2: a byte size fits in 63 bits; a floor past it is no
	 * quantity at all, not the largest one. */
	if (bytes < 0 || !(gib <= (double)(INT64_MAX / GIB)))
		return -1;
	return (int64_t)gib * GIB;
}

const struct mf_gpu *
mf_smallest_fit(const struct mf_catalog *cat, int64_t bytes)
{
	const struct mf_gpu *best = NULL, *g;

	for (size_t i = 0; i < cat->ngpus; i++) {
		g = &cat->gpus[i];
		if (mf_cat_usable(cat, g) < bytes)
			continue;
		if (best == NULL || g->memory < best->memory ||
		    (g->memory == best->memory &&
		        (g->hourly_price < best->hourly_price ||
		            (g->hourly_price == best->hourly_price &&
		                strcmp(g->name, best->name) < 0))))
			best = g;
	}
	return best;
}

static int
nfixes(unsigned fixes)
{
	return __builtin_popcount(fixes);
}

/* <0 when a ranks before b: cost, fewer fixes, more spare, fewer GPUs, name. */
static int
rank(const struct mf_placement *a, const struct mf_placement *b)
{
	double tol = 1e-9 * fmax(a->cost_per_ref_hour, b->cost_per_ref_hour);

	if (fabs(a->cost_per_ref_hour - b->cost_per_ref_hour) > tol)
		return a->cost_per_ref_hour < b->cost_per_ref_hour ? -1 : 1;
	if (nfixes(a->fixes) != nfixes(b->fixes))
		return nfixes(a->fixes) - nfixes(b->fixes);
	if (a->spare != b->spare)
		return a->spare > b->spare ? -1 : 1;
	if (a->count != b->count)
		return a->count < b->count ? -1 : 1;
	return strcmp(a->gpu->name, b->gpu->name);
}

static double
time_factor(const struct mf_catalog *cat, unsigned fixes)
{
	double f = 1.0;

	for (int i = 0; i < MF_FIX_COUNT; i++)
		if (fixes & MF_FIXBIT(i))
			f *= cat->time_factor[i];
	return f;
}

/* Does the option fit on g?  The floor check needs no headroom. */
static int
fits(const struct search *s, const struct mf_gpu *g, const struct option *o)
{
	const struct mf_job *job = s->job;

	if (o->count > g->max_count || g->memory < job->min_memory)
		return 0;
	if (job->model_source == MF_MODEL_NONE)
		return 1;
	return o->need <= mf_cat_usable(s->cat, g);
}

static void
candidate(const struct search *s, const struct mf_gpu *g,
    const struct option *o, struct mf_placement *p)
{
	p->gpu = g;
	p->count = o->count;
	p->fixes = o->fixes;
	p->need = o->need;
	p->spare = (double)(g->memory - o->need) / (double)g->memory;
	p->hourly_price = g->hourly_price * (double)o->count;
	p->cost = o->k * mf_cat_unit_cost(g);
	p->hours = o->k / (g->throughput * (double)o->count);
	p->cost_per_ref_hour = p->cost / s->ref_hours;
}

static enum mf_limit
violated(const struct mf_job *job, const struct mf_placement *p)
{
	if (job->max_hourly_price >= 0 &&
	    p->hourly_price > job->max_hourly_price)
		return MF_LIMIT_HOURLY_PRICE;
	if (job->max_cost >= 0 && p->cost > job->max_cost)
		return MF_LIMIT_COST;
	if (job->deadline_hours >= 0 && p->hours > job->deadline_hours)
		return MF_LIMIT_DEADLINE;
	return MF_LIMIT_NONE;
}

/*
 * Best candidate of card g over the options [from, to), which are sorted
 * so that on any one card the first that fits within the limits ranks
 * best; 0 if none does.
 */
static int
best_on(struct search *s, const struct mf_gpu *g, size_t from, size_t to,
    struct mf_placement *best)
{
	int fit_seen = 0;

	for (size_t i = from; i < to; i++) {
		if (!fits(s, g, &s->opt[i]))
			continue;
		candidate(s, g, &s->opt[i], best);
		if (!fit_seen &&
		    (!s->have_fit || rank(best, &s->cheapest_fit) < 0)) {
			s->cheapest_fit = *best;
			s->have_fit = 1;
		}
		fit_seen = 1;
		if (violated(s->job, best) == MF_LIMIT_NONE)
			return 1;
	}
	return 0;
}

/* Insert p into the ranked list top[0..*n), keeping at most max. */
static void
keep_top(struct mf_placement *top, size_t *n, size_t max,
    const struct mf_placement *p)
{
	size_t i = *n;

	if (i == max && rank(p, &top[max - 1]) >= 0)
		return;
	if (i == max)
		i--;
	else
		(*n)++;
	while (i > 0 && rank(p, &top[i - 1]) < 0) {
		top[i] = top[i - 1];
		i--;
	}
	top[i] = *p;
}

static double
cost_factor(const struct search *s, double tf, int64_t count)
{
	return s->ref_hours * tf /
	    pow(s->cat->multi_gpu_efficiency, log2((double)count));
}

/* Option order: on one card, rank() order (cost, fixes, spare, count). */
static int
by_rank(const void *pa, const void *pb)
{
	const struct option *a = pa, *b = pb;
	double tol = 1e-9 * fmax(a->k, b->k);

	if (fabs(a->k - b->k) > tol)
		return a->k < b->k ? -1 : 1;
	if (nfixes(a->fixes) != nfixes(b->fixes))
		return nfixes(a->fixes) - nfixes(b->fixes);
	if (a->need != b->need)
		return a->need < b->need ? -1 : 1;
	if (a->count != b->count)
		return a->count < b->count ? -1 : 1;
	return 0;
}

static int
dominates(const struct option *a, const struct option *b)
{
	return a->count == b->count && a->need <= b->need &&
	    a->time_factor <= b->time_factor &&
	    nfixes(a->fixes) <= nfixes(b->fixes);
}

static enum mf_rc
add_option(struct search *s, const struct option *o)
{
	size_t i, j;

	if (s->nopt < PRUNE_OPTIONS) {
		for (i = 0; i < s->nopt; i++)
			if (dominates(&s->opt[i], o))
				return MF_OK;
		for (i = j = 0; i < s->nopt; i++)
			if (!dominates(o, &s->opt[i]))
				s->opt[j++] = s->opt[i];
		s->nopt = j;
	}
	if (s->nopt == s->capopt) {
		size_t cap = s->capopt ? s->capopt * 2 : 64;
		struct option *p;

		if (cap > MAX_OPTIONS)
			return MF_ETOOBIG;
		p = realloc(s->opt, cap * sizeof(*p));
		if (p == NULL)
			return MF_ENOMEM;
		s->opt = p;
		s->capopt = cap;
	}
	s->opt[s->nopt++] = *o;
	return MF_OK;
}

static int64_t
max_count(const struct mf_catalog *cat)
{
	int64_t m = 1;

	for (size_t i = 0; i < cat->ngpus; i++)
		if (cat->gpus[i].max_count > m)
			m = cat->gpus[i].max_count;
	return m;
}

/*
 * The GPU counts a fix set may run on: the job's own, or with fsdp (and no
 * count asked for) 2 up to the largest maxCount in the catalogue.
 */
static void
counts(const struct search *s, unsigned fixes, int64_t *lo, int64_t *hi)
{
	*lo = *hi = s->job->count;
	if ((fixes & MF_FIXBIT(MF_FIX_FSDP)) && !s->job->count_given) {
		*lo = 2;
		*hi = max_count(s->cat) < 2 ? 2 : max_count(s->cat);
	}
}

/* The job with fixes applied on count GPUs; MF_ERANGE on overflow. */
static enum mf_rc
make_option(const struct search *s, unsigned fixes, int64_t count,
    struct option *o)
{
	struct mf_workload w = s->job->work;
	struct mf_estimate est;

	mf_fix_apply(&w, fixes, count);
	if (mf_est_compute(&s->job->model, &w, &est) != MF_OK)
		return MF_ERANGE;
	o->fixes = fixes;
	o->count = count;
	o->need = est.per_gpu;
	o->time_factor = time_factor(s->cat, fixes);
	o->k = cost_factor(s, o->time_factor, count);
	return MF_OK;
}

/* Options for one fix set: one per GPU count it may run on. */
static enum mf_rc
add_fixset(struct search *s, unsigned fixes, struct mf_error *err)
{
	struct option o;
	int64_t lo, hi;

	counts(s, fixes, &lo, &hi);
	for (int64_t c = lo; c <= hi; c++) {
		if (make_option(s, fixes, c, &o) != MF_OK)
			return mf_est_range_error(err);
		if (add_option(s, &o) != MF_OK)
			return mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
			    "out of memory listing placements");
	}
	return MF_OK;
}

static enum mf_rc
list_options(struct search *s, struct mf_error *err)
{
	const struct mf_job *job = s->job;
	unsigned allowed = 0;
	enum mf_rc rc = MF_OK;

	if (job->model_source == MF_MODEL_NONE) {
		struct option o = { 0, job->count, job->min_memory, 1.0,
			cost_factor(s, 1.0, job->count) };

		return add_option(s, &o) == MF_OK ?
		    MF_OK :
		    mf_error_set(err, MF_ENOMEM, NULL, 0, 0, "out of memory");
	}
	for (int f = 0; f < MF_FIX_COUNT; f++)
		if ((job->allowed_fixes & MF_FIXBIT(f)) &&
		    mf_fix_applies(job, &job->work, (enum mf_fix)f))
			allowed |= MF_FIXBIT(f);
	/* Every subset of allowed, the empty set included. */
	for (unsigned sub = allowed;; sub = (sub - 1) & allowed) {
		if (mf_fix_compatible(sub))
			rc = add_fixset(s, sub, err);
		if (rc != MF_OK || sub == 0)
			break;
	}
	if (s->nopt > 1)
		qsort(s->opt, s->nopt, sizeof(s->opt[0]), by_rank);
	return rc;
}

static void
search_init(struct search *s, const struct mf_job *job,
    const struct mf_catalog *cat)
{
	s->job = job;
	s->cat = cat;
	s->ref_hours = job->reference_hours > 0 ? job->reference_hours : 1.0;
	s->nopt = 0;
	s->capopt = 0;
	s->opt = NULL;
	s->have_fit = 0;
}

/* Rank every card's best candidate; fill placement and alternatives. */
static void
search_cards(struct search *s, struct mf_decision *d)
{
	struct mf_placement top[MF_MAX_ALTERNATIVES + 1], p;
	size_t n = 0;

	for (size_t i = 0; i < s->cat->ngpus; i++)
		if (best_on(s, &s->cat->gpus[i], 0, s->nopt, &p))
			keep_top(top, &n, MF_MAX_ALTERNATIVES + 1, &p);
	d->admitted = n > 0;
	if (n == 0)
		return;
	d->placement = top[0];
	d->nalt = n - 1;
	memcpy(d->alt, top + 1, (n - 1) * sizeof(top[0]));
}

/* The cheapest placement with exactly one option, within limits. */
static int
cheapest_with(struct search *s, const struct option *o,
    struct mf_placement *best)
{
	struct mf_placement p;
	int found = 0;

	/* The table always has room for one: the search added at least one. */
	s->opt[0] = *o;
	s->nopt = 1;
	for (size_t i = 0; i < s->cat->ngpus; i++)
		if (best_on(s, &s->cat->gpus[i], 0, 1, &p) &&
		    (!found || rank(&p, best) < 0)) {
			*best = p;
			found = 1;
		}
	return found;
}

static int
fits_anywhere(const struct search *s, const struct option *o)
{
	for (size_t i = 0; i < s->cat->ngpus; i++)
		if (fits(s, &s->cat->gpus[i], o))
			return 1;
	return 0;
}

static enum mf_rc
fix_entry(struct search *s, enum mf_fix fix, unsigned fixes,
    struct mf_fix_option *e)
{
	struct option o = { 0 }; /* counts() gives lo <= hi: the loop sets it */
	int64_t c, lo, hi;

	/* fsdp: the fewest GPUs that fit, else the most there are. */
	counts(s, fixes, &lo, &hi);
	for (c = lo; c <= hi; c++) {
		if (make_option(s, fixes, c, &o) != MF_OK)
			return MF_ERANGE;
		if (fits_anywhere(s, &o))
			break;
	}
	e->fix = fix;
	e->fixes = fixes;
	e->gpus = o.count;
	e->need = o.need;
	e->min_memory = mf_floor_for(o.need, s->cat->headroom);
	if (e->min_memory < 0)
		return MF_ERANGE;
	e->placed = cheapest_with(s, &o, &e->placement);
	return MF_OK;
}

/* The rejection's fix list, in the post's order (design 7). */
static enum mf_rc
list_fixes(struct search *s, struct mf_decision *d)
{
	const struct mf_job *job = s->job;
	unsigned cum = 0;
	enum mf_rc rc = MF_OK;
	int f;

	d->nfixes = 0;
	d->suggested = -1;
	for (f = 0; f < MF_FIX_COUNT && rc == MF_OK; f++) {
		if (!mf_fix_applies(job, &job->work, (enum mf_fix)f))
			continue;
		if (mf_fix_info((enum mf_fix)f)->cumulative)
			cum |= MF_FIXBIT(f);
		rc = fix_entry(s, (enum mf_fix)f, cum | MF_FIXBIT(f),
		    &d->fixes[d->nfixes++]);
	}
	for (size_t i = 0; i < d->nfixes && d->suggested < 0; i++)
		if (d->fixes[i].placed &&
		    !mf_fix_info(d->fixes[i].fix)->modelling)
			d->suggested = (int)i;
	for (size_t i = 0; i < d->nfixes && d->suggested < 0; i++)
		if (d->fixes[i].placed)
			d->suggested = (int)i;
	return rc;
}

static const struct mf_gpu *
largest_card(const struct search *s)
{
	const struct mf_gpu *best = NULL;

	for (size_t i = 0; i < s->cat->ngpus; i++) {
		const struct mf_gpu *g = &s->cat->gpus[i];

		if (g->max_count >= s->job->count &&
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

	d->limit = violated(job, p);
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
		    "%s %s rules out every fitting placement: the cheapest, "
		    "%s x%lld, costs %s per hour",
		    mf_limit_name(d->limit), limit, p->gpu->name,
		    (long long)p->count, hourly);
		return;
	}
	dollars(cost, sizeof(cost), p->cost);
	snprintf(d->reason, sizeof(d->reason),
	    "%s %s rules out every fitting placement: the cheapest, %s x%lld, "
	    "costs %s per hour, %s in all and takes %.1f hours",
	    mf_limit_name(d->limit), limit, p->gpu->name, (long long)p->count,
	    hourly, cost, p->hours);
}

static void
explain_rejection(const struct search *s, struct mf_decision *d)
{
	const struct mf_job *job = s->job;
	const struct mf_gpu *big = largest_card(s);
	char q[MF_QTY_STRMAX];
	int b = 0;

	if (s->have_fit) {
		explain_limit(s, d);
		return;
	}
	if (big == NULL) {
		snprintf(d->reason, sizeof(d->reason),
		    "no card in the "
		    "catalogue takes %lld GPUs per job (maxCount)",
		    (long long)job->count);
		return;
	}
	if (!d->from_model || job->min_memory > big->memory) {
		/* Both sides in GB: 179Gi against 180G reads as 179 > 180. */
		mf_qty_format(job->min_memory, job->min_memory_format, q,
		    sizeof(q));
		snprintf(d->reason, sizeof(d->reason),
		    "minMemory %s (%.1f GB) is more than the largest card in "
		    "the catalogue, %s (%.1f GB)",
		    q, gb(job->min_memory), big->name, gb(big->memory));
		return;
	}
	for (int i = 1; i < MF_B_COUNT; i++)
		if (d->est.bucket[i] > d->est.bucket[b])
			b = i;
	snprintf(d->reason, sizeof(d->reason),
	    "the job needs %.1f GB per "
	    "GPU, the largest part %s (%.1f GB), but the largest usable card, "
	    "%s, holds %.1f GB after %.0f%% headroom",
	    gb(d->need), mf_bucket_name((enum mf_bucket)b),
	    gb(d->est.bucket[b]), big->name, gb(mf_cat_usable(s->cat, big)),
	    s->cat->headroom * 100);
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

static void
add_warnings(struct mf_decision *d)
{
	const struct mf_workload *w = &d->work;

	if (!d->admitted)
		return;
	if (w->kind == MF_TRAINING && w->attention == MF_EAGER)
		warn(d,
		    "eager attention stores the s x s scores: "
		    "attn_implementation=\"sdpa\" frees them");
	if (w->precision == MF_FP32)
		warn(d,
		    "fp32 without autocast: bf16 autocast halves weights "
		    "and activations");
	if (w->kind == MF_TRAINING && w->micro_batch > 1)
		warn(d,
		    "microBatch %lld: 1 with %lld accumulation steps keeps "
		    "the batch and frees activation memory",
		    (long long)w->micro_batch, (long long)w->micro_batch);
	if (d->placement.spare < 0.10)
		warn(d, "only %.0f%% of %s memory is spare",
		    d->placement.spare * 100, d->placement.gpu->name);
}

/* The floor in effect: the user's, unless the derived need is above it. */
static enum mf_rc
set_floor(const struct search *s, struct mf_decision *d)
{
	const struct mf_job *job = s->job;
	double usable = (double)job->min_memory * (1.0 - s->cat->headroom);
	char q[MF_QTY_STRMAX], u[MF_QTY_STRMAX];

	d->floor = job->min_memory;
	d->floor_format = job->min_memory_format;
	if (!d->from_model ||
	    (job->min_memory > 0 && (double)d->need <= usable))
		return MF_OK;
	d->floor = mf_floor_for(d->need, s->cat->headroom);
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

static enum mf_rc
describe(const struct search *s, struct mf_decision *d)
{
	const struct mf_job *job = s->job;

	d->work = job->work;
	if (d->admitted)
		mf_fix_apply(&d->work, d->placement.fixes, d->placement.count);
	if (!d->from_model) {
		d->need = job->min_memory;
		return MF_OK;
	}
	if (mf_est_compute(&job->model, &d->work, &d->est) != MF_OK)
		return MF_ERANGE;
	d->need = d->est.per_gpu;
	return MF_OK;
}

enum mf_rc
mf_place(const struct mf_job *job, const struct mf_catalog *cat,
    struct mf_decision *out, struct mf_error *err)
{
	struct search s;
	struct mf_decision d;
	enum mf_rc rc;

	memset(&d, 0, sizeof(d));
	d.limit = MF_LIMIT_NONE;
	d.suggested = -1;
	d.from_model = job->model_source != MF_MODEL_NONE;
	search_init(&s, job, cat);
	rc = list_options(&s, err);
	if (rc != MF_OK)
		goto out;
	search_cards(&s, &d);
	rc = describe(&s, &d);
	if (rc != MF_OK)
		goto range;
	rc = set_floor(&s, &d);
	if (rc != MF_OK)
		goto range;
	if (!d.admitted) {
		explain_rejection(&s, &d);
		if (d.from_model && (rc = list_fixes(&s, &d)) != MF_OK)
			goto range;
	}
	add_warnings(&d);
	*out = d;
	goto out;
range:
	mf_est_range_error(err);
out:
	free(s.opt);
	return rc;
}
