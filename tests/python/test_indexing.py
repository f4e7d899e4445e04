"""ts.take (numpy take), ts.take_along_axis and x[ids] against numpy: negative indices, broadcasting,
int32 and int64 indices, NaN/inf carried, empty and rank-0 indices, fusion with a consumer, the E615 guard
on an out-of-range index, and gradients (docs/semantics.md "Indexing")."""
import numpy as np
import pytest

import tessera as ts


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def test_embedding_lookup_fused_with_its_scale(rng):
    table = rng.standard_normal((50, 24)).astype(np.float32)
    table[7, 3], table[9, 0] = np.nan, -np.inf
    ids = rng.integers(-50, 50, (4, 9)).astype(np.int64)
    ids[0, :3] = (7, 9, -50)
    scale = rng.standard_normal(24).astype(np.float32)

    f = ts.jit(lambda t, i, s: ts.take(t, i, axis=0) * s)
    got = f(table, ids, scale)
    np.testing.assert_array_equal(got, np.take(table, ids, axis=0) * scale)
    # one kernel reads the table where each id points, then the guard's two
    assert len(f.last_launches) == 3


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_take_every_axis(rng, axis, index_dtype):
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    n = x.shape[axis]
    idx = rng.integers(-n, n, (2, 4)).astype(index_dtype)
    got = ts.jit(lambda a, i: ts.take(a, i, axis=axis), check=True)(x, idx)
    np.testing.assert_array_equal(got, np.take(x, idx, axis=axis))


def test_take_flattened_rank0_and_empty_indices(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_array_equal(ts.jit(lambda a, i: ts.take(a, i))(x, np.array([23, -24, 5])),
                                  np.take(x, np.array([23, -24, 5])))
    np.testing.assert_array_equal(ts.jit(lambda a, i: ts.take(a, i, axis=1))(x, np.array(-2)),
                                  np.take(x, np.array(-2), axis=1))
    got = ts.jit(lambda a, i: ts.take(a, i, axis=0))(x, np.zeros((0,), np.int64))
    assert got.shape == (0, 6)


def test_integer_tensors_and_indexing_syntax(rng):
    x = rng.integers(-1000, 1000, (10, 3)).astype(np.int32)
    ids = np.array([9, 0, -1, 4])
    np.testing.assert_array_equal(ts.jit(lambda a, i: a[i])(x, ids), x[ids])
    np.testing.assert_array_equal(ts.jit(lambda a, i: np.take(a, i, axis=1))(x, np.array([2, 0])),
                                  np.take(x, [2, 0], axis=1))


def test_take_along_axis_broadcasts_like_numpy(rng):
    logits = rng.standard_normal((6, 10)).astype(np.float32)
    labels = rng.integers(-10, 10, 6)
    f = ts.jit(lambda x, l: ts.take_along_axis(x, l[:, None], axis=1), check=True)
    np.testing.assert_array_equal(f(logits, labels), np.take_along_axis(logits, labels[:, None], axis=1))
    x = rng.standard_normal((1, 5, 8)).astype(np.float32)
    idx = rng.integers(0, 8, (3, 1, 2)).astype(np.int32)
    got = ts.jit(lambda a, i: np.take_along_axis(a, i, axis=2))(x, idx)
    np.testing.assert_array_equal(got, np.take_along_axis(x, idx, axis=2))


def test_an_index_out_of_range_is_an_error_never_a_read(rng):
    table = rng.standard_normal((8, 4)).astype(np.float32)
    f = ts.jit(lambda t, i: ts.take(t, i, axis=0))
    for bad in (8, -9, 2**40):
        with pytest.raises(ts.ExecutionError) as e:
            f(table, np.array([1, bad, 2]))
        assert e.value.code == "E615" and "outside [-8, 8) for axis 0" in e.value.message
    np.testing.assert_array_equal(f(table, np.array([7, -8])), table[[7, -8]])  # the same program, in range
    g = ts.jit(lambda x, l: ts.take_along_axis(x, l, axis=1))
    with pytest.raises(ts.ExecutionError, match="E615"):
        g(table, np.array([[0], [4], [0], [0], [0], [0], [0], [0]]))


def test_refusals_at_trace_time(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    with pytest.raises(ts.Error) as e:
        ts.jit(lambda a, i: ts.take(a, i, axis=0))(x, np.zeros(3, np.float32))
    assert e.value.code == "E948"
    with pytest.raises(ts.VerifyError) as e:
        ts.jit(lambda a, i: ts.take(a, i, axis=0))(np.zeros((0, 3), np.float32), np.zeros(2, np.int64))
    assert e.value.code == "E219"
    with pytest.raises(ts.VerifyError) as e:
        ts.jit(lambda a, i: ts.take(a, i, axis=2))(x, np.zeros(2, np.int64))
    assert e.value.code == "E203"


def test_cross_entropy_and_its_gradient(rng):
    logits = rng.standard_normal((16, 12)).astype(np.float64)
    labels = rng.integers(0, 12, 16)

    def loss(z, l):
        return -ts.mean(ts.take_along_axis(ts.log_softmax(z, axis=-1), l[:, None], axis=-1))

    value, grad = ts.value_and_grad(loss, check=True)(logits, labels)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    assert float(value) == pytest.approx(-np.log(p[np.arange(16), labels]).mean(), rel=1e-12)
    want = p.copy()
    want[np.arange(16), labels] -= 1
    np.testing.assert_allclose(grad, want / 16, rtol=1e-10, atol=1e-14)


def test_embedding_gradient_adds_repeated_ids(rng):
    table = rng.standard_normal((7, 3))
    ids = np.array([[1, 4, 1], [-1, 4, 4]])
    w = rng.standard_normal((2, 3, 3))
    grad = ts.grad(lambda t, i, w: ts.sum(ts.take(t, i, axis=0) * w))(table, ids, w)
    want = np.zeros_like(table)
    np.add.at(want, ids % 7, w)
    np.testing.assert_allclose(grad, want, rtol=1e-12)
