// How a fused kernel addresses a value it reads (a "leaf"): the leaf's
// element offset as a linear function of the kernel's iteration coordinates,
// one stride per coordinate (0 where the leaf is broadcast).
//
// A leaf of shape L read inside an iteration space of shape S (L broadcasts to
// S, numpy rules) has, per dim of S, stride 0 where L is broadcast and its own
// row-major stride elsewhere. A kernel iterates over groups of adjacent dims
// (e.g. [outer, extent, inner] for a reduction); the leaf is linear in a group
// when its strides there are all 0 or contiguous, and then the group's stride
// is that of its innermost dim.
#pragma once
#include <optional>
#include <vector>

#include "ir/type.hpp"

namespace tessera::families::fused {

// Per dim of `space`, the leaf's stride (0 where broadcast).
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& leaf, const std::vector<int64_t>& space);

// groups[g] = number of consecutive dims of `space` in group g (they cover it
// in order). The leaf's stride per group, or nullopt if it is not linear in
// some group.
std::optional<std::vector<int64_t>> group_strides(const std::vector<int64_t>& leaf, const std::vector<int64_t>& space,
                                                  const std::vector<int>& groups);

// The same for a leaf given by its stride per dim of `space` (a view's
// view_space_strides).
std::optional<std::vector<int64_t>> group_strided(const std::vector<int64_t>& space_strides,
                                                  const std::vector<int64_t>& space, const std::vector<int>& groups);

// Per dim of `space`, the stride of a leaf of shape `view` laid out with
// `layout_strides` (a view of a buffer: transposed, sliced...), broadcast
// into `space` (0 where the view has extent 1 or no dim).
std::vector<int64_t> view_space_strides(const std::vector<int64_t>& view, const std::vector<int64_t>& layout_strides,
                                        const std::vector<int64_t>& space);

// Merges adjacent dims of `space` (unit dims dropped) where every leaf stays
// linear: the iteration groups of a pointwise kernel. Returns the group
// extents; `strides[l]` receives leaf l's stride per group.
std::vector<int64_t> coalesce_for_leaves(const std::vector<int64_t>& space,
                                         const std::vector<std::vector<int64_t>>& leaves,
                                         std::vector<std::vector<int64_t>>& strides);
// The same for leaves given by their stride per dim of `space`.
std::vector<int64_t> coalesce_strided(const std::vector<int64_t>& space,
                                      const std::vector<std::vector<int64_t>>& space_strides,
                                      std::vector<std::vector<int64_t>>& strides);

}  // namespace tessera::families::fused
