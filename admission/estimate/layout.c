/*
 * layout.c: an estimate laid out over the job's GPUs (design 15): what one
 * GPU of the largest pipeline stage holds under tensor, pipeline and
 * expert parallelism, and an inference job's capacity on one card
 * (maxConcurrency, maxContextLength).
 */
#include <stddef.h>
#include <string.h>

#include "est.h"

/*
 * Tokens a forward runs at once: those whose hidden states tensor and
 * pipeline parallel send.  Training: s x b; vllm: maxNumBatchedTokens;
 * plain inference: one sequence's prefill.
 */
static int64_t
forward_tokens(const struct mf_workload *w)
{
	if (w->kind == MF_TRAINING)
		return mf_cmul(w->seq_len, w->micro_batch);
	return w->server == MF_SERVER_VLLM ? w->batched_tokens : w->context_len;
}

/*
 * Training under tensor parallel divides the embeddings and the output
 * head by the vocabulary, as torchtitan's plan (DTensor, Shard(0) on
 * both) and Megatron do; the rows are DTensor's, unpadded (Megatron pads
 * the vocabulary to a multiple of 128 x T first: up to 128 x T - 1 rows of
 * the whole vocabulary more).  vLLM divides them too, the vocabulary
 * padded to a multiple of 64 first; plain inference keeps them whole on
 * every GPU.
 */
static int64_t
vocab_pad(const struct mf_workload *w)
{
	if (w->kind == MF_TRAINING)
		return MF_VOCAB_PAD_DTENSOR;
	/* vLLM's VocabParallelEmbedding and ParallelLMHead. */
	return w->server == MF_SERVER_VLLM ? MF_VOCAB_PAD_VLLM : 0;
}

/* The hidden states a GPU keeps for communication: 1 for tensor
 * parallel's all-reduce, 2 for a stage's send and receive. */
static int64_t
comm_states(const struct mf_workload *w)
{
	return (w->tensor > 1 ? 1 : 0) + (w->pipeline > 1 ? 2 : 0);
}

/* "n x tokens x h x e" after what f holds. */
static void
comm_text(struct mf_text *f, const struct mf_workload *w)
{
	mf_text_int(f, comm_states(w));
	mf_text_str(f, " x tokens x h x ");
	mf_text_int(f, mf_est_hidden_bytes(w));
}

/*
 * One GPU of a pipeline stage (first, last, or both when there is one
 * stage) of the layout w asks for: the buckets of the model's share on
 * it (mf_model_shard).  Pipeline training runs 1F1B, so the first stage
 * keeps the activations of P micro-batches in flight (stage i keeps P -
 * i): times P here, the last stage's once.  Communication buffers, a
 * hidden state of the forward's tokens each (e bytes an element, e the
 * activations' dtype): tensor parallel's all-reduce writes its output
 * into a new tensor beside its input; a pipeline stage sends one and
 * receives one.  Each bucket's formula, of the share, into formula
 * (NULL: none written).
 */
int64_t
mf_est_stage_layers(const struct mf_model *m, const struct mf_workload *w)
{
	return mf_cdiv_up(m->layers, w->pipeline);
}

/* What a stage's GPU holds beside its buckets: its KV cache a token, and
 * the two transients shardingBuffers names. */
struct stage_gpu {
	int64_t kv_token, loss_transient, layer_transient;
};

/* One GPU of a stage (the first, the last, or both): its buckets into
 * stage, its formulas into formula (NULL: none), the rest into gpu. */
static void
stage_buckets(const struct mf_model *m, const struct mf_workload *w, int first,
    int last, int64_t *stage, struct stage_gpu *gpu,
    char (*formula)[MF_FORMULA_MAX])
{
	int64_t layers = mf_est_stage_layers(m, w), th;
	struct mf_model part;
	struct mf_estimate e;
	struct mf_text f;

	mf_model_shard(m, w->tensor, w->expert, layers, first, last,
	    vocab_pad(w), &part);
	mf_est_clear(&e, formula == NULL);
	mf_est_buckets(&part, w, &e);
	/* A first stage's micro-batches in flight. */
	if (w->kind == MF_TRAINING && first && w->pipeline > 1) {
		e.bucket[MF_B_ACTIVATIONS] =
		    mf_cmul(e.bucket[MF_B_ACTIVATIONS], w->pipeline);
		mf_text_around(mf_est_text(&e, MF_B_ACTIVATIONS), "PP x (",
		    ")");
	}
	th = mf_cmul(forward_tokens(w),
	    mf_cmul(m->hidden, mf_est_hidden_bytes(w)));
	e.bucket[MF_B_COMM] = mf_cmul(comm_states(w), th);
	mf_text_init(&f, mf_est_text(&e, MF_B_COMM));
	comm_text(&f, w);
	memcpy(stage, e.bucket, sizeof(e.bucket));
	if (formula != NULL)
		memcpy(formula, e.formula, sizeof(e.formula));
	*gpu = (struct stage_gpu){ e.kv_token, e.loss_transient,
		e.layer_transient };
}

/* KV cache a token on all of a replica's GPUs: every layer once, on
 * each of the TP GPUs with its share of the KV heads (replicated when
 * there are fewer than TP). */
static int64_t
job_kv_token(const struct mf_model *m, const struct mf_workload *w)
{
	struct mf_model part;

	if (w->kind != MF_INFERENCE)
		return 0;
	mf_model_shard(m, w->tensor, 1, m->layers, 1, 1, 0, &part);
	return mf_cmul(w->tensor,
	    mf_model_kv_bytes_per_token(&part,
	        w->kv_dtype == MF_KV_FP8 ? 1 : 2));
}

static int64_t
stage_sum(const int64_t *stage, int64_t shards)
{
	int64_t sum = 0;

	for (int b = 0; b < MF_B_COUNT; b++)
		if (mf_est_counted((enum mf_bucket)b))
			sum = mf_cadd(sum,
			    mf_est_gpu_bucket(stage, (enum mf_bucket)b,
			        shards));
	return sum;
}

/*
 * e->stage: what one GPU of the largest stage holds; the middle stages
 * hold no more than the first or the last.  The whole job's
 * communication buffers are every GPU's of a replica.
 */
void
mf_est_layout(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	char formula[MF_B_COUNT][MF_FORMULA_MAX];
	char(*text)[MF_FORMULA_MAX] = e->figures_only ? NULL : formula;
	int64_t last[MF_B_COUNT];
	struct stage_gpu gpu, last_gpu;
	struct mf_text f;

	e->kv_token_job = job_kv_token(m, w);
	if (w->tensor == 1 && w->pipeline == 1 && w->expert == 1) {
		memcpy(e->stage, e->bucket, sizeof(e->bucket));
		e->gpu_loss_transient = e->loss_transient;
		e->gpu_layer_transient = e->layer_transient;
		return;
	}
	/* Every stage holds as many layers, so as much KV cache a token. */
	stage_buckets(m, w, 1, w->pipeline == 1, e->stage, &gpu,
	    e->figures_only ? NULL : e->gpu_formula);
	if (w->pipeline > 1) {
		stage_buckets(m, w, 0, 1, last, &last_gpu, text);
		if (stage_sum(last, e->shards) >
		    stage_sum(e->stage, e->shards)) {
			memcpy(e->stage, last, sizeof(last));
			gpu.loss_transient = last_gpu.loss_transient;
			gpu.layer_transient = last_gpu.layer_transient;
			if (text != NULL)
				memcpy(e->gpu_formula, formula,
				    sizeof(formula));
		}
	}
	e->kv_token = gpu.kv_token;
	e->gpu_loss_transient = gpu.loss_transient;
	e->gpu_layer_transient = gpu.layer_transient;
	e->bucket[MF_B_COMM] =
	    mf_cmul(e->stage[MF_B_COMM], mf_cmul(w->tensor, w->pipeline));
	/* Every GPU of a replica holds its own. */
	e->bucket[MF_B_NONTORCH] =
	    mf_cmul(e->stage[MF_B_NONTORCH], mf_cmul(w->tensor, w->pipeline));
	if (e->bucket[MF_B_NONTORCH] > 0) {
		int ctx = mf_est_vllm_context(w), paren = w->tensor > 1 || ctx;

		mf_text_init(&f, mf_est_text(e, MF_B_NONTORCH));
		mf_text_str(&f, paren ? "TP x PP x (" : "TP x PP x ");
		mf_text_str(&f,
		    w->tensor > 1 ? "nonTorch + allReduce" : "nonTorch");
		if (ctx)
			mf_text_str(&f, " + " MF_EST_CONTEXT_TEXT);
		if (paren)
			mf_text_str(&f, ")");
	}
	if (e->bucket[MF_B_COMM] > 0) {
		mf_text_init(&f, mf_est_text(e, MF_B_COMM));
		mf_text_str(&f, "TP x PP x ");
		comm_text(&f, w);
	}
}

int64_t
mf_est_max_seqs(const struct mf_estimate *e, int64_t usable)
{
	int64_t kv = mf_est_bucket_per_gpu(e, MF_B_KVCACHE);
	int64_t free = usable - (e->per_gpu - kv), seq;

	seq = mf_cmul(e->kv_token, e->seq_tokens);
	if (free <= 0 || seq <= 0)
		return 0;
	return free / seq;
}

int64_t
mf_est_max_context(const struct mf_estimate *e, int64_t usable, int64_t seqs)
{
	int64_t kv = mf_est_bucket_per_gpu(e, MF_B_KVCACHE);
	int64_t free = usable - (e->per_gpu - kv), per;

	per = mf_cmul(e->kv_token, seqs);
	if (free <= 0 || per <= 0 || e->block < 1)
		return 0;
	return free / per / e->block * e->block;
}
