"""Errors: tessera.Error subclasses with stable codes (docs/errors.md), file:line:col for IR text, a clear
E94x for what a traced function cannot express, and never a silent copy or conversion of an array."""
import os
import pathlib
import pickle
import re

import numpy as np
import pytest

import tessera as ts
from tessera import _core
from tessera.errors import error_class, from_diagnostic

X = np.ones((2, 3), np.float32)


def raises(cls, code, fn, *args):
    """fn(*args) raises `cls` with `code`; the exception is returned."""
    with pytest.raises(cls) as e:
        fn(*args)
    assert e.value.code == code, str(e.value)
    assert f"error[{code}]: " in str(e.value)
    return e.value


# -- the classes ---------------------------------------------------------------------------------------------

def test_classes_follow_the_code_family():
    assert [error_class(c) for c in ("E100", "E132", "E203", "E301", "E406", "E506", "E611", "E730", "E880",
                                     "E930", "E940", "E959", "E999")] == [
        ts.ParseError, ts.ParseError, ts.VerifyError, ts.VerifyError, ts.VerifyError, ts.VerifyError,
        ts.ExecutionError, ts.ExecutionError, ts.CheckError, ts.ArgumentError, ts.TraceError, ts.TraceError,
        ts.InternalError]
    assert issubclass(ts.TraceError, ts.ArgumentError)
    for cls in (ts.ParseError, ts.VerifyError, ts.ExecutionError, ts.CheckError, ts.ArgumentError,
                ts.InternalError):
        assert issubclass(cls, ts.Error) and issubclass(cls, Exception)


def test_an_error_carries_its_fields_and_pickles():
    e = from_diagnostic("E203", "axis 2 out of range", "f.tsr", 3, 5,
                        "f.tsr:3:5: error[E203]: axis 2 out of range")
    assert isinstance(e, ts.VerifyError) and (e.code, e.message, e.file, e.line, e.col) == (
        "E203", "axis 2 out of range", "f.tsr", 3, 5)
    assert str(e) == "f.tsr:3:5: error[E203]: axis 2 out of range"
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is ts.VerifyError and (back.code, back.line, str(back)) == ("E203", 3, str(e))
    plain = ts.TraceError("E940", "no such op")
    assert (plain.file, plain.line, plain.col, str(plain)) == (None, None, None, "error[E940]: no such op")


# -- IR text: file, line and column --------------------------------------------------------------------------

def test_bad_ir_text_has_file_line_col(tmp_path):
    e = raises(ts.ParseError, "E100", ts.compile,
               "func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = tessera.exp %x, : tensor<4xf32>\n}")
    assert (e.file, e.line, e.col) == ("<input>", 2, 24) and str(e).startswith("<input>:2:24: error[E100]: ")
    path = tmp_path / "bad.tsr"
    path.write_text("func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %z : tensor<4xf32>\n}\n")
    for source in (path, str(path)):
        e = raises(ts.ParseError, "E101", ts.compile, source)
        assert e.file == str(path) and e.line == 2 and str(e).startswith(f"{path}:2:")


def test_invalid_ir_is_a_verify_error_with_its_place():
    text = ("func @f(%x: tensor<4x8xf32>) -> tensor<4xf32> {\n"
            "  %y = tessera.reduce %x {kind = \"sum\", axes = [2]} : tensor<4x8xf32> -> tensor<4xf32>\n"
            "  return %y : tensor<4xf32>\n}\n")
    e = raises(ts.VerifyError, "E203", ts.compile, text)
    assert e.line == 2 and e.file == "<input>"


def test_unreadable_ir_files(tmp_path):
    e = raises(ts.ParseError, "E109", ts.compile, str(tmp_path / "missing.tsr"))
    assert "missing.tsr" in str(e) and e.line is None
    raises(ts.ParseError, "E109", ts.compile, tmp_path)  # a directory is refused before it is read
    fifo = tmp_path / "pipe.tsr"
    os.mkfifo(fifo)
    raises(ts.ParseError, "E109", ts.compile, fifo)  # not opened: opening a FIFO would block


def test_targets_that_do_not_run_here_fail_closed():
    text = ("func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %y = tessera.exp %x : tensor<4xf32> -> tensor<4xf32>\n  return %y : tensor<4xf32>\n}")
    raises(ts.ExecutionError, "E721", ts.compile, text, "tpu")
    raises(ts.ExecutionError, "E720", ts.compile, text, "metal")
    raises(ts.ExecutionError, "E720", lambda: ts.jit(target="metal")(ts.exp)(np.ones(4, np.float32)))


def test_a_cuda_program_without_a_gpu_fails_closed():
    try:
        _core.Program("func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                      "  %y = tessera.exp %x : tensor<4xf32> -> tensor<4xf32>\n"
                      "  return %y : tensor<4xf32>\n}", "cuda")
    except ts.ExecutionError as e:
        assert e.code == "E730"
    else:
        pytest.skip("a CUDA GPU is here: the refusal without one was not exercised (test_cuda.py runs)")


# -- invalid graphs: the compiler's rules, raised at the op that breaks them ---------------------------------

@pytest.mark.parametrize("fn,args,code", [
    (lambda a, b: a + b, (X, np.ones(5, np.float32)), "E210"),  # shapes do not broadcast
    (lambda a, b: a + b, (X, np.ones((2, 3), np.float64)), "E209"),  # no implicit promotion
    (lambda a: ts.softmax(a, axis=5), (X,), "E203"),
    (lambda a: a.sum(axis=2), (X,), "E203"),
    (lambda a: a.sum(axis=(1, -1)), (X,), "E204"),
    (lambda a: a.max(axis=0), (np.zeros((0, 3), np.float32),), "E206"),
    (lambda a, w: ts.rms_norm(a, w), (X, np.ones(2, np.float32)), "E212"),
    (lambda a, w, b: ts.layer_norm(a, w, b), (X, np.ones(3, np.float32), np.ones(3, np.float64)), "E212"),
    (lambda a: ts.softmax(a), (np.array(1.0, np.float32),), "E212"),
    (lambda a, b: a @ b, (X, X), "E213"),
    (lambda a, b: a @ b, (np.ones(3, np.float32), np.ones((3, 2), np.float32)), "E213"),
    (lambda a, b: a @ b, (np.ones((2, 2)), np.ones((2, 2))), "E214"),
])
def test_invalid_graphs_are_verify_errors(fn, args, code):
    raises(ts.VerifyError, code, ts.jit(fn), *args)


def test_the_error_is_raised_by_the_op_that_breaks_the_rule():
    reached = []

    def f(a, b):
        reached.append("before")
        c = a + b  # E210 here, while tracing
        reached.append("after")
        return c

    raises(ts.VerifyError, "E210", ts.jit(f), X, np.ones(4, np.float32))
    assert reached == ["before"]


# -- what a traced function cannot express -------------------------------------------------------------------

@pytest.mark.parametrize("fn,what", [
    (lambda a: a[::-1], "step <= 0"),
    (lambda a: a[[0, 1]], "indexing with a list"),
    (lambda a: a.__setitem__(0, 1.0), "item assignment"),
    (lambda a: a if a else a, "bool()"),
    (lambda a: a and a, "bool()"),
    (lambda a: len(a), "len()"),
    (lambda a: [t for t in a], "iteration"),
    (lambda a: 1.0 in a, "'in'"),
    (lambda a: float(a.sum()), "float()"),
    (lambda a: int(a.sum()), "int()"),
    (lambda a: a // 2, "'//'"),
    (lambda a: 2 % a, "'%'"),
    (lambda a: a ^ a, "'^'"),
    (lambda a: a << 1, "'<<'"),
    (lambda a: round(a, 2), "round(t, ndigits)"),
    (lambda a: np.asarray(a), "conversion to a numpy array"),
    (lambda a: np.sum(a), "np.sum"),
    (lambda a: np.arcsin(a), "numpy's arcsin"),
    (lambda a: np.add(a, a, out=a), "numpy's add with out="),
])
def test_unsupported_python_on_traced_tensors(fn, what):
    e = raises(ts.TraceError, "E940", ts.jit(fn), X)
    assert what in str(e) and "Graph IR has no such operation" in str(e)


@pytest.mark.parametrize("fn,code,what", [
    (lambda a: a.sum(axis=0).mT, "E941", ".mT needs rank 2"),
    (lambda a: a[0, 0, 0], "E948", "too many indices"),
    (lambda a: a[7], "E948", "out of range"),
    (lambda a: 3.0, "E942", "returned a float"),
    (lambda a: None, "E942", "returned a NoneType"),
    (lambda a: (), "E942", "returned nothing"),
    (lambda a: (a * 2, [a * 3]), "E942", "returned a list as result 1"),
    (lambda a: {"y": a * 2}, "E942", "returned a dict"),
    (lambda a: a.astype("int8"), "E943", "'int8'"),
    (lambda a: ts.cast(a, None), "E943", "None"),
    (lambda a: ts.matmul(a, a.T, out_dtype="fp8"), "E943", "'fp8'"),
    (lambda a: a, "E946", "unchanged"),
    (lambda a: (a, +a), "E946", "unchanged"),
    (lambda a: ts.gelu(a, approximate="fast"), "E948", "approximate"),
    (lambda a: ts.softmax(a, axis=1.0), "E948", "axis"),
    (lambda a: a.sum(axis="0"), "E948", "axis"),
    (lambda a: ts.rms_norm(a, a.sum(axis=0), eps="small"), "E948", "eps"),
])
def test_trace_errors(fn, code, what):
    e = raises(ts.TraceError, code, ts.jit(fn), X)
    assert what in str(e)


def test_a_batched_T_reverses_every_axis_as_numpy():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(ts.jit(lambda a: a.T + 0)(x), x.T)


def test_arrays_captured_by_the_function_are_refused():
    w = np.ones(3, np.float32)
    for fn in (lambda a: a * w, lambda a: w * a, lambda a: ts.maximum(a, w), lambda a: ts.rms_norm(a, w),
               lambda a: ts.matmul(a, w), lambda a: a + [1.0, 2.0, 3.0]):
        e = raises(ts.TraceError, "E947", ts.jit(fn), X)
        assert "did not receive as an argument" in str(e) or "not a list" in str(e)
    e = raises(ts.TraceError, "E947", ts.exp, w)  # an op outside a traced function
    assert "the traced tensors of a function compiled by ts.jit" in str(e)


def test_tensors_kept_from_another_trace_are_refused():
    kept = []

    def keep(a):
        kept.append(a)
        return a * 2

    ts.jit(keep)(X)
    raises(ts.TraceError, "E944", ts.jit(lambda a: a + kept[0]), X)
    raises(ts.TraceError, "E944", ts.jit(lambda a: kept[0] * 1), X)
    raises(ts.TraceError, "E944", ts.exp, kept[0])  # its trace has ended


def test_lower_before_any_call():
    raises(ts.TraceError, "E945", ts.jit(ts.exp).lower)
    raises(ts.TraceError, "E945", ts.jit(ts.exp).explain)


def test_a_failed_trace_is_not_cached():
    calls = []

    def f(a):
        calls.append(1)
        if len(calls) == 1:
            raise KeyError("the user's own error")
        return a * 2

    g = ts.jit(f)
    with pytest.raises(KeyError):
        g(X)
    np.testing.assert_array_equal(g(X), 2 * X)  # traced again, not a poisoned entry
    assert g.cache_info()["traces"] == 2 and g.cache_info()["signatures"] == 1


def test_wrong_argument_counts_are_the_functions_own_type_error():
    with pytest.raises(TypeError):
        ts.jit(lambda a, b: a + b)(X)


# -- arrays: taken as they are, or refused; never copied or converted ----------------------------------------

def test_arrays_are_never_copied_or_converted():
    f = ts.jit(lambda a: a * 2.0)
    x = np.ones((4, 6), np.float32)
    f(x)
    e = raises(ts.ArgumentError, "E930", f, np.ones((6, 4), np.float32).T)  # same key as x, not C-contiguous
    assert "np.ascontiguousarray" in str(e)
    raises(ts.ArgumentError, "E930", f, np.ones((4, 12), np.float32)[:, ::2])
    raises(ts.ArgumentError, "E932", f, np.ones(3, np.int16))
    raises(ts.ArgumentError, "E932", f, np.ones(3, np.complex64))
    raises(ts.ArgumentError, "E932", f, np.ones(3, ">f4"))  # big-endian: numpy cannot even export it
    raises(ts.ArgumentError, "E934", f, [1.0, 2.0])
    raises(ts.ArgumentError, "E934", f, 2.0)
    program = ts.compile(f.lower("graph"))
    raises(ts.ExecutionError, "E611", program, np.ones((4, 6), np.float64))
    raises(ts.ExecutionError, "E611", program, np.ones((6, 4), np.float32))
    raises(ts.ExecutionError, "E610", program, x, x)
    raises(ts.ExecutionError, "E610", program)
    raises(ts.ArgumentError, "E932", program, np.ones((4, 6), np.uint16))
    raises(ts.ExecutionError, "E611", program, np.ones((4, 6), np.int32))  # a dtype Tessera has, not this program's
    raises(ts.ArgumentError, "E930", program, np.ones((6, 4), np.float32).T)
    raises(ts.ArgumentError, "E934", program, "x")


def test_misaligned_arrays_are_refused_not_copied():
    raw = np.zeros(4 * 24 + 1, np.uint8)
    x = np.frombuffer(raw.data, np.float32, count=24, offset=1).reshape(4, 6)  # C-contiguous, 1 byte off
    e = raises(ts.ExecutionError, "E603", ts.jit(lambda a: a * 2.0), x)
    assert "not aligned" in str(e)


def test_every_code_the_package_raises_is_documented():
    root = pathlib.Path(__file__).resolve().parents[2]
    source = "".join(p.read_text() for p in (root / "python" / "tessera").glob("*.py"))
    codes = sorted(set(re.findall(r'Error\("(E9[0-9][0-9])"', source)))
    assert "E940" in codes and "E948" in codes
    for doc in ("errors.md", "python.md"):
        text = (root / "docs" / doc).read_text()
        assert [c for c in codes if f"| {c} |" not in text] == [], doc
