#!/usr/bin/env python3
"""A fused linear cross-entropy (design 19, `loss: fused`) as Liger-Kernel
runs it, against memfloor's estimate.

Liger-Kernel 0.8.5 (transformers/model/loss_utils.py LigerForCausalLMLoss,
which its patched causal-LM forwards call on the last hidden states inside
the model's forward, so under the Trainer's autocast; the autograd
function of ops/fused_linear_cross_entropy.py): the labels padded and
shifted, the hidden states cut into chunks of
next_power_of_2(ceil(N / ceil(V / H))) tokens, each chunk's logits made by
one matmul and turned in place into their gradient by a Triton kernel,
which also writes each token's loss; the input's gradient and the head
weight's are computed in the forward and saved for backward, which only
scales them.  Here the decoder is transformers' model of each case
(tests/torch/hf.py, the same models as measure.py) and every line of the
loss is Liger's own but its two Triton kernels, which run only on a GPU:
liger_cross_entropy_kernel and element_mul_kernel are replaced by the same
arithmetic done in place a row at a time with torch (CrossEntropyKernel,
ElementMulKernel), which allocates nothing but scalars, as the kernels
work in registers.  On the CPU Liger takes its portable path for the head
weight's gradient, `grad_weight += torch.mm(grad_logits.t(), x).float()`,
the path of every GPU in releases 0.6.2 to 0.8.0 and of GPUs below compute
capability 8 since; releases before 0.6.2, and on an 8.x or 9.x GPU 0.8.1
and later for an fp32 gradient and 0.8.5 for a 16-bit one, accumulate in
place (torch.addmm(out=grad_weight)), which holds less.

For each case it measures, on the CPU with oneDNN off (loss.py's reasons):
- saved(L), the bytes one forward leaves held for backward (measure.py's
  saved_bytes), less the head weight's gradient that Liger saves, which is
  the gradients bucket's: saved(0) is memfloor's `logits`, saved(2) -
  saved(0) its `activations` (LoRA: checked together, loss.py's reason);
- the loss's forward moment above what the forward leaves held (loss.py's
  phases, over no layers), and that it holds that run's peak;
- the peak of a whole step over two layers (forward, loss, backward and
  the optimizer), which must be at most perGpuBytes.
fused.py [-v] [INDEX ...]: every case, or those named; -v prints every
check.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402  (hf first, then torch; the harness's setup)
from measure import cfg  # noqa: E402
import loss  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import liger_kernel.ops.fused_linear_cross_entropy as flce  # noqa: E402
from liger_kernel.transformers.model.loss_utils import (  # noqa: E402
    LigerForCausalLMLoss)

VERBOSE = "-v" in sys.argv


class CrossEntropyKernel:
    """liger_cross_entropy_kernel's launch, kernel[grid](**args), for what
    the loss asks of it (no soft-capping, z-loss, label smoothing, class
    weights or token outputs): each row's loss into loss_ptr and, with
    HAS_GRADIENTS, the row's gradient in place of its logits (softmax less
    the one-hot label, over the tokens counted for a mean), a row at a
    time in place."""

    def __getitem__(self, grid):
        return self.run

    def run(self, X_ptr, Y_ptr, loss_ptr, n_non_ignore, ignore_index,
            reduction, HAS_GRADIENTS, **kw):
        for flag in ("RETURN_Z_LOSS", "RETURN_TOKEN_ACCURACY",
                     "RETURN_PREDICTED_TOKENS", "HAS_WEIGHT",
                     "HAS_SOFTCAPPING"):
            assert not kw[flag], flag
        assert kw["label_smoothing"] == 0 and kw["lse_square_scale"] == 0
        n = n_non_ignore if reduction == "mean" else 1
        for i in range(X_ptr.shape[0]):
            x, y = X_ptr[i], int(Y_ptr[i])
            if y == ignore_index:
                x.zero_()
                loss_ptr[i] = 0
                continue
            x.sub_(x.max()).exp_()
            x.div_(x.sum())
            loss_ptr[i] = -torch.log(x[y].float()) / n
            if HAS_GRADIENTS:
                x[y] -= 1
                x.div_(n)


class ElementMulKernel:
    """element_mul_kernel's launch: X times the scalar gradient, in
    place."""

    def __getitem__(self, grid):
        return self.run

    def run(self, X, stride, grad_output, n_cols, **kw):
        X.mul_(grad_output)


flce.liger_cross_entropy_kernel = CrossEntropyKernel()
flce.element_mul_kernel = ElementMulKernel()

TENSOR_IADD = torch.Tensor.__iadd__
ROWS = 16


def iadd(self, other):
    """a += b as a GPU runs it when the two dtypes differ (Liger's
    `grad_weight += torch.mm(...).float()` on a 16-bit gradient): the
    CPU's TensorIterator first copies both operands to fp32 whole, which
    a GPU's kernel, casting as it reads, does not; here a few rows at a
    time."""
    if (not isinstance(other, torch.Tensor) or other.dtype == self.dtype
            or other.shape != self.shape or self.dim() != 2):
        return TENSOR_IADD(self, other)
    for i in range(0, self.shape[0], ROWS):
        TENSOR_IADD(self[i:i + ROWS], other[i:i + ROWS])
    return self


torch.Tensor.__iadd__ = iadd


class FusedStep(nn.Module):
    """A causal LM's forward as Liger's patched forwards run it: the base
    model (the layers and the final norm), then LigerForCausalLMLoss on
    its last hidden states and lm_head's weight, all under the precision's
    autocast."""

    def __init__(self, model, precision):
        super().__init__()
        self.model, self.precision = model, precision

    def forward(self, ids, labels):
        base = self.model.get_base_model() if hasattr(
            self.model, "get_base_model") else self.model
        with measure.hf.autocast(self.precision):
            h = base.model(input_ids=ids).last_hidden_state
            return LigerForCausalLMLoss(
                hidden_states=h, lm_head_weight=base.lm_head.weight,
                labels=labels, hidden_size=base.config.hidden_size)


def memfloor(c, s, b, precision, optimizer, lora):
    workload = {"kind": "training", "sequenceLength": s, "microBatch": b,
                "precision": precision, "optimizer": optimizer,
                "loss": "fused"}
    if lora is not None:
        workload.update(method="lora",
                        lora={"rank": measure.RANK, "targets": lora})
    est = measure.estimate(c, workload)
    return {x["name"]: x["bytes"] for x in est["buckets"]}, est["perGpuBytes"]


def head_grad(subj):
    """The bytes of the head weight's gradient Liger saves for backward
    (the gradients bucket's; none for a frozen head)."""
    w = subj.base.lm_head.weight
    return w.numel() * w.element_size() if w.requires_grad else 0


def autocast_head(subj, precision):
    """Under autocast the 16-bit copy of lm_head's weight that the chunks'
    matmuls cast and autocast keeps until it exits, after the loss (the
    weights bucket's Pc x 2, as the standard loss's lm_head keeps it)."""
    if not precision.endswith("-mixed"):
        return 0
    return 2 * subj.base.lm_head.weight.numel()


# (config, s, b, precision, the harness's optimizer and memfloor's, LoRA
# targets or None).  Large vocabularies over small hidden sizes make the
# loss's forward the step's peak; SGD with momentum (loss.py's, no
# temporaries) keeps the optimizer step's temporaries, which AdamW holds for
# the head (8 bytes a weight), below it; the LoRA cases peak in the last
# layer's backward.
CASES = [
    (cfg("llama", 64, 4, 2, 176, 8192), 128, 2, "bf16", "sgd", "sgd", None),
    (cfg("qwen2", 64, 4, 1, 160, 6000), 256, 1, "fp32", "sgd", "sgd", None),
    (cfg("phi3", 64, 4, 4, 192, 5000), 100, 2, "bf16-mixed", "sgd", "sgd",
     None),
    (cfg("llama", 64, 4, 2, 176, 8192), 96, 2, "bf16-true", "adamw-true",
     "adamw", None),
    (cfg("mistral", 64, 4, 2, 176, 6144), 64, 2, "bf16", "adamw", "adamw",
     "all-linear"),
    (cfg("qwen2", 96, 4, 2, 256, 7000), 300, 1, "bf16", "adamw", "adamw",
     "attention"),
]


def run_case(i, case, errors):
    c, s, b, prec, opt, optimizer, lora = case
    name = "FUSED[%d] %s %s s=%d b=%d%s" % (
        i, c["model_type"], prec, s, b, " lora" if lora else "")
    ids, labels = measure.inputs(c, s, b)
    subj = measure.Subject(c, prec, lora)
    step = FusedStep(subj.model, prec)
    got, per_gpu = memfloor(c, s, b, prec, optimizer, lora)
    g = head_grad(subj)
    with torch.backends.mkldnn.flags(enabled=False):
        loss.compare_kept(errors, name, subj, step, ids, labels, got, lora,
                          less=g)
        if lora is None:
            t, top = loss.transient(subj, step, "forward", 0, ids, labels)
            t -= autocast_head(subj, prec)
            loss.compare(errors, name, "transient (forward)", t,
                         got["transient"])
            loss.peak_phase(errors, name, "its moment the peak, 0 layers",
                            top)
        loss.whole_step(errors, name, subj, step, opt, ids, labels, per_gpu)


def main():
    loss.VERBOSE = VERBOSE
    return loss.report(CASES, run_case, "FUSED", "fused loss",
                       ("logits", "activations", "activations+logits",
                        "transient", "step peak <= perGpu"))


if __name__ == "__main__":
    sys.exit(main())
