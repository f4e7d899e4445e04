#include "ir/graph_dialect.hpp"

#include <algorithm>

namespace tessera::ir {

const char* reduce_kind_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum: return "sum";
    case ReduceKind::Mean: return "mean";
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
    case ReduceKind::Prod: return "prod";
  }
  return "?";
}

ReduceSpec make_reduce_spec(const std::string& kind, std::vector<int64_t> axes, bool keepdims, const Type& input,
                            const SourceLoc& loc) {
  ReduceSpec spec;
  static const std::pair<const char*, ReduceKind> kinds[] = {{"sum", ReduceKind::Sum},
                                                             {"mean", ReduceKind::Mean},
                                                             {"max", ReduceKind::Max},
                                                             {"min", ReduceKind::Min},
                                                             {"prod", ReduceKind::Prod}};
  bool found = false;
  for (auto& [n, k] : kinds)
    if (kind == n) {
      spec.kind = k;
      found = true;
    }
  if (!found) fail("E202", "unknown reduction kind '" + kind + "' (expected sum, mean, max, min or prod)", loc);
  if (!input.is_tensor()) fail("E207", "tessera.reduce takes a tensor, got " + input.str(), loc);
  const int64_t rank = input.rank();
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank)
      fail("E203",
           "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank) + " input " + input.str(),
           loc);
    if (a < 0) a += rank;
  }
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    fail("E204", "duplicate axis in reduction axes (after normalizing negative axes)", loc);
  spec.axes = sorted;
  spec.keepdims = keepdims;
  int64_t reduced = 1;
  for (int64_t a : spec.axes) reduced *= input.shape[a];
  if (reduced == 0 && (spec.kind == ReduceKind::Max || spec.kind == ReduceKind::Min || spec.kind == ReduceKind::Mean))
    fail("E206",
         std::string("'") + reduce_kind_name(spec.kind) +
             "' over a zero-size extent has no value (only sum and prod have an identity)",
         loc);
  return spec;
}

ReduceSpec reduce_spec(const Op& op) {
  const Attr* kind = op.attr("kind");
  if (!kind || !kind->as_string()) fail("E205", "tessera.reduce needs a string attribute 'kind'", op.loc);
  if (op.operands.size() != 1 || op.results.size() != 1)
    fail("E205", "tessera.reduce takes one operand and has one result", op.loc);
  const Type& in = op.operands[0]->type;
  std::vector<int64_t> axes;
  if (const Attr* a = op.attr("axes")) {
    auto ints = a->as_ints();
    if (!ints) fail("E203", "'axes' must be a list of integers, e.g. axes = [1]", op.loc);
    axes = *ints;
  } else {
    for (int64_t i = 0; i < in.rank(); ++i) axes.push_back(i);  // no axes: reduce everything
  }
  bool keepdims = false;
  if (const Attr* k = op.attr("keepdims")) {
    if (!k->as_bool()) fail("E205", "'keepdims' must be true or false", op.loc);
    keepdims = *k->as_bool();
  }
  for (auto& [key, _] : op.attrs)
    if (key != "kind" && key != "axes" && key != "keepdims")
      fail("E205", "unknown attribute '" + key + "' on tessera.reduce", op.loc);
  return make_reduce_spec(*kind->as_string(), axes, keepdims, in, op.loc);
}

Type reduce_result_type(const Type& input, const ReduceSpec& spec) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < input.rank(); ++i) {
    bool reduced = std::binary_search(spec.axes.begin(), spec.axes.end(), i);
    if (!reduced) out.push_back(input.shape[i]);
    else if (spec.keepdims) out.push_back(1);
  }
  return Type::tensor(input.dtype, out);
}

void verify_func_return(const Op& func) {
  const Region& body = *func.regions.at(0);
  if (body.ops.empty() || body.ops.back()->name != "return")
    fail("E208", "func @" + func.sym + " must end with 'return'", func.loc);
  // `return` ends the func and defines nothing; a later layer maps each op's
  // results onto the next, so a `return` elsewhere or with results is refused
  // here for every layer rather than found missing by a pass.
  for (auto& op : body.ops)
    if (op->name == "return" && op.get() != body.ops.back().get())
      fail("E208", "'return' must be the last op of func @" + func.sym, op->loc);
  const Op& ret = *body.ops.back();
  if (!ret.results.empty() || !ret.regions.empty() || !ret.attrs.empty() || !ret.sym.empty())
    fail("E208", "'return' takes only the values it returns (no results, attributes, symbol or regions)", ret.loc);
  auto results = func_result_types(func);
  if (ret.operands.size() != results.size())
    fail("E208",
         "return has " + std::to_string(ret.operands.size()) + " values but func @" + func.sym + " declares " +
             std::to_string(results.size()) + " results",
         ret.loc);
  for (size_t i = 0; i < results.size(); ++i)
    if (!(ret.operands[i]->type == results[i]))
      fail("E208",
           "return value " + std::to_string(i) + " has type " + ret.operands[i]->type.str() + " but func @" + func.sym +
               " declares " + results[i].str(),
           ret.loc);
  for (auto& [k, v] : func.attrs)
    if (k != "result_types" && k != "index_guards" && k != "in_place")
      fail("E208", "func @" + func.sym + ": unknown attribute '" + echo(k) + "' (a func takes index_guards, in_place)",
           func.loc);
  if (const Attr* a = func.attr("in_place")) {
    // per result (leading results; the rest are new buffers): the argument it
    // is written into, or -1
    const auto into = a->as_ints();
    const auto& args = func.regions[0]->args;
    if (!into || into->size() > results.size())
      fail("E208", "func @" + func.sym + ": 'in_place' is a list of argument indices (or -1), one per result",
           func.loc);
    for (size_t r = 0; r < into->size(); ++r) {
      const int64_t i = (*into)[r];
      if (i == -1) continue;
      if (i < 0 || i >= static_cast<int64_t>(args.size()) || !(args[i]->type == results[r]) ||
          std::count(into->begin(), into->end(), i) > 1)
        fail("E208",
             "func @" + func.sym + ": 'in_place' writes result " + std::to_string(r) +
                 " into an argument that is out of range, of another type, or written twice",
             func.loc);
    }
  }
  if (const Attr* g = func.attr("index_guards")) {
    const AttrList* list = g->as_list();
    bool ok = list && list->size() <= results.size();
    for (size_t i = 0; ok && i < list->size(); ++i)
      ok = (*list)[i].as_string() && results[results.size() - list->size() + i] == Type::tensor(DType::F32, {});
    if (!ok)
      fail("E208",
           "func @" + func.sym + ": 'index_guards' names one check per trailing tensor<f32> result (a list of strings)",
           func.loc);
  }
}

void verify_graph(const Module& m) {
  if (m.funcs().empty()) fail("E200", "the module has no func");
  for (auto& top : m.ops) {
    if (top->name != "func")
      fail("E201", "'" + echo(top->name) + "' is not allowed at the top level of Graph IR", top->loc);
    for (auto& arg : top->regions[0]->args)
      if (!arg->type.is_tensor()) fail("E207", "func arguments must be tensors, got " + arg->type.str(), top->loc);
    const Region& body = *top->regions[0];
    for (size_t i = 0; i < body.ops.size(); ++i) {
      const Op& op = *body.ops[i];
      if (op.name == "return") {
        if (i + 1 != body.ops.size()) fail("E208", "'return' must be the last op", op.loc);
        continue;
      }
      if (is_pointwise_op(op.name) || is_row_op(op.name)) {
        verify_pointwise_or_row_op(op);
        continue;
      }
      if (op.name == "tessera.matmul") {
        matmul_spec(op);
        continue;
      }
      if (is_view_op(op.name)) {
        verify_view_op(op);
        continue;
      }
      if (op.name == "tessera.attention") {
        attention_spec(op);
        continue;
      }
      if (op.name == "tessera.attention_grad") {
        attention_grad_spec(op);
        continue;
      }
      if (is_arg_reduce_op(op.name)) {
        arg_reduce_spec(op);
        continue;
      }
      if (is_scatter_op(op.name)) {
        scatter_spec(op);
        continue;
      }
      if (op.name != "tessera.reduce")
        fail("E201",
             "unknown Graph IR op '" + echo(op.name) +
                 "' (this build knows tessera.reduce, argmax, argmin, softmax, log_softmax, layer_norm, rms_norm, "
                 "matmul, attention, attention_grad, gather, take_along, scatter_add, "
                 "cast, constant, where, iota, the views (reshape, transpose, slice, broadcast_to, split) and the "
                 "pointwise ops in docs/semantics.md)",
             op.loc);
      for (Value* v : op.operands)
        if (!v->type.is_tensor()) fail("E207", "tessera.reduce takes a tensor, got " + v->type.str(), op.loc);
      ReduceSpec spec = reduce_spec(op);
      if (!is_float(op.operands[0]->type.dtype))
        fail("E215", "tessera.reduce takes float tensors, got " + op.operands[0]->type.str(), op.loc);
      Type want = reduce_result_type(op.operands[0]->type, spec);
      if (!(op.results[0]->type == want))
        fail("E205",
             "tessera.reduce result type is " + op.results[0]->type.str() + " but " + want.str() +
                 " follows from the input and attributes",
             op.loc);
    }
    verify_func_return(*top);
  }
}

}  // namespace tessera::ir
