"""What make gpu-check's scripts (gpu_check.py, gpu_speed.py) start with:
the device they run on, DEV, and its name, NAME; under a system python
whose torch sees the GPU, the harness environment's packages
(MF_TORCH_SITE) behind its own where it has no transformers; torch.cuda's
calls, or nothing on the CPU (CUDA); the dry run's sizes (small).

MF_GPU_CHECK_DEVICE=cpu runs a script's code at small sizes on the CPU: a
check of the script, not of memory or speed.  Without it and without a
CUDA GPU the script says so and exits 1.
"""
import os
import sys

import torch

DEV = os.environ.get("MF_GPU_CHECK_DEVICE", "cuda")
if DEV == "cuda" and not torch.cuda.is_available():
    print("%s: no CUDA GPU here (torch %s, torch.cuda.is_available() is"
          " False); nothing measured" %
          (os.path.basename(sys.argv[0]), torch.__version__))
    sys.exit(1)
# The GPU's name as its driver gives it; None in the dry run.
NAME = torch.cuda.get_device_name(0) if DEV == "cuda" else None

SITE = os.environ.get("MF_TORCH_SITE")
try:
    import transformers  # noqa: F401
except ImportError:
    if not SITE:
        raise
    sys.path.append(SITE)


class Counters:
    """torch.cuda's calls, or for the CPU dry run nothing: its memory
    counters 0, the rest None."""

    def __init__(self, cuda):
        self.cuda = cuda

    def __getattr__(self, name):
        if self.cuda:
            return getattr(torch.cuda, name)
        return lambda *a, **k: 0 if "memory" in name else None


CUDA = Counters(DEV == "cuda")

# The dry run's sequence length.
SMALL_SEQ = 32


def small(c):
    """The dry run's model: config c's architecture at the harness's
    sizes, two layers."""
    c = dict(c, hidden_size=64, intermediate_size=128, vocab_size=256,
             num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=min(4, c["num_key_value_heads"]))
    c.pop("head_dim", None)
    for k in ("moe_intermediate_size", "shared_expert_intermediate_size"):
        if k in c:
            c[k] = 64
    return c
