#!/usr/bin/env python3
"""Anchor rows for an evidence packet: the same cases of a bench spec timed
with the reference libraries, written as JSON for `tessera bench --anchors`.

    python3 bench/anchors.py bench/reduce_cpu.json --target cpu --out anchors.json   # numpy
    python3 bench/anchors.py bench/reduce_cuda.json --target cuda --out anchors.json # torch, triton
    python3 bench/anchors.py bench/rowops_cuda.json --target cuda --out anchors.json # softmax, norms

CPU rows time numpy on the host clock; CUDA rows time torch and Triton with
CUDA events. Each row: {"anchor", "version", "domain", "median_ns", "reps"}.

A reduce case ({"kind", "shape", "axes", "dtype"}) gets numpy, torch and (2-D
last-axis f32 sums) a simple Triton row-sum kernel. A program case ("program":
a .tsr file) gets anchors only if it carries
    "anchor": {"op": "softmax" | "log_softmax" | "layer_norm" | "rms_norm" |
                     "rms_norm_silu" | "sum_sq",
               "shape": [...], "dtype": "f32" | "bf16", "axis": -1, "eps": 1e-5}
(norms normalise the last axis with a weight of shape [shape[-1]], layer_norm
also a bias; sum_sq is sum(x*x) over `axis`); program cases without it are
skipped. numpy rows are f32 only (numpy has no bf16). The Triton kernels
below are this project's own: one row per program for softmax / log_softmax
(rows up to 65536 elements), layer_norm, rms_norm (optionally with a fused
silu epilogue) and a looped row sum of squares; rows longer than 65536 use a
looped two-pass softmax (online max and sum, then a second pass that
writes). Before a Triton row is timed its result is compared with torch's;
a mismatch drops the row with a warning.

The row ops' gradients ("layer_norm_grad", "rms_norm_grad", "softmax_grad",
"log_softmax_grad"; same fields) time the backward pass alone, on x (or the
forward result y = softmax(x)), w and an output gradient dy: numpy's f32
formulas of docs/semantics.md (dx, then dw and db as column sums); torch's
autograd backward of the forward op (torch.autograd.grad with the graph
retained, so only the backward kernels run); and this file's Triton
backward (rows up to 65536: a program takes every P-th row, writes dx and
keeps dw/db partial sums in registers, then torch.sum finishes the partials;
checked against torch's dx and dw before it is timed).

A matmul program case carries
    "anchor": {"op": "matmul", "m", "n", "k", "batch": 1, "dtype": "f32" | "f16" | "bf16",
               "out_dtype": (= dtype), "transpose_a": false, "transpose_b": false,
               "epilogue": "none" | "bias_gelu"}
(A is [batch,] M x K, or K x M transposed; B is [batch,] K x N, or N x K;
bias_gelu is gelu(C + bias), exact erf gelu, bias of length N). CPU: numpy
`a @ b` (f32 only: numpy's bundled OpenBLAS, all cores) on the host clock,
then for bias_gelu a separate numpy gelu(c + bias) (erf by Abramowitz-Stegun
7.1.26, |err| < 1.5e-7), plus a matmul-only row. CUDA (CUDA events): torch.matmul
(cuBLAS; for f32 with torch.backends.cuda.matmul.allow_tf32 = False, said in
the row's note), for bias_gelu followed by a separate F.gelu(c + bias) (the
unfused baseline), an addmm + gelu row and a matmul-only row; and a Triton
matmul of this file (tiled tl.dot, f32 accumulation, no autotune: two fixed
configs each checked against torch and timed, the faster is the row; f32
uses input_precision="ieee", no TF32) with the epilogue fused.

An attention program case carries
    "anchor": {"op": "attention", "b", "h", "hkv", "sq", "sk", "d", "causal": bool, "dtype": "f32" | "bf16" | "f16"}
(q [b, h, sq, d], k and v [b, hkv, sk, d], scale 1/sqrt(d)). CPU: a
straightforward numpy implementation in f32 (scores q @ k^T, a max-subtracted
softmax, then @ v; the causal mask by np.where), host clock. CUDA (CUDA
events): torch.nn.functional.scaled_dot_product_attention restricted to one
backend at a time with torch.nn.attention.sdpa_kernel: FLASH_ATTENTION
(FlashAttention-2) and CUDNN_ATTENTION, each checked against a float32 torch
reference before it is timed; a backend that refuses the case is a warning.
With "cold_l2": true in the anchor (and the case), the GPU's L2 is written
over before every timed call, untimed, as the bench does: a decode step's
cache, which an L2 could hold, is read from device memory.
An "attention_grad" anchor (same fields) times the backward alone from q, k, v,
o, do and lse: on the CPU numpy in f32 (p recomputed from lse, the five
products, GQA sums by reshape); on CUDA torch's SDPA backward alone
(torch.autograd.grad of the forward's output, retained), FLASH_ATTENTION and
CUDNN_ATTENTION, each checked against the math backend's f32 gradients on a
few heads before it is timed.

A Llama layer program case carries "anchor": {"op": "llama_layer", "size":
"cpu"}: examples/llama_layer.py's numpy reference of the layer in float32 at
that size (bundled OpenBLAS, every core), host clock; it imports the example,
and with it tessera (PYTHONPATH=build/python). On CUDA ("size": "8b", "seq",
"batch"): bench/llama_torch.py's layer in torch eager and under torch.compile
(checked against eager), CUDA events around each call.

Every anchor is measured on its own: one that fails prints a warning to
stderr and the others still run.
"""
import argparse
import json
import statistics
import sys
import time

try:  # only the CUDA anchors need Triton; the CPU path runs without it
    import triton
    import triton.language as tl
except Exception:  # noqa: BLE001 - not installed, or unusable on this machine
    triton = tl = None

TRITON_ONE_ROW_MAX = 65536  # longest row a one-row-per-program kernel holds in one block


def warn(msg):
    print(f"warning: {msg}", file=sys.stderr)


# ----------------------------------------------------------------------------- timers

def host_median_ns(fn, reps):
    """Median host-clock time of fn() over reps calls, after one warm-up call."""
    fn()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples)


def l2_evictor():
    """A function that writes over the GPU's whole L2 (four times its size), as the bench's cold_l2 does."""
    import torch
    junk = torch.empty(4 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    return lambda: junk.fill_(1)


def cuda_event_median_ns(fn, reps, warmup=3, before=None):
    """Median time of fn() between two CUDA events, in ns, after `warmup` calls; before() (untimed) ahead of each."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        if before:
            before()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e6)  # ms -> ns
    return statistics.median(samples)


def measured(anchor, version, domain, reps, timer):
    """One anchor row, or None (with a warning) if measuring it fails."""
    try:
        return {"anchor": anchor, "version": version, "domain": domain, "median_ns": timer(), "reps": reps}
    except Exception as e:  # noqa: BLE001 - one failing anchor must not stop the others
        warn(f"anchor {anchor} failed: {type(e).__name__}: {e}")
        return None


# ----------------------------------------------------------------------------- Triton kernels

if triton is not None:
    @triton.jit
    def row_sum_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for k in range(0, n, BLOCK):
            offs = k + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
        tl.store(y_ptr + row, tl.sum(acc, axis=0))

    @triton.jit
    def row_sum_sq_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        # y[r] = sum_j x[r, j]^2, f32 accumulation, one row per program
        base = tl.program_id(0).to(tl.int64) * n
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for k in range(0, n, BLOCK):
            cols = k + tl.arange(0, BLOCK)
            v = tl.load(x_ptr + base + cols, mask=cols < n, other=0.0).to(tl.float32)
            acc += v * v
        tl.store(y_ptr + tl.program_id(0), tl.sum(acc, axis=0).to(y_ptr.dtype.element_ty))

    @triton.jit
    def softmax_row_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, LOG: tl.constexpr):
        # The whole row in one block: a single read and a single write per element.
        base = tl.program_id(0).to(tl.int64) * n
        cols = tl.arange(0, BLOCK)
        inside = cols < n
        v = tl.load(x_ptr + base + cols, mask=inside, other=-float("inf")).to(tl.float32)
        shifted = v - tl.max(v, axis=0)
        p = tl.exp(shifted)  # 0 in the padding lanes
        total = tl.sum(p, axis=0)
        if LOG:
            out = shifted - tl.log(total)
        else:
            out = p / total
        tl.store(y_ptr + base + cols, out.to(y_ptr.dtype.element_ty), mask=inside)

    @triton.jit
    def softmax_online_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, LOG: tl.constexpr):
        # Rows too long for one block: pass 1 keeps a per-lane running max and a
        # sum rescaled to it; pass 2 re-reads the row and writes the result.
        base = tl.program_id(0).to(tl.int64) * n
        run_max = tl.full([BLOCK], -3.0e38, tl.float32)  # finite: no (-inf) - (-inf)
        run_sum = tl.zeros([BLOCK], dtype=tl.float32)
        for k in range(0, n, BLOCK):
            cols = k + tl.arange(0, BLOCK)
            v = tl.load(x_ptr + base + cols, mask=cols < n, other=-float("inf")).to(tl.float32)
            new_max = tl.maximum(run_max, v)
            run_sum = run_sum * tl.exp(run_max - new_max) + tl.exp(v - new_max)
            run_max = new_max
        row_max = tl.max(run_max, axis=0)
        total = tl.sum(run_sum * tl.exp(run_max - row_max), axis=0)
        log_total = tl.log(total)
        inv_total = 1.0 / total
        for k in range(0, n, BLOCK):
            cols = k + tl.arange(0, BLOCK)
            inside = cols < n
            v = tl.load(x_ptr + base + cols, mask=inside, other=0.0).to(tl.float32)
            if LOG:
                out = v - row_max - log_total
            else:
                out = tl.exp(v - row_max) * inv_total
            tl.store(y_ptr + base + cols, out.to(y_ptr.dtype.element_ty), mask=inside)

    @triton.jit
    def layer_norm_row_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n, eps, BLOCK: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * n
        cols = tl.arange(0, BLOCK)
        inside = cols < n
        v = tl.load(x_ptr + base + cols, mask=inside, other=0.0).to(tl.float32)
        mean = tl.sum(v, axis=0) / n
        centred = tl.where(inside, v - mean, 0.0)
        var = tl.sum(centred * centred, axis=0) / n
        rstd = 1.0 / tl.sqrt(var + eps)
        w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        out = centred * rstd * w + b
        tl.store(y_ptr + base + cols, out.to(y_ptr.dtype.element_ty), mask=inside)

    @triton.jit
    def rms_norm_row_kernel(x_ptr, w_ptr, y_ptr, n, eps, BLOCK: tl.constexpr, SILU: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * n
        cols = tl.arange(0, BLOCK)
        inside = cols < n
        v = tl.load(x_ptr + base + cols, mask=inside, other=0.0).to(tl.float32)
        rrms = 1.0 / tl.sqrt(tl.sum(v * v, axis=0) / n + eps)
        w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        out = v * rrms * w
        if SILU:
            out = out / (1.0 + tl.exp(-out))  # silu(t) = t * sigmoid(t), in f32, no rounding in between
        tl.store(y_ptr + base + cols, out.to(y_ptr.dtype.element_ty), mask=inside)


    @triton.jit
    def norm_backward_kernel(x_ptr, w_ptr, dy_ptr, dx_ptr, pw_ptr, pb_ptr, rows, n, eps,
                             BLOCK: tl.constexpr, RMS: tl.constexpr):
        # rows pid, pid + P, ...: dx per row; dw (and db) partial sums in registers
        pid = tl.program_id(0)
        progs = tl.num_programs(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        acc_w = tl.zeros([BLOCK], dtype=tl.float32)
        acc_b = tl.zeros([BLOCK], dtype=tl.float32)
        for row in range(pid, rows, progs):
            x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
            if RMS:
                xc = x
            else:
                xc = tl.where(mask, x - tl.sum(x, axis=0) / n, 0.0)
            r = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=0) / n + eps)
            xn = xc * r
            gw = dy * w
            proj = xn * (tl.sum(gw * xn, axis=0) / n)
            if RMS:
                dx = r * (gw - proj)
            else:
                dx = r * (gw - tl.sum(gw, axis=0) / n - proj)
            tl.store(dx_ptr + row * n + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
            acc_w += dy * xn
            acc_b += dy
        tl.store(pw_ptr + pid * n + cols, acc_w, mask=mask)
        tl.store(pb_ptr + pid * n + cols, acc_b, mask=mask)

    @triton.jit
    def softmax_backward_kernel(y_ptr, dy_ptr, dx_ptr, n, BLOCK: tl.constexpr, LOG: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n
        y = tl.load(y_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
        if LOG:
            dx = dy - tl.exp(y) * tl.sum(dy, axis=0)
        else:
            dx = y * (dy - tl.sum(dy * y, axis=0))
        tl.store(dx_ptr + row * n + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def matmul_tile_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K,
                           s_ab, s_am, s_ak, s_bb, s_bk, s_bn, s_cb, s_cm, s_cn,
                           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, BAND: tl.constexpr,
                           EVEN: tl.constexpr, IEEE: tl.constexpr, BIAS_GELU: tl.constexpr):
        # One BM x BN tile of C = A x B per program (axis 1: the batch), K walked
        # in BK steps with f32 accumulation. Programs are numbered down bands of
        # BAND tile-rows, so programs running together share B's tile-columns
        # and a band of A in L2.
        pid = tl.program_id(0)
        tiles_m = tl.cdiv(M, BM)
        tiles_n = tl.cdiv(N, BN)
        band = pid // (BAND * tiles_n)
        band_rows = tl.minimum(tiles_m - band * BAND, BAND)
        within = pid - band * BAND * tiles_n
        tm = band * BAND + within % band_rows
        tn = within // band_rows
        rows = tm * BM + tl.arange(0, BM)
        cols = tn * BN + tl.arange(0, BN)
        ks = tl.arange(0, BK)
        z = tl.program_id(1).to(tl.int64)
        a_tile = a_ptr + z * s_ab + rows[:, None] * s_am + ks[None, :] * s_ak
        b_tile = b_ptr + z * s_bb + ks[:, None] * s_bk + cols[None, :] * s_bn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            if EVEN:
                x = tl.load(a_tile)
                y = tl.load(b_tile)
            else:
                x = tl.load(a_tile, mask=(rows[:, None] < M) & (ks[None, :] + k0 < K), other=0.0)
                y = tl.load(b_tile, mask=(ks[:, None] + k0 < K) & (cols[None, :] < N), other=0.0)
            if IEEE:
                acc = tl.dot(x, y, acc, input_precision="ieee")
            else:
                acc = tl.dot(x, y, acc)
            a_tile += BK * s_ak
            b_tile += BK * s_bk
        if BIAS_GELU:  # gelu(c + bias), exact erf form, in f32, rounded once on store
            v = acc + tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
            acc = 0.5 * v * (1.0 + tl.math.erf(v * 0.7071067811865476))
        out = c_ptr + z * s_cb + rows[:, None] * s_cm + cols[None, :] * s_cn
        tl.store(out, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


# Fixed Triton matmul configs (no autotune): (BM, BN, BK, BAND, num_warps, num_stages).
TRITON_MATMUL_CONFIGS = {
    "narrow": [(128, 256, 64, 8, 8, 3), (128, 128, 64, 8, 4, 4)],  # f16 / bf16 operands
    "f32": [(128, 128, 32, 8, 8, 3), (64, 128, 32, 8, 4, 4)],      # f32, input_precision="ieee"
}


def row_warps(block):
    """num_warps for a one-row-per-program kernel with `block` lanes."""
    return 16 if block >= 4096 else 8 if block >= 2048 else 4


# ----------------------------------------------------------------------------- CPU (numpy)

def numpy_reduce_rows(case, reps):
    import numpy as np
    if case.get("dtype", "f32") not in ("f32", "f64"):
        return []  # numpy has no bf16; f16 reductions would be a different computation
    dt = np.float32 if case.get("dtype", "f32") == "f32" else np.float64
    x = np.random.default_rng(7).uniform(-1, 1, case["shape"]).astype(dt)
    axes = tuple(case["axes"]) if "axes" in case else None
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}[case["kind"]]
    row = measured("numpy", np.__version__, "end_to_end", reps, lambda: host_median_ns(lambda: fn(x, axis=axes), reps))
    return [row] if row else []


def numpy_op(op, x, w, b, axis, eps):
    """The anchor op in numpy, f32 in and out (weights broadcast over the last axis)."""
    import numpy as np
    if op in ("softmax", "log_softmax"):
        shifted = x - x.max(axis=axis, keepdims=True)
        if op == "log_softmax":
            return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        e = np.exp(shifted)
        e /= e.sum(axis=axis, keepdims=True)
        return e
    if op == "sum_sq":
        if x.ndim == 2 and axis in (1, -1):
            return np.einsum("ij,ij->i", x, x)
        return (x * x).sum(axis=axis)
    n = x.shape[-1]
    if op == "layer_norm":
        centred = x - x.mean(axis=-1, keepdims=True)
        var = np.einsum("...j,...j->...", centred, centred)[..., None] / np.float32(n)
        return centred / np.sqrt(var + np.float32(eps)) * w + b
    if op in ("rms_norm", "rms_norm_silu"):
        ms = np.einsum("...j,...j->...", x, x)[..., None] / np.float32(n)
        y = x / np.sqrt(ms + np.float32(eps)) * w
        if op == "rms_norm_silu":
            y /= 1 + np.exp(-y)
        return y
    raise ValueError(f"no numpy anchor for op '{op}'")


def numpy_grad_op(op, x, w, dy, axis, eps):
    """The backward of a row op in numpy, f32 (x is the forward result y for softmax grads)."""
    import numpy as np
    if op == "softmax_grad":
        return x * (dy - np.einsum("ij,ij->i", dy, x)[:, None]) if x.ndim == 2 else \
            x * (dy - (dy * x).sum(axis=axis, keepdims=True))
    if op == "log_softmax_grad":
        return dy - np.exp(x) * dy.sum(axis=axis, keepdims=True)
    n = np.float32(x.shape[-1])
    xc = x - x.mean(axis=-1, keepdims=True) if op == "layer_norm_grad" else x
    r = 1 / np.sqrt(np.einsum("...j,...j->...", xc, xc)[..., None] / n + np.float32(eps))
    xn = xc * r
    gw = dy * w
    proj = xn * (np.einsum("...j,...j->...", gw, xn)[..., None] / n)
    dx = r * ((gw - gw.mean(axis=-1, keepdims=True) - proj) if op == "layer_norm_grad" else (gw - proj))
    flat_dy, flat_xn = dy.reshape(-1, dy.shape[-1]), xn.reshape(-1, dy.shape[-1])
    dw = np.einsum("ij,ij->j", flat_dy, flat_xn)
    return (dx, dw, flat_dy.sum(axis=0)) if op == "layer_norm_grad" else (dx, dw)


def numpy_program_rows(anchor, reps):
    import numpy as np
    op = anchor["op"]
    if anchor.get("dtype", "f32") != "f32":
        return []  # numpy has no bf16
    rng = np.random.default_rng(7)
    shape = anchor["shape"]
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    w = rng.uniform(0.5, 1.5, shape[-1]).astype(np.float32)
    b = rng.uniform(-1, 1, shape[-1]).astype(np.float32)
    axis, eps = anchor.get("axis", -1), anchor.get("eps", 1e-5)
    if op.endswith("_grad"):
        dy = rng.uniform(-1, 1, shape).astype(np.float32)
        if op in ("softmax_grad", "log_softmax_grad"):
            x = numpy_op(op[:-len("_grad")], x, w, b, axis, eps).astype(np.float32)  # the saved result y
        fn = lambda: numpy_grad_op(op, x, w, dy, axis, eps)  # noqa: E731
    else:
        fn = lambda: numpy_op(op, x, w, b, axis, eps)  # noqa: E731
    row = measured("numpy", np.__version__, "end_to_end", reps, lambda: host_median_ns(fn, reps))
    return [row] if row else []


# ----------------------------------------------------------------------------- CUDA (torch, Triton)

def cuda_reduce_rows(case, reps):
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

    rows = [measured("torch", torch.__version__, "device_event", reps, lambda: cuda_event_median_ns(fn, reps))]
    shape = case["shape"]
    if kind == "sum" and dt == torch.float32 and len(shape) == 2 and case.get("axes") in ([1], [-1]):
        if triton is None:
            warn("triton is not importable: no triton row")
        else:
            y = torch.empty(shape[0], device="cuda")
            block = min(4096, triton.next_power_of_2(shape[1]))
            launch = lambda: row_sum_kernel[(shape[0],)](x, y, shape[1], BLOCK=block, num_warps=8)  # noqa: E731
            rows.append(measured("triton", triton.__version__, "device_event", reps,
                                 lambda: cuda_event_median_ns(launch, reps)))
    return [r for r in rows if r]


def torch_op(op, x, w, b, axis, eps):
    """A zero-argument callable running the anchor op with torch."""
    import torch
    import torch.nn.functional as F
    n = x.shape[-1]
    if op == "softmax":
        return lambda: torch.softmax(x, dim=axis)
    if op == "log_softmax":
        return lambda: torch.log_softmax(x, dim=axis)
    if op == "layer_norm":
        return lambda: F.layer_norm(x, (n,), w, b, eps)
    if op == "rms_norm":
        return lambda: F.rms_norm(x, (n,), w, eps)
    if op == "rms_norm_silu":
        return lambda: F.silu(F.rms_norm(x, (n,), w, eps))
    if op == "sum_sq":
        return lambda: (x * x).sum(axis)
    raise ValueError(f"no torch anchor for op '{op}'")


def triton_op(op, x, w, b, axis, eps):
    """A zero-argument callable launching this file's Triton kernel for the op on
    contiguous x, with its output tensor; or None where there is no such kernel."""
    import torch
    ndim = x.dim()
    if not x.is_contiguous() or axis not in (-1, ndim - 1):
        return None  # the kernels reduce the last, contiguous axis
    n = x.shape[-1]
    rows = x.numel() // n
    if op in ("softmax", "log_softmax"):
        y = torch.empty_like(x)
        log = op == "log_softmax"
        if n <= TRITON_ONE_ROW_MAX:
            block = triton.next_power_of_2(n)
            return (lambda: softmax_row_kernel[(rows,)](x, y, n, BLOCK=block, LOG=log, num_warps=row_warps(block))), y
        return (lambda: softmax_online_kernel[(rows,)](x, y, n, BLOCK=4096, LOG=log, num_warps=8)), y
    if op == "sum_sq":
        y = torch.empty(x.shape[:-1], device=x.device, dtype=x.dtype)
        block = min(4096, triton.next_power_of_2(n))
        return (lambda: row_sum_sq_kernel[(rows,)](x, y, n, BLOCK=block, num_warps=8)), y
    if n > TRITON_ONE_ROW_MAX:
        return None
    block = triton.next_power_of_2(n)
    y = torch.empty_like(x)
    if op == "layer_norm":
        return (lambda: layer_norm_row_kernel[(rows,)](x, w, b, y, n, eps, BLOCK=block, num_warps=row_warps(block))), y
    if op in ("rms_norm", "rms_norm_silu"):
        silu = op == "rms_norm_silu"
        return (lambda: rms_norm_row_kernel[(rows,)](x, w, y, n, eps, BLOCK=block, SILU=silu,
                                                     num_warps=row_warps(block))), y
    return None


def check_against(got, ref, dtype_name):
    """Raise if the Triton result is far from torch's (a wrong kernel's time is no anchor)."""
    tol = 2e-2 if dtype_name in ("bf16", "f16") else 1e-4  # relative to the largest |ref|
    err = (got.float() - ref.float()).abs().max().item()
    bound = tol * max(ref.float().abs().max().item(), 1e-30)
    if not (err <= bound):  # also catches NaN
        raise RuntimeError(f"result differs from torch: max abs err {err:.3g} > {bound:.3g}")


def cuda_program_rows(anchor, reps):
    import torch
    op = anchor["op"]
    dtype_name = anchor.get("dtype", "f32")
    dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dtype_name]
    shape = anchor["shape"]
    axis, eps = anchor.get("axis", -1), float(anchor.get("eps", 1e-5))
    x = torch.rand(shape, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dt)
    w = (torch.rand(shape[-1], device="cuda", dtype=torch.float32) + 0.5).to(dt)
    b = torch.rand(shape[-1], device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dt)
    ref_fn = torch_op(op, x, w, b, axis, eps)
    rows = [measured("torch", torch.__version__, "device_event", reps, lambda: cuda_event_median_ns(ref_fn, reps))]

    if triton is None:
        warn("triton is not importable: no triton row")
    else:
        def time_triton():
            made = triton_op(op, x, w, b, axis, eps)
            if made is None:
                raise NotImplementedError(f"no Triton kernel here for {op} {shape} axis {axis}")
            launch, y = made
            launch()
            check_against(y, ref_fn(), dtype_name)
            return cuda_event_median_ns(launch, reps)
        rows.append(measured("triton", triton.__version__, "device_event", reps, time_triton))
    return [r for r in rows if r]


def cuda_grad_rows(anchor, reps):
    """The backward of a row op: torch's autograd backward and this file's Triton kernels."""
    import torch
    import torch.nn.functional as F
    op = anchor["op"]
    dtype_name = anchor.get("dtype", "f32")
    dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dtype_name]
    shape = anchor["shape"]
    axis, eps = anchor.get("axis", -1), float(anchor.get("eps", 1e-5))
    n = shape[-1]
    rows_n = 1
    for d in shape[:-1]:
        rows_n *= d
    x = torch.rand(shape, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dt).requires_grad_()
    w = (torch.rand(n, device="cuda", dtype=torch.float32) + 0.5).to(dt).requires_grad_()
    b = torch.rand(n, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dt).requires_grad_()
    dy = torch.rand(shape, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dt)
    if op == "layer_norm_grad":
        y, wrt = F.layer_norm(x, (n,), w, b, eps), (x, w, b)
    elif op == "rms_norm_grad":
        y, wrt = F.rms_norm(x, (n,), w, eps), (x, w)
    elif op in ("softmax_grad", "log_softmax_grad"):
        y, wrt = (torch.softmax if op == "softmax_grad" else torch.log_softmax)(x, dim=axis), (x,)
    else:
        raise ValueError(f"no torch anchor for op '{op}'")
    backward = lambda: torch.autograd.grad(y, wrt, dy, retain_graph=True)  # noqa: E731
    rows = [measured("torch", torch.__version__, "device_event", reps, lambda: cuda_event_median_ns(backward, reps))]

    def time_triton():
        if n > TRITON_ONE_ROW_MAX or axis not in (-1, len(shape) - 1):
            raise NotImplementedError(f"no Triton kernel here for {op} {shape} axis {axis}")
        block = triton.next_power_of_2(n)
        ref = backward()
        dx = torch.empty_like(dy)
        if op in ("softmax_grad", "log_softmax_grad"):
            saved = y.detach()
            log = op == "log_softmax_grad"
            launch = lambda: softmax_backward_kernel[(rows_n,)](saved, dy, dx, n, BLOCK=block, LOG=log,  # noqa: E731
                                                                num_warps=row_warps(block))
            launch()
            check_against(dx, ref[0], dtype_name)
            return cuda_event_median_ns(launch, reps)
        progs = min(rows_n, 4 * torch.cuda.get_device_properties(0).multi_processor_count)
        pw = torch.empty(progs, n, device="cuda", dtype=torch.float32)
        pb = torch.empty_like(pw)
        xd, wd = x.detach(), w.detach()
        rms = op == "rms_norm_grad"

        def launch():
            norm_backward_kernel[(progs,)](xd, wd, dy, dx, pw, pb, rows_n, n, eps, BLOCK=block, RMS=rms,
                                           num_warps=row_warps(block))
            dw = pw.sum(0).to(dt)
            return dw if rms else (dw, pb.sum(0).to(dt))
        out = launch()
        check_against(dx, ref[0], dtype_name)
        check_against(out if rms else out[0], ref[1], dtype_name)
        return cuda_event_median_ns(launch, reps)

    if triton is None:
        warn("triton is not importable: no triton row")
    else:
        rows.append(measured("triton", triton.__version__, "device_event", reps, time_triton))
    return [r for r in rows if r]


# ----------------------------------------------------------------------------- matmul

def matmul_layout(anchor):
    """Stored shapes of A and B for a matmul anchor, and the fields it uses."""
    m, n, k, batch = int(anchor["m"]), int(anchor["n"]), int(anchor["k"]), int(anchor.get("batch", 1))
    ta, tb = bool(anchor.get("transpose_a", False)), bool(anchor.get("transpose_b", False))
    lead = [batch] if batch > 1 else []
    a_shape = lead + ([k, m] if ta else [m, k])
    b_shape = lead + ([n, k] if tb else [k, n])
    epilogue = anchor.get("epilogue", "none")
    if epilogue not in ("none", "bias_gelu"):
        raise ValueError(f"unknown matmul epilogue '{epilogue}' (none, bias_gelu)")
    return m, n, k, batch, ta, tb, a_shape, b_shape, epilogue


def numpy_gelu(x):
    """Exact (erf) gelu in f32 numpy: erf by Abramowitz-Stegun 7.1.26 (|err| < 1.5e-7)."""
    import numpy as np
    z = np.abs(x) * np.float32(0.7071067811865476)
    t = np.float32(1) / (np.float32(1) + np.float32(0.3275911) * z)
    poly = t * (np.float32(0.254829592) + t * (np.float32(-0.284496736) + t * (np.float32(1.421413741) + t * (
        np.float32(-1.453152027) + t * np.float32(1.061405429)))))
    erf_abs = np.float32(1) - poly * np.exp(-z * z)
    return np.float32(0.5) * x * (np.float32(1) + np.copysign(erf_abs, x))


def numpy_matmul_rows(anchor, reps):
    import numpy as np
    m, n, k, batch, ta, tb, a_shape, b_shape, epilogue = matmul_layout(anchor)
    if anchor.get("dtype", "f32") != "f32" or anchor.get("out_dtype", "f32") != "f32":
        return []  # numpy's f16 matmul is not BLAS, and numpy has no bf16
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, a_shape).astype(np.float32)
    b = rng.uniform(-1, 1, b_shape).astype(np.float32)
    bias = rng.uniform(-1, 1, n).astype(np.float32)
    op_a = np.swapaxes(a, -1, -2) if ta else a  # views: BLAS reads them transposed
    op_b = np.swapaxes(b, -1, -2) if tb else b
    mm = lambda: op_a @ op_b  # noqa: E731
    blas = "numpy a @ b (bundled OpenBLAS, every core)"
    rows = []
    if epilogue == "none":
        rows.append((measured("numpy", np.__version__, "end_to_end", reps, lambda: host_median_ns(mm, reps)), blas))
    else:
        fn = lambda: numpy_gelu(mm() + bias)  # noqa: E731
        rows.append((measured("numpy", np.__version__, "end_to_end", reps, lambda: host_median_ns(fn, reps)),
                     blas + ", then a separate gelu(c + bias) (unfused)"))
        rows.append((measured("numpy_matmul_only", np.__version__, "end_to_end", reps,
                              lambda: host_median_ns(mm, reps)), blas + ", without the epilogue"))
    return [dict(r, note=note) for r, note in rows if r]


def triton_matmul(op_a, op_b, bias, dtype_name, epilogue, config):
    """A zero-argument launch of this file's Triton matmul on (possibly transposed)
    views, and its output tensor."""
    import torch
    bm, bn, bk, band, warps, stages = config
    batched = op_a.dim() == 3
    m, k = op_a.shape[-2], op_a.shape[-1]
    n = op_b.shape[-1]
    batch = op_a.shape[0] if batched else 1
    c = torch.empty((batch, m, n) if batched else (m, n), device=op_a.device, dtype=op_a.dtype)
    sa = (op_a.stride(0) if batched else 0, op_a.stride(-2), op_a.stride(-1))
    sb = (op_b.stride(0) if batched else 0, op_b.stride(-2), op_b.stride(-1))
    sc = (c.stride(0) if batched else 0, c.stride(-2), c.stride(-1))
    even = m % bm == 0 and n % bn == 0 and k % bk == 0
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn), batch)
    bias_arg = bias if epilogue == "bias_gelu" else c
    launch = lambda: matmul_tile_kernel[grid](  # noqa: E731
        op_a, op_b, c, bias_arg, m, n, k, *sa, *sb, *sc, BM=bm, BN=bn, BK=bk, BAND=band, EVEN=even,
        IEEE=dtype_name == "f32", BIAS_GELU=epilogue == "bias_gelu", num_warps=warps, num_stages=stages)
    return launch, c


def cuda_matmul_rows(anchor, reps):
    import torch
    import torch.nn.functional as F
    m, n, k, batch, ta, tb, a_shape, b_shape, epilogue = matmul_layout(anchor)
    dtype_name = anchor.get("dtype", "f32")
    if anchor.get("out_dtype", dtype_name) != dtype_name:
        warn(f"torch.matmul returns its operands' dtype; no anchor for {dtype_name} -> {anchor['out_dtype']}")
        return []
    dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dtype_name]
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 stays f32 FMA on cuBLAS (no TF32)
    gen = lambda shape: torch.rand(shape, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dt)  # noqa: E731
    a, b, bias = gen(a_shape), gen(b_shape), gen([n])
    op_a = a.transpose(-1, -2) if ta else a
    op_b = b.transpose(-1, -2) if tb else b
    lib = "cuBLAS via torch.matmul" + (", torch.backends.cuda.matmul.allow_tf32 = False (no TF32)"
                                       if dtype_name == "f32" else "")
    mm = lambda: torch.matmul(op_a, op_b)  # noqa: E731
    rows = []
    if epilogue == "none":
        ref_fn = mm
        rows.append((measured("torch", torch.__version__, "device_event", reps,
                              lambda: cuda_event_median_ns(mm, reps)), lib))
    else:
        ref_fn = lambda: F.gelu(mm() + bias)  # noqa: E731
        rows.append((measured("torch", torch.__version__, "device_event", reps,
                              lambda: cuda_event_median_ns(ref_fn, reps)),
                     lib + ", then a separate F.gelu(c + bias) (unfused baseline)"))
        if batch == 1:
            addmm = lambda: F.gelu(torch.addmm(bias, op_a, op_b))  # noqa: E731
            rows.append((measured("torch_addmm_gelu", torch.__version__, "device_event", reps,
                                  lambda: cuda_event_median_ns(addmm, reps)),
                         "torch.addmm(bias, a, b) (bias in the GEMM), then F.gelu" +
                         (", allow_tf32 = False" if dtype_name == "f32" else "")))
        rows.append((measured("torch_matmul_only", torch.__version__, "device_event", reps,
                              lambda: cuda_event_median_ns(mm, reps)), lib + ", without the epilogue"))

    if triton is None:
        warn("triton is not importable: no triton row")
    else:
        def time_triton():
            ref = ref_fn()
            best, best_cfg, errors = None, None, []
            for cfg in TRITON_MATMUL_CONFIGS["f32" if dtype_name == "f32" else "narrow"]:
                try:
                    launch, c = triton_matmul(op_a, op_b, bias, dtype_name, epilogue, cfg)
                    launch()
                    check_against(c, ref, dtype_name)
                    t = cuda_event_median_ns(launch, reps)
                except Exception as e:  # noqa: BLE001 - a config that fails is dropped, with its reason
                    errors.append(f"config {cfg}: {type(e).__name__}: {e}")
                    continue
                if best is None or t < best:
                    best, best_cfg = t, cfg
            for e in errors:
                warn(f"triton matmul {e}")
            if best is None:
                raise RuntimeError("no Triton config ran and matched torch")
            time_triton.config = best_cfg
            return best
        row = measured("triton", triton.__version__, "device_event", reps, time_triton)
        if row:
            cfg = getattr(time_triton, "config", None)
            rows.append((row, "this file's tiled tl.dot kernel, epilogue fused, no autotune; faster of "
                              f"{len(TRITON_MATMUL_CONFIGS['f32' if dtype_name == 'f32' else 'narrow'])} fixed "
                              f"configs: (BM, BN, BK, band, warps, stages) = {cfg}" +
                              (", input_precision=\"ieee\" (no TF32)" if dtype_name == "f32" else "")))
    return [dict(r, note=note) for r, note in rows if r]


def attention_fields(anchor):
    return (int(anchor["b"]), int(anchor["h"]), int(anchor["hkv"]), int(anchor["sq"]), int(anchor["sk"]),
            int(anchor["d"]), bool(anchor.get("causal", False)), anchor.get("dtype", "f32"))


def attention_layout(h, hkv, sq, sk, d):
    """The causal visibility [sq, sk] (aligned to the end), the f32 scale 1/sqrt(d), and a function giving
    k or v one head per query head (grouped-query heads repeated)."""
    import numpy as np
    group = h // hkv
    visible = np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq)
    return visible, np.float32(1 / np.sqrt(d)), lambda x: np.repeat(x, group, axis=1) if group > 1 else x


def numpy_attention_rows(anchor, reps):
    import numpy as np
    b, h, hkv, sq, sk, d, causal, dtype_name = attention_fields(anchor)
    if dtype_name != "f32":
        return []  # numpy has no bf16, and its f16 matmul is not BLAS
    rng = np.random.default_rng(7)
    q = rng.standard_normal((b, h, sq, d), dtype=np.float32)
    k = rng.standard_normal((b, hkv, sk, d), dtype=np.float32)
    v = rng.standard_normal((b, hkv, sk, d), dtype=np.float32)
    visible, scale, expand = attention_layout(h, hkv, sq, sk, d)

    def fn():
        kk, vv = expand(k), expand(v)
        s = (q @ np.swapaxes(kk, -1, -2)) * scale
        if causal:
            s = np.where(visible, s, np.float32(-np.inf))
        s -= s.max(-1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(-1, keepdims=True)
        return p @ vv
    row = measured("numpy", np.__version__, "end_to_end", reps, lambda: host_median_ns(fn, reps))
    return [dict(row, note="numpy f32: s = q @ k^T * scale, " + ("np.where causal mask, " if causal else "") +
                 "max-subtracted softmax, p @ v (bundled OpenBLAS, every core)")] if row else []


def numpy_attention_grad_rows(anchor, reps):
    import numpy as np
    b, h, hkv, sq, sk, d, causal, dtype_name = attention_fields(anchor)
    if dtype_name != "f32":
        return []
    rng = np.random.default_rng(7)
    q, o, do = (rng.standard_normal((b, h, sq, d), dtype=np.float32) for _ in range(3))
    k, v = (rng.standard_normal((b, hkv, sk, d), dtype=np.float32) for _ in range(2))
    lse = rng.uniform(7, 9, (b, h, sq, 1)).astype(np.float32)
    group = h // hkv
    visible, scale, expand = attention_layout(h, hkv, sq, sk, d)

    def fn():
        kk, vv = expand(k), expand(v)
        p = np.exp((q @ np.swapaxes(kk, -1, -2)) * scale - lse)
        if causal:
            p = np.where(visible, p, np.float32(0))
        dv = np.swapaxes(p, -1, -2) @ do
        ds = p * (do @ np.swapaxes(vv, -1, -2) - (do * o).sum(-1, keepdims=True))
        dq = (ds @ kk) * scale
        dk = (np.swapaxes(ds, -1, -2) @ q) * scale
        if group > 1:
            dk = dk.reshape(b, hkv, group, sk, d).sum(2)
            dv = dv.reshape(b, hkv, group, sk, d).sum(2)
        return dq, dk, dv
    row = measured("numpy", np.__version__, "end_to_end", reps, lambda: host_median_ns(fn, reps))
    return [dict(row, note="numpy f32: p = exp(q @ k^T * scale - lse)" + (" masked by np.where" if causal else "") +
                 ", dv = p^T @ do, ds = p * (do @ v^T - rowsum(do * o)), dq = ds @ k * scale, "
                 "dk = ds^T @ q * scale (bundled OpenBLAS, every core)")] if row else []


def cuda_attention_rows(anchor, reps):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b, h, hkv, sq, sk, d, causal, dtype_name = attention_fields(anchor)
    dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dtype_name]
    gen = torch.Generator(device="cuda").manual_seed(7)
    q = torch.randn(b, h, sq, d, device="cuda", generator=gen).to(dt)
    k = torch.randn(b, hkv, sk, d, device="cuda", generator=gen).to(dt)
    v = torch.randn(b, hkv, sk, d, device="cuda", generator=gen).to(dt)
    gqa = h != hkv
    # the reference on a few query heads in f32, the math backend (no flash, no cudnn)
    heads = min(h, 2 * (h // hkv))
    with sdpa_kernel([SDPBackend.MATH]):
        ref = F.scaled_dot_product_attention(q[:, :heads].float(), k[:, :heads // (h // hkv)].float(),
                                             v[:, :heads // (h // hkv)].float(), is_causal=causal, enable_gqa=gqa)
    rows = []
    cold = anchor.get("cold_l2", False)
    before = l2_evictor() if cold else None
    for name, backend, note in (("torch_flash", SDPBackend.FLASH_ATTENTION, "FlashAttention-2"),
                                ("torch_cudnn", SDPBackend.CUDNN_ATTENTION, "cuDNN")):
        def fn(backend=backend):
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

        def timed(fn=fn):
            out = fn()
            check_against(out[:, :heads].float(), ref, dtype_name)
            return cuda_event_median_ns(fn, reps, before=before)
        row = measured(name, torch.__version__, "device_event", reps, timed)
        if row:
            rows.append(dict(row, note=f"torch.nn.functional.scaled_dot_product_attention, {note} backend only"
                                       f" (sdpa_kernel), is_causal={causal}" + (", enable_gqa=True" if gqa else "") +
                                       (", L2 written over before each call" if cold else "")))
    return rows


def cuda_attention_grad_rows(anchor, reps):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b, h, hkv, sq, sk, d, causal, dtype_name = attention_fields(anchor)
    dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dtype_name]
    gen = torch.Generator(device="cuda").manual_seed(7)
    q = torch.randn(b, h, sq, d, device="cuda", generator=gen).to(dt).requires_grad_()
    k = torch.randn(b, hkv, sk, d, device="cuda", generator=gen).to(dt).requires_grad_()
    v = torch.randn(b, hkv, sk, d, device="cuda", generator=gen).to(dt).requires_grad_()
    do = torch.randn(b, h, sq, d, device="cuda", generator=gen).to(dt)
    gqa, group = h != hkv, h // hkv
    # the reference: the math backend in f32 on the first kv head's query heads
    leaves = [t[:, :n].detach().float().requires_grad_() for t, n in ((q, group), (k, 1), (v, 1))]
    with sdpa_kernel([SDPBackend.MATH]):
        o_ref = F.scaled_dot_product_attention(*leaves, is_causal=causal, enable_gqa=gqa)
    ref = torch.autograd.grad(o_ref, leaves, do[:, :group].float())
    rows = []
    for name, backend, note in (("torch_flash", SDPBackend.FLASH_ATTENTION, "FlashAttention-2"),
                                ("torch_cudnn", SDPBackend.CUDNN_ATTENTION, "cuDNN")):
        def timed(backend=backend):
            with sdpa_kernel([backend]):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

            def fn():
                return torch.autograd.grad(o, (q, k, v), do, retain_graph=True)
            got = fn()
            for g, r, n in zip(got, ref, (group, 1, 1)):
                # the first kv head's dk, dv sum over all its query heads: the reference has them all
                check_against(g[:, :n].float(), r, dtype_name)
            return cuda_event_median_ns(fn, reps)
        row = measured(name, torch.__version__, "device_event", reps, timed)
        if row:
            rows.append(dict(row, note=f"the backward of torch.nn.functional.scaled_dot_product_attention, {note} "
                                       f"backend only (sdpa_kernel), is_causal={causal}"
                                       + (", enable_gqa=True" if gqa else "")))
    return rows


def numpy_llama_rows(anchor, reps):
    import importlib.util
    import os

    import numpy as np
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "llama_layer.py")
    spec = importlib.util.spec_from_file_location("llama_layer", path)
    layer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layer)
    size = anchor.get("size", "cpu")
    _, _, heads, kv_heads, _, _ = layer.SIZES[size]
    arrays = layer.weights(size, np.random.default_rng(0))
    fn = lambda: layer.reference(*arrays, heads=heads, kv_heads=kv_heads, dtype=np.float32)  # noqa: E731
    row = measured("numpy", np.__version__, "end_to_end", reps, lambda: host_median_ns(fn, reps))
    return [dict(row, note="examples/llama_layer.py reference() in float32 numpy (einsum attention over "
                           "repeated KV heads, np.where causal mask; bundled OpenBLAS, every core)")] if row else []


def cuda_llama_rows(anchor, reps):
    import os

    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from llama_torch import layer_inputs, torch_layer
    args = layer_inputs(int(anchor.get("seq", 2048)), int(anchor.get("batch", 1)))
    note = ("bench/llama_torch.py's layer (SDPA attention, its fastest backend), bf16, random weights; "
            "CUDA events around each call")
    rows = []
    with torch.no_grad():
        want = torch_layer(*args)
        eager = lambda: torch_layer(*args)  # noqa: E731
        row = measured("torch", torch.__version__, "device_event", reps, lambda: cuda_event_median_ns(eager, reps))
        if row:
            rows.append(dict(row, note="eager: " + note))
        compiled = torch.compile(torch_layer)

        def time_compiled():
            check_against(compiled(*args), want, "bf16")
            return cuda_event_median_ns(lambda: compiled(*args), reps)
        row = measured("torch.compile", torch.__version__, "device_event", reps, time_compiled)
        if row:
            rows.append(dict(row, note="torch.compile (default mode), checked against eager: " + note))
    return rows


# ----------------------------------------------------------------------------- driver

def case_rows(case, target, reps):
    if "program" in case:
        if "anchor" not in case:
            return None  # nothing to compare a bare program with
        if case["anchor"].get("op") == "llama_layer":
            return numpy_llama_rows(case["anchor"], reps) if target == "cpu" else cuda_llama_rows(case["anchor"], reps)
        if case["anchor"].get("op") == "attention":
            return numpy_attention_rows(case["anchor"], reps) if target == "cpu" else \
                cuda_attention_rows(case["anchor"], reps)
        if case["anchor"].get("op") == "attention_grad":
            return numpy_attention_grad_rows(case["anchor"], reps) if target == "cpu" else \
                cuda_attention_grad_rows(case["anchor"], reps)
        if case["anchor"].get("op") == "matmul":
            return numpy_matmul_rows(case["anchor"], reps) if target == "cpu" else cuda_matmul_rows(case["anchor"], reps)
        if case["anchor"].get("op", "").endswith("_grad") and target == "cuda":
            return cuda_grad_rows(case["anchor"], reps)
        return numpy_program_rows(case["anchor"], reps) if target == "cpu" else cuda_program_rows(case["anchor"], reps)
    return numpy_reduce_rows(case, reps) if target == "cpu" else cuda_reduce_rows(case, reps)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("spec")
    ap.add_argument("--target", choices=["cpu", "cuda"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--only", help="anchor one case (as `tessera bench --only`)")
    args = ap.parse_args()
    with open(args.spec) as f:
        spec = json.load(f)
    rows, tools = {}, {}
    for case in spec["cases"]:
        if args.only and case.get("name") != args.only:
            continue
        try:
            r = case_rows(case, args.target, args.reps)
        except Exception as e:  # noqa: BLE001 - e.g. out of memory setting up the inputs
            warn(f"case {case.get('name')}: no anchors: {type(e).__name__}: {e}")
            r = []
        finally:
            if args.target == "cuda":
                try:
                    import torch
                    torch.cuda.empty_cache()
                except Exception:  # noqa: BLE001
                    pass
        if r is None:
            print(case["name"], "skipped (program case without an \"anchor\")", file=sys.stderr)
            continue
        rows[case["name"]] = r
        for a in r:
            tools[a["anchor"]] = a["version"]
        print(case["name"], ", ".join(f"{a['anchor']} {a['median_ns'] / 1e3:.1f} us" for a in r), file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump({"tools": tools, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
