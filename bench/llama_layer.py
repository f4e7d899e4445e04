#!/usr/bin/env python3
"""One Llama-3-8B decoder layer (examples/llama_layer.py) on CUDA, side by side with PyTorch in the same run:
Tessera's jitted layer, the same layer in torch eager and under torch.compile, bf16 storage with f32
accumulation. Checks Tessera's output against torch eager's, then times each (CUDA events, medians of
rounds, after warm-up) and prints one JSON object: a raw measurement, not a sealed packet.

  PYTHONPATH=build/python python3 bench/llama_layer.py [--seq 2048] [--batch 1] [--out FILE]
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import anchors  # noqa: E402 (bench/, the script's own folder)
import llama_layer as L  # noqa: E402
from llama_torch import HEADS, KV, layer_inputs, torch_layer  # noqa: E402
import tessera as ts  # noqa: E402


def time_ms(fn):
    """Median of 20 rounds between CUDA events, after 3 warm-up calls."""
    return anchors.cuda_event_median_ns(fn, reps=20) / 1e6


def profile_table(fn, calls=5):
    """The CUDA kernels of `calls` calls of fn, with their device times (CUPTI sees every launch in the
    process, the driver-API launches of Tessera's runtime included)."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return prof.key_averages().table(sort_by="cuda_time_total", row_limit=30, max_name_column_width=70)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=1, help="sequences of --seq tokens (x [B, S, H] when above 1)")
    ap.add_argument("--out")
    ap.add_argument("--profile", action="store_true",
                    help="also print each side's kernels and their CUDA times (torch.profiler, 5 calls each)")
    ap.add_argument("--tune", action="store_true",
                    help="ts.jit(tune=True): the arbiter checks and times each matmul's candidates (cuBLASLt too)")
    args = ap.parse_args()
    s = args.seq
    args_ = layer_inputs(s, args.batch)

    def llama_layer(x, g1, wqkv, cos, sin, wo, g2, wgu, wd):
        return L.layer(x, g1, wqkv, cos, sin, wo, g2, wgu, wd, heads=HEADS, kv_heads=KV)

    fn = ts.jit(llama_layer, tune=args.tune)
    t0 = time.time()
    with torch.no_grad():
        got = fn(*args_)
        torch.cuda.synchronize()
        compile_s = time.time() - t0
        want = torch_layer(*args_)
        err = ((got.float() - want.float()).abs().max() / want.float().abs().max()).item()
        kernels = [k["kernel"] for k in fn._last.last_launches]
        placements = sorted({k["placement"] for k in fn._last.last_launches})
        implementations = [k["implementation"] for k in fn._last.last_launches]
        tessera_ms = time_ms(lambda: fn(*args_))
        eager_ms = time_ms(lambda: torch_layer(*args_))
        compiled = torch.compile(torch_layer)
        t1 = time.time()
        compiled(*args_)
        torch.cuda.synchronize()
        compile_torch_s = time.time() - t1
        compiled_ms = time_ms(lambda: compiled(*args_))
        if args.profile:
            for name, f in (("tessera", lambda: fn(*args_)), ("torch.compile", lambda: compiled(*args_))):
                print(f"== kernels of {name}, 5 calls")
                print(profile_table(f))
    result = {
        "case": f"llama3_8b_layer_b{args.batch}_s{s}_bf16", "device": torch.cuda.get_device_name(),
        "torch": torch.__version__, "attention": "tessera.attention (the CUDA wgmma block); torch: F.scaled_dot_product_attention",
        "kernels": len(kernels), "placements": placements, "tune": args.tune,
        "matmul_implementations": [i for i in implementations if i != "tessera"] or ["tessera"], "max_rel_err_vs_torch_eager": err,
        "tessera_ms": tessera_ms, "torch_eager_ms": eager_ms, "torch_compile_ms": compiled_ms,
        "vs_eager": eager_ms / tessera_ms, "vs_compile": compiled_ms / tessera_ms,
        "tessera_first_call_s": compile_s, "torch_compile_first_call_s": compile_torch_s,
        "note": "raw measurement: CUDA events, median of 20 rounds after 3 warm-up calls; not a sealed packet",
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
