// Attention end to end on the CPU: the matrix of attention_cases.hpp against
// the oracle, bitwise the same on 1 and 3 threads; one kernel with no
// Sq x Sk buffer; a kernel that drops a key is caught; re-stamped schedules
// are validated; targets without an attention block refuse it.
#include <cmath>
#include <regex>

#include "attention_cases.hpp"
#include "e2e_util.hpp"
#include "ir/ir_hash.hpp"
#include "ir/printer.hpp"
#include "ir/schedule_dialect.hpp"
#include "passes/pipeline.hpp"
#include "sampling.hpp"

namespace tessera::test {
namespace {

// A case compiled for the CPU in at most `kernels` kernels (no Sq x Sk
// buffer, no copies), checked against the oracle on 1 and 3 threads.
void check_case(const FusionCase& c, size_t kernels) {
  GraphBuilder g("e2e");
  c.build(g);
  Program p = Program::compile(g.module(), "cpu");
  EXPECT_LE(p.executable().kernels().size(), kernels) << p.emit("schedule");
  run_and_check_deterministic(p, inputs_for(c, g.module()));
}

// The fast tier's sample: one case in 8 by name, then every dtype, every
// shape (batch, heads, lengths, head dim) and every combination of flags
// (causal, lse, views, NaN/inf inputs) at least once (sampling.hpp).
const std::vector<CaseKey<FusionCase>>& attention_coverage() {
  static const std::vector<CaseKey<FusionCase>> keys = {
      [](const FusionCase& c) {  // the dtype: "f32_b1..." or "grad_f32_b1..."
        const std::string n = c.name.rfind("grad_", 0) == 0 ? c.name.substr(5) : c.name;
        return n.substr(0, n.find('_'));
      },
      [](const FusionCase& c) {  // the shape: "b1h2kv1_q17k17d64"
        static const std::regex shape("b[0-9]+h[0-9]+kv[0-9]+_q[0-9]+k[0-9]+d[0-9]+");
        std::smatch m;
        return std::regex_search(c.name, m, shape) ? m.str() : c.name;
      },
      [](const FusionCase& c) {  // the flags after the shape: "_causal_lse", "_special", ""
        static const std::regex tail("d[0-9]+(_.*)?$");
        std::smatch m;
        return std::regex_search(c.name, m, tail) ? m[1].str() : std::string();
      }};
  return keys;
}

class AttentionMatrix : public ::testing::TestWithParam<FusionCase> {};

// (the CPU block reads q, k and v contiguous and writes o so: a view case
// copies all three, and a transposed result too, whose copy kernel writes a
// returned reshape of it)
TEST_P(AttentionMatrix, MatchesOracleDeterministically) {
  const std::string& n = GetParam().name;
  check_case(GetParam(), n.find("_views_out") != std::string::npos ? 5 : n.find("_views") != std::string::npos ? 4 : 1);
}

INSTANTIATE_TEST_SUITE_P(All, AttentionMatrix,
                         ::testing::ValuesIn(sample_matrix<FusionCase>("AttentionMatrix", attention_cases(false),
                                                                       fusion_case_name, 8, attention_coverage())),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// The decode shapes CUDA runs split over chunks of keys, on the CPU's block.
INSTANTIATE_TEST_SUITE_P(Decode, AttentionMatrix,
                         ::testing::ValuesIn(sample_matrix<FusionCase>("AttentionDecode", attention_decode_cases(false),
                                                                       fusion_case_name, 8, attention_coverage())),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// A mask operand (CPU block): booleans and biases of every broadcast shape.
class AttentionMaskMatrix : public ::testing::TestWithParam<FusionCase> {};

TEST_P(AttentionMaskMatrix, MatchesOracleDeterministically) { check_case(GetParam(), 1); }

INSTANTIATE_TEST_SUITE_P(All, AttentionMaskMatrix, ::testing::ValuesIn(attention_mask_cases()),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// The devices without the Hopper block refuse a mask (E506) as they refuse
// attention, never run it elsewhere; CUDA's block takes it.
TEST(AttentionMask, DevicesWithoutTheBlockRefuseIt) {
  const FusionCase c = attention_mask_cases(true).front();
  GraphBuilder g("mask");
  c.build(g);
  for (const char* target : {"hip", "metal"})
    EXPECT_THROW(
        {
          try {
            passes::lower(g.module(), ir::Layer::Schedule, target);
          } catch (const Error& e) {
            EXPECT_EQ(e.code(), "E506") << target << ": " << e.what();
            throw;
          }
        },
        Error);
  EXPECT_NO_THROW(passes::lower(g.module(), ir::Layer::Target, "cuda"));
}

// The backward pass: the forward's kernel and the backward's, against the
// oracle's gradient, bitwise the same on 1 and 3 threads.
class AttentionGradMatrix : public ::testing::TestWithParam<FusionCase> {};

TEST_P(AttentionGradMatrix, MatchesOracleDeterministically) { check_case(GetParam(), 2); }

INSTANTIATE_TEST_SUITE_P(All, AttentionGradMatrix,
                         ::testing::ValuesIn(sample_matrix<FusionCase>("AttentionGradMatrix", attention_grad_cases(),
                                                                       fusion_case_name, 8, attention_coverage())),
                         [](const ::testing::TestParamInfo<FusionCase>& i) { return i.param.name; });

// The tolerance catches a kernel that leaves one key out: v of key 40 zeroed
// for the kernel, intact for the oracle.
TEST(AttentionCrossCheck, DroppingAKeyIsCaught) {
  for (DType dt : {DType::F32, DType::BF16}) {
    FusionCase c = attention_case(dt, {1, 2, 1, 64, 128, 64}, false, false,
                                  {"random:seed=1,lo=-2,hi=2", "random:seed=2,lo=-2,hi=2", "random:seed=3,lo=-1,hi=1"});
    GraphBuilder g("drop");
    c.build(g);
    Program p = Program::compile(g.module(), "cpu");
    std::vector<Tensor> xs = inputs_for(c, g.module());
    Tensor dropped = inputs_for(c, g.module())[2];
    for (int64_t i = 40 * 64; i < 41 * 64; ++i) dropped.set(i, 0.0);
    auto want = oracle::evaluate(*p.graph(), "", xs);
    oracle::Comparison bad = oracle::compare(want[0], p.run({xs[0], xs[1], dropped}).outputs[0]);
    EXPECT_FALSE(bad.pass) << dtype_name(dt);
    EXPECT_GT(bad.worst_ratio, 2.0) << dtype_name(dt);
    oracle::Comparison ok = oracle::compare(want[0], p.run(xs).outputs[0]);
    EXPECT_TRUE(ok.pass) << ok.first_failure;
    EXPECT_LT(ok.worst_ratio, 0.5) << dtype_name(dt);
  }
}

// One kernel, no scores in memory; views feeding q are copied with a reason,
// and the lse result comes from the same kernel.
TEST(AttentionDecisions, OneKernelViewsCopiedLseBeside) {
  GraphBuilder g("attn");
  ir::Value* x = g.input("x", T(DType::F32, {1, 256, 4, 64}));  // [B, S, H, D]
  ir::Value* k = g.input("k", T(DType::F32, {1, 2, 256, 64}));
  ir::Value* v = g.input("v", T(DType::F32, {1, 2, 256, 64}));
  auto out = g.attention(g.transpose(x, {0, 2, 1, 3}), k, v, true, 0.125, true);
  g.output(out[0]);
  g.output(out[1]);
  Program p = Program::compile(g.module(), "cpu");
  const std::string s = p.emit("schedule");
  EXPECT_EQ(p.executable().kernels().size(), 2u) << s;
  EXPECT_NE(s.find("materialize = \"read by tessera.attention"), std::string::npos) << s;
  EXPECT_NE(s.find("schedule.attention"), std::string::npos) << s;
  EXPECT_NE(s.find("causal = true"), std::string::npos) << s;
  run_and_check(p, {generate_input("random:seed=1", DType::F32, {1, 256, 4, 64}),
                    generate_input("random:seed=2", DType::F32, {1, 2, 256, 64}),
                    generate_input("random:seed=3", DType::F32, {1, 2, 256, 64})});
}

// Special values follow docs/semantics.md: a NaN in q poisons only its row; a
// NaN in v of a key only later rows see (causal) leaves the earlier rows
// finite; a row with no visible key is 0 with lse -inf.
TEST(AttentionSemantics, NaNReachesOnlyTheRowsThatSeeIt) {
  GraphBuilder g("nan");
  ir::Value* q = g.input("q", T(DType::F32, {1, 1, 8, 16}));
  ir::Value* k = g.input("k", T(DType::F32, {1, 1, 6, 16}));
  ir::Value* v = g.input("v", T(DType::F32, {1, 1, 6, 16}));
  auto out = g.attention(q, k, v, true, std::nan(""), true);
  g.output(out[0]);
  g.output(out[1]);
  Program p = Program::compile(g.module(), "cpu");
  Tensor tq = generate_input("random:seed=1", DType::F32, {1, 1, 8, 16});
  Tensor tk = generate_input("random:seed=2", DType::F32, {1, 1, 6, 16});
  Tensor tv = generate_input("random:seed=3", DType::F32, {1, 1, 6, 16});
  tq.set(5 * 16 + 3, std::nan(""));  // row 5
  tv.set(4 * 16 + 7, std::nan(""));  // key 4: rows i with i - 2 >= 4, i.e. 6 and 7
  auto got = run_and_check(p, {tq, tk, tv});
  for (int64_t i = 0; i < 8; ++i) {
    const bool nan_row = i == 5 || i >= 6;
    EXPECT_EQ(std::isnan(got[0].get(i * 16 + 7)), nan_row) << "row " << i;
    EXPECT_EQ(std::isnan(got[1].get(i)), i == 5) << "lse of row " << i;  // v does not reach lse
  }
  // rows 0 and 1 see no key (sq 8 > sk 6): o = 0, lse = -inf
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got[0].get(i * 16), 0.0);
    EXPECT_EQ(got[1].get(i), -INFINITY);
  }
}

// One tensor as several operands (self-attention on x, or k = v) is one
// kernel argument read as each of them.
TEST(AttentionDecisions, OneTensorAsSeveralOperands) {
  for (bool kv_only : {false, true}) {
    GraphBuilder g("self");
    ir::Value* x = g.input("x", T(DType::F32, {1, 2, 70, 32}));
    ir::Value* q = kv_only ? g.input("q", T(DType::F32, {1, 2, 70, 32})) : x;
    auto out = g.attention(q, x, x, true, std::nan(""), true);
    g.output(out[0]);
    g.output(out[1]);
    Program p = Program::compile(g.module(), "cpu");
    std::vector<Tensor> xs = {generate_input("random:seed=4", DType::F32, {1, 2, 70, 32})};
    if (kv_only) xs.push_back(generate_input("random:seed=5", DType::F32, {1, 2, 70, 32}));
    run_and_check(p, xs);
  }
}

// A schedule edited and re-stamped is still checked against what the block
// takes and against its own region.
TEST(AttentionSchedule, EditedDecisionsAreValidated) {
  GraphBuilder g("attn");
  auto out = g.attention(g.input("q", T(DType::F32, {1, 2, 100, 64})), g.input("k", T(DType::F32, {1, 1, 80, 64})),
                         g.input("v", T(DType::F32, {1, 1, 80, 64})), false, std::nan(""), false);
  g.output(out[0]);
  const std::vector<std::pair<std::string, ir::Attr>> edits = {
      {"programs", ir::Attr(int64_t{3})},     {"sk", ir::Attr(int64_t{81})},     {"causal", ir::Attr(true)},
      {"strategy", ir::Attr("wgmma")},        {"threads", ir::Attr(int64_t{4})}, {"block", ir::Attr::ints({0, 64})},
      {"scratch", ir::Attr(int64_t{1} << 62)}};
  for (const auto& [key, value] : edits) {
    auto schedule = passes::lower(g.module(), ir::Layer::Schedule, "cpu");
    ir::Op& sop = *schedule->funcs()[0]->regions[0]->ops[0];
    ASSERT_TRUE(sop.attr(key)) << key << "\n" << ir::print(*schedule);
    sop.attrs[key] = value;
    ir::stamp_artifact_hash(sop);
    try {
      passes::lower(*schedule, ir::Layer::Target, "cpu");
      ADD_FAILURE() << "edited '" << key << "' was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), "E302") << key << ": " << e.what();
    }
  }
}

// The CUDA block's shared memory: at least what it needs, at most the device's.
TEST(AttentionSchedule, EditedScratchIsBounded) {
  GraphBuilder g("attn");
  auto out = g.attention(g.input("q", T(DType::BF16, {1, 2, 100, 64})), g.input("k", T(DType::BF16, {1, 1, 80, 64})),
                         g.input("v", T(DType::BF16, {1, 1, 80, 64})), false, std::nan(""), false);
  g.output(out[0]);
  for (int64_t scratch : {int64_t{1} << 62, int64_t{2000000}, int64_t{4096}}) {
    auto schedule = passes::lower(g.module(), ir::Layer::Schedule, "cuda");
    ir::Op& sop = *schedule->funcs()[0]->regions[0]->ops[0];
    sop.attrs["scratch"] = ir::Attr(scratch);
    ir::stamp_artifact_hash(sop);
    try {
      passes::lower(*schedule, ir::Layer::Target, "cuda");
      ADD_FAILURE() << "scratch " << scratch << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), "E302") << scratch << ": " << e.what();
    }
  }
}

// Bad programs are errors with stable codes, never crashes.
TEST(AttentionErrors, BadProgramsAreRefused) {
  auto code_of = [](const std::function<void(GraphBuilder&)>& build) -> std::string {
    try {
      GraphBuilder g("bad");
      build(g);
      return "";
    } catch (const Error& e) {
      return e.code();
    }
  };
  auto in = [](GraphBuilder& g, const char* n, DType dt, std::vector<int64_t> s) { return g.input(n, T(dt, s)); };
  const double def = std::nan("");
  EXPECT_EQ(code_of([&](GraphBuilder& g) {
              g.attention(in(g, "q", DType::F32, {2, 64, 16}), in(g, "k", DType::F32, {2, 64, 16}),
                          in(g, "v", DType::F32, {2, 64, 16}), false, def, false);
            }),
            "E217");  // rank 3
  EXPECT_EQ(code_of([&](GraphBuilder& g) {
              g.attention(in(g, "q", DType::F32, {1, 6, 8, 16}), in(g, "k", DType::F32, {1, 4, 8, 16}),
                          in(g, "v", DType::F32, {1, 4, 8, 16}), false, def, false);
            }),
            "E217");  // 6 heads over 4
  EXPECT_EQ(code_of([&](GraphBuilder& g) {
              g.attention(in(g, "q", DType::F32, {1, 4, 8, 16}), in(g, "k", DType::F32, {1, 4, 8, 16}),
                          in(g, "v", DType::F32, {1, 4, 9, 16}), false, def, false);
            }),
            "E217");  // k and v differ
  EXPECT_EQ(code_of([&](GraphBuilder& g) {
              g.attention(in(g, "q", DType::F32, {1, 4, 8, 16}), in(g, "k", DType::F32, {1, 4, 8, 32}),
                          in(g, "v", DType::F32, {1, 4, 8, 32}), false, def, false);
            }),
            "E217");  // head dims differ
  EXPECT_EQ(code_of([&](GraphBuilder& g) {
              g.attention(in(g, "q", DType::F32, {1, 4, 8, 16}), in(g, "k", DType::BF16, {1, 4, 8, 16}),
                          in(g, "v", DType::BF16, {1, 4, 8, 16}), false, def, false);
            }),
            "E209");
  EXPECT_EQ(code_of([&](GraphBuilder& g) {
              g.attention(in(g, "q", DType::I32, {1, 4, 8, 16}), in(g, "k", DType::I32, {1, 4, 8, 16}),
                          in(g, "v", DType::I32, {1, 4, 8, 16}), false, def, false);
            }),
            "E215");
  EXPECT_EQ(code_of([&](GraphBuilder& g) {
              g.attention(in(g, "q", DType::F32, {1, 4, 8, 16}), in(g, "k", DType::F32, {1, 4, 8, 16}),
                          in(g, "v", DType::F32, {1, 4, 8, 16}), false, INFINITY, false);
            }),
            "E211");
  EXPECT_EQ(code_of([&](GraphBuilder& g) {
              g.attention(in(g, "q", DType::BF16, {1, 4, 8, 16}), in(g, "k", DType::BF16, {1, 4, 8, 16}),
                          in(g, "v", DType::BF16, {1, 4, 8, 16}), false, 1e300, false);
            }),
            "E211");  // beyond f32, the compute type
}

// Lanes without an attention block for a configuration refuse it at compile
// time (E506), never running it elsewhere.
TEST(AttentionTargets, UnsupportedConfigurationsAreRefused) {
  auto refusal = [](DType dt, int64_t d, int64_t sk, const char* target) -> std::string {
    GraphBuilder g("t");
    auto out = g.attention(g.input("q", T(dt, {1, 2, 64, d})), g.input("k", T(dt, {1, 2, sk, d})),
                           g.input("v", T(dt, {1, 2, sk, d})), true, std::nan(""), false);
    g.output(out[0]);
    try {
      passes::lower(g.module(), ir::Layer::Target, target);
      return "";
    } catch (const Error& e) {
      return e.code();
    }
  };
  EXPECT_EQ(refusal(DType::BF16, 128, 64, "cuda"), "");  // the h200 profile: TMA and wgmma
  EXPECT_EQ(refusal(DType::F16, 64, 64, "cuda"), "");
  EXPECT_EQ(refusal(DType::F32, 128, 64, "cuda"), "E506");
  EXPECT_EQ(refusal(DType::BF16, 96, 64, "cuda"), "E506");
  EXPECT_EQ(refusal(DType::BF16, 128, 0, "cuda"), "E506");
  EXPECT_EQ(refusal(DType::F32, 300, 64, "cpu"), "E506");  // head dims 1 to 256
  EXPECT_EQ(refusal(DType::BF16, 128, 64, "hip"), "E506");
  EXPECT_EQ(refusal(DType::F32, 128, 64, "metal"), "E506");
  // The backward pass has a CPU block and a CUDA one.
  auto grad_refusal = [](const char* target) -> std::string {
    GraphBuilder g("t");
    const ir::Type t = T(DType::BF16, {1, 2, 64, 128});
    ir::Value *q = g.input("q", t), *o = g.input("o", t), *d = g.input("d", t);
    auto out = g.attention_grad(q, q, q, o, d, g.input("lse", T(DType::F32, {1, 2, 64})), true, std::nan(""));
    g.output(out[0]);
    try {
      passes::lower(g.module(), ir::Layer::Target, target);
      return "";
    } catch (const Error& e) {
      return e.code();
    }
  };
  EXPECT_EQ(grad_refusal("cpu"), "");
  EXPECT_EQ(grad_refusal("cuda"), "");
  for (const char* target : {"hip", "metal"}) EXPECT_EQ(grad_refusal(target), "E506") << target;
}

}  // namespace
}  // namespace tessera::test
