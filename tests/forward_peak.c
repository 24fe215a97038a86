/*
 * forward_peak.c: mf_forward_peak for a model config, for
 * tests/torch/forward.py.  Usage: forward_peak CONFIG.json TOKENS SEQS;
 * prints the bytes and the formula, tab-separated.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "doc.h"
#include "file.h"
#include "forward.h"
#include "model.h"

static int
count(const char *s, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 0)
		return -1;
	*out = v;
	return 0;
}

int
main(int argc, char **argv)
{
	struct mf_error err;
	struct mf_doc *doc = NULL;
	struct mf_model m;
	char formula[MF_FORMULA_MAX], msg[MF_ERROR_MAX];
	char *buf = NULL;
	size_t len;
	int64_t tokens, seqs, bytes;
	int rc = 1;

	if (argc != 4 || count(argv[2], &tokens) != 0 ||
	    count(argv[3], &seqs) != 0) {
		fprintf(stderr,
		    "usage: forward_peak CONFIG.json TOKENS SEQS\n");
		return 2;
	}
	if (mf_file_read(argv[1], 1 << 20, "a model config", &buf, &len,
	        &err) != MF_OK ||
	    mf_doc_parse(buf, len, MF_DOC_JSON, &doc, &err) != MF_OK ||
	    mf_model_read(mf_doc_root(doc), "config", &m, &err) != MF_OK) {
		mf_error_message(&err, msg, sizeof(msg));
		fprintf(stderr, "forward_peak: %s\n", msg);
		goto out;
	}
	bytes = mf_forward_peak(&m, tokens, seqs, formula);
	printf("%" PRId64 "\t%s\n", bytes, formula);
	rc = bytes < 0;
out:
	mf_doc_free(doc);
	free(buf);
	return rc;
}
