#include "tls.h"

#include <assert.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../admission/base/file.h"

#define MAX_CHAIN 8
/* A file's cap: a chain of MAX_CHAIN certificates is some tens of KiB. */
#define FILE_MAX (1024 * 1024)

/*
 * One loaded pair.  A generation replaced by a reload may still be read
 * by a handshake that began with it, and every handshake ends within its
 * connection's request deadline (the guard closes it then): so a
 * generation is freed once it has been out of service for longer than
 * that deadline, the next time a handshake or a reload comes by.
 */
struct gen {
	gnutls_pcert_st chain[MAX_CHAIN];
	unsigned nchain;
	gnutls_privkey_t key;
	struct gen *prev;  /* older generations, newest first */
	long long retired; /* monotonic ms, once replaced */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gen *current; /* and the list it heads: under lock */
static const char *cert_path, *key_path;
static long long grace;                 /* ms */
static struct stat cert_seen, key_seen; /* as of the last load */
static struct MHD_OptionItem options[2] = {
	{ MHD_OPTION_END, 0, NULL },
	{ MHD_OPTION_END, 0, NULL },
};

static void
gen_free(struct gen *g)
{
	if (g == NULL)
		return;
	assert(g->nchain <= MAX_CHAIN);
	for (unsigned i = 0; i < g->nchain; i++)
		gnutls_pcert_deinit(&g->chain[i]);
	gnutls_privkey_deinit(g->key);
	free(g);
}

/* Free the generations no handshake can still be reading; under lock. */
static void
sweep_locked(void)
{
	struct gen **p = &current->prev, *g;
	long long t = mfd_now_ms();

	while ((g = *p) != NULL) {
		if (t - g->retired <= grace) {
			p = &g->prev;
			continue;
		}
		*p = g->prev;
		gen_free(g);
	}
}

/* The file's bytes, wiped before they are freed: a key's copy in memory
 * should not outlive its use. */
static void
wipe(gnutls_datum_t *d)
{
	if (d->data != NULL)
		gnutls_memset(d->data, 0, d->size);
	free(d->data);
	d->data = NULL;
}

/* path's bytes into *d (free'd by the caller); 0, or -1 with why, which
 * names the file, in why. */
static int
read_pem(const char *path, const char *what, gnutls_datum_t *d, char *why,
    size_t size)
{
	struct mf_error err;
	char *buf;
	size_t len;

	if (mf_file_read(path, FILE_MAX, what, &buf, &len, &err) != MF_OK) {
		mf_error_message(&err, why, size);
		return -1;
	}
	d->data = (unsigned char *)buf;
	d->size = (unsigned)len;
	return 0;
}

/* Whether key signs what the chain's first certificate verifies. */
static int
pair_matches(struct gen *g)
{
	static const unsigned char msg[] = "memfloor key check";
	gnutls_datum_t data = { (unsigned char *)msg, sizeof(msg) }, sig;
	gnutls_pubkey_t pub = g->chain[0].pubkey;
	int algo, ok;

	algo = gnutls_pk_to_sign(gnutls_pubkey_get_pk_algorithm(pub, NULL),
	    GNUTLS_DIG_SHA256);
	if (gnutls_privkey_sign_data(g->key, GNUTLS_DIG_SHA256, 0, &data,
	        &sig) < 0)
		return 0;
	ok = gnutls_pubkey_verify_data2(pub, (gnutls_sign_algorithm_t)algo, 0,
	         &data, &sig) >= 0;
	gnutls_free(sig.data);
	return ok;
}

static struct gen *
load(void)
{
	gnutls_datum_t cert = { NULL, 0 }, key = { NULL, 0 };
	struct gen *g = calloc(1, sizeof(*g));
	const char *what = "out of memory";
	char why[MF_ERROR_MAX] = "";
	int rc;

	if (g == NULL)
		goto fail;
	g->nchain = MAX_CHAIN;
	what = "cannot read the certificate";
	stat(cert_path, &cert_seen);
	stat(key_path, &key_seen);
	if (read_pem(cert_path, "a certificate file", &cert, why,
	        sizeof(why)) != 0)
		goto fail;
	what = "cannot read the key";
	if (read_pem(key_path, "a key file", &key, why, sizeof(why)) != 0)
		goto fail;
	what = "not a PEM certificate chain";
	rc = gnutls_pcert_list_import_x509_raw(g->chain, &g->nchain, &cert,
	    GNUTLS_X509_FMT_PEM, 0);
	if (rc < 0 || g->nchain == 0) {
		g->nchain = 0;
		goto fail;
	}
	what = "not a PEM private key";
	if (gnutls_privkey_init(&g->key) < 0 ||
	    gnutls_privkey_import_x509_raw(g->key, &key, GNUTLS_X509_FMT_PEM,
	        NULL, 0) < 0)
		goto fail;
	what = "the key does not match the certificate";
	if (!pair_matches(g))
		goto fail;
	free(cert.data);
	wipe(&key);
	return g;
fail:
	mfd_log(MFD_ERROR, "tls: %s, %s: %s%s%s", cert_path, key_path, what,
	    why[0] != '\0' ? ": " : "", why);
	free(cert.data);
	wipe(&key);
	gen_free(g);
	return NULL;
}

static int
retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
    const gnutls_pk_algorithm_t *algos, int nalgos, gnutls_pcert_st **pcert,
    unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
	(void)session;
	(void)req_ca_dn;
	(void)nreqs;
	(void)algos;
	(void)nalgos;
	pthread_mutex_lock(&lock);
	*pcert = current->chain;
	*pcert_length = current->nchain;
	*pkey = current->key;
	if (current->prev != NULL)
		sweep_locked();
	pthread_mutex_unlock(&lock);
	return 0;
}

int
mfd_tls_init(const struct mfd_config *cfg)
{
	if (cfg->tls_key == NULL) {
		mfd_log(MFD_ERROR, "--tls-cert needs --tls-key");
		return -1;
	}
	cert_path = cfg->tls_cert;
	key_path = cfg->tls_key;
	/* A handshake's longest life, and a tick of the guard. */
	grace = ((long long)cfg->request_timeout + 1) * 1000;
	current = load();
	if (current == NULL)
		return -1;
	options[0].option = MHD_OPTION_HTTPS_CERT_CALLBACK;
	/* MHD takes the callback through its void * option slot. */
	memcpy(&options[0].ptr_value,
	    &(gnutls_certificate_retrieve_function2 *){ retrieve },
	    sizeof(void *));
	return 0;
}

struct MHD_OptionItem *
mfd_tls_options(void)
{
	return options;
}

static pthread_mutex_t reload_lock = PTHREAD_MUTEX_INITIALIZER;

int
mfd_tls_reload(void)
{
	struct gen *g;
	int serving;

	pthread_mutex_lock(&reload_lock);
	pthread_mutex_lock(&lock);
	serving = current != NULL;
	pthread_mutex_unlock(&lock);
	if (!serving) {
		pthread_mutex_unlock(&reload_lock);
		return 0;
	}
	g = load();
	mfd_metrics_tls_reload(g != NULL);
	if (g == NULL) {
		pthread_mutex_unlock(&reload_lock);
		mfd_log(MFD_ERROR,
		    "tls: reload failed, keeping the certificate in service");
		return -1;
	}
	pthread_mutex_lock(&lock);
	current->retired = mfd_now_ms();
	g->prev = current;
	current = g;
	sweep_locked();
	pthread_mutex_unlock(&lock);
	pthread_mutex_unlock(&reload_lock);
	mfd_log(MFD_INFO, "tls: certificate reloaded from %s", cert_path);
	return 0;
}

/* The watcher's callback: reload when either file is no longer the one
 * loaded (a Secret volume swaps both at once). */
static void
settled(void *arg)
{
	int differs;

	(void)arg;
	pthread_mutex_lock(&reload_lock);
	differs = mfd_file_changed(cert_path, &cert_seen) ||
	    mfd_file_changed(key_path, &key_seen);
	pthread_mutex_unlock(&reload_lock);
	if (differs)
		mfd_tls_reload();
}

int
mfd_tls_watch(void)
{
	const char *paths[] = { cert_path, key_path };

	if (current == NULL)
		return 0;
	return mfd_watch(paths, 2, settled, NULL);
}

void
mfd_tls_fini(void)
{
	struct gen *g, *prev;

	pthread_mutex_lock(&reload_lock);
	pthread_mutex_lock(&lock);
	for (g = current; g != NULL; g = prev) {
		prev = g->prev;
		gen_free(g);
	}
	current = NULL;
	pthread_mutex_unlock(&lock);
	pthread_mutex_unlock(&reload_lock);
}

size_t
mfd_tls_generations(void)
{
	size_t n = 0;

	pthread_mutex_lock(&lock);
	for (const struct gen *g = current; g != NULL; g = g->prev)
		n++;
	pthread_mutex_unlock(&lock);
	return n;
}
