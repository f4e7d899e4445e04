// Schedule -> Tile for the reduce family: one tile program per pass.
#pragma once
#include <string>

#include "families/reduce/reduce_plan.hpp"
#include "ir/ir.hpp"

namespace tessera::families::reduce {

// Appends `tile.kernel @sym` computing `pass` to the module. With a fused
// prologue (the region of the first pass), the kernel reads its leaves instead
// of one input.
void build_kernel(ir::Module& m, const std::string& sym, const Pass& pass, const std::string& artifact_hash,
                  const ir::Region* prologue = nullptr);

}  // namespace tessera::families::reduce
