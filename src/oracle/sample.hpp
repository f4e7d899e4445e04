// Which elements a sampled check compares. A check of a big result compares a
// deterministic spread of it: whole rows and columns at the edges (the first
// block and the tails, where indexing bugs live) and spread between them with
// varying offsets within a block. The oracle then computes only those elements
// and what they depend on (reference.hpp), so checking costs a small part of
// evaluating everything.
#pragma once
#include <cstdint>
#include <vector>

namespace tessera::oracle {

// `want` of [0, n), ascending: all when n <= want; else the first and last
// want/4 and want - 2*(want/4) spread between them, each offset into its
// stretch by a different amount so that the sample meets many positions
// within a block.
std::vector<int64_t> spread_indices(int64_t n, int64_t want);

// One flag per element of a tensor of `shape`, set on a grid of spread rows
// (the leading dims flattened) and spread columns (the last dim), rows * cols
// in all (a tensor with fewer rows gets more columns); empty (all elements)
// when the tensor has at most rows * cols elements.
std::vector<uint8_t> sample_elements(const std::vector<int64_t>& shape, int64_t rows, int64_t cols);

}  // namespace tessera::oracle
