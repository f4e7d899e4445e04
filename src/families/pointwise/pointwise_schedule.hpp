// The pointwise family: a region of pointwise ops (any numpy broadcasting)
// becomes one kernel that writes the region's result once.
//
// The iteration space is the result's shape, coalesced into groups of adjacent
// dims in which every leaf is linear (leaf_map.hpp); the last group is the
// vector dim. A program covers `rows_per_program` rows (the other groups,
// flattened) and a `chunk` of the vector dim; leaf offsets of a row come from
// its group coordinates (div/rem once per row), lanes advance by 1 or 0 (by
// any stride for a view: a transposed leaf is read with strided loads).
// On GPUs a short vector dim takes several rows a tile (`tile_rows`,
// consecutive along the next group, whose extent it divides): a tile is then
// [tile_rows, vector dim], each leaf read at its own row stride (tile.load2d),
// so that short rows (a head's 128 lanes) do not leave most of a block idle.
// A leaf may be a view of its operand (leaf_offsets: it starts at an offset
// and its strides are the view's), and a region with no ops copies a view
// into a buffer of its own (attribute `materialize` says why).
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "families/fused/region.hpp"
#include "families/plan_fields.hpp"
#include "ir/ir.hpp"
#include "machine/descriptor.hpp"

namespace tessera::families::pointwise {

struct Plan {
  std::vector<int64_t> view;                       // group extents; the last is the vector dim
  std::vector<std::vector<int64_t>> leaf_strides;  // per leaf, per group
  std::vector<int64_t> leaf_offsets;               // per leaf: its first element (views: not 0)
  // Per leaf a concat gathers: its strides over its own dims (empty: not gathered).
  std::vector<std::vector<int64_t>> gather_strides;
  DType compute = DType::F32;
  int64_t threads = 1, vector_width = 16, unroll = 4;  // tile = threads * vector_width * unroll lanes
  int64_t chunk = 0;                                   // vector-dim elements per program
  int64_t rows_per_program = 1;
  int64_t tile_rows = 0;  // > 1: rows a tile (then chunk = the vector dim, rows_per_program = tile_rows)
  int64_t programs = 0;

  int64_t tile_lanes() const { return threads * vector_width * unroll; }
  int64_t rows() const;
  int64_t chunks_per_row() const { return chunk ? (view.back() + chunk - 1) / chunk : 0; }
};

ir::Value* emit_schedule(ir::Builder& b, const fused::FusedRegion& region,
                         const std::unordered_map<const ir::Value*, ir::Value*>& map, const machine::Descriptor& device,
                         const std::string& prefix);

// The plan recorded on a schedule.pointwise (validated, E302).
// The fields a schedule.pointwise records (plan_fields.hpp).
const std::vector<Field<Plan>>& plan_fields();

Plan read_plan(const ir::Op& schedule_op);

}  // namespace tessera::families::pointwise
