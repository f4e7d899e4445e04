// The arbiter on the CPU: library candidates are correct (OpenBLAS against the
// oracle over the f32 matmul cases), the arbiter gates, times and records, the
// ledger answers only for its exact key, and a candidate that errs beyond its
// budget is rejected, never picked.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "arbiter/arbiter.hpp"
#include "arbiter/ledger.hpp"
#include "arbiter/region_program.hpp"
#include "arbiter/region_sample.hpp"
#include "e2e_util.hpp"
#include "ir/printer.hpp"
#include "machine/descriptor.hpp"
#include "matmul_cases.hpp"
#include "passes/pipeline.hpp"
#include "runtime/cpu_executable.hpp"
#include "runtime/inputs.hpp"

namespace tessera::test {
namespace {

TEST(LibraryCandidates, OpenBlasMatchesTheOracle) {
  int ran = 0;
  for (const FusionCase& c : matmul_cases()) {
    if (c.name.find("matmul_f32_to_f32") != 0) continue;
    GraphBuilder g("lib");
    c.build(g);
    auto target = passes::lower(g.module(), ir::Layer::Target, "cpu", {{"*", "openblas"}});
    runtime::CpuExecutable exe = runtime::CpuExecutable::load(*target);
    std::vector<Tensor> xs = inputs_for(c, g.module());
    runtime::RunResult r = exe.run(xs);
    ASSERT_FALSE(r.launches.empty());
    EXPECT_EQ(r.launches[0].implementation.rfind("openblas", 0), 0u) << c.name;
    for (const auto& l : r.launches) EXPECT_EQ(l.placement, "native_cpu");
    oracle::Comparison cmp = oracle::compare(oracle::evaluate(g.module(), "", xs)[0], r.outputs[0]);
    EXPECT_TRUE(cmp.pass) << c.name << ": " << cmp.first_failure;
    ++ran;
  }
  EXPECT_GE(ran, 16);
}

ir::Module& small_program(GraphBuilder& g) {
  ir::Value* a = g.input("a", T(DType::F32, {48, 64}));
  ir::Value* b = g.input("b", T(DType::F32, {64, 40}));
  g.output(g.unary("relu", g.matmul(a, b, DType::F32)));
  return const_cast<ir::Module&>(g.module());
}

struct TempLedger {
  std::string path =
      (std::filesystem::temp_directory_path() / ("tessera-ledger-" + std::to_string(::getpid()) + ".json")).string();
  ~TempLedger() { std::filesystem::remove(path); }
};

TEST(Arbiter, MeasuresOnceThenTheLedgerAnswersForItsKeyOnly) {
  GraphBuilder g("arb");
  const ir::Module& m = small_program(g);
  TempLedger ledger;
  arbiter::Options o;
  o.ledger_path = ledger.path;
  o.reps = 2;
  arbiter::Runner runner = arbiter::cpu_runner();
  auto first = arbiter::arbitrate(m, runner, o);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].why.rfind("measured now", 0), 0u) << first[0].why;
  int winners = 0, survivors = 0;
  for (const auto& r : first[0].rows) {
    winners += r.status == "winner";
    survivors += r.status == "survivor";
    if (r.candidate == "cublaslt") {
      EXPECT_EQ(r.status, "not applicable");
    }
    if (r.status == "winner" || r.status == "survivor") {
      EXPECT_GT(r.median_ns, 0);
    }
  }
  EXPECT_EQ(winners, 1);
  EXPECT_EQ(survivors, 1);  // tessera and openblas both pass; one wins
  auto second = arbiter::arbitrate(m, runner, o);
  EXPECT_EQ(second[0].why.rfind("tuning ledger entry", 0), 0u) << second[0].why;
  EXPECT_EQ(second[0].candidate, first[0].candidate);
  EXPECT_EQ(second[0].key, first[0].key);
  // another toolchain (or device, or kernel digest) is another key: measured again
  runner.toolchain += " (upgraded)";
  auto third = arbiter::arbitrate(m, runner, o);
  EXPECT_NE(third[0].key, first[0].key);
  EXPECT_EQ(third[0].why.rfind("measured now", 0), 0u);
  // and a ledger that does not parse is set aside, not trusted
  { std::ofstream(ledger.path) << "{not json"; }
  EXPECT_EQ(arbiter::arbitrate(m, runner, o)[0].why.rfind("measured now", 0), 0u);
  std::filesystem::remove(ledger.path + ".corrupt");
}

TEST(Arbiter, ACandidateBeyondItsBudgetIsRejected) {
  GraphBuilder g("arb");
  const ir::Module& m = small_program(g);
  TempLedger ledger;
  arbiter::Options o;
  o.ledger_path = ledger.path;
  o.reps = 1;
  // A runner whose OpenBLAS results are off by 1% (as a wrong library would be).
  arbiter::Runner runner = arbiter::cpu_runner();
  auto honest = runner.run;
  runner.run = [honest](const ir::Module& t, const std::vector<Tensor>& xs, int reps) {
    arbiter::Runner::Measured r = honest(t, xs, reps);
    if (ir::print(t).find("library = openblas") != std::string::npos)
      for (int64_t i = 0; i < r.outputs[0].numel(); ++i) r.outputs[0].set(i, r.outputs[0].get(i) * 1.01 + 1e-3);
    return r;
  };
  auto d = arbiter::arbitrate(m, runner, o);
  EXPECT_EQ(d[0].candidate, "tessera");
  bool rejected = false;
  for (const auto& r : d[0].rows)
    if (r.candidate == "openblas") {
      rejected = r.status == "rejected";
      EXPECT_NE(r.detail.find("beyond its accuracy budget"), std::string::npos) << r.detail;
    }
  EXPECT_TRUE(rejected);
}

// Times within the noise margin are a tie, and a tie keeps the fused kernel:
// a library 2% faster does not win, one 10% faster does; one line per
// decision by default, the table on request.
TEST(Arbiter, ALibraryWithinTheNoiseMarginDoesNotWin) {
  for (double library_ns : {980.0, 900.0}) {
    GraphBuilder g("arb");
    const ir::Module& m = small_program(g);
    TempLedger ledger;
    arbiter::Options o;
    o.ledger_path = ledger.path;
    o.reps = 1;
    arbiter::Runner runner = arbiter::cpu_runner();
    auto honest = runner.run;
    runner.run = [honest, library_ns](const ir::Module& t, const std::vector<Tensor>& xs, int reps) {
      arbiter::Runner::Measured r = honest(t, xs, reps);
      r.median_ns = ir::print(t).find("library = openblas") != std::string::npos ? library_ns : 1000.0;
      return r;
    };
    auto d = arbiter::arbitrate(m, runner, o);
    EXPECT_EQ(d[0].candidate, library_ns > 1000.0 * (1 - arbiter::kNoiseMargin) ? "tessera" : "openblas") << library_ns;
    const std::string line = arbiter::describe(d[0]);
    EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
    EXPECT_NE(line.find("next "), std::string::npos) << line;
    const std::string table = arbiter::describe(d[0], true);
    EXPECT_GT(std::count(table.begin(), table.end(), '\n'), 2) << table;
  }
}

// Above the gate limit the oracle checks a sample of the timed run's own
// outputs; a region whose operand has two roles cannot be cut and is gated
// in full.
TEST(Arbiter, SampleGatesAndOperandsWithTwoRoles) {
  TempLedger ledger;
  arbiter::Options o;
  o.ledger_path = ledger.path;
  o.reps = 1;
  o.gate_limit_macs = 1;  // every region takes the sampled path (16 x 16 outputs)
  GraphBuilder g("big");
  ir::Value* a = g.input("a", T(DType::F32, {300, 40}));
  g.output(g.matmul(a, g.input("b", T(DType::F32, {40, 280})), DType::F32));
  auto d = arbiter::arbitrate(g.module(), arbiter::cpu_runner(), o);
  for (const auto& r : d[0].rows) {
    if (r.status == "winner" || r.status == "survivor") {
      EXPECT_NE(r.detail.find("gated on 16 x 16 sampled outputs of the full-size run"), std::string::npos) << r.detail;
    }
  }
  GraphBuilder sq("sq");
  ir::Value* x = sq.input("x", T(DType::F32, {300, 300}));
  sq.output(sq.binary("add", sq.matmul(x, x, DType::F32), x));
  auto e = arbiter::arbitrate(sq.module(), arbiter::cpu_runner(), o);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].candidate, "tessera");
  for (const auto& r : e[0].rows) {
    if (r.candidate == "tessera") {
      EXPECT_NE(r.detail.find("gated in full: no sample"), std::string::npos) << r.detail;
    }
  }
}

// The arbiter times the regions lowering will build: after the Graph IR
// rewrites, so `x.T @ w` is a matmul with transpose_a (not a row-major A read
// from a copy), and a sum of per-head products is one matmul over K = H*D.
TEST(Arbiter, TimesTheRewrittenRegions) {
  TempLedger ledger;
  arbiter::Options o;
  o.ledger_path = ledger.path;
  o.reps = 1;
  GraphBuilder g("rewritten");
  ir::Value* x = g.input("x", T(DType::F32, {40, 30}));
  g.output(g.matmul(g.transpose(x, {1, 0}), g.input("w", T(DType::F32, {40, 20})), DType::F32));
  ir::Value* o_heads = g.input("o", T(DType::F32, {4, 30, 8}));
  g.output(g.reduce(g.matmul(o_heads, g.input("wo", T(DType::F32, {4, 8, 20})), DType::F32), "sum", {0}));
  auto d = arbiter::arbitrate(g.module(), arbiter::cpu_runner(), o);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NE(d[0].signature.find("transpose_a = true"), std::string::npos) << d[0].signature;
  EXPECT_NE(d[1].signature.find("tensor<30x32xf32>, tensor<32x20xf32>"), std::string::npos) << d[1].signature;
}

// The sample checks the timed run itself: a candidate whose full-size output
// is wrong only in its last row (a tail block) is rejected.
TEST(Arbiter, SampledGateRejectsAWrongTail) {
  TempLedger ledger;
  arbiter::Options o;
  o.ledger_path = ledger.path;
  o.reps = 1;
  o.gate_limit_macs = 1;
  GraphBuilder g("tail");
  g.output(g.matmul(g.input("a", T(DType::F32, {300, 40})), g.input("b", T(DType::F32, {40, 280})), DType::F32));
  arbiter::Runner runner = arbiter::cpu_runner();
  auto honest = runner.run;
  runner.run = [honest](const ir::Module& t, const std::vector<Tensor>& xs, int reps) {
    arbiter::Runner::Measured r = honest(t, xs, reps);
    if (ir::print(t).find("library = openblas") != std::string::npos)
      for (int64_t j = 0; j < 280; ++j) r.outputs[0].set(299 * 280 + j, r.outputs[0].get(299 * 280 + j) + 1.0);
    return r;
  };
  auto d = arbiter::arbitrate(g.module(), runner, o);
  EXPECT_EQ(d[0].candidate, "tessera");
  bool rejected = false;
  for (const auto& r : d[0].rows)
    if (r.candidate == "openblas") rejected = r.status == "rejected";
  EXPECT_TRUE(rejected);
}

// The sample cuts every value by its role: rows of a batched A, columns of a
// transposed shared B, a bias along N, a scale along M (broadcast along N), a
// residual along both. The oracle of the cut program equals the full
// oracle's values at the sampled positions, exactly (the same sums in the same
// order), and a real kernel's full-size output passes against it.
// The region's full program on seeded random inputs, and the sample's
// oracle checked against the full oracle's values at the sampled positions,
// element for element.
struct SampleCheck {
  std::unique_ptr<ir::Module> full;
  std::vector<Tensor> inputs;
  oracle::Expected part;  // the sample program's oracle
  Tensor cut;             // the full oracle's values at the sampled positions
};
SampleCheck check_sample(const families::fused::FusedRegion& r, const arbiter::RegionSample& sample, int seed) {
  SampleCheck c;
  c.full = arbiter::region_program(r);
  for (auto& a : c.full->funcs()[0]->regions[0]->args)
    c.inputs.push_back(generate_input("random:seed=" + std::to_string(seed++), a->type.dtype, a->type.shape));
  const oracle::Expected whole = oracle::evaluate(*c.full, "", c.inputs).at(0);
  c.part = oracle::evaluate(sample.program(), "", sample.inputs(c.inputs)).at(0);
  Tensor whole_t = Tensor::empty(DType::F64, whole.shape);
  for (int64_t i = 0; i < whole_t.numel(); ++i) whole_t.set(i, whole.value[i]);
  c.cut = sample.output(whole_t);
  EXPECT_EQ(static_cast<int64_t>(c.part.value.size()), c.cut.numel());
  for (int64_t i = 0; i < c.cut.numel() && i < static_cast<int64_t>(c.part.value.size()); ++i)
    if (c.part.value[i] != c.cut.get(i)) {
      ADD_FAILURE() << "element " << i << ": " << c.part.value[i] << " against " << c.cut.get(i);
      break;
    }
  return c;
}

TEST(RegionSample, CutsEveryValueByItsRole) {
  GraphBuilder g("cut");
  ir::Value* mm = g.matmul(g.input("a", T(DType::F32, {2, 150, 24})), g.input("b", T(DType::F32, {70, 24})), DType::F32,
                           false, true);
  ir::Value* y = g.binary("mul", g.binary("add", mm, g.input("bias", T(DType::F32, {70}))),
                          g.input("scale", T(DType::F32, {150, 1})));
  g.output(g.unary("relu", g.binary("add", y, g.input("res", T(DType::F32, {2, 150, 70})))));
  auto regions = arbiter::matmul_regions(g.module());
  ASSERT_EQ(regions.size(), 1u);
  const auto& r = regions[0].region;
  arbiter::RegionSample sample(r, 1);  // the smallest sample: 16 rows of 150, 16 columns of 70
  EXPECT_EQ(sample.rows().size(), 16u);
  EXPECT_EQ(sample.cols().size(), 16u);
  EXPECT_EQ(sample.rows().front(), 0);
  EXPECT_EQ(sample.rows().back(), 149);
  EXPECT_EQ(sample.cols().back(), 69);
  EXPECT_TRUE(std::is_sorted(sample.rows().begin(), sample.rows().end()));
  EXPECT_EQ(std::adjacent_find(sample.rows().begin(), sample.rows().end()), sample.rows().end());
  const SampleCheck c = check_sample(r, sample, 40);
  ASSERT_EQ(c.cut.shape(), (std::vector<int64_t>{2, 16, 16}));
  // A real kernel at full size, checked through the sample.
  auto target = passes::lower(*c.full, ir::Layer::Target, "cpu");
  const Tensor out = runtime::CpuExecutable::load(*target).run(c.inputs).outputs.at(0);
  EXPECT_TRUE(oracle::compare(c.part, sample.output(out)).pass);
}

// SwiGLU on C's column halves (a region fusion forms for a TMA device): the
// sample's output columns J read B's columns J and J + N/2, the cut program
// splits its C of 2|J| columns into halves of |J|, and its oracle equals the
// full oracle's values at the sampled positions.
TEST(RegionSample, PairsTheColumnHalves) {
  GraphBuilder g("swiglu");
  ir::Value* mm = g.matmul(g.input("a", T(DType::F32, {150, 24})), g.input("b", T(DType::F32, {24, 140})), DType::F32);
  std::vector<ir::Value*> gu = g.split(mm, -1, {70, 70});
  g.output(g.binary("add", g.binary("mul", g.unary("silu", gu[0]), gu[1]), g.input("bias", T(DType::F32, {70}))));
  const machine::Descriptor h200 = machine::profile("h200");
  auto regions = arbiter::matmul_regions(g.module(), &h200);
  ASSERT_EQ(regions.size(), 1u);
  const auto& r = regions[0].region;
  ASSERT_EQ(r.result, g.module().funcs()[0]->regions[0]->ops.back()->operands[0]) << "SwiGLU did not join the matmul";
  arbiter::RegionSample sample(r, 1);
  EXPECT_EQ(sample.cols().size(), 16u);
  EXPECT_EQ(sample.cols().back(), 69);
  const std::string cut_text = ir::print(sample.program());
  EXPECT_NE(cut_text.find("sizes = [16, 16]"), std::string::npos) << cut_text;
  EXPECT_EQ(check_sample(r, sample, 60).cut.shape(), (std::vector<int64_t>{16, 16}));
}

// An RMSNorm prologue's x is cut like A (its rows) and its weight not at
// all, with K square enough to be mistaken for N (K == N == 40).
TEST(RegionSample, CutsANormPrologueLikeA) {
  GraphBuilder g("norm");
  ir::Value* x = g.input("x", T(DType::F32, {150, 40}));
  ir::Value* n = g.rms_norm(x, g.input("w", T(DType::F32, {40})));
  g.output(g.binary("add", g.matmul(n, g.input("b", T(DType::F32, {40, 40})), DType::F32),
                    g.input("bias", T(DType::F32, {40}))));
  const machine::Descriptor& cpu = machine::profile("x86-64");
  auto regions = arbiter::matmul_regions(g.module(), &cpu);
  ASSERT_EQ(regions.size(), 1u);
  const auto& r = regions[0].region;
  ASSERT_EQ(r.ops.front()->name, "tessera.rms_norm") << "the norm did not join the matmul";
  arbiter::RegionSample sample(r, 1);
  const SampleCheck c = check_sample(r, sample, 70);
  const std::vector<Tensor> cut_inputs = sample.inputs(c.inputs);
  EXPECT_EQ(cut_inputs[0].shape(), (std::vector<int64_t>{16, 40}));  // x: rows cut, all of K
  EXPECT_EQ(cut_inputs[1].shape(), (std::vector<int64_t>{40}));      // w: whole
  // Both candidates pass the gate: the library runs the norm as a row kernel first.
  TempLedger ledger;
  arbiter::Options o;
  o.ledger_path = ledger.path;
  o.reps = 1;
  auto d = arbiter::arbitrate(g.module(), arbiter::cpu_runner(), o);
  ASSERT_EQ(d.size(), 1u);
  for (const auto& row : d[0].rows) {
    if (row.candidate == "tessera" || row.candidate == "openblas") {
      EXPECT_TRUE(row.status == "winner" || row.status == "survivor") << row.candidate << ": " << row.detail;
    }
  }
}

TEST(Arbiter, ForcedCandidatesAreNotMeasuredAndMustApply) {
  GraphBuilder g("arb");
  const ir::Module& m = small_program(g);
  arbiter::Options o;
  o.forced = "openblas";
  auto d = arbiter::arbitrate(m, arbiter::cpu_runner(), o);
  EXPECT_EQ(d[0].candidate, "openblas");
  EXPECT_EQ(d[0].why, "forced by --candidate");
  EXPECT_TRUE(d[0].rows.empty());
  try {
    passes::lower(m, ir::Layer::Target, "cpu", {{"*", "cublaslt"}});
    ADD_FAILURE() << "cublaslt applied on the CPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E304");
  }
}

}  // namespace
}  // namespace tessera::test
