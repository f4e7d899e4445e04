#!/bin/bash
# Writes lib.cuh: the tile library exactly as the CUDA renderer embeds it in
# the layer_norm bf16 kernel (TSR_THREADS 256, TSR_VEC 8), and baseline.cuh:
# that kernel as Tessera emits it. Run here (needs build/tessera):
#   bench/rows_ln_probe/gen.sh build/tessera
set -e
dir=$(dirname "$0")
"$1" compile bench/programs/layer_norm_32768x4096_bf16.tsr --target cuda --emit source -o "$dir/emitted.cu"
awk '/^extern "C" __global__/{exit} {print}' "$dir/emitted.cu" > "$dir/lib.cuh"
awk '/^extern "C" __global__/,0' "$dir/emitted.cu" | sed 's/layer_norm_k0/ln_baseline/' > "$dir/baseline.cuh"
rm "$dir/emitted.cu"
