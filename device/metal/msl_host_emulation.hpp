// Host emulation of the Metal Shading Language subset that Tessera's MSL
// kernels use, so the host g++ compiles an emitted MSL kernel unchanged and
// runs it on the CPU. This is NOT Metal: no Apple GPU, no Apple compiler, the
// host's libm instead of Metal's math library. What it does check is the MSL
// text: its types, its threadgroup/simdgroup protocol and the NaN/inf
// semantics of its code, with Metal's built-ins given Metal's semantics
// (metal::max/min/fmax/fmin return the non-NaN operand, as Metal specifies).
// Runs are labelled placement `emulated_msl`.
//
// Execution model: one threadgroup at a time per OS thread, its threads as
// fibers (ucontext) on that OS thread. A thread runs until it reaches a
// threadgroup_barrier or a simd-group function, then yields. A simd-group
// function completes once all 32 lanes of that simdgroup reached one; a
// barrier once every thread of the threadgroup reached it. Threads resume in
// index order, so runs are deterministic. A barrier or simd-group function
// not reached by every thread it needs (divergent control flow, undefined on
// Metal) stops the process with a message: the emulation never guesses.
// `threadgroup` variables (declared at kernel scope) become static
// thread_local: shared by the fibers of the one threadgroup an OS thread runs.
// (Embedded into each emulated kernel's source, hence no include guard.)
#include <sys/mman.h>
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef _Float16 half;  // IEEE binary16; float -> half rounds to nearest even

namespace msl_emu {

constexpr int kSimd = 32;
constexpr size_t kStackBytes = 256 * 1024;  // reserved, committed as touched

enum class Wait { run, simd, barrier, done };

struct Fiber {
  ucontext_t ctx;
  Wait wait = Wait::run;
  unsigned gen = 0;     // simd-group operations completed
  uint64_t slot[2]{};   // this lane's operand, double-buffered by gen parity
};

struct ThreadIds {
  uint tid, simd_lane, simd;  // not `thread`: a macro below
};

struct Threadgroup {
  int n = 0, current = 0;
  ucontext_t scheduler;
  std::vector<Fiber> fibers;
  void (*body)(void*, const ThreadIds&) = nullptr;
  void* closure = nullptr;
};

// The threadgroup this OS thread is running, and its fiber stacks (kept).
inline thread_local Threadgroup* g_group = nullptr;
struct Stacks {
  std::vector<void*> s;
  ~Stacks() {
    for (void* p : s) munmap(p, kStackBytes);
  }
  void* at(size_t i) {
    while (s.size() <= i) {
      void* p = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) die("cannot map a fiber stack");
      s.push_back(p);
    }
    return s[i];
  }
  [[noreturn]] static void die(const char* why) {
    std::fprintf(stderr, "msl host emulation: %s\n", why);
    std::abort();
  }
};
inline thread_local Stacks g_stacks;

inline void yield(Wait w) {
  Threadgroup& g = *g_group;
  Fiber& f = g.fibers[g.current];
  f.wait = w;
  swapcontext(&f.ctx, &g.scheduler);
}

inline void fiber_entry() {
  Threadgroup& g = *g_group;
  const int t = g.current;
  g.body(g.closure, ThreadIds{uint(t), uint(t % kSimd), uint(t / kSimd)});
  g.fibers[t].wait = Wait::done;
  swapcontext(&g.fibers[t].ctx, &g.scheduler);  // never resumed
}

// Runs `body(ids)` once per thread of a threadgroup of n threads.
template <class F> void run_threadgroup(int n, F&& body) {
  Threadgroup g;
  g.n = n;
  g.fibers.resize(n);
  g.body = [](void* c, const ThreadIds& id) { (*static_cast<std::remove_reference_t<F>*>(c))(id); };
  g.closure = &body;
  Threadgroup* outer = g_group;
  g_group = &g;
  for (int t = 0; t < n; ++t) {
    getcontext(&g.fibers[t].ctx);
    g.fibers[t].ctx.uc_stack.ss_sp = g_stacks.at(t);
    g.fibers[t].ctx.uc_stack.ss_size = kStackBytes;
    g.fibers[t].ctx.uc_link = nullptr;
    g.current = t;
    makecontext(&g.fibers[t].ctx, fiber_entry, 0);
  }
  for (;;) {
    for (int t = 0; t < n; ++t)
      if (g.fibers[t].wait == Wait::run) {
        g.current = t;
        swapcontext(&g.scheduler, &g.fibers[t].ctx);
      }
    int done = 0, at_barrier = 0;
    bool released = false;
    for (int s = 0; s < n; s += kSimd) {  // simdgroups whose every lane waits in a simd function
      bool all = true;
      for (int t = s; t < s + kSimd && t < n; ++t) all = all && g.fibers[t].wait == Wait::simd;
      if (!all) continue;
      for (int t = s; t < s + kSimd && t < n; ++t) g.fibers[t].wait = Wait::run;
      released = true;
    }
    for (const Fiber& f : g.fibers) {
      done += f.wait == Wait::done;
      at_barrier += f.wait == Wait::barrier;
    }
    if (done == n) break;
    if (released) continue;
    if (at_barrier == n) {
      for (Fiber& f : g.fibers) f.wait = Wait::run;
      continue;
    }
    Stacks::die("a threadgroup_barrier or simd-group function was not reached by every thread it needs "
                "(divergent control flow: undefined on Metal)");
  }
  g_group = outer;
}

// A simd-group function: every lane deposits x, waits for its simdgroup,
// then `pick` reads any lane's operand.
template <class T, class Pick> T simd_exchange(T x, Pick pick) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "simd operand");
  Threadgroup& g = *g_group;
  const int t = g.current;
  const unsigned parity = g.fibers[t].gen & 1u;
  std::memcpy(&g.fibers[t].slot[parity], &x, sizeof(T));
  yield(Wait::simd);
  const int base = t / kSimd * kSimd;
  auto lane = [&](int l) {
    T v;
    std::memcpy(&v, &g.fibers[base + l].slot[parity], sizeof(T));
    return v;
  };
  T r = pick(t - base, lane);
  ++g.fibers[t].gen;
  return r;
}

}  // namespace msl_emu

namespace metal {

enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(int(a) | int(b)); }
inline void threadgroup_barrier(mem_flags) { msl_emu::yield(msl_emu::Wait::barrier); }
inline void simdgroup_barrier(mem_flags) {
  msl_emu::simd_exchange(0, [](int, auto) { return 0; });
}

template <class T, class U> T as_type(U x) {
  static_assert(sizeof(T) == sizeof(U), "as_type needs equal sizes");
  T r;
  std::memcpy(&r, &x, sizeof(T));
  return r;
}

using std::abs;
using std::ceil;
using std::cos;
using std::exp;
using std::exp2;
using std::fabs;
using std::floor;
using std::isinf;
using std::isnan;
using std::log;
using std::log2;
using std::pow;
using std::rint;
using std::sin;
using std::sqrt;
using std::tanh;
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }

// Metal: "If one argument is a NaN, fmax() returns the other argument"; max
// on floats is fmax. The same for min/fmin. (A kernel that relies on these
// for a NaN-propagating reduction is wrong on Metal, and wrong here.)
template <class T> T fmax(T x, T y) {
  if (x != x) return y;
  if (y != y) return x;
  return x < y ? y : x;
}
template <class T> T fmin(T x, T y) {
  if (x != x) return y;
  if (y != y) return x;
  return y < x ? y : x;
}
inline float max(float x, float y) { return fmax(x, y); }
inline float min(float x, float y) { return fmin(x, y); }
inline half max(half x, half y) { return fmax(x, y); }
inline half min(half x, half y) { return fmin(x, y); }
inline int max(int x, int y) { return x < y ? y : x; }
inline int min(int x, int y) { return y < x ? y : x; }
inline uint max(uint x, uint y) { return x < y ? y : x; }
inline uint min(uint x, uint y) { return y < x ? y : x; }
inline long max(long x, long y) { return x < y ? y : x; }
inline long min(long x, long y) { return y < x ? y : x; }

template <class T> T simd_shuffle_xor(T x, ushort mask) {
  return msl_emu::simd_exchange(x, [mask](int l, auto lane) { return lane((l ^ mask) & (msl_emu::kSimd - 1)); });
}
template <class T> T simd_shuffle(T x, ushort src) {
  return msl_emu::simd_exchange(x, [src](int, auto lane) { return lane(src & (msl_emu::kSimd - 1)); });
}
template <class T> T simd_broadcast(T x, ushort src) { return simd_shuffle(x, src); }
// Reductions over the simdgroup in lane order; simd_max/simd_min with
// fmax/fmin semantics (an unspecified order on Metal; NaN dropped).
template <class T> T simd_sum(T x) {
  return msl_emu::simd_exchange(x, [](int, auto lane) {
    T s = lane(0);
    for (int l = 1; l < msl_emu::kSimd; ++l) s = s + lane(l);
    return s;
  });
}
template <class T> T simd_max(T x) {
  return msl_emu::simd_exchange(x, [](int, auto lane) {
    T s = lane(0);
    for (int l = 1; l < msl_emu::kSimd; ++l) s = fmax(s, lane(l));
    return s;
  });
}
template <class T> T simd_min(T x) {
  return msl_emu::simd_exchange(x, [](int, auto lane) {
    T s = lane(0);
    for (int l = 1; l < msl_emu::kSimd; ++l) s = fmin(s, lane(l));
    return s;
  });
}

// simdgroup_matrix<T, Cols, Rows>: a Rows x Cols matrix a simdgroup holds
// together. Metal spreads its elements over the 32 lanes (an unspecified
// layout, reached only through thread_elements, which Tessera does not use);
// here every lane holds the whole matrix, and each operation is a simd-group
// function: it completes only when all 32 lanes reach it, and a pointer that
// differs between the lanes (a non-uniform operand, undefined on Metal)
// stops the process. Loads and stores read and write row-major memory with
// a row stride of elements_per_row (no transposed form: it is not used).
template <class T, int Cols, int Rows> struct simdgroup_matrix {
  T e[Rows][Cols];
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;

template <class T, int Cols, int Rows> simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c) m.e[r][c] = value;
  return m;
}

}  // namespace metal

namespace msl_emu {
// The simd-group function of one matrix operation: every lane passes the
// same address (a uniform operand), or the emulation stops.
inline void uniform_matrix_operand(const void* p) {
  const bool uniform = simd_exchange(reinterpret_cast<uint64_t>(p), [](int, auto lane) {
    for (int l = 1; l < kSimd; ++l)
      if (lane(l) != lane(0)) return uint64_t{0};
    return uint64_t{1};
  });
  if (!uniform) Stacks::die("a simdgroup_matrix operation's operand differs between the lanes of a simdgroup");
}
}  // namespace msl_emu

namespace metal {

template <class T, int Cols, int Rows, class P>
void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& d, P src, unsigned long elements_per_row = Cols) {
  msl_emu::uniform_matrix_operand(src);
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c) d.e[r][c] = T(src[r * elements_per_row + c]);
}

template <class T, int Cols, int Rows, class P>
void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& a, P dst, unsigned long elements_per_row = Cols) {
  msl_emu::uniform_matrix_operand(dst);
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c) dst[r * elements_per_row + c] = a.e[r][c];
}

// d = a * b + c, each element's sum over the shared dim in order with fused
// multiply-adds (Metal does not specify the order).
template <class T, int K, int M, int N>
void simdgroup_multiply_accumulate(simdgroup_matrix<T, N, K>& d, const simdgroup_matrix<T, M, K>& a,
                                   const simdgroup_matrix<T, N, M>& b, const simdgroup_matrix<T, N, K>& c) {
  msl_emu::uniform_matrix_operand(nullptr);
  simdgroup_matrix<T, N, K> r;
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < N; ++j) {
      T s = c.e[i][j];
      for (int m = 0; m < M; ++m) s = std::fma(a.e[i][m], b.e[m][j], s);
      r.e[i][j] = s;
    }
  d = r;
}

}  // namespace metal

// Address spaces and function qualifiers: memory is one host address space.
// `threadgroup` appears only in kernel-scope declarations in Tessera's MSL.
// Defined last, so no header above sees them.
#pragma GCC diagnostic ignored "-Wattributes"  // [[buffer(0)]], [[thread_position_in_threadgroup]], ...
#define kernel
#define device
#define constant const
#define thread
#define threadgroup static thread_local
