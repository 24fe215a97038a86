#include "fingerprint.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../base/buf.h"
#include "../doc/doc.h"
#include "../fix/fix.h"
#include "../manifest/manifest.h"
#include "../model/quant.h"

/* The version of the canonical text: a change to what it holds or how
 * it is written bumps it, so old and new fingerprints never meet. */
#define FP_VERSION 1
/* The form the digest is of (mf_fp_job): a change to it bumps this. */
#define FP_DIGEST_FORM 2
/* The digest's form of any job fits here (about 120 bytes). */
#define FP_BIN_MAX 1024

enum ftype { F_INT, F_UINT, F_REAL };

struct frow {
	const char *key;
	size_t offset;
	size_t size;
	enum ftype type;
};

#define ROW(s, m, t) \
	{ \
#m, offsetof(struct s, m), sizeof(((struct s *)0)->m), t \
	}
#define MODEL(m) ROW(mf_model, m, F_INT)
#define QUANT(m) \
	{ \
		"quant_" #m, offsetof(struct mf_model, quant.m), \
		    sizeof(((struct mf_model *)0)->quant.m), F_INT \
	}
#define WORK(m) ROW(mf_workload, m, F_INT)

/* The model's shape: every member of struct mf_model but its strings
 * (written apart, in model_strings). */
static const struct frow model_rows[] = {
	MODEL(hidden),
	MODEL(layers),
	MODEL(heads),
	MODEL(kv_heads),
	MODEL(head_dim),
	MODEL(intermediate),
	MODEL(vocab),
	MODEL(experts),
	MODEL(experts_per_tok),
	MODEL(expert_intermediate),
	MODEL(shared_intermediate),
	MODEL(router),
	MODEL(renorm_topk),
	MODEL(tied_embeddings),
	MODEL(qkv_bias),
	MODEL(norms_per_layer),
	MODEL(block),
	MODEL(attn_softcap),
	MODEL(final_softcap),
	MODEL(no_embed),
	MODEL(no_head),
	MODEL(vocab_rows),
	QUANT(format),
	QUANT(bits),
	QUANT(group),
	QUANT(block_out),
	QUANT(block_in),
	QUANT(scale_bytes),
	QUANT(zero_points),
	QUANT(g_idx),
	QUANT(double_quant),
	{ "quant_keep", offsetof(struct mf_model, quant.keep),
	    sizeof(((struct mf_model *)0)->quant.keep), F_UINT },
	MODEL(max_context),
	MODEL(positions),
	ROW(mf_model, rope_factor, F_REAL),
	MODEL(rope_original),
	MODEL(tp),
};

/*
 * The workload after defaults: what its memory and its time (design 21: a
 * request's prompt and output too) depend on.  Left out: graph_reserve,
 * non_torch and all_reduce, which placement takes from the card, and
 * estimator.
 */
static const struct frow work_rows[] = {
	WORK(kind),
	WORK(method),
	WORK(precision),
	WORK(optimizer),
	WORK(attention),
	WORK(checkpointing),
	WORK(ckpt_every),
	WORK(loss),
	WORK(loss_chunks),
	WORK(loss_upcast),
	WORK(activation_offload),
	WORK(optimizer_in_backward),
	WORK(qlora_block),
	WORK(qlora_double_quant),
	WORK(qlora_kbit_prep),
	WORK(reshard_after_forward),
	WORK(sequence_parallel),
	WORK(loss_parallel),
	WORK(seq_len),
	WORK(micro_batch),
	WORK(grad_accum),
	WORK(lora_rank),
	WORK(lora_targets),
	ROW(mf_workload, lora_modules, F_UINT),
	WORK(lora_dtype),
	WORK(shard_gpus),
	WORK(concurrency),
	WORK(context_len),
	WORK(prompt_tokens),
	WORK(output_tokens),
	WORK(kv_dtype),
	WORK(weights_dtype),
	WORK(group_size),
	WORK(server),
	ROW(mf_workload, gpu_util, F_REAL),
	WORK(batched_tokens),
	WORK(block_size),
	WORK(max_num_seqs),
	WORK(tensor),
	WORK(pipeline),
	WORK(expert),
	WORK(server_version),
	WORK(shard_cpu_offload),
	WORK(shard_units),
	WORK(compile),
	WORK(float8),
	WORK(qlora_keeps_input),
	WORK(qlora_quantizer),
	ROW(mf_workload, lora_dropout, F_REAL),
};

/* The member row describes in the struct at base, as a signed integer
 * (an enum, an int, an int64_t) or an unsigned one. */
static int64_t
read_int(const void *base, const struct frow *row)
{
	const char *p = (const char *)base + row->offset;
	int64_t v64;
	int32_t v32;
	uint32_t u32;

	if (row->size == sizeof(v64)) {
		memcpy(&v64, p, sizeof(v64));
		return v64;
	}
	assert(row->size == sizeof(v32));
	if (row->type == F_UINT) {
		memcpy(&u32, p, sizeof(u32));
		return u32;
	}
	memcpy(&v32, p, sizeof(v32));
	return v32;
}

static void
write_rows(struct mf_jw *w, const char *key, const void *base,
    const struct frow *rows, size_t n)
{
	double d;

	mf_jw_open(w, key, '{');
	for (size_t i = 0; i < n; i++) {
		if (rows[i].type != F_REAL) {
			mf_jw_int(w, rows[i].key, read_int(base, &rows[i]));
			continue;
		}
		memcpy(&d, (const char *)base + rows[i].offset, sizeof(d));
		mf_jw_num(w, rows[i].key, d, 6);
	}
}

static void
write_model(struct mf_jw *w, const struct mf_model *m)
{
	write_rows(w, "model", m, model_rows,
	    sizeof(model_rows) / sizeof(model_rows[0]));
	mf_jw_str(w, "quant_method", m->quant.method ? m->quant.method : "");
	mf_jw_str(w, "quant_unknown", m->quant_unknown);
	mf_jw_close(w, '}');
}

void
mf_fp_write(struct mf_jw *w, const char *key, const struct mf_job *job,
    unsigned fixes, int64_t count)
{
	struct mf_workload work = job->work;

	mf_fix_apply(&work, fixes, count);
	mf_jw_open(w, key, '{');
	mf_jw_int(w, "v", FP_VERSION);
	if (job->model_source == MF_MODEL_NONE) {
		mf_jw_null(w, "model");
		mf_jw_int(w, "minMemory", job->min_memory);
	} else {
		write_model(w, &job->model);
	}
	write_rows(w, "workload", &work, work_rows,
	    sizeof(work_rows) / sizeof(work_rows[0]));
	mf_jw_close(w, '}');
	mf_jw_str(w, "framework",
	    job->framework_given ? mf_framework_name(job->framework) : NULL);
	mf_jw_int(w, "count", count);
	mf_jw_close(w, '}');
}

/* The job as placed in the form the digest is of: mf_fp_write's members
 * in its order, each row's value a varint (a real in millionths, as the
 * text rounds it), a string after its length.  Most values are small: a
 * byte each, a tenth of the text's bytes, and no number formatted. */
struct fpbin {
	unsigned char b[FP_BIN_MAX];
	size_t n;
};

/* The most bytes a varint takes: 64 bits, seven a byte. */
#define VARINT_MAX 10

/* v zigzagged (a small magnitude of either sign is a small number), then
 * seven bits a byte, low first, the high bit marking more (protobuf's
 * sint64), at p: one encoding a value, and each one's end is known.
 * Returns the end. */
static inline unsigned char *
varint(unsigned char *p, int64_t v)
{
	uint64_t z = v < 0 ? ~((uint64_t)v << 1) : (uint64_t)v << 1;

	for (; z >= 0x80; z >>= 7)
		*p++ = (unsigned char)(z | 0x80);
	*p++ = (unsigned char)z;
	return p;
}

static void
put(struct fpbin *o, int64_t v)
{
	/* The form's size is fixed by the tables: past it is our mistake. */
	assert(o->n + VARINT_MAX <= sizeof(o->b));
	o->n = (size_t)(varint(o->b + o->n, v) - o->b);
}

static void
put_str(struct fpbin *o, const char *s)
{
	size_t len = strlen(s);

	put(o, (int64_t)len);
	assert(len <= sizeof(o->b) - o->n);
	memcpy(o->b + o->n, s, len);
	o->n += len;
}

/* A varint a row, written through a pointer of its own: a byte stored
 * through o->b may be o->n, so o->n would be read again after each. */
static void
put_rows(struct fpbin *o, const void *base, const struct frow *rows, size_t n)
{
	unsigned char *p = o->b + o->n;
	uint64_t bits;
	int64_t v;
	double d;

	/* Checked a table, not a row: the tables fix the form's size. */
	assert(n <= (sizeof(o->b) - o->n) / VARINT_MAX);
	for (size_t i = 0; i < n; i++) {
		if (rows[i].type != F_REAL) {
			p = varint(p, read_int(base, &rows[i]));
			continue;
		}
		memcpy(&d, (const char *)base + rows[i].offset, sizeof(d));
		memcpy(&bits, &d, sizeof(bits));
		/* Past millionths' range (never a field's), the bits. */
		v = fabs(d) < 9e12 ? llround(d * 1e6) : (int64_t)bits;
		p = varint(p, v);
	}
	o->n = (size_t)(p - o->b);
}

static void
put_job(struct fpbin *o, const struct mf_job *job, unsigned fixes,
    int64_t count)
{
	struct mf_workload work = job->work;

	mf_fix_apply(&work, fixes, count);
	put(o, FP_DIGEST_FORM);
	if (job->model_source == MF_MODEL_NONE) {
		put(o, 0);
		put(o, job->min_memory);
	} else {
		put(o, 1);
		put_rows(o, &job->model, model_rows,
		    sizeof(model_rows) / sizeof(model_rows[0]));
		put_str(o,
		    job->model.quant.method ? job->model.quant.method : "");
		put_str(o, job->model.quant_unknown);
	}
	put_rows(o, &work, work_rows, sizeof(work_rows) / sizeof(work_rows[0]));
	put(o, count);
}

void
mf_fp_job(const struct mf_job *job, unsigned fixes, int64_t count,
    char hex[MF_FP_HEX])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char sum[32];
	struct fpbin o;

	o.n = 0;
	put_job(&o, job, fixes, count);
	mf_fp_sha256(o.b, o.n, sum);
	for (size_t i = 0; i < MF_FP_BYTES; i++) {
		assert(i < sizeof(sum));
		hex[2 * i] = digits[sum[i] >> 4];
		hex[2 * i + 1] = digits[sum[i] & 15];
	}
	hex[2 * MF_FP_BYTES] = '\0';
}

int
mf_fp_valid(const char *s)
{
	size_t i;

	for (i = 0; i < 2 * MF_FP_BYTES; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		        (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[i] == '\0';
}

/* The member row describes in the struct at base, from n. */
static enum mf_rc
read_row(const struct mf_node *n, void *base, const struct frow *row,
    struct mf_error *err)
{
	char *p = (char *)base + row->offset;
	int64_t v;
	int32_t v32;
	uint32_t u32;
	double d;

	if (row->type == F_REAL) {
		if (mf_node_double(n, row->key, -1e300, 1e300, &d, err) !=
		    MF_OK)
			return MF_EINVAL;
		memcpy(p, &d, sizeof(d));
		return MF_OK;
	}
	if (mf_node_int(n, row->key, INT64_MIN, INT64_MAX, &v, err) != MF_OK)
		return MF_EINVAL;
	if (row->size == sizeof(v)) {
		memcpy(p, &v, sizeof(v));
		return MF_OK;
	}
	assert(row->size == sizeof(v32));
	if (row->type == F_UINT) {
		u32 = (uint32_t)v;
		memcpy(p, &u32, sizeof(u32));
	} else {
		v32 = (int32_t)v;
		memcpy(p, &v32, sizeof(v32));
	}
	return MF_OK;
}

static enum mf_rc
read_rows(const struct mf_node *map, void *base, const struct frow *rows,
    size_t n, struct mf_error *err)
{
	for (size_t i = 0; i < n; i++) {
		const struct mf_node *v = mf_node_get(map, rows[i].key);

		if (v == NULL)
			return mf_error_set(err, MF_EINVAL, rows[i].key, 0, 0,
			    "the job as placed has no %s", rows[i].key);
		if (read_row(v, base, &rows[i], err) != MF_OK)
			return MF_EINVAL;
	}
	return MF_OK;
}

static enum mf_rc
read_model(const struct mf_node *m, struct mf_job *job, struct mf_error *err)
{
	const struct mf_node *u = mf_node_get(m, "quant_unknown"), *q;
	const char *text = NULL;

	if (u == NULL)
		return mf_error_set(err, MF_EINVAL, "quant_unknown", 0, 0,
		    "the job as placed has no quant_unknown");
	if (mf_node_str(u, "quant_unknown", &text, err) != MF_OK)
		return MF_EINVAL;
	if (strlen(text) >= sizeof(job->model.quant_unknown))
		return mf_error_set(err, MF_EINVAL, "quant_unknown", 0, 0,
		    "the job as placed has a quant_unknown too long");
	memcpy(job->model.quant_unknown, text, strlen(text) + 1);
	/* Unquantized weights' method is named, for a text written again
	 * to match; a quantized one's name is not kept. */
	q = mf_node_get(m, "quant_method");
	if (q != NULL && q->type == MF_NODE_STR && strcmp(q->text, "none") == 0)
		mf_quant_none(&job->model.quant);
	job->model_source = MF_MODEL_INLINE;
	return read_rows(m, &job->model, model_rows,
	    sizeof(model_rows) / sizeof(model_rows[0]), err);
}

/* The framework the text names, if any (absent or null: none, as a
 * text written before it was kept). */
static enum mf_rc
read_framework(const struct mf_node *root, struct mf_job *job,
    struct mf_error *err)
{
	const struct mf_node *n = mf_node_get(root, "framework");
	const char *name = NULL, *known;

	if (n == NULL || n->type == MF_NODE_NULL)
		return MF_OK;
	if (mf_node_str(n, "framework", &name, err) != MF_OK)
		return MF_EINVAL;
	for (int v = 0; (known = mf_framework_name(v)) != NULL; v++)
		if (strcmp(known, name) == 0) {
			job->framework = v;
			job->framework_given = 1;
			return MF_OK;
		}
	return mf_error_set(err, MF_EINVAL, "framework", 0, 0,
	    "the job as placed names a framework memfloor does not know: '%.64s'",
	    name);
}

/* map's integer member key in [min, max]. */
static enum mf_rc
member_int(const struct mf_node *map, const char *key, int64_t min, int64_t max,
    int64_t *out, struct mf_error *err)
{
	const struct mf_node *n = mf_node_get(map, key);

	if (n == NULL)
		return mf_error_set(err, MF_EINVAL, key, 0, 0,
		    "the job as placed has no %s", key);
	return mf_node_int(n, key, min, max, out, err);
}

enum mf_rc
mf_fp_read(const char *text, size_t len, struct mf_job *job, int64_t *count,
    struct mf_error *err)
{
	const struct mf_node *root, *m;
	struct mf_doc *doc = NULL;
	struct mf_job j;
	int64_t v = 0, c = 0;
	enum mf_rc rc;

	rc = mf_doc_parse(text, len, MF_DOC_JSON, &doc, err);
	if (rc != MF_OK)
		return rc;
	memset(&j, 0, sizeof(j));
	root = mf_doc_root(doc);
	m = mf_node_get(root, "model");
	rc = member_int(root, "v", FP_VERSION, FP_VERSION, &v, err);
	if (rc == MF_OK && m == NULL)
		rc = mf_error_set(err, MF_EINVAL, "model", 0, 0,
		    "the job as placed has no model");
	if (rc == MF_OK && m->type == MF_NODE_NULL)
		rc = member_int(root, "minMemory", 1, INT64_MAX, &j.min_memory,
		    err);
	else if (rc == MF_OK)
		rc = read_model(m, &j, err);
	if (rc == MF_OK)
		rc = read_rows(mf_node_get(root, "workload"), &j.work,
		    work_rows, sizeof(work_rows) / sizeof(work_rows[0]), err);
	if (rc == MF_OK)
		rc = read_framework(root, &j, err);
	if (rc == MF_OK)
		rc = member_int(root, "count", 1, INT64_MAX, &c, err);
	mf_doc_free(doc);
	if (rc != MF_OK)
		return rc;
	j.count = c;
	j.count_given = 1;
	*job = j;
	*count = c;
	return MF_OK;
}
