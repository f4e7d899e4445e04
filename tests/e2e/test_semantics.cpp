// Stated semantics, each with hand-built inputs: NaN propagation, infinities,
// zero-size extents, rank 0, storage types, 64-bit indexing.
#include <cmath>
#include <limits>

#include "e2e_util.hpp"

namespace tessera::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor rows(DType dt, const std::vector<std::vector<double>>& values) {
  Tensor t = Tensor::empty(dt, {int64_t(values.size()), int64_t(values[0].size())});
  for (size_t r = 0; r < values.size(); ++r)
    for (size_t c = 0; c < values[r].size(); ++c) t.set(int64_t(r * values[r].size() + c), values[r][c]);
  return t;
}

TEST(Semantics, MaxMinPropagateNaNInEveryPosition) {
  // 70 columns: the NaN lands in the vector body, in the masked tail, first and last.
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (const char* kind : {"max", "min"}) {
      std::vector<std::vector<double>> v(6, std::vector<double>(70, 1.0));
      v[0][0] = kNaN;
      v[1][33] = kNaN;
      v[2][69] = kNaN;
      for (double& x : v[3]) x = kNaN;  // all NaN: NaN, never an infinity
      v[4][5] = kInf;
      v[4][6] = -kInf;  // finite row with both infinities
      Tensor y = run_and_check(reduce_program({6, 70}, dt, kind, {1}, false), {rows(dt, v)})[0];
      for (int r = 0; r < 4; ++r) EXPECT_TRUE(std::isnan(y.get(r))) << kind << " row " << r;
      EXPECT_EQ(y.get(4), std::string(kind) == "max" ? kInf : -kInf);
      EXPECT_EQ(y.get(5), 1.0);
      // the same along the leading axis (the columns strategy)
      v[3].assign(70, 1.0);
      Tensor c = run_and_check(reduce_program({6, 70}, dt, kind, {0}, false), {rows(dt, v)})[0];
      EXPECT_TRUE(std::isnan(c.get(0)) && std::isnan(c.get(33)) && std::isnan(c.get(69))) << kind;
      EXPECT_EQ(c.get(1), 1.0);
      EXPECT_EQ(c.get(5), std::string(kind) == "max" ? kInf : 1.0);
    }
}

TEST(Semantics, InfinitiesReduceExactly) {
  Tensor x = rows(DType::F32, {{kInf, -kInf, 0.0}, {kInf, 1.0, 2.0}, {-kInf, -kInf, 3.0}});
  Tensor mx = run_and_check(reduce_program({3, 3}, DType::F32, "max", {1}, false), {x})[0];
  Tensor mn = run_and_check(reduce_program({3, 3}, DType::F32, "min", {1}, false), {x})[0];
  Tensor sm = run_and_check(reduce_program({3, 3}, DType::F32, "sum", {1}, false), {x})[0];
  EXPECT_EQ(mx.get(0), kInf);
  EXPECT_EQ(mn.get(0), -kInf);
  EXPECT_TRUE(std::isnan(sm.get(0)));  // inf + -inf
  EXPECT_EQ(sm.get(1), kInf);
  EXPECT_EQ(sm.get(2), -kInf);
}

TEST(Semantics, ZeroSizeExtentGivesIdentity) {
  Tensor x = Tensor::empty(DType::F32, {4, 0});
  Tensor s = run_and_check(reduce_program({4, 0}, DType::F32, "sum", {1}, false), {x})[0];
  Tensor p = run_and_check(reduce_program({4, 0}, DType::F32, "prod", {1}, true), {x})[0];
  ASSERT_EQ(s.shape(), (std::vector<int64_t>{4}));
  ASSERT_EQ(p.shape(), (std::vector<int64_t>{4, 1}));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(s.get(i), 0.0);
    EXPECT_EQ(p.get(i), 1.0);
  }
  // an empty output is fine too
  Tensor e = Tensor::empty(DType::F32, {0, 5});
  EXPECT_EQ(run_and_check(reduce_program({0, 5}, DType::F32, "max", {1}, false), {e})[0].numel(), 0);
}

TEST(Semantics, ZeroSizeExtentIsACompileErrorForMaxMinMean) {
  for (const char* kind : {"max", "min", "mean"}) {
    try {
      reduce_program({4, 0}, DType::F32, kind, {1}, false);
      ADD_FAILURE() << kind << " over an empty extent compiled";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), "E206");
    }
  }
}

TEST(Semantics, RankZero) {
  Tensor v = generate_input("random:seed=3", DType::F64, {1000});
  Tensor s = run_and_check(reduce_program({1000}, DType::F64, "sum", {0}, false), {v})[0];
  EXPECT_EQ(s.rank(), 0);
  Program p = Program::compile_text(
      "func @f(%x: tensor<f32>) -> tensor<f32> {\n"
      "  %y = tessera.reduce %x {kind = \"mean\", axes = []} : tensor<f32> -> tensor<f32>\n"
      "  return %y : tensor<f32>\n}\n");
  Tensor x = Tensor::empty(DType::F32, {});
  x.set(0, 2.5);
  EXPECT_EQ(run_and_check(p, {x})[0].get(0), 2.5);
}

TEST(Semantics, HalfStorageAccumulatesInF32) {
  // 4096 values of 1 + 2^-10 in f16: an f16 accumulator would stall at 2048.
  Tensor x = generate_input("const:1.0009765625", DType::F16, {4096});
  Tensor y = run_and_check(reduce_program({4096}, DType::F16, "sum", {0}, false), {x})[0];
  EXPECT_EQ(y.get(0), 4100.0);  // 4100 is exact in f16
}

TEST(Semantics, MeanDividesOnceOverAllPasses) {
  Tensor x = generate_input("iota", DType::F32, {2, 3, 4, 5});
  Tensor y = run_and_check(reduce_program({2, 3, 4, 5}, DType::F32, "mean", {0, 2}, false), {x})[0];
  // element (j, l) = mean over i, k of (60 i + 20 j + 5 k + l) = 30 + 20 j + 7.5 + l
  EXPECT_EQ(y.get(0), 37.5);
  EXPECT_EQ(y.get(2 * 5 + 4), 37.5 + 40 + 4);
}

// More than 2^31 elements: offsets past INT32_MAX must be computed in 64 bits.
// 2^31 + 64 f16 elements (4 GiB); the extremes are planted past 2^31.
TEST(Huge, SixtyFourBitIndexing) {
  const int64_t cols = (int64_t{1} << 30) + 32;
  Tensor x = Tensor::empty(DType::F16, {2, cols});
  uint16_t* d = static_cast<uint16_t*>(x.data());
  std::fill(d, d + x.numel(), uint16_t{0x3c00});  // 1.0
  x.set(x.numel() - 3, 7.0);                      // row 1, past 2^31
  x.set(cols + 5, -2.0);                          // row 1, early
  x.set(cols - 1, kNaN);                          // row 0, last
  Tensor mx = run_and_check(reduce_program({2, cols}, DType::F16, "max", {1}, false), {x})[0];
  EXPECT_TRUE(std::isnan(mx.get(0)));
  EXPECT_EQ(mx.get(1), 7.0);
  Tensor mn = run_and_check(reduce_program({2, cols}, DType::F16, "min", {-1}, false), {x})[0];
  EXPECT_EQ(mn.get(1), -2.0);
  Tensor all = run_and_check(reduce_program({2, cols}, DType::F16, "max", {0, 1}, false), {x})[0];
  EXPECT_TRUE(std::isnan(all.get(0)));
}

}  // namespace
}  // namespace tessera::test
