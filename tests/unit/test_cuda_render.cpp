// Every CUDA kernel the reduce family synthesizes compiles with NVRTC for
// sm_90a. Needs the CUDA toolkit's NVRTC, not a GPU, so it runs in CI.
#include <gtest/gtest.h>

#include <optional>
#include <regex>
#include <set>

#include "../e2e/attention_cases.hpp"
#include "../e2e/matmul_cases.hpp"
#include "../experimental_env.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/ir.hpp"
#include "ir/parser.hpp"
#include "ir/printer.hpp"
#include "ir/verify.hpp"
#include "passes/pipeline.hpp"
#include "render/cpp_renderer.hpp"
#include "render/cuda_renderer.hpp"
#include "render/msl_renderer.hpp"
#include "runtime/cuda/cuda_api.hpp"
#include "runtime/cuda/cuda_module_cache.hpp"
#include "runtime/executable.hpp"
#include "runtime/tensor.hpp"
#include "tessera/tessera.hpp"

namespace tessera {
namespace {

// Every kernel of `graph` lowered for CUDA `device` (by default the H200
// profile) compiled with NVRTC for its arch (sm_90a with wgmma); how many.
// Each kernel's source must also contain every text of `expected`.
int compile_all(const ir::Module& graph, const std::vector<std::string>& expected = {},
                const machine::Descriptor& device = machine::default_profile(machine::Kind::Cuda)) {
  int compiled = 0;
  auto target = passes::lower(graph, ir::Layer::Target, device);
  for (auto& op : target->ops) {
    if (op->name != "target.kernel") continue;
    ir::KernelDesc k = ir::read_kernel_desc(*op);
    for (const std::string& text : expected) EXPECT_NE(k.source.find(text), std::string::npos) << k.sym << ": " << text;
    const std::string arch = device.has(machine::Cap::Wgmma) ? "sm_90a" : device.arch;
    EXPECT_GT(runtime::cuda::nvrtc_compile(k.source, k.sym, arch).size(), 1000u) << k.sym;
    ++compiled;
  }
  return compiled;
}

TEST(CudaRender, EveryStrategyCompilesWithNvrtc) {
  try {
    runtime::cuda::nvrtc();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not available: " << e.what();
  }
  struct Shape {
    std::vector<int64_t> shape;
    std::vector<int64_t> axes;
    DType dt;
    const char* kind;
    bool row_groups = false;  // a split column pass whose second pass folds row groups (tile.fold_rows)
  };
  const std::vector<Shape> shapes = {
      {{4096, 1024}, {1}, DType::F32, "sum"},
      {{64, 128}, {1}, DType::F32, "max"},
      {{16384, 300}, {0}, DType::F32, "min"},
      {{1 << 22}, {0}, DType::F64, "mean"},
      {{3, 5, 7}, {0, 2}, DType::F16, "prod"},
      {{1000, 70}, {1}, DType::BF16, "max"},
      {{4, 0}, {1}, DType::F32, "sum"},
      {{2, 300000}, {-1}, DType::BF16, "mean"},
      {{4096, 3000}, {0}, DType::F32, "sum", true},
      {{4096, 3000}, {0}, DType::F64, "sum", true},
      {{3, 777, 1001}, {1}, DType::BF16, "mean", true},
  };
  int compiled = 0;
  for (const Shape& s : shapes) {
    GraphBuilder g("nv");
    g.output(g.reduce(g.input("x", ir::Type::tensor(s.dt, s.shape)), s.kind, s.axes, false));
    auto target = passes::lower(g.module(), ir::Layer::Target, "cuda");
    int folding = 0;
    for (auto& op : target->ops) {
      if (op->name != "target.kernel") continue;
      ir::KernelDesc k = ir::read_kernel_desc(*op);
      EXPECT_EQ(k.abi, "tessera.cuda.v1(buffer pointers in order; grid.x = programs)");
      std::string cubin = runtime::cuda::nvrtc_compile(k.source, k.sym, "sm_90a");
      EXPECT_GT(cubin.size(), 1000u) << k.sym;
      folding += k.source.find("tsr::fold_rows_sum<") != std::string::npos;
      ++compiled;
    }
    EXPECT_EQ(folding, s.row_groups ? 1 : 0) << s.kind << " " << dtype_name(s.dt);
  }
  EXPECT_GE(compiled, 10);
}

// The unary math ops and clamp compile in every compute type (f32, f64, and
// bf16 storage).
TEST(CudaRender, MathOpsCompileWithNvrtc) {
  try {
    runtime::cuda::nvrtc();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not available: " << e.what();
  }
  int compiled = 0;
  for (DType dt : {DType::F32, DType::BF16, DType::F64}) {
    GraphBuilder g("math");
    ir::Value* x = g.input("x", ir::Type::tensor(dt, {300}));
    for (const char* fn : {"sin", "cos", "exp2", "log2", "erf", "floor", "ceil", "round"}) g.output(g.unary(fn, x));
    g.output(g.clamp(x, -1.0, 2.0));
    compiled += compile_all(g.module());
  }
  EXPECT_EQ(compiled, 27);
}

// Integers, booleans, comparisons, where, iota, every cast, views and
// argmax/argmin (the fusion matrix's integer, view and arg-reduce cases:
// each op, dtype and shape once).
TEST(CudaRender, IntegerOpsAndViewsCompileWithNvrtc) {
  try {
    runtime::cuda::nvrtc();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not available: " << e.what();
  }
  const std::vector<test::CaseKey<test::FusionCase>> ops_and_dtypes = {
      [](const test::FusionCase& c) { return test::case_axes(c.name).op; },
      [](const test::FusionCase& c) { return test::case_axes(c.name).dtype; },
      [](const test::FusionCase& c) { return test::case_axes(c.name).shape; }};
  int compiled = 0;
  std::vector<test::FusionCase> cases = test::integer_cases();
  for (test::FusionCase& c : test::view_cases()) cases.push_back(std::move(c));
  for (test::FusionCase& c : test::arg_reduce_cases()) cases.push_back(std::move(c));
  for (const test::FusionCase& c :
       test::sample_matrix<test::FusionCase>("IntegerNvrtc", cases, test::fusion_case_name, 0, ops_and_dtypes)) {
    GraphBuilder g("int");
    c.build(g);
    compiled += compile_all(g.module());
  }
  EXPECT_GE(compiled, 20);
}

// Every configuration of the CUDA attention block (head dims 64 and 128,
// bf16 and f16, causal or not, with and without lse) compiles, with the
// producer warpgroup and tensor maps of the Hopper form.
TEST(CudaRender, AttentionCompilesWithNvrtc) {
  try {
    runtime::cuda::nvrtc();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not available: " << e.what();
  }
  int compiled = 0;
  for (DType dt : {DType::BF16, DType::F16})
    for (int64_t d : {64, 128})
      for (bool causal : {false, true}) {
        GraphBuilder g("attn");
        test::attention_case(dt, {2, 8, 2, 300, 300, d}, causal, causal, {}).build(g);
        compiled += compile_all(g.module(),
                                {"tsr::attention_fwd_tma<", "const __grid_constant__ tsr::tensormap tsr_tmap2"});
      }
  // q, k and v read through 4-D maps of views at batch 2, o written transposed
  for (test::ViewsOut out : {test::ViewsOut::Heads, test::ViewsOut::Transposed, test::ViewsOut::MergedHeads}) {
    GraphBuilder g("attn");
    const int64_t b = out == test::ViewsOut::MergedHeads ? 1 : 2;
    test::attention_views_case(DType::BF16, {b, 8, 2, 200, 200, 64}, true, out).build(g);
    compiled += compile_all(g.module(), {"tsr::attention_fwd_tma<", "tsr::attn_layout{8LL, 2LL, "});
  }
  // with a mask operand, each dtype: i1 and an f32 bias (not causal), a bias of q's dtype (causal)
  auto has = [](const std::string& name, const char* part) { return name.find(part) != std::string::npos; };
  for (const test::FusionCase& c : test::attention_mask_cases(true)) {
    const bool causal = has(c.name, "_causal");
    if (!((has(c.name, "_bool_mask") || has(c.name, "_key_bias")) && !causal) && !(has(c.name, "_full_bias") && causal))
      continue;
    GraphBuilder g("attn");
    c.build(g);
    compiled += compile_all(g.module(), {"tsr::attention_fwd_tma_masked<"});
  }
  EXPECT_GE(compiled, 17);
}

// The split-KV block compiles for every dtype and head dim it takes, with
// and without lse, causal or not, and for the Llama decode layer's views;
// its kernel takes the workspace after its buffers.
TEST(CudaRender, AttentionDecodeCompilesWithNvrtc) {
  try {
    runtime::cuda::nvrtc();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not available: " << e.what();
  }
  int compiled = 0;
  for (DType dt : {DType::BF16, DType::F16, DType::F32})
    for (int64_t d : {16, 32, 64, 128, 256})
      for (bool causal : {false, true}) {
        GraphBuilder g("attn");
        test::attention_case(dt, {2, 8, 2, 2, 4097, d}, causal, causal, {}).build(g);
        compiled += compile_all(g.module(), {"tsr::attention_decode<", "unsigned char* __restrict__ tsr_workspace)"});
      }
  GraphBuilder g("attn");
  test::attention_views_case(DType::BF16, {1, 32, 8, 1, 1, 128}, true, test::ViewsOut::MergedHeads).build(g);
  compiled += compile_all(g.module(), {"tsr::attention_decode<", "tsr::decode_layout{32LL, 8LL, "});
  EXPECT_EQ(compiled, 31);
}

// The CUDA attention backward blocks compile for every dtype and head dim
// they take, causal or not: the tensor-core block (f16, bf16 at head dims 64
// and 128) and the CUDA-core one (f32, other head dims).
TEST(CudaRender, AttentionGradCompilesWithNvrtc) {
  try {
    runtime::cuda::nvrtc();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not available: " << e.what();
  }
  auto grad_only = [](GraphBuilder& g, DType dt, int64_t d, bool causal) {
    const ir::Type t = test::T(dt, {2, 8, 300, d}), kv = test::T(dt, {2, 2, 280, d});
    ir::Value *q = g.input("q", t), *k = g.input("k", kv), *v = g.input("v", kv);
    ir::Value *o = g.input("o", t), *dout = g.input("dout", t), *lse = g.input("lse", test::T(DType::F32, {2, 8, 300}));
    for (ir::Value* r : g.attention_grad(q, k, v, o, dout, lse, causal, std::nan(""))) g.output(r);
  };
  int compiled = 0;
  for (DType dt : {DType::BF16, DType::F16, DType::F32})
    for (int64_t d : {64, 128, 256})
      for (bool causal : {false, true}) {
        if (dt != DType::BF16 && (d == 256 || !causal)) continue;  // enough to see every dtype and shape compile
        GraphBuilder g("grad");
        grad_only(g, dt, d, causal);
        // 16-bit at head dims 64 and 128: the warpgroup block, and (twice) the
        // mma block an A100 takes
        const bool tensor = dt != DType::F32 && d != 256;
        compiled += compile_all(g.module(),
                                {tensor ? "tsr::attention_grad_wgmma_program<" : "tsr::attention_grad_program<"});
        if (tensor && causal && (d == 128) == (dt == DType::BF16))
          compiled += compile_all(g.module(), {"tsr::attention_grad_mma_program<"}, machine::profile("a100"));
      }
  EXPECT_EQ(compiled, 12);
}

// The fused families' strategies (pointwise, reduce with a prologue, rowwise
// resident / streamed / columns, f32 and bf16) compile too.
TEST(CudaRender, FusedStrategiesCompileWithNvrtc) {
  try {
    runtime::cuda::nvrtc();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not available: " << e.what();
  }
  int compiled = 0;
  for (DType dt : {DType::F32, DType::BF16}) {
    GraphBuilder g("nv");
    auto T = [&](std::vector<int64_t> s) { return ir::Type::tensor(dt, s); };
    ir::Value* x = g.input("x", T({64, 4096}));
    ir::Value* l = g.input("l", T({4, 70000}));
    ir::Value* c = g.input("c", T({300, 50}));
    ir::Value* w = g.input("w", T({4096}));
    ir::Value* b = g.input("b", T({4096}));
    g.output(g.unary("silu", g.rms_norm(x, w)));            // resident rows + epilogue
    g.output(g.layer_norm(x, w, b));                        // resident rows
    g.output(g.log_softmax(l, -1));                         // streamed rows
    g.output(g.softmax(c, 0));                              // columns
    g.output(g.reduce(g.binary("mul", l, l), "sum", {1}));  // prologue, split rows
    g.output(g.reduce(g.unary("abs", c), "max", {0}));      // prologue, columns
    g.output(g.unary("gelu_tanh", g.binary("add", x, w)));  // pointwise, broadcast
    ir::Value* s = g.input("s", T({64, 1}));
    g.output(g.binary("mul", x, s));                        // pointwise, a splat per row
    g.output(g.reduce(g.binary("sub", x, s), "sum", {1}));  // prologue, a splat per row
    compiled += compile_all(g.module());
  }
  // casts between compute types: f32 storage read into f64 lanes, f64 lanes stored as f32/bf16
  GraphBuilder g("nvcast");
  ir::Value* d = g.input("d", ir::Type::tensor(DType::F64, {300}));
  g.output(g.cast(g.unary("exp", g.input("x", ir::Type::tensor(DType::F32, {300}))), DType::F64));
  g.output(g.cast(d, DType::F32));
  g.output(g.cast(d, DType::BF16));
  compiled += compile_all(g.module());
  EXPECT_GE(compiled, 19);
}

// With the experimental feature rows_cluster (opt-in),
// long rows on CUDA are resident in a thread-block cluster: every row op, f32,
// bf16 and f16 storage, clusters of 2, 4 and 8 blocks, ragged lengths (not a
// multiple of the tile, nor of a vector), a fused prologue/epilogue. The CPU
// schedule of the same programs has no cluster, and the renderers of the
// other targets refuse a cluster kernel (E502) rather than drop the cluster.
// The CUDA tile kernels of `graph` (cluster programs) rendered for HIP, Metal
// and the CPU: each refuses (E502; f64 kernels may meet MSL's E501 first).
void expect_cluster_kernels_refused_elsewhere(const ir::Module& graph, const std::string& name, bool f64) {
  auto tile = passes::lower(graph, ir::Layer::Tile, "cuda");
  for (auto& k_op : tile->ops) {
    if (k_op->name != "tile.kernel") continue;
    for (auto render : {&render::render_hip_kernel, &render::render_msl_kernel, &render::render_cpp_kernel}) {
      try {
        render(*k_op);
        ADD_FAILURE() << name << ": a cluster kernel was rendered for a target without clusters";
      } catch (const Error& e) {
        EXPECT_TRUE(e.code() == "E502" || (f64 && e.code() == "E501")) << e.what();
      }
    }
  }
}

TEST(CudaRender, ClusterResidentRowsCompileWithNvrtc) {
  try {
    runtime::cuda::nvrtc();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not available: " << e.what();
  }
  std::optional<test::ExperimentalEnv> on(std::in_place, "rows_cluster");
  struct Case {
    const char* op;
    DType dt;
    int64_t extent;
    int64_t cluster;  // expected
    bool fused;       // silu(op(x) * g), x * 0.5 before
  };
  const std::vector<Case> cases = {
      {"softmax", DType::F32, 262144, 8, false},     // 1024 threads x 4 x 8 x 8 blocks, exact
      {"softmax", DType::BF16, 262144, 8, false},    // 1024 x 8 x 4 x 8
      {"softmax", DType::F32, 200003, 8, true},      // ragged, odd
      {"log_softmax", DType::F32, 20000, 2, false},  // ragged
      {"layer_norm", DType::BF16, 50000, 2, false}, {"layer_norm", DType::F32, 50000, 4, true},
      {"rms_norm", DType::F16, 100000, 4, false},   {"rms_norm", DType::F32, 100001, 8, true},
  };
  int compiled = 0;
  for (const Case& c : cases) {
    GraphBuilder g("nvc");
    auto T = [&](std::vector<int64_t> s) { return ir::Type::tensor(c.dt, s); };
    ir::Value* x = g.input("x", T({3, c.extent}));
    if (c.fused) x = g.binary("mul", x, g.input("h", T({3, c.extent})));
    ir::Value* w = g.input("w", T({c.extent}));
    const std::string op = c.op;
    ir::Value* y = op == "softmax"       ? g.softmax(x)
                   : op == "log_softmax" ? g.log_softmax(x)
                   : op == "layer_norm"  ? g.layer_norm(x, w, g.input("b", T({c.extent})))
                                         : g.rms_norm(x, w);
    if (c.fused) y = g.unary("silu", g.binary("mul", y, g.input("gate", T({3, c.extent}))));
    g.output(y);
    const std::string name = op + " " + std::string(dtype_name(c.dt)) + " " + std::to_string(c.extent);
    const std::string dims = "__cluster_dims__(" + std::to_string(c.cluster) + ", 1, 1)";
    auto target = passes::lower(g.module(), ir::Layer::Target, "cuda");
    int kernels = 0;
    for (auto& k_op : target->ops) {
      if (k_op->name != "target.kernel") continue;
      ir::KernelDesc k = ir::read_kernel_desc(*k_op);
      EXPECT_NE(k.source.find(dims), std::string::npos) << name;
      EXPECT_EQ(k.grid, 3 * c.cluster) << name;  // blocks: programs x cluster
      EXPECT_EQ(k.abi, render::kCudaClusterKernelAbi) << name;
      EXPECT_GT(runtime::cuda::nvrtc_compile(k.source, k.sym, "sm_90a").size(), 1000u) << name;
      ++kernels;
    }
    EXPECT_EQ(kernels, 1) << name << ": one fused kernel";
    compiled += kernels;
    // The CPU schedule is untouched: no cluster attribute at all.
    EXPECT_EQ(ir::print(*passes::lower(g.module(), ir::Layer::Schedule, "cpu")).find("cluster ="), std::string::npos)
        << name;
    // Fail closed: a cluster kernel is never rendered for a target without clusters.
    expect_cluster_kernels_refused_elsewhere(g.module(), name, false);
  }
  EXPECT_EQ(compiled, static_cast<int>(cases.size()));
  // The default (no feature): f32 rows of 128K-256K lanes in clusters of 16
  // blocks of 512 threads, two an SM; 16-bit and f64 rows of that length stream.
  on.reset();
  for (DType dt : {DType::F32, DType::BF16, DType::F64}) {
    GraphBuilder g("c16");
    ir::Value* x = g.input("x", ir::Type::tensor(dt, {3, 200003}));
    g.output(
        g.layer_norm(x, g.input("w", ir::Type::tensor(dt, {200003})), g.input("b", ir::Type::tensor(dt, {200003}))));
    auto target = passes::lower(g.module(), ir::Layer::Target, "cuda");
    for (auto& k_op : target->ops) {
      if (k_op->name != "target.kernel") continue;
      ir::KernelDesc k = ir::read_kernel_desc(*k_op);
      const bool fits = dt == DType::F32;
      EXPECT_EQ(k.cluster, fits ? 16 : 1) << dtype_name(dt);
      if (fits) {
        EXPECT_NE(k.source.find("__cluster_dims__(16, 1, 1) __launch_bounds__(512, 2)"), std::string::npos);
        EXPECT_EQ(k.grid, 3 * 16);
      }
      EXPECT_GT(runtime::cuda::nvrtc_compile(k.source, k.sym, "sm_90a").size(), 1000u) << dtype_name(dt);
    }
  }
  // f32 rows past one block that do not fill a cluster of 8 exactly keep the
  // streamed schedule.
  GraphBuilder g("plain");
  g.output(g.softmax(g.input("x", ir::Type::tensor(DType::F32, {3, 131000}))));
  EXPECT_EQ(ir::print(*passes::lower(g.module(), ir::Layer::Schedule, "cuda")).find("cluster ="), std::string::npos);
}

// Staged rows (the default where a row fills a cluster of 8 blocks of 512
// threads from one leaf in 16-byte vectors): persistent kernels whose one
// shared-memory buffer holds a block's share of a row, for every storage
// dtype, compiled by NVRTC for sm_90a; the other renderers refuse them.
TEST(CudaRender, StagedRowsCompileWithNvrtc) {
  try {
    runtime::cuda::nvrtc();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not available: " << e.what();
  }
  struct Case {
    const char* op;
    DType dt;
    int64_t extent, unroll;
  };
  const std::vector<Case> cases = {
      {"softmax", DType::F32, 262144, 16},    {"log_softmax", DType::F32, 32768, 2},
      {"layer_norm", DType::BF16, 131072, 4}, {"rms_norm", DType::F16, 262144, 8},
      {"softmax", DType::F64, 65536, 8},
  };
  for (const Case& c : cases) {
    GraphBuilder g("stg");
    auto T = [&](std::vector<int64_t> s) { return ir::Type::tensor(c.dt, s); };
    ir::Value* x = g.input("x", T({5, c.extent}));
    ir::Value* w = g.input("w", T({c.extent}));
    const std::string op = c.op;
    g.output(op == "softmax"       ? g.softmax(x)
             : op == "log_softmax" ? g.log_softmax(x)
             : op == "layer_norm"  ? g.layer_norm(x, w, g.input("b", T({c.extent})))
                                   : g.rms_norm(x, w));
    const std::string name = op + " " + std::string(dtype_name(c.dt)) + " " + std::to_string(c.extent);
    const std::string sched = ir::print(*passes::lower(g.module(), ir::Layer::Schedule, "cuda"));
    EXPECT_NE(sched.find("staged = true"), std::string::npos) << name;
    EXPECT_NE(sched.find("unroll = " + std::to_string(c.unroll) + ","), std::string::npos) << name;
    auto target = passes::lower(g.module(), ir::Layer::Target, "cuda");
    for (auto& k_op : target->ops) {
      if (k_op->name != "target.kernel") continue;
      ir::KernelDesc k = ir::read_kernel_desc(*k_op);
      EXPECT_TRUE(k.persistent) << name;
      EXPECT_EQ(k.cluster, 8) << name;
      EXPECT_EQ(k.grid, 5 * 8) << name;  // at most: the runtime launches what fits
      EXPECT_EQ(k.shared_bytes, c.extent / 8 * static_cast<int64_t>(dtype_size(c.dt))) << name;
      EXPECT_NE(k.source.find("tsr::load_staged<"), std::string::npos) << name;
      EXPECT_GT(runtime::cuda::nvrtc_compile(k.source, k.sym, "sm_90a").size(), 1000u) << name;
    }
    expect_cluster_kernels_refused_elsewhere(g.module(), name, c.dt == DType::F64);
  }
}

// Matmul: every case of the GPU matmul matrix (the small-block configs:
// mma.sync for f16/bf16, 64x64 FFMA for f32) and the large-block configs
// (wgmma 128x256x64, 128x128 FFMA) in every layout compile with NVRTC.
TEST(CudaRender, MatmulKernelsCompileWithNvrtc) {
  try {
    runtime::cuda::nvrtc();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not available: " << e.what();
  }
  std::vector<test::FusionCase> cases = test::matmul_cases();
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (int layout = 0; layout < 4; ++layout) {
      test::FusionCase c;
      c.build = [=](GraphBuilder& g) {
        const bool ta = layout & 1, tb = layout & 2;
        ir::Value* a = g.input("a",
                               test::T(dt, ta ? std::vector<int64_t>{1024, 8192} : std::vector<int64_t>{8192, 1024}));
        ir::Value* b = g.input("b",
                               test::T(dt, tb ? std::vector<int64_t>{8192, 1024} : std::vector<int64_t>{1024, 8192}));
        g.output(g.unary("gelu", g.matmul(a, b, dt, ta, tb)));
      };
      cases.push_back(c);
    }
  // The TMA block with a batched A (3-D map) and a shared B (2-D), and an
  // unaligned K that keeps the cp.async path.
  for (int64_t k : {512, 1001}) {
    test::FusionCase c;
    c.build = [=](GraphBuilder& g) {
      ir::Value* a = g.input("a", test::T(DType::BF16, {4, 1000, k}));
      ir::Value* b = g.input("b", test::T(DType::BF16, {k, 1024}));
      ir::Value* bias = g.input("bias", test::T(DType::BF16, {1024}));
      g.output(g.unary("gelu", g.binary("add", g.matmul(a, b, DType::BF16), bias)));
    };
    cases.push_back(c);
  }
  int compiled = 0, tma = 0;
  std::set<std::string> strategies;
  // Every case as the cp.async schedule (candidate tessera; large 16-bit
  // problems default to the TMA block), and again as the TMA candidate
  // wherever that applies (E304 elsewhere).
  std::vector<std::unique_ptr<ir::Module>> targets;
  for (const test::FusionCase& c : cases) {
    GraphBuilder g("nvmm");
    c.build(g);
    targets.push_back(passes::lower(g.module(), ir::Layer::Target, "cuda", {{"*", "tessera"}}));
    try {
      targets.push_back(passes::lower(g.module(), ir::Layer::Target, "cuda", {{"*", "tessera_tma"}}));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), "E304") << e.what();
    }
  }
  int copies = 0;
  for (const auto& target : targets) {
    for (auto& op : target->ops) {
      if (op->name != "target.kernel") continue;
      ir::KernelDesc k = ir::read_kernel_desc(*op);
      if (k.source.find("tsr::transpose_block<float, 64, 64>(") != std::string::npos) {
        // The transposed copy of a k-contiguous f32 operand (large FFMA blocks).
        EXPECT_GT(runtime::cuda::nvrtc_compile(k.source, k.sym, "sm_90a").size(), 1000u) << k.sym;
        ++copies;
        continue;
      }
      size_t use = k.source.find("tsr::matmul_block<");
      if (use == std::string::npos) use = k.source.find("tsr::matmul_block_tma<");
      if (use == std::string::npos) continue;
      // Without the experimental feature no kernel carries the stage_a block.
      EXPECT_EQ(k.source.find("matmul_block_stage_a"), std::string::npos) << k.sym;
      EXPECT_GT(runtime::cuda::nvrtc_compile(k.source, k.sym, "sm_90a").size(), 1000u) << k.sym;
      strategies.insert(k.source.substr(use, 40));
      if (!k.tensor_maps.empty()) {
        EXPECT_NE(k.source.find("if (!tsr::matmul_block_tma<"), std::string::npos) << k.sym;
        EXPECT_EQ(k.threads, 384) << k.sym;  // two consumer warpgroups and the producer
        // The block's flags A_KC, B_KC, A_3D, B_3D agree with the maps it is
        // given: K-major maps have boxes {64, BM|BN >= 128}, MN-major {64, 64};
        // a 3-D map has the batch dim. (A wrong flag issues the wrong boxes:
        // a hang on the expect_tx, or a wrong result.)
        ASSERT_EQ(k.tensor_maps.size(), 2u) << k.sym;
        const size_t at = k.source.find("tsr::matmul_block_tma<");
        const std::string args = k.source.substr(at, k.source.find('>', at) - at);
        std::vector<std::string> fields;
        for (size_t p = 0, q; p != std::string::npos; p = q == std::string::npos ? q : q + 2) {
          q = args.find(", ", p);
          fields.push_back(args.substr(p, q == std::string::npos ? q : q - p));
        }
        ASSERT_EQ(fields.size(), 11u) << args;
        auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
        for (size_t i = 0; i < 2; ++i) {
          EXPECT_EQ(fields[6 + i], flag(k.tensor_maps[i].box[1] != 64)) << k.sym << ": " << args;
          EXPECT_EQ(fields[8 + i], flag(k.tensor_maps[i].dims.size() == 3)) << k.sym << ": " << args;
        }
        ++tma;
      }
      ++compiled;
    }
  }
  EXPECT_GE(compiled, 66);
  EXPECT_GE(strategies.size(), 5u);  // f32 small/large, 16-bit small/large, 16-bit TMA
  // The TMA block has one shape at every size: the 14 aligned 16-bit cases of
  // the matrix (2 of them residual), bf16 and f16 large in four layouts, the
  // batched one; not K = 1001.
  EXPECT_EQ(tma, 23);
  // f32 8192 x 8192 x 1024: NN copies A, NT both, TT B, TN nothing.
  EXPECT_EQ(copies, 4);

  // The experimental f32 block with row-major A staged through registers
  // (matmul_f32_stage_a): every case again with the feature on. Exactly the
  // f32 kernels with row-major A take it (K = 0 and K = 1, ragged blocks, K
  // tails without 16-byte loads, batches, B in both layouts, both block
  // sizes); every other kernel's source is the default one, byte for byte.
  int staged = 0;
  std::set<std::string> staged_configs;
  test::ExperimentalEnv on("matmul_f32_stage_a");
  for (size_t i = 0; i < cases.size(); ++i) {
    GraphBuilder g("nvmm");
    cases[i].build(g);
    auto target = passes::lower(g.module(), ir::Layer::Target, "cuda");
    for (auto& op : target->ops) {
      if (op->name != "target.kernel") continue;
      ir::KernelDesc k = ir::read_kernel_desc(*op);
      const size_t use = k.source.find("tsr::matmul_block_stage_a<");
      if (use == std::string::npos) continue;
      EXPECT_NE(k.source.find("tsr::matmul_block_stage_a<float, "), std::string::npos) << k.sym;
      EXPECT_GT(runtime::cuda::nvrtc_compile(k.source, k.sym, "sm_90a").size(), 1000u) << k.sym;
      staged_configs.insert(k.source.substr(use, 50));
      ++staged;
    }
  }
  // Matrix: 16 f32 shapes less the 2 with transposed A (the empty ones have
  // kernels too), 4 f32 residual cases; large blocks: the 2 row-major-A layouts.
  EXPECT_EQ(staged, 20);
  EXPECT_GE(staged_configs.size(), 2u);  // 64x64 and 128x128 blocks
}

// The TMA block's registers: ptxas's report of every TMA matmul kernel (the
// Llama layer's gate/up projection with its SwiGLU epilogue, its down
// projection with the residual add, and a plain 8192^3 bf16 matmul) says no
// spills. The producer warpgroup spilled every k-slice when setmaxnreg left
// it 40 registers, which starved the tensor cores (docs/journal.md, ninth
// session); one block of 384 threads an SM gives each thread 168.
TEST(CudaRender, TmaMatmulKernelsDoNotSpill) {
  const runtime::cuda::NvrtcApi* nv = nullptr;
  try {
    nv = &runtime::cuda::nvrtc();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not available: " << e.what();
  }
  const char* text = R"(
func @mlp(%x: tensor<2048x4096xbf16>, %wgu: tensor<4096x28672xbf16>, %wd: tensor<14336x4096xbf16>, %r: tensor<2048x4096xbf16>, %a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> (tensor<2048x4096xbf16>, tensor<8192x8192xbf16>) {
  %gu = tessera.matmul %x, %wgu : (tensor<2048x4096xbf16>, tensor<4096x28672xbf16>) -> tensor<2048x28672xbf16>
  %g, %u = tessera.split %gu {axis = 1, sizes = [14336, 14336]} : tensor<2048x28672xbf16> -> (tensor<2048x14336xbf16>, tensor<2048x14336xbf16>)
  %s = tessera.silu %g : tensor<2048x14336xbf16> -> tensor<2048x14336xbf16>
  %h = tessera.mul %s, %u : (tensor<2048x14336xbf16>, tensor<2048x14336xbf16>) -> tensor<2048x14336xbf16>
  %d = tessera.matmul %h, %wd : (tensor<2048x14336xbf16>, tensor<14336x4096xbf16>) -> tensor<2048x4096xbf16>
  %y = tessera.add %r, %d : (tensor<2048x4096xbf16>, tensor<2048x4096xbf16>) -> tensor<2048x4096xbf16>
  %c = tessera.matmul %a, %b : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %y, %c : tensor<2048x4096xbf16>, tensor<8192x8192xbf16>
})";
  auto target = passes::lower(*ir::parse(text, "mlp.tsr"), ir::Layer::Target, "cuda");
  int tma = 0;
  for (auto& op : target->ops) {
    if (op->name != "target.kernel") continue;
    const ir::KernelDesc k = ir::read_kernel_desc(*op);
    if (k.source.find("tsr::matmul_block_tma<") == std::string::npos) continue;
    ++tma;
    nvrtcProgram prog;
    ASSERT_EQ(nv->nvrtcCreateProgram(&prog, k.source.c_str(), (k.sym + ".cu").c_str(), 0, nullptr, nullptr),
              NVRTC_SUCCESS);
    const char* opts[] = {"-std=c++17", "--fmad=false", "-default-device", "--gpu-architecture=sm_90a",
                          "--ptxas-options=-v"};
    const nvrtcResult r = nv->nvrtcCompileProgram(prog, 5, opts);
    size_t size = 0;
    nv->nvrtcGetProgramLogSize(prog, &size);
    std::string log(size, '\0');
    if (size) nv->nvrtcGetProgramLog(prog, log.data());
    nv->nvrtcDestroyProgram(&prog);
    ASSERT_EQ(r, NVRTC_SUCCESS) << log;
    EXPECT_NE(log.find("bytes spill stores"), std::string::npos) << "no ptxas report: " << log;
    EXPECT_FALSE(std::regex_search(log, std::regex("[1-9][0-9]* bytes spill"))) << k.sym << ":\n" << log;
  }
  EXPECT_EQ(tma, 3) << "every matmul here takes the TMA block";
}

}  // namespace
}  // namespace tessera
