// Tessera attention forward block for Hopper (sm_90a): softmax(scale * Q K^T) V
// for one block of query rows of one (batch, head), 16-bit storage (f16_t /
// bf16_t), f32 scores, softmax and accumulation. Appended after
// tessera_matmul_tma.cuh (it reuses that file's tensor maps, mbarriers and
// TMA loads and tessera_matmul_mma.cuh's wgmma wrappers and descriptors); the
// contract is device/gpu/ATTENTION_CONTRACT.md. NVRTC-compilable: no
// #include, only builtins and inline PTX.
//
// Warp-specialized, launched with TSR_THREADS + 128 threads:
// - warpgroups 0 .. BM/64-1 are consumers, each owning 64 query rows: S =
//   Q K^T by wgmma with both operands in smem (m64n128k16, BN = 128 keys a
//   tile), the online softmax in registers, P rounded to T in registers and
//   fed as the A operand of O += P V (wgmma with A from registers, V read
//   MN-major through the transposed-B descriptor mode), O in registers;
// - the last warpgroup is the producer: one thread loads Q once and then K
//   and V tiles into a ring of STAGES stages by TMA. K and V have separate
//   full/empty mbarriers so that S = Q K^T starts before V has landed.
// setmaxnreg moves registers from the producer to the consumers (24 -> 240
// with two consumer warpgroups, 32 -> 160 with three).
//
// Overlap (the FlashAttention-3 design): within a warpgroup, the scores of
// tile j+1 and the P V product of tile j are issued together and the softmax
// of tile j+1 runs while P_j V_j is still in the tensor cores; across
// warpgroups, named barriers pass a "turn" round so that warpgroups issue
// their wgmma in alternation (one warpgroup's softmax runs under another's
// matrix products).
//
// KV tiles are visited from the last one down, so the tiles that need masks
// (the Sk tail, the causal diagonal) come first. Causal blocks visit only the
// tiles holding a key visible to one of their rows.
//
// Softmax, per row, in base-2 units x = s * scale * log2(e): running max m
// (max.f32, which skips NaN, so m is never NaN), p = 2^(x - m') with m' = 0
// while m is -inf (masked keys, x = -inf, then give 0 rather than NaN), row
// sum l in f32 of the unrounded p. A NaN score gives p = NaN, and a +inf one
// x - m = inf - inf = NaN: either makes the row's o and lse NaN. A row with
// no visible key ends with l = 0: o = 0, lse = -inf. With scale > 0 the max
// is taken on the raw scores (same order) and the scale folds into the
// exponent's fma; other scales (<= 0, NaN) scale the scores first.
//
// smem (1 KiB aligned; 128-byte-swizzled boxes of 64 elements x 64 rows, as
// the TMA's CU_TENSOR_MAP_SWIZZLE_128B writes them):
//   Q  [D/64 column atoms][BM rows][128 B]       (re-used for O staging)
//   STAGES x { K [D/64][BN rows][128 B], V [D/64][BN rows][128 B] }
//   mbarriers: q, full_k[STAGES], full_v[STAGES], empty_k[STAGES], empty_v[STAGES]
// For S = Q K^T both operands are K-major (D contiguous): 8-row groups 1 KiB
// apart, a k step of 16 is 32 B along the swizzled row, k steps 4..7 in the
// next column atom. For O = P V, V is MN-major (D = N contiguous): 8-key
// groups 1 KiB apart, a k step of 16 keys is 2 KiB, the 64-wide D atoms
// BN*128 B apart.

namespace tsr {

// SMEM_BYTES for a configuration: the Q tile, the K/V ring, the mbarriers and
// 1 KiB of alignment slack.
__host__ __device__ constexpr int attention_smem_bytes(int D, int BM, int BN, int STAGES) {
  return 1024 + BM * D * 2 + STAGES * 2 * BN * D * 2 + 8 * (1 + 4 * STAGES);
}

// Where the (batch, head) planes live. Plane bh of q and o is head bh % heads
// of batch bh / heads, plane bkv of k and v head bkv % kv_heads of batch
// bkv / kv_heads; q's, k's and v's tensor maps have dims {D, rows, heads,
// batch}, and o's element (b, h, row, d) is o[b*o_batch + h*o_head +
// row*o_row + d] (a transposed view of o costs no copy).
struct attn_layout {
  i64 heads, kv_heads, o_batch, o_head, o_row;
};

#if defined(TSR_MMA_HAVE_WGMMA)

// Inter-warpgroup alternation of the wgmma issue (1, the default) or not (0).
#ifndef TSR_ATTN_PINGPONG
#define TSR_ATTN_PINGPONG 1
#endif

namespace attn_detail {

// One box {64, 64, 1, 1} of a 4-D tensor map (d, row, head, batch) into smem
// at dst, completing on bar; out-of-bounds elements are zeros.
__device__ __forceinline__ void tma_load4(u32 dst, const tensormap* map, u32 bar, int d, int row, int head, int batch) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
      "[%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<u64>(map)), "r"(bar), "r"(d), "r"(row), "r"(head), "r"(batch)
      : "memory");
}

// D[64 x N] += A[64 x 16] * B[16 x N], A from registers (the m16n8k16 A
// fragment per warp: a0 = rows g, k 2t..2t+1; a1 = rows g+8; a2, a3 the same
// at k + 8; g = lane/4, t = lane%4, two 16-bit elements per register, the
// lower k in the low half), B through a descriptor, MN-major (trans-b = 1).
__device__ __forceinline__ void wgmma_rs_n128_bf16(float (&d)[64], u32 a0, u32 a1, u32 a2, u32 a3, u64 db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_rs_n128_f16(float (&d)[64], u32 a0, u32 a1, u32 a2, u32 a3, u64 db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_rs_n64_bf16(float (&d)[32], u32 a0, u32 a1, u32 a2, u32 a3, u64 db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_rs_n64_f16(float (&d)[32], u32 a0, u32 a1, u32 a2, u32 a3, u64 db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(1));
}
// O += P V for one k step of 16 keys, N = D.
template <class T, int D>
__device__ __forceinline__ void wgmma_pv(float (&d)[D / 2], u32 a0, u32 a1, u32 a2, u32 a3, u64 db) {
  if constexpr (D == 128 && mma_detail::is_bf16<T>::value) wgmma_rs_n128_bf16(d, a0, a1, a2, a3, db);
  else if constexpr (D == 128) wgmma_rs_n128_f16(d, a0, a1, a2, a3, db);
  else if constexpr (mma_detail::is_bf16<T>::value) wgmma_rs_n64_bf16(d, a0, a1, a2, a3, db);
  else wgmma_rs_n64_f16(d, a0, a1, a2, a3, db);
}
// S (=|+=) Q K^T for one k step of 16 of D, 128 keys, both K-major.
template <class T> __device__ __forceinline__ void wgmma_qk(float (&d)[64], u64 da, u64 db, int scale_d) {
  if constexpr (mma_detail::is_bf16<T>::value) mma_detail::wgmma_n128_bf16<0, 0>(d, da, db, scale_d);
  else mma_detail::wgmma_n128_f16<0, 0>(d, da, db, scale_d);
}

// Two f32 rounded to T, packed: lo in bits 0-15 (the lower column / k).
template <class T> __device__ __forceinline__ u32 pack2(float lo, float hi);
template <> __device__ __forceinline__ u32 pack2<bf16_t>(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
template <> __device__ __forceinline__ u32 pack2<f16_t>(float lo, float hi) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ float ex2(float x) {  // 2^x; 2^-inf = 0, NaN stays NaN
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float lg2(float x) {  // log2(0) = -inf
  float y;
  asm("lg2.approx.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Registers an in-flight wgmma reads (the A fragments of P): kept live and
// unmodified until after the wgmma_wait that retires it.
template <int N> __device__ __forceinline__ void keep(u32 (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

__device__ __forceinline__ void bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void bar_arrive(int id, int n) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}

// Named barriers: 0 is __syncthreads; 2 + w passes the wgmma turn to
// consumer warpgroup w; 2 + NWG + w is warpgroup w's own (O staging).
constexpr int BAR_TURN = 2;

// Issue S = Q K^T over D (D/16 wgmma into one commit group by the caller).
// q: this warpgroup's 64 Q rows in column atom 0; k: the K stage.
template <class T, int D, int BM, int BN>
__device__ __forceinline__ void issue_qk(float (&s)[BN / 2], u32 q, u32 k) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const u64 da = mma_detail::smem_desc(q + u32(kk >> 2) * (BM * 128) + u32(kk & 3) * 32, 16u, 1024u);
    const u64 db = mma_detail::smem_desc(k + u32(kk >> 2) * (BN * 128) + u32(kk & 3) * 32, 16u, 1024u);
    wgmma_qk<T>(s, da, db, kk > 0);
  }
}
// Issue O += P V over the BN keys of the V stage v.
template <class T, int D, int BN>
__device__ __forceinline__ void issue_pv(float (&o)[D / 2], const u32 (&p)[BN / 4], u32 v) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    const u64 db = mma_detail::smem_desc(v + u32(kk) * 2048u, u32(BN * 128), 1024u);
    wgmma_pv<T, D>(o, p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3], db);
  }
}

// One tile of the online softmax on this thread's scores s (rows g and g+8
// of its warp's 16: s[4j+0,1] row g, s[4j+2,3] row g+8, columns 8j+2t, +1).
// masked: keys at columns >= lim0 (row g) / lim1 (row g+8) are invisible.
// On return s holds p (f32), m and l are updated and alpha has the factors
// the running O must be scaled by. m is kept in base-2 units (max of
// s * sl2). FOLD (sl2 > 0, the usual case): the max is taken on the raw
// scores, which orders them the same way, and the scale folds into the
// exponent's fma; otherwise (sl2 <= 0 or NaN) the scores are scaled first.
template <int BN, bool FOLD>
__device__ __forceinline__ void softmax_tile(float (&s)[BN / 2], float (&m)[2], float (&l)[2], float (&alpha)[2],
                                             float sl2, bool masked, int lim0, int lim1, int t) {
  const float NEG_INF = -inf<float>();
  if constexpr (!FOLD) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) s[i] = s[i] * sl2;
  }
  if (masked) {  // -inf raw (FOLD: times sl2 > 0) or scaled
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int c = 8 * j + 2 * t + e;
        if (c >= lim0) s[4 * j + e] = NEG_INF;
        if (c >= lim1) s[4 * j + 2 + e] = NEG_INF;
      }
  }
  // Row maxima: two interleaved chains per row, then the quad (the 4 threads
  // holding a row).
  float mx[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float a = fmaxf(s[2 * h], s[2 * h + 1]), b = fmaxf(s[4 + 2 * h], s[4 + 2 * h + 1]);
#pragma unroll
    for (int j = 2; j < BN / 8; j += 2) {
      a = fmaxf(a, fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
      b = fmaxf(b, fmaxf(s[4 * j + 4 + 2 * h], s[4 * j + 4 + 2 * h + 1]));
    }
    mx[h] = fmaxf(a, b);
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
    if constexpr (FOLD) mx[h] = mx[h] * sl2;
  }
  float nmu[2];  // -(the max subtracted)
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float mn = fmaxf(m[h], mx[h]);
    const float mu = mn == NEG_INF ? 0.f : mn;
    alpha[h] = ex2(m[h] - mu);  // m = -inf (nothing seen yet): 0
    m[h] = mn;
    nmu[h] = -mu;
  }
  // p and this thread's share of the row sums (the quad's shares are added
  // once, at the end: they are all scaled by the same alpha).
  float sum[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s[4 * j + 2 * h + e];
        x = ex2(FOLD ? __fmaf_rn(x, sl2, nmu[h]) : x + nmu[h]);
      }
      sum[h][j & 1] = sum[h][j & 1] + (s[4 * j + 2 * h] + s[4 * j + 2 * h + 1]);
    }
#pragma unroll
  for (int h = 0; h < 2; ++h) l[h] = __fmaf_rn(l[h], alpha[h], sum[h][0] + sum[h][1]);
}

// P (f32 in s) rounded to T into the A fragments of the P V product: k step
// kk (keys 16kk..16kk+15) is p[4kk..4kk+3].
template <class T, int BN> __device__ __forceinline__ void pack_p(u32 (&p)[BN / 4], const float (&s)[BN / 2]) {
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    p[2 * j] = pack2<T>(s[4 * j], s[4 * j + 1]);
    p[2 * j + 1] = pack2<T>(s[4 * j + 2], s[4 * j + 3]);
  }
}

template <int D> __device__ __forceinline__ void rescale(float (&o)[D / 2], const float (&alpha)[2]) {
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    o[4 * j] = o[4 * j] * alpha[0];
    o[4 * j + 1] = o[4 * j + 1] * alpha[0];
    o[4 * j + 2] = o[4 * j + 2] * alpha[1];
    o[4 * j + 3] = o[4 * j + 3] * alpha[1];
  }
}

// A mask operand: element (b, h, i, j) of [batch, heads, sq, sk] at
// at[b*st[0] + h*st[1] + i*st[2] + j*st[3]] (stride 0 on a broadcast dim).
template <class M> struct mask_ref {
  const M* at;
  i64 st[4];
};

// The mask on this thread's scores of the tile whose first key is k0: the
// scores scaled into base-2 units (s * sl2), then (MASK 1) a false entry
// hides its key (-inf) or (MASK 2) the bias joins in base-2 units. rows[h]:
// the mask's row of this thread's row g + 8h, null past sq; keys past sk
// read nothing (the tile's limits hide them).
template <int BN, int MASK, class M>
__device__ __forceinline__ void apply_mask(float (&s)[BN / 2], const M* const (&rows)[2], i64 k0, i64 sk, i64 st_key,
                                           float sl2, int t) {
  const float log2e = 1.4426950408889634f;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s[4 * j + 2 * h + e];
        x = x * sl2;
        const i64 c = k0 + 8 * j + 2 * t + e;
        if (rows[h] != nullptr && c < sk) {
          const M mv = rows[h][c * st_key];
          if constexpr (MASK == 1) {
            if (!mv) x = -inf<float>();
          } else {
            x = __fmaf_rn(widen(mv), log2e, x);
          }
        }
      }
}

}  // namespace attn_detail

// Query rows [m0, min(m0 + BM, sq)) of (batch, head) bh; K and V of kv head
// bkv. Every thread of the block calls it and returns from it; nothing may
// follow that synchronizes the whole block (the producer leaves early).
// MASK 0: no mask operand; 1: i1 (false hides a key); 2: an additive bias.
template <class T, int D, int BM, int BN, int STAGES, bool CAUSAL, bool LSE, int SMEM_BYTES, int MASK, class M>
__device__ __forceinline__ void attention_fwd_block(unsigned char* smem, const tensormap* tq, const tensormap* tk,
                                                    const tensormap* tv, T* __restrict__ o, const attn_layout& lay,
                                                    float* __restrict__ lse, i64 bh, i64 bkv, i64 m0, i64 sq, i64 sk,
                                                    float scale, const attn_detail::mask_ref<M>& mask) {
  using namespace mma_detail;
  using namespace tma_detail;
  using namespace attn_detail;
  static_assert(sizeof(T) == 2, "the attention block is for f16_t / bf16_t");
  static_assert(D == 64 || D == 128, "attention head dim D: 64 or 128");
  static_assert(BN == 128, "attention KV tile BN: 128");
  static_assert(BM == 128 || (BM == 192 && D == 64),
                "attention query block BM: 128, or 192 with D = 64 (three consumer warpgroups of 160 registers)");
  static_assert(STAGES >= 2, "attention K/V ring: STAGES >= 2");
  static_assert(TSR_THREADS == BM / 64 * 128, "TSR_THREADS must be (BM/64)*128: one consumer warpgroup per 64 rows");
  constexpr int NWG = BM / 64;
  constexpr int Q_BYTES = BM * D * 2, KV_BYTES = BN * D * 2, STAGE_BYTES = 2 * KV_BYTES;  // multiples of 1 KiB
  constexpr int RING = Q_BYTES + STAGES * STAGE_BYTES;
  static_assert(attention_smem_bytes(D, BM, BN, STAGES) <= SMEM_BYTES,
                "Q tile + K/V ring + mbarriers (+1 KiB alignment slack) exceed SMEM_BYTES");
  constexpr int REG_PRODUCER = NWG == 2 ? 24 : 32, REG_CONSUMER = NWG == 2 ? 240 : 160;
  constexpr bool PINGPONG = TSR_ATTN_PINGPONG != 0;

  // Swizzle atoms (so the Q tile and every stage) sit on 1 KiB boundaries.
  const u32 raw = smem_u32(smem), base = (raw + 1023u) & ~1023u;
  const u32 bar_q = base + RING, full_k = bar_q + 8u, full_v = full_k + 8u * STAGES,
            empty_k = full_v + 8u * STAGES, empty_v = empty_k + 8u * STAGES;
  const u32 q_smem = base, ring = base + Q_BYTES;

  // KV tiles [0, n_tiles): keys below kv_end are visible to some row of the
  // block (causal: key j is visible to row i iff j <= i + sk - sq).
  const i64 m_end = sq < m0 + BM ? sq : m0 + BM;
  i64 kv_end = sk;
  if constexpr (CAUSAL) kv_end = kv_end < m_end + (sk - sq) ? kv_end : m_end + (sk - sq);
  const int n_tiles = kv_end > 0 ? int((kv_end + BN - 1) / BN) : 0;

  const int tid = threadIdx.x;
  if (tid == 0) {
    mbar_init(bar_q, 1);
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_k + 8u * s, 1);  // the producer's expect_tx
      mbar_init(full_v + 8u * s, 1);
      mbar_init(empty_k + 8u * s, TSR_THREADS);  // every consumer thread
      mbar_init(empty_v + 8u * s, TSR_THREADS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (tid >= TSR_THREADS) {  // producer warpgroup
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REG_PRODUCER) : "memory");
    if (tid == TSR_THREADS && n_tiles > 0) {
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<u64>(tq)) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<u64>(tk)) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<u64>(tv)) : "memory");
      const int qh = int(bh % lay.heads), qb = int(bh / lay.heads);
      const int kh = int(bkv % lay.kv_heads), kb = int(bkv / lay.kv_heads);
      mbar_expect_tx(bar_q, Q_BYTES);  // whole boxes, zero-filled rows past sq included
#pragma unroll
      for (int rb = 0; rb < BM / 64; ++rb)
#pragma unroll
        for (int kc = 0; kc < D / 64; ++kc)
          tma_load4(q_smem + u32(kc * BM * 128 + rb * 8192), tq, bar_q, 64 * kc, int(m0) + 64 * rb, qh, qb);
#pragma unroll 1
      for (int it = 0; it < n_tiles; ++it) {
        const int n = n_tiles - 1 - it, s = it % STAGES, ph = ((it / STAGES) & 1) ^ 1;
        const u32 kst = ring + u32(s) * STAGE_BYTES, vst = kst + KV_BYTES;
        mbar_wait(empty_k + 8u * s, ph);
        mbar_expect_tx(full_k + 8u * s, KV_BYTES);
#pragma unroll
        for (int rb = 0; rb < BN / 64; ++rb)
#pragma unroll
          for (int kc = 0; kc < D / 64; ++kc)
            tma_load4(kst + u32(kc * BN * 128 + rb * 8192), tk, full_k + 8u * s, 64 * kc, n * BN + 64 * rb, kh, kb);
        mbar_wait(empty_v + 8u * s, ph);
        mbar_expect_tx(full_v + 8u * s, KV_BYTES);
#pragma unroll
        for (int rb = 0; rb < BN / 64; ++rb)
#pragma unroll
          for (int kc = 0; kc < D / 64; ++kc)
            tma_load4(vst + u32(kc * BN * 128 + rb * 8192), tv, full_v + 8u * s, 64 * kc, n * BN + 64 * rb, kh, kb);
      }
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REG_CONSUMER) : "memory");
  const float NEG_INF = -inf<float>();
  const int wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const u32 q_wg = q_smem + u32(wg) * 8192u;  // this warpgroup's 64 rows (column atom 0)
  const i64 row0 = m0 + 64 * wg + 16 * warp + g;  // this thread's rows: row0, row0 + 8
  // Keys [0, lim) are visible to a row; the warpgroup's first row sees the
  // fewest, so a tile all of whose keys it sees needs no masks.
  i64 lim[2] = {sk, sk}, wg_lim = sk;
  if constexpr (CAUSAL) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const i64 e = row0 + 8 * h + 1 + (sk - sq);
      lim[h] = e < sk ? e : sk;
    }
    const i64 e = m0 + 64 * wg + 1 + (sk - sq);
    wg_lim = e < sk ? e : sk;
  }
  const float sl2 = scale * 1.4426950408889634f;  // scale * log2(e)
  const bool fold = sl2 > 0.f;
  // The mask's rows of this thread's two rows (null past sq: nothing to read).
  const M* mask_rows[2] = {nullptr, nullptr};
  if constexpr (MASK != 0) {
    const M* mb = mask.at + bh / lay.heads * mask.st[0] + bh % lay.heads * mask.st[1];
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (row0 + 8 * h < sq) mask_rows[h] = mb + (row0 + 8 * h) * mask.st[2];
  }

  float acc[D / 2], s[BN / 2], m[2] = {NEG_INF, NEG_INF}, l[2] = {0.f, 0.f}, alpha[2];
  u32 p[BN / 4];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) acc[i] = 0.f;

  // Turns: warpgroup w issues its wgmma after w-1 has issued its own (w = 0
  // after the last one); every warpgroup takes n_tiles + 1 turns. The last
  // warpgroup's first pass is the initial arrive, so it skips its final one
  // and every barrier ends with as many arrivals as waits.
  auto turn_begin = [&]() {
    if constexpr (PINGPONG) bar_sync(BAR_TURN + wg, 256);
  };
  auto turn_end = [&](bool last) {
    if constexpr (PINGPONG)
      if (!(last && wg == NWG - 1)) bar_arrive(BAR_TURN + (wg + 1) % NWG, 256);
  };
  // The masks of tile n for this thread's rows (column limits within the tile).
  auto softmax = [&](int n) {
    const i64 k0 = i64(n) * BN;
    const bool masked = k0 + BN > wg_lim;
    int cl[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const i64 c = lim[h] - k0;
      cl[h] = c < 0 ? 0 : c > BN ? BN : int(c);
    }
    if constexpr (MASK != 0) {  // the max must see the mask: scale first, then the tile in base-2 units
      apply_mask<BN, MASK>(s, mask_rows, k0, sk, mask.st[3], sl2, t);
      softmax_tile<BN, false>(s, m, l, alpha, 1.f, masked, cl[0], cl[1], t);
    } else if (fold) {
      softmax_tile<BN, true>(s, m, l, alpha, sl2, masked, cl[0], cl[1], t);
    } else {
      softmax_tile<BN, false>(s, m, l, alpha, sl2, masked, cl[0], cl[1], t);
    }
  };

  if (n_tiles > 0) {
    if (PINGPONG && wg == NWG - 1) bar_arrive(BAR_TURN, 256);
    mbar_wait(bar_q, 0);
    // The first tile (n_tiles - 1, stage 0): scores only.
    mbar_wait(full_k, 0);
    turn_begin();
    wgmma_fence();
    issue_qk<T, D, BM, BN>(s, q_wg, ring);
    wgmma_commit();
    turn_end(false);
    wgmma_wait<0>(s);
    mbar_arrive(empty_k);
    softmax(n_tiles - 1);
    pack_p<T, BN>(p, s);
#pragma unroll 1
    for (int it = 1; it < n_tiles; ++it) {
      // Scores of tile it and P V of tile it-1 in flight together; the
      // softmax of tile it runs under the P V product.
      const int sc = it % STAGES, sp = (it - 1) % STAGES;
      mbar_wait(full_k + 8u * sc, (it / STAGES) & 1);
      mbar_wait(full_v + 8u * sp, ((it - 1) / STAGES) & 1);
      turn_begin();
      wgmma_fence();
      issue_qk<T, D, BM, BN>(s, q_wg, ring + u32(sc) * STAGE_BYTES);
      wgmma_commit();
      issue_pv<T, D, BN>(acc, p, ring + u32(sp) * STAGE_BYTES + KV_BYTES);
      wgmma_commit();
      turn_end(false);
      wgmma_wait<1>(s);
      mbar_arrive(empty_k + 8u * sc);
      softmax(n_tiles - 1 - it);
      wgmma_wait<0>(acc);
      keep(p);
      mbar_arrive(empty_v + 8u * sp);
      rescale<D>(acc, alpha);
      pack_p<T, BN>(p, s);
    }
    const int sl = (n_tiles - 1) % STAGES;
    mbar_wait(full_v + 8u * sl, ((n_tiles - 1) / STAGES) & 1);
    turn_begin();
    wgmma_fence();
    issue_pv<T, D, BN>(acc, p, ring + u32(sl) * STAGE_BYTES + KV_BYTES);
    wgmma_commit();
    turn_end(true);
    wgmma_wait<0>(acc);
    keep(p);
    mbar_arrive(empty_v + 8u * sl);
  }

  // Epilogue. Full row sums over the quad; o = acc / l (0 for a row that saw
  // no key), lse = ln 2 * (m + log2 l).
  float inv[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] = l[h] + __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] = l[h] + __shfl_xor_sync(0xffffffffu, l[h], 2);
    inv[h] = 1.f / l[h];
  }
  if (LSE && t == 0) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (row0 + 8 * h < sq) lse[bh * sq + row0 + 8 * h] = (m[h] + lg2(l[h])) * 0.6931471805599453f;
  }
  // O through this warpgroup's Q rows in smem (its last wgmma has retired),
  // in the same swizzled layout (conflict-free 4-byte writes), then out in
  // 16-byte row chunks.
  const int rl = 16 * warp + g;  // local row of h = 0; rl + 8 for h = 1 (same rl % 8)
#pragma unroll
  for (int j = 0; j < D / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float a = l[h] == 0.f ? 0.f : acc[4 * j + 2 * h] * inv[h];
      const float b = l[h] == 0.f ? 0.f : acc[4 * j + 2 * h + 1] * inv[h];
      const u32 addr = q_wg + u32((j >> 3) * BM * 128 + (rl + 8 * h) * 128 + (((j & 7) ^ g) << 4) + 4 * t);
      asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(pack2<T>(a, b)) : "memory");
    }
  bar_sync(BAR_TURN + NWG + wg, 128);
  constexpr int CPR = D / 8;  // 16-byte chunks per row
  T* const o_plane = o + bh / lay.heads * lay.o_batch + bh % lay.heads * lay.o_head;
  const bool vec = ((reinterpret_cast<u64>(o) | u64(lay.o_batch | lay.o_head | lay.o_row) * sizeof(T)) & 15) == 0;
  const int tl = tid & 127;
#pragma unroll
  for (int i = 0; i < 64 * CPR / 128; ++i) {
    const int e = tl + 128 * i, r = e / CPR, cc = e % CPR;
    const u32 addr = q_wg + u32((cc >> 3) * BM * 128 + r * 128 + (((cc & 7) ^ (r & 7)) << 4));
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(addr)
                 : "memory");
    const i64 row = m0 + 64 * wg + r;
    if (row < sq) {
      T* dst = o_plane + row * lay.o_row + cc * 8;
      if (vec) {
        *reinterpret_cast<uint4*>(dst) = v;
      } else {
        const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          dst[2 * q].bits = u16(w[q] & 0xffffu);
          dst[2 * q + 1].bits = u16(w[q] >> 16);
        }
      }
    }
  }
}

template <class T, int D, int BM, int BN, int STAGES, bool CAUSAL, bool LSE, int SMEM_BYTES>
__device__ __forceinline__ void attention_fwd_tma(unsigned char* smem, const tensormap* tq, const tensormap* tk,
                                                  const tensormap* tv, T* __restrict__ o, const attn_layout& lay,
                                                  float* __restrict__ lse, i64 bh, i64 bkv, i64 m0, i64 sq, i64 sk,
                                                  float scale) {
  attention_fwd_block<T, D, BM, BN, STAGES, CAUSAL, LSE, SMEM_BYTES, 0, b8>(smem, tq, tk, tv, o, lay, lse, bh, bkv, m0,
                                                                            sq, sk, scale, attn_detail::mask_ref<b8>{});
}

// With a mask operand (BIAS: added to the scaled scores; else i1, false
// hiding its key) and its element strides over [batch, heads, sq, sk].
template <class T, int D, int BM, int BN, int STAGES, bool CAUSAL, bool LSE, bool BIAS, int SMEM_BYTES, class M>
__device__ __forceinline__ void attention_fwd_tma_masked(unsigned char* smem, const tensormap* tq,
                                                         const tensormap* tk, const tensormap* tv, T* __restrict__ o,
                                                         const attn_layout& lay, const M* __restrict__ mask, i64 s0,
                                                         i64 s1, i64 s2, i64 s3, float* __restrict__ lse, i64 bh,
                                                         i64 bkv, i64 m0, i64 sq, i64 sk, float scale) {
  attention_fwd_block<T, D, BM, BN, STAGES, CAUSAL, LSE, SMEM_BYTES, BIAS ? 2 : 1, M>(
      smem, tq, tk, tv, o, lay, lse, bh, bkv, m0, sq, sk, scale, attn_detail::mask_ref<M>{mask, {s0, s1, s2, s3}});
}

#else
// Without sm_90a there is no wgmma (or setmaxnreg): the attention block is
// offered only where the runtime compiles for sm_90a; elsewhere it fails to
// compile here rather than run on another path.
template <class T, int D, int BM, int BN, int STAGES, bool CAUSAL, bool LSE, int SMEM_BYTES>
__device__ void attention_fwd_tma(unsigned char*, const tensormap*, const tensormap*, const tensormap*, T*,
                                  const attn_layout&, float*, i64, i64, i64, i64, i64, float) {
  static_assert(sizeof(T) == 0, "the attention block needs sm_90a (wgmma, setmaxnreg, TMA)");
}
template <class T, int D, int BM, int BN, int STAGES, bool CAUSAL, bool LSE, bool BIAS, int SMEM_BYTES, class M>
__device__ void attention_fwd_tma_masked(unsigned char*, const tensormap*, const tensormap*, const tensormap*, T*,
                                         const attn_layout&, const M*, i64, i64, i64, i64, float*, i64, i64, i64, i64,
                                         i64, float) {
  static_assert(sizeof(T) == 0, "the attention block needs sm_90a (wgmma, setmaxnreg, TMA)");
}
#endif

}  // namespace tsr
