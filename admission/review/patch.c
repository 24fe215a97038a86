#include "patch.h"

#include <string.h>

void
mf_patch_init(struct mf_patch *p, size_t max)
{
	memset(p, 0, sizeof(*p));
	mf_buf_init(&p->b, max);
	mf_jw_init(&p->w, &p->b);
	mf_jw_open(&p->w, NULL, '[');
}

/* base "/" key into path, key escaped as RFC 6901 says ('~' as "~0", '/'
 * as "~1"); 0 when it is too long for path. */
static int
pointer(char *path, const char *base, const char *key)
{
	size_t n = strlen(base), i = n, run;

	if (n + 1 >= MF_PATCH_PATH_MAX)
		return 0;
	memcpy(path, base, n);
	if (key != NULL)
		path[i++] = '/';
	for (; key != NULL && *key != '\0'; key++) {
		run = strcspn(key, "~/");
		/* The run, an escape and the NUL. */
		if (i + run + 3 > MF_PATCH_PATH_MAX)
			return 0;
		memcpy(path + i, key, run);
		i += run;
		key += run;
		if (*key == '\0')
			break;
		path[i++] = '~';
		path[i++] = *key == '~' ? '0' : '1';
	}
	path[i] = '\0';
	return 1;
}

void
mf_patch_begin(struct mf_patch *p, const char *verb, const char *base,
    const char *key)
{
	char path[MF_PATCH_PATH_MAX];

	if (!pointer(path, base, key)) {
		if (p->b.rc == MF_OK)
			p->b.rc = MF_ETOOBIG;
		path[0] = '\0';
	}
	mf_jw_open(&p->w, NULL, '{');
	mf_jw_str_lit(&p->w, "op", verb);
	mf_jw_str_lit(&p->w, "path", path);
}

void
mf_patch_end(struct mf_patch *p)
{
	mf_jw_close(&p->w, '}');
	p->nops++;
}

void
mf_patch_str(struct mf_patch *p, const char *verb, const char *base,
    const char *key, const char *value)
{
	mf_patch_begin(p, verb, base, key);
	if (value != NULL)
		mf_jw_str_lit(&p->w, "value", value);
	mf_patch_end(p);
}

const char *
mf_patch_text(struct mf_patch *p, size_t *len)
{
	mf_jw_close(&p->w, ']');
	if (p->b.rc != MF_OK)
		return NULL;
	*len = p->b.len;
	return p->b.data;
}

void
mf_patch_free(struct mf_patch *p)
{
	mf_buf_free(&p->b);
}
