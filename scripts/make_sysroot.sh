#!/usr/bin/env bash
# Copies the build dependencies of `pip install .` that a machine without
# Debian's -dev packages lacks (fmt, nlohmann-json, OpenSSL: headers, CMake
# configs, libraries) into DIR, laid out as CMake searches a prefix; DIR/runtime
# holds the one shared library the built module needs at run time (fmt).
#   scripts/make_sysroot.sh DIR
set -euo pipefail
dir=$1 arch=x86_64-linux-gnu
rm -rf "$dir" && mkdir -p "$dir/include" "$dir/lib/$arch/cmake" "$dir/share/cmake" "$dir/runtime"
cp -r /usr/include/fmt /usr/include/nlohmann /usr/include/openssl "$dir/include/"
cp -r /usr/include/$arch/openssl/* "$dir/include/openssl/"
cp -a /usr/lib/$arch/libfmt.so* /usr/lib/$arch/libcrypto.so* /usr/lib/$arch/libssl.so* "$dir/lib/$arch/"
cp -r /usr/lib/$arch/cmake/fmt "$dir/lib/$arch/cmake/"
cp -r /usr/share/cmake/nlohmann_json "$dir/share/cmake/"
cp -a /usr/lib/$arch/libfmt.so* "$dir/runtime/"
