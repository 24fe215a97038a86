#!/usr/bin/env python3
"""The optimizer in backward (design 19, spec.workload.optimizerInBackward)
as torchtune 0.6.1 runs it, measured, and memfloor's `pytorch` estimate
held to it.

torchtune's full fine-tuning recipes with optimizer_in_bwd: True make one
optimizer per weight (config.instantiate(cfg_optimizer, [p]) for every
parameter) and call torchtune.training.register_optim_in_bwd_hooks, which
puts a post-accumulate-grad hook on every weight that steps that weight's
optimizer and sets its gradient to None (zero_grad).  Here: transformers'
models of tests/torch/hf.py in bf16-true (the model in bf16, as torchtune's
dtype: bf16; no master copy, the moments bf16) and fp32, with sdpa and
eager attention, without and with checkpointing (non-reentrant, every
layer), a torch.optim.AdamW for each weight (its single-tensor step, the
CPU's default; the foreach and fused steps once, on the case where the
step is the peak), the optimizers' state made before the step is measured
(as after the first step), and torchtune's own register_optim_in_bwd_hooks.

bitsandbytes' AdamW8bit and PagedAdamW8bit, one a weight as torchtune
makes them from its configs (llama3_1/8B_full_single_device.yaml names
bitsandbytes.optim.PagedAdamW8bit), run too: each weight's state made by
bitsandbytes' own init_state, the step by its CPU kernels (0.50.2 has
them; a paged optimizer on the CPU allocates its state as plain tensors).
Their state is measured tensor by tensor and held exactly to the
optimizer bucket and, for the paged one, to pagedOptimizer: the moments
of a weight of 1e5 elements or more are the ones get_state_buffer puts
in CUDA unified memory on a GPU.  The CPU kernel dequantizes each state to
fp32 around its update; the CUDA kernel updates in place and allocates
nothing (backends/cuda/ops.py, _optimizer_update_8bit_blockwise_impl), so
an 8-bit run's step temporaries are left out of its peak and not held to
transient.

The Llama cases, and a Llama with tied embeddings, run compiled too
(compile: true): every decoder layer compiled by torch.compile with
inductor, as torchtune's compile_model does, whose backward graph returns
a layer's gradients together.

One forward and backward (the hooks step every weight) runs under the
profiler; its allocation events, each nested in the op that made or freed
it, give the bytes alive at every moment, split by what they are:

- gradients: an allocation freed by a weight's zero_grad (its .grad), and
  the contributions summed into one (freed by the add that made it: a tied
  weight's two gradients);
- the step's temporaries: allocations made inside Optimizer.step;
- the rest: what the forward left (activations, logits) and backward's
  own buffers.

It checks, against `memfloor estimate -o json` of the same job
(optimizerInBackward: true), with a failure when one is off:

- gradients: the most gradient bytes alive at once before the embeddings'
  backward, within 2% of the gradients bucket (Pmax x g; tied embeddings
  (V x h + Pl) x g).  The embeddings' backward, with no activation left,
  is held by the peak check;
- the step's temporaries never above the transient bucket;
- at every step, what else is alive (the forward's tensors not yet
  released and backward's pending buffers) no more than the activations
  and logits buckets: the step runs in backward on top of the activations,
  but each weight's after the node that made its gradient has released
  what it saved, which covers the gradients it leaves pending, and the
  residual stream's gradient is covered by what the loss and the final
  norm released first;
- the step's peak (the weights, the optimizers' state and the batch
  counted by size, the rest by the profiler) not above perGpuBytes.

Prints every case and exits 1 on a failure.  optim_bwd.py -v prints where
each peak is and what is alive there; --8bit runs bitsandbytes' runs only.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf  # noqa: E402  (quiets transformers before torch is used)
import measure  # noqa: E402

import bitsandbytes as bnb  # noqa: E402
import torch  # noqa: E402
from torch._C._profiler import _EventType  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from torchtune import training  # noqa: E402

TOLERANCE = 0.02
# The step's 0-dim scalars (the CPU wraps its Python numbers in tensors;
# a GPU's are host memory too) are not its temporaries.
SCALAR = 8
VERBOSE = "-v" in sys.argv
# optim_bwd.py --8bit: bitsandbytes' optimizers' runs only.
ONLY_8BIT = "--8bit" in sys.argv
cfg, moe = measure.cfg, measure.moe

# (name, config, s, b).  Chosen so that each phase is the peak somewhere:
# the loss's backward, lm_head's step, a layer weight's step among the
# MLP's backward, tied embeddings (Qwen2's tie_word_embeddings; Gemma-2
# ties), Phi-3's fused qkv and gate_up, Mixtral's fused experts (the
# largest tensor: E x 2I x h) and Qwen2's biases.
CASES = [
    ("llama", cfg("llama", 96, 4, 2, 256, 320), 40, 3),
    ("llama head step", cfg("llama", 96, 4, 2, 256, 3000), 8, 1),
    ("llama mlp", cfg("llama", 64, 4, 2, 1024, 64), 40, 3),
    ("qwen2 tied", cfg("qwen2", 96, 3, 1, 288, 352,
                       tie_word_embeddings=True), 56, 2),
    ("qwen2 tied head step", cfg("qwen2", 96, 3, 1, 288, 3000,
                                 tie_word_embeddings=True), 8, 1),
    ("phi3", cfg("phi3", 96, 6, 6, 256, 384), 40, 3),
    ("mixtral", moe("mixtral", 64, 4, 2, 128, 256, 4, 2), 64, 2),
    ("gemma2", cfg("gemma2", 64, 2, 1, 256, 512, d=64, **measure.CAP),
     32, 2),
]

# (precision, attention, checkpointing) of every case: none and every
# layer in both precisions and attentions; every 2nd layer (torchtune's
# ac_option) and per op (torchtitan's policy) once.  Per op is not run on
# a mixture of experts: torch's selective checkpoint refuses transformers'
# router, which renormalises its top-k in place (the estimate counts it
# as no checkpointing, measure.py).
RUNS = [(p, a, c) for p in ("bf16-true", "fp32") for a in ("sdpa", "eager")
        for c in (False, True)] + [("bf16-true", "sdpa", 2),
                                   ("bf16-true", "sdpa", "op")]

# torch.optim.AdamW's steps: single-tensor (the CPU's default), foreach
# (a GPU's default) and fused.  The case whose step is the peak is run
# again with the other two.
STEPS = {"single": {"foreach": False}, "foreach": {"foreach": True},
         "fused": {"fused": True}}
IMPLEMENTATIONS = ("llama head step", ("foreach", "fused"))

# bitsandbytes' 8-bit optimizers (memfloor's optimizer names), the runs of
# every case they take, and the size from which a paged optimizer's
# get_state_buffer allocates in unified memory (optim/optimizer.py).
BNB = {"adam8bit": bnb.optim.AdamW8bit,
       "paged-adamw8bit": bnb.optim.PagedAdamW8bit}
BNB_RUNS = [("bf16-true", "sdpa", False), ("fp32", "eager", True)]
PAGED_MIN = 1e5

# Compiled (compile: true): every decoder layer compiled by torch.compile
# with inductor, as torchtune's compile_model does, after a first forward
# and backward that compiles them.  Llama's block (what compile: true
# takes): the Llama cases and a Llama with tied embeddings, each with
# these (precision, attention, checkpointing, optimizer).
COMPILED_CASES = [x for x in CASES if x[0].startswith("llama")] + [
    ("llama tied", cfg("llama", 96, 4, 2, 256, 352,
                       tie_word_embeddings=True), 56, 2)]
COMPILED_RUNS = [("bf16-true", "sdpa", False, "single"),
                 ("bf16-true", "sdpa", True, "single"),
                 ("fp32", "sdpa", False, "single"),
                 ("bf16-true", "sdpa", True, "paged-adamw8bit")]


def optimizers(model, impl):
    """A torch.optim.AdamW (or bitsandbytes' optimizer impl) for every
    weight, as torchtune's recipe makes them, its state made (as after the
    first step)."""
    optim = {}
    for p in model.parameters():
        if impl in BNB:
            o = BNB[impl]([p], lr=1e-4)
            o.init_state(o.param_groups[0], p, 0, 0)
            optim[p] = o
            continue
        o = torch.optim.AdamW([p], lr=1e-4, **STEPS[impl])
        st = o.state[p]
        st["step"] = torch.tensor(0.0)
        st["exp_avg"] = torch.zeros_like(p)
        st["exp_avg_sq"] = torch.zeros_like(p)
        optim[p] = o
    return optim


def state_bytes(optim):
    """The optimizers' state tensors, each storage once: (on the device,
    in unified memory), the moments of a paged optimizer's weight of
    PAGED_MIN elements or more in the second."""
    seen, dev, paged = set(), 0, 0
    for o in optim.values():
        for p, st in o.state.items():
            for k, t in st.items():
                if not torch.is_tensor(t) or t.data_ptr() in seen:
                    continue
                seen.add(t.data_ptr())
                n = t.untyped_storage().nbytes()
                if getattr(o, "is_paged", False) and \
                        k in ("state1", "state2") and p.numel() >= PAGED_MIN:
                    paged += n
                else:
                    dev += n
    return dev, paged


def held_bytes(model, optim, ids):
    """The weights, the optimizers' state on the device and the batch
    (ids and labels), allocated before the profile."""
    n = sum(p.numel() * p.element_size() for p in model.parameters())
    n += state_bytes(optim)[0]
    return n + 2 * ids.numel() * ids.element_size()


def allocations(prof):
    """The allocator's events in order: (time, address, bytes, the names
    of the enclosing ops, outermost first, and a number for each)."""
    out = []
    count = [0]

    def walk(ev, names, ops):
        if ev.tag == _EventType.Allocation:
            ef = ev.extra_fields
            out.append((ev.start_time_ns, ef.ptr, ef.alloc_size,
                        tuple(names), tuple(ops)))
            return
        count[0] += 1
        for ch in ev.children:
            walk(ch, names + [ev.name], ops + [count[0]])

    for root in prof.profiler.kineto_results.experimental_event_tree():
        walk(root, [], [])
    out.sort(key=lambda e: e[0])
    return out


def within(names, prefix):
    return any(n.startswith(prefix) for n in names)


class Timeline:
    """Every allocation's life, classified, and the bytes alive in each
    class after each event."""

    KINDS = ("grad", "step", "rest")

    def __init__(self, events):
        self.events = events
        n = len(events)
        lives = []  # (made, freed, bytes, made names, freed names, ops)
        open_ = {}
        for i, (_, ptr, size, names, ops) in enumerate(events):
            if size > 0:
                open_[ptr] = (i, size, names, ops)
            elif ptr in open_:
                j, sz, made, mops = open_.pop(ptr)
                lives.append((j, i, sz, made, names, mops, ops))
        for j, sz, made, mops in open_.values():
            lives.append((j, n, sz, made, (), mops, ()))
        # A weight's gradient: freed by zero_grad.  The contributions
        # summed into one (a tied weight's): its size, freed where the
        # engine's input buffer added them, an op around the one that
        # made the sum.
        grads = {(life[2], op) for life in lives
                 if within(life[4], "Optimizer.zero_grad")
                 for op in life[5]}
        self.kind = []
        for life in lives:
            j, i, sz, made, freed, mops, fops = life
            if within(freed, "Optimizer.zero_grad") or \
                    (fops and (sz, fops[-1]) in grads and
                     within(freed, "autograd::engine")):
                k = "grad"
            elif within(made, "Optimizer.step") and sz > SCALAR:
                k = "step"
            else:
                k = "rest"
            self.kind.append((life, k))
        self.alive = {k: [0] * (n + 1) for k in self.KINDS}
        for (j, i, sz, *_), k in self.kind:
            self.alive[k][j] += sz
            self.alive[k][i] -= sz
        for k in self.KINDS:
            acc = 0
            for t in range(n + 1):
                acc += self.alive[k][t]
                self.alive[k][t] = acc
        self.total = [sum(self.alive[k][t] for k in self.KINDS)
                      for t in range(n + 1)]
        self.n = n

    def names(self, t):
        return self.events[t][3] if t < self.n else ()

    def first(self, prefix):
        """The first event inside an op named prefix, or the end."""
        for t in range(self.n):
            if within(self.names(t), prefix):
                return t
        return self.n

    def peak(self, lo=0, hi=None):
        hi = self.n + 1 if hi is None else hi
        return max(range(lo, hi), key=lambda t: self.total[t])

    def most(self, kind, hi=None):
        hi = self.n + 1 if hi is None else hi
        return max(self.alive[kind][:hi])

    def steps(self):
        """The moments inside an optimizer's step."""
        return [t for t in range(self.n)
                if within(self.names(t), "Optimizer.step")]

    def describe(self, t):
        return "%s, %s" % (
            " / ".join(self.names(t)[-3:]),
            ", ".join("%s %d" % (k, self.alive[k][t]) for k in self.KINDS))


def measure_run(c, s, b, precision, attention, ckpt, impl="single",
                compiled=False):
    model = hf.build(c, c["num_hidden_layers"], precision, attention,
                     ckpt=ckpt)
    if compiled:
        torch._dynamo.reset()
        for layer in hf.decoder_layers(model):
            layer.compile(backend="inductor")
    return hooked(model, hf.Step(model, precision),
                  *measure.inputs(c, s, b), impl, compiled)


def hooked(model, step, ids, labels, impl, compiled=False):
    """One forward and backward of step (a module whose parameters are
    model's) on ids and labels with the optimizer impl in backward, as
    torchtune runs it, under the profiler: the bytes held before it, the
    optimizers' state (on the device, paged) and the Timeline.  Compiled,
    a first forward and backward compiles the layers first."""
    def one():
        loss = step(ids, labels)
        loss.backward()
        del loss

    if compiled:
        one()
        for p in model.parameters():
            p.grad = None
    optim = optimizers(model, impl)
    training.register_optim_in_bwd_hooks(model=model, optim_dict=optim)
    held = held_bytes(model, optim, ids)

    # With 8-bit state no AdamW temporaries cover the peak, and oneDNN's
    # bf16 matmul's scratch copy of its operand, a CPU artefact (loss.py,
    # forward.py), would stand in for them: oneDNN off.
    with torch.backends.mkldnn.flags(enabled=impl not in BNB), \
            profile(activities=[ProfilerActivity.CPU],
                    profile_memory=True) as prof:
        one()
    for p in model.parameters():
        assert p.grad is None, "a weight's gradient outlived its step"
    return held, state_bytes(optim), Timeline(allocations(prof))


def device_peak(tl, impl):
    """The moment of tl's peak as a GPU would hold it: for bitsandbytes'
    optimizers without the CPU kernel's fp32 copies of the state, which a
    GPU's does not make (above), taken out of tl.total."""
    if impl in BNB:
        for t in range(tl.n + 1):
            tl.total[t] -= tl.alive["step"][t]
    return tl.peak()


def memfloor(c, s, b, precision, attention, ckpt, impl="single",
             compiled=False):
    est = measure.estimate(c, {
        "kind": "training", "sequenceLength": s, "microBatch": b,
        "precision": precision, "attention": attention,
        "gradientCheckpointing": ckpt, "optimizerInBackward": True,
        "optimizer": impl if impl in BNB else "adamw",
        "compile": compiled})
    if not est["recipe"]["optimizerInBackward"]:
        sys.exit("memfloor's recipe does not say optimizerInBackward")
    buckets = {x["name"]: x["bytes"] for x in est["buckets"]}
    buckets["pagedOptimizer"] = est.get("pagedOptimizer", {}).get("bytes", 0)
    return buckets, est["perGpuBytes"]


def check(failures, name, what, ok, measured, estimated):
    err = (estimated - measured) / measured if measured else 0.0
    line = "%-46s %-28s measured %9d memfloor %9d %+7.2f%%" % (
        name, what, measured, estimated, 100 * err)
    if not ok:
        failures.append(line)
        print("FAIL " + line)
    elif VERBOSE:
        print("     " + line)
    return err


def run(failures, margins, label, c, s, b, precision, attention, ckpt,
        impl="single", compiled=False):
    held, (dev, paged), tl = measure_run(c, s, b, precision, attention,
                                         ckpt, impl, compiled)
    got, per_gpu = memfloor(c, s, b, precision, attention, ckpt, impl,
                            compiled)
    name = "%s %s %s%s%s%s" % (label, precision, attention,
                               "" if ckpt is False else
                               " ckpt" if ckpt is True else
                               " ckpt %s" % ckpt,
                               "" if impl == "single" else " " + impl,
                               " compiled" if compiled else "")
    embed = tl.first("autograd::engine::evaluate_function: Embedding")
    grads = tl.most("grad", embed)
    err = check(failures, name, "gradients", abs(
        (got["gradients"] - grads) / grads) <= TOLERANCE, grads,
        got["gradients"])
    margins["gradients"].append(err)
    if impl in BNB:
        check(failures, name, "optimizer state on the device",
              dev == got["optimizer"], dev, got["optimizer"])
        check(failures, name, "optimizer state paged",
              paged == got["pagedOptimizer"], paged, got["pagedOptimizer"])
    else:
        temps = tl.most("step")
        check(failures, name, "step temporaries <= transient",
              temps <= got["transient"], temps, got["transient"])
    # At each step, the tensors alive besides the gradients and the
    # step's own.
    steps = tl.steps()
    beside = max(tl.alive["rest"][t] for t in steps)
    kept = got["activations"] + got["logits"]
    check(failures, name, "beside a step <= acts+logits", beside <= kept,
          beside, kept)
    at = device_peak(tl, impl)
    peak = held + tl.total[at]
    margins["peak"].append(check(failures, name, "step peak <= perGpuBytes",
                                 peak <= per_gpu, peak, per_gpu))
    if VERBOSE:
        print("       peak at %s" % tl.describe(at))
        t = max(steps, key=lambda t: tl.total[t])
        print("       fullest step at %s" % tl.describe(t))


def main():
    only = [a for a in sys.argv[1:] if a not in ("-v", "--8bit")]
    failures = []
    margins = {"gradients": [], "peak": []}
    for label, c, s, b in CASES:
        if only and label not in only:
            continue
        for precision, attention, ckpt in [] if ONLY_8BIT else RUNS:
            if ckpt == "op" and "num_experts_per_tok" in c:
                continue
            run(failures, margins, label, c, s, b, precision, attention,
                ckpt)
        if label == IMPLEMENTATIONS[0] and not ONLY_8BIT:
            for impl in IMPLEMENTATIONS[1]:
                run(failures, margins, label, c, s, b, "bf16-true", "sdpa",
                    False, impl)
        for impl in BNB:
            for precision, attention, ckpt in BNB_RUNS:
                run(failures, margins, label, c, s, b, precision, attention,
                    ckpt, impl)
    for label, c, s, b in COMPILED_CASES:
        if only and label not in only:
            continue
        for precision, attention, ckpt, impl in COMPILED_RUNS:
            if ONLY_8BIT and impl not in BNB:
                continue
            run(failures, margins, label, c, s, b, precision, attention,
                ckpt, impl, True)
    for what, errs in margins.items():
        if errs:
            print("optimizerInBackward %-9s: memfloor %+.2f%% to %+.2f%% "
                  "of the measured (%d runs)" %
                  (what, 100 * min(errs), 100 * max(errs), len(errs)))
    print("optimizer in backward: %d runs, %d checks failed" %
          (len(margins["peak"]), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
