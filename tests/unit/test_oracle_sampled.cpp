// Tests for the oracle's sampled evaluation (reference.hpp `sample`,
// sample.hpp), the per-kernel check (kernel_check.hpp) and the softmax bound
// under an additive mask: a sampled evaluation gives exactly the full one's
// values and tolerances at the sampled elements, for every op family; the
// check of a unit names the value it compares and catches a wrong one.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ir/parser.hpp"
#include "oracle/kernel_check.hpp"
#include "oracle/reference.hpp"
#include "oracle/sample.hpp"
#include "oracle/tolerance.hpp"
#include "support/diagnostic.hpp"

namespace tessera::oracle {
namespace {

Tensor spread_values(DType dt, std::vector<int64_t> shape, uint64_t seed) {
  Tensor t = Tensor::empty(dt, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, std::sin(static_cast<double>(seed * 7919 + static_cast<uint64_t>(i)) * 0.37) * 0.9);
  return t;
}

// Every family in one func: a matmul with a transposed, batched operand, a
// broadcast add, a masked softmax, a norm and reductions over several axes.
const char* kProgram =
    R"(func @f(%a: tensor<3x40x24xf32>, %b: tensor<3x56x24xf32>, %m: tensor<40x56xf32>, %w: tensor<56xf32>) -> (tensor<3x40x56xf32>, tensor<40xf32>, tensor<3x56xf32>) {
  %s = tessera.matmul %a, %b {transpose_b = true} : (tensor<3x40x24xf32>, tensor<3x56x24xf32>) -> tensor<3x40x56xf32>
  %sm = tessera.add %s, %m : (tensor<3x40x56xf32>, tensor<40x56xf32>) -> tensor<3x40x56xf32>
  %p = tessera.softmax %sm {axis = -1} : tensor<3x40x56xf32> -> tensor<3x40x56xf32>
  %n = tessera.rms_norm %p, %w {eps = 1.0e-06} : (tensor<3x40x56xf32>, tensor<56xf32>) -> tensor<3x40x56xf32>
  %r = tessera.reduce %n {kind = "max", axes = [0, 2]} : tensor<3x40x56xf32> -> tensor<40xf32>
  %c = tessera.reduce %s {kind = "sum", axes = [1]} : tensor<3x40x56xf32> -> tensor<3x56xf32>
  return %n, %r, %c : tensor<3x40x56xf32>, tensor<40xf32>, tensor<3x56xf32>
}
)";

std::vector<Tensor> program_inputs() {
  Tensor mask = Tensor::empty(DType::F32, {40, 56});
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < 56; ++j) mask.set(i * 56 + j, j > i + 8 ? -1e9 : 0.0);
  return {spread_values(DType::F32, {3, 40, 24}, 1), spread_values(DType::F32, {3, 56, 24}, 2), mask,
          spread_values(DType::F32, {56}, 3)};
}

TEST(OracleSampled, SampledValuesAreTheFullOnes) {
  auto m = ir::parse(kProgram);
  const std::vector<Tensor> in = program_inputs();
  const std::vector<Expected> full = evaluate(*m, "", in);
  std::vector<std::vector<uint8_t>> sample = {sample_elements({3, 40, 56}, 8, 8), sample_elements({40}, 2, 4),
                                              sample_elements({3, 56}, 2, 8)};
  for (const auto& s : sample) ASSERT_FALSE(s.empty());
  const std::vector<Expected> part = evaluate(*m, "", in, &sample);
  for (size_t r = 0; r < full.size(); ++r) {
    int64_t seen = 0;
    for (size_t i = 0; i < full[r].value.size(); ++i) {
      if (!sample[r][i]) continue;
      ++seen;
      EXPECT_EQ(part[r].value[i], full[r].value[i]) << "result " << r << " element " << i;
      EXPECT_EQ(part[r].tolerance[i], full[r].tolerance[i]) << "result " << r << " element " << i;
    }
    EXPECT_GT(seen, 0);
    // compare() reads only the sample: a tensor wrong everywhere else passes.
    Tensor got = to_tensor(full[r]);
    for (size_t i = 0; i < full[r].value.size(); ++i)
      if (!sample[r][i]) got.set(static_cast<int64_t>(i), 1e30);
    const Comparison c = compare(part[r], got);
    EXPECT_TRUE(c.pass) << c.first_failure;
    EXPECT_EQ(c.compared, seen);
  }
}

TEST(OracleSampled, SampleKeepsEdgesAndGivesVectorsTheWholeBudget) {
  const std::vector<int64_t> idx = spread_indices(1000, 16);
  ASSERT_EQ(idx.size(), 16u);
  EXPECT_EQ(idx.front(), 0);
  EXPECT_EQ(idx.back(), 999);
  for (size_t i = 1; i < idx.size(); ++i) EXPECT_LT(idx[i - 1], idx[i]);
  int64_t count = 0;
  for (uint8_t f : sample_elements({4096}, 32, 32)) count += f;
  EXPECT_EQ(count, 1024);
  EXPECT_TRUE(sample_elements({32, 32}, 32, 32).empty());  // small: everything
}

TEST(OracleSampled, MaskedEntriesDoNotWidenSoftmaxBounds) {
  // Unmasked entries carry a small tolerance, masked ones (-1e9) the ~u*1e9 an
  // f32 add of the mask carries; the bound of the unmasked results must stay
  // at the scale of their own tolerance.
  const int64_t n = 64;
  std::vector<double> x(n), t(n), y(n), tol(n);
  double s = 0;
  for (int64_t j = 0; j < n; ++j) {
    const bool masked = j >= 16;
    x[j] = masked ? -1e9 : 0.1 * static_cast<double>(j % 5);
    t[j] = masked ? 120.0 : 1e-6;
  }
  for (int64_t j = 0; j < n; ++j) s += std::exp(x[j] - 0.4);
  for (int64_t j = 0; j < n; ++j) y[j] = std::exp(x[j] - 0.4) / s;
  for (bool log : {false, true}) {
    std::vector<double> yy = y;
    if (log) {
      for (int64_t j = 0; j < n; ++j) yy[j] = x[j] - 0.4 - std::log(s);
    }
    softmax_row_tolerance(log, x.data(), t.data(), yy.data(), n, DType::F32, DType::F32, tol.data());
    for (int64_t j = 0; j < 16; ++j) {
      EXPECT_TRUE(std::isfinite(tol[j])) << j;
      EXPECT_LT(tol[j], 1e-4) << (log ? "log_softmax " : "softmax ") << j;  // without the mask: ~1e-5
    }
    if (!log) {
      for (int64_t j = 16; j < n; ++j) EXPECT_LT(tol[j], 1e-30) << j;  // exactly 0 either way
    }
  }
}

// Two launches: k0 makes a partial the graph does not have, k1 finishes it;
// one unit, checked against the region from %x to %y.
TEST(KernelCheck, UnitsJoinValuesTheGraphLacksAndCatchAWrongResult) {
  auto m = ir::parse(R"(func @g(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %e = tessera.exp %x : tensor<8x16xf32> -> tensor<8x16xf32>
  %y = tessera.reduce %e {kind = "sum", axes = [1]} : tensor<8x16xf32> -> tensor<8xf32>
  return %y : tensor<8xf32>
}
)");
  const Tensor x = spread_values(DType::F32, {8, 16}, 4);
  const Expected want = evaluate(*m, "", {x}).at(0);
  std::map<std::string, Tensor> values = {
      {"x", x}, {"partial", Tensor::empty(DType::F32, {8, 2})}, {"y", to_tensor(want)}};
  const std::vector<LaunchValues> launches = {{"g_k0", {"x"}, {"partial"}}, {"g_k1", {"partial"}, {"y"}}};
  std::vector<KernelCheck> checks = check_kernels(*m, "", launches, values, 32, 32);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].kernels, (std::vector<std::string>{"g_k0", "g_k1"}));
  EXPECT_EQ(checks[0].value, "y");
  EXPECT_TRUE(checks[0].comparison.pass) << checks[0].comparison.first_failure;
  values["y"].set(3, values["y"].get(3) * 1.001);
  checks = check_kernels(*m, "", launches, values, 32, 32);
  EXPECT_FALSE(checks[0].comparison.pass);
  EXPECT_EQ(checks[0].comparison.failures, 1);
}

TEST(KernelCheck, ARegionReadingWhatItWasNotGivenIsE803) {
  auto m = ir::parse(R"(func @g(%x: tensor<4xf32>, %z: tensor<4xf32>) -> tensor<4xf32> {
  %y = tessera.add %x, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
)");
  const Tensor x = spread_values(DType::F32, {4}, 5);
  std::map<std::string, Tensor> values = {{"x", x}, {"z", x}, {"y", x}};
  try {
    check_kernels(*m, "", {{"g_k0", {"x"}, {"y"}}}, values, 32, 32);
    ADD_FAILURE() << "expected E803";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E803") << e.what();
  }
}

}  // namespace
}  // namespace tessera::oracle
