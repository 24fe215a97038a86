/*
 * memfloor: the command line.  Offline estimate, admit and diagnose with
 * the daemon's library and answers; catalogue checks; submit to a daemon.
 *
 * Exit status: 0 admitted / ok, 1 rejected, 2 input error, 3 the daemon
 * could not be reached or failed.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "../admission/api.h"
#include "../admission/base/buf.h"
#include "../admission/base/file.h"
#include "../admission/base/qty.h"
#include "../catalog/catalog.h"
#include "../catalog/datadir.h"
#include "../catalog/kueue.h"
#include "../fetch/fetch.h"

#ifndef MF_DATADIR
#define MF_DATADIR "/usr/local/share/memfloor"
#endif

#define CLI_INPUT_MAX (16u << 20)

enum { EXIT_ADMITTED, EXIT_REJECTED, EXIT_INPUT, EXIT_UNREACHABLE };

#define CLI_MAX_HOSTS 32

struct opts {
	const char *catalog;
	const char *models[MF_DATA_MAX_MODEL_DIRS]; /* -m, in order */
	size_t nmodels;
	const char *server;
	const char *cacert;
	enum mf_output out;
	const char *file;
	const char *hosts[CLI_MAX_HOSTS]; /* --model-host, as memfloord's */
	size_t nhosts;
	const char *estimator; /* --estimator, or NULL: the catalogue's */
	int fingerprint;       /* memfloor fingerprint: print only that */
};

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: memfloor estimate FILE [-m models] [-f catalog] [--model-host HOST] [--estimator pytorch|post] [-o table|json|yaml]\n"
	    "       memfloor admit FILE [-f catalog] [-m models] [--model-host HOST] [--estimator pytorch|post] [-o table|json|yaml]\n"
	    "       memfloor fingerprint FILE [-m models] [-f catalog] [--model-host HOST]\n"
	    "       memfloor diagnose [FILE|-] [-f catalog] [-m models] [-o table|json|yaml]\n"
	    "       memfloor catalog check FILE\n"
	    "       memfloor catalog slurm FILE\n"
	    "       memfloor catalog kueue FILE\n"
	    "       memfloor schema [Job|GpuCatalog] [--markdown] [-o json|yaml]\n"
	    "       memfloor submit FILE [--server URL] [--cacert FILE] [-o table|json|yaml]\n"
	    "       memfloor --version\n");
}

/*
 * The shipped catalogue or models where -f or -m names none (the rule is
 * in catalog/datadir.h); NULL, said, when they are nowhere.
 */
static const char *
shipped(const char *name, const char *flag)
{
	static char found[2][PATH_MAX + 64];
	char tried[2 * PATH_MAX + 160];
	char *buf = found[strcmp(name, "models") == 0];
	const char *p =
	    mf_data_find(name, buf, sizeof(found[0]), tried, sizeof(tried));

	if (p == NULL)
		fprintf(stderr,
		    "memfloor: no %s: looked for %s; name one with %s\n", name,
		    tried, flag);
	return p;
}

static int
takes_value(const char *opt)
{
	static const char *const valued[] = { "-o", "-f", "-m", "--server",
		"--cacert", "--model-host", "--estimator" };

	for (size_t i = 0; i < sizeof(valued) / sizeof(valued[0]); i++)
		if (strcmp(opt, valued[i]) == 0)
			return 1;
	return 0;
}

/* Says what was wrong before the usage is printed: -1. */
static int
bad_opt(const char *what, const char *arg)
{
	fprintf(stderr, "memfloor: %s '%s'\n", what, arg);
	return -1;
}

static int
parse_opts(int argc, char **argv, int first, struct opts *o)
{
	o->server = "http://127.0.0.1:8080";
	o->out = isatty(STDOUT_FILENO) ? MF_OUT_TEXT : MF_OUT_JSON;
	for (int i = first; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "-o") == 0 && v != NULL) {
			if (strcmp(v, "table") == 0)
				o->out = MF_OUT_TEXT;
			else if (strcmp(v, "json") == 0)
				o->out = MF_OUT_JSON;
			else if (strcmp(v, "yaml") == 0)
				o->out = MF_OUT_YAML;
			else
				return bad_opt(
				    "-o takes table, json or yaml, not", v);
		} else if (strcmp(a, "-f") == 0 && v != NULL) {
			o->catalog = v;
		} else if (strcmp(a, "-m") == 0 && v != NULL) {
			if (o->nmodels == MF_DATA_MAX_MODEL_DIRS)
				return bad_opt(
				    "-m takes at most 16 directories:", v);
			o->models[o->nmodels++] = v;
		} else if (strcmp(a, "--server") == 0 && v != NULL) {
			o->server = v;
		} else if (strcmp(a, "--model-host") == 0 && v != NULL) {
			if (o->nhosts == CLI_MAX_HOSTS) {
				fprintf(stderr,
				    "memfloor: --model-host at most %d times\n",
				    CLI_MAX_HOSTS);
				return -1;
			}
			o->hosts[o->nhosts++] = v;
		} else if (strcmp(a, "--cacert") == 0 && v != NULL) {
			o->cacert = v;
		} else if (strcmp(a, "--estimator") == 0 && v != NULL) {
			o->estimator = v;
		} else if (o->file == NULL && (a[0] != '-' || a[1] == '\0')) {
			o->file = a;
			continue;
		} else if (a[0] != '-' || a[1] == '\0') {
			fprintf(stderr,
			    "memfloor: one FILE only: '%s', then '%s'\n",
			    o->file, a);
			return -1;
		} else if (v == NULL && takes_value(a)) {
			return bad_opt("a value must follow", a);
		} else {
			return bad_opt("unknown option", a);
		}
		i++;
	}
	return 0;
}

/* Read FILE, or standard input for "-"; NULL (reported) on failure. */
static char *
slurp(const char *path, size_t *len)
{
	char msg[MF_ERROR_MAX], *buf = NULL;
	struct mf_error err;

	if (mf_input_read(path, CLI_INPUT_MAX, "an input", &buf, len, &err) !=
	    MF_OK)
		fprintf(stderr, "memfloor: %s\n",
		    mf_error_message(&err, msg, sizeof(msg)));
	return buf;
}

static int
exit_for(enum mf_answer_kind kind)
{
	switch (kind) {
	case MF_ANS_OK:
		return EXIT_ADMITTED;
	case MF_ANS_REJECTED:
		return EXIT_REJECTED;
	case MF_ANS_INVALID:
	case MF_ANS_TOOBIG:
		return EXIT_INPUT;
	default:
		return EXIT_UNREACHABLE;
	}
}

/* The fetcher's answer, waited for on the main thread. */
struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
	struct mf_fetch_result res;
};

static void
on_fetched(void *arg, struct mf_fetch_result *res)
{
	struct waiter *w = arg;

	pthread_mutex_lock(&w->lock);
	w->res = *res;
	w->done = 1;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Only the fetcher's warnings and errors, on stderr. */
static void fetch_log(enum mf_fetch_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void
fetch_log(enum mf_fetch_level level, const char *fmt, va_list ap)
{
	char line[1024];

	if (level > MF_FETCH_LOG_WARN)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "memfloor: %s\n", line);
}

/*
 * The job's config from its spec.model.configUrl, with memfloord's own
 * fetcher and rules (the hosts --model-host allows, the caps, the
 * redirects).  0 with the model handed to req, else -1 with ans set.
 */
static int
fetch_config(const struct opts *o, struct mf_request *req,
    struct mf_answer *ans)
{
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
		0, { MF_FETCH_FAILED, NULL, 0, "" } };
	struct mf_model m;
	int rc = -1;

	if (mf_fetch_init(o->hosts, o->nhosts, fetch_log) != 0) {
		mf_api_error(MF_ANS_INVALID, "--model-host",
		    "not HOST, HOST:PORT or http[s]://HOST[:PORT]", o->out,
		    ans);
		return -1;
	}
	mf_fetch_start(mf_request_url(req), on_fetched, &w);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	mf_fetch_fini();
	if (w.res.status != MF_FETCH_OK)
		mf_api_error(w.res.status == MF_FETCH_DENIED ||
		            w.res.status == MF_FETCH_BADURL ?
		        MF_ANS_INVALID :
		        MF_ANS_UPSTREAM,
		    "spec.model.configUrl", w.res.message, o->out, ans);
	else if (mf_request_config(req, w.res.body, w.res.len, &m, ans) ==
	    MF_OK)
		rc = 0;
	free(w.res.body);
	return rc;
}

/* A model file that does not parse: said, and left out, as memfloord
 * does. */
static void
model_skipped(void *arg, const struct mf_error *err, int kept)
{
	char msg[MF_ERROR_MAX];

	(void)arg;
	(void)kept;
	fprintf(stderr, "memfloor: %s; left out\n",
	    mf_error_message(err, msg, sizeof(msg)));
}

/*
 * The catalogue and models a call needs: the models of the shipped
 * directory and of each -m, as memfloord reads them; -1 (said) when they
 * fail.
 */
static int
load(struct opts *o, struct mf_catalog **cat, struct mf_models **models)
{
	static struct mf_data_models dirs;
	struct mf_models_load how = { NULL, 0, model_skipped, NULL, NULL,
		NULL };
	struct mf_error err;
	char msg[MF_ERROR_MAX];

	if (o->catalog == NULL &&
	    (o->catalog = shipped("gpus.yaml", "-f")) == NULL)
		return -1;
	if (mf_data_model_dirs(o->models, o->nmodels, &dirs, msg,
	        sizeof(msg)) != 0) {
		fprintf(stderr, "memfloor: %s\n", msg);
		return -1;
	}
	how.dirs = dirs.dirs;
	how.ndirs = dirs.n;
	if (mf_cat_load(o->catalog, cat, &err) != MF_OK ||
	    mf_models_load_dirs(&how, models, &err) != MF_OK) {
		fprintf(stderr, "memfloor: %s\n",
		    mf_error_message(&err, msg, sizeof(msg)));
		return -1;
	}
	return 0;
}

/* The request body: FILE, or standard input (said when it is a terminal:
 * a person who gave no FILE would wait, not knowing memfloor reads what
 * they type). */
static char *
read_input(const struct opts *o, size_t *len)
{
	if ((o->file == NULL || strcmp(o->file, "-") == 0) &&
	    isatty(STDIN_FILENO))
		fprintf(stderr,
		    "memfloor: reading from standard input (end with Ctrl-D; give a FILE to read that instead)\n");
	return slurp(o->file ? o->file : "-", len);
}

static int
print_answer(struct mf_answer *ans)
{
	int rc = exit_for(ans->kind);

	fwrite(ans->body, 1, ans->len,
	    ans->kind == MF_ANS_OK || ans->kind == MF_ANS_REJECTED ? stdout :
	                                                             stderr);
	mf_answer_free(ans);
	return rc;
}

/* memfloor fingerprint: the fingerprint an admission's answer carries (the
 * job as placed; as written when it is rejected), else the error. */
static int
print_fingerprint(struct mf_answer *ans)
{
	if (ans->kind != MF_ANS_OK && ans->kind != MF_ANS_REJECTED)
		return print_answer(ans);
	printf("%s\n", ans->fingerprint);
	mf_answer_free(ans);
	return EXIT_ADMITTED;
}

/*
 * estimate, admit (job is set: both phases, fetching a configUrl when
 * --model-host allows its host) and diagnose (fn): load what the call
 * needs, run it, print.
 */
static int
offline(mf_api_call fn, const enum mf_call *job, struct opts *o)
{
	struct mf_catalog *cat = NULL;
	struct mf_models *models = NULL;
	struct mf_request *req = NULL;
	struct mf_answer ans;
	struct mf_api api = { NULL, NULL, NULL, NULL };
	char *body = NULL;
	size_t len = 0;
	int rc = EXIT_INPUT;

	if (load(o, &cat, &models) != 0 || (body = read_input(o, &len)) == NULL)
		goto out;
	api.cat = cat;
	api.models = models;
	api.estimator = o->estimator;
	if (job == NULL) {
		fn(&api, body, len, MF_DOC_AUTO, o->out, &ans);
		rc = print_answer(&ans);
		goto out;
	}
	mf_api_prepare(&api, *job, body, len, MF_DOC_AUTO, o->out, &req, &ans);
	if (req != NULL && mf_request_url(req) != NULL && o->nhosts > 0 &&
	    fetch_config(o, req, &ans) != 0) {
		rc = print_answer(&ans);
		goto out;
	}
	if (req != NULL)
		mf_api_decide(&api, req, &ans);
	rc = o->fingerprint && req != NULL ? print_fingerprint(&ans) :
	                                     print_answer(&ans);
out:
	mf_request_free(req);
	free(body);
	mf_models_free(models);
	mf_cat_unref(cat);
	return rc;
}

/* The catalogue at path; NULL once the error is on stderr, as a compiler
 * says it ("FILE:LINE: FIELD: problem"). */
static struct mf_catalog *
load_catalog(const char *path)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;
	char msg[MF_ERROR_MAX];

	if (mf_cat_load(path, &cat, &err) == MF_OK)
		return cat;
	fprintf(stderr, "%s\n", mf_error_message(&err, msg, sizeof(msg)));
	return NULL;
}

static int
catalog_check(const char *path)
{
	struct mf_catalog *cat;
	struct mf_answer ans;
	struct mf_api api = { NULL, NULL, NULL, NULL };

	cat = load_catalog(path);
	if (cat == NULL)
		return EXIT_INPUT;
	api.cat = cat;
	mf_api_catalog(&api, NULL, MF_OUT_TEXT, &ans);
	fwrite(ans.body, 1, ans.len, stdout);
	mf_answer_free(&ans);
	mf_cat_unref(cat);
	return EXIT_ADMITTED;
}

/* One entry of the table; names and types were checked on load. */
static void
slurm_entry(FILE *f, const struct mf_gpu *g)
{
	char q[MF_QTY_STRMAX];

	mf_qty_format(g->memory, (enum mf_qty_format)g->memory_format, q,
	    sizeof(q));
	fprintf(f, "\t{ gpu = \"%s\", memory = %lld, memoryText = \"%s\"",
	    g->name, (long long)g->memory, q);
	if (g->slurm.gres != NULL)
		fprintf(f, ", type = \"%s\"", mf_cat_gres_type(g));
	if (g->slurm.partition != NULL)
		fprintf(f, ", partition = \"%s\"", g->slurm.partition);
	if (g->slurm.constraint != NULL)
		fprintf(f, ", constraint = \"%s\"", g->slurm.constraint);
	fprintf(f, " },\n");
}

/*
 * Nothing to write: an empty table would let job_submit.lua refuse no job
 * at all.  Say what a mapping looks like, on the catalogue's first card.
 */
static void
no_slurm_mapping(const char *path, const struct mf_catalog *cat)
{
	const char *name = cat->ngpus > 0 ? cat->gpus[0].name : "H100";
	char type[64];
	size_t n = 0;

	/* The card's name as a gres type: [a-z0-9._-] (catalog.c's rule). */
	for (const char *p = name; *p != '\0' && n + 1 < sizeof(type); p++)
		if (isalnum((unsigned char)*p) || strchr("._-", *p) != NULL)
			type[n++] = (char)tolower((unsigned char)*p);
	type[n] = '\0';
	fprintf(stderr,
	    "memfloor: %s: no GPU has a slurm mapping, so there is no table to write.\n"
	    "Give each card Slurm schedules its gres type (partition and constraint are optional):\n"
	    "  gpus:\n"
	    "    - name: %s\n"
	    "      ...\n"
	    "      slurm: {gres: \"gpu:%s\", partition: \"gpu\", constraint: \"%s\"}\n"
	    "(docs/slurm.md)\n",
	    path, name, n > 0 ? type : "h100", n > 0 ? type : "h100");
}

/*
 * The Lua table slurm/job_submit.lua loads: every GPU with a slurm
 * mapping, cheapest per reference hour first, so that the two never
 * drift from the catalogue.
 */
static int
catalog_slurm(const char *path)
{
	const struct mf_gpu **gpus;
	struct mf_catalog *cat;
	size_t n = 0;

	cat = load_catalog(path);
	if (cat == NULL)
		return EXIT_INPUT;
	gpus = malloc(cat->ngpus * sizeof(*gpus));
	if (gpus == NULL) {
		fprintf(stderr, "memfloor: out of memory\n");
		mf_cat_unref(cat);
		return EXIT_UNREACHABLE;
	}
	for (size_t i = 0; i < cat->ngpus; i++)
		if (mf_cat_has_slurm(&cat->gpus[i]))
			gpus[n++] = &cat->gpus[i];
	if (n == 0) {
		no_slurm_mapping(path, cat);
		free((void *)gpus);
		mf_cat_unref(cat);
		return EXIT_INPUT;
	}
	mf_cat_cheapest_first(gpus, n);
	printf(
	    "-- memfloor's GPU table for slurm/job_submit.lua, made by `memfloor catalog slurm`\n-- from ");
	for (const char *p = path; *p != '\0'; p++)
		putchar((unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p);
	printf(": do not edit, make it again when the catalogue changes.\n"
	       "-- Cheapest per reference hour first; memory in bytes per "
	       "GPU.\nreturn {\n");
	for (size_t i = 0; i < n; i++)
		slurm_entry(stdout, gpus[i]);
	printf("}\n");
	free((void *)gpus);
	mf_cat_unref(cat);
	return EXIT_ADMITTED;
}

/* The catalogue's GPU types as Kueue ResourceFlavors, on stdout. */
static int
catalog_kueue(const char *path)
{
	struct mf_catalog *cat;
	struct mf_error err;
	char msg[MF_ERROR_MAX];
	struct mf_buf out;
	enum mf_rc rc;

	cat = load_catalog(path);
	if (cat == NULL)
		return EXIT_INPUT;
	mf_buf_init(&out, MF_CAT_MAX_BYTES);
	rc = mf_kueue_flavors(cat, &out, &err);
	if (rc == MF_OK)
		fwrite(out.data, 1, out.len, stdout);
	else if (rc == MF_EINVAL)
		fprintf(stderr, "%s\n",
		    mf_error_message(&err, msg, sizeof(msg)));
	else
		fprintf(stderr, "memfloor: %s\n", mf_strerror(rc));
	mf_buf_free(&out);
	mf_cat_unref(cat);
	return rc == MF_OK ? EXIT_ADMITTED : EXIT_INPUT;
}

/*
 * The JSON Schema of a Job (or of the kind named) on stdout, as GET
 * /v1/schema serves it; with --markdown its field list, as docs/manifest.md
 * and docs/catalog.md hold it.
 */
static int
schema(int argc, char **argv)
{
	enum mf_output out = MF_OUT_JSON;
	struct mf_answer ans;
	const char *kind = NULL;
	int rc;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--markdown") == 0)
			out = MF_OUT_TEXT;
		else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc &&
		    (strcmp(argv[i + 1], "json") == 0 ||
		        strcmp(argv[i + 1], "yaml") == 0))
			out = argv[++i][0] == 'y' ? MF_OUT_YAML : MF_OUT_JSON;
		else if (kind == NULL && argv[i][0] != '-')
			kind = argv[i];
		else
			return bad_opt(
			    "schema takes [KIND] [--markdown] [-o json|yaml], not",
			    argv[i]);
	}
	mf_api_schema(kind, out, &ans);
	fwrite(ans.body, 1, ans.len, ans.kind == MF_ANS_OK ? stdout : stderr);
	rc = exit_for(ans.kind);
	mf_answer_free(&ans);
	return rc;
}

static size_t
collect(char *data, size_t size, size_t n, void *arg)
{
	struct mf_buf *b = arg;

	return mf_buf_add(b, data, size * n) == MF_OK ? size * n : 0;
}

static int
submit(const struct opts *o)
{
	static const char *const accept[] = { "Accept: application/json",
		"Accept: application/yaml", "Accept: text/plain" };
	struct curl_slist *h = NULL;
	char url[1024], *body;
	struct mf_buf resp;
	long status = 0;
	size_t len, n;
	CURL *c;
	CURLcode cc;

	body = slurp(o->file ? o->file : "-", &len);
	if (body == NULL)
		return EXIT_INPUT;
	n = strlen(o->server);
	while (n > 0 && o->server[n - 1] == '/')
		n--;
	snprintf(url, sizeof(url), "%.*s/v1/admit", (int)n, o->server);
	c = curl_easy_init();
	if (c == NULL) {
		free(body);
		return EXIT_UNREACHABLE;
	}
	mf_buf_init(&resp, CLI_INPUT_MAX);
	assert((size_t)o->out < sizeof(accept) / sizeof(accept[0]));
	h = curl_slist_append(h, accept[o->out]);
	h = curl_slist_append(h,
	    body[strspn(body, " \t\r\n")] == '{' ?
	        "Content-Type: application/json" :
	        "Content-Type: application/yaml");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (o->cacert != NULL)
		curl_easy_setopt(c, CURLOPT_CAINFO, o->cacert);
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(body);
	if (cc != CURLE_OK) {
		fprintf(stderr, "memfloor: %s: %s\n", url,
		    curl_easy_strerror(cc));
		mf_buf_free(&resp);
		return EXIT_UNREACHABLE;
	}
	fwrite(resp.data ? resp.data : "", 1, resp.len,
	    status < 300 || status == 403 ? stdout : stderr);
	mf_buf_free(&resp);
	if (status == 200)
		return EXIT_ADMITTED;
	if (status == 403)
		return EXIT_REJECTED;
	return status >= 400 && status < 500 ? EXIT_INPUT : EXIT_UNREACHABLE;
}

/* The command argv[1] names, run; its exit status. */
static int
command(int argc, char **argv)
{
	struct opts o;
	int rc;

	memset(&o, 0, sizeof(o));
	if (argc < 2) {
		usage(stderr);
		return EXIT_INPUT;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("memfloor %s\n", MF_VERSION);
		return EXIT_ADMITTED;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "catalog") == 0) {
		if (argc == 4 && strcmp(argv[2], "check") == 0)
			return catalog_check(argv[3]);
		if (argc == 4 && strcmp(argv[2], "slurm") == 0)
			return catalog_slurm(argv[3]);
		if (argc == 4 && strcmp(argv[2], "kueue") == 0)
			return catalog_kueue(argv[3]);
		fprintf(stderr,
		    "memfloor: catalog takes: check FILE, slurm FILE or kueue FILE\n");
		usage(stderr);
		return EXIT_INPUT;
	}
	if (strcmp(argv[1], "schema") == 0) {
		rc = schema(argc, argv);
		if (rc == -1)
			usage(stderr);
		return rc == -1 ? EXIT_INPUT : rc;
	}
	if (parse_opts(argc, argv, 2, &o) != 0) {
		usage(stderr);
		return EXIT_INPUT;
	}
	if (strcmp(argv[1], "estimate") == 0)
		return offline(NULL, &(enum mf_call){ MF_CALL_ESTIMATE }, &o);
	if (strcmp(argv[1], "admit") == 0)
		return offline(NULL, &(enum mf_call){ MF_CALL_ADMIT }, &o);
	if (strcmp(argv[1], "diagnose") == 0)
		return offline(mf_api_diagnose, NULL, &o);
	if (strcmp(argv[1], "fingerprint") == 0) {
		o.fingerprint = 1;
		o.out = MF_OUT_JSON;
		return offline(NULL, &(enum mf_call){ MF_CALL_ADMIT }, &o);
	}
	if (strcmp(argv[1], "submit") == 0) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		rc = submit(&o);
		curl_global_cleanup();
		return rc;
	}
	fprintf(stderr, "memfloor: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_INPUT;
}

/* What a command wrote to standard output that did not reach it (a full
 * disk, a closed pipe) fails the command: exit 3, said on stderr. */
int
main(int argc, char **argv)
{
	int rc = command(argc, argv);

	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "memfloor: standard output: %s\n",
		    strerror(errno));
		return EXIT_UNREACHABLE;
	}
	return rc;
}
