/*
 * memfloor: the command line.  Offline estimate, admit and diagnose with
 * the daemon's library and answers; catalogue checks; submit to a daemon.
 *
 * Exit status: 0 admitted / ok, 1 rejected, 2 input error, 3 the daemon
 * could not be reached or failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "../admission/api.h"
#include "../admission/buf.h"
#include "../catalog/catalog.h"

#ifndef MF_DATADIR
#define MF_DATADIR "/usr/local/share/memfloor"
#endif

#define CLI_INPUT_MAX (16u << 20)

enum { EXIT_ADMITTED, EXIT_REJECTED, EXIT_INPUT, EXIT_UNREACHABLE };

struct opts {
	const char *catalog;
	const char *models;
	const char *server;
	const char *cacert;
	enum mf_output out;
	const char *file;
	const char *estimator; /* --estimator, or NULL: the catalogue's */
};

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: memfloor estimate FILE [-m models] [-f catalog] "
	    "[-o table|json|yaml] [--estimator pytorch|post]\n"
	    "       memfloor admit FILE [-f catalog] [-m models] "
	    "[-o table|json|yaml] [--estimator pytorch|post]\n"
	    "       memfloor diagnose [FILE|-] [-f catalog] [-m models] "
	    "[-o table|json|yaml]\n"
	    "       memfloor catalog check FILE\n"
	    "       memfloor submit FILE [--server URL] [--cacert FILE] "
	    "[-o table|json|yaml]\n");
}

/* The shipped data: installed, else the source tree we run from. */
static const char *
shipped(const char *installed, const char *in_tree)
{
	struct stat st;

	if (stat(installed, &st) != 0 && stat(in_tree, &st) == 0)
		return in_tree;
	return installed;
}

static int
parse_opts(int argc, char **argv, int first, struct opts *o)
{
	o->catalog = shipped(MF_DATADIR "/gpus.yaml", "catalog/gpus.yaml");
	o->models = shipped(MF_DATADIR "/models", "catalog/models");
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
				return -1;
		} else if (strcmp(a, "-f") == 0 && v != NULL) {
			o->catalog = v;
		} else if (strcmp(a, "-m") == 0 && v != NULL) {
			o->models = v;
		} else if (strcmp(a, "--server") == 0 && v != NULL) {
			o->server = v;
		} else if (strcmp(a, "--cacert") == 0 && v != NULL) {
			o->cacert = v;
		} else if (strcmp(a, "--estimator") == 0 && v != NULL) {
			o->estimator = v;
		} else if (o->file == NULL && (a[0] != '-' || a[1] == '\0')) {
			o->file = a;
			continue;
		} else {
			return -1;
		}
		i++;
	}
	return 0;
}

/* Read FILE, or standard input for "-"; NULL (reported) on failure. */
static char *
slurp(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	struct mf_buf b;
	char chunk[65536];
	size_t n;

	if (f == NULL) {
		fprintf(stderr, "memfloor: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	mf_buf_init(&b, CLI_INPUT_MAX);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (mf_buf_add(&b, chunk, n) != MF_OK)
			break;
	if (f != stdin)
		fclose(f);
	if (b.rc != MF_OK) {
		fprintf(stderr, "memfloor: %s: %s\n", path, mf_strerror(b.rc));
		mf_buf_free(&b);
		return NULL;
	}
	*len = b.len;
	return mf_buf_take(&b);
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

/* estimate, admit, diagnose: load what the call needs, run it, print. */
static int
offline(mf_api_call fn, const struct opts *o)
{
	struct mf_catalog *cat = NULL;
	struct mf_models *models = NULL;
	struct mf_answer ans;
	struct mf_error err;
	struct mf_api api = { NULL, NULL, NULL, NULL, 0, NULL };
	char *body = NULL;
	size_t len = 0;
	int rc = EXIT_INPUT;

	if (mf_cat_load(o->catalog, &cat, &err) != MF_OK ||
	    mf_models_load(o->models, &models, &err) != MF_OK) {
		fprintf(stderr, "memfloor: %s\n", err.message);
		goto out;
	}
	body = slurp(o->file ? o->file : "-", &len);
	if (body == NULL)
		goto out;
	api.cat = cat;
	api.models = models;
	api.estimator = o->estimator;
	fn(&api, body, len, MF_DOC_AUTO, o->out, &ans);
	if (ans.kind == MF_ANS_FETCH) {
		fprintf(stderr,
		    "memfloor: spec.model.configUrl: configs are "
		    "fetched by the daemon (memfloor submit)\n");
		mf_answer_free(&ans);
		goto out;
	}
	fwrite(ans.body, 1, ans.len,
	    ans.kind == MF_ANS_OK || ans.kind == MF_ANS_REJECTED ? stdout :
	                                                           stderr);
	rc = exit_for(ans.kind);
	mf_answer_free(&ans);
out:
	free(body);
	mf_models_free(models);
	mf_cat_unref(cat);
	return rc;
}

static int
catalog_check(const char *path)
{
	struct mf_catalog *cat = NULL;
	struct mf_answer ans;
	struct mf_error err;
	struct mf_api api = { NULL, NULL, NULL, NULL, 0, NULL };

	if (mf_cat_load(path, &cat, &err) != MF_OK) {
		fprintf(stderr, "%s\n", err.message);
		return EXIT_INPUT;
	}
	api.cat = cat;
	mf_api_catalog(&api, NULL, MF_OUT_TEXT, &ans);
	fwrite(ans.body, 1, ans.len, stdout);
	mf_answer_free(&ans);
	mf_cat_unref(cat);
	return EXIT_ADMITTED;
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

int
main(int argc, char **argv)
{
	struct opts o;
	int rc;

	memset(&o, 0, sizeof(o));
	if (argc < 2) {
		usage(stderr);
		return EXIT_INPUT;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "catalog") == 0) {
		if (argc != 4 || strcmp(argv[2], "check") != 0) {
			usage(stderr);
			return EXIT_INPUT;
		}
		return catalog_check(argv[3]);
	}
	if (parse_opts(argc, argv, 2, &o) != 0) {
		usage(stderr);
		return EXIT_INPUT;
	}
	if (strcmp(argv[1], "estimate") == 0)
		return offline(mf_api_estimate, &o);
	if (strcmp(argv[1], "admit") == 0)
		return offline(mf_api_admit, &o);
	if (strcmp(argv[1], "diagnose") == 0)
		return offline(mf_api_diagnose, &o);
	if (strcmp(argv[1], "submit") == 0) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		rc = submit(&o);
		curl_global_cleanup();
		return rc;
	}
	usage(stderr);
	return EXIT_INPUT;
}
