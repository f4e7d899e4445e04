// Graph -> Schedule for the reduce family, and reading the decisions back.
#pragma once
#include <string>

#include "families/fused/region.hpp"
#include "families/reduce/reduce_plan.hpp"
#include "ir/ir.hpp"
#include "machine/descriptor.hpp"

namespace tessera::families::reduce {

// Emits one stamped schedule.reduce per pass; returns the final value. When
// the region has a pointwise prologue, the first pass carries it as a region
// and reads its leaves (strides in `leaf_strides`, per [outer, extent, inner]).
ir::Value* emit_schedule(ir::Builder& b, const fused::FusedRegion& region,
                         const std::unordered_map<const ir::Value*, ir::Value*>& map, const machine::Descriptor& device,
                         const std::string& prefix);

// The pass recorded on a schedule.reduce (validated, E302 on a missing or bad attribute).
Pass read_pass(const ir::Op& schedule_op);

}  // namespace tessera::families::reduce
