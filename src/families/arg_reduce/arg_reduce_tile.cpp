#include "families/arg_reduce/arg_reduce_tile.hpp"

#include "ir/schedule_dialect.hpp"
#include "ir/tile_dialect.hpp"

namespace tessera::families::arg_reduce {

using namespace tessera::ir;

void build_kernel(Module& m, const std::string& sym, const Plan& p, const Op& sop) {
  auto k = new_tile_kernel(sym, p.programs, p.threads, p.vector_width, string_attr(sop, "artifact_hash"));
  Region& body = *k->regions[0];
  Value* in = body.add_arg("in0", Type::ptr(sop.operands[0]->type.dtype));
  Value* out = body.add_arg("out", Type::ptr(DType::I64));
  TileBuilder tb(body);
  auto idx = [&](int64_t v) { return tb.index(v); };
  const int64_t lanes = p.tile_lanes();
  const Type values_t = Type::tile(p.compute, {lanes}), positions_t = Type::tile(DType::I64, {lanes});
  auto i64s = [&](int64_t v) { return tb.full(static_cast<double>(v), positions_t); };
  const bool floats = is_float(p.compute);
  const DType operand = sop.operands[0]->type.dtype;
  // i1 positions compare as i32 (0 < 1).
  auto read = [&](Value* a) {
    if (operand != DType::I1) return tb.gather(in, a, values_t);
    return tb.map("cvt_i32", {tb.gather(in, a, Type::tile(DType::I1, {lanes}))});
  };

  Value* first = tb.mul(tb.program_id(), idx(p.chunk));
  Value* last = tb.min(tb.add(first, idx(p.chunk)), idx(p.results()));
  tb.for_loop(first, last, idx(lanes), {}, [&](Value* r0, const std::vector<Value*>&) -> std::vector<Value*> {
    // Lane l: result r0 + l = (o, i), its first element at o * extent * inner
    // + i; lanes past the last result read element 0 and store nothing.
    Value* count = tb.min(idx(lanes), tb.sub(last, r0));
    Value* o = tb.iota(r0, std::max<int64_t>(p.inner, 1), std::max<int64_t>(p.outer, 1), positions_t);
    Value* i = tb.iota(r0, 1, std::max<int64_t>(p.inner, 1), positions_t);
    Value* addr = tb.map("add", {tb.map("mul", {o, i64s(p.extent * p.inner)}), i});
    addr = tb.mask(addr, count, 0);
    Value* best = read(addr);
    // Positions 1 .. extent-1, carrying (best value, its position, this position, its address).
    auto carried = tb.for_loop(
        idx(1), idx(p.extent), idx(1), {best, i64s(0), i64s(0), addr},
        [&](Value*, const std::vector<Value*>& c) -> std::vector<Value*> {
          Value* pos = tb.map("add", {c[2], i64s(1)});
          Value* at = tb.map("add", {c[3], i64s(p.inner)});
          Value* x = read(at);
          Value* better = tb.map(p.max ? "gt" : "lt", {x, c[0]});
          if (floats)  // a NaN beats a number; a later NaN does not replace one
            better = tb.map("or", {better, tb.map("and", {tb.map("ne", {x, x}), tb.map("eq", {c[0], c[0]})})});
          return {tb.map("select", {better, x, c[0]}), tb.map("select", {better, pos, c[1]}), pos, at};
        });
    tb.store_masked(out, r0, count, carried[1]);
    return {};
  });
  m.ops.push_back(std::move(k));
}

}  // namespace tessera::families::arg_reduce
