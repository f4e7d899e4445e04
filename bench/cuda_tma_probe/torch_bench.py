import torch, torch.nn.functional as F
def bench(fn, n=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts)//2]
N = 8192
for dt in (torch.bfloat16, torch.float16):
    g = torch.Generator(device="cuda").manual_seed(1)
    a = (torch.rand(N, N, device="cuda", generator=g) * 4 - 2).to(dt)
    b = (torch.rand(N, N, device="cuda", generator=g) * 4 - 2).to(dt)
    bias = torch.rand(N, device="cuda", generator=g).to(dt)
    c = torch.empty(N, N, device="cuda", dtype=dt)
    ms = bench(lambda: torch.matmul(a, b, out=c))
    ms2 = bench(lambda: F.gelu(torch.matmul(a, b) + bias))
    ms3 = bench(lambda: F.gelu(c + bias))
    print(f"torch {dt}: matmul {ms:.3f} ms = {2*N**3/ms/1e9:.0f} TFLOP/s; matmul+bias+gelu (unfused) {ms2:.3f} ms; epilogue alone {ms3:.3f} ms", flush=True)
