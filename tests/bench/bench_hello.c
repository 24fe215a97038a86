/*
 * bench_hello: libmicrohttpd's hello-world, what make bench measures
 * memfloord against (tests/bench/bench.sh, docs/performance.md): every
 * request has its body read and dropped and is answered 200 with a fixed
 * JSON body.  The daemon is started as memfloord starts its own
 * (daemon/server.c, listen_on): the threads, a connection's limits and
 * the listening socket of daemon/http_layer.h.
 *
 *     bench_hello [THREADS]
 *
 * Listens on 127.0.0.1 on a free port, says "listening on 127.0.0.1 port
 * P" on stderr, and stops on SIGINT or SIGTERM.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "http_layer.h"

static const char body[] = "{\"hello\":\"world\"}\n";

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload,
    size_t *upload_size, void **state)
{
	static int started;
	struct MHD_Response *r;
	enum MHD_Result ret;

	(void)cls;
	(void)url;
	(void)method;
	(void)version;
	(void)upload;
	/* The first call has only the headers; the body comes after. */
	if (*state == NULL) {
		*state = &started;
		return MHD_YES;
	}
	if (*upload_size != 0) {
		*upload_size = 0;
		return MHD_YES;
	}
	r = MHD_create_response_from_buffer(sizeof(body) - 1, (void *)body,
	    MHD_RESPMEM_PERSISTENT);
	if (r == NULL)
		return MHD_NO;
	if (MHD_add_response_header(r, "Content-Type", "application/json") !=
	    MHD_YES) {
		MHD_destroy_response(r);
		return MHD_NO;
	}
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

int
main(int argc, char **argv)
{
	struct mfd_http_layer http;
	const union MHD_DaemonInfo *info;
	struct MHD_Daemon *d;
	struct sockaddr_in sin;
	sigset_t stop;
	long threads = 1;
	int sig;

	if (argc == 2)
		threads = strtol(argv[1], NULL, 10);
	if (argc > 2 || threads < 1 || threads > 1024) {
		fprintf(stderr, "usage: bench_hello [THREADS]\n");
		return 2;
	}
	http = mfd_http_layer((unsigned)threads);
	/* The daemon's threads inherit the mask: only main takes the signal. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	d = MHD_start_daemon(http.flags | MHD_USE_ERROR_LOG, 0, NULL, NULL,
	    on_request, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sin,
	    MHD_OPTION_ARRAY, http.options, MHD_OPTION_END);
	if (d == NULL) {
		fprintf(stderr, "bench_hello: cannot listen on 127.0.0.1\n");
		return 1;
	}
	if (mfd_defer_accept(d) != 0) {
		perror("bench_hello: TCP_DEFER_ACCEPT");
		MHD_stop_daemon(d);
		return 1;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	fprintf(stderr, "bench_hello: listening on 127.0.0.1 port %d\n",
	    info != NULL ? info->port : -1);
	sigwait(&stop, &sig);
	MHD_stop_daemon(d);
	return 0;
}
