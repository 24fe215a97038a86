/*
 * memfloord: the GPU admission daemon.  Flags, start-up and signals.
 *
 * Signals are blocked before any thread starts, so every thread inherits
 * the mask and main alone receives them with sigwait: SIGHUP reloads,
 * SIGTERM and SIGINT drain and exit.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <curl/curl.h>

#include "fetch.h"
#include "memfloord.h"

#ifndef MF_DATADIR
#define MF_DATADIR "/usr/local/share/memfloor"
#endif

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: memfloord [-dnv] [-f catalog.yaml] [-m models-dir] "
	    "[-l ADDR:PORT]\n"
	    "                 [--threads N] [--max-body BYTES] "
	    "[--tls-cert FILE --tls-key FILE]\n"
	    "                 [--model-host HOST] [--log-format text|json]\n");
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

static int
parse_args(int argc, char **argv, struct mfd_config *cfg)
{
	enum { O_THREADS = 256, O_MAXBODY, O_CERT, O_KEY, O_HOST, O_LOGFMT };
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	size_t n;
	int ch;

	while ((ch = getopt_long(argc, argv, "dnvf:m:l:h", longopts, NULL)) !=
	    -1) {
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
		case 'm':
			cfg->models_dir = optarg;
			break;
		case 'l':
			cfg->listen = optarg;
			break;
		case O_THREADS:
			if (parse_size(optarg, 1, 1024, &n) != 0)
				goto bad;
			cfg->threads = (unsigned)n;
			break;
		case O_MAXBODY:
			if (parse_size(optarg, 1024, 1u << 30, &cfg->max_body))
				goto bad;
			break;
		case O_CERT:
			cfg->tls_cert = optarg;
			break;
		case O_KEY:
			cfg->tls_key = optarg;
			break;
		case O_HOST:
			if (cfg->nmodel_hosts == MFD_MAX_MODEL_HOSTS)
				goto bad;
			cfg->model_hosts[cfg->nmodel_hosts++] = optarg;
			break;
		case O_LOGFMT:
			if (strcmp(optarg, "json") != 0 &&
			    strcmp(optarg, "text") != 0)
				goto bad;
			cfg->log_json = strcmp(optarg, "json") == 0;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind == argc)
		return 0;
	fprintf(stderr, "memfloord: unexpected argument '%s'\n", argv[optind]);
	usage(stderr);
	return -1;
bad:
	fprintf(stderr, "memfloord: bad value '%s'\n", optarg);
	usage(stderr);
	return -1;
}

static void
defaults(struct mfd_config *cfg)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	memset(cfg, 0, sizeof(*cfg));
	cfg->catalog_path = MF_DATADIR "/gpus.yaml";
	cfg->models_dir = MF_DATADIR "/models";
	cfg->listen = "127.0.0.1:8080";
	cfg->threads = cores > 0 ? (unsigned)cores : 1;
	cfg->max_body = 1u << 20;
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

static int
serve(const struct mfd_config *cfg, sigset_t *set)
{
	int sig;

	if (mfd_state_watch() != 0)
		mfd_log(MFD_WARN, "cannot watch %s; reload with SIGHUP",
		    cfg->catalog_path);
	if (mfd_server_start(cfg) != 0)
		return 1;
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
		mfd_log(MFD_INFO, "stopped");
		return 0;
	}
}

int
main(int argc, char **argv)
{
	struct mfd_config cfg;
	struct mf_error err;
	sigset_t set;
	int rc;

	defaults(&cfg);
	if (parse_args(argc, argv, &cfg) != 0)
		return 2;
	mfd_log_init(cfg.log_json, cfg.verbose ? MFD_DEBUG : MFD_INFO, 0);
	memset(&err, 0, sizeof(err));
	if (mfd_state_init(&cfg, &err) != MF_OK) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	if (cfg.check_only) {
		printf("configuration OK\n");
		mfd_state_fini();
		return 0;
	}
	if (!cfg.foreground) {
		if (daemon(0, 0) != 0) {
			perror("memfloord: daemon");
			return 1;
		}
		mfd_log_init(cfg.log_json, cfg.verbose ? MFD_DEBUG : MFD_INFO,
		    1);
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	raise_fd_limit();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (mfd_fetch_init(cfg.model_hosts, cfg.nmodel_hosts) != 0) {
		mfd_log(MFD_ERROR, "cannot start the config fetcher");
		return 1;
	}
	rc = serve(&cfg, &set);
	mfd_fetch_fini();
	curl_global_cleanup();
	mfd_state_fini();
	return rc;
}
