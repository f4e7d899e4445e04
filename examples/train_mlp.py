"""A model that learns with Tessera's gradients: a two-layer MLP classifier (GELU-free: tanh, softmax
cross-entropy) trained by SGD with momentum on synthetic data. One jitted step computes the loss, its
gradients (ts.value_and_grad, inlined into the step's trace) and the update, as one compiled program.
The same model and optimizer in numpy, written by hand, trains beside it and the loss curves are compared.

  PYTHONPATH=build/python python3 examples/train_mlp.py [--steps 60] [--device cuda]
"""
import argparse

import numpy as np

import tessera as ts

LR, MOMENTUM = 0.05, 0.9


def loss(w1, b1, w2, b2, x, onehot):
    """Mean softmax cross-entropy of a tanh MLP (labels as one-hot rows)."""
    logits = ts.tanh(x @ w1 + b1) @ w2 + b2
    return -ts.mean(ts.sum(ts.log_softmax(logits, axis=-1) * onehot, axis=-1))


grads = ts.value_and_grad(loss, argnums=(0, 1, 2, 3))


@ts.jit
def step(w1, b1, w2, b2, v1, c1, v2, c2, x, onehot):
    """SGD with momentum: v = m v + g; p = p - lr v. Returns the loss, the parameters, the velocities."""
    value, gs = grads(w1, b1, w2, b2, x, onehot)
    vs = [MOMENTUM * v + g for v, g in zip((v1, c1, v2, c2), gs)]
    ps = [p - LR * v for p, v in zip((w1, b1, w2, b2), vs)]
    return (value, *ps, *vs)


def numpy_step(params, vels, x, onehot):
    """The same step in numpy, gradients by hand."""
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    z = z - z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    value = -(logp * onehot).sum(-1).mean()
    dz = (np.exp(logp) - onehot) / len(x)
    dh = (dz @ w2.T) * (1 - h * h)
    gs = (x.T @ dh, dh.sum(0), h.T @ dz, dz.sum(0))
    vels = [MOMENTUM * v + g for v, g in zip(vels, gs)]
    params = [p - LR * v for p, v in zip(params, vels)]
    return np.float32(value), [p.astype(np.float32) for p in params], [v.astype(np.float32) for v in vels]


def data(seed=0, n=256, features=16, classes=4, hidden=32):
    """Points around `classes` random centres; the initial parameters."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((classes, features)) * 0.5
    labels = rng.integers(0, classes, n)
    x = (centres[labels] + rng.standard_normal((n, features))).astype(np.float32)
    onehot = np.eye(classes, dtype=np.float32)[labels]
    params = [(rng.standard_normal((features, hidden)) / np.sqrt(features)).astype(np.float32),
              np.zeros(hidden, np.float32),
              (rng.standard_normal((hidden, classes)) / np.sqrt(hidden)).astype(np.float32),
              np.zeros(classes, np.float32)]
    return x, onehot, params


def train(steps, to=lambda a: a, back=lambda a: a):
    """Trains both; returns the two loss curves and the final parameters of each."""
    x, onehot, params = data()
    ours, vels = [to(p) for p in params], [to(np.zeros_like(p)) for p in params]
    ref, ref_vels = params, [np.zeros_like(p) for p in params]
    xs, hs = to(x), to(onehot)
    curve, ref_curve = [], []
    for _ in range(steps):
        value, *state = step(*ours, *vels, xs, hs)
        ours, vels = state[:4], state[4:]
        curve.append(float(back(value)))
        value, ref, ref_vels = numpy_step(ref, ref_vels, x, onehot)
        ref_curve.append(float(value))
    return curve, ref_curve, [back(p) for p in ours], ref


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = ap.parse_args()
    to = back = lambda a: a  # noqa: E731
    if args.device == "cuda":
        import torch
        to = lambda a: torch.from_numpy(a).cuda()  # noqa: E731
        back = lambda t: t.cpu().numpy()  # noqa: E731
    curve, ref_curve, ours, ref = train(args.steps, to, back)
    for i in range(0, args.steps, max(1, args.steps // 10)):
        print(f"step {i:3d}  loss {curve[i]:.6f}  numpy {ref_curve[i]:.6f}")
    worst = max(float(np.abs(p - r).max()) for p, r in zip(ours, ref))
    print(f"final loss {curve[-1]:.6f} (numpy {ref_curve[-1]:.6f}); largest parameter difference {worst:.2e}")


if __name__ == "__main__":
    main()
