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
#include <sys/inotify.h>
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
		    "catalogue %s reloaded (%s): version %llu, "
		    "%zu GPUs",
		    catalog_path, why, (unsigned long long)version, ngpus);
	} else {
		mfd_log(MFD_ERROR,
		    "catalogue reload (%s) failed, keeping "
		    "version %llu: %s",
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

/*
 * The watcher.  Editors write a new file and rename it over the old one;
 * Kubernetes swaps the ..data symlink of a ConfigMap volume.  Both show
 * up as events in the directory, never on the old inode, so the directory
 * is watched.  Events come in bursts: wait until the directory has been
 * quiet for a moment (or busy for a second), then reload once.
 */
#define QUIET_MS 100
#define BUSY_MS 1000

static long
since_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	    (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static int
wait_readable(int fd, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	fd_set set;

	FD_ZERO(&set);
	FD_SET(fd, &set);
	return pselect(fd + 1, &set, NULL, NULL, ms < 0 ? NULL : &ts, NULL);
}

/* Whether the file (through any symlinks) differs from the last load. */
static int
changed(void)
{
	struct stat st;
	int differs;

	if (stat(catalog_path, &st) != 0)
		return 0; /* gone for now: a swap in progress */
	pthread_mutex_lock(&reload_lock);
	differs = st.st_dev != last_seen.st_dev ||
	    st.st_ino != last_seen.st_ino || st.st_size != last_seen.st_size ||
	    st.st_mtim.tv_sec != last_seen.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != last_seen.st_mtim.tv_nsec ||
	    st.st_ctim.tv_nsec != last_seen.st_ctim.tv_nsec;
	pthread_mutex_unlock(&reload_lock);
	return differs;
}

static void *
watch_loop(void *arg)
{
	int fd = *(int *)arg;
	char events[4096]
	    __attribute__((aligned(__alignof__(struct inotify_event))));
	struct timespec t0;

	free(arg);
	for (;;) {
		if (wait_readable(fd, -1) < 0 && errno != EINTR)
			break;
		/* Drain the burst, but reload at least every BUSY_MS while a
		 * writer keeps the directory busy. */
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (
		    since_ms(&t0) < BUSY_MS && wait_readable(fd, QUIET_MS) > 0)
			if (read(fd, events, sizeof(events)) < 0 &&
			    errno != EINTR && errno != EAGAIN)
				return NULL;
		if (changed())
			mfd_state_reload("file changed");
	}
	return NULL;
}

int
mfd_state_watch(void)
{
	char dir[PATH_MAX], *slash;
	pthread_t t;
	int fd, *arg;

	mf_copy(dir, sizeof(dir), catalog_path);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (fd < 0)
		return -1;
	if (inotify_add_watch(fd, dir,
	        IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE |
	            IN_ATTRIB) < 0)
		goto fail;
	arg = malloc(sizeof(*arg));
	if (arg == NULL)
		goto fail;
	*arg = fd;
	if (pthread_create(&t, NULL, watch_loop, arg) != 0) {
		free(arg);
		goto fail;
	}
	pthread_detach(t);
	mfd_log(MFD_DEBUG, "watching %s for catalogue changes", dir);
	return 0;
fail:
	close(fd);
	return -1;
}
