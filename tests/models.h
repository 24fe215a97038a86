/*
 * models.h: model shapes written out by hand, shared by the model and
 * estimate tests.
 */
#ifndef MF_TEST_MODELS_H
#define MF_TEST_MODELS_H

#include "model.h"

/* Llama 3.1 8B as its config.json gives it: P = 8,030,261,248. */
static const struct mf_model llama8b = {
	.hidden = 4096,
	.layers = 32,
	.heads = 32,
	.kv_heads = 8,
	.head_dim = 128,
	.intermediate = 14336,
	.vocab = 128256,
	.norms_per_layer = 2,
};

/* h 64, L 2, a 4, kv 2, d 16, I 128, V 1000, tied: P = 138,048. */
static const struct mf_model tiny = {
	.hidden = 64,
	.layers = 2,
	.heads = 4,
	.kv_heads = 2,
	.head_dim = 16,
	.intermediate = 128,
	.vocab = 1000,
	.tied_embeddings = 1,
	.norms_per_layer = 2,
};

/* Every dimension at its cap: the arithmetic must report overflow. */
static const struct mf_model largest = {
	.hidden = MF_MODEL_MAX_DIM,
	.layers = MF_MODEL_MAX_LAYERS,
	.heads = MF_MODEL_MAX_HEADS,
	.kv_heads = MF_MODEL_MAX_HEADS,
	.head_dim = MF_MODEL_MAX_DIM,
	.intermediate = MF_MODEL_MAX_DIM,
	.vocab = MF_MODEL_MAX_VOCAB,
	.experts = MF_MODEL_MAX_EXPERTS,
	.norms_per_layer = 2,
};

#endif
