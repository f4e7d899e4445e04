// Builds the tile.kernel of a schedule.matmul (see matmul_schedule.hpp).
#pragma once
#include <string>

#include "families/matmul/matmul_schedule.hpp"

namespace tessera::families::matmul {

void build_kernel(ir::Module& m, const std::string& sym, const Plan& p, const ir::Op& schedule_op);

}  // namespace tessera::families::matmul
