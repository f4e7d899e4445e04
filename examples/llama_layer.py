"""One Llama-3-style decoder layer, written the way models are: a fused QKV projection split into heads,
RoPE on the query and key heads, grouped-query causal attention (ts.attention: no scores in memory),
the output projection and a residual, RMSNorm, a SwiGLU MLP and a second residual.

    PYTHONPATH=build/python python3 examples/llama_layer.py [--size small|8b] [--emit FILE.tsr]

`small` (the default) runs on the CPU in f32 and checks the result against numpy; `8b` is Llama-3-8B's
shape (hidden 4096, 32 query heads, 8 KV heads, head dim 128, FFN 14336, bf16 storage) and only traces
it. `--emit` writes the traced Graph IR (examples/llama_layer.tsr is `--size 8b --emit`).
"""
import argparse
import sys

import numpy as np

import tessera as ts

SIZES = {  # (sequence, hidden, query heads, KV heads, FFN, dtype)
    "small": (64, 256, 8, 2, 512, "f32"),
    "cpu": (512, 1024, 8, 2, 2816, "f32"),  # the CPU benchmark's (bench/llama_cpu.json)
    "8b": (2048, 4096, 32, 8, 14336, "bf16"),
}
THETA, EPS = 500000.0, 1e-5


def layer(x, g1, wqkv, cos, sin, wo, g2, wgu, wd, heads, kv_heads):
    """x [S, H] or a batch of sequences [B, S, H]; wqkv [H, (heads + 2 kv_heads) D]; cos, sin [S, D] (sin
    with the rotate-half sign folded in: -sin on the first half); wo [heads D, H]; wgu [H, 2F] (gate, then
    up); wd [F, H]. The projections see every token as a row: [B*S, H]."""
    *lead, s, hidden = x.shape  # lead: [] or [B]
    b = lead[0] if lead else 1
    d = hidden // heads
    t = x.reshape(b * s, hidden) if lead else x
    qkv = ts.rms_norm(t, g1, eps=EPS) @ wqkv
    q, k, v = ts.split(qkv, [heads * d, (heads + kv_heads) * d], axis=1)

    def rope(t, n):  # t [B*S, n*D] -> [(B,) S, n, D], each head rotated by its position
        t = t.reshape(*lead, s, n, d)
        t1, t2 = ts.split(t, 2, axis=-1)
        return t * cos[:, None, :] + ts.concatenate([t2, t1], axis=-1) * sin[:, None, :]

    def swap_s_n(t):  # [(B,) S, n, D] <-> [(B,) n, S, D]
        r = len(t.shape)
        return t.transpose(*range(r - 3), r - 2, r - 3, r - 1)

    def heads_first(t):  # -> [B, n, S, D]
        return swap_s_n(t) if lead else swap_s_n(t)[None]

    # Grouped-query causal attention on [B, heads, S, D] (query head h reads KV head h // group).
    q = heads_first(rope(q, heads))
    k = heads_first(rope(k, kv_heads))
    v = heads_first(v.reshape(*lead, s, kv_heads, d))
    attn = ts.attention(q, k, v, causal=True)
    attn = swap_s_n(attn if lead else attn[0]).reshape(b * s, hidden)
    h = t + attn @ wo
    gate, up = ts.split(ts.rms_norm(h, g2, eps=EPS) @ wgu, 2, axis=1)
    out = h + (ts.silu(gate) * up) @ wd
    return out.reshape(b, s, hidden) if lead else out


def rope_tables(s, d):
    inv = 1.0 / THETA ** (np.arange(0, d, 2, dtype=np.float64) / d)
    angle = np.arange(s, dtype=np.float64)[:, None] * np.concatenate([inv, inv])[None, :]
    sign = np.concatenate([-np.ones(d // 2), np.ones(d // 2)])
    return np.cos(angle), np.sin(angle) * sign


def reference(x, g1, wqkv, cos, sin, wo, g2, wgu, wd, heads, kv_heads, dtype=np.float64):
    """The same layer in numpy, in `dtype` (float64 to check against; float32 is the CPU benchmark's anchor).
    x [S, H] or [B, S, H] (each sequence on its own)."""
    if x.ndim == 3:
        return np.stack([reference(xi, g1, wqkv, cos, sin, wo, g2, wgu, wd, heads, kv_heads, dtype) for xi in x])
    x, g1, wqkv, cos, sin, wo, g2, wgu, wd = (a.astype(dtype) for a in (x, g1, wqkv, cos, sin, wo, g2, wgu, wd))
    s, hidden = x.shape
    d = hidden // heads
    norm = lambda t, g: t / np.sqrt((t * t).mean(-1, keepdims=True) + dtype(EPS)) * g
    q, k, v = np.split(norm(x, g1) @ wqkv, [heads * d, (heads + kv_heads) * d], axis=1)
    rot = lambda t: t * cos[:, None] + np.concatenate([t[..., d // 2:], t[..., :d // 2]], -1) * sin[:, None]
    q, k, v = rot(q.reshape(s, heads, d)), rot(k.reshape(s, kv_heads, d)), v.reshape(s, kv_heads, d)
    k, v = (np.repeat(t, heads // kv_heads, axis=1) for t in (k, v))  # each KV head serves its group
    scores = np.einsum("qhd,khd->hqk", q, k) / dtype(np.sqrt(d))
    scores = np.where(np.tri(s, dtype=bool), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    h = x + np.einsum("hqk,khd->qhd", p, v).reshape(s, hidden) @ wo
    gate, up = np.split(norm(h, g2) @ wgu, 2, axis=1)
    return h + (gate / (1 + np.exp(-gate)) * up) @ wd


def weights(size, rng):
    s, hidden, heads, kv_heads, ffn, _ = SIZES[size]
    d = hidden // heads
    w = lambda *shape: (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
    cos, sin = rope_tables(s, d)
    return (rng.standard_normal((s, hidden)).astype(np.float32), (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32),
            w(hidden, (heads + 2 * kv_heads) * d), cos.astype(np.float32), sin.astype(np.float32), w(heads * d, hidden),
            (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32), w(hidden, 2 * ffn), w(ffn, hidden))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--emit", help="write the traced Graph IR here")
    args = ap.parse_args(argv)
    s, hidden, heads, kv_heads, ffn, dtype = SIZES[args.size]

    def llama_layer(x, g1, wqkv, cos, sin, wo, g2, wgu, wd):
        return layer(x, g1, wqkv, cos, sin, wo, g2, wgu, wd, heads=heads, kv_heads=kv_heads)

    fn = ts.jit(llama_layer)
    if args.emit:
        d = hidden // heads
        shapes = [(s, hidden), (hidden,), (hidden, (heads + 2 * kv_heads) * d), (s, d), (s, d), (heads * d, hidden),
                  (hidden,), (hidden, 2 * ffn), (ffn, hidden)]
        header = (f"// examples/llama_layer.py --size {args.size} --emit: one Llama-3-style decoder layer, traced\n"
                  f"// (S={s}, hidden={hidden}, {heads} query heads, {kv_heads} KV heads, FFN={ffn}, {dtype}).\n")
        with open(args.emit, "w") as f:
            f.write(header + fn.graph(*[(dtype, sh) for sh in shapes]))
    if args.size == "small":
        arrays = weights("small", np.random.default_rng(0))
        out = fn(*arrays, check=True)
        want = reference(*arrays, heads=heads, kv_heads=kv_heads)
        err = np.abs(out - want).max() / np.abs(want).max()
        print(fn.explain(*arrays))
        print(f"llama layer {args.size}: {out.shape} {out.dtype}, max |error| / max |value| against numpy = {err:.2e}")
        if err > 1e-4:
            sys.exit("the layer does not match the numpy reference")


if __name__ == "__main__":
    main(sys.argv[1:])
