// Tessera CPU attention block library, embedded after the tile library into
// every CPU kernel that contains an attention forward.
//
// attention_block computes query rows [m0, min(m0+BM, sq)) of one (batch, head)
// with an online softmax over key blocks of BN (no sq x sk buffer). Per key block:
//   1. scores, transposed: S^T[j][i] = dot(k_j, q_i) * scale * log2(e), a
//      register-blocked product of MRS keys (broadcast) x NVS vectors of queries
//      (Q^T packed once per call), so the row max and every softmax step below
//      are plain vector ops across query lanes (no horizontal reductions);
//   2. P^T = exp2(S^T - m) in place, row sums, and the correction 2^(m_old - m);
//   3. O = O * correction + P V, a register-blocked product of MRO query rows x
//      NVC vectors of D, V read in place (f32/f64 rows whose length is a whole
//      number of vectors) or packed.
// f16/bf16 are widened to f32 when packed (Q once, K and V per block).
//
// Recommended blocks (the compiler passes these; any BM, BN >= 1 is correct):
//   f32, f16, bf16: BM 48;  f64: BM 24;  all: BN 64 for D <= 128, BN 32 above.
// (Smaller BM wastes the micro-tiles, larger BN spills the score block out of
// L1; the sweep behind these is in docs/journal.md.) Scratch is on the stack: 37 KiB for f32
// D 64, 61 KiB D 128, at most 167 KiB (f16/bf16 D 256). A configuration whose
// scratch exceeds 192 KiB takes it from the heap instead.
//
// A mask operand (attention_block_masked) is applied to the scores of the
// keys a row sees causally, after they are computed: -inf where it is false,
// or its bias added; masked keys still go through P V at weight 0.
//
// Masking: row i sees keys j < lim(i) = min(sk, i + 1 + sk - sq) (causal) or sk,
// a prefix, so each row's visible part of a block is a prefix [0, cnt_i). Masked
// scores become -inf before the max, and P V never reads a key a row cannot see
// (a NaN in such a v must not reach it): keys every row of a micro-tile sees go
// through the micro-kernel, the ragged rest row by row, in the same key order.
//
// exp2: x clamped below (NaN kept), x = n + f with n = rint(x), |f| <= 1/2,
// 2^f by a polynomial with p(0) = 1 exactly (f32: fitted degree 6, max error
// 0.27 ulp + rounding, measured <= 1 ulp; f64: Taylor degree 13), scaled by
// 2^n with one rounding (vscalef with AVX-512; else two exact-then-rounded
// multiplies), so subnormal results are right too.
//
// Results depend only on the inputs and BM, BN, D (fixed order of operations,
// FMAs explicit: kernels are compiled with -ffp-contract=off), not on threads
// or the ISA: the AVX-512, AVX2 and portable paths give the same bits.
#include <memory>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tsr {

using i64 = std::int64_t;

template <class T> struct attention_acc { using type = float; };
template <> struct attention_acc<double> { using type = double; };

namespace attn {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

// Vector registers the micro-kernels budget for (accumulators ~3/4 of them).
#if defined(__AVX512F__) || defined(__aarch64__)
constexpr int kRegs = 32;
#else
constexpr int kRegs = 16;
#endif

// One register of A (the tile library's part size), with the few operations
// the kernels need. ld/st are unaligned and aliasing-safe.
template <class A>
struct simd {
  static constexpr int W = TSR_PART_BYTES / int(sizeof(A));
  typedef A v __attribute__((vector_size(TSR_PART_BYTES)));
  typedef A uv __attribute__((vector_size(TSR_PART_BYTES), aligned(sizeof(A)), may_alias));
  typedef std::conditional_t<sizeof(A) == 4, int32_t, int64_t> I;
  typedef I iv __attribute__((vector_size(TSR_PART_BYTES)));
  static v ld(const A* p) { return *reinterpret_cast<const uv*>(p); }
  static void st(A* p, v x) { *reinterpret_cast<uv*>(p) = x; }
  static v splat(A x) { return x - v{}; }  // x - 0 is x, -0 and NaN included
  // A NaN b is dropped (maxps): a NaN score still reaches exp2 and the row
  // sum, which makes the row NaN, and the running max stays a number.
  static v max(v a, v b) { return a < b ? b : a; }
  static v fma(v a, v b, v c) {
#if defined(__AVX512F__)
    if constexpr (sizeof(v) == 64 && sizeof(A) == 4) return (v)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
    if constexpr (sizeof(v) == 64 && sizeof(A) == 8) return (v)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)c);
#endif
#if defined(__FMA__)
    if constexpr (sizeof(v) == 32 && sizeof(A) == 4) return (v)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
    if constexpr (sizeof(v) == 32 && sizeof(A) == 8) return (v)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
#endif
    for (int i = 0; i < W; ++i)
      a[i] = sizeof(A) == 4 ? __builtin_fmaf(a[i], b[i], c[i]) : __builtin_fma(a[i], b[i], c[i]);
    return a;
  }
  // 2^x for x <= 0 or NaN (the header says how).
  static v exp2(v x) {
    constexpr bool F = sizeof(A) == 4;
    constexpr A lo = F ? -150 : -1075, magic = F ? 0x1.8p23 : 0x1.8p52;
    x = splat(lo) > x ? splat(lo) : x;      // NaN compares false and stays (one maxps)
    const v n = (x + magic) - magic;        // rint(x): |x| < 2^22
    const v f = x - n;                      // exact
    v p;
    if constexpr (F) {
      p = splat(0x1.41fbc2p-13f);
      for (A c : {A(0x1.5f3e5cp-10f), A(0x1.3b2d4cp-7f), A(0x1.c6aee8p-5f), A(0x1.ebfbdcp-3f), A(0x1.62e43p-1f)})
        p = fma(p, f, splat(c));
    } else {
      p = splat(0x1.816193166d0f9p-40);
      for (A c : {0x1.c3bd650fc2986p-36, 0x1.e8cac7351bb25p-32, 0x1.e4cf5158b8ecap-28, 0x1.b5253d395e7c4p-24,
                  0x1.62c0223a5c824p-20, 0x1.ffcbfc588b0c7p-17, 0x1.430912f86c787p-13, 0x1.5d87fe78a6731p-10,
                  0x1.3b2ab6fba4e77p-7, 0x1.c6b08d704a0c0p-5, 0x1.ebfbdff82c58fp-3, 0x1.62e42fefa39efp-1})
        p = fma(p, f, splat(A(c)));
    }
    p = fma(p, f, splat(1));
#if defined(__AVX512F__)  // maskz forms: GCC 12 warns on the plain ones' undefined source
    if constexpr (sizeof(v) == 64 && F) return (v)_mm512_maskz_scalef_ps(0xffff, (__m512)p, (__m512)n);
    if constexpr (sizeof(v) == 64 && !F) return (v)_mm512_maskz_scalef_pd(0xff, (__m512d)p, (__m512d)n);
#endif
    // p * 2^(n+K) is exact (n+K >= min normal exponent), * 2^-K rounds once.
    constexpr int K = F ? 24 : 53, bias = F ? 127 : 1023, mant = F ? 23 : 52;
    const iv e = (__builtin_convertvector(x == x ? n : v{}, iv) + (bias + K)) << mant;
    v s;
    std::memcpy(&s, &e, sizeof s);
    return (p * s) * A(F ? 0x1p-24 : 0x1p-53);
  }
};

template <class T, class A> inline void widen_n(A* dst, const T* src, i64 n) {
  const i64 nv = std::is_same_v<T, A> ? 0 : n / 16 * 16;
  for (i64 i = 0; i < nv; i += 16) {
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<T, f16_t>) {  // vcvtph2ps: exact, as widen()
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
      _mm512_storeu_ps(dst + i, _mm512_maskz_cvtph_ps(0xffff, h));
      continue;
    }
#endif
    const tile<A, 16> t = load<A, 16>(src + i);  // the tile library's vector conversion
    std::memcpy(dst + i, &t.v, sizeof t.v);
  }
  for (i64 i = nv; i < n; ++i) dst[i] = A(widen(src[i]));
}

// Rounds n values to T, to nearest even (narrow<T>). f16 with AVX-512 takes
// vcvtps2ph: the same results (a NaN stays a NaN, its payload may differ) without
// narrow<f16_t>'s data-dependent branches, which are on every output element.
template <class T, class A> inline void narrow_n(T* dst, const A* src, int n) {
  int i = 0;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, f16_t>)
    for (; i < n / 16 * 16; i += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                          _mm512_maskz_cvtps_ph(0xffff, _mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) dst[i] = narrow<T>(src[i]);
}

// S^T rows j0 .. j0+MR-1 (keys, clamped to the block's nb) x NV query vectors:
// t = dot(k_j, q) * c over d ascending; masked lanes (j >= cnt) become -inf;
// bm[v] keeps the block's max per query lane.
template <class A, int D, int NV, int MR, int LDP, bool MASK>
inline void score_tile(const A* qt, const A* kblk, int j0, int nb, A c, A* st, const A* cnt,
                       typename simd<A>::v* bm) {
  using S = simd<A>;
  using V = typename S::v;
  constexpr int W = S::W;
  const A* kp[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) kp[r] = kblk + i64(j0 + r < nb ? j0 + r : nb - 1) * D;
  V acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int u = 0; u < NV; ++u) acc[r][u] = V{};
#pragma GCC unroll 2
  for (int d = 0; d < D; ++d) {
    V qv[NV];
#pragma GCC unroll 16
    for (int u = 0; u < NV; ++u) qv[u] = S::ld(qt + d * LDP + u * W);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const V b = S::splat(kp[r][d]);
#pragma GCC unroll 16
      for (int u = 0; u < NV; ++u) acc[r][u] = S::fma(b, qv[u], acc[r][u]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    if (j0 + r >= nb) break;
#pragma GCC unroll 16
    for (int u = 0; u < NV; ++u) {
      V t = acc[r][u] * c;
      if constexpr (MASK) t = S::splat(A(j0 + r)) < S::ld(cnt + u * W) ? t : S::splat(-inf<A>());
      S::st(st + (j0 + r) * LDP + u * W, t);
      bm[u] = S::max(bm[u], t);
    }
  }
}

// O rows [MR] x NV vectors: O = O * alpha + sum_{j < n} P^T[j][row] V[j], j ascending.
template <class A, int NV, int MR, int LDP, int LDV, int DP>
inline void pv_tile(A* o, const A* alpha, const A* pt, const A* vb, int n) {
  using S = simd<A>;
  using V = typename S::v;
  constexpr int W = S::W;
  V acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    const V a = S::splat(alpha[r]);
#pragma GCC unroll 16
    for (int u = 0; u < NV; ++u) acc[r][u] = S::ld(o + r * DP + u * W) * a;
  }
#pragma GCC unroll 2
  for (int j = 0; j < n; ++j) {
    V x[NV];
#pragma GCC unroll 16
    for (int u = 0; u < NV; ++u) x[u] = S::ld(vb + j * LDV + u * W);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const V b = S::splat(pt[j * LDP + r]);
#pragma GCC unroll 16
      for (int u = 0; u < NV; ++u) acc[r][u] = S::fma(b, x[u], acc[r][u]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int u = 0; u < NV; ++u) S::st(o + r * DP + u * W, acc[r][u]);
}

constexpr int round_up(int x, int m) { return (x + m - 1) / m * m; }
constexpr int cmin(int a, int b) { return a < b ? a : b; }

template <class T, int D, int BM, int BN>
struct config {
  using A = typename attention_acc<T>::type;
  static constexpr int W = simd<A>::W;
  static constexpr int DV = (D + W - 1) / W, DP = DV * W;                   // D in vectors
  static constexpr int NVC = cmin(DV, kRegs / 8);                           // P V tile: NVC vectors
  static constexpr int MRO = cmin(12, kRegs * 3 / 4 / NVC);                 //   x MRO rows
  static constexpr int QV = (BM + W - 1) / W;                               // queries in vectors
  static constexpr int NVS = cmin(QV, kRegs / 8);                           // score tile: NVS vectors
  static constexpr int MRS = cmin(12, kRegs * 3 / 4 / NVS);                 //   x MRS keys
  static constexpr int RO = round_up(BM, MRO);                              // O rows, padded
  static constexpr int LDP = round_up(QV * W > RO ? QV * W : RO, W);        // S^T / P^T row length
  static constexpr bool PACK_K = !std::is_same_v<T, A>;
  static constexpr bool PACK_V = PACK_K || D % W != 0;
  static constexpr int LDV = PACK_V ? DP : D;
  struct alignas(64) scratch {
    A qt[D * LDP];   // Q^T, zero past the block's rows
    A st[BN * LDP];  // S^T, then P^T
    A o[RO * DP];    // O accumulator
    A m[LDP], l[LDP], alpha[LDP], cnt[LDP];  // running max (log2 units), sum, correction, visible keys
    A kc[PACK_K ? BN * D : 1];
    A vc[PACK_V ? BN * DP : 1];
  };
};

// A mask operand (MASK 1: false hides a key; 2: an additive bias) read at
// mask[b*st[0] + h*st[1] + i*st[2] + j*st[3]] for score (b, h, i, j).
template <class M>
struct mask_ref {
  const M* at = nullptr;
  i64 st[4] = {0, 0, 0, 0};
  i64 heads = 1;
};

template <class T, int D, int BM, int BN, bool CAUSAL, bool LSE, int MASK, class M>
void block(typename config<T, D, BM, BN>::scratch& s, const T* q, const T* k, const T* v, T* o,
           typename attention_acc<T>::type* lse, i64 bh, i64 bkv, i64 m0, i64 sq, i64 sk, double scale,
           const mask_ref<M>& mask) {
  using C = config<T, D, BM, BN>;
  using A = typename C::A;
  using S = simd<A>;
  using V = typename S::v;
  constexpr int W = C::W, DP = C::DP, LDP = C::LDP, LDV = C::LDV, QV = C::QV;
  const int rows = int(imin(BM, sq - m0));
  if (rows <= 0) return;
  const T* qb = q + (bh * sq + m0) * D;
  const T* kb = k + bkv * sk * D;
  const T* vb = v + bkv * sk * D;

  for (int r = 0; r < rows; ++r)
    for (int d = 0; d < D; ++d) s.qt[d * LDP + r] = A(widen(qb[r * D + d]));
  for (int d = 0; d < D; ++d)
    for (int r = rows; r < LDP; ++r) s.qt[d * LDP + r] = 0;
  for (int j = 0; j < BN; ++j)
    for (int r = QV * W; r < LDP; ++r) s.st[j * LDP + r] = 0;
  for (int i = 0; i < C::RO * DP; ++i) s.o[i] = 0;
  for (int r = 0; r < LDP; ++r) s.m[r] = -inf<A>(), s.l[r] = 0, s.alpha[r] = 1, s.cnt[r] = 0;
  if constexpr (C::PACK_V)
    for (int j = 0; j < BN; ++j)
      for (int d = D; d < DP; ++d) s.vc[j * DP + d] = 0;

  const A c = A(scale * 0x1.71547652b82fep+0);  // scale * log2(e): scores in log2 units
  auto lim = [&](i64 r) {                       // row r sees keys [0, lim(r))
    const i64 x = CAUSAL ? imin(sk, m0 + r + 1 + sk - sq) : sk;
    return x < 0 ? i64(0) : x;
  };
  const i64 kend = lim(rows - 1), kall = lim(0);  // keys some row sees; keys every row sees
  for (i64 n0 = 0; n0 < kend; n0 += BN) {
    const int nb = int(imin(BN, kend - n0));
    const bool partial = CAUSAL && n0 + nb > kall;
    const A* kblk = reinterpret_cast<const A*>(kb + n0 * D);
    const A* vblk = reinterpret_cast<const A*>(vb + n0 * D);
    if constexpr (C::PACK_K) widen_n(s.kc, kb + n0 * D, i64(nb) * D), kblk = s.kc;
    if constexpr (C::PACK_V) {
      for (int j = 0; j < nb; ++j) widen_n(s.vc + j * DP, vb + (n0 + j) * D, D);
      vblk = s.vc;
    }
    if (partial)
      for (int r = 0; r < LDP; ++r) s.cnt[r] = r < rows ? A(imin(nb, lim(r) - n0 < 0 ? 0 : lim(r) - n0)) : A(nb);

    // 1. S^T and its max per query lane.
    V bm[QV];
    auto scores = [&](auto nv, int c0) {
      constexpr int NV = decltype(nv)::value;
      V m[NV];
      for (int u = 0; u < NV; ++u) m[u] = S::splat(-inf<A>());
      for (int j0 = 0; j0 < nb; j0 += C::MRS) {
        if (partial)
          score_tile<A, D, NV, C::MRS, LDP, true>(s.qt + c0, kblk, j0, nb, c, s.st + c0, s.cnt + c0, m);
        else
          score_tile<A, D, NV, C::MRS, LDP, false>(s.qt + c0, kblk, j0, nb, c, s.st + c0, s.cnt + c0, m);
      }
      for (int u = 0; u < NV; ++u) bm[c0 / W + u] = m[u];
    };
    for (int c0 = 0; c0 + C::NVS <= QV; c0 += C::NVS) scores(std::integral_constant<int, C::NVS>{}, c0 * W);
    if constexpr (QV % C::NVS) scores(std::integral_constant<int, QV % C::NVS>{}, (QV - QV % C::NVS) * W);
    if constexpr (MASK != 0) {
      // The mask operand on the keys each row sees causally: a false entry
      // hides its key, a bias joins the score (log2 units); then the block's
      // max per query lane again.
      const A log2e = A(0x1.71547652b82fep+0);
      const M* mb = mask.at + bh / mask.heads * mask.st[0] + bh % mask.heads * mask.st[1] + n0 * mask.st[3];
      for (int r = 0; r < rows; ++r) {
        const M* mr = mb + (m0 + r) * mask.st[2];
        const int n = partial ? int(s.cnt[r]) : nb;
        for (int j = 0; j < n; ++j) {
          A& x = s.st[j * LDP + r];
          if constexpr (MASK == 1) {
            if (!mr[j * mask.st[3]]) x = -inf<A>();
          } else {
            x = __builtin_fma(A(widen(mr[j * mask.st[3]])), log2e, x);
          }
        }
      }
      for (int u = 0; u < QV; ++u) {
        V mx = S::splat(-inf<A>());
        for (int j = 0; j < nb; ++j) mx = S::max(mx, S::ld(s.st + j * LDP + u * W));
        bm[u] = mx;
      }
    }

    // 2. P^T = 2^(S^T - m), m the new running max, or 0 while it is -inf (a row
    // that has seen no finite score yet: exp2(-inf - 0) = 0, never -inf + inf).
    for (int u = 0; u < QV; ++u) {
      const V mo = S::ld(s.m + u * W), mn = S::max(mo, bm[u]);
      const V mu = mn == S::splat(-inf<A>()) ? V{} : mn;
      V sum{};
      A* col = s.st + u * W;
      for (int j = 0; j < nb; ++j) {
        const V p = S::exp2(S::ld(col + j * LDP) - mu);
        S::st(col + j * LDP, p);
        sum += p;
      }
      const V al = S::exp2(mo - mu);
      S::st(s.l + u * W, S::fma(S::ld(s.l + u * W), al, sum));
      S::st(s.m + u * W, mn);
      S::st(s.alpha + u * W, al);
    }

    // 3. O = O * alpha + P V: keys all rows of a tile see in the micro-kernel,
    // then each row's remaining visible keys.
    for (int i0 = 0; i0 < rows; i0 += C::MRO) {
      const int rn = rows - i0 < C::MRO ? rows - i0 : C::MRO;
      int n = nb;
      if (partial)
        for (int r = 0; r < rn; ++r) n = int(s.cnt[i0 + r]) < n ? int(s.cnt[i0 + r]) : n;
      for (int d0 = 0; d0 + C::NVC <= C::DV; d0 += C::NVC)
        pv_tile<A, C::NVC, C::MRO, LDP, LDV, DP>(s.o + i0 * DP + d0 * W, s.alpha + i0, s.st + i0, vblk + d0 * W, n);
      if constexpr (C::DV % C::NVC) {
        constexpr int d0 = C::DV - C::DV % C::NVC;
        pv_tile<A, C::DV % C::NVC, C::MRO, LDP, LDV, DP>(s.o + i0 * DP + d0 * W, s.alpha + i0, s.st + i0,
                                                         vblk + d0 * W, n);
      }
      if (partial)
        for (int r = 0; r < rn; ++r)
          for (int j = n; j < int(s.cnt[i0 + r]); ++j) {
            const V p = S::splat(s.st[j * LDP + i0 + r]);
            A* orow = s.o + (i0 + r) * DP;
            for (int u = 0; u < C::DV; ++u)
              S::st(orow + u * W, S::fma(p, S::ld(vblk + j * LDV + u * W), S::ld(orow + u * W)));
          }
    }
  }

  // O / l rounded to T; lse = m ln2 + ln l. No visible key (l = 0): o = 0, lse = -inf.
  for (int r = 0; r < rows; ++r) {
    const A l = s.l[r];
    T* orow = o + (bh * sq + m0 + r) * D;
    A* const acc = s.o + r * DP;
    for (int d = 0; d < D; ++d) acc[d] = l == 0 ? A(0) : acc[d] / l;
    narrow_n(orow, acc, D);
    if constexpr (LSE)
      lse[bh * sq + m0 + r] = l == 0 ? -inf<A>() : A(double(s.m[r]) * 0x1.62e42fefa39efp-1 + std::log(double(l)));
  }
}

#pragma GCC diagnostic pop

}  // namespace attn

namespace attn {
template <class T, int D, int BM, int BN, bool CAUSAL, bool LSE, int MASK, class M>
void run(const T* q, const T* k, const T* v, T* o, typename attention_acc<T>::type* lse, i64 bh, i64 bkv, i64 m0,
         i64 sq, i64 sk, double scale, const mask_ref<M>& mask) {
  static_assert(D >= 1 && BM >= 1 && BN >= 1, "attention_block: D, BM, BN >= 1");
  using Scratch = typename config<T, D, BM, BN>::scratch;
  if constexpr (sizeof(Scratch) <= 192 * 1024) {
    Scratch s;
    block<T, D, BM, BN, CAUSAL, LSE, MASK>(s, q, k, v, o, lse, bh, bkv, m0, sq, sk, scale, mask);
  } else {
    const std::unique_ptr<Scratch> s(new Scratch);
    block<T, D, BM, BN, CAUSAL, LSE, MASK>(*s, q, k, v, o, lse, bh, bkv, m0, sq, sk, scale, mask);
  }
}
}  // namespace attn

template <class T, int D, int BM, int BN, bool CAUSAL, bool LSE>
void attention_block(const T* q, const T* k, const T* v, T* o, typename attention_acc<T>::type* lse, i64 bh,
                     i64 bkv, i64 m0, i64 sq, i64 sk, double scale) {
  attn::run<T, D, BM, BN, CAUSAL, LSE, 0>(q, k, v, o, lse, bh, bkv, m0, sq, sk, scale, attn::mask_ref<bool>{});
}

// With a mask operand (BIAS: added to the scaled scores; else i1, false
// hiding its key) and its element strides over [batch, heads, sq, sk].
template <class T, int D, int BM, int BN, bool CAUSAL, bool LSE, bool BIAS, class M>
void attention_block_masked(const T* q, const T* k, const T* v, T* o, const M* mask, i64 s0, i64 s1, i64 s2, i64 s3,
                            i64 heads, typename attention_acc<T>::type* lse, i64 bh, i64 bkv, i64 m0, i64 sq, i64 sk,
                            double scale) {
  attn::run<T, D, BM, BN, CAUSAL, LSE, BIAS ? 2 : 1>(q, k, v, o, lse, bh, bkv, m0, sq, sk, scale,
                                                      attn::mask_ref<M>{mask, {s0, s1, s2, s3}, heads});
}

}  // namespace tsr
