// Input that crashed, hung or flooded Tessera (issue 19) is refused with a
// stable code: non-regular files, oversized types, edited Tile and Target IR,
// wrong-typed JSON, and diagnostics that would echo raw or huge input.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "error_code.hpp"
#include "evidence/packet.hpp"
#include "ir/ir_hash.hpp"
#include "ir/parser.hpp"
#include "ir/printer.hpp"
#include "ir/schedule_dialect.hpp"
#include "ir/verify.hpp"
#include "package/aot_package.hpp"
#include "passes/pipeline.hpp"
#include "runtime/npy.hpp"
#include "support/diagnostic.hpp"
#include "support/file_read.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

fs::path scratch_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("tessera-robust-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

TEST(Echo, EscapesAndCuts) {
  EXPECT_EQ(echo("f32"), "f32");
  EXPECT_EQ(echo(std::string("a\0b\n\x93", 5)), "a\\x00b\\x0a\\x93");
  const std::string cut = echo(std::string(20000, '7'));
  EXPECT_EQ(cut, std::string(200, '7') + "... (20000 bytes)");
}

TEST(Echo, EveryErrorLineIsPrintableAndShort) {
  const Error e("E100", std::string("x\0y", 3) + std::string(5000, 'z') + "\nnext line");
  const std::string what = e.what();
  EXPECT_EQ(what.find('\0'), std::string::npos);
  EXPECT_NE(what.find("x\\x00y"), std::string::npos);
  EXPECT_NE(what.find("... (5003 bytes)\nnext line"), std::string::npos);
  EXPECT_LT(what.size(), 1100u);
}

TEST(RegularFile, RefusesFifoDirectoryAndDeviceWithoutBlocking) {
  const fs::path d = scratch_dir("files");
  ASSERT_EQ(mkfifo((d / "fifo").c_str(), 0600), 0);
  std::string why;
  EXPECT_FALSE(read_regular_file((d / "fifo").string(), why));  // no writer: open() would block
  EXPECT_NE(why.find("FIFO"), std::string::npos);
  EXPECT_FALSE(read_regular_file(d.string(), why));
  EXPECT_EQ(why, "is a directory");
  EXPECT_FALSE(read_regular_file("/dev/null", why));
  EXPECT_NE(why.find("device"), std::string::npos);
  EXPECT_FALSE(read_regular_file((d / "absent").string(), why));
  write(d / "ok", std::string("a\0b", 3));
  auto text = read_regular_file((d / "ok").string(), why);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, std::string("a\0b", 3));

  EXPECT_EQ(code_of([&] { ir::parse_file((d / "fifo").string()); }), "E109");
  EXPECT_EQ(code_of([&] { read_npy_any((d / "fifo").string()); }), "E410");
  EXPECT_EQ(code_of([&] { read_npy_any("/dev/zero"); }), "E410");
  fs::remove_all(d);
}

TEST(Types, ElementCountOrBytesBeyondInt64AreRefused) {
  EXPECT_EQ(ir::parse_type("tensor<4x8xf32>").checked_numel(), 32);
  EXPECT_FALSE(ir::parse_type("tensor<4x8xf32>").checked_numel() == std::nullopt);
  EXPECT_EQ(code_of([] { ir::parse_type("tensor<3037000500x3037000500xf32>"); }), "E103");
  EXPECT_EQ(code_of([] { ir::parse_type("tensor<2x999999999999999999xf64>"); }), "E103");
  // a type built by a pass, not parsed, is checked where its size is taken
  const ir::Type big = ir::Type::tensor(DType::F32, {3037000500, 3037000500});
  EXPECT_FALSE(big.checked_numel());
  EXPECT_EQ(code_of([&] { (void)big.numel(); }), "E103");
}

constexpr const char* kProgram = R"(
func @f(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %y = tessera.reduce %x {kind = "sum", axes = [1]} : tensor<4x8xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
)";

TEST(IrHash, EditedTileAndTargetKernelsAreRefused) {
  for (auto [layer, code] : {std::pair{ir::Layer::Tile, "E406"}, std::pair{ir::Layer::Target, "E507"}}) {
    const std::string text = ir::print(*passes::lower(*ir::parse(kProgram), layer, "cpu"));
    auto m = ir::parse(text);
    ir::verify(*m, layer);  // printed and parsed back, it still matches
    ir::Op* kernel = m->ops.front().get();
    ASSERT_NE(kernel->attr("ir_hash"), nullptr);
    kernel->attrs["grid"] = ir::Attr::ints({400});
    EXPECT_EQ(code_of([&] { ir::verify(*m, layer); }), code);
    ir::stamp_ir_hashes(*m);  // a forger recomputes it: the digest detects edits, not forgery
    EXPECT_EQ(code_of([&] { ir::verify(*m, layer); }), "none");
    kernel->attrs.erase("ir_hash");
    EXPECT_EQ(code_of([&] { ir::verify(*m, layer); }), code);
  }
}

// Found by the fuzzer: a re-hashed schedule.matmul whose threads or vector
// width is 0 divided by zero while its plan was checked; now E302.
TEST(Schedule, MatmulWithZeroThreadsOrVectorWidthIsRefused) {
  const char* mm = R"(
func @f(%a: tensor<48x64xf32>, %b: tensor<64x32xf32>) -> tensor<48x32xf32> {
  %c = tessera.matmul %a, %b : (tensor<48x64xf32>, tensor<64x32xf32>) -> tensor<48x32xf32>
  return %c : tensor<48x32xf32>
}
)";
  for (const char* key : {"threads", "vector_width"}) {
    auto m = passes::lower(*ir::parse(mm), ir::Layer::Schedule, "cuda");
    ir::Op& op = *m->funcs().front()->regions[0]->ops.front();
    ASSERT_EQ(op.name, "schedule.matmul");
    op.attrs[key] = ir::Attr(int64_t{0});
    ir::stamp_artifact_hash(op);
    EXPECT_EQ(code_of([&] { passes::lower(*m, ir::Layer::Tile, "cuda"); }), "E302") << key;
  }
}

// Found by the fuzzer under UBSan: a re-hashed schedule.reduce whose sizes
// multiply past int64 was undefined behaviour in the size checks; now E302.
TEST(Schedule, ReduceSizesThatOverflowAreRefused) {
  for (const char* key : {"outer", "inner", "programs"}) {
    auto m = passes::lower(*ir::parse(kProgram), ir::Layer::Schedule, "cpu");
    ir::Op& op = *m->funcs().front()->regions[0]->ops.front();
    ASSERT_EQ(op.name, "schedule.reduce");
    op.attrs[key] = ir::Attr(int64_t{9223372036854775807});
    ir::stamp_artifact_hash(op);
    EXPECT_EQ(code_of([&] { passes::lower(*m, ir::Layer::Tile, "cpu"); }), "E302") << key;
  }
}

// An attention that writes o transposed (o_perm, the Hopper block) is
// re-checked from its schedule: another perm, or the attribute dropped while
// the result stays transposed, is refused (E302) even when re-hashed.
TEST(Schedule, AttentionOutputPermIsChecked) {
  const char* program = R"(
func @f(%q: tensor<2x4x64x64xbf16>, %k: tensor<2x4x64x64xbf16>, %v: tensor<2x4x64x64xbf16>) -> tensor<2x64x4x64xbf16> {
  %o = tessera.attention %q, %k, %v {causal = true} : (tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16>) -> tensor<2x4x64x64xbf16>
  %t = tessera.transpose %o {perm = [0, 2, 1, 3]} : tensor<2x4x64x64xbf16> -> tensor<2x64x4x64xbf16>
  return %t : tensor<2x64x4x64xbf16>
}
)";
  auto edited = [&](const std::function<void(ir::Op&)>& edit) {
    auto m = passes::lower(*ir::parse(program), ir::Layer::Schedule, "cuda");
    ir::Op& op = *m->funcs().front()->regions[0]->ops.front();
    EXPECT_EQ(op.name, "schedule.attention");
    EXPECT_NE(op.attr("o_perm"), nullptr);
    edit(op);
    ir::stamp_artifact_hash(op);
    return code_of([&] { passes::lower(*m, ir::Layer::Tile, "cuda"); });
  };
  EXPECT_EQ(edited([](ir::Op&) {}), "none");
  EXPECT_EQ(edited([](ir::Op& op) { op.attrs["o_perm"] = ir::Attr::ints({0, 1, 2, 3}); }), "E302");
  EXPECT_EQ(edited([](ir::Op& op) { op.attrs.erase("o_perm"); }), "E302");
}

// A returned reshape of o is written by the attention kernel itself
// (o_reshaped); without the attribute the result type is refused, and so
// is the attribute beside o_perm.
TEST(Schedule, AttentionOutputReshapeIsChecked) {
  const char* program = R"(
func @f(%q: tensor<1x4x1x64xbf16>, %k: tensor<1x4x64x64xbf16>, %v: tensor<1x4x64x64xbf16>) -> tensor<1x256xbf16> {
  %o = tessera.attention %q, %k, %v {causal = true} : (tensor<1x4x1x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>) -> tensor<1x4x1x64xbf16>
  %r = tessera.reshape %o : tensor<1x4x1x64xbf16> -> tensor<1x256xbf16>
  return %r : tensor<1x256xbf16>
}
)";
  for (const char* target : {"cpu", "cuda"}) {
    auto edited = [&](const std::function<void(ir::Op&)>& edit) {
      auto m = passes::lower(*ir::parse(program), ir::Layer::Schedule, target);
      EXPECT_EQ(m->funcs().front()->regions[0]->ops.size(), 2u) << target;  // the attention and the return
      ir::Op& op = *m->funcs().front()->regions[0]->ops.front();
      EXPECT_NE(op.attr("o_reshaped"), nullptr) << target;
      edit(op);
      ir::stamp_artifact_hash(op);
      return code_of([&] { passes::lower(*m, ir::Layer::Tile, target); });
    };
    EXPECT_EQ(edited([](ir::Op&) {}), "none") << target;
    EXPECT_EQ(edited([](ir::Op& op) { op.attrs.erase("o_reshaped"); }), "E302") << target;
    EXPECT_EQ(edited([](ir::Op& op) { op.attrs["o_perm"] = ir::Attr::ints({0, 2, 1, 3}); }), "E302") << target;
  }
}

// The tensor-core backward blocks: wgmma on the default CUDA profile (an
// H200), mma on an A100; an edited decision is E302, a tile op that claims
// a block for another shape E403.
TEST(Schedule, AttentionGradTensorCoreBlocksAreChecked) {
  const char* program = R"(
func @g(%q: tensor<1x2x40x64xbf16>, %s: tensor<1x2x40xf32>) -> tensor<1x2x40x64xbf16> {
  %dq, %dk, %dv = tessera.attention_grad %q, %q, %q, %q, %q, %s {causal = true} : (tensor<1x2x40x64xbf16>, tensor<1x2x40x64xbf16>, tensor<1x2x40x64xbf16>, tensor<1x2x40x64xbf16>, tensor<1x2x40x64xbf16>, tensor<1x2x40xf32>) -> (tensor<1x2x40x64xbf16>, tensor<1x2x40x64xbf16>, tensor<1x2x40x64xbf16>)
  return %dq : tensor<1x2x40x64xbf16>
}
)";
  for (const char* name : {"h200", "a100"}) {
    SCOPED_TRACE(name);
    const machine::Descriptor& device = machine::profile(name);
    const std::string block = std::string(name) == "h200" ? "wgmma" : "mma";
    auto edited = [&](const std::function<void(ir::Op&)>& edit) {
      auto m = passes::lower(*ir::parse(program), ir::Layer::Schedule, device);
      ir::Op& op = *m->funcs().front()->regions[0]->ops.front();
      EXPECT_EQ(*op.attr("strategy")->as_string(), block);
      edit(op);
      ir::stamp_artifact_hash(op);
      return code_of([&] { passes::lower(*m, ir::Layer::Tile, device); });
    };
    EXPECT_EQ(edited([](ir::Op&) {}), "none");
    EXPECT_EQ(edited([](ir::Op& op) { op.attrs["scratch"] = ir::Attr(int64_t{65536}); }), "E302");
    EXPECT_EQ(edited([](ir::Op& op) { op.attrs["block"] = ir::Attr::ints({64, 64}); }), "E302");
    EXPECT_EQ(edited([](ir::Op& op) { op.attrs["strategy"] = ir::Attr("tiled"); }), "E302");
    // the other tensor-core block is not this device's
    EXPECT_EQ(edited([&](ir::Op& op) { op.attrs["strategy"] = ir::Attr(block == "mma" ? "wgmma" : "mma"); }), "E302");

    const std::string tile = ir::print(*passes::lower(*ir::parse(program), ir::Layer::Tile, device));
    ASSERT_NE(tile.find(block + " = true"), std::string::npos) << tile;
    std::string smaller = tile;
    const size_t at = smaller.find("block = [128, 128]");
    ASSERT_NE(at, std::string::npos) << tile;
    smaller.replace(at, 18, "block = [64, 128]");
    EXPECT_EQ(code_of([&] { ir::verify(*ir::parse(smaller), ir::Layer::Tile); }), "E403");
    std::string both = tile;  // one tile op cannot claim both blocks
    const size_t flag = both.find(block + " = true");
    both.insert(flag, block == "mma" ? "wgmma = true, " : "mma = true, ");
    EXPECT_EQ(code_of([&] { ir::verify(*ir::parse(both), ir::Layer::Tile); }), "E403");
  }
}

TEST(IrHash, CoversTheLaunchTypes) {
  const std::string text = ir::print(*passes::lower(*ir::parse(kProgram), ir::Layer::Tile, "cpu"));
  std::string edited = text;
  for (size_t at; (at = edited.find("tensor<4x8xf32>")) != std::string::npos;)
    edited.replace(at, 15, "tensor<1x8xf32>");  // a smaller buffer than the kernel reads
  auto m = ir::parse(edited);
  EXPECT_EQ(code_of([&] { ir::verify(*m, ir::Layer::Tile); }), "E406");
}

TEST(Verify, ReturnIsLastAndDefinesNothing) {
  const std::string sched = ir::print(*passes::lower(*ir::parse(kProgram), ir::Layer::Schedule, "cpu"));
  std::string mid = sched;
  mid.replace(mid.find("schedule.reduce"), 15, "return");  // "%y = return %x {...}": was E999 (map::at)
  EXPECT_EQ(code_of([&] { passes::lower(*ir::parse(mid), ir::Layer::Tile, "cpu"); }), "E208");
  const std::string with_result = R"(
func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = return %x : tensor<4xf32> -> tensor<4xf32>
}
)";
  EXPECT_EQ(code_of([&] { ir::verify(*ir::parse(with_result), ir::Layer::Graph); }), "E208");
}

TEST(JsonReaders, WrongTypedFieldsAreInvalidNotInternal) {
  const fs::path d = scratch_dir("json");
  for (const char* body : {R"({"format": 5})", R"({"format": "tessera-evidence-v1", "manifest": 3})", R"([1, 2])"}) {
    write(d / "p.json", body);
    evidence::Verification v = evidence::verify_packet((d / "p.json").string(), d.string());
    EXPECT_TRUE(v.verdict == evidence::Verdict::Invalid || v.verdict == evidence::Verdict::Tampered) << body;
  }
  write(d / "p.json", R"({"format": 5})");
  EXPECT_EQ(evidence::verify_packet((d / "p.json").string(), d.string()).verdict, evidence::Verdict::Invalid);
  write(d / "manifest.json", R"({"format": 5, "kernels": 1, "target_ir": 2, "manifest_sha256": 3})");
  package::Verification v = package::verify(d.string());
  EXPECT_EQ(v.verdict, package::Verdict::Invalid);
  EXPECT_NE(v.detail.find("wrong type"), std::string::npos) << v.detail;
  fs::remove_all(d);
}

}  // namespace
}  // namespace tessera
