#!/usr/bin/env python3
"""make gpu-check's second part: the hours half on a CUDA GPU.

Llama 3.1 8B (catalog/models, random weights, built on the GPU) trains a
few steps with transformers' own modules, as tests/torch/hf.py builds them
for the memory harness, and torch.optim.AdamW (its foreach step, PyTorch's
default on CUDA): sequence 2,048, micro-batch 1, sdpa.  The steps after
two of warm-up are timed whole (forward, backward, optimizer step, the
gradients set to None), the GPU synchronized before and after.

Beside each, memfloor's modelled step for the same manifest on the same
card of the shipped catalogue (a catalogue of that card alone, its
reference), from the command line (MEMFLOOR admit -o json): the
placement's time.stepSeconds and tokensPerSecond.  It prints both and
modelled / measured, and exits 1 when no card of the catalogue is this
GPU, or when a modelled step is off the measured one by more than a
factor of 2 either way (memfloor models eager PyTorch; docs/time.md).

MF_GPU_CHECK_DEVICE=cpu runs the code at a small size on the CPU, against
the H200's model: a check of the script, not of speed.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import yaml  # noqa: E402

from gpu import CUDA, DEV, NAME, SMALL_SEQ, small  # noqa: E402
import hf  # noqa: E402

TOP = os.environ.get("MF_TOP", os.path.dirname(os.path.dirname(HERE)))
CLI = os.environ.get("MEMFLOOR", os.path.join(TOP, "build/memfloor"))
MODEL = "meta-llama/Llama-3.1-8B"
SEQ = 2048
WARMUP, TIMED = 2, 5

# (name, spec.workload): the manifests of docs/time.md's table, and the
# full fine-tune as it fits one card with torch.optim.AdamW (bf16-true:
# no fp32 master copy), with and without checkpointing.
CASES = [
    ("8B LoRA r16 all-linear, checkpointing",
     {"method": "lora", "lora": {"rank": 16, "targets": "all-linear"},
      "sequenceLength": SEQ, "gradientCheckpointing": True}),
    ("8B full bf16-true, checkpointing",
     {"precision": "bf16-true", "sequenceLength": SEQ,
      "gradientCheckpointing": True}),
    ("8B full bf16-true",
     {"precision": "bf16-true", "sequenceLength": SEQ,
      "gradientCheckpointing": False}),
]


def catalogue():
    """catalog/gpus.yaml holding this GPU's card alone, as its reference:
    the card the driver's name names, as observations are matched to
    cards (store/observe.c), by its nvidia.com/gpu.product label (a space
    written '-') or its dcgmModelName.  The dry run takes the H200's."""
    name = NAME or "NVIDIA H200"
    with open(os.path.join(TOP, "catalog/gpus.yaml")) as f:
        cat = yaml.safe_load(f)
    gpus = [g for g in cat["gpus"]
            if g.get("labels", {}).get("nvidia.com/gpu.product") ==
            name.replace(" ", "-") or g.get("dcgmModelName") == name]
    if not gpus:
        sys.exit("gpu-speed: no card of catalog/gpus.yaml is the %s" % name)
    cat.update(gpus=gpus[:1], reference=gpus[0]["name"])
    return cat


def modelled(cat, workload):
    """memfloor's step seconds, tokens a second and bound for the job on
    the one card of cat."""
    job = {"apiVersion": "memfloor.dev/v1", "kind": "Job",
           "metadata": {"name": "gpu-speed"},
           "spec": {"model": {"name": MODEL}, "workload": workload}}
    with tempfile.TemporaryDirectory() as d:
        paths = [os.path.join(d, n) for n in ("gpus.json", "job.json")]
        for path, doc in zip(paths, (cat, job)):
            with open(path, "w") as f:
                json.dump(doc, f)
        r = subprocess.run([CLI, "admit", paths[1], "-f", paths[0], "-m",
                            os.path.join(TOP, "catalog/models"), "-o",
                            "json"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("memfloor admit failed (%d): %s%s" %
                 (r.returncode, r.stdout, r.stderr))
    p = json.loads(r.stdout)["placement"]
    return p["time"]["stepSeconds"], p["tokensPerSecond"], p["bound"]


def config():
    """Llama 3.1 8B's config and the sequence length; the dry run's at
    its small sizes."""
    with open(os.path.join(TOP, "catalog/models", MODEL + ".json")) as f:
        c = json.load(f)
    return (c, SEQ) if DEV == "cuda" else (small(c), SMALL_SEQ)


def measured(workload):
    """The median seconds of a training step of the workload here, and
    the tokens it trains on."""
    c, s = config()
    lora = workload.get("lora", {})
    precision = workload.get("precision", "bf16")
    with torch.device(DEV):
        model = hf.build(c, c["num_hidden_layers"], precision, "sdpa",
                         workload["gradientCheckpointing"],
                         lora.get("targets"), rank=lora.get("rank", 4),
                         device=DEV)
    step = hf.Step(model, precision)
    opt = torch.optim.AdamW([p for p in model.parameters()
                             if p.requires_grad], lr=1e-5)
    ids = torch.randint(0, c["vocab_size"], (1, s), device=DEV)
    times = []
    for i in range(WARMUP + TIMED):
        CUDA.synchronize()
        t = time.perf_counter()
        step(ids, ids).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        CUDA.synchronize()
        times.append(time.perf_counter() - t)
    del model, step, opt, ids
    CUDA.empty_cache()
    times = sorted(times[WARMUP:])
    return times[len(times) // 2], s


def main():
    cat = catalogue()
    card = cat["reference"]
    print("gpu-speed on %s (catalogue card %s, torch %s)" %
          (NAME or "the CPU",
           card, torch.__version__))
    print("%-40s %12s %12s %10s %10s %8s %s" %
          ("case", "measured s", "modelled s", "meas tok/s", "mod tok/s",
           "mod/meas", "bound"))
    off = 0
    for name, workload in CASES:
        want_s, want_tps, bound = modelled(cat, workload)
        got_s, s = measured(workload)
        ratio = want_s / got_s
        mark = ""
        if DEV == "cuda" and not 0.5 <= ratio <= 2.0:
            mark, off = "OFF", off + 1
        print("%-40s %12.4f %12.4f %10.1f %10.1f %8.2f %s %s" %
              (name, got_s, want_s, s / got_s, want_tps, ratio, bound,
               mark), flush=True)
    print("gpu-speed: %d cases, %d off by more than a factor of 2" %
          (len(CASES), off))
    return 1 if off else 0


if __name__ == "__main__":
    sys.exit(main())
