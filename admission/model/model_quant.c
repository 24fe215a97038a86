/*
 * model_quant.c: a config's quantization_config, how a pre-quantized
 * checkpoint stores its linear weights (design 19), read into struct
 * mf_quant (quant.h), the formats as transformers' quantizer configs name
 * their fields and vLLM's linear methods hold them:
 * - awq (AwqConfig): bits, group_size, zero_point (default true),
 *   modules_to_not_convert; fp16 scales and packed zeros a group;
 * - gptq (GPTQConfig): bits, group_size (-1: one a row), desc_act; qzeros
 *   and the int32 g_idx of every input row are stored whether sym or not;
 * - bitsandbytes (BitsAndBytesConfig): load_in_4bit (NF4 or FP4, blocks
 *   of 64, bnb_4bit_use_double_quant) or load_in_8bit (int8 with an fp32
 *   scale a row), llm_int8_skip_modules;
 * - fp8 (FineGrainedFP8Config, vLLM's Fp8Config): one byte a weight,
 *   fp32 scales a weight_block_size block, else one a tensor;
 *   modules_to_not_convert;
 * - compressed-tensors (llm-compressor): the first config group's
 *   weights: num_bits, type, strategy (tensor, channel, group, block),
 *   group_size, block_structure, symmetric; ignore.  Integer group
 *   scales are 16-bit (the model's dtype), fp8 and int8 ones fp32.
 * A list of modules kept 16-bit keeps the projections it names (by the
 * name's last part: q_proj, down_proj, experts, self_attn, mlp, ...) in
 * every layer; embeddings, the router and lm_head are 16-bit anyway.
 */
#include <stdio.h>
#include <string.h>

#include "../base/internal.h"
#include "model.h"
#include "quant.h"

static const struct mf_node *
member(const struct mf_node *map, const char *key)
{
	const struct mf_node *n = mf_node_get(map, key);

	return n == NULL || n->type == MF_NODE_NULL ? NULL : n;
}

/* A scalar member by type; absent leaves *out as it is. */
static enum mf_rc
get_int(const struct mf_node *map, const char *path, const char *key,
    int64_t lo, int64_t hi, int64_t *out, struct mf_error *err)
{
	const struct mf_node *n = member(map, key);
	char field[sizeof(err->field)];

	mf_path(field, sizeof(field), path, key);
	return n == NULL ? MF_OK : mf_node_int(n, field, lo, hi, out, err);
}

static enum mf_rc
get_bool(const struct mf_node *map, const char *path, const char *key, int *out,
    struct mf_error *err)
{
	const struct mf_node *n = member(map, key);
	char field[sizeof(err->field)];

	mf_path(field, sizeof(field), path, key);
	return n == NULL ? MF_OK : mf_node_bool(n, field, out, err);
}

static enum mf_rc
get_str(const struct mf_node *map, const char *path, const char *key,
    const char **out, struct mf_error *err)
{
	const struct mf_node *n = member(map, key);
	char field[sizeof(err->field)];

	mf_path(field, sizeof(field), path, key);
	return n == NULL ? MF_OK : mf_node_str(n, field, out, err);
}

/* What a kept module's name keeps, by its last part. */
static const struct {
	const char *name;
	unsigned keep;
} kept_names[] = {
	{ "q_proj", 1u << MF_LIN_Q },
	{ "k_proj", 1u << MF_LIN_K },
	{ "v_proj", 1u << MF_LIN_V },
	{ "qkv_proj", 1u << MF_LIN_QKV },
	{ "o_proj", 1u << MF_LIN_O },
	{ "gate_proj", 1u << MF_LIN_GATE },
	{ "up_proj", 1u << MF_LIN_UP },
	{ "gate_up_proj", 1u << MF_LIN_GATE_UP },
	{ "down_proj", 1u << MF_LIN_DOWN },
	{ "self_attn",
	    1u << MF_LIN_Q | 1u << MF_LIN_K | 1u << MF_LIN_V |
	        1u << MF_LIN_QKV | 1u << MF_LIN_O },
	{ "mlp",
	    1u << MF_LIN_GATE | 1u << MF_LIN_UP | 1u << MF_LIN_GATE_UP |
	        1u << MF_LIN_DOWN | MF_Q_KEEP_ROUTED | MF_Q_KEEP_SHARED },
	{ "experts", MF_Q_KEEP_ROUTED },
	{ "shared_expert", MF_Q_KEEP_SHARED },
};

/* The trailing identifier of a module name or a "re:" pattern. */
static unsigned
keep_of_name(const char *s)
{
	size_t n = strlen(s), i = n;

	while (i > 0 &&
	    (s[i - 1] == '_' || (s[i - 1] >= 'a' && s[i - 1] <= 'z') ||
	        (s[i - 1] >= 'A' && s[i - 1] <= 'Z')))
		i--;
	for (size_t k = 0; k < sizeof(kept_names) / sizeof(kept_names[0]); k++)
		if (strcmp(s + i, kept_names[k].name) == 0)
			return kept_names[k].keep;
	return 0;
}

static enum mf_rc
read_keep(const struct mf_node *qc, const char *path, const char *key,
    struct mf_quant *q, struct mf_error *err)
{
	const struct mf_node *list = member(qc, key), *n;
	char field[sizeof(err->field)];
	const char *name = NULL;
	enum mf_rc rc;

	mf_path(field, sizeof(field), path, key);
	if (list == NULL)
		return MF_OK;
	if (list->type != MF_NODE_SEQ)
		return mf_error_set(err, MF_EINVAL, field, list->line,
		    list->column, "must be a list of module names, not %s",
		    mf_node_type_name(list->type));
	for (n = list->child; n != NULL; n = n->next) {
		rc = mf_node_str(n, field, &name, err);
		if (rc != MF_OK)
			return rc;
		q->keep |= keep_of_name(name);
	}
	return MF_OK;
}

/*
 * bits (4 when absent) and group_size (128 when absent) as AWQ and GPTQ
 * write them: -1, and 0 as AutoAWQ also writes it, is one scale a row
 * (*group MF_Q_PER_ROW).
 */
static enum mf_rc
read_bits_group(const struct mf_node *qc, const char *path, int64_t *bits,
    int64_t *group, struct mf_error *err)
{
	enum mf_rc rc;

	*bits = 4;
	*group = 128;
	rc = get_int(qc, path, "bits", 2, 8, bits, err);
	if (rc == MF_OK)
		rc = get_int(qc, path, "group_size", -1, MF_MODEL_MAX_DIM,
		    group, err);
	if (rc == MF_OK && (*group == 0 || *group == -1))
		*group = MF_Q_PER_ROW;
	return rc;
}

static enum mf_rc
read_awq(const struct mf_node *qc, const char *path, struct mf_quant *q,
    struct mf_error *err)
{
	int64_t bits, group;
	int zero = 1;
	enum mf_rc rc;

	rc = read_bits_group(qc, path, &bits, &group, err);
	if (rc == MF_OK)
		rc = get_bool(qc, path, "zero_point", &zero, err);
	if (rc != MF_OK)
		return rc;
	mf_quant_scaled("awq", (int)bits, group, 2, q);
	q->zero_points = zero;
	return read_keep(qc, path, "modules_to_not_convert", q, err);
}

static enum mf_rc
read_gptq(const struct mf_node *qc, const char *path, struct mf_quant *q,
    struct mf_error *err)
{
	int64_t bits, group;
	enum mf_rc rc;

	rc = read_bits_group(qc, path, &bits, &group, err);
	if (rc != MF_OK)
		return rc;
	mf_quant_scaled("gptq", (int)bits, group, 2, q);
	q->zero_points = 1;
	q->g_idx = 1;
	return read_keep(qc, path, "modules_to_not_convert", q, err);
}

static enum mf_rc
read_bnb(const struct mf_node *qc, const char *path, struct mf_quant *q,
    struct mf_error *err)
{
	int four = 0, eight = 0, dq = 0;
	enum mf_rc rc;

	rc = get_bool(qc, path, "load_in_4bit", &four, err);
	if (rc == MF_OK)
		rc = get_bool(qc, path, "load_in_8bit", &eight, err);
	if (rc == MF_OK)
		rc = get_bool(qc, path, "bnb_4bit_use_double_quant", &dq, err);
	if (rc != MF_OK)
		return rc;
	if (four)
		mf_quant_nf4(64, dq, q);
	else if (eight)
		mf_quant_scaled("bnb-int8", 8, MF_Q_PER_ROW, 4, q);
	else
		return mf_error_set(err, MF_EINVAL, path, qc->line, qc->column,
		    "sets neither load_in_4bit nor load_in_8bit");
	return read_keep(qc, path, "llm_int8_skip_modules", q, err);
}

/* A [rows, columns] pair of a block of scales. */
static enum mf_rc
read_block(const struct mf_node *qc, const char *path, const char *key,
    struct mf_quant *q, struct mf_error *err)
{
	const struct mf_node *b = member(qc, key);
	char field[sizeof(err->field)];
	int64_t v[2];
	enum mf_rc rc;

	mf_path(field, sizeof(field), path, key);
	if (b == NULL)
		return MF_OK;
	if (b->type != MF_NODE_SEQ || b->len != 2)
		return mf_error_set(err, MF_EINVAL, field, b->line, b->column,
		    "must be a list of two sizes [rows, columns]");
	rc = mf_node_int(b->child, field, 1, MF_MODEL_MAX_DIM, &v[0], err);
	if (rc == MF_OK)
		rc = mf_node_int(b->child->next, field, 1, MF_MODEL_MAX_DIM,
		    &v[1], err);
	if (rc == MF_OK) {
		q->block_out = v[0];
		q->block_in = v[1];
	}
	return rc;
}

static enum mf_rc
read_fp8(const struct mf_node *qc, const char *path, struct mf_quant *q,
    struct mf_error *err)
{
	enum mf_rc rc;

	mf_quant_scaled("fp8", 8, MF_Q_PER_TENSOR, 4, q);
	rc = read_block(qc, path, "weight_block_size", q, err);
	if (rc == MF_OK)
		rc = read_keep(qc, path, "modules_to_not_convert", q, err);
	return rc;
}

/* compressed-tensors' weights of a config group. */
static enum mf_rc
read_ct_weights(const struct mf_node *wt, const char *path, struct mf_quant *q,
    struct mf_error *err)
{
	static const char *const strategies[] = { "tensor", "channel", "group",
		"block", NULL };
	const char *type = "int", *strategy = "tensor";
	int64_t bits = 8, group = 128;
	int sym = 1, s = 0, is_float;
	enum mf_rc rc;

	rc = get_int(wt, path, "num_bits", 2, 8, &bits, err);
	if (rc == MF_OK)
		rc = get_str(wt, path, "type", &type, err);
	if (rc == MF_OK)
		rc = get_str(wt, path, "strategy", &strategy, err);
	if (rc == MF_OK)
		rc = get_int(wt, path, "group_size", 1, MF_MODEL_MAX_DIM,
		    &group, err);
	if (rc == MF_OK)
		rc = get_bool(wt, path, "symmetric", &sym, err);
	if (rc != MF_OK)
		return rc;
	/* Up to the NULL that ends the list. */
	while ((size_t)s + 1 < sizeof(strategies) / sizeof(strategies[0]) &&
	    strcmp(strategies[s], strategy) != 0)
		s++;
	if (strategies[s] == NULL) {
		char field[sizeof(err->field)];
		const struct mf_node *n = member(wt, "strategy");

		mf_path(field, sizeof(field), path, "strategy");
		return mf_error_set(err, MF_EINVAL, field, n->line, n->column,
		    "'%.40s' is not a known strategy (known: tensor, channel, group, block)",
		    strategy);
	}
	is_float = strcmp(type, "float") == 0;
	mf_quant_scaled("compressed-tensors", (int)bits,
	    s == 0     ? MF_Q_PER_TENSOR :
	        s == 2 ? group :
	                 MF_Q_PER_ROW,
	    is_float || bits == 8 ? 4 : 2, q);
	q->zero_points = !sym;
	return s == 3 ? read_block(wt, path, "block_structure", q, err) : MF_OK;
}

static enum mf_rc
read_ct(const struct mf_node *qc, const char *path, struct mf_quant *q,
    struct mf_error *err)
{
	const struct mf_node *groups = member(qc, "config_groups"), *wt;
	char field[sizeof(err->field)], wpath[sizeof(err->field)];
	enum mf_rc rc;

	mf_path(field, sizeof(field), path, "config_groups");
	if (groups == NULL || groups->type != MF_NODE_MAP ||
	    groups->child == NULL)
		return mf_error_set(err, MF_EINVAL, field,
		    groups ? groups->line : qc->line,
		    groups ? groups->column : qc->column,
		    "must be a mapping of at least one config group");
	mf_path(wpath, sizeof(wpath), field, groups->child->key);
	wt = member(groups->child, "weights");
	if (wt == NULL || wt->type != MF_NODE_MAP)
		return mf_error_set(err, MF_EINVAL, wpath, groups->child->line,
		    groups->child->column, "has no weights mapping");
	mf_path(field, sizeof(field), wpath, "weights");
	rc = read_ct_weights(wt, field, q, err);
	if (rc == MF_OK)
		rc = read_keep(qc, path, "ignore", q, err);
	return rc;
}

static const struct {
	const char *method;
	enum mf_rc (*read)(const struct mf_node *, const char *,
	    struct mf_quant *, struct mf_error *);
} methods[] = {
	{ "awq", read_awq },
	{ "gptq", read_gptq },
	{ "bitsandbytes", read_bnb },
	{ "fp8", read_fp8 },
	{ "compressed-tensors", read_ct },
};

enum mf_rc
mf_model_read_quant(const struct mf_node *cfg, const char *path,
    struct mf_model *m, struct mf_error *err)
{
	const struct mf_node *qc = member(cfg, "quantization_config");
	char field[sizeof(err->field)];
	const char *method = NULL;
	struct mf_quant q;
	enum mf_rc rc;

	mf_quant_none(&m->quant);
	m->quant_unknown[0] = '\0';
	mf_path(field, sizeof(field), path, "quantization_config");
	if (qc == NULL)
		return MF_OK;
	if (qc->type != MF_NODE_MAP)
		return mf_error_set(err, MF_EINVAL, field, qc->line, qc->column,
		    "must be a mapping, not %s", mf_node_type_name(qc->type));
	rc = get_str(qc, field, "quant_method", &method, err);
	if (rc != MF_OK)
		return rc;
	if (method == NULL)
		return mf_error_set(err, MF_EINVAL, field, qc->line, qc->column,
		    "has no quant_method");
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strcmp(methods[i].method, method) == 0) {
			rc = methods[i].read(qc, field, &q, err);
			if (rc == MF_OK)
				m->quant = q;
			return rc;
		}
	snprintf(m->quant_unknown, sizeof(m->quant_unknown), "%s", method);
	return MF_OK;
}

const char *
mf_quant_methods(void)
{
	return "awq, gptq, bitsandbytes, fp8, compressed-tensors";
}
