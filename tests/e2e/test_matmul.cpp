// Matmul end to end on the CPU: the matrix of matmul_cases.hpp against the
// oracle, bitwise the same on 1 and 3 threads; epilogues fused into the one
// kernel; a kernel that drops part of K is caught; bad programs are errors.
#include "e2e_util.hpp"
#include "ir/ir_hash.hpp"
#include "ir/parser.hpp"
#include "ir/printer.hpp"
#include "ir/schedule_dialect.hpp"
#include "matmul_cases.hpp"
#include "passes/pipeline.hpp"
#include "passes/schedule_to_tile.hpp"
#include "runtime/cpu_executable.hpp"
#include "runtime/inputs.hpp"
#include "support/sha256.hpp"

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

INSTANTIATE_TEST_SUITE_P(All, MatmulMatrix,
                         ::testing::ValuesIn(sample_matrix<FusionCase>("MatmulMatrix", matmul_cases(), fusion_case_name,
                                                                       4, matmul_coverage())),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// Matrix-vector products lower to a reduction over K (no matmul kernel): the
// matrix read once, the product fused into the sum.
class MatvecMatrix : public ::testing::TestWithParam<FusionCase> {};

TEST_P(MatvecMatrix, IsAReductionMatchingTheOracle) {
  const FusionCase& c = GetParam();
  GraphBuilder g("e2e");
  c.build(g);
  Program p = Program::compile(g.module(), "cpu");
  const std::string schedule = p.emit("schedule");
  EXPECT_EQ(schedule.find("schedule.matmul"), std::string::npos) << schedule;
  EXPECT_NE(schedule.find("schedule.reduce"), std::string::npos) << schedule;
  run_and_check_deterministic(p, inputs_for(c, g.module()));
}

INSTANTIATE_TEST_SUITE_P(All, MatvecMatrix, ::testing::ValuesIn(matvec_cases()),
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

// A re-stamped schedule is still checked against what its kernel can do:
// decisions outside the block library's envelope, misaligned vector claims,
// and a result wider than the matmul (the kernel writes batch*m*n elements).
TEST(MatmulSchedule, EditedDecisionsAreValidated) {
  GraphBuilder g("mm");
  ir::Value* a = g.input("a", T(DType::BF16, {64, 36}));
  ir::Value* b = g.input("b", T(DType::BF16, {64, 40}));
  g.output(g.matmul(a, b, DType::F32, true, false));  // A stored transposed: 36 rows are not whole vectors
  const std::vector<std::pair<std::string, ir::Attr>> edits = {
      {"block", ir::Attr::ints({50, 32, 256})},  // not whole micro-tiles
      {"slab_rows", ir::Attr(int64_t{6})},
      {"programs", ir::Attr(int64_t{7})},
      {"scratch", ir::Attr(int64_t{16})},
      {"vec", ir::Attr::ints({1, 1})},
      {"m", ir::Attr(int64_t{80})},
      {"candidate", ir::Attr("cublaslt")}};
  for (const auto& [key, value] : edits) {
    auto schedule = passes::lower(g.module(), ir::Layer::Schedule, "cpu");
    ir::Op& sop = *schedule->funcs()[0]->regions[0]->ops[0];
    ASSERT_TRUE(sop.attr(key)) << key;
    sop.attrs[key] = value;
    ir::stamp_artifact_hash(sop);
    try {
      passes::lower(*schedule, ir::Layer::Target, "cpu");
      ADD_FAILURE() << "edited '" << key << "' was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), "E302") << key << ": " << e.what();
    }
  }
  // an epilogue that broadcasts the result wider than the matmul
  GraphBuilder w("wide");
  ir::Value* c = w.matmul(w.input("a", T(DType::F32, {8, 16})), w.input("b", T(DType::F32, {16, 32})), DType::F32);
  w.output(w.binary("add", c, w.input("t", T(DType::F32, {4, 8, 32}))));
  auto schedule = passes::lower(w.module(), ir::Layer::Schedule, "cpu");
  // fusion keeps the wider add out of the matmul's kernel ...
  EXPECT_EQ(schedule->funcs()[0]->regions[0]->ops.size(), 3u) << ir::print(*schedule);
  // ... and a schedule edited (and re-stamped) to fuse it anyway is refused
  GraphBuilder one("w");
  ir::Value* c1 = one.matmul(one.input("a", T(DType::F32, {8, 16})), one.input("b", T(DType::F32, {16, 32})),
                             DType::F32);
  one.output(one.binary("add", c1, one.input("t", T(DType::F32, {8, 32}))));
  std::string text = ir::print(*passes::lower(one.module(), ir::Layer::Schedule, "cpu"));
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  };
  replace_all("tensor<8x32xf32>", "tensor<4x8x32xf32>");  // t, the add and the result ...
  replace_all("tensor<16x32xf32>) -> tensor<4x8x32xf32>\n", "tensor<16x32xf32>) -> tensor<8x32xf32>\n");  // ... not c
  const size_t add = text.find("(tensor<4x8x32xf32>", text.find("= tessera.add"));  // the add's first operand is c
  text.replace(add, 19, "(tensor<8x32xf32>");
  auto s1 = ir::parse(text, "edited");
  ir::stamp_artifact_hash(*s1->funcs()[0]->regions[0]->ops[0]);
  try {
    passes::schedule_to_tile(*s1);
    ADD_FAILURE() << "a result wider than the matmul was accepted:\n" << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E302") << e.what();
    EXPECT_NE(std::string(e.what()).find("is not the matmul's shape"), std::string::npos) << e.what();
  }
}

// The CPU block keeps B's packed panel for the next programs of a launch on
// the same thread (device/cpu/tessera_matmul.hpp). B rewritten in place
// between two launches (same address) must be packed again: both runs match
// the oracle of the B they were given. 500 rows are six blocks of 96 sharing
// each panel; B in both layouts, K past one chunk.
TEST(MatmulRuntime, KeptPanelsNeverOutliveTheirLaunch) {
  for (bool tb : {false, true}) {
    GraphBuilder g("keep");
    ir::Value* a = g.input("a", T(DType::F32, {500, 300}));
    ir::Value* b = g.input("b", T(DType::F32, tb ? std::vector<int64_t>{40, 300} : std::vector<int64_t>{300, 40}));
    g.output(g.matmul(a, b, DType::F32, false, tb));
    Program p = Program::compile(g.module(), "cpu");
    ASSERT_NE(p.emit("target").find("tsr::matmul_block<"), std::string::npos);  // the synthesized block
    std::vector<Tensor> xs = {generate_input("random:seed=1,lo=-1,hi=1", DType::F32, {500, 300}),
                              generate_input("random:seed=2,lo=-1,hi=1", DType::F32, b->type.shape)};
    for (int round = 0; round < 2; ++round) {
      if (round == 1)
        for (int64_t i = 0; i < xs[1].numel(); ++i) xs[1].set(i, 1.0 - xs[1].get(i));  // same address
      const Tensor got = p.run(xs).outputs[0];
      oracle::Comparison c = oracle::compare(oracle::evaluate(*p.graph(), "", xs)[0], got);
      EXPECT_TRUE(c.pass) << "tb=" << tb << " round " << round << ": worst err/tol " << c.worst_ratio;
    }
  }
}

// A library call's record must stay inside the buffers it is launched on.
TEST(MatmulRuntime, ALibraryRecordThatDisagreesWithItsBuffersIsRefused) {
  GraphBuilder g("lib");
  g.output(g.matmul(g.input("a", T(DType::F32, {8, 16})), g.input("b", T(DType::F32, {16, 32})), DType::F32));
  auto target = passes::lower(g.module(), ir::Layer::Target, "cpu", {{"*", "openblas"}});
  for (auto& op : target->ops)
    if (op->name == "target.kernel") {
      std::string src = *op->attr("source")->as_string();
      src.replace(src.find("\nm = 8\n"), 7, "\nm = 9\n");
      op->attrs["source"] = src;
      op->attrs["sha256"] = sha256_hex(src);
    }
  ir::stamp_ir_hashes(*target);  // a deliberate edit, past the digests that catch accidental ones
  try {
    runtime::CpuExecutable::load(*target);
    ADD_FAILURE() << "a library call past its buffers was loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E504") << e.what();
  }
}

// A residual added to the product is the library's own epilogue (out = a x
// b + c, beta = 1): one call, no epilogue kernel, the oracle's result
// (NaN/inf in c included); a record whose c disagrees with its buffers is
// refused.
TEST(MatmulDecisions, ALibraryAddsAResidualInItsCall) {
  int ran = 0;
  for (const FusionCase& c : matmul_cases()) {
    if (c.name.find("_residual") == std::string::npos || c.name.find("matmul_f32_to_f32") != 0) continue;
    GraphBuilder g("lib");
    c.build(g);
    auto target = passes::lower(g.module(), ir::Layer::Target, "cpu", {{"*", "openblas"}});
    const std::string text = ir::print(*target);
    EXPECT_EQ(runtime::CpuExecutable::load(*target).kernels().size(), 1u) << c.name;
    EXPECT_NE(text.find("add_c = 1"), std::string::npos) << c.name;
    std::vector<Tensor> xs = inputs_for(c, g.module());
    oracle::Comparison cmp = oracle::compare(oracle::evaluate(g.module(), "", xs)[0],
                                             runtime::CpuExecutable::load(*target).run(xs).outputs[0]);
    EXPECT_TRUE(cmp.pass) << c.name << ": " << cmp.first_failure;
    ++ran;
  }
  EXPECT_GE(ran, 4);
  GraphBuilder g("lib");
  ir::Value* mm = g.matmul(g.input("a", T(DType::F32, {8, 16})), g.input("b", T(DType::F32, {16, 32})), DType::F32);
  g.output(g.binary("add", mm, g.input("c", T(DType::F32, {8, 32}))));
  auto target = passes::lower(g.module(), ir::Layer::Target, "cpu", {{"*", "openblas"}});
  for (auto& op : target->ops)
    if (op->name == "target.kernel") {
      std::string src = *op->attr("source")->as_string();
      src.replace(src.find("\nadd_c = 1\n"), 11, "\n");  // the call would write out without c
      op->attrs["source"] = src;
      op->attrs["sha256"] = sha256_hex(src);
    }
  ir::stamp_ir_hashes(*target);
  try {
    runtime::CpuExecutable::load(*target);
    ADD_FAILURE() << "a library call that drops its addend was loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E504") << e.what();
  }
}

// A producer of an epilogue leaf that precedes the matmul, and an operand
// used twice, lower and run for every candidate the arbiter may pick.
TEST(MatmulDecisions, LibraryCandidatesSplitAnyRegion) {
  GraphBuilder g("mix");
  ir::Value* a = g.input("a", T(DType::F32, {24, 24}));
  ir::Value* bias = g.input("bias", T(DType::F32, {24}));
  ir::Value* t = g.unary("exp", bias);  // joins the matmul's region, before the matmul
  g.output(g.binary("add", g.binary("add", g.matmul(a, g.input("b", T(DType::F32, {24, 24})), DType::F32), t), a));
  for (const char* cand : {"tessera", "openblas"}) {
    auto target = passes::lower(g.module(), ir::Layer::Target, "cpu", {{"*", cand}});
    runtime::CpuExecutable exe = runtime::CpuExecutable::load(*target);
    std::vector<Tensor> xs = {generate_input("random:seed=1", DType::F32, {24, 24}),
                              generate_input("random:seed=2", DType::F32, {24}),
                              generate_input("random:seed=3", DType::F32, {24, 24})};
    oracle::Comparison c = oracle::compare(oracle::evaluate(g.module(), "", xs)[0], exe.run(xs).outputs[0]);
    EXPECT_TRUE(c.pass) << cand << ": " << c.first_failure;
  }
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
  EXPECT_EQ(
      code_of([](GraphBuilder& g) {  // batch 2 vs 3
        g.output(g.matmul(g.input("a", T(DType::F32, {2, 4, 5})), g.input("b", T(DType::F32, {3, 5, 3})), DType::F32));
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
