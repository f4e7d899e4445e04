// Scheduling decisions for the reduce family. A tessera.reduce becomes one or
// more passes, each a reduction of a [outer, extent, inner] view:
//   - reduced axes that are adjacent merge into one extent, so a reduction
//     whose axes are contiguous is one pass; others become a chain of passes
//     (innermost first) through accumulation-dtype intermediates;
//   - a pass with too little parallel work for its size is split: partials
//     over `chunks` pieces of the extent, then a second pass over the chunks;
//   - on a GPU a later pass (over the chunks, or the next reduced axes) that
//     sums columns spreads its rows over groups of each program's threads
//     when its columns alone give too few programs.
// Every output element is produced by one program in a fixed order, so
// results are bitwise deterministic whatever the thread count or timing.
#pragma once
#include <string>
#include <vector>

#include "families/plan_fields.hpp"
#include "ir/graph_dialect.hpp"
#include "machine/descriptor.hpp"

namespace tessera::families::reduce {

enum class Combine { Sum, Max, Min, Prod };  // mean combines as sum
enum class Finalize { None, Mean };          // mean: divide by mean_count
enum class Strategy { Rows, Columns };
enum class Accumulator { Scratch, Registers };  // columns: a row in memory, or one tile
enum class NanMode { Ieee, Propagate };         // propagate: max/min return NaN if any input is NaN

struct Pass {
  Combine combine = Combine::Sum;
  Finalize finalize = Finalize::None;
  int64_t mean_count = 1;
  int64_t outer = 1, extent = 1, inner = 1, chunks = 1;
  DType in_dtype = DType::F32, out_dtype = DType::F32, accum = DType::F32;
  Strategy strategy = Strategy::Rows;
  int64_t threads = 1;                    // threads per program (a CUDA block); 1 on the CPU
  int64_t vector_width = 16, unroll = 4;  // tile = threads * vector_width * unroll lanes
  int64_t rows_per_program = 1;           // rows
  int64_t rows_in_flight = 1;             // rows: rows reduced in lockstep
  int64_t columns_per_program = 0;        // columns
  int64_t row_unroll = 1;                 // columns: input rows combined per step
  // columns, registers: the tile is [row_groups, columns_per_program], each
  // row of it a group of threads walking every row_groups-th input row (sums
  // only: edge lanes load 0); the groups are folded in order at the end.
  int64_t row_groups = 1;
  Accumulator accumulator = Accumulator::Scratch;  // columns
  int64_t programs = 1;
  NanMode nan_mode = NanMode::Ieee;
  // A fused prologue (first pass only): per leaf, its stride per [outer,
  // extent, inner] and its element offset in its buffer (a view's, else 0).
  std::vector<std::vector<int64_t>> leaf_strides;
  std::vector<int64_t> leaf_offsets;

  int64_t chunk_len() const { return chunks <= 1 ? extent : (extent + chunks - 1) / chunks; }
  int64_t tile_lanes() const { return threads * vector_width * unroll; }
};

// The passes of a reduction on `device` (one, or partials over chunks then a pass over them).
std::vector<Pass> plan_passes(const ir::Type& input, const ir::ReduceSpec& spec, const machine::Descriptor& device);

// The fields a schedule.reduce records (plan_fields.hpp).
const std::vector<Field<Pass>>& pass_fields();

}  // namespace tessera::families::reduce

namespace tessera::families {
template <>
struct EnumNames<reduce::Combine> {
  static constexpr std::array<std::pair<reduce::Combine, const char*>, 4> names = {{{reduce::Combine::Sum, "sum"},
                                                                                    {reduce::Combine::Max, "max"},
                                                                                    {reduce::Combine::Min, "min"},
                                                                                    {reduce::Combine::Prod, "prod"}}};
};
template <>
struct EnumNames<reduce::Finalize> {
  static constexpr std::array<std::pair<reduce::Finalize, const char*>, 2> names = {
      {{reduce::Finalize::None, "none"}, {reduce::Finalize::Mean, "mean"}}};
};
template <>
struct EnumNames<reduce::Strategy> {
  static constexpr std::array<std::pair<reduce::Strategy, const char*>, 2> names = {
      {{reduce::Strategy::Rows, "rows"}, {reduce::Strategy::Columns, "columns"}}};
};
template <>
struct EnumNames<reduce::Accumulator> {
  static constexpr std::array<std::pair<reduce::Accumulator, const char*>, 2> names = {
      {{reduce::Accumulator::Scratch, "scratch"}, {reduce::Accumulator::Registers, "registers"}}};
};
template <>
struct EnumNames<reduce::NanMode> {
  static constexpr std::array<std::pair<reduce::NanMode, const char*>, 2> names = {
      {{reduce::NanMode::Ieee, "ieee"}, {reduce::NanMode::Propagate, "propagate"}}};
};
}  // namespace tessera::families
