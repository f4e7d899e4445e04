// Tessera GPU matmul block for 16-bit inputs (tsr::f16_t, tsr::bf16_t) on
// tensor cores, f32 accumulation. Appended after tessera_tile.cuh; the
// contract is device/gpu/MATMUL_CONTRACT.md. NVRTC-compilable: no #include,
// only builtins and inline PTX (cp.async, ldmatrix, mma.sync: sm_80+).
//
// Data path of one [BM, BN] block:
//   global --cp.async 16 B (zero-filled tails)--> smem ring of STAGES k-slices
//          --ldmatrix (.trans for M/N-contiguous slices)--> registers
//          --mma.sync.m16n8k16 (f32 accumulate)--> per-warp accumulators
//          --> smem f32 [BM][BN] row-major for the epilogue.
//
// Each operand slice is stored in smem in the layout it has in global memory
// (its contiguous dim stays contiguous), so every global load is a 16-byte
// vector along that dim and the transposes of the four layouts all happen in
// ldmatrix: A with K contiguous and B with K contiguous (B stored N x K) use
// the plain form, M- or N-contiguous slices use .trans. Rows of a slice are
// padded by 8 elements (16 B): a row pitch of an odd number of 16-byte units
// puts the 8 row addresses of one 8x8 ldmatrix matrix in 8 distinct bank
// groups, so ldmatrix is conflict-free (inner extents are multiples of 16).
//
// Warps: WM x WN warps, each owning a (BM/WM) x (BN/WN) sub-tile as
// MI x NI mma tiles of 16 x 8. Per 16-wide k step a warp does MI + NI/2
// ldmatrix.x4 and MI*NI mma; the fragments of the next k step are loaded
// before the mma of this one (register double buffer), and the next k-slice
// is waited for one k step early so that its first fragments load before the
// current slice's last mma: the tensor cores never wait on a barrier with an
// empty queue.
//
// Recommended configurations (measured on an H200, see the report at the end
// of this comment block; SMEM_BYTES by the contract's formula,
// max(BM*BN*4, STAGES*(BM+BN)*(BK+8)*2)):
//   large (M, N >= ~2048):  BM=128 BN=256 BK=32 WM=2 WN=4 STAGES=4,
//                           TSR_THREADS=256, SMEM_BYTES=131072
//   small / skinny:         BM=128 BN=128 BK=32 WM=2 WN=4 STAGES=4,
//                           TSR_THREADS=256, SMEM_BYTES=81920
//                           (warp tile 64x32; twice the blocks of "large")
// matmul_mma_smem_bytes() below gives SMEM_BYTES for any configuration.
// The kernel should carry __launch_bounds__(TSR_THREADS, 1) (the large
// configuration needs ~230 registers per thread).

namespace tsr {

// SMEM_BYTES the schedule should give a configuration (the contract's formula).
constexpr int matmul_mma_smem_bytes(int BM, int BN, int BK, int STAGES) {
  return BM * BN * 4 > STAGES * (BM + BN) * (BK + 8) * 2 ? BM * BN * 4 : STAGES * (BM + BN) * (BK + 8) * 2;
}

namespace mma_detail {

// 32-bit shared-window address of a generic pointer into shared memory
// (what ldmatrix / cp.async take).
__device__ __forceinline__ u32 smem_u32(const void* p) { return (u32)__cvta_generic_to_shared(p); }

// 16-byte async copy global -> shared; only the first src_bytes (0..16) are
// read, the rest of the 16 destination bytes are zero-filled. That is how
// rows past mrows/ncols and the k tail are never read yet come out as zeros
// (zeros, not garbage, so that 0 * anything stays out of the accumulators).
// .cg: cache in L2 only; the slice is read once per block from smem.
__device__ __forceinline__ void cp_async16(u32 dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Four 8x8 b16 matrices; lane l supplies the row address of matrix l/8.
// volatile: they must stay between the barriers that guard the smem ring.
__device__ __forceinline__ void ldsm_x4(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a * b on a 16x8x16 tile, f32 accumulators (a: 16x16 row, b: 16x8 col).
template <class T> __device__ __forceinline__ void mma16816(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1);
template <> __device__ __forceinline__ void mma16816<bf16_t>(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void mma16816<f16_t>(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The k-slices of one operand. In global memory a slice is OUTER rows of
// INNER contiguous elements, rows STRIDE elements apart; in smem, rows of
// INNER + 8 elements. K_OUTER: the rows are k (A stored K x M, B stored
// K x N), else the rows are m / n and k runs along the contiguous dim. g is
// the block's element (0, 0) (valid: the block has a row and K >= 1); lim is
// mrows or ncols. Elements past lim or past K are zero-filled, never read.
template <int OUTER, int INNER, bool K_OUTER, i64 STRIDE, i64 K>
struct slice_stream {
  static constexpr int PITCH = INNER + 8;
  // 16-byte chunks: when every thread gets whole rows of the same column, a
  // thread's chunks are one pointer plus compile-time offsets.
  static constexpr int CH = INNER / 8;
  static constexpr bool VFAST = TSR_THREADS % CH == 0 && (OUTER * CH) % TSR_THREADS == 0;
  static constexpr int VSTEP = VFAST ? TSR_THREADS / CH : 1, VIT = VFAST ? OUTER / VSTEP : 1;
  // Element loads, same idea with one element per row and thread.
  static constexpr bool EFAST = TSR_THREADS % INNER == 0 && (OUTER * INNER) % TSR_THREADS == 0;
  static constexpr int ESTEP = EFAST ? TSR_THREADS / INNER : 1, EIT = EFAST ? OUTER / ESTEP : 1;
  static constexpr int EBATCH = EIT < 8 ? EIT : 8;  // loads in flight per thread before their stores

  const u16* g;
  i64 lim;

  // Slice starting at k0 into smem at sm. vec: 16-byte cp.async (g and
  // STRIDE 8-element aligned), else 2-byte loads and stores.
  __device__ __forceinline__ void copy(bool vec, unsigned char* sm, i64 k0) const {
    const int tid = threadIdx.x;
    const u16* gs = g + (K_OUTER ? k0 * STRIDE : k0);
    const i64 inner_lim = K_OUTER ? lim : K - k0, outer_lim = K_OUTER ? K - k0 : lim;
    if (vec) {
      const u32 s0 = smem_u32(sm);
      if constexpr (VFAST) {
        const int c = (tid % CH) * 8, o0 = tid / CH;
        const u16* src = gs + o0 * STRIDE + c;
        const u32 dst = s0 + u32(o0 * PITCH + c) * 2u;
        const i64 rem = inner_lim - c;
        const int ib = rem >= 8 ? 16 : rem > 0 ? int(rem) * 2 : 0;
#pragma unroll
        for (int i = 0; i < VIT; ++i) {
          const int bytes = o0 + i * VSTEP < outer_lim ? ib : 0;
          cp_async16(dst + u32(i * VSTEP * PITCH * 2), bytes ? src + i64(i) * VSTEP * STRIDE : g, bytes);
        }
      } else {
        constexpr int N = OUTER * CH, IT = (N + TSR_THREADS - 1) / TSR_THREADS;
#pragma unroll
        for (int i = 0; i < IT; ++i) {
          const int e = tid + i * TSR_THREADS;
          if (N % TSR_THREADS != 0 && e >= N) break;
          const int o = e / CH, c = (e % CH) * 8;
          const i64 rem = o < outer_lim ? inner_lim - c : 0;
          const int bytes = rem >= 8 ? 16 : rem > 0 ? int(rem) * 2 : 0;
          cp_async16(s0 + u32(o * PITCH + c) * 2u, bytes ? gs + o * STRIDE + c : g, bytes);
        }
      }
    } else {
      u16* s = reinterpret_cast<u16*>(sm);
      if constexpr (EFAST) {
        const int c = tid % INNER, o0 = tid / INNER;
        const u16* src = gs + o0 * STRIDE + c;
        u16* dst = s + o0 * PITCH + c;
        const bool cok = c < inner_lim;
#pragma unroll
        for (int b = 0; b < EIT; b += EBATCH) {
          u16 v[EBATCH];
#pragma unroll
          for (int j = 0; j < EBATCH; ++j) {
            const int i = b + j;
            v[j] = cok && o0 + i * ESTEP < outer_lim ? src[i64(i) * ESTEP * STRIDE] : u16(0);
          }
#pragma unroll
          for (int j = 0; j < EBATCH; ++j) dst[(b + j) * ESTEP * PITCH] = v[j];
        }
      } else {
        constexpr int N = OUTER * INNER, IT = (N + TSR_THREADS - 1) / TSR_THREADS;
#pragma unroll
        for (int i = 0; i < IT; ++i) {
          const int e = tid + i * TSR_THREADS;
          if (N % TSR_THREADS != 0 && e >= N) break;
          const int o = e / INNER, c = e % INNER;
          s[o * PITCH + c] = o < outer_lim && c < inner_lim ? gs[o * STRIDE + c] : u16(0);
        }
      }
    }
  }
};

}  // namespace mma_detail

template <class T, int BM, int BN, int BK, int WM, int WN, int STAGES, i64 K, i64 SAM, i64 SAK, i64 SBK, i64 SBN,
          bool VEC_A, bool VEC_B, int SMEM_BYTES>
__device__ void matmul_block(unsigned char* smem, const T* __restrict__ A, i64 a_base, const T* __restrict__ B,
                             i64 b_base, i64 mrows, i64 ncols) {
  using namespace mma_detail;
  static_assert(sizeof(T) == 2, "tessera_matmul_mma.cuh is the 16-bit (f16_t / bf16_t) matmul block");
  static_assert(TSR_THREADS == WM * WN * 32, "TSR_THREADS must be WM*WN*32");
  static_assert(K >= 0, "K >= 0");
  static_assert(SAM == 1 || SAK == 1, "one of A's strides must be 1");
  static_assert(SBK == 1 || SBN == 1, "one of B's strides must be 1");
  static_assert(BK % 16 == 0 && BK > 0, "BK: a multiple of the mma k (16)");
  static_assert(BM % (16 * WM) == 0, "warp tile rows: a multiple of the mma m (16)");
  static_assert(BN % (16 * WN) == 0, "warp tile cols: a multiple of 16 (ldmatrix.x4 loads two n8 tiles)");
  static_assert(STAGES >= 2, "STAGES >= 2");

  // Which dim of each operand is contiguous. A: SAK == 1 wins (contract).
  // B: when both strides are 1, K == 1 or N == 1; the extent-1 dim is not
  // the contiguous one.
  constexpr bool A_KC = SAK == 1;                      // slice [BM][BK], else [BK][BM]
  constexpr bool B_KC = SBK == 1 && (SBN != 1 || K != 1);  // slice [BN][BK], else [BK][BN]
  constexpr i64 A_STRIDE = A_KC ? SAM : SAK;           // between slice rows, elements
  constexpr i64 B_STRIDE = B_KC ? SBN : SBK;
  constexpr int A_OUT = A_KC ? BM : BK, A_IN = A_KC ? BK : BM;
  constexpr int B_OUT = B_KC ? BN : BK, B_IN = B_KC ? BK : BN;
  constexpr int A_PITCH = A_IN + 8, B_PITCH = B_IN + 8;  // elements
  constexpr int A_STAGE = A_OUT * A_PITCH * 2, B_STAGE = B_OUT * B_PITCH * 2;  // bytes
  static_assert(A_IN % 16 == 0 && B_IN % 16 == 0, "contiguous slice extents: multiples of 16 (conflict-free pitch)");
  static_assert(STAGES * (A_STAGE + B_STAGE) <= SMEM_BYTES, "pipeline ring exceeds SMEM_BYTES");
  static_assert(BM * BN * 4 <= SMEM_BYTES, "f32 C block exceeds SMEM_BYTES");

  constexpr int WTM = BM / WM, WTN = BN / WN;  // warp tile
  constexpr int MI = WTM / 16, NI = WTN / 8;   // mma tiles per warp
  constexpr int KS = BK / 16;                  // mma k steps per slice
  constexpr i64 KT = (K + BK - 1) / BK;        // k-slices
  static_assert(KT < (i64(1) << 30), "K too large for an int slice counter");

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wm = warp / WN, wn = warp % WN;

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.f;

  if constexpr (KT > 0) {
    const slice_stream<A_OUT, A_IN, !A_KC, A_STRIDE, K> sa_{reinterpret_cast<const u16*>(A) + a_base, mrows};
    const slice_stream<B_OUT, B_IN, !B_KC, B_STRIDE, K> sb_{reinterpret_cast<const u16*>(B) + b_base, ncols};
    // 16-byte copies need 16-byte-aligned row starts; without VEC_x, take them
    // when the stride allows and the base happens to be aligned (uniform).
    // (Both strides 1 is a degenerate K == 1 / M == 1 / N == 1 operand: element loads.)
    const bool vec_a = A_STRIDE % 8 == 0 && (VEC_A || (reinterpret_cast<u64>(sa_.g) & 15) == 0);
    const bool vec_b = B_STRIDE % 8 == 0 && (VEC_B || (reinterpret_cast<u64>(sb_.g) & 15) == 0);
    const u32 s_base = smem_u32(smem);

    // Copies of k-slice kt into ring stage `stage`: one commit group per
    // slice, empty past the end so that the group count stays uniform.
    auto issue = [&](int kt, int stage) {
      if (kt < KT) {
        unsigned char* st = smem + stage * (A_STAGE + B_STAGE);
        sa_.copy(vec_a, st, i64(kt) * BK);
        sb_.copy(vec_b, st + A_STAGE, i64(kt) * BK);
      }
      cp_async_commit();
    };

    // Per-lane ldmatrix byte offsets within a stage, for k step 0; k step kk
    // adds kk * A_KSTEP. (Lane l addresses a row of matrix l/8; see the mma
    // fragment layouts: A matrices (m0-7,k0-7) (m8-15,k0-7) (m0-7,k8-15)
    // (m8-15,k8-15) -> a0..a3; B matrices (n0-7,k0-7) (n0-7,k8-15)
    // (n8-15,k0-7) (n8-15,k8-15) -> b0,b1 of n tile 2j, b0,b1 of 2j+1.)
    const u32 a_lane = A_KC ? u32((wm * WTM + (lane & 15)) * A_PITCH + (lane >> 4) * 8) * 2u
                            : u32(((lane & 7) + (lane >> 4) * 8) * A_PITCH + wm * WTM + ((lane >> 3) & 1) * 8) * 2u;
    const u32 b_lane = B_KC ? u32((wn * WTN + (lane & 7) + (lane >> 4) * 8) * B_PITCH + ((lane >> 3) & 1) * 8) * 2u
                            : u32(((lane & 7) + ((lane >> 3) & 1) * 8) * B_PITCH + wn * WTN + (lane >> 4) * 8) * 2u;
    // Offsets of mma tile i (16 rows of A) / tile pair j (16 cols of B) and
    // of k step kk: compile-time, so they fold into ldmatrix immediates.
    constexpr u32 A_ISTEP = A_KC ? u32(16 * A_PITCH * 2) : 32u, B_JSTEP = B_KC ? u32(16 * B_PITCH * 2) : 32u;
    constexpr u32 A_KSTEP = A_KC ? 32u : u32(16 * A_PITCH * 2);
    constexpr u32 B_KSTEP = B_KC ? 32u : u32(16 * B_PITCH * 2);

    u32 fa[2][MI][4], fb[2][NI][2];
    auto load_frags = [&](int buf, u32 stage_addr, int kk) {
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        const u32 p = stage_addr + a_lane + u32(i) * A_ISTEP + u32(kk) * A_KSTEP;
        if constexpr (A_KC) ldsm_x4(fa[buf][i], p);
        else ldsm_x4_trans(fa[buf][i], p);
      }
#pragma unroll
      for (int j = 0; j < NI / 2; ++j) {
        const u32 p = stage_addr + u32(A_STAGE) + b_lane + u32(j) * B_JSTEP + u32(kk) * B_KSTEP;
        u32 r[4];
        if constexpr (B_KC) ldsm_x4(r, p);
        else ldsm_x4_trans(r, p);
        fb[buf][2 * j][0] = r[0];
        fb[buf][2 * j][1] = r[1];
        fb[buf][2 * j + 1][0] = r[2];
        fb[buf][2 * j + 1][1] = r[3];
      }
    };

    // Prologue: STAGES-1 slices in flight, wait for slice 0, its first fragments.
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) issue(s, s);
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    load_frags(0, s_base, 0);

    // Main loop. At the top of iteration kt, slice kt is resident and visible
    // in stage `rd` and its k-step-0 fragments are in buffer 0. The copies of
    // slice kt+STAGES-1 go into the stage of slice kt-1 (`wr`): every warp
    // finished reading it before the barrier of iteration kt-1. The barrier
    // at the last k step makes slice kt+1 visible (its group is complete once
    // at most STAGES-2 newer groups are pending), so its first fragments load
    // before this slice's last mma.
    int rd = 0, wr = STAGES - 1;
#pragma unroll 1
    for (int kt = 0; kt < int(KT); ++kt) {
      issue(kt + STAGES - 1, wr);
      const u32 cur = s_base + u32(rd) * u32(A_STAGE + B_STAGE);
      rd = rd == STAGES - 1 ? 0 : rd + 1;
      wr = wr == STAGES - 1 ? 0 : wr + 1;
#pragma unroll
      for (int kk = 0; kk < KS; ++kk) {
        const int buf = kk & 1, nbuf = buf ^ 1;
        if (kk == KS - 1) {
          cp_async_wait<STAGES - 2>();
          __syncthreads();
          // Past the last slice this reads a stale stage; never used.
          load_frags(nbuf, s_base + u32(rd) * u32(A_STAGE + B_STAGE), 0);
        } else {
          load_frags(nbuf, cur, kk + 1);
        }
        // Serpentine over n: consecutive mma share the A fragment and the
        // turn shares a B fragment.
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int jj = 0; jj < NI; ++jj) {
            const int j = (i & 1) ? NI - 1 - jj : jj;
            mma16816<T>(acc[i][j], fa[buf][i], fb[buf][j][0], fb[buf][j][1]);
          }
      }
      // KS odd: the next slice's step-0 fragments went to buffer 1 but step 0
      // reads buffer 0 (register renames, resolved at compile time).
      if constexpr (KS % 2 == 1) {
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int q = 0; q < 4; ++q) fa[0][i][q] = fa[1][i][q];
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          fb[0][j][0] = fb[1][j][0];
          fb[0][j][1] = fb[1][j][1];
        }
      }
    }
    cp_async_wait<0>();  // only empty groups remain; drain before reusing smem
    __syncthreads();     // every warp is done reading the ring
  }

  // Accumulators to smem, row-major f32 [BM][BN]. Thread (group g = lane/4,
  // t = lane%4) holds rows g and g+8 of each 16x8 tile, columns 2t and 2t+1.
  float* cs = reinterpret_cast<float*>(smem);
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int r = wm * WTM + i * 16 + g, c = wn * WTN + j * 8 + 2 * t;
      *reinterpret_cast<float2*>(cs + r * BN + c) = make_float2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<float2*>(cs + (r + 8) * BN + c) = make_float2(acc[i][j][2], acc[i][j][3]);
    }
  __syncthreads();
}

}  // namespace tsr
