/*
 * guard.h: what one client may hold of the daemon.
 *
 * mfd_guard_*: a deadline for every connection (libmicrohttpd's own
 * timeout counts idle time only), the rate-limited log line about a
 * connection closed mid-request, and the budget of memory that request
 * bodies being received may take across all connections.
 */
#ifndef MFD_GUARD_H
#define MFD_GUARD_H

#include <stddef.h>
#include <sys/socket.h>

#include "memfloord.h"

struct mfd_conn;

/*
 * Start the thread that enforces deadlines: request_s from a connection's
 * start, or from a later request's request line, to its answer; idle_s
 * between requests.  body_bytes is the budget of mfd_guard_body_take.
 * -1 when the thread cannot start.
 */
int mfd_guard_start(unsigned request_s, unsigned idle_s, size_t body_bytes);
/* Stop the thread; connections still open keep their records. */
void mfd_guard_stop(void);

/* A new connection on socket fd from peer (copied); NULL when out of
 * memory (the connection then has no deadline of its own). */
struct mfd_conn *mfd_guard_open(int fd, const struct sockaddr *peer);
/* The connection is closing: logs (rate-limited) a request cut short and
 * frees c.  NULL is a no-op. */
void mfd_guard_close(struct mfd_conn *c);
/* A request line arrived. */
void mfd_guard_begin(struct mfd_conn *c);
/* The request ended: answered, or not (then the close is logged). */
void mfd_guard_end(struct mfd_conn *c, int answered);
/* While suspended (a configUrl fetch) a connection has no deadline. */
void mfd_guard_suspend(struct mfd_conn *c, int suspended);
/* "ADDR:PORT" of the client, "?" when unknown; valid while c is. */
const char *mfd_guard_addr(const struct mfd_conn *c);

/* Take n bytes of the body budget: 0, or -1 (nothing taken) when the
 * bodies being received would then be over it. */
int mfd_guard_body_take(size_t n);
void mfd_guard_body_give(size_t n);
size_t mfd_guard_body_used(void);

#endif
