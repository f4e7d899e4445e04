#!/usr/bin/env bash
# TESSERA_CXX for the sanitizer build (make test-asan): the kernels compiled at
# run time get the same sanitizers as the host process that dlopens them.
exec "${TESSERA_SANITIZED_CXX_BASE:-g++}" -fsanitize=address,undefined -fno-sanitize-recover=undefined "$@"
