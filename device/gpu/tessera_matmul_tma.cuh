// Tessera GPU matmul block for 16-bit inputs fed by the Hopper bulk tensor
// copy engine (TMA) into warpgroup MMA (wgmma), warp-specialized. Appended
// after tessera_matmul_mma.cuh (it reuses that file's wgmma wrappers and
// smem descriptors); the contract is device/gpu/MATMUL_CONTRACT.md ("The TMA
// form"). NVRTC-compilable: no #include, only builtins and inline PTX.
//
// The program is launched with TSR_THREADS + 128 threads: warpgroups 0 and 1
// (TSR_THREADS = 256) are the consumers, each owning 64 rows x BN columns of
// the block in registers; warpgroup 2 is the producer, one thread of which
// issues the TMA copies. Every thread keeps the launch's register count (the
// consumers' 128 accumulators and loop fit in it): moving registers to the
// consumers with setmaxnreg squeezed the producer's loop into 40 and made it
// spill to local memory every k-slice, which starved the wgmma (journal,
// ninth session). The producer returns
// false once its copies are issued and the kernel returns with it; the
// consumers write the f32 block row-major to smem, sync among themselves
// (named barrier 1, TSR_THREADS threads) and return true to run the epilogue.
//
// The ring: STAGES k-slices of A (BM x 64) and B (BN x 64) in the 128-byte
// swizzled layout of tessera_matmul_mma.cuh's wgmma path (the TMA's
// CU_TENSOR_MAP_SWIZZLE_128B writes exactly that), each stage with a "full"
// mbarrier (the producer's expect_tx; the TMA completes the bytes) and an
// "empty" one (every consumer thread arrives once its wgmma on the stage have
// retired). Out-of-bounds boxes are zero-filled by the TMA: partial blocks,
// the k tail and rows past a batch's M never reach the accumulators as
// garbage. Fixed k order: bitwise deterministic.
//
// Tensor maps (encoded by the runtime from the Target IR's tensor_maps, one
// per operand, 128-byte swizzle, dims innermost first; batched operands have
// the batch as a third dim, a shared operand is 2-D):
//   K-major (A row-major, B stored N x K): dims {K, rows}, box {64, BM|BN}: one
//     copy per operand and stage (B in halves: box {64, BN/2}, two copies).
//   MN-major (A stored K x M, B row-major): dims {rows, K}, box {64, 64}: one
//     copy per 64-wide atom column (8 KiB apart in smem).

namespace tsr {

// A CUtensorMap as the driver encodes it: 128 opaque bytes, 64-byte aligned.
// Kernels take it by value as a `const __grid_constant__` parameter so that
// its address is one the TMA can read.
struct alignas(64) tensormap {
  unsigned long long opaque[16];
};

#if defined(TSR_MMA_HAVE_WGMMA)
namespace tma_detail {

using mma_detail::smem_u32;

__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// The producer's arrival, announcing `bytes` the TMA will complete on it.
__device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Waits until the phase of parity `parity` has completed (parity 1 on a fresh
// barrier: at once, which lets the producer fill every stage in round 0).
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
  u32 done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// One box of the tensor map into smem at dst, completing on bar. Coordinates
// are elements, innermost dim first; out-of-bounds elements are zeros.
template <bool THREE_D>
__device__ __forceinline__ void tma_load(u32 dst, const tensormap* map, u32 bar, int c0, int c1, int c2) {
  if constexpr (THREE_D)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(dst),
        "l"(reinterpret_cast<u64>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
        "l"(reinterpret_cast<u64>(map)), "r"(bar), "r"(c0), "r"(c1)
        : "memory");
}

// One stage of an operand: ROWS x 64 k. K-major: one box {64 k, ROWS};
// MN-major: ROWS/64 boxes {64 rows, 64 k}, atom columns 8 KiB apart.
template <int ROWS, bool KC, bool THREE_D>
__device__ __forceinline__ void load_operand(u32 dst, const tensormap* map, u32 bar, int row0, int k0, int batch) {
  if constexpr (KC) {
    tma_load<THREE_D>(dst, map, bar, k0, row0, batch);
  } else {
#pragma unroll
    for (int j = 0; j < ROWS / 64; ++j) tma_load<THREE_D>(dst + u32(j) * 8192u, map, bar, row0 + 64 * j, k0, batch);
  }
}

}  // namespace tma_detail

// The block of C for rows m0.., columns n0.. of batch `batch`: returns false
// on the producer's threads (the caller returns: they take no part in the
// epilogue) and true on the TSR_THREADS consumer threads once the f32 block
// is in smem and they have synced on it. A_KC: A is K-major (row-major M x K);
// B_KC: B is K-major (stored N x K). A_3D / B_3D: the map has a batch dim.
// B_HALF > 0: the block's columns are two halves, BN/2 of B's columns from n0
// and BN/2 from n0 + B_HALF (an epilogue pairing C's column halves, such as
// SwiGLU's silu(gate) * up, finds both in one block). The block's B rows of
// either half are whole boxes in both layouts (K-major: BN/2 rows of 128
// bytes; MN-major: BN/128 atom columns of 8 KiB), so the halves sit where
// one box of BN rows would and the wgmma reads them unchanged.
template <class T, int BM, int BN, int BK, int STAGES, i64 K, bool A_KC, bool B_KC, bool A_3D, bool B_3D,
          int SMEM_BYTES, i64 B_HALF = 0>
__device__ __forceinline__ bool matmul_block_tma(unsigned char* smem, const tensormap* ta, const tensormap* tb,
                                                 i64 batch, i64 m0, i64 n0) {
  using namespace mma_detail;
  using namespace tma_detail;
  static_assert(sizeof(T) == 2, "the TMA block is for f16_t / bf16_t");
  static_assert(TSR_THREADS == 256 && BM == 128 && (BN == 256 || BN == 128) && BK == 64 && STAGES >= 2,
                "TMA block shape: two consumer warpgroups of 64 x BN, k-slices of 64 (one 128-byte swizzle row)");
  static_assert(B_HALF >= 0, "B_HALF: the second half's first column");
  constexpr int A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2, STAGE = A_STAGE + B_STAGE;  // multiples of 1 KiB
  constexpr int BARS = STAGES * STAGE;  // the 2*STAGES mbarriers follow the ring
  static_assert(1024 + BARS + 16 * STAGES <= SMEM_BYTES, "ring + barriers (+1 KiB alignment slack) exceed SMEM_BYTES");
  constexpr int CS = BN + 8;  // C rows in smem, padded: 4 rows' float2 stores on 32 distinct banks
  static_assert(BM * CS * 4 <= SMEM_BYTES, "f32 C block exceeds SMEM_BYTES");
  constexpr i64 KT = (K + BK - 1) / BK;
  static_assert(KT < (i64(1) << 30), "K too large for an int slice counter");

  // Swizzle atoms (and so every stage) must sit on 1 KiB boundaries.
  const u32 raw = smem_u32(smem), base = (raw + 1023u) & ~1023u;
  const u32 full = base + BARS, empty = full + 8u * STAGES;
  const int tid = threadIdx.x;
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full + 8u * s, 1);              // the producer's expect_tx
      mbar_init(empty + 8u * s, TSR_THREADS);  // every consumer thread
    }
    // The inits become visible to the TMA (async proxy) and the other threads.
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (tid >= TSR_THREADS) {  // producer warpgroup
    if (tid == TSR_THREADS) {
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<u64>(ta)) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<u64>(tb)) : "memory");
#pragma unroll 1
      for (int kt = 0; kt < int(KT); ++kt) {
        const int s = kt % STAGES;
        mbar_wait(empty + 8u * s, ((kt / STAGES) & 1) ^ 1);  // the consumers are done with its last round
        const u32 st = base + u32(s) * STAGE, bar = full + 8u * s;
        mbar_expect_tx(bar, STAGE);  // whole boxes, zero-filled ones included
        load_operand<BM, A_KC, A_3D>(st, ta, bar, int(m0), kt * BK, int(batch));
        if constexpr (B_HALF == 0) {
          load_operand<BN, B_KC, B_3D>(st + A_STAGE, tb, bar, int(n0), kt * BK, int(batch));
        } else {
          load_operand<BN / 2, B_KC, B_3D>(st + A_STAGE, tb, bar, int(n0), kt * BK, int(batch));
          load_operand<BN / 2, B_KC, B_3D>(st + A_STAGE + BN / 2 * 128, tb, bar, int(n0 + B_HALF), kt * BK,
                                           int(batch));
        }
      }
    }
    return false;
  }

  const int lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
  constexpr int NR = BN / 2;  // accumulators per thread
  float acc[NR];
#pragma unroll
  for (int i = 0; i < NR; ++i) acc[i] = 0.f;
  // Descriptors as in block_wgmma (tessera_matmul_mma.cuh): K-major 8-row
  // groups 1 KiB apart, a k step of 16 is 32 B along the swizzled row;
  // MN-major 8-k groups 1 KiB apart, atom columns 8 KiB apart, a k step 2 KiB.
  constexpr u32 MN_ATOM = BK / 8 * 1024;
  constexpr u32 A_LBO = A_KC ? 16u : MN_ATOM, B_LBO = B_KC ? 16u : MN_ATOM;
  constexpr u32 A_KSTEP = A_KC ? 32u : 2048u, B_KSTEP = B_KC ? 32u : 2048u;
  const u32 a_wg = u32(wg) * (A_KC ? 64u * 128u : MN_ATOM);
#pragma unroll 1
  for (int kt = 0; kt < int(KT); ++kt) {
    const int s = kt % STAGES;
    mbar_wait(full + 8u * s, (kt / STAGES) & 1);
    const u32 st = base + u32(s) * STAGE;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      const u64 da = smem_desc(st + a_wg + kk * A_KSTEP, A_LBO, 1024u);
      const u64 db = smem_desc(st + A_STAGE + kk * B_KSTEP, B_LBO, 1024u);
      wgmma_64xNx16<T, BN, A_KC ? 0 : 1, B_KC ? 0 : 1>(acc, da, db);
    }
    wgmma_commit();
    wgmma_wait<1>(acc);  // slice kt-1's wgmma retired: hand its stage back
    if (kt > 0) mbar_arrive(empty + 8u * ((kt - 1) % STAGES));
  }
  wgmma_wait<0>(acc);
  // Both warpgroups are done reading the ring before the C block overwrites it
  // (the producer's copies all completed: every stage was waited for).
  asm volatile("bar.sync 1, %0;\n" ::"n"(TSR_THREADS) : "memory");
  float* cs = reinterpret_cast<float*>(smem);
  const int r = wg * 64 + (warp & 3) * 16 + (lane >> 2), c0 = 2 * (lane & 3);
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    *reinterpret_cast<float2*>(cs + r * CS + 8 * j + c0) = make_float2(acc[4 * j], acc[4 * j + 1]);
    *reinterpret_cast<float2*>(cs + (r + 8) * CS + 8 * j + c0) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
  }
  asm volatile("bar.sync 1, %0;\n" ::"n"(TSR_THREADS) : "memory");
  return true;
}
#else
// Without sm_90a there is no wgmma: the arbiter offers the
// TMA candidate only on an sm_90 device (the runtime compiles for sm_90a
// there); a forced one elsewhere fails to compile here rather than run on
// another path.
template <class T, int BM, int BN, int BK, int STAGES, i64 K, bool A_KC, bool B_KC, bool A_3D, bool B_3D,
          int SMEM_BYTES, i64 B_HALF = 0>
__device__ bool matmul_block_tma(unsigned char*, const tensormap*, const tensormap*, i64, i64, i64) {
  static_assert(sizeof(T) == 0, "the TMA matmul block needs sm_90a (wgmma)");
  return false;
}
#endif

}  // namespace tsr
