#!/bin/bash
# Writes lib.cuh: the tile library exactly as the CUDA renderer embeds it in
# the layer_norm bf16 kernel (TSR_THREADS 256, TSR_VEC 8), and emitted.cuh:
# that kernel as this build emits it (renamed ln_emitted). Run here (needs build/tessera):
#   bench/rows_ln_probe/gen.sh build/tessera
set -e
dir=$(dirname "$0")
"$1" compile bench/programs/layer_norm_32768x4096_bf16.tsr --target cuda --emit source -o "$dir/emitted.cu"
awk '/^extern "C" __global__/{exit} {print}' "$dir/emitted.cu" > "$dir/lib.cuh"
awk '/^extern "C" __global__/,0' "$dir/emitted.cu" | sed 's/layer_norm_k0/ln_emitted/' > "$dir/emitted.cuh"
rm "$dir/emitted.cu"
# masked_370e4a8.cuh is the same kernel as emitted at 370e4a8 (before resident
# full rows read without masks: 46 registers instead of 32), kept for the A/B.
