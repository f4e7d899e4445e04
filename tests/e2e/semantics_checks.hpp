// NaN/inf/empty checks of the reduction semantics, shared by the GPU-style
// suites (CUDA on the device, Metal under emulation). `reduce` builds and runs
// one reduction of x (checking it against the oracle) and returns its result.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "runtime/inputs.hpp"

namespace tessera::test {

using ReduceRun = std::function<Tensor(const std::vector<int64_t>& shape, DType dt, const std::string& kind,
                                       const std::vector<int64_t>& axes, bool keepdims, const Tensor& x)>;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// NaN first, mid-row, last and everywhere; +-inf; rows (axis 1) and columns
// (axis 0), a short and a long row.
inline void check_max_min_propagate_nan(const ReduceRun& reduce, const std::vector<DType>& dtypes) {
  for (DType dt : dtypes)
    for (const char* kind : {"max", "min"})
      for (int64_t cols : {70, 5000}) {
        Tensor x = generate_input("const:1", dt, {6, cols});
        x.set(0, kNaN);
        x.set(cols + cols / 2, kNaN);
        x.set(3 * cols - 1, kNaN);
        for (int64_t j = 0; j < cols; ++j) x.set(3 * cols + j, kNaN);  // all NaN
        x.set(4 * cols + 5, kInf);
        x.set(4 * cols + 6, -kInf);
        Tensor y = reduce({6, cols}, dt, kind, {1}, false, x);
        for (int r = 0; r < 4; ++r) EXPECT_TRUE(std::isnan(y.get(r))) << kind << " row " << r;
        EXPECT_EQ(y.get(4), std::string(kind) == "max" ? kInf : -kInf);
        EXPECT_EQ(y.get(5), 1.0);
        Tensor c = reduce({6, cols}, dt, kind, {0}, false, x);
        EXPECT_TRUE(std::isnan(c.get(0)) && std::isnan(c.get(cols / 2)) && std::isnan(c.get(cols - 1)));
      }
}

// inf - inf is NaN in a sum, inf survives max; zero-size extents give the
// identity; a full reduction is rank 0 (of `rank0_dtype`, `rank0_n` elements).
inline void check_infinities_zero_extents_rank_zero(const ReduceRun& reduce, DType rank0_dtype, int64_t rank0_n) {
  Tensor x = generate_input("const:0", DType::F32, {3, 3});
  x.set(0, kInf);
  x.set(1, -kInf);
  EXPECT_TRUE(std::isnan(reduce({3, 3}, DType::F32, "sum", {1}, false, x).get(0)));
  EXPECT_EQ(reduce({3, 3}, DType::F32, "max", {1}, false, x).get(0), kInf);
  Tensor e = Tensor::empty(DType::F32, {4, 0});
  Tensor s0 = reduce({4, 0}, DType::F32, "sum", {1}, false, e);
  Tensor p1 = reduce({4, 0}, DType::F32, "prod", {1}, true, e);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(s0.get(i) == 0.0 && p1.get(i) == 1.0);
  Tensor v = generate_input("random:seed=3", rank0_dtype, {rank0_n});
  EXPECT_EQ(reduce({rank0_n}, rank0_dtype, "sum", {0}, false, v).rank(), 0);
}

}  // namespace tessera::test
