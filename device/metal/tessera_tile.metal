// Tessera Metal device tile library (MSL). Rendered Metal kernels call only
// these functions; the renderer embeds this file (after defining TSR_THREADS
// and TSR_VEC for the kernel) at the top of every kernel source, so the
// kernel's SHA-256 covers every line the Metal compiler sees.
//
// A program is one threadgroup of TSR_THREADS threads, simdgroups of 32.
// A tile<T, N> is N lanes spread over the threadgroup exactly as on CUDA:
// thread t holds, for each part c, the TSR_VEC contiguous lanes starting at
// c*TSR_THREADS*TSR_VEC + t*TSR_VEC. Index math and scalars are computed by
// every thread alike; a scalar store is done by thread 0.
//
// Metal has no built-in thread index variable: a kernel passes a ctx (its
// thread and simdgroup positions) to every call whose lanes depend on them.
// There is no 64-bit float in MSL (the renderer refuses f64), bf16 is stored
// as ushort bit patterns (bfloat needs Metal 3.1), f16 as half.
// Metal's max/fmax/min/fmin return the non-NaN operand: max/min here are
// isnan selects, so a NaN propagates. The kernels assume IEEE semantics:
// compile with -fno-fast-math (fast math may fold isnan away).
#ifdef __METAL_VERSION__
#include <metal_stdlib>
#endif
using namespace metal;

#ifndef TSR_THREADS
#error "define TSR_THREADS (threads per threadgroup) before the tile library"
#endif
#ifndef TSR_VEC
#error "define TSR_VEC (contiguous lanes per thread) before the tile library"
#endif
#define TSR_SIMD 32
static_assert(TSR_THREADS % TSR_SIMD == 0, "a threadgroup is whole simdgroups of 32");

namespace tsr {

typedef long i64;

struct ctx {
  uint tid;        // thread_position_in_threadgroup
  uint simd_lane;  // thread_index_in_simdgroup
  uint simd;       // simdgroup_index_in_threadgroup
};

template <class T, int N>
struct tile {
  static_assert(N % (TSR_THREADS * TSR_VEC) == 0, "tile lanes must fill whole vectors on every thread");
  enum { E = N / TSR_THREADS, P = N / TSR_THREADS / TSR_VEC };  // lanes, parts per thread
  T v[E];
};

template <class T> inline T inf();
template <> inline float inf<float>() { return as_type<float>(0x7f800000u); }
template <class T> inline T nan();
template <> inline float nan<float>() { return as_type<float>(0x7fffffffu); }
inline i64 imin(i64 a, i64 b) { return a < b ? a : b; }

// First lane held by this thread in part c.
template <int N> inline i64 lane0(ctx k, int c) { return i64(c) * TSR_THREADS * TSR_VEC + i64(k.tid) * TSR_VEC; }

template <class T, int N> inline tile<T, N> full(T x) {
  tile<T, N> r;
  for (int i = 0; i < tile<T, N>::E; ++i) r.v[i] = x;
  return r;
}

// ---- scalar conversions ------------------------------------------------------
inline float widen(float x) { return x; }
inline float widen(half h) { return float(h); }
inline float widen(ushort b) { return as_type<float>(uint(b) << 16); }  // bf16 bits
template <class S> inline S narrow(float x);
template <> inline float narrow<float>(float x) { return x; }
// float -> half rounds to nearest even; NaN stays NaN, overflow becomes inf.
template <> inline half narrow<half>(float x) { return half(x); }
template <> inline ushort narrow<ushort>(float x) {
  uint u = as_type<uint>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return ushort((u >> 16) | 0x40u);  // quiet NaN
  return ushort((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);                 // nearest even
}
// Integers and i1 (uchar: 0 or 1) are stored as they are computed.
inline int widen(int x) { return x; }
inline long widen(long x) { return x; }
inline uchar widen(uchar x) { return x; }
template <class S> inline S narrow(int x) { return S(x); }
template <class S> inline S narrow(long x) { return S(x); }
template <class S> inline S narrow(uchar x) { return S(x); }

// ---- loads and stores ----------------------------------------------------------
template <class T, int N, class S> inline tile<T, N> load(ctx k, device const S* p) {
  tile<T, N> r;
  for (int c = 0; c < tile<T, N>::P; ++c)
    for (int v = 0; v < TSR_VEC; ++v) r.v[c * TSR_VEC + v] = T(widen(p[lane0<N>(k, c) + v]));
  return r;
}

template <class T, int N, class S> inline tile<T, N> load_masked(ctx k, device const S* p, i64 count, T other) {
  tile<T, N> r;
  for (int c = 0; c < tile<T, N>::P; ++c) {
    const i64 l = lane0<N>(k, c);
    for (int v = 0; v < TSR_VEC; ++v) r.v[c * TSR_VEC + v] = l + v < count ? T(widen(p[l + v])) : other;
  }
  return r;
}

// Lane l reads p[l * stride] (a transposed view); lanes from count on are 0.
template <class T, int N, class S> inline tile<T, N> load_strided(ctx k, device const S* p, i64 stride, i64 count) {
  tile<T, N> r;
  for (int c = 0; c < tile<T, N>::P; ++c) {
    const i64 l = lane0<N>(k, c);
    for (int v = 0; v < TSR_VEC; ++v) r.v[c * TSR_VEC + v] = l + v < count ? T(widen(p[(l + v) * stride])) : T(0);
  }
  return r;
}

// One element, widened; every thread loads it (a broadcast operand).
template <class T, class S> inline T load1(device const S* p) { return T(widen(*p)); }

template <class S, class T> inline void store(ctx k, device S* p, T x) {
  if (k.tid == 0) *p = narrow<S>(x);
}
template <class S, class T, int N> inline void store(ctx k, device S* p, tile<T, N> t) {
  for (int c = 0; c < tile<T, N>::P; ++c)
    for (int v = 0; v < TSR_VEC; ++v) p[lane0<N>(k, c) + v] = narrow<S>(t.v[c * TSR_VEC + v]);
}
// A read-soon hint (tile.prefetch): nothing on Metal.
template <class S> inline void prefetch(ctx, device const S*, i64) {}
template <class S, class T, int N> inline void store_masked(ctx k, device S* p, i64 count, tile<T, N> t) {
  for (int c = 0; c < tile<T, N>::P; ++c)
    for (int v = 0; v < TSR_VEC; ++v)
      if (lane0<N>(k, c) + v < count) p[lane0<N>(k, c) + v] = narrow<S>(t.v[c * TSR_VEC + v]);
}

// Lane l reads p[addr[l]] (tessera.concat's operands).
template <class T, int N, class S> inline tile<T, N> gather(ctx, device const S* p, tile<long, N> addr) {
  tile<T, N> r;
  for (int i = 0; i < tile<T, N>::E; ++i) r.v[i] = T(widen(p[addr.v[i]]));
  return r;
}

// ---- integer arithmetic --------------------------------------------------------------
// i32/i64 wrap (two's complement, as numpy's): computed unsigned, since signed
// overflow is undefined in MSL as in C++. Declared before the tile forms below,
// which find them by ordinary lookup.
#define TSR_INT_OPS(T, U)                                                  \
  inline T fn_neg(T x) { return T(U(0) - U(x)); }                         \
  inline T fn_abs(T x) { return x < 0 ? T(U(0) - U(x)) : x; }             \
  inline T fn_add(T a, T b) { return T(U(a) + U(b)); }                     \
  inline T fn_sub(T a, T b) { return T(U(a) - U(b)); }                     \
  inline T fn_mul(T a, T b) { return T(U(a) * U(b)); }                     \
  inline T fn_max(T a, T b) { return a < b ? b : a; }                      \
  inline T fn_min(T a, T b) { return b < a ? b : a; }
TSR_INT_OPS(int, uint)
TSR_INT_OPS(long, ulong)
#undef TSR_INT_OPS

// ---- combines ----------------------------------------------------------------------
template <class T> inline T combine_sum(T a, T b) { return a + b; }
template <class T> inline T combine_prod(T a, T b) { return a * b; }
// A NaN accumulator stays NaN; a NaN operand replaces it. Not metal::max,
// which returns the other operand when one is NaN.
template <class T> inline T combine_max(T a, T b) { return (a < b || isnan(b)) ? b : a; }
template <class T> inline T combine_min(T a, T b) { return (b < a || isnan(b)) ? b : a; }
template <class T> inline T divf(T a, T b) { return a / b; }

#define TSR_TILE_OP(NAME)                                                          \
  template <class T, int N> inline tile<T, N> NAME(tile<T, N> a, tile<T, N> b) {   \
    for (int i = 0; i < tile<T, N>::E; ++i) a.v[i] = NAME(a.v[i], b.v[i]);         \
    return a;                                                                      \
  }
TSR_TILE_OP(combine_sum)
TSR_TILE_OP(combine_prod)
TSR_TILE_OP(combine_max)
TSR_TILE_OP(combine_min)
TSR_TILE_OP(divf)
#undef TSR_TILE_OP

// ---- pointwise math (f32 only) -----------------------------------------------------
// Metal's math library with fast math off. MSL has no erf/erfc, so gelu
// (erf form) is refused by the renderer; gelu_tanh is here.
// sigmoid as (1 or e)/(1+e), e = e^-|x|: never overflows.
inline float f_sigmoid(float x) {
  const float e = exp(-fabs(x));
  return (x >= 0 ? 1.0f : e) / (1.0f + e);
}

#define TSR_UNARY(NAME, EXPR)                                                      \
  inline float NAME(float x) { return EXPR; }                                      \
  template <class T, int N> inline tile<T, N> NAME(tile<T, N> t) {                 \
    for (int i = 0; i < tile<T, N>::E; ++i) t.v[i] = NAME(t.v[i]);                 \
    return t;                                                                      \
  }
TSR_UNARY(fn_neg, -x)
TSR_UNARY(fn_abs, fabs(x))
TSR_UNARY(fn_exp, exp(x))
TSR_UNARY(fn_log, log(x))
TSR_UNARY(fn_sqrt, sqrt(x))
TSR_UNARY(fn_rsqrt, rsqrt(x))
TSR_UNARY(fn_tanh, tanh(x))
TSR_UNARY(fn_relu, x < 0 ? 0.0f : x)  // NaN < 0 is false: NaN stays
TSR_UNARY(fn_sigmoid, f_sigmoid(x))
TSR_UNARY(fn_silu, x == -inf<float>() ? -0.0f : x * f_sigmoid(x))
TSR_UNARY(fn_gelu_tanh, x == -inf<float>() ? -0.0f : x * f_sigmoid(1.5957691216057308f * (x + 0.044715f * x * x * x)))
TSR_UNARY(fn_sin, sin(x))
TSR_UNARY(fn_cos, cos(x))
TSR_UNARY(fn_exp2, exp2(x))
TSR_UNARY(fn_log2, log2(x))
TSR_UNARY(fn_floor, floor(x))
TSR_UNARY(fn_ceil, ceil(x))
TSR_UNARY(fn_round, rint(x))  // half to even, as numpy's round
#undef TSR_UNARY

#define TSR_BINARY(NAME, EXPR)                                                     \
  inline float NAME(float a, float b) { return EXPR; }                             \
  template <class T, int N> inline tile<T, N> NAME(tile<T, N> a, tile<T, N> b) {   \
    for (int i = 0; i < tile<T, N>::E; ++i) a.v[i] = NAME(a.v[i], b.v[i]);         \
    return a;                                                                      \
  }
TSR_BINARY(fn_add, a + b)
TSR_BINARY(fn_sub, a - b)
TSR_BINARY(fn_mul, a * b)
TSR_BINARY(fn_div, a / b)
TSR_BINARY(fn_pow, pow(a, b))
TSR_BINARY(fn_max, combine_max(a, b))  // NaN in either operand gives NaN
TSR_BINARY(fn_min, combine_min(a, b))
#undef TSR_BINARY

// ---- comparisons, logic, where, casts, iota ------------------------------------------
// docs/semantics.md states the rules. Comparisons give i1; a NaN operand
// compares false (ne: true), as IEEE's.
#define TSR_COMPARE(NAME, OP)                                                      \
  template <class T> inline uchar NAME(T a, T b) { return uchar(a OP b); }         \
  template <class T, int N> inline tile<uchar, N> NAME(tile<T, N> a, tile<T, N> b) { \
    tile<uchar, N> r;                                                              \
    for (int i = 0; i < tile<T, N>::E; ++i) r.v[i] = uchar(a.v[i] OP b.v[i]);      \
    return r;                                                                      \
  }
TSR_COMPARE(fn_eq, ==)
TSR_COMPARE(fn_ne, !=)
TSR_COMPARE(fn_lt, <)
TSR_COMPARE(fn_le, <=)
TSR_COMPARE(fn_gt, >)
TSR_COMPARE(fn_ge, >=)
#undef TSR_COMPARE

// A byte of an i1 array other than 0 or 1 reads as true, as numpy's logic does.
inline uchar fn_and(uchar a, uchar b) { return uchar(a != 0 && b != 0); }
inline uchar fn_or(uchar a, uchar b) { return uchar(a != 0 || b != 0); }
inline uchar fn_not(uchar a) { return uchar(a == 0); }
template <int N> inline tile<uchar, N> fn_and(tile<uchar, N> a, tile<uchar, N> b) {
  for (int i = 0; i < tile<uchar, N>::E; ++i) a.v[i] = fn_and(a.v[i], b.v[i]);
  return a;
}
template <int N> inline tile<uchar, N> fn_or(tile<uchar, N> a, tile<uchar, N> b) {
  for (int i = 0; i < tile<uchar, N>::E; ++i) a.v[i] = fn_or(a.v[i], b.v[i]);
  return a;
}
template <int N> inline tile<uchar, N> fn_not(tile<uchar, N> a) {
  for (int i = 0; i < tile<uchar, N>::E; ++i) a.v[i] = fn_not(a.v[i]);
  return a;
}

// where(c, a, b)
template <class T> inline T fn_select(uchar c, T a, T b) { return c ? a : b; }
template <class T, int N> inline tile<T, N> fn_select(tile<uchar, N> c, tile<T, N> a, tile<T, N> b) {
  for (int i = 0; i < tile<T, N>::E; ++i) a.v[i] = c.v[i] ? a.v[i] : b.v[i];
  return a;
}

// Conversions between compute types (tessera.cast), one overload set per
// destination (MSL is C++14: no if constexpr): to an integer, floats truncate
// toward zero and saturate, NaN gives 0; integers wrap to the narrower width;
// to i1, nonzero (NaN included) is 1; to f32, the nearest value (ties to even).
template <class To> struct cvt_to;
template <> struct cvt_to<uchar> {
  template <class F> static uchar from(F x) { return uchar(x != F(0)); }
};
template <> struct cvt_to<int> {
  static int from(uchar x) { return int(x != 0); }
  static int from(int x) { return x; }
  static int from(long x) { return int(uint(ulong(x))); }  // the low 32 bits
  static int from(float x) {
    if (isnan(x)) return 0;
    if (x >= 2147483648.0f) return 2147483647;
    if (x <= -2147483648.0f) return -2147483647 - 1;
    return int(x);
  }
};
template <> struct cvt_to<long> {
  static long from(uchar x) { return long(x != 0); }
  static long from(int x) { return long(x); }
  static long from(long x) { return x; }
  static long from(float x) {
    if (isnan(x)) return 0;
    if (x >= 9223372036854775808.0f) return 9223372036854775807L;
    if (x <= -9223372036854775808.0f) return -9223372036854775807L - 1;
    return long(x);
  }
};
template <> struct cvt_to<float> {
  static float from(uchar x) { return float(x != 0); }
  static float from(int x) { return float(x); }
  static float from(long x) { return float(x); }
  static float from(float x) { return x; }
};
template <class To, class From> inline To cvt(From x) { return cvt_to<To>::from(x); }
template <class To, class From, int N> inline tile<To, N> cvt(tile<From, N> t) {
  tile<To, N> r;
  for (int i = 0; i < tile<From, N>::E; ++i) r.v[i] = cvt_to<To>::from(t.v[i]);
  return r;
}

// Lane l: ((base + l) / inner) % extent, the coordinate along one axis of the
// element at flat index base + l (tessera.iota).
template <class T, int N> inline tile<T, N> iota(ctx k, i64 base, i64 inner, i64 extent) {
  tile<T, N> r;
  for (int c = 0; c < tile<T, N>::P; ++c)
    for (int v = 0; v < TSR_VEC; ++v) r.v[c * TSR_VEC + v] = T(((base + lane0<N>(k, c) + v) / inner) % extent);
  return r;
}

// Lanes at index >= count (the tile's lane numbering) become other.
template <class T, int N> inline tile<T, N> mask_lanes(ctx k, tile<T, N> t, i64 count, T other) {
  for (int c = 0; c < tile<T, N>::P; ++c)
    for (int v = 0; v < TSR_VEC; ++v)
      if (lane0<N>(k, c) + v >= count) t.v[c * TSR_VEC + v] = other;
  return t;
}

// x rounded to storage type S (nearest even) and widened back: a cast to S
// inside a fused kernel.
template <class S, class T> inline T round_to(T x) { return T(widen(narrow<S>(x))); }
template <class S, class T, int N> inline tile<T, N> round_to(tile<T, N> t) {
  for (int i = 0; i < tile<T, N>::E; ++i) t.v[i] = round_to<S>(t.v[i]);
  return t;
}

// Threadgroup reduction in a fixed order, as on CUDA: a fold over each
// thread's lanes, a butterfly across the simdgroup (simd_shuffle_xor), then
// the simdgroups' results combined in order through threadgroup memory
// (`scratch`: TSR_THREADS / 32 floats declared by the kernel, so every thread
// holds the same value). One simdgroup broadcasts lane 0's value instead
// (the butterfly's lanes can differ in the sign of a zero max). Deterministic.
#define TSR_REDUCE_LANES(NAME)                                                                 \
  template <class T, int N, class TG> inline T reduce_lanes_##NAME(ctx k, tile<T, N> t, TG scratch) { \
    T x = t.v[0];                                                                              \
    for (int i = 1; i < tile<T, N>::E; ++i) x = combine_##NAME(x, t.v[i]);                     \
    for (ushort off = TSR_SIMD / 2; off >= 1; off /= 2) x = combine_##NAME(x, simd_shuffle_xor(x, off)); \
    if (TSR_THREADS == TSR_SIMD) return simd_broadcast(x, ushort(0));                          \
    threadgroup_barrier(mem_flags::mem_threadgroup); /* earlier readers are done */             \
    if (k.simd_lane == 0) scratch[k.simd] = x;                                                 \
    threadgroup_barrier(mem_flags::mem_threadgroup);                                           \
    x = scratch[0];                                                                            \
    for (int w = 1; w < TSR_THREADS / TSR_SIMD; ++w) x = combine_##NAME(x, scratch[w]);        \
    return x;                                                                                  \
  }
TSR_REDUCE_LANES(sum)
TSR_REDUCE_LANES(prod)
TSR_REDUCE_LANES(max)
TSR_REDUCE_LANES(min)
#undef TSR_REDUCE_LANES

}  // namespace tsr
