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
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "../admission/base/buf.h"
#include "memfloord.h"

#define QUIET_MS 100
#define BUSY_MS 1000

struct watch {
	int fd;
	void (*settled)(void *);
	void *arg;
};

static int
wait_readable(int fd, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	fd_set set;

	FD_ZERO(&set);
	FD_SET(fd, &set);
	return pselect(fd + 1, &set, NULL, NULL, ms < 0 ? NULL : &ts, NULL);
}

static void *
watch_loop(void *arg)
{
	struct watch w = *(struct watch *)arg;
	char events[4096]
	    __attribute__((aligned(__alignof__(struct inotify_event))));
	long long t0;

	free(arg);
	for (;;) {
		if (wait_readable(w.fd, -1) < 0 && errno != EINTR)
			break;
		/* Drain the burst, but call back at least every BUSY_MS while
		 * a writer keeps the directory busy. */
		t0 = mfd_now_ms();
		while (mfd_now_ms() - t0 < BUSY_MS &&
		    wait_readable(w.fd, QUIET_MS) > 0)
			if (read(w.fd, events, sizeof(events)) < 0 &&
			    errno != EINTR && errno != EAGAIN)
				return NULL;
		w.settled(w.arg);
	}
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
	char dir[PATH_MAX];
	struct watch *w;
	pthread_t t;
	int fd;

	fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (fd < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		dir_of(paths[i], dir, sizeof(dir));
		if (inotify_add_watch(fd, dir,
		        IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE |
		            IN_ATTRIB) < 0)
			goto fail;
		mfd_log(MFD_DEBUG, "watching %s for changes to %s", dir,
		    paths[i]);
	}
	w = malloc(sizeof(*w));
	if (w == NULL)
		goto fail;
	w->fd = fd;
	w->settled = settled;
	w->arg = arg;
	if (pthread_create(&t, NULL, watch_loop, w) != 0) {
		free(w);
		goto fail;
	}
	pthread_detach(t);
	return 0;
fail:
	close(fd);
	return -1;
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
