// The rowwise family: softmax, log_softmax, layer_norm and rms_norm and their
// gradient ops, with a fused pointwise prologue (on the input x, and on a
// gradient's dy) and epilogue (on the result), as one kernel. The op's axis splits x into an [outer, extent, inner] view:
//   rows     (inner == 1): a program normalizes one row; its statistics
//            (max, sums) are lane reductions. `resident`: the whole row is one
//            tile, read from memory once (CUDA: rows up to 16K f32 lanes in
//            one block; longer rows, up to 256K, in a thread-block cluster of
//            `cluster` blocks whose lane reductions meet in distributed shared
//            memory); otherwise the row is streamed once per statistic and once more
//            to write (re-reads hit L1/L2 on the CPU); `online` folds the
//            max and the sum of a softmax into one read (CUDA).
//            `pick`: a log_softmax row whose region ends in a take_along of
//            one element a row (cross-entropy's label logit): the program
//            writes only that element, x[label] - max - log(sum), so the
//            log-probabilities are never stored.
//   columns  (inner > 1): a program owns a tile of columns of one outer index
//            and walks down the extent; statistics are per lane.
// The norms' gradients (rows only) also sum dy * n (and dy) over rows for dw
// (and db): a program takes `rows_per_program` rows in turn and writes its
// sums as one row of a [programs, extent] partials result in the compute
// type; a column reduction of the partials finishes dw and db
// (graph_to_schedule), so the sums are deterministic.
// Statistics are computed in the compute type (f32, or f64 for f64) in fixed
// order: results are bitwise deterministic.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "families/fused/region.hpp"
#include "families/plan_fields.hpp"
#include "ir/ir.hpp"
#include "machine/descriptor.hpp"

namespace tessera::families::rowwise {

enum class RowOp { Softmax, LogSoftmax, LayerNorm, RmsNorm, SoftmaxGrad, LogSoftmaxGrad, LayerNormGrad, RmsNormGrad };
enum class Strategy { Rows, Columns };

struct Plan {
  RowOp op = RowOp::Softmax;
  double eps = 0;
  int64_t outer = 1, extent = 1, inner = 1;
  std::vector<std::vector<int64_t>> leaf_strides;  // per leaf: [outer, extent, inner]
  // per leaf: its element offset in the buffer it reads (a view: its base's);
  // recorded as `leaf_offsets` only when some leaf is a view
  std::vector<int64_t> leaf_offsets;
  DType compute = DType::F32;
  Strategy strategy = Strategy::Rows;
  bool resident = false;
  // softmax/log_softmax on streamed rows: max and sum in one read (online).
  // CUDA only: CPU rows are re-read from cache, and the online form costs a
  // second exp per element, which the CPU pays in time (it is compute-bound).
  bool online = false;
  // softmax on streamed rows whose output type is the compute type: the sum
  // pass keeps exp(x - m) in the output row and the write pass only scales it
  // (one exp an element instead of two; CPU, where exp is the cost).
  bool stash_exp = false;
  int64_t threads = 1, vector_width = 16, unroll = 4;
  // CUDA resident rows: blocks in a program's thread-block cluster (1: none).
  // Recorded in the schedule only when > 1.
  int64_t cluster = 1;
  // CUDA rows: each program asks for the row `prefetch_rows` rows ahead of
  // the one it works on (a program a row: the row of a later program; a
  // norm gradient's: its own next rows) of each leaf it reads a row at a
  // time to be copied into L2 (tile.prefetch). Recorded only when > 0.
  int64_t prefetch_rows = 0;
  // CUDA resident rows in a cluster: persistent programs (as many as fit the
  // device, each taking rows a stride apart), the row leaf's block share
  // copied by the bulk copy engine through shared memory while the previous
  // row is reduced and written (tile.load_staged). Recorded only when true.
  bool staged = false;
  // The region ends in a take_along of the log_softmax, one index a row: the
  // output is that element of each row (result [outer]). Recorded only when true.
  bool pick = false;
  // CUDA resident rows of one block (the 16-bit softmax gradients; others
  // with the experimental rows_walk): each program walks rows_per_program
  // consecutive rows, as a norm gradient's does. Recorded only when true.
  bool walk = false;
  // Norm gradients: consecutive rows a program takes (its dw, db partial sums
  // cover them). Recorded only for them.
  int64_t rows_per_program = 1;
  // Norm gradients on resident GPU rows: dy and w are loaded with x, before
  // the row's first reduction, so their latency overlaps it (else they load
  // at their first use, after it). Recorded only when true.
  bool early_loads = false;
  int64_t programs = 0;

  bool norm_grad() const { return op == RowOp::LayerNormGrad || op == RowOp::RmsNormGrad; }
  bool grad() const { return norm_grad() || op == RowOp::SoftmaxGrad || op == RowOp::LogSoftmaxGrad; }
  bool norm() const { return op == RowOp::LayerNorm || op == RowOp::RmsNorm || norm_grad(); }
  bool softmax_like() const { return op == RowOp::Softmax || op == RowOp::LogSoftmax; }
  // Partial-sum results beside dx: dw (and db for layer_norm).
  size_t partials() const { return op == RowOp::LayerNormGrad ? 2 : op == RowOp::RmsNormGrad ? 1 : 0; }
  int64_t tile_lanes() const { return threads * vector_width * unroll * cluster; }
  // Leaf l is read a row at a time: it varies by row and is contiguous along
  // the extent (the leaves a prefetch fetches).
  bool row_leaf(size_t l) const {
    return strategy == Strategy::Rows && leaf_strides[l][0] != 0 && leaf_strides[l][1] == 1;
  }
  int64_t offset(size_t l) const { return l < leaf_offsets.size() ? leaf_offsets[l] : 0; }
  int64_t column_blocks() const { return (inner + tile_lanes() - 1) / tile_lanes(); }
  // The one leaf a staged row is read from (-1: none, or more than one).
  int64_t staged_leaf() const {
    int64_t found = -1;
    for (size_t l = 0; l < leaf_strides.size(); ++l)
      if (row_leaf(l)) {
        if (found >= 0) return -1;
        found = static_cast<int64_t>(l);
      }
    return found;
  }
};

// The fields a schedule.rowwise records (plan_fields.hpp).
const std::vector<Field<Plan>>& plan_fields();

// The schedule.rowwise op: result 0 is the region's result; a norm
// gradient's partial sums follow (named "<dw>.partials", "<db>.partials").
ir::Op& emit_schedule(ir::Builder& b, const fused::FusedRegion& region,
                      const std::unordered_map<const ir::Value*, ir::Value*>& map, const machine::Descriptor& device,
                      const std::string& prefix);

Plan read_plan(const ir::Op& schedule_op);

}  // namespace tessera::families::rowwise

namespace tessera::families {
template <>
struct EnumNames<rowwise::RowOp> {
  static constexpr std::array<std::pair<rowwise::RowOp, const char*>, 8> names = {
      {{rowwise::RowOp::Softmax, "softmax"},
       {rowwise::RowOp::LogSoftmax, "log_softmax"},
       {rowwise::RowOp::LayerNorm, "layer_norm"},
       {rowwise::RowOp::RmsNorm, "rms_norm"},
       {rowwise::RowOp::SoftmaxGrad, "softmax_grad"},
       {rowwise::RowOp::LogSoftmaxGrad, "log_softmax_grad"},
       {rowwise::RowOp::LayerNormGrad, "layer_norm_grad"},
       {rowwise::RowOp::RmsNormGrad, "rms_norm_grad"}}};
};
template <>
struct EnumNames<rowwise::Strategy> {
  static constexpr std::array<std::pair<rowwise::Strategy, const char*>, 2> names = {
      {{rowwise::Strategy::Rows, "rows"}, {rowwise::Strategy::Columns, "columns"}}};
};
}  // namespace tessera::families
