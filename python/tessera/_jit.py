"""ts.jit and ts.compile: a Python function (or IR text) compiled once per
signature and called on arrays without copies.

A signature is the arrays' (device, dtype, shape); the first call with a new
one traces the function over proxy tensors into Graph IR, compiles that text
for the arrays' target and keeps it; later calls with the same signature go
straight to the compiled program."""
from __future__ import annotations

import inspect
import os
import re
import sys
from typing import Any, Callable, Dict, Optional, Tuple

from . import _core
from ._trace import Tensor, dtype_name
from .errors import ArgumentError, TraceError

_package = sys.modules[__package__]  # tessera itself: its `check` is read on every call

# DLPack device types: kDLCPU, kDLCUDA, kDLCUDAHost.
_TARGET_OF_DEVICE = {1: "cpu", 2: "cuda", 3: "cpu"}


def _check_default(explicit: Optional[bool], own: bool) -> bool:
    if explicit is not None:
        return explicit
    return own or bool(_package.check)


class _Callable:
    """What ts.jit and ts.compile share: the last program called, its launches and check report."""

    _last: Optional["_core.Program"] = None

    @property
    def last_launches(self) -> list:
        """Each kernel of the last call: name, placement (where it ran), sha256, programs, wall_ns, implementation."""
        return self._last.last_launches if self._last else []

    @property
    def last_check(self) -> Optional[dict]:
        """The oracle's report of the last checked call: ok, lines, first_failure, seconds."""
        return self._last.last_check if self._last else None

    @property
    def last_pointers(self) -> dict:
        """Data pointers of the last call's arrays and results: identical to the caller's (no copies)."""
        return self._last.last_pointers if self._last else {"inputs": [], "outputs": []}

    @staticmethod
    def _explain(program: "_core.Program", launches: list) -> str:
        lines = [f"target {program.target}: {len(program.kernels)} kernel(s)"]
        for k, launch in zip(program.kernels, launches):
            lines.append(f"  kernel @{k['name']}  placement={launch['placement']}  sha256={k['sha256']}  "
                         f"grid={k['grid']}  implementation={k['implementation']}")
        return "\n".join(lines)


class JitFunction(_Callable):
    """A Python function compiled by Tessera; call it on numpy, torch or CuPy arrays."""

    def __init__(self, fn: Callable, target: Optional[str] = None, check: bool = False):
        self.fn = fn
        self.target = target
        self.check = check
        self.__name__ = getattr(fn, "__name__", "jit")
        self.__doc__ = fn.__doc__
        self._func = re.sub(r"\W", "_", self.__name__).strip("_") or "jit"
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = []
        self._names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self._cache: Dict[tuple, Tuple["_core.Program", bool]] = {}
        self._by_text: Dict[Tuple[str, str], "_core.Program"] = {}
        self._info = {"hits": 0, "misses": 0, "traces": 0, "compiles": 0}

    def __call__(self, *arrays, check: Optional[bool] = None):
        # The hot path of a cached call: one key, one lookup, one native call.
        try:
            key = tuple([(a.__dlpack_device__(), a.dtype, a.shape) for a in arrays])
        except AttributeError:  # not an array: _specialize says which argument
            key = None
        entry = self._cache.get(key)
        if entry is None:
            entry = self._specialize(key, arrays)
        else:
            self._info["hits"] += 1
        program, single = entry
        self._last = program
        if check is None:
            check = self.check or _package.check
        outputs = program(*arrays, check=check)
        return outputs[0] if single else outputs

    def _specialize(self, key: tuple, arrays: tuple):
        self._info["misses"] += 1
        for i, a in enumerate(arrays):
            if not hasattr(a, "__dlpack__"):
                raise ArgumentError("E934", f"argument {i} of {self.__name__} is a {type(a).__name__}, not an "
                                            "array (numpy, torch, CuPy: anything with __dlpack__)")
        targets = {_TARGET_OF_DEVICE.get(a.__dlpack_device__()[0]) for a in arrays}
        if None in targets or len(targets) > 1:
            raise ArgumentError("E931", f"the arrays of {self.__name__} are on devices {sorted(map(str, targets))}: "
                                        "Tessera runs each call on one device, the host CPU or a CUDA GPU")
        target = self.target or (targets.pop() if targets else "cpu")
        text, single = self._trace([(dtype_name(a.dtype), tuple(a.shape)) for a in arrays])
        program = self._by_text.get((target, text))
        if program is None:
            program = _core.Program(text, target, "", f"<jit {self.__name__}>")
            self._info["compiles"] += 1
            self._by_text[(target, text)] = program
        self._cache[key] = (program, single)
        return self._cache[key]

    def _trace(self, signature: list) -> Tuple[str, bool]:
        self._info["traces"] += 1
        g = _core.GraphBuilder(self._func)
        names = self._names if len(self._names) == len(signature) else [f"x{i}" for i in range(len(signature))]
        proxies = [Tensor(g, g.input(n, d, list(s))) for n, (d, s) in zip(names, signature)]
        result = self.fn(*proxies)
        single = not isinstance(result, (tuple, list))
        outputs = [result] if single else list(result)
        if not outputs:
            raise TraceError("E942", f"{self.__name__} returned no tensor")
        for i, out in enumerate(outputs):
            if not isinstance(out, Tensor):
                raise TraceError("E942", f"{self.__name__} returned a {type(out).__name__} (result {i}); a jitted "
                                         "function returns traced tensors (one, or a tuple)")
            if out._transposed:
                raise TraceError("E941", f"{self.__name__} returns a .T tensor: Graph IR has no standalone "
                                         "transpose (.T works as an operand of matmul / @)")
            if out._graph is not g:
                raise TraceError("E944", f"{self.__name__} returned a tensor of another trace")
            if any(out._value.name == p._value.name for p in proxies):
                raise TraceError("E946", f"{self.__name__} returns its argument {out._value.name!r} unchanged: "
                                         "there is nothing to compile for it (return the array itself)")
            g.output(out._value)
        return g.text(), single

    def _program_for(self, arrays: tuple) -> "_core.Program":
        if arrays:
            key = tuple((a.__dlpack_device__(), a.dtype, a.shape) for a in arrays)
            return (self._cache.get(key) or self._specialize(key, arrays))[0]
        if self._last is None:
            raise ArgumentError("E945", f"{self.__name__} has not been called yet: pass example arrays")
        return self._last

    def lower(self, layer: str = "graph", *arrays) -> str:
        """The text of one layer (graph, schedule, tile, target, source) for `arrays`' signature, or the last call's."""
        return self._program_for(arrays).emit(layer)

    def explain(self, *arrays) -> str:
        """Runs once on `arrays` and says what ran: each kernel, where it ran, its digest and implementation."""
        program = self._program_for(arrays)
        if arrays:
            program(*arrays)
            self._last = program
        return self._explain(program, program.last_launches)

    def cache_info(self) -> dict:
        """Calls served from the cache (hits), new signatures (misses), traces and compiles so far."""
        return dict(self._info, signatures=len(self._cache), programs=len(self._by_text))


def jit(fn: Optional[Callable] = None, *, target: Optional[str] = None, check: bool = False) -> Any:
    """Compiles a function of tensors with Tessera: ``@ts.jit`` or ``@ts.jit(target="cpu", check=True)``.

    The function is traced once per signature (the arrays' device, dtype and shape) into Graph IR and
    compiled for the arrays' device (or `target`); calls then run the compiled kernels on the arrays
    themselves, without copies. ``check=True`` (or ``ts.check = True``) checks every call against the oracle.
    """
    if fn is None:
        return lambda f: JitFunction(f, target, check)
    return JitFunction(fn, target, check)


class CompiledProgram(_Callable):
    """IR text compiled for one target (ts.compile): call it on arrays like a jitted function."""

    def __init__(self, program: "_core.Program", check: bool):
        self.program = program
        self._last = program
        self.check = check
        self._single = len(program.output_names) == 1

    def __call__(self, *arrays, check: Optional[bool] = None):
        outputs = self.program(*arrays, check=_check_default(check, self.check))
        return outputs[0] if self._single else outputs

    @property
    def input_types(self) -> list:
        return self.program.input_types

    @property
    def output_types(self) -> list:
        return self.program.output_types

    def lower(self, layer: str = "graph") -> str:
        """The text of one layer: graph, schedule, tile, target, or source."""
        return self.program.emit(layer)

    def explain(self, *arrays) -> str:
        """Runs once on `arrays` (if given) and says what ran."""
        if arrays:
            self.program(*arrays)
        return self._explain(self.program, self.program.last_launches)


def compile(source, target: str = "cpu", func: str = "", check: bool = False) -> CompiledProgram:
    """IR text of any layer (or the path of a .tsr file) compiled for `target`; errors carry file:line:col."""
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source
                                           and source.endswith(".tsr") and os.path.isfile(source)):
        path = os.fspath(source)
        with open(path, encoding="utf-8") as f:
            return CompiledProgram(_core.Program(f.read(), target, func, path), check)
    return CompiledProgram(_core.Program(source, target, func, "<input>"), check)
