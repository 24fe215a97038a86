/*
 * job_fields.c: the rows of the Job manifest in the table of fields
 * (fields.h): every field of a manifest, one row each.  The defaults of
 * struct mf_workload are the rows' (mf_workload_defaults), so a default is
 * written once, here; what the catalogue gives a workload until a
 * catalogue does is the catalogue's (mf_cat_workload_defaults).
 *
 * Bounds keep every estimate inside 63 bits (manifest.h's MF_JOB_MAX_*);
 * a row that applies only to some workloads says so in its when, which
 * names the kind, method, server, weightsDtype or loss it needs.
 */
#include "manifest.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "../../catalog/catalog.h"
#include "../base/qty.h"
#include "../estimate/estimate.h"
#include "../fields/fields.h"
#include "../fix/fix.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define SUB(a) .sub = (a), .nsub = NELEM(a)
#define JOFF(f) offsetof(struct mf_job, f)
#define WOFF(f) offsetof(struct mf_workload, f)
#define BIT(v) (1u << (v))

/* --- names from other tables ------------------------------------------- */

static const char *
fix_name(int v)
{
	return v >= 0 ? mf_fix_name((enum mf_fix)v) : NULL;
}

/* --- the Job manifest --------------------------------------------------- */

/*
 * The rows keep a layout of their own: a row a few lines, members in the
 * order of struct mf_field.  clang-format would give each member a line
 * of its own, and the table four hundred lines more.
 */
/* clang-format on */

/* MAJOR.MINOR.PATCH, each 1 to 3 digits: a vLLM release. */
static int
version_ok(const char *s, size_t len)
{
	size_t i = 0, digits = 0;
	int dots = 0;

	for (; i < len; i++) {
		if (s[i] >= '0' && s[i] <= '9') {
			if (++digits > 3)
				return 0;
		} else if (s[i] == '.' && digits > 0 && dots < 2) {
			dots++;
			digits = 0;
		} else {
			return 0;
		}
	}
	return dots == 2 && digits > 0;
}

static const struct mf_form version_form = { version_ok,
	"^[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}$",
	"a vLLM release, MAJOR.MINOR.PATCH (0.7.3)" };

/* clang-format off */
/* The workload's rows by index, for the conditions that name them. */
enum {
	W_KIND,
	W_METHOD,
	W_FRAMEWORK,
	W_SEQ,
	W_BATCH,
	W_ACCUM,
	W_PRECISION,
	W_OPTIMIZER,
	W_CKPT,
	W_ATTENTION,
	W_LOSS,
	W_LOSS_CHUNKS,
	W_LOSS_UPCAST,
	W_OFFLOAD,
	W_OPT_BACKWARD,
	W_COMPILE,
	W_FLOAT8,
	W_LORA,
	W_QLORA,
	W_SHARDING,
	W_PARALLELISM,
	W_CONCURRENCY,
	W_CONTEXT,
	W_PROMPT,
	W_OUTPUT,
	W_KV_DTYPE,
	W_WEIGHTS_DTYPE,
	W_GROUP,
	W_SERVER,
	W_GPU_UTIL,
	W_BATCHED,
	W_BLOCK,
	W_MAX_SEQS,
	W_SERVER_VERSION,
	W_COUNT
};

static const struct mf_field workload_rows[W_COUNT];

#define WHEN(row, mask) { &workload_rows[row], (mask) }
#define TRAINING WHEN(W_KIND, BIT(MF_TRAINING))
#define INFERENCE WHEN(W_KIND, BIT(MF_INFERENCE))
#define VLLM WHEN(W_SERVER, BIT(MF_SERVER_VLLM))

static const struct mf_fname kinds[] = {
	{ "training", MF_TRAINING, "a training or fine-tuning run", { 0 } },
	{ "inference", MF_INFERENCE, "serving the model", { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_fname methods[] = {
	{ "full", MF_FULL, "every weight trained", { 0 } },
	{ "lora", MF_LORA, "LoRA adapters on frozen 16-bit weights",
	    TRAINING },
	{ "qlora", MF_QLORA,
	    "LoRA adapters on frozen weights stored in 4 bits (NF4)",
	    TRAINING },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_fname precisions[] = {
	{ "bf16", MF_BF16,
	    "16-bit weights and gradients, fp32 master weights and optimizer moments (DeepSpeed, Megatron)",
	    { 0 } },
	{ "bf16-mixed", MF_BF16_MIXED,
	    "fp32 weights and gradients under autocast, with the 16-bit weight copies autocast keeps (HF Trainer bf16=True, Lightning bf16-mixed, torchtitan)",
	    { 0 } },
	{ "bf16-true", MF_BF16_TRUE,
	    "weights, gradients and optimizer state all 16-bit (torchtune, LitGPT bf16-true)",
	    { 0 } },
	{ "fp16", MF_FP16, "as bf16, in fp16", { 0 } },
	{ "fp16-mixed", MF_FP16_MIXED, "as bf16-mixed, in fp16", { 0 } },
	{ "fp32", MF_FP32, "everything in fp32", { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_fname optimizers[] = {
	{ "adamw", MF_ADAMW, "two fp32 moments a trained weight", { 0 } },
	{ "adam8bit", MF_ADAM8BIT, "bitsandbytes' 8-bit Adam", { 0 } },
	{ "sgd", MF_SGD, "no state", { 0 } },
	{ "paged-adamw8bit", MF_PAGED_ADAMW8BIT,
	    "bitsandbytes' PagedAdamW8bit: the 8-bit moments of tensors of 1e5 elements or more in CUDA unified memory, not counted toward the fit",
	    { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_fname checkpointings[] = {
	{ "false", MF_CKPT_NONE, "every activation kept", { 0 } },
	{ "true", MF_CKPT_FULL, "every layer recomputed whole in backward",
	    { 0 } },
	{ "op", MF_CKPT_OP,
	    "per-op selective (torchtitan's policy): attention outputs and matmul outputs kept, the rest recomputed",
	    { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_fname attentions[] = {
	{ "sdpa", MF_SDPA, "PyTorch's scaled_dot_product_attention", { 0 } },
	{ "flash", MF_FLASH, "FlashAttention", { 0 } },
	{ "eager", MF_EAGER, "the s x s scores materialised", { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_fname losses[] = {
	{ "standard", MF_LOSS_STANDARD, "the whole s x V logits in fp32",
	    { 0 } },
	{ "chunked", MF_LOSS_CHUNKED,
	    "lm_head and cross-entropy in lossChunks pieces (torchtune's CEWithChunkedOutputLoss)",
	    { 0 } },
	{ "fused", MF_LOSS_FUSED,
	    "a fused linear cross-entropy that never holds the logits, as Liger-Kernel runs it (the logits of about s x b x h / V tokens at a time; Cut Cross-Entropy and Unsloth hold less)",
	    { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_fname upcasts[] = {
	{ "loss", MF_UPCAST_LOSS,
	    "the loss casts the logits to fp32 and nothing holds the copy (transformers)",
	    { 0 } },
	{ "output", MF_UPCAST_OUTPUT,
	    "the model's output cast to fp32 whole and held by the training loop through backward and the optimizer step (LitGPT under Lightning Fabric)",
	    { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

/* torchao's float8 training recipes (torchao 0.15,
 * float8/config.py: Float8LinearConfig.from_recipe_name). */
static const struct mf_fname float8s[] = {
	{ "none", MF_F8_NONE, "the linears compute in the precision's dtype",
	    { 0 } },
	{ "tensorwise", MF_F8_TENSORWISE,
	    "torchao's tensorwise recipe: one dynamic scale a tensor, e4m3 input and weight, e5m2 gradients",
	    { 0 } },
	{ "rowwise", MF_F8_ROWWISE,
	    "torchao's rowwise recipe: a power-of-2 scale a row, e4m3 throughout",
	    { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_fname kv_dtypes[] = {
	{ "bf16", MF_KV_BF16, NULL, { 0 } },
	{ "fp16", MF_KV_FP16, NULL, { 0 } },
	{ "fp8", MF_KV_FP8, NULL, { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_fname weights_dtypes[] = {
	{ "bf16", MF_WD_BF16, "2 bytes a weight", { 0 } },
	{ "fp16", MF_WD_FP16, "2 bytes a weight", { 0 } },
	{ "fp8", MF_WD_FP8, "1 byte a weight", { 0 } },
	{ "int8", MF_WD_INT8, "1 byte a weight", { 0 } },
	{ "int4", MF_WD_INT4, "half a byte a weight, and an fp16 scale a group",
	    { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_fname servers[] = {
	{ "none", MF_SERVER_NONE, "the plain estimate", { 0 } },
	{ "vllm", MF_SERVER_VLLM, "vLLM's budget: its share of the card",
	    { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_fname lora_targets[] = {
	{ "all-linear", MF_LORA_ALL_LINEAR,
	    "every linear of a layer, as PEFT's all-linear (the output head not)",
	    { 0 } },
	{ "attention", MF_LORA_ATTENTION, "q k v o (Phi-3: qkv o)", { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

/* lora.targets as a list: PEFT's target_modules, the names the model's
 * modules have (mf_lora_module_name; mf_est_lora_refused holds them to
 * the model's). */
static const struct mf_field lora_modules = {
	.key = "targets", .type = MF_FT_SET, .base = MF_FB_WORK,
	.offset = WOFF(lora_modules), .name_of = mf_lora_module_name,
	.noun = "a module name",
};

static const struct mf_fname lora_dtypes[] = {
	{ "fp32", MF_LORA_FP32,
	    "fp32 adapters, gradients and optimizer state (PEFT's default, autocast_adapter_dtype)",
	    { 0 } },
	{ "bf16", MF_LORA_BF16,
	    "bf16 adapters, gradients and optimizer state, no master copy (torchtune's recipes, dtype: bf16)",
	    { 0 } },
	{ "fp16", MF_LORA_FP16, "as bf16, in fp16", { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

/* bitsandbytes 0.50.2, functional.quantize_4bit: "invalid blocksize"
 * for any other. */
static const int64_t qlora_blocks[] = { 32, 64, 128, 256, 512, 1024, 2048,
	4096, 0 };

static const struct mf_field lora_rows[] = {
	{ .key = "rank", .type = MF_FT_INT, .base = MF_FB_WORK,
	    .offset = WOFF(lora_rank), .flags = MF_FF_DEFAULT, .min = 1,
	    .max = MF_JOB_MAX_RANK, .idef = 16, .title = "LoRA rank",
	    .doc = "rank of every adapter" },
	{ .key = "targets", .type = MF_FT_ENUM, .base = MF_FB_WORK,
	    .offset = WOFF(lora_targets), .offset2 = WOFF(lora_modules),
	    .flags = MF_FF_DEFAULT, .item = &lora_modules,
	    .names = lora_targets, .idef = MF_LORA_ALL_LINEAR,
	    .ival = MF_LORA_LIST, .title = "LoRA targets",
	    .doc = "the linear layers that get adapters: all-linear, attention, or a list of the model's module names as PEFT's target_modules takes them ([q_proj, v_proj], PEFT's and torchtune's default for Llama)" },
	{ .key = "dtype", .type = MF_FT_ENUM, .base = MF_FB_WORK,
	    .offset = WOFF(lora_dtype), .flags = MF_FF_DEFAULT,
	    .names = lora_dtypes, .idef = MF_LORA_FP32,
	    .title = "LoRA dtype",
	    .doc = "the adapters' weights, their gradients and optimizer state, and the copies of their inputs they keep" },
	{ .key = "dropout", .type = MF_FT_NUMBER, .base = MF_FB_WORK,
	    .offset = WOFF(lora_dropout), .flags = MF_FF_DEFAULT, .lo = 0,
	    .hi = 1, .ddef = 0, .unit = "probability",
	    .title = "LoRA dropout",
	    .doc = "the dropout on each adapter's input (PEFT's and torchtune's lora_dropout, LitGPT's 0.05): above 0 each adapter keeps its dropped input and a one-byte mask" },
};

static const struct mf_fname quantizers[] = {
	{ "bitsandbytes", MF_QZ_BITSANDBYTES,
	    "quantize_4bit on each weight's 16-bit copy as it loads, the weights loaded so far beside it (transformers' from_pretrained with BitsAndBytesConfig, LitGPT's bnb.nf4)",
	    { 0 } },
	{ "torchao", MF_QZ_TORCHAO,
	    "torchao's to_nf4 on each weight of the model built whole, adapters and all: its nearest code found a million weights at a time (torchtune's FrozenNF4Linear); in the step, torchao's eager dequantization of each 4-bit weight (14 bytes a weight at once, where bitsandbytes' holds 2)",
	    { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_field qlora_rows[] = {
	{ .key = "blockSize", .type = MF_FT_INT, .base = MF_FB_WORK,
	    .offset = WOFF(qlora_block), .flags = MF_FF_DEFAULT,
	    .ints = qlora_blocks, .min = 32, .max = 4096, .idef = 64,
	    .unit = "weights", .title = "QLoRA block size",
	    .doc = "weights that share one absmax, as bitsandbytes stores NF4" },
	{ .key = "doubleQuant", .type = MF_FT_BOOL, .base = MF_FB_WORK,
	    .offset = WOFF(qlora_double_quant), .flags = MF_FF_DEFAULT,
	    .idef = 1, .title = "Double quantization",
	    .doc = "absmax in 8 bits with a second fp32 level a 256 blocks, as the QLoRA recipe" },
	{ .key = "kbitPrep", .type = MF_FT_BOOL, .base = MF_FB_WORK,
	    .offset = WOFF(qlora_kbit_prep), .flags = MF_FF_DEFAULT,
	    .idef = 0, .title = "PEFT's k-bit preparation",
	    .doc = "peft.prepare_model_for_kbit_training, as HF + PEFT QLoRA runs call it: the parameters not quantized (embeddings, norms, lm_head) cast to fp32, and with them the activations between the 4-bit linears (it also turns on gradient checkpointing by default: state gradientCheckpointing)" },
	{ .key = "keepsInput", .type = MF_FT_BOOL, .base = MF_FB_WORK,
	    .offset = WOFF(qlora_keeps_input), .flags = MF_FF_DEFAULT,
	    .idef = 0, .title = "4-bit matmul keeps its input",
	    .doc = "bitsandbytes before 0.43.2 (0.42.0, the release LitGPT 0.4 pins): its 4-bit matmul holds every quantized linear's input until backward, which later releases drop" },
	{ .key = "quantizer", .type = MF_FT_ENUM, .base = MF_FB_WORK,
	    .offset = WOFF(qlora_quantizer), .flags = MF_FF_DEFAULT,
	    .names = quantizers, .idef = MF_QZ_BITSANDBYTES,
	    .title = "Quantizer at load",
	    .doc = "what quantizes the base as it loads, which sets the loading moment, and dequantizes it in the step: bitsandbytes (transformers' from_pretrained, LitGPT) or torchao (torchtune)" },
};

static const struct mf_fname shard_units[] = {
	{ "model", MF_UNITS_MODEL,
	    "the root unit, the model itself, holds the embeddings, the final norm and the head (accelerate's FSDP2 wrapping, torchtune without custom_sharded_layers)",
	    { 0 } },
	{ "ends", MF_UNITS_ENDS,
	    "the embeddings and the head are units of their own, gathered only while used (torchtune's custom_sharded_layers: ['tok_embeddings', 'output'], torchtitan's apply_fsdp)",
	    { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_field sharding_rows[] = {
	{ .key = "gpus", .type = MF_FT_INT, .base = MF_FB_WORK,
	    .offset = WOFF(shard_gpus), .flags = MF_FF_REQUIRED, .min = 1,
	    .max = MF_JOB_MAX_GPUS, .idef = 1, .unit = "GPUs",
	    .title = "FSDP over GPUs",
	    .doc = "weights, gradients and optimizer state (LoRA's and QLoRA's frozen base and adapters; bitsandbytes' quant_state whole on each) fully sharded over N GPUs" },
	{ .key = "reshardAfterForward", .type = MF_FT_BOOL,
	    .base = MF_FB_WORK, .offset = WOFF(reshard_after_forward),
	    .flags = MF_FF_DEFAULT, .idef = 1, .title = "Reshard after forward",
	    .doc = "false keeps each layer's gathered weights from forward to backward" },
	{ .key = "cpuOffload", .type = MF_FT_BOOL, .base = MF_FB_WORK,
	    .offset = WOFF(shard_cpu_offload), .flags = MF_FF_DEFAULT,
	    .idef = 0, .title = "FSDP CPU offload",
	    .doc = "the shards, their gradients and the optimizer state in host memory, the optimizer stepped there (FSDP2's CPUOffloadPolicy, torchtune's fsdp_cpu_offload): the GPU holds the units in flight; with gpus 1, FSDP on one GPU" },
	{ .key = "units", .type = MF_FT_ENUM, .base = MF_FB_WORK,
	    .offset = WOFF(shard_units), .flags = MF_FF_DEFAULT,
	    .names = shard_units, .idef = MF_UNITS_MODEL,
	    .title = "FSDP units",
	    .doc = "the units beside the decoder layers: model (the root holds the embeddings, the final norm and the head) or ends (the embeddings and the head each a unit of their own)" },
};

static const struct mf_field parallelism_rows[] = {
	{ .key = "tensor", .type = MF_FT_INT, .base = MF_FB_WORK,
	    .offset = WOFF(tensor), .flags = MF_FF_DEFAULT, .min = 1,
	    .max = MF_JOB_MAX_GPUS, .idef = 1, .unit = "GPUs",
	    .title = "Tensor parallel",
	    .doc = "linear layers, heads and their KV cache divided over T GPUs of a node" },
	{ .key = "pipeline", .type = MF_FT_INT, .base = MF_FB_WORK,
	    .offset = WOFF(pipeline), .flags = MF_FF_DEFAULT, .min = 1,
	    .max = MF_JOB_MAX_GPUS, .idef = 1, .unit = "stages",
	    .title = "Pipeline stages",
	    .doc = "the layers divided into P stages; the largest must fit" },
	{ .key = "expert", .type = MF_FT_INT, .base = MF_FB_WORK,
	    .offset = WOFF(expert), .flags = MF_FF_DEFAULT, .min = 1,
	    .max = MF_JOB_MAX_GPUS, .idef = 1, .unit = "GPUs",
	    .title = "Expert parallel",
	    .doc = "the routed experts divided over E GPUs of a stage" },
	{ .key = "sequenceParallel", .type = MF_FT_BOOL, .base = MF_FB_WORK,
	    .offset = WOFF(sequence_parallel), .flags = MF_FF_DEFAULT,
	    .idef = 0, .when = { TRAINING }, .title = "Sequence parallel",
	    .doc = "layer inputs, norms and dropout activations divided by T (Megatron, torchtitan)" },
	{ .key = "lossParallel", .type = MF_FT_BOOL, .base = MF_FB_WORK,
	    .offset = WOFF(loss_parallel), .flags = MF_FF_DEFAULT, .idef = 0,
	    .when = { TRAINING }, .title = "Loss parallel",
	    .doc = "the logits and the loss divided by T (torchtitan)" },
};

static const struct mf_field workload_rows[W_COUNT] = {
	[W_KIND] = { .key = "kind", .type = MF_FT_ENUM, .base = MF_FB_WORK,
	    .offset = WOFF(kind), .flags = MF_FF_DEFAULT | MF_FF_FIRST,
	    .names = kinds,
	    .idef = MF_TRAINING, .title = "Kind",
	    .doc = "what the job does with the model" },
	[W_METHOD] = { .key = "method", .type = MF_FT_ENUM,
	    .base = MF_FB_WORK, .offset = WOFF(method),
	    .flags = MF_FF_DEFAULT | MF_FF_VALUE_WHEN | MF_FF_FIRST,
	    .names = methods, .idef = MF_FULL, .title = "Method",
	    .doc = "which weights are trained" },
	/* Read after kind and method, before the rest (MF_FF_FIRST): its
	 * hook puts the framework's values (framework.c) where the fields
	 * the manifest states then replace them. */
	[W_FRAMEWORK] = { .key = "framework", .type = MF_FT_ENUM,
	    .base = MF_FB_JOB, .offset = JOFF(framework),
	    .offset2 = JOFF(framework_given),
	    .flags = MF_FF_FIRST | MF_FF_HOOK | MF_FF_MARK,
	    .name_of = mf_framework_name, .idef = 0,
	    .text = "none: each field's own default", .when = { TRAINING },
	    .title = "Framework",
	    .doc = "the framework the job runs, alone (its latest release measured) or at a release (torchtune@0.4): each workload field the manifest leaves out takes the value the framework's own recipe sets for the method (the answer's recipe.fromFramework lists them); a field the manifest states wins" },
	[W_SEQ] = { .key = "sequenceLength", .type = MF_FT_INT,
	    .base = MF_FB_WORK, .offset = WOFF(seq_len), .min = 1,
	    .max = MF_JOB_MAX_SEQ, .when = { TRAINING }, .unit = "tokens",
	    .title = "Sequence length",
	    .doc = "tokens per sequence; required for training with a model",
	    .example = "4096" },
	[W_BATCH] = { .key = "microBatch", .type = MF_FT_INT,
	    .base = MF_FB_WORK, .offset = WOFF(micro_batch),
	    .flags = MF_FF_DEFAULT, .min = 1, .max = MF_JOB_MAX_BATCH,
	    .idef = 1, .when = { TRAINING }, .unit = "sequences",
	    .title = "Micro-batch", .doc = "sequences per step on one GPU" },
	[W_ACCUM] = { .key = "gradientAccumulation", .type = MF_FT_INT,
	    .base = MF_FB_WORK, .offset = WOFF(grad_accum),
	    .flags = MF_FF_DEFAULT, .min = 1, .max = MF_JOB_MAX_BATCH,
	    .idef = 1, .when = { TRAINING }, .unit = "micro-batches",
	    .title = "Gradient accumulation",
	    .doc = "micro-batches a GPU runs for each optimizer step (the optimizer step's time and data parallel's all-reduce are shared by them)" },
	[W_PRECISION] = { .key = "precision", .type = MF_FT_ENUM,
	    .base = MF_FB_WORK, .offset = WOFF(precision),
	    .flags = MF_FF_DEFAULT, .names = precisions, .idef = MF_BF16,
	    .title = "Precision",
	    .doc = "the dtypes of weights, gradients and optimizer state" },
	[W_OPTIMIZER] = { .key = "optimizer", .type = MF_FT_ENUM,
	    .base = MF_FB_WORK, .offset = WOFF(optimizer),
	    .flags = MF_FF_DEFAULT, .names = optimizers, .idef = MF_ADAMW,
	    .when = { TRAINING }, .title = "Optimizer",
	    .doc = "the optimizer's state a trained weight" },
	[W_CKPT] = { .key = "gradientCheckpointing", .type = MF_FT_ENUM,
	    .base = MF_FB_WORK, .offset = WOFF(checkpointing),
	    .offset2 = WOFF(ckpt_every), .flags = MF_FF_DEFAULT,
	    .names = checkpointings, .noun = "a number of layers N", .min = 1,
	    .max = MF_MODEL_MAX_LAYERS, .ival = MF_CKPT_FULL,
	    .idef = MF_CKPT_NONE, .when = { TRAINING },
	    .title = "Gradient checkpointing",
	    .doc = "activations recomputed in backward: false, true (every layer), op (per-op selective) or N (every Nth layer in full)" },
	[W_ATTENTION] = { .key = "attention", .type = MF_FT_ENUM,
	    .base = MF_FB_WORK, .offset = WOFF(attention),
	    .flags = MF_FF_DEFAULT, .names = attentions, .idef = MF_SDPA,
	    .title = "Attention", .doc = "the attention kernel" },
	[W_LOSS] = { .key = "loss", .type = MF_FT_ENUM, .base = MF_FB_WORK,
	    .offset = WOFF(loss), .flags = MF_FF_DEFAULT, .names = losses,
	    .idef = MF_LOSS_STANDARD, .when = { TRAINING }, .title = "Loss",
	    .doc = "how the logits and the cross-entropy are computed" },
	[W_LOSS_CHUNKS] = { .key = "lossChunks", .type = MF_FT_INT,
	    .base = MF_FB_WORK, .offset = WOFF(loss_chunks),
	    .flags = MF_FF_DEFAULT, .min = 1, .max = MF_JOB_MAX_CHUNKS,
	    .idef = 8, .when = { TRAINING, WHEN(W_LOSS, BIT(MF_LOSS_CHUNKED)) },
	    .title = "Loss chunks",
	    .doc = "pieces of a chunked loss, each upcast to fp32 alone" },
	[W_LOSS_UPCAST] = { .key = "lossUpcast", .type = MF_FT_ENUM,
	    .base = MF_FB_WORK, .offset = WOFF(loss_upcast),
	    .flags = MF_FF_DEFAULT, .names = upcasts, .idef = MF_UPCAST_LOSS,
	    .when = { TRAINING, WHEN(W_LOSS, BIT(MF_LOSS_STANDARD)) },
	    .title = "Loss upcast",
	    .doc = "where the standard loss's logits become fp32" },
	[W_OFFLOAD] = { .key = "activationOffload", .type = MF_FT_BOOL,
	    .base = MF_FB_WORK, .offset = WOFF(activation_offload),
	    .flags = MF_FF_DEFAULT, .idef = 0, .when = { TRAINING },
	    .title = "Activation offload",
	    .doc = "the layers' checkpointed inputs in host memory, as torchtune's OffloadActivations; needs gradientCheckpointing true" },
	[W_OPT_BACKWARD] = { .key = "optimizerInBackward", .type = MF_FT_BOOL,
	    .base = MF_FB_WORK, .offset = WOFF(optimizer_in_backward),
	    .flags = MF_FF_DEFAULT, .idef = 0, .when = { TRAINING },
	    .title = "Optimizer in backward",
	    .doc = "each weight stepped and its gradient freed as soon as it is ready, as torchtune runs it: full fine-tuning, bf16-true or fp32, adamw, adam8bit or paged-adamw8bit, one GPU, with or without activationOffload" },
	[W_COMPILE] = { .key = "compile", .type = MF_FT_BOOL,
	    .base = MF_FB_WORK, .offset = WOFF(compile),
	    .flags = MF_FF_DEFAULT, .idef = 0, .when = { TRAINING },
	    .title = "Compile",
	    .doc = "torch.compile of each decoder layer, as torchtune's compile: True: llama or mistral, full fine-tuning, LoRA or QLoRA (QLoRA in bf16, no kbitPrep), every layer checkpointed or none, bf16, bf16-true or fp32, sdpa, the standard loss or the chunked one (its cross-entropy compiled piece by piece, as torchtune's compile_loss does), with or without optimizerInBackward, not with activationOffload, on one GPU or under FSDP (sharding), not tensor, pipeline or expert parallel" },
	[W_FLOAT8] = { .key = "float8", .type = MF_FT_ENUM,
	    .base = MF_FB_WORK, .offset = WOFF(float8),
	    .flags = MF_FF_DEFAULT, .names = float8s, .idef = MF_F8_NONE,
	    .when = { TRAINING }, .title = "Float8",
	    .doc = "torchao's float8 training of the decoder layers' linears (convert_to_float8_training, the output head left out as torchtitan's configs leave it): full fine-tuning of llama or mistral, bf16, bf16-true or bf16-mixed, every layer checkpointed or none, one GPU's model; a card without fp8 tensor cores (no flops.fp8) is not chosen" },
	[W_LORA] = { .key = "lora", .type = MF_FT_OBJECT, SUB(lora_rows),
	    .when = { TRAINING,
	        WHEN(W_METHOD, BIT(MF_LORA) | BIT(MF_QLORA)) },
	    .title = "LoRA", .doc = "the adapters of method lora or qlora" },
	[W_QLORA] = { .key = "qlora", .type = MF_FT_OBJECT, SUB(qlora_rows),
	    .when = { TRAINING, WHEN(W_METHOD, BIT(MF_QLORA)) },
	    .title = "QLoRA", .doc = "how the 4-bit weights are stored" },
	[W_SHARDING] = { .key = "sharding", .type = MF_FT_OBJECT,
	    .flags = MF_FF_REQUIRES, SUB(sharding_rows),
	    .when = { TRAINING },
	    .title = "FSDP", .doc = "FSDP full shard of training: full fine-tuning, or LoRA's or QLoRA's frozen base and adapters" },
	[W_PARALLELISM] = { .key = "parallelism", .type = MF_FT_OBJECT,
	    SUB(parallelism_rows), .title = "Parallelism",
	    .doc = "a replica of tensor x pipeline GPUs (design 15)" },
	[W_CONCURRENCY] = { .key = "concurrency", .type = MF_FT_INT,
	    .base = MF_FB_WORK, .offset = WOFF(concurrency),
	    .flags = MF_FF_DEFAULT, .min = 1, .max = MF_JOB_MAX_CONCURRENCY,
	    .idef = 1, .when = { INFERENCE }, .unit = "sequences",
	    .title = "Concurrency", .doc = "sequences in flight" },
	[W_CONTEXT] = { .key = "contextLength", .type = MF_FT_INT,
	    .base = MF_FB_WORK, .offset = WOFF(context_len), .min = 1,
	    .max = MF_JOB_MAX_CONTEXT, .when = { INFERENCE }, .unit = "tokens",
	    .title = "Context length",
	    .doc = "tokens per sequence; required for inference with a model",
	    .example = "8192" },
	[W_PROMPT] = { .key = "promptTokens", .type = MF_FT_INT,
	    .base = MF_FB_WORK, .offset = WOFF(prompt_tokens), .min = 1,
	    .max = MF_JOB_MAX_CONTEXT, .when = { INFERENCE },
	    .unit = "tokens", .title = "Prompt tokens",
	    .doc = "a request's average prompt, for its prefill; with outputTokens at most contextLength in all; default what contextLength leaves after outputTokens" },
	[W_OUTPUT] = { .key = "outputTokens", .type = MF_FT_INT,
	    .base = MF_FB_WORK, .offset = WOFF(output_tokens), .min = 1,
	    .max = MF_JOB_MAX_CONTEXT, .when = { INFERENCE },
	    .unit = "tokens", .title = "Output tokens",
	    .doc = "a request's average output, with promptTokens: the two at most contextLength; needed with duration.requests" },
	[W_KV_DTYPE] = { .key = "kvCacheDtype", .type = MF_FT_ENUM,
	    .base = MF_FB_WORK, .offset = WOFF(kv_dtype),
	    .flags = MF_FF_DEFAULT, .names = kv_dtypes, .idef = MF_KV_BF16,
	    .when = { INFERENCE }, .title = "KV cache dtype",
	    .doc = "the dtype of the KV cache" },
	[W_WEIGHTS_DTYPE] = { .key = "weightsDtype", .type = MF_FT_ENUM,
	    .base = MF_FB_WORK, .offset = WOFF(weights_dtype),
	    .names = weights_dtypes, .idef = MF_WD_DEFAULT,
	    .text = "that of the model's quantization_config, else of precision",
	    .when = { INFERENCE },
	    .title = "Weights dtype",
	    .doc = "the dtype of the linear layers' weights; embeddings, norms and lm_head stay 16-bit" },
	[W_GROUP] = { .key = "groupSize", .type = MF_FT_INT,
	    .base = MF_FB_WORK, .offset = WOFF(group_size),
	    .flags = MF_FF_DEFAULT, .min = 1, .max = MF_JOB_MAX_GROUP,
	    .idef = 128,
	    .when = { INFERENCE, WHEN(W_WEIGHTS_DTYPE, BIT(MF_WD_INT4)) },
	    .unit = "weights", .title = "int4 group size",
	    .doc = "weights per fp16 scale of int4 weights" },
	[W_SERVER] = { .key = "server", .type = MF_FT_ENUM,
	    .base = MF_FB_WORK, .offset = WOFF(server),
	    .flags = MF_FF_DEFAULT, .names = servers, .idef = MF_SERVER_NONE,
	    .when = { INFERENCE }, .title = "Server",
	    .doc = "the serving engine whose budget the job is sized for" },
	[W_GPU_UTIL] = { .key = "gpuMemoryUtilization", .type = MF_FT_NUMBER,
	    .base = MF_FB_WORK, .offset = WOFF(gpu_util),
	    .flags = MF_FF_DEFAULT, .lo = 0.01, .hi = 1, .ddef = 0.9,
	    .when = { INFERENCE, VLLM }, .unit = "fraction",
	    .title = "GPU memory use",
	    .doc = "the share of each card vLLM may use; it replaces the catalogue's headroom" },
	[W_BATCHED] = { .key = "maxNumBatchedTokens", .type = MF_FT_INT,
	    .base = MF_FB_WORK, .offset = WOFF(batched_tokens),
	    .min = 1, .max = MF_JOB_MAX_CONTEXT,
	    .text = "vLLM's default for the card: 16384 from 160 GiB, 8192 from 70 GiB but an A100, else 2048; with a serverVersion before 0.8.0, max(contextLength, 2048), or past 32768 tokens 512 from 0.5.3, 2048 from 0.6.5",
	    .when = { INFERENCE, VLLM }, .unit = "tokens",
	    .title = "Batched tokens",
	    .doc = "tokens of one forward, the activation peak of the profile run; at least maxNumSeqs where both are given" },
	[W_BLOCK] = { .key = "blockSize", .type = MF_FT_INT,
	    .base = MF_FB_WORK, .offset = WOFF(block_size),
	    .flags = MF_FF_DEFAULT, .min = 1, .max = MF_JOB_MAX_BLOCK,
	    .idef = 16, .when = { INFERENCE, VLLM }, .unit = "tokens",
	    .title = "KV block size",
	    .doc = "tokens a KV cache block holds; a sequence takes whole blocks" },
	[W_MAX_SEQS] = { .key = "maxNumSeqs", .type = MF_FT_INT,
	    .base = MF_FB_WORK, .offset = WOFF(max_num_seqs),
	    .min = 1, .max = MF_JOB_MAX_CONCURRENCY,
	    .text = "vLLM's default for the card: 1024 from 70 GiB but an A100, else 256; with a serverVersion before 0.8.0, 256",
	    .when = { INFERENCE, VLLM }, .unit = "sequences",
	    .title = "Max sequences",
	    .doc = "vLLM's --max-num-seqs: the sequences of its profile run, apart from concurrency; at most maxNumBatchedTokens, the card's default where that is not given (a card whose default is fewer is not considered)" },
	[W_SERVER_VERSION] = { .key = "serverVersion", .type = MF_FT_STRING,
	    .base = MF_FB_NONE, .flags = MF_FF_HOOK, .form = &version_form,
	    .max = 11, .text = "the current accounting",
	    .when = { INFERENCE, VLLM }, .title = "vLLM release",
	    .doc = "the vLLM release that serves the job (0.2.5 or later, as 0.7.3): a release before 0.21 sizes its KV cache as its own source did (docs/serving.md)" },
};

static const struct mf_field gpu_rows[] = {
	{ .key = "minMemory", .type = MF_FT_MEMORY, .base = MF_FB_JOB,
	    .offset = JOFF(min_memory), .offset2 = JOFF(min_memory_format),
	    .min = MF_QTY_MEMORY_MIN, .unit = "bytes", .title = "minMemory",
	    .doc = "the per-GPU floor, a quantity such as 88Gi; optional when spec.model is given" },
	{ .key = "count", .type = MF_FT_INT, .base = MF_FB_JOB,
	    .offset = JOFF(count), .offset2 = JOFF(count_given),
	    .flags = MF_FF_DEFAULT | MF_FF_MARK, .min = 1,
	    .max = MF_JOB_MAX_GPUS, .idef = 1, .unit = "GPUs",
	    .title = "GPUs per job", .doc = "GPUs the job runs on" },
};

static const struct mf_field resources_rows[] = {
	{ .key = "gpu", .type = MF_FT_OBJECT, SUB(gpu_rows), .title = "GPU",
	    .doc = "what each GPU must hold, and how many" },
};

static const struct mf_field model_rows[] = {
	{ .key = "name", .type = MF_FT_STRING, .base = MF_FB_JOB,
	    .offset = JOFF(model_name), .flags = MF_FF_HOOK,
	    .title = "Model", .doc = "a model memfloord serves: a shipped config or one of the -m directories' (GET /v1/models)" },
	{ .key = "config", .type = MF_FT_CONFIG, .flags = MF_FF_HOOK,
	    .title = "config.json",
	    .doc = "the model's Hugging Face config.json, inline" },
	{ .key = "configUrl", .type = MF_FT_STRING, .base = MF_FB_JOB,
	    .offset = JOFF(config_url), .flags = MF_FF_HOOK,
	    .title = "config.json URL",
	    .doc = "fetched when the operator allows its host (memfloord --model-host)" },
};

static const struct mf_field duration_rows[] = {
	{ .key = "referenceHours", .type = MF_FT_NUMBER, .base = MF_FB_JOB,
	    .offset = JOFF(reference_hours), .lo = 1e-6, .hi = MF_JOB_MAX_HOURS,
	    .ddef = 0, .unit = "hours", .title = "Reference hours",
	    .doc = "hours the job takes on the catalogue's reference card at its own count" },
	{ .key = "tokens", .type = MF_FT_INT, .base = MF_FB_JOB,
	    .offset = JOFF(tokens), .min = 1, .max = MF_JOB_MAX_TOKENS,
	    .unit = "tokens", .title = "Tokens",
	    .doc = "training: tokens to train on, the dataset's tokens x epochs" },
	{ .key = "requests", .type = MF_FT_INT, .base = MF_FB_JOB,
	    .offset = JOFF(requests), .min = 1, .max = MF_JOB_MAX_TOKENS,
	    .unit = "requests", .title = "Requests",
	    .doc = "inference: requests to serve as a batch, of promptTokens and outputTokens each" },
};

static const struct mf_field limits_rows[] = {
	{ .key = "maxHourlyPrice", .type = MF_FT_NUMBER, .base = MF_FB_JOB,
	    .offset = JOFF(max_hourly_price), .lo = 0, .hi = MF_JOB_MAX_MONEY,
	    .ddef = -1, .unit = "USD per hour", .title = "Max $/hour",
	    .doc = "the most the whole placement may cost an hour (price x count)" },
	{ .key = "maxCost", .type = MF_FT_NUMBER, .base = MF_FB_JOB,
	    .offset = JOFF(max_cost), .lo = 0, .hi = MF_JOB_MAX_MONEY,
	    .ddef = -1, .unit = "USD", .title = "Max cost ($)",
	    .doc = "the most the job may cost to finish; needs a duration" },
	{ .key = "deadlineHours", .type = MF_FT_NUMBER, .base = MF_FB_JOB,
	    .offset = JOFF(deadline_hours), .lo = 1e-6, .hi = MF_JOB_MAX_HOURS,
	    .ddef = -1, .unit = "hours", .title = "Deadline (hours)",
	    .doc = "hours the job must finish in; needs a duration" },
};

static const struct mf_field spec_rows[] = {
	{ .key = "resources", .type = MF_FT_OBJECT, SUB(resources_rows),
	    .title = "Resources", .doc = "the GPUs the job asks for" },
	{ .key = "model", .type = MF_FT_OBJECT, .flags = MF_FF_ONE_OF,
	    SUB(model_rows), .title = "Model",
	    .doc = "the model the floor is derived from: one of name, config, configUrl" },
	{ .key = "workload", .type = MF_FT_OBJECT, SUB(workload_rows),
	    .title = "Workload", .doc = "what the job does with the model" },
	{ .key = "duration", .type = MF_FT_OBJECT, SUB(duration_rows),
	    .title = "Duration", .doc = "how long the job runs" },
	{ .key = "limits", .type = MF_FT_OBJECT, SUB(limits_rows),
	    .title = "Limits", .doc = "what the placement may cost" },
	{ .key = "allowedFixes", .type = MF_FT_SET, .base = MF_FB_JOB,
	    .offset = JOFF(allowed_fixes), .name_of = fix_name,
	    .noun = "a fix", .title = "allowedFixes",
	    .doc = "fixes admission may apply by itself (design 7)" },
};

static const struct mf_field any_string = { .key = "*",
	.type = MF_FT_STRING };

static const struct mf_field metadata_rows[] = {
	{ .key = "name", .type = MF_FT_STRING, .base = MF_FB_JOB,
	    .offset = JOFF(name), .flags = MF_FF_REQUIRED, .min = 1,
	    .max = 253, .title = "Job name",
	    .doc = "names the job in answers and logs", .example = "my-job" },
	{ .key = "namespace", .type = MF_FT_STRING, .title = "Namespace",
	    .doc = "Kubernetes metadata, accepted and not read" },
	{ .key = "labels", .type = MF_FT_MAP, .item = &any_string,
	    .title = "Labels", .doc = "Kubernetes metadata, accepted and not read" },
	{ .key = "annotations", .type = MF_FT_MAP, .item = &any_string,
	    .title = "Annotations",
	    .doc = "Kubernetes metadata, accepted and not read" },
};

static const struct mf_field job_rows[] = {
	{ .key = "apiVersion", .type = MF_FT_CONST,
	    .flags = MF_FF_REQUIRED, .text = "memfloor.dev/v1",
	    .title = "API version", .doc = "memfloor.dev/v1" },
	{ .key = "kind", .type = MF_FT_CONST,
	    .flags = MF_FF_REQUIRED | MF_FF_FIRST, .text = MF_FIELDS_JOB_KIND,
	    .title = "Kind", .doc = MF_FIELDS_JOB_KIND },
	{ .key = "metadata", .type = MF_FT_OBJECT,
	    .flags = MF_FF_REQUIRED | MF_FF_REQUIRES, SUB(metadata_rows),
	    .title = "Metadata", .doc = "the job's name" },
	{ .key = "spec", .type = MF_FT_OBJECT, .flags = MF_FF_REQUIRED,
	    SUB(spec_rows), .title = "Spec", .doc = "what the job needs" },
};

const struct mf_field mf_fields_spec = { .key = "spec",
	.type = MF_FT_OBJECT, SUB(spec_rows), .title = "Spec",
	.doc = "a Job manifest's spec (the annotation memfloor.dev/spec)" };

const struct mf_field mf_fields_job = { .key = MF_FIELDS_JOB_KIND,
	.type = MF_FT_OBJECT,
	.flags = MF_FF_REQUIRES | MF_FF_FIRST, SUB(job_rows),
	.title = MF_FIELDS_JOB_TITLE,
	.doc = "a job to place on the GPU cheapest to finish it (design 3)" };

/* clang-format on */

/* --- the workload's defaults -------------------------------------------- */

static struct mf_workload workload_template;
static pthread_once_t template_once = PTHREAD_ONCE_INIT;

static void
build_template(void)
{
	void *dst[MF_FB_COUNT] = { NULL };

	memset(&workload_template, 0, sizeof(workload_template));
	dst[MF_FB_WORK] = &workload_template;
	mf_fields_defaults(&mf_fields_spec, dst);
	mf_cat_workload_defaults(&workload_template);
}

void
mf_workload_defaults(struct mf_workload *w)
{
	pthread_once(&template_once, build_template);
	*w = workload_template;
}
