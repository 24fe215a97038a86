/*
 * model.c: transformer shapes from config.json, parameter counts (design
 * section 5), and the registry of shipped model configs.
 *
 * Every count is computed with checked arithmetic: a figure that is
 * negative or would pass 2^63 - 1 poisons the result to -1, so the
 * counting functions return -1 rather than a wrapped number.
 */
#include "model.h"

#include <assert.h>
#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../base/internal.h"
#include "../base/file.h"

#define MODELS_MAX_FILES 4096
#define MODEL_MAX_BYTES (256 * 1024)
#define PATH_BYTES 4096

int64_t
mf_model_expert_width(const struct mf_model *m)
{
	return m->expert_intermediate > 0 ? m->expert_intermediate :
	                                    m->intermediate;
}

/* Gate, up and down projections of one MLP of width w: 3 x h x w. */
static int64_t
mlp_params(const struct mf_model *m, int64_t w)
{
	return mf_cmul(3, mf_cmul(m->hidden, w));
}

/*
 * The MLP of a layer: dense, or every routed expert plus the router
 * (h x experts) and, for Qwen2-MoE, the shared expert and its gate
 * (h x 1).
 */
static int64_t
layer_mlp_params(const struct mf_model *m)
{
	int64_t mlp;

	if (m->experts == 0)
		return mlp_params(m, m->intermediate);
	mlp = mf_cadd(mf_cmul(m->experts,
	                  mlp_params(m, mf_model_expert_width(m))),
	    mf_cmul(m->hidden, m->router > 0 ? m->router : m->experts));
	if (m->shared_intermediate > 0)
		mlp = mf_cadd(mlp,
		    mf_cadd(mlp_params(m, m->shared_intermediate), m->hidden));
	return mlp;
}

int64_t
mf_model_layer_params(const struct mf_model *m)
{
	int64_t qd, kvd, attn, bias, norms;

	qd = mf_cmul(m->heads, m->head_dim);
	kvd = mf_cmul(m->kv_heads, m->head_dim);
	/* q (h x a*d), k and v (h x kv*d each), o (a*d x h). */
	attn = mf_cadd(mf_cmul(2, mf_cmul(m->hidden, qd)),
	    mf_cmul(2, mf_cmul(m->hidden, kvd)));
	bias = m->qkv_bias ? mf_cadd(qd, mf_cmul(2, kvd)) : 0;
	norms = mf_cmul(m->norms_per_layer, m->hidden);
	return mf_cadd(mf_cadd(attn, bias),
	    mf_cadd(layer_mlp_params(m), norms));
}

int64_t
mf_model_vocab_rows(const struct mf_model *m)
{
	return m->vocab_rows > 0 ? m->vocab_rows : m->vocab;
}

int64_t
mf_model_params(const struct mf_model *m)
{
	int64_t vh = mf_cmul(mf_model_vocab_rows(m), m->hidden), layers;
	int64_t outside = 0;

	if (!m->no_embed)
		outside = vh;
	/* The final norm (h) and the output head, which with tied
	 * embeddings is the embedding matrix: a last pipeline stage without
	 * the embeddings holds a copy of it. */
	if (!m->no_head)
		outside = mf_cadd(outside,
		    mf_cadd(m->hidden,
		        m->tied_embeddings && !m->no_embed ? 0 : vh));
	layers = mf_cmul(m->layers, mf_model_layer_params(m));
	return mf_cadd(outside, layers);
}

int64_t
mf_model_linear_params(const struct mf_model *m)
{
	int64_t qd = mf_cmul(m->heads, m->head_dim), per, mlp;

	per = mf_cmul(2,
	    mf_cmul(m->hidden, mf_cadd(qd, mf_cmul(m->kv_heads, m->head_dim))));
	if (m->experts == 0) {
		mlp = mlp_params(m, m->intermediate);
	} else {
		mlp = mf_cmul(m->experts,
		    mlp_params(m, mf_model_expert_width(m)));
		if (m->shared_intermediate > 0)
			mlp =
			    mf_cadd(mlp, mlp_params(m, m->shared_intermediate));
	}
	return mf_cmul(m->layers, mf_cadd(per, mlp));
}

const char *
mf_linear_name(enum mf_linear_kind k)
{
	static const char *const names[MF_LIN_KINDS] = {
		[MF_LIN_Q] = "q_proj",
		[MF_LIN_K] = "k_proj",
		[MF_LIN_V] = "v_proj",
		[MF_LIN_QKV] = "qkv_proj",
		[MF_LIN_O] = "o_proj",
		[MF_LIN_GATE] = "gate_proj",
		[MF_LIN_UP] = "up_proj",
		[MF_LIN_GATE_UP] = "gate_up_proj",
		[MF_LIN_DOWN] = "down_proj",
	};

	return (unsigned)k < MF_LIN_KINDS ? names[k] : NULL;
}

static size_t
add_linear(struct mf_linear *v, size_t n, enum mf_linear_kind kind,
    enum mf_linear_owner owner, int64_t out, int64_t in, int64_t count)
{
	v[n] = (struct mf_linear){ kind, owner, out, in, count };
	return n + 1;
}

/* Gate, up and down of an MLP of width w, count of them. */
static size_t
add_mlp(const struct mf_model *m, struct mf_linear *v, size_t n,
    enum mf_linear_owner owner, int64_t w, int64_t count)
{
	int64_t h = m->hidden;

	if (m->block == MF_BLOCK_PHI3) {
		n = add_linear(v, n, MF_LIN_GATE_UP, owner, mf_cmul(2, w), h,
		    count);
	} else {
		n = add_linear(v, n, MF_LIN_GATE, owner, w, h, count);
		n = add_linear(v, n, MF_LIN_UP, owner, w, h, count);
	}
	return add_linear(v, n, MF_LIN_DOWN, owner, h, w, count);
}

size_t
mf_model_linears(const struct mf_model *m,
    struct mf_linear v[MF_MODEL_MAX_LINEARS])
{
	int64_t h = m->hidden, L = m->layers, qd, kvd;
	size_t n = 0;

	qd = mf_cmul(m->heads, m->head_dim);
	kvd = mf_cmul(m->kv_heads, m->head_dim);
	if (m->block == MF_BLOCK_PHI3) {
		n = add_linear(v, n, MF_LIN_QKV, MF_LIN_LAYER,
		    mf_cadd(qd, mf_cmul(2, kvd)), h, L);
	} else {
		n = add_linear(v, n, MF_LIN_Q, MF_LIN_LAYER, qd, h, L);
		n = add_linear(v, n, MF_LIN_K, MF_LIN_LAYER, kvd, h, L);
		n = add_linear(v, n, MF_LIN_V, MF_LIN_LAYER, kvd, h, L);
	}
	n = add_linear(v, n, MF_LIN_O, MF_LIN_LAYER, h, qd, L);
	if (m->experts == 0)
		return add_mlp(m, v, n, MF_LIN_LAYER, m->intermediate, L);
	n = add_mlp(m, v, n, MF_LIN_ROUTED, mf_model_expert_width(m),
	    mf_cmul(L, m->experts));
	if (m->shared_intermediate > 0)
		n = add_mlp(m, v, n, MF_LIN_SHARED, m->shared_intermediate, L);
	return n;
}

static size_t
add_tensor(struct mf_tensor *v, size_t n, int64_t numel, int64_t count)
{
	assert(n < MF_MODEL_MAX_TENSORS);
	if (numel > 0 && count > 0)
		v[n++] = (struct mf_tensor){ numel, count };
	return n;
}

/* Outside the layers: the embeddings, and on the stage with the head the
 * final norm and the head (the embeddings themselves when tied). */
static size_t
outside_tensors(const struct mf_model *m, struct mf_tensor *v)
{
	int64_t vh = mf_cmul(mf_model_vocab_rows(m), m->hidden);
	size_t n = 0;

	if (!m->no_embed)
		n = add_tensor(v, n, vh, 1);
	if (m->no_head)
		return n;
	n = add_tensor(v, n, m->hidden, 1);
	if (!m->tied_embeddings || m->no_embed)
		n = add_tensor(v, n, vh, 1);
	return n;
}

/* A linear's tensor: a layer's routed experts are two 3-D tensors,
 * gate_up_proj (E x 2Ie x h) and down_proj (E x h x Ie), as
 * transformers keeps them; 0 for the up projection gate_up holds. */
static int64_t
linear_tensor(const struct mf_model *m, const struct mf_linear *l)
{
	int64_t n = mf_cmul(l->out, l->in);

	if (l->owner != MF_LIN_ROUTED)
		return n;
	if (l->kind == MF_LIN_UP)
		return 0;
	if (l->kind == MF_LIN_GATE)
		n = mf_cmul(2, n);
	return mf_cmul(m->experts, n);
}

size_t
mf_model_tensors(const struct mf_model *m,
    struct mf_tensor v[MF_MODEL_MAX_TENSORS])
{
	struct mf_linear lin[MF_MODEL_MAX_LINEARS];
	size_t nl = mf_model_linears(m, lin), n = outside_tensors(m, v);
	int64_t L = m->layers, kvd = mf_cmul(m->kv_heads, m->head_dim);

	n = add_tensor(v, n, m->hidden, mf_cmul(L, m->norms_per_layer));
	if (m->qkv_bias) {
		n = add_tensor(v, n, mf_cmul(m->heads, m->head_dim), L);
		n = add_tensor(v, n, kvd, mf_cmul(2, L));
	}
	assert(nl <= MF_MODEL_MAX_LINEARS);
	for (size_t i = 0; i < nl; i++)
		n = add_tensor(v, n, linear_tensor(m, &lin[i]),
		    lin[i].owner == MF_LIN_ROUTED ? L : lin[i].count);
	if (m->experts > 0)
		n = add_tensor(v, n,
		    mf_cmul(m->hidden, m->router > 0 ? m->router : m->experts),
		    L);
	if (m->experts > 0 && m->shared_intermediate > 0)
		n = add_tensor(v, n, m->hidden, L);
	return n;
}

static int64_t
div_up(int64_t a, int64_t n)
{
	return a / n + (a % n != 0);
}

void
mf_model_shard(const struct mf_model *m, int64_t tensor, int64_t expert,
    int64_t layers, int first, int last, int64_t vocab_pad,
    struct mf_model *out)
{
	*out = *m;
	/* V <= MF_MODEL_MAX_VOCAB: the padded vocabulary cannot overflow. */
	if (vocab_pad >= 1)
		out->vocab_rows =
		    div_up(div_up(m->vocab, vocab_pad) * vocab_pad, tensor);
	out->heads = div_up(m->heads, tensor);
	out->kv_heads = m->kv_heads > tensor ? div_up(m->kv_heads, tensor) : 1;
	out->intermediate = div_up(m->intermediate, tensor);
	out->expert_intermediate = expert > 1 ?
	    mf_model_expert_width(m) :
	    div_up(mf_model_expert_width(m), tensor);
	out->shared_intermediate = div_up(m->shared_intermediate, tensor);
	out->router = m->router > 0 ? m->router : m->experts;
	out->experts = div_up(m->experts, expert);
	out->layers = layers;
	out->tp = tensor;
	out->no_embed = m->no_embed || !first;
	out->no_head = m->no_head || !last;
}

static int64_t
max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/*
 * Phi-3 keeps q, k and v in one matrix and gate and up in another; every
 * other block keeps each projection apart.  transformers (5.x) keeps a
 * layer's routed experts as two 3-D parameters, gate_up_proj (E x 2Ie x
 * h) and down_proj (E x h x Ie): the first is the largest of the layer
 * (MixtralExperts, Qwen2MoeExperts; tests/torch/optim_bwd.py measures
 * its gradient); the router and Qwen2-MoE's shared expert are linears
 * of their own.
 */
int64_t
mf_model_largest_layer_param(const struct mf_model *m)
{
	int64_t h = m->hidden, qd, kvd, big;

	qd = mf_cmul(m->heads, m->head_dim);
	kvd = mf_cmul(m->kv_heads, m->head_dim);
	big = mf_cmul(h, qd);
	if (m->block == MF_BLOCK_PHI3) {
		big = max64(big, mf_cmul(h, mf_cadd(qd, mf_cmul(2, kvd))));
		return max64(big, mf_cmul(2, mf_cmul(h, m->intermediate)));
	}
	if (m->experts == 0)
		return max64(big, mf_cmul(h, m->intermediate));
	big = max64(big,
	    mf_cmul(m->experts,
	        mf_cmul(2, mf_cmul(h, mf_model_expert_width(m)))));
	big = max64(big, mf_cmul(h, m->experts));
	return max64(big, mf_cmul(h, m->shared_intermediate));
}

int64_t
mf_model_largest_param(const struct mf_model *m)
{
	return max64(mf_cmul(mf_model_vocab_rows(m), m->hidden),
	    mf_model_largest_layer_param(m));
}

int64_t
mf_model_kv_bytes_per_token(const struct mf_model *m, int dtype_bytes)
{
	int64_t kvd;

	kvd = mf_cmul(m->kv_heads, m->head_dim);
	return mf_cmul(mf_cmul(2, m->layers), mf_cmul(kvd, dtype_bytes));
}

/*
 * Facts a config.json leaves implicit, by model_type.  tied is the
 * default of tie_word_embeddings in the Hugging Face config class when
 * the key is absent: False for Llama, Mistral, Mixtral, Qwen2, Qwen2-MoE
 * and Phi-3, True for Gemma and Gemma-2.  Qwen2 and Qwen2-MoE always put
 * biases on q, k and v; Gemma-2 norms before and after both attention and
 * MLP and soft-caps attention scores and logits unless its config sets
 * attn_logit_softcapping / final_logit_softcapping to null.  experts and
 * topk are the config class's defaults of the expert count and top-k.
 */
struct arch {
	const char *type;
	int tied;
	int qkv_bias;
	int norms;
	enum mf_block block;
	int softcap;
	int64_t experts;
	int64_t topk;
};

static const struct arch archs[] = {
	{ "llama", 0, 0, 2, MF_BLOCK_LLAMA, 0, 0, 0 },
	{ "mistral", 0, 0, 2, MF_BLOCK_LLAMA, 0, 0, 0 },
	{ "mixtral", 0, 0, 2, MF_BLOCK_MIXTRAL, 0, 8, 2 },
	{ "qwen2", 0, 1, 2, MF_BLOCK_LLAMA, 0, 0, 0 },
	{ "qwen2_moe", 0, 1, 2, MF_BLOCK_QWEN2MOE, 0, 60, 4 },
	{ "phi3", 0, 0, 2, MF_BLOCK_PHI3, 0, 0, 0 },
	{ "gemma", 1, 0, 2, MF_BLOCK_GEMMA, 0, 0, 0 },
	{ "gemma2", 1, 0, 4, MF_BLOCK_GEMMA, 1, 0, 0 },
};

#define NARCHS (sizeof(archs) / sizeof(archs[0]))

/* A config without model_type is read as the first row, llama. */
static const struct arch *
arch_lookup(const char *type)
{
	size_t i;

	if (type == NULL)
		return &archs[0];
	for (i = 0; i < NARCHS; i++)
		if (strcmp(archs[i].type, type) == 0)
			return &archs[i];
	return NULL;
}

/* "llama, mistral, ..." into buf. */
static void
arch_names(char *buf, size_t size)
{
	size_t used = 0, i;
	int n;

	buf[0] = '\0';
	for (i = 0; i < NARCHS && used < size; i++) {
		n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
		    archs[i].type);
		if (n < 0)
			return;
		used += (size_t)n;
	}
}

/* The member key of cfg, or NULL when it is absent or null. */
static const struct mf_node *
member(const struct mf_node *cfg, const char *key)
{
	const struct mf_node *n;

	n = mf_node_get(cfg, key);
	if (n == NULL || n->type == MF_NODE_NULL)
		return NULL;
	return n;
}

/*
 * Read cfg.key as an integer in [1, max] into *out.  An absent key is an
 * error when required, else leaves *out alone.
 */
static enum mf_rc
read_int(const struct mf_node *cfg, const char *path, const char *key,
    int64_t max, int required, int64_t *out, struct mf_error *err)
{
	char field[sizeof(err->field)];
	const struct mf_node *n;

	mf_path(field, sizeof(field), path, key);
	n = member(cfg, key);
	if (n == NULL) {
		if (!required)
			return MF_OK;
		return mf_error_set(err, MF_EINVAL, field, cfg->line,
		    cfg->column, "is missing");
	}
	return mf_node_int(n, field, 1, max, out, err);
}

/* The integer fields of a config; optional ones default to 0 here. */
static const struct dim {
	const char *key;
	size_t off;
	int64_t max;
	int required;
} dims[] = {
	{ "hidden_size", offsetof(struct mf_model, hidden), MF_MODEL_MAX_DIM,
	    1 },
	{ "num_hidden_layers", offsetof(struct mf_model, layers),
	    MF_MODEL_MAX_LAYERS, 1 },
	{ "num_attention_heads", offsetof(struct mf_model, heads),
	    MF_MODEL_MAX_HEADS, 1 },
	{ "num_key_value_heads", offsetof(struct mf_model, kv_heads),
	    MF_MODEL_MAX_HEADS, 0 },
	{ "head_dim", offsetof(struct mf_model, head_dim), MF_MODEL_MAX_DIM,
	    0 },
	{ "intermediate_size", offsetof(struct mf_model, intermediate),
	    MF_MODEL_MAX_DIM, 1 },
	{ "vocab_size", offsetof(struct mf_model, vocab), MF_MODEL_MAX_VOCAB,
	    1 },
};

/*
 * Where each mixture-of-experts architecture names its experts (Hugging
 * Face MixtralConfig, Qwen2MoeConfig); a key left out takes the config
 * class's default (struct arch, and moe_defaults below).
 */
static const struct dim mixtral_dims[] = {
	{ "num_local_experts", offsetof(struct mf_model, experts),
	    MF_MODEL_MAX_EXPERTS, 0 },
	{ "num_experts_per_tok", offsetof(struct mf_model, experts_per_tok),
	    MF_MODEL_MAX_EXPERTS, 0 },
};

static const struct dim qwen2_moe_dims[] = {
	{ "num_experts", offsetof(struct mf_model, experts),
	    MF_MODEL_MAX_EXPERTS, 0 },
	{ "num_experts_per_tok", offsetof(struct mf_model, experts_per_tok),
	    MF_MODEL_MAX_EXPERTS, 0 },
	{ "moe_intermediate_size",
	    offsetof(struct mf_model, expert_intermediate), MF_MODEL_MAX_DIM,
	    0 },
	{ "shared_expert_intermediate_size",
	    offsetof(struct mf_model, shared_intermediate), MF_MODEL_MAX_DIM,
	    0 },
};

static enum mf_rc
read_table(const struct mf_node *cfg, const char *path, struct mf_model *m,
    const struct dim *table, size_t n, struct mf_error *err)
{
	const struct dim *d;
	enum mf_rc rc;
	size_t i;

	for (i = 0; i < n; i++) {
		d = &table[i];
		rc = read_int(cfg, path, d->key, d->max, d->required,
		    (int64_t *)(void *)((char *)m + d->off), err);
		if (rc != MF_OK)
			return rc;
	}
	return MF_OK;
}

static enum mf_rc
read_dims(const struct mf_node *cfg, const char *path, struct mf_model *m,
    struct mf_error *err)
{
	return read_table(cfg, path, m, dims, sizeof(dims) / sizeof(dims[0]),
	    err);
}

/*
 * The experts of a mixture-of-experts block, with the config class's
 * defaults (Qwen2MoeConfig: moe_intermediate_size 1408,
 * shared_expert_intermediate_size 5632, norm_topk_prob false; Mixtral
 * always renormalises its top-k weights); top-k may not pass the
 * experts.
 */
static enum mf_rc
read_experts(const struct mf_node *cfg, const char *path, const struct arch *a,
    struct mf_model *m, struct mf_error *err)
{
	char field[sizeof(err->field)];
	const struct mf_node *n;
	enum mf_rc rc;

	m->experts = a->experts;
	m->experts_per_tok = a->topk;
	if (a->block == MF_BLOCK_MIXTRAL) {
		m->renorm_topk = 1;
		rc = read_table(cfg, path, m, mixtral_dims,
		    sizeof(mixtral_dims) / sizeof(mixtral_dims[0]), err);
	} else {
		m->expert_intermediate = 1408;
		m->shared_intermediate = 5632;
		rc = read_table(cfg, path, m, qwen2_moe_dims,
		    sizeof(qwen2_moe_dims) / sizeof(qwen2_moe_dims[0]), err);
		n = member(cfg, "norm_topk_prob");
		mf_path(field, sizeof(field), path, "norm_topk_prob");
		if (rc == MF_OK && n != NULL)
			rc = mf_node_bool(n, field, &m->renorm_topk, err);
	}
	if (rc != MF_OK || m->experts_per_tok <= m->experts)
		return rc;
	n = member(cfg, "num_experts_per_tok");
	mf_path(field, sizeof(field), path, "num_experts_per_tok");
	return mf_error_set(err, MF_EINVAL, field, n ? n->line : cfg->line,
	    n ? n->column : cfg->column, "%lld is more than the %lld experts",
	    (long long)m->experts_per_tok, (long long)m->experts);
}

/* Soft-capping is on unless the config sets key to null. */
static int
softcap(const struct mf_node *cfg, const char *key, int dflt)
{
	const struct mf_node *n = mf_node_get(cfg, key);

	if (n == NULL)
		return dflt;
	return n->type != MF_NODE_NULL;
}

static enum mf_rc bad_dim(const struct mf_node *cfg, const char *path,
    const char *key, struct mf_error *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* MF_EINVAL about cfg.key, a field that is present, at its position. */
static enum mf_rc
bad_dim(const struct mf_node *cfg, const char *path, const char *key,
    struct mf_error *err, const char *fmt, ...)
{
	const struct mf_node *n = member(cfg, key);
	char field[sizeof(err->field)];
	va_list ap;

	mf_path(field, sizeof(field), path, key);
	va_start(ap, fmt);
	mf_error_vset(err, MF_EINVAL, field, n->line, n->column, fmt, ap);
	va_end(ap);
	return MF_EINVAL;
}

/* Fill the defaults of kv_heads and head_dim and check they fit. */
static enum mf_rc
check_heads(const struct mf_node *cfg, const char *path, struct mf_model *m,
    struct mf_error *err)
{
	if (m->kv_heads == 0)
		m->kv_heads = m->heads;
	if (m->heads % m->kv_heads != 0)
		return bad_dim(cfg, path, "num_key_value_heads", err,
		    "%lld does not divide num_attention_heads (%lld)",
		    (long long)m->kv_heads, (long long)m->heads);
	if (m->head_dim != 0)
		return MF_OK;
	if (m->hidden % m->heads != 0)
		return bad_dim(cfg, path, "hidden_size", err,
		    "%lld is not a multiple of num_attention_heads (%lld) and head_dim is not given",
		    (long long)m->hidden, (long long)m->heads);
	m->head_dim = m->hidden / m->heads;
	return MF_OK;
}

static enum mf_rc
read_arch(const struct mf_node *cfg, const char *path, struct mf_model *m,
    struct mf_error *err)
{
	char field[sizeof(err->field)], known[160];
	const struct mf_node *n;
	const struct arch *a;
	const char *type = NULL;
	enum mf_rc rc;

	n = member(cfg, "model_type");
	mf_path(field, sizeof(field), path, "model_type");
	if (n != NULL) {
		rc = mf_node_str(n, field, &type, err);
		if (rc != MF_OK)
			return rc;
	}
	a = arch_lookup(type);
	if (a == NULL) {
		arch_names(known, sizeof(known));
		return mf_error_set(err, MF_EINVAL, field, n->line, n->column,
		    "'%.60s' is not a known model_type (known: %s)", type,
		    known);
	}
	m->tied_embeddings = a->tied;
	m->qkv_bias = a->qkv_bias;
	m->norms_per_layer = a->norms;
	m->block = a->block;
	if (a->softcap) {
		m->attn_softcap = softcap(cfg, "attn_logit_softcapping", 1);
		m->final_softcap = softcap(cfg, "final_logit_softcapping", 1);
	}
	if (a->experts > 0) {
		rc = read_experts(cfg, path, a, m, err);
		if (rc != MF_OK)
			return rc;
	}
	n = member(cfg, "tie_word_embeddings");
	if (n == NULL)
		return MF_OK;
	mf_path(field, sizeof(field), path, "tie_word_embeddings");
	return mf_node_bool(n, field, &m->tied_embeddings, err);
}

/*
 * The context limit, as vLLM derives max_model_len from the config
 * (vllm/config/model.py _get_and_verify_max_len, vllm 0.33):
 * max_position_embeddings, times rope_scaling's factor unless its type is
 * one that leaves the field already scaled (su, longrope, llama3, yarn,
 * deepseek_yarn, deepseek_llama_scaling).  Older vLLM and the model cards
 * of YaRN checkpoints (Qwen2.5: factor 4 over an original 32,768) take
 * original_max_position_embeddings x factor for YaRN: the larger of the
 * two is the limit, so that no job vLLM serves is refused.  transformers
 * 5 calls rope_scaling rope_parameters.
 */
static const char *const rope_prescaled[] = { "su", "longrope", "llama3",
	"yarn", "deepseek_yarn", "deepseek_llama_scaling", NULL };

static int
in_list(const char *const *list, const char *s)
{
	for (size_t i = 0; s != NULL && list[i] != NULL; i++)
		if (strcmp(list[i], s) == 0)
			return 1;
	return 0;
}

/* rope_scaling's type: rope_type, else type; NULL when neither. */
static enum mf_rc
rope_type(const struct mf_node *rs, const char *path, const char **type,
    struct mf_error *err)
{
	char field[sizeof(err->field)];
	const char *key = "rope_type";
	const struct mf_node *n = member(rs, key);

	if (n == NULL) {
		key = "type";
		n = member(rs, key);
	}
	*type = NULL;
	mf_path(field, sizeof(field), path, key);
	return n == NULL ? MF_OK : mf_node_str(n, field, type, err);
}

static enum mf_rc
read_rope(const struct mf_node *rs, const char *path, struct mf_model *m,
    struct mf_error *err)
{
	char field[sizeof(err->field)];
	const struct mf_node *n;
	const char *type;
	int64_t orig = 0;
	double factor = 1;
	enum mf_rc rc;

	if (rs->type != MF_NODE_MAP)
		return mf_error_set(err, MF_EINVAL, path, rs->line, rs->column,
		    "must be a mapping, not %s", mf_node_type_name(rs->type));
	rc = rope_type(rs, path, &type, err);
	n = member(rs, "factor");
	mf_path(field, sizeof(field), path, "factor");
	if (rc == MF_OK && n != NULL)
		rc = mf_node_double(n, field, 1, 1e6, &factor, err);
	if (rc == MF_OK)
		rc = read_int(rs, path, "original_max_position_embeddings",
		    MF_MODEL_MAX_CONTEXT, 0, &orig, err);
	if (rc != MF_OK)
		return rc;
	if (!in_list(rope_prescaled, type)) {
		m->rope_factor = factor;
		m->max_context = (int64_t)((double)m->positions * factor);
	}
	if (type != NULL && strstr(type, "yarn") != NULL && orig > 0 &&
	    (double)orig * factor > (double)m->max_context) {
		m->rope_factor = factor;
		m->rope_original = orig;
		m->max_context = (int64_t)((double)orig * factor);
	}
	if (m->max_context > MF_MODEL_MAX_CONTEXT)
		m->max_context = MF_MODEL_MAX_CONTEXT;
	return MF_OK;
}

static enum mf_rc
read_context(const struct mf_node *cfg, const char *path, struct mf_model *m,
    struct mf_error *err)
{
	char field[sizeof(err->field)];
	const char *key = "rope_scaling";
	const struct mf_node *rs;
	enum mf_rc rc;

	rc = read_int(cfg, path, "max_position_embeddings",
	    MF_MODEL_MAX_CONTEXT, 0, &m->positions, err);
	m->max_context = m->positions;
	m->rope_factor = 1;
	rs = member(cfg, key);
	if (rs == NULL) {
		key = "rope_parameters";
		rs = member(cfg, key);
	}
	if (rc != MF_OK || rs == NULL || m->positions == 0)
		return rc;
	mf_path(field, sizeof(field), path, key);
	return read_rope(rs, field, m, err);
}

enum mf_rc
mf_model_read(const struct mf_node *config, const char *path,
    struct mf_model *out, struct mf_error *err)
{
	struct mf_model m;
	enum mf_rc rc;

	if (config == NULL)
		return mf_error_set(err, MF_EINVAL, path, 0, 0, "is missing");
	if (config->type != MF_NODE_MAP)
		return mf_error_set(err, MF_EINVAL, path, config->line,
		    config->column, "must be a mapping, not %s",
		    mf_node_type_name(config->type));
	memset(&m, 0, sizeof(m));
	rc = read_dims(config, path, &m, err);
	if (rc == MF_OK)
		rc = check_heads(config, path, &m, err);
	if (rc == MF_OK)
		rc = read_arch(config, path, &m, err);
	if (rc == MF_OK)
		rc = read_context(config, path, &m, err);
	if (rc == MF_OK)
		rc = mf_model_read_quant(config, path, &m, err);
	if (rc != MF_OK)
		return rc;
	if (mf_model_params(&m) < 0)
		return mf_error_set(err, MF_EINVAL, path, config->line,
		    config->column,
		    "the parameter count does not fit in 63 bits");
	*out = m;
	return MF_OK;
}

struct model_entry {
	char *name; /* "ORG/NAME" */
	size_t seq; /* load order: a later entry replaces an earlier one */
	size_t dir; /* which of the directories loaded it (or kept it) */
	struct mf_model model;
};

struct mf_models {
	size_t n;
	size_t cap;
	struct model_entry *v; /* sorted by name once loaded */
	int refs;              /* MF_REF and MF_UNREF */
};

struct mf_models *
mf_models_ref(struct mf_models *models)
{
	return MF_REF(models);
}

void
mf_models_free(struct mf_models *models)
{
	size_t i;

	if (!MF_UNREF(models))
		return;
	for (i = 0; i < models->n; i++)
		free(models->v[i].name);
	free(models->v);
	free(models);
}

static enum mf_rc
file_error(struct mf_error *err, const char *file, int errnum)
{
	return mf_error_set(err, errnum == ENOENT ? MF_ENOTFOUND : MF_EIO, NULL,
	    0, 0, "%s: %s", file, strerror(errnum));
}

static enum mf_rc
nomem(struct mf_error *err, const char *what)
{
	return mf_error_set(err, MF_ENOMEM, NULL, 0, 0, "%s: %s", what,
	    mf_strerror(MF_ENOMEM));
}

static enum mf_rc
add_entry(struct mf_models *models, const char *name, const struct mf_model *m,
    size_t dir, struct mf_error *err)
{
	struct model_entry *v;
	char *copy;
	size_t cap;

	if (models->n == models->cap) {
		cap = models->cap ? models->cap * 2 : 16;
		v = realloc(models->v, cap * sizeof(*v));
		if (v == NULL)
			return nomem(err, name);
		models->v = v;
		models->cap = cap;
	}
	copy = strdup(name);
	if (copy == NULL)
		return nomem(err, name);
	models->v[models->n].name = copy;
	models->v[models->n].seq = models->n;
	models->v[models->n].dir = dir;
	models->v[models->n].model = *m;
	models->n++;
	return MF_OK;
}

/*
 * The line of a config's member key (the last part of a field path such
 * as "acme/x.num_hidden_layers") in the file's text: a JSON document's
 * nodes carry no position, and an operator fixing the file wants one.
 * The object's first line when the member is absent (a field left out).
 */
static int
field_line(const char *buf, size_t len, const char *field)
{
	const char *key = strrchr(field, '.'), *p;
	size_t k, i;
	int line = 1, first = 0;

	key = key ? key + 1 : field;
	k = strlen(key);
	for (i = 0; i < len; i++) {
		if (buf[i] == '\n')
			line++;
		else if (buf[i] == '{' && first == 0)
			first = line;
		if (k == 0 || buf[i] != '"' || len - i < k + 2 ||
		    memcmp(buf + i + 1, key, k) != 0 || buf[i + 1 + k] != '"')
			continue;
		p = buf + i + k + 2;
		while (p < buf + len &&
		    (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
			p++;
		if (p < buf + len && *p == ':')
			return line;
	}
	return first ? first : 1;
}

/* Parse file as the config of model name into *m. */
static enum mf_rc
read_file(const char *file, const char *name, struct mf_model *m,
    struct mf_error *err)
{
	struct mf_doc *doc = NULL;
	char *buf = NULL;
	size_t len = 0;
	enum mf_rc rc;

	rc = mf_file_read(file, MODEL_MAX_BYTES, "a model config", &buf, &len,
	    err);
	if (rc != MF_OK)
		return rc;
	rc = mf_doc_parse(buf, len, MF_DOC_JSON, &doc, err);
	if (rc == MF_OK)
		rc = mf_model_read(mf_doc_root(doc), name, m, err);
	if (rc != MF_OK) {
		if (err != NULL && err->line == 0)
			err->line = field_line(buf, len, err->field);
		mf_error_in_file(err, rc, file);
	}
	mf_doc_free(doc);
	free(buf);
	return rc;
}

/* NAME.json, not hidden, with something before the suffix. */
static int
is_config_name(const char *s)
{
	size_t n = strlen(s);

	return s[0] != '.' && n > 5 && strcmp(s + n - 5, ".json") == 0;
}

/* Join dir and base into buf; MF_ETOOBIG when it does not fit. */
static enum mf_rc
join(char *buf, size_t size, const char *dir, const char *base,
    struct mf_error *err)
{
	int n;

	n = snprintf(buf, size, "%s/%s", dir, base);
	if (n < 0 || (size_t)n >= size)
		return mf_error_set(err, MF_ETOOBIG, NULL, 0, 0,
		    "%s/%s: path too long", dir, base);
	return MF_OK;
}

/* What a walk over the directories carries. */
struct walk {
	struct mf_models *models;
	const struct mf_models_load *how;
	const char *org; /* the organisation whose directory is walked */
	size_t dir;      /* the index in how->dirs of the directory walked */
	size_t *loaded;  /* files loaded from the directory walked */
};

/* Whether prev's entry e is what a failure of name leaves in place: the
 * model "ORG/NAME", or every model from the directory ORG that w walks. */
static int
kept_for(const struct walk *w, const struct model_entry *e, const char *name)
{
	size_t k = strlen(name);

	if (strchr(name, '/') != NULL)
		return strcmp(e->name, name) == 0;
	return e->dir == w->dir && strncmp(e->name, name, k) == 0 &&
	    e->name[k] == '/';
}

/*
 * A file, or an organisation's directory, that failed (its error in
 * *err): fatal when the load is strict; else said to the caller, the last
 * good models of its name (prev's) kept in its place, and the walk goes
 * on.
 */
static enum mf_rc
skip(const struct walk *w, const char *name, enum mf_rc rc,
    struct mf_error *err)
{
	const struct mf_models *prev = w->how->prev;
	size_t n = prev != NULL && name != NULL ? prev->n : 0;
	int kept = 0;

	if (w->how->skipped == NULL || rc == MF_ENOMEM)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (!kept_for(w, &prev->v[i], name))
			continue;
		rc = add_entry(w->models, prev->v[i].name, &prev->v[i].model,
		    w->dir, err);
		if (rc != MF_OK)
			return rc;
		kept++;
	}
	if (w->loaded != NULL)
		*w->loaded += (size_t)kept;
	w->how->skipped(w->how->arg, err, kept);
	return MF_OK;
}

/* Load DIR/ORG/base, a directory entry, when it is a config file. */
static enum mf_rc
load_entry(const struct walk *w, const char *orgdir, const char *base,
    struct mf_error *err)
{
	char file[PATH_BYTES], name[PATH_BYTES];
	struct mf_model m;
	struct stat st;
	enum mf_rc rc;

	if (!is_config_name(base))
		return MF_OK;
	rc = join(file, sizeof(file), orgdir, base, err);
	if (rc != MF_OK)
		return skip(w, NULL, rc, err);
	/* Shorter than file, so it fits. */
	snprintf(name, sizeof(name), "%s/%.*s", w->org, (int)(strlen(base) - 5),
	    base);
	if (stat(file, &st) != 0)
		return skip(w, name, file_error(err, file, errno), err);
	/* A directory is no config; a named pipe or a device named like
	 * one is a file that cannot be read (mf_file_read says so). */
	if (S_ISDIR(st.st_mode))
		return MF_OK;
	if (w->models->n >= MODELS_MAX_FILES)
		return mf_error_set(err, MF_ETOOBIG, NULL, 0, 0,
		    "%s: more than %d model configs", file, MODELS_MAX_FILES);
	rc = read_file(file, name, &m, err);
	if (rc != MF_OK)
		return skip(w, name, rc, err);
	rc = add_entry(w->models, name, &m, w->dir, err);
	if (rc == MF_OK && w->loaded != NULL)
		(*w->loaded)++;
	return rc;
}

typedef enum mf_rc (*entry_fn)(const struct walk *w, const char *dir,
    const char *name, struct mf_error *err);

/* fn for every entry of dir but the hidden ones, until one fails. */
static enum mf_rc
each_entry(const struct walk *w, const char *dir, entry_fn fn,
    struct mf_error *err)
{
	struct dirent *de;
	enum mf_rc rc = MF_OK;
	DIR *d;

	d = opendir(dir);
	if (d == NULL)
		return file_error(err, dir, errno);
	while (rc == MF_OK) {
		de = readdir(d);
		if (de == NULL)
			break;
		if (de->d_name[0] != '.')
			rc = fn(w, dir, de->d_name, err);
	}
	closedir(d);
	return rc;
}

/* An entry of DIR/ORG: a config of that organisation. */
static enum mf_rc
config_entry(const struct walk *w, const char *orgdir, const char *name,
    struct mf_error *err)
{
	return load_entry(w, orgdir, name, err);
}

/* An entry of DIR: an organisation's directory, or skipped. */
static enum mf_rc
org_entry(const struct walk *w, const char *dir, const char *name,
    struct mf_error *err)
{
	struct walk org = *w;
	char orgdir[PATH_BYTES];
	struct stat st;
	enum mf_rc rc;

	org.org = name;
	rc = join(orgdir, sizeof(orgdir), dir, name, err);
	if (rc == MF_OK && stat(orgdir, &st) != 0)
		rc = file_error(err, orgdir, errno);
	if (rc == MF_OK && S_ISDIR(st.st_mode))
		rc = each_entry(&org, orgdir, config_entry, err);
	return rc == MF_OK || rc == MF_ETOOBIG ? rc : skip(w, name, rc, err);
}

static int
entry_cmp(const void *a, const void *b)
{
	const struct model_entry *x = a, *y = b;
	int d = strcmp(x->name, y->name);

	return d != 0 ? d : (x->seq > y->seq) - (x->seq < y->seq);
}

/* Sorted by name, the last loaded of each name kept. */
static void
settle(struct mf_models *models)
{
	size_t i, n = 0;

	if (models->n > 1)
		qsort(models->v, models->n, sizeof(*models->v), entry_cmp);
	for (i = 0; i < models->n; i++) {
		if (i + 1 < models->n &&
		    strcmp(models->v[i].name, models->v[i + 1].name) == 0) {
			free(models->v[i].name);
			continue;
		}
		models->v[n++] = models->v[i];
	}
	models->n = n;
}

enum mf_rc
mf_models_load_dirs(const struct mf_models_load *how, struct mf_models **out,
    struct mf_error *err)
{
	struct mf_models *models;
	struct mf_error local;
	enum mf_rc rc = MF_OK;
	size_t i;

	/* A skipped file's error is handed on, so there must be one. */
	if (err == NULL)
		err = &local;
	models = calloc(1, sizeof(*models));
	if (models == NULL)
		return nomem(err, how->ndirs ? how->dirs[0] : "models");
	models->refs = 1;
	for (i = 0; i < how->ndirs && rc == MF_OK; i++) {
		struct walk w = { models, how, NULL, i,
			how->counts ? &how->counts[i] : NULL };

		if (how->counts != NULL)
			how->counts[i] = 0;
		rc = each_entry(&w, how->dirs[i], org_entry, err);
	}
	if (rc != MF_OK) {
		mf_models_free(models);
		return rc;
	}
	settle(models);
	*out = models;
	return MF_OK;
}

enum mf_rc
mf_models_load(const char *dir, struct mf_models **out, struct mf_error *err)
{
	struct mf_models_load how = { &dir, 1, NULL, NULL, NULL, NULL };

	return mf_models_load_dirs(&how, out, err);
}

static int
name_cmp(const void *key, const void *elem)
{
	const struct model_entry *e = elem;

	return strcmp(key, e->name);
}

const struct mf_model *
mf_models_find(const struct mf_models *models, const char *name)
{
	const struct model_entry *e;

	if (models == NULL || name == NULL || models->n == 0)
		return NULL;
	e = bsearch(name, models->v, models->n, sizeof(*models->v), name_cmp);
	return e ? &e->model : NULL;
}

size_t
mf_models_count(const struct mf_models *models)
{
	return models ? models->n : 0;
}

const char *
mf_models_name(const struct mf_models *models, size_t i)
{
	if (models == NULL || i >= models->n)
		return NULL;
	return models->v[i].name;
}

const struct mf_model *
mf_models_at(const struct mf_models *models, size_t i)
{
	if (models == NULL || i >= models->n)
		return NULL;
	return &models->v[i].model;
}
