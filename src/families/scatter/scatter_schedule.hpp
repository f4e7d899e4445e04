// The scatter family: tessera.scatter_add, gather's transpose (an embedding
// table's gradient). The result is seen as [pre, extent, post] and the
// values g as [pre, count, post] (count: how many indices). A program owns
// `rows_per_program` consecutive rows along the extent: it zeroes them, then
// walks the indices in order and adds g's slice for each index that lands in
// its rows, a tile of post lanes at a time. Work is one pass over g plus a
// scan of the indices a program, and each row's sum runs in index order:
// deterministic, with no atomics. The kernel accumulates in the compute type
// (f32, f64 for f64); graph_to_schedule casts a narrower result after it.
// Indices wrap (negative ones count from the end) and clamp; an index outside
// [-extent, extent) is reported by the func's index guard (E615).
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "families/fused/region.hpp"
#include "families/plan_fields.hpp"
#include "ir/ir.hpp"
#include "machine/descriptor.hpp"

namespace tessera::families::scatter {

struct Plan {
  // facts (of the graph op)
  int64_t pre = 1, extent = 0, post = 1, count = 0;
  DType compute = DType::F32;
  // decisions
  int64_t threads = 1, vector_width = 16;  // a tile of post lanes
  int64_t rows_per_program = 1;
  int64_t programs = 0;

  int64_t tile_lanes() const { return threads * vector_width; }
};

const std::vector<Field<Plan>>& fact_fields();
const std::vector<Field<Plan>>& decision_fields();

// Appends the stamped schedule.scatter of the region (the op alone); its
// result is in the compute type.
ir::Value* emit_schedule(ir::Builder& b, const fused::FusedRegion& region,
                         const std::unordered_map<const ir::Value*, ir::Value*>& map, const machine::Descriptor& device,
                         const std::string& prefix);

// The plan recorded on a schedule.scatter (validated, E302).
Plan read_plan(const ir::Op& schedule_op);

}  // namespace tessera::families::scatter
