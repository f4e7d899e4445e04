// The Metal lane under host emulation: the MSL that `--target metal` emits,
// compiled as C++ against device/metal/msl_host_emulation.hpp and run on the
// CPU, checked against the same oracle as the native lanes. Every launch must
// say emulated_msl. This proves the MSL text's semantics (threadgroup and
// simdgroup protocol, NaN/inf, tails, empty and rank-0 results), not Apple's
// compiler or GPU. The reduce and fusion matrices are sampled as the CPU's
// are (sampling.hpp); TESSERA_TEST_FULL=1 runs every case.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "fusion_cases.hpp"
#include "ir/ir_hash.hpp"
#include "ir/target_dialect.hpp"
#include "matmul_cases.hpp"
#include "oracle/reference.hpp"
#include "passes/pipeline.hpp"
#include "reduce_cases.hpp"
#include "render/msl_renderer.hpp"
#include "runtime/cpu_executable.hpp"
#include "runtime/inputs.hpp"
#include "runtime/metal/msl_emulation.hpp"
#include "semantics_checks.hpp"
#include "support/sha256.hpp"

namespace tessera::test {
namespace {

struct MetalProgram {
  std::unique_ptr<ir::Module> graph, target;
  runtime::CpuExecutable exe;
};

MetalProgram compile_metal(const ir::Module& graph) {
  auto target = passes::lower(graph, ir::Layer::Target, "metal");
  runtime::CpuExecutable exe = runtime::CpuExecutable::load_emulated_msl(*target);
  return {ir::clone(graph), std::move(target), std::move(exe)};
}

MetalProgram reduce_metal(const std::vector<int64_t>& shape, DType dt, const std::string& kind,
                          const std::vector<int64_t>& axes, bool keepdims) {
  GraphBuilder g("metal");
  g.output(g.reduce(g.input("x", ir::Type::tensor(dt, shape)), kind, axes, keepdims));
  return compile_metal(g.module());
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// Runs emulated, asserts placement, compares with the oracle; returns outputs.
std::vector<Tensor> run_and_check(const MetalProgram& p, const std::vector<Tensor>& inputs, bool expect_pass = true) {
  runtime::RunResult r = p.exe.run(inputs);
  for (const auto& l : r.launches) EXPECT_EQ(l.placement, "emulated_msl") << l.kernel;
  auto expected = oracle::evaluate(*p.graph, "", inputs);
  bool all_pass = true;
  for (size_t i = 0; i < expected.size(); ++i) {
    oracle::Comparison c = oracle::compare(expected[i], r.outputs.at(i));
    if (expect_pass) {
      EXPECT_TRUE(c.pass) << c.failures << " elements out of tolerance; first: " << c.first_failure;
    }
    all_pass = all_pass && c.pass;
  }
  if (!expect_pass) {
    EXPECT_FALSE(all_pass) << "the oracle did not catch the mutated kernel";
  }
  return r.outputs;
}

std::vector<Case> metal_reduce_cases() {
  std::vector<Case> out;
  for (const Case& c : all_cases())
    if (c.dtype != DType::F64) out.push_back(c);  // f64: MetalLane.F64FailsClosed
  return sample_matrix<Case>("MetalMatrix", out, name_of, 8, reduce_coverage());
}

class MetalMatrix : public ::testing::TestWithParam<Case> {};

TEST_P(MetalMatrix, EmulatedMatchesOracleBitwiseRunToRun) {
  const Case& c = GetParam();
  MetalProgram p = reduce_metal(c.shape, c.dtype, c.kind, c.axes, c.keepdims);
  Tensor x = generate_input(c.input, c.dtype, c.shape);
  std::vector<Tensor> first = run_and_check(p, {x});
  std::vector<Tensor> again = p.exe.run({x}).outputs;
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(same_bytes(first[i], again[i])) << "output " << i;
}

INSTANTIATE_TEST_SUITE_P(All, MetalMatrix, ::testing::ValuesIn(metal_reduce_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return name_of(i.param); });

// Compiles a fusion-matrix case for Metal, or (a case MSL cannot express)
// nothing when it is refused with one of `codes`, its message in `why`.
std::optional<MetalProgram> compile_case(const ir::Module& graph, std::initializer_list<std::string> codes,
                                         std::string& why) {
  try {
    return compile_metal(graph);
  } catch (const Error& e) {
    EXPECT_NE(std::find(codes.begin(), codes.end(), e.code()), codes.end()) << e.what();
    why = e.what();
    return std::nullopt;
  }
}

// Runs a compiled case on its generated inputs: the oracle passes, and a
// second run gives the same bytes.
void run_case(const MetalProgram& p, const FusionCase& c) {
  std::vector<Tensor> xs;
  const ir::Region& body = *p.graph->funcs()[0]->regions[0];
  for (size_t i = 0; i < body.args.size(); ++i)
    xs.push_back(generate_input(c.inputs.at(i), body.args[i]->type.dtype, body.args[i]->type.shape));
  std::vector<Tensor> first = run_and_check(p, xs);
  std::vector<Tensor> again = p.exe.run(xs).outputs;
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(same_bytes(first[i], again[i])) << "output " << i;
}

// Pointwise ops, fused reductions and row ops. A case MSL cannot express
// (f64 compute, gelu's erf form) must fail closed with E501/E502; it is
// reported as skipped, never as passed.
class MetalFusion : public ::testing::TestWithParam<FusionCase> {};

TEST_P(MetalFusion, EmulatedMatchesUnfusedOracle) {
  GraphBuilder g("metal");
  GetParam().build(g);
  std::string why;
  std::optional<MetalProgram> p = compile_case(g.module(), {"E501", "E502"}, why);
  if (!p) GTEST_SKIP() << "not expressible in MSL, refused: " << why;
  run_case(*p, GetParam());
}

INSTANTIATE_TEST_SUITE_P(All, MetalFusion,
                         ::testing::ValuesIn(sample_matrix<FusionCase>("MetalFusion", all_fusion_cases(),
                                                                       fusion_case_name, 8, fusion_coverage())),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// Matmul: the simdgroup_matrix block with its fused epilogues, on the
// matmul matrix the CPU and CUDA suites run (sampled; every op layout and
// dtype at least once). gelu's erf form is refused (E502), reported skipped.
class MetalMatmul : public ::testing::TestWithParam<FusionCase> {};

TEST_P(MetalMatmul, EmulatedMatchesOracleBitwiseRunToRun) {
  GraphBuilder g("metal");
  GetParam().build(g);
  std::string why;
  std::optional<MetalProgram> p = compile_case(g.module(), {"E502"}, why);
  if (!p) GTEST_SKIP() << "not expressible in MSL, refused: " << why;
  EXPECT_NE(p->target->ops.front()->attr("source")->as_string()->find("simdgroup_multiply_accumulate"),
            std::string::npos);
  run_case(*p, GetParam());
}

INSTANTIATE_TEST_SUITE_P(All, MetalMatmul,
                         ::testing::ValuesIn(sample_matrix<FusionCase>("MetalMatmul", matmul_cases(), fusion_case_name,
                                                                       4, matmul_coverage())),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// A block that drops one 8-deep slice of K is caught: the oracle's tolerance
// is tight enough for the emulated simdgroup block too.
TEST(MetalMatmulCrossCheck, DroppingPartOfKIsCaught) {
  GraphBuilder g("mm");
  ir::Value* a = g.input("a", ir::Type::tensor(DType::F32, {64, 256}));
  ir::Value* b = g.input("b", ir::Type::tensor(DType::F32, {256, 48}));
  g.output(g.matmul(a, b, DType::F32));
  MetalProgram p = compile_metal(g.module());
  Tensor ta = generate_input("random:seed=7", DType::F32, {64, 256});
  Tensor tb = generate_input("random:seed=8", DType::F32, {256, 48});
  run_and_check(p, {ta, tb});
  Tensor cut = generate_input("random:seed=8", DType::F32, {256, 48});
  for (int64_t i = 100 * 48; i < 108 * 48; ++i) cut.set(i, 0.0);  // rows 100..107 of B
  runtime::RunResult r = p.exe.run({ta, cut});
  oracle::Comparison c = oracle::compare(oracle::evaluate(*p.graph, "", {ta, tb})[0], r.outputs.at(0));
  EXPECT_FALSE(c.pass) << "the oracle did not catch a block missing 8 of 256 k";
  EXPECT_GT(c.worst_ratio, 5.0);
}

Tensor reduce_on_metal(const std::vector<int64_t>& shape, DType dt, const std::string& kind,
                       const std::vector<int64_t>& axes, bool keepdims, const Tensor& x) {
  return run_and_check(reduce_metal(shape, dt, kind, axes, keepdims), {x})[0];
}

TEST(MetalSemantics, MaxMinPropagateNaNInEveryPosition) {
  check_max_min_propagate_nan(reduce_on_metal, {DType::F32, DType::F16, DType::BF16});
}

TEST(MetalSemantics, InfinitiesZeroExtentsRankZero) {
  check_infinities_zero_extents_rank_zero(reduce_on_metal, DType::BF16, 1000);
}

TEST(MetalLane, F64FailsClosed) {
  try {
    reduce_metal({4, 8}, DType::F64, "sum", {1}, false);
    FAIL() << "an f64 kernel was rendered for Metal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E501") << e.what();
  }
}

TEST(MetalLane, AnEditedKernelIsRefusedAtLoad) {
  GraphBuilder g("metal");
  g.output(g.reduce(g.input("x", ir::Type::tensor(DType::F32, {4, 8})), "sum", {1}, false));
  auto target = passes::lower(g.module(), ir::Layer::Target, "metal");
  ir::KernelDesc k = ir::read_kernel_desc(*target->ops[0]);
  k.source += "// edited\n";
  try {
    runtime::metal::emulated_host_kernel(k);
    FAIL() << "an edited MSL kernel was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E701");
  }
}

// The emulation gives Metal's built-ins Metal's semantics, so a kernel that
// leaned on them for NaN propagation would fail here as it would on a Mac:
// the same max reduction with combine_max spelled as metal::max drops the
// NaN, and the oracle check fails.
TEST(MetalEmulation, CatchesANaiveMax) {
  GraphBuilder g("metal");
  g.output(g.reduce(g.input("x", ir::Type::tensor(DType::F32, {4, 300})), "max", {1}, false));
  auto target = passes::lower(g.module(), ir::Layer::Target, "metal");
  Tensor x = generate_input("random:seed=3", DType::F32, {4, 300});
  for (int r = 0; r < 4; ++r) x.set(r * 300 + 7 * r + 1, kNaN);
  for (auto& op : target->ops) {
    if (op->name != "target.kernel") continue;
    std::string src = *op->attr("source")->as_string();
    const std::string honest = "{ return (a < b || isnan(b)) ? b : a; }";
    const size_t at = src.find("inline T combine_max(T a, T b) " + honest);
    ASSERT_NE(at, std::string::npos);
    src.replace(src.find(honest, at), honest.size(), "{ return max(a, b); }");
    op->attrs["source"] = src;
    op->attrs["sha256"] = sha256_hex(src);
  }
  ir::stamp_ir_hashes(*target);  // a deliberate edit, past the digests that catch accidental ones
  MetalProgram honest = reduce_metal({4, 300}, DType::F32, "max", {1}, false);
  Tensor good = run_and_check(honest, {x})[0];
  for (int r = 0; r < 4; ++r) EXPECT_TRUE(std::isnan(good.get(r)));
  MetalProgram naive{ir::clone(*honest.graph), nullptr, runtime::CpuExecutable::load_emulated_msl(*target)};
  Tensor bad = run_and_check(naive, {x}, false)[0];
  for (int r = 0; r < 4; ++r) EXPECT_FALSE(std::isnan(bad.get(r))) << "metal::max kept a NaN in row " << r;
}

// A hand-written MSL kernel probing the emulated built-ins directly.
runtime::CpuKernelFn probe(const std::string& sym, const std::string& body, int64_t threads) {
  ir::KernelDesc k;
  k.sym = sym;
  k.entry = sym;
  k.target = "metal";
  k.abi = render::kMetalKernelAbi;
  k.grid = 1;
  k.threads = threads;
  k.buffers = {{"out", DType::F32, 64, true}};
  k.source = "#define TSR_THREADS " + std::to_string(threads) + "\nusing namespace metal;\nkernel void " + sym +
             "(device float* out [[buffer(0)]], uint tid [[thread_position_in_threadgroup]],\n"
             "    uint g [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]],\n"
             "    uint simd [[simdgroup_index_in_threadgroup]]) {\n" +
             body + "}\n";
  k.sha256 = sha256_hex(k.source);
  return runtime::CpuModuleCache::global().load(runtime::metal::emulated_host_kernel(k));
}

TEST(MetalEmulation, BuiltinsHaveMetalSemantics) {
  runtime::CpuKernelFn fn = probe("probe_builtins", R"(
  const float qnan = as_type<float>(0x7fc00000u);
  if (tid == 0) {
    out[0] = max(qnan, 1.0f);   // Metal: the non-NaN operand
    out[1] = max(2.0f, qnan);
    out[2] = fmin(qnan, 3.0f);
    out[3] = min(4.0f, qnan);
  }
  const float x = tid == 5 ? qnan : float(tid);
  const float m = simd_max(x);                       // NaN dropped: 31 or 63
  const float s = simd_sum(float(lane));             // 0 + ... + 31
  const float v = simd_shuffle_xor(float(tid), ushort(1));
  threadgroup float shared[2];
  if (lane == 0) shared[simd] = float(100 + simd);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (lane == 3) { out[8 + simd] = m; out[10 + simd] = s; out[12 + simd] = v; out[14 + simd] = shared[1 - simd]; }
)",
                                  64);
  std::vector<float> out(64, -1.0f);
  void* buffers[] = {out.data()};
  fn(buffers, 0, 1);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 2.0f);
  EXPECT_EQ(out[2], 3.0f);
  EXPECT_EQ(out[3], 4.0f);
  EXPECT_EQ(out[8], 31.0f);  // lane 5's NaN is dropped by simd_max
  EXPECT_EQ(out[9], 63.0f);
  EXPECT_EQ(out[10], 496.0f);
  EXPECT_EQ(out[11], 496.0f);
  EXPECT_EQ(out[12], 2.0f);    // thread 3 ^ 1
  EXPECT_EQ(out[13], 34.0f);   // thread 35 ^ 1
  EXPECT_EQ(out[14], 101.0f);  // simdgroup 0 reads simdgroup 1's threadgroup value after the barrier
  EXPECT_EQ(out[15], 100.0f);
}

// A barrier that only some threads reach is undefined on Metal: the
// emulation stops rather than guess.
TEST(MetalEmulationDeathTest, DivergentBarrierStops) {
  runtime::CpuKernelFn fn = probe("probe_divergent", R"(
  if (tid < 16) threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = 1.0f;
)",
                                  32);
  std::vector<float> out(64, 0.0f);
  void* buffers[] = {out.data()};
  EXPECT_DEATH(fn(buffers, 0, 1), "not reached by every thread");
}

}  // namespace
}  // namespace tessera::test
