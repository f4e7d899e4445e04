#!/usr/bin/env python3
"""CPU reduction benchmark, one run, side by side on the same array:
Tessera's kernels, a read-bandwidth ceiling measured in the same process
(tessera_bench_reduce), and numpy (the CPU anchor).

    python3 bench/run_cpu_reduce.py [--build build] [--reps 21] [--json out.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def time_numpy(fn, x, axis, reps):
    fn(x, axis=axis)  # warm-up
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(x, axis=axis)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--json", help="also write every row, with numpy's, to this file")
    args = ap.parse_args()

    exe = os.path.join(args.build, "tessera_bench_reduce")
    with tempfile.TemporaryDirectory() as tmp:
        x_path = os.path.join(tmp, "x.npy")
        proc = subprocess.run([exe, "--rows", str(args.rows), "--cols", str(args.cols), "--reps", str(args.reps),
                               "--save-input", x_path], capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"tessera_bench_reduce failed:\n{proc.stderr}")
        rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        x = np.load(x_path)

    fns = {"sum": np.sum, "max": np.max}
    for r in rows:
        t = time_numpy(fns[r["kind"]], x, r["axis"], args.reps)
        r["numpy_s"] = t
        r["numpy_gbs"] = x.nbytes / t / 1e9
        r["speedup_vs_numpy"] = t / r["kernel_wall_s"]

    print(f"CPU reductions over {args.rows}x{args.cols} f32 ({x.nbytes / 2**20:.0f} MiB), "
          f"{rows[0]['threads']} threads, median of {args.reps}; numpy {np.__version__}")
    print(f"{'case':<11} {'tessera ms':>10} {'GB/s':>7} {'ceiling GB/s':>12} {'of ceiling':>10} "
          f"{'numpy ms':>9} {'numpy GB/s':>10} {'vs numpy':>8}  placement")
    for r in rows:
        print(f"{r['case']:<11} {r['kernel_wall_s'] * 1e3:>10.3f} {r['gbs']:>7.1f} {r['ceiling_gbs']:>12.1f} "
              f"{r['fraction_of_ceiling']:>9.0%} {r['numpy_s'] * 1e3:>9.3f} {r['numpy_gbs']:>10.1f} "
              f"{r['speedup_vs_numpy']:>7.1f}x  {r['placement']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
