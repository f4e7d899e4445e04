#include "families/rowwise/rowwise_schedule.hpp"

#include <algorithm>
#include <array>
#include <bit>

#include "families/device_attr.hpp"
#include "families/fused/expr_tile.hpp"
#include "families/fused/leaf_map.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/schedule_dialect.hpp"
#include "support/experimental.hpp"

namespace tessera::families::rowwise {

using namespace tessera::ir;

namespace {

// Rows on CUDA: the smallest block whose tile holds the whole row (up to
// 1024 threads x 4 lanes x 4 = 16K f32 lanes, 16 registers a thread); with
// the experimental feature rows_cluster (support/experimental.hpp; not a
// default: its win was narrow, docs/journal.md), longer rows in a cluster of
// 2, 4 or 8 such blocks (8 is the portable cluster size; a block an SM, so the row is on chip across 8 SMs),
// up to 32 lanes (128 bytes of registers) a thread: 256K f32 or bf16 lanes;
// else a 256x4x4 tile streamed along the row. Columns: one lane per column, a
// block as wide as the columns (at most 256 threads x 4).
// storage_bytes: the narrowest element the kernel reads or writes;
// rows_16bit: every leaf read a row at a time (the ones a prefetch would
// fetch) is 16-bit.
// staged_leaf_bytes: the element size of the one leaf read a row at a time
// (0: none, or more than one).
void choose(Plan& p, const machine::Descriptor& d, int64_t storage_bytes, DType out_dtype, bool rows_16bit,
            int64_t staged_leaf_bytes) {
  const int64_t esize = static_cast<int64_t>(dtype_size(p.compute));
  using machine::Cap;
  if (!d.gpu()) {
    p.threads = 1;
    p.vector_width = 64 / esize;
    p.unroll = 4;
    p.resident = false;
  } else {
    // 16-byte loads of the narrowest storage type: f16/bf16 rows with 4 lanes
    // a load moved half the bytes per instruction and reached half the bandwidth.
    p.vector_width = 16 / std::max<int64_t>(std::min(esize, storage_bytes), 2);
    const int64_t want = p.strategy == Strategy::Rows ? p.extent : p.inner;
    // (16-bit rows of 4096 as 128 x 4 instead of 256 x 2 helped softmax and
    // hurt the norms on the H200, docs/journal.md; the L2 prefetch below is
    // the better lever.)
    using Shape = std::pair<int64_t, int64_t>;  // {threads, unroll}
    const std::vector<Shape> shapes = p.strategy == Strategy::Rows
                                          ? std::vector<Shape>{{32, 1},  {64, 1},  {128, 1}, {128, 2},
                                                               {256, 2}, {256, 4}, {512, 4}, {1024, 4}}
                                          : std::vector<Shape>{{32, 1}, {64, 1}, {128, 1}, {256, 1}};
    p.resident = false;
    for (auto [threads, unroll] : shapes) {
      p.threads = threads;
      p.unroll = unroll;
      if (p.tile_lanes() >= want) {
        p.resident = p.strategy == Strategy::Rows;
        break;
      }
    }
    if (d.has(Cap::Clusters) && d.max_cluster >= 8 && p.strategy == Strategy::Rows && !p.resident && !p.pick &&
        !p.grad() && experimental("rows_cluster")) {
      // {threads, unroll, cluster}. 1024 threads: one block an SM at 64
      // registers a thread (__launch_bounds__(1024)), 32 of them lanes at most.
      // Not a default (docs/journal.md): an SM's one block loads, then
      // reduces, then stores, with nothing to overlap.
      using Shape3 = std::array<int64_t, 3>;
      const std::vector<Shape3> cluster_shapes = {{1024, 4, 2}, {1024, 4, 4}, {1024, 4, 8}, {1024, 8, 8}};
      for (const auto& [threads, unroll, cluster] : cluster_shapes) {
        if (p.vector_width * unroll * esize > 128) break;
        p.threads = threads;
        p.unroll = unroll;
        p.cluster = cluster;
        if (p.tile_lanes() >= want) {
          p.resident = true;
          break;
        }
      }
      if (!p.resident) p.cluster = 1;
    }
    // f32 rows of 128K-256K lanes are resident by default in a cluster of 16
    // blocks of 512 threads, 32 lanes a thread, two blocks an SM (Hopper's
    // non-portable cluster size, opted into when the kernel loads), so that
    // two rows' load, reduce and store phases overlap on an SM. On the H200
    // it beat the streamed schedule only at these lengths in f32; shorter
    // rows (16 lanes a thread) and bf16 rows lost (docs/journal.md;
    // bench/evidence/cuda/raw/rows-cluster16-lengths-h200-c0ce1b5.log), so
    // only this shape is a default.
    // (A picked row is written as one element: it keeps to one block.)
    if (d.has(Cap::Clusters) && d.max_cluster >= 16 && p.strategy == Strategy::Rows && !p.resident && !p.pick &&
        !p.grad() && esize == 4 && storage_bytes == 4 && p.vector_width == 4 && want > 131072 &&
        want <= 512 * 4 * 8 * 16) {
      p.threads = 512, p.unroll = 8, p.cluster = 16, p.resident = true;
    }
    // Rows past one block, read from one leaf, staged (the default where the
    // shape allows): a cluster of 8 blocks of 512 threads holds the row, each
    // thread 2..16 vectors of it; persistent clusters (one block an SM) copy
    // the next row into shared memory while this one is reduced and written.
    // On the H200 this came close to a plain copy's bandwidth, well ahead of
    // the resident cluster of 16 above and of streaming (the probe:
    // bench/evidence/cuda/raw/probe-rows-staged-cluster-h200.log; the
    // packet: bench/evidence/cuda/rowops.packet.json).
    // (The experimental rows_cluster, asked for, keeps its own shapes.)
    if (d.has(Cap::Clusters) && d.has(Cap::BulkCopy) && d.max_cluster >= 8 && p.strategy == Strategy::Rows && !p.pick &&
        !p.grad() && (!p.resident || p.cluster > 1) && staged_leaf_bytes > 0 &&
        staged_leaf_bytes * p.vector_width == 16 && !experimental("rows_cluster")) {
      const int64_t per_unroll = 512 * p.vector_width * 8;
      const int64_t unroll = want / per_unroll;
      const int64_t share_bytes = want / 8 * staged_leaf_bytes;  // a block's shared memory
      if (want % per_unroll == 0 && unroll >= 2 && unroll * p.vector_width <= 64 &&
          share_bytes <= std::min<int64_t>(160 * 1024, d.shared_bytes)) {
        p.threads = 512, p.unroll = unroll, p.cluster = 8, p.resident = true, p.staged = true;
      }
    }
    if (p.strategy == Strategy::Rows && !p.resident) {
      p.threads = 256;
      p.unroll = 4;
    }
    // 16-bit resident rows hold few bytes in flight a program (a bf16 row of
    // 4096 is 8 KiB, and 44 registers a thread allow 5 programs an SM): on the
    // H200 an L2 prefetch of the row 512 programs ahead sped up bf16 softmax
    // and the norms; 1024 was as good, 2048 worse. f32 rows (16 KiB, 8
    // programs an SM) lost with it, so they go without, as do rows with any
    // wider leaf (bench/evidence/cuda/raw/rows-l2-prefetch-variants-h200-65f9fd9.txt).
    // Fewer than 512 rows still prefetch (the last row, clamped): cheap, and
    // it keeps the path under the GPU tests' small shapes.
    // A norm gradient's program walks its own consecutive rows: it asks for
    // the row after the one it works on (on the H100 bf16 rows ran faster
    // with it, two rows ahead gained less and f32 rows lost:
    // bench/evidence/cuda/raw/norm-grad-prefetch-h100-a1e39e9.log).
    if (d.has(Cap::L2Prefetch) && p.strategy == Strategy::Rows && p.resident && p.cluster == 1 && rows_16bit)
      p.prefetch_rows = p.norm_grad() ? 1 : 512;
  }
  p.online = d.gpu() && p.strategy == Strategy::Rows && !p.resident && p.softmax_like();
  p.stash_exp = !d.gpu() && p.strategy == Strategy::Rows && p.op == RowOp::Softmax && out_dtype == p.compute;
  p.programs = p.strategy == Strategy::Rows ? p.outer : p.outer * p.column_blocks();
  if (p.norm_grad()) {
    // Programs enough to fill the machine and no more: each writes a row of
    // partial sums per weight, which the second stage reads again. A resident
    // gradient row holds x, dy, w and two accumulators a thread, so few blocks
    // fit a GPU unit: four programs a unit; 64 on the CPU (its thread pool
    // splits them).
    const int64_t units = std::max<int64_t>(d.compute_units, 1);
    const int64_t want = d.gpu() ? static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(units * 4))) : 64;
    p.rows_per_program = std::max<int64_t>(1, (p.outer + want - 1) / want);
    p.programs = (p.outer + p.rows_per_program - 1) / p.rows_per_program;
    // dy and w load with x (bench/evidence/cuda/raw/rowgrad-early-loads-h100-66214c2.log).
    p.early_loads = d.gpu() && p.resident;
  } else if (d.gpu() && p.strategy == Strategy::Rows && p.resident && p.cluster == 1 && !p.staged && !p.pick &&
             ((rows_16bit && (p.op == RowOp::SoftmaxGrad || p.op == RowOp::LogSoftmaxGrad)) ||
              experimental("rows_walk"))) {
    // Programs that walk consecutive rows (four a unit), each asking for its
    // own next row in L2, as the norm gradients' do: no block launch a row.
    // On the H100 this sped up the bf16 softmax gradient (two 16-bit rows
    // read) and slowed its f32 form and the forward rows, which keep a
    // program a row and the far prefetch (the experimental rows_walk walks
    // them too; bench/evidence/cuda/raw/rows-walk-h100-08ace46.log).
    const int64_t want = std::max<int64_t>(d.compute_units, 1) * 4;
    p.walk = true;
    p.rows_per_program = std::max<int64_t>(1, (p.outer + want - 1) / want);
    p.programs = (p.outer + p.rows_per_program - 1) / p.rows_per_program;
    if (p.prefetch_rows > 0) p.prefetch_rows = 1;
  }
}

}  // namespace

const std::vector<Field<Plan>>& plan_fields() {
  using When = Field<Plan>::When;
  static const std::vector<Field<Plan>> fields = {
      field("op", &Plan::op),
      field("eps", &Plan::eps, When::Always, [](const Plan& p) { return p.norm(); }),
      field("outer", &Plan::outer),
      field("extent", &Plan::extent),
      field("inner", &Plan::inner),
      field("compute", &Plan::compute),
      field("strategy", &Plan::strategy),
      field("resident", &Plan::resident),
      field("online", &Plan::online),
      field("stash_exp", &Plan::stash_exp),
      field("threads", &Plan::threads),
      field("vector_width", &Plan::vector_width),
      field("unroll", &Plan::unroll),
      field("cluster", &Plan::cluster, When::IfNotDefault),
      field("prefetch_rows", &Plan::prefetch_rows, When::IfNotDefault),
      field("staged", &Plan::staged, When::IfNotDefault),
      field("pick", &Plan::pick, When::IfNotDefault),
      field("walk", &Plan::walk, When::IfNotDefault),
      field("rows_per_program", &Plan::rows_per_program, When::Always,
            [](const Plan& p) { return p.norm_grad() || p.walk; }),
      field("early_loads", &Plan::early_loads, When::IfNotDefault),
      field("programs", &Plan::programs),
  };
  return fields;
}

Op& emit_schedule(Builder& b, const fused::FusedRegion& region, const std::unordered_map<const Value*, Value*>& map,
                  const machine::Descriptor& device, const std::string& prefix) {
  const Op& core = *region.core;
  const Type& x = core.operands[0]->type;
  Plan p;
  if (!parse_enum(core.name.substr(8), p.op))
    fail("E303", "'" + core.name + "' is not a row op (a fusion bug)", core.loc);
  const int64_t axis = row_op_axis(core);
  p.eps = p.norm() ? row_op_eps(core) : 0.0;
  for (int64_t d = 0; d < x.rank(); ++d) (d < axis ? p.outer : d == axis ? p.extent : p.inner) *= x.shape[d];
  const std::vector<int> groups = {static_cast<int>(axis), 1, static_cast<int>(x.rank() - 1 - axis)};
  // A view is read through its layout from its base's buffer (fusion copies
  // the ones that are not linear in the row view).
  std::unordered_map<const Value*, Value*> bases = map;
  bool views = false;
  for (const Value* leaf : region.leaves) {
    const auto read = fused::leaf_read(leaf, x.shape, groups, [&](const Value* u) { return map.count(u) > 0; });
    if (!read) fail("E303", "fused region: leaf %" + leaf->name + " is not linear in the row view (a fusion bug)");
    p.leaf_strides.push_back(read->strides);
    p.leaf_offsets.push_back(read->offset);
    if (read->base != leaf) bases[leaf] = map.at(read->base), views = true;
  }
  p.strategy = p.inner == 1 ? Strategy::Rows : Strategy::Columns;
  p.pick = is_index_op(region.result->def->name);
  Op& op = fused::create_region_op(b, "schedule.rowwise", region.leaves, region.ops, region.result, bases, prefix);
  p.compute = fused::compute_dtype(*op.regions[0]);
  bool any_row_leaf = false, all_16bit = true;
  for (size_t l = 0; l < region.leaves.size(); ++l)
    if (p.row_leaf(l)) {
      views = views || p.offset(l) != 0;  // (a staged row starts at the row, not past it)
      any_row_leaf = true;
      all_16bit = all_16bit && dtype_size(region.leaves[l]->type.dtype) == 2;
    }
  const bool rows_16bit = any_row_leaf && all_16bit;
  const int64_t staged = p.strategy == Strategy::Rows && !views ? p.staged_leaf() : -1;
  choose(p, device, fused::narrowest_storage_bytes(region), region.result->type.dtype, rows_16bit,
         staged >= 0 ? static_cast<int64_t>(dtype_size(region.leaves[staged]->type.dtype)) : 0);
  AttrDict& a = op.attrs;
  a["family"] = "rowwise";
  record_device(a, device);
  a["axis"] = axis;
  a["leaf_strides"] = fused::leaf_strides_attr(p.leaf_strides);
  if (views) a["leaf_offsets"] = Attr::ints(p.leaf_offsets);  // views: leaves read from their bases' buffers
  write_fields(plan_fields(), p, a);
  op.loc = core.loc;
  op.add_result(region.result->name, region.result->type);
  for (size_t r = 1; r <= p.partials(); ++r)
    op.add_result(core.result(r)->name + ".partials", Type::tensor(p.compute, {p.programs, p.extent}));
  stamp_artifact_hash(op);
  return op;
}

Plan read_plan(const Op& op) {
  using machine::Cap;
  const bool views = op.attr("leaf_offsets") != nullptr;
  fused::verify_region(op, views);
  const machine::Descriptor device = read_device(op);
  Plan p;
  read_fields(plan_fields(), op, p);
  if (p.norm() && (!(p.eps >= 0) || p.eps > 1e30)) fail("E302", "'eps' must be a finite number >= 0", op.loc);
  p.leaf_strides = fused::read_leaf_strides(op, 3, p.strategy == Strategy::Rows ? 1 : 2);
  p.leaf_offsets.assign(op.operands.size(), 0);
  if (views) {
    const auto off = op.attr("leaf_offsets")->as_ints();
    if (!off || off->size() != op.operands.size())
      fail("E302", "schedule.rowwise: 'leaf_offsets' has one integer per operand", op.loc);
    p.leaf_offsets = *off;
    if (p.staged) fail("E302", "'staged' rows read no views ('leaf_offsets')", op.loc);
  }
  if (p.compute != DType::F32 && p.compute != DType::F64) fail("E302", "'compute' must be f32 or f64", op.loc);
  if (p.online && (p.resident || p.strategy != Strategy::Rows || !p.softmax_like()))
    fail("E302", "'online' applies to streamed softmax rows only", op.loc);
  if (p.stash_exp && (p.resident || p.online || p.strategy != Strategy::Rows || p.op != RowOp::Softmax ||
                      op.result()->type.dtype != p.compute))
    fail("E302", "'stash_exp' applies to streamed softmax rows whose output is the compute type", op.loc);
  fused::check_tile_shape(op, p.threads, p.vector_width, p.unroll);
  check_threads(op, device, p.threads);
  // A cluster is a launch shape for a resident row on a device with
  // clusters: anything else is a claim no device can honour.
  if (op.attr("cluster") && (p.cluster < 2 || p.cluster > 16))
    fail("E302", "'cluster' must be an integer in [2, 16] (absent: no cluster)", op.loc);
  if (p.cluster > 1 &&
      (!device.has(Cap::Clusters) || p.cluster > device.max_cluster || p.strategy != Strategy::Rows || !p.resident))
    fail("E302", "'cluster' applies to resident rows on a device with clusters that large", op.loc);
  if (op.attr("prefetch_rows") && (p.prefetch_rows < 1 || p.prefetch_rows >= (int64_t{1} << 31)))
    fail("E302", "'prefetch_rows' must be an integer in [1, 2^31) (absent: none)", op.loc);
  if (p.prefetch_rows > 0 && (!device.has(Cap::L2Prefetch) || p.strategy != Strategy::Rows))
    fail("E302", "'prefetch_rows' applies to rows on a device with an L2 prefetch", op.loc);
  if (p.staged) {
    // What tsr::load_staged needs: a cluster's row, whole 16-byte vectors of
    // one row leaf, parts and row starts 16-byte aligned, a share that fits
    // shared memory.
    const int64_t l = p.strategy == Strategy::Rows ? p.staged_leaf() : -1;
    const int64_t bytes = l >= 0 ? static_cast<int64_t>(dtype_size(op.operands[l]->type.dtype)) : 0;
    if (!device.has(Cap::BulkCopy) || !device.has(Cap::Clusters) || !p.resident || p.cluster < 2 ||
        p.extent != p.tile_lanes() || l < 0 || bytes * p.vector_width != 16 ||
        (p.leaf_strides[l][0] * bytes) % 16 != 0 ||
        p.extent / p.cluster * bytes > std::min<int64_t>(200 * 1024, device.shared_bytes))
      fail("E302",
           "'staged' applies to rows resident in a cluster (a device with bulk copies), filling the tile, read from "
           "one leaf in 16-byte vectors with 16-byte aligned rows, at most 200 KiB a block",
           op.loc);
  }
  if ((p.strategy == Strategy::Rows) != (p.inner == 1) && p.inner != 0)
    fail("E302", "strategy \"rows\" is for inner == 1, \"columns\" for inner > 1", op.loc);
  const Op& last = *op.regions[0]->ops.back()->operands[0]->def;
  const bool picks_the_row = last.name == "tessera.take_along" && last.operands[0]->def &&
                             last.operands[0]->def->name == "tessera.log_softmax" && !last.operands[1]->def &&
                             index_spec(last).axis == row_op_axis(*last.operands[0]->def);
  if (p.pick != (last.name == "tessera.take_along") || (p.pick && !picks_the_row) ||
      (p.pick && (p.op != RowOp::LogSoftmax || p.strategy != Strategy::Rows || p.cluster > 1 || p.staged)))
    fail("E302", "'pick' is for a log_softmax region ending in a take_along, on rows without a cluster", op.loc);
  if (p.outer < 0 || p.extent < 0 || p.inner < 0 ||
      p.outer * (p.pick ? 1 : p.extent) * p.inner != op.result()->type.numel())
    fail("E302", "outer * extent * inner does not match the result", op.loc);
  for (size_t l = 0; l < p.leaf_strides.size(); ++l)
    fused::check_leaf_reach({p.outer, p.extent, p.inner}, p.leaf_strides[l], op.operands[l]->type, op,
                            p.leaf_offsets[l]);
  if (p.resident && (p.strategy != Strategy::Rows || p.tile_lanes() < p.extent))
    fail("E302", "a resident row must fit in one tile", op.loc);
  if ((p.norm_grad() || p.walk) != (op.attr("rows_per_program") != nullptr) || p.rows_per_program < 1 ||
      (p.norm_grad() && p.strategy != Strategy::Rows))
    fail("E302", "'rows_per_program' (>= 1) is recorded for the norms' gradients, on rows, and walking rows only",
         op.loc);
  if (p.walk && (p.norm_grad() || p.strategy != Strategy::Rows || !p.resident || p.cluster != 1 || p.staged || p.pick))
    fail("E302", "'walk' is for resident rows of one block (not a norm gradient's, which always walk)", op.loc);
  if (p.early_loads && (!p.norm_grad() || !p.resident))
    fail("E302", "'early_loads' is for the norms' gradients on resident rows", op.loc);
  const int64_t want = p.norm_grad() || p.walk        ? (p.outer + p.rows_per_program - 1) / p.rows_per_program
                       : p.strategy == Strategy::Rows ? p.outer
                                                      : p.outer * p.column_blocks();
  if (p.programs != want)
    fail("E302",
         "schedule.rowwise records " + std::to_string(p.programs) + " programs but its view gives " +
             std::to_string(want),
         op.loc);
  if (op.results.size() != 1 + p.partials())
    fail("E302",
         "schedule.rowwise of " + std::string(enum_name(p.op)) + " has " + std::to_string(1 + p.partials()) +
             " result(s)",
         op.loc);
  for (size_t r = 1; r < op.results.size(); ++r)
    if (!(op.results[r]->type == Type::tensor(p.compute, {p.programs, p.extent})))
      fail("E302", "a partial-sums result must be tensor<programs x extent> of the compute type", op.loc);
  return p;
}

}  // namespace tessera::families::rowwise
