// A fused region: Graph IR ops that become one kernel (see passes/fusion.hpp),
// and how it appears in Schedule IR: a schedule op whose operands are the
// region's leaves and whose region holds the fused Graph IR ops, ending in
// schedule.yield. `--emit schedule` shows exactly what was fused.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/ir.hpp"

namespace tessera::families::fused {

struct FusedRegion {
  enum class Kind { Pointwise, Reduce, Row, Matmul, Attention, ArgReduce, Scatter };
  Kind kind = Kind::Pointwise;
  const ir::Op* core =
      nullptr;  // the reduce, row op, matmul, attention, argmax/argmin or scatter_add; null for pointwise
  std::vector<const ir::Op*> ops;        // every op of the region, in program order (core included)
  std::vector<const ir::Value*> leaves;  // values read from memory, in first-use order
  const ir::Value* result = nullptr;     // the value the region writes (attention: o; lse beside it)
  std::string copies_because;            // a region with no ops copies a view into a buffer: why
  // A view of `result` that the region's kernel writes instead of a copy
  // kernel writing it (graph_to_schedule): a matmul or pointwise region's
  // returned reshape (row-major, every element); an attention's transpose
  // of heads and rows (families/attention writes_view).
  const ir::Value* written_as = nullptr;
};

// Creates `name` with operands `leaves` (mapped through `outer`) and a region
// holding clones of `ops` up to and including the one defining `yielded`;
// region values are named "<prefix>.<original name>". No results yet.
ir::Op& create_region_op(ir::Builder& b, const std::string& name, const std::vector<const ir::Value*>& leaves,
                         const std::vector<const ir::Op*>& ops, const ir::Value* yielded,
                         const std::unordered_map<const ir::Value*, ir::Value*>& outer, const std::string& prefix);

// Where a kernel iterating `space` in `groups` of dims reads leaf `v`: its
// base buffer (v itself, or the buffer a chain of view ops reads; has_buffer
// says which values have one), the element offset there, and its stride per
// group; nullopt when the leaf (or its view's layout) is not linear in the
// groups (fusion then copies the view first).
struct LeafRead {
  const ir::Value* base;
  int64_t offset = 0;
  std::vector<int64_t> strides;
};
std::optional<LeafRead> leaf_read(const ir::Value* v, const std::vector<int64_t>& space, const std::vector<int>& groups,
                                  const std::function<bool(const ir::Value*)>& has_buffer);

// The `leaf_strides` attribute of a fused schedule op: per operand, its stride
// per iteration group.
ir::Attr leaf_strides_attr(const std::vector<std::vector<int64_t>>& strides);
// Reads it back (E302 unless one list of `groups` integers per operand, the
// stride of group `lane_group` - the one tile lanes run along - 0 or 1;
// lane_group SIZE_MAX: any stride, for kernels that load strided lanes).
std::vector<std::vector<int64_t>> read_leaf_strides(const ir::Op& schedule_op, size_t groups, size_t lane_group);

// The narrowest element, in bytes, a region reads or writes (GPU schedules
// size their 16-byte vector loads by it).
int64_t narrowest_storage_bytes(const FusedRegion& region);

// E302 unless threads, vector_width and unroll are powers of two with
// threads <= 1024 and at most 256 lanes a thread.
void check_tile_shape(const ir::Op& schedule_op, int64_t threads, int64_t vector_width, int64_t unroll);

}  // namespace tessera::families::fused
