#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"

static enum mf_rc
io_error(struct mf_error *err, enum mf_rc rc, const char *path,
    const char *what, int errnum)
{
	mf_error_set(err, rc, NULL, 0, 0, "%s: %s", what, strerror(errnum));
	return mf_error_in_file(err, rc, path);
}

static enum mf_rc
too_big(struct mf_error *err, const char *path, size_t max, const char *what)
{
	mf_error_set(err, MF_ETOOBIG, NULL, 0, 0,
	    "larger than the %zu bytes %s may hold", max, what);
	return mf_error_in_file(err, MF_ETOOBIG, path);
}

/* Read all of fd into b; past b's cap is MF_ETOOBIG. */
static enum mf_rc
read_fd(int fd, struct mf_buf *b)
{
	char chunk[64 * 1024];
	ssize_t n;

	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n == 0)
			return MF_OK;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return MF_EIO;
		if (mf_buf_add(b, chunk, (size_t)n) != MF_OK)
			return b->rc;
	}
}

/* What a file that is not a regular one is, for its error. */
static const char *
kind_of(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a named pipe";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	return "of an unknown type";
}

/*
 * Open path for reading into *fd: a regular file, or with streams
 * anything but a directory.  A regular file's open does not block: a
 * named pipe with no writer would hold the caller (a reload, under its
 * lock) in open() until one came; once the file is known to be regular,
 * reads block again.  A stream's open waits for its writer, as cat(1)'s
 * does.
 */
static enum mf_rc
open_input(const char *path, int streams, int *fd, struct mf_error *err)
{
	int f = open(path, O_RDONLY | O_CLOEXEC | (streams ? 0 : O_NONBLOCK));
	int flags;
	struct stat st;
	enum mf_rc rc;

	if (f < 0)
		return io_error(err, errno == ENOENT ? MF_ENOTFOUND : MF_EIO,
		    path, "cannot open", errno);
	if (fstat(f, &st) != 0)
		goto fail;
	if (streams ? S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
		close(f);
		mf_error_set(err, MF_EIO, NULL, 0, 0, "not a regular file (%s)",
		    kind_of(st.st_mode));
		return mf_error_in_file(err, MF_EIO, path);
	}
	flags = fcntl(f, F_GETFL);
	if (flags < 0 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) != 0)
		goto fail;
	*fd = f;
	return MF_OK;
fail:
	rc = io_error(err, MF_EIO, path, "cannot read", errno);
	close(f);
	return rc;
}

static enum mf_rc
read_file(const char *path, int streams, size_t max, const char *what,
    char **buf, size_t *len, struct mf_error *err)
{
	int stdin_ = strcmp(path, "-") == 0;
	int fd = STDIN_FILENO;
	struct mf_buf b;
	struct stat st;
	enum mf_rc rc;

	if (!stdin_) {
		rc = open_input(path, streams, &fd, err);
		if (rc != MF_OK)
			return rc;
	}
	/* max bytes and the NUL. */
	mf_buf_init(&b, max + 1);
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uintmax_t)st.st_size > max)
		rc = MF_ETOOBIG;
	else
		rc = read_fd(fd, &b);
	if (rc == MF_EIO)
		io_error(err, rc, path, "cannot read", errno);
	if (!stdin_)
		close(fd);
	if (rc == MF_ETOOBIG)
		too_big(err, path, max, what);
	if (rc == MF_ENOMEM) {
		mf_error_set(err, rc, NULL, 0, 0, "%s", mf_strerror(rc));
		mf_error_in_file(err, rc, path);
	}
	if (rc != MF_OK) {
		mf_buf_free(&b);
		return rc;
	}
	*len = b.len;
	*buf = mf_buf_take(&b);
	return MF_OK;
}

enum mf_rc
mf_file_read(const char *path, size_t max, const char *what, char **buf,
    size_t *len, struct mf_error *err)
{
	return read_file(path, 0, max, what, buf, len, err);
}

enum mf_rc
mf_input_read(const char *path, size_t max, const char *what, char **buf,
    size_t *len, struct mf_error *err)
{
	return read_file(path, 1, max, what, buf, len, err);
}
