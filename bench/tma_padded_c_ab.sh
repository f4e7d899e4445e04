# Padded C rows in the TMA block (branch tma-padded-c): A/B of the fused
# bias+gelu and plain bf16 8192^3 kernels (--candidate tessera_tma), old
# (main) and new binaries alternating, then the TMA GPU tests. On the GPU
# machine, repo root, with .devcarry/ holding stripped `tessera` (this
# branch), `tessera_old` (main), `tessera_gpu_tests` and libfmt.so.9 /
# libcrypto.so.3:  bash bench/tma_padded_c_ab.sh
B=.devcarry
export LD_LIBRARY_PATH=$PWD/$B PYTHONUNBUFFERED=1
T0=$(date +%s)
P=bench/programs/matmul_bias_gelu_8192x8192x8192_bf16.tsr
Q=bench/programs/matmul_8192x8192x8192_bf16.tsr
for round in 1 2; do for bin in tessera_old tessera; do
  for prog in $P $Q; do
    extra=""; [ $prog = $P ] && extra="--input bias=random:seed=9"
    us=$(TESSERA_CACHE_DIR=/tmp/c-$bin timeout 40 $B/$bin run $prog --target cuda --candidate tessera_tma --repeat 20 --input a=random:seed=7 --input b=random:seed=8 $extra 2>&1 | sed -n 's/.*device_event=\([0-9.]*\) us.*/\1/p' | head -1)
    echo "round $round $bin $(basename $prog .tsr) $us us [t+$(( $(date +%s)-T0 ))s]"
  done
done; done
timeout 60 $B/tessera_gpu_tests --gtest_filter='Matmul/CudaTma.*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED  \]" | head
echo "done [t+$(( $(date +%s)-T0 ))s]"
