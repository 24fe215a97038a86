/*
 * models.h: model shapes written out by hand and the published parameter
 * totals, shared by the model, estimate and admission tests.
 */
#ifndef MF_TEST_MODELS_H
#define MF_TEST_MODELS_H

#include <stdint.h>

#include "model/model.h"

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
	/* max_position_embeddings; rope_scaling llama3 leaves it as it is */
	.max_context = 131072,
	.positions = 131072,
	.rope_factor = 1,
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

/* head_dim given (32), not hidden / heads (24): P = 428,448, worked out
 * in test_model.c. */
static const struct mf_model given_head_dim = {
	.hidden = 96,
	.layers = 3,
	.heads = 4,
	.kv_heads = 2,
	.head_dim = 32,
	.intermediate = 256,
	.vocab = 500,
	.norms_per_layer = 2,
};

/* The published parameter totals of shared/models/README.md, in name
 * order. */
static const struct published {
	const char *name;
	int64_t parameters;
} published[] = {
	{ "Qwen/Qwen1.5-MoE-A2.7B", INT64_C(14315784192) },
	{ "Qwen/Qwen2.5-7B", INT64_C(7615616512) },
	{ "google/gemma-2-9b", INT64_C(9241705984) },
	/* Llama 3.1 70B's shapes, its linears stored as AWQ */
	{ "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4",
	    INT64_C(70553706496) },
	{ "meta-llama/Llama-3.1-70B", INT64_C(70553706496) },
	{ "meta-llama/Llama-3.1-8B", INT64_C(8030261248) },
	{ "microsoft/Phi-3-mini-4k-instruct", INT64_C(3821079552) },
	{ "mistralai/Mistral-7B-v0.1", INT64_C(7241732096) },
	{ "mistralai/Mixtral-8x7B-v0.1", INT64_C(46702792704) },
};

#endif
