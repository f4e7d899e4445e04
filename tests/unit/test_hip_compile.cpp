// The HIP lane's compile check: the kernels Tessera emits for --target hip
// compile to code objects with clang-19 (Debian's, with its HIP headers and
// ROCm device libraries; scripts/bootstrap.sh) for each AMD device profile:
// mi250x (gfx90a, wave64), rx7900xtx (gfx1100) and radeon-8060s (gfx1151,
// both wave32). There is no AMD GPU here: nothing runs, so this lane is
// "compile-checked", never "native" (docs/status.md).
#include <gtest/gtest.h>

#include <fstream>

#include "../e2e/fusion_cases.hpp"
#include "machine/descriptor.hpp"
#include "passes/pipeline.hpp"
#include "runtime/hip/hip_toolchain.hpp"
#include "support/sha256.hpp"

namespace tessera {
namespace {

class HipCompile : public ::testing::TestWithParam<const char*> {
 protected:
  const machine::Descriptor& device() const { return machine::profile(GetParam()); }

  // Compiles every kernel of the graph for the device; returns how many.
  int compile_all(const ir::Module& graph) const {
    auto target = passes::lower(graph, ir::Layer::Target, device());
    int n = 0;
    for (auto& op : target->ops) {
      if (op->name != "target.kernel") continue;
      ir::KernelDesc k = ir::read_kernel_desc(*op);
      EXPECT_EQ(k.abi, "tessera.hip.v1(buffer pointers in order; grid.x = programs)");
      EXPECT_EQ(runtime::hip::kernel_arch(k), device().arch) << k.sym;
      EXPECT_NE(k.source.find("#define TSR_WAVE " + std::to_string(device().simd_width) + "\n"), std::string::npos);
      runtime::hip::CodeObject co = runtime::hip::compile(k);
      EXPECT_EQ(co.arch, device().arch);
      std::ifstream in(co.path, std::ios::binary);
      char magic[4] = {};
      in.read(magic, 4);
      EXPECT_TRUE(magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F') << k.sym;
      EXPECT_GT(co.bytes, 1000u) << k.sym;
      ++n;
    }
    return n;
  }
};

std::string device_name(const ::testing::TestParamInfo<const char*>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Devices, HipCompile, ::testing::Values("mi250x", "rx7900xtx", "radeon-8060s"), device_name);

// One device a wave size for the reductions and fused families: the two
// wave32 devices take the same code paths there (they differ in compute
// units, so in split counts); the matmul blocks, which differ by arch,
// compile on all three.
class HipCompileWaves : public HipCompile {};

INSTANTIATE_TEST_SUITE_P(Waves, HipCompileWaves, ::testing::Values("mi250x", "rx7900xtx"), device_name);

TEST_P(HipCompileWaves, ReductionStrategies) {
  struct Shape {
    std::vector<int64_t> shape, axes;
    DType dt;
    const char* kind;
  };
  const std::vector<Shape> shapes = {
      {{4096, 1024}, {1}, DType::F32, "sum"},  {{64, 128}, {1}, DType::F32, "max"},
      {{16384, 300}, {0}, DType::F32, "min"},  {{1 << 22}, {0}, DType::F64, "mean"},
      {{3, 5, 7}, {0, 2}, DType::F16, "prod"}, {{2, 300000}, {-1}, DType::BF16, "mean"},
      {{4096, 3000}, {0}, DType::F32, "sum"},  // a split column sum: its second pass folds row groups
  };
  int n = 0;
  for (const Shape& s : shapes) {
    GraphBuilder g("hip");
    g.output(g.reduce(g.input("x", ir::Type::tensor(s.dt, s.shape)), s.kind, s.axes, false));
    n += compile_all(g.module());
  }
  EXPECT_GE(n, 8);
}

// The fusion matrix's tile programs (the ones the CPU and CUDA suites run):
// pointwise, fused reductions, row ops. Each op and each dtype at least once
// (sampling.hpp); TESSERA_TEST_FULL=1 (make test-full) compiles every case.

TEST_P(HipCompileWaves, FusedFamilies) {
  const std::vector<test::CaseKey<test::FusionCase>> ops_and_dtypes = {
      [](const test::FusionCase& c) { return test::case_axes(c.name).op; },
      [](const test::FusionCase& c) { return test::case_axes(c.name).dtype; }};
  int n = 0;
  for (const test::FusionCase& c : test::sample_matrix<test::FusionCase>("HipCompile", test::all_fusion_cases(),
                                                                         test::fusion_case_name, 0, ops_and_dtypes)) {
    GraphBuilder g("hip");
    c.build(g);
    n += compile_all(g.module());
  }
  EXPECT_GE(n, 40);
}

// Matmul: the block library's three forms (WMMA on gfx11, MFMA on gfx90a,
// FMA for f32) with fused epilogues, transposed and batched operands, edge
// blocks (sizes off the block grid) and the tall problem that takes the
// large f32 block.
TEST_P(HipCompile, MatmulBlocks) {
  struct Case {
    DType in, out;
    std::vector<int64_t> a, b;
    bool ta, tb;
    const char* epilogue;
  };
  const std::vector<Case> cases = {
      {DType::BF16, DType::BF16, {300, 512}, {512, 320}, false, false, "silu"},
      {DType::F16, DType::F32, {2, 96, 200}, {130, 200}, false, true, "relu"},
      {DType::BF16, DType::F32, {64, 77}, {64, 45}, true, false, ""},
      {DType::F32, DType::F32, {4, 256, 512}, {512, 384}, false, false, "gelu"},
      {DType::F32, DType::F32, {33, 1000}, {2048, 33}, true, true, ""},
      // the large f32 block with row-major A (no transposed copy on these devices)
      {DType::F32, DType::F32, {2048, 2048}, {2048, 2048}, false, false, ""},
  };
  int n = 0;
  for (const Case& c : cases) {
    GraphBuilder g("hip");
    ir::Value* a = g.input("a", ir::Type::tensor(c.in, c.a));
    ir::Value* b = g.input("b", ir::Type::tensor(c.in, c.b));
    ir::Value* y = g.matmul(a, b, c.out, c.ta, c.tb);
    if (*c.epilogue) y = g.unary(c.epilogue, y);
    g.output(y);
    n += compile_all(g.module());
  }
  EXPECT_GE(n, 6);
  // An RMSNorm prologue (the block stages B times w and sums A's rows): one
  // kernel, on each arch's matrix instructions.
  for (DType dt : {DType::BF16, DType::F16}) {
    GraphBuilder g("hip");
    ir::Value* x = g.input("x", ir::Type::tensor(dt, {300, 512}));
    ir::Value* w = g.input("w", ir::Type::tensor(dt, {512}));
    g.output(g.matmul(g.rms_norm(x, w), g.input("b", ir::Type::tensor(dt, {512, 320})), dt));
    EXPECT_EQ(compile_all(g.module()), 1);
  }
}

// A descriptor naming an arch that is not an AMD one fails closed (E740),
// before any compiler runs.
TEST(HipToolchain, AnUnknownArchIsRefused) {
  machine::Descriptor d = machine::profile("mi250x");
  d.arch = "gfx12zz";
  ir::KernelDesc k;
  k.sym = "k";
  k.source = "// nothing";
  k.sha256 = sha256_hex(k.source);
  k.device = d.str();
  try {
    runtime::hip::compile(k);
    FAIL() << "compiled for " << d.arch;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E740") << e.what();
  }
}

}  // namespace
}  // namespace tessera
