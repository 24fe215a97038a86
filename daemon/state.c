/*
 * state.c: the catalogue in service and its reloads.
 *
 * Request threads take a reference to the snapshot under a mutex held for
 * two instructions; a reload parses and validates a new snapshot with no
 * lock held, then swaps the pointer and drops the old reference.  A
 * request still reading the old snapshot keeps it alive until it is done.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../admission/buf.h"
#include "memfloord.h"

static pthread_mutex_t swap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t reload_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mf_catalog *current;
static uint64_t version;
static struct mf_models *models;
static char catalog_path[PATH_MAX];
static struct stat last_seen; /* the file as of the last load attempt */
static int stopped;           /* under reload_lock: no more reloads */

struct mf_catalog *
mfd_state_catalog(void)
{
	struct mf_catalog *cat;

	pthread_mutex_lock(&swap_lock);
	cat = mf_cat_ref(current);
	pthread_mutex_unlock(&swap_lock);
	return cat;
}

const struct mf_models *
mfd_state_models(void)
{
	return models;
}

static void
swap_in(struct mf_catalog *cat)
{
	struct mf_catalog *old;

	cat->version = ++version;
	cat->loaded_at = time(NULL);
	pthread_mutex_lock(&swap_lock);
	old = current;
	current = cat;
	pthread_mutex_unlock(&swap_lock);
	mf_cat_unref(old);
}

enum mf_rc
mfd_state_reload(const char *why)
{
	struct mf_catalog *cat = NULL;
	struct mf_error err;
	char msg[MF_ERROR_MAX];
	enum mf_rc rc;

	pthread_mutex_lock(&reload_lock);
	if (stopped) {
		pthread_mutex_unlock(&reload_lock);
		return MF_OK;
	}
	stat(catalog_path, &last_seen);
	rc = mf_cat_load(catalog_path, &cat, &err);
	if (rc == MF_OK) {
		size_t ngpus = cat->ngpus; /* cat is not ours once swapped in */

		swap_in(cat);
		mfd_log(MFD_INFO,
		    "catalogue %s reloaded (%s): version %llu, %zu GPUs",
		    catalog_path, why, (unsigned long long)version, ngpus);
	} else {
		mfd_log(MFD_ERROR,
		    "catalogue reload (%s) failed, keeping version %llu: %s",
		    why, (unsigned long long)version,
		    mf_error_message(&err, msg, sizeof(msg)));
	}
	mfd_metrics_reload(rc == MF_OK);
	pthread_mutex_unlock(&reload_lock);
	return rc;
}

enum mf_rc
mfd_state_init(const struct mfd_config *cfg, struct mf_error *err)
{
	struct mf_catalog *cat = NULL;
	enum mf_rc rc;

	/* Keep the path as given: a ConfigMap swaps the link's target. */
	mf_copy(catalog_path, sizeof(catalog_path), cfg->catalog_path);
	stat(catalog_path, &last_seen);
	rc = mf_cat_load(catalog_path, &cat, err);
	if (rc != MF_OK)
		return rc;
	rc = mf_models_load(cfg->models_dir, &models, err);
	if (rc != MF_OK) {
		mf_cat_unref(cat);
		return rc;
	}
	swap_in(cat);
	return MF_OK;
}

void
mfd_state_fini(void)
{
	/* The watcher thread may still wake up; it will find stopped set. */
	pthread_mutex_lock(&reload_lock);
	stopped = 1;
	pthread_mutex_lock(&swap_lock);
	mf_cat_unref(current);
	current = NULL;
	pthread_mutex_unlock(&swap_lock);
	pthread_mutex_unlock(&reload_lock);
	mf_models_free(models);
	models = NULL;
}

/* Whether the file (through any symlinks) differs from the last load. */
static void
settled(void *arg)
{
	int differs;

	(void)arg;
	pthread_mutex_lock(&reload_lock);
	differs = mfd_file_changed(catalog_path, &last_seen);
	pthread_mutex_unlock(&reload_lock);
	if (differs)
		mfd_state_reload("file changed");
}

int
mfd_state_watch(void)
{
	const char *paths[] = { catalog_path };

	return mfd_watch(paths, 1, settled, NULL);
}
