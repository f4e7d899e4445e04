"""ts.jit and ts.compile on the CPU: tracing and its cache, zero-copy in and out, results fed back,
check=True, lower() and explain()."""
import functools
import pathlib

import numpy as np
import pytest

import tessera as ts

ROOT = pathlib.Path(__file__).resolve().parents[2]


@ts.jit
def block(x, w, g):
    """The issue's example."""
    return ts.silu(ts.rms_norm(x, w, eps=1e-6) * g)


def block_ref(x, w, g):
    n = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w * g
    return n / (1 + np.exp(-n))


def arrays(rng, rows=16):
    return (rng.standard_normal((rows, 64)).astype(np.float32), rng.standard_normal(64).astype(np.float32),
            rng.standard_normal((rows, 64)).astype(np.float32))


def test_the_issue_example(rng):
    x, w, g = arrays(rng)
    y = block(x, w, g)
    assert isinstance(y, np.ndarray)
    np.testing.assert_allclose(np.from_dlpack(y), block_ref(x, w, g), rtol=1e-4, atol=1e-5)
    assert "schedule.rowwise" in block.lower("schedule")
    for layer in ("graph", "tile", "target", "source"):
        assert block.lower(layer)
    text = block.explain(x, w, g)
    assert "placement=native_cpu" in text and "sha256=" in text and "implementation=tessera" in text


def test_a_jitted_function_looks_like_its_function():
    assert block.__name__ == "block" and block.__doc__ == "The issue's example." and block.__wrapped__
    assert "block" in repr(block)


# -- the cache -----------------------------------------------------------------------------------------------

def test_a_second_call_traces_and_compiles_nothing(rng):
    traced = []

    @ts.jit
    def f(a, b):
        traced.append(a.shape)
        return a * b + 1

    x, _, g = arrays(rng)
    f(x, g)
    f(x + 1, g)
    f(np.ones_like(x), np.zeros_like(g))
    assert traced == [(16, 64)]
    assert f.cache_info() == {"hits": 2, "misses": 1, "traces": 1, "compiles": 1, "signatures": 1,
                              "programs": 1}
    f(x[:8].copy(), g[:8].copy())  # a new shape: traced and compiled once more
    f(x.astype(np.float64), g.astype(np.float64))  # a new dtype
    f(x[:8].copy(), g[:8].copy())
    info = f.cache_info()
    counts = (info["hits"], info["misses"], info["traces"], info["compiles"], info["signatures"])
    assert counts == (3, 3, 3, 3, 3)
    f.cache_clear()
    f(x, g)
    assert f.cache_info()["traces"] == 1 and len(traced) == 4


class DLPackOnly:
    """An array that shows nothing but the DLPack protocol (as array-API libraries may)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kwargs):
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_the_signature_is_the_arrays_not_their_library(rng):
    f = ts.jit(lambda a: ts.exp(a))
    x = rng.standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(f(x), np.exp(x), rtol=1e-5)
    # Another kind of object (DLPack only) with the same device, dtype and shape: a cache hit.
    np.testing.assert_allclose(np.from_dlpack(f(DLPackOnly(x))), np.exp(x), rtol=1e-5)
    info = f.cache_info()
    assert (info["signatures"], info["traces"], info["programs"], info["compiles"], info["hits"]) == (1, 1, 1, 1, 1)


def test_input_names_are_the_parameters(rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    f = ts.jit(lambda alpha, beta: alpha + beta)
    f(x, x)
    assert "func @lambda(%alpha: tensor<2x3xf32>, %beta: tensor<2x3xf32>)" in f.lower("graph")
    g = ts.jit(lambda *xs: xs[0] * xs[1])
    g(x, x)
    assert "(%x0: tensor<2x3xf32>, %x1: tensor<2x3xf32>)" in g.lower()
    # Names the IR cannot take (a builder result's name r<N>, non-ASCII) fall back to x<i>, kept unique.
    h = ts.jit(lambda r0, é, x1: r0 + é + x1)
    np.testing.assert_allclose(h(x, x, x), 3 * x)
    assert "(%x0: tensor<2x3xf32>, %x1: tensor<2x3xf32>, %x1_: tensor<2x3xf32>)" in h.lower()


def test_a_jitted_function_called_while_tracing_joins_the_trace(rng):
    inner = ts.jit(lambda a: ts.exp(a) * 2)
    outer = ts.jit(lambda a, b: inner(a) + b)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(outer(x, x), np.exp(x) * 2 + x, rtol=1e-5)
    assert inner.cache_info()["traces"] == 0 and "tessera.exp" in outer.lower("graph")


# -- arrays in and out, never copied -------------------------------------------------------------------------

def test_no_copies_in_or_out(rng):
    x, w, g = arrays(rng)
    y = block(x, w, g)
    ptrs = block.last_pointers
    assert ptrs["inputs"] == [x.ctypes.data, w.ctypes.data, g.ctypes.data]
    assert ptrs["outputs"] == [y.ctypes.data]
    assert np.from_dlpack(y).ctypes.data == y.ctypes.data


def test_results_feed_another_function_without_a_copy(rng):
    x, w, g = arrays(rng)
    twice = ts.jit(lambda y: y * 2.0)
    z = twice(block(x, w, g))
    np.testing.assert_allclose(z, 2 * block_ref(x, w, g), rtol=1e-4, atol=1e-5)
    assert twice.last_pointers["inputs"] == [block.last_pointers["outputs"][0]]


def test_results_outlive_their_inputs_and_program(rng):
    x, w, g = arrays(rng)
    f = ts.jit(lambda a, b, c: ts.silu(ts.rms_norm(a, b) * c))
    y = f(x, w, g)
    want = block_ref(x, w, g)
    del x, w, g, f
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


def test_a_result_may_be_an_argument_alongside_computed_ones(rng):
    x = rng.standard_normal((4, 4)).astype(np.float32)
    same, e = ts.jit(lambda a: (a, ts.exp(a)))(x)
    assert same.ctypes.data == x.ctypes.data  # the argument itself, not a copy
    np.testing.assert_array_equal(same, x)
    np.testing.assert_allclose(e, np.exp(x), rtol=1e-5)


def test_one_tensor_returned_twice(rng):
    x = rng.standard_normal(7).astype(np.float32)
    a, b = ts.jit(lambda v: (ts.tanh(v),) * 2)(x)
    np.testing.assert_allclose(a, np.tanh(x), rtol=1e-5)
    np.testing.assert_array_equal(a, b)


def test_arrays_contiguous_but_for_size_1_axes_are_taken_as_they_are():
    # Any stride along an axis of extent 1 (torch makes such tensors) still reads contiguous memory.
    base = np.arange(24, dtype=np.float32)
    x = np.lib.stride_tricks.as_strided(base, shape=(4, 1, 6), strides=(24, 1000, 4))
    f = ts.jit(lambda a: a + 1)
    np.testing.assert_array_equal(f(x), x + 1)
    assert f.last_pointers["inputs"] == [base.ctypes.data]


def test_read_only_arrays_are_taken_as_they_are(rng):
    x = rng.standard_normal((5, 3)).astype(np.float32)
    x.flags.writeable = False  # kernels only read their inputs
    f = ts.jit(lambda a: a * 3)
    np.testing.assert_array_equal(f(x), 3 * x)
    assert f.last_pointers["inputs"] == [x.ctypes.data]


# -- check=True ----------------------------------------------------------------------------------------------

def test_check_runs_the_oracle_per_jit_per_call_and_globally(rng):
    x, w, g = arrays(rng)
    checked = ts.jit(check=True)(lambda a, b, c: ts.silu(ts.rms_norm(a, b) * c))
    checked(x, w, g)
    report = checked.last_check
    assert report["ok"] and report["first_failure"] == ""
    assert report["lines"][-1].startswith("check: 1 kernels and 1 results within tolerance")

    per_call = ts.jit(lambda a: ts.softmax(a))
    per_call(x)
    assert per_call.last_check is None  # not checked unless asked
    per_call(x, check=True)
    assert per_call.last_check["ok"]

    glob = ts.jit(lambda a: a.sum(axis=1))
    ts.check = True  # read on every call
    glob(x)
    assert glob.last_check["ok"]
    opted_out = ts.jit(check=False)(lambda a: a.sum(axis=0))
    opted_out(x)
    assert opted_out.last_check is None  # the jit's own check=False wins over ts.check
    ts.check = False
    unchecked = ts.jit(lambda a: a.max(axis=0))
    unchecked(x)
    assert unchecked.last_check is None


# -- lower() and explain() -----------------------------------------------------------------------------------

def test_lower_and_explain_say_what_runs(rng):
    f = ts.jit(lambda a: (a.max(axis=-1), ts.softmax(a)))
    with pytest.raises(ts.TraceError) as e:
        f.lower("graph")
    assert e.value.code == "E945"
    x = rng.standard_normal((3, 10)).astype(np.float32)
    assert "tessera.softmax" in f.lower("graph", x)  # example arrays: traced and compiled, nothing run
    assert f.last_launches == [] and f.cache_info()["compiles"] == 1
    m, s = f(x)
    np.testing.assert_array_equal(m, x.max(-1))
    target = f.lower("target")
    text = f.explain()
    assert text.startswith("@lambda on target cpu: ")
    assert "(tensor<3x10xf32>) -> (tensor<3xf32>, tensor<3x10xf32>)" in text
    for launch in f.last_launches:
        assert launch["placement"] == "native_cpu" and launch["implementation"] == "tessera"
        assert launch["sha256"] in target and launch["sha256"] in text and f"@{launch['kernel']}" in text
    source = f.lower("source")
    assert source and source != target
    with pytest.raises(ts.ParseError) as e:
        f.lower("assembly")
    assert e.value.code == "E132"


def test_tune_shows_the_arbiters_table(rng):
    a = rng.standard_normal((64, 96)).astype(np.float32)
    b = rng.standard_normal((96, 32)).astype(np.float32)
    plain = ts.jit(lambda x, y: x @ y)
    np.testing.assert_allclose(plain(a, b), a @ b, rtol=1e-4, atol=1e-4)
    assert "tune=True asks the arbiter" in plain.explain(a, b)
    tuned = ts.jit(tune=True)(lambda x, y: x @ y)
    np.testing.assert_allclose(tuned(a, b), a @ b, rtol=1e-4, atol=1e-4)
    text = tuned.explain(a, b)
    assert "the arbiter's choice for each matmul region" in text and "tessera" in text


# -- ts.compile ----------------------------------------------------------------------------------------------

def test_compile_a_path_text_or_bytes(rng):
    p = ts.compile(str(ROOT / "examples" / "row_sum.tsr"))
    x = rng.standard_normal((4096, 1024)).astype(np.float32)
    np.testing.assert_allclose(p(x), x.sum(1, dtype=np.float64), rtol=1e-4, atol=1e-3)
    assert p.last_launches[0]["placement"] == "native_cpu"
    assert p.input_names == ["x"] and p.input_types == [("f32", (4096, 1024))]
    assert p.output_types == [("f32", (4096,))] and p.target == "cpu" and p.kernels
    for source in (ROOT / "examples" / "row_sum.tsr", p.lower("graph"), p.lower("graph").encode()):
        q = ts.compile(source)
        np.testing.assert_allclose(q(x, check=True), x.sum(1, dtype=np.float64), rtol=1e-4, atol=1e-3)
        assert q.last_check["ok"]
    assert "placement=native_cpu" in q.explain() and "row_sum" in q.explain(x)


def test_compile_a_lower_layer(rng):
    f = ts.jit(lambda a: ts.exp(a) + 1)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    f(x)
    for layer in ("schedule", "tile", "target"):
        p = ts.compile(f.lower(layer))
        np.testing.assert_allclose(p(x), np.exp(x) + 1, rtol=1e-5)
    with pytest.raises(ts.Error) as e:
        p(x, check=True)  # the oracle reads Graph IR: what the user meant
    assert e.value.code == "E124"


def test_compiled_programs_with_several_results_return_tuples(rng):
    f = ts.jit(lambda a: (a.sum(axis=0), a * 2))
    x = rng.standard_normal((3, 2)).astype(np.float32)
    f(x)
    s, d = ts.compile(f.lower("graph"))(x)
    np.testing.assert_allclose(s, x.sum(0), rtol=1e-6)
    np.testing.assert_array_equal(d, 2 * x)


def test_check_on_compiled_programs_follows_ts_check(rng):
    p = ts.compile(ROOT / "examples" / "row_sum.tsr")
    x = rng.standard_normal((4096, 1024)).astype(np.float32)
    p(x)
    assert p.last_check is None
    ts.check = True
    p(x)
    assert p.last_check["ok"]


def test_jit_as_a_decorator_with_options(rng):
    @ts.jit(target="cpu", check=True)
    def f(a):
        return a * a

    x = rng.standard_normal(9).astype(np.float32)
    np.testing.assert_array_equal(f(x), x * x)
    assert f.last_check["ok"] and f.target == "cpu"
    assert isinstance(functools.partial(f)(x), np.ndarray)


def test_a_signature_first_seen_with_refused_arrays_is_served_natively_later(rng):
    f = ts.jit(lambda a: a * 2.0)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    with pytest.raises(ts.ArgumentError):
        f(np.asfortranarray(x))  # the signature is traced and compiled; the dispatcher cannot take the array
    np.testing.assert_allclose(f(x), x * 2)
    np.testing.assert_allclose(f(x), x * 2)
    assert f.cache_info()["hits"] == 1  # the second good call came through the dispatcher


def test_check_takes_any_truthy_value(rng):
    f = ts.jit(lambda a: a + 1.0)
    x = rng.standard_normal(5).astype(np.float32)
    f(x)
    for flag in (1, np.True_, 0):
        np.testing.assert_allclose(f(x, check=flag), x + 1, rtol=1e-6)
    assert f.last_check is not None and f.last_check["ok"]
