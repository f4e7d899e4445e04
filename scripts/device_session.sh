#!/usr/bin/env bash
# One call on the GPU machine does everything that needs the GPU, in order of
# value, each step logged with its start time (the call may be cut short):
#   1. the CUDA test suite (binary from scripts/make_device_carry.sh);
#   2. `pip install .` and the Python tests, torch on CUDA included, and the
#      Python overhead benchmark (scripts/device_python.sh);
#   3. the CUDA evidence packets (scripts/record_cuda_evidence.sh).
#   scripts/device_session.sh CARRY OUT COMMIT FINGERPRINT [STEPS]
# COMMIT and FINGERPRINT: the clean checkout's (`tessera evidence fingerprint`).
# STEPS (default "gpu python packets") picks steps: one device call is limited
# to 10 minutes, which the three together may exceed. TESSERA_GTEST_FILTER
# narrows the GPU tests (e.g. '*sin*:*clamp*').
set -uo pipefail
carry=$(realpath "$1") out=$2 commit=$3 fingerprint=$4 steps=${5:-gpu python packets}
want() { [[ " $steps " == *" $1 "* ]]; }
mkdir -p "$out"
export TESSERA_CACHE_DIR=/tmp/tessera-cache LD_LIBRARY_PATH=$carry/sysroot/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
start=$(date +%s)
if want gpu; then
  echo "== gpu tests [t+0s]"
  "$carry/bin/tessera_gpu_tests" ${TESSERA_GTEST_FILTER:+--gtest_filter="$TESSERA_GTEST_FILTER"} \
    > "$out/gpu-tests-full.log" 2>&1
  tail -40 "$out/gpu-tests-full.log" > "$out/gpu-tests.log" && rm "$out/gpu-tests-full.log"
  tail -5 "$out/gpu-tests.log"
fi
if want python; then
  echo "== python [t+$(($(date +%s) - start))s]"
  scripts/device_python.sh "$carry/sysroot" "$out" "$commit" "$fingerprint" > "$out/python.log" 2>&1
  tail -12 "$out/python.log"
fi
if want packets; then
  echo "== cuda packets [t+$(($(date +%s) - start))s]"
  scripts/record_cuda_evidence.sh "$carry/bin" "$out/cuda" "$commit" "$fingerprint" > "$out/packets.log" 2>&1
  tail -5 "$out/packets.log"
  # One file: the device tool brings back only a few files per call.
  tar -cf "$out/cuda.tar" -C "$out" cuda && rm -rf "$out/cuda"
fi
echo "== done [t+$(($(date +%s) - start))s]"
