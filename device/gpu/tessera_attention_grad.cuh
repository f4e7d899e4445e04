// Tessera CUDA attention backward block (tile.attention_grad), embedded after
// the tile library into kernels that contain it. EXPERIMENTAL (the schedule
// takes it only with TESSERA_EXPERIMENTAL=attention_grad_cuda): a plain
// CUDA-core form in f32, compiled here with NVRTC but not yet run on a GPU.
//
// The programs and formulas are the CPU block's (device/cpu/
// tessera_attention_grad.hpp, the two-program form): program p below
// batch * kv_heads * ceil(sk / BN) is a key program (dk, dv of BN keys of a kv
// head, over every row of its heads that sees them), the rest query programs
// (dq of BM rows). Nothing is accumulated across blocks: deterministic.
// A block of ATTN_GRAD_THREADS threads keeps, in shared memory (f32, rows
// padded by one word against bank conflicts), the key block's k and v, the
// row block's q and do, and P and dS; each thread owns a fixed set of (key or
// row, d) accumulators and of (row, key) pairs. Pairs a row cannot see are
// never read (their P and dS are 0 and the sums skip them).

namespace tsr {

constexpr int ATTN_GRAD_THREADS = 256;

template <int D, int BM, int BN>
struct attn_grad_smem {
  float k[BN][D + 1], v[BN][D + 1], q[BM][D + 1], g[BM][D + 1];
  float p[BM][BN + 1], ds[BM][BN + 1];
  float delta[BM], lse2[BM];
};

template <class T, int D, int BM, int BN, bool CAUSAL>
struct attn_grad_block {
  using S = attn_grad_smem<D, BM, BN>;
  S& s;
  i64 sq, sk;
  float scale;

  // Row i sees keys [0, lim(i)).
  __device__ i64 lim(i64 i) const {
    const i64 x = CAUSAL ? (sk < i + 1 + sk - sq ? sk : i + 1 + sk - sq) : sk;
    return x < 0 ? 0 : x;
  }

  // k and v rows [n0, n0 + nb) of one kv plane (zero past nb).
  __device__ void load_keys(const T* k, const T* v, i64 n0, int nb) {
    for (int e = threadIdx.x; e < BN * D; e += ATTN_GRAD_THREADS) {
      const int j = e / D, d = e % D;
      s.k[j][d] = j < nb ? widen(k[(n0 + j) * D + d]) : 0.f;
      s.v[j][d] = j < nb ? widen(v[(n0 + j) * D + d]) : 0.f;
    }
  }

  // q and do rows [m0, m0 + rows) of one query plane, delta = do.o, lse in log2 units.
  __device__ void load_rows(const T* q, const T* o, const T* g, const float* lse, i64 m0, int rows) {
    for (int e = threadIdx.x; e < BM * D; e += ATTN_GRAD_THREADS) {
      const int i = e / D, d = e % D;
      s.q[i][d] = i < rows ? widen(q[(m0 + i) * D + d]) : 0.f;
      s.g[i][d] = i < rows ? widen(g[(m0 + i) * D + d]) : 0.f;
    }
    for (int i = threadIdx.x; i < BM; i += ATTN_GRAD_THREADS) {
      float acc = 0.f;
      if (i < rows)
        for (int d = 0; d < D; ++d) acc = fmaf(widen(g[(m0 + i) * D + d]), widen(o[(m0 + i) * D + d]), acc);
      s.delta[i] = acc;
      s.lse2[i] = i < rows ? lse[m0 + i] * 1.4426950408889634f : 0.f;
    }
  }

  // P and dS of the loaded rows against the loaded keys (0 where a row cannot see the key).
  __device__ void pairs(i64 m0, int rows, i64 n0, int nb) {
    const float c = scale * 1.4426950408889634f;
    for (int e = threadIdx.x; e < BM * BN; e += ATTN_GRAD_THREADS) {
      const int i = e / BN, j = e % BN;
      float p = 0.f, ds = 0.f;
      if (i < rows && j < nb && n0 + j < lim(m0 + i)) {
        float dot = 0.f, dp = 0.f;
        for (int d = 0; d < D; ++d) {
          dot = fmaf(s.q[i][d], s.k[j][d], dot);
          dp = fmaf(s.g[i][d], s.v[j][d], dp);
        }
        p = exp2f(dot * c - s.lse2[i]);
        ds = p * (dp - s.delta[i]);
      }
      s.p[i][j] = p;
      s.ds[i][j] = ds;
    }
  }

  // A key program: dk and dv of keys [n0, n0 + nb) of kv plane kv over query planes [qp, qp + group).
  __device__ void keys(const T* q, const T* k, const T* v, const T* o, const T* g, const float* lse, T* dk, T* dv,
                       i64 kv, i64 qp, i64 group, i64 n0, int nb) {
    constexpr int E = (BN * D + ATTN_GRAD_THREADS - 1) / ATTN_GRAD_THREADS;
    float dk_acc[E], dv_acc[E];
    for (int r = 0; r < E; ++r) dk_acc[r] = dv_acc[r] = 0.f;
    load_keys(k + kv * sk * D, v + kv * sk * D, n0, nb);
    const i64 first = CAUSAL ? (n0 + sq - sk > 0 ? n0 + sq - sk : 0) : 0;  // the first row that sees key n0
    for (i64 h = qp; h < qp + group; ++h)
      for (i64 m0 = first / BM * BM; m0 < sq; m0 += BM) {
        const int rows = int(sq - m0 < BM ? sq - m0 : BM);
        __syncthreads();  // the last chunk's q, do, P and dS are read
        load_rows(q + h * sq * D, o + h * sq * D, g + h * sq * D, lse + h * sq, m0, rows);
        __syncthreads();
        pairs(m0, rows, n0, nb);
        __syncthreads();
        for (int r = 0; r < E; ++r) {
          const int e = threadIdx.x + r * ATTN_GRAD_THREADS;
          if (e >= BN * D) break;
          const int j = e / D, d = e % D;
          // key j's rows: those at or past n0 + j + sq - sk (causal), in the chunk
          i64 i0 = CAUSAL ? n0 + j + sq - sk - m0 : 0;
          for (int i = int(i0 < 0 ? 0 : i0); i < rows; ++i) {
            dv_acc[r] = fmaf(s.p[i][j], s.g[i][d], dv_acc[r]);
            dk_acc[r] = fmaf(s.ds[i][j], s.q[i][d], dk_acc[r]);
          }
        }
      }
    for (int r = 0; r < E; ++r) {
      const int e = threadIdx.x + r * ATTN_GRAD_THREADS;
      if (e >= BN * D) break;
      const int j = e / D, d = e % D;
      if (j >= nb) continue;
      dk[(kv * sk + n0 + j) * D + d] = narrow<T>(dk_acc[r] * scale);
      dv[(kv * sk + n0 + j) * D + d] = narrow<T>(dv_acc[r]);
    }
  }

  // A query program: dq of rows [m0, m0 + rows) of query plane qp against kv plane kv.
  __device__ void queries(const T* q, const T* k, const T* v, const T* o, const T* g, const float* lse, T* dq, i64 qp,
                          i64 kv, i64 m0, int rows) {
    constexpr int E = (BM * D + ATTN_GRAD_THREADS - 1) / ATTN_GRAD_THREADS;
    float acc[E];
    for (int r = 0; r < E; ++r) acc[r] = 0.f;
    load_rows(q + qp * sq * D, o + qp * sq * D, g + qp * sq * D, lse + qp * sq, m0, rows);
    const i64 kend = lim(m0 + rows - 1);
    for (i64 n0 = 0; n0 < kend; n0 += BN) {
      const int nb = int(kend - n0 < BN ? kend - n0 : BN);
      __syncthreads();  // the last block's k, P and dS are read
      load_keys(k + kv * sk * D, v + kv * sk * D, n0, nb);
      __syncthreads();
      pairs(m0, rows, n0, nb);
      __syncthreads();
      for (int r = 0; r < E; ++r) {
        const int e = threadIdx.x + r * ATTN_GRAD_THREADS;
        if (e >= BM * D) break;
        const int i = e / D, d = e % D;
        if (i >= rows) continue;
        const i64 seen = lim(m0 + i) - n0;
        const int n = int(seen < 0 ? 0 : seen < nb ? seen : nb);
        for (int j = 0; j < n; ++j) acc[r] = fmaf(s.ds[i][j], s.k[j][d], acc[r]);
      }
    }
    for (int r = 0; r < E; ++r) {
      const int e = threadIdx.x + r * ATTN_GRAD_THREADS;
      if (e >= BM * D) break;
      const int i = e / D, d = e % D;
      if (i < rows) dq[(qp * sq + m0 + i) * D + d] = narrow<T>(acc[r] * scale);
    }
  }
};

// One program (a block of ATTN_GRAD_THREADS threads) of the backward pass;
// smem holds attn_grad_smem<D, BM, BN>.
template <class T, int D, int BM, int BN, bool CAUSAL, bool ONE_PASS>
__device__ void attention_grad_program(unsigned char* smem, const T* q, const T* k, const T* v, const T* o,
                                       const T* g, const float* lse, T* dq, T* dk, T* dv, i64 program, i64 batch,
                                       i64 heads, i64 kv_heads, i64 sq, i64 sk, double scale) {
  static_assert(!ONE_PASS, "the CUDA attention backward block has the two-program form only");
  using Block = attn_grad_block<T, D, BM, BN, CAUSAL>;
  Block blk{*reinterpret_cast<typename Block::S*>(smem), sq, sk, float(scale)};
  const i64 group = kv_heads ? heads / kv_heads : 1, kb = (sk + BN - 1) / BN, keys = batch * kv_heads * kb;
  if (program < keys) {
    const i64 kv = program / kb, n0 = program % kb * BN;
    blk.keys(q, k, v, o, g, lse, dk, dv, kv, kv / kv_heads * heads + kv % kv_heads * group, group, n0,
             int(sk - n0 < BN ? sk - n0 : BN));
    return;
  }
  const i64 mb = (sq + BM - 1) / BM, x = program - keys, qp = x / mb, m0 = x % mb * BM;
  blk.queries(q, k, v, o, g, lse, dq, qp, qp / heads * kv_heads + qp % heads / group, m0,
              int(sq - m0 < BM ? sq - m0 : BM));
}

}  // namespace tsr
