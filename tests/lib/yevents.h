/*
 * yevents.h: a YAML event stream as text, one line an event, from libyaml
 * or from mf_yfast, for the tests that hold the two to each other.  Only
 * what doc.c reads is written: kinds, the marks of nodes, scalar values
 * and whether a scalar is plain.
 */
#ifndef MF_YEVENTS_H
#define MF_YEVENTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct ytext {
	char *s;
	size_t len, cap;
};

static void
ytext_add(struct ytext *t, const char *s, size_t n)
{
	if (t->len + n + 1 > t->cap) {
		t->cap = (t->len + n + 1) * 2;
		t->s = realloc(t->s, t->cap);
		if (t->s == NULL)
			abort();
	}
	memcpy(t->s + t->len, s, n);
	t->len += n;
	t->s[t->len] = '\0';
}

static int
ytext_event(void *ctx, const yaml_event_t *ev)
{
	struct ytext *t = ctx;
	const yaml_mark_t *m = &ev->start_mark;
	char head[96];
	int n;

	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		n = snprintf(head, sizeof(head), "doc\n");
		break;
	case YAML_MAPPING_START_EVENT:
	case YAML_SEQUENCE_START_EVENT:
	case YAML_ALIAS_EVENT:
		n = snprintf(head, sizeof(head), "%s %zu:%zu\n",
		    ev->type == YAML_ALIAS_EVENT              ? "alias" :
		        ev->type == YAML_SEQUENCE_START_EVENT ? "seq" :
		                                                "map",
		    m->line, m->column);
		break;
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT:
		n = snprintf(head, sizeof(head), "end\n");
		break;
	case YAML_SCALAR_EVENT:
		n = snprintf(head, sizeof(head), "scalar %zu:%zu %s %zu ",
		    m->line, m->column,
		    ev->data.scalar.plain_implicit &&
		            ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ?
		        "plain" :
		        "quoted",
		    ev->data.scalar.length);
		ytext_add(t, head, (size_t)n);
		ytext_add(t, (const char *)ev->data.scalar.value,
		    ev->data.scalar.length);
		ytext_add(t, "\n", 1);
		return 0;
	default:
		return 0;
	}
	ytext_add(t, head, (size_t)n);
	return 0;
}

/* libyaml's events for buf into t; -1 when libyaml rejects buf. */
static int
ytext_libyaml(const char *buf, size_t len, struct ytext *t)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	int rc = 0, end = 0;

	if (!yaml_parser_initialize(&parser))
		abort();
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!end) {
		if (!yaml_parser_parse(&parser, &ev)) {
			rc = -1;
			break;
		}
		end = ev.type == YAML_STREAM_END_EVENT;
		ytext_event(t, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return rc;
}

#endif
