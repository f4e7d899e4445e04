// Tile IR: target-neutral tile programs. A top-level
//   tile.kernel @k {grid = [N]} region(%in: ptr<f32>, %out: ptr<f32>) { ... }
// runs its body once per program id in [0, N); programs are independent, so a
// target may run them in any order or in parallel. Inside a kernel:
//   tile.program_id, tile.constant, integer index math (add sub mul div rem min),
//   tile.for (with loop-carried values and tile.yield), tile.alloca (scratch),
//   tile.full, tile.load / tile.load_masked (widen storage -> compute dtype),
//   tile.store / tile.store_masked (narrow), tile.combine {kind},
//   tile.prefetch %p, %offset, %count: a hint that p[offset, offset+count)
//     is read soon (CUDA: a bulk copy of it into L2; elsewhere nothing),
//   tile.num_programs: how many programs run (a persistent kernel's stride
//     over its work: the runtime may launch fewer programs than grid, as many
//     as fit the device at once; CUDA only),
//   tile.load_staged %p, %stage, %row, %rows, %iter {row_stride}: lanes of row
//     %row (p[row*row_stride ...]) of a persistent program's rows %row,
//     %row + num_programs, ... (%iter counts them from 0), copied by the bulk
//     copy engine through %stage (a tile.alloca of p's dtype holding the
//     block's share of a row); row %row + num_programs, if below %rows, is
//     fetched meanwhile (CUDA clusters only),
//   tile.reduce_lanes {kind} (fixed pairwise tree; scope = "block": over the
//     lanes of this block of a cluster program only, CUDA clusters only),
//   tile.softmax_stats %m, %s -> (%M, %S): a cluster program's softmax
//     statistics from each block's max m and sum s of exp(x - max(m, lowest)):
//     M = max of the m (NaN propagates), S = sum of s * exp(max(m, lowest) -
//     max(M, lowest)), in block order (one exchange; CUDA clusters only),
//   tile.divf,
//   tile.map {fn} (pointwise functions, see map_arity), tile.splat (a scalar
//   to every lane), tile.mask (lanes at or past a count replaced by a value).
// Matmul blocks (families/matmul):
//   tile.matmul %a, %b, %scratch, %a_base, %b_base, %mrows, %ncols {k, block =
//     [BM, BN, BK], warps = [WM, WN], stages, a_strides = [SAM, SAK], b_strides =
//     [SBK, SBN], vec = [VA, VB]}: the [BM, BN] f32 block of A x B over all of k,
//     left row-major in %scratch (a tile.alloca; on GPUs the block's shared memory);
//     element (r, k) of A is a[a_base + r*SAM + k*SAK], (k, c) of B b[b_base + k*SBK + c*SBN].
//   tile.load2d %p, %base, %rows, %cols {row_stride, col_stride, aligned}: a [R, C]
//     tile, lane (r, c) = p[base + r*row_stride + c*col_stride] (0 past rows/cols).
//   tile.store2d %p, %base, %rows, %cols, %v {row_stride, aligned}: the inverse.
// Layout blocks (families/transpose):
//   tile.transpose %in, %out, %in_base, %out_base, %r0, %c0 {rows = R, cols = C,
//     block = [TR, TC]}: out[out_base + c*R + r] = in[in_base + r*C + c] for the
//     rows r in [r0, r0+TR) and columns c in [c0, c0+TC) of the R x C matrix.
// combine kinds: sum, prod, max, min; max/min propagate NaN (a NaN operand
// gives NaN) whatever the target's native max does.
// The func holds the host schedule: %y = tile.launch @k %x : T -> U.
#pragma once
#include <functional>
#include <string>

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

  Value* full(double v, Type tile);
  Value* scratch(int64_t size, DType d);  // tile.alloca
  Value* load(Value* ptr, Value* offset, Type result);
  Value* load_masked(Value* ptr, Value* offset, Value* count, Type result, double other);
  void store(Value* ptr, Value* offset, Value* v);
  void store_masked(Value* ptr, Value* offset, Value* count, Value* v);
  void prefetch(Value* ptr, Value* offset, Value* count);
  Value* load_staged(Value* ptr, Value* stage, Value* row, Value* rows, Value* iter, int64_t row_stride, Type result);
  Value* combine(const std::string& kind, Value* a, Value* b);
  Value* reduce_lanes(const std::string& kind, Value* t);
  Value* reduce_block_lanes(const std::string& kind, Value* t);  // scope = "block"
  std::pair<Value*, Value*> softmax_stats(Value* block_max, Value* block_sum);
  Value* divf(Value* a, Value* b);
  // fn of map_arity() on tiles or scalars of one type
  Value* map(const std::string& fn, std::vector<Value*> args);
  Value* splat(Value* scalar, Type tile);
  Value* mask(Value* t, Value* count, double other);
  Value* load2d(Value* ptr, Value* base, Value* rows, Value* cols, int64_t row_stride, int64_t col_stride,
                bool aligned, Type result);
  void store2d(Value* ptr, Value* base, Value* rows, Value* cols, Value* v, int64_t row_stride, bool aligned);
  void transpose(Value* in, Value* out, Value* in_base, Value* out_base, Value* r0, Value* c0, int64_t rows,
                 int64_t cols, int64_t block_rows, int64_t block_cols);

  // for iv = lo; iv < hi; iv += step, carrying `inits`; body returns the
  // values to yield. Returns the final carried values.
  using LoopBody = std::function<std::vector<Value*>(Value* iv, const std::vector<Value*>& carried)>;
  std::vector<Value*> for_loop(Value* lo, Value* hi, Value* step, std::vector<Value*> inits, const LoopBody& body);

 private:
  Builder b_;
};

// An empty `tile.kernel @sym {grid = [programs], threads, vector_width,
// artifact_hash}` with one region, for a family's tile builder to fill.
// Optional kernel attributes: min_blocks (GPU: blocks an SM must fit) and
// cluster (CUDA: a program is a cluster of this many blocks of `threads`,
// its tiles spread over all of them; tile.reduce_lanes spans the cluster).
std::unique_ptr<Op> new_tile_kernel(const std::string& sym, int64_t programs, int64_t threads, int64_t vector_width,
                                    const std::string& artifact_hash);

// Operands of a tile.map function: 1 (neg abs exp log sqrt rsqrt tanh sigmoid
// relu gelu gelu_tanh silu round_f16 round_bf16 round_f32), 2 (add sub mul div
// max min pow), or 0 for an unknown name.
int map_arity(const std::string& fn);

// The identity of a combine kind (sum 0, prod 1, max -inf, min +inf).
double combine_identity(const std::string& kind);

void verify_tile(const Module& m);

}  // namespace tessera::ir
