#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "manifest.h"
#include "oom.h"
#include "place.h"
#include "qty.h"
#include "render.h"

static const char *const content_types[] = {
	[MF_OUT_JSON] = "application/json",
	[MF_OUT_YAML] = "application/yaml",
	[MF_OUT_TEXT] = "text/plain; charset=utf-8",
};

/* Bodies for when even building an answer failed. */
static char oom_json[] = "{\"error\":\"out of memory\",\"field\":null,"
                         "\"line\":null,\"column\":null}\n";

void
mf_answer_free(struct mf_answer *ans)
{
	free(ans->fetch_url);
	ans->fetch_url = NULL;
	if (ans->body != oom_json)
		free(ans->body);
	ans->body = NULL;
	ans->len = 0;
}

static void
answer_oom(struct mf_answer *ans)
{
	ans->kind = MF_ANS_INTERNAL;
	ans->body = oom_json;
	ans->len = sizeof(oom_json) - 1;
	ans->content_type = content_types[MF_OUT_JSON];
}

/* Text is read in a terminal: no control character from the input may
 * reach it but newline and tab. */
static void
scrub(char *text)
{
	for (char *p = text; p != NULL && *p != '\0'; p++)
		if (((unsigned char)*p < 0x20 && *p != '\n' && *p != '\t') ||
		    *p == 0x7f)
			*p = '?';
}

/* Take text (malloc'd, NULL for failure) as the body. */
static void
set_body(struct mf_answer *ans, enum mf_answer_kind kind, char *text,
    enum mf_output out)
{
	size_t len;

	if (text == NULL) {
		answer_oom(ans);
		return;
	}
	if (out == MF_OUT_TEXT)
		scrub(text);
	len = strlen(text);
	/* Every answer ends in a newline, so curl output reads cleanly. */
	if (len == 0 || text[len - 1] != '\n') {
		char *p = realloc(text, len + 2);

		if (p == NULL) {
			free(text);
			answer_oom(ans);
			return;
		}
		text = p;
		text[len++] = '\n';
		text[len] = '\0';
	}
	ans->kind = kind;
	ans->body = text;
	ans->len = len;
	ans->content_type = content_types[out];
}

void
mf_answer_text(struct mf_answer *ans, enum mf_answer_kind kind, char *text)
{
	set_body(ans, kind, text, MF_OUT_TEXT);
}

void
mf_answer_json(struct mf_answer *ans, enum mf_answer_kind kind, json_t *j,
    enum mf_output out)
{
	char *text;

	if (j == NULL) {
		answer_oom(ans);
		return;
	}
	if (out == MF_OUT_YAML)
		text = mf_yaml_dump(j);
	else
		text = json_dumps(j, MF_JSON_FLAGS);
	json_decref(j);
	set_body(ans, kind, text,
	    out == MF_OUT_YAML ? MF_OUT_YAML : MF_OUT_JSON);
}

/* Take JSON text (malloc'd, NULL for failure); YAML is converted. */
static void
answer_jtext(struct mf_answer *ans, enum mf_answer_kind kind, char *text,
    enum mf_output out)
{
	json_t *j;

	if (text == NULL || out != MF_OUT_YAML) {
		set_body(ans, kind, text, MF_OUT_JSON);
		return;
	}
	j = json_loads(text, 0, NULL);
	free(text);
	mf_answer_json(ans, kind, j, out);
}

static enum mf_answer_kind
kind_of(enum mf_rc rc)
{
	return rc == MF_ENOMEM ? MF_ANS_INTERNAL : MF_ANS_INVALID;
}

void
mf_answer_err(struct mf_answer *ans, enum mf_rc rc, const struct mf_error *err,
    enum mf_output out)
{
	if (out == MF_OUT_TEXT) {
		size_t n = strlen(err->message) + 8;
		char *t = malloc(n);

		if (t != NULL)
			snprintf(t, n, "error: %s", err->message);
		set_body(ans, kind_of(rc), t, MF_OUT_TEXT);
		return;
	}
	answer_jtext(ans, kind_of(rc), mf_json_error(err), out);
}

void
mf_api_error(enum mf_answer_kind kind, const char *field, const char *message,
    enum mf_output out, struct mf_answer *ans)
{
	struct mf_error err;

	memset(ans, 0, sizeof(*ans));
	mf_error_set(&err, MF_EINVAL, field, 0, 0, "%s", message);
	mf_answer_err(ans, MF_EINVAL, &err, out);
	if (ans->kind != MF_ANS_INTERNAL)
		ans->kind = kind;
}

/* The model of a configUrl job from the body the caller fetched. */
static enum mf_rc
read_fetched(const struct mf_api *api, struct mf_job *job,
    enum mf_answer_kind *kind, struct mf_error *err)
{
	struct mf_doc *doc = NULL;
	enum mf_rc rc;

	if (mf_doc_parse(api->config, api->config_len, MF_DOC_JSON, &doc,
	        NULL) != MF_OK) {
		*kind = MF_ANS_UPSTREAM;
		return mf_error_set(err, MF_EINVAL, "spec.model.configUrl", 0,
		    0, "%.200s: not a JSON config", job->config_url);
	}
	rc = mf_model_read(mf_doc_root(doc), "spec.model.configUrl",
	    &job->model, err);
	mf_doc_free(doc);
	return rc;
}

enum mf_rc
mf_api_estimator(const struct mf_api *api, struct mf_workload *w,
    struct mf_error *err)
{
	enum mf_estimator e = api->cat ? api->cat->estimator : MF_EST_PYTORCH;

	if (api->estimator != NULL &&
	    mf_estimator_parse(api->estimator, &e) != MF_OK)
		return mf_error_set(err, MF_EINVAL, "estimator", 0, 0,
		    "'%.40s' is not an estimator (pytorch or post)",
		    api->estimator);
	w->estimator = e;
	return MF_OK;
}

/* Parse body into a job; on failure ans holds the error answer. */
static struct mf_doc *
read_job(const struct mf_api *api, const char *body, size_t len,
    enum mf_doc_format fmt, enum mf_output out, struct mf_job *job,
    struct mf_answer *ans)
{
	enum mf_answer_kind kind = MF_ANS_INVALID;
	struct mf_doc *doc = NULL;
	struct mf_error err;
	enum mf_rc rc;

	memset(&err, 0, sizeof(err));
	rc = mf_doc_parse(body, len, fmt, &doc, &err);
	if (rc == MF_OK)
		rc = mf_job_read(mf_doc_root(doc), "", api->models, job, &err);
	if (rc == MF_OK)
		rc = mf_api_estimator(api, &job->work, &err);
	if (rc == MF_OK && job->model_source == MF_MODEL_URL) {
		if (api->config == NULL ||
		    strcmp(api->config_url, job->config_url) != 0) {
			ans->kind = MF_ANS_FETCH;
			ans->fetch_url = strdup(job->config_url);
			if (ans->fetch_url == NULL)
				answer_oom(ans);
			mf_doc_free(doc);
			return NULL;
		}
		rc = read_fetched(api, job, &kind, &err);
	}
	if (rc == MF_OK)
		return doc;
	mf_answer_err(ans, rc, &err, out);
	if (ans->kind == MF_ANS_INVALID)
		ans->kind = kind;
	mf_doc_free(doc);
	return NULL;
}

static void
note_job(struct mf_answer *ans, const struct mf_job *job)
{
	mf_copy(ans->job, sizeof(ans->job), job->name ? job->name : "");
}

void
mf_api_admit(const struct mf_api *api, const char *body, size_t len,
    enum mf_doc_format fmt, enum mf_output out, struct mf_answer *ans)
{
	struct mf_decision *d;
	struct mf_error err;
	struct mf_doc *doc;
	struct mf_job job;
	enum mf_answer_kind kind;

	memset(ans, 0, sizeof(*ans));
	doc = read_job(api, body, len, fmt, out, &job, ans);
	if (doc == NULL)
		return;
	note_job(ans, &job);
	d = malloc(sizeof(*d));
	if (d == NULL) {
		answer_oom(ans);
		goto out;
	}
	if (mf_place(&job, api->cat, d, &err) != MF_OK) {
		mf_answer_err(ans, MF_EINVAL, &err, out);
		goto out;
	}
	kind = d->admitted ? MF_ANS_OK : MF_ANS_REJECTED;
	if (out == MF_OUT_TEXT)
		mf_answer_text(ans, kind, mf_text_decision(&job, d));
	else
		answer_jtext(ans, kind, mf_json_decision(&job, d, api->cat),
		    out);
	ans->verdict = d->admitted ? MF_VERDICT_ADMITTED : MF_VERDICT_REJECTED;
out:
	free(d);
	mf_doc_free(doc);
}

void
mf_api_estimate(const struct mf_api *api, const char *body, size_t len,
    enum mf_doc_format fmt, enum mf_output out, struct mf_answer *ans)
{
	struct mf_estimate est;
	struct mf_doc *doc;
	struct mf_job job;
	struct mf_error err;

	memset(ans, 0, sizeof(*ans));
	doc = read_job(api, body, len, fmt, out, &job, ans);
	if (doc == NULL)
		return;
	note_job(ans, &job);
	if (job.model_source == MF_MODEL_NONE) {
		mf_error_set(&err, MF_EINVAL, "spec.model", 0, 0,
		    "is required "
		    "for an estimate");
		mf_answer_err(ans, MF_EINVAL, &err, out);
	} else if (mf_est_compute(&job.model, &job.work, &est) != MF_OK) {
		mf_error_set(&err, MF_EINVAL, "spec.workload", 0, 0,
		    "the "
		    "memory figures of this job overflow 63 bits");
		mf_answer_err(ans, MF_EINVAL, &err, out);
	} else if (out == MF_OUT_TEXT) {
		mf_answer_text(ans, MF_ANS_OK,
		    mf_text_estimate(&job, &est, api->cat));
	} else {
		answer_jtext(ans, MF_ANS_OK,
		    mf_json_estimate(&job, &est, api->cat), out);
	}
	mf_doc_free(doc);
}

void
mf_api_catalog(const struct mf_api *api, const char *min_memory,
    enum mf_output out, struct mf_answer *ans)
{
	enum mf_qty_format f = MF_QTY_BINARY;
	enum mf_qty_err qe;
	int64_t floor = 0;
	char msg[160];

	memset(ans, 0, sizeof(*ans));
	if (min_memory != NULL) {
		qe = mf_qty_parse_bytes(min_memory, strlen(min_memory), &floor,
		    &f);
		if (qe != MF_QTY_OK) {
			snprintf(msg, sizeof(msg), "'%.40s' %s", min_memory,
			    mf_qty_strerror(qe));
			mf_api_error(MF_ANS_INVALID, "minMemory", msg, out,
			    ans);
			return;
		}
	}
	if (out == MF_OUT_TEXT)
		mf_answer_text(ans, MF_ANS_OK,
		    mf_text_catalog(api->cat, floor));
	else
		answer_jtext(ans, MF_ANS_OK,
		    mf_json_catalog(api->cat, floor, (int)f), out);
}

void
mf_api_models(const struct mf_api *api, enum mf_output out,
    struct mf_answer *ans)
{
	memset(ans, 0, sizeof(*ans));
	if (out == MF_OUT_TEXT)
		mf_answer_text(ans, MF_ANS_OK, mf_text_models(api->models));
	else
		answer_jtext(ans, MF_ANS_OK, mf_json_models(api->models), out);
}

/* The JSON form of a diagnose body: message and, optionally, a job. */
static enum mf_rc
read_diagnose(const struct mf_api *api, const char *body, size_t len,
    struct mf_doc **doc, const char **msg, size_t *msglen, struct mf_job *job,
    int *has_job, struct mf_error *err)
{
	static const char *const known[] = { "message", "job", NULL };
	const struct mf_node *root, *n;
	enum mf_rc rc;

	rc = mf_doc_parse(body, len, MF_DOC_JSON, doc, err);
	if (rc != MF_OK)
		return rc;
	root = mf_doc_root(*doc);
	rc = mf_node_map(root, "", known, err);
	if (rc != MF_OK)
		return rc;
	n = mf_node_get(root, "message");
	if (n == NULL)
		return mf_error_set(err, MF_EINVAL, "message", 0, 0,
		    "is required");
	rc = mf_node_str(n, "message", msg, err);
	*msglen = n->len;
	n = mf_node_get(root, "job");
	*has_job = n != NULL;
	if (rc == MF_OK && n != NULL)
		rc = mf_job_read(n, "job", api->models, job, err);
	if (rc == MF_OK && n != NULL)
		rc = mf_api_estimator(api, &job->work, err);
	if (rc == MF_OK && *has_job && job->model_source == MF_MODEL_URL)
		rc = mf_error_set(err, MF_EINVAL, "job.spec.model.configUrl", 0,
		    0,
		    "is not supported in a diagnosis; name the model or "
		    "give its config inline");
	return rc;
}

/* A floor above the card that ran out: its capacity, up to the next GiB. */
static void
raise_floor(struct mf_job *job, const struct mf_oom *o)
{
	int64_t gib = INT64_C(1) << 30;
	int64_t above = (o->total / gib + 1) * gib;

	if (job->min_memory < above) {
		job->min_memory = above;
		job->min_memory_format = MF_QTY_BINARY;
	}
}

static char *
diagnosis_text(const struct mf_oom *o, const struct mf_job *job,
    const struct mf_decision *d)
{
	int n = mf_oom_text(o, NULL, 0);
	char *report = n < 0 ? NULL : malloc((size_t)n + 1);
	char *decision = NULL, *text;
	struct mf_buf b;

	if (report == NULL)
		return NULL;
	mf_oom_text(o, report, (size_t)n + 1);
	if (d == NULL)
		return report;
	mf_buf_init(&b, 1u << 22);
	decision = mf_text_decision(job, d);
	mf_buf_printf(&b, "%s\nWith a floor above this card:\n%s", report,
	    decision ? decision : "");
	free(report);
	free(decision);
	text = b.rc == MF_OK ? mf_buf_take(&b) : NULL;
	mf_buf_free(&b);
	return text;
}

static void
diagnosis_answer(const struct mf_api *api, const struct mf_oom *o,
    const struct mf_job *job, const struct mf_decision *d, enum mf_output out,
    struct mf_answer *ans)
{
	json_t *j;

	if (out == MF_OUT_TEXT) {
		mf_answer_text(ans, MF_ANS_OK, diagnosis_text(o, job, d));
		return;
	}
	j = mf_oom_json(o);
	if (j != NULL && d != NULL)
		json_object_set_new(j, "admission",
		    mf_render_decision(job, d, api->cat));
	mf_answer_json(ans, MF_ANS_OK, j, out);
}

void
mf_api_diagnose(const struct mf_api *api, const char *body, size_t len,
    enum mf_doc_format fmt, enum mf_output out, struct mf_answer *ans)
{
	struct mf_decision *d = NULL;
	struct mf_doc *doc = NULL;
	struct mf_error err;
	struct mf_job job;
	struct mf_oom o;
	const char *msg = body;
	size_t msglen = len, i = 0;
	int has_job = 0;
	enum mf_rc rc = MF_OK;

	memset(ans, 0, sizeof(*ans));
	memset(&err, 0, sizeof(err));
	while (i < len &&
	    (body[i] == ' ' || body[i] == '\n' || body[i] == '\t' ||
	        body[i] == '\r'))
		i++;
	if (fmt == MF_DOC_JSON ||
	    (fmt == MF_DOC_AUTO && i < len && body[i] == '{'))
		rc = read_diagnose(api, body, len, &doc, &msg, &msglen, &job,
		    &has_job, &err);
	if (rc == MF_OK)
		rc = mf_oom_parse(msg, msglen, &o, &err);
	if (rc == MF_OK && has_job && o.cause == MF_OOM_CAPACITY) {
		note_job(ans, &job);
		raise_floor(&job, &o);
		d = malloc(sizeof(*d));
		if (d == NULL)
			rc = mf_error_set(&err, MF_ENOMEM, NULL, 0, 0,
			    "out of memory");
		else
			rc = mf_place(&job, api->cat, d, &err);
	}
	if (rc == MF_OK)
		diagnosis_answer(api, &o, &job, d, out, ans);
	else
		mf_answer_err(ans, rc, &err, out);
	free(d);
	mf_doc_free(doc);
}
