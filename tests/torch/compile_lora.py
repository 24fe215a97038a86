#!/usr/bin/env python3
"""Measure what a LoRA training step keeps for backward when each decoder
layer is compiled, as torchtune's LoRA recipes run with compile: True
(training/_compile.py, compile_model: torch.compile of every
TransformerSelfAttentionLayer, the activation checkpoint's wrapper left
outside), and hold memfloor's `pytorch` estimator with `method: lora` and
`compile: true` to it.

The models are transformers' own with PEFT's LoRA (tests/torch/hf.py, as
tests/torch/measure.py builds its LoRA subjects), small, on the CPU, every
decoder layer compiled by torch.compile with inductor (the partitioner
and the saved set are the same as on a GPU; the kernels differ), as
tests/torch/compile.py does for full fine-tuning.  For each case (shape x
rank x targets x precision and lora.dtype x checkpointing, sdpa):

- saved(L): the bytes saved for backward by one training forward (the
  loss included) as distinct storages packed by saved_tensors_hooks, the
  parameters out (measure.py's saved_bytes).  A frozen model with no
  layers keeps nothing, so, as measure.py does for LoRA, saved(2) is
  held to activations + logits together, and saved(2) - saved(1), one
  layer, to the estimate's activations of two layers less one's.
- the peak of a whole step (forward, loss, backward, AdamW: measure.py's
  Recipe for fp32 adapters, TrueRecipe for bf16 ones, as torchtune steps
  them) after one step run first, so that compiling is not part of it.
- with checkpointing (transformers' non-reentrant checkpoint around the
  compiled layer) what the checkpoints hold (less the CPU generator's
  states, compile.py's held) plus one compiled layer, held to
  activations + logits, and the same step's peak to perGpuBytes.  Under
  the checkpoint the layer's backward graph runs its forward again and
  then its backward, as one inductor graph (TORCH_LOGS=output_code shows
  the recomputed mm calls in it), whose peak, at the MLP's backward, the
  estimate's transient counts (est_pytorch.c, recompute_terms).

The targets are PEFT's and torchtune's default for Llama, [q_proj,
v_proj], and all-linear; the adapters in fp32 (lora.dtype fp32, PEFT's
autocast_adapter_dtype) on a bf16 and an fp32 model, and in bf16 on a
bf16 model (lora.dtype bf16, as torchtune keeps them); and QLoRA
(method: qlora), without prepare_model_for_kbit_training: each decoder
linear bitsandbytes' NF4 Linear4bit computing in bf16 (tests/torch/
quant.py's swap_linears), PEFT's fp32 or bf16 adapters on top, and
torchtune's own base, each decoder linear its FrozenNF4Linear (torchao's
NF4Tensor, qlora.quantizer torchao) under bf16 adapters.  bitsandbytes'
compiled layer keeps what LoRA's keeps; torchao's saves, besides, the
bf16 weights its graph dequantized (est_pytorch.c, nf4_compiled).  Cases
in FIT are those the per-layer terms were derived on (their h, I, a, kv,
d, rank, s and b all differ); CHECK holds shapes and lists of targets they
never saw.  It fails when a bucket is off by more than 2% or a peak is
above the step's bytes (perGpuBytes less what the loading moment adds,
which this harness does not run).
Prints every check with -v; exits 1 on a failure.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf  # noqa: E402  (quiets transformers before torch is used)
import measure  # noqa: E402
from compile import held, warm  # noqa: E402

import torch  # noqa: E402

torch._dynamo.config.cache_size_limit = 64

cfg = measure.cfg
QV = ["q_proj", "v_proj"]

# (tag, config, s, b, rank, targets)
CASES = [
    ("FIT", cfg("mistral", 96, 6, 2, 256, 384, d=24), 40, 2, 4,
     (QV, "all-linear")),
    ("FIT", cfg("llama", 112, 4, 1, 320, 520, d=20), 56, 1, 8,
     (QV, "all-linear")),
    ("CHECK", cfg("llama", 160, 5, 5, 448, 640), 48, 3, 16,
     (QV, ["k_proj", "o_proj", "down_proj"])),
]

# (method, precision, lora.dtype, qlora.quantizer): QLoRA as quant.py
# builds it, each decoder linear bitsandbytes' NF4 Linear4bit computing in
# bf16, PEFT's adapters on top, without prepare_model_for_kbit_training.
RUNS = [("lora", "bf16", "fp32", None), ("lora", "bf16", "bf16", None),
        ("lora", "fp32", "fp32", None),
        ("qlora", "bf16", "fp32", "bitsandbytes"),
        ("qlora", "bf16", "bf16", "bitsandbytes")]

# torchtune's QLoRA: each decoder linear its FrozenNF4Linear (torchao's
# NF4Tensor), bf16 adapters.  torchao keeps a bf16 factor for every 256
# blocks of 64 weights, so each linear's weights are a multiple of 16,384:
# its own case.
NF4_CASES = [
    ("CHECK", cfg("llama", 256, 4, 2, 512, 1000), 48, 2, 8,
     (QV, "all-linear")),
]
NF4_RUNS = [("qlora", "bf16", "bf16", "torchao")]


class Subject(measure.Subject):
    """measure.Subject with PEFT's LoRA of a rank and targets, every
    decoder layer compiled with inductor, as compile_model does."""

    def __init__(self, c, method, precision, targets, dtype, rank, quant):
        torch._dynamo.reset()
        self.c = c
        self.model = hf.build(c, 2, precision, "sdpa", lora=targets,
                              rank=rank, lora_dtype=dtype,
                              base=four_bit(quant))
        self.base = self.model.get_base_model()
        self.step = hf.Step(self.model, precision)
        for layer in hf.decoder_layers(self.base):
            layer.compile(backend="inductor")


def memfloor(c, *args):
    """memfloor's buckets and the step's bytes (perGpuBytes, less what the
    loading moment adds) of c's job (workload's args)."""
    est = measure.estimate(c, workload(*args))
    got = {x["name"]: x["bytes"] for x in est["buckets"]}
    return got, est["perGpuBytes"] - got.get("loading", 0)


def four_bit(quant):
    """hf.build's base for qlora.quantizer quant: each decoder linear
    bitsandbytes' NF4 Linear4bit (quant.py's) or torchtune's
    FrozenNF4Linear; None for LoRA."""
    import quant as q
    if quant is None:
        return None
    make = q.quantize if quant == "bitsandbytes" else q.nf4_linear

    def base(model):
        for layer in hf.decoder_layers(model):
            q.swap_linears(layer, make)
    return base


def workload(method, s, b, precision, ckpt, rank, targets, dtype, quant):
    w = {"kind": "training", "sequenceLength": s, "microBatch": b,
         "precision": precision, "attention": "sdpa",
         "gradientCheckpointing": ckpt, "compile": True, "method": method,
         "lora": {"rank": rank, "targets": targets, "dtype": dtype}}
    if quant is not None:
        w["qlora"] = {"quantizer": quant}
    return w


def checkpointed(tag, name, c, subj, args, ids, labels, layer, errors):
    """With checkpointing: what the checkpoints keep plus one compiled
    layer held to activations + logits, and the step's peak to
    perGpuBytes."""
    step = subj.set(2, "sdpa", True)
    warm(step, ids, labels)
    kept = held(step, ids, labels) + layer
    got, per_gpu = memfloor(c, *args)
    measure.compare(errors, tag, name, "lora activations+logits", kept,
                    got["activations"] + got["logits"])
    measure.check_peak(errors, tag, name, step, ids, labels, per_gpu,
                       measure.Recipe if args[-2] == "fp32" else
                       measure.TrueRecipe)


def run_targets(tag, i, c, s, b, rank, targets, runs, rows, errors, ids,
                labels):
    label = "+".join(targets) if isinstance(targets, list) else targets
    for method, prec, dtype, quant in runs:
        subj = Subject(c, method, prec, targets, dtype, rank, quant)
        s1 = measure.saved_bytes(subj.set(1, "sdpa"), ids, labels)
        s2 = measure.saved_bytes(subj.set(2, "sdpa"), ids, labels)
        layer = s2 - s1
        rows.append((c, method, prec, dtype, label, rank, layer / (s * b), s,
                     b))
        args = (method, s, b, prec, False, rank, targets, dtype, quant)
        one, _ = memfloor(dict(c, num_hidden_layers=1), *args)
        two, _ = memfloor(c, *args)
        name = "%s[%d] %s %s%s %s/%s %s" % (
            tag, i, c["model_type"], method, "" if quant is None else
            "/" + quant, prec, dtype, label)
        measure.compare(errors, tag, name, "lora activations+logits", s2,
                        two["activations"] + two["logits"])
        measure.compare(errors, tag, name, "lora layer", layer,
                        two["activations"] - one["activations"])
        step = subj.set(2, "sdpa")
        warm(step, ids, labels)
        _, per_gpu = memfloor(c, *args)
        measure.check_peak(errors, tag, name, step, ids, labels, per_gpu,
                           measure.Recipe if dtype == "fp32" else
                           measure.TrueRecipe)
        checkpointed(tag, name + " ckpt", c, subj,
                     (method, s, b, prec, True, rank, targets, dtype, quant),
                     ids,
                     labels, layer, errors)


def main():
    """compile_lora.py [-v] [INDEX ...]: every case, or only those named."""
    only = set(a for a in sys.argv[1:] if a != "-v")
    rows, errors = [], []
    cases = [x + (RUNS,) for x in CASES] + [x + (NF4_RUNS,) for x in NF4_CASES]
    for i, (tag, c, s, b, rank, targets, runs) in enumerate(cases):
        if only and str(i) not in only:
            continue
        ids, labels = measure.inputs(c, s, b)
        for t in targets:
            run_targets(tag, i, c, s, b, rank, t, runs, rows, errors, ids,
                        labels)
    print("bytes saved per compiled LoRA layer per token, in units of h:")
    for c, method, prec, dtype, label, rank, v, s, b in rows:
        h = c["hidden_size"]
        print("%-8s %-5s %-4s/%-4s %-26s h %4d a %2d kv %2d I %4d r %2d "
              "s %3d b %d %8.2f" %
              (c["model_type"], method, prec, dtype, label, h,
               c["num_attention_heads"], c["num_key_value_heads"],
               c["intermediate_size"], rank, s, b, v / h))
    return 1 if measure.report([], errors) else 0


if __name__ == "__main__":
    sys.exit(main())
