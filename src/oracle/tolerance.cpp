#include "oracle/tolerance.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "support/half.hpp"

namespace tessera::oracle {

namespace {

constexpr double kURef = 0x1p-53;  // the reference computes in double
constexpr double kLambda = 8.0;     // probabilistic bound: P(exceeded) < 2 exp(-lambda^2 / 2) ~ 3e-14

double u_of(DType t) { return dtype_unit_roundoff(t); }
double u_acc(DType storage) { return u_of(default_accumulation(storage)); }

// G in the policy: the kernel's accumulation error plus the reference's own.
double accum_gamma(int64_t n, DType in) { return growth(n, u_acc(in)) + gamma(n, kURef); }

// NaN and infinities must match exactly, never "within" some distance.
double finish(double value, double tol) { return std::isfinite(value) ? tol : 0.0; }

}  // namespace

double growth(int64_t n, double u) {
  return std::min(gamma(n, u), kLambda * std::sqrt(static_cast<double>(std::max<int64_t>(n, 0))) * u);
}

double gamma(int64_t n, double u) {
  if (n <= 0) return 0.0;
  double nu = static_cast<double>(n) * u;
  if (nu >= 1.0) return std::numeric_limits<double>::max();
  return nu / (1.0 - nu);
}

double min_normal(DType t) {
  switch (t) {
    case DType::F16: return 0x1p-14;
    case DType::BF16: return 0x1p-126;
    case DType::F32: return 0x1p-126;
    case DType::F64: return 0x1p-1022;
  }
  return 0;
}

double min_subnormal(DType t) {
  switch (t) {
    case DType::F16: return 0x1p-24;
    case DType::BF16: return 0x1p-133;
    case DType::F32: return 0x1p-149;
    case DType::F64: return 0x1p-1074;
  }
  return 0;
}

double rounding_error(double v, DType t) { return u_of(t) * std::fabs(v) + min_subnormal(t) / 2; }

double round_to_dtype(double v, DType t) {
  if (t == DType::F64 || std::isnan(v)) return v;
  float f = static_cast<float>(v);
  if (t == DType::F32) return f;
  // Round to odd into f32 first: with 13+ spare bits, a second round-to-nearest
  // into f16/bf16 is then exact-once rounding (plain float(v) could create a
  // false tie). Adjacent floats alternate bit parity, so the odd neighbour is
  // one step toward v.
  if (static_cast<double>(f) != v && (float_to_bits(f) & 1u) == 0)
    f = std::nextafter(f, v > f ? std::numeric_limits<float>::infinity()
                                : -std::numeric_limits<float>::infinity());
  if (t == DType::F16) return f16_to_float(float_to_f16(f));
  return bf16_to_float(float_to_bf16(f));
}

double sum_tolerance(int64_t n, double abs_in, double carried, double value, DType in, DType out) {
  return finish(value, accum_gamma(n, in) * abs_in + carried + rounding_error(value, out));
}

double mean_tolerance(int64_t n, double abs_in, double carried, double value, DType in, DType out) {
  if (n <= 0) return 0.0;  // the value is NaN
  double nd = static_cast<double>(n);
  double tol = (accum_gamma(n, in) * abs_in + carried) / nd + rounding_error(value, out) +
               rounding_error(value, default_accumulation(in)) + kURef * std::fabs(value);
  return finish(value, tol);
}

// Products get the worst-case gamma_n, not the probabilistic bound: the
// rounding errors of multiplying near-one factors are biased (the dropped
// second-order term has one sign), so they do not cancel like a random walk.
// Measured: a tree of 3e5 such f32 factors drifted 2.5e-4 relative, just
// above 8 sqrt(n) u, while being a correct IEEE evaluation.
double prod_tolerance(int64_t n, double abs_in, double carried, double value, DType in, DType out) {
  const double g = gamma(n, u_acc(in)) + gamma(n, kURef);
  return finish(value, g * abs_in + carried + rounding_error(value, out) + min_normal(out));
}

double extremum_tolerance(double carried, double value, DType in, DType out) {
  return finish(value, carried + (in == out ? 0.0 : rounding_error(value, out)));
}

}  // namespace tessera::oracle
