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
// NORM (an RMSNorm prologue, tile.matmul norm_eps; A K-major): the block is
// rms_norm(A, w) x B. The producer warpgroup's 128 threads own A's 128 rows:
// once a slice lands, thread r scales its row's 64 values by w[k] in place
// (rounded to T, as the row kernel's output is) and adds their squares
// to its row's sum, k ascending; it fences for the async proxy (the wgmma
// reads the stage through it) and arrives on the stage's "ready" mbarrier,
// which the consumers wait on instead of "full". At the end the scales
// rsqrt(sum / K + eps) go to smem after the barriers, and the consumers
// multiply C's rows as they stage them. The copy-issuing thread is one of
// the 128: while it waits for a slice to land it issues every slice whose
// stage has come free (testing, not waiting), so the copies stay STAGES - 2
// slices ahead of the transform and no wait can close a cycle.
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
// Whether that phase has completed, without waiting.
__device__ __forceinline__ bool mbar_test(u32 bar, u32 parity) {
  u32 done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
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

// NORM: 16 bytes of w from k on (zeros past K; w need not be 16-byte aligned).
template <class T, i64 K>
__device__ __forceinline__ uint4 norm_weights(const T* w, i64 k) {
  if (k + 8 <= K && (reinterpret_cast<u64>(w + k) & 15u) == 0) return *reinterpret_cast<const uint4*>(w + k);
  u16 h[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) h[e] = k + e < K ? w[k + e].bits : u16(0);
  return make_uint4(h[0] | u32(h[1]) << 16, h[2] | u32(h[3]) << 16, h[4] | u32(h[5]) << 16, h[6] | u32(h[7]) << 16);
}

// NORM: two 16-bit values times two weights, one rounding each (the
// product of two 16-bit floats is exact in f32, so this is the f32 product
// rounded to T).
__device__ __forceinline__ u32 mul2(bf16_t, u32 x, u32 w) {
  u32 y;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(y) : "r"(x), "r"(w));
  return y;
}
__device__ __forceinline__ u32 mul2(f16_t, u32 x, u32 w) {
  u32 y;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(y) : "r"(x), "r"(w));
  return y;
}
// The two values' squares added to `squares`, low then high (exact widening).
__device__ __forceinline__ void add_squares2(bf16_t, u32 x, float& squares) {
  const float lo = __uint_as_float(x << 16), hi = __uint_as_float(x & 0xffff0000u);
  squares = __fmaf_rn(hi, hi, __fmaf_rn(lo, lo, squares));
}
__device__ __forceinline__ void add_squares2(f16_t, u32 x, float& squares) {
  float lo, hi;
  asm("cvt.f32.f16 %0, %1;" : "=f"(lo) : "h"(u16(x & 0xffffu)));
  asm("cvt.f32.f16 %0, %1;" : "=f"(hi) : "h"(u16(x >> 16)));
  squares = __fmaf_rn(hi, hi, __fmaf_rn(lo, lo, squares));
}

// NORM: row `row` of a K-major A stage (128 bytes; 16-byte chunk c at
// c ^ (row % 8) under the 128-byte swizzle) times the slice's weights, in
// place; the squares of its values added to `squares`, k ascending. All
// eight chunks are loaded before any is used: the producer warpgroup has one
// warp a scheduler, so its latency is hidden by its own independent work.
template <class T>
__device__ __forceinline__ void norm_row(u32 row_addr, int row, const uint4 (&w)[8], float& squares) {
  uint4 v[8];
#pragma unroll
  for (int c = 0; c < 8; ++c)
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v[c].x), "=r"(v[c].y), "=r"(v[c].z), "=r"(v[c].w)
                 : "r"(row_addr + u32((c ^ (row & 7)) * 16))
                 : "memory");
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    add_squares2(T{}, v[c].x, squares), add_squares2(T{}, v[c].y, squares);
    add_squares2(T{}, v[c].z, squares), add_squares2(T{}, v[c].w, squares);
    v[c] = make_uint4(mul2(T{}, v[c].x, w[c].x), mul2(T{}, v[c].y, w[c].y), mul2(T{}, v[c].z, w[c].z),
                      mul2(T{}, v[c].w, w[c].w));
  }
#pragma unroll
  for (int c = 0; c < 8; ++c)
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(row_addr + u32((c ^ (row & 7)) * 16)),
                 "r"(v[c].x), "r"(v[c].y), "r"(v[c].z), "r"(v[c].w)
                 : "memory");
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
          int SMEM_BYTES, i64 B_HALF = 0, bool NORM = false>
__device__ __forceinline__ bool matmul_block_tma(unsigned char* smem, const tensormap* ta, const tensormap* tb,
                                                 i64 batch, i64 m0, i64 n0, const T* norm_w = nullptr,
                                                 float norm_eps = 0.0f) {
  using namespace mma_detail;
  using namespace tma_detail;
  static_assert(sizeof(T) == 2, "the TMA block is for f16_t / bf16_t");
  static_assert(TSR_THREADS == 256 && BM == 128 && (BN == 256 || BN == 128) && BK == 64 && STAGES >= 2,
                "TMA block shape: two consumer warpgroups of 64 x BN, k-slices of 64 (one 128-byte swizzle row)");
  static_assert(B_HALF >= 0, "B_HALF: the second half's first column");
  static_assert(!NORM || A_KC, "an RMSNorm prologue scales A's rows: A K-major");
  constexpr int A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2, STAGE = A_STAGE + B_STAGE;  // multiples of 1 KiB
  constexpr int BARS = STAGES * STAGE;  // the mbarriers (2 or, with NORM, 3 a stage) follow the ring
  constexpr int NORM_BYTES = NORM ? 8 * STAGES + 4 * BM : 0;  // "ready" mbarriers, then the row scales
  static_assert(1024 + BARS + 16 * STAGES + NORM_BYTES <= SMEM_BYTES,
                "ring + barriers (+1 KiB alignment slack) exceed SMEM_BYTES");
  constexpr int CS = BN + 8;  // C rows in smem, padded: 4 rows' float2 stores on 32 distinct banks
  static_assert(BM * CS * 4 <= SMEM_BYTES, "f32 C block exceeds SMEM_BYTES");
  constexpr i64 KT = (K + BK - 1) / BK;
  static_assert(KT < (i64(1) << 30), "K too large for an int slice counter");

  // Swizzle atoms (and so every stage) must sit on 1 KiB boundaries.
  const u32 raw = smem_u32(smem), base = (raw + 1023u) & ~1023u;
  const u32 full = base + BARS, empty = full + 8u * STAGES, ready = empty + 8u * STAGES;
  [[maybe_unused]] float* const row_scales = reinterpret_cast<float*>(smem + (ready + 8u * STAGES - raw));
  const int tid = threadIdx.x;
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full + 8u * s, 1);              // the producer's expect_tx
      mbar_init(empty + 8u * s, TSR_THREADS);  // every consumer thread
      if constexpr (NORM) mbar_init(ready + 8u * s, 128);  // every producer thread
    }
    // The inits become visible to the TMA (async proxy) and the other threads.
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (tid >= TSR_THREADS) {  // producer warpgroup
    const int pt = tid - TSR_THREADS;
    // Slice kt's copies into its stage, once the consumers are done with the
    // stage's last round.
    auto issue = [&](int kt) {
      const int s = kt % STAGES;
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
    };
    auto stage_free = [&](int kt) { return empty + 8u * (kt % STAGES); };
    auto free_parity = [&](int kt) { return u32((kt / STAGES) & 1) ^ 1u; };
    if (pt == 0) {
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<u64>(ta)) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<u64>(tb)) : "memory");
    }
    if constexpr (!NORM) {
      if (pt == 0) {
#pragma unroll 1
        for (int kt = 0; kt < int(KT); ++kt) {
          mbar_wait(stage_free(kt), free_parity(kt));
          issue(kt);
        }
      }
      return false;
    } else {
      float squares = 0.0f;
      int issued = 0;  // thread 0's next slice to copy
#pragma unroll 1
      for (int kt = 0; kt < int(KT); ++kt) {
        uint4 w[8];  // the slice's 64 weights, loaded while its copy lands
#pragma unroll
        for (int c = 0; c < 8; ++c) w[c] = norm_weights<T, K>(norm_w, i64(kt) * BK + 8 * c);
        const int s = kt % STAGES;
        const u32 landed = full + 8u * s, parity = (kt / STAGES) & 1;
        if (pt == 0) {
          // While slice kt lands, thread 0 copies every slice whose stage has
          // come free (slice kt's own did once the consumers retired slice
          // kt - STAGES, which needed slices up to kt - 1 ready): waiting on
          // one stage at a time left a single slice in flight.
          for (;;) {
            while (issued < int(KT) && issued < kt + STAGES && mbar_test(stage_free(issued), free_parity(issued)))
              issue(issued++);
            if (issued > kt && mbar_test(landed, parity)) break;
          }
        } else {
          mbar_wait(landed, parity);
        }
        norm_row<T>(base + u32(s) * STAGE + u32(pt) * 128u, pt, w, squares);
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        mbar_arrive(ready + 8u * s);
      }
      row_scales[pt] = 1.0f / sqrtf(squares / float(K) + norm_eps);
      __syncwarp();
      asm volatile("bar.arrive 2, %0;\n" ::"n"(TSR_THREADS + 128) : "memory");  // the consumers read the scales
      return false;
    }
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
    mbar_wait((NORM ? ready : full) + 8u * s, (kt / STAGES) & 1);
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
  const int r = wg * 64 + (warp & 3) * 16 + (lane >> 2), c0 = 2 * (lane & 3);
  float scale_r = 1.0f, scale_r8 = 1.0f;  // NORM: this thread's two rows' scales
  if constexpr (NORM) {
    asm volatile("bar.sync 2, %0;\n" ::"n"(TSR_THREADS + 128) : "memory");
    scale_r = row_scales[r];
    scale_r8 = row_scales[r + 8];
  }
  // Both warpgroups are done reading the ring before the C block overwrites it
  // (the producer's copies all completed: every stage was waited for).
  asm volatile("bar.sync 1, %0;\n" ::"n"(TSR_THREADS) : "memory");
  float* cs = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    float2 top = make_float2(acc[4 * j], acc[4 * j + 1]), bottom = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
    if constexpr (NORM) {
      top = make_float2(top.x * scale_r, top.y * scale_r);
      bottom = make_float2(bottom.x * scale_r8, bottom.y * scale_r8);
    }
    *reinterpret_cast<float2*>(cs + r * CS + 8 * j + c0) = top;
    *reinterpret_cast<float2*>(cs + (r + 8) * CS + 8 * j + c0) = bottom;
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
          int SMEM_BYTES, i64 B_HALF = 0, bool NORM = false>
__device__ bool matmul_block_tma(unsigned char*, const tensormap*, const tensormap*, i64, i64, i64,
                                 const T* = nullptr, float = 0.0f) {
  static_assert(sizeof(T) == 0, "the TMA matmul block needs sm_90a (wgmma)");
  return false;
}
#endif

}  // namespace tsr
