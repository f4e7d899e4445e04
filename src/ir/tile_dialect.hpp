// Tile IR: target-neutral tile programs. A top-level
//   tile.kernel @k {grid = [N]} region(%in: ptr<f32>, %out: ptr<f32>) { ... }
// runs its body once per program id in [0, N); programs are independent, so a
// target may run them in any order or in parallel. Inside a kernel: index
// math, loops with carried values, scratch, tile loads and stores (widening
// storage to the compute dtype and back), combines and lane reductions,
// pointwise maps, and the matmul (families/matmul) and transpose
// (families/transpose) blocks. Each op's operands, results, attributes and
// meaning are its entry in the Tile IR op table (ir/tile_ops.cpp), which the
// verifier, TileBuilder and the renderers follow.
// combine kinds: sum, prod, max, min; max/min propagate NaN (a NaN operand
// gives NaN) whatever the target's native max does.
// The func holds the host schedule: %y = tile.launch @k %x : T -> U.
#pragma once
#include <functional>
#include <string>
#include <variant>

#include "ir/ir.hpp"

namespace tessera::ir {

class TileBuilder {
 public:
  explicit TileBuilder(Region& body) : b_(body, "t") {}
  Builder& base() { return b_; }

  Value* program_id();
  Value* num_programs();
  Value* index(int64_t v);
  Value* fconst(double v, DType d);
  Value* arith(const char* op, Value* a, Value* b);  // add sub mul div rem min on index
  Value* add(Value* a, Value* b) { return arith("tile.add", a, b); }
  Value* sub(Value* a, Value* b) { return arith("tile.sub", a, b); }
  Value* mul(Value* a, Value* b) { return arith("tile.mul", a, b); }
  Value* div(Value* a, Value* b) { return arith("tile.div", a, b); }
  Value* rem(Value* a, Value* b) { return arith("tile.rem", a, b); }
  Value* min(Value* a, Value* b) { return arith("tile.min", a, b); }
  Value* to_index(Value* integer);  // an i32/i64 scalar as an index

  Value* full(double v, Type tile);
  Value* scratch(int64_t size, DType d);    // tile.alloca
  Value* workspace(int64_t size, DType d);  // tile.workspace
  Value* load(Value* ptr, Value* offset, Type result);
  Value* load_masked(Value* ptr, Value* offset, Value* count, Type result, double other);
  // Lane i reads ptr[addr[i]] (addr: a tile of i64 element offsets).
  Value* gather(Value* ptr, Value* addr, Type result);
  // Lane i reads ptr[offset + i * stride] (lanes from `count` on, when given, are 0).
  Value* load_strided(Value* ptr, Value* offset, int64_t stride, Value* count, Type result);
  void store(Value* ptr, Value* offset, Value* v);
  void store_masked(Value* ptr, Value* offset, Value* count, Value* v);
  void prefetch(Value* ptr, Value* offset, Value* count);
  Value* load_staged(Value* ptr, Value* stage, Value* row, Value* rows, Value* iter, int64_t row_stride, Type result);
  Value* combine(const std::string& kind, Value* a, Value* b);
  Value* reduce_lanes(const std::string& kind, Value* t);
  Value* reduce_block_lanes(const std::string& kind, Value* t);  // scope = "block"
  // Every row of an [R, C] tile becomes the combine of all its rows, in row order.
  Value* fold_rows(const std::string& kind, Value* t);
  std::pair<Value*, Value*> softmax_stats(Value* block_max, Value* block_sum);
  Value* divf(Value* a, Value* b);
  // fn of map_result() on tiles or scalars
  Value* map(const std::string& fn, std::vector<Value*> args);
  // An i64 tile: lane i holds ((base + i) / inner) % extent, the coordinate
  // along one axis of the element at flat index base + i.
  Value* iota(Value* base, int64_t inner, int64_t extent, Type tile);
  Value* splat(Value* scalar, Type tile);
  Value* mask(Value* t, Value* count, double other);
  Value* load2d(Value* ptr, Value* base, Value* rows, Value* cols, int64_t row_stride, int64_t col_stride, bool aligned,
                Type result);
  void store2d(Value* ptr, Value* base, Value* rows, Value* cols, Value* v, int64_t row_stride, bool aligned);
  // `into` with its lanes (r, c), lo <= c < hi, r < rows replaced by
  // ptr[base + r*row_stride + c - lo]: one piece of a concat along the columns.
  Value* load2d_piece(Value* into, Value* ptr, Value* base, Value* rows, int64_t row_stride, int64_t lo, int64_t hi,
                      bool aligned);
  // tile.matmul: its operands and attributes as the op's table entry lists them.
  void matmul(std::vector<Value*> operands, AttrDict attrs);
  // tile.attention: likewise.
  void attention(std::vector<Value*> operands, AttrDict attrs);
  // tile.attention_grad and tile.attention_decode: likewise.
  void attention_grad(std::vector<Value*> operands, AttrDict attrs);
  void attention_decode(std::vector<Value*> operands, AttrDict attrs);
  void transpose(Value* in, Value* out, Value* in_base, Value* out_base, Value* r0, Value* c0, int64_t rows,
                 int64_t cols, int64_t block_rows, int64_t block_cols);

  // for iv = lo; iv < hi; iv += step, carrying `inits`; body returns the
  // values to yield. Returns the final carried values.
  using LoopBody = std::function<std::vector<Value*>(Value* iv, const std::vector<Value*>& carried)>;
  std::vector<Value*> for_loop(Value* lo, Value* hi, Value* step, std::vector<Value*> inits, const LoopBody& body);

 private:
  Op& create(std::string name, std::vector<Value*> operands, AttrDict attrs = {});
  Value* create1(std::string name, std::vector<Value*> operands, Type t, AttrDict attrs = {});
  void check(const Op& op);
  Builder b_;
};

// An empty `tile.kernel @sym {grid = [programs], threads, vector_width,
// artifact_hash}` with one region, for a family's tile builder to fill.
// Optional kernel attributes: min_blocks (GPU: blocks an SM must fit) and
// cluster (CUDA: a program is a cluster of this many blocks of `threads`,
// its tiles spread over all of them; tile.reduce_lanes spans the cluster).
std::unique_ptr<Op> new_tile_kernel(const std::string& sym, int64_t programs, int64_t threads, int64_t vector_width,
                                    const std::string& artifact_hash);

// The result type of tile.map `fn` on values of these types (tiles or
// scalars), or the reason there is none (an unknown fn, a wrong count, types
// it does not take):
//   - float functions: exp log sqrt rsqrt tanh sigmoid relu gelu gelu_tanh
//     silu sin cos exp2 log2 erf floor ceil round div pow, and round_f16
//     round_bf16 round_f32 (rounding to a storage type): floats of one type;
//   - neg abs add sub mul max min: floats or integers (i32, i64; wrapping);
//   - eq ne lt le gt ge: two values of one type, an i1 result;
//   - and or not: i1;  select: (i1 condition, a, b) gives a or b;
//   - cvt_<dtype> (f32 f64 i1 i32 i64): docs/semantics.md's conversion.
std::variant<Type, std::string> map_result(const std::string& fn, const std::vector<const Type*>& operands);

// The identity of a combine kind (sum 0, prod 1, max -inf, min +inf).
double combine_identity(const std::string& kind);

void verify_tile(const Module& m);

}  // namespace tessera::ir
