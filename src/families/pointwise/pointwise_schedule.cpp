#include "families/pointwise/pointwise_schedule.hpp"
#include "families/device_attr.hpp"

#include <algorithm>
#include <bit>

#include "families/fused/expr_tile.hpp"
#include "families/fused/leaf_map.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/schedule_dialect.hpp"

namespace tessera::families::pointwise {

using namespace tessera::ir;

int64_t Plan::rows() const {
  int64_t r = 1;
  for (size_t g = 0; g + 1 < view.size(); ++g) r *= view[g];
  return r;
}

namespace {

// GPUs: rows of a tile for a short vector dim (0: none), so that a block of
// 256 threads (at least 64, a power of two) has a vector of every thread's
// lanes in use. Each
// leaf's lanes must step by 1 or 0 along the vector dim (tile.load2d).
int64_t rows_a_tile(const Plan& p) {
  const int64_t inner = p.view.back(), vw = p.vector_width;
  if (p.view.size() < 2 || inner < 1 || inner % vw) return 0;
  for (const std::vector<int64_t>& st : p.leaf_strides)
    if (st.back() != 0 && st.back() != 1) return 0;
  const int64_t most = 256 * vw / inner;
  for (int64_t rows = most < 2 ? 0 : std::bit_floor(static_cast<uint64_t>(most)); rows >= 2 && rows * inner >= 64 * vw;
       rows /= 2)
    if (p.view[p.view.size() - 2] % rows == 0 && std::has_single_bit(static_cast<uint64_t>(rows * inner / vw)))
      return rows;
  return 0;
}

// CPU: a program is a few 16K-element stretches of 64-byte vectors; CUDA: a
// block writes one tile (up to 256 threads x 4 lanes x 4), the smallest that
// covers a short row, or several short rows (rows_a_tile); a row longer
// than the largest tile goes in tiles that divide it where one does.
void choose(Plan& p, const machine::Descriptor& device, int64_t storage_bytes) {
  const int64_t inner = p.view.back(), rows = p.rows();
  if (!device.gpu()) {
    p.threads = 1;
    p.vector_width = 64 / static_cast<int64_t>(dtype_size(p.compute));
    p.unroll = 4;
    const int64_t lanes = p.tile_lanes();
    p.chunk = std::clamp<int64_t>((inner + lanes - 1) / lanes * lanes, lanes, 16384);
    p.rows_per_program = std::clamp<int64_t>(16384 / std::max<int64_t>(inner, 1), 1, std::max<int64_t>(1, rows / 64));
  } else {  // one schedule for every GPU: 16-byte vectors, blocks of up to 256 threads
    p.vector_width = 16 / std::max<int64_t>(storage_bytes, 2);  // 16-byte loads of the narrowest storage
    static const std::pair<int64_t, int64_t> shapes[] = {{64, 1}, {128, 1}, {256, 1}, {256, 2}, {256, 4}};
    for (auto [threads, unroll] : shapes) {
      p.threads = threads;
      p.unroll = unroll;
      if (p.tile_lanes() >= inner) break;
    }
    p.chunk = p.tile_lanes();
    p.rows_per_program = 1;
    if (inner > p.chunk) {  // a whole number of tiles a row where 256 threads x 1..4 allow
      for (int64_t unroll : {4, 2, 1})
        if (inner % (256 * p.vector_width * unroll) == 0) {
          p.unroll = unroll, p.chunk = p.tile_lanes();
          break;
        }
    } else if (int64_t rows = p.chunk < inner * 2 ? 0 : rows_a_tile(p); rows > 1) {
      p.tile_rows = p.rows_per_program = rows;
      p.threads = rows * inner / p.vector_width, p.unroll = 1;
      p.chunk = inner;
    }
  }
  p.programs = (rows + p.rows_per_program - 1) / p.rows_per_program * p.chunks_per_row();
}

}  // namespace

const std::vector<Field<Plan>>& plan_fields() {
  static const std::vector<Field<Plan>> fields = {
      field("view", &Plan::view),
      field("compute", &Plan::compute),
      field("threads", &Plan::threads),
      field("vector_width", &Plan::vector_width),
      field("unroll", &Plan::unroll),
      field("chunk", &Plan::chunk),
      field("rows_per_program", &Plan::rows_per_program),
      field("tile_rows", &Plan::tile_rows, Field<Plan>::When::IfNotDefault),
      field("programs", &Plan::programs),
  };
  return fields;
}

Value* emit_schedule(Builder& b, const fused::FusedRegion& region, const std::unordered_map<const Value*, Value*>& map,
                     const machine::Descriptor& device, const std::string& prefix) {
  Plan p;
  const Type& out = region.result->type;
  std::vector<std::vector<int64_t>> space_strides, gather_strides;
  std::vector<int64_t> offsets;
  std::unordered_map<const Value*, Value*> bases = map;  // each leaf reads its base's buffer
  bool views = false;
  for (const Value* v : region.leaves) {
    const ViewRead r = read_through_views(
        v, [&](const Value* u) { return map.count(u) > 0; },
        [&](const Value*) {
          fail("E303", "pointwise: view %" + v->name + " has no layout over a buffer (fusion copies it)");
        });
    // How the region's ops read the leaf: at the result's coordinates
    // (broadcast), gathered where each element points (a concat's operand, a
    // gather's or take_along's first operand: gather_strides), or as a
    // gather's indices, at the gather's own coordinates.
    bool plain = false, gathered = false;
    const Op* take = nullptr;
    for (const Op* op : region.ops)
      for (size_t k = 0; k < op->operands.size(); ++k) {
        if (op->operands[k] != v) continue;
        if (op->name == "tessera.concat" || (is_index_op(op->name) && k == 0)) gathered = true;
        else if (op->name == "tessera.gather") take = op;
        else plain = true;
      }
    if (take && plain) fail("E303", "pointwise: gather indices %" + v->name + " are also read elementwise");
    if (take) {  // the indices' strides placed at the gather result's index dims
      const int64_t axis = index_spec(*take).axis;
      std::vector<int64_t> st(take->result()->type.rank(), 0);
      for (size_t d = 0; d < r.layout.strides.size(); ++d) st[axis + d] = r.layout.strides[d];
      space_strides.push_back(fused::view_space_strides(take->result()->type.shape, st, out.shape));
    } else {
      // (a leaf only gathered has no stride over the result; a copy's leaf is its result)
      space_strides.push_back(gathered && !plain
                                  ? std::vector<int64_t>(out.shape.size(), 0)
                                  : fused::view_space_strides(v->type.shape, r.layout.strides, out.shape));
    }
    gather_strides.push_back(gathered ? r.layout.strides : std::vector<int64_t>{});
    if (gathered) views = true;  // leaf_offsets place the gathered leaves
    offsets.push_back(r.layout.offset);
    if (r.base != v) {
      bases[v] = map.at(r.base);
      views = true;
    }
  }
  p.view = fused::coalesce_strided(out.shape, space_strides, p.leaf_strides);
  Op& op = fused::create_region_op(b, "schedule.pointwise", region.leaves, region.ops, region.result, bases, prefix);
  p.compute = fused::compute_dtype(*op.regions[0]);
  p.gather_strides = gather_strides;
  choose(p, device, std::min<int64_t>(fused::narrowest_storage_bytes(region), dtype_size(p.compute)));
  AttrDict& a = op.attrs;
  a["family"] = "pointwise";
  record_device(a, device);
  a["leaf_strides"] = fused::leaf_strides_attr(p.leaf_strides);
  // Views: region arguments read from their bases' buffers at an offset.
  if (views) a["leaf_offsets"] = Attr::ints(offsets);
  if (std::any_of(gather_strides.begin(), gather_strides.end(), [](const auto& g) { return !g.empty(); }))
    a["gather_strides"] = fused::leaf_strides_attr(gather_strides);
  if (region.ops.empty()) a["materialize"] = Attr(region.copies_because);
  write_fields(plan_fields(), p, a);
  op.loc = region.result->def->loc;
  // A returned reshape of the result (row-major) is the bytes the kernel writes.
  const Value& written = region.written_as ? *region.written_as : *region.result;
  Value* result = op.add_result(written.name, written.type);
  stamp_artifact_hash(op);
  return result;
}

Plan read_plan(const Op& op) {
  const bool views = op.attr("leaf_offsets") != nullptr;
  fused::verify_region(op, /*views=*/views, /*reshaped=*/false, /*reshaped_result=*/true);
  const machine::Descriptor device = read_device(op);
  Plan p;
  read_fields(plan_fields(), op, p);
  if (p.view.empty()) fail("E302", "schedule.pointwise needs a non-empty integer list 'view'", op.loc);
  p.leaf_strides = fused::read_leaf_strides(op, p.view.size(), views ? SIZE_MAX : p.view.size() - 1);
  if (views) {
    const auto off = op.attr("leaf_offsets")->as_ints();
    if (!off || off->size() != op.operands.size())
      fail("E302", "schedule.pointwise: 'leaf_offsets' has one integer per operand", op.loc);
    p.leaf_offsets = *off;
  } else {
    p.leaf_offsets.assign(op.operands.size(), 0);
  }
  if (p.compute != DType::F32 && p.compute != DType::F64) fail("E302", "'compute' must be f32 or f64", op.loc);
  fused::check_tile_shape(op, p.threads, p.vector_width, p.unroll);
  check_threads(op, device, p.threads);
  if (p.tile_rows != 0) {
    // Rows a tile: whole tiles of whole rows, each leaf's lanes stepping by 1 or 0.
    const int64_t inner = p.view.back();
    bool steps = true;
    for (const std::vector<int64_t>& st : p.leaf_strides) steps = steps && (st.back() == 0 || st.back() == 1);
    if (p.tile_rows < 2 || p.view.size() < 2 || p.view[p.view.size() - 2] % p.tile_rows || p.chunk != inner ||
        p.rows_per_program != p.tile_rows || p.tile_lanes() != p.tile_rows * inner || inner % p.vector_width || !steps)
      fail("E302",
           "schedule.pointwise: tile_rows must divide the next group's extent, with a tile of tile_rows whole rows, "
           "rows_per_program = tile_rows and leaves stepping by 1 or 0",
           op.loc);
  } else if (p.chunk < 1 || p.chunk > (int64_t{1} << 30) || p.chunk % p.tile_lanes() || p.rows_per_program < 1) {
    fail("E302", "schedule.pointwise: chunk must be a multiple of the tile, rows_per_program positive", op.loc);
  }
  int64_t n = 1;
  for (int64_t e : p.view)
    if (e < 0 || __builtin_mul_overflow(n, e, &n))
      fail("E302", "view extents must be non-negative, their product an int64", op.loc);
  if (n != op.result()->type.numel()) fail("E302", "the view does not cover the result", op.loc);
  // A concat gathers each operand, a gather or take_along its first, over its
  // own shape, at the offset and strides gather_strides records.
  const Region& body = *op.regions[0];
  auto concat_reads = [&](const Value* v, bool only) {
    bool any = false, other = false;
    for (const auto& inner : body.ops)
      for (size_t k = 0; k < inner->operands.size(); ++k)
        if (inner->operands[k] == v)
          (inner->name == "tessera.concat" || (is_index_op(inner->name) && k == 0) ? any : other) = true;
    return only ? any && !other : any;
  };
  for (size_t l = 0; l < p.leaf_strides.size(); ++l) {
    // An empty operand only a concat reads is never read (the concat skips it).
    if (body.args[l]->type.numel() == 0 && concat_reads(body.args[l].get(), true)) continue;
    fused::check_leaf_reach(p.view, p.leaf_strides[l], op.operands[l]->type, op, p.leaf_offsets[l]);
  }
  p.gather_strides.assign(op.operands.size(), {});
  if (const Attr* g = op.attr("gather_strides")) {
    if (!g->as_list() || g->as_list()->size() != op.operands.size())
      fail("E302", "schedule.pointwise: 'gather_strides' has one list per operand", op.loc);
    for (size_t l = 0; l < op.operands.size(); ++l) {
      const auto st = (*g->as_list())[l].as_ints();
      if (!st || (!st->empty() && st->size() != body.args[l]->type.shape.size()))
        fail("E302", "schedule.pointwise: a gathered leaf has one stride per dim", op.loc);
      p.gather_strides[l] = *st;
      if (!st->empty())
        fused::check_leaf_reach(body.args[l]->type.shape, *st, op.operands[l]->type, op, p.leaf_offsets[l]);
    }
  }
  for (size_t l = 0; l < body.args.size(); ++l)
    if (concat_reads(body.args[l].get(), false) && p.gather_strides[l].empty())
      fail("E302", "schedule.pointwise: a concat's or gather's operand needs its gather_strides", op.loc);
  for (const auto& inner : body.ops) {
    if (inner->name == "tessera.concat")
      for (const Value* v : inner->operands)
        if (v->def) fail("E302", "schedule.pointwise: a concat's operands are region arguments", op.loc);
    if (is_index_op(inner->name) && inner->operands[0]->def)
      fail("E302", "schedule.pointwise: what " + inner->name + " indexes is a region argument", op.loc);
  }
  const int64_t want = (p.rows() + p.rows_per_program - 1) / p.rows_per_program * p.chunks_per_row();
  if (p.programs != want)
    fail("E302",
         "schedule.pointwise records " + std::to_string(p.programs) + " programs but its split gives " +
             std::to_string(want),
         op.loc);
  return p;
}

}  // namespace tessera::families::pointwise
