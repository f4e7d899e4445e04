"""ts.jit(in_place=...): results written into the caller's arrays (an optimizer step updating its
parameters), directly where a pointwise kernel can and through a copy kernel otherwise; checked calls see
the inputs as they were; bad requests are refused (docs/semantics.md "In-place results")."""
import numpy as np
import pytest

import tessera as ts


@pytest.fixture
def rng():
    return np.random.default_rng(21)


def test_momentum_step_updates_the_arrays_it_was_given(rng):
    @ts.jit(in_place=(0, 1), check=True)
    def step(w, m, g):
        m2 = 0.9 * m + g
        return w - 0.1 * m2, m2

    w = rng.standard_normal((64, 33)).astype(np.float32)
    m = rng.standard_normal((64, 33)).astype(np.float32)
    g = rng.standard_normal((64, 33)).astype(np.float32)
    want_m = 0.9 * m + g
    want_w = w - 0.1 * want_m
    w1, m1 = step(w, m, g)
    np.testing.assert_allclose(w, want_w, rtol=1e-6)
    np.testing.assert_allclose(m, want_m, rtol=1e-6)
    assert np.shares_memory(w1, w) and np.shares_memory(m1, m)
    assert "materialize" not in step.lower("schedule")  # the kernels write the arrays directly
    step(w, m, g)  # again: the same program, updating the updated arrays
    np.testing.assert_allclose(m, 0.9 * want_m + g, rtol=1e-6)


def test_results_no_kernel_can_write_in_place_are_copied_in_last(rng):
    @ts.jit(in_place=(0, 1, None))
    def f(w, x):
        return w.T * 2.0, x @ x, w + x  # a transposed read, a matmul, and w read after both

    w = rng.standard_normal((8, 8)).astype(np.float32)
    x = rng.standard_normal((8, 8)).astype(np.float32)
    w0, x0 = w.copy(), x.copy()
    a, b, c = f(w, x, check=True)
    np.testing.assert_allclose(w, w0.T * 2, rtol=1e-6)
    np.testing.assert_allclose(x, x0 @ x0, rtol=1e-5)
    np.testing.assert_allclose(c, w0 + x0, rtol=1e-6)
    assert np.shares_memory(a, w) and np.shares_memory(b, x) and not np.shares_memory(c, w)
    assert f.lower("schedule").count('materialize = "written in place into') == 2


def test_refusals(rng):
    w = np.ones((4, 4), np.float32)
    with pytest.raises(ts.TraceError) as e:
        ts.jit(lambda a: a * 2, in_place=("a",))
    assert e.value.code == "E948"
    with pytest.raises(ts.VerifyError) as e:  # another shape
        ts.jit(lambda a: a.sum(axis=0), in_place=(0,))(w)
    assert e.value.code == "E208"
    with pytest.raises(ts.VerifyError) as e:  # one argument written twice
        ts.jit(lambda a: (a * 2, a * 3), in_place=(0, 0))(w)
    assert e.value.code == "E208"
