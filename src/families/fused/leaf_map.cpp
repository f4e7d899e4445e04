#include "families/fused/leaf_map.hpp"

#include <algorithm>

namespace tessera::families::fused {

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& leaf, const std::vector<int64_t>& space) {
  std::vector<int64_t> st(space.size(), 0);
  int64_t s = 1;
  for (size_t i = 0; i < leaf.size(); ++i) {
    const size_t l = leaf.size() - 1 - i, d = space.size() - 1 - i;  // aligned from the right
    if (leaf[l] != 1) st[d] = s;
    s *= std::max<int64_t>(leaf[l], 1);  // a zero-size leaf is never read; keep its strides linear
  }
  return st;
}

namespace {
// Strides over dims [begin, end) of a space: linear if all zero (unit dims
// ignored) or each stride is the next one's times its extent.
std::optional<int64_t> linear_stride(const std::vector<int64_t>& st, const std::vector<int64_t>& space, size_t begin,
                                     size_t end) {
  for (size_t d = begin; d < end; ++d)
    if (space[d] == 0) return 0;    // an empty group: nothing is read
  int64_t inner = -1, expect = -1;  // stride of the innermost non-unit dim; the next dim's required stride
  bool zero = false, nonzero = false;
  for (size_t d = end; d-- > begin;) {
    if (space[d] == 1) continue;
    if (st[d] == 0) zero = true;
    else {
      nonzero = true;
      if (expect >= 0 && st[d] != expect) return std::nullopt;
      if (inner < 0) inner = st[d];
    }
    expect = st[d] * space[d];
  }
  if (zero && nonzero) return std::nullopt;  // part broadcast, part not: no single stride
  return nonzero ? inner : 0;
}
}  // namespace

std::optional<std::vector<int64_t>> group_strides(const std::vector<int64_t>& leaf, const std::vector<int64_t>& space,
                                                  const std::vector<int>& groups) {
  return group_strided(broadcast_strides(leaf, space), space, groups);
}

std::optional<std::vector<int64_t>> group_strided(const std::vector<int64_t>& st, const std::vector<int64_t>& space,
                                                  const std::vector<int>& groups) {
  std::vector<int64_t> out;
  size_t d = 0;
  for (int n : groups) {
    auto s = linear_stride(st, space, d, d + n);
    if (!s) return std::nullopt;
    out.push_back(*s);
    d += n;
  }
  return out;
}

std::vector<int64_t> view_space_strides(const std::vector<int64_t>& view, const std::vector<int64_t>& layout_strides,
                                        const std::vector<int64_t>& space) {
  std::vector<int64_t> st(space.size(), 0);
  for (size_t i = 0; i < view.size(); ++i) {
    const size_t l = view.size() - 1 - i, d = space.size() - 1 - i;  // aligned from the right
    if (view[l] != 1) st[d] = layout_strides[l];
  }
  return st;
}

std::vector<int64_t> coalesce_for_leaves(const std::vector<int64_t>& space,
                                         const std::vector<std::vector<int64_t>>& leaves,
                                         std::vector<std::vector<int64_t>>& strides) {
  std::vector<std::vector<int64_t>> st;
  for (auto& l : leaves) st.push_back(broadcast_strides(l, space));
  return coalesce_strided(space, st, strides);
}

std::vector<int64_t> coalesce_strided(const std::vector<int64_t>& space, const std::vector<std::vector<int64_t>>& st,
                                      std::vector<std::vector<int64_t>>& strides) {
  std::vector<int64_t> extents;
  strides.assign(st.size(), {});
  for (size_t d = 0; d < space.size(); ++d) {
    if (space[d] == 1) continue;
    bool merge = !extents.empty();
    for (size_t l = 0; merge && l < st.size(); ++l) merge = strides[l].back() == st[l][d] * space[d];
    if (merge) {
      extents.back() *= space[d];
      for (size_t l = 0; l < st.size(); ++l) strides[l].back() = st[l][d];
    } else {
      extents.push_back(space[d]);
      for (size_t l = 0; l < st.size(); ++l) strides[l].push_back(st[l][d]);
    }
  }
  if (extents.empty()) {  // a single element
    extents.push_back(1);
    for (auto& s : strides) s.push_back(0);
  }
  return extents;
}

}  // namespace tessera::families::fused
