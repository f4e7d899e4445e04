// The CUDA a device block uses, emulated on the host, so that a block's
// logic (fragment layouts, pipelines, barriers, masks) runs in CI without a
// GPU: a thread block is THREADS std::threads sharing a barrier; warp
// collectives (ldmatrix, mma.sync, shuffles) meet in per-warp slots between
// two warp barriers; cp.async is a synchronous copy. Only what
// device/gpu/tessera_attention_grad_mma.cuh calls is here. The tensor-core
// product sums its 16 terms in f32 in k order (the hardware's order differs;
// the tests compare against a double reference with a tolerance). Include it
// before the block's file, in one translation unit.
#pragma once
#include <barrier>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "support/half.hpp"

#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__

typedef long long i64;
typedef unsigned short u16;
typedef unsigned int u32;
struct uint4 {
  u32 x, y, z, w;
};

namespace emu {

// One emulated thread block: its barriers, shared memory and warp slots.
struct Block {
  explicit Block(int threads, size_t smem_bytes) : all(threads), smem(smem_bytes + 16), warps(threads / 32) {
    for (auto& w : warps) w.bar = std::make_unique<std::barrier<>>(32);
  }
  std::barrier<> all;
  std::vector<unsigned char> smem;
  int any = 0;  // __syncthreads_or's vote
  struct Warp {
    std::unique_ptr<std::barrier<>> bar;
    u32 words[32][6];
    float values[32];
  };
  std::vector<Warp> warps;
};

inline thread_local Block* block = nullptr;
inline thread_local unsigned thread_index = 0;

// Runs body() as every thread of one block.
inline void run_block(Block& b, int threads, const std::function<void()>& body) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      block = &b;
      thread_index = unsigned(t);
      body();
    });
  for (auto& t : pool) t.join();
}

inline int lane() { return int(thread_index & 31); }
inline Block::Warp& warp() { return block->warps[thread_index >> 5]; }

}  // namespace emu

struct emulated_thread_index {
  operator unsigned() const { return emu::thread_index; }
};
struct {
  emulated_thread_index x;
} static const threadIdx;

inline void __syncthreads() { emu::block->all.arrive_and_wait(); }
inline bool __syncthreads_or(bool p) {
  __syncthreads();
  if (p) __atomic_store_n(&emu::block->any, 1, __ATOMIC_SEQ_CST);
  __syncthreads();
  const bool r = __atomic_load_n(&emu::block->any, __ATOMIC_SEQ_CST);
  __syncthreads();
  if (threadIdx.x == 0) emu::block->any = 0;
  __syncthreads();
  return r;
}
inline void __syncwarp() { emu::warp().bar->arrive_and_wait(); }
inline float __shfl_xor_sync(unsigned, float x, int mask) {
  emu::warp().values[emu::lane()] = x;
  __syncwarp();
  const float r = emu::warp().values[emu::lane() ^ mask];
  __syncwarp();
  return r;
}
template <class P>
inline P __ldg(const P* p) {
  return *p;
}
inline u32 __float_as_uint(float f) { return tessera::float_to_bits(f); }
inline float __uint_as_float(u32 u) { return tessera::bits_to_float(u); }
inline unsigned long long __cvta_generic_to_shared(const void* p) {
  return static_cast<unsigned long long>(static_cast<const unsigned char*>(p) - emu::block->smem.data());
}

namespace tsr {

struct f16_t {
  u16 bits;
};
struct bf16_t {
  u16 bits;
};
inline float widen(float x) { return x; }
inline float widen(bf16_t h) { return tessera::bf16_to_float(h.bits); }
inline float widen(f16_t h) { return tessera::f16_to_float(h.bits); }
template <class S>
S narrow(float x);
template <>
inline bf16_t narrow<bf16_t>(float x) {
  return bf16_t{tessera::float_to_bf16(x)};
}
template <>
inline f16_t narrow<f16_t>(float x) {
  return f16_t{tessera::float_to_f16(x)};
}

namespace mma_detail {

inline u32 smem_u32(const void* p) { return static_cast<u32>(__cvta_generic_to_shared(p)); }
inline unsigned char* shared(u32 a) { return emu::block->smem.data() + a; }
inline void cp_async16(u32 dst, const void* src, int src_bytes) {
  std::memset(shared(dst), 0, 16);
  std::memcpy(shared(dst), src, size_t(src_bytes));
}
inline void cp_async_commit() {}
template <int N>
inline void cp_async_wait() {}

inline u32 word(u32 lo_addr, u32 hi_addr) {
  u16 lo, hi;
  std::memcpy(&lo, shared(lo_addr), 2);
  std::memcpy(&hi, shared(hi_addr), 2);
  return u32(lo) | u32(hi) << 16;
}
// Four 8x8 b16 matrices, matrix m's rows at lanes 8m..8m+7's addresses;
// lane l gets row l/4, columns 2(l%4) and 2(l%4)+1 (transposed: column l/4,
// rows 2(l%4) and 2(l%4)+1).
inline void ldsm(u32 (&r)[4], u32 addr, bool trans) {
  const int l = emu::lane();
  emu::warp().words[l][0] = addr;
  __syncwarp();
  auto row = [&](int m, int i) { return emu::warp().words[8 * m + i][0]; };  // matrix m's row i
  for (int m = 0; m < 4; ++m)
    r[m] = trans ? word(row(m, 2 * (l % 4)) + 2 * (l / 4), row(m, 2 * (l % 4) + 1) + 2 * (l / 4))
                 : word(row(m, l / 4) + 4 * (l % 4), row(m, l / 4) + 4 * (l % 4) + 2);
  __syncwarp();
}
inline void ldsm_x4(u32 (&r)[4], u32 addr) { ldsm(r, addr, false); }
inline void ldsm_x4_trans(u32 (&r)[4], u32 addr) { ldsm(r, addr, true); }

template <class T>
float half(u32 w, int h) {
  return widen(T{u16(h ? w >> 16 : w & 0xffffu)});
}
// d (16x8, f32) += a (16x16, row) * b (16x8, col) with PTX's m16n8k16
// fragment layouts.
template <class T>
inline void mma16816(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  const int l = emu::lane();
  u32* mine = emu::warp().words[l];
  mine[0] = a[0], mine[1] = a[1], mine[2] = a[2], mine[3] = a[3], mine[4] = b0, mine[5] = b1;
  __syncwarp();
  const auto& w = emu::warp().words;
  auto A = [&](int row, int k) { return half<T>(w[(row % 8) * 4 + (k % 8) / 2][(row >= 8) + 2 * (k >= 8)], k % 2); };
  auto B = [&](int k, int n) { return half<T>(w[n * 4 + (k % 8) / 2][4 + (k >= 8)], k % 2); };
  float out[4];
  for (int e = 0; e < 4; ++e) {
    const int row = l / 4 + (e >= 2 ? 8 : 0), n = 2 * (l % 4) + (e & 1);
    float acc = d[e];
    for (int k = 0; k < 16; ++k) acc += A(row, k) * B(k, n);
    out[e] = acc;
  }
  __syncwarp();
  for (int e = 0; e < 4; ++e) d[e] = out[e];
}

}  // namespace mma_detail
}  // namespace tsr
