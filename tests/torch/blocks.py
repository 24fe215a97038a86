"""Small decoder models of the architectures memfloor knows, written the way
their Hugging Face reference implementations are (transformers 4.4x:
modeling_llama, _mistral, _qwen2, _phi3, _gemma2, _mixtral, _qwen2_moe),
for what no framework runs on a CPU: a serving engine's forward
(forward.py).  Training is measured on transformers' own modules
(hf.py, measure.py).

A model is built from a config.json-style dict, the same dict memfloor is
given inline, so both read the same shapes.  What matters here is what each
operation allocates in a no-grad forward, so every operation is written as
the reference writes it:

- RMSNorm upcasts to fp32 (x.to(float32)), normalises, casts back and
  multiplies by the weight (Llama); Gemma multiplies in fp32 by (1 + w)
  before casting back.
- RoPE: cos and sin are made once per forward in the activation dtype and
  shared by every layer; q*cos + rotate_half(q)*sin.
- Attention allocates only its output, as a serving engine's fused kernel
  (flash_rows).
- MLP: SwiGLU (act(gate) * up -> down) or GeGLU (Gemma-2, tanh GELU); Phi-3
  fuses qkv and gate_up into one projection each.
- Mixtral / Qwen2-MoE: router softmax in fp32, top-k, (Mixtral: renormalise
  in place), the experts as vLLM's fused-MoE buffers (fused_experts);
  Qwen2-MoE adds a shared expert with a sigmoid gate, run first.
- CausalLM.serve: a no-grad forward as a serving engine's profile run
  makes it, and vLLM's sampler with top-k/top-p as the profile run calls it
  (profile_sampler); CausalLM.serve_v0 the same forward with the V0
  engine's sampler of a release family (v0_sampler, serverVersion before
  0.8.0).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


ARCH = {
    # norm kind, norms per layer, mlp activation, fused projections,
    # q/k/v bias, moe kind
    "llama": ("llama", 2, "silu", False, False, None),
    "mistral": ("llama", 2, "silu", False, False, None),
    "qwen2": ("llama", 2, "silu", False, True, None),
    "phi3": ("llama", 2, "silu", True, False, None),
    "gemma2": ("gemma", 4, "gelu_tanh", False, False, None),
    "mixtral": ("llama", 2, "silu", False, False, "mixtral"),
    "qwen2_moe": ("llama", 2, "silu", False, True, "qwen2_moe"),
}


class Shape:
    """The fields of a config dict that the blocks read."""

    def __init__(self, cfg):
        self.type = cfg["model_type"]
        (self.norm, self.nnorms, self.act, self.fused, self.bias,
         self.moe) = ARCH[self.type]
        self.h = cfg["hidden_size"]
        self.L = cfg["num_hidden_layers"]
        self.a = cfg["num_attention_heads"]
        self.kv = cfg.get("num_key_value_heads", self.a)
        self.d = cfg.get("head_dim", self.h // self.a)
        self.I = cfg["intermediate_size"]
        self.V = cfg["vocab_size"]
        self.tied = cfg.get("tie_word_embeddings", self.type == "gemma2")
        self.E = cfg.get("num_local_experts", cfg.get("num_experts", 0))
        self.k = cfg.get("num_experts_per_tok", 2)
        self.I_moe = cfg.get("moe_intermediate_size", self.I)
        self.I_shared = cfg.get("shared_expert_intermediate_size", 0)
        self.renorm = self.moe == "mixtral" or \
            cfg.get("norm_topk_prob", False)
        self.attn_cap = cfg.get("attn_logit_softcapping")
        self.final_cap = cfg.get("final_logit_softcapping")


class RMSNorm(nn.Module):
    def __init__(self, h, kind):
        super().__init__()
        self.kind = kind
        if kind == "gemma":
            self.weight = nn.Parameter(torch.zeros(h))
        else:
            self.weight = nn.Parameter(torch.ones(h))

    def forward(self, x):
        dtype = x.dtype
        x32 = x.to(torch.float32)
        var = x32.pow(2).mean(-1, keepdim=True)
        x32 = x32 * torch.rsqrt(var + 1e-6)
        if self.kind == "gemma":
            return (x32 * (1.0 + self.weight.float())).type_as(x)
        return self.weight * x32.to(dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin


def tile(q, k, scale, cap, r0, c0):
    """The causal scores of query rows r0.. against key columns c0.., in
    fp32 (float64 in the gradient check): (b, rows, cols), and their
    soft-capped tanh (None without capping)."""
    acc = torch.promote_types(q.dtype, torch.float32)
    w = torch.matmul(q.to(acc), k.to(acc).transpose(1, 2)) * scale
    t = None
    if cap is not None:
        t = torch.tanh(w / cap)
        w = t * cap
    rows = torch.arange(r0, r0 + q.shape[1])[:, None]
    cols = torch.arange(c0, c0 + k.shape[1])[None, :]
    return w.masked_fill(cols > rows, float("-inf")), t


def flash_rows(q, k, v, scale, cap):
    """Attention without grad, as a serving engine's kernel (vLLM's flash
    or paged attention) runs it: on (b, s, heads, d), the
    output is the one tensor it allocates.  The kernel's tiles live in
    on-chip memory; here the scores of one query row of one head at a time
    stand in for them, b x s x 4 bytes, small beside what the layer holds
    and gone before RoPE's and o_proj's moments, attention's fullest."""
    b, s, a, d = q.shape
    n = a // k.shape[2]
    out = torch.empty_like(q)
    for i in range(a):
        kj, vj = k[:, :, i // n], v[:, :, i // n]
        for r in range(s):
            w, _ = tile(q[:, r:r + 1, i], kj[:, :r + 1], scale, cap, r, 0)
            w = torch.softmax(w, dim=-1)
            out[:, r:r + 1, i] = torch.matmul(w, vj[:, :r + 1].float())
    return out


class Attention(nn.Module):
    def __init__(self, sh):
        super().__init__()
        self.sh = sh
        h, a, kv, d = sh.h, sh.a, sh.kv, sh.d
        if sh.fused:
            self.qkv_proj = nn.Linear(h, (a + 2 * kv) * d, bias=False)
        else:
            self.q_proj = nn.Linear(h, a * d, bias=sh.bias)
            self.k_proj = nn.Linear(h, kv * d, bias=sh.bias)
            self.v_proj = nn.Linear(h, kv * d, bias=sh.bias)
        self.o_proj = nn.Linear(a * d, h, bias=False)
        self.scale = 1.0 / math.sqrt(d)

    def project(self, x):
        sh = self.sh
        if sh.fused:
            qkv = self.qkv_proj(x)
            qd, kvd = sh.a * sh.d, sh.kv * sh.d
            return (qkv[..., :qd], qkv[..., qd:qd + kvd],
                    qkv[..., qd + kvd:])
        return self.q_proj(x), self.k_proj(x), self.v_proj(x)

    def forward(self, x, cos, sin):
        sh = self.sh
        b, s, _ = x.shape
        q, k, v = self.project(x)
        # (b, s, heads, d), the layout flash_attn_func takes.
        q = q.view(b, s, sh.a, sh.d)
        k = k.view(b, s, sh.kv, sh.d)
        v = v.view(b, s, sh.kv, sh.d)
        c, sn = cos[:, :, None, :], sin[:, :, None, :]
        q, k = rope(q, c, sn), rope(k, c, sn)
        o = flash_rows(q, k, v, self.scale, sh.attn_cap)
        return self.o_proj(o.reshape(b, s, sh.a * sh.d))


class MLP(nn.Module):
    def __init__(self, sh, inter, fused=False):
        super().__init__()
        self.fused, self.act = fused, sh.act
        if fused:
            self.gate_up_proj = nn.Linear(sh.h, 2 * inter, bias=False)
        else:
            self.gate_proj = nn.Linear(sh.h, inter, bias=False)
            self.up_proj = nn.Linear(sh.h, inter, bias=False)
        self.down_proj = nn.Linear(inter, sh.h, bias=False)

    def forward(self, x):
        if self.fused:
            gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        else:
            gate, up = self.gate_proj(x), self.up_proj(x)
        if self.act == "gelu_tanh":
            gate = F.gelu(gate, approximate="tanh")
        else:
            gate = F.silu(gate)
        return self.down_proj(gate * up)


class MoE(nn.Module):
    def __init__(self, sh):
        super().__init__()
        self.sh = sh
        self.gate = nn.Linear(sh.h, sh.E, bias=False)
        self.experts = nn.ModuleList(MLP(sh, sh.I_moe) for _ in range(sh.E))
        if sh.moe == "qwen2_moe":
            self.shared_expert = MLP(sh, sh.I_shared)
            self.shared_expert_gate = nn.Linear(sh.h, 1, bias=False)

    def shared(self, x):
        shared = self.shared_expert(x)
        return torch.sigmoid(self.shared_expert_gate(x)) * shared

    def forward(self, x):
        sh = self.sh
        b, s, h = x.shape
        x = x.view(-1, h)
        shared = None
        if sh.moe == "qwen2_moe":
            # vLLM runs the shared expert first: its output is alive
            # while the routed experts run.
            shared = self.shared(x)
        logits = self.gate(x)
        w = F.softmax(logits, dim=1, dtype=torch.float)
        w, sel = torch.topk(w, sh.k, dim=-1)
        if sh.renorm:
            w /= w.sum(dim=-1, keepdim=True)
        w = w.to(x.dtype)
        out = self.fused_experts(x, w, sel)
        if shared is not None:
            out = out + shared
        return out.view(b, s, h)

    def fused_experts(self, x, w, sel):
        """What vLLM's fused_moe holds (no grad): every routed copy of every
        token at once, in three buffers, whatever the routing: the gate and
        up projections (t k x 2Ie), act(gate) * up (t k x Ie) and the
        weighted down projections (t k x h), summed over the k copies into
        the output (t x h).  (vLLM from 0.7 lays the first and the last in
        one buffer of t k x max(2Ie, h): less than this.)  The rows are in
        expert order, as the kernel's sorted token ids have them; every
        product is written into its buffer (out=), a row at a time where
        the rows are gathered, so that nothing else is allocated but the
        order and its token numbers (int64 t k each; vLLM's sorted ids are
        int32)."""
        sh = self.sh
        t, h = x.shape
        k, Ie = sel.shape[1], sh.I_moe
        order = sel.reshape(-1).argsort()
        tokens = torch.div(order, k, rounding_mode="floor")
        counts = torch.bincount(sel.reshape(-1), minlength=sh.E).tolist()
        rows = tokens.tolist()
        c1 = x.new_empty((t * k, 2 * Ie))
        c2 = x.new_empty((t * k, Ie))
        c3 = x.new_empty((t * k, h))
        start = 0
        for e, n in enumerate(counts):
            gate = self.experts[e].gate_proj.weight.t()
            up = self.experts[e].up_proj.weight.t()
            for j in range(start, start + n):
                tok = rows[j]
                torch.mm(x[tok:tok + 1], gate, out=c1[j:j + 1, :Ie])
                torch.mm(x[tok:tok + 1], up, out=c1[j:j + 1, Ie:])
            start += n
        F.silu(c1[:, :Ie], inplace=True)
        torch.mul(c1[:, :Ie], c1[:, Ie:], out=c2)
        start = 0
        for e, n in enumerate(counts):
            down = self.experts[e].down_proj.weight.t()
            if n:
                torch.mm(c2[start:start + n], down,
                         out=c3[start:start + n])
            start += n
        c3.mul_(w.reshape(-1)[order][:, None])
        out = torch.zeros_like(x)
        # Summed a row at a time, as vLLM's moe_sum adds the k copies
        # without a buffer: torch 2's index_add_ on the CPU allocates a
        # temporary of its own (512 bytes at these shapes).
        for j, tok in enumerate(tokens.tolist()):
            out[tok].add_(c3[j])
        return out


class Layer(nn.Module):
    def __init__(self, sh):
        super().__init__()
        self.sh = sh
        self.input_layernorm = RMSNorm(sh.h, sh.norm)
        self.self_attn = Attention(sh)
        self.post_attention_layernorm = RMSNorm(sh.h, sh.norm)
        if sh.nnorms == 4:
            self.pre_feedforward_layernorm = RMSNorm(sh.h, sh.norm)
            self.post_feedforward_layernorm = RMSNorm(sh.h, sh.norm)
        self.mlp = MoE(sh) if sh.moe else MLP(sh, sh.I, sh.fused)

    def forward(self, x, cos, sin):
        r = x
        x = self.self_attn(self.input_layernorm(x), cos, sin)
        if self.sh.nnorms == 4:
            # Gemma-2 normalises the attention output before the residual
            # and the MLP's input and output.
            x = r + self.post_attention_layernorm(x)
            r = x
            x = self.mlp(self.pre_feedforward_layernorm(x))
            return r + self.post_feedforward_layernorm(x)
        x = r + x
        return x + self.mlp(self.post_attention_layernorm(x))


class CausalLM(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        sh = self.sh = Shape(cfg)
        self.embed_tokens = nn.Embedding(sh.V, sh.h)
        self.layers = nn.ModuleList(Layer(sh) for _ in range(sh.L))
        self.norm = RMSNorm(sh.h, sh.norm)
        self.lm_head = nn.Linear(sh.h, sh.V, bias=False)
        if sh.tied:
            self.lm_head.weight = self.embed_tokens.weight
        inv = 1.0 / (10000 ** (torch.arange(0, sh.d, 2).float() / sh.d))
        self.register_buffer("inv_freq", inv, persistent=False)
        self.to(dtype)
        self.inv_freq.data = inv

    def rotary(self, x, s):
        t = torch.arange(s, dtype=torch.float32)
        f = torch.outer(t, self.inv_freq)
        emb = torch.cat((f, f), dim=-1)[None].expand(x.shape[0], -1, -1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    def hidden(self, ids):
        x = self.embed_tokens(ids)
        if self.sh.type == "gemma2":
            x = x * torch.tensor(self.sh.h ** 0.5, dtype=x.dtype)
        cos, sin = self.rotary(x, ids.shape[1])
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.norm(x)

    def softcap(self, logits):
        if self.sh.final_cap is not None:
            logits = logits / self.sh.final_cap
            logits = torch.tanh(logits)
            logits = logits * self.sh.final_cap
        return logits

    @torch.no_grad()
    def serve(self, ids):
        """A serving engine's profile run (vLLM's): one no-grad forward over
        ids (seqs, n), the final norm over every token, the hidden state of
        the last token of each sequence (an index_select of the flattened
        hidden states, whose int64 index is gone when it returns, as
        vLLM's _dummy_run hands them back), then profile_sampler on them.
        The model runner keeps every token's hidden states and the last
        ones while the sampler runs."""
        hidden = self.hidden(ids)
        seqs, n = ids.shape
        last = torch.arange(n - 1, seqs * n, n)
        x = hidden.view(seqs * n, -1).index_select(0, last)
        del last
        return profile_sampler(self, x)


    @torch.no_grad()
    def serve_v0(self, ids, family):
        """The V0 engine's profile run (vllm/worker/model_runner.py
        profile_run, vLLM 0.2.6 to 0.7.x): the same forward, the last
        token's hidden state of each sequence (the sampler's index_select),
        its 16-bit logits, then v0_sampler of family ("0.2.6", "0.3.0",
        "0.5.0" or "0.5.5") with the sequences' prompt tokens.  The runner
        keeps every token's hidden states and, from 0.5.5, the 16-bit
        logits it handed the sampler."""
        hidden = self.hidden(ids)
        seqs, n = ids.shape
        last = torch.arange(n - 1, seqs * n, n)
        x = hidden.view(seqs * n, -1).index_select(0, last)
        del last
        logits = self.softcap(self.lm_head(x))
        return v0_sampler(logits, family, n)


def gather16(x, index):
    """torch.gather as a GPU runs it on 16-bit values, allocating only its
    output: on the CPU a bf16 gather holds an fp32 buffer of the output's
    size besides (a CPU artefact), which gathering the same bits as int16
    does not."""
    if x.element_size() != 2:
        return torch.gather(x, -1, index)
    return torch.gather(x.view(torch.int16), -1, index).view(x.dtype)


def v0_filter_a16(logits, p, k):
    """The top-p then top-k filter of vLLM 0.2.5 (sampler.py,
    _apply_top_p_top_k before pull request 1889, in 0.2.6), tensor for
    tensor: the logits sorted descending with their int64 order, the
    softmax of the sorted logits and its cumulative sum, the top-p mask
    (from the difference of the two, gone once compared), the sorted
    logits masked in place, the top-k mask from an arange of V (gone once
    compared), and the order's argsort (a sort of the int64 order, whose
    sorted copy is dropped) gathering them back."""
    srt, idx = logits.sort(dim=-1, descending=True)
    probs = srt.softmax(dim=-1)
    cum = probs.cumsum(dim=-1)
    top_p = (cum - probs) > p.unsqueeze(dim=1)
    srt.masked_fill_(top_p, -float("inf"))
    top_k = torch.arange(idx.shape[-1]).expand(idx.shape[0], -1)
    top_k = top_k >= k.unsqueeze(dim=1)
    srt.masked_fill_(top_k, -float("inf"))
    return gather16(srt, torch.argsort(idx, dim=-1))


def v0_filter_p16(logits, p, k):
    """The top-p then top-k filter of vLLM 0.2.6 and 0.2.7
    (vllm/model_executor/layers/sampler.py, _apply_top_p_top_k), tensor for
    tensor: the logits sorted descending with their int64 order, the
    softmax of the sorted logits and its cumulative sum less itself, the
    top-p mask, the top-k mask from an arange of V (whose int64 row is
    gone once the comparison is made), their union, the sorted logits
    masked in place, and the inverse order (an arange row scattered)
    gathering them back."""
    srt, idx = logits.sort(dim=-1, descending=True)
    probs = srt.softmax(dim=-1)
    cum = probs.cumsum(dim=-1).sub_(probs)
    top_p = cum > p.unsqueeze(1)
    top_k = torch.arange(idx.shape[-1]).expand(idx.shape[0], -1)
    top_k = top_k >= k.unsqueeze(1)
    mask = top_p | top_k
    srt.masked_fill_(mask, -float("inf"))
    src = torch.arange(idx.shape[-1]).expand_as(idx)
    inv = torch.empty_like(idx).scatter_(dim=-1, index=idx, src=src)
    return gather16(srt, inv)


def v0_filter(logits, p, k):
    """The top-k then top-p filter of vLLM 0.3.0 to 0.7.x (sampler.py,
    _apply_top_k_top_p, pull request 1885), tensor for tensor: the logits
    sorted ascending with their int64 order, the k-th largest of each row
    gathered and the mask of those below it, the softmax and its cumulative
    sum, the top-p mask (its last column kept), both masked in place, and
    the inverse order gathering them back."""
    srt, idx = logits.sort(dim=-1, descending=False)
    kth = srt.size(1) - k.to(torch.long)
    kth = srt.gather(1, kth.unsqueeze(dim=1))
    top_k = srt < kth
    srt.masked_fill_(top_k, -float("inf"))
    probs = srt.softmax(dim=-1)
    cum = probs.cumsum(dim=-1)
    top_p = cum <= 1 - p.unsqueeze(dim=1)
    top_p[:, -1] = False
    srt.masked_fill_(top_p, -float("inf"))
    src = torch.arange(idx.shape[-1]).expand_as(idx)
    inv = torch.empty_like(idx).scatter_(dim=-1, index=idx, src=src)
    return gather16(srt, inv)


def v0_sampler(logits, family, prompt):
    """The V0 Sampler.forward as profile_run calls it (every sequence with
    temperature 1, top_p 0.99 and top_k V - 1, random sampling, one
    sample).  The sampling tensors (sampling_metadata.py SamplingTensors:
    temperature, top-p, min-p and three penalties in the 16-bit logits'
    dtype, top-k in int32, a value a sequence) and, before 0.5.0 (pull
    request 5289), the prompt tokens (int64, the sequences' prompt
    lengths); from 0.5.5 (pull request 2937) an fp32 copy of the logits,
    before on the 16-bit logits themselves; the temperature divided in
    place, the family's filter, the fp32 softmax and log_softmax, and
    _multinomial on the rows sampled (an indexed copy of the
    probabilities) divided by exponential noise, whose argmax is the
    id."""
    n, V = logits.shape
    dt = logits.dtype
    if family == "0.2.5":
        # Lists, not tensors: the filter makes top-p and top-k itself and
        # a temperature of 1 divides nothing.
        p = torch.full((n,), 0.99, dtype=dt)
        k = torch.full((n,), V - 1, dtype=torch.int)
        x = v0_filter_a16(logits, p, k)
        del p, k
        return v0_draw(x)
    temp = torch.ones(n, dtype=dt)
    top_p = torch.full((n,), 0.99, dtype=dt)
    values = [torch.zeros(n, dtype=dt) for _ in range(4)]
    top_k = torch.full((n,), V - 1, dtype=torch.int)
    tokens = None
    if family in ("0.2.6", "0.3.0"):
        tokens = torch.zeros(n, prompt, dtype=torch.long)
    x = logits.to(torch.float32) if family == "0.5.5" else logits
    x.div_(temp.unsqueeze(1))
    if family == "0.2.6":
        x = v0_filter_p16(x, top_p, top_k)
    else:
        x = v0_filter(x, top_p, top_k)
    ids = v0_draw(x)
    del values, tokens
    return ids


def v0_draw(x):
    """The fp32 softmax and log_softmax of the filtered logits, and
    _multinomial on the rows sampled (an indexed copy of the
    probabilities) divided by exponential noise, whose argmax is the
    id."""
    probs = torch.softmax(x, dim=-1, dtype=torch.float32)
    logprobs = torch.log_softmax(x, dim=-1, dtype=torch.float32)
    rows = probs[torch.arange(x.shape[0])]
    noise = torch.empty_like(rows).exponential_(1)
    ids = rows.div_(noise).argmax(dim=1)
    del logprobs
    return ids


SAMPLING_EPS = 1e-5


def top_k_top_p(logits, k, p):
    """What vLLM's top-k/top-p filter on a GPU allocates (vLLM 0.33:
    apply_top_k_top_p_triton in vllm/v1/sample/ops/topk_topp_triton.py, on
    fp32 logits (seqs, V), k int64 and p fp32 (seqs)): k as int32 (gone
    once the kernel ran) and nothing of V, since the kernel masks the logits
    in place.  The row buffer it caches across calls (one row a streaming
    multiprocessor at most) is not emulated, as mf_forward_peak does not
    count it.  The masking itself is left out: memory is what is
    measured."""
    k32 = k.to(torch.int32)
    del k32
    return logits


def sample(logits, meta):
    """vLLM's v1 Sampler on 16-bit logits, as the profile run calls it (no
    logprobs, no penalties, neither all greedy nor all random), through
    TopKTopPSampler.forward_native with Triton's top-k/top-p (FlashInfer's
    sampler, the first call's, holds no more): an fp32 copy, its
    greedy argmax (int64), the temperature divided in place, top_k_top_p,
    the softmax (fp32) divided in place by exponential noise (fp32) and its
    argmax, the greedy or the random id (int64), returned as int32."""
    temp = meta["temperature"]
    x = logits.to(torch.float32)
    greedy = x.argmax(dim=-1)
    x.div_(torch.where(temp < SAMPLING_EPS, 1.0, temp).unsqueeze(1))
    x = top_k_top_p(x, meta["top_k"], meta["top_p"])
    probs = x.softmax(dim=-1, dtype=torch.float32)
    noise = torch.empty_like(probs)
    noise.exponential_()
    chosen = probs.div_(noise).argmax(dim=-1)
    del probs, noise
    ids = torch.where(temp < SAMPLING_EPS, greedy, chosen)
    return ids.to(torch.int32).unsqueeze(-1)


def profile_sampler(model, last):
    """vLLM's _dummy_sampler_run (vllm/v1/worker/gpu_model_runner.py) on
    the last tokens' hidden states (seqs, h): a random stand-in for them
    (rand_like, kept), the 16-bit logits of the lm_head (soft-capped for
    Gemma-2), the dummy sampling metadata (temperature 0.5, top_p 0.9 and
    three penalties in fp32, top_k V - 1 in int64, one value a sequence),
    then the sampler twice, the second time as the warm-up with a
    generator, while the first one's int32 ids are held."""
    x = torch.rand_like(last)
    logits = model.softcap(model.lm_head(x))
    n, V = logits.shape
    meta = {
        "temperature": torch.full((n,), 0.5),
        "top_p": torch.full((n,), 0.9),
        "top_k": torch.full((n,), V - 1),
        "penalties": [torch.full((n,), 0.1) for _ in range(3)],
    }
    first = sample(logits, meta)
    return first, sample(logits, meta)
