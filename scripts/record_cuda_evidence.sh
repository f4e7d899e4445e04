#!/usr/bin/env bash
# On the GPU machine: the CUDA evidence packets (reduce, rowops, matmul,
# attention; TESSERA_PACKETS picks some), each with torch/Triton anchors timed
# in the same call.
# The tree there has no git, so the commit and its source fingerprint
# (`tessera evidence fingerprint` on the clean checkout) are passed in.
# TESSERA_PER_CASE=1: one packet per case in OUT/FAMILY/ (long cases);
# TESSERA_CASES="a b" then records those cases, in that order.
#   scripts/record_cuda_evidence.sh BUILD OUT COMMIT FINGERPRINT
set -euo pipefail
build=$1 out=$2 commit=$3 fingerprint=$4
# A sealed packet names its commit in full (a short hash is refused at verify).
[[ $commit =~ ^[0-9a-f]{40}$ ]] || { echo "record_cuda_evidence: COMMIT must be a full 40-hex commit hash, got '$commit'" >&2; exit 2; }
mkdir -p "$out"
start=$(date +%s)
echo "== commit $commit fingerprint $fingerprint"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
for family in ${TESSERA_PACKETS:-reduce matmul rowops attention}; do
  spec="bench/${family}_cuda.json"
  if [[ -n ${TESSERA_PER_CASE:-} ]]; then
    # One packet per case, each with its anchors timed just before it: a call
    # that runs out of time keeps every case it finished.
    cases=${TESSERA_CASES:-$(python3 -c "import json,sys; print(' '.join(c['name'] for c in json.load(open(sys.argv[1]))['cases']))" "$spec")}
    for c in $cases; do
      echo "== $family/$c: anchors and sealed packet [t+$(($(date +%s) - start))s]"
      mkdir -p "$out/$family"
      python3 bench/anchors.py "$spec" --only "$c" --target cuda --out "$out/$family/$c.anchors.json"
      "$build/tessera" bench "$spec" --only "$c" --target cuda --anchors "$out/$family/$c.anchors.json" \
        --out "$out/$family/$c.packet.json" --commit "$commit" --fingerprint "$fingerprint" ||
        echo "== $family/$c: no packet (exit $?); the next case goes on"
    done
    continue
  fi
  echo "== $family: anchors and sealed packet [t+$(($(date +%s) - start))s]"
  python3 bench/anchors.py "$spec" --target cuda --out "$out/$family.anchors.json"
  "$build/tessera" bench "$spec" --target cuda --anchors "$out/$family.anchors.json" \
    --out "$out/$family.packet.json" --commit "$commit" --fingerprint "$fingerprint"
done
echo "== done [t+$(($(date +%s) - start))s]"
