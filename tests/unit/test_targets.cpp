// The target lane registry: every lane states what it is, and a lookup that
// cannot be served fails closed with the stable codes (docs/errors.md).
#include <gtest/gtest.h>

#include "error_code.hpp"
#include "support/diagnostic.hpp"
#include "targets/lane.hpp"

namespace tessera::test {
namespace {

TEST(Targets, EveryLaneStatesItsParts) {
  std::vector<std::string> names;
  for (const targets::Lane* l : targets::lanes()) {
    names.push_back(l->name);
    EXPECT_TRUE(l->render) << l->name;
    EXPECT_NE(l->kernel_abi, nullptr) << l->name;
    EXPECT_EQ(l->source_extension.front(), '.') << l->name;
    EXPECT_FALSE(l->package_proves.empty()) << l->name;
    EXPECT_TRUE(l->banner || l->execution == targets::Execution::kCompileCheckOnly) << l->name;
    // A lane that executes can be loaded; one that does not says why.
    if (l->execution == targets::Execution::kCompileCheckOnly) {
      EXPECT_FALSE(l->load) << l->name;
    } else {
      EXPECT_TRUE(l->load) << l->name;
    }
    if (l->native()) {
      EXPECT_TRUE(l->identity) << l->name;
    } else {
      EXPECT_FALSE(l->refusal.code.empty()) << l->name;
    }
    EXPECT_EQ(targets::find(l->name), l);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"cpu", "cuda", "hip", "metal"}));
}

TEST(Targets, LookupsFailClosed) {
  EXPECT_EQ(targets::find("vulkan"), nullptr);
  EXPECT_EQ(code_of([] { targets::renderable("vulkan"); }), "E506");
  EXPECT_EQ(code_of([] { targets::runnable("vulkan", false); }), "E721");
  EXPECT_EQ(code_of([] { targets::native("vulkan"); }), "E721");
  EXPECT_EQ(code_of([] { targets::native("metal"); }), "E721");
  EXPECT_EQ(code_of([] { targets::native("hip"); }), "E721");
  EXPECT_EQ(code_of([] { targets::runnable("metal", false); }), "E720");
  EXPECT_EQ(code_of([] { targets::runnable("hip", false); }), "E722");
  EXPECT_EQ(code_of([] { targets::runnable("cpu", true); }), "E723");
  EXPECT_EQ(code_of([] { targets::runnable("vulkan", true); }), "E723");
  EXPECT_EQ(code_of([] { targets::runnable("metal", true); }), "none");
  EXPECT_EQ(code_of([] { targets::runnable("cpu", false); }), "none");
  EXPECT_EQ(code_of([] { targets::native("cuda"); }), "none");  // a lookup: no driver is touched
}

}  // namespace
}  // namespace tessera::test
