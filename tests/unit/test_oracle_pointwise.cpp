// Tests for the oracle's pointwise, softmax and norm ops (src/oracle/
// pointwise.cpp, rows.cpp and their tolerance policy in tolerance.cpp).
// The "kernels" here are written the way a Tessera kernel computes: in float,
// with f32 libm functions, f32 two-pass norms and f32 softmax, f16/bf16 as
// storage (inputs rounded, outputs rounded with round_to_dtype). Each one must
// pass compare(); deliberately wrong variants must fail.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
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
constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr double kU32 = 0x1p-24;

const DType kStorage[] = {DType::F32, DType::BF16, DType::F16};

// A tensor of `dt` holding the values rounded (once, to nearest even) to dt.
Tensor make(DType dt, std::vector<int64_t> shape, const std::vector<double>& values) {
  Tensor t = Tensor::empty(dt, std::move(shape));
  EXPECT_EQ(t.numel(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), round_to_dtype(values[i], dt));
  return t;
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.get(i);
  return v;
}

std::string ty(const std::string& shape, DType dt) {
  return "tensor<" + shape + (shape.empty() ? "" : "x") + std::string(dtype_name(dt)) + ">";
}

// func @f(args) -> result { body; return %r }
Expected eval(const std::string& args, const std::string& body, const std::string& result,
              const std::vector<Tensor>& inputs) {
  auto m = ir::parse("func @f(" + args + ") -> " + result + " {\n" + body + "\n  return %r : " + result + "\n}\n");
  auto r = evaluate(*m, "", inputs);
  EXPECT_EQ(r.size(), 1u);
  return r.at(0);
}

// One unary op `name` (with attrs) on x of type t.
Expected eval_unary(const std::string& name, const std::string& attrs, const std::string& t, const Tensor& x) {
  return eval("%x: " + t, "  %r = tessera." + name + " %x " + attrs + " : " + t + " -> " + t, t, {x});
}

Expected eval_binary(const std::string& name, const std::string& ta, const std::string& tb, const std::string& tr,
                     const Tensor& a, const Tensor& b) {
  return eval("%a: " + ta + ", %b: " + tb, "  %r = tessera." + name + " %a, %b : (" + ta + ", " + tb + ") -> " + tr, tr,
              {a, b});
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

// The largest tol/|value| over finite nonzero values: how loose the policy is.
double max_rel_tol(const Expected& e) {
  double r = 0;
  for (size_t i = 0; i < e.value.size(); ++i)
    if (std::isfinite(e.value[i]) && std::fabs(e.value[i]) > 1e-30)
      r = std::max(r, e.tolerance[i] / std::fabs(e.value[i]));
  return r;
}

// ---- f32 "kernels" ----------------------------------------------------------

// A 16-lane accumulation with a fixed pairwise tree at the end (an AVX-512 row).
float lane_sum(const std::vector<float>& v) {
  float lanes[16] = {};
  for (size_t i = 0; i < v.size(); ++i) lanes[i % 16] += v[i];
  for (int w = 8; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) lanes[k] += lanes[k + w];
  return lanes[0];
}

float k_unary(const std::string& fn, float x) {
  if (fn == "neg") return -x;
  if (fn == "abs") return std::fabs(x);
  if (fn == "relu") return std::isnan(x) ? x : (x > 0 ? x : 0.0f);
  if (fn == "exp") return std::exp(x);
  if (fn == "log") return std::log(x);
  if (fn == "sqrt") return std::sqrt(x);
  if (fn == "rsqrt") return 1.0f / std::sqrt(x);
  if (fn == "tanh") return std::tanh(x);
  if (fn == "sigmoid") return 1.0f / (1.0f + std::exp(-x));
  // silu and gelu at -inf are their limit, -0 (semantics.md)
  if ((fn == "silu" || fn == "gelu" || fn == "gelu_tanh") && std::isinf(x)) return x > 0 ? x : -0.0f;
  if (fn == "silu") return x / (1.0f + std::exp(-x));
  if (fn == "gelu") return 0.5f * x * (1.0f + std::erf(x * 0.70710678f));
  if (fn == "gelu_tanh") return 0.5f * x * (1.0f + std::tanh(0.79788456f * (x + 0.044715f * x * x * x)));
  ADD_FAILURE() << fn;
  return 0;
}

// Applies f elementwise to x's values in float, rounding the result to `out`.
Tensor k_map(const Tensor& x, DType out, const std::function<float(float)>& f) {
  Tensor t = Tensor::empty(out, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) t.set(i, round_to_dtype(f(static_cast<float>(x.get(i))), out));
  return t;
}

std::vector<float> k_softmax_row(const std::vector<float>& x, bool log) {
  float m = -kInfF;
  for (float v : x)
    if (std::isnan(v) || v > m) m = v;
  std::vector<float> e(x.size()), y(x.size());
  for (size_t j = 0; j < x.size(); ++j) e[j] = std::exp(x[j] - m);
  const float s = lane_sum(e);
  for (size_t j = 0; j < x.size(); ++j) y[j] = log ? (x[j] - m) - std::log(s) : e[j] / s;
  return y;
}

// Softmax along `axis` of a tensor viewed as [outer, n, inner], in f32.
Tensor k_softmax(const Tensor& x, int64_t axis, bool log, DType out,
                 const std::function<std::vector<float>(const std::vector<float>&)>& row = nullptr) {
  const auto& sh = x.shape();
  int64_t outer = 1, inner = 1, n = sh[axis];
  for (int64_t d = 0; d < axis; ++d) outer *= sh[d];
  for (size_t d = axis + 1; d < sh.size(); ++d) inner *= sh[d];
  Tensor t = Tensor::empty(out, sh);
  std::vector<float> r(n);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < n; ++j) r[j] = static_cast<float>(x.get((o * n + j) * inner + i));
      std::vector<float> y = row ? row(r) : k_softmax_row(r, log);
      for (int64_t j = 0; j < n; ++j) t.set((o * n + j) * inner + i, round_to_dtype(y[j], out));
    }
  return t;
}

struct NormBugs {
  bool unbiased = false, no_eps = false, swap_wb = false, mean_not_square = false;
};

// layer_norm (b non-empty) or rms_norm over the last axis, two passes in f32.
Tensor k_norm(const Tensor& x, const Tensor& w, const Tensor* b, float eps, DType out, NormBugs bug = {}) {
  const int64_t n = x.shape().back(), rows = x.numel() / n;
  Tensor t = Tensor::empty(out, x.shape());
  std::vector<float> r(n), sq(n);
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t j = 0; j < n; ++j) r[j] = static_cast<float>(x.get(row * n + j));
    float mu = 0;
    if (b) mu = lane_sum(r) / static_cast<float>(n);
    for (int64_t j = 0; j < n; ++j) sq[j] = bug.mean_not_square ? r[j] : (r[j] - mu) * (r[j] - mu);
    const float var = lane_sum(sq) / static_cast<float>(bug.unbiased ? n - 1 : n);
    const float rs = 1.0f / std::sqrt(var + (bug.no_eps ? 0.0f : eps));
    for (int64_t j = 0; j < n; ++j) {
      float wj = static_cast<float>(w.get(j)), bj = b ? static_cast<float>(b->get(j)) : 0.0f;
      if (bug.swap_wb) std::swap(wj, bj);
      const float y = (r[j] - mu) * rs * wj + bj;
      t.set(row * n + j, round_to_dtype(y, out));
    }
  }
  return t;
}

// ---- random inputs -----------------------------------------------------------

std::vector<double> uniform(size_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = d(g);
  return v;
}

// Magnitudes log-uniform over [1e-6, 1e6] with random signs, plus extremes.
std::vector<double> wide(size_t n, uint64_t seed, bool positive = false) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> e(-6, 6);
  std::vector<double> v(n);
  for (double& x : v) x = std::pow(10.0, e(g)) * ((positive || (g() & 1)) ? 1 : -1);
  const double extremes[] = {0.0,  -0.0,  1e-40, -1e-40, 1e-30, 0.5,    1.0,  -1.0,  2.0,  10.0,  -10.0, 20.0, -20.0,
                             80.0, -80.0, 88.5,  -88.5,  100.0, -100.0, 1e30, -1e30, 3e38, -3e38, kInf,  -kInf};
  size_t k = 0;
  for (double x : extremes)
    if (!positive || !std::signbit(x)) v[k++] = x;
  return v;
}

// ---- binary ops and broadcasting ------------------------------------------------

const char* kBinary[] = {"add", "sub", "mul", "div", "max", "min", "pow"};

float k_binary(const std::string& fn, float a, float b) {
  if (fn == "add") return a + b;
  if (fn == "sub") return a - b;
  if (fn == "mul") return a * b;
  if (fn == "div") return a / b;
  if (fn == "max") return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
  if (fn == "min") return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
  if (fn == "pow") return std::pow(a, b);
  ADD_FAILURE() << fn;
  return 0;
}

TEST(OraclePointwise, BinaryOpsBroadcastLikeNumpyAndAcceptF32Kernels) {
  // [4,1,8] op [3,1] -> [4,3,8]: out[i,j,k] = a[i,0,k] op b[j,0].
  for (DType dt : kStorage)
    for (const char* fn : kBinary) {
      SCOPED_TRACE(std::string(fn) + " " + std::string(dtype_name(dt)));
      const bool pw = std::string(fn) == "pow";
      Tensor a = make(dt, {4, 1, 8}, uniform(32, pw ? 0.1 : -4, 4, 1));
      Tensor b = make(dt, {3, 1}, uniform(3, pw ? -3 : 0.5, 3, 2));
      Expected e = eval_binary(fn, ty("4x1x8", dt), ty("3x1", dt), ty("4x3x8", dt), a, b);
      ASSERT_EQ(e.shape, (std::vector<int64_t>{4, 3, 8}));
      EXPECT_EQ(e.dtype, dt);
      Tensor got = Tensor::empty(dt, {4, 3, 8});
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j)
          for (int k = 0; k < 8; ++k) {
            const int o = (i * 3 + j) * 8 + k;
            const float av = static_cast<float>(a.get(i * 8 + k)), bv = static_cast<float>(b.get(j));
            got.set(o, round_to_dtype(k_binary(fn, av, bv), dt));
            EXPECT_NEAR(e.value[o], k_binary(fn, av, bv), 1e-5 * std::fabs(e.value[o]) + 1e-30) << o;
          }
      Comparison c = compare(e, got);
      EXPECT_TRUE(c.pass) << c.first_failure;
      // Tight: max/min are exact; +-*/ within a few roundings; pow a few ulp.
      const double u = dtype_unit_roundoff(dt);
      const double limit = std::string(fn) == "max" || std::string(fn) == "min" ? 0.0
                           : pw                                                 ? 18 * kU32 + u
                                                                                : 2 * kU32 + u;
      EXPECT_LE(max_rel_tol(e), limit * 1.01);
      // A few percent off fails.
      Tensor off = Tensor::empty(dt, {4, 3, 8});
      for (int64_t i = 0; i < 96; ++i) off.set(i, got.get(i) * 1.03 + 1e-3);
      EXPECT_FALSE(compare(e, off).pass);
    }
}

TEST(OraclePointwise, BroadcastAlongTheWrongAxisFails) {
  // [3,3] + [3]: b runs along the last axis. A kernel that adds b[i] to row i is wrong.
  Tensor a = make(DType::F32, {3, 3}, uniform(9, -1, 1, 3));
  Tensor b = make(DType::F32, {3}, {10, 20, 30});
  Expected e = eval_binary("add", "tensor<3x3xf32>", "tensor<3xf32>", "tensor<3x3xf32>", a, b);
  Tensor right = Tensor::empty(DType::F32, {3, 3}), wrong = Tensor::empty(DType::F32, {3, 3});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      right.set(i * 3 + j, static_cast<float>(a.get(i * 3 + j)) + static_cast<float>(b.get(j)));
      wrong.set(i * 3 + j, static_cast<float>(a.get(i * 3 + j)) + static_cast<float>(b.get(i)));
    }
  EXPECT_TRUE(compare(e, right).pass);
  Comparison c = compare(e, wrong);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.failures, 6);  // the diagonal is the same either way
}

TEST(OraclePointwise, RankZeroOperandsAndConstants) {
  Tensor s = make(DType::F32, {}, {2.5});
  Tensor x = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Expected e = eval_binary("mul", "tensor<f32>", "tensor<2x3xf32>", "tensor<2x3xf32>", s, x);
  EXPECT_EQ(plain(e.value), (std::vector<double>{2.5, 5, 7.5, 10, 12.5, 15}));
  Expected z = eval_binary("sub", "tensor<f32>", "tensor<f32>", "tensor<f32>", s, make(DType::F32, {}, {0.5}));
  EXPECT_TRUE(z.shape.empty());
  EXPECT_EQ(plain(z.value), (std::vector<double>{2.0}));

  // x * 2.0 through a rank-0 constant; the constant splats to any shape.
  Expected c = eval("%x: tensor<2x3xf32>",
                    "  %c = tessera.constant {value = 2.0} : () -> tensor<f32>\n"
                    "  %r = tessera.mul %x, %c : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>",
                    "tensor<2x3xf32>", {x});
  EXPECT_EQ(plain(c.value), (std::vector<double>{2, 4, 6, 8, 10, 12}));
  Expected splat = eval("", "  %r = tessera.constant {value = 0.1} : () -> tensor<2x2xbf16>", "tensor<2x2xbf16>", {});
  ASSERT_EQ(splat.value.size(), 4u);
  Tensor t = to_tensor(splat);
  EXPECT_EQ(t.get(3), round_to_dtype(0.1, DType::BF16));
  EXPECT_TRUE(compare(splat, t).pass);
  EXPECT_FALSE(compare(splat, make(DType::BF16, {2, 2}, {0.1, 0.1, 0.1, 0.11})).pass);
  // An integer literal is a number too; one that overflows f16 is inf.
  Expected big = eval("", "  %r = tessera.constant {value = 100000} : () -> tensor<f16>", "tensor<f16>", {});
  EXPECT_EQ(big.value[0], kInf);
}

TEST(OraclePointwise, MaxMinPropagateNaNAndPowFollowsStdPow) {
  Tensor a = make(DType::F32, {4}, {kNaN, 1, -kInf, 3});
  Tensor b = make(DType::F32, {4}, {1, kNaN, 0, kNaN});
  for (const char* fn : {"max", "min"}) {
    Expected e = eval_binary(fn, "tensor<4xf32>", "tensor<4xf32>", "tensor<4xf32>", a, b);
    EXPECT_TRUE(std::isnan(e.value[0]) && std::isnan(e.value[1]) && std::isnan(e.value[3]));
    EXPECT_EQ(e.value[2], std::string(fn) == "max" ? 0.0 : -kInf);
    EXPECT_FALSE(compare(e, k_map(a, DType::F32, [&](float) { return 0.0f; })).pass);
    // fmaxf/fminf drop the NaN: wrong.
    Tensor dropped = Tensor::empty(DType::F32, {4});
    for (int i = 0; i < 4; ++i)
      dropped.set(i, std::string(fn) == "max" ? std::fmax(a.get(i), b.get(i)) : std::fmin(a.get(i), b.get(i)));
    EXPECT_FALSE(compare(e, dropped).pass);
    Tensor right = Tensor::empty(DType::F32, {4});
    for (int i = 0; i < 4; ++i) right.set(i, k_binary(fn, static_cast<float>(a.get(i)), static_cast<float>(b.get(i))));
    EXPECT_TRUE(compare(e, right).pass);
  }
  Tensor base = make(DType::F32, {5}, {-2, -2, 0, 0, kNaN});
  Tensor ex = make(DType::F32, {5}, {3, 0.5, -1, 0, 0});
  Expected p = eval_binary("pow", "tensor<5xf32>", "tensor<5xf32>", "tensor<5xf32>", base, ex);
  EXPECT_EQ(p.value[0], -8);
  EXPECT_TRUE(std::isnan(p.value[1]));
  EXPECT_EQ(p.value[2], kInf);
  EXPECT_EQ(p.value[3], 1);
  EXPECT_EQ(p.value[4], 1);  // pow(NaN, 0) = 1
  Tensor got = Tensor::empty(DType::F32, {5});
  for (int i = 0; i < 5; ++i) got.set(i, std::pow(static_cast<float>(base.get(i)), static_cast<float>(ex.get(i))));
  EXPECT_TRUE(compare(p, got).pass);
}

// ---- unary ops -------------------------------------------------------------------

struct UnaryCase {
  const char* op;     // tessera op name
  const char* attrs;  // attribute text
  const char* kfn;    // k_unary function
  bool positive;      // domain: positive inputs only
};

const UnaryCase kUnary[] = {
    {"neg", "", "neg", false},
    {"abs", "", "abs", false},
    {"relu", "", "relu", false},
    {"exp", "", "exp", false},
    {"log", "", "log", true},
    {"sqrt", "", "sqrt", true},
    {"rsqrt", "", "rsqrt", true},
    {"tanh", "", "tanh", false},
    {"sigmoid", "", "sigmoid", false},
    {"silu", "", "silu", false},
    {"gelu", "", "gelu", false},
    {"gelu", "{approximate = \"none\"}", "gelu", false},
    {"gelu", "{approximate = \"tanh\"}", "gelu_tanh", false},
};

TEST(OraclePointwise, UnaryOpsAcceptF32LibmKernelsOnWideInputs) {
  for (DType dt : kStorage)
    for (const UnaryCase& uc : kUnary) {
      SCOPED_TRACE(std::string(uc.op) + " " + uc.attrs + " " + std::string(dtype_name(dt)));
      // Wide magnitudes and extremes, plus a dense band around 0 where the
      // composite functions cancel.
      std::vector<double> v = wide(4096, 11, uc.positive);
      std::vector<double> band = uniform(4096, uc.positive ? 0 : -12, 12, 12);
      v.insert(v.end(), band.begin(), band.end());
      Tensor x = make(dt, {2, 4096}, v);
      Expected e = eval_unary(uc.op, uc.attrs, ty("2x4096", dt), x);
      Comparison c = compare(e, k_map(x, dt, [&](float f) { return k_unary(uc.kfn, f); }));
      EXPECT_TRUE(c.pass) << c.first_failure << " worst ratio " << c.worst_ratio;
      const std::string op = uc.op;
      if (op == "neg" || op == "abs" || op == "relu")
        EXPECT_EQ(max_rel_tol(e), 0.0);    // exact ops on exact inputs: tolerance 0
      else EXPECT_GT(c.worst_ratio, 0.0);  // the kernel's rounding is visible to the check
    }
}

TEST(OraclePointwise, EquivalentF32FormulasPassToo) {
  // silu as x*(0.5 + 0.5 tanh(x/2)) cancels for x << 0; gelu through erfc does not.
  Tensor x = make(DType::F32, {8192}, uniform(8192, -30, 30, 21));
  Expected silu = eval_unary("silu", "", "tensor<8192xf32>", x);
  Comparison a = compare(silu, k_map(x, DType::F32, [](float f) { return f * (0.5f + 0.5f * std::tanh(0.5f * f)); }));
  EXPECT_TRUE(a.pass) << a.first_failure;
  Expected gelu = eval_unary("gelu", "", "tensor<8192xf32>", x);
  Comparison b = compare(gelu, k_map(x, DType::F32, [](float f) { return 0.5f * f * std::erfc(-f * 0.70710678f); }));
  EXPECT_TRUE(b.pass) << b.first_failure;
  Expected sig = eval_unary("sigmoid", "", "tensor<8192xf32>", x);
  Comparison s = compare(sig, k_map(x, DType::F32, [](float f) { return std::exp(-std::log1p(std::exp(-f))); }));
  EXPECT_TRUE(s.pass) << s.first_failure;
}

TEST(OraclePointwise, ExpOff64UlpFailsButOneUlpPasses) {
  // Results from 4e-31 to 5e34: above ~1e-32 the check is relative (below,
  // the smallest-normal term of T(M) makes it absolute, by design).
  Tensor x = make(DType::F32, {4096}, uniform(4096, -70, 80, 31));
  Expected e = eval_unary("exp", "", "tensor<4096xf32>", x);
  Tensor one = k_map(x, DType::F32, [](float f) { return std::nextafter(std::exp(f), kInfF); });
  EXPECT_TRUE(compare(e, one).pass);
  Tensor off = k_map(x, DType::F32, [](float f) {
    float y = std::exp(f);
    for (int i = 0; i < 64; ++i) y = std::nextafter(y, kInfF);
    return y;
  });
  Comparison c = compare(e, off);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.failures, 4096);
}

TEST(OraclePointwise, GeluTanhFormIsNotTheErfForm) {
  // The two forms differ by up to ~1e-3 around |x| ~ 2: far beyond the tolerance.
  Tensor x = make(DType::F32, {2048}, uniform(2048, -4, 4, 41));
  Expected erf_form = eval_unary("gelu", "", "tensor<2048xf32>", x);
  Expected tanh_form = eval_unary("gelu", "{approximate = \"tanh\"}", "tensor<2048xf32>", x);
  Tensor k_tanh = k_map(x, DType::F32, [](float f) { return k_unary("gelu_tanh", f); });
  Tensor k_erf = k_map(x, DType::F32, [](float f) { return k_unary("gelu", f); });
  EXPECT_TRUE(compare(tanh_form, k_tanh).pass);
  EXPECT_TRUE(compare(erf_form, k_erf).pass);
  Comparison c1 = compare(erf_form, k_tanh), c2 = compare(tanh_form, k_erf);
  EXPECT_FALSE(c1.pass);
  EXPECT_FALSE(c2.pass);
  EXPECT_GT(c1.failures, 1000) << "most of [-4, 4] separates the forms";
}

TEST(OraclePointwise, OutputsOffByAFewPercentFail) {
  Tensor x = make(DType::F32, {1024}, uniform(1024, -5, 5, 51));
  for (const UnaryCase& uc : kUnary) {
    if (uc.positive) continue;
    SCOPED_TRACE(uc.op);
    Expected e = eval_unary(uc.op, uc.attrs, "tensor<1024xf32>", x);
    Comparison c = compare(e, k_map(x, DType::F32, [&](float f) { return k_unary(uc.kfn, f) * 1.03f + 1e-4f; }));
    EXPECT_FALSE(c.pass);
    EXPECT_GT(c.failures, 500);
  }
}

TEST(OraclePointwise, ReluOfNaNIsNaN) {
  Tensor x = make(DType::F32, {3}, {kNaN, -1, 2});
  Expected e = eval_unary("relu", "", "tensor<3xf32>", x);
  EXPECT_TRUE(std::isnan(e.value[0]));
  EXPECT_TRUE(compare(e, make(DType::F32, {3}, {kNaN, 0, 2})).pass);
  EXPECT_FALSE(compare(e, make(DType::F32, {3}, {0, 0, 2})).pass);  // max(x, 0) with maxps drops the NaN
}

// The neighbour of r (an f16 or bf16 normal number) one step toward zero.
double toward_zero(double r, DType t) {
  int e = 0;
  const double m = std::frexp(std::fabs(r), &e);
  double ulp = std::ldexp(1.0, e - (t == DType::F16 ? 11 : 8));
  if (m == 0.5) ulp /= 2;  // a power of two: the binade below is twice as fine
  return std::copysign(std::fabs(r) - ulp, r);
}

TEST(OraclePointwise, CastRoundsToNearestEven) {
  std::vector<double> v = uniform(4096, -1000, 1000, 61);
  Tensor x = make(DType::F32, {4096}, v);
  for (DType to : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtype_name(to));
    Expected e = eval("%x: tensor<4096xf32>", "  %r = tessera.cast %x : tensor<4096xf32> -> " + ty("4096", to),
                      ty("4096", to), {x});
    EXPECT_EQ(e.dtype, to);
    EXPECT_TRUE(compare(e, to_tensor(e)).pass);
    // Truncation toward zero is wrong on about half of the values.
    Tensor trunc = Tensor::empty(to, {4096});
    for (int64_t i = 0; i < 4096; ++i) {
      const double r = round_to_dtype(x.get(i), to);
      trunc.set(i, std::fabs(r) > std::fabs(x.get(i)) ? toward_zero(r, to) : r);
    }
    Comparison c = compare(e, trunc);
    EXPECT_FALSE(c.pass);
    EXPECT_GT(c.failures, 1000);
  }
  // Widening is exact.
  Tensor h = make(DType::BF16, {3}, {1.5, -3.25, 1e-20});
  Expected w = eval("%x: tensor<3xbf16>", "  %r = tessera.cast %x : tensor<3xbf16> -> tensor<3xf64>", "tensor<3xf64>",
                    {h});
  EXPECT_EQ(plain(w.value), values(h));
  EXPECT_TRUE(compare(w, make(DType::F64, {3}, values(h))).pass);
}

// ---- chains: carried tolerance, fused and unfused --------------------------------

TEST(OraclePointwise, ChainsAcceptFusedAndUnfusedKernels) {
  // r = sigmoid(exp(x) * a - 1) with bf16 intermediates: a fused kernel keeps
  // them in f32, an unfused one rounds each to bf16. Both must pass.
  const std::string t = "tensor<64x64xbf16>", tb = "tensor<64xbf16>";
  const std::string body = "  %e = tessera.exp %x : " + t + " -> " + t + "\n  %m = tessera.mul %e, %a : (" + t + ", " +
                           tb + ") -> " + t + "\n  %c = tessera.constant {value = 1.0} : () -> tensor<bf16>\n" +
                           "  %s = tessera.sub %m, %c : (" + t + ", tensor<bf16>) -> " + t +
                           "\n  %r = tessera.sigmoid %s : " + t + " -> " + t;
  Tensor x = make(DType::BF16, {64, 64}, uniform(4096, -3, 3, 71));
  Tensor a = make(DType::BF16, {64}, uniform(64, -2, 2, 72));
  Expected e = eval("%x: " + t + ", %a: " + tb, body, t, {x, a});
  auto run = [&](bool fused, bool bug, float one = 1.0f) {
    Tensor out = Tensor::empty(DType::BF16, {64, 64});
    auto rd = [&](float v) { return fused ? v : static_cast<float>(round_to_dtype(v, DType::BF16)); };
    for (int i = 0; i < 64; ++i)
      for (int j = 0; j < 64; ++j) {
        float ev = rd(std::exp(static_cast<float>(x.get(i * 64 + j))));
        float mv = rd(ev * static_cast<float>(a.get(bug ? i : j)));
        float sv = rd(mv - one);
        out.set(i * 64 + j, round_to_dtype(1.0f / (1.0f + std::exp(-sv)), DType::BF16));
      }
    return out;
  };
  Comparison fused = compare(e, run(true, false)), unfused = compare(e, run(false, false));
  EXPECT_TRUE(fused.pass) << fused.first_failure;
  EXPECT_TRUE(unfused.pass) << unfused.first_failure;
  EXPECT_FALSE(compare(e, run(true, true)).pass);         // a broadcast along the wrong axis
  EXPECT_FALSE(compare(e, run(true, false, 1.1f)).pass);  // a constant off by 10%
  // The carried bf16 roundings widen the tolerance, but it stays a few bf16 ulps.
  double worst = 0, sum = 0;  // tol / |value| where |value| > 0.05
  int cnt = 0;
  for (size_t i = 0; i < e.value.size(); ++i)
    if (std::fabs(e.value[i]) > 0.05) {
      worst = std::max(worst, e.tolerance[i] / std::fabs(e.value[i]));
      sum += e.tolerance[i] / std::fabs(e.value[i]);
      ++cnt;
    }
  EXPECT_LT(worst, 20 * 0x1p-9);
  EXPECT_LT(sum / cnt, 8 * 0x1p-9);
  // ...and the unfused kernel's real error uses a good part of it: not loose.
  EXPECT_GT(unfused.worst_ratio, 0.25);
}

TEST(OraclePointwise, CarriedTolerancePropagatesThroughDerivativeBounds) {
  // exp: exactly sup over [x - t, x + t].
  const double te = unary_tolerance(Pointwise::Exp, 1.0, 0.1, std::exp(1.0), DType::F64, DType::F64);
  EXPECT_GE(te, std::exp(1.1) - std::exp(1.0));
  EXPECT_LT(te, (std::exp(1.1) - std::exp(1.0)) * (1 + 1e-12) + 1e-12);
  // log: unbounded once the interval reaches 0; steeper side otherwise.
  EXPECT_EQ(unary_tolerance(Pointwise::Log, 0.5, 0.5, std::log(0.5), DType::F32, DType::F32), kInf);
  EXPECT_GE(unary_tolerance(Pointwise::Log, 0.5, 0.25, std::log(0.5), DType::F32, DType::F32), std::log(2.0));
  // div: |b| <= tb is unbounded; 0 * inf never makes a NaN tolerance.
  EXPECT_EQ(binary_tolerance(Pointwise::Div, 1, 0, 0.1, 0.2, 10, DType::F32, DType::F32), kInf);
  EXPECT_EQ(binary_tolerance(Pointwise::Mul, 0, kInf, 0, 0, 0, DType::F32, DType::F32), kInf);
  // Non-finite values: tolerance 0.
  EXPECT_EQ(unary_tolerance(Pointwise::Exp, 1000, 1, kInf, DType::F32, DType::F32), 0.0);
  // Exact ops with exact inputs: 0; with a carried t: t plus a rounding.
  EXPECT_EQ(binary_tolerance(Pointwise::Max, 1, 0, 2, 0, 2, DType::BF16, DType::BF16), 0.0);
  const double tm = binary_tolerance(Pointwise::Max, 1, 0.01, 2, 0.02, 2, DType::BF16, DType::BF16);
  EXPECT_GE(tm, 0.02 + 0x1p-9 * 2);
  EXPECT_LT(tm, 0.03);
}

// ---- softmax and log_softmax -------------------------------------------------------

std::string softmax_body(bool log, const std::string& t, const std::string& attrs = "") {
  return std::string("  %r = tessera.") + (log ? "log_softmax" : "softmax") + " %x " + attrs + " : " + t + " -> " + t;
}

TEST(OracleSoftmax, F32KernelsPassOnLargeRowsAndEveryAxis) {
  struct Case {
    std::vector<int64_t> shape;
    std::string sh, attrs;
    int64_t axis;
    double lo, hi;
  };
  const Case cases[] = {
      {{8, 4096}, "8x4096", "", 1, -8, 8},          {{2, 100000}, "2x100000", "{axis = -1}", 1, -20, 20},
      {{3, 5, 7}, "3x5x7", "{axis = 1}", 1, -5, 5}, {{3, 5, 7}, "3x5x7", "{axis = -3}", 0, -5, 5},
      {{4, 512}, "4x512", "", 1, -1e4, 1e4},    // a few elements dominate
      {{4, 512}, "4x512", "", 1, -3e38, 3e38},  // extreme magnitudes
  };
  for (const Case& c : cases)
    for (DType dt : kStorage)
      for (bool log : {false, true}) {
        if (dt == DType::F16 && c.hi > 1e4) continue;  // beyond f16's range: all inf, tested below
        SCOPED_TRACE(c.sh + " " + c.attrs + " " + std::string(dtype_name(dt)) + (log ? " log" : ""));
        int64_t n = 1;
        for (int64_t d : c.shape) n *= d;
        Tensor x = make(dt, c.shape, uniform(n, c.lo, c.hi, 81 + n));
        Expected e = eval("%x: " + ty(c.sh, dt), softmax_body(log, ty(c.sh, dt), c.attrs), ty(c.sh, dt), {x});
        Comparison cmp = compare(e, k_softmax(x, c.axis, log, dt));
        EXPECT_TRUE(cmp.pass) << cmp.first_failure;
        for (double v : e.value) EXPECT_TRUE(std::isfinite(v));
        if (!log && dt == DType::F32 && c.hi < 100) {
          EXPECT_LT(max_rel_tol(e), 8 * std::sqrt(static_cast<double>(c.shape[c.axis])) * kU32 + 120 * kU32);
        }
      }
}

TEST(OracleSoftmax, RowsSumToOneAndMatchHandValues) {
  Tensor x = make(DType::F64, {2, 3}, {0, std::log(2.0), std::log(3.0), 1, 1, 1});
  Expected s = eval("%x: tensor<2x3xf64>", softmax_body(false, "tensor<2x3xf64>"), "tensor<2x3xf64>", {x});
  EXPECT_NEAR(s.value[0], 1.0 / 6, 1e-15);
  EXPECT_NEAR(s.value[2], 0.5, 1e-15);
  EXPECT_NEAR(s.value[4], 1.0 / 3, 1e-15);
  Expected l = eval("%x: tensor<2x3xf64>", softmax_body(true, "tensor<2x3xf64>"), "tensor<2x3xf64>", {x});
  EXPECT_NEAR(l.value[1], std::log(2.0 / 6), 1e-15);
  EXPECT_NEAR(l.value[5], -std::log(3.0), 1e-15);
  // Axis 0 of the same tensor: columns.
  Expected c = eval("%x: tensor<2x3xf64>", softmax_body(false, "tensor<2x3xf64>", "{axis = 0}"), "tensor<2x3xf64>",
                    {x});
  EXPECT_NEAR(c.value[0] + c.value[3], 1.0, 1e-15);
  EXPECT_NEAR(c.value[0], 1 / (1 + std::exp(1.0)), 1e-15);
}

TEST(OracleSoftmax, WrongKernelsFail) {
  Tensor x = make(DType::F32, {8, 4096}, uniform(8 * 4096, -8, 8, 91));
  const std::string t = "tensor<8x4096xf32>";
  Expected s = eval("%x: " + t, softmax_body(false, t), t, {x});
  Expected l = eval("%x: " + t, softmax_body(true, t), t, {x});
  auto no_div = [](const std::vector<float>& r) {
    float m = -kInfF;
    for (float v : r) m = std::max(m, v);
    std::vector<float> y(r.size());
    for (size_t j = 0; j < r.size(); ++j) y[j] = std::exp(r[j] - m);
    return y;
  };
  auto no_log_s = [](const std::vector<float>& r) {
    float m = -kInfF;
    for (float v : r) m = std::max(m, v);
    std::vector<float> y(r.size());
    for (size_t j = 0; j < r.size(); ++j) y[j] = r[j] - m;
    return y;
  };
  EXPECT_FALSE(compare(s, k_softmax(x, 1, false, DType::F32, no_div)).pass);
  EXPECT_FALSE(compare(l, k_softmax(x, 1, true, DType::F32, no_log_s)).pass);
  // Along the wrong axis (a [8,4096] tensor normalized per column).
  Tensor t2 = make(DType::F32, {64, 64}, uniform(4096, -8, 8, 92));
  Expected s2 = eval("%x: tensor<64x64xf32>", softmax_body(false, "tensor<64x64xf32>"), "tensor<64x64xf32>", {t2});
  EXPECT_FALSE(compare(s2, k_softmax(t2, 0, false, DType::F32)).pass);
  // A few percent off.
  Tensor good = k_softmax(x, 1, false, DType::F32);
  Tensor off = Tensor::empty(DType::F32, {8, 4096});
  for (int64_t i = 0; i < good.numel(); ++i) off.set(i, good.get(i) * 1.02);
  EXPECT_FALSE(compare(s, off).pass);
  // log_softmax off by 1e-3 absolute (a few percent of a small relative value).
  Tensor lg = k_softmax(x, 1, true, DType::F32);
  for (int64_t i = 0; i < lg.numel(); ++i) off.set(i, lg.get(i) + 1e-3);
  EXPECT_FALSE(compare(l, off).pass);
}

TEST(OracleSoftmax, NaNAndInfinityRows) {
  // Rows: a NaN; all -inf; a +inf; some -inf among finite values; extreme finite.
  std::vector<double> v = {1, kNaN, 2, 3,     -kInf, -kInf, -kInf, -kInf, 1, kInf,
                           2, 3,    1, -kInf, 2,     -kInf, -3e38, 3e38,  0, 1};
  Tensor x = make(DType::F32, {5, 4}, v);
  Expected s = eval("%x: tensor<5x4xf32>", softmax_body(false, "tensor<5x4xf32>"), "tensor<5x4xf32>", {x});
  Expected l = eval("%x: tensor<5x4xf32>", softmax_body(true, "tensor<5x4xf32>"), "tensor<5x4xf32>", {x});
  for (int j = 0; j < 12; ++j) {
    EXPECT_TRUE(std::isnan(s.value[j])) << j;
    EXPECT_TRUE(std::isnan(l.value[j])) << j;
  }
  EXPECT_EQ(s.value[13], 0.0);
  EXPECT_EQ(l.value[13], -kInf);
  EXPECT_NEAR(s.value[12] + s.value[14], 1.0, 1e-15);
  for (int j = 16; j < 20; ++j) EXPECT_TRUE(std::isfinite(l.value[j])) << j;  // finite inputs: finite log_softmax
  EXPECT_EQ(s.value[17], 1.0);
  EXPECT_TRUE(compare(s, k_softmax(x, 1, false, DType::F32)).pass);
  EXPECT_TRUE(compare(l, k_softmax(x, 1, true, DType::F32)).pass);
  // A kernel that returns 0 (or drops the NaN) for the NaN row fails.
  Tensor bad = k_softmax(x, 1, false, DType::F32);
  bad.set(0, 0.0);
  EXPECT_FALSE(compare(s, bad).pass);
}

// ---- layer_norm and rms_norm ------------------------------------------------------------

struct NormInputs {
  Tensor x, w, b;
};

NormInputs norm_inputs(DType dt, int64_t rows, int64_t n, double mean, double spread, uint64_t seed) {
  std::vector<double> xv = uniform(rows * n, mean - spread, mean + spread, seed);
  return {make(dt, {rows, n}, xv), make(dt, {n}, uniform(n, 0.5, 1.5, seed + 1)),
          make(dt, {n}, uniform(n, -0.5, 0.5, seed + 2))};
}

Expected eval_norm(bool rms, const NormInputs& in, const std::string& attrs = "") {
  const DType dt = in.x.dtype();
  const std::string sh = std::to_string(in.x.shape()[0]) + "x" + std::to_string(in.x.shape()[1]);
  const std::string t = ty(sh, dt), tw = ty(std::to_string(in.x.shape()[1]), dt);
  if (rms)
    return eval("%x: " + t + ", %w: " + tw,
                "  %r = tessera.rms_norm %x, %w " + attrs + " : (" + t + ", " + tw + ") -> " + t, t, {in.x, in.w});
  return eval("%x: " + t + ", %w: " + tw + ", %b: " + tw,
              "  %r = tessera.layer_norm %x, %w, %b " + attrs + " : (" + t + ", " + tw + ", " + tw + ") -> " + t, t,
              {in.x, in.w, in.b});
}

TEST(OracleNorm, TwoPassF32KernelsPass) {
  struct Case {
    int64_t rows, n;
    double mean, spread;
  };
  const Case cases[] = {{16, 64, 0, 1},    {4, 4096, 0, 3},   {1, 100000, 0, 1}, {8, 1024, 100, 1},
                        {8, 256, 0, 0.01}, {4, 512, 0, 1e15}, {4, 512, 0, 1e-15}};
  for (const Case& c : cases)
    for (DType dt : kStorage)
      for (bool rms : {false, true}) {
        if (dt == DType::F16 && (c.spread > 1e4 || c.spread < 1e-4)) continue;  // outside f16's range
        SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.n) + " mean " + std::to_string(c.mean) +
                     " spread " + std::to_string(c.spread) + " " + std::string(dtype_name(dt)) + (rms ? " rms" : ""));
        NormInputs in = norm_inputs(dt, c.rows, c.n, c.mean, c.spread, 100 + c.n);
        Expected e = eval_norm(rms, in);
        Comparison cmp = compare(e, k_norm(in.x, in.w, rms ? nullptr : &in.b, rms ? 1e-6f : 1e-5f, dt));
        EXPECT_TRUE(cmp.pass) << cmp.first_failure;
        EXPECT_GT(cmp.worst_ratio, 0.0);
      }
}

TEST(OracleNorm, HandValuesAndEps) {
  // One row [1, 2, 3, 4]: mean 2.5, biased var 1.25.
  NormInputs in{make(DType::F64, {1, 4}, {1, 2, 3, 4}), make(DType::F64, {4}, {1, 1, 2, 1}),
                make(DType::F64, {4}, {0, 0, 0, 10})};
  Expected ln = eval_norm(false, in, "{eps = 0.75}");
  EXPECT_NEAR(ln.value[0], -1.5 / std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(ln.value[2], 2 * 0.5 / std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(ln.value[3], 1.5 / std::sqrt(2.0) + 10, 1e-14);
  Expected def = eval_norm(false, in);
  EXPECT_NEAR(def.value[0], -1.5 / std::sqrt(1.25 + 1e-5), 1e-15);
  Expected rms = eval_norm(true, in);  // mean of squares 7.5, eps 1e-6
  EXPECT_NEAR(rms.value[1], 2 / std::sqrt(7.5 + 1e-6), 1e-15);
  Expected rms_int = eval_norm(true, in, "{eps = 1}");  // an integer eps is a number too
  EXPECT_NEAR(rms_int.value[3], 4 / std::sqrt(8.5), 1e-15);
}

TEST(OracleNorm, WrongKernelsFail) {
  for (DType dt : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    for (int64_t n : {64, 4096}) {
      SCOPED_TRACE(n);
      NormInputs in = norm_inputs(dt, 8, n, 0, 1, 200 + n);
      Expected e = eval_norm(false, in);
      if (dt == DType::F32) {  // 1/(n-1) vs 1/n is 0.012% at n = 4096: below bf16's resolution
        NormBugs unbiased;
        unbiased.unbiased = true;
        EXPECT_FALSE(compare(e, k_norm(in.x, in.w, &in.b, 1e-5f, dt, unbiased)).pass);
      }
      NormBugs swap;
      swap.swap_wb = true;
      EXPECT_FALSE(compare(e, k_norm(in.x, in.w, &in.b, 1e-5f, dt, swap)).pass);
    }
    // eps matters when the variance is small: std 0.01 -> var ~3e-5 vs eps 1e-5.
    NormInputs small = norm_inputs(dt, 8, 256, 0, 0.01, 300);
    Expected es = eval_norm(false, small);
    EXPECT_TRUE(compare(es, k_norm(small.x, small.w, &small.b, 1e-5f, dt)).pass);
    NormBugs no_eps;
    no_eps.no_eps = true;
    EXPECT_FALSE(compare(es, k_norm(small.x, small.w, &small.b, 1e-5f, dt, no_eps)).pass);
    // rms_norm with mean(x) in place of mean(x^2), on positive inputs.
    NormInputs pos = norm_inputs(dt, 8, 512, 1.25, 0.75, 400);
    Expected er = eval_norm(true, pos);
    EXPECT_TRUE(compare(er, k_norm(pos.x, pos.w, nullptr, 1e-6f, dt)).pass);
    NormBugs mean;
    mean.mean_not_square = true;
    EXPECT_FALSE(compare(er, k_norm(pos.x, pos.w, nullptr, 1e-6f, dt, mean)).pass);
    // A few percent off.
    Tensor good = k_norm(pos.x, pos.w, nullptr, 1e-6f, dt);
    Tensor off = Tensor::empty(dt, good.shape());
    for (int64_t i = 0; i < good.numel(); ++i) off.set(i, round_to_dtype(good.get(i) * 1.03, dt));
    EXPECT_FALSE(compare(er, off).pass);
  }
}

TEST(OracleNorm, NaNAndInfinityRows) {
  NormInputs in{make(DType::F32, {3, 4}, {1, kNaN, 3, 4, 1, kInf, 3, 4, 1, 2, 3, 4}),
                make(DType::F32, {4}, {1, 1, 1, 1}), make(DType::F32, {4}, {0, 0, 0, 0})};
  Expected ln = eval_norm(false, in);
  for (int j = 0; j < 8; ++j) EXPECT_TRUE(std::isnan(ln.value[j])) << j;
  for (int j = 8; j < 12; ++j) EXPECT_TRUE(std::isfinite(ln.value[j])) << j;
  EXPECT_TRUE(compare(ln, k_norm(in.x, in.w, &in.b, 1e-5f, DType::F32)).pass);
  Expected rms = eval_norm(true, in);
  EXPECT_TRUE(std::isnan(rms.value[1]));
  EXPECT_TRUE(std::isnan(rms.value[5]));  // inf / inf
  EXPECT_EQ(rms.value[4], 0.0);           // 1 / inf
  EXPECT_EQ(rms.tolerance[4], 0.0);
  EXPECT_TRUE(compare(rms, k_norm(in.x, in.w, nullptr, 1e-6f, DType::F32)).pass);
}

// ---- bad input: E802 ---------------------------------------------------------------------

TEST(OraclePointwise, MalformedOpsAreE802) {
  Tensor a = make(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor b = make(DType::F32, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor h = make(DType::BF16, {3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor v = make(DType::F32, {2}, {1, 2});
  // Incompatible broadcast shapes.
  std::string msg = expect_error(
      "E802", [&] { eval_binary("add", "tensor<3x2xf32>", "tensor<4x2xf32>", "tensor<4x2xf32>", a, b); });
  EXPECT_NE(msg.find("broadcast"), std::string::npos) << msg;
  // Mismatched dtypes (no implicit promotion).
  expect_error("E802", [&] { eval_binary("mul", "tensor<3x2xf32>", "tensor<3x2xbf16>", "tensor<3x2xf32>", a, h); });
  // Wrong declared result shape or dtype.
  expect_error("E802", [&] { eval_binary("add", "tensor<3x2xf32>", "tensor<2xf32>", "tensor<2x3xf32>", a, v); });
  expect_error("E802", [&] { eval_binary("add", "tensor<3x2xf32>", "tensor<2xf32>", "tensor<3x2xf64>", a, v); });
  expect_error("E802", [&] {
    eval("%x: tensor<3x2xf32>", "  %r = tessera.exp %x : tensor<3x2xf32> -> tensor<6xf32>", "tensor<6xf32>", {a});
  });
  expect_error("E802", [&] {
    eval("%x: tensor<3x2xf32>", "  %r = tessera.softmax %x : tensor<3x2xf32> -> tensor<3xf32>", "tensor<3xf32>", {a});
  });
  // Unknown or bad attributes.
  msg = expect_error("E802", [&] { eval_unary("exp", "{fast = true}", "tensor<3x2xf32>", a); });
  EXPECT_NE(msg.find("fast"), std::string::npos) << msg;
  expect_error("E802", [&] { eval_unary("gelu", "{approximate = \"fast\"}", "tensor<3x2xf32>", a); });
  expect_error("E802", [&] { eval_unary("softmax", "{axes = [1]}", "tensor<3x2xf32>", a); });
  expect_error("E802", [&] { eval_unary("softmax", "{axis = 2}", "tensor<3x2xf32>", a); });
  expect_error("E802", [&] { eval_unary("log_softmax", "{axis = -3}", "tensor<3x2xf32>", a); });
  expect_error("E802", [&] { eval_unary("softmax", "{axis = \"last\"}", "tensor<3x2xf32>", a); });
  expect_error("E802", [&] { eval("", "  %r = tessera.constant : () -> tensor<f32>", "tensor<f32>", {}); });
  expect_error("E802",
               [&] { eval("", "  %r = tessera.constant {value = \"two\"} : () -> tensor<f32>", "tensor<f32>", {}); });
  // Norms: weight of the wrong shape or dtype, unknown attribute, bad eps, missing bias.
  NormInputs in = norm_inputs(DType::F32, 2, 4, 0, 1, 500);
  NormInputs wrong_w = in;
  wrong_w.w = make(DType::F32, {2}, {1, 1});
  expect_error("E802", [&] {
    eval("%x: tensor<2x4xf32>, %w: tensor<2xf32>, %b: tensor<4xf32>",
         "  %r = tessera.layer_norm %x, %w, %b : (tensor<2x4xf32>, tensor<2xf32>, tensor<4xf32>) -> tensor<2x4xf32>",
         "tensor<2x4xf32>", {wrong_w.x, wrong_w.w, wrong_w.b});
  });
  NormInputs bf_w = in;
  bf_w.w = make(DType::BF16, {4}, {1, 1, 1, 1});
  expect_error("E802", [&] {
    eval("%x: tensor<2x4xf32>, %w: tensor<4xbf16>",
         "  %r = tessera.rms_norm %x, %w : (tensor<2x4xf32>, tensor<4xbf16>) -> tensor<2x4xf32>", "tensor<2x4xf32>",
         {bf_w.x, bf_w.w});
  });
  expect_error("E802", [&] { eval_norm(false, in, "{epsilon = 1.0e-05}"); });
  expect_error("E802", [&] { eval_norm(true, in, "{eps = -1.0}"); });
  expect_error("E802", [&] {
    eval("%x: tensor<2x4xf32>, %w: tensor<4xf32>",
         "  %r = tessera.layer_norm %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>", "tensor<2x4xf32>",
         {in.x, in.w});
  });
  // clamp without a bound, with a NaN bound or an unknown attribute.
  expect_error("E802", [&] { eval_unary("clamp", "", "tensor<3x2xf32>", a); });
  expect_error("E802", [&] { eval_unary("clamp", "{low = 0.0}", "tensor<3x2xf32>", a); });
  // Unknown ops are still E802.
  expect_error("E802", [&] { eval_unary("erfinv", "", "tensor<3x2xf32>", a); });
}

TEST(OraclePointwise, MathOpsAndClamp) {
  Tensor x = make(DType::F32, {8}, {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, NAN, -INFINITY});
  const auto round = eval_unary("round", "", "tensor<8xf32>", x);
  const double want_round[] = {-2, -2, -0.0, 0, 2, 2};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(round.value[i], want_round[i]) << i;
  EXPECT_TRUE(std::signbit(round.value[2]));  // -0.5 rounds to -0
  EXPECT_TRUE(std::isnan(round.value[6]));
  EXPECT_EQ(round.value[7], -INFINITY);
  EXPECT_EQ(eval_unary("floor", "", "tensor<8xf32>", x).value[0], -3);
  EXPECT_EQ(eval_unary("ceil", "", "tensor<8xf32>", x).value[0], -2);
  // min(max(x, lo), hi); NaN stays; crossed bounds give max.
  const auto c = eval_unary("clamp", "{min = -1.0, max = 2.0}", "tensor<8xf32>", x);
  EXPECT_EQ(c.value[0], -1);
  EXPECT_EQ(c.value[5], 2);
  EXPECT_TRUE(std::isnan(c.value[6]));
  EXPECT_EQ(c.value[7], -1);
  const auto crossed = eval_unary("clamp", "{min = 1.0, max = -1.0}", "tensor<8xf32>", x);
  EXPECT_EQ(crossed.value[3], -1);
  // Exact ops: no tolerance beyond the output rounding.
  EXPECT_EQ(round.tolerance[0], 0);
  Tensor y = make(DType::F32, {3}, {0.5f, 1000.0f, 3.0f});
  const auto s = eval_unary("sin", "", "tensor<3xf32>", y);
  EXPECT_NEAR(s.value[1], std::sin(1000.0), 1e-15);
  EXPECT_GT(s.tolerance[1], 0);
  EXPECT_LT(s.tolerance[1], 1e-5);  // a few f32 ulps of |sin(1000)| ~ 0.83, not a loose absolute bound
  EXPECT_NEAR(eval_unary("exp2", "", "tensor<3xf32>", y).value[2], 8.0, 0);
  EXPECT_NEAR(eval_unary("log2", "", "tensor<3xf32>", y).value[0], -1.0, 0);
  EXPECT_NEAR(eval_unary("erf", "", "tensor<3xf32>", y).value[0], std::erf(0.5), 0);
}

}  // namespace
}  // namespace tessera::oracle
