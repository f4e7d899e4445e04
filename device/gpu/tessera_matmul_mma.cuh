// Tessera GPU matmul block for 16-bit inputs (tsr::f16_t, tsr::bf16_t) on
// tensor cores, f32 accumulation. Appended after tessera_tile.cuh; the
// contract is device/gpu/MATMUL_CONTRACT.md. NVRTC-compilable: no #include,
// only builtins and inline PTX.
//
// Two paths behind the one matmul_block, picked at compile time by the
// configuration (matmul_mma_uses_wgmma below):
//
// 1. wgmma (sm_90a; WN == 4, BM == 64*WM, BN == 256 or 128, BK == 64,
//    STAGES >= 3): warpgroup MMA m64nBNk16 with both operands read by the
//    tensor cores from smem through matrix descriptors, 128-byte-swizzled
//    slices, accumulators in registers. One warpgroup (4 warps) per 64 rows.
//    The transposed layouts are the descriptors' MN-major mode, so all four
//    layouts run at the same speed class. Copies are cp.async from all
//    threads (no TMA: the contract hands us raw pointers, not tensor maps).
// 2. mma.sync (any sm_80+; every other configuration): cp.async into a
//    padded smem ring, ldmatrix (.trans for M/N-contiguous slices),
//    mma.sync.m16n8k16, per-warp accumulators.
//
// Both: global --cp.async 16 B, tails zero-filled--> smem ring of STAGES
// k-slices --> tensor cores --> f32 accumulators --> smem f32 [BM][BN]
// row-major for the epilogue, then __syncthreads. Fixed k order: bitwise
// deterministic. Without VEC_A / VEC_B the 16-byte copies are still taken
// when the stride is a multiple of 8 and the base happens to be 16-byte
// aligned (a uniform run-time test); otherwise 2-byte element loads.
//
// Recommended configurations, measured on an H200 (bf16, NN layout, in one
// run against cuBLAS cublasGemmEx bf16 -> bf16 with f32 compute; the kernel
// carried __launch_bounds__(TSR_THREADS, 1), or (256, 2) for "small"):
//   large, wgmma  (grid >= ~100 blocks of 128x256, e.g. M = N >= 2048):
//     BM=128 BN=256 BK=64 WM=2 WN=4 STAGES=4, TSR_THREADS=256,
//     SMEM_BYTES=221184; 190-200 registers, no spills.
//     8192^3: 572 TFLOP/s (cuBLAS 783), 4096^3: 504 (730), 2048^3: 372 (469).
//   small, mma.sync (fewer blocks than that, e.g. 1024^3):
//     BM=64 BN=128 BK=32 WM=2 WN=4 STAGES=4, TSR_THREADS=256,
//     SMEM_BYTES=61440; 96-102 registers. 1024^3: 107 TFLOP/s (cuBLAS 109).
//   large without sm_90a (mma.sync): BM=128 BN=256 BK=32 WM=2 WN=4
//     STAGES=4, TSR_THREADS=256, SMEM_BYTES=131072; 222-232 registers.
//     8192^3: 395 TFLOP/s.
// The grid should walk 8 block-rows together over the block-columns
// (grouped raster): 7-12% faster than row-major block order at 8192^3
// (mma.sync large; 16 block-rows was no better than row-major).
// matmul_mma_smem_bytes() below gives SMEM_BYTES for any configuration.

namespace tsr {

// SMEM_BYTES the schedule should give a configuration (the contract's formula).
__host__ __device__ constexpr int matmul_mma_smem_bytes(int BM, int BN, int BK, int STAGES) {
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
//
// SW: the wgmma layout instead of padded rows: 128-byte rows, 8-row atoms of
// 1024 B whose 16-byte chunks are XOR-permuted by the row within the atom
// (the "128B swizzle" the tensor cores read through descriptors). K-major
// slices (rows m / n, INNER = 64 k) are rows of one atom column; MN-major
// slices (rows k) are atoms of 64 m / n x 8 k, the 8-k groups of one atom
// column contiguous (1024 B apart), atom columns OUTER/8 KiB apart.
template <int OUTER, int INNER, bool K_OUTER, i64 STRIDE, i64 K, bool SW = false>
struct slice_stream {
  static constexpr int PITCH = INNER + 8;
  static_assert(!SW || (K_OUTER ? INNER % 64 == 0 && OUTER % 8 == 0 : INNER == 64), "swizzled slice shape");
  // Byte offset of element (o, c) of the slice in smem; c % 8 == 0 for chunks.
  static __device__ __forceinline__ int off(int o, int c) {
    if constexpr (!SW) {
      return (o * PITCH + c) * 2;
    } else if constexpr (!K_OUTER) {
      return o * 128 + ((((c >> 3) ^ o) & 7) << 4) + (c & 7) * 2;
    } else {
      return (c >> 6) * (OUTER / 8) * 1024 + o * 128 + (((((c >> 3) & 7) ^ o) & 7) << 4) + (c & 7) * 2;
    }
  }
  // off(o + 8j, c) - off(o, c) = 8j * ROWB (what the chunk loop steps by).
  static constexpr int ROWB = SW ? 128 : PITCH * 2;
  // 16-byte chunks: when every thread gets whole rows of the same column, a
  // thread's chunks are one pointer plus compile-time offsets.
  static constexpr int CH = INNER / 8;
  static constexpr bool VFAST =
      TSR_THREADS % CH == 0 && (OUTER * CH) % TSR_THREADS == 0 && (!SW || (TSR_THREADS / CH) % 8 == 0);
  static constexpr int VSTEP = VFAST ? TSR_THREADS / CH : 1, VIT = VFAST ? OUTER / VSTEP : 1;
  // Swizzled MN-major slices: rows of consecutive chunks would put a warp's
  // 16-byte writes into NA atom columns 8 KiB apart (same banks); instead a
  // warp writes 4 rows x 128 B of one atom column (512 contiguous bytes) and
  // still reads whole 128-byte global segments.
  static constexpr int NA = INNER / 64 > 0 ? INNER / 64 : 1, NW = TSR_THREADS / 32;
  static constexpr int ASTEP = NW % NA == 0 ? NW / NA * 4 : 1;
  static constexpr bool VATOM = SW && K_OUTER && NW % NA == 0 && ASTEP % 8 == 0 && OUTER % ASTEP == 0;
  static constexpr int AIT = VATOM ? OUTER / ASTEP : 1;
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
      if constexpr (VATOM || VFAST) {
        int c, o0;
        if constexpr (VATOM) {  // warp = 4 rows x 128 B of one atom column
          const int w = tid >> 5;
          c = (w % NA) * 64 + (tid & 7) * 8;
          o0 = (w / NA) * 4 + ((tid >> 3) & 3);
        } else {  // warp = consecutive chunks of consecutive rows
          c = (tid % CH) * 8;
          o0 = tid / CH;
        }
        constexpr int STEP = VATOM ? ASTEP : VSTEP, IT = VATOM ? AIT : VIT;
        const u16* src = gs + o0 * STRIDE + c;
        const u32 dst = s0 + u32(off(o0, c));
        const i64 rem = inner_lim - c;
        const int ib = rem >= 8 ? 16 : rem > 0 ? int(rem) * 2 : 0;
#pragma unroll
        for (int i = 0; i < IT; ++i) {
          const int bytes = o0 + i * STEP < outer_lim ? ib : 0;
          cp_async16(dst + u32(i * STEP * ROWB), bytes ? src + i64(i) * STEP * STRIDE : g, bytes);
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
          cp_async16(s0 + u32(off(o, c)), bytes ? gs + o * STRIDE + c : g, bytes);
        }
      }
    } else {
      u16* s = reinterpret_cast<u16*>(sm);
      if constexpr (EFAST) {
        const int c = tid % INNER, o0 = tid / INNER;
        const u16* src = gs + o0 * STRIDE + c;
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
          for (int j = 0; j < EBATCH; ++j) s[off(o0 + (b + j) * ESTEP, c) >> 1] = v[j];
        }
      } else {
        constexpr int N = OUTER * INNER, IT = (N + TSR_THREADS - 1) / TSR_THREADS;
#pragma unroll
        for (int i = 0; i < IT; ++i) {
          const int e = tid + i * TSR_THREADS;
          if (N % TSR_THREADS != 0 && e >= N) break;
          const int o = e / INNER, c = e % INNER;
          s[off(o, c) >> 1] = o < outer_lim && c < inner_lim ? gs[o * STRIDE + c] : u16(0);
        }
      }
    }
  }
};

}  // namespace mma_detail

namespace mma_detail {

// ---- mma.sync path ---------------------------------------------------------------------
// Each operand slice is stored in smem in the layout it has in global memory
// (its contiguous dim stays contiguous), so every global load is a 16-byte
// vector along that dim and the transposes of the four layouts all happen in
// ldmatrix: A with K contiguous and B with K contiguous (B stored N x K) use
// the plain form, M- or N-contiguous slices use .trans. Rows of a slice are
// padded by 8 elements (16 B): a row pitch of an odd number of 16-byte units
// puts the 8 row addresses of one 8x8 ldmatrix matrix in 8 distinct bank
// groups, so ldmatrix is conflict-free (inner extents are multiples of 16).
//
// Warps: WM x WN warps, each owning a (BM/WM) x (BN/WN) sub-tile as MI x NI
// mma tiles of 16 x 8 (64 x 64 per warp is the least ldmatrix traffic per
// mma that fits the registers). Per 16-wide k step a warp does MI + NI/2
// ldmatrix.x4 and MI*NI mma; the fragments of the next k step are loaded
// before the mma of this one (register double buffer), and the next k-slice
// is waited for one k step early so that its first fragments load before the
// current slice's last mma.
template <class T, int BM, int BN, int BK, int WM, int WN, int STAGES, i64 K, i64 SAM, i64 SAK, i64 SBK, i64 SBN,
          bool VEC_A, bool VEC_B, int SMEM_BYTES>
__device__ __forceinline__ void block_mma_sync(unsigned char* smem, const T* __restrict__ A, i64 a_base,
                                               const T* __restrict__ B, i64 b_base, i64 mrows, i64 ncols) {
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

// ---- wgmma path (sm_90a) ------------------------------------------------------------------
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TSR_MMA_HAVE_WGMMA 1
// D[64 x N] += A[64 x 16] * B[16 x N] (N = 256 or 128), both operands in smem through
// descriptors, f32 accumulators in registers (the m16n8 fragment layout
// repeated: d[4j..4j+3] are rows r, r+8 of columns 8j + 2t, +1 for warp w of
// the warpgroup, r = 16w + lane/4, t = lane%4). TA / TB: 1 when the operand
// is MN-major in smem (the transposed layouts), 0 when K-major. The n128
// forms take scale_d: 0 overwrites d with A*B instead of accumulating (the
// attention block's fresh score tiles).
template <int TA, int TB> __device__ __forceinline__ void wgmma_n256_bf16(float (&d)[128], u64 da, u64 db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, %131, %132;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB));
}
template <int TA, int TB> __device__ __forceinline__ void wgmma_n256_f16(float (&d)[128], u64 da, u64 db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, %131, %132;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB));
}
template <int TA, int TB> __device__ __forceinline__ void wgmma_n128_bf16(float (&d)[64], u64 da, u64 db, int scale_d = 1) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, %67, %68;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(scale_d), "n"(TA), "n"(TB));
}
template <int TA, int TB> __device__ __forceinline__ void wgmma_n128_f16(float (&d)[64], u64 da, u64 db, int scale_d = 1) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, %67, %68;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(scale_d), "n"(TA), "n"(TB));
}
template <class X> struct is_bf16 { static constexpr bool value = false; };
template <> struct is_bf16<bf16_t> { static constexpr bool value = true; };
template <class T, int N, int TA, int TB> __device__ __forceinline__ void wgmma_64xNx16(float (&d)[N / 2], u64 da, u64 db) {
  if constexpr (N == 256 && is_bf16<T>::value) wgmma_n256_bf16<TA, TB>(d, da, db);
  else if constexpr (N == 256) wgmma_n256_f16<TA, TB>(d, da, db);
  else if constexpr (is_bf16<T>::value) wgmma_n128_bf16<TA, TB>(d, da, db);
  else wgmma_n128_f16<TA, TB>(d, da, db);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N, int R> __device__ __forceinline__ void wgmma_wait(float (&d)[R]) {
  // The accumulators are operands so that no access to them moves above the wait.
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Ordinary (generic-proxy) smem writes, cp.async included, become visible to
// the tensor cores' async-proxy reads only after this fence (then a barrier).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Shared-memory matrix descriptor, 128-byte swizzle: start address, leading
// and stride byte offsets (all >> 4), swizzle mode 1 in bits 62-63.
__device__ __forceinline__ u64 smem_desc(u32 addr, u32 lbo, u32 sbo) {
  return u64((addr & 0x3FFFF) >> 4) | (u64(lbo >> 4) << 16) | (u64(sbo >> 4) << 32) | (u64(1) << 62);
}

// One warpgroup per 64 rows of the block (WM of them), all BN (256 or 128) columns;
// WN = 4 warps per warpgroup. BK = 64: a K-major slice row is one 128-byte
// swizzle row. Ring of STAGES slices filled by cp.async from all threads
// (no warp specialization), copies STAGES-2 slices ahead of the tensor cores,
// one slice of wgmma in flight while the next is issued.
template <class T, int BM, int BN, int BK, int WM, int WN, int STAGES, i64 K, i64 SAM, i64 SAK, i64 SBK, i64 SBN,
          bool VEC_A, bool VEC_B, int SMEM_BYTES>
__device__ __forceinline__ void block_wgmma(unsigned char* smem, const T* __restrict__ A, i64 a_base,
                                            const T* __restrict__ B, i64 b_base, i64 mrows, i64 ncols) {
  static_assert(WN == 4 && BM == 64 * WM && (BN == 256 || BN == 128) && BK == 64 && STAGES >= 3, "wgmma block shape");
  constexpr bool A_KC = SAK == 1;
  constexpr bool B_KC = SBK == 1 && (SBN != 1 || K != 1);
  constexpr i64 A_STRIDE = A_KC ? SAM : SAK, B_STRIDE = B_KC ? SBN : SBK;
  constexpr int A_OUT = A_KC ? BM : BK, A_IN = A_KC ? BK : BM;
  constexpr int B_OUT = B_KC ? BN : BK, B_IN = B_KC ? BK : BN;
  constexpr int A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2, STAGE = A_STAGE + B_STAGE;  // multiples of 1 KiB
  static_assert(STAGES * STAGE + 1024 <= SMEM_BYTES, "pipeline ring (+1 KiB alignment slack) exceeds SMEM_BYTES");
  static_assert(BM * BN * 4 <= SMEM_BYTES, "f32 C block exceeds SMEM_BYTES");
  constexpr i64 KT = (K + BK - 1) / BK;
  static_assert(KT < (i64(1) << 30), "K too large for an int slice counter");

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wg = warp >> 2;
  constexpr int NR = BN / 2;  // accumulators per thread
  float acc[NR];
#pragma unroll
  for (int i = 0; i < NR; ++i) acc[i] = 0.f;

  if constexpr (KT > 0) {
    // Swizzle atoms must sit on 1 KiB boundaries of the shared window.
    const u32 raw = smem_u32(smem), s_base = (raw + 1023u) & ~1023u;
    unsigned char* ring = smem + (s_base - raw);
    const slice_stream<A_OUT, A_IN, !A_KC, A_STRIDE, K, true> sa_{reinterpret_cast<const u16*>(A) + a_base, mrows};
    const slice_stream<B_OUT, B_IN, !B_KC, B_STRIDE, K, true> sb_{reinterpret_cast<const u16*>(B) + b_base, ncols};
    const bool vec_a = A_STRIDE % 8 == 0 && (VEC_A || (reinterpret_cast<u64>(sa_.g) & 15) == 0);
    const bool vec_b = B_STRIDE % 8 == 0 && (VEC_B || (reinterpret_cast<u64>(sb_.g) & 15) == 0);
    auto issue = [&](int kt) {
      if (kt < KT) {
        unsigned char* st = ring + (kt % STAGES) * STAGE;
        sa_.copy(vec_a, st, i64(kt) * BK);
        sb_.copy(vec_b, st + A_STAGE, i64(kt) * BK);
      }
      cp_async_commit();
    };
    // Descriptors. K-major: 8-row groups 1 KiB apart (SBO), LBO unused; a k
    // step of 16 moves the start 32 B along the swizzled row. MN-major: 8-k
    // groups 1 KiB apart (SBO), 64-wide MN atom columns (BK/8) KiB apart (LBO);
    // a k step is two 8-k groups (2 KiB). This warpgroup's A starts 64 rows in:
    // 8 KiB for K-major, one atom column for MN-major.
    constexpr u32 MN_ATOM = BK / 8 * 1024;
    constexpr u32 A_LBO = A_KC ? 16u : MN_ATOM, B_LBO = B_KC ? 16u : MN_ATOM;
    constexpr u32 A_KSTEP = A_KC ? 32u : 2048u, B_KSTEP = B_KC ? 32u : 2048u;
    const u32 a_wg = u32(wg) * (A_KC ? 64u * 128u : u32(BK / 8 * 1024));

#pragma unroll
    for (int s = 0; s < STAGES - 2; ++s) issue(s);
#pragma unroll 1
    for (int kt = 0; kt < int(KT); ++kt) {
      cp_async_wait<STAGES - 3>();  // this thread's copies of slice kt landed
      fence_proxy_async();          // ... and are visible to the tensor cores
      __syncthreads();              // everyone's; all warpgroups done with slice kt-2
      const u32 st = s_base + u32(kt % STAGES) * u32(STAGE);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        const u64 da = smem_desc(st + a_wg + kk * A_KSTEP, A_LBO, 1024u);
        const u64 db = smem_desc(st + A_STAGE + kk * B_KSTEP, B_LBO, 1024u);
        wgmma_64xNx16<T, BN, A_KC ? 0 : 1, B_KC ? 0 : 1>(acc, da, db);
      }
      wgmma_commit();
      // The copies go out while the tensor cores work on slice kt.
      issue(kt + STAGES - 2);  // into slice kt-2's stage
      wgmma_wait<1>(acc);      // slice kt-1's wgmma are done: its stage may be refilled after the next barrier
    }
    wgmma_wait<0>(acc);
    cp_async_wait<0>();
    __syncthreads();
  }

  float* cs = reinterpret_cast<float*>(smem);
  const int r = wg * 64 + (warp & 3) * 16 + (lane >> 2), c0 = 2 * (lane & 3);
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    *reinterpret_cast<float2*>(cs + r * BN + 8 * j + c0) = make_float2(acc[4 * j], acc[4 * j + 1]);
    *reinterpret_cast<float2*>(cs + (r + 8) * BN + 8 * j + c0) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
  }
  __syncthreads();
}
#endif

}  // namespace mma_detail

// Configurations with WN == 4, BM == 64 * WM, BN == 256 or 128, BK == 64, STAGES >= 3
// run on warpgroup MMA (wgmma) when compiled for sm_90a; all others, and all
// without sm_90a, on mma.sync.
// (Device-side answer: nvcc's host pass does not define the sm_90a feature macro.)
template <int BM, int BN, int BK, int WM, int WN, int STAGES>
struct matmul_mma_uses_wgmma {
#if defined(TSR_MMA_HAVE_WGMMA)
  static constexpr bool value = WN == 4 && BM == 64 * WM && (BN == 256 || BN == 128) && BK == 64 && STAGES >= 3;
#else
  static constexpr bool value = false;
#endif
};

template <class T, int BM, int BN, int BK, int WM, int WN, int STAGES, i64 K, i64 SAM, i64 SAK, i64 SBK, i64 SBN,
          bool VEC_A, bool VEC_B, int SMEM_BYTES>
__device__ void matmul_block(unsigned char* smem, const T* __restrict__ A, i64 a_base, const T* __restrict__ B,
                             i64 b_base, i64 mrows, i64 ncols) {
  static_assert(sizeof(T) == 2, "tessera_matmul_mma.cuh is the 16-bit (f16_t / bf16_t) matmul block");
  static_assert(TSR_THREADS == WM * WN * 32, "TSR_THREADS must be WM*WN*32");
  static_assert(K >= 0, "K >= 0");
  static_assert(SAM == 1 || SAK == 1, "one of A's strides must be 1");
  static_assert(SBK == 1 || SBN == 1, "one of B's strides must be 1");
#if defined(TSR_MMA_HAVE_WGMMA)
  if constexpr (matmul_mma_uses_wgmma<BM, BN, BK, WM, WN, STAGES>::value)
    mma_detail::block_wgmma<T, BM, BN, BK, WM, WN, STAGES, K, SAM, SAK, SBK, SBN, VEC_A, VEC_B, SMEM_BYTES>(
        smem, A, a_base, B, b_base, mrows, ncols);
  else
#endif
    mma_detail::block_mma_sync<T, BM, BN, BK, WM, WN, STAGES, K, SAM, SAK, SBK, SBN, VEC_A, VEC_B, SMEM_BYTES>(
        smem, A, a_base, B, b_base, mrows, ncols);
}

}  // namespace tsr
