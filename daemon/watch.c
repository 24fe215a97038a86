/*
 * watch.c: files that operators and Kubernetes replace while memfloord
 * runs (the catalogue, the TLS certificate and key).
 *
 * Editors write a new file and rename it over the old one; Kubernetes
 * swaps the ..data symlink of a ConfigMap or Secret volume.  Both show up
 * as events in the directory, never on the old inode, so the directory
 * is watched.  Events come in bursts: wait until the directory has been
 * quiet for a moment (or busy for a second), then call back once; the
 * caller looks at its files to see whether they changed.
 *
 * A watch is on the directory's inode, which may go: removed and made
 * again, or, where the directory is itself a symlink (a ConfigMap key
 * mounted at a path with a directory in it), left behind when the volume
 * moves on.  So after every call back each directory is watched again by
 * its path, and one that is not there is looked for once a second until
 * it is, with a call back each time.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "../admission/base/buf.h"
#include "memfloord.h"

#define QUIET_MS 100
#define BUSY_MS 1000
#define ABSENT_MS 1000
#define MASK \
	(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB | \
	    IN_DELETE_SELF | IN_MOVE_SELF)

struct watch {
	int fd;
	size_t n;
	char dir[MFD_WATCH_MAX][PATH_MAX];
	int wd[MFD_WATCH_MAX]; /* -1: its directory is not watched */
	void (*settled)(void *);
	void *arg;
};

static int
wait_readable(int fd, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, ms);
}

/* Watch every directory by its path again (the inode there now): 1 when
 * each is watched, 0 when one is not there. */
static int
arm(struct watch *w)
{
	int all = 1;

	assert(w->n <= MFD_WATCH_MAX);
	for (size_t i = 0; i < w->n; i++) {
		int wd = inotify_add_watch(w->fd, w->dir[i], MASK);

		if (w->wd[i] >= 0 && w->wd[i] != wd)
			inotify_rm_watch(w->fd, w->wd[i]);
		w->wd[i] = wd;
		all &= wd >= 0;
	}
	return all;
}

static void *
watch_loop(void *arg)
{
	struct watch *w = arg;
	char events[4096]
	    __attribute__((aligned(__alignof__(struct inotify_event))));
	long long t0;
	int r;

	for (;;) {
		r = wait_readable(w->fd, arm(w) ? -1 : ABSENT_MS);
		if (r < 0 && errno != EINTR)
			break;
		/* Drain the burst, but call back at least every BUSY_MS while
		 * a writer keeps the directory busy. */
		t0 = mfd_now_ms();
		while (mfd_now_ms() - t0 < BUSY_MS &&
		    wait_readable(w->fd, QUIET_MS) > 0)
			if (read(w->fd, events, sizeof(events)) < 0 &&
			    errno != EINTR && errno != EAGAIN)
				goto out;
		w->settled(w->arg);
	}
out:
	mfd_log(MFD_ERROR, "watching %s: %s; changes are read on SIGHUP only",
	    w->dir[0], strerror(errno));
	close(w->fd);
	free(w);
	return NULL;
}

/* The directory path is in, written to dir. */
static void
dir_of(const char *path, char *dir, size_t size)
{
	char *slash;

	mf_copy(dir, size, path);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		snprintf(dir, size, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
}

int
mfd_watch(const char *const *paths, size_t n, void (*settled)(void *),
    void *arg)
{
	struct watch *w;
	pthread_t t;

	assert(n <= MFD_WATCH_MAX);
	if (n > MFD_WATCH_MAX || (w = calloc(1, sizeof(*w))) == NULL)
		return -1;
	w->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	w->n = n;
	w->settled = settled;
	w->arg = arg;
	for (size_t i = 0; i < n; i++) {
		dir_of(paths[i], w->dir[i], sizeof(w->dir[i]));
		w->wd[i] = -1;
		mfd_log(MFD_DEBUG, "watching %s for changes to %s", w->dir[i],
		    paths[i]);
	}
	if (w->fd < 0 || !arm(w) ||
	    pthread_create(&t, NULL, watch_loop, w) != 0) {
		if (w->fd >= 0)
			close(w->fd);
		free(w);
		return -1;
	}
	pthread_detach(t);
	return 0;
}

int
mfd_file_changed(const char *path, const struct stat *seen)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return 0; /* gone for now: a swap in progress */
	return st.st_dev != seen->st_dev || st.st_ino != seen->st_ino ||
	    st.st_size != seen->st_size ||
	    st.st_mtim.tv_sec != seen->st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != seen->st_mtim.tv_nsec ||
	    st.st_ctim.tv_nsec != seen->st_ctim.tv_nsec;
}
