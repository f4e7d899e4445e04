// Host tensors (src/runtime/tensor.cpp): large blocks are recycled, so a
// launch's fresh outputs do not page-fault inside the kernel; small ones are
// not kept; a recycled block is a different tensor, never shared with a live one.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/tensor.hpp"

namespace tessera {
namespace {

TEST(Tensor, LargeBlocksAreRecycledForTheSameSize) {
  const void* first = nullptr;
  {
    // Sizes no other test uses: the cache is per process.
    Tensor t = Tensor::empty(DType::F32, {1009, 1013});  // ~3.9 MiB
    first = t.data();
    ASSERT_NE(first, nullptr);
  }
  Tensor again = Tensor::empty(DType::F32, {1013, 1009});
  EXPECT_EQ(again.data(), first);
  // While `again` lives, a second tensor of the size gets another block.
  Tensor other = Tensor::empty(DType::F32, {1009, 1013});
  EXPECT_NE(other.data(), again.data());
  // Contents are the caller's: writes to one never show in the other.
  again.set(7, 1.5);
  other.set(7, -2.0);
  EXPECT_EQ(again.get(7), 1.5);
  EXPECT_EQ(other.get(7), -2.0);
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// What the recycling is for: writing a fresh 64 MiB output the second time
// takes no page faults (16384 4-KiB pages the first time).
TEST(Tensor, ASecondOutputOfTheSameSizeTakesNoPageFaults) {
  const int64_t n = (int64_t{64} << 20) / 4 + 17;  // a size no other test uses
  {
    Tensor t = Tensor::empty(DType::F32, {n});
    std::memset(t.data(), 1, t.nbytes());
  }
  const long before = minor_faults();
  Tensor t = Tensor::empty(DType::F32, {n});
  std::memset(t.data(), 2, t.nbytes());
  EXPECT_LT(minor_faults() - before, 1000);
}

TEST(Tensor, RecycledBlocksServeRequestsUpToTwiceSmaller) {
  const void* big = nullptr;
  {
    Tensor t = Tensor::empty(DType::F32, {3, 1000033});
    big = t.data();
  }
  Tensor quarter = Tensor::empty(DType::F32, {1000033});
  EXPECT_NE(quarter.data(), big);  // under half the block's size: a new block
  Tensor smaller = Tensor::empty(DType::F32, {2, 1000033});
  EXPECT_EQ(smaller.data(), big);  // within twice: the recycled block, any shape
  EXPECT_EQ(smaller.numel(), 2000066);
}

TEST(Tensor, EmptyAndSmallTensorsStillAllocate) {
  Tensor e = Tensor::empty(DType::BF16, {0, 5});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(e.valid());
  std::vector<Tensor> small;
  for (int i = 0; i < 4; ++i) small.push_back(Tensor::empty(DType::F64, {16}));
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j) EXPECT_NE(small[i].data(), small[j].data());
}

}  // namespace
}  // namespace tessera
