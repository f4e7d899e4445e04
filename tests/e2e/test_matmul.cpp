// Matmul end to end on the CPU: the matrix of matmul_cases.hpp against the
// oracle, bitwise the same on 1 and 3 threads; epilogues fused into the one
// kernel; a kernel that drops part of K is caught; bad programs are errors.
#include "e2e_util.hpp"
#include "matmul_cases.hpp"
#include "runtime/inputs.hpp"

namespace tessera::test {
namespace {

class MatmulMatrix : public ::testing::TestWithParam<FusionCase> {};

TEST_P(MatmulMatrix, MatchesOracleDeterministically) {
  const FusionCase& c = GetParam();
  GraphBuilder g("e2e");
  c.build(g);
  Program p = Program::compile(g.module(), "cpu");
  // the epilogue is part of the matmul's kernel
  EXPECT_EQ(p.executable().kernels().size(), 1u) << p.emit("schedule");
  run_and_check_deterministic(p, inputs_for(c, g.module()));
}

INSTANTIATE_TEST_SUITE_P(All, MatmulMatrix, ::testing::ValuesIn(matmul_cases()),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// The tolerance must be tight enough to catch a kernel that skips a slice of
// K: run the real kernel on B with 16 of its 512 rows zeroed, and compare with
// the oracle of the intact B.
TEST(MatmulCrossCheck, DroppingPartOfKIsCaught) {
  for (DType dt : {DType::F32, DType::BF16}) {
    GraphBuilder g("mm");
    ir::Value* a = g.input("a", T(dt, {64, 512}));
    ir::Value* b = g.input("b", T(dt, {512, 48}));
    g.output(g.matmul(a, b, DType::F32));
    Program p = Program::compile(g.module(), "cpu");
    std::vector<Tensor> xs = {generate_input("random:seed=1,lo=-1,hi=1", dt, {64, 512}),
                              generate_input("random:seed=2,lo=-1,hi=1", dt, {512, 48})};
    Tensor dropped = generate_input("random:seed=2,lo=-1,hi=1", dt, {512, 48});
    for (int64_t i = 200 * 48; i < 216 * 48; ++i) dropped.set(i, 0.0);
    auto got = p.run({xs[0], dropped}).outputs;
    auto want = oracle::evaluate(*p.graph(), "", xs);
    oracle::Comparison c = oracle::compare(want[0], got[0]);
    EXPECT_FALSE(c.pass) << dtype_name(dt) << ": worst err/tol " << c.worst_ratio;
    EXPECT_GT(c.worst_ratio, 5.0) << dtype_name(dt);
    // ... while the intact input passes with a margin
    oracle::Comparison ok = oracle::compare(want[0], p.run(xs).outputs[0]);
    EXPECT_TRUE(ok.pass);
    EXPECT_LT(ok.worst_ratio, 0.5) << dtype_name(dt);
  }
}

TEST(MatmulDecisions, OperandProducersAreMaterializedEpiloguesFused) {
  GraphBuilder g("mm");
  ir::Value* x = g.input("x", T(DType::F32, {32, 64}));
  ir::Value* w = g.input("w", T(DType::F32, {64, 16}));
  ir::Value* bias = g.input("bias", T(DType::F32, {16}));
  ir::Value* h = g.unary("relu", x);  // read by the matmul: its own kernel
  g.output(g.unary("tanh", g.binary("add", g.matmul(h, w, DType::F32), bias)));
  Program p = Program::compile(g.module(), "cpu");
  EXPECT_EQ(p.executable().kernels().size(), 2u) << p.emit("schedule");
  const std::string s = p.emit("schedule");
  EXPECT_NE(s.find("schedule.pointwise"), std::string::npos);
  EXPECT_NE(s.find("tessera.tanh"), std::string::npos);
}

TEST(MatmulErrors, BadProgramsAreCompileErrors) {
  auto code_of = [](const std::function<void(GraphBuilder&)>& build) {
    try {
      GraphBuilder g("bad");
      build(g);
      g.module();
    } catch (const Error& e) {
      return e.code();
    }
    return std::string("none");
  };
  EXPECT_EQ(code_of([](GraphBuilder& g) {
              g.output(g.matmul(g.input("a", T(DType::F32, {4, 5})), g.input("b", T(DType::F32, {6, 3})), DType::F32));
            }),
            "E213");
  EXPECT_EQ(code_of([](GraphBuilder& g) {
              g.output(g.matmul(g.input("a", T(DType::F32, {4, 5})), g.input("b", T(DType::BF16, {5, 3})), DType::F32));
            }),
            "E209");
  EXPECT_EQ(code_of([](GraphBuilder& g) {
              g.output(g.matmul(g.input("a", T(DType::F64, {4, 5})), g.input("b", T(DType::F64, {5, 3})), DType::F64));
            }),
            "E214");
  EXPECT_EQ(code_of([](GraphBuilder& g) {
              g.output(g.matmul(g.input("a", T(DType::F32, {5})), g.input("b", T(DType::F32, {5, 3})), DType::F32));
            }),
            "E213");
  EXPECT_EQ(code_of([](GraphBuilder& g) {  // batch 2 vs 3
              g.output(g.matmul(g.input("a", T(DType::F32, {2, 4, 5})), g.input("b", T(DType::F32, {3, 5, 3})),
                                DType::F32));
            }),
            "E210");
  EXPECT_EQ(code_of([](GraphBuilder& g) {  // a partial batch broadcast [2,1] vs [2,3]
              g.output(g.matmul(g.input("a", T(DType::F32, {2, 1, 4, 5})), g.input("b", T(DType::F32, {2, 3, 5, 3})),
                                DType::F32));
            }),
            "E213");
}

}  // namespace
}  // namespace tessera::test
