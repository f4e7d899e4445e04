// The Tile IR op table: every op has an emitter, the builder and the typed
// accessors turn a malformed op into an internal error (a compiler bug), and
// hand-edited attributes of real kernels are refused with a user diagnostic,
// never an internal error or a crash.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "ir/parser.hpp"
#include "ir/printer.hpp"
#include "ir/tile_dialect.hpp"
#include "ir/tile_ops.hpp"
#include "passes/pipeline.hpp"
#include "passes/tile_to_target.hpp"
#include "render/c_like.hpp"

namespace tessera::ir {
namespace {

TEST(TileOps, EveryEntryIsCompleteAndRendered) {
  std::set<std::string> names;
  for (const TileOpSpec& op : tile_ops()) {
    EXPECT_TRUE(names.insert(op.name).second) << "duplicate entry " << op.name;
    EXPECT_EQ(find_tile_op(op.name), &op);
    EXPECT_TRUE(render::CLikeRenderer::has_emitter(op.name)) << op.name << " has no emitter";
    EXPECT_GT(std::string(op.doc).size(), 10u) << op.name;
    EXPECT_EQ(op.signature[0], '(') << op.name;
  }
  EXPECT_EQ(find_tile_op("tile.kernel"), nullptr);  // top level only
  EXPECT_EQ(find_tile_op("tile.nonsense"), nullptr);
}

TEST(TileOps, BuilderAssertsAgainstTheTable) {
  auto k = new_tile_kernel("k", 1, 1, 4, "hash");
  TileBuilder tb(*k->regions[0]);
  Value* i = tb.index(3);
  try {
    tb.load(i, i, Type::tile(DType::F32, {4}));  // an index where the ptr goes
    FAIL() << "a malformed tile.load was built";
  } catch (const Error& e) {
    FAIL() << "a compiler bug reported as a user error: " << e.what();
  } catch (const InternalError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("src/ir/tile_dialect.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("takes (ptr, index offset)"), std::string::npos) << what;
    EXPECT_NE(what.find("this is a bug in Tessera"), std::string::npos) << what;
  }
}

TEST(TileOps, TypedAccessorsAssertOnUnverifiedOps) {
  auto k = new_tile_kernel("k", 1, 1, 4, "hash");
  TileBuilder tb(*k->regions[0]);
  Op& alloca = *tb.scratch(64, DType::F32)->def;
  EXPECT_EQ(tile_int(alloca, "size"), 64);
  EXPECT_THROW(tile_string(alloca, "size"), InternalError);  // declared an integer
  EXPECT_THROW(tile_int(alloca, "rows"), InternalError);     // not declared
  alloca.attrs["size"] = Attr(1.5);
  EXPECT_THROW(tile_int(alloca, "size"), InternalError);
  EXPECT_EQ(tile_ints(*k, "grid"), std::vector<int64_t>{1});
}

// Every attribute of the Tile IR of `graph` replaced, one at a time, by values
// of every kind: each edit renders or is refused with a user error code.
void expect_attribute_edits_refused_cleanly(const std::string& graph, const std::string& target) {
  const std::string tile = print(*passes::lower(*parse(graph), Layer::Tile, target));
  const std::regex attr(R"(\b[a-z_]+ = (-?[0-9][0-9.e+-]*|"[^"]*"|\[[^\]]*\]|true|false|-?inf|nan))");
  int edits = 0;
  for (auto it = std::sregex_iterator(tile.begin(), tile.end(), attr); it != std::sregex_iterator(); ++it) {
    const auto& value = (*it)[1];
    for (const char* replacement : {"1.5", "1e309", "-1", "0", "\"x\"", "[1]", "[]", "true", "nan"}) {
      const size_t at = static_cast<size_t>(value.first - tile.begin());
      const std::string edited = tile.substr(0, at) + replacement + tile.substr(at + value.length());
      ++edits;
      try {
        passes::tile_to_target(*parse(edited, "edited.tile"), target);
      } catch (const Error&) {
        // refused with a stable code: what the verifier is for
      } catch (const std::exception& e) {
        ADD_FAILURE() << (*it).str() << " -> " << replacement << ": " << e.what();
      }
    }
  }
  EXPECT_GT(edits, 100);
}

TEST(TileOps, EditedAttributesNeverReachTheRenderer) {
  expect_attribute_edits_refused_cleanly(R"(
func @f(%x: tensor<64x1000xf32>) -> tensor<64x1000xf32> {
  %y = tessera.softmax %x {axis = -1} : tensor<64x1000xf32> -> tensor<64x1000xf32>
  return %y : tensor<64x1000xf32>
}
)",
                                         "cpu");
  expect_attribute_edits_refused_cleanly(R"(
func @f(%a: tensor<256x128xbf16>, %b: tensor<128x256xbf16>) -> tensor<256x256xbf16> {
  %c = tessera.matmul %a, %b : (tensor<256x128xbf16>, tensor<128x256xbf16>) -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
)",
                                         "cuda");
}

}  // namespace
}  // namespace tessera::ir
