// Tests for src/runtime/inputs.{hpp,cpp}: determinism, value ranges, special
// values, thread-count independence, rounding to the dtype, and bad specs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/inputs.hpp"
#include "support/diagnostic.hpp"

namespace tessera {
namespace {

const DType kAllDtypes[] = {DType::F16, DType::BF16, DType::F32, DType::F64};

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

TEST(Inputs, SameSpecGivesSameBytes) {
  for (DType dt : kAllDtypes) {
    for (const char* spec : {"random:seed=7", "special:seed=7", "iota", "const:0.1"}) {
      SCOPED_TRACE(std::string(spec) + " " + std::string(dtype_name(dt)));
      EXPECT_TRUE(same_bytes(generate_input(spec, dt, {33, 17}), generate_input(spec, dt, {33, 17})));
    }
  }
}

TEST(Inputs, DifferentSeedsDiffer) {
  Tensor a = generate_input("random:seed=1", DType::F32, {1000});
  Tensor b = generate_input("random:seed=2", DType::F32, {1000});
  int equal = 0;
  for (int64_t i = 0; i < 1000; ++i) equal += a.get(i) == b.get(i);
  EXPECT_LT(equal, 5);
}

// Element i depends on the flat index only, so the shape does not matter.
TEST(Inputs, ValuesDependOnFlatIndexNotShape) {
  EXPECT_EQ(std::memcmp(generate_input("random:seed=3", DType::F64, {6, 4}).data(),
                        generate_input("random:seed=3", DType::F64, {24}).data(), 24 * 8),
            0);
}

TEST(Inputs, RandomDefaultRangeIsMinusOneToOne) {
  for (DType dt : kAllDtypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Tensor t = generate_input("random:seed=42", dt, {100000});
    double sum = 0, lo = 2, hi = -2;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = t.get(i);
      ASSERT_TRUE(std::isfinite(v));
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
    // Rounding to the dtype may land on a bound, so only f64 is strictly below 1.
    EXPECT_GE(lo, -1.0);
    EXPECT_LE(hi, 1.0);
    if (dt == DType::F64) {
      EXPECT_LT(hi, 1.0);
    }
    EXPECT_LT(lo, -0.99);  // the range is actually covered
    EXPECT_GT(hi, 0.99);
    EXPECT_NEAR(sum / t.numel(), 0.0, 0.02);
  }
}

TEST(Inputs, RandomHonoursLoHi) {
  Tensor t = generate_input("random:seed=5,lo=2,hi=3.5", DType::F32, {50000});
  double lo = 100, hi = -100;
  for (int64_t i = 0; i < t.numel(); ++i) {
    lo = std::min(lo, t.get(i));
    hi = std::max(hi, t.get(i));
  }
  EXPECT_GE(lo, 2.0);
  EXPECT_LE(hi, 3.5);
  EXPECT_LT(lo, 2.01);
  EXPECT_GT(hi, 3.49);
  // Parameter order does not matter.
  EXPECT_TRUE(same_bytes(t, generate_input("random:hi=3.5,lo=2,seed=5", DType::F32, {50000})));
}

struct Counts {
  int64_t nan = 0, pos_inf = 0, neg_inf = 0, finite = 0;
};

Counts count_specials(const Tensor& t) {
  Counts c;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.get(i);
    if (std::isnan(v)) ++c.nan;
    else if (v == std::numeric_limits<double>::infinity()) ++c.pos_inf;
    else if (v == -std::numeric_limits<double>::infinity()) ++c.neg_inf;
    else ++c.finite;
  }
  return c;
}

TEST(Inputs, SpecialMixesInNanAndInfinities) {
  const int64_t n = 200000;
  for (DType dt : kAllDtypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Tensor s = generate_input("special:seed=9", dt, {n});
    Counts c = count_specials(s);
    for (int64_t k : {c.nan, c.pos_inf, c.neg_inf}) {  // about 1% each
      EXPECT_GT(k, n / 200);
      EXPECT_LT(k, n * 3 / 200);
    }
    // Everything else is exactly the random:seed=9 value at that index.
    Tensor r = generate_input("random:seed=9", dt, {n});
    for (int64_t i = 0; i < n; ++i) {
      const double v = s.get(i);
      if (std::isfinite(v)) {
        ASSERT_EQ(v, r.get(i)) << "index " << i;
      }
    }
  }
}

TEST(Inputs, SpecialRateParameter) {
  const int64_t n = 100000;
  Counts none = count_specials(generate_input("special:seed=1,rate=0", DType::F32, {n}));
  EXPECT_EQ(none.finite, n);
  Counts many = count_specials(generate_input("special:seed=1,rate=0.2", DType::F32, {n}));
  for (int64_t k : {many.nan, many.pos_inf, many.neg_inf}) {
    EXPECT_GT(k, n * 18 / 100);
    EXPECT_LT(k, n * 22 / 100);
  }
  Counts all = count_specials(generate_input("special:seed=1,rate=0.3333333333333333", DType::F32, {n}));
  EXPECT_LT(all.finite, 10);
}

TEST(Inputs, ConstantSpecs) {
  for (DType dt : kAllDtypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    auto all = [&](const char* spec, auto pred) {
      Tensor t = generate_input(spec, dt, {3, 5});
      for (int64_t i = 0; i < t.numel(); ++i) EXPECT_TRUE(pred(t.get(i))) << spec << " at " << i;
    };
    const double inf = std::numeric_limits<double>::infinity();
    all("nan", [](double v) { return std::isnan(v); });
    all("inf", [&](double v) { return v == inf; });
    all("-inf", [&](double v) { return v == -inf; });
    all("const:nan", [](double v) { return std::isnan(v); });
    all("const:-inf", [&](double v) { return v == -inf; });
    all("const:+inf", [&](double v) { return v == inf; });
    all("const:-2.5", [](double v) { return v == -2.5; });
    all("const:1e-3", [&](double v) { return std::fabs(v - 1e-3) <= 1e-3 * dtype_unit_roundoff(dt); });
  }
}

TEST(Inputs, IotaIsTheFlatIndexRoundedToTheDtype) {
  Tensor t = generate_input("iota", DType::F32, {4, 3});
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(t.get(i), static_cast<double>(i));
  Tensor h = generate_input("iota", DType::F16, {70000});
  EXPECT_EQ(h.get(2048), 2048.0);
  EXPECT_EQ(h.get(2049), 2048.0);  // tie, rounds to even
  EXPECT_EQ(h.get(2051), 2052.0);
  EXPECT_EQ(h.get(65504), 65504.0);  // largest f16
  EXPECT_EQ(h.get(65519), 65504.0);
  EXPECT_TRUE(std::isinf(h.get(65520)));  // overflows to inf
  Tensor b = generate_input("iota", DType::BF16, {300});
  EXPECT_EQ(b.get(257), 256.0);
  EXPECT_EQ(b.get(259), 260.0);
}

// Values are rounded once from double; a naive double -> float -> bf16 would
// round 1 + 2^-8 + 2^-30 down to 1 (the float is an exact bf16 tie).
TEST(Inputs, RoundsOnceFromDouble) {
  Tensor b = generate_input("const:1.003906250931322574615478515625", DType::BF16, {1});
  EXPECT_EQ(b.get(0), 1.0078125);
  Tensor h = generate_input("const:1e5", DType::F16, {1});
  EXPECT_TRUE(std::isinf(h.get(0)));
}

TEST(Inputs, ThreadCountDoesNotChangeResult) {
  const std::vector<int64_t> shape = {1009, 13};  // prime-ish count: uneven chunks
  for (DType dt : kAllDtypes) {
    for (const char* spec : {"random:seed=11,lo=-4,hi=9", "special:seed=11,rate=0.05", "iota"}) {
      SCOPED_TRACE(std::string(spec) + " " + std::string(dtype_name(dt)));
      const Tensor one = generate_input(spec, dt, shape, 1);
      for (unsigned threads : {2u, 3u, 7u, 16u, 0u})
        EXPECT_TRUE(same_bytes(one, generate_input(spec, dt, shape, threads))) << threads;
      EXPECT_TRUE(same_bytes(one, generate_input(spec, dt, shape)));
    }
  }
  // More threads than elements.
  EXPECT_TRUE(same_bytes(generate_input("random:seed=1", DType::F32, {3}, 1),
                         generate_input("random:seed=1", DType::F32, {3}, 64)));
}

TEST(Inputs, RankZeroAndEmptyShapes) {
  Tensor s = generate_input("const:3", DType::F64, {});
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.get(0), 3.0);
  Tensor e = generate_input("random:seed=1", DType::F16, {0, 5}, 4);
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.shape(), (std::vector<int64_t>{0, 5}));
}

TEST(Inputs, OversizedShapeIsRejectedBeforeAllocating) {
  try {
    generate_input("iota", DType::F32, {int64_t(1) << 40, int64_t(1) << 30});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E601");
  }
}

TEST(Inputs, BadSpecsFailWithE420) {
  const char* bad[] = {
      "",
      "rand",
      "Random:seed=1",
      "random",
      "random:",
      "random:seed=",
      "random:seed=-1",
      "random:seed=abc",
      "random:seed=1x",
      "random:seed=99999999999999999999",
      "random:seed=1,",
      "random:seed=1,lo",
      "random:seed=1,seed=2",
      "random:seed=1,foo=2",
      "random:seed=1,rate=0.1",
      "random:seed=1,lo=1,hi=0",
      "random:seed=1,lo=1,hi=1",
      "random:seed=1,lo=nan",
      "random:seed=1,hi=inf",
      "random:seed=1,lo=-1e308,hi=1e308",
      "random:seed=1,lo=1e999",
      "special",
      "special:rate=0.1",
      "special:seed=1,rate=0.5",
      "special:seed=1,rate=-0.1",
      "special:seed=1,rate=nan",
      "nan:1",
      "inf:",
      "iota:3",
      "const",
      "const:",
      "const:abc",
      "const:1.5x",
      "const:+-1",
      " random:seed=1",
  };
  for (const char* spec : bad) {
    try {
      generate_input(spec, DType::F32, {4});
      ADD_FAILURE() << "no error for '" << spec << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), "E420") << spec;
      EXPECT_NE(e.message().find("'" + std::string(spec) + "'"), std::string::npos)
          << "message should quote the spec: " << e.message();
    }
  }
}

}  // namespace
}  // namespace tessera
