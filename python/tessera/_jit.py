"""ts.jit and ts.compile: a function (or IR text) compiled once per signature, called on arrays, never copied.

A signature is each array's (device, dtype, shape). The first call with a new one traces the function over
proxy tensors into Graph IR, compiles the text for the arrays' target and keeps the program; later calls
with that signature go straight to it, through the native dispatcher (tessera._core.Dispatcher).
"""
from __future__ import annotations

import functools
import inspect
import os
import re
import stat
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union, overload

from . import _core
from ._trace import Tensor, _Trace, _dtype, dtype_name
from .errors import ArgumentError, ParseError, TraceError

__all__ = ["jit", "grad", "value_and_grad", "compile", "JitFunction", "GradFunction", "CompiledProgram"]

_package = sys.modules[__package__]  # `tessera` itself: ts.check is read from it on every call

# DLPack device types: kDLCPU, kDLCUDA, kDLCUDAHost (pinned host memory is host memory).
_TARGET_OF_DEVICE = {1: "cpu", 2: "cuda", 3: "cpu"}

Signature = List[Tuple[str, str, Tuple[int, ...]]]  # per argument: (target, dtype, shape)
Entry = Tuple["_core.Program", bool]  # a signature's program, and whether it returns one array
_MISS = object()  # the dispatcher's answer for a call it does not serve


# -- reading an array's signature ----------------------------------------------------------------------------

def _describe(a: Any, position: int, fn: str) -> Tuple[str, str, Tuple[int, ...]]:
    """(target, Tessera dtype, shape) of an argument, or the error the native call would give too."""
    where = f"argument {position} of {fn}"
    if not hasattr(a, "__dlpack__") or not hasattr(a, "__dlpack_device__"):
        raise ArgumentError("E934", f"{where} is a {type(a).__name__}, not an array (Tessera takes objects "
                                    "with __dlpack__: numpy, torch, CuPy, its own results)")
    device = a.__dlpack_device__()[0]
    target = _TARGET_OF_DEVICE.get(int(device))
    if target is None:
        raise ArgumentError("E931", f"{where} lives on DLPack device type {device}; Tessera runs on the host "
                                    "CPU and on CUDA devices")
    dtype, shape = getattr(a, "dtype", None), getattr(a, "shape", None)
    if dtype is None or shape is None:  # an object with only __dlpack__ (a bf16 result of numpy inputs...)
        dtype, shape = _core.array_signature(a, position)
    name = dtype_name(dtype) if getattr(dtype, "isnative", True) else None  # big-endian numpy: refused
    if name is None:
        raise ArgumentError("E932", f"{where} has elements of {dtype}; Tessera computes in f16, bf16, f32, "
                                    "f64, bool, int32 and int64 (convert it first, e.g. .astype(np.float32))")
    return target, name, tuple(int(d) for d in shape)


# -- what the last call ran ----------------------------------------------------------------------------------

def _ir_type(dtype: str, shape: Sequence[int]) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{dtype}>"


def _explain(program: "_core.Program", name: str) -> str:
    """What ran in the program's last call (before any: what would run), one line a kernel."""
    ins = ", ".join(_ir_type(d, s) for d, s in program.input_types)
    outs = ", ".join(_ir_type(d, s) for d, s in program.output_types)
    kernels = program.kernels
    lines = [f"{name} on target {program.target}: {len(kernels)} kernel(s), ({ins}) -> ({outs})"]
    grid = {k["name"]: k["grid"] for k in kernels}
    launches = program.last_launches
    for k in launches or kernels:
        if launches:
            kernel = k["kernel"]
            ran = f"placement={k['placement']}  programs={k['programs']}  wall={k['wall_ns'] / 1e6:.3f} ms"
        else:
            kernel, ran = k["name"], "placement=(not run yet)"
        lines.append(f"  kernel @{kernel}  {ran}  implementation={k['implementation']}  "
                     f"grid={grid.get(kernel)}  sha256={k['sha256']}")
    # With tune=True the arbiter decided each matmul region among the synthesized kernel and the libraries.
    if program.arbiter_table:
        lines.append("the arbiter's choice for each matmul region:")
        lines.extend("  " + line for table in program.arbiter_table for line in table.splitlines())
    elif program.matmul_regions:
        lines.append(f"{program.matmul_regions} matmul region(s) run Tessera's synthesized kernel "
                     "(tune=True asks the arbiter to check and time the library candidates too)")
    return "\n".join(lines)


class _Callable:
    """What ts.jit and ts.compile share: the program of the last call, its launches and check report."""

    _last: Optional["_core.Program"] = None

    @property
    def last_launches(self) -> List[dict]:
        """Each kernel launch of the last call: kernel, placement (where it ran), sha256, programs,
        wall_ns, implementation ("tessera", or the library the arbiter chose, e.g. "openblas")."""
        return self._last.last_launches if self._last is not None else []

    @property
    def last_check(self) -> Optional[dict]:
        """The oracle's report of the last checked call: ok, lines, first_failure, seconds (else None)."""
        return self._last.last_check if self._last is not None else None

    @property
    def last_pointers(self) -> Dict[str, List[int]]:
        """The data pointers of the last call's arguments and results: the callers' own (no copies)."""
        return self._last.last_pointers if self._last is not None else {"inputs": [], "outputs": []}


# -- ts.jit --------------------------------------------------------------------------------------------------

_RESULT_NAME = re.compile(r"r[0-9]+")  # the builder names results r0, r1, ...: an input must not take one


def _input_names(params: Sequence[str], n: int) -> List[str]:
    """The IR names of n inputs: the Python parameters' where they are valid and unique, else x<i>."""
    names: List[str] = []
    for i in range(n):
        name = params[i] if i < len(params) else f"x{i}"
        if not (name.isascii() and name.isidentifier()) or _RESULT_NAME.fullmatch(name):
            name = f"x{i}"
        while name in names:
            name += "_"
        names.append(name)
    return names


def _outputs(result: Any, trace: _Trace, inputs: List[str], fn: str) -> List[Tensor]:
    """The traced function's results as a list of tensors of `trace`, or the error that says why not."""
    outputs = [result] if isinstance(result, Tensor) else \
        list(result) if isinstance(result, (tuple, list)) else None
    if not outputs:
        what = "nothing" if outputs == [] else f"a {type(result).__name__}"
        raise TraceError("E942", f"{fn} returned {what}: a jitted function returns a traced tensor, or a "
                                 "tuple or list of them")
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            raise TraceError("E942", f"{fn} returned a {type(out).__name__} as result {i}: a jitted "
                                     "function returns traced tensors")
        if out._trace is not trace:
            raise TraceError("E944", f"{fn} returned a tensor of another trace (result {i})")
    # An argument next to computed results comes back as the caller's array; alone, the compiler has
    # nothing to lower (it would refuse the program with a confusing E710).
    if all(out._value.name in inputs for out in outputs):
        raise TraceError("E946", f"{fn} returns its argument(s) unchanged: there is nothing to compile "
                                 "(use the array itself)")
    return outputs


class JitFunction(_Callable):
    """A Python function compiled by Tessera (made by ``ts.jit``): call it on numpy, torch or CuPy arrays.

    Calls return one array, or a tuple when the function returns a tuple or list of tensors.
    """

    def __init__(self, fn: Callable, target: Optional[str] = None, check: Optional[bool] = None,
                 tune: bool = False, in_place: Optional[Sequence[Optional[int]]] = None):
        if not callable(fn):
            raise TypeError(f"ts.jit needs a function, got {type(fn).__name__}")
        if in_place is not None and not all(i is None or (isinstance(i, int) and not isinstance(i, bool))
                                            for i in in_place):
            raise TraceError("E948", f"ts.jit: in_place is a sequence of argument indices or None, one per output, "
                                     f"got {in_place!r}")
        #: Per output, the argument it is written into (None: a new array).
        self.in_place = None if in_place is None else tuple(in_place)
        functools.update_wrapper(self, fn)
        self.fn = fn
        #: The target every call compiles for; None: the arrays' device (host: "cpu", CUDA: "cuda").
        self.target = target
        #: Check every call against the oracle; None: follow ts.check.
        self.check = check
        #: Let the arbiter pick each matmul region's implementation (synthesized kernel or a library).
        self.tune = tune
        self._func = re.sub(r"[^A-Za-z0-9_]", "_", getattr(fn, "__name__", "")).strip("_") or "jit"
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):  # a builtin or a C callable: no names to take
            params = []
        self._params = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self.cache_clear()

    def __repr__(self) -> str:
        return f"<tessera.jit {getattr(self, '__qualname__', self._func)}>"

    def __call__(self, *arrays: Any, check: Optional[bool] = None, stream: Optional[int] = None) -> Any:
        """Runs the compiled kernels on ``arrays`` (tracing and compiling first for a new signature).

        Args:
            arrays: C-contiguous arrays with ``__dlpack__``, all on one device; never copied.
            check: run the oracle on this call (default: the jit's ``check``, else ``ts.check``).
            stream: the CUDA stream to launch on (default: torch's current stream for torch tensors).
        """
        # The hot path: the native dispatcher takes the arrays, finds their signature's program and runs
        # it. Nothing else happens in Python.
        if check is None:
            check = self.check
            if check is None:
                check = _package.check
        out = self._dispatch(arrays, check, stream, _MISS)
        if out is _MISS:
            return self._call_unusual(arrays, check, stream)
        return out

    @property
    def _last(self) -> Optional["_core.Program"]:
        return self._dispatcher.last

    def _call_unusual(self, arrays: tuple, check: bool, stream: Optional[int]) -> Any:
        """A call the dispatcher did not serve: a new signature, traced tensors, or arrays it refuses."""
        if any(isinstance(a, Tensor) for a in arrays):
            return self.fn(*arrays)  # called while another function is traced: its ops join that trace
        program, single = self._lookup(arrays)
        self._dispatcher.last = program
        out = program(*arrays, check=bool(check), stream=stream)
        return out[0] if single else out

    def _lookup(self, arrays: tuple) -> Entry:
        """The entry of the arrays' signature, traced and compiled if new, and known to the dispatcher."""
        signature = [_describe(a, i, self.__name__) for i, a in enumerate(arrays)]
        entry = self._signatures.get(tuple(signature))
        if entry is None:
            entry = self._specialize(signature)
            self._signatures[tuple(signature)] = entry
        try:
            # Again after a first call with arrays the dispatcher could not take (E930, E935...): a later
            # call with good arrays of the signature then finds it.
            self._dispatcher.add(arrays, *entry)
        except ArgumentError:
            pass  # running the program raises the same error where it matters
        return entry

    def _specialize(self, signature: Signature) -> Entry:
        self._misses += 1
        targets = {t for t, _, _ in signature}
        if len(targets) > 1:
            raise ArgumentError("E931", f"the arguments of {self.__name__} are on the host and on a CUDA "
                                        "device: a call runs on one device; Tessera moves no data")
        target = self.target or (targets.pop() if targets else "cpu")
        text, single = self._trace(signature)
        program = _core.Program(text, target, "", f"<ts.jit {self.__name__}>", self.tune)
        self._compiles += 1
        return program, single

    def _trace(self, signature: Signature) -> Tuple[str, bool]:
        """The function traced over proxy tensors of `signature`: the Graph IR text, and whether it
        returned one tensor (else a tuple or list)."""
        self._traces += 1
        names = _input_names(self._params, len(signature))
        with _Trace(self._func) as trace:
            proxies = [Tensor(trace, trace.builder.input(name, dtype, list(shape)))
                       for name, (_, dtype, shape) in zip(names, signature)]
            result = self.fn(*proxies)
            for out in _outputs(result, trace, names, self.__name__):
                trace.builder.output(out._value)
            if self.in_place is not None:
                trace.builder.in_place([-1 if i is None else i for i in self.in_place])
            return trace.builder.text(), isinstance(result, Tensor)

    def _program_for(self, arrays: tuple) -> "_core.Program":
        if arrays:
            return self._lookup(arrays)[0]
        if self._last is None:
            raise TraceError("E945", f"{self.__name__} has not been called yet: pass example arrays, as "
                                     f"{self.__name__}.lower(layer, *arrays) or .explain(*arrays)")
        return self._last

    def lower(self, layer: str = "graph", *arrays: Any) -> str:
        """The text of one layer, as ``tessera compile --emit`` prints it.

        Args:
            layer: "graph", "schedule", "tile", "target" or "source" (the kernels' source).
            arrays: example arrays for the signature to show (traced and compiled if new; nothing runs);
                without them, the last call's.
        """
        return self._program_for(arrays).emit(layer)

    def graph(self, *types: Tuple[Any, Sequence[int]]) -> str:
        """The Graph IR the function traces to for arguments of these (dtype, shape) pairs, without arrays
        and without compiling: ``fn.graph(("bf16", (2048, 4096)), ...)``."""
        signature = [("cpu", _dtype(dtype, f"argument {i} of {self.__name__}"), tuple(int(d) for d in shape))
                     for i, (dtype, shape) in enumerate(types)]
        return self._trace(signature)[0]

    def explain(self, *arrays: Any) -> str:
        """What runs: each kernel, its placement (where it ran), implementation ("tessera" or the library
        the arbiter chose), grid and sha256. With ``arrays`` the function runs once on them first; without,
        the last call is described."""
        program = self._program_for(arrays)
        if arrays:
            program(*arrays)
            self._dispatcher.last = program
        return _explain(program, f"@{self._func}")

    def cache_info(self) -> Dict[str, int]:
        """Counts: hits (calls served from the cache), misses (new signatures), traces, compiles, and the
        signatures and programs now cached. A cached call adds one hit and nothing else."""
        return {"hits": self._dispatcher.hits, "misses": self._misses, "traces": self._traces,
                "compiles": self._compiles, "signatures": len(self._signatures),
                "programs": len({id(program) for program, _ in self._signatures.values()})}

    def cache_clear(self) -> None:
        """Forgets every signature and program (and resets cache_info)."""
        self._dispatcher = _core.Dispatcher()
        self._dispatch = self._dispatcher.__call__
        self._signatures: Dict[tuple, Entry] = {}
        self._misses = self._traces = self._compiles = 0


@overload
def jit(fn: Callable, *, target: Optional[str] = None, check: Optional[bool] = None,
        tune: bool = False, in_place: Optional[Sequence[Optional[int]]] = None) -> JitFunction: ...
@overload
def jit(fn: None = None, *, target: Optional[str] = None, check: Optional[bool] = None,
        tune: bool = False,
        in_place: Optional[Sequence[Optional[int]]] = None) -> Callable[[Callable], JitFunction]: ...


def jit(fn: Optional[Callable] = None, *, target: Optional[str] = None, check: Optional[bool] = None,
        tune: bool = False, in_place: Optional[Sequence[Optional[int]]] = None):
    """Compiles a function of tensors with Tessera: ``@ts.jit`` or ``@ts.jit(target="cpu", check=True)``.

    The function is traced once per signature (each array's device, dtype and shape) into Graph IR and
    compiled for the arrays' device, or for ``target``; calls then run the compiled kernels on the arrays
    themselves, without copies. ``check=True`` checks every call against the oracle (None: follow
    ``ts.check``). ``tune=True`` lets the arbiter check and time each matmul region's candidates (the
    synthesized kernel, OpenBLAS, cuBLASLt) and use its pick; by default matmuls are Tessera's kernel.
    ``in_place=(0, 1, None)``: output 0 is written into argument 0's array and output 1 into argument 1's
    (an optimizer step updating its parameters and state), output 2 is new; the compiler proves each is
    safe (a pointwise kernel that reads the argument only at the element it writes, and nothing reads it
    later) or refuses with E221.
    """
    if fn is None:
        return lambda f: JitFunction(f, target, check, tune, in_place)
    return JitFunction(fn, target, check, tune, in_place)


# -- ts.grad -------------------------------------------------------------------------------------------------

class GradFunction(JitFunction):
    """The gradient of a function whose first result is a scalar loss (made by ``ts.grad`` or
    ``ts.value_and_grad``): Tessera differentiates the traced Graph IR (``tessera grad``) and compiles the
    gradient program like any other. Called on arrays it returns the gradients; on traced tensors (inside
    another ``ts.jit`` function, an optimizer step say) its ops join that trace.
    """

    def __init__(self, fn: Callable, argnums: Union[int, Sequence[int]], with_value: bool,
                 target: Optional[str] = None, check: Optional[bool] = None, tune: bool = False):
        super().__init__(fn, target, check, tune)
        self._single = isinstance(argnums, int)
        self._argnums = (argnums,) if self._single else tuple(argnums)
        if not self._argnums or not all(isinstance(i, int) and not isinstance(i, bool) for i in self._argnums):
            raise TraceError("E948", f"argnums must be an int or a non-empty sequence of ints, got {argnums!r}")
        self._with_value = with_value

    def __repr__(self) -> str:
        kind = "value_and_grad" if self._with_value else "grad"
        return f"<tessera.{kind} {getattr(self, '__qualname__', self._func)} argnums={self._argnums}>"

    def __call__(self, *arrays: Any, check: Optional[bool] = None, stream: Optional[int] = None) -> Any:
        return self._shaped(super().__call__(*arrays, check=check, stream=stream))

    def _call_unusual(self, arrays: tuple, check: bool, stream: Optional[int]) -> Any:
        if any(isinstance(a, Tensor) for a in arrays):
            return self._inline(arrays)
        return super()._call_unusual(arrays, check, stream)

    def _shaped(self, out: Sequence[Any]) -> Any:
        """(loss, g1, g2, ...) as the caller asked: g or (g1, g2), after the loss for value_and_grad."""
        grads = tuple(out[1:])
        g = grads[0] if self._single else grads
        return (out[0], g) if self._with_value else g

    def _trace(self, signature: Signature) -> Tuple[str, bool]:
        forward, _ = super()._trace(signature)
        names = _input_names(self._params, len(signature))
        wrt = []
        for i in self._argnums:
            if not -len(names) <= i < len(names):
                raise TraceError("E948", f"argnums {i} is out of range for {self.__name__}'s {len(names)} "
                                         "arguments")
            wrt.append(names[i])
        return _core.differentiate(forward, "", wrt), False

    def _inline(self, arrays: tuple) -> tuple:
        """The gradient's ops added to the trace the tensors belong to; its values as tensors."""
        trace = next(a._trace for a in arrays if isinstance(a, Tensor))
        if not all(isinstance(a, Tensor) and a._trace is trace for a in arrays):
            raise TraceError("E947", f"{self.__name__}: inside a traced function, a gradient takes tensors "
                                     "of that trace only (no Python numbers or arrays)")
        text, _ = self._trace([("", a._value.dtype, tuple(a._value.shape)) for a in arrays])
        return tuple(Tensor(trace, v) for v in trace.builder.call_text(text, [a._value for a in arrays]))


def grad(fn: Callable, argnums: Union[int, Sequence[int]] = 0, *, target: Optional[str] = None,
         check: Optional[bool] = None, tune: bool = False) -> GradFunction:
    """The gradient of ``fn`` with respect to argument ``argnums`` (or a tuple of them), as ``jax.grad``.

    ``fn`` returns a scalar (rank-0) float loss first (other results are dropped). The result is compiled
    like ``ts.jit(fn)`` and returns the gradient (a tuple of them for a sequence of argnums), each of its
    argument's dtype and shape. The rules, and what has none (comparisons, argmax, integer casts: an
    error, never a silent zero), are in docs/semantics.md ("Gradients").
    """
    return GradFunction(fn, argnums, False, target, check, tune)


def value_and_grad(fn: Callable, argnums: Union[int, Sequence[int]] = 0, *, target: Optional[str] = None,
                   check: Optional[bool] = None, tune: bool = False) -> GradFunction:
    """Like ``ts.grad``, returning ``(loss, gradient)`` from one compiled program."""
    return GradFunction(fn, argnums, True, target, check, tune)


# -- ts.compile ----------------------------------------------------------------------------------------------

class CompiledProgram(_Callable):
    """IR text compiled for one target (made by ``ts.compile``): call it on arrays like a jitted function.

    A program with one result returns it; with several, a tuple.
    """

    def __init__(self, program: "_core.Program", check: Optional[bool] = None):
        #: The native program (tessera._core.Program).
        self.program = program
        #: Check every call against the oracle; None: follow ts.check.
        self.check = check
        self._last = program
        self._single = len(program.output_names) == 1

    def __repr__(self) -> str:
        return f"<tessera.CompiledProgram for {self.program.target}: {', '.join(self.program.input_names)}>"

    def __call__(self, *arrays: Any, check: Optional[bool] = None, stream: Optional[int] = None) -> Any:
        """Runs on ``arrays``: C-contiguous, of the program's dtypes and shapes, on its device; not copied."""
        if check is None:
            check = self.check
            if check is None:
                check = _package.check
        if check or stream is not None:
            out = self.program(*arrays, check=bool(check), stream=stream)
        else:
            out = self.program(*arrays)
        return out[0] if self._single else out

    @property
    def target(self) -> str:
        return self.program.target

    @property
    def input_names(self) -> List[str]:
        return self.program.input_names

    @property
    def output_names(self) -> List[str]:
        return self.program.output_names

    @property
    def input_types(self) -> List[Tuple[str, Tuple[int, ...]]]:
        """(dtype, shape) of each input: [("f32", (4, 8)), ...]."""
        return self.program.input_types

    @property
    def output_types(self) -> List[Tuple[str, Tuple[int, ...]]]:
        """(dtype, shape) of each result."""
        return self.program.output_types

    @property
    def kernels(self) -> List[dict]:
        """Each kernel: name, sha256, implementation, grid."""
        return self.program.kernels

    def lower(self, layer: str = "graph") -> str:
        """The text of one layer: "graph" (needs Graph IR input), "schedule", "tile", "target", "source"."""
        return self.program.emit(layer)

    def explain(self, *arrays: Any) -> str:
        """Runs once on ``arrays`` (if given) and says what ran: each kernel, placement, implementation,
        sha256."""
        if arrays:
            self.program(*arrays)
        return _explain(self.program, "program")


def _read_ir_file(path: str) -> str:
    # As the CLI: anything but a regular file (a FIFO, a directory) is refused before it is opened.
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ParseError("E109", f"cannot read the IR file '{path}': not a regular file", file=path)
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ParseError("E109", f"cannot read the IR file '{path}': {e.strerror}", file=path) from None
    return data.decode("utf-8", errors="replace")


def compile(source: Union[str, bytes, "os.PathLike[str]"], target: str = "cpu", func: str = "",
            check: Optional[bool] = None, tune: bool = False) -> CompiledProgram:
    """IR text of any layer, or the path of a ``.tsr`` file, compiled for ``target`` and loaded.

    Args:
        source: the text, or a path (an ``os.PathLike``, or a one-line string ending in ``.tsr``).
        target: "cpu", or "cuda" on a machine with a GPU (other targets cannot run here: E720-E722).
        func: which func of the module (default: the only one).
        check: check every call against the oracle (None: follow ``ts.check``); needs Graph IR text.
        tune: let the arbiter pick each matmul region's implementation (needs Graph IR text).

    Errors in the text carry file, line and column (``e.file``, ``e.line``, ``e.col``).
    """
    if isinstance(source, bytes):
        source = source.decode("utf-8", errors="replace")
    if isinstance(source, os.PathLike) or (isinstance(source, str) and source.endswith(".tsr")
                                           and "\n" not in source):
        path = os.fspath(source)
        return CompiledProgram(_core.Program(_read_ir_file(path), target, func, path, tune), check)
    if not isinstance(source, str):
        raise TypeError(f"ts.compile takes IR text or a path, got {type(source).__name__}")
    return CompiledProgram(_core.Program(source, target, func, "<input>", tune), check)
