// Target IR: per kernel, the rendered source, its SHA-256, an ABI id and a
// launch descriptor (grid, buffers with dtype/size/access); the func is the
// host schedule of target.launch ops, its signature the shape guards.
//   target.kernel @k {abi = "...", buffers = ["in f32[4096] read", ...],
//                     grid = [256], sha256 = "...", source = "...", target = "cpu"}
// A CUDA kernel may also take tensor maps (the TMA's CUtensorMap, by value)
// after its buffer pointers: tensor_maps = ["a bf16 dims=[1024,8192] ...", ...].
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

// A tensor map the runtime encodes once per binding (cuTensorMapEncodeTiled)
// over one of the kernel's buffers and passes by value as parameter `param`
// (the ABI: they follow the buffer pointers, in order). Text form:
//   "<buffer> <dtype> dims=[d0,d1,..] strides=[s1,..] box=[b0,b1,..] swizzle=128B param=<n>"
// dims in elements, innermost first; strides in bytes, of dims 1.. (dim 0 is
// contiguous); box: the elements one copy moves per dim; swizzle: the smem
// swizzle span in bytes (128B: the wgmma layout). read_kernel_desc checks
// that every box stays inside the buffer's bytes and the TMA's rules hold
// (16-byte strides, boxes of at most 256 per dim, an inner box row within the
// swizzle span).
struct TensorMapDesc {
  std::string buffer;
  DType dtype = DType::F32;
  std::vector<int64_t> dims, strides, box;
  int64_t swizzle = 128;
  int64_t param = 0;
  int64_t offset = 0;  // elements from the buffer's start to the map's first (a view's)
  std::string str() const;
  static TensorMapDesc parse(const std::string& s, const SourceLoc& loc);  // syntax only (E504)
};

struct KernelDesc {
  std::string sym, target, abi, source, sha256, artifact_hash;
  std::string entry;  // the symbol its source defines (kernel_abi.hpp)
  int64_t grid = 0;
  int64_t threads = 1;       // per program: a CUDA block's size; 1 on the CPU
  int64_t shared_bytes = 0;  // dynamic shared memory per program (CUDA: its one tile.alloca)
  // CUDA: device memory the kernel keeps from launch to launch (its one
  // tile.workspace), zero before the first; its pointer is the parameter
  // after the tensor maps. The runtime gives every binding its own.
  int64_t workspace_bytes = 0;
  int64_t cluster = 1;  // CUDA: blocks in a program's thread-block cluster (above 8: non-portable)
  // CUDA: the programs loop over the work with a stride of the programs
  // launched, so the runtime launches min(grid, what fits the device at once).
  bool persistent = false;
  std::string library;  // non-empty: a library call (source is its ir::LibraryMatmul record)
  std::string device;   // the device descriptor it was scheduled for (machine::parse), or "" (hand-written IR)
  std::vector<BufferDesc> buffers;
  std::vector<TensorMapDesc> tensor_maps;  // CUDA only; empty for most kernels
};

KernelDesc read_kernel_desc(const Op& target_kernel);  // validates, E50x
void verify_target(const Module& m);                   // includes sha256(source) == sha256

}  // namespace tessera::ir
