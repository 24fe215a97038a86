/*
 * memfloord.h: the daemon's modules, private to daemon/.
 *
 * mfd_log_*: leveled logging to stderr or syslog, text or JSON lines.
 * mfd_metrics_*: atomic counters and their Prometheus text.
 * mfd_state_*: the catalogue in service, the shipped models, reloads.
 * mfd_server_*: the HTTP server (libmicrohttpd) and its routes.
 * mfd_cpus: the CPUs the daemon may use, for its default thread count.
 * mfd_page: the web page, compiled in.
 */
#ifndef MFD_H
#define MFD_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "../admission/api.h"
#include "../catalog/catalog.h"
#include "../catalog/datadir.h"

#define MFD_MAX_MODEL_HOSTS 32
#define MFD_MAX_LISTEN 8 /* -l given that many times */

struct mfd_config {
	const char *catalog_path;
	/* -m DIR, in the order given; models_dirs adds the shipped ones. */
	const char *given_models[MF_DATA_MAX_MODEL_DIRS];
	size_t ngiven_models;
	struct mf_data_models models_dirs;
	const char *listen[MFD_MAX_LISTEN]; /* ADDR:PORT, each served */
	size_t nlisten;
	const char *tls_cert;
	const char *tls_key;
	const char *model_hosts[MFD_MAX_MODEL_HOSTS];
	size_t nmodel_hosts;
	unsigned threads;
	size_t max_body;
	size_t max_body_memory;   /* bodies being received, all connections */
	unsigned request_timeout; /* seconds from a request's start */
	unsigned max_conns_per_ip;
	int foreground;
	int check_only;
	int verbose;
	int log_json;
	/* --store FILE: where observations are kept (design 23); NULL: not
	 * kept.  --observe-token-file: the bearer tokens that write them. */
	const char *store_path;
	const char *observe_tokens;
	/* --prometheus URL: where the DCGM peaks are read (prometheus.c);
	 * NULL: not read.  Its bearer token's file, its CA file (NULL:
	 * none, the system's) and the window its peaks are taken over. */
	const char *prometheus_url;
	const char *prometheus_token;
	const char *prometheus_ca;
	unsigned prometheus_window; /* seconds */
};

enum mfd_level { MFD_ERROR, MFD_WARN, MFD_INFO, MFD_DEBUG };

/* The longest bearer token a token file may hold: a Kubernetes service
 * account's (a JWT) is 1 to 2 KB. */
#define MFD_TOKEN_MAX 4096
/*
 * The tokens of the file at path into tokens[0..*n), each malloc'd
 * (mfd_tokens_free), at most max: one a line, blank lines and lines that
 * start with '#' left out, a CR before the newline dropped.  A token over
 * MFD_TOKEN_MAX bytes, a NUL byte, more than max tokens, none, or a file
 * that cannot be read is -1, logged naming flag (the option), the file
 * and the line, with none kept; 0 otherwise.
 */
int mfd_tokens_read(const char *flag, const char *path, char **tokens,
    size_t max, size_t *n);
void mfd_tokens_free(char **tokens, size_t n);

/* Milliseconds on the monotonic clock, for deadlines and ages. */
long long mfd_now_ms(void);
/* Initialise cond to wait on the monotonic clock, on which a deadline of
 * mfd_due_in is reckoned. */
void mfd_cond_monotonic(pthread_cond_t *cond);
/* *due: ms milliseconds from now on the monotonic clock, for
 * pthread_cond_timedwait on a condition of mfd_cond_monotonic. */
void mfd_due_in(struct timespec *due, long ms);

/* Log to stderr, a write(2) a line; before any thread starts. */
void mfd_log_init(int json, enum mfd_level level);
/*
 * From now on, request lines wait in a buffer, written out when it is
 * full or at most 100 ms after its first line; any other line writes it
 * out first.  Starts a thread: call after fork(2), with signals blocked.
 * -1 if the thread cannot start; lines are then written one by one.
 */
int mfd_log_buffer(void);
/* Flush and stop buffering (a no-op if it never started). */
void mfd_log_fini(void);
/*
 * Log to syslog from now on; call while stderr is still open.  Without a
 * syslog socket at /dev/log it says so on stderr and drops every later
 * line (mfd_log_enabled is then false).
 */
void mfd_log_syslog(void);
int mfd_log_enabled(enum mfd_level level);
void mfd_log(enum mfd_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* mfd_log with its arguments in ap. */
void mfd_vlog(enum mfd_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* One line per request; client strings are escaped here.  field: the
 * field an error answer names, or "" (then not written). */
void mfd_log_request(const char *method, const char *path, int status,
    long usec, const char *job, const char *decision, const char *field);

enum mfd_route {
	MFD_R_ADMIT,
	MFD_R_ESTIMATE,
	MFD_R_DIAGNOSE,
	MFD_R_REVIEW,
	MFD_R_CATALOG,
	MFD_R_MODELS,
	MFD_R_SCHEMA,
	MFD_R_HEALTHZ,
	MFD_R_READYZ,
	MFD_R_METRICS,
	MFD_R_PAGE,
	MFD_R_OBSERVATIONS, /* GET and POST /v1/observations */
	MFD_R_OBSERVATION,  /* DELETE /v1/observations/ID */
	MFD_R_CALIBRATION,  /* GET /v1/calibration */
	MFD_R_OTHER,
	MFD_R_COUNT
};

const char *mfd_route_path(enum mfd_route r);
void mfd_metrics_request(enum mfd_route r, int status, long usec);
void mfd_metrics_admission(enum mf_verdict v);
/* A load of the catalogue file: counted, and the file-invalid gauge set. */
void mfd_metrics_reload(int ok);
void mfd_metrics_tls_reload(int ok);
enum mfd_fetch_outcome {
	MFD_FETCHED_NEW,
	MFD_FETCHED_CACHE,
	MFD_FETCHED_ERROR,
	MFD_FETCHED_N
};
void mfd_metrics_fetch(enum mfd_fetch_outcome o);
/* The Prometheus reader's periods (ok: every query answered) and what
 * became of each finished run it handed on (an enum mfd_obs_kept). */
void mfd_metrics_prom_read(int ok);
void mfd_metrics_prom_run(int kept);
/*
 * Design 23's calibration (calibrate.c): a recipe and card's
 * observations, each error the model's figure / the observed one - 1
 * (positive: the safe side).  A figure of n 0 has none.
 */
struct mfd_calib_figure {
	size_t n;
	double median;
	double worst; /* the least: the furthest on the unsafe side */
};
struct mfd_calib_group {
	const char *method; /* the manifest's names; static strings */
	const char *precision;
	const char *checkpointing;
	const char *framework; /* NULL: the jobs named none */
	char card[128];
	int64_t count;                  /* observations */
	struct mfd_calib_figure memory; /* the estimate a GPU, the peak */
	struct mfd_calib_figure speed;  /* modelled tokens/s, observed */
};
struct mfd_calibration {
	size_t n;
	struct mfd_calib_group g[]; /* by recipe, then card */
};
struct mf_store;
struct mf_observation;
/*
 * The calibration of the first max observations of st: each against the
 * job its fingerprint's admission recorded, through the library on the
 * catalogue in service, on the observation's card and count.  An
 * observation whose job, card or peak is not known is left out.
 * malloc'd (mfd_calibration_free); NULL with err on failure.
 */
struct mfd_calibration *
mfd_calibrate(struct mf_store *st, size_t max, struct mf_error *err);
void mfd_calibration_free(struct mfd_calibration *c);

/* The gauges the caller reads from the modules that own them, so that
 * metrics.c depends on none of them. */
struct mfd_gauges {
	uint64_t catalog_version; /* of the catalogue in service; 0: none */
	size_t catalog_gpus;      /* GPU types in it */
	size_t tls_generations;   /* mfd_tls_generations() */
	/* mfd_obs_calibration(); NULL: none written */
	const struct mfd_calibration *calibration;
	/* mfd_obs_queue()'s: whether there is a store, its admissions
	 * waiting and those dropped */
	int store;
	size_t store_queued;
	uint64_t store_dropped;
};
/* Prometheus text of the counters and g; malloc'd, NULL on allocation
 * failure. */
char *mfd_metrics_render(const struct mfd_gauges *g);

/*
 * Load the catalogue and the models; start-up errors are returned with
 * err.  With cfg->check_only (-n) a model file that does not parse is
 * such an error; otherwise it is logged (FILE:LINE: problem) and left
 * out, and the others are served.  Logs what was loaded (not with -n).
 */
enum mf_rc mfd_state_init(const struct mfd_config *cfg, struct mf_error *err);
void mfd_state_fini(void);
/* The catalogue in service into *cat (NULL before one is loaded) and the
 * models into *m, from the same reload, each with a reference taken
 * (mf_cat_unref, mf_models_free); a NULL out-parameter is not wanted. */
void mfd_state_take(struct mf_catalog **cat, struct mf_models **m);
/*
 * Re-read the catalogue file and the model directories (SIGHUP); each
 * that fails keeps the one in service, and a model file that no longer
 * parses keeps its last good model.  The catalogue's result is returned.
 */
enum mf_rc mfd_state_reload(const char *why);
/* Watch the catalogue's directory and reload on change. */
int mfd_state_watch(void);

/* The most paths one mfd_watch watches. */
#define MFD_WATCH_MAX 4
/*
 * Watch the directories of paths (n of them, at most MFD_WATCH_MAX: a
 * ConfigMap or Secret volume swaps a symlink there; editors rename over
 * the file), and those of the symlinks each path meets and of the file it
 * leads to (a link to a file elsewhere, a release directory flipped),
 * and call settled(arg) on a thread of its own once a burst of changes
 * has settled, and once a second while a directory is not there (removed,
 * to be made again).  -1 when the directories cannot be watched at the
 * start.
 */
int mfd_watch(const char *const *paths, size_t n, void (*settled)(void *),
    void *arg);
/* Whether path (through symlinks) is no longer the file seen was stat'd
 * from; 0 while it is missing (a swap in progress). */
int mfd_file_changed(const char *path, const struct stat *seen);

/* CPUs this process may use: its affinity mask, capped by its cgroup's
 * CPU quota rounded up to whole CPUs; at least 1. */
unsigned mfd_cpus(void);
/*
 * The smallest CPU quota, in whole CPUs rounded up, of the cgroups that
 * self (a /proc/PID/cgroup file) names, under root (where cgroupfs is
 * mounted, v2 or v1) and their parents; 0 when none is set or readable.
 */
unsigned mfd_cpu_quota(const char *root, const char *self);

struct MHD_Response;
/* The page's file at path (/, /page.js or /page.css) as a malloc'd body. */
void mfd_page(const char *path, struct mf_answer *ans);
/* The headers every answer of the page's routes carries: the
 * Content-Security-Policy that keeps every request on the origin. */
void mfd_page_headers(struct MHD_Response *resp);

/*
 * The observations (observe.c, design 23).  mfd_obs_check opens the
 * store and reads the token file and closes them again (-n, and before
 * the daemon detaches, so that a bad --store stops it with the reason on
 * stderr); mfd_obs_start opens them for service (after it detaches: the
 * store has a writer thread).  -1, logged, when the store is not
 * memfloor's (it is left as it is) or the token file cannot be read.
 */
int mfd_obs_check(const struct mfd_config *cfg);
int mfd_obs_start(const struct mfd_config *cfg);
/* Write what is queued and close the store. */
void mfd_obs_stop(void);
/*
 * What the runs of the job of fingerprint fp measured, a card each, from
 * the summaries in memory (struct mf_api's observed): never waits on the
 * store; out->n 0 without --store or observations.
 */
void mfd_obs_observed(const char *fp, struct mf_observed *out);
/* Whether observations are kept (--store): admissions are recorded and
 * their observations looked up only then. */
int mfd_obs_kept(void);
/* An admission's record (ans->placed, copied) queued for the store; the
 * caller does not wait. */
void mfd_obs_admitted(struct mf_answer *ans);
/* The store's admissions waiting for its writer (mf_store_queued) and
 * dropped since the start: 0, or -1 without --store. */
int mfd_obs_queue(size_t *queued, uint64_t *dropped);
/*
 * The routes: each fills ans and returns the HTTP status (201 with the
 * id and fingerprint, 200 with the list, 204; 400 naming the field, 401
 * without a bearer token, 403 with a wrong one, 404 without --store or
 * for an unknown id, 503 when the store fails).  auth is the
 * Authorization header, or NULL.  A POST reads its body against api, as
 * an admission would (the catalogue and models in service, the runs'
 * observations).
 */
int mfd_obs_post(const struct mf_api *api, const char *auth, const char *body,
    size_t len, enum mf_doc_format fmt, enum mf_output out,
    struct mf_answer *ans);
int mfd_obs_list(const char *fingerprint, enum mf_output out,
    struct mf_answer *ans);
int mfd_obs_delete(const char *auth, const char *id, enum mf_output out,
    struct mf_answer *ans);
/* What became of an observation given to be kept. */
enum mfd_obs_kept {
	MFD_OBS_KEPT,
	MFD_OBS_DUPLICATE, /* its run (the id it gave) was kept before */
	MFD_OBS_INVALID,   /* against the catalogue's rules */
	MFD_OBS_UNKNOWN,   /* no admission of its fingerprint is known */
	MFD_OBS_FAILED     /* no --store, or the store failed */
};
/*
 * Keep o, which names its fingerprint, by the path POST takes (the same
 * checks, the same write, the summaries refreshed): the Prometheus
 * reader's way in.  err says why not.
 */
enum mfd_obs_kept
mfd_obs_record(struct mf_observation *o, struct mf_error *err);
/* GET /v1/calibration: 200 {"groups": [...]}, 404 without --store, 503
 * when the store fails. */
int mfd_obs_calibration_answer(enum mf_output out, struct mf_answer *ans);
/* The calibration of the store's observations for /metrics; NULL without
 * --store or on failure (logged). */
struct mfd_calibration *mfd_obs_calibration(void);

/* The request headers the daemon reads. */
enum mfd_header {
	MFD_H_ACCEPT,
	MFD_H_CONTENT_TYPE,
	MFD_H_CONTENT_LENGTH,
	MFD_H_TRANSFER_ENCODING,
	MFD_H_EXPECT,
	MFD_H_COUNT
};

/* Those headers of a request, each the first of its name (as
 * libmicrohttpd's lookup gives it) or NULL, borrowed from the connection;
 * how many Content-Lengths came, and the first one's value (0 without
 * one). */
struct mfd_headers {
	const char *v[MFD_H_COUNT];
	int lengths;
	size_t length;
};

struct MHD_Connection;
/* c's headers into h, in one pass over them. */
void mfd_headers_read(struct MHD_Connection *c, struct mfd_headers *h);

/*
 * Accept (NULL: none): JSON, YAML or text/plain, whichever the header
 * gives the highest q (RFC 9110 12.5.1: a type's q is that of the range
 * that names it most closely, the ranges of a kind and of any type
 * included; 0 refuses it),
 * of equal ones the one listed first; JSON when none is acceptable, or by
 * default.
 */
enum mf_output mfd_negotiate(const char *accept);
/* The body's format from Content-Type (NULL: sniffed); -1 for a type
 * refused (415), as is any but JSON when json_only. */
int mfd_body_format(const char *ctype, int json_only);

/* Check --listen and the TLS files without serving; -1 (logged) if bad. */
int mfd_server_check(const struct mfd_config *cfg);
int mfd_server_start(const struct mfd_config *cfg);
/* Stop accepting, let requests in flight finish, then stop. */
void mfd_server_stop(void);
/* SIGHUP: reload TLS files when serving TLS. */
void mfd_server_reload_tls(void);

#endif
