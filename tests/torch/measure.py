#!/usr/bin/python3
"""Measure what PyTorch keeps for small models of every architecture memfloor
knows, and hold memfloor's `pytorch` estimator to it.

For each case (architecture x shapes x bf16/fp32 x eager/fused attention x
with and without per-layer checkpointing x full and LoRA) it measures, on
CPU:

- saved(L): the bytes saved for backward by one training forward (loss
  included), as distinct storages packed by saved_tensors_hooks, leaving
  out the parameters.  saved(0), a model with no layers, is what lives
  outside the layers (memfloor's `logits` bucket); saved(L) - saved(0) is
  the layers' share (`activations`); saved(2) - saved(1) is one layer.
- with checkpointing the hooks never see a layer's input (the checkpoint
  keeps it in a closure): the tensors the forward created that are still
  alive after it are counted too (see saved_bytes); the activations are
  then those, less the outside part, plus one layer as measured without
  checkpointing, which backward recomputes and keeps while it runs
  through that layer;
- for some cases the peak of a whole step (forward, loss, backward, AdamW
  step) with the recipe the estimate assumes: 16-bit weights and
  gradients, fp32 master weights and moments (fp32: weights, gradients and
  moments in fp32, no master copy), the optimizer written as a loop over
  parameters; the peak is the profiler's, from every allocation and free
  of the allocator in order (tensor storage only: what a GPU would hold;
  glibc's own counters also see oneDNN's caches and autograd's nodes).

It then asks memfloor (the command line, -o json) for the same job with
the same config inline, and fails when activations or logits are off by
more than 2%, or the peak is above memfloor's perGpuBytes.  LoRA (rank 4,
all-linear on even cases, attention on odd ones): a frozen model without
layers keeps nothing, so activations and logits are checked together,
and one layer as the difference of two layers and one.  Cases in FIT
are those the coefficients were derived on; CHECK holds shapes they never
saw.  Prints the per-layer table (bytes per layer per token, in units of
h) and every error; exits 1 on a failure.
"""
import gc
import json
import os
import subprocess
import sys
import tempfile
import warnings
import weakref

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blocks  # noqa: E402

TOP = os.environ.get("MF_TOP", os.getcwd())
CLI = os.environ.get("MEMFLOOR", os.path.join(TOP, "build/memfloor"))
TOLERANCE = 0.02
RANK = 4

torch.manual_seed(0)
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


# --- measuring ------------------------------------------------------------

def storage_key(t):
    s = t.storage()
    return s.data_ptr(), s.nbytes()


class Box:
    """What a pack hook hands autograd; alive while the graph holds it."""
    __slots__ = ("t", "__weakref__")

    def __init__(self, t):
        self.t = t


def tensors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]


def saved_bytes(model, ids, labels):
    """Distinct storages that one forward leaves held for backward,
    parameters out: what the graph holds (every tensor packed by
    saved_tensors_hooks whose box is still alive when the forward ends, so
    that a part of the graph dropped early does not count and a freed
    storage's reused address cannot hide a live one) and, with
    checkpointing, what the checkpoints hold: their inputs, which the hooks
    never see, found as the tensors the forward created that are still
    alive after it."""
    gc.collect()
    before = {id(t) for t in tensors()}
    skip = {p.storage().data_ptr() for p in model.parameters()}
    boxes = []

    def pack(t):
        b = Box(t)
        boxes.append(weakref.ref(b))
        return b

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda b: b.t):
        loss = model(ids, labels)
    gc.collect()
    kept = [r().t for r in boxes if r() is not None]
    kept += [t for t in tensors() if id(t) not in before and t is not loss]
    seen = {}
    for t in kept:
        ptr, n = storage_key(t)
        if ptr not in skip:
            seen[ptr] = max(seen.get(ptr, 0), n)
    del loss, kept
    return sum(seen.values())


def peak_of(fn):
    """Run fn under the profiler and return the peak of the bytes the
    allocator handed out and had not taken back, counted from zero at the
    start: each allocation and free is one memory event, in order."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as p:
        fn()
    events = [e for e in p.profiler.kineto_results.events()
              if e.name() == "[memory]"]
    live = peak = 0
    for e in sorted(events, key=lambda e: e.start_us()):
        live += e.nbytes()
        peak = max(peak, live)
    return peak


def inputs(sh, s, b):
    ids = torch.randint(0, sh.V, (b, s))
    labels = torch.randint(0, sh.V, (b, s))
    return ids, labels


def build(cfg, layers, fused, ckpt, dtype):
    c = dict(cfg, num_hidden_layers=layers)
    return blocks.CausalLM(c, fused, ckpt, dtype)


class Recipe:
    """AdamW as the estimate counts it, written as a per-parameter loop
    over the trainable parameters: fp32 moments, and fp32 master weights
    for 16-bit ones; its temporaries are an fp32 copy of one 16-bit
    gradient and the denominator, each the size of that parameter.  LoRA's
    adapters are fp32: no master copy."""

    def __init__(self, params):
        self.params = [p for p in params if p.requires_grad]
        self.sixteen = any(p.dtype != torch.float32 for p in self.params)
        self.master = [p.detach().float().clone() if self.sixteen else
                       p for p in self.params]
        self.m = [torch.zeros_like(x, dtype=torch.float32)
                  for x in self.master]
        self.v = [torch.zeros_like(x, dtype=torch.float32)
                  for x in self.master]

    @torch.no_grad()
    def step(self, lr=1e-4, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
        for p, w, m, v in zip(self.params, self.master, self.m, self.v):
            g = p.grad.float() if self.sixteen else p.grad
            w.mul_(1 - lr * wd)
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = v.sqrt()
            denom.add_(eps)
            w.addcdiv_(m, denom, value=-lr)
            del g, denom
            if self.sixteen:
                p.copy_(w)


def step_peak(model, ids, labels):
    """Peak bytes of a whole step: weights, optimizer state and the batch,
    allocated before, are counted by size; the rest is the profiler's."""
    opt = Recipe(model.parameters())
    held = sum(p.numel() * p.element_size() for p in model.parameters())
    if opt.sixteen:
        held += sum(x.numel() * 4 for x in opt.master)
    held += sum(x.numel() * 4 for x in opt.m + opt.v)
    held += 2 * ids.numel() * 8
    for p in model.parameters():
        p.grad = None

    def step():
        loss = model(ids, labels)
        loss.backward()
        del loss
        opt.step()

    return held + peak_of(step)


def check_fused_grad():
    """The fused stand-in must give eager attention's gradients."""
    # 160 query rows: three blocks, the last one short.
    q = torch.randn(2, 160, 4, 8, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, 160, 2, 8, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, 160, 2, 8, dtype=torch.float64, requires_grad=True)
    for cap in (None, 5.0):
        check_fused_case(q, k, v, cap)


def check_fused_case(q, k, v, cap):
    o = blocks.FusedAttention.apply(q, k, v, 0.3, cap)
    g = torch.randn_like(o)
    got = torch.autograd.grad(o, (q, k, v), g)
    e = blocks.eager_core(q.transpose(1, 2),
                          blocks.repeat_kv(k.transpose(1, 2), 2),
                          blocks.repeat_kv(v.transpose(1, 2), 2), 0.3,
                          cap).transpose(1, 2)
    want = torch.autograd.grad(e, (q, k, v), g)
    # Eager attention's softmax runs in fp32, as the reference's does.
    ok = all(torch.allclose(a, b, rtol=1e-4, atol=1e-5)
             for a, b in zip((o,) + got, (e,) + want))
    if not ok:
        sys.exit("fused attention: gradients differ from eager attention")


# --- memfloor -------------------------------------------------------------

def estimate(c, workload):
    """memfloor's estimate of a job of the model config c and workload
    (spec.workload, a dict) with the estimator pytorch, from the command
    line (-o json); exits when it fails."""
    job = {
        "apiVersion": "memfloor.dev/v1", "kind": "Job",
        "metadata": {"name": "torch-" + c["model_type"]},
        "spec": {"model": {"config": c}, "workload": workload},
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(job, f)
        f.flush()
        r = subprocess.run([CLI, "estimate", f.name, "-o", "json",
                            "--estimator", "pytorch"],
                           capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("memfloor estimate failed (%d): %s%s" %
                 (r.returncode, r.stdout, r.stderr))
    est = json.loads(r.stdout)
    if est.get("estimator") != "pytorch":
        sys.exit("memfloor did not name the pytorch estimator: " + r.stdout)
    return est


def memfloor(cfg, s, b, precision, attention, ckpt, lora=None):
    workload = {
        "kind": "training", "sequenceLength": s, "microBatch": b,
        "precision": precision, "attention": attention,
        "gradientCheckpointing": ckpt,
    }
    if lora is not None:
        workload.update(method="lora", lora={"rank": RANK, "targets": lora})
    est = estimate(cfg, workload)
    buckets = {x["name"]: x["bytes"] for x in est["buckets"]}
    return buckets, est["perGpuBytes"]


# --- cases ----------------------------------------------------------------

def cfg(model_type, h, a, kv, I, V, d=None, **kw):
    c = {"model_type": model_type, "hidden_size": h, "num_hidden_layers": 2,
         "num_attention_heads": a, "num_key_value_heads": kv,
         "intermediate_size": I, "vocab_size": V}
    if d is not None:
        c["head_dim"] = d
    c.update(kw)
    return c


def moe(model_type, h, a, kv, I, V, E, k, **kw):
    if model_type == "mixtral":
        return cfg(model_type, h, a, kv, I, V, num_local_experts=E,
                   num_experts_per_tok=k, **kw)
    return cfg(model_type, h, a, kv, I, V, num_experts=E,
               num_experts_per_tok=k, **kw)


# Gemma-2's soft-capping, as its config.json gives it.
CAP = dict(attn_logit_softcapping=50.0, final_logit_softcapping=30.0)

# (config, s, b).  FIT: the shapes the coefficients were worked out on.
FIT = [
    (cfg("llama", 128, 4, 2, 352, 512), 64, 2),
    (cfg("llama", 96, 4, 1, 256, 384, d=32), 96, 1),
    (cfg("mistral", 64, 4, 4, 192, 256), 128, 1),
    (cfg("qwen2", 128, 8, 2, 320, 512), 64, 2),
    (cfg("phi3", 96, 6, 6, 256, 384), 64, 2),
    (cfg("phi3", 128, 4, 2, 384, 512), 64, 1),
    (cfg("gemma2", 64, 2, 1, 256, 512, d=64, **CAP), 64, 2),
    (moe("mixtral", 64, 4, 2, 128, 256, 4, 2), 64, 2),
    (moe("qwen2_moe", 64, 4, 4, 256, 256, 6, 3, moe_intermediate_size=96,
         shared_expert_intermediate_size=192), 64, 2),
]

# CHECK: shapes no coefficient was derived on.
CHECK = [
    (cfg("llama", 160, 5, 5, 448, 640), 48, 3),
    (cfg("mistral", 192, 6, 2, 512, 1000, d=40), 80, 1),
    (cfg("qwen2", 96, 3, 1, 288, 700), 112, 1),
    (cfg("phi3", 80, 5, 5, 224, 300), 96, 1),
    (cfg("gemma2", 96, 4, 2, 384, 400, d=48, **CAP), 48, 2),
    (moe("mixtral", 96, 6, 3, 160, 300, 5, 2), 48, 2),
    (moe("qwen2_moe", 80, 4, 2, 192, 320, 8, 2, moe_intermediate_size=64,
         shared_expert_intermediate_size=160, norm_topk_prob=True), 80, 1),
    # Long sequences, few heads' width and a small vocabulary: eager
    # attention's backward, not the loss's, is the peak of the step.
    (cfg("llama", 64, 8, 2, 192, 128), 512, 1),
]

# Cases whose whole step is run for its peak: (index into FIT or CHECK).
PEAK = {("FIT", 0), ("FIT", 2), ("FIT", 7), ("CHECK", 1), ("CHECK", 4),
        ("CHECK", 7)}

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}


def compare(errors, tag, name, bucket, want, got):
    err = (got - want) / want
    errors.append((tag, name, bucket, want, got, err))
    if abs(err) > TOLERANCE:
        print("FAIL %s %s: measured %d, memfloor %d (%+.2f%%)" %
              (name, bucket, want, got, 100 * err))


def check_peak(errors, tag, name, model, ids, labels, per_gpu):
    peak = step_peak(model, ids, labels)
    errors.append((tag, name, "peak", peak, per_gpu, (per_gpu - peak) / peak))
    if peak > per_gpu:
        print("FAIL %s peak %d above perGpuBytes %d" % (name, peak, per_gpu))


def run_full(tag, i, c, s, b, rows, errors, ids, labels):
    sh = blocks.Shape(c)
    for prec, dtype in DTYPES.items():
        for attn, fused in (("flash", True), ("eager", False)):
            s0 = saved_bytes(build(c, 0, fused, False, dtype), ids, labels)
            s1 = saved_bytes(build(c, 1, fused, False, dtype), ids, labels)
            m2 = build(c, 2, fused, False, dtype)
            s2 = saved_bytes(m2, ids, labels)
            layer = s2 - s1
            rows.append((tag, c["model_type"], "full", attn, prec, sh,
                         layer / (s * b) / sh.h, s, b))
            for ckpt in (False, True):
                got, per_gpu = memfloor(c, s, b, prec, attn, ckpt)
                if ckpt:
                    mc = build(c, 2, fused, True, dtype)
                    acts = saved_bytes(mc, ids, labels) - s0 + layer
                else:
                    mc = m2
                    acts = s2 - s0
                name = "%s[%d] %s %s %s%s" % (
                    tag, i, c["model_type"], prec, attn,
                    " ckpt" if ckpt else "")
                compare(errors, tag, name, "activations", acts,
                        got["activations"])
                compare(errors, tag, name, "logits", s0, got["logits"])
                if (tag, i) in PEAK:
                    check_peak(errors, tag, name, mc, ids, labels, per_gpu)


def lora_model(c, layers, fused, ckpt, dtype, targets):
    return blocks.add_lora(build(c, layers, fused, ckpt, dtype), RANK,
                           targets)


def run_lora(tag, i, c, s, b, rows, errors, ids, labels):
    """A frozen model with no layers keeps nothing at all, so LoRA's two
    buckets are checked together, and a layer on its own as the
    difference of two and one layers, against memfloor's for two and one
    layers."""
    sh = blocks.Shape(c)
    targets = ("all-linear", "attention")[i % 2]
    for prec, dtype in DTYPES.items():
        for attn, fused in (("flash", True), ("eager", False)):
            s1 = saved_bytes(lora_model(c, 1, fused, False, dtype, targets),
                             ids, labels)
            m2 = lora_model(c, 2, fused, False, dtype, targets)
            s2 = saved_bytes(m2, ids, labels)
            layer = s2 - s1
            rows.append((tag, c["model_type"], "lora " + targets, attn,
                         prec, sh, layer / (s * b) / sh.h, s, b))
            one, _ = memfloor(dict(c, num_hidden_layers=1), s, b, prec, attn,
                              False, targets)
            for ckpt in (False, True):
                got, per_gpu = memfloor(c, s, b, prec, attn, ckpt, targets)
                if ckpt:
                    mc = lora_model(c, 2, fused, True, dtype, targets)
                    kept = saved_bytes(mc, ids, labels) + layer
                else:
                    mc, kept = m2, s2
                name = "%s[%d] %s %s %s lora %s%s" % (
                    tag, i, c["model_type"], prec, attn, targets,
                    " ckpt" if ckpt else "")
                compare(errors, tag, name, "lora activations+logits", kept,
                        got["activations"] + got["logits"])
                if not ckpt:
                    compare(errors, tag, name, "lora layer", layer,
                            got["activations"] - one["activations"])
                if (tag, i) in PEAK:
                    check_peak(errors, tag, name, mc, ids, labels, per_gpu)


def run_case(tag, i, c, s, b, rows, errors):
    ids, labels = inputs(blocks.Shape(c), s, b)
    run_full(tag, i, c, s, b, rows, errors, ids, labels)
    run_lora(tag, i, c, s, b, rows, errors, ids, labels)


def main():
    """measure.py [SET:INDEX ...]: every case, or only those named
    (FIT:0 CHECK:7)."""
    only = set(sys.argv[1:])
    check_fused_grad()
    rows, errors = [], []
    for tag, cases in (("FIT", FIT), ("CHECK", CHECK)):
        for i, (c, s, b) in enumerate(cases):
            if not only or "%s:%d" % (tag, i) in only:
                run_case(tag, i, c, s, b, rows, errors)
    print("bytes saved per layer per token, in units of h (measured):")
    print("%-5s %-9s %-16s %-5s %-4s %5s %3s %3s %3s %4s %3s %3s %4s %3s "
          "%8s" % ("set", "arch", "method", "attn", "prec", "h", "a", "kv",
                   "d", "I", "E", "k", "s", "b", "bytes/h"))
    for tag, t, method, attn, prec, sh, v, s, b in rows:
        print("%-5s %-9s %-16s %-5s %-4s %5d %3d %3d %3d %4d %3d %3d %4d %3d "
              "%8.2f" % (tag, t, method, attn, prec, sh.h, sh.a, sh.kv, sh.d,
                         sh.I_moe if sh.E else sh.I, sh.E,
                         sh.k if sh.E else 0, s, b, v))
    failed = 0
    for tag in ("FIT", "CHECK"):
        for bucket in ("activations", "logits", "lora activations+logits",
                       "lora layer", "peak"):
            e = [x[5] for x in errors if x[0] == tag and x[2] == bucket]
            if not e:
                continue
            if bucket == "peak":
                print("%-5s peak: estimate above the measured peak by "
                      "%+.1f%% to %+.1f%% (%d cases)" %
                      (tag, 100 * min(e), 100 * max(e), len(e)))
                failed += sum(1 for x in e if x < 0)
            else:
                worst = max(e, key=abs)
                print("%-5s %-23s: worst error %+.3f%%, mean |error| "
                      "%.3f%% (%d cases)" %
                      (tag, bucket, 100 * worst,
                       100 * sum(abs(x) for x in e) / len(e), len(e)))
                failed += sum(1 for x in e if abs(x) > TOLERANCE)
    print("torch harness: %d checks, %d failed" % (len(errors), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
