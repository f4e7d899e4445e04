// The oracle's tessera.attention_grad: dq, dk and dv of attention from q, k,
// v, o, do and lse, in double with the formulas of docs/semantics.md ("The
// attention gradient"), step by step with tolerances (steps.hpp), over the
// (row, key) pairs a row sees:
//   p = exp(scale q.k - lse), ds = p (do.v - do.o),
//   dq = scale sum_keys ds k, dk = scale sum_rows ds q, dv = sum_rows p do
// (a key's rows: every visible row of every query head of its group). Only
// the needed elements are evaluated: a dq row walks its keys, a dk or dv row
// its rows. Read from the op's own attributes and operand shapes.
#include <algorithm>
#include <cmath>

#include "oracle/ops.hpp"
#include "oracle/steps.hpp"
#include "runtime/thread_pool.hpp"

namespace tessera::oracle::detail {

namespace {

enum Operand { kQ, kK, kV, kO, kDo, kLse };

struct Dims {
  int64_t b = 0, h = 0, hkv = 0, sq = 0, sk = 0, d = 0;
  bool causal = false;
  double scale = 1;
  int64_t group() const { return hkv ? h / hkv : 1; }
  int64_t visible(int64_t i) const { return causal ? std::clamp<int64_t>(i + sk - sq + 1, 0, sk) : sk; }
  // The first row that sees key j (rows see a growing prefix of the keys).
  int64_t first_row(int64_t j) const { return causal ? std::max<int64_t>(0, j + sq - sk) : 0; }
  int64_t kv_plane(int64_t qp) const { return qp / h * hkv + qp % h / group(); }
  int64_t first_query_plane(int64_t kvp) const { return kvp / hkv * h + kvp % hkv * group(); }
};

Dims read_dims(const ir::Op& op, const std::vector<std::vector<int64_t>>& s) {
  only_attrs(op, {"causal", "scale"});
  if (s.size() != 6 || op.results.size() != 3) bad_op(op, "takes q, k, v, o, do and lse and has dq, dk and dv");
  const auto &q = s[kQ], &k = s[kK];
  if (q.size() != 4 || k.size() != 4 || s[kV] != k || s[kO] != q || s[kDo] != q)
    bad_op(op, "q, o and do share a rank-4 shape, and k and v another");
  Dims d;
  d.b = q[0], d.h = q[1], d.sq = q[2], d.d = q[3];
  d.hkv = k[1], d.sk = k[2];
  if (k[0] != d.b || k[3] != d.d || (d.hkv == 0 ? d.h != 0 : d.h % d.hkv != 0))
    bad_op(op, "k and v must match q's batch and head_dim, with heads a multiple of theirs");
  if (s[kLse] != std::vector<int64_t>{d.b, d.h, d.sq}) bad_op(op, "lse is [batch, heads, sq]");
  if (const ir::Attr* c = op.attr("causal")) {
    if (!c->as_bool()) bad_op(op, "'causal' must be a boolean");
    d.causal = *c->as_bool();
  }
  d.scale = float_attr(op, "scale", d.d > 0 ? 1.0 / std::sqrt(static_cast<double>(d.d)) : 1.0);
  if (op.results[0]->type.shape != q || op.results[1]->type.shape != k || op.results[2]->type.shape != k)
    bad_op(op, "dq has q's shape, dk and dv k's");
  return d;
}

// What the needed results read: rows of q, o, do, lse and keys of k, v.
struct Reads {
  std::vector<uint8_t> dq_rows, key_rows;  // results: dq rows; dk or dv rows
  std::vector<uint8_t> rows, keys;         // inputs: query rows, key rows
};

bool any_of_row(Need need, int64_t row, int64_t d) {
  if (need == kNothing) return false;
  for (int64_t c = 0; c < d; ++c)
    if (needed(need, row * d + c)) return true;
  return false;
}

Reads reads_of(const Dims& d, const std::vector<Need>& need) {
  Reads r;
  r.dq_rows.assign(d.b * d.h * d.sq, 0);
  r.key_rows.assign(d.b * d.hkv * d.sk, 0);
  r.rows.assign(r.dq_rows.size(), 0);
  r.keys.assign(r.key_rows.size(), 0);
  for (int64_t row = 0; row < d.b * d.h * d.sq; ++row) {
    if (!any_of_row(need[0], row, d.d)) continue;
    r.dq_rows[row] = r.rows[row] = 1;
    const int64_t kvp = d.kv_plane(row / d.sq);
    std::fill_n(r.keys.begin() + kvp * d.sk, d.visible(row % d.sq), 1);
  }
  for (int64_t key = 0; key < d.b * d.hkv * d.sk; ++key) {
    if (!any_of_row(need[1], key, d.d) && !any_of_row(need[2], key, d.d)) continue;
    r.key_rows[key] = r.keys[key] = 1;
    const int64_t kvp = key / d.sk, qp0 = d.first_query_plane(kvp);
    for (int64_t qp = qp0; qp < qp0 + d.group(); ++qp)
      std::fill(r.rows.begin() + qp * d.sq + d.first_row(key % d.sk), r.rows.begin() + (qp + 1) * d.sq, 1);
  }
  return r;
}

class Evaluator {
 public:
  Evaluator(const Dims& d, const std::vector<Source>& in)
      : d_(d), in_(in), st_{in[kQ].dtype(), default_accumulation(in[kQ].dtype())}, scale_(st_.constant(d.scale)) {}

  // delta = do.o of each row that is read.
  void deltas(const std::vector<uint8_t>& rows) {
    delta_.assign(rows.size(), Bound{});
    runtime::ThreadPool::global().parallel_for(static_cast<int64_t>(rows.size()), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row)
        if (rows[row]) delta_[row] = dot(kDo, row, kO, row);
    });
  }

  // p and ds of query row `row` (flattened [B, H, Sq]) and key `key`
  // (flattened [B, Hkv, Sk]), as the products that follow take them: with
  // 16-bit inputs rounded to the input type (tensor cores multiply them so).
  std::pair<Bound, Bound> pair(int64_t row, int64_t key) const {
    const Bound s = st_.mul(dot(kQ, row, kK, key), scale_);
    const Bound x = st_.sub(s, at(kLse, row));
    const Bound p = st_.un(Pointwise::Exp, x, std::exp(x.v));
    const Bound ds = st_.mul(p, st_.sub(dot(kDo, row, kV, key), delta_[row]));
    return {operand(p), operand(ds)};
  }

  // dq of one row: scale sum over its visible keys of ds k.
  void dq(int64_t row, Expected& out) const {
    const int64_t kv0 = d_.kv_plane(row / d_.sq) * d_.sk, n = d_.visible(row % d_.sq);
    std::vector<Bound> ds(n), terms(n);
    for (int64_t j = 0; j < n; ++j) ds[j] = pair(row, kv0 + j).second;
    for (int64_t c = 0; c < d_.d; ++c) {
      for (int64_t j = 0; j < n; ++j) terms[j] = st_.mul(ds[j], at(kK, (kv0 + j) * d_.d + c));
      put(out, row * d_.d + c, st_.mul(st_.total(terms, false, st_.acc), scale_, out.dtype));
    }
  }

  // dk and dv of one key: over every row of its group's query heads that sees it.
  void dkv(int64_t key, Expected* dk, Expected* dv) const {
    const int64_t kvp = key / d_.sk, qp0 = d_.first_query_plane(kvp), i0 = d_.first_row(key % d_.sk);
    std::vector<int64_t> rows;
    for (int64_t qp = qp0; qp < qp0 + d_.group(); ++qp)
      for (int64_t i = i0; i < d_.sq; ++i) rows.push_back(qp * d_.sq + i);
    std::vector<Bound> p(rows.size()), ds(rows.size()), terms(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) std::tie(p[r], ds[r]) = pair(rows[r], key);
    for (int64_t c = 0; c < d_.d; ++c) {
      if (dk) {
        for (size_t r = 0; r < rows.size(); ++r) terms[r] = st_.mul(ds[r], at(kQ, rows[r] * d_.d + c));
        put(*dk, key * d_.d + c, st_.mul(st_.total(terms, false, st_.acc), scale_, dk->dtype));
      }
      if (dv) {
        for (size_t r = 0; r < rows.size(); ++r) terms[r] = st_.mul(p[r], at(kDo, rows[r] * d_.d + c));
        put(*dv, key * d_.d + c, st_.total(terms, false, dv->dtype));
      }
    }
  }

 private:
  Bound at(int operand, int64_t i) const { return {in_[operand].at(i), in_[operand].tol(i)}; }
  Bound operand(Bound b) const {
    return dtype_size(st_.in) == 2 ? Bound{b.v, b.t + rounding_error(std::fabs(b.v) + b.t, st_.in)} : b;
  }
  // Row a of operand x dotted with row b of operand y (head_dim long).
  Bound dot(int x, int64_t a, int y, int64_t b) const {
    std::vector<Bound> terms(d_.d);
    for (int64_t c = 0; c < d_.d; ++c) terms[c] = st_.mul(at(x, a * d_.d + c), at(y, b * d_.d + c));
    return st_.total(terms, false, st_.acc);
  }
  static void put(Expected& e, int64_t i, Bound b) {
    e.value[i] = b.v;
    e.tolerance[i] = b.t;
  }

  const Dims& d_;
  const std::vector<Source>& in_;
  Steps st_;
  Bound scale_;
  std::vector<Bound> delta_;
};

std::vector<std::vector<int64_t>> shapes_of(const ir::Op& op) {
  std::vector<std::vector<int64_t>> s;
  for (const ir::Value* v : op.operands) s.push_back(v->type.shape);
  return s;
}

}  // namespace

bool is_attention_grad(const ir::Op& op) { return op.name == "tessera.attention_grad"; }

std::vector<Expected> evaluate_attention_grad(const ir::Op& op, const std::vector<Source>& in,
                                              const std::vector<Need>& need) {
  std::vector<std::vector<int64_t>> shapes;
  for (const Source& s : in) shapes.push_back(s.shape());
  const Dims d = read_dims(op, shapes);
  for (int i = 0; i < 5; ++i)
    if (in[i].dtype() != in[kQ].dtype()) bad_op(op, "q, k, v, o and do must have one dtype");
  std::vector<Expected> out;
  for (size_t r = 0; r < 3; ++r) out.push_back(need[r] == kNothing ? Expected{} : result_like(op, r));
  const Reads reads = reads_of(d, need);
  Evaluator e(d, in);
  e.deltas(reads.rows);
  auto& pool = runtime::ThreadPool::global();
  if (need[0] != kNothing)
    pool.parallel_for(d.b * d.h * d.sq, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row)
        if (reads.dq_rows[row]) e.dq(row, out[0]);
    });
  Expected* dk = need[1] == kNothing ? nullptr : &out[1];
  Expected* dv = need[2] == kNothing ? nullptr : &out[2];
  if (dk || dv)
    pool.parallel_for(d.b * d.hkv * d.sk, [&](int64_t begin, int64_t end) {
      for (int64_t key = begin; key < end; ++key)
        if (reads.key_rows[key]) e.dkv(key, dk, dv);
    });
  return out;
}

void demand_attention_grad(const ir::Op& op, const std::vector<const uint8_t*>& need,
                           std::vector<std::vector<uint8_t>>& in_need) {
  const Dims d = read_dims(op, shapes_of(op));
  std::vector<Need> wanted;
  for (const uint8_t* f : need) wanted.push_back(f ? f : kNothing);
  const Reads r = reads_of(d, wanted);
  for (int64_t row = 0; row < static_cast<int64_t>(r.rows.size()); ++row) {
    if (!r.rows[row]) continue;
    for (int x : {kQ, kO, kDo}) std::fill_n(in_need[x].begin() + row * d.d, d.d, 1);
    in_need[kLse][row] = 1;
  }
  for (int64_t key = 0; key < static_cast<int64_t>(r.keys.size()); ++key)
    if (r.keys[key])
      for (int x : {kK, kV}) std::fill_n(in_need[x].begin() + key * d.d, d.d, 1);
}

}  // namespace tessera::oracle::detail
