// Tessera matmul block for AMD GPUs (the HIP lane): the device half of the
// matmul family on gfx90a (CDNA2, wave64, MFMA) and gfx11 (RDNA3/3.5, wave32,
// WMMA). Appended after tessera_tile.cuh (TSR_HIP, TSR_THREADS, TSR_WAVE);
// the contract is device/gpu/MATMUL_CONTRACT.md, with TSR_THREADS ==
// WM*WN*TSR_WAVE (a "warp" here is a wavefront).
//
// Data flow, per BK-deep k tile: every thread copies elements of A and B from
// global memory into one LDS stage (A as [BM][BK+PAD], B transposed as
// [BN][BK+PAD], so both are k-contiguous for the fragment reads; zeros past
// mrows, ncols and K), a barrier, then each wavefront multiplies its
// (BM/WM) x (BN/WN) tile:
//   f16/bf16 on gfx11: v_wmma_f32_16x16x16_{f16,bf16} (wave32), 16x16 tiles;
//   f16/bf16 on gfx90a: v_mfma_f32_32x32x8{f16,bf16_1k} (wave64), 32x32 tiles;
//   f32 (every arch): FMA, a TM x TN register tile a lane.
// One stage, so the copy and the math of a k tile do not overlap: this lane
// is compile-checked only, and the simplest correct pipeline is the one it
// ships (STAGES is accepted and the scratch it sizes is more than enough).
// Accumulation: f32, k ascending within each lane's fragments: deterministic.
//
// NORM (an RMSNorm prologue, tile.matmul norm_eps): the block is
// rms_norm(A, w) x B. B's row k is staged times w[k] (rounded to its 16-bit
// type there); thread r (< BM) sums the squares of the staged row r of A,
// k ascending, and at the end scales C's row r by rsqrt(sum / K + eps).

namespace tsr {
namespace amd {

typedef _Float16 half_t;
typedef half_t half4 __attribute__((ext_vector_type(4)));
typedef half_t half16 __attribute__((ext_vector_type(16)));
typedef short short4 __attribute__((ext_vector_type(4)));
typedef short short16 __attribute__((ext_vector_type(16)));
typedef float float8 __attribute__((ext_vector_type(8)));
typedef float float16 __attribute__((ext_vector_type(16)));

template <class X, class Y> struct same { static constexpr bool value = false; };
template <class X> struct same<X, X> { static constexpr bool value = true; };

// Storage of an element in LDS: the 16-bit pattern, or the f32 itself.
template <class T> struct lds { typedef u16 type; };
template <> struct lds<float> { typedef float type; };
__device__ __forceinline__ u16 bits_of(f16_t x) { return x.bits; }
__device__ __forceinline__ u16 bits_of(bf16_t x) { return x.bits; }
__device__ __forceinline__ float bits_of(float x) { return x; }
template <class T> __device__ __forceinline__ float value_of(u16 bits) { return widen(T{bits}); }
template <class T> __device__ __forceinline__ float value_of(float x) { return x; }

// The matrix instruction of this arch for 16-bit operands: its tile edge
// (MT) and depth (KT), or none (MT = 0): f32 and archs without one use FMA.
#if defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__) || \
    defined(__gfx1150__) || defined(__gfx1151__)
#define TSR_AMD_WMMA 1
#elif defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define TSR_AMD_MFMA 1
#endif
template <class T> struct matrix_op { static constexpr int MT = 0, KT = 1; };
#if defined(TSR_AMD_WMMA)
static_assert(TSR_WAVE == 32, "WMMA here is the wave32 form");
template <> struct matrix_op<f16_t> { static constexpr int MT = 16, KT = 16; };
template <> struct matrix_op<bf16_t> { static constexpr int MT = 16, KT = 16; };
#elif defined(TSR_AMD_MFMA)
static_assert(TSR_WAVE == 64, "MFMA is a wave64 instruction");
template <> struct matrix_op<f16_t> { static constexpr int MT = 32, KT = 8; };
template <> struct matrix_op<bf16_t> { static constexpr int MT = 32, KT = 8; };
#endif

// Copies the [BM x BK] slice of A at k0 into As[r][k] and the [BK x BN] slice
// of B into Bs[c][k], zero outside the problem. The thread order follows the
// contiguous dim of each operand, so a wavefront's loads are coalesced.
template <class T, int BM, int BN, int BK, int LD, i64 K, i64 SAM, i64 SAK, i64 SBK, i64 SBN, bool NORM>
__device__ __forceinline__ void stage(typename lds<T>::type* As, typename lds<T>::type* Bs, const T* __restrict__ A,
                                      i64 a_base, const T* __restrict__ B, i64 b_base, i64 mrows, i64 ncols, i64 k0,
                                      const T* __restrict__ w) {
  typedef typename lds<T>::type S;
  const int t = threadIdx.x;
  for (int i = t; i < BM * BK; i += TSR_THREADS) {
    const int r = SAK == 1 ? i / BK : i % BM, k = SAK == 1 ? i % BK : i / BM;
    As[r * LD + k] = r < mrows && k0 + k < K ? bits_of(A[a_base + r * SAM + (k0 + k) * SAK]) : S(0);
  }
  for (int i = t; i < BN * BK; i += TSR_THREADS) {
    const int c = SBN == 1 ? i % BN : i / BK, k = SBN == 1 ? i / BN : i % BK;
    if constexpr (NORM)
      Bs[c * LD + k] =
          c < ncols && k0 + k < K ? bits_of(narrow<T>(widen(B[b_base + (k0 + k) * SBK + c * SBN]) * widen(w[k0 + k])))
                                  : S(0);
    else
      Bs[c * LD + k] = c < ncols && k0 + k < K ? bits_of(B[b_base + (k0 + k) * SBK + c * SBN]) : S(0);
  }
}

// NORM: thread r < BM adds the squares of the staged row r of A.
template <class T, int BM, int BK, int LD>
__device__ __forceinline__ void add_row_squares(const typename lds<T>::type* As, float& squares) {
  if (int(threadIdx.x) < BM)
    for (int k = 0; k < BK; ++k) {
      const float x = value_of<T>(As[threadIdx.x * LD + k]);
      squares = __builtin_fmaf(x, x, squares);
    }
}

template <class T, int BM, int BN, int BK, int WM, int WN, int STAGES, i64 K, i64 SAM, i64 SAK, i64 SBK, i64 SBN,
          bool VEC_A, bool VEC_B, int SMEM_BYTES, bool NORM = false>
__device__ void matmul_block(unsigned char* smem, const T* __restrict__ A, i64 a_base, const T* __restrict__ B,
                             i64 b_base, i64 mrows, i64 ncols, const T* __restrict__ w = nullptr, float eps = 0.0f) {
  typedef typename lds<T>::type S;
  constexpr int PAD = sizeof(S) == 2 ? 8 : 4, LD = BK + PAD;
  constexpr int WTM = BM / WM, WTN = BN / WN;  // a wavefront's tile of C
  static_assert(TSR_THREADS == WM * WN * TSR_WAVE, "a block is WM x WN wavefronts");
  static_assert(BM % WM == 0 && BN % WN == 0, "the block splits evenly over the wavefronts");
  static_assert((BM + BN) * LD * (int)sizeof(S) <= SMEM_BYTES && BM * BN * 4 <= SMEM_BYTES,
                "the stage and the C block fit the scratch");
  static_assert(!NORM || (SAK == 1 && BM <= TSR_THREADS), "an RMSNorm prologue: row-major A, a thread a row");
  [[maybe_unused]] float squares = 0.0f;  // NORM: row threadIdx.x's sum of squares
  S* As = reinterpret_cast<S*>(smem);
  S* Bs = As + BM * LD;
  const int wave = threadIdx.x / TSR_WAVE, lane = threadIdx.x % TSR_WAVE;
  const int wr = (wave / WN) * WTM, wc = (wave % WN) * WTN;  // the wavefront's tile origin
  float* C = reinterpret_cast<float*>(smem);
  constexpr int MT = matrix_op<T>::MT;
  if constexpr (MT > 0) {
    constexpr int KT = matrix_op<T>::KT, FM = WTM / MT, FN = WTN / MT;
    static_assert(WTM % MT == 0 && WTN % MT == 0 && BK % KT == 0, "whole matrix-instruction tiles");
#if defined(TSR_AMD_WMMA)
    float8 acc[FM][FN];
#else
    float16 acc[FM][FN];
#endif
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int j = 0; j < FN; ++j) acc[i][j] = 0.0f;
    for (i64 k0 = 0; k0 < K; k0 += BK) {
      stage<T, BM, BN, BK, LD, K, SAM, SAK, SBK, SBN, NORM>(As, Bs, A, a_base, B, b_base, mrows, ncols, k0, w);
      __syncthreads();
      if constexpr (NORM) add_row_squares<T, BM, BK, LD>(As, squares);
#pragma unroll
      for (int kk = 0; kk < BK; kk += KT) {
#if defined(TSR_AMD_WMMA)
        // Lane l holds row (A) / column (B) l % 16, all 16 k of the step.
        short16 a[FM], b[FN];
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
          for (int e = 0; e < 16; ++e) a[i][e] = short(As[(wr + i * MT + lane % 16) * LD + kk + e]);
#pragma unroll
        for (int j = 0; j < FN; ++j)
#pragma unroll
          for (int e = 0; e < 16; ++e) b[j][e] = short(Bs[(wc + j * MT + lane % 16) * LD + kk + e]);
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
          for (int j = 0; j < FN; ++j) {
            if constexpr (same<T, bf16_t>::value)
              acc[i][j] = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(a[i], b[j], acc[i][j]);
            else
              acc[i][j] = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(half16, a[i]),
                                                                      __builtin_bit_cast(half16, b[j]), acc[i][j]);
          }
#else
        // Lane l holds row (A) / column (B) l % 32 and k 4*(l/32) .. +3.
        short4 a[FM], b[FN];
        const int kq = kk + 4 * (lane / 32);
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e) a[i][e] = short(As[(wr + i * MT + lane % 32) * LD + kq + e]);
#pragma unroll
        for (int j = 0; j < FN; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) b[j][e] = short(Bs[(wc + j * MT + lane % 32) * LD + kq + e]);
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
          for (int j = 0; j < FN; ++j) {
            if constexpr (same<T, bf16_t>::value)
              acc[i][j] = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a[i], b[j], acc[i][j], 0, 0, 0);
            else
              acc[i][j] = __builtin_amdgcn_mfma_f32_32x32x8f16(__builtin_bit_cast(half4, a[i]),
                                                               __builtin_bit_cast(half4, b[j]), acc[i][j], 0, 0, 0);
          }
#endif
      }
      __syncthreads();
    }
    // The accumulators to the C block (the stage is free: every wavefront
    // passed the last barrier).
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int j = 0; j < FN; ++j) {
#if defined(TSR_AMD_WMMA)
        // Element e of lane l: row 2e + l/16, column l % 16.
#pragma unroll
        for (int e = 0; e < 8; ++e)
          C[(wr + i * MT + 2 * e + lane / 16) * BN + wc + j * MT + lane % 16] = acc[i][j][e];
#else
        // Element e of lane l: row 8*(e/4) + 4*(l/32) + e%4, column l % 32.
#pragma unroll
        for (int e = 0; e < 16; ++e)
          C[(wr + i * MT + 8 * (e / 4) + 4 * (lane / 32) + e % 4) * BN + wc + j * MT + lane % 32] = acc[i][j][e];
#endif
      }
  } else {
    // FMA: the wavefront's lanes form an LM x LN grid over its tile (LN = 8:
    // register tiles of about TM x TN = 2:1); lane (lm, ln) owns rows
    // lm + LM*i and columns ln + LN*j.
    static_assert(same<T, float>::value, "16-bit operands need this arch's matrix instructions");
    constexpr int LN = WTN % 8 == 0 ? 8 : WTN, LM = TSR_WAVE / LN;
    static_assert(LM * LN == TSR_WAVE && WTM % LM == 0 && WTN % LN == 0, "the lanes tile the wavefront's tile");
    constexpr int TM = WTM / LM, TN = WTN / LN;
    const int lm = lane / LN, ln = lane % LN;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    for (i64 k0 = 0; k0 < K; k0 += BK) {
      stage<T, BM, BN, BK, LD, K, SAM, SAK, SBK, SBN, NORM>(As, Bs, A, a_base, B, b_base, mrows, ncols, k0, w);
      __syncthreads();
      if constexpr (NORM) add_row_squares<T, BM, BK, LD>(As, squares);
      for (int k = 0; k < BK; ++k) {
        float a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = As[(wr + lm + LM * i) * LD + k];
#pragma unroll
        for (int j = 0; j < TN; ++j) b[j] = Bs[(wc + ln + LN * j) * LD + k];
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = __builtin_fmaf(a[i], b[j], acc[i][j]);
      }
      __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) C[(wr + lm + LM * i) * BN + wc + ln + LN * j] = acc[i][j];
  }
  __syncthreads();
  if constexpr (NORM) {
    if (int(threadIdx.x) < BM) {
      const float scale = 1.0f / sqrtf(squares / float(K) + eps);
      for (int c = 0; c < BN; ++c) C[threadIdx.x * BN + c] *= scale;
    }
    __syncthreads();
  }
}

}  // namespace amd

using amd::matmul_block;

}  // namespace tsr
