#include "passes/simplify.hpp"

#include <cmath>
#include <unordered_map>

#include "ir/graph_dialect.hpp"

namespace tessera::passes {

using namespace tessera::ir;

namespace {

// v is a tessera.constant of value c (+0 and -0 told apart).
bool is_constant(const Value* v, double c) {
  if (!v->def || v->def->name != "tessera.constant") return false;
  const Attr* a = v->def->attr("value");
  std::optional<double> x;
  if (a && a->as_float()) x = *a->as_float();
  else if (a && a->as_int()) x = static_cast<double>(*a->as_int());
  return x && *x == c && std::signbit(*x) == std::signbit(c);
}

// The operand `op` passes through unchanged, or null.
Value* identity_operand(const Op& op) {
  if (op.operands.size() != 2 || op.results.size() != 1) return nullptr;
  Value *a = op.operands[0], *b = op.operands[1];
  const Type& r = op.result()->type;
  if (op.name == "tessera.mul") {
    if (is_constant(b, 1) && a->type == r) return a;
    if (is_constant(a, 1) && b->type == r) return b;
  }
  if (op.name == "tessera.div" && is_constant(b, 1) && a->type == r) return a;
  if (op.name == "tessera.sub" && is_constant(b, 0) && a->type == r) return a;
  return nullptr;
}

// A reduction over axes of extent 1 only: each result element is its one
// input element (a sum, mean, max, min or product of one value is it).
bool reduces_unit_axes(const Op& op) {
  if (op.name != "tessera.reduce" || op.operands.size() != 1) return false;
  const ReduceSpec s = reduce_spec(op);
  for (int64_t a : s.axes)
    if (op.operands[0]->type.shape[a] != 1) return false;
  return true;
}

// A transpose that keeps its non-unit dims in order moves only dims of
// extent 1: its row-major bytes are its input's.
bool moves_unit_dims_only(const Op& op) {
  if (op.name != "tessera.transpose" || op.operands.size() != 1) return false;
  const auto& shape = op.operands[0]->type.shape;
  const std::vector<int64_t> perm = *op.attr("perm")->as_ints();
  int64_t last = -1;
  for (int64_t a : perm) {
    if (shape[static_cast<size_t>(a)] == 1) continue;
    if (a < last) return false;
    last = a;
  }
  return true;
}

}  // namespace

void simplify(Module& graph) {
  for (Op* f : graph.funcs()) {
    Region& body = *f->regions[0];
    std::unordered_map<const Value*, Value*> became;
    for (auto& op : body.ops) {
      // (the return keeps its values: a func's results are named by them)
      if (op->name == "return") continue;
      for (Value*& v : op->operands)
        for (auto it = became.find(v); it != became.end(); it = became.find(v)) v = it->second;
      if (is_view_op(op->name) && op->results.size() == 1 && op->operands.size() == 1 && op->operands[0]->def &&
          op->operands[0]->def->name == "tessera.constant") {
        const Attr value = *op->operands[0]->def->attr("value");
        op->name = "tessera.constant";
        op->operands.clear();
        op->attrs = {{"value", value}};
        continue;
      }
      if (moves_unit_dims_only(*op)) {
        op->name = "tessera.reshape";
        op->attrs.clear();
        continue;
      }
      if (reduces_unit_axes(*op)) {
        if (op->operands[0]->type == op->result()->type) {
          became[op->result()] = op->operands[0];
        } else {
          op->name = "tessera.reshape";
          op->attrs.clear();
        }
        continue;
      }
      Value* x = identity_operand(*op);
      if (x) became[op->result()] = x;
    }
    // Dead ops, last first (a dropped op may leave its operands' producers unread).
    std::unordered_map<const Value*, int> uses;
    for (auto& op : body.ops)
      for (Value* v : op->operands) ++uses[v];
    for (size_t i = body.ops.size(); i-- > 0;) {
      Op& op = *body.ops[i];
      if (op.name == "return") continue;
      bool read = false;
      for (auto& r : op.results) read = read || uses[r.get()] > 0;
      if (read) continue;
      for (Value* v : op.operands) --uses[v];
      body.ops.erase(body.ops.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
}

}  // namespace tessera::passes
