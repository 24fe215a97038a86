/*
 * model.h: transformer shapes from a Hugging Face config.json, their
 * parameter counts, and the registry of shipped model configs.
 */
#ifndef MF_MODEL_H
#define MF_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "../doc/doc.h"
#include "../base/err.h"
#include "quant.h"

/*
 * How a decoder layer is written, as far as it changes what PyTorch keeps
 * for backward (the estimator pytorch, estimate.c).
 */
enum mf_block {
	MF_BLOCK_LLAMA,   /* llama, mistral, qwen2: RMSNorm, q k v o, SwiGLU */
	MF_BLOCK_PHI3,    /* one qkv and one gate_up projection */
	MF_BLOCK_GEMMA,   /* Gemma norms (x (1 + w) in fp32), GeGLU */
	MF_BLOCK_MIXTRAL, /* routed experts, top-k weights renormalised */
	MF_BLOCK_QWEN2MOE /* routed experts plus a gated shared expert */
};

struct mf_model {
	int64_t hidden;       /* hidden_size (h) */
	int64_t layers;       /* num_hidden_layers (L) */
	int64_t heads;        /* num_attention_heads (a) */
	int64_t kv_heads;     /* num_key_value_heads, default heads */
	int64_t head_dim;     /* head_dim, default hidden / heads */
	int64_t intermediate; /* intermediate_size (I) */
	int64_t vocab;        /* vocab_size (V) */
	int64_t experts;      /* routed experts a layer; 0 for a dense model */
	int64_t experts_per_tok;     /* top-k: experts each token goes to */
	int64_t expert_intermediate; /* a routed expert's width; 0: I */
	int64_t shared_intermediate; /* Qwen2-MoE's shared expert; 0: none */
	int64_t router;  /* the router's outputs when not experts: a GPU of an
	                    expert-parallel layout holds the whole router */
	int renorm_topk; /* top-k weights renormalised (Mixtral; Qwen2-MoE's
	                    norm_topk_prob) */
	int tied_embeddings; /* output head shares the embedding matrix */
	int qkv_bias;        /* q/k/v projections carry biases (Qwen2) */
	int norms_per_layer; /* 2, or 4 for Gemma-2 */
	enum mf_block block; /* how the decoder layer is written */
	int attn_softcap;  /* eager attention soft-caps its scores (Gemma-2) */
	int final_softcap; /* the logits are soft-capped (Gemma-2) */
	/* A pipeline stage's share (mf_model_shard): without the input
	 * embeddings; without the final norm and output head. */
	int no_embed;
	int no_head;
	/* Rows of the input embeddings and of the output head this share
	 * holds: its part of the vocabulary, padded as the framework pads it
	 * (mf_model_shard); 0: all vocab rows. */
	int64_t vocab_rows;
	/* How the checkpoint stores its linear weights: its
	 * quantization_config, else 16-bit (mf_quant_none). */
	struct mf_quant quant;
	/* Its quantization_config names a method quant.c does not know
	 * (quant_method, borrowed from the config's document; estimate.c
	 * refuses it unless weightsDtype is given): "" when known. */
	char quant_unknown[32];
	/*
	 * The tokens a sequence may hold (mf_model_context): 0 when the
	 * config gives no max_position_embeddings.  positions is that
	 * field, rope_factor the rope_scaling factor applied to it (1 when
	 * none), rope_original rope_scaling's
	 * original_max_position_embeddings when the limit is that times the
	 * factor (YaRN), else 0.
	 */
	int64_t max_context;
	int64_t positions;
	double rope_factor;
	int64_t rope_original;
	/* The tensor-parallel GPUs this share was cut for (mf_model_shard); 0
	 * or 1: the whole model. */
	int64_t tp;
};

/* LoRA's targets (design 22), as PEFT's target_modules takes them: the
 * string "all-linear", the attention's projections, or a list of module
 * names (struct mf_workload's lora_modules, a mask of MF_LORA_BIT). */
enum mf_lora_targets {
	MF_LORA_ALL_LINEAR, /* q k v o gate up down */
	MF_LORA_ATTENTION,  /* q k v o */
	MF_LORA_LIST        /* the modules a list names */
};

/*
 * Read the fields of a config.json object.  path names the object in
 * errors ("spec.model.config").  model_type chooses the block and where
 * the experts are read from (mixtral: num_local_experts; qwen2_moe:
 * num_experts, moe_intermediate_size, shared_expert_intermediate_size;
 * both num_experts_per_tok), with the Hugging Face config class's
 * defaults for keys left out; a config without model_type is read as
 * llama.  An unknown model_type, missing or nonsensical fields (zero,
 * negative, hidden not divisible by heads without head_dim, kv_heads not
 * dividing heads, top-k above the experts, sizes past the caps below) are
 * MF_EINVAL naming the field; *out is untouched on error.
 */
enum mf_rc mf_model_read(const struct mf_node *config, const char *path,
    struct mf_model *out, struct mf_error *err);

/*
 * Caps on config fields (MAX_DIM bounds hidden, intermediate and head_dim).
 * They keep the parameter count inside 63 bits; mf_model_read also refuses
 * a config whose count does not fit, and mf_est_compute can still answer
 * MF_ERANGE for a workload that multiplies past it.
 */
#define MF_MODEL_MAX_DIM (INT64_C(1) << 20)
#define MF_MODEL_MAX_LAYERS 4096
#define MF_MODEL_MAX_HEADS 4096
#define MF_MODEL_MAX_VOCAB (INT64_C(1) << 24)
#define MF_MODEL_MAX_EXPERTS 1024
/* Tokens: max_position_embeddings and the limit derived from it. */
#define MF_MODEL_MAX_CONTEXT (INT64_C(1) << 40)

/*
 * Read cfg's quantization_config (when present) into m->quant
 * (model_quant.c): AWQ, GPTQ, bitsandbytes, fp8 and compressed-tensors,
 * with the linear layers it keeps 16-bit; another quant_method is kept
 * in m->quant_unknown.  MF_EINVAL naming the field for a value of the
 * wrong type or out of range.
 */
enum mf_rc mf_model_read_quant(const struct mf_node *cfg, const char *path,
    struct mf_model *m, struct mf_error *err);
/* The quant_method names mf_model_read_quant knows, ", " between. */
const char *mf_quant_methods(void);

/* Total parameters (design 5); equals the published totals exactly. */
int64_t mf_model_params(const struct mf_model *m);
/* Parameters of one decoder layer (attention, MLP or experts, norms). */
int64_t mf_model_layer_params(const struct mf_model *m);
/* LoRA parameters: sum of rank * (in + out) over the linears of the
 * mask (mf_lora_mask) x L (Phi-3's fused qkv_proj and gate_up_proj one
 * linear each). */
int64_t
mf_model_lora_params(const struct mf_model *m, int64_t rank, unsigned mask);
/* Elements of the largest LoRA matrix: rank x its widest side. */
int64_t
mf_model_lora_largest(const struct mf_model *m, int64_t rank, unsigned mask);
/* The widest output of a linear the mask reaches (Phi-3's gate_up: 2I);
 * 0 when none. */
int64_t mf_model_lora_widest(const struct mf_model *m, unsigned mask);
/* Elements of the largest single parameter tensor (a weight matrix, or
 * a layer's routed experts' gate_up_proj), and of the largest of a
 * decoder layer's. */
int64_t mf_model_largest_param(const struct mf_model *m);
int64_t mf_model_largest_layer_param(const struct mf_model *m);
/* A routed expert's width: expert_intermediate, else intermediate. */
int64_t mf_model_expert_width(const struct mf_model *m);
/*
 * Weights of the decoder layers' linear projections (q k v o, the MLP or
 * every routed expert and the shared expert), the part quantized weights
 * shrink (design 14): embeddings, norms, biases, the router and the
 * output head are left out.
 */
int64_t mf_model_linear_params(const struct mf_model *m);
/* Rows of the embeddings and the output head m holds: vocab_rows, or the
 * whole vocabulary. */
int64_t mf_model_vocab_rows(const struct mf_model *m);

/*
 * How frameworks pad the vocabulary before they divide the embeddings and
 * the output head over tensor-parallel GPUs (mf_model_shard's vocab_pad):
 * - DTensor (torchtitan, and any plan with Shard(0) on the embedding):
 *   no padding, the rows split as torch.chunk splits them, ceil(V / T) on
 *   the first GPUs (torchtitan 0.3 components/loss.py, chunk_size);
 * - vLLM: V padded to a multiple of 64, then divided by T
 *   (vllm/model_executor/layers/vocab_parallel_embedding.py,
 *   DEFAULT_VOCAB_PADDING_SIZE and pad_vocab_size);
 * - Megatron: V padded to a multiple of make-vocab-size-divisible-by (128)
 *   x T, then divided by T (megatron/training/tokenizer/tokenizer.py,
 *   _vocab_size_with_padding): pass 128 x tensor.
 */
#define MF_VOCAB_PAD_DTENSOR 1
#define MF_VOCAB_PAD_VLLM 64
#define MF_VOCAB_PAD_MEGATRON 128 /* times the tensor-parallel GPUs */

/*
 * What one GPU of a parallel layout holds of the model (design 15), as a
 * model of its own: tensor parallel over tensor GPUs divides the heads,
 * the KV heads (each GPU keeps at least one: they are replicated when
 * kv_heads < tensor) and the MLP widths, rounding up; expert parallel
 * divides the routed experts, rounding up, and keeps each whole (its
 * width is not divided by tensor too) and the router whole; the stage holds
 * layers layers, the embeddings when first and the final norm and output head
 * when last.  With vocab_pad >= 1 the embeddings and the output head are
 * divided by the vocabulary: the vocabulary padded to a multiple of
 * vocab_pad, over tensor GPUs, rounding up (vocab_rows; the MF_VOCAB_PAD_*
 * above); with vocab_pad 0 every GPU holds them whole.  The hidden size,
 * the vocabulary (the logits' width) and top-k stay whole.
 */
void mf_model_shard(const struct mf_model *m, int64_t tensor, int64_t expert,
    int64_t layers, int first, int last, int64_t vocab_pad,
    struct mf_model *out);

/*
 * The linear projections of the decoder layers, as the checkpoints name
 * them: the tensors quantized storage shrinks (quant.c).  Phi-3 keeps q,
 * k and v in one qkv_proj and gate and up in one gate_up_proj.
 */
enum mf_linear_kind {
	MF_LIN_Q,
	MF_LIN_K,
	MF_LIN_V,
	MF_LIN_QKV,
	MF_LIN_O,
	MF_LIN_GATE,
	MF_LIN_UP,
	MF_LIN_GATE_UP,
	MF_LIN_DOWN,
	MF_LIN_KINDS
};
/* Whose projection it is: attention or a dense MLP, a routed expert, or
 * Qwen2-MoE's shared expert. */
enum mf_linear_owner { MF_LIN_LAYER, MF_LIN_ROUTED, MF_LIN_SHARED };

struct mf_linear {
	enum mf_linear_kind kind;
	enum mf_linear_owner owner;
	int64_t out, in; /* the weight is out x in */
	int64_t count;   /* such tensors in the model: layers (x experts) */
};

#define MF_MODEL_MAX_LINEARS 16

/*
 * Fill v with the model's linear projections, one entry a shape; returns
 * how many.  The sum of out x in x count over them is
 * mf_model_linear_params(m).  Embeddings, norms, biases, the router and
 * the output head are not among them.
 */
size_t mf_model_linears(const struct mf_model *m,
    struct mf_linear v[MF_MODEL_MAX_LINEARS]);
/* "q_proj", "gate_up_proj", ...; NULL out of range. */
const char *mf_linear_name(enum mf_linear_kind k);

/* A shape of parameter tensor: its elements, and how many the model has. */
struct mf_tensor {
	int64_t numel;
	int64_t count;
};

#define MF_MODEL_MAX_TENSORS (MF_MODEL_MAX_LINEARS + 8)

/*
 * Fill v with m's parameter tensors as transformers holds them, one entry
 * a shape (the embeddings, the output head, the final norm, a layer's
 * norms, q/k/v biases, linears, router and Qwen2-MoE's shared expert
 * gate; a layer's routed experts one gate, up and down tensor each, of
 * every expert); returns how many.  The sum of numel x count over them
 * is mf_model_params(m).  What an optimizer keeps per tensor
 * (bitsandbytes' 8-bit state, est_state.c) is reckoned from it.
 */
size_t mf_model_tensors(const struct mf_model *m,
    struct mf_tensor v[MF_MODEL_MAX_TENSORS]);

/*
 * The modules LoRA reaches, as a mask: bit k (MF_LORA_BIT) for the
 * projections of kind k; MF_LORA_HEAD the output head (lm_head);
 * MF_LORA_MOE what PEFT's "all-linear" also reaches on a mixture of
 * experts (the routed experts, the router, Qwen2-MoE's shared expert and
 * its gate).  MF_LORA_MASK_ALL is all-linear's, MF_LORA_MASK_ATTENTION
 * attention's.
 */
#define MF_LORA_BIT(k) (1u << (k))
#define MF_LORA_HEAD_BIT MF_LIN_KINDS
#define MF_LORA_HEAD (1u << MF_LORA_HEAD_BIT)
#define MF_LORA_MOE (1u << (MF_LIN_KINDS + 1))
#define MF_LORA_MASK_ALL (MF_LORA_HEAD - 1u + MF_LORA_MOE)
#define MF_LORA_MASK_ATTENTION \
	(MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_K) | \
	    MF_LORA_BIT(MF_LIN_V) | MF_LORA_BIT(MF_LIN_QKV) | \
	    MF_LORA_BIT(MF_LIN_O))
/* The mask of targets; modules is a list's (MF_LORA_LIST). */
unsigned mf_lora_mask(enum mf_lora_targets targets, unsigned modules);
/* The name of bit v of a list's mask ("q_proj", ..., "lm_head"); NULL
 * past the last. */
const char *mf_lora_module_name(int v);
/*
 * The bits of the modules a list may name on m, as transformers builds
 * it and PEFT's target_modules matches them: every projection of a dense
 * layer (Phi-3's fused qkv_proj and gate_up_proj), and on a mixture of
 * experts the attention's (its routed experts are 3-D parameters, not
 * modules a name matches).  The output head is not among them (LoRA on
 * lm_head is not modelled).
 */
unsigned mf_model_lora_names(const struct mf_model *m);

/* Bytes of KV cache per token: 2 * L * kv_heads * head_dim * dtype_bytes. */
int64_t mf_model_kv_bytes_per_token(const struct mf_model *m, int dtype_bytes);

/*
 * A set of model configs, read-only once loaded and shared by reference:
 * the daemon swaps in a new set on reload while requests still read the
 * old one.
 */
struct mf_models;

/* How mf_models_load_dirs loads. */
struct mf_models_load {
	const char *const *dirs; /* in order: a later one's model of a name
	                            replaces an earlier one's */
	size_t ndirs;
	/*
	 * NULL: a file that fails to read or parse fails the whole load (err
	 * names the file and line), as does an organisation's directory
	 * (DIR/ORG) that cannot be read.  Else such a file is left out and
	 * skipped(arg, its error, kept) is called, kept saying whether prev
	 * had a model of its name, which is then kept in its place (the last
	 * good one); such a directory is left out alike, kept the number of
	 * prev's models that came from it, each kept in its place.  A
	 * directory in dirs that cannot be read, the cap on files and running
	 * out of memory fail the load either way.
	 */
	void (*skipped)(void *arg, const struct mf_error *err, int kept);
	void *arg;
	const struct mf_models *prev; /* may be NULL */
	size_t *counts; /* may be NULL; else ndirs entries: the models each
	                   gave, a kept last good one included */
};

/*
 * Load every DIR/ORG/NAME.json of how->dirs as model "ORG/NAME".  The set
 * comes with one reference (mf_models_free drops it).  *out is untouched
 * on error.
 */
enum mf_rc mf_models_load_dirs(const struct mf_models_load *how,
    struct mf_models **out, struct mf_error *err);
/* mf_models_load_dirs of one directory, a bad file failing the load. */
enum mf_rc
mf_models_load(const char *dir, struct mf_models **out, struct mf_error *err);
/* A reference more; models (may be NULL) is returned. */
struct mf_models *mf_models_ref(struct mf_models *models);
/* Drop a reference; the last frees the set.  NULL is a no-op. */
void mf_models_free(struct mf_models *models);
/* NULL when unknown; the result lives as long as models. */
const struct mf_model *
mf_models_find(const struct mf_models *models, const char *name);
size_t mf_models_count(const struct mf_models *models);
/* i-th model in name order; NULL past the end. */
const char *mf_models_name(const struct mf_models *models, size_t i);
const struct mf_model *mf_models_at(const struct mf_models *models, size_t i);

#endif
