#include "families/reduce/reduce_plan.hpp"

#include <algorithm>
#include <bit>

namespace tessera::families::reduce {
namespace {

struct Group {
  bool reduced;
  int64_t extent;
};

// Drops unit dims and merges neighbours of the same kind: [4,1,8 | 16] with
// axes {2,3}... becomes alternating kept/reduced groups.
std::vector<Group> coalesce(const ir::Type& input, const ir::ReduceSpec& spec) {
  std::vector<Group> gs;
  for (int64_t i = 0; i < input.rank(); ++i) {
    bool red = std::binary_search(spec.axes.begin(), spec.axes.end(), i);
    int64_t e = input.shape[i];
    if (e == 1) continue;
    if (!gs.empty() && gs.back().reduced == red) gs.back().extent *= e;
    else gs.push_back({red, e});
  }
  return gs;
}

// What the planner assumes of a device. CPU: a program is one core's work
// item on the tile library's vectors. GPU: a program is a thread block; its
// tile lanes are spread over the threads, vector_width contiguous elements
// per thread.
struct Assumptions {
  bool gpu;
  int64_t vector_bytes;          // one vector load
  int64_t min_programs;          // fewer than this leaves the machine idle: split
  int64_t want_programs;         // a split aims at about this many programs
  int64_t split_work;            // elements; smaller passes are never split
  int64_t min_work_per_program;  // CPU: elements a program should have
  int64_t column_block;          // CPU: accumulator columns held in L1 per program
  int64_t rows_in_flight;        // CPU: rows read in lockstep
  int64_t row_unroll;            // input rows in flight per step (columns)
};

Assumptions assumptions_for(const machine::Descriptor& d) {
  if (!d.gpu()) return {false, d.vector_bytes, 16, 64, 1 << 20, 1 << 14, 1024, 4, 8};
  // Two programs a compute unit keep every unit busy; a split aims at one
  // wave of 256-thread blocks, eight resident a unit (a power of two, so
  // chunk counts stay even): one wave measured faster than two (docs/journal.md).
  const int64_t units = std::max<int64_t>(d.compute_units, 1);
  const auto wave = static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(units * 8)));
  return {true, d.vector_bytes, 2 * units, wave, 1 << 16, 0, 0, 1, 8};
}

void choose_cpu(Pass& p, const Assumptions& m) {
  p.threads = 1;
  p.vector_width = m.vector_bytes / static_cast<int64_t>(dtype_size(p.accum));
  p.unroll = 4;
  const int64_t lanes = p.tile_lanes();
  const int64_t rows = p.outer * p.chunks;
  if (p.inner == 1) {
    p.strategy = Strategy::Rows;
    int64_t per_row = std::max<int64_t>(p.chunk_len(), 1);
    p.rows_per_program = std::clamp<int64_t>(std::max(m.min_work_per_program / per_row, m.rows_in_flight), 1,
                                             std::max<int64_t>(1, rows / m.want_programs));
    p.programs = (rows + p.rows_per_program - 1) / p.rows_per_program;
    // Lockstep rows need equal spans, which chunked rows do not all have.
    p.rows_in_flight = p.chunks == 1 ? std::min<int64_t>(m.rows_in_flight, p.rows_per_program) : 1;
  } else {
    p.strategy = Strategy::Columns;
    p.accumulator = Accumulator::Scratch;
    // (at least one tile: a pass with no columns has no programs, not a zero block)
    int64_t block = std::clamp<int64_t>((p.inner + lanes - 1) / lanes * lanes, lanes, std::max(m.column_block, lanes));
    p.columns_per_program = block;
    p.row_unroll = std::clamp<int64_t>(p.chunk_len(), 1, m.row_unroll);
    p.programs = rows * ((p.inner + block - 1) / block);
  }
}

// One block per row (or per column block); the tile is the smallest of a few
// shapes that covers the row, so short rows do not idle most threads.
void choose_cuda(Pass& p, const Assumptions& m) {
  p.vector_width = m.vector_bytes / static_cast<int64_t>(std::max<size_t>(dtype_size(p.accum), 4));
  const int64_t rows = p.outer * p.chunks;
  const int64_t want = p.inner == 1 ? p.chunk_len() : p.inner;
  static const std::pair<int64_t, int64_t> shapes[] = {{64, 1}, {128, 1}, {128, 2}, {256, 1}, {256, 2}, {256, 4}};
  // columns: one part per thread per row (two measured slower on the H200)
  const int64_t max_parts = p.inner == 1 ? 4 : 1;
  for (auto [threads, unroll] : shapes) {
    if (unroll > max_parts) continue;
    p.threads = threads;
    p.unroll = unroll;
    if (p.tile_lanes() >= want) break;
  }
  if (p.inner == 1) {
    p.strategy = Strategy::Rows;
    p.rows_per_program = 1;
    p.rows_in_flight = 1;
    p.programs = rows;
  } else {
    p.strategy = Strategy::Columns;
    p.accumulator = Accumulator::Registers;
    p.columns_per_program = p.tile_lanes();
    p.row_unroll = std::clamp<int64_t>(p.chunk_len(), 1, m.row_unroll);
    p.programs = rows * ((p.inner + p.columns_per_program - 1) / p.columns_per_program);
  }
}

// A later pass on a GPU (over a split's chunks, or the next reduced axes):
// with one part per thread, a program's columns are a tile wide, so a few
// thousand columns give a few programs, each thread walking every row of its
// span in turn (its latency, not the bytes, is the pass's time). Row groups spread those rows over groups
// of the program's threads, as many groups as fill the device, keep each
// group's row at least 8 threads of whole vectors wide (a 32-byte sector
// each) and give each group a few rows. Sums only: their edge lanes load 0.
void choose_row_groups(Pass& p, const Assumptions& m) {
  if (!m.gpu || p.strategy != Strategy::Columns || p.combine != Combine::Sum || p.programs <= 0 ||
      p.programs >= m.min_programs)
    return;  // (no programs: an empty output)
  const auto pow2_floor = [](int64_t v) {
    return static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(std::max<int64_t>(v, 1))));
  };
  const int64_t groups = std::min(
      {pow2_floor(p.threads / 8), pow2_floor(p.chunk_len() / 4), pow2_floor(m.min_programs / p.programs)});
  if (groups < 2) return;
  p.row_groups = groups;
  p.columns_per_program = p.tile_lanes() / groups;
  p.row_unroll = std::clamp<int64_t>((p.chunk_len() + groups - 1) / groups, 1, m.row_unroll);
  p.programs = p.outer * p.chunks * ((p.inner + p.columns_per_program - 1) / p.columns_per_program);
}

void choose_strategy(Pass& p, const Assumptions& m) {
  if (m.gpu) choose_cuda(p, m);
  else choose_cpu(p, m);
}

}  // namespace

std::vector<Pass> plan_passes(const ir::Type& input, const ir::ReduceSpec& spec, const machine::Descriptor& device) {
  std::vector<Group> gs = coalesce(input, spec);
  int64_t count = 1;
  for (int64_t a : spec.axes) count *= input.shape[a];
  const DType accum = default_accumulation(input.dtype);
  const bool mean = spec.kind == ir::ReduceKind::Mean;

  std::vector<Pass> passes;
  auto base_pass = [&]() {
    Pass p;
    p.combine = mean                                ? Combine::Sum
                : spec.kind == ir::ReduceKind::Max  ? Combine::Max
                : spec.kind == ir::ReduceKind::Min  ? Combine::Min
                : spec.kind == ir::ReduceKind::Prod ? Combine::Prod
                                                    : Combine::Sum;
    p.finalize = Finalize::None;
    p.accum = accum;
    p.nan_mode = (p.combine == Combine::Max || p.combine == Combine::Min) ? NanMode::Propagate : NanMode::Ieee;
    return p;
  };
  // Innermost reduced group first; each pass removes one group.
  while (true) {
    int j = -1;
    for (int i = static_cast<int>(gs.size()) - 1; i >= 0 && j < 0; --i)
      if (gs[i].reduced) j = i;
    if (j < 0) break;
    Pass p = base_pass();
    for (int i = 0; i < j; ++i) p.outer *= gs[i].extent;
    p.extent = gs[j].extent;
    for (size_t i = j + 1; i < gs.size(); ++i) p.inner *= gs[i].extent;
    passes.push_back(p);
    gs.erase(gs.begin() + j);
    if (j > 0 && j < static_cast<int>(gs.size()) && !gs[j - 1].reduced && !gs[j].reduced) {
      gs[j - 1].extent *= gs[j].extent;
      gs.erase(gs.begin() + j);
    }
  }
  if (passes.empty()) {  // nothing (or only unit extents) to reduce: an elementwise pass
    Pass p = base_pass();
    p.outer = input.numel();
    passes.push_back(p);
  }

  // Split passes with too few programs for their size: partials over chunks
  // of the extent first, then a pass over the chunks.
  const Assumptions m = assumptions_for(device);
  std::vector<Pass> split;
  for (Pass& p : passes) {
    choose_strategy(p, m);
    const int64_t work = p.outer * p.extent * p.inner;
    // The smallest piece of the extent worth a program: a tile's worth of a
    // row on the GPU, a few rows of columns; 64 elements or rows on the CPU.
    const int64_t min_chunk = !m.gpu ? 64 : p.strategy == Strategy::Rows ? p.tile_lanes() : 16;
    if (p.programs < m.min_programs && work >= m.split_work && p.extent >= 2 * min_chunk) {
      Pass a = p, b = p;
      a.chunks = std::clamp<int64_t>(m.want_programs / std::max<int64_t>(p.programs, 1), 2, p.extent / min_chunk);
      b.extent = a.chunks;
      split.push_back(a);
      split.push_back(b);
    } else {
      split.push_back(p);
    }
  }

  for (size_t i = 0; i < split.size(); ++i) {
    Pass& p = split[i];
    const bool first = i == 0, last = i + 1 == split.size();
    p.in_dtype = first ? input.dtype : accum;
    p.out_dtype = last ? input.dtype : accum;
    if (last && mean) {
      p.finalize = Finalize::Mean;
      p.mean_count = count;
    }
    choose_strategy(p, m);
    if (!first) choose_row_groups(p, m);  // a later pass reads partials: never a fused prologue
  }
  return split;
}

}  // namespace tessera::families::reduce
