// Tessera CUDA attention backward block on tensor cores (tile.attention_grad
// with mma = true), appended after tessera_tile.cuh and
// tessera_matmul_mma.cuh (it reuses their cp.async, ldmatrix and mma.sync
// wrappers). f16/bf16 storage, head dims 64 and 128, f32 softmax and
// accumulation; the contract: device/gpu/ATTENTION_CONTRACT.md, "The
// backward block on tensor cores".
//
// The programs are the CUDA-core block's two kinds, so nothing is
// accumulated across blocks (deterministic): a key program (dk, dv of 128
// keys of a kv head, over every row of its group's heads that sees them)
// and a query program (dq of 128 rows of a query head). A program keeps 128
// resident rows in shared memory (a key program k and v, a query program q
// and do), one warp a strip of 16, and streams the other side in steps of
// 32 rows through a two-stage cp.async ring. Each warp computes its strip's
// scores and do.v products with mma.sync m16n8k16 (A from the resident
// tile, B from the streamed one), p and ds in f32 registers, and feeds
// them, rounded to T, straight back as the A operand of the next products
// (dv += p^T do, dk += ds^T q; dq += ds k), the accumulators staying in
// registers for the whole program. delta = do.o is recomputed where a
// program needs it (o read once a step, from L2).
//
// Pairs a row cannot see (causal) get p = ds = 0, but a tensor-core product
// still multiplies them by the streamed row, and 0 * NaN is NaN. So on a
// step the causal edge cuts through, a block first checks the streamed
// values it would multiply by masked zeros; if any is NaN or inf, that step
// takes an exact path (p and ds through shared memory, sums over visible
// pairs only, on CUDA cores). Results then match docs/semantics.md for any
// input.

namespace tsr {

namespace attn_grad_mma {

constexpr int THREADS = 256;  // eight warps, one 16-row strip of the resident tile each
constexpr int RES = 128;      // resident rows: a key program's keys, a query program's rows
constexpr int STEP = 32;      // streamed rows a step: query rows, or keys

// Shared memory, in bytes: the two resident tiles, two stages of two
// streamed tiles (rows of D + 8 elements: 16-byte aligned rows whose
// ldmatrix addresses fall in different banks), each streamed or resident
// row's lse (log2 units) and delta, and the exact path's p, ds and sums (f32).
template <int D>
struct layout {
  static constexpr int PITCH = D + 8;
  static constexpr int RES_TILE = RES * PITCH * 2, STEP_TILE = STEP * PITCH * 2;
  static constexpr int X = 0, Y = RES_TILE, RING = 2 * RES_TILE;
  static constexpr int LSE = RING + 4 * STEP_TILE, DELTA = LSE + RES * 4;
  static constexpr int EXACT_P = DELTA + RES * 4, EXACT_DS = EXACT_P + RES * (STEP + 1) * 4;
  static constexpr int EXACT_SUMS = EXACT_DS + RES * (STEP + 1) * 4;  // a warp's 16 x 32 f32 each
  static constexpr int BYTES = EXACT_SUMS + RES * 32 * 4;
};

__device__ __forceinline__ int lane() { return threadIdx.x & 31; }

// Rows [r0, r0 + ROWS) of a row-major [rows, D] plane into a tile of PITCH
// elements a row; rows at or past `valid` are zeros and never read. cp.async
// when `vec` (every pointer 16-byte aligned), else element copies.
template <class T, int D, int ROWS>
__device__ __forceinline__ void load_tile(unsigned char* dst, const T* __restrict__ src, i64 r0, i64 valid, bool vec) {
  constexpr int CHUNKS = D / 8;
  for (int c = threadIdx.x; c < ROWS * CHUNKS; c += THREADS) {
    const int r = c / CHUNKS, x = c % CHUNKS * 8;
    const bool in = r0 + r < valid;
    const T* g = in ? src + (r0 + r) * D + x : src;
    unsigned char* s = dst + (r * layout<D>::PITCH + x) * 2;
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

// The exponent bits of T (all ones: NaN or inf).
__device__ __forceinline__ constexpr u32 exponent_bits(bf16_t) { return 0x7f80u; }
__device__ __forceinline__ constexpr u32 exponent_bits(f16_t) { return 0x7c00u; }

// Whether any element of a ROWS x D tile is NaN or inf.
template <class T, int D, int ROWS>
__device__ __forceinline__ bool tile_nonfinite(const unsigned char* tile) {
  constexpr u32 lo = exponent_bits(T{}), hi = lo << 16;
  bool bad = false;
  for (int c = threadIdx.x; c < ROWS * D / 2; c += THREADS) {
    const int r = c / (D / 2), x = c % (D / 2) * 2;
    const u32 w = *reinterpret_cast<const u32*>(tile + (r * layout<D>::PITCH + x) * 2);
    bad |= (w & lo) == lo || (w & hi) == hi;
  }
  return bad;
}

// A fragment (16 rows x 16 k) of a row-major tile, rows r0.., k k0...
template <int D>
__device__ __forceinline__ void frag_a(u32 (&a)[4], u32 tile, int r0, int k0) {
  mma_detail::ldsm_x4(a, tile + ((r0 + (lane() & 15)) * layout<D>::PITCH + k0 + (lane() >> 4) * 8) * 2);
}
// B fragments of n tiles n0 and n0 + 8 (16 k each) from a tile stored [n][k]:
// b[0], b[1] tile n0; b[2], b[3] tile n0 + 8.
template <int D>
__device__ __forceinline__ void frag_b_nk(u32 (&b)[4], u32 tile, int n0, int k0) {
  const int l = lane();
  mma_detail::ldsm_x4(b, tile + ((n0 + (l & 7) + (l >> 4) * 8) * layout<D>::PITCH + k0 + ((l >> 3) & 1) * 8) * 2);
}
// The same from a tile stored [k][n] (transposed by ldmatrix).
template <int D>
__device__ __forceinline__ void frag_b_kn(u32 (&b)[4], u32 tile, int k0, int n0) {
  const int l = lane();
  mma_detail::ldsm_x4_trans(b,
                            tile + ((k0 + (l & 7) + ((l >> 3) & 1) * 8) * layout<D>::PITCH + n0 + (l >> 4) * 8) * 2);
}

// s[t] += (warp's 16 rows of resident tile a) . (streamed tile b's rows 8t..8t+7)^T over D:
// a 16 x STEP block of dot products.
template <class T, int D>
__device__ __forceinline__ void dots(float (&s)[STEP / 8][4], u32 a_tile, int r0, u32 b_tile) {
#pragma unroll
  for (int k0 = 0; k0 < D; k0 += 16) {
    u32 a[4];
    frag_a<D>(a, a_tile, r0, k0);
#pragma unroll
    for (int n0 = 0; n0 < STEP; n0 += 16) {
      u32 b[4];
      frag_b_nk<D>(b, b_tile, n0, k0);
      mma_detail::mma16816<T>(s[n0 / 8], a, b[0], b[1]);
      mma_detail::mma16816<T>(s[n0 / 8 + 1], a, b[2], b[3]);
    }
  }
}

// acc (16 x D) += w (16 x STEP, f32 fragments rounded to T) . tile (STEP x D, stored [k][n]).
template <class T, int D>
__device__ __forceinline__ void accumulate(float (&acc)[D / 8][4], const float (&w)[STEP / 8][4], u32 tile) {
  auto pack = [](float lo, float hi) { return u32(narrow<T>(lo).bits) | u32(narrow<T>(hi).bits) << 16; };
#pragma unroll
  for (int ks = 0; ks < STEP / 16; ++ks) {
    const u32 a[4] = {pack(w[2 * ks][0], w[2 * ks][1]), pack(w[2 * ks][2], w[2 * ks][3]),
                      pack(w[2 * ks + 1][0], w[2 * ks + 1][1]), pack(w[2 * ks + 1][2], w[2 * ks + 1][3])};
#pragma unroll
    for (int n0 = 0; n0 < D; n0 += 16) {
      u32 b[4];
      frag_b_kn<D>(b, tile, 16 * ks, n0);
      mma_detail::mma16816<T>(acc[n0 / 8], a, b[0], b[1]);
      mma_detail::mma16816<T>(acc[n0 / 8 + 1], a, b[2], b[3]);
    }
  }
}

// The exact path's sums: acc's element (strip row, column d) += the sum
// over the streamed rows r the pair sees of w[strip row][r] * tile[r][d],
// 32 columns at a time through the warp's 16 x 32 f32 `sums` (a plain loop
// there, so that the register-resident accumulators are only added to).
template <class T, int D, class Sees>
__device__ __forceinline__ void accumulate_exact(float (&acc)[D / 8][4], const float* w, const unsigned char* tile,
                                                 int r0, Sees sees, float* sums) {
  const int g = lane() >> 2, tq = lane() & 3;
#pragma unroll
  for (int c = 0; c < D / 32; ++c) {
#pragma unroll 1
    for (int i = lane(); i < 16 * 32; i += 32) {
      const int row = r0 + (i >> 5), d = 32 * c + (i & 31);
      float sum = 0.f;
      for (int r = 0; r < STEP; ++r)
        if (sees(row, r))
          sum = fmaf(w[row * (STEP + 1) + r],
                     widen(*reinterpret_cast<const T*>(tile + (r * layout<D>::PITCH + d) * 2)), sum);
      sums[i] = sum;
    }
    __syncwarp();
#pragma unroll
    for (int t = 0; t < 4; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[4 * c + t][e] += sums[(g + (e >> 1) * 8) * 32 + 8 * t + 2 * tq + (e & 1)];
    __syncwarp();
  }
}

// Stores a warp's 16 x D accumulator strip (times `mul`) as rows [r0, r0 + 16) of
// a row-major [rows, D] plane, rows at or past `valid` left out.
template <class T, int D>
__device__ __forceinline__ void store_strip(T* __restrict__ dst, const float (&acc)[D / 8][4], i64 r0, i64 valid,
                                            float mul, bool vec) {
  const int g = lane() >> 2, tq = lane() & 3;
#pragma unroll
  for (int t = 0; t < D / 8; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const i64 row = r0 + g + 8 * h;
      if (row >= valid) continue;
      T* p = dst + row * D + 8 * t + 2 * tq;
      const T lo = narrow<T>(acc[t][2 * h] * mul), hi = narrow<T>(acc[t][2 * h + 1] * mul);
      if (vec)
        *reinterpret_cast<u32*>(p) = u32(lo.bits) | u32(hi.bits) << 16;
      else
        p[0] = lo, p[1] = hi;
    }
}

// Part `part` of PARTS of do . o for one row: do from a shared tile's row,
// o from global memory (16-byte loads when `vec`).
template <class T, int D, int PARTS>
__device__ __forceinline__ float delta_part(const unsigned char* do_row, const T* __restrict__ o, int part, bool vec) {
  constexpr int N = D / PARTS;
  static_assert(N % 8 == 0, "a part is whole 16-byte chunks");
  auto half = [](u32 w, int i) { return widen(T{u16(i ? w >> 16 : w & 0xffffu)}); };
  float acc = 0.f;
#pragma unroll
  for (int i = part * N; i < part * N + N; i += 8) {
    u32 ow[4], dw[4];
    if (vec) {
      const uint4 x = __ldg(reinterpret_cast<const uint4*>(o + i));
      ow[0] = x.x, ow[1] = x.y, ow[2] = x.z, ow[3] = x.w;
    } else {
      for (int j = 0; j < 4; ++j) ow[j] = u32(o[i + 2 * j].bits) | u32(o[i + 2 * j + 1].bits) << 16;
    }
    const uint4 y = *reinterpret_cast<const uint4*>(do_row + i * 2);
    dw[0] = y.x, dw[1] = y.y, dw[2] = y.z, dw[3] = y.w;
#pragma unroll
    for (int j = 0; j < 8; ++j) acc = fmaf(half(dw[j / 2], j & 1), half(ow[j / 2], j & 1), acc);
  }
  return acc;
}

// The pairs of a step a program sees, in offsets from its first row and
// key (32-bit: the masks run per element): rows below `rows`, keys below
// `keys`, and (causal) key <= row + diag.
template <bool CAUSAL>
struct window {
  int rows, keys, diag;
  __device__ window(i64 r, i64 k, i64 d)
      : rows(int(r)), keys(int(k)), diag(int(d < -(1 << 20) ? -(1 << 20) : d > (1 << 20) ? (1 << 20) : d)) {}
  __device__ bool operator()(int row, int key) const {
    return row < rows && key < keys && (!CAUSAL || key <= row + diag);
  }
};

template <class T, int D, bool CAUSAL>
struct block {
  using L = layout<D>;
  unsigned char* smem;
  u32 base;  // smem's shared-window address
  i64 sq, sk;
  float scale, c;  // c: scale * log2(e)
  bool vec;

  // Row i sees keys [0, lim(i)).
  __device__ i64 lim(i64 i) const {
    const i64 x = CAUSAL ? (sk < i + 1 + sk - sq ? sk : i + 1 + sk - sq) : sk;
    return x < 0 ? 0 : x;
  }

  // dk and dv of keys [n0, n0 + 128) of kv plane kv, over the rows of query planes [qp, qp + group).
  __device__ void keys(const T* q, const T* k, const T* v, const T* o, const T* g, const float* lse, T* dk, T* dv,
                       i64 kv, i64 qp, i64 group, i64 n0) {
    const int w = threadIdx.x >> 5, gl = lane() >> 2, tq = lane() & 3;
    const i64 nb = sk - n0 < RES ? sk - n0 : RES;
    // rows before `first` see no key of the block; steps run over (head, row block) pairs
    const i64 first = CAUSAL ? (n0 + sq - sk > 0 ? n0 + sq - sk : 0) : 0;
    const i64 rb0 = first / STEP, per_head = first < sq ? (sq + STEP - 1) / STEP - rb0 : 0, steps = group * per_head;
    auto stage = [&](i64 s) {
      const i64 h = qp + s / per_head, m0 = (rb0 + s % per_head) * STEP;
      unsigned char* at = smem + L::RING + (s & 1) * 2 * L::STEP_TILE;
      load_tile<T, D, STEP>(at, q + h * sq * D, m0, sq, vec);
      load_tile<T, D, STEP>(at + L::STEP_TILE, g + h * sq * D, m0, sq, vec);
    };
    load_tile<T, D, RES>(smem + L::X, k + kv * sk * D, n0, sk, vec);
    load_tile<T, D, RES>(smem + L::Y, v + kv * sk * D, n0, sk, vec);
    if (steps > 0) stage(0);
    mma_detail::cp_async_commit();
    float dk_acc[D / 8][4] = {}, dv_acc[D / 8][4] = {};
    float* lse_s = reinterpret_cast<float*>(smem + L::LSE);
    float* delta_s = reinterpret_cast<float*>(smem + L::DELTA);
    for (i64 s = 0; s < steps; ++s) {
      const i64 h = qp + s / per_head, m0 = (rb0 + s % per_head) * STEP;
      const u32 qt = base + L::RING + u32(s & 1) * 2 * L::STEP_TILE, gt = qt + L::STEP_TILE;
      const unsigned char* g_tile = smem + (gt - base);
      mma_detail::cp_async_wait<0>();
      __syncthreads();  // stage s landed; stage s + 1's buffers and lse / delta are free
      if (s + 1 < steps) stage(s + 1);
      mma_detail::cp_async_commit();
      float sc[STEP / 8][4] = {}, dp[STEP / 8][4] = {};
      dots<T, D>(sc, base + L::X, 16 * w, qt);
      dots<T, D>(dp, base + L::Y, 16 * w, gt);
      {  // the step's rows' lse and delta: eight threads a row
        const int r = threadIdx.x >> 3, part = threadIdx.x & 7;
        const i64 row = m0 + r;
        float x = row < sq ? delta_part<T, D, 8>(g_tile + r * L::PITCH * 2, o + (h * sq + row) * D, part, vec) : 0.f;
        x += __shfl_xor_sync(0xffffffffu, x, 1);
        x += __shfl_xor_sync(0xffffffffu, x, 2);
        x += __shfl_xor_sync(0xffffffffu, x, 4);
        if (part == 0) {
          delta_s[r] = x;
          lse_s[r] = row < sq ? lse[h * sq + row] * 1.4426950408889634f : 0.f;
        }
      }
      __syncthreads();
      // p^T and ds^T of the warp's keys (fragment rows) and the step's rows (columns)
      const window<CAUSAL> sees(sq - m0 < STEP ? sq - m0 : STEP, nb, m0 + sk - sq - n0);
#pragma unroll
      for (int t = 0; t < STEP / 8; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = 8 * t + 2 * tq + (e & 1);
          const bool vis = sees(r, 16 * w + gl + (e >> 1) * 8);
          const float p = vis ? exp2f(sc[t][e] * c - lse_s[r]) : 0.f;
          sc[t][e] = p;
          dp[t][e] = vis ? p * (dp[t][e] - delta_s[r]) : 0.f;
        }
      // the causal edge cuts the step: exact sums if a masked pair's row holds NaN or inf
      const bool edge = CAUSAL && nb - 1 > sees.diag;
      if (edge && __syncthreads_or(tile_nonfinite<T, D, STEP>(smem + (qt - base)) ||
                                   tile_nonfinite<T, D, STEP>(g_tile))) {
        float* ep = reinterpret_cast<float*>(smem + L::EXACT_P);
        float* eds = reinterpret_cast<float*>(smem + L::EXACT_DS);
#pragma unroll
        for (int t = 0; t < STEP / 8; ++t)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int at = (16 * w + gl + (e >> 1) * 8) * (STEP + 1) + 8 * t + 2 * tq + (e & 1);
            ep[at] = sc[t][e];
            eds[at] = dp[t][e];
          }
        __syncwarp();  // a warp reads only its own strip's rows
        auto pair = [&](int key_row, int r) { return sees(r, key_row); };
        float* sums = reinterpret_cast<float*>(smem + L::EXACT_SUMS) + w * 16 * 32;
        accumulate_exact<T, D>(dv_acc, ep, g_tile, 16 * w, pair, sums);
        accumulate_exact<T, D>(dk_acc, eds, smem + (qt - base), 16 * w, pair, sums);
      } else {
        accumulate<T, D>(dv_acc, sc, gt);
        accumulate<T, D>(dk_acc, dp, qt);
      }
    }
    mma_detail::cp_async_wait<0>();
    store_strip<T, D>(dk + kv * sk * D, dk_acc, n0 + 16 * w, sk, scale, vec);
    store_strip<T, D>(dv + kv * sk * D, dv_acc, n0 + 16 * w, sk, 1.f, vec);
  }

  // dq of rows [m0, m0 + 128) of query plane qp against kv plane kv.
  __device__ void queries(const T* q, const T* k, const T* v, const T* o, const T* g, const float* lse, T* dq,
                          i64 qp, i64 kv, i64 m0) {
    const int w = threadIdx.x >> 5, gl = lane() >> 2, tq = lane() & 3;
    const i64 rows = sq - m0 < RES ? sq - m0 : RES;
    const i64 kend = lim(m0 + rows - 1), steps = (kend + STEP - 1) / STEP;
    auto stage = [&](i64 s) {
      unsigned char* at = smem + L::RING + (s & 1) * 2 * L::STEP_TILE;
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
      float x = row < sq ? delta_part<T, D, 2>(smem + L::Y + r * L::PITCH * 2, o + (qp * sq + row) * D, part, vec) : 0.f;
      x += __shfl_xor_sync(0xffffffffu, x, 1);
      if (part == 0) {
        delta_s[r] = x;
        lse_s[r] = row < sq ? lse[qp * sq + row] * 1.4426950408889634f : 0.f;
      }
    }
    __syncthreads();
    const float lse_row[2] = {lse_s[16 * w + gl], lse_s[16 * w + gl + 8]};
    const float delta_row[2] = {delta_s[16 * w + gl], delta_s[16 * w + gl + 8]};
    float dq_acc[D / 8][4] = {};
    for (i64 s = 0; s < steps; ++s) {
      const i64 j0 = s * STEP;
      const u32 kt = base + L::RING + u32(s & 1) * 2 * L::STEP_TILE, vt = kt + L::STEP_TILE;
      if (s > 0) {
        mma_detail::cp_async_wait<0>();
        __syncthreads();  // stage s landed; stage s + 1's buffers are free
      }
      if (s + 1 < steps) stage(s + 1);
      mma_detail::cp_async_commit();
      const window<CAUSAL> sees(rows, sk - j0 < STEP ? sk - j0 : STEP, m0 + sk - sq - j0);
      float sc[STEP / 8][4] = {}, dp[STEP / 8][4] = {};
      dots<T, D>(sc, base + L::X, 16 * w, kt);
      dots<T, D>(dp, base + L::Y, 16 * w, vt);
#pragma unroll
      for (int t = 0; t < STEP / 8; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const bool vis = sees(16 * w + gl + (e >> 1) * 8, 8 * t + 2 * tq + (e & 1));
          const float p = vis ? exp2f(sc[t][e] * c - lse_row[e >> 1]) : 0.f;
          sc[t][e] = p;
          dp[t][e] = vis ? p * (dp[t][e] - delta_row[e >> 1]) : 0.f;
        }
      const bool edge = CAUSAL && sees.keys - 1 > sees.diag;
      if (edge && __syncthreads_or(tile_nonfinite<T, D, STEP>(smem + (kt - base)))) {
        float* eds = reinterpret_cast<float*>(smem + L::EXACT_DS);
#pragma unroll
        for (int t = 0; t < STEP / 8; ++t)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            eds[(16 * w + gl + (e >> 1) * 8) * (STEP + 1) + 8 * t + 2 * tq + (e & 1)] = dp[t][e];
        __syncwarp();
        auto pair = [&](int row, int r) { return sees(row, r); };
        accumulate_exact<T, D>(dq_acc, eds, smem + (kt - base), 16 * w, pair,
                               reinterpret_cast<float*>(smem + L::EXACT_SUMS) + w * 16 * 32);
      } else {
        accumulate<T, D>(dq_acc, dp, kt);
      }
    }
    store_strip<T, D>(dq + qp * sq * D, dq_acc, m0 + 16 * w, sq, scale, vec);
  }
};

// Whether every operand is 16-byte aligned (the blocks' 16-byte copies).
template <class T>
__device__ __forceinline__ bool aligned16(const T* q, const T* k, const T* v, const T* o, const T* g, const T* dq,
                                          const T* dk, const T* dv) {
  auto at = [](const void* p) { return (reinterpret_cast<unsigned long long>(p) & 15) == 0; };
  return at(q) && at(k) && at(v) && at(o) && at(g) && at(dq) && at(dk) && at(dv);
}

// Program `program` of a tensor-core backward block `blk` (this one or the
// warpgroup block, both with keys() and queries()): key programs first,
// (batch, kv head)-major with the key blocks of RES keys in order, then
// query programs, (batch, head)-major with the row blocks of RES rows from
// the last (causal: the longest first).
template <int RES, class B, class T>
__device__ __forceinline__ void run_program(B& blk, const T* q, const T* k, const T* v, const T* o, const T* g,
                                            const float* lse, T* dq, T* dk, T* dv, i64 program, i64 batch, i64 heads,
                                            i64 kv_heads, i64 sq, i64 sk) {
  const i64 group = kv_heads ? heads / kv_heads : 1, kb = (sk + RES - 1) / RES, keys = batch * kv_heads * kb;
  if (program < keys) {
    const i64 kv = program / kb;
    blk.keys(q, k, v, o, g, lse, dk, dv, kv, kv / kv_heads * heads + kv % kv_heads * group, group,
             program % kb * RES);
    return;
  }
  const i64 mb = (sq + RES - 1) / RES, x = program - keys, qp = x / mb;
  blk.queries(q, k, v, o, g, lse, dq, qp, qp / heads * kv_heads + qp % heads / group, (mb - 1 - x % mb) * RES);
}

}  // namespace attn_grad_mma

__host__ __device__ constexpr int attention_grad_mma_smem_bytes(int D) {
  return D == 64 ? attn_grad_mma::layout<64>::BYTES : attn_grad_mma::layout<128>::BYTES;
}

// One program of the backward pass on tensor cores (attn_grad_mma::run_program
// says which); the block has attn_grad_mma::THREADS threads and smem holds
// attention_grad_mma_smem_bytes(D).
template <class T, int D, bool CAUSAL>
__device__ void attention_grad_mma_program(unsigned char* smem, const T* q, const T* k, const T* v, const T* o,
                                           const T* g, const float* lse, T* dq, T* dk, T* dv, i64 program, i64 batch,
                                           i64 heads, i64 kv_heads, i64 sq, i64 sk, double scale) {
  using namespace attn_grad_mma;
  static_assert(D == 64 || D == 128, "the tensor-core backward block takes head dims 64 and 128");
  block<T, D, CAUSAL> blk{smem, mma_detail::smem_u32(smem), sq, sk, float(scale),
                          float(scale * 1.4426950408889634), aligned16(q, k, v, o, g, dq, dk, dv)};
  run_program<RES>(blk, q, k, v, o, g, lse, dq, dk, dv, program, batch, heads, kv_heads, sq, sk);
}

}  // namespace tsr
