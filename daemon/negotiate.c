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

/*
 * The media types memfloord knows, one row each: the answer's form an
 * Accept of it asks for (ANSWER_NONE: none), and the format of a body of
 * it.  The answer forms are in the order a tie within one range goes:
 * JSON for any type, the table for any text type.
 */
#define ANSWER_NONE (-1)
static const struct {
	const char *type;
	int out; /* enum mf_output, or ANSWER_NONE */
	int fmt; /* enum mf_doc_format */
} media[] = {
	{ "application/json", MF_OUT_JSON, MF_DOC_JSON },
	{ "application/yaml", MF_OUT_YAML, MF_DOC_YAML },
	{ "application/x-yaml", MF_OUT_YAML, MF_DOC_YAML },
	{ "text/plain", MF_OUT_TEXT, MF_DOC_AUTO },
	{ "text/yaml", MF_OUT_YAML, MF_DOC_YAML },
	{ "text/x-yaml", ANSWER_NONE, MF_DOC_YAML },
	/* curl --data-binary sends this when told nothing else */
	{ "application/x-www-form-urlencoded", ANSWER_NONE, MF_DOC_AUTO },
	{ "application/octet-stream", ANSWER_NONE, MF_DOC_AUTO },
};
#define NMEDIA (sizeof(media) / sizeof(media[0]))

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
	double q[NMEDIA] = { 0 };
	int how[NMEDIA] = { 0 };
	size_t at[NMEDIA] = { 0 }, bat = 0, k = 0;
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
		for (size_t i = 0; i < NMEDIA; i++) {
			int m = media[i].out == ANSWER_NONE ?
			    0 :
			    match(e, n, media[i].type);

			if (m > how[i]) {
				how[i] = m;
				q[i] = q_of(e, end);
				at[i] = k;
			}
		}
		e = *end == ',' ? end + 1 : end;
	}
	/* The highest q; of equal ones, the one listed first. */
	for (size_t i = 0; i < NMEDIA; i++)
		if (q[i] > bq || (q[i] == bq && q[i] > 0 && at[i] < bat)) {
			bq = q[i];
			bat = at[i];
			out = (enum mf_output)media[i].out;
		}
	return out;
}

int
mfd_body_format(const char *ctype, int json_only)
{
	size_t n;

	if (ctype == NULL)
		return MF_DOC_AUTO;
	n = strcspn(ctype, "; \t");
	for (size_t i = 0; i < NMEDIA; i++) {
		if (match(ctype, n, media[i].type) != 3)
			continue;
		if (json_only && media[i].fmt != MF_DOC_JSON)
			return -1;
		return media[i].fmt;
	}
	return -1;
}
