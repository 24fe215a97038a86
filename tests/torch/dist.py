#!/usr/bin/env python3
"""Measure what tensor parallel (DTensor) and FSDP (fully_shard) keep on each
rank of a training step, and hold memfloor's per-GPU estimate to it.

Several CPU processes (torch.distributed over gloo, world size 2 and 4) run
transformers' own Llama (LlamaForCausalLM from a small config, random
weights, nothing downloaded) in bf16 with sdpa attention, laid out as
torchtitan 0.3.0 lays out its Llama:

- tensor parallel (torchtitan 0.2.2 models/llama3/infra/parallelize.py,
  apply_tp; 0.3.0 declares the same placements in
  models/common/decoder_sharding.py): the embeddings divided by the
  vocabulary as torchtitan 0.3's Embedding runs them (vocab_parallel
  below), q, k, v, gate and up ColwiseParallel, o and down
  RowwiseParallel, lm_head ColwiseParallel (by the vocabulary); with
  sequence parallel SequenceParallel on every norm and PrepareModuleInput
  gathering the norms' output before attention and the MLP, the
  row-parallel outputs reduce-scattered to Shard(1); with loss parallel
  lm_head's output left Shard(-1) and transformers' loss taken under
  torch's loss_parallel(), as torchtitan 0.2 takes its loss (torchtitan
  0.3 imports triton, which has no CPU build, so its modules do not run
  here);
- FSDP as Hugging Face's FSDP2 wrapping (accelerate) and torchtune make
  it: fully_shard on every decoder layer, then on the model, the root unit
  holding the embeddings, the final norm and lm_head, each with
  reshard_after_forward as the case asks; and a 2-D case, tensor parallel
  inside FSDP; with units "ends" the embeddings and lm_head units of their
  own first, as torchtune 0.6.1's shard_model makes them from
  custom_sharded_layers: ['tok_embeddings', 'output'] (sharding.units
  ends);
- LoRA under FSDP (design 22): PEFT's adapters on the frozen bf16 base,
  each decoder layer a unit with its adapters, as torchtune's distributed
  LoRA recipe and accelerate wrap them;
- FSDP's CPU offload (design 22): FSDP2's CPUOffloadPolicy, torchtune's
  fsdp_cpu_offload, on a simulated device (OffloadSim), on two and four
  ranks and on one.
- compile: True under FSDP: each decoder layer compiled with inductor
  before fully_shard, as torchtune's distributed recipes order
  compile_model and shard_model (its hooks run outside the graphs), full
  fine-tuning, LoRA and CPU offload, each with checkpointing, one step run
  first so that the graphs exist (compile.py's warm).

On every rank it measures:

- the state: the bytes of the rank's parameters (DTensor local shards,
  distinct storages), of its gradients after backward, and of the
  optimizer state the recipe keeps (fp32 master weights and AdamW moments
  of the local shards, 12 bytes an element);
- with tensor parallel, the bytes saved for backward by one training
  forward (saved_tensors_hooks, distinct storages of the local shards,
  parameters out; with checkpointing also the tensors the checkpoints
  hold, as measure.py finds them): a model with no layers gives `logits`,
  two layers less none `activations`, and with checkpointing the
  recomputed layer is one layer measured without it;
- with FSDP, the most fully_shard holds beside the shards at any of its
  steps (see FsdpMeter): unsharded parameters, all-gather outputs,
  unsharded gradients and reduce-scatter inputs;
- the peak of a whole step (forward and loss, backward, AdamW over the
  local shards written as a loop), from the profiler's allocation events
  in order, above the state allocated before; with CPU offload, of
  forward and backward on the simulated device, whose state is the
  host's (the weights, gradients, optimizer and adapters it holds: 0).

Then it asks memfloor (build/memfloor estimate -o json) for the same job,
the config inline, and fails when a bucket's perGpuBytes is more than 2%
off the largest rank's measurement (on one rank, FSDP's buffers when
they are above memfloor's: est_fsdp.c keeps the several-GPU figures as
their bound), or a rank's peak is above the estimate's perGpuBytes.
Prints a table and every error; exits 1 on a failure.  dist.py [NAME ...]
runs only the cases named.
"""
import contextlib
import gc
import json
import os
import re
import socket
import sys
import tempfile
import time
import warnings
import weakref

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.fsdp import (  # noqa: E402
    CPUOffloadPolicy, FSDPModule, fully_shard)
from torch.distributed.fsdp._fully_shard import (  # noqa: E402
    _fsdp_collectives, _fsdp_param, _fsdp_param_group)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.distributed.tensor import (  # noqa: E402
    DTensor, Partial, Replicate, Shard, distribute_tensor)
from torch.distributed.tensor.parallel import (  # noqa: E402
    ColwiseParallel, PrepareModuleInput, RowwiseParallel, SequenceParallel,
    loss_parallel, parallelize_module)
import transformers  # noqa: E402
from torchao.dtypes.nf4tensor import NF4Tensor  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf  # noqa: E402
import quant  # noqa: E402
from measure import Recipe, TrueRecipe, estimate, peak_of  # noqa: E402

transformers.logging.set_verbosity_error()
TOLERANCE = 0.02
# Runs of an offloading case's forward and backward, the least peak kept.
RUNS = 5
# Non-reentrant checkpointing keeps the CPU generator's state, a uint8
# tensor of this many bytes a layer, in host memory on a GPU job too: not
# counted (memfloor counts GPU memory).
RNG_STATE = torch.get_rng_state().numel()


def llama(h, a, kv, I, V, L=2, tied=False):
    return {"model_type": "llama", "hidden_size": h, "num_hidden_layers": L,
            "num_attention_heads": a, "num_key_value_heads": kv,
            "intermediate_size": I, "vocab_size": V,
            "tie_word_embeddings": tied}


# name: (world, tensor, fsdp ranks, sequence parallel, loss parallel,
# checkpointing, reshard after forward, config, s, b[, options: "lora",
# the adapters' dtype; "offload", FSDP's CPUOffloadPolicy]).  Shapes divide by
# the GPUs that split them (FSDP pads each parameter's rows to a multiple
# of its ranks, which memfloor does not count), but for the vocabulary of
# "tp4-uneven", which DTensor splits as torch.chunk does.
CASES = {
    "tp2": (2, 2, 1, 0, 0, 0, 1, llama(128, 4, 2, 384, 1000), 64, 1),
    "tp2-sp-lp": (2, 2, 1, 1, 1, 0, 1, llama(128, 4, 2, 384, 1000), 64, 1),
    "tp2-sp-ckpt": (2, 2, 1, 1, 0, 1, 1, llama(128, 4, 2, 384, 1000), 64,
                    1),
    "tp2-lp-ckpt": (2, 2, 1, 0, 1, 1, 1, llama(96, 4, 2, 256, 800), 96, 1),
    "fsdp2": (2, 1, 2, 0, 0, 0, 1, llama(128, 4, 2, 384, 1000, L=3), 64, 1),
    "fsdp2-keep": (2, 1, 2, 0, 0, 1, 0, llama(128, 4, 2, 384, 1000, L=3),
                   64, 1),
    # A vocabulary wide beside the layers: the root held twice, at the
    # start of forward and the end of backward, is the most.
    "fsdp2-root": (2, 1, 2, 0, 0, 0, 1, llama(64, 4, 2, 128, 4000, L=1),
                   32, 1),
    # Tied: the head's gradient is the embeddings'.
    "fsdp2-tied": (2, 1, 2, 0, 0, 0, 1,
                   llama(128, 4, 2, 384, 1000, L=2, tied=True), 64, 1),
    # A long sequence over a narrow model: the loss's backward is the
    # peak of the step.
    "tp2-lp-loss": (2, 2, 1, 0, 1, 0, 1, llama(64, 4, 2, 128, 4000), 512, 1),
    "tp2-loss": (2, 2, 1, 0, 0, 0, 1, llama(64, 4, 2, 128, 4000), 512, 1),
    # torchtitan's default: per-op checkpointing with sequence parallel.
    "tp2-sp-op": (2, 2, 1, 1, 1, "op", 1, llama(128, 4, 2, 384, 1000), 64,
                  1),
    "tp4-uneven": (4, 4, 1, 1, 1, 0, 1, llama(128, 4, 4, 384, 1002), 64, 1),
    "fsdp4": (4, 1, 4, 0, 0, 0, 1, llama(128, 4, 2, 384, 1000, L=4), 64, 1),
    "fsdp4-keep": (4, 1, 4, 0, 0, 0, 0, llama(128, 4, 2, 384, 1000, L=4),
                   64, 1),
    "tp2-fsdp2": (4, 2, 2, 1, 1, 0, 1, llama(128, 4, 2, 384, 1000, L=3), 64,
                  1),
    # LoRA under FSDP (design 22): PEFT's all-linear adapters on the frozen
    # bf16 base, fp32 (PEFT's) or bf16 (torchtune's, its recipe's AdamW
    # with bf16 moments), every decoder layer a unit with its adapters
    # and the root the rest, as torchtune 0.6.1's shard_model and
    # accelerate's FSDP2 wrapping make them.
    "fsdp2-lora": (2, 1, 2, 0, 0, 0, 1, llama(128, 4, 2, 384, 1000, L=3),
                   64, 1, {"lora": "fp32"}),
    # Two layers: no reduce-scatter input kept beside a layer's gradients
    # while the next layer is prefetched.
    "fsdp2-lora-bf16": (2, 1, 2, 0, 0, 1, 1,
                        llama(128, 4, 2, 384, 1000, L=2), 64, 1,
                        {"lora": "bf16"}),
    # A vocabulary wide beside one layer: the root re-gathered at the
    # start of backward (2R) and, apart, held twice with the layer (2R +
    # Ug) at the start of forward.
    "fsdp2-lora-root": (2, 1, 2, 0, 0, 0, 1,
                        llama(64, 4, 2, 128, 4000, L=1), 32, 1,
                        {"lora": "fp32"}),
    # compile: True under FSDP, each layer compiled before fully_shard, as
    # torchtune's distributed recipes order them, with checkpointing.
    "fsdp2-compile": (2, 1, 2, 0, 0, 1, 1, llama(128, 4, 2, 384, 1000, L=3),
                      64, 1, {"compile": True}),
    "fsdp2-lora-compile": (2, 1, 2, 0, 0, 1, 1,
                           llama(128, 4, 2, 384, 1000, L=3), 64, 1,
                           {"lora": "bf16", "compile": True}),
    "fsdp4-lora": (4, 1, 4, 0, 0, 0, 1, llama(128, 4, 2, 384, 1000, L=4),
                   64, 1, {"lora": "fp32"}),
    "fsdp4-lora-keep": (4, 1, 4, 0, 0, 0, 0,
                        llama(128, 4, 2, 384, 1000, L=4), 64, 1,
                        {"lora": "bf16"}),
    # FSDP's CPU offload (design 22): torchtune's fsdp_cpu_offload, FSDP2's
    # CPUOffloadPolicy, on the simulated device (OffloadSim); on one GPU
    # too, FSDP over a world of one.
    "fsdp2-offload": (2, 1, 2, 0, 0, 0, 1, llama(128, 4, 2, 384, 1000, L=3),
                      64, 1, {"offload": True}),
    "fsdp2-offload-compile": (2, 1, 2, 0, 0, 1, 1,
                              llama(128, 4, 2, 384, 1000, L=3), 64, 1,
                              {"offload": True, "compile": True}),
    "fsdp4-offload-ckpt": (4, 1, 4, 0, 0, 1, 1,
                           llama(128, 4, 2, 384, 1000, L=4), 64, 1,
                           {"offload": True}),
    "fsdp2-offload-root": (2, 1, 2, 0, 0, 0, 1,
                           llama(64, 4, 2, 128, 4000, L=1), 32, 1,
                           {"offload": True}),
    "fsdp2-lora-offload": (2, 1, 2, 0, 0, 0, 1,
                           llama(128, 4, 2, 384, 1000, L=3), 64, 1,
                           {"lora": "fp32", "offload": True}),
    "fsdp1-offload": (1, 1, 1, 0, 0, 0, 1, llama(128, 4, 2, 384, 1000, L=3),
                      64, 1, {"offload": True}),
    # FSDP-QLoRA's 4-bit linears (bitsandbytes' and torchao's) under
    # fully_shard: do they run as they run alone?  torchao's NF4Tensor
    # shards its quantized data, scalers and quantization factors alike
    # (torchao 0.15, dtypes/nf4tensor.py, nf4_split): its factors, one a
    # 64 x 256 weights, divide among the ranks, as a real model's do.
    "fsdp2-qlora": (2, 1, 2, 0, 0, 0, 1, llama(128, 4, 2, 512, 1000, L=2),
                    64, 1, {"runs4bit": True}),
    # torchtune's QLoRA: its 4-bit base (FrozenNF4Linear) under PEFT's
    # bf16 adapters; torchao's factors, one a 64 x 256 weights, divide
    # among the ranks.
    "fsdp2-qlora-tt": (2, 1, 2, 0, 0, 0, 1, llama(256, 4, 2, 512, 1000, L=3),
                       64, 1, {"lora": "bf16", "quant": "torchao"}),
    "fsdp2-qlora-tt-ckpt": (2, 1, 2, 0, 0, 1, 1,
                            llama(256, 4, 2, 512, 1000, L=3), 64, 1,
                            {"lora": "bf16", "quant": "torchao"}),
    "fsdp2-qlora-tt-keep": (2, 1, 2, 0, 0, 0, 0,
                            llama(256, 4, 2, 512, 1000, L=3), 64, 1,
                            {"lora": "bf16", "quant": "torchao"}),
    "fsdp4-qlora-tt": (4, 1, 4, 0, 0, 1, 1, llama(512, 8, 2, 1024, 1000, L=4),
                       64, 1, {"lora": "bf16", "quant": "torchao"}),
    "fsdp2-qlora-tt-ends": (2, 1, 2, 0, 0, 1, 1,
                            llama(256, 4, 2, 512, 1000, L=3), 64, 1,
                            {"lora": "bf16", "quant": "torchao",
                             "units": "ends"}),
    # accelerate's FSDP-QLoRA: bitsandbytes' Linear4bit, bf16 quant
    # storage, under PEFT's fp32 adapters.
    "fsdp2-qlora-bnb": (2, 1, 2, 0, 0, 0, 1, llama(256, 4, 2, 512, 1000, L=3),
                        64, 1, {"lora": "fp32", "quant": "bitsandbytes"}),
    "fsdp2-qlora-bnb-keep": (2, 1, 2, 0, 0, 1, 0,
                             llama(256, 4, 2, 512, 1000, L=3), 64, 1,
                             {"lora": "fp32", "quant": "bitsandbytes"}),
    "fsdp4-qlora-bnb": (4, 1, 4, 0, 0, 1, 1, llama(512, 8, 2, 1024, 1000, L=4),
                        64, 1, {"lora": "fp32", "quant": "bitsandbytes"}),
    "fsdp2-qlora-bnb-ends": (2, 1, 2, 0, 0, 1, 1,
                             llama(256, 4, 2, 512, 1000, L=3), 64, 1,
                             {"lora": "fp32", "quant": "bitsandbytes",
                              "units": "ends"}),
    "fsdp1-lora-offload": (1, 1, 1, 0, 0, 0, 1,
                           llama(128, 4, 2, 384, 1000, L=3), 64, 1,
                           {"lora": "bf16", "offload": True}),
    # The embeddings and the head units of their own (sharding.units
    # ends): torchtune's custom_sharded_layers: ['tok_embeddings',
    # 'output'], as its 8B_full and 70B_full configs set it.
    "fsdp2-ends": (2, 1, 2, 0, 0, 0, 1, llama(128, 4, 2, 384, 1000, L=3),
                   64, 1, {"units": "ends"}),
    # A vocabulary wide beside one layer: the head's backward the most.
    "fsdp2-ends-root": (2, 1, 2, 0, 0, 0, 1,
                        llama(64, 4, 2, 128, 4000, L=1), 32, 1,
                        {"units": "ends"}),
    "fsdp4-ends": (4, 1, 4, 0, 0, 0, 1, llama(128, 4, 2, 384, 1000, L=4),
                   64, 1, {"units": "ends"}),
    "fsdp4-ends-keep": (4, 1, 4, 0, 0, 0, 0,
                        llama(128, 4, 2, 384, 1000, L=4), 64, 1,
                        {"units": "ends"}),
    "fsdp2-ends-offload": (2, 1, 2, 0, 0, 0, 1,
                           llama(128, 4, 2, 384, 1000, L=3), 64, 1,
                           {"units": "ends", "offload": True}),
    "fsdp2-ends-offload-root": (2, 1, 2, 0, 0, 0, 1,
                                llama(64, 4, 2, 128, 4000, L=1), 32, 1,
                                {"units": "ends", "offload": True}),
    "fsdp4-ends-offload-ckpt": (4, 1, 4, 0, 0, 1, 1,
                                llama(128, 4, 2, 384, 1000, L=4), 64, 1,
                                {"units": "ends", "offload": True}),
    "fsdp2-lora-ends": (2, 1, 2, 0, 0, 0, 1,
                        llama(128, 4, 2, 384, 1000, L=3), 64, 1,
                        {"lora": "fp32", "units": "ends"}),
    "fsdp2-lora-ends-root": (2, 1, 2, 0, 0, 0, 1,
                             llama(64, 4, 2, 128, 4000, L=1), 32, 1,
                             {"lora": "fp32", "units": "ends"}),
    "fsdp1-ends-offload": (1, 1, 1, 0, 0, 0, 1,
                           llama(128, 4, 2, 384, 1000, L=3), 64, 1,
                           {"units": "ends", "offload": True}),
    "fsdp4-lora-ends-offload": (4, 1, 4, 0, 0, 0, 1,
                                llama(128, 4, 2, 384, 1000, L=4), 64, 1,
                                {"lora": "bf16", "units": "ends",
                                 "offload": True}),
}
# LoRA's rank in the LoRA cases (PEFT's all-linear targets).
LORA_RANK = 8


def lora_of(case):
    """The adapters' dtype of a LoRA case; None for full fine-tuning."""
    return case[10].get("lora") if len(case) > 10 else None


def quant_of(case):
    """A LoRA case's 4-bit base, by qlora.quantizer: "torchao"
    (torchtune's FrozenNF4Linear on every decoder linear) or
    "bitsandbytes" (accelerate's FSDP-QLoRA); None for a 16-bit base."""
    return case[10].get("quant") if len(case) > 10 else None


def units_of(case):
    """A case's FSDP units: "ends" (the embeddings and the head units of
    their own), "model" (the root holds them) otherwise."""
    return case[10].get("units", "model") if len(case) > 10 else "model"


def compile_of(case):
    """Whether case compiles each decoder layer (torchtune's compile:
    True, training/_compile.py compile_model: before shard_model)."""
    return len(case) > 10 and case[10].get("compile", False)


def offload_of(case):
    """Whether case runs FSDP with CPUOffloadPolicy."""
    return len(case) > 10 and case[10].get("offload", False)


# --- measuring --------------------------------------------------------------

def local(t):
    """A DTensor's local shard; any other tensor itself."""
    return t._local_tensor if isinstance(t, DTensor) else t


def inner(t):
    """The tensors holding t's bytes: a torchao NF4Tensor's codes, absmax,
    factors and code table; any other tensor itself."""
    if isinstance(t, NF4Tensor):
        return [t.quantized_data, t.quantized_scalers, t.quantization_factor,
                t.nf4]
    return [t]


def storages(ts):
    """Bytes of the distinct storages of ts (local shards)."""
    seen = {}
    for t in ts:
        if t is None:
            continue
        for x in inner(local(t)):
            s = x.untyped_storage()
            if s.nbytes() > 0:
                seen[s.data_ptr()] = s.nbytes()
    return sum(seen.values())


class Box:
    """What a pack hook hands autograd; alive while the graph holds it."""
    __slots__ = ("t", "__weakref__")

    def __init__(self, t):
        self.t = t


def tensors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]


def saved_bytes(model, forward):
    """Distinct storages one forward leaves held for backward, parameters
    out: what the graph holds (measure.py's saved_bytes) and what the
    checkpoints hold, the tensors the forward made that are still alive;
    DTensors by their local shards."""
    gc.collect()
    before = {id(t) for t in tensors()}
    skip = {local(p).untyped_storage().data_ptr() for p in model.parameters()}
    boxes = []

    def pack(t):
        b = Box(t)
        boxes.append(weakref.ref(b))
        return b

    def held():
        gc.collect()
        kept = [r().t for r in boxes if r() is not None]
        kept += [t for t in tensors() if id(t) not in before and t is not loss]
        seen = {}
        for t in kept:
            if t.dtype == torch.uint8 and t.numel() == RNG_STATE:
                continue  # the CPU generator's state (below)
            try:
                s = local(t).untyped_storage()
                ptr = s.data_ptr()
            except (RuntimeError, NotImplementedError):
                continue  # no data: a meta or wrapper tensor, not memory
            if ptr not in skip:
                seen[ptr] = max(seen.get(ptr, 0), s.nbytes())
        return sum(seen.values())

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda b: b.t):
        loss = forward()
    # A gloo worker thread drops its reference to a collective's tensors
    # (the all-gathered logits, 128,012 bytes in case tp2) only after the
    # wait on it has returned: counted until then, they are not what
    # backward keeps (the loss's transient counts them where they stay).
    # Read until two readings 50 ms apart agree.
    now = held()
    for _ in range(40):
        time.sleep(0.05)
        last, now = now, held()
        if now == last:
            break
    del loss
    return now


def sac_bytes(ctx):
    """The distinct storages a selective checkpoint's forward context keeps
    of its ops' outputs (measure.py's sac_bytes, of local shards)."""
    ts = []
    for outs in ctx[0].storage.values():
        for out in outs.values():
            for t in out if isinstance(out, (tuple, list)) else (out,):
                t = getattr(t, "val", t)  # checkpoint's _VersionWrapper
                if isinstance(t, torch.Tensor):
                    ts.append(t)
    return storages(ts)


def torchtitan_save_ops(ops=hf.save_ops):
    """torchtitan 0.3.0's save list (hf.save_ops) with the collective it
    names too, the reduce-scatter sequence parallel's row-parallel
    layers make (activation_checkpoint.py, _get_default_save_ops)."""
    return ops() | {torch.ops._c10d_functional.reduce_scatter_tensor.default}


hf.save_ops = torchtitan_save_ops


class FsdpMeter:
    """The bytes fully_shard holds beside the shards, sampled before and
    after each of its steps (a unit's unshard, copy-out, reshard, pre- and
    post-backward, and inside a post-backward after the reduce-scatter's
    copy-in, when the unsharded gradients and their copy are both alive)
    and at every module's forward and backward: each unit's unsharded
    parameters (its all-gather outputs), an all-gather's output in flight
    or kept for the next copy-out, the unsharded gradients, and the
    reduce-scatter inputs kept in flight; and a gradient autograd holds for
    a parameter before it reaches .grad (a tied head's, which waits in
    autograd's input buffer for the embeddings' to be summed with it: see
    watch).  The most at any sample, by the phase of the step it falls in
    (est_fsdp.c): layers, from the end of the first decoder layer's
    pre-forward to the end of the last one's post-forward, and from the
    start of the last one's pre-backward to the end of the first one's
    post-backward, while a layer runs; loss, between the two, while the
    head and the loss run; apart, every other sample (the root's or the
    embeddings' copy-out before the first layer runs, their backward
    after it)."""

    def __init__(self):
        self.groups, self.extra, self.on = [], [], False
        self.most = {}
        self.first = self.last = None
        self.phase = "apart"
        self.flight, self.copies = [], []

    def attach(self, model, compiled=False):
        self.groups, self.phase = [], "apart"
        self.most = {"layers": 0, "loss": 0, "apart": 0}
        self.first = self.last = None
        index = -1
        for name, m in model.named_modules():
            if isinstance(m, FSDPModule):
                at = re.search(r"layers\.(\d+)$", name)
                for g in m._get_fsdp_state()._fsdp_param_groups:
                    if g not in self.groups:
                        self.groups.append(g)
                    if at and int(at.group(1)) == 0:
                        self.first = g
                    if at and int(at.group(1)) > index:
                        index, self.last = int(at.group(1)), g
        for name, m in model.named_modules():
            # Not inside a compiled layer, whose graph they would break.
            if compiled and re.search(r"layers\.\d+\.", name):
                continue
            m.register_forward_pre_hook(lambda *a: self.sample())
            m.register_forward_hook(lambda *a: self.sample())
            if not list(m.children()):
                m.register_full_backward_pre_hook(lambda *a: self.sample())

    def watch(self, loss):
        """Hook every backward node that hands a parameter its gradient,
        to follow that gradient (weakly) until it is summed into .grad
        or dropped."""
        seen, stack, self.flight = set(), [loss.grad_fn], []
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            edges = [i for i, (n, _) in enumerate(node.next_functions)
                     if n is not None and hasattr(n, "variable")]
            if edges:
                node.register_hook(self._follow(edges))
            stack += [n for n, _ in node.next_functions]

    def _follow(self, edges):
        def hook(grad_inputs, grad_outputs):
            self.flight += [weakref.ref(grad_inputs[i]) for i in edges
                            if grad_inputs[i] is not None]
            self.sample()
        return hook

    def begun(self, name, group):
        """FSDP's step name of group is about to run: the last layer's
        pre-backward starts the layers' backward."""
        if name == "pre_backward" and group is self.last:
            self.phase = "layers"

    def ended(self, name, group):
        """FSDP's step name of group has run: the first layer's
        pre-forward starts the layers (its unshard is apart: the root's
        all-gather output lives until that unshard's copy-out,
        FSDPParamGroup.wait_for_unshard, comm_ctx.all_gather_state); the
        last one's post-forward ends them, before the head; the first
        one's post-backward frees the last of the activations."""
        if name == "pre_forward" and group is self.first:
            self.phase = "layers"
        elif name == "post_forward" and group is self.last:
            self.phase = "loss"
        elif name == "post_backward" and group is self.first:
            self.phase = "apart"

    def buffers(self):
        ts, ctx = list(self.extra), None
        ts += [t for t in (r() for r in self.flight) if t is not None]
        # Under CPU offload, the shards copied to the device for an
        # all-gather (OffloadSim), while they live.
        ts += [t for t in (r() for r in self.copies) if t is not None]
        for g in self.groups:
            ctx = g.comm_ctx
            if g._all_gather_result is not None:
                ts.append(g._all_gather_result.all_gather_output)
            for fp in g.fsdp_params:
                ts += fp.all_gather_outputs
                if hasattr(fp, "_unsharded_param"):
                    ts.append(fp._unsharded_param.grad)
                ts.append(fp.unsharded_accumulated_grad)
        if ctx is not None:
            if ctx.all_gather_state is not None:
                ts.append(ctx.all_gather_state.all_gather_result
                          .all_gather_output)
            ts += [st.reduce_scatter_input
                   for st in ctx.reduce_scatter_states]
        return storages(ts)

    def sample(self):
        if self.on:
            self.most[self.phase] = max(self.most[self.phase],
                                        self.buffers())


METER = FsdpMeter()


def _sampled(f, name=None):
    def step(*a, **k):
        METER.sample()
        METER.begun(name, a[0])
        r = f(*a, **k)
        METER.ended(name, a[0])
        METER.sample()
        return r
    return step


for _name in ("unshard", "wait_for_unshard", "reshard", "pre_forward",
              "post_forward", "pre_backward", "post_backward"):
    setattr(_fsdp_param_group.FSDPParamGroup, _name,
            _sampled(getattr(_fsdp_param_group.FSDPParamGroup, _name),
                     _name))
_copy_in = _fsdp_collectives.foreach_reduce_scatter_copy_in


def _copy_in_sampled(grads, rs_input, *a, **k):
    r = _copy_in(grads, rs_input, *a, **k)
    METER.extra = list(grads) + [rs_input]
    METER.sample()
    METER.extra = []
    return r


_fsdp_collectives.foreach_reduce_scatter_copy_in = _copy_in_sampled
_allocate = _fsdp_collectives.DefaultAllocMixin.allocate


def _allocate_sampled(self, *a, **k):
    """An all-gather's output as it is made, beside its inputs (under CPU
    offload the shards' device copies, OffloadSim)."""
    out = _allocate(self, *a, **k)
    METER.extra = [out]
    METER.sample()
    METER.extra = []
    return out


_fsdp_collectives.DefaultAllocMixin.allocate = _allocate_sampled
_all_gather = _fsdp_collectives.DefaultAllGather.__call__


def _all_gather_reaped(self, *a, **k):
    """FSDP's all-gather, then until gloo's worker thread has dropped its
    references to the output (the storage's use count back to what it
    was; saved_bytes waits for gloo the same way): held past its copy-out
    it is an artefact of gloo's threads, a unit's output on top of a
    step's peak in about one run in three."""
    out = k.get("output_tensor", a[0] if a else None)
    ptr = out.untyped_storage()._cdata
    before = torch._C._storage_Use_Count(ptr)
    work = _all_gather(self, *a, **k)
    for _ in range(1000):
        if work is not None or torch._C._storage_Use_Count(ptr) <= before:
            break
        time.sleep(0.001)
    return work


_fsdp_collectives.DefaultAllGather.__call__ = _all_gather_reaped
# On one GPU a unit is copied in parameter by parameter
# (FSDPParamGroup.wait_for_unshard, world size 1): each output made beside
# the parameter's device copy (OffloadSim).
_fsdp_param.FSDPParam.init_all_gather_outputs = _sampled(
    _fsdp_param.FSDPParam.init_all_gather_outputs)
# A copy-out's outputs, each made beside the all-gather's output: after the
# last, the unit is held twice (the root re-gathered at the start of
# backward when it was resharded after forward: est_fsdp.c).
_fsdp_param.FSDPParam.alloc_all_gather_outputs = _sampled(
    _fsdp_param.FSDPParam.alloc_all_gather_outputs)


class TrueLocal(TrueRecipe):
    """torch.optim.AdamW over 16-bit adapters, as torchtune steps a bf16
    model's (measure.py's TrueRecipe): moments in the parameters' dtype,
    no master copy; its state counted by the rank's local shards."""

    def state_bytes(self):
        return storages(t for st in self.opt.state.values()
                        for k, t in st.items() if k != "step")


class OffloadSim:
    """The device of an offloading case, simulated on the CPU as
    offload.py simulates torchtune's activation offloading: torch's
    allocator stands for the GPU's, and what FSDP2's CPUOffloadPolicy puts
    in host memory is numpy memory it never sees.  With offloading (torch
    2.13, _fsdp_param.py and _fsdp_collectives.py) the sharded parameters
    stay on the host (FSDP refuses them elsewhere,
    _validate_cpu_offload_params), and two copies cross: a unit's
    all-gather inputs, each shard copied to the device before the
    all-gather copies it in (FSDPParam.all_gather_inputs,
    .to(self.device)); and each reduce-scattered gradient shard copied to
    the host (foreach_reduce, .to(torch.device("cpu"))), its device
    buffer let go.  On the CPU both .to calls return their input; here the
    first allocates a copy through torch's allocator and the second makes
    a numpy copy, each told by the function it is called from.  The
    optimizer steps the host's shards and gradients: off the device."""

    def __enter__(self):
        def to(t, *a, **k):
            caller = sys._getframe(1).f_code.co_name
            if caller == "all_gather_inputs":
                copy = TENSOR_TO(t, *a, **k).clone()
                METER.copies.append(weakref.ref(copy))
                return copy
            if caller == "foreach_reduce":
                mem = np.empty(t.numel() * t.element_size(), np.uint8)
                host = torch.from_numpy(mem).view(t.dtype).view(t.shape)
                return host.copy_(t)
            return TENSOR_TO(t, *a, **k)
        torch.Tensor.to = to
        return self

    def __exit__(self, *exc):
        # TensorBase's again: torch.Tensor defines no .to of its own.
        del torch.Tensor.to


TENSOR_TO = torch.Tensor.to


def recipe(params, case=None):
    """AdamW as memfloor counts it (measure.py's Recipe) over each rank's
    local shards: fp32 master weights and moments, a loop over
    parameters; fp32 adapters their own master; bf16 adapters as
    TrueLocal steps them."""
    if case is not None and lora_of(case) == "bf16":
        return TrueLocal(params)
    return Recipe(params, view=local)


# --- the layouts ------------------------------------------------------------

def vocab_parallel(embedding, mesh, layout):
    """The embeddings divided by the vocabulary as torchtitan 0.3 runs them
    (models/common/embedding.py, Embedding.forward; Megatron's
    VocabParallelEmbedding is the same lookup): the weight Shard(0), each
    rank looks up the ids in its rows, ceil(V / T) a rank, zeroes the
    others, and the partial sums are reduced into layout (Shard(1) under
    sequence parallel: a reduce-scatter).  The gradient stays the rank's
    rows.  (torch's RowwiseParallel on an embedding, as torchtitan 0.2 ran
    it, gives a Replicate gradient of the whole vocabulary: DTensor's
    embedding_dense_backward has no Shard(0) strategy in torch 2.13.)"""
    V = embedding.num_embeddings
    embedding.weight = nn.Parameter(
        distribute_tensor(embedding.weight.data, mesh, [Shard(0)]))

    def forward(ids):
        w = embedding.weight.to_local()
        start = mesh.get_local_rank() * -(-V // mesh.size())
        inside = (ids >= start) & (ids < start + w.shape[0])
        out = F.embedding((ids - start).clamp(0, w.shape[0] - 1), w)
        out = out * inside.unsqueeze(-1).to(out.dtype)
        return DTensor.from_local(out, mesh, [Partial()]).redistribute(
            mesh, [layout]).to_local()
    embedding.forward = forward


def tp_plan(model, mesh, sp, lp):
    """torchtitan's tensor-parallel plan on transformers' Llama."""
    seq = Shard(1) if sp else Replicate()
    vocab_parallel(model.model.embed_tokens, mesh, seq)
    root = {
        "lm_head": ColwiseParallel(input_layouts=seq,
                                   output_layouts=Shard(-1) if lp else
                                   Replicate(), use_local_output=not lp),
    }
    if sp:
        root["model.norm"] = SequenceParallel()
    parallelize_module(model, mesh, root)
    for layer in model.model.layers:
        plan = {
            "self_attn.q_proj": ColwiseParallel(),
            "self_attn.k_proj": ColwiseParallel(),
            "self_attn.v_proj": ColwiseParallel(),
            "self_attn.o_proj": RowwiseParallel(output_layouts=seq),
            "mlp.gate_proj": ColwiseParallel(),
            "mlp.up_proj": ColwiseParallel(),
            "mlp.down_proj": RowwiseParallel(output_layouts=seq),
        }
        if sp:
            plan.update({
                "input_layernorm": SequenceParallel(),
                "post_attention_layernorm": SequenceParallel(),
                "self_attn": PrepareModuleInput(
                    input_kwarg_layouts={"hidden_states": Shard(1)},
                    desired_input_kwarg_layouts={
                        "hidden_states": Replicate()}),
                "mlp": PrepareModuleInput(input_layouts=(Shard(1),),
                                          desired_input_layouts=(
                                              Replicate(),)),
            })
        parallelize_module(layer, mesh, plan)


def build(case, layers, meshes):
    world, tensor, shards, sp, lp, ckpt, raf, c, s, b = case[:10]
    if lora_of(case) is not None:
        return build_lora(case, layers, meshes)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(
        hf.hf_config(dict(c, num_hidden_layers=layers)),
        attn_implementation="sdpa", dtype=torch.bfloat16)
    model.train()
    if ckpt == "op":
        hf.selective(model)
    elif ckpt:
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False})
    if tensor > 1:
        tp_plan(model, meshes["tp"], sp, lp)
    compile_layers(case, model.model.layers)
    if shards > 1 or offload_of(case):
        shard(model, model.model.layers, case, meshes,
              (model.model.embed_tokens, model.lm_head))
    return model


def shard(model, layers, case, meshes, ends=None):
    """fully_shard on each of layers, then on model, as torchtune's
    shard_model calls it: reshard_after_forward as case asks, and with
    CPUOffloadPolicy for an offloading case (pin_memory False: pinning
    needs a GPU; it decides only whether the copies are asynchronous).
    With units "ends", the embeddings and the head (ends: the two
    modules) each a unit of their own first, as torchtune 0.6.1's
    shard_model makes them from custom_sharded_layers: ['tok_embeddings',
    'output'] (get_shard_conditions' names_to_match; shard_model walks
    the modules bottom-up, the head first), the final norm left in the
    root."""
    kw = {"mesh": meshes["dp"], "reshard_after_forward": bool(case[6])}
    if offload_of(case):
        kw["offload_policy"] = CPUOffloadPolicy(pin_memory=False)
    if units_of(case) == "ends":
        fully_shard(ends[1], **kw)
    for layer in layers:
        fully_shard(layer, **kw)
    if units_of(case) == "ends":
        fully_shard(ends[0], **kw)
    fully_shard(model, **kw)


def compile_layers(case, layers):
    """Each decoder layer compiled with inductor where case asks, as
    torchtune's compile_model does before shard_model: fully_shard's
    hooks then run outside the graphs (torch._dynamo.config.
    skip_fsdp_hooks)."""
    if compile_of(case):
        for layer in layers:
            layer.compile(backend="inductor")


def build_lora(case, layers, meshes):
    """PEFT's all-linear LoRA on the bf16 model (hf.build), fully_shard on
    every decoder layer, adapters and all, then on the whole: the units of
    torchtune 0.6.1's shard_model (training/_distributed.py,
    get_shard_conditions: the modules named layers.i, then the model) and
    of accelerate's FSDP2 wrapping of a PEFT model."""
    world, tensor, shards, sp, lp, ckpt, raf, c, s, b = case[:10]
    model = hf.build(c, layers, "bf16", "sdpa", ckpt=bool(ckpt),
                     lora="all-linear", rank=LORA_RANK,
                     lora_dtype=lora_of(case),
                     base=four_bit_base(quant_of(case))
                     if quant_of(case) else None)
    base = model.get_base_model()
    compile_layers(case, base.model.layers)
    shard(model, base.model.layers, case, meshes,
          (base.model.embed_tokens, base.lm_head))
    return model


def forward_of(model, case, ids):
    """One training forward with transformers' own loss (labels shifted
    inside the model, logits.float(), cross_entropy; under loss parallel
    over the logits' Shard(-1) local shards, inside torch's
    loss_parallel()): the loss."""
    def forward():
        # The positions made inside the forward, as transformers makes
        # them when it is not given them (given here: under sequence
        # parallel the embeddings' output is a GPU's part of the sequence).
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        with parallel_loss(case):
            return model(input_ids=ids, labels=ids, position_ids=pos).loss
    return forward


def parallel_loss(case):
    """Where loss parallel's forward and backward run."""
    return loss_parallel() if case[4] else contextlib.nullcontext()


def bnb_linear(lin):
    """lin's shape as bitsandbytes' Linear4bit as accelerate's FSDP-QLoRA
    builds it (NF4, blocks of 64, double quantization, quant_storage
    bfloat16), its Params4bit given the module, as Linear4bit's own
    __init__ gives it (its forward takes the quant_state back from the
    module once fully_shard has made the weight a DTensor: nn/modules.py,
    fix_4bit_weight_quant_state_from_module), quantized on the CPU."""
    import bitsandbytes.nn as bnn
    q = bnn.Linear4bit(lin.in_features, lin.out_features, bias=False,
                       compute_dtype=torch.bfloat16, compress_statistics=True,
                       quant_type="nf4", quant_storage=torch.bfloat16)
    q.weight = bnn.Params4bit(lin.weight.data.to(torch.bfloat16),
                              requires_grad=False, compress_statistics=True,
                              quant_type="nf4", blocksize=64,
                              quant_storage=torch.bfloat16, module=q)
    q.weight._quantize("cpu")
    return q


# The 4-bit linears of FSDP-QLoRA, by qlora.quantizer.
FOUR_BIT = {"bitsandbytes": bnb_linear, "torchao": quant.nf4_linear}


def four_bit_base(quant):
    """A function making every decoder linear of a model quant's 4-bit
    linear (hf.build's base)."""
    def swap(module):
        for name, child in module.named_children():
            if isinstance(child, nn.Linear):
                setattr(module, name, FOUR_BIT[quant](child))
            else:
                swap(child)

    def base(model):
        for layer in model.model.layers:
            swap(layer)
    return base


def quant_state_bytes(model):
    """The bytes of bitsandbytes' quant_states, which each module holds
    whole beside its weight's shard."""
    ts = []
    for m in model.modules():
        qs = getattr(m, "quant_state", None)
        if qs is not None:
            ts += [qs.absmax, qs.code]
            if qs.state2 is not None:
                ts += [qs.state2.absmax, qs.state2.code]
            if isinstance(qs.offset, torch.Tensor):
                ts.append(qs.offset)
    return storages(ts)


def four_bit_linears(c):
    """Both 4-bit linears, hidden_size to intermediate_size in bf16."""
    torch.manual_seed(0)
    lin = nn.Linear(c["hidden_size"], c["intermediate_size"], bias=False)
    return {name: f(lin) for name, f in FOUR_BIT.items()}


def qlora_runs(case, meshes):
    """Whether each of four_bit_linears runs a forward and backward under
    fully_shard, giving the output it gives unsharded: {name: 1} or
    {name: 0, name + " why": the error}, under "runs"."""
    c, s = case[7], case[8]
    out = {}
    for name, lin in four_bit_linears(c).items():
        x = torch.randn(s, c["hidden_size"], dtype=torch.bfloat16,
                        requires_grad=True)
        try:
            alone = lin(x).detach().clone()
            model = nn.Sequential(lin)
            fully_shard(model, mesh=meshes["dp"])
            y = model(x)
            y.sum().backward()
            out[name] = int(torch.equal(y.detach(), alone))
            if not out[name]:
                out[name + " why"] = "its sharded output differs"
            if name == "bitsandbytes":
                # Its codes are sharded, its quant_state (an absmax a
                # block of 64) is not.
                n = lin.in_features * lin.out_features
                codes = local(lin.weight).untyped_storage().nbytes()
                out["quant_state whole"] = int(
                    lin.quant_state.absmax.numel() * 64 == n and
                    codes * 2 * dist.get_world_size() == n)
        except Exception as e:  # any failure: it does not run
            out[name] = 0
            out[name + " why"] = "%s: %s" % (type(e).__name__, e)
    return {"runs": out}


def measure_case(case, meshes):
    """What this rank holds of case: a dict of bytes."""
    if len(case) > 10 and case[10].get("runs4bit"):
        return qlora_runs(case, meshes)
    world, tensor, shards, sp, lp, ckpt, raf, c, s, b = case[:10]
    L = c["num_hidden_layers"]
    ids = torch.randint(0, c["vocab_size"], (b, s))
    out = {}
    if tensor > 1 and shards == 1:
        # Without checkpointing: no layers, one, L.
        plain = case[:5] + (0,) + case[6:]
        kept = {}
        for n in (0, 1, L):
            m = build(plain, n, meshes)
            kept[n] = saved_bytes(m, forward_of(m, plain, ids))
        out["logits"] = kept[0]
        out["activations"] = kept[L] - kept[0]
        if ckpt:
            # What the checkpoints hold, and one layer recomputed (less,
            # per op, the outputs its checkpoint hands the recomputation:
            # measure.py's run_op).
            m = build(case, L, meshes)
            layer = (kept[L] - kept[1]) // (L - 1)
            hf.CONTEXTS.clear()
            out["activations"] = (saved_bytes(m, forward_of(m, case, ids)) -
                                  kept[0] + layer)
            if ckpt == "op":
                out["activations"] -= sac_bytes(hf.CONTEXTS[-1])
    if shards > 1 or offload_of(case):
        # fully_shard's buffers over a step of their own, so that the
        # meter's hooks stay out of the profiled one.
        model = build(case, L, meshes)
        METER.attach(model, compile_of(case))
        assert METER.first is not None, "no unit named layers.0"
        METER.on = True
        with sim(case):
            step_of(model, recipe(model.parameters(), case), case, ids)()
        METER.on = False
        out["fsdp"] = dict(METER.most)
    if offload_of(case):
        return measure_offload(case, meshes, ids, out)
    model = build(case, L, meshes)
    opt = recipe(model.parameters(), case)
    out["weights"] = storages(model.parameters()) + quant_state_bytes(model)
    out["optimizer"] = opt.state_bytes()
    if compile_of(case):
        warm(model, case, ids)
    # The token ids (transformers' labels are the same tensor).
    held = out["weights"] + out["optimizer"] + ids.numel() * 8
    out["peak"] = held + peak_of(step_of(model, opt, case, ids, out))
    if lora_of(case) is not None:
        # memfloor's adapters: their weights, gradients and optimizer
        # state; its weights the frozen base.
        trained = [p for p in model.parameters() if p.requires_grad]
        out["weights"] = storages(p for p in model.parameters()
                                  if not p.requires_grad) + \
            quant_state_bytes(model)
        out["adapters"] = (storages(trained) + out.pop("gradients") +
                           out.pop("optimizer"))
    return out


def warm(model, case, ids):
    """One forward and backward, so that a compiled layer's graphs exist
    before the step measured (compile.py's warm); fails unless dynamo
    made them."""
    loss = forward_of(model, case, ids)()
    loss.backward()
    del loss
    for p in model.parameters():
        p.grad = None
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    assert graphs > 0, "compile: dynamo made no graph"


def sim(case):
    """The simulated device of an offloading case; nothing otherwise."""
    return OffloadSim() if offload_of(case) else contextlib.nullcontext()


def measure_offload(case, meshes, ids, out):
    """An offloading case's device: the peak of forward and backward on
    the simulated device above the token ids, the only tensor on the
    device before (the weights, gradients and optimizer state are the
    host's: out's weights, gradients, optimizer and adapters are 0, what
    the device holds of them; host what the host holds)."""
    model = build(case, case[7]["num_hidden_layers"], meshes)
    opt = recipe(model.parameters(), case)
    forward = forward_of(model, case, ids)

    def fwd_bwd():
        for p in model.parameters():
            p.grad = None
        loss = forward()
        loss.backward()
        del loss

    if compile_of(case):
        with sim(case):
            warm(model, case, ids)
    with sim(case):
        # The least of RUNS: gloo's threads now and then hold a
        # collective's tensor past its use, which only adds (as
        # _all_gather_reaped's all-gather outputs; fsdp4-offload-ckpt
        # measured 2,647,368 bytes, or 3,019,656 or 3,413,384 with one or
        # two such tensors held, from run to run).
        out["peak"] = ids.numel() * 8 + min(peak_of(fwd_bwd)
                                            for _ in range(RUNS))
        out["host"] = (storages(model.parameters()) + opt.state_bytes() +
                       storages(p.grad for p in model.parameters()))
        opt.step()
    for name in ("weights", "gradients", "optimizer"):
        out[name] = 0
    if lora_of(case) is not None:
        out["adapters"] = 0
        del out["gradients"], out["optimizer"]
    return out


def step_of(model, opt, case, ids, out=None):
    """A whole step of model: forward and loss, backward (the gradients'
    bytes into out), the optimizer."""
    forward = forward_of(model, case, ids)

    def step():
        loss = forward()
        if METER.on:
            METER.watch(loss)
        with parallel_loss(case):
            loss.backward()
        del loss
        if out is not None:
            out["gradients"] = storages(p.grad for p in model.parameters())
        opt.step()
        for p in model.parameters():
            p.grad = None
    return step


def run_rank(rank, world, names, port, path):
    # The profiler's own start and stop lines, and the ranks' warnings, go
    # to a log, which measure_world prints when a rank fails.
    log = os.open(path + ".log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    results = {}
    for name in names:
        case = CASES[name]
        tensor = case[1]
        mesh = init_device_mesh("cpu", (world // tensor, tensor),
                                mesh_dim_names=("dp", "tp"))
        results[name] = measure_case(case, {"dp": mesh["dp"],
                                            "tp": mesh["tp"]})
    every = [None] * world
    dist.all_gather_object(every, results)
    if rank == 0:
        with open(path, "w") as f:
            json.dump(every, f)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure_world(world, names):
    """Every rank's measurements of the cases names, all of world size
    world: a list by rank of {name: {what: bytes}}."""
    with tempfile.TemporaryDirectory(prefix="mf-dist-") as d:
        path = os.path.join(d, "ranks.json")
        try:
            mp.start_processes(run_rank,
                               args=(world, names, free_port(), path),
                               nprocs=world, start_method="fork")
        except mp.ProcessRaisedException:
            with open(path + ".log") as g:
                sys.stderr.write(g.read()[-4000:])
            raise
        with open(path) as g:
            return json.load(g)


# --- memfloor ---------------------------------------------------------------

def memfloor(case):
    world, tensor, shards, sp, lp, ckpt, raf, c, s, b = case[:10]
    workload = {
        "kind": "training", "sequenceLength": s, "microBatch": b,
        "precision": "bf16", "attention": "sdpa",
        "gradientCheckpointing": ckpt if ckpt == "op" else bool(ckpt),
        "parallelism": {"tensor": tensor, "sequenceParallel": bool(sp),
                        "lossParallel": bool(lp)},
    }
    if shards > 1 or offload_of(case):
        workload["sharding"] = {"gpus": shards,
                                "reshardAfterForward": bool(raf)}
    if offload_of(case):
        workload["sharding"]["cpuOffload"] = True
    if units_of(case) != "model":
        workload["sharding"]["units"] = units_of(case)
    if compile_of(case):
        workload["compile"] = True
    if lora_of(case) is not None:
        workload.update(method="lora", lora={
            "rank": LORA_RANK, "targets": "all-linear",
            "dtype": lora_of(case)})
    if quant_of(case):
        workload.update(method="qlora", qlora={"quantizer": quant_of(case)})
    est = estimate(c, workload)
    buckets = {x["name"]: x["perGpuBytes"] for x in est["buckets"]}
    # The two candidates of the transient that FSDP's formula names where
    # it tells the step's phases apart.
    for x in est["buckets"]:
        if "lossTransient" in x:
            buckets.update(lossTransient=x["lossTransient"],
                           layerTransient=x["layerTransient"])
    return buckets, est["perGpuBytes"]


BUCKETS = ("weights", "gradients", "optimizer", "adapters", "activations",
           "logits", "shardingBuffers")


def refused(case):
    """The field memfloor's error names for case as a QLoRA job, None
    when it does not refuse it."""
    return hf.refused(case[7], {
        "kind": "training", "method": "qlora", "sequenceLength": case[8],
        "sharding": {"gpus": case[2]}}, "dist-qlora")


def check_qlora(name, ranks, rows, errors):
    """FSDP-QLoRA's 4-bit linears: both frameworks' run under fully_shard,
    as they run unsharded, on every rank; bitsandbytes' keeps its
    quant_state whole beside its sharded codes, as memfloor counts it
    (est_state.c), and memfloor estimates a QLoRA job under sharding."""
    field = refused(CASES[name])
    for fw in ("bitsandbytes", "torchao"):
        runs = min(r["runs"][fw] for r in ranks)
        rows.append((name, fw + " runs", runs, int(field is None), 0.0))
        if not runs:
            why = [r["runs"].get(fw + " why") for r in ranks]
            errors.append("FAIL %s: %s's 4-bit linear does not run under "
                          "fully_shard as it runs alone: %s" %
                          (name, fw, next(w for w in why if w)))
    whole = min(r["runs"].get("quant_state whole", 0) for r in ranks)
    rows.append((name, "quant_state whole", whole, 1, 0.0))
    if not whole:
        errors.append("FAIL %s: bitsandbytes' quant_state is not whole "
                      "beside its sharded codes on every rank, as memfloor "
                      "counts it" % name)
    if field is not None:
        errors.append("FAIL %s: memfloor refuses it at %s" % (name, field))


def bounded(case):
    """Whether memfloor's FSDP buffers are case's bound, not its figure:
    on one GPU, and the units ends with the layers kept (est_fsdp.c)."""
    return case[0] == 1 or (units_of(case) == "ends" and not case[6])


def added(case, most, got):
    """What the buffers measured at each phase of the step add to its
    peak (est_fsdp.c), beside memfloor's activations, logits and
    transient, which the harnesses of those buckets measure: at the loss,
    beyond the step's transient less the loss's; in the layers, beyond
    the step's transient less a layer's; apart from the activations,
    beyond all three.  Unphased (on one GPU, or with the layers kept after
    forward), every moment beside the activations counts with the step's
    transient."""
    act, logits, transient = (got.get(b, 0) for b in
                              ("activations", "logits", "transient"))
    less = lambda a, b: max(a - max(b, 0), 0)
    apart = less(most["apart"], act + logits + transient)
    if not (case[6] and case[2] > 1):
        return max(most["loss"], most["layers"], apart)
    return max(less(most["loss"], transient - got["lossTransient"]),
               less(most["layers"], transient - got["layerTransient"]),
               apart)


def check(name, ranks, rows, errors):
    if "runs" in ranks[0]:
        return check_qlora(name, ranks, rows, errors)
    got, per_gpu = memfloor(CASES[name])
    for r in ranks:
        if "fsdp" in r:
            r["shardingBuffers"] = added(CASES[name], r.pop("fsdp"), got)
    for bucket in BUCKETS:
        if bucket not in ranks[0]:
            continue
        want = max(r[bucket] for r in ranks)
        est = got.get(bucket, 0)
        # A bucket the device holds none of (offloaded): exactly none.
        err = (est - want) / want if want else float(est != 0) * 100
        rows.append((name, bucket, want, est, err))
        # FSDP on one GPU, and the units ends with the layers kept: the
        # root unit's figures are their bound (est_fsdp.c).
        if bucket == "shardingBuffers" and bounded(CASES[name]):
            if est < want:
                errors.append("FAIL %s %s: measured %d above memfloor %d" %
                              (name, bucket, want, est))
        elif abs(err) > TOLERANCE:
            errors.append("FAIL %s %s: measured %d, memfloor %d (%+.2f%%)" %
                          (name, bucket, want, est, 100 * err))
    peak = max(r["peak"] for r in ranks)
    rows.append((name, "peak", peak, per_gpu, (per_gpu - peak) / peak))
    if peak > per_gpu:
        errors.append("FAIL %s peak %d above perGpuBytes %d" %
                      (name, peak, per_gpu))


def main():
    names = sys.argv[1:] or list(CASES)
    for n in names:
        if n not in CASES:
            sys.exit("dist.py: no case %s (cases: %s)" %
                     (n, " ".join(CASES)))
    rows, errors = [], []
    for world in sorted({CASES[n][0] for n in names}):
        these = [n for n in names if CASES[n][0] == world]
        every = measure_world(world, these)
        for n in these:
            check(n, [r[n] for r in every], rows, errors)
    print("%-12s %-16s %12s %12s %8s" %
          ("case", "bucket", "measured", "memfloor", "error"))
    for name, bucket, want, est, err in rows:
        print("%-12s %-16s %12d %12d %+7.2f%%" %
              (name, bucket, want, est, 100 * err))
    for e in errors:
        print(e)
    print("dist harness: %d checks, %d failed" % (len(rows), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
