#!/usr/bin/env python3
"""Anchor rows for an evidence packet: the same cases of a bench spec timed
with the reference libraries, written as JSON for `tessera bench --anchors`.

    python3 bench/anchors.py bench/reduce_cpu.json --target cpu --out anchors.json   # numpy
    python3 bench/anchors.py bench/reduce_cuda.json --target cuda --out anchors.json # torch, triton

CPU rows time numpy on the host clock; CUDA rows time torch (and, for 2-D
last-axis f32 sums, a simple Triton kernel) with CUDA events. Each row:
{"anchor", "version", "domain", "median_ns", "reps"}.
"""
import argparse
import json
import statistics
import sys
import time


def numpy_rows(case, reps):
    import numpy as np
    if case.get("dtype", "f32") not in ("f32", "f64"):
        return []  # numpy has no bf16; f16 reductions would be a different computation
    dt = np.float32 if case.get("dtype", "f32") == "f32" else np.float64
    x = np.random.default_rng(7).uniform(-1, 1, case["shape"]).astype(dt)
    axes = tuple(case["axes"]) if "axes" in case else None
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}[case["kind"]]
    fn(x, axis=axes)
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn(x, axis=axes)
        samples.append(time.perf_counter_ns() - t0)
    return [{"anchor": "numpy", "version": np.__version__, "domain": "end_to_end",
             "median_ns": statistics.median(samples), "reps": reps}]


def cuda_rows(case, reps):
    import torch
    dt = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}[case.get("dtype", "f32")]
    x = torch.rand(case["shape"], device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dt)
    axes = tuple(case["axes"]) if "axes" in case else None
    kind = case["kind"]
    ops = {"sum": torch.sum, "mean": torch.mean, "prod": torch.prod}
    if kind in ops:
        fn = (lambda: ops[kind](x, dim=axes, dtype=torch.float32)) if axes else (lambda: ops[kind](x, dtype=torch.float32))
    else:
        red = torch.amax if kind == "max" else torch.amin
        fn = (lambda: red(x, dim=axes)) if axes else (lambda: red(x))

    def time_events(f):
        for _ in range(3):
            f()
        torch.cuda.synchronize()
        out = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            f()
            b.record()
            b.synchronize()
            out.append(a.elapsed_time(b) * 1e6)
        return statistics.median(out)

    rows = [{"anchor": "torch", "version": torch.__version__, "domain": "device_event",
             "median_ns": time_events(fn), "reps": reps}]
    shape = case["shape"]
    if kind == "sum" and dt == torch.float32 and len(shape) == 2 and case.get("axes") in ([1], [-1]):
        import triton
        import triton.language as tl

        @triton.jit
        def row_sum(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            row = tl.program_id(0).to(tl.int64)
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            for k in range(0, n, BLOCK):
                offs = k + tl.arange(0, BLOCK)
                acc += tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
            tl.store(y_ptr + row, tl.sum(acc, axis=0))

        y = torch.empty(shape[0], device="cuda")
        block = min(4096, triton.next_power_of_2(shape[1]))
        rows.append({"anchor": "triton", "version": triton.__version__, "domain": "device_event",
                     "median_ns": time_events(lambda: row_sum[(shape[0],)](x, y, shape[1], BLOCK=block, num_warps=8)),
                     "reps": reps})
    del x
    torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("spec")
    ap.add_argument("--target", choices=["cpu", "cuda"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    with open(args.spec) as f:
        spec = json.load(f)
    rows, tools = {}, {}
    for case in spec["cases"]:
        if "program" in case:
            continue
        r = numpy_rows(case, args.reps) if args.target == "cpu" else cuda_rows(case, args.reps)
        rows[case["name"]] = r
        for a in r:
            tools[a["anchor"]] = a["version"]
        print(case["name"], ", ".join(f"{a['anchor']} {a['median_ns'] / 1e3:.1f} us" for a in r), file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump({"tools": tools, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
