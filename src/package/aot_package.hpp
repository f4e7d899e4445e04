// Ahead-of-time packages: what a host with the target's hardware (a ROCm box,
// a Mac) would load. A package directory holds
//   manifest.json       format, target, func, ABI, every kernel's digest and
//                       launch descriptor, the digests of every file, and the
//                       manifest's own digest
//   <func>.target.tsr   the Target IR, kernel sources embedded
//   kernels/<sym>.<ext> each kernel's source (.cpp, .cu, .hip, .metal)
//   kernels/<sym>.<arch>.co   HIP only: the code object from the compile check
// verify() re-derives every digest, so an edited source, code object or
// manifest is caught, as the runtime does for kernels it loads.
#pragma once
#include <string>

#include "ir/ir.hpp"
#include "machine/descriptor.hpp"

namespace tessera::package {

inline constexpr const char* kPackageFormat = "tessera.aot-package.v1";

struct WriteResult {
  int kernels = 0;
  std::string compile_check;  // e.g. "clang (... clang version 19...; HIP 5.2...) gfx1151", or "none"
};

// Lowers `m` (any layer) for `target` and writes the package into `dir`.
WriteResult write(const ir::Module& m, const machine::Descriptor& device, const std::string& func,
                  const std::string& dir);

enum class Verdict { Intact = 0, Tampered = 20, Invalid = 21 };
struct Verification {
  Verdict verdict = Verdict::Invalid;
  std::string detail;
};
// With `public_key` (PEM), the manifest must carry a signature by that key
// (E862); the digests alone detect accidents, not forgery (docs/evidence.md).
Verification verify(const std::string& dir, const std::string& public_key = "");

// Signs manifest.json (which covers every file by digest) with an Ed25519
// private key: "signature" = {algorithm, key_id, value}. E864 unless the
// package verifies intact first. Returns the key's id.
std::string sign(const std::string& dir, const std::string& private_key);

}  // namespace tessera::package
