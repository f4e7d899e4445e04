// Pointwise ops, fused reductions and row ops end to end on the CPU: every
// case against the oracle (which evaluates the unfused graph), bitwise the
// same on 1 and 3 threads; what was fused; and that a wrong fusion is caught.
#include <cmath>

#include "e2e_util.hpp"
#include "fusion_cases.hpp"
#include "ir/schedule_dialect.hpp"
#include "passes/pipeline.hpp"

namespace tessera::test {
namespace {

class FusionMatrix : public ::testing::TestWithParam<FusionCase> {};

TEST_P(FusionMatrix, MatchesUnfusedOracleDeterministically) {
  const FusionCase& c = GetParam();
  GraphBuilder g("e2e");
  c.build(g);
  Program p = Program::compile(g.module(), "cpu");
  run_and_check_deterministic(p, inputs_for(c, g.module()));
}

INSTANTIATE_TEST_SUITE_P(All, FusionMatrix,
                         ::testing::ValuesIn(sample_matrix<FusionCase>("FusionMatrix", all_fusion_cases(),
                                                                       fusion_case_name, 8, fusion_coverage())),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

int count_schedule_ops(const Program& p) {
  const std::string s = p.emit("schedule");
  int n = 0;
  for (size_t at = s.find(" = schedule."); at != std::string::npos; at = s.find(" = schedule.", at + 1)) ++n;
  return n;
}

TEST(FusionDecisions, ChainsBecomeOneKernel) {
  GraphBuilder g("f");
  ir::Value* x = g.input("x", T(DType::F32, {8, 64}));
  ir::Value* w = g.input("w", T(DType::F32, {64}));
  ir::Value* gate = g.input("g", T(DType::F32, {8, 64}));
  g.output(
      g.unary("silu", g.binary("mul", g.rms_norm(g.binary("mul", x, g.constant(2.0, T(DType::F32, {}))), w), gate)));
  Program p = Program::compile(g.module(), "cpu");
  EXPECT_EQ(count_schedule_ops(p), 1) << p.emit("schedule");
  EXPECT_NE(p.emit("schedule").find("tessera.silu"), std::string::npos);
}

// RMSNorm feeding a matmul is the matmul's prologue on the CPU (one kernel,
// no normalized x in memory); a library candidate runs it as a row kernel.
TEST(FusionDecisions, RmsNormJoinsTheMatmulItFeeds) {
  for (DType dt : {DType::F32, DType::BF16}) {
    GraphBuilder g("f");
    ir::Value* x = g.input("x", T(dt, {50, 300}));
    ir::Value* n = g.rms_norm(x, g.input("w", T(dt, {300})));
    g.output(g.unary("silu", g.matmul(n, g.input("b", T(dt, {300, 70})), dt)));
    std::vector<Tensor> xs = {generate_input("special:seed=5,rate=0.02", dt, {50, 300}),
                              generate_input("random:seed=6", dt, {300}),
                              generate_input("random:seed=7,lo=-0.2,hi=0.2", dt, {300, 70})};
    Program p = Program::compile(g.module(), "cpu");
    EXPECT_EQ(count_schedule_ops(p), 1) << p.emit("schedule");
    EXPECT_NE(p.emit("schedule").find("norm_leaf = 1"), std::string::npos) << p.emit("schedule");
    run_and_check_deterministic(p, xs);
    if (dt != DType::F32) continue;  // OpenBLAS is sgemm
    Program lib = Program::compile(g.module(), "cpu", "", {{"*", "openblas"}});
    EXPECT_EQ(count_schedule_ops(lib), 3) << lib.emit("schedule");  // rows, the library, the epilogue
    run_and_check_deterministic(lib, xs);
  }
}

TEST(FusionDecisions, ViewsCostNoKernelWherePointwiseKernelsReadThem) {
  GraphBuilder g("f");
  ir::Value* q = g.input("q", T(DType::F32, {2, 40, 24}));
  ir::Value* k = g.input("k", T(DType::F32, {2, 56, 24}));
  ir::Value* s = g.matmul(q, g.transpose(k, {0, 2, 1}), DType::F32);  // q @ k.mT: transpose_b, no copy
  ir::Value* y = g.input("y", T(DType::F32, {2, 56, 80}));
  g.output(g.binary("add", g.transpose(s, {0, 2, 1}), g.slice(y, {0, 0, 1}, {2, 56, 80}, {1, 1, 2})));
  Program p = Program::compile(g.module(), "cpu");
  const std::string sched = p.emit("schedule");
  EXPECT_EQ(count_schedule_ops(p), 2) << sched;  // the matmul, then one pointwise kernel
  EXPECT_NE(sched.find("transpose_b = true"), std::string::npos) << sched;
  EXPECT_EQ(sched.find("materialize"), std::string::npos) << sched;
  run_and_check_deterministic(p, {generate_input("random:seed=1", DType::F32, {2, 40, 24}),
                                  generate_input("random:seed=2", DType::F32, {2, 56, 24}),
                                  generate_input("random:seed=4", DType::F32, {2, 56, 80})});
}

TEST(FusionDecisions, ViewsOtherKernelsReadAreCopiedWithAReason) {
  GraphBuilder g("f");
  ir::Value* x = g.input("x", T(DType::F32, {8, 64}));
  ir::Value* t = g.transpose(x, {1, 0});
  g.output(g.softmax(t, -1));
  g.output(g.reshape(t, {512}));
  Program p = Program::compile(g.module(), "cpu");
  const std::string sched = p.emit("schedule");
  EXPECT_NE(sched.find("materialize = \"read by tessera.softmax"), std::string::npos) << sched;
  EXPECT_NE(sched.find("materialize = \"returned\""), std::string::npos) << sched;
  run_and_check_deterministic(p, {generate_input("special:seed=3,rate=0.01", DType::F32, {8, 64})});
}

TEST(FusionDecisions, ReductionPrologueIsOneKernel) {
  GraphBuilder g("f");
  ir::Value* x = g.input("x", T(DType::F32, {8, 64}));
  g.output(g.reduce(g.unary("abs", g.binary("sub", x, g.constant(1.0, T(DType::F32, {})))), "max", {1}));
  Program p = Program::compile(g.module(), "cpu");
  EXPECT_EQ(count_schedule_ops(p), 1) << p.emit("schedule");
}

TEST(FusionDecisions, SharedValuesAreMaterializedOnce) {
  GraphBuilder g("f");
  ir::Value* x = g.input("x", T(DType::F32, {8, 64}));
  ir::Value* e = g.unary("exp", x);
  g.output(g.reduce(e, "sum", {1}));
  g.output(g.reduce(e, "max", {1}));
  Program p = Program::compile(g.module(), "cpu");
  // exp once (in memory), then two reductions that read it
  EXPECT_EQ(count_schedule_ops(p), 3) << p.emit("schedule");
}

TEST(FusionDecisions, NonContiguousAxesDoNotFuseAPrologue) {
  GraphBuilder g("f");
  ir::Value* x = g.input("x", T(DType::F32, {4, 5, 6}));
  g.output(g.reduce(g.binary("mul", x, x), "sum", {0, 2}));
  Program p = Program::compile(g.module(), "cpu");
  const std::string s = p.emit("schedule");
  EXPECT_NE(s.find("schedule.pointwise"), std::string::npos) << s;  // x*x materialized, then two passes
  auto xs = std::vector<Tensor>{generate_input("random:seed=3", DType::F32, {4, 5, 6})};
  run_and_check(p, xs);
}

// The oracle checks against the unfused graph, so a fusion that computes
// something else must fail the check. Rewrite the fused region (mul -> add),
// re-stamp its hash so the pipeline accepts it, and run it.
TEST(FusionCrossCheck, AWrongFusionIsCaught) {
  GraphBuilder g("f");
  ir::Value* x = g.input("x", T(DType::F32, {16, 100}));
  ir::Value* w = g.input("w", T(DType::F32, {100}));
  g.output(g.unary("silu", g.binary("mul", g.rms_norm(x, w), x)));
  const ir::Module& graph = g.module();
  auto schedule = passes::lower(graph, ir::Layer::Schedule, "cpu");
  ir::Op& sop = *schedule->funcs()[0]->regions[0]->ops.front();
  ASSERT_EQ(sop.name, "schedule.rowwise");
  bool changed = false;
  for (auto& op : sop.regions[0]->ops)
    if (op->name == "tessera.mul" && !changed) {
      op->name = "tessera.add";
      changed = true;
    }
  ASSERT_TRUE(changed);
  // Without a new hash the pipeline refuses the edit (E301)...
  try {
    passes::lower(*schedule, ir::Layer::Tile, "cpu");
    FAIL() << "an edited region was accepted without its hash";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E301");
  }
  // ...with one, it runs, and the oracle (unfused graph) rejects the result.
  ir::stamp_artifact_hash(sop);
  Program wrong = Program::compile(*schedule, "cpu");
  std::vector<Tensor> xs = {generate_input("random:seed=1", DType::F32, {16, 100}),
                            generate_input("random:seed=2", DType::F32, {100})};
  runtime::RunResult r = wrong.run(xs);
  auto expected = oracle::evaluate(graph, "", xs);
  EXPECT_FALSE(oracle::compare(expected[0], r.outputs[0]).pass);
  // and the correct program passes the same check
  Program right = Program::compile(graph, "cpu");
  EXPECT_TRUE(oracle::compare(expected[0], right.run(xs).outputs[0]).pass);
}

// The online (one-read) softmax statistics are what CUDA uses for long rows.
// The CPU schedule does not pick them, so switch them on in the schedule here
// and check the tile program against the oracle, NaN and -inf rows included.
TEST(FusionSemantics, OnlineSoftmaxStatisticsMatchTheOracle) {
  for (const char* op : {"softmax", "log_softmax"}) {
    GraphBuilder g("f");
    ir::Value* x = g.input("x", T(DType::F32, {6, 3001}));
    g.output(std::string(op) == "softmax" ? g.softmax(x, -1) : g.log_softmax(x, -1));
    auto schedule = passes::lower(g.module(), ir::Layer::Schedule, "cpu");
    ir::Op& sop = *schedule->funcs()[0]->regions[0]->ops.front();
    ASSERT_EQ(sop.name, "schedule.rowwise");
    sop.attrs["online"] = ir::Attr(true);
    sop.attrs["stash_exp"] = ir::Attr(false);  // the CPU's own choice for softmax; not with online
    ir::stamp_artifact_hash(sop);
    Program online = Program::compile(*schedule, "cpu");
    EXPECT_NE(online.emit("tile").find("fn = \"max\""), std::string::npos);
    Tensor in = generate_input("special:seed=4,rate=0.0005,lo=-30,hi=30", DType::F32, {6, 3001});
    const double inf = std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < 3001; ++j) in.set(3 * 3001 + j, -inf);                    // an all -inf row
    for (int64_t j = 0; j < 3001; ++j) in.set(4 * 3001 + j, j % 7 ? -inf : 1.0 * j);  // mostly -inf, rising
    for (int64_t j = 0; j < 3001; ++j) in.set(5 * 3001 + j, 0.01 * j);                // sorted: rescales every step
    runtime::RunResult r = online.run({in});
    auto expected = oracle::evaluate(g.module(), "", {in});
    oracle::Comparison c = oracle::compare(expected[0], r.outputs[0]);
    EXPECT_TRUE(c.pass) << op << ": " << c.first_failure;
    for (int64_t j = 0; j < 3001; ++j) ASSERT_TRUE(std::isnan(r.outputs[0].get(3 * 3001 + j))) << j;
  }
}

// A hand-edited schedule (hash re-stamped) fails with E302, never a crash or
// an out-of-bounds kernel.
TEST(FusionSchedule, EditedDecisionsAreValidated) {
  GraphBuilder g("f");
  ir::Value* x = g.input("x", T(DType::F32, {8, 64}));
  ir::Value* w = g.input("w", T(DType::F32, {64}));
  g.output(g.rms_norm(x, w));
  g.output(g.unary("exp", g.binary("add", x, w)));
  auto edits = std::vector<std::pair<std::string, ir::Attr>>{
      {"vector_width", ir::Attr(int64_t{1} << 32)},
      {"unroll", ir::Attr(int64_t{1} << 20)},
      {"leaf_strides", ir::Attr(ir::AttrList{ir::Attr::ints({64, 1, 0}), ir::Attr::ints({0, 100, 0})})},
      {"eps", ir::Attr(-1.0)},
      {"strategy", ir::Attr("columns")}};
  for (auto& [key, value] : edits)
    for (size_t which : {size_t{0}, size_t{1}}) {
      auto schedule = passes::lower(g.module(), ir::Layer::Schedule, "cpu");
      ir::Op& sop = *schedule->funcs()[0]->regions[0]->ops[which];
      if (!sop.attr(key)) continue;
      if (key == "leaf_strides" && which == 1)
        sop.attrs[key] = ir::Attr(ir::AttrList{ir::Attr::ints({-1, 1}), ir::Attr::ints({0, 1})});
      else sop.attrs[key] = value;
      ir::stamp_artifact_hash(sop);
      try {
        passes::lower(*schedule, ir::Layer::Target, "cpu");
        ADD_FAILURE() << sop.name << ": edited '" << key << "' was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), "E302") << sop.name << " " << key << ": " << e.what();
      }
    }
}

TEST(FusionSemantics, SoftmaxRowsWithNaNOrAllMinusInfAreNaN) {
  GraphBuilder g("f");
  g.output(g.softmax(g.input("x", T(DType::F32, {3, 5})), -1));
  Program p = Program::compile(g.module(), "cpu");
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::empty(DType::F32, {3, 5});
  const float vals[15] = {1, 2, nan, 4, 5, -inf, -inf, -inf, -inf, -inf, 0, -inf, 1, -inf, 2};
  for (int i = 0; i < 15; ++i) x.set(i, vals[i]);
  Tensor y = run_and_check(p, {x})[0];
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(std::isnan(y.get(i))) << i;  // NaN row; all -inf row
  EXPECT_EQ(y.get(11), 0.0);                                            // -inf among finite values: 0
  double sum = 0;
  for (int i = 10; i < 15; ++i) sum += y.get(i);
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

TEST(FusionSemantics, LogSoftmaxOfFiniteInputsIsFinite) {
  GraphBuilder g("f");
  g.output(g.log_softmax(g.input("x", T(DType::F32, {2, 4})), -1));
  Program p = Program::compile(g.module(), "cpu");
  Tensor x = Tensor::empty(DType::F32, {2, 4});
  const float vals[8] = {0, -1e30f, -1e30f, -1e30f, 1e38f, -1e38f, 0, 1};  // differences fit f32
  for (int i = 0; i < 8; ++i) x.set(i, vals[i]);
  Tensor y = run_and_check(p, {x})[0];
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(std::isfinite(y.get(i))) << i << " " << y.get(i);
}

TEST(FusionErrors, BroadcastAndDtypeMismatchesAreCompileErrors) {
  GraphBuilder g("f");
  ir::Value* a = g.input("a", T(DType::F32, {4, 3}));
  ir::Value* b = g.input("b", T(DType::F32, {4}));
  ir::Value* h = g.input("h", T(DType::F16, {4, 3}));
  try {
    g.binary("add", a, b);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E210");
    EXPECT_NE(std::string(e.what()).find("[4, 3] and [4]"), std::string::npos) << e.what();
  }
  try {
    g.binary("mul", a, h);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E209");
  }
  try {
    g.rms_norm(a, b);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E212");
  }
}

}  // namespace
}  // namespace tessera::test
