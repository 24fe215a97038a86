/*
 * negotiate.c: content negotiation, the answer's form from Accept and the
 * body's from Content-Type.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "memfloord.h"

/* Where in list (lower-cased) the media type t appears whole; -1 if not. */
static long
media_pos(const char *list, const char *t)
{
	size_t n = strlen(t);

	for (const char *p = list; (p = strstr(p, t)) != NULL; p += n)
		if ((p == list || strchr(" ,", p[-1])) &&
		    strchr(" ,;", p[n]) != NULL)
			return p - list;
	return -1;
}

enum mf_output
mfd_negotiate(const char *h)
{
	static const struct {
		const char *type;
		enum mf_output out;
	} types[] = { { "text/plain", MF_OUT_TEXT },
		{ "application/yaml", MF_OUT_YAML },
		{ "application/x-yaml", MF_OUT_YAML },
		{ "text/yaml", MF_OUT_YAML },
		{ "application/json", MF_OUT_JSON } };
	enum mf_output out = MF_OUT_JSON;
	long best = -1, pos;
	char accept[256];
	size_t i;

	if (h == NULL)
		return out;
	for (i = 0; h[i] != '\0' && i < sizeof(accept) - 1; i++)
		accept[i] = (char)tolower((unsigned char)h[i]);
	accept[i] = '\0';
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		pos = media_pos(accept, types[i].type);
		if (pos >= 0 && (best < 0 || pos < best)) {
			best = pos;
			out = types[i].out;
		}
	}
	return out;
}

int
mfd_body_format(const char *ctype, int json_only)
{
	static const struct {
		const char *type;
		int fmt;
	} types[] = {
		{ "application/json", MF_DOC_JSON },
		{ "application/yaml", MF_DOC_YAML },
		{ "application/x-yaml", MF_DOC_YAML },
		{ "text/yaml", MF_DOC_YAML },
		{ "text/x-yaml", MF_DOC_YAML },
		{ "text/plain", MF_DOC_AUTO },
		/* curl --data-binary sends this when told nothing else */
		{ "application/x-www-form-urlencoded", MF_DOC_AUTO },
		{ "application/octet-stream", MF_DOC_AUTO },
	};
	size_t n;

	if (ctype == NULL)
		return MF_DOC_AUTO;
	n = strcspn(ctype, "; \t");
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strlen(types[i].type) != n ||
		    strncasecmp(ctype, types[i].type, n) != 0)
			continue;
		if (json_only && types[i].fmt != MF_DOC_JSON)
			return -1;
		return types[i].fmt;
	}
	return -1;
}
