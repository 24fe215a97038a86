/*
 * fields.c: the table of fields (fields.h): every field of the Job
 * manifest and of the GPU catalogue, one row each, and the forms of the
 * strings they take.  The defaults of struct mf_workload are the rows'
 * (mf_workload_defaults), so a default is written once, here.
 *
 * Bounds keep every estimate inside 63 bits (manifest.h's MF_JOB_MAX_*);
 * a row that applies only to some workloads says so in its when, which
 * names the kind, method, server, weightsDtype or loss it needs.
 */
#include "fields.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "../../catalog/catalog.h"
#include "../estimate/estimate.h"
#include "../fix/fix.h"
#include "../manifest/manifest.h"
#include "../base/qty.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define SUB(a) .sub = (a), .nsub = NELEM(a)
#define JOFF(f) offsetof(struct mf_job, f)
#define WOFF(f) offsetof(struct mf_workload, f)
#define COFF(f) offsetof(struct mf_catalog, f)
#define GOFF(f) offsetof(struct mf_gpu, f)
#define BIT(v) (1u << (v))

/* --- forms of strings -------------------------------------------------- */

static int
is_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9');
}

static int
name_char(char ch)
{
	return is_alnum(ch) || ch == '.' || ch == '_' || ch == '-';
}

/* [A-Za-z0-9._-], 1 to 63 characters: a GPU, a gres type, a partition. */
static int
name_ok(const char *s, size_t len)
{
	if (len == 0 || len > 63)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!name_char(s[i]))
			return 0;
	return 1;
}

/* A Kubernetes label name or value: at most 63 characters of
 * [A-Za-z0-9._-] beginning and ending with a letter or digit. */
static int
label_part_ok(const char *s, size_t len)
{
	if (len > 63 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return 0;
	for (size_t i = 1; i + 1 < len; i++)
		if (!name_char(s[i]))
			return 0;
	return 1;
}

/* A label value may also be empty. */
static int
label_value_ok(const char *s, size_t len)
{
	return len == 0 || label_part_ok(s, len);
}

/* A DNS-1123 subdomain (a label key's prefix): lower-case, dot-separated. */
static int
dns_subdomain_ok(const char *s, size_t len)
{
	size_t start = 0;

	if (len == 0 || len > 253)
		return 0;
	for (size_t i = 0; i <= len; i++) {
		char ch = i < len ? s[i] : '.';

		if (ch == '.') {
			if (i == start || s[start] == '-' || s[i - 1] == '-')
				return 0;
			start = i + 1;
		} else if (!(ch >= 'a' && ch <= 'z') &&
		    !(ch >= '0' && ch <= '9') && ch != '-') {
			return 0;
		}
	}
	return 1;
}

/* A Kubernetes label key: [prefix/]name. */
static int
label_key_ok(const char *s, size_t len)
{
	const char *slash = memchr(s, '/', len);
	size_t p;

	if (slash == NULL)
		return len > 0 && label_part_ok(s, len);
	p = (size_t)(slash - s);
	return dns_subdomain_ok(s, p) && len - p - 1 > 0 &&
	    label_part_ok(slash + 1, len - p - 1);
}

/* "gpu:TYPE". */
static int
gres_ok(const char *s, size_t len)
{
	return len > 4 && memcmp(s, "gpu:", 4) == 0 && name_ok(s + 4, len - 4);
}

/* Features of [A-Za-z0-9._-] joined by & or |. */
static int
constraint_ok(const char *s, size_t len)
{
	size_t start = 0;

	if (len == 0)
		return 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '&' && s[i] != '|') {
			if (!name_char(s[i]))
				return 0;
			continue;
		}
		if (i == start)
			return 0;
		start = i + 1;
	}
	return 1;
}

static const struct mf_form gpu_name_form = { name_ok, "^[A-Za-z0-9._-]{1,63}$",
	"a GPU name (1 to 63 characters of [A-Za-z0-9._-])" };
static const struct mf_form label_key_form = {
	label_key_ok,
	"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$",
	"a Kubernetes label key ([prefix/]name, name at most 63 characters of [A-Za-z0-9._-])"
};
static const struct mf_form label_value_form = { label_value_ok,
	"^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$",
	"a Kubernetes label value (at most 63 characters of [A-Za-z0-9._-])" };
static const struct mf_form gres_form = {
	gres_ok, "^gpu:[A-Za-z0-9._-]{1,63}$",
	"a Slurm GPU gres (gpu:TYPE, TYPE 1 to 63 characters of [A-Za-z0-9._-])"
};
static const struct mf_form partition_form = { name_ok,
	"^[A-Za-z0-9._-]{1,63}$",
	"a Slurm partition name (1 to 63 characters of [A-Za-z0-9._-])" };
static const struct mf_form constraint_form = {
	constraint_ok, "^[A-Za-z0-9._-]+([&|][A-Za-z0-9._-]+)*$",
	"a Slurm constraint (features of [A-Za-z0-9._-] joined by & or |, at most 255 characters)"
};

/* --- names from other tables ------------------------------------------- */

static const char *
fix_name(int v)
{
	return v >= 0 ? mf_fix_name((enum mf_fix)v) : NULL;
}

static const char *
estimator_name(int v)
{
	return v >= 0 ? mf_estimator_name((enum mf_estimator)v) : NULL;
}

/* --- the Job manifest --------------------------------------------------- */

/*
 * The rows keep a layout of their own: a row a few lines, members in the
 * order of struct mf_field.  clang-format would give each member a line
 * of its own, and the table four hundred lines more.
 */
/* clang-format off */
/* The workload's rows by index, for the conditions that name them. */
enum {
	W_KIND,
	W_METHOD,
	W_SEQ,
	W_BATCH,
	W_PRECISION,
	W_OPTIMIZER,
	W_CKPT,
	W_ATTENTION,
	W_LOSS,
	W_LOSS_CHUNKS,
	W_OFFLOAD,
	W_OPT_BACKWARD,
	W_LORA,
	W_QLORA,
	W_SHARDING,
	W_PARALLELISM,
	W_CONCURRENCY,
	W_CONTEXT,
	W_KV_DTYPE,
	W_WEIGHTS_DTYPE,
	W_GROUP,
	W_SERVER,
	W_GPU_UTIL,
	W_BATCHED,
	W_BLOCK,
	W_MAX_SEQS,
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
	{ "all-linear", MF_LORA_ALL_LINEAR, "q k v o gate up down", { 0 } },
	{ "attention", MF_LORA_ATTENTION, "q k v o", { 0 } },
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
	    .offset = WOFF(lora_targets), .flags = MF_FF_DEFAULT,
	    .names = lora_targets, .idef = MF_LORA_ALL_LINEAR,
	    .title = "LoRA targets",
	    .doc = "the linear layers that get adapters" },
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
};

static const struct mf_field sharding_rows[] = {
	{ .key = "gpus", .type = MF_FT_INT, .base = MF_FB_WORK,
	    .offset = WOFF(shard_gpus), .flags = MF_FF_REQUIRED, .min = 1,
	    .max = MF_JOB_MAX_GPUS, .idef = 1, .unit = "GPUs",
	    .title = "FSDP over GPUs",
	    .doc = "weights, gradients and optimizer state fully sharded over N GPUs" },
	{ .key = "reshardAfterForward", .type = MF_FT_BOOL,
	    .base = MF_FB_WORK, .offset = WOFF(reshard_after_forward),
	    .flags = MF_FF_DEFAULT, .idef = 1, .title = "Reshard after forward",
	    .doc = "false keeps each layer's gathered weights from forward to backward" },
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
	    .offset = WOFF(kind), .flags = MF_FF_DEFAULT, .names = kinds,
	    .idef = MF_TRAINING, .title = "Kind",
	    .doc = "what the job does with the model" },
	[W_METHOD] = { .key = "method", .type = MF_FT_ENUM,
	    .base = MF_FB_WORK, .offset = WOFF(method),
	    .flags = MF_FF_DEFAULT | MF_FF_VALUE_WHEN, .names = methods,
	    .idef = MF_FULL, .title = "Method",
	    .doc = "which weights are trained" },
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
	[W_OFFLOAD] = { .key = "activationOffload", .type = MF_FT_BOOL,
	    .base = MF_FB_WORK, .offset = WOFF(activation_offload),
	    .flags = MF_FF_DEFAULT, .idef = 0, .when = { TRAINING },
	    .title = "Activation offload",
	    .doc = "the layers' checkpointed inputs in host memory, as torchtune's OffloadActivations; needs gradientCheckpointing true" },
	[W_OPT_BACKWARD] = { .key = "optimizerInBackward", .type = MF_FT_BOOL,
	    .base = MF_FB_WORK, .offset = WOFF(optimizer_in_backward),
	    .flags = MF_FF_DEFAULT, .idef = 0, .when = { TRAINING },
	    .title = "Optimizer in backward",
	    .doc = "each weight stepped and its gradient freed as soon as it is ready, as torchtune runs it: full fine-tuning, bf16-true or fp32, adamw, one GPU" },
	[W_LORA] = { .key = "lora", .type = MF_FT_OBJECT, SUB(lora_rows),
	    .when = { TRAINING,
	        WHEN(W_METHOD, BIT(MF_LORA) | BIT(MF_QLORA)) },
	    .title = "LoRA", .doc = "the adapters of method lora or qlora" },
	[W_QLORA] = { .key = "qlora", .type = MF_FT_OBJECT, SUB(qlora_rows),
	    .when = { TRAINING, WHEN(W_METHOD, BIT(MF_QLORA)) },
	    .title = "QLoRA", .doc = "how the 4-bit weights are stored" },
	[W_SHARDING] = { .key = "sharding", .type = MF_FT_OBJECT,
	    .flags = MF_FF_REQUIRES, SUB(sharding_rows),
	    .when = { TRAINING, WHEN(W_METHOD, BIT(MF_FULL)) },
	    .title = "FSDP", .doc = "FSDP full shard of full fine-tuning" },
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
	[W_KV_DTYPE] = { .key = "kvCacheDtype", .type = MF_FT_ENUM,
	    .base = MF_FB_WORK, .offset = WOFF(kv_dtype),
	    .flags = MF_FF_DEFAULT, .names = kv_dtypes, .idef = MF_KV_BF16,
	    .when = { INFERENCE }, .title = "KV cache dtype",
	    .doc = "the dtype of the KV cache" },
	[W_WEIGHTS_DTYPE] = { .key = "weightsDtype", .type = MF_FT_ENUM,
	    .base = MF_FB_WORK, .offset = WOFF(weights_dtype),
	    .names = weights_dtypes, .idef = MF_WD_DEFAULT,
	    .text = "that of precision", .when = { INFERENCE },
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
	    .text = "vLLM's default for the card: 16384 from 160 GiB, 8192 from 70 GiB but an A100, else 2048",
	    .when = { INFERENCE, VLLM }, .unit = "tokens",
	    .title = "Batched tokens",
	    .doc = "tokens of one forward, the activation peak of the profile run" },
	[W_BLOCK] = { .key = "blockSize", .type = MF_FT_INT,
	    .base = MF_FB_WORK, .offset = WOFF(block_size),
	    .flags = MF_FF_DEFAULT, .min = 1, .max = MF_JOB_MAX_BLOCK,
	    .idef = 16, .when = { INFERENCE, VLLM }, .unit = "tokens",
	    .title = "KV block size",
	    .doc = "tokens a KV cache block holds; a sequence takes whole blocks" },
	[W_MAX_SEQS] = { .key = "maxNumSeqs", .type = MF_FT_INT,
	    .base = MF_FB_WORK, .offset = WOFF(max_num_seqs),
	    .min = 1, .max = MF_JOB_MAX_CONCURRENCY,
	    .text = "vLLM's default for the card: 1024 from 70 GiB but an A100, else 256",
	    .when = { INFERENCE, VLLM }, .unit = "sequences",
	    .title = "Max sequences",
	    .doc = "vLLM's --max-num-seqs: the sequences of its profile run, apart from concurrency" },
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
	    .doc = "hours the job takes on one GPU of relativeThroughput 1.0" },
};

static const struct mf_field limits_rows[] = {
	{ .key = "maxHourlyPrice", .type = MF_FT_NUMBER, .base = MF_FB_JOB,
	    .offset = JOFF(max_hourly_price), .lo = 0, .hi = MF_JOB_MAX_MONEY,
	    .ddef = -1, .unit = "USD per hour", .title = "Max $/hour",
	    .doc = "the most the whole placement may cost an hour (price x count)" },
	{ .key = "maxCost", .type = MF_FT_NUMBER, .base = MF_FB_JOB,
	    .offset = JOFF(max_cost), .lo = 0, .hi = MF_JOB_MAX_MONEY,
	    .ddef = -1, .unit = "USD", .title = "Max cost ($)",
	    .doc = "the most the job may cost to finish; needs duration.referenceHours" },
	{ .key = "deadlineHours", .type = MF_FT_NUMBER, .base = MF_FB_JOB,
	    .offset = JOFF(deadline_hours), .lo = 1e-6, .hi = MF_JOB_MAX_HOURS,
	    .ddef = -1, .unit = "hours", .title = "Deadline (hours)",
	    .doc = "hours the job must finish in; needs duration.referenceHours" },
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
	    .flags = MF_FF_REQUIRED | MF_FF_FIRST, .text = "Job",
	    .title = "Kind", .doc = "Job" },
	{ .key = "metadata", .type = MF_FT_OBJECT,
	    .flags = MF_FF_REQUIRED | MF_FF_REQUIRES, SUB(metadata_rows),
	    .title = "Metadata", .doc = "the job's name" },
	{ .key = "spec", .type = MF_FT_OBJECT, .flags = MF_FF_REQUIRED,
	    SUB(spec_rows), .title = "Spec", .doc = "what the job needs" },
};

const struct mf_field mf_fields_spec = { .key = "spec",
	.type = MF_FT_OBJECT, SUB(spec_rows), .title = "Spec",
	.doc = "a Job manifest's spec (the annotation memfloor.dev/spec)" };

const struct mf_field mf_fields_job = { .key = "Job", .type = MF_FT_OBJECT,
	.flags = MF_FF_REQUIRES | MF_FF_FIRST, SUB(job_rows),
	.title = "memfloor Job manifest",
	.doc = "a job to place on the GPU cheapest to finish it (design 3)" };

/* --- the GPU catalogue -------------------------------------------------- */

static const struct mf_field slurm_rows[] = {
	{ .key = "gres", .type = MF_FT_STRING, .base = MF_FB_GPU,
	    .offset = GOFF(slurm.gres), .flags = MF_FF_OWN, .form = &gres_form,
	    .max = 67, .title = "gres",
	    .doc = "gpu:TYPE as in gres.conf; cards that share one have the same memory" },
	{ .key = "partition", .type = MF_FT_STRING, .base = MF_FB_GPU,
	    .offset = GOFF(slurm.partition), .flags = MF_FF_OWN,
	    .form = &partition_form, .max = 63, .title = "Partition",
	    .doc = "the partition a job on this card goes to" },
	{ .key = "constraint", .type = MF_FT_STRING, .base = MF_FB_GPU,
	    .offset = GOFF(slurm.constraint), .flags = MF_FF_OWN,
	    .form = &constraint_form, .max = 255, .title = "Constraint",
	    .doc = "node features a job on this card asks for" },
};

/* What vLLM finds on a card (design 19; docs/serving.md). */
static const struct mf_field vllm_rows[] = {
	{ .key = "cudaMemory", .type = MF_FT_BYTES, .base = MF_FB_GPU,
	    .offset = GOFF(cuda_memory), .offset2 = GOFF(vllm_format),
	    .min = 1, .unit = "bytes", .title = "CUDA memory",
	    .doc = "the total CUDA reports, vLLM's total_gpu_memory, at most memory; vLLM's budget is a share of it" },
	{ .key = "nonTorchMemory", .type = MF_FT_BYTES, .base = MF_FB_GPU,
	    .offset = GOFF(non_torch), .offset2 = GOFF(vllm_format),
	    .flags = MF_FF_DEFAULT, .min = 1, .idef = MF_NON_TORCH_DEFAULT,
	    .unit = "bytes", .title = "Memory outside PyTorch",
	    .doc = "what vLLM holds outside PyTorch at tensor parallel 1 (cuBLAS workspaces)" },
	{ .key = "allReduceMemory", .type = MF_FT_BYTES, .base = MF_FB_GPU,
	    .offset = GOFF(all_reduce), .offset2 = GOFF(vllm_format),
	    .flags = MF_FF_DEFAULT, .min = 1, .idef = MF_ALL_REDUCE_DEFAULT,
	    .unit = "bytes", .title = "All-reduce memory",
	    .doc = "what NCCL and the custom all-reduce add at tensor parallel 2 or more" },
};

static const struct mf_field label_value = { .key = "*",
	.type = MF_FT_STRING, .form = &label_value_form, .max = 63 };

static const struct mf_field card_rows[] = {
	{ .key = "name", .type = MF_FT_STRING, .base = MF_FB_GPU,
	    .offset = GOFF(name), .flags = MF_FF_REQUIRED | MF_FF_OWN,
	    .form = &gpu_name_form, .max = 63, .title = "Name",
	    .doc = "unique in the catalogue; placements name it" },
	{ .key = "memory", .type = MF_FT_MEMORY, .base = MF_FB_GPU,
	    .offset = GOFF(memory), .offset2 = GOFF(memory_format),
	    .flags = MF_FF_REQUIRED, .min = MF_QTY_MEMORY_MIN,
	    .unit = "bytes", .title = "Memory",
	    .doc = "per GPU, what its driver reports (nvidia-smi's total, e.g. 81559Mi)" },
	{ .key = "hourlyPrice", .type = MF_FT_NUMBER, .base = MF_FB_GPU,
	    .offset = GOFF(hourly_price), .flags = MF_FF_REQUIRED, .lo = 0,
	    .hi = 1e6, .unit = "USD per GPU-hour", .title = "Price",
	    .doc = "what one GPU costs an hour" },
	{ .key = "relativeThroughput", .type = MF_FT_NUMBER,
	    .base = MF_FB_GPU, .offset = GOFF(throughput),
	    .flags = MF_FF_REQUIRED, .lo = 0, .hi = 1000, .lo_open = 1,
	    .title = "Throughput",
	    .doc = "training speed relative to the reference GPU (H100 SXM = 1.0)" },
	{ .key = "gpusPerNode", .type = MF_FT_INT, .base = MF_FB_GPU,
	    .offset = GOFF(gpus_per_node), .flags = MF_FF_DEFAULT, .min = 1,
	    .max = MF_CAT_MAX_COUNT, .idef = 8, .unit = "GPUs",
	    .title = "GPUs a node", .doc = "GPUs of this type one node holds" },
	{ .key = "maxNodes", .type = MF_FT_INT, .base = MF_FB_GPU,
	    .offset = GOFF(max_nodes), .flags = MF_FF_DEFAULT, .min = 1,
	    .max = MF_CAT_MAX_COUNT, .idef = 1, .unit = "nodes",
	    .title = "Max nodes", .doc = "most nodes one job may span" },
	{ .key = "maxCount", .type = MF_FT_INT, .base = MF_FB_GPU,
	    .offset = GOFF(max_count), .min = 1, .max = MF_CAT_MAX_COUNT,
	    .text = "gpusPerNode x maxNodes, at most 1024", .unit = "GPUs",
	    .title = "Max count",
	    .doc = "most GPUs of this type one job may get, at most gpusPerNode x maxNodes" },
	{ .key = "labels", .type = MF_FT_MAP, .flags = MF_FF_HOOK,
	    .form = &label_key_form, .item = &label_value,
	    .max = MF_CAT_MAX_LABELS, .title = "Node labels",
	    .doc = "the node labels a Kubernetes placement selects on" },
	{ .key = "slurm", .type = MF_FT_OBJECT, .flags = MF_FF_NONEMPTY,
	    SUB(slurm_rows), .title = "Slurm",
	    .doc = "how a Slurm job asks for this card (design 16)" },
	{ .key = "vllm", .type = MF_FT_OBJECT, .flags = MF_FF_NONEMPTY,
	    SUB(vllm_rows), .title = "vLLM",
	    .doc = "what vLLM finds on this card: its budget's total and the memory outside PyTorch" },
};

const struct mf_field mf_fields_gpu = { .key = "gpus[]",
	.type = MF_FT_OBJECT, .flags = MF_FF_REQUIRES, SUB(card_rows),
	.title = "GPU", .doc = "a card jobs may be placed on" };

static const struct mf_fname selects[] = {
	{ "product", MF_K8S_SELECT_PRODUCT,
	    "the placed card's labels in the pod's nodeSelector", { 0 } },
	{ "memory", MF_K8S_SELECT_MEMORY,
	    "a required node affinity on nvidia.com/gpu.memory, preferred terms for the card and its alternatives",
	    { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_field kubernetes_rows[] = {
	{ .key = "select", .type = MF_FT_ENUM, .base = MF_FB_CAT,
	    .offset = COFF(k8s_select), .flags = MF_FF_DEFAULT,
	    .names = selects, .idef = MF_K8S_SELECT_PRODUCT,
	    .title = "Select nodes on",
	    .doc = "how an admission review selects nodes (design 18)" },
};

static const struct mf_field time_factor = { .key = "*",
	.type = MF_FT_NUMBER, .flags = MF_FF_DEFAULT, .lo = 0, .hi = 100,
	.lo_open = 1, .ddef = 1.0 };

static const struct mf_field time_factor_rows[] = {
	{ .key = "checkpointing", .type = MF_FT_NUMBER,
	    .flags = MF_FF_DEFAULT, .lo = 0, .hi = 100, .lo_open = 1,
	    .ddef = 1.35,
	    .doc = "full recomputation costs 30-40% more time (Korthikanti et al., 2022)" },
};

enum { C_ESTIMATOR = 2, C_GRAPHS = 6 };

static const struct mf_field catalog_rows[] = {
	{ .key = "apiVersion", .type = MF_FT_CONST,
	    .flags = MF_FF_REQUIRED, .text = "memfloor.dev/v1",
	    .title = "API version", .doc = "memfloor.dev/v1" },
	{ .key = "kind", .type = MF_FT_CONST,
	    .flags = MF_FF_REQUIRED | MF_FF_FIRST, .text = "GpuCatalog",
	    .title = "Kind", .doc = "GpuCatalog" },
	[C_ESTIMATOR] = { .key = "estimator", .type = MF_FT_ENUM,
	    .base = MF_FB_CAT, .offset = COFF(estimator),
	    .flags = MF_FF_DEFAULT, .name_of = estimator_name,
	    .idef = MF_EST_PYTORCH, .title = "Estimator",
	    .doc = "the arithmetic of estimates (design 13); ?estimator= overrides it" },
	{ .key = "headroom", .type = MF_FT_NUMBER, .base = MF_FB_CAT,
	    .offset = COFF(headroom), .flags = MF_FF_DEFAULT, .lo = 0,
	    .hi = 0.9, .hi_open = 1, .ddef = 0.10, .unit = "fraction",
	    .title = "Headroom",
	    .doc = "share of every card kept free (CUDA context, allocator)" },
	{ .key = "multiGpuEfficiency", .type = MF_FT_NUMBER,
	    .base = MF_FB_CAT, .offset = COFF(multi_gpu_efficiency),
	    .flags = MF_FF_DEFAULT, .lo = 0, .hi = 1, .lo_open = 1,
	    .ddef = 0.9, .unit = "fraction", .title = "Multi-GPU efficiency",
	    .doc = "each doubling of GPUs keeps this share of linear speed-up" },
	{ .key = "interNodeEfficiency", .type = MF_FT_NUMBER,
	    .base = MF_FB_CAT, .offset = COFF(inter_node_efficiency),
	    .flags = MF_FF_DEFAULT, .lo = 0, .hi = 1, .lo_open = 1,
	    .ddef = 0.8, .unit = "fraction", .title = "Inter-node efficiency",
	    .doc = "each doubling of nodes keeps this share of speed" },
	[C_GRAPHS] = { .key = "cudaGraphReserve", .type = MF_FT_BYTES,
	    .base = MF_FB_CAT, .offset = COFF(cuda_graph_reserve),
	    .offset2 = COFF(cuda_graph_format), .flags = MF_FF_DEFAULT,
	    .min = 1, .idef = MF_GRAPH_RESERVE_DEFAULT, .unit = "bytes",
	    .title = "CUDA graph reserve",
	    .doc = "what a vllm server keeps for CUDA graphs (design 14)" },
	{ .key = "timeFactors", .type = MF_FT_MAP, .base = MF_FB_CAT,
	    .offset = COFF(time_factor), SUB(time_factor_rows),
	    .item = &time_factor, .name_of = fix_name, .noun = "a fix",
	    .title = "Time factors",
	    .doc = "the run-time multiplier of each fix, 1.0 unless given" },
	{ .key = "kubernetes", .type = MF_FT_OBJECT, SUB(kubernetes_rows),
	    .title = "Kubernetes", .doc = "how reviews select nodes" },
	{ .key = "gpus", .type = MF_FT_LIST,
	    .flags = MF_FF_REQUIRED | MF_FF_HOOK, .item = &mf_fields_gpu,
	    .noun = "GPU", .min = 1, .max = MF_CAT_MAX_GPUS, .title = "GPUs",
	    .doc = "the cards, at least one" },
};

const struct mf_field mf_fields_catalog = { .key = "GpuCatalog",
	.type = MF_FT_OBJECT, .flags = MF_FF_REQUIRES | MF_FF_FIRST,
	SUB(catalog_rows),
	.title = "memfloor GPU catalogue",
	.doc = "the cards jobs are placed on, with their prices (design 4)" };

/* clang-format on */

const struct mf_field *
mf_fields_document(const char *kind)
{
	if (kind == NULL || strcmp(kind, "Job") == 0)
		return &mf_fields_job;
	if (strcmp(kind, "GpuCatalog") == 0)
		return &mf_fields_catalog;
	return NULL;
}

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
	/* What the catalogue gives a workload, until a catalogue does. */
	workload_template.graph_reserve = catalog_rows[C_GRAPHS].idef;
	workload_template.non_torch = MF_NON_TORCH_DEFAULT;
	workload_template.all_reduce = MF_ALL_REDUCE_DEFAULT;
	workload_template.estimator =
	    (enum mf_estimator)catalog_rows[C_ESTIMATOR].idef;
}

void
mf_workload_defaults(struct mf_workload *w)
{
	pthread_once(&template_once, build_template);
	*w = workload_template;
}
