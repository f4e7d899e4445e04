// Tessera CPU attention backward library, embedded after the attention block
// library (tessera_attention.hpp: its simd, exp2, widen_n and narrow_n) into
// every CPU kernel that contains tile.attention_grad.
//
// With p_ij = exp(scale q_i.k_j - lse_i) over the keys row i sees,
// delta_i = do_i.o_i and ds_ij = p_ij (do_i.v_j - delta_i):
//   dq_i = scale sum_j ds_ij k_j,  dk_j = scale sum_i ds_ij q_i,  dv_j = sum_i p_ij do_i
// (the sums over i run over every query head of k_j's group). Nothing is
// accumulated across programs, so results do not depend on threads:
//   a key program (batch, kv head, block of BN keys) writes dk and dv of its
//   keys, walking every query row of the group's heads that sees them, BM rows
//   at a time;
//   a query program (batch, head, block of BM rows) writes dq of its rows,
//   walking their visible keys BN at a time.
// Both recompute the probabilities from lse (FlashAttention-2's backward).
// Program p < key_programs is a key program, the rest query programs, in the
// order tile.attention_grad's documentation states.
// ONE_PASS instead gives a program a whole kv head (batch, kv head): its key
// blocks in order, each against every row of the group's heads, adding dq
// into the program's own buffer: five products a pair instead of seven, q
// and do packed once, k and v once. The choice is the schedule's (enough kv
// heads to keep the threads busy, and the buffer small).
//
// Masking: row i sees keys j < lim(i) = min(sk, i + 1 + sk - sq) (causal) or
// sk. A pair a row cannot see is never read: the products over keys or rows
// run over each row's (each key's) visible range, so a NaN in a q, k or v the
// pair cannot see stays out, as in the forward block.
//
// Products are register-blocked rank-1 updates (madd_tile): C[r][:] += a[r][t]
// b[t][:], t ascending; scores and do.v over head_dim, dq over keys, dk and dv
// over rows (P and dS transposed first). Order of operations is fixed by BM,
// BN, D and the vector width (FMAs explicit, -ffp-contract=off): run to run
// the results are the same bits.
#include <memory>

namespace tsr {

namespace attn {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

// C rows [MR] x NV vectors: C[r] += sum_{t0 <= t < t1} a[r * LDA + t] * b[t * LDB], t ascending.
template <class A, int MR, int NV, int LDA, int LDB, int LDC>
inline void madd_tile(A* c, const A* a, const A* b, int t0, int t1) {
  using S = simd<A>;
  using V = typename S::v;
  constexpr int W = S::W;
  V acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int u = 0; u < NV; ++u) acc[r][u] = S::ld(c + r * LDC + u * W);
#pragma GCC unroll 2
  for (int t = t0; t < t1; ++t) {
    V x[NV];
#pragma GCC unroll 16
    for (int u = 0; u < NV; ++u) x[u] = S::ld(b + t * LDB + u * W);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const V s = S::splat(a[r * LDA + t]);
#pragma GCC unroll 16
      for (int u = 0; u < NV; ++u) acc[r][u] = S::fma(s, x[u], acc[r][u]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int u = 0; u < NV; ++u) S::st(c + r * LDC + u * W, acc[r][u]);
}

// C[r][0, NC * W) += sum_{lo[r] <= t < hi[r]} a[r][t] b[t] for rows r < rows:
// the range all MR rows of a tile share through madd_tile, then each row's
// own rest (t ascending in each part).
template <class A, int NC, int LDA, int LDB, int LDC>
inline void madd(A* c, const A* a, const A* b, int rows, const int* lo, const int* hi) {
  using S = simd<A>;
  constexpr int W = S::W;
  constexpr int NVC = cmin(NC, kRegs / 8 > 0 ? kRegs / 8 : 1);  // vectors of C a pass
  constexpr int MR = cmin(8, kRegs * 3 / 4 / NVC);
  auto columns = [&](auto mr, int r0, int t0, int t1) {
    constexpr int R = decltype(mr)::value;
    for (int u0 = 0; u0 + NVC <= NC; u0 += NVC)
      madd_tile<A, R, NVC, LDA, LDB, LDC>(c + r0 * LDC + u0 * W, a + r0 * LDA, b + u0 * W, t0, t1);
    if constexpr (NC % NVC) {
      constexpr int u0 = NC - NC % NVC;
      madd_tile<A, R, NC % NVC, LDA, LDB, LDC>(c + r0 * LDC + u0 * W, a + r0 * LDA, b + u0 * W, t0, t1);
    }
  };
  for (int r0 = 0; r0 < rows; r0 += MR) {
    const int rn = rows - r0 < MR ? rows - r0 : MR;
    int t0 = lo[r0], t1 = hi[r0];
    for (int r = 1; r < rn; ++r) t0 = lo[r0 + r] > t0 ? lo[r0 + r] : t0, t1 = hi[r0 + r] < t1 ? hi[r0 + r] : t1;
    if (t1 < t0) t1 = t0;
    if (rn == MR) columns(std::integral_constant<int, MR>{}, r0, t0, t1);
    else
      for (int r = r0; r < r0 + rn; ++r) columns(std::integral_constant<int, 1>{}, r, t0, t1);
    for (int r = r0; r < r0 + rn; ++r) {  // the row's own rest, below and above the shared range
      A* cr = c + r * LDC;
      auto rest = [&](int from, int to) {
        for (int t = from; t < to; ++t) {
          const typename S::v s = S::splat(a[r * LDA + t]);
          for (int u = 0; u < NC; ++u) S::st(cr + u * W, S::fma(s, S::ld(b + t * LDB + u * W), S::ld(cr + u * W)));
        }
      };
      rest(lo[r], t0 < hi[r] ? t0 : hi[r]);
      rest(t1 > lo[r] ? t1 : lo[r], hi[r]);
    }
  }
}

template <class T, int D, int BM, int BN>
struct grad_config {
  using A = typename attention_acc<T>::type;
  static constexpr int W = simd<A>::W;
  static constexpr int DV = (D + W - 1) / W, DP = DV * W;  // head_dim in vectors
  static constexpr int NV = (BN + W - 1) / W, NP = NV * W;  // keys of a block in vectors
  static constexpr int MP = round_up(BM, W);                // rows of a block, padded
  static constexpr int L = NP > MP ? NP : MP;
  struct alignas(64) scratch {
    A kr[NP * DP], kt[DP * NP], vt[DP * NP];  // the key block: rows, and k^T, v^T
    A q[MP * DP], g[MP * DP];                 // the row block's q and do
    A p[MP * NP], ds[MP * NP];                // P, dS (rows x keys)
    A pt[NP * MP], dst[NP * MP];              // their transposes (key programs)
    A da[L * DP], db[L * DP];                 // dk and dv (key programs), dq (query programs)
    A delta[MP], lse2[MP];
    int zero[L], dims[L];                     // [0, D): the range of a product over head_dim
    int seen[MP];                             // keys of the block each row sees: [0, seen[r])
    int first[NP], rows_end[NP];              // rows of the block that see each key
  };
};

// 2^x for any x: the library's exp2 up to 64 (its vector form scales by 2^n
// with n well inside the exponent's range), std::exp2 for the rare larger x
// (an lse that is not its row's).
template <class A>
inline typename simd<A>::v exp2_any(typename simd<A>::v x) {
  using S = simd<A>;
  typename S::v y = S::exp2(x > S::splat(64) ? S::splat(0) : x);
  for (int i = 0; i < S::W; ++i)
    if (x[i] > A(64)) y[i] = std::exp2(x[i]);
  return y;
}

template <class T, int D, int BM, int BN, bool CAUSAL>
struct grad_block {
  // Rows of the block being worked on: packed q and do, delta, lse (log2 units).
  struct RowsView {
    const typename grad_config<T, D, BM, BN>::A *q, *g, *delta, *lse2;
  };
  using C = grad_config<T, D, BM, BN>;
  using A = typename C::A;
  using S = simd<A>;
  using V = typename S::v;
  static constexpr int W = C::W, DV = C::DV, DP = C::DP, NV = C::NV, NP = C::NP, MP = C::MP;

  typename C::scratch& s;
  i64 sq, sk;
  double scale;

  grad_block(typename C::scratch& s_, i64 sq_, i64 sk_, double scale_) : s(s_), sq(sq_), sk(sk_), scale(scale_) {
    for (int i = 0; i < C::L; ++i) s.zero[i] = 0, s.dims[i] = D;
  }

  // Row i sees keys [0, lim(i)).
  i64 lim(i64 i) const {
    const i64 x = CAUSAL ? imin(sk, i + 1 + sk - sq) : sk;
    return x < 0 ? i64(0) : x;
  }

  // Keys [n0, n0 + nb) of one kv plane: k^T and v^T, and k's rows with `rows`.
  void load_keys(const T* k, const T* v, i64 n0, int nb, bool rows) {
    A tmp[DP];
    for (int j = 0; j < NP; ++j) {
      for (int d = 0; d < DP; ++d) tmp[d] = 0;
      if (j < nb) widen_n(tmp, k + (n0 + j) * D, D);
      for (int d = 0; d < DP; ++d) s.kt[d * NP + j] = tmp[d];
      if (rows)
        for (int d = 0; d < DP; ++d) s.kr[j * DP + d] = tmp[d];
      if (j < nb) widen_n(tmp, v + (n0 + j) * D, D);
      for (int d = 0; d < DP; ++d) s.vt[d * NP + j] = tmp[d];
    }
  }

  // Rows [m0, m0 + rows) of one query plane packed into qp, gp (DP apart),
  // delta = do.o (d ascending) and lse in log2 units.
  static void pack_rows(const T* q, const T* o, const T* g, const A* lse, i64 m0, i64 rows, A* qp, A* gp, A* delta,
                        A* lse2) {
    A ov[DP];
    for (i64 r = 0; r < rows; ++r) {
      for (int d = D; d < DP; ++d) qp[r * DP + d] = gp[r * DP + d] = 0;
      widen_n(qp + r * DP, q + (m0 + r) * D, D);
      widen_n(gp + r * DP, g + (m0 + r) * D, D);
      widen_n(ov, o + (m0 + r) * D, D);
      A acc = 0;
      for (int d = 0; d < D; ++d)
        acc = sizeof(A) == 4 ? __builtin_fmaf(gp[r * DP + d], ov[d], acc) : __builtin_fma(gp[r * DP + d], ov[d], acc);
      delta[r] = acc;
      lse2[r] = A(double(lse[m0 + r]) * 0x1.71547652b82fep+0);
    }
  }
  RowsView load_rows(const T* q, const T* o, const T* g, const A* lse, i64 m0, int rows) {
    pack_rows(q, o, g, lse, m0, rows, s.q, s.g, s.delta, s.lse2);
    return {s.q, s.g, s.delta, s.lse2};
  }

  // P and dS of rows [m0, m0 + rows) against the loaded keys [n0, n0 + nb);
  // both are 0 past each row's visible keys [0, seen[r]).
  void probabilities(const RowsView& rv, i64 m0, int rows, i64 n0, int nb) {
    for (int r = 0; r < rows; ++r) {
      const i64 h = lim(m0 + r) - n0;
      s.seen[r] = int(h < 0 ? 0 : h > nb ? nb : h);
    }
    for (int i = 0; i < rows * NP; ++i) s.p[i] = s.ds[i] = 0;
    madd<A, NV, DP, NP, NP>(s.p, rv.q, s.kt, rows, s.zero, s.dims);   // q k^T
    madd<A, NV, DP, NP, NP>(s.ds, rv.g, s.vt, rows, s.zero, s.dims);  // do v^T
    const A c = A(scale * 0x1.71547652b82fep+0);                     // scale * log2(e)
    V lane;
    for (int x = 0; x < W; ++x) lane[x] = A(x);
    for (int r = 0; r < rows; ++r) {
      const V l2 = S::splat(rv.lse2[r]), dl = S::splat(rv.delta[r]), n = S::splat(A(s.seen[r]));
      for (int u = 0; u < NV; ++u) {
        const auto visible = lane + A(u * W) < n;
        const V p = exp2_any<A>(S::ld(s.p + r * NP + u * W) * c - l2);
        const V ds = p * (S::ld(s.ds + r * NP + u * W) - dl);
        S::st(s.p + r * NP + u * W, visible ? p : V{});
        S::st(s.ds + r * NP + u * W, visible ? ds : V{});
      }
    }
  }

  // A key program: dk and dv of keys [n0, n0 + nb) of kv plane `kv`, over
  // the query planes [qp, qp + group).
  void keys(const T* q, const T* k, const T* v, const T* o, const T* g, const A* lse, T* dk, T* dv, i64 kv, i64 qp,
            i64 group, i64 n0, int nb) {
    load_keys(k + kv * sk * D, v + kv * sk * D, n0, nb, false);
    for (int i = 0; i < NP * DP; ++i) s.da[i] = s.db[i] = 0;
    for (i64 h = qp; h < qp + group; ++h)
      for (i64 m0 = first_block(n0); m0 < sq; m0 += BM) {
        const int rows = int(imin(BM, sq - m0));
        const i64 plane = h * sq * D;
        key_pairs(load_rows(q + plane, o + plane, g + plane, lse + h * sq, m0, rows), m0, rows, n0, nb);
      }
    write_keys(dk, dv, kv, n0, nb);
  }

  // The first row block (BM-aligned) with a row that sees key n0.
  i64 first_block(i64 n0) const {
    const i64 first = CAUSAL ? (n0 + sq - sk > 0 ? n0 + sq - sk : 0) : 0;
    return first / BM * BM;
  }

  // The loaded key block against rows [m0, m0 + rows): P and dS, then dv +=
  // P^T do and dk += dS^T q into s.db and s.da.
  void key_pairs(const RowsView& rv, i64 m0, int rows, i64 n0, int nb) {
    probabilities(rv, m0, rows, n0, nb);
    for (int j = 0; j < nb; ++j) {  // rows see a growing prefix of keys: key j's rows are a suffix
      int r = 0;
      while (r < rows && s.seen[r] <= j) ++r;
      s.first[j] = r, s.rows_end[j] = rows;
      for (int i = 0; i < rows; ++i) s.pt[j * MP + i] = s.p[i * NP + j], s.dst[j * MP + i] = s.ds[i * NP + j];
    }
    madd<A, DV, MP, DP, DP>(s.db, s.pt, rv.g, nb, s.first, s.rows_end);   // dv += P^T do
    madd<A, DV, MP, DP, DP>(s.da, s.dst, rv.q, nb, s.first, s.rows_end);  // dk += dS^T q
  }

  // dk (scaled) and dv of the key block, rounded to T.
  void write_keys(T* dk, T* dv, i64 kv, i64 n0, int nb) {
    const A sc = A(scale);
    for (int j = 0; j < nb; ++j) {
      for (int d = 0; d < D; ++d) s.da[j * DP + d] *= sc;
      narrow_n(dk + (kv * sk + n0 + j) * D, s.da + j * DP, D);
      narrow_n(dv + (kv * sk + n0 + j) * D, s.db + j * DP, D);
    }
  }

  // A query program: dq of rows [m0, m0 + rows) of query plane `qp` against
  // kv plane `kv`.
  void queries(const T* q, const T* k, const T* v, const T* o, const T* g, const A* lse, T* dq, i64 qp, i64 kv,
               i64 m0, int rows) {
    const i64 plane = qp * sq * D;
    const RowsView rv = load_rows(q + plane, o + plane, g + plane, lse + qp * sq, m0, rows);
    for (int i = 0; i < MP * DP; ++i) s.da[i] = 0;
    const i64 kend = lim(m0 + rows - 1);
    for (i64 n0 = 0; n0 < kend; n0 += BN) {
      const int nb = int(imin(BN, kend - n0));
      load_keys(k + kv * sk * D, v + kv * sk * D, n0, nb, true);
      probabilities(rv, m0, rows, n0, nb);
      madd<A, DV, NP, DP, DP>(s.da, s.ds, s.kr, rows, s.zero, s.seen);  // dq += dS k
    }
    const A sc = A(scale);
    for (int r = 0; r < rows; ++r) {
      for (int d = 0; d < D; ++d) s.da[r * DP + d] *= sc;
      narrow_n(dq + plane + (m0 + r) * D, s.da + r * DP, D);
    }
  }

  // One pass over kv plane `kv` and its query planes [qp, qp + group): every
  // key block, each against every row block that sees it, dq added into a
  // buffer of the program's rows (key blocks in order) and written last.
  void plane(const T* q, const T* k, const T* v, const T* o, const T* g, const A* lse, T* dq, T* dk, T* dv, i64 kv,
             i64 qp, i64 group) {
    const i64 rows_all = group * sq;
    const std::unique_ptr<A[]> buf(new A[size_t(rows_all) * (3 * DP + 2)]);
    A *Q = buf.get(), *G = Q + rows_all * DP, *DQ = G + rows_all * DP, *delta = DQ + rows_all * DP,
      *lse2 = delta + rows_all;
    for (i64 h = 0; h < group; ++h)
      pack_rows(q + (qp + h) * sq * D, o + (qp + h) * sq * D, g + (qp + h) * sq * D, lse + (qp + h) * sq, 0, sq,
                Q + h * sq * DP, G + h * sq * DP, delta + h * sq, lse2 + h * sq);
    for (i64 i = 0; i < rows_all * DP; ++i) DQ[i] = 0;
    for (i64 n0 = 0; n0 < sk; n0 += BN) {
      const int nb = int(imin(BN, sk - n0));
      load_keys(k + kv * sk * D, v + kv * sk * D, n0, nb, true);
      for (int i = 0; i < NP * DP; ++i) s.da[i] = s.db[i] = 0;
      for (i64 h = 0; h < group; ++h)
        for (i64 m0 = first_block(n0); m0 < sq; m0 += BM) {
          const int rows = int(imin(BM, sq - m0));
          const i64 at = h * sq + m0;
          key_pairs({Q + at * DP, G + at * DP, delta + at, lse2 + at}, m0, rows, n0, nb);
          madd<A, DV, NP, DP, DP>(DQ + at * DP, s.ds, s.kr, rows, s.zero, s.seen);  // dq += dS k
        }
      write_keys(dk, dv, kv, n0, nb);
    }
    const A sc = A(scale);
    for (i64 h = 0; h < group; ++h)
      for (i64 i = 0; i < sq; ++i) {
        A* row = DQ + (h * sq + i) * DP;
        for (int d = 0; d < D; ++d) row[d] *= sc;
        narrow_n(dq + ((qp + h) * sq + i) * D, row, D);
      }
  }
};

#pragma GCC diagnostic pop

}  // namespace attn

// One program of the backward pass (the header says which programs there are).
template <class T, int D, int BM, int BN, bool CAUSAL, bool ONE_PASS>
void attention_grad_program(const T* q, const T* k, const T* v, const T* o, const T* g,
                            const typename attention_acc<T>::type* lse, T* dq, T* dk, T* dv, i64 program, i64 batch,
                            i64 heads, i64 kv_heads, i64 sq, i64 sk, double scale) {
  static_assert(D >= 1 && BM >= 1 && BN >= 1, "attention_grad_program: D, BM, BN >= 1");
  using Block = attn::grad_block<T, D, BM, BN, CAUSAL>;
  const std::unique_ptr<typename Block::C::scratch> scratch(new typename Block::C::scratch);
  Block blk(*scratch, sq, sk, scale);
  const i64 group = kv_heads ? heads / kv_heads : 1;
  if constexpr (ONE_PASS) {
    blk.plane(q, k, v, o, g, lse, dq, dk, dv, program, program / kv_heads * heads + program % kv_heads * group, group);
    return;
  }
  const i64 kb = (sk + BN - 1) / BN, keys = batch * kv_heads * kb;
  if (program < keys) {
    const i64 kv = program / kb, n0 = program % kb * BN;
    blk.keys(q, k, v, o, g, lse, dk, dv, kv, kv / kv_heads * heads + kv % kv_heads * group, group, n0,
             int(imin(BN, sk - n0)));
    return;
  }
  const i64 mb = (sq + BM - 1) / BM, x = program - keys, qp = x / mb, m0 = x % mb * BM;
  blk.queries(q, k, v, o, g, lse, dq, qp, qp / heads * kv_heads + qp % heads / group, m0, int(imin(BM, sq - m0)));
}

}  // namespace tsr
