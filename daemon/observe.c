/*
 * observe.c: the observations' routes (design 23) over the store: POST
 * /v1/observations (a bearer token's), GET /v1/observations?fingerprint=,
 * DELETE /v1/observations/ID (a bearer token's), and the admissions
 * recorded off the answer's path.  Without --store every route answers
 * 404, saying so, and admissions are not recorded.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../admission/base/buf.h"
#include "../admission/base/file.h"
#include "../admission/base/jw.h"
#include "../store/observe.h"
#include "../store/store.h"
#include "memfloord.h"

#define TOKENS_MAX 64
#define TOKEN_LEN_MAX 512
/* The most observations GET answers with. */
#define LIST_MAX 1000
#define ANSWER_MAX (4u << 20)

static struct mf_store *store;
static char *tokens[TOKENS_MAX];
static size_t ntokens;

/* Read the token file: one token a line, blank lines and #s left out. */
static int
read_tokens(const char *path)
{
	char line[TOKEN_LEN_MAX + 2];
	FILE *f = fopen(path, "r");

	if (f == NULL) {
		mfd_log(MFD_ERROR, "--observe-token-file %s: %s", path,
		    strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL && ntokens < TOKENS_MAX) {
		size_t n = strcspn(line, "\r\n");

		assert(n < sizeof(line));
		line[n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		tokens[ntokens] = malloc(n + 1);
		if (tokens[ntokens] == NULL)
			break;
		memcpy(tokens[ntokens++], line, n + 1);
	}
	fclose(f);
	if (ntokens == 0) {
		mfd_log(MFD_ERROR, "--observe-token-file %s: holds no token",
		    path);
		return -1;
	}
	return 0;
}

static void
free_tokens(void)
{
	assert(ntokens <= TOKENS_MAX);
	for (size_t i = 0; i < ntokens; i++)
		free(tokens[i]);
	ntokens = 0;
}

/* Open the store, saying why not: a file that is not memfloor's stays
 * as it is and stops the daemon. */
static struct mf_store *
open_store(const char *path)
{
	struct mf_store *s = NULL;
	char msg[MF_ERROR_MAX];
	struct mf_error err;

	memset(&err, 0, sizeof(err));
	if (mf_store_open(path, &s, &err) != MF_OK) {
		mfd_log(MFD_ERROR, "--store %s",
		    mf_error_message(&err, msg, sizeof(msg)));
		return NULL;
	}
	return s;
}

int
mfd_obs_check(const struct mfd_config *cfg)
{
	struct mf_store *s;

	if (cfg->observe_tokens != NULL && cfg->store_path == NULL) {
		mfd_log(MFD_ERROR, "--observe-token-file needs --store");
		return -1;
	}
	if (cfg->store_path == NULL)
		return 0;
	if ((s = open_store(cfg->store_path)) == NULL)
		return -1;
	mf_store_close(s);
	if (cfg->observe_tokens != NULL && read_tokens(cfg->observe_tokens))
		return -1;
	free_tokens();
	return 0;
}

int
mfd_obs_start(const struct mfd_config *cfg)
{
	if (cfg->store_path == NULL) {
		mfd_log(MFD_INFO,
		    "no --store: observations are not kept (design 23)");
		return 0;
	}
	if (cfg->observe_tokens != NULL && read_tokens(cfg->observe_tokens))
		return -1;
	if ((store = open_store(cfg->store_path)) == NULL) {
		free_tokens();
		return -1;
	}
	mfd_log(MFD_INFO, "observations kept in %s%s", cfg->store_path,
	    ntokens ? "" : " (no --observe-token-file: not written)");
	return 0;
}

void
mfd_obs_stop(void)
{
	mf_store_close(store);
	store = NULL;
	free_tokens();
}

void
mfd_obs_admitted(struct mf_answer *ans)
{
	if (store == NULL || ans->verdict != MF_VERDICT_ADMITTED ||
	    ans->placed == NULL)
		return;
	mf_store_admitted(store, ans->fingerprint, ans->placed,
	    ans->placed_card, ans->placed_count);
	ans->placed = NULL;
}

/* a and b equal, in a time that does not depend on where they differ. */
static int
same_token(const char *given, size_t n, const char *token)
{
	size_t len = strlen(token);
	unsigned char diff = (unsigned char)(n != len);

	for (size_t i = 0; i < len; i++)
		diff |= (unsigned char)token[i] ^
		    (unsigned char)(i < n ? given[i] : 0);
	return diff == 0;
}

/* 0 when auth carries a token of the file; else the status (401, 403)
 * with its answer in ans. */
static int
authorize(const char *auth, enum mf_output out, struct mf_answer *ans)
{
	int ok = 0;
	size_t n;

	if (auth == NULL || strncmp(auth, "Bearer ", 7) != 0) {
		mf_api_error(MF_ANS_INVALID, NULL,
		    "writing observations takes Authorization: Bearer TOKEN (--observe-token-file)",
		    out, ans);
		return 401;
	}
	auth += 7;
	n = strlen(auth);
	assert(ntokens <= TOKENS_MAX);
	for (size_t i = 0; i < ntokens; i++)
		ok |= same_token(auth, n, tokens[i]);
	if (ok)
		return 0;
	mf_api_error(MF_ANS_INVALID, NULL,
	    ntokens ? "the bearer token is not one of --observe-token-file's" :
	              "writing observations is off (no --observe-token-file)",
	    out, ans);
	return 403;
}

static int
no_store(enum mf_output out, struct mf_answer *ans)
{
	mf_api_error(MF_ANS_INVALID, NULL,
	    "observations are not kept: memfloord runs without --store", out,
	    ans);
	return 404;
}

static void
write_figure(struct mf_jw *w, const char *key, int64_t v)
{
	if (v < 0)
		mf_jw_null(w, key);
	else
		mf_jw_int(w, key, v);
}

static void
write_speed(struct mf_jw *w, const char *key, double v)
{
	if (v < 0)
		mf_jw_null(w, key);
	else
		mf_jw_num(w, key, v, 6);
}

static void
write_obs(struct mf_jw *w, const struct mf_observation *o)
{
	mf_jw_open(w, NULL, '{');
	mf_jw_int(w, "id", o->id);
	mf_jw_str(w, "fingerprint", o->fingerprint);
	mf_jw_str(w, "card", o->card);
	mf_jw_int(w, "count", o->count);
	write_figure(w, "peakReservedBytes", o->peak_reserved);
	write_figure(w, "peakAllocatedBytes", o->peak_allocated);
	write_figure(w, "deviceUsedBytes", o->device_used);
	write_speed(w, "tokensPerSecond", o->tokens_per_second);
	write_speed(w, "stepSeconds", o->step_seconds);
	write_speed(w, "tokensPerStep", o->tokens_per_step);
	mf_jw_str(w, "source", o->source);
	mf_jw_int(w, "createdAt", o->created_at);
	mf_jw_close(w, '}');
}

/* The document in b as the answer, JSON or YAML. */
static void
answer_doc(struct mf_buf *b, struct mf_jw *w, enum mf_output out,
    struct mf_answer *ans)
{
	mf_jw_finish(w);
	memset(ans, 0, sizeof(*ans));
	mf_answer_jtext(ans, MF_ANS_OK, mf_buf_take(b));
	if (out == MF_OUT_YAML && ans->kind == MF_ANS_OK)
		ans->content_type = "application/yaml";
}

static void
begin_doc(struct mf_buf *b, struct mf_jw *w, enum mf_output out)
{
	mf_buf_init(b, ANSWER_MAX);
	mf_jw_init_form(w, b, out == MF_OUT_YAML ? MF_JW_YAML : MF_JW_JSON);
}

/* The error err says, as a 400 (500 when memory ran out, 413 past a
 * cap). */
static int
bad_body(enum mf_rc rc, const struct mf_error *err, enum mf_output out,
    struct mf_answer *ans)
{
	memset(ans, 0, sizeof(*ans));
	mf_answer_err(ans, rc, err, out);
	if (rc == MF_ETOOBIG)
		return 413;
	return rc == MF_ENOMEM ? 500 : 400;
}

/* Whether the store knows a fingerprint given alone: 0, or the status. */
static int
known(const struct mf_observation *o, enum mf_output out, struct mf_answer *ans)
{
	int k = mf_store_knows(store, o->fingerprint);

	if (k > 0)
		return 0;
	mf_api_error(MF_ANS_INVALID, "fingerprint",
	    k < 0 ?
	        "the store could not be read" :
	        "no admission of this fingerprint is known: post the job instead",
	    out, ans);
	return k < 0 ? 503 : 400;
}

int
mfd_obs_post(const char *auth, const char *body, size_t len,
    enum mf_doc_format fmt, enum mf_output out, struct mf_answer *ans)
{
	struct mf_observation o;
	struct mf_catalog *cat;
	struct mf_models *models;
	struct mf_error err;
	struct mf_buf b;
	struct mf_jw w;
	int named = 0, status;
	enum mf_rc rc;

	if (store == NULL)
		return no_store(out, ans);
	if ((status = authorize(auth, out, ans)) != 0)
		return status;
	memset(&err, 0, sizeof(err));
	mfd_state_take(&cat, &models);
	rc = cat ?
	    mf_obs_read(body, len, fmt, cat, models, &o, &named, &err) :
	    mf_error_set(&err, MF_EINVAL, NULL, 0, 0, "no catalogue loaded");
	mf_cat_unref(cat);
	mf_models_free(models);
	if (rc != MF_OK)
		return bad_body(rc, &err, out, ans);
	if (named && (status = known(&o, out, ans)) != 0)
		return status;
	if (mf_store_add(store, &o, &err) != MF_OK) {
		mfd_log(MFD_ERROR, "%s", err.text);
		mf_api_error(MF_ANS_INTERNAL, NULL, "the store could not write",
		    out, ans);
		return 503;
	}
	begin_doc(&b, &w, out);
	mf_jw_open(&w, NULL, '{');
	mf_jw_int(&w, "id", o.id);
	mf_jw_str(&w, "fingerprint", o.fingerprint);
	mf_jw_close(&w, '}');
	answer_doc(&b, &w, out, ans);
	return ans->kind == MF_ANS_OK ? 201 : 500;
}

int
mfd_obs_list(const char *fingerprint, enum mf_output out, struct mf_answer *ans)
{
	struct mf_observation *list = NULL;
	struct mf_error err;
	struct mf_buf b;
	struct mf_jw w;
	size_t n = 0;

	if (store == NULL)
		return no_store(out, ans);
	if (fingerprint == NULL || !mf_fp_valid(fingerprint)) {
		mf_api_error(MF_ANS_INVALID, "fingerprint",
		    "?fingerprint= takes a fingerprint (32 hex digits)", out,
		    ans);
		return 400;
	}
	if (mf_store_list(store, fingerprint, LIST_MAX, &list, &n, &err) !=
	    MF_OK) {
		mf_api_error(MF_ANS_INTERNAL, NULL, err.text, out, ans);
		return 503;
	}
	begin_doc(&b, &w, out);
	mf_jw_open(&w, NULL, '{');
	mf_jw_str(&w, "fingerprint", fingerprint);
	mf_jw_open(&w, "observations", '[');
	for (size_t i = 0; i < n; i++)
		write_obs(&w, &list[i]);
	mf_jw_close(&w, ']');
	mf_jw_close(&w, '}');
	free(list);
	answer_doc(&b, &w, out, ans);
	return ans->kind == MF_ANS_OK ? 200 : 500;
}

/* The decimal id of a path, or -1. */
static int64_t
parse_id(const char *s)
{
	int64_t v = 0;

	if (*s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

int
mfd_obs_delete(const char *auth, const char *id, enum mf_output out,
    struct mf_answer *ans)
{
	struct mf_error err;
	int64_t v;
	int status;
	enum mf_rc rc;

	if (store == NULL)
		return no_store(out, ans);
	if ((status = authorize(auth, out, ans)) != 0)
		return status;
	v = parse_id(id);
	if (v <= 0) {
		mf_api_error(MF_ANS_INVALID, NULL, "no such observation", out,
		    ans);
		return 404;
	}
	rc = mf_store_delete(store, v, &err);
	if (rc == MF_ENOTFOUND) {
		mf_api_error(MF_ANS_INVALID, NULL, err.text, out, ans);
		return 404;
	}
	if (rc != MF_OK) {
		mf_api_error(MF_ANS_INTERNAL, NULL, "the store could not write",
		    out, ans);
		return 503;
	}
	memset(ans, 0, sizeof(*ans));
	ans->content_type = "application/json";
	return 204;
}
