"""What make gpu-check's scripts (gpu_check.py, gpu_speed.py) start with:
the device they run on, DEV, and under a system python whose torch sees
the GPU, the harness environment's packages (MF_TORCH_SITE) behind its
own where it has no transformers.

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

SITE = os.environ.get("MF_TORCH_SITE")
try:
    import transformers  # noqa: F401
except ImportError:
    if not SITE:
        raise
    sys.path.append(SITE)
