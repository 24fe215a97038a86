#include "kueue.h"

#include <stdio.h>
#include <string.h>

#define DNS_LABEL_MAX 63

/* a-z or 0-9 */
static int
lower_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

/*
 * A Kubernetes object name (DNS-1123 subdomain): dot-separated labels of
 * a-z, 0-9 and '-', each starting and ending with a letter or digit.  A
 * GPU name is at most 63 characters, so the total length needs no check.
 */
static int
object_name_ok(const char *s)
{
	size_t start = 0, len = strlen(s);

	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '.') {
			if (!lower_alnum(s[i]) && s[i] != '-')
				return 0;
			continue;
		}
		if (i == start || i - start > DNS_LABEL_MAX ||
		    !lower_alnum(s[start]) || !lower_alnum(s[i - 1]))
			return 0;
		start = i + 1;
	}
	return 1;
}

static void
lower(char *dst, size_t size, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < size && src[i] != '\0'; i++)
		dst[i] = src[i] >= 'A' && src[i] <= 'Z' ? (char)(src[i] + 32) :
		                                          src[i];
	dst[i] = '\0';
}

/* Errors about the content name the file by base name, as the loader's. */
static const char *
file_name(const struct mf_catalog *cat)
{
	const char *s = cat->source != NULL ? cat->source : "<memory>";
	const char *slash = strrchr(s, '/');

	return slash != NULL && slash[1] != '\0' ? slash + 1 : s;
}

static enum mf_rc
bad_entry(struct mf_error *err, const struct mf_catalog *cat, size_t i,
    const char *what, const char *problem)
{
	char field[64];

	if (err == NULL)
		return MF_EINVAL;
	snprintf(field, sizeof(field), "gpus[%zu].%s", i, what);
	mf_error_set(err, MF_EINVAL, field, cat->gpus[i].line, 0, "%s",
	    problem);
	return mf_error_in_file(err, MF_EINVAL, file_name(cat));
}

/* Whether entry i can be a flavor; its name is written to name. */
static enum mf_rc
check_entry(const struct mf_catalog *cat, size_t i, char *name, size_t size,
    struct mf_error *err)
{
	const struct mf_gpu *gpu = &cat->gpus[i];
	char why[200], other[64];

	lower(name, size, gpu->name);
	if (!object_name_ok(name)) {
		snprintf(why, sizeof(why),
		    "'%s' in lower case is no Kubernetes object name (a-z, 0-9, '-' and '.', starting and ending with a letter or digit)",
		    gpu->name);
		return bad_entry(err, cat, i, "name", why);
	}
	for (size_t k = 0; k < i; k++) {
		lower(other, sizeof(other), cat->gpus[k].name);
		if (strcmp(other, name) == 0) {
			snprintf(why, sizeof(why),
			    "'%s' is flavor %s, as gpus[%zu] (line %d) is",
			    gpu->name, name, k, cat->gpus[k].line);
			return bad_entry(err, cat, i, "name", why);
		}
	}
	if (gpu->nlabels == 0)
		return bad_entry(err, cat, i, "labels",
		    "none: a ResourceFlavor without nodeLabels matches every node");
	if (gpu->nlabels > MF_KUEUE_MAX_LABELS) {
		snprintf(why, sizeof(why),
		    "%zu labels, more than the %d nodeLabels of a Kueue ResourceFlavor",
		    gpu->nlabels, MF_KUEUE_MAX_LABELS);
		return bad_entry(err, cat, i, "labels", why);
	}
	return MF_OK;
}

/*
 * Label keys and values are checked by the catalogue ([A-Za-z0-9._-/]),
 * so double quotes need no escapes; they keep YAML from reading a value
 * such as "true" or "1.0" as anything but a string.
 */
static void
write_flavor(struct mf_buf *out, const struct mf_gpu *gpu, const char *name)
{
	mf_buf_printf(out,
	    "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\n"
	    "metadata:\n  name: %s\nspec:\n  nodeLabels:\n",
	    name);
	for (size_t i = 0; i < gpu->nlabels; i++)
		mf_buf_printf(out, "    \"%s\": \"%s\"\n", gpu->labels[i].key,
		    gpu->labels[i].value);
}

enum mf_rc
mf_kueue_flavors(const struct mf_catalog *cat, struct mf_buf *out,
    struct mf_error *err)
{
	char name[64];
	enum mf_rc rc;

	mf_buf_printf(out,
	    "# Kueue ResourceFlavors, one per GPU type of %s\n"
	    "# (memfloor catalog kueue).\n",
	    cat->source != NULL ? cat->source : "<memory>");
	for (size_t i = 0; i < cat->ngpus; i++) {
		rc = check_entry(cat, i, name, sizeof(name), err);
		if (rc != MF_OK)
			return rc;
		if (i > 0)
			mf_buf_add(out, "---\n", 4);
		write_flavor(out, &cat->gpus[i], name);
	}
	return out->rc;
}
