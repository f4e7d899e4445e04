// Graph IR -> Graph IR: a matmul operand that is a transpose of its last two
// axes reads the transpose's input instead, with transpose_a/transpose_b
// flipped: the matmul kernels read either layout, so `a @ b.T` written as a
// view costs no copy. The transpose is left without that use (fusion makes
// no kernel for a view nothing reads).
#pragma once
#include "ir/ir.hpp"

namespace tessera::passes {

void fold_matmul_transposes(ir::Module& graph);

}  // namespace tessera::passes
