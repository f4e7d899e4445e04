#include "runtime/cuda/cublaslt.hpp"

#include <cublasLt.h>
#include <dlfcn.h>

#include <cstdlib>

#include "runtime/cuda/cuda_api.hpp"
#include "support/diagnostic.hpp"

namespace tessera::runtime::cuda {

namespace {

struct Lt {
#define TSR_LT(name) decltype(&::name) name = nullptr;
  TSR_LT(cublasLtCreate)
  TSR_LT(cublasLtDestroy)
  TSR_LT(cublasLtGetVersion)
  TSR_LT(cublasLtMatmulDescCreate)
  TSR_LT(cublasLtMatmulDescDestroy)
  TSR_LT(cublasLtMatmulDescSetAttribute)
  TSR_LT(cublasLtMatrixLayoutCreate)
  TSR_LT(cublasLtMatrixLayoutDestroy)
  TSR_LT(cublasLtMatrixLayoutSetAttribute)
  TSR_LT(cublasLtMatmulPreferenceCreate)
  TSR_LT(cublasLtMatmulPreferenceDestroy)
  TSR_LT(cublasLtMatmulPreferenceSetAttribute)
  TSR_LT(cublasLtMatmulAlgoGetHeuristic)
  TSR_LT(cublasLtMatmul)
#undef TSR_LT
  cublasLtHandle_t handle = nullptr;
  std::string error;

  Lt() {
    std::string cuda_home = std::getenv("CUDA_HOME") ? std::getenv("CUDA_HOME") : "/usr/local/cuda";
    void* lib = nullptr;
    for (const std::string& n :
         {std::string("libcublasLt.so.13"), std::string("libcublasLt.so.12"), std::string("libcublasLt.so"),
          cuda_home + "/lib64/libcublasLt.so.13", cuda_home + "/lib64/libcublasLt.so"})
      if ((lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) {
      error = "cuBLASLt is not installed (libcublasLt.so.13 not found; it comes with the CUDA toolkit)";
      return;
    }
    auto bind = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn && error.empty()) error = std::string("libcublasLt has no ") + name;
    };
    bind(cublasLtCreate, "cublasLtCreate");
    bind(cublasLtDestroy, "cublasLtDestroy");
    bind(cublasLtGetVersion, "cublasLtGetVersion");
    bind(cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate");
    bind(cublasLtMatmulDescDestroy, "cublasLtMatmulDescDestroy");
    bind(cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
    bind(cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
    bind(cublasLtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
    bind(cublasLtMatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute");
    bind(cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
    bind(cublasLtMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy");
    bind(cublasLtMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
    bind(cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
    bind(cublasLtMatmul, "cublasLtMatmul");
    if (error.empty() && cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS) error = "cublasLtCreate failed";
  }
};

const Lt& lt() {
  driver();  // a context first (E730 without a GPU)
  static Lt l;
  if (!l.error.empty()) fail("E762", l.error);
  return l;
}

void ok(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    fail("E763", std::string("cuBLASLt: ") + what + " failed (status " + std::to_string(int(s)) + ")");
}

cudaDataType_t data_type(DType d) {
  switch (d) {
    case DType::F32: return CUDA_R_32F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    default: fail("E761", "cuBLASLt matmul takes f32, f16 or bf16");
  }
}

constexpr size_t kWorkspace = 32u << 20;

}  // namespace

// Row-major C (MxN) = A B is, read column-major, C^T (NxM) = B^T A^T: the
// library's "A" is our B and its "B" is our A, each described as stored.
struct CublasLtMatmul::Plan {
  ir::LibraryMatmul call;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  CUdeviceptr workspace = 0;
};

CublasLtMatmul::CublasLtMatmul(const ir::LibraryMatmul& c) : plan_(std::make_unique<Plan>()) {
  const Lt& l = lt();
  Plan& p = *plan_;
  p.call = c;
  if (c.m == 0 || c.n == 0 || c.k == 0) return;  // no call: nothing, or zeros (enqueue)
  ok(l.cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul descriptor");
  const cublasOperation_t ta = c.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                          tb = c.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  ok(l.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "transa");
  ok(l.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "transb");
  const uint64_t m = c.m, n = c.n, k = c.k;
  // our B, stored KxN (NxK transposed), column-major NxK (KxN)
  ok(l.cublasLtMatrixLayoutCreate(&p.la, data_type(c.operand), c.transpose_b ? k : n, c.transpose_b ? n : k,
                                  c.transpose_b ? k : n),
     "layout of b");
  ok(l.cublasLtMatrixLayoutCreate(&p.lb, data_type(c.operand), c.transpose_a ? m : k, c.transpose_a ? k : m,
                                  c.transpose_a ? m : k),
     "layout of a");
  ok(l.cublasLtMatrixLayoutCreate(&p.lc, data_type(c.result), n, m, n), "layout of out (and of c)");
  if (c.batch > 1) {
    const int32_t count = static_cast<int32_t>(c.batch);
    const int64_t sa = c.b_batch_stride, sb = c.a_batch_stride, sc = c.m * c.n;
    for (auto [layout, stride] : {std::pair{p.la, sa}, std::pair{p.lb, sb}, std::pair{p.lc, sc}}) {
      ok(l.cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), "batch");
      ok(l.cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                            sizeof stride),
         "batch stride");
    }
  }
  cublasLtMatmulPreference_t pref = nullptr;
  ok(l.cublasLtMatmulPreferenceCreate(&pref), "preference");
  const uint64_t ws = kWorkspace;
  ok(l.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
     "workspace size");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t s = l.cublasLtMatmulAlgoGetHeuristic(l.handle, p.desc, p.la, p.lb, p.lc, p.lc, pref, 1, &result,
                                                      &found);
  l.cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0)
    fail("E761", "cuBLASLt has no algorithm for this matmul (" + std::string(dtype_name(c.operand)) + " -> " +
                     std::string(dtype_name(c.result)) + ")");
  p.algo = result.algo;
  check(driver().cuMemAlloc(&p.workspace, kWorkspace), "cuMemAlloc(cuBLASLt workspace)");
}

CublasLtMatmul::~CublasLtMatmul() {
  if (!plan_) return;
  const Lt& l = lt();
  if (plan_->desc) l.cublasLtMatmulDescDestroy(plan_->desc);
  for (auto layout : {plan_->la, plan_->lb, plan_->lc})
    if (layout) l.cublasLtMatrixLayoutDestroy(layout);
  if (plan_->workspace) driver().cuMemFree(plan_->workspace);
}

void CublasLtMatmul::enqueue(void* const* params, CUstream stream) const {
  const Plan& p = *plan_;
  auto buffer = [&](int i) { return *static_cast<const CUdeviceptr*>(params[i]); };
  const ir::LibraryMatmul& c = p.call;
  if (c.m == 0 || c.n == 0 || c.batch == 0) return;
  // With add_c the library's C is our c (beta = 1) and out its D.
  const int out_param = c.add_c ? 3 : 2;
  if (c.k == 0) {  // zeros, or c; the library is not called with k = 0
    const size_t bytes = size_t(c.batch * c.m * c.n) * dtype_size(c.result);
    if (c.add_c) check(driver().cuMemcpyDtoDAsync(buffer(out_param), buffer(2), bytes, stream), "cuMemcpyDtoDAsync");
    else check(driver().cuMemsetD8Async(buffer(out_param), 0, bytes, stream), "cuMemsetD8Async");
    return;
  }
  const float alpha = 1.0f, beta = c.add_c ? 1.0f : 0.0f;
  const void *a = reinterpret_cast<const void*>(buffer(0)), *b = reinterpret_cast<const void*>(buffer(1));
  void* out = reinterpret_cast<void*>(buffer(out_param));
  const void* addend = c.add_c ? reinterpret_cast<const void*>(buffer(2)) : out;
  const Lt& l = lt();
  ok(l.cublasLtMatmul(l.handle, p.desc, &alpha, b, p.la, a, p.lb, &beta, addend, p.lc, out, p.lc, &p.algo,
                      reinterpret_cast<void*>(p.workspace), kWorkspace, reinterpret_cast<cudaStream_t>(stream)),
     "cublasLtMatmul");
}

std::string cublaslt_version() { return "cublaslt " + std::to_string(lt().cublasLtGetVersion()); }

}  // namespace tessera::runtime::cuda
