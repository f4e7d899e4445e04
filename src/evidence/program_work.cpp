#include "evidence/program_work.hpp"

#include <algorithm>

#include "ir/graph_dialect.hpp"

namespace tessera::evidence {

double attention_pairs(int64_t sq, int64_t sk, bool causal) {
  if (!causal) return double(sq) * double(sk);
  if (sq == sk) return double(sq) * double(sk) / 2;  // the field's convention: half the square
  // row i sees min(max(i + sk - sq + 1, 0), sk) keys
  double pairs = 0;
  for (int64_t i = 0; i < sq; ++i) pairs += double(std::clamp<int64_t>(i + sk - sq + 1, 0, sk));
  return pairs;
}

ProgramFlops program_flops(const ir::Module& graph) {
  ProgramFlops w;
  for (ir::Op* f : graph.funcs())
    for (auto& op : f->regions[0]->ops) {
      if (op->name == "tessera.matmul") {
        const ir::MatmulSpec s = ir::matmul_spec(*op);
        w.flops += 2 * double(s.batch) * double(s.m) * double(s.n) * double(s.k);
        w.counted = true;
      } else if (op->name == "tessera.attention") {
        const ir::AttentionSpec s = ir::attention_spec(*op);
        w.flops += 4 * double(s.batch) * double(s.heads) * double(s.d) * attention_pairs(s.sq, s.sk, s.causal);
        w.counted = true;
      } else if (op->name == "tessera.attention_grad") {
        // the field's convention: the backward's five products, 2.5 times the forward's two
        const ir::AttentionSpec s = ir::attention_grad_spec(*op);
        w.flops += 10 * double(s.batch) * double(s.heads) * double(s.d) * attention_pairs(s.sq, s.sk, s.causal);
        w.counted = true;
      }
    }
  return w;
}

}  // namespace tessera::evidence
