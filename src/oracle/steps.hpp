// Internal to the oracle: a formula evaluated step by step in double, each
// step with its tolerance from the pointwise and reduction policy of
// tolerance.hpp, so the bound of a fused op is the bound its steps would have
// one by one (the gradient ops: row_grads.cpp, attention_grad.cpp).
// Intermediates round to the accumulation type (what one kernel keeps them
// in); a step `to` another dtype is a result.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "oracle/tolerance.hpp"

namespace tessera::oracle::detail {

// A value with its tolerance.
struct Bound {
  double v = 0, t = 0;
};

struct Steps {
  DType in, acc;
  Bound bin(Pointwise op, Bound a, Bound b, double v, DType out) const {
    return {v, binary_tolerance(op, a.v, a.t, b.v, b.t, v, in, out)};
  }
  Bound add(Bound a, Bound b, DType out) const { return bin(Pointwise::Add, a, b, a.v + b.v, out); }
  Bound add(Bound a, Bound b) const { return add(a, b, acc); }
  Bound sub(Bound a, Bound b, DType out) const { return bin(Pointwise::Sub, a, b, a.v - b.v, out); }
  Bound sub(Bound a, Bound b) const { return sub(a, b, acc); }
  Bound mul(Bound a, Bound b, DType out) const { return bin(Pointwise::Mul, a, b, a.v * b.v, out); }
  Bound mul(Bound a, Bound b) const { return mul(a, b, acc); }
  Bound un(Pointwise op, Bound x, double v) const { return {v, unary_tolerance(op, x.v, x.t, v, in, acc)}; }
  Bound constant(double v) const { return {v, constant_tolerance(v, acc)}; }
  // The sum (or mean) of n values; out: the result's dtype.
  Bound total(const std::vector<Bound>& xs, bool mean, DType out) const {
    double s = 0, abs_in = 0, carried = 0;
    for (const Bound& x : xs) {
      s += x.v;
      abs_in += std::fabs(x.v) + x.t;
      carried += x.t;
    }
    const auto n = static_cast<int64_t>(xs.size());
    if (!mean) return {s, sum_tolerance(n, abs_in, carried, s, in, out)};
    const double nd = n ? static_cast<double>(n) : 1.0;
    return {s / nd, mean_tolerance(n, abs_in, carried / nd, s / nd, in, out)};
  }
};

}  // namespace tessera::oracle::detail
