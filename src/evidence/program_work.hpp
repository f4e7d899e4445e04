// The arithmetic a benchmarked program does, counted the way its field
// counts it, so packets report TFLOP/s comparable with the anchors':
// a matmul 2*batch*m*n*k; an attention forward 4*B*H*Sq*Sk*D, halved when
// causal (FlashAttention's convention). Programs with neither have none.
#pragma once
#include "ir/ir.hpp"

namespace tessera::evidence {

struct ProgramFlops {
  double flops = 0;
  bool counted = false;  // the program has an op whose flops are counted
};
ProgramFlops program_flops(const ir::Module& graph);

}  // namespace tessera::evidence
