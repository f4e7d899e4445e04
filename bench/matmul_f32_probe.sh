#!/bin/bash
# One device call for the experimental f32 matmul block with row-major A
# staged through registers (TESSERA_EXPERIMENTAL=matmul_f32_stage_a,
# device/gpu/tessera_matmul_simt_stage_a.cuh): its GPU tests first (the f32
# matmul matrix and large cases against the oracle and, bitwise, the default
# block), then 4096^3 and 1024^3 f32 NN timed with the feature off and on
# (tessera run, median of 20 device events; two alternating rounds) next to
# torch.matmul with TF32 off (CUDA events), all in the same call. On the GPU
# machine, repo root:
#   [PROBE_TESTS=0] bench/matmul_f32_probe.sh BIN_DIR OUT_DIR
# BIN_DIR holds prebuilt x86-64 `tessera` and `tessera_gpu_tests` and the
# shared libraries they link that the machine lacks (libfmt.so.9,
# libcrypto.so.3); the logs go to OUT_DIR.
set -o pipefail
bin=$(cd "$1" && pwd) out=$2
export LD_LIBRARY_PATH=$bin:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1 TESSERA_CACHE_DIR=${TESSERA_CACHE_DIR:-/tmp/tsr-cache}
feature=matmul_f32_stage_a
{
[ -f "$bin/COMMIT" ] && echo "== commit $(cat "$bin/COMMIT")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader

if [ "${PROBE_TESTS:-1}" = 1 ]; then  # PROBE_TESTS=0: timings only
echo "== GPU tests: Matmul/CudaStageA (the feature on; 240 s cap)"
timeout 240 "$bin/tessera_gpu_tests" --gtest_filter='Matmul/CudaStageA.*' > "$out/gpu-stage-a-tests.log" 2>&1
echo "rc=$?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran|Failure" "$out/gpu-stage-a-tests.log" | head -40
fi

echo "== which block each run takes"
for n in 4096 1024; do
  p=bench/programs/matmul_${n}x${n}x${n}_f32.tsr
  for f in "" $feature; do
    echo "$n^3 TESSERA_EXPERIMENTAL='$f': $(TESSERA_EXPERIMENTAL=$f "$bin/tessera" compile $p --target cuda --emit target |
      grep -o 'tsr::matmul_block[a-z_]*<float, [0-9]*, [0-9]*, [0-9]*, [0-9]*, [0-9]*, [0-9]*' | head -1)"
  done
done

echo "== 1024^3 with the feature, against the oracle"
TESSERA_EXPERIMENTAL=$feature timeout 180 "$bin/tessera" run bench/programs/matmul_1024x1024x1024_f32.tsr --target cuda --candidate tessera \
  --check --input a=random:seed=1,lo=-2,hi=2 --input b=random:seed=2,lo=-2,hi=2 2>&1 | grep -iv "^\s*$" | tail -4

echo "== timings: tessera run --repeat 20 (median device event); FFMA, no TF32"
for round in 1 2; do
  for n in 4096 1024; do
    for f in "" $feature; do
      line=$(TESSERA_EXPERIMENTAL=$f timeout 120 "$bin/tessera" run bench/programs/matmul_${n}x${n}x${n}_f32.tsr \
        --target cuda --candidate tessera --repeat 20 --input a=random:seed=1,lo=-2,hi=2 --input b=random:seed=2,lo=-2,hi=2 2>&1 |
        grep -m1 device_event)
      us=$(sed -n 's/.*device_event=\([0-9.]*\) us.*/\1/p' <<< "$line")
      awk -v n=$n -v us="$us" -v f="${f:-default}" -v r=$round 'BEGIN {
        printf "round %d  tessera %5d^3  %-20s %10s us  %6.1f TFLOP/s\n", r, n, f, us, (us > 0 ? 2 * n * n * n / (us * 1e-6) / 1e12 : 0) }'
    done
  done
done

echo "== torch.matmul f32, TF32 off (median of 20 CUDA events)"
timeout 120 python3 - <<'PY'
import torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
def bench(fn, n=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts) // 2]
print(f"torch {torch.__version__}, allow_tf32={torch.backends.cuda.matmul.allow_tf32}")
for n in (4096, 1024):
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.rand(n, n, device="cuda", generator=g) * 4 - 2
    b = torch.rand(n, n, device="cuda", generator=g) * 4 - 2
    c = torch.empty(n, n, device="cuda")
    ms = bench(lambda: torch.matmul(a, b, out=c))
    print(f"torch {n:5d}^3  {ms * 1e3:10.2f} us  {2 * n**3 / (ms * 1e-3) / 1e12:6.1f} TFLOP/s")
PY
} 2>&1 | tee "$out/matmul-f32-probe.log"
