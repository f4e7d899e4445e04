// Tessera GPU matmul block, f32 FFMA, variant "stage_a": row-major A (M x K,
// k contiguous) staged through registers and stored transposed in shared
// memory. Opt-in (TESSERA_EXPERIMENTAL=matmul_f32_stage_a; the schedule
// records stage_a = true) until it has been measured on the H200. Appended
// after tessera_matmul_simt.cuh, whose cp.async loader (B) and inner loop it
// reuses, only into kernels whose tile.matmul has stage_a; the contract is
// device/gpu/MATMUL_CONTRACT.md; the entry point matmul_block_stage_a takes
// the parameters of matmul_block.
//
// Why: cp.async copies bytes and cannot transpose, so the default block keeps
// a row-major A tile k-contiguous in smem ([BM][BK+4]) and a thread gathers
// its 8 A values of one k from 8 rows (LDS.64 of 2 k per row). With A stored
// K x M the same tile arrives as [BK][BM] and those 8 values are two LDS.128,
// and that layout runs 0.94-0.97x cuBLAS where row-major A runs 0.81-0.86x.
// Here row-major A takes the fast layout too: each thread loads 16-byte rows
// pieces (4 k of one row) into registers and writes them out as 4 scalars of
// one column each into [BK][BM+4]; the inner loop is then exactly the
// transposed-A one. B keeps its cp.async path and layout.
//
// Pipeline: two smem stages plus one register stage for A. Per k tile kt:
//   issue LDG.128 of A tile kt+1 into registers and cp.async of B tile kt+1
//   into the other stage; multiply stage kt; store the A registers
//   (transposed) into the other stage; wait for B; one __syncthreads.
// Both operands of tile kt+1 are in flight during the whole multiply of tile
// kt (1024 FFMA a thread at 8x8 outputs and BK = 16, ~4000 cycles a tile with
// two blocks an SM: several global latencies). A deeper ring would not hide
// more: A can only run one tile ahead without a second register set (8 more
// registers under the 128-register cap of two blocks an SM), and a third
// stage for B alone would only buy B a lead that A does not have. The loads
// sit in their own basic block (if (more)) ahead of the unrolled multiply, so
// ptxas cannot sink them next to their use.
//
// Global reads of A: a thread takes 4 consecutive k of one row (one LDG.128
// with VEC_A); lanes 0-15 of a warp take 16 rows at one 4-k group, lanes
// 16-31 the same rows at the next group, so each 32-byte sector is used
// whole. Transposed stores: lane (o, kq) writes element (kq + e, o) at float
// (kq + e) * (BM + 4) + o; the half-warps differ by 4 * (BM + 4) = 16
// (mod 32) banks, so a warp's 32 scalar stores hit 32 distinct banks (BM + 4
// = 4 mod 8 is why the pad is 4). Reads of the inner loop are LDS.128 of 4
// adjacent rows at one k: the warp's float4 are contiguous, conflict-free,
// and 16-byte aligned because BM + 4 is a multiple of 4.
//
// The loads are ld.global.cg (__ldcg: L2 only), as cp.async.cg is for the
// default block: each A element is read once per block, L1 would not keep it.
//
// Edges: rows >= mrows and k >= K are written as exact zeros (never read);
// without VEC_A (or with SAM == 1: K == 1) each element is its own scalar
// load. K = 0: no tile, the block is zeros. Accumulation is the default
// block's: k ascending, one __fmaf_rn per (i, j, k) into one accumulator,
// so the result is bitwise the default kernel's (the same products in the
// same order; the zero fill of the k tail is the same too).

namespace tsr {
namespace simt {

// The register stage of a row-major A tile (element (o, k) at src[o*SAM + k])
// and its transposed store into [BK][BM+4].
template <int BM, int BK, int NT, bool VEC, i64 K, i64 SAM>
struct a_stage {
  static constexpr int KG = BK / 4;     // 4-k groups in a row of a tile
  static constexpr int STEP = NT / KG;  // rows between one thread's groups
  static constexpr int R = BM / STEP;   // groups a thread loads per tile
  static constexpr int LD = BM + 4;     // smem pitch of the transposed tile
  static constexpr i64 KT = (K + BK - 1) / BK;
  static constexpr i64 KLAST = (KT > 0 ? KT - 1 : 0) * BK;  // k0 of the last (maybe partial) tile
  static_assert(BK % 4 == 0 && NT % (16 * KG) == 0 && BM % STEP == 0 && BM % 16 == 0,
                "stage_a needs BK % 4 == 0, threads % (4 * BK) == 0, BM % (threads * 4 / BK) == 0, BM % 16 == 0");

  float v[R][4];   // the next tile's values, v[r][e] = (o0 + r*STEP, kq + e)
  const float* p;  // &src(o0, kq) of the next tile
  int ov;          // mrows - o0: rows r*STEP < ov exist
  int kq;          // first k of this thread's group within a tile
  int so;          // float offset of (kq, o0) within a stage

  __device__ __forceinline__ a_stage(const float* src, i64 mrows, int t) {
    const int o0 = t % 16 + 16 * (t / (16 * KG));
    kq = (t / 16) % KG * 4;
    p = src + o0 * SAM + kq;
    ov = int(mrows) - o0;
    so = kq * LD + o0;
  }

  // Loads the next tile (tail: the last tile of a K that is not a multiple of
  // BK) into registers and advances to the one after it.
  __device__ __forceinline__ void load(bool tail) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const bool row_ok = r * STEP < ov;
      const float* g = p + r * STEP * SAM;
      if constexpr (VEC) {
        // VEC_A: a 4-group that starts inside a row is inside it whole.
        if (row_ok && (!tail || KLAST + kq < K)) {
          const float4 x = __ldcg(reinterpret_cast<const float4*>(g));
          v[r][0] = x.x, v[r][1] = x.y, v[r][2] = x.z, v[r][3] = x.w;
        } else {
          v[r][0] = v[r][1] = v[r][2] = v[r][3] = 0.0f;
        }
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) v[r][e] = row_ok && (!tail || KLAST + kq + e < K) ? __ldcg(g + e) : 0.0f;
      }
    }
    p += BK;
  }

  // Writes the registers transposed into a stage ([BK][BM+4] floats).
  __device__ __forceinline__ void store(float* stage) const {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int e = 0; e < 4; ++e) stage[so + e * LD + r * STEP] = v[r][e];
  }
};

}  // namespace simt

template <class T, int BM, int BN, int BK, int WM, int WN, int STAGES, i64 K, i64 SAM, i64 SAK, i64 SBK, i64 SBN,
          bool VEC_A, bool VEC_B, int SMEM_BYTES>
__device__ void matmul_block_stage_a(unsigned char* smem, const float* __restrict__ A, i64 a_base,
                                     const float* __restrict__ B, i64 b_base, i64 mrows, i64 ncols) {
  static_assert(simt::same<T, float>::value, "matmul_block_stage_a is the f32 (FFMA) matmul");
  constexpr int NT = WM * WN * 32;
  static_assert(TSR_THREADS == NT, "TSR_THREADS must be WM*WN*32");
  static_assert(STAGES == 2, "stage_a runs two smem stages and one register stage (see the header comment)");
  static_assert(SAK == 1, "stage_a is for row-major A (k contiguous)");
  static_assert(K >= 0, "K >= 0");
  static_assert(BM % WM == 0 && BN % WN == 0, "warps must tile the block");

  // B as in matmul_block (degenerate strides: n-contiguous, element loads).
  constexpr bool BKC = SBK == 1 && SBN != 1;  // B stored NxK: smem [BN][BK+4]
  constexpr bool AVEC = VEC_A && SAM != 1;    // SAM == SAK == 1 (K == 1): element loads
  constexpr bool BVEC = VEC_B && !(SBK == 1 && SBN == 1);

  // Warp and lane tiles: matmul_block's choice with A outer-contiguous.
  constexpr int WTM = BM / WM, WTN = BN / WN, E = WTM * WTN / 32;
  constexpr int TM = E >= 128 ? 16 : (E >= 32 ? 8 : 4), TN = E / TM;
  static_assert(WTM * WTN == 32 * TM * TN && (TN == 4 || TN == 8 || TN == 16),
                "warp tile must give 16, 32, 64 or 128 outputs per lane");
  constexpr int LM = WTM / TM, LN = WTN / TN;
  static_assert(LM * LN == 32 && LM * TM == WTM && LN * TN == WTN, "warp tile does not split into 32 lanes");
  constexpr int KV = BKC ? (E >= 128 ? 4 : 2) : 1;  // k's per fragment load of a [BN][BK+4] B
  static_assert(BK % KV == 0, "BK must be a multiple of the fragment depth");

  constexpr int PA = BM + 4;  // [BK][BM+4]: see the header comment for the pad
  constexpr int SA = BK * PA, SB = BKC ? BN * (BK + 4) : BK * BN;
  static_assert((i64)2 * (SA + SB) * 4 <= SMEM_BYTES, "pipeline stages exceed SMEM_BYTES");
  static_assert((i64)BM * BN * 4 <= SMEM_BYTES, "the C block exceeds SMEM_BYTES");

  float* const sa = reinterpret_cast<float*>(smem);  // 2 x SA
  float* const sb = sa + 2 * SA;                     // 2 x SB (16-byte aligned: SA % 4 == 0)
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
  constexpr bool PARTIAL = K % BK != 0;  // the last tile is partial
  simt::a_stage<BM, BK, NT, AVEC, K, SAM> la(A + a_base, mrows, tid);
  simt::tile_loader<BN, BK, NT, BKC, BVEC, K, SBN, SBK> lb(bg, ncols, tid);
  const u32 sb_u = simt::smem_u32(sb);

  // Prologue: tile 0 into stage 0.
  if (KT > 0) {
    la.load(PARTIAL && KT == 1);
    lb.issue(sb_u, PARTIAL && KT == 1, bg, ncols);
    simt::cp_async_commit();
    la.store(sa);
  }
  simt::cp_async_wait<0>();
  __syncthreads();
  // Tiles in order 0, 1, ..., KT-1 (only the last can be partial). Stage
  // kt & 1 holds tile kt; the other stage was last read in step kt-1, before
  // its closing __syncthreads, so tile kt+1 may be written into it now.
  for (i64 kt = 0; kt < KT; ++kt) {
    const int cur = int(kt & 1), nxt = cur ^ 1;
    const bool more = kt + 1 < KT;
    if (more) {
      const bool tail = PARTIAL && kt + 2 == KT;
      la.load(tail);
      lb.issue(sb_u + u32(nxt * SB * 4), tail, bg, ncols);
      simt::cp_async_commit();
    }
    simt::mma_stage<PA, BN, BK, TM, TN, LM, LN, KV, false, BKC>(sa + cur * SA, sb + cur * SB, wm0, wn0, lm, ln, acc);
    if (more) la.store(sa + nxt * SA);
    simt::cp_async_wait<0>();  // this thread's B copies of tile kt+1 landed
    __syncthreads();           // everyone's (and the A stores); stage cur is no longer read
  }
  // Every read of the pipeline buffers is behind the last __syncthreads: the
  // C block may reuse them.

  simt::store_block<false, BKC, BN, TM, TN, LM, LN>(reinterpret_cast<float*>(smem), acc, wm0, wn0, lm, ln);
  __syncthreads();
}

}  // namespace tsr
