// Graph IR -> Graph IR: a matmul with one row or one column (M == 1 or
// N == 1: a matrix-vector product, a decode step's projections) is a
// broadcast product summed over K, which the reduce family streams at memory
// bandwidth: the matrix is read once, by as many programs as the machine
// holds, instead of by the few tile blocks one row or column of C fills.
//   x [1, K] @ W [K, N]  ->  sum(reshape(x, [K, 1]) * W, axis 0)   [1, N]
//   A [M, K] @ v [K, 1]  ->  sum(A * reshape(v, [1, K]), axis 1)   [M, 1]
// (transposed operands reduce over the other axis). The product is the
// reduction's fused prologue, so it is never written, and the sum accumulates
// in f32 (f64 for f64) and rounds once, as the matmul's epilogue does; mixed
// operand and result dtypes compute in f32. Only 2-D matmuls are rewritten.
#pragma once
#include "ir/ir.hpp"

namespace tessera::passes {

void matvecs_as_reductions(ir::Module& graph);

}  // namespace tessera::passes
