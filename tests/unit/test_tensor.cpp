// Host tensors (src/runtime/tensor.cpp): large blocks are recycled, so a
// launch's fresh outputs do not page-fault inside the kernel; small ones are
// not kept; a recycled block is a different tensor, never shared with a live one;
// a borrowed tensor is the caller's memory, checked for alignment.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "error_code.hpp"
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

// A borrowed tensor (what the Python front end makes of a caller's array) is
// the caller's memory, kept alive by its owner as long as any copy lives.
TEST(Tensor, BorrowedMemoryIsViewedNotCopiedAndOutlivesNoCopy) {
  auto storage = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6});
  std::weak_ptr<std::vector<float>> watch = storage;
  Tensor copy;
  {
    Tensor t = Tensor::borrow(DType::F32, {2, 3}, storage->data(), storage);
    EXPECT_EQ(t.data(), storage->data());
    EXPECT_EQ(t.get(4), 5.0);
    t.set(0, 7.0);
    EXPECT_EQ((*storage)[0], 7.0f);  // writes land in the caller's memory
    copy = t;
  }
  storage.reset();
  EXPECT_FALSE(watch.expired());  // the copy keeps the owner alive
  EXPECT_EQ(copy.get(0), 7.0);
  copy = Tensor();
  EXPECT_TRUE(watch.expired());
}

TEST(Tensor, BorrowRefusesMisalignedAndOversizedMemory) {
  alignas(8) static unsigned char bytes[64];
  EXPECT_EQ(code_of([] { Tensor::borrow(DType::F32, {4}, bytes + 2, nullptr); }), "E603");
  EXPECT_EQ(code_of([] { Tensor::borrow(DType::F64, {4}, bytes + 4, nullptr); }), "E603");
  EXPECT_EQ(code_of([] { Tensor::borrow(DType::F32, {4}, nullptr, nullptr); }), "E603");
  EXPECT_EQ(code_of([] { Tensor::borrow(DType::F32, {-1}, bytes, nullptr); }), "E601");
  EXPECT_EQ(code_of([] { Tensor::borrow(DType::F32, {int64_t{1} << 40, int64_t{1} << 40}, bytes, nullptr); }), "E601");
  // No elements: any pointer, even none.
  EXPECT_TRUE(Tensor::borrow(DType::F16, {0, 3}, nullptr, nullptr).valid());
  EXPECT_EQ(Tensor::borrow(DType::BF16, {2}, bytes + 2, nullptr).numel(), 2);
}

}  // namespace
}  // namespace tessera
