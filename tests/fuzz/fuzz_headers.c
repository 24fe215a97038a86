/*
 * fuzz_headers.c: libFuzzer harness for the request headers memfloord
 * reads from any client: Accept (the answer's form, weighed by q) and
 * Content-Type (the body's format).
 *
 * Any byte string, up to its first NUL, gives one of the answer's three
 * forms, the same each time, and a body format that is one of the
 * readers' or -1; one that names no form of ours gives JSON.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "doc/doc.h"
#include "memfloord.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether s names a form of ours anywhere, or a range that would. */
static int
names_any(const char *s)
{
	static const char *const words[] = { "json", "yaml", "text/", "*" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(s, words[i]) != NULL)
			return 1;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *h = malloc(size + 1);
	enum mf_output out;
	int fmt;

	if (h == NULL)
		return 0;
	memcpy(h, data, size);
	h[size] = '\0';
	out = mfd_negotiate(h);
	if (out != MF_OUT_JSON && out != MF_OUT_YAML && out != MF_OUT_TEXT)
		abort();
	if (mfd_negotiate(h) != out)
		abort();
	for (char *p = h; *p != '\0'; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	if (!names_any(h) && out != MF_OUT_JSON)
		abort();
	memcpy(h, data, size);
	fmt = mfd_body_format(h, 0);
	if (fmt != -1 && fmt != MF_DOC_JSON && fmt != MF_DOC_YAML &&
	    fmt != MF_DOC_AUTO)
		abort();
	if (mfd_body_format(h, 1) != -1 && mfd_body_format(h, 1) != MF_DOC_JSON)
		abort();
	free(h);
	return 0;
}
