"""Tracing: the proxy tensor a jitted function sees, and one function per Graph IR op.

Each op goes straight to tessera._core.GraphBuilder, which type-checks and verifies it in C++: the shape
and dtype rules live in one place, the compiler's, and are never re-derived here. This file only spells
the ops the Python way and refuses, with a stable code, what Graph IR cannot express:

    E940  an operation Graph IR has no op for (indexing, bool(), len(), iteration, //, ...)
    E941  .mT of a tensor of rank < 2
    E943  an unknown element type
    E944  a tensor of another trace, or one kept after its trace ended
    E947  an operand that is neither a traced tensor nor a Python number (an array captured by the function)
    E948  a bad option value (gelu's approximate, an axis that is not an int, a bad shape)
    E949  ts.iota / ts.arange outside a function being traced
"""
from __future__ import annotations

import builtins
import numbers
import operator
import threading
from typing import Any, Optional, Sequence, Tuple, Union

from . import _core
from .errors import TraceError

__all__ = ["Tensor", "float16", "bfloat16", "float32", "float64", "bool_", "int32", "int64", "dtype_name",
           "neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "silu",
           "sin", "cos", "exp2", "log2", "erf", "floor", "ceil", "round", "clamp",
           "add", "sub", "mul", "div", "maximum", "minimum", "pow", "cast", "astype",
           "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
           "logical_and", "logical_or", "logical_not", "where", "iota", "arange",
           "reshape", "transpose", "broadcast_to", "split", "concatenate", "take", "take_along_axis",
           "softmax", "log_softmax", "layer_norm", "rms_norm", "matmul", "sum", "mean", "max", "min", "prod",
           "argmax", "argmin"]

#: Element types, as Tessera names them; any common spelling is accepted too (see dtype_name).
float16: str = "f16"
bfloat16: str = "bf16"
float32: str = "f32"
float64: str = "f64"
bool_: str = "i1"
int32: str = "i32"
int64: str = "i64"

# Spellings of numpy ("float32"), torch ("torch.float32": the prefix is dropped) and Tessera ("f32"). "float"
# and Python's float are float64, as in numpy.
_DTYPES = {"f16": "f16", "float16": "f16", "half": "f16",
           "bf16": "bf16", "bfloat16": "bf16",
           "f32": "f32", "float32": "f32", "single": "f32",
           "f64": "f64", "float64": "f64", "double": "f64", "float": "f64",
           "i1": "i1", "bool": "i1", "bool_": "i1",
           "i32": "i32", "int32": "i32", "int": "i64",
           "i64": "i64", "int64": "i64", "long": "i64"}

DType = Any  # "f32", "float32", np.float32, np.dtype("float32"), torch.float32, ts.float32 ...
Axis = Optional[Union[int, Sequence[int]]]


def dtype_name(dtype: DType) -> Optional[str]:
    """Tessera's name ("f32"...) of a dtype spelled any common way, or None if it is not one of Tessera's."""
    if dtype is None:  # numpy would read None as float64: too easy to pass by mistake
        return None
    name = dtype.__name__ if isinstance(dtype, type) else str(dtype)  # np.float32, float; or "f32", np.dtype
    found = _DTYPES.get(name[6:] if name.startswith("torch.") else name)
    if found is None:
        try:  # numpy's other spellings: "f4", "<f8", np.dtype(ml_dtypes.bfloat16)
            import numpy
            found = _DTYPES.get(numpy.dtype(dtype).name)
        except Exception:
            return None
    return found


def _dtype(dtype: DType, what: str) -> str:
    name = dtype_name(dtype)
    if name is None:
        raise TraceError("E943", f"{what}: unknown element type {dtype!r}; Tessera computes in f16, bf16, "
                                 "f32, f64, bool, int32 and int64 (ts.float16, ts.bfloat16, ts.float32, "
                                 "ts.float64, ts.bool_, ts.int32, ts.int64)")
    return name


class _Trace:
    """One trace: the builder its tensors add ops to, open while the traced function runs."""

    __slots__ = ("builder", "open", "_outer")

    def __init__(self, func_name: str):
        self.builder = _core.GraphBuilder(func_name)
        self.open = True

    # The trace being built on this thread, for ops with no tensor operand (ts.iota).
    _active = threading.local()

    def __enter__(self) -> "_Trace":
        self._outer = getattr(_Trace._active, "trace", None)
        _Trace._active.trace = self
        return self

    def __exit__(self, *exc) -> None:
        _Trace._active.trace = self._outer
        self.open = False  # a tensor kept past its trace is refused (E944), never added to another graph


class Tensor:
    """A tensor of a function being traced by ``ts.jit``: a value of the Graph IR being built.

    It has a ``shape``, a ``dtype`` and an ``ndim`` but no data: every operation on it adds an op to the
    graph, checked on the spot by the compiler. Operators: ``+ - * / ** @``, unary ``-``, ``abs()``,
    comparisons ``== != < <= > >=`` (bool results), ``& | ~`` on bools, indexing with ints, slices,
    ``...`` and ``None``; methods: ``sum mean max min prod astype reshape transpose``; ``.T``, ``.mT``.
    Views (indexing, reshape, transpose, broadcast) copy nothing where a pointwise kernel reads them.
    """

    __slots__ = ("_trace", "_value")

    def __init__(self, trace: _Trace, value: "_core.Value"):
        self._trace = trace
        self._value = value

    # -- what it is ------------------------------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        """The extents, as a tuple of ints."""
        return tuple(self._value.shape)

    @property
    def dtype(self) -> str:
        """The element type: "f16", "bf16", "f32" or "f64"."""
        return self._value.dtype

    @property
    def ndim(self) -> int:
        """The rank."""
        return len(self._value.shape)

    @property
    def T(self) -> "Tensor":
        """The transpose, as numpy's ``.T``: every axis reversed (a no-op for rank 0 and 1). As an operand of
        ``@`` it costs nothing: the matmul reads the other layout."""
        return self if self.ndim < 2 else transpose(self)

    @property
    def mT(self) -> "Tensor":
        """The swap of the last two axes (numpy's and torch's ``.mT``)."""
        if self.ndim < 2:
            raise TraceError("E941", f".mT needs rank 2 or more, the tensor has shape {self.shape}")
        return transpose(self, tuple(range(self.ndim - 2)) + (self.ndim - 1, self.ndim - 2))

    def reshape(self, *shape: Any) -> "Tensor":
        """The same elements in another shape (one extent may be -1), as numpy's ``reshape``."""
        return reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else shape)

    def transpose(self, *axes: Any) -> "Tensor":
        """The axes permuted (reversed without arguments), as numpy's ``transpose``."""
        return transpose(self, axes[0] if len(axes) == 1 and not isinstance(axes[0], numbers.Integral)
                         else (axes or None))

    def __getitem__(self, index: Any) -> "Tensor":
        return _index(self, index)

    def __repr__(self) -> str:
        return f"tessera.Tensor(traced %{self._value.name}: {self.dtype}{list(self.shape)})"

    # -- arithmetic ------------------------------------------------------------------------------------------
    def __add__(self, other: "Operand") -> "Tensor": return add(self, other)
    def __radd__(self, other: "Operand") -> "Tensor": return add(other, self)
    def __sub__(self, other: "Operand") -> "Tensor": return sub(self, other)
    def __rsub__(self, other: "Operand") -> "Tensor": return sub(other, self)
    def __mul__(self, other: "Operand") -> "Tensor": return mul(self, other)
    def __rmul__(self, other: "Operand") -> "Tensor": return mul(other, self)
    def __truediv__(self, other: "Operand") -> "Tensor": return div(self, other)
    def __rtruediv__(self, other: "Operand") -> "Tensor": return div(other, self)
    def __pow__(self, other: "Operand") -> "Tensor": return pow(self, other)
    def __rpow__(self, other: "Operand") -> "Tensor": return pow(other, self)
    def __matmul__(self, other: "Tensor") -> "Tensor": return matmul(self, other)
    def __rmatmul__(self, other: "Tensor") -> "Tensor": return matmul(other, self)
    def __neg__(self) -> "Tensor": return neg(self)
    def __pos__(self) -> "Tensor": return self
    def __abs__(self) -> "Tensor": return abs(self)

    # -- reductions and casts as methods ---------------------------------------------------------------------
    def sum(self, axis: Axis = None, keepdims: bool = False) -> "Tensor":
        """The sum over ``axis`` (None: every axis), as numpy's."""
        return sum(self, axis, keepdims)

    def mean(self, axis: Axis = None, keepdims: bool = False) -> "Tensor":
        """The mean over ``axis`` (None: every axis), as numpy's."""
        return mean(self, axis, keepdims)

    def max(self, axis: Axis = None, keepdims: bool = False) -> "Tensor":
        """The maximum over ``axis`` (None: every axis); NaN propagates."""
        return max(self, axis, keepdims)

    def min(self, axis: Axis = None, keepdims: bool = False) -> "Tensor":
        """The minimum over ``axis`` (None: every axis); NaN propagates."""
        return min(self, axis, keepdims)

    def prod(self, axis: Axis = None, keepdims: bool = False) -> "Tensor":
        """The product over ``axis`` (None: every axis), as numpy's."""
        return prod(self, axis, keepdims)

    def argmax(self, axis: Optional[int] = None, keepdims: bool = False) -> "Tensor":
        """The position of the largest element along ``axis``, as np.argmax."""
        return argmax(self, axis, keepdims)

    def argmin(self, axis: Optional[int] = None, keepdims: bool = False) -> "Tensor":
        """The position of the smallest element along ``axis``, as np.argmin."""
        return argmin(self, axis, keepdims)

    def astype(self, dtype: DType) -> "Tensor":
        """The tensor converted to another element type (rounded to nearest even)."""
        return cast(self, dtype)

    def clip(self, min: Optional[float] = None, max: Optional[float] = None, out: Any = None) -> "Tensor":
        """Values limited to [min, max], as numpy's clip (NaN stays NaN); np.clip(t, ...) lands here."""
        if out is not None:
            raise TraceError("E940", "clip(out=...): Graph IR has no such operation (results are new tensors)")
        return clamp(self, min, max)

    def __round__(self, ndigits: Optional[int] = None) -> "Tensor":
        if ndigits not in (None, 0):
            raise TraceError("E940", "round(t, ndigits): Graph IR has no such operation (ndigits other than 0)")
        return round(self)

    # -- numpy functions on a traced tensor ------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # numpy calls this for np.exp(t), and for np.float32(2) * t: the ufuncs Graph IR has become its ops,
        # so code written with numpy's functions traces; the others are refused by name.
        op = _UFUNCS.get(ufunc.__name__) if method == "__call__" and not kwargs else None
        if op is None:
            _unsupported(f"numpy's {ufunc.__name__}" + (f".{method}" if method != "__call__" else "") +
                         (f" with {', '.join(kwargs)}=" if kwargs else ""))
        return op(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        name = func.__name__
        if name == "clip" and kwargs.get("out") is None and args and args[0] is self:
            def bound(i, *names):  # positional, or by keyword; numpy's "no value" default is no bound
                v = args[i] if len(args) > i else next((kwargs[n] for n in names if n in kwargs), None)
                return None if type(v).__name__ == "_NoValueType" else v
            return clamp(self, bound(1, "a_min", "min"), bound(2, "a_max", "max"))
        if name == "where" and len(args) == 3 and not kwargs:
            return where(*args)
        if name in ("take", "take_along_axis") and len(args) >= 2 and not builtins.any(k != "axis" for k in kwargs):
            axis = args[2] if len(args) > 2 else kwargs.get("axis")
            return (take if name == "take" else take_along_axis)(args[0], args[1], axis)
        if name == "concatenate" and args and not builtins.any(k != "axis" for k in kwargs):
            return concatenate(args[0], *args[1:], **kwargs)
        _unsupported(f"np.{name}", f"use ts.{name}" if name in __all__ else None)

    # -- what Graph IR cannot express: a clear error, never a wrong graph ------------------------------------
    def __eq__(self, other): return equal(self, other)  # type: ignore[override]
    def __ne__(self, other): return not_equal(self, other)  # type: ignore[override]
    def __lt__(self, other): return less(self, other)
    def __le__(self, other): return less_equal(self, other)
    def __gt__(self, other): return greater(self, other)
    def __ge__(self, other): return greater_equal(self, other)
    def __and__(self, other): return logical_and(self, other)
    def __rand__(self, other): return logical_and(other, self)
    def __or__(self, other): return logical_or(self, other)
    def __ror__(self, other): return logical_or(other, self)
    def __invert__(self): return logical_not(self)
    def __setitem__(self, index, value): _unsupported("item assignment")
    def __delitem__(self, index): _unsupported("item deletion")
    def __bool__(self): _unsupported("bool() (if, while, and, or, not)", _DATA_DEPENDENT)
    def __len__(self): _unsupported("len()", "use .shape[0]")
    def __iter__(self): _unsupported("iteration")
    def __contains__(self, item): _unsupported("'in'")
    def __float__(self): _unsupported("float()", _DATA_DEPENDENT)
    def __int__(self): _unsupported("int()", _DATA_DEPENDENT)
    def __index__(self): _unsupported("use as an index", _DATA_DEPENDENT)
    def __complex__(self): _unsupported("complex()")
    def __array__(self, *args, **kwargs): _unsupported("conversion to a numpy array", _DATA_DEPENDENT)
    __hash__ = object.__hash__  # __eq__ is taken; tensors still go in sets and dicts by identity


Operand = Union[Tensor, int, float]
_DATA_DEPENDENT = "a traced tensor has no values: the function is traced once per signature, not run per call"


def _unsupported(what: str, hint: Optional[str] = None):
    raise TraceError("E940", f"{what} on a traced tensor: Graph IR has no such operation" +
                             (f" ({hint})" if hint else ""))


def _no_operator(symbol: str):
    def refuse(self, *other):
        _unsupported(f"operator '{symbol}'")
    return refuse


for _name, _symbol in (("floordiv", "//"), ("mod", "%"), ("divmod", "divmod"),
                       ("xor", "^"), ("lshift", "<<"), ("rshift", ">>")):
    setattr(Tensor, f"__{_name}__", _no_operator(_symbol))
    setattr(Tensor, f"__r{_name}__", _no_operator(_symbol))
for _name, _symbol in (("trunc", "math.trunc()"),
                       ("floor", "math.floor()"), ("ceil", "math.ceil()"), ("reversed", "reversed()")):
    setattr(Tensor, f"__{_name}__", _no_operator(_symbol))


# -- operands ------------------------------------------------------------------------------------------------

def _check_tensor(x: Any, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        # Most often an array the function captured from its scope: Graph IR has no array constants.
        kind = "an array it did not receive as an argument (pass it as one)" \
            if hasattr(x, "__dlpack__") or hasattr(x, "__array__") else f"a {type(x).__name__}"
        raise TraceError("E947", f"ts.{op} takes the traced tensors of a function compiled by ts.jit and "
                                 f"Python numbers, not {kind}")
    if not x._trace.open:
        raise TraceError("E944", f"ts.{op} of a tensor whose trace has ended (kept from an earlier trace?)")
    return x


def _value(x: Any, op: str) -> "_core.Value":
    """x's graph value."""
    return _check_tensor(x, op)._value


def _same_trace(op: str, *tensors: Tensor) -> _Trace:
    trace = tensors[0]._trace
    for t in tensors[1:]:
        if t._trace is not trace:
            raise TraceError("E944", f"ts.{op} mixes tensors of two different traces (a tensor kept from "
                                     "another traced function?)")
    return trace


def _values(op: str, *xs: Any):
    """The trace and graph values of several operands; Python numbers become rank-0 constants of the first
    tensor operand's dtype."""
    for x in xs:
        if not isinstance(x, (Tensor, numbers.Real)):
            _check_tensor(x, op)  # E947, naming what it is
    tensors = [_check_tensor(x, op) for x in xs if isinstance(x, Tensor)]
    if not tensors:
        raise TraceError("E947", f"ts.{op} takes at least one traced tensor, not only Python numbers")
    trace = _same_trace(op, *tensors)
    return trace, [_value(x, op) if isinstance(x, Tensor) else trace.builder.constant(float(x), tensors[0].dtype, [])
                   for x in xs]


def _axis(axis: Any, op: str) -> int:
    try:
        return operator.index(axis)
    except TypeError:
        raise TraceError("E948", f"ts.{op}: axis must be an int, got {axis!r}") from None


def _axes(x: Tensor, axis: Axis, op: str) -> list:
    if axis is None:
        return list(range(x.ndim))
    if isinstance(axis, (tuple, list)):
        return [_axis(a, op) for a in axis]
    return [_axis(axis, op)]


def _number(value: Any, op: str, name: str) -> float:
    if not isinstance(value, numbers.Real):
        raise TraceError("E948", f"ts.{op}: {name} must be a number, got {value!r}")
    return float(value)


def _unary(fn: str, x: Tensor, op: Optional[str] = None) -> Tensor:
    v = _value(x, op or fn)
    return Tensor(x._trace, x._trace.builder.unary(fn, v))


def _binary(fn: str, a: Operand, b: Operand, op: str) -> Tensor:
    trace, (va, vb) = _values(op, a, b)
    return Tensor(trace, trace.builder.binary(fn, va, vb))


# -- elementwise ops (result: the operand's shape and dtype) -------------------------------------------------

def neg(x: Tensor) -> Tensor:
    """-x (tessera.neg)."""
    return _unary("neg", x)


def abs(x: Tensor) -> Tensor:
    """|x| (tessera.abs)."""
    return _unary("abs", x)


def exp(x: Tensor) -> Tensor:
    """e**x (tessera.exp)."""
    return _unary("exp", x)


def log(x: Tensor) -> Tensor:
    """The natural logarithm (tessera.log)."""
    return _unary("log", x)


def sqrt(x: Tensor) -> Tensor:
    """The square root (tessera.sqrt)."""
    return _unary("sqrt", x)


def rsqrt(x: Tensor) -> Tensor:
    """1 / sqrt(x) (tessera.rsqrt)."""
    return _unary("rsqrt", x)


def tanh(x: Tensor) -> Tensor:
    """The hyperbolic tangent (tessera.tanh)."""
    return _unary("tanh", x)


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)) (tessera.sigmoid)."""
    return _unary("sigmoid", x)


def relu(x: Tensor) -> Tensor:
    """max(x, 0); relu(NaN) is NaN (tessera.relu)."""
    return _unary("relu", x)


def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x) (tessera.silu)."""
    return _unary("silu", x)


def sin(x: Tensor) -> Tensor:
    """The sine, x in radians (tessera.sin)."""
    return _unary("sin", x)


def cos(x: Tensor) -> Tensor:
    """The cosine, x in radians (tessera.cos)."""
    return _unary("cos", x)


def exp2(x: Tensor) -> Tensor:
    """2**x (tessera.exp2)."""
    return _unary("exp2", x)


def log2(x: Tensor) -> Tensor:
    """The base-2 logarithm (tessera.log2)."""
    return _unary("log2", x)


def erf(x: Tensor) -> Tensor:
    """The error function (tessera.erf; the Metal lane has none, E502)."""
    return _unary("erf", x)


def floor(x: Tensor) -> Tensor:
    """The largest integer <= x, in x's dtype (tessera.floor)."""
    return _unary("floor", x)


def ceil(x: Tensor) -> Tensor:
    """The smallest integer >= x, in x's dtype (tessera.ceil)."""
    return _unary("ceil", x)


def round(x: Tensor) -> Tensor:
    """x rounded to the nearest integer, halves to even, as np.round and np.rint (tessera.round)."""
    return _unary("round", x)


def clamp(x: Tensor, min: Optional[float] = None, max: Optional[float] = None) -> Tensor:
    """min(max(x, min), max), as np.clip: NaN stays NaN, and min > max gives max (tessera.clamp)."""
    if min is None and max is None:
        raise TraceError("E948", "ts.clamp needs min, max or both")
    for name, bound in (("min", min), ("max", max)):
        if bound is not None and not isinstance(bound, numbers.Real):
            raise TraceError("E948", f"ts.clamp: {name} must be a number (a tensor bound is ts.maximum/minimum)")
    v = _value(x, "clamp")
    lo = -float("inf") if min is None else float(min)
    hi = float("inf") if max is None else float(max)
    return Tensor(x._trace, x._trace.builder.clamp(v, lo, hi))


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU: exact, x * Phi(x) with erf (approximate="none"), or its tanh form (approximate="tanh")."""
    if approximate not in ("none", "tanh"):
        raise TraceError("E948", f"ts.gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _unary("gelu" if approximate == "none" else "gelu_tanh", x, "gelu")


# -- binary ops: numpy broadcasting, equal dtypes (no implicit promotion: E209) ------------------------------

def add(a: Operand, b: Operand) -> Tensor:
    """a + b with numpy broadcasting; a Python number becomes a constant of the other operand's dtype."""
    return _binary("add", a, b, "add")


def sub(a: Operand, b: Operand) -> Tensor:
    """a - b with numpy broadcasting."""
    return _binary("sub", a, b, "sub")


def mul(a: Operand, b: Operand) -> Tensor:
    """a * b with numpy broadcasting."""
    return _binary("mul", a, b, "mul")


def div(a: Operand, b: Operand) -> Tensor:
    """a / b with numpy broadcasting (IEEE: x/0 is inf or NaN)."""
    return _binary("div", a, b, "div")


def maximum(a: Operand, b: Operand) -> Tensor:
    """The elementwise maximum with numpy broadcasting; NaN propagates (as np.maximum)."""
    return _binary("max", a, b, "maximum")


def minimum(a: Operand, b: Operand) -> Tensor:
    """The elementwise minimum with numpy broadcasting; NaN propagates (as np.minimum)."""
    return _binary("min", a, b, "minimum")


def pow(a: Operand, b: Operand) -> Tensor:
    """a ** b with numpy broadcasting, as std::pow (pow(-8, 1/3) is NaN, pow(x, 0) is 1)."""
    return _binary("pow", a, b, "pow")


def cast(x: Tensor, dtype: DType) -> Tensor:
    """x converted to another element type, rounded to nearest even (tessera.cast)."""
    v = _value(x, "cast")
    return Tensor(x._trace, x._trace.builder.cast(v, _dtype(dtype, "ts.cast")))


def astype(x: Tensor, dtype: DType) -> Tensor:
    """x converted to another element type (the same as ts.cast and x.astype)."""
    return cast(x, dtype)


# -- comparisons, logic, where, iota ---------------------------------------------------------------------------

def equal(a: Operand, b: Operand) -> Tensor:
    """a == b elementwise, a bool tensor (numpy broadcasting; NaN equals nothing)."""
    return _binary("eq", a, b, "equal")


def not_equal(a: Operand, b: Operand) -> Tensor:
    """a != b elementwise, a bool tensor (True where either is NaN)."""
    return _binary("ne", a, b, "not_equal")


def less(a: Operand, b: Operand) -> Tensor:
    """a < b elementwise, a bool tensor."""
    return _binary("lt", a, b, "less")


def less_equal(a: Operand, b: Operand) -> Tensor:
    """a <= b elementwise, a bool tensor."""
    return _binary("le", a, b, "less_equal")


def greater(a: Operand, b: Operand) -> Tensor:
    """a > b elementwise, a bool tensor."""
    return _binary("gt", a, b, "greater")


def greater_equal(a: Operand, b: Operand) -> Tensor:
    """a >= b elementwise, a bool tensor."""
    return _binary("ge", a, b, "greater_equal")


def logical_and(a: Operand, b: Operand) -> Tensor:
    """a and b elementwise, on bool tensors (a & b)."""
    return _binary("and", a, b, "logical_and")


def logical_or(a: Operand, b: Operand) -> Tensor:
    """a or b elementwise, on bool tensors (a | b)."""
    return _binary("or", a, b, "logical_or")


def logical_not(x: Tensor) -> Tensor:
    """not x elementwise, on a bool tensor (~x)."""
    return _unary("not", x, "logical_not")


def where(condition: Tensor, a: Operand, b: Operand) -> Tensor:
    """a where condition (a bool tensor) holds, else b, as np.where: the three broadcast; a Python number
    takes the other value's dtype."""
    trace, (va, vb) = _values("where", a, b)
    _same_trace("where", _check_tensor(condition, "where"), *[x for x in (a, b) if isinstance(x, Tensor)])
    return Tensor(trace, trace.builder.where(_value(condition, "where"), va, vb))


def _active_trace(op: str) -> _Trace:
    trace = getattr(_Trace._active, "trace", None)
    if trace is None or not trace.open:
        raise TraceError("E949", f"ts.{op} is used inside a function being traced by ts.jit (it makes a "
                                 "tensor of that function's graph)")
    return trace


def iota(shape: Sequence[int], axis: int = 0, dtype: DType = "i64") -> Tensor:
    """A tensor of ``shape`` whose elements count along ``axis`` (element [i, j] of iota((m, n), 1) is j),
    computed where it is used, never read from memory: ``iota((s, 1), 0) >= iota((s,), 0)`` is a causal
    mask."""
    trace = _active_trace("iota")
    try:
        dims = [operator.index(d) for d in shape]
    except TypeError:
        raise TraceError("E948", f"ts.iota: shape must be a sequence of ints, got {shape!r}") from None
    return Tensor(trace, trace.builder.iota(_dtype(dtype, "ts.iota"), dims, _axis(axis, "iota")))


def arange(n: int, dtype: DType = "i64") -> Tensor:
    """0, 1, ..., n - 1 (np.arange with a stop only)."""
    return iota((operator.index(n),), 0, dtype)


# -- views: no copy where a pointwise kernel reads them -------------------------------------------------------

def _ints(values: Any, op: str, what: str) -> list:
    try:
        return [operator.index(v) for v in values]
    except TypeError:
        raise TraceError("E948", f"ts.{op}: {what} must be a sequence of ints, got {values!r}") from None


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    """x's elements (in C order) in another shape; one extent may be -1, as in numpy."""
    _check_tensor(x, "reshape")
    dims = _ints((shape,) if isinstance(shape, numbers.Integral) else shape, "reshape", "shape")
    if dims.count(-1) > 1:
        raise TraceError("E948", f"ts.reshape: at most one extent may be -1, got {tuple(dims)}")
    if -1 in dims:
        known = 1
        for d in dims:
            known *= d if d != -1 else 1
        total = 1
        for d in x.shape:
            total *= d
        dims[dims.index(-1)] = total // known if known and total % known == 0 else -1
    return Tensor(x._trace, x._trace.builder.reshape(_value(x, "reshape"), dims))


def transpose(x: Tensor, axes: Optional[Sequence[int]] = None) -> Tensor:
    """x with its axes permuted: result axis i is x's axis axes[i] (reversed when None), as np.transpose."""
    _check_tensor(x, "transpose")
    perm = list(range(x.ndim))[::-1] if axes is None else _ints(axes, "transpose", "axes")
    return Tensor(x._trace, x._trace.builder.transpose(_value(x, "transpose"), perm))


def broadcast_to(x: Tensor, shape: Sequence[int]) -> Tensor:
    """x repeated along new or size-1 axes to ``shape`` (numpy rules)."""
    _check_tensor(x, "broadcast_to")
    return Tensor(x._trace, x._trace.builder.broadcast_to(_value(x, "broadcast_to"),
                                                          _ints(shape, "broadcast_to", "shape")))


def split(x: Tensor, indices_or_sections: Any, axis: int = 0) -> list:
    """x cut along ``axis``, as np.split: into that many equal parts (an int), or at those indices (a list)."""
    _check_tensor(x, "split")
    axis = _axis(axis, "split")
    n = x.shape[axis if axis >= 0 else axis + x.ndim] if -x.ndim <= axis < x.ndim else 0
    if isinstance(indices_or_sections, numbers.Integral):
        k = operator.index(indices_or_sections)
        if k < 1 or n % k:
            raise TraceError("E948", f"ts.split: {n} does not split into {k} equal parts")
        sizes = [n // k] * k
    else:
        # numpy's reading of the indices: negative ones count from the end, then clipped to [0, n]
        cuts = [builtins.min(builtins.max(c + n if c < 0 else c, 0), n)
                for c in _ints(indices_or_sections, "split", "indices")]
        if cuts != sorted(cuts):
            raise TraceError("E948", f"ts.split: indices must not decrease, got {indices_or_sections!r} "
                                     "(numpy would return overlapping parts)")
        edges = [0] + cuts + [n]
        sizes = [builtins.max(b - a, 0) for a, b in zip(edges, edges[1:])]
    parts = x._trace.builder.split(_value(x, "split"), axis, sizes)
    return [Tensor(x._trace, v) for v in parts]


def concatenate(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """The tensors joined along ``axis`` (their other extents equal), as np.concatenate. A fused kernel reads
    each element from the tensor its coordinate falls in: the joined tensor is never stored unless needed."""
    parts = [_check_tensor(t, "concatenate") for t in tensors]
    if not parts:
        raise TraceError("E948", "ts.concatenate needs at least one tensor")
    trace = _same_trace("concatenate", *parts)
    return Tensor(trace, trace.builder.concat([t._value for t in parts], _axis(axis, "concatenate")))


def _index(x: Tensor, index: Any) -> Tensor:
    """x[index] for numpy's basic indexing (ints, slices with a positive step, ``...`` and ``None``), and
    x[indices] for one integer tensor: ts.take(x, indices, axis=0)."""
    if isinstance(index, Tensor) and index.dtype in ("i32", "i64"):
        return take(x, index, 0)
    items = list(index) if isinstance(index, tuple) else [index]
    for i in items:  # identity tests only: == on a tensor would trace a comparison
        if isinstance(i, (bool, Tensor)) or hasattr(i, "__dlpack__") or isinstance(i, (list, tuple)):
            what = f"a {i.dtype} tensor" if isinstance(i, Tensor) else f"a {type(i).__name__}"
            _unsupported(f"indexing with {what}", "basic indexing (ints, slices, ..., None), or one integer tensor")
    if builtins.sum(1 for i in items if i is Ellipsis) > 1:
        _unsupported("an index with more than one '...'")
    used = builtins.sum(1 for i in items if i is not None and i is not Ellipsis)
    if used > x.ndim:
        raise TraceError("E948", f"too many indices ({used}) for a tensor of rank {x.ndim}")
    at = next((k for k, i in enumerate(items) if i is Ellipsis), len(items))  # '...', or the end: the rest
    items[at:at + 1] = [slice(None)] * (x.ndim - used)
    start, limit, stride, shape = [], [], [], []  # the slice, then the result's shape (ints dropped, None added)
    axis = 0
    for item in items:
        if item is None:
            shape.append(1)
            continue
        n = x.shape[axis]
        if isinstance(item, slice):
            if item.step is not None and operator.index(item.step) <= 0:
                _unsupported("a slice with a step <= 0", "views step forward")
            a, b, c = item.indices(n)
            start.append(a)
            limit.append(builtins.max(a, b))
            stride.append(c)
            shape.append(len(range(a, b, c)))
        else:
            try:
                i = operator.index(item)
            except TypeError:
                _unsupported(f"indexing with a {type(item).__name__}", "basic indexing: ints, slices, ..., None")
            if not -n <= i < n:
                raise TraceError("E948", f"index {i} is out of range for axis {axis} of extent {n}")
            i = i + n if i < 0 else i
            start.append(i)
            limit.append(i + 1)
            stride.append(1)
        axis += 1
    v = _value(x, "index")
    if start != [0] * x.ndim or limit != list(x.shape) or stride != [1] * x.ndim:
        v = x._trace.builder.slice(v, start, limit, stride)
    if tuple(shape) != tuple(v.shape):
        v = x._trace.builder.reshape(v, shape)
    return Tensor(x._trace, v)


def _indexed(along: bool, x: Tensor, indices: Tensor, axis: Optional[int], op: str) -> Tensor:
    x = _check_tensor(x, op)
    trace = _same_trace(op, x, _check_tensor(indices, op))
    if indices.dtype not in ("i32", "i64"):
        raise TraceError("E948", f"ts.{op}: indices must be int32 or int64, got {indices.dtype}")
    if axis is None:  # numpy: x flattened
        x, axis = reshape(x, (-1,)), 0
    elif isinstance(axis, builtins.bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"{op}: axis must be an int or None, got {axis!r}")
    build = trace.builder.take_along if along else trace.builder.gather
    return Tensor(trace, build(x._value, indices._value, int(axis)))


def take(x: Tensor, indices: Tensor, axis: Optional[int] = None) -> Tensor:
    """The elements of x at ``indices`` along ``axis``, as np.take (an embedding lookup is
    ``take(table, ids, axis=0)``); None: in the flattened array. An index outside [-n, n) fails the call
    with E615 (a run that gathers waits for its kernels to check them)."""
    return _indexed(False, x, indices, axis, "take")


def take_along_axis(x: Tensor, indices: Tensor, axis: Optional[int]) -> Tensor:
    """x at ``indices`` along ``axis``, the other axes matched (and broadcast), as np.take_along_axis: a
    label's logit per row is ``take_along_axis(logits, labels[:, None], axis=1)``. Indices as ts.take."""
    return _indexed(True, x, indices, axis, "take_along_axis")


# -- row ops -------------------------------------------------------------------------------------------------

def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) over one axis (negative: from the end)."""
    v = _value(x, "softmax")
    return Tensor(x._trace, x._trace.builder.softmax(v, _axis(axis, "softmax")))


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    """x - max - log(sum(exp(x - max))) over one axis."""
    v = _value(x, "log_softmax")
    return Tensor(x._trace, x._trace.builder.log_softmax(v, _axis(axis, "log_softmax")))


def layer_norm(x: Tensor, w: Tensor, b: Tensor, eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) * w + b over the last axis; w and b have the last axis' length."""
    vx, vw, vb = _value(x, "layer_norm"), _value(w, "layer_norm"), _value(b, "layer_norm")
    trace = _same_trace("layer_norm", x, w, b)
    return Tensor(trace, trace.builder.layer_norm(vx, vw, vb, _number(eps, "layer_norm", "eps")))


def rms_norm(x: Tensor, w: Tensor, eps: float = 1e-6) -> Tensor:
    """x / sqrt(mean(x*x) + eps) * w over the last axis; w has the last axis' length."""
    vx, vw = _value(x, "rms_norm"), _value(w, "rms_norm")
    trace = _same_trace("rms_norm", x, w)
    return Tensor(trace, trace.builder.rms_norm(vx, vw, _number(eps, "rms_norm", "eps")))


# -- matmul --------------------------------------------------------------------------------------------------

def matmul(a: Tensor, b: Tensor, transpose_a: bool = False, transpose_b: bool = False,
           out_dtype: Optional[DType] = None) -> Tensor:
    """a @ b, batched over the leading axes (broadcast), with f32 accumulation.

    ``a.T @ b`` / ``a @ b.mT`` read the operand in the other layout, as the transpose flags do. The result
    has ``out_dtype`` (default: a's dtype). Operands are f32, f16 or bf16 (E214).
    """
    _check_tensor(a, "matmul")
    _check_tensor(b, "matmul")
    trace = _same_trace("matmul", a, b)
    out = _dtype(out_dtype, "ts.matmul out_dtype") if out_dtype is not None else a.dtype
    return Tensor(trace, trace.builder.matmul(a._value, b._value, out, bool(transpose_a), bool(transpose_b)))


# -- attention -----------------------------------------------------------------------------------------------

def attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False, scale: Optional[float] = None,
              return_lse: bool = False, mask: Optional[Tensor] = None) -> Any:
    """softmax(scale * q @ k.mT [causal mask] [+ mask]) @ v per (batch, head), without the scores in memory.

    q is [B, H, Sq, D], k and v [B, Hkv, Sk, D] with H a multiple of Hkv (query head h reads kv head
    h // (H // Hkv)). ``causal``: key j is visible to query i when j <= i + Sk - Sq (aligned to the end).
    ``scale`` defaults to 1/sqrt(D). ``mask`` broadcasts to [B, H, Sq, Sk]: a bool tensor (False hides a key,
    as torch's ``attn_mask``) or a float one of q's dtype or f32 added to the scaled scores (no gradient
    through it yet). A row that sees no key gives 0 (and log-sum-exp -inf). With
    ``return_lse``, returns (o, lse), lse [B, H, Sq] the natural-log log-sum-exp of each row's scaled scores
    (f32; f64 for f64 inputs).
    """
    operands = (q, k, v) if mask is None else (q, k, v, mask)
    for t in operands:
        _check_tensor(t, "attention")
    trace = _same_trace("attention", *operands)
    s = float("nan") if scale is None else _number(scale, "attention", "scale")
    out = trace.builder.attention(q._value, k._value, v._value, builtins.bool(causal), s, builtins.bool(return_lse),
                                  None if mask is None else mask._value)
    return (Tensor(trace, out[0]), Tensor(trace, out[1])) if return_lse else Tensor(trace, out[0])


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Optional[Tensor] = None,
                                 is_causal: bool = False, scale: Optional[float] = None,
                                 enable_gqa: bool = False) -> Tensor:
    """torch.nn.functional.scaled_dot_product_attention's spelling of :func:`attention` (``attn_mask`` as
    torch's: bool, True takes part, or a float bias; no dropout; grouped-query heads need
    ``enable_gqa=True``, as in torch)."""
    if attn_mask is not None and is_causal:
        raise TraceError("E217", "scaled_dot_product_attention: torch refuses attn_mask with is_causal; "
                                 "ts.attention(causal=True, mask=...) takes both")
    for t in (query, key):
        _check_tensor(t, "scaled_dot_product_attention")
    if query.ndim == 4 and key.ndim == 4 and query.shape[1] != key.shape[1] and not enable_gqa:
        raise TraceError("E217", f"scaled_dot_product_attention: q has {query.shape[1]} heads and k "
                                 f"{key.shape[1]}; pass enable_gqa=True for grouped-query attention")
    if is_causal and query.ndim == 4 and key.ndim == 4 and query.shape[2] != key.shape[2]:
        # torch's is_causal masks from the top left; ts.attention aligns the diagonal to the end
        raise TraceError("E217", f"scaled_dot_product_attention: is_causal with {query.shape[2]} queries and "
                                 f"{key.shape[2]} keys: torch's mask starts at the top left, Tessera's causal "
                                 "mask is aligned to the end; call ts.attention(causal=True) for that")
    return attention(query, key, value, causal=is_causal, scale=scale, mask=attn_mask)


# -- reductions ----------------------------------------------------------------------------------------------

def _reduce(kind: str, x: Tensor, axis: Axis, keepdims: bool) -> Tensor:
    v = _value(x, kind)
    return Tensor(x._trace, x._trace.builder.reduce(v, kind, _axes(x, axis, kind), builtins.bool(keepdims)))


def sum(x: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """The sum over ``axis`` (an int, a tuple, or None for every axis), as np.sum; 0 over an empty extent."""
    return _reduce("sum", x, axis, keepdims)


def mean(x: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """The mean over ``axis``, as np.mean (an empty extent is compile error E206)."""
    return _reduce("mean", x, axis, keepdims)


def max(x: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """The maximum over ``axis``, as np.max: NaN propagates (an empty extent is E206)."""
    return _reduce("max", x, axis, keepdims)


def min(x: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """The minimum over ``axis``, as np.min: NaN propagates (an empty extent is E206)."""
    return _reduce("min", x, axis, keepdims)


def prod(x: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """The product over ``axis``, as np.prod; 1 over an empty extent."""
    return _reduce("prod", x, axis, keepdims)


def _arg_reduce(is_max: bool, x: Tensor, axis: Optional[int], keepdims: bool) -> Tensor:
    name = "argmax" if is_max else "argmin"
    v = _value(x, name)
    if axis is None:  # numpy: the position in the flattened array
        flat = reshape(x, (-1,))
        r = Tensor(x._trace, x._trace.builder.arg_reduce(_value(flat, name), is_max, 0, False))
        return reshape(r, (1,) * len(x.shape)) if keepdims else r
    if isinstance(axis, builtins.bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"{name}: axis must be an int or None, got {axis!r}")
    return Tensor(x._trace, x._trace.builder.arg_reduce(v, is_max, int(axis), builtins.bool(keepdims)))


def argmax(x: Tensor, axis: Optional[int] = None, keepdims: bool = False) -> Tensor:
    """The position (int64) of the largest element along ``axis``, as np.argmax: the first on ties, the first
    NaN if there is one; None: in the flattened array. An empty axis is compile error E218."""
    return _arg_reduce(True, x, axis, keepdims)


def argmin(x: Tensor, axis: Optional[int] = None, keepdims: bool = False) -> Tensor:
    """The position (int64) of the smallest element along ``axis``, as np.argmin (ties and NaN as argmax)."""
    return _arg_reduce(False, x, axis, keepdims)


# numpy ufuncs on traced tensors (np.exp(t), np.float32(2) * t) become these ops.
_UFUNCS = {"add": add, "subtract": sub, "multiply": mul, "divide": div, "true_divide": div, "power": pow,
           "maximum": maximum, "minimum": minimum, "negative": neg, "absolute": abs, "exp": exp, "log": log,
           "sqrt": sqrt, "tanh": tanh, "matmul": matmul, "positive": lambda x: x, "sin": sin, "cos": cos,
           "exp2": exp2, "log2": log2, "floor": floor, "ceil": ceil, "rint": round,
           "equal": equal, "not_equal": not_equal, "less": less, "less_equal": less_equal, "greater": greater,
           "greater_equal": greater_equal, "logical_and": logical_and, "logical_or": logical_or,
           "logical_not": logical_not}
