// Tessera GPU device tile library, for CUDA (NVRTC) and HIP (clang-19, with
// TSR_HIP defined). Rendered kernels call only these functions; the renderer
// embeds this file (after defining TSR_THREADS and TSR_VEC for the kernel) at
// the top of every kernel source, so the kernel's SHA-256 covers every line
// the GPU compiler sees. The HIP differences are a few #ifdef TSR_HIP blocks:
// wavefronts of TSR_WAVE lanes, shuffles without masks, no PTX.
//
// A program is one thread block of TSR_THREADS threads, or (CUDA, with
// TSR_CLUSTER > 1) a thread-block cluster of TSR_CLUSTER such blocks, which
// then act as one block of TSR_CLUSTER*TSR_THREADS threads: thread t of the
// block of rank r in the cluster is program thread g = r*TSR_THREADS + t.
// A tile<T, N> is N lanes spread over the program: thread g holds, for each
// part c, the TSR_VEC contiguous lanes starting at c*G*TSR_VEC + g*TSR_VEC
// (G the program's threads), so a tile load is one coalesced vector load per
// part. Index math and scalars are computed by every thread alike; a scalar
// store is done by program thread 0. max/min propagate NaN (CUDA's
// fmaxf/fminf drop it).
#ifndef TSR_THREADS
#error "define TSR_THREADS (threads per program) before the tile library"
#endif
#ifndef TSR_VEC
#error "define TSR_VEC (contiguous lanes per thread) before the tile library"
#endif
#ifndef TSR_CLUSTER
#define TSR_CLUSTER 1
#endif
#if TSR_CLUSTER > 1 && defined(TSR_HIP)
#error "thread-block clusters (TSR_CLUSTER > 1) are CUDA-only"
#endif

namespace tsr {

typedef long long i64;
typedef unsigned char b8;  // an i1 value: 0 or 1
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

struct f16_t { u16 bits; };
struct bf16_t { u16 bits; };

// Threads of one program (all blocks of its cluster).
#define TSR_PROGRAM_THREADS (TSR_THREADS * TSR_CLUSTER)

template <class T, int N>
struct tile {
  static_assert(N % (TSR_PROGRAM_THREADS * TSR_VEC) == 0, "tile lanes must fill whole vectors on every thread");
  static constexpr int E = N / TSR_PROGRAM_THREADS;  // lanes per thread
  static constexpr int P = E / TSR_VEC;              // parts per thread
  T v[E];
};

#if TSR_CLUSTER > 1
// This block's rank in its cluster, and the cluster's index (the program id).
__device__ __forceinline__ u32 cluster_rank() {
  u32 r;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ u32 cluster_id() {
  u32 r;
  asm("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}
// The cluster barrier, split: arrive (release: this thread's earlier shared
// stores, remote ones too, become visible to threads that wait), then wait
// (acquire). Every thread of every block of the cluster arrives once a phase.
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }
// Program thread index of this thread.
__device__ __forceinline__ i64 program_thread() { return (i64)cluster_rank() * TSR_THREADS + threadIdx.x; }
#else
__device__ __forceinline__ i64 program_thread() { return threadIdx.x; }
#endif

template <class T> __device__ __forceinline__ T inf();
template <> __device__ __forceinline__ float inf<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double inf<double>() { return __longlong_as_double(0x7ff0000000000000ULL); }
template <class T> __device__ __forceinline__ T nan();
template <> __device__ __forceinline__ float nan<float>() { return __int_as_float(0x7fffffff); }
template <> __device__ __forceinline__ double nan<double>() { return __longlong_as_double(0x7fffffffffffffffULL); }
__device__ __forceinline__ i64 imin(i64 a, i64 b) { return a < b ? a : b; }

// First lane held by this thread in part c.
template <int N> __device__ __forceinline__ i64 lane0(int c) {
  return (i64)c * TSR_PROGRAM_THREADS * TSR_VEC + program_thread() * TSR_VEC;
}

template <class T, int N> __device__ __forceinline__ tile<T, N> full(T x) {
  tile<T, N> r;
#pragma unroll
  for (int i = 0; i < tile<T, N>::E; ++i) r.v[i] = x;
  return r;
}

// ---- scalar conversions ------------------------------------------------------
__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ double widen(double x) { return x; }
__device__ __forceinline__ float widen(bf16_t h) { return __uint_as_float(u32(h.bits) << 16); }
__device__ __forceinline__ float widen(f16_t h) {
  u32 sign = u32(h.bits & 0x8000u) << 16, em = h.bits & 0x7fffu;
  float f = __uint_as_float(em << 13) * 0x1p112f;  // exact for normals and subnormals
  u32 b = em >= 0x7c00u ? (0x7f800000u | (em << 13)) : __float_as_uint(f);
  return __uint_as_float(b | sign);
}
// Integers and i1 are stored as they are computed.
__device__ __forceinline__ int widen(int x) { return x; }
__device__ __forceinline__ i64 widen(i64 x) { return x; }
__device__ __forceinline__ b8 widen(b8 x) { return x; }
template <class S> __device__ __forceinline__ S narrow(int x) { return S(x); }
template <class S> __device__ __forceinline__ S narrow(i64 x) { return S(x); }
template <class S> __device__ __forceinline__ S narrow(b8 x) { return S(x); }
template <class S> __device__ __forceinline__ S narrow(float x);
template <class S> __device__ __forceinline__ S narrow(double x);
template <> __device__ __forceinline__ float narrow<float>(float x) { return x; }
template <> __device__ __forceinline__ double narrow<double>(double x) { return x; }
#ifndef TSR_HIP
// The hardware's round-to-nearest-even conversions (one cvt each; the f16
// one in software was ~18 instructions and a visible share of fused matmul
// epilogues). cvt gives the canonical NaN, so a NaN is fixed up to what the
// software form (and the CPU library) give: bf16 keeps the sign and the high
// payload bits, quieted; f16 is sign | 0x7e00.
template <> __device__ __forceinline__ bf16_t narrow<bf16_t>(float x) {
  u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  if (x != x) h = u16((__float_as_uint(x) >> 16) | 0x40u);
  return bf16_t{h};
}
template <> __device__ __forceinline__ f16_t narrow<f16_t>(float x) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  if (x != x) h = u16(((__float_as_uint(x) >> 16) & 0x8000u) | 0x7e00u);
  return f16_t{h};
}
#else  // HIP: the same roundings in software
template <> __device__ __forceinline__ bf16_t narrow<bf16_t>(float x) {
  u32 u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t{u16((u >> 16) | 0x40u)};
  return bf16_t{u16((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}
template <> __device__ __forceinline__ f16_t narrow<f16_t>(float x) {
  u32 b = __float_as_uint(x);
  u16 sign = u16((b >> 16) & 0x8000u);
  u32 a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return f16_t{u16(sign | 0x7e00u)};
  if (a >= 0x477ff000u) return f16_t{u16(sign | 0x7c00u)};
  if (a < 0x38800000u) {  // subnormal or zero in f16
    float s = __uint_as_float(a) * 0x1p24f;
    u32 q = u32(s);
    float rem = s - float(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
    return f16_t{u16(sign | q)};
  }
  u32 h = (((a >> 23) - 112) << 10) | ((a & 0x7fffffu) >> 13), rest = a & 0x1fffu;
  h += u32(rest > 0x1000u) | (u32(rest == 0x1000u) & h & 1u);
  return f16_t{u16(sign | h)};
}
#endif

// Narrowing from f64 (round_to on f64 lanes): to float rounding toward zero
// plus a sticky bit (round-to-odd), so the final f16/bf16 rounding is a single
// correct one (24 >= 11 + 2 bits).
__device__ __forceinline__ float to_float_odd(double x) {
  float f = __double2float_rz(x);
  return double(f) != x && x == x ? __uint_as_float(__float_as_uint(f) | 1u) : f;
}
template <> __device__ __forceinline__ float narrow<float>(double x) { return float(x); }
template <> __device__ __forceinline__ double narrow<double>(float x) { return x; }
template <> __device__ __forceinline__ bf16_t narrow<bf16_t>(double x) { return narrow<bf16_t>(to_float_odd(x)); }
template <> __device__ __forceinline__ f16_t narrow<f16_t>(double x) { return narrow<f16_t>(to_float_odd(x)); }

// ---- vector access ---------------------------------------------------------------
template <int BYTES> struct raw;
template <> struct raw<16> { typedef uint4 type; };
template <> struct raw<8> { typedef uint2 type; };
template <> struct raw<4> { typedef unsigned int type; };
template <> struct raw<2> { typedef unsigned short type; };
template <> struct raw<1> { typedef unsigned char type; };

// TSR_VEC elements of S at q into out (widened), one vector load when aligned.
template <class T, class S> __device__ __forceinline__ void load_part(const S* q, T* out) {
  constexpr int B = sizeof(S) * TSR_VEC;
  if constexpr (B <= 16 && (B & (B - 1)) == 0) {
    if ((reinterpret_cast<u64>(q) & (B - 1)) == 0) {  // uniform across the block
      union {
        typename raw<B>::type r;
        S s[TSR_VEC];
      } u;
      u.r = __ldg(reinterpret_cast<const typename raw<B>::type*>(q));
#pragma unroll
      for (int v = 0; v < TSR_VEC; ++v) out[v] = T(widen(u.s[v]));
      return;
    }
  }
#pragma unroll
  for (int v = 0; v < TSR_VEC; ++v) out[v] = T(widen(q[v]));
}

template <class T, int N, class S> __device__ __forceinline__ tile<T, N> load(const S* p) {
  tile<T, N> r;
#pragma unroll
  for (int c = 0; c < tile<T, N>::P; ++c) load_part<T>(p + lane0<N>(c), &r.v[c * TSR_VEC]);
  return r;
}

template <class T, int N, class S> __device__ __forceinline__ tile<T, N> load_masked(const S* p, i64 count, T other) {
  tile<T, N> r;
#pragma unroll
  for (int c = 0; c < tile<T, N>::P; ++c) {
    const i64 l = lane0<N>(c);
    if (l + TSR_VEC <= count) {
      load_part<T>(p + l, &r.v[c * TSR_VEC]);
    } else {
#pragma unroll
      for (int v = 0; v < TSR_VEC; ++v) r.v[c * TSR_VEC + v] = l + v < count ? T(widen(p[l + v])) : other;
    }
  }
  return r;
}

#if TSR_CLUSTER > 1
// ---- staged rows (persistent clusters) ---------------------------------------
// A persistent program (a cluster) handles rows row, row + num_programs, ...;
// `iter` counts them from 0. Each block's share of a row (for each part c the
// TSR_THREADS*TSR_VEC lanes at c*G*TSR_VEC + rank*TSR_THREADS*TSR_VEC, G the
// program's threads) is copied by the bulk copy engine into `stage` (part c
// at c*TSR_THREADS*TSR_VEC), completing on an mbarrier; the threads take
// their lanes from there into registers, and as soon as every thread has
// them the next row's copy is issued into the same buffer, so memory reads
// the next row while this one is reduced and written (on the H200, f32
// softmax 1024x262144: 3.60 TB/s against 2.72 with rows loaded by the
// threads themselves; bench/evidence/cuda/raw/probe-rows-staged-cluster-h200.log).
// Row starts and parts must be 16-byte aligned (the schedule checks it).
template <class T, int N, class S>
__device__ __forceinline__ tile<T, N> load_staged(S* stage, const S* p, i64 row, i64 rows, i64 row_stride, i64 iter) {
  constexpr int P = tile<T, N>::P;
  constexpr u32 SEG = TSR_THREADS * TSR_VEC, SEG_BYTES = SEG * sizeof(S), BYTES = P * SEG_BYTES;
  static_assert(SEG_BYTES % 16 == 0 && BYTES < (1u << 20), "bulk copies are 16-byte multiples, under 1 MiB a phase");
  __shared__ alignas(8) u64 full;
  const u32 bar = static_cast<u32>(__cvta_generic_to_shared(&full));
  const u32 dst = static_cast<u32>(__cvta_generic_to_shared(stage));
  const i64 share = (i64)cluster_rank() * SEG;
  auto issue = [&](i64 r) {  // one thread: the block's share of row r
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(BYTES) : "memory");
#pragma unroll
    for (int c = 0; c < P; ++c) {
      const S* src = p + r * row_stride + (i64)c * TSR_PROGRAM_THREADS * TSR_VEC + share;
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
              dst + u32(c) * SEG_BYTES),
          "l"(reinterpret_cast<u64>(src)), "r"(SEG_BYTES), "r"(bar)
          : "memory");
    }
  };
  if (iter == 0) {
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) issue(row);
  }
  u32 done = 0;
  do {
    asm volatile(
        "{\n.reg .pred q;\nmbarrier.try_wait.parity.shared::cta.b64 q, [%1], %2;\nselp.u32 %0, 1, 0, q;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(u32(iter & 1))
        : "memory");
  } while (!done);
  tile<T, N> t;
  constexpr int B = sizeof(S) * TSR_VEC;
#pragma unroll
  for (int c = 0; c < P; ++c) {
    union {
      typename raw<B>::type r;
      S s[TSR_VEC];
    } u;
    u.r = *reinterpret_cast<const typename raw<B>::type*>(stage + c * SEG + threadIdx.x * TSR_VEC);
#pragma unroll
    for (int v = 0; v < TSR_VEC; ++v) t.v[c * TSR_VEC + v] = T(widen(u.s[v]));
  }
  __syncthreads();  // every thread holds its lanes: the buffer may be refilled
  const i64 next = row + (i64)(gridDim.x / TSR_CLUSTER);  // this cluster's next row
  if (threadIdx.x == 0 && next < rows) {
    // The threads' reads (generic proxy) happen before the copy's writes (async proxy).
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    issue(next);
  }
  return t;
}
#endif

// Lane l reads p[addr[l]] (tessera.concat's operands); every thread its own lanes.
template <class T, int N, class S> __device__ __forceinline__ tile<T, N> gather(const S* p, const tile<i64, N>& addr) {
  tile<T, N> r;
#pragma unroll
  for (int i = 0; i < tile<T, N>::E; ++i) r.v[i] = T(widen(p[addr.v[i]]));
  return r;
}

// Lane l reads p[l * stride] (a transposed view); lanes from count on are 0.
template <class T, int N, class S> __device__ __forceinline__ tile<T, N> load_strided(const S* p, i64 stride, i64 count) {
  tile<T, N> r;
#pragma unroll
  for (int c = 0; c < tile<T, N>::P; ++c)
#pragma unroll
    for (int v = 0; v < TSR_VEC; ++v) {
      const i64 l = lane0<N>(c) + v;
      r.v[c * TSR_VEC + v] = l < count ? T(widen(p[l * stride])) : T(0);
    }
  return r;
}

// One element, widened; every thread loads it (a broadcast operand).
template <class T, class S> __device__ __forceinline__ T load1(const S* p) { return T(widen(*p)); }

template <class S, class T> __device__ __forceinline__ void store(S* p, T x) {
  if (program_thread() == 0) *p = narrow<S>(x);
}
// The bits of one lane of at most 4 bytes, as the low bits of a word.
template <class S> __device__ __forceinline__ u32 word_bits(S x) {
  if constexpr (sizeof(S) == 4) {
    union {
      S s;
      u32 w;
    } u;
    u.s = x;
    return u.w;
  } else if constexpr (sizeof(S) == 2) {
    union {
      S s;
      u16 h;
    } u;
    u.s = x;
    return u.h;
  } else {
    return u32(*reinterpret_cast<const unsigned char*>(&x));
  }
}

// TSR_VEC lanes narrowed to S at q, one vector store when aligned (2-byte
// element stores of bf16 outputs are otherwise a sixth of the write bandwidth).
// Lanes of up to 4 bytes are packed into words by hand and stored 16 bytes
// at a time: through a union of S[TSR_VEC] the compiler split 4 bf16 lanes
// into two 4-byte stores, each filling half of every sector it touched.
template <class S, class T> __device__ __forceinline__ void store_part(S* q, const T* in) {
  constexpr int B = sizeof(S) * TSR_VEC;
  if constexpr (sizeof(S) <= 4 && B >= 4 && (B & (B - 1)) == 0) {
    constexpr int W = B / 4, PER = 4 / int(sizeof(S)), CHUNK = W < 4 ? W : 4;
    if ((reinterpret_cast<u64>(q) & (4 * CHUNK - 1)) == 0) {  // uniform across the block
      u32 w[W];
#pragma unroll
      for (int i = 0; i < W; ++i) {
        w[i] = 0;
#pragma unroll
        for (int j = 0; j < PER; ++j) w[i] |= word_bits(narrow<S>(in[i * PER + j])) << (8 * int(sizeof(S)) * j);
      }
      u32* out = reinterpret_cast<u32*>(q);
#pragma unroll
      for (int i = 0; i < W; i += CHUNK) {
#ifndef TSR_HIP  // the PTX vector store itself: NVVM split even a uint2 store in two
        if constexpr (CHUNK == 4)
          asm volatile("st.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(out + i), "r"(w[i]), "r"(w[i + 1]), "r"(w[i + 2]),
                       "r"(w[i + 3])
                       : "memory");
        else if constexpr (CHUNK == 2)
          asm volatile("st.v2.u32 [%0], {%1, %2};" ::"l"(out + i), "r"(w[i]), "r"(w[i + 1]) : "memory");
        else
          out[i] = w[i];
#else
        if constexpr (CHUNK == 4)
          *reinterpret_cast<uint4*>(out + i) = make_uint4(w[i], w[i + 1], w[i + 2], w[i + 3]);
        else if constexpr (CHUNK == 2)
          *reinterpret_cast<uint2*>(out + i) = make_uint2(w[i], w[i + 1]);
        else
          out[i] = w[i];
#endif
      }
      return;
    }
  } else if constexpr (B <= 16 && (B & (B - 1)) == 0) {
    if ((reinterpret_cast<u64>(q) & (B - 1)) == 0) {  // uniform across the block
      union {
        typename raw<B>::type r;
        S s[TSR_VEC];
      } u;
#pragma unroll
      for (int v = 0; v < TSR_VEC; ++v) u.s[v] = narrow<S>(in[v]);
      *reinterpret_cast<typename raw<B>::type*>(q) = u.r;
      return;
    }
  }
#pragma unroll
  for (int v = 0; v < TSR_VEC; ++v) q[v] = narrow<S>(in[v]);
}
template <class S, class T, int N> __device__ __forceinline__ void store(S* p, const tile<T, N>& t) {
#pragma unroll
  for (int c = 0; c < tile<T, N>::P; ++c) store_part(p + lane0<N>(c), &t.v[c * TSR_VEC]);
}
template <class S, class T, int N> __device__ __forceinline__ void store_masked(S* p, i64 count, const tile<T, N>& t) {
#pragma unroll
  for (int c = 0; c < tile<T, N>::P; ++c) {
    if (lane0<N>(c) + TSR_VEC <= count) {
      store_part(p + lane0<N>(c), &t.v[c * TSR_VEC]);
      continue;
    }
#pragma unroll
    for (int v = 0; v < TSR_VEC; ++v)
      if (lane0<N>(c) + v < count) p[lane0<N>(c) + v] = narrow<S>(t.v[c * TSR_VEC + v]);
  }
}

// A read-soon hint (tile.prefetch): program thread 0 has the bulk copy engine
// fetch p[0, count) into L2, where the program that reads it later finds it
// (a bf16 row program holds few bytes in flight; its loads then hit L2).
// Skipped where the copy's rules fail (16-byte address and size, at most
// 1048560 bytes); nothing before sm_90 (no bulk copy engine) or on HIP.
template <class S> __device__ __forceinline__ void prefetch(const S* p, i64 count) {
#if !defined(TSR_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const u64 bytes = u64(count) * sizeof(S);
  if (program_thread() == 0 && count > 0 && bytes <= 1048560u && (bytes & 15u) == 0 &&
      (reinterpret_cast<u64>(p) & 15u) == 0)
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(u32(bytes)) : "memory");
#endif
}

// ---- transpose (tile.transpose) ---------------------------------------------------
// out[c, r] = in[r, c] for the TR x TC block at (r0, c0) of an R x C
// row-major matrix. The block goes through shared memory so that the reads
// (along c) and the writes (along r) are both coalesced; the padding column
// spreads a tile column over all banks. Every thread of the block takes part.
template <class T, int TR, int TC>
__device__ __forceinline__ void transpose_block(const T* __restrict__ in, T* __restrict__ out, i64 R, i64 C, i64 r0,
                                                i64 c0) {
  static_assert(TSR_THREADS % TR == 0 && TSR_THREADS % TC == 0, "the threads cover whole tile rows and columns");
  __shared__ T block[TR][TC + 1];
  const int t = threadIdx.x;
  const i64 c = c0 + t % TC;
#pragma unroll
  for (int i = t / TC; i < TR; i += TSR_THREADS / TC)
    if (r0 + i < R && c < C) block[i][t % TC] = in[(r0 + i) * C + c];
  __syncthreads();
  const i64 r = r0 + t % TR;
#pragma unroll
  for (int j = t / TR; j < TC; j += TSR_THREADS / TR)
    if (r < R && c0 + j < C) out[(c0 + j) * R + r] = block[t % TR][j];
}

// ---- combines ----------------------------------------------------------------------
template <class T> __device__ __forceinline__ T combine_sum(T a, T b) { return a + b; }
template <class T> __device__ __forceinline__ T combine_prod(T a, T b) { return a * b; }
// A NaN accumulator stays NaN; a NaN operand replaces it.
template <class T> __device__ __forceinline__ T combine_max(T a, T b) { return (a < b || b != b) ? b : a; }
template <class T> __device__ __forceinline__ T combine_min(T a, T b) { return (b < a || b != b) ? b : a; }
#ifndef TSR_HIP
// f32: PTX's max.NaN/min.NaN (sm_80+) return NaN when either input is NaN.
template <> __device__ __forceinline__ float combine_max<float>(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
template <> __device__ __forceinline__ float combine_min<float>(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
#endif  // HIP: the generic NaN-propagating selects above
template <class T> __device__ __forceinline__ T divf(T a, T b) { return a / b; }

#define TSR_TILE_OP(NAME)                                                                   \
  template <class T, int N> __device__ __forceinline__ tile<T, N> NAME(tile<T, N> a, const tile<T, N>& b) { \
    _Pragma("unroll") for (int i = 0; i < tile<T, N>::E; ++i) a.v[i] = NAME(a.v[i], b.v[i]);               \
    return a;                                                                               \
  }
TSR_TILE_OP(combine_sum)
TSR_TILE_OP(combine_prod)
TSR_TILE_OP(combine_max)
TSR_TILE_OP(combine_min)
TSR_TILE_OP(divf)
#undef TSR_TILE_OP

// ---- pointwise math ------------------------------------------------------------
// The CUDA math library (expf ... powf and the f64 forms; no __expf-style
// intrinsics, whose error is large). Same names and semantics as the CPU
// library; f64 sigmoid/silu/gelu/gelu_tanh are built the same way (see there),
// f32 ones in f32 (below). CUDA's erfc errs up to 5 ulp
// (CUDA C Programming Guide), so f64 gelu may exceed 4 ulp on the GPU.

// x * sigmoid(a + a_lo) in f64, a_lo a small correction of a (d sigmoid /
// sigmoid = (1-s) da). sigmoid = 1/(1+e) for a >= 0 and e/(1+e) below,
// e = e^-|a|: never overflows, and a tiny result is e^a itself. x*(1 or e)
// and 1+e are carried exactly into one corrected division. Where e^a is
// subnormal but the result is not, e^(a+C) with C = 64 ln 2 rounded to 2^-43
// (a + C exact for a in [-1024, -512]) is scaled back by M 2^-64,
// M = e^(64 ln 2 - C).
__device__ __forceinline__ double k_xsigmoid(double x, double a, double a_lo) {
  const double kC = 0x1.62e42fefa39f0p+5, kM = 0x1.fffffffffffcdp-1;
  a_lo = fabs(a_lo) <= 1 ? a_lo : 0.0;  // NaN from inf arguments
  const double e = exp(-fabs(a)), d = 1 + e, d_lo = (1 - d) + e;  // e <= 1
  const double n = a >= 0 ? x : x * e, s = (a >= 0 ? 1.0 : e) / d;
  const double n_lo = (a >= 0 ? 0.0 : fma(x, e, -n)) + n * ((1 - s) * a_lo);
  const double q = n / d, fix = ((fma(-q, d, n) + n_lo) - q * d_lo) / d;
  double r = q + (fix == fix ? fix : 0.0);  // NaN where q is inf
  if (a < -512) r = ((x * exp(a + kC)) * (kM + kM * a_lo)) * 0x1p-64;
  return x == -inf<double>() ? -0.0 : r;  // not -inf * 0
}

// gelu(x) = x/2 erfc(-x/sqrt2) in f64, t = -x/sqrt2 carried as t + t_lo
// (erfc's relative condition number is ~2t^2), corrected to first order.
__device__ __forceinline__ double k_gelu(double x) {
  const double kR = 0x1.6a09e667f3bcdp-1, kRlo = -0x1.bdd3413b26456p-55, kK = 0x1.20dd750429b6dp+0;
  const double t = x * -kR;
  double t_lo = fma(x, -kR, -t) + x * -kRlo;
  t_lo = fabs(t_lo) <= 1 ? t_lo : 0.0;  // NaN from inf
  const double c = erfc(t) - (kK * exp(-(t * t))) * t_lo;
  const double r = x < 0 ? (x * c) * 0.5 : x * (c * 0.5);  // no overflow at x = max; no lost bit in subnormals
  return x == -inf<double>() ? -0.0 : r;
}

// gelu_tanh(x) = x sigmoid(2u), u = c (x + k x^3) in double-double.
__device__ __forceinline__ double k_gelu_tanh(double x) {
  const double kC = 0x1.9884533d43651p-1, kClo = -0x1.cbc0d30ebfd15p-55;
  const double kK = 0x1.6e4e26d4801f7p-5, kKlo = 0x1.441355475a31ap-59;
  const double x2 = x * x, x2_lo = fma(x, x, -x2);
  const double p = kK * x2, p_lo = fma(kK, x2, -p) + (kK * x2_lo + kKlo * x2);
  const double w = 1 + p, b = w - 1, w_lo = ((1 - (w - b)) + (p - b)) + p_lo;  // two-sum
  const double y = x * w, y_lo = fma(x, w, -y) + x * w_lo;
  const double u = kC * y, u_lo = fma(kC, y, -u) + (kC * y_lo + kClo * y);
  return k_xsigmoid(x, 2 * u, 2 * u_lo);
}

// f32 lanes stay in f32 on the GPU (f64 runs at half rate and made a fused
// silu epilogue compute-bound: 0.58 TB/s on the H200): sigmoid as (1 or e)/(1+e),
// e = e^-|x|, has a small relative error everywhere and never overflows.
// The divisor 1+e is in [1, 2], where the fast reciprocal-based division is
// within 2 ulp (CUDA Programming Guide) and skips the IEEE slow path.
__device__ __forceinline__ float f_sigmoid(float x) {
  const float e = expf(-fabsf(x));
  return __fdividef(x >= 0 ? 1.0f : e, 1.0f + e);
}

// silu and the gelus are 0 * inf = NaN at x = -inf, where they are -0. A
// `x == -inf ? -0 : f(x)` became a branch around every lane's math (no
// overlap between lanes); -inf clamped to -FLT_MAX instead gives -0 through
// the same instructions (NaN compares false and stays NaN).
__device__ __forceinline__ float clamp_neg_inf(float x) { return x < -0x1.fffffep127f ? -0x1.fffffep127f : x; }

// gelu(x) = x/2 (1 + erf(x/sqrt2)), erf(z) = sign(z) (1 - 2^q(t)), t =
// min(|z|, 4), q a degree-8 polynomial fitted to log2 erfc on [0, 4]
// (scripts/fit_gelu_erf.py: |erf error| <= 1.7 x 2^-24, ex2.approx adds ~2^-22
// relative to 2^q). One branch-free path of 8 fmas and an ex2: erff's two
// polynomials took a select per coefficient, about 30 instructions a lane,
// and gelu dominated the fused bf16 8192^3 matmul epilogue on the H200. gelu
// needs erf only absolutely: its error is scaled by |x|/2, which the oracle's
// gelu allowance c_t*u*|x| covers (src/oracle/tolerance.hpp), as it covers
// the cancellation of 1 + erf for x << 0. NaN stays NaN (through h); the
// result has x's sign (a tail that rounds to 0 is -0, as in the f64 form).
__device__ __forceinline__ float f_gelu(float x) {
  const float c = clamp_neg_inf(x), h = 0.5f * c, z = c * 0.70710678118654752f;
  const float t = fminf(fabsf(z), 4.0f);
  float q = -0x1.54a91cp-15f;
  q = fmaf(q, t, 0x1.a88c52p-12f);
  q = fmaf(q, t, -0x1.624406p-10f);
  q = fmaf(q, t, -0x1.09c9e6p-10f);
  q = fmaf(q, t, 0x1.d29dc2p-6f);
  q = fmaf(q, t, -0x1.3053c8p-3f);
  q = fmaf(q, t, -0x1.d636cap-1f);
  q = fmaf(q, t, -0x1.a0bed2p+0f);
  q = fmaf(q, t, 0x1.6e9b3ap-24f);
#if defined(TSR_HIP)
  const float e = exp2f(q);
#else
  float e;  // 2^q >= 2^-26: a normal result, so the flush-to-zero form (exp2f adds a subnormal fix-up)
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(q));
#endif
  const float erf = copysignf(1.0f - e, z);
  return copysignf(fmaf(h, erf, h), x);
}

// i32/i64 arithmetic (the tile forms below call these) wraps (two's
// complement, as numpy's): computed unsigned.
#define TSR_INT_OPS(T, U)                                                                       \
  __device__ __forceinline__ T fn_neg(T x) { return T(U(0) - U(x)); }                          \
  __device__ __forceinline__ T fn_abs(T x) { return x < 0 ? T(U(0) - U(x)) : x; }              \
  __device__ __forceinline__ T fn_add(T a, T b) { return T(U(a) + U(b)); }                      \
  __device__ __forceinline__ T fn_sub(T a, T b) { return T(U(a) - U(b)); }                      \
  __device__ __forceinline__ T fn_mul(T a, T b) { return T(U(a) * U(b)); }                      \
  __device__ __forceinline__ T fn_max(T a, T b) { return a < b ? b : a; }                       \
  __device__ __forceinline__ T fn_min(T a, T b) { return b < a ? b : a; }
TSR_INT_OPS(int, u32)
TSR_INT_OPS(i64, u64)
#undef TSR_INT_OPS

#define TSR_UNARY(NAME, F32, F64)                                                          \
  __device__ __forceinline__ float NAME(float x) { return F32; }                           \
  __device__ __forceinline__ double NAME(double x) { return F64; }                         \
  template <class T, int N> __device__ __forceinline__ tile<T, N> NAME(tile<T, N> t) {      \
    _Pragma("unroll") for (int i = 0; i < tile<T, N>::E; ++i) t.v[i] = NAME(t.v[i]);        \
    return t;                                                                              \
  }
TSR_UNARY(fn_neg, -x, -x)
TSR_UNARY(fn_abs, fabsf(x), fabs(x))
TSR_UNARY(fn_exp, expf(x), exp(x))
TSR_UNARY(fn_log, logf(x), log(x))
TSR_UNARY(fn_sqrt, sqrtf(x), sqrt(x))
TSR_UNARY(fn_rsqrt, rsqrtf(x), rsqrt(x))
TSR_UNARY(fn_tanh, tanhf(x), tanh(x))
TSR_UNARY(fn_relu, x < 0 ? 0.0f : x, x < 0 ? 0.0 : x)  // NaN < 0 is false: NaN stays
TSR_UNARY(fn_sigmoid, f_sigmoid(x), k_xsigmoid(1.0, x, 0.0))
TSR_UNARY(fn_silu, clamp_neg_inf(x) * f_sigmoid(x), k_xsigmoid(x, x, 0.0))
TSR_UNARY(fn_gelu, f_gelu(x), k_gelu(x))
TSR_UNARY(fn_gelu_tanh, clamp_neg_inf(x) * f_sigmoid(1.5957691216057308f * (x + 0.044715f * x * x * x)),
          k_gelu_tanh(x))
// libdevice's accurate forms (no -use_fast_math): sinf/cosf reduce large
// arguments exactly; rint rounds half to even, as numpy's round does.
TSR_UNARY(fn_sin, sinf(x), sin(x))
TSR_UNARY(fn_cos, cosf(x), cos(x))
TSR_UNARY(fn_exp2, exp2f(x), exp2(x))
TSR_UNARY(fn_log2, log2f(x), log2(x))
TSR_UNARY(fn_erf, erff(x), erf(x))
TSR_UNARY(fn_floor, floorf(x), floor(x))
TSR_UNARY(fn_ceil, ceilf(x), ceil(x))
TSR_UNARY(fn_round, rintf(x), rint(x))
#undef TSR_UNARY

__device__ __forceinline__ float m_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double m_pow(double x, double y) { return pow(x, y); }
#define TSR_BINARY(NAME, EXPR)                                                             \
  __device__ __forceinline__ float NAME(float a, float b) { return EXPR; }                 \
  __device__ __forceinline__ double NAME(double a, double b) { return EXPR; }              \
  template <class T, int N> __device__ __forceinline__ tile<T, N> NAME(tile<T, N> a, const tile<T, N>& b) { \
    _Pragma("unroll") for (int i = 0; i < tile<T, N>::E; ++i) a.v[i] = NAME(a.v[i], b.v[i]); \
    return a;                                                                              \
  }
TSR_BINARY(fn_add, a + b)
TSR_BINARY(fn_sub, a - b)
TSR_BINARY(fn_mul, a * b)
TSR_BINARY(fn_div, a / b)
TSR_BINARY(fn_pow, m_pow(a, b))
// NaN in either operand gives NaN (combine_max/min: max.NaN for f32).
TSR_BINARY(fn_max, combine_max(a, b))
TSR_BINARY(fn_min, combine_min(a, b))
#undef TSR_BINARY

// ---- integers and booleans -----------------------------------------------------
// docs/semantics.md states the rules. Comparisons give i1; a NaN operand compares false (ne: true), as IEEE's.
#define TSR_COMPARE(NAME, OP)                                                                                \
  template <class T> __device__ __forceinline__ b8 NAME(T a, T b) { return b8(a OP b); }                    \
  template <class T, int N> __device__ __forceinline__ tile<b8, N> NAME(const tile<T, N>& a, const tile<T, N>& b) { \
    tile<b8, N> r;                                                                                           \
    _Pragma("unroll") for (int i = 0; i < tile<T, N>::E; ++i) r.v[i] = b8(a.v[i] OP b.v[i]);                 \
    return r;                                                                                                \
  }
TSR_COMPARE(fn_eq, ==)
TSR_COMPARE(fn_ne, !=)
TSR_COMPARE(fn_lt, <)
TSR_COMPARE(fn_le, <=)
TSR_COMPARE(fn_gt, >)
TSR_COMPARE(fn_ge, >=)
#undef TSR_COMPARE

// A byte of an i1 array other than 0 or 1 reads as true, as numpy's logic does.
__device__ __forceinline__ b8 fn_and(b8 a, b8 b) { return b8(a != 0 && b != 0); }
__device__ __forceinline__ b8 fn_or(b8 a, b8 b) { return b8(a != 0 || b != 0); }
__device__ __forceinline__ b8 fn_not(b8 a) { return b8(a == 0); }
template <int N> __device__ __forceinline__ tile<b8, N> fn_and(tile<b8, N> a, const tile<b8, N>& b) {
#pragma unroll
  for (int i = 0; i < tile<b8, N>::E; ++i) a.v[i] = fn_and(a.v[i], b.v[i]);
  return a;
}
template <int N> __device__ __forceinline__ tile<b8, N> fn_or(tile<b8, N> a, const tile<b8, N>& b) {
#pragma unroll
  for (int i = 0; i < tile<b8, N>::E; ++i) a.v[i] = fn_or(a.v[i], b.v[i]);
  return a;
}
template <int N> __device__ __forceinline__ tile<b8, N> fn_not(tile<b8, N> a) {
#pragma unroll
  for (int i = 0; i < tile<b8, N>::E; ++i) a.v[i] = fn_not(a.v[i]);
  return a;
}

// where(c, a, b)
template <class T> __device__ __forceinline__ T fn_select(b8 c, T a, T b) { return c ? a : b; }
template <class T, int N>
__device__ __forceinline__ tile<T, N> fn_select(const tile<b8, N>& c, tile<T, N> a, const tile<T, N>& b) {
#pragma unroll
  for (int i = 0; i < tile<T, N>::E; ++i) a.v[i] = c.v[i] ? a.v[i] : b.v[i];
  return a;
}

// Conversions between compute types (tessera.cast): to an integer, floats
// truncate toward zero and saturate, NaN gives 0; integers wrap to the
// narrower width; to i1, nonzero (NaN included) is 1; to a float, the
// nearest value (ties to even).
template <class T> struct int_limits;
template <> struct int_limits<int> { static constexpr int lo = -2147483647 - 1, hi = 2147483647; typedef u32 U; };
template <> struct int_limits<i64> {
  static constexpr i64 lo = -9223372036854775807LL - 1, hi = 9223372036854775807LL;
  typedef u64 U;
};
template <class T> struct is_float_type { static constexpr bool value = false; };
template <> struct is_float_type<float> { static constexpr bool value = true; };
template <> struct is_float_type<double> { static constexpr bool value = true; };
template <class To, class From> __device__ __forceinline__ To cvt(From x) {
  if constexpr (sizeof(From) == 1) {  // from i1: 0 or 1
    return To(x != 0);
  } else if constexpr (sizeof(To) == 1) {
    return b8(x != From(0));
  } else if constexpr (!is_float_type<To>::value && is_float_type<From>::value) {
    const From top = -From(int_limits<To>::lo);  // 2^31 or 2^63, exact
    if (x != x) return To(0);
    if (x >= top) return int_limits<To>::hi;
    if (x <= -top) return int_limits<To>::lo;
    return To(x);
  } else if constexpr (!is_float_type<To>::value) {
    return To(typename int_limits<To>::U(x));  // i64 -> i32 keeps the low 32 bits
  } else {
    return To(x);
  }
}
template <class To, class From, int N> __device__ __forceinline__ tile<To, N> cvt(const tile<From, N>& t) {
  tile<To, N> r;
#pragma unroll
  for (int i = 0; i < tile<From, N>::E; ++i) r.v[i] = cvt<To>(t.v[i]);
  return r;
}

// Lane l: ((base + l) / inner) % extent, the coordinate along one axis of the
// element at flat index base + l (tessera.iota).
template <class T, int N> __device__ __forceinline__ tile<T, N> iota(i64 base, i64 inner, i64 extent) {
  tile<T, N> r;
#pragma unroll
  for (int c = 0; c < tile<T, N>::P; ++c)
#pragma unroll
    for (int v = 0; v < TSR_VEC; ++v) r.v[c * TSR_VEC + v] = T(((base + lane0<N>(c) + v) / inner) % extent);
  return r;
}

// Lanes at index >= count (the tile's lane numbering) become other.
template <class T, int N> __device__ __forceinline__ tile<T, N> mask_lanes(tile<T, N> t, i64 count, T other) {
#pragma unroll
  for (int c = 0; c < tile<T, N>::P; ++c)
#pragma unroll
    for (int v = 0; v < TSR_VEC; ++v)
      if (lane0<N>(c) + v >= count) t.v[c * TSR_VEC + v] = other;
  return t;
}

// x rounded to storage type S (nearest even) and widened back: a cast to S
// inside a fused kernel.
template <class S, class T> __device__ __forceinline__ T round_to(T x) { return T(widen(narrow<S>(x))); }
template <class S, class T, int N> __device__ __forceinline__ tile<T, N> round_to(tile<T, N> t) {
#pragma unroll
  for (int i = 0; i < tile<T, N>::E; ++i) t.v[i] = round_to<S>(t.v[i]);
  return t;
}

// Compute-type conversion (f32 <-> f64); every thread keeps its lanes.
template <class U, class T> __device__ __forceinline__ U convert(T x) { return U(x); }
template <class U, class T, int N> __device__ __forceinline__ tile<U, N> convert(const tile<T, N>& t) {
  tile<U, N> r;
#pragma unroll
  for (int i = 0; i < tile<T, N>::E; ++i) r.v[i] = U(t.v[i]);
  return r;
}

// Block reduction in a fixed order: a running fold over each thread's lanes
// (fully unrolled: a tree over a register array spilled it to the stack),
// a butterfly across the warp, then warp 0..W-1 results combined in order by
// every thread (so all threads hold the same value). Deterministic.
#ifdef TSR_HIP
// HIP: the same order over wavefronts of TSR_WAVE_LANES = min(TSR_THREADS,
// TSR_WAVE) lanes (the renderer defines TSR_WAVE: 64 on CDNA, 32 on RDNA).
#ifndef TSR_WAVE
#error "define TSR_WAVE (the device's wavefront width) before the HIP tile library"
#endif
#define TSR_WAVE_LANES (TSR_THREADS < TSR_WAVE ? TSR_THREADS : TSR_WAVE)
static_assert(TSR_THREADS % TSR_WAVE_LANES == 0, "a block is whole wavefronts");
#define TSR_REDUCE_LANES(NAME)                                                         \
  template <class T, int N> __device__ __forceinline__ T reduce_lanes_##NAME(tile<T, N> t) { \
    T x = t.v[0];                                                                     \
    _Pragma("unroll") for (int i = 1; i < tile<T, N>::E; ++i) x = combine_##NAME(x, t.v[i]); \
    _Pragma("unroll") for (int off = TSR_WAVE_LANES / 2; off >= 1; off /= 2)                   \
        x = combine_##NAME(x, __shfl_xor(x, off, TSR_WAVE_LANES));                            \
    if constexpr (TSR_THREADS > TSR_WAVE_LANES) {                                           \
      __shared__ T wave_result[TSR_THREADS / TSR_WAVE_LANES];                               \
      __syncthreads();                                                                \
      if ((threadIdx.x % TSR_WAVE_LANES) == 0) wave_result[threadIdx.x / TSR_WAVE_LANES] = x;      \
      __syncthreads();                                                                \
      x = wave_result[0];                                                             \
      for (int w = 1; w < TSR_THREADS / TSR_WAVE_LANES; ++w) x = combine_##NAME(x, wave_result[w]); \
    } else {                                                                          \
      x = __shfl(x, 0, TSR_WAVE_LANES);                                                     \
    }                                                                                 \
    return x;                                                                         \
  }
#else
#if TSR_CLUSTER > 1
// The cluster stage (CUDA clusters): every block pushes its block result into
// slot[its rank] of every block's shared memory (distributed shared memory:
// mapa + st.shared::cluster), and after a cluster barrier every thread folds
// slots 0..C-1 in rank order, so all blocks hold the same bits. Barrier
// phases: the kernel arrives once at entry; here the first wait completes the
// previous phase (all blocks have started, or have read the previous call's
// slots, so they may be overwritten); the middle arrive/wait publishes the
// slots; the last arrive says this block is done reading them. The kernel
// waits once at exit, so no block leaves while its slots may still be read.
template <class T, class Combine> __device__ __forceinline__ T cluster_combine(T x, Combine combine) {
  __shared__ T slot[TSR_CLUSTER];
  cluster_wait();
  if (threadIdx.x < TSR_CLUSTER) {  // thread i writes into block i
    const u32 mine = static_cast<u32>(__cvta_generic_to_shared(&slot[cluster_rank()]));
    u32 theirs;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(theirs) : "r"(mine), "r"(u32(threadIdx.x)));
    if constexpr (sizeof(T) == 8)
      asm volatile("st.shared::cluster.f64 [%0], %1;" ::"r"(theirs), "d"(x) : "memory");
    else
      asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(theirs), "f"(x) : "memory");
  }
  cluster_arrive();
  cluster_wait();
  T r = slot[0];
#pragma unroll
  for (int i = 1; i < TSR_CLUSTER; ++i) r = combine(r, slot[i]);
  cluster_arrive();
  return r;
}
#define TSR_CLUSTER_STAGE(NAME) x = cluster_combine(x, [](T a, T b) { return combine_##NAME(a, b); });
#else
#define TSR_CLUSTER_STAGE(NAME)
#endif
// reduce_block_lanes_*: this block's lanes only (a cluster program's
// per-block statistics; the whole program without a cluster).
#define TSR_REDUCE_LANES(NAME)                                                         \
  template <class T, int N> __device__ __forceinline__ T reduce_block_lanes_##NAME(tile<T, N> t) { \
    T x = t.v[0];                                                                     \
    _Pragma("unroll") for (int i = 1; i < tile<T, N>::E; ++i) x = combine_##NAME(x, t.v[i]); \
    _Pragma("unroll") for (int off = 16; off >= 1; off /= 2)                             \
        x = combine_##NAME(x, __shfl_xor_sync(0xffffffffu, x, off));                       \
    if constexpr (TSR_THREADS > 32) {                                                 \
      __shared__ T warp_result[TSR_THREADS / 32];                                     \
      __syncthreads();                                                                \
      if ((threadIdx.x & 31) == 0) warp_result[threadIdx.x / 32] = x;                  \
      __syncthreads();                                                                \
      x = warp_result[0];                                                             \
      for (int w = 1; w < TSR_THREADS / 32; ++w) x = combine_##NAME(x, warp_result[w]); \
    } else {                                                                          \
      x = __shfl_sync(0xffffffffu, x, 0);                                             \
    }                                                                                 \
    return x;                                                                         \
  }                                                                                   \
  template <class T, int N> __device__ __forceinline__ T reduce_lanes_##NAME(tile<T, N> t) { \
    T x = reduce_block_lanes_##NAME(t);                                               \
    TSR_CLUSTER_STAGE(NAME)                                                           \
    return x;                                                                         \
  }
#endif
TSR_REDUCE_LANES(sum)
TSR_REDUCE_LANES(prod)
TSR_REDUCE_LANES(max)
TSR_REDUCE_LANES(min)
#undef TSR_REDUCE_LANES
#undef TSR_CLUSTER_STAGE

#if TSR_CLUSTER > 1
// A cluster program's softmax statistics in one exchange (tile.softmax_stats):
// block b contributes its max m_b and s_b = sum of exp(x - max(m_b, lowest));
// M = max of the m_b (NaN propagates), S = sum of s_b exp(max(m_b, lowest) -
// max(M, lowest)) in rank order, so all blocks hold the same bits. A block of
// only -inf adds 0; an all -inf row has S = 0 (and a NaN softmax, as the
// semantics say). The barrier phases are cluster_combine's.
template <class T> __device__ __forceinline__ void softmax_stats(T m, T s, T& big_m, T& big_s) {
  __shared__ T slot_m[TSR_CLUSTER], slot_s[TSR_CLUSTER];
  cluster_wait();
  if (threadIdx.x < TSR_CLUSTER) {  // thread i writes into block i
    const u32 mine_m = static_cast<u32>(__cvta_generic_to_shared(&slot_m[cluster_rank()]));
    const u32 mine_s = static_cast<u32>(__cvta_generic_to_shared(&slot_s[cluster_rank()]));
    u32 theirs_m, theirs_s;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(theirs_m) : "r"(mine_m), "r"(u32(threadIdx.x)));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(theirs_s) : "r"(mine_s), "r"(u32(threadIdx.x)));
    if constexpr (sizeof(T) == 8) {
      asm volatile("st.shared::cluster.f64 [%0], %1;" ::"r"(theirs_m), "d"(m) : "memory");
      asm volatile("st.shared::cluster.f64 [%0], %1;" ::"r"(theirs_s), "d"(s) : "memory");
    } else {
      asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(theirs_m), "f"(m) : "memory");
      asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(theirs_s), "f"(s) : "memory");
    }
  }
  cluster_arrive();
  cluster_wait();
  const T lowest = sizeof(T) == 8 ? T(-1.7976931348623157e308) : T(-3.4028234663852886e38f);
  T mm = slot_m[0];
#pragma unroll
  for (int i = 1; i < TSR_CLUSTER; ++i) mm = combine_max(mm, slot_m[i]);
  const T base = combine_max(mm, lowest);
  T ss = T(0);
#pragma unroll
  for (int i = 0; i < TSR_CLUSTER; ++i) {
    const T d = combine_max(slot_m[i], lowest) - base;
    if constexpr (sizeof(T) == 8) ss += slot_s[i] * exp(d);
    else ss += slot_s[i] * expf(d);
  }
  cluster_arrive();
  big_m = mm;
  big_s = ss;
}
#endif

}  // namespace tsr
