# The experiment behind the rows schedule's prefetch_rows: hand-edited
# variants of Tessera's emitted row kernels (L2 bulk prefetch of the row D
# programs ahead; a persistent grid-stride loop with and without it;
# __launch_bounds__(256, 8)), compiled by NVRTC through CuPy and timed with
# CUDA events (median of 30) next to the unedited kernel, outputs compared
# bitwise. An experiment, not the product. On the GPU machine:
#   python3 bench/rows_l2_prefetch_variants.py DIR
# DIR holds NAME.cu for each case below: the kernel source of
# `tessera compile bench/programs/NAME.tsr --target cuda --emit target`.
# Result at 65f9fd9: cuda/raw/rows-l2-prefetch-variants-h200-65f9fd9.txt.
import re, sys, cupy as cp, numpy as np
D = sys.argv[1]
SMS = 132
def variants(src, rows, row_elems, esize):
    row_bytes = row_elems * esize
    head = "const long long v_t0 = (long long)blockIdx.x;"
    assert head in src
    pf = lambda ahead: ('if (threadIdx.x == 0 && v_t0 + %s < %d) asm volatile("cp.async.bulk.prefetch.L2.global [%%0], %d;" :: "l"(v_in0 + (v_t0 + %s) * %dLL) : "memory");'
                        % (ahead, rows, row_bytes, ahead, row_elems))
    out = {"base": (src, rows)}
    for d in (512, 1024, 2048):
        out[f"pf{d}"] = (src.replace(head, head + "\n    " + pf(str(d))), rows)
    body_end = src.rindex("  }\n}")
    loop = src[:body_end] + "  }\n  }\n}" + src[body_end + 5:]
    for per_sm in (4, 8):
        g = SMS * per_sm
        s = loop.replace(head, f"for (long long v_t0 = blockIdx.x; v_t0 < {rows}; v_t0 += gridDim.x) {{")
        out[f"persist{per_sm}"] = (s, g)
        out[f"persist{per_sm}_pf"] = (s.replace(f"v_t0 += gridDim.x) {{", f"v_t0 += gridDim.x) {{\n    " + pf("(long long)gridDim.x")), g)
    out["lb8"] = (src.replace("__launch_bounds__(256)", "__launch_bounds__(256, 8)"), rows)
    out["lb8_pf1024"] = (out["pf1024"][0].replace("__launch_bounds__(256)", "__launch_bounds__(256, 8)"), rows)
    return out

def median_ms(fn, n=30):
    for _ in range(3): fn()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(n):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(); fn(); b.record(); b.synchronize(); ts.append(cp.cuda.get_elapsed_time(a, b))
    ts.sort(); return ts[len(ts) // 2]

cases = [("rms_norm_32768x4096_bf16", 32768, 4096, 2, ["x", "w"]),
         ("softmax_32768x4096_bf16", 32768, 4096, 2, ["x"]),
         ("layer_norm_32768x4096_bf16", 32768, 4096, 2, ["x", "w", "b"]),
         ("rms_norm_silu_32768x4096_bf16", 32768, 4096, 2, ["x", "w"]),
         ("softmax_32768x4096_f32", 32768, 4096, 4, ["x"]),
         ("softmax_1024x262144_f32", 1024, 262144, 4, ["x"])]
rng = np.random.default_rng(7)
for name, rows, n, es, ins in cases:
    src = open(f"{D}/{name}.cu").read()
    sym = re.search(r'void __launch_bounds__\([0-9]+\) (\w+)\(', src).group(1)
    threads = int(re.search(r"#define TSR_THREADS (\d+)", src).group(1))
    def arr(count):
        f = (rng.random(count, dtype=np.float32) * 2 - 1).astype(np.float32)
        return cp.asarray(f) if es == 4 else cp.asarray((f.view(np.uint32) >> 16).astype(np.uint16))
    args = [arr(rows * n)] + [arr(n) for _ in ins[1:]]
    out = cp.empty(rows * n, dtype=np.float32 if es == 4 else np.uint16)
    bytes_rw = 2 * rows * n * es
    ref = None
    for vname, (vsrc, grid) in variants(src, rows, n, es).items():
        try:
            k = cp.RawModule(code=vsrc, options=("--std=c++17", "-arch=sm_90a")).get_function(sym)
        except Exception as e:
            print(f"{name:32s} {vname:14s} compile failed: {str(e)[:300]}"); continue
        fn = lambda: k((grid,), (threads,), tuple(args) + (out,))
        out.fill(0); fn(); cp.cuda.Device().synchronize()
        got = out.copy()
        same = "" if ref is None else ("bitwise ok" if bool((got == ref).all()) else "MISMATCH")
        if ref is None: ref = got
        ms = median_ms(fn)
        print(f"{name:32s} {vname:14s} {ms*1e3:9.1f} us {bytes_rw/ms/1e9:8.1f} TB/s {same}", flush=True)
