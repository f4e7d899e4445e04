#!/bin/bash
# Device probe for the gemm-tma branch: correctness first (with timeouts, a
# deadlock must not eat the call), then timings next to torch.
B=.probe-gemm
export LD_LIBRARY_PATH=$PWD/$B:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1 TESSERA_CACHE_DIR=/tmp/tsr-cache
L=$OUT/device.log
{
echo "== commit $(cat $B/COMMIT)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== first TMA case"
timeout 90 $B/tessera_gpu_tests --gtest_filter='Matmul/CudaTma.*1300x200*' 2>&1 | tail -4
echo "== timings (tessera run, median of 20 device events)"
for p in mm_bf16 mm_f16 mmbg_bf16 mmbg_f16; do
  extra=""; [[ $p == mmbg* ]] && extra="--input bias=random:seed=3"
  for cand in tessera_tma tessera cublaslt; do
    echo "-- $p --candidate $cand"
    timeout 60 $B/tessera run $B/$p.tsr --target cuda --candidate $cand --repeat 20 --input a=random:seed=1,lo=-2,hi=2 --input b=random:seed=2,lo=-2,hi=2 $extra 2>&1 | grep -i "device_event\|error\|check" | head -6
  done
done
timeout 90 python3 $B/torch_bench.py 2>&1 | tail -4
echo "== TMA cases, one process each (a hang shows as rc=124 for that case only)"
for t in $($B/tessera_gpu_tests --gtest_list_tests --gtest_filter='Matmul/CudaTma.*' | awk '/^[^ ]/{s=$1} /^  /{print s $1}'); do
  timeout 45 $B/tessera_gpu_tests --gtest_filter="$t" > $OUT/tma-case.log 2>&1; rc=$?
  echo "rc=$rc $t"; [ $rc -ne 0 ] && tail -5 $OUT/tma-case.log
done
echo "== GPU matmul tests"
timeout 300 $B/tessera_gpu_tests --gtest_filter='Matmul/*:CudaArbiter.*:-Matmul/CudaTma.*' > $OUT/gpu-matmul-tests.log 2>&1; echo "rc=$?"
grep -E "^\[  (PASSED|FAILED) |tests ran|FAILED  \]" $OUT/gpu-matmul-tests.log | head -30
} 2>&1 | tee $L
