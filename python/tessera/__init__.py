"""Tessera from Python: trace numpy/PyTorch code into Graph IR, get checked native kernels.

    import numpy as np, tessera as ts

    @ts.jit
    def block(x, w, g):
        return ts.silu(ts.rms_norm(x, w, eps=1e-6) * g)

    y = block(x, w, g)        # numpy in, numpy out; torch CUDA tensors run on the GPU

docs/python.md is the reference.
"""
from . import _core
from ._jit import CompiledProgram, JitFunction, compile, jit
from ._trace import (Tensor, abs, add, astype, bfloat16, cast, div, exp, float16, float32, float64, gelu, layer_norm,
                     log, log_softmax, matmul, max, maximum, mean, min, minimum, mul, neg, pow, prod, relu, rms_norm,
                     rsqrt, sigmoid, silu, softmax, sqrt, sub, sum, tanh)
from .errors import (ArgumentError, CheckError, Error, ExecutionError, ParseError, TraceError, VerifyError)

#: Check every call against the oracle (as `tessera run --check`); per function: ts.jit(check=True).
check = False

__all__ = [
    "jit", "compile", "JitFunction", "CompiledProgram", "Tensor", "check",
    "Error", "ParseError", "VerifyError", "ExecutionError", "CheckError", "ArgumentError", "TraceError",
    "float16", "bfloat16", "float32", "float64",
    "neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "silu",
    "add", "sub", "mul", "div", "maximum", "minimum", "pow", "cast", "astype",
    "softmax", "log_softmax", "layer_norm", "rms_norm", "matmul", "sum", "mean", "max", "min", "prod",
]
