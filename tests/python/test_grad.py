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


def norm_block_loss(x, w, b, v, t):
    h = ts.layer_norm(x, w, b)
    p = ts.softmax(ts.rms_norm(ts.tanh(h), v), axis=-1)
    return ts.sum(p * t)


def numpy_norm_block_grads(x, w, b, v, t, eps_ln=1e-5, eps_rms=1e-6):
    mu = x.mean(-1, keepdims=True)
    r1 = 1 / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps_ln)
    n1 = (x - mu) * r1
    y = np.tanh(n1 * w + b)
    r2 = 1 / np.sqrt((y * y).mean(-1, keepdims=True) + eps_rms)
    n2 = y * r2
    z = n2 * v
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dz = p * (t - (t * p).sum(-1, keepdims=True))
    dv = (dz * n2).sum(0)
    g2 = dz * v
    dy = r2 * (g2 - n2 * (g2 * n2).mean(-1, keepdims=True))
    dh = dy * (1 - y * y)
    dw, db = (dh * n1).sum(0), dh.sum(0)
    g1 = dh * w
    dx = r1 * (g1 - g1.mean(-1, keepdims=True) - n1 * (g1 * n1).mean(-1, keepdims=True))
    return dx, dw, db, dv


def test_norm_and_softmax_gradients_are_row_kernels():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((300, 96))
    w, v = rng.uniform(0.5, 1.5, 96), rng.uniform(0.5, 1.5, 96)
    b, t = rng.standard_normal(96), rng.standard_normal((300, 96))
    args = [a.astype(np.float32) for a in (x, w, b, v, t)]
    grads = ts.grad(norm_block_loss, argnums=(0, 1, 2, 3), check=True)
    got = grads(*args)
    for g, want in zip(got, numpy_norm_block_grads(x, w, b, v, t)):
        np.testing.assert_allclose(g, want, rtol=2e-4, atol=2e-5)
    schedule = ts.jit(lambda *a: grads(*a)).lower("schedule", *args)
    for op in ("layer_norm_grad", "rms_norm_grad", "softmax_grad"):
        assert f'op = "{op}"' in schedule
    # dw, db (layer_norm) and dv (rms_norm): partial sums beside dx, then one column reduction each
    assert schedule.count(".partials = schedule.rowwise") == 2 and schedule.count(".partials {") == 3



def attention_loss(q, k, v, t):
    return ts.sum(ts.attention(q, k, v, causal=True) * t)


def numpy_attention_grads(q, k, v, t):
    """Autograd by hand in float64: softmax rows with the causal mask aligned to the end, grouped heads."""
    b, h, sq, d = q.shape
    group, sk = h // k.shape[1], k.shape[2]
    kk, vv = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ np.swapaxes(kk, -1, -2) / np.sqrt(d)
    s = np.where(np.arange(sk)[None, :] <= np.arange(sq)[:, None] + sk - sq, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dp = t @ np.swapaxes(vv, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True)) / np.sqrt(d)
    fold = lambda x: x.reshape(b, k.shape[1], group, sk, d).sum(2)  # noqa: E731
    return ds @ kk, fold(np.swapaxes(ds, -1, -2) @ q), fold(np.swapaxes(p, -1, -2) @ t)


def test_attention_gradient_is_one_backward_kernel():
    rng = np.random.default_rng(12)
    q, t = rng.standard_normal((1, 4, 37, 16)), rng.standard_normal((1, 4, 37, 16))
    k, v = rng.standard_normal((1, 2, 45, 16)), rng.standard_normal((1, 2, 45, 16))
    args = [a.astype(np.float32) for a in (q, k, v, t)]
    grads = ts.grad(attention_loss, argnums=(0, 1, 2), check=True)
    for g, want in zip(grads(*args), numpy_attention_grads(q, k, v, t)):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)
    schedule = ts.jit(lambda *a: grads(*a)).lower("schedule", *args)
    # the forward (with its saved log-sum-exp) and the backward: two attention kernels, no scores in memory
    assert schedule.count("schedule.attention") == 2 and "schedule.matmul" not in schedule
