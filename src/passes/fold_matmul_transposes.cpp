#include "passes/fold_matmul_transposes.hpp"

#include "ir/graph_dialect.hpp"

namespace tessera::passes {

using namespace tessera::ir;

namespace {

// A transpose that swaps the last two axes and keeps the others.
bool swaps_last_two(const Op& op) {
  if (op.name != "tessera.transpose") return false;
  const Attr* a = op.attr("perm");
  const auto perm = a ? a->as_ints() : std::nullopt;
  const int64_t rank = op.operands[0]->type.rank();
  if (!perm || rank < 2 || static_cast<int64_t>(perm->size()) != rank) return false;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t want = d == rank - 2 ? rank - 1 : d == rank - 1 ? rank - 2 : d;
    const int64_t p = (*perm)[d] < 0 ? (*perm)[d] + rank : (*perm)[d];
    if (p != want) return false;
  }
  return true;
}

}  // namespace

void fold_matmul_transposes(Module& graph) {
  for (Op* f : graph.funcs())
    for (auto& op : f->regions[0]->ops) {
      if (op->name != "tessera.matmul" || op->operands.size() != 2) continue;
      for (size_t i = 0; i < 2; ++i) {
        const Op* t = op->operands[i]->def;
        if (!t || !swaps_last_two(*t)) continue;
        const char* key = i == 0 ? "transpose_a" : "transpose_b";
        const Attr* flag = op->attr(key);
        const bool was = flag && flag->as_bool() && *flag->as_bool();
        op->operands[i] = t->operands[0];
        op->attrs[key] = Attr(!was);
      }
    }
}

}  // namespace tessera::passes
