/*
 * tls.h: the certificate and key memfloord serves, swappable at run time.
 *
 * libmicrohttpd asks for the certificate at every handshake through a
 * GnuTLS retrieve callback, so a reload (SIGHUP, cert-manager rotation)
 * takes effect for the next handshake without closing the listener.
 */
#ifndef MFD_TLS_H
#define MFD_TLS_H

#include <microhttpd.h>

#include "memfloord.h"

/* Load cfg->tls_cert and cfg->tls_key; -1 (logged) when they are bad. */
int mfd_tls_init(const struct mfd_config *cfg);
/* Options for MHD_OPTION_ARRAY: the callback when TLS is on, else none. */
struct MHD_OptionItem *mfd_tls_options(void);
/* Re-read both files; a bad pair keeps the one in service (logged). */
int mfd_tls_reload(void);
/* Reload when the files change (their directories are watched); -1 when
 * they cannot be watched.  A no-op without TLS. */
int mfd_tls_watch(void);
/* Generations loaded: the one in service and those a handshake may still
 * read. */
size_t mfd_tls_generations(void);
void mfd_tls_fini(void);

#endif
