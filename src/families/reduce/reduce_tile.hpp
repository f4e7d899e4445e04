// Schedule -> Tile for the reduce family: one tile program per pass.
#pragma once
#include <string>

#include "families/reduce/reduce_plan.hpp"
#include "ir/ir.hpp"

namespace tessera::families::reduce {

// Appends `tile.kernel @sym` computing `pass` to the module.
void build_kernel(ir::Module& m, const std::string& sym, const Pass& pass, const std::string& artifact_hash);

}  // namespace tessera::families::reduce
