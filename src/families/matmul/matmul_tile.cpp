#include "families/matmul/matmul_tile.hpp"

#include <algorithm>

#include "families/fused/expr_tile.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/schedule_dialect.hpp"
#include "ir/target_dialect.hpp"

namespace tessera::families::matmul {

using namespace tessera::ir;

namespace {

// A library candidate: a tile.extern_kernel of buffers (a, b, out), or (a,
// b, c, out) with an addend, whose attributes the Target IR records as the
// call (ir/library_call.hpp).
void build_library_call(Module& m, const std::string& sym, const Plan& p, const Op& sop) {
  auto k = std::make_unique<Op>();
  k->name = "tile.extern_kernel";
  k->sym = sym;
  k->attrs["library"] = p.candidate;
  k->attrs["artifact_hash"] = string_attr(sop, "artifact_hash");
  k->attrs["batch"] = p.batch;
  k->attrs["m"] = p.m;
  k->attrs["n"] = p.n;
  k->attrs["k"] = p.k;
  k->attrs["transpose_a"] = p.transpose_a;
  k->attrs["transpose_b"] = p.transpose_b;
  k->attrs["a_batch_stride"] = p.a_batch_stride;
  k->attrs["b_batch_stride"] = p.b_batch_stride;
  Region& body = k->add_region();
  body.add_arg("a", Type::ptr(p.operand));
  body.add_arg("b", Type::ptr(p.operand));
  if (p.c_leaf >= 0) {
    k->attrs["add_c"] = true;
    body.add_arg("c", Type::ptr(sop.result()->type.dtype));
  }
  body.add_arg("out", Type::ptr(sop.result()->type.dtype));
  m.ops.push_back(std::move(k));
}

// The tensor map of one operand of a TMA block (tessera_matmul_tma.cuh):
// K-major (A row-major, B stored N x K): dims {K, rows}, one box of
// {64, block rows} per stage; MN-major: dims {rows, K}, boxes of {64, 64}.
// A batched operand has the batch as its third dim (rows past M of one
// matrix are then out of bounds, zero-filled, not the next matrix's); a
// shared one (batch stride 0) is 2-D. The 128-byte swizzle is the wgmma layout.
TensorMapDesc operand_map(const Plan& p, const Value* buffer, bool k_major, int64_t rows, int64_t block_rows,
                          int64_t batch_stride, int64_t param) {
  const int64_t es = static_cast<int64_t>(dtype_size(p.operand));
  TensorMapDesc t;
  t.buffer = buffer->name;
  t.dtype = p.operand;
  t.dims = k_major ? std::vector<int64_t>{p.k, rows} : std::vector<int64_t>{rows, p.k};
  t.strides = {t.dims[0] * es};
  t.box = {p.bk, k_major ? block_rows : 64};
  if (batch_stride) {
    t.dims.push_back(p.batch);
    t.strides.push_back(batch_stride * es);
    t.box.push_back(1);
  }
  t.swizzle = 128;
  t.param = param;
  return t;
}

}  // namespace

void build_kernel(Module& m, const std::string& sym, const Plan& p, const Op& sop) {
  if (!is_synthesized(p.candidate)) return build_library_call(m, sym, p, sop);
  auto k = new_tile_kernel(sym, p.programs, p.threads, p.vector_width, string_attr(sop, "artifact_hash"));
  if (p.min_blocks > 1) k->attrs["min_blocks"] = p.min_blocks;
  const Region& region = *sop.regions[0];
  const Op* core = nullptr;
  std::vector<const Op*> ops;
  for (auto& op : region.ops) {
    ops.push_back(op.get());
    if (op->name == "tessera.matmul") core = op.get();
  }
  const Op* halves = halves_split(ops, *core);
  const Op* norm = norm_prologue(ops, *core);
  Region& body = *k->regions[0];
  std::vector<Value*> leaves = fused::add_leaf_args(body, region);
  Value* out = body.add_arg("out", Type::ptr(sop.result()->type.dtype));
  TileBuilder tb(body);
  auto idx = [&](int64_t v) { return tb.index(v); };

  // Program -> (batch, block row, block column), block rows in groups of
  // group_m: consecutive programs share B's panels and a few of A's.
  const int64_t per_batch = std::max<int64_t>(p.tiles_m() * p.tiles_n(), 1);
  const int64_t width = std::max<int64_t>(p.group_m * p.tiles_n(), 1);
  Value* pid = tb.program_id();
  Value* batch = tb.div(pid, idx(per_batch));
  Value* t = tb.rem(pid, idx(per_batch));
  Value* first_m = tb.mul(tb.div(t, idx(width)), idx(p.group_m));
  Value* group_size = tb.min(tb.sub(idx(p.tiles_m()), first_m), idx(p.group_m));
  Value* within = tb.rem(t, idx(width));
  Value* m0 = tb.mul(tb.add(first_m, tb.rem(within, group_size)), idx(p.bm));
  // n0: the block's first column of the result (of each half, with halves).
  Value* n0 = tb.mul(tb.div(within, group_size), idx(p.out_bn()));
  Value* mrows = tb.min(idx(p.bm), tb.sub(idx(p.m), m0));
  Value* ncols = tb.min(idx(p.out_bn()), tb.sub(idx(p.out_n()), n0));

  // The f32 block of A x B, row-major in scratch.
  Value* scratch = tb.scratch(p.scratch, DType::F32);
  AttrDict mm = {{"k", Attr(p.k)},
                 {"block", Attr::ints({p.bm, p.bn, p.bk})},
                 {"warps", Attr::ints({p.wm, p.wn})},
                 {"stages", Attr(p.stages)},
                 {"a_strides", Attr::ints({p.sam(), p.sak()})},
                 {"b_strides", Attr::ints({p.sbk(), p.sbn()})},
                 {"vec", Attr::ints({p.vec_a, p.vec_b})}};
  if (p.tma) {
    // A and B come as the kernel's tensor maps 0 and 1 (after its buffers),
    // copied by a producer warpgroup launched beyond `threads`.
    const int64_t first = static_cast<int64_t>(body.args.size());
    const bool a_km = !p.transpose_a, b_km = p.transpose_b;
    k->attrs["tensor_maps"] = Attr(
        AttrList{Attr(operand_map(p, leaves[p.a_leaf], a_km, p.m, p.bm, p.a_batch_stride, first).str()),
                 Attr(operand_map(p, leaves[p.b_leaf], b_km, p.n, p.out_bn(), p.b_batch_stride, first + 1).str())});
    k->attrs["producer_threads"] = Plan::kTmaProducerThreads;
    k->attrs["min_blocks"] = p.min_blocks;  // one block an SM: the register cap of its three warpgroups
    mm["tma"] = Attr::ints({a_km, b_km, p.a_batch_stride != 0, p.b_batch_stride != 0});
    if (p.halves) mm["b_half"] = p.n / 2;
    tb.matmul({leaves[p.a_leaf], leaves[p.b_leaf], scratch, batch, m0, n0}, mm);
  } else {
    Value* a_base = tb.add(tb.mul(batch, idx(p.a_batch_stride)), tb.mul(m0, idx(p.sam())));
    Value* b_base = tb.add(tb.mul(batch, idx(p.b_batch_stride)), tb.mul(n0, idx(p.sbn())));
    // Row-major f32 A through registers (tessera_matmul_simt_stage_a.cuh).
    if (p.stage_a) mm["stage_a"] = true;
    std::vector<Value*> operands = {leaves[p.a_leaf], leaves[p.b_leaf], scratch, a_base, b_base, mrows, ncols};
    // An RMSNorm prologue: the block is rms_norm(A, w) x B (tile.matmul norm_eps).
    if (norm) {
      mm["norm_eps"] = row_op_eps(*norm);
      operands.push_back(leaves[p.norm_leaf]);
    }
    tb.matmul(operands, mm);
  }

  // The epilogue, a slab of rows at a time: the region evaluated on the
  // accumulator's tiles, leaves read by their [batch, m, n] strides.
  const Type slab_t = Type::tile(DType::F32, {p.slab_rows, p.out_bn()});
  const Value* yielded = region.ops.back()->operands[0];
  const int64_t vw = p.vector_width;
  auto aligned = [&](int64_t sb, int64_t sm, int64_t sn) {
    return sn == 1 && sm % vw == 0 && sb % vw == 0 && p.out_bn() % vw == 0;
  };
  auto leaf_base = [&](const std::vector<int64_t>& st, Value* row) {
    return tb.add(tb.add(tb.mul(batch, idx(st[0])), tb.mul(row, idx(st[1]))), tb.mul(n0, idx(st[2])));
  };
  // A leaf broadcast along the rows (a bias over the columns) has the same
  // lanes in every slab: loaded once, before the loop, not with a global
  // round trip a slab that the block's few warps cannot hide (a third of the
  // fused bias+gelu epilogue's cost at bf16 8192^3 on the H200).
  std::vector<Value*> row_invariant(leaves.size(), nullptr);
  for (size_t l = 0; l < leaves.size(); ++l) {
    const std::vector<int64_t>& st = p.leaf_strides[l];
    if (st[1] == 0 && st[2] != 0)
      row_invariant[l] = tb.load2d(leaves[l], leaf_base(st, m0), idx(p.slab_rows), ncols, 0, st[2],
                                   aligned(st[0], st[1], st[2]), slab_t);
  }
  tb.for_loop(idx(0), mrows, idx(p.slab_rows), {}, [&](Value* r0, const std::vector<Value*>&) -> std::vector<Value*> {
    Value* rows = tb.min(idx(p.slab_rows), tb.sub(mrows, r0));
    Value* row = tb.add(m0, r0);
    fused::Env env;
    // The TMA block's C rows are padded (Plan::c_stride): a strided read;
    // with halves, each half's columns are one half of the block's.
    auto c_slab = [&](int64_t column) {
      return tb.load2d(scratch, tb.add(tb.mul(r0, idx(p.c_stride())), idx(column)), rows, ncols, p.c_stride(), 1, true,
                       slab_t);
    };
    if (halves) {
      env[halves->result(0)] = c_slab(0);
      env[halves->result(1)] = c_slab(p.out_bn());
    } else {
      env[core->result()] = p.tma ? c_slab(0) : tb.load(scratch, tb.mul(r0, idx(p.bn)), slab_t);
    }
    Value* y = fused::eval(tb, region, yielded, slab_t, env, [&](size_t l) {
      if (row_invariant[l]) return row_invariant[l];
      const std::vector<int64_t>& st = p.leaf_strides[l];
      return tb.load2d(leaves[l], leaf_base(st, row), rows, ncols, st[1], st[2], aligned(st[0], st[1], st[2]), slab_t);
    });
    Value* at = tb.add(tb.mul(tb.add(tb.mul(batch, idx(p.m)), row), idx(p.out_n())), n0);
    tb.store2d(out, at, rows, ncols, y, p.out_n(), aligned(p.m * p.out_n(), p.out_n(), 1));
    return {};
  });
  m.ops.push_back(std::move(k));
}

}  // namespace tessera::families::matmul
