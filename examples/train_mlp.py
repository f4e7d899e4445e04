"""A model that learns with Tessera's gradients: a two-layer MLP classifier (tanh, softmax cross-entropy
on integer labels) trained by SGD with momentum or by AdamW on synthetic data. One jitted step computes
the loss, its gradients (ts.value_and_grad, inlined into the step's trace) and the update, as one
compiled program that writes the new parameters and optimizer state into the arrays it was given
(ts.jit's in_place). The same model and optimizer in numpy, written by hand, trains beside it and the loss
curves are compared.

  PYTHONPATH=build/python python3 examples/train_mlp.py [--steps 60] [--optimizer adamw] [--device cuda]
"""
import argparse

import numpy as np

import tessera as ts

LR, MOMENTUM = 0.05, 0.9
ADAM_LR, BETA1, BETA2, EPS, WEIGHT_DECAY = 0.01, 0.9, 0.999, 1e-8, 0.01


def loss(w1, b1, w2, b2, x, labels):
    """Mean softmax cross-entropy of a tanh MLP."""
    logits = ts.tanh(x @ w1 + b1) @ w2 + b2
    return -ts.mean(ts.take_along_axis(ts.log_softmax(logits, axis=-1), labels[:, None], axis=-1))


grads = ts.value_and_grad(loss, argnums=(0, 1, 2, 3))


# Outputs 1-8 (parameters, then optimizer state) overwrite arguments 0-7.
@ts.jit(in_place=(None, 0, 1, 2, 3, 4, 5, 6, 7))
def sgd_step(w1, b1, w2, b2, v1, c1, v2, c2, x, labels):
    """SGD with momentum: v = m v + g; p = p - lr v. Returns the loss, the parameters, the velocities."""
    value, gs = grads(w1, b1, w2, b2, x, labels)
    vs = [MOMENTUM * v + g for v, g in zip((v1, c1, v2, c2), gs)]
    ps = [p - LR * v for p, v in zip((w1, b1, w2, b2), vs)]
    return (value, *ps, *vs)


# Outputs 1-12 (parameters, first and second moments) overwrite arguments 0-11.
@ts.jit(in_place=(None, *range(12)))
def adamw_step(w1, b1, w2, b2, m1, n1, m2, n2, s1, t1, s2, t2, x, labels, c1, c2):
    """AdamW: m = b1 m + (1 - b1) g, s = b2 s + (1 - b2) g^2, p = p - lr (m c1 / (sqrt(s c2) + eps) + wd p);
    c1 = 1 / (1 - b1^t) and c2 = 1 / (1 - b2^t) (bias corrections) are rank-0 arguments, so every step is
    the same program."""
    value, gs = grads(w1, b1, w2, b2, x, labels)
    ms = [BETA1 * m + (1 - BETA1) * g for m, g in zip((m1, n1, m2, n2), gs)]
    ss = [BETA2 * v + (1 - BETA2) * g * g for v, g in zip((s1, t1, s2, t2), gs)]
    ps = [p - ADAM_LR * (m * c1 / (ts.sqrt(v * c2) + EPS) + WEIGHT_DECAY * p)
          for p, m, v in zip((w1, b1, w2, b2), ms, ss)]
    return (value, *ps, *ms, *ss)


def numpy_grads(params, x, labels):
    """The loss and its gradients in numpy, by hand."""
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    z = z - z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    value = -logp[np.arange(len(x)), labels].mean()
    dz = np.exp(logp)
    dz[np.arange(len(x)), labels] -= 1
    dz /= len(x)
    dh = (dz @ w2.T) * (1 - h * h)
    return np.float32(value), (x.T @ dh, dh.sum(0), h.T @ dz, dz.sum(0))


def f32(arrays):
    return [a.astype(np.float32) for a in arrays]


def numpy_sgd(params, state, x, labels, t):
    value, gs = numpy_grads(params, x, labels)
    vels = [MOMENTUM * v + g for v, g in zip(state, gs)]
    return value, f32(p - LR * v for p, v in zip(params, vels)), f32(vels)


def numpy_adamw(params, state, x, labels, t):
    value, gs = numpy_grads(params, x, labels)
    c1, c2 = 1 / (1 - BETA1**t), 1 / (1 - BETA2**t)
    ms = [BETA1 * m + (1 - BETA1) * g for m, g in zip(state[:4], gs)]
    ss = [BETA2 * v + (1 - BETA2) * g * g for v, g in zip(state[4:], gs)]
    ps = [p - ADAM_LR * (m * c1 / (np.sqrt(v * c2) + EPS) + WEIGHT_DECAY * p) for p, m, v in zip(params, ms, ss)]
    return value, f32(ps), f32(ms + ss)


def data(seed=0, n=256, features=16, classes=4, hidden=32):
    """Points around `classes` random centres, their labels; the initial parameters."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((classes, features)) * 0.5
    labels = rng.integers(0, classes, n)
    x = (centres[labels] + rng.standard_normal((n, features))).astype(np.float32)
    params = [(rng.standard_normal((features, hidden)) / np.sqrt(features)).astype(np.float32),
              np.zeros(hidden, np.float32),
              (rng.standard_normal((hidden, classes)) / np.sqrt(hidden)).astype(np.float32),
              np.zeros(classes, np.float32)]
    return x, labels, params


def train(steps, to=lambda a: a, back=lambda a: a, optimizer="sgd"):
    """Trains both; returns the two loss curves and the final parameters of each. Tessera's parameters and
    optimizer state are updated in place: the arrays `to` made are the ones the steps write."""
    x, labels, params = data()
    slots = 1 if optimizer == "sgd" else 2  # optimizer state arrays per parameter
    ours = [to(p.copy()) for p in params]
    state = [to(np.zeros_like(p)) for _ in range(slots) for p in params]
    ref, ref_state = params, [np.zeros_like(p) for _ in range(slots) for p in params]
    xs, ls = to(x), to(labels)
    curve, ref_curve = [], []
    for t in range(1, steps + 1):
        if optimizer == "sgd":
            value, *new = sgd_step(*ours, *state, xs, ls)
            value_ref, ref, ref_state = numpy_sgd(ref, ref_state, x, labels, t)
        else:
            c1, c2 = (to(np.array(1 / (1 - b**t), np.float32)) for b in (BETA1, BETA2))
            value, *new = adamw_step(*ours, *state, xs, ls, c1, c2)
            value_ref, ref, ref_state = numpy_adamw(ref, ref_state, x, labels, t)
        curve.append(float(back(value)))
        ref_curve.append(float(value_ref))
    return curve, ref_curve, [back(p) for p in ours], ref


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd")
    args = ap.parse_args()
    to = back = lambda a: a  # noqa: E731
    if args.device == "cuda":
        import torch
        to = lambda a: torch.from_numpy(a).cuda()  # noqa: E731
        back = lambda t: t.cpu().numpy()  # noqa: E731
    curve, ref_curve, ours, ref = train(args.steps, to, back, args.optimizer)
    for i in range(0, args.steps, max(1, args.steps // 10)):
        print(f"step {i:3d}  loss {curve[i]:.6f}  numpy {ref_curve[i]:.6f}")
    worst = max(float(np.abs(p - r).max()) for p, r in zip(ours, ref))
    print(f"final loss {curve[-1]:.6f} (numpy {ref_curve[-1]:.6f}); largest parameter difference {worst:.2e}")


if __name__ == "__main__":
    main()
