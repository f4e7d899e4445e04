#!/usr/bin/env bash
# Installs what Tessera needs on a fresh Debian 12 machine (idempotent).
set -euo pipefail
# clang-format and clang-tidy are the code gates (make check-format, make tidy).
# clang-19 with Debian's HIP headers and ROCm device libraries (5.2) is the
# HIP lane's compile check: emitted HIP kernels are compiled to gfx90a, gfx1100
# and gfx1151 code objects by the tests (no AMD GPU is needed or used);
# lld-19 links them (an older ld.lld lacks elf64_amdgpu); llvm-19's objdump
# disassembles them for the lit tests.
# openssl (the command) makes the Ed25519 keys the signing tests use.
debs=(cmake ninja-build g++ libgtest-dev llvm-14-tools nlohmann-json3-dev libcli11-dev libfmt-dev libssl-dev openssl python3
      clang-19 llvm-19 lld-19 libamdhip64-dev rocm-device-libs libopenblas0-pthread libopenblas-dev clang-format clang-tidy)
missing=()
for p in "${debs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# numpy is the CPU anchor of the benchmarks and writes test fixtures;
# nanobind builds the Python extension (tessera._core), scikit-build-core
# drives `pip install .`, pytest runs the Python tests.
py_missing=()
for m in numpy nanobind scikit_build_core pytest; do
  python3 -c "import $m" 2>/dev/null || py_missing+=("${m//_/-}")
done
if ((${#py_missing[@]})); then
  echo "bootstrap: installing ${py_missing[*]} from PyPI"
  python3 -m pip install --quiet "${py_missing[@]}"
fi
