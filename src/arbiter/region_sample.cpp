#include "arbiter/region_sample.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "arbiter/region_program.hpp"
#include "families/matmul/matmul_schedule.hpp"
#include "ir/graph_dialect.hpp"
#include "oracle/sample.hpp"

namespace tessera::arbiter {

using namespace tessera::ir;

namespace {

// x[..., index_d, ...] along every dim d whose index list is non-empty.
Tensor gather(const Tensor& x, const std::vector<std::vector<int64_t>>& index) {
  std::vector<int64_t> shape = x.shape();
  for (size_t d = 0; d < shape.size(); ++d)
    if (!index[d].empty()) shape[d] = static_cast<int64_t>(index[d].size());
  Tensor out = Tensor::empty(x.dtype(), shape);
  const size_t es = dtype_size(x.dtype());
  const size_t rank = shape.size();
  const int64_t n = out.numel();
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * x.shape()[d];
  const auto* src = static_cast<const std::byte*>(x.data());
  auto* dst = static_cast<std::byte*>(out.data());
  std::vector<int64_t> at(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += (index[d].empty() ? at[d] : index[d][at[d]]) * stride[d];
    std::memcpy(dst + i * es, src + offset * es, es);
    // Next position, last dim fastest. Unsigned dims: GCC 12 misreads the
    // signed form's d >= 0 bound (a false -Wfree-nonheap-object).
    for (size_t d = rank; d-- > 0;) {
      if (++at[d] < shape[d]) break;
      at[d] = 0;
    }
  }
  return out;
}

}  // namespace

RegionSample::RegionSample(const families::fused::FusedRegion& r, double max_macs) : region_(r) {
  const MatmulSpec s = matmul_spec(*r.core);
  // The largest square count within the budget, 16 to 128 of each.
  const double per = std::max(1.0, double(s.batch) * double(std::max<int64_t>(s.k, 1)));
  const int64_t want = std::clamp<int64_t>(static_cast<int64_t>(std::sqrt(max_macs / per)), 16, 128);
  rows_ = oracle::spread_indices(s.m, want);
  // With an epilogue on column halves, output column j reads C's columns j
  // and j + n/2: B's sample holds both.
  const bool halves = families::matmul::halves_split(r.ops, *r.core) != nullptr;
  cols_ = oracle::spread_indices(halves ? s.n / 2 : s.n, want);
  b_cols_ = cols_;
  if (halves)
    for (int64_t c : cols_) b_cols_.push_back(c + s.n / 2);
  program_ = region_program(region_, static_cast<int64_t>(rows_.size()), static_cast<int64_t>(b_cols_.size()));
}

Tensor RegionSample::cut(const Value* v, const Tensor& full) const {
  const MnDims d = mn_dims(region_, v);
  std::vector<std::vector<int64_t>> index(full.shape().size());
  if (d.m >= 0) index[d.m] = rows_;
  if (d.n >= 0) index[d.n] = d.half || v != region_.core->operands[1] ? cols_ : b_cols_;
  return gather(full, index);
}

std::vector<Tensor> RegionSample::inputs(const std::vector<Tensor>& full) const {
  if (full.size() != region_.leaves.size()) fail("E770", "region sample: one input per region leaf expected");
  std::vector<Tensor> out;
  for (size_t i = 0; i < full.size(); ++i) out.push_back(cut(region_.leaves[i], full[i]));
  return out;
}

Tensor RegionSample::output(const Tensor& full) const { return cut(region_.result, full); }

}  // namespace tessera::arbiter
