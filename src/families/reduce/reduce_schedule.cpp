#include "families/reduce/reduce_schedule.hpp"

#include "families/device_attr.hpp"
#include "families/fused/expr_tile.hpp"
#include "families/fused/leaf_map.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/schedule_dialect.hpp"

namespace tessera::families::reduce {

using namespace tessera::ir;

ir::Value* emit_schedule(Builder& b, const fused::FusedRegion& region,
                         const std::unordered_map<const Value*, Value*>& map, const machine::Descriptor& device,
                         const std::string& prefix) {
  const Op& graph_op = *region.core;
  ReduceSpec spec = reduce_spec(graph_op);
  const Value* input = graph_op.operands[0];
  const bool prologue = region.ops.size() > 1;
  std::vector<Pass> passes = plan_passes(input->type, spec, device);
  Value* current = prologue ? nullptr : map.at(input);
  for (size_t i = 0; i < passes.size(); ++i) {
    const Pass& p = passes[i];
    const bool last = i + 1 == passes.size();
    Type out = last ? graph_op.results[0]->type : Type::tensor(p.out_dtype, {p.outer, p.chunks, p.inner});
    AttrDict a;
    // the graph contract, so the hash covers what the user asked for
    a["family"] = "reduce";
    record_device(a, device);
    a["kind"] = reduce_kind_name(spec.kind);
    a["axes"] = Attr::ints(spec.axes);
    a["keepdims"] = spec.keepdims;
    a["pass"] = Attr::ints({static_cast<int64_t>(i), static_cast<int64_t>(passes.size())});
    // the decisions
    a["combine"] = p.combine;
    a["finalize"] = p.finalize;
    if (p.finalize == "mean") a["mean_count"] = p.mean_count;
    a["outer"] = p.outer;
    a["extent"] = p.extent;
    a["inner"] = p.inner;
    a["chunks"] = p.chunks;
    a["storage"] = std::string(dtype_name(p.in_dtype));
    a["accum"] = std::string(dtype_name(p.accum));
    a["strategy"] = p.strategy;
    a["threads"] = p.threads;
    a["vector_width"] = p.vector_width;
    a["unroll"] = p.unroll;
    if (p.strategy == "rows") {
      a["rows_per_program"] = p.rows_per_program;
      a["rows_in_flight"] = p.rows_in_flight;
    } else {
      a["columns_per_program"] = p.columns_per_program;
      a["row_unroll"] = p.row_unroll;
      a["accumulator"] = p.accumulator;
    }
    a["programs"] = p.programs;
    a["nan_mode"] = p.nan_mode;
    if (i == 0 && prologue) {  // the fused pointwise ops, read through their leaves
      const int64_t first = spec.axes.front(), last = spec.axes.back();
      const std::vector<int> groups = {static_cast<int>(first), static_cast<int>(last - first + 1),
                                       static_cast<int>(input->type.rank() - 1 - last)};
      std::vector<std::vector<int64_t>> strides;
      for (const Value* leaf : region.leaves)
        strides.push_back(*fused::group_strides(leaf->type.shape, input->type.shape, groups));
      a["leaf_strides"] = fused::leaf_strides_attr(strides);
    }
    Op& op = i == 0 && prologue
                 ? fused::create_region_op(b, "schedule.reduce", region.leaves,
                                           std::vector<const Op*>(region.ops.begin(), region.ops.end() - 1), input,
                                           map, prefix)
                 : b.create("schedule.reduce", {current});
    op.attrs = std::move(a);
    op.loc = graph_op.loc;
    current = op.add_result(last ? graph_op.results[0]->name : b.fresh_name(), out);
    stamp_artifact_hash(op);
  }
  return current;
}

Pass read_pass(const Op& op) {
  const machine::Descriptor device = read_device(op);
  Pass p;
  p.combine = string_attr(op, "combine");
  p.finalize = string_attr(op, "finalize");
  p.mean_count = p.finalize == "mean" ? int_attr(op, "mean_count") : 1;
  p.outer = int_attr(op, "outer");
  p.extent = int_attr(op, "extent");
  p.inner = int_attr(op, "inner");
  p.chunks = int_attr(op, "chunks");
  p.strategy = string_attr(op, "strategy");
  if (!op.regions.empty()) {  // a fused prologue: its leaves, addressed per [outer, extent, inner]
    fused::verify_region(op);
    p.leaf_strides = fused::read_leaf_strides(op, 3, p.strategy == "rows" ? 1 : 2);
  }
  p.threads = int_attr(op, "threads");
  p.vector_width = int_attr(op, "vector_width");
  p.unroll = int_attr(op, "unroll");
  p.programs = int_attr(op, "programs");
  p.nan_mode = string_attr(op, "nan_mode");
  auto dtype = [&](const std::string& key) {
    auto d = parse_dtype(string_attr(op, key));
    if (!d) fail("E302", "'" + key + "' must name a dtype", op.loc);
    return *d;
  };
  p.accum = dtype("accum");
  p.in_dtype = op.regions.empty() ? op.operands.at(0)->type.dtype : p.accum;
  p.out_dtype = op.results.at(0)->type.dtype;
  if (p.combine != "sum" && p.combine != "max" && p.combine != "min" && p.combine != "prod")
    fail("E302", "unknown combine '" + p.combine + "'", op.loc);
  if (p.finalize != "none" && p.finalize != "mean") fail("E302", "unknown finalize '" + p.finalize + "'", op.loc);
  if (p.strategy == "rows") {
    p.rows_per_program = int_attr(op, "rows_per_program");
    p.rows_in_flight = int_attr(op, "rows_in_flight");
  }
  else if (p.strategy == "columns") {
    p.columns_per_program = int_attr(op, "columns_per_program");
    p.row_unroll = int_attr(op, "row_unroll");
    p.accumulator = string_attr(op, "accumulator");
  }
  else fail("E302", "unknown strategy '" + p.strategy + "'", op.loc);
  auto positive = [&](int64_t v, const char* what) {
    if (v < 1) fail("E302", std::string("'") + what + "' must be positive", op.loc);
  };
  if (p.outer < 0 || p.extent < 0 || p.inner < 0) fail("E302", "negative extent in schedule", op.loc);
  positive(p.chunks, "chunks");
  positive(p.vector_width, "vector_width");
  positive(p.unroll, "unroll");
  positive(p.mean_count, "mean_count");
  if (p.strategy == "rows") {
    positive(p.rows_per_program, "rows_per_program");
    positive(p.rows_in_flight, "rows_in_flight");
    if (p.rows_in_flight > 16 || (p.chunks > 1 && p.rows_in_flight > 1))
      fail("E302", "rows_in_flight must be at most 16, and 1 for chunked rows", op.loc);
  }
  else {
    positive(p.columns_per_program, "columns_per_program");
    positive(p.row_unroll, "row_unroll");
    if (p.row_unroll > 64) fail("E302", "row_unroll must be at most 64", op.loc);
  }
  positive(p.threads, "threads");
  check_threads(op, device, p.threads);
  if (p.vector_width > 256 || p.unroll > 256) fail("E302", "at most 256 lanes a thread", op.loc);
  if ((p.vector_width & (p.vector_width - 1)) || (p.unroll & (p.unroll - 1)) || (p.threads & (p.threads - 1)) ||
      p.threads > 1024 || p.vector_width * p.unroll > 256)
    fail("E302", "threads, vector_width and unroll must be powers of two (threads <= 1024, 256 lanes a thread)",
         op.loc);
  if (p.strategy == "columns" && p.accumulator != "scratch" && p.accumulator != "registers")
    fail("E302", "accumulator must be \"scratch\" or \"registers\"", op.loc);
  if (p.strategy == "columns" && p.accumulator == "registers" && p.columns_per_program != p.tile_lanes())
    fail("E302", "a registers accumulator holds exactly one tile of columns", op.loc);
  if (p.strategy == "rows" && p.threads > 1 && p.rows_in_flight != 1)
    fail("E302", "rows_in_flight must be 1 when a program has several threads", op.loc);
  if (p.strategy == "columns" && p.columns_per_program % p.tile_lanes())
    fail("E302", "columns_per_program must be a multiple of vector_width * unroll", op.loc);
  const int64_t input_numel = op.regions.empty() ? op.operands[0]->type.numel()
                                                 : op.regions[0]->ops.back()->operands[0]->type.numel();
  if (input_numel != p.outer * p.extent * p.inner)
    fail("E302", "outer * extent * inner does not match the input size", op.loc);
  for (size_t l = 0; l < p.leaf_strides.size(); ++l)
    fused::check_leaf_reach({p.outer, p.extent, p.inner}, p.leaf_strides[l], op.operands[l]->type, op);
  if (op.results[0]->type.numel() != p.outer * p.chunks * p.inner)
    fail("E302", "outer * chunks * inner does not match the output size", op.loc);
  return p;
}

}  // namespace tessera::families::reduce
