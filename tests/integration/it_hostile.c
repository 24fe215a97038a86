/*
 * it_hostile.c: hostile requests against the real daemon.
 *
 * Every file in tests/data/hostile/ is one request and what the daemon must
 * answer to it (tests/data/hostile/README.md describes the format).  Each file
 * is one test: send the request, check the status and the error body, then
 * check that the daemon still answers /healthz and has logged no sanitizer
 * report.  A daemon that dies is reported with its log and started again,
 * so that one crash does not hide what the other files find.
 *
 * IT_HOSTILE=PATTERN runs only the files whose names match (cmocka's test
 * filter: * and ? are wildcards); IT_HOSTILE_VERBOSE=1 prints every answer.
 */
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <microhttpd.h>
#include <jansson.h>
#include <yaml.h>

#include "harness.h"

#define MAX_HEADERS 8
#define MAX_CHECKS 8
#define MAX_STATUS 4
#define REQUEST_MS 15000 /* a hostile body must be answered within this */
#define SLOW_MS 2000     /* and one slower than this is named */
#define WAIT_MS 10000
#define GEN_MAX (16u << 20) /* a generated body is at most 16 MiB */

enum field_check { FIELD_ANY, FIELD_NULL, FIELD_IS, FIELD_PREFIX };

struct hcase {
	char file[256];
	int raw; /* the body is the whole request, sent on a socket */
	char method[16];
	char path[2048];
	char *headers[MAX_HEADERS + 1]; /* "Name: value", owned */
	size_t nheaders;
	int has_ctype, has_accept;
	int chunked;
	int library_framing; /* framing directive: see mhd_frames() */
	int escaped, chomp;
	char *generate;         /* the generate directive, owned, or NULL */
	int status[MAX_STATUS]; /* 0: the daemon closes without answering */
	size_t nstatus;
	enum field_check field_check;
	char field[512];
	int line, column;         /* -1: not checked */
	char *error;              /* words the error message holds, or NULL */
	char *checks[MAX_CHECKS]; /* "dotted.path=JSON", owned */
	size_t nchecks;
	char *body; /* the request body, ready to send, owned */
	size_t len;
	char problem[512]; /* why the file could not be read, or "" */
};

/* A growing byte string; a failed allocation marks it failed. */
struct text {
	char *data;
	size_t len, cap;
	int failed;
};

static struct it_daemon *daemon_;
static char *catalog_arg, *models_arg;

/* --- text ------------------------------------------------------------ */

static void
text_add(struct text *t, const char *p, size_t n)
{
	char *q;

	if (t->failed)
		return;
	if (t->len + n + 1 > GEN_MAX) {
		t->failed = 1;
		return;
	}
	if (t->cap - t->len <= n) {
		size_t cap = t->cap * 2 + n + 1;

		q = realloc(t->data, cap);
		if (q == NULL) {
			t->failed = 1;
			return;
		}
		t->data = q;
		t->cap = cap;
	}
	memcpy(t->data + t->len, p, n);
	t->len += n;
	t->data[t->len] = '\0';
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decode \\ \0 \n \r \t \xHH in s[0..len) into t; -1 on any other
 * escape, so a typo in a file is an error and not a silent byte.
 */
static int
decode(struct text *t, const char *s, size_t len)
{
	static const char from[] = "\\0nrt", to[] = "\\\0\n\r\t";
	size_t i = 0;
	char c;

	while (i < len) {
		const char *e;

		if (s[i] != '\\') {
			text_add(t, s + i++, 1);
			continue;
		}
		if (i + 1 >= len)
			return -1;
		e = strchr(from, s[i + 1]);
		if (e != NULL && *e != '\0') {
			text_add(t, &to[e - from], 1);
			i += 2;
			continue;
		}
		if (s[i + 1] != 'x' || i + 3 >= len || hexval(s[i + 2]) < 0 ||
		    hexval(s[i + 3]) < 0)
			return -1;
		c = (char)(hexval(s[i + 2]) << 4 | hexval(s[i + 3]));
		text_add(t, &c, 1);
		i += 4;
	}
	return 0;
}

/* The next space-separated word of *p, decoded, malloc'd; NULL at end. */
static char *
word(const char **p, int rest)
{
	struct text t = { 0 };
	const char *s = *p;
	size_t n;

	while (*s == ' ')
		s++;
	if (*s == '\0')
		return NULL;
	n = rest ? strlen(s) : strcspn(s, " ");
	if (decode(&t, s, n) != 0 || t.failed || t.data == NULL) {
		free(t.data);
		return NULL;
	}
	*p = s + n;
	return t.data;
}

/* --- generated bodies ------------------------------------------------ */

/* i in base 36: short, distinct keys. */
static void
base36(char *buf, size_t size, unsigned long i)
{
	static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	char tmp[16];
	size_t n = 0, k = 0;

	do {
		tmp[n++] = digits[i % 36];
		i /= 36;
	} while (i != 0 && n < sizeof(tmp));
	while (n > 0 && k + 1 < size)
		buf[k++] = tmp[--n];
	buf[k] = '\0';
}

static void
gen_keys(struct text *t, unsigned long n, const char *item)
{
	char key[16];

	for (unsigned long i = 0; i < n && !t->failed; i++) {
		const char *p = item, *k;

		base36(key, sizeof(key), i);
		while ((k = strstr(p, "%k")) != NULL) {
			text_add(t, p, (size_t)(k - p));
			text_add(t, key, strlen(key));
			p = k + 2;
		}
		text_add(t, p, strlen(p));
	}
}

static void
gen_indent(struct text *t, unsigned long n, const char *item)
{
	for (unsigned long i = 0; i < n && !t->failed; i++) {
		for (unsigned long s = 0; s < i; s++)
			text_add(t, " ", 1);
		text_add(t, item, strlen(item));
		text_add(t, "\n", 1);
	}
}

/*
 * "repeat N TEXT", "nest N OPEN CLOSE [INNER]", "keys N TEXT" (each %k
 * becomes the index in base 36), "indent N TEXT" (line i indented by i
 * spaces).  -1 for anything else.
 */
static int
generate(struct text *t, const char *spec)
{
	char *kind = word(&spec, 0), *num = word(&spec, 0), *end = NULL;
	char *a = NULL, *b = NULL, *c = NULL;
	unsigned long n = num ? strtoul(num, &end, 10) : 0;
	int rc = 0;

	if (kind == NULL || end == NULL || *end != '\0') {
		rc = -1;
	} else if (strcmp(kind, "nest") == 0) {
		a = word(&spec, 0);
		b = word(&spec, 0);
		c = word(&spec, 0);
		for (unsigned long i = 0; a && b && i < n && !t->failed; i++)
			text_add(t, a, strlen(a));
		if (c != NULL)
			text_add(t, c, strlen(c));
		for (unsigned long i = 0; a && b && i < n && !t->failed; i++)
			text_add(t, b, strlen(b));
		rc = a && b ? 0 : -1;
	} else if ((a = word(&spec, 1)) == NULL) {
		rc = -1;
	} else if (strcmp(kind, "repeat") == 0) {
		for (unsigned long i = 0; i < n && !t->failed; i++)
			text_add(t, a, strlen(a));
	} else if (strcmp(kind, "keys") == 0) {
		gen_keys(t, n, a);
	} else if (strcmp(kind, "indent") == 0) {
		gen_indent(t, n, a);
	} else {
		rc = -1;
	}
	free(kind);
	free(num);
	free(a);
	free(b);
	free(c);
	return rc == 0 && !t->failed ? 0 : -1;
}

/* --- reading a case -------------------------------------------------- */

static int problem(struct hcase *hc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
problem(struct hcase *hc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hc->problem, sizeof(hc->problem), fmt, ap);
	va_end(ap);
	return -1;
}

/* "Name: value"; an empty value, "Name:", tells curl to send none. */
static int
add_header(struct hcase *hc, const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 3;

	if (hc->nheaders == MAX_HEADERS)
		return problem(hc, "more than %d headers", MAX_HEADERS);
	hc->headers[hc->nheaders] = malloc(n);
	if (hc->headers[hc->nheaders] == NULL)
		return problem(hc, "out of memory");
	snprintf(hc->headers[hc->nheaders++], n, "%s:%s%s", name,
	    value[0] ? " " : "", value);
	return 0;
}

static int
parse_status(struct hcase *hc, const char *s, size_t n)
{
	const char *end = s + n;

	while (s < end) {
		size_t k = strcspn(s, "|");
		char tok[16], *stop;
		long v;

		if (k > (size_t)(end - s))
			k = (size_t)(end - s);
		snprintf(tok, sizeof(tok), "%.*s", (int)k, s);
		v = strcmp(tok, "close") == 0 ? 0 : strtol(tok, &stop, 10);
		if (hc->nstatus == MAX_STATUS ||
		    (v != 0 && (*stop != '\0' || v < 100 || v > 599)))
			return problem(hc, "bad status '%s'", tok);
		hc->status[hc->nstatus++] = (int)v;
		s += k + 1;
	}
	return hc->nstatus > 0 ? 0 : problem(hc, "no status");
}

static int
parse_number(struct hcase *hc, const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || (*end != ' ' && *end != '\0') || v <= 0 || v > INT_MAX)
		return problem(hc, "bad number '%s'", s);
	*out = (int)v;
	return 0;
}

/* One "field=P", "field=null", "field^=P", "line=N" or "column=N". */
static int
parse_term(struct hcase *hc, const char *p, size_t n)
{
	if (n == 10 && strncmp(p, "field=null", n) == 0) {
		hc->field_check = FIELD_NULL;
		return 0;
	}
	if (strncmp(p, "field=", 6) == 0 || strncmp(p, "field^=", 7) == 0) {
		size_t skip = p[5] == '^' ? 7 : 6;

		hc->field_check = skip == 7 ? FIELD_PREFIX : FIELD_IS;
		snprintf(hc->field, sizeof(hc->field), "%.*s", (int)(n - skip),
		    p + skip);
		return 0;
	}
	if (strncmp(p, "line=", 5) == 0)
		return parse_number(hc, p + 5, &hc->line);
	if (strncmp(p, "column=", 7) == 0)
		return parse_number(hc, p + 7, &hc->column);
	return problem(hc, "bad expectation '%.*s'", (int)n, p);
}

/* "STATUS[|STATUS...] TERM..." */
static int
parse_expect(struct hcase *hc, const char *p)
{
	size_t n = strcspn(p, " ");

	if (parse_status(hc, p, n) != 0)
		return -1;
	for (p += n; *(p += strspn(p, " ")) != '\0'; p += n) {
		n = strcspn(p, " ");
		if (parse_term(hc, p, n) != 0)
			return -1;
	}
	return 0;
}

static int
dup_into(struct hcase *hc, char **slot, const char *v)
{
	if (*slot != NULL)
		return problem(hc, "a directive given twice");
	*slot = strdup(v);
	return *slot != NULL ? 0 : problem(hc, "out of memory");
}

static int
parse_body_mode(struct hcase *hc, const char *v)
{
	while (*(v += strspn(v, " ")) != '\0') {
		size_t n = strcspn(v, " ");

		if (n == 7 && strncmp(v, "escaped", n) == 0)
			hc->escaped = 1;
		else if (n == 5 && strncmp(v, "chomp", n) == 0)
			hc->chomp = 1;
		else
			return problem(hc, "bad body mode '%.*s'", (int)n, v);
		v += n;
	}
	return 0;
}

/* One "# key: value" line of the header. */
static int
directive(struct hcase *hc, const char *key, const char *v)
{
	if (strcasecmp(key, "about") == 0)
		return 0;
	if (strcasecmp(key, "Content-Type") == 0) {
		hc->has_ctype = 1;
		return add_header(hc, "Content-Type", v);
	}
	if (strcasecmp(key, "Accept") == 0) {
		hc->has_accept = 1;
		return add_header(hc, "Accept", v);
	}
	if (strcasecmp(key, "header") == 0) {
		const char *colon = strchr(v, ':');
		char name[128];

		if (colon == NULL || colon - v >= (long)sizeof(name))
			return problem(hc, "bad header '%s'", v);
		snprintf(name, sizeof(name), "%.*s", (int)(colon - v), v);
		return add_header(hc, name, colon + 1 + strspn(colon + 1, " "));
	}
	if (strcasecmp(key, "framing") == 0 &&
	    strcmp(v, "libmicrohttpd") == 0) {
		hc->library_framing = 1;
		return 0;
	}
	if (strcasecmp(key, "transfer") == 0 && strcmp(v, "chunked") == 0) {
		hc->chunked = 1;
		return 0;
	}
	if (strcasecmp(key, "body") == 0)
		return parse_body_mode(hc, v);
	if (strcasecmp(key, "generate") == 0)
		return dup_into(hc, &hc->generate, v);
	if (strcasecmp(key, "expect") == 0)
		return parse_expect(hc, v);
	if (strcasecmp(key, "error") == 0)
		return dup_into(hc, &hc->error, v);
	if (strcasecmp(key, "check") == 0 && hc->nchecks < MAX_CHECKS)
		return dup_into(hc, &hc->checks[hc->nchecks++], v);
	return problem(hc, "unknown directive '%s: %s'", key, v);
}

/* The first line: "# RAW" or "# METHOD PATH". */
static int
request_line(struct hcase *hc, const char *v)
{
	if (strcmp(v, "RAW") == 0) {
		hc->raw = 1;
		return 0;
	}
	if (sscanf(v, "%15s %2047s", hc->method, hc->path) != 2 ||
	    hc->path[0] != '/')
		return problem(hc, "first line is not '# METHOD /PATH'");
	return 0;
}

/* Read the "# ..." lines; *body is where the body starts. */
static int
parse_header(struct hcase *hc, const char *data, const char **body)
{
	const char *p = data;
	char line[8192];
	int first = 1;

	for (;;) {
		size_t n = strcspn(p, "\n");
		const char *colon;

		if (p[n] != '\n')
			return problem(hc, "no blank line after the header");
		if (n == 0)
			break;
		if (n >= sizeof(line) || strncmp(p, "# ", 2) != 0)
			return problem(hc, "header line is not '# ...'");
		snprintf(line, sizeof(line), "%.*s", (int)n - 2, p + 2);
		p += n + 1;
		if (first) {
			first = 0;
			if (request_line(hc, line) != 0)
				return -1;
			continue;
		}
		colon = strstr(line, ": ");
		if (colon == NULL)
			return problem(hc, "header line without ': '");
		line[colon - line] = '\0';
		if (directive(hc, line, colon + 2) != 0)
			return -1;
	}
	*body = p + 1;
	return hc->nstatus > 0 ? 0 : problem(hc, "no expect line");
}

/* The body: chomped, decoded, with @@ replaced by what is generated. */
static int
build_body(struct hcase *hc, const char *s, size_t n)
{
	struct text t = { 0 }, g = { 0 };
	const char *at;
	int rc = 0;

	if (hc->chomp && n > 0 && s[n - 1] == '\n')
		n--;
	if (hc->escaped)
		rc = decode(&t, s, n);
	else
		text_add(&t, s, n);
	if (rc == 0 && hc->generate != NULL) {
		at = t.data ? strstr(t.data, "@@") : NULL;
		rc = at == NULL ? -1 : generate(&g, hc->generate);
		if (rc == 0) {
			size_t off = (size_t)(at - t.data);

			text_add(&g, at + 2, t.len - off - 2);
			t.len = off;
			text_add(&t, g.data ? g.data : "", g.len);
		}
	}
	free(g.data);
	if (rc != 0 || t.failed || g.failed) {
		free(t.data);
		return problem(hc,
		    "cannot build the body (escape, @@ or "
		    "generate)");
	}
	hc->body = t.data ? t.data : strdup("");
	hc->len = t.len;
	return hc->body != NULL ? 0 : problem(hc, "out of memory");
}

static void
case_read(struct hcase *hc, const char *dir, const char *file)
{
	const char *body = NULL;
	char path[8192];
	size_t len;
	char *data;

	memset(hc, 0, sizeof(*hc));
	hc->line = hc->column = -1;
	snprintf(hc->file, sizeof(hc->file), "%s", file);
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	data = it_read_file(path, &len);
	if (data == NULL) {
		problem(hc, "cannot read %s", path);
		return;
	}
	if (parse_header(hc, data, &body) == 0)
		build_body(hc, body, len - (size_t)(body - data));
	/* Without a type of its own, curl would call the body a form. */
	if (hc->problem[0] == '\0' && !hc->raw && !hc->has_ctype && hc->len > 0)
		add_header(hc, "Content-Type", "");
	free(data);
}

static void
case_free(struct hcase *hc)
{
	for (size_t i = 0; i < hc->nheaders; i++)
		free(hc->headers[i]);
	for (size_t i = 0; i < hc->nchecks; i++)
		free(hc->checks[i]);
	free(hc->generate);
	free(hc->error);
	free(hc->body);
}

/* --- the daemon ------------------------------------------------------ */

static int
start_daemon(void)
{
	daemon_ = it_daemon_start((const char *const[]){ "-f", catalog_arg,
	    "-m", models_arg, "--threads", "2", NULL });
	return daemon_ != NULL ? 0 : -1;
}

static int
group_setup(void **state)
{
	static char cat[4096], models[4096];

	(void)state;
	catalog_arg = it_path(cat, sizeof(cat), "catalog/gpus.yaml");
	models_arg = it_path(models, sizeof(models), "catalog/models");
	return start_daemon();
}

static int
group_teardown(void **state)
{
	int rc = it_daemon_finish(daemon_, WAIT_MS);

	(void)state;
	daemon_ = NULL;
	return rc;
}

/* The end of the log, from offset on (the daemon's last words). */
static void
print_log_from(struct it_daemon *d, size_t offset)
{
	char *log = it_daemon_log(d);
	size_t len = log ? strlen(log) : 0;

	if (offset > len)
		offset = 0;
	if (len - offset > 8000)
		offset = len - 8000;
	fprintf(stderr, "memfloord logged:\n%s\n", log ? log + offset : "");
	free(log);
}

/* --- checking an answer ---------------------------------------------- */

struct answer {
	long status; /* 0: closed without an answer */
	const char *body;
	size_t len;
	const char *ctype; /* NULL when none */
	int raw;
};

static int bad(const struct hcase *hc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
bad(const struct hcase *hc, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	print_error("%s: %s\n", hc->file, msg);
	return 1;
}

static int
check_status(const struct hcase *hc, const struct answer *a)
{
	if (getenv("IT_HOSTILE_VERBOSE") != NULL)
		print_message("%s: %ld %.300s\n", hc->file, a->status, a->body);
	for (size_t i = 0; i < hc->nstatus; i++)
		if (hc->status[i] == a->status)
			return 0;
	return bad(hc,
	    "status %ld (0: closed, no answer), want %d%s; body:\n"
	    "%.600s",
	    a->status, hc->status[0], hc->nstatus > 1 ? " or another" : "",
	    a->body);
}

static int
check_field(const struct hcase *hc, json_t *j)
{
	json_t *f = json_object_get(j, "field");
	const char *s = json_string_value(f);

	switch (hc->field_check) {
	case FIELD_ANY:
		return 0;
	case FIELD_NULL:
		if (json_is_null(f))
			return 0;
		break;
	case FIELD_IS:
		if (s != NULL && strcmp(s, hc->field) == 0)
			return 0;
		break;
	case FIELD_PREFIX:
		if (s != NULL && strncmp(s, hc->field, strlen(hc->field)) == 0)
			return 0;
		break;
	}
	return bad(hc, "field is %s, want %s%s", s ? s : "not a string",
	    hc->field_check == FIELD_NULL ? "null" : hc->field,
	    hc->field_check == FIELD_PREFIX ? "..." : "");
}

static int
check_position(const struct hcase *hc, json_t *j, const char *key, int want)
{
	json_t *v = json_object_get(j, key);

	if (want < 0 || (json_is_integer(v) && json_integer_value(v) == want))
		return 0;
	return bad(hc, "%s is %lld, want %d", key,
	    json_is_integer(v) ? json_integer_value(v) : -1LL, want);
}

/* An error answer: {"error": "...", "field", "line", "column"}. */
static int
check_error(const struct hcase *hc, json_t *j)
{
	const char *msg = json_string_value(json_object_get(j, "error"));
	int n = 0;

	if (msg == NULL || json_object_get(j, "field") == NULL ||
	    json_object_get(j, "line") == NULL ||
	    json_object_get(j, "column") == NULL)
		return bad(hc, "not an error body");
	n += check_field(hc, j);
	n += check_position(hc, j, "line", hc->line);
	n += check_position(hc, j, "column", hc->column);
	if (hc->error != NULL && strstr(msg, hc->error) == NULL)
		n +=
		    bad(hc, "error \"%s\" does not say \"%s\"", msg, hc->error);
	return n;
}

/* "dotted.path=JSON": the value at path equals the JSON. */
static int
check_one(const struct hcase *hc, json_t *j, const char *check)
{
	const char *eq = strchr(check, '=');
	char path[256];
	json_t *want, *got;
	char *text;
	int n = 0;

	if (eq == NULL || eq - check >= (long)sizeof(path))
		return bad(hc, "bad check '%s'", check);
	snprintf(path, sizeof(path), "%.*s", (int)(eq - check), check);
	want = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
	got = it_jpath(j, path);
	if (want == NULL)
		return bad(hc, "check '%s': not JSON after '='", check);
	if (!json_equal(want, got)) {
		text = got ? json_dumps(got, JSON_ENCODE_ANY) : NULL;
		n = bad(hc, "%s is %s, want %s", path, text ? text : "absent",
		    eq + 1);
		free(text);
	}
	json_decref(want);
	return n;
}

/*
 * Whether the answer must be JSON: it says it is, or nothing asked for
 * another form (libmicrohttpd's own errors to raw requests are HTML).
 */
static int
wants_json(const struct hcase *hc, const struct answer *a)
{
	if (a->ctype != NULL && strcmp(a->ctype, "application/json") == 0)
		return 1;
	if (hc->has_accept)
		return 0;
	if (a->raw)
		return hc->field_check != FIELD_ANY || hc->error != NULL ||
		    hc->nchecks > 0;
	return 1;
}

/* YAML answers must parse as YAML. */
static int
check_yaml(const struct hcase *hc, const struct answer *a)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int n = 0, end = 0;

	if (!yaml_parser_initialize(&p))
		return bad(hc, "out of memory");
	yaml_parser_set_input_string(&p, (const unsigned char *)a->body,
	    a->len);
	while (!end && n == 0) {
		if (!yaml_parser_parse(&p, &ev)) {
			n = bad(hc,
			    "the answer is not YAML (%s, line %zu):\n"
			    "%.600s",
			    p.problem ? p.problem : "?",
			    p.problem_mark.line + 1, a->body);
			break;
		}
		end = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return n;
}

/*
 * Text answers are read in a terminal: no control character but newline
 * and tab may reach it (an ESC from a job name could rewrite the screen).
 */
static int
check_text(const struct hcase *hc, const struct answer *a)
{
	for (size_t i = 0; i < a->len; i++) {
		unsigned char c = (unsigned char)a->body[i];

		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			return bad(hc,
			    "control character 0x%02x at byte %zu of "
			    "a text answer:\n%.600s",
			    c, i, a->body);
	}
	return 0;
}

static int
check_json(const struct hcase *hc, const struct answer *a)
{
	json_error_t err;
	json_t *j;
	int n = 0;

	if (!wants_json(hc, a))
		return 0;
	if (a->ctype == NULL || strcmp(a->ctype, "application/json") != 0)
		return bad(hc, "Content-Type %s, want application/json",
		    a->ctype ? a->ctype : "(none)");
	j = json_loadb(a->body, a->len, 0, &err);
	if (j == NULL)
		return bad(hc,
		    "the answer is not JSON (%s, at byte %d):\n%.600s",
		    err.text, err.position, a->body);
	/* 403 is a rejection, a decision and not an error. */
	if (a->status >= 400 && a->status != 403)
		n += check_error(hc, j);
	for (size_t i = 0; i < hc->nchecks; i++)
		n += check_one(hc, j, hc->checks[i]);
	json_decref(j);
	return n;
}

static int
check_body(const struct hcase *hc, const struct answer *a)
{
	const char *t = a->ctype ? a->ctype : "";

	if (a->status == 0)
		return 0;
	if (strncmp(t, "application/yaml", 16) == 0)
		return check_yaml(hc, a);
	if (strncmp(t, "text/plain", 10) == 0)
		return check_text(hc, a);
	return check_json(hc, a);
}

/* --- raw answers ----------------------------------------------------- */

/* The value of header name in the header block h[0..n), or NULL. */
static const char *
raw_header(const char *h, size_t n, const char *name, char *buf, size_t size)
{
	size_t k = strlen(name);

	for (const char *p = h; p < h + n;) {
		const char *end = memchr(p, '\n', (size_t)(h + n - p));
		size_t len = end ? (size_t)(end - p) : (size_t)(h + n - p);

		if (len > k && strncasecmp(p, name, k) == 0 && p[k] == ':') {
			const char *v = p + k + 1 + strspn(p + k + 1, " ");

			snprintf(buf, size, "%.*s",
			    (int)(len - (size_t)(v - p)), v);
			buf[strcspn(buf, "\r")] = '\0';
			return buf;
		}
		p += len + 1;
	}
	return NULL;
}

/*
 * Parse what came back on a raw socket as one HTTP response, whose
 * Content-Length must account for every byte after the header: two
 * responses, or headers sent twice, are wrong.
 */
/*
 * Whether libmicrohttpd frames its own error answers right.  Before 1.0 it
 * answers a request whose Content-Length is not a number with its status
 * line and headers twice; the request is refused either way, and the
 * daemon cannot change what the library writes, so for files marked
 * "framing: libmicrohttpd" only the status is checked on such versions.
 */
static int
mhd_frames(void)
{
	return strtol(MHD_get_version(), NULL, 10) >= 1;
}

static int
raw_answer(const struct hcase *hc, const char *out, struct answer *a,
    char *ctype, size_t size)
{
	const char *end = strstr(out, "\r\n\r\n");
	char cl[64];
	size_t hlen, blen;

	memset(a, 0, sizeof(*a));
	a->raw = 1;
	a->body = "";
	if (out[0] == '\0')
		return 0;
	if (strncmp(out, "HTTP/1.", 7) != 0 || strlen(out) < 12 || end == NULL)
		return bad(hc, "not an HTTP response:\n%.600s", out);
	a->status = strtol(out + 9, NULL, 10);
	hlen = (size_t)(end - out) + 4;
	blen = strlen(out) - hlen;
	a->body = out + hlen;
	a->len = blen;
	a->ctype = raw_header(out, hlen, "Content-Type", ctype, size);
	if (hc->library_framing && !mhd_frames())
		return 0;
	if (raw_header(out, hlen, "Content-Length", cl, sizeof(cl)) == NULL ||
	    strtoull(cl, NULL, 10) != blen)
		return bad(hc,
		    "not one well-formed response (Content-Length "
		    "%s, %zu bytes follow the header):\n%.600s",
		    raw_header(out, hlen, "Content-Length", cl, sizeof(cl)) ?
		        cl :
		        "absent",
		    blen, out);
	return 0;
}

/* --- one case -------------------------------------------------------- */

static int
send_case(const struct hcase *hc, struct it_response *r)
{
	struct it_req q = { 0 };

	q.method = hc->method;
	q.path = hc->path;
	q.body = hc->len > 0 ? hc->body : NULL;
	q.len = hc->len;
	q.headers = (const char *const *)hc->headers;
	q.chunked = hc->chunked;
	q.timeout_ms = REQUEST_MS;
	return it_send(daemon_, &q, r);
}

/* Send the case and check the answer; the number of problems. */
static int
exchange(const struct hcase *hc)
{
	struct it_response r;
	struct answer a;
	char ctype[256];
	char *out;
	int n;

	if (hc->raw) {
		out = it_raw(daemon_, hc->body, hc->len, REQUEST_MS);
		if (out == NULL)
			return bad(hc, "cannot connect");
		n = raw_answer(hc, out, &a, ctype, sizeof(ctype));
		n += check_status(hc, &a);
		n += check_body(hc, &a);
		free(out);
		return n;
	}
	if (send_case(hc, &r) != 0) {
		n = bad(hc, "no answer: %s", r.error);
		it_response_free(&r);
		return n;
	}
	memset(&a, 0, sizeof(a));
	a.status = r.status;
	a.body = r.body;
	a.len = r.len;
	a.ctype = r.content_type;
	n = check_status(hc, &a) + check_body(hc, &a);
	it_response_free(&r);
	return n;
}

/* Still alive, still answering, nothing new from a sanitizer. */
static int
check_alive(const struct hcase *hc, int reports, size_t logged)
{
	struct it_response r;
	int n = 0;

	if (it_request(daemon_, "GET", "/healthz", NULL, 0, NULL, &r) != 0 ||
	    r.status != 200 || strcmp(r.body, "ok\n") != 0)
		n += bad(hc,
		    "the daemon no longer answers /healthz "
		    "(status %ld, %s)",
		    r.status, r.error);
	it_response_free(&r);
	if (it_daemon_reports(daemon_) != reports)
		n += bad(hc, "the daemon logged a sanitizer report");
	if (n == 0)
		return 0;
	print_error("%s: memfloord exit status %d (128 + a signal; -1: still "
	            "running)\n",
	    hc->file, it_daemon_wait(daemon_, 1000));
	print_log_from(daemon_, logged);
	/* A fresh daemon for the files that follow. */
	it_daemon_stop(daemon_);
	daemon_ = NULL;
	return n;
}

static size_t
log_length(struct it_daemon *d)
{
	char *log = it_daemon_log(d);
	size_t n = log ? strlen(log) : 0;

	free(log);
	return n;
}

static void
run_case(void **state)
{
	const struct hcase *hc = *state;
	long t0, ms;
	size_t logged;
	int reports, n;

	if (hc->problem[0] != '\0') {
		print_error("%s: %s\n", hc->file, hc->problem);
		fail();
	}
	if (daemon_ == NULL && start_daemon() != 0)
		fail_msg("memfloord does not start again");
	reports = it_daemon_reports(daemon_);
	logged = log_length(daemon_);
	t0 = it_now_ms();
	n = exchange(hc);
	ms = it_now_ms() - t0;
	if (ms > SLOW_MS)
		print_message("%s: answered in %ld ms\n", hc->file, ms);
	n += check_alive(hc, reports, logged);
	if (n > 0)
		fail();
}

/* --- main ------------------------------------------------------------ */

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .req files of dir, sorted; *n of them.  NULL on error. */
static char **
list_cases(const char *dir, size_t *n)
{
	char **names = NULL, **p;
	struct dirent *e;
	size_t cap = 0;
	DIR *d = opendir(dir);

	*n = 0;
	while (d != NULL && (e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);

		if (len < 5 || strcmp(e->d_name + len - 4, ".req") != 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			p = realloc(names, cap * sizeof(*names));
			if (p == NULL)
				break;
			names = p;
		}
		names[*n] = strdup(e->d_name);
		if (names[*n] != NULL)
			(*n)++;
	}
	if (d != NULL)
		closedir(d);
	if (names != NULL)
		qsort(names, *n, sizeof(*names), by_name);
	return names;
}

int
main(void)
{
	struct CMUnitTest *tests;
	struct hcase *cases;
	char dir[4096], **names;
	size_t n;
	int failed;

	it_path(dir, sizeof(dir), "tests/data/hostile");
	names = list_cases(dir, &n);
	cases = calloc(n ? n : 1, sizeof(*cases));
	tests = calloc(n ? n : 1, sizeof(*tests));
	if (names == NULL || n == 0 || cases == NULL || tests == NULL) {
		fprintf(stderr, "it_hostile: no cases in %s\n", dir);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		case_read(&cases[i], dir, names[i]);
		tests[i].name = cases[i].file;
		tests[i].test_func = run_case;
		tests[i].initial_state = &cases[i];
	}
	if (getenv("IT_HOSTILE") != NULL)
		cmocka_set_test_filter(getenv("IT_HOSTILE"));
	/* The function behind cmocka_run_group_tests_name, which needs an
	 * array whose size is known when compiling. */
	failed = _cmocka_run_group_tests("it_hostile", tests, n, group_setup,
	    group_teardown);
	it_cleanup();
	for (size_t i = 0; i < n; i++) {
		case_free(&cases[i]);
		free(names[i]);
	}
	free(names);
	free(cases);
	free(tests);
	return failed == 0 ? 0 : 1;
}
