// Builds the tile.kernel of a schedule.attention (see attention_schedule.hpp).
#pragma once
#include <string>

#include "families/attention/attention_schedule.hpp"

namespace tessera::families::attention {

void build_kernel(ir::Module& m, const std::string& sym, const Plan& p, const ir::Op& schedule_op);

}  // namespace tessera::families::attention
