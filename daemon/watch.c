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
 *
 * The directory of the path as given is not always where the file
 * changes: the path may be a symlink to a file elsewhere, or pass
 * through a symlinked directory that a release flips.  So the
 * directories watched for a path are those whose entries decide which
 * file it is: the one holding it, the one holding each symlink met on
 * the way (the file's own, or one of its directories), and so on along
 * each link's target, resolved again at every call back.
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
#include <sys/stat.h>
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

#define HOPS 8      /* the symlinks followed from one path */
#define DIRS_MAX 32 /* the directories watched for all the paths */

struct watch {
	int fd;
	size_t n;
	char path[MFD_WATCH_MAX][PATH_MAX];
	int wd[DIRS_MAX]; /* the directories watched, nwd of them */
	size_t nwd;
	void (*settled)(void *);
	void *arg;
};

/* What arm finds: the directories to watch now. */
struct found {
	int wd[DIRS_MAX];
	size_t n;
};

static int
wait_readable(int fd, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, ms);
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

/* Whether f holds the watch wd. */
static int
holds(const struct found *f, int wd)
{
	for (size_t i = 0; i < f->n && i < DIRS_MAX; i++)
		if (f->wd[i] == wd)
			return 1;
	return 0;
}

/* Watch the directory that holds path's last entry; 0 when it is not
 * there.  Past DIRS_MAX directories, the rest are not watched. */
static int
add(const struct watch *w, const char *path, struct found *f)
{
	char dir[PATH_MAX];
	int wd;

	dir_of(path, dir, sizeof(dir));
	wd = inotify_add_watch(w->fd, dir, MASK);
	if (wd < 0)
		return 0;
	if (!holds(f, wd) && f->n < DIRS_MAX)
		f->wd[f->n++] = wd;
	return 1;
}

/* The directories of path that are symlinks: the ones holding them. */
static void
add_links_above(const struct watch *w, const char *path, struct found *f)
{
	char prefix[PATH_MAX];
	struct stat st;

	if (path[0] == '\0')
		return;
	for (const char *s = strchr(path + 1, '/'); s != NULL;
	     s = strchr(s + 1, '/')) {
		snprintf(prefix, sizeof(prefix), "%.*s", (int)(s - path), path);
		if (lstat(prefix, &st) == 0 && S_ISLNK(st.st_mode))
			add(w, prefix, f);
	}
}

/* Where the symlink path leads, as a path from here, into to; 0 when path
 * is no symlink. */
static int
target_of(const char *path, char *to, size_t size)
{
	char link[PATH_MAX], dir[PATH_MAX];
	ssize_t n = readlink(path, link, sizeof(link) - 1);
	int len;

	if (n < 0 || (size_t)n >= sizeof(link))
		return 0;
	link[n] = '\0';
	dir_of(path, dir, sizeof(dir));
	if (link[0] == '/')
		len = snprintf(to, size, "%s", link);
	else
		len = snprintf(to, size, "%s/%s", dir, link);
	return len > 0 && (size_t)len < size;
}

/* The directories whose entries decide which file path is (the top
 * comment); 0 when one is not there. */
static int
add_path(const struct watch *w, const char *path, struct found *f)
{
	char cur[PATH_MAX], next[PATH_MAX];
	int all = 1;

	mf_copy(cur, sizeof(cur), path);
	for (int hop = 0; hop <= HOPS; hop++) {
		all &= add(w, cur, f);
		add_links_above(w, cur, f);
		if (!target_of(cur, next, sizeof(next)))
			break;
		mf_copy(cur, sizeof(cur), next);
	}
	return all;
}

/* Watch every path's directories by their paths again (the inodes there
 * now), and let go of those no path leads through any more: 1 when each
 * is watched, 0 when one is not there. */
static int
arm(struct watch *w)
{
	struct found f = { { 0 }, 0 };
	int all = 1;

	assert(w->n <= MFD_WATCH_MAX);
	for (size_t i = 0; i < w->n; i++)
		all &= add_path(w, w->path[i], &f);
	assert(w->nwd <= DIRS_MAX && f.n <= DIRS_MAX);
	for (size_t i = 0; i < w->nwd && i < DIRS_MAX; i++)
		if (!holds(&f, w->wd[i]))
			inotify_rm_watch(w->fd, w->wd[i]);
	memcpy(w->wd, f.wd, f.n * sizeof(f.wd[0]));
	w->nwd = f.n;
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
	    w->path[0], strerror(errno));
	close(w->fd);
	free(w);
	return NULL;
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
		mf_copy(w->path[i], sizeof(w->path[i]), paths[i]);
		mfd_log(MFD_DEBUG, "watching the directories of %s for changes",
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
