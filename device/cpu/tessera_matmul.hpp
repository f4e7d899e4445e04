// Tessera CPU matmul block library, embedded after the tile library into every
// CPU kernel that contains tile.matmul (and only those).
//
// matmul_block computes one [BM, BN] block of C = A x B over all of K into f32
// scratch, row-major with row length BN. It works in chunks of BK values of k:
// the chunk of the block's A rows is packed into micro-panels of MR rows and
// B's into micro-panels of NR columns (both as f32: f16/bf16 are widened once,
// at packing), then a register-blocked micro-kernel adds each MR x NR piece of
// the chunk's product into C. A B micro-panel (BK x NR: 32 KiB with AVX-512,
// 16 KiB with AVX2) stays in L1
// while the A panels stream from L2. The order of additions is fixed (k
// ascending), so results do not depend on threads or blocking of other blocks.
// FMAs are explicit: kernels are compiled with -ffp-contract=off.
//
// With NORM (an RMSNorm prologue, tile.matmul norm_eps) the block is
// rms_norm(A, w) x B without a normalized A: B's row k is scaled by w[k] as it
// is packed, the squares of the block's rows of A are summed on the way, and
// C's row r is scaled by rsqrt(sum_r / K + eps) at the end (a pass over C in
// the scratch; in the epilogue's slabs the scale cost a broadcast tile each).
// A thread keeps the scales of its last few row blocks for the launch (the
// pid order walks the same row blocks down every block column), so each row
// block's squares are summed once a thread, not once a block column.
//
// load2d / store2d move [R, C] slabs (row-major tiles) between memory and the
// epilogue: rows past `rows` read 0 and are not written, columns past `cols` the same.
namespace tsr {

namespace mm {

// The micro-tile fills the ISA's vector registers: two vectors of B, MR rows
// of two accumulators each and a broadcast. AVX-512's 32 zmm hold 24
// accumulators (12 x 32), AVX2's 16 ymm hold 12 (6 x 16). Every element's sum
// is the same FMA chain over k on every path, so results do not depend on the ISA.
#if defined(__AVX512F__)
struct simd {
  typedef __m512 v;
  static constexpr int W = 16;
  static v zero() { return _mm512_setzero_ps(); }
  static v load(const float* p) { return _mm512_load_ps(p); }
  static v loadu(const float* p) { return _mm512_loadu_ps(p); }
  static v bcast(const float* p) { return _mm512_set1_ps(*p); }
  static v fma(v a, v b, v c) { return _mm512_fmadd_ps(a, b, c); }
  static void storeu(float* p, v x) { _mm512_storeu_ps(p, x); }
};
constexpr int MR = 12;
#elif defined(__AVX2__) && defined(__FMA__)
struct simd {
  typedef __m256 v;
  static constexpr int W = 8;
  static v zero() { return _mm256_setzero_ps(); }
  static v load(const float* p) { return _mm256_load_ps(p); }
  static v loadu(const float* p) { return _mm256_loadu_ps(p); }
  static v bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static v fma(v a, v b, v c) { return _mm256_fmadd_ps(a, b, c); }
  static void storeu(float* p, v x) { _mm256_storeu_ps(p, x); }
};
constexpr int MR = 6;
#else
struct simd {
  static constexpr int W = 8;  // no vector path: the portable loop below
};
constexpr int MR = 6;
#endif
constexpr int NR = 2 * simd::W;

// c[r*LDC + j] (+)= sum_k A(r, k) * b[k*NR + j] for r < MR, j < NR, where
// A(r, k) is a[k*MR + r] (a packed panel, LDA = 0) or a[r*LDA + k] (f32 rows
// read in place).
template <int LDC, long long LDA>
inline void micro_kernel(int64_t kc, const float* a, const float* b, float* c, bool first) {
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
  using V = simd;
  typename V::v acc[MR][2];
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = first ? V::zero() : V::loadu(c + r * LDC);
    acc[r][1] = first ? V::zero() : V::loadu(c + r * LDC + V::W);
  }
  for (int64_t k = 0; k < kc; ++k) {
    const typename V::v b0 = V::load(b + k * NR), b1 = V::load(b + k * NR + V::W);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const typename V::v x = V::bcast(LDA ? a + r * LDA + k : a + k * MR + r);
      acc[r][0] = V::fma(x, b0, acc[r][0]);
      acc[r][1] = V::fma(x, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
    V::storeu(c + r * LDC, acc[r][0]);
    V::storeu(c + r * LDC + V::W, acc[r][1]);
  }
#else
  // Portable path (same order of operations, one FMA at a time).
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) {
      float s = first ? 0.0f : c[r * LDC + j];
      for (int64_t k = 0; k < kc; ++k) s = __builtin_fmaf(LDA ? a[r * LDA + k] : a[k * MR + r], b[k * NR + j], s);
      c[r * LDC + j] = s;
    }
#endif
}

// A launch's programs on one thread run in the pid order of the schedule,
// which walks GROUP_M blocks of rows down one block column before the next:
// consecutive programs share B's panel. The panel is packed once and kept,
// keyed by its address and the launch (the kernel calls begin_launch() on
// entry: a panel is never reused across launches, whose B may differ).
inline thread_local unsigned long long launch_epoch = 0;
inline void begin_launch() { ++launch_epoch; }

// B's chunk [k0, k0+kc) of the block columns [c0, c0+ncols) as micro-panels
// [np][kc][NR], columns past ncols zero; with SCALE, row k times w[k].
template <class T, long long SBK, long long SBN, bool SCALE = false>
inline void pack_b(float* dst, const T* src, int64_t kc, int64_t ncols, const T* w = nullptr) {
  // w[k] read once a row into a local (dst's stores could alias w)
  auto scale = [&](int64_t k) {
    if constexpr (SCALE) return float(widen(w[k]));
    else return 1.0f;
  };
  auto at = [&](const T* s, float wk, int64_t offset) {
    if constexpr (SCALE) return float(widen(s[offset])) * wk;
    else return float(widen(s[offset]));
  };
  const int64_t np = (ncols + NR - 1) / NR;
  for (int64_t j = 0; j < np; ++j, dst += kc * NR) {
    const T* s = src + j * NR * SBN;
    const int64_t cn = ncols - j * NR < NR ? ncols - j * NR : NR;
    if (SBN == 1 && cn == NR) {  // rows of B contiguous, a whole panel: vector copies
      for (int64_t k = 0; k < kc; ++k) {
        const float wk = scale(k);
        for (int c = 0; c < NR; ++c) dst[k * NR + c] = at(s, wk, k * SBK + c);
      }
    } else if (SBN == 1) {
      for (int64_t k = 0; k < kc; ++k) {
        const float wk = scale(k);
        for (int c = 0; c < NR; ++c) dst[k * NR + c] = c < cn ? at(s, wk, k * SBK + c) : 0.0f;
      }
    } else {  // transposed B: its columns are contiguous along k
      for (int c = 0; c < NR; ++c)
        for (int64_t k = 0; k < kc; ++k) dst[k * NR + c] = c < cn ? at(s, scale(k), c * SBN + k * SBK) : 0.0f;
    }
  }
}

// An RMSNorm prologue's sums of squares of a row, as 16 partial sums (lane j
// takes the k = j mod 16), added to and folded in a fixed order: the same on
// every ISA and in every program that holds the row.
typedef float squares16 __attribute__((vector_size(64)));
template <class T>
inline void add_squares(squares16& part, const T* row, int64_t kc) {
  auto add = [&](const tile<float, 16>& x) {
    squares16 v;
    std::memcpy(&v, &x.v, sizeof v);
    part += v * v;
  };
  int64_t k = 0;
  for (; k + 16 <= kc; k += 16) add(load<float, 16>(row + k));
  if (k < kc) add(load_masked<float, 16>(row + k, kc - k, 0.0f));
}
// The row's scale rsqrt(sum / K + eps), the sum folded in a fixed order.
inline float norm_scale(squares16 part, int64_t k, float eps) {
  for (int w = 8; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) part[j] += part[j + w];
  return 1.0f / std::sqrt(part[0] / float(k) + eps);
}

// A's chunk as micro-panels [mp][kc][MR], rows past mrows zero.
template <class T, long long SAM, long long SAK>
inline void pack_a(float* dst, const T* src, int64_t kc, int64_t mrows) {
  const int64_t mp = (mrows + MR - 1) / MR;
  for (int64_t i = 0; i < mp; ++i, dst += kc * MR) {
    const T* s = src + i * MR * SAM;
    const int64_t rn = mrows - i * MR < MR ? mrows - i * MR : MR;
    if (SAK == 1 && rn == MR) {  // whole panel of rows contiguous along k
      for (int64_t k = 0; k < kc; ++k)
        for (int r = 0; r < MR; ++r) dst[k * MR + r] = float(widen(s[r * SAM + k]));
    } else {
      for (int64_t k = 0; k < kc; ++k)
        for (int r = 0; r < MR; ++r) dst[k * MR + r] = r < rn ? float(widen(s[r * SAM + k * SAK])) : 0.0f;
    }
  }
}

}  // namespace mm

template <class T, int BM, int BN, int BK, int WM, int WN, int STAGES, long long K, long long SAM, long long SAK,
          long long SBK, long long SBN, bool VEC_A, bool VEC_B, int SMEM_BYTES, bool NORM = false>
inline void matmul_block(unsigned char* smem, const T* A, int64_t a_base, const T* B, int64_t b_base, int64_t mrows,
                         int64_t ncols, const T* w = nullptr, float eps = 0.0f) {
  using mm::MR;
  using mm::NR;
  static_assert(BM % MR == 0 && BN % NR == 0, "the CPU block must hold whole micro-tiles");
  static_assert(SMEM_BYTES >= BM * BN * 4, "the scratch must hold the C block");
  static_assert(!NORM || SAK == 1, "an RMSNorm prologue normalizes rows of a row-major A");
  alignas(64) static thread_local mm::squares16 squares[NORM ? BM : 1];
  // Trivial, so zero-initialized without a guard on every call; an entry of
  // epoch 0 never matches (begin_launch runs before any block).
  struct RowScales {
    const T* a;
    int64_t base;
    unsigned long long epoch;
    float scale[BM];
  };
  static thread_local RowScales kept_scales[NORM ? 8 : 1];
  static thread_local int next_scales = 0;
  RowScales* scales = nullptr;
  if constexpr (NORM) {
    for (RowScales& k : kept_scales)
      if (k.a == A && k.base == a_base && k.epoch == mm::launch_epoch) scales = &k;
  }
  const bool sum_squares = NORM && !scales;
  // B's whole panel (K x BN) is kept across programs when it is at most 4 MiB
  // (it then streams from L3 a micro-panel at a time); else a chunk is packed
  // per program and chunk.
  constexpr bool KEEP_B = K > 0 && K * BN <= (int64_t{1} << 20);
  constexpr bool DIRECT_A = sizeof(T) == 4 && SAK == 1 && SAM > 0;
  float* C = reinterpret_cast<float*>(smem);
  alignas(64) static thread_local float a_pack[BM * BK];
  alignas(64) static thread_local float b_pack[KEEP_B ? K * BN : BK * BN];
  static thread_local const T* kept_b = nullptr;
  static thread_local int64_t kept_base = -1, kept_cols = -1;
  static thread_local unsigned long long kept_epoch = 0;
  const int64_t mp = (mrows + MR - 1) / MR, np = (ncols + NR - 1) / NR;
  if (K == 0)
    for (int64_t i = 0; i < mp * MR * BN; ++i) C[i] = 0.0f;
  bool have_b = false;
  if constexpr (KEEP_B) {
    have_b = kept_b == B && kept_base == b_base && kept_cols == ncols && kept_epoch == mm::launch_epoch;
    kept_b = B, kept_base = b_base, kept_cols = ncols, kept_epoch = mm::launch_epoch;
  }
  if (sum_squares)
    for (int64_t r = 0; r < mrows; ++r) squares[r] = mm::squares16{};
  for (int64_t k0 = 0; k0 < K; k0 += BK) {
    const int64_t kc = K - k0 < BK ? K - k0 : BK;
    float* const b_chunk = KEEP_B ? b_pack + k0 * BN : b_pack;
    if (!have_b) mm::pack_b<T, SBK, SBN, NORM>(b_chunk, B + b_base + k0 * SBK, kc, ncols, NORM ? w + k0 : w);
    // f32 A with rows contiguous along k is read in place, whole panels of MR
    // rows (the broadcasts walk MR rows; packing it cost a fifth of 2048^3);
    // other A, and a last partial panel, are packed.
    const T* const a_chunk = A + a_base + k0 * SAK;
    const int64_t direct = DIRECT_A ? mrows / MR : 0;
    if (direct < mp) mm::pack_a<T, SAM, SAK>(a_pack, a_chunk + direct * MR * SAM, kc, mrows - direct * MR);
    for (int64_t j = 0; j < np; ++j) {
      const float* const b_panel = b_chunk + j * kc * NR;
      if constexpr (DIRECT_A)
        for (int64_t i = 0; i < direct; ++i)
          mm::micro_kernel<BN, SAM>(kc, reinterpret_cast<const float*>(a_chunk) + i * MR * SAM, b_panel,
                                    C + i * MR * BN + j * NR, k0 == 0);
      for (int64_t i = direct; i < mp; ++i)
        mm::micro_kernel<BN, 0>(kc, a_pack + (i - direct) * kc * MR, b_panel, C + i * MR * BN + j * NR, k0 == 0);
    }
    // The chunk's squares, read while the micro-kernels left it in cache.
    if (sum_squares)
      for (int64_t r = 0; r < mrows; ++r) {
        mm::squares16 part = squares[r];  // in a register: stores to squares could alias A
        mm::add_squares(part, A + a_base + r * SAM + k0, kc);
        squares[r] = part;
      }
  }
  if constexpr (NORM) {
    if (sum_squares) {
      scales = &kept_scales[next_scales];
      next_scales = (next_scales + 1) % 8;
      scales->a = A, scales->base = a_base, scales->epoch = mm::launch_epoch;
      for (int64_t r = 0; r < mrows; ++r) scales->scale[r] = mm::norm_scale(squares[r], K, eps);
    }
    for (int64_t r = 0; r < mrows; ++r) {
      const float s = scales->scale[r];
      for (int64_t j = 0; j < BN; ++j) C[r * BN + j] *= s;
    }
  }
}

// Row r of a row-major [R, C] tile is parts [r*C/L, (r+1)*C/L).
template <class T, int R, int C, long long RS, long long CS, bool ALIGNED, class S>
inline tile<T, R * C> load2d(const S* p, int64_t rows, int64_t cols) {
  static_assert(CS == 0 || CS == 1, "slab columns are contiguous or broadcast");
  constexpr int PR = tile<T, C>::P;  // parts per row
  tile<T, R * C> out;
  for (int r = 0; r < R; ++r) {
    tile<T, C> row;
    if (r >= rows) row = full<T, C>(T(0));
    else if (CS == 0) row = full<T, C>(load1<T>(p + r * RS));
    else if (cols >= C) row = load<T, C>(p + r * RS);
    else row = load_masked<T, C>(p + r * RS, cols, T(0));
    for (int q = 0; q < PR; ++q) out.v[r * PR + q] = row.v[q];
  }
  return out;
}

// `into` with lanes (r, c), LO <= c < HI, r < rows, read from p[r*RS + c - LO]
// (one operand of a concat along the columns).
template <int R, int C, long long RS, long long LO, long long HI, bool ALIGNED, class T, class S>
inline tile<T, R * C> load2d_piece(tile<T, R * C> into, const S* p, int64_t rows) {
  constexpr int L = tile<T, R * C>::L;
  for (int r = 0; r < R && r < rows; ++r)
    for (long long c = LO; c < HI; ++c) {
      const int l = r * C + int(c);
      into.v[l / L][l % L] = load1<T>(p + r * RS + (c - LO));
    }
  return into;
}

template <int R, int C, long long RS, bool ALIGNED, class S, class T>
inline void store2d(S* p, int64_t rows, int64_t cols, const tile<T, R * C>& t) {
  constexpr int PR = tile<T, C>::P;
  for (int r = 0; r < R && r < rows; ++r) {
    tile<T, C> row;
    for (int q = 0; q < PR; ++q) row.v[q] = t.v[r * PR + q];
    if (cols >= C) store(p + r * RS, row);
    else store_masked(p + r * RS, cols, row);
  }
}

// Every row of an [R, C] slab becomes the combine of its R rows, in row order.
#define TSR_FOLD_ROWS(NAME)                                                      \
  template <int R, int C, class T>                                               \
  inline tile<T, R * C> fold_rows_##NAME(const tile<T, R * C>& t) {              \
    constexpr int PR = tile<T, C>::P;                                            \
    tile<T, C> acc;                                                              \
    for (int q = 0; q < PR; ++q) acc.v[q] = t.v[q];                              \
    for (int r = 1; r < R; ++r) {                                                \
      tile<T, C> row;                                                            \
      for (int q = 0; q < PR; ++q) row.v[q] = t.v[r * PR + q];                   \
      acc = combine_##NAME(acc, row);                                            \
    }                                                                            \
    tile<T, R * C> out;                                                          \
    for (int r = 0; r < R; ++r)                                                  \
      for (int q = 0; q < PR; ++q) out.v[r * PR + q] = acc.v[q];                 \
    return out;                                                                  \
  }
TSR_FOLD_ROWS(sum)
TSR_FOLD_ROWS(prod)
TSR_FOLD_ROWS(max)
TSR_FOLD_ROWS(min)
#undef TSR_FOLD_ROWS

}  // namespace tsr
