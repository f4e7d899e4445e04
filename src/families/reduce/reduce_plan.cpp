#include "families/reduce/reduce_plan.hpp"

#include <algorithm>

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

constexpr int64_t kMinWorkPerProgram = 1 << 14;  // elements; amortizes dispatch
constexpr int64_t kWantPrograms = 64;            // enough to balance any core count we target
constexpr int64_t kMinPrograms = 16;            // fewer than this leaves cores idle
constexpr int64_t kSplitWork = 1 << 20;          // elements; below this one core is fine
constexpr int64_t kColumnBlock = 1024;           // accumulator columns held in L1 per program
constexpr int64_t kRowsInFlight = 4;             // rows: rows read in lockstep (memory parallelism)
constexpr int64_t kRowUnroll = 8;                // input rows in flight per step (memory parallelism)

void choose_strategy(Pass& p) {
  p.vector_width = p.accum == DType::F64 ? 8 : 16;  // one 64-byte vector register
  p.unroll = 4;
  const int64_t lanes = p.tile_lanes();
  const int64_t rows = p.outer * p.chunks;
  if (p.inner == 1) {
    p.strategy = "rows";
    int64_t per_row = std::max<int64_t>(p.chunk_len(), 1);
    p.rows_per_program = std::clamp<int64_t>(std::max(kMinWorkPerProgram / per_row, kRowsInFlight), 1,
                                             std::max<int64_t>(1, rows / kWantPrograms));
    p.programs = (rows + p.rows_per_program - 1) / p.rows_per_program;
    // Lockstep rows need equal spans, which chunked rows do not all have.
    p.rows_in_flight = p.chunks == 1 ? std::min<int64_t>(kRowsInFlight, p.rows_per_program) : 1;
  } else {
    p.strategy = "columns";
    int64_t block = std::min<int64_t>(kColumnBlock, (p.inner + lanes - 1) / lanes * lanes);
    p.columns_per_program = block;
    p.row_unroll = std::clamp<int64_t>(p.chunk_len(), 1, kRowUnroll);
    p.programs = rows * ((p.inner + block - 1) / block);
  }
}

}  // namespace

std::vector<Pass> plan_passes(const ir::Type& input, const ir::ReduceSpec& spec, const std::string& target) {
  std::vector<Group> gs = coalesce(input, spec);
  int64_t count = 1;
  for (int64_t a : spec.axes) count *= input.shape[a];
  const DType accum = default_accumulation(input.dtype);
  const std::string kind = ir::reduce_kind_name(spec.kind);
  const bool mean = spec.kind == ir::ReduceKind::Mean;

  std::vector<Pass> passes;
  auto base_pass = [&]() {
    Pass p;
    p.combine = mean ? "sum" : kind;
    p.finalize = "none";
    p.accum = accum;
    p.nan_mode = (kind == "max" || kind == "min") ? "propagate" : "ieee";
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
  std::vector<Pass> split;
  for (Pass& p : passes) {
    choose_strategy(p);
    const int64_t work = p.outer * p.extent * p.inner;
    if (p.programs < kMinPrograms && work >= kSplitWork && p.extent >= 2 * kWantPrograms) {
      Pass a = p, b = p;
      a.chunks = std::clamp<int64_t>(kWantPrograms / p.programs, 2, p.extent / kWantPrograms);
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
      p.finalize = "mean";
      p.mean_count = count;
    }
    choose_strategy(p);
  }
  (void)target;  // the CPU is the only target this family schedules today
  return split;
}

}  // namespace tessera::families::reduce
