#include "families/fused/expr_tile.hpp"

#include <algorithm>
#include <limits>

#include "ir/graph_dialect.hpp"

namespace tessera::families::fused {

using namespace tessera::ir;

Type lane_type(DType value, const Type& lanes) {
  Type t = lanes;
  if (!is_float(value)) t.dtype = value;
  return t;
}

namespace {

// The tile `x` of a value of dtype `from` as a value of dtype `to`, both held
// as lane_type says: numpy's cast (docs/semantics.md), rounded once.
Value* cast_lanes(TileBuilder& tb, Value* x, DType from, DType to, const Type& lanes) {
  const DType compute = lanes.dtype;
  auto cvt = [&](Value* v, DType t) {
    return v->type.dtype == t ? v : tb.map("cvt_" + std::string(dtype_name(t)), {v});
  };
  if (is_float(from) && is_float(to))  // f16/bf16/f32 results are rounded to their type; to compute is exact
    return to == compute ? x : tb.map("round_" + std::string(dtype_name(to)), {x});
  if (!is_float(to)) return cvt(x, to);
  // An integer to a float: f16/bf16 through f64 (exact for i32), so the one
  // rounding to the narrow type is the only one.
  if (to == DType::F16 || to == DType::BF16)
    return cvt(tb.map("round_" + std::string(dtype_name(to)), {cvt(x, DType::F64)}), compute);
  return cvt(cvt(x, to), compute);
}

}  // namespace

Value* eval(TileBuilder& tb, const Region& body, const Value* v, const Type& lanes, Env& env, const LeafFn& leaf,
            const PositionFn& position, const MemoryReadFn& memory_read) {
  if (auto it = env.find(v); it != env.end()) return it->second;
  Value* out = nullptr;
  if (!v->def) {
    for (size_t i = 0; i < body.args.size(); ++i)
      if (body.args[i].get() == v) out = leaf(i);
    if (!out) fail("E303", "fused region: %" + v->name + " is neither an argument nor computed in the region");
  } else {
    const Op& op = *v->def;
    auto arg = [&](size_t i) { return eval(tb, body, op.operands[i], lanes, env, leaf, position, memory_read); };
    const DType dt = op.result()->type.dtype;
    if (op.name == "tessera.constant") {
      const Attr* a = op.attr("value");
      double value = a->as_float() ? *a->as_float() : static_cast<double>(*a->as_int());
      out = tb.full(value, lane_type(dt, lanes));
      // rounded to its declared type, as when it is materialized (70000 in f16 is inf)
      if (is_float(dt) && dt != lanes.dtype) out = tb.map("round_" + std::string(dtype_name(dt)), {out});
    } else if (op.name == "tessera.cast") {
      out = cast_lanes(tb, arg(0), op.operands[0]->type.dtype, dt, lanes);
    } else if (op.name == "tessera.iota") {
      if (!position) fail("E303", "fused region: tessera.iota needs the kernel's element positions", op.loc);
      // The coordinate of the region's (contiguous) result along the iota's
      // axis; an axis of extent 1 in the iota broadcasts: 0.
      const Type& result = body.ops.back()->operands[0]->type;
      const Type& t = op.result()->type;
      const int64_t axis = iota_axis(op), d = axis + (result.rank() - t.rank());
      int64_t inner = 1;
      for (int64_t k = d + 1; k < result.rank(); ++k) inner *= result.shape[k];
      Type i64 = lanes;
      i64.dtype = DType::I64;
      // (an empty result has no lane to observe: 1 keeps the arithmetic defined)
      out = t.shape[axis] == 1
                ? tb.full(0, i64)
                : tb.iota(position(), std::max<int64_t>(inner, 1), std::max<int64_t>(result.shape[d], 1), i64);
      out = cast_lanes(tb, out, DType::I64, dt, lanes);
    } else if (op.name == "tessera.concat" || is_index_op(op.name)) {
      if (!memory_read) fail("E303", "fused region: " + op.name + " needs a kernel that reads its operands", op.loc);
      out = memory_read(op, op.name == "tessera.concat" ? nullptr : arg(1));
    } else if (op.name == "tessera.where") {
      out = tb.map("select", {arg(0), arg(1), arg(2)});
    } else if (op.name == "tessera.clamp") {
      // min(max(x, lo), hi): max and min propagate NaN, as numpy's clip does.
      const ClampBounds b = clamp_bounds(op);
      out = arg(0);
      if (b.lo > -std::numeric_limits<double>::infinity()) out = tb.map("max", {out, tb.full(b.lo, lanes)});
      if (b.hi < std::numeric_limits<double>::infinity()) out = tb.map("min", {out, tb.full(b.hi, lanes)});
    } else if (is_unary_op(op.name)) {
      out = tb.map(pointwise_fn(op), {arg(0)});
    } else if (is_binary_op(op.name)) {
      out = tb.map(pointwise_fn(op), {arg(0), arg(1)});
    } else {
      fail("E303", "fused region: '" + op.name + "' is not a pointwise op", op.loc);
    }
  }
  env[v] = out;
  return out;
}

DType compute_dtype(const Region& body) {
  bool f64 = false;
  for (auto& a : body.args) f64 = f64 || a->type.dtype == DType::F64;
  for (auto& op : body.ops)
    for (auto& r : op->results) f64 = f64 || r->type.dtype == DType::F64;
  return f64 ? DType::F64 : DType::F32;
}

void check_leaf_reach(const std::vector<int64_t>& view, const std::vector<int64_t>& strides, const Type& leaf,
                      const Op& op, int64_t offset) {
  int64_t numel = 1;
  for (int64_t e : view)
    if (e < 0 || __builtin_mul_overflow(numel, e, &numel))
      fail("E302", "'" + op.name + "': bad iteration extents", op.loc);
  if (numel == 0) return;  // nothing is read
  if (offset < 0 || offset >= std::max<int64_t>(leaf.numel(), 1))
    fail("E302", "'" + op.name + "': a leaf offset is outside its operand", op.loc);
  // Each stride is at most the leaf's size, so the sum stays far from overflow.
  __int128 reach = offset;
  for (size_t g = 0; g < view.size(); ++g) {
    if (strides[g] < 0 || (view[g] > 1 && strides[g] > leaf.numel()))
      fail("E302", "'" + op.name + "': a leaf stride is negative or larger than the leaf", op.loc);
    reach += static_cast<__int128>(view[g] - 1) * strides[g];
  }
  if (reach >= leaf.numel())
    fail("E302", "'" + op.name + "': leaf_strides address past the end of a " + leaf.str() + " operand", op.loc);
}

void verify_region(const Op& op, bool views, bool reshaped, bool reshaped_result) {
  if (op.regions.size() != 1) fail("E302", "'" + op.name + "' needs one region (the fused Graph IR ops)", op.loc);
  const Region& body = *op.regions[0];
  if (body.args.size() != op.operands.size())
    fail("E302",
         "'" + op.name + "': the region takes " + std::to_string(body.args.size()) + " arguments but the op has " +
             std::to_string(op.operands.size()) + " operands",
         op.loc);
  for (size_t i = 0; i < body.args.size(); ++i)
    if (views      ? body.args[i]->type.dtype != op.operands[i]->type.dtype || !body.args[i]->type.is_tensor()
        : reshaped ? body.args[i]->type.dtype != op.operands[i]->type.dtype || !body.args[i]->type.is_tensor() ||
                         body.args[i]->type.numel() != op.operands[i]->type.numel()
                   : !(body.args[i]->type == op.operands[i]->type))
      fail("E302",
           "'" + op.name + "': region argument " + std::to_string(i) + " has type " + body.args[i]->type.str() +
               " but the operand is " + op.operands[i]->type.str(),
           op.loc);
  if (body.ops.empty() || body.ops.back()->name != "schedule.yield" || body.ops.back()->operands.size() != 1)
    fail("E302", "'" + op.name + "': the region must end in schedule.yield of one value", op.loc);
  if (op.name == "schedule.reduce" && !body.ops.back()->operands[0]->type.is_tensor())
    fail("E302", "'" + op.name + "': the region must yield a tensor", op.loc);
  const Type& yielded = body.ops.back()->operands[0]->type;
  const bool result_reshaped = (reshaped || reshaped_result) && yielded.is_tensor() && op.result()->type.is_tensor() &&
                               yielded.dtype == op.result()->type.dtype && yielded.numel() == op.result()->type.numel();
  if (!(yielded == op.result()->type) && !result_reshaped && op.name != "schedule.reduce")
    fail("E302",
         "'" + op.name + "': the region yields " + body.ops.back()->operands[0]->type.str() + " but the op produces " +
             op.result()->type.str(),
         op.loc);
  // Reduce, row and matmul kernels compute on float tiles only (fusion keeps the rest outside).
  if (op.name != "schedule.pointwise") {
    // A rowwise region may end in a pick: a take_along by an integer argument.
    const Value* y = body.ops.back()->operands[0];
    const Op* pick = op.name == "schedule.rowwise" && y->def && y->def->name == "tessera.take_along" ? y->def : nullptr;
    // An attention's mask operand may be i1.
    const Op* attention = op.name == "schedule.attention" && body.ops.size() == 2 ? body.ops[0].get() : nullptr;
    const Value* mask = attention && attention->operands.size() == 4 ? attention->operands[3] : nullptr;
    for (auto& a : body.args)
      if (!is_float(a->type.dtype) && !(pick && a.get() == pick->operands[1]) && a.get() != mask)
        fail("E302", "'" + op.name + "': region arguments must be floats", op.loc);
    for (size_t i = 0; i + 1 < body.ops.size(); ++i) {
      const Op& inner = *body.ops[i];
      if (&inner == pick) continue;
      if (pick && std::find(inner.operands.begin(), inner.operands.end(), pick->operands[1]) != inner.operands.end())
        fail("E302", "'" + op.name + "': only the take_along reads its indices", inner.loc);
      if (inner.name == "tessera.iota" || inner.name == "tessera.concat" || is_index_op(inner.name) ||
          std::any_of(inner.results.begin(), inner.results.end(),
                      [](const auto& r) { return !is_float(r->type.dtype); }))
        fail("E302",
             "'" + op.name + "': '" + inner.name +
                 "' cannot appear in this region (floats only, no iota, concat or gather)",
             inner.loc);
    }
  }
  for (size_t i = 0; i + 1 < body.ops.size(); ++i) {
    const Op& inner = *body.ops[i];
    if (is_pointwise_op(inner.name) || is_row_op(inner.name)) verify_pointwise_or_row_op(inner);
    else if (inner.name == "tessera.matmul" && op.name == "schedule.matmul") matmul_spec(inner);
    // the matmul's result cut into column halves (the matmul family checks which)
    else if (inner.name == "tessera.split" && op.name == "schedule.matmul") continue;
    else if (inner.name == "tessera.attention" && op.name == "schedule.attention") attention_spec(inner);
    else if (inner.name == "tessera.attention_grad" && op.name == "schedule.attention") attention_grad_spec(inner);
    else fail("E302", "'" + inner.name + "' cannot appear in a fused region", inner.loc);
  }
}

}  // namespace tessera::families::fused

namespace tessera::families::fused {

std::vector<ir::Value*> add_leaf_args(ir::Region& body, const ir::Region& region) {
  std::vector<ir::Value*> leaves;
  for (auto& a : region.args)
    leaves.push_back(body.add_arg("in" + std::to_string(leaves.size()), ir::Type::ptr(a->type.dtype)));
  return leaves;
}

ir::Value* read_leaf(ir::TileBuilder& tb, ir::Value* ptr, ir::Value* base, int64_t lane_stride, ir::Value* count,
                     const ir::Type& lanes) {
  using ir::Type;
  if (lane_stride == 0) return tb.splat(tb.load(ptr, base, Type::scalar(lanes.dtype)), lanes);
  if (lane_stride != 1) return tb.load_strided(ptr, base, lane_stride, count, lanes);
  return count ? tb.load_masked(ptr, base, count, lanes, 0.0) : tb.load(ptr, base, lanes);
}

}  // namespace tessera::families::fused
