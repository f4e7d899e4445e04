#!/usr/bin/env python3
"""One Llama-3-8B decoder layer (examples/llama_layer.py) on CUDA, side by side with PyTorch in the same run:
Tessera's jitted layer, the same layer in torch eager and under torch.compile, bf16 storage with f32
accumulation. Checks Tessera's output against torch eager's, then times each (CUDA events, medians of
rounds, after warm-up) and prints one JSON object: a raw measurement, not a sealed packet.

  PYTHONPATH=build/python python3 bench/llama_layer.py [--seq 2048] [--batch 1] [--out FILE]
"""
import argparse
import json
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import anchors  # noqa: E402 (bench/, the script's own folder)
import llama_layer as L  # noqa: E402
import tessera as ts  # noqa: E402

HIDDEN, HEADS, KV, FFN = 4096, 32, 8, 14336


def torch_layer(x, g1, wqkv, cos, sin, wo, g2, wgu, wd):
    """The same layer in torch: bf16 tensors, f32 math where torch does it (matmul accumulation).
    x [S, H] or [B, S, H]."""
    *lead, s, h = x.shape
    b = lead[0] if lead else 1
    d = h // HEADS
    t = x.reshape(b * s, h)

    def norm(t, g):
        t32 = t.float()
        return (t32 * torch.rsqrt(t32.pow(2).mean(-1, keepdim=True) + L.EPS)).to(t.dtype) * g

    q, k, v = torch.split(norm(t, g1) @ wqkv, [HEADS * d, KV * d, KV * d], dim=1)

    def rope(t, n):
        t = t.view(b, s, n, d)
        t1, t2 = t.chunk(2, dim=-1)
        return t * cos[:, None] + torch.cat([t2, t1], -1) * sin[:, None]

    q = rope(q, HEADS).transpose(1, 2)
    k = rope(k, KV).transpose(1, 2)
    v = v.view(b, s, KV, d).transpose(1, 2)
    # what Llama implementations call: SDPA picks its fastest backend (flash or cuDNN)
    attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    attn = attn.transpose(1, 2).reshape(b * s, h)
    hh = t + attn @ wo
    gate, up = torch.chunk(norm(hh, g2) @ wgu, 2, dim=1)
    return (hh + (torch.nn.functional.silu(gate) * up) @ wd).reshape(x.shape)


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
    s, d = args.seq, HIDDEN // HEADS
    gen = torch.Generator(device="cuda").manual_seed(0)
    bf = torch.bfloat16
    w = lambda *shape: (torch.randn(*shape, device="cuda", generator=gen) / math.sqrt(shape[0])).to(bf)
    cos, sin = (torch.tensor(t, device="cuda").to(bf) for t in L.rope_tables(s, d))
    x_shape = (args.batch, s, HIDDEN) if args.batch > 1 else (s, HIDDEN)
    args_ = (torch.randn(*x_shape, device="cuda", generator=gen).to(bf),
             (1 + 0.1 * torch.randn(HIDDEN, device="cuda", generator=gen)).to(bf), w(HIDDEN, (HEADS + 2 * KV) * d),
             cos, sin, w(HEADS * d, HIDDEN), (1 + 0.1 * torch.randn(HIDDEN, device="cuda", generator=gen)).to(bf),
             w(HIDDEN, 2 * FFN), w(FFN, HIDDEN))

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
