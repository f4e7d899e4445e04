// Tessera CPU device tile library. Rendered CPU kernels call only these
// functions; the renderer embeds this file at the top of every kernel source,
// so a kernel's SHA-256 covers every line the host compiler sees.
//
// A tile<T, N> is N lanes of T held in native 64-byte SIMD vectors (4 x zmm
// for 64 floats with AVX-512; GCC emulates the width on smaller ISAs). Storage
// types f16/bf16 are widened to f32 on load and rounded (to nearest even) on
// store. max/min propagate NaN, unlike maxps/fmaxf, which drop it.
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace tsr {

struct f16_t { uint16_t bits; };
struct bf16_t { uint16_t bits; };

// N lanes as N/L native 64-byte vectors (or one smaller vector when N < L):
// GCC scalarizes selects on vectors wider than the hardware, so a tile is an
// array of register-sized parts and every operation loops over the parts.
template <class T, int N>
struct tile {
  static_assert(N > 0 && (N & (N - 1)) == 0, "tile lanes must be a power of two");
  static constexpr int L = int(64 / sizeof(T)) < N ? int(64 / sizeof(T)) : N;  // lanes per part
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

// ---- loads -----------------------------------------------------------------
// Part by part: a whole-tile memcpy makes GCC keep a stack copy of every tile.

template <class T, int N> inline tile<T, N> load(const T* p) {
  tile<T, N> r;
  TSR_PARTS r.v[q] = *reinterpret_cast<const typename tile<T, N>::uvec*>(p + q * tile<T, N>::L);
  return r;
}
template <class T, int N> inline tile<T, N> load(const bf16_t* p) {
  static_assert(sizeof(T) == 4, "bf16 widens to f32");
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
template <class T, int N> inline tile<T, N> load(const f16_t* p) {
  static_assert(sizeof(T) == 4, "f16 widens to f32");
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
template <class T, class S> inline T load1(const S* p) { return widen(*p); }

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

}  // namespace tsr
