/*
 * store.c: the store whichever database holds it: which back end --store
 * names, how it is named in messages, and the handle opened and closed
 * around the back end's connection.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../admission/base/str.h"
#include "store_int.h"

static const char *const pg_schemes[] = { "postgresql://", "postgres://" };

enum mf_store_kind
mf_store_kind_of(const char *where)
{
	for (size_t i = 0; i < sizeof(pg_schemes) / sizeof(pg_schemes[0]);
	     i++) {
		if (strncasecmp(where, pg_schemes[i], strlen(pg_schemes[i])) ==
		    0)
			return MF_STORE_POSTGRES;
	}
	return MF_STORE_FILE;
}

/* Append s[0..n) to out at *k, cut to fit size (a terminator kept). */
static void
put(char *out, size_t size, size_t *k, const char *s, size_t n)
{
	size_t room = size - 1 - *k;

	if (n > room)
		n = room;
	memcpy(out + *k, s, n);
	*k += n;
	out[*k] = '\0';
}

/* The query's password=VALUE with its value written ***, the rest as it
 * is (q: from the '?' on). */
static void
redact_query(const char *q, char *out, size_t size, size_t *k)
{
	while (*q != '\0') {
		size_t n = strcspn(q + 1, "&") + 1;

		if (strncmp(q + 1, "password=", 9) == 0) {
			put(out, size, k, q, 10);
			put(out, size, k, "***", 3);
		} else {
			put(out, size, k, q, n);
		}
		q += n;
	}
}

char *
mf_store_redact(const char *where, char *out, size_t size)
{
	const char *auth, *end, *query, *at = NULL, *colon = NULL;
	size_t k = 0;

	if (size == 0)
		return out;
	if (mf_store_kind_of(where) != MF_STORE_POSTGRES) {
		mf_copy(out, size, where);
		return out;
	}
	out[0] = '\0';
	auth = strstr(where, "://") + 3;
	/* The user's part ends at the last '@' before the query: a password
	 * written with a '/' in it, not percent-encoded, is still hidden. */
	query = auth + strcspn(auth, "?");
	for (const char *p = auth; p < query; p++)
		if (*p == '@')
			at = p;
	end = (at ? at : auth) + strcspn(at ? at : auth, "/?");
	if (at != NULL)
		colon = memchr(auth, ':', (size_t)(at - auth));
	if (colon != NULL) {
		put(out, size, &k, where, (size_t)(colon + 1 - where));
		put(out, size, &k, "***", 3);
		put(out, size, &k, at, (size_t)(end - at));
	} else {
		put(out, size, &k, where, (size_t)(end - where));
	}
	query = end + strcspn(end, "?");
	put(out, size, &k, end, (size_t)(query - end));
	redact_query(query, out, size, &k);
	return out;
}

/* The most passwords a URL is searched for: its user's part's and those
 * of its query. */
#define SECRETS_MAX 4

/* A span of where that holds a password. */
struct span {
	const char *p;
	size_t n;
};

/* The passwords of where, a PostgreSQL URL, into sp: how many. */
static size_t
secrets(const char *where, struct span *sp)
{
	const char *auth = strstr(where, "://") + 3, *at = NULL, *colon;
	const char *query = auth + strcspn(auth, "?");
	size_t k = 0;

	for (const char *p = auth; p < query; p++)
		if (*p == '@')
			at = p;
	colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
	if (colon != NULL && at > colon + 1)
		sp[k++] = (struct span){ colon + 1, (size_t)(at - colon - 1) };
	for (const char *q = query; *q != '\0' && k < SECRETS_MAX;
	     q += strcspn(q + 1, "&") + 1) {
		if (strncmp(q + 1, "password=", 9) == 0 && q[10] != '\0' &&
		    q[10] != '&')
			sp[k++] = (struct span){ q + 10, strcspn(q + 10, "&") };
	}
	return k;
}

char *
mf_store_scrub(const char *where, const char *text, char *out, size_t size)
{
	struct span sp[SECRETS_MAX];
	size_t n = 0, k = 0;

	if (size == 0)
		return out;
	out[0] = '\0';
	if (mf_store_kind_of(where) == MF_STORE_POSTGRES)
		n = secrets(where, sp);
	while (*text != '\0' && k < size - 1) {
		size_t hit = 0;

		for (size_t i = 0; i < n && hit == 0; i++) {
			assert(i < SECRETS_MAX);
			if (strncmp(text, sp[i].p, sp[i].n) == 0)
				hit = sp[i].n;
		}
		if (hit > 0) {
			put(out, size, &k, "***", 3);
			text += hit;
		} else {
			put(out, size, &k, text++, 1);
		}
	}
	return out;
}

static struct mf_store *
store_new(const char *where)
{
	struct mf_store *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->where = strdup(where);
	if (s->where == NULL) {
		free(s);
		return NULL;
	}
	s->ops = mf_store_kind_of(where) == MF_STORE_POSTGRES ?
	    &mf_store_pg :
	    &mf_store_sqlite;
	mf_store_redact(where, s->name, sizeof(s->name));
	pthread_mutex_init(&s->db_lock, NULL);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	pthread_cond_init(&s->done, NULL);
	atomic_init(&s->dropped, 0);
	atomic_init(&s->up, 1);
	return s;
}

enum mf_rc
mf_store_open(const char *where, struct mf_store **out, struct mf_error *err)
{
	struct mf_store *s = store_new(where);
	enum mf_rc rc;

	if (s == NULL)
		return mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
		    "out of memory");
	rc = s->ops->open(s, err);
	if (rc == MF_OK && mf_store_queue_start(s) != 0)
		rc = mf_error_set(err, MF_ENOMEM, NULL, 0, 0,
		    "store: no writer thread");
	if (rc != MF_OK) {
		mf_store_close(s);
		return rc;
	}
	*out = s;
	return MF_OK;
}

int
mf_store_up(struct mf_store *s)
{
	return s != NULL && atomic_load(&s->up);
}

int
mf_store_exec(struct mf_store *s, const char *sql)
{
	return s->ops->run(s, sql, NULL, 0, NULL, NULL) == MF_OK ? 0 : -1;
}

void
mf_store_close(struct mf_store *s)
{
	if (s == NULL)
		return;
	mf_store_queue_stop(s);
	s->ops->close(s);
	pthread_mutex_destroy(&s->db_lock);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->done);
	free(s->where);
	free(s);
}
