/*
 * state.c: the catalogue and the models in service, and their reloads.
 *
 * Request threads take a reference to each snapshot under a mutex held
 * for a few instructions; a reload parses and validates a new snapshot
 * with no lock held, then swaps the pointer and drops the old reference.
 * A request still reading the old snapshot keeps it alive until it is
 * done.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../admission/base/buf.h"
#include "memfloord.h"

static pthread_mutex_t swap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t reload_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mf_catalog *current;
static uint64_t version;
static struct mf_models *models;
static struct mf_data_models dirs; /* the model directories, in order */
static char catalog_path[PATH_MAX];
static struct stat last_seen; /* the file as of the last load attempt */
static int gone_said;         /* under reload_lock: its removal logged */
static int stopped;           /* under reload_lock: no more reloads */

void
mfd_state_take(struct mf_catalog **cat, struct mf_models **m)
{
	pthread_mutex_lock(&swap_lock);
	if (cat != NULL)
		*cat = mf_cat_ref(current);
	if (m != NULL)
		*m = mf_models_ref(models);
	pthread_mutex_unlock(&swap_lock);
}

/* A model file that does not parse, or an organisation's directory that
 * cannot be read: said, and left out, or the models it held kept. */
static void
model_skipped(void *arg, const struct mf_error *err, int kept)
{
	char msg[MF_ERROR_MAX];

	(void)arg;
	mf_error_message(err, msg, sizeof(msg));
	if (kept == 0)
		mfd_log(MFD_ERROR, "%s; left out, the other models are served",
		    msg);
	else if (kept == 1)
		mfd_log(MFD_ERROR, "%s; keeping the model it held until now",
		    msg);
	else
		mfd_log(MFD_ERROR,
		    "%s; keeping the %d models it held until now", msg, kept);
}

/* "24 from DIR, 3 from DIR2 (1 replacing a shipped one)" for the log. */
static void
say_models(const char *what, const struct mf_models *m, const size_t *counts)
{
	char line[2048];
	size_t n = 0, sum = 0;

	line[0] = '\0';
	assert(dirs.n <= MF_DATA_MAX_MODEL_DIRS);
	for (size_t i = 0; i < dirs.n && n < sizeof(line); i++) {
		n += (size_t)snprintf(line + n, sizeof(line) - n,
		    "%s%zu from %s", i ? ", " : "", counts[i], dirs.dirs[i]);
		sum += counts[i];
	}
	mfd_log(MFD_INFO, "models %s: %zu in service (%s%s)", what,
	    mf_models_count(m), line,
	    sum > mf_models_count(m) ?
	        "; a later directory's replacing an earlier one's of the same name" :
	        "");
}

/* Load the model directories into *out, prev's models kept for files that
 * fail; strict: such a file fails the load. */
static enum mf_rc
load_models(const struct mf_models *prev, int strict, size_t *counts,
    struct mf_models **out, struct mf_error *err)
{
	struct mf_models_load how = { dirs.dirs, dirs.n,
		strict ? NULL : model_skipped, NULL, prev, counts };

	return mf_models_load_dirs(&how, out, err);
}

/*
 * Put cat and m in service together under swap_lock, and drop the
 * references to what they replace once it is released.  Every caller holds
 * reload_lock or runs before the threads start, so what it reads of the
 * pair in service is current; one passes what it keeps as it is.
 */
static void
swap(struct mf_catalog *cat, struct mf_models *m)
{
	struct mf_catalog *old_cat;
	struct mf_models *old_m;

	pthread_mutex_lock(&swap_lock);
	old_cat = current;
	old_m = models;
	current = cat;
	models = m;
	pthread_mutex_unlock(&swap_lock);
	if (old_cat != cat)
		mf_cat_unref(old_cat);
	if (old_m != m)
		mf_models_free(old_m);
}

/* Give a new catalogue its version and load time. */
static void
stamp(struct mf_catalog *cat)
{
	cat->version = ++version;
	cat->loaded_at = time(NULL);
}

/* Reload the model directories; a failure keeps the set in service. */
static void
reload_models(const char *why)
{
	size_t counts[MF_DATA_MAX_MODEL_DIRS];
	struct mf_models *m = NULL, *prev;
	struct mf_error err;
	char msg[MF_ERROR_MAX];

	mfd_state_take(NULL, &prev);
	if (load_models(prev, 0, counts, &m, &err) == MF_OK) {
		swap(current, m);
		say_models(why, m, counts);
	} else {
		mfd_log(MFD_ERROR,
		    "models reload (%s) failed, keeping the %zu in service: %s",
		    why, mf_models_count(prev),
		    mf_error_message(&err, msg, sizeof(msg)));
	}
	mf_models_free(prev);
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
	gone_said = 0;
	rc = mf_cat_load(catalog_path, &cat, &err);
	if (rc == MF_OK) {
		size_t ngpus = cat->ngpus; /* cat is not ours once swapped in */

		stamp(cat);
		swap(cat, models);
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
	if (strcmp(why, "SIGHUP") == 0)
		reload_models(why);
	pthread_mutex_unlock(&reload_lock);
	return rc;
}

enum mf_rc
mfd_state_init(const struct mfd_config *cfg, struct mf_error *err)
{
	size_t counts[MF_DATA_MAX_MODEL_DIRS];
	struct mf_catalog *cat = NULL;
	struct mf_models *m = NULL;
	enum mf_rc rc;

	/* Keep the path as given: a ConfigMap swaps the link's target. */
	mf_copy(catalog_path, sizeof(catalog_path), cfg->catalog_path);
	dirs = cfg->models_dirs;
	if (dirs.has_shipped)
		dirs.dirs[0] = dirs.shipped;
	stat(catalog_path, &last_seen);
	rc = mf_cat_load(catalog_path, &cat, err);
	if (rc != MF_OK)
		return rc;
	rc = load_models(NULL, cfg->check_only, counts, &m, err);
	if (rc != MF_OK) {
		mf_cat_unref(cat);
		return rc;
	}
	/* -n says "configuration OK" or the problem, and nothing else. */
	if (!cfg->check_only) {
		mfd_log(MFD_INFO, "catalogue %s: %zu GPUs", catalog_path,
		    cat->ngpus);
		say_models("loaded", m, counts);
	}
	stamp(cat);
	swap(cat, m);
	return MF_OK;
}

void
mfd_state_fini(void)
{
	/* The watcher thread may still wake up; it will find stopped set. */
	pthread_mutex_lock(&reload_lock);
	stopped = 1;
	swap(NULL, NULL);
	pthread_mutex_unlock(&reload_lock);
}

/*
 * Whether the file (through any symlinks) differs from the last load.  A
 * file still missing once its directory has settled was removed, not
 * swapped: said once, and the catalogue stays in service.
 */
static void
settled(void *arg)
{
	struct stat st;
	int differs, gone;

	(void)arg;
	pthread_mutex_lock(&reload_lock);
	differs = mfd_file_changed(catalog_path, &last_seen);
	gone = !stopped && stat(catalog_path, &st) != 0 && errno == ENOENT;
	if (gone && !gone_said)
		mfd_log(MFD_WARN,
		    "catalogue %s was removed; keeping version %llu in service until a file is there again",
		    catalog_path, (unsigned long long)version);
	gone_said = gone;
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
