/*
 * bench_review: one AdmissionReview answered N times in process, and the
 * admit of a manifest N times, for profiles of the review path
 * (valgrind --tool=callgrind build/bench_review REVIEW MANIFEST N) and
 * its time per call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "model/model.h"
#include "review/review.h"
#include "catalog.h"
#include "files.h"
#include "msg.h"

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *
read_or_die(const char *path, size_t *len)
{
	char *s = slurp(path, len);

	if (s == NULL) {
		fprintf(stderr, "bench_review: cannot read %s\n", path);
		exit(1);
	}
	return s;
}

/* Each call answers body n times; the seconds per call. */
static double
run(const struct mf_api *api, const char *body, size_t len, long n, int review)
{
	struct mf_answer ans;
	double t0 = now();

	for (long i = 0; i < n; i++) {
		if (review)
			mf_api_review(api, body, len, MF_DOC_JSON, MF_OUT_JSON,
			    &ans);
		else
			mf_api_admit(api, body, len, MF_DOC_AUTO, MF_OUT_JSON,
			    &ans);
		if (ans.kind != MF_ANS_OK && ans.kind != MF_ANS_REJECTED) {
			fprintf(stderr, "bench_review: %.*s\n", (int)ans.len,
			    ans.body);
			exit(1);
		}
		mf_answer_free(&ans);
	}
	return (now() - t0) / (double)n;
}

int
main(int argc, char **argv)
{
	struct mf_catalog *cat = NULL;
	struct mf_models *models = NULL;
	struct mf_error err;
	struct mf_api api;
	char path[512], *review, *manifest;
	size_t rlen = 0, mlen = 0;
	long n;

	if (argc != 4) {
		fprintf(stderr, "usage: bench_review REVIEW MANIFEST N\n");
		return 2;
	}
	n = strtol(argv[3], NULL, 10);
	if (mf_cat_load(top_path(path, sizeof(path), "catalog/gpus.yaml"), &cat,
	        &err) != MF_OK ||
	    mf_models_load(top_path(path, sizeof(path), "catalog/models"),
	        &models, &err) != MF_OK) {
		fprintf(stderr, "bench_review: %s\n", MSG(&err));
		return 1;
	}
	memset(&api, 0, sizeof(api));
	api.cat = cat;
	api.models = models;
	review = read_or_die(argv[1], &rlen);
	manifest = read_or_die(argv[2], &mlen);
	printf("admission-review %zu bytes: %.2f us\n", rlen,
	    1e6 * run(&api, review, rlen, n, 1));
	printf("admit %zu bytes:            %.2f us\n", mlen,
	    1e6 * run(&api, manifest, mlen, n, 0));
	free(review);
	free(manifest);
	mf_models_free(models);
	mf_cat_unref(cat);
	return 0;
}
