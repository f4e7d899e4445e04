// Graph IR's tessera.argmax and tessera.argmin (graph_dialect.hpp states them).
#include "ir/graph_dialect.hpp"

namespace tessera::ir {

namespace {
[[noreturn]] void bad(const Op& op, const char* code, const std::string& msg) {
  fail(code, op.name + ": " + msg, op.loc);
}
}  // namespace

bool is_arg_reduce_op(const std::string& name) { return name == "tessera.argmax" || name == "tessera.argmin"; }

ArgReduceSpec arg_reduce_spec(const Op& op) {
  if (op.operands.size() != 1 || op.results.size() != 1) bad(op, "E205", "takes one operand and has one result");
  for (auto& [k, _] : op.attrs)
    if (k != "axis" && k != "keepdims") bad(op, "E205", "unknown attribute '" + k + "'");
  const Type& x = op.operands[0]->type;
  if (!x.is_tensor()) bad(op, "E207", "takes a tensor, got " + x.str());
  ArgReduceSpec s;
  s.max = op.name == "tessera.argmax";
  const Attr* a = op.attr("axis");
  if (!a || !a->as_int()) bad(op, "E211", "needs an integer attribute 'axis'");
  const int64_t axis = *a->as_int();
  if (axis < -x.rank() || axis >= x.rank())
    bad(op, "E203", "axis " + std::to_string(axis) + " is out of range for " + x.str());
  s.axis = axis < 0 ? axis + x.rank() : axis;
  if (const Attr* k = op.attr("keepdims")) {
    if (!k->as_bool()) bad(op, "E211", "'keepdims' must be true or false");
    s.keepdims = *k->as_bool();
  }
  for (int64_t d = 0; d < x.rank(); ++d) (d < s.axis ? s.outer : d == s.axis ? s.extent : s.inner) *= x.shape[d];
  if (x.shape[s.axis] == 0)
    bad(op, "E218", "axis " + std::to_string(s.axis) + " of " + x.str() + " is empty: there is no position to return");
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (d != s.axis) shape.push_back(x.shape[d]);
    else if (s.keepdims) shape.push_back(1);
  const Type want = Type::tensor(DType::I64, shape);
  if (!(op.result()->type == want))
    bad(op, "E205",
        "result type is " + op.result()->type.str() + " but " + want.str() +
            " follows from the operand and attributes");
  return s;
}

}  // namespace tessera::ir
