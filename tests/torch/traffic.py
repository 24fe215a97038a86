#!/usr/bin/env python3
"""Memory traffic and kernel launches of a training step, as PyTorch's own
dispatcher sees them: the inputs of memfloor's time model (how many bytes
the non-matmul kernels move, how many kernels a step launches).

The models are transformers' own (tests/torch/hf.py: built from a config
dict with random weights, LoRA by PEFT, checkpointing as HF Trainer calls
it), small, on the CPU.  Every aten op that reaches the dispatcher during
(a) the training forward (the model's own loss included, as HF computes
it), (b) backward, and (c) the recompute of checkpointed layers inside
backward, is recorded by a TorchDispatchMode as one of

- view: an op whose schema returns an alias of an input and mutates
  nothing (view, t, transpose, expand, slice, split, unbind, detach, ...),
  or whose every output shares an input's storage (_unsafe_view): no
  kernel, no traffic;
- alloc: empty, empty_strided, ...: no kernel, no traffic;
- mm: mm, addmm, bmm, baddbmm, _grouped_mm, the SDPA kernels and their
  backwards: a kernel; its operand bytes (inputs + outputs) are counted
  apart;
- kernel: every other op; bytes read are the tensor inputs' bytes (lists
  of tensors included; a broadcast input counts the distinct bytes it
  spans, not its expanded size; an argument an op only writes, as copy_'s
  or fill_'s self or an out=, is not read), bytes written the tensor
  outputs' (an in-place op's mutated arguments).

Each op is also put in a kind: what it is for, from where it was called
(the Python frames of the forward: the RMSNorm module, the activation
module, rotate_half / apply_rotary_pos_emb, the loss functions, the
embedding, PEFT's LoRA layer, the MoE router and experts, the attention
functions) and its own name (mul, add, softmax, dropout, dtype casts).
A backward op takes the kind of the forward call that made its autograd
node (a TorchFunctionMode tags each node it creates with its caller in
node.metadata; the backward's op reads torch._C._current_autograd_node()).
Gradient sums the autograd engine makes itself, for a tensor used twice,
run with no current node: kind `accum`.  Under autocast, the casts of
weights (forward: an input is a parameter's storage; backward: a
ToCopyBackward node whose input is the parameter's AccumulateGrad) are
`wcast`: per step, not per token.

Per layer is the difference of a model with L and L/2 layers; per token
divides by b*s.  Bytes per layer per token are fitted, over Llama shapes
that vary h, I, a, kv, d and s, as a linear form in h, I, a*d, kv*d and d
and a constant (and a*s, s for eager attention's scores and mask), in bytes.

AdamW (torch.optim.AdamW, foreach False and True) is counted on its
second step (the first makes its state) over the trainable parameters.

By default each case (Llama, Mistral, Qwen2, Mixtral, Gemma-2, Phi-3; L=4
layers, s=128, b=2, V=1000; bf16-true and bf16-mixed, sdpa and eager,
with and without full checkpointing, LoRA rank 8 all-linear) is held to
memfloor's answer for the same job (build/memfloor estimate FILE -o json
--estimator pytorch; the config inline, the workload as the case runs:
precision, attention, gradientCheckpointing, method and lora), as
flops.py does for the FLOPs:

- bytes, held to est["work"]["bytes"]: every non-matmul kernel of the
  L-layer step's forward (the model's loss included), backward and
  recomputed forward, less the embedding's (memfloor has no term for
  it; the final norm and what else lies outside the layers stay in, as
  they are part of the step), autocast's weight casts included, plus
  AdamW's second step (foreach, torch's default on CUDA) over the
  trainable parameters.  The cases' bf16 is the model in bf16 and AdamW
  on its bf16 weights: memfloor's bf16-true (its bf16 steps fp32 master
  weights, which no case runs);
- kernels, held to est["work"]["kernels"]: what the layers launch, L
  times a layer's (the difference above), matmuls and SDPA included, the
  embedding's, final norm's, loss's and optimizer's out, as memfloor
  counts them.

float8 (workload.float8, design 22): the same Llama and Mistral with
their decoder linears swapped by torchao 0.15's convert_to_float8_training
(tensorwise and rowwise, bf16-true and bf16-mixed, with and without
checkpointing; the head left an nn.Linear), held the same way.  The
counter also runs inside torchao's Float8TrainingTensor (f8_counted), so
the layout copies and scale products of its matmuls are seen; the
scale's arithmetic on 0-dim device tensors counts as kernels there (a
GPU launches each).  --float8 measures what a layer's 7 float8 linears
add over the same layer unconverted, phase by phase, at F8_SHAPES, and
fits the bytes an element of each cast's operand (admission/time/work.c,
float8_casts).

A case passes within +-10% on bytes and +-15% on kernels for the Llama
block (llama, and mistral and qwen2, the same block in other shapes:
the coefficients were fitted on Llama), +-35% on both for Mixtral,
Gemma-2 and Phi-3: memfloor applies the Llama coefficients to them by
their shapes, and their own terms (the router and experts' dispatch,
Gemma-2's four norms and soft-capping, Phi-3's fused projections) are
not measured separately.  One line a case, measured against memfloor
and the relative difference; the last line says how many passed and
failed, and the exit status is 1 on a failure.

Usage: traffic.py [-v] [--only SUBSTRING] [--measured] [--fit] [--float8]
  -v          each case's measured parts (layers, loss, weight casts,
              AdamW, the rest; trainable parameters against memfloor's);
              with --measured or --fit, every op
  --measured  the measurements only, memfloor not asked: per layer, by
              kind, AdamW per parameter
  --fit       the fit over FIT_SHAPES (Llama), memfloor not asked
  --float8    what each float8 linear adds (ops, bytes an element of its
              casts' operands), memfloor not asked
"""
import argparse
import collections
import contextlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf  # noqa: E402  (quiets transformers before torch is used)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402

torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))

S, B, LAYERS, RANK = 128, 2, 4, 8
# Relative tolerances (bytes, kernels): the Llama block, and the others.
LLAMA_FAMILY = {"llama", "mistral", "qwen2"}
LLAMA_BAND = (0.10, 0.15)
OTHER_BAND = (0.35, 0.35)

MM = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot",
      "linear", "matmul", "_grouped_mm", "_scaled_mm"}
MM_PREFIX = ("_scaled_dot_product", "_flash_attention", "_efficient_attention")
ALLOC = {"empty", "empty_strided", "empty_like", "new_empty",
         "new_empty_strided", "resize_"}
# In-place ops that only write their self.
NOREAD = {"copy_", "fill_", "zero_", "normal_", "uniform_", "bernoulli_",
          "random_", "exponential_", "set_"}
PROFILER = {"_record_function_enter", "_record_function_enter_new",
            "_record_function_exit"}
CASTS = {"_to_copy", "copy_", "to", "_copy_from_and_resize"}
ROTARY_FNS = {"rotate_half", "apply_rotary_pos_emb"}
ATTN_FNS = {"eager_attention_forward", "sdpa_attention_forward", "repeat_kv"}
LOSS_FNS = {"ForCausalLMLoss", "fixed_cross_entropy"}


def tbytes(t):
    """Distinct bytes a tensor spans (its size, unless broadcast)."""
    n = t.numel()
    if n == 0:
        return 0
    span = 1 + sum((sz - 1) * abs(st) for sz, st in zip(t.shape, t.stride()))
    return min(n, span) * t.element_size()


def tensors(x):
    return [t for t in tree_flatten(x)[0] if isinstance(t, torch.Tensor)]


def context(depth=2):
    """What the innermost interesting Python frame says the op is for."""
    f = sys._getframe(depth)
    while f is not None:
        code = f.f_code
        name, fn = code.co_name, code.co_filename
        if name in ROTARY_FNS:
            return "rotary"
        if name in LOSS_FNS:
            return "loss"
        if name in ATTN_FNS:
            return "attn"
        if name == "recompute_fn" and fn.endswith("utils/checkpoint.py"):
            return None
        if fn.endswith("transformers/integrations/moe.py"):
            return "experts"
        if name == "forward":
            qn = code.co_qualname
            if qn.endswith("RotaryEmbedding.forward"):
                return "rotary"
            if "Norm.forward" in qn:
                return "norm"
            if fn.endswith(("transformers/activations.py",
                            "torch/nn/modules/activation.py")):
                return "act"
            if qn == "Embedding.forward":
                return "embedding"
            if "/peft/tuners/lora/" in fn:
                return "lora"
            if qn.endswith("Router.forward") or "SparseMoeBlock" in qn:
                return "router"
            if qn.endswith("Experts.forward"):
                return "experts"
            if qn.endswith("MLP.forward"):
                return "mlp"
        f = f.f_back
    return None


def in_recompute(depth=2):
    f = sys._getframe(depth)
    while f is not None:
        if f.f_code.co_name == "recompute_fn" and \
                f.f_code.co_filename.endswith("utils/checkpoint.py"):
            return True
        f = f.f_back
    return False


def kind_of(ctx, op):
    """The kind of an op called from ctx."""
    if ctx in ("loss", "wcast"):
        return ctx
    if op in CASTS:
        return "cast"
    if ctx in ("norm", "act", "rotary", "embedding", "lora", "router",
               "experts", "accum"):
        return ctx
    base = op.rstrip("_")
    if base in ("mul", "div"):
        k = "mul"
    elif base == "add" or base == "sub":
        k = "add"
    elif "softmax" in op:
        k = "softmax"
    elif "dropout" in op or op.startswith("bernoulli"):
        k = "dropout"
    elif op == "cat":
        k = "cat"
    else:
        k = "other"
    if ctx == "attn" and k in ("mul", "add", "cat", "other"):
        return "attn." + k
    return k


# torchao's float8 tensor subclass, once a float8 case imports it.
F8 = ()


@contextlib.contextmanager
def f8_counted(counter):
    """While an op on a Float8TrainingTensor runs, its __torch_dispatch__
    (torchao/float8/float8_ops.py: preprocess_addmm's layout copies,
    addmm_float8_unwrapped's reciprocals, torch._scaled_mm, rowwise's
    product with the scales' outer product) runs under counter, so that
    the plain tensors' ops inside are counted.  torch._scaled_mm is one op
    (class mm) to the counter: the CPU kernel's dequantization of both
    operands to fp32 runs in C++ below the dispatcher's Python key, and no
    op of it is seen or counted (a GPU's kernel multiplies the fp8
    operands)."""
    cls = F8[0]
    real = cls.__dict__["__torch_dispatch__"]

    def counted(c, func, types, args=(), kwargs=None):
        with counter:
            return real.__func__(c, func, types, args, kwargs)
    cls.__torch_dispatch__ = classmethod(counted)
    try:
        yield
    finally:
        cls.__torch_dispatch__ = real


class Tagger(TorchFunctionMode):
    """Tags every autograd node a torch call creates with the call's
    context (node.metadata["ctx"]); a ToCopyBackward whose input is a
    parameter's AccumulateGrad is "wcast"."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        try:
            outs = tensors(out)
        except Exception:
            return out
        if not outs:
            return out
        ctx = None
        for t in outs:
            g = t.grad_fn if t.requires_grad else None
            if g is None or "ctx" in g.metadata:
                continue
            if ctx is None:
                ctx = context(2) or "-"
            stack = [g]
            while stack:
                n = stack.pop()
                if n is None or type(n).__name__ == "AccumulateGrad":
                    continue
                md = n.metadata
                if "ctx" in md:
                    continue
                c = ctx
                if n.name().startswith("ToCopyBackward") and any(
                        nx is not None and nx.name().endswith("AccumulateGrad")
                        for nx, _ in n.next_functions):
                    c = "wcast"
                md["ctx"] = c
                stack.extend(nx for nx, _ in n.next_functions)
        return out


class Counter(TorchDispatchMode):
    """Records every aten op: (phase, kind, op, class) -> [calls, read,
    written]; phase is fwd, bwd, rec (checkpoint recompute) or opt."""

    def __init__(self, params=()):
        super().__init__()
        self.phase = "fwd"
        self.ops = collections.defaultdict(lambda: [0, 0, 0])
        self.params = {p.untyped_storage().data_ptr() for p in params}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if F8 and any(isinstance(t, F8) for t in tensors((args, kwargs))):
            # An op on torchao's Float8TrainingTensor: no kernel of its
            # own; the ops its __torch_dispatch__ runs on the plain
            # tensors inside are counted (f8_counted).
            with f8_counted(self):
                return func(*args, **kwargs)
        out = func(*args, **kwargs)
        schema = func._schema
        op = func.__name__.split(".")[0]
        phase = self.phase
        if phase == "bwd" and in_recompute(2):
            phase = "rec"
        written_args = set()
        read, written = 0, 0
        named = list(zip(schema.arguments, args)) + \
            [(a, kwargs[a.name]) for a in schema.arguments if a.name in kwargs]
        mutating = False
        for a, v in named:
            ts = tensors(v)
            w = a.alias_info is not None and a.alias_info.is_write
            mutating |= w
            for t in ts:
                if w:
                    written += tbytes(t)
                    written_args.add(id(t))
                    if op not in NOREAD and not a.name.startswith("out"):
                        read += tbytes(t)
                else:
                    read += tbytes(t)
        outs = tensors(out)
        if op in ALLOC:
            cls = "alloc"
        elif op in PROFILER:
            cls = "prof"
        elif op in MM or op.startswith(MM_PREFIX):
            cls = "mm"
        elif not mutating and (
                any(r.alias_info is not None for r in schema.returns) or
                (outs and all(
                    any(o.untyped_storage().data_ptr() ==
                        t.untyped_storage().data_ptr()
                        for t in tensors((args, kwargs)))
                    for o in outs))):
            cls = "view"
        elif all(t.numel() <= 1 for t in tensors((args, kwargs, out))):
            cls = "scalar"
        else:
            cls = "kernel"
        if cls in ("kernel", "mm"):
            written += sum(tbytes(o) for o in outs if id(o) not in written_args
                           and not (mutating and any(
                               o.untyped_storage().data_ptr() ==
                               t.untyped_storage().data_ptr()
                               for a, v in named if a.alias_info is not None
                               and a.alias_info.is_write for t in tensors(v))))
        else:
            read = written = 0
        if phase == "opt":
            ctx = "opt"
        elif phase == "bwd":
            node = torch._C._current_autograd_node()
            ctx = "accum" if node is None else node.metadata.get("ctx", "-")
            if op in ("add", "add_") and ctx != "loss":
                # The engine's sums of a tensor's gradients (no backward
                # formula here adds): a residual, a tensor read twice.
                ctx = "accum"
            if ctx == "wcast" and op not in CASTS:
                ctx = "-"
        else:
            ctx = context(2)
            if op in CASTS and any(t.untyped_storage().data_ptr()
                                   in self.params for t in tensors(args)):
                ctx = "wcast"
        kind = kind_of(ctx, op) if phase != "opt" else "opt"
        rec = self.ops[(phase, kind, op, cls)]
        rec[0] += 1
        rec[1] += read
        rec[2] += written
        return out

    def totals(self):
        """{phase: {"kernels", "mm", "bytes" (non-mm), "mmbytes",
        kinds: {kind: bytes}, "kkernels": {kind: kernels}}}."""
        res = {}
        for (phase, kind, op, cls), (n, r, w) in self.ops.items():
            d = res.setdefault(phase, {"kernels": 0, "mm": 0, "bytes": 0,
                                       "mmbytes": 0, "scalar": 0,
                                       "kinds": {}, "kkernels": {}})
            if cls == "scalar":
                d["scalar"] += n
            if cls == "mm":
                d["kernels"] += n
                d["mm"] += n
                d["mmbytes"] += r + w
            elif cls == "kernel":
                d["kernels"] += n
                d["bytes"] += r + w
                d["kinds"][kind] = d["kinds"].get(kind, 0) + r + w
                d["kkernels"][kind] = d["kkernels"].get(kind, 0) + n
        return res


# --- running --------------------------------------------------------------

cfg = hf.config


CAP = dict(attn_logit_softcapping=50.0, final_logit_softcapping=30.0)
LLAMA = cfg("llama", 256, 8, 4, 688)
MIXTRAL = cfg("mixtral", 256, 8, 4, 344, num_local_experts=4,
              num_experts_per_tok=2)
GEMMA2 = cfg("gemma2", 256, 8, 4, 688, d=32, **CAP)
PHI3 = cfg("phi3", 256, 8, 4, 688)
# Llama's block under other names and shapes: Mistral (head_dim 40, so
# that a x d is not h), Qwen2 (biased q, k and v).
MISTRAL = cfg("mistral", 192, 6, 2, 512, d=40)
QWEN2 = cfg("qwen2", 256, 8, 2, 640)


def to_float8(model, recipe):
    """model's decoder linears swapped by torchao 0.15's
    convert_to_float8_training (Float8LinearConfig.from_recipe_name
    (recipe)), the head left an nn.Linear (torchtitan's filter_fqns =
    ["output"]; transformers' lm_head)."""
    global F8
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    from torchao.float8.float8_training_tensor import Float8TrainingTensor
    F8 = (Float8TrainingTensor,)
    convert_to_float8_training(
        model, config=Float8LinearConfig.from_recipe_name(recipe),
        module_filter_fn=lambda mod, fqn: fqn != "lm_head")


def run(c, layers, s, b, precision, attn, ckpt, lora, optim=False,
        foreach=(False, True), float8=None):
    """Counter totals of one micro-batch's forward and backward (and, with
    optim, {foreach: (totals, trainable params, ops)} of AdamW's second
    step, for each foreach asked); float8: a torchao recipe, or None."""
    model = hf.build(c, layers, precision, attn, ckpt=ckpt,
                     lora="all-linear" if lora else None, rank=RANK)
    if float8:
        to_float8(model, float8)
    base = model.get_base_model() if lora else model
    if lora and getattr(base, "_require_grads_hook", None) is not None:
        base.disable_input_require_grads()
    step = hf.Step(model, precision)
    torch.manual_seed(1)
    ids = torch.randint(0, c["vocab_size"], (b, s))
    labels = torch.randint(0, c["vocab_size"], (b, s))
    params = list(model.parameters())
    cnt = Counter(params)
    # Under autocast a GPU's Float8Linear casts its input to autocast's
    # dtype; on the CPU it asks CUDA's autocast (float8.py says how).
    f8_autocast = contextlib.nullcontext()
    if float8:
        import float8 as f8_harness
        f8_autocast = f8_harness.cpu_autocast_as_gpu()
    with Tagger(), cnt, f8_autocast:
        loss = step(ids, labels)
        cnt.phase = "bwd"
        loss.backward()
    out = {"step": cnt.totals(), "ops": cnt.ops}
    if optim:
        train = [p for p in params if p.requires_grad]
        n = sum(p.numel() for p in train)
        out["opt"] = {}
        for fe in foreach:
            opt = torch.optim.AdamW(train, lr=1e-4, foreach=fe)
            opt.step()
            oc = Counter()
            oc.phase = "opt"
            with oc:
                opt.step()
            out["opt"][fe] = (oc.totals().get("opt", {}), n, oc.ops)
    return out


def sub(a, b, k):
    """(a - b) / k for Counter totals, phase by phase."""
    res = {}
    for ph in set(a) | set(b):
        x, y = a.get(ph, {}), b.get(ph, {})
        d = {}
        for key in ("kernels", "mm", "bytes", "mmbytes", "scalar"):
            d[key] = (x.get(key, 0) - y.get(key, 0)) / k
        for key in ("kinds", "kkernels"):
            ks = set(x.get(key, {})) | set(y.get(key, {}))
            d[key] = {q: (x.get(key, {}).get(q, 0) -
                          y.get(key, {}).get(q, 0)) / k for q in ks}
        res[ph] = d
    return res


def per_layer(c, s, b, precision, attn, ckpt, lora, layers=4, optim=False,
              foreach=(False, True), float8=None):
    """(per-layer totals (the difference of L and L/2 layers, halved), the
    whole L-layer step's run)."""
    big = run(c, layers, s, b, precision, attn, ckpt, lora, optim, foreach,
              float8)
    small = run(c, layers // 2, s, b, precision, attn, ckpt, lora,
                float8=float8)
    pl = sub(big["step"], small["step"], layers - layers // 2)
    return pl, big


PH = ("fwd", "bwd", "rec")


def get(d, ph, key):
    return d.get(ph, {}).get(key, {} if key in ("kinds", "kkernels") else 0)


# --- the fit --------------------------------------------------------------

# (h, I, a, kv, d, s): vary each of h, I, a*d, kv*d, d, a*s, s.
FIT_SHAPES = [
    (256, 688, 8, 4, 32, 128),
    (256, 512, 8, 4, 32, 128),
    (384, 688, 8, 4, 32, 128),
    (256, 688, 8, 8, 32, 128),
    (256, 688, 4, 2, 64, 128),
    (256, 688, 8, 4, 32, 64),
    (256, 688, 8, 4, 48, 128),
    (320, 608, 4, 1, 40, 96),
    (256, 688, 8, 4, 32, 96),
    (192, 512, 6, 2, 32, 128),
    (256, 768, 16, 4, 16, 64),
]


def features(shape, attn):
    h, I, a, kv, d, s = shape
    f = [1, h, I, a * d, kv * d, d]
    if attn == "eager":
        f += [a * s, s]
    return f


NAMES = {"sdpa": ["1", "h", "I", "a*d", "kv*d", "d"],
         "eager": ["1", "h", "I", "a*d", "kv*d", "d", "a*s", "s"]}


def fit(precision, attn, b=2, verbose=False):
    """Per-layer per-token non-matmul bytes (fwd, bwd, rec; wcast out)
    over FIT_SHAPES, fitted: {phase: (coefficients, max relative
    residual)}, and the wcast bytes per weight element per layer."""
    rows, ys, wc = [], {ph: [] for ph in PH}, []
    for shape in FIT_SHAPES:
        h, I, a, kv, d, s = shape
        c = cfg("llama", h, a, kv, I, d=d)
        big = run(c, 2, s, b, precision, attn, True, False)["step"]
        small = run(c, 1, s, b, precision, attn, True, False)["step"]
        pl = sub(big, small, 1)
        T = b * s
        rows.append(features(shape, attn))
        for ph in PH:
            w = pl.get(ph, {}).get("kinds", {}).get("wcast", 0)
            ys[ph].append((get(pl, ph, "bytes") - w) / T)
        weights = h * (a * d + 2 * kv * d) + a * d * h + 3 * h * I
        wc.append(tuple(pl.get(ph, {}).get("kinds", {}).get("wcast", 0) /
                        weights for ph in PH))
        if verbose:
            print("  fit %s %s %s: %s" % (precision, attn, shape, " ".join(
                "%s=%.1f" % (ph, ys[ph][-1]) for ph in PH)))
    X = np.array(rows, dtype=float)
    res = {}
    for ph in PH:
        y = np.array(ys[ph])
        coef, *_ = np.linalg.lstsq(X, y, rcond=None)
        pred = X @ coef
        err = np.max(np.abs(pred - y) / np.maximum(np.abs(y), 1))
        res[ph] = (coef, err)
    return res, wc


def form(coef, names):
    terms = []
    for c, n in zip(coef, names):
        if abs(c) < 0.05:
            continue
        terms.append("%+.2f" % c if n == "1" else "%+.2f*%s" % (c, n))
    return " ".join(terms).lstrip("+") or "0"


# --- float8 ---------------------------------------------------------------

# (h, I, a, kv, d, s), b = 2: every dimension a multiple of 16, as
# torch._scaled_mm needs; the tokens a step (b x s) against the weights
# varied so that the casts' input, weight and grad_output elements
# separate.
F8_SHAPES = [
    (256, 688, 8, 4, 32, 128),
    (128, 512, 4, 2, 32, 64),
    (192, 768, 6, 2, 32, 32),
    (256, 512, 8, 8, 32, 16),
    (128, 1024, 2, 1, 64, 96),
    (384, 256, 12, 4, 32, 48),
    (64, 128, 4, 4, 16, 160),
]
RECIPES = ("tensorwise", "rowwise")


F8_NAMES = ("input", "weight", "grad_output", "row", "column")


def f8_sizes(shape, b=2):
    """(T x the inputs, the weights, T x the outputs, T x 7, the inputs +
    the outputs) of a Llama layer's seven linears: the elements its casts
    read (input, weight, grad_output), and the rows and columns of a
    token's operands, which rowwise's scales are a value of."""
    h, I, a, kv, d, s = shape
    T = b * s
    ins = 5 * h + a * d + I
    outs = a * d + 2 * kv * d + 2 * h + 2 * I
    weights = h * (a * d + 2 * kv * d) + a * d * h + 3 * h * I
    return T * ins, weights, T * outs, T * 7, ins + outs


def f8_added(shape, recipe, ckpt, precision="bf16-true", b=2):
    """What a layer's float8 linears add over the same layer unconverted,
    phase by phase: {phase: (bytes of non-matmul kernels, ops: kernels,
    matmuls and scalar ops)} (the difference of 2 and 1 layers)."""
    h, I, a, kv, d, s = shape
    c = cfg("llama", h, a, kv, I, d=d)
    out = {}
    pls = []
    for f8 in (recipe, None):
        big = run(c, 2, s, b, precision, "sdpa", ckpt, False,
                  float8=f8)["step"]
        small = run(c, 1, s, b, precision, "sdpa", ckpt, False,
                    float8=f8)["step"]
        pls.append(sub(big, small, 1))
    for ph in PH:
        out[ph] = tuple(
            sum(get(pl, ph, k) for k in keys) * sign
            for keys in (("bytes",), ("kernels", "scalar"))
            for pl, sign in ((pls[0], 1), (pls[1], -1)))
        out[ph] = (out[ph][0] + out[ph][1], out[ph][2] + out[ph][3])
    return out


def f8_report(args):
    """--float8: per float8 linear, the ops and bytes it adds (per phase),
    and the bytes fitted per element of its casts' operands."""
    t0 = time.time()
    print("float8 (torchao 0.15, convert_to_float8_training, lm_head "
          "left out), sdpa, b=2: what a layer's 7 float8 linears add over "
          "the same layer unconverted")
    for prec, recipe, ckpt in (
            (p, r, k) for p in ("bf16-true", "bf16-mixed")
            for r in RECIPES for k in (False, True)):
        rows, ys, ops = [], {ph: [] for ph in PH}, []
        for shape in F8_SHAPES:
            add = f8_added(shape, recipe, ckpt, prec)
            rows.append(f8_sizes(shape))
            for ph in PH:
                ys[ph].append(add[ph][0])
            ops.append(tuple(add[ph][1] / 7 for ph in PH))
            print("  %s %s%s %s: bytes fwd %d bwd %d rec %d; ops a "
                  "linear fwd %.2f bwd %.2f rec %.2f" % (
                      prec, recipe, " ckpt" if ckpt else "", shape,
                      add["fwd"][0], add["bwd"][0], add["rec"][0],
                      *ops[-1]))
            sys.stdout.flush()
        X = np.array(rows, dtype=float)
        for ph in PH:
            y = np.array(ys[ph], dtype=float)
            if not y.any():
                continue
            coef, *_ = np.linalg.lstsq(X, y, rcond=None)
            err = np.max(np.abs(X @ coef - y) / np.maximum(abs(y), 1))
            print("  %s %s%s %s: bytes an element of %s (max rel. "
                  "residual %.2g)" % (
                      prec, recipe, " ckpt" if ckpt else "", ph,
                      ", ".join("%s %.3f" % nc
                                for nc in zip(F8_NAMES, coef)), err))
    print("(%.0f s)" % (time.time() - t0))


# --- report ---------------------------------------------------------------

KINDS = ["norm", "act", "mul", "add", "rotary", "softmax", "dropout", "cast",
         "wcast", "attn.mul", "attn.add", "attn.other", "cat", "accum",
         "router", "experts", "lora", "mlp", "other", "embedding", "loss"]


def cases():
    """(name, config, precision, attention, checkpointing, LoRA) a case.
    bf16-true is the model in bf16 and AdamW on its bf16 weights (as
    torch.optim.AdamW steps them here: no fp32 master copy), which is
    memfloor's bf16-true, not its bf16 (fp32 master weights)."""
    out = []
    for prec in ("bf16-true", "bf16-mixed"):
        for attn in ("sdpa", "eager"):
            for ckpt in (False, True):
                for lora in (False, True):
                    out.append(("llama", LLAMA, prec, attn, ckpt, lora))
    for name, c in (("mistral", MISTRAL), ("qwen2", QWEN2)):
        for prec in ("bf16-true", "bf16-mixed"):
            out.append((name, c, prec, "sdpa", False, False))
            out.append((name, c, prec, "eager", True, False))
        out.append((name, c, "bf16-true", "sdpa", True, True))
    for name, c, attn in (("mixtral", MIXTRAL, "sdpa"),
                          ("gemma2", GEMMA2, "eager"),
                          ("phi3", PHI3, "sdpa")):
        for prec in ("bf16-true", "bf16-mixed"):
            for ckpt in (False, True):
                out.append((name, c, prec, attn, ckpt, False))
        out.append((name, c, "bf16-true", attn, False, True))
    return out


def f8_cases():
    """(name, config, precision, checkpointing, recipe) a float8 case:
    Llama's block (llama, and mistral, whose a x d is not h), sdpa, full
    fine-tuning, as memfloor takes float8 (mf_est_float8_refused)."""
    out = []
    for recipe in RECIPES:
        for prec in ("bf16-true", "bf16-mixed"):
            for ckpt in (False, True):
                out.append(("llama", LLAMA, prec, ckpt, recipe))
        out.append(("mistral", MISTRAL, "bf16-true", True, recipe))
    return out


def case_name(model_name, prec, attn, ckpt, lora, float8=None):
    return "%s %s %s%s%s%s" % (model_name, prec, attn,
                               " ckpt" if ckpt else "",
                               " lora" if lora else "",
                               " float8 " + float8 if float8 else "")


def detail(ops, T, title):
    print("    per-op detail (%s):" % title)
    print("      %-4s %-10s %-42s %-6s %6s %10s %10s" % (
        "ph", "kind", "op", "class", "calls", "read", "written"))
    for (ph, kind, op, cls), (n, r, w) in sorted(ops.items()):
        print("      %-4s %-10s %-42s %-6s %6d %10.1f %10.1f" % (
            ph, kind, op, cls, n, r / T, w / T))


def table(args):
    """The measurements alone (--measured): per layer, by kind, AdamW."""
    s, b, L = S, B, LAYERS
    T = s * b
    t0 = time.time()
    print("Per layer (L=%d minus L=%d, halved), bytes per token per layer "
          "of non-matmul kernels; kernels per layer (mm in parens); "
          "s=%d b=%d V=1000" % (L, L // 2, s, b))
    print("%-36s %8s %8s %8s | %9s %9s %9s | %8s %8s | %6s %6s %7s %8s"
          % ("case", "fwd B", "bwd B", "rec B", "k fwd", "k bwd", "k rec",
             "loss B", "loss/V", "step k", "mm k", "MB", "mm MB"))
    kinds_rows = []
    adam = []
    for model_name, c, prec, attn, ckpt, lora in cases():
        name = case_name(model_name, prec, attn, ckpt, lora)
        if args.only and args.only not in name:
            continue
        optim = not ckpt and attn == ("eager" if model_name == "gemma2"
                                      else "sdpa")
        pl, big = per_layer(c, s, b, prec, attn, ckpt, lora, L, optim)
        st = big["step"]
        lossb = sum(get(st, ph, "kinds").get("loss", 0)
                    for ph in PH) / T
        tot_k = sum(get(st, ph, "kernels") for ph in PH)
        tot_mm = sum(get(st, ph, "mm") for ph in PH)
        tot_b = sum(get(st, ph, "bytes") for ph in PH)
        tot_mb = sum(get(st, ph, "mmbytes") for ph in PH)

        def kk(ph):
            return "%.0f(%.0f)" % (get(pl, ph, "kernels"),
                                   get(pl, ph, "mm"))
        print("%-36s %8.0f %8.0f %8.0f | %9s %9s %9s | %8.0f %8.2f | "
              "%6d %6d %7.2f %8.2f" % (
                  name, get(pl, "fwd", "bytes") / T,
                  get(pl, "bwd", "bytes") / T,
                  get(pl, "rec", "bytes") / T, kk("fwd"), kk("bwd"),
                  kk("rec"), lossb, lossb / c["vocab_size"], tot_k,
                  tot_mm, tot_b / 2**20, tot_mb / 2**20))
        kinds_rows.append((name, pl, st))
        if optim:
            for fe, (ot, n, ops) in big["opt"].items():
                adam.append((name, fe, ot, n))
                if args.v:
                    detail(ops, n, "AdamW foreach=%s, bytes per parameter"
                           % fe)
        if args.v:
            detail(big["ops"], T, name + ", L=%d, bytes per token" % L)
        sys.stdout.flush()

    print("\nBy kind: bytes per token per layer (fwd / bwd / rec); "
          "kinds with no bytes left out")
    for name, pl, st in kinds_rows:
        used = [k for k in KINDS if any(
            abs(pl.get(ph, {}).get("kinds", {}).get(k, 0)) > 0.5 * T
            for ph in PH)]
        extra = sorted(set().union(*[pl.get(ph, {}).get("kinds", {})
                                     for ph in PH]) - set(KINDS))
        print("  " + name)
        for ph in PH:
            if not pl.get(ph, {}).get("kernels"):
                continue
            ks = pl[ph]["kinds"]
            print("    %s: %s" % (ph, "  ".join(
                "%s %.0f" % (k, ks.get(k, 0) / T) for k in used + extra
                if abs(ks.get(k, 0)) > 0.5 * T)))
        outside = {}
        for ph in PH:
            for k in ("embedding", "loss"):
                outside[(ph, k)] = get(st, ph, "kinds").get(k, 0) / T
        print("    outside the layers, per token: " + "  ".join(
            "%s.%s %.0f" % (k, ph, v) for (ph, k), v in outside.items()
            if v))

    print("\nAdamW second step, per trainable parameter")
    print("%-36s %8s %10s %8s %8s %8s" % ("case", "foreach", "params",
                                           "B/param", "kernels",
                                           "scalar"))
    for name, fe, ot, n in adam:
        print("%-36s %8s %10d %8.2f %8d %8d" % (
            name, fe, n, ot.get("bytes", 0) / n, ot.get("kernels", 0),
            ot.get("scalar", 0)))
    print("(%.0f s)" % (time.time() - t0))


def fit_report(args):
    """The fit (--fit): per-layer per-token bytes over FIT_SHAPES."""
    t0 = time.time()
    print("\nFitted per-layer per-token non-matmul bytes (Llama, full "
          "checkpointing, weights' casts out), over %d shapes" %
          len(FIT_SHAPES))
    for prec in ("bf16", "bf16-mixed"):
        for attn in ("sdpa", "eager"):
            res, wc = fit(prec, attn, verbose=args.v)
            for ph in PH:
                coef, err = res[ph]
                print("  %-10s %-5s %s: %s   (max rel. residual %.2g)" % (
                    prec, attn, ph, form(coef, NAMES[attn]), err))
            if any(any(x) for x in wc):
                print("  %-10s %-5s weight casts, bytes per layer weight "
                      "element: fwd %.2f bwd %.2f rec %.2f" % (
                          (prec, attn) + wc[0]))
            sys.stdout.flush()
    print("(%.0f s)" % (time.time() - t0))


# --- memfloor -------------------------------------------------------------

def workload(prec, attn, ckpt, lora, s, b, float8=None):
    w = {"kind": "training", "sequenceLength": s, "microBatch": b,
         "precision": prec, "attention": attn,
         "gradientCheckpointing": ckpt}
    if float8:
        w["float8"] = float8
    if lora:
        w.update(method="lora", lora={"rank": RANK, "targets": "all-linear"})
    return w


def measured_step(c, prec, attn, ckpt, lora, s, b, L, float8=None):
    """What memfloor's work.bytes and work.kernels count, measured on one
    step of c with L layers: {"bytes", "kernels", "trainable", "parts"}.
    bytes: every non-matmul kernel of the forward (the loss included),
    backward and recomputed forward, less the embedding's (memfloor has
    no term for it), plus AdamW's second step (foreach, torch's default on
    CUDA) over the trainable parameters; kernels: the layers' (L times a
    layer's, matmuls and SDPA included; the embedding's, the final norm's,
    the loss's and the optimizer's out, as memfloor counts them)."""
    pl, big = per_layer(c, s, b, prec, attn, ckpt, lora, L, optim=True,
                        foreach=(True,), float8=float8)
    st = big["step"]
    ot, n, _ = big["opt"][True]

    def kind(k):
        return sum(get(st, ph, "kinds").get(k, 0) for ph in PH)
    step = sum(get(st, ph, "bytes") for ph in PH)
    layers = L * sum(get(pl, ph, "bytes") -
                     get(pl, ph, "kinds").get("wcast", 0) for ph in PH)
    parts = {"layers": layers, "loss": kind("loss"), "wcast": kind("wcast"),
             "optimizer": ot.get("bytes", 0), "embedding": kind("embedding")}
    parts["rest"] = step - layers - parts["loss"] - parts["wcast"] - \
        parts["embedding"]
    # float8's scales are 0-dim tensors (tensorwise) on the device: each
    # op on them is a kernel a GPU launches, counted as one.
    keys = ("kernels", "scalar") if float8 else ("kernels",)
    return {"bytes": step - parts["embedding"] + parts["optimizer"],
            "kernels": L * sum(get(pl, ph, k) for ph in PH for k in keys),
            "trainable": n, "parts": parts}


def band(model_name):
    """(bytes, kernels) relative tolerance of an architecture: the Llama
    block's (the fit's own, and Mistral's and Qwen2's, the same block)
    and the others' (no term of their own)."""
    return LLAMA_BAND if model_name in LLAMA_FAMILY else OTHER_BAND


def judge(name, model_name, m, est, verbose):
    """Print one line for a case against est; True when it passes."""
    if isinstance(est, str):
        print("FAIL %-34s measured bytes %d kernels %d; %s" % (
            name, m["bytes"], m["kernels"], est))
        return False
    work = est.get("work")
    if not isinstance(work, dict) or not isinstance(
            work.get("bytes"), (int, float)) or not isinstance(
            work.get("kernels"), (int, float)):
        print("FAIL %-34s measured bytes %d kernels %d; memfloor gave no "
              "work.bytes and work.kernels" % (name, m["bytes"],
                                                m["kernels"]))
        return False
    tb, tk = band(model_name)
    eb = (work["bytes"] - m["bytes"]) / m["bytes"]
    ek = (work["kernels"] - m["kernels"]) / m["kernels"]
    ok = abs(eb) <= tb and abs(ek) <= tk
    print("%-4s %-34s bytes %7.2f MiB memfloor %7.2f MiB %+6.1f%% (±%.0f%%)  "
          "kernels %5d memfloor %5d %+6.1f%% (±%.0f%%)" % (
              "ok" if ok else "FAIL", name, m["bytes"] / 2**20,
              work["bytes"] / 2**20, 100 * eb, 100 * tb, m["kernels"],
              work["kernels"], 100 * ek, 100 * tk))
    if verbose:
        p = m["parts"]
        print("     measured MiB: layers %.2f loss %.2f weight casts %.2f "
              "AdamW %.2f rest %.2f (embedding %.2f left out); trainable "
              "%d, memfloor's %s" % (
                  p["layers"] / 2**20, p["loss"] / 2**20, p["wcast"] / 2**20,
                  p["optimizer"] / 2**20, p["rest"] / 2**20,
                  p["embedding"] / 2**20, m["trainable"],
                  est.get("trainableParameters")))
    sys.stdout.flush()
    return ok


def compare(args):
    """The default run: each case measured and held to memfloor."""
    t0 = time.time()
    passed = failed = 0
    print("Whole-step non-matmul bytes and the layers' kernels, measured "
          "and memfloor's work (L=%d s=%d b=%d V=1000, LoRA rank %d "
          "all-linear)" % (LAYERS, S, B, RANK))
    for model_name, c, prec, attn, ckpt, lora in cases():
        name = case_name(model_name, prec, attn, ckpt, lora)
        if args.only and args.only not in name:
            continue
        m = measured_step(c, prec, attn, ckpt, lora, S, B, LAYERS)
        est = hf.estimate(dict(c, num_hidden_layers=LAYERS),
                          workload(prec, attn, ckpt, lora, S, B),
                          "traffic-" + c["model_type"])
        ok = judge(name, model_name, m, est, args.v)
        passed += ok
        failed += not ok
    for model_name, c, prec, ckpt, recipe in f8_cases():
        name = case_name(model_name, prec, "sdpa", ckpt, False, recipe)
        if args.only and args.only not in name:
            continue
        m = measured_step(c, prec, "sdpa", ckpt, False, S, B, LAYERS,
                          recipe)
        est = hf.estimate(dict(c, num_hidden_layers=LAYERS),
                          workload(prec, "sdpa", ckpt, False, S, B, recipe),
                          "traffic-" + c["model_type"])
        ok = judge(name, model_name, m, est, args.v)
        passed += ok
        failed += not ok
    print("traffic harness: %d passed, %d failed (%.0f s)" % (
        passed, failed, time.time() - t0))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-v", action="store_true",
                    help="each case's measured parts; with --measured or "
                    "--fit, every op")
    ap.add_argument("--only", default="", help="cases whose name has this")
    ap.add_argument("--measured", action="store_true",
                    help="print the measurements only (per layer, by kind, "
                    "AdamW), memfloor not asked")
    ap.add_argument("--float8", action="store_true",
                    help="what each float8 linear adds (ops, bytes an "
                    "element of its casts' operands), memfloor not asked")
    ap.add_argument("--fit", action="store_true",
                    help="fit the per-layer bytes over FIT_SHAPES (Llama) "
                    "and print the forms, memfloor not asked")
    args = ap.parse_args()
    if args.measured:
        table(args)
    if args.fit:
        fit_report(args)
    if args.float8:
        f8_report(args)
    if args.measured or args.fit or args.float8:
        return 0
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
