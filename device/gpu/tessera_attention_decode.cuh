// Tessera CUDA split-KV attention block (tile.attention_decode), embedded
// after the tile library into kernels that contain it. The contract:
// device/gpu/ATTENTION_CONTRACT.md, "The split-KV block".
//
// For few query rows a kv head (decode: one token, a group of GQA heads) a
// 128-row tensor-core block is mostly empty and one program a head streams
// its whole cache alone. Here a program takes R = group * sq rows (every
// query row of the heads sharing a kv head) against one chunk of that kv
// head's keys, so a short query spreads over (batch, kv head, chunk)
// programs and the cache is read once, by all SMs at once:
//   - the chunk's k and v lines are prefetched to L2 first (the loads that
//     follow find them in flight), then it is read in tiles of BN keys:
//     scores (a key's D elements spread over LPK lanes, 16-byte loads, a
//     shuffle sum), an online softmax over the tile in shared memory, and
//     p v into f32 registers (rescaled when a row's max grows);
//   - a program whose chunk is not the only one writes its unnormalized o,
//     row max and row sum (f32) to the workspace; the last program of its
//     (batch, kv head) to finish (a counter it resets to 0) combines the
//     chunks in chunk order and writes o (and lse): one launch,
//     deterministic, nothing accumulated by atomics.
// Scores are scale * q.k in f32; the max propagates NaN (a NaN or +inf
// score makes its row NaN); a row without a visible key gets o = 0 and
// lse = -inf.

namespace tsr {

constexpr int ATTN_DECODE_THREADS = 128;  // four warps
constexpr int ATTN_DECODE_WARPS = ATTN_DECODE_THREADS / 32;

// Element strides over [batch, heads, rows] (the head dim is contiguous)
// and first elements of q, k, v; o's strides.
struct decode_layout {
  i64 heads, kv_heads;
  i64 q[3], k[3], v[3], o[3];
  i64 q0, k0, v0;
};

// Shared memory: q's rows (f32), a tile's scores, the warps' partial o, the
// rows' running max, sum and rescale factor, the last-program flag.
__host__ __device__ constexpr int attention_decode_smem_bytes(int D, int R, int BN) {
  return 4 * (R * D + R * BN + ATTN_DECODE_WARPS * R * D + 3 * R) + 16;
}

// Workspace: a counter per (batch, kv head) (256 bytes of them rounded up),
// then per program its rows' unnormalized o, then their (max, sum).
__host__ __device__ constexpr i64 attention_decode_workspace_bytes(i64 planes, i64 programs, int R, int D) {
  return (planes * 4 + 255) / 256 * 256 + programs * R * (2 + D) * 4 + 256;
}

__device__ __forceinline__ float nan_max(float a, float b) { return (a > b || a != a) ? a : b; }

template <int W>
__device__ __forceinline__ float group_sum(float x) {  // over aligned groups of W lanes
#pragma unroll
  for (int off = W / 2; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

// N elements of T at p (16-byte aligned when `vec`), widened.
template <class T, int N>
__device__ __forceinline__ void load_row_part(const T* p, bool vec, float (&out)[N]) {
  constexpr int VEC = 16 / int(sizeof(T));
  if (vec) {
#pragma unroll
    for (int i = 0; i < N / VEC; ++i) {
      union {
        uint4 u;
        T t[VEC];
      } x;
      x.u = *reinterpret_cast<const uint4*>(p + i * VEC);
#pragma unroll
      for (int j = 0; j < VEC; ++j) out[i * VEC + j] = widen(x.t[j]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = widen(p[i]);
  }
}

template <class T, int D, int R, int BN, bool CAUSAL, bool LSE>
__device__ void attention_decode(unsigned char* smem, const T* __restrict__ q, const T* __restrict__ k,
                                 const T* __restrict__ v, T* __restrict__ o, float* __restrict__ lse,
                                 unsigned char* __restrict__ ws, const decode_layout& L, i64 pid, i64 batch, i64 sq, i64 sk,
                                 i64 chunk, i64 chunks, float scale) {
  constexpr int VEC = 16 / int(sizeof(T));
  constexpr int LPK = D / VEC < 32 ? D / VEC : 32;  // lanes a key
  constexpr int EPL = D / LPK;                      // elements a lane
  constexpr int KPW = 32 / LPK;                     // keys a warp step
  constexpr int KPS = KPW * ATTN_DECODE_WARPS;      // keys a block step
  constexpr float LOG2E = 1.4426950408889634f;
  static_assert(D % VEC == 0 && EPL % VEC == 0 && 32 % LPK == 0, "head dim: 16-byte parts over a warp's lanes");
  static_assert(BN % KPS == 0 && R >= 1 && R <= 8, "BN a multiple of a block step's keys; 1 to 8 rows");
  float* qs = reinterpret_cast<float*>(smem);  // [R][D]
  float* ss = qs + R * D;                      // [R][BN]
  float* red = ss + R * BN;                    // [WARPS][R][D]
  float* rm = red + ATTN_DECODE_WARPS * R * D;  // [R] running max
  float* rl = rm + R;                           // [R] running sum
  float* ra = rl + R;                           // [R] this tile's rescale factor
  int* last = reinterpret_cast<int*>(ra + R);

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, sub = lane / LPK, part = lane % LPK;
  const i64 group = L.heads / L.kv_heads;
  const i64 plane = pid / chunks, c = pid % chunks;  // plane: batch * kv_heads + kv head
  const i64 b = plane / L.kv_heads, g = plane % L.kv_heads;
  const i64 n_begin = c * chunk, n_end = imin(sk, n_begin + chunk);
  const T* kp = k + L.k0 + b * L.k[0] + g * L.k[1];
  const T* vp = v + L.v0 + b * L.v[0] + g * L.v[1];
  // Row r is query row r % sq of head g * group + r / sq (sq <= R: 32-bit
  // arithmetic, none of it in the loops over keys).
  const int rows = (int)sq;
  auto q_row = [&](int r) { return L.q0 + b * L.q[0] + (g * group + r / rows) * L.q[1] + (r % rows) * L.q[2]; };
  auto o_row = [&](int r) { return b * L.o[0] + (g * group + r / rows) * L.o[1] + (r % rows) * L.o[2]; };
  // Key j is visible to row r iff j <= limit[r] (causal: aligned to the end).
  i64 limit[R];
#pragma unroll
  for (int r = 0; r < R; ++r) limit[r] = CAUSAL ? (i64)(r % rows) + sk - sq : sk - 1;
  const bool kvec = ((reinterpret_cast<unsigned long long>(kp) | (unsigned long long)(L.k[2] * sizeof(T))) & 15) == 0;
  const bool vvec = ((reinterpret_cast<unsigned long long>(vp) | (unsigned long long)(L.v[2] * sizeof(T))) & 15) == 0;

  // The chunk's k and v lines into L2, all in flight at once.
  constexpr int LINES = (D * int(sizeof(T)) + 127) / 128;
  for (i64 e = tid; e < (n_end - n_begin) * LINES; e += ATTN_DECODE_THREADS) {
    const i64 j = n_begin + e / LINES, off = (e % LINES) * (128 / int(sizeof(T)));
    asm volatile("prefetch.global.L2 [%0];" ::"l"(kp + j * L.k[2] + off));
    asm volatile("prefetch.global.L2 [%0];" ::"l"(vp + j * L.v[2] + off));
  }
  for (int e = tid; e < R * D; e += ATTN_DECODE_THREADS) qs[e] = widen(q[q_row(e / D) + e % D]);
  if (tid < R) rm[tid] = -inf<float>(), rl[tid] = 0.f;
  float acc[R][EPL];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int e = 0; e < EPL; ++e) acc[r][e] = 0.f;
  __syncthreads();

  for (i64 n0 = n_begin; n0 < n_end; n0 += BN) {
    const int nb = (int)imin(BN, n_end - n0), steps = (nb + KPS - 1) / KPS * KPS;
    // Scores: key n0 + t + warp * KPW + sub, this lane's EPL elements.
#pragma unroll 4
    for (int t = 0; t < steps; t += KPS) {
      const int jj = t + warp * KPW + sub;
      float kx[EPL];
      if (jj < nb) load_row_part<T, EPL>(kp + (n0 + jj) * L.k[2] + part * EPL, kvec, kx);
      else
#pragma unroll
        for (int e = 0; e < EPL; ++e) kx[e] = 0.f;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float dot = 0.f;
#pragma unroll
        for (int e = 0; e < EPL; ++e) dot = fmaf(qs[r * D + part * EPL + e], kx[e], dot);
        dot = group_sum<LPK>(dot);
        if (part == 0 && jj < nb) ss[r * BN + jj] = n0 + jj <= limit[r] ? scale * dot : -inf<float>();
      }
    }
    __syncthreads();
    // The online softmax over the tile, a warp a row.
    for (int r = warp; r < R; r += ATTN_DECODE_WARPS) {
      float m = -inf<float>();
      for (int j = lane; j < nb; j += 32) m = nan_max(m, ss[r * BN + j]);
#pragma unroll
      for (int off = 16; off > 0; off /= 2) m = nan_max(m, __shfl_xor_sync(0xffffffffu, m, off));
      const float m_old = rm[r], m_new = nan_max(m_old, m);
      float sum = 0.f;
      for (int j = lane; j < nb; j += 32) {
        const float s = ss[r * BN + j];
        const float p = m_new == -inf<float>() || s == -inf<float>() ? 0.f : exp2f((s - m_new) * LOG2E);
        ss[r * BN + j] = p;
        sum += p;
      }
      sum = group_sum<32>(sum);
      if (lane == 0) {
        const float alpha = m_old == -inf<float>() ? 0.f : exp2f((m_old - m_new) * LOG2E);
        ra[r] = alpha, rm[r] = m_new, rl[r] = rl[r] * alpha + sum;
      }
    }
    __syncthreads();
    // p v into this thread's accumulators.
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float alpha = ra[r];
#pragma unroll
      for (int e = 0; e < EPL; ++e) acc[r][e] *= alpha;
    }
#pragma unroll 4
    for (int t = 0; t < steps; t += KPS) {
      const int jj = t + warp * KPW + sub;
      if (jj >= nb) continue;
      float vx[EPL];
      load_row_part<T, EPL>(vp + (n0 + jj) * L.v[2] + part * EPL, vvec, vx);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float p = ss[r * BN + jj];
#pragma unroll
        for (int e = 0; e < EPL; ++e) acc[r][e] = fmaf(p, vx[e], acc[r][e]);
      }
    }
    __syncthreads();
  }

  // The warp's keys summed (lanes of one part across subs), then the warps'.
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      float x = acc[r][e];
#pragma unroll
      for (int off = LPK; off < 32; off *= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
      if (sub == 0) red[(warp * R + r) * D + part * EPL + e] = x;
    }
  __syncthreads();
  for (int e = tid; e < R * D; e += ATTN_DECODE_THREADS) {
    float x = 0.f;
#pragma unroll
    for (int w = 0; w < ATTN_DECODE_WARPS; ++w) x += red[w * R * D + e];
    red[e] = x;  // (warp 0's slot: each element read and written by this thread alone)
  }

  // o = acc / sum; lse = max + ln sum (-inf where a row saw no key).
  auto finish = [&](int r, int d, float acc_rd, float m, float l) {
    o[o_row(r) + d] = narrow<T>(l == 0.f ? 0.f : acc_rd / l);
    if (LSE && d == 0) lse[(b * L.heads + g * group + r / rows) * sq + r % rows] = l == 0.f ? -inf<float>() : m + logf(l);
  };
  if (chunks == 1) {
    __syncthreads();
    for (int e = tid; e < R * D; e += ATTN_DECODE_THREADS) finish(e / D, e % D, red[e], rm[e / D], rl[e / D]);
    return;
  }

  // Partials to the workspace; the plane's last program combines them.
  const i64 planes = batch * L.kv_heads;
  unsigned int* counters = reinterpret_cast<unsigned int*>(ws);
  float* part_o = reinterpret_cast<float*>(ws + (planes * 4 + 255) / 256 * 256);  // [programs][R][D]
  float* part_ml = part_o + planes * chunks * R * D;                               // [programs][R][2]
  for (int e = tid; e < R * D; e += ATTN_DECODE_THREADS) __stcg(part_o + pid * R * D + e, red[e]);
  if (tid < R) __stcg(part_ml + (pid * R + tid) * 2, rm[tid]), __stcg(part_ml + (pid * R + tid) * 2 + 1, rl[tid]);
  __threadfence();  // (release: the partials before the count)
  __syncthreads();
  if (tid == 0) *last = atomicAdd(counters + plane, 1u) == unsigned(chunks - 1);
  __syncthreads();
  if (!*last) return;
  __threadfence();  // (acquire: every chunk's partials after the count)
  // Per row: the chunks' max M, each chunk's factor e^(m_c - M) (in ss,
  // chunks <= BN) and the total sum, a warp a row.
  const float* ml0 = part_ml + plane * chunks * R * 2;
  for (int r = warp; r < R; r += ATTN_DECODE_WARPS) {
    float m = -inf<float>();
    for (i64 cc = lane; cc < chunks; cc += 32) m = nan_max(m, __ldcg(ml0 + (cc * R + r) * 2));
#pragma unroll
    for (int off = 16; off > 0; off /= 2) m = nan_max(m, __shfl_xor_sync(0xffffffffu, m, off));
    float sum = 0.f;
    for (i64 cc = lane; cc < chunks; cc += 32) {
      const float mc = __ldcg(ml0 + (cc * R + r) * 2), lc = __ldcg(ml0 + (cc * R + r) * 2 + 1);
      const float f = mc == -inf<float>() ? 0.f : exp2f((mc - m) * LOG2E);
      ss[r * BN + cc] = f;
      sum += lc * f;
    }
    sum = group_sum<32>(sum);
    if (lane == 0) rm[r] = m, rl[r] = sum;
  }
  __syncthreads();
  // Four elements a thread, sixteen chunks' loads in flight.
  const float4* o0 = reinterpret_cast<const float4*>(part_o + plane * chunks * R * D);
  for (int e4 = tid; e4 < R * D / 4; e4 += ATTN_DECODE_THREADS) {
    const int r = e4 * 4 / D;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 16
    for (int cc = 0; cc < (int)chunks; ++cc) {
      const float f = ss[r * BN + cc];
      const float4 y = __ldcg(o0 + cc * (R * D / 4) + e4);
      x.x = fmaf(f, y.x, x.x), x.y = fmaf(f, y.y, x.y), x.z = fmaf(f, y.z, x.z), x.w = fmaf(f, y.w, x.w);
    }
    const int d = e4 * 4 % D;
    finish(r, d, x.x, rm[r], rl[r]), finish(r, d + 1, x.y, rm[r], rl[r]);
    finish(r, d + 2, x.z, rm[r], rl[r]), finish(r, d + 3, x.w, rm[r], rl[r]);
  }
  if (tid == 0) counters[plane] = 0u;  // for the next launch
}

}  // namespace tsr
