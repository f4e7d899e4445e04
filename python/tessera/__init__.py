"""Tessera from Python: trace numpy or PyTorch style code into Graph IR, run checked native kernels on your
arrays without copying them.

    import numpy as np, tessera as ts

    @ts.jit                                   # traced once per (shapes, dtypes, target), then cached
    def block(x, w, g):
        return ts.silu(ts.rms_norm(x, w, eps=1e-6) * g)

    y = block(x, w, g)                        # numpy in, numpy out; torch CUDA tensors run on the GPU
    block.lower("schedule")                   # any layer's text, as `tessera compile --emit` prints it
    print(block.explain(x, w, g))             # kernels, placement, implementation, sha256

docs/python.md is the reference; every error is a tessera.Error with a stable code (docs/errors.md).
"""
from . import _core
from ._jit import CompiledProgram, GradFunction, JitFunction, compile, grad, jit, value_and_grad
from ._trace import (Tensor, abs, add, arange, argmax, argmin, astype, attention, bfloat16, bool_, broadcast_to, cast, ceil, clamp, concatenate, cos, div,
                     equal, erf, exp, exp2, float16, float32, float64, floor, gelu, greater, greater_equal, int32,
                     int64, iota, layer_norm, less, less_equal, log, log2, log_softmax, logical_and, logical_not,
                     logical_or, matmul, max, maximum, mean, min, minimum, mul, neg, not_equal, pow, prod, relu,
                     reshape, rms_norm, round, rsqrt, scaled_dot_product_attention, sigmoid, silu, sin, softmax, split,
                     sqrt, sub, sum, take, take_along_axis, tanh,
                     transpose, where)
from .errors import (ArgumentError, CheckError, Error, ExecutionError, InternalError, ParseError, TraceError,
                     VerifyError)

#: Check every call against the oracle, as `tessera run --check` does (read on each call). Per function:
#: ``ts.jit(check=True)``; per call: ``fn(x, check=True)``. A failure raises CheckError (E880).
check: bool = False

__all__ = [
    "jit", "grad", "value_and_grad", "compile", "JitFunction", "GradFunction", "CompiledProgram", "Tensor",
    "check",
    "Error", "ParseError", "VerifyError", "ExecutionError", "CheckError", "ArgumentError", "TraceError",
    "InternalError",
    "float16", "bfloat16", "float32", "float64", "bool_", "int32", "int64",
    "neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "silu",
    "sin", "cos", "exp2", "log2", "erf", "floor", "ceil", "round", "clamp",
    "add", "sub", "mul", "div", "maximum", "minimum", "pow", "cast", "astype",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_not", "where", "iota", "arange",
    "reshape", "transpose", "broadcast_to", "split", "concatenate", "take", "take_along_axis",
    "softmax", "log_softmax", "layer_norm", "rms_norm", "matmul", "attention", "scaled_dot_product_attention",
    "sum", "mean", "max", "min", "prod", "argmax", "argmin",
]
