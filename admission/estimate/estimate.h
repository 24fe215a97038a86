/*
 * estimate.h: GPU memory of a training or inference job, bucket by bucket
 * (design section 5).  Pure arithmetic on integers: no I/O, no allocation.
 */
#ifndef MF_ESTIMATE_H
#define MF_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>

#include "../base/err.h"
#include "../model/model.h"
#include "../model/quant.h"

enum mf_kind { MF_TRAINING, MF_INFERENCE };
enum mf_method { MF_FULL, MF_LORA, MF_QLORA };
/*
 * A training recipe's dtypes (design 19).  BF16 and FP16: 16-bit weights
 * and gradients, fp32 master weights and optimizer moments (DeepSpeed,
 * Megatron); *_MIXED: fp32 weights and gradients under autocast, with the
 * 16-bit weight copies autocast keeps; BF16_TRUE: weights, gradients and
 * optimizer state all 16-bit (torchtune, LitGPT); FP32.  Appended values
 * keep the order of the manifest's names.
 */
enum mf_precision {
	MF_BF16,
	MF_FP16,
	MF_FP32,
	MF_BF16_MIXED,
	MF_BF16_TRUE,
	MF_FP16_MIXED
};
/* gradientCheckpointing (design 19): none; full (every ckpt_every-th
 * layer recomputed whole: 1, the default, is every layer); op, per-op
 * selective as torchtitan's policy. */
enum mf_checkpointing { MF_CKPT_NONE, MF_CKPT_FULL, MF_CKPT_OP };
/* workload.loss (design 19). */
enum mf_loss { MF_LOSS_STANDARD, MF_LOSS_CHUNKED, MF_LOSS_FUSED };
/* workload.lossUpcast (design 22): where the standard loss's logits
 * become fp32: in the loss (transformers, nothing holding the fp32 copy);
 * the model's output, cast whole by Lightning Fabric and held by LitGPT's
 * training loop through backward and the optimizer's step. */
enum mf_loss_upcast { MF_UPCAST_LOSS, MF_UPCAST_OUTPUT };
/* workload.float8 (design 22): torchao's float8 training recipes
 * (torchao/float8/config.py, Float8LinearRecipeName); none by default. */
enum mf_float8 { MF_F8_NONE, MF_F8_TENSORWISE, MF_F8_ROWWISE };
/* workload.optimizer: torch's AdamW; bitsandbytes' AdamW8bit; SGD;
 * bitsandbytes' PagedAdamW8bit (design 22), whose 8-bit moments of the
 * tensors it pages live in CUDA unified memory (MF_B_PAGED). */
enum mf_optimizer { MF_ADAMW, MF_ADAM8BIT, MF_SGD, MF_PAGED_ADAMW8BIT };
/* lora.dtype (design 22): the adapters' weights, gradients and optimizer
 * state; fp32 as PEFT keeps them, 16-bit as torchtune's bf16 recipes. */
enum mf_lora_dtype { MF_LORA_FP32, MF_LORA_BF16, MF_LORA_FP16 };
/* sharding.units: FSDP's units beside the decoder layers.  MODEL: the
 * root unit (the model) holds the embeddings, the final norm and the head;
 * ENDS: the embeddings and the head are units of their own (torchtune's
 * custom_sharded_layers, torchtitan's apply_fsdp). */
enum mf_shard_units { MF_UNITS_MODEL, MF_UNITS_ENDS };
/* qlora.quantizer: what quantizes the base as it loads (est_load.c).
 * BITSANDBYTES: quantize_4bit on each weight's 16-bit copy (transformers'
 * from_pretrained, LitGPT); TORCHAO: to_nf4's nearest code a million
 * weights at a time (torchtune's FrozenNF4Linear). */
enum mf_quantizer { MF_QZ_BITSANDBYTES, MF_QZ_TORCHAO };
enum mf_attention { MF_SDPA, MF_FLASH, MF_EAGER };
enum mf_kv_dtype { MF_KV_BF16, MF_KV_FP16, MF_KV_FP8 };
/* Inference: the dtype of the linear layers' weights (design 14);
 * DEFAULT is that of the model's quantization_config, else of precision
 * (mf_est_weights_quant). */
enum mf_weights_dtype {
	MF_WD_DEFAULT,
	MF_WD_BF16,
	MF_WD_FP16,
	MF_WD_FP8,
	MF_WD_INT8,
	MF_WD_INT4
};
/* Inference: the serving engine whose budget the job is sized for. */
enum mf_server { MF_SERVER_NONE, MF_SERVER_VLLM };

/*
 * The arithmetic an estimate is made with (design 13): pytorch, the
 * default, counts what PyTorch keeps, with coefficients measured by
 * tests/torch/measure.py; post is the reference post's arithmetic of
 * design 5, kept to reproduce its figures.
 */
enum mf_estimator { MF_EST_PYTORCH, MF_EST_POST, MF_EST_COUNT };

struct mf_workload {
	enum mf_kind kind;
	enum mf_method method;
	enum mf_precision precision;
	enum mf_optimizer optimizer;
	enum mf_attention attention;
	int checkpointing;  /* enum mf_checkpointing */
	int64_t ckpt_every; /* MF_CKPT_FULL: every Nth layer; default 1 */
	/* MF_LOSS_STANDARD: where its logits become fp32; default loss */
	enum mf_loss_upcast loss_upcast;
	enum mf_loss loss;
	int64_t loss_chunks;       /* MF_LOSS_CHUNKED: pieces; default 8 */
	int activation_offload;    /* saved activations in host memory */
	int optimizer_in_backward; /* each gradient stepped and freed */
	int compile;               /* torch.compile of each decoder layer
	                              (design 22), default 0 */
	enum mf_float8 float8;     /* torchao's float8 linears (design 22),
	                              default MF_F8_NONE */
	int64_t qlora_block;       /* qlora.blockSize: weights an absmax, 64 */
	int qlora_double_quant;    /* qlora.doubleQuant, default 1 */
	int qlora_kbit_prep;       /* qlora.kbitPrep: PEFT's
	                              prepare_model_for_kbit_training */
	int qlora_keeps_input;     /* qlora.keepsInput: bitsandbytes' 4-bit
	                              matmul holds its input to backward
	                              (releases before 0.43.2), default 0 */
	enum mf_quantizer qlora_quantizer; /* qlora.quantizer, default
	                                      MF_QZ_BITSANDBYTES */
	int reshard_after_forward; /* sharding.reshardAfterForward, default 1 */
	int shard_cpu_offload;     /* sharding.cpuOffload: FSDP's shards, their
	                              gradients and the optimizer state in host
	                              memory, default 0 */
	/* sharding.units, default MF_UNITS_MODEL */
	enum mf_shard_units shard_units;
	int sequence_parallel; /* parallelism.sequenceParallel, default 0 */
	int loss_parallel;     /* parallelism.lossParallel, default 0 */
	int64_t seq_len;       /* training: tokens per sequence (s) */
	int64_t micro_batch;   /* training: sequences per step (b) */
	int64_t grad_accum;    /* micro-batches an optimizer step */
	int64_t lora_rank;
	enum mf_lora_targets lora_targets;
	unsigned lora_modules; /* MF_LORA_LIST: the names, MF_LORA_BIT */
	enum mf_lora_dtype lora_dtype;
	double lora_dropout; /* lora.dropout: each adapter's input dropout
	                        probability, default 0 */
	int64_t shard_gpus;  /* FSDP full shard over N GPUs; 1 = none */
	int64_t concurrency; /* inference: sequences in flight */
	int64_t context_len; /* inference: tokens per sequence */
	/* Inference: a request's average prompt and output tokens (design
	 * 21); 0 when not given. */
	int64_t prompt_tokens, output_tokens;
	enum mf_kv_dtype kv_dtype;
	enum mf_weights_dtype weights_dtype;
	int64_t group_size; /* int4: weights per fp16 scale, default 128 */
	enum mf_server server;
	double gpu_util;        /* vllm: gpuMemoryUtilization, default 0.9 */
	int64_t batched_tokens; /* vllm: maxNumBatchedTokens; 0: vLLM's
	                           default for the card (mf_vllm_defaults) */
	int64_t block_size;     /* vllm: tokens per KV block, default 16 */
	int64_t max_num_seqs;   /* vllm: --max-num-seqs, the profile run's
	                           sequences (design 19); 0: vLLM's default
	                           for the card */
	int64_t server_version; /* vllm: serverVersion (design 22),
	                           MF_VLLM_VERSION's number; 0: the current
	                           accounting */
	int64_t graph_reserve;  /* vllm: CUDA graphs' bytes, the catalogue's
	                           cudaGraphReserve (mf_place sets it) */
	/* vllm: memory a GPU holds outside PyTorch (cuBLAS workspaces; at
	 * tensor > 1 NCCL's and the custom all-reduce's buffers too), the
	 * card's (mf_place sets them; MF_NON_TORCH_* by default). */
	int64_t non_torch;  /* at tensor 1 */
	int64_t all_reduce; /* added at tensor > 1 */
	/* workload.parallelism (design 15), 1 each when not given: a
	 * replica takes tensor x pipeline GPUs; expert divides the routed
	 * experts. */
	int64_t tensor, pipeline, expert;
	enum mf_estimator estimator;
};

/* A Job as the manifest gives it (manifest.h reads it): the workload, and
 * what placement and the fixes ask of it beside. */
enum mf_model_source {
	MF_MODEL_NONE,
	MF_MODEL_NAMED,  /* a shipped config */
	MF_MODEL_INLINE, /* spec.model.config */
	MF_MODEL_URL /* spec.model.configUrl: model is filled once fetched */
};

struct mf_job {
	const char *name;      /* metadata.name; borrowed from the document */
	int64_t min_memory;    /* bytes; 0 when not given */
	int min_memory_format; /* enum mf_qty_format of minMemory */
	int64_t count;         /* GPUs per job, default 1 */
	int count_given; /* resources.gpu.count or workload.sharding set */
	enum mf_model_source model_source;
	const char *model_name; /* shipped name, or NULL; borrowed */
	const char *config_url; /* or NULL; borrowed */
	struct mf_model model;  /* valid unless model_source is NONE or URL */
	struct mf_workload work;
	double reference_hours; /* 0 when not given */
	/* spec.duration (design 21): tokens to train on, requests to
	 * serve; 0 when not given. */
	int64_t tokens, requests;
	double max_hourly_price; /* < 0 when not given; same for the next two */
	double max_cost;
	double deadline_hours;
	unsigned allowed_fixes; /* MF_FIXBIT set */
	/*
	 * Kubernetes (review.c sets it; the reader leaves it 0): the job
	 * runs as this many pods, each on one node with count / pods GPUs.
	 * 0: any count the catalogue allows, over as many nodes as it takes.
	 */
	int64_t pods;
	/* Where workload.sequenceLength and contextLength are written, for
	 * the errors that need the model (mf_job_check_model); 0: not
	 * given, or JSON. */
	int seq_line, seq_column, context_line, context_column;
	/* Where workload.loss is written, for the same; 0: not given. */
	int loss_line, loss_column;
	/* Where workload.lora.targets is written, for the same. */
	int targets_line, targets_column;
	/* Where workload.compile is written, for the same; 0: not given. */
	int compile_line, compile_column;
	/* Where workload.float8 is written, for the same; 0: not given. */
	int float8_line, float8_column;
	/* workload.framework (design 22): the release whose recipe gave
	 * the fields the manifest leaves out (mf_framework_name), when
	 * framework_given; from_framework: bit i set when the i-th field
	 * mf_framework_field names took the framework's value;
	 * framework_sharded: the manifest states sharding, and the
	 * framework's distributed recipe is taken. */
	int framework, framework_given, framework_sharded;
	unsigned from_framework;
	/* Design 23: what runs of this job measured, a card each, for
	 * mf_place (place.h); borrowed, NULL when none. */
	const struct mf_observed *observed;
};

/*
 * The parameters autocast casts to 16 bits and keeps for backward under
 * a *-mixed precision (Pc): the weights of every nn.Linear, the output
 * head's included (tied or not), routers and Qwen2-MoE's shared expert
 * too, but not transformers' 3-D routed experts, whose grouped_mm
 * autocast does not cast; -1 on overflow.
 */
int64_t mf_est_autocast_params(const struct mf_model *m);

/*
 * Bytes of a trained parameter's gradient as an estimate of w keeps it:
 * an adapter's (lora.dtype: 4 for fp32, PEFT's default, else 2) under
 * LoRA and QLoRA, else the precision's gradient (4 in fp32 and under
 * autocast, else 2).
 */
int64_t mf_est_grad_bytes(const struct mf_workload *w);

/*
 * The attention a training estimate counts for m under w: w's, but
 * Gemma-2's sdpa is eager (transformers falls back to eager, SDPA cannot
 * soft-cap).
 */
enum mf_attention
mf_est_attention(const struct mf_model *m, const struct mf_workload *w);

/*
 * Whether an estimate of w counts activation offloading (design 19):
 * activation_offload on a training job under the estimator pytorch; the
 * post's arithmetic has none, so its estimate keeps every activation on
 * the GPU.
 */
int mf_est_offloads(const struct mf_workload *w);

/* The loss an estimate of w counts: w->loss under the estimator pytorch;
 * the post's arithmetic counts the standard loss's logits whatever w
 * says. */
enum mf_loss mf_est_loss(const struct mf_workload *w);

/* Whether the estimate of w counts the standard loss over the model's
 * output upcast and held by the loop (lossUpcast: output, LitGPT under
 * Fabric): a training job, the estimator pytorch (the post's arithmetic
 * counts the standard loss's logits), loss standard. */
int mf_est_output_upcast(const struct mf_workload *w);

/*
 * Default of catalogue cudaGraphReserve: what vLLM (0.21 and later, which
 * takes its estimate of the CUDA graphs from the KV cache's budget,
 * gpu_worker.py determine_available_memory) logged for the graphs of a
 * dense model, "Estimated CUDA graph memory: 0.36 GiB total" (vLLM
 * 0.27.1, TP 2; gpustack/runner pull request 251): 369Mi.
 */
#define MF_GRAPH_RESERVE_DEFAULT (INT64_C(369) << 20)
/*
 * What vLLM's profile counts outside PyTorch on a GPU (non_torch_memory),
 * by default, when the card says nothing: at TP 1 "non_torch_memory
 * takes 0.16GiB" (H100, vllm-project/vllm pull request 12126): 164Mi;
 * at TP >= 2 the NCCL and custom all-reduce buffers add what an H100 over
 * NVLink showed, TP 2's 3.58 GiB less TP 1's 1.79 GiB (vllm-project/vllm
 * pull request 10511): 1833Mi, the larger of the figures found (two RTX
 * 4090 over PCIe added 0.09 GiB, vllm-project/vllm issue 13061).
 */
#define MF_NON_TORCH_DEFAULT (INT64_C(164) << 20)
#define MF_ALL_REDUCE_DEFAULT (INT64_C(1833) << 20)

enum mf_bucket {
	MF_B_WEIGHTS,
	MF_B_GRADIENTS,
	MF_B_OPTIMIZER,
	MF_B_ADAPTERS,
	MF_B_ACTIVATIONS,
	MF_B_LOGITS,
	MF_B_TRANSIENT,
	MF_B_KVCACHE,
	MF_B_SHARDING,
	MF_B_GRAPHS,   /* vllm: the CUDA-graph reserve */
	MF_B_COMM,     /* tensor and pipeline parallel buffers */
	MF_B_NONTORCH, /* vllm: memory outside PyTorch (non_torch) */
	/* A paged optimizer's state in CUDA unified memory, which pages to
	 * the host under pressure instead of failing: not counted toward the
	 * fit (mf_est_counted). */
	MF_B_PAGED,
	/* QLoRA: what loading and quantizing the base, and PEFT's fp32 cast,
	 * hold beyond the step's buckets, when that moment is the peak
	 * (design 22, est_load.c); 0 when the step is. */
	MF_B_LOADING,
	MF_B_COUNT
};

/*
 * Whether bucket b counts toward an estimate's total and per_gpu, and so
 * toward the fit: every bucket but MF_B_PAGED (design 22: a paged
 * optimizer's state does not count toward the fit; the answer shows it
 * apart).
 */
int mf_est_counted(enum mf_bucket b);

/* Room for one bucket's formula, its NUL included. */
#define MF_FORMULA_MAX 256

struct mf_estimate {
	enum mf_estimator estimator;
	int64_t params;    /* P */
	int64_t trainable; /* P (full), T (lora/qlora), 0 (inference) */
	int64_t bucket[MF_B_COUNT]; /* bytes for the whole job, before FSDP
	                               division */
	int64_t total;              /* sum of bucket[] */
	/*
	 * What one GPU of the largest pipeline stage holds of each bucket,
	 * with tensor and expert parallelism, before FSDP's division over
	 * shards data-parallel ranks (mf_est_bucket_per_gpu divides).  Equal
	 * to bucket[] for a job on one GPU.
	 */
	int64_t stage[MF_B_COUNT];
	int64_t shards;  /* FSDP ranks the estimate is divided over */
	int64_t per_gpu; /* what must fit on one card: the sum of the buckets
	                    per GPU */
	/* Inference: KV-cache bytes per token on one GPU; the tokens the
	 * cache grows by, a block with vllm (paged), else 1; and the tokens a
	 * sequence of contextLength takes, in whole blocks. */
	int64_t kv_token;
	int64_t kv_token_job; /* every GPU of a replica together */
	int64_t block;
	int64_t seq_tokens;
	/* How the weights are stored (quant.h), and what said so: an
	 * inference job's weightsDtype, "quantization_config" or
	 * "precision"; QLoRA's "qlora"; NULL for 16-bit training. */
	struct mf_quant quant;
	const char *quant_source;
	/* Of bucket[MF_B_WEIGHTS], what every GPU holds whole under FSDP:
	 * bitsandbytes' quant_state beside its sharded 4-bit codes
	 * (est_state.c); 0 otherwise. */
	int64_t weights_whole;
	/*
	 * Two of the transient bucket's candidates, which shardingBuffers'
	 * formula names for what FSDP's buffers add at each phase of the
	 * step (est_fsdp.c): the loss's (loss transient) and the largest of
	 * a layer's (layer transient: est_transient.c); 0 outside training.
	 * The job's, as bucket[] is, and one GPU's, as stage[] is.
	 */
	int64_t loss_transient;
	int64_t layer_transient;
	int64_t gpu_loss_transient;
	int64_t gpu_layer_transient;
	/* 1: the formulas below were not written (mf_est_figures); they
	 * stay last, so that such an estimate is cleared and copied without
	 * them. */
	int figures_only;
	/*
	 * The arithmetic of each bucket with bytes, written where they are
	 * computed ("P x 2", "s x b x (L x (16h + ...) + 4d)"); symbols
	 * are those of design 5 and of estimate.c's comments.
	 */
	char formula[MF_B_COUNT][MF_FORMULA_MAX];
	/*
	 * The arithmetic of stage[b] under a parallel layout (tensor, pipeline
	 * or expert > 1), written by the same code on one GPU's share of the
	 * model (mf_model_shard): P, a, kv, I, Ie, Is and E are that GPU's
	 * share, Vl its vocabulary rows; "" when the layout is not parallel.
	 */
	char gpu_formula[MF_B_COUNT][MF_FORMULA_MAX];
};

/*
 * The moment that sets an estimate's peak (design 22): MF_PEAK_LOADING
 * when loading the weights needs more than the step (the bucket
 * MF_B_LOADING is not 0), else MF_PEAK_STEP.
 */
enum mf_peak_moment { MF_PEAK_STEP, MF_PEAK_LOADING };
enum mf_peak_moment mf_est_peak_moment(const struct mf_estimate *e);
/* "step", "loading": the answer's recipe.peakMoment. */
const char *mf_peak_moment_name(enum mf_peak_moment p);

/* "weights", "gradients", ..., "kvCache", "shardingBuffers". */
const char *mf_bucket_name(enum mf_bucket b);
/* "pytorch", "post"; NULL out of range. */
const char *mf_estimator_name(enum mf_estimator e);
/* The estimator named name; MF_EINVAL (and *out untouched) when unknown. */
enum mf_rc mf_estimator_parse(const char *name, enum mf_estimator *out);

/*
 * Whether the estimate refuses w's activationOffload (design 19): 0 when it
 * models it, or w does not ask for it; otherwise 1, with why (when not
 * NULL, size bytes) the reason, to follow the field's name.  It is
 * modelled as torchtune's OffloadActivations runs it and
 * tests/torch/offload.py measured it: with every layer checkpointed,
 * which torchtune's recipes require ("enable_activation_offloading should
 * only be True when enable_activation_checkpointing is True"), on one
 * GPU's model (no tensor, pipeline or expert parallel, no FSDP); the
 * rest is refused rather than guessed.  The one owner of that rule: the
 * manifest's error, the estimate's domain and the fixes offered ask it.
 */
int mf_est_offload_refused(const struct mf_workload *w, char *why, size_t size);

/*
 * Whether the estimate refuses w's sharding (design 22): 0 when it models
 * it (full fine-tuning; LoRA under FSDP alone, as torchtune's distributed
 * LoRA recipe and accelerate run it and tests/torch/dist.py measured it),
 * or w is not sharded; otherwise 1, with why (when not NULL, size bytes)
 * the reason, to follow the field's name.  The one owner of that rule:
 * the manifest's error, the estimate's domain and the fixes offered ask
 * it.
 */
int mf_est_shard_refused(const struct mf_workload *w, char *why, size_t size);

/* Whether w trains under FSDP: over more than one GPU, or with
 * sharding.cpuOffload on any count (FSDP on one GPU offloads too). */
int mf_est_fsdp_on(const struct mf_workload *w);
/*
 * Whether the estimator pytorch tells the phases of w's FSDP step apart
 * (est_fsdp.c): the layers resharded after forward over several GPUs,
 * one pipeline stage.  Then shardingBuffers counts its moments at the
 * loss beside the loss's transient (loss transient), those of the layers'
 * forward and backward beside a layer's (layer transient), where the
 * step counts the larger; otherwise each moment beside the activations
 * with the step's whole transient.
 */
int mf_est_fsdp_phased(const struct mf_workload *w);

/*
 * Whether the estimate models w's optimizerInBackward (design 19) on gpus
 * GPUs: 0 when it does, or w does not ask for it; otherwise 1, with why
 * (when not NULL, size bytes) the reason, to follow the field's name:
 * what optimizerInBackward is modelled with, and what this job has.  It
 * is modelled as torchtune 0.6.1 runs it (full fine-tuning, weights their
 * own master copy in bf16-true or fp32, one optimizer a weight, AdamW or
 * bitsandbytes' AdamW8bit or PagedAdamW8bit, one GPU) and as
 * tests/torch/optim_bwd.py measured it; the rest is
 * refused rather than guessed.  The one owner of that rule: the manifest's
 * error, the estimate's domain and the fixes offered ask it.
 */
int mf_est_oib_refused(const struct mf_workload *w, int64_t gpus, char *why,
    size_t size);

/*
 * Whether the estimate refuses w's compile (design 22): 0 when it models
 * it, or w does not ask for it; otherwise 1, with why (when not NULL,
 * size bytes) the reason, to follow the field's name: what compile is
 * modelled with, and what this job has.  It is modelled as torchtune's
 * compile_model runs it (torch.compile of each decoder layer, an
 * activation checkpoint's wrapper left outside) and as
 * tests/torch/compile.py measured it with inductor: full fine-tuning of
 * Llama's block without biases (llama, mistral), precision bf16,
 * bf16-true or fp32, sdpa attention, the standard loss, every layer
 * checkpointed or none, one GPU's model (no FSDP, tensor, pipeline or
 * expert parallel), without activation offloading or the optimizer in
 * backward; the rest is refused rather than guessed.  m NULL: the model
 * is not known yet, and the rule on its block waits for it.  The one
 * owner of that rule: the manifest's error, mf_job_check_model's, the
 * estimate's domain and the fixes offered ask it.
 */
int mf_est_compile_refused(const struct mf_model *m,
    const struct mf_workload *w, char *why, size_t size);

/*
 * Whether the estimate refuses w's float8 (design 22): 0 when w does not
 * ask for it; otherwise 1, with why (when not NULL, size bytes) the
 * reason, to follow the field's name.  What torchao 0.15 does not run
 * with it, or tests/torch/float8.py did not measure (LoRA and QLoRA,
 * precisions other than bf16, bf16-true and bf16-mixed, compile, FSDP,
 * tensor, pipeline and expert parallel, per-op checkpointing, offloading,
 * the optimizer in backward, a block other than Llama's without biases)
 * is refused with what the job has, rather than guessed.  m NULL: the
 * model is not known yet, and the rule on its block waits for it.  The
 * one owner of that rule: the manifest's error, mf_job_check_model's and
 * the estimate's domain ask it.
 */
int mf_est_float8_refused(const struct mf_model *m, const struct mf_workload *w,
    char *why, size_t size);

/*
 * Whether the estimate refuses w's loss, with into why (when not NULL,
 * size bytes) the reason, to follow the field's name (spec.workload.loss).
 * Modelled (design 19): standard; chunked as torchtune runs it, in
 * lossChunks >= 1 pieces, and fused as Liger-Kernel runs it, each on one
 * GPU or under FSDP, on a model without final soft-capping (Gemma-2's,
 * which transformers applies to the logits and torchtune's Gemma-2 to
 * the normalised hidden states: measured in neither; m NULL: the model is
 * not known yet, and that rule waits for it).  Under tensor or pipeline
 * parallel neither is measured.  The one owner of that rule: the
 * manifest's error, mf_job_check_model's and the estimate's domain ask
 * it.
 */
int mf_est_loss_refused(const struct mf_model *m, const struct mf_workload *w,
    char *why, size_t size);

/* The modules w's LoRA reaches: mf_lora_mask of its targets. */
unsigned mf_est_lora_mask(const struct mf_workload *w);
/* Of those, the linears of a layer of m's own (no routed or shared
 * expert's), MF_LORA_BIT each (mf_model_lora_names); none in full
 * fine-tuning. */
unsigned mf_est_lora_own(const struct mf_model *m, const struct mf_workload *w);

/*
 * Whether w's LoRA targets are a list that names a module m has not
 * (mf_model_lora_names), or lm_head, whose LoRA is not modelled: 1 with
 * the reason, naming the module and listing m's, in why (NULL: not
 * written); 0 otherwise, and for a job without LoRA.  mf_job_check_model
 * and the estimate's domain ask it.
 */
int mf_est_lora_refused(const struct mf_model *m, const struct mf_workload *w,
    char *why, size_t size);

/*
 * Fill *out with w->estimator's arithmetic.  MF_ERANGE (and *out untouched)
 * when a figure would pass 2^63 - 1, MF_EINVAL for a workload out of range (a
 * count below 1, an enum out of range, a loss not modelled for that layout
 * or model: mf_est_loss_refused).
 */
enum mf_rc mf_est_compute(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *out);
/*
 * mf_est_compute's figures without its formulas, for an estimate whose
 * formulas no answer shows (a plan's, the work of referenceHours, the
 * other estimator's figure): out->figures_only is 1 and out->formula and
 * out->gpu_formula are left as they were.
 */
enum mf_rc mf_est_figures(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *out);
/* e an estimate of nothing: every figure 0, figures_only as given and,
 * unless it is set, every formula "". */
void mf_est_clear(struct mf_estimate *e, int figures_only);
/* src's figures into dst, which is then an estimate of figures alone. */
void
mf_est_copy_figures(struct mf_estimate *dst, const struct mf_estimate *src);
/* Whether a and b, each made by mf_est_figures or mf_est_copy_figures,
 * hold the same figures. */
int
mf_est_same_figures(const struct mf_estimate *a, const struct mf_estimate *b);

/*
 * Bytes one GPU holds of e when FSDP shards it over shards >= 1 GPUs: the
 * weights, gradients and optimizer state of its stage (e->stage) divided
 * by shards, each rounded up, plus every other bucket of the stage whole.  So
 * the need at N GPUs is rest + sum of ceil(b_i / N) over the sharded buckets
 * b_i, which never grows with N.  e must be of the workload as it runs sharded
 * (computed with shard_gpus > 1, so that it counts the sharding buffers); -1
 * when the sum passes 2^63 - 1.
 */
int64_t mf_est_per_gpu(const struct mf_estimate *e, int64_t shards);
/*
 * mf_est_per_gpu's sum taken apart, for a search that asks it at many
 * counts: the buckets FSDP divides (part[0..nparts)) and the rest whole,
 * so that mf_est_per_gpu(e, n) = rest + sum of ceil(part[i] / n).  -1 in
 * rest when it passes 2^63 - 1.
 */
#define MF_EST_MAX_PARTS 3
struct mf_est_split {
	int64_t rest;
	int64_t part[MF_EST_MAX_PARTS];
	int nparts;
};
void mf_est_split(const struct mf_estimate *e, struct mf_est_split *out);

/* The layers of the largest of w's pipeline stages of m (layout.c): m's
 * layers over w->pipeline stages, rounded up. */
int64_t
mf_est_stage_layers(const struct mf_model *m, const struct mf_workload *w);
/* Bytes one GPU holds of bucket b: stage[b], divided by e->shards for the
 * sharded buckets. */
int64_t mf_est_bucket_per_gpu(const struct mf_estimate *e, enum mf_bucket b);

/*
 * How an inference job's linear weights are stored (design 14): as
 * weightsDtype says (fp8 with an fp32 scale a tensor, int8 with one an
 * output row, int4 with an fp16 scale a group of groupSize weights), else
 * as the config's quantization_config says (m->quant), else 16-bit.
 * *source names which: "weightsDtype", "quantization_config" or
 * "precision".
 */
void mf_est_weights_quant(const struct mf_model *m, const struct mf_workload *w,
    struct mf_quant *q, const char **source);

/*
 * vLLM's defaults of --max-num-batched-tokens and --max-num-seqs for
 * `vllm serve` (vllm/engine/arg_utils.py, get_batch_defaults, usage
 * context OPENAI_API_SERVER) come in MF_VLLM_TIERS tiers by the card:
 * mf_vllm_tier is the tier of a card of memory bytes (an A100 when a100
 * is nonzero; memory 0: no card known), mf_vllm_defaults fills the fields
 * of w that are 0 with tier's: 16384 and 1024 from 160 GiB; 8192 and 1024
 * from 70 GiB but for an A100; 2048 and 256 below.  max_num_seqs is then
 * at most max_num_batched_tokens.  With a serverVersion before 0.8.0 the
 * V0 engine's, whatever the tier: 256 sequences and max(contextLength,
 * 2048) tokens, or from 0.5.3 past 32,768 tokens chunked prefill's 512
 * (2048 from 0.6.5).
 */
#define MF_VLLM_TIERS 3
int mf_vllm_tier(int64_t memory, int a100);
void mf_vllm_defaults(struct mf_workload *w, int tier);
/*
 * The maxNumBatchedTokens vLLM runs w with on a card of tier: w's own,
 * else its default there (mf_vllm_defaults).  vLLM refuses to start with
 * fewer than w's max_num_seqs, and does not raise a default to meet them:
 * mf_vllm_starts is 0 for such a w and tier, 1 otherwise (w no vllm
 * job, or max_num_seqs left to its default).
 */
int64_t mf_vllm_batched_tokens(const struct mf_workload *w, int tier);
int mf_vllm_starts(const struct mf_workload *w, int tier);
/* Whether w is a vLLM job that gives max_num_seqs: the one whose start
 * may depend on the card's tier (else mf_vllm_starts is 1 on every
 * tier). */
int mf_vllm_seqs_given(const struct mf_workload *w);

/*
 * A vLLM release as a number (serverVersion, design 22): 0.7.3 is
 * MF_VLLM_VERSION(0, 7, 3).  The accounting is that of the oldest release
 * memfloor models, MF_VLLM_OLDEST, and later: est_serve.c's releases[]
 * groups them into families (docs/serving.md lists them).
 */
#define MF_VLLM_VERSION(major, minor, patch) \
	((int64_t)(major)*1000000 + (int64_t)(minor)*1000 + (patch))
#define MF_VLLM_OLDEST MF_VLLM_VERSION(0, 2, 5)
#define MF_VLLM_OLDEST_TEXT "0.2.5"
/* Whether version (0: none given) is one memfloor has an accounting of:
 * MF_VLLM_OLDEST or later. */
int mf_vllm_release_known(int64_t version);

/*
 * Inference on one GPU of usable bytes: the sequences of e->seq_tokens
 * that fit beside everything but the KV cache (maxConcurrency), and the
 * tokens each of seqs sequences may hold, in whole blocks of e->block
 * (maxContextLength).  0 when none fits.
 */
int64_t mf_est_max_seqs(const struct mf_estimate *e, int64_t usable);
int64_t
mf_est_max_context(const struct mf_estimate *e, int64_t usable, int64_t seqs);
#endif
