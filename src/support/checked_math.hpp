// Integer arithmetic on values read from IR text: a hand-made schedule can
// hold any int64, and a product that overflows is undefined behaviour, not
// a number to compare. These say "out of range" instead.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>

namespace tessera {

// The product of non-negative factors; nullopt if one is negative or the
// product does not fit in int64.
inline std::optional<int64_t> checked_product(std::initializer_list<int64_t> factors) {
  int64_t p = 1;
  for (int64_t f : factors)
    if (f < 0 || __builtin_mul_overflow(p, f, &p)) return std::nullopt;
  return p;
}

}  // namespace tessera
