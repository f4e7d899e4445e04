// H200 probe: layer_norm 32768x4096 bf16 (the evidence case short of 3.7 TB/s)
// as Tessera emits it, next to hand-written variants of its one-row program,
// timed in interleaved rounds with CUDA events. Nothing here is product code:
// a variant that wins becomes a tile op / schedule change in src/.
//   nvcc -arch=sm_90a -std=c++17 -O3 -o probe probe.cu && ./probe
#include <cstdio>
#include <vector>
#include <algorithm>
#include "lib.cuh"
#include "emitted.cuh"
#include "masked_370e4a8.cuh"

using tsr::i64;
constexpr int R = 32768, C = 4096;

// (mean, M2) of the row in one block reduction (Chan et al.'s pairwise
// update): a thread's E lanes two-pass in registers, then a butterfly over
// equal counts in a form both partners compute bitwise alike, then the 8 warps
// as a fixed tree in every thread.
__device__ __forceinline__ float2 chan_combine(float2 a, float2 b, float n) {
  const float d = b.x - a.x;
  return make_float2(0.5f * (a.x + b.x), (a.y + b.y) + (0.5f * n) * (d * d));
}
template <int N> __device__ __forceinline__ float2 reduce_meanvar(const tsr::tile<float, N>& t) {
  constexpr int EL = tsr::tile<float, N>::E;
  float s = t.v[0];
#pragma unroll
  for (int i = 1; i < EL; ++i) s += t.v[i];
  float2 r = make_float2(s * (1.0f / EL), 0.f);
#pragma unroll
  for (int i = 0; i < EL; ++i) { const float d = t.v[i] - r.x; r.y = fmaf(d, d, r.y); }
  float n = EL;
#pragma unroll
  for (int off = 16; off >= 1; off /= 2) {
    const float2 o = make_float2(__shfl_xor_sync(~0u, r.x, off), __shfl_xor_sync(~0u, r.y, off));
    r = chan_combine(r, o, n);
    n *= 2;
  }
  __shared__ float2 wr[8];
  if ((threadIdx.x & 31) == 0) wr[threadIdx.x / 32] = r;
  __syncthreads();
  float2 a0 = chan_combine(wr[0], wr[1], n), a1 = chan_combine(wr[2], wr[3], n);
  float2 a2 = chan_combine(wr[4], wr[5], n), a3 = chan_combine(wr[6], wr[7], n);
  a0 = chan_combine(a0, a1, 2 * n); a2 = chan_combine(a2, a3, 2 * n);
  return chan_combine(a0, a2, 4 * n);  // one reduction a row: the slots are not reused
}

// x read without allocating in L1 (streamed once), so the weights stay there.
template <int N> __device__ __forceinline__ tsr::tile<float, N> load_stream(const tsr::bf16_t* p) {
  tsr::tile<float, N> r;
#pragma unroll
  for (int c = 0; c < tsr::tile<float, N>::P; ++c) {
    uint4 u;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p + tsr::lane0<N>(c)));
    const tsr::bf16_t* s = reinterpret_cast<const tsr::bf16_t*>(&u);
#pragma unroll
    for (int v = 0; v < 8; ++v) r.v[c * 8 + v] = tsr::widen(s[v]);
  }
  return r;
}

template <bool CHAN, bool STREAM, bool EARLY_W>
__device__ __forceinline__ void ln_row(const tsr::bf16_t* x, const tsr::bf16_t* w, const tsr::bf16_t* b,
                                       tsr::bf16_t* y) {
  const i64 row = blockIdx.x;
  tsr::prefetch(x + tsr::imin(row + 512, i64(R - 1)) * C, C);
  const tsr::tile<float, C> v = STREAM ? load_stream<C>(x + row * C) : tsr::load<float, C>(x + row * C);
  uint4 wr[2], br[2];  // raw bf16 weights, read before the reduction (EARLY_W)
  if constexpr (EARLY_W) {
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      wr[c] = __ldg(reinterpret_cast<const uint4*>(w + tsr::lane0<C>(c)));
      br[c] = __ldg(reinterpret_cast<const uint4*>(b + tsr::lane0<C>(c)));
    }
  }
  float mean, var;
  if constexpr (CHAN) {
    const float2 mv = reduce_meanvar(v);
    mean = mv.x;
    var = mv.y / float(C);
  } else {
    mean = tsr::reduce_lanes_sum(v) / float(C);
    const tsr::tile<float, C> d = tsr::fn_sub(v, tsr::full<float, C>(mean));
    var = tsr::reduce_lanes_sum(tsr::fn_mul(d, d)) / float(C);
  }
  const float rs = rsqrtf(var + 1e-5f);
  tsr::tile<float, C> wt, bt;
  if constexpr (EARLY_W) {
#pragma unroll
    for (int c = 0; c < 2; ++c)
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        wt.v[c * 8 + e] = tsr::widen(reinterpret_cast<const tsr::bf16_t*>(&wr[c])[e]);
        bt.v[c * 8 + e] = tsr::widen(reinterpret_cast<const tsr::bf16_t*>(&br[c])[e]);
      }
  } else {
    wt = tsr::load<float, C>(w);
    bt = tsr::load<float, C>(b);
  }
  tsr::tile<float, C> o;
#pragma unroll
  for (int i = 0; i < tsr::tile<float, C>::E; ++i) o.v[i] = (v.v[i] - mean) * rs * wt.v[i] + bt.v[i];
  tsr::store(y + row * C, o);
}

#define VARIANT(NAME, MIN_BLOCKS, ...)                                                                       \
  extern "C" __global__ void __launch_bounds__(256, MIN_BLOCKS) NAME(const tsr::bf16_t* __restrict__ x,                  \
                                                         const tsr::bf16_t* __restrict__ w,                  \
                                                         const tsr::bf16_t* __restrict__ b, tsr::bf16_t* y) { \
    ln_row<__VA_ARGS__>(x, w, b, y);                                                                         \
  }
VARIANT(ln_twopass, 1, false, false, false)  // the baseline's math, hand-written (a check on the harness)
VARIANT(ln_chan, 1, true, false, false)
VARIANT(ln_chan_stream, 1, true, true, false)
VARIANT(ln_twopass_stream, 1, false, true, false)
VARIANT(ln_chan_early_w, 1, true, false, true)
VARIANT(ln_chan_stream_early_w, 1, true, true, true)
VARIANT(ln_twopass_8, 8, false, false, false)  // 32 registers: 8 blocks an SM
VARIANT(ln_chan_8, 8, true, false, false)
VARIANT(ln_chan_stream_8, 8, true, true, false)

__global__ void fill(tsr::bf16_t* p, i64 n, unsigned seed, float lo, float hi) {
  for (i64 i = blockIdx.x * i64(blockDim.x) + threadIdx.x; i < n; i += i64(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    p[i] = tsr::narrow<tsr::bf16_t>(lo + (hi - lo) * float(h & 0xffffff) / 16777216.f);
  }
}
__global__ void maxdiff(const tsr::bf16_t* a, const tsr::bf16_t* b, i64 n, float* out) {
  float m = 0;
  for (i64 i = blockIdx.x * i64(blockDim.x) + threadIdx.x; i < n; i += i64(gridDim.x) * blockDim.x)
    m = fmaxf(m, fabsf(tsr::widen(a[i]) - tsr::widen(b[i])));
  atomicMax(reinterpret_cast<int*>(out), __float_as_int(m));
}

typedef void (*kfn)(const tsr::bf16_t*, const tsr::bf16_t*, const tsr::bf16_t*, tsr::bf16_t*);
int main() {
  struct V { const char* name; kfn f; std::vector<float> us; };
  std::vector<V> vs = {{"emitted", ln_emitted}, {"masked (370e4a8)", ln_masked_370e4a8}, {"twopass (hand)", ln_twopass}, {"chan", ln_chan},
                       {"chan+stream", ln_chan_stream}, {"twopass+stream", ln_twopass_stream},
                       {"chan+early_w", ln_chan_early_w}, {"chan+stream+early_w", ln_chan_stream_early_w},
                       {"twopass, 8 blocks/SM", ln_twopass_8}, {"chan, 8 blocks/SM", ln_chan_8},
                       {"chan+stream, 8/SM", ln_chan_stream_8}};
  tsr::bf16_t *x, *w, *b, *y, *ref;
  cudaMalloc(&x, sizeof(tsr::bf16_t) * R * C); cudaMalloc(&y, sizeof(tsr::bf16_t) * R * C);
  cudaMalloc(&ref, sizeof(tsr::bf16_t) * R * C); cudaMalloc(&w, 2 * C); cudaMalloc(&b, 2 * C);
  fill<<<1024, 256>>>(x, i64(R) * C, 7, -2.f, 2.f); fill<<<16, 256>>>(w, C, 8, 0.5f, 1.5f);
  fill<<<16, 256>>>(b, C, 9, -0.5f, 0.5f);
  float* d; cudaMalloc(&d, 4);
  ln_emitted<<<R, 256>>>(x, w, b, ref);
  for (auto& v : vs) {
    cudaFuncAttributes a; cudaFuncGetAttributes(&a, v.f);
    cudaMemset(d, 0, 4); cudaMemset(y, 0xff, sizeof(tsr::bf16_t) * R * C);
    v.f<<<R, 256>>>(x, w, b, y); maxdiff<<<1024, 256>>>(y, ref, i64(R) * C, d);
    float h; cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost);
    printf("%-22s regs %3d  max |diff| vs emitted %.3g\n", v.name, a.numRegs, h);
  }
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int round = 0; round < 12; ++round)
    for (auto& v : vs)
      for (int rep = 0; rep < 5; ++rep) {
        cudaEventRecord(e0); v.f<<<R, 256>>>(x, w, b, y); cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1);
        if (round > 1) v.us.push_back(ms * 1000);
      }
  const double bytes = 2.0 * R * C * 2 + 2.0 * C * 2;
  for (auto& v : vs) {
    std::sort(v.us.begin(), v.us.end());
    const float med = v.us[v.us.size() / 2];
    printf("%-22s median %8.1f us  %.3f TB/s  (min %.1f, n %zu)\n", v.name, med, bytes / med / 1e6, v.us[0], v.us.size());
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
