#include "ir/tile_dialect.hpp"

#include <limits>
#include <set>

#include "ir/graph_dialect.hpp"
#include "ir/library_call.hpp"
#include "ir/target_dialect.hpp"

namespace tessera::ir {

Value* TileBuilder::program_id() { return b_.create1("tile.program_id", {}, Type::index()); }

Value* TileBuilder::num_programs() { return b_.create1("tile.num_programs", {}, Type::index()); }

Value* TileBuilder::index(int64_t v) { return b_.create1("tile.constant", {}, Type::index(), {{"value", Attr(v)}}); }

Value* TileBuilder::fconst(double v, DType d) {
  return b_.create1("tile.constant", {}, Type::scalar(d), {{"value", Attr(v)}});
}

Value* TileBuilder::arith(const char* op, Value* a, Value* b) { return b_.create1(op, {a, b}, Type::index()); }

Value* TileBuilder::full(double v, Type tile) { return b_.create1("tile.full", {}, tile, {{"value", Attr(v)}}); }

Value* TileBuilder::scratch(int64_t size, DType d) {
  return b_.create1("tile.alloca", {}, Type::ptr(d), {{"size", Attr(size)}});
}

Value* TileBuilder::load(Value* ptr, Value* offset, Type result) {
  return b_.create1("tile.load", {ptr, offset}, result);
}

Value* TileBuilder::load_masked(Value* ptr, Value* offset, Value* count, Type result, double other) {
  return b_.create1("tile.load_masked", {ptr, offset, count}, result, {{"other", Attr(other)}});
}

void TileBuilder::store(Value* ptr, Value* offset, Value* v) { b_.create("tile.store", {ptr, offset, v}); }

void TileBuilder::store_masked(Value* ptr, Value* offset, Value* count, Value* v) {
  b_.create("tile.store_masked", {ptr, offset, count, v});
}
void TileBuilder::prefetch(Value* ptr, Value* offset, Value* count) { b_.create("tile.prefetch", {ptr, offset, count}); }
Value* TileBuilder::load_staged(Value* ptr, Value* stage, Value* row, Value* rows, Value* iter, int64_t row_stride,
                                Type result) {
  return b_.create1("tile.load_staged", {ptr, stage, row, rows, iter}, result, {{"row_stride", Attr(row_stride)}});
}
void TileBuilder::transpose(Value* in, Value* out, Value* in_base, Value* out_base, Value* r0, Value* c0,
                            int64_t rows, int64_t cols, int64_t block_rows, int64_t block_cols) {
  b_.create("tile.transpose", {in, out, in_base, out_base, r0, c0},
            {{"rows", Attr(rows)}, {"cols", Attr(cols)}, {"block", Attr::ints({block_rows, block_cols})}});
}

Value* TileBuilder::combine(const std::string& kind, Value* a, Value* b) {
  return b_.create1("tile.combine", {a, b}, a->type, {{"kind", Attr(kind)}});
}

Value* TileBuilder::reduce_lanes(const std::string& kind, Value* t) {
  return b_.create1("tile.reduce_lanes", {t}, Type::scalar(t->type.dtype), {{"kind", Attr(kind)}});
}

Value* TileBuilder::reduce_block_lanes(const std::string& kind, Value* t) {
  return b_.create1("tile.reduce_lanes", {t}, Type::scalar(t->type.dtype), {{"kind", Attr(kind)}, {"scope", Attr("block")}});
}

std::pair<Value*, Value*> TileBuilder::softmax_stats(Value* block_max, Value* block_sum) {
  Op& op = b_.create("tile.softmax_stats", {block_max, block_sum});
  return {op.add_result(b_.fresh_name(), block_max->type), op.add_result(b_.fresh_name(), block_max->type)};
}

Value* TileBuilder::divf(Value* a, Value* b) { return b_.create1("tile.divf", {a, b}, a->type); }

Value* TileBuilder::map(const std::string& fn, std::vector<Value*> args) {
  Type t = args.at(0)->type;
  return b_.create1("tile.map", std::move(args), t, {{"fn", Attr(fn)}});
}

Value* TileBuilder::splat(Value* scalar, Type tile) { return b_.create1("tile.splat", {scalar}, tile); }

Value* TileBuilder::mask(Value* t, Value* count, double other) {
  return b_.create1("tile.mask", {t, count}, t->type, {{"other", Attr(other)}});
}

Value* TileBuilder::load2d(Value* ptr, Value* base, Value* rows, Value* cols, int64_t row_stride,
                           int64_t col_stride, bool aligned, Type result) {
  return b_.create1("tile.load2d", {ptr, base, rows, cols}, result,
                    {{"row_stride", Attr(row_stride)}, {"col_stride", Attr(col_stride)}, {"aligned", Attr(aligned)}});
}

void TileBuilder::store2d(Value* ptr, Value* base, Value* rows, Value* cols, Value* v, int64_t row_stride,
                          bool aligned) {
  b_.create("tile.store2d", {ptr, base, rows, cols, v}, {{"row_stride", Attr(row_stride)}, {"aligned", Attr(aligned)}});
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

int map_arity(const std::string& fn) {
  static const std::set<std::string> unary = {"neg",  "abs",  "exp",     "log",       "sqrt",      "rsqrt",
                                              "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu",
                                              "round_f16", "round_bf16", "round_f32"};
  static const std::set<std::string> binary = {"add", "sub", "mul", "div", "max", "min", "pow"};
  return unary.count(fn) ? 1 : binary.count(fn) ? 2 : 0;
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
  b_.create("tile.yield", yielded);
  b_.set_region(outer);
  std::vector<Value*> results;
  for (Value* v : inits) results.push_back(op.add_result(b_.fresh_name(), v->type));
  return results;
}

double combine_identity(const std::string& kind) {
  if (kind == "sum") return 0.0;
  if (kind == "prod") return 1.0;
  if (kind == "max") return -std::numeric_limits<double>::infinity();
  if (kind == "min") return std::numeric_limits<double>::infinity();
  fail("E402", "unknown combine kind '" + kind + "'");
}

namespace {

[[noreturn]] void bad(const Op& op, const std::string& msg) { fail("E403", "'" + op.name + "': " + msg, op.loc); }

bool is_index(const Value* v) { return v->type.kind == TypeKind::Index; }
bool is_ptr(const Value* v) { return v->type.kind == TypeKind::Ptr; }
bool is_data(const Type& t) { return t.kind == TypeKind::Tile || t.kind == TypeKind::Scalar; }

void expect_operands(const Op& op, size_t n) {
  if (op.operands.size() != n)
    bad(op, "expects " + std::to_string(n) + " operands, has " + std::to_string(op.operands.size()));
}

void verify_kernel_op(const Op& op) {
  const std::string& n = op.name;
  if (n == "tile.program_id" || n == "tile.num_programs") {
    expect_operands(op, 0);
  } else if (n == "tile.constant") {
    if (!op.attr("value")) bad(op, "needs 'value'");
  } else if (n == "tile.add" || n == "tile.sub" || n == "tile.mul" || n == "tile.div" || n == "tile.rem" ||
             n == "tile.min") {
    expect_operands(op, 2);
    if (!is_index(op.operands[0]) || !is_index(op.operands[1])) bad(op, "operands must be index");
  } else if (n == "tile.full") {
    if (!op.attr("value") || op.results.size() != 1 || !is_data(op.results[0]->type)) bad(op, "malformed");
  } else if (n == "tile.alloca") {
    const Attr* s = op.attr("size");
    if (!s || !s->as_int() || *s->as_int() <= 0 || *s->as_int() > (1 << 20)) bad(op, "needs 1 <= size <= 2^20");
  } else if (n == "tile.load" || n == "tile.load_masked") {
    expect_operands(op, n == "tile.load" ? 2 : 3);
    if (!is_ptr(op.operands[0]) || !is_index(op.operands[1])) bad(op, "takes (ptr, index offset)");
    if (n == "tile.load_masked" && (!is_index(op.operands[2]) || !op.attr("other")))
      bad(op, "needs an index count and 'other'");
  } else if (n == "tile.store" || n == "tile.store_masked") {
    expect_operands(op, n == "tile.store" ? 3 : 4);
    if (!is_ptr(op.operands[0]) || !is_index(op.operands[1]) || !is_data(op.operands.back()->type))
      bad(op, "takes (ptr, index offset, [count,] value)");
  } else if (n == "tile.prefetch") {
    expect_operands(op, 3);
    if (!is_ptr(op.operands[0]) || !is_index(op.operands[1]) || !is_index(op.operands[2]))
      bad(op, "takes (ptr, index offset, index count)");
  } else if (n == "tile.load_staged") {
    expect_operands(op, 5);
    if (!is_ptr(op.operands[0]) || !is_ptr(op.operands[1]) || !is_index(op.operands[2]) || !is_index(op.operands[3]) ||
        !is_index(op.operands[4]))
      bad(op, "takes (ptr, ptr stage, index row, index rows, index iter)");
    if (!op.operands[1]->def || op.operands[1]->def->name != "tile.alloca" ||
        op.operands[1]->type.dtype != op.operands[0]->type.dtype)
      bad(op, "stages through a tile.alloca of the loaded pointer's dtype");
    const Attr* st = op.attr("row_stride");
    if (!st || !st->as_int() || *st->as_int() < 1) bad(op, "needs an integer 'row_stride' >= 1");
    if (op.results.size() != 1 || op.results[0]->type.kind != TypeKind::Tile) bad(op, "yields a tile");
  } else if (n == "tile.transpose") {
    expect_operands(op, 6);
    for (size_t i = 0; i < 6; ++i)
      if ((i < 2) != is_ptr(op.operands[i]) || (i >= 2 && !is_index(op.operands[i])))
        bad(op, "takes (ptr in, ptr out, index in_base, index out_base, index r0, index c0)");
    if (op.operands[0]->type.dtype != op.operands[1]->type.dtype) bad(op, "copies between buffers of one dtype");
    for (const char* key : {"rows", "cols"}) {
      const Attr* a = op.attr(key);
      if (!a || !a->as_int() || *a->as_int() < 0 || *a->as_int() >= (int64_t{1} << 40))
        bad(op, std::string("needs an integer '") + key + "' in [0, 2^40)");
    }
    const Attr* blk = op.attr("block");
    if (!blk || !blk->as_ints() || blk->as_ints()->size() != 2) bad(op, "needs 'block' = [TR, TC]");
    const std::vector<int64_t> sizes = *blk->as_ints();  // a copy: as_ints() returns a temporary
    for (int64_t v : sizes)
      if (v < 1 || v > 128 || (v & (v - 1)) != 0) bad(op, "'block' sizes must be powers of two in [1, 128]");
  } else if (n == "tile.combine" || n == "tile.reduce_lanes") {
    const Attr* k = op.attr("kind");
    if (!k || !k->as_string()) bad(op, "needs 'kind'");
    combine_identity(*k->as_string());
    if (n == "tile.combine" && (op.operands.size() != 2 || !(op.operands[0]->type == op.operands[1]->type)))
      bad(op, "combines two values of the same type");
    if (n == "tile.reduce_lanes" && (op.operands.size() != 1 || op.operands[0]->type.kind != TypeKind::Tile))
      bad(op, "reduces one tile");
    if (const Attr* sc = op.attr("scope"); sc && (n != "tile.reduce_lanes" || !sc->as_string() ||
                                                 (*sc->as_string() != "block" && *sc->as_string() != "program")))
      bad(op, "'scope' is \"block\" or \"program\" (reduce_lanes only)");
  } else if (n == "tile.softmax_stats") {
    expect_operands(op, 2);
    if (op.results.size() != 2 || op.operands[0]->type.kind != TypeKind::Scalar ||
        !(op.operands[0]->type == op.operands[1]->type) || !(op.results[0]->type == op.operands[0]->type) ||
        !(op.results[1]->type == op.operands[0]->type))
      bad(op, "takes two scalars of one float type and yields two");
  } else if (n == "tile.divf") {
    expect_operands(op, 2);
  } else if (n == "tile.map") {
    const Attr* fn = op.attr("fn");
    if (!fn || !fn->as_string() || map_arity(*fn->as_string()) == 0) bad(op, "needs a known 'fn'");
    expect_operands(op, static_cast<size_t>(map_arity(*fn->as_string())));
    for (Value* v : op.operands)
      if (!is_data(v->type) || !(v->type == op.operands[0]->type)) bad(op, "maps tiles or scalars of one type");
  } else if (n == "tile.splat") {
    expect_operands(op, 1);
    if (op.operands[0]->type.kind != TypeKind::Scalar || op.results.size() != 1 ||
        op.results[0]->type.kind != TypeKind::Tile || op.results[0]->type.dtype != op.operands[0]->type.dtype)
      bad(op, "splats a scalar into a tile of its dtype");
  } else if (n == "tile.mask") {
    expect_operands(op, 2);
    if (op.operands[0]->type.kind != TypeKind::Tile || !is_index(op.operands[1]) || !op.attr("other"))
      bad(op, "takes (tile, index count) and 'other'");
  } else if (n == "tile.matmul") {
    // The TMA form (attribute tma = [a_k_major, b_k_major, a_batched,
    // b_batched]) reads A and B through the kernel's tensor maps 0 and 1 and
    // takes the block's coordinates instead of bases and extents.
    const bool tma = op.attr("tma") != nullptr;
    const size_t count = tma ? 6 : 7;
    expect_operands(op, count);
    for (size_t i = 0; i < count; ++i)
      if ((i < 3) != is_ptr(op.operands[i]) || (i >= 3 && !is_index(op.operands[i])))
        bad(op, tma ? "(tma) takes (ptr a, ptr b, ptr scratch, index batch, index m0, index n0)"
                    : "takes (ptr a, ptr b, ptr scratch, index a_base, index b_base, index mrows, index ncols)");
    if (op.operands[2]->type.dtype != DType::F32 || !op.operands[2]->def ||
        op.operands[2]->def->name != "tile.alloca")
      bad(op, "accumulates into f32 scratch from tile.alloca");
    if (op.operands[0]->type.dtype != op.operands[1]->type.dtype) bad(op, "a and b must have one dtype");
    auto ints = [&](const char* key, size_t count) {
      const Attr* a = op.attr(key);
      if (!a || !a->as_ints() || a->as_ints()->size() != count)
        bad(op, std::string("needs '") + key + "' = [" + std::to_string(count) + " integers]");
      const std::vector<int64_t> values = *a->as_ints();
      for (int64_t v : values)
        if (v < 0 || v > (int64_t{1} << 40)) bad(op, std::string("'") + key + "' out of range");
      return values;
    };
    auto blk = ints("block", 3);
    for (int64_t v : blk)
      if (v < 1 || v > 1024) bad(op, "'block' sizes must be in [1, 1024]");
    ints("warps", 2);
    ints("a_strides", 2);
    ints("b_strides", 2);
    ints("vec", 2);
    if (tma)
      for (int64_t v : ints("tma", 4))
        if (v > 1) bad(op, "'tma' holds four flags (0 or 1)");
    // stage_a: the f32 block that stages row-major A through registers.
    if (const Attr* s = op.attr("stage_a")) {
      if (!s->as_bool()) bad(op, "'stage_a' is a boolean");
      if (*s->as_bool() && (tma || op.operands[0]->type.dtype != DType::F32 || ints("a_strides", 2)[1] != 1))
        bad(op, "'stage_a' is for f32 operands with row-major A (a_strides [*, 1]), without tma");
    }
    for (const char* key : {"k", "stages"})
      if (!op.attr(key) || !op.attr(key)->as_int() || *op.attr(key)->as_int() < 0) bad(op, std::string("needs '") + key + "'");
    if (*op.operands[2]->def->attr("size")->as_int() < blk[0] * blk[1]) bad(op, "scratch is smaller than the block");
  } else if (n == "tile.load2d" || n == "tile.store2d") {
    const bool load = n == "tile.load2d";
    expect_operands(op, load ? 4 : 5);
    if (!is_ptr(op.operands[0]) || !is_index(op.operands[1]) || !is_index(op.operands[2]) ||
        !is_index(op.operands[3]))
      bad(op, "takes (ptr, index base, index rows, index cols" + std::string(load ? ")" : ", tile)"));
    const Type& t = load ? op.results.at(0)->type : op.operands[4]->type;
    if (t.kind != TypeKind::Tile || t.shape.size() != 2) bad(op, "works on 2-D tiles [rows, cols]");
    for (const char* key : {"row_stride", "col_stride"}) {
      if (!load && std::string(key) == "col_stride") continue;
      const Attr* a = op.attr(key);
      if (!a || !a->as_int() || *a->as_int() < 0) bad(op, std::string("needs an integer '") + key + "' >= 0");
    }
    if (!op.attr("aligned") || !op.attr("aligned")->as_bool()) bad(op, "needs a boolean 'aligned'");
  } else if (n == "tile.for") {
    if (op.operands.size() < 3 || op.regions.size() != 1) bad(op, "needs lo, hi, step and one region");
    const Region& r = *op.regions[0];
    if (r.args.size() != op.operands.size() - 2 || r.ops.empty() || r.ops.back()->name != "tile.yield")
      bad(op, "region must take the induction variable and carried values and end in tile.yield");
    if (r.ops.back()->operands.size() != op.results.size()) bad(op, "yields the wrong number of values");
  } else if (n == "tile.yield") {
  } else {
    fail("E404", "'" + n + "' is not a Tile IR kernel op", op.loc);
  }
  for (auto& region : op.regions)
    for (auto& inner : region->ops) verify_kernel_op(*inner);
}

}  // namespace

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
      for (auto& op : top->regions[0]->ops) verify_kernel_op(*op);
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
      fail("E404", "'" + top->name + "' is not allowed at the top level of Tile IR", top->loc);
    }
  }
  for (Op* f : m.funcs()) {
    for (auto& op : f->regions[0]->ops) {
      if (op->name == "return") continue;
      if (op->name != "tile.launch") fail("E404", "'" + op->name + "' is not a Tile IR host op", op->loc);
      if (!kernels.count(op->sym)) fail("E405", "tile.launch of unknown kernel @" + op->sym, op->loc);
      const Op* k = m.lookup(op->sym);
      if (k->regions[0]->args.size() != op->operands.size() + op->results.size())
        fail("E405", "tile.launch @" + op->sym + " passes the wrong number of buffers", op->loc);
    }
    verify_func_return(*f);
  }
}

}  // namespace tessera::ir
