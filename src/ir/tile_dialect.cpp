#include "ir/tile_dialect.hpp"

#include <limits>
#include <set>

#include "ir/graph_dialect.hpp"
#include "ir/ir_hash.hpp"
#include "ir/library_call.hpp"
#include "ir/target_dialect.hpp"
#include "ir/tile_ops.hpp"

namespace tessera::ir {

// A family that builds an op its table entry rejects is a compiler bug: the
// op's own rules beyond the table are left to the verifier, which runs on
// every kernel before it is rendered.
void TileBuilder::check(const Op& op) {
  const TileOpSpec* spec = find_tile_op(op.name);
  TESSERA_ASSERT(spec, "TileBuilder built '" + op.name + "', which is not in the Tile IR op table");
  auto violation = table_violation(op, *spec);
  TESSERA_ASSERT(!violation, "TileBuilder built a malformed '" + op.name + "': " + violation.value_or(""));
}

Op& TileBuilder::create(std::string name, std::vector<Value*> operands, AttrDict attrs) {
  Op& op = b_.create(std::move(name), std::move(operands), std::move(attrs));
  check(op);
  return op;
}

Value* TileBuilder::create1(std::string name, std::vector<Value*> operands, Type t, AttrDict attrs) {
  Value* v = b_.create1(std::move(name), std::move(operands), std::move(t), std::move(attrs));
  check(*v->def);
  return v;
}

Value* TileBuilder::program_id() { return create1("tile.program_id", {}, Type::index()); }

Value* TileBuilder::num_programs() { return create1("tile.num_programs", {}, Type::index()); }

Value* TileBuilder::index(int64_t v) { return create1("tile.constant", {}, Type::index(), {{"value", Attr(v)}}); }

Value* TileBuilder::fconst(double v, DType d) {
  return create1("tile.constant", {}, Type::scalar(d), {{"value", Attr(v)}});
}

Value* TileBuilder::arith(const char* op, Value* a, Value* b) { return create1(op, {a, b}, Type::index()); }

Value* TileBuilder::to_index(Value* integer) { return create1("tile.to_index", {integer}, Type::index()); }

Value* TileBuilder::full(double v, Type tile) { return create1("tile.full", {}, tile, {{"value", Attr(v)}}); }

Value* TileBuilder::scratch(int64_t size, DType d) {
  return create1("tile.alloca", {}, Type::ptr(d), {{"size", Attr(size)}});
}

Value* TileBuilder::workspace(int64_t size, DType d) {
  return create1("tile.workspace", {}, Type::ptr(d), {{"size", Attr(size)}});
}

Value* TileBuilder::load(Value* ptr, Value* offset, Type result) { return create1("tile.load", {ptr, offset}, result); }

Value* TileBuilder::load_masked(Value* ptr, Value* offset, Value* count, Type result, double other) {
  return create1("tile.load_masked", {ptr, offset, count}, result, {{"other", Attr(other)}});
}

Value* TileBuilder::gather(Value* ptr, Value* addr, Type result) { return create1("tile.gather", {ptr, addr}, result); }

Value* TileBuilder::load_strided(Value* ptr, Value* offset, int64_t stride, Value* count, Type result) {
  std::vector<Value*> operands = {ptr, offset};
  if (count) operands.push_back(count);
  return create1("tile.load_strided", operands, result, {{"stride", Attr(stride)}});
}

void TileBuilder::store(Value* ptr, Value* offset, Value* v) { create("tile.store", {ptr, offset, v}); }

void TileBuilder::store_masked(Value* ptr, Value* offset, Value* count, Value* v) {
  create("tile.store_masked", {ptr, offset, count, v});
}
void TileBuilder::prefetch(Value* ptr, Value* offset, Value* count) { create("tile.prefetch", {ptr, offset, count}); }
Value* TileBuilder::load_staged(Value* ptr, Value* stage, Value* row, Value* rows, Value* iter, int64_t row_stride,
                                Type result) {
  return create1("tile.load_staged", {ptr, stage, row, rows, iter}, result, {{"row_stride", Attr(row_stride)}});
}
void TileBuilder::transpose(Value* in, Value* out, Value* in_base, Value* out_base, Value* r0, Value* c0, int64_t rows,
                            int64_t cols, int64_t block_rows, int64_t block_cols) {
  create("tile.transpose", {in, out, in_base, out_base, r0, c0},
         {{"rows", Attr(rows)}, {"cols", Attr(cols)}, {"block", Attr::ints({block_rows, block_cols})}});
}

Value* TileBuilder::combine(const std::string& kind, Value* a, Value* b) {
  return create1("tile.combine", {a, b}, a->type, {{"kind", Attr(kind)}});
}

Value* TileBuilder::reduce_lanes(const std::string& kind, Value* t) {
  return create1("tile.reduce_lanes", {t}, Type::scalar(t->type.dtype), {{"kind", Attr(kind)}});
}

Value* TileBuilder::fold_rows(const std::string& kind, Value* t) {
  return create1("tile.fold_rows", {t}, t->type, {{"kind", Attr(kind)}});
}

Value* TileBuilder::reduce_block_lanes(const std::string& kind, Value* t) {
  return create1("tile.reduce_lanes", {t}, Type::scalar(t->type.dtype),
                 {{"kind", Attr(kind)}, {"scope", Attr("block")}});
}

std::pair<Value*, Value*> TileBuilder::softmax_stats(Value* block_max, Value* block_sum) {
  Op& op = b_.create("tile.softmax_stats", {block_max, block_sum});
  std::pair<Value*, Value*> stats = {op.add_result(b_.fresh_name(), block_max->type),
                                     op.add_result(b_.fresh_name(), block_max->type)};
  check(op);
  return stats;
}

Value* TileBuilder::divf(Value* a, Value* b) { return create1("tile.divf", {a, b}, a->type); }

Value* TileBuilder::map(const std::string& fn, std::vector<Value*> args) {
  std::vector<const Type*> types;
  for (const Value* v : args) types.push_back(&v->type);
  auto t = map_result(fn, types);
  TESSERA_ASSERT(std::holds_alternative<Type>(t), "tile.map " + fn + ": " + std::get<std::string>(t));
  return create1("tile.map", std::move(args), std::get<Type>(t), {{"fn", Attr(fn)}});
}

Value* TileBuilder::iota(Value* base, int64_t inner, int64_t extent, Type tile) {
  return create1("tile.iota", {base}, tile, {{"inner", Attr(inner)}, {"extent", Attr(extent)}});
}

Value* TileBuilder::splat(Value* scalar, Type tile) { return create1("tile.splat", {scalar}, tile); }

Value* TileBuilder::mask(Value* t, Value* count, double other) {
  return create1("tile.mask", {t, count}, t->type, {{"other", Attr(other)}});
}

Value* TileBuilder::load2d(Value* ptr, Value* base, Value* rows, Value* cols, int64_t row_stride, int64_t col_stride,
                           bool aligned, Type result) {
  return create1("tile.load2d", {ptr, base, rows, cols}, result,
                 {{"row_stride", Attr(row_stride)}, {"col_stride", Attr(col_stride)}, {"aligned", Attr(aligned)}});
}

Value* TileBuilder::load2d_piece(Value* into, Value* ptr, Value* base, Value* rows, int64_t row_stride, int64_t lo,
                                 int64_t hi, bool aligned) {
  return create1("tile.load2d_piece", {into, ptr, base, rows}, into->type,
                 {{"row_stride", Attr(row_stride)}, {"lo", Attr(lo)}, {"hi", Attr(hi)}, {"aligned", Attr(aligned)}});
}

void TileBuilder::matmul(std::vector<Value*> operands, AttrDict attrs) {
  create("tile.matmul", std::move(operands), std::move(attrs));
}

void TileBuilder::attention(std::vector<Value*> operands, AttrDict attrs) {
  create("tile.attention", std::move(operands), std::move(attrs));
}

void TileBuilder::attention_grad(std::vector<Value*> operands, AttrDict attrs) {
  create("tile.attention_grad", std::move(operands), std::move(attrs));
}

void TileBuilder::attention_decode(std::vector<Value*> operands, AttrDict attrs) {
  create("tile.attention_decode", std::move(operands), std::move(attrs));
}

void TileBuilder::store2d(Value* ptr, Value* base, Value* rows, Value* cols, Value* v, int64_t row_stride,
                          bool aligned) {
  create("tile.store2d", {ptr, base, rows, cols, v}, {{"row_stride", Attr(row_stride)}, {"aligned", Attr(aligned)}});
}

std::unique_ptr<Op> new_tile_kernel(const std::string& sym, int64_t programs, int64_t threads, int64_t vector_width,
                                    const std::string& artifact_hash) {
  auto k = std::make_unique<Op>();
  k->name = "tile.kernel";
  k->sym = sym;
  k->attrs["grid"] = Attr::ints({programs});
  k->attrs["threads"] = threads;
  k->attrs["vector_width"] = vector_width;
  k->attrs["artifact_hash"] = artifact_hash;
  k->add_region();
  return k;
}

std::variant<Type, std::string> map_result(const std::string& fn, const std::vector<const Type*>& operands) {
  static const std::set<std::string> float_unary = {
      "exp", "log",  "sqrt", "rsqrt", "tanh",  "sigmoid", "relu",  "gelu",      "gelu_tanh",  "silu",     "sin",
      "cos", "exp2", "log2", "erf",   "floor", "ceil",    "round", "round_f16", "round_bf16", "round_f32"};
  static const std::set<std::string> compare = {"eq", "ne", "lt", "le", "gt", "ge"};
  const bool cvt = fn.rfind("cvt_", 0) == 0;
  const size_t arity = float_unary.count(fn) || fn == "neg" || fn == "abs" || fn == "not" || cvt ? 1
                       : fn == "select"                                                          ? 3
                       : fn == "add" || fn == "sub" || fn == "mul" || fn == "div" || fn == "max" || fn == "min" ||
                               fn == "pow" || fn == "and" || fn == "or" || compare.count(fn)
                           ? 2
                           : 0;
  if (arity == 0) return "needs a known 'fn'";
  if (operands.size() != arity)
    return "expects " + std::to_string(arity) + " operands, has " + std::to_string(operands.size());
  const Type& a = *operands[0];
  if (a.kind != TypeKind::Tile && a.kind != TypeKind::Scalar) return "maps tiles or scalars";
  auto same_shape = [&](const Type& t) { return t.kind == a.kind && t.shape == a.shape; };
  for (const Type* t : operands)
    if (!same_shape(*t)) return "maps tiles or scalars of one shape";
  const DType d = fn == "select" ? operands[1]->dtype : a.dtype;
  for (size_t i = fn == "select" ? 1 : 0; i < operands.size(); ++i)
    if (operands[i]->dtype != d) return "maps values of one type";
  auto with = [&](DType t) {
    Type r = a;
    r.dtype = t;
    return r;
  };
  if (cvt) {
    const std::optional<DType> to = parse_dtype(fn.substr(4));
    if (!to || *to == DType::F16 || *to == DType::BF16) return "converts to f32, f64, i1, i32 or i64";
    return with(*to);
  }
  if (fn == "select") {
    if (a.dtype != DType::I1) return "selects by an i1 condition";
    return with(d);
  }
  if (compare.count(fn)) return with(DType::I1);
  if (fn == "and" || fn == "or" || fn == "not") {
    if (d != DType::I1) return "takes i1 values";
    return with(d);
  }
  const bool integer_ok = fn == "neg" || fn == "abs" || fn == "add" || fn == "sub" || fn == "mul" || fn == "max" ||
                          fn == "min";
  if (!is_float(d) && !(integer_ok && is_integer(d)))
    return "takes " + std::string(integer_ok ? "float or i32/i64" : "float") + " values";
  return with(d);
}

std::vector<Value*> TileBuilder::for_loop(Value* lo, Value* hi, Value* step, std::vector<Value*> inits,
                                          const LoopBody& body) {
  std::vector<Value*> operands = {lo, hi, step};
  operands.insert(operands.end(), inits.begin(), inits.end());
  Op& op = b_.create("tile.for", operands);
  Region& r = op.add_region();
  Value* iv = r.add_arg(b_.fresh_name(), Type::index());
  std::vector<Value*> carried;
  for (Value* v : inits) carried.push_back(r.add_arg(b_.fresh_name(), v->type));
  Region& outer = b_.region();
  b_.set_region(r);
  std::vector<Value*> yielded = body(iv, carried);
  create("tile.yield", yielded);
  b_.set_region(outer);
  std::vector<Value*> results;
  for (Value* v : inits) results.push_back(op.add_result(b_.fresh_name(), v->type));
  check(op);
  return results;
}

double combine_identity(const std::string& kind) {
  if (kind == "sum") return 0.0;
  if (kind == "prod") return 1.0;
  if (kind == "max") return -std::numeric_limits<double>::infinity();
  if (kind == "min") return std::numeric_limits<double>::infinity();
  fail("E402", "unknown combine kind '" + echo(kind) + "'");
}

void verify_tile(const Module& m) {
  std::set<std::string> kernels;
  for (auto& top : m.ops) {
    if (top->name == "tile.kernel") {
      const Attr* grid = top->attr("grid");
      if (top->sym.empty() || top->regions.size() != 1 || !grid || !grid->as_ints() || grid->as_ints()->size() != 1)
        fail("E403", "tile.kernel needs @name, grid = [N] and one region", top->loc);
      const Attr* hash = top->attr("artifact_hash");
      if (!hash || !hash->as_string())
        fail("E403", "tile.kernel @" + top->sym + " needs the artifact_hash of the schedule it came from", top->loc);
      if (const Attr* a = top->attr("min_blocks"); a && (!a->as_int() || *a->as_int() < 1 || *a->as_int() > 32))
        fail("E403", "tile.kernel @" + top->sym + ": 'min_blocks' must be an integer in [1, 32]", top->loc);
      // cluster: a program is a CUDA thread-block cluster of this many blocks
      // (8 is the portable limit, 16 Hopper's non-portable one); other
      // targets' renderers refuse it.
      if (const Attr* a = top->attr("cluster"); a && (!a->as_int() || *a->as_int() < 1 || *a->as_int() > 16))
        fail("E403", "tile.kernel @" + top->sym + ": 'cluster' must be an integer in [1, 16]", top->loc);
      for (const char* key : {"threads", "vector_width"})
        if (const Attr* a = top->attr(key); a && (!a->as_int() || *a->as_int() < 1 || *a->as_int() > 1024))
          fail("E403", "tile.kernel @" + top->sym + ": '" + key + "' must be an integer in [1, 1024]", top->loc);
      if (const Attr* a = top->attr("producer_threads"); a && (!a->as_int() || *a->as_int() != 128))
        fail("E403", "tile.kernel @" + top->sym + ": 'producer_threads' must be 128 (one warpgroup)", top->loc);
      if (const Attr* a = top->attr("tensor_maps")) {  // checked against the buffers in Target IR
        if (!a->as_list()) fail("E403", "tile.kernel @" + top->sym + ": 'tensor_maps' must be a list", top->loc);
        for (const Attr& t : *a->as_list()) {
          if (!t.as_string()) fail("E403", "tile.kernel @" + top->sym + ": tensor maps are strings", top->loc);
          TensorMapDesc::parse(*t.as_string(), top->loc);
        }
      }
      for (auto& arg : top->regions[0]->args)
        if (arg->type.kind != TypeKind::Ptr) fail("E403", "tile.kernel arguments must be ptr<...>", top->loc);
      if (const Attr* p = top->attr("producer_threads"); p && !top->attr("threads"))
        fail("E403", "tile.kernel @" + top->sym + ": 'producer_threads' needs 'threads'", top->loc);
      if (auto v = table_violation(*top, tile_kernel_spec()))
        fail("E403", "tile.kernel @" + top->sym + ": " + *v, top->loc);
      for (auto& op : top->regions[0]->ops) verify_tile_op(*op);
      kernels.insert(top->sym);
    } else if (top->name == "tile.extern_kernel") {
      // A library candidate's call: its buffers, no body (see ir/library_call.hpp).
      if (top->sym.empty() || top->regions.size() != 1 || !top->regions[0]->ops.empty())
        fail("E403", "tile.extern_kernel needs @name and one empty region of buffers", top->loc);
      if (!top->attr("artifact_hash") || !top->attr("artifact_hash")->as_string())
        fail("E403", "tile.extern_kernel @" + top->sym + " needs the artifact_hash of its schedule", top->loc);
      for (auto& arg : top->regions[0]->args)
        if (arg->type.kind != TypeKind::Ptr) fail("E403", "tile.extern_kernel arguments must be ptr<...>", top->loc);
      LibraryMatmul::from_kernel(*top);
      kernels.insert(top->sym);
    } else if (top->name != "func") {
      fail("E404", "'" + echo(top->name) + "' is not allowed at the top level of Tile IR", top->loc);
    }
  }
  for (Op* f : m.funcs()) {
    for (auto& op : f->regions[0]->ops) {
      if (op->name == "return") continue;
      if (op->name != "tile.launch") fail("E404", "'" + echo(op->name) + "' is not a Tile IR host op", op->loc);
      if (!kernels.count(op->sym)) fail("E405", "tile.launch of unknown kernel @" + op->sym, op->loc);
      const Op* k = m.lookup(op->sym);
      if (k->regions[0]->args.size() != op->operands.size() + op->results.size())
        fail("E405", "tile.launch @" + op->sym + " passes the wrong number of buffers", op->loc);
    }
    verify_func_return(*f);
  }
  // Last, so an edit that breaks a rule above is reported as that rule.
  for (auto& top : m.ops)
    if (top->name != "func") check_ir_hash(*top, m, "E406");
}

}  // namespace tessera::ir
