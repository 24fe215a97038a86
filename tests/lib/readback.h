/*
 * readback.h: what the library writes, read back with jansson (a JSON
 * reader not written here), for tests and fuzz harnesses.
 */
#ifndef MF_TEST_READBACK_H
#define MF_TEST_READBACK_H

#include <jansson.h>

#include "base/jw.h"
#include "oom/oom.h"

/* The diagnosis as the object /v1/diagnose answers; NULL when writing or
 * reading failed. */
static inline json_t *
readback_oom(const struct mf_oom *o)
{
	struct mf_buf b;
	struct mf_jw w;
	json_t *j;

	mf_buf_init(&b, 1u << 20);
	mf_jw_init(&w, &b);
	mf_jw_open(&w, NULL, '{');
	mf_oom_write(&w, o);
	mf_jw_close(&w, '}');
	j = b.rc == MF_OK ? json_loads(b.data, 0, NULL) : NULL;
	mf_buf_free(&b);
	return j;
}

#endif
