/*
 * token.c: bearer tokens read from a file, for --observe-token-file (the
 * writers of observations) and --prometheus-token-file (memfloord's own
 * to Prometheus).
 */
#include <stdlib.h>
#include <string.h>

#include "../admission/base/file.h"
#include "memfloord.h"

/* The most a token file may hold, comments and all. */
#define FILE_MAX (1u << 20)

void
mfd_tokens_free(char **tokens, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(tokens[i]);
		tokens[i] = NULL;
	}
}

/* The line of n bytes at line (the file's number-th) as tokens[*n]: 0,
 * or -1 logged. */
static int
keep(const char *flag, const char *path, size_t number, const char *line,
    size_t len, char **tokens, size_t max, size_t *n)
{
	if (len > MFD_TOKEN_MAX) {
		mfd_log(MFD_ERROR,
		    "%s %s: line %zu: a token of more than %d bytes", flag,
		    path, number, MFD_TOKEN_MAX);
		return -1;
	}
	if (memchr(line, '\0', len) != NULL) {
		mfd_log(MFD_ERROR, "%s %s: line %zu: a NUL byte", flag, path,
		    number);
		return -1;
	}
	if (*n == max) {
		mfd_log(MFD_ERROR, "%s %s: more than %zu token%s", flag, path,
		    max, max == 1 ? "" : "s");
		return -1;
	}
	if ((tokens[*n] = strndup(line, len)) == NULL) {
		mfd_log(MFD_ERROR, "%s %s: out of memory", flag, path);
		return -1;
	}
	(*n)++;
	return 0;
}

int
mfd_tokens_read(const char *flag, const char *path, char **tokens, size_t max,
    size_t *n)
{
	struct mf_error err;
	char *text, *line, *end;
	size_t len, number = 0;
	int rc = 0;

	*n = 0;
	if (mf_file_read(path, FILE_MAX, "a token file", &text, &len, &err) !=
	    MF_OK) {
		mfd_log(MFD_ERROR, "%s %s: %s", flag, path, err.text);
		return -1;
	}
	for (line = text; rc == 0 && line < text + len; line = end + 1) {
		size_t l;

		end = memchr(line, '\n', (size_t)(text + len - line));
		if (end == NULL)
			end = text + len;
		number++;
		l = (size_t)(end - line);
		if (l > 0 && line[l - 1] == '\r')
			l--;
		if (l > 0 && line[0] != '#')
			rc = keep(flag, path, number, line, l, tokens, max, n);
	}
	free(text);
	if (rc == 0 && *n == 0) {
		mfd_log(MFD_ERROR, "%s %s: holds no token", flag, path);
		rc = -1;
	}
	if (rc != 0) {
		mfd_tokens_free(tokens, *n);
		*n = 0;
	}
	return rc;
}
