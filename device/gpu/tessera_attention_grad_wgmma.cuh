// Tessera CUDA attention backward block on Hopper's warpgroup MMA
// (tile.attention_grad with wgmma = true), appended after
// tessera_attention_grad_mma.cuh (its masks' window and exponent bits) and,
// on sm_90a, after tessera_attention.cuh (the forward's register-A wgmma)
// and tessera_matmul_mma.cuh (descriptors, fences, cp.async). f16/bf16
// storage, head dims 64 and 128, f32 softmax and accumulation; the
// contract: device/gpu/ATTENTION_CONTRACT.md, "The backward block on
// warpgroup MMA".
//
// The programs are the other backward blocks' two kinds, so nothing is
// accumulated across blocks (deterministic): a key program (dk, dv of 128
// keys of a kv head, over every row of its group's heads that sees them)
// and a query program (dq of 128 rows of a query head). Two warpgroups,
// each owning 64 of the 128 resident rows (a key program k and v, a query
// program q and do); the other side is streamed 64 rows a step through a
// three-stage cp.async ring. All tiles sit in the 128-byte-swizzled layout
// the tensor cores read through descriptors, so a step is four (query
// program: three) warpgroup products with no fragment loads:
//   key program:   s^T = k q^T, dp^T = v do^T (both operands in smem), then
//                  dv += p^T do, dk += ds^T q (p^T, ds^T from registers,
//                  do and q read MN-major);
//   query program: s = q k^T, dp = do v^T, then dq += ds k.
// p and ds stay in registers between the products, rounded to T. p is
// computed while the tensor cores finish dp, and a step's second products
// run under the preparation of the next step (its barrier, the loads of
// the one after, and delta = do.o, recomputed where a program needs it);
// the third ring stage is what they may still be reading.
//
// Masked pairs get p = ds = 0, but a product still multiplies them by the
// streamed row (0 * NaN is NaN): on a step the causal edge cuts whose
// streamed rows hold a NaN or an inf, the second products are summed pair
// by pair over visible pairs only (p and ds through shared memory). Results
// then match docs/semantics.md for any input.

namespace tsr {

#if defined(TSR_MMA_HAVE_WGMMA)
namespace mma_detail {
// D[64 x 64] (=|+=) A[64 x 16] B[16 x 64], both K-major in smem; scale_d = 0
// overwrites d.
template <class T> __device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], u64 da, u64 db, int scale_d) {
  if constexpr (is_bf16<T>::value) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(scale_d));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(scale_d));
  }
}
}  // namespace mma_detail
#endif

namespace attn_grad_wgmma {

constexpr int THREADS = 256;  // two warpgroups, 64 resident rows each
constexpr int RES = 128;      // resident rows: a key program's keys, a query program's rows
constexpr int STEP = 64;      // streamed rows a step: query rows, or keys
constexpr int STAGES = 3;     // ring stages: the step whose products run, the next (landed), the one after (loading)

// Shared memory, in bytes from a 1 KiB-aligned base (1 KiB of slack in
// BYTES): the two resident tiles, STAGES stages of two streamed tiles, the lse
// (log2 units) and delta of a step's or the resident rows, and each
// warpgroup's f32 p or ds for the exact path (64 rows of STEP + 1).
template <int D>
struct layout {
  static constexpr int RES_TILE = RES * D * 2, STEP_TILE = STEP * D * 2;
  static constexpr int X = 0, Y = RES_TILE, RING = 2 * RES_TILE;
  static constexpr int LSE = RING + STAGES * 2 * STEP_TILE, DELTA = LSE + RES * 4;
  static constexpr int EXACT = DELTA + RES * 4, EXACT_WG = 64 * (STEP + 1) * 4;
  static constexpr int BYTES = 1024 + EXACT + 2 * EXACT_WG;
  // After an exact step the scratch is a zero tile (block::zero_operands).
  static_assert(EXACT % 1024 == 0 && 2 * EXACT_WG >= STEP_TILE, "the exact path's scratch holds a swizzled tile");
};

}  // namespace attn_grad_wgmma

__host__ __device__ constexpr int attention_grad_wgmma_smem_bytes(int D) {
  return D == 64 ? attn_grad_wgmma::layout<64>::BYTES : attn_grad_wgmma::layout<128>::BYTES;
}

#if defined(TSR_MMA_HAVE_WGMMA) || defined(TSR_HOST_EMULATION)
namespace attn_grad_wgmma {

// Byte offset of 16-byte chunk c of row r in a swizzled tile of ROWS rows:
// column atoms of 64 elements ROWS * 128 B apart, 128-byte rows whose chunks
// are XOR-permuted by the row within its 8-row group (what the tensor cores
// read through a 128-byte-swizzle descriptor from a 1 KiB-aligned tile).
template <int ROWS> __device__ __forceinline__ int chunk_at(int r, int c) {
  return (c >> 3) * ROWS * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4);
}

// Rows [r0, r0 + ROWS) of a row-major [rows, D] plane into a swizzled tile;
// rows at or past `valid` are zeros. cp.async when `vec` (every pointer
// 16-byte aligned), else element copies.
// A thread copies the same chunk column of every (THREADS / CHUNKS)-th row,
// so its addresses advance by constants.
template <class T, int D, int ROWS>
__device__ __forceinline__ void load_tile(unsigned char* dst, const T* __restrict__ src, i64 r0, i64 valid, bool vec) {
  constexpr int CHUNKS = D / 8, STRIDE = THREADS / CHUNKS;
  static_assert(THREADS % CHUNKS == 0 && ROWS % STRIDE == 0 && STRIDE % 8 == 0, "whole rows, one swizzle phase");
  const int x = threadIdx.x % CHUNKS, rt = threadIdx.x / CHUNKS;
  const T* from = src + (r0 + rt) * D + 8 * x;
  unsigned char* to = dst + chunk_at<ROWS>(rt, x);  // + i * STRIDE * 128 for row rt + i * STRIDE
#pragma unroll
  for (int i = 0; i < ROWS / STRIDE; ++i) {
    const bool in = r0 + rt + i * STRIDE < valid;
    const T* g = in ? from + i64(i) * STRIDE * D : src;
    unsigned char* s = to + i * STRIDE * 128;
    if (vec) {
      mma_detail::cp_async16(mma_detail::smem_u32(s), g, in ? 16 : 0);
    } else {
      uint4 w = {0u, 0u, 0u, 0u};
      if (in)
        w = {u32(g[0].bits) | u32(g[1].bits) << 16, u32(g[2].bits) | u32(g[3].bits) << 16,
             u32(g[4].bits) | u32(g[5].bits) << 16, u32(g[6].bits) | u32(g[7].bits) << 16};
      *reinterpret_cast<uint4*>(s) = w;
    }
  }
}

// Whether any element of a ROWS x D tile is NaN or inf (the layout does not matter).
template <class T, int D, int ROWS> __device__ __forceinline__ bool tile_nonfinite(const unsigned char* tile) {
  constexpr u32 lo = attn_grad_mma::exponent_bits(T{}), hi = lo << 16;
  bool bad = false;
  for (int i = threadIdx.x; i < ROWS * D / 2; i += THREADS) {
    const u32 w = reinterpret_cast<const u32*>(tile)[i];
    bad |= (w & lo) == lo || (w & hi) == hi;
  }
  return bad;
}

// Part `part` of PARTS of do . o for row r of a swizzled do tile, o's row
// from global memory (16-byte loads when `vec`).
template <class T, int D, int ROWS, int PARTS>
__device__ __forceinline__ float delta_part(const unsigned char* do_tile, int r, const T* __restrict__ o, int part,
                                            bool vec) {
  constexpr int N = D / PARTS / 8;  // chunks a part
  static_assert(D % (8 * PARTS) == 0, "a part is whole 16-byte chunks");
  auto half = [](u32 w, int i) { return widen(T{u16(i ? w >> 16 : w & 0xffffu)}); };
  float acc = 0.f;
#pragma unroll
  for (int c = part * N; c < part * N + N; ++c) {
    u32 ow[4], dw[4];
    if (vec) {
      const uint4 x = __ldg(reinterpret_cast<const uint4*>(o + 8 * c));
      ow[0] = x.x, ow[1] = x.y, ow[2] = x.z, ow[3] = x.w;
    } else {
      for (int j = 0; j < 4; ++j) ow[j] = u32(o[8 * c + 2 * j].bits) | u32(o[8 * c + 2 * j + 1].bits) << 16;
    }
    const uint4 y = *reinterpret_cast<const uint4*>(do_tile + chunk_at<ROWS>(r, c));
    dw[0] = y.x, dw[1] = y.y, dw[2] = y.z, dw[3] = y.w;
#pragma unroll
    for (int j = 0; j < 8; ++j) acc = fmaf(half(dw[j / 2], j & 1), half(ow[j / 2], j & 1), acc);
  }
  return acc;
}

// Descriptors: one for a tile's first k step, the others by adding the
// step's byte offset / 16 to its start-address field (shared addresses are
// below 2^18, so the 14-bit field never carries). K-major operand of 64 rows
// from `rows` (the first of a tile of ROWS), k step kk of 16: 8-row groups
// 1 KiB apart, k steps 4..7 in the next column atom. MN-major B of a
// streamed tile (k = its rows, n = D), k step kk: 16 rows = 2 KiB, column
// atoms STEP * 128 B apart.
__device__ __forceinline__ u64 kmajor(u32 rows) { return mma_detail::smem_desc(rows, 16u, 1024u); }
template <int ROWS> __device__ __forceinline__ u64 kmajor_step(u64 desc, int kk) {
  return desc + u64(((kk >> 2) * (ROWS * 128) + (kk & 3) * 32) >> 4);
}
__device__ __forceinline__ u64 mnmajor(u32 tile) { return mma_detail::smem_desc(tile, u32(STEP * 128), 1024u); }
__device__ __forceinline__ u64 mnmajor_step(u64 desc, int kk) { return desc + u64(kk * (2048 >> 4)); }

// f32 fragments (the accumulator layout of a 64 x STEP product) rounded to T
// as the A operand of the next product: k step kk is a[4kk .. 4kk + 3].
template <class T> __device__ __forceinline__ void pack_a(u32 (&a)[STEP / 4], const float (&x)[STEP / 2]) {
#pragma unroll
  for (int j = 0; j < STEP / 8; ++j) {
    a[2 * j] = attn_detail::pack2<T>(x[4 * j], x[4 * j + 1]);
    a[2 * j + 1] = attn_detail::pack2<T>(x[4 * j + 2], x[4 * j + 3]);
  }
}

// The exact path: acc (the warpgroup's 64 x D accumulator, element (row,
// d)) += the sum over the streamed rows r with sees(row, r) of w[row][r] *
// tile[r][d], w being this thread's fragments of a 64 x STEP product. The
// whole block takes it together (barriers).
template <class T, int D, class Sees>
__device__ __forceinline__ void accumulate_exact(float (&acc)[D / 2], const float (&w)[STEP / 2],
                                                 const unsigned char* tile, float* scratch, Sees sees) {
  const int l = threadIdx.x & 31, row0 = 16 * ((threadIdx.x >> 5) & 3) + (l >> 2), t = l & 3;
#pragma unroll
  for (int j = 0; j < STEP / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) scratch[(row0 + 8 * (e >> 1)) * (STEP + 1) + 8 * j + 2 * t + (e & 1)] = w[4 * j + e];
  __syncthreads();
#pragma unroll
  for (int j = 0; j < D / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = row0 + 8 * (e >> 1), d = 8 * j + 2 * t + (e & 1);
      const float* wr = scratch + row * (STEP + 1);
      float sum = 0.f;
#pragma unroll 1
      for (int r = 0; r < STEP; ++r)
        if (sees(row, r))
          sum = fmaf(wr[r], widen(*reinterpret_cast<const T*>(tile + chunk_at<STEP>(r, d >> 3) + (d & 7) * 2)), sum);
      acc[4 * j + e] += sum;
    }
  __syncthreads();
}

// Stores a warpgroup's 64 x D accumulator (times `mul`) as rows [r0, r0 +
// 64) of a row-major [rows, D] plane, rows at or past `valid` left out.
template <class T, int D>
__device__ __forceinline__ void store_rows(T* __restrict__ dst, const float (&acc)[D / 2], i64 r0, i64 valid,
                                           float mul, bool vec) {
  const int l = threadIdx.x & 31, t = l & 3;
  const i64 row0 = r0 + 16 * ((threadIdx.x >> 5) & 3) + (l >> 2);
#pragma unroll
  for (int j = 0; j < D / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const i64 row = row0 + 8 * h;
      if (row >= valid) continue;
      T* p = dst + row * D + 8 * j + 2 * t;
      const T lo = narrow<T>(acc[4 * j + 2 * h] * mul), hi = narrow<T>(acc[4 * j + 2 * h + 1] * mul);
      if (vec)
        *reinterpret_cast<u32*>(p) = u32(lo.bits) | u32(hi.bits) << 16;
      else
        p[0] = lo, p[1] = hi;
    }
}

template <class T, int D, bool CAUSAL>
struct block {
  using L = layout<D>;
  unsigned char* smem;  // the 1 KiB-aligned base
  u32 base;             // its shared-window address
  i64 sq, sk;
  float scale, c;  // c: scale * log2(e)
  bool vec;

  __device__ int wg() const { return int(threadIdx.x >> 7); }
  // Row i sees keys [0, lim(i)).
  __device__ i64 lim(i64 i) const {
    const i64 x = CAUSAL ? (sk < i + 1 + sk - sq ? sk : i + 1 + sk - sq) : sk;
    return x < 0 ? 0 : x;
  }
  // Waits for the ring's loads, makes them visible to the tensor cores and the block.
  __device__ void landed() const {
    mma_detail::cp_async_wait<0>();
    mma_detail::fence_proxy_async();
    __syncthreads();
  }
  // x = (this warpgroup's 64 rows of resident tile `res`) . (streamed tile)^T over D.
  __device__ void scores(float (&x)[STEP / 2], u32 res, u32 streamed) const {
    const u64 a = kmajor(res + u32(wg()) * 8192u), b = kmajor(streamed);  // (64 rows of 128 B in column atom 0)
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      mma_detail::wgmma_ss_n64<T>(x, kmajor_step<RES>(a, kk), kmajor_step<STEP>(b, kk), kk > 0);
  }
  // After an exact step, operands for products that add nothing: a = 0
  // and the scratch zeroed as their streamed tile (returned). The products
  // still run, so that the accumulators reach the next step through them
  // on every path (a merge after an in-flight product would make the
  // compiler move the accumulators under it, and ptxas serialize every
  // wgmma).
  template <int N> __device__ u32 zero_operands(u32 (&a)[N]) const {
#pragma unroll
    for (int i = 0; i < N; ++i) a[i] = 0u;
    for (int i = threadIdx.x; i < L::STEP_TILE / 16; i += THREADS)
      reinterpret_cast<uint4*>(smem + L::EXACT)[i] = uint4{0u, 0u, 0u, 0u};
    mma_detail::fence_proxy_async();
    __syncthreads();
    return base + L::EXACT;
  }
  // acc += a (A fragments, 64 x STEP) . streamed tile (STEP x D).
  __device__ void accumulate(float (&acc)[D / 2], const u32 (&a)[STEP / 4], u32 streamed) const {
    const u64 b = mnmajor(streamed);
#pragma unroll
    for (int kk = 0; kk < STEP / 16; ++kk)
      attn_detail::wgmma_pv<T, D>(acc, a[4 * kk], a[4 * kk + 1], a[4 * kk + 2], a[4 * kk + 3], mnmajor_step(b, kk));
  }

  // dk and dv of keys [n0, n0 + 128) of kv plane kv, over the rows of query planes [qp, qp + group).
  __device__ void keys(const T* q, const T* k, const T* v, const T* o, const T* g, const float* lse, T* dk, T* dv,
                       i64 kv, i64 qp, i64 group, i64 n0) {
    const int w = wg(), l = threadIdx.x & 31, kr0 = 16 * ((threadIdx.x >> 5) & 3) + (l >> 2), t = l & 3;
    const i64 nb = sk - n0 < RES ? sk - n0 : RES;
    // rows before `first` see no key of the block; steps run over (head, row block) pairs
    const i64 first = CAUSAL ? (n0 + sq - sk > 0 ? n0 + sq - sk : 0) : 0;
    const i64 rb0 = first / STEP, per_head = first < sq ? (sq + STEP - 1) / STEP - rb0 : 0, steps = group * per_head;
    auto stage = [&](i64 s) {
      const i64 h = qp + s / per_head, m0 = (rb0 + s % per_head) * STEP;
      unsigned char* at = smem + L::RING + (s % STAGES) * 2 * L::STEP_TILE;
      load_tile<T, D, STEP>(at, q + h * sq * D, m0, sq, vec);
      load_tile<T, D, STEP>(at + L::STEP_TILE, g + h * sq * D, m0, sq, vec);
    };
    load_tile<T, D, RES>(smem + L::X, k + kv * sk * D, n0, sk, vec);
    load_tile<T, D, RES>(smem + L::Y, v + kv * sk * D, n0, sk, vec);
    if (steps > 0) stage(0);
    mma_detail::cp_async_commit();
    float* lse_s = reinterpret_cast<float*>(smem + L::LSE);
    float* delta_s = reinterpret_cast<float*>(smem + L::DELTA);
    // Step s's tiles landed and visible, step s + 1's loads issued (into the
    // stage step s - 2 read), step s's rows' lse and delta in smem.
    auto prepare = [&](i64 s) {
      landed();
      if (s + 1 < steps) stage(s + 1);
      mma_detail::cp_async_commit();
      const int r = threadIdx.x >> 2, part = threadIdx.x & 3;  // four threads a row
      const i64 h = qp + s / per_head, row = (rb0 + s % per_head) * STEP + r;
      const unsigned char* g_tile = smem + L::RING + (s % STAGES) * 2 * L::STEP_TILE + L::STEP_TILE;
      float x = row < sq ? delta_part<T, D, STEP, 4>(g_tile, r, o + (h * sq + row) * D, part, vec) : 0.f;
      x += __shfl_xor_sync(0xffffffffu, x, 1);
      x += __shfl_xor_sync(0xffffffffu, x, 2);
      if (part == 0) {
        delta_s[r] = x;
        lse_s[r] = row < sq ? lse[h * sq + row] * 1.4426950408889634f : 0.f;
      }
      __syncthreads();
    };
    float dk_acc[D / 2], dv_acc[D / 2];
#pragma unroll
    for (int i = 0; i < D / 2; ++i) dk_acc[i] = dv_acc[i] = 0.f;
    if (steps > 0) prepare(0);
    for (i64 s = 0; s < steps; ++s) {
      const i64 m0 = (rb0 + s % per_head) * STEP;
      const u32 qt = base + L::RING + u32(s % STAGES) * 2 * L::STEP_TILE, gt = qt + L::STEP_TILE;
      const unsigned char* g_tile = smem + (gt - base);
      float st[STEP / 2], dpt[STEP / 2];  // s^T and dp^T: the warpgroup's keys x the step's rows
      mma_detail::wgmma_fence();
      scores(st, base + L::X, qt);
      mma_detail::wgmma_commit();
      scores(dpt, base + L::Y, gt);
      mma_detail::wgmma_commit();
      // p^T and ds^T: fragment rows are the warpgroup's keys, columns the step's rows
      const attn_grad_mma::window<CAUSAL> sees(sq - m0 < STEP ? sq - m0 : STEP, nb, m0 + sk - sq - n0);
      // p while the tensor cores still work on dp, then ds
      auto probabilities = [&](auto visible) {
        mma_detail::wgmma_wait<1>(st);
#pragma unroll
        for (int j = 0; j < STEP / 8; ++j) {
          const float2 lse2 = reinterpret_cast<const float2*>(lse_s)[4 * j + t];  // rows 8j + 2t, 8j + 2t + 1
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const bool vis = visible(8 * j + 2 * t + (e & 1), 64 * w + kr0 + 8 * (e >> 1));
            st[4 * j + e] = vis ? attn_detail::ex2(fmaf(st[4 * j + e], c, -(e & 1 ? lse2.y : lse2.x))) : 0.f;
          }
        }
        mma_detail::wgmma_wait<0>(dpt);
#pragma unroll
        for (int j = 0; j < STEP / 8; ++j) {
          const float2 delta2 = reinterpret_cast<const float2*>(delta_s)[4 * j + t];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const bool vis = visible(8 * j + 2 * t + (e & 1), 64 * w + kr0 + 8 * (e >> 1));
            dpt[4 * j + e] = vis ? st[4 * j + e] * (dpt[4 * j + e] - (e & 1 ? delta2.y : delta2.x)) : 0.f;
          }
        }
      };
      if (sees.rows == STEP && sees.keys == RES && (!CAUSAL || sees.diag >= RES - 1))
        probabilities([](int, int) { return true; });  // every pair of the step is visible
      else
        probabilities(sees);
      // the causal edge cuts the step: exact sums if a masked pair's row holds NaN or inf
      const bool edge = CAUSAL && nb - 1 > sees.diag;
      u32 pa[STEP / 4], da[STEP / 4], q_op = qt, g_op = gt;
      if (edge && __syncthreads_or(tile_nonfinite<T, D, STEP>(smem + (qt - base)) ||
                                   tile_nonfinite<T, D, STEP>(g_tile))) {
        float* scratch = reinterpret_cast<float*>(smem + L::EXACT + w * L::EXACT_WG);
        auto pair = [&](int key_row, int r) { return sees(r, 64 * w + key_row); };
        accumulate_exact<T, D>(dv_acc, st, g_tile, scratch, pair);
        accumulate_exact<T, D>(dk_acc, dpt, smem + (qt - base), scratch, pair);
        for (u32& x : da) x = 0u;
        q_op = g_op = zero_operands(pa);
      } else {
        pack_a<T>(pa, st);
        pack_a<T>(da, dpt);
      }
      mma_detail::wgmma_fence();
      accumulate(dv_acc, pa, g_op);
      accumulate(dk_acc, da, q_op);
      mma_detail::wgmma_commit();
      if (s + 1 < steps) prepare(s + 1);  // under the products
      mma_detail::wgmma_wait<0>(dv_acc);
      mma_detail::wgmma_wait<0>(dk_acc);
      attn_detail::keep(pa);
      attn_detail::keep(da);
    }
    mma_detail::cp_async_wait<0>();
    store_rows<T, D>(dk + kv * sk * D, dk_acc, n0 + 64 * w, sk, scale, vec);
    store_rows<T, D>(dv + kv * sk * D, dv_acc, n0 + 64 * w, sk, 1.f, vec);
  }

  // dq of rows [m0, m0 + 128) of query plane qp against kv plane kv.
  __device__ void queries(const T* q, const T* k, const T* v, const T* o, const T* g, const float* lse, T* dq,
                          i64 qp, i64 kv, i64 m0) {
    const int w = wg(), l = threadIdx.x & 31, r0 = 64 * w + 16 * ((threadIdx.x >> 5) & 3) + (l >> 2), t = l & 3;
    const i64 rows = sq - m0 < RES ? sq - m0 : RES;
    const i64 kend = lim(m0 + rows - 1), steps = (kend + STEP - 1) / STEP;
    auto stage = [&](i64 s) {
      unsigned char* at = smem + L::RING + (s % STAGES) * 2 * L::STEP_TILE;
      load_tile<T, D, STEP>(at, k + kv * sk * D, s * STEP, sk, vec);
      load_tile<T, D, STEP>(at + L::STEP_TILE, v + kv * sk * D, s * STEP, sk, vec);
    };
    load_tile<T, D, RES>(smem + L::X, q + qp * sq * D, m0, sq, vec);
    load_tile<T, D, RES>(smem + L::Y, g + qp * sq * D, m0, sq, vec);
    if (steps > 0) stage(0);
    mma_detail::cp_async_commit();
    mma_detail::cp_async_wait<0>();
    __syncthreads();
    float* lse_s = reinterpret_cast<float*>(smem + L::LSE);
    float* delta_s = reinterpret_cast<float*>(smem + L::DELTA);
    {  // the rows' lse and delta: two threads a row
      const int r = threadIdx.x >> 1, part = threadIdx.x & 1;
      const i64 row = m0 + r;
      float x = row < sq ? delta_part<T, D, RES, 2>(smem + L::Y, r, o + (qp * sq + row) * D, part, vec) : 0.f;
      x += __shfl_xor_sync(0xffffffffu, x, 1);
      if (part == 0) {
        delta_s[r] = x;
        lse_s[r] = row < sq ? lse[qp * sq + row] * 1.4426950408889634f : 0.f;
      }
    }
    __syncthreads();
    const float lse_row[2] = {lse_s[r0], lse_s[r0 + 8]};
    const float delta_row[2] = {delta_s[r0], delta_s[r0 + 8]};
    // Step s's tiles landed and visible, step s + 1's loads issued (into the stage step s - 2 read).
    auto prepare = [&](i64 s) {
      landed();
      if (s + 1 < steps) stage(s + 1);
      mma_detail::cp_async_commit();
    };
    float dq_acc[D / 2];
#pragma unroll
    for (int i = 0; i < D / 2; ++i) dq_acc[i] = 0.f;
    if (steps > 0) prepare(0);
    for (i64 s = 0; s < steps; ++s) {
      const i64 j0 = s * STEP;
      const u32 kt = base + L::RING + u32(s % STAGES) * 2 * L::STEP_TILE, vt = kt + L::STEP_TILE;
      float sc[STEP / 2], dp[STEP / 2];
      mma_detail::wgmma_fence();
      scores(sc, base + L::X, kt);
      mma_detail::wgmma_commit();
      scores(dp, base + L::Y, vt);
      mma_detail::wgmma_commit();
      const attn_grad_mma::window<CAUSAL> sees(rows, sk - j0 < STEP ? sk - j0 : STEP, m0 + sk - sq - j0);
      // p while the tensor cores still work on dp, then ds
      auto probabilities = [&](auto visible) {
        mma_detail::wgmma_wait<1>(sc);
#pragma unroll
        for (int j = 0; j < STEP / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const bool vis = visible(r0 + 8 * (e >> 1), 8 * j + 2 * t + (e & 1));
            sc[4 * j + e] = vis ? attn_detail::ex2(fmaf(sc[4 * j + e], c, -lse_row[e >> 1])) : 0.f;
          }
        mma_detail::wgmma_wait<0>(dp);
#pragma unroll
        for (int j = 0; j < STEP / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const bool vis = visible(r0 + 8 * (e >> 1), 8 * j + 2 * t + (e & 1));
            dp[4 * j + e] = vis ? sc[4 * j + e] * (dp[4 * j + e] - delta_row[e >> 1]) : 0.f;
          }
      };
      if (sees.rows == RES && sees.keys == STEP && (!CAUSAL || sees.diag >= STEP - 1))
        probabilities([](int, int) { return true; });  // every pair of the step is visible
      else
        probabilities(sees);
      const bool edge = CAUSAL && sees.keys - 1 > sees.diag;
      u32 da[STEP / 4], k_op = kt;
      if (edge && __syncthreads_or(tile_nonfinite<T, D, STEP>(smem + (kt - base)))) {
        auto pair = [&](int row, int r) { return sees(64 * w + row, r); };
        accumulate_exact<T, D>(dq_acc, dp, smem + (kt - base),
                               reinterpret_cast<float*>(smem + L::EXACT + w * L::EXACT_WG), pair);
        k_op = zero_operands(da);
      } else {
        pack_a<T>(da, dp);
      }
      mma_detail::wgmma_fence();
      accumulate(dq_acc, da, k_op);
      mma_detail::wgmma_commit();
      if (s + 1 < steps) prepare(s + 1);  // under the product
      mma_detail::wgmma_wait<0>(dq_acc);
      attn_detail::keep(da);
    }
    mma_detail::cp_async_wait<0>();
    store_rows<T, D>(dq + qp * sq * D, dq_acc, m0 + 64 * w, sq, scale, vec);
  }
};

}  // namespace attn_grad_wgmma

// One program of the backward pass on warpgroup MMA (the mma block's
// programs, attn_grad_mma::run_program); the block has
// attn_grad_wgmma::THREADS threads and smem holds
// attention_grad_wgmma_smem_bytes(D).
template <class T, int D, bool CAUSAL>
__device__ void attention_grad_wgmma_program(unsigned char* smem, const T* q, const T* k, const T* v, const T* o,
                                             const T* g, const float* lse, T* dq, T* dk, T* dv, i64 program,
                                             i64 batch, i64 heads, i64 kv_heads, i64 sq, i64 sk, double scale) {
  using namespace attn_grad_wgmma;
  static_assert(D == 64 || D == 128, "the warpgroup backward block takes head dims 64 and 128");
  const u32 raw = mma_detail::smem_u32(smem), base = (raw + 1023u) & ~1023u;
  block<T, D, CAUSAL> blk{smem + (base - raw), base, sq, sk, float(scale), float(scale * 1.4426950408889634),
                          attn_grad_mma::aligned16(q, k, v, o, g, dq, dk, dv)};
  attn_grad_mma::run_program<RES>(blk, q, k, v, o, g, lse, dq, dk, dv, program, batch, heads, kv_heads, sq, sk);
}

#else
// Without sm_90a there is no warpgroup MMA: the schedule takes this block
// only on a device with it.
template <class T, int D, bool CAUSAL>
__device__ void attention_grad_wgmma_program(unsigned char*, const T*, const T*, const T*, const T*, const T*,
                                             const float*, T*, T*, T*, i64, i64, i64, i64, i64, i64, double) {
  static_assert(sizeof(T) == 0, "the warpgroup backward block needs sm_90a (wgmma)");
}
#endif

}  // namespace tsr
