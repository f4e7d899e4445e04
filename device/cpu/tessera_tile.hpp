// Tessera CPU device tile library. Rendered CPU kernels call only these
// functions; the renderer embeds this file at the top of every kernel source,
// so a kernel's SHA-256 covers every line the host compiler sees.
//
// A tile<T, N> is N lanes of T held in native SIMD vectors: 64-byte zmm parts
// with AVX-512, 32-byte ymm parts with AVX/AVX2, 16-byte xmm parts otherwise. Storage
// types f16/bf16 are widened to f32 on load and rounded (to nearest even) on
// store. max/min propagate NaN, unlike maxps/fmaxf, which drop it. Pointwise
// math (fn_*) calls glibc's libmvec (see there).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace tsr {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // 64-byte parts passed between inline functions: no ABI involved

struct f16_t { uint16_t bits; };
struct bf16_t { uint16_t bits; };

// N lanes as N/L register-sized vectors (or one smaller vector when N < L):
// GCC keeps vectors wider than the hardware on the stack and scalarizes
// selects on them (64-byte parts on an AVX2 machine made softmax 30x slower),
// so a tile is an array of register-sized parts and every operation loops
// over the parts. Lane order, and so every result, is the same at any width.
#if defined(__AVX512F__)
#define TSR_PART_BYTES 64
#elif defined(__AVX__)
#define TSR_PART_BYTES 32
#else
#define TSR_PART_BYTES 16
#endif
template <class T, int N>
struct tile {
  static_assert(N > 0 && (N & (N - 1)) == 0, "tile lanes must be a power of two");
  static constexpr int L = int(TSR_PART_BYTES / sizeof(T)) < N ? int(TSR_PART_BYTES / sizeof(T)) : N;  // lanes per part
  static constexpr int P = N / L;                                               // parts
  typedef T vec __attribute__((vector_size(L * sizeof(T))));
  // unaligned, aliasing-safe view of memory for loads and stores of one part
  typedef T uvec __attribute__((vector_size(L * sizeof(T)), aligned(sizeof(T)), may_alias));
  vec v[P];
};

// Integer views for f16/bf16 conversion (vector attributes on a dependent type
// only work as member typedefs, not alias templates).
template <int L>
struct lanes {
  typedef uint16_t u16 __attribute__((vector_size(L * 2)));
  typedef uint32_t u32 __attribute__((vector_size(L * 4)));
  typedef float f32 __attribute__((vector_size(L * 4)));
};

template <class T> inline T inf() { return std::numeric_limits<T>::infinity(); }
template <class T> inline T nan() { return std::numeric_limits<T>::quiet_NaN(); }
inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

#define TSR_PARTS _Pragma("GCC unroll 16") for (int q = 0; q < tile<T, N>::P; ++q)
#define TSR_PARTS_OF(T) _Pragma("GCC unroll 16") for (int q = 0; q < tile<T, N>::P; ++q)

template <class T, int N> inline tile<T, N> full(T x) {
  tile<T, N> r;
  TSR_PARTS r.v[q] = typename tile<T, N>::vec{} + x;
  return r;
}

// ---- scalar conversions (stores and masked tails) --------------------------
inline float widen(float x) { return x; }
inline double widen(double x) { return x; }
inline float widen(bf16_t h) {
  uint32_t b = uint32_t(h.bits) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline float widen(f16_t h) {
  uint32_t sign = uint32_t(h.bits & 0x8000u) << 16, em = h.bits & 0x7fffu, b = em << 13;
  float f;
  std::memcpy(&f, &b, 4);
  f *= 0x1p112f;  // rebias the exponent; exact for normals and subnormals
  std::memcpy(&b, &f, 4);
  if (em >= 0x7c00u) b = 0x7f800000u | (em << 13);  // inf / NaN
  b |= sign;
  std::memcpy(&f, &b, 4);
  return f;
}
// Integers and i1 (a byte, 0 or 1) are stored as they are computed.
inline int32_t widen(int32_t x) { return x; }
inline int64_t widen(int64_t x) { return x; }
inline uint8_t widen(uint8_t x) { return x; }
template <class S> inline S narrow(int32_t x) { return S(x); }
template <class S> inline S narrow(int64_t x) { return S(x); }
template <class S> inline S narrow(uint8_t x) { return S(x); }
template <class S> inline S narrow(float x);
template <class S> inline S narrow(double x);
template <> inline float narrow<float>(float x) { return x; }
template <> inline double narrow<double>(double x) { return x; }
template <> inline bf16_t narrow<bf16_t>(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t{uint16_t((u >> 16) | 0x40u)};
  return bf16_t{uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}
template <> inline f16_t narrow<f16_t>(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  uint16_t sign = uint16_t((b >> 16) & 0x8000u);
  uint32_t a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return f16_t{uint16_t(sign | 0x7e00u)};
  if (a >= 0x477ff000u) return f16_t{uint16_t(sign | 0x7c00u)};
  if (a < 0x38800000u) {  // subnormal or zero in f16
    float s;
    std::memcpy(&s, &a, 4);
    s *= 0x1p24f;
    uint32_t q = uint32_t(s);
    float rem = s - float(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
    return f16_t{uint16_t(sign | q)};
  }
  uint32_t h = (((a >> 23) - 112) << 10) | ((a & 0x7fffffu) >> 13), rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return f16_t{uint16_t(sign | h)};
}

// Narrowing from f64 (round_to on f64 lanes). Rounding to float with round-to-odd
// first keeps the final rounding to f16/bf16 a single correct one (24 >= 11 + 2 bits).
inline float to_float_odd(double x) {
  float f = float(x);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (double(f) != x && x == x) {
    if (double(f) > x ? x >= 0 : x < 0) --u;  // truncate toward zero (inf -> max finite)
    u |= 1u;                                   // sticky bit
  }
  std::memcpy(&f, &u, 4);
  return f;
}
template <> inline float narrow<float>(double x) { return float(x); }
template <> inline double narrow<double>(float x) { return x; }
template <> inline bf16_t narrow<bf16_t>(double x) { return narrow<bf16_t>(to_float_odd(x)); }
template <> inline f16_t narrow<f16_t>(double x) { return narrow<f16_t>(to_float_odd(x)); }

// ---- loads -----------------------------------------------------------------
// Part by part: a whole-tile memcpy makes GCC keep a stack copy of every tile.

template <class T, int N> inline tile<T, N> load(const T* p) {
  tile<T, N> r;
  TSR_PARTS r.v[q] = *reinterpret_cast<const typename tile<T, N>::uvec*>(p + q * tile<T, N>::L);
  return r;
}
// f32 storage into an f64 tile (a cast from f32 to f64 computes in f64).
template <class T, int N, class = std::enable_if_t<std::is_same_v<T, double>>>
inline tile<T, N> load(const float* p) {
  constexpr int L = tile<T, N>::L;
  typedef float fvec __attribute__((vector_size(L * 4), aligned(4), may_alias));
  tile<T, N> r;
  TSR_PARTS r.v[q] = __builtin_convertvector(*reinterpret_cast<const fvec*>(p + q * L), typename tile<T, N>::vec);
  return r;
}
// f16/bf16 storage into an f64 tile (a cast to f64 in a fused region): lane
// by lane, through the exact widening to f32.
template <class T, int N, class S> inline tile<T, N> load_widened(const S* p) {
  T lanes[N];
  for (int i = 0; i < N; ++i) lanes[i] = T(widen(p[i]));
  tile<T, N> r;
  std::memcpy(&r.v, lanes, sizeof r.v);
  return r;
}
template <class T, int N> inline tile<T, N> load(const bf16_t* p) {
  if constexpr (sizeof(T) == 8) {
    return load_widened<T, N>(p);
  } else {
    constexpr int L = tile<T, N>::L;
    tile<T, N> r;
    TSR_PARTS {
      typename lanes<L>::u16 h;
      std::memcpy(&h, p + q * L, sizeof h);
      typename lanes<L>::u32 w = __builtin_convertvector(h, typename lanes<L>::u32) << 16;
      std::memcpy(&r.v[q], &w, sizeof w);
    }
    return r;
  }
}
template <class T, int N> inline tile<T, N> load(const f16_t* p) {
  if constexpr (sizeof(T) == 8) {
    return load_widened<T, N>(p);
  } else {
    constexpr int L = tile<T, N>::L;
    tile<T, N> r;
    TSR_PARTS {
      typename lanes<L>::u16 h;
      std::memcpy(&h, p + q * L, sizeof h);
      typedef typename lanes<L>::u32 u32;
      u32 x = __builtin_convertvector(h, u32);
      u32 em = x & 0x7fffu, sign = (x & 0x8000u) << 16, bits = em << 13;
      typename lanes<L>::f32 f;
      std::memcpy(&f, &bits, sizeof f);
      f *= 0x1p112f;  // rebias the exponent; exact for normals and subnormals
      std::memcpy(&bits, &f, sizeof f);
      bits = (em >= 0x7c00u) ? (0x7f800000u | (em << 13)) : bits;  // inf / NaN
      bits |= sign;
      std::memcpy(&r.v[q], &bits, sizeof bits);
    }
    return r;
  }
}
template <class T, class S> inline T load1(const S* p) { return widen(*p); }
// Lane i reads p[addr[i]] (tessera.concat's operands).
template <class T, int N, class S> inline tile<T, N> gather(const S* p, const tile<int64_t, N>& addr) {
  int64_t a[N];
  T lanes[N];
  std::memcpy(a, &addr.v, sizeof a);
  for (int i = 0; i < N; ++i) lanes[i] = T(widen(p[a[i]]));
  tile<T, N> r;
  std::memcpy(&r.v, lanes, sizeof r.v);
  return r;
}
// Lane i reads p[i * stride] (a transposed view); lanes from count on are 0.
template <class T, int N, class S> inline tile<T, N> load_strided(const S* p, int64_t stride, int64_t count) {
  T lanes[N];
  for (int i = 0; i < N; ++i) lanes[i] = i < count ? T(widen(p[i * stride])) : T(0);
  tile<T, N> r;
  std::memcpy(&r.v, lanes, sizeof r.v);
  return r;
}

template <class T, int N, class S> inline tile<T, N> load_masked(const S* p, int64_t count, T other) {
  T lanes[N];
  for (int i = 0; i < N; ++i) lanes[i] = i < count ? T(widen(p[i])) : other;
  tile<T, N> r;
  std::memcpy(&r.v, lanes, sizeof r.v);
  return r;
}

// ---- stores ----------------------------------------------------------------
template <class S, class T> inline void store(S* p, T x) { *p = narrow<S>(x); }
template <class S, class T, int N> inline void store(S* p, const tile<T, N>& t) {
  if constexpr (sizeof(S) == sizeof(T)) {
    TSR_PARTS *reinterpret_cast<typename tile<T, N>::uvec*>(p + q * tile<T, N>::L) = t.v[q];
  } else {
    T lanes[N];
    std::memcpy(lanes, &t.v, sizeof lanes);
    for (int i = 0; i < N; ++i) p[i] = narrow<S>(lanes[i]);
  }
}
// A read-soon hint (tile.prefetch): the CPU's own prefetchers follow rows.
template <class S> inline void prefetch(const S*, int64_t) {}
template <class S, class T, int N> inline void store_masked(S* p, int64_t count, const tile<T, N>& t) {
  T lanes[N];
  std::memcpy(lanes, &t.v, sizeof lanes);
  for (int i = 0; i < N && i < count; ++i) p[i] = narrow<S>(lanes[i]);
}

// ---- combines ----------------------------------------------------------------
template <class T> inline T combine_sum(T a, T b) { return a + b; }
template <class T> inline T combine_prod(T a, T b) { return a * b; }
// NaN-propagating: once the accumulator a is NaN it stays NaN; a NaN b replaces it.
template <class T> inline T combine_max(T a, T b) { return (a < b || b != b) ? b : a; }
template <class T> inline T combine_min(T a, T b) { return (b < a || b != b) ? b : a; }

template <class T, int N> inline tile<T, N> combine_sum(tile<T, N> a, tile<T, N> b) {
  TSR_PARTS a.v[q] += b.v[q];
  return a;
}
template <class T, int N> inline tile<T, N> combine_prod(tile<T, N> a, tile<T, N> b) {
  TSR_PARTS a.v[q] *= b.v[q];
  return a;
}
// One register-sized part of a NaN-propagating max/min. With AVX-512: x86's
// max/min return their second operand when either is NaN, which keeps a NaN
// accumulator; vfixupimm then puts a NaN input in (table 0x22: a QNaN/SNaN in x
// gives QNaN(x), every other class keeps the result). Two instructions; the
// portable compare-or-unordered select costs three and runs ~15% slower here.
template <bool kMax, class V>
inline V extremum_part(V acc, V x) {
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64 && std::is_same_v<decltype(acc[0] + 0), float>) {
    __m512 a = (__m512)acc, b = (__m512)x;
    __m512 r = kMax ? _mm512_max_ps(b, a) : _mm512_min_ps(b, a);
    return (V)_mm512_fixupimm_ps(r, b, _mm512_set1_epi32(0x22), 0);
  } else if constexpr (sizeof(V) == 64 && std::is_same_v<decltype(acc[0] + 0), double>) {
    __m512d a = (__m512d)acc, b = (__m512d)x;
    __m512d r = kMax ? _mm512_max_pd(b, a) : _mm512_min_pd(b, a);
    return (V)_mm512_fixupimm_pd(r, b, _mm512_set1_epi64(0x22), 0);
  }
#endif
  if constexpr (kMax) return ((acc < x) | (x != x)) ? x : acc;
  else return ((x < acc) | (x != x)) ? x : acc;
}
template <class T, int N> inline tile<T, N> combine_max(tile<T, N> a, tile<T, N> b) {
  TSR_PARTS a.v[q] = extremum_part<true>(a.v[q], b.v[q]);
  return a;
}
template <class T, int N> inline tile<T, N> combine_min(tile<T, N> a, tile<T, N> b) {
  TSR_PARTS a.v[q] = extremum_part<false>(a.v[q], b.v[q]);
  return a;
}
template <class T, int N> inline tile<T, N> divf(tile<T, N> a, tile<T, N> b) {
  TSR_PARTS a.v[q] /= b.v[q];
  return a;
}
template <class T> inline T divf(T a, T b) { return a / b; }

// ---- pointwise math --------------------------------------------------------
// exp/log/tanh/erfc/pow/sin/cos/exp2/log2/erf of a part go to glibc's libmvec (vector variants of
// libm, <= 4 ulp, IEEE special cases kept) through its _ZGV entry points,
// called directly: glibc declares them only under -ffast-math, and GCC's
// auto-vectorizer would pick the 256-bit variants on AVX-512 machines that
// prefer 256-bit vectors. Widest variant the ISA allows; scalar libm otherwise.
// The kernel links -lmvec (runtime/cpu_module_cache.cpp).
#if defined(__x86_64__) && defined(__GLIBC__) && !defined(TSR_NO_LIBMVEC)
#if defined(__AVX512F__)
#define TSR_MV_BYTES 64
#elif defined(__AVX2__)
#define TSR_MV_BYTES 32
#else
#define TSR_MV_BYTES 16
#endif
#else
#define TSR_MV_BYTES 0
#endif

// B bytes of T as one GCC vector (a member typedef: see lanes).
template <class T, int B>
struct vchunk {
  typedef T type __attribute__((vector_size(B)));
};
template <class V, class = void>
struct lane_of {
  typedef V type;  // a scalar
};
template <class V>
struct lane_of<V, std::void_t<decltype(std::declval<V>()[0])>> {
  typedef std::remove_cv_t<std::remove_reference_t<decltype(std::declval<V>()[0])>> type;
};

namespace mv {
typedef vchunk<float, 16>::type f4;
typedef vchunk<double, 16>::type d2;
typedef vchunk<float, 32>::type f8;
typedef vchunk<double, 32>::type d4;
typedef vchunk<float, 64>::type f16;
typedef vchunk<double, 64>::type d8;

// One op: its scalar libm form and (below) its vector variants.
// kVecScalar: scalars too go through the vector variant (glibc's scalar
// erfc errs up to 3.8 ulp near 1.2, libmvec's < 2).
#define TSR_MV_OP1(F, VS)                                    \
  struct F##_op {                                            \
    static constexpr bool kVecScalar = VS;                   \
    static float s(float x) { return std::F(x); }            \
    static double s(double x) { return std::F(x); }          \
  };
#define TSR_MV_OP2(F)                                                  \
  struct F##_op {                                                      \
    static constexpr bool kVecScalar = false;                          \
    static float s(float x, float y) { return std::F(x, y); }          \
    static double s(double x, double y) { return std::F(x, y); }       \
  };
TSR_MV_OP1(exp, false)
TSR_MV_OP1(log, false)
TSR_MV_OP1(tanh, false)
TSR_MV_OP1(erfc, true)
TSR_MV_OP1(sin, false)
TSR_MV_OP1(cos, false)
TSR_MV_OP1(exp2, false)
TSR_MV_OP1(log2, false)
TSR_MV_OP1(erf, false)
TSR_MV_OP2(pow)
#undef TSR_MV_OP1
#undef TSR_MV_OP2

// ISA letter (b: SSE, d: AVX2, e: AVX-512), lanes of f32 / f64, types.
#define TSR_MV_ISA1(F, I, NF, ND, TF, TD)                                        \
  extern "C" TF _ZGV##I##N##NF##v_##F##f(TF);                                    \
  extern "C" TD _ZGV##I##N##ND##v_##F(TD);                                       \
  inline TF call(F##_op, TF x) { return _ZGV##I##N##NF##v_##F##f(x); }           \
  inline TD call(F##_op, TD x) { return _ZGV##I##N##ND##v_##F(x); }
#define TSR_MV_ISA2(F, I, NF, ND, TF, TD)                                        \
  extern "C" TF _ZGV##I##N##NF##vv_##F##f(TF, TF);                               \
  extern "C" TD _ZGV##I##N##ND##vv_##F(TD, TD);                                  \
  inline TF call(F##_op, TF x, TF y) { return _ZGV##I##N##NF##vv_##F##f(x, y); } \
  inline TD call(F##_op, TD x, TD y) { return _ZGV##I##N##ND##vv_##F(x, y); }
#define TSR_MV_ISA(I, NF, ND, TF, TD) \
  TSR_MV_ISA1(exp, I, NF, ND, TF, TD) \
  TSR_MV_ISA1(log, I, NF, ND, TF, TD) \
  TSR_MV_ISA1(tanh, I, NF, ND, TF, TD) \
  TSR_MV_ISA1(erfc, I, NF, ND, TF, TD) \
  TSR_MV_ISA1(sin, I, NF, ND, TF, TD)  \
  TSR_MV_ISA1(cos, I, NF, ND, TF, TD)  \
  TSR_MV_ISA1(exp2, I, NF, ND, TF, TD) \
  TSR_MV_ISA1(log2, I, NF, ND, TF, TD) \
  TSR_MV_ISA1(erf, I, NF, ND, TF, TD)  \
  TSR_MV_ISA2(pow, I, NF, ND, TF, TD)
#if TSR_MV_BYTES >= 16
TSR_MV_ISA(b, 4, 2, f4, d2)
#endif
#if TSR_MV_BYTES >= 32
TSR_MV_ISA(d, 8, 4, f8, d4)
#endif
#if TSR_MV_BYTES >= 64
TSR_MV_ISA(e, 16, 8, f16, d8)
#endif
#undef TSR_MV_ISA
#undef TSR_MV_ISA1
#undef TSR_MV_ISA2

// Op applied to a scalar or to every lane of a GCC vector of any width.
template <class Op, class V, class... W> inline V apply(V x, W... y) {
  if constexpr (std::is_arithmetic_v<V> && Op::kVecScalar && TSR_MV_BYTES >= 16) {
    typename vchunk<V, 16>::type c = {x};
    return call(Op{}, c)[0];
  } else if constexpr (std::is_arithmetic_v<V>) {
    return Op::s(x, y...);
  } else {
    typedef typename lane_of<V>::type T;
    constexpr int B = TSR_MV_BYTES < int(sizeof(V)) ? TSR_MV_BYTES : int(sizeof(V));
    if constexpr (B >= 16) {
      typedef typename vchunk<T, B>::type C;
      C c[sizeof(V) / B], d[sizeof(V) / B];
      std::memcpy(c, &x, sizeof x);
      ((std::memcpy(d, &y, sizeof x)), ...);
      for (int i = 0; i < int(sizeof(V) / B); ++i) c[i] = call(Op{}, c[i], (void(y), d[i])...);
      std::memcpy(&x, c, sizeof x);
    } else {
      for (int i = 0; i < int(sizeof(V) / sizeof(T)); ++i) x[i] = Op::s(x[i], y[i]...);
    }
    return x;
  }
}
}  // namespace mv

template <class V> inline V bcast(double c) {
  if constexpr (std::is_arithmetic_v<V>) return V(c);
  else return V{} + typename lane_of<V>::type(c);
}
template <class V> inline V vsqrt(V x) {
  if constexpr (std::is_arithmetic_v<V>) {
    return __builtin_sqrt(x);
  } else {
    for (int i = 0; i < int(sizeof(V) / sizeof(x[0])); ++i) x[i] = __builtin_sqrt(x[i]);
    return x;
  }
}
// floor, ceil and round half to even (numpy's rint), lane by lane: exact.
#define TSR_LANEWISE(NAME, F)                                                             \
  template <class V> inline V NAME(V x) {                                                 \
    if constexpr (std::is_arithmetic_v<V>) {                                              \
      return F(x);                                                                        \
    } else {                                                                              \
      for (int i = 0; i < int(sizeof(V) / sizeof(x[0])); ++i) x[i] = F(x[i]);            \
      return x;                                                                           \
    }                                                                                     \
  }
TSR_LANEWISE(vfloor, std::floor)
TSR_LANEWISE(vceil, std::ceil)
TSR_LANEWISE(vrint, std::nearbyint)
#undef TSR_LANEWISE
template <class V> inline V vfma(V a, V b, V c) {
  if constexpr (std::is_arithmetic_v<V>) {
    return __builtin_fma(a, b, c);
  } else {
    for (int i = 0; i < int(sizeof(V) / sizeof(a[0])); ++i) a[i] = __builtin_fma(a[i], b[i], c[i]);
    return a;
  }
}
template <class V> inline V vabs(V x) {
  if constexpr (std::is_arithmetic_v<V>) {
    return __builtin_fabs(x);
  } else {
    typedef typename lane_of<V>::type T;
    typedef std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t> U;
    typename vchunk<U, sizeof(V)>::type u;
    std::memcpy(&u, &x, sizeof x);
    u &= ~(U(1) << (8 * sizeof(T) - 1));
    std::memcpy(&x, &u, sizeof x);
    return x;
  }
}

// sigmoid, silu, gelu and gelu_tanh: f32 lanes run in f64 with libmvec and
// round once (< 0.51 ulp); f64 lanes take exp from scalar libm (kLibm):
// libmvec's f64 exp errs up to ~3 ulp, which the formulas' roundings pushed
// past 4 ulp (measured 4.6); glibc's scalar exp stays < 0.51 ulp.
template <class Op, bool kLibm, class V> inline V math(V x) {
  if constexpr (kLibm && !std::is_arithmetic_v<V>) {
    for (int i = 0; i < int(sizeof(V) / sizeof(x[0])); ++i) x[i] = Op::s(x[i]);
    return x;
  } else {
    return mv::apply<Op>(x);
  }
}

// f64 lanes: x * sigmoid(a + a_lo), a_lo a small correction of a (first
// order: d sigmoid / sigmoid = (1-s) da). sigmoid = 1/(1+e) for a >= 0 and
// e/(1+e) below, e = e^-|a|: never overflows, and a tiny result is e^a itself.
// x*(1 or e) and 1+e are carried exactly (fma, two-sum) into one corrected
// division, so only exp's error and one rounding remain. Where e^a is
// subnormal but the result is not (a in [-745, -708]), e^(a+C) with
// C = 64 ln 2 rounded to 2^-43 (a + C exact for a in [-1024, -512]) is scaled
// back by M 2^-64, M = e^(64 ln 2 - C).
template <bool kLibm, class V> inline V k_xsigmoid(V x, V a, V a_lo) {
  constexpr double kC = 0x1.62e42fefa39f0p+5, kM = 0x1.fffffffffffcdp-1;
  a_lo = (vabs(a_lo) <= 1) ? a_lo : bcast<V>(0);  // NaN from inf arguments
  const V e = math<mv::exp_op, kLibm>(-vabs(a)), one = bcast<V>(1);
  const V d = 1 + e, d_lo = (1 - d) + e;  // e <= 1
  const V n = a >= 0 ? x : x * e, s = (a >= 0 ? one : e) / d;
  const V n_lo = (a >= 0 ? bcast<V>(0) : vfma(x, e, -n)) + n * ((1 - s) * a_lo);
  const V q = n / d, fix = ((vfma(-q, d, n) + n_lo) - q * d_lo) / d;
  V r = q + (fix == fix ? fix : bcast<V>(0));  // NaN where q is inf
  const V tail = ((x * math<mv::exp_op, kLibm>(a + kC)) * (kM + kM * a_lo)) * 0x1p-64;
  r = (a < -512) ? tail : r;
  return (x == -std::numeric_limits<double>::infinity()) ? bcast<V>(-0.0) : r;  // not -inf * 0
}

// f64 lanes: gelu(x) = x/2 erfc(-x/sqrt2). t = -x/sqrt2 is carried as t + t_lo
// (erfc's relative condition number is ~2t^2, up to 1500 in f64), corrected
// to first order: erfc(t + d) = erfc(t) - 2/sqrt(pi) e^-t^2 d. Limit: for
// x in [-38.6, -37.55] erfc(t) itself is subnormal, so the result (< 2^-1017)
// is good to ~2^-1069 absolute, not to 4 ulp.
template <class V> inline V k_gelu(V x) {
  constexpr double kR = 0x1.6a09e667f3bcdp-1, kRlo = -0x1.bdd3413b26456p-55, kK = 0x1.20dd750429b6dp+0;
  const V t = x * -kR;
  V t_lo = vfma(x, bcast<V>(-kR), -t) + x * -kRlo;
  t_lo = (vabs(t_lo) <= 1) ? t_lo : bcast<V>(0);  // NaN from inf
  const V c = mv::apply<mv::erfc_op>(t) - (kK * mv::apply<mv::exp_op>(-(t * t))) * t_lo;
  const V r = x < 0 ? (x * c) * 0.5 : x * (c * 0.5);  // no overflow at x = max; no lost bit in subnormals
  return (x == -std::numeric_limits<double>::infinity()) ? bcast<V>(-0.0) : r;
}

// f64 lanes: gelu_tanh(x) = x sigmoid(2u), u = c (x + k x^3) (0.5 (1 + tanh u)
// = sigmoid(2u), no cancellation for x < 0); u in double-double, since the
// tail's relative condition number is 2|u| (up to ~700).
template <bool kLibm, class V> inline V k_gelu_tanh(V x) {
  constexpr double kC = 0x1.9884533d43651p-1, kClo = -0x1.cbc0d30ebfd15p-55;
  constexpr double kK = 0x1.6e4e26d4801f7p-5, kKlo = 0x1.441355475a31ap-59;
  const V x2 = x * x, x2_lo = vfma(x, x, -x2);
  const V p = kK * x2, p_lo = vfma(bcast<V>(kK), x2, -p) + (kK * x2_lo + kKlo * x2);
  const V w = 1 + p, b = w - 1, w_lo = ((1 - (w - b)) + (p - b)) + p_lo;  // two-sum
  const V y = x * w, y_lo = vfma(x, w, -y) + x * w_lo;
  const V u = kC * y, u_lo = vfma(bcast<V>(kC), y, -u) + (kC * y_lo + kClo * y);
  return k_xsigmoid<kLibm>(x, 2 * u, 2 * u_lo);
}

// f32 lanes in f64 (chunks of one register of f64: 8 lanes with AVX-512, 4
// with AVX) with libmvec, rounded once; f64 lanes with libm (kLibm).
template <class V, class F> inline V via_f64(V x, F f) {
  if constexpr (std::is_same_v<typename lane_of<V>::type, double>) {
    return f(x, std::true_type{});
  } else if constexpr (std::is_arithmetic_v<V>) {
    return float(f(double(x), std::false_type{}));
  } else {
    constexpr int n = sizeof(V) / 4, k = n < TSR_PART_BYTES / 8 ? n : TSR_PART_BYTES / 8;
    typedef typename vchunk<float, 4 * k>::type FC;
    typedef typename vchunk<double, 8 * k>::type DC;
    FC c[n / k];
    std::memcpy(c, &x, sizeof x);
    for (int i = 0; i < n / k; ++i) c[i] = __builtin_convertvector(f(__builtin_convertvector(c[i], DC), std::false_type{}), FC);
    std::memcpy(&x, c, sizeof x);
    return x;
  }
}

// Unary functions on float, double and tiles; K(x) works on scalars and parts.
#define TSR_UNARY(NAME, K)                                               \
  template <class V> inline V NAME##_k(V x) { return K; }                \
  inline float NAME(float x) { return NAME##_k(x); }                     \
  inline double NAME(double x) { return NAME##_k(x); }                   \
  template <class T, int N> inline tile<T, N> NAME(tile<T, N> t) {       \
    TSR_PARTS t.v[q] = NAME##_k(t.v[q]);                                 \
    return t;                                                            \
  }
TSR_UNARY(fn_neg, -x)
TSR_UNARY(fn_abs, vabs(x))
TSR_UNARY(fn_exp, mv::apply<mv::exp_op>(x))
TSR_UNARY(fn_log, mv::apply<mv::log_op>(x))
TSR_UNARY(fn_sqrt, vsqrt(x))
TSR_UNARY(fn_rsqrt, 1 / vsqrt(x))
TSR_UNARY(fn_tanh, mv::apply<mv::tanh_op>(x))
TSR_UNARY(fn_sin, mv::apply<mv::sin_op>(x))
TSR_UNARY(fn_cos, mv::apply<mv::cos_op>(x))
TSR_UNARY(fn_exp2, mv::apply<mv::exp2_op>(x))
TSR_UNARY(fn_log2, mv::apply<mv::log2_op>(x))
TSR_UNARY(fn_erf, mv::apply<mv::erf_op>(x))
TSR_UNARY(fn_floor, vfloor(x))
TSR_UNARY(fn_ceil, vceil(x))
TSR_UNARY(fn_round, vrint(x))
TSR_UNARY(fn_sigmoid, via_f64(x, [](auto d, auto libm) { return k_xsigmoid<decltype(libm)::value>(decltype(d){} + 1, d, decltype(d){}); }))
TSR_UNARY(fn_relu, x < 0 ? bcast<V>(0) : x)  // NaN < 0 is false: NaN stays
TSR_UNARY(fn_silu, via_f64(x, [](auto d, auto libm) { return k_xsigmoid<decltype(libm)::value>(d, d, decltype(d){}); }))
TSR_UNARY(fn_gelu, via_f64(x, [](auto d, auto) { return k_gelu(d); }))
TSR_UNARY(fn_gelu_tanh, via_f64(x, [](auto d, auto libm) { return k_gelu_tanh<decltype(libm)::value>(d); }))
#undef TSR_UNARY

#define TSR_BINARY(NAME, K)                                                        \
  template <class V> inline V NAME##_k(V a, V b) { return K; }                     \
  inline float NAME(float a, float b) { return NAME##_k(a, b); }                   \
  inline double NAME(double a, double b) { return NAME##_k(a, b); }               \
  template <class T, int N> inline tile<T, N> NAME(tile<T, N> a, tile<T, N> b) {   \
    TSR_PARTS a.v[q] = NAME##_k(a.v[q], b.v[q]);                                   \
    return a;                                                                      \
  }
TSR_BINARY(fn_add, a + b)
TSR_BINARY(fn_sub, a - b)
TSR_BINARY(fn_mul, a * b)
TSR_BINARY(fn_div, a / b)
TSR_BINARY(fn_pow, mv::apply<mv::pow_op>(a, b))
#undef TSR_BINARY
// NaN in either operand gives NaN (combine_max/min keep a NaN accumulator and
// take a NaN operand).
inline float fn_max(float a, float b) { return combine_max(a, b); }
inline double fn_max(double a, double b) { return combine_max(a, b); }
inline float fn_min(float a, float b) { return combine_min(a, b); }
inline double fn_min(double a, double b) { return combine_min(a, b); }
template <class T, int N> inline tile<T, N> fn_max(tile<T, N> a, tile<T, N> b) { return combine_max(a, b); }
template <class T, int N> inline tile<T, N> fn_min(tile<T, N> a, tile<T, N> b) { return combine_min(a, b); }

// Lanes at index >= count (the tile's own lane order) become other.
template <class T, int N> inline tile<T, N> mask_lanes(tile<T, N> t, int64_t count, T other) {
  constexpr int L = tile<T, N>::L;
  typedef std::conditional_t<sizeof(T) == 4, int32_t, int64_t> I;
  typename vchunk<I, L * sizeof(T)>::type idx;
  for (int i = 0; i < L; ++i) idx[i] = i;
  const I c = I(count < 0 ? 0 : count > N ? N : count);
  TSR_PARTS t.v[q] = (idx + I(q * L) < c) ? t.v[q] : typename tile<T, N>::vec{} + other;
  return t;
}

// x rounded to storage type S (nearest even) and widened back: a cast to S
// inside a fused kernel.
template <class S, class T> inline T round_to(T x) { return T(widen(narrow<S>(x))); }
template <class S, class T, int N> inline tile<T, N> round_to(tile<T, N> t) {
  if constexpr (std::is_same_v<S, T>) {
    return t;
  } else {
    T a[N];
    std::memcpy(a, &t.v, sizeof a);
    for (int i = 0; i < N; ++i) a[i] = round_to<S>(a[i]);
    std::memcpy(&t.v, a, sizeof a);
    return t;
  }
}

// Compute-type conversion (f32 <-> f64), lane order kept.
template <class U, class T> inline U convert(T x) { return U(x); }
template <class U, class T, int N> inline tile<U, N> convert(tile<T, N> t) {
  if constexpr (std::is_same_v<U, T>) {
    return t;
  } else {
    T a[N];
    U b[N];
    std::memcpy(a, &t.v, sizeof a);
    for (int i = 0; i < N; ++i) b[i] = U(a[i]);
    tile<U, N> r;
    std::memcpy(&r.v, b, sizeof b);
    return r;
  }
}

// ---- integers and booleans -----------------------------------------------------
// Lane by lane through arrays (GCC vectorizes the loops). An i1 lane is a
// uint8_t holding 0 or 1. docs/semantics.md states the rules.
template <class R, class T, int N, class F> inline tile<R, N> lanes_map(const tile<T, N>& a, F f) {
  T x[N];
  R r[N];
  std::memcpy(x, &a.v, sizeof x);
  for (int i = 0; i < N; ++i) r[i] = f(x[i]);
  tile<R, N> out;
  std::memcpy(&out.v, r, sizeof r);
  return out;
}
template <class R, class T, int N, class F> inline tile<R, N> lanes_map2(const tile<T, N>& a, const tile<T, N>& b, F f) {
  T x[N], y[N];
  R r[N];
  std::memcpy(x, &a.v, sizeof x);
  std::memcpy(y, &b.v, sizeof y);
  for (int i = 0; i < N; ++i) r[i] = f(x[i], y[i]);
  tile<R, N> out;
  std::memcpy(&out.v, r, sizeof r);
  return out;
}

// i32/i64 arithmetic wraps (two's complement, as numpy's): computed unsigned.
// These overloads are more specialized than the float templates above.
#define TSR_INT_OPS(T, U)                                                                                    \
  inline T fn_neg(T x) { return T(U(0) - U(x)); }                                                         \
  inline T fn_abs(T x) { return x < 0 ? T(U(0) - U(x)) : x; }                                             \
  inline T fn_add(T a, T b) { return T(U(a) + U(b)); }                                                     \
  inline T fn_sub(T a, T b) { return T(U(a) - U(b)); }                                                     \
  inline T fn_mul(T a, T b) { return T(U(a) * U(b)); }                                                     \
  inline T fn_max(T a, T b) { return a < b ? b : a; }                                                      \
  inline T fn_min(T a, T b) { return b < a ? b : a; }                                                      \
  template <int N> inline tile<T, N> fn_neg(tile<T, N> t) { return lanes_map<T>(t, [](T x) { return fn_neg(x); }); } \
  template <int N> inline tile<T, N> fn_abs(tile<T, N> t) { return lanes_map<T>(t, [](T x) { return fn_abs(x); }); } \
  template <int N> inline tile<T, N> fn_add(tile<T, N> a, tile<T, N> b) {                                  \
    return lanes_map2<T>(a, b, [](T x, T y) { return fn_add(x, y); });                                     \
  }                                                                                                        \
  template <int N> inline tile<T, N> fn_sub(tile<T, N> a, tile<T, N> b) {                                  \
    return lanes_map2<T>(a, b, [](T x, T y) { return fn_sub(x, y); });                                     \
  }                                                                                                        \
  template <int N> inline tile<T, N> fn_mul(tile<T, N> a, tile<T, N> b) {                                  \
    return lanes_map2<T>(a, b, [](T x, T y) { return fn_mul(x, y); });                                     \
  }
TSR_INT_OPS(int32_t, uint32_t)
TSR_INT_OPS(int64_t, uint64_t)
#undef TSR_INT_OPS

// Comparisons give i1; a NaN operand compares false (ne: true), as IEEE's.
#define TSR_COMPARE(NAME, OP)                                                                 \
  template <class T> inline uint8_t NAME(T a, T b) { return uint8_t(a OP b); }               \
  template <class T, int N> inline tile<uint8_t, N> NAME(const tile<T, N>& a, const tile<T, N>& b) { \
    return lanes_map2<uint8_t>(a, b, [](T x, T y) { return uint8_t(x OP y); });               \
  }
TSR_COMPARE(fn_eq, ==)
TSR_COMPARE(fn_ne, !=)
TSR_COMPARE(fn_lt, <)
TSR_COMPARE(fn_le, <=)
TSR_COMPARE(fn_gt, >)
TSR_COMPARE(fn_ge, >=)
#undef TSR_COMPARE

// A byte of an i1 array other than 0 or 1 (memory numpy did not write as
// bool) reads as true, as numpy's own logic does.
inline uint8_t fn_and(uint8_t a, uint8_t b) { return uint8_t(a != 0 && b != 0); }
inline uint8_t fn_or(uint8_t a, uint8_t b) { return uint8_t(a != 0 || b != 0); }
inline uint8_t fn_not(uint8_t a) { return uint8_t(a == 0); }
template <int N> inline tile<uint8_t, N> fn_and(tile<uint8_t, N> a, tile<uint8_t, N> b) {
  return lanes_map2<uint8_t>(a, b, [](uint8_t x, uint8_t y) { return fn_and(x, y); });
}
template <int N> inline tile<uint8_t, N> fn_or(tile<uint8_t, N> a, tile<uint8_t, N> b) {
  return lanes_map2<uint8_t>(a, b, [](uint8_t x, uint8_t y) { return fn_or(x, y); });
}
template <int N> inline tile<uint8_t, N> fn_not(tile<uint8_t, N> a) {
  return lanes_map<uint8_t>(a, [](uint8_t x) { return fn_not(x); });
}

// where(c, a, b)
template <class T> inline T fn_select(uint8_t c, T a, T b) { return c ? a : b; }
template <class T, int N> inline tile<T, N> fn_select(const tile<uint8_t, N>& c, const tile<T, N>& a, const tile<T, N>& b) {
  uint8_t k[N];
  T x[N], y[N];
  std::memcpy(k, &c.v, sizeof k);
  std::memcpy(x, &a.v, sizeof x);
  std::memcpy(y, &b.v, sizeof y);
  for (int i = 0; i < N; ++i) x[i] = k[i] ? x[i] : y[i];
  tile<T, N> r;
  std::memcpy(&r.v, x, sizeof x);
  return r;
}

// Conversions between compute types (tessera.cast): to an integer, floats
// truncate toward zero and saturate, NaN gives 0; integers wrap to the
// narrower width; to i1, nonzero (NaN included) is 1; to a float, the
// nearest value (ties to even).
template <class To, class From> inline To cvt(From x) {
  if constexpr (std::is_same_v<From, uint8_t>) {  // from i1: 0 or 1
    return To(x != 0);
  } else if constexpr (std::is_same_v<To, uint8_t>) {
    return uint8_t(x != From(0));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    constexpr From top = From(std::numeric_limits<To>::max()) + From(1);  // 2^31 or 2^63, exact
    if (x != x) return To(0);
    if (x >= top) return std::numeric_limits<To>::max();
    if (x <= -top) return std::numeric_limits<To>::min();
    return To(x);
  } else if constexpr (std::is_integral_v<To>) {
    return To(std::make_unsigned_t<To>(x));  // i64 -> i32 keeps the low 32 bits
  } else {
    return To(x);
  }
}
template <class To, class From, int N> inline tile<To, N> cvt(const tile<From, N>& t) {
  return lanes_map<To>(t, [](From x) { return cvt<To>(x); });
}

// Lane i: ((base + i) / inner) % extent, the coordinate along one axis of the
// element at flat index base + i (tessera.iota).
template <class T, int N> inline tile<T, N> iota(int64_t base, int64_t inner, int64_t extent) {
  T r[N];
  for (int i = 0; i < N; ++i) r[i] = T(((base + i) / inner) % extent);
  tile<T, N> out;
  std::memcpy(&out.v, r, sizeof r);
  return out;
}

// Fixed pairwise tree over the lanes: the same order on every run.
#define TSR_REDUCE_LANES(NAME)                                 \
  template <class T, int N> inline T reduce_lanes_##NAME(tile<T, N> t) { \
    T a[N];                                                    \
    std::memcpy(a, &t.v, sizeof a);                            \
    for (int w = N / 2; w >= 1; w /= 2)                        \
      for (int i = 0; i < w; ++i) a[i] = combine_##NAME(a[i], a[i + w]); \
    return a[0];                                               \
  }
TSR_REDUCE_LANES(sum)
TSR_REDUCE_LANES(prod)
TSR_REDUCE_LANES(max)
TSR_REDUCE_LANES(min)
#undef TSR_REDUCE_LANES
#undef TSR_PARTS
#undef TSR_PARTS_OF

#pragma GCC diagnostic pop

}  // namespace tsr
