// Pointwise math of the device tile libraries (fn_*, mask_lanes, round_to,
// convert). CPU: the library header included here (this file is built for
// baseline x86-64: SSE2 libmvec variants, no AVX-512 paths) and the same
// functions in a kernel compiled by the runtime (-O3 -march=native), both
// measured in ulps against long double references on ~250k inputs per
// function and type. CUDA: an evaluator kernel over every function compiles
// with NVRTC for sm_90a (numerical checks need a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../../device/cpu/tessera_tile.hpp"
// (its slab helpers: load2d, store2d, fold_rows)
#include "../../device/cpu/tessera_matmul.hpp"
#include "ir/target_dialect.hpp"
#include "runtime/cpu_module_cache.hpp"
#include "runtime/cuda/cuda_module_cache.hpp"
#include "runtime/disk_cache.hpp"
#include "support/diagnostic.hpp"
#include "support/sha256.hpp"

#pragma GCC diagnostic ignored "-Wpsabi"  // 64-byte tile parts between inline functions

namespace tessera {
namespace {

namespace fs = std::filesystem;
using ld = long double;
constexpr int kLanes = 64;  // tile<T, 64>: 4 (f32) or 8 (f64) parts of 64 bytes

// From the build's source dir, not __FILE__: a compiler cache may make
// __FILE__ relative to the build dir, which ctest does not run in.
std::string repo_file(const char* rel) { return (fs::path(TESSERA_SOURCE_DIR) / rel).string(); }

// ---- long double references --------------------------------------------------
// sigmoid(a + a_lo), a_lo a small correction applied to first order.
ld ref_sigmoid2(ld a, ld a_lo) {
  const ld e = expl(-fabsl(a));
  const ld s = a >= 0 ? 1 / (1 + e) : e / (1 + e);
  return s + s * (1 - s) * a_lo;
}
ld ref_neg(ld x) { return -x; }
ld ref_abs(ld x) { return fabsl(x); }
ld ref_exp(ld x) { return expl(x); }
ld ref_log(ld x) { return logl(x); }
ld ref_sqrt(ld x) { return sqrtl(x); }
ld ref_rsqrt(ld x) { return 1 / sqrtl(x); }
ld ref_tanh(ld x) { return tanhl(x); }
ld ref_sigmoid(ld x) { return ref_sigmoid2(x, 0); }
ld ref_relu(ld x) { return x < 0 ? 0 : x; }
ld ref_silu(ld x) { return std::isinf(x) && x < 0 ? 0 : x * ref_sigmoid(x); }
// The arguments of erfc and sigmoid in binary128 (libgcc arithmetic), split
// into long double hi + lo: their tails amplify argument errors ~2t^2 and 2|u|.
// Constants as long double pairs (Q literals need GNU extensions).
const __float128 kSqrtHalfQ = (__float128)0xb504f333f9de6484p-64L + 0xb2fb1366ea957d3ep-129L;
const __float128 kSqrt2PiQ = (__float128)0xcc42299ea1b28468p-64L + 0xfcb3c500bab8e2ffp-129L;
const __float128 kGeluKQ = (__float128)0xb727136a400fba88p-68L + 0x9aaa3ad18d25edd0p-134L;  // 0.044715
ld ref_gelu(ld x) {
  if (std::isnan(x) || std::isinf(x)) return x > 0 || std::isnan(x) ? x : 0;
  const __float128 t = -(__float128)x * kSqrtHalfQ;
  const ld th = ld(t), tl = ld(t - th);
  return 0.5L * x * (erfcl(th) - 1.12837916709551257389615890312154517L * expl(-th * th) * tl);
}
ld ref_gelu_tanh(ld x) {
  if (std::isnan(x) || std::isinf(x)) return x > 0 || std::isnan(x) ? x : 0;
  const __float128 q = x, a = 2 * kSqrt2PiQ * (q + kGeluKQ * q * q * q);
  const ld ah = ld(a), al = ld(a - ah);
  return x * ref_sigmoid2(ah, al);
}
ld ref_pow(ld x, ld y) { return powl(x, y); }

// |got - ref| in units of T's ulp at ref (subnormal quantum below the normals).
template <class T>
double ulp_err(T got, ld ref) {
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got) ? 0 : 1e30;
  if (std::isinf(got) || std::isinf(ref)) return T(ref) == got ? 0 : 1e30;
  typedef std::numeric_limits<T> lim;
  int e = ref == 0 ? lim::min_exponent - 1 : std::max(ilogbl(ref), lim::min_exponent - 1);
  return double(fabsl(ld(got) - ref) / ldexpl(1, e - (lim::digits - 1)));
}

// ---- inputs --------------------------------------------------------------------
template <class T>
std::vector<T> specials() {
  typedef std::numeric_limits<T> lim;
  std::vector<T> s = {0,
                      1,
                      2,
                      0.5,
                      1e-3,
                      3,
                      10,
                      20,
                      30,
                      37.55,
                      37.6,
                      40,
                      88.72,
                      87.33,
                      103.9,
                      104,
                      700,
                      708.4,
                      709.8,
                      745,
                      750,
                      1000,
                      lim::denorm_min(),
                      lim::min(),
                      lim::max(),
                      lim::infinity(),
                      lim::epsilon()};
  const size_t n = s.size();
  for (size_t i = 0; i < n; ++i) s.push_back(-s[i]);
  s.push_back(lim::quiet_NaN());
  s.push_back(-lim::quiet_NaN());
  return s;
}

template <class T>
std::vector<T> unary_inputs() {
  typedef std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t> U;
  std::mt19937_64 rng(sizeof(T) * 1234567);
  std::vector<T> x = specials<T>();
  for (int i = 0; i < 100000; ++i) {  // every finite bit pattern alike: subnormals to huge
    U u = U(rng());
    T f;
    std::memcpy(&f, &u, sizeof f);
    if (std::isfinite(f)) x.push_back(f);
  }
  // the ranges where the functions bend, saturate, underflow or lose bits
  const double lim = sizeof(T) == 4 ? 120 : 800, tail = sizeof(T) == 4 ? 15 : 40;
  std::uniform_real_distribution<double> wide(-lim, lim), mid(-tail, tail), small(-2, 2);
  for (int i = 0; i < 60000; ++i) x.push_back(T(wide(rng)));
  for (int i = 0; i < 60000; ++i) x.push_back(T(mid(rng)));
  for (int i = 0; i < 30000; ++i) x.push_back(T(small(rng)));
  std::uniform_real_distribution<double> lg(-30, 5);
  for (int i = 0; i < 30000; ++i) x.push_back(T((i & 1 ? -1 : 1) * std::pow(10.0, lg(rng))));
  while (x.size() % kLanes) x.push_back(0);
  return x;
}

template <class T>
void pow_inputs(std::vector<T>& x, std::vector<T>& y) {
  std::mt19937_64 rng(99 + sizeof(T));
  const std::vector<T> s = specials<T>();
  for (T a : s)
    for (T b : s) x.push_back(a), y.push_back(b);
  typedef std::numeric_limits<T> lim;
  std::uniform_real_distribution<double> lgx(std::log2(double(lim::denorm_min())), std::log2(double(lim::max())));
  std::uniform_real_distribution<double> u01(0, 1), yy(-60, 60);
  std::uniform_int_distribution<int> iy(-40, 40);
  for (int i = 0; i < 200000; ++i) {
    const T a = T(std::exp2(lgx(rng)));
    // exponents that keep |result| in range most of the time, plus integers for a < 0
    const double l = std::log2(double(a));
    T b = i % 4 == 0 ? T(yy(rng)) : T((u01(rng) * 2 - 1) * (sizeof(T) == 4 ? 140 : 1100) / (std::fabs(l) + 1));
    T aa = a;
    if (i % 5 == 0) aa = -a, b = T(iy(rng));
    x.push_back(aa), y.push_back(b);
  }
  while (x.size() % kLanes) x.push_back(1), y.push_back(1);
}

// ---- the implementations under test ----------------------------------------
template <class T>
struct Impl {
  std::string name;
  std::function<void(const std::string& fn, const T* x, const T* y, T* out, size_t n)> run;
};

#define TSR_UNARY_LIST(X) \
  X(neg) X(abs) X(exp) X(log) X(sqrt) X(rsqrt) X(tanh) X(sigmoid) X(relu) X(gelu) X(gelu_tanh) X(silu)
#define TSR_BINARY_LIST(X) X(add) X(sub) X(mul) X(div) X(max) X(min) X(pow)

template <class T>
void header_scalar(const std::string& fn, const T* x, const T* y, T* o, size_t n) {
#define TSR_U(F) \
  if (fn == #F)  \
    for (size_t i = 0; i < n; ++i) o[i] = tsr::fn_##F(x[i]);
#define TSR_B(F) \
  if (fn == #F)  \
    for (size_t i = 0; i < n; ++i) o[i] = tsr::fn_##F(x[i], y[i]);
  TSR_UNARY_LIST(TSR_U)
  TSR_BINARY_LIST(TSR_B)
#undef TSR_U
#undef TSR_B
}
template <class T>
void header_tile(const std::string& fn, const T* x, const T* y, T* o, size_t n) {
  using tsr::load;
#define TSR_U(F) \
  if (fn == #F)  \
    for (size_t i = 0; i < n; i += kLanes) tsr::store(o + i, tsr::fn_##F(load<T, kLanes>(x + i)));
#define TSR_B(F)                           \
  if (fn == #F)                            \
    for (size_t i = 0; i < n; i += kLanes) \
      tsr::store(o + i, tsr::fn_##F(load<T, kLanes>(x + i), load<T, kLanes>(y + i)));
  TSR_UNARY_LIST(TSR_U)
  TSR_BINARY_LIST(TSR_B)
#undef TSR_U
#undef TSR_B
}

// A kernel module with every function over tiles (k_*), over scalars (s_*),
// and exp over 8- and 4-lane tiles (256/128-bit libmvec variants), compiled
// and loaded by the runtime's CPU module cache exactly as rendered kernels are.
const char* kNativeKernels = R"(
namespace {
template <class T, int N, class F> void tiles(void* const* b, int64_t p0, int64_t p1, F f) {
  const T* x = static_cast<const T*>(b[0]);
  const T* y = static_cast<const T*>(b[1]);
  T* o = static_cast<T*>(b[2]);
  for (int64_t p = p0; p < p1; ++p) tsr::store(o + N * p, f(tsr::load<T, N>(x + N * p), tsr::load<T, N>(y + N * p)));
}
template <class T, class F> void scalars(void* const* b, int64_t p0, int64_t p1, F f) {
  const T* x = static_cast<const T*>(b[0]);
  const T* y = static_cast<const T*>(b[1]);
  T* o = static_cast<T*>(b[2]);
  for (int64_t i = p0 * 64; i < p1 * 64; ++i) o[i] = f(x[i], y[i]);
}
}  // namespace
#define TSR_K(F, EXPR)                                                                                           \
  extern "C" void k_##F##_f32(void* const* b, int64_t p0, int64_t p1) { tiles<float, 64>(b, p0, p1, [](auto x, auto y) { (void)y; return EXPR; }); }  \
  extern "C" void k_##F##_f64(void* const* b, int64_t p0, int64_t p1) { tiles<double, 64>(b, p0, p1, [](auto x, auto y) { (void)y; return EXPR; }); } \
  extern "C" void s_##F##_f32(void* const* b, int64_t p0, int64_t p1) { scalars<float>(b, p0, p1, [](auto x, auto y) { (void)y; return EXPR; }); }     \
  extern "C" void s_##F##_f64(void* const* b, int64_t p0, int64_t p1) { scalars<double>(b, p0, p1, [](auto x, auto y) { (void)y; return EXPR; }); }
#define TSR_U(F) TSR_K(F, tsr::fn_##F(x))
#define TSR_B(F) TSR_K(F, tsr::fn_##F(x, y))
TSR_UNARY_LIST(TSR_U)
TSR_BINARY_LIST(TSR_B)
extern "C" void k8_exp_f32(void* const* b, int64_t p0, int64_t p1) { tiles<float, 8>(b, p0 * 8, p1 * 8, [](auto x, auto) { return tsr::fn_exp(x); }); }
extern "C" void k4_exp_f32(void* const* b, int64_t p0, int64_t p1) { tiles<float, 4>(b, p0 * 16, p1 * 16, [](auto x, auto) { return tsr::fn_exp(x); }); }
extern "C" void k4_exp_f64(void* const* b, int64_t p0, int64_t p1) { tiles<double, 4>(b, p0 * 16, p1 * 16, [](auto x, auto) { return tsr::fn_exp(x); }); }
// b[3]: int64 count; lanes of tile p at or past count - 64 p become -1
extern "C" void k_mask_f32(void* const* b, int64_t p0, int64_t p1) {
  const int64_t c = *static_cast<const int64_t*>(b[3]);
  for (int64_t p = p0; p < p1; ++p)
    tsr::store(static_cast<float*>(b[2]) + 64 * p, tsr::mask_lanes(tsr::load<float, 64>(static_cast<const float*>(b[0]) + 64 * p), c - 64 * p, -1.0f));
}
extern "C" void k_mask_f64(void* const* b, int64_t p0, int64_t p1) {
  const int64_t c = *static_cast<const int64_t*>(b[3]);
  for (int64_t p = p0; p < p1; ++p)
    tsr::store(static_cast<double*>(b[2]) + 64 * p, tsr::mask_lanes(tsr::load<double, 64>(static_cast<const double*>(b[0]) + 64 * p), c - 64 * p, -1.0));
}
#define TSR_R(NAME, S, T)                                                                      \
  extern "C" void k_round_##NAME(void* const* b, int64_t p0, int64_t p1) {                       \
    for (int64_t p = p0; p < p1; ++p)                                                           \
      tsr::store(static_cast<T*>(b[2]) + 64 * p, tsr::round_to<S>(tsr::load<T, 64>(static_cast<const T*>(b[0]) + 64 * p))); \
  }
TSR_R(f16_f32, tsr::f16_t, float)
TSR_R(bf16_f32, tsr::bf16_t, float)
TSR_R(f16_f64, tsr::f16_t, double)
TSR_R(bf16_f64, tsr::bf16_t, double)
TSR_R(f32_f64, float, double)
// f32 -> f64 -> f32 over tiles: convert both ways, lane order kept
extern "C" void k_convert(void* const* b, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    auto d = tsr::convert<double>(tsr::load<float, 64>(static_cast<const float*>(b[0]) + 64 * p));
    tsr::store(static_cast<double*>(b[1]) + 64 * p, d);
    tsr::store(static_cast<float*>(b[2]) + 64 * p, tsr::convert<float>(tsr::round_to<float>(d)));
  }
}
)";

struct NativeModule {
  ir::KernelDesc desc;
  runtime::CpuModuleCache* cache;
  runtime::CpuKernelFn fn(const std::string& sym) {
    ir::KernelDesc k = desc;
    k.sym = sym;
    k.entry = sym;  // the harness source defines its functions by these names
    return cache->load(k);
  }
  std::string so() const { return cache->entry_dir(desc) + "/kernel.so"; }
};

NativeModule& native() {
  static NativeModule m = [] {
    NativeModule n;
    std::string src = runtime::read_text_file(repo_file("device/cpu/tessera_tile.hpp"));
    src +=
        "#define TSR_UNARY_LIST(X) X(neg) X(abs) X(exp) X(log) X(sqrt) X(rsqrt) X(tanh) X(sigmoid) X(relu) X(gelu) "
        "X(gelu_tanh) X(silu)\n#define TSR_BINARY_LIST(X) X(add) X(sub) X(mul) X(div) X(max) X(min) X(pow)\n";
    src += kNativeKernels;
    n.desc.source = src;
    n.desc.sha256 = sha256_hex(src);
    n.desc.target = "cpu";
    n.cache = &runtime::CpuModuleCache::global();
    return n;
  }();
  return m;
}

template <class T>
void native_run(const std::string& prefix, const std::string& fn, const T* x, const T* y, T* o, size_t n) {
  const std::string t = sizeof(T) == 4 ? "_f32" : "_f64";
  void* b[4] = {const_cast<T*>(x), const_cast<T*>(y ? y : x), o, nullptr};
  native().fn(prefix + fn + t)(b, 0, int64_t(n / kLanes));
}

template <class T>
std::vector<Impl<T>> impls() {
  return {{"header scalar", header_scalar<T>},
          {"header tile", header_tile<T>},
          {"native scalar", [](auto& f, auto x, auto y, auto o, size_t n) { native_run<T>("s_", f, x, y, o, n); }},
          {"native tile", [](auto& f, auto x, auto y, auto o, size_t n) { native_run<T>("k_", f, x, y, o, n); }}};
}

struct Worst {
  double ulp = 0;
  double at = 0, at2 = 0;
};

template <class T>
void check_unary(const char* fn, ld (*ref)(ld)) {
  const std::vector<T> x = unary_inputs<T>();
  std::vector<ld> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = ref(x[i]);
  std::vector<T> o(x.size());
  // f64 gelu for x in [-38.6, -37.55]: erfc's own result is subnormal there
  // (see the library), so these lanes are held to an absolute bound.
  const bool band = sizeof(T) == 8 && std::string(fn) == "gelu";
  for (const Impl<T>& impl : impls<T>()) {
    impl.run(fn, x.data(), nullptr, o.data(), x.size());
    Worst w, wb;
    double abs_band = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double e = ulp_err<T>(o[i], r[i]);
      if (band && x[i] >= -38.7 && x[i] <= -37.5) {
        if (e > wb.ulp) wb = {e, double(x[i])};
        abs_band = std::max(abs_band, double(fabsl(o[i] - r[i])));
      } else if (e > w.ulp) {
        w = {e, double(x[i])};
      }
    }
    std::printf("  %-10s %s %-13s max %.3f ulp (at x=%.17g)\n", fn, sizeof(T) == 4 ? "f32" : "f64", impl.name.c_str(),
                w.ulp, w.at);
    EXPECT_LE(w.ulp, 4.0) << fn << " " << impl.name << " at x=" << w.at;
    if (band) {
      std::printf("  %-10s %s %-13s x in [-38.7, -37.5]: max %.3f ulp (at x=%.17g), abs error %.3g (2^%.1f)\n", fn,
                  "f64", impl.name.c_str(), wb.ulp, wb.at, abs_band, std::log2(abs_band));
      EXPECT_LT(abs_band, 0x1p-1065);
    }
  }
}

template <class T>
void check_binary(const char* fn) {
  std::vector<T> x, y;
  pow_inputs(x, y);
  std::vector<T> o(x.size());
  for (const Impl<T>& impl : impls<T>()) {
    impl.run(fn, x.data(), y.data(), o.data(), x.size());
    Worst w;
    for (size_t i = 0; i < x.size(); ++i) {
      double e;
      if (std::string(fn) == "pow") {
        e = ulp_err<T>(o[i], ref_pow(x[i], y[i]));
      } else {
        const T a = x[i], b = y[i];
        T want = fn[0] == 'a'   ? a + b
                 : fn[0] == 's' ? a - b
                 : fn[1] == 'u' ? a * b
                 : fn[0] == 'd' ? a / b
                 : fn[1] == 'a' ? (a < b ? b : a)
                                : (b < a ? b : a);
        if (fn[0] == 'm' && fn[1] != 'u' && (a != a || b != b)) want = std::numeric_limits<T>::quiet_NaN();
        e = (want != want) ? (o[i] != o[i] ? 0 : 1e30) : (o[i] == want ? 0 : 1e30);
      }
      if (e > w.ulp) w = {e, double(x[i]), double(y[i])};
    }
    std::printf("  %-10s %s %-13s max %.3f ulp (at x=%.17g y=%.17g)\n", fn, sizeof(T) == 4 ? "f32" : "f64",
                impl.name.c_str(), w.ulp, w.at, w.at2);
    EXPECT_LE(w.ulp, std::string(fn) == "pow" ? 4.0 : 0.0) << fn << " " << impl.name;
  }
}

#define TSR_TEST_UNARY(F)             \
  TEST(DeviceMath, Cpu_##F) {         \
    check_unary<float>(#F, ref_##F);  \
    check_unary<double>(#F, ref_##F); \
  }
TSR_UNARY_LIST(TSR_TEST_UNARY)
#define TSR_TEST_BINARY(F)    \
  TEST(DeviceMath, Cpu_##F) { \
    check_binary<float>(#F);  \
    check_binary<double>(#F); \
  }
TSR_BINARY_LIST(TSR_TEST_BINARY)

// The special values the fused kernels rely on, through every implementation.
template <class T>
void check_specials() {
  typedef std::numeric_limits<T> lim;
  const T nan = lim::quiet_NaN(), inf = lim::infinity();
  struct Want {
    const char* fn;
    T x, y, want;  // want NaN: a NaN result
  };
  const std::vector<Want> wants = {
      {"relu", nan, 0, nan},     {"relu", -2, 0, 0},         {"relu", 3, 0, 3},          {"sigmoid", -1000, 0, 0},
      {"sigmoid", 1000, 0, 1},   {"sigmoid", nan, 0, nan},   {"sigmoid", -inf, 0, 0},    {"sigmoid", inf, 0, 1},
      {"silu", -1000, 0, 0},     {"silu", -inf, 0, 0},       {"silu", inf, 0, inf},      {"silu", nan, 0, nan},
      {"gelu", -inf, 0, 0},      {"gelu", inf, 0, inf},      {"gelu", nan, 0, nan},      {"gelu", -1000, 0, 0},
      {"gelu_tanh", -inf, 0, 0}, {"gelu_tanh", inf, 0, inf}, {"gelu_tanh", -1000, 0, 0}, {"gelu_tanh", nan, 0, nan},
      {"rsqrt", 0, 0, inf},      {"rsqrt", -1, 0, nan},      {"rsqrt", inf, 0, 0},       {"log", 0, 0, -inf},
      {"log", -1, 0, nan},       {"sqrt", -1, 0, nan},       {"exp", -inf, 0, 0},        {"exp", 1000, 0, inf},
      {"tanh", -inf, 0, -1},     {"abs", -0.0, 0, 0},        {"max", nan, 1, nan},       {"max", 1, nan, nan},
      {"min", nan, 1, nan},      {"min", 1, nan, nan},       {"max", -inf, nan, nan},    {"min", inf, nan, nan},
      {"max", 1, 2, 2},          {"min", 1, 2, 1},           {"pow", 2, 10, 1024},       {"pow", -8, 1.0 / 3, nan},
      {"pow", -2, 3, -8},        {"pow", nan, 0, 1},         {"pow", 1, nan, 1},         {"pow", 0, -1, inf},
  };
  for (const Impl<T>& impl : impls<T>())
    for (const Want& w : wants) {
      std::vector<T> x(kLanes, w.x), y(kLanes, w.y), o(kLanes);
      impl.run(w.fn, x.data(), y.data(), o.data(), kLanes);
      for (T v : o) {
        if (w.want != w.want)
          EXPECT_TRUE(v != v) << impl.name << " " << w.fn << "(" << w.x << ", " << w.y << ") = " << v;
        else EXPECT_EQ(v, w.want) << impl.name << " " << w.fn << "(" << w.x << ", " << w.y << ")";
      }
    }
  // abs clears the sign of -0 and of NaN alike
  EXPECT_FALSE(std::signbit(tsr::fn_abs(T(-0.0))));
  EXPECT_FALSE(std::signbit(tsr::fn_abs(tsr::full<T, kLanes>(-0.0)).v[0][0]));
}
TEST(DeviceMath, CpuSpecialValues) {
  check_specials<float>();
  check_specials<double>();
}

// Reference rounding to `bits` significant bits with exponent floor emin and
// overflow at `big` (f16: 11, -14, 65520; bf16: 8, -126, 2^128 - 2^119).
double ref_round(double x, int bits, int emin, double big) {
  if (x != x || std::isinf(x) || x == 0) return x;
  const int e = std::max(std::ilogb(x), emin);
  const double q = std::ldexp(1.0, e - (bits - 1));
  const double r = std::nearbyint(x / q) * q;
  return std::fabs(r) >= big ? std::copysign(INFINITY, x) : r;
}
const double kBigF16 = 65520, kBigBf16 = 0x1.ffp127;  // the halfway points to inf

TEST(DeviceMath, CpuRoundTo) {
  std::mt19937_64 rng(5);
  std::vector<double> d;
  // exact ties between neighbours (and a hair above / below, below float's
  // resolution: a round via float would see a tie)
  for (int i = 0; i < 20000; ++i) {
    const uint16_t h = uint16_t(rng() & 0x7bfe);
    const double a = tsr::widen(tsr::f16_t{h}), b = tsr::widen(tsr::f16_t{uint16_t(h + 1)});
    const double mid = (a + b) / 2;
    for (double v :
         {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e300), mid * (1 + 0x1p-40), mid * (1 - 0x1p-40)})
      d.push_back(i & 1 ? -v : v);
    const uint16_t g = uint16_t(rng() & 0x7f7e);
    const double c = tsr::widen(tsr::bf16_t{g}), e = tsr::widen(tsr::bf16_t{uint16_t(g + 1)}), m2 = (c + e) / 2;
    for (double v : {m2, m2 * (1 + 0x1p-40), m2 * (1 - 0x1p-40)}) d.push_back(i & 1 ? -v : v);
  }
  std::uniform_real_distribution<double> lg(-150, 130);
  for (int i = 0; i < 20000; ++i) d.push_back((i & 1 ? -1 : 1) * std::exp2(lg(rng)));
  for (double s : {0.0, -0.0, 65504.0, 65519.99, 65520.0, 1e300, double(INFINITY), double(NAN), 0x1p-25, 0x1.8p-25,
                   0x1p-24, 0x1.fep127, 0x1.ffp127, 0x1.fefp127})
    d.push_back(s), d.push_back(-s);
  while (d.size() % kLanes) d.push_back(1);
  std::vector<float> f(d.size());
  for (size_t i = 0; i < d.size(); ++i) f[i] = float(d[i]);

  auto same = [](double got, double want) { return (got != got && want != want) || (got == want); };
  auto& nat = native();
  std::vector<double> od(d.size());
  std::vector<float> of(d.size());
  void* bd[4] = {d.data(), nullptr, od.data(), nullptr};
  void* bf[4] = {f.data(), nullptr, of.data(), nullptr};
  const int64_t tiles = int64_t(d.size() / kLanes);
  int bad = 0;
  // f64 lanes: one rounding from double
  nat.fn("k_round_f16_f64")(bd, 0, tiles);
  for (size_t i = 0; i < d.size(); ++i) {
    const double want = ref_round(d[i], 11, -14, kBigF16);
    bad += !same(od[i], want) + !same(tsr::round_to<tsr::f16_t>(d[i]), want);
    if (bad && bad < 5 && !same(od[i], want)) ADD_FAILURE() << "f16 of " << d[i] << ": " << od[i] << " want " << want;
  }
  nat.fn("k_round_bf16_f64")(bd, 0, tiles);
  for (size_t i = 0; i < d.size(); ++i) {
    const double want = ref_round(d[i], 8, -126, kBigBf16);
    bad += !same(od[i], want) + !same(tsr::round_to<tsr::bf16_t>(d[i]), want);
  }
  nat.fn("k_round_f32_f64")(bd, 0, tiles);
  for (size_t i = 0; i < d.size(); ++i)
    bad += !same(od[i], double(float(d[i]))) + !same(tsr::round_to<float>(d[i]), double(float(d[i])));
  // f32 lanes, through the header's tiles and the native kernel
  nat.fn("k_round_f16_f32")(bf, 0, tiles);
  for (size_t i = 0; i < f.size(); i += kLanes) {
    auto t = tsr::round_to<tsr::f16_t>(tsr::load<float, kLanes>(f.data() + i));
    float h[kLanes];
    tsr::store(h, t);
    for (int j = 0; j < kLanes; ++j) {
      const double want = ref_round(f[i + j], 11, -14, kBigF16);
      bad += !same(of[i + j], want) + !same(h[j], want);
    }
  }
  nat.fn("k_round_bf16_f32")(bf, 0, tiles);
  for (size_t i = 0; i < f.size(); ++i) {
    const double want = ref_round(f[i], 8, -126, kBigBf16);
    bad += !same(of[i], want) + !same(tsr::round_to<tsr::bf16_t>(f[i]), want);
  }
  EXPECT_EQ(bad, 0);
  // storage round trips are identities
  EXPECT_EQ(tsr::round_to<double>(1.0f / 3), 1.0f / 3);
  EXPECT_EQ(tsr::round_to<float>(0.1f), 0.1f);
  EXPECT_EQ(tsr::round_to<tsr::f16_t>(1.0 + 0x1p-11), 1.0);                      // tie to even
  EXPECT_EQ(tsr::round_to<tsr::f16_t>(1.0 + 0x1p-11 + 0x1p-40), 1.0 + 0x1p-10);  // not a tie in f64
  EXPECT_EQ(tsr::round_to<tsr::bf16_t>(1.0f + 0x1p-8f), 1.0f);
  EXPECT_EQ(tsr::round_to<tsr::bf16_t>(1.0f + 0x3p-8f), 1.0f + 0x1p-6f);
}

TEST(DeviceMath, CpuConvertAndMask) {
  std::vector<float> f(kLanes * 4);
  for (size_t i = 0; i < f.size(); ++i) f[i] = float(i) * 1.25f - 7;
  f[5] = NAN;
  std::vector<double> d(f.size());
  std::vector<float> back(f.size());
  void* b[4] = {f.data(), d.data(), back.data(), nullptr};
  native().fn("k_convert")(b, 0, 4);
  for (size_t i = 0; i < f.size(); ++i) {
    if (i == 5) {
      EXPECT_TRUE(d[i] != d[i] && back[i] != back[i]);
      continue;
    }
    EXPECT_EQ(d[i], double(f[i]));
    EXPECT_EQ(back[i], f[i]);
  }
  // header: f64 -> f32 rounds to nearest, lane order kept
  tsr::tile<double, kLanes> t = tsr::load<double, kLanes>(d.data());
  t = tsr::fn_add(t, tsr::full<double, kLanes>(0x1p-30));
  float g[kLanes];
  tsr::store(g, tsr::convert<float>(t));
  for (int i = 0; i < kLanes; ++i)
    if (i != 5) {
      EXPECT_EQ(g[i], float(d[i] + 0x1p-30));
    }
  EXPECT_EQ(tsr::convert<double>(0.1f), double(0.1f));
  EXPECT_EQ(tsr::convert<float>(0.1), 0.1f);

  // mask_lanes: lane i (the tile's order) survives iff i < count
  for (int64_t count : {-3, 0, 1, 7, 16, 17, 33, 63, 64, 65, 1000}) {
    std::vector<float> of(f.size());
    std::vector<double> od(d.size());
    int64_t c = count;
    void* bf[4] = {f.data(), nullptr, of.data(), &c};
    void* bd[4] = {d.data(), nullptr, od.data(), &c};
    native().fn("k_mask_f32")(bf, 0, 1);
    native().fn("k_mask_f64")(bd, 0, 1);
    float hf[kLanes];
    double hd[kLanes];
    tsr::store(hf, tsr::mask_lanes(tsr::load<float, kLanes>(f.data()), count, -1.0f));
    tsr::store(hd, tsr::mask_lanes(tsr::load<double, kLanes>(d.data()), count, -1.0));
    float h4[4];
    tsr::store(h4, tsr::mask_lanes(tsr::load<float, 4>(f.data()), count, -1.0f));
    for (int i = 0; i < kLanes; ++i) {
      const bool keep = i < count;
      auto ok = [&](double got, double x) { return keep ? (got == x || (got != got && x != x)) : got == -1; };
      EXPECT_TRUE(ok(of[i], f[i]) && ok(hf[i], f[i]) && ok(od[i], d[i]) && ok(hd[i], d[i]))
          << "count " << count << " lane " << i;
      if (i < 4) {
        EXPECT_TRUE(ok(h4[i], f[i])) << "count " << count << " lane " << i;
      }
    }
  }
}

// fold_rows: every row of an [R, C] slab becomes the combine of its rows in
// row order (the order a GPU's fold takes through shared memory), for each
// column; max propagates a NaN.
TEST(DeviceMath, CpuFoldRows) {
  constexpr int R = 4, C = 16;
  std::vector<float> x(R * C);
  for (int i = 0; i < R * C; ++i) x[i] = std::ldexp(float(i % 7) - 3.1f, i % 5 * 9);  // order-sensitive sums
  x[2 * C + 5] = NAN;
  float sum[R * C], max[R * C];
  tsr::store(sum, tsr::fold_rows_sum<R, C>(tsr::load<float, R * C>(x.data())));
  tsr::store(max, tsr::fold_rows_max<R, C>(tsr::load<float, R * C>(x.data())));
  for (int c = 0; c < C; ++c) {
    float s = x[c], m = x[c];
    for (int r = 1; r < R; ++r) s = s + x[r * C + c], m = tsr::combine_max(m, x[r * C + c]);
    for (int r = 0; r < R; ++r) {
      EXPECT_TRUE(sum[r * C + c] == s || (std::isnan(s) && std::isnan(sum[r * C + c]))) << "sum column " << c;
      EXPECT_TRUE(max[r * C + c] == m || (std::isnan(m) && std::isnan(max[r * C + c]))) << "max column " << c;
    }
  }
  EXPECT_TRUE(std::isnan(max[5]) && std::isnan(max[3 * C + 5]));
}

// load2d_piece: a concat along the columns, one operand at a time. Rotate-
// half of rows of 16 (two pieces of 8 from a strided bf16 buffer, the second
// operand first) on 3 of 4 rows: lanes outside a piece's columns and rows
// keep what `into` held.
TEST(DeviceMath, CpuLoad2dPiece) {
  constexpr int R = 4, C = 16;
  constexpr long long RS = 40;  // the operands' row stride
  std::vector<tsr::bf16_t> buf(R * RS);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = tsr::narrow<tsr::bf16_t>(float(i) * 0.5f - 7.0f);
  float got[R * C];
  auto t = tsr::full<float, R * C>(-1.0f);
  t = tsr::load2d_piece<R, C, RS, 0, 8, true>(t, buf.data() + 8, 3);  // columns 0..7: the second half
  t = tsr::load2d_piece<R, C, RS, 8, 16, true>(t, buf.data(), 3);     // columns 8..15: the first half
  tsr::store(got, t);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      const float want = r >= 3 ? -1.0f : tsr::widen(buf[r * RS + (c < 8 ? 8 + c : c - 8)]);
      EXPECT_EQ(got[r * C + c], want) << "lane (" << r << ", " << c << ")";
    }
}

// Narrower tiles use the 256- and 128-bit libmvec variants; the kernel calls
// libmvec's vector entry points (seen in the disassembly).
TEST(DeviceMath, CpuNativeUsesLibmvec) {
  std::vector<float> x = unary_inputs<float>(), o(x.size());
  std::vector<double> xd = unary_inputs<double>(), od(xd.size());
  for (const char* sym : {"k8_exp_f32", "k4_exp_f32"}) {
    void* b[4] = {x.data(), x.data(), o.data(), nullptr};  // the kernels read a second operand, unused here
    native().fn(sym)(b, 0, int64_t(x.size() / kLanes));
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, ulp_err<float>(o[i], expl(x[i])));
    std::printf("  %s max %.3f ulp\n", sym, worst);
    EXPECT_LE(worst, 4.0) << sym;
  }
  void* b[4] = {xd.data(), xd.data(), od.data(), nullptr};
  native().fn("k4_exp_f64")(b, 0, int64_t(xd.size() / kLanes));
  double worst = 0;
  for (size_t i = 0; i < xd.size(); ++i) worst = std::max(worst, ulp_err<double>(od[i], expl(xd[i])));
  std::printf("  k4_exp_f64 max %.3f ulp\n", worst);
  EXPECT_LE(worst, 4.0);

  const std::string so = native().so();
  const std::string cmd = "objdump -d --no-show-raw-insn '" + so + "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) GTEST_SKIP() << "objdump not available";
  std::string dis;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) dis.append(buf, n);
  pclose(p);
  if (dis.empty()) GTEST_SKIP() << "objdump not available";
  // the body of k_exp_f32 (64 lanes), following tail jumps into local helpers
  std::string body, sym = "k_exp_f32";
  for (int hops = 0; hops < 4 && !sym.empty(); ++hops) {
    const size_t at = dis.find("<" + sym + ">:");
    ASSERT_NE(at, std::string::npos) << sym;
    const std::string part = dis.substr(at, dis.find("\n\n", at) - at);
    body += part + "\n";
    sym.clear();
    if (size_t j = part.find("\tjmp "); j != std::string::npos) {
      const size_t a = part.find('<', j), b = part.find('>', a);
      if (a != std::string::npos && b != std::string::npos && part.find('+', a) > b)
        sym = part.substr(a + 1, b - a - 1);
    }
  }
  __builtin_cpu_init();
  const char* want = __builtin_cpu_supports("avx512f") ? "_ZGVeN16v_expf"
                     : __builtin_cpu_supports("avx2")  ? "_ZGVdN8v_expf"
                                                       : "_ZGVbN4v_expf";
  EXPECT_NE(body.find(want), std::string::npos) << body;
  std::printf("  k_exp_f32 calls %s: %s\n", want, body.find(want) != std::string::npos ? "yes" : "no");
  for (size_t i = 0, j; (j = body.find('\n', i)) != std::string::npos; i = j + 1)
    if (body.compare(i, 1, "<") == 0 || body.find("call", i) < j)
      std::printf("    %s\n", body.substr(i, j - i).c_str());
}

// ---- CUDA ----------------------------------------------------------------------
// Evaluates function `fn` over n lanes of a and b into out, 2048 lanes per
// block: every new function for f32 and f64 tiles (cases 0..24) and scalars
// (default). Compiled here; run against the references on a GPU machine.
const char* kCudaEval = R"(
template <class T> __device__ void eval_all(const T* a, const T* b, T* out, int fn, long long n, long long base) {
  using namespace tsr;
  constexpr int N = 2048;
  const tile<T, N> x = load_masked<T, N>(a + base, n - base, T(0)), y = load_masked<T, N>(b + base, n - base, T(0));
  tile<T, N> r;
  switch (fn) {
    case 0: r = fn_neg(x); break;
    case 1: r = fn_abs(x); break;
    case 2: r = fn_exp(x); break;
    case 3: r = fn_log(x); break;
    case 4: r = fn_sqrt(x); break;
    case 5: r = fn_rsqrt(x); break;
    case 6: r = fn_tanh(x); break;
    case 7: r = fn_sigmoid(x); break;
    case 8: r = fn_relu(x); break;
    case 9: r = fn_gelu(x); break;
    case 10: r = fn_gelu_tanh(x); break;
    case 11: r = fn_silu(x); break;
    case 12: r = fn_add(x, y); break;
    case 13: r = fn_sub(x, y); break;
    case 14: r = fn_mul(x, y); break;
    case 15: r = fn_div(x, y); break;
    case 16: r = fn_max(x, y); break;
    case 17: r = fn_min(x, y); break;
    case 18: r = fn_pow(x, y); break;
    case 19: r = mask_lanes(x, n - base - 7, T(-1)); break;
    case 20: r = round_to<f16_t>(x); break;
    case 21: r = round_to<bf16_t>(x); break;
    case 22: r = round_to<float>(x); break;
    case 23: r = round_to<double>(x); break;
    case 24: r = convert<T>(convert<double>(convert<float>(x))); break;
    default:
      for (int i = 0; i < tile<T, N>::E; ++i) {
        T s = x.v[i], t = y.v[i];
        s = fn_add(fn_neg(fn_abs(fn_exp(fn_log(fn_sqrt(fn_rsqrt(fn_tanh(fn_sigmoid(fn_relu(s))))))))), fn_gelu(s));
        s = fn_sub(fn_mul(fn_div(fn_max(fn_min(s, t), t), t), fn_pow(s, t)), fn_gelu_tanh(fn_silu(t)));
        s = round_to<f16_t>(s) + round_to<bf16_t>(s) + round_to<float>(s) + round_to<double>(s);
        r.v[i] = convert<T>(convert<float>(s)) + convert<T>(convert<double>(s));
      }
  }
  store_masked(out + base, n - base, r);
}
extern "C" __global__ void __launch_bounds__(256) tsr_eval_f32(const float* a, const float* b, float* out, int fn, long long n) {
  eval_all<float>(a, b, out, fn, n, (long long)blockIdx.x * 2048);
}
extern "C" __global__ void __launch_bounds__(256) tsr_eval_f64(const double* a, const double* b, double* out, int fn, long long n) {
  eval_all<double>(a, b, out, fn, n, (long long)blockIdx.x * 2048);
}
)";

TEST(DeviceMath, CudaEveryFunctionCompilesWithNvrtc) {
  try {
    runtime::cuda::nvrtc();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not available: " << e.what();
  }
  const std::string src = "#define TSR_THREADS 256\n#define TSR_VEC 4\n" +
                          runtime::read_text_file(repo_file("device/gpu/tessera_tile.cuh")) + kCudaEval;
  std::string log;
  const std::string cubin = runtime::cuda::nvrtc_compile(src, "tsr_device_math", "sm_90a", &log);
  EXPECT_GT(cubin.size(), 10000u);
  EXPECT_EQ(log.find("warning"), std::string::npos) << log;
}

}  // namespace
}  // namespace tessera
