#!/usr/bin/env bash
# On the GPU machine: the CUDA evidence packets (reduce, rowops, matmul,
# attention; TESSERA_PACKETS picks some), each with torch/Triton anchors timed
# in the same call.
# The tree there has no git, so the commit and its source fingerprint
# (`tessera evidence fingerprint` on the clean checkout) are passed in.
#   scripts/record_cuda_evidence.sh BUILD OUT COMMIT FINGERPRINT
set -euo pipefail
build=$1 out=$2 commit=$3 fingerprint=$4
mkdir -p "$out"
start=$(date +%s)
echo "== commit $commit fingerprint $fingerprint"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
for family in ${TESSERA_PACKETS:-reduce matmul rowops attention}; do
  echo "== $family: anchors and sealed packet [t+$(($(date +%s) - start))s]"
  python3 bench/anchors.py "bench/${family}_cuda.json" --target cuda --out "$out/$family.anchors.json"
  "$build/tessera" bench "bench/${family}_cuda.json" --target cuda --anchors "$out/$family.anchors.json" \
    --out "$out/$family.packet.json" --commit "$commit" --fingerprint "$fingerprint"
done
echo "== done [t+$(($(date +%s) - start))s]"
