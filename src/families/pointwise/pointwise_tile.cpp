#include "families/pointwise/pointwise_tile.hpp"

#include "families/fused/expr_tile.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/schedule_dialect.hpp"

namespace tessera::families::pointwise {

using namespace tessera::ir;

namespace {

// The lanes' coordinate along each dim of a region value of type `r`, whose
// lanes are the region result's (`out`) from flat index `position` (r
// broadcasts into out: a dim of extent 1 is 0).
std::vector<Value*> lane_coords(TileBuilder& tb, const Type& r, const Type& out, Value* position, const Type& i64) {
  const int64_t lead = out.rank() - r.rank();
  std::vector<Value*> coord;
  for (int64_t j = 0; j < r.rank(); ++j) {
    int64_t inner = 1;
    for (int64_t d = lead + j + 1; d < out.rank(); ++d) inner *= out.shape[d];
    // (an empty result has no lane to observe: 1 keeps the arithmetic defined)
    coord.push_back(r.shape[j] == 1 ? tb.full(0, i64)
                                    : tb.iota(position, std::max<int64_t>(inner, 1),
                                              std::max<int64_t>(out.shape[lead + j], 1), i64));
  }
  return coord;
}

size_t leaf_index(const Region& region, const Value* v) {
  size_t l = 0;
  while (region.args[l].get() != v) ++l;
  return l;
}

// The tile of `concat` at the lanes from flat index `position` of the
// region's result (`out`): each operand (a leaf, contiguous) is gathered at
// the element the lane's coordinate falls on, clamped into the operand so a
// lane of another operand reads in bounds, and the lane takes the operand its
// coordinate along the axis falls in.
Value* concat_tile(TileBuilder& tb, const Op& concat, const Region& region, const std::vector<Value*>& leaves,
                   const Plan& p, const Type& out, Value* position, const Type& lanes) {
  Type i64 = lanes;
  i64.dtype = DType::I64;
  auto k = [&](int64_t v) { return tb.full(static_cast<double>(v), i64); };
  const Type& r = concat.result()->type;
  const int64_t axis = concat_axis(concat);
  const std::vector<Value*> coord = lane_coords(tb, r, out, position, i64);
  Value* result = nullptr;
  int64_t end = 0;
  std::vector<std::pair<int64_t, Value*>> parts;  // (end along the axis, values)
  for (const Value* operand : concat.operands) {
    const std::vector<int64_t>& s = operand->type.shape;
    const int64_t start = end;
    end += s[axis];
    if (s[axis] == 0) continue;
    const size_t l = leaf_index(region, operand);
    const std::vector<int64_t>& st = p.gather_strides[l];  // read_plan checked their reach
    Value* addr = k(p.leaf_offsets[l]);
    for (int64_t j = 0; j < r.rank(); ++j) {
      Value* c = coord[j];
      if (j == axis) c = tb.map("min", {tb.map("max", {tb.map("sub", {c, k(start)}), k(0)}), k(s[j] - 1)});
      if (s[j] != 1 && st[j] != 0) addr = tb.map("add", {addr, tb.map("mul", {c, k(st[j])})});
    }
    parts.emplace_back(end, tb.gather(leaves[l], addr, fused::lane_type(operand->type.dtype, lanes)));
  }
  for (size_t i = parts.size(); i-- > 0;)
    result = !result ? parts[i].second
                     : tb.map("select", {tb.map("lt", {coord[axis], k(parts[i].first)}), parts[i].second, result});
  return result;
}

// Whether a row tile (tile_rows) can read `concat` by pieces: a float concat
// of the view's own shape along its last (column) axis whose operands are
// whole vectors wide, each with contiguous columns. A thread's vector then
// lies in one operand: a vector load of it (tile.load2d_piece) instead of a
// gather per lane of every operand (RoPE's rotate-half at 1.1 TB/s on the
// H100: bench/evidence/cuda/raw/llama-s2048-swiglu-h100-dd01419.log).
bool concat_by_pieces(const Op& concat, const Region& region, const Plan& p) {
  const Type& r = concat.result()->type;
  if (!is_float(r.dtype) || r.shape != p.view || concat_axis(concat) != r.rank() - 1) return false;
  for (const Value* operand : concat.operands) {
    const int64_t s = operand->type.shape.back();
    if (s % p.vector_width != 0) return false;  // (so every operand starts on a vector too)
    if (s > 0 && p.gather_strides[leaf_index(region, operand)].back() != 1) return false;
  }
  return true;
}

// The row tile of `concat` (concat_by_pieces) at the rows whose coordinates
// in the view's outer groups are `coords`: each operand's lanes loaded from
// its rows, which step by its stride along the tile's group.
Value* concat_pieces(TileBuilder& tb, const Op& concat, const Region& region, const std::vector<Value*>& leaves,
                     const Plan& p, const std::vector<Value*>& coords, const Type& lanes) {
  Value* t = tb.full(0.0, fused::lane_type(concat.result()->type.dtype, lanes));
  const size_t rows_group = p.view.size() - 2;
  int64_t start = 0;
  for (const Value* operand : concat.operands) {
    const int64_t s = operand->type.shape.back();
    if (s == 0) continue;
    const size_t l = leaf_index(region, operand);
    const std::vector<int64_t>& st = p.gather_strides[l];
    Value* base = tb.index(p.leaf_offsets[l]);
    bool aligned = p.leaf_offsets[l] % p.vector_width == 0;
    for (size_t g = 0; g < coords.size(); ++g) {
      aligned = aligned && st[g] % p.vector_width == 0;
      if (st[g] != 0) base = tb.add(base, tb.mul(coords[g], tb.index(st[g])));
    }
    t = tb.load2d_piece(t, leaves[l], base, tb.index(p.tile_rows), st[rows_group], start, start + s, aligned);
    start += s;
  }
  return t;
}

// The tile of a gather or take_along at the lanes from flat index `position`
// of the region's result: its operand x (a leaf) read at the lanes'
// coordinates, with the one along the axis replaced by the lane's index. A
// negative index counts from the end; the index is then clamped into the
// axis, so an out-of-range one (which the func's index guard reports) reads
// inside x.
Value* index_tile(TileBuilder& tb, const Op& op, Value* indices, const Region& region,
                  const std::vector<Value*>& leaves, const Plan& p, const Type& out, Value* position,
                  const Type& lanes) {
  Type i64 = lanes;
  i64.dtype = DType::I64;
  auto k = [&](int64_t v) { return tb.full(static_cast<double>(v), i64); };
  const IndexSpec s = index_spec(op);
  const Type& x = op.operands[0]->type;
  const int64_t q = op.operands[1]->type.rank();
  const std::vector<Value*> coord = lane_coords(tb, op.result()->type, out, position, i64);
  const size_t l = leaf_index(region, op.operands[0]);
  const std::vector<int64_t>& st = p.gather_strides[l];  // read_plan checked their reach
  Value* i = indices->type.dtype == DType::I64 ? indices : tb.map("cvt_i64", {indices});
  i = tb.map("select", {tb.map("lt", {i, k(0)}), tb.map("add", {i, k(s.extent)}), i});
  i = tb.map("min", {tb.map("max", {i, k(0)}), k(std::max<int64_t>(s.extent - 1, 0))});
  Value* addr = k(p.leaf_offsets[l]);
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (x.shape[d] == 1 || st[d] == 0) continue;
    // x's dim d in the result: the same dim (take_along; gather before the
    // axis) or shifted past the indices' dims (gather after the axis)
    Value* c = d == s.axis ? i : coord[s.along || d < s.axis ? d : d + q - 1];
    addr = tb.map("add", {addr, tb.map("mul", {c, k(st[d])})});
  }
  return tb.gather(leaves[l], addr, fused::lane_type(x.dtype, lanes));
}

}  // namespace

void build_kernel(Module& m, const std::string& sym, const Plan& p, const Op& sop) {
  auto k = new_tile_kernel(sym, p.programs, p.threads, p.vector_width, string_attr(sop, "artifact_hash"));
  const Region& region = *sop.regions[0];
  Region& body = *k->regions[0];
  std::vector<Value*> leaves = fused::add_leaf_args(body, region);
  Value* out = body.add_arg("out", Type::ptr(sop.result()->type.dtype));
  TileBuilder tb(body);
  // With tile_rows a tile is [tile_rows, vector dim]: a program's rows (all
  // along the next group, so each leaf's row stride is that group's stride),
  // one tile, no ragged end.
  const bool row_tile = p.tile_rows > 1;
  const Type lanes_t = row_tile ? Type::tile(p.compute, {p.tile_rows, p.view.back()})
                                : Type::tile(p.compute, {p.tile_lanes()});
  const Value* yielded = region.ops.back()->operands[0];
  const int64_t nchunks = p.chunks_per_row(), inner = p.view.back();

  Value* pid = tb.program_id();
  Value* block = tb.div(pid, tb.index(nchunks));
  Value* c0 = tb.mul(tb.rem(pid, tb.index(nchunks)), tb.index(p.chunk));
  Value* c1 = tb.min(tb.add(c0, tb.index(p.chunk)), tb.index(inner));
  Value* r0 = tb.mul(block, tb.index(p.rows_per_program));
  Value* r1 = tb.min(tb.add(r0, tb.index(p.rows_per_program)), tb.index(p.rows()));
  Value* lanes = tb.index(p.tile_lanes());
  tb.for_loop(
      r0, r1, tb.index(row_tile ? p.tile_rows : 1), {},
      [&](Value* row, const std::vector<Value*>&) -> std::vector<Value*> {
        // Leaf offsets of this row: its coordinate in each outer group, innermost first.
        std::vector<Value*> base;
        for (int64_t offset : p.leaf_offsets) base.push_back(tb.index(offset));
        std::vector<Value*> coords(p.view.size() - 1);  // the row's coordinate in each outer group
        Value* rest = row;
        for (size_t g = p.view.size() - 1; g-- > 0;) {
          Value* coord = coords[g] = g == 0 ? rest : tb.rem(rest, tb.index(p.view[g]));
          if (g > 0) rest = tb.div(rest, tb.index(p.view[g]));
          for (size_t l = 0; l < leaves.size(); ++l)
            if (p.leaf_strides[l][g]) base[l] = tb.add(base[l], tb.mul(coord, tb.index(p.leaf_strides[l][g])));
        }
        Value* out_base = tb.mul(row, tb.index(inner));
        auto tile_at = [&](Value* c, Value* count) {
          fused::Env env;
          return fused::eval(
              tb, region, yielded, lanes_t, env,
              [&](size_t l) {
                const int64_t vs = p.leaf_strides[l].back();
                if (row_tile) {
                  const int64_t rs = p.leaf_strides[l][p.view.size() - 2], vw = p.vector_width;
                  const Type t = fused::lane_type(region.args[l]->type.dtype, lanes_t);
                  if (rs == 0 && vs == 0) return tb.splat(tb.load(leaves[l], base[l], Type::scalar(t.dtype)), t);
                  // 16-byte vectors where every row of the leaf starts on one
                  bool aligned = vs == 1 && p.leaf_offsets[l] % vw == 0;
                  for (size_t g = 0; g + 1 < p.view.size(); ++g) aligned = aligned && p.leaf_strides[l][g] % vw == 0;
                  return tb.load2d(leaves[l], base[l], tb.index(p.tile_rows), tb.index(inner), rs, vs, aligned, t);
                }
                Value* at = vs == 0 ? base[l] : tb.add(base[l], vs == 1 ? c : tb.mul(c, tb.index(vs)));
                return fused::read_leaf(tb, leaves[l], at, vs, count,
                                        fused::lane_type(region.args[l]->type.dtype, lanes_t));
              },
              [&] { return tb.add(out_base, c); },
              [&](const Op& op, Value* indices) {
                if (!indices && row_tile && concat_by_pieces(op, region, p))
                  return concat_pieces(tb, op, region, leaves, p, coords, lanes_t);
                Value* position = tb.add(out_base, c);
                // (coordinates in the yielded shape: the result may be it reshaped)
                return indices ? index_tile(tb, op, indices, region, leaves, p, yielded->type, position, lanes_t)
                               : concat_tile(tb, op, region, leaves, p, yielded->type, position, lanes_t);
              });
        };
        if (row_tile) {  // the output's rows are contiguous: one tile store
          tb.store(out, out_base, tile_at(tb.index(0), nullptr));
          return {};
        }
        Value* n = tb.sub(c1, c0);
        Value* main_end = tb.sub(c1, tb.rem(n, lanes));
        tb.for_loop(c0, main_end, lanes, {}, [&](Value* c, const std::vector<Value*>&) -> std::vector<Value*> {
          tb.store(out, tb.add(out_base, c), tile_at(c, nullptr));
          return {};
        });
        // the ragged end of the row (a loop of at most one step)
        tb.for_loop(main_end, c1, lanes, {}, [&](Value* c, const std::vector<Value*>&) -> std::vector<Value*> {
          Value* count = tb.sub(c1, c);
          tb.store_masked(out, tb.add(out_base, c), count, tile_at(c, count));
          return {};
        });
        return {};
      });
  m.ops.push_back(std::move(k));
}

}  // namespace tessera::families::pointwise
