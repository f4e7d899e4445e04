#include "families/reduce/reduce_tile.hpp"

#include "families/fused/expr_tile.hpp"
#include "ir/tile_dialect.hpp"
#include "support/checked_math.hpp"

namespace tessera::families::reduce {

using namespace tessera::ir;

namespace {

struct Kernel {
  const Pass& p;
  TileBuilder& tb;
  Value* in;
  Value* out;
  double identity;
  Type lanes_t;                      // tile<lanes x accum>
  const Region* prologue = nullptr;  // fused pointwise ops; `in` is unused then
  std::vector<Value*> leaves;        // their inputs

  // The input tile at [o, k, i] (k0 + lane along the extent for rows, i + lane
  // along inner for columns), lanes at or past `count` (if given) holding the
  // identity. Without a prologue this is a load at `flat`, the offset the
  // caller already has.
  Value* input(Value* flat, Value* o, Value* k, Value* i, Value* count) {
    if (!prologue) return count ? tb.load_masked(in, flat, count, lanes_t, identity) : tb.load(in, flat, lanes_t);
    fused::Env env;
    const bool rows = p.strategy == Strategy::Rows;
    Value* v = fused::eval(tb, *prologue, prologue->ops.back()->operands[0], lanes_t, env, [&](size_t l) {
      const std::vector<int64_t>& st = p.leaf_strides[l];
      Value* base = tb.add(tb.add(tb.mul(o, tb.index(st[0])), tb.mul(k, tb.index(st[1]))), tb.mul(i, tb.index(st[2])));
      if (p.leaf_offsets[l]) base = tb.add(base, tb.index(p.leaf_offsets[l]));  // a view, within its base buffer
      return fused::read_leaf(tb, leaves[l], base, rows ? st[1] : st[2], count, lanes_t);
    });
    return count ? tb.mask(v, count, identity) : v;
  }

  // Row `row` of the [outer, chunks] output grid reads extent range [k0, k1)
  // of outer index o.
  struct Span {
    Value* o;
    Value* k0;
    Value* k1;
  };
  Span span(Value* row) {
    if (p.chunks == 1) return {row, tb.index(0), tb.index(p.extent)};
    Value* chunks = tb.index(p.chunks);
    Value* len = tb.index(p.chunk_len());
    Value* k0 = tb.mul(tb.rem(row, chunks), len);
    return {tb.div(row, chunks), k0, tb.min(tb.add(k0, len), tb.index(p.extent))};
  }

  Value* finalize(Value* v) {
    if (p.finalize != Finalize::Mean) return v;
    Value* n = tb.fconst(static_cast<double>(p.mean_count), p.accum);
    if (v->type.kind == TypeKind::Tile) n = tb.full(static_cast<double>(p.mean_count), v->type);
    return tb.divf(v, n);
  }

  // Each program reduces rows_per_program contiguous rows of length extent,
  // rows_in_flight of them in lockstep (more DRAM streams in flight; each row
  // still combines in exactly the order it would alone).
  void rows() {
    const int64_t nrows = p.outer * p.chunks;
    Value* rpp = tb.index(p.rows_per_program);
    Value* r0 = tb.mul(tb.program_id(), rpp);
    Value* r1 = tb.min(tb.add(r0, rpp), tb.index(nrows));
    Value* lanes = tb.index(p.tile_lanes());
    Value* grouped_end = r0;
    if (p.rows_in_flight > 1) {
      Value* group = tb.index(p.rows_in_flight);
      grouped_end = tb.add(r0, tb.sub(tb.sub(r1, r0), tb.rem(tb.sub(r1, r0), group)));
      tb.for_loop(r0, grouped_end, group, {}, [&](Value* row, const std::vector<Value*>&) -> std::vector<Value*> {
        reduce_rows(row, p.rows_in_flight, lanes);
        return {};
      });
    }
    tb.for_loop(grouped_end, r1, tb.index(1), {}, [&](Value* row, const std::vector<Value*>&) -> std::vector<Value*> {
      reduce_rows(row, 1, lanes);
      return {};
    });
  }

  // Rows [row, row + count) have equal spans (count > 1 only when chunks == 1).
  void reduce_rows(Value* first, int64_t count, Value* lanes) {
    std::vector<Value*> rows, starts, os, k0s;
    Span s{nullptr, nullptr, nullptr};
    Value* zero = prologue ? tb.index(0) : nullptr;
    for (int64_t g = 0; g < count; ++g) {
      rows.push_back(g == 0 ? first : tb.add(first, tb.index(g)));
      s = span(rows.back());
      starts.push_back(tb.add(tb.mul(s.o, tb.index(p.extent)), s.k0));
      os.push_back(s.o);
      k0s.push_back(s.k0);
    }
    Value* n = tb.sub(s.k1, s.k0);
    Value* main_len = tb.sub(n, tb.rem(n, lanes));
    std::vector<Value*> init(count, tb.full(identity, lanes_t));
    std::vector<Value*> accs = tb.for_loop(
        tb.index(0), main_len, lanes, init, [&](Value* k, const std::vector<Value*>& c) -> std::vector<Value*> {
          std::vector<Value*> next;
          for (int64_t g = 0; g < count; ++g)
            next.push_back(
                tb.combine(enum_name(p.combine), c[g],
                           input(tb.add(starts[g], k), os[g], prologue ? tb.add(k0s[g], k) : nullptr, zero, nullptr)));
          return next;
        });
    for (int64_t g = 0; g < count; ++g) {
      Value* tail = input(tb.add(starts[g], main_len), os[g], prologue ? tb.add(k0s[g], main_len) : nullptr, zero,
                          tb.rem(n, lanes));
      Value* total = tb.reduce_lanes(enum_name(p.combine), tb.combine(enum_name(p.combine), accs[g], tail));
      tb.store(out, rows[g], finalize(total));
    }
  }

  // Combines freshly loaded rows into an accumulator tile: the rows as a
  // balanced tree, then into acc (short dependency chains: max/min measured
  // faster), always in one fixed order. Not for prod: multiplying near-one
  // factors together in f32 drops their second-order term every time (a
  // bias, not noise: 2.5e-4 relative over 3e5 factors, caught by the oracle),
  // while a running product does not.
  Value* fold(Value* acc, std::vector<Value*> vs) {
    if (p.combine == Combine::Prod) {
      for (Value* v : vs) acc = tb.combine(enum_name(p.combine), acc, v);
      return acc;
    }
    while (vs.size() > 1) {
      std::vector<Value*> next;
      for (size_t i = 0; i + 1 < vs.size(); i += 2) next.push_back(tb.combine(enum_name(p.combine), vs[i], vs[i + 1]));
      if (vs.size() % 2) next.push_back(vs.back());
      vs = std::move(next);
    }
    return tb.combine(enum_name(p.combine), acc, vs[0]);
  }

  // Each program owns columns_per_program columns of one output row and walks
  // down its span of the extent, row_unroll rows per step (several DRAM
  // streams in flight). The accumulator is a scratch row (CPU: L1-resident,
  // wider than a tile) or a single register tile (GPU: a tile spread over the
  // block's threads).
  void columns() {
    if (p.row_groups > 1) return grouped_columns();
    const int64_t cpp = p.columns_per_program;
    const int64_t blocks = (p.inner + cpp - 1) / cpp;
    Value* pid = tb.program_id();
    Value* row = tb.div(pid, tb.index(blocks));
    Value* col0 = tb.mul(tb.rem(pid, tb.index(blocks)), tb.index(cpp));
    Value* ncols = tb.min(tb.index(cpp), tb.sub(tb.index(p.inner), col0));
    Value* lanes = tb.index(p.tile_lanes());
    Value* zero = tb.index(0);
    Value* one = tb.index(1);
    Value* inner = tb.index(p.inner);
    Value* extent = tb.index(p.extent);
    Span s = span(row);
    auto row_base = [&](Value* k) { return tb.add(tb.mul(tb.add(tb.mul(s.o, extent), k), inner), col0); };
    auto load_rows = [&](Value* k, int64_t rows, Value* j, bool masked) {
      Value* base = row_base(k);
      std::vector<Value*> vs;
      for (int64_t u = 0; u < rows; ++u) {
        Value* at = tb.add(tb.add(base, tb.index(u * p.inner)), j);
        vs.push_back(input(at, s.o, prologue ? tb.add(k, tb.index(u)) : nullptr, prologue ? tb.add(col0, j) : nullptr,
                           masked ? tb.sub(ncols, j) : nullptr));
      }
      return vs;
    };
    Value* step = tb.index(p.row_unroll);
    Value* n = tb.sub(s.k1, s.k0);
    Value* k_main = tb.add(s.k0, tb.sub(n, tb.rem(n, step)));
    Value* out_base = tb.add(tb.mul(row, inner), col0);

    if (p.accumulator == Accumulator::Registers) {  // one tile, carried through the row loops
      const bool masked = p.inner % cpp != 0;       // only a ragged last block needs masks
      auto step_rows = [&](int64_t rows) {
        return [&, rows](Value* k, const std::vector<Value*>& c) -> std::vector<Value*> {
          return {fold(c[0], load_rows(k, rows, zero, masked))};
        };
      };
      Value* acc = tb.for_loop(s.k0, k_main, step, {tb.full(identity, lanes_t)}, step_rows(p.row_unroll))[0];
      acc = tb.for_loop(k_main, s.k1, one, {acc}, step_rows(1))[0];
      if (masked) tb.store_masked(out, out_base, ncols, finalize(acc));
      else tb.store(out, out_base, finalize(acc));
      return;
    }

    Value* nfull = tb.sub(ncols, tb.rem(ncols, lanes));
    Value* acc = tb.scratch(cpp, p.accum);
    tb.for_loop(zero, tb.index(cpp), lanes, {}, [&](Value* j, const std::vector<Value*>&) -> std::vector<Value*> {
      tb.store(acc, j, tb.full(identity, lanes_t));
      return {};
    });
    auto accumulate = [&](int64_t rows) {
      return [&, rows](Value* k, const std::vector<Value*>&) -> std::vector<Value*> {
        for (bool masked : {false, true})
          tb.for_loop(masked ? nfull : zero, masked ? ncols : nfull, lanes, {},
                      [&](Value* j, const std::vector<Value*>&) -> std::vector<Value*> {
                        tb.store(acc, j, fold(tb.load(acc, j, lanes_t), load_rows(k, rows, j, masked)));
                        return {};
                      });
        return {};
      };
    };
    tb.for_loop(s.k0, k_main, step, {}, accumulate(p.row_unroll));
    tb.for_loop(k_main, s.k1, one, {}, accumulate(1));
    tb.for_loop(zero, nfull, lanes, {}, [&](Value* j, const std::vector<Value*>&) -> std::vector<Value*> {
      tb.store(out, tb.add(out_base, j), finalize(tb.load(acc, j, lanes_t)));
      return {};
    });
    tb.for_loop(nfull, ncols, lanes, {}, [&](Value* j, const std::vector<Value*>&) -> std::vector<Value*> {
      tb.store_masked(out, tb.add(out_base, j), tb.sub(ncols, j), finalize(tb.load(acc, j, lanes_t)));
      return {};
    });
  }

  // Row groups: the tile is [G, C] (C = columns_per_program), row g of it
  // the group of threads that reads rows k + g, k + G + g, ... of the span;
  // each step loads row_unroll such slabs (rows past the span and columns
  // past the output load 0, a sum's identity), and at the end the groups'
  // partial sums are folded in group order into row 0, which is stored.
  void grouped_columns() {
    const int64_t G = p.row_groups, cpp = p.columns_per_program;
    const int64_t blocks = (p.inner + cpp - 1) / cpp;
    const Type slab_t = Type::tile(p.accum, {G, cpp});
    Value* pid = tb.program_id();
    Value* row = tb.div(pid, tb.index(blocks));
    Value* col0 = tb.mul(tb.rem(pid, tb.index(blocks)), tb.index(cpp));
    Value* ncols = tb.min(tb.index(cpp), tb.sub(tb.index(p.inner), col0));
    Value* inner = tb.index(p.inner);
    Span s = span(row);
    const bool aligned = p.inner % p.vector_width == 0;  // every row and col0 start on a vector
    Value* step = tb.index(G * p.row_unroll);
    Value* acc = tb.for_loop(
        s.k0, s.k1, step, {tb.full(identity, slab_t)},
        [&](Value* k, const std::vector<Value*>& c) -> std::vector<Value*> {
          std::vector<Value*> slabs;
          for (int64_t u = 0; u < p.row_unroll; ++u) {
            Value* k_u = tb.add(k, tb.index(u * G));
            Value* base = tb.add(tb.mul(tb.add(tb.mul(s.o, tb.index(p.extent)), k_u), inner), col0);
            slabs.push_back(tb.load2d(in, base, tb.sub(s.k1, k_u), ncols, p.inner, 1, aligned, slab_t));
          }
          return {fold(c[0], slabs)};
        })[0];
    Value* total = finalize(tb.fold_rows(enum_name(p.combine), acc));
    tb.store2d(out, tb.add(tb.mul(row, inner), col0), tb.index(1), ncols, total, p.inner, aligned);
  }
};

// The programs the split gives; -1 when a field is out of range or the count
// overflows (a hand-made schedule: the caller refuses it).
int64_t expected_programs(const Pass& p) {
  auto ceil_div = [](int64_t a, int64_t b) -> int64_t { return a >= 0 && b > 0 ? a / b + (a % b != 0) : -1; };
  const int64_t rows = checked_product({p.outer, p.chunks}).value_or(-1);
  if (rows < 0) return -1;
  if (p.strategy == Strategy::Rows) return ceil_div(rows, p.rows_per_program);
  const int64_t columns = ceil_div(p.inner, p.columns_per_program);
  return columns < 0 ? -1 : checked_product({rows, columns}).value_or(-1);
}

}  // namespace

void build_kernel(Module& m, const std::string& sym, const Pass& p, const std::string& artifact_hash,
                  const Region* prologue) {
  if (const int64_t expected = expected_programs(p); expected < 0 || expected != p.programs)
    fail("E302", "schedule records " + std::to_string(p.programs) + " programs but its split gives " +
                     (expected < 0 ? std::string("none (a field out of range)") : std::to_string(expected)));
  auto k = new_tile_kernel(sym, p.programs, p.threads, p.vector_width, artifact_hash);
  Region& body = *k->regions[0];
  std::vector<Value*> leaves;
  Value* in = nullptr;
  if (prologue) leaves = fused::add_leaf_args(body, *prologue);
  else in = body.add_arg("in", Type::ptr(p.in_dtype));
  Value* out = body.add_arg("out", Type::ptr(p.out_dtype));
  TileBuilder tb(body);
  Kernel kern{p,        tb,    in, out, combine_identity(enum_name(p.combine)), Type::tile(p.accum, {p.tile_lanes()}),
              prologue, leaves};
  if (p.strategy == Strategy::Rows) kern.rows();
  else kern.columns();
  m.ops.push_back(std::move(k));
}

}  // namespace tessera::families::reduce
