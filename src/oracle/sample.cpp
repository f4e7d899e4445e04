#include "oracle/sample.hpp"

#include <algorithm>
#include <cstddef>

namespace tessera::oracle {

std::vector<int64_t> spread_indices(int64_t n, int64_t want) {
  std::vector<int64_t> out;
  if (n <= want) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  const int64_t edge = want / 4, middle = want - 2 * edge, span = n - 2 * edge;
  for (int64_t i = 0; i < edge; ++i) out.push_back(i);
  for (int64_t i = 0; i < middle; ++i) {
    const int64_t lo = edge + i * span / middle, hi = edge + (i + 1) * span / middle;  // hi > lo: span >= middle
    out.push_back(lo + (i * 37) % (hi - lo));
  }
  for (int64_t i = n - edge; i < n; ++i) out.push_back(i);
  return out;
}

std::vector<uint8_t> sample_elements(const std::vector<int64_t>& shape, int64_t rows, int64_t cols) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (numel <= rows * cols) return {};
  const int64_t n = shape.back(), m = numel / n;
  // Fewer rows than asked give their share to the columns (a vector is one row).
  const int64_t taken = std::min(m, rows);
  std::vector<uint8_t> flags(static_cast<size_t>(numel), 0);
  const std::vector<int64_t> cs = spread_indices(n, rows * cols / taken);
  for (int64_t i : spread_indices(m, rows))
    for (int64_t j : cs) flags[i * n + j] = 1;
  return flags;
}

}  // namespace tessera::oracle
