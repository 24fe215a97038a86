#!/usr/bin/env python3
"""make gpu-check: the harness's recipes on a CUDA GPU, measured with the
caching allocator's own counters, against memfloor's estimate per bucket.

For each case (transformers' model built from a config with random
weights, as tests/torch/hf.py builds them, on cuda:0) one training step
is run and measured with torch.cuda.memory_allocated and
max_memory_allocated / max_memory_reserved:

- weights: allocated after the model is moved to the GPU;
- gradients + optimizer: allocated after the optimizer's state is made
  and the gradients of a first step are kept, less the weights;
- activations + logits (+ autocast's weight copies for *-mixed): what one
  forward leaves allocated, the loss's scalar aside;
- peak: max_memory_allocated over a whole second step (forward, backward,
  optimizer step, gradients set to None after it as HF Trainer does), and
  max_memory_reserved beside it: their ratio is what the allocator's
  caching adds on top of the bytes in use.

It asks memfloor (MEMFLOOR, -o json) for the same job and prints measured
against estimated per bucket, the error, and the reserved / allocated
ratio.  It exits 1 when no CUDA GPU is there (saying so), or when a
measured peak is above the estimate's perGpuBytes; errors beyond 2% in a
bucket are printed (marked "!") for the reader: the GPU's kernels are not
the CPU's (design 13, docs/estimators.md).

The python that runs it: a CUDA build of torch, with transformers and peft
importable (make gpu-check uses the system python3 when its torch sees a
GPU, with the harness's virtual environment's packages behind it, else
the environment's own python).  Run alone on the machine: the counters
are the process's, but the sizes are chosen to finish within minutes on
one H100/H200-class GPU.  MF_GPU_CHECK_DEVICE=cpu (gpu.py) runs every
case's code at small sizes on the CPU with the allocator's counters at
zero: a check of the script, not of memory.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

from gpu import CUDA, DEV, NAME, SMALL_SEQ, small  # noqa: E402
import hf  # noqa: E402
from measure import Recipe, TrueRecipe, cfg, estimate, moe  # noqa: E402

TOLERANCE = 0.02


def optimizer_for(precision, params):
    """The AdamW the estimate counts for precision: with an fp32 master
    (bf16, fp16) measure.py's Recipe, one parameter at a time; for the
    others torch.optim.AdamW's single-tensor step on the weights
    themselves (TrueRecipe)."""
    if precision in ("bf16", "fp16"):
        return Recipe(params)
    return TrueRecipe(params)


# (config, s, b, precision, attention, checkpointing, lora): Llama-3-like
# shapes at a width a GPU measures in milliseconds.
CASES = [
    (cfg("llama", 2048, 16, 8, 5632, 32000, num_hidden_layers=4), 2048, 1,
     "bf16", "sdpa", False, None),
    (cfg("llama", 2048, 16, 8, 5632, 32000, num_hidden_layers=4), 2048, 1,
     "bf16", "sdpa", True, None),
    (cfg("llama", 2048, 16, 8, 5632, 32000, num_hidden_layers=4), 2048, 1,
     "bf16", "sdpa", "op", None),
    (cfg("llama", 2048, 16, 8, 5632, 32000, num_hidden_layers=4), 2048, 1,
     "bf16", "sdpa", 2, None),
    (cfg("llama", 2048, 16, 8, 5632, 32000, num_hidden_layers=4), 1024, 2,
     "bf16", "eager", False, None),
    (cfg("llama", 2048, 16, 8, 5632, 32000, num_hidden_layers=4), 2048, 1,
     "bf16-mixed", "sdpa", False, None),
    (cfg("llama", 2048, 16, 8, 5632, 32000, num_hidden_layers=4), 2048, 1,
     "bf16-true", "sdpa", False, None),
    (cfg("llama", 2048, 16, 8, 5632, 32000, num_hidden_layers=4), 2048, 1,
     "bf16", "sdpa", True, "all-linear"),
    (cfg("qwen2", 1536, 12, 2, 8960, 32000, num_hidden_layers=4), 2048, 1,
     "bf16", "sdpa", False, None),
    (cfg("phi3", 2048, 16, 16, 5632, 32064, num_hidden_layers=4), 2048, 1,
     "bf16", "sdpa", False, None),
    # A small vocabulary: the adapter's forward on Phi-3's fused gate_up
    # in the last layer's recomputation is the peak (est_pytorch.c,
    # lora_forward; the CPU's add copies the 16-bit output, a GPU's not).
    (cfg("phi3", 2048, 16, 16, 5632, 2048, num_hidden_layers=4), 2048, 1,
     "bf16", "sdpa", True, "all-linear"),
    (cfg("gemma2", 1536, 8, 4, 6144, 32000, d=192,
         attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
         num_hidden_layers=4), 1024, 1, "bf16", "eager", False, None),
    (moe("mixtral", 1024, 16, 8, 2048, 32000, 8, 2, num_hidden_layers=4),
     2048, 1, "bf16", "sdpa", False, None),
    (moe("qwen2_moe", 1024, 16, 16, 2816, 32000, 8, 2,
         moe_intermediate_size=704, shared_expert_intermediate_size=2816,
         num_hidden_layers=4), 2048, 1, "bf16", "sdpa", False, None),
]


def allocated():
    CUDA.synchronize()
    return CUDA.memory_allocated()


def measure(c, s, b, precision, attention, ckpt, lora):
    """The bytes of one case, by bucket group, as the allocator counts
    them."""
    CUDA.empty_cache()
    CUDA.reset_peak_memory_stats()
    base = allocated()
    model = hf.build(c, c["num_hidden_layers"], precision, attention, ckpt,
                     lora, device=DEV)
    step = hf.Step(model, precision)
    ids = torch.randint(0, c["vocab_size"], (b, s), device=DEV)
    labels = torch.randint(0, c["vocab_size"], (b, s), device=DEV)
    got = {"weights": allocated() - base}
    opt = optimizer_for(precision, model.parameters())
    loss = step(ids, labels)
    loss.backward()
    del loss
    opt.step()
    before = allocated()
    got["gradients+optimizer"] = before - base - got["weights"] - \
        2 * ids.numel() * 8
    for p in model.parameters():
        p.grad = None
    ready = allocated()
    loss = step(ids, labels)
    got["activations+logits"] = allocated() - ready - loss.numel() * 4
    CUDA.reset_peak_memory_stats()
    loss.backward()
    del loss
    opt.step()
    for p in model.parameters():
        p.grad = None
    got["peak"] = CUDA.max_memory_allocated() - base
    got["reserved"] = CUDA.max_memory_reserved()
    got["allocated"] = max(1, CUDA.max_memory_allocated())
    del model, step, opt, ids, labels
    return got


def memfloor(c, s, b, precision, attention, ckpt, lora):
    workload = {"kind": "training", "sequenceLength": s, "microBatch": b,
                "precision": precision, "attention": attention,
                "gradientCheckpointing": ckpt}
    if lora:
        workload.update(method="lora", lora={"rank": 4, "targets": lora})
    est = estimate(c, workload)
    bk = {x["name"]: x["bytes"] for x in est["buckets"]}
    want = {
        "weights": bk.get("weights", 0),
        "gradients+optimizer": bk.get("gradients", 0) +
        bk.get("optimizer", 0) + bk.get("adapters", 0),
        "activations+logits": bk.get("activations", 0) + bk.get("logits", 0),
        "peak": est["perGpuBytes"],
    }
    if precision.endswith("-mixed"):
        # autocast's 16-bit copies (the weights bucket's Pc x 2) exist
        # from the forward to the backward: measured with the forward.
        copies = want["weights"] - 4 * est["parameters"]
        want["weights"] -= copies
        want["activations+logits"] += copies
    return want


def main():
    if DEV == "cuda":
        print("gpu-check on %s (torch %s, CUDA %s)" %
              (NAME, torch.__version__,
               torch.version.cuda))
    else:
        print("gpu-check dry run on the CPU: no memory is measured")
    print("%-52s %-20s %14s %14s %8s" %
          ("case", "bucket", "measured", "memfloor", "error"))
    failed = 0
    start = time.time()
    for c, s, b, prec, attn, ckpt, lora in CASES:
        if DEV != "cuda":
            c, s = small(c), SMALL_SEQ
        name = "%s L%d s%d b%d %s %s ckpt=%s%s" % (
            c["model_type"], c["num_hidden_layers"], s, b, prec, attn, ckpt,
            " lora " + lora if lora else "")
        got = measure(c, s, b, prec, attn, ckpt, lora)
        want = memfloor(c, s, b, prec, attn, ckpt, lora)
        for bucket in ("weights", "gradients+optimizer",
                       "activations+logits", "peak"):
            m, e = got[bucket], want[bucket]
            err = (e - m) / m if m else 0.0
            mark = "!" if bucket != "peak" and abs(err) > TOLERANCE else ""
            if bucket == "peak" and m > e:
                mark, failed = "FAIL", failed + 1
            print("%-52s %-20s %14d %14d %+7.2f%% %s" %
                  (name, bucket, m, e, 100 * err, mark))
        print("%-52s %-20s %14.3f" % (name, "reserved/allocated",
                                      got["reserved"] / got["allocated"]))
    print("gpu-check: %d cases in %.0f s, %d peaks above the estimate" %
          (len(CASES), time.time() - start, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
