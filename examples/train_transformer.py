"""A tiny transformer that learns with Tessera's gradients: token embedding (tied to the output), one
pre-norm decoder block (RMSNorm, grouped-query causal attention, SwiGLU-free SiLU MLP, residuals), a final
RMSNorm and next-token cross-entropy, trained by AdamW on synthetic sequences. One jitted step computes
the loss, its gradients (through attention_grad, the norms' and matmuls' gradients, and the embedding's
scatter-add) and the update, as one compiled program writing the new parameters and optimizer state into
the arrays it was given.

The task: each sequence counts up by its own stride modulo VOCAB from a random start, so the next token
follows from the last two; a model that attends learns it, one that does not stays near log(VOCAB).

Two configurations: CPU (float32 throughout, head dim 8) and GPU (head dim 64, attention in bfloat16 with
float32 softmax and accumulation, as the CUDA attention blocks take it; the rest float32). The same
forward pass in numpy (float64) is the reference: the gradient of Tessera's step at the initial
parameters is checked against its central finite differences (tests/python/test_train_transformer.py);
on CUDA the loss curve follows the same model trained by PyTorch (tests/python/test_cuda.py).

  PYTHONPATH=build/python python3 examples/train_transformer.py [--steps 80] [--device cuda]
"""
import argparse
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

import tessera as ts

LR, BETA1, BETA2, EPS, WEIGHT_DECAY = 0.01, 0.9, 0.999, 1e-8, 0.01
NAMES = ("emb", "g1", "wq", "wk", "wv", "wo", "g2", "w1", "w2", "gf")
P = len(NAMES)


@dataclass(frozen=True)
class Config:
    vocab: int = 16
    dim: int = 32
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 8
    hidden: int = 64
    seq: int = 16
    batch: int = 32
    attention_dtype: str = "f32"  # "bf16": q, k and v cast for attention, its output cast back


CPU = Config()
GPU = Config(dim=128, heads=2, kv_heads=1, head_dim=64, hidden=256, seq=32, batch=16, attention_dtype="bf16")


def build(cfg=CPU):
    """The model's loss (a traceable function of the parameters, tokens and targets) and its jitted AdamW
    step for one configuration."""

    def heads(x, n):
        """[B, S, n * head_dim] -> [B, n, S, head_dim]."""
        return x.reshape(cfg.batch, cfg.seq, n, cfg.head_dim).transpose(0, 2, 1, 3)

    def attend(q, k, v):
        if cfg.attention_dtype == "f32":
            return ts.attention(q, k, v, causal=True)
        narrow = [ts.cast(t, cfg.attention_dtype) for t in (q, k, v)]
        return ts.cast(ts.attention(*narrow, causal=True), "f32")

    def loss(emb, g1, wq, wk, wv, wo, g2, w1, w2, gf, tokens, targets):
        """Mean next-token cross-entropy of the model."""
        x = ts.take(emb, tokens, axis=0)
        h = ts.rms_norm(x, g1)
        a = attend(heads(h @ wq, cfg.heads), heads(h @ wk, cfg.kv_heads), heads(h @ wv, cfg.kv_heads))
        x = x + a.transpose(0, 2, 1, 3).reshape(cfg.batch, cfg.seq, cfg.heads * cfg.head_dim) @ wo
        x = x + ts.silu(ts.rms_norm(x, g2) @ w1) @ w2
        logp = ts.log_softmax(ts.rms_norm(x, gf) @ emb.T, axis=-1)
        return -ts.mean(ts.take_along_axis(logp, targets[..., None], axis=-1))

    grads = ts.value_and_grad(loss, argnums=tuple(range(P)))

    # Outputs 1..3P (parameters, first and second moments) overwrite arguments 0..3P-1.
    @ts.jit(in_place=(None, *range(3 * P)))
    def adamw_step(*args):
        """AdamW as in examples/train_mlp.py; c1, c2 (bias corrections) are rank-0 arguments."""
        params, ms, ss = args[:P], args[P:2 * P], args[2 * P:3 * P]
        tokens, targets, c1, c2 = args[3 * P:]
        value, gs = grads(*params, tokens, targets)
        ms = [BETA1 * m + (1 - BETA1) * g for m, g in zip(ms, gs)]
        ss = [BETA2 * v + (1 - BETA2) * g * g for v, g in zip(ss, gs)]
        ps = [p - LR * (m * c1 / (ts.sqrt(v * c2) + EPS) + WEIGHT_DECAY * p) for p, m, v in zip(params, ms, ss)]
        return (value, *ps, *ms, *ss)

    return SimpleNamespace(cfg=cfg, loss=loss, adamw_step=adamw_step)


def numpy_loss(params, tokens, targets, cfg=CPU):
    """The same forward pass in numpy (the reference; attention in the parameters' precision)."""
    emb, g1, wq, wk, wv, wo, g2, w1, w2, gf = params

    def rms(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g

    def split(x, n):
        return x.reshape(cfg.batch, cfg.seq, n, cfg.head_dim).transpose(0, 2, 1, 3)

    x = emb[tokens]
    h = rms(x, g1)
    group = cfg.heads // cfg.kv_heads
    q = split(h @ wq, cfg.heads)
    k, v = (np.repeat(split(h @ w, cfg.kv_heads), group, axis=1) for w in (wk, wv))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(cfg.head_dim)
    s = np.where(np.tril(np.ones((cfg.seq, cfg.seq), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    a = (p / p.sum(-1, keepdims=True)) @ v
    x = x + a.transpose(0, 2, 1, 3).reshape(cfg.batch, cfg.seq, -1) @ wo
    u = rms(x, g2) @ w1
    x = x + (u / (1 + np.exp(-u))) @ w2
    z = rms(x, gf) @ emb.T
    z = z - z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, targets[..., None], axis=-1).mean()


def batch(rng, cfg=CPU):
    """Sequences counting up by a stride of 1..3 from a random start, modulo vocab; targets are the next tokens."""
    start = rng.integers(0, cfg.vocab, (cfg.batch, 1))
    stride = rng.integers(1, 4, (cfg.batch, 1))
    seq = (start + stride * np.arange(cfg.seq + 1)) % cfg.vocab
    return seq[:, :-1].astype(np.int64), seq[:, 1:].astype(np.int64)


def init(seed=0, dtype=np.float32, cfg=CPU):
    rng = np.random.default_rng(seed)
    d, inner, kv = cfg.dim, cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    shapes = {"emb": (cfg.vocab, d), "wq": (d, inner), "wk": (d, kv), "wv": (d, kv), "wo": (inner, d),
              "w1": (d, cfg.hidden), "w2": (cfg.hidden, d)}
    params = []
    for name in NAMES:
        if name in shapes:
            fan_in = shapes[name][0] if name != "emb" else d
            params.append((rng.standard_normal(shapes[name]) / np.sqrt(fan_in)).astype(dtype))
        else:
            params.append(np.ones(d, dtype))  # the norms' gains
    return params


def batches(steps, seed=0, cfg=CPU):
    """The training batches and bias corrections, step by step (the same for any implementation)."""
    rng = np.random.default_rng(seed + 1)
    for t in range(1, steps + 1):
        tokens, targets = batch(rng, cfg)
        yield t, tokens, targets, (np.array(1 / (1 - b**t), np.float32) for b in (BETA1, BETA2))


_models = {CPU: build(CPU)}


def train(steps, seed=0, cfg=CPU, to=lambda a: a):
    """Trains from init(seed) (arrays made by `to`: e.g. torch tensors on CUDA); returns the loss of every
    step and the final parameters."""
    model = _models.setdefault(cfg, build(cfg))
    params = [to(p) for p in init(seed, cfg=cfg)]
    state = [to(np.zeros_like(p)) for _ in range(2) for p in init(seed, cfg=cfg)]
    curve = []
    for _, tokens, targets, (c1, c2) in batches(steps, seed, cfg):
        value, *_ = model.adamw_step(*params, *state, to(tokens), to(targets), to(c1), to(c2))
        curve.append(float(value))
    return curve, params


# The CPU configuration's loss, by name.
loss = _models[CPU].loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = ap.parse_args()
    to, cfg = (lambda a: a), CPU
    if args.device == "cuda":
        import torch

        to, cfg = (lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda()), GPU
    curve, _ = train(args.steps, cfg=cfg, to=to)
    for i in range(0, args.steps, max(1, args.steps // 10)):
        print(f"step {i:3d}  loss {curve[i]:.4f}")
    print(f"final loss {curve[-1]:.4f} (log(vocab) = {np.log(cfg.vocab):.4f}: a model that ignores the context)")


if __name__ == "__main__":
    main()
