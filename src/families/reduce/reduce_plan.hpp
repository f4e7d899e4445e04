// Scheduling decisions for the reduce family. A tessera.reduce becomes one or
// more passes, each a reduction of a [outer, extent, inner] view:
//   - reduced axes that are adjacent merge into one extent, so a reduction
//     whose axes are contiguous is one pass; others become a chain of passes
//     (innermost first) through accumulation-dtype intermediates;
//   - a pass with too little parallel work for its size is split: partials
//     over `chunks` pieces of the extent, then a second pass over the chunks.
// Every output element is produced by one program in a fixed order, so
// results are bitwise deterministic whatever the thread count or timing.
#pragma once
#include <string>
#include <vector>

#include "ir/graph_dialect.hpp"
#include "machine/descriptor.hpp"

namespace tessera::families::reduce {

struct Pass {
  std::string combine;   // sum | max | min | prod (mean combines as sum)
  std::string finalize;  // none | mean (divide by mean_count)
  int64_t mean_count = 1;
  int64_t outer = 1, extent = 1, inner = 1, chunks = 1;
  DType in_dtype = DType::F32, out_dtype = DType::F32, accum = DType::F32;
  std::string strategy;  // rows | columns
  int64_t threads = 1;                    // threads per program (a CUDA block); 1 on the CPU
  int64_t vector_width = 16, unroll = 4;  // tile = threads * vector_width * unroll lanes
  int64_t rows_per_program = 1;           // rows
  int64_t rows_in_flight = 1;             // rows: rows reduced in lockstep
  int64_t columns_per_program = 0;        // columns
  int64_t row_unroll = 1;                 // columns: input rows combined per step
  std::string accumulator;                // columns: "scratch" (a row in memory) | "registers" (one tile)
  int64_t programs = 1;
  std::string nan_mode;  // propagate (max/min) | ieee
  // A fused prologue (first pass only): per leaf, its stride per [outer, extent, inner].
  std::vector<std::vector<int64_t>> leaf_strides;

  int64_t chunk_len() const { return chunks <= 1 ? extent : (extent + chunks - 1) / chunks; }
  int64_t tile_lanes() const { return threads * vector_width * unroll; }
};

// The passes of a reduction on `device` (one, or partials over chunks then a pass over them).
std::vector<Pass> plan_passes(const ir::Type& input, const ir::ReduceSpec& spec, const machine::Descriptor& device);

}  // namespace tessera::families::reduce
