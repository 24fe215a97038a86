/*
 * estimate.c: an estimate's frame: the workload's domain, the
 * bucket and estimator names, and mf_est_compute, which asks the estimator
 * in force for a training step's buckets (est_post.c, est_pytorch.c), or
 * est_serve.c for an inference job's, lays them out over the job's GPUs
 * (layout.c) and sums what one GPU holds.
 *
 * Every figure is computed with checked arithmetic: an intermediate that
 * would pass 2^63 - 1 becomes -1 and poisons everything computed from it,
 * and mf_est_compute turns a poisoned bucket into MF_ERANGE.  A workload
 * outside its domain (a negative count, shard_gpus < 1, an enum value out
 * of range) is MF_EINVAL and leaves *out untouched.
 *
 * Each bucket's formula text is written by the function that computes
 * its bytes, from the same terms, so the two cannot disagree
 * (test_estimate.c evaluates every formula back to its bytes).
 */
#include "estimate.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "est.h"

const char *
mf_bucket_name(enum mf_bucket b)
{
	static const char *const names[MF_B_COUNT] = {
		[MF_B_WEIGHTS] = "weights",
		[MF_B_GRADIENTS] = "gradients",
		[MF_B_OPTIMIZER] = "optimizer",
		[MF_B_ADAPTERS] = "adapters",
		[MF_B_ACTIVATIONS] = "activations",
		[MF_B_LOGITS] = "logits",
		[MF_B_TRANSIENT] = "transient",
		[MF_B_KVCACHE] = "kvCache",
		[MF_B_SHARDING] = "shardingBuffers",
		[MF_B_GRAPHS] = "cudaGraphs",
		[MF_B_COMM] = "commBuffers",
		[MF_B_NONTORCH] = "nonTorch",
		[MF_B_PAGED] = "pagedOptimizer",
		[MF_B_LOADING] = "loading",
	};

	if ((unsigned)b >= MF_B_COUNT)
		return NULL;
	return names[b];
}

enum mf_peak_moment
mf_est_peak_moment(const struct mf_estimate *e)
{
	return e->bucket[MF_B_LOADING] > 0 ? MF_PEAK_LOADING : MF_PEAK_STEP;
}

const char *
mf_peak_moment_name(enum mf_peak_moment p)
{
	return p == MF_PEAK_LOADING ? "loading" : "step";
}

/* The estimators, by enum mf_estimator. */
static const struct mf_est_ops *const estimators[MF_EST_COUNT] = {
	[MF_EST_PYTORCH] = &mf_est_pytorch,
	[MF_EST_POST] = &mf_est_post,
};

const char *
mf_estimator_name(enum mf_estimator e)
{
	return (unsigned)e < MF_EST_COUNT ? estimators[e]->name : NULL;
}

enum mf_rc
mf_estimator_parse(const char *name, enum mf_estimator *out)
{
	for (int i = 0; name != NULL && i < MF_EST_COUNT; i++)
		if (strcmp(name, estimators[i]->name) == 0) {
			*out = (enum mf_estimator)i;
			return MF_OK;
		}
	return MF_EINVAL;
}

/*
 * optimizerInBackward's domain (estimate.h).  The precision names are the
 * manifest's (job_fields.c); bf16, the default, says so.
 */
static const char *const oib_precisions[] = {
	[MF_BF16] = "bf16 (the default)",
	[MF_FP16] = "fp16",
	[MF_FP32] = "fp32",
	[MF_BF16_MIXED] = "bf16-mixed",
	[MF_BF16_TRUE] = "bf16-true",
	[MF_FP16_MIXED] = "fp16-mixed",
};

static const char *
oib_precision(enum mf_precision p)
{
	if ((unsigned)p >= sizeof(oib_precisions) / sizeof(oib_precisions[0]))
		return "?";
	return oib_precisions[p];
}

int
mf_est_oib_refused(const struct mf_workload *w, int64_t gpus, char *why,
    size_t size)
{
	if (!w->optimizer_in_backward)
		return 0;
	if (w->method != MF_FULL)
		snprintf(why, size,
		    "applies to full fine-tuning only: torchtune 0.6.1 steps the optimizer in backward in its full fine-tuning recipes (full_finetune_single_device, full_finetune_distributed), and its LoRA and QLoRA recipes have no optimizer_in_bwd; this job has method: %s",
		    w->method == MF_LORA ? "lora" : "qlora");
	else if (w->precision == MF_FP16)
		snprintf(why, size,
		    "is modelled with precision bf16-true or fp32, as torchtune runs it, and torchtune's full fine-tuning recipes refuse fp16; this job has precision: fp16");
	else if (w->precision != MF_BF16_TRUE && w->precision != MF_FP32)
		snprintf(why, size,
		    "is modelled with precision bf16-true or fp32, as torchtune runs it (the weights their own master copy): fp32 master weights (bf16) and autocast (bf16-mixed, fp16-mixed) are not torchtune's and were not measured; this job has precision: %s",
		    oib_precision(w->precision));
	else if (w->optimizer == MF_SGD)
		snprintf(why, size,
		    "is modelled with optimizer adamw, adam8bit or paged-adamw8bit (one optimizer for each weight, as torchtune makes them): SGD was not measured; this job has optimizer: sgd");
	else if (w->shard_gpus > 1)
		snprintf(why, size,
		    "is not modelled with FSDP: torchtune 0.6.1's full_finetune_distributed steps FSDP2's sharded weights in backward, which has not been measured; this job has sharding.gpus: %lld",
		    (long long)w->shard_gpus);
	else if (w->tensor > 1 || w->pipeline > 1 || w->expert > 1)
		snprintf(why, size,
		    "is not modelled with tensor, pipeline or expert parallelism, which it has not been measured with; this job has parallelism tensor %lld, pipeline %lld, expert %lld",
		    (long long)w->tensor, (long long)w->pipeline,
		    (long long)w->expert);
	else if (gpus > 1)
		snprintf(why, size,
		    "is modelled on one GPU: torchtune's recipe for several shards with FSDP, and DistributedDataParallel holds every gradient in its buckets; this job has resources.gpu.count: %lld",
		    (long long)gpus);
	else
		return 0;
	return 1;
}

int
mf_est_offload_refused(const struct mf_workload *w, char *why, size_t size)
{
	if (!w->activation_offload)
		return 0;
	if (w->checkpointing != MF_CKPT_FULL || w->ckpt_every != 1)
		snprintf(why, size,
		    "needs gradientCheckpointing: true: torchtune's recipes refuse activation offloading without activation checkpointing, and memfloor models it with every layer checkpointed");
	else if (w->tensor > 1 || w->pipeline > 1 || w->expert > 1)
		snprintf(why, size,
		    "is not modelled under tensor, pipeline or expert parallel (workload.parallelism): memfloor measured torchtune's activation offloading with each GPU holding every layer whole");
	else if (w->shard_gpus > 1)
		snprintf(why, size,
		    "is not modelled under FSDP (workload.sharding.gpus %lld): memfloor measured torchtune's activation offloading on one GPU",
		    (long long)w->shard_gpus);
	else
		return 0;
	return 1;
}

/* The precision compile was measured in: bf16, bf16-true, fp32. */
static int
compile_precision(enum mf_precision p)
{
	return p == MF_BF16 || p == MF_BF16_TRUE || p == MF_FP32;
}

/* Whether w runs over more than one GPU's whole model: sharded, offloaded
 * or parallel, which float8 was not measured with. */
static int
beyond_one_gpu(const struct mf_workload *w)
{
	return w->shard_gpus > 1 || w->shard_cpu_offload || w->tensor > 1 ||
	    w->pipeline > 1 || w->expert > 1;
}

/* lead and w's layout into why: its sharding and parallelism. */
static void
layout_refused(const char *lead, const struct mf_workload *w, char *why,
    size_t size)
{
	snprintf(why, size,
	    "%s; this job has sharding.gpus %lld, parallelism tensor %lld, pipeline %lld, expert %lld",
	    lead, (long long)w->shard_gpus, (long long)w->tensor,
	    (long long)w->pipeline, (long long)w->expert);
}

/* Whether m's block is Llama's without biases, the one compile.py and
 * float8.py measured. */
static int
llama_block(const struct mf_model *m)
{
	return m->block == MF_BLOCK_LLAMA && !m->qkv_bias && m->experts == 0;
}

/* lora.dtype's name. */
static const char *
lora_dtype_name(enum mf_lora_dtype d)
{
	return d == MF_LORA_FP32 ? "fp32" : d == MF_LORA_BF16 ? "bf16" : "fp16";
}

/*
 * Why w's LoRA is refused under compile into why; 0
 * when it is not: tests/torch/compile_lora.py measured PEFT's LoRA,
 * adapters in fp32 or in the activations' dtype, q_proj, k_proj or v_proj
 * among the targets (what the first layer's frozen attention keeps
 * otherwise was not measured compiled), QLoRA's NF4 linears (bitsandbytes'
 * or torchao's) in bf16, without PEFT's
 * prepare_model_for_kbit_training, with every layer checkpointed or none
 * (a checkpointed layer's backward graph recomputes its forward: the
 * transient's candidate of est_pytorch.c's recompute_terms).
 */
static int
compile_lora_refused(const struct mf_workload *w, char *why, size_t size)
{
	unsigned qkv = MF_LORA_BIT(MF_LIN_Q) | MF_LORA_BIT(MF_LIN_K) |
	    MF_LORA_BIT(MF_LIN_V) | MF_LORA_BIT(MF_LIN_QKV);

	if (w->method == MF_QLORA &&
	    (w->qlora_kbit_prep || w->precision == MF_FP32))
		snprintf(why, size,
		    "is modelled for QLoRA in bf16 without qlora.kbitPrep, as tests/torch/compile_lora.py measured it; this job has precision: %s, qlora.kbitPrep: %s",
		    oib_precision(w->precision),
		    w->qlora_kbit_prep ? "true" : "false");
	else if (w->lora_dtype == MF_LORA_FP16 ||
	    (w->lora_dtype == MF_LORA_BF16 && w->precision == MF_FP32))
		snprintf(why, size,
		    "is modelled for LoRA with adapters in fp32 or in the activations' dtype, as tests/torch/compile_lora.py measured it; this job has lora.dtype: %s with precision: %s",
		    lora_dtype_name(w->lora_dtype),
		    oib_precision(w->precision));
	else if (w->method == MF_QLORA && w->qlora_keeps_input)
		snprintf(why, size,
		    "is modelled for QLoRA with the 4-bit matmul of bitsandbytes 0.43.2 and later, as tests/torch/compile_lora.py measured it; this job has qlora.keepsInput: true");
	else if (w->lora_dropout > 0)
		snprintf(why, size,
		    "is modelled for LoRA without dropout, as tests/torch/compile_lora.py measured it (compiled dropout was not measured); this job has lora.dropout: %g",
		    w->lora_dropout);
	else if ((mf_est_lora_mask(w) & qkv) == 0)
		snprintf(why, size,
		    "is modelled for LoRA with q_proj, k_proj or v_proj among its targets, as tests/torch/compile_lora.py measured it (a first layer whose attention is all frozen was not measured compiled); this job's lora.targets has none of them");
	else
		return 0;
	return 1;
}

/* Why w's compile is refused for reasons of the workload alone into why;
 * 0 when it is not. */
static int
compile_work_refused(const struct mf_workload *w, char *why, size_t size)
{
	static const char lead[] =
	    "is modelled as torchtune compiles each decoder layer, as tests/torch/compile.py and compile_lora.py measured it: full fine-tuning or LoRA, bf16, bf16-true or fp32, sdpa, standard or chunked loss, every layer checkpointed or none, one GPU or FSDP";

	if (!compile_precision(w->precision))
		snprintf(why, size, "%s; this job has precision: %s", lead,
		    oib_precision(w->precision));
	else if (w->method != MF_FULL && compile_lora_refused(w, why, size))
		return 1;
	else if (w->attention != MF_SDPA)
		snprintf(why, size, "%s; this job has attention: %s", lead,
		    w->attention == MF_EAGER ? "eager" : "flash");
	else if (w->loss == MF_LOSS_FUSED)
		snprintf(why, size,
		    "%s (a compiled fused loss was not measured); this job has loss: fused",
		    lead);
	else if (w->checkpointing == MF_CKPT_OP ||
	    (w->checkpointing == MF_CKPT_FULL && w->ckpt_every != 1))
		snprintf(why, size, "%s; this job checkpoints %s", lead,
		    w->checkpointing == MF_CKPT_OP ?
		        "per op (gradientCheckpointing: op)" :
		        "every Nth layer (gradientCheckpointing: N above 1)");
	else if (w->activation_offload)
		snprintf(why, size, "%s; this job has activationOffload: true",
		    lead);
	else if (w->tensor > 1 || w->pipeline > 1 || w->expert > 1)
		layout_refused(lead, w, why, size);
	else
		return 0;
	return 1;
}

int
mf_est_compile_refused(const struct mf_model *m, const struct mf_workload *w,
    char *why, size_t size)
{
	if (w->kind != MF_TRAINING || !w->compile)
		return 0;
	if (compile_work_refused(w, why, size))
		return 1;
	if (m == NULL || llama_block(m))
		return 0;
	snprintf(why, size,
	    "is modelled for Llama's decoder layer without biases (model_type llama, mistral), the block tests/torch/compile.py measured compiled; this job's model has another block%s",
	    m->qkv_bias ? " (q, k and v with biases: qwen2)" : "");
	return 1;
}

/* Why w's float8 is refused for its method and precision into why; 0
 * when it is not. */
static int
float8_recipe_refused(const struct mf_workload *w, char *why, size_t size)
{
	if (w->method == MF_QLORA)
		snprintf(why, size,
		    "casts each linear's high-precision weight to fp8 (torchao 0.15, float8/float8_linear.py: matmul_with_hp_or_float8_args), and a 4-bit base has none: torchao's float8 training does not run over QLoRA; this job has method: qlora");
	else if (w->method == MF_LORA)
		snprintf(why, size,
		    "is measured for full fine-tuning (tests/torch/float8.py): LoRA's adapters over float8 linears were not measured; this job has method: lora");
	else if (w->precision != MF_BF16 && w->precision != MF_BF16_TRUE &&
	    w->precision != MF_BF16_MIXED)
		snprintf(why, size,
		    "is measured with precision bf16, bf16-true or bf16-mixed (tests/torch/float8.py); torchao 0.15 runs fp32 and fp16 linears too (float8/float8_ops.py casts a rowwise fp32 or fp16 output through bf16), which were not measured; this job has precision: %s",
		    oib_precision(w->precision));
	else
		return 0;
	return 1;
}

/* Why w's float8 is refused for what runs beside it into why; 0 when it
 * is not. */
static int
float8_beside_refused(const struct mf_workload *w, char *why, size_t size)
{
	if (w->compile)
		snprintf(why, size,
		    "was measured eager (tests/torch/float8.py): compiled float8 linears were not measured; this job has compile: true");
	else if (w->checkpointing == MF_CKPT_OP)
		snprintf(why, size,
		    "was measured with every layer checkpointed or none (tests/torch/float8.py): the per-op policy sees torchao's fp8 matmuls, not the linears it saves, and was not measured; this job has gradientCheckpointing: op");
	else if (w->activation_offload || w->optimizer_in_backward)
		snprintf(why, size,
		    "was not measured with %s; this job has it true",
		    w->activation_offload ? "activationOffload" :
		                            "optimizerInBackward");
	else if (beyond_one_gpu(w))
		layout_refused(
		    "was measured on one GPU's whole model (tests/torch/float8.py): FSDP's float8 all-gather and torchao's float8 tensor parallel were not measured",
		    w, why, size);
	else
		return 0;
	return 1;
}

int
mf_est_float8_refused(const struct mf_model *m, const struct mf_workload *w,
    char *why, size_t size)
{
	if (w->kind != MF_TRAINING || w->float8 == MF_F8_NONE)
		return 0;
	if (float8_recipe_refused(w, why, size) ||
	    float8_beside_refused(w, why, size))
		return 1;
	if (m == NULL || llama_block(m))
		return 0;
	snprintf(why, size,
	    "is modelled for Llama's decoder layer without biases (model_type llama, mistral), the block tests/torch/float8.py measured; this job's model has another block%s",
	    m->experts > 0 ?
	        " (routed experts: transformers' 3-D expert weights are no nn.Linear for convert_to_float8_training to swap)" :
	        m->qkv_bias ? " (q, k and v with biases: qwen2)" :
	                      "");
	return 1;
}

int
mf_est_fsdp_on(const struct mf_workload *w)
{
	return w->kind == MF_TRAINING &&
	    (w->shard_gpus > 1 || w->shard_cpu_offload);
}

/* Why w's sharding.cpuOffload is refused into why; 0 when it is not. */
static int
cpu_offload_refused(const struct mf_workload *w, char *why, size_t size)
{
	if (!w->shard_cpu_offload)
		return 0;
	if (w->tensor > 1 || w->pipeline > 1 || w->expert > 1)
		snprintf(why, size,
		    "cpuOffload is modelled with FSDP alone: with tensor, pipeline or expert parallelism it has not been measured; this job has parallelism tensor %lld, pipeline %lld, expert %lld",
		    (long long)w->tensor, (long long)w->pipeline,
		    (long long)w->expert);
	else if (w->activation_offload)
		snprintf(why, size,
		    "cpuOffload is not modelled together with activationOffload: the two offloads together have not been measured; this job has activationOffload: true");
	else if (w->optimizer_in_backward)
		snprintf(why, size,
		    "cpuOffload is not modelled together with optimizerInBackward: the optimizer stepping the host's shards in backward has not been measured; this job has optimizerInBackward: true");
	else
		return 0;
	return 1;
}

/*
 * Why w's QLoRA under FSDP is refused into why; 0 when it is not.
 * tests/torch/dist.py measured both 4-bit bases, torchtune's (torchao's
 * NF4Tensor) and accelerate's FSDP-QLoRA (bitsandbytes' Linear4bit with
 * bf16 quant storage), with PEFT's adapters over them, the units of
 * sharding.units model and ends, neither offloaded nor prepared by PEFT.
 */
static int
qlora_shard_refused(const struct mf_workload *w, char *why, size_t size)
{
	if (w->shard_cpu_offload || w->qlora_kbit_prep)
		snprintf(why, size,
		    "is modelled for QLoRA without cpuOffload or qlora.kbitPrep, as tests/torch/dist.py measured it (QLoRA under CPUOffloadPolicy was not measured: the harness's simulated device fails to all-gather torchao's NF4Tensor, and bitsandbytes' quant_state is no parameter to offload); this job has cpuOffload: %s, qlora.kbitPrep: %s",
		    w->shard_cpu_offload ? "true" : "false",
		    w->qlora_kbit_prep ? "true" : "false");
	else
		return 0;
	return 1;
}

int
mf_est_shard_refused(const struct mf_workload *w, char *why, size_t size)
{
	if (!mf_est_fsdp_on(w))
		return 0;
	if ((w->method == MF_QLORA && qlora_shard_refused(w, why, size)) ||
	    cpu_offload_refused(w, why, size))
		return 1;
	if (w->method == MF_FULL)
		return 0;
	else if (w->tensor > 1 || w->pipeline > 1 || w->expert > 1)
		snprintf(why, size,
		    "is modelled for LoRA with FSDP alone: LoRA under FSDP with tensor, pipeline or expert parallelism has not been measured; this job has parallelism tensor %lld, pipeline %lld, expert %lld",
		    (long long)w->tensor, (long long)w->pipeline,
		    (long long)w->expert);
	else
		return 0;
	return 1;
}

static int
workload_ok(const struct mf_workload *w)
{
	if ((unsigned)w->kind > MF_INFERENCE ||
	    (unsigned)w->method > MF_QLORA ||
	    (unsigned)w->precision > MF_FP16_MIXED ||
	    (unsigned)w->optimizer > MF_PAGED_ADAMW8BIT ||
	    (unsigned)w->attention > MF_EAGER ||
	    (unsigned)w->checkpointing > MF_CKPT_OP ||
	    (unsigned)w->lora_targets > MF_LORA_LIST ||
	    (unsigned)w->lora_dtype > MF_LORA_FP16 ||
	    (w->lora_modules & ~(MF_LORA_HEAD | (MF_LORA_HEAD - 1u))) != 0 ||
	    (unsigned)w->kv_dtype > MF_KV_FP8 ||
	    (unsigned)w->weights_dtype > MF_WD_INT4 ||
	    (unsigned)w->server > MF_SERVER_VLLM ||
	    (unsigned)w->estimator >= MF_EST_COUNT ||
	    (unsigned)w->loss > MF_LOSS_FUSED ||
	    (unsigned)w->loss_upcast > MF_UPCAST_OUTPUT)
		return 0;
	return w->seq_len >= 0 && w->micro_batch >= 0 && w->lora_rank >= 0 &&
	    w->shard_gpus >= 1 && w->concurrency >= 0 && w->context_len >= 0 &&
	    w->group_size >= 1 && w->batched_tokens >= 0 &&
	    w->max_num_seqs >= 0 && w->non_torch >= 0 && w->all_reduce >= 0 &&
	    w->block_size >= 1 && w->graph_reserve >= 0 && w->tensor >= 1 &&
	    w->pipeline >= 1 && w->expert >= 1 && w->ckpt_every >= 1 &&
	    (w->kind != MF_TRAINING ||
	        (!mf_est_oib_refused(w, 1, NULL, 0) &&
	            !mf_est_offload_refused(w, NULL, 0) &&
	            !mf_est_shard_refused(w, NULL, 0)));
}

/*
 * The standard loss over the model's output upcast and held by the loop
 * (lossUpcast: output): measured on one GPU's model (tests/torch/
 * loss16.py), not under tensor or pipeline parallel, nor with LitGPT's
 * soft-capping of each piece (Gemma-2's final_logit_softcapping, litgpt
 * v0.5.13 model.py).
 */
static int
upcast_refused(const struct mf_model *m, const struct mf_workload *w, char *why,
    size_t size)
{
	if (w->loss_upcast != MF_UPCAST_OUTPUT)
		return 0;
	if (w->tensor > 1 || w->pipeline > 1)
		snprintf(why, size,
		    "standard with lossUpcast: output is not modelled under tensor or pipeline parallel (parallelism.tensor %lld, pipeline %lld): LitGPT's loop over Fabric's fp32 output is measured on one GPU's model; use lossUpcast: loss",
		    (long long)w->tensor, (long long)w->pipeline);
	else if (m != NULL && m->final_softcap)
		snprintf(why, size,
		    "standard with lossUpcast: output is not modelled for a model with final logit soft-capping (Gemma-2's final_logit_softcapping, which LitGPT applies to each piece): not measured; use lossUpcast: loss");
	else
		return 0;
	return 1;
}

int
mf_est_loss_refused(const struct mf_model *m, const struct mf_workload *w,
    char *why, size_t size)
{
	const char *name;

	if (w->kind != MF_TRAINING)
		return 0;
	if (w->loss == MF_LOSS_STANDARD)
		return upcast_refused(m, w, why, size);
	name = w->loss == MF_LOSS_CHUNKED ? "chunked" : "fused";
	if (w->tensor > 1 || w->pipeline > 1)
		snprintf(why, size,
		    "%s is not modelled under tensor or pipeline parallel (parallelism.tensor %lld, pipeline %lld): %s is modelled on one GPU and under FSDP; use loss: standard",
		    name, (long long)w->tensor, (long long)w->pipeline,
		    w->loss == MF_LOSS_CHUNKED ?
		        "torchtune's chunked loss" :
		        "Liger's fused linear cross-entropy");
	else if (m != NULL && m->final_softcap)
		snprintf(why, size,
		    "%s is not modelled for a model with final logit soft-capping (Gemma-2's final_logit_softcapping): not measured with a chunked or fused loss; use loss: standard",
		    name);
	else if (w->loss == MF_LOSS_CHUNKED && w->loss_chunks < 1)
		snprintf(why, size, "chunked needs lossChunks of 1 or more");
	else
		return 0;
	return 1;
}

unsigned
mf_est_lora_mask(const struct mf_workload *w)
{
	return mf_lora_mask(w->lora_targets, w->lora_modules);
}

unsigned
mf_est_lora_own(const struct mf_model *m, const struct mf_workload *w)
{
	if (w->method == MF_FULL)
		return 0;
	return mf_est_lora_mask(w) & mf_model_lora_names(m);
}

/* The names of mask's modules, ", " between, into buf. */
static void
lora_names(unsigned mask, char *buf, size_t size)
{
	const char *nm;
	size_t used = 0;

	buf[0] = '\0';
	for (int v = 0; (nm = mf_lora_module_name(v)) != NULL; v++)
		if ((mask & MF_LORA_BIT(v)) && used < size)
			used += (size_t)snprintf(buf + used, size - used,
			    "%s%s", used ? ", " : "", nm);
}

int
mf_est_lora_refused(const struct mf_model *m, const struct mf_workload *w,
    char *why, size_t size)
{
	unsigned has, bad;
	const char *name;
	char list[160];
	int v = 0;

	if (w->kind != MF_TRAINING || w->method == MF_FULL ||
	    w->lora_targets != MF_LORA_LIST)
		return 0;
	has = mf_model_lora_names(m);
	bad = w->lora_modules & ~has;
	if (bad == 0)
		return 0;
	while (v < 31 && !(bad & MF_LORA_BIT(v)))
		v++;
	if (why == NULL)
		return 1;
	/* A mask read back from elsewhere (a fingerprint) may hold a bit no
	 * name has. */
	name = mf_lora_module_name(v);
	lora_names(has, list, sizeof(list));
	if (v == MF_LORA_HEAD_BIT)
		snprintf(why, size,
		    "lm_head: LoRA on the output head is not modelled (not measured); the modules of this model a list may name: %s",
		    list);
	else
		snprintf(why, size,
		    "'%s' is not a module of this model%s; the ones it has: %s",
		    name != NULL ? name : "?",
		    m->experts > 0 ?
		        " that a list may name (its routed experts are 3-D parameters, not modules)" :
		        "",
		    list);
	return 1;
}

/* The buckets FSDP shards over its ranks: the weights (LoRA's frozen
 * base), gradients, optimizer state, paged or not, and LoRA's adapters
 * (their weights, gradients and optimizer state: each a DTensor's
 * shard). */
static int
sharded(enum mf_bucket b)
{
	return b == MF_B_WEIGHTS || b == MF_B_GRADIENTS ||
	    b == MF_B_OPTIMIZER || b == MF_B_PAGED || b == MF_B_ADAPTERS;
}

int
mf_est_counted(enum mf_bucket b)
{
	return b != MF_B_PAGED;
}

int64_t
mf_est_gpu_bucket(const int64_t *bucket, enum mf_bucket b, int64_t n)
{
	if (sharded(b))
		return mf_cdiv_up(bucket[b], n);
	return bucket[b];
}

/* Of e's bucket b on one GPU, what FSDP divides: all of a sharded
 * bucket but the weights every GPU holds whole (e->weights_whole). */
static int64_t
divided(const struct mf_estimate *e, enum mf_bucket b)
{
	assert((unsigned)b < MF_B_COUNT);
	if (b != MF_B_WEIGHTS)
		return e->stage[b];
	return mf_cless(e->stage[b], e->weights_whole);
}

/* e's bucket b on one GPU of n shards. */
static int64_t
gpu_bucket(const struct mf_estimate *e, enum mf_bucket b, int64_t n)
{
	if (b != MF_B_WEIGHTS || e->weights_whole == 0)
		return mf_est_gpu_bucket(e->stage, b, n);
	return mf_cadd(mf_cdiv_up(divided(e, b), n), e->weights_whole);
}

void
mf_est_split(const struct mf_estimate *e, struct mf_est_split *out)
{
	int64_t part;

	out->rest = 0;
	out->nparts = 0;
	for (int b = 0; b < MF_B_COUNT; b++) {
		if (!mf_est_counted((enum mf_bucket)b))
			continue;
		part = sharded((enum mf_bucket)b) ?
		    divided(e, (enum mf_bucket)b) :
		    0;
		out->rest = mf_cadd(out->rest, mf_cless(e->stage[b], part));
		if (part != 0) {
			assert(out->nparts < MF_EST_MAX_PARTS);
			out->part[out->nparts++] = part;
		}
	}
}

int64_t
mf_est_per_gpu(const struct mf_estimate *e, int64_t shards)
{
	int64_t sum = 0;

	for (int b = 0; b < MF_B_COUNT; b++)
		if (mf_est_counted((enum mf_bucket)b))
			sum = mf_cadd(sum,
			    gpu_bucket(e, (enum mf_bucket)b, shards));
	return sum;
}

int64_t
mf_est_bucket_per_gpu(const struct mf_estimate *e, enum mf_bucket b)
{
	if ((unsigned)b >= MF_B_COUNT)
		return 0;
	return gpu_bucket(e, b, e->shards);
}

/*
 * sharding.cpuOffload (design 22): FSDP2's CPUOffloadPolicy keeps the
 * shards on the host (FSDPParam's sharded data, refused on the device by
 * _validate_cpu_offload_params), copies each reduce-scattered gradient
 * shard there (foreach_reduce) and the optimizer steps them there, so the
 * weights, gradients, optimizer state and adapters take no GPU memory: 0,
 * their formula kept after "host memory: ".  Measured on the simulated
 * device of tests/torch/dist.py.
 */
static void
host_state(struct mf_estimate *e)
{
	static const enum mf_bucket state[] = { MF_B_WEIGHTS, MF_B_GRADIENTS,
		MF_B_OPTIMIZER, MF_B_ADAPTERS };
	for (size_t i = 0; i < sizeof(state) / sizeof(state[0]); i++) {
		assert(state[i] >= 0 && state[i] < MF_B_COUNT);
		if (e->bucket[state[i]] == 0)
			continue;
		e->bucket[state[i]] = 0;
		mf_text_around(mf_est_text(e, state[i]), "host memory: ", "");
	}
}

void
mf_est_buckets(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	e->params = mf_model_params(m);
	if (w->kind == MF_INFERENCE)
		mf_est_inference(m, w, e);
	else {
		assert(w->estimator >= 0 && w->estimator < MF_EST_COUNT);
		estimators[w->estimator]->training(m, w, e);
		if (w->shard_cpu_offload)
			host_state(e);
	}
	/* What lives outside the layers stays on the stage with the head. */
	if (m->no_head)
		e->bucket[MF_B_LOGITS] = 0;
}

/* The bytes of an estimate that come before its formulas: all of an
 * estimate of figures alone. */
#define FIGURES offsetof(struct mf_estimate, formula)

/* Each formula made empty by its first byte, not the 7 KiB of their room
 * cleared: every writer fills one from the start (mf_text_init). */
void
mf_est_clear(struct mf_estimate *e, int figures_only)
{
	memset(e, 0, FIGURES);
	e->figures_only = figures_only;
	if (figures_only)
		return;
	for (int b = 0; b < MF_B_COUNT; b++)
		e->formula[b][0] = e->gpu_formula[b][0] = '\0';
}

/* src's formulas into dst: each its text, not its room. */
static void
copy_formulas(struct mf_estimate *dst, const struct mf_estimate *src)
{
	for (int b = 0; b < MF_B_COUNT; b++) {
		mf_copy(dst->formula[b], MF_FORMULA_MAX, src->formula[b]);
		mf_copy(dst->gpu_formula[b], MF_FORMULA_MAX,
		    src->gpu_formula[b]);
	}
}

/* mf_est_compute, with the formulas unless figures_only. */
static enum mf_rc
compute(const struct mf_model *m, const struct mf_workload *w, int figures_only,
    struct mf_estimate *out)
{
	struct mf_workload rw;
	struct mf_estimate e;
	struct mf_model padded;
	int b;

	if (!workload_ok(w) || mf_est_loss_refused(m, w, NULL, 0) ||
	    mf_est_lora_refused(m, w, NULL, 0) ||
	    mf_est_compile_refused(m, w, NULL, 0) ||
	    mf_est_float8_refused(m, w, NULL, 0))
		return MF_EINVAL;
	if (w->batched_tokens == 0 || w->max_num_seqs == 0) {
		/* No card known: vLLM's defaults below 70 GiB. */
		rw = *w;
		mf_vllm_defaults(&rw, mf_vllm_tier(0, 0));
		w = &rw;
	}
	mf_est_clear(&e, figures_only);
	e.estimator = w->estimator;
	if (w->kind == MF_INFERENCE && w->server == MF_SERVER_VLLM) {
		/* vLLM's embeddings and head hold the vocabulary padded to a
		 * multiple of 64 on one GPU too (layout.c). */
		mf_model_shard(m, 1, 1, m->layers, 1, 1, MF_VOCAB_PAD_VLLM,
		    &padded);
		mf_est_buckets(&padded, w, &e);
	} else {
		mf_est_buckets(m, w, &e);
	}
	e.shards = w->kind == MF_TRAINING ? w->shard_gpus : 1;
	mf_est_layout(m, w, &e);
	mf_est_loading(m, w, &e);
	for (b = 0; b < MF_B_COUNT; b++)
		if (mf_est_counted((enum mf_bucket)b))
			e.total = mf_cadd(e.total, e.bucket[b]);
	e.per_gpu = mf_est_per_gpu(&e, e.shards);
	if (e.params < 0 || e.trainable < 0 || e.total < 0 || e.per_gpu < 0 ||
	    e.kv_token < 0 || e.seq_tokens < 0)
		return MF_ERANGE;
	memcpy(out, &e, FIGURES);
	if (!figures_only)
		copy_formulas(out, &e);
	return MF_OK;
}

enum mf_rc
mf_est_compute(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *out)
{
	return compute(m, w, 0, out);
}

enum mf_rc
mf_est_figures(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *out)
{
	return compute(m, w, 1, out);
}

void
mf_est_copy_figures(struct mf_estimate *dst, const struct mf_estimate *src)
{
	memcpy(dst, src, FIGURES);
	dst->figures_only = 1;
}

int
mf_est_same_figures(const struct mf_estimate *a, const struct mf_estimate *b)
{
	return memcmp(a, b, FIGURES) == 0;
}

enum mf_rc
mf_est_error(enum mf_rc rc, struct mf_error *err)
{
	if (rc == MF_ERANGE)
		return mf_error_set(err, rc, "spec.workload", 0, 0,
		    "the memory figures of this job overflow 63 bits");
	if (rc == MF_EINVAL)
		return mf_error_set(err, rc, "spec.workload", 0, 0,
		    "holds a figure outside its field's bounds");
	return mf_error_set(err, rc, "spec.workload", 0, 0, "%s",
	    mf_strerror(rc));
}
