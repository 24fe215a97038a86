/*
 * http_layer.h: how memfloord starts libmicrohttpd, apart from its
 * handlers, address and TLS: the threads, a connection's limits and the
 * listening socket.  The bench's hello-world (tests/bench/bench_hello.c)
 * starts its own with these, so that the two differ only in the work of
 * their handlers.
 */
#ifndef MFD_HTTP_LAYER_H
#define MFD_HTTP_LAYER_H

#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <sys/socket.h>

/* The connections memfloord holds at once, all clients together: the
 * most --max-conns-per-ip may allow one. */
#define MFD_CONNECTIONS 8192

/* MHD_start_daemon's flags, to which a caller adds its own, and the
 * options for MHD_OPTION_ARRAY, ended by MHD_OPTION_END. */
struct mfd_http_layer {
	unsigned flags;
	struct MHD_OptionItem options[5];
};

/*
 * libmicrohttpd's internal polling thread, with threads workers: a pool
 * of them when more than one (one is the polling thread alone: a pool of
 * 1 is refused); 8 KB a connection (libmicrohttpd clears this pool for
 * every request: kept small); MFD_CONNECTIONS connections and a backlog
 * of 4,096.
 */
static inline struct mfd_http_layer
mfd_http_layer(unsigned threads)
{
	return (struct mfd_http_layer){ MHD_USE_POLL_INTERNAL_THREAD,
		{
		    { MHD_OPTION_CONNECTION_MEMORY_LIMIT, 8192, NULL },
		    { MHD_OPTION_CONNECTION_LIMIT, MFD_CONNECTIONS, NULL },
		    { MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096, NULL },
		    { threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE :
		                    MHD_OPTION_END,
		        (intptr_t)threads, NULL },
		    { MHD_OPTION_END, 0, NULL },
		} };
}

/*
 * Hand d a connection only once its first bytes are in: TCP_DEFER_ACCEPT
 * for a second, as nginx's "listen ... deferred" sets it
 * (src/core/ngx_connection.c, ngx_configure_listening_sockets).
 * libmicrohttpd 0.9.75's poll loop accepts one connection a round, then
 * runs every ready connection's handlers in that round.  Connections
 * accepted before their ClientHellos came were handshaken together in one
 * round, a signature each (RSA-2048: 1.7 ms in GnuTLS), while the requests
 * of the open connections waited (docs/performance.md, "TLS connections
 * accepted with their ClientHello").  Accepted with it, one is handshaken
 * a round.  0, or -1 with errno set.
 */
static inline int
mfd_defer_accept(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *info =
	    MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
	int secs = 1;

	if (info == NULL) {
		errno = EBADF;
		return -1;
	}
	return setsockopt(info->listen_fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs,
	    sizeof(secs));
}

#endif
