// The oracle's tessera.matmul: C = op(A) x op(B) over batches, in double, read
// from the op's own attributes and operand shapes (nothing shared with
// graph_matmul.cpp). Tolerances: matmul_tolerance (tolerance.hpp).
#include <algorithm>
#include <cmath>

#include "oracle/ops.hpp"
#include "oracle/tolerance.hpp"
#include "runtime/thread_pool.hpp"

namespace tessera::oracle::detail {

namespace {

bool bool_attr(const ir::Op& op, const char* key) {
  const ir::Attr* a = op.attr(key);
  if (!a) return false;
  if (!a->as_bool()) bad_op(op, std::string("'") + key + "' must be a boolean");
  return *a->as_bool();
}

// Element offset of matrix `b` of an operand whose batch dims are `batch` (or
// absent): every batch reads matrix b, or matrix 0 when there is only one.
int64_t matrix_offset(const std::vector<int64_t>& shape, int64_t b) {
  int64_t matrices = 1;
  for (size_t d = 0; d + 2 < shape.size(); ++d) matrices *= shape[d];
  const int64_t size = shape[shape.size() - 1] * shape[shape.size() - 2];
  return (matrices == 1 ? 0 : b) * size;
}

}  // namespace

namespace {

struct Dims {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0, batches = 0;
};

// Reads and checks the op's attributes and shapes; the result must be declared.
Dims read_dims(const ir::Op& op, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb) {
  only_attrs(op, {"transpose_a", "transpose_b"});
  Dims d;
  d.ta = bool_attr(op, "transpose_a");
  d.tb = bool_attr(op, "transpose_b");
  if (sa.size() < 2 || sb.size() < 2) bad_op(op, "operands need rank >= 2");
  const size_t ra = sa.size(), rb = sb.size();
  d.m = sa[ra - (d.ta ? 1 : 2)];
  d.k = sa[ra - (d.ta ? 2 : 1)];
  const int64_t kb = sb[rb - (d.tb ? 1 : 2)];
  d.n = sb[rb - (d.tb ? 2 : 1)];
  if (d.k != kb) bad_op(op, "contraction sizes differ");
  const std::vector<int64_t>& sc = op.results[0]->type.shape;
  if (sc.size() < 2 || sc[sc.size() - 2] != d.m || sc[sc.size() - 1] != d.n) bad_op(op, "result shape does not match");
  d.batches = product(sc) / std::max<int64_t>(d.m * d.n, 1);
  for (const auto* s : {&sa, &sb}) {
    int64_t mats = 1;
    for (size_t i = 0; i + 2 < s->size(); ++i) mats *= (*s)[i];
    if (mats != 1 && d.m * d.n > 0 && mats != d.batches) bad_op(op, "an operand's batch is neither 1 nor the result's");
  }
  return d;
}

// The columns of B that matrix b's needed elements read, in order (all of
// them when everything is needed).
std::vector<int64_t> needed_columns(Need need, const Dims& d, int64_t b) {
  std::vector<uint8_t> used(static_cast<size_t>(d.n), need ? 0 : 1);
  for (int64_t i = 0; need && i < d.m; ++i)
    for (int64_t j = 0; j < d.n; ++j)
      if (need[(b * d.m + i) * d.n + j]) used[j] = 1;
  std::vector<int64_t> cols;
  for (int64_t j = 0; j < d.n; ++j)
    if (used[j]) cols.push_back(j);
  return cols;
}

// Columns `cols` of matrix b of B as rows of kk (k x cols.size()): their
// values, |value| and |value| + tolerance, in double. A sampled check reads a
// few columns: only those are gathered.
struct RowsOfB {
  Doubles value, abs, wide;
};

RowsOfB gather_b(const Source& b, const Dims& d, int64_t offset, const std::vector<int64_t>& cols) {
  RowsOfB r;
  const size_t width = cols.size(), size = static_cast<size_t>(d.k) * width;
  r.value.resize(size);
  r.abs.resize(size);
  r.wide.resize(size);
  for (int64_t kk = 0; kk < d.k; ++kk)
    for (size_t c = 0; c < width; ++c) {
      const int64_t j = cols[c], at = offset + (d.tb ? j * d.k + kk : kk * d.n + j);
      const size_t here = static_cast<size_t>(kk) * width + c;
      const double y = b.at(at);
      r.value[here] = y;
      r.abs[here] = std::fabs(y);
      r.wide[here] = std::fabs(y) + b.tol(at);
    }
  return r;
}

// value += x*bv, abs_dot += wx*bw, plain += ax*ba over n contiguous columns:
// the oracle's inner loop, written so that the compiler vectorizes it, in a
// version for each vector width (the CPU picks one when the program loads).
// Each column still sums in kk order; fused multiply-adds, where a version
// has them, round differently within the u_ref the tolerances allow.
__attribute__((target_clones("avx512f", "avx2", "default"))) void accumulate_row(
    int64_t n, double x, double wx, double ax, const double* __restrict bv, const double* __restrict bw,
    const double* __restrict ba, double* __restrict value, double* __restrict abs_dot, double* __restrict plain) {
  for (int64_t j = 0; j < n; ++j) {
    value[j] += x * bv[j];
    abs_dot[j] += wx * bw[j];
    plain[j] += ax * ba[j];
  }
}

}  // namespace

bool evaluate_matmul(const ir::Op& op, const std::vector<Source>& in, Need need, Expected& out) {
  if (op.name != "tessera.matmul") return false;
  expect_arity(op, 2);
  const Dims d = read_dims(op, in[0].shape(), in[1].shape());
  out = result_like(op);
  const std::vector<int64_t>&sa = in[0].shape(), &sb = in[1].shape();
  const int64_t m = d.m, n = d.n, k = d.k;
  const DType dt = in[0].dtype();
  // Per element the policy's value, S = sum (|a|+ta)(|b|+tb) and the carried
  // error C = S - sum |a||b|. Row i of C accumulates over kk with j innermost
  // on B's rows gathered once into doubles; rows are independent, so threads
  // take rows (each element's sum stays in one order).
  const bool shared_b = matrix_offset(sb, 1) == 0;
  RowsOfB rows_b;
  std::vector<int64_t> cols_b;  // the columns rows_b holds
  for (int64_t b = 0; b < d.batches; ++b) {
    std::vector<int64_t> cols = needed_columns(need, d, b);
    if (cols.empty()) continue;
    if (rows_b.value.empty() || !shared_b || cols != cols_b) {
      rows_b = gather_b(in[1], d, matrix_offset(sb, b), cols);
      cols_b = std::move(cols);
    }
    const int64_t oa = matrix_offset(sa, b), width = static_cast<int64_t>(cols_b.size());
    runtime::ThreadPool::global().parallel_for(m, [&](int64_t begin, int64_t end) {
      // Per row: sums over the gathered columns; `pick` the positions (in
      // cols_b) of the ones this row needs.
      std::vector<double> value(width), abs_dot(width), plain(width);
      std::vector<int64_t> pick;
      for (int64_t i = begin; i < end; ++i) {
        const int64_t row = (b * m + i) * n;
        pick.clear();
        for (int64_t c = 0; c < width; ++c)
          if (needed(need, row + cols_b[c])) pick.push_back(c);
        if (pick.empty()) continue;
        const bool all = static_cast<int64_t>(pick.size()) == width;
        std::fill(value.begin(), value.end(), 0.0);
        std::fill(abs_dot.begin(), abs_dot.end(), 0.0);
        std::fill(plain.begin(), plain.end(), 0.0);
        for (int64_t kk = 0; kk < k; ++kk) {
          const int64_t ia = oa + (d.ta ? kk * m + i : i * k + kk);
          const double x = in[0].at(ia), ax = std::fabs(x), wx = ax + in[0].tol(ia);
          const double *bv = &rows_b.value[kk * width], *ba = &rows_b.abs[kk * width], *bw = &rows_b.wide[kk * width];
          if (all) {
            accumulate_row(width, x, wx, ax, bv, bw, ba, value.data(), abs_dot.data(), plain.data());
          } else {
            for (int64_t c : pick) {
              value[c] += x * bv[c];
              abs_dot[c] += wx * bw[c];
              plain[c] += ax * ba[c];
            }
          }
        }
        for (int64_t c : pick) {
          const int64_t at = row + cols_b[c];
          out.value[at] = value[c];
          const double carried = std::max(abs_dot[c] - plain[c], 0.0);
          out.tolerance[at] = matmul_tolerance(k, abs_dot[c], carried, value[c], dt, out.dtype);
        }
      }
    });
  }
  return true;
}

bool demand_matmul(const ir::Op& op, const std::vector<std::vector<int64_t>>& in_shapes, const uint8_t* need,
                   std::vector<std::vector<uint8_t>>& in_need) {
  if (op.name != "tessera.matmul") return false;
  expect_arity(op, 2);
  const std::vector<int64_t>&sa = in_shapes[0], &sb = in_shapes[1];
  const Dims d = read_dims(op, sa, sb);
  // Element (b, i, j) reads row i of A's matrix b and column j of B's.
  std::vector<uint8_t> rows(static_cast<size_t>(d.m)), cols(static_cast<size_t>(d.n));
  for (int64_t b = 0; b < d.batches; ++b) {
    std::fill(rows.begin(), rows.end(), uint8_t{0});
    std::fill(cols.begin(), cols.end(), uint8_t{0});
    bool any = false;
    for (int64_t i = 0; i < d.m; ++i)
      for (int64_t j = 0; j < d.n; ++j)
        if (need[(b * d.m + i) * d.n + j]) rows[i] = cols[j] = 1, any = true;
    if (!any) continue;
    const int64_t oa = matrix_offset(sa, b), ob = matrix_offset(sb, b);
    for (int64_t kk = 0; kk < d.k; ++kk) {
      for (int64_t i = 0; i < d.m; ++i)
        if (rows[i]) in_need[0][oa + (d.ta ? kk * d.m + i : i * d.k + kk)] = 1;
      for (int64_t j = 0; j < d.n; ++j)
        if (cols[j]) in_need[1][ob + (d.tb ? j * d.k + kk : kk * d.n + j)] = 1;
    }
  }
  return true;
}

}  // namespace tessera::oracle::detail
