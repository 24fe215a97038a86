/*
 * est_post.c: the estimator post, the reference post's arithmetic of
 * design section 5, kept so that every figure of its tables stays
 * reproducible to the digit: GPT-block activations (34 + 5as/h per token
 * and hidden unit) and fp32 logits beside the shared state.
 */
#include "est.h"

/*
 * L * s*b*h*(34 + 5*a*s/h), computed as L*s*b*(34*h + 5*a*s) so that no
 * fraction is lost; sdpa and flash keep no attention matrix (L*s*b*h*34);
 * checkpointing keeps one input per layer (2*s*b*h*L).  fp32 doubles.
 */
static void
post_activations(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	int fp32 = w->precision == MF_FP32;
	int64_t sb, per;
	struct mf_text f;

	mf_text_init(&f, mf_est_text(e, MF_B_ACTIVATIONS));
	sb = mf_cmul(w->seq_len, w->micro_batch);
	if (w->checkpointing) {
		mf_text_str(&f, "2 x s x b x h x L");
		per = mf_cmul(2, m->hidden);
	} else if (w->attention == MF_EAGER) {
		mf_text_str(&f, "L x s x b x h x (34 + 5as/h)");
		per = mf_cadd(mf_cmul(34, m->hidden),
		    mf_cmul(5, mf_cmul(m->heads, w->seq_len)));
	} else {
		mf_text_str(&f, "L x s x b x h x 34");
		per = mf_cmul(34, m->hidden);
	}
	if (fp32)
		mf_text_str(&f, " x 2 (fp32)");
	per = mf_cmul(mf_cmul(m->layers, sb), per);
	e->bucket[MF_B_ACTIVATIONS] = fp32 ? mf_cmul(2, per) : per;
}

static void
post_training(const struct mf_model *m, const struct mf_workload *w,
    struct mf_estimate *e)
{
	struct mf_text f;

	mf_est_state(m, w, e);
	post_activations(m, w, e);
	mf_text_init(&f, mf_est_text(e, MF_B_LOGITS));
	mf_text_str(&f, "s x b x V x 4");
	e->bucket[MF_B_LOGITS] =
	    mf_cmul(mf_cmul(w->seq_len, w->micro_batch), mf_cmul(m->vocab, 4));
}

const struct mf_est_ops mf_est_post = { "post", post_training };
