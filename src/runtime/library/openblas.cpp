#include "runtime/library/openblas.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "support/diagnostic.hpp"

namespace tessera::runtime {

namespace {

// The CBLAS enums (values fixed by the CBLAS standard).
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using Sgemm = void (*)(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda,
                       const float* b, int ldb, float beta, float* c, int ldc);
using GetConfig = char* (*)();

// A DYNAMIC_ARCH OpenBLAS picks its kernels by the CPU's model number, and
// one older than the CPU (Debian 12's 0.3.21 on recent Xeons) falls back to
// its generic Prescott kernels, about 6x slower at sgemm (docs/journal.md,
// ninth session). Unless the user chose a core type, name the one the CPU's
// features support, before the library reads the variable at load.
void choose_core_type() {
  if (std::getenv("OPENBLAS_CORETYPE")) return;
  __builtin_cpu_init();
  const char* core = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")
                         ? "SkylakeX"
                     : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? "Haswell"
                                                                                       : nullptr;
  if (core) setenv("OPENBLAS_CORETYPE", core, 0);
}

struct OpenBlas {
  Sgemm sgemm = nullptr;
  GetConfig config = nullptr;
  std::string error;
  OpenBlas() {
    choose_core_type();
    void* lib = nullptr;
    for (const char* name : {"libopenblas.so.0", "libopenblas.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) {
      error = "OpenBLAS is not installed (libopenblas.so.0 not found; Debian: libopenblas0-pthread)";
      return;
    }
    sgemm = reinterpret_cast<Sgemm>(dlsym(lib, "cblas_sgemm"));
    config = reinterpret_cast<GetConfig>(dlsym(lib, "openblas_get_config"));
    if (!sgemm || !config) error = "libopenblas has no cblas_sgemm / openblas_get_config";
  }
};

const OpenBlas& lib() {
  static OpenBlas l;
  if (!l.error.empty()) fail("E760", l.error);
  return l;
}

}  // namespace

std::string openblas_version() { return lib().config(); }

std::function<void(void* const*)> openblas_matmul(const ir::LibraryMatmul& c) {
  const OpenBlas& l = lib();
  if (c.library != "openblas" || c.operand != DType::F32 || c.result != DType::F32)
    fail("E761", "OpenBLAS runs f32 -> f32 matmuls (sgemm) only");
  constexpr int64_t kMax = (int64_t{1} << 31) - 1;
  if (c.m > kMax || c.n > kMax || c.k > kMax) fail("E761", "OpenBLAS takes 32-bit extents");
  // Row-major A is MxK (lda K), transposed KxM (lda M); B likewise.
  const int m = int(c.m), n = int(c.n), k = int(c.k);
  const int lda = c.transpose_a ? m : k, ldb = c.transpose_b ? k : n;
  const int ta = c.transpose_a ? kTrans : kNoTrans, tb = c.transpose_b ? kTrans : kNoTrans;
  return [=, sgemm = l.sgemm](void* const* buffers) {
    const float* a = static_cast<const float*>(buffers[0]);
    const float* b = static_cast<const float*>(buffers[1]);
    // with add_c, out starts as c and the call adds to it (beta = 1)
    const float* addend = c.add_c ? static_cast<const float*>(buffers[2]) : nullptr;
    float* out = static_cast<float*>(buffers[c.add_c ? 3 : 2]);
    const int64_t mn = int64_t(m) * n;
    for (int64_t i = 0; i < c.batch && mn > 0; ++i) {
      float* o = out + i * mn;
      // (BLAS with k = 0 scales C by beta: the zeros are written here)
      if (addend) std::copy_n(addend + i * mn, mn, o);
      else if (k == 0) std::fill_n(o, mn, 0.0f);
      if (k == 0) continue;
      sgemm(kRowMajor, ta, tb, m, n, k, 1.0f, a + i * c.a_batch_stride, std::max(lda, 1), b + i * c.b_batch_stride,
            std::max(ldb, 1), addend ? 1.0f : 0.0f, o, std::max(n, 1));
    }
  };
}

}  // namespace tessera::runtime
