/*
 * bench_place: estimates and placements per second, in process.
 *
 * The placement benchmark runs on generated catalogues of 10,000 GPU
 * types with every fix allowed, and reports against a reference run in
 * the same invocation: the same catalogue with a plain minMemory job (one
 * plan, no fixes), i.e. one scan of the cards.  The first catalogue has
 * maxCount 1 to 8, the second 8 GPUs a node on up to 128 nodes, maxCount
 * 1024, where Llama 3.1 70B is also placed: few cards hold it on few GPUs,
 * so most try many counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "doc/doc.h"
#include "manifest/manifest.h"
#include "place/place.h"
#include "catalog.h"
#include "msg.h"

#define NGPUS 10000

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Cards from 8 to 200 GB at prices and speeds that keep no card dominant.
 * With nodes, every card has 8 GPUs a node and up to 128 nodes: maxCount
 * (gpusPerNode x maxNodes) 1024; else maxCount 1 to 8.
 */
static struct mf_catalog *
generate(int nodes)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;
	struct mf_buf b;

	mf_buf_init(&b, 64u << 20);
	mf_buf_printf(&b,
	    "apiVersion: memfloor.dev/v1\nkind: GpuCatalog\n"
	    "gpus:\n");
	srand(1);
	for (int i = 0; i < NGPUS; i++) {
		int gb = 8 + rand() % 193;
		double thr = 0.05 + (double)(rand() % 2500) / 1000.0;
		double price = thr * (0.8 + (double)(rand() % 100) / 100.0) *
		    (1 + gb / 100.0);
		int shift = rand();

		mf_buf_printf(&b,
		    "  - {name: gpu-%05d, memory: %dG, "
		    "hourlyPrice: %.3f, relativeThroughput: %.3f, ",
		    i, gb, price, thr);
		if (nodes)
			mf_buf_printf(&b, "gpusPerNode: 8, maxNodes: 128}\n");
		else
			mf_buf_printf(&b, "maxCount: %d}\n", 1 << (shift % 4));
	}
	if (b.rc != MF_OK ||
	    mf_cat_parse(b.data, b.len, "generated", &cat, &err) != MF_OK) {
		fprintf(stderr, "bench: catalogue: %s\n", MSG(&err));
		exit(1);
	}
	mf_buf_free(&b);
	return cat;
}

static void
read_job(const char *text, const struct mf_models *models, struct mf_doc **doc,
    struct mf_job *job)
{
	struct mf_error err;

	if (mf_doc_parse(text, strlen(text), MF_DOC_YAML, doc, &err) != MF_OK ||
	    mf_job_read(mf_doc_root(*doc), "", models, job, &err) != MF_OK) {
		fprintf(stderr, "bench: job: %s\n", MSG(&err));
		exit(1);
	}
}

/* Seconds per call of mf_place, over at least min_seconds. */
static double
time_place(const struct mf_job *job, const struct mf_catalog *cat,
    double min_seconds, int *admitted)
{
	struct mf_decision d;
	struct mf_error err;
	double t0 = now(), t;
	long n = 0;

	do {
		if (mf_place(job, cat, &d, &err) != MF_OK)
			exit(1);
		n++;
		t = now() - t0;
	} while (t < min_seconds);
	*admitted = d.admitted;
	return t / (double)n;
}

/* A job timed against the minMemory reference, and its row's name. */
struct row {
	const char *name;
	const struct mf_job *job;
};

/* The reference, then each row on the same catalogue as a ratio to it. */
static void
report(const char *what, const struct mf_job *floor_job, const struct row *rows,
    size_t n, const struct mf_catalog *cat)
{
	double ref_s, fix_s;
	char label[80];
	int admitted, all = 1;

	ref_s = time_place(floor_job, cat, 2.0, &admitted);
	all &= admitted;
	snprintf(label, sizeof(label),
	    "placement, 10,000 GPUs%s, minMemory:", what);
	printf("%-62s %9.1f us  (reference)\n", label, ref_s * 1e6);
	for (size_t i = 0; i < n; i++) {
		fix_s = time_place(rows[i].job, cat, 2.0, &admitted);
		all &= admitted;
		snprintf(label, sizeof(label),
		    "placement, 10,000 GPUs%s, %s:", what, rows[i].name);
		printf(
		    "%-62s %9.1f us  (%.2fx the reference; target < 1000 us: "
		    "%s)\n",
		    label, fix_s * 1e6, fix_s / ref_s,
		    fix_s < 1e-3 ? "met" : "missed");
	}
	if (!all)
		printf("warning: a benchmark job was not admitted\n");
}

int
main(void)
{
	static const char full[] =
	    "apiVersion: memfloor.dev/v1\nkind: Job\n"
	    "metadata: {name: bench}\nspec:\n  model: {name: "
	    "meta-llama/Llama-3.1-8B}\n  workload: {sequenceLength: 4096}\n"
	    "  duration: {referenceHours: 12}\n  allowedFixes: [sdpa, "
	    "microbatch, autocast, checkpointing, adam8bit, lora, qlora, "
	    "fsdp]\n";
	static const char big[] =
	    "apiVersion: memfloor.dev/v1\nkind: Job\n"
	    "metadata: {name: bench}\nspec:\n  model: {name: "
	    "meta-llama/Llama-3.1-70B}\n  workload: {sequenceLength: 4096}\n"
	    "  duration: {referenceHours: 12}\n  allowedFixes: [sdpa, "
	    "microbatch, autocast, checkpointing, adam8bit, lora, qlora, "
	    "fsdp]\n";
	static const char serve[] =
	    "apiVersion: memfloor.dev/v1\nkind: Job\n"
	    "metadata: {name: bench}\nspec:\n  model: {name: "
	    "meta-llama/Llama-3.1-70B}\n  workload: {kind: inference, "
	    "server: vllm, concurrency: 64, contextLength: 32768}\n"
	    "  duration: {referenceHours: 12}\n  allowedFixes: [kvfp8, int8, "
	    "int4, tensor]\n";
	static const char floor[] =
	    "apiVersion: memfloor.dev/v1\nkind: Job\n"
	    "metadata: {name: bench}\nspec:\n  resources: {gpu: {minMemory: "
	    "88Gi}}\n  duration: {referenceHours: 12}\n";
	struct mf_models *models;
	struct mf_catalog *cat, *nodes;
	struct mf_doc *d1, *d2, *d3, *d4;
	struct mf_job fixes_job, floor_job, big_job, serve_job;
	struct mf_estimate est;
	struct mf_error err;
	double t0, est_s;
	long n = 0;

	if (mf_models_load("catalog/models", &models, &err) != MF_OK) {
		fprintf(stderr, "bench: %s (run from the repo root)\n",
		    MSG(&err));
		return 1;
	}
	cat = generate(0);
	nodes = generate(1);
	read_job(full, models, &d1, &fixes_job);
	read_job(floor, models, &d2, &floor_job);
	read_job(big, models, &d3, &big_job);
	read_job(serve, models, &d4, &serve_job);
	t0 = now();
	do {
		for (int i = 0; i < 1000; i++, n++)
			mf_est_compute(&fixes_job.model, &fixes_job.work, &est);
	} while (now() - t0 < 1.0);
	est_s = (now() - t0) / (double)n;
	printf("%-62s %12.0f\n", "estimates per second:", 1 / est_s);
	const struct row one[] = { { "all fixes", &fixes_job } };
	const struct row many[] = { { "all fixes", &fixes_job },
		{ "70B all fixes", &big_job },
		{ "70B served, all fixes", &serve_job } };

	report("", &floor_job, one, 1, cat);
	report(", maxCount 1024", &floor_job, many, 3, nodes);
	mf_doc_free(d1);
	mf_doc_free(d2);
	mf_doc_free(d3);
	mf_doc_free(d4);
	mf_cat_unref(cat);
	mf_cat_unref(nodes);
	mf_models_free(models);
	return 0;
}
