#!/usr/bin/env python3
"""Measure the activation peak of a serving engine's profile run and hold
memfloor's mf_forward_peak (admission/forward.c) to it.

vLLM sizes its KV cache from what is left after one no-grad forward over
maxNumBatchedTokens tokens, flattened across up to seqs sequences (design
14).  For each case (every block, bf16, shapes chosen so that each phase
of that forward is the peak somewhere: a layer's MLP or experts, its
attention, a norm, the logits) this builds the small model of
tests/torch/blocks.py (blocks.CausalLM: the fused attention kernel's
memory, vLLM's fused MoE buffers) and
measures, with the profiler's memory events as measure.py's peak_of
does, the peak of live tensor bytes of CausalLM.serve over t tokens in
seqs sequences, above the weights and the input ids (allocated before).

fp16 is not measured: its activations have bf16's two bytes and go
through the same kernels.

oneDNN is turned off: its bf16 matrix product on CPU allocates a
reordered copy of the weight through torch's allocator at every call, a
CPU artefact that a GPU's GEMM (its workspace allocated once) does not
have; torch's own bf16 product allocates nothing but its output.

The V0 cases run CausalLM.serve_v0, the profile run of the V0 engine's
releases (serverVersion 0.2.5, 0.2.6, 0.3.0, 0.5.0 and 0.5.5 families:
their sampler sorts the vocabulary; a bf16 gather is run as int16, which a
GPU's kernel matches and the CPU's bf16 one does not, blocks.gather16;
where the peak falls inside a sort, 0.2.5's, the CPU sort's own row is
taken off, sort_workspace), and ask memfloor with that serverVersion.

It then asks memfloor (the command line, MEMFLOOR, -o json) to estimate
an inference job served by vLLM with the same config inline,
maxNumBatchedTokens t and maxNumSeqs seqs (the estimate's forward runs
over min(maxNumSeqs, maxNumBatchedTokens) sequences, here seqs), and
fails when its activations bucket is off by more than 2% or below the
measured peak.  Prints the table and every error; exits 1 on a failure.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blocks  # noqa: E402
from measure import CAP, cfg, estimate, moe, peak_of  # noqa: E402

TOLERANCE = 0.02

torch.manual_seed(0)
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))

# (config, t, seqs, the phase expected to be the peak).
CASES = [
    (cfg("llama", 128, 4, 2, 352, 512), 128, 2, "mlp"),
    (cfg("llama", 96, 4, 1, 256, 384, d=32), 96, 1, "mlp"),
    (cfg("mistral", 64, 4, 4, 192, 256), 128, 1, "mlp"),
    (cfg("qwen2", 128, 8, 2, 320, 512), 128, 2, "mlp"),
    (cfg("phi3", 96, 6, 6, 256, 384), 128, 2, "mlp"),
    (cfg("gemma2", 64, 2, 1, 256, 512, d=64, **CAP), 128, 2, "mlp"),
    (moe("mixtral", 64, 4, 2, 128, 256, 4, 2), 128, 2, "experts"),
    (moe("qwen2_moe", 64, 4, 4, 256, 256, 6, 3, moe_intermediate_size=96,
         shared_expert_intermediate_size=192), 128, 2, "experts"),
    # A narrow MLP: attention, at RoPE of q or of k.
    (cfg("llama", 128, 4, 2, 16, 512), 128, 2, "attention"),
    (cfg("mistral", 64, 4, 4, 16, 256), 128, 1, "attention"),
    (cfg("phi3", 96, 6, 6, 16, 384), 128, 2, "attention"),
    (cfg("gemma2", 64, 2, 1, 16, 512, d=64, **CAP), 128, 2, "attention"),
    # Narrow heads too: a norm.
    (cfg("llama", 128, 2, 1, 16, 512, d=16), 128, 2, "norm"),
    (cfg("gemma2", 128, 2, 1, 16, 512, d=16, **CAP), 128, 2, "norm"),
    # The shared expert's own phase.
    (moe("qwen2_moe", 64, 4, 4, 256, 256, 6, 1, moe_intermediate_size=16,
         shared_expert_intermediate_size=384), 128, 2, "shared"),
    # Many short sequences and a large vocabulary: the logits.
    (cfg("llama", 64, 4, 2, 192, 4096), 64, 16, "logits"),
    (cfg("phi3", 128, 4, 2, 384, 8192), 32, 32, "logits"),
    (cfg("gemma2", 64, 2, 1, 128, 4096, d=64, **CAP), 64, 16, "logits"),
    (moe("mixtral", 96, 6, 3, 160, 6000, 5, 2), 48, 24, "logits"),
]

# The V0 engine's sampler (serverVersion, design 22): (config, t, seqs,
# release) with the logits the peak.
V0_CASES = [
    (cfg("llama", 64, 4, 2, 192, 4096), 64, 16, "0.2.5"),
    (cfg("llama", 64, 4, 2, 192, 4096), 64, 16, "0.2.6"),
    (cfg("llama", 64, 4, 2, 192, 4096), 64, 16, "0.3.0"),
    (cfg("llama", 64, 4, 2, 192, 4096), 64, 16, "0.5.0"),
    (cfg("llama", 64, 4, 2, 192, 4096), 64, 16, "0.5.5"),
    (cfg("phi3", 128, 4, 2, 384, 8192), 32, 32, "0.2.6"),
    (cfg("qwen2", 128, 8, 2, 320, 6000), 48, 24, "0.3.0"),
    (moe("mixtral", 96, 6, 3, 160, 6000, 5, 2), 48, 24, "0.5.5"),
]


def sort_workspace(n, V):
    """What the CPU's sort of (n, V) int64 holds besides its two outputs
    (a row of its own): the bytes the measured peak sheds where it falls
    inside a sort (0.2.5's argsort), as mf_forward_peak leaves a sort's
    workspace out (a GPU's, CUDA's segmented radix sort, is another)."""
    x = torch.stack([torch.randperm(V) for _ in range(n)])
    return peak_of(lambda: torch.argsort(x, dim=-1)) - 16 * n * V


def measured(c, t, seqs, release=None):
    model = blocks.CausalLM(c, torch.bfloat16)
    ids = torch.randint(0, model.sh.V, (seqs, t // seqs))
    with torch.backends.mkldnn.flags(enabled=False):
        if release == "0.2.5":
            return (peak_of(lambda: model.serve_v0(ids, release)) -
                    sort_workspace(seqs, model.sh.V))
        if release is not None:
            return peak_of(lambda: model.serve_v0(ids, release))
        return peak_of(lambda: model.serve(ids))


def memfloor(c, t, seqs, release=None):
    """The activations bucket of memfloor's estimate (bytes, formula) for
    c served by vLLM (serverVersion release, if given) over t tokens in
    seqs sequences of t / seqs tokens."""
    workload = {
        "kind": "inference", "server": "vllm",
        "maxNumBatchedTokens": t, "maxNumSeqs": seqs, "concurrency": seqs,
        "contextLength": t // seqs,
    }
    if release is not None:
        workload["serverVersion"] = release
    est = estimate(c, workload)
    for b in est["buckets"]:
        if b["name"] == "activations":
            return b["bytes"], b["formula"]
    sys.exit("memfloor gave no activations bucket: " + json.dumps(est))


def main():
    failed = 0
    print("forward peak, bf16, no grad: measured vs mf_forward_peak")
    print("%-3s %-9s %-9s %5s %4s %10s %10s %8s" %
          ("#", "arch", "phase", "t", "seqs", "measured", "memfloor",
           "error"))
    cases = [(c, t, seqs, phase, None) for c, t, seqs, phase in CASES]
    cases += [(c, t, seqs, "v0 " + r, r) for c, t, seqs, r in V0_CASES]
    for i, (c, t, seqs, phase, release) in enumerate(cases):
        want = measured(c, t, seqs, release)
        got, formula = memfloor(c, t, seqs, release)
        err = (got - want) / want
        print("%-3d %-9s %-9s %5d %4d %10d %10d %+7.3f%%" %
              (i, c["model_type"], phase, t, seqs, want, got, 100 * err))
        if abs(err) > TOLERANCE or got < want:
            failed += 1
            print("FAIL %d %s: measured %d, memfloor %d (%s)" %
                  (i, c["model_type"], want, got, formula))
    print("forward harness: %d checks, %d failed" % (len(cases), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
