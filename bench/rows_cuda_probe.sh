#!/bin/bash
# One device call for the row-op work (cluster-resident long rows, bf16 row
# shapes): the CUDA row tests, then the rowops spec with the torch/Triton
# anchors timed in the same call, then (optional) the bf16 cases again with
# an older build for an A/B of the schedule. On the GPU machine, repo root:
#   bench/rows_cuda_probe.sh BIN_DIR OUT_DIR [OLD_BIN_DIR]
# BIN_DIR holds prebuilt x86-64 `tessera` and `tessera_gpu_tests`; logs and
# an unsealed packet (no git there to prove the commit) go to OUT_DIR, at
# most 7 files.
set -o pipefail
bin=$1 out=$2 old=$3
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$out/gpu.txt"
"$bin/tessera_gpu_tests" --gtest_filter='CudaRows.*:All/CudaFusion.*softmax*:All/CudaFusion.*norm*' 2>&1 |
  tail -n 80 | tee "$out/gpu-rows-tests.log"
PYTHONUNBUFFERED=1 python3 bench/anchors.py bench/rowops_cuda.json --target cuda --out "$out/anchors.json" 2>&1 |
  tail -n 30 | tee "$out/anchors.log"
"$bin/tessera" bench bench/rowops_cuda.json --target cuda --anchors "$out/anchors.json" \
  --out "$out/rowops.packet.json" --unsealed 2>&1 | tail -n 40 | tee "$out/bench.log"
[ -n "$old" ] || exit 0
for c in softmax_32768x4096_bf16 layer_norm_32768x4096_bf16 rms_norm_32768x4096_bf16 rms_norm_silu_32768x4096_bf16; do
  "$old/tessera" bench bench/rowops_cuda.json --target cuda --only "$c" --out /tmp/old-$c.json --unsealed 2>&1 | tail -n 6
done | tee "$out/bench-old-bf16.log"
