#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"

const char *
mf_strerror(enum mf_rc rc)
{
	switch (rc) {
	case MF_OK:
		return "ok";
	case MF_EINVAL:
		return "invalid input";
	case MF_ENOMEM:
		return "out of memory";
	case MF_ETOOBIG:
		return "input too large";
	case MF_ENOTFOUND:
		return "not found";
	case MF_EIO:
		return "input/output error";
	case MF_ERANGE:
		return "value out of range";
	}
	return "unknown error";
}

enum mf_rc
mf_error_vset(struct mf_error *err, enum mf_rc rc, const char *field, int line,
    int column, const char *fmt, va_list ap)
{
	if (err == NULL)
		return rc;
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	err->file[0] = '\0';
	mf_copy(err->field, sizeof(err->field), field ? field : "");
	err->line = line;
	err->column = column;
	return rc;
}

enum mf_rc
mf_error_set(struct mf_error *err, enum mf_rc rc, const char *field, int line,
    int column, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc = mf_error_vset(err, rc, field, line, column, fmt, ap);
	va_end(ap);
	return rc;
}

enum mf_rc
mf_error_in_file(struct mf_error *err, enum mf_rc rc, const char *file)
{
	if (err != NULL)
		mf_copy(err->file, sizeof(err->file), file ? file : "");
	return rc;
}

char *
mf_error_message(const struct mf_error *err, char *buf, size_t size)
{
	const char *f = err->field, *sep = f[0] != '\0' ? ": " : "";

	if (err->file[0] != '\0' && err->line > 0)
		snprintf(buf, size, "%s:%d: %s%s%s", err->file, err->line, f,
		    sep, err->text);
	else if (err->file[0] != '\0')
		snprintf(buf, size, "%s: %s%s%s", err->file, f, sep, err->text);
	else if (err->line > 0)
		snprintf(buf, size, "%s%s%s (line %d, column %d)", f, sep,
		    err->text, err->line, err->column);
	else
		snprintf(buf, size, "%s%s%s", f, sep, err->text);
	return buf;
}
