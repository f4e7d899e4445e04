#include "passes/fold_batch_sums.hpp"

#include <unordered_map>

#include "ir/graph_dialect.hpp"

namespace tessera::passes {

using namespace tessera::ir;

namespace {

bool flag(const Op& op, const char* key) {
  const Attr* a = op.attr(key);
  return a && a->as_bool() && *a->as_bool();
}

// The batched matmul `sum` reads, when it is one this pass folds.
const Op* folded_matmul(const Op& sum, const std::unordered_map<const Value*, int>& uses) {
  if (sum.name != "tessera.reduce" || sum.operands.size() != 1) return nullptr;
  const Value* c = sum.operands[0];
  const Op* mm = c->def;
  if (!mm || mm->name != "tessera.matmul" || mm->operands.size() != 2 || uses.at(c) != 1) return nullptr;
  if (flag(*mm, "transpose_a") || flag(*mm, "transpose_b")) return nullptr;
  const ReduceSpec s = reduce_spec(sum);
  if (s.kind != ReduceKind::Sum || s.axes != std::vector<int64_t>{0}) return nullptr;
  const Type &a = mm->operands[0]->type, &b = mm->operands[1]->type;
  if (a.rank() != 3 || b.rank() != 3 || c->type.rank() != 3 || a.shape[0] != b.shape[0] || a.shape[0] < 2)
    return nullptr;
  return mm;
}

}  // namespace

void fold_batch_sums(Module& graph) {
  for (Op* f : graph.funcs()) {
    Region& body = *f->regions[0];
    std::unordered_map<const Value*, int> uses;
    for (auto& op : body.ops)
      for (Value* v : op->operands) ++uses[v];
    for (size_t i = 0; i < body.ops.size(); ++i) {
      Op& sum = *body.ops[i];
      const Op* mm = folded_matmul(sum, uses);
      if (!mm) continue;
      Value *a = mm->operands[0], *b = mm->operands[1];
      const int64_t h = a->type.shape[0], m = a->type.shape[1], k = a->type.shape[2], n = b->type.shape[2];
      const std::string base = sum.result()->name;
      // new ops go right before the sum, which becomes the folded matmul
      auto insert = [&](const std::string& suffix, const std::string& name, Value* in, std::vector<int64_t> shape,
                        AttrDict attrs) {
        auto op = std::make_unique<Op>();
        op->name = name;
        op->operands = {in};
        op->attrs = std::move(attrs);
        op->loc = mm->loc;
        Value* out = op->add_result(base + "." + suffix, Type::tensor(in->type.dtype, std::move(shape)));
        body.ops.insert(body.ops.begin() + static_cast<std::ptrdiff_t>(i++), std::move(op));
        return out;
      };
      Value* side = insert("batches", "tessera.transpose", a, {m, h, k}, {{"perm", Attr::ints({1, 0, 2})}});
      Value* a2 = insert("a", "tessera.reshape", side, {m, h * k}, {});
      Value* b2 = insert("b", "tessera.reshape", b, {h * k, n}, {});
      const Type result = sum.result()->type;  // [M, N], or [1, M, N] with keepdims
      if (result.rank() == 2) {
        sum.name = "tessera.matmul";
        sum.operands = {a2, b2};
        sum.attrs.clear();
        sum.loc = mm->loc;
      } else {
        Value* c2 = insert("sum", "tessera.matmul", a2, {m, n}, {});
        c2->type.dtype = result.dtype;
        c2->def->operands.push_back(b2);
        sum.name = "tessera.reshape";
        sum.operands = {c2};
        sum.attrs.clear();
      }
      --uses[mm->result()];
    }
    // The folded matmuls, now read by nothing.
    std::erase_if(body.ops, [&](const std::unique_ptr<Op>& op) {
      return op->name == "tessera.matmul" && op->results.size() == 1 && uses.count(op->result()) &&
             uses[op->result()] == 0;
    });
  }
}

}  // namespace tessera::passes
