#!/bin/bash
# One device call for the row-op work (cluster-resident long rows, bf16 row
# shapes): the CUDA row tests, then the rowops spec with torch/Triton anchors
# timed in the same call. Usage, on the GPU machine, from the repo root:
#   bench/rows_cuda_probe.sh BIN_DIR OUT_DIR [--commit SHA --fingerprint FP]
# BIN_DIR holds prebuilt `tessera` and `tessera_gpu_tests` (x86-64); logs and
# the (unsealed unless --commit is given) packet go to OUT_DIR.
set -o pipefail
bin=$1 out=$2
shift 2
seal=("$@")
[ ${#seal[@]} -eq 0 ] && seal=(--unsealed)  # no commit named: say so in the packet
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
"$bin/tessera_gpu_tests" --gtest_filter='CudaRows.*:All/CudaFusion.*softmax*:All/CudaFusion.*norm*' 2>&1 |
  tail -n 60 | tee "$out/gpu-rows-tests.log"
PYTHONUNBUFFERED=1 python3 bench/anchors.py bench/rowops_cuda.json --target cuda --out "$out/anchors.json" 2>&1 |
  tail -n 30 | tee "$out/anchors.log"
"$bin/tessera" bench bench/rowops_cuda.json --target cuda --anchors "$out/anchors.json" \
  --out "$out/rowops.packet.json" "${seal[@]}" 2>&1 | tail -n 40 | tee "$out/bench.log"
