"""Errors are tessera.Error subclasses with stable codes; nothing is copied or converted silently."""
import numpy as np
import pytest

import tessera as ts


def code_of(excinfo):
    return excinfo.value.code


def test_bad_ir_text_has_file_line_col(tmp_path):
    with pytest.raises(ts.ParseError) as e:
        ts.compile("func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = tessera.exp %x, : tensor<4xf32>\n}")
    assert (code_of(e), e.value.file, e.value.line, e.value.col) == ("E100", "<input>", 2, 24)
    path = tmp_path / "bad.tsr"
    path.write_text("func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %z : tensor<4xf32>\n}\n")
    with pytest.raises(ts.ParseError) as e:
        ts.compile(path)
    assert e.value.file == str(path) and e.value.line == 2 and str(e.value).startswith(f"{path}:2:")


def test_invalid_graphs_are_verify_errors():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(ts.VerifyError) as e:
        ts.jit(lambda a, b: a + b)(x, np.ones((5,), np.float32))
    assert code_of(e) == "E210"  # shapes do not broadcast
    with pytest.raises(ts.VerifyError) as e:
        ts.jit(lambda a, b: a + b)(x, np.ones((3, 4), np.float64))
    assert code_of(e) == "E209"  # no implicit promotion
    with pytest.raises(ts.VerifyError):
        ts.jit(lambda a: ts.softmax(a, axis=5))(x)


@pytest.mark.parametrize("fn,what", [
    (lambda a: a < 0, "comparison"),
    (lambda a: a[0], "indexing"),
    (lambda a: a if a else a, "bool()"),
    (lambda a: len(a), "len()"),
    (lambda a: [t for t in a], "iteration"),
])
def test_unsupported_python_on_traced_tensors(fn, what):
    with pytest.raises(ts.TraceError) as e:
        ts.jit(fn)(np.ones((2, 3), np.float32))
    assert code_of(e) == "E940" and what in str(e.value)


def test_trace_errors():
    x = np.ones((2, 3), np.float32)
    for fn, code in [(lambda a: a.T, "E941"), (lambda a: ts.exp(a.T), "E941"), (lambda a: 3.0, "E942"),
                     (lambda a: a, "E946"), (lambda a: a.astype("int8"), "E943")]:
        with pytest.raises(ts.TraceError) as e:
            ts.jit(fn)(x)
        assert code_of(e) == code


def test_arrays_are_never_copied_or_converted():
    p = ts.jit(lambda a: a * 2.0)
    x = np.ones((4, 6), np.float32)
    p(x)
    with pytest.raises(ts.ArgumentError) as e:
        p(np.ones((6, 4), np.float32).T)  # same shape and dtype, not C-contiguous
    assert code_of(e) == "E930"
    with pytest.raises(ts.ArgumentError) as e:
        ts.jit(lambda a: a * 2)(np.ones(3, np.int32))
    assert code_of(e) == "E943"
    with pytest.raises(ts.ArgumentError) as e:
        p([1.0, 2.0])
    assert code_of(e) == "E934"
    program = ts.compile(p.lower("graph"))
    with pytest.raises(ts.ExecutionError) as e:
        program(np.ones((4, 6), np.float64))
    assert code_of(e) == "E611"
    with pytest.raises(ts.ExecutionError) as e:
        program(x, x)
    assert code_of(e) == "E610"
    with pytest.raises(ts.ArgumentError) as e:
        program(np.ones((4, 6), np.int32))
    assert code_of(e) == "E932"


def test_a_cuda_program_without_a_gpu_fails_closed():
    from tessera import _core
    try:
        _core.Program("func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                      "  %y = tessera.exp %x : tensor<4xf32> -> tensor<4xf32>\n  return %y : tensor<4xf32>\n}",
                      "cuda")
    except ts.ExecutionError as e:
        assert e.code == "E730"
    else:
        pytest.skip("a CUDA GPU is here: the refusal without one was not exercised")
