"""The models memfloor's estimate is held to, as the frameworks build and run
them: transformers' own modules (AutoModelForCausalLM.from_config, random
weights from a config dict, nothing downloaded), PEFT's LoRA, and the
training recipes of design 19 as HF Trainer, torchtune and torchtitan run
them.

A model is built from the config.json-style dict memfloor is given inline,
so that both read the same shapes.  What each recipe is, here:

- attention: memfloor's sdpa is transformers' "sdpa" (SDPA with enable_gqa
  and no mask, is_causal; transformers/integrations/sdpa_attention.py);
  eager is "eager".  Gemma-2 has no sdpa in transformers (soft-capping):
  asked for none, transformers falls back to eager, and so does memfloor.
- the config as HF Trainer runs it: use_cache False (Trainer sets
  model.config.use_cache = args.use_cache, default False; with a cache the
  attention would keep the cache's copies of k and v instead).
- loss: the model's own (labels shifted, logits.float(), cross_entropy
  with mean reduction: ForCausalLMLoss), the output (and its logits)
  dropped before backward, as Trainer.compute_loss returns only the loss.
- checkpointing: Trainer's call, model.activation_checkpointing_enable
  (non-reentrant torch.utils.checkpoint, every_n_layers N: layers 0, N,
  2N, ...), and per-op selective checkpointing as torchtitan 0.3.0 runs it
  (torchtitan/distributed/activation_checkpoint.py, SelectiveAC: the
  outputs of the compute-intensive ops, SDPA, linear and topk saved, every
  second mm recomputed), through torch.utils.checkpoint's
  create_selective_checkpoint_contexts.
- precision: bf16 and fp32 (the model in that dtype), bf16-mixed (an fp32
  model under torch.autocast(bfloat16), as HF Trainer's bf16=True and
  Lightning's bf16-mixed), bf16-true (the model in bf16, its optimizer
  state too, as torchtune and LitGPT).
- LoRA: peft.get_peft_model with LoraConfig(r, target_modules "all-linear",
  q, k, v, o, or a list of module names as given), lora_dropout 0 (an identity), adapters in fp32 (PEFT's
  autocast_adapter_dtype).
"""
import contextlib
import functools
import os
import warnings

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.filterwarnings("ignore")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.utils.checkpoint as tuc  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM  # noqa: E402

transformers.logging.set_verbosity_error()

ATTENTION_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "qkv_proj"]
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32,
          "bf16-mixed": torch.float32, "bf16-true": torch.bfloat16}


def hf_config(c):
    """transformers' config for memfloor's config dict c."""
    fields = dict(c)
    model_type = fields.pop("model_type")
    fields.setdefault("max_position_embeddings", 4096)
    fields.update(pad_token_id=0, bos_token_id=0, eos_token_id=0,
                  use_cache=False)
    return AutoConfig.for_model(model_type, **fields)


def implementation(c, attention):
    """transformers' attn_implementation for memfloor's attention."""
    if attention == "eager":
        return "eager"
    # Gemma-2 cannot take sdpa (soft-capping): unasked, transformers falls
    # back to eager (PreTrainedModel.get_correct_attn_implementation).
    return None if c["model_type"] == "gemma2" else "sdpa"


def build(c, layers, precision, attention, ckpt=False, lora=None, rank=4,
          device="cpu", lora_dtype="fp32", lora_dropout=0.0, base=None):
    """The model of config c with that many layers, for a training step in
    precision, with memfloor's attention, ckpt (False, True, an int N:
    every Nth layer, or "op": torchtitan's per-op policy) and LoRA targets
    (None, "all-linear", "attention" or a list of module names), the
    adapters in fp32 (PEFT's autocast_adapter_dtype) or, lora_dtype
    "bf16", in the model's dtype (autocast_adapter_dtype=False), as
    torchtune keeps them; base, a function of the model, makes its base
    before the adapters wrap it (a 4-bit base's linears)."""
    cfg = hf_config(dict(c, num_hidden_layers=layers))
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(
        cfg, attn_implementation=implementation(c, attention),
        dtype=DTYPES[precision])
    model.to(device)
    model.train()
    if ckpt == "op":
        selective(model)
    elif ckpt:
        every_nth(model, 1 if ckpt is True else int(ckpt))
    if base is not None:
        base(model)
    if lora is not None:
        peft = import_peft()
        if isinstance(lora, list):
            targets = lora
        elif lora == "all-linear":
            targets = "all-linear"
        else:
            targets = [t for t in ATTENTION_TARGETS if has_module(model, t)]
        model = peft.get_peft_model(model, peft.LoraConfig(
            r=rank, lora_alpha=2 * rank, lora_dropout=lora_dropout,
            target_modules=targets),
            autocast_adapter_dtype=lora_dtype == "fp32")
    return model


def import_peft():
    """peft, told that torchao is absent.  PEFT 0.21 refuses torchao before
    0.16 as soon as it wraps a linear (its torchao dispatcher asks), and
    torchtune 0.6.1 imports only torchao 0.15 or earlier; no layer here is
    quantized by torchao, so PEFT's answer is the same."""
    import peft
    import peft.tuners.lora.torchao as lora_torchao
    lora_torchao.is_torchao_available = lambda: False
    return peft


def has_module(model, name):
    return any(n.endswith("." + name) for n, _ in model.named_modules())


def decoder_layers(model):
    for m in model.modules():
        if isinstance(m, nn.ModuleList) and len(m) and \
                type(m[0]).__name__.endswith("DecoderLayer"):
            return m
    raise ValueError("no decoder layers")


def every_nth(model, n):
    """Every nth decoder layer checkpointed whole, counted as torchtitan
    (selective_ac_option N: _apply_layer_sac, a 1-based count % N == 0)
    and torchtune (ac_option N) count: the N-th, 2N-th, ... layer.
    transformers' every_n_layers takes the first, the (N+1)-th, ...;
    torchtitan's choice checkpoints the last layer when L is a multiple of
    N, whose recomputation is then on top of everything else: the more of
    the two.  With n = 1 this is activation_checkpointing_enable as HF
    Trainer calls it."""
    model.activation_checkpointing_enable()
    for i, layer in enumerate(decoder_layers(model)):
        layer.gradient_checkpointing = (i + 1) % n == 0


# --- torchtitan's per-op selective checkpointing --------------------------

def save_ops():
    """torchtitan 0.3.0's _get_default_save_ops (activation_checkpoint.py):
    torch's compute-intensive ops (the min-cut partitioner's list), the SDPA
    kernels, linear, max and topk, and the collectives (none here)."""
    from torch._functorch.partitioners import get_default_op_list
    ops = {op.default for op in get_default_op_list().compute_intensive_ops}
    for name in ("_scaled_dot_product_cudnn_attention",
                 "_scaled_dot_product_attention_math",
                 "_scaled_dot_product_fused_attention_overrideable",
                 "_scaled_dot_product_flash_attention_for_cpu",
                 "max", "linear", "topk"):
        op = getattr(torch.ops.aten, name, None)
        if op is not None:
            ops.add(op.default)
    return ops


def selective_policy():
    """torchtitan 0.3.0's SelectiveAC policy (wrapped_policy): recompute in
    the recompute pass; save every op of save_ops, except every second mm
    or linear of the forward (counted per checkpointed block).  The CPU
    flash kernel is saved as torchtitan saves the GPU's (its list names the
    CUDA SDPA kernels; on a GPU the CPU one never runs).  Its
    force_recompute_mm_shapes_by_fqns names torchtitan's MoE router
    ("moe.router.gate"), which transformers' models do not have."""
    from torch.utils.checkpoint import CheckpointPolicy
    ops = save_ops()
    mm = (torch.ops.aten.mm.default, torch.ops.aten.linear.default)
    meta = {"forward": 0, "recompute": 0}

    def policy(ctx, func, *args, **kwargs):
        mode = "recompute" if ctx.is_recompute else "forward"
        if func in mm:
            meta[mode] += 1
        if func in ops:
            if func in mm and meta[mode] % 2 == 0:
                return CheckpointPolicy.PREFER_RECOMPUTE
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    return policy


# The (forward, recompute) contexts of every selective checkpoint made, in
# order: their storage is what each layer's checkpoint keeps of its ops'
# outputs (measure.py reads the last layer's).
CONTEXTS = []


def selective(model):
    """Every decoder layer checkpointed with torchtitan's per-op policy, a
    policy (and its mm count) for each layer's checkpoint, as torchtitan's
    _get_custom_policy makes one per wrapped block and call."""
    def context_fn():
        ctx = tuc.create_selective_checkpoint_contexts(selective_policy())
        CONTEXTS.append(ctx)
        return ctx

    func = functools.partial(tuc.checkpoint, use_reentrant=False,
                             context_fn=context_fn)
    model._set_gradient_checkpointing(enable=True,
                                      gradient_checkpointing_func=func)


# --- a training step ------------------------------------------------------

def autocast(precision, device="cpu"):
    if precision == "bf16-mixed":
        return torch.autocast(device, dtype=torch.bfloat16)
    return contextlib.nullcontext()


class Step(nn.Module):
    """model's loss on (ids, labels), as HF Trainer computes it: the output
    dropped but for the loss, the forward under autocast for bf16-mixed."""

    def __init__(self, model, precision):
        super().__init__()
        self.model, self.precision = model, precision

    def forward(self, ids, labels):
        with autocast(self.precision, ids.device.type):
            return self.model(input_ids=ids, labels=labels).loss


def config(model_type, h, a, kv, I, V=1000, d=None, **kw):
    """A config.json dict of two layers (num_hidden_layers), as the
    harnesses build their cases from."""
    c = {"model_type": model_type, "hidden_size": h, "num_hidden_layers": 2,
         "num_attention_heads": a, "num_key_value_heads": kv,
         "intermediate_size": I, "vocab_size": V}
    if d is not None:
        c["head_dim"] = d
    c.update(kw)
    return c


CLI = os.environ.get("MEMFLOOR", os.path.join(
    os.environ.get("MF_TOP", os.getcwd()), "build/memfloor"))


def run_estimate(model, workload, name):
    """memfloor estimate -o json, estimator pytorch, of a job of spec.model
    model ({"config": c} or {"name": n}) and workload (a dict of
    spec.workload): the finished process, or a string saying why it did
    not run."""
    import json
    import subprocess
    import tempfile
    job = {"apiVersion": "memfloor.dev/v1", "kind": "Job",
           "metadata": {"name": name},
           "spec": {"model": model, "workload": workload}}
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(job, f)
        f.flush()
        try:
            return subprocess.run([CLI, "estimate", f.name, "-o", "json",
                                   "--estimator", "pytorch"],
                                  capture_output=True, text=True)
        except OSError as e:
            return "cannot run %s: %s" % (CLI, e)


def answer(r):
    """The answer (a dict) of run_estimate's r, or a string saying why
    there is none."""
    import json
    if isinstance(r, str):
        return r
    if r.returncode != 0:
        return "memfloor estimate failed (%d): %s%s" % (
            r.returncode, r.stdout.strip(), r.stderr.strip())
    try:
        return json.loads(r.stdout)
    except ValueError:
        return "memfloor printed no JSON: " + r.stdout[:200]


def estimate(c, workload, name):
    """memfloor's estimate of a job of config c and workload: the answer,
    or a string saying why there is none."""
    return answer(run_estimate({"config": c}, workload, name))


def refused(c, workload, name):
    """The field memfloor's error names for a job of config c and
    workload, None when it takes the job."""
    import json
    r = run_estimate({"config": c}, workload, name)
    if isinstance(r, str):
        return r
    if r.returncode == 0:
        return None
    try:
        return json.loads(r.stdout or r.stderr).get("field")
    except ValueError:
        return r.stdout + r.stderr
