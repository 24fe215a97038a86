/*
 * fuzz_prometheus.c: an answer of Prometheus's /api/v1/query (design 23's
 * reader, daemon/prom_parse.c) from arbitrary bytes.
 *
 * Seeds: tests/fuzz/corpus/prometheus/ (a vector of peaks, one of last
 * samples in the older label spellings with a series left out, Prometheus's
 * error, a matrix, bytes that are not JSON, a series whose namespace and
 * pod are the target's beside exported_namespace and exported_pod).  Every
 * input either fails with an error that says something, or reads into series
 * whose parts agree: a fingerprint of 32 hex digits, a GPU model and a pod that
 * are not empty, a finite value and time of at least 0, no more than the cap.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prometheus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int ok)
{
	if (!ok)
		abort();
}

static void
check_series(const struct mfd_prom_series *s)
{
	check(mf_fp_valid(s->fingerprint));
	check(s->model[0] != '\0' && s->pod[0] != '\0');
	check(isfinite(s->value) && s->value >= 0);
	check(isfinite(s->at) && s->at >= 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mfd_prom_series *list = NULL;
	struct mf_error err;
	size_t n = 0, skipped = 0;

	memset(&err, 0, sizeof(err));
	if (mfd_prom_parse((const char *)data, size, &list, &n, &skipped,
	        &err) != MF_OK) {
		check(err.text[0] != '\0');
		check(list == NULL);
		return 0;
	}
	check(n + skipped <= MFD_PROM_SERIES_MAX);
	for (size_t i = 0; i < n; i++)
		check_series(&list[i]);
	free(list);
	return 0;
}
