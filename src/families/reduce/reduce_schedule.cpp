#include "families/reduce/reduce_schedule.hpp"

#include <algorithm>

#include "families/device_attr.hpp"
#include "families/fused/expr_tile.hpp"
#include "families/fused/leaf_map.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/schedule_dialect.hpp"
#include "support/checked_math.hpp"

namespace tessera::families::reduce {

using namespace tessera::ir;

const std::vector<Field<Pass>>& pass_fields() {
  using When = Field<Pass>::When;
  auto rows = [](const Pass& p) { return p.strategy == Strategy::Rows; };
  auto columns = [](const Pass& p) { return p.strategy == Strategy::Columns; };
  static const std::vector<Field<Pass>> fields = {
      field("combine", &Pass::combine),
      field("finalize", &Pass::finalize),
      field("mean_count", &Pass::mean_count, When::Always, [](const Pass& p) { return p.finalize == Finalize::Mean; }),
      field("outer", &Pass::outer),
      field("extent", &Pass::extent),
      field("inner", &Pass::inner),
      field("chunks", &Pass::chunks),
      field("accum", &Pass::accum),
      field("strategy", &Pass::strategy),
      field("threads", &Pass::threads),
      field("vector_width", &Pass::vector_width),
      field("unroll", &Pass::unroll),
      field("rows_per_program", &Pass::rows_per_program, When::Always, rows),
      field("rows_in_flight", &Pass::rows_in_flight, When::Always, rows),
      field("columns_per_program", &Pass::columns_per_program, When::Always, columns),
      field("row_unroll", &Pass::row_unroll, When::Always, columns),
      field("accumulator", &Pass::accumulator, When::Always, columns),
      field("row_groups", &Pass::row_groups, When::IfNotDefault, columns),
      field("programs", &Pass::programs),
      field("nan_mode", &Pass::nan_mode),
  };
  return fields;
}

std::optional<std::vector<int>> prologue_groups(const Op& core) {
  const ReduceSpec spec = reduce_spec(core);
  const Type& x = core.operands[0]->type;
  if (spec.axes.empty()) return std::nullopt;
  // One pass only when the reduced axes are contiguous once unit dims are ignored.
  const int64_t first = spec.axes.front(), last = spec.axes.back();
  int64_t reduced = 1;
  for (int64_t d = first; d <= last; ++d) {
    const bool axis = std::binary_search(spec.axes.begin(), spec.axes.end(), d);
    if (x.shape[d] != 1 && !axis) return std::nullopt;
    reduced *= axis ? x.shape[d] : 1;
  }
  if (reduced == 1) return std::nullopt;  // only unit dims: planned as an elementwise pass over another view
  return std::vector<int>{static_cast<int>(first), static_cast<int>(last - first + 1),
                          static_cast<int>(x.rank() - 1 - last)};
}

std::optional<fused::LeafRead> leaf_read(const Value* v, const Op& core,
                                         const std::function<bool(const Value*)>& has_buffer) {
  const auto groups = prologue_groups(core);
  if (!groups) return std::nullopt;
  return fused::leaf_read(v, core.operands[0]->type.shape, *groups, has_buffer);
}

ir::Value* emit_schedule(Builder& b, const fused::FusedRegion& region,
                         const std::unordered_map<const Value*, Value*>& map, const machine::Descriptor& device,
                         const std::string& prefix) {
  const Op& graph_op = *region.core;
  ReduceSpec spec = reduce_spec(graph_op);
  const Value* input = graph_op.operands[0];
  // A view the reduction reads directly is read through its layout, as a
  // prologue leaf (an empty prologue); fusion leaves it a view only when the
  // reduction is one pass (prologue_groups).
  const bool prologue = region.ops.size() > 1 || (input->def && is_view_op(input->def->name) && !map.count(input));
  std::unordered_map<const Value*, Value*> bases = map;  // each leaf reads its base's buffer
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
    write_fields(pass_fields(), p, a);
    a["storage"] = std::string(dtype_name(p.in_dtype));  // what the pass reads (derived again when read)
    if (i == 0 && prologue) {                            // the fused pointwise ops, read through their leaves
      std::vector<std::vector<int64_t>> strides;
      std::vector<int64_t> offsets;
      bool views = false;
      for (const Value* leaf : region.leaves) {
        const auto read = leaf_read(leaf, graph_op, [&](const Value* u) { return map.count(u) > 0; });
        if (!read)
          fail("E303", "reduce: leaf %" + leaf->name + " is not linear in the reduction's dims (fusion copies it)");
        strides.push_back(read->strides);
        offsets.push_back(read->offset);
        if (read->base != leaf) bases[leaf] = map.at(read->base), views = true;
      }
      a["leaf_strides"] = fused::leaf_strides_attr(strides);
      if (views) a["leaf_offsets"] = Attr::ints(offsets);  // views: leaves read from their bases' buffers
    }
    Op& op = i == 0 && prologue
                 ? fused::create_region_op(b, "schedule.reduce", region.leaves,
                                           std::vector<const Op*>(region.ops.begin(), region.ops.end() - 1), input,
                                           bases, prefix)
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
  read_fields(pass_fields(), op, p);
  if (!op.regions.empty()) {  // a fused prologue: its leaves, addressed per [outer, extent, inner]
    const bool views = op.attr("leaf_offsets") != nullptr;
    fused::verify_region(op, views);
    p.leaf_strides = fused::read_leaf_strides(op, 3, views ? SIZE_MAX : (p.strategy == Strategy::Rows ? 1 : 2));
    p.leaf_offsets.assign(op.operands.size(), 0);
    if (views) {
      const auto off = op.attr("leaf_offsets")->as_ints();
      if (!off || off->size() != op.operands.size())
        fail("E302", "schedule.reduce: 'leaf_offsets' has one integer per operand", op.loc);
      p.leaf_offsets = *off;
    }
  }
  p.in_dtype = op.regions.empty() ? op.operands.at(0)->type.dtype : p.accum;
  p.out_dtype = op.results.at(0)->type.dtype;
  auto positive = [&](int64_t v, const char* what) {
    if (v < 1) fail("E302", std::string("'") + what + "' must be positive", op.loc);
  };
  if (p.outer < 0 || p.extent < 0 || p.inner < 0) fail("E302", "negative extent in schedule", op.loc);
  positive(p.chunks, "chunks");
  positive(p.vector_width, "vector_width");
  positive(p.unroll, "unroll");
  positive(p.mean_count, "mean_count");
  if (p.strategy == Strategy::Rows) {
    positive(p.rows_per_program, "rows_per_program");
    positive(p.rows_in_flight, "rows_in_flight");
    if (p.rows_in_flight > 16 || (p.chunks > 1 && p.rows_in_flight > 1))
      fail("E302", "rows_in_flight must be at most 16, and 1 for chunked rows", op.loc);
  } else {
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
  positive(p.row_groups, "row_groups");
  // The folded slab goes through shared memory whole: at most 16 KiB (the
  // planner's are at most 8 KiB), within every GPU's static shared memory.
  if (p.row_groups > 1 &&
      (!device.gpu() || p.accumulator != Accumulator::Registers || p.combine != Combine::Sum || !op.regions.empty() ||
       p.tile_lanes() % p.row_groups || (p.tile_lanes() / p.row_groups) % p.vector_width ||
       p.tile_lanes() * static_cast<int64_t>(dtype_size(p.accum)) > 16384))
    fail("E302",
         "row_groups needs a GPU, a registers accumulator, a sum without a fused prologue, tile rows of whole "
         "vectors and a tile of at most 16 KiB",
         op.loc);
  if (p.strategy == Strategy::Columns && p.accumulator == Accumulator::Registers &&
      p.columns_per_program * p.row_groups != p.tile_lanes())
    fail("E302", "a registers accumulator holds exactly one tile of columns (a row of it with row_groups)", op.loc);
  if (p.strategy == Strategy::Rows && p.threads > 1 && p.rows_in_flight != 1)
    fail("E302", "rows_in_flight must be 1 when a program has several threads", op.loc);
  if (p.strategy == Strategy::Columns && p.row_groups == 1 && p.columns_per_program % p.tile_lanes())
    fail("E302", "columns_per_program must be a multiple of vector_width * unroll", op.loc);
  const int64_t input_numel = op.regions.empty() ? op.operands[0]->type.numel()
                                                 : op.regions[0]->ops.back()->operands[0]->type.numel();
  if (checked_product({p.outer, p.extent, p.inner}) != input_numel)
    fail("E302", "outer * extent * inner does not match the input size", op.loc);
  for (size_t l = 0; l < p.leaf_strides.size(); ++l)
    fused::check_leaf_reach({p.outer, p.extent, p.inner}, p.leaf_strides[l], op.operands[l]->type, op,
                            p.leaf_offsets[l]);
  if (checked_product({p.outer, p.chunks, p.inner}) != op.results[0]->type.numel())
    fail("E302", "outer * chunks * inner does not match the output size", op.loc);
  return p;
}

}  // namespace tessera::families::reduce
