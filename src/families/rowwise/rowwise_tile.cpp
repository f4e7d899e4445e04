#include "families/rowwise/rowwise_tile.hpp"

#include <limits>

#include "families/fused/expr_tile.hpp"
#include "ir/schedule_dialect.hpp"

namespace tessera::families::rowwise {

using namespace tessera::ir;

namespace {

struct RowKernel {
  const Plan& p;
  TileBuilder& tb;
  const Region& region;
  const Op& core;
  std::vector<Value*> leaves;
  Value* out;
  Type lanes_t;
  bool rows;                                // rows strategy: lanes along the extent; else along inner (columns)
  Value* o;                                 // outer index of this program
  Value *col0 = nullptr, *ncols = nullptr;  // columns: first column and how many are real
  // staged rows: the row leaf's shared-memory stage and this program's row count so far
  Value *stage = nullptr, *iter = nullptr;
  // norm gradients: the partial-sums outputs, this program's row of them and,
  // for resident rows, the sums so far (tiles carried from row to row)
  std::vector<Value*> partials = {}, acc = {};
  Value* part_base = nullptr;
  // a norm gradient's partial-sum terms at a position: dy * n (and dy)
  std::function<std::vector<Value*>(Value*, fused::Env&, Value*, Value*)> partial_terms = nullptr;

  // A statistic is a scalar (rows) or a tile of per-column values (columns).
  Value* lift(Value* stat) { return stat->type.kind == TypeKind::Scalar ? tb.splat(stat, lanes_t) : stat; }
  Value* constant(double v, Value* like) {
    return like->type.kind == TypeKind::Scalar ? tb.fconst(v, lanes_t.dtype) : tb.full(v, lanes_t);
  }

  // Leaf l's element `base` within the buffer it reads (a view: its base's).
  Value* at_offset(Value* base, size_t l) { return p.offset(l) ? tb.add(base, tb.index(p.offset(l))) : base; }

  // The row `prefetch_rows` after row o of each leaf read a row at a time,
  // the last row standing in past the end (a hint: no branch needed, and a
  // repeated prefetch of a row in L2 costs little).
  void prefetch_ahead() {
    if (p.prefetch_rows <= 0 || p.outer <= 0) return;
    Value* ahead = tb.min(tb.add(o, tb.index(p.prefetch_rows)), tb.index(p.outer - 1));
    for (size_t l = 0; l < leaves.size(); ++l)
      if (p.row_leaf(l))
        tb.prefetch(leaves[l], at_offset(tb.mul(ahead, tb.index(p.leaf_strides[l][0])), l), tb.index(p.extent));
  }

  // Tiles of region values at extent position k; lanes at or past `count` are
  // not read (0). Memoized per position in env.
  Value* at(const Value* v, Value* k, Value* count, fused::Env& env) {
    return fused::eval(tb, region, v, lanes_t, env, [&](size_t l) {
      const std::vector<int64_t>& st = p.leaf_strides[l];
      if (stage && p.row_leaf(l))  // the whole row (k = 0), through shared memory
        return tb.load_staged(leaves[l], stage, o, tb.index(p.outer), iter, st[0], lanes_t);
      Value* base = tb.add(tb.mul(o, tb.index(st[0])), tb.mul(k, tb.index(st[1])));
      if (!rows) base = tb.add(base, tb.mul(col0, tb.index(st[2])));
      base = at_offset(base, l);
      return fused::read_leaf(tb, leaves[l], base, rows ? st[1] : st[2], count, lanes_t);
    });
  }
  Value* x_at(Value* k, Value* count, fused::Env& env) { return at(core.operands[0], k, count, env); }
  // A resident row's lane count for its reads: none (plain loads) when the
  // row fills the tile. The masked form kept a per-element fallback path
  // live, 45 registers instead of 32 for bf16 rms_norm (5 blocks an SM, not 8).
  Value* resident_count() { return p.extent == p.tile_lanes() ? nullptr : tb.index(p.extent); }
  // columns: only a ragged last block of columns needs masked reads
  Value* column_count() { return p.inner % p.tile_lanes() ? ncols : nullptr; }

  // combine-reduction over the extent of term(x, env) (rows: to a scalar).
  // Resident rows reuse the one tile env0 holds.
  using Term = std::function<Value*(Value* x, fused::Env& env)>;
  Value* term_k = nullptr;      // the position stat() is evaluating a term at
  Value* term_count = nullptr;  // and its lane count (null: a full tile)
  // A region value at the term's position (a gradient's dy, a norm's weight).
  Value* term_at(const Value* v, fused::Env& env) { return at(v, term_k, term_count, env); }
  Value* stat(const std::string& kind, const Term& term, fused::Env* env0) {
    const double id = combine_identity(kind);
    if (!rows) {  // per-column statistics: lanes are independent, no masking needed
      return tb.for_loop(tb.index(0), tb.index(p.extent), tb.index(1), {tb.full(id, lanes_t)},
                         [&](Value* k, const std::vector<Value*>& c) -> std::vector<Value*> {
                           fused::Env env;
                           term_k = k;
                           term_count = column_count();
                           return {tb.combine(kind, c[0], term(x_at(k, column_count(), env), env))};
                         })[0];
    }
    Value* n = tb.index(p.extent);
    if (env0) {  // a full tile needs no mask
      term_k = tb.index(0);
      term_count = resident_count();
      Value* t = term(x_at(tb.index(0), resident_count(), *env0), *env0);
      return tb.reduce_lanes(kind, p.extent == p.tile_lanes() ? t : tb.mask(t, n, id));
    }
    Value* lanes = tb.index(p.tile_lanes());
    Value* main_end = tb.sub(n, tb.rem(n, lanes));
    Value* acc = tb.for_loop(tb.index(0), main_end, lanes, {tb.full(id, lanes_t)},
                             [&](Value* k, const std::vector<Value*>& c) -> std::vector<Value*> {
                               fused::Env env;
                               term_k = k;
                               term_count = nullptr;
                               return {tb.combine(kind, c[0], term(x_at(k, nullptr, env), env))};
                             })[0];
    fused::Env env;
    Value* count = tb.sub(n, main_end);
    term_k = main_end;
    term_count = count;
    Value* tail = tb.mask(term(x_at(main_end, count, env), env), count, id);
    return tb.reduce_lanes(kind, tb.combine(kind, acc, tail));
  }

  // The most negative finite value of the lanes' type.
  double lowest_finite() const {
    return lanes_t.dtype == DType::F64 ? -1.7976931348623157e308 : -3.4028234663852886e38;
  }

  // Online softmax statistics of a streamed row: per lane a running max m
  // and a sum s of exp(x - m), rescaled when m grows; then the lanes merged.
  // Exponents subtract max(m, -MAX) (the most negative finite value), so lanes
  // that have seen only -inf keep s = 0 instead of exp(-inf + inf) = NaN; a
  // NaN or +inf still poisons the row, as the semantics say.
  std::pair<Value*, Value*> online_max_sum() {
    const double lowest = lowest_finite();
    const double inf = std::numeric_limits<double>::infinity();
    Value* floor_t = tb.full(lowest, lanes_t);
    auto step = [&](Value* m, Value* s, Value* x) -> std::pair<Value*, Value*> {
      Value* m_new = tb.map("max", {m, x});
      Value* base = tb.map("max", {m_new, floor_t});
      Value* scaled = tb.map("mul", {s, tb.map("exp", {tb.map("sub", {m, base})})});
      return {m_new, tb.map("add", {scaled, tb.map("exp", {tb.map("sub", {x, base})})})};
    };
    Value* n = tb.index(p.extent);
    Value* lanes = tb.index(p.tile_lanes());
    Value* main_end = tb.sub(n, tb.rem(n, lanes));
    std::vector<Value*> ms = tb.for_loop(tb.index(0), main_end, lanes, {tb.full(-inf, lanes_t), tb.full(0.0, lanes_t)},
                                         [&](Value* k, const std::vector<Value*>& c) -> std::vector<Value*> {
                                           fused::Env env;
                                           auto [m, s] = step(c[0], c[1], x_at(k, nullptr, env));
                                           return {m, s};
                                         });
    fused::Env env;
    Value* count = tb.sub(n, main_end);
    auto [m, s] = step(ms[0], ms[1], tb.mask(x_at(main_end, count, env), count, -inf));
    Value* row_max = tb.reduce_lanes("max", m);
    Value* base = tb.splat(tb.map("max", {row_max, tb.fconst(lowest, lanes_t.dtype)}), lanes_t);
    Value* row_sum = tb.reduce_lanes("sum", tb.map("mul", {s, tb.map("exp", {tb.map("sub", {m, base})})}));
    return {row_max, row_sum};
  }

  void build() {
    const bool resident = rows && p.resident;
    fused::Env env0;  // the resident row
    fused::Env* res = resident ? &env0 : nullptr;
    auto sub = [&](Value* a, Value* b) { return tb.map("sub", {a, b}); };
    auto mul = [&](Value* a, Value* b) { return tb.map("mul", {a, b}); };
    auto div = [&](Value* a, Value* b) { return tb.map("div", {a, b}); };
    const Value* w = core.operands.size() > 1 ? core.operands[1] : nullptr;
    const Value* bias = core.operands.size() > 2 ? core.operands[2] : nullptr;

    // Statistics, then a function from (x, env at k) to the op's output tile.
    std::function<Value*(Value*, fused::Env&, Value*, Value*)> output;
    if (p.online) {
      // Streamed rows: max and sum in one read (online), then the write pass.
      auto [m, s] = online_max_sum();
      Value* mt = lift(m);
      if (p.op == RowOp::Softmax) {
        Value* rs = lift(tb.map("div", {tb.fconst(1.0, lanes_t.dtype), s}));
        output = [&, mt, rs](Value* x, fused::Env&, Value*, Value*) { return mul(tb.map("exp", {sub(x, mt)}), rs); };
      } else {
        Value* ls = lift(tb.map("log", {s}));
        output = [&, ls, mt](Value* x, fused::Env&, Value*, Value*) { return sub(sub(x, mt), ls); };
      }
    } else if (stage && p.softmax_like()) {
      // Staged rows (a cluster's): each block's max and sum of exp over its
      // lanes, then one exchange of the pairs (tile.softmax_stats) instead of
      // a cluster reduction for the max and another for the sum; the block's
      // exp(x - its max) is rescaled, not recomputed. Exponents subtract
      // max(m, lowest), as in the online form: a block of only -inf adds 0.
      const double lowest = lowest_finite();
      Value* x = x_at(tb.index(0), nullptr, env0);
      Value* mb = tb.reduce_block_lanes("max", x);
      Value* base = tb.map("max", {mb, tb.fconst(lowest, lanes_t.dtype)});
      Value* e = tb.map("exp", {sub(x, lift(base))});
      auto [m, s] = tb.softmax_stats(mb, tb.reduce_block_lanes("sum", e));
      if (p.op == RowOp::Softmax) {
        Value* global = tb.map("max", {m, tb.fconst(lowest, lanes_t.dtype)});
        Value* scale = tb.map("div", {tb.map("exp", {tb.map("sub", {base, global})}), s});
        Value* st = lift(scale);
        output = [&, e, st](Value*, fused::Env&, Value*, Value*) { return mul(e, st); };
      } else {
        Value* mt = lift(m);
        Value* ls = lift(tb.map("log", {s}));
        output = [&, ls, mt](Value* x, fused::Env&, Value*, Value*) { return sub(sub(x, mt), ls); };
      }
    } else if (p.softmax_like()) {
      Value* m = stat(
          "max", [&](Value* x, fused::Env&) { return x; }, res);
      Value* mt = lift(m);
      Value* e_res = nullptr;  // resident: exp(x - m) once, for the sum and the output
      Value* row_base = tb.mul(o, tb.index(p.extent));
      Value* s = stat(
          "sum",
          [&](Value* x, fused::Env&) {
            Value* e = tb.map("exp", {sub(x, mt)});
            if (resident) e_res = e;
            if (p.stash_exp) {  // keep exp(x - m) in the output row; the write pass scales it
              Value* at_k = tb.add(row_base, term_k);
              if (term_count) tb.store_masked(out, at_k, term_count, e);
              else tb.store(out, at_k, e);
            }
            return e;
          },
          res);
      if (p.op == RowOp::Softmax) {  // times 1/s: one division a row, not one an element
        Value* rs = lift(tb.map("div", {constant(1.0, s), s}));
        output = [&, rs, mt, e_res, row_base](Value* x, fused::Env&, Value* k, Value* count) {
          Value* e = e_res;
          if (!e && p.stash_exp)
            e = count ? tb.load_masked(out, tb.add(row_base, k), count, lanes_t, 0.0)
                      : tb.load(out, tb.add(row_base, k), lanes_t);
          if (!e) e = tb.map("exp", {sub(x, mt)});
          return mul(e, rs);
        };
      } else {
        Value* ls = lift(tb.map("log", {s}));
        output = [&, ls, mt](Value* x, fused::Env&, Value*, Value*) { return sub(sub(x, mt), ls); };
      }
    } else if (p.op == RowOp::SoftmaxGrad || p.op == RowOp::LogSoftmaxGrad) {
      // softmax: dx = y (dy - sum(dy y)); log_softmax: dx = dy - exp(y) sum(dy) (x here is y)
      const Value* dy = core.operands[1];
      const bool log = p.op == RowOp::LogSoftmaxGrad;
      Value* s = stat(
          "sum",
          [&](Value* y, fused::Env& env) {
            Value* g = term_at(dy, env);
            return log ? g : mul(g, y);
          },
          res);
      Value* st = lift(s);
      output = [&, st, dy, log](Value* y, fused::Env& env, Value* k, Value* count) {
        Value* g = at(dy, k, count, env);
        return log ? sub(g, mul(tb.map("exp", {y}), st)) : mul(y, sub(g, st));
      };
    } else if (p.norm_grad()) {
      // n = (x - mean) r (rms_norm: x r), gw = dy w:
      // dx = r ((gw - mean(gw)) - n mean(gw n)) (rms_norm: no mean(gw)),
      // and the partial sums of dy n (dw) and dy (db).
      const bool layer = p.op == RowOp::LayerNormGrad;
      const Value* dy = core.operands[2];
      if (p.early_loads && res) {  // memoized in the resident row's env: loaded here, used below
        at(dy, tb.index(0), resident_count(), *res);
        at(w, tb.index(0), resident_count(), *res);
      }
      Value* mt = nullptr;
      if (layer) {
        Value* sum_x = stat(
            "sum", [&](Value* x, fused::Env&) { return x; }, res);
        mt = lift(div(sum_x, constant(static_cast<double>(p.extent), sum_x)));
      }
      Value* ss = stat(
          "sum",
          [&](Value* x, fused::Env&) {
            Value* d = layer ? sub(x, mt) : x;
            return mul(d, d);
          },
          res);
      Value* var = div(ss, constant(static_cast<double>(p.extent), ss));
      Value* rt = lift(tb.map("rsqrt", {tb.map("add", {var, constant(p.eps, var)})}));
      auto normed = [&, mt, rt, layer](Value* x) { return mul(layer ? sub(x, mt) : x, rt); };
      auto gw = [&, dy, w](fused::Env& env, Value* k, Value* count) {
        return mul(at(dy, k, count, env), at(w, k, count, env));
      };
      auto row_mean = [&](const Term& term) {
        Value* total = stat("sum", term, res);
        return lift(div(total, constant(static_cast<double>(p.extent), total)));
      };
      Value* bt = row_mean([&](Value* x, fused::Env& env) { return mul(gw(env, term_k, term_count), normed(x)); });
      Value* at_ = layer ? row_mean([&](Value*, fused::Env& env) { return gw(env, term_k, term_count); }) : nullptr;
      output = [&, gw, normed, rt, bt, at_, layer](Value* x, fused::Env& env, Value* k, Value* count) {
        Value* g = gw(env, k, count);
        return mul(rt, sub(layer ? sub(g, at_) : g, mul(normed(x), bt)));
      };
      partial_terms = [&, normed, dy, layer](Value* x, fused::Env& env, Value* k, Value* count) {
        Value* g = at(dy, k, count, env);
        std::vector<Value*> t = {mul(g, normed(x))};
        if (layer) t.push_back(g);
        return t;
      };
    } else if (p.op == RowOp::LayerNorm) {
      Value* probe = stat(
          "sum", [&](Value* x, fused::Env&) { return x; }, res);
      Value* mean = div(probe, constant(static_cast<double>(p.extent), probe));
      Value* mt = lift(mean);
      Value* var_sum = stat(
          "sum",
          [&](Value* x, fused::Env&) {
            Value* d = sub(x, mt);
            return mul(d, d);
          },
          res);
      Value* var = div(var_sum, constant(static_cast<double>(p.extent), var_sum));
      Value* r = lift(tb.map("rsqrt", {tb.map("add", {var, constant(p.eps, var)})}));
      output = [&, mt, r](Value* x, fused::Env& env, Value* k, Value* count) {
        Value* y = mul(mul(sub(x, mt), r), at(w, k, count, env));
        return tb.map("add", {y, at(bias, k, count, env)});
      };
    } else {  // rms_norm
      Value* ss = stat(
          "sum", [&](Value* x, fused::Env&) { return mul(x, x); }, res);
      Value* ms = div(ss, constant(static_cast<double>(p.extent), ss));
      Value* r = lift(tb.map("rsqrt", {tb.map("add", {ms, constant(p.eps, ms)})}));
      output = [&, r](Value* x, fused::Env& env, Value* k, Value* count) {
        return mul(mul(x, r), at(w, k, count, env));
      };
    }

    // The output pass: the op's result, then the fused epilogue, stored.
    const Value* yielded = region.ops.back()->operands[0];
    if (p.pick) {  // one element: the row's index, wrapped and clamped into it, read in lane 0
      const Value* indices = yielded->def->operands[1];
      size_t l = 0;
      while (region.args[l].get() != indices) ++l;
      const Type it = Type::scalar(indices->type.dtype);
      auto c = [&](int64_t v) { return tb.full(static_cast<double>(v), it); };
      Value* i = tb.load(leaves[l], at_offset(tb.mul(o, tb.index(p.leaf_strides[l][0])), l), it);
      i = tb.map("select", {tb.map("lt", {i, c(0)}), tb.map("add", {i, c(p.extent)}), i});
      Value* k = tb.to_index(tb.map("min", {tb.map("max", {i, c(0)}), c(p.extent - 1)}));
      fused::Env env;
      Value* one = tb.index(1);
      tb.store_masked(out, o, one, output(x_at(k, one, env), env, k, one));
      return;
    }
    auto result_at = [&](Value* k, Value* count, fused::Env& env) {
      env[core.result()] = output(x_at(k, count, env), env, k, count);
      return at(yielded, k, count, env);
    };
    // A norm gradient's partial sums take this position's terms: resident
    // rows in the carried tiles, streamed ones in the program's partials row.
    auto accumulate = [&](Value* k, Value* count, fused::Env& env) {
      if (!partial_terms) return;
      std::vector<Value*> t = partial_terms(x_at(k, count, env), env, k, count);
      for (size_t i = 0; i < t.size(); ++i) {
        if (resident) {
          acc[i] = tb.map("add", {acc[i], t[i]});
          continue;
        }
        Value* at_k = tb.add(part_base, k);
        Value* old = count ? tb.load_masked(partials[i], at_k, count, lanes_t, 0.0)
                           : tb.load(partials[i], at_k, lanes_t);
        Value* sum = tb.map("add", {old, t[i]});
        if (count) tb.store_masked(partials[i], at_k, count, sum);
        else tb.store(partials[i], at_k, sum);
      }
    };
    Value* n = tb.index(p.extent);
    if (!rows) {
      Value* base = tb.add(tb.mul(o, tb.index(p.extent * p.inner)), col0);
      const bool ragged = p.inner % p.tile_lanes() != 0;
      tb.for_loop(tb.index(0), n, tb.index(1), {}, [&](Value* k, const std::vector<Value*>&) -> std::vector<Value*> {
        fused::Env env;
        Value* at_k = tb.add(base, tb.mul(k, tb.index(p.inner)));
        Value* y = result_at(k, column_count(), env);
        if (ragged) tb.store_masked(out, at_k, ncols, y);
        else tb.store(out, at_k, y);
        return {};
      });
      return;
    }
    Value* row_base = tb.mul(o, n);
    if (resident) {
      Value* y = result_at(tb.index(0), resident_count(), env0);
      if (p.extent == p.tile_lanes()) tb.store(out, row_base, y);
      else tb.store_masked(out, row_base, n, y);
      accumulate(tb.index(0), resident_count(), env0);
      return;
    }
    Value* lanes = tb.index(p.tile_lanes());
    Value* main_end = tb.sub(n, tb.rem(n, lanes));
    tb.for_loop(tb.index(0), main_end, lanes, {}, [&](Value* k, const std::vector<Value*>&) -> std::vector<Value*> {
      fused::Env env;
      tb.store(out, tb.add(row_base, k), result_at(k, nullptr, env));
      accumulate(k, nullptr, env);
      return {};
    });
    fused::Env env;
    Value* count = tb.sub(n, main_end);
    tb.store_masked(out, tb.add(row_base, main_end), count, result_at(main_end, count, env));
    accumulate(main_end, count, env);
  }

  // Zeros in this program's row of each partials output (streamed rows add
  // into it row by row).
  void clear_partials() {
    Value* n = tb.index(p.extent);
    Value* lanes = tb.index(p.tile_lanes());
    Value* main_end = tb.sub(n, tb.rem(n, lanes));
    for (Value* part : partials) {
      tb.for_loop(tb.index(0), main_end, lanes, {}, [&](Value* k, const std::vector<Value*>&) -> std::vector<Value*> {
        tb.store(part, tb.add(part_base, k), tb.full(0.0, lanes_t));
        return {};
      });
      tb.store_masked(part, tb.add(part_base, main_end), tb.sub(n, main_end), tb.full(0.0, lanes_t));
    }
  }
};

}  // namespace

void build_kernel(Module& m, const std::string& sym, const Plan& p, const Op& sop) {
  auto k = new_tile_kernel(sym, p.programs, p.threads, p.vector_width, string_attr(sop, "artifact_hash"));
  if (p.cluster > 1) k->attrs["cluster"] = p.cluster;  // tiles span the cluster's blocks
  // Above the portable 8, two blocks an SM (64 registers a thread): a cluster
  // of 16 spans 8 SMs, and two clusters on them overlap their phases.
  if (p.cluster > 8) k->attrs["min_blocks"] = 2;
  // Staged rows: persistent programs; the runtime launches as many as fit.
  if (p.staged) k->attrs["persistent"] = true;
  const Region& region = *sop.regions[0];
  const Op* core = nullptr;
  for (auto& op : region.ops)
    if (op->name == std::string("tessera.") + enum_name(p.op)) core = op.get();
  if (!core) fail("E302", std::string("schedule.rowwise: the region has no tessera.") + enum_name(p.op), sop.loc);
  Region& body = *k->regions[0];
  std::vector<Value*> leaves = fused::add_leaf_args(body, region);
  Value* out = body.add_arg("out", Type::ptr(sop.result()->type.dtype));
  std::vector<Value*> partials;
  for (size_t r = 1; r <= p.partials(); ++r)
    partials.push_back(body.add_arg("partials" + std::to_string(r), Type::ptr(p.compute)));
  TileBuilder tb(body);
  RowKernel kern{
      p,      tb, region, *core, leaves, out, Type::tile(p.compute, {p.tile_lanes()}), p.strategy == Strategy::Rows,
      nullptr};
  Value* pid = tb.program_id();
  if (p.norm_grad()) {
    // rows [first, first + rows_per_program) of the view, clipped at the end
    Value* first = tb.mul(pid, tb.index(p.rows_per_program));
    Value* count = tb.min(tb.index(p.rows_per_program), tb.sub(tb.index(p.outer), first));
    kern.partials = partials;
    kern.part_base = tb.mul(pid, tb.index(p.extent));
    std::vector<Value*> zeros;
    if (p.resident) zeros.assign(partials.size(), tb.full(0.0, kern.lanes_t));
    else kern.clear_partials();
    std::vector<Value*> sums = tb.for_loop(tb.index(0), count, tb.index(1), zeros,
                                           [&](Value* i, const std::vector<Value*>& c) {
                                             kern.o = tb.add(first, i);
                                             kern.prefetch_ahead();
                                             kern.acc = c;
                                             kern.build();
                                             return kern.acc;
                                           });
    for (size_t i = 0; i < sums.size(); ++i) {
      if (p.extent == p.tile_lanes()) tb.store(partials[i], kern.part_base, sums[i]);
      else tb.store_masked(partials[i], kern.part_base, tb.index(p.extent), sums[i]);
    }
    m.ops.push_back(std::move(k));
    return;
  }
  if (p.walk) {
    // rows [first, first + rows_per_program), clipped at the end
    Value* first = tb.mul(pid, tb.index(p.rows_per_program));
    Value* count = tb.min(tb.index(p.rows_per_program), tb.sub(tb.index(p.outer), first));
    tb.for_loop(tb.index(0), count, tb.index(1), {}, [&](Value* i, const std::vector<Value*>&) -> std::vector<Value*> {
      kern.o = tb.add(first, i);
      kern.prefetch_ahead();
      kern.build();
      return {};
    });
    m.ops.push_back(std::move(k));
    return;
  }
  if (p.staged) {
    // Rows pid, pid + programs, ... (the runtime launches at most p.outer
    // programs, so every program has at least one).
    const int64_t l = p.staged_leaf();
    kern.stage = tb.scratch(p.extent / p.cluster, leaves[l]->type.dtype);
    Value* np = tb.num_programs();
    Value* iters = tb.div(tb.add(tb.sub(tb.index(p.outer), pid), tb.sub(np, tb.index(1))), np);
    tb.for_loop(tb.index(0), iters, tb.index(1), {}, [&](Value* i, const std::vector<Value*>&) -> std::vector<Value*> {
      kern.iter = i;
      kern.o = tb.add(pid, tb.mul(i, np));
      kern.build();
      return {};
    });
    m.ops.push_back(std::move(k));
    return;
  }
  if (kern.rows) {
    kern.o = pid;
    kern.prefetch_ahead();
  } else {
    const int64_t blocks = p.column_blocks();
    kern.o = tb.div(pid, tb.index(blocks));
    kern.col0 = tb.mul(tb.rem(pid, tb.index(blocks)), tb.index(p.tile_lanes()));
    kern.ncols = tb.min(tb.index(p.tile_lanes()), tb.sub(tb.index(p.inner), kern.col0));
  }
  kern.build();
  m.ops.push_back(std::move(k));
}

}  // namespace tessera::families::rowwise
