// Graph IR -> Graph IR: a sum over the batch axis of a batched matmul,
// sum_h A_h B_h with A [H, M, K] and B [H, K, N], is one matmul over the
// concatenated contraction, [M, H*K] x [H*K, N]: A's batches side by side (a
// view, copied where the matmul needs it contiguous), B's stacked (a
// contiguous reshape). The [H, M, N] products are never written (attention's
// output projection done per head and summed over heads), and the whole sum
// accumulates in f32 before its one rounding, as a fused epilogue does.
// Only a matmul the sum alone reads, without transpose flags, is folded.
#pragma once
#include "ir/ir.hpp"

namespace tessera::passes {

void fold_batch_sums(ir::Module& graph);

}  // namespace tessera::passes
