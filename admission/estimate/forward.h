/*
 * forward.h: the activation peak of a serving engine's profile run
 * (design 14): what one no-grad forward allocates above the weights.
 */
#ifndef MF_FORWARD_H
#define MF_FORWARD_H

#include <stdint.h>

#include "estimate.h"
#include "../model/model.h"

/*
 * The activation peak of one no-grad forward over tokens tokens in
 * seqs sequences (a serving engine's profile run, design 14), with
 * 2-byte activations; its formula, in estimate.c's symbols plus t and
 * reqs (the sequences), into formula (MF_FORMULA_MAX bytes, from estimate.h).
 * -1 when a figure passes 2^63 - 1 (or tokens or seqs is negative); the
 * formula is written either way.  formula may be NULL.
 */
int64_t mf_forward_peak(const struct mf_model *m, int64_t tokens, int64_t seqs,
    char *formula);

#endif
