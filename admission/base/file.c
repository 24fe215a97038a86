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

enum mf_rc
mf_file_read(const char *path, size_t max, const char *what, char **buf,
    size_t *len, struct mf_error *err)
{
	int stdin_ = strcmp(path, "-") == 0;
	int fd = stdin_ ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	struct mf_buf b;
	struct stat st;
	enum mf_rc rc;

	if (fd < 0)
		return io_error(err, errno == ENOENT ? MF_ENOTFOUND : MF_EIO,
		    path, "cannot open", errno);
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
