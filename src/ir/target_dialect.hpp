// Target IR: per kernel, the rendered source, its SHA-256, an ABI id and a
// launch descriptor (grid, buffers with dtype/size/access); the func is the
// host schedule of target.launch ops, its signature the shape guards.
//   target.kernel @k {abi = "...", buffers = ["in f32[4096] read", ...],
//                     grid = [256], sha256 = "...", source = "...", target = "cpu"}
#pragma once
#include <string>
#include <vector>

#include "ir/ir.hpp"

namespace tessera::ir {

struct BufferDesc {
  std::string name;
  DType dtype;
  int64_t elements;
  bool written;
  std::string str() const;  // "out f32[4096] write"
  static BufferDesc parse(const std::string& s, const SourceLoc& loc);
};

struct KernelDesc {
  std::string sym, target, abi, source, sha256, artifact_hash;
  int64_t grid = 0;
  int64_t threads = 1;  // per program: a CUDA block's size; 1 on the CPU
  int64_t shared_bytes = 0;
  std::string library;  // non-empty: a library call (source is its ir::LibraryMatmul record)  // dynamic shared memory per program (CUDA: its one tile.alloca)
  std::vector<BufferDesc> buffers;
};

KernelDesc read_kernel_desc(const Op& target_kernel);  // validates, E50x
void verify_target(const Module& m);                   // includes sha256(source) == sha256

}  // namespace tessera::ir
