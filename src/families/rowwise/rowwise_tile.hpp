// Schedule -> Tile for the rowwise family.
#pragma once
#include <string>

#include "families/rowwise/rowwise_schedule.hpp"

namespace tessera::families::rowwise {

// Appends `tile.kernel @sym` computing the region of `schedule_op` per `plan`.
void build_kernel(ir::Module& m, const std::string& sym, const Plan& plan, const ir::Op& schedule_op);

}  // namespace tessera::families::rowwise
