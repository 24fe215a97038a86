#!/usr/bin/env python3
"""Measure what torchao's float8 training keeps (workload.float8, design
22), and hold memfloor's `pytorch` estimator with float8 to it.

The models are transformers' own (tests/torch/hf.py), small, on the CPU,
their decoder layers' linears swapped by torchao 0.15's
convert_to_float8_training with Float8LinearConfig.from_recipe_name
("tensorwise" or "rowwise"), the output head left an nn.Linear as
torchtitan's train configs leave it (filter_fqns = ["output"]).  Every
linear's dimensions are multiples of 16, as _scaled_mm needs them, and no
case's token count is any weight's dimension (autocast's weight copies
are told from activations by shape, measure.autocast_copies).

Under bf16-mixed a GPU's Float8Linear casts its input to autocast's dtype
(float8_linear.py, forward: torch.is_autocast_enabled() and
torch.get_autocast_gpu_dtype(), which answer for CUDA's autocast); on the
CPU they answer for CUDA and the input would stay fp32, so while a case
runs they answer for the CPU's autocast, which the step runs under.

For each case (shape x precision bf16, bf16-true, bf16-mixed x recipe x
checkpointing, sdpa attention, full fine-tuning), as tests/torch/measure.py
counts them:

- saved(L): the bytes saved for backward by one training forward (the
  loss included) as distinct storages packed by saved_tensors_hooks, the
  parameters out, less autocast's 16-bit weight copies; saved(L) -
  saved(0) the layers' share (`activations`), saved(0) the `logits`
  bucket; with checkpointing the checkpoints' inputs plus one layer.
- autocast's copies (bf16-mixed): the 16-bit weights the graph keeps,
  against the weights bucket less P x 4.
- the peak of a whole step (forward, loss, backward, AdamW as the
  estimate counts it; torch.optim.AdamW's bf16 state for bf16-true).  On
  the CPU torch._scaled_mm dequantizes both operands to fp32 and
  multiplies in fp32 (a GPU's runs on the fp8 operands), so the CPU's
  peak holds more than a GPU's would: the check that it stays under
  perGpuBytes is on the safe side.

The same model without float8 is measured beside each case and the
differences printed (-v): what float8 changes is autocast's copies and
the step's peak; the saved activations are the same.

The transient term itself (est_transient.c, float8_backward: the
largest stage of one Float8Linear's backward) is held to one linear's
backward on its own (LINEARS: in, out, tokens; a bf16 weight, and an fp32
one under autocast), its peak from the profiler with the matmul as a GPU
holds it: torchao's addmm_float8_unwrapped (float8_ops.py) stood in for
by one that allocates what the GPU's does, the output in its dtype and,
for rowwise without fast accumulation, the fp32 outer product of the
scales, whose in-place product with the output a GPU's kernel makes
without temporaries (the CPU's makes two fp32 copies); its numbers are
zeros, which casts and matmuls take as any others.  The peak, less the
weight's gradient (the gradients bucket's), must not be above the
modelled stage less the incoming gradient (made before the backward).

It fails when activations, logits or autocast's copies are off by more
than 2%, or a peak is above memfloor's perGpuBytes or the modelled stage.
Exits 1 on a failure.
"""
import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf  # noqa: E402  (quiets transformers before torch is used)
import measure  # noqa: E402

import torch  # noqa: E402
import torchao.float8.float8_ops as float8_ops  # noqa: E402
from torchao.float8 import (  # noqa: E402
    Float8LinearConfig, convert_to_float8_training)

cfg = measure.cfg
VERBOSE = "-v" in sys.argv

# (config, s, b): Llama's block (llama, mistral); h, I, a and kv varied.
CASES = [
    (cfg("llama", 96, 4, 2, 256, 320), 40, 3),
    (cfg("llama", 128, 4, 4, 352, 512), 48, 2),
    (cfg("mistral", 64, 4, 2, 192, 256, d=16), 40, 2),
    # A small vocabulary and a wide MLP: a float8 linear's backward, not
    # the loss's, is the largest transient (est_pytorch.c,
    # float8_backward).
    (cfg("llama", 64, 4, 2, 512, 128), 40, 2),
]

# One linear's backward on its own: (in, out, tokens).
LINEARS = [(256, 96, 120), (96, 256, 120), (512, 128, 64), (128, 384, 300),
           (64, 512, 80), (512, 64, 80), (64, 64, 512)]

PRECISIONS = ("bf16", "bf16-true", "bf16-mixed")
RECIPES = ("tensorwise", "rowwise")


@contextlib.contextmanager
def cpu_autocast_as_gpu():
    """torch.is_autocast_enabled() and torch.get_autocast_gpu_dtype(), as
    Float8Linear.forward calls them, answer for the CPU's autocast."""
    enabled, dtype = torch.is_autocast_enabled, torch.get_autocast_gpu_dtype
    torch.is_autocast_enabled = \
        lambda *a: enabled(*a) if a else enabled("cpu")
    torch.get_autocast_gpu_dtype = lambda: torch.get_autocast_dtype("cpu")
    try:
        yield
    finally:
        torch.is_autocast_enabled = enabled
        torch.get_autocast_gpu_dtype = dtype


@contextlib.contextmanager
def gpu_matmul():
    """torchao's addmm_float8_unwrapped as a GPU holds its memory (the
    module docstring)."""
    real = float8_ops.addmm_float8_unwrapped

    def stand_in(a_data, a_scale, b_data, b_scale, output_dtype,
                 output_scale=None, bias=None, use_fast_accum=False):
        rowwise = a_scale.shape == (a_data.shape[0], 1) and \
            b_scale.shape == (1, b_data.shape[1])
        scales = None
        if rowwise and not use_fast_accum:
            scales = a_scale.reciprocal() * b_scale.reciprocal()
        dtype = output_dtype
        if rowwise and dtype in (torch.float16, torch.float32):
            dtype = torch.bfloat16
        out = torch.zeros(a_data.shape[0], b_data.shape[1], dtype=dtype)
        del scales
        return out.to(output_dtype)

    float8_ops.addmm_float8_unwrapped = stand_in
    try:
        yield
    finally:
        float8_ops.addmm_float8_unwrapped = real


def stage_bound(i, o, T, e, rowwise):
    """est_transient.c's float8_backward for one linear: its largest
    stage, in bytes."""
    r = 1 if rowwise else 0
    stages = [(9 + e, 0, 0), (1 + e, 0, 9), (2 + e, e + 4 * r, 2),
              (10 + e, e, 1), (2 + e, e + 9, 1), (3 + e, e + 2, 1 + 4 * r)]
    return max(a * T * o + b * T * i + c * o * i for a, b, c in stages)


def run_linears(errors):
    """Each of LINEARS' backward against its modelled stage."""
    for i, o, T in LINEARS:
        for wdtype in (torch.bfloat16, torch.float32):
            for recipe in RECIPES:
                torch.manual_seed(0)
                m = torch.nn.Sequential(torch.nn.Linear(i, o, bias=False))
                m = m.to(wdtype)
                convert_to_float8_training(
                    m, config=Float8LinearConfig.from_recipe_name(recipe))
                x = torch.randn(T, i, dtype=torch.bfloat16,
                                requires_grad=True)
                with torch.autocast("cpu", dtype=torch.bfloat16,
                                    enabled=wdtype == torch.float32):
                    y = m(x)
                g = torch.randn_like(y)
                with gpu_matmul():
                    peak = measure.peak_of(lambda: y.backward(g))
                peak -= o * i * (4 if wdtype == torch.float32 else 2)
                bound = stage_bound(i, o, T, 2, recipe == "rowwise") - \
                    2 * T * o
                name = "LINEAR in %d out %d T %d %s %s" % (
                    i, o, T, "fp32" if wdtype == torch.float32 else "bf16",
                    recipe)
                errors.append(("LINEAR", name, "stage", peak, bound,
                               (bound - peak) / peak))
                if VERBOSE:
                    print("%-44s backward %8d stage %8d %+6.2f%%" %
                          (name, peak, bound, 100 * (bound - peak) / peak))
                if peak > bound:
                    print("FAIL %s backward %d above the stage %d" %
                          (name, peak, bound))


def subject(c, precision, recipe):
    """A measure.Subject of c in precision, its layers' linears float8 by
    recipe (None: left as they are)."""
    subj = measure.Subject(c, precision)
    if recipe is not None:
        convert_to_float8_training(
            subj.model,
            config=Float8LinearConfig.from_recipe_name(recipe),
            module_filter_fn=lambda mod, fqn: fqn != "lm_head")
    return subj


def kept(subj, layers, ckpt, ids, labels):
    """(bytes saved less autocast's copies, autocast's copies)."""
    st = measure.saved_storages(subj.set(layers, "sdpa", ckpt), ids, labels,
                                ckpt)
    copies = measure.autocast_copies(subj.model, st)
    return sum(n for n, _ in st.values()) - copies, copies


def measured(subj, ids, labels):
    """{ckpt: (activations, logits, copies, peak)} of subj."""
    s0, _ = kept(subj, 0, False, ids, labels)
    s1, _ = kept(subj, 1, False, ids, labels)
    s2, copies = kept(subj, 2, False, ids, labels)
    out = {}
    for ckpt in (False, True):
        acts = s2 - s0
        if ckpt:
            acts = kept(subj, 2, True, ids, labels)[0] - s0 + (s2 - s1)
        recipe = measure.TrueRecipe if subj.step.precision == "bf16-true" \
            else measure.Recipe
        peak = measure.step_peak(subj.set(2, "sdpa", ckpt), ids, labels,
                                 recipe)
        out[ckpt] = (acts, s0, copies, peak)
    return out


def memfloor(c, s, b, precision, recipe, ckpt):
    est = measure.estimate(c, {
        "kind": "training", "sequenceLength": s, "microBatch": b,
        "precision": precision, "attention": "sdpa",
        "gradientCheckpointing": ckpt, "float8": recipe})
    return {x["name"]: x["bytes"] for x in est["buckets"]}, \
        est["perGpuBytes"]


def run_case(i, c, s, b, errors):
    ids, labels = measure.inputs(c, s, b)
    for prec in PRECISIONS:
        plain = measured(subject(c, prec, None), ids, labels)
        for recipe in RECIPES:
            subj = subject(c, prec, recipe)
            params = sum(p.numel() for p in subj.model.parameters())
            got_all = measured(subj, ids, labels)
            for ckpt in (False, True):
                acts, logits, copies, peak = got_all[ckpt]
                got, per_gpu = memfloor(c, s, b, prec, recipe, ckpt)
                name = "CASE[%d] %s %s %s%s" % (
                    i, c["model_type"], prec, recipe,
                    " ckpt" if ckpt else "")
                measure.compare(errors, "FLOAT8", name, "activations",
                                acts, got["activations"])
                measure.compare(errors, "FLOAT8", name, "logits", logits,
                                got["logits"])
                if prec == "bf16-mixed":
                    measure.compare(errors, "FLOAT8", name,
                                    "autocast copies", copies,
                                    got["weights"] - 4 * params)
                errors.append(("FLOAT8", name, "peak", peak, per_gpu,
                               (per_gpu - peak) / peak))
                p_acts, _, p_copies, p_peak = plain[ckpt]
                if VERBOSE:
                    print("%-40s step peak %9d perGpuBytes %9d %+6.2f%%;"
                          " vs plain: saved %+d, copies %+d, peak %+d" %
                          (name, peak, per_gpu,
                           100 * (per_gpu - peak) / peak, acts - p_acts,
                           copies - p_copies, peak - p_peak))
                if peak > per_gpu:
                    print("FAIL %s peak %d above perGpuBytes %d" %
                          (name, peak, per_gpu))


def report(errors):
    failed = 0
    for bucket in ("activations", "logits", "autocast copies", "peak",
                   "stage"):
        e = [x[5] for x in errors if x[2] == bucket]
        if not e:
            continue
        if bucket in ("peak", "stage"):
            print("FLOAT8 %s: estimate above the measured one by %+.1f%% "
                  "to %+.1f%% (%d cases)" %
                  (bucket, 100 * min(e), 100 * max(e), len(e)))
            failed += sum(1 for x in e if x < 0)
        else:
            worst = max(e, key=abs)
            print("FLOAT8 %-16s: worst error %+.3f%% (%d cases)" %
                  (bucket, 100 * worst, len(e)))
            failed += sum(1 for x in e if abs(x) > measure.TOLERANCE)
    print("float8 harness: %d checks, %d failed" % (len(errors), failed))
    return failed


def main():
    """float8.py [-v] [INDEX ... | linears]: every case, or only those
    named."""
    only = set(a for a in sys.argv[1:] if a != "-v")
    errors = []
    with cpu_autocast_as_gpu():
        for i, (c, s, b) in enumerate(CASES):
            if not only or str(i) in only:
                run_case(i, c, s, b, errors)
        if not only or "linears" in only:
            run_linears(errors)
    return 1 if report(errors) else 0


if __name__ == "__main__":
    sys.exit(main())
