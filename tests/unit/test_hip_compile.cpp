// The HIP lane's compile check: the kernels Tessera emits for --target hip
// compile to gfx90a code objects with hipcc (Debian's ROCm 5.2, installed by
// scripts/bootstrap.sh). There is no AMD GPU here: nothing runs, so this lane
// is "compile-checked", never "native" (docs/status.md).
#include <gtest/gtest.h>

#include <fstream>

#include "../e2e/fusion_cases.hpp"
#include "passes/pipeline.hpp"
#include "runtime/hip/hip_toolchain.hpp"

namespace tessera {
namespace {

int compile_all(const ir::Module& graph) {
  auto target = passes::lower(graph, ir::Layer::Target, "hip");
  int n = 0;
  for (auto& op : target->ops) {
    if (op->name != "target.kernel") continue;
    ir::KernelDesc k = ir::read_kernel_desc(*op);
    EXPECT_EQ(k.abi, "tessera.hip.v1(buffer pointers in order; grid.x = programs)");
    runtime::hip::CodeObject co = runtime::hip::compile(k);
    std::ifstream in(co.path, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    EXPECT_TRUE(magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F') << k.sym;
    EXPECT_GT(co.bytes, 1000u) << k.sym;
    ++n;
  }
  return n;
}

TEST(HipCompile, ReductionStrategiesCompileForGfx90a) {
  struct Shape {
    std::vector<int64_t> shape, axes;
    DType dt;
    const char* kind;
  };
  const std::vector<Shape> shapes = {
      {{4096, 1024}, {1}, DType::F32, "sum"},  {{64, 128}, {1}, DType::F32, "max"},
      {{16384, 300}, {0}, DType::F32, "min"},  {{1 << 22}, {0}, DType::F64, "mean"},
      {{3, 5, 7}, {0, 2}, DType::F16, "prod"}, {{2, 300000}, {-1}, DType::BF16, "mean"},
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
TEST(HipCompile, FusedFamiliesCompileForGfx90a) {
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

}  // namespace
}  // namespace tessera
