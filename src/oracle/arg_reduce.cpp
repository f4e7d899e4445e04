// The oracle's tessera.argmax / argmin: the position along `axis` of the
// largest (smallest) element, the first on ties, a NaN beating every number
// (the first NaN wins), read from the attributes here as docs/semantics.md
// states them. The tolerance of a position: 0 when the operand is exact (a
// func argument); for a computed operand, positions whose values are within
// the operand's tolerances of the winner's could win in a kernel's rounding,
// so the tolerance reaches the farthest of them.
#include <cmath>

#include "oracle/ops.hpp"

namespace tessera::oracle::detail {

namespace {

struct Axis {
  int64_t outer = 1, extent = 1, inner = 1;
};

Axis read_axis(const ir::Op& op, const std::vector<int64_t>& shape) {
  only_attrs(op, {"axis", "keepdims"});
  const ir::Attr* a = op.attr("axis");
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (!a || !a->as_int() || *a->as_int() < -rank || *a->as_int() >= rank) bad_op(op, "needs an axis of the operand");
  const int64_t axis = *a->as_int() < 0 ? *a->as_int() + rank : *a->as_int();
  Axis x;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? x.outer : d == axis ? x.extent : x.inner) *= shape[d];
  if (x.extent == 0) bad_op(op, "the axis is empty");
  return x;
}

}  // namespace

bool is_arg_reduce(const ir::Op& op) { return op.name == "tessera.argmax" || op.name == "tessera.argmin"; }

bool evaluate_arg_reduce(const ir::Op& op, const std::vector<Source>& in, Need need, Expected& out) {
  if (!is_arg_reduce(op)) return false;
  expect_arity(op, 1);
  const Source& x = in[0];
  const Axis a = read_axis(op, x.shape());
  const bool max = op.name == "tessera.argmax";
  out = result_like(op);
  if (out.value.size() != static_cast<size_t>(a.outer * a.inner)) bad_op(op, "the result has the wrong size");
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t i = 0; i < a.inner; ++i) {
      const int64_t r = o * a.inner + i;
      if (!needed(need, r)) continue;
      auto at = [&](int64_t k) { return (o * a.extent + k) * a.inner + i; };
      int64_t best = 0;
      for (int64_t k = 1; k < a.extent; ++k) {
        const double v = x.at(at(k)), b = x.at(at(best));
        if (std::isnan(b)) break;
        if (std::isnan(v) || (max ? v > b : v < b)) best = k;
      }
      double reach = 0;
      const double b = x.at(at(best)), tb = x.tol(at(best));
      for (int64_t k = 0; k < a.extent; ++k) {
        const double t = x.tol(at(k)) + tb;
        if (t > 0 && std::fabs(x.at(at(k)) - b) <= t) reach = std::max(reach, std::fabs(static_cast<double>(k - best)));
      }
      out.value[r] = static_cast<double>(best);
      out.tolerance[r] = reach;
    }
  return true;
}

bool demand_arg_reduce(const ir::Op& op, const std::vector<std::vector<int64_t>>& in_shapes, const uint8_t* need,
                       std::vector<std::vector<uint8_t>>& in_need) {
  if (!is_arg_reduce(op)) return false;
  if (in_shapes.size() != 1) bad_op(op, "takes one operand");
  const Axis a = read_axis(op, in_shapes[0]);
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t i = 0; i < a.inner; ++i)
      if (need[o * a.inner + i])
        for (int64_t k = 0; k < a.extent; ++k) in_need[0][(o * a.extent + k) * a.inner + i] = 1;
  return true;
}

}  // namespace tessera::oracle::detail
