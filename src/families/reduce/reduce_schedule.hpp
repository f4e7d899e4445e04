// Graph -> Schedule for the reduce family, and reading the decisions back.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

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

// The dims of the input the reduction `core` iterates as [outer, extent,
// inner] when it is one pass (its reduced axes contiguous once unit dims are
// ignored, some of them not unit), which is when a prologue can join it;
// nullopt otherwise.
std::optional<std::vector<int>> prologue_groups(const ir::Op& core);

// Where the first pass reads leaf `v` of a reduction's prologue region
// (fused::leaf_read over the reduction's [outer, extent, inner]); nullopt
// also when the reduction is not one pass.
std::optional<fused::LeafRead> leaf_read(const ir::Value* v, const ir::Op& core,
                                         const std::function<bool(const ir::Value*)>& has_buffer);

// The pass recorded on a schedule.reduce (validated, E302 on a missing or bad attribute).
Pass read_pass(const ir::Op& schedule_op);

}  // namespace tessera::families::reduce
