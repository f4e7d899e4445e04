// Lowers the Graph IR ops of a fused region (the body of a schedule op's
// region) to Tile IR at one tile position: each op becomes tile.map on tiles of
// the kernel's compute type. The caller supplies the tiles of the leaves
// (region arguments), already loaded or splat, and of any value it computed
// itself (a row op's output, for an epilogue).
#pragma once
#include <functional>
#include <unordered_map>

#include "ir/tile_dialect.hpp"

namespace tessera::families::fused {

using Env = std::unordered_map<const ir::Value*, ir::Value*>;
using LeafFn = std::function<ir::Value*(size_t leaf_index)>;
// The flat index, in the region's result, of the tile's first lane (lanes
// follow contiguously); kernels that can say it let tessera.iota in.
using PositionFn = std::function<ir::Value*()>;
// The tile of an op that reads a leaf from memory where each element points:
// a tessera.concat (its operands, where each element's coordinate falls) or a
// gather / take_along (its operand, where `indices` - the tile of its second
// operand - point; null for a concat). Kernels that can build it let them in.
using MemoryReadFn = std::function<ir::Value*(const ir::Op& op, ir::Value* indices)>;

// The tile type of a region value of dtype `value` in a kernel computing on
// `lanes` tiles: floats in the compute type, i1/i32/i64 as themselves.
ir::Type lane_type(DType value, const ir::Type& lanes);

// The tile of region value `v` (a region argument or an op result of `body`),
// computing what it needs; memoized in env. `lanes` is the compute tile type;
// each value's tile has lane_type(its dtype, lanes).
ir::Value* eval(ir::TileBuilder& tb, const ir::Region& body, const ir::Value* v, const ir::Type& lanes, Env& env,
                const LeafFn& leaf, const PositionFn& position = nullptr, const MemoryReadFn& memory_read = nullptr);

// The compute (accumulation) type of a region whose values have these dtypes:
// f64 if any is f64, else f32.
DType compute_dtype(const ir::Region& body);

// E302 unless a leaf addressed from element `offset` with `strides` over
// iteration extents `view` stays inside the leaf (offset and strides >= 0,
// the farthest element inside it).
void check_leaf_reach(const std::vector<int64_t>& view, const std::vector<int64_t>& strides, const ir::Type& leaf,
                      const ir::Op& schedule_op, int64_t offset = 0);

// Verifies a fused region body: region arguments are tensors, the ops are
// pointwise or row Graph IR ops, and it ends in schedule.yield of one value.
// With `views`, an argument may be a view of its operand (another shape of
// the same dtype, read through the op's leaf offsets and strides); with
// `reshaped`, its operand's buffer reshaped (the same dtype and element
// count, read row-major from its start), and the op's result may be the
// yielded value reshaped (its kernel writes row-major: the same bytes);
// with `reshaped_result`, only the latter.
void verify_region(const ir::Op& schedule_op, bool views = false, bool reshaped = false, bool reshaped_result = false);

}  // namespace tessera::families::fused

namespace tessera::families::fused {

// One ptr argument of `body` per region argument (in0, in1, ...): the leaves.
std::vector<ir::Value*> add_leaf_args(ir::Region& body, const ir::Region& region);

// The tile of a leaf whose first lane is element `base` of `ptr` and whose
// lanes advance by `lane_stride` elements: 1 reads contiguous lanes (masked
// to `count` lanes when count is non-null, other lanes 0), 0 splats one
// element to every lane (a broadcast leaf), any other stride gathers lanes
// that far apart (a transposed view).
ir::Value* read_leaf(ir::TileBuilder& tb, ir::Value* ptr, ir::Value* base, int64_t lane_stride, ir::Value* count,
                     const ir::Type& lanes);

}  // namespace tessera::families::fused
