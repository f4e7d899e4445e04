// Graph IR's row gradient ops, the backward passes of the row ops as single
// ops (what `tessera grad` writes), so that each is one kernel over its rows:
//   %dx = tessera.softmax_grad %y, %dy {axis}          y = softmax(x) (saved)
//   %dx = tessera.log_softmax_grad %y, %dy {axis}      y = log_softmax(x) (saved)
//   %dx, %dw, %db = tessera.layer_norm_grad %x, %w, %dy {eps}
//   %dx, %dw = tessera.rms_norm_grad %x, %w, %dy {eps}
// The norm gradients recompute the row statistics from x; dw (and db) sum over
// every row. Formulas: docs/semantics.md, "Gradients".
#include "ir/graph_dialect.hpp"

namespace tessera::ir {

namespace {

[[noreturn]] void bad(const Op& op, const char* code, const std::string& msg) {
  fail(code, op.name + ": " + msg, op.loc);
}

void expect_type(const Op& op, const Type& got, const Type& want, const std::string& what) {
  if (!(got == want)) bad(op, "E212", what + " must be " + want.str() + ", got " + got.str());
}

}  // namespace

bool is_row_grad_op(const std::string& name) {
  return name == "tessera.softmax_grad" || name == "tessera.log_softmax_grad" || name == "tessera.layer_norm_grad" ||
         name == "tessera.rms_norm_grad";
}

bool is_norm_grad_op(const std::string& name) {
  return name == "tessera.layer_norm_grad" || name == "tessera.rms_norm_grad";
}

void verify_row_grad_op(const Op& op) {
  const bool norm = is_norm_grad_op(op.name);
  const bool layer = op.name == "tessera.layer_norm_grad";
  const size_t operands = norm ? 3 : 2, results = layer ? 3 : norm ? 2 : 1;
  if (op.operands.size() != operands || op.results.size() != results)
    bad(op, "E205",
        "takes " + std::to_string(operands) + " operands and has " + std::to_string(results) + " result" +
            (results == 1 ? "" : "s"));
  for (Value* v : op.operands)
    if (!v->type.is_tensor()) bad(op, "E207", "operands must be tensors, got " + v->type.str());
  for (auto& r : op.results)
    if (!r->type.is_tensor()) bad(op, "E207", "results must be tensors");
  for (auto& [k, _] : op.attrs)
    if (k != (norm ? "eps" : "axis")) bad(op, "E205", "unknown attribute '" + k + "'");
  const Type& x = op.operands[0]->type;
  if (x.rank() == 0) bad(op, "E212", "needs an input of rank 1 or more, got " + x.str());
  if (!is_float(x.dtype)) bad(op, "E215", "takes float tensors, got " + x.str());
  row_op_axis(op);
  expect_type(op, op.operands.back()->type, x, "the output gradient dy");
  expect_type(op, op.results[0]->type, x, "dx");
  if (!norm) return;
  row_op_eps(op);
  const Type w = Type::tensor(x.dtype, {x.shape.back()});
  expect_type(op, op.operands[1]->type, w, "the weight");
  expect_type(op, op.results[1]->type, w, "dw");
  if (layer) expect_type(op, op.results[2]->type, w, "db");
}

}  // namespace tessera::ir
