#include "api.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "fields/fields.h"
#include "manifest/manifest.h"
#include "oom/oom.h"
#include "place/place.h"
#include "base/qty.h"
#include "answer/render.h"
#include "base/internal.h"

/* The longest answer in JSON or YAML. */
#define ANSWER_MAX (16u << 20)
/* An answer's first allocation: an admit's with a model is 2.5 to 10 KB
 * (examples/: 3.9 KB the 8B admit, 10.2 KB the most with fixes), which
 * from 1 KB doubling took three or four allocations, each copying. */
#define ANSWER_FIRST 8192

static const char *const content_types[] = {
	[MF_OUT_JSON] = "application/json",
	[MF_OUT_YAML] = "application/yaml",
	[MF_OUT_TEXT] = "text/plain; charset=utf-8",
};

/* Bodies for when even building an answer failed. */
static char oom_json[] =
    "{\"error\":\"out of memory\",\"field\":null,\"line\":null,\"column\":null}\n";

void
mf_answer_free(struct mf_answer *ans)
{
	if (ans->body != oom_json)
		free(ans->body);
	ans->body = NULL;
	ans->len = 0;
	ans->placed = NULL;
}

char *
mf_answer_take(struct mf_answer *ans)
{
	char *body = ans->body;

	if (body == oom_json)
		return NULL;
	ans->body = NULL;
	return body;
}

static void
answer_oom(struct mf_answer *ans)
{
	ans->kind = MF_ANS_INTERNAL;
	ans->body = oom_json;
	ans->len = sizeof(oom_json) - 1;
	ans->content_type = content_types[MF_OUT_JSON];
}

/* Take text (malloc'd, NULL for failure) of len bytes as the body. */
static void
set_body(struct mf_answer *ans, enum mf_answer_kind kind, char *text,
    size_t len, enum mf_output out)
{
	if (text == NULL) {
		answer_oom(ans);
		return;
	}
	/* Text is read in a terminal: no control character from the
	 * input may reach it but newline and tab. */
	if (out == MF_OUT_TEXT)
		mf_scrub(text, len);
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
	assert((size_t)out < sizeof(content_types) / sizeof(content_types[0]));
	ans->content_type = content_types[out];
}

/* Take b's text as the body: its length is b's, not measured again. */
static void
set_buf(struct mf_answer *ans, enum mf_answer_kind kind, struct mf_buf *b,
    enum mf_output out)
{
	size_t len = b->len;

	set_body(ans, kind, mf_buf_take(b), len, out);
}

void
mf_answer_text(struct mf_answer *ans, enum mf_answer_kind kind, char *text)
{
	set_body(ans, kind, text, text != NULL ? strlen(text) : 0, MF_OUT_TEXT);
}

void
mf_answer_jtext(struct mf_answer *ans, enum mf_answer_kind kind, char *text)
{
	set_body(ans, kind, text, text != NULL ? strlen(text) : 0, MF_OUT_JSON);
}

void
mf_answer_jbuf(struct mf_answer *ans, enum mf_answer_kind kind,
    struct mf_buf *b)
{
	set_buf(ans, kind, b, MF_OUT_JSON);
}

struct mf_jw *
mf_answer_doc_begin(struct mf_answer_doc *d, enum mf_output out)
{
	mf_buf_init(&d->b, ANSWER_MAX);
	mf_buf_room(&d->b, ANSWER_FIRST - 1);
	mf_jw_init_form(&d->w, &d->b,
	    out == MF_OUT_YAML ? MF_JW_YAML : MF_JW_JSON);
	return &d->w;
}

void
mf_answer_doc_end(struct mf_answer_doc *d, enum mf_answer_kind kind,
    enum mf_output out, struct mf_answer *ans)
{
	mf_jw_finish(&d->w);
	set_buf(ans, kind, &d->b,
	    out == MF_OUT_YAML ? MF_OUT_YAML : MF_OUT_JSON);
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
	struct mf_answer_doc d;

	mf_copy(ans->field, sizeof(ans->field), err->field);
	if (out == MF_OUT_TEXT) {
		char msg[MF_ERROR_MAX];
		size_t n = strlen(mf_error_message(err, msg, sizeof(msg))) + 8;
		char *t = malloc(n);

		if (t != NULL)
			snprintf(t, n, "error: %s", msg);
		mf_answer_text(ans, kind_of(rc), t);
		return;
	}
	mf_write_error(mf_answer_doc_begin(&d, out), err);
	mf_answer_doc_end(&d, kind_of(rc), out, ans);
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

struct mf_request {
	enum mf_call call;
	enum mf_output out;
	struct mf_doc *doc; /* owns the job's strings */
	struct mf_job job;
	int unresolved; /* the job's configUrl is not read yet */
};

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

static void
note_job(struct mf_answer *ans, const struct mf_job *job)
{
	mf_copy(ans->job, sizeof(ans->job), job->name ? job->name : "");
}

void
mf_request_free(struct mf_request *req)
{
	if (req == NULL)
		return;
	mf_doc_free(req->doc);
	free(req);
}

void
mf_api_prepare(const struct mf_api *api, enum mf_call call, const char *body,
    size_t len, enum mf_doc_format fmt, enum mf_output out,
    struct mf_request **reqp, struct mf_answer *ans)
{
	struct mf_request *req = malloc(sizeof(*req));
	struct mf_error err;
	enum mf_rc rc;

	memset(ans, 0, sizeof(*ans));
	*reqp = NULL;
	if (req == NULL) {
		answer_oom(ans);
		return;
	}
	/* Cleared by assignment, not by calloc, as a document is and for
	 * its reason (mf_doc_parse_kept): made and freed on every request. */
	*req = (struct mf_request){ 0 };
	req->call = call;
	req->out = out;
	memset(&err, 0, sizeof(err));
	rc = mf_doc_parse(body, len, fmt, &req->doc, &err);
	if (rc == MF_OK)
		rc = mf_job_read(mf_doc_root(req->doc), "", api->models,
		    &req->job, &err);
	if (rc == MF_OK)
		rc = mf_api_estimator(api, &req->job.work, &err);
	if (rc != MF_OK) {
		mf_answer_err(ans, rc, &err, out);
		mf_request_free(req);
		return;
	}
	req->unresolved = req->job.model_source == MF_MODEL_URL;
	note_job(ans, &req->job);
	*reqp = req;
}

const char *
mf_request_url(const struct mf_request *req)
{
	return req->unresolved ? req->job.config_url : NULL;
}

void
mf_request_model(struct mf_request *req, const struct mf_model *model)
{
	req->job.model = *model;
	req->unresolved = 0;
}

enum mf_rc
mf_request_config(struct mf_request *req, const char *text, size_t len,
    struct mf_model *model, struct mf_answer *ans)
{
	struct mf_doc *doc = NULL;
	struct mf_error err;
	struct mf_model m;
	enum mf_rc rc;

	memset(ans, 0, sizeof(*ans));
	memset(&err, 0, sizeof(err));
	rc = mf_doc_parse(text, len, MF_DOC_JSON, &doc, NULL);
	if (rc == MF_ENOMEM) {
		answer_oom(ans);
		return rc;
	}
	if (rc != MF_OK) {
		mf_error_set(&err, MF_EINVAL, "spec.model.configUrl", 0, 0,
		    "%.200s: not a JSON config", req->job.config_url);
		mf_answer_err(ans, MF_EINVAL, &err, req->out);
		ans->kind = MF_ANS_UPSTREAM;
		return MF_EINVAL;
	}
	rc = mf_model_read(mf_doc_root(doc), "spec.model.configUrl", &m, &err);
	mf_doc_free(doc);
	if (rc != MF_OK) {
		mf_answer_err(ans, rc, &err, req->out);
		return rc;
	}
	mf_request_model(req, &m);
	*model = m;
	return MF_OK;
}

/* What the store keeps of an admission (design 23): the job as placed,
 * which it writes canonically when it commits. */
static void
note_placed(struct mf_answer *ans, const struct mf_job *job,
    const struct mf_placement *pl)
{
	ans->placed = job;
	ans->placed_fixes = pl->fixes;
	mf_copy(ans->placed_card, sizeof(ans->placed_card), pl->gpu->name);
	ans->placed_count = pl->count;
}

/* mf_place, with what the job's runs measured when api says (design 23):
 * the runs of the job as written, no fixes, on its own count. */
static enum mf_rc
place_observed(const struct mf_api *api, const struct mf_job *given,
    struct mf_decision *d, struct mf_error *err)
{
	struct mf_job job = *given;
	struct mf_observed obs;

	if (api->observed == NULL || job.model_source == MF_MODEL_NONE)
		return mf_place(&job, api->cat, d, err);
	mf_fp_job(&job, 0, job.count, obs.fingerprint);
	api->observed(obs.fingerprint, &obs);
	job.observed = &obs;
	return mf_place(&job, api->cat, d, err);
}

enum mf_rc
mf_api_admit_fingerprint(const struct mf_api *api, const struct mf_job *given,
    char *hex, struct mf_error *err)
{
	struct mf_job job = *given;
	struct mf_decision *d;
	enum mf_rc rc = mf_api_estimator(api, &job.work, err);

	if (rc != MF_OK)
		return rc;
	if ((d = malloc(sizeof(*d))) == NULL)
		return mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
		    "out of memory");
	rc = place_observed(api, &job, d, err);
	if (rc == MF_OK)
		memcpy(hex, d->fingerprint, sizeof(d->fingerprint));
	free(d);
	return rc;
}

static void
decide_admit(const struct mf_api *api, struct mf_request *req,
    struct mf_answer *ans)
{
	struct mf_decision *d = malloc(sizeof(*d));
	enum mf_output out = req->out;
	enum mf_answer_kind kind;
	struct mf_error err;
	struct mf_answer_doc doc;
	enum mf_rc rc;

	if (d == NULL) {
		answer_oom(ans);
		return;
	}
	rc = place_observed(api, &req->job, d, &err);
	if (rc != MF_OK) {
		mf_answer_err(ans, rc, &err, out);
		free(d);
		return;
	}
	kind = d->admitted ? MF_ANS_OK : MF_ANS_REJECTED;
	if (out == MF_OUT_TEXT) {
		mf_answer_text(ans, kind, mf_text_decision(&req->job, d));
	} else {
		mf_write_decision(mf_answer_doc_begin(&doc, out), NULL,
		    &req->job, d, api->cat);
		mf_answer_doc_end(&doc, kind, out, ans);
	}
	ans->verdict = d->admitted ? MF_VERDICT_ADMITTED : MF_VERDICT_REJECTED;
	if (d->admitted && api->observed != NULL)
		note_placed(ans, &req->job, &d->placement);
	memcpy(ans->fingerprint, d->fingerprint, sizeof(ans->fingerprint));
	free(d);
}

/* job's estimate, and with a catalogue its floor inside 63 bits. */
static enum mf_rc
estimate(const struct mf_api *api, const struct mf_job *job,
    struct mf_estimate *est)
{
	enum mf_rc rc = mf_est_compute(&job->model, &job->work, est);

	if (rc == MF_OK && api->cat != NULL &&
	    mf_floor_for(est->per_gpu, mf_headroom(api->cat, &job->work)) < 0)
		rc = MF_ERANGE;
	return rc;
}

static void
decide_estimate(const struct mf_api *api, struct mf_request *req,
    struct mf_answer *ans)
{
	enum mf_rc rc;
	struct mf_job bound = req->job, *job = &bound;
	enum mf_output out = req->out;
	struct mf_estimate est;
	struct mf_error err;
	struct mf_answer_doc d;

	if (api->cat != NULL)
		mf_job_bind(job, api->cat);
	if (job->model_source == MF_MODEL_NONE) {
		mf_error_set(&err, MF_EINVAL, "spec.model", 0, 0,
		    "is required for an estimate");
		mf_answer_err(ans, MF_EINVAL, &err, out);
	} else if (mf_job_check_layout(job, &err) != MF_OK) {
		mf_answer_err(ans, MF_EINVAL, &err, out);
	} else if (mf_job_check_model(job, &err) != MF_OK) {
		mf_answer_err(ans, MF_EINVAL, &err, out);
	} else if ((rc = estimate(api, job, &est)) != MF_OK) {
		mf_est_error(rc, &err);
		mf_answer_err(ans, MF_EINVAL, &err, out);
	} else {
		mf_fp_job(job, 0, job->count, ans->fingerprint);
		if (out == MF_OUT_TEXT) {
			mf_answer_text(ans, MF_ANS_OK,
			    mf_text_estimate(job, &est, api->cat));
		} else {
			mf_write_estimate(mf_answer_doc_begin(&d, out), NULL,
			    job, ans->fingerprint, &est, NULL, api->cat);
			mf_answer_doc_end(&d, MF_ANS_OK, out, ans);
		}
	}
}

void
mf_api_decide(const struct mf_api *api, struct mf_request *req,
    struct mf_answer *ans)
{
	struct mf_error err;

	memset(ans, 0, sizeof(*ans));
	note_job(ans, &req->job);
	if (req->unresolved) {
		mf_error_set(&err, MF_EINVAL, "spec.model.configUrl", 0, 0,
		    "is fetched by memfloord (memfloor submit), or offline when --model-host allows its host; or name a model GET /v1/models lists or give its config inline");
		mf_answer_err(ans, MF_EINVAL, &err, req->out);
		return;
	}
	if (req->call == MF_CALL_ADMIT)
		decide_admit(api, req, ans);
	else
		decide_estimate(api, req, ans);
}

/* Both phases at once, for a model that needs no fetch. */
static void
both_phases(const struct mf_api *api, enum mf_call call, const char *body,
    size_t len, enum mf_doc_format fmt, enum mf_output out,
    struct mf_answer *ans)
{
	struct mf_request *req;

	mf_api_prepare(api, call, body, len, fmt, out, &req, ans);
	if (req == NULL)
		return;
	mf_api_decide(api, req, ans);
	mf_request_free(req);
}

void
mf_api_admit(const struct mf_api *api, const char *body, size_t len,
    enum mf_doc_format fmt, enum mf_output out, struct mf_answer *ans)
{
	both_phases(api, MF_CALL_ADMIT, body, len, fmt, out, ans);
}

void
mf_api_estimate(const struct mf_api *api, const char *body, size_t len,
    enum mf_doc_format fmt, enum mf_output out, struct mf_answer *ans)
{
	both_phases(api, MF_CALL_ESTIMATE, body, len, fmt, out, ans);
}

void
mf_api_catalog(const struct mf_api *api, const char *min_memory,
    enum mf_output out, struct mf_answer *ans)
{
	enum mf_qty_format f = MF_QTY_BINARY;
	enum mf_qty_err qe;
	int64_t floor = 0;
	struct mf_answer_doc d;
	char msg[256];

	memset(ans, 0, sizeof(*ans));
	if (min_memory != NULL) {
		qe = mf_qty_parse_memory(min_memory, strlen(min_memory), &floor,
		    &f);
		if (qe != MF_QTY_OK) {
			mf_qty_explain(min_memory, strlen(min_memory), qe, msg,
			    sizeof(msg));
			mf_api_error(MF_ANS_INVALID, "minMemory", msg, out,
			    ans);
			return;
		}
	}
	if (out == MF_OUT_TEXT)
		mf_answer_text(ans, MF_ANS_OK,
		    mf_text_catalog(api->cat, floor, (int)f));
	else {
		mf_write_catalog(mf_answer_doc_begin(&d, out), api->cat, floor,
		    (int)f);
		mf_answer_doc_end(&d, MF_ANS_OK, out, ans);
	}
}

void
mf_api_models(const struct mf_api *api, enum mf_output out,
    struct mf_answer *ans)
{
	struct mf_answer_doc d;

	memset(ans, 0, sizeof(*ans));
	if (out == MF_OUT_TEXT) {
		mf_answer_text(ans, MF_ANS_OK, mf_text_models(api->models));
		return;
	}
	mf_write_models(mf_answer_doc_begin(&d, out), api->models);
	mf_answer_doc_end(&d, MF_ANS_OK, out, ans);
}

const struct mf_field *
mf_api_document(const char *kind)
{
	if (kind == NULL || strcmp(kind, MF_FIELDS_JOB_KIND) == 0)
		return &mf_fields_job;
	if (strcmp(kind, MF_FIELDS_CATALOG_KIND) == 0)
		return &mf_fields_catalog;
	return NULL;
}

void
mf_api_schema(const char *kind, enum mf_output out, struct mf_answer *ans)
{
	const struct mf_field *doc = mf_api_document(kind);
	struct mf_buf b;
	struct mf_answer_doc d;
	char msg[160];

	memset(ans, 0, sizeof(*ans));
	if (doc == NULL) {
		snprintf(msg, sizeof(msg),
		    "'%.40s' is not a kind of document memfloor reads (Job, GpuCatalog)",
		    kind);
		mf_api_error(MF_ANS_INVALID, "kind", msg, out, ans);
		return;
	}
	if (out == MF_OUT_TEXT) {
		mf_buf_init(&b, ANSWER_MAX);
		mf_fields_markdown(doc, &b);
		set_buf(ans, MF_ANS_OK, &b, MF_OUT_TEXT);
		return;
	}
	mf_fields_schema(doc, mf_answer_doc_begin(&d, out));
	mf_answer_doc_end(&d, MF_ANS_OK, out, ans);
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
		    "is not supported in a diagnosis; name the model or give its config inline");
	return rc;
}

/* A floor above the card that ran out: its capacity, up to the next GiB. */
static void
raise_floor(struct mf_job *job, const struct mf_oom *o)
{
	int64_t gib = INT64_C(1) << 30;
	int64_t above = (o->total / gib + 1) * gib;
	/* An allocation larger than the whole card needs a card that holds
	 * it, not merely one a GiB larger (figures are at most 2^60). */
	int64_t tried = (o->tried + gib - 1) / gib * gib;

	if (tried > above)
		above = tried;

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
	char *decision = NULL;
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
	return mf_buf_take(&b);
}

static void
diagnosis_answer(const struct mf_api *api, const struct mf_oom *o,
    const struct mf_job *job, const struct mf_decision *d, enum mf_output out,
    struct mf_answer *ans)
{
	struct mf_jw *w;
	struct mf_answer_doc doc;

	if (out == MF_OUT_TEXT) {
		mf_answer_text(ans, MF_ANS_OK, diagnosis_text(o, job, d));
		return;
	}
	w = mf_answer_doc_begin(&doc, out);
	mf_jw_open(w, NULL, '{');
	mf_oom_write(w, o);
	if (d != NULL)
		mf_write_decision(w, "admission", job, d, api->cat);
	mf_jw_close(w, '}');
	mf_answer_doc_end(&doc, MF_ANS_OK, out, ans);
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
