/*
 * model_lora.c: what LoRA's targets reach on a model (design 22): the
 * masks of all-linear, attention and a list of module names, the names a
 * list may give on a model, and the adapters' parameter counts and
 * widths, as PEFT's target_modules match transformers' modules.
 */
#include "model.h"

#include <assert.h>
#include <stddef.h>

#include "../base/internal.h"

unsigned
mf_lora_mask(enum mf_lora_targets targets, unsigned modules)
{
	switch (targets) {
	case MF_LORA_ALL_LINEAR:
		return MF_LORA_MASK_ALL;
	case MF_LORA_ATTENTION:
		return MF_LORA_MASK_ATTENTION;
	default:
		return modules;
	}
}

const char *
mf_lora_module_name(int v)
{
	if (v == MF_LORA_HEAD_BIT)
		return "lm_head";
	return v >= 0 ? mf_linear_name((enum mf_linear_kind)v) : NULL;
}

unsigned
mf_model_lora_names(const struct mf_model *m)
{
	struct mf_linear v[MF_MODEL_MAX_LINEARS];
	size_t n = mf_model_linears(m, v);
	unsigned mask = 0;

	assert(n <= MF_MODEL_MAX_LINEARS);
	for (size_t i = 0; i < n; i++)
		if (v[i].owner == MF_LIN_LAYER)
			mask |= MF_LORA_BIT(v[i].kind);
	return mask;
}

/*
 * The linears of a mask, as PEFT's target_modules match them: attention
 * the q, k, v and o projections (Phi-3's one qkv_proj and o_proj);
 * "all-linear" every linear of a decoder layer: for a mixture of experts
 * each expert's gate, up and down, and the router and (Qwen2-MoE) the
 * shared expert's gate, which mf_model_linears leaves out (lora_extra);
 * a list the projections it names; the output head is not counted here.
 */
static int
lora_reaches(unsigned mask, const struct mf_linear *l)
{
	return (mask & MF_LORA_BIT(l->kind)) &&
	    (l->owner == MF_LIN_LAYER || (mask & MF_LORA_MOE));
}

/* all-linear's router (h -> E) and shared expert gate (h -> 1), into v
 * (of kind MF_LIN_KINDS: none of the projections'); how many. */
static size_t
lora_extra(const struct mf_model *m, unsigned mask, struct mf_linear *v)
{
	if (!(mask & MF_LORA_MOE) || m->experts == 0)
		return 0;
	v[0] = (struct mf_linear){ MF_LIN_KINDS, MF_LIN_LAYER, m->experts,
		m->hidden, m->layers };
	if (m->shared_intermediate == 0)
		return 1;
	v[1] = (struct mf_linear){ MF_LIN_KINDS, MF_LIN_SHARED, 1, m->hidden,
		m->layers };
	return 2;
}

/* What lora_linears may give: mf_model_linears' and lora_extra's two. */
#define LORA_LINEARS (MF_MODEL_MAX_LINEARS + 2)

/* Every linear the mask reaches, into v; how many. */
static size_t
lora_linears(const struct mf_model *m, unsigned mask,
    struct mf_linear v[LORA_LINEARS])
{
	struct mf_linear all[MF_MODEL_MAX_LINEARS];
	size_t n = 0, k = mf_model_linears(m, all);

	assert(k <= MF_MODEL_MAX_LINEARS);
	for (size_t i = 0; i < k; i++)
		if (lora_reaches(mask, &all[i]))
			v[n++] = all[i];
	return n + lora_extra(m, mask, v + n);
}

int64_t
mf_model_lora_params(const struct mf_model *m, int64_t rank, unsigned mask)
{
	struct mf_linear v[LORA_LINEARS];
	size_t n = lora_linears(m, mask, v);
	int64_t sum = 0;

	assert(n <= LORA_LINEARS);
	/* A: r x in, B: out x r. */
	for (size_t i = 0; i < n; i++)
		sum = mf_cadd(sum,
		    mf_cmul(v[i].count, mf_cadd(v[i].in, v[i].out)));
	return mf_cmul(rank, sum);
}

int64_t
mf_model_lora_largest(const struct mf_model *m, int64_t rank, unsigned mask)
{
	struct mf_linear v[LORA_LINEARS];
	size_t n = lora_linears(m, mask, v);
	int64_t big = 0;

	assert(n <= LORA_LINEARS);
	for (size_t i = 0; i < n; i++)
		big = mf_max_poisoned(big, mf_max_poisoned(v[i].in, v[i].out));
	return mf_cmul(rank, big);
}

int64_t
mf_model_lora_widest(const struct mf_model *m, unsigned mask)
{
	struct mf_linear v[LORA_LINEARS];
	size_t n = lora_linears(m, mask, v);
	int64_t big = 0;

	assert(n <= LORA_LINEARS);
	for (size_t i = 0; i < n; i++)
		big = mf_max_poisoned(big, v[i].out);
	return big;
}
