// Tessera GPU matmul block, f32 on CUDA cores (FFMA, no TF32): the device
// half of the matmul family for T = float. Appended after tessera_tile.cuh
// (i64, u32, TSR_THREADS); the contract is device/gpu/MATMUL_CONTRACT.md.
//
// One thread block of TSR_THREADS = WM*WN*32 threads computes a [BM, BN] block
// of C = A x B over the whole K and leaves it row-major in shared memory.
//
// Data flow, per BK-deep k tile:
//   global --cp.async (16 B, or 4 B without VEC)--> smem stage --LDS.128/64--> registers --FFMA
// STAGES smem stages form a ring; tile kt+STAGES-1 is in flight while tile kt
// is multiplied, so global latency hides behind STAGES-1 tiles of math, with
// a single __syncthreads per k tile.
//
// Shared-memory layouts. cp.async copies bytes, it cannot transpose, so each
// operand keeps its global orientation in shared memory and the register
// fragments are gathered to suit it:
//   - "k-contiguous" operand (A row-major MxK, or B stored NxK): smem
//     [rows][BK+4]. A thread owns rows r0+l, r0+l+L, ... (strided by the L
//     lanes that share the row dimension) and reads KV consecutive k of one
//     row with one LDS.64/128. The +4 pad makes the row stride (BK+4) floats
//     = 20 for BK=16, so the 8 distinct rows a warp reads at once start at
//     banks 0,20,8,28,16,4,24,12: four-bank groups that never collide. That is
//     exactly the PAD of the contract's SMEM_BYTES formula.
//   - "outer-contiguous" operand (A stored KxM, or B row-major KxN): smem
//     [BK][rows], no pad; a thread owns groups of 4 adjacent rows and reads
//     each group for one k with one LDS.128 (the warp's 8 or 4 distinct
//     float4 are contiguous: no conflict).
// Either way a thread computes a TM x TN (8x8, or 8x4 / 4x4 for small warp
// tiles) register tile with TM*TN FFMA per k for (TM+TN)/4 vector loads.
//
// Accumulation order: k ascending, one __fmaf_rn per (i, j, k) into a single
// f32 accumulator: bitwise deterministic, independent of the grid.
//
// Recommended configs, measured on the H200 (sm_90a) against cuBLAS SGEMM
// (default math, no TF32) in the same run; NN = A row-major MxK, B row-major
// KxN; TN = A stored KxM; NT = B stored NxK. SMEM_BYTES =
// max(BM*BN*4, STAGES*(BM+BN)*(BK+4)*4).
//   large GEMMs (4096^3):  BM=128 BN=128 BK=16 WM=2 WN=4 STAGES=3,
//       TSR_THREADS=256, SMEM_BYTES=65536, __launch_bounds__(256, 2)
//       (128-register cap: two blocks per SM). TFLOP/s (x cuBLAS):
//       NN 44.2 (0.86), TN 48.5 (0.94), NT 38.8 (0.78), TT 42.0 (0.87).
//       TN only: BK=32 STAGES=2, SMEM_BYTES=73728: 50.4 (0.98).
//   small GEMMs (1024^3):  BM=64 BN=64 BK=16 WM=1 WN=2 STAGES=3,
//       TSR_THREADS=64, SMEM_BYTES=30720, __launch_bounds__(64, 6):
//       NN 34.3 (1.11), TN 37.3 (1.10), NT 31.0 (1.03), TT 33.4 (1.04).
//       (128x128 there: 18 TFLOP/s, 64 blocks for 132 SMs.)
//   64x64 warp tiles (128 outputs per lane, 8x16 for NN / 16x8 otherwise,
//       LDS.128 along k for the one k-contiguous operand; no 128-register
//       cap): BM=128 BN=128 BK=16 WM=2 WN=2 STAGES=3, TSR_THREADS=128,
//       SMEM_BYTES=65536, __launch_bounds__(128, 2) (255 registers, no
//       spills; STAGES=4: SMEM_BYTES=81920); or BM=128 BN=256 BK=16 WM=2
//       WN=4 STAGES=4, TSR_THREADS=256, SMEM_BYTES=131072,
//       __launch_bounds__(256, 1). Timing: see the probe (devbuild/simt_probe).
// Without the min-blocks argument ptxas takes ~167 registers for the large
// config (one block per SM; NN 42.1 TFLOP/s).
//
// Degenerate strides: when both strides of an operand are 1 (K == 1, or a
// single row/column), A is treated as k-contiguous (SAK == 1) and B as
// n-contiguous (SBN == 1), and that operand uses element loads whatever
// VEC_A / VEC_B say (the caller's 16-byte guarantee names no dimension then).

namespace tsr {
namespace simt {

template <class X, class Y> struct same { static constexpr bool value = false; };
template <class X> struct same<X, X> { static constexpr bool value = true; };
template <bool C, class X, class Y> struct pick { typedef X type; };
template <class X, class Y> struct pick<false, X, Y> { typedef Y type; };
// TSR_SIMT_TRANSPOSE 1 routes k-contiguous operands through transpose_loader
// (registers, transposed stores). Correct, but measured 5-15% slower on the
// H200 than reading them in their [rows][BK+4] layout, so it is off.
#ifndef TSR_SIMT_TRANSPOSE
#define TSR_SIMT_TRANSPOSE 0
#endif

__device__ __forceinline__ u32 smem_u32(const void* p) { return (u32)__cvta_generic_to_shared(p); }

// cp.async with zero fill: copies src_bytes (0..BYTES) from global and writes
// zeros for the rest, so out-of-range rows and the k tail cost no branch and
// leave exact zeros (a stale NaN times a zero would poison the sum). With
// src_bytes == 0 nothing is read from src.
__device__ __forceinline__ void cp_async16(u32 dst, const float* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async4(u32 dst, const float* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Copies BK-deep tiles of one operand into smem stages with cp.async.
// Element (o, k) of the operand (o: row of A / column of B) is src[o*SO + k*SK];
// o < nvalid and k < K are read, everything else is zero-filled.
//
// A tile is CH copies of W elements (W = 4: 16 B, needs VEC; W = 1: 4 B)
// along the operand's contiguous dimension, CPR copies per contiguous run.
// Consecutive threads take consecutive copies of a run, so a warp's reads
// coalesce. When NT is a multiple of CPR ("regular", every config in the
// header comment), a thread's copies differ only along the other dimension by
// a constant step: one pointer, one smem offset and one validity count are
// kept per thread and each copy adds compile-time offsets (the previous
// per-copy address arithmetic cost registers and spilled under a 128 cap).
template <int BO, int BK, int NT, bool KC, bool VEC, i64 K, i64 SO, i64 SK>
struct tile_loader {
  static constexpr int W = VEC ? 4 : 1;
  static constexpr int CPR = KC ? BK / W : BO / W;  // copies per contiguous run
  static constexpr int CH = BO * BK / W;            // copies per tile
  static constexpr int R = (CH + NT - 1) / NT;      // copies per thread
  static constexpr bool REGULAR = NT % CPR == 0;
  static constexpr int STEP = NT / (REGULAR ? CPR : 1);  // along the other dim, per copy
  static constexpr i64 KT = (K + BK - 1) / BK;
  static constexpr i64 KLAST = (KT > 0 ? KT - 1 : 0) * BK;  // k0 of the last (maybe partial) tile
  static constexpr int LD = KC ? BK + 4 : BO;               // smem row pitch in floats

  const float* p;  // global address of this thread's first copy in the next tile
  u32 s;           // smem byte offset of that copy within a stage
  int ov;          // nvalid minus the first copy's o (nvalid <= BO: an int)
  int kt0;         // k of the first copy within a tile
  int tid;

  __device__ __forceinline__ tile_loader(const float* src, i64 nvalid, int t) : tid(t) {
    const int c = t % CPR, q = t / CPR;  // position in the run, run index
    const int o = KC ? q : c * W, k = KC ? c * W : q;
    p = src + o * SO + k * SK;
    s = u32(KC ? o * LD + k : k * LD + o) * 4u;
    ov = int(nvalid) - o;
    kt0 = k;
  }

  // Issues tile (the next one; tail: it is the last of a partial K) into the
  // stage at smem byte address stage, then advances to the next tile.
  __device__ __forceinline__ void issue(u32 stage, bool tail, const float* src, i64 nvalid) {
    if constexpr (REGULAR) {
      // Validity shared by all of this thread's copies.
      int nshared;
      if constexpr (KC) {  // k is fixed per thread: k-tail count
        const i64 rem = K - (KLAST + kt0);
        nshared = !tail ? W : (rem >= W ? W : (rem > 0 ? int(rem) : 0));
      } else {  // o is fixed per thread: edge count
        nshared = ov >= W ? W : (ov > 0 ? int(ov) : 0);
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (CH % NT != 0 && tid + r * NT >= CH) break;
        int n = nshared;
        if constexpr (KC) {
          if (r * STEP >= ov) n = 0;  // row/column past the edge
        } else {
          if (tail && KLAST + kt0 + r * STEP >= K) n = 0;  // k past the end
        }
        const float* g = p + (KC ? r * STEP * SO : r * STEP * SK);
        const u32 d = stage + s + u32(r * STEP * LD) * 4u;  // the other dim is rows (KC) or k (not)
        if constexpr (VEC) cp_async16(d, g, n * 4);
        else cp_async4(d, g, n * 4);
      }
    } else {
      // General mapping (NT not a multiple of CPR): per-copy coordinates.
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int e = tid + r * NT;
        if (CH % NT != 0 && e >= CH) break;
        const int o = KC ? e / CPR : (e % CPR) * W, kr = KC ? (e % CPR) * W : e / CPR;
        const i64 k = kbase + kr;
        const i64 kr_left = K - k, o_left = nvalid - o;
        const i64 left = KC ? kr_left : o_left;
        int n = left >= W ? W : (left > 0 ? int(left) : 0);
        if ((KC ? o_left : kr_left) <= 0) n = 0;
        const u32 d = stage + u32(KC ? o * LD + kr : kr * LD + o) * 4u;
        const float* g = src + o * SO + k * SK;
        if constexpr (VEC) cp_async16(d, g, n * 4);
        else cp_async4(d, g, n * 4);
      }
      kbase += BK;
    }
    p += BK * SK;
  }
  i64 kbase = 0;  // general mapping only: k0 of the next tile
};

// Loads BK-deep tiles of a k-contiguous operand (SK == 1) through registers
// and stores them transposed, [BK][BO+4], so that the inner loop reads it
// like an outer-contiguous operand (float4 of 4 rows at one k). Off by
// default (TSR_SIMT_TRANSPOSE): on the H200 it ran 5-15% slower than the
// cp.async [rows][BK+4] path (NN 4096^3: 39 vs 44 TFLOP/s). Global reads: a thread takes 4
// consecutive k of one row (one 16-byte load with VEC); lanes 0-15 of a warp
// take 16 rows at one 4-k group, lanes 16-31 the same rows at the next group,
// so every 32-byte sector a warp touches is used whole. The transposed
// stores then hit banks (4k*(BO+4) + o) % 32 that differ between the two
// half-warps by 16 (BO+4 = 4 mod 8): conflict-free.
template <int BO, int BK, int NT, bool VEC, i64 K, i64 SO>
struct transpose_loader {
  static constexpr int KG = BK / 4;     // 4-k groups per row
  static constexpr int STEP = NT / KG;  // rows between a thread's copies
  static constexpr int R = (BO * KG + NT - 1) / NT;
  static constexpr int LD = BO + 4;
  static constexpr i64 KT = (K + BK - 1) / BK;
  static constexpr i64 KLAST = (KT > 0 ? KT - 1 : 0) * BK;
  static_assert(NT % (16 * KG) == 0 && BO % 16 == 0, "transpose_loader mapping needs NT % (4*BK) == 0");

  float v[R][4];
  const float* p;  // row o0, k = kg*4 of the next tile
  int ov;          // nvalid - o0
  int kq;          // 4*kg: k of this thread's group within a tile
  int o0;

  __device__ __forceinline__ transpose_loader(const float* src, i64 nvalid, int t) {
    o0 = (t % 16) + 16 * (t / (16 * KG));
    kq = ((t / 16) % KG) * 4;
    p = src + o0 * SO + kq;
    ov = int(nvalid) - o0;
  }
  __device__ __forceinline__ void load(bool tail) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const bool row_ok = r * STEP < ov && (BO % STEP == 0 || o0 + r * STEP < BO);
      const float* g = p + r * STEP * SO;
      if (VEC && row_ok && (!tail || KLAST + kq + 4 <= K)) {
        const float4 x = __ldg(reinterpret_cast<const float4*>(g));
        v[r][0] = x.x, v[r][1] = x.y, v[r][2] = x.z, v[r][3] = x.w;
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) v[r][e] = row_ok && (!tail || KLAST + kq + e < K) ? __ldg(g + e) : 0.0f;
      }
    }
    p += BK;
  }
  __device__ __forceinline__ void store(float* stage) const {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (BO % STEP != 0 && o0 + r * STEP >= BO) break;
#pragma unroll
      for (int e = 0; e < 4; ++e) stage[(kq + e) * LD + o0 + r * STEP] = v[r][e];
    }
  }
};

// A no-op stand-in for the operand that has no register stage.
struct no_loader {
  __device__ __forceinline__ void load(bool) {}
  __device__ __forceinline__ void store(float*) const {}
};

// Position (row of A / column of B inside the block) of a thread's i-th
// fragment element. w0: the warp tile's first row, l: the lane's index along
// this dimension (L lanes), T: elements per thread, WT = L*T: warp tile extent.
template <bool KC, int T, int L> __device__ __forceinline__ int frag_pos(int w0, int l, int i) {
  if constexpr (KC) return w0 + l + L * i;             // strided rows: conflict-free LDS along k
  else return w0 + (i / 4) * (L * 4) + l * 4 + (i % 4);  // groups of 4 adjacent: one LDS.128 each
}

// KV consecutive floats from shared memory, one vector load.
template <int KV> __device__ __forceinline__ void lds_vec(const float* p, float* out) {
  if constexpr (KV == 4) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
  } else if constexpr (KV == 2) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    out[0] = v.x, out[1] = v.y;
  } else {
    out[0] = *p;
  }
}

// Multiplies one smem stage into the accumulators: BK steps of k in order.
// AKC/BKC: the operand's smem layout is [rows][BK+4]; otherwise [BK][PA or PB].
template <int PA, int PB, int BK, int TM, int TN, int LM, int LN, int KV, bool AKC, bool BKC>
__device__ __forceinline__ void mma_stage(const float* as, const float* bs, int wm0, int wn0, int lm, int ln,
                                          float (&acc)[TM][TN]) {
#pragma unroll
  for (int kk = 0; kk < BK; kk += KV) {
    // k-contiguous operands: all KV k's of each owned row at once.
    float a[KV][TM], b[KV][TN];
    if constexpr (AKC) {
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        float t[KV];
        lds_vec<KV>(as + frag_pos<true, TM, LM>(wm0, lm, i) * (BK + 4) + kk, t);
#pragma unroll
        for (int v = 0; v < KV; ++v) a[v][i] = t[v];
      }
    }
    if constexpr (BKC) {
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        float t[KV];
        lds_vec<KV>(bs + frag_pos<true, TN, LN>(wn0, ln, j) * (BK + 4) + kk, t);
#pragma unroll
        for (int v = 0; v < KV; ++v) b[v][j] = t[v];
      }
    }
#pragma unroll
    for (int v = 0; v < KV; ++v) {
      // outer-contiguous operands: float4 groups of one k.
      if constexpr (!AKC) {
#pragma unroll
        for (int g = 0; g < TM / 4; ++g) lds_vec<4>(as + (kk + v) * PA + frag_pos<false, TM, LM>(wm0, lm, g * 4), &a[v][g * 4]);
      }
      if constexpr (!BKC) {
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) lds_vec<4>(bs + (kk + v) * PB + frag_pos<false, TN, LN>(wn0, ln, g * 4), &b[v][g * 4]);
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = __fmaf_rn(a[v][i], b[v][j], acc[i][j]);
    }
  }
}

// A thread's TM x TN accumulators into the row-major f32 C block (row
// stride BN): the block contract's result, shared by the block variants.
template <bool AKS, bool BKS, int BN, int TM, int TN, int LM, int LN>
__device__ __forceinline__ void store_block(float* cs, const float (&acc)[TM][TN], int wm0, int wn0, int lm, int ln) {
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = frag_pos<AKS, TM, LM>(wm0, lm, i);
    if constexpr (!BKS) {
#pragma unroll
      for (int g = 0; g < TN / 4; ++g) {
        const int c = frag_pos<false, TN, LN>(wn0, ln, g * 4);
        *reinterpret_cast<float4*>(cs + r * BN + c) =
            make_float4(acc[i][g * 4], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]);
      }
    } else {
#pragma unroll
      for (int j = 0; j < TN; ++j) cs[r * BN + frag_pos<true, TN, LN>(wn0, ln, j)] = acc[i][j];
    }
  }
}

}  // namespace simt

// The contract's entry point for T = float (the parameters are const float*,
// so a generic const T* overload for 16-bit types can coexist: for float this
// one is the more specialized).
template <class T, int BM, int BN, int BK, int WM, int WN, int STAGES, i64 K, i64 SAM, i64 SAK, i64 SBK, i64 SBN,
          bool VEC_A, bool VEC_B, int SMEM_BYTES>
__device__ void matmul_block(unsigned char* smem, const float* __restrict__ A, i64 a_base, const float* __restrict__ B,
                             i64 b_base, i64 mrows, i64 ncols) {
  static_assert(simt::same<T, float>::value, "tessera_matmul_simt.cuh is the f32 (FFMA) matmul");
  constexpr int NT = WM * WN * 32;
  static_assert(TSR_THREADS == NT, "TSR_THREADS must be WM*WN*32");
  static_assert(STAGES >= 2, "the cp.async ring needs at least two stages");
  static_assert(K >= 0, "K >= 0");
  static_assert(BK % 4 == 0 && BK >= 4, "BK must be a multiple of 4");
  static_assert(BM % WM == 0 && BN % WN == 0, "warps must tile the block");

  // Operand orientation (see the header comment for the degenerate case).
  constexpr bool AKC = SAK == 1;                 // A row-major: k contiguous
  constexpr bool BKC = SBK == 1 && SBN != 1;     // B stored NxK: k contiguous
  constexpr bool AVEC = VEC_A && !(SAM == 1 && SAK == 1);
  constexpr bool BVEC = VEC_B && !(SBK == 1 && SBN == 1);

  // k-contiguous operands go through registers and are stored transposed
  // (transpose_loader) when the mapping allows; then both operands sit in
  // smem as [BK][rows (+4)] and the inner loop reads only float4 of 4 rows.
  constexpr bool ATR = AKC && NT % (4 * BK) == 0 && BM % 16 == 0 && TSR_SIMT_TRANSPOSE;
  constexpr bool BTR = BKC && NT % (4 * BK) == 0 && BN % 16 == 0 && TSR_SIMT_TRANSPOSE;
  constexpr bool AKS = AKC && !ATR, BKS = BKC && !BTR;  // smem layout [rows][BK+4]
  constexpr int PA = ATR ? BM + 4 : BM, PB = BTR ? BN + 4 : BN;  // pitch of [BK][rows] layouts

  // Warp tile WTM x WTN; each lane a TM x TN register tile; LM x LN lanes.
  // 128 outputs per lane (64x64 warp tiles: 1 block of 256 or 2 of 128
  // threads per SM, up to 255 registers) use a 8x16 / 16x8 tile whose long
  // side is the outer-contiguous operand: its fragments are LDS.128 of 4
  // adjacent rows at one k, the k-contiguous operand's are LDS.128 of 4 k
  // of one row, so fewer of those are needed per FFMA.
  constexpr int WTM = BM / WM, WTN = BN / WN, E = WTM * WTN / 32;
  constexpr int TM = E >= 128 ? (AKS && !BKS ? 8 : 16) : (E >= 32 ? 8 : 4), TN = E / TM;
  static_assert(WTM * WTN == 32 * TM * TN && (TN == 4 || TN == 8 || TN == 16),
                "warp tile must give 16, 32, 64 or 128 outputs per lane");
  constexpr int LM = WTM / TM, LN = WTN / TN;
  static_assert(LM * LN == 32 && LM * TM == WTM && LN * TN == WTN, "warp tile does not split into 32 lanes");
  // k's per fragment load of a [rows][BK+4] operand: 2 (LDS.64). With 4
  // (LDS.128) the 32 fragment registers next to the 64 accumulators spilled
  // under the 128-register cap and ran 5% slower on the H200.
  // With 128 outputs per lane (no 128-register cap) and one k-contiguous
  // operand, 4 (LDS.128): a[4][8] next to b[16] of one k.
#ifdef TSR_MATMUL_SIMT_KV  // tuning override (probe only)
  constexpr int KV = AKS || BKS ? TSR_MATMUL_SIMT_KV : 1;
#else
  constexpr int KV = AKS || BKS ? (E >= 128 && !(AKS && BKS) ? 4 : 2) : 1;
#endif
  static_assert(BK % KV == 0, "BK must be a multiple of the fragment depth");

  constexpr int SA = AKS ? BM * (BK + 4) : BK * PA, SB = BKS ? BN * (BK + 4) : BK * PB;
  static_assert((i64)STAGES * (SA + SB) * 4 <= SMEM_BYTES, "pipeline stages exceed SMEM_BYTES");
  static_assert((i64)BM * BN * 4 <= SMEM_BYTES, "the C block exceeds SMEM_BYTES");

  float* const sa = reinterpret_cast<float*>(smem);  // STAGES x SA
  float* const sb = sa + STAGES * SA;                // STAGES x SB
  const float* const ag = A + a_base;
  const float* const bg = B + b_base;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm0 = (warp / WN) * WTM, wn0 = (warp % WN) * WTN;
  const int lm = lane / LN, ln = lane % LN;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  constexpr i64 KT = (K + BK - 1) / BK;
  // Per operand: a cp.async loader (into [rows][BK+4] or [BK][rows]) or a
  // register-stage transposing loader.
  using LA = typename simt::pick<ATR, simt::transpose_loader<BM, BK, NT, AVEC, K, SAM>,
                                 simt::tile_loader<BM, BK, NT, AKC, AVEC, K, SAM, SAK>>::type;
  using LB = typename simt::pick<BTR, simt::transpose_loader<BN, BK, NT, BVEC, K, SBN>,
                                 simt::tile_loader<BN, BK, NT, BKC, BVEC, K, SBN, SBK>>::type;
  LA la(ag, mrows, tid);
  LB lb(bg, ncols, tid);
  const u32 sa_u = simt::smem_u32(sa), sb_u = simt::smem_u32(sb);
  // Tiles are fetched in order 0, 1, ..., KT-1; only the last can be partial.
  // fetch: cp.asyncs issued, register stages loaded; land: register stages
  // stored (after the math, so their global latency hides behind it).
  auto fetch = [&](int stage, i64 kt) {
    const bool tail = K % BK != 0 && kt == KT - 1;
    if constexpr (ATR) la.load(tail);
    else la.issue(sa_u + u32(stage * SA * 4), tail, ag, mrows);
    if constexpr (BTR) lb.load(tail);
    else lb.issue(sb_u + u32(stage * SB * 4), tail, bg, ncols);
  };
  auto land = [&](int stage) {
    if constexpr (ATR) la.store(sa + stage * SA);
    if constexpr (BTR) lb.store(sb + stage * SB);
  };

  // Prologue: STAGES-1 tiles in flight. Every step commits a group (empty
  // past the end) so the wait count below is the same constant throughout.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) {
      fetch(s, s);
      land(s);
    }
    simt::cp_async_commit();
  }
  int rs = 0, ws = STAGES - 1;  // stage read this step, stage refilled this step
  for (i64 kt = 0; kt < KT; ++kt) {
    simt::cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt landed
    __syncthreads();                    // everyone's did (and their stores), and stage ws is no longer read
    const bool more = kt + STAGES - 1 < KT;
    if (more) fetch(ws, kt + STAGES - 1);
    simt::cp_async_commit();
    simt::mma_stage<PA, PB, BK, TM, TN, LM, LN, KV, AKS, BKS>(sa + rs * SA, sb + rs * SB, wm0, wn0, lm, ln, acc);
    if (more) land(ws);
    rs = rs + 1 == STAGES ? 0 : rs + 1;
    ws = ws + 1 == STAGES ? 0 : ws + 1;
  }
  simt::cp_async_wait<0>();
  __syncthreads();  // all reads of the pipeline buffers are done: reuse them for C

  simt::store_block<AKS, BKS, BN, TM, TN, LM, LN>(reinterpret_cast<float*>(smem), acc, wm0, wn0, lm, ln);
  __syncthreads();
}

}  // namespace tsr
