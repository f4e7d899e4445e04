#include "oracle/tolerance.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "support/half.hpp"

namespace tessera::oracle {

namespace {

constexpr double kURef = 0x1p-53;  // the reference computes in double
constexpr double kLambda = 8.0;    // probabilistic bound: P(exceeded) < 2 exp(-lambda^2 / 2) ~ 3e-14

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
    case DType::I1:
    case DType::I32:
    case DType::I64: break;  // integers are exact: no rounding
  }
  return 0;
}

double min_subnormal(DType t) {
  switch (t) {
    case DType::F16: return 0x1p-24;
    case DType::BF16: return 0x1p-133;
    case DType::F32: return 0x1p-149;
    case DType::F64: return 0x1p-1074;
    case DType::I1:
    case DType::I32:
    case DType::I64: break;
  }
  return 0;
}

double rounding_error(double v, DType t) { return u_of(t) * std::fabs(v) + min_subnormal(t) / 2; }

double round_to_dtype(double v, DType t) {
  if (!is_float(t)) return static_cast<double>(to_integer(v, t));
  if (t == DType::F64 || std::isnan(v)) return v;
  float f = static_cast<float>(v);
  if (t == DType::F32) return f;
  // Round to odd into f32 first: with 13+ spare bits, a second round-to-nearest
  // into f16/bf16 is then exact-once rounding (plain float(v) could create a
  // false tie). Adjacent floats alternate bit parity, so the odd neighbour is
  // one step toward v.
  if (static_cast<double>(f) != v && (float_to_bits(f) & 1u) == 0)
    f = std::nextafter(f, v > f ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity());
  if (t == DType::F16) return f16_to_float(float_to_f16(f));
  return bf16_to_float(float_to_bf16(f));
}

double sum_tolerance(int64_t n, double abs_in, double carried, double value, DType in, DType out) {
  return finish(value, accum_gamma(n, in) * abs_in + carried + rounding_error(value, out));
}

double matmul_tolerance(int64_t k, double abs_dot, double carried, double value, DType in, DType out) {
  const double g = in == DType::F32 ? growth(k, 0x1p-24) : gamma(k, 0x1p-23);
  return finish(value, (g + gamma(k, kURef)) * abs_dot + carried + rounding_error(value, out));
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

// ---- pointwise, softmax and norm ops ------------------------------------------
// Formulas and their reasons: the header comment of tolerance.hpp.

namespace tessera::oracle {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kCt = 2 * kTranscendentalUlps;  // c_t: K ulp <= 2K u relative

// u in the policy: the kernel's rounding unit plus the reference's own.
double u_pw(DType in) { return u_acc(in) + kURef; }
DType acc_of(DType in) { return default_accumulation(in); }

// 0 * inf in a bound means "unbounded", never "no information".
double sane(double x) { return std::isnan(x) ? kInf : x; }

// One rounding in the accumulation type (gradual underflow included).
double one_rounding(double m, DType in) { return u_pw(in) * m + min_subnormal(acc_of(in)) / 2; }
// T(M): K ulp of a transcendental function plus absolute accuracy below the
// smallest normal.
double transcendental(double m, DType in) { return kCt * u_pw(in) * m + min_normal(acc_of(in)); }

// Derivative bounds over [x - t, x + t] (mean value theorem: P = t * sup |f'|).
// sigmoid' and tanh' peak at 0 and fall off monotonically: take them at the
// point of the interval closest to 0. silu', gelu' (both forms) are bounded by
// 1.1 / 1.13 everywhere, and on (-inf, -3] |f'| increases with y: take it at
// x + t there. Each derivative is written without cancellation.
double nearest_to_zero(double x, double t) { return std::max(0.0, std::fabs(x) - t); }
double sigmoid_slope(double y) {  // sigma(y)(1 - sigma(y)) at |y|
  const double e = std::exp(-std::fabs(y));
  return e / ((1 + e) * (1 + e));
}
double tanh_slope(double y) { return 4 * sigmoid_slope(2 * y); }  // sech^2(y)
double tail_slope(Pointwise op, double x, double t) {
  const double hi = x + t;
  if (!(hi <= -3)) return op == Pointwise::Silu ? 1.1 : 1.13;
  if (op == Pointwise::Silu) {  // sigma(y)(1 + y(1 - sigma(y)))
    const double s = 1 / (1 + std::exp(-hi));
    return std::fabs(s * (1 + hi * (1 - s)));
  }
  if (op == Pointwise::Gelu)  // Phi(y) + y phi(y)
    return std::fabs(0.5 * std::erfc(-hi * M_SQRT1_2) + hi * std::exp(-0.5 * hi * hi) / std::sqrt(2 * M_PI));
  // 0.5(1 + tanh w) + 0.5 y sech^2(w) w',  w = k(y + c y^3), w' = k(1 + 3c y^2)
  const double k = std::sqrt(2 / M_PI), c = 0.044715, w = k * (hi + c * hi * hi * hi);
  return std::fabs(1 / (1 + std::exp(-2 * w)) + 0.5 * hi * tanh_slope(w) * k * (1 + 3 * c * hi * hi));
}

// tol = P + I + R(M + I, out); `exact` ops (I = 0 by construction) skip R when
// nothing was carried: their result is an input, representable in `out`.
double assemble(double value, double p, double i, DType out, bool exact = false) {
  p = sane(p);
  i = sane(i);
  if (exact && p == 0) return 0.0;
  const double m = std::fabs(value) + p + i;
  return finish(value, sane(p + i + rounding_error(m, out)));
}

}  // namespace

double binary_tolerance(Pointwise op, double a, double ta, double b, double tb, double value, DType in, DType out) {
  const double aa = std::fabs(a), ab = std::fabs(b), av = std::fabs(value);
  const bool carried = ta > 0 || tb > 0;
  double p = 0;
  switch (op) {
    case Pointwise::Add:
    case Pointwise::Sub: p = ta + tb; return assemble(value, p, one_rounding(av + p, in), out);
    case Pointwise::Mul:
      p = carried ? aa * tb + ab * ta + ta * tb : 0.0;
      return assemble(value, p, one_rounding(av + sane(p), in), out);
    case Pointwise::Div:
      p = !carried ? 0.0 : ab > tb ? (ta + av * tb) / (ab - tb) : kInf;
      return assemble(value, p, one_rounding(av + sane(p), in), out);
    case Pointwise::Max:
    case Pointwise::Min: return assemble(value, std::max(ta, tb), 0.0, out, /*exact=*/true);
    case Pointwise::Pow: {
      if (!carried || (b == 0 && tb == 0) || (a == 1 && ta == 0)) {
        p = 0;
      } else if (aa > ta) {
        if (a < 0 && tb > 0) {
          p = kInf;  // a non-integer exponent within reach gives NaN
        } else {
          const double dl = (ab + tb) * (ta > 0 ? -std::log1p(-ta / aa) : 0.0) + tb * std::fabs(std::log(aa));
          p = av * std::expm1(dl);
        }
      } else {
        const double big = aa + ta;
        p = b - tb > 0 ? av + std::max(std::pow(big, b - tb), std::pow(big, b + tb)) : kInf;
      }
      return assemble(value, p, transcendental(av + sane(p), in), out);
    }
    default: break;
  }
  return kInf;  // not a binary op: accept nothing specific (callers never get here)
}

double unary_tolerance(Pointwise op, double x, double t, double value, DType in, DType out) {
  const double u = u_pw(in), av = std::fabs(value), ax = std::fabs(x) + t;
  double p = 0;
  switch (op) {
    case Pointwise::Neg:
    case Pointwise::Abs:
    case Pointwise::Relu: return assemble(value, t, 0.0, out, /*exact=*/true);
    case Pointwise::Cast: return assemble(value, t, 0.0, out);
    case Pointwise::Sqrt:
      p = t > 0 ? std::sqrt(x) - std::sqrt(std::max(x - t, 0.0)) : 0.0;
      return assemble(value, p, one_rounding(av + sane(p), in), out);
    case Pointwise::Exp:
      p = t > 0 ? av * std::expm1(t) : 0.0;
      return assemble(value, p, transcendental(av + sane(p), in), out);
    case Pointwise::Log:
      p = t == 0 ? 0.0 : x - t > 0 ? -std::log1p(-t / x) : kInf;
      return assemble(value, p, transcendental(av + sane(p), in) + kCt * u, out);
    case Pointwise::Rsqrt:
      p = t == 0 ? 0.0 : x - t > 0 ? 1 / std::sqrt(x - t) - 1 / std::sqrt(x) : kInf;
      return assemble(value, p, transcendental(av + sane(p), in), out);
    case Pointwise::Tanh:
      p = std::min(t * tanh_slope(nearest_to_zero(x, t)), 2.0);
      return assemble(value, p, transcendental(av + p, in), out);
    case Pointwise::Sigmoid:
      p = std::min(t * sigmoid_slope(nearest_to_zero(x, t)), 1.0);
      return assemble(value, p, transcendental(av + p, in), out);
    case Pointwise::Silu:
      p = t * tail_slope(op, x, t);
      return assemble(value, p, transcendental(av + p, in) + kCt * u * ax, out);
    case Pointwise::Gelu:
    case Pointwise::GeluTanh:
      p = t * tail_slope(op, x, t);
      return assemble(value, p, transcendental(av + p, in) + kCt * u * ax, out);
    case Pointwise::Sin:
    case Pointwise::Cos: p = std::min(t, 2.0); return assemble(value, p, transcendental(av + p, in), out);
    case Pointwise::Exp2:
      p = t > 0 ? av * std::expm1(t * M_LN2) : 0.0;
      return assemble(value, p, transcendental(av + sane(p), in), out);
    case Pointwise::Log2:
      p = t == 0 ? 0.0 : x - t > 0 ? -std::log1p(-t / x) / M_LN2 : kInf;
      return assemble(value, p, transcendental(av + sane(p), in) + 1.5 * kCt * u, out);
    case Pointwise::Erf: {
      const double y0 = nearest_to_zero(x, t);
      p = std::min(t * M_2_SQRTPI * std::exp(-y0 * y0), 2.0);
      return assemble(value, p, transcendental(av + p, in), out);
    }
    case Pointwise::Floor:
    case Pointwise::Ceil:
    case Pointwise::Round: {
      if (t > 0) {
        auto f = [&](double y) {
          return op == Pointwise::Floor ? std::floor(y) : op == Pointwise::Ceil ? std::ceil(y) : std::nearbyint(y);
        };
        p = std::max(std::fabs(f(x + t) - value), std::fabs(value - f(x - t)));
      }
      return assemble(value, p, 0.0, out, /*exact=*/true);
    }
    case Pointwise::Clamp: return assemble(value, t, one_rounding(av + t, in), out);
    default: break;
  }
  return kInf;
}

double constant_tolerance(double value, DType out) { return finish(value, rounding_error(value, out)); }

void softmax_row_tolerance(bool log, const double* x, const double* t, const double* y, int64_t n, DType in, DType out,
                           double* tol) {
  const double u = u_pw(in), tiny = min_normal(acc_of(in));
  double m = -kInf;
  int64_t arg = 0;
  for (int64_t j = 0; j < n; ++j)
    if (std::isnan(x[j]) || x[j] > m) {
      m = x[j];
      arg = j;
    }
  if (!std::isfinite(m)) {  // NaN, -inf or +inf in the row: every value is NaN
    for (int64_t j = 0; j < n; ++j) tol[j] = finish(y[j], 0.0);
    return;
  }
  // Tm bounds how far the kernel's max can be from m: only an element that can
  // reach the max within its tolerance can be it, so a masked-out element
  // (x = -1e9, t ~ u*1e9) never widens the bound of the others.
  double tm = 0;
  for (int64_t j = 0; j < n; ++j)
    if (x[j] + t[j] >= m - t[arg]) tm = std::max(tm, t[j]);
  // eta_j: relative error of the kernel's exp(x~_j - m~).
  auto eta = [&](int64_t j) { return std::expm1(u * (std::fabs(x[j] - m) + t[j] + tm)) + kCt * u; };
  // s = sum exp(d), and its bounds over every x~ within tolerance; terms
  // whose exp underflows (masked entries) weigh nothing, whatever their t.
  double s = 0, s_lo = 0, s_hi = 0, se = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double d = x[j] - m;
    s += std::exp(d);
    s_lo += std::exp(d - t[j]);
    s_hi += std::exp(d + t[j]);
    const double e_hi = std::exp(d + t[j]);
    if (e_hi > 0) se += e_hi * eta(j);  // e = 0: x = -inf (exact 0 in the kernel too) or underflow
  }
  const double g = accum_gamma(n, in);
  const double sigma = sane((se / s_lo) * (1 + g) + g + static_cast<double>(n) * tiny);
  // How far log(sum) of any x~ is from log(s): the log-sum-exp's own interval.
  const double lse_shift = std::max(std::log(s_hi / s), std::log(s / s_lo));
  for (int64_t j = 0; j < n; ++j) {
    const double d = x[j] - m;
    double p = 0, i = 0;
    if (!log) {
      // softmax(x~)_j lies in [y_j e^-t_j s/s_hi, y_j e^t_j s/s_lo].
      if (y[j] > 0) p = y[j] * std::max(std::exp(t[j]) * (s / s_lo) - 1, 1 - std::exp(-t[j]) * (s / s_hi));
      const double mag = y[j] + sane(p);
      const double rel = sigma < 1 ? (1 + eta(j)) * (1 + 2 * u) / (1 - sigma) - 1 : kInf;
      i = (mag > 0 ? mag * rel : 0.0) + tiny;
    } else {
      p = t[j] + lse_shift;
      const double log_s_err = sigma < 1 ? -std::log1p(-sigma) : kInf;
      i = u * (std::fabs(d) + t[j] + tm) + u * (std::fabs(m) + tm) + log_s_err + kCt * u * (std::log(s_hi) + tm + 1) +
          u * (std::fabs(y[j]) + p);
    }
    tol[j] = assemble(y[j], p, i, out);
  }
}

void norm_row_tolerance(bool rms, const double* x, const double* tx, const double* w, const double* tw,
                        const double* tb, int64_t n, double eps, const double* y, DType in, DType out, double* tol) {
  if (n == 0) return;
  const double u = u_pw(in), nd = static_cast<double>(n), g = accum_gamma(n, in);
  // Row statistics in double: mean (0 for rms_norm), second moment about it,
  // mean |x|+t, mean t, rms of t.
  double mu = 0, abs_in = 0, tm = 0, t2 = 0;
  for (int64_t j = 0; j < n; ++j) {
    if (!rms) mu += x[j];
    abs_in += std::fabs(x[j]) + tx[j];
    tm += tx[j];
    t2 += tx[j] * tx[j];
  }
  mu /= nd;
  abs_in /= nd;
  tm /= nd;
  double var = 0;
  for (int64_t j = 0; j < n; ++j) var += (x[j] - mu) * (x[j] - mu);
  var /= nd;
  if (!std::isfinite(var)) {
    // An infinity (or NaN) in the row: every y is NaN except, for rms_norm,
    // x/inf*w = 0 and, for a layer_norm variance that overflows double, y = b;
    // both are exact in the kernel too.
    for (int64_t j = 0; j < n; ++j) tol[j] = assemble(y[j], rms ? 0.0 : tb[j], 0.0, out, /*exact=*/true);
    return;
  }
  const double tau = std::sqrt(t2 / nd), sd = std::sqrt(var);
  const double r = 1 / std::sqrt(var + eps);
  const double lo = std::max(sd - tau, 0.0), var_lo = lo * lo, var_hi = (sd + tau) * (sd + tau);
  const double r_max = 1 / std::sqrt(var_lo + eps);
  const double e_mu = rms ? 0.0 : g * abs_in + 2 * u * (std::fabs(mu) + tm);
  const double rho = g + (rms ? 3 : 6) * u;
  const double k_hi = sane((rho * var_hi + (1 + rho) * e_mu * e_mu) / (var_lo + eps) + u);
  const double k_lo = sane(rho * var_hi / (var_lo + eps) + u);
  const double rho_r = (k_lo < 1 ? 1 / std::sqrt(1 - k_lo) - 1 : kInf);
  const double rho_rsqrt = std::max(rho_r, 1 - 1 / std::sqrt(1 + k_hi)) + kCt * u;
  for (int64_t j = 0; j < n; ++j) {
    const double d = x[j] - mu, nj = std::fabs(d) * r;
    const double twj = tw[j], tbj = rms ? 0.0 : tb[j];
    const double dn = r_max * (tx[j] + (rms ? 0.0 : tm) + nj * tau);
    const double wabs = std::fabs(w[j]) + twj;
    const double p = sane(dn * wabs + nj * twj + tbj);
    const double big_n = nj + dn;
    const double e_d = rms ? 0.0 : e_mu + u * (std::fabs(d) + tx[j] + tm + e_mu);
    const double e_n = sane(e_d * r_max * (1 + rho_rsqrt) + big_n * rho_rsqrt);
    const double i = wabs * e_n * (1 + 3 * u) + 3 * u * wabs * big_n + u * (std::fabs(y[j]) + p);
    tol[j] = assemble(y[j], p, i, out);
  }
}

double attention_weight_errors(const double* s, const double* abs_dot, const double* carried, const double* p,
                               int64_t n, double l, int64_t d, DType in, double* eta, double& tm) {
  const double u = u_acc(in), g_d = accum_gamma(d, in);
  // p rounded to the input type for the P v product on tensor cores
  const double u_p = dtype_size(in) == 2 ? u_of(in) : 0.0;
  double m = -std::numeric_limits<double>::infinity();
  tm = 0;
  // eta holds each key's score bound ts_j first. A key scored -inf (an
  // infinite q or k) weighs exactly 0 in the kernel too: no bound.
  for (int64_t j = 0; j < n; ++j) {
    eta[j] = 0;
    if (s[j] == -std::numeric_limits<double>::infinity()) continue;
    m = std::max(m, s[j]);
    eta[j] = g_d * abs_dot[j] + carried[j] + u * std::fabs(s[j]);
    tm = std::max(tm, eta[j]);
  }
  double weighted = 0;
  for (int64_t j = 0; j < n; ++j) {
    if (s[j] == -std::numeric_limits<double>::infinity()) continue;
    eta[j] = std::expm1(eta[j] + tm) + 2 * kTranscendentalUlps * u * (1 + std::fabs(s[j]) + std::fabs(m)) + u_p;
    weighted += p[j] * eta[j];
  }
  return weighted / l + accum_gamma(n, in);
}

double attention_output_tolerance(double weighted, double abs_sum, double carried, double sigma, int64_t n, double l,
                                  double value, DType in) {
  const double g_n = accum_gamma(n, in);
  const double tol = (weighted + (sigma + g_n) * abs_sum + carried) / l + u_acc(in) * std::fabs(value) +
                     rounding_error(value, in) + min_normal(default_accumulation(in));
  return finish(value, tol);
}

double attention_lse_tolerance(double sigma, double tm, double lse, DType out) {
  return finish(lse, std::log1p(sigma) + tm + u_acc(out) * std::fabs(lse) + rounding_error(lse, out));
}

}  // namespace tessera::oracle
