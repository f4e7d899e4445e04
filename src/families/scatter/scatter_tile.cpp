#include "families/scatter/scatter_tile.hpp"

#include "ir/schedule_dialect.hpp"
#include "ir/tile_dialect.hpp"

namespace tessera::families::scatter {

using namespace tessera::ir;

void build_kernel(Module& m, const std::string& sym, const Plan& p, const Op& sop) {
  auto k = new_tile_kernel(sym, p.programs, p.threads, p.vector_width, string_attr(sop, "artifact_hash"));
  Region& body = *k->regions[0];
  Value* g = body.add_arg("in0", Type::ptr(sop.operands[0]->type.dtype));
  Value* ids = body.add_arg("in1", Type::ptr(sop.operands[1]->type.dtype));
  Value* out = body.add_arg("out", Type::ptr(p.compute));
  TileBuilder tb(body);
  auto idx = [&](int64_t v) { return tb.index(v); };
  const int64_t lanes = p.tile_lanes();
  const Type tile_t = Type::tile(p.compute, {lanes});
  const Type id_t = Type::scalar(sop.operands[1]->type.dtype);
  auto id_const = [&](int64_t v) { return tb.full(static_cast<double>(v), id_t); };

  // This program's rows [j0, j1) of the extent.
  Value* j0 = tb.mul(tb.program_id(), idx(p.rows_per_program));
  Value* j1 = tb.min(tb.add(j0, idx(p.rows_per_program)), idx(p.extent));
  // the lanes of the slice starting at element t of a row of post elements
  auto slice_lanes = [&](Value* t) { return tb.min(idx(lanes), tb.sub(idx(p.post), t)); };
  auto over_slice = [&](Value* end, const std::function<void(Value*)>& step) {
    tb.for_loop(idx(0), end, idx(lanes), {}, [&](Value* t, const std::vector<Value*>&) -> std::vector<Value*> {
      step(t);
      return {};
    });
  };
  tb.for_loop(idx(0), idx(p.pre), idx(1), {}, [&](Value* o, const std::vector<Value*>&) -> std::vector<Value*> {
    Value* rows_base = tb.mul(o, idx(p.extent));
    // Zeros in this program's rows.
    tb.for_loop(j0, j1, idx(1), {}, [&](Value* j, const std::vector<Value*>&) -> std::vector<Value*> {
      Value* row = tb.mul(tb.add(rows_base, j), idx(p.post));
      over_slice(idx(p.post),
                 [&](Value* t) { tb.store_masked(out, tb.add(row, t), slice_lanes(t), tb.full(0.0, tile_t)); });
      return {};
    });
    // Each index in order: its slice of g added to row j where j is this
    // program's (the slice loop runs post * hit elements: none elsewhere).
    tb.for_loop(idx(0), idx(p.count), idx(1), {}, [&](Value* n, const std::vector<Value*>&) -> std::vector<Value*> {
      Value* i = tb.load(ids, n, id_t);
      i = tb.map("select", {tb.map("lt", {i, id_const(0)}), tb.map("add", {i, id_const(p.extent)}), i});
      Value* j = tb.to_index(tb.map("min", {tb.map("max", {i, id_const(0)}), id_const(p.extent - 1)}));
      // hit = 1 if j0 <= j < j1, else 0: m = min(j - j0, j1 - 1 - j) lies in
      // (-extent, extent), and (m + extent) / extent is 1 exactly when m >= 0.
      Value* m_ = tb.min(tb.sub(j, j0), tb.sub(tb.sub(j1, idx(1)), j));
      Value* hit = tb.div(tb.add(m_, idx(p.extent)), idx(p.extent));
      Value* row = tb.mul(tb.add(rows_base, j), idx(p.post));
      Value* src = tb.mul(tb.add(tb.mul(o, idx(p.count)), n), idx(p.post));
      over_slice(tb.mul(idx(p.post), hit), [&](Value* t) {
        Value* c = slice_lanes(t);
        Value* at = tb.add(row, t);
        Value* sum = tb.map(
            "add", {tb.load_masked(out, at, c, tile_t, 0.0), tb.load_masked(g, tb.add(src, t), c, tile_t, 0.0)});
        tb.store_masked(out, at, c, sum);
      });
      return {};
    });
    return {};
  });
  m.ops.push_back(std::move(k));
}

}  // namespace tessera::families::scatter
