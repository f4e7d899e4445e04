#include "passes/index_guards.hpp"

#include <climits>
#include <set>

#include "ir/graph_dialect.hpp"

namespace tessera::passes {

using namespace tessera::ir;

namespace {

std::string where(const Op& op) {
  const SourceLoc& l = op.loc;
  return l.known() ? " at " + l.file + ":" + std::to_string(l.line) + ":" + std::to_string(l.col) : "";
}

}  // namespace

void add_index_guards(Module& graph) {
  for (Op* f : graph.funcs()) {
    Region& body = *f->regions[0];
    std::vector<std::unique_ptr<Op>> ops = std::move(body.ops);
    std::unique_ptr<Op> ret = std::move(ops.back());
    ops.pop_back();
    body.ops = std::move(ops);
    Builder b(body, "index_guard");
    std::set<std::pair<const Value*, int64_t>> guarded;
    // guards a func already declares stay (they are its trailing results)
    AttrList messages;
    if (const Attr* g = f->attr("index_guards"); g && g->as_list()) messages = *g->as_list();
    const size_t declared = messages.size();
    std::vector<Type> results = func_result_types(*f);
    for (size_t i = 0, n = body.ops.size(); i < n; ++i) {
      const Op& op = *body.ops[i];
      if (!is_index_op(op.name) && !is_scatter_op(op.name)) continue;
      const IndexSpec s = is_scatter_op(op.name) ? scatter_spec(op) : index_spec(op);
      const Type& indexed = is_scatter_op(op.name) ? op.result()->type : op.operands[0]->type;
      Value* idx = op.operands[1];
      // (an i32 index cannot leave an axis of 2^31 or more)
      const bool always_in_range = idx->type.dtype == DType::I32 && s.extent > INT32_MAX;
      if (idx->type.numel() == 0 || always_in_range || !guarded.emplace(idx, s.extent).second) continue;
      const Type scalar = Type::tensor(idx->type.dtype, {});
      const Type flags = Type::tensor(DType::I1, idx->type.shape);
      Value* lo = b.create1("tessera.constant", {}, scalar, {{"value", Attr(-s.extent)}});
      Value* hi = b.create1("tessera.constant", {}, scalar, {{"value", Attr(s.extent)}});
      Value* bad = b.create1(
          "tessera.or", {b.create1("tessera.lt", {idx, lo}, flags), b.create1("tessera.ge", {idx, hi}, flags)}, flags);
      Value* guard = b.create1("tessera.cast", {bad}, Type::tensor(DType::F32, idx->type.shape));
      if (idx->type.rank() > 0) {
        std::vector<int64_t> axes;
        for (int64_t d = 0; d < idx->type.rank(); ++d) axes.push_back(d);
        guard = b.create1("tessera.reduce", {guard}, Type::tensor(DType::F32, {}),
                          {{"kind", Attr("max")}, {"axes", Attr::ints(axes)}});
      }
      ret->operands.push_back(guard);
      results.push_back(guard->type);
      messages.emplace_back(op.name + " %" + op.result()->name + where(op) + ": an index is outside [-" +
                            std::to_string(s.extent) + ", " + std::to_string(s.extent) + ") for axis " +
                            std::to_string(s.axis) + " of " + indexed.str());
    }
    body.ops.push_back(std::move(ret));
    if (messages.size() == declared) continue;
    AttrList types;
    for (const Type& t : results) types.emplace_back(t);
    f->attrs["result_types"] = Attr(std::move(types));
    f->attrs["index_guards"] = Attr(std::move(messages));
  }
}

}  // namespace tessera::passes
