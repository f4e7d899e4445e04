#!/usr/bin/env bash
# Prepares DIR (git-ignored; name it in the device tool's `carry`) for a run on
# the GPU machine, which has no Debian -dev packages: the CLI and the GPU test
# binary built here, stripped (glibc 2.36 here runs there), the shared
# libraries they load that it may lack, and the sysroot `pip install .` builds
# against there (scripts/make_sysroot.sh).
#   scripts/make_device_carry.sh BUILD DIR
set -euo pipefail
build=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir/bin"
strip -o "$dir/bin/tessera" "$build/tessera"
strip -o "$dir/bin/tessera_gpu_tests" "$build/tests/tessera_gpu_tests"
scripts/make_sysroot.sh "$dir/sysroot"
du -sh "$dir"
