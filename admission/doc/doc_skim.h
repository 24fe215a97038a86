/*
 * doc_skim.h: the JSON reader's skimmer (doc_skim.c), for the reader
 * (doc_json.c) alone.
 */
#ifndef MF_DOC_SKIM_H
#define MF_DOC_SKIM_H

#include "doc_jtok.h"

/*
 * The value at j->p (at depth) checked and counted, nothing built: 1 when
 * it is valid, j->p past it; 0, and nothing changed but skim_from, when
 * it meets anything it leaves to the reader (an error, a limit, a name
 * with an escape, an exponent), which then reads the value again and
 * fails, when it fails, as a built value would.
 */
int mf_json_skim(struct mf_jparse *j, int depth);

#endif
