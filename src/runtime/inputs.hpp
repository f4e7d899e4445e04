// Synthetic kernel inputs generated from a short spec string.
//
// Specs:
//   random:seed=N[,lo=A,hi=B]   uniform in [lo, hi), default [-1, 1). N is a
//                               decimal uint64. A and B are finite, A < B.
//   special:seed=N[,rate=R][,lo=A,hi=B]
//                               the random:seed=N values (same seed, same
//                               index -> same value) with NaN, +inf and -inf
//                               each replacing a fraction R of the elements
//                               (default 0.01; 0 <= R <= 1/3). Positions come
//                               from the seed, so they are reproducible.
//   nan, inf, -inf              every element that value
//   const:V                     every element V (a number, nan, inf, -inf)
//   iota                        element i (flat C-order index) is i
// Parameters are comma separated key=value pairs, each at most once.
//
// Values are computed in double and rounded once (to nearest even) to the
// dtype, so large values overflow to inf in f16 (iota past 65519, const:1e5)
// and a random value may round onto lo or hi.
//
// Determinism: element i depends only on (spec, dtype, i) -- a counter-based
// RNG (splitmix64 of seed and index) -- never on the thread count or on the
// shape beyond the element count. Bad specs fail with E420.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor.hpp"

namespace tessera {

// Uses std::thread::hardware_concurrency() threads for large tensors.
Tensor generate_input(const std::string& spec, DType dtype, const std::vector<int64_t>& shape);

// Same, with an explicit thread count (0 = hardware concurrency). The result
// is bit-identical for every thread count; the overload exists to test that.
Tensor generate_input(const std::string& spec, DType dtype, const std::vector<int64_t>& shape, unsigned num_threads);

}  // namespace tessera
