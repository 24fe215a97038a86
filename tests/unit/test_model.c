/*
 * test_model.c: config.json fields, parameter counts and the registry of
 * shipped model configs.
 *
 * Expected counts are the published totals of shared/models/README.md or
 * worked out by hand in the comments beside them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "model/model.h"
#include "models.h"
#include "files.h"
#include "msg.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define CFG_PATH "spec.model.config"

static void
test_params_llama8b(void **state)
{
	(void)state;
	/*
	 * q 4096*4096 = 16,777,216; k, v 4096*(8*128) = 4,194,304 each;
	 * o 16,777,216: attention 41,943,040.  MLP 3*4096*14336 =
	 * 176,160,768.  Norms 2*4096 = 8,192.  Layer 218,112,000.
	 */
	assert_int_equal(mf_model_layer_params(&llama8b), 218112000);
	/*
	 * 32 layers 6,979,584,000 + embeddings and head 2*128256*4096 =
	 * 1,050,673,152 + final norm 4,096 = 8,030,261,248 (design 5).
	 */
	assert_int_equal(mf_model_params(&llama8b), INT64_C(8030261248));
}

static void
test_params_tied_tiny(void **state)
{
	(void)state;
	/*
	 * q 64*64 = 4,096; k, v 64*32 = 2,048 each; o 4,096: 12,288.
	 * MLP 3*64*128 = 24,576.  Norms 128.  Layer 36,992; 2 layers
	 * 73,984.  Embeddings 1000*64 = 64,000, no separate head.  Final
	 * norm 64.  Total 73,984 + 64,000 + 64 = 138,048.
	 */
	assert_int_equal(mf_model_layer_params(&tiny), 36992);
	assert_int_equal(mf_model_params(&tiny), 138048);
}

/*
 * The embeddings and the head divided by the vocabulary over tensor
 * GPUs, padded as each framework pads (mf_model_shard's vocab_pad).
 */
static void
test_shard_vocab_parallel(void **state)
{
	struct mf_model part;

	(void)state;
	/*
	 * Llama 3.1 8B over 8, DTensor: 128,256 / 8 = 16,032 rows.  A GPU
	 * holds a layer of 32 / 8 heads, 8 / 8 KV heads and 14,336 / 8 of
	 * the MLP: q 4096*512 = 2,097,152, k, v 4096*128 = 524,288 each, o
	 * 2,097,152, MLP 3*4096*1792 = 22,020,096, norms 8,192: 27,271,168
	 * a layer, 872,677,376 for 32; embeddings and head 2*16,032*4096 =
	 * 131,334,144; final norm 4,096: 1,004,015,616.
	 */
	mf_model_shard(&llama8b, 8, 1, 32, 1, 1, MF_VOCAB_PAD_DTENSOR, &part);
	assert_int_equal(part.vocab_rows, 16032);
	assert_int_equal(part.vocab, 128256);
	assert_int_equal(mf_model_params(&part), INT64_C(1004015616));
	/* The largest tensor is still a share of the vocabulary's: the
	 * head's 16,032*4096 rows, not a layer's 4096*1792. */
	assert_int_equal(mf_model_largest_param(&part), 65667072);
	/*
	 * Megatron pads 128,256 to a multiple of 128*8 = 1,024: 126*1024 =
	 * 129,024, 16,128 rows; vLLM to one of 64: 128,256 = 2004*64 is
	 * one, 16,032.
	 */
	mf_model_shard(&llama8b, 8, 1, 32, 1, 1, MF_VOCAB_PAD_MEGATRON * 8,
	    &part);
	assert_int_equal(part.vocab_rows, 16128);
	mf_model_shard(&llama8b, 8, 1, 32, 1, 1, MF_VOCAB_PAD_VLLM, &part);
	assert_int_equal(part.vocab_rows, 16032);
	/*
	 * tiny (V 1,000, tied) over 3: DTensor ceil(1000 / 3) = 334 rows;
	 * vLLM pads to 1,024, ceil(1024 / 3) = 342.  Tied: one matrix,
	 * 342*64 = 21,888 on the GPU with the embeddings, and its copy on
	 * a last stage without them.
	 */
	mf_model_shard(&tiny, 3, 1, 2, 1, 1, MF_VOCAB_PAD_DTENSOR, &part);
	assert_int_equal(part.vocab_rows, 334);
	mf_model_shard(&tiny, 3, 1, 2, 1, 1, MF_VOCAB_PAD_VLLM, &part);
	assert_int_equal(part.vocab_rows, 342);
	/*
	 * A layer over 3: q 64*32 = 2,048, k, v 64*16 = 1,024 each (2 KV
	 * heads, one a GPU), o 2,048, MLP 3*64*43 = 8,256, norms 128:
	 * 14,528, two 29,056; + 21,888 + 64 = 51,008.
	 */
	assert_int_equal(mf_model_params(&part), 51008);
	mf_model_shard(&tiny, 3, 1, 1, 0, 1, MF_VOCAB_PAD_VLLM, &part);
	assert_int_equal(mf_model_params(&part), 14528 + 21888 + 64);
	/* vocab_pad 0 keeps them whole: 64,000 + 64 + 29,056. */
	mf_model_shard(&tiny, 3, 1, 2, 1, 1, 0, &part);
	assert_int_equal(mf_model_vocab_rows(&part), 1000);
	assert_int_equal(mf_model_params(&part), 93120);
}

static void
test_params_head_dim(void **state)
{
	struct mf_model m = given_head_dim;

	(void)state;
	/*
	 * a*d = 128 (not h = 96), kv*d = 64.  q 96*128 = 12,288; k, v
	 * 96*64 = 6,144 each; o 128*96 = 12,288: 36,864.  MLP 3*96*256 =
	 * 73,728.  Norms 192.  Layer 110,784; 3 layers 332,352.
	 * Embeddings and head 2*500*96 = 96,000.  Final norm 96.
	 * Total 428,448.
	 */
	assert_int_equal(mf_model_layer_params(&m), 110784);
	assert_int_equal(mf_model_params(&m), 428448);
	/* 2 * 3 layers * 2 kv heads * 32 * 2 bytes = 768. */
	assert_int_equal(mf_model_kv_bytes_per_token(&m, 2), 768);
}

static void
test_params_moe_small(void **state)
{
	struct mf_model m = {
		.hidden = 32,
		.layers = 2,
		.heads = 4,
		.kv_heads = 4,
		.head_dim = 8,
		.intermediate = 64,
		.vocab = 100,
		.experts = 4,
		.norms_per_layer = 2,
	};

	(void)state;
	/*
	 * Attention 4*32*32 = 4,096.  Experts 4 * 3*32*64 = 24,576.
	 * Router 32*4 = 128.  Norms 64.  Layer 28,864; 2 layers 57,728.
	 * Embeddings and head 2*100*32 = 6,400.  Final norm 32.
	 * Total 64,160.
	 */
	assert_int_equal(mf_model_layer_params(&m), 28864);
	assert_int_equal(mf_model_params(&m), 64160);
	/*
	 * LoRA r 8, all-linear: q k v o 4*(32+32) = 256; each expert's
	 * gate, up, down 3*(32+64) = 288, times 4 = 1,152; router 32+4 =
	 * 36.  Per layer 1,444; 2 layers 2,888; times 8 = 23,104.
	 */
	assert_int_equal(mf_model_lora_params(&m, 8, MF_LORA_MASK_ALL), 23104);
	/* Attention only: 256 * 2 * 8 = 4,096. */
	assert_int_equal(mf_model_lora_params(&m, 8, MF_LORA_MASK_ATTENTION),
	    4096);
	/* The widest output: an expert's gate or up, 64, above the
	 * router's 4 and attention's 32; its B, 64 x 8, the largest. */
	assert_int_equal(mf_model_lora_widest(&m, MF_LORA_MASK_ALL), 64);
	assert_int_equal(mf_model_lora_widest(&m, MF_LORA_MASK_ATTENTION), 32);
	assert_int_equal(mf_model_lora_largest(&m, 8, MF_LORA_MASK_ALL), 512);
	/*
	 * The largest tensor: transformers' experts' gate_up_proj, 4 x 2*64
	 * x 32 = 16,384, one parameter for every expert; above the
	 * embeddings' 100*32 = 3,200 and q's 32*32 = 1,024.
	 */
	assert_int_equal(mf_model_largest_layer_param(&m), 16384);
	assert_int_equal(mf_model_largest_param(&m), 16384);
}

static void
test_params_qkv_bias_and_norms(void **state)
{
	struct mf_model m = tiny;

	(void)state;
	/*
	 * Untied, with q/k/v biases: 64 + 2*32 = 128 more per layer:
	 * layer 37,120, 2 layers 74,240; embeddings and head 128,000;
	 * final norm 64.  Total 202,304.
	 */
	m.tied_embeddings = 0;
	m.qkv_bias = 1;
	assert_int_equal(mf_model_layer_params(&m), 37120);
	assert_int_equal(mf_model_params(&m), 202304);
	/*
	 * Tied, 4 norms: 2*64 = 128 more per layer than tiny: 37,120 per
	 * layer, 74,240 + 64,000 + 64 = 138,304.
	 */
	m = tiny;
	m.norms_per_layer = 4;
	assert_int_equal(mf_model_params(&m), 138304);
}

static void
test_lora_llama8b(void **state)
{
	(void)state;
	/*
	 * r 16: q 16*(4096+4096) = 131,072; k, v 16*(4096+1024) = 81,920
	 * each; o 131,072; gate, up 16*(4096+14336) = 294,912 each; down
	 * 294,912.  Per layer 1,310,720; 32 layers 41,943,040 (design 5).
	 */
	assert_int_equal(mf_model_lora_params(&llama8b, 16, MF_LORA_MASK_ALL),
	    41943040);
	/* q k v o only: 425,984 per layer, 13,631,488 in all. */
	assert_int_equal(mf_model_lora_params(&llama8b, 16,
	                     MF_LORA_MASK_ATTENTION),
	    13631488);
	assert_int_equal(mf_model_lora_params(&llama8b, 0, MF_LORA_MASK_ALL),
	    0);
	assert_int_equal(mf_model_lora_params(&llama8b, -1, MF_LORA_MASK_ALL),
	    -1);
}

/*
 * Phi-3-mini as its config.json gives it: h 3072, L 32, a = kv = 32, d
 * 96, I 8192; q, k and v in one qkv_proj, gate and up in one
 * gate_up_proj, each one linear to PEFT.
 */
static void
test_lora_phi3_fused(void **state)
{
	struct mf_model m = llama8b;

	(void)state;
	m.block = MF_BLOCK_PHI3;
	m.hidden = 3072;
	m.heads = 32;
	m.kv_heads = 32;
	m.head_dim = 96;
	m.intermediate = 8192;
	/*
	 * r 16: qkv_proj 16*(3072+9216) = 196,608; o 16*(3072+3072) =
	 * 98,304; gate_up 16*(3072+16384) = 311,296; down 16*(8192+3072) =
	 * 180,224.  Per layer 786,432; 32 layers 25,165,824.
	 */
	assert_int_equal(mf_model_lora_params(&m, 16, MF_LORA_MASK_ALL),
	    25165824);
	/* qkv_proj and o_proj: 294,912 per layer, 9,437,184 in all. */
	assert_int_equal(mf_model_lora_params(&m, 16, MF_LORA_MASK_ATTENTION),
	    9437184);
	/* The largest adapter matrix is gate_up's B, 2I x r = 262,144;
	 * attention's qkv B, 9216 x 16 = 147,456. */
	assert_int_equal(mf_model_lora_largest(&m, 16, MF_LORA_MASK_ALL),
	    262144);
	assert_int_equal(mf_model_lora_largest(&m, 16, MF_LORA_MASK_ATTENTION),
	    147456);
	/* The widest output: gate_up's 2I = 16,384; qkv's 9,216. */
	assert_int_equal(mf_model_lora_widest(&m, MF_LORA_MASK_ALL), 16384);
	assert_int_equal(mf_model_lora_widest(&m, MF_LORA_MASK_ATTENTION),
	    9216);
	/* Llama 3.1 8B: the widest is gate's and up's I; q's a*d. */
	assert_int_equal(mf_model_lora_widest(&llama8b, MF_LORA_MASK_ALL),
	    14336);
	assert_int_equal(mf_model_lora_widest(&llama8b, MF_LORA_MASK_ATTENTION),
	    4096);
}

static void
test_kv_bytes_llama8b(void **state)
{
	(void)state;
	/* 2 * 32 layers * 8 kv heads * 128 * 2 bytes = 131,072. */
	assert_int_equal(mf_model_kv_bytes_per_token(&llama8b, 2), 131072);
	assert_int_equal(mf_model_kv_bytes_per_token(&llama8b, 1), 65536);
}

static void
test_params_overflow(void **state)
{
	struct mf_model m = largest;

	(void)state;
	/* q alone is 2^20 * 2^12 * 2^20 = 2^52 per layer; 2^12 layers. */
	assert_int_equal(mf_model_params(&m), -1);
	assert_int_equal(mf_model_lora_params(&m, INT64_C(1) << 40,
	                     MF_LORA_MASK_ALL),
	    -1);
	m.hidden = -1;
	assert_int_equal(mf_model_layer_params(&m), -1);
}

/* --- reading config.json -------------------------------------------- */

static enum mf_rc
read_text(const char *text, struct mf_model *m, struct mf_error *err)
{
	struct mf_doc *doc = NULL;
	enum mf_rc rc;

	rc = mf_doc_parse(text, strlen(text), MF_DOC_AUTO, &doc, err);
	assert_int_equal(rc, MF_OK);
	rc = mf_model_read(mf_doc_root(doc), CFG_PATH, m, err);
	mf_doc_free(doc);
	return rc;
}

/* The tiny model's fields, one per line so one can be left out. */
static const char *const tiny_fields[] = {
	"\"hidden_size\": 64",
	"\"num_hidden_layers\": 2",
	"\"num_attention_heads\": 4",
	"\"num_key_value_heads\": 2",
	"\"intermediate_size\": 128",
	"\"vocab_size\": 1000",
	"\"model_type\": \"llama\"",
	"\"tie_word_embeddings\": true",
};

/*
 * The tiny config as JSON without the field whose text starts with skip
 * (NULL: none), with extra appended (NULL: nothing).
 */
static const char *
tiny_json(const char *skip, const char *extra)
{
	static char buf[1024];
	size_t i, used;

	used = (size_t)snprintf(buf, sizeof(buf), "{");
	for (i = 0; i < NELEM(tiny_fields); i++) {
		if (skip != NULL &&
		    strncmp(tiny_fields[i], skip, strlen(skip)) == 0)
			continue;
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s",
		    used > 1 ? ", " : "", tiny_fields[i]);
	}
	if (extra != NULL)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, ", %s",
		    extra);
	snprintf(buf + used, sizeof(buf) - used, "}");
	return buf;
}

static void
test_read_tiny(void **state)
{
	struct mf_error err;
	struct mf_model m;

	(void)state;
	memset(&m, 0, sizeof(m));
	assert_int_equal(read_text(tiny_json(NULL, NULL), &m, &err), MF_OK);
	assert_int_equal(m.hidden, 64);
	assert_int_equal(m.layers, 2);
	assert_int_equal(m.heads, 4);
	assert_int_equal(m.kv_heads, 2);
	assert_int_equal(m.head_dim, 16);
	assert_int_equal(m.intermediate, 128);
	assert_int_equal(m.vocab, 1000);
	assert_int_equal(m.experts, 0);
	assert_int_equal(m.tied_embeddings, 1);
	assert_int_equal(m.qkv_bias, 0);
	assert_int_equal(m.norms_per_layer, 2);
	/* 138,048: see test_params_tied_tiny. */
	assert_int_equal(mf_model_params(&m), 138048);
}

/*
 * The context limit (vllm/config/model.py _get_and_verify_max_len):
 * max_position_embeddings; times a linear or dynamic rope_scaling factor;
 * left as it is by llama3; for YaRN the larger of it and
 * original_max_position_embeddings x factor (Qwen2.5's recipe, 32,768 x
 * 4 = 131,072).  No max_position_embeddings: no limit (0).
 */
static void
test_read_context(void **state)
{
	struct mf_error err;
	struct mf_model m;

	(void)state;
	assert_int_equal(read_text(tiny_json(NULL, NULL), &m, &err), MF_OK);
	assert_int_equal(m.max_context, 0);
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"max_position_embeddings\": 4096"),
	                     &m, &err),
	    MF_OK);
	assert_int_equal(m.max_context, 4096);
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"max_position_embeddings\": 4096, "
	                               "\"rope_scaling\": {\"type\": "
	                               "\"linear\", \"factor\": 4.0}"),
	                     &m, &err),
	    MF_OK);
	assert_int_equal(m.max_context, 16384);
	assert_true(m.rope_factor == 4.0);
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"max_position_embeddings\": 131072, "
	                               "\"rope_scaling\": {\"rope_type\": "
	                               "\"llama3\", \"factor\": 8.0, "
	                               "\"original_max_position_embeddings\": "
	                               "8192}"),
	                     &m, &err),
	    MF_OK);
	assert_int_equal(m.max_context, 131072);
	assert_true(m.rope_factor == 1.0);
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"max_position_embeddings\": 32768, "
	                               "\"rope_scaling\": {\"type\": \"yarn\", "
	                               "\"factor\": 4.0, "
	                               "\"original_max_position_embeddings\": "
	                               "32768}"),
	                     &m, &err),
	    MF_OK);
	assert_int_equal(m.max_context, 131072);
	assert_int_equal(m.rope_original, 32768);
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"max_position_embeddings\": 4096, "
	                               "\"rope_scaling\": [4]"),
	                     &m, &err),
	    MF_EINVAL);
	assert_string_equal(err.field, CFG_PATH ".rope_scaling");
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"max_position_embeddings\": 4096, "
	                               "\"rope_scaling\": {\"factor\": \"x\"}"),
	                     &m, &err),
	    MF_EINVAL);
	assert_string_equal(err.field, CFG_PATH ".rope_scaling.factor");
}

/*
 * quantization_config as published checkpoints write it: AWQ
 * (hugging-quants' Llama 3.1 AWQ INT4: bits 4, group_size 128,
 * zero_point true, version gemm), GPTQ (group_size -1: a scale a row),
 * bitsandbytes 4-bit with double quantization, fp8 with 128 x 128 block
 * scales, compressed-tensors W4A16 groups of 128 with lm_head ignored.
 */
static void
test_read_quantization_config(void **state)
{
	struct mf_error err;
	struct mf_model m;

	(void)state;
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"quantization_config\": {\"bits\": 4,"
	                               " \"group_size\": 128, "
	                               "\"modules_to_not_convert\": null, "
	                               "\"quant_method\": \"awq\", \"version\":"
	                               " \"gemm\", \"zero_point\": true}"),
	                     &m, &err),
	    MF_OK);
	assert_int_equal(m.quant.format, MF_Q_SCALED);
	assert_string_equal(m.quant.method, "awq");
	assert_int_equal(m.quant.bits, 4);
	assert_int_equal(m.quant.group, 128);
	assert_int_equal(m.quant.scale_bytes, 2);
	assert_int_equal(m.quant.zero_points, 1);
	assert_int_equal(m.quant.g_idx, 0);
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"quantization_config\": {\"bits\": 8,"
	                               " \"group_size\": -1, \"desc_act\": "
	                               "false, \"sym\": true, "
	                               "\"quant_method\": \"gptq\"}"),
	                     &m, &err),
	    MF_OK);
	assert_int_equal(m.quant.bits, 8);
	assert_int_equal(m.quant.group, MF_Q_PER_ROW);
	assert_int_equal(m.quant.g_idx, 1);
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"quantization_config\": {"
	                               "\"quant_method\": \"bitsandbytes\", "
	                               "\"load_in_4bit\": true, "
	                               "\"bnb_4bit_quant_type\": \"nf4\", "
	                               "\"bnb_4bit_use_double_quant\": true, "
	                               "\"llm_int8_skip_modules\": "
	                               "[\"lm_head\", \"mlp.down_proj\"]}"),
	                     &m, &err),
	    MF_OK);
	assert_int_equal(m.quant.format, MF_Q_NF4);
	assert_int_equal(m.quant.group, 64);
	assert_int_equal(m.quant.double_quant, 1);
	assert_int_equal(m.quant.keep, 1u << MF_LIN_DOWN);
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"quantization_config\": {"
	                               "\"quant_method\": \"fp8\", "
	                               "\"activation_scheme\": \"dynamic\", "
	                               "\"weight_block_size\": [128, 128]}"),
	                     &m, &err),
	    MF_OK);
	assert_int_equal(m.quant.bits, 8);
	assert_int_equal(m.quant.block_out, 128);
	assert_int_equal(m.quant.block_in, 128);
	assert_int_equal(m.quant.scale_bytes, 4);
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"quantization_config\": {"
	                               "\"quant_method\": "
	                               "\"compressed-tensors\", \"format\": "
	                               "\"pack-quantized\", \"config_groups\": "
	                               "{\"group_0\": {\"targets\": "
	                               "[\"Linear\"], \"weights\": "
	                               "{\"num_bits\": 4, \"type\": \"int\", "
	                               "\"strategy\": \"group\", "
	                               "\"group_size\": 128, \"symmetric\": "
	                               "false}}}, \"ignore\": [\"lm_head\"]}"),
	                     &m, &err),
	    MF_OK);
	assert_string_equal(m.quant.method, "compressed-tensors");
	assert_int_equal(m.quant.bits, 4);
	assert_int_equal(m.quant.group, 128);
	assert_int_equal(m.quant.scale_bytes, 2);
	assert_int_equal(m.quant.zero_points, 1);
	assert_int_equal(m.quant.keep, 0);
	/* A method memfloor does not know is kept, for a 400 at estimate
	 * time unless weightsDtype is given. */
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"quantization_config\": {"
	                               "\"quant_method\": \"hqq\"}"),
	                     &m, &err),
	    MF_OK);
	assert_string_equal(m.quant_unknown, "hqq");
	assert_int_equal(m.quant.format, MF_Q_16BIT);
	/* Wrong types name the field. */
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"quantization_config\": {"
	                               "\"quant_method\": \"awq\", \"bits\": "
	                               "\"four\"}"),
	                     &m, &err),
	    MF_EINVAL);
	assert_string_equal(err.field, CFG_PATH ".quantization_config.bits");
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"quantization_config\": {"
	                               "\"quant_method\": \"bitsandbytes\"}"),
	                     &m, &err),
	    MF_EINVAL);
	assert_string_equal(err.field, CFG_PATH ".quantization_config");
	assert_int_equal(read_text(tiny_json(NULL,
	                               "\"quantization_config\": {"
	                               "\"quant_method\": \"awq\", "
	                               "\"modules_to_not_convert\": \"gate\"}"),
	                     &m, &err),
	    MF_EINVAL);
	assert_string_equal(err.field,
	    CFG_PATH ".quantization_config.modules_to_not_convert");
	assert_int_equal(
	    read_text(tiny_json(NULL, "\"quantization_config\": {\"bits\": 4}"),
	        &m, &err),
	    MF_EINVAL);
	assert_string_equal(err.text, "has no quant_method");
}

static void
test_read_defaults(void **state)
{
	struct mf_error err;
	struct mf_model m;
	const char *cfg =
	    "{\"hidden_size\": 64, \"num_hidden_layers\": 2, "
	    "\"num_attention_heads\": 4, \"intermediate_size\": 128, "
	    "\"vocab_size\": 1000, \"head_dim\": null, "
	    "\"num_local_experts\": null, \"tie_word_embeddings\": null}";

	(void)state;
	assert_int_equal(read_text(cfg, &m, &err), MF_OK);
	/* kv heads default to heads, head_dim to 64 / 4. */
	assert_int_equal(m.kv_heads, 4);
	assert_int_equal(m.head_dim, 16);
	assert_int_equal(m.experts, 0);
	/* No model_type: an untied head, 2 norms, no biases. */
	assert_int_equal(m.tied_embeddings, 0);
	assert_int_equal(m.qkv_bias, 0);
	assert_int_equal(m.norms_per_layer, 2);
}

static void
test_read_yaml(void **state)
{
	struct mf_error err;
	struct mf_model m;
	const char *cfg =
	    "hidden_size: 32\nnum_hidden_layers: 2\n"
	    "num_attention_heads: 4\nintermediate_size: 64\n"
	    "vocab_size: 100\nnum_local_experts: 4\nmodel_type: mixtral\n";

	(void)state;
	assert_int_equal(read_text(cfg, &m, &err), MF_OK);
	assert_int_equal(m.experts, 4);
	assert_int_equal(m.kv_heads, 4);
	assert_int_equal(m.head_dim, 8);
	/* 64,160: see test_params_moe_small. */
	assert_int_equal(mf_model_params(&m), 64160);
}

struct arch_case {
	const char *type; /* model_type, or NULL for none */
	const char *tie;  /* tie_word_embeddings, or NULL for none */
	int tied;
	int qkv_bias;
	int norms;
};

#define TINY_DIMS \
	"\"hidden_size\": 64, \"num_hidden_layers\": 2, " \
	"\"num_attention_heads\": 4, \"num_key_value_heads\": 2, " \
	"\"intermediate_size\": 128, \"vocab_size\": 1000"

static void
check_arch(const struct arch_case *c)
{
	char type[64] = "", tie[64] = "", cfg[512];
	struct mf_error err;
	struct mf_model m;

	if (c->type != NULL)
		snprintf(type, sizeof(type), ", \"model_type\": \"%s\"",
		    c->type);
	if (c->tie != NULL)
		snprintf(tie, sizeof(tie), ", \"tie_word_embeddings\": %s",
		    c->tie);
	snprintf(cfg, sizeof(cfg), "{" TINY_DIMS "%s%s}", type, tie);
	assert_int_equal(read_text(cfg, &m, &err), MF_OK);
	if (m.tied_embeddings != c->tied || m.qkv_bias != c->qkv_bias ||
	    m.norms_per_layer != c->norms) {
		print_error("%s: tied %d bias %d norms %d\n", cfg,
		    m.tied_embeddings, m.qkv_bias, m.norms_per_layer);
		fail();
	}
}

static void
test_read_arch_defaults(void **state)
{
	/*
	 * tie_word_embeddings defaults of the Hugging Face config classes;
	 * Qwen2's q/k/v biases and Gemma-2's 4 norms (models/README.md).
	 */
	static const struct arch_case cases[] = {
		{ "llama", NULL, 0, 0, 2 },
		{ "mistral", NULL, 0, 0, 2 },
		{ "mixtral", NULL, 0, 0, 2 },
		{ "phi3", NULL, 0, 0, 2 },
		{ "qwen2", NULL, 0, 1, 2 },
		{ "gemma", NULL, 1, 0, 2 },
		{ "gemma2", NULL, 1, 0, 4 },
		{ "gemma2", "false", 0, 0, 4 },
		{ "llama", "true", 1, 0, 2 },
		{ "qwen2", "true", 1, 1, 2 },
		{ "qwen2_moe", NULL, 0, 1, 2 },
		{ NULL, NULL, 0, 0, 2 },
		{ NULL, "true", 1, 0, 2 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++)
		check_arch(&cases[i]);
}

struct bad_case {
	const char *skip;  /* template field left out */
	const char *extra; /* field added */
	const char *field; /* expected mf_error.field */
};

static void
test_read_rejects(void **state)
{
	static const struct bad_case cases[] = {
		{ "\"hidden_size\"", NULL, CFG_PATH ".hidden_size" },
		{ "\"num_hidden_layers\"", NULL,
		    CFG_PATH ".num_hidden_layers" },
		{ "\"num_attention_heads\"", NULL,
		    CFG_PATH ".num_attention_heads" },
		{ "\"intermediate_size\"", NULL,
		    CFG_PATH ".intermediate_size" },
		{ "\"vocab_size\"", NULL, CFG_PATH ".vocab_size" },
		{ "\"hidden_size\"", "\"hidden_size\": null",
		    CFG_PATH ".hidden_size" },
		{ "\"hidden_size\"", "\"hidden_size\": 0",
		    CFG_PATH ".hidden_size" },
		{ "\"hidden_size\"", "\"hidden_size\": -64",
		    CFG_PATH ".hidden_size" },
		{ "\"hidden_size\"", "\"hidden_size\": 64.5",
		    CFG_PATH ".hidden_size" },
		{ "\"hidden_size\"", "\"hidden_size\": \"64\"",
		    CFG_PATH ".hidden_size" },
		{ "\"hidden_size\"", "\"hidden_size\": 1048577",
		    CFG_PATH ".hidden_size" },
		{ "\"num_hidden_layers\"", "\"num_hidden_layers\": 4097",
		    CFG_PATH ".num_hidden_layers" },
		{ "\"num_attention_heads\"", "\"num_attention_heads\": 4097",
		    CFG_PATH ".num_attention_heads" },
		{ "\"num_key_value_heads\"", "\"num_key_value_heads\": 0",
		    CFG_PATH ".num_key_value_heads" },
		{ "\"num_key_value_heads\"", "\"num_key_value_heads\": 3",
		    CFG_PATH ".num_key_value_heads" },
		{ "\"num_key_value_heads\"", "\"num_key_value_heads\": 8",
		    CFG_PATH ".num_key_value_heads" },
		{ "\"intermediate_size\"", "\"intermediate_size\": 1048577",
		    CFG_PATH ".intermediate_size" },
		{ "\"vocab_size\"", "\"vocab_size\": 16777217",
		    CFG_PATH ".vocab_size" },
		{ NULL, "\"head_dim\": 0", CFG_PATH ".head_dim" },
		{ NULL, "\"head_dim\": 1048577", CFG_PATH ".head_dim" },
		{ "\"model_type\"",
		    "\"model_type\": \"mixtral\", \"num_local_experts\": 0",
		    CFG_PATH ".num_local_experts" },
		{ "\"model_type\"",
		    "\"model_type\": \"mixtral\", \"num_local_experts\": 1025",
		    CFG_PATH ".num_local_experts" },
		{ "\"model_type\"",
		    "\"model_type\": \"mixtral\", \"num_local_experts\": 4, "
		    "\"num_experts_per_tok\": 5",
		    CFG_PATH ".num_experts_per_tok" },
		{ "\"model_type\"",
		    "\"model_type\": \"qwen2_moe\", \"num_experts\": 0",
		    CFG_PATH ".num_experts" },
		{ "\"model_type\"",
		    "\"model_type\": \"qwen2_moe\", "
		    "\"moe_intermediate_size\": 0",
		    CFG_PATH ".moe_intermediate_size" },
		{ "\"model_type\"", "\"model_type\": \"gpt2\"",
		    CFG_PATH ".model_type" },
		{ "\"num_attention_heads\"", "\"num_attention_heads\": 5",
		    CFG_PATH ".num_key_value_heads" },
		{ "\"model_type\"", "\"model_type\": 2",
		    CFG_PATH ".model_type" },
		{ "\"tie_word_embeddings\"", "\"tie_word_embeddings\": 1",
		    CFG_PATH ".tie_word_embeddings" },
	};
	struct mf_model m, before;
	struct mf_error err;
	size_t i;

	(void)state;
	memset(&before, 0x5a, sizeof(before));
	for (i = 0; i < NELEM(cases); i++) {
		m = before;
		memset(&err, 0, sizeof(err));
		if (read_text(tiny_json(cases[i].skip, cases[i].extra), &m,
		        &err) != MF_EINVAL ||
		    strcmp(err.field, cases[i].field) != 0 ||
		    strncmp(MSG(&err), cases[i].field,
		        strlen(cases[i].field)) != 0) {
			print_error("%s: field '%s' message '%s'\n",
			    tiny_json(cases[i].skip, cases[i].extra), err.field,
			    MSG(&err));
			fail();
		}
		assert_memory_equal(&m, &before, sizeof(m));
	}
}

/*
 * Qwen2-MoE names its experts num_experts, moe_intermediate_size and
 * shared_expert_intermediate_size; the keys left out take
 * Qwen2MoeConfig's defaults (60 experts, top 4, 1408, 5632, no
 * renormalisation).  Mixtral always renormalises.
 */
static void
test_read_qwen2_moe_experts(void **state)
{
	struct mf_error err;
	struct mf_model m;

	(void)state;
	assert_int_equal(read_text(tiny_json("\"model_type\"",
	                               "\"model_type\": \"qwen2_moe\", "
	                               "\"num_experts\": 6, "
	                               "\"num_experts_per_tok\": 3, "
	                               "\"moe_intermediate_size\": 32, "
	                               "\"norm_topk_prob\": true"),
	                     &m, &err),
	    MF_OK);
	assert_int_equal(m.block, MF_BLOCK_QWEN2MOE);
	assert_int_equal(m.experts, 6);
	assert_int_equal(m.experts_per_tok, 3);
	assert_int_equal(m.expert_intermediate, 32);
	assert_int_equal(m.shared_intermediate, 5632);
	assert_int_equal(m.renorm_topk, 1);
	assert_int_equal(m.qkv_bias, 1);
	assert_int_equal(read_text(tiny_json("\"model_type\"",
	                               "\"model_type\": \"qwen2_moe\""),
	                     &m, &err),
	    MF_OK);
	assert_int_equal(m.experts, 60);
	assert_int_equal(m.experts_per_tok, 4);
	assert_int_equal(m.expert_intermediate, 1408);
	assert_int_equal(m.renorm_topk, 0);
	assert_int_equal(read_text(tiny_json("\"model_type\"",
	                               "\"model_type\": \"mixtral\", "
	                               "\"num_local_experts\": 4"),
	                     &m, &err),
	    MF_OK);
	assert_int_equal(m.block, MF_BLOCK_MIXTRAL);
	assert_int_equal(m.experts, 4);
	assert_int_equal(m.experts_per_tok, 2);
	assert_int_equal(m.renorm_topk, 1);
}

/* An unknown model_type is refused by name, with the known ones listed. */
static void
test_read_unknown_type(void **state)
{
	struct mf_error err;
	struct mf_model m;

	(void)state;
	memset(&err, 0, sizeof(err));
	assert_int_equal(read_text(tiny_json("\"model_type\"",
	                               "\"model_type\": \"gpt2\""),
	                     &m, &err),
	    MF_EINVAL);
	assert_string_equal(err.field, CFG_PATH ".model_type");
	assert_non_null(strstr(MSG(&err),
	    "'gpt2' is not a known model_type (known: llama, mistral, "
	    "mixtral, qwen2, qwen2_moe, phi3, gemma, gemma2)"));
}

static void
test_read_hidden_not_divisible(void **state)
{
	struct mf_error err;
	struct mf_model m;
	/* 100 / 8 heads is not whole; kv 8 divides heads 8. */
#define UNEVEN \
	"{\"hidden_size\": 100, \"num_hidden_layers\": 2, " \
	"\"num_attention_heads\": 8, \"intermediate_size\": 128, " \
	"\"vocab_size\": 1000"

	(void)state;
	assert_int_equal(read_text(UNEVEN "}", &m, &err), MF_EINVAL);
	assert_string_equal(err.field, CFG_PATH ".hidden_size");
	/* With head_dim given the shape is fine. */
	assert_int_equal(read_text(UNEVEN ", \"head_dim\": 16}", &m, &err),
	    MF_OK);
	assert_int_equal(m.head_dim, 16);
}

static void
test_read_yaml_position(void **state)
{
	struct mf_error err;
	struct mf_model m;
	const char *cfg = "hidden_size: 64\nnum_hidden_layers: 2\n"
	                  "num_attention_heads: 4\nintermediate_size: big\n"
	                  "vocab_size: 100\n";

	(void)state;
	assert_int_equal(read_text(cfg, &m, &err), MF_EINVAL);
	assert_string_equal(err.field, CFG_PATH ".intermediate_size");
	assert_int_equal(err.line, 4);
	assert_int_equal(err.column, 20);
}

static void
test_read_not_a_mapping(void **state)
{
	struct mf_error err;
	struct mf_model m;

	(void)state;
	assert_int_equal(read_text("[1, 2]", &m, &err), MF_EINVAL);
	assert_string_equal(err.field, CFG_PATH);
	assert_non_null(strstr(MSG(&err), "mapping"));
	assert_int_equal(read_text("\"llama\"", &m, &err), MF_EINVAL);
	assert_int_equal(mf_model_read(NULL, CFG_PATH, &m, &err), MF_EINVAL);
	assert_string_equal(err.field, CFG_PATH);
	/* err may be NULL. */
	assert_int_equal(mf_model_read(NULL, CFG_PATH, &m, NULL), MF_EINVAL);
}

static void
test_read_too_large(void **state)
{
	struct mf_error err;
	struct mf_model m;
	/* Every field at its cap: q alone is 2^52 per layer, 2^12 layers. */
	const char *cfg =
	    "{\"hidden_size\": 1048576, "
	    "\"num_hidden_layers\": 4096, \"num_attention_heads\": 4096, "
	    "\"head_dim\": 1048576, \"intermediate_size\": 1048576, "
	    "\"vocab_size\": 16777216, \"num_local_experts\": 1024}";

	(void)state;
	assert_int_equal(read_text(cfg, &m, &err), MF_EINVAL);
	assert_string_equal(err.field, CFG_PATH);
	assert_non_null(strstr(MSG(&err), "63 bits"));
}

/* --- the registry ---------------------------------------------------- */

static void
test_models_load_shipped(void **state)
{
	struct mf_models *models = NULL;
	const struct mf_model *m;
	struct mf_model got;
	struct mf_error err;
	char dir[1024];
	size_t i;

	(void)state;
	/* The shipped models are the published ones, in name order. */
	snprintf(dir, sizeof(dir), "%s/catalog/models", top());
	if (mf_models_load(dir, &models, &err) != MF_OK) {
		print_error("%s\n", MSG(&err));
		fail();
	}
	assert_int_equal(mf_models_count(models), NELEM(published));
	for (i = 0; i < NELEM(published); i++) {
		assert_string_equal(mf_models_name(models, i),
		    published[i].name);
		m = mf_models_find(models, published[i].name);
		assert_ptr_equal(m, mf_models_at(models, i));
		if (mf_model_params(m) != published[i].parameters) {
			print_error("%s: %lld parameters, published %lld\n",
			    published[i].name, (long long)mf_model_params(m),
			    (long long)published[i].parameters);
			fail();
		}
	}
	assert_null(mf_models_name(models, NELEM(published)));
	assert_null(mf_models_at(models, NELEM(published)));
	assert_null(mf_models_find(models, "meta-llama/Llama-3.1-8"));
	assert_null(mf_models_find(models, "Llama-3.1-8B"));
	assert_null(mf_models_find(models, NULL));
	/* Llama 3.1 8B reads as its config says (see llama8b above). */
	m = mf_models_find(models, "meta-llama/Llama-3.1-8B");
	assert_non_null(m);
	got = *m;
	/* Its weights are 16-bit: it has no quantization_config. */
	assert_int_equal(got.quant.format, MF_Q_16BIT);
	assert_string_equal(got.quant.method, "none");
	memset(&got.quant, 0, sizeof(got.quant));
	assert_memory_equal(&got, &llama8b, sizeof(got));
	mf_models_free(models);
}

static void
test_models_null(void **state)
{
	(void)state;
	mf_models_free(NULL);
	assert_int_equal(mf_models_count(NULL), 0);
	assert_null(mf_models_name(NULL, 0));
	assert_null(mf_models_at(NULL, 0));
	assert_null(mf_models_find(NULL, "x/y"));
}

/* A scratch directory for a model tree; removed by rm_tree. */
static void
scratch(char *dir, size_t size)
{
	snprintf(dir, size, "/tmp/test_model.XXXXXX");
	assert_non_null(mkdtemp(dir));
}

static void
put_file(const char *dir, const char *rel, const char *text, size_t len)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void
put_dir(const char *dir, const char *rel)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_int_equal(mkdir(path, 0700), 0);
}

/* Remove dir and what it holds, two levels deep (DIR/ORG/FILE). */
static void
rm_tree(const char *dir)
{
	char path[2048];
	struct dirent *de;
	DIR *d;

	d = opendir(dir);
	if (d == NULL)
		return;
	for (;;) {
		de = readdir(d);
		if (de == NULL)
			break;
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) != 0)
			rm_tree(path);
	}
	closedir(d);
	rmdir(dir);
}

static void
test_models_load_tree(void **state)
{
	struct mf_models *models = NULL;
	struct mf_error err;
	const char *cfg;
	char dir[64];

	(void)state;
	scratch(dir, sizeof(dir));
	cfg = tiny_json(NULL, NULL);
	put_dir(dir, "b-org");
	put_dir(dir, "a-org");
	put_dir(dir, ".hidden");
	put_file(dir, "b-org/zeta.json", cfg, strlen(cfg));
	put_file(dir, "b-org/alpha.json", cfg, strlen(cfg));
	put_file(dir, "a-org/m.json", cfg, strlen(cfg));
	/* Not configs: skipped. */
	put_file(dir, "README.md", "x", 1);
	put_file(dir, "top.json", "x", 1);
	put_file(dir, "a-org/notes.txt", "x", 1);
	put_file(dir, "a-org/.json", "x", 1);
	put_file(dir, "a-org/.x.json", "x", 1);
	put_file(dir, ".hidden/h.json", "x", 1);
	put_dir(dir, "a-org/dir.json");

	assert_int_equal(mf_models_load(dir, &models, &err), MF_OK);
	assert_int_equal(mf_models_count(models), 3);
	assert_string_equal(mf_models_name(models, 0), "a-org/m");
	assert_string_equal(mf_models_name(models, 1), "b-org/alpha");
	assert_string_equal(mf_models_name(models, 2), "b-org/zeta");
	assert_int_equal(mf_model_params(mf_models_find(models, "b-org/zeta")),
	    138048);
	mf_models_free(models);
	rm_tree(dir);
}

/* What a lenient load said about the files it left out. */
struct skips {
	int n, kept;
	char msg[2][MF_ERROR_MAX];
};

static void
on_skip(void *arg, const struct mf_error *err, int kept)
{
	struct skips *s = arg;

	if (s->n < 2)
		mf_error_message(err, s->msg[s->n], sizeof(s->msg[0]));
	s->n++;
	s->kept += kept;
}

/*
 * Two directories: the second's org/m (1 layer) replaces the first's (2),
 * and its bad file is left out, said with its line; strictly, it fails
 * the load.  The tiny model is 138048 parameters with 2 layers (above); a
 * layer is q, k, v, o 4096 + 2048 + 2048 + 4096, the MLP 3 x 64 x 128 =
 * 24576 and two norms 128: 36992, so 1 layer is 101056.
 */
static void
test_models_load_dirs(void **state)
{
	static const char bad[] = "{\n  \"hidden_size\": 64,\n"
	                          "  \"num_hidden_layers\": 0\n}\n";
	struct mf_models *models = NULL, *again = NULL;
	struct mf_error err;
	struct skips sk;
	size_t counts[2];
	char a[64], b[64];
	const char *dirs[2] = { a, b }, *one;
	struct mf_models_load how = { dirs, 2, on_skip, &sk, NULL, counts };

	(void)state;
	scratch(a, sizeof(a));
	scratch(b, sizeof(b));
	put_dir(a, "org");
	put_dir(b, "org");
	put_file(a, "org/m.json", tiny_json(NULL, NULL),
	    strlen(tiny_json(NULL, NULL)));
	put_file(a, "org/x.json", tiny_json(NULL, NULL),
	    strlen(tiny_json(NULL, NULL)));
	one = tiny_json("\"num_hidden_layers", "\"num_hidden_layers\": 1");
	put_file(b, "org/m.json", one, strlen(one));
	put_file(b, "org/bad.json", bad, sizeof(bad) - 1);

	memset(&sk, 0, sizeof(sk));
	assert_int_equal(mf_models_load_dirs(&how, &models, &err), MF_OK);
	assert_int_equal(mf_models_count(models), 2);
	assert_int_equal(mf_model_params(mf_models_find(models, "org/m")),
	    101056);
	assert_int_equal(mf_model_params(mf_models_find(models, "org/x")),
	    138048);
	assert_int_equal(counts[0], 2);
	assert_int_equal(counts[1], 1);
	assert_int_equal(sk.n, 1);
	assert_int_equal(sk.kept, 0);
	assert_non_null(strstr(sk.msg[0],
	    "/org/bad.json:3: org/bad.num_hidden_layers: 0 is out of range"));

	/* Strictly (memfloord -n), the bad file fails the load. */
	how.skipped = NULL;
	memset(&err, 0, sizeof(err));
	assert_int_equal(mf_models_load_dirs(&how, &again, &err), MF_EINVAL);
	assert_null(again);
	assert_non_null(strstr(MSG(&err), "/org/bad.json:3: "));

	/* org/m broken: its last good model (prev's) stays in its place. */
	put_file(b, "org/m.json", "{\n", 2);
	how.skipped = on_skip;
	how.prev = models;
	memset(&sk, 0, sizeof(sk));
	assert_int_equal(mf_models_load_dirs(&how, &again, &err), MF_OK);
	assert_int_equal(sk.n, 2);
	assert_int_equal(sk.kept, 1);
	assert_int_equal(mf_model_params(mf_models_find(again, "org/m")),
	    101056);
	assert_int_equal(counts[1], 1);

	/* A reference more outlives the first drop. */
	assert_ptr_equal(mf_models_ref(models), models);
	mf_models_free(models);
	assert_int_equal(mf_models_count(models), 2);
	mf_models_free(models);
	mf_models_free(again);
	rm_tree(a);
	rm_tree(b);
}

/*
 * An organisation's directory that cannot be read (here a symlink to
 * nothing, which root cannot read either) on a reload: the models prev
 * had from it stay, as a broken file keeps its model, while the rest is
 * read again: a/acme/q, removed, goes (only b's acme is kept), as does
 * b/acme2/w (acme2 is not acme), and b/beta/v comes.  With no prev, it
 * is left out; strictly, it fails the load.
 */
static void
test_models_load_org_unreadable(void **state)
{
	struct mf_models *models = NULL, *again = NULL;
	const char *cfg = tiny_json(NULL, NULL);
	struct mf_error err;
	struct skips sk;
	size_t counts[2];
	char a[64], b[64], path[128];
	const char *dirs[2] = { a, b };
	struct mf_models_load how = { dirs, 2, on_skip, &sk, NULL, counts };

	(void)state;
	scratch(a, sizeof(a));
	scratch(b, sizeof(b));
	put_dir(a, "acme");
	put_file(a, "acme/q.json", cfg, strlen(cfg));
	put_dir(b, "acme");
	put_dir(b, "acme2");
	put_dir(b, "beta");
	put_file(b, "acme/x.json", cfg, strlen(cfg));
	put_file(b, "acme/z.json", cfg, strlen(cfg));
	put_file(b, "acme2/w.json", cfg, strlen(cfg));
	put_file(b, "beta/y.json", cfg, strlen(cfg));
	memset(&sk, 0, sizeof(sk));
	assert_int_equal(mf_models_load_dirs(&how, &models, &err), MF_OK);
	assert_int_equal(mf_models_count(models), 5);

	snprintf(path, sizeof(path), "%s/acme", b);
	rm_tree(path);
	assert_int_equal(symlink("gone", path), 0);
	snprintf(path, sizeof(path), "%s/acme/q.json", a);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/acme2/w.json", b);
	assert_int_equal(unlink(path), 0);
	put_file(b, "beta/v.json", cfg, strlen(cfg));
	how.prev = models;
	assert_int_equal(mf_models_load_dirs(&how, &again, &err), MF_OK);
	assert_int_equal(mf_models_count(again), 4);
	assert_string_equal(mf_models_name(again, 0), "acme/x");
	assert_string_equal(mf_models_name(again, 1), "acme/z");
	assert_string_equal(mf_models_name(again, 2), "beta/v");
	assert_string_equal(mf_models_name(again, 3), "beta/y");
	assert_int_equal(counts[0], 0);
	assert_int_equal(counts[1], 4);
	assert_int_equal(sk.n, 1);
	assert_int_equal(sk.kept, 2);
	assert_non_null(strstr(sk.msg[0], "/acme: No such file or directory"));
	mf_models_free(again);
	again = NULL;

	/* No models of its own until now: left out, the others served. */
	how.prev = NULL;
	memset(&sk, 0, sizeof(sk));
	assert_int_equal(mf_models_load_dirs(&how, &again, &err), MF_OK);
	assert_int_equal(mf_models_count(again), 2);
	assert_int_equal(sk.n, 1);
	assert_int_equal(sk.kept, 0);
	mf_models_free(again);
	again = NULL;

	/* Strictly (memfloord -n), it fails the load. */
	how.skipped = NULL;
	memset(&err, 0, sizeof(err));
	assert_int_equal(mf_models_load_dirs(&how, &again, &err), MF_ENOTFOUND);
	assert_null(again);
	assert_non_null(strstr(MSG(&err), "/acme: No such file or directory"));
	mf_models_free(models);
	rm_tree(a);
	rm_tree(b);
}

static void
test_models_load_empty(void **state)
{
	struct mf_models *models = NULL;
	struct mf_error err;
	char dir[64];

	(void)state;
	scratch(dir, sizeof(dir));
	assert_int_equal(mf_models_load(dir, &models, &err), MF_OK);
	assert_int_equal(mf_models_count(models), 0);
	assert_null(mf_models_find(models, "a/b"));
	mf_models_free(models);
	rm_tree(dir);
}

static void
test_models_load_missing_dir(void **state)
{
	struct mf_models *models = (struct mf_models *)&models;
	struct mf_error err;

	(void)state;
	assert_int_equal(mf_models_load("/nonexistent/models", &models, &err),
	    MF_ENOTFOUND);
	assert_non_null(strstr(MSG(&err), "/nonexistent/models"));
	assert_ptr_equal(models, (struct mf_models *)&models);
}

/* Load dir, expect rc, and expect both needles in the message. */
static void
load_fails(const char *dir, enum mf_rc rc, const char *needle1,
    const char *needle2)
{
	struct mf_models *models = NULL;
	struct mf_error err;

	memset(&err, 0, sizeof(err));
	assert_int_equal(mf_models_load(dir, &models, &err), rc);
	assert_null(models);
	if (strstr(MSG(&err), needle1) == NULL ||
	    (needle2 != NULL && strstr(MSG(&err), needle2) == NULL)) {
		print_error("message '%s' lacks '%s' or '%s'\n", MSG(&err),
		    needle1, needle2 ? needle2 : "");
		fail();
	}
}

static void
test_models_load_bad_file(void **state)
{
	char dir[64], file[128];
	const char *cfg;

	(void)state;
	scratch(dir, sizeof(dir));
	put_dir(dir, "org");
	put_file(dir, "org/broken.json", "{\"hidden_size\": ", 16);
	snprintf(file, sizeof(file), "%s/org/broken.json", dir);
	load_fails(dir, MF_EINVAL, file, "JSON");
	rm_tree(dir);

	scratch(dir, sizeof(dir));
	put_dir(dir, "org");
	cfg = tiny_json("\"vocab_size\"", NULL);
	put_file(dir, "org/novocab.json", cfg, strlen(cfg));
	snprintf(file, sizeof(file), "%s/org/novocab.json", dir);
	load_fails(dir, MF_EINVAL, file, "org/novocab.vocab_size");
	rm_tree(dir);

	/* YAML is not accepted for a shipped config. */
	scratch(dir, sizeof(dir));
	put_dir(dir, "org");
	put_file(dir, "org/yaml.json", "hidden_size: 64\n", 16);
	load_fails(dir, MF_EINVAL, "org/yaml.json", NULL);
	rm_tree(dir);

	/* A named pipe named like a config: refused at once, never waited
	 * on (the alarm ends the program if it is). */
	scratch(dir, sizeof(dir));
	put_dir(dir, "org");
	snprintf(file, sizeof(file), "%s/org/pipe.json", dir);
	assert_int_equal(mkfifo(file, 0600), 0);
	alarm(5);
	load_fails(dir, MF_EIO, file, ": not a regular file (a named pipe)");
	alarm(0);
	rm_tree(dir);
}

static void
test_models_load_file_too_big(void **state)
{
	/* 256 KiB is the cap; one byte past it is refused. */
	const size_t cap = 256 * 1024;
	char dir[64], *big;
	const char *cfg;
	struct mf_models *models = NULL;
	struct mf_error err;
	size_t n;

	(void)state;
	cfg = tiny_json(NULL, NULL);
	n = strlen(cfg);
	big = malloc(cap + 1);
	assert_non_null(big);
	/* The config padded with blanks to exactly the cap still loads. */
	memcpy(big, cfg, n);
	memset(big + n, ' ', cap + 1 - n);
	scratch(dir, sizeof(dir));
	put_dir(dir, "org");
	put_file(dir, "org/big.json", big, cap);
	assert_int_equal(mf_models_load(dir, &models, &err), MF_OK);
	assert_int_equal(mf_models_count(models), 1);
	mf_models_free(models);
	put_file(dir, "org/big.json", big, cap + 1);
	load_fails(dir, MF_ETOOBIG, "org/big.json", NULL);
	rm_tree(dir);
	free(big);
}

static void
test_models_load_too_many(void **state)
{
	/* 4096 configs load; the 4097th is refused. */
	struct mf_models *models = NULL;
	char dir[64], rel[64];
	struct mf_error err;
	const char *cfg;
	int i;

	(void)state;
	cfg = tiny_json(NULL, NULL);
	scratch(dir, sizeof(dir));
	put_dir(dir, "org");
	for (i = 0; i < 4096; i++) {
		snprintf(rel, sizeof(rel), "org/m%04d.json", i);
		put_file(dir, rel, cfg, strlen(cfg));
	}
	assert_int_equal(mf_models_load(dir, &models, &err), MF_OK);
	assert_int_equal(mf_models_count(models), 4096);
	assert_string_equal(mf_models_name(models, 4095), "org/m4095");
	assert_non_null(mf_models_find(models, "org/m1234"));
	mf_models_free(models);
	put_dir(dir, "other");
	put_file(dir, "other/one-more.json", cfg, strlen(cfg));
	load_fails(dir, MF_ETOOBIG, "4096", NULL);
	rm_tree(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_params_llama8b),
		cmocka_unit_test(test_params_tied_tiny),
		cmocka_unit_test(test_params_head_dim),
		cmocka_unit_test(test_shard_vocab_parallel),
		cmocka_unit_test(test_params_moe_small),
		cmocka_unit_test(test_read_unknown_type),
		cmocka_unit_test(test_read_qwen2_moe_experts),
		cmocka_unit_test(test_params_qkv_bias_and_norms),
		cmocka_unit_test(test_lora_llama8b),
		cmocka_unit_test(test_lora_phi3_fused),
		cmocka_unit_test(test_kv_bytes_llama8b),
		cmocka_unit_test(test_params_overflow),
		cmocka_unit_test(test_read_tiny),
		cmocka_unit_test(test_read_defaults),
		cmocka_unit_test(test_read_yaml),
		cmocka_unit_test(test_read_arch_defaults),
		cmocka_unit_test(test_read_rejects),
		cmocka_unit_test(test_read_hidden_not_divisible),
		cmocka_unit_test(test_read_yaml_position),
		cmocka_unit_test(test_read_not_a_mapping),
		cmocka_unit_test(test_read_too_large),
		cmocka_unit_test(test_models_load_shipped),
		cmocka_unit_test(test_models_null),
		cmocka_unit_test(test_models_load_tree),
		cmocka_unit_test(test_models_load_empty),
		cmocka_unit_test(test_models_load_dirs),
		cmocka_unit_test(test_models_load_org_unreadable),
		cmocka_unit_test(test_models_load_missing_dir),
		cmocka_unit_test(test_read_context),
		cmocka_unit_test(test_read_quantization_config),
		cmocka_unit_test(test_models_load_bad_file),
		cmocka_unit_test(test_models_load_file_too_big),
		cmocka_unit_test(test_models_load_too_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
