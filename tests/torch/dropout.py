#!/usr/bin/env python3
"""Measure what LoRA's input dropout keeps (lora.dropout, design 22) on
PEFT's own adapters and hold memfloor's estimate to it.

PEFT's LoRA layer (peft/tuners/lora/layer.py, Linear.forward) runs
lora_B(lora_A(dropout(x))) with an nn.Dropout of its own on each adapted
linear: above p = 0 each adapter's lora_A keeps the dropped input, a new
tensor in the adapter's dtype, where without dropout it keeps the input
itself (or its cast), and dropout's backward keeps its mask.  On a GPU
torch.nn.functional.dropout is the fused native_dropout, whose mask is
bool, one byte an element (aten/src/ATen/native/Dropout.cpp: "if
is_fused_kernel_acceptable is true, then dropout op will be implemented by
native_dropout"); on the CPU it is composed of bernoulli_ and mul, whose
mask takes the input's dtype.  The measurement runs the GPU's op:
F.dropout is native_dropout here.

For each case (config, targets, adapter dtype; bf16 model, sdpa), models
of one and two layers with dropout 0.1: what one forward keeps for
backward (measure.saved_bytes) against memfloor's activations + logits
within 2%, the second layer alone against the estimate's difference, and
the step's peak (AdamW as the adapters' dtype runs it) at or below
perGpuBytes.  Prints every check; exits 1 on a failure.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf  # noqa: E402,F401  (quiets transformers before torch is used)
import measure  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

P = 0.1
CASES = [
    (measure.FIT[0], ["q_proj", "v_proj"], "fp32"),
    (measure.FIT[0], ["q_proj", "v_proj", "up_proj", "down_proj"], "bf16"),
    (measure.FIT[1], "all-linear", "fp32"),
    (measure.FIT[3], ["o_proj", "gate_proj"], "bf16"),
]


def native_dropout(x, p=0.5, training=True, inplace=False):
    """F.dropout as a GPU runs it: the fused op, a bool mask."""
    if not training or p == 0:
        return x
    return torch.native_dropout(x, p, True)[0]


def estimate(c, s, b, targets, dtype):
    est = hf.estimate(c, {"kind": "training", "sequenceLength": s,
                          "microBatch": b, "method": "lora",
                          "precision": "bf16" if dtype == "fp32"
                          else "bf16-true",
                          "lora": {"rank": measure.RANK, "targets": targets,
                                   "dtype": dtype, "dropout": P}},
                      "dropout-" + c["model_type"])
    if isinstance(est, str):
        sys.exit(est)
    got = {x["name"]: x["bytes"] for x in est["buckets"]}
    return got["activations"] + got["logits"], got["activations"], est


def main():
    failed = checks = 0
    F.dropout = native_dropout
    for (c, s, b), targets, dtype in CASES:
        ids, labels = measure.inputs(c, s, b)
        kept, layers, steps = {}, {}, {}
        for n in (1, 2):
            model = hf.build(c, n, "bf16", "sdpa", lora=targets,
                             rank=measure.RANK, lora_dtype=dtype,
                             lora_dropout=P)
            steps[n] = hf.Step(model, "bf16")
            kept[n] = measure.saved_bytes(steps[n], ids, labels)
            layers[n] = estimate(dict(c, num_hidden_layers=n), s, b,
                                 targets, dtype)
        recipe = measure.Recipe if dtype == "fp32" else measure.TrueRecipe
        label = "+".join(targets) if isinstance(targets, list) else targets
        rows = (("activations + logits", kept[2], layers[2][0], 0.02),
                ("a layer", kept[2] - kept[1], layers[2][1] - layers[1][1],
                 0.02),
                ("step peak <= perGpuBytes",
                 measure.step_peak(steps[2], ids, labels, recipe),
                 layers[2][2]["perGpuBytes"], None))
        f, n = measure.check_rows("%-8s %-5s %-36s" % (
            c["model_type"], dtype, label), rows)
        failed += f
        checks += n
    print("dropout harness: %d checks, %d failed" % (checks, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
