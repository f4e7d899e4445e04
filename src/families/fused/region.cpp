#include "families/fused/region.hpp"

#include <algorithm>

#include "families/fused/leaf_map.hpp"
#include "ir/graph_dialect.hpp"

namespace tessera::families::fused {

using namespace tessera::ir;

std::optional<LeafRead> leaf_read(const Value* v, const std::vector<int64_t>& space, const std::vector<int>& groups,
                                  const std::function<bool(const Value*)>& has_buffer) {
  if (!v->def || !is_view_op(v->def->name) || has_buffer(v)) {  // read as a buffer of its own
    auto st = group_strides(v->type.shape, space, groups);
    if (!st) return std::nullopt;
    return LeafRead{v, 0, *st};
  }
  bool unviewable = false;
  const ViewRead r = read_through_views(v, has_buffer, [&](const Value*) { unviewable = true; });
  if (unviewable) return std::nullopt;
  auto st = group_strided(view_space_strides(v->type.shape, r.layout.strides, space), space, groups);
  if (!st) return std::nullopt;
  return LeafRead{r.base, r.layout.offset, *st};
}

Op& create_region_op(Builder& b, const std::string& name, const std::vector<const Value*>& leaves,
                     const std::vector<const Op*>& ops, const Value* yielded,
                     const std::unordered_map<const Value*, Value*>& outer, const std::string& prefix) {
  std::vector<Value*> operands;
  for (const Value* v : leaves) operands.push_back(outer.at(v));
  Op& op = b.create(name, operands);
  Region& r = op.add_region();
  std::unordered_map<const Value*, Value*> inner;
  for (const Value* v : leaves) inner[v] = r.add_arg(prefix + "." + v->name, v->type);
  Builder rb(r);
  for (const Op* g : ops) {
    std::vector<Value*> args;
    for (const Value* v : g->operands) args.push_back(inner.at(v));
    Op& c = rb.create(g->name, args, g->attrs);
    c.loc = g->loc;
    for (auto& res : g->results) inner[res.get()] = c.add_result(prefix + "." + res->name, res->type);
    if (g->result() == yielded) break;
  }
  rb.create("schedule.yield", {inner.at(yielded)});
  return op;
}

Attr leaf_strides_attr(const std::vector<std::vector<int64_t>>& strides) {
  AttrList out;
  for (auto& s : strides) out.push_back(Attr::ints(s));
  return Attr(out);
}

std::vector<std::vector<int64_t>> read_leaf_strides(const Op& op, size_t groups, size_t lane_group) {
  const Attr* ls = op.attr("leaf_strides");
  if (!ls || !ls->as_list() || ls->as_list()->size() != op.operands.size())
    fail("E302", "'" + op.name + "' needs 'leaf_strides', one list per operand", op.loc);
  std::vector<std::vector<int64_t>> out;
  for (const Attr& l : *ls->as_list()) {
    auto st = l.as_ints();
    if (!st || st->size() != groups)
      fail("E302", "'" + op.name + "': each leaf stride list has " + std::to_string(groups) + " entries", op.loc);
    if (lane_group != SIZE_MAX && (*st)[lane_group] != 0 && (*st)[lane_group] != 1)
      fail("E302", "'" + op.name + "': a leaf's lane stride must be 0 or 1", op.loc);
    out.push_back(*st);
  }
  return out;
}

int64_t narrowest_storage_bytes(const FusedRegion& region) {
  int64_t bytes = static_cast<int64_t>(dtype_size(region.result->type.dtype));
  for (const Value* leaf : region.leaves) bytes = std::min<int64_t>(bytes, dtype_size(leaf->type.dtype));
  return bytes;
}

void check_tile_shape(const Op& op, int64_t threads, int64_t vector_width, int64_t unroll) {
  auto pow2 = [](int64_t v) { return v > 0 && (v & (v - 1)) == 0; };
  if (!pow2(threads) || !pow2(vector_width) || !pow2(unroll) || threads > 1024 || vector_width > 256 || unroll > 256 ||
      vector_width * unroll > 256)
    fail("E302",
         "'" + op.name +
             "': threads, vector_width and unroll must be powers of two (threads <= 1024, "
             "256 lanes a thread)",
         op.loc);
}

}  // namespace tessera::families::fused
