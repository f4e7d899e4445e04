// The oracle's tessera.gather (numpy take) and tessera.take_along (numpy
// take_along_axis), from numpy's definitions with the oracle's own index
// arithmetic: an index outside [-n, n) is an error (E615), as numpy raises;
// and tessera.scatter_add (numpy's np.add.at into zeros), each element a sum
// with the reduction policy's tolerance.
#include <cmath>

#include "oracle/tolerance.hpp"

#include "oracle/ops.hpp"

namespace tessera::oracle::detail {

namespace {

struct IndexOp {
  bool along = false;
  int64_t axis = 0, n = 0;
  std::vector<int64_t> x, idx, out;

  explicit IndexOp(const ir::Op& op) {
    only_attrs(op, {"axis"});
    if (op.operands.size() != 2 || op.results.size() != 1) bad_op(op, "takes an operand and indices");
    along = op.name == "tessera.take_along";
    x = op.operands[0]->type.shape;
    idx = op.operands[1]->type.shape;
    out = op.results[0]->type.shape;
    const int64_t rank = static_cast<int64_t>(x.size());
    const double a = float_attr(op, "axis", std::nan(""));
    if (!(a >= -rank && a < rank) || a != std::trunc(a)) bad_op(op, "needs an integer 'axis' within the rank");
    axis = static_cast<int64_t>(a) + (a < 0 ? rank : 0);
    n = x[axis];
    const size_t want = along ? x.size() : x.size() - 1 + idx.size();
    if (out.size() != want || (along && idx.size() != x.size())) bad_op(op, "has a result of the wrong rank");
  }

  // Result element `flat`: the flat index into the indices, and x's flat index
  // with the coordinate along the axis left 0 (its stride is `axis_stride`).
  void locate(int64_t flat, int64_t& at_idx, int64_t& at_x) const {
    std::vector<int64_t> c(out.size());
    for (size_t d = out.size(); d-- > 0;) {
      c[d] = flat % out[d];
      flat /= out[d];
    }
    const size_t q = idx.size();
    at_idx = 0;
    for (size_t d = 0; d < q; ++d) {
      const size_t od = along ? d : static_cast<size_t>(axis) + d;
      at_idx = at_idx * idx[d] + (idx[d] == 1 ? 0 : c[od]);
    }
    at_x = 0;
    for (size_t d = 0; d < x.size(); ++d) {
      int64_t cd = 0;
      if (static_cast<int64_t>(d) != axis && x[d] != 1) cd = c[along || static_cast<int64_t>(d) < axis ? d : d + q - 1];
      at_x = at_x * x[d] + cd;
    }
  }

  int64_t axis_stride() const {
    int64_t s = 1;
    for (size_t d = static_cast<size_t>(axis) + 1; d < x.size(); ++d) s *= x[d];
    return s;
  }
};

// Index i of an axis of n, wrapped; E615 outside [-n, n).
int64_t wrapped(const ir::Op& op, double i, int64_t n) {
  if (!(i >= static_cast<double>(-n) && i < static_cast<double>(n)))
    fail("E615",
         "oracle: " + op.name + " index " + std::to_string(static_cast<int64_t>(i)) + " is outside [-" +
             std::to_string(n) + ", " + std::to_string(n) + ")",
         op.loc);
  return static_cast<int64_t>(i) + (i < 0 ? n : 0);
}

// scatter_add: the result as [pre, n, post], the values as [pre, count, post].
void evaluate_scatter(const ir::Op& op, const std::vector<Source>& in, Expected& e) {
  only_attrs(op, {"axis"});
  if (in.size() != 2 || op.results.size() != 1) bad_op(op, "takes the values and indices, one result");
  const std::vector<int64_t>& r = op.results[0]->type.shape;
  const int64_t rank = static_cast<int64_t>(r.size());
  const double a = float_attr(op, "axis", std::nan(""));
  if (!(a >= -rank && a < rank) || a != std::trunc(a)) bad_op(op, "needs an integer 'axis' within the rank");
  const int64_t axis = static_cast<int64_t>(a) + (a < 0 ? rank : 0);
  int64_t pre = 1, post = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) pre *= r[d];
    if (d > axis) post *= r[d];
  }
  const int64_t n = r[axis], count = product(in[1].shape());
  if (product(in[0].shape()) != pre * count * post || in[0].dtype() != op.results[0]->type.dtype)
    bad_op(op, "the values must have the shape and dtype of a gather of the result by the indices");
  if (in[1].dtype() != DType::I32 && in[1].dtype() != DType::I64) bad_op(op, "indices must be i32 or i64");
  e = result_like(op);
  const auto size = static_cast<size_t>(pre * n * post);
  std::vector<double> abs_in(size, 0.0), carried(size, 0.0);
  std::vector<int64_t> terms(size, 0);
  for (int64_t c = 0; c < count; ++c) {
    const int64_t j = wrapped(op, in[1].at(c), n);
    for (int64_t o = 0; o < pre; ++o)
      for (int64_t t = 0; t < post; ++t) {
        const int64_t at = (o * n + j) * post + t, from = (o * count + c) * post + t;
        const double v = in[0].at(from), tol = in[0].tol(from);
        e.value[at] += v;
        abs_in[at] += std::fabs(v) + tol;
        carried[at] += tol;
        ++terms[at];
      }
  }
  for (size_t k = 0; k < size; ++k)
    e.tolerance[k] = sum_tolerance(terms[k], abs_in[k], carried[k], e.value[k], in[0].dtype(), e.dtype);
}

}  // namespace

bool is_index(const ir::Op& op) {
  return op.name == "tessera.gather" || op.name == "tessera.take_along" || op.name == "tessera.scatter_add";
}

bool evaluate_index(const ir::Op& op, const std::vector<Source>& in, Need need, Expected& e) {
  if (!is_index(op)) return false;
  if (op.name == "tessera.scatter_add") {  // every element may take any value: all of them
    evaluate_scatter(op, in, e);
    return true;
  }
  const IndexOp ix(op);
  if (in.size() != 2 || in[0].dtype() != op.results[0]->type.dtype) bad_op(op, "the result has the operand's dtype");
  if (in[1].dtype() != DType::I32 && in[1].dtype() != DType::I64) bad_op(op, "indices must be i32 or i64");
  e = result_like(op);
  const int64_t stride = ix.axis_stride();
  for (int64_t k = 0; k < static_cast<int64_t>(e.value.size()); ++k) {
    if (!needed(need, k)) continue;
    int64_t at_idx = 0, at_x = 0;
    ix.locate(k, at_idx, at_x);
    const int64_t j = wrapped(op, in[1].at(at_idx), ix.n);
    e.value[k] = in[0].at(at_x + j * stride);
    e.tolerance[k] = in[0].tol(at_x + j * stride);
  }
  return true;
}

bool demand_index(const ir::Op& op, const uint8_t* need, std::vector<std::vector<uint8_t>>& in_need) {
  if (!is_index(op)) return false;
  if (op.name == "tessera.scatter_add") {  // any element of the values may land anywhere
    for (auto& flags : in_need) flags.assign(flags.size(), 1);
    return true;
  }
  const IndexOp ix(op);
  bool any = false;
  const int64_t n = product(ix.out);
  for (int64_t k = 0; k < n; ++k)
    if (need[k]) {
      int64_t at_idx = 0, at_x = 0;
      ix.locate(k, at_idx, at_x);
      in_need[1][at_idx] = 1;
      any = true;
    }
  // Where the indices point is known only once they are evaluated: every element of x.
  if (any) in_need[0].assign(in_need[0].size(), 1);
  return true;
}

}  // namespace tessera::oracle::detail
