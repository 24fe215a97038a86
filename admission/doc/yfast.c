/*
 * yfast.c: block-style YAML in printable ASCII, read a line at a time.
 *
 * What is read: an optional "---" line; a block mapping at the top; block
 * mappings and sequences below it, including sequences at their key's
 * indentation and mappings that start on a "- " line; scalars on one line,
 * plain or quoted without escapes; one-line flow sequences and mappings of
 * such scalars; blank and comment lines.  Everything else (tabs, CR,
 * non-ASCII, anchors, tags, block scalars, nested flow collections,
 * multi-line scalars, a second document, anything libyaml might reject)
 * gives up, and so does every doubt: giving up only costs a slower read.
 */
#include "yfast.h"

#include <stdint.h>
#include <string.h>

#include "doc.h"

/* SSE2 (every x86-64 has it) for the scans below; MF_DOC_SWAR builds
 * the portable loops alone, as it does for the JSON reader's. */
#if defined(__SSE2__) && defined(__GNUC__) && !defined(MF_DOC_SWAR)
#include <emmintrin.h>
#define YF_SSE2 1
#endif

#define GIVE_UP (-1)

/* libyaml finds a simple key's ':' within 1024 characters of its start. */
#define MAX_KEY 1000

struct yf {
	const char *buf;
	size_t len;
	size_t bol;  /* the current line: its first byte, */
	size_t pos;  /* its first non-blank, */
	size_t eol;  /* its '\n' or len, */
	size_t next; /* and where the next line starts */
	int line;    /* 0-based, as libyaml's marks are */
	int indent;  /* pos - bol; -1 past the last line */
	int started; /* a line with content was seen */
	int depth;
	mf_yfast_sink sink;
	void *ctx;
};

struct scalar {
	size_t at;         /* its first byte, the quote if any */
	size_t start, len; /* its value */
	size_t end;        /* the byte after it (and its closing quote) */
	yaml_scalar_style_t style;
};

static size_t
skip_blanks(const struct yf *y, size_t p)
{
	while (p < y->eol && y->buf[p] == ' ')
		p++;
	return p;
}

/* Nothing but blanks and a comment from p to the end of the line. */
static int
rest_blank(const struct yf *y, size_t p)
{
	size_t q = skip_blanks(y, p);

	return q == y->eol || (y->buf[q] == '#' && q > p);
}

/* A "- " (or a lone "-") at the start of the current line. */
static int
is_entry(const struct yf *y)
{
	return y->indent >= 0 && y->buf[y->pos] == '-' &&
	    (y->pos + 1 == y->eol || y->buf[y->pos + 1] == ' ');
}

/* Move to the next line with content, past blank and comment lines. */
static int
advance(struct yf *y)
{
	while (y->next <= y->len) {
		const char *nl;
		size_t p;

		y->bol = y->next;
		y->line++;
		nl = memchr(y->buf + y->bol, '\n', y->len - y->bol);
		y->eol = nl != NULL ? (size_t)(nl - y->buf) : y->len;
		y->next = y->eol + 1;
		p = skip_blanks(y, y->bol);
		if (p == y->eol || y->buf[p] == '#')
			continue;
		if (p == y->bol && y->eol - p >= 3 &&
		    (memcmp(y->buf + p, "---", 3) == 0 ||
		        memcmp(y->buf + p, "...", 3) == 0)) {
			if (y->started || y->buf[p] == '.' ||
			    !rest_blank(y, p + 3))
				return GIVE_UP;
			y->started = 1;
			continue;
		}
		y->started = 1;
		y->pos = p;
		y->indent = (int)(p - y->bol);
		return 0;
	}
	y->indent = -1;
	return 0;
}

static int
emit(struct yf *y, yaml_event_type_t type, int line, size_t column,
    const struct scalar *s)
{
	yaml_event_t ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = type;
	ev.start_mark.line = (size_t)line;
	ev.start_mark.column = column;
	if (s != NULL) {
		ev.data.scalar.value = (yaml_char_t *)(y->buf + s->start);
		ev.data.scalar.length = s->len;
		ev.data.scalar.style = s->style;
		ev.data.scalar.plain_implicit =
		    s->style == YAML_PLAIN_SCALAR_STYLE;
		ev.data.scalar.quoted_implicit = !ev.data.scalar.plain_implicit;
	}
	return y->sink(y->ctx, &ev) == 0 ? 0 : GIVE_UP;
}

static int
emit_scalar(struct yf *y, const struct scalar *s)
{
	return emit(y, YAML_SCALAR_EVENT, y->line, s->at - y->bol, s);
}

static int
open_node(struct yf *y, yaml_event_type_t type, size_t at)
{
	if (++y->depth > MF_DOC_MAX_DEPTH)
		return GIVE_UP;
	return emit(y, type, y->line, at - y->bol, NULL);
}

static int
close_node(struct yf *y, yaml_event_type_t type)
{
	y->depth--;
	return emit(y, type, y->line, 0, NULL);
}

#define BIT(c) ((uint64_t)1 << ((c)&63))
/* YAML's indicators as two bit sets, those below 64 and the rest: every
 * key and value is checked against them. */
#define INDICATORS_LOW \
	(BIT('?') | BIT(':') | BIT(',') | BIT('#') | BIT('&') | BIT('*') | \
	    BIT('!') | BIT('>') | BIT('\'') | BIT('"') | BIT('%'))
#define INDICATORS_HIGH \
	(BIT('[') | BIT(']') | BIT('{') | BIT('}') | BIT('|') | BIT('@') | \
	    BIT('`'))

/*
 * A plain scalar may start with anything but an indicator; "-" only
 * before a digit, a letter or a dot ("-1", "-x"), where libyaml agrees.
 */
static int
plain_start(const struct yf *y, size_t p)
{
	unsigned char c = (unsigned char)y->buf[p];
	char d;

	if (c < 128 &&
	    (c < 64 ? INDICATORS_LOW : INDICATORS_HIGH) >> (c & 63) & 1)
		return 0;
	if (c != '-')
		return 1;
	d = p + 1 < y->eol ? y->buf[p + 1] : ' ';
	return (d >= '0' && d <= '9') || (d >= 'a' && d <= 'z') ||
	    (d >= 'A' && d <= 'Z') || d == '.';
}

/* The first ':' or '#' on the current line from q, or its end. */
static size_t
next_mark(const struct yf *y, size_t q)
{
	const char *b = y->buf;

#ifdef YF_SSE2
	/* 16 bytes at a time while they lie in the buffer; the marks past
	 * the line's end are dropped. */
	while (q < y->eol && y->len - q >= 16) {
		__m128i x =
		    _mm_loadu_si128((const __m128i *)(const void *)(b + q));
		unsigned m = (unsigned)_mm_movemask_epi8(
		    _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(':')),
		        _mm_cmpeq_epi8(x, _mm_set1_epi8('#'))));

		if (y->eol - q < 16)
			m &= (1u << (y->eol - q)) - 1;
		if (m != 0)
			return q + (size_t)__builtin_ctz(m);
		q += 16;
	}
#endif
	while (q < y->eol && b[q] != ':' && b[q] != '#')
		q++;
	return q < y->eol ? q : y->eol;
}

/* Where a plain scalar from p ends outside a flow collection: before
 * ": ", a ':' that ends the line, " #", or the end of the line. */
static size_t
plain_end(const struct yf *y, size_t p)
{
	const char *b = y->buf;
	size_t q = p;

	for (;; q++) {
		q = next_mark(y, q);
		if (q == y->eol)
			return q;
		if (b[q] == ':') {
			if (q + 1 == y->eol || b[q + 1] == ' ')
				return q;
		} else if (q > p && b[q - 1] == ' ') {
			return q - 1;
		}
	}
}

/*
 * The scalar at p on the current line.  A plain one ends before ": ", a
 * ':' at the end of the line, " #", or the end of the line; in a flow
 * collection (flow) also before ',', ']' and '}', while '[', '{' and a ':'
 * inside give up.
 */
static int
scalar(const struct yf *y, size_t p, int flow, struct scalar *s)
{
	const char *b = y->buf;
	size_t q;

	s->at = p;
	if (b[p] == '"' || b[p] == '\'') {
		const char *close = memchr(b + p + 1, b[p], y->eol - p - 1);

		if (close == NULL)
			return GIVE_UP;
		q = (size_t)(close - b);
		if (b[p] == '"' ? memchr(b + p + 1, '\\', q - p - 1) != NULL :
		                  q + 1 < y->eol && b[q + 1] == '\'')
			return GIVE_UP; /* escapes */
		s->style = b[p] == '"' ? YAML_DOUBLE_QUOTED_SCALAR_STYLE :
		                         YAML_SINGLE_QUOTED_SCALAR_STYLE;
		s->start = p + 1;
		s->len = q - p - 1;
		s->end = q + 1;
		return 0;
	}
	if (!plain_start(y, p))
		return GIVE_UP;
	if (flow) {
		for (q = p; q < y->eol; q++) {
			char c = b[q];

			if (c == ':') {
				if (q + 1 == y->eol || b[q + 1] == ' ')
					break;
				return GIVE_UP;
			} else if (c == ' ') {
				if (q + 1 < y->eol && b[q + 1] == '#')
					break;
			} else if (strchr(",[]{}", c) != NULL) {
				if (c == '[' || c == '{')
					return GIVE_UP;
				break;
			}
		}
	} else {
		q = plain_end(y, p);
	}
	s->end = q;
	while (q > p && b[q - 1] == ' ')
		q--;
	s->style = YAML_PLAIN_SCALAR_STYLE;
	s->start = p;
	s->len = q - p;
	return 0;
}

/* A mapping key at p: a scalar, blanks, ':' and a blank. */
static int
key(const struct yf *y, size_t p, struct scalar *s, size_t *colon)
{
	size_t q;

	if (scalar(y, p, 0, s) != 0)
		return GIVE_UP;
	q = skip_blanks(y, s->end);
	if (q == y->eol || y->buf[q] != ':' ||
	    (q + 1 < y->eol && y->buf[q + 1] != ' ') || q - p > MAX_KEY)
		return GIVE_UP;
	*colon = q;
	return 0;
}

/* A flow scalar at p and the blanks after it; 0 at the end of the line. */
static size_t
flow_scalar(struct yf *y, size_t p)
{
	struct scalar s;

	if (p == y->eol || scalar(y, p, 1, &s) != 0 || emit_scalar(y, &s) != 0)
		return 0;
	return skip_blanks(y, s.end);
}

/*
 * A flow sequence of scalars, or a flow mapping of scalar keys to scalar
 * values, from the '[' or '{' at p to its closing bracket on this line.
 */
static int
flow_node(struct yf *y, size_t p, size_t *end)
{
	int map = y->buf[p] == '{';
	char close = map ? '}' : ']';

	if (open_node(y,
	        map ? YAML_MAPPING_START_EVENT : YAML_SEQUENCE_START_EVENT,
	        p) != 0)
		return GIVE_UP;
	p = skip_blanks(y, p + 1);
	if (p < y->eol && y->buf[p] == close)
		goto done;
	for (;;) {
		if (map) {
			p = flow_scalar(y, p);
			if (p == 0 || p + 1 >= y->eol || y->buf[p] != ':' ||
			    y->buf[p + 1] != ' ')
				return GIVE_UP;
			p = skip_blanks(y, p + 1);
		}
		p = flow_scalar(y, p);
		if (p == 0 || p == y->eol)
			return GIVE_UP;
		if (y->buf[p] == close)
			break;
		if (y->buf[p] != ',')
			return GIVE_UP;
		p = skip_blanks(y, p + 1);
		if (p < y->eol && y->buf[p] == close)
			return GIVE_UP; /* a trailing comma */
	}
done:
	*end = p + 1;
	return close_node(y,
	    map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT);
}

/*
 * A node that sits on the current line from p: a flow sequence or a
 * scalar, then nothing but a comment.  Moves to the next line.
 */
static int
inline_node(struct yf *y, size_t p)
{
	struct scalar s;
	size_t end;

	if (y->buf[p] == '[' || y->buf[p] == '{') {
		if (flow_node(y, p, &end) != 0)
			return GIVE_UP;
	} else {
		if (scalar(y, p, 0, &s) != 0 || emit_scalar(y, &s) != 0)
			return GIVE_UP;
		end = s.end;
	}
	return rest_blank(y, end) ? advance(y) : GIVE_UP;
}

static int block_map(struct yf *y, size_t p);
static int block_seq(struct yf *y);

/* The value of the key whose ':' is at colon, in a mapping at indent n. */
static int
block_value(struct yf *y, int n, size_t colon)
{
	struct scalar empty = { .start = colon + 1,
		.style = YAML_PLAIN_SCALAR_STYLE };
	int line = y->line;
	size_t column = colon + 1 - y->bol;

	if (!rest_blank(y, colon + 1))
		return inline_node(y, skip_blanks(y, colon + 1));
	if (advance(y) != 0)
		return GIVE_UP;
	if (y->indent >= n && is_entry(y))
		return block_seq(y);
	if (y->indent > n)
		return block_map(y, y->pos);
	/* libyaml marks an empty value just after the ':'. */
	return emit(y, YAML_SCALAR_EVENT, line, column, &empty);
}

/* A block mapping whose first key is at p on the current line. */
static int
block_map(struct yf *y, size_t p)
{
	int n = (int)(p - y->bol);
	struct scalar s;
	size_t colon;

	if (open_node(y, YAML_MAPPING_START_EVENT, p) != 0)
		return GIVE_UP;
	for (;;) {
		if (key(y, p, &s, &colon) != 0 || emit_scalar(y, &s) != 0 ||
		    block_value(y, n, colon) != 0)
			return GIVE_UP;
		if (y->indent < n)
			break;
		if (y->indent > n || is_entry(y))
			return GIVE_UP;
		p = y->pos;
	}
	return close_node(y, YAML_MAPPING_END_EVENT);
}

/* A block sequence whose first "- " starts the current line. */
static int
block_seq(struct yf *y)
{
	int m = y->indent;
	struct scalar s;
	size_t p, q;

	if (open_node(y, YAML_SEQUENCE_START_EVENT, y->pos) != 0)
		return GIVE_UP;
	while (y->indent == m && is_entry(y)) {
		if (rest_blank(y, y->pos + 1))
			return GIVE_UP; /* the entry is a block below */
		p = skip_blanks(y, y->pos + 1);
		if (y->buf[p] != '[' && y->buf[p] != '{') {
			if (scalar(y, p, 0, &s) != 0)
				return GIVE_UP;
			q = skip_blanks(y, s.end);
			if (q < y->eol && y->buf[q] == ':') {
				if (block_map(y, p) != 0)
					return GIVE_UP;
				goto next;
			}
		}
		if (inline_node(y, p) != 0)
			return GIVE_UP;
	next:
		if (y->indent > m)
			return GIVE_UP;
	}
	return close_node(y, YAML_SEQUENCE_END_EVENT);
}

/*
 * Whether any of the eight bytes in x is outside printable ASCII and not
 * a newline: 0x7f and up, or 0x01 to 0x1f once newlines are 0 (x ^ '\n'
 * leaves every other byte below 0x20 below it).  The two byte-range
 * tests are the bit hacks "hasmore" and "hasbetween".
 */
static int
unprintable8(uint64_t x)
{
	const uint64_t ones = 0x0101010101010101u, low7 = ones * 0x7f;
	uint64_t t = x ^ (ones * '\n');
	uint64_t above = (x + ones * (0x7f - 0x7e)) | x;
	uint64_t between = (ones * (0x7f + 0x20) - (t & low7)) & ~t &
	    ((t & low7) + ones * 0x7f);

	return ((above | between) & ones * 0x80) != 0;
}

/* Printable ASCII and newlines only: 16 bytes at a time with SSE2, then
 * a word at a time. */
static int
printable(const char *buf, size_t len)
{
	uint64_t x;
	size_t i = 0;

#ifdef YF_SSE2
	for (; i + 16 <= len; i += 16) {
		__m128i v =
		    _mm_loadu_si128((const __m128i *)(const void *)(buf + i));
		/* Compared as signed bytes, those from 0x80 are below ' '. */
		__m128i low =
		    _mm_andnot_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')),
		        _mm_cmplt_epi8(v, _mm_set1_epi8(' ')));

		if (_mm_movemask_epi8(_mm_or_si128(low,
		        _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)))) != 0)
			return 0;
	}
#endif

	for (; i + 8 <= len; i += 8) {
		memcpy(&x, buf + i, 8);
		if (unprintable8(x))
			return 0;
	}
	for (; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];

		if ((c < 0x20 && c != '\n') || c > 0x7e)
			return 0;
	}
	return 1;
}

int
mf_yfast(const char *buf, size_t len, mf_yfast_sink sink, void *ctx)
{
	struct yf y = { .buf = buf,
		.len = len,
		.line = -1,
		.sink = sink,
		.ctx = ctx };

	if (!printable(buf, len))
		return GIVE_UP;
	if (advance(&y) != 0 || y.indent < 0 || is_entry(&y) ||
	    emit(&y, YAML_DOCUMENT_START_EVENT, y.line, 0, NULL) != 0 ||
	    block_map(&y, y.pos) != 0)
		return GIVE_UP;
	return y.indent < 0 ? 0 : GIVE_UP;
}
