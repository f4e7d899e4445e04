#include "arbiter/region_sample.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "arbiter/region_program.hpp"
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
  cols_ = oracle::spread_indices(s.n, want);
  program_ = region_program(region_, static_cast<int64_t>(rows_.size()), static_cast<int64_t>(cols_.size()));
}

Tensor RegionSample::cut(const Value* v, const Tensor& full) const {
  const auto [dm, dn] = mn_dims(region_, v);
  std::vector<std::vector<int64_t>> index(full.shape().size());
  if (dm >= 0) index[dm] = rows_;
  if (dn >= 0) index[dn] = cols_;
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
