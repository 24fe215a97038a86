/*
 * test_prometheus.c: answers of Prometheus's /api/v1/query read by the
 * reader's parser (daemon/prom_parse.c): the series it groups, those it
 * leaves out, and the answers it refuses.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prometheus.h"

#define FP "0123456789abcdef0123456789abcdef"
#define HEAD \
	"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
#define TAIL "]}}"

static enum mf_rc
parse(const char *body, struct mfd_prom_series **list, size_t *n,
    size_t *skipped, struct mf_error *err)
{
	memset(err, 0, sizeof(*err));
	*list = NULL;
	*n = *skipped = 0;
	return mfd_prom_parse(body, strlen(body), list, n, skipped, err);
}

/* dcgm-exporter's labels (Hostname, namespace, pod): one series. */
static void
test_prom_parse_series(void **state)
{
	static const char body[] = HEAD
	    "{\"metric\":{\"Hostname\":\"node1\",\"memfloor_dev_fingerprint\":\"" FP
	    "\",\"modelName\":\"NVIDIA H100 80GB HBM3\",\"namespace\":\"default\","
	    "\"pod\":\"job-x\",\"gpu\":\"0\"},\"value\":[1764680000.5,\"61234\"]}" TAIL;
	struct mfd_prom_series *list;
	struct mf_error err;
	size_t n, skipped;

	(void)state;
	assert_int_equal(parse(body, &list, &n, &skipped, &err), MF_OK);
	assert_int_equal(n, 1);
	assert_int_equal(skipped, 0);
	assert_string_equal(list[0].fingerprint, FP);
	assert_string_equal(list[0].model, "NVIDIA H100 80GB HBM3");
	assert_string_equal(list[0].ns, "default");
	assert_string_equal(list[0].pod, "job-x");
	assert_string_equal(list[0].host, "node1");
	assert_true(list[0].value == 61234.0);
	assert_true(list[0].at == 1764680000.5);
	free(list);
}

/* The older spellings (hostname, pod_namespace, pod_name) read the same;
 * a series without a fingerprint, or of value NaN, is left out. */
static void
test_prom_parse_spellings_and_left_out(void **state)
{
	static const char body[] = HEAD
	    "{\"metric\":{\"hostname\":\"node2\",\"memfloor_dev_fingerprint\":\"" FP
	    "\",\"modelName\":\"NVIDIA L4\",\"pod_namespace\":\"ml\","
	    "\"pod_name\":\"t-0\"},\"value\":[1,\"2.5e3\"]},"
	    "{\"metric\":{\"modelName\":\"NVIDIA L4\",\"pod\":\"p\"},"
	    "\"value\":[1,\"7\"]},"
	    "{\"metric\":{\"memfloor_dev_fingerprint\":\"" FP "\","
	    "\"modelName\":\"NVIDIA L4\",\"pod\":\"p\"},\"value\":[1,\"NaN\"]},"
	    "{\"metric\":{\"memfloor_dev_fingerprint\":\"xyz\","
	    "\"modelName\":\"NVIDIA L4\",\"pod\":\"p\"},\"value\":[1,\"7\"]}" TAIL;
	struct mfd_prom_series *list;
	struct mf_error err;
	size_t n, skipped;

	(void)state;
	assert_int_equal(parse(body, &list, &n, &skipped, &err), MF_OK);
	assert_int_equal(n, 1);
	assert_int_equal(skipped, 3);
	assert_string_equal(list[0].ns, "ml");
	assert_string_equal(list[0].pod, "t-0");
	assert_string_equal(list[0].host, "node2");
	assert_true(list[0].value == 2500.0);
	free(list);
}

/* Scraped with honor_labels false, a ServiceMonitor's default: namespace
 * and pod are the dcgm-exporter pod's, the workload's exported_namespace
 * and exported_pod, and those are read; beside pod_namespace and
 * pod_name (--use-old-namespace) namespace and pod are the target's too. */
static void
test_prom_parse_exported_labels(void **state)
{
	static const char body[] = HEAD
	    "{\"metric\":{\"Hostname\":\"node1\",\"memfloor_dev_fingerprint\":\"" FP
	    "\",\"modelName\":\"NVIDIA H100 80GB HBM3\","
	    "\"namespace\":\"gpu-operator\",\"pod\":\"nvidia-dcgm-exporter-7x2kq\","
	    "\"container\":\"nvidia-dcgm-exporter\",\"exported_namespace\":\"ml\","
	    "\"exported_pod\":\"train-0\",\"exported_container\":\"train\"},"
	    "\"value\":[1,\"61234\"]},"
	    "{\"metric\":{\"memfloor_dev_fingerprint\":\"" FP "\","
	    "\"modelName\":\"NVIDIA L4\",\"namespace\":\"gpu-operator\","
	    "\"pod\":\"nvidia-dcgm-exporter-9p4zt\",\"pod_namespace\":\"ml\","
	    "\"pod_name\":\"train-1\"},\"value\":[1,\"7\"]}" TAIL;
	struct mfd_prom_series *list;
	struct mf_error err;
	size_t n, skipped;

	(void)state;
	assert_int_equal(parse(body, &list, &n, &skipped, &err), MF_OK);
	assert_int_equal(n, 2);
	assert_int_equal(skipped, 0);
	assert_string_equal(list[0].ns, "ml");
	assert_string_equal(list[0].pod, "train-0");
	assert_string_equal(list[0].host, "node1");
	assert_string_equal(list[1].ns, "ml");
	assert_string_equal(list[1].pod, "train-1");
	free(list);
}

/* Prometheus's own error is the text; a matrix, garbage and an element
 * that is not a series are refused, and nothing is handed back. */
static void
test_prom_parse_refused(void **state)
{
	static const char *const bodies[] = {
		"{\"status\":\"error\",\"errorType\":\"bad_data\","
		"\"error\":\"parse error\"}",
		"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
		"\"result\":[]}}",
		"<html>not json</html>",
		"[1, 2]",
		HEAD "{\"metric\":{},\"value\":[1]}" TAIL,
		HEAD "{\"metric\":{},\"value\":[1, 2]}" TAIL,
	};
	struct mfd_prom_series *list;
	struct mf_error err;
	size_t n, skipped;

	(void)state;
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		assert_int_equal(parse(bodies[i], &list, &n, &skipped, &err),
		    MF_EINVAL);
		assert_null(list);
		assert_true(err.text[0] != '\0');
	}
	parse(bodies[0], &list, &n, &skipped, &err);
	assert_non_null(strstr(err.text, "parse error"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prom_parse_series),
		cmocka_unit_test(test_prom_parse_spellings_and_left_out),
		cmocka_unit_test(test_prom_parse_exported_labels),
		cmocka_unit_test(test_prom_parse_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
