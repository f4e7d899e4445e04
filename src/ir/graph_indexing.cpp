// Graph IR's indexing ops, tessera.gather and tessera.take_along, and
// gather's transpose tessera.scatter_add (graph_dialect.hpp states them).
#include <algorithm>

#include "ir/graph_dialect.hpp"

namespace tessera::ir {

namespace {
[[noreturn]] void bad(const Op& op, const char* code, const std::string& msg) {
  fail(code, op.name + ": " + msg, op.loc);
}
}  // namespace

bool is_index_op(const std::string& name) { return name == "tessera.gather" || name == "tessera.take_along"; }

Type index_result_type(bool along, const Type& x, const Type& idx, int64_t axis, const SourceLoc& loc) {
  std::vector<int64_t> shape;
  if (!along) {  // numpy take: x's dims before the axis, idx's dims, x's dims after it
    shape.assign(x.shape.begin(), x.shape.begin() + axis);
    shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
    shape.insert(shape.end(), x.shape.begin() + axis + 1, x.shape.end());
    return Type::tensor(x.dtype, shape);
  }
  // numpy take_along_axis: x and idx broadcast against each other except
  // along the axis, where the result has idx's extent.
  if (idx.rank() != x.rank())
    fail("E216", "tessera.take_along: the indices need the operand's rank, got " + x.str() + " and " + idx.str(), loc);
  for (int64_t d = 0; d < x.rank(); ++d) {
    const int64_t a = x.shape[d], b = idx.shape[d];
    if (d == axis) shape.push_back(b);
    else if (a == b || b == 1) shape.push_back(a);
    else if (a == 1) shape.push_back(b);
    else
      fail("E210",
           "tessera.take_along: " + x.str() + " and indices " + idx.str() + " do not broadcast in dimension " +
               std::to_string(d),
           loc);
  }
  return Type::tensor(x.dtype, shape);
}

IndexSpec index_spec(const Op& op) {
  if (op.operands.size() != 2 || op.results.size() != 1) bad(op, "E205", "takes an operand and indices, one result");
  for (auto& [k, _] : op.attrs)
    if (k != "axis") bad(op, "E205", "unknown attribute '" + k + "'");
  const Type &x = op.operands[0]->type, &idx = op.operands[1]->type;
  if (!x.is_tensor() || !idx.is_tensor()) bad(op, "E207", "operands must be tensors");
  if (idx.dtype != DType::I32 && idx.dtype != DType::I64)
    bad(op, "E215", "indices must be i32 or i64, got " + idx.str() + " (insert a tessera.cast)");
  if (x.rank() == 0) bad(op, "E212", "indexes a tensor of rank 1 or more, got " + x.str());
  const Attr* a = op.attr("axis");
  if (!a || !a->as_int()) bad(op, "E211", "needs an integer attribute 'axis'");
  IndexSpec s;
  s.along = op.name == "tessera.take_along";
  s.axis = *a->as_int();
  if (s.axis < -x.rank() || s.axis >= x.rank())
    bad(op, "E203", "axis " + std::to_string(s.axis) + " is out of range for " + x.str());
  if (s.axis < 0) s.axis += x.rank();
  s.extent = x.shape[s.axis];
  const Type want = index_result_type(s.along, x, idx, s.axis, op.loc);
  if (!(op.result()->type == want))
    bad(op, "E205",
        "result type is " + op.result()->type.str() + " but " + want.str() + " follows from the operands and axis");
  // numpy refuses the same ("cannot do a non-empty take from an empty axes"):
  // no index is in range, so the op could only fail.
  if (s.extent == 0 && want.numel() > 0)
    bad(op, "E219", "axis " + std::to_string(s.axis) + " of " + x.str() + " is empty, so no index can be in range");
  return s;
}

bool is_scatter_op(const std::string& name) { return name == "tessera.scatter_add"; }

IndexSpec scatter_spec(const Op& op) {
  if (op.operands.size() != 2 || op.results.size() != 1)
    bad(op, "E205", "takes the gathered values and indices, one result");
  for (auto& [k, _] : op.attrs)
    if (k != "axis") bad(op, "E205", "unknown attribute '" + k + "'");
  const Type &g = op.operands[0]->type, &idx = op.operands[1]->type, &r = op.result()->type;
  if (!g.is_tensor() || !idx.is_tensor() || !r.is_tensor()) bad(op, "E207", "operands and result must be tensors");
  if (idx.dtype != DType::I32 && idx.dtype != DType::I64)
    bad(op, "E215", "indices must be i32 or i64, got " + idx.str() + " (insert a tessera.cast)");
  if (!is_float(g.dtype)) bad(op, "E215", "sums floats, got " + g.str());
  if (r.rank() == 0) bad(op, "E212", "writes a tensor of rank 1 or more, got " + r.str());
  const Attr* a = op.attr("axis");
  if (!a || !a->as_int()) bad(op, "E211", "needs an integer attribute 'axis'");
  IndexSpec s;
  s.axis = *a->as_int();
  if (s.axis < -r.rank() || s.axis >= r.rank())
    bad(op, "E203", "axis " + std::to_string(s.axis) + " is out of range for " + r.str());
  if (s.axis < 0) s.axis += r.rank();
  s.extent = r.shape[s.axis];
  const Type want = index_result_type(false, r, idx, s.axis, op.loc);
  if (!(g == want))
    bad(op, "E205",
        "the values are " + g.str() + " but a gather of " + r.str() + " by " + idx.str() + " along axis " +
            std::to_string(s.axis) + " is " + want.str());
  if (s.extent == 0 && idx.numel() > 0)
    bad(op, "E219", "axis " + std::to_string(s.axis) + " of " + r.str() + " is empty, so no index can be in range");
  return s;
}

}  // namespace tessera::ir
