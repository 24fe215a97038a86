/*
 * est_loss.c: what the loss holds for a moment, the estimator pytorch's
 * candidate of the transient bucket for the head and its cross-entropy:
 * the standard loss's backward, under tensor and loss parallel too, a
 * chunked loss (torchtune's), a fused one (Liger's) and the standard
 * loss over the model's output held in fp32 (LitGPT's).  What each keeps
 * for backward is the logits bucket's (est_pytorch.c, torch_logits).
 */
#include "est.h"

/*
 * A chunked loss as torchtune 0.6.1 runs CEWithChunkedOutputLoss with C
 * = lossChunks (modules/transformer.py chunked_output,
 * modules/loss/ce_chunked_output_loss.py, the recipes' _loss_step): the
 * final norm's output cut along the sequence by torch.chunk into n =
 * ceil(s / q) pieces of q = ceil(s / C) tokens (the last one shorter),
 * each through lm_head in the compute dtype (el bytes: 2, 4 in fp32), the
 * list held until the loss has run (the recipe's del logits), each piece
 * upcast to fp32 alone for cross_entropy.  What the loss keeps for
 * backward is the standard loss's (torch_logits).  What it holds for a
 * moment, beyond that, at three moments of which the largest counts:
 * - the loss's forward at its last piece: the logits of every piece (el
 *   x V a token) and one piece's fp32 upcast (b x q x 4V; none in fp32,
 *   where .float() returns the logits themselves);
 * - the backward of one piece's loss: nll_loss's and log_softmax's fp32
 *   gradients, b x q x 8V;
 * - a trained lm_head's weight gradient: autograd runs every piece's loss
 *   backward first (its nodes are newer than the lm_head calls), so each
 *   piece's logits gradient (el x V a token) waits, freed as the n
 *   matmuls' backward run, the last piece's first; their weight
 *   gradients (el x Vh each, the 16-bit weight's under autocast) are
 *   summed into one, the first sum into a new tensor and the later ones
 *   in place, so that at the second piece the two gradients and their
 *   sum (3 el x Vh) are alive beside the logits gradients of the n - 2
 *   pieces left and the two pieces' input gradients (piece_grads), while
 *   the saved log-softmax has been freed.  The sum becomes the head's
 *   gradient, g x Vh with g its bytes, which the gradients bucket holds
 *   (autocast casts the 16-bit sum to the fp32 gradient after the last
 *   piece); under FSDP, the unsharded gradient that shardingBuffers
 *   holds (est_fsdp.c; a chunked loss is not measured under FSDP, whose
 *   ranks run the loss as one GPU does).  A frozen head (LoRA) has none.
 * Measured on transformers' models, their lm_head run by torchtune's own
 * chunked_output and the loss by CEWithChunkedOutputLoss itself
 * (tests/torch/loss.py: bf16, fp32, bf16-true, bf16-mixed and LoRA,
 * each moment where it is the largest): within 0.1% when C divides s;
 * otherwise the first two count the largest piece, a little above what
 * the two last pieces hold.
 */
/* "n x ceil(s / C)" into f: the tokens of a sequence in n pieces. */
static void
text_pieces(struct mf_text *f, int64_t n, int64_t chunks)
{
	mf_text_int(f, n);
	mf_text_str(f, " x ceil(s / ");
	mf_text_int(f, chunks);
	mf_text_str(f, ")");
}

/*
 * The input gradients of the two pieces whose matmuls' backward have run
 * at the head's second sum, beside what has been freed of their inputs;
 * " + ..." into f.  With b = 1 a piece of the norm's output is a view,
 * freed only with the last: both gradients are alive (eh x h a token);
 * with b > 1 each piece is a copy that its matmul's backward frees as its
 * gradient comes, the same bytes.  Under autocast lm_head keeps its own
 * 16-bit cast of each piece, so the first piece's gradient, cast back to
 * fp32, is 2h a token more than its freed input (the second's, still 16
 * bits, as much).
 */
static int64_t
piece_grads(const struct mf_model *m, const struct mf_workload *w, int64_t q,
    int64_t n, struct mf_text *f)
{
	int64_t eh = mf_est_hidden_bytes(w), last;

	last = w->seq_len - (n - 1) * q; /* the last piece's tokens */
	if (mf_est_precision(w->precision)->mixed) {
		mf_text_str(f, " + b x (s - ");
		text_pieces(f, n - 1, w->loss_chunks);
		mf_text_str(f, ") x 2h");
		return mf_cmul(mf_cmul(w->micro_batch, last),
		    mf_cmul(2, m->hidden));
	}
	if (w->micro_batch > 1)
		return 0;
	mf_text_str(f, " + (s - ");
	text_pieces(f, n - 2, w->loss_chunks);
	mf_text_str(f, ") x ");
	mf_text_int(f, eh);
	mf_text_str(f, "h");
	return mf_cmul(mf_cmul(eh, last + q), m->hidden);
}

/*
 * Compiled (compile: true), as torchtune 0.6.1's compile_loss compiles
 * CEWithChunkedOutputLoss (training/_compile.py: compute_cross_entropy
 * through torch.compile with inductor, the chunking left eager): each
 * piece's upcast, log-softmax and nll_loss are one graph, which keeps for
 * backward the piece's logits themselves (el x V a token, where eager
 * keeps the fp32 log-softmax) and two fp32 values a token, the row's max
 * and its log-sum-exp (the logits bucket's, est_pytorch.c torch_logits),
 * and makes no fp32 copy of the piece: nothing is held beyond the logits
 * bucket in the loss's forward.  Its backward makes the piece's logits
 * gradient, el x V a token, and then frees the piece's saved logits (b x
 * ceil(s / C) x V x el, where eager's holds its two fp32 gradients).  A
 * trained lm_head's backward is eager's but for what has been freed by
 * then: the saved logits of every piece, el x V a token (eager's saved
 * log-softmax, 4V).  Measured by tests/torch/compile_loss.py, the loss
 * compiled as compile_loss compiles it beside compiled decoder layers, on
 * transformers' models: el x V a token and the 8 bytes of the logits
 * bucket read off its FIT cases' saved tensors (within 0.002%), the
 * piece's backward off FIT[0] (bf16-true, C = 1) and FIT[3] (LoRA, bf16,
 * C = 8), within 0.03%, the head's off FIT[1] (fp32) and FIT[2]
 * (bf16-true), within 0.02%; its CHECK cases within 0.2%.
 */
static int64_t
chunked_head(const struct mf_model *m, const struct mf_workload *w, int64_t q,
    int64_t n, struct mf_text *f)
{
	const struct mf_est_precision *pr = mf_est_precision(w->precision);
	int64_t el = pr->act, sb, rest, g, pos, neg;

	/* The head's gradient: the unsharded one under FSDP, as fully_shard
	 * gathers it (est_fsdp.c). */
	g = mf_est_fsdp_on(w) ? (w->precision == MF_FP32 ? 4 : 2) : pr->grad;
	sb = mf_cmul(w->seq_len, w->micro_batch);
	rest = mf_cmul(w->micro_batch, mf_cmul(n - 2, q));
	mf_text_str(f, ", ");
	mf_text_int(f, 3 * el - g);
	mf_text_str(f, "Vh");
	pos = mf_cmul(3 * el - g, mf_cmul(m->vocab, m->hidden));
	if (n > 2) {
		mf_text_str(f, " + b x ");
		text_pieces(f, n - 2, w->loss_chunks);
		mf_text_str(f, " x V x ");
		mf_text_int(f, el);
		pos = mf_cadd(pos, mf_cmul(mf_cmul(el, rest), m->vocab));
	}
	pos = mf_cadd(pos, piece_grads(m, w, q, n, f));
	/* The saved set freed by then: the log-softmax, or compiled the
	 * pieces' logits. */
	mf_text_str(f, " - s x b x V x ");
	mf_text_int(f, w->compile ? el : 4);
	neg = mf_cmul(mf_cmul(w->compile ? el : 4, sb), m->vocab);
	return rest < 0 ? -1 : mf_cless(pos, neg);
}

/* The chunked loss's text "max(... , " into f, and its bytes. */
static int64_t
chunked_transient(const struct mf_model *m, const struct mf_workload *w,
    struct mf_text *f)
{
	int64_t el = mf_est_precision(w->precision)->act, q, n, bq, fwd, bwd;
	int64_t head = 0;

	q = mf_cdiv_up(w->seq_len, w->loss_chunks);
	n = q > 0 ? mf_cdiv_up(w->seq_len, q) : 0;
	bq = mf_cmul(w->micro_batch, q);
	if (w->compile) {
		/* A piece's backward: its logits gradient (chunked_head's
		 * comment). */
		mf_text_str(f, "max(b x ceil(s / ");
		mf_text_int(f, w->loss_chunks);
		mf_text_str(f, ") x V x ");
		mf_text_int(f, el);
		bwd = mf_cmul(bq, mf_cmul(el, m->vocab));
		if (w->method == MF_FULL && n >= 2)
			head = chunked_head(m, w, q, n, f);
		mf_text_str(f, ", ");
		return mf_max_poisoned(bwd, head);
	}
	mf_text_str(f, "max(s x b x V x ");
	mf_text_int(f, el);
	fwd =
	    mf_cmul(mf_cmul(w->seq_len, w->micro_batch), mf_cmul(el, m->vocab));
	if (el < 4) {
		mf_text_str(f, " + b x ceil(s / ");
		mf_text_int(f, w->loss_chunks);
		mf_text_str(f, ") x V x 4");
		fwd = mf_cadd(fwd, mf_cmul(bq, mf_cmul(4, m->vocab)));
	}
	mf_text_str(f, ", b x ceil(s / ");
	mf_text_int(f, w->loss_chunks);
	mf_text_str(f, ") x V x 8");
	bwd = mf_cmul(bq, mf_cmul(8, m->vocab));
	if (w->method == MF_FULL && n >= 2)
		head = chunked_head(m, w, q, n, f);
	mf_text_str(f, ", ");
	return mf_max_poisoned(mf_max_poisoned(fwd, bwd), head);
}

/*
 * A fused linear cross-entropy as Liger-Kernel 0.8.5 runs it
 * (transformers/model/loss_utils.py LigerForCausalLMLoss, which its
 * patched causal-LM forwards call inside the model's forward, so under
 * autocast; ops/fused_linear_cross_entropy.py): the labels padded by one
 * token (b x (s + 1) int64) and shifted (a copy when b > 1, a view of the
 * padded ones when b = 1), the final norm's output (eh bytes a value,
 * alive as the loss's input: nothing keeps it for backward) cut into
 * chunks of c = min(next_power_of_2(ceil(s x b / ceil(V / h))), s x b)
 * tokens, each chunk's logits (c x V in the compute dtype, el bytes) made
 * by one matmul and turned in place into their gradient by its Triton
 * kernel, which also writes each token's fp32 loss; the target mask (one
 * byte a token).  The input's gradient (eh x h a token) and the head
 * weight's are made in the forward and saved for backward, which only
 * scales them: the first is the logits bucket's, the second the head's
 * gradient, the gradients bucket's.  At each chunk, beside the logits:
 * - a trained head: the head weight's gradient of the chunk, by the
 *   portable path `grad_weight += torch.mm(grad_logits.t(), x).float()`:
 *   the product in el bytes and its fp32 copy (el + 4 bytes of Vh, 4 in
 *   fp32, where .float() returns the product itself).  That is every
 *   GPU's path in releases 0.6.2 to 0.8.0 (PR #830) and that of GPUs
 *   below compute capability 8 since (the CPU's too); releases before
 *   0.6.2 accumulate in place (torch.addmm(out=grad_weight)), and so do,
 *   on an 8.x or 9.x GPU, 0.8.1 and later for an fp32 gradient (PR #1239:
 *   "old mm(...).float(): extra peak 3072 MiB" at V 131072, h 4096, bf16
 *   logits on an RTX 4090, 6 x Vh, and none with addmm) and 0.8.5 for a
 *   16-bit one: counted, the safe side for every release;
 * - a frozen head (LoRA): the chunk's input gradient, c x h in el bytes,
 *   before it is copied into the whole one.
 * Under autocast the head's 16-bit weight that the chunks' matmuls cast
 * is the weights bucket's (mf_est_autocast_params).  Measured on
 * transformers' models with Liger's own loss and its two Triton kernels
 * done in place by torch (tests/torch/fused.py: bf16, fp32, bf16-true,
 * bf16-mixed and LoRA), within 0.01%.
 */
static int64_t
fused_chunk(const struct mf_model *m, const struct mf_workload *w)
{
	int64_t n = mf_cmul(w->seq_len, w->micro_batch), c = 1;
	int64_t want = mf_cdiv_up(n, mf_cdiv_up(m->vocab, m->hidden));

	while (c < want)
		c *= 2;
	return c < n ? c : n;
}

static int64_t
fused_transient(const struct mf_model *m, const struct mf_workload *w,
    int64_t el, struct mf_text *f)
{
	int64_t b = w->micro_batch, sb = mf_cmul(w->seq_len, b);
	int64_t eh = mf_est_hidden_bytes(w), c = fused_chunk(m, w), labels;
	int64_t vh = mf_cmul(m->vocab, m->hidden), bytes;

	mf_text_str(f, "max(s x b x (");
	mf_text_int(f, eh);
	mf_text_str(f, "h + 5) + 8 x b x (s + 1)");
	labels = mf_cmul(8, mf_cmul(b, w->seq_len + 1));
	if (b > 1) {
		mf_text_str(f, " + 8 x s x b");
		labels = mf_cadd(labels, mf_cmul(8, sb));
	}
	mf_text_str(f, " + ");
	mf_text_int(f, c);
	mf_text_str(f, " x V x ");
	mf_text_int(f, el);
	bytes = mf_cadd(mf_cmul(sb, mf_cadd(mf_cmul(eh, m->hidden), 5)),
	    mf_cadd(labels, mf_cmul(c, mf_cmul(el, m->vocab))));
	if (w->method == MF_FULL) {
		mf_text_str(f, " + Vh x ");
		mf_text_int(f, el < 4 ? el + 4 : 4);
		bytes = mf_cadd(bytes, mf_cmul(vh, el < 4 ? el + 4 : 4));
	} else {
		mf_text_str(f, " + ");
		mf_text_int(f, c);
		mf_text_str(f, " x h x ");
		mf_text_int(f, el);
		bytes = mf_cadd(bytes, mf_cmul(c, mf_cmul(el, m->hidden)));
	}
	mf_text_str(f, ", ");
	return bytes;
}

/*
 * The standard loss over the model's output upcast and held by the loop
 * (lossUpcast: output), as LitGPT v0.4.5, v0.4.13 and v0.5.13 run it
 * (Lightning-AI/litgpt, litgpt/finetune/lora.py and full.py fit(),
 * litgpt/utils.py chunked_cross_entropy, litgpt/lora.py GPT.forward, at
 * v0.5.13 litgpt/model.py) under Lightning Fabric (Lightning-AI/
 * pytorch-lightning 2.3.3, src/lightning/fabric/wrappers.py
 * _FabricModule.forward: precision.convert_output(output), every
 * precision plugin's a cast to torch.get_default_dtype(), fp32).  LoRA
 * and QLoRA (lora.py) run lm_head over pieces of 128 tokens and take the
 * cross-entropy of each piece; full training (full.py) runs lm_head whole
 * and cuts the flattened logits into pieces of 128 rows.  What it holds
 * for a moment beyond the logits bucket (torch_logits: the fp32 output
 * and the pieces' fp32 log-softmax), the largest of:
 * - the next step's forward: the loop's `logits` is replaced only when
 *   the model has returned, so the previous step's fp32 output is alive
 *   while the new 16-bit one (el x V a token) is cast piece by piece:
 *   el x s x b x V (none when the output is fp32 already, el = 4);
 * - one piece's loss backward: nll_loss's and log_softmax's fp32
 *   gradients, 8V a row of the piece (b x min(128, s) rows in pieces of
 *   lm_head, min(128, s x b) in full training's);
 * - full training: autograd runs every piece's loss backward first, then
 *   SplitBackward gathers the pieces' fp32 gradients into one new tensor
 *   and the loop's slice (logits[..., :-1, :]) its zeros of the whole
 *   output, while the held output is alive and the saved log-softmax
 *   freed: 4 x s x b x V (in pieces of lm_head each piece's gradient goes
 *   to its own matmul, and nothing gathers them).
 * Measured by tests/torch/loss16.py (LitGPT's chunked_cross_entropy and
 * Fabric's cast copied from those tags, on transformers' models: full and
 * LoRA, bf16-true, bf16-mixed and fp32, two steps each).
 */
/* A piece's tokens: lora.py's lm_head_chunk_size=128, utils.py's
 * chunked_cross_entropy chunk_size=128. */
#define LIT_PIECE 128

static int64_t
output_transient(const struct mf_model *m, const struct mf_workload *w,
    int64_t el, struct mf_text *f)
{
	int64_t b = w->micro_batch, sb = mf_cmul(w->seq_len, b);
	int64_t next = 0, rows, bwd;

	mf_text_str(f, "max(");
	if (el < 4) {
		mf_text_str(f, "s x b x V x ");
		mf_text_int(f, el);
		mf_text_str(f, ", ");
		next = mf_cmul(sb, mf_cmul(el, m->vocab));
	}
	/* A piece's rows: 128 of full training's flattened logits, 128
	 * tokens of each sequence in pieces of lm_head, or fewer. */
	if (w->method == MF_FULL) {
		mf_text_str(f, "s x b x V x 4, ");
		rows = sb < LIT_PIECE ? sb : LIT_PIECE;
		mf_text_str(f, rows < LIT_PIECE ? "s x b" : "128");
	} else {
		rows =
		    mf_cmul(b, w->seq_len < LIT_PIECE ? w->seq_len : LIT_PIECE);
		mf_text_str(f, w->seq_len < LIT_PIECE ? "s x b" : "b x 128");
	}
	mf_text_str(f, " x V x 8, ");
	bwd = mf_cmul(rows, mf_cmul(8, m->vocab));
	if (w->method == MF_FULL)
		bwd = mf_max_poisoned(bwd, mf_cmul(sb, mf_cmul(4, m->vocab)));
	return mf_max_poisoned(next, bwd);
}

int
mf_est_output_upcast(const struct mf_workload *w)
{
	return w->kind == MF_TRAINING && w->estimator == MF_EST_PYTORCH &&
	    w->loss == MF_LOSS_STANDARD && w->loss_upcast == MF_UPCAST_OUTPUT;
}

/*
 * What lossUpcast: output keeps beside the standard loss's logits bucket
 * (est_pytorch.c, torch_logits: the final norm, each piece's fp32
 * log-softmax, 4V a token in all, of s - 1 tokens counted over s; the
 * labels), as LitGPT's loops run it under Lightning Fabric
 * (output_transient, below):
 * - the model's output, which Fabric's convert_output casts whole to fp32
 *   after the forward (a 16-bit output copied, an fp32 one returned as it
 *   is) and the loop's `logits` holds through backward and the
 *   optimizer's step: s x b x 4V (chunked_cross_entropy's pieces of it
 *   are views, or copies when b > 1 that the loss's forward frees);
 * - LoRA or QLoRA under autocast: lora.py runs lm_head over pieces of 128
 *   tokens, and autocast casts a frozen weight again at each call (it
 *   caches only the casts of leaves that require a gradient, torch's
 *   autocast_mode.cpp cached_cast), each piece's matmul keeping its own
 *   16-bit copy of the head for its input's gradient: ceil(s / 128)
 *   copies, one of them the weights bucket's (mf_est_autocast_params).
 * Measured by tests/torch/loss16.py: the bucket within 0.5% (full
 * training: bf16-true, bf16-mixed, fp32; LoRA bf16-true with the
 * activations), the copies counted one by one (LoRA bf16-mixed).
 */
int64_t
mf_est_output_held(const struct mf_model *m, const struct mf_workload *w,
    int64_t vl, struct mf_text *f)
{
	int64_t n = mf_cdiv_up(w->seq_len, LIT_PIECE), bytes;

	if (!mf_est_output_upcast(w) || m->no_head)
		return 0;
	mf_text_str(f, " + s x b x 4V");
	bytes = mf_cmul(mf_cmul(w->seq_len, w->micro_batch), mf_cmul(4, vl));
	if (w->method == MF_FULL || !mf_est_precision(w->precision)->mixed ||
	    n < 2)
		return bytes;
	mf_text_str(f, " + (ceil(s / 128) - 1) x Vh x 2");
	return mf_cadd(bytes,
	    mf_cmul(mf_cmul(n - 1, 2), mf_cmul(m->vocab, m->hidden)));
}

/*
 * The loss's backward, its text "max(... , " into f.  Under tensor
 * parallel without loss parallel lm_head's output is all-gathered whole
 * (ColwiseParallel, output Replicate): the gather's output, e x V a token,
 * and its input, e x Vl, can stay alive into the loss's backward until
 * the collective's work is reaped (seen on gloo, tests/torch/dist.py case
 * tp2-loss, in about one run in two; ProcessGroupNCCL likewise stashes a
 * collective's tensors until its watchdog sees it complete), so they are
 * counted with it.
 */
int64_t
mf_est_loss_transient(const struct mf_model *m, const struct mf_workload *w,
    int64_t ebytes, int64_t vl, struct mf_text *f)
{
	int64_t sb = mf_cmul(w->seq_len, w->micro_batch);

	/* Chunked and fused: one GPU with the head (the domain,
	 * estimate.c). */
	if (w->loss == MF_LOSS_CHUNKED && m->tp <= 1 && !m->no_head)
		return chunked_transient(m, w, f);
	if (w->loss == MF_LOSS_FUSED && m->tp <= 1 && !m->no_head)
		return fused_transient(m, w, ebytes, f);
	/* The output's dtype: autocast's lm_head returns 16 bits (2) where
	 * a LoRA model's activations are counted as fp32. */
	if (mf_est_output_upcast(w) && m->tp <= 1 && !m->no_head)
		return output_transient(m, w,
		    mf_est_precision(w->precision)->mixed ? 2 : ebytes, f);
	if (vl != m->vocab) {
		mf_text_str(f, "max(s x b x Vl x 12, ");
		return m->no_head ? 0 : mf_cmul(sb, mf_cmul(12, vl));
	}
	if (m->tp <= 1) {
		mf_text_str(f, "max(s x b x V x 8, ");
		return m->no_head ? 0 : mf_cmul(sb, mf_cmul(8, vl));
	}
	mf_text_str(f, "max(s x b x (");
	mf_text_int(f, 8 + ebytes);
	mf_text_str(f, "V + ");
	mf_text_int(f, ebytes);
	mf_text_str(f, "Vl), ");
	if (m->no_head)
		return 0;
	return mf_cmul(sb,
	    mf_cadd(mf_cmul(8 + ebytes, vl),
	        mf_cmul(ebytes, mf_model_vocab_rows(m))));
}
