/*
 * prom_parse.c: an answer of Prometheus's /api/v1/query, an instant
 * vector, into the series the reader groups (prometheus.h), through the
 * library's JSON reader.  The answer's form is Prometheus's HTTP API:
 * {"status": "success", "data": {"resultType": "vector", "result":
 * [{"metric": {LABEL: VALUE, ...}, "value": [TIME, "NUMBER"]}, ...]}},
 * or {"status": "error", "errorType": ..., "error": ...}.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../admission/base/str.h"
#include "../admission/doc/doc.h"
#include "prometheus.h"

static enum mf_rc
bad(struct mf_error *err, const char *field, const char *what)
{
	return mf_error_set(err, MF_EINVAL, field, 0, 0, "%s", what);
}

/* The text of label key in metric, or NULL when it has none (or not a
 * string). */
static const char *
label(const struct mf_node *metric, const char *key)
{
	const struct mf_node *n = mf_node_get(metric, key);

	return n != NULL && n->type == MF_NODE_STR ? n->text : NULL;
}

/* v into dst of size bytes: 0, or -1 when v is absent, empty or too
 * long (a label the reader does not know to cut). */
static int
take(char *dst, size_t size, const char *v)
{
	if (v == NULL || v[0] == '\0' || strlen(v) >= size)
		return -1;
	mf_copy(dst, size, v);
	return 0;
}

/* Each part's label names, NULL-terminated, in prometheus.h's order. */
#define NAME(s) s,
static const char *const ns_labels[] = { MFD_PROM_NS_LABELS(NAME) NULL };
static const char *const pod_labels[] = { MFD_PROM_POD_LABELS(NAME) NULL };
static const char *const host_labels[] = { MFD_PROM_HOST_LABELS(NAME) NULL };
#undef NAME

/* The text of the first of names that metric has, or NULL. */
static const char *
first(const struct mf_node *metric, const char *const *names)
{
	const char *v = NULL;

	for (; v == NULL && *names != NULL; names++)
		v = label(metric, *names);
	return v;
}

/* The labels of metric into s: 0, or -1 when one the reader needs is
 * missing or does not fit. */
static int
read_labels(const struct mf_node *metric, struct mfd_prom_series *s)
{
	const char *fp = label(metric, MFD_PROM_FP_LABEL);
	const char *ns = first(metric, ns_labels);
	const char *host = first(metric, host_labels);

	if (fp == NULL || !mf_fp_valid(fp) ||
	    take(s->fingerprint, sizeof(s->fingerprint), fp) ||
	    take(s->model, sizeof(s->model),
	        label(metric, MFD_PROM_MODEL_LABEL)) ||
	    take(s->pod, sizeof(s->pod), first(metric, pod_labels)))
		return -1;
	s->ns[0] = '\0';
	s->host[0] = '\0';
	if (ns != NULL && take(s->ns, sizeof(s->ns), ns))
		return -1;
	if (host != NULL && take(s->host, sizeof(s->host), host))
		return -1;
	return 0;
}

/* A sample's value as Prometheus writes it, a string ("61234", "NaN",
 * "+Inf"): 0 with *out finite and >= 0, else -1. */
static int
read_value(const char *text, double *out)
{
	char *end;
	double v = strtod(text, &end);

	if (end == text || *end != '\0' || !isfinite(v) || v < 0)
		return -1;
	*out = v;
	return 0;
}

/* One element of the result: MF_OK with *keep 1 when it is a series the
 * reader groups, 0 when it is to be left out; MF_EINVAL when it is not a
 * series at all. */
static enum mf_rc
read_series(const struct mf_node *e, struct mfd_prom_series *s, int *keep,
    struct mf_error *err)
{
	const struct mf_node *metric = mf_node_get(e, "metric");
	const struct mf_node *value = mf_node_get(e, "value");
	const struct mf_node *t, *v;

	if (e->type != MF_NODE_MAP || metric == NULL ||
	    metric->type != MF_NODE_MAP || value == NULL ||
	    value->type != MF_NODE_SEQ || value->len != 2)
		return bad(err, "data.result",
		    "holds an element that is not {metric, value: [time, value]}");
	t = value->child;
	v = t->next;
	if (t->type != MF_NODE_NUM || v->type != MF_NODE_STR)
		return bad(err, "data.result",
		    "holds a value that is not [time, \"number\"]");
	*keep = read_labels(metric, s) == 0 &&
	    read_value(v->text, &s->value) == 0 &&
	    read_value(t->text, &s->at) == 0;
	return MF_OK;
}

/* Prometheus's own error, or what the answer is instead of a vector. */
static enum mf_rc
not_vector(const struct mf_node *root, struct mf_error *err)
{
	const struct mf_node *data = mf_node_get(root, "data");
	const char *status = label(root, "status");
	const char *type = label(data, "resultType");
	const char *why = label(root, "error");

	if (status == NULL)
		return bad(err, "status",
		    "is missing: not an answer of Prometheus's API");
	if (strcmp(status, "success") != 0)
		return mf_error_set(err, MF_EINVAL, "error", 0, 0,
		    "Prometheus answered %.20s: %.200s", status,
		    why ? why : "(no error given)");
	if (type == NULL || strcmp(type, "vector") != 0)
		return mf_error_set(err, MF_EINVAL, "data.resultType", 0, 0,
		    "'%.20s' is not an instant vector", type ? type : "(none)");
	return bad(err, "data.result", "is not a list");
}

/* The vector's series of result into list[0..*n); MF_OK or the error. */
static enum mf_rc
read_result(const struct mf_node *result, struct mfd_prom_series *list,
    size_t *n, size_t *skipped, struct mf_error *err)
{
	const struct mf_node *e;
	int keep = 0;

	*n = 0;
	*skipped = 0;
	for (e = result->child; e != NULL; e = e->next) {
		if (read_series(e, &list[*n], &keep, err) != MF_OK)
			return MF_EINVAL;
		if (keep)
			(*n)++;
		else
			(*skipped)++;
	}
	return MF_OK;
}

/* data.result of root, when root is a successful vector answer. */
static const struct mf_node *
vector_of(const struct mf_node *root)
{
	const struct mf_node *data = mf_node_get(root, "data");
	const char *status = label(root, "status");
	const char *type = label(data, "resultType");
	const struct mf_node *result = mf_node_get(data, "result");

	if (status == NULL || strcmp(status, "success") != 0 || type == NULL ||
	    strcmp(type, "vector") != 0 || result == NULL ||
	    result->type != MF_NODE_SEQ)
		return NULL;
	return result;
}

enum mf_rc
mfd_prom_parse(const char *body, size_t len, struct mfd_prom_series **out,
    size_t *n, size_t *skipped, struct mf_error *err)
{
	struct mfd_prom_series *list = NULL;
	const struct mf_node *root, *result;
	struct mf_doc *doc = NULL;
	size_t k = 0, left = 0;
	enum mf_rc rc;

	rc = mf_doc_parse(body, len, MF_DOC_JSON, &doc, err);
	if (rc != MF_OK)
		return rc;
	root = mf_doc_root(doc);
	result =
	    root != NULL && root->type == MF_NODE_MAP ? vector_of(root) : NULL;
	if (result == NULL)
		rc = root != NULL && root->type == MF_NODE_MAP ?
		    not_vector(root, err) :
		    bad(err, NULL, "the answer is not a JSON object");
	else if (result->len > MFD_PROM_SERIES_MAX)
		rc = mf_error_set(err, MF_ETOOBIG, "data.result", 0, 0,
		    "%zu series: more than %d", result->len,
		    MFD_PROM_SERIES_MAX);
	else if ((list = calloc(result->len ? result->len : 1,
	              sizeof(*list))) == NULL)
		rc = mf_error_set(err, MF_ENOMEM, NULL, 0, 0, "out of memory");
	else
		rc = read_result(result, list, &k, &left, err);
	mf_doc_free(doc);
	if (rc != MF_OK) {
		free(list);
		return rc;
	}
	*out = list;
	*n = k;
	*skipped = left;
	return MF_OK;
}
