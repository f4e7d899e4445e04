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
from ._jit import CompiledProgram, JitFunction, compile, jit
from ._trace import (Tensor, abs, add, astype, bfloat16, cast, ceil, clamp, cos, div, erf, exp, exp2, float16,
                     float32, float64, floor, gelu, layer_norm, log, log2, log_softmax, matmul, max, maximum,
                     mean, min, minimum, mul, neg, pow, prod, relu, rms_norm, round, rsqrt, sigmoid, silu, sin,
                     softmax, sqrt, sub, sum, tanh)
from .errors import (ArgumentError, CheckError, Error, ExecutionError, InternalError, ParseError, TraceError,
                     VerifyError)

#: Check every call against the oracle, as `tessera run --check` does (read on each call). Per function:
#: ``ts.jit(check=True)``; per call: ``fn(x, check=True)``. A failure raises CheckError (E880).
check: bool = False

__all__ = [
    "jit", "compile", "JitFunction", "CompiledProgram", "Tensor", "check",
    "Error", "ParseError", "VerifyError", "ExecutionError", "CheckError", "ArgumentError", "TraceError",
    "InternalError",
    "float16", "bfloat16", "float32", "float64",
    "neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "silu",
    "sin", "cos", "exp2", "log2", "erf", "floor", "ceil", "round", "clamp",
    "add", "sub", "mul", "div", "maximum", "minimum", "pow", "cast", "astype",
    "softmax", "log_softmax", "layer_norm", "rms_norm", "matmul", "sum", "mean", "max", "min", "prod",
]
