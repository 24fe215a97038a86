#!/usr/bin/env python3
"""Count the matmul FLOPs of transformers' own models with
torch.utils.flop_counter.FlopCounterMode, and hold memfloor's FLOP model
(design 21, "The job's work": est["work"]["flops"]) to them.

The models are measure.py's cases (FIT and CHECK: Llama, Mistral, Qwen2,
Phi-3, Gemma-2, Mixtral, Qwen2-MoE; two layers, small shapes), built as
measure.py builds them (hf.py: transformers' modules from the config dict,
random weights, LoRA rank 4 by PEFT), in fp32 (the FLOPs of a matmul do
not depend on its dtype; fp32 is the fastest on a CPU), with eager
attention: FlopCounterMode counts eager's two bmm (QK^T and AV over the
whole s x s, no causal skipping) exactly, while torch 2.13's CPU SDPA
(aten._scaled_dot_product_flash_attention_for_cpu and its _backward) is
not among the ops it registers, so that sdpa attention counts 0 on a CPU.
Two ops FlopCounterMode does not register are counted here as the
matmuls they compute (custom_flops): aten._grouped_mm, transformers'
default experts implementation for the mixture-of-experts models (eager
experts, a loop of F.linear over the experts hit, count the same), and
bitsandbytes 0.50's fused 4-bit matmul, bitsandbytes::gemm_4bit, which
MatMul4Bit's forward calls (its backward dequantizes the weight and
multiplies with an ordinary mm, counted as it is).  Unregistered, both
count 0.  torchtitan's per-op policy cannot run on Mixtral or on
Qwen2-MoE with norm_topk_prob (their routers divide topk's saved output
in place): those cases are reported as skipped.

For each case (config x recipe) it counts, for one training step of one
micro-batch (b sequences of s tokens; the model's own loss):

- forward: FlopCounterMode around the forward and the loss;
- backward: FlopCounterMode around loss.backward() of the same model
  without checkpointing, with the same inputs requiring a gradient
  (enabling checkpointing makes the embeddings' output require one,
  enable_input_require_grads, which adds layer 0's input-gradient
  matmuls under LoRA);
- recompute: the checkpointed backward less that backward.

Recipes: full fine-tuning with checkpointing false, true (every layer,
as HF Trainer), op (torchtitan's per-op policy, hf.selective) and 2 (the
second of the two layers, hf.every_nth); LoRA all-linear and attention
(q, k, v, o) and measure.py's lists of module names (design 22: with and
without q, k or v), without and with checkpointing (the dense architectures:
PEFT's all-linear does not reach transformers' fused 3-D experts);
QLoRA (every linear of the decoder a bitsandbytes Linear4bit, NF4, as
quant.py makes them, LoRA all-linear on top, bf16), without and with
checkpointing; serving: prefill (no grad, one sequence of s tokens, the
logits of its last token only, as vLLM and generate() compute them) and
decode (one new token attending to a KV cache of s - 1 earlier tokens, s
in all).

It then asks memfloor (the command line, -o json, estimator pytorch) for
the same job and fails a case when a part of est["work"]["flops"]
(forward, backward, recompute, total; prefill, decode) is more than 1%
off (a part measured as 0 fails when memfloor's is above 1% of the
total), or when the estimate has no "work".  --measured prints only the
measured figures, one JSON object a case; -v prints every part.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf  # noqa: E402  (quiets transformers before torch is used)

import torch  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

import measure  # noqa: E402  (the cases, Subject, RANK)

TOLERANCE = 0.01
PRECISION = "fp32"

torch.manual_seed(0)
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


# --- counting -------------------------------------------------------------

def gemm_4bit_flop(a_shape, b_shape, shape, *args, out_shape=None,
                   **kwargs):
    """bitsandbytes' fused 4-bit matmul (torch.ops.bitsandbytes.gemm_4bit,
    which MatMul4Bit.forward calls in bitsandbytes 0.50, on the CPU as on
    a GPU) as the matmul it computes: A (..., K) by the dequantized weight
    (N, K) = shape, 2 x tokens x N x K.  FlopCounterMode does not know
    the op and would count it 0; MatMul4Bit.backward dequantizes the
    weight and multiplies with an ordinary mm, which it counts."""
    tokens = 1
    for n in a_shape[:-1]:
        tokens *= n
    return 2 * tokens * shape[0] * shape[1]


def grouped_mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs):
    """aten._grouped_mm, transformers' default experts implementation
    (integrations/moe.py, grouped_mm_experts_forward; FlopCounterMode in
    torch 2.13 does not register it and counts 0): the matmuls of its
    groups.  2-D by 3-D (tokens sorted by expert, (M, K) by (G, K, N)) and
    3-D by 3-D: 2 x out x K; 2-D by 2-D (the weights' gradient, (M, T) by
    (T, N), T split among the G outputs): 2 x M x T x N."""
    if len(a_shape) == 2 and len(b_shape) == 2:
        return 2 * a_shape[0] * a_shape[1] * b_shape[1]
    n = 1
    for x in out_shape:
        n *= x
    return 2 * n * a_shape[-1]


def custom_flops():
    """The ops beyond FlopCounterMode's own: aten._grouped_mm, and
    bitsandbytes' 4-bit matmul when bitsandbytes is loaded."""
    out = {torch.ops.aten._grouped_mm: grouped_mm_flop}
    ops = getattr(torch.ops, "bitsandbytes", None)
    if ops is not None and hasattr(ops, "gemm_4bit"):
        out[ops.gemm_4bit] = gemm_4bit_flop
    return out


def counted(fn):
    """(FLOPs, per-module counts, fn's result) of fn under FlopCounterMode."""
    with FlopCounterMode(display=False,
                         custom_mapping=custom_flops()) as m:
        out = fn()
    return m.get_total_flops(), m.get_flop_counts(), out


def module_flops(counts, suffix):
    """The FLOPs FlopCounterMode gave the module whose name ends in suffix
    (its whole subtree; the first such module)."""
    for name, ops in counts.items():
        if name.endswith(suffix):
            return sum(ops.values())
    return 0


def op_flops(counts, op):
    return sum(n for o, n in counts.get("Global", {}).items()
               if str(o).startswith(op))


def train_counts(step, ids, labels):
    """(forward, backward, detail) of one step of step (hf.Step)."""
    for p in step.parameters():
        p.grad = None
    f, fc, loss = counted(lambda: step(ids, labels))
    b, bc, _ = counted(loss.backward)
    detail = {"forwardLmHead": module_flops(fc, "lm_head"),
              "forwardBmm": op_flops(fc, "aten.bmm"),
              "backwardBmm": op_flops(bc, "aten.bmm")}
    return f, b, detail


def training(c, s, b, subj, ids, labels, ckpts, lora_inputs=False):
    """[(ckpt, forward, backward, recompute, detail)] of subj (a
    measure.Subject or the like) for each checkpointing mode in ckpts.
    The backward of a checkpointed run is the plain run's with the inputs
    requiring a gradient as checkpointing makes them (lora_inputs)."""
    out = []
    f0, b0, d0 = train_counts(subj.set(2, "eager"), ids, labels)
    bi = None
    for ckpt in ckpts:
        if ckpt is False:
            out.append((ckpt, f0, b0, 0, d0))
            continue
        try:
            f, bc, d = train_counts(subj.set(2, "eager", ckpt), ids, labels)
        except RuntimeError as e:
            # torchtitan's policy saves topk's output, which Mixtral's and
            # Qwen2-MoE's (norm_topk_prob) routers then divide in place:
            # torch refuses the mutated cached tensor in backward.
            out.append((ckpt, None, None, None, {"error": str(e)[:120]}))
            continue
        base = b0
        if lora_inputs and ckpt is not False:
            if bi is None:
                step = subj.set(2, "eager")
                subj.base.enable_input_require_grads()
                _, bi, _ = train_counts(step, ids, labels)
                subj.base.disable_input_require_grads()
            base = bi
        d = dict(d, forwardPlain=f0)
        out.append((ckpt, f, base, bc - base, d))
    subj.set(2, "eager")
    return out


class Subject(measure.Subject):
    """measure.Subject in fp32 (transformers' default experts, grouped_mm)."""

    def __init__(self, c, lora=None):
        super().__init__(c, PRECISION, lora)


class QSubject(Subject):
    """QLoRA: the bf16 model with every linear of its decoder layers a
    bitsandbytes Linear4bit (NF4, blocks of 64, double quantization, as
    quant.py quantizes them), LoRA all-linear on top by PEFT."""

    def __init__(self, c):
        prev = torch.backends.mkldnn.enabled
        import quant  # bitsandbytes; it turns oneDNN off for its own peaks
        torch.backends.mkldnn.enabled = prev
        self.c = c
        model = hf.build(c, 2, "bf16", "sdpa")
        for layer in hf.decoder_layers(model):
            quant.swap_linears(layer)
        # As transformers marks a model loaded with load_in_4bit, so that
        # PEFT wraps Linear4bit in its bitsandbytes LoRA layer.
        model.is_loaded_in_4bit = True
        peft = hf.import_peft()
        self.model = peft.get_peft_model(model, peft.LoraConfig(
            r=measure.RANK, lora_alpha=2 * measure.RANK, lora_dropout=0.0,
            target_modules="all-linear"))
        self.base = self.model.get_base_model()
        self.step = hf.Step(self.model, "bf16")


@torch.no_grad()
def serving(c, s, model):
    """(prefill, decode, detail) of one sequence of s tokens."""
    model.eval()
    ids = torch.randint(0, c["vocab_size"], (1, s))
    p, pc, _ = counted(lambda: model(input_ids=ids, use_cache=False,
                                     logits_to_keep=1))
    cache = model(input_ids=ids[:, :-1], use_cache=True).past_key_values
    d, dc, _ = counted(lambda: model(input_ids=ids[:, -1:],
                                     past_key_values=cache, use_cache=True,
                                     logits_to_keep=1))
    model.train()
    return p, d, {"prefillLmHead": module_flops(pc, "lm_head"),
                  "prefillBmm": op_flops(pc, "aten.bmm"),
                  "decodeBmm": op_flops(dc, "aten.bmm")}


# --- memfloor -------------------------------------------------------------

def workload(case):
    if case["recipe"] in ("prefill", "decode", "serving"):
        return {"kind": "inference", "contextLength": case["s"],
                "concurrency": 1, "attention": "eager"}
    w = {"kind": "training", "sequenceLength": case["s"],
         "microBatch": case["b"], "precision": "bf16",
         "attention": "eager", "gradientCheckpointing": case["ckpt"]}
    if case["method"] != "full":
        w.update(method=case["method"],
                 lora={"rank": measure.RANK, "targets": case["targets"]})
    return w


# --- cases ----------------------------------------------------------------

def dims(c):
    E = c.get("num_local_experts", c.get("num_experts", 0))
    return {"hidden": c["hidden_size"],
            "intermediate": c.get("moe_intermediate_size",
                                  c["intermediate_size"]) if E else
            c["intermediate_size"],
            "layers": c["num_hidden_layers"],
            "heads": c["num_attention_heads"],
            "kvHeads": c["num_key_value_heads"],
            "headDim": c.get("head_dim",
                             c["hidden_size"] // c["num_attention_heads"]),
            "vocab": c["vocab_size"], "experts": E,
            "topK": c.get("num_experts_per_tok", 0) if E else 0,
            "sharedExpert": c.get("shared_expert_intermediate_size", 0)}


def cases_of(tag, i, c, s, b, recipes):
    """Every case of one config: a dict each, measured."""
    ids, labels = measure.inputs(c, s, b)
    head = {"case": None, "config": c["model_type"], "dims": dims(c),
            "s": s, "b": b}
    out = []

    def add(recipe, method, targets, ckpt, f, bw, r, detail):
        name = "%s[%d] %s %s ckpt=%s" % (tag, i, c["model_type"], recipe,
                                         str(ckpt).lower())
        out.append(dict(head, case=name, recipe=recipe, method=method,
                        targets=targets, ckpt=ckpt, forward=f, backward=bw,
                        recompute=r, total=None if f is None else f + bw + r,
                        detail=detail))

    if "full" in recipes:
        subj = Subject(c)
        for ckpt, f, bw, r, d in training(c, s, b, subj, ids, labels,
                                          (False, True, "op", 2)):
            add("full", "full", None, ckpt, f, bw, r, d)
        if "serving" in recipes:
            p, dcd, d = serving(c, s, subj.model)
            out.append(dict(head, case="%s[%d] %s serving" % (
                tag, i, c["model_type"]), recipe="serving", method=None,
                targets=None, ckpt=None, prefill=p, decode=dcd, detail=d))
        del subj
    dense = c["model_type"] in measure.DENSE
    lists = measure.LISTS.get(c["model_type"], measure.LISTS[None])
    for targets in ("all-linear", "attention") + lists:
        if "lora" in recipes and dense:
            label = "+".join(targets) if isinstance(targets, list) else \
                targets
            subj = Subject(c, targets)
            for ckpt, f, bw, r, d in training(c, s, b, subj, ids, labels,
                                              (False, True), True):
                add("lora " + label, "lora", targets, ckpt, f, bw, r, d)
            del subj
    if "qlora" in recipes and dense:
        subj = QSubject(c)
        for ckpt, f, bw, r, d in training(c, s, b, subj, ids, labels,
                                          (False, True), True):
            add("qlora", "qlora", "all-linear", ckpt, f, bw, r, d)
        del subj
    return out


def parts(case):
    if case["recipe"] == "serving":
        return ("prefill", "decode")
    return ("forward", "backward", "recompute", "total")


def judge(case, est, verbose):
    """Print case against est; return True when it passes."""
    names = parts(case)
    if case.get("total", 0) is None:
        print("SKIP %s: not runnable here (%s)" % (case["case"],
                                                 case["detail"]["error"]))
        return None
    meas = " ".join("%s %d" % (n, case[n]) for n in names)
    if isinstance(est, str):
        print("FAIL %s: measured %s; %s" % (case["case"], meas, est))
        return False
    got = est.get("work", {}).get("flops") if isinstance(
        est.get("work"), dict) else None
    if not isinstance(got, dict):
        print("FAIL %s: measured %s; memfloor gave no work.flops" %
              (case["case"], meas))
        return False
    ok = True
    scale = max(case[n] for n in names)
    for n in names:
        want, have = case[n], got.get(n)
        if not isinstance(have, (int, float)):
            print("FAIL %s %s: measured %d, memfloor has none" %
                  (case["case"], n, want))
            ok = False
            continue
        err = (have - want) / want if want else \
            (have / scale if scale else 0.0)
        bad = abs(err) > TOLERANCE
        if verbose or bad:
            print("%s%-44s %-9s measured %14d memfloor %14d %+8.3f%%" %
                  ("FAIL " if bad else "", case["case"], n, want, have,
                   100 * err))
        ok = ok and not bad
    return ok


RECIPES = ("full", "serving", "lora", "qlora")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-v", action="store_true", help="print every part")
    ap.add_argument("--measured", action="store_true",
                    help="print only the measured FLOPs, a JSON line a case")
    ap.add_argument("--recipes", default=",".join(RECIPES),
                    help="comma-separated subset of " + ",".join(RECIPES))
    ap.add_argument("only", nargs="*", help="cases as SET:INDEX (FIT:0)")
    a = ap.parse_args()
    recipes = set(a.recipes.split(","))
    passed = failed = 0
    for tag, cases in (("FIT", measure.FIT), ("CHECK", measure.CHECK)):
        for i, (c, s, b) in enumerate(cases):
            if a.only and "%s:%d" % (tag, i) not in a.only:
                continue
            for case in cases_of(tag, i, c, s, b, recipes):
                if a.measured:
                    print(json.dumps(case), flush=True)
                    continue
                ok = judge(case, hf.estimate(c, workload(case), "flops-" + c["model_type"]), a.v)
                if ok is not None:
                    passed += ok
                    failed += not ok
    if a.measured:
        return 0
    print("flops harness: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
