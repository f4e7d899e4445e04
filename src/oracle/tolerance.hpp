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

}  // namespace tessera::oracle
