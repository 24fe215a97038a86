#!/usr/bin/env python3
"""Measure 4-bit storage on bitsandbytes' own modules and hold memfloor's
quant.c to it (design 19: QLoRA's frozen base as bitsandbytes stores NF4).

For each case, a transformers model built from a small config (random
weights, bf16: nothing is downloaded) has every linear layer of its
decoder replaced by bitsandbytes' Linear4bit (NF4, blocks of 64, double
quantization: the QLoRA recipe, memfloor's qlora defaults), quantized on
the CPU as bitsandbytes 0.50 does (Params4bit, QuantState).  The bytes
the model then holds are every parameter's storage (the packed uint8
weights, the 16-bit embeddings, norms, biases and lm_head) and every
QuantState tensor (absmax, code, offset, state2.absmax, state2.code).
memfloor is asked (the command line, -o json) for a QLoRA job of the same
config; its weights bucket must equal that exactly.  Mixture-of-experts
models are left out: transformers 5 keeps their experts as fused
parameters, which bitsandbytes' module swap does not reach.

Then the transient a 4-bit matmul makes: one Linear4bit's forward and
backward under the profiler peaks at the 16-bit copy of its weight that
MatMul4Bit dequantizes (2 bytes a weight) with the fp32 absmax that double
quantization dequantizes first (4 bytes a block), beside the input, the
output and their gradients; memfloor's QLoRA transient counts the first
two for the largest linear (est_transient.c, "Qmax x 2 + ceil(Qmax / 64)
x 4").  torchtune's FrozenNF4Linear (torchao's NF4Tensor, qlora.quantizer
torchao) dequantizes in eager steps that are all alive at its last: its
forward and backward peak at 14 bytes a weight and the bf16 absmax of each
block (est_transient.c, "Qmax x 14 + ceil(Qmax / 64) x 2").

Then QLoRA through HF + PEFT with peft.prepare_model_for_kbit_training
(qlora.kbitPrep, design 22) on measure.py's dense FIT shapes: the model
quantized as above, prepared (use_gradient_checkpointing=False: the
manifest states checkpointing apart), LoRA all-linear on top.  It checks
the bytes held (weights, quantization state and the fp32 adapters) against
memfloor's weights + 4T exactly, what one forward keeps for backward
(measure.py's saved_bytes over two layers) against activations + logits
within 2%, and that the peak of a whole step (measure.py's step_peak) is
at or below perGpuBytes.

Then qlora.keepsInput (design 22): bitsandbytes 0.42.0's MatMul4Bit, the
release LitGPT 0.4 pins, also held each 4-bit linear's input for backward
(KeepsInput restores that one line on this release's code).  QLoRA as
LitGPT runs it (bf16-true, no k-bit preparation) on four target lists and
adapter dtypes: what one forward leaves held against activations + logits
within 2%, with 0.42.0's line and without it, and the step's peak with it
at or below perGpuBytes.  Prints a table; exits 1 on a failure.
"""
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import warnings

import torch

warnings.filterwarnings("ignore")
import bitsandbytes as bnb  # noqa: E402
from bitsandbytes.nn import Linear4bit, Params4bit  # noqa: E402
import transformers  # noqa: E402

import dropout  # noqa: E402
import measure  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from measure import peak_of  # noqa: E402  (the profiler's peak)

TOP = os.environ.get("MF_TOP", os.getcwd())
CLI = os.environ.get("MEMFLOOR", os.path.join(TOP, "build/memfloor"))
BLOCK = 64

torch.manual_seed(0)
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
# oneDNN's bf16 matmul on a CPU with AVX-512 BF16 packs its operand into a
# scratch buffer of its own (140,928 bytes for 16 x 512 by 512 x 1024 on an
# EPYC), which a GPU's matmul does not hold: the plain CPU kernel keeps the
# measured transient to bitsandbytes' own tensors on every CPU.
torch.backends.mkldnn.enabled = False


def cfg(model_type, h, a, kv, I, V, L=2, **kw):
    c = {"model_type": model_type, "hidden_size": h, "num_hidden_layers": L,
         "num_attention_heads": a, "num_key_value_heads": kv,
         "intermediate_size": I, "vocab_size": V}
    c.update(kw)
    return c


CASES = [
    cfg("llama", 128, 4, 2, 352, 512),
    cfg("llama", 96, 4, 1, 256, 384, head_dim=32, L=3),
    cfg("mistral", 64, 4, 4, 192, 256),
    cfg("qwen2", 128, 8, 2, 320, 512),
    cfg("phi3", 96, 6, 6, 256, 384, pad_token_id=0, bos_token_id=1,
        eos_token_id=2),
    cfg("gemma2", 64, 2, 1, 256, 512, head_dim=64),
]


def quantize(lin):
    """lin as a Linear4bit of QLoRA's recipe, quantized on the CPU."""
    q = Linear4bit(lin.in_features, lin.out_features,
                   bias=lin.bias is not None, compute_dtype=torch.bfloat16,
                   compress_statistics=True, quant_type="nf4")
    q.weight = Params4bit(lin.weight.data.to(torch.bfloat16),
                          requires_grad=False, compress_statistics=True,
                          quant_type="nf4", blocksize=BLOCK)
    if q.weight.quant_state is None:
        q.weight._quantize("cpu")
    if lin.bias is not None:
        q.bias = torch.nn.Parameter(lin.bias.data, requires_grad=False)
    return q


def swap_linears(module, make=quantize):
    """Every linear under module made 4-bit by make (bitsandbytes'
    Linear4bit by default)."""
    for name, child in module.named_children():
        if isinstance(child, torch.nn.Linear):
            setattr(module, name, make(child))
        else:
            swap_linears(child, make)


def nf4_linear(lin):
    """lin's shape as torchtune's FrozenNF4Linear, as its QLoRA builders
    make it (quantize_base=True: torchao's NF4Tensor, blocks of 64, a bf16
    factor a 256 blocks), random weights."""
    from torchtune.modules.low_precision import FrozenNF4Linear
    return FrozenNF4Linear(lin.in_features, lin.out_features, bias=False,
                           dtype=torch.bfloat16)


def state_tensors(qs):
    out = [qs.absmax, qs.code]
    if qs.offset is not None:
        out.append(qs.offset)
    if qs.state2 is not None:
        out += [qs.state2.absmax, qs.state2.code]
    return [t for t in out if isinstance(t, torch.Tensor)]


def held_bytes(model):
    """Distinct storages of the parameters and buffers that are weights,
    and of every QuantState tensor."""
    seen, total = set(), 0

    def add(t):
        nonlocal total
        key = t.untyped_storage().data_ptr()
        if key not in seen:
            seen.add(key)
            total += t.untyped_storage().nbytes()

    for p in model.parameters():
        add(p)
        qs = getattr(p, "quant_state", None)
        if qs is not None:
            for t in state_tensors(qs):
                add(t)
    return total


def build(c):
    conf = transformers.AutoConfig.for_model(**c)
    model = transformers.AutoModelForCausalLM.from_config(
        conf, dtype=torch.bfloat16)
    for layer in model.model.layers:
        swap_linears(layer)
    return model


def memfloor_weights(c):
    job = {"apiVersion": "memfloor.dev/v1", "kind": "Job",
           "metadata": {"name": "quant-" + c["model_type"]},
           "spec": {"model": {"config": c},
                    "workload": {"method": "qlora", "sequenceLength": 64}}}
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(job, f)
        f.flush()
        r = subprocess.run([CLI, "estimate", f.name, "-o", "json",
                            "--estimator", "pytorch"],
                           capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("memfloor estimate failed: " + r.stdout + r.stderr)
    est = json.loads(r.stdout)
    for b in est["buckets"]:
        if b["name"] == "weights":
            return b["bytes"], est
    sys.exit("no weights bucket: " + r.stdout)


def dequant_transient(o, i, t):
    """The peak of one Linear4bit forward and backward over t tokens, less
    what is alive beside the dequantized weight and its fp32 absmax at that
    moment: the output, 2 bytes an element (the gradient of the sum is an
    expanded scalar, no storage; the input's gradient comes after the
    dequantized copy is freed)."""
    lin = quantize(torch.nn.Linear(i, o, bias=False))
    x = torch.randn(t, i, dtype=torch.bfloat16, requires_grad=True)

    def step():
        lin(x).sum().backward()

    return peak_of(step) - 2 * t * o


def torchao_transient(o, i, t):
    """The same for torchtune's FrozenNF4Linear (torchao's NF4Tensor,
    qlora.quantizer torchao): the peak of its forward and backward over t
    tokens, at the dequantization's last step, before the output is made
    (the backward's dequantization, with the output freed, holds the
    same); the sum's scalar is the few bytes beside it."""
    from torchtune.modules.low_precision import FrozenNF4Linear
    torch.manual_seed(0)
    lin = FrozenNF4Linear(i, o, bias=False, dtype=torch.bfloat16)
    x = torch.randn(t, i, dtype=torch.bfloat16, requires_grad=True)

    def step():
        lin(x).sum().backward()

    return peak_of(step)


def transient_checks(what, measure, formula):
    """The failures of measure(o, i, t), a 4-bit linear's transient, on
    two shapes against formula(n) for its n weights: within 2%, never
    below by more (the sum's scalar is the few bytes left over)."""
    failed = 0
    for o, i, t in ((1024, 512, 16), (384, 640, 8)):
        n = o * i
        want = formula(n)
        got = measure(o, i, t)
        err = (got - want) / want
        print("%5d x %-5d %10d %10d %+7.3f%%" % (o, i, got, want,
                                                  100 * err))
        if abs(err) > 0.02 or got < 0.98 * want:
            failed += 1
            print("FAIL %s %dx%d: measured %d, formula %d" %
                  (what, o, i, got, want))
    return failed


def kbit_model(c):
    """c's model with its decoder's linears 4-bit, prepared by PEFT's
    prepare_model_for_kbit_training, LoRA all-linear on top."""
    import hf
    model = hf.build(c, c["num_hidden_layers"], "bf16", "sdpa")
    for layer in hf.decoder_layers(model):
        swap_linears(layer)
    # As transformers marks a model loaded with load_in_4bit.
    model.is_loaded_in_4bit = True
    peft = hf.import_peft()
    model = peft.prepare_model_for_kbit_training(
        model, use_gradient_checkpointing=False)
    return peft.get_peft_model(model, peft.LoraConfig(
        r=measure.RANK, lora_alpha=2 * measure.RANK, lora_dropout=0.0,
        target_modules="all-linear"))


def kbit_cases():
    """(failed, checks) of the kbitPrep cases."""
    import hf
    failed = checks = 0
    print("QLoRA with prepare_model_for_kbit_training: measured vs memfloor")
    for c, s, b in measure.FIT:
        if c["model_type"] not in measure.DENSE:
            continue
        model = kbit_model(c)
        ids, labels = measure.inputs(c, s, b)
        step = hf.Step(model, "bf16")
        est = hf.estimate(c, {"kind": "training", "sequenceLength": s,
                              "microBatch": b, "method": "qlora",
                              "lora": {"rank": measure.RANK},
                              "qlora": {"kbitPrep": True}},
                          "kbit-" + c["model_type"])
        if isinstance(est, str):
            sys.exit(est)
        got = {x["name"]: x["bytes"] for x in est["buckets"]}
        rows = (("weights + 4T", held_bytes(model),
                 got["weights"] + 4 * est["trainableParameters"], 0.0),
                ("activations + logits",
                 measure.saved_bytes(step, ids, labels),
                 got["activations"] + got["logits"], 0.02),
                ("step peak <= perGpuBytes",
                 measure.step_peak(step, ids, labels), est["perGpuBytes"],
                 None))
        f, n = measure.check_rows("%-8s" % c["model_type"], rows)
        failed += f
        checks += n
    return failed, checks


class KeepsInput:
    """bitsandbytes 0.42.0's MatMul4Bit (the release LitGPT 0.4 pins) on
    this release's code: its forward also held the input for backward,
    "ctx.tensors = (A, B)" where this release keeps (None, B)
    (bitsandbytes/autograd/_functions.py; bitsandbytes-foundation/
    bitsandbytes#1270, commit 9e75374, removed the input in 0.43.2).  A
    context in which MatMul4Bit.forward does what 0.42.0's did."""

    def __enter__(self):
        fn = bnb.autograd._functions.MatMul4Bit
        self.forward = fn.forward

        def forward(ctx, A, B, out=None, bias=None, quant_state=None):
            r = self.forward(ctx, A, B, out, bias, quant_state)
            if not ctx.is_empty and any(ctx.needs_input_grad[:2]):
                ctx.tensors = (A, B)
            return r

        fn.forward = staticmethod(forward)
        return self

    def __exit__(self, *exc):
        bnb.autograd._functions.MatMul4Bit.forward = staticmethod(
            self.forward)


def keep_model(c, targets, dtype, dropout):
    """c's model with its decoder's linears 4-bit and LoRA on targets with
    adapters of dtype and that input dropout, as LitGPT runs QLoRA
    (bf16-true, no k-bit preparation)."""
    import hf
    model = hf.build(c, c["num_hidden_layers"], "bf16", "sdpa")
    for layer in hf.decoder_layers(model):
        swap_linears(layer)
    peft = hf.import_peft()
    model = peft.get_peft_model(model, peft.LoraConfig(
        r=measure.RANK, lora_alpha=2 * measure.RANK, lora_dropout=dropout,
        target_modules=targets))
    for n, p in model.named_parameters():
        if "lora_" in n:
            p.data = p.data.to(dtype)
    return model


def keep_cases():
    """(failed, checks) of the keepsInput cases: what one forward leaves
    held (measure.saved_bytes with held: the inputs MatMul4Bit holds are
    no saved tensors the hooks see) against activations + logits within
    2%, with 0.42.0's matmul and with this release's, and the step peak
    with 0.42.0's at or below perGpuBytes."""
    import hf
    failed = checks = 0
    print("QLoRA, qlora.keepsInput: measured vs memfloor")
    # LitGPT's lora_dropout 0.05 on the last: F.dropout as a GPU runs it
    # (tests/torch/dropout.py).
    F.dropout = dropout.native_dropout
    for (c, s, b), targets, dtype, p in (
            (measure.FIT[0], ["q_proj", "v_proj"], "bf16", 0.0),
            (measure.FIT[1], "all-linear", "bf16", 0.0),
            (measure.FIT[2], ["q_proj", "v_proj"], "fp32", 0.0),
            (measure.FIT[3], ["v_proj", "up_proj"], "bf16", 0.0),
            (measure.FIT[0], ["q_proj", "v_proj"], "bf16", 0.05)):
        model = keep_model(c, targets, {"bf16": torch.bfloat16,
                                        "fp32": torch.float32}[dtype], p)
        ids, labels = measure.inputs(c, s, b)
        step = hf.Step(model, "bf16")
        # LitGPT's bf16-true: AdamW on the bf16 adapters, no master copy.
        true = dtype == "bf16"
        recipe = measure.TrueRecipe if true else measure.Recipe
        for keeps in (True, False):
            est = hf.estimate(c, {"kind": "training", "sequenceLength": s,
                                  "microBatch": b, "method": "qlora",
                                  "precision": "bf16-true" if true else "bf16",
                                  "lora": {"rank": measure.RANK,
                                           "targets": targets,
                                           "dtype": dtype, "dropout": p},
                                  "qlora": {"keepsInput": keeps}},
                              "keep-" + c["model_type"])
            if isinstance(est, str):
                sys.exit(est)
            got = {x["name"]: x["bytes"] for x in est["buckets"]}
            with KeepsInput() if keeps else contextlib.nullcontext():
                rows = [("activations + logits",
                         measure.saved_bytes(step, ids, labels, held=True),
                         got["activations"] + got["logits"], 0.02)]
                rows.append(("step peak <= perGpuBytes",
                             measure.step_peak(step, ids, labels, recipe),
                             est["perGpuBytes"], None))
            f, n = measure.check_rows("%-8s %-5s" % (
                c["model_type"], "keeps" if keeps else "drops"), rows)
            failed += f
            checks += n
    return failed, checks


def main():
    failed = 0
    print("NF4 storage (blocks of 64, double quantization): held vs memfloor")
    print("%-8s %12s %12s" % ("arch", "held", "memfloor"))
    for c in CASES:
        held = held_bytes(build(c))
        got, est = memfloor_weights(c)
        print("%-8s %12d %12d" % (c["model_type"], held, got))
        if held != got:
            failed += 1
            print("FAIL %s: held %d, memfloor %d" %
                  (c["model_type"], held, got))
        ws = est.get("weightsStorage", {})
        if ws.get("method") != "nf4" or ws.get("source") != "qlora":
            failed += 1
            print("FAIL %s: weightsStorage %r" % (c["model_type"], ws))
    print("4-bit matmul transient: measured vs 2n + 4 ceil(n / 64)")
    failed += transient_checks("transient", dequant_transient,
                               lambda n: 2 * n + 4 * -(-n // BLOCK))
    print("torchao's dequantization: measured vs 14n + 2 ceil(n / 64)")
    failed += transient_checks("torchao transient", torchao_transient,
                               lambda n: 14 * n + 2 * -(-n // BLOCK))
    total = len(CASES) + 4
    kf, kc = kbit_cases()
    failed += kf
    total += kc
    kf, kc = keep_cases()
    failed += kf
    total += kc
    print("quant harness: %d checks, %d failed" % (total, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
