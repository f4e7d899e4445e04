// What a package's manifest must say, re-derived from its Target IR: an
// unkeyed digest can be recomputed by anyone, so `package verify` does not
// trust the manifest's launch descriptors, target or claims because their
// digest matches; it derives them again from the packaged Target IR (whose
// embedded sources are checked against their sha256) and compares.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "ir/ir.hpp"
#include "ir/target_dialect.hpp"
#include "targets/lane.hpp"

namespace tessera::package {

// A kernel's manifest entry as written: its symbol, digest, source file, grid,
// threads, buffers, artifact hash (and tensor maps, cluster where it has them).
nlohmann::json kernel_entry(const ir::Op& target_kernel, const ir::KernelDesc& k, const targets::Lane& lane);

// The first way `manifest` contradicts `target_ir` (its target, func, source
// files, every kernel's entry, what it claims to prove and to have checked),
// prefixed "[E865] "; "" when none. `dir` is the package (the lane's extras,
// such as Metal's dispatch geometry, are derived again; a compile check is not
// re-run, its product is checked by digest).
std::string contradiction(const nlohmann::json& manifest, const ir::Module& target_ir, const std::string& dir);

}  // namespace tessera::package
