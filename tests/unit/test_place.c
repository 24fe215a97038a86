/*
 * test_place.c: the cheapest-to-finish placement (design section 6) and the
 * rejection's fix list (design section 7).
 *
 * Every expected figure is worked out by hand in the comments from the
 * design's formulas, for Llama 3.1 8B (catalog/models; P = 8,030,261,248,
 * h = 4096, L = 32, a = 32, kv = 8, d = 128, I = 14336, V = 128256) at
 * s = 4096, b = 1 unless said otherwise:
 *
 *   weights     2P               = 16,060,522,496
 *   gradients   2P               = 16,060,522,496
 *   optimizer   AdamW 12P        = 96,363,134,976   (8-bit Adam 6P =
 *                                                     48,181,567,488)
 *   activations L*s*b*h*34       = 18,253,611,008   (sdpa)
 *               2*s*b*h*L        =  1,073,741,824   (checkpointing)
 *   logits      s*b*V*4          =  2,101,346,304
 *   sharding    2 * 218,112,000 (one layer) * 2 bytes = 872,448,000
 *   LoRA r16 all-linear: T = 16 * 32 * (2*(4096+4096) + 2*(4096+1024) +
 *               3*(4096+14336)) = 41,943,040; adapters 16T = 671,088,640
 *
 * so that (design 5's table):
 *   AdamW, no checkpointing     148,839,137,280  (148.8 GB)
 *   + checkpointing             131,659,268,096  (131.7 GB)
 *   + 8-bit Adam                 83,477,700,608  ( 83.5 GB)
 *   LoRA + checkpointing         19,906,699,264  ( 19.9 GB)
 *   QLoRA (weights P/2 = 4,015,130,624) + ckpt  7,861,307,392 (7.9 GB)
 *
 * A card's usable memory is memory x 0.9 (headroom 0.10); a suggested floor
 * is ceil(need / 0.9 / 2^30) GiB.
 *
 * Files are found under $MF_TOP (the repository root; "." when unset).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <math.h>

#include "doc/doc.h"
#include "estimate/estimate.h"
#include "fix/fix.h"
#include "manifest/manifest.h"
#include "model/model.h"
#include "place/place.h"
#include "answer/render.h"
#include "catalog.h"
#include "files.h"
#include "msg.h"
#include "base/internal.h"

#define GIB (INT64_C(1) << 30)
#define BIT(f) MF_FIXBIT(MF_FIX_##f)

/* The reference figures above. */
#define NEED_FULL INT64_C(148839137280)
#define NEED_CKPT INT64_C(131659268096)
#define NEED_8BIT INT64_C(83477700608)
#define NEED_LORA INT64_C(19906699264)
#define NEED_QLORA INT64_C(7861307392)

static struct mf_models *models;
static struct mf_catalog *shipped;

struct fx {
	struct mf_doc *doc;
	struct mf_job job;
};

/* The cards of design 6's arithmetic (tests/data/catalog/design6.yaml:
 * the shipped cards, each timed by its relativeThroughput), which the
 * figures above are worked out on; the modelled hours of design 21 are
 * test_time.c's. */
static int
setup(void **state)
{
	struct mf_error err;
	char path[512];

	(void)state;
	if (shipped_data(NULL, &models) != 0)
		return -1;
	if (mf_cat_load(top_path(path, sizeof(path),
	                    "tests/data/catalog/design6.yaml"),
	        &shipped, &err) != MF_OK) {
		fprintf(stderr, "setup: %s\n", MSG(&err));
		return -1;
	}
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	mf_models_free(models);
	mf_cat_unref(shipped);
	return 0;
}

#define JOB \
	"apiVersion: memfloor.dev/v1\nkind: Job\nmetadata:\n  name: t\n" \
	"spec:\n"
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define LLAMA "  model:\n    name: meta-llama/Llama-3.1-8B\n"
#define WL(lines) "  workload:\n    sequenceLength: 4096\n" lines
#define HOURS(n) "  duration:\n    referenceHours: " #n "\n"
#define FIXES(list) "  allowedFixes: [" list "]\n"
#define FLOOR(q) "  resources:\n    gpu:\n      minMemory: " q "\n"

/*
 * Read the manifest JOB + spec into f.  The figures of these tests are
 * the post's arithmetic (design 5), so the job is estimated with post;
 * the tests of the default estimator set pytorch after loading.
 */
static void
job_load(struct fx *f, const char *spec)
{
	char text[2048];
	struct mf_error err;
	enum mf_rc rc;

	snprintf(text, sizeof(text), JOB "%s", spec);
	rc = mf_doc_parse(text, strlen(text), MF_DOC_YAML, &f->doc, &err);
	if (rc == MF_OK)
		rc =
		    mf_job_read(mf_doc_root(f->doc), "", models, &f->job, &err);
	if (rc != MF_OK)
		fail_msg("manifest: %s\n%s", MSG(&err), text);
	f->job.work.estimator = MF_EST_POST;
}

static void
job_free(struct fx *f)
{
	mf_doc_free(f->doc);
}

static struct mf_catalog *
cat_parse(const char *text)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;

	if (mf_cat_parse(text, strlen(text), "test", &cat, &err) != MF_OK)
		fail_msg("catalogue: %s", MSG(&err));
	return cat;
}

/*
 * mf_place_no_formulas decides as mf_place did (d) with the estimate's
 * figures alone: its formulas, filled with 0xa5 first, stay so.  Its
 * placement has mf_place's figures; its alternatives what ranked them, the
 * rest 0.
 */
static void
same_without_formulas(const struct fx *f, const struct mf_catalog *cat,
    const struct mf_decision *d)
{
	static struct mf_decision q;
	struct mf_error err;

	memset(&q, 0xa5, sizeof(q));
	if (mf_place_no_formulas(&f->job, cat, &q, &err) != MF_OK)
		fail_msg("mf_place_no_formulas: %s", MSG(&err));
	assert_int_equal(q.admitted, d->admitted);
	assert_int_equal(q.need, d->need);
	assert_int_equal(q.floor, d->floor);
	assert_string_equal(q.fingerprint, d->fingerprint);
	assert_string_equal(q.reason, d->reason);
	assert_int_equal(q.nalt, d->nalt);
	assert_int_equal(q.nfixes, d->nfixes);
	if (d->admitted) {
		assert_ptr_equal(q.placement.gpu, d->placement.gpu);
		assert_int_equal(q.placement.count, d->placement.count);
		assert_true(
		    q.placement.step.seconds == d->placement.step.seconds);
		assert_int_equal(q.placement.tokens_per_step,
		    d->placement.tokens_per_step);
		assert_true(q.placement.reference_hours ==
		    d->placement.reference_hours);
		assert_int_equal(q.placement.max_seqs, d->placement.max_seqs);
	}
	for (size_t i = 0; i < d->nalt; i++) {
		assert_ptr_equal(q.alt[i].gpu, d->alt[i].gpu);
		assert_int_equal(q.alt[i].count, d->alt[i].count);
		assert_true(q.alt[i].cost == d->alt[i].cost);
		assert_true(q.alt[i].step.seconds == 0);
		assert_int_equal(q.alt[i].tokens_per_step, 0);
		assert_int_equal(q.alt[i].max_seqs, 0);
		assert_true(q.alt[i].reference_hours == 0);
	}
	if (!d->from_model)
		return;
	assert_int_equal(q.est.figures_only, 1);
	assert_int_equal(d->est.figures_only, 0);
	assert_int_equal(q.est.per_gpu, d->est.per_gpu);
	assert_memory_equal(q.est.stage, d->est.stage, sizeof(d->est.stage));
	assert_int_equal((unsigned char)q.est.formula[0][0], 0xa5);
}

static void
place(const struct fx *f, const struct mf_catalog *cat, struct mf_decision *d)
{
	struct mf_error err;
	enum mf_rc rc;

	memset(d, 0xa5, sizeof(*d));
	rc = mf_place(&f->job, cat, d, &err);
	if (rc != MF_OK)
		fail_msg("mf_place: %s", MSG(&err));
	same_without_formulas(f, cat, d);
}

#define near(a, b) near_at((a), (b), __FILE__, __LINE__)

static void
near_at(double got, double want, const char *file, int line)
{
	if (!(fabs(got - want) <= 1e-6 * fmax(1.0, fabs(want))))
		fail_msg("%s:%d: got %.9g, want %.9g", file, line, got, want);
}

static void
expect_placement(const struct mf_placement *p, const char *gpu, int64_t count,
    unsigned fixes)
{
	if (strcmp(p->gpu->name, gpu) != 0 || p->count != count ||
	    p->fixes != fixes)
		fail_msg("placement %s x%lld fixes %#x, want %s x%lld "
		         "fixes %#x",
		    p->gpu->name, (long long)p->count, p->fixes, gpu,
		    (long long)count, fixes);
}

static int
has_warning(const struct mf_decision *d, const char *part)
{
	for (size_t i = 0; i < d->nwarn; i++)
		if (strstr(d->warnings[i], part) != NULL)
			return 1;
	return 0;
}

#define CAT_HDR_NO_GPUS "apiVersion: memfloor.dev/v1\nkind: GpuCatalog\n"
#define CAT_HDR CAT_HDR_NO_GPUS "gpus:\n"
#define GPU(name, mem, price, thr) \
	"  - name: " name "\n    memory: " mem "\n    hourlyPrice: " price \
	"\n    relativeThroughput: " thr "\n"

/*
 * Cheapest per hour is not cheapest to finish.  Cost per reference hour =
 * price / throughput for one GPU:
 *
 *   slow-cheap  48G  $1.00  0.25   -> 4.00
 *   fast        80G  $2.00  1.0    -> 2.00
 *   mid         96G  $1.50  0.5    -> 3.00
 */
#define CAT_RANK \
	CAT_HDR GPU("slow-cheap", "48G", "1.00", "0.25") \
	    GPU("fast", "80G", "2.00", "1.0") GPU("mid", "96G", "1.50", "0.5")

/* --- minMemory only --- */

/*
 * minMemory 40Gi = 42,949,672,960 bytes fits all three (no headroom for a
 * floor).  referenceHours 12:
 *   fast: hours 12 / 1.0 = 12,  cost 12 x 2.00 = 24
 *   mid:  hours 12 / 0.5 = 24,  cost 24 x 1.50 = 36
 *   slow: hours 12 / 0.25 = 48, cost 48 x 1.00 = 48
 * spare on fast = (80e9 - 42,949,672,960) / 80e9 = 0.463129088.
 */
static void
test_floor_cheapest_to_finish(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_RANK);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, FLOOR("40Gi") HOURS(12));
	place(&f, cat, &d);
	assert_true(d.admitted);
	assert_false(d.from_model);
	assert_int_equal(d.need, 40 * GIB);
	assert_int_equal(d.floor, 40 * GIB);
	assert_int_equal(d.limit, MF_LIMIT_NONE);
	expect_placement(&d.placement, "fast", 1, 0);
	near(d.placement.hourly_price, 2.0);
	near(d.placement.hours, 12);
	near(d.placement.cost, 24);
	near(d.placement.cost_per_ref_hour, 2.0);
	near(d.placement.spare, 0.463129088);
	assert_int_equal(d.placement.need, 40 * GIB);
	assert_int_equal(d.nalt, 2);
	expect_placement(&d.alt[0], "mid", 1, 0);
	near(d.alt[0].hours, 24);
	near(d.alt[0].cost, 36);
	expect_placement(&d.alt[1], "slow-cheap", 1, 0);
	near(d.alt[1].cost, 48);
	assert_int_equal(d.nwarn, 0);
	job_free(&f);
	mf_cat_unref(cat);
}

/* Without referenceHours the ranking key is cost per reference hour. */
static void
test_floor_no_hours(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_RANK);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, FLOOR("40Gi"));
	place(&f, cat, &d);
	expect_placement(&d.placement, "fast", 1, 0);
	near(d.placement.cost_per_ref_hour, 2.0);
	near(d.alt[0].cost_per_ref_hour, 3.0);
	near(d.alt[1].cost_per_ref_hour, 4.0);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * A floor is compared with the whole card: 48G = 48,000,000,000 fits a
 * 48G card exactly, with no spare, which draws the spare warning.  50G
 * leaves only fast and mid.
 */
static void
test_floor_boundary(void **state)
{
	struct mf_catalog *cat =
	    cat_parse(CAT_HDR GPU("only", "48G", "1.00", "1.0"));
	struct mf_catalog *rank = cat_parse(CAT_RANK);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, FLOOR("48G"));
	place(&f, cat, &d);
	assert_true(d.admitted);
	expect_placement(&d.placement, "only", 1, 0);
	near(d.placement.spare, 0);
	assert_true(has_warning(&d, "spare"));
	job_free(&f);
	job_load(&f, FLOOR("50G"));
	place(&f, rank, &d);
	expect_placement(&d.placement, "fast", 1, 0);
	assert_int_equal(d.nalt, 1);
	expect_placement(&d.alt[0], "mid", 1, 0);
	job_free(&f);
	mf_cat_unref(cat);
	mf_cat_unref(rank);
}

/*
 * minMemory 100Gi = 107,374,182,400 > 96G: rejected, and no limit is to
 * blame; a floor alone has no fixes to offer.
 */
static void
test_floor_too_big(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_RANK);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, FLOOR("100Gi") HOURS(12));
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.limit, MF_LIMIT_NONE);
	assert_null(mf_limit_name(d.limit));
	assert_int_equal(d.nfixes, 0);
	assert_int_equal(d.suggested, -1);
	assert_int_equal(d.floor, 100 * GIB);
	assert_non_null(strstr(d.reason, "100Gi"));
	assert_non_null(strstr(d.reason, "mid"));
	assert_int_equal(d.nwarn, 0);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * count 2: speed = throughput x 2 x 0.9^1, so cost per reference hour =
 * price / (throughput x 0.9):
 *   fast 2.00 / 0.9 = 2.2222, mid 1.50 / 0.45 = 3.3333,
 *   slow 1.00 / 0.225 = 4.4444.
 * fast x2: hours = 12 / 1.8 = 6.6667, hourly 2 x 2.00 = 4.00, cost 26.6667.
 * count 4: 0.9^2 = 0.81; fast x4 hours 12 / 3.24 = 3.7037, cost x 8.00 =
 * 29.6296.
 */
static void
test_floor_count(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_RANK);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    "  resources:\n    gpu:\n      minMemory: 40Gi\n"
	    "      count: 2\n" HOURS(12));
	place(&f, cat, &d);
	expect_placement(&d.placement, "fast", 2, 0);
	near(d.placement.hourly_price, 4.0);
	near(d.placement.hours, 12 / 1.8);
	near(d.placement.cost, 26.666666667);
	near(d.placement.cost_per_ref_hour, 2.222222222);
	near(d.alt[0].cost_per_ref_hour, 3.333333333);
	near(d.alt[1].cost_per_ref_hour, 4.444444444);
	job_free(&f);
	job_load(&f,
	    "  resources:\n    gpu:\n      minMemory: 40Gi\n"
	    "      count: 4\n" HOURS(12));
	place(&f, cat, &d);
	expect_placement(&d.placement, "fast", 4, 0);
	near(d.placement.hours, 3.703703704);
	near(d.placement.cost, 29.62962963);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * count 9 is past every card's maxCount (default 8): rejected, and the
 * reason says so rather than blaming the floor.
 */
static void
test_floor_count_past_max(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_RANK);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    "  resources:\n    gpu:\n      minMemory: 40Gi\n"
	    "      count: 9\n");
	place(&f, cat, &d);
	job_free(&f);
	mf_cat_unref(cat);
	assert_false(d.admitted);
	assert_int_equal(d.limit, MF_LIMIT_NONE);
	if (strstr(d.reason, "count") == NULL &&
	    strstr(d.reason, "maxCount") == NULL)
		fail_msg("reason does not name the GPU count: %s", d.reason);
}

/* --- ties --- */

/* Two identical cards: the name decides, whatever the file order. */
static void
test_tie_name(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_HDR GPU("zeta", "80G", "2.0",
	    "1.0") GPU("alpha", "80G", "2.0", "1.0"));
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, FLOOR("40Gi"));
	place(&f, cat, &d);
	expect_placement(&d.placement, "alpha", 1, 0);
	expect_placement(&d.alt[0], "zeta", 1, 0);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * Equal cost (1.00 / 0.5 = 2.00 / 1.0 = 2.0 per reference hour): more spare
 * memory wins before the name.  40Gi on a-small 48G leaves 0.105, on z-big
 * 96G 0.553.
 */
static void
test_tie_spare(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_HDR GPU("a-small", "48G", "1.00",
	    "0.5") GPU("z-big", "96G", "2.00", "1.0"));
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, FLOOR("40Gi"));
	place(&f, cat, &d);
	expect_placement(&d.placement, "z-big", 1, 0);
	expect_placement(&d.alt[0], "a-small", 1, 0);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * Equal cost: fewer fixes wins before spare and name.  Llama 8B AdamW +
 * checkpointing (131,659,268,096) with 8-bit Adam allowed (time factor 1):
 *   a-96   96G $1 / 0.5: only with adam8bit (83.48 <= 86.4 usable),
 *          spare (96e9 - 83,477,700,608) / 96e9 = 0.130
 *   z-150 150G $2 / 1.0: as it is (131.66 <= 135 usable),
 *          spare (150e9 - 131,659,268,096) / 150e9 = 0.122
 * Both cost 2.0 per reference hour; z-150 needs no fix.
 */
static void
test_tie_fewer_fixes(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_HDR GPU("a-96", "96G", "1.0",
	    "0.5") GPU("z-150", "150G", "2.0", "1.0"));
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA WL("    gradientCheckpointing: true\n") FIXES("adam8bit"));
	place(&f, cat, &d);
	expect_placement(&d.placement, "z-150", 1, 0);
	assert_int_equal(d.placement.need, NEED_CKPT);
	near(d.placement.spare, (150e9 - 131659268096.0) / 150e9);
	expect_placement(&d.alt[0], "a-96", 1, BIT(ADAM8BIT));
	assert_int_equal(d.alt[0].need, NEED_8BIT);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * Equal cost, fixes and spare: fewer GPUs wins before the name.  With
 * multiGpuEfficiency 1 the cost per reference hour is price / throughput
 * at any count.  Llama 8B AdamW, no checkpointing, FSDP allowed, per GPU:
 *   N=2: 16,060,522,496 / 2 * 2 + 96,363,134,976 / 2 + 18,253,611,008 +
 *        2,101,346,304 + 872,448,000 = 85,469,495,296
 *   N=4: 8,030,261,248 + 24,090,783,744 + 21,227,405,312 = 53,348,450,304
 * Cards sized 1.5 x those needs leave exactly 1/3 spare:
 *   z-wide   1.5 x 85,469,495,296 = 128,204,242,944, maxCount 2 -> x2
 *   a-narrow 1.5 x 53,348,450,304 =  80,022,675,456, maxCount 4 -> x4
 * (148,839,137,280 on one GPU fits neither.)
 */
static void
test_tie_fewer_gpus(void **state)
{
	struct mf_catalog *cat = cat_parse(
	    "apiVersion: memfloor.dev/v1\n"
	    "kind: GpuCatalog\nmultiGpuEfficiency: 1\ngpus:\n" GPU("a-narrow",
	        "80022675456", "2.0", "1.0") "    maxCount: 4\n" GPU("z-wide",
	        "128204242944", "2.0", "1.0") "    maxCount: 2\n");
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, LLAMA WL("") FIXES("fsdp"));
	place(&f, cat, &d);
	assert_true(d.admitted);
	expect_placement(&d.placement, "z-wide", 2, BIT(FSDP));
	assert_int_equal(d.placement.need, INT64_C(85469495296));
	near(d.placement.spare, 1.0 / 3);
	expect_placement(&d.alt[0], "a-narrow", 4, BIT(FSDP));
	assert_int_equal(d.alt[0].need, INT64_C(53348450304));
	near(d.alt[0].spare, 1.0 / 3);
	job_free(&f);
	mf_cat_unref(cat);
}

/* --- limits --- */

/* maxHourlyPrice 1.6 drops fast ($2.00/h): mid, 24 h, $36. */
static void
test_limit_hourly_price(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_RANK);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    FLOOR("40Gi") HOURS(12) "  limits:\n    maxHourlyPrice: 1.6\n");
	place(&f, cat, &d);
	expect_placement(&d.placement, "mid", 1, 0);
	near(d.placement.cost, 36);
	assert_int_equal(d.nalt, 1);
	job_free(&f);
	/* $0.50/h rules out every card: the limit is named. */
	job_load(&f,
	    FLOOR("40Gi") HOURS(12) "  limits:\n    maxHourlyPrice: 0.5\n");
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.limit, MF_LIMIT_HOURLY_PRICE);
	assert_string_equal(mf_limit_name(d.limit), "limits.maxHourlyPrice");
	assert_non_null(strstr(d.reason, "limits.maxHourlyPrice"));
	assert_non_null(strstr(d.reason, "fast"));
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * A rejection for a limit quotes the limit, and money under a cent is not
 * "$0.00".  referenceHours 0.001: fast 0.001 h x $2.00 = $0.002, mid
 * 0.002 h x $1.50 = $0.003, slow 0.004 h x $1.00 = $0.004; maxCost 0.001
 * rules out all three, fast the cheapest.
 */
static void
test_limit_reason_quotes_limit(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_RANK);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    FLOOR("40Gi") HOURS(0.001) "  limits:\n    maxCost: 0.001\n");
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.limit, MF_LIMIT_COST);
	assert_string_equal(d.reason,
	    "limits.maxCost $0.001 rules out every fitting placement: the "
	    "cheapest, fast x1, costs $2.00 per hour, $0.002 in all and takes "
	    "0.0 hours");
	job_free(&f);
	job_load(&f,
	    FLOOR("40Gi") HOURS(12) "  limits:\n    maxHourlyPrice: 0.5\n");
	place(&f, cat, &d);
	assert_non_null(
	    strstr(d.reason, "limits.maxHourlyPrice $0.50 per hour rules out"));
	job_free(&f);
	job_load(&f,
	    FLOOR("40Gi") HOURS(12) "  limits:\n    deadlineHours: 10\n");
	place(&f, cat, &d);
	assert_non_null(
	    strstr(d.reason, "limits.deadlineHours 10 hours rules"));
	job_free(&f);
	/* A floor past every card: both sides in GB. */
	job_load(&f, FLOOR("179Gi"));
	place(&f, cat, &d);
	assert_string_equal(d.reason,
	    "minMemory 179Gi (192.2 GB) is more than the largest card in the "
	    "catalogue, mid (96.0 GB)");
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * maxHourlyPrice is on price x count.  count 2, limit 3.5: fast x2 costs
 * $4.00/h (out), mid x2 $3.00/h, slow x2 $2.00/h.  mid x2: hours
 * 12 / (0.5 x 2 x 0.9) = 13.333, cost 13.333 x 3.00 = 40; slow x2: 12 /
 * 0.45 = 26.667 h, $53.33.
 */
static void
test_limit_hourly_price_count(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_RANK);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    "  resources:\n    gpu:\n      minMemory: 40Gi\n"
	    "      count: 2\n" HOURS(
	        12) "  limits:\n    maxHourlyPrice: 3.5\n");
	place(&f, cat, &d);
	expect_placement(&d.placement, "mid", 2, 0);
	near(d.placement.hourly_price, 3.0);
	near(d.placement.cost, 40);
	near(d.placement.hours, 13.333333333);
	assert_int_equal(d.nalt, 1);
	expect_placement(&d.alt[0], "slow-cheap", 2, 0);
	job_free(&f);
	mf_cat_unref(cat);
}

/* maxCost 30 keeps fast ($24); maxCost 20 rules out all (cheapest $24). */
static void
test_limit_cost(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_RANK);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, FLOOR("40Gi") HOURS(12) "  limits:\n    maxCost: 30\n");
	place(&f, cat, &d);
	expect_placement(&d.placement, "fast", 1, 0);
	assert_int_equal(d.nalt, 0);
	job_free(&f);
	job_load(&f, FLOOR("40Gi") HOURS(12) "  limits:\n    maxCost: 20\n");
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.limit, MF_LIMIT_COST);
	assert_string_equal(mf_limit_name(d.limit), "limits.maxCost");
	assert_non_null(strstr(d.reason, "limits.maxCost"));
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * deadlineHours 20 keeps only fast (12 h; mid takes 24, slow 48).  With
 * maxHourlyPrice 1.6 too, nothing is left; fast, the cheapest that fits,
 * breaks the price limit first.  deadlineHours 30 with that price limit
 * leaves mid (24 h).  deadlineHours 10 rules out everything.
 */
static void
test_limit_deadline(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_RANK);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    FLOOR("40Gi") HOURS(12) "  limits:\n    deadlineHours: 20\n");
	place(&f, cat, &d);
	expect_placement(&d.placement, "fast", 1, 0);
	assert_int_equal(d.nalt, 0);
	job_free(&f);
	job_load(&f,
	    FLOOR("40Gi") HOURS(12) "  limits:\n    deadlineHours: 30\n    "
	                            "maxHourlyPrice: 1.6\n");
	place(&f, cat, &d);
	expect_placement(&d.placement, "mid", 1, 0);
	near(d.placement.hours, 24);
	job_free(&f);
	job_load(&f,
	    FLOOR("40Gi") HOURS(12) "  limits:\n    deadlineHours: 10\n");
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.limit, MF_LIMIT_DEADLINE);
	assert_string_equal(mf_limit_name(d.limit), "limits.deadlineHours");
	assert_non_null(strstr(d.reason, "limits.deadlineHours"));
	job_free(&f);
	job_load(&f,
	    FLOOR("40Gi") HOURS(12) "  limits:\n    deadlineHours: 20\n    "
	                            "maxHourlyPrice: 1.6\n");
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.limit, MF_LIMIT_HOURLY_PRICE);
	job_free(&f);
	mf_cat_unref(cat);
}

/* --- model-derived, shipped catalogue --- */

/*
 * Design 5's row "smallest card with 10% headroom" on catalog/gpus.yaml,
 * whose cards hold what their drivers report (design 20; the post's own
 * listing, decimal sizes and all, is test_catalog.c's
 * test_post_smallest_fit):
 *   QLoRA   7,861,307,392 -> RTX-A4000 (16376Mi, 15,454,332,518 usable)
 *   LoRA   19,906,699,264 -> L4 (23034Mi, 21,737,609,625: the smallest
 *                             of the 24 GB cards, the RTX 4090 at 24564Mi
 *                             and the RTX 3090 at 24576Mi)
 *   8-bit  83,477,700,608 -> RTX-PRO-6000 (97887Mi, 92,377,763,020; the
 *                             H100's 81559Mi holds 76,968,728,985)
 *   AdamW 131,659,268,096 -> H200 (143771Mi, 135,679,338,086)
 */
static void
smallest_row(const char *spec, int64_t need, const char *gpu)
{
	struct mf_decision d;
	struct fx f;

	job_load(&f, spec);
	place(&f, shipped, &d);
	assert_true(d.admitted);
	assert_true(d.from_model);
	assert_int_equal(d.need, need);
	assert_int_equal(d.est.params, INT64_C(8030261248));
	assert_string_equal(mf_smallest_fit(shipped, &f.job, d.need,
	                        shipped->headroom)
	                        ->name,
	    gpu);
	job_free(&f);
}

static void
test_model_smallest_fit_row(void **state)
{
	(void)state;
	smallest_row(LLAMA WL("    method: qlora\n"
	                      "    gradientCheckpointing: true\n"),
	    NEED_QLORA, "RTX-A4000");
	smallest_row(LLAMA WL("    method: lora\n"
	                      "    gradientCheckpointing: true\n"),
	    NEED_LORA, "L4");
	smallest_row(LLAMA WL("    optimizer: adam8bit\n"
	                      "    gradientCheckpointing: true\n"),
	    NEED_8BIT, "RTX-PRO-6000");
	smallest_row(LLAMA WL("    gradientCheckpointing: true\n"), NEED_CKPT,
	    "H200");
}

/*
 * The 8-bit row: minMemory = ceil(83,477,700,608 / 0.9 / 2^30) =
 * ceil(86.38) = 87Gi = 93,415,538,688.  The cheapest to finish among the
 * cards that hold 83.5 GB (cost per reference hour = price / throughput):
 * B200 5.50 / 2.274 = 2.419, RTX-PRO-6000 1.35 / 0.509 = 2.652, H200 3.50.
 * Without referenceHours hours and cost are per reference hour.
 */
static void
test_model_8bit_floor(void **state)
{
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA WL("    optimizer: adam8bit\n"
	             "    gradientCheckpointing: true\n"));
	place(&f, shipped, &d);
	assert_int_equal(d.floor, 87 * GIB);
	assert_int_equal(d.floor, INT64_C(93415538688));
	expect_placement(&d.placement, "B200", 1, 0);
	near(d.placement.cost_per_ref_hour, 5.50 / 2.274);
	assert_int_equal(d.nalt, 2);
	expect_placement(&d.alt[0], "RTX-PRO-6000", 1, 0);
	expect_placement(&d.alt[1], "H200", 1, 0);
	assert_int_equal(d.work.optimizer, MF_ADAM8BIT);
	assert_int_equal(d.nwarn, 0);
	job_free(&f);
}

/*
 * QLoRA fits every card; the cheapest to finish is RTX-A4000 at
 * 0.173 / 0.0775 = 2.232 per reference hour (next: B200 2.419).  With
 * referenceHours 12: 12 / 0.0775 = 154.84 h, x $0.173 = $26.79.
 */
static void
test_model_qlora_cheapest(void **state)
{
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA WL("    method: qlora\n"
	             "    gradientCheckpointing: true\n") HOURS(12));
	place(&f, shipped, &d);
	expect_placement(&d.placement, "RTX-A4000", 1, 0);
	near(d.placement.hours, 12 / 0.0775);
	near(d.placement.cost, 12 / 0.0775 * 0.173);
	expect_placement(&d.alt[0], "B200", 1, 0);
	assert_int_equal(d.nalt, MF_MAX_ALTERNATIVES);
	/* minMemory: ceil(7,861,307,392 / 0.9 / 2^30) = ceil(8.13) = 9Gi. */
	assert_int_equal(d.floor, 9 * GIB);
	job_free(&f);
}

/*
 * Inference places weights + KV cache: 2 x 32 x 8 x 128 x 2 = 131,072
 * bytes per token (0.13 MB), x 32 x 8,192 = 34,359,738,368 (34.4 GB);
 * + weights 16,060,522,496 = 50,420,260,864.  The smallest card holding it
 * is the H100 (81559Mi, 76,968,728,985 usable; the RTX A6000's 49140Mi
 * holds 46,374,322,176, the A100 80GB's 81920Mi is larger).  The cheapest
 * to finish is B200 (2.419 per reference hour).  minMemory =
 * ceil(50,420,260,864 / 0.9 / 2^30) = ceil(52.17) = 53Gi.
 */
static void
test_model_inference(void **state)
{
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA "  workload:\n    kind: inference\n"
	          "    concurrency: 32\n    contextLength: 8192\n");
	place(&f, shipped, &d);
	assert_true(d.admitted);
	assert_int_equal(d.need, INT64_C(50420260864));
	assert_int_equal(d.est.bucket[MF_B_KVCACHE], INT64_C(34359738368));
	assert_int_equal(d.est.bucket[MF_B_WEIGHTS], INT64_C(16060522496));
	assert_int_equal(d.est.bucket[MF_B_GRADIENTS], 0);
	assert_int_equal(d.est.bucket[MF_B_ACTIVATIONS], 0);
	assert_string_equal(mf_smallest_fit(shipped, &f.job, d.need,
	                        shipped->headroom)
	                        ->name,
	    "H100");
	expect_placement(&d.placement, "B200", 1, 0);
	assert_int_equal(d.floor, 53 * GIB);
	job_free(&f);
}

/*
 * A vllm job is sized on each card as vLLM sizes it there (design 19):
 * the profile run at the card's defaults of maxNumBatchedTokens and
 * maxNumSeqs (vllm/engine/arg_utils.py: 2048 tokens and 256 sequences
 * below 70 GiB, 8192 and 1024 from it), the card's memory outside
 * PyTorch (164Mi by default at TP 1), and a budget that is a share of
 * the memory CUDA reports (vllm.cudaMemory) where the card says it.
 * Llama 3.1 8B, one sequence of 1,024 tokens:
 *   weights 2P = 16,060,522,496; KV 131,072 x 1,024 = 134,217,728;
 *   graphs 369Mi = 386,924,544; outside PyTorch 164Mi = 171,966,464;
 *   together 16,753,631,232.
 * - SMALL (48G): t 2048 in 256 sequences: the logits, 2048 x 2h +
 *   256 x (4h + 14V + 48) = 16,777,216 + 256 x 1,812,016 = 480,653,312,
 *   above the layers' 2048 x 119,296 = 244,318,208 (test_forward.c):
 *   need 17,234,284,544.  43.2e9 usable: (43,200,000,000 -
 *   17,100,066,816) / 134,217,728 = 194.5 -> 194 sequences.
 * - BIG (80Gi, cudaMemory 81121Mi): t 8192 in 1024 sequences: 67,108,864
 *   + 1024 x 1,812,016 = 1,922,613,248: need 18,676,244,480.  Usable
 *   81121Mi x 0.9 = 76,554,171,187: (76,554,171,187 - 18,542,026,752) /
 *   134,217,728 = 432.2 -> 432 sequences.
 */
static void
test_place_vllm_card_defaults(void **state)
{
	struct mf_catalog *cat =
	    cat_parse(CAT_HDR GPU("SMALL", "48G", "0.50", "0.5") GPU("BIG",
	        "80Gi", "2.00", "1.0") "    vllm:\n"
	                               "      cudaMemory: 81121Mi\n");
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA "  workload:\n    kind: inference\n    server: vllm\n"
	          "    concurrency: 1\n    contextLength: 1024\n");
	place(&f, cat, &d);
	assert_true(d.admitted);
	assert_string_equal(d.placement.gpu->name, "SMALL");
	assert_int_equal(d.placement.need, INT64_C(17234284544));
	assert_int_equal(d.placement.max_seqs, 194);
	assert_int_equal(d.est.bucket[MF_B_ACTIVATIONS], INT64_C(480653312));
	assert_int_equal(d.est.bucket[MF_B_NONTORCH], INT64_C(171966464));
	assert_int_equal(d.need, INT64_C(17234284544));
	assert_int_equal(d.nalt, 1);
	assert_string_equal(d.alt[0].gpu->name, "BIG");
	assert_int_equal(d.alt[0].need, INT64_C(18676244480));
	assert_int_equal(d.alt[0].max_seqs, 432);
	job_free(&f);
	/* maxNumSeqs and maxNumBatchedTokens given: every card alike. */
	job_load(&f,
	    LLAMA "  workload:\n    kind: inference\n    server: vllm\n"
	          "    concurrency: 1\n    contextLength: 1024\n"
	          "    maxNumSeqs: 256\n    maxNumBatchedTokens: 2048\n");
	place(&f, cat, &d);
	assert_int_equal(d.placement.need, INT64_C(17234284544));
	assert_int_equal(d.alt[0].need, INT64_C(17234284544));
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * vLLM refuses to start with fewer batched tokens than sequences, and an
 * unset maxNumBatchedTokens is the card's default whatever maxNumSeqs is
 * (vllm/engine/arg_utils.py: 2048 tokens below 70 GiB, 8192 from it;
 * vllm/config/scheduler.py's check).  maxNumSeqs 4096 alone: SMALL
 * (48G, 2048 tokens) is passed over, said in a warning, and BIG (80Gi,
 * 8192) places it, though SMALL costs less; 2048 sequences start on
 * SMALL.  On a catalogue of SMALL alone, 4096 is rejected.
 */
static void
test_place_vllm_seqs_over_default_tokens(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_HDR GPU("SMALL", "48G", "0.50",
	    "0.5") GPU("BIG", "80Gi", "2.00", "1.0"));
	struct mf_decision d;
	struct fx f;

#define SEQS(n) \
	LLAMA "  workload:\n    kind: inference\n    server: vllm\n" \
	      "    concurrency: 1\n    contextLength: 1024\n" \
	      "    maxNumSeqs: " n "\n"
	(void)state;
	job_load(&f, SEQS("4096"));
	place(&f, cat, &d);
	assert_true(d.admitted);
	assert_string_equal(d.placement.gpu->name, "BIG");
	assert_int_equal(d.nalt, 0);
	assert_int_equal(d.nwarn, 1);
	assert_string_equal(d.warnings[0],
	    "maxNumSeqs 4096: not considered 1 card where vLLM's default maxNumBatchedTokens is fewer, which vLLM refuses");
	/* The estimate's smallest fit passes it over too, though it holds
	 * the need. */
	assert_true(mf_cat_usable_at(&cat->gpus[0],
	                mf_headroom(cat, &f.job.work)) >= d.need);
	assert_string_equal(mf_smallest_fit(cat, &f.job, d.need,
	                        mf_headroom(cat, &f.job.work))
	                        ->name,
	    "BIG");
	job_free(&f);
	job_load(&f, SEQS("2048"));
	place(&f, cat, &d);
	assert_string_equal(d.placement.gpu->name, "SMALL");
	assert_int_equal(d.nwarn, 0);
	assert_string_equal(mf_smallest_fit(cat, &f.job, d.need,
	                        mf_headroom(cat, &f.job.work))
	                        ->name,
	    "SMALL");
	job_free(&f);
	mf_cat_unref(cat);
	cat = cat_parse(CAT_HDR GPU("SMALL", "48G", "0.50", "0.5"));
	job_load(&f, SEQS("4096"));
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_string_equal(d.reason,
	    "maxNumSeqs 4096 is more than vLLM's default maxNumBatchedTokens on every card in the catalogue, and vLLM refuses to start with fewer tokens a step than sequences: give maxNumBatchedTokens, at least 4096");
#undef SEQS
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * An inference job has no training fix but its own (design 14), in order:
 * kvfp8, int8, int4, tensor, context, concurrency.  Llama 3.1 8B, 32
 * sequences of 8,192 tokens on one L40S (48G, 43.2e9 usable):
 *   weights 2P = 16,060,522,496; KV 2 x 32 x 8 x 128 x 2 = 131,072 a
 *   token x 32 x 8192 = 34,359,738,368; need 50,420,260,864.
 *   Linear weights Plin = 32 x (2 x 4096 x (4096 + 1024) + 3 x 4096 x
 *   14336) = 6,979,321,856; the rest P - Plin = 1,050,939,392.
 * - kvfp8: KV 17,179,869,184 + 16,060,522,496 = 33,240,391,680: fits.
 * - int8: 6,979,321,856 + 2 x 1,050,939,392 = 9,081,200,640, and an
 *   fp32 scale an output row, 1,376,256 rows x 4 = 5,505,024: + KV =
 *   43,446,444,032 > 43.2e9: fits nowhere.
 * - int4: Plin / 2 = 3,489,660,928 + Plin / 128 x 2 = 109,051,904 +
 *   2,101,878,784 = 5,700,591,616 + KV = 40,060,329,984: fits.
 * - tensor over 2 (32 heads and 8 KV heads both divide): a GPU holds 16
 *   heads, 4 KV heads and I / 2 = 7168: per layer 2 x 4096 x 2048 + 2 x
 *   4096 x 512 + 3 x 4096 x 7168 + 2 x 4096 = 109,060,096, x 32 =
 *   3,489,923,072, + embeddings, head and final norm 1,050,677,248 =
 *   4,540,600,320 parameters, 9,081,200,640 bytes; KV 65,536 a token x
 *   32 x 8192 = 17,179,869,184; the all-reduce's output, one prefill of
 *   8192 tokens x 4096 x 2 = 67,108,864: 26,328,178,688 a GPU.
 * - context: 43.2e9 - 16,060,522,496 = 27,139,477,504 for KV, / (32 x
 *   131,072) = 6470 tokens: need 16,060,522,496 + 6470 x 4,194,304 =
 *   43,197,669,376.
 * - concurrency: 27,139,477,504 / (131,072 x 8192) = 25 sequences: need
 *   16,060,522,496 + 25 x 1,073,741,824 = 42,904,068,096.
 */
static void
test_model_inference_rejected(void **state)
{
	struct mf_catalog *cat =
	    cat_parse(CAT_HDR GPU("L40S", "48G", "1.00", "0.5"));
	static const struct {
		enum mf_fix fix;
		int64_t need, gpus, amount;
		int placed;
	} want[] = {
		{ MF_FIX_KVFP8, INT64_C(33240391680), 1, 0, 1 },
		{ MF_FIX_INT8, INT64_C(43446444032), 1, 0, 0 },
		{ MF_FIX_INT4, INT64_C(40060329984), 1, 0, 1 },
		{ MF_FIX_TENSOR, INT64_C(26328178688), 2, 2, 1 },
		{ MF_FIX_CONTEXT, INT64_C(43197669376), 1, 6470, 1 },
		{ MF_FIX_CONCURRENCY, INT64_C(42904068096), 1, 25, 1 },
	};
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA "  workload:\n    kind: inference\n"
	          "    concurrency: 32\n    contextLength: 8192\n" FIXES(
	              "checkpointing, adam8bit, lora, qlora, fsdp"));
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.need, INT64_C(50420260864));
	assert_int_equal(d.nfixes, NELEM(want));
	for (size_t i = 0; i < NELEM(want); i++) {
		assert_int_equal(d.fixes[i].fix, want[i].fix);
		assert_int_equal(d.fixes[i].fixes, MF_FIXBIT(want[i].fix));
		assert_int_equal(d.fixes[i].need, want[i].need);
		assert_int_equal(d.fixes[i].gpus, want[i].gpus);
		assert_int_equal(d.fixes[i].amount, want[i].amount);
		assert_int_equal(d.fixes[i].placed, want[i].placed);
	}
	/* kvfp8 is the first that fits and changes nothing served. */
	assert_int_equal(d.suggested, 0);
	assert_non_null(strstr(d.reason, "kvCache"));
	job_free(&f);
	/*
	 * fp32: weights 4P = 32,121,044,992 + KV 34,359,738,368 =
	 * 66,480,783,360; autocast brings it back to 50,420,260,864, still
	 * more than 43.2 usable; every inference fix comes on top of it.
	 */
	job_load(&f,
	    LLAMA "  workload:\n    kind: inference\n"
	          "    precision: fp32\n    concurrency: 32\n"
	          "    contextLength: 8192\n");
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.need, INT64_C(66480783360));
	assert_int_equal(d.nfixes, 1 + NELEM(want));
	assert_int_equal(d.fixes[0].fix, MF_FIX_AUTOCAST);
	assert_int_equal(d.fixes[0].need, INT64_C(50420260864));
	assert_false(d.fixes[0].placed);
	assert_int_equal(d.fixes[1].fixes,
	    MF_FIXBIT(MF_FIX_AUTOCAST) | MF_FIXBIT(MF_FIX_KVFP8));
	assert_int_equal(d.fixes[1].need, want[0].need);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * The context fix is not offered below a request's promptTokens and
 * outputTokens: the same job as above with requests of 7000 + 1000 tokens
 * would be offered 6470, a manifest the reader refuses.  The others stay.
 */
static void
test_model_inference_context_fix_holds_request(void **state)
{
	struct mf_catalog *cat =
	    cat_parse(CAT_HDR GPU("L40S", "48G", "1.00", "0.5"));
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA "  workload:\n    kind: inference\n"
	          "    concurrency: 32\n    contextLength: 8192\n"
	          "    promptTokens: 7000\n    outputTokens: 1000\n" FIXES(
	              "checkpointing, adam8bit, lora, qlora, fsdp"));
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.nfixes, 5);
	for (size_t i = 0; i < d.nfixes; i++)
		assert_int_not_equal(d.fixes[i].fix, MF_FIX_CONTEXT);
	assert_int_equal(d.fixes[4].fix, MF_FIX_CONCURRENCY);
	job_free(&f);
	/* A request of 6000 tokens: 6470 holds it. */
	job_load(&f,
	    LLAMA "  workload:\n    kind: inference\n"
	          "    concurrency: 32\n    contextLength: 8192\n"
	          "    promptTokens: 5000\n    outputTokens: 1000\n" FIXES(
	              "checkpointing, adam8bit, lora, qlora, fsdp"));
	place(&f, cat, &d);
	assert_int_equal(d.nfixes, 6);
	assert_int_equal(d.fixes[4].fix, MF_FIX_CONTEXT);
	assert_int_equal(d.fixes[4].amount, 6470);
	job_free(&f);
	mf_cat_unref(cat);
}

/* --- the key case: full fine-tune on 80 GB cards --- */

/*
 * The largest card holds 80 GB (72 usable).  Cost per reference hour =
 * price / throughput per GPU:
 *   H100       80G $3.00 1.0  -> 3.00
 *   A100-80GB  80G $1.50 0.4  -> 3.75
 *   L40S       48G $1.00 0.5  -> 2.00
 *   RTX-3090   24G $0.25 0.1  -> 2.50
 */
#define CAT_80 \
	CAT_HDR GPU("H100", "80G", "3.00", "1.0") \
	    GPU("A100-80GB", "80G", "1.50", "0.4") \
	        GPU("L40S", "48G", "1.00", "0.5") \
	            GPU("RTX-3090", "24G", "0.25", "0.1")

static void
expect_fix(const struct mf_fix_option *e, enum mf_fix fix, unsigned fixes,
    int64_t gpus, int64_t need, int64_t floor_gib)
{
	if (e->fix != fix || e->fixes != fixes)
		fail_msg("entry %s fixes %#x, want %s fixes %#x",
		    mf_fix_name(e->fix), e->fixes, mf_fix_name(fix), fixes);
	assert_int_equal(e->gpus, gpus);
	assert_int_equal(e->need, need);
	assert_int_equal(e->min_memory, floor_gib * GIB);
}

/*
 * Llama 3.1 8B, AdamW, no checkpointing, s 4096, referenceHours 10: 148.8
 * GB, rejected.  The fixes, in design 7's order: checkpointing is the one
 * cumulative fix that applies (attention sdpa, b 1, bf16); then the four
 * alternatives, each on top of it:
 *
 *   checkpointing  131,659,268,096  ceil(136.24) = 137Gi  none (> 72)
 *   adam8bit        83,477,700,608  ceil(86.38)  =  87Gi  none (> 72)
 *   lora            19,906,699,264  ceil(20.60)  =  21Gi  L40S x1
 *   qlora            7,861,307,392  ceil(8.13)   =   9Gi  L40S x1
 *   fsdp over N: 128,484,179,968 / N + 1,073,741,824 + 2,101,346,304 +
 *        872,448,000; N=2: 64,242,089,984 + 4,047,536,128 =
 *        68,289,626,112 <= 72e9, so N=2; ceil(70.67) = 71Gi
 *
 * lora/qlora: with checkpointing (x1.35) the cost per reference hour is
 * 1.35 x 2.00 = 2.70 on L40S (RTX-3090 3.375, H100 4.05, A100 5.06): 10 x
 * 1.35 / 0.5 = 27 h, $27.
 * fsdp x2 (68.3 GB fits only the 80G cards): H100 hours 10 x 1.35 /
 * (1.0 x 2 x 0.9) = 7.5, x $6.00/h = $45; A100 13.5 / 0.72 = 18.75 h x
 * $3.00 = $56.25.  H100 x2.
 *
 * suggested: checkpointing and adam8bit place nothing, lora and qlora are
 * modelling decisions: fsdp (index 4).
 */
static void
test_key_case_rejected(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_80);
	unsigned ck = BIT(CHECKPOINTING);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, LLAMA WL("") HOURS(10));
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_true(d.from_model);
	assert_int_equal(d.need, NEED_FULL);
	assert_int_equal(d.limit, MF_LIMIT_NONE);
	/* ceil(148,839,137,280 / 0.9 / 2^30) = ceil(154.02) = 155Gi. */
	assert_int_equal(d.floor, 155 * GIB);
	/* The biggest bucket is the optimizer (96.4 GB); the largest card
	 * is an 80G one. */
	assert_non_null(strstr(d.reason, "optimizer"));
	assert_non_null(strstr(d.reason, "148.8"));
	assert_non_null(strstr(d.reason, "72.0"));
	assert_int_equal(d.nfixes, 5);
	expect_fix(&d.fixes[0], MF_FIX_CHECKPOINTING, ck, 1, NEED_CKPT, 137);
	assert_false(d.fixes[0].placed);
	expect_fix(&d.fixes[1], MF_FIX_ADAM8BIT, ck | BIT(ADAM8BIT), 1,
	    NEED_8BIT, 87);
	assert_false(d.fixes[1].placed);
	expect_fix(&d.fixes[2], MF_FIX_LORA, ck | BIT(LORA), 1, NEED_LORA, 21);
	assert_true(d.fixes[2].placed);
	expect_placement(&d.fixes[2].placement, "L40S", 1, ck | BIT(LORA));
	near(d.fixes[2].placement.hours, 27);
	near(d.fixes[2].placement.cost, 27);
	expect_fix(&d.fixes[3], MF_FIX_QLORA, ck | BIT(QLORA), 1, NEED_QLORA,
	    9);
	assert_true(d.fixes[3].placed);
	expect_placement(&d.fixes[3].placement, "L40S", 1, ck | BIT(QLORA));
	expect_fix(&d.fixes[4], MF_FIX_FSDP, ck | BIT(FSDP), 2,
	    INT64_C(68289626112), 71);
	assert_true(d.fixes[4].placed);
	expect_placement(&d.fixes[4].placement, "H100", 2, ck | BIT(FSDP));
	assert_int_equal(d.fixes[4].placement.need, INT64_C(68289626112));
	near(d.fixes[4].placement.hours, 7.5);
	near(d.fixes[4].placement.hourly_price, 6.0);
	near(d.fixes[4].placement.cost, 45);
	assert_int_equal(d.suggested, 4);
	assert_int_equal(d.nwarn, 0);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * The same job with allowedFixes [checkpointing, adam8bit, fsdp] is
 * admitted.  Cost per reference hour = time factor x (price / throughput)
 * / 0.9^log2(N); per GPU, weights+gradients+optimizer W/N plus the rest:
 *   AdamW     W = 128,484,179,968; rest 21,227,405,312 (sdpa activations
 *             18,253,611,008 + logits + sharding), with ckpt 4,047,536,128
 *   8-bit     W =  80,302,612,480; same rests
 * The cheapest on each card:
 *   L40S (43.2 usable): adam8bit+fsdp N=4: 20,075,653,120 +
 *     21,227,405,312 = 41,303,058,432 fits (N=3: 47,994,942,806 does
 *     not): 2.00 / 0.81 = 2.469.  (fsdp alone needs N=6: 2.00 / 0.9^2.585
 *     = 2.626; ckpt+adam8bit+fsdp N=3: 1.35 x 2.00 / 0.846 = 3.19.)
 *   H100: adam8bit+fsdp N=2 (61,378,711,552): 3.00 / 0.9 = 3.333
 *   A100: the same, 3.75 / 0.9 = 4.167
 *   RTX-3090 (21.6 usable): ckpt+adam8bit+fsdp N=5 (20,108,058,626):
 *     1.35 x 2.50 / 0.9^2.3219 = 4.310
 * Placement L40S x4 with adam8bit and fsdp; checkpointing's 1.35 keeps it
 * out.  hours = 10 / (0.5 x 4 x 0.81) = 6.1728, hourly $4.00, cost
 * $24.69; spare (48e9 - 41,303,058,432) / 48e9 = 0.1395; minMemory
 * ceil(41,303,058,432 / 0.9 / 2^30) = ceil(42.74) = 43Gi.
 */
static void
test_key_case_admitted(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_80);
	unsigned a8f = BIT(ADAM8BIT) | BIT(FSDP);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA WL("") HOURS(10) FIXES("checkpointing, adam8bit, fsdp"));
	place(&f, cat, &d);
	assert_true(d.admitted);
	expect_placement(&d.placement, "L40S", 4, a8f);
	assert_int_equal(d.need, INT64_C(41303058432));
	assert_int_equal(d.placement.need, INT64_C(41303058432));
	near(d.placement.hours, 10 / 1.62);
	near(d.placement.hourly_price, 4.0);
	near(d.placement.cost, 10 / 1.62 * 4);
	near(d.placement.cost_per_ref_hour, 2.0 / 0.81);
	near(d.placement.spare, 0.139519616);
	assert_int_equal(d.floor, 43 * GIB);
	assert_int_equal(d.work.optimizer, MF_ADAM8BIT);
	assert_int_equal(d.work.shard_gpus, 4);
	assert_int_equal(d.work.checkpointing, 0);
	assert_int_equal(d.nalt, 3);
	expect_placement(&d.alt[0], "H100", 2, a8f);
	assert_int_equal(d.alt[0].need, INT64_C(61378711552));
	near(d.alt[0].cost_per_ref_hour, 3.0 / 0.9);
	expect_placement(&d.alt[1], "A100-80GB", 2, a8f);
	near(d.alt[1].cost_per_ref_hour, 3.75 / 0.9);
	expect_placement(&d.alt[2], "RTX-3090", 5, BIT(CHECKPOINTING) | a8f);
	assert_int_equal(d.alt[2].need, INT64_C(20108058626));
	near(d.alt[2].cost_per_ref_hour, 4.310417925);
	assert_int_equal(d.nwarn, 0);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * Without 8-bit Adam the time factor decides: on L40S, ckpt+fsdp fits at
 * N=4 (32,121,044,992 + 4,047,536,128 = 36,168,581,120) but costs 1.35 x
 * 2.00 / 0.81 = 3.333; fsdp alone needs N=6 (21,414,029,996 +
 * 21,227,405,312 = 42,641,435,308 <= 43.2e9) and costs 2.00 / 0.9^log2(6)
 * = 2.00 / 0.761590 = 2.626.  H100 fsdp N=3 is 3.00 / 0.846 = 3.545.
 * hours = 10 / (0.5 x 6 x 0.761590) = 4.37683, cost x $6.00 = $26.261.
 */
static void
test_key_case_time_factor(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_80);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, LLAMA WL("") HOURS(10) FIXES("checkpointing, fsdp"));
	place(&f, cat, &d);
	expect_placement(&d.placement, "L40S", 6, BIT(FSDP));
	assert_int_equal(d.need, INT64_C(42641435308));
	near(d.placement.cost_per_ref_hour, 2.626100805);
	near(d.placement.hours, 4.376834676);
	near(d.placement.cost, 26.261008054);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * An explicit count pins FSDP to it: count 2 with [checkpointing, fsdp]:
 * fsdp alone at 2 needs 85,469,495,296 (> 72e9), ckpt+fsdp 68,289,626,112
 * fits the 80G cards: H100 x2 at 1.35 x 3.00 / 0.9 = 4.5, 7.5 h, $45.
 */
static void
test_count_pins_fsdp(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_80);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA "  resources:\n    gpu:\n      count: 2\n" WL("") HOURS(10)
	        FIXES("checkpointing, fsdp"));
	place(&f, cat, &d);
	expect_placement(&d.placement, "H100", 2,
	    BIT(CHECKPOINTING) | BIT(FSDP));
	near(d.placement.hours, 7.5);
	near(d.placement.cost, 45);
	assert_int_equal(d.nalt, 1);
	expect_placement(&d.alt[0], "A100-80GB", 2,
	    BIT(CHECKPOINTING) | BIT(FSDP));
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * Count > 1 only when asked: with [checkpointing, adam8bit] and no count,
 * 83.5 GB fits no 80G card and no multi-GPU placement is tried; every fix
 * entry runs on one GPU except fsdp.
 */
static void
test_count_only_when_asked(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_80);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, LLAMA WL("") FIXES("checkpointing, adam8bit"));
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.nfixes, 5);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(d.fixes[i].gpus, 1);
	assert_int_equal(d.fixes[4].fix, MF_FIX_FSDP);
	assert_int_equal(d.fixes[4].gpus, 2);
	job_free(&f);
	/* A floor alone: one GPU. */
	job_load(&f, FLOOR("10Gi"));
	place(&f, cat, &d);
	assert_int_equal(d.placement.count, 1);
	for (size_t i = 0; i < d.nalt; i++)
		assert_int_equal(d.alt[i].count, 1);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * Every cumulative fix in order, each entry including those before it.
 * Llama 8B fp32, eager, micro-batch 8 (design 5 formulas):
 *   as written: 4P + 4P + 8P + L*s*8*(34h + 5*a*s)*2 + s*8*V*4 =
 *     32,121,044,992 x 2 + 64,242,089,984 + 1,666,447,310,848 +
 *     16,810,770,432 = 1,811,742,261,248
 *   + sdpa: activations 4,294,967,296 x 34 x 2 = 292,057,776,128 ->
 *     437,352,726,528 (ceil(452.6) = 453Gi)
 *   + microbatch (b 1): activations 36,507,222,016, logits 2,101,346,304
 *     -> 167,092,748,288 (173Gi)
 *   + autocast (bf16): 148,839,137,280 (155Gi)
 *   + checkpointing: 131,659,268,096 (137Gi)
 *   then adam8bit, lora, qlora, fsdp on top of all four, as in the key case.
 */
static void
test_fixes_cumulative(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_80);
	unsigned c1 = BIT(SDPA), c2 = c1 | BIT(MICROBATCH),
	         c3 = c2 | BIT(AUTOCAST), c4 = c3 | BIT(CHECKPOINTING);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA WL("    precision: fp32\n    attention: eager\n"
	             "    microBatch: 8\n"));
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.need, INT64_C(1811742261248));
	assert_int_equal(d.nfixes, 8);
	expect_fix(&d.fixes[0], MF_FIX_SDPA, c1, 1, INT64_C(437352726528), 453);
	expect_fix(&d.fixes[1], MF_FIX_MICROBATCH, c2, 1, INT64_C(167092748288),
	    173);
	expect_fix(&d.fixes[2], MF_FIX_AUTOCAST, c3, 1, NEED_FULL, 155);
	expect_fix(&d.fixes[3], MF_FIX_CHECKPOINTING, c4, 1, NEED_CKPT, 137);
	expect_fix(&d.fixes[4], MF_FIX_ADAM8BIT, c4 | BIT(ADAM8BIT), 1,
	    NEED_8BIT, 87);
	expect_fix(&d.fixes[5], MF_FIX_LORA, c4 | BIT(LORA), 1, NEED_LORA, 21);
	expect_fix(&d.fixes[6], MF_FIX_QLORA, c4 | BIT(QLORA), 1, NEED_QLORA,
	    9);
	expect_fix(&d.fixes[7], MF_FIX_FSDP, c4 | BIT(FSDP), 2,
	    INT64_C(68289626112), 71);
	for (size_t i = 0; i < 5; i++)
		assert_false(d.fixes[i].placed);
	assert_int_equal(d.suggested, 7);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * Only fixes that change something are listed, and the suggestion falls
 * back to a modelling decision when nothing else fits.  Llama 8B with
 * checkpointing already on, on one 16G card (14.4 usable):
 *   adam8bit 83,477,700,608 (87Gi), lora 19,906,699,264 (21Gi): none
 *   qlora 7,861,307,392 (9Gi): placed
 *   fsdp: 128,484,179,968 / N + 4,047,536,128 <= 14.4e9 needs N >= 12.4,
 *     more than maxCount 8: the entry gives N = 8, 16,060,522,496 +
 *     4,047,536,128 = 20,108,058,624 (ceil(20.81) = 21Gi), unplaced.
 * The lora entry holds no fsdp and the fsdp entry no lora.
 */
static void
test_fixes_applicable_only(void **state)
{
	struct mf_catalog *cat =
	    cat_parse(CAT_HDR GPU("small16", "16G", "0.20", "0.1"));
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, LLAMA WL("    gradientCheckpointing: true\n"));
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.nfixes, 4);
	expect_fix(&d.fixes[0], MF_FIX_ADAM8BIT, BIT(ADAM8BIT), 1, NEED_8BIT,
	    87);
	expect_fix(&d.fixes[1], MF_FIX_LORA, BIT(LORA), 1, NEED_LORA, 21);
	expect_fix(&d.fixes[2], MF_FIX_QLORA, BIT(QLORA), 1, NEED_QLORA, 9);
	expect_fix(&d.fixes[3], MF_FIX_FSDP, BIT(FSDP), 8, INT64_C(20108058624),
	    21);
	assert_false(d.fixes[0].placed);
	assert_false(d.fixes[1].placed);
	assert_true(d.fixes[2].placed);
	expect_placement(&d.fixes[2].placement, "small16", 1, BIT(QLORA));
	assert_false(d.fixes[3].placed);
	assert_int_equal(d.suggested, 2);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * With the optimizer in backward only the fixes that keep it as it is
 * modelled are listed: sdpa, checkpointing and adam8bit (bitsandbytes'
 * AdamW8bit a weight), not microbatch (gradient accumulation, which
 * torchtune refuses with optimizer_in_bwd), autocast, lora, qlora nor
 * fsdp.  Llama 8B, bf16-true, b 2, eager, under the estimator pytorch:
 *   sdpa: weights 2P 16,060,522,496, gradients 2 x V x h 1,050,673,152,
 *     moments 4P 32,121,044,992, activations 4096 x 2 x 32 x 200,840 +
 *     4096 x 4d = 52,651,098,112, logits 4096 x 2 x (8h + 4V + 20) =
 *     4,471,291,904, transient 8 x 4096 x 2 x V = 8,405,385,216:
 *     114,760,015,872 (ceil(118.8) = 119Gi), too much for 72G usable;
 *   + checkpointing: activations 4096 x 2 x (32 x 2h + 200,840) + 4096 x
 *     (4d + 8) = 3,794,894,848: 65,903,812,608 (69Gi), on the H100;
 *   + adam8bit: the moments 32,121,044,992 become 2P + P / 256 x 8 +
 *     291 x 2048 = 16,312,064,128 (test_estimate.c,
 *     test_torch_8bit_state): 50,094,831,744 (ceil(51.8) = 52Gi).
 * Admitted, such a job is not told to accumulate micro-batches.
 */
static void
test_fixes_optimizer_in_backward(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_80);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA WL("    precision: bf16-true\n    attention: eager\n"
	             "    microBatch: 2\n    optimizerInBackward: true\n"));
	f.job.work.estimator = MF_EST_PYTORCH;
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.nfixes, 3);
	expect_fix(&d.fixes[0], MF_FIX_SDPA, BIT(SDPA), 1,
	    INT64_C(114760015872), 119);
	expect_fix(&d.fixes[1], MF_FIX_CHECKPOINTING,
	    BIT(SDPA) | BIT(CHECKPOINTING), 1, INT64_C(65903812608), 69);
	expect_fix(&d.fixes[2], MF_FIX_ADAM8BIT,
	    BIT(SDPA) | BIT(CHECKPOINTING) | BIT(ADAM8BIT), 1,
	    INT64_C(50094831744), 52);
	assert_true(d.fixes[1].placed);
	expect_placement(&d.fixes[1].placement, "H100", 1,
	    BIT(SDPA) | BIT(CHECKPOINTING));
	job_free(&f);
	job_load(&f,
	    LLAMA WL("    precision: bf16-true\n    microBatch: 2\n"
	             "    gradientCheckpointing: true\n"
	             "    optimizerInBackward: true\n"));
	f.job.work.estimator = MF_EST_PYTORCH;
	place(&f, cat, &d);
	assert_true(d.admitted);
	assert_int_equal(d.need, INT64_C(65903812608));
	assert_false(has_warning(&d, "microBatch"));
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * lora and qlora never together, fsdp never with either.  On small16
 * with [lora, qlora, fsdp] and checkpointing on, only qlora fits: the
 * placement holds qlora alone.
 */
static void
test_fix_sets_exclusive(void **state)
{
	struct mf_catalog *cat =
	    cat_parse(CAT_HDR GPU("small16", "16G", "0.20", "0.1"));
	struct mf_catalog *c24 =
	    cat_parse(CAT_HDR GPU("small24", "24G", "0.20", "0.1"));
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA WL("    gradientCheckpointing: true\n")
	        FIXES("lora, qlora, fsdp"));
	place(&f, cat, &d);
	assert_true(d.admitted);
	expect_placement(&d.placement, "small16", 1, BIT(QLORA));
	assert_int_equal(d.work.method, MF_QLORA);
	assert_int_equal(d.work.shard_gpus, 1);
	/*
	 * On 24G (21.6 usable) lora fits at 19,906,699,264 on one GPU,
	 * and fsdp at N=8 (20,108,058,624) on eight, which costs more (0.2 /
	 * 0.1 / 0.729 = 2.74 per reference hour against 2.0).  qlora costs
	 * the same and leaves more spare ((24e9 - 7,861,307,392) / 24e9 =
	 * 0.672 against 0.171), but LoRA changes the model less: it keeps
	 * the base weights in 16 bits.
	 */
	place(&f, c24, &d);
	expect_placement(&d.placement, "small24", 1, BIT(LORA));
	job_free(&f);
	job_load(&f,
	    LLAMA WL("    gradientCheckpointing: true\n") FIXES("lora, fsdp"));
	place(&f, c24, &d);
	expect_placement(&d.placement, "small24", 1, BIT(LORA));
	assert_int_equal(d.placement.need, NEED_LORA);
	job_free(&f);
	mf_cat_unref(cat);
	mf_cat_unref(c24);
}

/*
 * fsdp shards a LoRA job too (design 22), never a QLoRA one
 * (mf_est_shard_refused).  LoRA without checkpointing: 16,060,522,496 +
 * 671,088,640 + 18,253,611,008 + 2,101,346,304 = 37,086,568,448 on one
 * GPU.  The fsdp entry takes the post's cumulative fixes before it
 * (checkpointing: the activations 32 x 4096 x 4096 x 2 = 1,073,741,824);
 * over N GPUs the base and the adapters divided, the activations and
 * transient whole, and the post's buffers 4 x 218,112,000:
 * ceil(16,060,522,496 / N) + ceil(671,088,640 / N) + 1,073,741,824 +
 * 2,101,346,304 + 872,448,000.
 */
static void
test_fsdp_lora_not_qlora(void **state)
{
	struct mf_catalog *cat =
	    cat_parse(CAT_HDR GPU("small16", "16G", "0.20", "0.1"));
	struct mf_decision d;
	struct fx f;
	int seen = 0;

	(void)state;
	job_load(&f, LLAMA WL("    method: lora\n") FIXES("fsdp"));
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.need, INT64_C(37086568448));
	for (size_t i = 0; i < d.nfixes; i++) {
		int64_t n = d.fixes[i].gpus;

		if (d.fixes[i].fix != MF_FIX_FSDP)
			continue;
		seen = 1;
		assert_true(n > 1);
		assert_true(d.fixes[i].fixes & MF_FIXBIT(MF_FIX_CHECKPOINTING));
		assert_int_equal(d.fixes[i].need,
		    (INT64_C(16060522496) + n - 1) / n +
		        (INT64_C(671088640) + n - 1) / n + INT64_C(1073741824) +
		        INT64_C(2101346304) + INT64_C(872448000));
	}
	assert_true(seen);
	job_free(&f);
	job_load(&f, LLAMA WL("    method: qlora\n") FIXES("fsdp"));
	place(&f, cat, &d);
	assert_false(d.admitted);
	for (size_t i = 0; i < d.nfixes; i++)
		assert_int_not_equal(d.fixes[i].fix, MF_FIX_FSDP);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * Fix entries respect the limits: with maxHourlyPrice 5, H100 x2 ($6.00/h)
 * is out for fsdp and A100-80GB x2 ($3.00/h) takes it: 10 x 1.35 / (0.4 x
 * 2 x 0.9) = 18.75 h, $56.25.  lora and qlora on L40S ($1.00/h) stay.
 */
static void
test_key_case_limits(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_80);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA WL("") HOURS(10) "  limits:\n    maxHourlyPrice: 5\n");
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.limit, MF_LIMIT_NONE);
	assert_int_equal(d.nfixes, 5);
	assert_true(d.fixes[2].placed);
	expect_placement(&d.fixes[2].placement, "L40S", 1,
	    BIT(CHECKPOINTING) | BIT(LORA));
	assert_true(d.fixes[4].placed);
	expect_placement(&d.fixes[4].placement, "A100-80GB", 2,
	    BIT(CHECKPOINTING) | BIT(FSDP));
	near(d.fixes[4].placement.hours, 18.75);
	near(d.fixes[4].placement.cost, 56.25);
	assert_int_equal(d.suggested, 4);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * Many GPU counts and fix sets must not crowd out the plain option.  Llama
 * 8B fp32, eager, micro-batch 8 needs 1,811,742,261,248 bytes (see
 * test_fixes_cumulative); one 2100G card holds 1,890e9 of it, at 1.00 per
 * reference hour.  With every fix allowed and maxCount 256 (32 nodes of 8)
 * there are 32 fix sets with fsdp, each on 255 counts, but every placement
 * on N >= 2
 * GPUs costs at least 1 / 0.9 = 1.11, checkpointing costs 1.35, and sdpa,
 * microbatch and autocast cost the same 1.00 with more fixes: the job goes
 * on one card as written.
 */
static void
test_many_options(void **state)
{
	struct mf_catalog *cat = cat_parse(
	    CAT_HDR GPU("huge", "2100G", "1", "1") "    maxCount: 256\n"
	                                           "    maxNodes: 32\n");
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA WL("    precision: fp32\n    attention: eager\n"
	             "    microBatch: 8\n")
	        FIXES("sdpa, microbatch, autocast, "
	              "checkpointing, adam8bit, lora, qlora, fsdp"));
	place(&f, cat, &d);
	job_free(&f);
	assert_true(d.admitted);
	/* d borrows the card's name from cat: check before releasing it. */
	if (strcmp(d.placement.gpu->name, "huge") != 0 ||
	    d.placement.count != 1 || d.placement.fixes != 0) {
		fprintf(stderr, "placement x%lld fixes %#x, want x1 fixes 0\n",
		    (long long)d.placement.count, d.placement.fixes);
		mf_cat_unref(cat);
		fail();
	}
	mf_cat_unref(cat);
	assert_int_equal(d.need, INT64_C(1811742261248));
	near(d.placement.cost_per_ref_hour, 1.0);
}

/*
 * A model job whose own floor rules out every card: QLoRA needs 7.9 GB,
 * but minMemory 200Gi = 214,748,364,800 is more than B200's 180G.  The
 * reason blames the floor, not the model's need.
 */
static void
test_floor_excludes_model_job(void **state)
{
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA FLOOR("200Gi") WL("    method: qlora\n"
	                            "    gradientCheckpointing: true\n"));
	place(&f, shipped, &d);
	job_free(&f);
	assert_false(d.admitted);
	assert_int_equal(d.need, NEED_QLORA);
	assert_int_equal(d.floor, 200 * GIB);
	if (strstr(d.reason, "minMemory") == NULL)
		fail_msg("reason does not name the floor: %s", d.reason);
}

/*
 * Figures past 2^63 - 1 are an error naming spec.workload, not a crash:
 * Llama 3.1 70B eager at s = 2^21, b = 4096 has activations of about
 * 80 x 2^21 x 4096 x (34 x 8192 + 5 x 64 x 2^21) = 4.6e20 bytes.
 */
static void
test_overflow(void **state)
{
	struct mf_decision d;
	struct mf_error err;
	struct fx f;

	(void)state;
	memset(&err, 0, sizeof(err));
	/* Llama 3.1 70B's shapes without max_position_embeddings, which
	 * would refuse the sequence first (test_context_limit). */
	job_load(&f,
	    "  model:\n    config: {hidden_size: 8192, num_hidden_layers: 80,"
	    " num_attention_heads: 64, num_key_value_heads: 8,"
	    " intermediate_size: 28672, vocab_size: 128256}\n"
	    "  workload:\n    sequenceLength: 2097152\n    microBatch: 4096\n"
	    "    attention: eager\n");
	assert_int_equal(mf_place(&f.job, shipped, &d, &err), MF_ERANGE);
	assert_string_equal(err.field, "spec.workload");
	job_free(&f);
}

/*
 * A sequence past the model's context limit is refused, naming both
 * numbers and where the field is (design 19): Llama 3.1 8B takes 131,072
 * tokens (max_position_embeddings; rope_scaling llama3 leaves it as it
 * is).  An inference job's contextLength likewise; at the limit it fits.
 */
static void
test_context_limit(void **state)
{
	struct mf_decision d;
	struct mf_error err;
	struct fx f;

	(void)state;
	memset(&err, 0, sizeof(err));
	job_load(&f, LLAMA "  workload:\n    sequenceLength: 131073\n");
	assert_int_equal(mf_place(&f.job, shipped, &d, &err), MF_EINVAL);
	assert_string_equal(err.field, "spec.workload.sequenceLength");
	assert_int_equal(err.line, 9);
	assert_int_equal(err.column, 21);
	assert_string_equal(err.text,
	    "131073 tokens is more than the model's context limit, 131072 (max_position_embeddings)");
	job_free(&f);
	job_load(&f,
	    LLAMA "  workload:\n    kind: inference\n"
	          "    contextLength: 200000\n");
	assert_int_equal(mf_place(&f.job, shipped, &d, &err), MF_EINVAL);
	assert_string_equal(err.field, "spec.workload.contextLength");
	assert_string_equal(err.text,
	    "200000 tokens is more than the model's context limit, 131072 (max_position_embeddings)");
	job_free(&f);
	job_load(&f,
	    LLAMA "  workload:\n    kind: inference\n"
	          "    contextLength: 131072\n");
	place(&f, shipped, &d);
	job_free(&f);
}

/*
 * A chunked loss on a model whose logits are soft-capped (Gemma-2) is
 * refused where the loss is written (design 19: measured with neither
 * transformers' capping nor torchtune's); the standard loss is not.
 */
static void
test_chunked_softcap(void **state)
{
	struct mf_decision d;
	struct mf_error err;
	struct fx f;

	(void)state;
	memset(&err, 0, sizeof(err));
	job_load(&f,
	    "  model:\n    name: google/gemma-2-9b\n" WL(
	        "    loss: chunked\n"));
	assert_int_equal(mf_place(&f.job, shipped, &d, &err), MF_EINVAL);
	assert_string_equal(err.field, "spec.workload.loss");
	assert_int_equal(err.line, 10);
	assert_int_equal(err.column, 11);
	assert_string_equal(err.text,
	    "chunked is not modelled for a model with final logit soft-capping (Gemma-2's final_logit_softcapping): not measured with a chunked or fused loss; use loss: standard");
	job_free(&f);
	job_load(&f, "  model:\n    name: google/gemma-2-9b\n" WL(""));
	place(&f, shipped, &d);
	job_free(&f);
}

/*
 * maxContextLength never passes the limit: one sequence of 1,024 tokens
 * of Llama 3.1 8B on a 180G card leaves room for far more than 131,072.
 */
static void
test_context_capped(void **state)
{
	struct mf_catalog *cat =
	    cat_parse(CAT_HDR GPU("BIG", "180G", "1.00", "1.0"));
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA "  workload:\n    kind: inference\n"
	          "    concurrency: 1\n    contextLength: 1024\n");
	place(&f, cat, &d);
	assert_true(d.admitted);
	assert_int_equal(d.placement.max_context, 131072);
	/* (162e9 - 16,060,522,496) / 131,072 = 1,113,457 tokens fit. */
	assert_true(d.placement.max_seqs > 1000);
	job_free(&f);
	mf_cat_unref(cat);
}

/* --- warnings --- */

/*
 * QLoRA with checkpointing is admitted on the shipped catalogue whatever
 * the attention, precision or micro-batch; each draws its warning.
 */
static void
test_warn_workload(void **state)
{
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA WL(
	        "    method: qlora\n"
	        "    gradientCheckpointing: true\n    attention: eager\n"));
	place(&f, shipped, &d);
	assert_true(d.admitted);
	assert_int_equal(d.nwarn, 1);
	assert_true(has_warning(&d, "eager"));
	job_free(&f);
	job_load(&f,
	    LLAMA WL("    method: qlora\n"
	             "    gradientCheckpointing: true\n    precision: fp32\n"));
	place(&f, shipped, &d);
	assert_true(d.admitted);
	assert_int_equal(d.nwarn, 1);
	assert_true(has_warning(&d, "fp32"));
	job_free(&f);
	job_load(&f,
	    LLAMA WL("    method: qlora\n"
	             "    gradientCheckpointing: true\n    microBatch: 2\n"));
	place(&f, shipped, &d);
	assert_true(d.admitted);
	assert_int_equal(d.nwarn, 1);
	assert_true(has_warning(&d, "microBatch 2"));
	job_free(&f);
	/* flash attention, bf16, b 1: nothing to say. */
	job_load(&f,
	    LLAMA WL(
	        "    method: qlora\n"
	        "    gradientCheckpointing: true\n    attention: flash\n"));
	place(&f, shipped, &d);
	assert_int_equal(d.nwarn, 0);
	job_free(&f);
}

/*
 * FSDP's CPU offload (examples/llama-8b-fsdp-8-offload.yaml): where the
 * catalogue models the step (catalog/gpus.yaml) the answer says what the
 * step leaves out; where the hours are the user's own (design 6's) it
 * says nothing, and neither does the same job without offload.
 */
static void
test_warn_cpu_offload(void **state)
{
	struct mf_catalog *modelled = NULL;
	const char *const offload[] = { "true", "false" };
	struct mf_decision d;
	char job[512];
	struct fx f;

	(void)state;
	assert_int_equal(shipped_data(&modelled, NULL), 0);
	for (size_t i = 0; i < NELEM(offload); i++) {
		snprintf(job, sizeof(job),
		    LLAMA WL("    gradientCheckpointing: true\n"
		             "    sharding: {gpus: 8, cpuOffload: %s}\n")
		        HOURS(10),
		    offload[i]);
		job_load(&f, job);
		place(&f, modelled, &d);
		assert_true(d.admitted);
		assert_true(d.placement.step.seconds > 0);
		assert_int_equal(has_warning(&d, "sharding.cpuOffload"),
		    i == 0);
		place(&f, shipped, &d);
		assert_true(d.admitted);
		assert_false(has_warning(&d, "cpuOffload"));
		job_free(&f);
	}
	mf_cat_unref(modelled);
}

/*
 * Spare under 10%: with headroom 0.05 a 90G card holds 85.5; the 8-bit
 * job (83,477,700,608) leaves (90e9 - 83,477,700,608) / 90e9 = 0.0725.
 */
static void
test_warn_spare(void **state)
{
	struct mf_catalog *cat =
	    cat_parse("apiVersion: memfloor.dev/v1\n"
	              "kind: GpuCatalog\nheadroom: 0.05\ngpus:\n" GPU("tight",
	                  "90G", "1.0", "1.0"));
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA WL("    optimizer: adam8bit\n"
	             "    gradientCheckpointing: true\n"));
	place(&f, cat, &d);
	assert_true(d.admitted);
	near(d.placement.spare, 0.072469993);
	assert_int_equal(d.nwarn, 1);
	assert_true(has_warning(&d, "spare"));
	assert_true(has_warning(&d, "tight"));
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * minMemory 16Gi with a model that needs 83.5 GB: the derived need wins
 * (87Gi) and a warning says so; the placement is one that holds 83.5 GB
 * (B200, as in test_model_8bit_floor), not a 16G card.  A floor above the
 * need stays in effect and draws no warning: 100Gi = 107,374,182,400
 * leaves B200 and H200 (141G); RTX-PRO-6000 (96G) is below it.
 */
static void
test_warn_floor_below_need(void **state)
{
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA FLOOR("16Gi") WL("    optimizer: adam8bit\n"
	                           "    gradientCheckpointing: true\n"));
	place(&f, shipped, &d);
	assert_true(d.admitted);
	assert_true(d.from_model);
	assert_int_equal(d.need, NEED_8BIT);
	assert_int_equal(d.floor, 87 * GIB);
	expect_placement(&d.placement, "B200", 1, 0);
	assert_int_equal(d.nwarn, 1);
	assert_true(has_warning(&d, "16Gi"));
	assert_true(has_warning(&d, "87Gi"));
	job_free(&f);
	job_load(&f,
	    LLAMA FLOOR("100Gi") WL("    optimizer: adam8bit\n"
	                            "    gradientCheckpointing: true\n"));
	place(&f, shipped, &d);
	assert_int_equal(d.floor, 100 * GIB);
	assert_int_equal(d.nwarn, 0);
	expect_placement(&d.placement, "B200", 1, 0);
	assert_int_equal(d.nalt, 1);
	expect_placement(&d.alt[0], "H200", 1, 0);
	job_free(&f);
}

/* Rejected jobs carry no admission warnings. */
static void
test_warn_not_on_rejection(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_80);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, LLAMA WL("    attention: eager\n    microBatch: 4\n"));
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_false(has_warning(&d, "eager"));
	assert_false(has_warning(&d, "microBatch"));
	job_free(&f);
	mf_cat_unref(cat);
}

/* --- helpers --- */

/*
 * mf_floor_for: 83,477,700,608 / 0.9 / 2^30 = 86.38 -> 87Gi; a whole GiB
 * stays (2^30 with no headroom), one byte more rounds up.  A need under
 * 2^63 whose floor after headroom is past it has no floor (-1), not the
 * largest one: 8,845,069,819,555,348,480 / 0.9 > 2^63.
 */
static void
test_floor_for(void **state)
{
	(void)state;
	assert_int_equal(mf_floor_for(NEED_8BIT, 0.10), 87 * GIB);
	assert_int_equal(mf_floor_for(GIB, 0), GIB);
	assert_int_equal(mf_floor_for(GIB + 1, 0), 2 * GIB);
	assert_int_equal(mf_floor_for(NEED_FULL, 0.10), 155 * GIB);
	assert_int_equal(mf_floor_for(INT64_C(8845069819555348480), 0.10), -1);
	assert_int_equal(mf_floor_for(INT64_MAX, 0), -1);
	assert_int_equal(mf_floor_for(-1, 0.10), -1);
}

/* Smallest by memory, then price, then name; NULL when nothing holds it. */
static void
test_smallest_fit(void **state)
{
	struct mf_catalog *cat = cat_parse(
	    CAT_HDR GPU("b", "24G", "0.5", "1") GPU("a", "24G", "0.5", "1")
	        GPU("c", "24G", "0.4", "1") GPU("big", "48G", "0.1", "1"));
	struct fx f;

	(void)state;
	job_load(&f, LLAMA WL(""));
	/* 21.6e9 usable on the 24G cards: c is the cheapest. */
	assert_string_equal(mf_smallest_fit(cat, &f.job, INT64_C(21600000000),
	                        cat->headroom)
	                        ->name,
	    "c");
	assert_string_equal(mf_smallest_fit(cat, &f.job, INT64_C(21600000001),
	                        cat->headroom)
	                        ->name,
	    "big");
	assert_null(
	    mf_smallest_fit(cat, &f.job, INT64_C(43200000001), cat->headroom));
	mf_cat_unref(cat);
	cat = cat_parse(
	    CAT_HDR GPU("b", "24G", "0.5", "1") GPU("a", "24G", "0.5", "1"));
	assert_string_equal(mf_smallest_fit(cat, &f.job, 1, cat->headroom)
	                        ->name,
	    "a");
	mf_cat_unref(cat);
	job_free(&f);
}

static void
test_limit_names(void **state)
{
	(void)state;
	assert_null(mf_limit_name(MF_LIMIT_NONE));
	assert_string_equal(mf_limit_name(MF_LIMIT_HOURLY_PRICE),
	    "limits.maxHourlyPrice");
	assert_string_equal(mf_limit_name(MF_LIMIT_COST), "limits.maxCost");
	assert_string_equal(mf_limit_name(MF_LIMIT_DEADLINE),
	    "limits.deadlineHours");
}

/* --- nodes (design 15) --- */

/*
 * A placement of more GPUs than a node holds spans ceil(count /
 * gpusPerNode) nodes and its speed is also multiplied by
 * interNodeEfficiency^log2(nodes) (default 0.8).  Three cards alike but
 * for their nodes (80G, $2.00/h, throughput 1.0), a 40Gi floor on 4 GPUs,
 * 12 reference hours; 4 GPUs keep 0.9^log2(4) = 0.81 of linear speed-up:
 *   one-node  (8 a node): 1 node,  speed 4 x 0.81 = 3.24,
 *             hours 12 / 3.24 = 3.7037, cost x $8.00/h = $29.63
 *   two-node  (2 a node): 2 nodes, speed 3.24 x 0.8^1 = 2.592,
 *             hours 4.6296, cost $37.04, $3.0864 per reference hour
 *   four-node (1 a node): 4 nodes, speed 3.24 x 0.8^2 = 2.0736,
 *             hours 5.7870, cost $46.30
 */
#define CAT_NODES \
	CAT_HDR GPU("one-node", "80G", "2.00", "1.0") GPU("two-node", "80G", \
	    "2.00", \
	    "1.0") "    gpusPerNode: 2\n    maxNodes: 4\n" GPU("four-node", \
	    "80G", "2.00", "1.0") "    gpusPerNode: 1\n    maxNodes: 4\n"

static void
test_nodes_speed_and_cost(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_NODES);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, FLOOR("40Gi") "      count: 4\n" HOURS(12));
	place(&f, cat, &d);
	expect_placement(&d.placement, "one-node", 4, 0);
	assert_int_equal(d.placement.nodes, 1);
	near(d.placement.hours, 12 / 3.24);
	near(d.placement.cost, 12 / 3.24 * 8);
	assert_int_equal(d.nalt, 2);
	expect_placement(&d.alt[0], "two-node", 4, 0);
	assert_int_equal(d.alt[0].nodes, 2);
	near(d.alt[0].hours, 12 / 2.592);
	near(d.alt[0].cost, 12 / 2.592 * 8);
	near(d.alt[0].cost_per_ref_hour, 8 / 2.592);
	near(d.alt[0].hourly_price, 8);
	expect_placement(&d.alt[1], "four-node", 4, 0);
	assert_int_equal(d.alt[1].nodes, 4);
	near(d.alt[1].hours, 12 / 2.0736);
	near(d.alt[1].cost, 12 / 2.0736 * 8);
	job_free(&f);
	mf_cat_unref(cat);
}

/* The answer says how many nodes, in JSON, YAML and the text table. */
static void
test_nodes_in_answer(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_NODES);
	struct mf_decision d;
	struct mf_buf b;
	struct mf_jw w;
	struct fx f;
	char *text;

	(void)state;
	job_load(&f, FLOOR("40Gi") "      count: 4\n" HOURS(12));
	place(&f, cat, &d);
	mf_buf_init(&b, 1u << 20);
	mf_jw_init(&w, &b);
	mf_write_decision(&w, NULL, &f.job, &d, cat);
	assert_int_equal(b.rc, MF_OK);
	assert_non_null(strstr(b.data,
	    "\"placement\":{\"gpu\":\"one-node\",\"count\":4,\"nodes\":1,"));
	assert_non_null(strstr(b.data,
	    "{\"gpu\":\"two-node\",\"count\":4,"
	    "\"nodes\":2,"));
	mf_buf_free(&b);
	mf_buf_init(&b, 1u << 20);
	mf_jw_init_form(&w, &b, MF_JW_YAML);
	mf_write_decision(&w, NULL, &f.job, &d, cat);
	assert_int_equal(b.rc, MF_OK);
	assert_non_null(strstr(b.data,
	    "  - gpu: \"four-node\"\n    count: 4\n"
	    "    nodes: 4\n"));
	mf_buf_free(&b);
	text = mf_text_decision(&f.job, &d);
	assert_non_null(text);
	assert_non_null(strstr(text, "GPU            COUNT NODES     GB"));
	assert_non_null(strstr(text, "two-node           4     2   80.0"));
	free(text);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * Slurm is asked for exactly the placement's GPUs.  Cards of two a node
 * (80G, $2.00/h, throughput 1.0), one mapped to gres gpu:h100 in
 * partition gpu, one mapped to a partition only.  A 40Gi floor on 4 GPUs
 * is 2 nodes of 2: the gres a node, gpu:h100:2.  On 3 GPUs it is 2 nodes
 * too, and 3 does not divide by 2: a gres a node of ceil(3 / 2) = 2 would
 * hold 4 GPUs, so the request is the job's 3 (sbatch --gpus=h100:3) on 2
 * nodes; "3" on the card whose mapping names no type.
 */
#define SLURM_NODE_CARD(name, map) \
	GPU(name, "80G", "2.00", "1.0") \
	"    gpusPerNode: 2\n    maxNodes: 4\n    slurm: " map "\n"
#define CAT_SLURM_NODES \
	CAT_HDR SLURM_NODE_CARD("typed", "{gres: gpu:h100, partition: gpu}") \
	    SLURM_NODE_CARD("untyped", "{partition: big}")

/* The decision of a 40Gi floor on count GPUs over CAT_SLURM_NODES, as
 * JSON in b (mf_buf_free it). */
static void
slurm_decision(struct mf_buf *b, int count)
{
	struct mf_catalog *cat = cat_parse(CAT_SLURM_NODES);
	struct mf_decision d;
	struct mf_jw w;
	struct fx f;
	char spec[128];

	snprintf(spec, sizeof(spec),
	    FLOOR("40Gi") "      count: %d\n" HOURS(12), count);
	job_load(&f, spec);
	place(&f, cat, &d);
	assert_int_equal(d.placement.count, count);
	assert_int_equal(d.placement.nodes, 2);
	mf_buf_init(b, 1u << 20);
	mf_jw_init(&w, b);
	mf_write_decision(&w, NULL, &f.job, &d, cat);
	assert_int_equal(b->rc, MF_OK);
	job_free(&f);
	mf_cat_unref(cat);
}

static void
test_nodes_slurm_exact(void **state)
{
	struct mf_buf b;

	(void)state;
	slurm_decision(&b, 4);
	assert_non_null(strstr(b.data,
	    "\"slurm\":{\"gres\":\"gpu:h100:2\",\"nodes\":2,"
	    "\"partition\":\"gpu\"}"));
	assert_non_null(strstr(b.data,
	    "\"slurm\":{\"gres\":\"gpu:2\",\"nodes\":2,"
	    "\"partition\":\"big\"}"));
	mf_buf_free(&b);
	slurm_decision(&b, 3);
	assert_non_null(strstr(b.data,
	    "\"slurm\":{\"gpus\":\"h100:3\",\"nodes\":2,"
	    "\"partition\":\"gpu\"}"));
	assert_non_null(strstr(b.data,
	    "\"slurm\":{\"gpus\":\"3\",\"nodes\":2,"
	    "\"partition\":\"big\"}"));
	assert_null(strstr(b.data, "\"gres\""));
	mf_buf_free(&b);
}

/*
 * maxNodes bounds the count.  Llama 8B AdamW, no checkpointing, FSDP over
 * N: 2 x ceil(16,060,522,496 / N) + ceil(96,363,134,976 / N) + the rest,
 * 18,253,611,008 + 2,101,346,304 + 872,448,000 = 21,227,405,312:
 *   N = 19: 2 x 845,290,658 + 5,071,743,947 + rest = 27,989,730,575
 *   N = 20: 2 x 803,026,125 + 4,818,156,749 + rest = 27,651,614,311
 * A 30.8G card holds 27,720,000,000 after headroom: the fewest is 20 GPUs,
 * three nodes of 8.  With maxNodes 2 (maxCount 16), or an explicit
 * maxCount 19 of 3 nodes, the job fits nowhere.
 */
static void
test_nodes_max_nodes(void **state)
{
	struct mf_catalog *cat = cat_parse(
	    CAT_HDR GPU("mid", "30.8G", "1.00", "1.0") "    maxNodes: 2\n");
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, LLAMA WL("") HOURS(100) FIXES("fsdp"));
	place(&f, cat, &d);
	assert_false(d.admitted);
	mf_cat_unref(cat);
	cat = cat_parse(CAT_HDR GPU("mid", "30.8G", "1.00",
	    "1.0") "    maxNodes: 3\n    maxCount: 19\n");
	place(&f, cat, &d);
	assert_false(d.admitted);
	mf_cat_unref(cat);
	cat = cat_parse(
	    CAT_HDR GPU("mid", "30.8G", "1.00", "1.0") "    maxNodes: 3\n");
	place(&f, cat, &d);
	expect_placement(&d.placement, "mid", 20, BIT(FSDP));
	assert_int_equal(d.placement.nodes, 3);
	assert_int_equal(d.placement.need, INT64_C(27651614311));
	assert_int_equal(d.need, INT64_C(27651614311));
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * The fewest GPUs that fit may break a deadline that more GPUs meet.  The
 * job of test_nodes_max_nodes on the 30.8G card with 4 nodes of 8 (fewest
 * 20), 100 reference hours at $1.00/h.  Speed c x 0.9^log2(c) x
 * 0.8^log2(nodes), with 0.8^log2(3) = 0.70210 and 0.8^2 = 0.64:
 *   20: 20 x 0.63422 x 0.70210 = 8.9058  -> 11.229 h
 *   22: 22 x 0.62510 x 0.70210 = 9.6554  -> 10.357 h
 *   23: 23 x 0.62089 x 0.70210 = 10.0263 ->  9.974 h
 *   24: 24 x 0.61688 x 0.70210 = 10.3948 ->  9.620 h (3 nodes at most)
 *   25: 25 x 0.61307 x 0.64    = 9.8091  -> 10.195 h (a fourth node)
 *   28: 28 x 0.60260 x 0.64    = 10.7986 ->  9.261 h
 *   29: 29 x 0.59939 x 0.64    = 11.1247 ->  8.989 h
 *   32: 32 x 0.59049 x 0.64    = 12.0932 ->  8.269 h
 * deadline 10 h: 23 GPUs, $1.00 x 23 x 9.974 = $229.39; deadline 9 h: no
 * count on three nodes is fast enough, 29 on four is, $260.68; deadline
 * 8 h: none, and the limit is named.  A deadline of 10 h with
 * maxHourlyPrice 22.5 rules out 23 GPUs ($23.00/h) and leaves none: the
 * cheapest fit, 20 GPUs, is late.
 */
static void
test_nodes_deadline_more_gpus(void **state)
{
	struct mf_catalog *cat = cat_parse(
	    CAT_HDR GPU("mid", "30.8G", "1.00", "1.0") "    maxNodes: 4\n");
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA WL("")
	        HOURS(100) "  limits:\n    deadlineHours: 10\n" FIXES("fsdp"));
	place(&f, cat, &d);
	expect_placement(&d.placement, "mid", 23, BIT(FSDP));
	assert_int_equal(d.placement.nodes, 3);
	near(d.placement.hours,
	    100 / (23 * pow(0.9, log2(23)) * pow(0.8, log2(3))));
	assert_true(fabs(d.placement.cost - 229.39) < 0.01);
	job_free(&f);
	job_load(&f,
	    LLAMA WL("")
	        HOURS(100) "  limits:\n    deadlineHours: 9\n" FIXES("fsdp"));
	place(&f, cat, &d);
	expect_placement(&d.placement, "mid", 29, BIT(FSDP));
	assert_int_equal(d.placement.nodes, 4);
	assert_true(fabs(d.placement.hours - 8.989) < 0.001);
	assert_true(fabs(d.placement.cost - 260.68) < 0.01);
	job_free(&f);
	job_load(&f,
	    LLAMA WL("")
	        HOURS(100) "  limits:\n    deadlineHours: 8\n" FIXES("fsdp"));
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.limit, MF_LIMIT_DEADLINE);
	job_free(&f);
	job_load(&f,
	    LLAMA WL("") HOURS(100) "  limits:\n    deadlineHours: 10\n"
	                            "    maxHourlyPrice: 22.5\n" FIXES("fsdp"));
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.limit, MF_LIMIT_DEADLINE);
	assert_non_null(strstr(d.reason, "mid x20"));
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * At multiGpuEfficiency 0.5 more GPUs on a node are no faster: c x
 * 0.5^log2(c) = 1, and more nodes are slower.  The job above on 20 GPUs
 * over 3 nodes runs at 0.8^log2(3) = 0.70210, 100 / 0.70210 = 142.43 h:
 * deadline 150 h admits it on 20 GPUs; at 140 h no count is faster, so
 * none meets it.
 */
static void
test_nodes_deadline_no_faster(void **state)
{
	struct mf_catalog *cat =
	    cat_parse("apiVersion: memfloor.dev/v1\nkind: GpuCatalog\n"
	              "multiGpuEfficiency: 0.5\ngpus:\n" GPU("mid", "30.8G",
	                  "1.00", "1.0") "    maxNodes: 4\n");
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA WL("")
	        HOURS(100) "  limits:\n    deadlineHours: 150\n" FIXES("fsdp"));
	place(&f, cat, &d);
	expect_placement(&d.placement, "mid", 20, BIT(FSDP));
	assert_true(fabs(d.placement.hours - 142.43) < 0.01);
	job_free(&f);
	job_load(&f,
	    LLAMA WL("")
	        HOURS(100) "  limits:\n    deadlineHours: 140\n" FIXES("fsdp"));
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.limit, MF_LIMIT_DEADLINE);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * A Llama 3.1 70B full fine-tune that needs more GPUs than one 8-GPU node
 * has goes over several nodes instead of being rejected.  P =
 * 70,553,706,496 (h 8192, L 80, kv 8 x d 128, I 28672, V 128256), s =
 * 4096: weights and gradients 2P = 141,107,412,992 each, AdamW 12P =
 * 846,644,477,952; checkpointed activations 2 x 4096 x 8192 x 80 =
 * 5,368,709,120, logits 4096 x 128256 x 4 = 2,101,346,304, sharding
 * buffers 4 x 855,654,400 (one layer: 2 x 8192^2 + 2 x 8192 x 1024 +
 * 3 x 8192 x 28672 + 2 x 8192) = 3,422,617,600: the rest is
 * 10,892,673,024.  Without checkpointing the activations alone are
 * 80 x 4096 x 8192 x 34 = 91,268,055,040, more than an 80G card's
 * 72,000,000,000 after headroom, so fsdp needs checkpointing:
 *   N = 18: 2 x 7,839,300,722 + 47,035,804,331 + rest = 73,607,078,799
 *   N = 19: 2 x 7,426,705,947 + 44,560,235,682 + rest = 70,306,320,600
 *   N =  8: 2 x 17,638,426,624 + 105,830,559,744 + rest = 152,000,086,016
 * On 80G cards ($2.99/h, throughput 1.0) of 8 a node and 4 nodes: 19 GPUs
 * over ceil(19 / 8) = 3 nodes, speed 19 x 0.9^log2(19) x 0.8^log2(3) =
 * 19 x 0.63918 x 0.70210 = 8.5267; 100 reference hours x 1.35 (checkpointing)
 * / 8.5267 = 15.833 h, x $2.99 x 19 = $899.45.  On one node the job is
 * rejected and fsdp runs on the 8 GPUs there are, 152,000,086,016 each.
 */
static void
test_nodes_llama_70b(void **state)
{
	struct mf_catalog *cat = cat_parse(
	    CAT_HDR GPU("h100", "80G", "2.99", "1.0") "    maxNodes: 4\n");
	unsigned both = BIT(CHECKPOINTING) | BIT(FSDP);
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    "  model:\n    name: meta-llama/Llama-3.1-70B\n" WL("") HOURS(100)
	        FIXES("checkpointing, fsdp"));
	place(&f, cat, &d);
	expect_placement(&d.placement, "h100", 19, both);
	assert_int_equal(d.placement.nodes, 3);
	assert_int_equal(d.placement.need, INT64_C(70306320600));
	near(d.placement.hours,
	    135 / (19 * pow(0.9, log2(19)) * pow(0.8, log2(3))));
	assert_true(fabs(d.placement.hours - 15.833) < 0.001);
	assert_true(fabs(d.placement.cost - 899.45) < 0.01);
	mf_cat_unref(cat);
	cat = cat_parse(CAT_HDR GPU("h100", "80G", "2.99", "1.0"));
	place(&f, cat, &d);
	assert_false(d.admitted);
	/* checkpointing, adam8bit, lora, qlora, fsdp (with checkpointing) */
	assert_int_equal(d.nfixes, 5);
	assert_int_equal(d.fixes[4].fix, MF_FIX_FSDP);
	assert_int_equal(d.fixes[4].fixes, both);
	assert_int_equal(d.fixes[4].gpus, 8);
	assert_int_equal(d.fixes[4].need, INT64_C(152000086016));
	assert_false(d.fixes[4].placed);
	job_free(&f);
	mf_cat_unref(cat);
}

/* --- the least intrusive fix at equal cost (design 6) --- */

/*
 * Mixtral 8x7B (P = 46,702,792,704; L 32, kv 8, d 128) served by vLLM, 64
 * sequences of 8,192 tokens, at gpuMemoryUtilization 0.9.  Linear weights
 * Plin = 32 x (2 x 4096 x 4096 + 2 x 4096 x 1024 + 8 x 3 x 4096 x 14336) =
 * 46,439,333,888, the rest 263,458,816:
 *   bf16 weights 2P = 93,405,585,408; int8 Plin + 2 x rest =
 *   46,966,251,520; int4 ceil(Plin / 2) + ceil(Plin / 128) x 2 + 2 x rest
 *   = 24,472,199,168;
 *   KV cache 2 x 32 x 8 x 128 x 2 bytes = 131,072 a token x 64 x 8,192 =
 *   68,719,476,736, in fp8 34,359,738,368;
 *   plus the profile run's activations at the card's vLLM defaults, the
 *   369Mi CUDA-graph reserve and the 164Mi outside PyTorch; int8 also
 *   holds an fp32 scale an output row, 32 x (4096 + 1024 + 1024 + 4096 +
 *   8 x (14336 + 14336 + 4096)) = 8,716,288 rows, 34,865,152 bytes.
 * On a B200 (162e9 usable) bf16 with a bf16 cache (165.0 GB) does not
 * fit; an fp8 cache (130.7 GB) and int4 weights (96.1 GB) both do, at the
 * same cost: the fp8 KV cache changes the model less.  On a 140G card
 * (126e9) kvfp8 does not fit, int8 (118.6 GB) and int4 do: int8, which
 * also ranks before kvfp8 with int4.
 */
#define MIXTRAL_SERVED \
	"  model:\n    name: mistralai/Mixtral-8x7B-v0.1\n" \
	"  workload:\n    kind: inference\n    server: vllm\n" \
	"    concurrency: 64\n    contextLength: 8192\n" HOURS(10) \
	    FIXES("tensor, kvfp8, int8, int4")

static void
test_tie_least_intrusive_serving(void **state)
{
	struct mf_catalog *b200 =
	    cat_parse(CAT_HDR GPU("B200", "180G", "5.50", "2.274"));
	struct mf_catalog *c140 =
	    cat_parse(CAT_HDR GPU("c140", "140G", "3.00", "1.0"));
	int64_t rest;
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, MIXTRAL_SERVED);
	place(&f, b200, &d);
	assert_true(d.admitted);
	expect_placement(&d.placement, "B200", 1, BIT(KVFP8));
	rest = d.est.bucket[MF_B_ACTIVATIONS] + d.est.bucket[MF_B_GRAPHS] +
	    d.est.bucket[MF_B_NONTORCH];
	assert_int_equal(d.est.bucket[MF_B_GRAPHS], INT64_C(369) << 20);
	assert_int_equal(d.est.bucket[MF_B_NONTORCH], INT64_C(164) << 20);
	assert_int_equal(d.placement.need,
	    INT64_C(93405585408) + INT64_C(34359738368) + rest);
	assert_true(INT64_C(93405585408) + INT64_C(68719476736) + rest >
	    INT64_C(162000000000));
	near(d.placement.cost, 10 / 2.274 * 5.50);
	place(&f, c140, &d);
	expect_placement(&d.placement, "c140", 1, BIT(INT8));
	rest = d.est.bucket[MF_B_ACTIVATIONS] + d.est.bucket[MF_B_GRAPHS] +
	    d.est.bucket[MF_B_NONTORCH];
	assert_int_equal(d.placement.need,
	    INT64_C(46966251520) + INT64_C(34865152) + INT64_C(68719476736) +
	        rest);
	job_free(&f);
	mf_cat_unref(b200);
	mf_cat_unref(c140);
}

/* --- more GPUs for a limit (the count fix) --- */

/*
 * minMemory 40Gi with referenceHours 12 and a deadline of 7 hours on
 * CAT_RANK: one GPU of fast takes 12 hours.  Data parallel over c GPUs
 * runs at throughput x c x 0.9^log2(c): fast x2 12 / 1.8 = 6.667 hours,
 * $2 x 2 x 6.667 = $26.67; mid (0.5) needs 8: 0.5 x 8 x 0.729 = 2.916,
 * 4.115 hours, $49.38.  So the count fix: fast x2.
 */
static void
test_count_fix_floor_deadline(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_RANK);
	const struct mf_fix_option *e;
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    FLOOR("40Gi") HOURS(12) "  limits:\n    deadlineHours: 7\n");
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_int_equal(d.limit, MF_LIMIT_DEADLINE);
	assert_int_equal(d.nfixes, 1);
	e = &d.fixes[0];
	assert_int_equal(e->fix, MF_FIX_REPLICAS);
	assert_int_equal(e->fixes, BIT(REPLICAS));
	assert_int_equal(e->gpus, 2);
	assert_int_equal(e->amount, 2);
	assert_int_equal(e->min_memory, 40 * GIB);
	assert_true(e->placed);
	expect_placement(&e->placement, "fast", 2, BIT(REPLICAS));
	near(e->placement.hours, 12 / 1.8);
	near(e->placement.cost, 4 * 12 / 1.8);
	assert_int_equal(d.suggested, 0);
	assert_string_equal(mf_fix_info(MF_FIX_REPLICAS)->field,
	    "spec.resources.gpu.count");
	job_free(&f);
	/* Allowed, admission adds the GPUs itself. */
	job_load(&f,
	    FLOOR("40Gi")
	        HOURS(12) "  limits:\n    deadlineHours: 7\n" FIXES("count"));
	place(&f, cat, &d);
	assert_true(d.admitted);
	expect_placement(&d.placement, "fast", 2, BIT(REPLICAS));
	job_free(&f);
	/* No deadline: more GPUs only cost more, and no count is offered. */
	job_load(&f, FLOOR("100Gi") HOURS(12));
	place(&f, cat, &d);
	assert_int_equal(d.nfixes, 0);
	job_free(&f);
	mf_cat_unref(cat);
}

/*
 * A model's job: Llama 3.1 8B LoRA with checkpointing (19.9 GB) in 4
 * hours of 12 on CAT_RANK.  fast over c GPUs: c = 3, 12 / (3 x 0.9^1.585)
 * = 4.73 hours, too long; c = 4, 12 / 3.24 = 3.704 hours, $8 x 3.704 =
 * $29.63.  mid at its maxCount of 8 takes 4.115 hours.  The job as written
 * has checkpointing, so no time factor applies.
 */
static void
test_count_fix_model_deadline(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_RANK);
	const struct mf_fix_option *e = NULL;
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    LLAMA WL("    method: lora\n    gradientCheckpointing: true\n")
	        HOURS(12) "  limits:\n    deadlineHours: 4\n");
	place(&f, cat, &d);
	assert_false(d.admitted);
	for (size_t i = 0; i < d.nfixes; i++)
		if (d.fixes[i].fix == MF_FIX_REPLICAS)
			e = &d.fixes[i];
	assert_non_null(e);
	assert_int_equal(e->gpus, 4);
	expect_placement(&e->placement, "fast", 4, BIT(REPLICAS));
	assert_int_equal(e->placement.need, NEED_LORA);
	near(e->placement.hours, 12 / 3.24);
	near(e->placement.cost, 8 * 12 / 3.24);
	assert_true(e->reference_hours == 0);
	job_free(&f);
	mf_cat_unref(cat);
}

/* --- a fix applied as its manifest change says --- */

/*
 * Llama 3.1 8B full AdamW on CAT_RANK with referenceHours 12: every entry
 * includes checkpointing (time factor 1.35), so each manifest change also
 * writes referenceHours 12 x 1.35 = 16.2, the hours of the job as it is
 * then written; its placement's hours are 16.2 / speed.
 */
static void
test_fix_entry_reference_hours(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_RANK);
	struct mf_decision d;
	struct fx f;
	int placed = 0;

	(void)state;
	job_load(&f, LLAMA WL("") HOURS(12));
	place(&f, cat, &d);
	assert_false(d.admitted);
	assert_true(d.nfixes >= 4);
	for (size_t i = 0; i < d.nfixes; i++) {
		const struct mf_fix_option *e = &d.fixes[i];
		const struct mf_placement *p = &e->placement;

		assert_true(e->fixes & BIT(CHECKPOINTING));
		near(e->reference_hours, 16.2);
		if (!e->placed)
			continue;
		near(p->hours,
		    16.2 /
		        (p->gpu->throughput * (double)p->count *
		            pow(0.9, log2((double)p->count))));
		placed++;
	}
	assert_true(placed >= 2);
	job_free(&f);
	mf_cat_unref(cat);
}

/* --- tensor-parallel sizes that frameworks start --- */

static void
expect_tensor_error(int64_t t, const char *nearest)
{
	struct mf_decision d;
	struct mf_error err;
	char spec[512];
	struct fx f;

	snprintf(spec, sizeof(spec),
	    "  model:\n    name: meta-llama/Llama-3.1-70B\n"
	    "  workload:\n    kind: inference\n    concurrency: 8\n"
	    "    contextLength: 4096\n    parallelism: {tensor: %lld}\n",
	    (long long)t);
	job_load(&f, spec);
	assert_int_equal(mf_place(&f.job, shipped, &d, &err), MF_EINVAL);
	assert_string_equal(err.field, "spec.workload.parallelism.tensor");
	if (strstr(err.text, nearest) == NULL ||
	    strstr(err.text, "64 attention heads") == NULL ||
	    strstr(err.text, "8 KV heads must divide it or it them") == NULL)
		fail_msg("%s", err.text);
	job_free(&f);
}

/*
 * Llama 3.1 70B has 64 attention heads and 8 KV heads: T must divide 64,
 * and 8 divide T or T divide 8: 1, 2, 4, 8, 16, 32, 64.  3 lies between 2
 * and 4, 6 between 4 and 8, as near to each; 5 is nearer 4.
 */
static void
test_tensor_invalid_rejected(void **state)
{
	(void)state;
	expect_tensor_error(3, "the nearest that does is 2 or 4");
	expect_tensor_error(6, "the nearest that does is 4 or 8");
	expect_tensor_error(5, "the nearest that does is 4");
	expect_tensor_error(12, "the nearest that does is 8 or 16");
}

/*
 * tensor 16 on a catalogue whose nodes hold 8 GPUs: no card can take it,
 * which is the reason, and the fix is the largest size a node takes that
 * the heads allow, 8.  As pods, each pod holds whole groups (pods x 8).
 */
static void
test_tensor_past_node(void **state)
{
	const struct mf_fix_option *e;
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f,
	    "  model:\n    name: meta-llama/Llama-3.1-70B\n"
	    "  workload:\n    kind: inference\n    concurrency: 8\n"
	    "    contextLength: 4096\n    parallelism: {tensor: 16}\n");
	place(&f, shipped, &d);
	assert_false(d.admitted);
	assert_non_null(
	    strstr(d.reason, "tensor parallel stays within a node"));
	assert_non_null(strstr(d.reason, "the 8 GPUs of the largest node"));
	assert_int_equal(d.nfixes, 1);
	e = &d.fixes[0];
	assert_int_equal(e->fix, MF_FIX_TENSOR);
	assert_int_equal(e->amount, 8);
	assert_int_equal(e->gpus, 8);
	assert_true(e->placed);
	assert_int_equal(e->placement.count, 8);
	assert_int_equal(d.suggested, 0);
	/* As two pods, each pod holds whole groups: one group of 8 each. */
	f.job.pods = 2;
	place(&f, shipped, &d);
	assert_int_equal(d.nfixes, 1);
	assert_int_equal(e->fix, MF_FIX_TENSOR);
	assert_int_equal(e->amount, 8);
	assert_int_equal(e->gpus, 16);
	assert_true(e->placed);
	assert_int_equal(e->placement.count, 16);
	job_free(&f);
}

/* Llama 3.1 70B served on count GPUs over tensor-parallel groups of
 * tensor, for referenceHours hours. */
static void
served_70b(struct fx *f, int64_t count, int64_t tensor, const char *hours)
{
	char spec[512];

	snprintf(spec, sizeof(spec),
	    "  resources: {gpu: {count: %lld}}\n"
	    "  model:\n    name: meta-llama/Llama-3.1-70B\n"
	    "  workload:\n    kind: inference\n    concurrency: 32\n"
	    "    contextLength: 8192\n    parallelism: {tensor: %lld}\n"
	    "  duration: {referenceHours: %s}\n",
	    (long long)count, (long long)tensor, hours);
	job_load(f, spec);
}

/*
 * A job that writes count 16 with tensor 16 gets the tensor entry of 8
 * on 8 GPUs.  Its manifest change with tensor 8 alone would run two
 * replicas of 8 on the 16 GPUs the job writes: twice the GPUs, and,
 * where referenceHours are the reference card's at 8 (the modelled
 * catalogue, catalog/gpus.yaml; design 6's keep the job's own 10), twice
 * the work.  So the change also writes count 8; sent again, the job lands
 * on the entry's card and 8 GPUs with its hours and cost, on either
 * catalogue, and writes nothing more.
 */
static void
test_tensor_past_node_count(void **state)
{
	struct mf_catalog *modelled = NULL;
	const struct mf_catalog *cats[2];
	const struct mf_fix_option *e;
	struct mf_decision d, again;
	char hours[32];
	struct fx f, g;

	(void)state;
	assert_int_equal(shipped_data(&modelled, NULL), 0);
	cats[0] = shipped;
	cats[1] = modelled;
	for (size_t i = 0; i < NELEM(cats); i++) {
		served_70b(&f, 16, 16, "10");
		place(&f, cats[i], &d);
		assert_false(d.admitted);
		assert_int_equal(d.nfixes, 1);
		e = &d.fixes[0];
		assert_int_equal(e->fix, MF_FIX_TENSOR);
		assert_int_equal(e->amount, 8);
		assert_true(e->placed);
		assert_int_equal(e->placement.count, 8);
		assert_int_equal(e->count_change, 8);
		assert_int_equal(e->placement.count_change, 8);
		assert_true(
		    i == 0 ? e->reference_hours == 0 : e->reference_hours > 0);
		snprintf(hours, sizeof(hours), "%.17g",
		    e->reference_hours > 0 ? e->reference_hours : 10.0);
		served_70b(&g, e->count_change > 0 ? e->count_change : 16,
		    e->amount, hours);
		place(&g, cats[i], &again);
		assert_true(again.admitted);
		expect_placement(&again.placement, e->placement.gpu->name, 8,
		    0);
		near(again.placement.hours, e->placement.hours);
		near(again.placement.cost, e->placement.cost);
		assert_int_equal(again.placement.count_change, 0);
		job_free(&g);
		job_free(&f);
	}
	mf_cat_unref(modelled);
}

/* Llama 3.1 70B served over tensor x pipeline 2, with resources (a
 * manifest line, or ""). */
static void
served_70b_pipeline(struct fx *f, int64_t tensor, const char *resources)
{
	char spec[512];

	snprintf(spec, sizeof(spec),
	    "%s  model:\n    name: meta-llama/Llama-3.1-70B\n"
	    "  workload:\n    kind: inference\n    concurrency: 8\n"
	    "    contextLength: 4096\n"
	    "    parallelism: {tensor: %lld, pipeline: 2}\n",
	    resources, (long long)tensor);
	job_load(f, spec);
}

/*
 * tensor 16 with pipeline 2: a replica of 16 x 2 = 32 GPUs.  The tensor
 * entry keeps the pipeline: tensor 8 (the most a node of 8 takes) x
 * pipeline 2 = 16 GPUs, on 16 / 8 = 2 nodes.  Its placement's manifest
 * change writes the same tensor 8, not the placement's 16 GPUs (which
 * with pipeline 2 would be a replica of 32), and count 16 where the
 * job's own count was 32: sent again, the job lands where the entry said.
 */
static void
test_tensor_past_node_pipeline(void **state)
{
	const char *change = "\"manifestChange\":{"
	                     "\"spec.workload.parallelism.tensor\":8,"
	                     "\"spec.resources.gpu.count\":16}";
	const struct mf_fix_option *e;
	struct mf_decision d, again;
	struct mf_buf b;
	struct mf_jw w;
	struct fx f, g;

	(void)state;
	served_70b_pipeline(&f, 16, "");
	assert_int_equal(f.job.count, 32);
	place(&f, shipped, &d);
	assert_false(d.admitted);
	assert_int_equal(d.nfixes, 1);
	e = &d.fixes[0];
	assert_int_equal(e->fix, MF_FIX_TENSOR);
	assert_int_equal(e->amount, 8);
	assert_int_equal(e->gpus, 16);
	assert_int_equal(e->count_change, 16);
	assert_true(e->placed);
	assert_int_equal(e->placement.count, 16);
	assert_int_equal(e->placement.nodes, 2);
	assert_int_equal(e->placement.count_change, 16);
	/* The entry's change and its placement's, as the answer writes them:
	 * the same two fields. */
	mf_buf_init(&b, 1u << 20);
	mf_jw_init(&w, &b);
	mf_write_decision(&w, NULL, &f.job, &d, shipped);
	assert_int_equal(b.rc, MF_OK);
	assert_non_null(strstr(b.data, change));
	assert_non_null(strstr(strstr(b.data, change) + 1, change));
	mf_buf_free(&b);
	served_70b_pipeline(&g, 8, "  resources: {gpu: {count: 16}}\n");
	place(&g, shipped, &again);
	assert_true(again.admitted);
	expect_placement(&again.placement, e->placement.gpu->name, 16, 0);
	assert_int_equal(again.placement.nodes, 2);
	assert_int_equal(again.need, e->placement.need);
	job_free(&g);
	job_free(&f);
}

/*
 * A model of 12 heads and 4 KV heads takes tensor 2, 4 (and 12, past a
 * node), never 3 or 6.  On a card whose usable memory holds the model
 * split 3 ways but not 2, the tensor fix offers 4.
 */
static void
test_tensor_fix_valid_sizes(void **state)
{
	static const char cfg[] =
	    "  model:\n    config: {model_type: llama, hidden_size: 3072, "
	    "num_attention_heads: 12, num_key_value_heads: 4, "
	    "num_hidden_layers: 28, intermediate_size: 8192, "
	    "vocab_size: 32000}\n"
	    "  workload:\n    kind: inference\n    concurrency: 16\n"
	    "    contextLength: 8192\n";
	struct mf_estimate e2, e3, e4;
	struct mf_workload w;
	struct mf_catalog *cat;
	struct mf_decision d;
	char text[512];
	int tensor = 0;
	struct fx f;
	int64_t mem;

	(void)state;
	job_load(&f, cfg);
	w = f.job.work;
	w.tensor = 2;
	assert_int_equal(mf_est_compute(&f.job.model, &w, &e2), MF_OK);
	w.tensor = 3;
	assert_int_equal(mf_est_compute(&f.job.model, &w, &e3), MF_OK);
	w.tensor = 4;
	assert_int_equal(mf_est_compute(&f.job.model, &w, &e4), MF_OK);
	assert_true(e3.per_gpu < e2.per_gpu && e4.per_gpu <= e3.per_gpu);
	/* Usable (0.9 of memory) between the needs at 3 and at 2. */
	mem = (e3.per_gpu + e2.per_gpu) / 2 * 10 / 9;
	snprintf(text, sizeof(text),
	    CAT_HDR "  - {name: small, memory: %lld, hourlyPrice: 1, "
	            "relativeThroughput: 1}\n",
	    (long long)mem);
	cat = cat_parse(text);
	assert_false(mf_tensor_valid(&f.job.model, 3));
	assert_false(mf_tensor_valid(&f.job.model, 6));
	assert_true(mf_tensor_valid(&f.job.model, 4));
	assert_true(mf_tensor_valid(&f.job.model, 12));
	place(&f, cat, &d);
	assert_false(d.admitted);
	for (size_t i = 0; i < d.nfixes; i++)
		if (d.fixes[i].fix == MF_FIX_TENSOR) {
			assert_int_equal(d.fixes[i].gpus, 4);
			assert_int_equal(d.fixes[i].need, e4.per_gpu);
			assert_true(d.fixes[i].placed);
			tensor = 1;
		}
	assert_true(tensor);
	job_free(&f);
	mf_cat_unref(cat);
}

/* --- Kubernetes pods: within a node --- */

/*
 * As one pod (Kubernetes), Llama 3.1 8B full AdamW (148.8 GB; fsdp over
 * N: 128.5 / N + 21.2 GB) on cards of 4 GPUs a node: a 48G card (43.2
 * usable) needs N = 6, so two nodes, which one pod cannot have; on one
 * node of 4 the 96G card (86.4) holds N = 2.  Without pods the 48G card
 * wins at 6 GPUs over 2 nodes.
 */
static void
test_pods_within_node(void **state)
{
	struct mf_catalog *cat = cat_parse(CAT_HDR GPU("cheap48", "48G", "0.10",
	    "1.0") "    gpusPerNode: 4\n"
	           "    maxNodes: 4\n" GPU("dear96", "96G", "2.00",
	               "1.0") "    gpusPerNode: 4\n"
	                      "    maxNodes: 4\n");
	struct mf_decision d;
	struct fx f;

	(void)state;
	job_load(&f, LLAMA WL("") FIXES("fsdp"));
	place(&f, cat, &d);
	expect_placement(&d.placement, "cheap48", 6, BIT(FSDP));
	assert_int_equal(d.placement.nodes, 2);
	f.job.pods = 1;
	place(&f, cat, &d);
	expect_placement(&d.placement, "dear96", 2, BIT(FSDP));
	assert_int_equal(d.placement.nodes, 1);
	/* Two pods of 3 on two nodes: the 48G card again. */
	f.job.pods = 2;
	place(&f, cat, &d);
	expect_placement(&d.placement, "cheap48", 6, BIT(FSDP));
	assert_int_equal(d.placement.nodes, 2);
	job_free(&f);
	mf_cat_unref(cat);
}

/* --- the search against trying every count --- */

struct tried {
	const struct mf_gpu *g;
	int64_t count;
	unsigned fixes;
	double cost, spare;
};

/*
 * The fixes from the one that changes the job least to the one that
 * changes it most (design 6): the post's steps, 8-bit Adam, FSDP, the
 * serving fixes, more GPUs, then the modelling decisions.
 */
static const enum mf_fix least_first[] = { MF_FIX_SDPA, MF_FIX_MICROBATCH,
	MF_FIX_AUTOCAST, MF_FIX_CHECKPOINTING, MF_FIX_ADAM8BIT, MF_FIX_FSDP,
	MF_FIX_KVFP8, MF_FIX_INT8, MF_FIX_INT4, MF_FIX_TENSOR, MF_FIX_REPLICAS,
	MF_FIX_LORA, MF_FIX_QLORA, MF_FIX_CONTEXT, MF_FIX_CONCURRENCY };

/* Whether set a changes the job less than set b: the one without the
 * most intrusive fix where they differ. */
static int
changes_less(unsigned a, unsigned b)
{
	for (int i = (int)NELEM(least_first) - 1; i >= 0; i--) {
		unsigned bit = MF_FIXBIT(least_first[i]);

		if ((a & bit) != (b & bit))
			return (b & bit) != 0;
	}
	return 0;
}

/* Design 6's order, written out again: cost (to 1e-9), the fixes that
 * change least, more spare, fewer GPUs, name. */
static int
tried_before(const struct tried *a, const struct tried *b)
{
	double hi = a->cost > b->cost ? a->cost : b->cost;

	if (fabs(a->cost - b->cost) > 1e-9 * hi)
		return a->cost < b->cost;
	if (a->fixes != b->fixes)
		return changes_less(a->fixes, b->fixes);
	if (a->spare != b->spare)
		return a->spare > b->spare;
	if (a->count != b->count)
		return a->count < b->count;
	return strcmp(a->g->name, b->g->name) < 0;
}

/*
 * The nodes c GPUs of g span, or 0 when the job may not take them: as
 * many as they fill; as Kubernetes pods (job->pods), c splits into pods
 * of c / pods GPUs of one node each, floor(gpusPerNode / (c / pods)) of
 * them a node, on at most maxNodes nodes.
 */
static int64_t
nodes_for(const struct mf_job *job, const struct mf_gpu *g, int64_t c)
{
	int64_t per, nodes;

	if (c > g->max_count)
		return 0;
	if (job->pods == 0)
		return (c + g->gpus_per_node - 1) / g->gpus_per_node;
	if (c % job->pods != 0 || c / job->pods > g->gpus_per_node)
		return 0;
	per = g->gpus_per_node / (c / job->pods);
	nodes = (job->pods + per - 1) / per;
	return nodes <= g->max_nodes ? nodes : 0;
}

/* Every card with every count of fix set sub, as design 6 and 15 write
 * it; keeps the best in *best. */
static void
try_every_count(const struct mf_job *job, const struct mf_catalog *cat,
    unsigned sub, int64_t most, struct tried *best, int *found)
{
	int64_t own =
	    job->pods > 0 && !job->count_given ? job->pods : job->count;
	int64_t lo = own, hi = own;
	double tf = 1,
	       ref = job->reference_hours > 0 ? job->reference_hours : 1;

	if ((sub & BIT(FSDP)) && !job->count_given) {
		lo = 2;
		hi = most < 2 ? 2 : most;
	}
	if (sub & BIT(REPLICAS))
		hi = most;
	for (int f = 0; f < MF_FIX_COUNT; f++)
		if (sub & MF_FIXBIT(f))
			tf *= cat->time_factor[f];
	for (int64_t c = lo; c <= hi; c++) {
		struct mf_workload w = job->work;
		struct mf_estimate e;

		mf_fix_apply(&w, sub, c);
		assert_int_equal(mf_est_compute(&job->model, &w, &e), MF_OK);
		for (size_t i = 0; i < cat->ngpus; i++) {
			const struct mf_gpu *g = &cat->gpus[i];
			int64_t nodes = nodes_for(job, g, c);
			double speed, hours;
			struct tried t;

			if (nodes == 0 || g->memory < job->min_memory ||
			    e.per_gpu > mf_cat_usable(cat, g))
				continue;
			speed = g->throughput * (double)c *
			    pow(cat->multi_gpu_efficiency, log2((double)c)) *
			    pow(cat->inter_node_efficiency,
			        log2((double)nodes));
			hours = ref * tf / speed;
			t.g = g;
			t.count = c;
			t.fixes = sub;
			t.cost = hours * g->hourly_price * (double)c;
			t.spare =
			    (double)(g->memory - e.per_gpu) / (double)g->memory;
			if ((job->max_hourly_price >= 0 &&
			        g->hourly_price * (double)c >
			            job->max_hourly_price) ||
			    (job->max_cost >= 0 && t.cost > job->max_cost) ||
			    (job->deadline_hours >= 0 &&
			        hours > job->deadline_hours))
				continue;
			if (!*found || tried_before(&t, best)) {
				*best = t;
				*found = 1;
			}
		}
	}
}

/* The fewest GPUs from 2 to most on which fix set sub fits some card, else
 * most: the GPUs of a rejection's fsdp entry, counted one by one. */
static int64_t
fewest_anywhere_by_count(const struct mf_job *job, const struct mf_catalog *cat,
    unsigned sub, int64_t most)
{
	for (int64_t c = 2; c <= most; c++) {
		struct mf_workload w = job->work;
		struct mf_estimate e;

		mf_fix_apply(&w, sub, c);
		assert_int_equal(mf_est_compute(&job->model, &w, &e), MF_OK);
		for (size_t i = 0; i < cat->ngpus; i++)
			if (nodes_for(job, &cat->gpus[i], c) > 0 &&
			    cat->gpus[i].memory >= job->min_memory &&
			    e.per_gpu <= mf_cat_usable(cat, &cat->gpus[i]))
				return c;
	}
	return most;
}

/* A random catalogue of n cards: nodes of 1 to 8, up to 8 nodes. */
static struct mf_catalog *
random_catalogue(unsigned *seed, int n)
{
	static const char *const eff[] = { "0.9", "1", "0.5", "0.7", "0.95" };
	static const char *const ie[] = { "0.8", "1", "0.6" };
	char text[8192];
	size_t used;

	used = (size_t)snprintf(text, sizeof(text),
	    CAT_HDR_NO_GPUS "multiGpuEfficiency: %s\ninterNodeEfficiency: %s\n"
	                    "gpus:\n",
	    eff[rand_r(seed) % 5], ie[rand_r(seed) % 3]);
	for (int i = 0; i < n; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used,
		    "  - {name: g%02d, memory: %dG, hourlyPrice: %d.%02d, "
		    "relativeThroughput: %d.%d, gpusPerNode: %d, maxNodes: %d}\n",
		    i, 12 + rand_r(seed) % 190, rand_r(seed) % 6,
		    1 + rand_r(seed) % 99, rand_r(seed) % 3,
		    1 + rand_r(seed) % 9, 1 << (rand_r(seed) % 4),
		    1 + rand_r(seed) % 8);
	assert_true(used < sizeof(text));
	return cat_parse(text);
}

/*
 * On random catalogues (multiGpuEfficiency 0.5 to 1, interNodeEfficiency
 * 0.6 to 1, 1 to 8 GPUs a node on 1 to 8 nodes), jobs and limits, the
 * placement is the best of every card with every fix set and every GPU
 * count tried one by one, by design 6 and 15 written out again above.
 * Cards are never free: at hourlyPrice 0 every count costs 0, and the
 * search, as before, ranks a free card's counts by cost factor.
 */
static void
test_search_matches_every_count(void **state)
{
	static const char *const fixes[] = { "checkpointing, adam8bit, fsdp",
		"fsdp", "checkpointing, fsdp", "lora, qlora, fsdp, adam8bit",
		"checkpointing, count", "lora, count" };
	unsigned seed = 15;
	int spanning = 0, timed = 0, rejected = 0, entries = 0, podded = 0;

	(void)state;
	for (int trial = 0; trial < 3000; trial++) {
		struct mf_catalog *cat = random_catalogue(&seed, 12);
		char spec[1024], limits[256] = "", count[64] = "";
		struct tried best = { 0 };
		struct mf_decision d;
		unsigned allowed = 0;
		int64_t most = 1;
		int found = 0;
		struct fx f;

		if (rand_r(&seed) % 2)
			snprintf(limits, sizeof(limits),
			    "  limits:\n    deadlineHours: %d\n",
			    1 + rand_r(&seed) % 60);
		if (rand_r(&seed) % 3 == 0)
			snprintf(limits + strlen(limits),
			    sizeof(limits) - strlen(limits),
			    "%s"
			    "    maxHourlyPrice: %d\n",
			    limits[0] ? "" : "  limits:\n",
			    1 + rand_r(&seed) % 40);
		if (rand_r(&seed) % 3 == 0)
			snprintf(limits + strlen(limits),
			    sizeof(limits) - strlen(limits),
			    "%s"
			    "    maxCost: %d\n",
			    limits[0] ? "" : "  limits:\n",
			    5 + rand_r(&seed) % 200);
		if (rand_r(&seed) % 4 == 0)
			snprintf(count, sizeof(count),
			    "  resources:\n    gpu:\n      count: %d\n",
			    1 + rand_r(&seed) % 16);
		snprintf(spec, sizeof(spec),
		    LLAMA "%s  workload:\n    sequenceLength: %d\n" HOURS(
		        10) "%s" FIXES("%s"),
		    count, 512 << (rand_r(&seed) % 4), limits,
		    fixes[rand_r(&seed) % NELEM(fixes)]);
		job_load(&f, spec);
		/* A quarter as Kubernetes pods: one, two or three. */
		if (rand_r(&seed) % 4 == 0)
			f.job.pods = 1 + rand_r(&seed) % 3;
		place(&f, cat, &d);
		for (size_t i = 0; i < cat->ngpus; i++)
			if (cat->gpus[i].max_count > most)
				most = cat->gpus[i].max_count;
		for (int fx = 0; fx < MF_FIX_COUNT; fx++)
			if ((f.job.allowed_fixes & MF_FIXBIT(fx)) &&
			    mf_fix_applies(&f.job, &f.job.work,
			        (enum mf_fix)fx))
				allowed |= MF_FIXBIT(fx);
		for (unsigned sub = allowed;; sub = (sub - 1) & allowed) {
			if (mf_fix_compatible(sub))
				try_every_count(&f.job, cat, sub, most, &best,
				    &found);
			if (sub == 0)
				break;
		}
		if (found != d.admitted ||
		    (found &&
		        (best.g != d.placement.gpu ||
		            best.count != d.placement.count ||
		            best.fixes != d.placement.fixes)))
			fail_msg(
			    "trial %d (eff %g, ie %g): %s x%lld %#x $%.6f, the "
			    "search %s x%lld %#x $%.6f\n%s",
			    trial, cat->multi_gpu_efficiency,
			    cat->inter_node_efficiency,
			    found ? best.g->name : "none",
			    (long long)(found ? best.count : 0),
			    found ? best.fixes : 0, best.cost,
			    d.admitted ? d.placement.gpu->name : "none",
			    (long long)(d.admitted ? d.placement.count : 0),
			    d.admitted ? d.placement.fixes : 0,
			    d.placement.cost, spec);
		if (found)
			near(d.placement.cost, best.cost);
		for (size_t i = 0; !d.admitted && i < d.nfixes; i++) {
			const struct mf_fix_option *e = &d.fixes[i];
			int64_t c;

			if (e->fix != MF_FIX_FSDP || f.job.count_given)
				continue;
			c = fewest_anywhere_by_count(&f.job, cat, e->fixes,
			    most < 2 ? 2 : most);
			/* More GPUs where the limits rule out the fewest. */
			if (e->placed && e->placement.count > c) {
				assert_true(limits[0] != '\0');
				c = e->placement.count;
			}
			assert_int_equal(e->gpus, c);
			entries++;
		}
		podded += f.job.pods > 0 && d.admitted;
		spanning += d.admitted && d.placement.nodes > 1;
		timed += d.admitted && f.job.deadline_hours >= 0 &&
		    d.placement.count > 1;
		rejected += !d.admitted;
		job_free(&f);
		mf_cat_unref(cat);
	}
	print_message("%d over several nodes, %d under a deadline on several "
	              "GPUs, %d rejected, %d fsdp entries, %d as pods\n",
	    spanning, timed, rejected, entries, podded);
	assert_true(spanning > 50 && timed > 50 && rejected > 50);
	assert_true(entries > 20 && podded > 50);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_floor_cheapest_to_finish),
		cmocka_unit_test(test_floor_no_hours),
		cmocka_unit_test(test_floor_boundary),
		cmocka_unit_test(test_floor_too_big),
		cmocka_unit_test(test_floor_count),
		cmocka_unit_test(test_floor_count_past_max),
		cmocka_unit_test(test_tie_name),
		cmocka_unit_test(test_tie_spare),
		cmocka_unit_test(test_tie_fewer_fixes),
		cmocka_unit_test(test_tie_fewer_gpus),
		cmocka_unit_test(test_limit_hourly_price),
		cmocka_unit_test(test_limit_reason_quotes_limit),
		cmocka_unit_test(test_limit_hourly_price_count),
		cmocka_unit_test(test_limit_cost),
		cmocka_unit_test(test_limit_deadline),
		cmocka_unit_test(test_model_smallest_fit_row),
		cmocka_unit_test(test_model_8bit_floor),
		cmocka_unit_test(test_model_qlora_cheapest),
		cmocka_unit_test(test_model_inference),
		cmocka_unit_test(test_model_inference_rejected),
		cmocka_unit_test(
		    test_model_inference_context_fix_holds_request),
		cmocka_unit_test(test_place_vllm_card_defaults),
		cmocka_unit_test(test_place_vllm_seqs_over_default_tokens),
		cmocka_unit_test(test_context_limit),
		cmocka_unit_test(test_chunked_softcap),
		cmocka_unit_test(test_context_capped),
		cmocka_unit_test(test_key_case_rejected),
		cmocka_unit_test(test_key_case_admitted),
		cmocka_unit_test(test_key_case_time_factor),
		cmocka_unit_test(test_count_pins_fsdp),
		cmocka_unit_test(test_count_only_when_asked),
		cmocka_unit_test(test_fixes_cumulative),
		cmocka_unit_test(test_fixes_applicable_only),
		cmocka_unit_test(test_fixes_optimizer_in_backward),
		cmocka_unit_test(test_fix_sets_exclusive),
		cmocka_unit_test(test_fsdp_lora_not_qlora),
		cmocka_unit_test(test_key_case_limits),
		cmocka_unit_test(test_many_options),
		cmocka_unit_test(test_nodes_speed_and_cost),
		cmocka_unit_test(test_nodes_in_answer),
		cmocka_unit_test(test_nodes_slurm_exact),
		cmocka_unit_test(test_nodes_max_nodes),
		cmocka_unit_test(test_nodes_deadline_more_gpus),
		cmocka_unit_test(test_nodes_deadline_no_faster),
		cmocka_unit_test(test_nodes_llama_70b),
		cmocka_unit_test(test_tie_least_intrusive_serving),
		cmocka_unit_test(test_count_fix_floor_deadline),
		cmocka_unit_test(test_count_fix_model_deadline),
		cmocka_unit_test(test_fix_entry_reference_hours),
		cmocka_unit_test(test_tensor_invalid_rejected),
		cmocka_unit_test(test_tensor_past_node),
		cmocka_unit_test(test_tensor_past_node_count),
		cmocka_unit_test(test_tensor_past_node_pipeline),
		cmocka_unit_test(test_tensor_fix_valid_sizes),
		cmocka_unit_test(test_pods_within_node),
		cmocka_unit_test(test_search_matches_every_count),
		cmocka_unit_test(test_floor_excludes_model_job),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_warn_workload),
		cmocka_unit_test(test_warn_cpu_offload),
		cmocka_unit_test(test_warn_spare),
		cmocka_unit_test(test_warn_floor_below_need),
		cmocka_unit_test(test_warn_not_on_rejection),
		cmocka_unit_test(test_floor_for),
		cmocka_unit_test(test_smallest_fit),
		cmocka_unit_test(test_limit_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
