// The oracle's row gradient ops (softmax_grad, log_softmax_grad,
// layer_norm_grad, rms_norm_grad): each row evaluated in double with the
// formulas of docs/semantics.md ("Gradients"), step by step with
// tolerances (steps.hpp); only the results round to their declared dtype.
#include <algorithm>
#include <cmath>

#include "oracle/ops.hpp"
#include "oracle/steps.hpp"

namespace tessera::oracle::detail {

namespace {

struct Layout {
  int64_t outer = 1, n = 0, inner = 1;
  int64_t at(int64_t o, int64_t i, int64_t j) const { return (o * n + j) * inner + i; }
};

Layout layout_of(const ir::Op& op, const std::vector<int64_t>& shape, bool norm) {
  const auto rank = static_cast<int64_t>(shape.size());
  if (rank == 0) bad_op(op, "needs an input of rank >= 1");
  int64_t axis = rank - 1;
  if (!norm) {
    only_attrs(op, {"axis"});
    if (const ir::Attr* a = op.attr("axis")) {
      if (!a->as_int()) bad_op(op, "'axis' must be an integer");
      axis = *a->as_int();
    } else {
      axis = -1;
    }
    if (axis < -rank || axis >= rank) bad_op(op, "axis out of range");
    if (axis < 0) axis += rank;
  }
  Layout l;
  l.n = shape[axis];
  for (int64_t d = 0; d < axis; ++d) l.outer *= shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) l.inner *= shape[d];
  return l;
}

void check_shapes(const ir::Op& op, const std::vector<Source>& in, bool norm) {
  const size_t operands = norm ? 3 : 2;
  const size_t results = op.name == "tessera.layer_norm_grad" ? 3 : norm ? 2 : 1;
  if (in.size() != operands || op.results.size() != results)
    bad_op(op, "takes " + std::to_string(operands) + " operands and has " + std::to_string(results) + " results");
  const Source& x = in[0];
  if (in.back().shape() != x.shape() || in.back().dtype() != x.dtype()) bad_op(op, "dy must have x's type");
  if (norm &&
      (x.shape().empty() || in[1].shape() != std::vector<int64_t>{x.shape().back()} || in[1].dtype() != x.dtype()))
    bad_op(op, "the weight must be the input's last dim, in its dtype");
}

Bound bound_of(const Source& s, int64_t i) { return {s.at(i), s.tol(i)}; }

bool any_needed(Need need, const Layout& l, int64_t o, int64_t i) {
  if (!need) return true;
  if (need == kNothing) return false;
  for (int64_t j = 0; j < l.n; ++j)
    if (need[l.at(o, i, j)]) return true;
  return false;
}

// softmax: dx = y (dy - sum(dy y)); log_softmax: dx = dy - exp(y) sum(dy).
std::vector<Expected> softmax_grad(const ir::Op& op, const std::vector<Source>& in, Need need) {
  const bool log = op.name == "tessera.log_softmax_grad";
  const Source &y = in[0], &g = in[1];
  const Layout l = layout_of(op, y.shape(), false);
  const DType dt = y.dtype();
  const Steps st{dt, default_accumulation(dt)};
  Expected e = result_like(op);
  std::vector<Bound> terms(l.n);
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t i = 0; i < l.inner; ++i) {
      if (!any_needed(need, l, o, i)) continue;
      for (int64_t j = 0; j < l.n; ++j) {
        const int64_t k = l.at(o, i, j);
        terms[j] = log ? bound_of(g, k) : st.mul(bound_of(g, k), bound_of(y, k));
      }
      const Bound s = st.total(terms, false, st.acc);
      for (int64_t j = 0; j < l.n; ++j) {
        const int64_t k = l.at(o, i, j);
        const Bound yj = bound_of(y, k), gj = bound_of(g, k);
        const Bound dx = log ? st.sub(gj, st.mul(st.un(Pointwise::Exp, yj, std::exp(yj.v)), s), dt)
                             : st.mul(yj, st.sub(gj, s), dt);
        e.value[k] = dx.v;
        e.tolerance[k] = dx.t;
      }
    }
  return {e};
}

// n = (x - mean) r, r = rsqrt(var + eps) (rms_norm: n = x r, var = mean(x^2));
// gw = dy w; dx = r ((gw - mean(gw)) - n mean(gw n)) (rms_norm: no mean(gw));
// dw = sum over rows of dy n, db = sum over rows of dy.
std::vector<Expected> norm_grad(const ir::Op& op, const std::vector<Source>& in, const std::vector<Need>& need) {
  const bool rms = op.name == "tessera.rms_norm_grad";
  only_attrs(op, {"eps"});
  const double eps = float_attr(op, "eps", rms ? 1e-6 : 1e-5);
  if (!(eps >= 0) || std::isinf(eps)) bad_op(op, "'eps' must be a finite number >= 0");
  const Source &x = in[0], &w = in[1], &g = in[2];
  const Layout l = layout_of(op, x.shape(), true);
  const DType dt = x.dtype();
  const Steps st{dt, default_accumulation(dt)};
  std::vector<Expected> out;
  for (size_t r = 0; r < op.results.size(); ++r) out.push_back(need[r] == kNothing ? Expected{} : result_like(op, r));
  const bool sums = need[1] != kNothing || (!rms && need[2] != kNothing);
  std::vector<std::vector<Bound>> dw(l.n), db(l.n);
  std::vector<Bound> xs(l.n), terms(l.n), ns(l.n), gws(l.n);
  for (int64_t o = 0; o < l.outer; ++o) {
    if (!sums && !any_needed(need[0], l, o, 0)) continue;
    for (int64_t j = 0; j < l.n; ++j) xs[j] = bound_of(x, l.at(o, 0, j));
    Bound mean{0, 0};
    if (!rms) mean = st.total(xs, true, st.acc);
    for (int64_t j = 0; j < l.n; ++j) {
      if (!rms) xs[j] = st.sub(xs[j], mean);
      terms[j] = st.mul(xs[j], xs[j]);
    }
    const Bound var = st.add(st.total(terms, true, st.acc), st.constant(eps));
    const Bound rs = st.un(Pointwise::Rsqrt, var, 1 / std::sqrt(var.v));
    for (int64_t j = 0; j < l.n; ++j) {
      const Bound gj = bound_of(g, l.at(o, 0, j));
      ns[j] = st.mul(xs[j], rs);
      gws[j] = st.mul(gj, bound_of(w, j));
      if (sums) {
        dw[j].push_back(st.mul(gj, ns[j]));
        if (!rms) db[j].push_back(gj);
      }
    }
    if (need[0] == kNothing || !any_needed(need[0], l, o, 0)) continue;
    for (int64_t j = 0; j < l.n; ++j) terms[j] = st.mul(gws[j], ns[j]);
    const Bound b = st.total(terms, true, st.acc);
    const Bound a = rms ? Bound{} : st.total(gws, true, st.acc);
    for (int64_t j = 0; j < l.n; ++j) {
      const Bound centered = rms ? gws[j] : st.sub(gws[j], a);
      const Bound dx = st.mul(rs, st.sub(centered, st.mul(ns[j], b)), dt);
      const int64_t k = l.at(o, 0, j);
      out[0].value[k] = dx.v;
      out[0].tolerance[k] = dx.t;
    }
  }
  for (size_t r = 1; r < out.size(); ++r) {
    if (need[r] == kNothing) continue;
    for (int64_t j = 0; j < l.n; ++j) {
      const Bound s = st.total(r == 1 ? dw[j] : db[j], false, dt);
      out[r].value[j] = s.v;
      out[r].tolerance[j] = s.t;
    }
  }
  return out;
}

}  // namespace

bool is_row_grad(const ir::Op& op) {
  return op.name == "tessera.softmax_grad" || op.name == "tessera.log_softmax_grad" ||
         op.name == "tessera.layer_norm_grad" || op.name == "tessera.rms_norm_grad";
}

std::vector<Expected> evaluate_row_grad(const ir::Op& op, const std::vector<Source>& in,
                                        const std::vector<Need>& need) {
  const bool norm = op.name == "tessera.layer_norm_grad" || op.name == "tessera.rms_norm_grad";
  check_shapes(op, in, norm);
  if (norm) return norm_grad(op, in, need);
  if (need[0] == kNothing) return {Expected{}};
  return softmax_grad(op, in, need[0]);
}

void demand_row_grad(const ir::Op& op, const std::vector<const uint8_t*>& need,
                     std::vector<std::vector<uint8_t>>& in_need) {
  const bool norm = op.name == "tessera.layer_norm_grad" || op.name == "tessera.rms_norm_grad";
  const Layout l = layout_of(op, op.operands[0]->type.shape, norm);
  auto mark_row = [&](size_t operand, int64_t o, int64_t i) {
    for (int64_t j = 0; j < l.n; ++j) in_need[operand][l.at(o, i, j)] = 1;
  };
  // dw and db sum over every row: they read all of x and dy.
  const bool sums = norm && std::any_of(need.begin() + 1, need.end(), [](const uint8_t* f) { return f != nullptr; });
  bool any = sums;
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t i = 0; i < l.inner; ++i) {
      if (!sums && !(need[0] && any_needed(need[0], l, o, i))) continue;
      any = true;
      mark_row(0, o, i);
      mark_row(in_need.size() - 1, o, i);
    }
  if (norm && any) std::fill(in_need[1].begin(), in_need[1].end(), uint8_t{1});
}

}  // namespace tessera::oracle::detail
