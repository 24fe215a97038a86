#!/usr/bin/env python3
"""Measure what a training step keeps for backward when each decoder layer
is compiled, as torchtune's recipes compile a model (compile: True:
training/_compile.py, compile_model: torch.compile of every
TransformerSelfAttentionLayer, the activation checkpoint's wrapper left
outside), and hold memfloor's `pytorch` estimator with `compile: true` to
it.

The models are transformers' own (tests/torch/hf.py), small, on the CPU,
every decoder layer compiled by torch.compile with inductor (the
partitioner and the saved set are the same as on a GPU; the kernels
differ).  As in tests/torch/measure.py, for each case (shape x
precision x checkpointing, sdpa attention, full fine-tuning):

- saved(L): the bytes saved for backward by one training forward (the
  loss included) as distinct storages packed by saved_tensors_hooks, the
  parameters out: the compiled graph's saved tensors are packed there
  too.  saved(L) - saved(0) is the layers' share (`activations`),
  saved(0) the `logits` bucket, saved(2) - saved(1) one layer.
- with checkpointing (transformers' non-reentrant checkpoint around the
  compiled layer: each layer's input kept, the recomputed layer saving
  the compiled set) the checkpoints' inputs as measure.py counts them,
  plus one compiled layer.
- the peak of a whole step (forward, loss, backward, AdamW as the
  estimate counts it) after one step run first, so that compiling
  (forward and backward graphs) is not part of it.

It fails when activations or logits are off by more than 2% or a peak is
above memfloor's perGpuBytes.  Prints every check with -v; exits 1 on a
failure.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf  # noqa: E402,F401  (quiets transformers before torch is used)
import measure  # noqa: E402

import torch  # noqa: E402

torch._dynamo.config.cache_size_limit = 64

cfg = measure.cfg

# (config, s, b): Llama's block (llama, mistral), a and kv varied so that
# the per-head and per-token terms separate.
CASES = [
    (cfg("llama", 128, 4, 2, 352, 512), 64, 2),
    (cfg("llama", 160, 5, 5, 448, 640), 48, 3),
    (cfg("mistral", 96, 6, 2, 256, 384, d=24), 40, 2),
]


def compiled(c, precision):
    """A measure.Subject of config c whose every decoder layer is compiled
    with inductor, as torchtune's compile_model does."""
    subj = measure.Subject(c, precision)
    for layer in hf.decoder_layers(subj.base):
        layer.compile(backend="inductor")
    return subj


def warm(step, ids, labels):
    """One forward and backward, so that both compiled graphs exist."""
    loss = step(ids, labels)
    loss.backward()
    for p in step.parameters():
        p.grad = None


def held(step, ids, labels):
    """measure.saved_bytes with checkpointing (held), less the CPU
    generator's states (host memory on a GPU too), which a compiled
    layer's checkpoint keeps where the hooks see them."""
    st = measure.saved_storages(step, ids, labels, True)
    return sum(n for n, t in st.values()
               if not (t.dtype == torch.uint8 and
                       t.numel() == measure.RNG_BYTES))


def memfloor(c, s, b, precision, ckpt):
    workload = {"kind": "training", "sequenceLength": s, "microBatch": b,
                "precision": precision, "attention": "sdpa",
                "gradientCheckpointing": ckpt, "compile": True}
    est = measure.estimate(c, workload)
    return ({x["name"]: x["bytes"] for x in est["buckets"]},
            est["perGpuBytes"])


def run_case(i, c, s, b, rows, errors):
    ids, labels = measure.inputs(c, s, b)
    for prec in ("bf16", "fp32"):
        subj = compiled(c, prec)
        s0 = measure.saved_bytes(subj.set(0, "sdpa"), ids, labels)
        s1 = measure.saved_bytes(subj.set(1, "sdpa"), ids, labels)
        s2 = measure.saved_bytes(subj.set(2, "sdpa"), ids, labels)
        layer = s2 - s1
        rows.append((c, prec, layer / (s * b), s, b))
        for ckpt in (False, True):
            if ckpt:
                # Compiled before the count: compiling's fake tensors
                # are not the step's.
                warm(subj.set(2, "sdpa", True), ids, labels)
                acts = held(subj.set(2, "sdpa", True), ids, labels) - \
                    s0 + layer
            else:
                acts = s2 - s0
            name = "compile[%d] %s %s%s" % (i, c["model_type"], prec,
                                            " ckpt" if ckpt else "")
            got, per_gpu = memfloor(c, s, b, prec, ckpt)
            measure.compare(errors, "FIT", name, "activations", acts,
                            got["activations"])
            measure.compare(errors, "FIT", name, "logits", s0, got["logits"])
            step = subj.set(2, "sdpa", ckpt)
            warm(step, ids, labels)
            measure.check_peak(errors, "FIT", name, step, ids, labels,
                               per_gpu)


def main():
    """compile.py [-v] [INDEX ...]: every case, or only those named."""
    only = set(a for a in sys.argv[1:] if a != "-v")
    rows, errors = [], []
    for i, (c, s, b) in enumerate(CASES):
        if not only or str(i) in only:
            run_case(i, c, s, b, rows, errors)
    print("bytes saved per compiled layer per token, in units of h:")
    for c, prec, v, s, b in rows:
        h = c["hidden_size"]
        print("%-8s %-4s h %4d a %2d kv %2d I %4d s %3d b %d %8.2f" %
              (c["model_type"], prec, h, c["num_attention_heads"],
               c["num_key_value_heads"], c["intermediate_size"], s, b,
               v / h))
    return 1 if measure.report([], errors) else 0


if __name__ == "__main__":
    sys.exit(main())
