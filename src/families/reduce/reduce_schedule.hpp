// Graph -> Schedule for the reduce family, and reading the decisions back.
#pragma once
#include <string>

#include "families/reduce/reduce_plan.hpp"
#include "ir/ir.hpp"

namespace tessera::families::reduce {

// Emits one stamped schedule.reduce per pass; returns the final value.
ir::Value* emit_schedule(ir::Builder& b, const ir::Op& graph_op, const std::string& target);

// The pass recorded on a schedule.reduce (validated, E302 on a missing or bad attribute).
Pass read_pass(const ir::Op& schedule_op);

}  // namespace tessera::families::reduce
