#include "evidence/program_work.hpp"

#include "ir/graph_dialect.hpp"

namespace tessera::evidence {

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
        w.flops += 4 * double(s.batch) * double(s.heads) * double(s.sq) * double(s.sk) * double(s.d) /
                   (s.causal ? 2 : 1);
        w.counted = true;
      }
    }
  return w;
}

}  // namespace tessera::evidence
