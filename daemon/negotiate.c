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

/* The answer's forms, by the media types that ask for them, in the order
 * a tie within one range goes: JSON for any type, the table for any text
 * type. */
static const struct {
	const char *type;
	enum mf_output out;
} forms[] = { { "application/json", MF_OUT_JSON },
	{ "application/yaml", MF_OUT_YAML },
	{ "application/x-yaml", MF_OUT_YAML }, { "text/plain", MF_OUT_TEXT },
	{ "text/yaml", MF_OUT_YAML } };
#define NFORMS (sizeof(forms) / sizeof(forms[0]))

/* How closely the media range r[0..n) names type: 3 the type itself, 2
 * any type of its kind (text/ and a star), 1 any type (star/star), 0 not
 * at all. */
static int
match(const char *r, size_t n, const char *type)
{
	size_t kind = strcspn(type, "/");

	if (n == strlen(type) && strncasecmp(r, type, n) == 0)
		return 3;
	if (n == kind + 2 && strncasecmp(r, type, kind + 1) == 0 &&
	    r[kind + 1] == '*')
		return 2;
	return n == 3 && strncmp(r, "*/*", 3) == 0 ? 1 : 0;
}

/* The q of the element at e (to its comma): 1 unless a q parameter says
 * otherwise, 0 for one that does not read as a number. */
static double
q_of(const char *e, const char *end)
{
	const char *p = e;

	while ((p = memchr(p, ';', (size_t)(end - p))) != NULL) {
		char *stop;
		double q;

		/* Past the ';' and its blanks: at most at end, the comma. */
		p += 1 + strspn(p + 1, " \t");
		if (end - p < 2 || tolower((unsigned char)p[0]) != 'q' ||
		    p[1] != '=')
			continue;
		q = strtod(p + 2, &stop);
		return stop == p + 2 || !(q >= 0 && q <= 1) ? 0 : q;
	}
	return 1;
}

enum mf_output
mfd_negotiate(const char *h)
{
	double q[NFORMS] = { 0 };
	int how[NFORMS] = { 0 };
	size_t at[NFORMS] = { 0 }, bat = 0, k = 0;
	double bq = 0;
	enum mf_output out = MF_OUT_JSON;

	if (h == NULL)
		return MF_OUT_JSON;
	/* Each form takes the q of the range that names it most closely,
	 * and that range's place in the list. */
	for (const char *e = h; *e != '\0'; k++) {
		const char *end = e + strcspn(e, ",");
		size_t n;

		e += strspn(e, " \t");
		n = strcspn(e, " \t;,");
		for (size_t i = 0; i < NFORMS; i++) {
			int m = match(e, n, forms[i].type);

			if (m > how[i]) {
				how[i] = m;
				q[i] = q_of(e, end);
				at[i] = k;
			}
		}
		e = *end == ',' ? end + 1 : end;
	}
	/* The highest q; of equal ones, the one listed first. */
	for (size_t i = 0; i < NFORMS; i++)
		if (q[i] > bq || (q[i] == bq && q[i] > 0 && at[i] < bat)) {
			bq = q[i];
			bat = at[i];
			out = forms[i].out;
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
