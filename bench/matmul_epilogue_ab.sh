#!/bin/bash
# A/B of tessera binaries on the fused matmul epilogue (GPU machine, repo
# root): each binary runs the bias+gelu bf16 8192^3 program, forced to the
# TMA candidate, alternating over two rounds, and prints the device_event
# median of 20 (`tessera run`). Binaries are given as paths; libfmt.so.9 and
# libcrypto.so.3 beside the first. Written after the runs of
# bench/evidence/cuda/raw/matmul-epilogue-ab-h200-2026-12-03.log: its third
# call ran the same loop from a one-off script (untried as this file).
#   bash bench/matmul_epilogue_ab.sh .devcarry/tessera_old .devcarry/tessera [PROGRAM...]
# (programs default to the fused one; the shell variable CANDIDATE overrides tessera_tma)
set -u
bins=() progs=()
for a in "$@"; do case $a in *.tsr) progs+=("$a") ;; *) bins+=("$a") ;; esac; done
[ ${#progs[@]} -gt 0 ] || progs=(bench/programs/matmul_bias_gelu_8192x8192x8192_bf16.tsr)
export LD_LIBRARY_PATH=$(dirname "${bins[0]}")
for round in 1 2; do
  for bin in "${bins[@]}"; do
    for prog in "${progs[@]}"; do
      extra=(); grep -q '%bias' "$prog" && extra=(--input bias=random:seed=9)
      us=$(TESSERA_CACHE_DIR=/tmp/ab-$(basename "$bin") timeout 60 "$bin" run "$prog" --target cuda \
             --candidate "${CANDIDATE:-tessera_tma}" --repeat 20 --input a=random:seed=7 --input b=random:seed=8 \
             "${extra[@]}" 2>&1 | sed -n 's/.*device_event=\([0-9.]*\) us.*/\1/p' | head -1)
      echo "round $round $(basename "$bin") $(basename "$prog" .tsr) ${us:-FAILED} us"
    done
  done
done
