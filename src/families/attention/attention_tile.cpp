#include "families/attention/attention_tile.hpp"

#include <array>

#include "ir/schedule_dialect.hpp"
#include "ir/target_dialect.hpp"
#include "ir/tile_dialect.hpp"

namespace tessera::families::attention {

using namespace tessera::ir;

namespace {

// The tensor map of q (rows = sq, heads) or of k / v (rows = sk, kv_heads),
// region argument `leaf`: dims {d, rows, heads, batch}, boxes of 64 x 64
// rows, 128-byte swizzle (the wgmma layout; tessera_attention.cuh); a view's
// map has its strides and first element.
TensorMapDesc operand_map(const Plan& p, const Op& sop, int64_t leaf, const Value* buffer, int64_t rows, int64_t heads,
                          int64_t param) {
  TensorMapDesc t;
  t.buffer = buffer->name;
  t.dtype = p.dtype;
  const int64_t es = static_cast<int64_t>(dtype_size(p.dtype));
  t.dims = {p.d, rows, heads, p.batch};
  std::array<int64_t, 3> st = {p.d, rows * p.d, heads * rows * p.d};
  if (!p.leaf_offsets.empty()) {  // read_plan checked that a map addresses it
    st = *map_strides(sop.regions[0]->args[leaf]->type.shape, p.leaf_strides[leaf], p.leaf_offsets[leaf], p.dtype);
    t.offset = p.leaf_offsets[leaf];
  }
  t.strides = {st[0] * es, st[1] * es, st[2] * es};
  t.box = {64, 64, 1, 1};
  t.swizzle = 128;
  t.param = param;
  return t;
}

// The problem's facts the gradient's and the split-KV block's tile ops take.
AttrDict problem_attrs(const Plan& p) {
  return {{"head_dim", Attr(p.d)},  {"block", Attr::ints({p.bm, p.bn})}, {"batch", Attr(p.batch)},
          {"heads", Attr(p.heads)}, {"kv_heads", Attr(p.kv_heads)},      {"sq", Attr(p.sq)},
          {"sk", Attr(p.sk)},       {"causal", Attr(p.causal)},          {"scale", Attr(p.scale)}};
}

// The gradient: one tile.attention_grad whose program decides what it
// computes (key programs, then query programs: the op's documentation).
void build_grad_kernel(Module& m, const std::string& sym, const Plan& p, const Op& sop) {
  auto k = new_tile_kernel(sym, p.programs, p.threads, p.threads > 1 ? 4 : 16, string_attr(sop, "artifact_hash"));
  Region& body = *k->regions[0];
  const std::vector<std::string> names = {"q", "k", "v", "o", "dout", "lse"};
  std::vector<Value*> leaves;
  for (size_t i = 0; i < sop.regions[0]->args.size(); ++i)
    leaves.push_back(body.add_arg(i < names.size() ? names[i] : "in" + std::to_string(i),
                                  Type::ptr(sop.regions[0]->args[i]->type.dtype)));
  std::vector<Value*> operands;
  for (int64_t leaf : {p.q_leaf, p.k_leaf, p.v_leaf, p.o_leaf, p.do_leaf, p.lse_leaf})
    operands.push_back(leaves.at(leaf));
  for (const char* name : {"dq", "dk", "dv"}) operands.push_back(body.add_arg(name, Type::ptr(p.dtype)));
  TileBuilder tb(body);
  operands.push_back(tb.program_id());
  // the CUDA block's shared memory (device/gpu/tessera_attention_grad.cuh)
  if (p.scratch > 0) operands.push_back(tb.scratch((p.scratch + 3) / 4, DType::F32));
  AttrDict attrs = problem_attrs(p);
  attrs["one_pass"] = Attr(p.strategy == Strategy::TiledOnePass);
  if (p.strategy == Strategy::Mma) attrs["mma"] = Attr(true);
  if (p.strategy == Strategy::Wgmma) attrs["wgmma"] = Attr(true);
  tb.attention_grad(operands, attrs);
  m.ops.push_back(std::move(k));
}

// The split-KV block: one tile.attention_decode a program, q, k and v read
// through their element strides (a view's, or a contiguous tensor's), o
// written through o's, partials kept in the kernel's workspace.
void build_decode_kernel(Module& m, const std::string& sym, const Plan& p, const Op& sop) {
  auto k = new_tile_kernel(sym, p.programs, p.threads, 4, string_attr(sop, "artifact_hash"));
  Region& body = *k->regions[0];
  const std::vector<std::string> names = {"q", "k", "v"};
  std::vector<Value*> leaves;
  for (size_t i = 0; i < sop.regions[0]->args.size(); ++i)
    leaves.push_back(body.add_arg(i < names.size() ? names[i] : "in" + std::to_string(i),
                                  Type::ptr(sop.regions[0]->args[i]->type.dtype)));
  Value* o = body.add_arg("o", Type::ptr(p.dtype));
  Value* lse = p.lse ? body.add_arg("lse", Type::ptr(sop.result(1)->type.dtype)) : nullptr;
  TileBuilder tb(body);
  Value* ws = tb.workspace((decode_workspace_bytes(p) + 3) / 4, DType::F32);
  Value* smem = tb.scratch((p.scratch + 3) / 4, DType::F32);
  std::vector<Value*> operands = {leaves.at(p.q_leaf), leaves.at(p.k_leaf), leaves.at(p.v_leaf), o, ws, smem,
                                  tb.program_id()};
  if (lse) operands.push_back(lse);
  // [batch, heads, rows] element strides and first element of an operand
  auto strides = [&](int64_t leaf, int64_t heads, int64_t rows) -> std::vector<int64_t> {
    if (p.leaf_strides.empty()) return {heads * rows * p.d, rows * p.d, p.d};
    const auto& st = p.leaf_strides[leaf];
    return {st[0], st[1], st[2]};
  };
  auto offset = [&](int64_t leaf) { return p.leaf_offsets.empty() ? 0 : p.leaf_offsets[leaf]; };
  AttrDict attrs = problem_attrs(p);
  attrs["chunk"] = Attr(p.chunk);
  attrs["lse"] = Attr(p.lse);
  attrs["q_strides"] = Attr::ints(strides(p.q_leaf, p.heads, p.sq));
  attrs["k_strides"] = Attr::ints(strides(p.k_leaf, p.kv_heads, p.sk));
  attrs["v_strides"] = Attr::ints(strides(p.v_leaf, p.kv_heads, p.sk));
  attrs["o_strides"] = Attr::ints(p.o_strides());
  attrs["offsets"] = Attr::ints({offset(p.q_leaf), offset(p.k_leaf), offset(p.v_leaf)});
  tb.attention_decode(operands, attrs);
  m.ops.push_back(std::move(k));
}

}  // namespace

void build_kernel(Module& m, const std::string& sym, const Plan& p, const Op& sop) {
  if (p.grad) return build_grad_kernel(m, sym, p, sop);
  if (p.strategy == Strategy::SplitKv) return build_decode_kernel(m, sym, p, sop);
  const bool wgmma = p.strategy == Strategy::Wgmma;
  // (the vector width is the tile library's; the attention blocks choose their own loads)
  auto k = new_tile_kernel(sym, p.programs, p.threads, wgmma ? 8 : 16, string_attr(sop, "artifact_hash"));
  Region& body = *k->regions[0];
  // One argument per region argument: q, k and v may be one tensor.
  const std::vector<std::string> names = {"q", "k", "v", "mask"};
  std::vector<Value*> leaves;
  for (size_t i = 0; i < sop.regions[0]->args.size(); ++i)
    leaves.push_back(body.add_arg(i < names.size() ? names[i] : "in" + std::to_string(i),
                                  Type::ptr(sop.regions[0]->args[i]->type.dtype)));
  Value* q = leaves.at(p.q_leaf);
  Value* kk = leaves.at(p.k_leaf);
  Value* v = leaves.at(p.v_leaf);
  Value* o = body.add_arg("o", Type::ptr(p.dtype));
  Value* lse = p.lse ? body.add_arg("lse", Type::ptr(sop.result(1)->type.dtype)) : nullptr;
  TileBuilder tb(body);
  auto idx = [&](int64_t x) { return tb.index(x); };

  // Program -> (batch * head, block of query rows): the blocks of one head
  // are consecutive (its k and v stay in cache); causal blocks run the
  // longest (last rows) first so the short ones fill the tail of the grid.
  // Interleaved (Plan::interleave), causal blocks run longest first across
  // all heads.
  // (at least 1: an empty problem has no programs, but its index math stays defined)
  // (folded, a plane is a kv head's group: its own kv plane)
  const int64_t q_heads = p.fold_group ? p.kv_heads : p.heads, group = p.fold_group ? 1 : p.group();
  const int64_t mb = std::max<int64_t>(p.m_blocks(), 1), heads = std::max<int64_t>(q_heads, 1);
  const int64_t planes = std::max<int64_t>(p.q_planes(), 1);
  Value* pid = tb.program_id();
  Value* bh = tb.div(pid, idx(mb));
  Value* block = tb.rem(pid, idx(mb));
  if (p.interleave) {
    bh = tb.rem(pid, idx(planes));
    block = tb.div(pid, idx(planes));
  }
  if (p.causal) block = tb.sub(idx(mb - 1), block);
  Value* m0 = tb.mul(block, idx(p.bm));
  // head h of batch b reads kv head h / group of batch b
  Value* bkv = tb.add(tb.mul(tb.div(bh, idx(heads)), idx(p.kv_heads)),
                      tb.div(tb.rem(bh, idx(heads)), idx(std::max<int64_t>(group, 1))));

  // (folded, no row's keys depend on its position: one query row sees every key)
  AttrDict attrs = {{"head_dim", Attr(p.d)},    {"block", Attr::ints({p.bm, p.bn})},
                    {"stages", Attr(p.stages)}, {"sq", Attr(p.q_rows())},
                    {"sk", Attr(p.sk)},         {"causal", Attr(p.causal && !p.fold_group)},
                    {"lse", Attr(p.lse)},       {"scale", Attr(p.scale)}};
  std::vector<Value*> operands = {q, kk, v, o, bh, bkv, m0};
  if (lse) operands.push_back(lse);
  if (p.mask != AttentionMask::None) {
    operands.push_back(leaves.at(p.mask_leaf));
    attrs["mask"] = Attr(enum_name(p.mask));
    attrs["mask_strides"] = Attr::ints(p.mask_strides);
    attrs["heads"] = Attr(p.heads);
  }
  if (wgmma) {
    // q, k and v come as the kernel's tensor maps 0, 1 and 2 (after its
    // buffers), copied by a producer warpgroup launched beyond `threads`.
    const int64_t first = static_cast<int64_t>(body.args.size());
    k->attrs["tensor_maps"] = Attr(AttrList{Attr(operand_map(p, sop, p.q_leaf, q, p.sq, p.heads, first).str()),
                                            Attr(operand_map(p, sop, p.k_leaf, kk, p.sk, p.kv_heads, first + 1).str()),
                                            Attr(operand_map(p, sop, p.v_leaf, v, p.sk, p.kv_heads, first + 2).str())});
    k->attrs["producer_threads"] = Plan::kProducerThreads;
    k->attrs["min_blocks"] = int64_t{1};  // the register cap setmaxnreg needs
    attrs["tma"] = true;
    attrs["heads"] = Attr(p.heads);
    attrs["kv_heads"] = Attr(p.kv_heads);
    attrs["o_strides"] = Attr::ints(p.o_strides());
    operands.push_back(tb.scratch((p.scratch + 3) / 4, DType::F32));  // the block's shared memory
  }
  tb.attention(operands, attrs);
  m.ops.push_back(std::move(k));
}

}  // namespace tessera::families::attention
