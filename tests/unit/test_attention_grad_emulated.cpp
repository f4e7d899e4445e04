// The CUDA tensor-core attention backward blocks (mma.sync:
// device/gpu/tessera_attention_grad_mma.cuh; warpgroup MMA:
// tessera_attention_grad_wgmma.cuh) run on the host through
// cuda_host_emulation.hpp, against a double reference of docs/semantics.md's
// formulas: causal and not, grouped heads, several blocks with tails, Sq !=
// Sk, rows that see no key, NaN and inf where masked pairs would multiply
// them, f16, and pointers off 16-byte alignment (element copies). What the
// GPU alone can show (speed, the hardware's own layouts) is the GPU suite's
// (tests/gpu/test_cuda.cpp, CudaAttentionGrad).
#include "cuda_host_emulation.hpp"
// (the tile library's and the matmul block's pieces it uses come from the
// emulation; tests/CMakeLists.txt lets the host compiler skip nvcc's unroll
// pragmas)
#include "../../device/gpu/tessera_attention_grad_mma.cuh"
#include "../../device/gpu/tessera_attention_grad_wgmma.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

namespace {

struct Case {
  int b, h, hkv, sq, sk, d;
  bool causal;
  int nonfinite_do = 0, nonfinite_k = 0;  // NaN / inf written into do, NaN into k
  bool unaligned = false;
  std::string name() const {
    return "b" + std::to_string(b) + "h" + std::to_string(h) + "kv" + std::to_string(hkv) + "_q" + std::to_string(sq) +
           "k" + std::to_string(sk) + "d" + std::to_string(d) + (causal ? "_causal" : "") +
           (nonfinite_do ? "_special_do" : "") + (nonfinite_k ? "_special_k" : "") + (unaligned ? "_unaligned" : "");
  }
};

template <class T>
struct Problem {
  Case c;
  std::vector<T> q, k, v, o, g;
  std::vector<float> lse;
  std::vector<double> dq, dk, dv;  // the reference
  double scale;

  int visible(int i) const { return c.causal ? std::clamp(i + 1 + c.sk - c.sq, 0, c.sk) : c.sk; }
  int kv_plane(int p) const { return p / c.h * c.hkv + p % c.h / (c.h / c.hkv); }
  static double w(const std::vector<T>& a, size_t i) { return tsr::widen(a[i]); }

  explicit Problem(const Case& cs) : c(cs), scale(1 / std::sqrt(double(cs.d))) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1, 1);
    auto fill = [&](size_t n) {
      std::vector<T> x(n);
      for (T& e : x) e = tsr::narrow<T>(u(rng));
      return x;
    };
    const size_t rows = size_t(c.b) * c.h * c.sq, keys = size_t(c.b) * c.hkv * c.sk;
    q = fill(rows * c.d), k = fill(keys * c.d), v = fill(keys * c.d), g = fill(rows * c.d);
    o.resize(q.size());
    lse.resize(rows);
    forward();
    for (int n = 0; n < c.nonfinite_do; ++n) g[rng() % g.size()] = tsr::narrow<T>(n % 2 ? INFINITY : NAN);
    for (int n = 0; n < c.nonfinite_k; ++n) k[rng() % k.size()] = tsr::narrow<T>(NAN);
    backward();
  }

  void forward() {  // o and lse, for realistic probabilities
    for (int p = 0; p < c.b * c.h; ++p)
      for (int i = 0; i < c.sq; ++i) {
        const size_t qi = (size_t(p) * c.sq + i) * c.d;
        std::vector<double> s(visible(i));
        double m = -INFINITY, l = 0;
        for (int j = 0; j < visible(i); ++j) {
          double a = 0;
          for (int e = 0; e < c.d; ++e) a += w(q, qi + e) * w(k, (size_t(kv_plane(p)) * c.sk + j) * c.d + e);
          m = std::max(m, s[j] = a * scale);
        }
        for (double& x : s) l += x = std::exp(x - m);
        for (int e = 0; e < c.d; ++e) {
          double a = 0;
          for (int j = 0; j < visible(i); ++j) a += s[j] * w(v, (size_t(kv_plane(p)) * c.sk + j) * c.d + e);
          o[qi + e] = tsr::narrow<T>(visible(i) ? float(a / l) : 0.f);
        }
        lse[size_t(p) * c.sq + i] = visible(i) ? float(m + std::log(l)) : -INFINITY;
      }
  }

  void backward() {  // over visible pairs only
    dq.assign(q.size(), 0), dk.assign(k.size(), 0), dv.assign(v.size(), 0);
    for (int p = 0; p < c.b * c.h; ++p)
      for (int i = 0; i < c.sq; ++i) {
        const size_t qi = (size_t(p) * c.sq + i) * c.d;
        double delta = 0;
        for (int e = 0; e < c.d; ++e) delta += w(g, qi + e) * w(o, qi + e);
        for (int j = 0; j < visible(i); ++j) {
          const size_t kj = (size_t(kv_plane(p)) * c.sk + j) * c.d;
          double s = 0, dp = 0;
          for (int e = 0; e < c.d; ++e) s += w(q, qi + e) * w(k, kj + e), dp += w(g, qi + e) * w(v, kj + e);
          const double pr = std::exp(s * scale - lse[size_t(p) * c.sq + i]), ds = pr * (dp - delta);
          for (int e = 0; e < c.d; ++e) {
            dq[qi + e] += scale * ds * w(k, kj + e);
            dk[kj + e] += scale * ds * w(q, qi + e);
            dv[kj + e] += pr * w(g, qi + e);
          }
        }
      }
  }
};

enum class Block { Mma, Wgmma };

// Runs every program of the block; the results start as NaN so that an
// element no program writes shows.
template <class T, int D, bool CAUSAL>
void run_block(Block kind, const Problem<T>& pr, std::vector<T>& dq, std::vector<T>& dk, std::vector<T>& dv) {
  const Case& c = pr.c;
  const int off = c.unaligned ? 1 : 0;  // one element in: no pointer 16-byte aligned
  auto shifted = [&](const std::vector<T>& x) {
    std::vector<T> y(x.size() + 1);
    std::copy(x.begin(), x.end(), y.begin() + off);
    return y;
  };
  const std::vector<T> q = shifted(pr.q), k = shifted(pr.k), v = shifted(pr.v), o = shifted(pr.o), g = shifted(pr.g);
  std::vector<T> gq(q.size(), T{0x7fc1}), gk(k.size(), T{0x7fc1}), gv(v.size(), T{0x7fc1});
  const int programs = c.b * c.hkv * ((c.sk + 127) / 128) + c.b * c.h * ((c.sq + 127) / 128);
  for (int p = 0; p < programs; ++p) {
    const bool mma = kind == Block::Mma;
    static_assert(tsr::attn_grad_mma::THREADS == tsr::attn_grad_wgmma::THREADS);
    emu::Block blk(tsr::attn_grad_mma::THREADS,
                   mma ? tsr::attention_grad_mma_smem_bytes(D) : tsr::attention_grad_wgmma_smem_bytes(D));
    std::fill(blk.smem.begin(), blk.smem.end(), 0xcd);  // garbage where nothing was loaded
    emu::run_block(blk, tsr::attn_grad_mma::THREADS, [&] {
      (mma ? tsr::attention_grad_mma_program<T, D, CAUSAL>
           : tsr::attention_grad_wgmma_program<T, D, CAUSAL>)(blk.smem.data(), q.data() + off, k.data() + off,
                                                              v.data() + off, o.data() + off, g.data() + off,
                                                              pr.lse.data(), gq.data() + off, gk.data() + off,
                                                              gv.data() + off, p, c.b, c.h, c.hkv, c.sq, c.sk,
                                                              pr.scale);
    });
  }
  dq.assign(gq.begin() + off, gq.begin() + off + pr.q.size());
  dk.assign(gk.begin() + off, gk.begin() + off + pr.k.size());
  dv.assign(gv.begin() + off, gv.begin() + off + pr.v.size());
}

// Finite reference elements within 2% of the largest (16-bit p, ds and
// results), non-finite ones matched by non-finite results.
template <class T>
void expect_close(const char* what, const std::vector<T>& got, const std::vector<double>& want) {
  double big = 0;
  for (double x : want)
    if (std::isfinite(x)) big = std::max(big, std::fabs(x));
  size_t bad = 0, first = SIZE_MAX;
  for (size_t i = 0; i < want.size(); ++i) {
    const double x = tsr::widen(got[i]);
    const bool ok = std::isfinite(want[i]) ? std::isfinite(x) && std::fabs(x - want[i]) <= 0.02 * big
                                           : !std::isfinite(x);
    if (!ok && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": first at " << first << ": got " << (bad ? tsr::widen(got[first]) : 0.0) << ", want "
                     << (bad ? want[first] : 0.0) << " (largest " << big << ")";
}

template <class T>
void check(Block kind, const Case& c) {
  const Problem<T> pr(c);
  std::vector<T> dq, dk, dv;
  if (c.d == 64)
    c.causal ? run_block<T, 64, true>(kind, pr, dq, dk, dv) : run_block<T, 64, false>(kind, pr, dq, dk, dv);
  else c.causal ? run_block<T, 128, true>(kind, pr, dq, dk, dv) : run_block<T, 128, false>(kind, pr, dq, dk, dv);
  expect_close("dq", dq, pr.dq);
  expect_close("dk", dk, pr.dk);
  expect_close("dv", dv, pr.dv);
}

class AttentionGradEmulated : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionGradEmulated, MmaBf16MatchesDoubleReference) { check<tsr::bf16_t>(Block::Mma, GetParam()); }
TEST_P(AttentionGradEmulated, WgmmaBf16MatchesDoubleReference) { check<tsr::bf16_t>(Block::Wgmma, GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cases, AttentionGradEmulated,
                         ::testing::Values(Case{1, 2, 1, 40, 40, 64, false},    // one step, tails
                                           Case{1, 2, 1, 160, 200, 128, true},  // two blocks each way, causal
                                           Case{2, 2, 1, 140, 260, 64, false},  // batches, grouped heads, sk > sq
                                           Case{1, 4, 1, 150, 50, 64, true},    // rows that see no key
                                           Case{1, 8, 1, 9, 70, 64, true},      // MQA, short rows
                                           Case{1, 2, 1, 200, 200, 128, true, 6,
                                                0},  // NaN, inf in do: the key programs' exact path
                                           Case{1, 1, 1, 260, 260, 64, true, 0, 6},   // NaN in k: the query programs'
                                           Case{1, 1, 1, 200, 200, 64, false, 4, 4},  // not causal: IEEE everywhere
                                           Case{1, 2, 1, 150, 140, 128, true, 2, 2, true}),  // element copies
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name(); });

TEST(AttentionGradEmulated, F16MatchesDoubleReference) {
  check<tsr::f16_t>(Block::Mma, Case{1, 2, 1, 130, 150, 64, true});
  check<tsr::f16_t>(Block::Wgmma, Case{1, 2, 1, 130, 150, 64, true});
}

}  // namespace
