/*
 * fuzz_oom.c: libFuzzer harness for the PyTorch out-of-memory message
 * parser.
 *
 * Any byte string either fails with MF_EINVAL or MF_ERANGE and a message,
 * or gives figures within 0..MF_OOM_MAX_BYTES (or -1 where the header
 * allows it) whose JSON and text reports build: the text the same length
 * into a small and a large buffer, NUL-terminated and cut to size.
 * cudaMallocAsync's message prints no reserved figure and lists no
 * process, and its own limit exceeded is a limit unless the request
 * alone is larger than the card.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "oom/oom.h"
#include "readback.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_figure(int64_t b, int may_be_absent)
{
	if (b > MF_OOM_MAX_BYTES || b < -1 || (b == -1 && !may_be_absent))
		abort();
}

/* The CUDA runtime's error: no figure, no process, no GPU. */
static void
check_runtime(const struct mf_oom *o)
{
	if (o->tried != -1 || o->total != -1 || o->free != -1 ||
	    o->allocated != -1 || o->reserved_unallocated != -1 ||
	    o->process != -1 || o->others != -1 || o->gpu != -1 ||
	    o->nprocs != 0 || o->self != -1 ||
	    o->self_from != MF_OOM_SELF_NONE || o->cause != MF_OOM_OUTSIDE)
		abort();
}

/* cudaMallocAsync's: what it does not print stays unknown. */
static void
check_async(const struct mf_oom *o)
{
	if (o->reserved_unallocated != -1 || o->process != -1 ||
	    o->others != -1 || o->private_pools != -1 || o->nprocs != 0 ||
	    o->nlisted != 0 || o->self != -1 ||
	    o->self_from != MF_OOM_SELF_NONE ||
	    o->cause == MF_OOM_FRAGMENTATION)
		abort();
	if (mf_oom_over_limit(o) && o->tried <= o->total &&
	    o->cause != MF_OOM_LIMIT)
		abort();
}

static void
check_figures(const struct mf_oom *o)
{
	int async = o->format == MF_OOM_ASYNC;
	int i;

	if (strcmp(mf_oom_format_name(o->format), "unknown") == 0)
		abort();
	if (mf_oom_is_runtime(o->format)) {
		check_runtime(o);
		return;
	}
	check_figure(o->tried, 0);
	check_figure(o->total, 0);
	check_figure(o->free, 0);
	check_figure(o->allocated, 0);
	check_figure(o->reserved_unallocated, async);
	check_figure(o->process, 1);
	check_figure(o->others, 1);
	check_figure(o->allowed, 1);
	check_figure(o->private_pools, 1);
	if (o->gpu < -1 || o->nprocs < 0 || o->nprocs > MF_OOM_MAX_PROCS)
		abort();
	for (i = 0; i < o->nprocs; i++)
		check_figure(o->procs[i].bytes, 1);
	/* This process is one of the kept entries, or none of them. */
	if (o->self < -1 || o->self >= o->nprocs ||
	    (o->self >= 0) !=
	        (o->self_from == MF_OOM_SELF_ONLY ||
	            o->self_from == MF_OOM_SELF_CONTEXT))
		abort();
	if (strcmp(mf_oom_cause_name(o->cause), "unknown") == 0 ||
	    o->cause == MF_OOM_OUTSIDE)
		abort();
	if (async)
		check_async(o);
	else if (mf_oom_over_limit(o))
		abort();
}

static void
check_json(const struct mf_oom *o)
{
	json_t *j = readback_oom(o);
	const char *cause;

	if (j == NULL)
		abort();
	cause = json_string_value(json_object_get(j, "cause"));
	if (cause == NULL || strcmp(cause, mf_oom_cause_name(o->cause)) != 0)
		abort();
	if (mf_oom_is_runtime(o->format)) {
		/* The runtime's error prints no figure: null, not 0. */
		if (!json_is_null(json_object_get(j, "triedBytes")) ||
		    !json_is_null(json_object_get(j, "totalBytes")))
			abort();
	} else if (json_integer_value(json_object_get(j, "triedBytes")) !=
	        o->tried ||
	    json_integer_value(json_object_get(j, "totalBytes")) != o->total) {
		abort();
	}
	json_decref(j);
}

static void
check_text(const struct mf_oom *o)
{
	char small[16], large[8192];
	int need, n;

	need = mf_oom_text(o, NULL, 0);
	if (need <= 0)
		abort();
	memset(small, 'x', sizeof(small));
	n = mf_oom_text(o, small, sizeof(small));
	if (n != need || strlen(small) != sizeof(small) - 1)
		abort();
	n = mf_oom_text(o, large, sizeof(large));
	if (n != need)
		abort();
	if ((size_t)need < sizeof(large) && strlen(large) != (size_t)need)
		abort();
	if (strncmp(small, large, sizeof(small) - 1) != 0)
		abort();
	if (strstr(large, "empty_cache") != NULL)
		abort();
	/* An index the message did not print as digits reads as "the GPU". */
	if (strstr(large, "GPU -") != NULL)
		abort();
	/* A figure the message did not print is not written as one. */
	if (o->format == MF_OOM_ASYNC &&
	    (strstr(large, "reserved but unallocated") != NULL ||
	        strstr(large, "reserved, unallocated") != NULL ||
	        strstr(large, "an unknown amount") != NULL))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mf_oom o;
	struct mf_error err;
	enum mf_rc rc;

	memset(&err, 0, sizeof(err));
	rc = mf_oom_parse((const char *)data, size, &o, &err);
	if (rc != MF_OK) {
		if (rc != MF_EINVAL && rc != MF_ERANGE)
			abort();
		if (err.text[0] == '\0')
			abort();
		return 0;
	}
	check_figures(&o);
	check_json(&o);
	check_text(&o);
	return 0;
}
