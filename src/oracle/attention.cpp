// The oracle's tessera.attention: per (batch, head, query row), the literal
// formula of docs/semantics.md in double: the visible keys' scaled scores
// (plus the mask operand's bias, or -inf where a boolean mask is false),
// max-subtracted exponentials, their weighted sum of v rows divided by the
// row's sum, and the natural-log log-sum-exp. Read from the op's own
// attributes and operand shapes (nothing shared with graph_attention.cpp).
// Tolerances: attention_row_tolerance (tolerance.hpp).
#include <algorithm>
#include <cmath>
#include <limits>

#include "oracle/ops.hpp"
#include "oracle/tolerance.hpp"
#include "runtime/thread_pool.hpp"

namespace tessera::oracle::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Dims {
  int64_t b = 0, h = 0, hkv = 0, sq = 0, sk = 0, d = 0;
  bool causal = false;
  double scale = 1;
  // The mask operand's element strides over [B, H, Sq, Sk] (0 where it
  // broadcasts); empty without one.
  std::vector<int64_t> mask;
  int64_t mask_at(int64_t row, int64_t j) const {
    const int64_t bh = row / sq, i = row % sq;
    return bh / h * mask[0] + bh % h * mask[1] + i * mask[2] + j * mask[3];
  }
  // The keys query row i sees: [0, visible(i)).
  int64_t visible(int64_t i) const {
    if (!causal) return sk;
    return std::clamp<int64_t>(i + sk - sq + 1, 0, sk);
  }
  // Row `row` of the flattened [B, H, Sq]: its query index and the element
  // offset of its kv head's first key (grouped-query heads).
  struct Row {
    int64_t i, kvbase;
  };
  Row row_of(int64_t row) const {
    const int64_t bh = row / sq, b = bh / h, head = bh % h, group = hkv ? h / hkv : 1;
    return {row % sq, (b * hkv + head / group) * sk * d};
  }
};

// Right-aligned broadcast strides of `shape` over [B, H, Sq, Sk].
std::vector<int64_t> broadcast_strides(const ir::Op& op, const std::vector<int64_t>& shape, const Dims& d) {
  const std::vector<int64_t> full = {d.b, d.h, d.sq, d.sk};
  if (shape.size() > 4) bad_op(op, "the mask has rank 4 at most");
  std::vector<int64_t> st(4, 0);
  int64_t stride = 1;
  for (size_t r = 0; r < shape.size(); ++r) {
    const size_t a = shape.size() - 1 - r, f = 3 - r;
    if (shape[a] != 1 && shape[a] != full[f]) bad_op(op, "the mask does not broadcast to [batch, heads, sq, sk]");
    st[f] = shape[a] == 1 ? 0 : stride;
    stride *= shape[a];
  }
  return st;
}

Dims read_dims(const ir::Op& op, const std::vector<int64_t>& q, const std::vector<int64_t>& k,
               const std::vector<int64_t>& v) {
  only_attrs(op, {"causal", "scale"});
  if (q.size() != 4 || k.size() != 4 || k != v) bad_op(op, "q, k, v are rank 4 and k, v have one shape");
  Dims d;
  d.b = q[0], d.h = q[1], d.sq = q[2], d.d = q[3];
  d.hkv = k[1], d.sk = k[2];
  if (k[0] != d.b || k[3] != d.d || (d.hkv == 0 ? d.h != 0 : d.h % d.hkv != 0))
    bad_op(op, "k and v must match q's batch and head_dim, with heads a multiple of theirs");
  if (const ir::Attr* c = op.attr("causal")) {
    if (!c->as_bool()) bad_op(op, "'causal' must be a boolean");
    d.causal = *c->as_bool();
  }
  d.scale = float_attr(op, "scale", d.d > 0 ? 1.0 / std::sqrt(static_cast<double>(d.d)) : 1.0);
  if (op.results.empty() || op.results.size() > 2 || op.results[0]->type.shape != q)
    bad_op(op, "has the result o of q's shape (and optionally lse)");
  if (op.results.size() == 2 && op.results[1]->type.shape != std::vector<int64_t>{d.b, d.h, d.sq})
    bad_op(op, "lse is [batch, heads, sq]");
  return d;
}

bool row_needed(const std::vector<Need>& need, const Dims& d, int64_t row) {
  if (need[0] == kNothing && (need.size() < 2 || need[1] == kNothing)) return false;
  if (need[0] != kNothing)
    for (int64_t c = 0; c < d.d; ++c)
      if (needed(need[0], row * d.d + c)) return true;
  return need.size() == 2 && need[1] != kNothing && needed(need[1], row);
}

}  // namespace

bool is_attention(const ir::Op& op) { return op.name == "tessera.attention"; }

std::vector<Expected> evaluate_attention(const ir::Op& op, const std::vector<Source>& in,
                                         const std::vector<Need>& need) {
  if (in.size() != 3 && in.size() != 4) bad_op(op, "takes q, k, v and optionally a mask");
  Dims d = read_dims(op, in[0].shape(), in[1].shape(), in[2].shape());
  for (size_t i = 0; i < 3; ++i)
    if (in[i].dtype() != in[0].dtype() || in[i].dtype() != op.results[0]->type.dtype)
      bad_op(op, "q, k, v and o must have one dtype");
  const bool masked = in.size() == 4, bool_mask = masked && in[3].dtype() == DType::I1;
  if (masked) d.mask = broadcast_strides(op, in[3].shape(), d);
  std::vector<Expected> out;
  for (size_t r = 0; r < op.results.size(); ++r) out.push_back(result_like(op, r));
  const DType dt = in[0].dtype();
  const int64_t rows = d.b * d.h * d.sq;
  auto one_row = [&](int64_t row) {
    if (!row_needed(need, d, row)) return;
    const auto [i, kvbase] = d.row_of(row);
    const int64_t qbase = row * d.d, n = d.visible(i);
    // Scores and their carried bounds: |q||k| sums for the dot's rounding.
    std::vector<double> s(n), abs_dot(n), carried(n);
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0, a = 0, t = 0;
      for (int64_t c = 0; c < d.d; ++c) {
        const double x = in[0].at(qbase + c), tx = in[0].tol(qbase + c);
        const double y = in[1].at(kvbase + j * d.d + c), ty = in[1].tol(kvbase + j * d.d + c);
        acc += x * y;
        a += std::fabs(x * y);
        t += std::fabs(x) * ty + tx * std::fabs(y) + tx * ty;
      }
      s[j] = d.scale * acc;
      abs_dot[j] = std::fabs(d.scale) * a;
      carried[j] = std::fabs(d.scale) * t;
      if (!masked) continue;
      // A false mask entry hides the key (-inf); a bias is added to the
      // scaled score (its magnitude joins the rounding bound, its own
      // tolerance the carried error).
      const int64_t at = d.mask_at(row, j);
      if (bool_mask) {
        if (in[3].at(at) == 0) s[j] = -kInf;
      } else {
        s[j] += in[3].at(at);
        abs_dot[j] += std::fabs(in[3].at(at));
        carried[j] += in[3].tol(at);
      }
    }
    // m: the max, NaN-propagating; a NaN or +inf score makes the row NaN
    // (inf - inf), no score above -inf makes it empty (o = 0, lse = -inf).
    double m = -kInf;
    for (double x : s)
      if (std::isnan(x) || x > m) m = x;
    double* o = out[0].value.data() + qbase;
    double* ot = out[0].tolerance.data() + qbase;
    double lse = 0;
    if (std::isnan(m) || m == kInf) {
      std::fill(o, o + d.d, kNaN);
      lse = kNaN;
    } else if (m == -kInf) {
      lse = -kInf;  // o stays 0 (tolerance 0)
    } else {
      std::vector<double> p(n);
      double l = 0;
      for (int64_t j = 0; j < n; ++j) l += p[j] = std::exp(s[j] - m);
      // eta_j: relative error of the kernel's weight of key j; sigma: of the row's sum.
      std::vector<double> eta(n);
      double tm = 0;
      const double sigma = attention_weight_errors(s.data(), abs_dot.data(), carried.data(), p.data(), n, l, d.d, dt,
                                                   eta.data(), tm);
      for (int64_t c = 0; c < d.d; ++c) {
        double acc = 0, abs_sum = 0, weighted = 0, carried_v = 0;
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = kvbase + j * d.d + c;
          const double y = in[2].at(at);
          acc += p[j] * y;          // IEEE: a visible key's NaN or inf v reaches the row, even at weight 0
          if (p[j] == 0) continue;  // weighs nothing in the bounds
          abs_sum += p[j] * std::fabs(y);
          weighted += p[j] * std::fabs(y) * eta[j];
          carried_v += p[j] * in[2].tol(at);
        }
        o[c] = acc / l;
        ot[c] = attention_output_tolerance(weighted, abs_sum, carried_v, sigma, n, l, o[c], dt);
      }
      lse = m + std::log(l);
      if (out.size() == 2) out[1].tolerance[row] = attention_lse_tolerance(sigma, tm, lse, out[1].dtype);
    }
    if (out.size() == 2) out[1].value[row] = lse;
  };
  runtime::ThreadPool::global().parallel_for(rows, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) one_row(row);
  });
  return out;
}

void demand_attention(const ir::Op& op, const std::vector<const uint8_t*>& need,
                      std::vector<std::vector<uint8_t>>& in_need) {
  Dims d = read_dims(op, op.operands[0]->type.shape, op.operands[1]->type.shape, op.operands[2]->type.shape);
  const bool masked = op.operands.size() == 4;
  if (masked) d.mask = broadcast_strides(op, op.operands[3]->type.shape, d);
  std::vector<Need> wanted;
  for (const uint8_t* f : need) wanted.push_back(f ? f : kNothing);
  for (int64_t row = 0; row < d.b * d.h * d.sq; ++row) {
    if (!row_needed(wanted, d, row)) continue;
    const auto [i, kvbase] = d.row_of(row);
    std::fill_n(in_need[0].begin() + row * d.d, d.d, 1);
    const int64_t n = d.visible(i);
    std::fill_n(in_need[1].begin() + kvbase, n * d.d, 1);
    std::fill_n(in_need[2].begin() + kvbase, n * d.d, 1);
    if (masked)
      for (int64_t j = 0; j < n; ++j) in_need[3][d.mask_at(row, j)] = 1;
  }
}

}  // namespace tessera::oracle::detail
