// The arithmetic a benchmarked program does, counted the way its field
// counts it, so packets report TFLOP/s comparable with the anchors':
// a matmul 2*batch*m*n*k; an attention forward 4*B*H*D per (query, visible
// key) pair: Sq*Sk pairs, or causal with Sq = Sk half of them
// (FlashAttention's convention), else the visible pairs counted. Programs
// with neither have none.
#pragma once
#include "ir/ir.hpp"

namespace tessera::evidence {

struct ProgramFlops {
  double flops = 0;
  bool counted = false;  // the program has an op whose flops are counted
};
ProgramFlops program_flops(const ir::Module& graph);
// The (query, key) pairs an attention forward computes.
double attention_pairs(int64_t sq, int64_t sk, bool causal);

}  // namespace tessera::evidence
