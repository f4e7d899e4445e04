#!/usr/bin/env bash
# On the GPU machine (no Debian -dev packages, no internet): `pip install .`
# with the headers and libraries its build needs carried in SYSROOT (fmt,
# nlohmann-json, OpenSSL from this Debian machine; scripts/make_sysroot.sh),
# then the Python tests (torch on CUDA included) and the overhead benchmark's
# packet, sealed for COMMIT when this tree's fingerprint is FINGERPRINT.
#   scripts/device_python.sh SYSROOT OUT COMMIT FINGERPRINT
# TESSERA_PYTESTS: the pytest selection (default tests/python). TESSERA_LLAMA=1
# also runs bench/llama_layer.py (the 8B layer against torch) into OUT.
set -euo pipefail
sysroot=$(realpath "$1") out=$2 commit=$3 fingerprint=$4
mkdir -p "$out"
start=$(date +%s)
export CMAKE_PREFIX_PATH=$sysroot OPENSSL_ROOT_DIR=$sysroot CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)
export LD_LIBRARY_PATH=$sysroot/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "== pip install . [t+0s]"
python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/site -Cbuild-dir=/tmp/wheel-build . 2>&1 | tail -20
export PYTHONPATH=/tmp/site TESSERA_CACHE_DIR=/tmp/tc
echo "== pytest tests/python [t+$(($(date +%s) - start))s]"
python3 -m pytest -q -rs -p no:cacheprovider ${TESSERA_PYTESTS:-tests/python} 2>&1 | tail -40 || true
echo "== overhead [t+$(($(date +%s) - start))s]"
python3 bench/python_overhead.py --packet "$out/python-cuda.packet.json" --commit "$commit" \
  --fingerprint "$fingerprint" || true
if [[ -n ${TESSERA_LLAMA:-} ]]; then  # the Llama-3-8B layer against torch eager and torch.compile
  echo "== llama layer [t+$(($(date +%s) - start))s]"
  python3 bench/llama_layer.py --out "$out/llama-layer.json" 2>&1 | tail -30 || true
fi
echo "== done [t+$(($(date +%s) - start))s]"
