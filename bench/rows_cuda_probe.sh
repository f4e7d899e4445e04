#!/bin/bash
# One device call for the experimental row-op schedule rows_cluster
# (cluster-resident long rows; clusters of up to 8 blocks, one an SM): the
# CUDA row tests with the feature on, then the rowops spec with the
# torch/Triton anchors timed in the same call, with the feature and without
# (an A/B of the same build). On the GPU machine, repo root:
#   bench/rows_cuda_probe.sh BIN_DIR OUT_DIR
# BIN_DIR holds prebuilt x86-64 `tessera` and `tessera_gpu_tests`; logs and
# unsealed packets (no git there to prove the commit) go to OUT_DIR, 7 files.
set -o pipefail
bin=$1 out=$2
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$out/gpu.txt"
# CudaRows turns rows_cluster on itself; the fusion row cases run with it too.
"$bin/tessera_gpu_tests" --gtest_filter='CudaRows.*' 2>&1 | tail -n 40 | tee "$out/gpu-rows-tests.log"
TESSERA_EXPERIMENTAL=rows_cluster "$bin/tessera_gpu_tests" \
  --gtest_filter='All/CudaFusion.*softmax*:All/CudaFusion.*norm*' 2>&1 | tail -n 40 | tee -a "$out/gpu-rows-tests.log"
PYTHONUNBUFFERED=1 python3 bench/anchors.py bench/rowops_cuda.json --target cuda --out "$out/anchors.json" 2>&1 |
  tail -n 30 | tee "$out/anchors.log"
TESSERA_EXPERIMENTAL=rows_cluster "$bin/tessera" bench bench/rowops_cuda.json --target cuda \
  --anchors "$out/anchors.json" --out "$out/rowops-experimental.packet.json" --unsealed 2>&1 | tail -n 40 |
  tee "$out/bench.log"
"$bin/tessera" bench bench/rowops_cuda.json --target cuda --anchors "$out/anchors.json" \
  --out "$out/rowops-default.packet.json" --unsealed 2>&1 | tail -n 40 | tee -a "$out/bench.log"
