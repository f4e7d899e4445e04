"""Every Graph IR op's Python spelling against numpy on the CPU: odd shapes, broadcasting, rank 0, NaN and
infinities, f32 and f64, f16 and bf16 through casts.

Tessera's CPU kernels are not bitwise numpy (libmvec transcendentals, sums in another order), so results are
compared with numpy's in f64, rounded to the dtype, within a tolerance: about 1e-5 relative for f32 (looser
for exp/log-heavy ops and long reductions), 1e-12 for f64. Selections (neg, abs, relu, max, min, casts) are
exact.
"""
import math

import numpy as np
import pytest

import tessera as ts

F32, F64 = np.float32, np.float64
TOL = {F32: dict(rtol=1e-5, atol=1e-6), F64: dict(rtol=1e-12, atol=1e-14)}
EXACT = dict(rtol=0, atol=0)


def run(fn, *arrays):
    """fn compiled by a fresh ts.jit and called once."""
    return ts.jit(fn)(*arrays)


def close(got, want, dtype, **tol):
    """got (Tessera's, of `dtype`) within tolerance of want (numpy's, computed in f64); NaN matches NaN."""
    assert got.dtype == dtype and got.shape == np.shape(want), (got.dtype, got.shape, np.shape(want))
    np.testing.assert_allclose(got, np.asarray(want).astype(dtype), **(tol or TOL[dtype]))


def bf16_round(x):
    """x rounded to bfloat16 (to nearest even) and widened back to f32: numpy has no bfloat16."""
    bits = np.ascontiguousarray(x, F32).view(np.uint32).astype(np.uint64)
    return (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(F32)


# -- unary ---------------------------------------------------------------------------------------------------

erf = np.vectorize(math.erf, otypes=[F64])


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def sigmoid(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def limit_at_minus_inf(f):
    """silu and gelu at -inf are their limit -0 (the formulas would give -inf * 0 = NaN)."""
    def g(x):
        with np.errstate(invalid="ignore"):
            return np.where(x == -np.inf, -0.0, f(x))
    return g


# name: (Tessera spellings, numpy reference in f64)
UNARY = {
    "neg": ([ts.neg, lambda a: -a, np.negative], np.negative),
    "abs": ([ts.abs, lambda a: abs(a), np.abs], np.abs),
    "exp": ([ts.exp, np.exp], np.exp),
    "log": ([ts.log, np.log], np.log),
    "sqrt": ([ts.sqrt, np.sqrt], np.sqrt),
    "rsqrt": ([ts.rsqrt], lambda x: 1 / np.sqrt(x)),
    "tanh": ([ts.tanh, np.tanh], np.tanh),
    "sigmoid": ([ts.sigmoid], sigmoid),
    "relu": ([ts.relu], lambda x: np.where(np.isnan(x), x, np.maximum(x, 0))),
    "silu": ([ts.silu], limit_at_minus_inf(lambda x: x * sigmoid(x))),
    "gelu": ([ts.gelu, lambda a: ts.gelu(a, approximate="none")],
             limit_at_minus_inf(lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))))),
    "gelu_tanh": ([lambda a: ts.gelu(a, approximate="tanh")], limit_at_minus_inf(gelu_tanh)),
    "sin": ([ts.sin, np.sin], np.sin),
    "cos": ([ts.cos, np.cos], np.cos),
    "exp2": ([ts.exp2, np.exp2], np.exp2),
    "log2": ([ts.log2, np.log2], np.log2),
    "erf": ([ts.erf], erf),
    "floor": ([ts.floor, np.floor], np.floor),
    "ceil": ([ts.ceil, np.ceil], np.ceil),
    "round": ([ts.round, np.rint, lambda a: round(a)], np.rint),
    "clamp": ([lambda a: ts.clamp(a, -1.0, 2.0), lambda a: a.clip(-1.0, 2.0)], lambda x: np.clip(x, -1.0, 2.0)),
}
POSITIVE_ONLY = ("log", "sqrt", "rsqrt", "log2")


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [F32, F64])
def test_unary(name, dtype, rng):
    spellings, ref = UNARY[name]
    x = (rng.standard_normal((7, 33)) * 3).astype(dtype)  # 231 elements: a vector tail
    if name in POSITIVE_ONLY:
        x = np.abs(x) + dtype(0.01)
    want = ref(x.astype(F64))
    for op in spellings:
        close(run(op, x), want, dtype)


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [F32, F64])
def test_unary_nan_inf_and_signed_zero(name, dtype):
    spellings, ref = UNARY[name]
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 30.0, -30.0], dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        want = ref(x.astype(F64))
    close(run(spellings[0], x), want, dtype)


@pytest.mark.parametrize("shape", [(), (1,), (5,), (3, 1, 4)])
def test_unary_on_any_rank(shape, rng):
    x = rng.standard_normal(shape).astype(F32)
    close(run(ts.tanh, x), np.tanh(x.astype(F64)), F32)


def test_round_takes_halves_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 1e30], F32)
    close(run(ts.round, x), np.rint(x), F32, **EXACT)


def test_sin_and_cos_of_large_arguments(rng):
    x = (rng.uniform(-1e5, 1e5, 301)).astype(F32)
    close(run(ts.sin, x), np.sin(x.astype(F64)), F32, rtol=1e-5, atol=2e-6)
    close(run(ts.cos, x), np.cos(x.astype(F64)), F32, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("lo,hi", [(-1.0, None), (None, 0.25), (2.0, -2.0)], ids=str)
def test_clamp_bounds_as_numpy_clip(lo, hi, rng):
    x = np.append(rng.standard_normal(40) * 3, [np.nan, np.inf, -np.inf, -0.0]).astype(F32)
    close(run(lambda a: ts.clamp(a, lo, hi), x), np.clip(x, lo, hi), F32, **EXACT)


def test_clamp_without_bounds_is_refused():
    with pytest.raises(ts.TraceError) as e:
        run(lambda a: ts.clamp(a), np.ones(3, F32))
    assert e.value.code == "E948"


# -- binary --------------------------------------------------------------------------------------------------

BINARY = {
    "add": ([lambda a, b: a + b, ts.add, np.add], np.add),
    "sub": ([lambda a, b: a - b, ts.sub, np.subtract], np.subtract),
    "mul": ([lambda a, b: a * b, ts.mul, np.multiply], np.multiply),
    "div": ([lambda a, b: a / b, ts.div, np.divide], np.divide),
    "pow": ([lambda a, b: a ** b, ts.pow, np.power], np.power),
    "maximum": ([ts.maximum, np.maximum], np.maximum),
    "minimum": ([ts.minimum, np.minimum], np.minimum),
}
SHAPES = [((5, 9), (5, 9)), ((4, 1, 6), (3, 1)), ((), (8,)), ((3, 4), ()), ((), ()), ((1,), (2, 3, 1)),
          ((7, 1), (1, 5))]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [F32, F64])
def test_binary_broadcasts_like_numpy(name, shapes, dtype, rng):
    spellings, ref = BINARY[name]
    a = rng.uniform(0.5, 2.0, shapes[0]).astype(dtype)
    b = rng.uniform(0.5, 2.0, shapes[1]).astype(dtype)
    want = ref(a.astype(F64), b.astype(F64))
    for op in spellings:
        close(run(op, a, b), want, dtype)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_python_numbers_become_constants_of_the_tensors_dtype(dtype, rng):
    x = rng.uniform(0.5, 2.0, (3, 5)).astype(dtype)
    f = ts.jit(lambda a: (2 - a, 2 / a, 2 ** a, a ** 2, a - 0.5, 3 * a, a / 4, -a + 1, a * True,
                          np.float64(3) * a, a + np.float32(0.25)))
    x64 = x.astype(F64)
    wants = (2 - x64, 2 / x64, 2 ** x64, x64 ** 2, x64 - 0.5, 3 * x64, x64 / 4, 1 - x64, x64, 3 * x64,
             x64 + 0.25)
    for got, want in zip(f(x), wants):
        close(got, want, dtype)
    rank_0 = "tensor<f32>" if dtype == F32 else "tensor<f64>"
    assert "tessera.constant" in f.lower("graph") and rank_0 in f.lower()


@pytest.mark.parametrize("dtype", [F32, F64])
def test_binary_nan_and_inf(dtype):
    a = np.array([np.nan, 1.0, np.inf, np.inf, -8.0, np.nan, 0.0, 2.0], dtype)
    b = np.array([1.0, np.nan, -np.inf, 2.0, 1 / 3, 0.0, 0.0, -np.inf], dtype)
    with np.errstate(all="ignore"):
        for op, ref in [(ts.maximum, np.maximum), (ts.minimum, np.minimum), (ts.add, np.add),
                        (ts.mul, np.multiply), (ts.div, np.divide), (ts.pow, np.power)]:
            close(run(op, a, b), ref(a.astype(F64), b.astype(F64)), dtype)


# -- reductions ----------------------------------------------------------------------------------------------

AXES = [(None, False), (1, False), (-1, True), ((0, 2), False), ((0,), True), ((2, 0), True),
        ((-3, -1), False), (None, True)]


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("axis,keepdims", AXES, ids=str)
@pytest.mark.parametrize("dtype", [F32, F64])
def test_reductions_as_numpy(kind, axis, keepdims, dtype, rng):
    x = rng.uniform(0.5, 1.5, (6, 7, 5)).astype(dtype)
    want = getattr(np, kind)(x.astype(F64), axis=axis, keepdims=keepdims)
    # A product of n factors carries n roundings.
    tol = dict(rtol=5e-5, atol=0) if dtype == F32 and kind == "prod" else TOL[dtype]
    for op in (lambda a: getattr(a, kind)(axis=axis, keepdims=keepdims),
               lambda a: getattr(ts, kind)(a, axis, keepdims)):
        close(run(op, x), want, dtype, **tol)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", [F32, np.int32])
def test_argmax_argmin_as_numpy(axis, keepdims, dtype, rng):
    x = rng.integers(-2, 3, (6, 9)).astype(dtype)  # many ties: the first wins
    for kind in ("argmax", "argmin"):
        want = getattr(np, kind)(x, axis=axis, keepdims=keepdims)
        for op in (lambda a: getattr(a, kind)(axis=axis, keepdims=keepdims),
                   lambda a: getattr(ts, kind)(a, axis, keepdims)):
            got = np.asarray(run(op, x))
            assert got.dtype == np.int64 and got.shape == want.shape and np.array_equal(got, want), (kind, got, want)


def test_argmax_argmin_nan_and_infinities():
    x = np.array([[1.0, np.nan, 3.0, np.nan], [-np.inf, -np.inf, 0.0, np.inf], [2.0, 2.0, 2.0, 2.0]], F32)
    f = ts.jit(lambda a: (ts.argmax(a, 1), ts.argmin(a, 1), a.argmax(axis=0)))
    for got, want in zip(f(x), (np.argmax(x, 1), np.argmin(x, 1), np.argmax(x, 0))):
        assert np.array_equal(np.asarray(got), want), (got, want)


def test_argmax_refuses_an_empty_axis_and_a_bad_axis():
    with pytest.raises(ts.VerifyError, match="E218"):
        ts.jit(lambda a: ts.argmax(a, 1))(np.zeros((3, 0), F32))
    with pytest.raises(TypeError, match="axis must be an int"):
        ts.jit(lambda a: ts.argmax(a, (0, 1)))(np.zeros((3, 2), F32))


def test_long_rows_reduce_within_tolerance(rng):
    x = rng.uniform(0.0, 1.0, (33, 4099)).astype(F32)
    f = ts.jit(lambda a: (a.sum(axis=1), a.mean(axis=-1), a.max(axis=1), a.sum(axis=0)))
    s, m, mx, col = f(x)
    x64 = x.astype(F64)
    close(s, x64.sum(1), F32, rtol=2e-5)
    close(m, x64.mean(1), F32, rtol=2e-5)
    close(mx, x64.max(1), F32, **EXACT)
    close(col, x64.sum(0), F32, rtol=2e-5)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_reductions_propagate_nan_and_infinities(dtype):
    x = np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, 0.0], [-np.inf, -np.inf, -np.inf], [1.0, 2.0, 3.0]],
                 dtype)
    f = ts.jit(lambda a: (a.max(axis=1), a.min(axis=1), a.sum(axis=1), a.prod(axis=1)))
    with np.errstate(invalid="ignore"):
        for got, kind in zip(f(x), ("max", "min", "sum", "prod")):
            close(got, getattr(np, kind)(x.astype(F64), axis=1), dtype)


def test_reductions_of_rank_0_and_empty_extents():
    x = np.array(3.5, F32)
    close(run(lambda a: a.sum(), x), 3.5, F32, **EXACT)
    close(run(lambda a: a.max(axis=None, keepdims=True), x), 3.5, F32, **EXACT)
    e = np.zeros((0, 4), F32)
    close(run(lambda a: ts.exp(a) * 2, e), np.zeros((0, 4)), F32)
    close(run(lambda a: a.sum(axis=0), e), np.zeros(4), F32, **EXACT)  # the identities
    close(run(lambda a: a.prod(axis=0), e), np.ones(4), F32, **EXACT)
    close(run(lambda a: a.sum(axis=1), e), np.zeros(0), F32)


# -- row ops -------------------------------------------------------------------------------------------------

def softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0, 1, -2])
@pytest.mark.parametrize("dtype", [F32, F64])
def test_softmax_and_log_softmax(axis, dtype, rng):
    x = (rng.standard_normal((9, 17, 5)) * 4).astype(dtype)
    x64 = x.astype(F64)
    close(run(lambda a: ts.softmax(a, axis=axis), x), softmax_ref(x64, axis), dtype)
    close(run(lambda a: ts.log_softmax(a, axis), x), np.log(softmax_ref(x64, axis)), dtype,
          rtol=TOL[dtype]["rtol"], atol=4e-6 if dtype == F32 else 1e-13)
    if axis == -1:  # the default
        close(run(ts.softmax, x), softmax_ref(x64, -1), dtype)
        close(run(ts.log_softmax, x), np.log(softmax_ref(x64, -1)), dtype,
              atol=4e-6 if dtype == F32 else 1e-13)


def test_softmax_rows_with_infinities_and_nan():
    x = np.array([[-np.inf, 0.0, 1.0], [np.nan, 0.0, 1.0], [-np.inf, -np.inf, -np.inf]], F32)
    got = run(ts.softmax, x)
    close(got[0], softmax_ref(np.array([-np.inf, 0.0, 1.0]), -1), F32)  # -inf among finite values gives 0
    assert np.isnan(got[1]).all() and np.isnan(got[2]).all()  # a NaN row; an all -inf row is NaN (as torch)
    assert run(ts.log_softmax, x)[0, 0] == -np.inf


def layer_norm_ref(x, w, b, eps):
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rms_norm_ref(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


@pytest.mark.parametrize("shape", [(13, 37), (2, 3, 64), (1, 1)], ids=str)
@pytest.mark.parametrize("dtype", [F32, F64])
def test_norms(shape, dtype, rng):
    x = rng.standard_normal(shape).astype(dtype)
    w, b = rng.standard_normal(shape[-1]).astype(dtype), rng.standard_normal(shape[-1]).astype(dtype)
    x64, w64, b64 = x.astype(F64), w.astype(F64), b.astype(F64)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == F32 else TOL[F64]
    close(run(lambda a, c, d: ts.layer_norm(a, c, d, eps=1e-3), x, w, b), layer_norm_ref(x64, w64, b64, 1e-3),
          dtype, **tol)
    close(run(lambda a, c: ts.rms_norm(a, c, eps=1e-4), x, w), rms_norm_ref(x64, w64, 1e-4), dtype, **tol)


def test_norms_default_eps(rng):
    # Values so small that eps dominates the variance: the defaults (1e-5, 1e-6) are what is used.
    x = (rng.standard_normal((4, 16)) * 1e-4).astype(F64)
    w, b = np.ones(16), np.zeros(16)
    close(run(ts.layer_norm, x, w, b), layer_norm_ref(x, w, b, 1e-5), F64)
    close(run(ts.rms_norm, x, w), rms_norm_ref(x, w, 1e-6), F64)


# -- matmul --------------------------------------------------------------------------------------------------

def matmul_close(got, want, k):
    # f32 accumulation over k terms of standard normal products.
    close(got, want, F32, rtol=1e-5, atol=1e-6 * k)


@pytest.mark.parametrize("spelling", ["@", "matmul", "np.matmul", "T_a", "T_b", "flags", "flags_and_T"])
def test_matmul_spellings(spelling, rng):
    a = rng.standard_normal((17, 24)).astype(F32)
    b = rng.standard_normal((24, 11)).astype(F32)
    at, bt = np.ascontiguousarray(a.T), np.ascontiguousarray(b.T)
    fns = {
        "@": (lambda x, y: x @ y, a, b),
        "matmul": (ts.matmul, a, b),
        "np.matmul": (np.matmul, a, b),
        "T_a": (lambda x, y: x.T @ y, at, b),
        "T_b": (lambda x, y: x @ y.T, a, bt),
        "flags": (lambda x, y: ts.matmul(x, y, transpose_a=True, transpose_b=True), at, bt),
        "flags_and_T": (lambda x, y: ts.matmul(x.T, y, transpose_a=True), a, b),  # two transposes cancel
    }
    fn, x, y = fns[spelling]
    matmul_close(run(fn, x, y), a.astype(F64) @ b.astype(F64), 24)


@pytest.mark.parametrize("shapes", [((3, 17, 24), (24, 11)), ((17, 24), (2, 24, 11)),
                                    ((2, 3, 5, 7), (2, 3, 7, 4)), ((1, 1), (1, 1)), ((5, 129), (129, 3))],
                         ids=str)
def test_batched_matmul_broadcasts(shapes, rng):
    a = rng.standard_normal(shapes[0]).astype(F32)
    b = rng.standard_normal(shapes[1]).astype(F32)
    matmul_close(run(lambda x, y: x @ y, a, b), a.astype(F64) @ b.astype(F64), shapes[0][-1])
    at = np.ascontiguousarray(np.swapaxes(a, -1, -2))
    matmul_close(run(lambda x, y: x.mT @ y, at, b), a.astype(F64) @ b.astype(F64), shapes[0][-1])


@pytest.mark.parametrize("half", ["f16", "bf16"])
def test_half_precision_matmul_through_casts(half, rng):
    a = rng.standard_normal((8, 40)).astype(F32)
    b = rng.standard_normal((40, 6)).astype(F32)

    def rounded(v):
        return v.astype(np.float16).astype(F64) if half == "f16" else bf16_round(v).astype(F64)

    f = ts.jit(lambda x, y: ts.matmul(x.astype(half), y.astype(half), out_dtype=ts.float32))
    matmul_close(f(a, b), rounded(a) @ rounded(b), 40)
    # The result in the operands' dtype, rounded once.
    g = ts.jit(lambda x, y: (x.astype(half) @ y.astype(half)).astype(ts.float32))
    want = rounded(a) @ rounded(b)
    want = want.astype(np.float16) if half == "f16" else bf16_round(want.astype(F32))
    ulp = 2.0 ** (-10 if half == "f16" else -7)  # relative spacing of the half type
    close(g(a, b), want, F32, rtol=2 * ulp, atol=2 * ulp)


# -- casts and half-precision storage ------------------------------------------------------------------------

def test_casts_round_as_numpy(rng):
    x = np.concatenate([rng.standard_normal(500) * 100, [np.nan, np.inf, -np.inf, 0.0, -0.0, 70000.0, 1e-8]])
    x32 = x.astype(F32)
    with np.errstate(over="ignore"):  # 70000 is inf in f16
        as_f16 = x32.astype(np.float16)
    close(run(lambda a: a.astype(ts.float16).astype("float32"), x32), as_f16, F32, **EXACT)
    close(run(lambda a: ts.cast(a, np.float16).astype(F32), x32), as_f16, F32, **EXACT)
    close(run(lambda a: ts.astype(ts.astype(a, "bf16"), np.dtype("float32")), x32), bf16_round(x32), F32,
          **EXACT)
    close(run(lambda a: a.astype(F32), x), x.astype(F32), F32, **EXACT)  # f64 -> f32, nearest even
    close(run(lambda a: a.astype(float), x32), x32, F64, **EXACT)  # Python's float is f64, as in numpy


def test_f16_arrays_in_and_out(rng):
    x = rng.standard_normal((5, 70)).astype(np.float16)
    got = run(lambda a: (ts.exp(a), a.sum(axis=1), a * 2), x)
    x64 = x.astype(F64)
    close(got[0], np.exp(x64), np.float16, rtol=1e-3, atol=1e-4)
    close(got[1], x64.sum(1), np.float16, rtol=2e-3, atol=1e-2)  # f32 accumulation, one rounding to f16
    close(got[2], x64 * 2, np.float16, **EXACT)


def test_bf16_results_are_dlpack_arrays_that_feed_back(rng):
    # numpy has no bfloat16: a bf16 result of numpy inputs comes back as a DLPack array, taken as-is.
    x = rng.standard_normal((3, 50)).astype(F32)
    to_bf16 = ts.jit(lambda a: a.astype(ts.bfloat16))
    h = to_bf16(x)
    assert hasattr(h, "__dlpack__") and not isinstance(h, np.ndarray)
    widen = ts.jit(lambda b: b.astype(ts.float32) * 1.0)
    got = widen(h)
    np.testing.assert_array_equal(np.from_dlpack(got), bf16_round(x))
    assert widen.last_pointers["inputs"] == to_bf16.last_pointers["outputs"]
    widen(h)
    assert widen.cache_info()["hits"] == 1 and widen.cache_info()["traces"] == 1


# -- several results -----------------------------------------------------------------------------------------

def test_several_results_in_order(rng):
    x = rng.standard_normal((5, 6)).astype(F32)
    s, m, e = run(lambda a: [a.sum(axis=1), a.max(axis=1), ts.exp(a)], x)
    close(s, x.astype(F64).sum(1), F32)
    close(m, x.max(1), F32, **EXACT)
    close(e, np.exp(x.astype(F64)), F32)
    (only,) = run(lambda a: (a * 2,), x)  # a tuple of one stays a tuple
    close(only, 2 * x, F32, **EXACT)


def test_clamp_without_finite_bounds_and_np_clip(rng):
    x = np.append(rng.standard_normal(9), [np.nan, np.inf]).astype(F32)
    close(run(lambda a: ts.clamp(a, -np.inf, np.inf), x), x, F32, **EXACT)
    close(run(lambda a: np.clip(a, -0.5, 0.5), x), np.clip(x, -0.5, 0.5), F32, **EXACT)


# -- integers, booleans, comparisons, where, iota -------------------------------------------------------------

@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">="])
@pytest.mark.parametrize("dtype", [F32, F64, np.int32, np.int64])
def test_comparisons_as_numpy(op, dtype, rng):
    a = (rng.standard_normal((6, 1, 9)) * 3).astype(dtype)
    b = (rng.standard_normal((4, 9)) * 3).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        a.flat[:3] = [np.nan, np.inf, -np.inf]
    compare = eval(f"lambda x, y: x {op} y")
    got = run(compare, a, b)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, compare(a, b))


def test_comparison_ufuncs_and_python_numbers(rng):
    x = rng.standard_normal(100).astype(F32)
    got = run(lambda t: (np.less(t, 0.5), np.greater_equal(1, t), np.not_equal(t, t)), x)
    for g, w in zip(got, (x < 0.5, 1 >= x, x != x)):
        np.testing.assert_array_equal(g, w)


def test_logic_on_bools(rng):
    a, b = rng.standard_normal((2, 7, 11)).astype(F32)
    got = run(lambda x, y: ((x > 0) & (y > 0)) | ~(x < y), a, b)
    np.testing.assert_array_equal(got, ((a > 0) & (b > 0)) | ~(a < b))
    m, n = a > 0, b > 0
    got = run(lambda p, q: (np.logical_and(p, q), np.logical_or(p, q), np.logical_not(p)), m, n)
    for g, w in zip(got, (m & n, m | n, ~m)):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", [F32, F64, np.int32, np.int64])
def test_where_broadcasts_three_ways(dtype, rng):
    c = rng.random((5, 1, 7)) < 0.5
    a = (rng.standard_normal((3, 1)) * 9).astype(dtype)
    b = (rng.standard_normal(7) * 9).astype(dtype)
    np.testing.assert_array_equal(run(ts.where, c, a, b), np.where(c, a, b))
    np.testing.assert_array_equal(run(lambda c, a: np.where(c, a, 2), c, a), np.where(c, a, dtype(2)))


def test_integer_arithmetic_wraps_as_numpy(rng):
    for dtype in (np.int32, np.int64):
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, 1000, dtype=dtype, endpoint=True)
        b = rng.integers(info.min, info.max, 1000, dtype=dtype, endpoint=True)
        a[:2] = [info.min, info.max]
        with np.errstate(over="ignore"):
            for f in (lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: -x,
                      lambda x, y: abs(x), np.maximum, np.minimum, lambda x, y: x * 3 - 7):
                got, want = run(f, a, b), f(a, b)
                assert got.dtype == dtype
                np.testing.assert_array_equal(got, want)


def test_casts_between_floats_and_integers(rng):
    x = (rng.standard_normal(1000) * 1e3).astype(F32)
    for dtype in (np.int32, np.int64, np.bool_):
        np.testing.assert_array_equal(run(lambda t: t.astype(dtype), x), x.astype(dtype))
    k = rng.integers(-2**40, 2**40, 1000, dtype=np.int64)
    for dtype in (np.int32, F32, F64, np.bool_):
        np.testing.assert_array_equal(run(lambda t: t.astype(dtype), k), k.astype(dtype))
    # Out of range and NaN: numpy leaves them undefined; Tessera saturates, NaN gives 0 (docs/semantics.md).
    special = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, -0.0, 2.9, -2.9], F32)
    np.testing.assert_array_equal(run(lambda t: t.astype(np.int32), special),
                                  [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, 0, 2, -2])
    np.testing.assert_array_equal(run(lambda t: t.astype(np.bool_), special), special != 0)


def test_iota_arange_and_a_causal_mask(rng):
    s = rng.standard_normal((6, 9)).astype(F32)

    def causal(s):
        n, m = s.shape
        return ts.where(ts.iota((n, 1), 0, ts.int32) >= ts.arange(m, ts.int32), s, -np.inf)

    np.testing.assert_array_equal(run(causal, s), np.where(np.tri(6, 9, dtype=bool), s, -np.inf))
    f = ts.jit(causal)
    f(s)
    assert f.lower("schedule").count("= schedule.") == 1  # iota, compare and where in one kernel
    for axis in (0, 1, 2, -1):
        got = run(lambda t: t + ts.iota((3, 4, 5), axis, ts.float32), np.zeros((3, 4, 5), F32))
        np.testing.assert_array_equal(got, np.indices((3, 4, 5))[axis].astype(F32))


def test_integer_and_bool_errors():
    with pytest.raises(ts.TraceError, match="E949"):
        ts.iota((3,), 0)
    k = np.arange(4, dtype=np.int32)
    with pytest.raises(ts.VerifyError, match="E215"):
        run(lambda t: ts.exp(t), k)
    with pytest.raises(ts.VerifyError, match="E215"):
        run(lambda t: t & t, k)
    with pytest.raises(ts.VerifyError, match="E215"):
        run(lambda t: ts.where(t, t, t), k)
    with pytest.raises(ts.VerifyError, match="E211"):
        run(lambda t: t + 2.5, k)
    with pytest.raises(ts.VerifyError, match="E215"):
        run(lambda t: t.sum(), k)


# -- views ----------------------------------------------------------------------------------------------------

def test_views_as_numpy(rng):
    x = rng.standard_normal((4, 6, 5)).astype(F32)
    same = [  # the same code on numpy arrays
        lambda t: t.T + 0,
        lambda t: t.mT * 2,
        lambda t: t.transpose(1, 0, 2) - 1,
        lambda t: t.reshape(6, -1),
        lambda t: t.reshape(-1),
        lambda t: t[1:3, ::2, 1:],
        lambda t: t[2] + t[3],
        lambda t: t[..., None, 1],
        lambda t: t[:, -1],
        lambda t: t.transpose(1, 0, 2).reshape(6, 20),  # a reshape of a strided view: copied first
    ]
    for f in same:
        np.testing.assert_array_equal(run(f, x), f(x))
    pairs = [
        (lambda t: ts.transpose(t, (2, 0, 1)), lambda t: np.transpose(t, (2, 0, 1))),
        (lambda t: ts.broadcast_to(t[0:1], (3, 6, 5)), lambda t: np.broadcast_to(t[0:1], (3, 6, 5))),
        (lambda t: ts.exp(t.transpose(2, 1, 0))[1:, 2:4], lambda t: np.exp(t.transpose(2, 1, 0))[1:, 2:4]),
        (lambda t: ts.reshape(t, (5, 24)), lambda t: np.reshape(t, (5, 24))),
    ]
    for f, want in pairs:
        np.testing.assert_allclose(run(f, x), want(x), rtol=1e-6, atol=0)


def test_split_as_numpy(rng):
    x = rng.standard_normal((4, 9)).astype(F32)
    for got, want in zip(run(lambda t: tuple(p * 2 for p in ts.split(t, 3, axis=1)), x), np.split(x * 2, 3, axis=1)):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(run(lambda t: tuple(p + 0 for p in ts.split(t, [1, 3])), x), np.split(x, [1, 3])):
        np.testing.assert_array_equal(got, want)


def test_views_fold_into_pointwise_kernels_and_matmuls(rng):
    a = rng.standard_normal((2, 8, 16)).astype(F32)
    b = rng.standard_normal((2, 8, 16)).astype(F32)
    f = ts.jit(lambda q, k: (q @ k.mT, q.transpose(0, 2, 1) * 2))
    s, t = f(a, b)
    np.testing.assert_allclose(s, a @ b.transpose(0, 2, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(t, a.transpose(0, 2, 1) * 2)
    schedule = f.lower("schedule")
    assert schedule.count("= schedule.") == 2 and "materialize" not in schedule  # no copies
    assert "transpose_b = true" in schedule
    g = ts.jit(lambda q: ts.softmax(q.mT, axis=-1))
    np.testing.assert_allclose(g(a), np.exp(a.transpose(0, 2, 1)) / np.exp(a.transpose(0, 2, 1)).sum(-1, keepdims=True),
                               rtol=1e-5, atol=1e-6)
    assert 'materialize = "read by tessera.softmax' in g.lower("schedule")


def test_concatenate_and_rope_in_one_kernel(rng):
    x = rng.standard_normal((3, 4, 8)).astype(F32)
    cos, sin = rng.standard_normal((2, 4, 8)).astype(F32)

    def rope(x, cos, sin):
        x1, x2 = ts.split(x, 2, axis=-1)
        return x * cos + ts.concatenate([x2, x1], axis=-1) * sin

    f = ts.jit(rope)
    x1, x2 = np.split(x, 2, axis=-1)
    np.testing.assert_allclose(f(x, cos, sin), x * cos + np.concatenate([x2, x1], -1) * sin, rtol=1e-6, atol=1e-6)
    assert f.lower("schedule").count("= schedule.") == 1  # the halves are views, the concat is gathered
    k = rng.integers(-9, 9, (2, 3), dtype=np.int64)
    got = run(lambda a, b: np.concatenate([a, b * 2, a[:, :1]], axis=1), k, k)
    np.testing.assert_array_equal(got, np.concatenate([k, k * 2, k[:, :1]], axis=1))


@pytest.mark.parametrize("batch", [None, 2])
def test_the_llama_layer_example_matches_numpy(batch):
    """examples/llama_layer.py at its small size: fused QKV, RoPE, GQA causal attention, SwiGLU; one
    sequence [S, H] or a batch of them [B, S, H]."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "llama_layer.py"
    spec = importlib.util.spec_from_file_location("llama_layer", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    s, hidden, heads, kv, ffn, _ = example.SIZES["small"]
    arrays = example.weights("small", np.random.default_rng(3))
    if batch:  # the sequences: the first one and variations of it
        x = arrays[0]
        arrays = (np.stack([x] + [np.roll(x, i, axis=1) for i in range(1, batch)]),) + arrays[1:]
    f = ts.jit(lambda *a: example.layer(*a, heads=heads, kv_heads=kv))
    got = f(*arrays, check=True)
    want = example.reference(*arrays, heads=heads, kv_heads=kv)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_view_and_concat_edge_cases_from_review(rng):
    x = rng.standard_normal((5, 5)).astype(F32)
    # a leaf a concat reads and another op reads too (transposed, and a sliced view)
    np.testing.assert_array_equal(run(lambda t: ts.concatenate([t.T], axis=0) + t.T, x), 2 * x.T)
    np.testing.assert_array_equal(run(lambda t: ts.concatenate([t[:1], t[1:2]], axis=0) * t[:1], x),
                                  np.concatenate([x[:1], x[1:2]]) * x[:1])
    # numpy's split indices: negative from the end
    for got, want in zip(run(lambda t: tuple(p + 0 for p in ts.split(t, [-2], axis=1)), x), np.split(x, [-2], axis=1)):
        np.testing.assert_array_equal(got, want)
    # empty results with iota and concat
    assert run(lambda t: t + ts.iota((4, 1), 0, ts.float32), np.zeros((4, 0), F32)).shape == (4, 0)
    assert run(lambda a, b: ts.concatenate([a, b], axis=1) * 2, np.zeros((0, 4), F32), np.zeros((0, 3), F32)).shape == (0, 7)
    # a bool index and a boolean tensor index are refused, not read as ints or compared; an integer tensor
    # gathers rows (ts.take)
    with pytest.raises(ts.TraceError, match="E940"):
        run(lambda t: t[True], x)
    with pytest.raises(ts.TraceError, match="E940"):
        run(lambda t: t[t > 0], x)
    np.testing.assert_array_equal(run(lambda t, i: t[i], x, np.arange(2, dtype=np.int64)), x[:2])


def test_bool_bytes_other_than_one_read_as_true():
    raw = np.array([0, 1, 2, 255], np.uint8).view(np.bool_)
    np.testing.assert_array_equal(run(lambda b: (~b, b & b, b.astype(np.int32)), raw)[0], [True, False, False, False])
    np.testing.assert_array_equal(run(lambda b: b.astype(np.int32), raw), [0, 1, 1, 1])


# -- attention -----------------------------------------------------------------------------------------------

def attention_reference(q, k, v, causal, scale, mask=None):
    """softmax(scale q k^T [causal, aligned to the end]) v in f64, grouped-query heads; empty rows give 0."""
    q, k, v = (np.asarray(a, F64) for a in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = scale * q @ np.swapaxes(k, -1, -2)
    sq, sk = q.shape[2], k.shape[2]
    if causal:
        visible = np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq)
        s = np.where(visible, s, -np.inf)
    if mask is not None:  # a bool mask hides where False; a float one is added
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    m = s.max(-1, keepdims=True)
    p = np.exp(s - np.where(np.isfinite(m), m, 0))
    l = p.sum(-1, keepdims=True)
    o = np.where(l > 0, (p @ v) / np.where(l > 0, l, 1), 0)
    with np.errstate(divide="ignore"):  # log(0) = -inf: a row that sees no key
        return o, (m + np.log(l))[..., 0]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("sq,sk", [(37, 37), (1, 90), (50, 20)])
def test_attention_against_numpy(causal, sq, sk):
    r = np.random.default_rng(sq * 100 + sk)
    q = r.standard_normal((2, 4, sq, 32)).astype(F32)
    k = r.standard_normal((2, 2, sk, 32)).astype(F32)
    v = r.standard_normal((2, 2, sk, 32)).astype(F32)
    o, lse = run(lambda q, k, v: ts.attention(q, k, v, causal=causal, return_lse=True), q, k, v)
    want_o, want_lse = attention_reference(q, k, v, causal, 32 ** -0.5)
    close(o, want_o, F32, rtol=2e-5, atol=2e-6)
    close(lse, want_lse, F32, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("kind", ["bool", "bias"])
def test_attention_with_a_mask_against_numpy(kind):
    """A mask operand broadcast to [B, H, Sq, Sk]: a bool one hides keys (a row it hides whole gives 0 and
    lse -inf), a float one is added to the scaled scores; ts.scaled_dot_product_attention's attn_mask is
    the same operand; no gradient rule takes one yet (E263)."""
    r = np.random.default_rng(11)
    q = r.standard_normal((2, 4, 30, 16)).astype(F32)
    k = r.standard_normal((2, 2, 45, 16)).astype(F32)
    v = r.standard_normal((2, 2, 45, 16)).astype(F32)
    if kind == "bool":
        mask = r.random((30, 45)) < 0.5
        mask[3] = False
    else:
        mask = r.standard_normal((2, 1, 1, 45)).astype(F32)
    o, lse = run(lambda q, k, v, m: ts.attention(q, k, v, causal=True, mask=m, return_lse=True), q, k, v, mask)
    want_o, want_lse = attention_reference(q, k, v, True, 16 ** -0.5, mask)
    close(o, want_o, F32, rtol=2e-5, atol=2e-6)
    close(lse, want_lse, F32, rtol=2e-5, atol=2e-6)
    if kind == "bool":
        assert np.all(o[:, :, 3] == 0) and np.all(lse[:, :, 3] == -np.inf)
    got = run(lambda q, k, v, m: ts.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True), q, k, v,
              mask)
    close(got, attention_reference(q, k, v, False, 16 ** -0.5, mask)[0], F32, rtol=2e-5, atol=2e-6)
    with pytest.raises(ts.errors.VerifyError, match="E263"):
        ts.jit(ts.grad(lambda q, k, v, m: ts.sum(ts.attention(q, k, v, mask=m))))(q, k, v, mask)


def test_sdpa_spelling_matches_and_needs_enable_gqa():
    r = np.random.default_rng(3)
    q = r.standard_normal((1, 4, 16, 8))
    k = r.standard_normal((1, 2, 16, 8))
    v = r.standard_normal((1, 2, 16, 8))
    got = run(lambda q, k, v: ts.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3, enable_gqa=True),
              q, k, v)
    close(got, attention_reference(q, k, v, True, 0.3)[0], F64)
    with pytest.raises(ts.TraceError, match="E217"):
        run(lambda q, k, v: ts.scaled_dot_product_attention(q, k, v), q, k, v)


def test_sdpa_is_causal_with_unequal_lengths_is_refused():
    q, k = np.zeros((1, 2, 4, 8)), np.zeros((1, 2, 6, 8))
    with pytest.raises(ts.TraceError, match="top left"):
        run(lambda q, k, v: ts.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, k)
