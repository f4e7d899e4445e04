// The arbiter on the CPU: library candidates are correct (OpenBLAS against the
// oracle over the f32 matmul cases), the arbiter gates, times and records, the
// ledger answers only for its exact key, and a candidate that errs beyond its
// budget is rejected, never picked.
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "arbiter/arbiter.hpp"
#include "arbiter/ledger.hpp"
#include "e2e_util.hpp"
#include "ir/printer.hpp"
#include "matmul_cases.hpp"
#include "passes/pipeline.hpp"
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
    runtime::Executable exe = runtime::Executable::load(*target);
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
  std::string path = (std::filesystem::temp_directory_path() /
                      ("tessera-ledger-" + std::to_string(::getpid()) + ".json")).string();
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
    if (r.candidate == "cublaslt") EXPECT_EQ(r.status, "not applicable");
    if (r.status == "winner" || r.status == "survivor") EXPECT_GT(r.median_ns, 0);
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

// Above the gate limit the oracle checks a proxy with M, N <= 256; a region
// whose operand has two roles has no such proxy and is gated at full size.
TEST(Arbiter, ProxyGatesAndOperandsWithTwoRoles) {
  TempLedger ledger;
  arbiter::Options o;
  o.ledger_path = ledger.path;
  o.reps = 1;
  o.gate_limit_macs = 1;  // every region takes the proxy path
  GraphBuilder g("big");
  ir::Value* a = g.input("a", T(DType::F32, {300, 40}));
  g.output(g.matmul(a, g.input("b", T(DType::F32, {40, 280})), DType::F32));
  auto d = arbiter::arbitrate(g.module(), arbiter::cpu_runner(), o);
  for (const auto& r : d[0].rows)
    if (r.status == "winner" || r.status == "survivor")
      EXPECT_NE(r.detail.find("gated at M, N <= 256"), std::string::npos) << r.detail;
  GraphBuilder sq("sq");
  ir::Value* x = sq.input("x", T(DType::F32, {300, 300}));
  sq.output(sq.binary("add", sq.matmul(x, x, DType::F32), x));
  auto e = arbiter::arbitrate(sq.module(), arbiter::cpu_runner(), o);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].candidate, "tessera");
  for (const auto& r : e[0].rows)
    if (r.candidate == "tessera") EXPECT_NE(r.detail.find("gated at full size"), std::string::npos) << r.detail;
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
