"""Tracing: the proxy tensor a jitted function sees, and one function per
Graph IR op. Every op goes through tessera._core.GraphBuilder, which checks
types and shapes in C++ (the rules live in one place, the compiler's); this
file only spells the ops the Python way."""
from __future__ import annotations

import numbers
from typing import Optional, Sequence, Tuple, Union

from . import _core
from .errors import TraceError

_DTYPE_NAMES = {"f16": "f16", "float16": "f16", "half": "f16", "bf16": "bf16", "bfloat16": "bf16",
                "f32": "f32", "float32": "f32", "float": "f32", "f64": "f64", "float64": "f64", "double": "f64"}

float16, bfloat16, float32, float64 = "f16", "bf16", "f32", "f64"

Scalar = Union[int, float]


def dtype_name(dtype) -> str:
    """Tessera's name ("f32"...) for a dtype spelled any common way: "float32", np.float32, torch.float32."""
    name = getattr(dtype, "__name__", None) or str(dtype)
    name = name.rsplit(".", 1)[-1]
    try:
        return _DTYPE_NAMES[name]
    except KeyError:
        raise TraceError("E943", f"unknown element type {dtype!r}: Tessera computes in f16, bf16, f32 and f64") \
            from None


class Tensor:
    """A tensor of a function being traced by ts.jit: a value of the Graph IR being built.

    It has a ``shape`` and a ``dtype`` but no data: operations on it add ops to the graph.
    """

    __slots__ = ("_graph", "_value", "_transposed")

    def __init__(self, graph: "_core.GraphBuilder", value: "_core.Value", transposed: bool = False):
        self._graph = graph
        self._value = value
        self._transposed = transposed

    # -- what it is --------------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        s = self._value.shape
        return s[:-2] + (s[-1], s[-2]) if self._transposed else s

    @property
    def dtype(self) -> str:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return len(self._value.shape)

    @property
    def T(self) -> "Tensor":
        """The transpose of the last two axes; Graph IR has it only as a matmul operand's flag."""
        if self.ndim < 2:
            raise TraceError("E941", f".T needs rank 2 or more, the tensor is {self.shape}")
        return Tensor(self._graph, self._value, not self._transposed)

    def __repr__(self) -> str:
        return f"tessera.Tensor(traced %{self._value.name}: {self.dtype}{list(self.shape)})"

    # -- arithmetic ----------------------------------------------------------------------------
    def __add__(self, other): return add(self, other)
    def __radd__(self, other): return add(other, self)
    def __sub__(self, other): return sub(self, other)
    def __rsub__(self, other): return sub(other, self)
    def __mul__(self, other): return mul(self, other)
    def __rmul__(self, other): return mul(other, self)
    def __truediv__(self, other): return div(self, other)
    def __rtruediv__(self, other): return div(other, self)
    def __pow__(self, other): return pow(self, other)
    def __rpow__(self, other): return pow(other, self)
    def __matmul__(self, other): return matmul(self, other)
    def __rmatmul__(self, other): return matmul(other, self)
    def __neg__(self): return neg(self)
    def __pos__(self): return self
    def __abs__(self): return abs(self)

    # -- reductions and casts as methods -------------------------------------------------------
    def sum(self, axis=None, keepdims: bool = False) -> "Tensor": return sum(self, axis, keepdims)
    def mean(self, axis=None, keepdims: bool = False) -> "Tensor": return mean(self, axis, keepdims)
    def max(self, axis=None, keepdims: bool = False) -> "Tensor": return max(self, axis, keepdims)
    def min(self, axis=None, keepdims: bool = False) -> "Tensor": return min(self, axis, keepdims)
    def prod(self, axis=None, keepdims: bool = False) -> "Tensor": return prod(self, axis, keepdims)
    def astype(self, dtype) -> "Tensor": return cast(self, dtype)

    # -- what Graph IR cannot express: a clear error, not a wrong graph -------------------------
    def _unsupported(self, what: str):
        raise TraceError("E940", f"{what} on a traced tensor: Graph IR has no such op "
                                 "(tracing records tensor ops; data-dependent Python cannot be traced)")

    def __lt__(self, other): self._unsupported("comparison '<'")
    def __le__(self, other): self._unsupported("comparison '<='")
    def __gt__(self, other): self._unsupported("comparison '>'")
    def __ge__(self, other): self._unsupported("comparison '>='")
    def __eq__(self, other): self._unsupported("comparison '=='")
    def __ne__(self, other): self._unsupported("comparison '!='")
    def __getitem__(self, index): self._unsupported("indexing or slicing")
    def __setitem__(self, index, value): self._unsupported("item assignment")
    def __bool__(self): self._unsupported("bool()")
    def __len__(self): self._unsupported("len()")
    def __iter__(self): self._unsupported("iteration")
    def __array__(self, *args, **kwargs): self._unsupported("conversion to a numpy array")
    __hash__ = object.__hash__


def _value(x: Tensor, op: str) -> "_core.Value":
    if x._transposed:
        raise TraceError("E941", f"{op} of a .T tensor: Graph IR has no standalone transpose "
                                 "(.T works as an operand of matmul / @)")
    return x._value


def _operands(a, b, op: str):
    """Both operands as graph values of one graph; a Python number becomes a rank-0 constant."""
    tensor = a if isinstance(a, Tensor) else b
    if not isinstance(tensor, Tensor):
        raise TraceError("E940", f"{op} needs a traced tensor operand, got {type(a).__name__} and "
                                 f"{type(b).__name__}")
    g = tensor._graph

    def lift(x):
        if isinstance(x, Tensor):
            if x._graph is not g:
                raise TraceError("E944", f"{op} mixes tensors of two different traces (a tensor kept "
                                         "from another jitted call?)")
            return _value(x, op)
        if isinstance(x, numbers.Real):
            return g.constant(float(x), tensor.dtype, [])
        raise TraceError("E940", f"{op} takes traced tensors and Python numbers, not {type(x).__name__}")

    return g, lift(a), lift(b)


def _unary(fn: str):
    def apply(x: Tensor) -> Tensor:
        return Tensor(x._graph, x._graph.unary(fn, _value(x, fn)))
    apply.__name__ = fn
    apply.__doc__ = f"Elementwise {fn} (Graph IR tessera.{fn})."
    return apply


def _binary(fn: str, name: str):
    def apply(a, b) -> Tensor:
        g, va, vb = _operands(a, b, name)
        return Tensor(g, g.binary(fn, va, vb))
    apply.__name__ = name
    apply.__doc__ = f"Elementwise {name} with numpy broadcasting (Graph IR tessera.{fn}); numbers become constants."
    return apply


neg, abs, exp, log, sqrt, rsqrt, tanh, sigmoid, relu, silu = (
    _unary(f) for f in ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "silu"))
add, sub, mul, div, maximum, minimum, pow = (
    _binary(f, n) for f, n in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("div", "div"),
                               ("max", "maximum"), ("min", "minimum"), ("pow", "pow")))


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU, exact (erf) or with approximate="tanh"."""
    if approximate not in ("none", "tanh"):
        raise TraceError("E943", f"gelu approximate must be 'none' or 'tanh', got {approximate!r}")
    return Tensor(x._graph, x._graph.unary("gelu" if approximate == "none" else "gelu_tanh", _value(x, "gelu")))


def cast(x: Tensor, dtype) -> Tensor:
    """The tensor converted to another element type (f16, bf16, f32, f64)."""
    return Tensor(x._graph, x._graph.cast(_value(x, "cast"), dtype_name(dtype)))


astype = cast


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """Softmax over one axis."""
    return Tensor(x._graph, x._graph.softmax(_value(x, "softmax"), axis))


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    """Log-softmax over one axis."""
    return Tensor(x._graph, x._graph.log_softmax(_value(x, "log_softmax"), axis))


def layer_norm(x: Tensor, w: Tensor, b: Tensor, eps: float = 1e-5) -> Tensor:
    """Layer norm over the last axis with weight w and bias b (both of the last axis' length)."""
    g, vw, vb = _operands(w, b, "layer_norm")
    return Tensor(g, g.layer_norm(_value(x, "layer_norm"), vw, vb, float(eps)))


def rms_norm(x: Tensor, w: Tensor, eps: float = 1e-6) -> Tensor:
    """RMS norm over the last axis with weight w."""
    return Tensor(x._graph, x._graph.rms_norm(_value(x, "rms_norm"), _value(w, "rms_norm"), float(eps)))


def matmul(a: Tensor, b: Tensor, transpose_a: bool = False, transpose_b: bool = False,
           out_dtype=None) -> Tensor:
    """a @ b, batched over leading axes (broadcast); .T operands become transpose flags; f32 accumulation."""
    for x in (a, b):
        if not isinstance(x, Tensor):
            raise TraceError("E940", f"matmul takes traced tensors, not {type(x).__name__}")
    if a._graph is not b._graph:
        raise TraceError("E944", "matmul mixes tensors of two different traces")
    out = dtype_name(out_dtype) if out_dtype is not None else a.dtype
    return Tensor(a._graph, a._graph.matmul(a._value, b._value, out, transpose_a != a._transposed,
                                            transpose_b != b._transposed))


def _axes(x: Tensor, axis) -> list:
    if axis is None:
        return list(range(x.ndim))
    if isinstance(axis, numbers.Integral):
        return [int(axis)]
    return [int(a) for a in axis]


def _reduction(kind: str):
    def apply(x: Tensor, axis: Optional[Union[int, Sequence[int]]] = None, keepdims: bool = False) -> Tensor:
        return Tensor(x._graph, x._graph.reduce(_value(x, kind), kind, _axes(x, axis), bool(keepdims)))
    apply.__name__ = kind
    apply.__doc__ = f"The {kind} over `axis` (an int, a tuple, or None for every axis), as numpy's."
    return apply


sum, mean, max, min, prod = (_reduction(k) for k in ("sum", "mean", "max", "min", "prod"))
