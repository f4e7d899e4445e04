// Schedule -> Tile for the transpose family.
#pragma once
#include <string>

#include "families/transpose/transpose_schedule.hpp"

namespace tessera::families::transpose {

// Appends `tile.kernel @sym`: program -> (batch, block row, block column), one
// tile.transpose of that block.
void build_kernel(ir::Module& m, const std::string& sym, const Plan& plan, const ir::Op& schedule_op);

}  // namespace tessera::families::transpose
