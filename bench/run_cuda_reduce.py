#!/usr/bin/env python3
"""CUDA reduction benchmark on the GPU machine, one run, side by side:
Tessera (tessera_bench_cuda: device-resident tensors, CUDA events), PyTorch
(torch.sum / torch.amax), a simple Triton row-reduction kernel (last-axis
cases), and a device-to-device copy as the bandwidth ceiling.

    python3 bench/run_cuda_reduce.py [--build build] [--reps 50] [--json out.json]
"""
import argparse
import json
import os
import subprocess
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from anchors import cuda_event_median_ns, row_sum_kernel  # noqa: E402 - the shared Triton kernel and event timer


def time_cuda(fn, reps):
    return cuda_event_median_ns(fn, reps) / 1e3  # us


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--json")
    args = ap.parse_args()

    proc = subprocess.run([f"{args.build}/tessera_bench_cuda", "--reps", str(args.reps)], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"tessera_bench_cuda failed:\n{proc.stdout}\n{proc.stderr}")
    lines = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    env, rows = lines[0], lines[1:]

    gib = torch.empty(2**28, device="cuda")
    dst = torch.empty_like(gib)
    copy_us = time_cuda(lambda: dst.copy_(gib), args.reps)
    copy_tbs = 2 * gib.numel() * 4 / copy_us / 1e6
    del gib, dst

    for r in rows:
        shape = r["shape"]
        x = torch.randn(*shape, device="cuda")
        axis = None if r["case"].endswith("full") else int(r["case"][-1])
        if r["kind"] == "sum":
            fn = (lambda: torch.sum(x)) if axis is None else (lambda: torch.sum(x, dim=axis))
        else:
            fn = (lambda: torch.amax(x)) if axis is None else (lambda: torch.amax(x, dim=axis))
        r["torch_us"] = time_cuda(fn, args.reps)
        r["torch_tbs"] = r["bytes"] / r["torch_us"] / 1e6
        if r["kind"] == "sum" and axis == len(shape) - 1 and len(shape) == 2:
            rows_, n = shape
            y = torch.empty(rows_, device="cuda")
            block = min(4096, triton.next_power_of_2(n))
            r["triton_us"] = time_cuda(lambda: row_sum_kernel[(rows_,)](x, y, n, BLOCK=block, num_warps=8), args.reps)
            r["triton_tbs"] = r["bytes"] / r["triton_us"] / 1e6
        del x
        torch.cuda.empty_cache()

    print(f"{env['device']} ({env['arch']}, driver {env['driver']}, {env['toolchain']}); torch {torch.__version__}, "
          f"triton {triton.__version__}; median of {args.reps}; copy ceiling {copy_tbs:.2f} TB/s (read+write)")
    print(f"{'case':<24} {'tessera us':>10} {'TB/s':>6} {'torch us':>9} {'TB/s':>6} {'vs torch':>8} "
          f"{'triton TB/s':>11} {'vs triton':>9} {'launch us':>9} kernels")
    for r in rows:
        tri = f"{r['triton_tbs']:>11.2f} {r['triton_us'] / r['device_us']:>8.2f}x" if "triton_us" in r else f"{'-':>11} {'-':>9}"
        print(f"{r['case']:<24} {r['device_us']:>10.2f} {r['tbs']:>6.2f} {r['torch_us']:>9.2f} {r['torch_tbs']:>6.2f} "
              f"{r['torch_us'] / r['device_us']:>7.2f}x {tri} {r['host_launch_us']:>9.2f} {r['kernels']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"env": env, "copy_tbs": copy_tbs, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
