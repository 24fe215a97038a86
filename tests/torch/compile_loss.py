#!/usr/bin/env python3
"""A chunked loss compiled as torchtune compiles it (design 22, `loss:
chunked` with `compile: true`), against memfloor's estimate.

torchtune 0.6.1's recipes with compile: True call training.compile_loss
(training/_compile.py), which, for CEWithChunkedOutputLoss, replaces
loss.compute_cross_entropy with torch.compile(loss.compute_cross_entropy,
backend="inductor"): each piece's fp32 upcast and cross-entropy is one
compiled graph, the chunking left eager.  Here that is done to the loss of
tests/torch/loss.py's ChunkedStep (transformers' model, its lm_head run by
torchtune's own chunked_output, the loss by CEWithChunkedOutputLoss
itself), on the CPU with oneDNN off, as loss.py measures the eager loss,
and each case is run once before it is measured, so that compiling is not
part of it.  Each decoder layer is compiled too, as torchtune's
compile_model does with the same compile: True (tests/torch/compile.py,
compile_lora.py), so that each case is the whole compiled step: the
estimate's activations are the compiled layers'.

For each case it measures (loss.py's kept, phases and moment):
- saved(L), the bytes one forward leaves held for backward: saved(0) is
  memfloor's `logits`, saved(2) - saved(0) its `activations` (LoRA:
  checked together);
- the moment of the loss the case is built to make the largest, above what
  the other buckets hold, over no layers (one for LoRA): "backward" one
  piece's loss backward (the backward's peak less what the forward left),
  "head" the backward of a trained lm_head's pieces (less the head's
  gradient too), and that its phase holds that run's peak;
- the peak of a whole step over two layers (forward, loss, backward, the
  optimizer), run once first, checked to be at most perGpuBytes.
Cases in FIT are those the loss's terms were read from; CHECK holds shapes
they never saw.  It fails when logits, activations or the transient are
off by more than 2% (where lossChunks does not divide s, when the
transient is below the moment: memfloor counts the largest piece), when
the moment is not its run's peak, or when a step's peak is above
perGpuBytes.
compile_loss.py [-v] [INDEX ...]: every case, or those named; -v prints
every check.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf  # noqa: E402  (quiets transformers before torch is used)
import loss  # noqa: E402
import measure  # noqa: E402
from measure import cfg  # noqa: E402

import torch  # noqa: E402

torch._dynamo.config.cache_size_limit = 64

QV = ["q_proj", "v_proj"]

# (set, config, s, b, lossChunks, precision, the harness's optimizer and
# memfloor's, LoRA targets or None, the moment built to be the largest and
# the layers it is measured over).  Large vocabularies and small hidden
# sizes make the loss the step's peak; the "head" cases a wide lm_head,
# few tokens and an optimizer without temporaries.
CASES = [
    ("FIT", cfg("llama", 64, 4, 2, 176, 8192), 64, 2, 1, "bf16-true",
     "adamw-true", "adamw", None, "backward", 0),
    ("FIT", cfg("llama", 512, 8, 2, 704, 2048), 32, 2, 4, "fp32", "sgd",
     "sgd", None, "head", 0),
    ("FIT", cfg("llama", 384, 6, 2, 512, 3000), 48, 1, 3, "bf16-true",
     "sgd", "sgd", None, "head", 0),
    ("FIT", cfg("mistral", 64, 4, 2, 176, 12288), 64, 2, 8, "bf16",
     "adamw", "adamw", "all-linear", "backward", 1),
    # Shapes the terms were not read from; lossChunks not dividing s (the
    # estimate counts the largest piece, checked only to be above).
    ("CHECK", cfg("mistral", 320, 5, 1, 448, 2500), 44, 2, 3, "bf16-true",
     "sgd", "sgd", None, "head", 0),
    ("CHECK", cfg("llama", 96, 6, 2, 256, 7000), 90, 1, 4, "fp32",
     "adamw", "adamw", QV, "backward", 1),
    ("CHECK", cfg("llama", 128, 4, 2, 352, 4096), 64, 2, 4, "bf16-true",
     "sgd", "sgd", None, "head", 0),
    ("CHECK", cfg("llama", 160, 5, 5, 448, 8000), 48, 2, 2, "bf16",
     "adamw", "adamw", QV, "backward", 1),
]


def warm(subj, step, layers, ids, labels):
    """One forward and backward over layers layers, so that the compiled
    graphs exist before anything is measured."""
    subj.set(layers, "sdpa")
    step(ids, labels).backward()
    for p in subj.model.parameters():
        p.grad = None


def whole_step(errors, name, subj, step, opt, ids, labels, per_gpu):
    """loss.py's whole_step after one step run first (compiling is not
    the step's)."""
    subj.set(2, "sdpa")
    recipe = loss.RECIPES[opt](subj.model.parameters())
    step(ids, labels).backward()
    recipe.step()
    return loss.whole_step(errors, name, subj, step, opt, ids, labels,
                           per_gpu)


def run_case(i, case, errors):
    tag, c, s, b, chunks, prec, opt, optimizer, lora, phase, layers = case
    name = "%s[%d] %s %s C=%d s=%d b=%d%s" % (
        tag, i, c["model_type"], prec, chunks, s, b, " lora" if lora else "")
    ids, labels = measure.inputs(c, s, b)
    subj = measure.Subject(c, prec, lora)
    for layer in hf.decoder_layers(subj.base):
        layer.compile(backend="inductor")
    step = loss.ChunkedStep(subj.model, chunks, prec)
    step.loss_fn.compute_cross_entropy = torch.compile(
        step.loss_fn.compute_cross_entropy, backend="inductor")
    got, per_gpu = loss.memfloor(c, s, b, chunks, prec, optimizer, lora,
                                 compile=True)
    exact = s % chunks == 0
    with torch.backends.mkldnn.flags(enabled=False):
        for n in (2, 1) if lora else (2, 0):
            warm(subj, step, n, ids, labels)
        loss.compare_kept(errors, name, subj, step, ids, labels, got, lora)
        t, top = loss.transient(subj, step, phase, layers, ids, labels)
        loss.compare(errors, name, "transient (%s)" % phase, t,
                     got["transient"], above=not exact)
        loss.peak_phase(errors, name,
                        "its moment the peak, %d layers" % layers, top)
        whole_step(errors, name, subj, step, opt, ids, labels, per_gpu)


def main():
    return loss.report(CASES, run_case, "CLOSS", "compiled chunked loss",
                       ("logits", "activations", "activations+logits",
                        "transient", "step peak <= perGpu"))


if __name__ == "__main__":
    sys.exit(main())
