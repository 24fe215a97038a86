/*
 * fuzz_model.c: libFuzzer harness for model configs.
 *
 * Any byte string either fails to parse or to read as a config, or gives
 * a model whose parameter count fits in 63 bits; the estimate of a
 * default training (both estimators, sdpa and eager), LoRA, QLoRA and
 * inference workload (plain, and served by vLLM on one GPU and two, in the
 * config's storage and in int4) on it either reports
 * MF_ERANGE or adds up: total is the sum of the buckets and per_gpu is no
 * more than total.  The bucket loading (design 22) is QLoRA's under the
 * estimator pytorch alone, and where it is not 0 the peak's moment is
 * loading.
 */
#include <stdint.h>
#include <stdlib.h>

#include "doc/doc.h"
#include "estimate/estimate.h"
#include "manifest/manifest.h"
#include "model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_estimate(const struct mf_model *m, const struct mf_workload *w)
{
	struct mf_estimate e;
	int64_t sum = 0;
	enum mf_rc rc;
	int b;

	rc = mf_est_compute(m, w, &e);
	if (rc == MF_ERANGE)
		return;
	if (rc != MF_OK)
		abort();
	for (b = 0; b < MF_B_COUNT; b++) {
		if (e.bucket[b] < 0 ||
		    __builtin_add_overflow(sum, e.bucket[b], &sum))
			abort();
	}
	if (e.bucket[MF_B_LOADING] > 0 &&
	    (w->method != MF_QLORA || w->estimator != MF_EST_PYTORCH ||
	        w->kind != MF_TRAINING))
		abort();
	if ((mf_est_peak_moment(&e) == MF_PEAK_LOADING) !=
	    (e.bucket[MF_B_LOADING] > 0))
		abort();
	/* vLLM pads the vocabulary of the embeddings and the head. */
	if (e.total != sum || e.per_gpu < 0 || e.per_gpu > e.total ||
	    e.params < mf_model_params(m) ||
	    (w->server != MF_SERVER_VLLM && e.params != mf_model_params(m)))
		abort();
}

static void
check_model(const struct mf_model *m)
{
	struct mf_workload w;

	if (mf_model_params(m) <= 0 || mf_model_layer_params(m) <= 0 ||
	    m->heads % m->kv_heads != 0 || m->head_dim < 1)
		abort();
	for (int est = 0; est < MF_EST_COUNT; est++) {
		mf_workload_defaults(&w);
		w.estimator = (enum mf_estimator)est;
		w.seq_len = 4096;
		check_estimate(m, &w);
		w.attention = MF_EAGER;
		w.micro_batch = 1 + est;
		check_estimate(m, &w);
		w.shard_gpus = 8;
		w.checkpointing = 1;
		check_estimate(m, &w);
		w.method = MF_LORA;
		check_estimate(m, &w);
		/* Each adapter's dropped input and mask. */
		w.lora_dropout = 0.1;
		check_estimate(m, &w);
	}
	/* QLoRA on one GPU: under FSDP it is refused (mf_est_shard_refused). */
	w.shard_gpus = 1;
	w.method = MF_QLORA;
	check_estimate(m, &w);
	/* PEFT's fp32 cast on a few tokens, where loading may be the peak. */
	w.qlora_kbit_prep = 1;
	w.seq_len = 16;
	check_estimate(m, &w);
	/* bitsandbytes 0.42's matmul holding each 4-bit linear's input. */
	w.qlora_keeps_input = 1;
	check_estimate(m, &w);
	/* torchtune's load: torchao's to_nf4 beside the model built whole. */
	w.qlora_quantizer = MF_QZ_TORCHAO;
	check_estimate(m, &w);
	mf_workload_defaults(&w);
	w.kind = MF_INFERENCE;
	w.concurrency = 32;
	w.context_len = 8192;
	check_estimate(m, &w);
	/* Served by vLLM (the config's quantization_config, or int4), on
	 * one GPU and over tensor parallel 2. */
	w.server = MF_SERVER_VLLM;
	check_estimate(m, &w);
	w.tensor = 2;
	check_estimate(m, &w);
	w.weights_dtype = MF_WD_INT4;
	check_estimate(m, &w);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mf_doc *doc = NULL;
	struct mf_error err;
	struct mf_model m;

	if (mf_doc_parse((const char *)data, size, MF_DOC_AUTO, &doc, &err) !=
	    MF_OK)
		return 0;
	if (mf_model_read(mf_doc_root(doc), "config", &m, &err) == MF_OK)
		check_model(&m);
	mf_doc_free(doc);
	return 0;
}
