// The CUDA lane end to end, on a real GPU: the same reduction matrix and
// semantics as the CPU suite, checked against the same oracle, with every
// launch's placement asserted and bitwise determinism run to run. Without a
// GPU the binary exits 77, which ctest reports as skipped (not passed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "../e2e/attention_cases.hpp"
#include "../e2e/fusion_cases.hpp"
#include "../e2e/matmul_cases.hpp"
#include "../e2e/reduce_cases.hpp"
#include "../e2e/semantics_checks.hpp"
#include "../experimental_env.hpp"
#include "arbiter/arbiter.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/ir.hpp"
#include "ir/parser.hpp"
#include "ir/verify.hpp"
#include "oracle/reference.hpp"
#include "oracle/sample.hpp"
#include "passes/pipeline.hpp"
#include "runtime/cuda/cuda_executable.hpp"
#include "runtime/executable.hpp"
#include "runtime/inputs.hpp"
#include "runtime/tensor.hpp"
#include "targets/device_query.hpp"
#include "tessera/tessera.hpp"

namespace tessera::test {
namespace {

using runtime::cuda::CudaExecutable;

struct GpuProgram {
  std::unique_ptr<ir::Module> graph;
  std::unique_ptr<CudaExecutable> exe;
};

GpuProgram compile_cuda(const ir::Module& graph, const passes::Candidates& candidates = {}) {
  GpuProgram p;
  p.graph = ir::clone(graph);
  auto target = passes::lower(graph, ir::Layer::Target, targets::describe_target("cuda"), candidates);
  p.exe = std::make_unique<CudaExecutable>(CudaExecutable::load(*target));
  return p;
}

GpuProgram reduce_cuda(const std::vector<int64_t>& shape, DType dt, const std::string& kind,
                       const std::vector<int64_t>& axes, bool keepdims) {
  GraphBuilder g("gpu");
  g.output(g.reduce(g.input("x", ir::Type::tensor(dt, shape)), kind, axes, keepdims));
  return compile_cuda(g.module());
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

std::vector<Tensor> run_and_check(const GpuProgram& p, const std::vector<Tensor>& inputs) {
  runtime::RunResult r = p.exe->run(inputs);
  for (const auto& l : r.launches) {
    EXPECT_EQ(l.placement, "native_gpu") << l.kernel;
    if (l.programs > 0) {
      EXPECT_GT(l.device_event_ns, 0) << l.kernel;
    }
  }
  auto expected = oracle::evaluate(*p.graph, "", inputs);
  for (size_t i = 0; i < expected.size(); ++i) {
    oracle::Comparison c = oracle::compare(expected[i], r.outputs.at(i));
    EXPECT_TRUE(c.pass) << c.failures << " elements out of tolerance; first: " << c.first_failure;
  }
  return r.outputs;
}

class CudaMatrix : public ::testing::TestWithParam<Case> {};

// The descriptor a GPU machine compiles for comes from the driver; on a
// device a profile describes, the two agree on every fact a family may ask,
// so a program compiled here and one compiled for the profile elsewhere are
// the same kernels.
TEST(CudaDevice, DriverDescriptorAgreesWithItsProfile) {
  const machine::Descriptor d = targets::describe_target("cuda");
  EXPECT_EQ(d.origin, "driver");
  EXPECT_EQ(d.arch, runtime::cuda::device_info().arch());
  EXPECT_EQ(d.compute_units, runtime::cuda::device_info().multiprocessors);
  EXPECT_EQ(machine::parse(d.str()), d);
  std::printf("driver descriptor: %s\n", d.str().c_str());
  if (d.arch != "sm_90" || d.compute_units != 132) GTEST_SKIP() << "no profile describes this device";
  machine::Descriptor as_profile = d;
  as_profile.name = "h200", as_profile.origin = "profile";
  EXPECT_EQ(as_profile.str(), machine::profile("h200").str());
}

TEST_P(CudaMatrix, MatchesOracleBitwiseRunToRun) {
  const Case& c = GetParam();
  GpuProgram p = reduce_cuda(c.shape, c.dtype, c.kind, c.axes, c.keepdims);
  Tensor x = generate_input(c.input, c.dtype, c.shape);
  std::vector<Tensor> first = run_and_check(p, {x});
  std::vector<Tensor> again = p.exe->run({x}).outputs;
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(same_bytes(first[i], again[i])) << "output " << i;
  // the asynchronous path: device-resident input, one graph launch (clocked whole), results read later
  std::unique_ptr<runtime::Binding> b = p.exe->bind({x});
  p.exe->launch(*b, runtime::Timing::whole_run);
  const std::vector<runtime::LaunchRecord> recs = p.exe->finish(*b);
  ASSERT_FALSE(recs.empty());
  EXPECT_GT(recs.front().device_span_ns, 0);
  for (const auto& l : recs) EXPECT_TRUE(l.placement == "native_gpu" && l.graph && l.device_event_ns < 0);
  std::vector<Tensor> read = p.exe->outputs(*b);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(same_bytes(first[i], read.at(i))) << "graph output " << i;
}

INSTANTIATE_TEST_SUITE_P(All, CudaMatrix, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return name_of(i.param); });

// Pointwise ops, fused reductions and row ops: the CPU suite's cases, on the GPU.
class CudaFusion : public ::testing::TestWithParam<FusionCase> {};

// A case on the GPU against the oracle, bitwise the same run to run.
void check_fusion_case(const FusionCase& c) {
  GraphBuilder g("gpu");
  c.build(g);
  GpuProgram p = compile_cuda(g.module());
  // the Hopper attention block reads its views and writes o transposed in place: no copies
  if (c.name.find("_views") != std::string::npos) {
    EXPECT_EQ(p.exe->kernels().size(), 1u);
  }
  std::vector<Tensor> xs = inputs_for(c, g.module());
  std::vector<Tensor> first = run_and_check(p, xs);
  std::vector<Tensor> again = p.exe->run(xs).outputs;
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(same_bytes(first[i], again[i])) << "output " << i;
}

TEST_P(CudaFusion, MatchesUnfusedOracleBitwiseRunToRun) { check_fusion_case(GetParam()); }

INSTANTIATE_TEST_SUITE_P(All, CudaFusion, ::testing::ValuesIn(all_fusion_cases()),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });
// Matmul (tensor cores for f16/bf16, FFMA for f32) with fused epilogues.
INSTANTIATE_TEST_SUITE_P(Matmul, CudaFusion, ::testing::ValuesIn(matmul_cases()),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });
// Matrix-vector products, lowered to reductions over K.
INSTANTIATE_TEST_SUITE_P(Matvec, CudaFusion, ::testing::ValuesIn(matvec_cases()),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// Attention on the Hopper block (TMA ring, wgmma, online softmax): the CPU
// suite's cases the block takes (bf16/f16, head dims 64 and 128).
INSTANTIATE_TEST_SUITE_P(Attention, CudaFusion, ::testing::ValuesIn(attention_cases(true)),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// Few query rows a kv head (decode) on the split-KV block: chunks of keys
// combined by the last program of each kv head, f32 too.
INSTANTIATE_TEST_SUITE_P(AttentionDecode, CudaFusion, ::testing::ValuesIn(attention_decode_cases(true)),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// The split-KV block leaves its workspace's counters at zero: one binding
// launched again and again (its graph), and the device path, give the first
// run's bytes every time.
TEST(CudaAttention, SplitKvRelaunchesBitwise) {
  FusionCase c = attention_case(DType::BF16, {1, 32, 8, 1, 8192, 128}, true, true,
                                {"random:seed=1,lo=-1,hi=1", "random:seed=2,lo=-1,hi=1", "random:seed=3"});
  GraphBuilder g("relaunch");
  c.build(g);
  GpuProgram p = compile_cuda(g.module());
  ASSERT_NE(p.exe->kernels().at(0).source.find("attention_decode"), std::string::npos);
  std::vector<Tensor> xs = inputs_for(c, g.module());
  std::vector<Tensor> first = run_and_check(p, xs);
  std::unique_ptr<runtime::Binding> b = p.exe->bind(xs);
  for (int i = 0; i < 5; ++i) p.exe->launch(*b, runtime::Timing::none);
  p.exe->finish(*b);
  std::vector<Tensor> again = p.exe->outputs(*b);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(same_bytes(first[i], again.at(i))) << "output " << i;
  std::vector<runtime::cuda::DeviceTensor> dev;
  for (const Tensor& x : xs) dev.push_back(runtime::cuda::DeviceTensor::upload(x));
  for (int i = 0; i < 3; ++i) {
    std::vector<runtime::cuda::DeviceTensor> out = p.exe->run_device(dev, nullptr);
    for (size_t j = 0; j < first.size(); ++j)
      EXPECT_TRUE(same_bytes(first[j], out.at(j).download())) << "device run " << i << " output " << j;
  }
}

// The Hopper block with a mask operand: booleans, biases of every broadcast
// shape, NaN/inf biases, whole rows hidden.
INSTANTIATE_TEST_SUITE_P(AttentionMask, CudaFusion, ::testing::ValuesIn(attention_mask_cases(true)),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// Attention's backward on the CUDA-core block, after the Hopper forward: the
// CPU suite's gradient cases the forward takes (bf16/f16, head dims 64 and
// 128, no empty extent), against the oracle, bitwise run to run.
class CudaAttentionGrad : public ::testing::TestWithParam<FusionCase> {};

TEST_P(CudaAttentionGrad, MatchesOracleBitwiseRunToRun) { check_fusion_case(GetParam()); }

std::vector<FusionCase> cuda_attention_grad_cases() {
  std::vector<FusionCase> out;
  for (const FusionCase& c : attention_grad_cases()) {
    const bool narrow = c.name.rfind("grad_bf16_", 0) == 0 || c.name.rfind("grad_f16_", 0) == 0;
    const bool dims = c.name.find("d64") != std::string::npos || c.name.find("d128") != std::string::npos;
    const bool empty = c.name.find("_b0h") != std::string::npos || c.name.find("q0k") != std::string::npos ||
                       c.name.find("k0d") != std::string::npos;
    if (narrow && dims && !empty) out.push_back(c);
  }
  // The tensor-core block (wgmma on Hopper, mma elsewhere) past one block
  // of 128 keys or rows, with tails, and NaN / inf in do (a key program's
  // exact path) or in k (a query program's) on steps the causal edge cuts.
  const std::string u = "random:seed=41,lo=-1,hi=1";
  out.push_back(attention_grad_case(DType::BF16, {2, 4, 4, 260, 390, 64}, false, {u, u, u, u}, "mma_tails"));
  out.push_back(attention_grad_case(DType::F16, {1, 8, 2, 200, 333, 128}, true, {u, u, u, u}, "mma_sk_longer"));
  out.push_back(attention_grad_case(DType::BF16, {1, 4, 2, 300, 300, 128}, true,
                                    {u, u, u, "special:seed=43,rate=0.004"}, "mma_special_do"));
  out.push_back(attention_grad_case(DType::BF16, {1, 2, 1, 700, 700, 64}, true, {u, "special:seed=44,rate=0.002", u, u},
                                    "mma_special_k"));
  return out;
}

INSTANTIATE_TEST_SUITE_P(Attention, CudaAttentionGrad, ::testing::ValuesIn(cuda_attention_grad_cases()),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// Attention at the benchmark's size, checked on a deterministic sample of
// rows (each sampled row against every key it sees), bitwise run to run.
TEST(CudaAttention, LargeCausalGqaMatchesSampledOracle) {
  for (int64_t d : {64, 128}) {
    FusionCase c = attention_case(DType::BF16, {2, 32, 8, 2048, 2048, d}, true, true,
                                  {"random:seed=1,lo=-2,hi=2", "random:seed=2,lo=-2,hi=2", "random:seed=3"});
    GraphBuilder g("big");
    c.build(g);
    GpuProgram p = compile_cuda(g.module());
    std::vector<Tensor> xs = inputs_for(c, g.module());
    runtime::RunResult r = p.exe->run(xs);
    ASSERT_EQ(r.launches.size(), 1u);
    EXPECT_EQ(r.launches[0].placement, "native_gpu");
    std::vector<std::vector<uint8_t>> sample;
    const ir::Region& body = *p.graph->funcs()[0]->regions[0];
    for (ir::Value* v : body.ops.back()->operands) sample.push_back(oracle::sample_elements(v->type.shape, 96, 64));
    auto expected = oracle::evaluate(*p.graph, "", xs, &sample);
    for (size_t i = 0; i < expected.size(); ++i) {
      oracle::Comparison cmp = oracle::compare(expected[i], r.outputs.at(i));
      EXPECT_TRUE(cmp.pass) << "d " << d << " output " << i << ": " << cmp.first_failure;
      EXPECT_GT(cmp.compared, 0);
    }
    std::vector<Tensor> again = p.exe->run(xs).outputs;
    for (size_t i = 0; i < again.size(); ++i) EXPECT_TRUE(same_bytes(again[i], r.outputs[i])) << "output " << i;
  }
}

// Long rows resident in a thread-block cluster (2-8 blocks whose lane
// reductions meet in distributed shared memory), and rows past the cluster's
// reach, streamed: NaN, +inf and all--inf rows, ragged lengths, f32, bf16,
// f16 and f64 lanes, a fused epilogue; checked by the oracle and bitwise
// equal run to run (the cluster combine is in a fixed order).
struct RowCase {
  const char* op;
  DType dt;
  std::vector<int64_t> shape;
  int64_t cluster;      // expected: 1 = streamed
  bool epilogue;        // silu(op(x) * g)
  bool staged = false;  // expected: persistent clusters of 8, rows staged through shared memory
};
void check_cluster_rows(const char* feature, const std::vector<RowCase>& cases);

TEST(CudaRows, ClusterResidentRowsMatchOracleBitwise) {
  check_cluster_rows("rows_cluster",
                     {
                         {"softmax", DType::F32, {4, 262144}, 8, false},  // the tile exactly: 1024 x 4 x 8 x 8
                         {"softmax", DType::F32, {4, 200003}, 8, false},  // ragged, odd
                         {"log_softmax", DType::BF16, {4, 100003}, 4, false},
                         {"softmax", DType::BF16, {4, 262144}, 8, false},
                         {"layer_norm", DType::BF16, {4, 262144}, 8, false},
                         {"layer_norm", DType::F64, {4, 40000}, 8, false},
                         {"rms_norm", DType::F16, {4, 50001}, 2, false},
                         {"rms_norm", DType::BF16, {4, 262144}, 8, true},
                         {"log_softmax", DType::F32, {4, 20000}, 2, false},
                         {"softmax", DType::F32, {4, 300000}, 1, false},     // past 256K: streamed (online)
                         {"layer_norm", DType::BF16, {4, 600000}, 1, true},  // streamed
                     });
}

// The default for f32 rows of 128K-256K lanes that are not staged (ragged,
// or read from two leaves): clusters of 16 blocks of 512 threads, two blocks
// an SM (Hopper's non-portable cluster size, opted into at load); rows that
// fill a cluster of 8 from one leaf are staged; longer rows stream.
TEST(CudaRows, SixteenBlockClusterRowsMatchOracleBitwise) {
  check_cluster_rows(
      "", {
              {"softmax", DType::F32, {4, 200003}, 16, false},      // ragged, odd
              {"log_softmax", DType::F32, {4, 131073}, 16, false},  // one lane past 128K
              {"layer_norm", DType::F32, {4, 262144}, 16, true},  // the tile exactly: 512 x 4 x 8 x 16; two row leaves
              {"rms_norm", DType::F32, {4, 150001}, 16, true},
              {"softmax", DType::F32, {4, 262144}, 8, false, true},  // one row leaf: staged
              {"softmax", DType::BF16, {4, 262144}, 8, false, true},
              {"softmax", DType::F32, {4, 300000}, 1, false},  // past 256K: streamed (online)
          });
}

// Staged rows (the default where a row fills a cluster of 8 blocks of 512
// threads from one leaf): persistent clusters, as many as fit, striding over
// the rows (more rows than clusters: every cluster takes several, and the
// last ones fewer; fewer rows than clusters: one each), each block's share
// of the next row copied into shared memory while the current one is
// reduced and written. Every dtype the bulk copy takes whole 16-byte
// vectors of (f32 x 4, f16/bf16 x 8, f64 x 2), 2 to 16 vectors a thread.
TEST(CudaRows, StagedPersistentRowsMatchOracleBitwise) {
  check_cluster_rows("",
                     {
                         {"softmax", DType::F32, {300, 65536}, 8, false, true},
                         {"log_softmax", DType::F32, {4, 32768}, 8, false, true},  // two vectors a thread; 4 clusters
                         {"softmax", DType::F32, {130, 262144}, 8, false, true},   // 16 vectors a thread
                         {"layer_norm", DType::F32, {40, 131072}, 8, false, true},
                         {"rms_norm", DType::BF16, {50, 262144}, 8, false, true},
                         {"softmax", DType::BF16, {70, 131072}, 8, false, true},
                         {"layer_norm", DType::F16, {20, 65536}, 8, false, true},
                         {"log_softmax", DType::F64, {9, 65536}, 8, false, true},
                     });
}

// Staged rows start at two rows: 0 and 1 rows take the plain rows schedule
// (one row has no next row to copy ahead, and a unit extent has row stride
// 0, so no leaf is read a row at a time); 2 rows are two persistent
// clusters, one row each. All three match the oracle.
TEST(CudaRows, StagedRowsStartAtTwoRows) {
  for (int64_t rows : {0, 1, 2}) {
    GraphBuilder g("edge");
    g.output(g.softmax(g.input("x", T(DType::F32, {rows, 65536}))));
    auto target = passes::lower(g.module(), ir::Layer::Target, "cuda");
    int kernels = 0;
    for (auto& k : target->ops)
      if (k->name == "target.kernel") {
        ++kernels;
        EXPECT_EQ(ir::read_kernel_desc(*k).persistent, rows >= 2) << rows;
      }
    EXPECT_EQ(kernels, 1) << rows;
    GpuProgram p = compile_cuda(g.module());
    Tensor x = generate_input("random:seed=5,lo=-3,hi=3", DType::F32, {rows, 65536});
    std::vector<Tensor> y = run_and_check(p, {x});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].numel(), rows * 65536);
  }
}

void check_cluster_rows(const char* feature, const std::vector<RowCase>& cases) {
  test::ExperimentalEnv on(feature);  // "" for the default schedule
  const double inf = std::numeric_limits<double>::infinity();
  for (const RowCase& rc : cases) {
    const std::string op = rc.op;
    const int64_t n = rc.shape[1];
    const std::string name = op + " " + std::string(dtype_name(rc.dt)) + " " + std::to_string(rc.shape[0]) + "x" +
                             std::to_string(n);
    GraphBuilder g("rows");
    ir::Value* x = g.input("x", T(rc.dt, rc.shape));
    ir::Value* w = op == "layer_norm" || op == "rms_norm" ? g.input("w", T(rc.dt, {n})) : nullptr;
    ir::Value* y = op == "softmax"       ? g.softmax(x)
                   : op == "log_softmax" ? g.log_softmax(x)
                   : op == "layer_norm"  ? g.layer_norm(x, w, g.input("b", T(rc.dt, {n})))
                                         : g.rms_norm(x, w);
    if (rc.epilogue) y = g.unary("silu", g.binary("mul", y, g.input("gate", T(rc.dt, rc.shape))));
    g.output(y);
    // The path this case is meant to take.
    auto target = passes::lower(g.module(), ir::Layer::Target, "cuda");
    for (auto& k : target->ops)
      if (k->name == "target.kernel") {
        const std::string src = ir::read_kernel_desc(*k).source;
        const std::string dims = "__cluster_dims__(" + std::to_string(rc.cluster) + ", 1, 1)" +
                                 (rc.cluster > 8 ? " __launch_bounds__(512, 2)" : "");
        if (rc.cluster > 1) EXPECT_NE(src.find(dims), std::string::npos) << name;
        else EXPECT_EQ(src.find("__cluster_dims__"), std::string::npos) << name;
        EXPECT_EQ(src.find("tsr::load_staged<") != std::string::npos, rc.staged) << name;
        EXPECT_EQ(ir::read_kernel_desc(*k).persistent, rc.staged) << name;
      }
    GpuProgram p = compile_cuda(g.module());
    std::vector<Tensor> xs;
    const ir::Region& body = *g.module().funcs()[0]->regions[0];
    for (size_t i = 0; i < body.args.size(); ++i)
      xs.push_back(generate_input(i == 0 ? "special:seed=" + std::to_string(40 + i) + ",rate=0.0005,lo=-6,hi=6"
                                         : "random:seed=" + std::to_string(40 + i) + ",lo=0.5,hi=1.5",
                                  body.args[i]->type.dtype, body.args[i]->type.shape));
    // Row 0: one NaN; row 1: all -inf; row 2: -inf but for one finite lane at
    // the end (the ragged tail); row 3: clean (no specials: the values the
    // statistics are mostly checked on).
    Tensor& xt = xs[0];
    for (int64_t j = 0; j < n; ++j) {
      xt.set(1 * n + j, -inf);
      xt.set(2 * n + j, j == n - 1 ? 1.5 : -inf);
      const double v = xt.get(3 * n + j);
      if (!std::isfinite(v)) xt.set(3 * n + j, 0.25);
    }
    xt.set(0 * n + n / 3, std::numeric_limits<double>::quiet_NaN());
    SCOPED_TRACE(name);
    std::vector<Tensor> first = run_and_check(p, xs);
    std::vector<Tensor> again = p.exe->run(xs).outputs;
    for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(same_bytes(first[i], again[i])) << name;
  }
}

Tensor reduce_on_cuda(const std::vector<int64_t>& shape, DType dt, const std::string& kind,
                      const std::vector<int64_t>& axes, bool keepdims, const Tensor& x) {
  return run_and_check(reduce_cuda(shape, dt, kind, axes, keepdims), {x})[0];
}

TEST(CudaSemantics, MaxMinPropagateNaNInEveryPosition) {
  check_max_min_propagate_nan(reduce_on_cuda, {DType::F32, DType::F64, DType::F16, DType::BF16});
}

TEST(CudaSemantics, InfinitiesZeroExtentsRankZero) {
  check_infinities_zero_extents_rank_zero(reduce_on_cuda, DType::F64, 100003);
}

TEST(CudaSemantics, HalfStorageAccumulatesInF32) {
  Tensor x = generate_input("const:1.0009765625", DType::F16, {4096});
  EXPECT_EQ(run_and_check(reduce_cuda({4096}, DType::F16, "sum", {0}, false), {x})[0].get(0), 4100.0);
}

// f32 -> bf16 / f16 narrowing (the hardware cvt.rn with the NaN fix-up in
// tessera_tile.cuh), bit for bit against a scalar round-to-nearest-even over
// every exponent, halfway cases, subnormal results, the overflow edge, zeros,
// infinities and NaN payloads of both signs.
uint16_t ref_bf16(uint32_t u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
uint16_t ref_f16(uint32_t u) {
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;
  float f;
  std::memcpy(&f, &a, 4);
  // Scale to units of the f16 result's ulp and round half to even in double (exact).
  int e;
  std::frexp(f, &e);  // f = m 2^e, m in [0.5, 1)
  const int ulp_exp = std::max(e - 11, -24);
  const double q = std::nearbyint(std::ldexp(double(f), -ulp_exp));  // FE_TONEAREST: ties to even
  const double r = std::ldexp(q, ulp_exp);
  if (r >= 65536.0) return sign | 0x7c00u;
  if (r < std::ldexp(1.0, -14)) return uint16_t(sign | uint16_t(q));  // subnormal (or zero): q ulps of 2^-24
  int re;
  const double m = std::frexp(r, &re);  // r = m 2^re
  return uint16_t(sign | uint16_t((re + 14) << 10) | uint16_t(std::ldexp(m, 11) - 1024));
}

TEST(CudaSemantics, NarrowingMatchesRoundToNearestEvenBitwise) {
  std::vector<uint32_t> bits;
  for (uint32_t e = 0; e < 256; ++e)
    for (uint32_t m : {0u, 1u, 0x7fffu, 0x8000u, 0x8001u, 0x18000u, 0xfffu, 0x1000u, 0x1001u, 0x3000u, 0x2fffu,
                       0x400000u, 0x7fffffu, 0x7fefffu, 0x7ff000u, 0x123456u})
      for (uint32_t sign : {0u, 0x80000000u}) bits.push_back(sign | (e << 23) | m);
  std::mt19937 rng(11);
  for (int i = 0; i < 200000; ++i) bits.push_back(rng());
  bits.push_back(0x477fefffu), bits.push_back(0x477ff000u), bits.push_back(0x477ff001u);  // f16 overflow edge
  bits.push_back(0x7f7fffffu), bits.push_back(0x7f7f8000u);                               // bf16 overflow edge
  const int64_t n = static_cast<int64_t>(bits.size());
  Tensor x = Tensor::empty(DType::F32, {n});
  std::memcpy(x.data(), bits.data(), 4 * bits.size());
  GraphBuilder g("narrow");
  ir::Value* in = g.input("x", ir::Type::tensor(DType::F32, {n}));
  g.output(g.cast(in, DType::BF16));
  g.output(g.cast(in, DType::F16));
  GpuProgram p = compile_cuda(g.module());
  std::vector<Tensor> out = p.exe->run({x}).outputs;
  ASSERT_EQ(out.size(), 2u);
  const uint16_t* b = static_cast<const uint16_t*>(out[0].data());
  const uint16_t* h = static_cast<const uint16_t*>(out[1].data());
  int bad_b = 0, bad_h = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (b[i] != ref_bf16(bits[i]) && bad_b++ < 5)
      ADD_FAILURE() << std::hex << "bf16 of 0x" << bits[i] << ": 0x" << b[i];
    if (h[i] != ref_f16(bits[i]) && bad_h++ < 5) ADD_FAILURE() << std::hex << "f16 of 0x" << bits[i] << ": 0x" << h[i];
  }
  EXPECT_EQ(bad_b, 0);
  EXPECT_EQ(bad_h, 0);
}

// More than 2^31 elements on the device; extremes planted past 2^31.
TEST(CudaHuge, SixtyFourBitIndexing) {
  const int64_t cols = (int64_t{1} << 30) + 32;
  Tensor x = Tensor::empty(DType::F16, {2, cols});
  uint16_t* d = static_cast<uint16_t*>(x.data());
  std::fill(d, d + x.numel(), uint16_t{0x3c00});
  x.set(x.numel() - 3, 7.0);
  x.set(cols + 5, -2.0);
  x.set(cols - 1, kNaN);
  Tensor mx = run_and_check(reduce_cuda({2, cols}, DType::F16, "max", {1}, false), {x})[0];
  EXPECT_TRUE(std::isnan(mx.get(0)));
  EXPECT_EQ(mx.get(1), 7.0);
  Tensor mn = run_and_check(reduce_cuda({2, cols}, DType::F16, "min", {0, 1}, false), {x})[0];
  EXPECT_TRUE(std::isnan(mn.get(0)));
}

TEST(CudaRuntime, RefusesEditedSourceAndChecksShapes) {
  GraphBuilder g("guard");
  g.output(g.reduce(g.input("x", ir::Type::tensor(DType::F32, {8, 40})), "sum", {1}));
  auto target = passes::lower(g.module(), ir::Layer::Target, "cuda");
  ir::KernelDesc k;
  for (auto& op : target->ops)
    if (op->name == "target.kernel") k = ir::read_kernel_desc(*op);
  k.source += "// edited";
  runtime::cuda::CudaModuleCache cache(::testing::TempDir() + "/cuda-cache-guard");
  try {
    cache.load(k);
    FAIL() << "edited kernel loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E701");
  }
  CudaExecutable exe = CudaExecutable::load(*target);
  try {
    exe.bind({Tensor::empty(DType::F32, {8, 41})});
    FAIL() << "wrong shape bound";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E611");
  }
}

// The TMA matmul block (large aligned f16/bf16 problems): shapes that are
// not multiples of the 128 x 256 block, K tails, all four layouts, batched
// and shared operands, NaN/inf inputs, fused epilogues. Each must take the
// TMA path (its kernel has tensor maps), match the oracle, be bitwise
// deterministic, and give the same bytes through the CUDA graph (which holds
// the tensor maps by value).
std::vector<FusionCase> tma_matmul_cases() {
  struct Shape {
    std::vector<int64_t> a, b;
    bool ta, tb;
    DType in, out;
    int epilogue;  // 0 plain, 1 bias + gelu, 2 per-row scale + relu, 3 SwiGLU on C's halves, 4 SwiGLU + bias
    bool special;
  };
  const std::vector<Shape> shapes = {
      {{1300, 200}, {200, 2600}, false, false, DType::BF16, DType::BF16, 1, false},     // ragged M, N; K tail
      {{1300, 136}, {2600, 136}, false, true, DType::BF16, DType::F32, 0, false},       // B stored N x K
      {{136, 1304}, {136, 2600}, true, false, DType::F16, DType::F16, 2, false},        // A stored K x M
      {{136, 1304}, {2600, 136}, true, true, DType::BF16, DType::BF16, 1, false},       // both transposed
      {{3, 520, 72}, {3, 72, 2056}, false, false, DType::BF16, DType::BF16, 0, false},  // batched (3-D maps)
      {{4, 700, 264}, {264, 1800}, false, false, DType::F16, DType::F16, 1, false},     // a shared B (2-D map)
      {{640, 128}, {5, 128, 1288}, false, false, DType::BF16, DType::F32, 2, false},    // a shared A
      {{1280, 256}, {256, 2560}, false, false, DType::BF16, DType::BF16, 0, true},      // NaN / inf inputs
      {{1280, 256}, {2560, 256}, false, true, DType::F16, DType::F16, 0, true},
      // K < 64: one k-slice, mostly zero-filled (a box wider than the dim).
      {{2048, 40}, {40, 2048}, false, false, DType::BF16, DType::BF16, 0, false},
      {{40, 2048}, {2048, 40}, true, true, DType::F16, DType::F16, 0, false},
      // SwiGLU: silu(C[:, :N/2]) * C[:, N/2:], one block taking B's columns
      // from both halves (Plan::halves): ragged halves (a first-half box
      // reaching into the second; row-major B needs N/2 % 8 == 0, stored
      // N x K any N/2), B stored N x K, A stored K x M, batches,
      // NaN / inf, an f32 result, a bias leaf.
      {{1300, 200}, {200, 2608}, false, false, DType::BF16, DType::BF16, 3, false},
      {{1300, 136}, {2600, 136}, false, true, DType::BF16, DType::BF16, 4, false},
      {{136, 1304}, {136, 2608}, true, false, DType::F16, DType::F16, 3, false},
      {{3, 520, 72}, {3, 72, 2064}, false, false, DType::BF16, DType::BF16, 4, false},
      {{1280, 256}, {2560, 256}, false, true, DType::F16, DType::F32, 3, true},
      {{640, 128}, {5, 128, 1296}, false, false, DType::BF16, DType::F32, 3, false},
  };
  std::vector<FusionCase> out;
  int seed = 7000;
  for (const Shape& s : shapes) {
    FusionCase c;
    seed += 4;
    c.name = "tma_" + std::string(dtype_name(s.in)) + "_to_" + std::string(dtype_name(s.out)) + "_" + shape_name(s.a) +
             (s.ta ? "T" : "") + "_x_" + shape_name(s.b) + (s.tb ? "T" : "") +
             (s.epilogue == 1   ? "_bias_gelu"
              : s.epilogue == 2 ? "_rowscale_relu"
              : s.epilogue == 3 ? "_swiglu"
              : s.epilogue == 4 ? "_swiglu_bias"
                                : "") +
             (s.special ? "_special" : "");
    c.inputs = {(s.special ? "special:seed=" : "random:seed=") + std::to_string(seed) +
                    (s.special ? ",rate=0.002" : ",lo=-2,hi=2"),
                "random:seed=" + std::to_string(seed + 1) + ",lo=-2,hi=2"};
    if (s.epilogue && s.epilogue != 3) c.inputs.push_back("random:seed=" + std::to_string(seed + 2));
    c.build = [=](GraphBuilder& g) {
      ir::Value* a = g.input("a", T(s.in, s.a));
      ir::Value* b = g.input("b", T(s.in, s.b));
      ir::Value* mm = g.matmul(a, b, s.out, s.ta, s.tb);
      std::vector<int64_t> shape = mm->type.shape;
      if (s.epilogue == 1) {
        mm = g.unary("gelu", g.binary("add", mm, g.input("bias", T(s.out, {shape.back()}))));
      } else if (s.epilogue == 2) {
        shape.back() = 1;
        mm = g.unary("relu", g.binary("mul", mm, g.input("rs", T(s.out, shape))));
      } else if (s.epilogue >= 3) {
        const int64_t half = shape.back() / 2;
        std::vector<ir::Value*> gu = g.split(mm, -1, {half, half});
        mm = g.binary("mul", g.unary("silu", gu[0]), gu[1]);
        if (s.epilogue == 4) mm = g.binary("add", mm, g.input("bias", T(s.out, {half})));
      }
      g.output(mm);
    };
    out.push_back(std::move(c));
  }
  // The arbiter times the TMA block at every size, so the small cases of the
  // matmul matrix it applies to run on it too (blocks mostly outside the
  // problem: M or N of a few elements, K = 8).
  for (const FusionCase& c : matmul_cases()) {
    GraphBuilder g("probe");
    c.build(g);
    try {
      passes::lower(g.module(), ir::Layer::Schedule, "cuda", {{"*", "tessera_tma"}});
    } catch (const Error&) {
      continue;  // E304: f32, or rows the TMA cannot address
    }
    FusionCase small = c;
    small.name = "tma_small_" + c.name;
    out.push_back(std::move(small));
  }
  return out;
}

class CudaTma : public ::testing::TestWithParam<FusionCase> {};

TEST_P(CudaTma, TakesTheTmaPathAndMatchesTheOracle) {
  const FusionCase& c = GetParam();
  GraphBuilder g("tma");
  c.build(g);
  const passes::Candidates tma = {{"*", "tessera_tma"}};  // forced, as --candidate does
  auto target = passes::lower(g.module(), ir::Layer::Target, "cuda", tma);
  int maps = 0, kernels = 0;
  for (auto& op : target->ops)
    if (op->name == "target.kernel") {
      maps += static_cast<int>(ir::read_kernel_desc(*op).tensor_maps.size());
      ++kernels;
    }
  EXPECT_EQ(maps, 2) << "the matmul did not take the TMA path";
  // SwiGLU joins the block (C's halves never reach memory).
  if (c.name.find("swiglu") != std::string::npos) {
    EXPECT_EQ(kernels, 1) << "the SwiGLU epilogue is a kernel of its own";
  }
  GpuProgram p = compile_cuda(g.module(), tma);
  std::vector<Tensor> xs = inputs_for(c, g.module());
  std::vector<Tensor> first = run_and_check(p, xs);
  std::vector<Tensor> again = p.exe->run(xs).outputs;
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(same_bytes(first[i], again[i])) << "output " << i;
  std::unique_ptr<runtime::Binding> b = p.exe->bind(xs);
  p.exe->launch(*b, runtime::Timing::none);
  p.exe->finish(*b);
  std::vector<Tensor> read = p.exe->outputs(*b);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(same_bytes(first[i], read.at(i))) << "graph output " << i;
}

INSTANTIATE_TEST_SUITE_P(Matmul, CudaTma, ::testing::ValuesIn(tma_matmul_cases()),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// The experimental f32 block with row-major A staged through registers
// (matmul_f32_stage_a, tessera_matmul_simt_stage_a.cuh): the f32 cases of
// the matmul matrix (64x64 blocks: ragged edges, K = 0 and 1, K tails,
// unaligned rows, batches, B in both layouts, NaN/inf) and large ones that
// take the 128x128 blocks, with the feature on. Each row-major-A kernel must
// take the variant, match the oracle, be bitwise deterministic, and give the
// default block's bytes (the same products summed in the same k order).
std::vector<FusionCase> stage_a_cases() {
  std::vector<FusionCase> out;
  for (const FusionCase& c : matmul_cases())
    if (c.name.rfind("matmul_f32_to_f32_", 0) == 0) out.push_back(c);
  struct Shape {
    std::vector<int64_t> a, b;
    bool tb;
  };
  const std::vector<Shape> large = {
      {{2100, 1001}, {1001, 2100}, false},   // ragged blocks, K tail, element loads
      {{2100, 1024}, {2100, 1024}, true},    // B stored N x K
      {{4, 1100, 300}, {300, 1100}, false},  // batched A, a shared B (324 blocks)
      {{2176, 2048}, {2048, 2176}, false},   // whole blocks, 16-byte loads
  };
  int seed = 8000;
  for (const Shape& s : large) {
    FusionCase c;
    seed += 3;
    c.name = "stage_a_f32_" + shape_name(s.a) + "_x_" + shape_name(s.b) + (s.tb ? "T" : "") + "_bias_gelu";
    c.inputs = {"random:seed=" + std::to_string(seed) + ",lo=-2,hi=2",
                "random:seed=" + std::to_string(seed + 1) + ",lo=-2,hi=2", "random:seed=" + std::to_string(seed + 2)};
    c.build = [=](GraphBuilder& g) {
      ir::Value* mm = g.matmul(g.input("a", T(DType::F32, s.a)), g.input("b", T(DType::F32, s.b)), DType::F32, false,
                               s.tb);
      g.output(g.unary("gelu", g.binary("add", mm, g.input("bias", T(DType::F32, {mm->type.shape.back()})))));
    };
    out.push_back(std::move(c));
  }
  return out;
}

class CudaStageA : public ::testing::TestWithParam<FusionCase> {};

TEST_P(CudaStageA, MatchesOracleAndTheDefaultBlockBitwise) {
  const FusionCase& c = GetParam();
  GraphBuilder g("stagea");
  c.build(g);
  std::vector<Tensor> xs = inputs_for(c, g.module());
  std::vector<Tensor> base = compile_cuda(g.module()).exe->run(xs).outputs;  // feature off: the default block
  test::ExperimentalEnv on("matmul_f32_stage_a");                            // opt-in: no default schedule takes it
  const bool row_major_a = c.name.find("T_x_") == std::string::npos;
  int staged = 0, matmuls = 0;
  // The module is held: a range-for over a temporary's member reads freed memory.
  auto staged_target = passes::lower(g.module(), ir::Layer::Target, "cuda");
  for (auto& op : staged_target->ops) {
    if (op->name != "target.kernel") continue;
    const std::string src = ir::read_kernel_desc(*op).source;
    staged += src.find("tsr::matmul_block_stage_a<") != std::string::npos;
    matmuls += src.find("tsr::matmul_block") != std::string::npos;
  }
  EXPECT_EQ(staged, row_major_a ? matmuls : 0) << "row-major A must take the stage_a block, transposed A must not";
  GpuProgram p = compile_cuda(g.module());
  std::vector<Tensor> first = run_and_check(p, xs);
  std::vector<Tensor> again = p.exe->run(xs).outputs;
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(same_bytes(first[i], again[i])) << "output " << i;
    EXPECT_TRUE(same_bytes(first[i], base[i])) << "output " << i << " differs from the default block's";
  }
}

INSTANTIATE_TEST_SUITE_P(Matmul, CudaStageA, ::testing::ValuesIn(stage_a_cases()),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// f32 matmuls large enough for the 128x128 FFMA blocks read a k-contiguous
// operand from a transposed copy (schedule.transpose, a tile.transpose
// kernel launched first): ragged edges and K tails in the copy's blocks, both
// operands copied, a shared and a batched A, NaN/inf carried through the
// copy. Each must launch the expected copies, every launch on the GPU, match
// the oracle and be bitwise deterministic.
struct CopyCase {
  FusionCase c;
  int copies;
};

std::vector<CopyCase> transpose_copy_cases() {
  struct Shape {
    std::vector<int64_t> a, b;
    bool ta, tb;
    int copies;
    std::string values;
  };
  const std::vector<Shape> shapes = {
      {{2305, 37}, {37, 2311}, false, false, 1, "random"},     // NN, ragged everywhere
      {{2305, 37}, {2311, 37}, false, true, 2, "random"},      // NT: both operands
      {{37, 2305}, {2311, 37}, true, true, 1, "random"},       // TT: B only
      {{1100, 37}, {3, 37, 2100}, false, false, 1, "random"},  // one A for three batches
      {{3, 1100, 64}, {64, 2100}, false, false, 1, "random"},  // batched A, shared B
      {{2048, 256}, {256, 2304}, false, false, 1, "special"},  // whole blocks, NaN/inf
  };
  std::vector<CopyCase> out;
  int seed = 9100;
  for (const Shape& s : shapes) {
    FusionCase c;
    seed += 3;
    c.name = "copy_f32_" + std::string(s.ta ? "T" : "") + shape_name(s.a) + "_x_" + shape_name(s.b) +
             (s.tb ? "T" : "") + "_" + s.values + "_bias_relu";
    c.inputs = {
        s.values + ":seed=" + std::to_string(seed) + ",lo=-2,hi=2" + (s.values == "special" ? ",rate=0.0005" : ""),
        "random:seed=" + std::to_string(seed + 1) + ",lo=-2,hi=2", "random:seed=" + std::to_string(seed + 2)};
    c.build = [=](GraphBuilder& g) {
      ir::Value* mm = g.matmul(g.input("a", T(DType::F32, s.a)), g.input("b", T(DType::F32, s.b)), DType::F32, s.ta,
                               s.tb);
      g.output(g.unary("relu", g.binary("add", mm, g.input("bias", T(DType::F32, {mm->type.shape.back()})))));
    };
    out.push_back({std::move(c), s.copies});
  }
  return out;
}

class CudaTransposeCopy : public ::testing::TestWithParam<CopyCase> {};

TEST_P(CudaTransposeCopy, CopiesTheOperandAndMatchesTheOracle) {
  const FusionCase& c = GetParam().c;
  GraphBuilder g("copy");
  c.build(g);
  auto target = passes::lower(g.module(), ir::Layer::Target, "cuda");
  int copies = 0;
  for (auto& op : target->ops)
    if (op->name == "target.kernel")
      copies += ir::read_kernel_desc(*op).source.find("tsr::transpose_block<float, 64, 64>(") != std::string::npos;
  EXPECT_EQ(copies, GetParam().copies);
  GpuProgram p = compile_cuda(g.module());
  std::vector<Tensor> xs = inputs_for(c, g.module());
  runtime::RunResult r = p.exe->run(xs);
  EXPECT_EQ(r.launches.size(), static_cast<size_t>(GetParam().copies + 1));
  std::vector<Tensor> first = run_and_check(p, xs);
  std::vector<Tensor> again = p.exe->run(xs).outputs;
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(same_bytes(first[i], again[i])) << "output " << i;
}

INSTANTIATE_TEST_SUITE_P(Matmul, CudaTransposeCopy, ::testing::ValuesIn(transpose_copy_cases()),
                         [](const ::testing::TestParamInfo<CopyCase>& i) { return i.param.c.name; });

// cuBLASLt, the CUDA library candidate, over the matmul cases it applies to.
class CudaLibrary : public ::testing::TestWithParam<FusionCase> {};

TEST_P(CudaLibrary, CublasLtMatchesTheOracle) {
  const FusionCase& c = GetParam();
  GraphBuilder g("lib");
  c.build(g);
  GpuProgram p;
  p.graph = ir::clone(g.module());
  try {
    p.exe = std::make_unique<CudaExecutable>(
        CudaExecutable::load(*passes::lower(g.module(), ir::Layer::Target, "cuda", {{"*", "cublaslt"}})));
  } catch (const Error& e) {
    if (e.code() == "E304") GTEST_SKIP() << "cublaslt does not apply: " << e.what();
    throw;
  }
  std::vector<Tensor> xs = inputs_for(c, g.module());
  runtime::RunResult r = p.exe->run(xs);
  EXPECT_EQ(r.launches.at(0).implementation.rfind("cublaslt", 0), 0u);
  run_and_check(p, xs);
}

INSTANTIATE_TEST_SUITE_P(Matmul, CudaLibrary, ::testing::ValuesIn(matmul_cases()),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });
// Forced, a matrix-vector product stays a matmul and runs on cuBLASLt.
INSTANTIATE_TEST_SUITE_P(Matvec, CudaLibrary, ::testing::ValuesIn(matvec_cases()),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// The arbiter on the GPU: the three candidates gated and timed by device events.
TEST(CudaArbiter, GatesTimesAndPicks) {
  GraphBuilder g("arb");
  ir::Value* a = g.input("a", ir::Type::tensor(DType::BF16, {1024, 1024}));
  ir::Value* b = g.input("b", ir::Type::tensor(DType::BF16, {1024, 1024}));
  g.output(g.unary("gelu", g.matmul(a, b, DType::BF16)));
  arbiter::Options o;
  o.ledger_path = "/tmp/tessera-gpu-test-ledger.json";
  std::remove(o.ledger_path.c_str());
  auto d = arbiter::arbitrate(g.module(), arbiter::cuda_runner(), o);
  ASSERT_EQ(d.size(), 1u);
  std::printf("%s", arbiter::describe(d[0]).c_str());
  // tessera, tessera_tma (the aligned bf16 operands take the TMA block) and
  // cublaslt are each gated by the oracle and timed.
  int timed = 0;
  bool tma_timed = false;
  for (const auto& r : d[0].rows)
    if (r.status == "winner" || r.status == "survivor") {
      EXPECT_GT(r.median_ns, 0);
      ++timed;
      tma_timed = tma_timed || r.candidate == "tessera_tma";
    }
  EXPECT_EQ(timed, 3);
  EXPECT_TRUE(tma_timed);
}

}  // namespace
}  // namespace tessera::test

int main(int argc, char** argv) {
  try {
    tessera::runtime::cuda::device_info();
  } catch (const tessera::Error& e) {
    std::printf("SKIPPED (not passed): %s\n", e.what());
    return 77;
  }
  std::printf("CUDA device: %s (%s)\n", tessera::runtime::cuda::device_info().name.c_str(),
              tessera::runtime::cuda::device_info().arch().c_str());
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
