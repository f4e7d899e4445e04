// Schedule -> Tile for the scatter family (scatter_schedule.hpp).
#pragma once
#include <string>

#include "families/scatter/scatter_schedule.hpp"
#include "ir/ir.hpp"

namespace tessera::families::scatter {

void build_kernel(ir::Module& m, const std::string& sym, const Plan& p, const ir::Op& schedule_op);

}  // namespace tessera::families::scatter
