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

/*
 * The sampler a profile run ends with (design 22's serverVersion):
 * the current V1 sampler's, or the V0 engine's top-k/top-p of a release
 * family, which sorts the whole vocabulary (forward.c says which).
 */
enum mf_sampler {
	MF_SAMPLER_V1,
	MF_SAMPLER_V0_A16, /* 0.2.5: _apply_top_p_top_k with argsort */
	MF_SAMPLER_V0_P16, /* 0.2.6, 0.2.7: _apply_top_p_top_k, 16-bit */
	MF_SAMPLER_V0_16P, /* 0.3.0 to 0.4.x: _apply_top_k_top_p, 16-bit,
	                      with the prompt tokens */
	MF_SAMPLER_V0_16,  /* 0.5.0 to 0.5.4: the same without them */
	MF_SAMPLER_V0_32   /* 0.5.5 to 0.7.x: the same on an fp32 copy */
};

/* mf_forward_peak with sampler s's logits phase. */
int64_t mf_forward_peak_sampler(const struct mf_model *m, int64_t tokens,
    int64_t seqs, enum mf_sampler s, char *formula);

#endif
