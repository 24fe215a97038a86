/*
 * estimate.c: the memory buckets of design section 5.
 *
 * Every figure is computed with checked arithmetic: an intermediate that
 * would pass 2^63 - 1 becomes -1 and poisons everything computed from it,
 * and mf_est_compute turns a poisoned bucket into MF_ERANGE.
 *
 * Choices where the design is silent:
 * - a workload outside its domain (a negative count, shard_gpus < 1, an
 *   enum value out of range) is MF_EINVAL and leaves *out untouched;
 * - sharding applies to full training only, the one method FSDP is offered
 *   for; with any other workload shard_gpus is ignored and the estimate is
 *   that of one GPU, which can only overstate the need;
 * - LoRA adapters with SGD hold 12 bytes per trainable parameter (fp32
 *   weight, gradient and momentum), between AdamW's 16 and 8-bit Adam's 10.
 */
#include "estimate.h"

#include <string.h>

#include "checked.h"

/* a / n rounded up, for a >= 0 and n >= 1; -1 stays -1. */
static int64_t
cdiv_up(int64_t a, int64_t n)
{
	if (a < 0)
		return -1;
	return a / n + (a % n != 0);
}

void
mf_workload_defaults(struct mf_workload *w)
{
	memset(w, 0, sizeof(*w));
	w->kind = MF_TRAINING;
	w->method = MF_FULL;
	w->precision = MF_BF16;
	w->optimizer = MF_ADAMW;
	w->attention = MF_SDPA;
	w->checkpointing = 0;
	w->seq_len = 0;
	w->micro_batch = 1;
	w->lora_rank = 16;
	w->lora_targets = MF_LORA_ALL_LINEAR;
	w->shard_gpus = 1;
	w->concurrency = 1;
	w->context_len = 0;
	w->kv_dtype = MF_KV_BF16;
}

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
		[MF_B_KVCACHE] = "kvCache",
		[MF_B_SHARDING] = "shardingBuffers",
	};

	if ((unsigned)b >= MF_B_COUNT)
		return NULL;
	return names[b];
}

static int
workload_ok(const struct mf_workload *w)
{
	if ((unsigned)w->kind > MF_INFERENCE ||
	    (unsigned)w->method > MF_QLORA ||
	    (unsigned)w->precision > MF_FP32 ||
	    (unsigned)w->optimizer > MF_SGD ||
	    (unsigned)w->attention > MF_EAGER ||
	    (unsigned)w->lora_targets > MF_LORA_ATTENTION ||
	    (unsigned)w->kv_dtype > MF_KV_FP8)
		return 0;
	return w->seq_len >= 0 && w->micro_batch >= 0 && w->lora_rank >= 0 &&
	    w->shard_gpus >= 1 && w->concurrency >= 0 && w->context_len >= 0;
}

/* Optimizer state per parameter: fp32 master weights are in the figure. */
static int64_t
optimizer_bytes(enum mf_optimizer o, int fp32)
{
	switch (o) {
	case MF_ADAM8BIT:
		return fp32 ? 2 : 6;
	case MF_SGD:
		return fp32 ? 4 : 8;
	case MF_ADAMW:
		break;
	}
	return fp32 ? 8 : 12;
}

/* Adapter weight, gradient and optimizer state, all fp32. */
static int64_t
adapter_bytes(enum mf_optimizer o)
{
	switch (o) {
	case MF_ADAM8BIT:
		return 10;
	case MF_SGD:
		return 12;
	case MF_ADAMW:
		break;
	}
	return 16;
}

/*
 * L * s*b*h*(34 + 5*a*s/h), computed as L*s*b*(34*h + 5*a*s) so that no
 * fraction is lost; sdpa and flash keep no attention matrix (L*s*b*h*34);
 * checkpointing keeps one input per layer (2*s*b*h*L).  fp32 doubles.
 */
static int64_t
activation_bytes(const struct mf_model *m, const struct mf_workload *w)
{
	int64_t sb, per;

	sb = mf_cmul(w->seq_len, w->micro_batch);
	if (w->checkpointing)
		per = mf_cmul(2, m->hidden);
	else if (w->attention == MF_EAGER)
		per = mf_cadd(mf_cmul(34, m->hidden),
		    mf_cmul(5, mf_cmul(m->heads, w->seq_len)));
	else
		per = mf_cmul(34, m->hidden);
	per = mf_cmul(mf_cmul(m->layers, sb), per);
	return w->precision == MF_FP32 ? mf_cmul(2, per) : per;
}

static void
training(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	int64_t P = e->params, T;
	int fp32 = w->precision == MF_FP32;

	if (w->method == MF_QLORA)
		e->bucket[MF_B_WEIGHTS] = cdiv_up(P, 2);
	else
		e->bucket[MF_B_WEIGHTS] = mf_cmul(P, fp32 ? 4 : 2);
	if (w->method == MF_FULL) {
		e->trainable = P;
		e->bucket[MF_B_GRADIENTS] = mf_cmul(P, fp32 ? 4 : 2);
		e->bucket[MF_B_OPTIMIZER] =
		    mf_cmul(P, optimizer_bytes(w->optimizer, fp32));
		if (w->shard_gpus > 1)
			/* Gather one layer while the next is prefetched. */
			e->bucket[MF_B_SHARDING] =
			    mf_cmul(4, mf_model_layer_params(m));
	} else {
		T = mf_model_lora_params(m, w->lora_rank, w->lora_targets);
		e->trainable = T;
		e->bucket[MF_B_ADAPTERS] =
		    mf_cmul(T, adapter_bytes(w->optimizer));
	}
	e->bucket[MF_B_ACTIVATIONS] = activation_bytes(m, w);
	e->bucket[MF_B_LOGITS] =
	    mf_cmul(mf_cmul(w->seq_len, w->micro_batch), mf_cmul(m->vocab, 4));
}

static void
inference(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	static const int kv_bytes
	    [] = { [MF_KV_BF16] = 2, [MF_KV_FP16] = 2, [MF_KV_FP8] = 1 };

	e->bucket[MF_B_WEIGHTS] =
	    mf_cmul(e->params, w->precision == MF_FP32 ? 4 : 2);
	e->bucket[MF_B_KVCACHE] =
	    mf_cmul(mf_model_kv_bytes_per_token(m, kv_bytes[w->kv_dtype]),
	        mf_cmul(w->concurrency, w->context_len));
}

/* Bucket b as one GPU of an FSDP full shard over n holds it. */
static int64_t
per_gpu_bucket(const struct mf_estimate *e, enum mf_bucket b, int64_t n)
{
	if (b == MF_B_WEIGHTS || b == MF_B_GRADIENTS || b == MF_B_OPTIMIZER)
		return cdiv_up(e->bucket[b], n);
	return e->bucket[b];
}

int64_t
mf_est_per_gpu(const struct mf_estimate *e, int64_t shards)
{
	int64_t sum = 0;

	for (int b = 0; b < MF_B_COUNT; b++)
		sum =
		    mf_cadd(sum, per_gpu_bucket(e, (enum mf_bucket)b, shards));
	return sum;
}

enum mf_rc
mf_est_compute(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *out)
{
	struct mf_estimate e;
	int64_t shard = 1;
	int b;

	if (!workload_ok(w))
		return MF_EINVAL;
	memset(&e, 0, sizeof(e));
	e.params = mf_model_params(m);
	if (w->kind == MF_INFERENCE) {
		inference(m, w, &e);
	} else {
		training(m, w, &e);
		if (w->method == MF_FULL)
			shard = w->shard_gpus;
	}
	for (b = 0; b < MF_B_COUNT; b++)
		e.total = mf_cadd(e.total, e.bucket[b]);
	e.per_gpu = mf_est_per_gpu(&e, shard);
	if (e.params < 0 || e.trainable < 0 || e.total < 0 || e.per_gpu < 0)
		return MF_ERANGE;
	*out = e;
	return MF_OK;
}

enum mf_rc
mf_est_range_error(struct mf_error *err)
{
	return mf_error_set(err, MF_ERANGE, "spec.workload", 0, 0,
	    "the memory figures of this job overflow 63 bits");
}
