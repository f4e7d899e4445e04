// Tessera Metal matmul block (MSL): the device half of the matmul family on
// Apple GPUs, embedded after tessera_tile.metal into every Metal kernel that
// contains tile.matmul. The contract is device/gpu/MATMUL_CONTRACT.md's with
// simdgroups for warps (TSR_THREADS == WM*WN*32) and the scratch a
// threadgroup array the kernel declares (`smem`, SMEM_BYTES of it).
//
// Per BK-deep k tile, every thread copies elements of A and B into
// threadgroup memory, widened to f32 (As [BM][BK], Bs [BK][BN]; zeros past
// mrows, ncols and K); after a barrier each simdgroup multiplies its
// (BM/WM) x (BN/WN) tile as 8x8 simdgroup_float8x8 tiles
// (simdgroup_load, simdgroup_multiply_accumulate). f16 and bf16 operands
// are staged as f32, which holds them exactly, so their products are the
// f32 products (bfloat simdgroup matrices need MSL 3.1; this form needs
// none). At the end the accumulators are stored row-major into smem for the
// epilogue. The sum over k runs in 8-deep steps in a fixed order.
//
// NORM (an RMSNorm prologue, tile.matmul norm_eps): the block is
// rms_norm(A, w) x B. B's row k is staged times w[k]; thread r (< BM) sums
// the squares of the staged row r of A, k ascending, and at the end scales
// C's row r by rsqrt(sum / K + eps).
namespace tsr {

template <class T, int BM, int BN, int BK, int WM, int WN, int STAGES, i64 K, i64 SAM, i64 SAK, i64 SBK, i64 SBN,
          bool VEC_A, bool VEC_B, int SMEM_BYTES, bool NORM = false, class TG, class PA, class PB, class PW = PA>
inline void matmul_block(ctx k, TG smem, PA A, i64 a_base, PB B, i64 b_base, i64 mrows, i64 ncols, PW w = PW(),
                         float eps = 0.0f) {
  constexpr int WTM = BM / WM, WTN = BN / WN, FM = WTM / 8, FN = WTN / 8;
  static_assert(TSR_THREADS == WM * WN * TSR_SIMD, "a threadgroup is WM x WN simdgroups");
  static_assert(WTM % 8 == 0 && WTN % 8 == 0 && BK % 8 == 0, "whole 8x8 simdgroup tiles");
  static_assert((BM * BK + BK * BN) * 4 <= SMEM_BYTES && BM * BN * 4 <= SMEM_BYTES, "the stage and C fit the scratch");
  static_assert(!NORM || (SAK == 1 && BM <= TSR_THREADS), "an RMSNorm prologue: row-major A, a thread a row");
  const int wr = int(k.simd / WN) * WTM, wc = int(k.simd % WN) * WTN;  // the simdgroup's tile origin
  float squares = 0.0f;  // NORM: row k.tid's sum of squares
  simdgroup_float8x8 acc[FM][FN];
  for (int i = 0; i < FM; ++i)
    for (int j = 0; j < FN; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (i64 k0 = 0; k0 < K; k0 += BK) {
    // The thread order follows each operand's contiguous dim.
    for (int i = int(k.tid); i < BM * BK; i += TSR_THREADS) {
      const int r = SAK == 1 ? i / BK : i % BM, kk = SAK == 1 ? i % BK : i / BM;
      smem[r * BK + kk] = r < mrows && k0 + kk < K ? widen(A[a_base + r * SAM + (k0 + kk) * SAK]) : 0.0f;
    }
    for (int i = int(k.tid); i < BN * BK; i += TSR_THREADS) {
      const int c = SBN == 1 ? i % BN : i / BK, kk = SBN == 1 ? i / BN : i % BK;
      const float wk = NORM && k0 + kk < K ? widen(w[k0 + kk]) : 1.0f;
      smem[BM * BK + kk * BN + c] =
          c < ncols && k0 + kk < K ? widen(B[b_base + (k0 + kk) * SBK + c * SBN]) * wk : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (NORM && int(k.tid) < BM)
      for (int kk = 0; kk < BK; ++kk) {
        const float x = smem[k.tid * BK + kk];
        squares += x * x;
      }
    for (int kk = 0; kk < BK; kk += 8) {
      simdgroup_float8x8 a[FM], b[FN];
      for (int i = 0; i < FM; ++i) simdgroup_load(a[i], smem + (wr + 8 * i) * BK + kk, BK);
      for (int j = 0; j < FN; ++j) simdgroup_load(b[j], smem + BM * BK + kk * BN + wc + 8 * j, BN);
      for (int i = 0; i < FM; ++i)
        for (int j = 0; j < FN; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // the stage is read before it is refilled
  }
  for (int i = 0; i < FM; ++i)
    for (int j = 0; j < FN; ++j) simdgroup_store(acc[i][j], smem + (wr + 8 * i) * BN + wc + 8 * j, BN);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (NORM) {
    if (int(k.tid) < BM) {
      const float scale = 1.0f / sqrt(squares / float(K) + eps);
      for (int c = 0; c < BN; ++c) smem[k.tid * BN + c] *= scale;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}

// ---- the epilogue's slabs --------------------------------------------------------
// A slab of the f32 block in threadgroup memory.
template <class T, int N, class TG> inline tile<T, N> load_shared(ctx k, TG p) {
  tile<T, N> r;
  for (int c = 0; c < tile<T, N>::P; ++c)
    for (int v = 0; v < TSR_VEC; ++v) r.v[c * TSR_VEC + v] = T(p[lane0<N>(k, c) + v]);
  return r;
}

// `into` with lanes (r, c), LO <= c < HI, r < rows, read from p[r*RS + c - LO]
// (one operand of a concat along the columns).
template <int R, int C, long RS, long LO, long HI, bool ALIGNED, class T, class S>
inline tile<T, R * C> load2d_piece(ctx k, tile<T, R * C> into, device const S* p, i64 rows) {
  for (int c = 0; c < tile<T, R * C>::P; ++c)
    for (int v = 0; v < TSR_VEC; ++v) {
      const i64 l = lane0<R * C>(k, c) + v, r = l / C, col = l % C;
      if (r < rows && col >= LO && col < HI) into.v[c * TSR_VEC + v] = T(widen(p[r * RS + col - LO]));
    }
  return into;
}

// Lane (r, c) of an [R, C] slab = p[r*RS + c*CS], 0 past rows/cols (CS is 1,
// or 0 for a value per row).
template <class T, int R, int C, long RS, long CS, bool ALIGNED, class S>
inline tile<T, R * C> load2d(ctx k, device const S* p, i64 rows, i64 cols) {
  tile<T, R * C> out;
  for (int c = 0; c < tile<T, R * C>::P; ++c)
    for (int v = 0; v < TSR_VEC; ++v) {
      const i64 l = lane0<R * C>(k, c) + v, r = l / C, col = l % C;
      out.v[c * TSR_VEC + v] = r < rows && col < cols ? T(widen(p[r * RS + col * CS])) : T(0);
    }
  return out;
}

template <int R, int C, long RS, bool ALIGNED, class S, class T>
inline void store2d(ctx k, device S* p, i64 rows, i64 cols, tile<T, R * C> t) {
  for (int c = 0; c < tile<T, R * C>::P; ++c)
    for (int v = 0; v < TSR_VEC; ++v) {
      const i64 l = lane0<R * C>(k, c) + v, r = l / C, col = l % C;
      if (r < rows && col < cols) p[r * RS + col] = narrow<S>(t.v[c * TSR_VEC + v]);
    }
}

// Every row of an [R, C] slab becomes the combine of its R rows, in row order,
// for each column, through threadgroup memory (`slab`: the kernel's f32
// array of at least R*C floats; float lanes only).
#define TSR_FOLD_ROWS(NAME)                                                                  \
  template <int R, int C, class T, class TG> inline tile<T, R * C> fold_rows_##NAME(ctx k, tile<T, R * C> t, TG slab) { \
    threadgroup_barrier(mem_flags::mem_threadgroup); /* an earlier fold's readers are done */ \
    for (int c = 0; c < tile<T, R * C>::P; ++c)                                                \
      for (int v = 0; v < TSR_VEC; ++v) slab[lane0<R * C>(k, c) + v] = t.v[c * TSR_VEC + v];  \
    threadgroup_barrier(mem_flags::mem_threadgroup);                                           \
    for (int c = 0; c < tile<T, R * C>::P; ++c)                                                \
      for (int v = 0; v < TSR_VEC; ++v) {                                                      \
        const int col = int((lane0<R * C>(k, c) + v) % C);                                     \
        T x = slab[col];                                                                       \
        for (int r = 1; r < R; ++r) x = combine_##NAME(x, T(slab[r * C + col]));               \
        t.v[c * TSR_VEC + v] = x;                                                              \
      }                                                                                        \
    return t;                                                                                  \
  }
TSR_FOLD_ROWS(sum)
TSR_FOLD_ROWS(prod)
TSR_FOLD_ROWS(max)
TSR_FOLD_ROWS(min)
#undef TSR_FOLD_ROWS

}  // namespace tsr
