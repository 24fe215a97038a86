/*
 * test_observed.c: a job's observations used at its next admission
 * (design 23; admission/place/place_obs.c).
 *
 * The job is LoRA on Llama 3.1 8B, on one GPU of two 80Gi cards: REF,
 * modelled (design 21), and HALF at relativeThroughput 0.5.  Its need e
 * on a card is the estimate's, the same on both; the figures below are
 * that e moved by hand:
 *
 *   a torch peak 1.25e on REF: REF needs 1.25e; HALF, moved by the
 *     largest ratio, 1.25e too;
 *   a torch peak 0.70e on REF: REF needs 0.70e; HALF falls by no more
 *     than 10%: 0.90e;
 *   2x the modelled tokens/s on REF: REF's hours halve, and HALF's, by
 *     the same ratio.
 *
 * And an observation posted with its job is tied to the fingerprint its
 * admit answers, where what its runs measured decides the placement.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <math.h>

#include "api.h"
#include "doc/doc.h"
#include "estimate/estimate.h"
#include "manifest/manifest.h"
#include "place/place.h"
#include "catalog.h"
#include "observe.h"
#include "files.h"
#include "msg.h"
#include "placed.h"

static struct mf_models *models;
static struct mf_catalog *cat;

#define CATALOG \
	"apiVersion: memfloor.dev/v1\nkind: GpuCatalog\nreference: REF\n" \
	"gpus:\n" \
	"  - name: REF\n    memory: 80Gi\n    hourlyPrice: 3\n" \
	"    architecture: hopper\n" \
	"    flops: {bf16: 989.4T, fp16: 989.4T}\n" \
	"    memoryBandwidth: 3.35T\n" \
	"    interconnect: {kind: nvswitch, bandwidth: 450G}\n" \
	"  - name: HALF\n    memory: 80Gi\n    hourlyPrice: 1\n" \
	"    relativeThroughput: 0.5\n"

#define JOB \
	"apiVersion: memfloor.dev/v1\nkind: Job\nmetadata:\n  name: t\n" \
	"spec:\n  model:\n    name: meta-llama/Llama-3.1-8B\n" \
	"  workload:\n    sequenceLength: 2048\n" \
	"    method: lora\n    lora: {rank: 16, targets: all-linear}\n" \
	"    gradientCheckpointing: true\n" \
	"  duration:\n    tokens: 1000000000\n"

static int
setup(void **state)
{
	struct mf_error err;

	(void)state;
	if (shipped_data(NULL, &models) != 0)
		return -1;
	if (mf_cat_parse(CATALOG, strlen(CATALOG), "t.yaml", &cat, &err) !=
	    MF_OK) {
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
	mf_cat_unref(cat);
	return 0;
}

/* text's job, read as an admit reads it. */
static struct mf_job
job_of(const char *text, struct mf_doc **doc)
{
	struct mf_error err;
	struct mf_job job;

	if (mf_doc_parse(text, strlen(text), MF_DOC_YAML, doc, &err) != MF_OK ||
	    mf_job_read(mf_doc_root(*doc), "", models, &job, &err) != MF_OK)
		fail_msg("%s", MSG(&err));
	return job;
}

/* The job placed with obs (NULL: none). */
static struct mf_decision
admit(const struct mf_observed *obs)
{
	struct mf_decision d;
	struct mf_error err;
	struct mf_doc *doc;
	struct mf_job job = job_of(JOB, &doc);

	job.observed = obs;
	if (mf_place(&job, cat, &d, &err) != MF_OK)
		fail_msg("%s", MSG(&err));
	mf_doc_free(doc);
	assert_true(d.admitted);
	return d;
}

static void
near(double got, double want, double rel)
{
	if (fabs(got - want) > rel * fabs(want))
		fail_msg("%.9g, not %.9g", got, want);
}

/* One card's observations: runs, a peak (-1: none), tokens/s (0: none). */
static struct mf_observed
observed(const char *card, int64_t runs, int64_t peak, int device, double tps)
{
	struct mf_observed o;

	memset(&o, 0, sizeof(o));
	o.n = 1;
	snprintf(o.card[0].card, sizeof(o.card[0].card), "%s", card);
	o.card[0].runs = runs;
	o.card[0].peak = peak;
	o.card[0].device = device;
	o.card[0].tokens_per_second = tps;
	return o;
}

/* The same job without observations: no "observed", the estimate. */
static void
test_observed_none(void **state)
{
	struct mf_decision d = admit(NULL);

	(void)state;
	assert_int_equal(on(&d, "REF")->observed.runs, 0);
	assert_int_equal(on(&d, "REF")->need, on(&d, "HALF")->need);
}

/* A peak 25% above the estimate raises REF's need to it, and HALF's by
 * the same ratio. */
static void
test_observed_peak_higher(void **state)
{
	struct mf_decision e = admit(NULL);
	int64_t est = on(&e, "REF")->need;
	struct mf_observed o = observed("REF", 3, est + est / 4, 0, 0);
	struct mf_decision d = admit(&o);
	const struct mf_placement *ref = on(&d, "REF"), *half = on(&d, "HALF");

	(void)state;
	assert_int_equal(ref->observed.runs, 3);
	assert_true(ref->observed.here);
	assert_int_equal(ref->observed.estimate, est);
	near((double)ref->need, (double)est * 1.25, 1e-9);
	assert_false(half->observed.here);
	assert_int_equal(half->observed.estimate, est);
	near((double)half->need, (double)est * 1.25, 1e-9);
	near(half->observed.memory, 1.25, 1e-9);
	/* No speed observed: the hours stay the model's. */
	near(ref->hours, on(&e, "REF")->hours, 1e-12);
}

/* A peak 30% below lowers REF's need by 30%; HALF's by no more than
 * 10%. */
static void
test_observed_peak_lower(void **state)
{
	struct mf_decision e = admit(NULL);
	int64_t est = on(&e, "REF")->need;
	struct mf_observed o =
	    observed("REF", 1, (int64_t)((double)est * 0.7), 0, 0);
	struct mf_decision d = admit(&o);

	(void)state;
	near((double)on(&d, "REF")->need, (double)est * 0.7, 1e-9);
	near((double)on(&d, "HALF")->need, (double)est * 0.9, 1e-9);
	near(on(&d, "HALF")->observed.memory, 0.9, 1e-12);
}

/* A device figure (DCGM) is the whole card's: below the estimate it
 * lowers nothing, on its own card or the others; above it, it raises
 * both. */
static void
test_observed_device_raises_only(void **state)
{
	struct mf_decision e = admit(NULL);
	int64_t est = on(&e, "REF")->need;
	struct mf_observed o =
	    observed("REF", 1, (int64_t)((double)est * 0.7), 1, 0);
	struct mf_decision d = admit(&o);
	struct mf_observed hi =
	    observed("REF", 1, (int64_t)((double)est * 1.2), 1, 0);
	struct mf_decision u = admit(&hi);

	(void)state;
	assert_false(on(&d, "REF")->observed.device);
	assert_int_equal(on(&d, "REF")->need, est);
	assert_int_equal(on(&d, "HALF")->need, est);
	assert_true(on(&u, "REF")->observed.device);
	near((double)on(&u, "REF")->need, (double)est * 1.2, 1e-9);
	near((double)on(&u, "HALF")->need, (double)est * 1.2, 1e-9);
}

/* Twice the modelled tokens/s on REF: its hours halve, and HALF's by the
 * same ratio; the model's hours stay beside them. */
static void
test_observed_speed_sets_hours(void **state)
{
	struct mf_decision e = admit(NULL);
	const struct mf_placement *eref = on(&e, "REF");
	double model = 1e9 / (eref->hours * 3600);
	struct mf_observed o = observed("REF", 2, -1, 0, 2 * model);
	struct mf_decision d = admit(&o);

	(void)state;
	near(on(&d, "REF")->hours, eref->hours / 2, 1e-9);
	near(on(&d, "REF")->observed.est_hours, eref->hours, 1e-9);
	near(on(&d, "HALF")->hours, on(&e, "HALF")->hours / 2, 1e-9);
	near(on(&d, "HALF")->cost, on(&e, "HALF")->cost / 2, 1e-9);
	/* No peak observed: the need stays the estimate's. */
	assert_int_equal(on(&d, "REF")->need, eref->need);
}

/* The job without checkpointing, on one GPU, which admission may turn
 * on by itself. */
#define PLAIN \
	"apiVersion: memfloor.dev/v1\nkind: Job\nmetadata:\n  name: t\n" \
	"spec:\n  model:\n    name: meta-llama/Llama-3.1-8B\n" \
	"  workload:\n    sequenceLength: 2048\n" \
	"    method: lora\n    lora: {rank: 16, targets: all-linear}\n" \
	"  allowedFixes: [checkpointing]\n"

/* What the runs of the job as written measured, for the api: a torch
 * peak of obs_peak on ONE. */
static int64_t obs_peak;

static void
runs_on_one(const char *fp, struct mf_observed *out)
{
	struct mf_observed o = observed("ONE", 2, obs_peak, 0, 0);

	(void)fp;
	out->n = o.n;
	out->card[0] = o.card[0];
}

/* The need of text's job on REF, alone. */
static int64_t
need_of(const char *text)
{
	struct mf_decision d;
	struct mf_error err;
	struct mf_doc *doc;
	struct mf_job job = job_of(text, &doc);

	if (mf_place(&job, cat, &d, &err) != MF_OK)
		fail_msg("%s", MSG(&err));
	mf_doc_free(doc);
	return on(&d, "REF")->need;
}

/*
 * An observation posted with its job is tied to the fingerprint its admit
 * answers (mf_api_admit_fingerprint), also where what the runs measured
 * decides the placement: one card holds the job with checkpointing but
 * not as written, so on the estimate alone it is placed with the fix, and
 * with a peak of its own runs that fits, as written.
 */
static void
test_observed_post_ties_to_the_admission(void **state)
{
	int64_t plain = need_of(PLAIN), ckpt = need_of(JOB);
	double h = cat->headroom;
	int64_t gib = mf_floor_for(plain, h) / (INT64_C(1) << 30) - 1;
	char text[256], body[512], none[MF_FP_HEX], seen[MF_FP_HEX],
	    written[MF_FP_HEX];
	struct mf_observation o;
	int named = -1;
	struct mf_catalog *one;
	struct mf_answer ans;
	struct mf_error err;
	struct mf_doc *doc;
	struct mf_job job = job_of(PLAIN, &doc);
	struct mf_api api;

	(void)state;
	/* ONE: a GiB short of the job as written, room for it with the fix. */
	assert_true(mf_floor_for(ckpt, h) <= gib << 30);
	snprintf(text, sizeof(text),
	    "apiVersion: memfloor.dev/v1\nkind: GpuCatalog\ngpus:\n"
	    "  - name: ONE\n    memory: %lldGi\n    hourlyPrice: 1\n"
	    "    relativeThroughput: 1\n",
	    (long long)gib);
	if (mf_cat_parse(text, strlen(text), "one.yaml", &one, &err) != MF_OK)
		fail_msg("%s", MSG(&err));
	mf_fp_job(&job, 0, job.count, written);
	api = (struct mf_api){ one, models, NULL, NULL };
	assert_int_equal(mf_api_admit_fingerprint(&api, &job, none, &err),
	    MF_OK);
	assert_string_not_equal(none, written);
	obs_peak = ckpt;
	api.observed = runs_on_one;
	assert_int_equal(mf_api_admit_fingerprint(&api, &job, seen, &err),
	    MF_OK);
	assert_string_equal(seen, written);
	mf_api_admit(&api, PLAIN, strlen(PLAIN), MF_DOC_YAML, MF_OUT_JSON,
	    &ans);
	assert_string_equal(ans.fingerprint, seen);
	/* POST /v1/observations with the job: the same fingerprint. */
	snprintf(body, sizeof(body),
	    "job:\n  apiVersion: memfloor.dev/v1\n  kind: Job\n"
	    "  metadata: {name: t}\n"
	    "  spec:\n    model: {name: meta-llama/Llama-3.1-8B}\n"
	    "    workload:\n      sequenceLength: 2048\n"
	    "      method: lora\n"
	    "      lora: {rank: 16, targets: all-linear}\n"
	    "    allowedFixes: [checkpointing]\n"
	    "card: ONE\ncount: 1\npeakReservedBytes: %lld\nsource: torch\n",
	    (long long)ckpt);
	assert_int_equal(mf_obs_read(body, strlen(body), MF_DOC_YAML, &api, &o,
	                     &named, &err),
	    MF_OK);
	assert_int_equal(named, 0);
	assert_string_equal(o.fingerprint, seen);
	mf_answer_free(&ans);
	mf_doc_free(doc);
	mf_cat_unref(one);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_observed_none),
		cmocka_unit_test(test_observed_peak_higher),
		cmocka_unit_test(test_observed_peak_lower),
		cmocka_unit_test(test_observed_device_raises_only),
		cmocka_unit_test(test_observed_speed_sets_hours),
		cmocka_unit_test(test_observed_post_ties_to_the_admission),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
