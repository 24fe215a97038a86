/*
 * negotiate.c: the request headers the daemon reads, and content
 * negotiation, the answer's form from Accept and the body's from
 * Content-Type.
 */
#include <ctype.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "memfloord.h"

static enum MHD_Result
read_header(void *cls, enum MHD_ValueKind kind, const char *key,
    size_t key_size, const char *value, size_t value_size)
{
	static const struct {
		const char *name;
		size_t len;
	} names[MFD_H_COUNT] = {
#define NAME(s) { s, sizeof(s) - 1 }
		[MFD_H_ACCEPT] = NAME(MHD_HTTP_HEADER_ACCEPT),
		[MFD_H_CONTENT_TYPE] = NAME(MHD_HTTP_HEADER_CONTENT_TYPE),
		[MFD_H_CONTENT_LENGTH] = NAME(MHD_HTTP_HEADER_CONTENT_LENGTH),
		[MFD_H_TRANSFER_ENCODING] =
		    NAME(MHD_HTTP_HEADER_TRANSFER_ENCODING),
		[MFD_H_EXPECT] = NAME(MHD_HTTP_HEADER_EXPECT),
#undef NAME
	};
	struct mfd_headers *h = cls;

	(void)kind;
	(void)value_size;
	for (int i = 0; i < MFD_H_COUNT; i++) {
		if (key_size != names[i].len ||
		    strcasecmp(key, names[i].name) != 0)
			continue;
		if (h->v[i] == NULL)
			h->v[i] = value;
		h->lengths += i == MFD_H_CONTENT_LENGTH;
		break;
	}
	return MHD_YES;
}

void
mfd_headers_read(struct MHD_Connection *c, struct mfd_headers *h)
{
	memset(h, 0, sizeof(*h));
	MHD_get_connection_values_n(c, MHD_HEADER_KIND, read_header, h);
	if (h->v[MFD_H_CONTENT_LENGTH] != NULL)
		h->length =
		    (size_t)strtoull(h->v[MFD_H_CONTENT_LENGTH], NULL, 10);
}

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
