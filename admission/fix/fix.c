#include "fix.h"

#include <stdio.h>
#include <string.h>

#include "../estimate/estimate.h"
#include "../base/internal.h"

static void apply(struct mf_workload *w, enum mf_fix f, int64_t gpus);

/*
 * Whether fix f keeps the optimizer in backward and activation offloading
 * of w as torchtune runs them and the estimate models them
 * (mf_est_oib_refused, mf_est_offload_refused), and compile and float8
 * as the estimate models them (mf_est_compile_refused,
 * mf_est_float8_refused: not lora, qlora or fsdp): with the optimizer in
 * backward not microbatch, whose gradient accumulation torchtune refuses
 * with optimizer_in_bwd, nor count, more GPUs; with either, not a fix
 * whose workload is refused (autocast's bf16, lora, qlora and fsdp with
 * the optimizer in backward; fsdp with offloading).
 */
static int
keeps_recipe(const struct mf_workload *w, enum mf_fix f)
{
	struct mf_workload t = *w;

	if (w->optimizer_in_backward &&
	    (f == MF_FIX_MICROBATCH || f == MF_FIX_REPLICAS))
		return 0;
	/* Two GPUs a pipeline stage. */
	apply(&t, f, 2 * w->pipeline);
	return !mf_est_oib_refused(&t, 1, NULL, 0) &&
	    !mf_est_offload_refused(&t, NULL, 0) &&
	    !mf_est_compile_refused(NULL, &t, NULL, 0) &&
	    !mf_est_float8_refused(NULL, &t, NULL, 0);
}

/* When fix f changes anything for the workload w of job. */
static int
applies(const struct mf_job *job, const struct mf_workload *w, enum mf_fix f)
{
	int train = w->kind == MF_TRAINING;

	if (train &&
	    (w->optimizer_in_backward || w->activation_offload || w->compile ||
	        w->float8 != MF_F8_NONE) &&
	    !keeps_recipe(w, f))
		return 0;
	switch (f) {
	case MF_FIX_SDPA:
		return train && w->attention == MF_EAGER;
	case MF_FIX_MICROBATCH:
		return train && w->micro_batch > 1;
	case MF_FIX_AUTOCAST:
		return w->precision == MF_FP32;
	case MF_FIX_CHECKPOINTING:
		return train && !w->checkpointing;
	case MF_FIX_ADAM8BIT:
		return train && w->optimizer == MF_ADAMW;
	case MF_FIX_LORA:
		return train && w->method == MF_FULL;
	case MF_FIX_QLORA:
		return train && w->method != MF_QLORA;
	case MF_FIX_FSDP:
		/* Full fine-tuning or LoRA not yet sharded, on more than one
		 * GPU if the job asked for a count (QLoRA's sharding is not
		 * modelled: mf_est_shard_refused). */
		return train && w->method != MF_QLORA && w->shard_gpus <= 1 &&
		    w->tensor * w->pipeline == 1 &&
		    (!job->count_given || job->count > 1);
	case MF_FIX_KVFP8:
		return !train && w->kv_dtype != MF_KV_FP8;
	case MF_FIX_INT8:
		return !train && w->weights_dtype != MF_WD_INT8 &&
		    w->weights_dtype != MF_WD_INT4 &&
		    w->weights_dtype != MF_WD_FP8;
	case MF_FIX_INT4:
		return !train && w->weights_dtype != MF_WD_INT4;
	case MF_FIX_TENSOR:
		/* On a count of its own: not when the job asked for one. */
		return !train && w->tensor == 1 && w->pipeline == 1 &&
		    !job->count_given;
	case MF_FIX_REPLICAS:
		/* Replicas of the job as it is; FSDP takes its own count. */
		return w->shard_gpus <= 1;
	case MF_FIX_CONTEXT:
	case MF_FIX_CONCURRENCY:
		return !train;
	case MF_FIX_COUNT:
		break;
	}
	return 0;
}

/* The facts of each fix; a row's fields are those of struct mf_fix_info. */
static const struct mf_fix_info table[MF_FIX_COUNT] = {
	[MF_FIX_SDPA] = { "sdpa", "spec.workload.attention", "sdpa",
	    MF_FIXV_STRING,
	    "AutoModelForCausalLM.from_pretrained(..., attn_implementation=\"sdpa\")",
	    0, 1, 1, NULL },
	[MF_FIX_MICROBATCH] = { "microbatch", "spec.workload.microBatch", "1",
	    MF_FIXV_INT,
	    "per_device_train_batch_size=1, gradient_accumulation_steps=<old micro-batch>",
	    0, 1, 1, NULL },
	[MF_FIX_AUTOCAST] = { "autocast", "spec.workload.precision", "bf16",
	    MF_FIXV_STRING,
	    "with torch.autocast(\"cuda\", dtype=torch.bfloat16): loss = model(**batch).loss",
	    0, 1, 1, NULL },
	[MF_FIX_CHECKPOINTING] = { "checkpointing",
	    "spec.workload.gradientCheckpointing", "true", MF_FIXV_BOOL,
	    "torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=False)",
	    0, 1, 1, NULL },
	[MF_FIX_ADAM8BIT] = { "adam8bit", "spec.workload.optimizer", "adam8bit",
	    MF_FIXV_STRING,
	    "optimizer = bnb.optim.Adam8bit(model.parameters(), lr=lr)", 0, 0,
	    1, NULL },
	[MF_FIX_LORA] = { "lora", "spec.workload.method", "lora",
	    MF_FIXV_STRING,
	    "model = peft.get_peft_model(model, LoraConfig(r=16, target_modules=\"all-linear\"))",
	    1, 0, 1, NULL },
	[MF_FIX_QLORA] = { "qlora", "spec.workload.method", "qlora",
	    MF_FIXV_STRING,
	    "from_pretrained(..., quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\")), then peft.get_peft_model(model, LoraConfig(r=16, target_modules=\"all-linear\"))",
	    1, 0, 1, NULL },
	[MF_FIX_FSDP] = { "fsdp", "spec.workload.sharding.gpus", NULL,
	    MF_FIXV_GPUS,
	    "for layer in model.model.layers: fully_shard(layer); fully_shard(model)",
	    0, 0, 1, NULL },
	[MF_FIX_KVFP8] = { "kvfp8", "spec.workload.kvCacheDtype", "fp8",
	    MF_FIXV_STRING, "vllm serve MODEL --kv-cache-dtype fp8", 0, 0, 1,
	    NULL },
	[MF_FIX_INT8] = { "int8", "spec.workload.weightsDtype", "int8",
	    MF_FIXV_STRING,
	    "vllm serve MODEL-W8A8 (the model's int8 checkpoint, e.g. made with llm-compressor)",
	    0, 0, 1, NULL },
	[MF_FIX_INT4] = { "int4", "spec.workload.weightsDtype", "int4",
	    MF_FIXV_STRING,
	    "vllm serve MODEL-AWQ (the model's int4 AWQ or GPTQ checkpoint, group size 128)",
	    0, 0, 1, NULL },
	[MF_FIX_TENSOR] = { "tensor", "spec.workload.parallelism.tensor", NULL,
	    MF_FIXV_GPUS, "vllm serve MODEL --tensor-parallel-size N", 0, 0, 1,
	    NULL },
	[MF_FIX_REPLICAS] = { "count", "spec.resources.gpu.count", NULL,
	    MF_FIXV_GPUS,
	    "torchrun --nproc-per-node N train.py, the model wrapped in torch.nn.parallel.DistributedDataParallel(model) (a global batch N times the one GPU's, or its accumulation steps divided by N)",
	    0, 0, 1, "vllm serve MODEL --data-parallel-size N" },
	[MF_FIX_CONTEXT] = { "context", "spec.workload.contextLength", NULL,
	    MF_FIXV_AMOUNT, "vllm serve MODEL --max-model-len N", 1, 0, 0,
	    NULL },
	[MF_FIX_CONCURRENCY] = { "concurrency", "spec.workload.concurrency",
	    NULL, MF_FIXV_AMOUNT, "vllm serve MODEL --max-num-seqs N", 1, 0, 0,
	    NULL },
};

const struct mf_fix_info *
mf_fix_info(enum mf_fix f)
{
	return (unsigned)f < MF_FIX_COUNT ? &table[f] : NULL;
}

const char *
mf_fix_name(enum mf_fix f)
{
	return (unsigned)f < MF_FIX_COUNT ? table[f].id : NULL;
}

int
mf_fix_lookup(const char *name)
{
	for (int i = 0; i < MF_FIX_COUNT; i++)
		if (strcmp(table[i].id, name) == 0)
			return i;
	return -1;
}

char *
mf_fix_ids(char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; i < MF_FIX_COUNT; i++) {
		const char *id = table[i].id;
		size_t k = strlen(id) + (i > 0 ? 2 : 0);

		if (n + k >= size)
			break;
		memcpy(buf + n, ", ", i > 0 ? 2 : 0);
		memcpy(buf + n + (i > 0 ? 2 : 0), id, strlen(id) + 1);
		n += k;
	}
	return buf;
}

const char *
mf_fix_code(enum mf_fix f, int inference)
{
	const struct mf_fix_info *fi = mf_fix_info(f);

	if (fi == NULL)
		return NULL;
	return inference && fi->serve_code != NULL ? fi->serve_code : fi->code;
}

unsigned
mf_fix_order(unsigned fixes)
{
	unsigned key = 0, bit;
	int f;

	for (; fixes != 0; fixes &= fixes - 1) {
		bit = fixes & (0u - fixes);
		f = __builtin_ctz(bit);
		if (f < MF_FIX_COUNT && table[f].modelling)
			key |= bit << MF_FIX_COUNT;
		else
			key |= bit;
	}
	return key;
}

char *
mf_fix_value_text(enum mf_fix f, int64_t amount, char *buf, size_t size)
{
	const struct mf_fix_info *fi = mf_fix_info(f);

	if (fi == NULL)
		snprintf(buf, size, "?");
	else if (fi->kind == MF_FIXV_AMOUNT || fi->kind == MF_FIXV_GPUS)
		snprintf(buf, size, "%lld", (long long)amount);
	else
		snprintf(buf, size, "%s", fi->value);
	return buf;
}

int
mf_fix_applies(const struct mf_job *job, const struct mf_workload *w,
    enum mf_fix fix)
{
	return (unsigned)fix < MF_FIX_COUNT && applies(job, w, fix);
}

int64_t
mf_fix_gpus_value(enum mf_fix f, const struct mf_workload *w, int64_t gpus)
{
	/* A tensor-parallel group is one pipeline stage's GPUs. */
	return f == MF_FIX_TENSOR ? gpus / w->pipeline : gpus;
}

/* What fix f does to a workload: the value of the row's field. */
static void
apply(struct mf_workload *w, enum mf_fix f, int64_t gpus)
{
	switch (f) {
	case MF_FIX_SDPA:
		w->attention = MF_SDPA;
		break;
	case MF_FIX_MICROBATCH:
		w->micro_batch = 1;
		break;
	case MF_FIX_AUTOCAST:
		w->precision = MF_BF16;
		break;
	case MF_FIX_CHECKPOINTING:
		w->checkpointing = MF_CKPT_FULL;
		w->ckpt_every = 1;
		break;
	case MF_FIX_ADAM8BIT:
		w->optimizer = MF_ADAM8BIT;
		break;
	case MF_FIX_LORA:
		w->method = MF_LORA;
		break;
	case MF_FIX_QLORA:
		w->method = MF_QLORA;
		break;
	case MF_FIX_FSDP:
		w->shard_gpus = gpus;
		break;
	case MF_FIX_KVFP8:
		w->kv_dtype = MF_KV_FP8;
		break;
	case MF_FIX_INT8:
		w->weights_dtype = MF_WD_INT8;
		break;
	case MF_FIX_INT4:
		w->weights_dtype = MF_WD_INT4;
		break;
	case MF_FIX_TENSOR:
		w->tensor = mf_fix_gpus_value(f, w, gpus);
		break;
	case MF_FIX_REPLICAS:
	case MF_FIX_CONTEXT:
	case MF_FIX_CONCURRENCY:
	case MF_FIX_COUNT:
		break;
	}
}

void
mf_fix_apply(struct mf_workload *w, unsigned fixes, int64_t gpus)
{
	for (unsigned left = fixes; left != 0;)
		apply(w, mf_fix_take(&left), gpus);
}

int
mf_fix_compatible(unsigned fixes)
{
	unsigned lora = MF_FIXBIT(MF_FIX_LORA) | MF_FIXBIT(MF_FIX_QLORA);
	unsigned quant = MF_FIXBIT(MF_FIX_INT8) | MF_FIXBIT(MF_FIX_INT4);
	unsigned split = MF_FIXBIT(MF_FIX_FSDP) | MF_FIXBIT(MF_FIX_TENSOR);

	if ((fixes & lora) == lora || (fixes & quant) == quant)
		return 0;
	/* fsdp and tensor choose their own counts. */
	if ((fixes & MF_FIXBIT(MF_FIX_REPLICAS)) && (fixes & split))
		return 0;
	/* The qlora and fsdp fixes together are not offered: QLoRA under
	 * FSDP is modelled without offload or PEFT's preparation only
	 * (mf_est_shard_refused). */
	return !((fixes & MF_FIXBIT(MF_FIX_QLORA)) &&
	    (fixes & MF_FIXBIT(MF_FIX_FSDP)));
}
