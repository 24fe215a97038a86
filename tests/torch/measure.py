#!/usr/bin/env python3
"""Measure what PyTorch 2 keeps for the frameworks' own modules of every
architecture memfloor knows, and hold memfloor's `pytorch` estimator to it.

The models are transformers' own (tests/torch/hf.py: built from a config
dict with random weights, LoRA by PEFT), small, on the CPU.  For each case
(architecture x shapes x precision x sdpa/eager attention x checkpointing
x full and LoRA) it measures:

- saved(L): the bytes saved for backward by one training forward (the
  model's own loss included), as distinct storages packed by
  saved_tensors_hooks, leaving out the parameters.  saved(0), the model
  run over none of its layers, is what lives outside the layers
  (memfloor's `logits` bucket); saved(L) - saved(0) is the layers' share
  (`activations`); saved(2) - saved(1) is one layer.
- with checkpointing the hooks see only part of what a checkpoint keeps:
  torch 2.13 saves a layer's positional inputs, the hidden states, as
  saved tensors, which the hooks pack (utils/checkpoint.py,
  _CheckpointFrame.save_inputs), but its keyword inputs (the eager
  attention's mask, the positions, RoPE's cos and sin) are held in its
  closure, which they never see: the tensors the forward created that are
  still alive after it are counted too (see saved_bytes); the activations
  are then those, less the outside part, plus one layer as measured
  without checkpointing, which backward recomputes and keeps while it
  runs through that layer.  The CPU generator's state that a checkpoint
  keeps is host memory on a GPU too, and is left out.
- for some cases the peak of a whole step (forward, loss, backward, AdamW
  step) with the recipe the estimate assumes: 16-bit weights and
  gradients, fp32 master weights and moments (fp32: weights, gradients and
  moments in fp32, no master copy), the optimizer written as a loop over
  parameters; the peak is the profiler's, from every allocation and free
  of the allocator in order (tensor storage only: what a GPU would hold).

It then asks memfloor (the command line, -o json) for the same job with
the same config inline, and fails when activations or logits are off by
more than 2%, or the peak is above memfloor's perGpuBytes.  LoRA (rank 4,
all-linear on even cases, attention on odd ones; the dense architectures:
PEFT's all-linear does not reach transformers' fused 3-D experts): a
frozen model without layers keeps nothing, so activations and logits are
checked together, and one layer as the difference of two layers and one;
the adapters bucket is held to PEFT's trainable parameters (Phi-3's fused
qkv_proj and gate_up_proj one linear each).  Cases in FIT are those the coefficients were derived on; CHECK holds
shapes they never saw.  Prints the per-layer table (bytes per layer per
token, in units of h) and every error; exits 1 on a failure.
"""
import gc
import json
import os
import subprocess
import sys
import tempfile
import warnings
import weakref

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf  # noqa: E402  (quiets transformers before torch is used)

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

TOP = os.environ.get("MF_TOP", os.getcwd())
CLI = os.environ.get("MEMFLOOR", os.path.join(TOP, "build/memfloor"))
TOLERANCE = 0.02
RANK = 4

torch.manual_seed(0)
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
RNG_BYTES = torch.get_rng_state().numel()


# --- measuring ------------------------------------------------------------

def parts(t):
    """The plain tensors holding t's bytes: a tensor subclass's inner
    tensors (a torchao NF4Tensor's codes, factors and code table), any
    other tensor itself."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass
    if not is_traceable_wrapper_subclass(t):
        return [t]
    names, _ = t.__tensor_flatten__()
    return [x for n in names for x in parts(getattr(t, n))]


def storage_key(t):
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()


class Box:
    """What a pack hook hands autograd; alive while the graph holds it."""
    __slots__ = ("t", "__weakref__")

    def __init__(self, t):
        self.t = t


def new_tensors():
    """The tensors made since the last freeze() (gc.freeze() moves what is
    alive to a generation gc.get_objects() does not list), but the CPU
    generator states checkpoints keep (host memory on a GPU as well)."""
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [o for o in gc.get_objects() if isinstance(o, torch.Tensor)
                and not (o.dtype == torch.uint8 and o.numel() == RNG_BYTES)]


def saved_bytes(model, ids, labels, held=False):
    """The bytes of saved_storages."""
    return sum(n for n, _ in saved_storages(model, ids, labels,
                                            held).values())


def saved_storages(model, ids, labels, held=False):
    """Distinct storages that one forward leaves held for backward,
    parameters out, as {address: (bytes, a tensor on it)}: what the graph
    holds (every tensor packed by
    saved_tensors_hooks whose box is still alive when the forward ends, so
    that a part of the graph dropped early does not count and a freed
    storage's reused address cannot hide a live one) and, with
    checkpointing (held), what the checkpoints hold: their keyword inputs,
    which the hooks never see, found as the tensors the forward made that
    are still alive after it."""
    if held:
        gc.collect()
        gc.freeze()
    skip = {x.untyped_storage().data_ptr() for p in model.parameters()
            for x in parts(p)}
    boxes = []

    def pack(t):
        b = Box(t)
        boxes.append(weakref.ref(b))
        return b

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda b: b.t):
        loss = model(ids, labels)
    kept = [r().t for r in boxes if r() is not None]
    if held:
        kept += [t for t in new_tensors() if t is not loss]
    seen = {}
    for t in (x for k in kept for x in parts(k)):
        ptr, n = storage_key(t)
        if ptr not in skip and n >= seen.get(ptr, (0, None))[0]:
            seen[ptr] = (n, t)
    del loss, kept
    return seen


def autocast_copies(model, storages):
    """The bytes of the 16-bit copies of 2-D weights autocast made and
    the graph keeps, among storages (saved_storages): a saved tensor of
    16 bits with a weight's shape or its transpose (the cases' token
    counts are none of the weights' sizes, so no activation matches)."""
    shapes = set()
    for p in model.parameters():
        if p.dim() == 2:
            shapes.add(tuple(p.shape))
            shapes.add(tuple(p.shape)[::-1])
    return sum(n for n, t in storages.values()
               if t.dtype == torch.bfloat16 and tuple(t.shape) in shapes)


def peak_of(fn):
    """Run fn under the profiler and return the peak of the bytes the
    allocator handed out and had not taken back, counted from zero at the
    start: each allocation and free is one memory event, in order."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as p:
        fn()
    events = [e for e in p.profiler.kineto_results.events()
              if e.name() == "[memory]"]
    live = peak = 0
    for e in sorted(events, key=lambda e: e.start_ns()):
        live += e.nbytes()
        peak = max(peak, live)
    return peak


def inputs(c, s, b):
    ids = torch.randint(0, c["vocab_size"], (b, s))
    labels = torch.randint(0, c["vocab_size"], (b, s))
    return ids, labels


class Recipe:
    """AdamW as the estimate counts it, written as a per-parameter loop
    over the trainable parameters: fp32 moments, and fp32 master weights
    for 16-bit ones; its temporaries are an fp32 copy of one 16-bit
    gradient and the denominator, each the size of that parameter.  LoRA's
    adapters are fp32: no master copy.  view(t) is the tensor a rank
    steps of a parameter or its gradient (dist.py: a DTensor's local
    shard); the tensor itself by default."""

    def __init__(self, params, view=lambda t: t):
        self.view = view
        self.params = [p for p in params if p.requires_grad]
        self.sixteen = any(p.dtype != torch.float32 for p in self.params)
        self.master = [view(p).detach().float().clone() if self.sixteen
                       else view(p) for p in self.params]
        self.m = [torch.zeros_like(x, dtype=torch.float32)
                  for x in self.master]
        self.v = [torch.zeros_like(x, dtype=torch.float32)
                  for x in self.master]

    def held(self):
        """Bytes of the state it keeps besides the model's weights."""
        return self.state_bytes()

    def state_bytes(self):
        n = sum(x.numel() * 4 for x in self.m + self.v)
        if self.sixteen:
            n += sum(x.numel() * 4 for x in self.master)
        return n

    @torch.no_grad()
    def step(self, lr=1e-4, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
        for p, w, m, v in zip(self.params, self.master, self.m, self.v):
            g = self.view(p.grad)
            g = g.float() if self.sixteen else g
            w.mul_(1 - lr * wd)
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = v.sqrt()
            denom.add_(eps)
            w.addcdiv_(m, denom, value=-lr)
            del g, denom
            if self.sixteen:
                self.view(p).copy_(w)


class TrueRecipe:
    """AdamW as torchtune and LitGPT's bf16-true run it: torch.optim.AdamW
    on the bf16 weights (its single-tensor step, one parameter at a time),
    whose moments take the weights' dtype; no master copy.  Its state is
    made before the step is measured, as after the first step of a run."""

    def __init__(self, params):
        self.params = [p for p in params if p.requires_grad]
        self.opt = torch.optim.AdamW(self.params, lr=1e-4, foreach=False)
        for p in self.params:
            st = self.opt.state[p]
            st["step"] = torch.tensor(0.0)
            st["exp_avg"] = torch.zeros_like(p)
            st["exp_avg_sq"] = torch.zeros_like(p)

    def held(self):
        return sum(t.numel() * t.element_size()
                   for st in self.opt.state.values() for t in st.values())

    def step(self):
        self.opt.step()


def step_peak(step, ids, labels, recipe=Recipe):
    """Peak bytes of a whole step: weights, optimizer state and the batch,
    allocated before, are counted by size; the rest is the profiler's."""
    params = list(step.parameters())
    opt = recipe(params)
    held = sum(x.numel() * x.element_size() for p in params
               for x in parts(p))
    held += opt.held() + 2 * ids.numel() * 8
    for p in params:
        p.grad = None

    def one():
        loss = step(ids, labels)
        loss.backward()
        del loss
        opt.step()

    return held + peak_of(one)


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


def memfloor(c, s, b, precision, attention, ckpt, lora=None, dtype="fp32"):
    workload = {
        "kind": "training", "sequenceLength": s, "microBatch": b,
        "precision": precision, "attention": attention,
        "gradientCheckpointing": ckpt,
    }
    if lora is not None:
        workload.update(method="lora", lora={"rank": RANK, "targets": lora,
                                             "dtype": dtype})
    est = estimate(c, workload)
    buckets = {x["name"]: x["bytes"] for x in est["buckets"]}
    return buckets, est["perGpuBytes"]


class Subject:
    """One model of a case in one precision (LoRA or not), run over 0, 1 or
    2 of its layers (the config's num_hidden_layers, which transformers'
    forward reads) with an attention and checkpointing set in place."""

    def __init__(self, c, precision, lora=None, layers=2, lora_dtype="fp32"):
        self.c = c
        self.model = hf.build(c, layers, precision, "sdpa", lora=lora,
                              rank=RANK, lora_dtype=lora_dtype)
        self.base = self.model.get_base_model() if lora else self.model
        self.step = hf.Step(self.model, precision)

    def set(self, layers, attention, ckpt=False):
        base = self.base
        base.config.num_hidden_layers = layers
        base.set_attn_implementation(
            hf.implementation(self.c, attention) or "eager")
        base.activation_checkpointing_disable()
        # Enabling checkpointing makes the embeddings' output require a
        # gradient (enable_input_require_grads); disabling it does not
        # undo that, but a run without checkpointing never had it.
        if getattr(base, "_require_grads_hook", None) is not None:
            base.disable_input_require_grads()
        if ckpt == "op":
            hf.selective(base)
        elif ckpt:
            hf.every_nth(base, 1 if ckpt is True else int(ckpt))
        return self.step


# --- cases ----------------------------------------------------------------
cfg = hf.config


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
    # The same with Phi-3's fused gate_up (2I): with LoRA all-linear and
    # sdpa, the adapter's forward on it is the peak of the step.
    (cfg("phi3", 64, 8, 8, 192, 128), 512, 1),
]


# Cases whose whole step is run for its peak: (set, index into FIT or CHECK).
# Phi-3's LoRA all-linear (FIT[4], CHECK[8]) peaks at the adapter's forward
# on its fused gate_up, in the last layer's recomputation under
# checkpointing (est_pytorch.c, lora_forward).
PEAK = {("FIT", 0), ("FIT", 2), ("FIT", 4), ("FIT", 7), ("CHECK", 1),
        ("CHECK", 4), ("CHECK", 7), ("CHECK", 8)}

# The runs of a PEAK case whose step is run: (method, precision, attention,
# checkpointing).
PEAK_RUNS = {("full", "bf16", "sdpa", False), ("full", "bf16", "eager", False),
             ("full", "fp32", "sdpa", True), ("lora", "bf16", "eager", False),
             ("lora", "bf16", "sdpa", True)}

# The architectures whose every linear PEFT's all-linear reaches.
DENSE = {"llama", "mistral", "qwen2", "phi3", "gemma2"}


VERBOSE = "-v" in sys.argv


def compare(errors, tag, name, bucket, want, got):
    err = (got - want) / want
    errors.append((tag, name, bucket, want, got, err))
    if VERBOSE:
        print("%-44s %-24s measured %10d memfloor %10d %+7.3f%%" %
              (name, bucket, want, got, 100 * err))
    if abs(err) > TOLERANCE:
        print("FAIL %s %s: measured %d, memfloor %d (%+.2f%%)" %
              (name, bucket, want, got, 100 * err))


def check_rows(tag, rows):
    """(failed, checks) of rows (what, measured, estimated, tolerance), each
    printed after tag: an estimate within the tolerance of the measured, or
    with None at or above it."""
    failed = 0
    for what, want, have, tol in rows:
        err = (have - want) / want
        bad = have < want if tol is None else abs(err) > tol
        failed += bad
        print("%s%s %-24s %10d %10d %+7.3f%%" % (
            "FAIL " if bad else "", tag, what, want, have, 100 * err))
    return failed, len(rows)


def check_peak(errors, tag, name, step, ids, labels, per_gpu, recipe=Recipe):
    peak = step_peak(step, ids, labels, recipe)
    errors.append((tag, name, "peak", peak, per_gpu, (per_gpu - peak) / peak))
    if VERBOSE:
        print("%-44s %-24s measured %10d memfloor %10d %+7.3f%%" %
              (name, "step peak <= perGpuBytes", peak, per_gpu,
               100 * (per_gpu - peak) / peak))
    if peak > per_gpu:
        print("FAIL %s peak %d above perGpuBytes %d" % (name, peak, per_gpu))


def run_full(tag, i, c, s, b, rows, errors, ids, labels):
    for prec in ("bf16", "fp32"):
        subj = Subject(c, prec)
        for attn in ("sdpa", "eager"):
            s0 = saved_bytes(subj.set(0, attn), ids, labels)
            s1 = saved_bytes(subj.set(1, attn), ids, labels)
            s2 = saved_bytes(subj.set(2, attn), ids, labels)
            layer = s2 - s1
            rows.append((tag, c, "full", attn, prec, layer / (s * b), s, b))
            for ckpt in (False, True):
                got, per_gpu = memfloor(c, s, b, prec, attn, ckpt)
                if ckpt:
                    acts = saved_bytes(subj.set(2, attn, True), ids,
                                       labels, True) - s0 + layer
                else:
                    acts = s2 - s0
                name = "%s[%d] %s %s %s%s" % (
                    tag, i, c["model_type"], prec, attn,
                    " ckpt" if ckpt else "")
                compare(errors, tag, name, "activations", acts,
                        got["activations"])
                compare(errors, tag, name, "logits", s0, got["logits"])
                if (tag, i) in PEAK and ("full", prec, attn, ckpt) in PEAK_RUNS:
                    check_peak(errors, tag, name, subj.set(2, attn, ckpt),
                               ids, labels, per_gpu)


def adapter_bytes(model):
    """What AdamW's LoRA training holds of its adapters: PEFT's trainable
    parameters (Phi-3's fused qkv_proj and gate_up_proj one linear each),
    with a gradient and AdamW's two moments each in their dtype (fp32,
    as Recipe keeps them)."""
    return 4 * sum(p.numel() * p.element_size() for p in model.parameters()
                   if p.requires_grad)


# LoRA's targets as a list of module names (design 22), PEFT's
# target_modules: [q_proj, v_proj] (PEFT's and torchtune's default for
# Llama) on even cases, a list without q, k or v on odd ones (the first
# layer then keeps nothing before o_proj's adapter); Phi-3's fused names.
LISTS = {
    "phi3": (["qkv_proj", "down_proj"], ["o_proj", "gate_up_proj"]),
    None: (["q_proj", "v_proj"], ["o_proj", "up_proj", "down_proj"]),
}


QKV = {"q_proj", "k_proj", "v_proj", "qkv_proj"}


def lora_targets(c, i):
    """The targets a LoRA case runs: all-linear or attention, and a list."""
    lists = LISTS.get(c["model_type"], LISTS[None])
    return ("all-linear", "attention")[i % 2], lists[i % 2]


def run_lora(tag, i, c, s, b, rows, errors, ids, labels):
    for targets in lora_targets(c, i):
        run_lora_targets(tag, i, c, s, b, rows, errors, ids, labels, targets)
    # lora.dtype bf16 (design 22): bf16 adapters on the bf16 model, as
    # torchtune keeps them, on both kinds of targets.
    for targets in lora_targets(c, i):
        run_lora_targets(tag, i, c, s, b, rows, errors, ids, labels, targets,
                         "bf16")


def run_lora_targets(tag, i, c, s, b, rows, errors, ids, labels, targets,
                     dtype="fp32"):
    """A frozen model with no layers keeps nothing at all, so LoRA's two
    buckets are checked together, and a layer on its own as the
    difference of two and one layers, against memfloor's for two and one
    layers.  A list without q, k or v: the first layer keeps none of
    attention, and RoPE's cos and sin are left to the second, so a layer
    on its own is the difference of three layers and two."""
    label = "+".join(targets) if isinstance(targets, list) else targets
    if dtype != "fp32":
        label += " " + dtype + " adapters"
    late = isinstance(targets, list) and not set(targets) & QKV
    for prec in ("bf16", "fp32") if dtype == "fp32" else (dtype,):
        subj = Subject(c, prec, targets, 3 if late else 2, dtype)
        for attn in ("sdpa", "eager"):
            s1 = saved_bytes(subj.set(1, attn), ids, labels)
            s2 = saved_bytes(subj.set(2, attn), ids, labels)
            layer = s2 - s1
            if late:
                layer = saved_bytes(subj.set(3, attn), ids, labels) - s2
            rows.append((tag, c, "lora " + label, attn, prec,
                         layer / (s * b), s, b))
            n = 2 if late else 1
            one, _ = memfloor(dict(c, num_hidden_layers=n), s, b, prec, attn,
                              False, targets, dtype)
            two, _ = memfloor(dict(c, num_hidden_layers=n + 1), s, b, prec,
                              attn, False, targets, dtype)
            for ckpt in (False, True):
                got, per_gpu = memfloor(c, s, b, prec, attn, ckpt, targets,
                                        dtype)
                if ckpt:
                    kept = saved_bytes(subj.set(2, attn, True), ids,
                                       labels, True) + layer
                else:
                    kept = s2
                name = "%s[%d] %s %s %s lora %s%s" % (
                    tag, i, c["model_type"], prec, attn, label,
                    " ckpt" if ckpt else "")
                compare(errors, tag, name, "lora activations+logits", kept,
                        got["activations"] + got["logits"])
                if not ckpt:
                    compare(errors, tag, name, "lora layer", layer,
                            two["activations"] - one["activations"])
                if not ckpt and attn == "sdpa":
                    compare(errors, tag, name, "lora adapters",
                            adapter_bytes(subj.model), two["adapters"])
                # bf16 adapters are stepped as torchtune steps them,
                # torch.optim.AdamW with bf16 moments (TrueRecipe).
                if (tag, i) in PEAK and \
                        ("lora", prec, attn, ckpt) in PEAK_RUNS:
                    # The step of two layers: every adapter trained.
                    two_layers = Subject(c, prec, targets, 2, dtype) \
                        if late else subj
                    check_peak(errors, tag, name,
                               two_layers.set(2, attn, ckpt), ids, labels,
                               per_gpu,
                               Recipe if dtype == "fp32" else TrueRecipe)


# Recipe cases (design 19): their token counts are none of their weights'
# sizes, so that autocast's weight copies are told from activations.
RECIPE = [
    (cfg("llama", 96, 4, 2, 256, 320), 40, 3),
    (cfg("phi3", 96, 6, 6, 256, 384), 40, 3),
    (cfg("qwen2", 96, 3, 1, 288, 352), 56, 2),
]


def run_mixed(i, c, s, b, errors, ids, labels):
    """bf16-mixed: an fp32 model under torch.autocast(bfloat16), as HF
    Trainer's bf16=True.  The 16-bit copies of the weights autocast keeps
    are the weights bucket's (P x 4 + Pc x 2), the rest activations and
    logits."""
    subj = Subject(c, "bf16-mixed")
    for attn in ("sdpa", "eager"):
        kept = []
        for layers in (0, 1, 2):
            st = saved_storages(subj.set(layers, attn), ids, labels)
            kept.append((sum(n for n, _ in st.values()),
                         autocast_copies(subj.model, st)))
        s0, s1, s2 = (n - copies for n, copies in kept)
        layer = s2 - s1
        for ckpt in (False, True):
            got, per_gpu = memfloor(c, s, b, "bf16-mixed", attn, ckpt)
            if ckpt:
                st = saved_storages(subj.set(2, attn, True), ids, labels,
                                    True)
                acts = sum(n for n, _ in st.values()) - \
                    autocast_copies(subj.model, st) - s0 + layer
            else:
                acts = s2 - s0
            name = "RECIPE[%d] %s bf16-mixed %s%s" % (
                i, c["model_type"], attn, " ckpt" if ckpt else "")
            compare(errors, "RECIPE", name, "activations", acts,
                    got["activations"])
            compare(errors, "RECIPE", name, "logits", s0, got["logits"])
            params = sum(p.numel() for p in subj.model.parameters())
            compare(errors, "RECIPE", name, "autocast copies", kept[2][1],
                    got["weights"] - 4 * params)
            if (attn, ckpt) in (("sdpa", False), ("eager", True)):
                check_peak(errors, "RECIPE", name, subj.set(2, attn, ckpt),
                           ids, labels, per_gpu)


def run_true(i, c, s, b, errors, ids, labels):
    """bf16-true: the bf16 model, as bf16, with torch.optim.AdamW's bf16
    moments and no master copy; the optimizer's state as the estimate's
    optimizer bucket."""
    subj = Subject(c, "bf16-true")
    for attn in ("sdpa", "eager"):
        s0 = saved_bytes(subj.set(0, attn), ids, labels)
        s2 = saved_bytes(subj.set(2, attn), ids, labels)
        got, per_gpu = memfloor(c, s, b, "bf16-true", attn, False)
        name = "RECIPE[%d] %s bf16-true %s" % (i, c["model_type"], attn)
        compare(errors, "RECIPE", name, "activations", s2 - s0,
                got["activations"])
        compare(errors, "RECIPE", name, "logits", s0, got["logits"])
        opt = TrueRecipe(subj.model.parameters())
        compare(errors, "RECIPE", name, "optimizer", opt.held(),
                got["optimizer"])
        del opt
        peak = step_peak(subj.set(2, attn), ids, labels, TrueRecipe)
        errors.append(("RECIPE", name, "peak", peak, per_gpu,
                       (per_gpu - peak) / peak))
        if VERBOSE:
            print("%-44s %-24s measured %10d memfloor %10d %+7.3f%%" %
                  (name, "step peak <= perGpuBytes", peak, per_gpu,
                   100 * (per_gpu - peak) / peak))
        if peak > per_gpu:
            print("FAIL %s peak %d above perGpuBytes %d" %
                  (name, peak, per_gpu))


def run_every(i, c, s, b, errors, ids, labels):
    """gradientCheckpointing N = 2: the second of the two layers
    checkpointed whole, as torchtitan and torchtune choose it."""
    subj = Subject(c, "bf16")
    for attn in ("sdpa", "eager"):
        s0 = saved_bytes(subj.set(0, attn), ids, labels)
        s1 = saved_bytes(subj.set(1, attn), ids, labels)
        s2 = saved_bytes(subj.set(2, attn), ids, labels)
        acts = saved_bytes(subj.set(2, attn, 2), ids, labels, True) - s0 + \
            (s2 - s1)
        got, per_gpu = memfloor(c, s, b, "bf16", attn, 2)
        name = "RECIPE[%d] %s bf16 %s ckpt 2" % (i, c["model_type"], attn)
        compare(errors, "RECIPE", name, "activations", acts,
                got["activations"])
        if attn == "eager":
            check_peak(errors, "RECIPE", name, subj.set(2, attn, 2), ids,
                       labels, per_gpu)


def sac_bytes(ctx):
    """The distinct storages a selective checkpoint's forward context keeps
    of its ops' outputs."""
    seen = {}
    for outs in ctx[0].storage.values():
        for out in outs.values():
            for t in out if isinstance(out, (tuple, list)) else (out,):
                # torch.utils.checkpoint keeps each in a _VersionWrapper.
                t = getattr(t, "val", t)
                if isinstance(t, torch.Tensor):
                    ptr, n = storage_key(t)
                    seen[ptr] = max(seen.get(ptr, 0), n)
    return sum(seen.values())


def run_op(i, c, s, b, errors, ids, labels):
    """gradientCheckpointing op: torchtitan's per-op policy on every layer.
    What the forward leaves (the layers' inputs and kept outputs), plus the
    last layer as backward recomputes it, less the outputs its checkpoint
    hands to that recomputation (its context's storage)."""
    for prec in ("bf16", "fp32"):
        subj = Subject(c, prec)
        for attn in ("sdpa", "eager"):
            s0 = saved_bytes(subj.set(0, attn), ids, labels)
            s1 = saved_bytes(subj.set(1, attn), ids, labels)
            s2 = saved_bytes(subj.set(2, attn), ids, labels)
            hf.CONTEXTS.clear()
            kept = saved_bytes(subj.set(2, attn, "op"), ids, labels, True)
            acts = kept - s0 + (s2 - s1) - sac_bytes(hf.CONTEXTS[-1])
            got, per_gpu = memfloor(c, s, b, prec, attn, "op")
            name = "RECIPE[%d] %s %s %s ckpt op" % (i, c["model_type"], prec,
                                                  attn)
            compare(errors, "RECIPE", name, "activations", acts,
                    got["activations"])
            if prec == "bf16":
                check_peak(errors, "RECIPE", name, subj.set(2, attn, "op"),
                           ids, labels, per_gpu)


def run_recipe(i, c, s, b, errors):
    ids, labels = inputs(c, s, b)
    run_mixed(i, c, s, b, errors, ids, labels)
    run_true(i, c, s, b, errors, ids, labels)
    run_every(i, c, s, b, errors, ids, labels)
    run_op(i, c, s, b, errors, ids, labels)


def run_case(tag, i, c, s, b, rows, errors):
    ids, labels = inputs(c, s, b)
    run_full(tag, i, c, s, b, rows, errors, ids, labels)
    if c["model_type"] in DENSE:
        run_lora(tag, i, c, s, b, rows, errors, ids, labels)


def report(rows, errors):
    print("bytes saved per layer per token, in units of h (measured):")
    print("%-5s %-9s %-16s %-5s %-4s %5s %3s %3s %4s %4s %3s %3s %4s %3s "
          "%8s" % ("set", "arch", "method", "attn", "prec", "h", "a", "kv",
                   "d", "I", "E", "k", "s", "b", "bytes/h"))
    for tag, c, method, attn, prec, v, s, b in rows:
        h = c["hidden_size"]
        E = c.get("num_local_experts", c.get("num_experts", 0))
        print("%-5s %-9s %-16s %-5s %-4s %5d %3d %3d %4d %4d %3d %3d %4d %3d "
              "%8.2f" % (tag, c["model_type"], method, attn, prec, h,
                         c["num_attention_heads"], c["num_key_value_heads"],
                         c.get("head_dim", h // c["num_attention_heads"]),
                         c.get("moe_intermediate_size",
                               c["intermediate_size"]),
                         E, c.get("num_experts_per_tok", 0) if E else 0, s,
                         b, v / h))
    failed = 0
    for tag in ("FIT", "CHECK", "RECIPE"):
        for bucket in ("activations", "logits", "lora activations+logits",
                       "lora layer", "lora adapters", "autocast copies",
                       "optimizer", "peak"):
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
    return failed


def main():
    """measure.py [-v] [SET:INDEX ...]: every case, or only those named
    (FIT:0 CHECK:7 RECIPE:1); -v prints every check."""
    only = set(a for a in sys.argv[1:] if a != "-v")
    rows, errors = [], []
    for tag, cases in (("FIT", FIT), ("CHECK", CHECK)):
        for i, (c, s, b) in enumerate(cases):
            if not only or "%s:%d" % (tag, i) in only:
                run_case(tag, i, c, s, b, rows, errors)
    for i, (c, s, b) in enumerate(RECIPE):
        if not only or "RECIPE:%d" % i in only:
            run_recipe(i, c, s, b, errors)
    return 1 if report(rows, errors) else 0


if __name__ == "__main__":
    sys.exit(main())
