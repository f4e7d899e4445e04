// A library candidate's kernel record: instead of rendered source, a Target
// IR kernel of ABI kLibraryAbi carries this canonical description of the call
// (its SHA-256 is the kernel's digest, verified at load like any source). The
// runtime parses it back and calls the named library with the kernel's
// buffers (a, b, out), so what ran is exactly what the IR says.
//   library = openblas | cublaslt
//   op = matmul, dtypes, batch/m/n/k, transposes, batch strides (0: shared)
//   add_c = 1 (only where set): out = a x b + c, with a buffer c of out's
//   dtype and layout before out (the library's beta = 1: a residual add
//   in the library's own epilogue)
#pragma once
#include <cstdint>
#include <string>

#include "ir/ir.hpp"
#include "support/dtype.hpp"

namespace tessera::ir {

inline constexpr const char* kLibraryAbi = "tessera.library.v1(buffers a, b, out; the library named in the record)";

struct LibraryMatmul {
  std::string library;
  DType operand = DType::F32, result = DType::F32;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false;
  int64_t a_batch_stride = 0, b_batch_stride = 0;
  bool add_c = false;

  std::string to_text() const;                                // deterministic, one "key = value" a line
  static LibraryMatmul parse(const std::string& text);        // E504 on anything malformed
  static LibraryMatmul from_kernel(const Op& extern_kernel);  // a tile.extern_kernel's attributes
};

struct KernelDesc;
// The call of a library kernel, refused (E701) unless its record matches the
// recorded sha256 (checked once, at load, like any kernel source) and E712
// unless it names `library` (what this runtime has).
LibraryMatmul load_library_call(const KernelDesc& k, const std::string& library);

}  // namespace tessera::ir
