"""ts.jit and ts.compile on the CPU: caching, zero-copy, results fed back, check, lower/explain."""
import numpy as np
import pytest

import tessera as ts

ROOT = __file__.rsplit("/tests/", 1)[0]


@ts.jit
def block(x, w, g):
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


def test_a_second_call_compiles_nothing(rng):
    f = ts.jit(lambda a, b: a * b + 1)
    x, _, g = arrays(rng)
    f(x, g)
    f(x + 1, g)
    assert f.cache_info()["traces"] == 1 and f.cache_info()["compiles"] == 1 and f.cache_info()["hits"] == 1
    f(x[:8].copy(), g[:8].copy())  # a new shape: traced and compiled once more
    f(x.astype(np.float64), g.astype(np.float64))  # a new dtype
    info = f.cache_info()
    assert info["misses"] == 3 and info["traces"] == 3 and info["compiles"] == 3 and info["signatures"] == 3


def test_no_copies_in_or_out(rng):
    x, w, g = arrays(rng)
    y = block(x, w, g)
    ptrs = block.last_pointers
    assert ptrs["inputs"] == [x.ctypes.data, w.ctypes.data, g.ctypes.data]
    assert ptrs["outputs"] == [y.ctypes.data]
    assert np.from_dlpack(y).ctypes.data == y.ctypes.data


def test_results_feed_another_function(rng):
    x, w, g = arrays(rng)
    twice = ts.jit(lambda y: y * 2.0)
    z = twice(block(x, w, g))
    np.testing.assert_allclose(z, 2 * block_ref(x, w, g), rtol=1e-4, atol=1e-5)
    assert twice.last_pointers["inputs"] == [block.last_pointers["outputs"][0]]


def test_results_outlive_their_inputs(rng):
    x, w, g = arrays(rng)
    y = block(x, w, g)
    want = block_ref(x, w, g)
    del x, w, g
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


def test_check_runs_the_oracle(rng):
    x, w, g = arrays(rng)
    checked = ts.jit(check=True)(lambda a, b, c: ts.silu(ts.rms_norm(a, b) * c))
    checked(x, w, g)
    report = checked.last_check
    assert report["ok"] and report["lines"][-1].startswith("check: 1 kernels and 1 results within tolerance")
    ts.check = True
    try:
        block(x, w, g)
        assert block.last_check["ok"]
    finally:
        ts.check = False


def test_compile_text_and_path(rng):
    p = ts.compile(ROOT + "/examples/row_sum.tsr")
    x = rng.standard_normal((4096, 1024)).astype(np.float32)
    np.testing.assert_allclose(p(x), x.sum(1), rtol=1e-4, atol=1e-3)
    assert p.last_launches[0]["placement"] == "native_cpu"
    q = ts.compile(p.lower("graph"))
    np.testing.assert_allclose(q(x, check=True), x.sum(1), rtol=1e-4, atol=1e-3)
    assert q.last_check["ok"]


def test_multiple_results_and_lower_before_call(rng):
    f = ts.jit(lambda a: (a.max(axis=-1), ts.softmax(a)))
    with pytest.raises(ts.ArgumentError) as e:
        f.lower("graph")
    assert e.value.code == "E945"
    x = rng.standard_normal((3, 10)).astype(np.float32)
    m, s = f(x)
    np.testing.assert_allclose(m, x.max(-1))
    assert "tessera.softmax" in f.lower("graph", x)
