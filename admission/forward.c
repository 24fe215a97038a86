#include "forward.h"

#include <stdio.h>

#include "estimate.h"
#include "internal.h"

/* Inside a layer's MLP: the residual and the normed input (2eh), gate
 * and up in one (2eI) and the activation's output (eI); after the last
 * layer: the logits of one token a sequence, 16-bit and in fp32. */
int64_t
mf_forward_peak(const struct mf_model *m, int64_t tokens, int64_t seqs,
    char *formula)
{
	int64_t layer, logits;

	layer = mf_cmul(tokens,
	    mf_cadd(mf_cmul(4, m->hidden), mf_cmul(6, m->intermediate)));
	logits = mf_cmul(seqs, mf_cmul(6, m->vocab));
	snprintf(formula, MF_FORMULA_MAX, "max(t x (4h + 6I), seqs x 6V)");
	if (layer < 0 || logits < 0)
		return -1;
	return layer > logits ? layer : logits;
}
