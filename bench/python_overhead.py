#!/usr/bin/env python3
"""The Python front end's call overhead, side by side in one run.

For a cached one-kernel jitted function on small arrays, per call:
  jit     ts.jit function called from Python (the user's path)
  core    the compiled _core.Program called from Python (no jit layer)
  native  the same run looped in C++ (Program._native_ns: the C++ API's cost)
and the anchors: numpy's own call (CPU) and one torch eager op (CUDA).
The overhead is jit - native. CUDA calls are asynchronous: a loop of calls is
timed up to a final synchronize, so a per-call figure is the enqueue rate.

  PYTHONPATH=build/python python3 bench/python_overhead.py [--out FILE.json]
"""
import argparse
import json
import platform
import time

import numpy as np

import tessera as ts
from tessera import _core


def per_call_ns(fn, calls, sync=None, rounds=7):
    """Median over rounds of the mean wall ns per call of `calls` calls."""
    for _ in range(calls // 10 + 1):
        fn()
    if sync:
        sync()
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        if sync:
            sync()
        samples.append((time.perf_counter_ns() - t0) / calls)
    return sorted(samples)[len(samples) // 2]


@ts.jit
def scale(x):
    return x * 2.0


def measure(x, anchor_name, anchor, sync, calls, repeat_native):
    scale(x)  # trace and compile once
    program = _core.Program(scale.lower("graph"), "cuda" if sync else "cpu")
    row = {
        "jit_ns": per_call_ns(lambda: scale(x), calls, sync),
        "core_ns": per_call_ns(lambda: program(x), calls, sync),
        "native_ns": program._native_ns(x, repeat=repeat_native),
        anchor_name + "_ns": per_call_ns(anchor, calls, sync),
        "launches": program.last_launches,
    }
    if sync:  # the native loop enqueued work too: let it finish before the next figure
        sync()
    row["overhead_ns"] = row["jit_ns"] - row["native_ns"]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the measurements as JSON here")
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    result = {"host": platform.node(), "python": platform.python_version(), "numpy": np.__version__}

    x = np.ones(1024, np.float32)
    out = np.empty_like(x)
    result["cpu"] = measure(x, "numpy_multiply", lambda: np.multiply(x, 2.0, out=out), None, args.calls, args.calls)

    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        xt = torch.ones(1024, device="cuda")
        result["torch"] = torch.__version__
        result["gpu"] = torch.cuda.get_device_name()
        result["cuda"] = measure(xt, "torch_mul", lambda: torch.mul(xt, 2.0), torch.cuda.synchronize, args.calls,
                                 args.calls)
    else:
        result["cuda"] = "not measured: no torch with a CUDA device here"

    for lane in ("cpu", "cuda"):
        r = result[lane]
        if isinstance(r, dict):
            anchor = next(k for k in r if k.endswith("_ns") and k not in ("jit_ns", "core_ns", "native_ns",
                                                                            "overhead_ns"))
            print(f"{lane}: jit {r['jit_ns'] / 1e3:.2f} us  core {r['core_ns'] / 1e3:.2f} us  native "
                  f"{r['native_ns'] / 1e3:.2f} us  -> overhead {r['overhead_ns'] / 1e3:.2f} us;  "
                  f"{anchor[:-3]} {r[anchor] / 1e3:.2f} us")
        else:
            print(f"{lane}: {r}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
