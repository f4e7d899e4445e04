"""Every Graph IR op's Python spelling against numpy, on the CPU."""
import math

import numpy as np
import pytest

import tessera as ts

F32 = dict(rtol=2e-5, atol=2e-6)
F64 = dict(rtol=1e-12, atol=1e-13)


def run(fn, *arrays):
    return ts.jit(fn)(*arrays)


def erf(x):
    return np.vectorize(math.erf)(x)


UNARY = {
    "neg": (ts.neg, np.negative),
    "abs": (ts.abs, np.abs),
    "exp": (ts.exp, np.exp),
    "log": (ts.log, np.log),
    "sqrt": (ts.sqrt, np.sqrt),
    "rsqrt": (ts.rsqrt, lambda x: 1 / np.sqrt(x)),
    "tanh": (ts.tanh, np.tanh),
    "sigmoid": (ts.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "relu": (ts.relu, lambda x: np.maximum(x, 0)),
    "silu": (ts.silu, lambda x: x / (1 + np.exp(-x))),
    "gelu": (ts.gelu, lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2)))),
    "gelu_tanh": (lambda x: ts.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype,tol", [(np.float32, F32), (np.float64, F64)])
def test_unary(name, dtype, tol, rng):
    op, ref = UNARY[name]
    x = rng.standard_normal((7, 33)).astype(dtype)
    if name in ("log", "sqrt", "rsqrt"):
        x = np.abs(x) + 0.1
    got = run(lambda a: op(a), x)
    assert got.dtype == dtype and got.shape == x.shape
    np.testing.assert_allclose(got, ref(x.astype(np.float64)).astype(dtype), rtol=max(tol["rtol"], 1e-6 if dtype ==
                               np.float64 else 2e-5), atol=tol["atol"] * 10)


BINARY = {
    "+": (lambda a, b: a + b, np.add),
    "-": (lambda a, b: a - b, np.subtract),
    "*": (lambda a, b: a * b, np.multiply),
    "/": (lambda a, b: a / b, np.divide),
    "**": (lambda a, b: a ** b, np.power),
    "maximum": (ts.maximum, np.maximum),
    "minimum": (ts.minimum, np.minimum),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((5, 9), (5, 9)), ((4, 1, 6), (3, 1)), ((), (8,)), ((3, 4), ())])
def test_binary_broadcasts_like_numpy(name, shapes, rng):
    op, ref = BINARY[name]
    a = rng.uniform(0.5, 2.0, shapes[0]).astype(np.float32)
    b = rng.uniform(0.5, 2.0, shapes[1]).astype(np.float32)
    got = run(op, a, b)
    np.testing.assert_allclose(got, ref(a, b), **F32)


def test_python_numbers_become_constants(rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    got = run(lambda a: 2.0 * a + 1 - a / 4 + 3 ** a * 0 + (1 - a) * -1, x)
    np.testing.assert_allclose(got, 2 * x + 1 - x / 4 + (1 - x) * -1, **F32)


def test_nan_and_inf_propagate():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0], np.float32)
    got = run(lambda a: ts.exp(a) + a, x)
    with np.errstate(invalid="ignore"):
        want = np.exp(x) + x
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    np.testing.assert_allclose(got[finite], want[finite], **F32)


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (-1, True), ((0, 2), False), (0, True)])
def test_reductions_as_numpy(kind, axis, keepdims, rng):
    x = rng.uniform(0.5, 1.5, (6, 7, 5)).astype(np.float32)
    as_method = run(lambda a: getattr(a, kind)(axis=axis, keepdims=keepdims), x)
    as_function = run(lambda a: getattr(ts, kind)(a, axis, keepdims), x)
    want = getattr(np, kind)(x.astype(np.float64), axis=axis, keepdims=keepdims)
    for got in (as_method, as_function):
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_rank_0_and_empty(rng):
    x = np.array(3.0, np.float32)
    np.testing.assert_allclose(run(lambda a: a * a + 1, x), 10.0)
    e = np.zeros((0, 4), np.float32)
    got = run(lambda a: ts.exp(a) * 2, e)
    assert got.shape == (0, 4)
    np.testing.assert_allclose(run(lambda a: a.sum(axis=0), e), np.zeros(4))


def softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax(axis, rng):
    x = rng.standard_normal((9, 17, 5)).astype(np.float32)
    np.testing.assert_allclose(run(lambda a: ts.softmax(a, axis=axis), x), softmax_ref(x, axis), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(run(lambda a: ts.log_softmax(a, axis), x), np.log(softmax_ref(x, axis)), rtol=1e-5,
                               atol=1e-5)


def test_norms(rng):
    x = rng.standard_normal((13, 64)).astype(np.float32)
    w, b = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(run(lambda a, c, d: ts.layer_norm(a, c, d, eps=1e-5), x, w, b),
                               (x - mu) / np.sqrt(var + 1e-5) * w + b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(run(lambda a, c: ts.rms_norm(a, c), x, w),
                               x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("spelling", ["@", "matmul", "T_a", "T_b", "flags"])
def test_matmul_spellings(spelling, rng):
    a = rng.standard_normal((3, 17, 24)).astype(np.float32)
    b = rng.standard_normal((24, 11)).astype(np.float32)
    fns = {
        "@": (lambda x, y: x @ y, a, b),
        "matmul": (lambda x, y: ts.matmul(x, y), a, b),
        "T_a": (lambda x, y: x.T @ y, np.ascontiguousarray(a.transpose(0, 2, 1)), b),
        "T_b": (lambda x, y: x @ y.T, a, np.ascontiguousarray(b.T)),
        "flags": (lambda x, y: ts.matmul(x, y, transpose_a=True, transpose_b=True),
                  np.ascontiguousarray(a.transpose(0, 2, 1)), np.ascontiguousarray(b.T)),
    }
    fn, x, y = fns[spelling]
    np.testing.assert_allclose(run(fn, x, y), a @ b, rtol=1e-4, atol=1e-4)


def test_casts_through_half_types(rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    got = run(lambda a: a.astype(ts.float16).astype("float32"), x)
    np.testing.assert_array_equal(got, x.astype(np.float16).astype(np.float32))
    got = run(lambda a: ts.cast(ts.cast(a, ts.bfloat16), np.float64), x)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, x, rtol=2 ** -8)
    half = run(lambda a: a.astype(np.float16) * 2, x)
    assert half.dtype == np.float16


def test_several_results(rng):
    x = rng.standard_normal((5, 6)).astype(np.float32)
    s, m = run(lambda a: (a.sum(axis=1), a.max(axis=1)), x)
    np.testing.assert_allclose(s, x.sum(1), rtol=1e-5)
    np.testing.assert_allclose(m, x.max(1))
