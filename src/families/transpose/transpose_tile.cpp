#include "families/transpose/transpose_tile.hpp"

#include "ir/schedule_dialect.hpp"
#include "ir/tile_dialect.hpp"

namespace tessera::families::transpose {

using namespace tessera::ir;

void build_kernel(Module& m, const std::string& sym, const Plan& p, const Op& sop) {
  auto k = new_tile_kernel(sym, p.programs, p.threads, 1, string_attr(sop, "artifact_hash"));
  Region& body = *k->regions[0];
  const DType d = sop.operands[0]->type.dtype;
  Value* in = body.add_arg("in0", Type::ptr(d));
  Value* out = body.add_arg("out", Type::ptr(d));
  TileBuilder tb(body);
  auto idx = [&](int64_t v) { return tb.index(v); };
  // Column blocks vary fastest: neighbouring programs read neighbouring
  // columns of the same rows and write neighbouring rows of the result.
  const int64_t per_batch = p.row_blocks() * p.col_blocks();
  Value* pid = tb.program_id();
  Value* batch = tb.div(pid, idx(per_batch));
  Value* t = tb.rem(pid, idx(per_batch));
  Value* r0 = tb.mul(tb.div(t, idx(p.col_blocks())), idx(p.block_rows));
  Value* c0 = tb.mul(tb.rem(t, idx(p.col_blocks())), idx(p.block_cols));
  Value* base = tb.mul(batch, idx(p.rows * p.cols));
  tb.transpose(in, out, base, base, r0, c0, p.rows, p.cols, p.block_rows, p.block_cols);
  m.ops.push_back(std::move(k));
}

}  // namespace tessera::families::transpose
