#!/usr/bin/env python3
"""Measure the loading moment of a QLoRA job (design 22) on the frameworks'
own code and hold memfloor's estimate to it (admission/estimate/est_load.c).

For each case a transformers model is built from a small config (random
weights, bf16: nothing is downloaded) and saved with save_pretrained as
safetensors in a temporary directory.  Under the profiler (measure.py's
peak_of) the harness then runs, unchanged:

- transformers' from_pretrained of it with BitsAndBytesConfig(load_in_4bit,
  nf4, compute dtype bf16, double quantization, the case's quant storage):
  one tensor at a time (core_model_loading.py: on-the-fly quantization
  loads without worker threads), each linear handed to bitsandbytes'
  Params4bit and quantize_4bit;
- PEFT's prepare_model_for_kbit_training on the model loaded so, which
  casts every 16-bit parameter that is not 4-bit to fp32, one at a time;
- for comparison, from_pretrained of the same checkpoint in 16 bits.

What the CPU hides, and how the harness puts it back as a GPU holds it:

- On a GPU the checkpoint is memory-mapped on the host and each tensor
  copied to the device (_materialize_copy's tensor.to(device, dtype)).  On
  the CPU safetensors' mapping is one storage torch's allocator reports,
  and .to("cpu") of a bf16 tensor is no copy at all.  The files are opened
  (and every tensor touched) before the profiler starts, so the mapping
  is host memory the peak leaves out, and _materialize_copy copies each
  tensor, which the peak counts: the GPU's copy.
- bitsandbytes' CPU quantize_4bit (backends/default/ops.py) works through
  full-size fp32 temporaries that the CUDA kernel (backends/cuda/ops.py)
  does not make: the CUDA op allocates the packed output and the fp32
  absmax and nothing else.  The harness registers for the CPU a kernel
  that allocates exactly those two as the CUDA op does and fills them
  with NF4 codes computed in numpy, memory torch's allocator never sees.
  quantize_blockwise (double quantization's second level) is bitsandbytes'
  own CPU kernel, which allocates what the CUDA one does.

Then one weight's quantization alone (Params4bit._quantize as
Bnb4bitQuantize calls it, on the device's copy): what it holds at its peak
beyond what it keeps must be Qmax x 2 + ceil(Qmax / 64) x 8 exactly.

Then torchtune 0.6.1's QLoRA loader (qlora.quantizer torchao, which
framework: torchtune supplies): the model built on the device in bf16
(FrozenNF4Linear quantizes with torchao's to_nf4), then load_state_dict
of a bf16 state dict on the host, the device's copy of each host tensor
made by a clone where to_nf4 takes it; RoPE's cache, a buffer, left out
as memfloor leaves it.  What the largest quantization holds beside the
model must be est_load.c's Qmax x 5 + ceil(Qmax / 64) x 3 +
ceil(Qmax / 16384) x 2 + min(Qmax, 2^20) x 64 + 34 exactly, and the
load's peak at or below memfloor's loading moment (perGpuBytes, the
moment being loading on 8 tokens) and within TOL of it.

memfloor is asked (the command line, -o json) for the QLoRA job of the
same config with kbitPrep; its loading moment is the weights, adapters,
activations, logits, transient and loading buckets per GPU when loading
is the peak (perGpuBytes), else max of the two moments est_load.c writes
(recomputed here from the weights bucket and the shapes).  It fails when
the measured loading moment is above memfloor's, or more than TOL below
it, and when recipe.peakMoment is not what the figures say.  Prints the
table; exits 1 on a failure.
"""
import gc
import os
import sys
import tempfile
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore")
import bitsandbytes as bnb  # noqa: E402
import transformers  # noqa: E402
from transformers import core_model_loading, modeling_utils  # noqa: E402

import hf  # noqa: E402
from measure import peak_of  # noqa: E402

torch.manual_seed(0)
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
torch.backends.mkldnn.enabled = False
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

BLOCK = 64
# The estimate counts every weight as loaded when the largest linear is
# quantized; the loader still has the rest of the last layer (its
# attention's 4-bit projections, its norms) and the final norm to load
# then.  On these models of two or three layers that is up to 6% of the
# moment; on one of 32 layers a fraction of a percent.
TOL = 0.06


# (config, quant storage): a head wide enough that the cast is the moment,
# a small vocabulary where quantizing the MLP is, tied embeddings, and
# FSDP-QLoRA's bf16 storage.
CASES = [
    (hf.config("llama", 128, 4, 2, 352, 2048), torch.uint8),
    (hf.config("llama", 256, 4, 2, 1024, 64, num_hidden_layers=3),
     torch.uint8),
    (hf.config("mistral", 128, 4, 4, 384, 1024), torch.bfloat16),
    (hf.config("qwen2", 128, 8, 2, 320, 1536, tie_word_embeddings=True),
     torch.uint8),
]

# --- the GPU's copy of each checkpoint tensor -------------------------------

_opened = {}


def pre_open(path):
    """safetensors' handle of path, opened (and every tensor touched) now,
    before the profiler runs: the mapping is host memory."""
    from safetensors import safe_open
    f = safe_open(path, framework="pt", device="cpu")
    for k in f.keys():
        f.get_slice(k)[...]
    _opened[path] = f
    return f


class Handle:
    """The pre-opened handle as transformers uses it; closing is left to
    the harness."""

    def __init__(self, f):
        self.f = f

    def keys(self):
        return self.f.keys()

    def get_slice(self, k):
        return self.f.get_slice(k)

    def __exit__(self, *a):
        return False


def safe_open_preopened(path, *a, **kw):
    return Handle(_opened[path])


def materialize_copy(tensor, device=None, dtype=None):
    """_materialize_copy as a GPU runs it: the host tensor copied to the
    device (here: a new tensor of the allocator's) in dtype."""
    t = tensor[...]
    return t.to(dtype=dtype or t.dtype, copy=True)


modeling_utils.safe_open = safe_open_preopened
core_model_loading._materialize_copy = materialize_copy

# --- quantize_4bit as the CUDA op allocates ---------------------------------

NF4 = bnb.functional.get_4bit_type("nf4", device="cpu").numpy().copy()
MID = (NF4[1:] + NF4[:-1]) / 2


def host_floats(A):
    """A's values as numpy float32, without torch's allocator."""
    if A.dtype == torch.float32:
        return A.detach().numpy().reshape(-1)
    bits = A.detach().view(torch.int16).numpy().reshape(-1)
    if A.dtype == torch.float16:
        return bits.view(np.float16).astype(np.float32)
    return (bits.astype(np.int32) << 16).view(np.float32)


def quantize_4bit_cuda_like(A, blocksize, quant_type, quant_storage):
    """bitsandbytes::quantize_4bit as backends/cuda/ops.py allocates it:
    the fp32 absmax and the packed output, nothing else."""
    A = A.contiguous()
    n = A.numel()
    blocks = -(n // -blocksize)
    absmax = torch.empty((blocks,), device=A.device, dtype=torch.float32)
    out = torch.empty(((n + 1) // (quant_storage.itemsize * 2), 1),
                      device=A.device, dtype=quant_storage)
    x = np.zeros(blocks * blocksize, dtype=np.float32)
    x[:n] = host_floats(A)
    x = x.reshape(blocks, blocksize)
    am = np.abs(x).max(axis=1)
    absmax.numpy()[:] = am
    q = np.searchsorted(MID, x / np.maximum(am, 1e-38)[:, None])
    q = q.reshape(-1)[:n + (n % 2)].astype(np.uint8)
    out.view(torch.uint8).numpy().reshape(-1)[:] = (q[::2] << 4) | q[1::2]
    return out, absmax


torch.library.register_kernel("bitsandbytes::quantize_4bit", "cpu",
                              quantize_4bit_cuda_like)
# quantize_blockwise copies its 256-entry map to the device once and
# caches it (functional.py, name2qmap): made here, before any case, so
# that no case counts it and every case counts the same.
bnb.functional.quantize_blockwise(torch.ones(256))
bnb.functional.quantize_4bit(torch.ones(256, dtype=torch.bfloat16),
                             blocksize=BLOCK, compress_statistics=True,
                             quant_type="nf4")


def buffer_bytes(model):
    """RoPE's inv_freq buffers (and any other): not weights, and not in
    memfloor's buckets (4d bytes a model)."""
    return sum(b.untyped_storage().nbytes() for b in model.buffers())

# --- measuring --------------------------------------------------------------


def live_after(fn):
    """(peak, bytes still allocated at the end) of fn under the
    profiler, counted from zero at its start (the garbage of earlier
    cases collected before)."""
    from torch.profiler import profile, ProfilerActivity
    gc.collect()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as p:
        fn()
    live = peak = 0
    for e in sorted((e for e in p.profiler.kineto_results.events()
                     if e.name() == "[memory]"), key=lambda e: e.start_ns()):
        live += e.nbytes()
        peak = max(peak, live)
    return peak, live


def quantize_transient(o, i, storage):
    """What Params4bit._quantize (as Bnb4bitQuantize calls it) holds at
    its peak beyond what it keeps, for an o x i weight copied to the
    device first: measured against Qmax x 2 + ceil(Qmax / 64) x 8."""
    host = torch.randn(o, i, dtype=torch.bfloat16)

    def run():
        t = host.clone()  # the device's copy
        p = bnb.nn.Params4bit(t, requires_grad=False, blocksize=BLOCK,
                              compress_statistics=True, quant_type="nf4",
                              quant_storage=storage)
        del t
        run.kept = p._quantize(host.device)

    peak, left = live_after(run)
    return peak - left


def checkpoint(c):
    conf = transformers.AutoConfig.for_model(**c)
    model = transformers.AutoModelForCausalLM.from_config(
        conf, dtype=torch.bfloat16)
    d = tempfile.mkdtemp(prefix="mf-loading-")
    model.save_pretrained(d)
    pre_open(os.path.join(d, "model.safetensors"))
    return d


def measure_case(c, storage):
    """The peaks of the 4-bit load and of PEFT's cast after it, what
    each left, and the peak of a 16-bit load and what it left; the
    models' buffers left out."""
    d = checkpoint(c)
    qc = transformers.BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4",
        bnb_4bit_compute_dtype=torch.bfloat16,
        bnb_4bit_use_double_quant=True, bnb_4bit_quant_storage=storage)
    held = {}

    def load4():
        held["q"] = transformers.AutoModelForCausalLM.from_pretrained(
            d, dtype=torch.bfloat16, quantization_config=qc,
            device_map={"": "cpu"})

    def prep():
        peft = hf.import_peft()
        peft.prepare_model_for_kbit_training(
            held["q"], use_gradient_checkpointing=False)

    def load16():
        # Without quantization transformers copies with worker threads,
        # whose allocations the profiler does not see; each copy becomes
        # the parameter either way, so one thread holds what they hold.
        os.environ["HF_DEACTIVATE_ASYNC_LOAD"] = "1"
        try:
            held["b"] = transformers.AutoModelForCausalLM.from_pretrained(
                d, dtype=torch.bfloat16, device_map={"": "cpu"})
        finally:
            del os.environ["HF_DEACTIVATE_ASYNC_LOAD"]

    q_peak, q_left = live_after(load4)
    lin = held["q"].model.layers[0].mlp.down_proj
    assert isinstance(lin, bnb.nn.Linear4bit), type(lin)
    p_peak, p_left = live_after(prep)
    qb = buffer_bytes(held["q"])
    b_peak, b_left = live_after(load16)
    bb = buffer_bytes(held["b"])
    return (q_peak - qb, q_left - qb, q_left + p_peak - qb,
            q_left + p_left - qb, b_peak - bb, b_left - bb)


def memfloor(c):
    # PEFT's default targets for Llama's block, on a few tokens: the step
    # holds less than the cast beside the weights where the head is wide.
    est = hf.estimate(c, {"kind": "training", "sequenceLength": 8,
                          "microBatch": 1, "method": "qlora",
                          "gradientCheckpointing": True,
                          "lora": {"rank": 8,
                                   "targets": ["q_proj", "v_proj"]},
                          "qlora": {"kbitPrep": True}},
                      "loading-" + c["model_type"])
    if isinstance(est, str):
        sys.exit(est)
    return est


def moments(c, est):
    """est_load.c's two moments, from the answer's weights bucket and the
    shapes: quantizing the largest linear, and the cast of the largest
    16-bit parameter (V x h)."""
    W = {b["name"]: b["perGpuBytes"] for b in est["buckets"]}["weights"]
    h, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    a = c["num_attention_heads"]
    d = c.get("head_dim", h // a)
    qmax = max(h * I, h * a * d)
    kept = est["parameters"] - pq(c)
    quant = W - 2 * kept + 2 * qmax + 8 * -(-qmax // BLOCK)
    cast = W + 2 * V * h
    return quant, cast


def pq(c):
    h, I, L = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    a, kv = c["num_attention_heads"], c["num_key_value_heads"]
    d = c.get("head_dim", h // a)
    return L * (2 * h * a * d + 2 * h * kv * d + 3 * h * I)


# torchtune's QLoRA loader: (embed, heads, kv heads, MLP, V, layers),
# shapes whose absmax count torchao's 256-scaler block divides.
# The last's MLP is past torchao's CHUNK_SIZE (2^20 weights), whose
# nearest-code search works a chunk at a time.
TUNE = [(256, 4, 2, 1024, 2048, 2), (512, 8, 2, 2048, 512, 2),
        (1024, 8, 2, 2048, 512, 1)]


def torchtune_case(h, a, kv, I, V, L):
    """(build peak, held after it, load peak, held after it, Qmax) of
    torchtune 0.6.1's QLoRA model as lora_finetune_single_device makes it:
    built on the device in bf16 (each FrozenNF4Linear makes its bf16
    weight and quantizes it with torchao's to_nf4), then load_state_dict
    of a bf16 state dict on the host (NF4Tensor's copy_ copies the tensor
    to the device, quantizes it there and copies the result in).  The
    host tensors are made before the profiler runs; the copy to the
    device, a no-op on the CPU, is made by cloning the host tensor as
    to_nf4 takes it."""
    from torchao.dtypes import nf4tensor
    from torchtune.models.llama3._component_builders import lora_llama3
    from torchtune.training import set_default_dtype

    def build():
        with set_default_dtype(torch.bfloat16):
            return lora_llama3(
                lora_attn_modules=["q_proj", "v_proj"],
                apply_lora_to_mlp=False, apply_lora_to_output=False,
                vocab_size=V, num_layers=L, num_heads=a, num_kv_heads=kv,
                embed_dim=h, max_seq_len=256, intermediate_dim=I,
                lora_rank=8, lora_alpha=16, quantize_base=True)

    src = build()
    host = {}
    for k, v in src.state_dict().items():
        if isinstance(v, nf4tensor.NF4Tensor):
            v = v.get_original_weight()
        host[k] = v.detach().to(torch.bfloat16).clone()
    del src
    host_ptrs = {t.untyped_storage().data_ptr() for t in host.values()}
    real = nf4tensor.NF4Tensor.from_tensor.__func__

    def from_tensor(cls, t, *args):
        if t.untyped_storage().data_ptr() in host_ptrs:
            t = t.clone()  # the device's copy of the host tensor
        return real(cls, t, *args)

    held = {}

    def make():
        held["m"] = build()

    def load():
        held["m"].load_state_dict(host, strict=False)

    nf4tensor.NF4Tensor.from_tensor = classmethod(from_tensor)
    try:
        b_peak, b_left = live_after(make)
        l_peak, l_left = live_after(load)
    finally:
        nf4tensor.NF4Tensor.from_tensor = classmethod(real)
    qmax = max(h * I, h * a * (h // a))
    # RoPE's cache, made before the layers: not in memfloor's buckets.
    bb = buffer_bytes(held["m"])
    return (b_peak - bb, b_left - bb, b_left + l_peak - bb,
            b_left + l_left - bb, qmax)


def tt_formula(qmax):
    """est_load.c's torchao transient: Qmax x 5 + ceil(Qmax / 64) x 3 +
    ceil(Qmax / 16384) x 2 + min(Qmax, 2^20) x 64 + 34."""
    return (5 * qmax + 3 * -(-qmax // BLOCK) + 2 * -(-qmax // (256 * BLOCK))
            + 64 * min(qmax, 1 << 20) + 34)


def torchtune_checks():
    """torchtune's QLoRA load against memfloor's loading moment for the
    job as torchtune states it (framework: torchtune, so qlora.quantizer
    torchao; [q_proj, v_proj] at rank 8, the model built): (checks,
    failed)."""
    print("torchtune's QLoRA load (bytes): measured vs memfloor")
    print("%-22s %10s %10s %10s %10s %10s %8s %10s %10s" % (
        "h, I, V", "held", "weights+T", "transient", "formula", "measured",
        "", "memfloor", "/ Qmax"))
    checks = failed = 0
    for h, a, kv, I, V, L in TUNE:
        b_peak, b_left, l_peak, l_left, qmax = torchtune_case(
            h, a, kv, I, V, L)
        got = max(b_peak, l_peak)
        t = got - l_left
        c = hf.config("llama", h, a, kv, I, V, num_hidden_layers=L)
        est = hf.estimate(c, {"framework": "torchtune", "kind": "training",
                              "sequenceLength": 8, "microBatch": 1,
                              "method": "qlora",
                              "lora": {"rank": 8,
                                       "targets": ["q_proj", "v_proj"]}},
                          "loading-torchtune")
        if isinstance(est, str):
            sys.exit(est)
        B = {b["name"]: b["perGpuBytes"] for b in est["buckets"]}
        held = B["weights"] + 2 * est["trainableParameters"]
        want = est["perGpuBytes"]
        print("%-22s %10d %10d %10d %10d %10d %+7.2f%% %10d %10.2f" % (
            "%d, %d, %d" % (h, I, V), l_left, held, t, tt_formula(qmax),
            got, 100 * (want - got) / got, want, t / qmax))
        rows = [("peakMoment loading", est["recipe"].get("peakMoment") ==
                 "loading"),
                ("qlora.quantizer from the framework", "qlora.quantizer" in
                 est["recipe"].get("fromFramework", [])),
                ("transient == formula", t == tt_formula(qmax)),
                ("loading <= memfloor within TOL", (1 - TOL) * want <= got
                 <= want)]
        for what, ok in rows:
            checks += 1
            if not ok:
                failed += 1
                print("FAIL torchtune %d, %d, %d %s: measured %d, "
                      "memfloor %d" % (h, I, V, what, got, want))
    return checks, failed


def main():
    failed = checks = 0
    # A first load makes what bitsandbytes and transformers make once a
    # process (16 bytes): left out of every case.
    measure_case(*CASES[0])
    print("QLoRA's loading moment (bytes): measured vs memfloor")
    print("%-8s %-8s %10s %10s %10s %10s %10s %10s %8s %-8s %s" % (
        "arch", "storage", "load 4bit", "held", "cast", "prepared",
        "measured", "memfloor", "", "peak", "16-bit load / P x 2"))
    for c, storage in CASES:
        q_peak, q_left, cast_peak, prepared, b_peak, b_left = \
            measure_case(c, storage)
        est = memfloor(c)
        quant, cast = moments(c, est)
        want = max(quant, cast)
        got = max(q_peak, cast_peak)
        moment = est["recipe"].get("peakMoment")
        step = est["perGpuBytes"] - sum(
            b["perGpuBytes"] for b in est["buckets"] if b["name"] == "loading")
        rows = []
        # The prepared weights: the weights bucket with kbitPrep, exactly.
        W = {b["name"]: b["perGpuBytes"] for b in est["buckets"]}["weights"]
        rows.append(("prepared == weights", prepared, W, 0.0, True))
        rows.append(("loading <= memfloor", got, want, TOL, False))
        rows.append(("load 4bit <= quantizing", q_peak, quant, TOL, False))
        rows.append(("cast <= weights + Xmax x 2", cast_peak, cast, TOL,
                     False))
        rows.append(("perGpuBytes = max(step, loading)",
                     est["perGpuBytes"], max(step, want), 0.0, True))
        rows.append(("peakMoment", moment,
                     "loading" if want > step else "step", None, True))
        print("%-8s %-8s %10d %10d %10d %10d %10d %10d %+7.2f%% %-8s %d / %d"
              % (c["model_type"], str(storage).replace("torch.", ""), q_peak,
                 q_left, cast_peak, prepared, got, want,
                 100 * (want - got) / got, moment, b_peak,
                 2 * est["parameters"]))
        for what, have, limit, tol, exact in rows:
            checks += 1
            if tol is None:
                bad = have != limit
            elif exact:
                bad = have != limit
            else:
                bad = have > limit or have < (1 - tol) * limit
            if bad:
                failed += 1
                print("FAIL %s %s: measured %s, memfloor %s" % (
                    c["model_type"], what, have, limit))
        # The 16-bit load holds the weights, and beside them only RoPE's
        # few hundred bytes of temporaries as its buffers are made.
        checks += 1
        if b_left != 2 * est["parameters"] or b_peak > b_left + 1024:
            failed += 1
            print("FAIL %s 16-bit load: peak %d, held %d, P x 2 %d" % (
                c["model_type"], b_peak, b_left, 2 * est["parameters"]))
    print("quantizing one weight: peak beyond what it keeps, measured vs "
          "Qmax x 2 + ceil(Qmax / 64) x 8")
    for o, i, storage in ((1024, 512, torch.uint8), (384, 640, torch.uint8),
                          (1024, 512, torch.bfloat16)):
        n = o * i
        want = 2 * n + 8 * -(-n // BLOCK)
        got = quantize_transient(o, i, storage)
        checks += 1
        print("%5d x %-5d %-8s %10d %10d" % (
            o, i, str(storage).replace("torch.", ""), got, want))
        if got != want:
            failed += 1
            print("FAIL quantizing %dx%d: measured %d, formula %d" % (
                o, i, got, want))
    c, f = torchtune_checks()
    checks += c
    failed += f
    print("loading harness: %d checks, %d failed" % (checks, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
