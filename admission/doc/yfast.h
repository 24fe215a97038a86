/*
 * yfast.h: the YAML that manifests are written in, read without libyaml.
 *
 * libyaml spends most of a request's time decoding and scanning a manifest
 * one character at a time.  Manifests, catalogues and examples are nearly
 * always a small part of YAML: printable ASCII, block mappings and
 * sequences, one-line plain or quoted scalars, one-line flow sequences and
 * comments.  mf_yfast reads that part and hands the sink exactly the events
 * libyaml's parser would (same kinds, marks, values and styles; stream and
 * document-end events are left out).  On anything else it gives up, and the
 * caller reads the whole input with libyaml instead: it never reports a
 * syntax error of its own.  tests/fuzz/fuzz_yaml.c holds it to that: whenever
 * mf_yfast accepts an input, libyaml accepts it with the same events.
 */
#ifndef MF_YFAST_H
#define MF_YFAST_H

#include <stddef.h>
#include <yaml.h>

/* Returns 0 to go on, anything else to stop. */
typedef int (*mf_yfast_sink)(void *ctx, const yaml_event_t *ev);

/*
 * 0 when buf[0..len) is in the subset and every event went to sink; -1
 * when it is not, or when sink stopped (some events may have gone out).
 */
int mf_yfast(const char *buf, size_t len, mf_yfast_sink sink, void *ctx);

#endif
