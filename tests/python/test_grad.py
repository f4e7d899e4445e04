"""ts.grad and ts.value_and_grad against numpy's hand-written gradients, composed with ts.jit, and their
refusals (docs/python.md, docs/semantics.md "Gradients")."""
import numpy as np
import pytest

import tessera as ts


def mlp_loss(w1, b1, w2, x, t):
    y = ts.tanh(x @ w1 + b1) @ w2 - t
    return ts.mean(y * y)


def numpy_grads(w1, b1, w2, x, t):
    h = np.tanh(x @ w1 + b1)
    y = h @ w2 - t
    dy = 2 * y / y.size
    dh = (dy @ w2.T) * (1 - h * h)
    return float((y * y).mean()), x.T @ dh, dh.sum(0), h.T @ dy


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    return f(3, 16), f(16), f(16, 4), f(32, 3), f(32, 4)


def test_grad_of_one_and_several_arguments(data):
    want = numpy_grads(*data)
    g0 = ts.grad(mlp_loss)(*data)
    assert g0.shape == (3, 16) and g0.dtype == np.float32
    np.testing.assert_allclose(g0, want[1], rtol=1e-5, atol=1e-6)
    d_w2, d_b1 = ts.grad(mlp_loss, argnums=(2, 1))(*data)
    np.testing.assert_allclose(d_w2, want[3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d_b1, want[2], rtol=1e-5, atol=1e-6)


def test_value_and_grad_and_the_oracle(data):
    loss, (d_w1, d_b1, d_w2) = ts.value_and_grad(mlp_loss, argnums=(0, 1, 2), check=True)(*data)
    want = numpy_grads(*data)
    assert loss.shape == () and float(loss) == pytest.approx(want[0], rel=1e-5)
    for got, ref in zip((d_w1, d_b1, d_w2), want[1:]):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_a_gradient_inside_a_jitted_step_joins_its_trace(data):
    grads = ts.grad(mlp_loss, argnums=(0, 1, 2))

    @ts.jit
    def sgd_step(w1, b1, w2, x, t):
        d1, db, d2 = grads(w1, b1, w2, x, t)
        return w1 - 0.5 * d1, b1 - 0.5 * db, w2 - 0.5 * d2

    w1, b1, w2, x, t = data
    losses = []
    for _ in range(20):
        losses.append(numpy_grads(w1, b1, w2, x, t)[0])
        w1, b1, w2 = sgd_step(w1, b1, w2, x, t)
    assert losses[-1] < 0.8 * losses[0]  # it learns
    text = sgd_step.lower("graph")
    assert text.count("func @") == 1 and "transpose_a = true" in text  # one program, gradient ops inline


def test_refusals(data):
    with pytest.raises(ts.VerifyError) as e:
        ts.grad(lambda x: x * 2.0)(data[3])
    assert e.value.code == "E260"
    with pytest.raises(ts.TraceError) as e:
        ts.grad(mlp_loss, argnums=5)(*data)
    assert e.value.code == "E948"
    with pytest.raises(ts.TraceError) as e:
        ts.grad(mlp_loss, argnums=())
    assert e.value.code == "E948"
    with pytest.raises(ts.VerifyError) as e:  # argmax carries no gradient
        ts.grad(lambda x: ts.sum(ts.argmax(x, axis=1).astype(ts.float32) * ts.sum(x, axis=1)))(data[3])
    assert e.value.code == "E262"
