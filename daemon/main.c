/*
 * memfloord: the GPU admission daemon.  Flags, start-up and signals.
 *
 * Signals are blocked before any thread starts, so every thread inherits
 * the mask and main alone receives them with sigwait: SIGHUP reloads,
 * SIGTERM and SIGINT drain and exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <curl/curl.h>

#include "../catalog/datadir.h"
#include "../fetch/fetch.h"
#include "http_layer.h"
#include "memfloord.h"
#include "prometheus.h"

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: memfloord [-dnv] [-f catalog.yaml] [-m models-dir]... [-l ADDR:PORT]...\n"
	    "                 [--threads N] [--max-body BYTES] [--tls-cert FILE --tls-key FILE]\n"
	    "                 [--model-host HOST] [--log-format text|json]\n"
	    "                 [--request-timeout SECONDS] "
	    "[--max-conns-per-ip N] [--max-body-memory BYTES]\n"
	    "                 [--store FILE] [--observe-token-file FILE]\n"
	    "                 [--prometheus URL [--prometheus-token-file FILE]\n"
	    "                  [--prometheus-ca FILE] [--prometheus-window SECONDS]]\n"
	    "       memfloord --version\n");
}

static int
parse_size(const char *s, size_t min, size_t max, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || s[0] == '-' || v < min || v > max)
		return -1;
	*out = (size_t)v;
	return 0;
}

static const char *
option_name(const struct option *opts, int ch)
{
	for (; opts->name != NULL; opts++)
		if (opts->val == ch)
			return opts->name;
	return "?";
}

/* A budget smaller than one body would refuse every body at the limit. */
static int
body_memory_fits(const struct mfd_config *cfg)
{
	if (cfg->max_body_memory > cfg->max_body)
		return 0;
	fprintf(stderr,
	    "memfloord: --max-body-memory %zu must be more than --max-body %zu\n",
	    cfg->max_body_memory, cfg->max_body);
	return -1;
}

/*
 * The shipped catalogue where -f names none, and the model directories:
 * the shipped models, then each -m (the rule is in catalog/datadir.h); -1,
 * said, when they are nowhere.
 */
static int
find_data(struct mfd_config *cfg)
{
	static char cat[PATH_MAX + 64];
	char tried[2 * PATH_MAX + 160];

	if (cfg->catalog_path == NULL &&
	    (cfg->catalog_path = mf_data_find("gpus.yaml", cat, sizeof(cat),
	         tried, sizeof(tried))) == NULL) {
		fprintf(stderr,
		    "memfloord: no catalogue: looked for %s; name one with -f FILE\n",
		    tried);
		return -1;
	}
	if (mf_data_model_dirs(cfg->given_models, cfg->ngiven_models,
	        &cfg->models_dirs, tried, sizeof(tried)) != 0) {
		fprintf(stderr, "memfloord: %s\n", tried);
		return -1;
	}
	return 0;
}

enum {
	O_THREADS = 256,
	O_MAXBODY,
	O_CERT,
	O_KEY,
	O_HOST,
	O_LOGFMT,
	O_TIMEOUT,
	O_PERIP,
	O_BODYMEM,
	O_STORE,
	O_TOKENS,
	O_PROM,
	O_PROMTOKEN,
	O_PROMCA,
	O_PROMWINDOW,
	O_VERSION
};

#define CFG(member) \
	offsetof(struct mfd_config, member), \
	    sizeof(((struct mfd_config *)0)->member)

/* The flags that take a number: its bounds, what it is in words for the
 * error (and the unit the error gives the largest in too, when it is a
 * whole number of them), and the member of the configuration it sets
 * (unsigned or size_t). */
static const struct number_flag {
	int opt;
	size_t min, max;
	const char *what;
	size_t unit;
	const char *units;
	size_t off, size;
} numbers[] = {
	{ O_THREADS, 1, 1024, "a number of threads", 0, NULL, CFG(threads) },
	{ O_MAXBODY, 1024, (size_t)1 << 30, "a size in bytes", (size_t)1 << 30,
	    "GiB", CFG(max_body) },
	{ O_TIMEOUT, 1, 3600, "a number of seconds", 0, NULL,
	    CFG(request_timeout) },
	{ O_PERIP, 1, MFD_CONNECTIONS, "a number of connections", 0, NULL,
	    CFG(max_conns_per_ip) },
	{ O_BODYMEM, 1024, (size_t)64 << 30, "a size in bytes", (size_t)1 << 30,
	    "GiB", CFG(max_body_memory) },
	{ O_PROMWINDOW, 60, (size_t)30 * 86400, "a number of seconds", 86400,
	    "days", CFG(prometheus_window) },
};

/* The flags given once an entry of a list: its array and count. */
static const struct list_flag {
	int opt;
	size_t max;
	const char *what;
	size_t list, count;
} lists[] = {
	{ 'm', MF_DATA_MAX_MODEL_DIRS, "directories",
	    offsetof(struct mfd_config, given_models),
	    offsetof(struct mfd_config, ngiven_models) },
	{ 'l', MFD_MAX_LISTEN, "addresses", offsetof(struct mfd_config, listen),
	    offsetof(struct mfd_config, nlisten) },
	{ O_HOST, MFD_MAX_MODEL_HOSTS, "hosts",
	    offsetof(struct mfd_config, model_hosts),
	    offsetof(struct mfd_config, nmodel_hosts) },
};

/* What flag f takes, in words from its bounds, into takes[0..n). */
static void
number_takes(const struct number_flag *f, char *takes, size_t n)
{
	char in_units[32] = "";

	if (f->unit != 0 && f->max % f->unit == 0)
		snprintf(in_units, sizeof(in_units), " (%zu %s)",
		    f->max / f->unit, f->units);
	snprintf(takes, n, "%s from %zu to %zu%s", f->what, f->min, f->max,
	    in_units);
}

/*
 * The value of flag ch, when it is one of numbers[] or lists[], into cfg:
 * 1 when set, 0 when ch is another flag, -1 with what it takes in words
 * in takes[0..n) when the value is refused.
 */
static int
table_flag(struct mfd_config *cfg, int ch, const char *v, char *takes, size_t n)
{
	char *base = (char *)cfg;
	size_t got;
	unsigned u;

	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
		const struct number_flag *f = &numbers[i];

		if (f->opt != ch)
			continue;
		if (parse_size(v, f->min, f->max, &got) != 0) {
			number_takes(f, takes, n);
			return -1;
		}
		u = (unsigned)got;
		memcpy(base + f->off, f->size == sizeof(u) ? (void *)&u : &got,
		    f->size);
		return 1;
	}
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		const struct list_flag *f = &lists[i];
		size_t *count = (size_t *)(void *)(base + f->count);
		const char **list = (const char **)(void *)(base + f->list);

		if (f->opt != ch)
			continue;
		if (*count >= f->max) {
			snprintf(takes, n, "at most %zu %s", f->max, f->what);
			return -1;
		}
		list[(*count)++] = v;
		return 1;
	}
	return 0;
}

static int
parse_args(int argc, char **argv, struct mfd_config *cfg)
{
	static const struct option longopts[] = {
		{ "catalog", required_argument, NULL, 'f' },
		{ "models", required_argument, NULL, 'm' },
		{ "listen", required_argument, NULL, 'l' },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "max-body", required_argument, NULL, O_MAXBODY },
		{ "tls-cert", required_argument, NULL, O_CERT },
		{ "tls-key", required_argument, NULL, O_KEY },
		{ "model-host", required_argument, NULL, O_HOST },
		{ "log-format", required_argument, NULL, O_LOGFMT },
		{ "request-timeout", required_argument, NULL, O_TIMEOUT },
		{ "max-conns-per-ip", required_argument, NULL, O_PERIP },
		{ "max-body-memory", required_argument, NULL, O_BODYMEM },
		{ "store", required_argument, NULL, O_STORE },
		{ "observe-token-file", required_argument, NULL, O_TOKENS },
		{ "prometheus", required_argument, NULL, O_PROM },
		{ "prometheus-token-file", required_argument, NULL,
		    O_PROMTOKEN },
		{ "prometheus-ca", required_argument, NULL, O_PROMCA },
		{ "prometheus-window", required_argument, NULL, O_PROMWINDOW },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	char takes[96] = "";
	int ch, set;

	while ((ch = getopt_long(argc, argv, "dnvf:m:l:h", longopts, NULL)) !=
	    -1) {
		set = table_flag(cfg, ch, optarg, takes, sizeof(takes));
		if (set < 0)
			goto bad;
		if (set > 0)
			continue;
		switch (ch) {
		case 'd':
			cfg->foreground = 1;
			break;
		case 'n':
			cfg->check_only = 1;
			break;
		case 'v':
			cfg->verbose = 1;
			break;
		case 'f':
			cfg->catalog_path = optarg;
			break;
		case O_CERT:
			cfg->tls_cert = optarg;
			break;
		case O_KEY:
			cfg->tls_key = optarg;
			break;
		case O_STORE:
			cfg->store_path = optarg;
			break;
		case O_TOKENS:
			cfg->observe_tokens = optarg;
			break;
		case O_PROM:
			cfg->prometheus_url = optarg;
			break;
		case O_PROMTOKEN:
			cfg->prometheus_token = optarg;
			break;
		case O_PROMCA:
			cfg->prometheus_ca = optarg;
			break;
		case O_LOGFMT:
			if (strcmp(optarg, "json") != 0 &&
			    strcmp(optarg, "text") != 0) {
				snprintf(takes, sizeof(takes), "text or json");
				goto bad;
			}
			cfg->log_json = strcmp(optarg, "json") == 0;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case O_VERSION:
			printf("memfloord %s\n", MF_VERSION);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (cfg->nlisten == 0) {
		cfg->listen[0] = "127.0.0.1:8080";
		cfg->nlisten = 1;
	}
	if (optind == argc)
		return body_memory_fits(cfg);
	fprintf(stderr, "memfloord: unexpected argument '%s'\n", argv[optind]);
	usage(stderr);
	return -1;
bad:
	fprintf(stderr, "memfloord: --%s '%s': takes %s\n",
	    option_name(longopts, ch), optarg, takes);
	usage(stderr);
	return -1;
}

static void
defaults(struct mfd_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->threads = mfd_cpus();
	cfg->max_body = 1u << 20;
	/* See docs/operations.md (The daemon) for how these were chosen. */
	cfg->request_timeout = 10;
	cfg->max_conns_per_ip = 1024;
	cfg->max_body_memory = 64u << 20;
}

/* Room for many idle keep-alive connections. */
static void
raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * Without -d: fork, and let the parent exit only once the child is serving
 * (0) or has failed (1), so whoever started memfloord sees start-up
 * errors.  In the child, returns the pipe to report on; -1 on failure.
 */
static int
detach(void)
{
	int fds[2];
	pid_t pid;
	char c;

	if (pipe(fds) != 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0) {
		close(fds[1]);
		if (read(fds[0], &c, 1) != 1)
			c = '1';
		_exit(c == '0' ? 0 : 1);
	}
	close(fds[0]);
	setsid();
	return fds[1];
}

/* Tell the waiting parent how start-up went; from now on, log to syslog. */
static void
detached(int fd, int ok)
{
	char c = ok ? '0' : '1';
	int null;

	if (fd < 0)
		return;
	if (ok) {
		mfd_log_syslog();
		null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
			if (null > STDERR_FILENO)
				close(null);
		}
	}
	if (write(fd, &c, 1) != 1)
		mfd_log(MFD_WARN, "cannot report start-up to the parent");
	close(fd);
}

/* The fetcher's lines, in the daemon's log. */
static void fetch_log(enum mf_fetch_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void
fetch_log(enum mf_fetch_level level, const char *fmt, va_list ap)
{
	switch (level) {
	case MF_FETCH_LOG_ERROR:
		mfd_vlog(MFD_ERROR, fmt, ap);
		break;
	case MF_FETCH_LOG_WARN:
		mfd_vlog(MFD_WARN, fmt, ap);
		break;
	case MF_FETCH_LOG_INFO:
		mfd_vlog(MFD_INFO, fmt, ap);
		break;
	}
}

/* What -n checks beyond the catalogue and models: every other flag. */
static int
check(const struct mfd_config *cfg)
{
	if (mfd_server_check(cfg) != 0)
		return -1;
	if (mf_fetch_init(cfg->model_hosts, cfg->nmodel_hosts, fetch_log) != 0)
		return -1;
	mf_fetch_fini();
	if (mfd_prom_check(cfg) != 0)
		return -1;
	return mfd_obs_check(cfg);
}

static int
start(const struct mfd_config *cfg)
{
	if (mf_fetch_init(cfg->model_hosts, cfg->nmodel_hosts, fetch_log) !=
	    0) {
		mfd_log(MFD_ERROR,
		    "--model-host: not HOST[:PORT] or http[s]://HOST[:PORT]");
		return -1;
	}
	if (mfd_state_watch() != 0)
		mfd_log(MFD_WARN, "cannot watch %s; reload with SIGHUP",
		    cfg->catalog_path);
	if (mfd_obs_start(cfg) != 0) {
		mf_fetch_fini();
		return -1;
	}
	if (mfd_prom_start(cfg) != 0) {
		mfd_obs_stop();
		mf_fetch_fini();
		return -1;
	}
	if (mfd_server_start(cfg) != 0) {
		mfd_prom_stop();
		mfd_obs_stop();
		mf_fetch_fini();
		return -1;
	}
	return 0;
}

/* SIGHUP reloads; SIGTERM and SIGINT drain and stop. */
static void
wait_signals(sigset_t *set)
{
	int sig;

	for (;;) {
		if (sigwait(set, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			mfd_state_reload("SIGHUP");
			mfd_server_reload_tls();
			continue;
		}
		mfd_log(MFD_INFO, "%s: draining requests in flight",
		    strsignal(sig));
		mfd_server_stop();
		mfd_prom_stop();
		mfd_obs_stop();
		mf_fetch_fini();
		mfd_log(MFD_INFO, "stopped");
		return;
	}
}

int
main(int argc, char **argv)
{
	struct mfd_config cfg;
	struct mf_error err;
	char msg[MF_ERROR_MAX];
	sigset_t set;
	int notify, rc;

	defaults(&cfg);
	if (parse_args(argc, argv, &cfg) != 0)
		return 2;
	if (find_data(&cfg) != 0)
		return 1;
	mfd_log_init(cfg.log_json, cfg.verbose ? MFD_DEBUG : MFD_INFO);
	memset(&err, 0, sizeof(err));
	if (mfd_state_init(&cfg, &err) != MF_OK) {
		fprintf(stderr, "%s\n",
		    mf_error_message(&err, msg, sizeof(msg)));
		return 1;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (cfg.check_only) {
		rc = check(&cfg);
		if (rc == 0)
			printf("configuration OK\n");
		goto out;
	}
	/* A --store that is not memfloor's stops it here, said on stderr. */
	if (mfd_prom_check(&cfg) != 0 || mfd_obs_check(&cfg) != 0) {
		rc = 1;
		goto out;
	}
	notify = cfg.foreground ? -1 : detach();
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	raise_fd_limit();
	if (mfd_log_buffer() != 0)
		mfd_log(MFD_WARN,
		    "cannot start the log flusher; writing request lines one by one");
	rc = start(&cfg);
	detached(notify, rc == 0);
	if (rc == 0)
		wait_signals(&set);
	mfd_log_fini();
out:
	curl_global_cleanup();
	mfd_state_fini();
	return rc == 0 ? 0 : 1;
}
