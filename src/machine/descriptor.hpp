// The machine a program is compiled for: its kind, its numbers and what it
// can do. Families ask it questions (has(Cap::Clusters), compute_units)
// instead of comparing target names, so a new device is a new descriptor,
// not an edit to every family. On a machine with the device it is read from
// the driver (runtime/device_query.hpp); compiling for an absent device uses
// a named profile. Its canonical text is recorded on every Schedule IR op
// (attribute `device`), so the artifact hash covers every fact a decision
// could have used.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::machine {

// The lane a descriptor belongs to: which renderer and runtime take its kernels.
enum class Kind { Cpu, Cuda, Hip, Metal };
const char* kind_name(Kind k);  // "cpu", "cuda", "hip", "metal": the --target names
std::optional<Kind> parse_kind(const std::string& name);

// Capabilities: of the device (Tma, Clusters, ...) and of the lane's device
// tile library on it (BlockMatmul, TransposeBlock): a schedule may only use
// what both provide.
enum class Cap : uint32_t {
  ThreadBlocks = 1u << 0,        // a program is a block of threads (GPUs); else one core's work item
  BlockMatmul = 1u << 1,         // the tile library has tile.matmul blocks for this device
  TensorCores = 1u << 2,         // warp-level f16/bf16 MMA with f32 accumulation
  Wgmma = 1u << 3,               // warpgroup MMA fed from shared memory
  Tma = 1u << 4,                 // tensor-map bulk copies into shared memory
  BulkCopy = 1u << 5,            // bulk copies into shared memory completed on an mbarrier
  Clusters = 1u << 6,            // thread-block clusters with distributed shared memory
  L2Prefetch = 1u << 7,          // an L2 prefetch hint the rows family issues ahead of a row
  TransposeBlock = 1u << 8,      // a shared-memory transpose block
  AttentionGradBlock = 1u << 9,  // a block for attention's backward pass (tile.attention_grad)
  MatmulNorm = 1u << 10,         // tile.matmul takes an RMSNorm prologue (B's rows scaled, A's rows' sums of squares)
  AttentionDecodeBlock = 1u << 11,  // a split-KV attention block (tile.attention_decode) and a kernel workspace
};

struct Descriptor {
  Kind kind = Kind::Cpu;
  std::string name;           // a profile's name, or the driver's device name
  std::string origin;         // "profile" or "driver"
  std::string arch;           // sm_90, gfx90a, apple-gpu, x86-64
  int64_t compute_units = 0;  // SMs / CUs / GPU cores; 0 on the CPU (its thread pool sizes at run time)
  int64_t simd_width = 1;     // threads that step together: warp, wavefront, simdgroup
  int64_t vector_bytes = 16;  // a lane's widest vector load (CPU: the tile library's vectors)
  int64_t max_threads = 1;    // threads a block
  int64_t shared_bytes = 0;   // shared memory a block may opt into
  int64_t l2_bytes = 0;       // the cache all compute units share (a GPU's L2); 0 where unknown (not printed)
  int64_t registers = 0;      // 32-bit registers a compute unit
  int64_t max_cluster = 1;    // blocks a cluster may hold (beyond the portable 8 where allowed)
  uint32_t caps = 0;
  std::string blas;  // the vendor BLAS the arbiter may call here ("openblas", "cublaslt"), or ""

  bool has(Cap c) const { return (caps & static_cast<uint32_t>(c)) != 0; }
  bool gpu() const { return has(Cap::ThreadBlocks); }
  const char* target() const { return kind_name(kind); }
  // One canonical line, e.g. `cuda h200 profile sm_90 units=132 ...`; parse(str()) == *this.
  std::string str() const;
  bool operator==(const Descriptor& o) const { return str() == o.str(); }
};

// The text of str(); E507 (naming the field) when it is malformed.
Descriptor parse(const std::string& text);

// Named profiles, for compiling where the device is absent: E507 for an
// unknown name (the message lists them).
const Descriptor& profile(const std::string& name);
std::vector<std::string> profile_names();
// The profile a target compiles for when neither a device nor a profile is named.
const Descriptor& default_profile(Kind kind);
// default_profile of a --target name; E506 for a target no lane serves.
const Descriptor& default_for_target(const std::string& target);

}  // namespace tessera::machine
