// The oracle's tolerance policy: how far a correct kernel's output may be from
// the reference value, element by element. Reports show these numbers next to
// the error, so every term has a reason that fits in one line.
//
// Notation (per output element):
//   n      number of reduced input elements
//   u_acc  unit roundoff of the accumulation type: f64 for f64 storage, else f32
//   u_out  unit roundoff of the output type
//   u_ref  unit roundoff of double (2^-53): the reference itself is computed in
//          double, so its own rounding error is part of the gap |got - value|
//   G      growth(n, u_acc) + gamma(n, u_ref), gamma(n, u) = n*u / (1 - n*u),
//          growth(n, u) = min(gamma(n, u), lambda*sqrt(n)*u), lambda = 8
//   S      sum over the reduced inputs of |x|
//   R(v,t) rounding of v to type t: u_t*|v| + (smallest subnormal of t)/2
//          (the absolute part covers results that land in the subnormal range,
//          where a relative bound alone is wrong)
//
//   sum    G*S + R(value, out)
//          The classic bound for recursive summation in any order, so the
//          kernel may split and combine partial sums however it likes.
//   mean   G*S/n + R(value, out) + R(value, acc) + u_ref*|value|
//          The sum's bound scaled by 1/n, plus the kernel's and the reference's
//          final division.
//   prod   (gamma(n, u_acc) + gamma(n, u_ref))*|value| + R(value, out) + (smallest normal of out)
//          Worst case, not growth(): multiplying near-one factors rounds with a
//          bias (see tolerance.cpp), so the random-walk bound does not hold.
//          Products have a relative bound; the absolute term absorbs underflow.
//   max,   0 when the output type is the input type: the result is one of the
//   min    inputs and is representable. (R(value, out) if the types differ.)
//
// Non-finite reference values get tolerance 0: NaN must be matched by NaN and
// an infinity by the same infinity (see compare() in reference.hpp).
//
// Chained ops: an input that is itself a computed value carries a tolerance t_i.
// Then |x| above reads |x|+t_i, and the carried error is added: sum t_i (sum),
// sum t_i / n (mean), max t_i (max/min), prod(|x|+t) - prod|x| (prod). For func
// arguments t_i = 0 and the formulas reduce to the ones above.
//
// Why growth() and not gamma alone: the worst-case gamma_n grows linearly and
// stops checking anything useful around 2^20 f32 additions (at 2^24 it accepts
// any finite value). Rounding errors of a summation behave like a random walk,
// so the policy uses the probabilistic bound lambda*sqrt(n)*u of Higham & Mary
// (SIAM J. Sci. Comput. 2019), which holds with probability at least
// 1 - 2*exp(-lambda^2/2) for lambda = 8, and never exceeds gamma_n. This keeps
// a kernel that returns, say, a partial sum from passing on large inputs.
//
// ---------------------------------------------------------------------------
// Pointwise, softmax and norm ops (tessera.add ... tessera.rms_norm)
// ---------------------------------------------------------------------------
// What the tolerance must accept: kernels compute in f32 (f64 for f64 inputs;
// f16/bf16 are storage widened to f32) with elementary functions accurate to a
// few ulp (glibc libmvec on the CPU; expf/logf/tanhf/erff/powf/rsqrtf on CUDA).
// A fused kernel may keep an intermediate in f32 where the graph declares
// f16/bf16; an unfused one rounds every op's result to its declared dtype.
// Reference values of intermediates are never rounded; instead every op's
// tolerance includes the rounding to its declared type, so both are accepted.
//
// Notation (per output element; x, a, b the reference inputs, t their carried
// tolerances, v the reference result, "out" the declared result dtype):
//   u      u_acc + u_ref: the kernel's rounding unit plus the reference's own
//          (the reference evaluates the same formulas in double)
//   c_t    16 = 2*K with K = 8 ulp for every transcendental function (exp, log,
//          tanh, sigmoid, erf-/tanh-based gelu, silu, pow, rsqrt); 1 ulp <= 2u|v|.
//          Why 8: the documented worst cases are 4 ulp (glibc libmvec; CUDA
//          powf), 1-2 ulp for expf/logf/tanhf/erff/rsqrtf, and composite forms
//          such as 1/(1+expf(-x)) add 2-3 roundings; 8 covers them with margin
//          and is still 8x below the 64-ulp error of a real bug.
//   P      propagated carried tolerance: sup |f(x~) - f(x)| over |x~ - x| <= t
//          (exact interval bounds where cheap, else a global bound on |f'|)
//   M      |v| + P: the magnitude of what the kernel computes on its inputs
//   I      the kernel's implementation error on those inputs
//   tol    P + I + R(M + I, out)       (R at every op: fused and unfused both pass)
//
//   op                P                                   I
//   add, sub          ta + tb                             u*M + s/2   (one rounding; s = smallest subnormal of acc)
//   mul               |a|tb + |b|ta + ta*tb               u*M + s/2
//   div               (ta + |v|tb) / (|b| - tb), inf if |b| <= tb   u*M + s/2 (IEEE division)
//   max, min          max(ta, tb)                         0 (the result is an input; R only if P > 0)
//   neg, abs, relu    t                                   0 (exact; R only if t > 0)
//   cast              t                                   0 (the cast is the rounding R)
//   constant          0                                   0 (R(value, out): the literal may be kept in f32)
//   sqrt              sqrt(x) - sqrt(max(x-t, 0))         u*M + s/2 (sqrtf is correctly rounded)
//   exp               |v|*expm1(t)                        T(M)
//   log               -log1p(-t/x), inf if x-t <= 0        T(M) + c_t*u  (absolute: __logf-style log2
//                                                         reductions are accurate absolutely near 1)
//   rsqrt             (x-t)^-1/2 - x^-1/2, inf if x-t<=0  T(M)
//   tanh              t * sech^2(y0)                      T(M)
//   sigmoid           t * sigmoid'(y0)                    T(M)
//                     (y0: the point of [x-t, x+t] nearest 0, where these peak)
//   silu              t * 1.1  (|silu'| <= 1.0998)        T(M) + c_t*u*(|x|+t)
//   gelu (both forms) t * 1.13 (|gelu'| <= 1.1290)        T(M) + c_t*u*(|x|+t)
//                     (when x+t <= -3, |f'| grows with y there: t*|f'(x+t)|)
//   sin, cos          min(t, 2)  (|f'| <= 1)                T(M)
//   exp2              |v|*expm1(t ln 2)                   T(M)
//   log2              -log1p(-t/x)/ln 2, inf if x-t <= 0   T(M) + 1.5 c_t*u  (as log)
//   erf               min(t * 2/sqrt(pi) e^-y0^2, 2)      T(M)
//   floor, ceil,      max |f(x +- t) - f(x)|              0 (exact; R only if P > 0)
//   round             (the jump at an integer within reach)
//   clamp             t                                   u*M + s/2 (the bound in the compute type)
//   pow (a > t_a)     |v| * expm1(dL), dL = (|b|+tb)(-log1p(-ta/|a|)) + tb*|ln a|   T(M)
//       (|a| <= ta)   |v| + max(A^(b-tb), A^(b+tb)), A = |a|+ta, if b-tb > 0, else inf
//       (a < 0, tb>0) inf (a non-integer exponent gives NaN)
//   T(M) = c_t*u*M + (smallest normal of acc): results below the smallest normal
//          have only absolute accuracy (gradual underflow, 1/(1+inf) = 0 in sigmoid).
//          The price: an f32 result below ~1e-32 is checked only to 1.2e-38 absolute.
//   Cancellation, worked out for the f32 formulas: 0.5x(1+erff(x/sqrt2)) and
//   0.5x(1+tanhf(w)) subtract nearly equal numbers for x << 0: the erf/tanh
//   error (c_t*u absolute, their magnitude is ~1) is scaled by 0.5|x| and the
//   rounding of the argument w (~5u|w|) by |x|*sech^2(w)*|w|/2 <= 1.2u|x|, so
//   c_t*u*|x| covers both. silu = x/(1+expf(-x)) does not cancel, but the
//   equally valid x*(0.5+0.5*tanhf(x/2)) does, with the same |x|*c_t*u/2.
//   sigmoid gets no absolute term: 1/(1+expf(-x)) is relatively accurate, and
//   an absolute term would accept 0 for sigmoid(-20) = 2e-9.
//
// softmax / log_softmax (one row of n along the axis; m = max, d = x - m,
// s = sum exp(d); s_lo, s_hi = sum exp(d -+ t): the sum's range over every
// input within tolerance; Tm = max t over the elements that can reach the max
// (x + t >= m - t_max-element), which bounds the kernel's max; kernel: max
// pass, then exp(x - m) summed in any order, then a division or a reciprocal
// multiply):
//   eta_j  expm1(u*(|d_j| + t_j + Tm)) + c_t*u   exp's relative error: its
//          argument is rounded once and expf adds K ulp
//   sigma  (sum exp(d_j + t_j) eta_j / s_lo)*(1+G) + G + n*(smallest normal of acc)
//          relative error of the kernel's sum: each term's own error, then the
//          summation (G, any order)
//   softmax      P = y*max(e^t_j s/s_lo - 1, 1 - e^-t_j s/s_hi)
//                    (softmax(x~)_j lies in y_j*[e^-t_j s/s_hi, e^t_j s/s_lo])
//                I = M*((1+eta_j)(1+2u)/(1-sigma) - 1) + (smallest normal of acc)
//                    (the division or reciprocal-multiply is 2u; underflow is absolute)
//   log_softmax  P = t_j + max(log(s_hi/s), log(s/s_lo))   (x_j and the log-sum-exp's range)
//                I = u(|d_j|+t_j+Tm) + u(|m|+Tm) + (-log1p(-sigma)) + c_t*u*(log s_hi + Tm + 1) + u(|y|+P)
//                    (x-m rounding; either association (x-m)-L or x-(m+L); the sum's
//                    relative error through log; logf; the final subtraction).
//                Absolute, never relative: y is ~0 for the dominant element.
//   Every term weighs an element by its own exp(d + t): an additive mask of
//   -1e9 (whose carried tolerance is ~u*1e9) contributes exp(-1e9 + t) = 0 and
//   so never widens the bounds of the elements it leaves in.
// layer_norm / rms_norm (one row of n along the last axis; two passes in acc):
//   G = growth(n, u_acc) + gamma(n, u_ref) as for reductions; tau = rms of the
//   row's t, sd = std (layer_norm) or rms (rms_norm) of x, tm = mean t,
//   r = 1/sqrt(var + eps), r_max = 1/sqrt(max(sd - tau, 0)^2 + eps)
//   (sd is a seminorm / sqrt(n): perturbing x by t moves it by at most tau,
//   and sqrt(sd^2 + eps) is 1-Lipschitz in sd, so r of any x~ is <= r_max).
//   e_mu   G*mean(|x|+t) + 2u(|mu| + tm)        mean error (sum, then /n)
//   rho    G + 6u (layer_norm) or G + 3u (rms)  relative error of the variance
//          (subtract, square, sum, divide); a wrong mean c adds c^2 only: sum d = 0
//   kappa  (rho*var_hi + (1+rho)*e_mu^2)/(var_lo + eps) + u   relative error of
//          var + eps, var_hi/lo = (sd +- tau)^2 (e_mu^2 only on the high side)
//   rho_r  max((1-kappa)^-1/2 - 1, 1 - (1+kappa)^-1/2) + c_t*u   relative error of rsqrt
//   carried  dn_j = r_max*(t_j + tm + |n_j|*tau) (layer_norm; rms_norm without tm)
//            P = dn_j(|w|+tw) + |n_j|tw + tb      with n_j = (x_j - mu)*r or x_j*r
//   impl     e_d = e_mu + u(|d_j| + t_j + tm + e_mu)   (rms_norm: 0, x is used as is)
//            e_n = e_d*r_max*(1+rho_r) + N*rho_r,  N = |n_j| + dn_j
//            I = W*e_n*(1+3u) + 3u*W*N + u(|y| + P),  W = |w| + tw
//            (two multiplies and one add, fused or not)
// A kernel that squares in f32 overflows for |x| >= 2^64; the oracle's double
// value stays the mathematical one and such a kernel fails (it is wrong there).
// Not covered: an f16/bf16 intermediate that overflows when rounded (an unfused
// kernel then carries inf where a fused one and the oracle stay finite).
// Any NaN tolerance (0 * inf) becomes inf; non-finite values get 0 as always.
// Measured against f32 kernels built on glibc libmvec (expf logf tanhf erff
// powf, 16-lane sums): worst err/tol 0.57 (f32 softmax), 0.39 (f32 layer_norm),
// <= 0.25 for f32 pointwise ops; ~1.0 with f16/bf16 outputs, where the final
// rounding R, not the policy's slack, is most of the tolerance.
//
// ---------------------------------------------------------------------------
// matmul (one output element: an inner product of length K)
// ---------------------------------------------------------------------------
//   S      sum_k (|a_k|+ta_k)(|b_k|+tb_k)
//   C      sum_k (|a_k| tb_k + |b_k| ta_k + ta_k tb_k)   the carried error
//   f32 operands:      tol = (growth(K, 2^-24) + gamma(K, u_ref))*S + C + R(value, out)
//                      (products and sums rounded to nearest, FMA or not, any order)
//   f16/bf16 operands: tol = (gamma(K, 2^-23) + gamma(K, u_ref))*S + C + R(value, out)
//                      Products of 16-bit values are exact in f32, but tensor-core
//                      adders may truncate instead of rounding (Fasi et al., "Numerical
//                      behavior of NVIDIA tensor cores", PeerJ CS 2021): a biased error,
//                      for which the random-walk bound does not hold, so the worst-case
//                      inner-product bound gamma_K with one ulp per addition.
//   A kernel that drops or repeats part of the K range errs by about sqrt(part)*|ab|
//   (random signs), well above these bounds for K up to a few thousand.
#pragma once
#include <cstdint>

#include "support/dtype.hpp"

namespace tessera::oracle {

// n*u / (1 - n*u); 0 for n <= 0; a huge finite value when n*u >= 1 (finite so
// that gamma * 0 stays 0).
double gamma(int64_t n, double u);
// min(gamma(n, u), lambda*sqrt(n)*u): the error growth the policy allows.
double growth(int64_t n, double u);

// Smallest positive normal / subnormal number of the type.
double min_normal(DType t);
double min_subnormal(DType t);

// R(v, t) above: the error of rounding v once to type t.
double rounding_error(double v, DType t);

// v rounded once (round to nearest even) to t, returned widened to double.
// Correctly rounded for f16/bf16 too (no double rounding through f32).
double round_to_dtype(double v, DType t);

// Per-element tolerances. `abs_in` is sum(|x|+t) for sum/mean and prod(|x|+t)
// for prod; `carried` is the carried input error described above; `in` is the
// input storage type (it picks the accumulation type), `out` the result type.
double sum_tolerance(int64_t n, double abs_in, double carried, double value, DType in, DType out);
double mean_tolerance(int64_t n, double abs_in, double carried, double value, DType in, DType out);
double prod_tolerance(int64_t n, double abs_in, double carried, double value, DType in, DType out);
double extremum_tolerance(double carried, double value, DType in, DType out);
// `abs_dot` = S, `carried` = C above; `in` the operands' dtype.
double matmul_tolerance(int64_t k, double abs_dot, double carried, double value, DType in, DType out);

// ---- pointwise, softmax and norm ops (policy in the header comment) ----------

// The transcendental error allowance c_t = 2*K, K = 8 ulp.
constexpr double kTranscendentalUlps = 8;

enum class Pointwise {
  Add,
  Sub,
  Mul,
  Div,
  Max,
  Min,
  Pow,  // binary
  Neg,
  Abs,
  Relu,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Tanh,
  Sigmoid,
  Silu,  // unary
  Gelu,
  GeluTanh,
  Sin,
  Cos,
  Exp2,
  Log2,
  Erf,
  Floor,
  Ceil,
  Round,  // half to even
  Clamp,  // the bounds are in the value; the tolerance needs none of them
  Cast,
};

// a, b (x) are the reference operands, ta, tb (t) their carried tolerances,
// value the reference result; `in` the operand dtype (picks u_acc), `out` the
// declared result dtype.
double binary_tolerance(Pointwise op, double a, double ta, double b, double tb, double value, DType in, DType out);
double unary_tolerance(Pointwise op, double x, double t, double value, DType in, DType out);
double constant_tolerance(double value, DType out);

// One row (n contiguous elements): x, t its inputs and carried tolerances, y
// the reference results; writes n tolerances to tol.
void softmax_row_tolerance(bool log, const double* x, const double* t, const double* y, int64_t n, DType in, DType out,
                           double* tol);
// w, tw, tb (b's carried tolerance) have n elements; rms_norm passes tb = nullptr.
void norm_row_tolerance(bool rms, const double* x, const double* tx, const double* w, const double* tw,
                        const double* tb, int64_t n, double eps, const double* y, DType in, DType out, double* tol);

// ---- attention (tessera.attention) ------------------------------------------
// Per query row, over its n visible keys: s_j the reference score, abs_dot_j
// = |scale| * sum |q k| (the dot's rounding scales with it), carried_j the
// score's carried bound, p_j = exp(s_j - max) and l = sum p_j. The kernel's
// score is off by ts_j = G_d*abs_dot_j + carried_j + u_acc*|s_j|; its weight
// p~_j is off relatively by eta_j = expm1(ts_j + tm) (tm = max ts: the max
// it subtracts) + the exponential's own error (8 ulp of u_acc, on an
// argument of |s_j| + |max|) + the rounding of p to a 16-bit input type (the
// tensor-core P v product takes p in the input type). The row sum is off by
// sigma = sum p_j eta_j / l + G_n. Output element c (value v):
//   (sum p_j |v_jc| eta_j + (sigma + G_n) sum p_j |v_jc| + sum p_j t_jc) / l
//   + u_acc |v| + R(v, out)
// lse: log(1 + sigma) + tm + u_acc |lse| + R(lse, lse's dtype).
// Writes eta (n values) and tm; returns sigma.
double attention_weight_errors(const double* s, const double* abs_dot, const double* carried, const double* p,
                               int64_t n, double l, int64_t d, DType in, double* eta, double& tm);
double attention_output_tolerance(double weighted, double abs_sum, double carried, double sigma, int64_t n, double l,
                                  double value, DType in);
double attention_lse_tolerance(double sigma, double tm, double lse, DType out);

}  // namespace tessera::oracle
