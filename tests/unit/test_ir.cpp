// The IR core: text round trips, types, attributes, hashes, and a parser that
// never crashes or hangs on garbage.
#include <gtest/gtest.h>

#include <optional>
#include <random>

#include "../experimental_env.hpp"
#include "families/matmul/matmul_schedule.hpp"
#include "ir/parser.hpp"
#include "ir/printer.hpp"
#include "ir/schedule_dialect.hpp"
#include "ir/target_dialect.hpp"
#include "ir/verify.hpp"
#include "passes/fusion.hpp"
#include "passes/pipeline.hpp"

namespace tessera::ir {
namespace {

const char* kProgram = R"(
func @p(%x: tensor<37x129xf32>, %h: tensor<3x5x7xbf16>) -> (tensor<129xf32>, tensor<f32>, tensor<1x5x1xbf16>) {
  %a = tessera.reduce %x {kind = "max", axes = [0]} : tensor<37x129xf32> -> tensor<129xf32>
  %b = tessera.reduce %x {kind = "mean"} : tensor<37x129xf32> -> tensor<f32>
  %c = tessera.reduce %h {kind = "prod", axes = [-1, 0], keepdims = true} : tensor<3x5x7xbf16> -> tensor<1x5x1xbf16>
  return %a, %b, %c : tensor<129xf32>, tensor<f32>, tensor<1x5x1xbf16>
}
)";

// The text of `program` lowered to Graph, Schedule and Tile IR for the CPU.
std::vector<std::string> layer_texts(const char* program) {
  auto graph = parse(program);
  std::vector<std::string> out;
  for (Layer l : {Layer::Graph, Layer::Schedule, Layer::Tile}) out.push_back(print(*passes::lower(*graph, l, "cpu")));
  return out;
}

// 1 to max_edits random edits: erase up to max_erase characters, insert or
// replace one from an IR-ish alphabet, or (truncate) cut the text short.
std::string mutate(std::string s, std::mt19937_64& rng, int max_edits, size_t max_erase, bool truncate) {
  static const std::string alphabet = "%@{}[]()<>:=,\"x0123456789-.e \n/abcdefgtensorilp";
  const int kinds = truncate ? 4 : 3;
  int edits = 1 + rng() % max_edits;
  for (int e = 0; e < edits && !s.empty(); ++e) {
    size_t pos = rng() % s.size();
    switch (rng() % kinds) {
      case 0: s.erase(pos, 1 + rng() % max_erase); break;
      case 1: s.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
      case 2: s[pos] = alphabet[rng() % alphabet.size()]; break;
      case 3: s.resize(pos); break;
    }
  }
  return s;
}

// Pointwise ops, row ops and what fusion makes of them (regions in Schedule IR).
const char* kFusedProgram = R"(
func @q(%x: tensor<16x40xf32>, %w: tensor<40xf32>, %s: tensor<16x1xf32>) -> (tensor<16x40xf32>, tensor<16xf32>, tensor<16x40xf32>) {
  %n = tessera.rms_norm %x, %w {eps = 1.0e-06} : (tensor<16x40xf32>, tensor<40xf32>) -> tensor<16x40xf32>
  %y = tessera.silu %n : tensor<16x40xf32> -> tensor<16x40xf32>
  %d = tessera.sub %x, %s : (tensor<16x40xf32>, tensor<16x1xf32>) -> tensor<16x40xf32>
  %q = tessera.mul %d, %d : (tensor<16x40xf32>, tensor<16x40xf32>) -> tensor<16x40xf32>
  %v = tessera.reduce %q {kind = "mean", axes = [1]} : tensor<16x40xf32> -> tensor<16xf32>
  %c = tessera.constant {value = 0.5} : () -> tensor<f32>
  %e = tessera.mul %x, %c : (tensor<16x40xf32>, tensor<f32>) -> tensor<16x40xf32>
  %z = tessera.log_softmax %e {axis = 0} : tensor<16x40xf32> -> tensor<16x40xf32>
  return %y, %v, %z : tensor<16x40xf32>, tensor<16xf32>, tensor<16x40xf32>
}
)";

TEST(IrText, FusedLayersRoundTripByteForByte) {
  auto graph = parse(kFusedProgram);
  for (const char* target : {"cpu", "cuda", "hip"})
    for (Layer l : {Layer::Graph, Layer::Schedule, Layer::Tile, Layer::Target}) {
      std::string text = print(*passes::lower(*graph, l, target));
      auto again = parse(text);
      EXPECT_EQ(detect_layer(*again), l);
      verify(*again, l);
      EXPECT_EQ(print(*again), text) << layer_name(l) << " " << target;
    }
}

// Mutations of a fused program at every layer, lowered as far as they go:
// every outcome is a result or a tessera::Error, never a crash.
TEST(IrFuzz, MutatedFusedProgramsNeverCrashTheCompiler) {
  const std::vector<std::string> seeds = layer_texts(kFusedProgram);
  std::mt19937_64 rng(7);
  int lowered = 0, rejected = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    std::string s = mutate(seeds[iter % seeds.size()], rng, 3, 4, false);
    try {
      auto m = parse(s);
      passes::lower(*m, Layer::Target, "cpu");
      ++lowered;
    } catch (const Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 500);
  EXPECT_EQ(lowered + rejected, 1500);
}

TEST(IrText, EveryLayerRoundTripsByteForByte) {
  auto graph = parse(kProgram);
  for (Layer l : {Layer::Graph, Layer::Schedule, Layer::Tile, Layer::Target}) {
    std::string text = print(*passes::lower(*graph, l, "cpu"));
    auto again = parse(text);
    EXPECT_EQ(detect_layer(*again), l);
    verify(*again, l);
    EXPECT_EQ(print(*again), text) << layer_name(l);
  }
}

TEST(IrText, TypesPrintAndParse) {
  for (const char* t :
       {"tensor<4x8xf32>", "tensor<f32>", "tensor<0x3xbf16>", "tile<64xf32>", "ptr<f16>", "f64", "index"})
    EXPECT_EQ(parse_type(t).str(), t);
  EXPECT_EQ(parse_type("tensor<f32>").rank(), 0);
  for (const char* bad : {"tensor<xf32>", "tensor<4xf33>", "tile<f32>", "tensor<4x-1xf32>", "tensor<4x8xf32"})
    EXPECT_THROW(parse_type(bad), Error) << bad;
}

TEST(IrText, AttributesRoundTripExactly) {
  const char* text =
      "func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
      "  %y = tessera.reduce %x {axes = [], kind = \"sum\"} : tensor<2xf32> -> tensor<2xf32>\n"
      "  return %y : tensor<2xf32>\n}\n";
  auto m = parse(text);
  Op& op = *m->ops[0]->regions[0]->ops[0];
  op.attrs["f"] = Attr(0.1);
  op.attrs["g"] = Attr(-std::numeric_limits<double>::infinity());
  op.attrs["s"] = Attr(std::string("quote\" backslash\\ newline\n tab\t nul\x01"));
  op.attrs["l"] = Attr(AttrList{Attr(int64_t{-3}), Attr(true), Attr(Type::tile(DType::F32, {16}))});
  std::string printed = print(*m);
  auto back = parse(printed);
  const Op& op2 = *back->ops[0]->regions[0]->ops[0];
  EXPECT_EQ(*op2.attr("f")->as_float(), 0.1);
  EXPECT_EQ(*op2.attr("g")->as_float(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(*op2.attr("s")->as_string(), *op.attrs["s"].as_string());
  EXPECT_EQ(op2.attr("l")->str(), "[-3, true, tile<16xf32>]");
  EXPECT_EQ(print(*back), printed);
}

TEST(IrText, ErrorsCarryLineAndColumn) {
  try {
    parse("func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  return %z : tensor<2xf32>\n}\n", "t.tsr");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E101");
    EXPECT_EQ(e.loc().line, 2);
    EXPECT_EQ(e.loc().col, 10);
    EXPECT_EQ(std::string(e.what()).rfind("t.tsr:2:10: error[E101]", 0), 0u);
  }
}

TEST(IrText, DeepNestingIsAnErrorNotAStackOverflow) {
  std::string text = "tile.kernel @k {grid = [1]} region() {\n";
  for (int i = 0; i < 200; ++i) text += "tile.for region() {\n";
  try {
    parse(text);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E108");
  }
  std::string attrs = "func @f() {\n  return {x = " + std::string(500, '[') + "}\n}\n";
  EXPECT_THROW(parse(attrs), Error);
}

// Random mutations of valid text of every layer: parse (and verify) either
// succeeds or throws tessera::Error; nothing else may happen.
TEST(IrFuzz, MutatedTextNeverCrashes) {
  const std::vector<std::string> seeds = layer_texts(kProgram);
  std::mt19937_64 rng(42);
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s = mutate(seeds[iter % seeds.size()], rng, 4, 8, true);
    try {
      auto m = parse(s);
      verify(*m, detect_layer(*m));
      ++parsed;
    } catch (const Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 1000);
  EXPECT_EQ(parsed + rejected, 3000);
}

TEST(ArtifactHash, CoversEveryAttributeAndType) {
  auto sched = passes::lower(*parse(kProgram), Layer::Schedule, "cpu");
  Op& op = *sched->ops[0]->regions[0]->ops[0];
  check_artifact_hash(op);
  const std::string contract = semantic_contract(op);
  EXPECT_NE(contract.find("kind=\"max\""), std::string::npos);
  EXPECT_NE(contract.find("input=tensor<37x129xf32>"), std::string::npos);
  for (auto& [key, value] : op.attrs) {
    if (key == "artifact_hash") continue;
    Attr saved = value;
    value = Attr(std::string("edited"));
    EXPECT_THROW(check_artifact_hash(op), Error) << key;
    value = saved;
  }
  check_artifact_hash(op);
}

// Sets one attribute of a schedule op (nullopt: erases it), re-hashes the op
// so the edit passes the tamper check, and expects Schedule -> Tile on cuda to
// refuse the claim (E302, `why` in the message); then restores the op.
void expect_claim_refused(Module& sched, Op& op, const char* key, std::optional<Attr> value,
                          const std::string& why = "") {
  std::optional<Attr> saved;
  if (const Attr* a = op.attr(key)) saved = *a;
  if (value) op.attrs[key] = *value;
  else op.attrs.erase(key);
  stamp_artifact_hash(op);
  try {
    passes::lower(sched, Layer::Tile, "cuda");
    ADD_FAILURE() << key << ": an impossible claim was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E302") << e.what();
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
  if (saved) op.attrs[key] = *saved;
  else op.attrs.erase(key);
  stamp_artifact_hash(op);
}

// 16-bit resident rows on CUDA prefetch the row 512 programs ahead into L2
// (tile.prefetch of each per-row leaf, none of a broadcast weight); f32 rows
// and other targets do not; an impossible claim is E302 even when re-hashed.
TEST(RowwiseSchedule, PrefetchRowsForSixteenBitRowsOnCuda) {
  auto graph = parse(R"(
func @p(%x: tensor<600x4096xbf16>, %w: tensor<4096xbf16>, %f: tensor<600x4096xf32>) -> (tensor<600x4096xbf16>, tensor<600x4096xf32>) {
  %y = tessera.rms_norm %x, %w {eps = 1.0e-06} : (tensor<600x4096xbf16>, tensor<4096xbf16>) -> tensor<600x4096xbf16>
  %z = tessera.softmax %f {axis = -1} : tensor<600x4096xf32> -> tensor<600x4096xf32>
  return %y, %z : tensor<600x4096xbf16>, tensor<600x4096xf32>
}
)");
  auto sched = passes::lower(*graph, Layer::Schedule, "cuda");
  std::vector<Op*> rows;
  for (auto& o : sched->funcs()[0]->regions[0]->ops)
    if (o->name == "schedule.rowwise") rows.push_back(o.get());
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_TRUE(rows[0]->attr("prefetch_rows"));
  EXPECT_EQ(*rows[0]->attr("prefetch_rows")->as_int(), 512);
  EXPECT_EQ(rows[1]->attr("prefetch_rows"), nullptr);  // f32 rows measured slower with it
  const std::string tile = print(*passes::lower(*sched, Layer::Tile, "cuda"));
  size_t prefetches = 0;
  for (size_t at = tile.find("tile.prefetch"); at != std::string::npos; at = tile.find("tile.prefetch", at + 1))
    ++prefetches;
  EXPECT_EQ(prefetches, 1u) << tile;  // x only: w is the same for every row
  for (const char* target : {"cpu", "hip"})
    EXPECT_EQ(print(*passes::lower(*graph, Layer::Schedule, target)).find("prefetch_rows"), std::string::npos)
        << target;
  Op& op = *rows[0];
  auto refused = [&](const char* key, Attr value) { expect_claim_refused(*sched, op, key, value, "prefetch_rows"); };
  refused("prefetch_rows", Attr(int64_t{0}));                  // recorded only when >= 1
  refused("prefetch_rows", Attr(std::string("x")));            // an integer
  refused("prefetch_rows", Attr(int64_t{1} << 31));            // pid + it must not overflow
  machine::Descriptor no_prefetch = machine::profile("h200");  // a device without the L2 prefetch
  no_prefetch.caps &= ~static_cast<uint32_t>(machine::Cap::L2Prefetch);
  refused("device", Attr(no_prefetch.str()));
  EXPECT_NO_THROW(passes::lower(*sched, Layer::Tile, "cuda"));  // restored: accepted again
}

// A rowwise schedule's cluster claim is validated when the schedule is read,
// even with a correct artifact_hash: impossible claims are E302.
TEST(RowwiseSchedule, ClusterClaimsAreValidated) {
  const char* program = R"(
func @p(%x: tensor<2x262144xf32>) -> tensor<2x262144xf32> {
  %y = tessera.softmax %x {axis = -1} : tensor<2x262144xf32> -> tensor<2x262144xf32>
  return %y : tensor<2x262144xf32>
}
)";
  test::ExperimentalEnv on("rows_cluster");
  auto sched = passes::lower(*parse(program), Layer::Schedule, "cuda");
  Op& op = *sched->ops[0]->regions[0]->ops[0];
  ASSERT_EQ(op.name, "schedule.rowwise");
  ASSERT_TRUE(op.attr("cluster"));
  EXPECT_EQ(*op.attr("cluster")->as_int(), 8);
  passes::lower(*sched, Layer::Tile, "cuda");  // as synthesized: accepted
  auto refused = [&](const char* key, std::optional<Attr> value) { expect_claim_refused(*sched, op, key, value); };
  refused("cluster", Attr(int64_t{17}));                       // past Hopper's largest cluster
  refused("cluster", Attr(int64_t{1}));                        // recorded only when > 1
  refused("cluster", Attr(int64_t{4}));                        // the row no longer fits the tile
  refused("cluster", std::nullopt);                            // nor without a cluster
  refused("target", Attr(std::string("cpu")));                 // CUDA-only
  refused("resident", Attr(false));                            // a cluster is for resident rows
  auto target = passes::lower(*sched, Layer::Target, "cuda");  // restored: accepted again
  // Target IR: the grid counts blocks, which the cluster must divide.
  for (auto& k : target->ops)
    if (k->name == "target.kernel") {
      EXPECT_EQ(read_kernel_desc(*k).grid, 2 * 8);
      k->attrs["cluster"] = Attr(int64_t{3});
      try {
        read_kernel_desc(*k);
        ADD_FAILURE() << "a cluster that does not divide the grid was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), "E504") << e.what();
      }
    }
}

// The pass over a split column sum's chunks groups its rows on CUDA
// (row_groups: a [G, C] tile folded through shared memory); a hand-edited
// schedule that claims groups the kernel cannot keep is refused.
TEST(ReduceSchedule, RowGroupClaimsAreValidated) {
  const char* program = R"(
func @p(%x: tensor<4096x3000xf32>) -> tensor<3000xf32> {
  %y = tessera.reduce %x {axes = [0], kind = "sum"} : tensor<4096x3000xf32> -> tensor<3000xf32>
  return %y : tensor<3000xf32>
}
)";
  auto sched = passes::lower(*parse(program), Layer::Schedule, "cuda");
  Op& op = *sched->ops[0]->regions[0]->ops[1];
  ASSERT_EQ(op.name, "schedule.reduce");
  ASSERT_TRUE(op.attr("row_groups"));
  EXPECT_EQ(*op.attr("row_groups")->as_int(), 32);
  EXPECT_FALSE(sched->ops[0]->regions[0]->ops[0]->attr("row_groups"));  // the first pass: one tile of columns
  passes::lower(*sched, Layer::Tile, "cuda");                           // as planned: accepted
  auto refused = [&](const char* key, std::optional<Attr> value, const std::string& why = "") {
    expect_claim_refused(*sched, op, key, value, why);
  };
  refused("row_groups", Attr(int64_t{3}), "tile rows of whole vectors");  // does not divide the tile
  refused("row_groups", Attr(int64_t{0}), "must be positive");
  refused("row_groups", std::nullopt, "one tile of columns");  // the columns are a row of the tile
  refused("accumulator", Attr(std::string("scratch")), "registers accumulator");
  refused("vector_width", Attr(int64_t{32}), "at most 16 KiB");  // a 32 KiB slab in shared memory
  passes::lower(*sched, Layer::Target, "cuda");                  // restored: accepted again
}

}  // namespace
}  // namespace tessera::ir

namespace tessera::ir {
namespace {

// The TMA block is a candidate of its own (the per-arch tier) that the
// arbiter measures beside the others: it applies to aligned bf16/f16 matmuls
// on cuda at every size (one block shape, so the arbiter's M,N <= 256 proxy
// gates the kernel it times); elsewhere it says why it does not apply.
TEST(MatmulSchedule, TmaCandidateAppliesToAlignedMatmulsOnCuda) {
  for (const char* text : {R"(
func @big(%a: tensor<4096x1024xbf16>, %b: tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16> {
  %c = tessera.matmul %a, %b : (tensor<4096x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16>
  return %c : tensor<4096x4096xbf16>
}
)",
                           R"(
func @proxy(%a: tensor<200x1024xf16>, %b: tensor<1024x136xf16>) -> tensor<200x136xf16> {
  %c = tessera.matmul %a, %b : (tensor<200x1024xf16>, tensor<1024x136xf16>) -> tensor<200x136xf16>
  return %c : tensor<200x136xf16>
}
)"}) {
    auto graph = parse(text);
    const auto regions = passes::partition(*graph->funcs()[0]);
    ASSERT_EQ(regions.size(), 1u);
    auto find = [&](const std::string& profile) {
      for (const auto& c : families::matmul::candidates(regions[0], machine::profile(profile)))
        if (c.name == "tessera_tma") return c;
      ADD_FAILURE() << "no tessera_tma candidate on " << profile;
      return families::matmul::Candidate{};
    };
    const auto on_h200 = find("h200");
    EXPECT_EQ(on_h200.tier, "per-arch");
    EXPECT_EQ(on_h200.unsupported, "") << text;
    // A device without TMA and wgmma (a CPU, an sm_80 GPU) says so.
    EXPECT_EQ(find("x86-64").unsupported, "needs a device with TMA and wgmma (x86-64, x86-64, has not)");
    EXPECT_EQ(find("a100").unsupported, "needs a device with TMA and wgmma (a100, sm_80, has not)");
    // Forced, it takes the TMA block's one shape whatever the problem size.
    auto sched = passes::lower(*graph, Layer::Schedule, "cuda", {{"*", "tessera_tma"}});
    const std::string printed = print(*sched);
    EXPECT_NE(printed.find("block = [128, 256, 64]"), std::string::npos) << printed;
    EXPECT_NE(printed.find("tma = true"), std::string::npos) << printed;
  }
}

// A schedule that claims the TMA matmul block for operands the TMA cannot
// address (K = 1001: 2002-byte rows) is refused even when re-hashed: E302,
// never a kernel reading the wrong bytes.
TEST(MatmulSchedule, ImpossibleTmaClaimIsRefused) {
  auto graph = parse(R"(
func @odd(%a: tensor<2048x1001xbf16>, %b: tensor<1001x2048xbf16>) -> tensor<2048x2048xbf16> {
  %c = tessera.matmul %a, %b : (tensor<2048x1001xbf16>, tensor<1001x2048xbf16>) -> tensor<2048x2048xbf16>
  return %c : tensor<2048x2048xbf16>
}
)");
  auto sched = passes::lower(*graph, Layer::Schedule, "cuda");
  Op* op = nullptr;
  for (auto& o : sched->funcs()[0]->regions[0]->ops)
    if (o->name == "schedule.matmul") op = o.get();
  ASSERT_NE(op, nullptr);
  ASSERT_NE(op->attr("tma"), nullptr);
  EXPECT_FALSE(*op->attr("tma")->as_bool());
  EXPECT_NO_THROW(passes::lower(*sched, Layer::Tile, "cuda"));
  auto refused = [&](const std::string& why) {
    stamp_artifact_hash(*op);
    try {
      passes::lower(*sched, Layer::Tile, "cuda");
      ADD_FAILURE() << "an impossible tma claim was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), "E302");
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  op->attrs["tma"] = true;  // on the default candidate: tma belongs to tessera_tma
  refused("exactly for the candidate tessera_tma");
  op->attrs["candidate"] = std::string("tessera_tma");
  refused("16-byte row strides");
  // The padded f32 C block is staged over the ring and must stay below its
  // mbarriers: 128 x 128 blocks need 3 stages (128 x 136 x 4 > 2 x 32 KiB).
  {
    auto aligned = parse(R"(
func @sq(%a: tensor<2048x1024xbf16>, %b: tensor<1024x2048xbf16>) -> tensor<2048x2048xbf16> {
  %c = tessera.matmul %a, %b : (tensor<2048x1024xbf16>, tensor<1024x2048xbf16>) -> tensor<2048x2048xbf16>
  return %c : tensor<2048x2048xbf16>
}
)");
    auto tma = passes::lower(*aligned, Layer::Schedule, "cuda", {{"*", "tessera_tma"}});
    Op* mm = nullptr;
    for (auto& o : tma->funcs()[0]->regions[0]->ops)
      if (o->name == "schedule.matmul") mm = o.get();
    ASSERT_NE(mm, nullptr);
    mm->attrs["block"] = Attr::ints({128, 128, 64});
    mm->attrs["programs"] = int64_t{256};  // 16 x 16 blocks of 128 x 128
    mm->attrs["stages"] = int64_t{3};
    stamp_artifact_hash(*mm);
    EXPECT_NO_THROW(passes::lower(*tma, Layer::Tile, "cuda"));
    expect_claim_refused(*tma, *mm, "stages", Attr(int64_t{2}), "to fit in its ring");
  }
  // Forcing the candidate on these operands is refused before any schedule.
  try {
    passes::lower(*graph, Layer::Schedule, "cuda", {{"*", "tessera_tma"}});
    ADD_FAILURE() << "tessera_tma was accepted for 2002-byte rows";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E304") << e.what();
  }
}

// The experimental f32 block with row-major A staged through registers
// (matmul_f32_stage_a): with the feature on, an f32 matmul with row-major A
// records stage_a = true (two smem stages) on its schedule and its
// tile.matmul; transposed A, 16-bit operands and the feature off keep the
// default schedule, without the attribute. A re-hashed schedule claiming the
// block where it cannot apply is E302.
TEST(MatmulSchedule, StageAIsOptInAndValidated) {
  auto program = [](const char* a, const char* b, const char* c, const char* attrs) {
    return std::string("func @p(%a: tensor<") + a + ">, %b: tensor<" + b + ">) -> tensor<" + c +
           "> {\n  %c = tessera.matmul %a, %b " + attrs + ": (tensor<" + a + ">, tensor<" + b + ">) -> tensor<" + c +
           ">\n  return %c : tensor<" + c + ">\n}\n";
  };
  const std::string nn = program("2100x1000xf32", "1000x2100xf32", "2100x2100xf32", "");  // 128x128 blocks
  const std::string tn = program("1000x2048xf32", "1000x2048xf32", "2048x2048xf32", "{transpose_a = true} ");
  const std::string bf = program("2048x1024xbf16", "1024x2048xbf16", "2048x2048xbf16", "");
  auto schedule_op = [](Module& sched) -> Op& {
    for (auto& o : sched.funcs()[0]->regions[0]->ops)
      if (o->name == "schedule.matmul") return *o;
    throw std::runtime_error("no schedule.matmul");
  };
  auto tile_has_stage_a = [](const Module& tile) { return print(tile).find("stage_a = true") != std::string::npos; };
  {  // feature off: no attribute anywhere, three stages as before
    auto sched = passes::lower(*parse(nn), Layer::Schedule, "cuda");
    EXPECT_EQ(schedule_op(*sched).attr("stage_a"), nullptr);
    EXPECT_EQ(*schedule_op(*sched).attr("stages")->as_int(), 3);
    EXPECT_FALSE(tile_has_stage_a(*passes::lower(*sched, Layer::Tile, "cuda")));
  }
  test::ExperimentalEnv on("matmul_f32_stage_a");
  for (const std::string* other : {&tn, &bf}) {
    auto sched = passes::lower(*parse(*other), Layer::Schedule, "cuda");
    EXPECT_EQ(schedule_op(*sched).attr("stage_a"), nullptr) << *other;
  }
  EXPECT_EQ(print(*passes::lower(*parse(nn), Layer::Schedule, "cpu")).find("stage_a"), std::string::npos);
  auto sched = passes::lower(*parse(nn), Layer::Schedule, "cuda");
  Op& op = schedule_op(*sched);
  ASSERT_NE(op.attr("stage_a"), nullptr);
  EXPECT_TRUE(*op.attr("stage_a")->as_bool());
  EXPECT_EQ(*op.attr("stages")->as_int(), 2);
  EXPECT_TRUE(tile_has_stage_a(*passes::lower(*sched, Layer::Tile, "cuda")));
  auto refused = [&](const char* key, Attr value, const std::string& why) {
    expect_claim_refused(*sched, op, key, value, why);
  };
  refused("stages", Attr(int64_t{3}), "two shared-memory stages");
  refused("block", Attr::ints({128, 128, 6}), "BK % 4 == 0");
  EXPECT_NO_THROW(passes::lower(*sched, Layer::Tile, "cuda"));  // restored: accepted
  // Claimed on a transposed A or a 16-bit matmul's schedule.
  {
    test::ExperimentalEnv off("");
    for (const std::string* other : {&tn, &bf}) {
      // the cp.async schedule (a large bf16 matmul defaults to the TMA block)
      auto s = passes::lower(*parse(*other), Layer::Schedule, "cuda", {{"*", "tessera"}});
      Op& o = schedule_op(*s);
      o.attrs["stage_a"] = true;
      o.attrs["stages"] = Attr(int64_t{2});
      stamp_artifact_hash(o);
      try {
        passes::lower(*s, Layer::Tile, "cuda");
        ADD_FAILURE() << "stage_a was accepted for " << *other;
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), "E302") << e.what();
        EXPECT_NE(std::string(e.what()).find(other == &tn ? "row-major A" : "simt"), std::string::npos) << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace tessera::ir

namespace tessera::ir {
namespace {

// A pointwise kernel's view claims (leaf offsets, strides, gather strides of a
// concat's operands, an empty operand, the view's extents) are validated even
// when re-hashed: no claim makes it read outside an operand.
TEST(PointwiseSchedule, ViewAndGatherClaimsAreValidated) {
  auto graph = parse(R"(
func @p(%a: tensor<4xf32>, %b: tensor<4xf32>, %x: tensor<4x6xf32>) -> (tensor<8xf32>, tensor<6x4xf32>) {
  %c = tessera.concat %a, %b {axis = 0} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %t = tessera.transpose %x {perm = [1, 0]} : tensor<4x6xf32> -> tensor<6x4xf32>
  %e = tessera.exp %t : tensor<6x4xf32> -> tensor<6x4xf32>
  return %c, %e : tensor<8xf32>, tensor<6x4xf32>
}
)");
  auto sched = passes::lower(*graph, Layer::Schedule, "cuda");
  std::vector<Op*> ops;
  for (auto& o : sched->funcs()[0]->regions[0]->ops)
    if (o->name == "schedule.pointwise") ops.push_back(o.get());
  ASSERT_EQ(ops.size(), 2u);
  Op& concat = *ops[0];
  Op& view = *ops[1];
  passes::lower(*sched, Layer::Tile, "cuda");  // as synthesized: accepted
  auto refused = [&](Op& op, const char* key, std::optional<Attr> value) {
    expect_claim_refused(*sched, op, key, value);
  };
  refused(concat, "leaf_offsets", Attr::ints({3, 0}));                                  // a[3..6]: past a's end
  refused(concat, "gather_strides", std::nullopt);                                      // a concat's operands need them
  refused(concat, "gather_strides", Attr(AttrList{Attr::ints({2}), Attr::ints({1})}));  // a[0, 2, 4, 6]
  refused(view, "leaf_offsets", Attr::ints({1}));                        // the last element one past the end
  refused(view, "leaf_strides", Attr(AttrList{Attr::ints({1, 7})}));     // rows 7 apart: past the end
  refused(view, "leaf_strides", Attr(AttrList{Attr::ints({-1, 6})}));    // negative
  refused(view, "view", Attr::ints({3, int64_t{6148914691236517206}}));  // extents whose product wraps
  passes::lower(*sched, Layer::Tile, "cuda");                            // restored: accepted again
}

}  // namespace
}  // namespace tessera::ir
