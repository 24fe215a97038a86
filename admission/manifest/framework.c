/*
 * framework.c: spec.workload.framework (design 22), the values each
 * framework's own source sets at a release for the workload fields a
 * manifest leaves out.  A value is written as a manifest writes it and read
 * by the manifest's own rows (fields.h), so a field is supplied with one
 * line: { "field", "value" } in the release's list for the method.
 *
 * Each value cites the framework's repository, release, file and the
 * setting that gives it.  Where a framework has several recipes for a
 * method, the one its documentation starts from is taken (docs/manifest.md
 * says which).  What a framework sets that no field states yet (compile,
 * the loader) is left out, not mapped to a neighbour; docs/manifest.md
 * lists it.
 * tests/torch/framework.py holds the transformers and torchtune values to
 * the frameworks' own config objects.
 */
#include "manifest.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "../base/internal.h"
#include "../fields/fields.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* A field under spec.workload and its value, as a manifest writes them. */
struct value {
	const char *field;
	const char *yaml;
};

/*
 * A release's recipes by method, on one GPU and sharded (a manifest with
 * workload.sharding: the framework's distributed recipe); NULL: the
 * framework has none, and a sharded one NULL is the same as on one GPU.
 */
struct recipes {
	const struct value *full, *lora, *qlora;
	const struct value *full_sharded, *lora_sharded;
};

/*
 * The tables keep a layout of their own, a value a line where a citation
 * goes beside it: clang-format would break the macros' braces apart.
 */
/* clang-format off */

/* --- transformers 5.24.0 Trainer, PEFT 0.21.2, TRL 1.9 ------------- */

/*
 * huggingface/transformers v5.24.0, src/transformers/modeling_utils.py,
 * from_pretrained: "if dtype is None: dtype = 'auto'", the checkpoint's
 * dtype (16-bit for every shipped model); training_args.py: bf16=False,
 * fp16=False, so no autocast, and the optimizer's state takes the
 * parameters' dtype: all 16-bit.
 */
#define HF_COMMON                                                             \
	{ "precision", "bf16-true" },                                         \
	    /* training_args.py: gradient_checkpointing=False */              \
	    { "gradientCheckpointing", "false" },                             \
	    /* modeling_utils.py, _check_and_adjust_attn_implementation:     \
	     * None becomes sdpa */                                           \
	    { "attention", "sdpa" },                                          \
	    /* loss/loss_utils.py, ForCausalLMLoss: logits.float(), whole */  \
	    { "loss", "standard" },                                           \
	    /* training_args.py: optim=adamw_torch_fused */                   \
	    { "optimizer", "adamw" }

/* peft v0.21.2, tuners/lora/config.py: r=8; target_modules None takes
 * utils/constants.py's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING,
 * ["q_proj", "v_proj"] for llama, mistral, qwen2, gemma (a model it names
 * nothing for is refused by PEFT too); mapping_func.py get_peft_model:
 * autocast_adapter_dtype=True, fp32 adapters; lora_dropout=0.0. */
#define HF_LORA                                                               \
	{ "lora.rank", "8" }, { "lora.targets", "[q_proj, v_proj]" },         \
	    { "lora.dtype", "fp32" }, { "lora.dropout", "0" }

static const struct value hf_full[] = { HF_COMMON, { NULL, NULL } };
static const struct value hf_lora[] = { HF_COMMON, HF_LORA, { NULL, NULL } };
static const struct value hf_qlora[] = { HF_COMMON, HF_LORA,
	/* bitsandbytes 0.50.2, nn/modules.py Params4bit: blocksize None is 64 */
	{ "qlora.blockSize", "64" },
	/* transformers v5.24.0, utils/quantization_config.py,
	 * BitsAndBytesConfig: bnb_4bit_use_double_quant=False */
	{ "qlora.doubleQuant", "false" },
	/* huggingface/trl v1.9.0, trainer/sft_trainer.py: a k-bit model goes
	 * to get_peft_model as it is; neither Trainer nor get_peft_model calls
	 * prepare_model_for_kbit_training */
	{ "qlora.kbitPrep", "false" },
	/* integrations/bitsandbytes.py: Bnb4bitQuantize, each weight as it
	 * loads (est_load.c) */
	{ "qlora.quantizer", "bitsandbytes" }, { NULL, NULL } };

static const struct recipes hf_5_24 = { .full = hf_full, .lora = hf_lora,
	.qlora = hf_qlora };

/* --- torchtune 0.4.0 and 0.6.1 -------------------------------------- */

/*
 * pytorch/torchtune v0.4.0 and v0.6.1, recipes/configs/llama3_1/
 * 8B_*_single_device.yaml (the configs `tune run` starts from): dtype: bf16
 * (weights, gradients and optimizer state all bf16),
 * enable_activation_checkpointing: True, enable_activation_offloading:
 * False, loss CEWithChunkedOutputLoss (torchtune/modules/loss/
 * ce_chunked_output_loss.py: num_output_chunks=8); attention through
 * torchtune/modules/attention_utils.py's sdpa; compile: False (every
 * config below).
 */
/* The common values, with whether every layer is checkpointed (ckpt). */
#define TT_COMMON(ckpt)                                                       \
	{ "precision", "bf16-true" }, { "gradientCheckpointing", ckpt },      \
	    { "attention", "sdpa" }, { "loss", "chunked" },                   \
	    { "lossChunks", "8" }, { "activationOffload", "false" }

/* 8B_full_single_device.yaml: optimizer
 * bitsandbytes.optim.PagedAdamW8bit, optimizer_in_bwd: True. */
static const struct value tt_full[] = { TT_COMMON("true"),
	{ "optimizer", "paged-adamw8bit" }, { "optimizerInBackward", "true" },
	{ "compile", "false" }, { NULL, NULL } };

/* 8B_lora_single_device.yaml and 8B_qlora_single_device.yaml: optimizer
 * torch.optim.AdamW; lora_attn_modules ['q_proj', 'v_proj', 'output_proj'],
 * apply_lora_to_mlp: True (w1, w2, w3), apply_lora_to_output: False;
 * lora_rank: 8, lora_dropout: 0.0; the adapters built in dtype bf16. */
#define TT_LORA                                                               \
	{ "optimizer", "adamw" }, { "lora.rank", "8" },                       \
	    { "lora.targets",                                                 \
		"[q_proj, v_proj, o_proj, gate_proj, up_proj, down_proj]" },  \
	    { "lora.dtype", "bf16" }, { "lora.dropout", "0" }

static const struct value tt_lora[] = { TT_COMMON("true"), TT_LORA,
	{ "compile", "false" }, { NULL, NULL } };
/* torchtune/modules/peft/lora.py: to_nf4(weight), torchao's
 * dtypes/nf4tensor.py: block_size=64, scaler_block_size=256 (the absmax in
 * 8 bits, a second level a 256 blocks); no PEFT k-bit preparation; the
 * model built on the GPU and the checkpoint loaded into it, each weight
 * quantized by to_nf4 (recipes/lora_finetune_single_device.py,
 * _setup_model; NF4Tensor's copy_). */
static const struct value tt_qlora[] = { TT_COMMON("true"), TT_LORA,
	{ "qlora.blockSize", "64" }, { "qlora.doubleQuant", "true" },
	{ "qlora.kbitPrep", "false" }, { "qlora.quantizer", "torchao" },
	{ "compile", "false" }, { NULL, NULL } };

/* recipes/configs/llama3_1/8B_full.yaml (full_finetune_distributed):
 * optimizer torch.optim.AdamW, optimizer_in_bwd: False (70B_full.yaml
 * too); custom_sharded_layers: ['tok_embeddings', 'output'] (8B_full and
 * 70B_full, v0.4.0 and v0.6.1), the embeddings and the head units of
 * their own (training/_distributed.py, get_shard_conditions'
 * names_to_match, shard_model). */
static const struct value tt_full_sharded[] = { TT_COMMON("true"),
	{ "optimizer", "adamw" }, { "optimizerInBackward", "false" },
	{ "sharding.units", "ends" }, { "compile", "false" }, { NULL, NULL } };
/* recipes/configs/llama3_1/8B_lora.yaml (lora_finetune_distributed):
 * enable_activation_checkpointing: False, the rest as on one GPU.
 * (70B_lora.yaml turns it on, with lora_rank 16: a 70B job states
 * them.)  No custom_sharded_layers (8B_lora sets none, 70B_lora has it
 * commented out; v0.4.0 and v0.6.1): the layers and the model. */
static const struct value tt_lora_sharded[] = { TT_COMMON("false"), TT_LORA,
	{ "sharding.units", "model" }, { "compile", "false" }, { NULL, NULL } };

static const struct recipes tt_0_6 = { .full = tt_full, .lora = tt_lora,
	.qlora = tt_qlora, .full_sharded = tt_full_sharded,
	.lora_sharded = tt_lora_sharded };

/* --- torchtitan 0.1.0 and 0.2.2 ------------------------------------- */

/*
 * pytorch/torchtitan v0.1.0 and v0.2.2: full training only.
 * torchtitan/models/llama3/train_configs/llama3_8b.toml: [optimizer] name
 * AdamW; [activation_checkpoint] mode selective, selective_ac_option op;
 * [compile] enable false.  job_config (v0.1.0 config_manager.py, v0.2.2
 * config/job_config.py): mixed_precision_param bfloat16 over fp32 shards,
 * disable_loss_parallel False; models/llama3/infra/parallelize.py: the
 * tensor-parallel plan is sequence parallel (SequenceParallel norms);
 * components/loss.py: cross_entropy(pred.float()), the whole logits;
 * model args: sdpa (v0.1.0 use_flex_attn False, v0.2.2 attn_type sdpa).
 */
#define TITAN_COMMON                                                          \
	{ "precision", "bf16-mixed" }, { "gradientCheckpointing", "op" },     \
	    { "attention", "sdpa" }, { "loss", "standard" },                  \
	    { "optimizer", "adamw" },                                         \
	    { "parallelism.sequenceParallel", "true" },                       \
	    { "parallelism.lossParallel", "true" }, { "compile", "false" }

static const struct value titan_full[] = { TITAN_COMMON, { NULL, NULL } };
/* v0.2.0 to v0.2.2, models/llama3/infra/parallelize.py apply_fsdp:
 * fully_shard on model.tok_embeddings, on each layer, on [model.norm,
 * model.output], then on the model: the ends units of their own (the
 * head's with reshard_after_forward False under the default policy, which
 * holds it from its forward to its backward, over the loss). */
static const struct value titan_full_ends[] = { TITAN_COMMON,
	{ "sharding.units", "ends" }, { NULL, NULL } };
/* v0.1.0, the same file: fully_shard on each layer, then on the model,
 * which holds the embeddings, the final norm and the head. */
static const struct value titan_full_model[] = { TITAN_COMMON,
	{ "sharding.units", "model" }, { NULL, NULL } };

static const struct recipes titan = { .full = titan_full,
	.full_sharded = titan_full_ends };
static const struct recipes titan_0_1 = { .full = titan_full,
	.full_sharded = titan_full_model };

/* --- LitGPT 0.4.5, 0.4.13, 0.5.13 ----------------------------------- */

/*
 * Lightning-AI/litgpt v0.4.5, v0.4.13 and v0.5.13, litgpt/finetune/full.py
 * and lora.py setup(): precision None becomes
 * utils.get_default_supported_precision(training=True), bf16-mixed;
 * optimizer "AdamW"; activation checkpointing only in the FSDP strategy of
 * several devices; model.py: F.scaled_dot_product_attention.  The loss:
 * fit() holds `logits = model(input_ids, ...)`, which Lightning Fabric's
 * _FabricModule.forward casts to fp32 (Lightning-AI/pytorch-lightning
 * 2.3.3, the release litgpt v0.4.5 pins, src/lightning/fabric/
 * wrappers.py: precision.convert_output, a cast to
 * torch.get_default_dtype() in plugins/precision/half.py, amp.py and
 * bitsandbytes.py), through backward and the optimizer's step, and takes
 * utils.py's chunked_cross_entropy of it in pieces of 128 tokens.
 */
#define LIT_COMMON                                                            \
	{ "gradientCheckpointing", "false" }, { "attention", "sdpa" },        \
	    { "optimizer", "adamw" }, { "loss", "standard" },                 \
	    { "lossUpcast", "output" }

/* lora.py: lora_r=8, lora_dropout=0.05, lora_query=True, lora_value=True,
 * lora_key, lora_projection, lora_mlp, lora_head False.  Its one dropout
 * of the fused qkv's input is counted as PEFT's two, q's and v's. */
#define LIT_LORA                                                              \
	{ "lora.rank", "8" }, { "lora.targets", "[q_proj, v_proj]" },         \
	    { "lora.dropout", "0.05" }

static const struct value lit_full[] = { { "precision", "bf16-mixed" },
	LIT_COMMON, { NULL, NULL } };
/* Under bf16-mixed the adapters are fp32 parameters. */
static const struct value lit_lora[] = { { "precision", "bf16-mixed" },
	LIT_COMMON, LIT_LORA, { "lora.dtype", "fp32" }, { NULL, NULL } };
/* lora.py: --quantize bnb.* with a mixed precision raises ("Quantization
 * and mixed precision is not supported"); tutorials/finetune_lora.md runs
 * QLoRA as --precision bf16-true --quantize bnb.nf4: bf16 adapters, no
 * double quantization (bnb.nf4-dq has it), bitsandbytes' blocksize 64, no
 * PEFT k-bit preparation. */
#define LIT_QLORA                                                             \
	{ "precision", "bf16-true" }, LIT_COMMON, LIT_LORA,                   \
	    { "lora.dtype", "bf16" }, { "qlora.blockSize", "64" },            \
	    { "qlora.doubleQuant", "false" }, { "qlora.kbitPrep", "false" },  \
	    { "qlora.quantizer", "bitsandbytes" }

/* Lightning's BitsandbytesPrecision (lightning_fabric/plugins/precision/
 * bitsandbytes.py, _quantize_on_load_hook) quantizes each weight as the
 * state dict loads: qlora.quantizer bitsandbytes.
 * pyproject.toml: v0.4.5 and v0.4.13 pin bitsandbytes==0.42.0, whose 4-bit
 * matmul holds its input to backward (qlora.keepsInput); v0.5.13 asks for
 * bitsandbytes>=0.45.2 on Linux. */
static const struct value lit_qlora[] = { LIT_QLORA,
	{ "qlora.keepsInput", "false" }, { NULL, NULL } };
static const struct value lit_qlora_0_4[] = { LIT_QLORA,
	{ "qlora.keepsInput", "true" }, { NULL, NULL } };

static const struct recipes litgpt = { .full = lit_full, .lora = lit_lora,
	.qlora = lit_qlora };
static const struct recipes litgpt_0_4 = { .full = lit_full,
	.lora = lit_lora, .qlora = lit_qlora_0_4 };

/* clang-format on */

/* --- the names ------------------------------------------------------ */

/* A framework's name alone is its latest release measured, listed first. */
static const struct release {
	const char *name;
	const struct recipes *recipes;
} releases[] = {
	{ "transformers", &hf_5_24 },
	{ "transformers@5.24", &hf_5_24 },
	{ "torchtune", &tt_0_6 },
	{ "torchtune@0.6", &tt_0_6 },
	{ "torchtune@0.4", &tt_0_6 },
	{ "torchtitan", &titan },
	{ "torchtitan@0.2", &titan },
	{ "torchtitan@0.1", &titan_0_1 },
	{ "litgpt", &litgpt },
	{ "litgpt@0.5.13", &litgpt },
	{ "litgpt@0.4.13", &litgpt_0_4 },
	{ "litgpt@0.4.5", &litgpt_0_4 },
};

const char *
mf_framework_name(int v)
{
	return v >= 0 && (size_t)v < NELEM(releases) ? releases[v].name : NULL;
}

static const struct value *
values_of(int v, enum mf_method m, int sharded)
{
	const struct recipes *r;

	if (v < 0 || (size_t)v >= NELEM(releases))
		return NULL;
	r = releases[v].recipes;
	if (sharded && m == MF_FULL && r->full_sharded != NULL)
		return r->full_sharded;
	if (sharded && m == MF_LORA && r->lora_sharded != NULL)
		return r->lora_sharded;
	return m == MF_QLORA ? r->qlora : m == MF_LORA ? r->lora : r->full;
}

const char *
mf_framework_field(int v, enum mf_method m, int sharded, int i)
{
	const struct value *vals = values_of(v, m, sharded);

	for (int k = 0; vals != NULL && vals[k].field != NULL; k++)
		if (k == i)
			return vals[k].field;
	return NULL;
}

/* "lora.dtype" and "bf16" as "{lora: {dtype: bf16}}".  sharding requires
 * its gpus: a value under it carries w's (the manifest's sharding, read
 * after the framework, sets them). */
static int
as_document(char *buf, size_t size, const struct value *v,
    const struct mf_workload *w)
{
	const char *dot = strchr(v->field, '.');
	int n;

	if (dot == NULL)
		n = snprintf(buf, size, "{%s: %s}", v->field, v->yaml);
	else if (strncmp(v->field, "sharding.", 9) == 0)
		n = snprintf(buf, size, "{sharding: {gpus: %lld, %s: %s}}",
		    (long long)w->shard_gpus, dot + 1, v->yaml);
	else
		n = snprintf(buf, size, "{%.*s: {%s: %s}}",
		    (int)(dot - v->field), v->field, dot + 1, v->yaml);
	return n > 0 && (size_t)n < size;
}

/* One value read into r's workload by the workload's rows. */
static enum mf_rc
read_one(struct mf_fread *r, const struct mf_field *wl, const struct value *v,
    const char *path)
{
	struct mf_fread fr = *r;
	struct mf_doc *doc = NULL;
	char text[160];
	enum mf_rc rc;

	fr.hook = NULL;
	if (!as_document(text, sizeof(text), v, r->dst[MF_FB_WORK])) {
		assert(0 && "a framework's value fits its buffer");
		return mf_error_set(r->err, MF_EINVAL, path, 0, 0,
		    "the framework's %s does not fit", v->field);
	}
	rc = mf_doc_parse(text, strlen(text), MF_DOC_YAML, &doc, r->err);
	if (rc == MF_OK)
		rc = mf_fields_read(&fr, wl, mf_doc_root(doc), path);
	mf_doc_free(doc);
	return rc;
}

/* The methods release v has recipes for, "full, lora, qlora". */
static void
method_list(int v, char *buf, size_t size)
{
	static const enum mf_method all[] = { MF_FULL, MF_LORA, MF_QLORA };
	size_t used = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < NELEM(all) && used < size; k++)
		if (values_of(v, all[k], 0) != NULL)
			used += (size_t)snprintf(buf + used, size - used,
			    "%s%s", used ? ", " : "",
			    mf_workload_enum_name("method", (int)all[k]));
}

enum mf_rc
mf_framework_apply(int v, int sharded, struct mf_fread *r,
    const struct mf_node *n, const char *path)
{
	const struct mf_workload *w = r->dst[MF_FB_WORK];
	const struct mf_field *wl = mf_fields_at(&mf_fields_spec, "workload");
	const struct value *vals;
	char list[32];
	enum mf_rc rc = MF_OK;

	assert(w != NULL && wl != NULL);
	/* An inference job: the reader says framework has no effect. */
	if (w->kind != MF_TRAINING)
		return MF_OK;
	vals = values_of(v, w->method, sharded);
	if (vals == NULL) {
		method_list(v, list, sizeof(list));
		return mf_error_set(r->err, MF_EINVAL, path, n->line, n->column,
		    "'%s' has no recipe for method %s: its recipes are method %s",
		    mf_framework_name(v),
		    mf_workload_enum_name("method", (int)w->method), list);
	}
	for (int k = 0; rc == MF_OK && vals[k].field != NULL; k++)
		rc = read_one(r, wl, &vals[k], path);
	return rc;
}
