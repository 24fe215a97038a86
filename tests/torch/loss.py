#!/usr/bin/env python3
"""A chunked loss (design 19, `loss: chunked`) as torchtune runs it, against
memfloor's estimate.

torchtune 0.6.1 (the recipes' _loss_step, modules/transformer.py
chunked_output, modules/loss/ce_chunked_output_loss.py): the decoder's final
norm, then its output cut along the sequence by torch.chunk into lossChunks
pieces, each through the output projection in the model's dtype, the list
returned; the labels shifted by one with an ignored label at the end
(torch.hstack with the recipe's ignore_labels_cache);
CEWithChunkedOutputLoss cuts the labels the same way and upcasts each
piece to fp32 alone for cross_entropy (sum, then divided by the tokens
counted); the recipe deletes the logits before backward.  Here the decoder
is transformers' model of each case (tests/torch/hf.py, the same models as
measure.py), its lm_head run by torchtune's own chunked_output and the loss
by CEWithChunkedOutputLoss itself.

For each case it measures, on the CPU with oneDNN off (its bf16 matrix
product allocates a copy of the weight at every call, which a GPU's GEMM
does not):
- saved(L), the bytes one forward leaves held for backward (measure.py's
  saved_bytes: saved_tensors_hooks, distinct storages, parameters out):
  saved(0) is memfloor's `logits`, saved(2) - saved(0) its `activations`
  (LoRA: a frozen model without layers keeps nothing, so the two are
  checked together);
- the moment of the loss the case is built to make the largest, above
  what the other buckets hold, from the profiler's allocator events (every
  allocation and free, in order), phase by phase of a step without the
  optimizer over no layers (one for LoRA, whose frozen model keeps nothing
  without): "forward" the loss's forward (the forward's peak less what it
  leaves held), "backward" one piece's loss backward (the backward's peak
  less what the forward left), "head" the backward of a trained lm_head's
  pieces (the backward's peak less what the forward left, whose saved
  log-softmax is freed by then, and less the head's gradient, the
  gradients bucket's); and that its phase holds that run's peak;
- the peak of a whole step over two layers (forward, loss, backward and
  the optimizer, measure.py's recipes; SGD with momentum as
  torch.optim.SGD runs it one parameter at a time, where the case needs a
  step without temporaries), and for the "forward" and "backward" cases
  the same moment in it, which is that step's peak too (not in the
  "head" cases, whose layers, as wide as the head, hold more in their own
  backward).
It asks memfloor (the command line) for the same job with loss: chunked,
and fails when logits, activations or the transient are off by more than
2% (where lossChunks does not divide s, when the transient is below the
moment: memfloor counts the largest piece), when the moment is not its
run's peak, or when the step's peak is above perGpuBytes.
loss.py [-v] [INDEX ...]: every case, or those named; -v prints every
check.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402  (hf first, then torch; the harness's setup)
from measure import cfg  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from torchtune.modules.loss import CEWithChunkedOutputLoss  # noqa: E402
from torchtune.modules.transformer import TransformerDecoder  # noqa: E402

TOLERANCE = measure.TOLERANCE
VERBOSE = "-v" in sys.argv


class Head:
    """What torchtune's TransformerDecoder.chunked_output reads of its
    decoder: the output projection and the number of pieces."""

    def __init__(self, output, chunks):
        self.output = output
        self.num_output_chunks = chunks


class ChunkedStep(nn.Module):
    """The loss step of torchtune's recipes over a transformers model:
    the base model (the layers and the final norm), torchtune's
    chunked_output over its lm_head, the labels shifted as the recipe
    shifts them, CEWithChunkedOutputLoss, the logits deleted."""

    def __init__(self, model, chunks, precision):
        super().__init__()
        self.model, self.precision = model, precision
        self.loss_fn = CEWithChunkedOutputLoss(num_output_chunks=chunks)

    def forward(self, ids, labels):
        base = self.model.get_base_model() if hasattr(
            self.model, "get_base_model") else self.model
        head = Head(base.lm_head, self.loss_fn.num_output_chunks)
        with measure.hf.autocast(self.precision):
            h = base.model(input_ids=ids).last_hidden_state
            logits = TransformerDecoder.chunked_output(head, h)
        del h
        ignore = torch.full((labels.shape[0], 1), self.loss_fn.ignore_index)
        labels = torch.hstack((labels[..., 1:], ignore))
        loss = self.loss_fn(logits, labels)
        del logits
        return loss


class SGD:
    """torch.optim.SGD with momentum, one parameter at a time (no
    temporaries: the momentum and the weight updated in place), its
    momentum buffers made before the step is measured."""

    def __init__(self, params):
        self.params = [p for p in params if p.requires_grad]
        self.opt = torch.optim.SGD(self.params, lr=1e-4, momentum=0.9,
                                   foreach=False)
        for p in self.params:
            self.opt.state[p]["momentum_buffer"] = torch.zeros_like(p)

    def held(self):
        return sum(t.numel() * t.element_size()
                   for st in self.opt.state.values() for t in st.values())

    def step(self):
        self.opt.step()


RECIPES = {"adamw": measure.Recipe, "adamw-true": measure.TrueRecipe,
           "sgd": SGD}


def events(fn):
    """The bytes of each allocation (+) and free (-) while fn runs, in
    order."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as p:
        fn()
    ev = [e for e in p.profiler.kineto_results.events()
          if e.name() == "[memory]"]
    return [e.nbytes() for e in sorted(ev, key=lambda e: e.start_ns())]


def phases(step, ids, labels, opt=None):
    """Live bytes, counted from zero before the forward, at the peak and
    at the end of each phase of a step: forward (through the loss),
    backward and, with an optimizer, its step: {phase: (peak, end)}."""
    box, out, live = {}, {}, 0

    def forward():
        box["loss"] = step(ids, labels)

    def backward():
        box.pop("loss").backward()

    todo = [("forward", forward), ("backward", backward)]
    if opt is not None:
        todo.append(("step", opt.step))
    for name, fn in todo:
        peak = live
        for n in events(fn):
            live += n
            peak = max(peak, live)
        out[name] = (peak, live)
    return out


def compare_kept(errors, name, subj, step, ids, labels, got, lora, less=0):
    """What a step keeps with no layers and with two, less bytes the
    harness counts apart, against memfloor's logits and activations (a
    frozen model's together: LoRA keeps nothing without layers)."""
    subj.set(0, "sdpa")
    s0 = kept(subj, step, ids, labels) - less
    subj.set(2, "sdpa")
    s2 = kept(subj, step, ids, labels) - less
    if lora is None:
        compare(errors, name, "logits", s0, got["logits"])
        compare(errors, name, "activations", s2 - s0, got["activations"])
    else:
        compare(errors, name, "activations+logits", s2,
                got["activations"] + got["logits"])


def memfloor(c, s, b, chunks, precision, optimizer, lora, compile=False):
    workload = {"kind": "training", "sequenceLength": s, "microBatch": b,
                "precision": precision, "optimizer": optimizer,
                "loss": "chunked", "lossChunks": chunks}
    if compile:
        workload.update(attention="sdpa", compile=True)
    if lora is not None:
        workload.update(method="lora",
                        lora={"rank": measure.RANK, "targets": lora})
    est = measure.estimate(c, workload)
    return {x["name"]: x["bytes"] for x in est["buckets"]}, est["perGpuBytes"]


# (config, s, b, lossChunks, precision, the harness's optimizer and
# memfloor's, LoRA targets or None, the moment built to be the largest and
# the layers it is measured over).  Large vocabularies and small hidden
# sizes make the loss the step's peak; the "head" cases a wide lm_head,
# few tokens and an optimizer without temporaries.
CASES = [
    (cfg("llama", 64, 4, 2, 176, 8192), 128, 2, 4, "bf16", "adamw",
     "adamw", None, "forward", 0),
    (cfg("qwen2", 64, 4, 1, 160, 6000), 256, 1, 8, "fp32", "adamw",
     "adamw", None, "forward", 0),
    (cfg("phi3", 64, 4, 4, 192, 5000), 100, 2, 5, "bf16-mixed", "adamw",
     "adamw", None, "forward", 0),
    (cfg("mistral", 64, 4, 2, 176, 6144), 64, 2, 8, "bf16", "adamw",
     "adamw", "all-linear", "forward", 1),
    (cfg("llama", 64, 4, 2, 176, 8192), 64, 2, 1, "bf16-true",
     "adamw-true", "adamw", None, "backward", 0),
    (cfg("llama", 512, 8, 2, 704, 2048), 32, 2, 4, "fp32", "sgd", "sgd",
     None, "head", 0),
    (cfg("qwen2", 384, 6, 2, 512, 3000), 48, 1, 3, "bf16-true", "sgd",
     "sgd", None, "head", 0),
    (cfg("llama", 384, 6, 2, 512, 3000), 40, 2, 5, "bf16-mixed", "sgd",
     "sgd", None, "head", 0),
    (cfg("mistral", 384, 6, 2, 512, 3000), 36, 1, 4, "bf16-mixed", "sgd",
     "sgd", None, "head", 0),
    # s not a multiple of lossChunks: the last piece shorter; the estimate
    # counts the largest, and is checked only to be above.
    (cfg("llama", 64, 4, 2, 176, 8192), 300, 1, 8, "bf16", "adamw",
     "adamw", None, "forward", 0),
]


def compare(errors, name, bucket, want, got, above=False):
    err = (got - want) / want
    bad = got < want if above else abs(err) > TOLERANCE
    errors.append((name, bucket, want, got, err, bad))
    if VERBOSE:
        print("%-48s %-22s measured %10d memfloor %10d %+7.3f%%" %
              (name, bucket, want, got, 100 * err))
    if bad:
        print("FAIL %s %s: measured %d, memfloor %d (%+.2f%%)" %
              (name, bucket, want, got, 100 * err))


def kept(subj, step, ids, labels):
    """saved_bytes, less the 16-bit copies of the weights autocast keeps
    under bf16-mixed (the weights bucket's Pc x 2, measure.py's
    autocast_copies)."""
    st = measure.saved_storages(step, ids, labels)
    n = sum(n for n, _ in st.values())
    if step.precision == "bf16-mixed":
        n -= measure.autocast_copies(subj.model, st)
    return n


def moment(ph, phase, head=0):
    """The case's moment of the loss in the phases of a step (phases),
    above what the other buckets hold, and whether its phase holds the
    step's peak."""
    fwd_peak, fwd_end = ph["forward"]
    bwd_peak = ph["backward"][0]
    top = max(ph, key=lambda k: ph[k][0])
    if phase == "forward":
        return fwd_peak - fwd_end, top == "forward"
    return bwd_peak - fwd_end - head, top == "backward"


def transient(subj, step, phase, layers, ids, labels):
    """The case's moment, measured over layers layers (no optimizer)."""
    subj.set(layers, "sdpa")
    for p in subj.model.parameters():
        p.grad = None
    ph = phases(step, ids, labels)
    head = 0
    if phase == "head":
        g = subj.base.lm_head.weight.grad
        head = g.numel() * g.element_size()
    return moment(ph, phase, head)


def run_case(i, case, errors):
    c, s, b, chunks, prec, opt, optimizer, lora, phase, layers = case
    name = "LOSS[%d] %s %s C=%d s=%d b=%d%s" % (
        i, c["model_type"], prec, chunks, s, b,
        " lora" if lora else "")
    ids, labels = measure.inputs(c, s, b)
    subj = measure.Subject(c, prec, lora)
    step = ChunkedStep(subj.model, chunks, prec)
    got, per_gpu = memfloor(c, s, b, chunks, prec, optimizer, lora)
    exact = s % chunks == 0
    with torch.backends.mkldnn.flags(enabled=False):
        compare_kept(errors, name, subj, step, ids, labels, got, lora)
        t, top = transient(subj, step, phase, layers, ids, labels)
        compare(errors, name, "transient (%s)" % phase, t,
                got["transient"], above=not exact)
        peak_phase(errors, name, "its moment the peak, %d layers" % layers,
                   top)
        ph = whole_step(errors, name, subj, step, opt, ids, labels, per_gpu)
        if phase != "head":
            # Over two layers the loss is the whole step's peak too (the
            # head's moment is not: its cases' layers hold more).
            t, top = moment(ph, phase)
            compare(errors, name, "transient, 2-layer step", t,
                    got["transient"], above=not exact)
            peak_phase(errors, name, "its moment the peak, 2 layers", top)


def whole_step(errors, name, subj, step, opt, ids, labels, per_gpu):
    """A whole step over two layers (forward, loss, backward and the
    optimizer opt of RECIPES): checks that its peak, beside the weights,
    the optimizer's state and the inputs, is at most per_gpu, and returns
    its phases."""
    subj.set(2, "sdpa")
    for p in subj.model.parameters():
        p.grad = None
    recipe = RECIPES[opt](subj.model.parameters())
    held = sum(p.numel() * p.element_size()
               for p in subj.model.parameters())
    held += recipe.held() + 2 * ids.numel() * 8
    ph = phases(step, ids, labels, recipe)
    peak = held + max(p for p, _ in ph.values())
    compare(errors, name, "step peak <= perGpu", peak, per_gpu, above=True)
    return ph


def peak_phase(errors, name, what, ok):
    errors.append((name, "peak phase", 1, 1, 0.0, not ok))
    if VERBOSE or not ok:
        print("%s%-48s %s: %s" % ("" if ok else "FAIL ", name, what,
                                  "yes" if ok else "no"))


def report(cases, run_case, tag, what, buckets):
    """Runs every case (or those the command line names) and prints each
    bucket's worst and mean error and the count of checks failed; 1 when
    any failed."""
    only = set(a for a in sys.argv[1:] if a != "-v")
    errors = []
    for i, case in enumerate(cases):
        if not only or str(i) in only:
            run_case(i, case, errors)
    failed = sum(1 for e in errors if e[5])
    for bucket in buckets:
        e = [x[4] for x in errors if x[1].split(" (")[0] == bucket]
        if e:
            print("%s %-22s: worst %+.3f%%, mean |error| %.3f%% (%d)" %
                  (tag, bucket, 100 * max(e, key=abs),
                   100 * sum(abs(x) for x in e) / len(e), len(e)))
    print("torch %s: %d checks, %d failed" % (what, len(errors), failed))
    return 1 if failed else 0


def main():
    return report(CASES, run_case, "LOSS", "chunked loss",
                  ("logits", "activations", "activations+logits",
                   "transient", "transient, 2-layer step",
                   "step peak <= perGpu"))


if __name__ == "__main__":
    sys.exit(main())
