// Tests for src/oracle/{reference,tolerance}: every reduce kind against a naive
// nested-loop reference over several axes, keepdims, all storage types, NaN and
// infinity rules, zero-size and rank-0 tensors, the tolerance policy on hand-
// computed cases, compare() at the tolerance boundary, and input errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ir/parser.hpp"
#include "oracle/reference.hpp"
#include "oracle/tolerance.hpp"
#include "support/diagnostic.hpp"

namespace tessera::oracle {
namespace {

// An oracle buffer as a plain vector, for EXPECT_EQ against literals.
std::vector<double> plain(const Doubles& d) { return {d.begin(), d.end()}; }

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kU32 = 0x1p-24, kU64 = 0x1p-53;

Tensor make(DType dt, std::vector<int64_t> shape, const std::vector<double>& values) {
  Tensor t = Tensor::empty(dt, std::move(shape));
  EXPECT_EQ(t.numel(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

// A one-op module: func @f(%x: in) -> out { %y = tessera.reduce %x {attrs} ; return %y }
std::unique_ptr<ir::Module> reduce_module(const std::string& in, const std::string& out, const std::string& attrs) {
  return ir::parse("func @f(%x: " + in + ") -> " + out + " {\n  %y = tessera.reduce %x {" + attrs + "} : " + in +
                   " -> " + out + "\n  return %y : " + out + "\n}\n");
}

Expected eval1(const std::string& in, const std::string& out, const std::string& attrs, const Tensor& x) {
  auto m = reduce_module(in, out, attrs);
  auto r = evaluate(*m, "", {x});
  EXPECT_EQ(r.size(), 1u);
  return r.at(0);
}

std::string expect_error(const std::string& code, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected error " << code;
  return "";
}

// The 2x3x4 test input: multiples of 1/8 in [-1.125, 1.375], never zero, so
// sums are exact in any order and every kind is interesting.
std::vector<double> input234() {
  std::vector<double> v;
  for (int i = 0; i < 24; ++i) v.push_back(0.25 * ((i * 7) % 11) - 1.125);
  return v;
}

// Naive reference for a 2x3x4 input: explicit i, j, k loops, the output index
// built from the kept coordinates. Independent of the oracle's odometer.
std::vector<double> naive234(const std::string& kind, const std::vector<double>& x, bool r0, bool r1, bool r2) {
  const int ext[3] = {2, 3, 4};
  const bool red[3] = {r0, r1, r2};
  int n_out = 1, n = 1;
  for (int d = 0; d < 3; ++d) (red[d] ? n : n_out) *= ext[d];
  double init = kind == "max" ? -kInf : kind == "min" ? kInf : kind == "prod" ? 1 : 0;
  std::vector<double> out(n_out, init);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        const int c[3] = {i, j, k};
        int o = 0;
        for (int d = 0; d < 3; ++d)
          if (!red[d]) o = o * ext[d] + c[d];
        double v = x[(i * 3 + j) * 4 + k];
        if (kind == "sum" || kind == "mean") out[o] += v;
        if (kind == "prod") out[o] *= v;
        if (kind == "max") out[o] = std::max(out[o], v);
        if (kind == "min") out[o] = std::min(out[o], v);
      }
  if (kind == "mean")
    for (double& v : out) v /= n;
  return out;
}

template <class Got>
void expect_values(const Got& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-13 * std::fabs(want[i])) << "index " << i;
}

const char* kKinds[] = {"sum", "mean", "max", "min", "prod"};

struct AxisCase {
  const char* axes;  // attribute text, "" = no axes attribute
  const char* out;   // result type
  bool r0, r1, r2;   // which dims are reduced
};

TEST(Oracle, EveryKindAlongEveryAxisMatchesNaiveLoops) {
  const AxisCase cases[] = {
      {"axes = [0]", "tensor<3x4xf32>", true, false, false},
      {"axes = [1]", "tensor<2x4xf32>", false, true, false},
      {"axes = [2]", "tensor<2x3xf32>", false, false, true},
      {"axes = [-1]", "tensor<2x3xf32>", false, false, true},
      {"axes = [-3]", "tensor<3x4xf32>", true, false, false},
      {"axes = [0, 2]", "tensor<3xf32>", true, false, true},
      {"axes = [2, 0]", "tensor<3xf32>", true, false, true},
      {"axes = [0, 1, 2]", "tensor<f32>", true, true, true},
      {"", "tensor<f32>", true, true, true},
  };
  Tensor x = make(DType::F32, {2, 3, 4}, input234());
  for (const AxisCase& c : cases)
    for (const char* kind : kKinds) {
      SCOPED_TRACE(std::string(kind) + " " + c.axes);
      std::string attrs = std::string("kind = \"") + kind + "\"" + (*c.axes ? std::string(", ") + c.axes : "");
      Expected e = eval1("tensor<2x3x4xf32>", c.out, attrs, x);
      EXPECT_EQ(e.dtype, DType::F32);
      EXPECT_EQ(e.tolerance.size(), e.value.size());
      expect_values(e.value, naive234(kind, input234(), c.r0, c.r1, c.r2));
    }
}

TEST(Oracle, HandComputedSumsAnchorTheNaiveReference) {
  // x = 1..24: sum over axis 0 is x[j,k] + x[12 + j,k]; sum over all is 300.
  std::vector<double> v;
  for (int i = 1; i <= 24; ++i) v.push_back(i);
  Tensor x = make(DType::F32, {2, 3, 4}, v);
  Expected a0 = eval1("tensor<2x3x4xf32>", "tensor<3x4xf32>", "kind = \"sum\", axes = [0]", x);
  EXPECT_EQ(a0.shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(a0.value[0], 1 + 13);
  EXPECT_EQ(a0.value[11], 12 + 24);
  Expected all = eval1("tensor<2x3x4xf32>", "tensor<f32>", "kind = \"sum\"", x);
  EXPECT_TRUE(all.shape.empty());
  ASSERT_EQ(all.value.size(), 1u);
  EXPECT_EQ(all.value[0], 300);
  Expected mx = eval1("tensor<2x3x4xf32>", "tensor<2x3xf32>", "kind = \"max\", axes = [-1]", x);
  EXPECT_EQ(plain(mx.value), (std::vector<double>{4, 8, 12, 16, 20, 24}));
  Expected mean = eval1("tensor<2x3x4xf32>", "tensor<2x4xf32>", "kind = \"mean\", axes = [1]", x);
  EXPECT_EQ(mean.value[0], (1 + 5 + 9) / 3.0);
}

TEST(Oracle, KeepdimsKeepsUnitDimsWithSameValues) {
  Tensor x = make(DType::F32, {2, 3, 4}, input234());
  for (const char* kind : kKinds) {
    SCOPED_TRACE(kind);
    std::string k = std::string("kind = \"") + kind + "\"";
    Expected flat = eval1("tensor<2x3x4xf32>", "tensor<2x4xf32>", k + ", axes = [1]", x);
    Expected kept = eval1("tensor<2x3x4xf32>", "tensor<2x1x4xf32>", k + ", axes = [1], keepdims = true", x);
    EXPECT_EQ(kept.shape, (std::vector<int64_t>{2, 1, 4}));
    EXPECT_EQ(plain(kept.value), plain(flat.value));
    EXPECT_EQ(plain(kept.tolerance), plain(flat.tolerance));
    Expected all = eval1("tensor<2x3x4xf32>", "tensor<1x1x1xf32>", k + ", keepdims = true", x);
    EXPECT_EQ(all.shape, (std::vector<int64_t>{1, 1, 1}));
    expect_values(all.value, naive234(kind, input234(), true, true, true));
  }
}

TEST(Oracle, F64StorageUsesF64Roundoff) {
  Tensor x = make(DType::F64, {3}, {0.1, 0.2, 0.3});
  Expected e = eval1("tensor<3xf64>", "tensor<f64>", "kind = \"sum\"", x);
  EXPECT_EQ(e.dtype, DType::F64);
  EXPECT_EQ(e.value[0], (0.1 + 0.2) + 0.3);  // double accumulation, no f32 rounding of inputs
  double s = 0.1 + 0.2 + 0.3;
  EXPECT_NEAR(e.tolerance[0], 2 * gamma(3, kU64) * s + kU64 * e.value[0], 1e-30);
  EXPECT_LT(e.tolerance[0], 1e-15);  // an f32-based tolerance would be ~1e-7
}

TEST(Oracle, F16InputsWidenExactlyAndRoundoffIsF16) {
  Tensor x = make(DType::F16, {3}, {0.1, 0.2, 0.3});
  const double a = x.get(0), b = x.get(1), c = x.get(2);
  EXPECT_EQ(a, 0.0999755859375);  // f16(0.1), widened exactly
  Expected e = eval1("tensor<3xf16>", "tensor<f16>", "kind = \"sum\"", x);
  EXPECT_EQ(e.dtype, DType::F16);
  EXPECT_EQ(e.value[0], a + b + c);
  // Accumulation in f32 (2^-24), output rounding in f16 (2^-11) dominates.
  const double v = e.value[0], u16 = 0x1p-11;
  EXPECT_NEAR(e.tolerance[0], (gamma(3, kU32) + gamma(3, kU64)) * v + u16 * v + 0x1p-25, 1e-18);
  EXPECT_GT(e.tolerance[0], u16 * v);
  EXPECT_LT(e.tolerance[0], 2 * u16 * v);
  Expected mx = eval1("tensor<3xf16>", "tensor<f16>", "kind = \"max\"", x);
  EXPECT_EQ(mx.value[0], c);
  EXPECT_EQ(mx.tolerance[0], 0);
}

TEST(Oracle, Bf16InputsWidenExactlyAndRoundoffIsBf16) {
  Tensor x = make(DType::BF16, {2, 2}, {1.01, 3.0, -2.5, 0.3});
  EXPECT_EQ(x.get(0), 1.0078125);  // bf16(1.01)
  Expected e = eval1("tensor<2x2xbf16>", "tensor<2xbf16>", "kind = \"prod\", axes = [1]", x);
  EXPECT_EQ(e.dtype, DType::BF16);
  EXPECT_EQ(e.value[0], 1.0078125 * 3.0);
  EXPECT_EQ(e.value[1], -2.5 * x.get(3));
  const double v = e.value[0];
  EXPECT_NEAR(e.tolerance[0], (gamma(2, kU32) + gamma(2, kU64)) * v + 0x1p-8 * v + 0x1p-134 + 0x1p-126, 1e-18);
}

TEST(Oracle, MaxMinPropagateNaN) {
  // Rows: no NaN, one NaN in the middle, NaN first, all NaN.
  Tensor x = make(DType::F32, {4, 3}, {1, 5, 2, 1, kNaN, 7, kNaN, 3, 4, kNaN, kNaN, kNaN});
  for (const char* kind : {"max", "min"}) {
    SCOPED_TRACE(kind);
    Expected e = eval1("tensor<4x3xf32>", "tensor<4xf32>", std::string("kind = \"") + kind + "\", axes = [1]", x);
    EXPECT_EQ(e.value[0], std::string(kind) == "max" ? 5 : 1);
    EXPECT_TRUE(std::isnan(e.value[1]));
    EXPECT_TRUE(std::isnan(e.value[2]));
    EXPECT_TRUE(std::isnan(e.value[3]));  // never -inf / +inf
    for (double t : e.tolerance) EXPECT_EQ(t, 0);
  }
}

TEST(Oracle, InfinitiesReduceExactly) {
  Tensor x = make(DType::F32, {3}, {kInf, -kInf, 0});
  EXPECT_EQ(eval1("tensor<3xf32>", "tensor<f32>", "kind = \"max\"", x).value[0], kInf);
  EXPECT_EQ(eval1("tensor<3xf32>", "tensor<f32>", "kind = \"min\"", x).value[0], -kInf);
  EXPECT_TRUE(std::isnan(eval1("tensor<3xf32>", "tensor<f32>", "kind = \"sum\"", x).value[0]));
  EXPECT_TRUE(std::isnan(eval1("tensor<3xf32>", "tensor<f32>", "kind = \"prod\"", x).value[0]));  // inf * 0

  Tensor y = make(DType::F32, {2}, {kInf, -kInf});
  Expected s = eval1("tensor<2xf32>", "tensor<f32>", "kind = \"sum\"", y);
  EXPECT_TRUE(std::isnan(s.value[0]));
  EXPECT_EQ(s.tolerance[0], 0);

  Tensor z = make(DType::F32, {2}, {kInf, 1});
  Expected m = eval1("tensor<2xf32>", "tensor<f32>", "kind = \"mean\"", z);
  EXPECT_EQ(m.value[0], kInf);
  EXPECT_EQ(m.tolerance[0], 0);  // an infinity must be matched exactly, not "within inf"
}

TEST(Oracle, ZeroSizeExtents) {
  Tensor x = Tensor::empty(DType::F32, {0, 3});
  Expected s = eval1("tensor<0x3xf32>", "tensor<3xf32>", "kind = \"sum\", axes = [0]", x);
  EXPECT_EQ(plain(s.value), (std::vector<double>{0, 0, 0}));
  Expected p = eval1("tensor<0x3xf32>", "tensor<3xf32>", "kind = \"prod\", axes = [0]", x);
  EXPECT_EQ(plain(p.value), (std::vector<double>{1, 1, 1}));
  // The compiler rejects these; the oracle must still answer, with NaN.
  for (const char* kind : {"max", "min", "mean"}) {
    Expected e = eval1("tensor<0x3xf32>", "tensor<3xf32>", std::string("kind = \"") + kind + "\", axes = [0]", x);
    ASSERT_EQ(e.value.size(), 3u) << kind;
    EXPECT_TRUE(std::isnan(e.value[0])) << kind;
  }
  // Kept extents of size zero: an empty result.
  Expected none = eval1("tensor<0x3xf32>", "tensor<0xf32>", "kind = \"sum\", axes = [1]", x);
  EXPECT_EQ(none.shape, (std::vector<int64_t>{0}));
  EXPECT_TRUE(none.value.empty());
}

TEST(Oracle, Rank0InputAndEmptyAxesCopy) {
  Tensor s = make(DType::F32, {}, {-2.5});
  for (const char* attrs : {"kind = \"sum\"", "kind = \"max\", axes = []", "kind = \"prod\""}) {
    Expected e = eval1("tensor<f32>", "tensor<f32>", attrs, s);
    EXPECT_TRUE(e.shape.empty()) << attrs;
    EXPECT_EQ(plain(e.value), (std::vector<double>{-2.5})) << attrs;
  }
  Tensor x = make(DType::F32, {2, 3, 4}, input234());
  Expected copy = eval1("tensor<2x3x4xf32>", "tensor<2x3x4xf32>", "kind = \"min\", axes = []", x);
  EXPECT_EQ(plain(copy.value), input234());
  EXPECT_EQ(plain(copy.tolerance), std::vector<double>(24, 0.0));
}

TEST(Oracle, ToleranceForKnownCases) {
  Tensor x = make(DType::F32, {4}, {1, -2, 3, 4});
  const double g = gamma(4, kU32) + gamma(4, kU64), half_sub = 0x1p-150;
  // sum: value 6, S = 10.
  Expected s = eval1("tensor<4xf32>", "tensor<f32>", "kind = \"sum\"", x);
  EXPECT_EQ(s.value[0], 6);
  EXPECT_DOUBLE_EQ(s.tolerance[0], g * 10 + kU32 * 6 + half_sub);
  // mean: value 1.5; S/n = 2.5; f32 output and f32 division, plus the reference's division.
  Expected m = eval1("tensor<4xf32>", "tensor<f32>", "kind = \"mean\"", x);
  EXPECT_EQ(m.value[0], 1.5);
  EXPECT_DOUBLE_EQ(m.tolerance[0], g * 10 / 4 + 2 * (kU32 * 1.5 + half_sub) + kU64 * 1.5);
  // prod: value -24.
  Expected p = eval1("tensor<4xf32>", "tensor<f32>", "kind = \"prod\"", x);
  EXPECT_EQ(p.value[0], -24);
  EXPECT_DOUBLE_EQ(p.tolerance[0], g * 24 + kU32 * 24 + half_sub + 0x1p-126);
  // max: exact.
  Expected mx = eval1("tensor<4xf32>", "tensor<f32>", "kind = \"max\"", x);
  EXPECT_EQ(mx.value[0], 4);
  EXPECT_EQ(mx.tolerance[0], 0);
}

TEST(Oracle, Gamma) {
  EXPECT_EQ(gamma(0, kU32), 0);
  EXPECT_DOUBLE_EQ(gamma(4, kU32), 4 * kU32 / (1 - 4 * kU32));
  EXPECT_GT(gamma(4, kU32), 4 * kU32);
  EXPECT_GE(gamma(int64_t{1} << 24, kU32), 1e300);  // n*u >= 1: no useful bound
  EXPECT_TRUE(std::isfinite(gamma(int64_t{1} << 40, kU32)));
  EXPECT_EQ(gamma(int64_t{1} << 40, kU32) * 0.0, 0.0);
}

TEST(Oracle, ChainedReducesCarryTolerance) {
  auto m = ir::parse(R"(func @g(%x: tensor<2x3x4xf32>) -> tensor<2xf32> {
  %a = tessera.reduce %x {kind = "sum", axes = [2]} : tensor<2x3x4xf32> -> tensor<2x3xf32>
  %b = tessera.reduce %a {kind = "sum", axes = [1]} : tensor<2x3xf32> -> tensor<2xf32>
  return %b : tensor<2xf32>
}
)");
  Tensor x = make(DType::F32, {2, 3, 4}, input234());
  auto r = evaluate(*m, "g", {x});
  ASSERT_EQ(r.size(), 1u);
  expect_values(r[0].value, naive234("sum", input234(), false, true, true));
  // By hand for b[0] = a[0] + a[1] + a[2], a[j] = sum_k x[0,j,k]: each a[j]
  // has its own sum tolerance; the outer sum sees |a|+t and carries sum t.
  const double g4 = gamma(4, kU32) + gamma(4, kU64), g3 = gamma(3, kU32) + gamma(3, kU64), h = 0x1p-150;
  const std::vector<double> xs = input234();
  double abs_in = 0, carried = 0, b = 0;
  for (int j = 0; j < 3; ++j) {
    double a = 0, s = 0;
    for (int k = 0; k < 4; ++k) a += xs[j * 4 + k], s += std::fabs(xs[j * 4 + k]);
    double ta = g4 * s + kU32 * std::fabs(a) + h;
    abs_in += std::fabs(a) + ta;
    carried += ta;
    b += a;
  }
  EXPECT_DOUBLE_EQ(r[0].tolerance[0], g3 * abs_in + carried + kU32 * std::fabs(b) + h);
  // The carried part matters: more than the outer sum's own bound on exact inputs.
  EXPECT_GT(r[0].tolerance[0], carried);
}

TEST(Oracle, PicksFuncByNameAndReturnsArguments) {
  auto m = ir::parse(R"(func @first(%x: tensor<2xf32>) -> tensor<f32> {
  %y = tessera.reduce %x {kind = "max"} : tensor<2xf32> -> tensor<f32>
  return %y : tensor<f32>
}
func @second(%x: tensor<2xf32>) -> (tensor<f32>, tensor<2xf32>) {
  %y = tessera.reduce %x {kind = "min"} : tensor<2xf32> -> tensor<f32>
  return %y, %x : (tensor<f32>, tensor<2xf32>)
}
)");
  Tensor x = make(DType::F32, {2}, {3, -1});
  EXPECT_EQ(evaluate(*m, "", {x}).at(0).value[0], 3);
  auto r = evaluate(*m, "second", {x});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].value[0], -1);
  EXPECT_EQ(plain(r[1].value), (std::vector<double>{3, -1}));
  EXPECT_EQ(plain(r[1].tolerance), (std::vector<double>{0, 0}));
  expect_error("E802", [&] { evaluate(*m, "third", {x}); });
}

TEST(Oracle, InputMismatchIsE801) {
  auto m = reduce_module("tensor<2x3xf32>", "tensor<2xf32>", "kind = \"sum\", axes = [1]");
  std::string msg = expect_error("E801", [&] { evaluate(*m, "", {Tensor::empty(DType::F32, {3, 2})}); });
  EXPECT_NE(msg.find("tensor<3x2xf32>"), std::string::npos) << msg;
  expect_error("E801", [&] { evaluate(*m, "", {Tensor::empty(DType::F16, {2, 3})}); });
  expect_error("E801", [&] { evaluate(*m, "", {}); });
  Tensor ok = Tensor::empty(DType::F32, {2, 3});
  expect_error("E801", [&] { evaluate(*m, "", {ok, ok}); });
}

TEST(Oracle, UnknownOpsAndAttributesAreE802) {
  auto m = ir::parse(R"(func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = tessera.matmul %x : tensor<2xf32> -> tensor<2xf32>
  return %y : tensor<2xf32>
}
)");
  Tensor x = make(DType::F32, {2}, {1, 2});
  expect_error("E802", [&] { evaluate(*m, "", {x}); });
  expect_error("E802", [&] { eval1("tensor<2xf32>", "tensor<f32>", "kind = \"median\"", x); });
  expect_error("E802", [&] { eval1("tensor<2xf32>", "tensor<f32>", "kind = \"sum\", axes = [1]", x); });
  expect_error("E802", [&] { eval1("tensor<2xf32>", "tensor<f32>", "kind = \"sum\", axes = [0, -1]", x); });
  expect_error("E802", [&] { eval1("tensor<2xf32>", "tensor<f32>", "kind = \"sum\", scale = 2", x); });
  // A declared result type that the attributes do not give.
  expect_error("E802", [&] { eval1("tensor<2xf32>", "tensor<1xf32>", "kind = \"sum\"", x); });
}

Expected hand(DType dt, std::vector<double> value, std::vector<double> tol) {
  Expected e;
  e.shape = {static_cast<int64_t>(value.size())};
  e.dtype = dt;
  e.value.assign(value.begin(), value.end());
  e.tolerance.assign(tol.begin(), tol.end());
  return e;
}

TEST(OracleCompare, PassesWithinToleranceAndFailsJustOutside) {
  Expected e = hand(DType::F64, {1.0, 2.0, 3.0}, {1e-6, 1e-6, 0});
  Comparison in = compare(e, make(DType::F64, {3}, {1.0 + 0.9e-6, 2.0 - 1e-6 * 0.99, 3.0}));
  EXPECT_TRUE(in.pass);
  EXPECT_EQ(in.failures, 0);
  EXPECT_TRUE(in.first_failure.empty());
  EXPECT_NEAR(in.max_abs_err, 0.99e-6, 1e-15);
  EXPECT_EQ(in.worst_index, 1);
  EXPECT_NEAR(in.worst_ratio, 0.99, 1e-9);
  EXPECT_EQ(in.tol_at_worst, 1e-6);

  Comparison out = compare(e, make(DType::F64, {3}, {1.0 + 1.1e-6, 2.0, 3.0}));
  EXPECT_FALSE(out.pass);
  EXPECT_EQ(out.failures, 1);
  EXPECT_EQ(out.worst_index, 0);
  EXPECT_NEAR(out.worst_ratio, 1.1, 1e-9);
  EXPECT_NE(out.first_failure.find("index 0"), std::string::npos) << out.first_failure;

  // Zero tolerance: any difference fails with an infinite ratio.
  Comparison exact = compare(e, make(DType::F64, {3}, {1.0, 2.0, std::nextafter(3.0, 4.0)}));
  EXPECT_FALSE(exact.pass);
  EXPECT_EQ(exact.worst_index, 2);
  EXPECT_EQ(exact.worst_ratio, kInf);
}

// An infinite tolerance passes anything finite: such elements are counted,
// so a report can say the check proved nothing there.
TEST(OracleCompare, CountsElementsWithoutABound) {
  Expected e = hand(DType::F32, {1.0, 2.0, 3.0}, {kInf, 1e-6, kInf});
  Comparison c = compare(e, make(DType::F32, {3}, {1e30, 2.0, -5.0}));
  EXPECT_TRUE(c.pass);
  EXPECT_EQ(c.compared, 3);
  EXPECT_EQ(c.unbounded, 2);
  EXPECT_EQ(c.worst_ratio, 0);
  EXPECT_EQ(compare(hand(DType::F32, {1.0}, {0.5}), make(DType::F32, {1}, {1.0})).unbounded, 0);
}

TEST(OracleCompare, AgainstEvaluatedF32Sum) {
  Tensor x = make(DType::F32, {4}, {1, -2, 3, 4});
  Expected e = eval1("tensor<4xf32>", "tensor<f32>", "kind = \"sum\"", x);
  EXPECT_TRUE(compare(e, to_tensor(e)).pass);
  // One f32 ulp off 6 (4.8e-7) is within the bound; 6 + 2^-14 is not.
  EXPECT_TRUE(compare(e, make(DType::F32, {}, {std::nextafter(6.0f, 7.0f)})).pass);
  Comparison c = compare(e, make(DType::F32, {}, {6 + 0x1p-14}));
  EXPECT_FALSE(c.pass);
  EXPECT_NE(c.first_failure.find("expected 6"), std::string::npos) << c.first_failure;
}

TEST(OracleCompare, NaNMustMatchNaN) {
  Expected e = hand(DType::F32, {kNaN, 0.0}, {0, 1});
  EXPECT_TRUE(compare(e, make(DType::F32, {2}, {kNaN, 0.5})).pass);
  Comparison c1 = compare(e, make(DType::F32, {2}, {0.0, 0.5}));  // expected NaN, got a number
  EXPECT_FALSE(c1.pass);
  EXPECT_EQ(c1.worst_index, 0);
  EXPECT_EQ(c1.max_abs_err, kInf);
  Comparison c2 = compare(e, make(DType::F32, {2}, {kNaN, kNaN}));  // expected a number, got NaN
  EXPECT_FALSE(c2.pass);
  EXPECT_EQ(c2.failures, 1);
  EXPECT_NE(c2.first_failure.find("index 1"), std::string::npos);
}

TEST(OracleCompare, InfinitiesMatchOnlyTheSameInfinity) {
  Expected e = hand(DType::F32, {kInf, -kInf}, {0, 0});
  Comparison ok = compare(e, make(DType::F32, {2}, {kInf, -kInf}));
  EXPECT_TRUE(ok.pass);
  EXPECT_EQ(ok.max_abs_err, 0);
  EXPECT_FALSE(compare(e, make(DType::F32, {2}, {-kInf, -kInf})).pass);
  EXPECT_FALSE(compare(e, make(DType::F32, {2}, {3.4e38, -kInf})).pass);
  EXPECT_FALSE(compare(e, make(DType::F32, {2}, {kNaN, -kInf})).pass);

  // A finite reference that overflows the f16 output type matches inf...
  Expected big = hand(DType::F16, {70000.0}, {10});
  EXPECT_TRUE(compare(big, make(DType::F16, {1}, {kInf})).pass);
  EXPECT_FALSE(compare(big, make(DType::F16, {1}, {-kInf})).pass);
  // ...but one that stays finite even at the edge of its tolerance does not.
  Expected small = hand(DType::F16, {60000.0}, {10});
  EXPECT_FALSE(compare(small, make(DType::F16, {1}, {kInf})).pass);
}

TEST(OracleCompare, ShapeOrDtypeMismatchFails) {
  Expected e = hand(DType::F32, {1, 2}, {0, 0});
  Comparison c = compare(e, make(DType::F32, {3}, {1, 2, 3}));
  EXPECT_FALSE(c.pass);
  EXPECT_NE(c.first_failure.find("tensor<3xf32>"), std::string::npos) << c.first_failure;
  EXPECT_FALSE(compare(e, make(DType::F64, {2}, {1, 2})).pass);
}

TEST(Oracle, ToTensorRoundsOnce) {
  // 1 + 2^-11 + 2^-40 is just above the f16 tie between 1 and 1 + 2^-10;
  // rounding through f32 first would make it an exact tie and round down.
  Expected e = hand(DType::F16, {1 + 0x1p-11 + 0x1p-40, 0.1, 70000}, {0, 0, 0});
  Tensor t = to_tensor(e);
  EXPECT_EQ(t.dtype(), DType::F16);
  EXPECT_EQ(t.get(0), 1 + 0x1p-10);
  EXPECT_EQ(t.get(1), 0.0999755859375);
  EXPECT_EQ(t.get(2), kInf);
  EXPECT_EQ(round_to_dtype(1 + 0x1p-8 + 0x1p-40, DType::BF16), 1 + 0x1p-7);
  EXPECT_EQ(round_to_dtype(1 + 0x1p-8, DType::BF16), 1.0);  // a true tie: to even
  EXPECT_EQ(round_to_dtype(1e300, DType::F32), kInf);
}

}  // namespace
}  // namespace tessera::oracle
