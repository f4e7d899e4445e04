// The reduction test matrix, shared by the CPU (tests/e2e) and CUDA
// (tests/gpu) end-to-end suites.
#pragma once
#include <string>
#include <vector>

#include "sampling.hpp"
#include "support/dtype.hpp"

namespace tessera::test {
namespace {

struct Case {
  std::vector<int64_t> shape;
  std::vector<int64_t> axes;
  bool keepdims;
  DType dtype;
  std::string kind;
  std::string input;
};

std::string name_of(const Case& c) {
  std::string s = c.kind + "_" + std::string(dtype_name(c.dtype)) + "_s";
  for (auto d : c.shape) s += std::to_string(d) + "x";
  s += "_a";
  for (auto a : c.axes) s += (a < 0 ? "m" + std::to_string(-a) : std::to_string(a)) + "_";
  s += c.keepdims ? "k" : "";
  s += c.input.rfind("special", 0) == 0 ? "_special" : "_random";
  return s;
}

std::vector<Case> all_cases() {
  struct ShapeAxes {
    std::vector<int64_t> shape;
    std::vector<std::vector<int64_t>> axes;
  };
  const std::vector<ShapeAxes> shapes = {
      {{1000}, {{0}, {-1}}},                                        // to rank 0
      {{37, 129}, {{0}, {1}, {-1}, {0, 1}}},                        // odd extents, tails
      {{256, 1024}, {{1}, {0}}},                                    // aligned rows and columns
      {{3, 5, 7}, {{0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}, {}}},  // interior axis, non-adjacent, none
      {{2, 3, 4, 5}, {{1, 3}, {0, 2}, {-1, -4}}},
      {{64, 1, 33}, {{1}, {0, 2}}},  // unit dims
      {{4, 300000}, {{1}}},          // split long rows
      {{300000, 3}, {{0}}},          // split narrow columns
  };
  const std::vector<std::string> kinds = {"sum", "mean", "max", "min", "prod"};
  const std::vector<DType> dtypes = {DType::F32, DType::F64, DType::F16, DType::BF16};
  std::vector<Case> out;
  int seed = 1;
  for (const auto& sa : shapes)
    for (const auto& axes : sa.axes)
      for (const auto& kind : kinds)
        for (DType dt : dtypes) {
          ++seed;
          bool keep = seed % 3 == 0;
          // A product of many values in [-1, 1) underflows to 0 in f32 long before
          // it does in the oracle's double (and 0 * inf is NaN, not inf): keep
          // prod's inputs near 1 so both see the same finite magnitudes.
          const std::string range = kind == "prod" ? ",lo=0.999,hi=1.001" : "";
          const std::string s = std::to_string(seed);
          out.push_back({sa.shape, axes, keep, dt, kind, "random:seed=" + s + range});
          if (dt == DType::F32 || dt == DType::BF16)
            out.push_back({sa.shape, axes, !keep, dt, kind, "special:seed=" + s + ",rate=0.002" + range});
        }
  return out;
}

// What a sample of the matrix keeps (sampling.hpp): every kind in every dtype,
// every shape with every axis set (each picks its own strategy), random and
// NaN/inf-laced inputs in each dtype that has both, keepdims on and off.
inline std::vector<CaseKey<Case>> reduce_coverage() {
  return {
      [](const Case& c) { return c.kind + " " + std::string(dtype_name(c.dtype)); },
      [](const Case& c) {
        std::string s;
        for (auto d : c.shape) s += std::to_string(d) + "x";
        s += " axes";
        for (auto a : c.axes) s += " " + std::to_string(a);
        return s;
      },
      [](const Case& c) { return std::string(dtype_name(c.dtype)) + " " + c.input.substr(0, c.input.find(':')); },
      [](const Case& c) { return std::string(c.keepdims ? "keepdims" : "no keepdims"); },
  };
}

}  // namespace
}  // namespace tessera::test
