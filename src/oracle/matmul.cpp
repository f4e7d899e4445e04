// The oracle's tessera.matmul: C = op(A) x op(B) over batches, in double, read
// from the op's own attributes and operand shapes (nothing shared with
// graph_matmul.cpp). Tolerances: matmul_tolerance (tolerance.hpp).
#include <algorithm>
#include <cmath>

#include "oracle/ops.hpp"
#include "oracle/tolerance.hpp"

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

bool evaluate_matmul(const ir::Op& op, const std::vector<Source>& in, Expected& out) {
  if (op.name != "tessera.matmul") return false;
  expect_arity(op, 2);
  only_attrs(op, {"transpose_a", "transpose_b"});
  const bool ta = bool_attr(op, "transpose_a"), tb = bool_attr(op, "transpose_b");
  const std::vector<int64_t>&sa = in[0].shape(), &sb = in[1].shape();
  if (sa.size() < 2 || sb.size() < 2) bad_op(op, "operands need rank >= 2");
  const size_t ra = sa.size(), rb = sb.size();
  const int64_t m = sa[ra - (ta ? 1 : 2)], k = sa[ra - (ta ? 2 : 1)];
  const int64_t kb = sb[rb - (tb ? 1 : 2)], n = sb[rb - (tb ? 2 : 1)];
  if (k != kb) bad_op(op, "contraction sizes differ");
  out = result_like(op);
  const std::vector<int64_t>& sc = out.shape;
  if (sc.size() < 2 || sc[sc.size() - 2] != m || sc[sc.size() - 1] != n) bad_op(op, "result shape does not match");
  const int64_t batches = product(sc) / std::max<int64_t>(m * n, 1);
  for (const auto* s : {&sa, &sb}) {
    int64_t mats = 1;
    for (size_t d = 0; d + 2 < s->size(); ++d) mats *= (*s)[d];
    if (mats != 1 && m * n > 0 && mats != batches) bad_op(op, "an operand's batch is neither 1 nor the result's");
  }
  const DType dt = in[0].dtype();
  // Row i of C accumulates over kk with j innermost (B's rows are contiguous
  // unless transposed): the value, S and C of the policy per element.
  std::vector<double> value(n), abs_dot(n), carried(n);
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t oa = matrix_offset(sa, b), ob = matrix_offset(sb, b);
    for (int64_t i = 0; i < m; ++i) {
      std::fill(value.begin(), value.end(), 0.0);
      std::fill(abs_dot.begin(), abs_dot.end(), 0.0);
      std::fill(carried.begin(), carried.end(), 0.0);
      for (int64_t kk = 0; kk < k; ++kk) {
        const int64_t ia = oa + (ta ? kk * m + i : i * k + kk);
        const double x = in[0].at(ia), tx = in[0].tol(ia), ax = std::fabs(x);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t ib = ob + (tb ? j * k + kk : kk * n + j);
          const double y = in[1].at(ib), ty = in[1].tol(ib), ay = std::fabs(y);
          value[j] += x * y;
          abs_dot[j] += (ax + tx) * (ay + ty);
          carried[j] += ax * ty + ay * tx + tx * ty;
        }
      }
      for (int64_t j = 0; j < n; ++j) {
        const int64_t o = (b * m + i) * n + j;
        out.value[o] = value[j];
        out.tolerance[o] = matmul_tolerance(k, abs_dot[j], carried[j], value[j], dt, out.dtype);
      }
    }
  }
  return true;
}

}  // namespace tessera::oracle::detail
