// Schedule -> Tile for the pointwise family.
#pragma once
#include <string>

#include "families/pointwise/pointwise_schedule.hpp"

namespace tessera::families::pointwise {

// Appends `tile.kernel @sym` evaluating the region of `schedule_op` per `plan`.
void build_kernel(ir::Module& m, const std::string& sym, const Plan& plan, const ir::Op& schedule_op);

}  // namespace tessera::families::pointwise
