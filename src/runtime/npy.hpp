// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0),
// the exchange format for kernel inputs and reference outputs.
//
// Only C-order arrays of the Tessera dtypes are supported:
//   '<f2' f16, '<f4' f32, '<f8' f64 ('=' is accepted as '<': little-endian host);
//   bf16 has no numpy dtype, so it travels as raw bit patterns: '<u2' (what
//   write_npy writes; in Python, arr.view(np.uint16)) or '|V2' (2-byte void).
//
// Errors are tessera::Error with a stable code; every message names the file.
//   E410 cannot open / read the file
//   E120 cannot write it (atomically: support/atomic_file.hpp; the previous file survives)
//   E411 not a .npy file (bad magic)
//   E412 unsupported format version
//   E413 malformed header (syntax, missing/extra keys, bad or oversized shape)
//   E414 Fortran-order array
//   E415 dtype differs from the declared one
//   E416 shape differs from the declared one
//   E417 truncated data
//   E418 big-endian or unsupported descr
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor.hpp"

namespace tessera {

// Reads `path` and checks it holds `expected_dtype` with `expected_shape`.
Tensor read_npy(const std::string& path, DType expected_dtype, const std::vector<int64_t>& expected_shape);

// Reads `path` taking dtype and shape from the file ('<u2' / '|V2' read as bf16).
Tensor read_npy_any(const std::string& path);

// Writes `t` as a little-endian, C-order .npy file: format 1.0, or 2.0 when
// the header does not fit 1.0's 16-bit length. bf16 is written as '<u2'.
void write_npy(const std::string& path, const Tensor& t);

}  // namespace tessera
