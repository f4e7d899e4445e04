// The device descriptor, and the decisions families and fusion make with an
// injected one: every choice that depends on the machine is asked of the
// descriptor, so a made-up device moves exactly those choices.
#include <gtest/gtest.h>

#include <functional>

#include "families/matmul/matmul_schedule.hpp"
#include "ir/parser.hpp"
#include "ir/printer.hpp"
#include "ir/schedule_dialect.hpp"
#include "machine/descriptor.hpp"
#include "passes/fusion.hpp"
#include "passes/pipeline.hpp"

namespace {

using namespace tessera;
using namespace tessera::ir;
using machine::Cap;
using machine::Descriptor;

std::unique_ptr<Module> parse_text(const std::string& text) { return ir::parse(text, "test.tsr"); }

// A program's Schedule IR for `device`, and the schedule ops of its first func.
struct Scheduled {
  std::unique_ptr<Module> module;
  std::vector<const Op*> ops;
};
Scheduled schedule_for(const Module& graph, const Descriptor& device) {
  Scheduled s{passes::lower(graph, Layer::Schedule, device), {}};
  for (auto& op : s.module->funcs()[0]->regions[0]->ops)
    if (op->name != "return") s.ops.push_back(op.get());
  return s;
}

int64_t int_of(const Op& op, const char* key) {
  const Attr* a = op.attr(key);
  return a && a->as_int() ? *a->as_int() : -1;
}

std::string error_code(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return "";
}

// A GPU like the H200 but with `units` compute units.
Descriptor h200_with_units(int64_t units) {
  Descriptor d = machine::profile("h200");
  d.name = "h200-" + std::to_string(units);
  d.compute_units = units;
  return d;
}

TEST(Descriptor, EveryProfileRoundTripsThroughItsText) {
  for (const std::string& name : machine::profile_names()) {
    const Descriptor& d = machine::profile(name);
    EXPECT_EQ(machine::parse(d.str()), d) << d.str();
    EXPECT_EQ(d.name, name);
  }
  EXPECT_EQ(machine::default_for_target("cuda").name, "h200");
  EXPECT_EQ(machine::default_for_target("cpu").kind, machine::Kind::Cpu);
  EXPECT_EQ(error_code([] { machine::default_for_target("vulkan"); }), "E506");
}

TEST(Descriptor, MalformedTextAndUnknownProfilesAreRefused) {
  const std::string good = machine::profile("h200").str();
  for (const std::string& bad : {std::string(""), good + " extra=1", good.substr(0, good.find(" caps=")),
                                 "kind=tpu" + good.substr(9), good + ",warp_magic", std::string("units=132 ") + good,
                                 good.substr(0, good.find("units=")) + "units=-4" + good.substr(good.find(" simd="))})
    EXPECT_EQ(error_code([&] { machine::parse(bad); }), "E507") << bad;
  try {
    machine::profile("h100x");
    ADD_FAILURE() << "an unknown profile was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E507");
    EXPECT_NE(e.message().find("h200"), std::string::npos) << "the message lists the profiles: " << e.message();
  }
}

TEST(Descriptor, EveryScheduleOpRecordsItAndTheHashCoversIt) {
  auto graph = parse_text(R"(
func @f(%x: tensor<512x1024xf32>, %w: tensor<1024xf32>) -> (tensor<512x1024xf32>, tensor<512xf32>) {
  %n = tessera.rms_norm %x, %w {eps = 1.0e-06} : (tensor<512x1024xf32>, tensor<1024xf32>) -> tensor<512x1024xf32>
  %s = tessera.reduce %x {kind = "sum", axes = [1]} : tensor<512x1024xf32> -> tensor<512xf32>
  return %n, %s : tensor<512x1024xf32>, tensor<512xf32>
}
)");
  const Descriptor& a100 = machine::profile("a100");
  auto sched = passes::lower(*graph, Layer::Schedule, a100);
  for (auto& op : sched->funcs()[0]->regions[0]->ops) {
    if (op->name == "return") continue;
    ASSERT_TRUE(op->attr("device")) << op->name;
    EXPECT_EQ(*op->attr("device")->as_string(), a100.str());
    EXPECT_EQ(*op->attr("target")->as_string(), "cuda");
  }
  // Edited after hashing: the schedule is refused (E301), as for any attribute.
  Op& first = *sched->funcs()[0]->regions[0]->ops.front();
  first.attrs["device"] = machine::profile("h200").str();
  EXPECT_EQ(error_code([&] { passes::lower(*sched, Layer::Tile, "cuda"); }), "E301");
  // Re-hashed, a device of another lane than the op's target is a bad schedule.
  first.attrs["device"] = machine::profile("x86-64").str();
  stamp_artifact_hash(first);
  EXPECT_EQ(error_code([&] { passes::lower(*sched, Layer::Tile, "cuda"); }), "E302");
}

TEST(FamilyChoices, ReduceSplitsForTheDevicesComputeUnits) {
  // One column sum over 8192 rows gives 8192 / 1024 = 8 programs: too few for
  // any GPU here, so the pass is split into chunks sized by the device's units.
  auto graph = parse_text(R"(
func @f(%x: tensor<8192x8192xf32>) -> tensor<8192xf32> {
  %s = tessera.reduce %x {kind = "sum", axes = [0]} : tensor<8192x8192xf32> -> tensor<8192xf32>
  return %s : tensor<8192xf32>
}
)");
  auto chunks_on = [&](const Descriptor& d) {
    Scheduled s = schedule_for(*graph, d);
    return s.ops.size() == 2 ? int_of(*s.ops[0], "chunks") : int64_t{1};
  };
  const int64_t h200 = chunks_on(machine::profile("h200"));
  EXPECT_GT(h200, 1);
  EXPECT_EQ(chunks_on(h200_with_units(132)), h200);   // the units decide, not the name
  EXPECT_LT(chunks_on(h200_with_units(16)), h200);    // a smaller GPU wants fewer programs
  EXPECT_GT(chunks_on(h200_with_units(1000)), h200);  // a larger one more
}

TEST(FamilyChoices, MatmulBlocksFollowTheWaveOfTheDevice) {
  auto graph = parse_text(R"(
func @f(%a: tensor<1024x1024xf32>, %b: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %c = tessera.matmul %a, %b : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %c : tensor<1024x1024xf32>
}
)");
  auto block_on = [&](const Descriptor& d) {
    Scheduled s = schedule_for(*graph, d);
    for (const Op* op : s.ops)
      if (op->name == "schedule.matmul") return (*op->attr("block")->as_ints())[0];
    return int64_t{0};
  };
  // 64 blocks of 128x128 fill two waves of 16 units, not of the H200's 132.
  EXPECT_EQ(block_on(machine::profile("h200")), 64);
  EXPECT_EQ(block_on(h200_with_units(16)), 128);
  EXPECT_EQ(block_on(machine::profile("x86-64")), 96);  // the packed CPU block
  // AMD and Apple blocks: whole wavefronts (64 lanes on CDNA, 32 on RDNA),
  // and the scratch fits the device's shared memory (64 KiB, 32 KiB).
  for (const char* name : {"mi250x", "rx7900xtx", "radeon-8060s", "apple-m1-max"}) {
    const Descriptor& d = machine::profile(name);
    Scheduled s = schedule_for(*graph, d);
    const Op* op = nullptr;
    for (const Op* o : s.ops)
      if (o->name == "schedule.matmul") op = o;
    ASSERT_NE(op, nullptr) << name;
    const std::vector<int64_t> warps = *op->attr("warps")->as_ints();
    EXPECT_EQ(*op->attr("threads")->as_int(), warps[0] * warps[1] * d.simd_width) << name;
    EXPECT_LE(*op->attr("scratch")->as_int() * 4, d.shared_bytes) << name;
  }
  // A device whose tile library has no matmul blocks refuses, naming it.
  Descriptor bare = machine::profile("mi250x");
  bare.caps &= ~static_cast<uint32_t>(Cap::BlockMatmul);
  EXPECT_EQ(error_code([&] { passes::lower(*graph, Layer::Schedule, bare); }), "E506");
}

TEST(FamilyChoices, TmaIsForDevicesWithTmaAndWgmma) {
  auto graph = parse_text(R"(
func @f(%a: tensor<4096x1024xbf16>, %b: tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16> {
  %c = tessera.matmul %a, %b : (tensor<4096x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16>
  return %c : tensor<4096x4096xbf16>
}
)");
  EXPECT_NO_THROW(passes::lower(*graph, Layer::Schedule, machine::profile("h200"), {{"*", "tessera_tma"}}));
  EXPECT_EQ(error_code([&] {
              passes::lower(*graph, Layer::Schedule, machine::profile("a100"), {{"*", "tessera_tma"}});
            }),
            "E304");
  // The TMA claim of an H200 schedule, re-hashed onto an A100, is refused when read.
  auto sched = passes::lower(*graph, Layer::Schedule, machine::profile("h200"), {{"*", "tessera_tma"}});
  Op& mm = *sched->funcs()[0]->regions[0]->ops.front();
  mm.attrs["device"] = machine::profile("a100").str();
  stamp_artifact_hash(mm);
  EXPECT_EQ(error_code([&] { passes::lower(*sched, Layer::Tile, "cuda"); }), "E302");
}

TEST(FamilyChoices, RowsUseClustersBulkCopiesAndPrefetchOnlyWhereTheDeviceHasThem) {
  auto graph = parse_text(R"(
func @f(%x: tensor<64x262144xf32>, %h: tensor<600x4096xbf16>, %w: tensor<4096xbf16>) -> (tensor<64x262144xf32>, tensor<600x4096xbf16>) {
  %y = tessera.softmax %x {axis = -1} : tensor<64x262144xf32> -> tensor<64x262144xf32>
  %z = tessera.rms_norm %h, %w {eps = 1.0e-06} : (tensor<600x4096xbf16>, tensor<4096xbf16>) -> tensor<600x4096xbf16>
  return %y, %z : tensor<64x262144xf32>, tensor<600x4096xbf16>
}
)");
  Scheduled h200s = schedule_for(*graph, machine::profile("h200")),
            a100s = schedule_for(*graph, machine::profile("a100")),
            mi250xs = schedule_for(*graph, machine::profile("mi250x")),
            cpus = schedule_for(*graph, machine::profile("x86-64"));
  const auto &h200 = h200s.ops, &a100 = a100s.ops, &mi250x = mi250xs.ops, &cpu = cpus.ops;
  ASSERT_EQ(h200.size(), 2u);
  EXPECT_EQ(int_of(*h200[0], "cluster"), 8);  // staged in a cluster of 8
  EXPECT_TRUE(h200[0]->attr("staged"));
  EXPECT_EQ(int_of(*h200[1], "prefetch_rows"), 512);
  // The A100: no clusters or bulk copies; an L2 prefetch.
  EXPECT_EQ(a100[0]->attr("cluster"), nullptr);
  EXPECT_EQ(a100[0]->attr("staged"), nullptr);
  EXPECT_EQ(int_of(*a100[1], "prefetch_rows"), 512);
  // The MI250X: none of the three.
  EXPECT_EQ(mi250x[0]->attr("cluster"), nullptr);
  EXPECT_EQ(mi250x[1]->attr("prefetch_rows"), nullptr);
  // The CPU: one thread a program, the tile library's 64-byte vectors.
  EXPECT_EQ(int_of(*cpu[0], "threads"), 1);
  EXPECT_EQ(int_of(*cpu[0], "vector_width"), 16);
}

TEST(FamilyChoices, ThreadsAboveTheDevicesBlockAreRefused) {
  auto graph = parse_text(R"(
func @f(%x: tensor<8x16384xf32>) -> tensor<8x16384xf32> {
  %y = tessera.softmax %x {axis = -1} : tensor<8x16384xf32> -> tensor<8x16384xf32>
  return %y : tensor<8x16384xf32>
}
)");
  auto sched = passes::lower(*graph, Layer::Schedule, machine::profile("h200"));
  Op& op = *sched->funcs()[0]->regions[0]->ops.front();
  ASSERT_EQ(int_of(op, "threads"), 1024);
  Descriptor small = machine::profile("h200");
  small.name = "small", small.max_threads = 512;
  op.attrs["device"] = small.str();
  stamp_artifact_hash(op);
  EXPECT_EQ(error_code([&] { passes::lower(*sched, Layer::Tile, "cuda"); }), "E302");
}

// Fusion does not depend on the device: the same regions for every profile.
TEST(Fusion, PartitionsProloguesEpiloguesAndSharedValues) {
  auto graph = parse_text(R"(
func @f(%x: tensor<64x256xf32>, %w: tensor<256xf32>, %g: tensor<64x256xf32>, %a: tensor<64x256xf32>, %b: tensor<256x128xf32>, %bias: tensor<128xf32>) -> (tensor<64x256xf32>, tensor<64xf32>, tensor<64x128xf32>, tensor<64x256xf32>) {
  %n = tessera.rms_norm %x, %w {eps = 1.0e-06} : (tensor<64x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>
  %m = tessera.mul %n, %g : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
  %y = tessera.silu %m : tensor<64x256xf32> -> tensor<64x256xf32>
  %sq = tessera.mul %g, %g : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
  %ss = tessera.reduce %sq {kind = "sum", axes = [1]} : tensor<64x256xf32> -> tensor<64xf32>
  %c = tessera.matmul %a, %b : (tensor<64x256xf32>, tensor<256x128xf32>) -> tensor<64x128xf32>
  %cb = tessera.add %c, %bias : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
  %o = tessera.gelu %cb : tensor<64x128xf32> -> tensor<64x128xf32>
  %e = tessera.exp %a : tensor<64x256xf32> -> tensor<64x256xf32>
  %e2 = tessera.add %e, %e : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
  return %y, %ss, %o, %e2 : tensor<64x256xf32>, tensor<64xf32>, tensor<64x128xf32>, tensor<64x256xf32>
}
)");
  using Kind = families::fused::FusedRegion::Kind;
  const auto regions = passes::partition(*graph->funcs()[0]);
  ASSERT_EQ(regions.size(), 5u);
  // rms_norm * g then silu: one row kernel (an epilogue), reading x, w and g.
  EXPECT_EQ(regions[0].kind, Kind::Row);
  EXPECT_EQ(regions[0].ops.size(), 3u);
  EXPECT_EQ(regions[0].leaves.size(), 3u);
  // g * g into the sum: one reduce kernel (a prologue), reading g once.
  EXPECT_EQ(regions[1].kind, Kind::Reduce);
  EXPECT_EQ(regions[1].ops.size(), 2u);
  EXPECT_EQ(regions[1].leaves.size(), 1u);
  // matmul + bias then gelu: one matmul kernel with a fused epilogue.
  EXPECT_EQ(regions[2].kind, Kind::Matmul);
  EXPECT_EQ(regions[2].ops.size(), 3u);
  // exp(a), used twice, is materialized (fusion never computes a value twice).
  EXPECT_EQ(regions[3].kind, Kind::Pointwise);
  EXPECT_EQ(regions[3].ops.size(), 1u);
  EXPECT_EQ(regions[4].ops.size(), 1u);
  EXPECT_EQ(regions[4].leaves.size(), 1u);
  for (const std::string& profile : machine::profile_names()) {
    const Descriptor& d = machine::profile(profile);
    if (!d.has(Cap::BlockMatmul)) continue;  // the matmul has no schedule there
    EXPECT_EQ(schedule_for(*graph, d).ops.size(), 5u) << profile;
  }
}

}  // namespace
