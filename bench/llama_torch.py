"""The Llama-3-8B decoder layer of examples/llama_layer.py written in PyTorch, the anchor both
bench/llama_layer.py (beside ts.jit) and bench/anchors.py (beside the evidence packet of
bench/llama_cuda.json) time: bf16 tensors, f32 where torch computes in f32 (the norms' statistics,
matmul accumulation), SDPA for attention. Imports torch only."""
import math

import torch

HIDDEN, HEADS, KV, FFN = 4096, 32, 8, 14336
THETA, EPS = 500000.0, 1e-5  # examples/llama_layer.py's


def torch_layer(x, g1, wqkv, cos, sin, wo, g2, wgu, wd):
    """x [S, H] or [B, S, H]; the weights as in examples/llama_layer.py's layer()."""
    *lead, s, h = x.shape
    b = lead[0] if lead else 1
    d = h // HEADS
    t = x.reshape(b * s, h)

    def norm(t, g):
        t32 = t.float()
        return (t32 * torch.rsqrt(t32.pow(2).mean(-1, keepdim=True) + EPS)).to(t.dtype) * g

    q, k, v = torch.split(norm(t, g1) @ wqkv, [HEADS * d, KV * d, KV * d], dim=1)

    def rope(t, n):
        t = t.view(b, s, n, d)
        t1, t2 = t.chunk(2, dim=-1)
        return t * cos[:, None] + torch.cat([t2, t1], -1) * sin[:, None]

    q = rope(q, HEADS).transpose(1, 2)
    k = rope(k, KV).transpose(1, 2)
    v = v.view(b, s, KV, d).transpose(1, 2)
    # what Llama implementations call: SDPA picks its fastest backend (flash or cuDNN)
    attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    attn = attn.transpose(1, 2).reshape(b * s, h)
    hh = t + attn @ wo
    gate, up = torch.chunk(norm(hh, g2) @ wgu, 2, dim=1)
    return (hh + (torch.nn.functional.silu(gate) * up) @ wd).reshape(x.shape)


def rope_tables(s, d, device):
    """cos and sin [S, D] (sin with the rotate-half sign folded in), as examples/llama_layer.py's."""
    inv = 1.0 / THETA ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = torch.arange(s, dtype=torch.float64)[:, None] * torch.cat([inv, inv])[None, :]
    sign = torch.cat([-torch.ones(d // 2), torch.ones(d // 2)]).double()
    return torch.cos(angle).to(device), (torch.sin(angle) * sign).to(device)


def layer_inputs(seq, batch=1, seed=0):
    """The layer's arguments on the GPU, bf16: x, g1, wqkv, cos, sin, wo, g2, wgu, wd (random weights scaled
    by 1/sqrt(fan-in))."""
    d = HIDDEN // HEADS
    gen = torch.Generator(device="cuda").manual_seed(seed)
    bf = torch.bfloat16
    w = lambda *shape: (torch.randn(*shape, device="cuda", generator=gen) / math.sqrt(shape[0])).to(bf)  # noqa: E731
    cos, sin = (t.to(bf) for t in rope_tables(seq, d, "cuda"))
    x_shape = (batch, seq, HIDDEN) if batch > 1 else (seq, HIDDEN)
    return (torch.randn(*x_shape, device="cuda", generator=gen).to(bf),
            (1 + 0.1 * torch.randn(HIDDEN, device="cuda", generator=gen)).to(bf), w(HIDDEN, (HEADS + 2 * KV) * d),
            cos, sin, w(HEADS * d, HIDDEN), (1 + 0.1 * torch.randn(HIDDEN, device="cuda", generator=gen)).to(bf),
            w(HIDDEN, 2 * FFN), w(FFN, HIDDEN))
