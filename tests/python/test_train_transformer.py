"""examples/train_transformer.py: the tiny transformer's gradient (attention, norms, matmuls, the tied
embedding's gather and scatter-add, cross-entropy), computed in float32, against central finite
differences of the numpy forward pass in float64; and its training: the loss falls far below a
context-blind model's."""
import dataclasses
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import train_transformer as ex  # noqa: E402

import tessera as ts  # noqa: E402


def test_gradient_matches_finite_differences_of_the_numpy_forward():
    params = ex.init(seed=3)
    tokens, targets = ex.batch(np.random.default_rng(4))
    value, gs = ts.value_and_grad(ex.loss, argnums=tuple(range(len(params))))(*params, tokens, targets)
    params = [p.astype(np.float64) for p in params]  # the reference in float64
    assert abs(float(value) - ex.numpy_loss(params, tokens, targets)) < 1e-5
    rng = np.random.default_rng(5)
    for name, p, g in zip(ex.NAMES, params, gs):
        assert g.shape == p.shape and g.dtype == np.float32
        for flat in rng.choice(p.size, size=4, replace=False):
            i = np.unravel_index(flat, p.shape)
            x, h = p[i], 1e-4
            p[i] = x + h
            up = ex.numpy_loss(params, tokens, targets)
            p[i] = x - h
            down = ex.numpy_loss(params, tokens, targets)
            p[i] = x
            fd = (up - down) / (2 * h)
            assert abs(g[i] - fd) <= 1e-6 + 1e-4 * abs(fd), f"d loss / d {name}{i}: {g[i]} vs {fd}"


def test_it_learns_the_task():
    curve, _ = ex.train(40)
    assert curve[0] > 2.5  # about log(VOCAB) at the start
    assert np.mean(curve[-5:]) < 0.6, curve


def test_the_gpu_configuration_learns_with_bfloat16_attention():
    # head dim 64 and attention in bfloat16 (what the CUDA blocks take), here on the CPU: its gradient is
    # the float32-attention model's within bfloat16's precision, and it learns the task
    f32 = dataclasses.replace(ex.GPU, attention_dtype="f32")
    params = ex.init(seed=3, cfg=ex.GPU)
    tokens, targets = ex.batch(np.random.default_rng(4), cfg=ex.GPU)
    argnums = tuple(range(len(params)))
    value, gs = ts.value_and_grad(ex.build(ex.GPU).loss, argnums=argnums)(*params, tokens, targets)
    want, ws = ts.value_and_grad(ex.build(f32).loss, argnums=argnums)(*params, tokens, targets)
    assert abs(float(value) - float(want)) < 1e-2 * abs(float(want))
    for name, g, w in zip(ex.NAMES, gs, ws):
        assert np.abs(g - w).max() <= 3e-2 * np.abs(w).max(), name
    curve, _ = ex.train(40, cfg=ex.GPU)
    assert curve[0] > 2.5 and np.mean(curve[-5:]) < 1.0, curve
