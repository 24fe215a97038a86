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
mf_error_set(struct mf_error *err, enum mf_rc rc, const char *field, int line,
    int column, const char *fmt, ...)
{
	char text[sizeof(err->message)];
	va_list ap;
	int n;

	if (err == NULL)
		return rc;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	mf_copy(err->field, sizeof(err->field), field ? field : "");
	if (err->field[0] != '\0')
		n = snprintf(err->message, sizeof(err->message), "%s: %s",
		    err->field, text);
	else
		n = snprintf(err->message, sizeof(err->message), "%s", text);
	if (line > 0 && n >= 0 && (size_t)n < sizeof(err->message))
		snprintf(err->message + n, sizeof(err->message) - (size_t)n,
		    " (line %d, column %d)", line, column);
	err->line = line;
	err->column = column;
	return rc;
}
