// The oracle's row ops: softmax and log_softmax along one axis, layer_norm and
// rms_norm along the last axis. Each row is gathered into doubles, evaluated
// with the literal formulas of docs/semantics.md (two passes, in double), and
// given per-element tolerances by tolerance.cpp.
#include <algorithm>
#include <cmath>
#include <limits>

#include "oracle/ops.hpp"
#include "oracle/tolerance.hpp"

namespace tessera::oracle::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void check_same_type(const ir::Op& op, const Source& x) {
  const ir::Type& r = op.results[0]->type;
  if (r.shape != x.shape() || r.dtype != x.dtype())
    bad_op(op, "result is declared " + r.str() + " but the input is " + type_string(x.shape(), x.dtype()));
}

double read_eps(const ir::Op& op, double fallback) {
  const double eps = float_attr(op, "eps", fallback);
  if (!(eps >= 0) || std::isinf(eps)) bad_op(op, "'eps' must be a finite number >= 0");
  return eps;
}

// softmax (log = false) or log_softmax of one row, in place: m = max
// (NaN-propagating), e = exp(x - m), s = sum e; y = e/s or x - m - log(s).
void softmax_values(bool log, const std::vector<double>& x, std::vector<double>& y) {
  double m = -kInf, s = 0;
  for (double v : x)
    if (std::isnan(v) || v > m) m = v;
  for (double v : x) s += std::exp(v - m);
  for (size_t j = 0; j < x.size(); ++j) y[j] = log ? x[j] - m - std::log(s) : std::exp(x[j] - m) / s;
}

// The rows a row op works on: row r = (o, i) has n elements `inner` apart,
// element j at (o*n + j)*inner + i.
struct Rows {
  int64_t outer = 1, n = 0, inner = 1;
  int64_t base(int64_t o, int64_t i) const { return o * n * inner + i; }
  bool any_needed(Need need, int64_t base) const {
    for (int64_t j = 0; j < n; ++j)
      if (needed(need, base + j * inner)) return true;
    return false;
  }
};

Rows softmax_rows(const ir::Op& op, const std::vector<int64_t>& shape) {
  only_attrs(op, {"axis"});
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0) bad_op(op, "needs an input of rank >= 1");
  int64_t axis = -1;
  if (const ir::Attr* a = op.attr("axis")) {
    if (!a->as_int()) bad_op(op, "'axis' must be an integer");
    axis = *a->as_int();
  }
  if (axis < -rank || axis >= rank)
    bad_op(op, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  Rows r;
  r.n = shape[axis];
  for (int64_t d = 0; d < axis; ++d) r.outer *= shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) r.inner *= shape[d];
  return r;
}

// Norms work on the last axis.
Rows norm_rows(const std::vector<int64_t>& shape) {
  Rows r;
  r.n = shape.back();
  r.outer = r.n == 0 ? 0 : product(shape) / r.n;
  return r;
}

void eval_softmax(const ir::Op& op, bool log, const Source& x, Need need, Expected& e) {
  const Rows rows = softmax_rows(op, x.shape());
  check_same_type(op, x);
  e = result_like(op);
  const int64_t n = rows.n, inner = rows.inner;
  std::vector<double> xs(n), ts(n), ys(n), tol(n);
  for (int64_t o = 0; o < rows.outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = rows.base(o, i);
      if (need && !rows.any_needed(need, base)) continue;
      for (int64_t j = 0; j < n; ++j) {
        xs[j] = x.at(base + j * inner);
        ts[j] = x.tol(base + j * inner);
      }
      softmax_values(log, xs, ys);
      softmax_row_tolerance(log, xs.data(), ts.data(), ys.data(), n, x.dtype(), e.dtype, tol.data());
      for (int64_t j = 0; j < n; ++j) {
        e.value[base + j * inner] = ys[j];
        e.tolerance[base + j * inner] = tol[j];
      }
    }
}

// layer_norm (rms = false): y = (x - mu)/sqrt(var + eps)*w + b with the biased
// two-pass variance; rms_norm: y = x/sqrt(mean(x^2) + eps)*w. Last axis.
void eval_norm(const ir::Op& op, bool rms, const std::vector<Source>& in, Need need, Expected& e) {
  only_attrs(op, {"eps"});
  const double eps = read_eps(op, rms ? 1e-6 : 1e-5);
  const Source& x = in[0];
  const std::vector<int64_t>& shape = x.shape();
  if (shape.empty()) bad_op(op, "needs an input of rank >= 1");
  const int64_t n = shape.back();
  for (size_t k = 1; k < in.size(); ++k)
    if (in[k].shape() != std::vector<int64_t>{n} || in[k].dtype() != x.dtype())
      bad_op(op, std::string(k == 1 ? "the weight" : "the bias") + " is " + type_string(in[k].shape(), in[k].dtype()) +
                     " but must be " + type_string({n}, x.dtype()) + " (the last dim and dtype of the input)");
  check_same_type(op, x);
  e = result_like(op);

  std::vector<double> w(n), tw(n), b(n, 0.0), tb(n, 0.0);
  for (int64_t j = 0; j < n; ++j) {
    w[j] = in[1].at(j);
    tw[j] = in[1].tol(j);
    if (!rms) {
      b[j] = in[2].at(j);
      tb[j] = in[2].tol(j);
    }
  }
  const Rows rows = norm_rows(shape);
  std::vector<double> xs(n), ts(n), ys(n), tol(n);
  for (int64_t r = 0; r < rows.outer; ++r) {
    const int64_t base = rows.base(r, 0);
    if (need && !rows.any_needed(need, base)) continue;
    for (int64_t j = 0; j < n; ++j) {
      xs[j] = x.at(base + j);
      ts[j] = x.tol(base + j);
    }
    double mu = 0, var = 0;
    if (!rms) {
      for (double v : xs) mu += v;
      mu /= static_cast<double>(n);
    }
    for (double v : xs) var += (v - mu) * (v - mu);
    var /= static_cast<double>(n);
    const double denom = std::sqrt(var + eps);
    for (int64_t j = 0; j < n; ++j) ys[j] = (xs[j] - mu) / denom * w[j] + b[j];
    norm_row_tolerance(rms, xs.data(), ts.data(), w.data(), tw.data(), rms ? nullptr : tb.data(), n, eps, ys.data(),
                       x.dtype(), e.dtype, tol.data());
    for (int64_t j = 0; j < n; ++j) {
      e.value[base + j] = ys[j];
      e.tolerance[base + j] = tol[j];
    }
  }
}

}  // namespace

bool evaluate_row_op(const ir::Op& op, const std::vector<Source>& in, Need need, Expected& out) {
  if (op.name == "tessera.softmax" || op.name == "tessera.log_softmax") {
    expect_arity(op, 1);
    eval_softmax(op, op.name == "tessera.log_softmax", in[0], need, out);
    return true;
  }
  if (op.name == "tessera.layer_norm" || op.name == "tessera.rms_norm") {
    const bool rms = op.name == "tessera.rms_norm";
    expect_arity(op, rms ? 2 : 3);
    eval_norm(op, rms, in, need, out);
    return true;
  }
  return false;
}

bool demand_row_op(const ir::Op& op, const std::vector<std::vector<int64_t>>& in_shapes, const uint8_t* need,
                   std::vector<std::vector<uint8_t>>& in_need) {
  const bool softmax = op.name == "tessera.softmax" || op.name == "tessera.log_softmax";
  if (!softmax && op.name != "tessera.layer_norm" && op.name != "tessera.rms_norm") return false;
  expect_arity(op, op.name == "tessera.layer_norm" ? 3 : softmax ? 1 : 2);
  const std::vector<int64_t>& shape = in_shapes[0];
  if (shape != op.results[0]->type.shape) bad_op(op, "the result's shape is not the input's");
  if (shape.empty()) bad_op(op, "needs an input of rank >= 1");
  const Rows rows = softmax ? softmax_rows(op, shape) : norm_rows(shape);
  bool any = false;
  for (int64_t o = 0; o < rows.outer; ++o)
    for (int64_t i = 0; i < rows.inner; ++i) {
      const int64_t base = rows.base(o, i);
      if (!rows.any_needed(need, base)) continue;
      any = true;
      for (int64_t j = 0; j < rows.n; ++j) in_need[0][base + j * rows.inner] = 1;
    }
  for (size_t k = 1; k < in_need.size(); ++k)  // weight and bias: read whole by every row
    if (any) std::fill(in_need[k].begin(), in_need[k].end(), uint8_t{1});
  return true;
}

}  // namespace tessera::oracle::detail
