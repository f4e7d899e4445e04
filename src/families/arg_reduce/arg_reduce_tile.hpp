// Schedule -> Tile for the arg-reduce family (arg_reduce_schedule.hpp).
#pragma once
#include <string>

#include "families/arg_reduce/arg_reduce_schedule.hpp"
#include "ir/ir.hpp"

namespace tessera::families::arg_reduce {

void build_kernel(ir::Module& m, const std::string& sym, const Plan& p, const ir::Op& schedule_op);

}  // namespace tessera::families::arg_reduce
