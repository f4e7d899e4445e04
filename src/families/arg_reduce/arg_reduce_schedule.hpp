// The arg-reduce family: tessera.argmax / argmin along one axis. The operand
// is seen as [outer, extent, inner]; the result has outer * inner positions.
// A program owns `chunk` consecutive results; its lanes take one result each
// and walk the extent in order, reading their elements by gather (inner > 1:
// neighbouring lanes read neighbouring elements), keeping the best value and
// its position: a strictly better value replaces it, so the first of equal
// values wins; a NaN beats every number and no later NaN replaces it (numpy's
// rule). No lane reduction, so every result is computed in one fixed order.
// The operand is read from memory (no fused prologue; a view is copied).
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "families/fused/region.hpp"
#include "families/plan_fields.hpp"
#include "ir/ir.hpp"
#include "machine/descriptor.hpp"

namespace tessera::families::arg_reduce {

struct Plan {
  // facts (of the graph op)
  bool max = true;
  int64_t outer = 1, extent = 1, inner = 1;
  DType compute = DType::F32;  // f32 for f16/bf16/f32, f64, i32 for i1/i32, i64
  // decisions
  int64_t threads = 1, vector_width = 16;  // a tile: threads * vector_width lanes
  int64_t chunk = 0;                       // results a program, a multiple of the tile
  int64_t programs = 0;

  int64_t tile_lanes() const { return threads * vector_width; }
  int64_t results() const { return outer * inner; }
};

const std::vector<Field<Plan>>& fact_fields();
const std::vector<Field<Plan>>& decision_fields();

// Appends the stamped schedule.arg_reduce of the region (the op alone).
ir::Value* emit_schedule(ir::Builder& b, const fused::FusedRegion& region,
                         const std::unordered_map<const ir::Value*, ir::Value*>& map, const machine::Descriptor& device,
                         const std::string& prefix);

// The plan recorded on a schedule.arg_reduce (validated, E302).
Plan read_plan(const ir::Op& schedule_op);

}  // namespace tessera::families::arg_reduce
