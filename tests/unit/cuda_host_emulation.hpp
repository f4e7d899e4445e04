// The CUDA a device block uses, emulated on the host, so that a block's
// logic (fragment layouts, pipelines, barriers, masks) runs in CI without a
// GPU: a thread block is THREADS std::threads sharing a barrier; warp
// collectives (ldmatrix, mma.sync, shuffles) meet in per-warp slots between
// two warp barriers; cp.async is a synchronous copy, and a warpgroup MMA
// (wgmma) completes when issued, reading shared memory through its
// descriptors as the tensor cores do (128-byte swizzle on the address
// bits). Only what device/gpu/tessera_attention_grad_mma.cuh and
// tessera_attention_grad_wgmma.cuh call is here. A tensor-core product sums
// its 16 terms in f32 in k order (the hardware's order differs; the tests
// compare against a double reference with a tolerance). Include it before
// the block's file, in one translation unit.
#pragma once
#include <barrier>
#include <cmath>
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
#define TSR_HOST_EMULATION 1

typedef long long i64;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
struct uint4 {
  u32 x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
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

// ---- warpgroup MMA (sm_90a) ----------------------------------------------------------------
// Shared-memory matrix descriptor with the 128-byte swizzle (as on the device).
inline u64 smem_desc(u32 addr, u32 lbo, u32 sbo) {
  return u64((addr & 0x3FFFF) >> 4) | (u64(lbo >> 4) << 16) | (u64(sbo >> 4) << 32) | (u64(1) << 62);
}
inline void wgmma_fence() {}
inline void wgmma_commit() {}
template <int N, int R>
inline void wgmma_wait(float (&)[R]) {}
inline void fence_proxy_async() {}

// Where a descriptor puts an element: the 128-byte swizzle XORs address
// bits 4-6 with bits 7-9. K-major (rows m, k contiguous; 8-row groups SBO
// apart) and MN-major (k rows of 64 m / n; 8-k groups SBO apart, 64-wide
// column atoms LBO apart).
inline u32 swizzled(u32 a) { return a ^ (((a >> 7) & 7) << 4); }
inline u32 desc_start(u64 d) { return u32(d & 0x3FFF) << 4; }
inline u32 desc_lbo(u64 d) { return u32((d >> 16) & 0x3FFF) << 4; }
inline u32 desc_sbo(u64 d) { return u32((d >> 32) & 0x3FFF) << 4; }
template <class T>
float kmajor_at(u64 d, int m, int k) {
  u16 x;
  std::memcpy(&x, shared(swizzled(desc_start(d) + (m / 8) * desc_sbo(d) + (m % 8) * 128 + 2 * k)), 2);
  return widen(T{x});
}
template <class T>
float mnmajor_at(u64 d, int k, int n) {
  u16 x;
  std::memcpy(
      &x,
      shared(swizzled(desc_start(d) + (n / 64) * desc_lbo(d) + (k / 8) * desc_sbo(d) + (k % 8) * 128 + 2 * (n % 64))),
      2);
  return widen(T{x});
}
// The accumulator fragment of a 64 x N product: thread (warp w of its
// warpgroup, lane l) holds d[4j + e] = element (16w + l/4 + 8(e/2), 8j + 2(l%4) + e%2).
inline int acc_row(int e) { return 16 * ((emu::thread_index >> 5) & 3) + emu::lane() / 4 + 8 * (e >> 1); }
inline int acc_col(int j, int e) { return 8 * j + 2 * (emu::lane() % 4) + (e & 1); }

// D[64 x 64] (=|+=) A[64 x 16] B[16 x 64], both K-major in smem.
template <class T>
inline void wgmma_ss_n64(float (&d)[32], u64 da, u64 db, int scale_d) {
  for (int j = 0; j < 8; ++j)
    for (int e = 0; e < 4; ++e) {
      float acc = scale_d ? d[4 * j + e] : 0.f;
      for (int k = 0; k < 16; ++k) acc += kmajor_at<T>(da, acc_row(e), k) * kmajor_at<T>(db, acc_col(j, e), k);
      d[4 * j + e] = acc;
    }
}

}  // namespace mma_detail

namespace attn_detail {
// D[64 x D] += A[64 x 16] (registers, the m16n8k16 A fragment of the
// warp's 16 rows) B[16 x D] (MN-major in smem).
template <class T, int D>
inline void wgmma_pv(float (&d)[D / 2], u32 a0, u32 a1, u32 a2, u32 a3, u64 db) {
  const int l = emu::lane();
  u32* mine = emu::warp().words[l];
  mine[0] = a0, mine[1] = a1, mine[2] = a2, mine[3] = a3;
  __syncwarp();
  const auto& w = emu::warp().words;
  auto A = [&](int row, int k) {
    return mma_detail::half<T>(w[(row % 8) * 4 + (k % 8) / 2][(row >= 8) + 2 * (k >= 8)], k % 2);
  };
  for (int j = 0; j < D / 8; ++j)
    for (int e = 0; e < 4; ++e) {
      float acc = d[4 * j + e];
      for (int k = 0; k < 16; ++k)
        acc += A(l / 4 + 8 * (e >> 1), k) * mma_detail::mnmajor_at<T>(db, k, mma_detail::acc_col(j, e));
      d[4 * j + e] = acc;
    }
  __syncwarp();
}
template <int N>
inline void keep(u32 (&)[N]) {}
// 2^x with results below the smallest normal flushed to 0 (ex2.approx.ftz).
inline float ex2(float x) {
  const float y = std::exp2(x);
  return y < 1.17549435e-38f ? 0.f : y;
}
// Two f32 rounded to T, packed: lo in bits 0-15.
template <class T>
inline u32 pack2(float lo, float hi) {
  return u32(narrow<T>(lo).bits) | u32(narrow<T>(hi).bits) << 16;
}
}  // namespace attn_detail
}  // namespace tsr
