#!/usr/bin/env python3
"""Measure what torchtune's activation offloading leaves on the GPU and hold
memfloor's activationOffload (design 19) to it.

torchtune 0.6.1's recipes (full_finetune_single_device.py,
lora_finetune_single_device.py and their distributed siblings) run the
model's forward under training.get_act_offloading_ctx_manager: an
OffloadActivations (training/_activation_offloading.py), a
saved_tensors_hooks pair that copies every saved tensor of at least
min_offload_size bytes (1024) that is neither a parameter nor a buffer to
host memory in forward and brings it back in backward, with a
NoOpManager around the model's output layer, whose saved input stays on
the GPU; the loss is taken outside the context.  The recipes refuse
offloading without activation checkpointing (full_finetune_single_device.py
lines 166-174: "enable_activation_offloading should only be True when
enable_activation_checkpointing is True").

OffloadActivations only moves CUDA tensors, and this machine has no GPU,
so its own code (torchtune's, unchanged) runs here against a stand-in for
the device (DeviceSim): the CUDA streams and events are no-ops, the host
copies it makes (torch.empty_like(..., device="cpu")) are numpy memory
that torch's allocator never sees, and bringing one back
(tensor.to("cuda")) allocates a new tensor of the same layout through
torch's allocator.  So torch's allocator holds what the GPU would hold,
and every decision is torchtune's: which tensors move (size, parameters,
the NoOpManager region), how many stay in its forward stash
(max_fwd_stash_size 5, lines 155-163, emptied at the first backward node,
lines 329-332), and when a tensor brought back is let go: after the next
autograd node that brings one back (lines 264-266, 334-338), or, when
that node or a checkpoint's recomputation made a view of it, as soon as
its own node is done (lines 297-323, record_stream).  What only a GPU's
streams decide (when a copy finishes, when a block freed on the copy
stream may be reused) is not modelled: memory is counted as the
references let it go, as torch.cuda.memory_allocated counts it.

The models are transformers' own (tests/torch/hf.py: from a config with
random weights, PEFT's LoRA), checkpointed as HF Trainer does
(non-reentrant, every layer), with the model's lm_head as torchtune's
model.output.  Non-reentrant checkpointing (torch 2.13,
torch/utils/checkpoint.py _CheckpointFrame.save_inputs) saves a layer's
positional inputs (the hidden states) as saved tensors, which the
offloading hooks pack and move; the keyword inputs (positions, RoPE's cos
and sin, eager attention's mask) stay in the checkpoint's closure, on the
GPU; what the layer saves inside the checkpoint goes to the checkpoint's
own hooks and is recomputed in backward, on the GPU.  For each case it
measures:

- logits: what the forward leaves on the device outside the layers (every
  tensor the forward made that is still alive, and the loss's saved
  tensors, less what the checkpoints' closures hold), parameters, the
  host copies and the CPU generator states checkpoints keep left out;
- activations: the most the layers hold on the device at the end of a
  checkpoint's recomputation in backward, over every layer: the tensors
  the recomputation saved, what the offloading context holds (the tensors
  brought back and not let go yet, small ones it never moved), the
  checkpoints' closures; a tensor brought back that is not a layer's
  input (the final norm's, still held when the last layer recomputes) is
  the logits bucket's, and left out;
- host: the bytes of the host copies (each pack its own copy);
- the peak of a whole step (forward, loss, backward, AdamW one parameter
  at a time) from the profiler's allocation events, as measure.py's
  step_peak counts it.

It asks memfloor (the command line, -o json) for the same job with
activationOffload true and fails when activations or logits are more than
2% off, or the peak is above perGpuBytes; and, measured the same way
without checkpointing, that memfloor refuses that job (400, naming
spec.workload.activationOffload).  Each case runs again with the
optimizer in backward (optimizerInBackward: true), torch's AdamW and
bitsandbytes' PagedAdamW8bit for each weight stepped by torchtune's hooks
(optim_bwd.hooked), its peak held to perGpuBytes.  offload.py [-v]
[--in-backward] [INDEX ...] runs only the cases named, and with
--in-backward only their optimizer-in-backward runs; -v prints every
check.
"""
import contextlib
import gc
import os
import sys
import weakref

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402  (imports hf, which quiets transformers)
import hf  # noqa: E402
import optim_bwd  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.utils.checkpoint as tuc  # noqa: E402
import torchtune.training._activation_offloading as ao  # noqa: E402

TOLERANCE = 0.02
VERBOSE = "-v" in sys.argv
# offload.py --in-backward: the optimizer-in-backward runs only.
ONLY_OIB = "--in-backward" in sys.argv


# --- the device, simulated ------------------------------------------------

class Stream:
    """A CUDA stream or event that orders nothing: on one CPU thread every
    copy is done when it returns."""

    def wait_stream(self, other):
        pass

    def wait_event(self, event):
        pass

    def record_event(self):
        return None


class Host:
    """torch as OffloadActivations sees it, but for empty_like(...,
    device="cpu"): its host copy, made in numpy memory, which torch's
    allocator (the device here) does not count."""

    live = {}  # storage address -> bytes, of every host copy alive

    def __getattr__(self, name):
        return getattr(torch, name)

    @staticmethod
    def empty_like(t, **kwargs):
        # The layout empty_like gives (preserve_format), not allocated.
        stride = torch.empty_like(t, device="meta").stride()
        span = 1 + sum((n - 1) * s for n, s in zip(t.shape, stride)) \
            if t.numel() else 1
        mem = np.empty(span * t.element_size(), np.uint8)
        host = torch.from_numpy(mem).view(t.dtype).as_strided(t.shape,
                                                               stride)
        ptr = host.untyped_storage().data_ptr()
        Host.live[ptr] = mem.nbytes
        weakref.finalize(host, Host.live.pop, ptr, None)
        return host


def to_device(tensor, *args, **kwargs):
    """tensor.to("cuda"): a copy through torch's allocator, in the same
    layout; any other .to as torch does it."""
    dev = args[0] if args else kwargs.get("device")
    if str(dev) == "cuda":
        out = torch.empty_strided(tensor.shape, tensor.stride(),
                                  dtype=tensor.dtype)
        return out.copy_(tensor)
    return TO(tensor, *args, **kwargs)


TO = torch.Tensor.to
FRAMES = []   # every checkpoint frame made, weakly
INPUTS = []   # every layer input a checkpoint saved, weakly
FETCHED = {}  # storage address -> True: layer inputs brought back


def frame_init(self, *args, **kwargs):
    FRAME_INIT(self, *args, **kwargs)
    FRAMES.append(weakref.ref(self))


def frame_save(self, *args):
    INPUTS.extend(weakref.ref(t) for t in args if isinstance(t, torch.Tensor))
    FRAME_SAVE(self, *args)


def frame_inputs(self):
    inputs = FRAME_INPUTS(self)
    for t in inputs:
        if isinstance(t, torch.Tensor):
            FETCHED[t.untyped_storage().data_ptr()] = True
    return inputs


FRAME_INIT = tuc._CheckpointFrame.__init__
FRAME_INPUTS = tuc._CheckpointFrame.get_inputs
FRAME_SAVE = tuc._CheckpointFrame.save_inputs


@contextlib.contextmanager
def device_sim():
    """OffloadActivations' CUDA calls on the CPU, as the module docstring
    says, and the checkpoint frames recorded."""
    cuda = (torch.cuda.default_stream, torch.cuda.Stream, torch.cuda.stream)
    torch.cuda.default_stream = lambda *a: Stream()
    torch.cuda.Stream = Stream
    torch.cuda.stream = lambda s: contextlib.nullcontext()
    ao.torch = Host()
    torch.Tensor.to = to_device
    torch.Tensor.record_stream = lambda self, stream: None
    tuc._CheckpointFrame.__init__ = frame_init
    tuc._CheckpointFrame.get_inputs = frame_inputs
    tuc._CheckpointFrame.save_inputs = frame_save
    try:
        yield
    finally:
        torch.cuda.default_stream, torch.cuda.Stream, torch.cuda.stream = cuda
        ao.torch = torch
        # TensorBase's again: torch.Tensor defines neither itself.
        del torch.Tensor.to
        del torch.Tensor.record_stream
        tuc._CheckpointFrame.__init__ = FRAME_INIT
        tuc._CheckpointFrame.get_inputs = FRAME_INPUTS
        tuc._CheckpointFrame.save_inputs = FRAME_SAVE
        FRAMES.clear()
        INPUTS.clear()
        FETCHED.clear()


class Output(nn.Module):
    """A model whose output layer is lm_head, as torchtune's is
    model.output: get_act_offloading_ctx_manager puts it under its
    NoOpManager."""

    def __init__(self, head):
        super().__init__()
        self.output = head


def offload_context(base):
    head = base.lm_head
    head._forward_pre_hooks.clear()
    head._forward_hooks.clear()
    head._forward_hooks_always_called.clear()
    return ao.get_act_offloading_ctx_manager(Output(head), True)


class Step(nn.Module):
    """torchtune's _loss_step on a transformers model: the model's forward
    (its logits) under the offloading context, the loss outside it, as
    transformers' own loss function takes it (logits.float(),
    cross_entropy)."""

    def __init__(self, subj, ctx, precision):
        super().__init__()
        self.model, self.base = subj.model, subj.base
        self.ctx, self.precision = ctx, precision
        self.loss_hooks = contextlib.nullcontext

    def forward(self, ids, labels):
        with hf.autocast(self.precision):
            with self.ctx:
                logits = self.model(input_ids=ids).logits
            with self.loss_hooks():
                return self.base.loss_function(
                    logits=logits, labels=labels,
                    vocab_size=self.base.config.vocab_size)


# --- what the device holds -------------------------------------------------

COPIES = set()  # under autocast, the shapes of its 16-bit weight copies


def storages(tensors, skip):
    """{address: bytes} of the distinct storages of tensors, less those in
    skip, the host copies, the CPU generator states and autocast's 16-bit
    copies of the weights (the weights bucket's, measure.autocast_copies:
    a 16-bit tensor of a weight's shape or its transpose)."""
    seen = {}
    for t in tensors:
        if t.dtype == torch.uint8 and t.numel() == measure.RNG_BYTES:
            continue
        if t.dtype == torch.bfloat16 and tuple(t.shape) in COPIES:
            continue
        s = t.untyped_storage()
        p = s.data_ptr()
        if p == 0 or p in skip or p in Host.live:
            continue
        seen[p] = max(seen.get(p, 0), s.nbytes())
    return seen


def held_in(obj, out, depth=0):
    """The tensors in obj (a closure's cell contents: tuples, dicts,
    partials), modules left out."""
    if depth > 6 or isinstance(obj, nn.Module):
        return
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            held_in(x, out, depth + 1)
    elif isinstance(obj, dict):
        for x in obj.values():
            held_in(x, out, depth + 1)
    elif hasattr(obj, "keywords") and hasattr(obj, "args"):  # a partial
        held_in(obj.args, out, depth + 1)
        held_in(obj.keywords, out, depth + 1)


def closures():
    """What every live checkpoint keeps in its closure: its keyword inputs
    (positions, cos and sin, the mask)."""
    out = []
    for ref in FRAMES:
        f = ref()
        if f is not None:
            for cell in f.recompute_fn.__closure__ or ():
                try:
                    held_in(cell.cell_contents, out)
                except ValueError:  # a cell not filled yet
                    pass
    return out


def recomputed():
    out = []
    for ref in FRAMES:
        f = ref()
        if f is not None:
            for d in f.recomputed.values():
                out.extend(d.values())
    return out


def graph_held():
    """The tensors alive that require a gradient and are not parameters:
    leaves the autograd graph holds (transformers' LoRA with
    checkpointing makes the embeddings' output one,
    enable_input_require_grads), which no hook sees.  A gradient in
    flight requires none."""
    return [o for o in gc.get_objects() if isinstance(o, torch.Tensor) and
            o.requires_grad and not isinstance(o, nn.Parameter)]


class Meter:
    """The device bytes of one step under the offloading context ctx."""

    def __init__(self, step, ctx, skip):
        self.step, self.ctx, self.skip = step, ctx, skip
        self.peaks = []  # (layers' bytes, outside bytes) at each recompute

    def forward(self, ids, labels):
        """Run the forward and the loss; return the loss, the device
        bytes outside the layers and the host bytes.  The gc is frozen
        from here to the end of backward, so that only the step's own
        objects are looked at."""
        boxes = []

        def pack(t):
            b = measure.Box(t)
            boxes.append(weakref.ref(b))
            return b

        hooks = torch.autograd.graph.saved_tensors_hooks
        self.step.loss_hooks = lambda: hooks(pack, lambda b: b.t)
        gc.collect()
        gc.freeze()
        loss = self.step(ids, labels)
        self.step.loss_hooks = contextlib.nullcontext
        made = measure.new_tensors()
        made += [r().t for r in boxes if r() is not None]
        skip = self.skip | {loss.untyped_storage().data_ptr()}
        every = storages([t for t in made if t is not loss], skip)
        inputs = [r() for r in INPUTS if r() is not None]
        layers = storages(closures() + inputs, skip)
        outside = sum(n for p, n in every.items() if p not in layers)
        return loss, outside, sum(Host.live.values())

    def snapshot(self, frame, gid):
        """At the end of a recomputation: the layers' bytes on the device,
        and those of tensors brought back from outside the layers."""
        ctx = self.ctx
        back = list(ctx.bwd_tensor_stash.values()) + \
            [t for t, _ in ctx.fwd_stash.values()]
        kept = [t for t, moved in ctx.tracker.values() if not moved]
        outside = storages([t for t in back if t.untyped_storage().data_ptr()
                            not in FETCHED], self.skip)
        mine = storages(back + kept + recomputed() + closures() +
                        graph_held(), self.skip)
        self.peaks.append((sum(n for p, n in mine.items()
                               if p not in outside), sum(outside.values())))
        return CHECK(frame, gid)

    def backward(self, loss):
        global CURRENT
        CURRENT = self
        tuc._CheckpointFrame.check_recomputed_tensors_match = \
            lambda f, gid: CURRENT.snapshot(f, gid)
        try:
            loss.backward()
        finally:
            tuc._CheckpointFrame.check_recomputed_tensors_match = CHECK
            gc.unfreeze()


CHECK = tuc._CheckpointFrame.check_recomputed_tensors_match
CURRENT = None


# --- cases ----------------------------------------------------------------
cfg, moe, CAP = measure.cfg, measure.moe, measure.CAP

class Subject(measure.Subject):
    """measure.py's Subject with LAYERS layers: the last, the first and
    one between them, whose backward each brings back something else."""

    def __init__(self, c, precision, lora=None):
        self.c = dict(c, num_hidden_layers=LAYERS)
        self.model = hf.build(self.c, LAYERS, precision, "sdpa", lora=lora,
                              rank=measure.RANK)
        self.base = self.model.get_base_model() if lora else self.model
        self.step = hf.Step(self.model, precision)


LAYERS = 3

# (config, s, b): s x b of at least 256 tokens, so that every saved tensor
# of a token's bytes is at least min_offload_size (the 4-byte rsqrt: 1 KiB).
CASES = [
    (cfg("llama", 96, 4, 2, 256, 320), 72, 4),
    (cfg("qwen2", 96, 3, 1, 288, 352), 136, 2),
    (cfg("phi3", 96, 6, 6, 256, 384), 80, 4),
    (cfg("gemma2", 96, 4, 2, 384, 400, d=48, **CAP), 64, 4),
    (cfg("mistral", 64, 4, 4, 192, 256), 264, 1),
    (moe("mixtral", 96, 6, 3, 160, 300, 5, 2), 136, 2),
    (moe("qwen2_moe", 80, 4, 2, 192, 320, 8, 2, moe_intermediate_size=64,
         shared_expert_intermediate_size=160, norm_topk_prob=True), 96, 3),
]
DENSE = measure.DENSE
# The blocks whose autocast memfloor counts as measured (est_pytorch.c
# counts Gemma-2's and the experts' as fp32, which keeps more).
MIXED = {"llama", "mistral", "qwen2", "phi3"}

# The optimizer of a step: bf16-true as torchtune runs it
# (torch.optim.AdamW on the bf16 weights); fp32 and LoRA's fp32 adapters
# as measure.py's Recipe.
RECIPES = {"bf16-true": measure.TrueRecipe, "fp32": measure.Recipe,
           "bf16": measure.Recipe, "bf16-mixed": measure.Recipe}


def workload(s, b, prec, attn, ckpt, lora, oib=False):
    w = {"kind": "training", "sequenceLength": s, "microBatch": b,
         "precision": prec, "attention": attn, "gradientCheckpointing": ckpt,
         "activationOffload": True}
    if oib:
        w["optimizerInBackward"] = True
        w["optimizer"] = oib if oib in optim_bwd.BNB else "adamw"
    if lora is not None:
        w.update(method="lora", lora={"rank": measure.RANK, "targets": lora})
    return w


def refused(c, w):
    """The field memfloor's error names for the job of config c and
    workload w, None when it does not refuse it."""
    return hf.refused(c, w, "offload-" + c["model_type"])


def show(fail, name, what, want, got):
    if VERBOSE or fail:
        print("%s%-38s %-12s measured %10d memfloor %10d %+7.3f%%" %
              ("FAIL " if fail else "", name, what, want, got,
               100 * (got - want) / want))


def compare(errors, name, bucket, want, got):
    err = (got - want) / want
    errors.append((name, bucket, err, abs(err) > TOLERANCE))
    show(abs(err) > TOLERANCE, name, bucket, want, got)


def check_peak(errors, name, peak, per_gpu):
    """The step's peak against perGpuBytes: above it is a failure."""
    short = peak > per_gpu
    errors.append((name, "peak", (per_gpu - peak) / peak, short))
    show(short, name, "peak", peak, per_gpu)


def measure_run(subj, prec, attn, ckpt, ids, labels, oib=None):
    """One step of subj's model under the offloading context: the logits
    bucket's bytes, the layers' most, the host bytes, the peak (of a step
    with the precision's optimizer after backward, or with oib's in
    backward as torchtune runs it, optim_bwd.py) and the layers' and
    outside bytes at each recomputation."""
    step = subj.set(LAYERS, attn, ckpt)
    COPIES.clear()
    if prec == "bf16-mixed":
        for p in subj.model.parameters():
            if p.dim() == 2:
                COPIES.add(tuple(p.shape))
                COPIES.add(tuple(p.shape)[::-1])
    with device_sim():
        ctx = offload_context(subj.base)
        skip = {p.untyped_storage().data_ptr()
                for p in subj.model.parameters()}
        skip |= {ids.untyped_storage().data_ptr(),
                 labels.untyped_storage().data_ptr()}
        meter = Meter(Step(subj, ctx, prec), ctx, skip)
        loss, outside, host = meter.forward(ids, labels)
        meter.backward(loss)
        del loss
        for p in subj.model.parameters():
            p.grad = None
        step = Step(subj, offload_context(subj.base), prec)
        if oib is None:
            peak = measure.step_peak(step, ids, labels, RECIPES[prec])
        else:
            held, _, tl = optim_bwd.hooked(subj.model, step, ids, labels,
                                           oib)
            peak = held + tl.total[optim_bwd.device_peak(tl, oib)]
    del step
    layers = max((p[0] for p in meter.peaks), default=0)
    return outside, layers, host, peak, meter.peaks


def run_case(i, c, s, b, errors):
    c = dict(c, num_hidden_layers=LAYERS)
    ids, labels = measure.inputs(c, s, b)
    runs = [(prec, "sdpa", None, None) for prec in ("bf16-true", "fp32")]
    if c["model_type"] in MIXED:
        runs.append(("bf16-mixed", "sdpa", None, None))
    runs.append(("bf16-true", "eager", None, None))
    if c["model_type"] in DENSE:
        targets = ("all-linear", "attention")[i % 2]
        runs += [("bf16", "sdpa", targets, None),
                 ("fp32", "sdpa", targets, None)]
    # The optimizer in backward with offloading (torchtune's hooks;
    # optim_bwd.py's optimizers: torch's AdamW, bitsandbytes' 8-bit).
    runs += [(prec, "sdpa", None, impl) for prec in ("bf16-true", "fp32")
             for impl in ("single", "paged-adamw8bit")]
    if ONLY_OIB:
        runs = [r for r in runs if r[3]]
    for prec, attn, lora, oib in runs:
        subj = Subject(c, prec, lora)
        name = "%d %s %s %s%s%s" % (i, c["model_type"], prec, attn,
                                    " lora " + lora if lora else "",
                                    " in backward " + oib if oib else "")
        outside, layers, host, peak, peaks = measure_run(
            subj, prec, attn, True, ids, labels, oib)
        est = measure.estimate(c, workload(s, b, prec, attn, True, lora,
                                           oib))
        got = {x["name"]: x["bytes"] for x in est["buckets"]}
        compare(errors, name, "activations", layers, got["activations"])
        compare(errors, name, "logits", outside, got["logits"])
        check_peak(errors, name, peak, est["perGpuBytes"])
        if VERBOSE:
            print("%-38s host %d bytes; at each recomputation (layers, "
                  "outside): %s" % (name, host, peaks))
        if lora is None and attn == "sdpa" and not oib:
            no_checkpointing(errors, name, subj, c, s, b, prec, ids, labels)


def no_checkpointing(errors, name, subj, c, s, b, prec, ids, labels):
    """Offloading without checkpointing, which torchtune's recipes refuse:
    what it keeps (printed with -v), and memfloor's refusal."""
    outside, _, host, peak, _ = measure_run(subj, prec, "sdpa", False, ids,
                                            labels)
    field = refused(c, workload(s, b, prec, "sdpa", False, None))
    ok = field == "spec.workload.activationOffload"
    errors.append((name, "refused", 0, not ok))
    if VERBOSE or not ok:
        print("%s%-38s without checkpointing the forward leaves %d bytes "
              "on the device, %d on the host, peak %d; memfloor refuses "
              "it naming %s" % ("" if ok else "FAIL ", name, outside, host,
                                peak, field))


def main():
    """offload.py [-v] [INDEX ...]: every case, or those of CASES named."""
    only = set(a for a in sys.argv[1:] if a not in ("-v", "--in-backward"))
    errors = []
    for i, (c, s, b) in enumerate(CASES):
        if not only or str(i) in only:
            run_case(i, c, s, b, errors)
    for bucket in ("activations", "logits"):
        e = [x[2] for x in errors if x[1] == bucket]
        print("offload %-11s: worst error %+.3f%%, mean |error| %.3f%% "
              "(%d cases)" % (bucket, 100 * max(e, key=abs),
                              100 * sum(abs(x) for x in e) / len(e), len(e)))
    e = [x[2] for x in errors if x[1] == "peak"]
    print("offload peak: estimate above the measured peak by %+.1f%% to "
          "%+.1f%% (%d cases)" % (100 * min(e), 100 * max(e), len(e)))
    failed = sum(1 for x in errors if x[3])
    print("offload harness: %d checks, %d failed" % (len(errors), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
