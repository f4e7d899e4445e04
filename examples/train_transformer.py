"""A tiny transformer that learns with Tessera's gradients: token embedding (tied to the output), one
pre-norm decoder block (RMSNorm, grouped-query causal attention, SwiGLU-free SiLU MLP, residuals), a final
RMSNorm and next-token cross-entropy, trained by AdamW on synthetic sequences. One jitted step computes
the loss, its gradients (through attention_grad, the norms' and matmuls' gradients, and the embedding's
scatter-add) and the update, as one compiled program writing the new parameters and optimizer state into
the arrays it was given.

The task: each sequence counts up by its own stride modulo VOCAB from a random start, so the next token
follows from the last two; a model that attends learns it, one that does not stays near log(VOCAB).

The same forward pass in numpy (float64) is the reference: the gradient of Tessera's step at the initial
parameters is checked against its central finite differences (tests/python/test_train_transformer.py).

  PYTHONPATH=build/python python3 examples/train_transformer.py [--steps 80]
"""
import argparse

import numpy as np

import tessera as ts

VOCAB, DIM, HEADS, KV_HEADS, HEAD_DIM, HIDDEN, SEQ, BATCH = 16, 32, 4, 2, 8, 64, 16, 32
LR, BETA1, BETA2, EPS, WEIGHT_DECAY = 0.01, 0.9, 0.999, 1e-8, 0.01
NAMES = ("emb", "g1", "wq", "wk", "wv", "wo", "g2", "w1", "w2", "gf")


def heads(x, n):
    """[B, S, n * HEAD_DIM] -> [B, n, S, HEAD_DIM]."""
    return x.reshape(BATCH, SEQ, n, HEAD_DIM).transpose(0, 2, 1, 3)


def loss(emb, g1, wq, wk, wv, wo, g2, w1, w2, gf, tokens, targets):
    """Mean next-token cross-entropy of the model."""
    x = ts.take(emb, tokens, axis=0)
    h = ts.rms_norm(x, g1)
    a = ts.attention(heads(h @ wq, HEADS), heads(h @ wk, KV_HEADS), heads(h @ wv, KV_HEADS), causal=True)
    x = x + a.transpose(0, 2, 1, 3).reshape(BATCH, SEQ, HEADS * HEAD_DIM) @ wo
    x = x + ts.silu(ts.rms_norm(x, g2) @ w1) @ w2
    logp = ts.log_softmax(ts.rms_norm(x, gf) @ emb.T, axis=-1)
    return -ts.mean(ts.take_along_axis(logp, targets[..., None], axis=-1))


grads = ts.value_and_grad(loss, argnums=tuple(range(len(NAMES))))
P = len(NAMES)


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


def numpy_loss(params, tokens, targets):
    """The same forward pass in numpy (the reference)."""
    emb, g1, wq, wk, wv, wo, g2, w1, w2, gf = params

    def rms(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g

    def split(x, n):
        return x.reshape(BATCH, SEQ, n, HEAD_DIM).transpose(0, 2, 1, 3)

    x = emb[tokens]
    h = rms(x, g1)
    group = HEADS // KV_HEADS
    q = split(h @ wq, HEADS)
    k, v = (np.repeat(split(h @ w, KV_HEADS), group, axis=1) for w in (wk, wv))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(HEAD_DIM)
    s = np.where(np.tril(np.ones((SEQ, SEQ), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    a = (p / p.sum(-1, keepdims=True)) @ v
    x = x + a.transpose(0, 2, 1, 3).reshape(BATCH, SEQ, -1) @ wo
    u = rms(x, g2) @ w1
    x = x + (u / (1 + np.exp(-u))) @ w2
    z = rms(x, gf) @ emb.T
    z = z - z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, targets[..., None], axis=-1).mean()


def batch(rng):
    """Sequences counting up by a stride of 1..3 from a random start, modulo VOCAB; targets are the next tokens."""
    start = rng.integers(0, VOCAB, (BATCH, 1))
    stride = rng.integers(1, 4, (BATCH, 1))
    seq = (start + stride * np.arange(SEQ + 1)) % VOCAB
    return seq[:, :-1].astype(np.int64), seq[:, 1:].astype(np.int64)


def init(seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    shapes = {"emb": (VOCAB, DIM), "wq": (DIM, HEADS * HEAD_DIM), "wk": (DIM, KV_HEADS * HEAD_DIM),
              "wv": (DIM, KV_HEADS * HEAD_DIM), "wo": (HEADS * HEAD_DIM, DIM), "w1": (DIM, HIDDEN),
              "w2": (HIDDEN, DIM)}
    params = []
    for name in NAMES:
        if name in shapes:
            fan_in = shapes[name][0] if name != "emb" else DIM
            params.append((rng.standard_normal(shapes[name]) / np.sqrt(fan_in)).astype(dtype))
        else:
            params.append(np.ones(DIM, dtype))  # the norms' gains
    return params


def train(steps, seed=0):
    """Trains from init(seed); returns the loss of every step."""
    rng = np.random.default_rng(seed + 1)
    params = init(seed)
    state = [np.zeros_like(p) for _ in range(2) for p in params]
    curve = []
    for t in range(1, steps + 1):
        tokens, targets = batch(rng)
        c1, c2 = (np.array(1 / (1 - b**t), np.float32) for b in (BETA1, BETA2))
        value, *_ = adamw_step(*params, *state, tokens, targets, c1, c2)
        curve.append(float(value))
    return curve


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=80)
    args = ap.parse_args()
    curve = train(args.steps)
    for i in range(0, args.steps, max(1, args.steps // 10)):
        print(f"step {i:3d}  loss {curve[i]:.4f}")
    print(f"final loss {curve[-1]:.4f} (log(VOCAB) = {np.log(VOCAB):.4f}: a model that ignores the context)")


if __name__ == "__main__":
    main()
