#!/usr/bin/env python3
"""spec.workload.framework (design 22) held to the frameworks' own objects.

For torchtune 0.6.1 and for Hugging Face transformers 5.24 with PEFT 0.21.2
(the releases tests/torch/requirements.txt installs), each workload field
memfloor's table (admission/manifest/framework.c) supplies is read here from
the framework's own code, not from memfloor:

- torchtune: the recipe configs it ships (recipes/configs/llama3_1/
  8B_{full,lora,qlora}_single_device.yaml), loaded with torchtune's own
  argument parser (the one `tune run` uses); the loss instantiated with
  torchtune.config.instantiate; the dtype through training.get_dtype; the
  LoRA and QLoRA model built by torchtune's component builder with the
  config's LoRA arguments (a small Llama 3.1 of the same builder, under
  training.set_default_dtype as the recipes build it), its LoRALinear
  modules, rank and adapter dtype read off the modules, and the NF4
  storage off the base weight's NF4Tensor;
- transformers: TrainingArguments() and the model from_pretrained loads
  from a bf16 checkpoint with no dtype given (its parameters' dtype, its
  attention implementation, its loss function), get_peft_model with
  LoraConfig() (the modules it wraps, their rank and the adapters' dtype),
  BitsAndBytesConfig(load_in_4bit=True) and bitsandbytes' Params4bit.

Each derived workload is then stated in a manifest and memfloor's answer to
it (`memfloor estimate -o json`) compared with its answer to the same job
with only `framework:` given: the two must have the same fingerprint (the
workload after defaults, field by field) and the same total bytes, and the
answer's recipe.fromFramework must list exactly the fields derived.  A value
a framework sets that no field states (torchtune's PagedAdamW8bit) must be
absent from fromFramework.  Prints every case and exits 1 on a failure.
"""
import functools
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf  # noqa: E402  (quiets transformers before torch is used)

import torch  # noqa: E402

MODEL = "meta-llama/Llama-3.1-8B"
SEQ = 2048
FAILS = []

# torchtune's module names and PEFT's (memfloor's lora.targets).
TUNE_NAMES = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj",
              "output_proj": "o_proj", "w1": "gate_proj", "w3": "up_proj",
              "w2": "down_proj", "output": "lm_head"}
LORA_DTYPES = {torch.float32: "fp32", torch.bfloat16: "bf16",
               torch.float16: "fp16"}


def estimate(workload, name):
    """memfloor's answer for the shipped model MODEL under workload."""
    return hf.answer(hf.run_estimate({"name": MODEL}, workload, name))


def paths(d, prefix=""):
    """The dotted paths of a workload's leaves: {"lora": {"rank": 8}} is
    lora.rank."""
    out = []
    for k, v in d.items():
        if isinstance(v, dict):
            out += paths(v, prefix + k + ".")
        else:
            out.append(prefix + k)
    return out


def check(framework, method, derived, absent=(), layout=None):
    """memfloor with framework alone against memfloor with the derived
    fields stated, both with the layout fields given (sharding: the
    framework's distributed recipe)."""
    base = dict({"method": method, "sequenceLength": SEQ}, **(layout or {}))
    a = estimate(dict(base, framework=framework), "framework")
    stated = dict(base, **derived)
    if "sharding" in derived:
        stated["sharding"] = dict(base["sharding"], **derived["sharding"])
    b = estimate(stated, "stated")
    case = "%s %s%s" % (framework, method, " sharded" if layout else "")
    if isinstance(a, str) or isinstance(b, str):
        FAILS.append("%s: %s" % (case, a if isinstance(a, str) else b))
        print("FAIL", FAILS[-1])
        return
    got = a["recipe"].get("fromFramework", [])
    want = paths(derived)
    ok = (a["fingerprint"] == b["fingerprint"] and
          a["totalBytes"] == b["totalBytes"] and
          sorted(got) == sorted(want) and
          not any(f in got for f in absent))
    print("%-4s %-22s derived %s" % ("ok" if ok else "FAIL", case,
                                    json.dumps(derived, sort_keys=True)))
    print("     memfloor: fingerprint %s %s, totalBytes %d %s %d, "
          "fromFramework %s" % (
              a["fingerprint"], "==" if a["fingerprint"] == b[
                  "fingerprint"] else "!=", a["totalBytes"],
              "==" if a["totalBytes"] == b["totalBytes"] else "!=",
              b["totalBytes"], got))
    if not ok:
        FAILS.append(case)


# --- torchtune --------------------------------------------------------------

def tune_config(name):
    from torchtune._cli.cp import ROOT
    from torchtune.config._parse import TuneRecipeArgumentParser
    path = os.path.join(ROOT, "recipes", "configs", "llama3_1",
                        name + ".yaml")
    parser = TuneRecipeArgumentParser(description="", add_help=False)
    args, _ = parser.parse_known_args(["--config", path])
    from omegaconf import OmegaConf
    return OmegaConf.create(vars(args))


def tune_common(cfg):
    from torchtune import config, training
    from torchtune.modules.loss import CEWithChunkedOutputLoss
    d = {}
    # dtype: bf16: the model, its gradients and the optimizer's state.
    if training.get_dtype(cfg.dtype, torch.device("cpu")) == torch.bfloat16:
        d["precision"] = "bf16-true"
    d["gradientCheckpointing"] = bool(cfg.enable_activation_checkpointing)
    d["activationOffload"] = bool(cfg.enable_activation_offloading)
    loss = config.instantiate(cfg.loss)
    if isinstance(loss, CEWithChunkedOutputLoss):
        d["loss"] = "chunked"
        d["lossChunks"] = loss.num_output_chunks
    # torchtune's attention: modules/attention_utils.py picks
    # F.scaled_dot_product_attention without sample packing.
    from torchtune.modules import attention_utils
    if attention_utils._sdpa_or_flex_attention().__name__ != "_attention_call":
        FAILS.append("torchtune: attention is not its sdpa call")
    d["attention"] = "sdpa"
    d["compile"] = bool(cfg.compile)
    return d


def tune_optimizer(cfg, d):
    comp = cfg.optimizer._component_
    names = {"torch.optim.AdamW": "adamw",
             "bitsandbytes.optim.PagedAdamW8bit": "paged-adamw8bit"}
    if comp in names:
        d["optimizer"] = names[comp]
        return ()
    FAILS.append("torchtune: optimizer %s has no name" % comp)
    return ("optimizer",)


def dropout_p(mod):
    """An adapter's input dropout: nn.Dropout's p, 0 for the identity
    both frameworks put in its place at p = 0."""
    return mod.p if isinstance(mod, torch.nn.Dropout) else 0.0


def tune_lora(cfg, d):
    """The config's LoRA, built small by torchtune's own builder."""
    from torchtune import config, training
    from torchtune.models.llama3_1 import lora_llama3_1
    from torchtune.modules.peft import LoRALinear
    comp = config._utils._get_component_from_path(cfg.model._component_)
    quantize = (isinstance(comp, functools.partial) and
                comp.keywords.get("quantize_base", False))
    args = {k: v for k, v in cfg.model.items() if k != "_component_"}
    with training.set_default_dtype(training.get_dtype(cfg.dtype, torch.device("cpu"))):
        m = lora_llama3_1(**args, vocab_size=512, num_layers=1, num_heads=4,
                          num_kv_heads=2, embed_dim=256, max_seq_len=256,
                          intermediate_dim=512, quantize_base=quantize)
    names, rank, dtype, nf4, drop = [], None, None, None, None
    for name, mod in m.named_modules():
        if isinstance(mod, LoRALinear):
            names.append(TUNE_NAMES[name.split(".")[-1]])
            rank = mod.rank
            dtype = mod.lora_a.weight.dtype
            nf4 = mod.weight if quantize else None
            drop = dropout_p(mod.dropout)
    order = list(TUNE_NAMES.values())
    d["lora"] = {"rank": rank,
                 "targets": sorted(set(names), key=order.index),
                 "dtype": LORA_DTYPES[dtype], "dropout": drop}
    if nf4 is not None:
        # torchao's NF4Tensor: an absmax a block_size weights, the
        # absmaxes quantized to 8 bits a scaler_block_size of them.
        d["qlora"] = {"blockSize": nf4.block_size,
                      "doubleQuant": nf4.quantized_scalers.dtype ==
                      torch.int8,
                      # torchtune quantizes in its own builder, no PEFT.
                      "kbitPrep": False,
                      # the library of the 4-bit weight's class
                      "quantizer": type(nf4).__module__.split(".")[0]}


def tune_units(cfg, d):
    """The distributed config's FSDP units: custom_sharded_layers, which
    shard_model wraps as units of their own (get_shard_conditions'
    names_to_match)."""
    units = {None: "model", ("tok_embeddings", "output"): "ends"}
    layers = cfg.get("custom_sharded_layers", None)
    key = tuple(layers) if layers is not None else None
    if key in units:
        d["sharding"] = {"units": units[key]}
        return ()
    FAILS.append("torchtune: custom_sharded_layers %s has no units" %
                 (layers,))
    return ("sharding.units",)


def torchtune_cases():
    import torchtune
    print("torchtune %s" % torchtune.__version__)
    # The single-device configs, and with sharding the distributed one
    # (full_finetune_distributed's).
    for method, name, layout in (
            ("full", "8B_full_single_device", None),
            ("lora", "8B_lora_single_device", None),
            ("qlora", "8B_qlora_single_device", None),
            ("full", "8B_full", {"sharding": {"gpus": 2}}),
            ("lora", "8B_lora", {"sharding": {"gpus": 2}})):
        cfg = tune_config(name)
        d = tune_common(cfg)
        absent = tune_optimizer(cfg, d)
        if method == "full":
            d["optimizerInBackward"] = bool(cfg.optimizer_in_bwd)
        else:
            tune_lora(cfg, d)
        if layout:
            absent += tune_units(cfg, d)
        check("torchtune@0.6", method, d, absent, layout)
        check("torchtune", method, d, absent, layout)


# --- transformers, PEFT -----------------------------------------------------

def hf_model(tmp):
    """A small Llama saved as a bf16 checkpoint, loaded as a user loads
    one: from_pretrained with no dtype."""
    from transformers import AutoModelForCausalLM
    c = hf.hf_config(hf.config("llama", 64, 4, 2, 128, 256))
    c.dtype = torch.bfloat16
    AutoModelForCausalLM.from_config(c).to(torch.bfloat16).save_pretrained(
        tmp)
    return AutoModelForCausalLM.from_pretrained(tmp)


def hf_common(model):
    from transformers import TrainingArguments
    a = TrainingArguments(output_dir=tempfile.gettempdir())
    d = {}
    dtype = next(model.parameters()).dtype
    # No autocast (bf16, fp16 False) over 16-bit parameters: weights,
    # gradients and AdamW's state all bf16.
    if not a.bf16 and not a.fp16 and dtype == torch.bfloat16:
        d["precision"] = "bf16-true"
    d["gradientCheckpointing"] = bool(a.gradient_checkpointing)
    d["attention"] = model.config._attn_implementation
    if model.loss_function.__name__ == "ForCausalLMLoss":
        d["loss"] = "standard"
    if str(a.optim.value).startswith("adamw"):
        d["optimizer"] = "adamw"
    return d


def hf_lora(model, d):
    hf.import_peft()
    from peft import LoraConfig, get_peft_model
    from peft.tuners.lora import LoraLayer
    p = get_peft_model(model, LoraConfig())
    names, rank, dtype, drop = [], None, None, None
    for name, mod in p.named_modules():
        if isinstance(mod, LoraLayer):
            names.append(name.split(".")[-1])
            rank = mod.r["default"]
            dtype = mod.lora_A["default"].weight.dtype
            drop = dropout_p(mod.lora_dropout["default"])
    order = list(TUNE_NAMES.values())
    d["lora"] = {"rank": rank,
                 "targets": sorted(set(names), key=order.index),
                 "dtype": LORA_DTYPES[dtype], "dropout": drop}


def hf_qlora(d):
    import bitsandbytes as bnb
    from transformers import BitsAndBytesConfig
    q = BitsAndBytesConfig(load_in_4bit=True)
    w = bnb.nn.Params4bit(torch.zeros(64, 64), requires_grad=False)
    d["qlora"] = {"blockSize": w.blocksize,
                  "doubleQuant": bool(q.bnb_4bit_use_double_quant),
                  # trl v1.9.0 sft_trainer.py, Trainer and get_peft_model
                  # call no prepare_model_for_kbit_training (TRL is not
                  # installed here: cited in framework.c, not measured).
                  "kbitPrep": False,
                  "quantizer": type(w).__module__.split(".")[0]}


def transformers_cases():
    import peft
    import transformers
    print("transformers %s, peft %s" % (transformers.__version__,
                                        peft.__version__))
    for method in ("full", "lora", "qlora"):
        with tempfile.TemporaryDirectory() as tmp:
            model = hf_model(tmp)
            d = hf_common(model)
            if method != "full":
                hf_lora(model, d)
            if method == "qlora":
                hf_qlora(d)
        check("transformers@5.24", method, d)
        check("transformers", method, d)


def main():
    torch.manual_seed(0)
    torchtune_cases()
    transformers_cases()
    if FAILS:
        print("framework: %d failed: %s" % (len(FAILS), ", ".join(FAILS)))
        return 1
    print("framework: memfloor's torchtune and transformers values are "
          "the frameworks' own")
    return 0


if __name__ == "__main__":
    sys.exit(main())
