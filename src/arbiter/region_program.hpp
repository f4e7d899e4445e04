// A matmul region of a program as a program of its own: the func the arbiter
// measures candidates on. Its arguments are the region's leaves, its body the
// region's Graph IR ops, its result the region's. With a cap, M and N shrink
// to at most `cap` (the gate's proxy when the full-size oracle would be too
// slow); K, batches, dtypes, layouts and the epilogue stay as they are.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "families/fused/region.hpp"
#include "ir/ir.hpp"

namespace tessera::arbiter {

struct MatmulRegion {
  std::string id;  // passes::matmul_region_id: "<func>#<i>"
  families::fused::FusedRegion region;
};

// Every matmul region of every func, in program order (as graph_to_schedule numbers them).
std::vector<MatmulRegion> matmul_regions(const ir::Module& graph);

std::unique_ptr<ir::Module> region_program(const families::fused::FusedRegion& r, int64_t cap = 0);

// The cap of the oracle's proxy when the full-size check is too slow (the
// arbiter's gate and `tessera bench` use the same one).
inline constexpr int64_t kProxyCap = 256;

// batch * m * n * k of the region's matmul (its multiply-adds).
double region_macs(const families::fused::FusedRegion& r);

}  // namespace tessera::arbiter
