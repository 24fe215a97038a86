#!/usr/bin/env python3
"""LitGPT's loss (design 22, `framework: litgpt`) as its fine-tuning loops
run it, against memfloor's estimate.

Lightning-AI/litgpt v0.4.5, v0.4.13 and v0.5.13 (the same lines at the
three tags): litgpt/finetune/lora.py's fit() runs
    logits = model(input_ids, lm_head_chunk_size=128)
    logits[-1] = logits[-1][..., :-1, :]
    loss = chunked_cross_entropy(logits, targets[..., 1:])
    fabric.backward(loss / ...)
and litgpt/finetune/full.py's
    logits = model(input_ids)
    loss = chunked_cross_entropy(logits[..., :-1, :], targets[..., 1:])
with the optimizer's step after; `logits` is the loop's variable, so the
model's output stays alive through backward and the optimizer's step, and
into the next iteration's forward until that forward returns.  The LoRA
model's forward (litgpt/lora.py GPT.forward at v0.4.5 and v0.4.13,
litgpt/model.py GPT.forward at v0.5.13) runs lm_head over pieces of 128
tokens and returns the list.  `model` is Lightning Fabric's _FabricModule
(fabric.setup_module), whose forward returns
precision.convert_output(output) (Lightning-AI/pytorch-lightning 2.3.3,
the lightning==2.3.3 that litgpt v0.4.5 pins, src/lightning/fabric/
wrappers.py _FabricModule.forward); HalfPrecision (bf16-true),
MixedPrecision (bf16-mixed) and BitsandbytesPrecision (QLoRA) all convert
every floating-point output to torch.get_default_dtype(), fp32
(plugins/precision/half.py, amp.py, bitsandbytes.py convert_output;
plugins/precision/utils.py _convert_fp_tensor): the loop's logits are fp32
whatever the precision, made after the 16-bit ones, piece by piece, and
chunked_cross_entropy takes its log-softmax of fp32 pieces.

Here the decoder is transformers' model of each case (tests/torch/hf.py,
random weights; LoRA by PEFT), its final norm's output run through
lm_head as LitGPT runs it, the output converted as Fabric converts it, and
the loss by chunked_cross_entropy itself, copied from the tags below
(LitGPT itself does not install beside the harness's torch).  For each
case it measures, on the CPU with oneDNN off (measure.py):
- what one forward leaves for backward and the loop: the storages saved
  for backward (measure.saved_storages) and those of the output the loop
  holds, over no layers for full training (memfloor's `logits`) and over
  two for LoRA (a frozen model without layers has no backward; checked
  with `activations`, and only to be above under autocast, where memfloor
  counts a LoRA model's activations as fp32); under autocast, LoRA's
  16-bit copies of the frozen head, one a piece, against ceil(s / 128) x
  V x h x 2;
- the loss's two moments, from the profiler's allocator events over two
  iterations without the optimizer (the first's output held into the
  second's forward, as the loop holds it): the first backward's peak
  less what the first forward left (one piece's loss backward, or in
  full training the pieces' gradients gathered beside the slice's
  zeros), and the second forward's cast (its peak less what the first
  backward left and less what the first forward had made beside the held
  output); the larger against memfloor's `transient`;
- the peak of two iterations of a whole step over two layers with the
  optimizer, beside the weights, its state and the batch.
It asks memfloor (the command line, -o json) for the same job with
loss: standard and lossUpcast: output, and fails when logits (with
activations under LoRA), the copies or the transient are off by more than
2%, or the step's peak is above perGpuBytes.
loss16.py [-v] [INDEX ...]: every case, or those named.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402  (hf first, then torch; the harness's setup)
from measure import cfg  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch import Tensor  # noqa: E402
from typing import List, Union  # noqa: E402

import loss as chunked  # noqa: E402  (events, SGD, compare, report)

VERBOSE = "-v" in sys.argv
CHUNK = 128  # lora.py: lm_head_chunk_size=128


# --- Lightning-AI/litgpt v0.4.5, litgpt/utils.py (the same at v0.4.13
# --- and v0.5.13 but for the annotation, `torch.Tensor |
# --- list[torch.Tensor]` at v0.5.13) -------------------------------------
def chunked_cross_entropy(
    logits: Union[torch.Tensor, List[torch.Tensor]],
    targets: torch.Tensor,
    chunk_size: int = 128,
    ignore_index: int = -100,
) -> torch.Tensor:
    # with large max_sequence_lengths, the beginning of `backward` allocates a large memory chunk which can dominate
    # the memory usage in fine-tuning settings with low number of parameters.
    # as a workaround hack, the cross entropy computation is chunked to force it to deallocate on the go, reducing
    # the memory spike's magnitude

    # lm_head was chunked (we are fine-tuning)
    if isinstance(logits, list):
        # don't want to chunk cross entropy
        if chunk_size == 0:
            logits = torch.cat(logits, dim=1)
            logits = logits.reshape(-1, logits.size(-1))
            targets = targets.reshape(-1)
            return torch.nn.functional.cross_entropy(logits, targets, ignore_index=ignore_index)

        # chunk cross entropy
        logit_chunks = [logit_chunk.reshape(-1, logit_chunk.size(-1)) for logit_chunk in logits]
        target_chunks = [target_chunk.reshape(-1) for target_chunk in targets.split(logits[0].size(1), dim=1)]
        loss_chunks = [
            torch.nn.functional.cross_entropy(logit_chunk, target_chunk, ignore_index=ignore_index, reduction="none")
            for logit_chunk, target_chunk in zip(logit_chunks, target_chunks)
        ]
        non_masked_elems = (targets != ignore_index).sum()
        # See [non_masked_elems div note]
        return torch.cat(loss_chunks).sum() / non_masked_elems.maximum(torch.ones_like(non_masked_elems))

    # no chunking at all
    logits = logits.reshape(-1, logits.size(-1))
    targets = targets.reshape(-1)
    if chunk_size == 0:
        return torch.nn.functional.cross_entropy(logits, targets, ignore_index=ignore_index)

    # lm_head wasn't chunked, chunk cross entropy
    logit_chunks = logits.split(chunk_size)
    target_chunks = targets.split(chunk_size)
    loss_chunks = [
        torch.nn.functional.cross_entropy(logit_chunk, target_chunk, ignore_index=ignore_index, reduction="none")
        for logit_chunk, target_chunk in zip(logit_chunks, target_chunks)
    ]
    non_masked_elems = (targets != ignore_index).sum()
    # [non_masked_elems div note]:
    #   max(1, non_masked_elems) would be more ergonomic to avoid a division by zero. However that
    #   results in a python int which is then passed back to torch division. By using the
    #   `x.maximum(torch.ones_like(x))` pattern we avoid a cudaStreamSynchronize.
    return torch.cat(loss_chunks).sum() / non_masked_elems.maximum(torch.ones_like(non_masked_elems))
# --- end of LitGPT's ------------------------------------------------------


# --- Lightning-AI/pytorch-lightning 2.3.3,
# --- src/lightning/fabric/plugins/precision/utils.py ---------------------
def _convert_fp_tensor(tensor: Tensor, dst_type: Union[str, torch.dtype]) -> Tensor:
    return tensor.to(dst_type) if torch.is_floating_point(tensor) else tensor
# --- end of Lightning's ---------------------------------------------------


def convert_output(data):
    """HalfPrecision / MixedPrecision / BitsandbytesPrecision.convert_output
    (2.3.3): apply_to_collection(data, function=_convert_fp_tensor,
    dtype=Tensor, dst_type=torch.get_default_dtype()); on a list,
    lightning_utilities' apply_to_collection builds the new list whole
    before the old one is let go."""
    dst = torch.get_default_dtype()
    if isinstance(data, list):
        return [_convert_fp_tensor(t, dst) for t in data]
    return _convert_fp_tensor(data, dst)


class LitStep(nn.Module):
    """One iteration of LitGPT's fit() over a transformers model: the base
    model's layers and final norm, lm_head as GPT.forward runs it (pieces
    of lm_head_chunk_size tokens for LoRA), Fabric's convert_output, the
    loop's shift and chunked_cross_entropy.  The loop's `logits` is
    self.logits, replaced only when the next forward has returned."""

    def __init__(self, model, precision, pieces):
        super().__init__()
        self.model, self.precision, self.pieces = model, precision, pieces
        self.logits = None

    def forward(self, ids, labels):
        base = self.model.get_base_model() if hasattr(
            self.model, "get_base_model") else self.model
        with measure.hf.autocast(self.precision):
            x = base.model(input_ids=ids).last_hidden_state
            if self.pieces:
                # litgpt v0.4.5 litgpt/lora.py GPT.forward:
                out = [base.lm_head(x_i) for x_i in x.split(CHUNK, dim=1)]
            else:
                out = base.lm_head(x)
        del x
        logits = convert_output(out)
        del out
        self.logits = logits
        if self.pieces:
            # finetune/lora.py: shift the targets such that output n
            # predicts token n+1
            logits[-1] = logits[-1][..., :-1, :]
            return chunked_cross_entropy(logits, labels[..., 1:])
        # finetune/full.py
        return chunked_cross_entropy(logits[..., :-1, :], labels[..., 1:])


def iterations(step, ids, labels, opt, n):
    """Live bytes, counted from zero before the first forward, at the
    peak and at the end of each phase of n iterations of step (forward,
    backward, the optimizer's step): [(phase, peak, end)]."""
    box, out, live = {}, [], 0

    def forward():
        box["loss"] = step(ids, labels)

    def backward():
        box.pop("loss").backward()

    for it in range(n):
        todo = [("forward", forward), ("backward", backward)]
        if opt is not None:
            todo.append(("step", opt.step))
        for name, fn in todo:
            peak = live
            for b in chunked.events(fn):
                live += b
                peak = max(peak, live)
            out.append(("%s%d" % (name, it + 1), peak, live))
    return out


def memfloor(c, s, b, precision, optimizer, lora):
    workload = {"kind": "training", "sequenceLength": s, "microBatch": b,
                "precision": precision, "optimizer": optimizer,
                "loss": "standard", "lossUpcast": "output"}
    if lora is not None:
        workload.update(method="lora",
                        lora={"rank": measure.RANK, "targets": lora})
    est = measure.estimate(c, workload)
    return {x["name"]: x["bytes"] for x in est["buckets"]}, est["perGpuBytes"]


def storages(ts):
    """{address: (bytes, tensor)} of the distinct storages of ts."""
    seen = {}
    for t in ts:
        ptr, n = measure.storage_key(t)
        seen[ptr] = (max(n, seen.get(ptr, (0, None))[0]), t)
    return seen


def kept(subj, step, ids, labels):
    """What one forward leaves for backward and the loop: the storages
    saved for backward (measure.saved_storages) and those of the output
    the loop holds, less the 16-bit copies of the weights autocast keeps
    under bf16-mixed (the weights bucket's, measure.autocast_copies); and
    the bytes of the held output alone."""
    st = measure.saved_storages(step, ids, labels)
    step.copies = sum(n for n, t in st.values()
                      if t.dtype == torch.bfloat16 and
                      t.numel() == subj.base.lm_head.weight.numel())
    out = step.logits if isinstance(step.logits, list) else [step.logits]
    held = storages(out)
    step.logits = None
    n = sum(v[0] for v in st.values())
    n += sum(v[0] for k, v in held.items() if k not in st)
    if step.precision == "bf16-mixed":
        n -= measure.autocast_copies(subj.model, st)
    return n, sum(v[0] for v in held.values())


def moments(ph, held):
    """The loss's two moments in two iterations without the optimizer
    (iterations): one piece's backward or full training's gathering of
    the gradients (the first backward's peak less what the first forward
    left), and the next forward's cast (the second forward's peak less
    what the first backward left and less what the first forward had
    made beside the held output)."""
    (_, f1p, f1e), (_, b1p, b1e), (_, f2p, _), _ = ph
    return b1p - f1e, f2p - b1e - (f1e - held)


# (config, s, b, precision, the harness's optimizer and memfloor's, LoRA
# targets or None, the layers the moments are measured over).  Full runs
# full.py's loop (lm_head whole), LoRA lora.py's (lm_head in pieces of 128
# tokens; a frozen model needs a layer to have a backward).  Large
# vocabularies and small hidden sizes make the loss the transient; s above
# 128 makes several pieces, b = 2 the copies of a non-contiguous slice.
CASES = [
    (cfg("llama", 64, 4, 2, 176, 8192), 512, 1, "bf16-true", "adamw-true",
     "adamw", None, 0),
    (cfg("llama", 64, 4, 2, 176, 8192), 300, 2, "bf16-mixed", "adamw",
     "adamw", None, 0),
    (cfg("qwen2", 64, 4, 1, 160, 6000), 256, 1, "fp32", "adamw", "adamw",
     None, 0),
    (cfg("llama", 64, 4, 2, 176, 8192), 384, 1, "bf16-true", "adamw-true",
     "adamw", ["q_proj", "v_proj"], 2),
    (cfg("mistral", 64, 4, 2, 176, 6144), 300, 2, "bf16-mixed", "adamw",
     "adamw", ["q_proj", "v_proj"], 2),
    (cfg("llama", 64, 4, 2, 176, 8192), 640, 1, "bf16-mixed", "adamw",
     "adamw", ["q_proj", "v_proj"], 2),
    (cfg("phi3", 64, 4, 4, 192, 5000), 100, 2, "bf16-true", "adamw-true",
     "adamw", None, 0),
]


def run_case(i, case, errors):
    c, s, b, prec, opt, optimizer, lora, layers = case
    name = "LIT[%d] %s %s s=%d b=%d%s" % (
        i, c["model_type"], prec, s, b, " lora" if lora else "")
    ids, labels = measure.inputs(c, s, b)
    subj = measure.Subject(c, prec, lora)
    step = LitStep(subj.model, prec, lora is not None)
    got, per_gpu = memfloor(c, s, b, prec, optimizer, lora)
    with torch.backends.mkldnn.flags(enabled=False):
        subj.set(layers, "sdpa")
        n, held = kept(subj, step, ids, labels)
        if lora is None:
            chunked.compare(errors, name, "logits", n, got["logits"])
        else:
            # Under autocast memfloor counts a LoRA model's activations
            # as fp32 (est_pytorch.c, not measured there): above.
            chunked.compare(errors, name, "activations+logits", n,
                            got["activations"] + got["logits"],
                            above=prec == "bf16-mixed")
        if lora is not None and prec == "bf16-mixed":
            # autocast's copies of the frozen head, one a piece: memfloor's
            # weights bucket holds one, its logits the others (hand
            # arithmetic: ceil(s / 128) x V x h x 2).
            w = subj.base.lm_head.weight
            chunked.compare(errors, name, "head copies", step.copies,
                            -(-s // CHUNK) * w.numel() * 2)
        for p in subj.model.parameters():
            p.grad = None
        ph = iterations(step, ids, labels, None, 2)
        step.logits = None
        bwd, nxt = moments(ph, held)
        if VERBOSE:
            print("%-48s moments: backward %d, next forward %d" %
                  (name, bwd, nxt))
        chunked.compare(errors, name, "transient", max(bwd, nxt),
                        got["transient"])
        whole_step(errors, name, subj, step, opt, ids, labels, per_gpu)


def whole_step(errors, name, subj, step, opt, ids, labels, per_gpu):
    """Two iterations of a whole step over two layers with the optimizer
    opt (loss.py's RECIPES), the first one's output held into the second:
    their peak, beside the weights, the optimizer's state and the batch,
    at most per_gpu."""
    subj.set(2, "sdpa")
    for p in subj.model.parameters():
        p.grad = None
    recipe = chunked.RECIPES[opt](subj.model.parameters())
    held = sum(p.numel() * p.element_size()
               for p in subj.model.parameters())
    held += recipe.held() + 2 * ids.numel() * 8
    ph = iterations(step, ids, labels, recipe, 2)
    step.logits = None
    peak = held + max(p for _, p, _ in ph)
    chunked.compare(errors, name, "step peak <= perGpu", peak, per_gpu,
                    above=True)


def main():
    chunked.VERBOSE = VERBOSE
    return chunked.report(CASES, run_case, "LIT", "LitGPT loss",
                          ("logits", "activations+logits", "head copies",
                           "transient",
                           "step peak <= perGpu"))


if __name__ == "__main__":
    sys.exit(main())
