#include "families/attention/attention_schedule.hpp"

#include <algorithm>

#include "families/device_attr.hpp"
#include "families/fused/expr_tile.hpp"
#include "families/fused/leaf_map.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/schedule_dialect.hpp"

namespace tessera::families::attention {

using namespace tessera::ir;

namespace {

// The facts of the region's attention (or attention_grad) op; `leaves` are
// the region's arguments (q, k and v may be one tensor, one argument).
Plan facts(const Op& core, const std::vector<const Value*>& leaves) {
  Plan p;
  p.grad = core.name == "tessera.attention_grad";
  const AttentionSpec s = p.grad ? attention_grad_spec(core) : attention_spec(core);
  auto leaf_of = [&](const Value* v) {
    auto it = std::find(leaves.begin(), leaves.end(), v);
    if (it == leaves.end()) fail("E302", "schedule.attention: the op's operands must be region arguments", core.loc);
    return static_cast<int64_t>(it - leaves.begin());
  };
  p.q_leaf = leaf_of(core.operands[0]);
  p.k_leaf = leaf_of(core.operands[1]);
  p.v_leaf = leaf_of(core.operands[2]);
  if (p.grad) {
    p.o_leaf = leaf_of(core.operands[3]);
    p.do_leaf = leaf_of(core.operands[4]);
    p.lse_leaf = leaf_of(core.operands[5]);
  }
  p.batch = s.batch, p.heads = s.heads, p.kv_heads = s.kv_heads;
  p.sq = s.sq, p.sk = s.sk, p.d = s.d;
  p.causal = s.causal, p.lse = s.lse, p.scale = s.scale;
  p.dtype = core.operands[0]->type.dtype;
  p.mask = s.mask;
  if (p.mask != AttentionMask::None) {
    p.mask_leaf = leaf_of(core.operands[3]);
    p.mask_strides = fused::broadcast_strides(core.operands[3]->type.shape, {p.batch, p.heads, p.sq, p.sk});
  }
  return p;
}

// Why the CUDA block cannot take the plan's problem (empty: it can).
std::string wgmma_unsupported(const Plan& p, const machine::Descriptor& d) {
  if (!d.has(machine::Cap::Tma) || !d.has(machine::Cap::Wgmma))
    return "needs a device with TMA and wgmma (" + d.name + ", " + d.arch + ", has not)";
  if (p.dtype != DType::F16 && p.dtype != DType::BF16) return "takes f16 and bf16 (f32 softmax and accumulation)";
  if (p.d != 64 && p.d != 128) return "takes head dims 64 and 128";
  // Tensor maps have no empty dims and int32 coordinates.
  if (p.sk < 1 || p.sq < 1 || p.batch < 1 || p.heads < 1)
    return "needs non-empty q, k and v (batch, heads, sq, sk >= 1)";
  const int64_t limit = int64_t{1} << 31;
  if (p.sq >= limit || p.sk >= limit || p.batch * p.heads >= limit) return "needs extents below 2^31";
  return "";
}

// Whether the forward's grouped heads can be one plane of rows (Plan::fold_group).
bool foldable(const Plan& p) {
  return !p.grad && p.group() > 1 && (!p.causal || p.sq == 1) && p.mask == AttentionMask::None;
}

// Why the split-KV block cannot take the plan's problem (empty: it can).
std::string split_kv_unsupported(const Plan& p, const machine::Descriptor& d) {
  if (!d.has(machine::Cap::AttentionDecodeBlock)) return "needs a device with it (" + d.name + " has not)";
  if (p.mask != AttentionMask::None) return "reads no mask";
  if (p.dtype == DType::F64) return "takes f16, bf16 and f32";
  if (p.d != 16 && p.d != 32 && p.d != 64 && p.d != 128 && p.d != 256) return "takes head dims 16, 32, 64, 128 and 256";
  const int64_t rows = p.group() * p.sq;
  if (p.sq < 1 || p.kv_heads < 1 || rows > 8)
    return "takes 1 to 8 query rows a kv head (heads / kv_heads * sq), got " + std::to_string(rows);
  if (p.batch * p.kv_heads >= (int64_t{1} << 24)) return "needs batch * kv_heads below 2^24";
  return "";
}

// The split-KV block's decisions: tiles of 128 keys (a multiple of every
// head dim's keys a block step), and chunks enough for about four programs
// an SM (at most 128 chunks, so the combine's factors fit a tile's scores).
void choose_split_kv(Plan& p, const machine::Descriptor& d) {
  p.strategy = Strategy::SplitKv;
  p.bm = p.group() * p.sq, p.bn = 128, p.stages = 1, p.threads = kDecodeThreads;
  const int64_t planes = std::max<int64_t>(p.batch * p.kv_heads, 1);
  const int64_t want = std::clamp<int64_t>((4 * std::max<int64_t>(d.compute_units, 1) + planes - 1) / planes, 1, p.bn);
  const int64_t keys = std::max<int64_t>((p.sk + want - 1) / want, 1);
  p.chunk = (keys + p.bn - 1) / p.bn * p.bn;
  p.scratch = decode_smem_bytes(p.d, p.bm, p.bn);
}

void choose(Plan& p, const machine::Descriptor& d, const SourceLoc& loc) {
  const std::string op = p.grad ? "tessera.attention_grad" : "tessera.attention";
  if (!d.gpu() && (p.d < 1 || p.d > 256))
    fail("E506", op + " on device " + d.name + " takes head dims 1 to 256, got " + std::to_string(p.d), loc);
  if (!d.gpu() && p.grad) {
    // Blocks of 64 rows and 64 keys (32 past head dim 128, or in f64): the
    // key block's k^T and v^T, the row block's q and do, P and dS, and the
    // accumulated rows stay in L2 (device/cpu/tessera_attention_grad.hpp).
    p.bm = p.bn = p.d <= 128 && p.dtype != DType::F64 ? 64 : 32;
    p.stages = 1, p.threads = 1, p.scratch = 0;
    // One pass where eight kv heads or more keep the threads busy and a
    // program's packed rows (q, do and dq of its heads) take at most 16 MiB.
    const int64_t esize = p.dtype == DType::F64 ? 8 : 4;
    const double rows_bytes = double(p.heads / std::max<int64_t>(p.kv_heads, 1)) * double(p.sq) *
                              double((p.d + 15) / 16 * 16) * 3 * double(esize);
    p.strategy = p.batch * p.kv_heads >= 8 && rows_bytes <= 16.0 * 1024 * 1024 ? Strategy::TiledOnePass
                                                                               : Strategy::Tiled;
  } else if (!d.gpu()) {
    // One program a (batch, head, block of query rows): the block keeps its
    // q rows, scores and output rows in registers and L1 against tiles of 64
    // keys (32 past head dim 128); f64 rows take twice the space, so half
    // as many (device/cpu/tessera_attention.hpp; the sweep: docs/journal.md).
    p.strategy = Strategy::Tiled;
    p.bm = p.dtype == DType::F64 ? 24 : 48;
    p.bn = p.d <= 128 ? 64 : 32;
    p.stages = 1, p.threads = 1, p.scratch = 0;
    p.fold_group = foldable(p);
  } else if (p.grad) {
    if (!d.has(machine::Cap::AttentionGradBlock))
      fail("E506",
           op + " on device " + d.name + " (target " + d.target() +
               "): this device has no attention backward block yet (the CPU and CUDA have one)",
           loc);
    if (p.dtype == DType::F64 || p.d < 1 || p.d > 256)
      fail("E506",
           op + " on device " + d.name + ": the GPU backward block takes f16, bf16 and f32 with head dims 1 to 256",
           loc);
    const bool tensor_shape = (p.dtype == DType::F16 || p.dtype == DType::BF16) && (p.d == 64 || p.d == 128);
    if (tensor_shape && (d.has(machine::Cap::Wgmma) || d.has(machine::Cap::TensorCores))) {
      // 128 resident keys (a key program) or rows (a query program), the
      // other side streamed through a ring: 64 rows a step into two
      // warpgroups' products (three stages: a step's second products stay
      // in flight under the next) where the device has warpgroup MMA, else
      // 32 rows into eight warps' mma.sync (two stages).
      const bool wgmma = d.has(machine::Cap::Wgmma);
      p.strategy = wgmma ? Strategy::Wgmma : Strategy::Mma;
      p.bm = p.bn = kGradMmaRows;
      p.stages = wgmma ? 3 : 2, p.threads = kGradThreads;
      p.scratch = wgmma ? grad_wgmma_smem_bytes(p.d) : grad_mma_smem_bytes(p.d);
    } else {
      p.strategy = Strategy::Tiled;
      p.bm = p.bn = p.d <= 128 ? 64 : 32;
      p.stages = 1, p.threads = kGradThreads;
      p.scratch = grad_smem_bytes(p.d, p.bm, p.bn);
    }
    if (p.scratch > d.shared_bytes)
      fail("E506",
           op + " on device " + d.name + ": its block needs " + std::to_string(p.scratch) + " bytes of shared memory",
           loc);
  } else if (split_kv_unsupported(p, d).empty()) {
    choose_split_kv(p, d);
  } else {
    const std::string why = wgmma_unsupported(p, d);
    if (!why.empty())
      fail("E506",
           op + " on device " + d.name + " (target " + d.target() + ") " + why + "; its split-KV block " +
               split_kv_unsupported(p, d),
           loc);
    // Consumer warpgroups of 64 query rows (two; three at head dim 64, where
    // the exponentials, not the tensor cores, bound the block and three
    // warpgroups of 160 registers and the producer's 32 fill an SM's 64K),
    // 128-key tiles of k and v in a two-stage ring
    // (device/gpu/ATTENTION_CONTRACT.md).
    p.strategy = Strategy::Wgmma;
    const bool three = p.d == 64 && d.registers >= 3 * 128 * 160 + 128 * 32;
    p.bm = three ? 192 : 128, p.bn = 128, p.stages = 2;
    p.threads = p.bm / 64 * 128;
    p.scratch = wgmma_smem_bytes(p.d, p.bm, p.bn, p.stages);
    const double kv_bytes = 2.0 * double(p.batch * p.kv_heads) * double(p.sk) * double(p.d) * 2;
    p.interleave = p.causal && kv_bytes <= double(d.l2_bytes) / 2;
  }
  p.programs = p.program_count();
}

const Op* core_of(const Region& region) {
  for (auto& op : region.ops)
    if (is_attention_op(op->name)) return op.get();
  return nullptr;
}

const std::vector<int> kOperandGroups = {1, 1, 1, 1};  // [batch, heads, rows, head dim], each its own

// Whether the forward op `core` runs on `device` in a block that reads
// views and writes o through strides (Plan::strided).
bool strided_on(const Op& core, const machine::Descriptor& device) {
  if (!device.gpu()) return false;
  Plan p = facts(core, std::vector<const Value*>(core.operands.begin(), core.operands.end()));
  return split_kv_unsupported(p, device).empty() || wgmma_unsupported(p, device).empty();
}

}  // namespace

std::optional<std::array<int64_t, 3>> map_strides(const std::vector<int64_t>& shape, const std::vector<int64_t>& st,
                                                  int64_t offset, DType dtype) {
  if (shape.size() != 4 || st.size() != 4 || offset < 0) return std::nullopt;
  const int64_t es = static_cast<int64_t>(dtype_size(dtype)), b = shape[0], h = shape[1], rows = shape[2];
  if (st[3] != 1 && shape[3] > 1) return std::nullopt;
  const int64_t row = rows > 1 ? st[2] : shape[3];
  const int64_t head = h > 1 ? st[1] : row * rows;
  const int64_t batch = b > 1 ? st[0] : head * h;
  auto on16 = [&](int64_t s) { return s > 0 && s * es % 16 == 0; };
  if (!on16(row) || !on16(head) || !on16(batch) || offset * es % 16 != 0) return std::nullopt;
  return std::array<int64_t, 3>{row, head, batch};
}

bool writes_view(const Op& core, const Value* v, const machine::Descriptor& device) {
  if (core.name != "tessera.attention" || v == core.result(0)) return false;
  const Value* o = core.result(0);
  const std::vector<int64_t>& s = o->type.shape;  // [batch, heads, rows, head dim]
  if (s.size() != 4 || v->type.numel() != o->type.numel() || v->type.numel() == 0) return false;
  bool unviewable = false;
  const ViewRead read = read_through_views(
      v, [&](const Value* u) { return u == o; }, [&](const Value*) { unviewable = true; });
  if (unviewable || read.base != o || read.layout.offset != 0) return false;
  // v read row-major must be o with heads and rows swapped: compare the two
  // layouts with unit dims dropped and contiguous dims merged.
  auto merged = [](const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
    std::vector<std::vector<int64_t>> st;
    std::vector<int64_t> extents = fused::coalesce_strided(shape, {strides}, st);
    return std::make_pair(extents, st[0]);
  };
  const auto layout = merged(v->type.shape, read.layout.strides);
  const std::vector<int64_t> swapped = {s[0], s[2], s[1], s[3]};
  if (layout != merged(swapped, {s[1] * s[2] * s[3], s[3], s[2] * s[3], 1}) ||
      layout == merged(s, {s[1] * s[2] * s[3], s[2] * s[3], s[3], 1}))  // (one head or one row: o's own bytes)
    return false;
  return strided_on(core, device);
}

bool reads_view(const Op& core, const Value* v, const machine::Descriptor& device,
                const std::function<bool(const Value*)>& has_buffer) {
  if (core.name != "tessera.attention") return false;
  // (the mask is read by its pointer and strides: never a view)
  if (attention_spec(core).mask != AttentionMask::None && v == core.operands[3]) return false;
  if (!strided_on(core, device)) return false;
  const auto read = fused::leaf_read(v, v->type.shape, kOperandGroups, has_buffer);
  return read && map_strides(v->type.shape, read->strides, read->offset, v->type.dtype).has_value();
}

int64_t grad_smem_bytes(int64_t d, int64_t bm, int64_t bn) {
  return 4 * ((2 * bn + 2 * bm) * (d + 1) + 2 * bm * (bn + 1) + 2 * bm);
}

int64_t grad_mma_smem_bytes(int64_t d) {
  // Resident and streamed tiles in rows of d + 8 16-bit elements (two of
  // kGradMmaRows rows, two stages of two of 32), lse and delta of the
  // resident rows, and the exact path's p and ds (f32 rows of 33) and its
  // warps' sums (16 x 32 f32 each).
  const int64_t pitch = (d + 8) * 2, rows = kGradMmaRows, step = 32;
  return 2 * rows * pitch + 4 * step * pitch + 2 * rows * 4 + 2 * rows * (step + 1) * 4 + rows * 32 * 4;
}

int64_t grad_wgmma_smem_bytes(int64_t d) {
  // 1 KiB of alignment slack, the resident and streamed tiles (two of
  // kGradMmaRows rows, three stages of two of 64; 16-bit, unpadded: the
  // swizzle spreads the banks), lse and delta of kGradMmaRows rows, and each
  // warpgroup's exact-path p or ds (64 f32 rows of 65).
  const int64_t rows = kGradMmaRows, step = 64;
  return 1024 + 2 * rows * d * 2 + 6 * step * d * 2 + 2 * rows * 4 + 2 * 64 * (step + 1) * 4;
}

int64_t decode_smem_bytes(int64_t d, int64_t rows, int64_t bn) {
  // q's rows, a tile's scores and the four warps' partial o (f32), each
  // row's running max, sum and rescale factor, and the last-program flag.
  return 4 * (rows * d + rows * bn + 4 * rows * d + 3 * rows) + 16;
}

int64_t decode_workspace_bytes(const Plan& p) {
  // A counter per (batch, kv head), rounded up to 256 bytes, then each
  // program's rows' unnormalized o and their max and sum (f32), then 256
  // bytes of slack (never empty, even with no programs).
  return (p.batch * p.kv_heads * 4 + 255) / 256 * 256 + p.programs * p.bm * (2 + p.d) * 4 + 256;
}

int64_t wgmma_smem_bytes(int64_t d, int64_t bm, int64_t bn, int64_t stages) {
  // 1 KiB of alignment slack for the swizzled tiles, q's rows, `stages`
  // tiles of k and of v (16-bit), then the mbarriers (q's, and full and
  // empty for k and for v a stage).
  return 1024 + bm * d * 2 + stages * 2 * bn * d * 2 + 8 * (1 + 4 * stages);
}

const std::vector<Field<Plan>>& fact_fields() {
  static const std::vector<Field<Plan>> fields = {
      field("batch", &Plan::batch),
      field("heads", &Plan::heads),
      field("kv_heads", &Plan::kv_heads),
      field("sq", &Plan::sq),
      field("sk", &Plan::sk),
      field("head_dim", &Plan::d),
      field("causal", &Plan::causal),
      field("lse", &Plan::lse),
      field("scale", &Plan::scale),
      field("dtype", &Plan::dtype),
      field("mask", &Plan::mask, Field<Plan>::When::IfNotDefault),
  };
  return fields;
}

const std::vector<Field<Plan>>& decision_fields() {
  static const std::vector<Field<Plan>> fields = {
      field("strategy", &Plan::strategy),
      int_list_field<Plan, int64_t>("block", {&Plan::bm, &Plan::bn}),
      field("stages", &Plan::stages),
      field("threads", &Plan::threads),
      field("programs", &Plan::programs),
      field("scratch", &Plan::scratch),
      field("chunk", &Plan::chunk, Field<Plan>::When::IfNotDefault),
      field("interleave", &Plan::interleave, Field<Plan>::When::IfNotDefault),
      field("fold_group", &Plan::fold_group, Field<Plan>::When::IfNotDefault),
  };
  return fields;
}

Op& emit_schedule(Builder& b, const fused::FusedRegion& region, const std::unordered_map<const Value*, Value*>& map,
                  const machine::Descriptor& device, const std::string& prefix) {
  const Op& core = *region.core;
  Plan p = facts(core, region.leaves);
  choose(p, device, core.loc);
  // Views the wgmma block reads in place (fusion kept only those:
  // reads_view); its leaves are q, k and v. Every other block's are buffers.
  std::unordered_map<const Value*, Value*> bases = map;
  bool views = false;
  if (p.strided())
    for (const Value* leaf : region.leaves) {
      const auto read = fused::leaf_read(leaf, leaf->type.shape, kOperandGroups,
                                         [&](const Value* u) { return map.count(u) > 0; });
      if (!read)
        fail("E303", "fused region: attention operand %" + leaf->name + " has no layout (a fusion bug)", core.loc);
      p.leaf_strides.push_back(read->strides);
      p.leaf_offsets.push_back(read->offset);
      if (read->base != leaf) bases[leaf] = map.at(read->base), views = true;
    }
  Op& op = fused::create_region_op(b, "schedule.attention", region.leaves, region.ops, core.result(0), bases, prefix);
  AttrDict& a = op.attrs;
  a["family"] = "attention";
  record_device(a, device);
  write_fields(fact_fields(), p, a);
  write_fields(decision_fields(), p, a);
  if (views) {  // absent where there are none: those schedules stay as they were
    a["leaf_strides"] = fused::leaf_strides_attr(p.leaf_strides);
    a["leaf_offsets"] = Attr::ints(p.leaf_offsets);
  }
  // A view fusion asked writes_view of (or a reshape of one), written
  // transposed; a reshape of o itself is o's bytes.
  const Value* reshaped = region.written_as;
  while (reshaped && reshaped != core.result(0) && reshaped->def && reshaped->def->name == "tessera.reshape")
    reshaped = reshaped->def->operands[0];
  if (region.written_as && reshaped == core.result(0) && region.written_as->type != core.result(0)->type)
    a["o_reshaped"] = true;
  if (region.written_as && reshaped != core.result(0)) {
    if (!p.strided())
      fail("E303",
           "fused region: attention writes its result transposed only on the wgmma and split_kv blocks (a fusion bug)",
           core.loc);
    a["o_perm"] = Attr::ints({0, 2, 1, 3});
  }
  op.loc = core.loc;
  for (auto& r : core.results) {
    const Value* written = &*r == core.result(0) && region.written_as ? region.written_as : r.get();
    op.add_result(written->name, written->type);
  }
  stamp_artifact_hash(op);
  return op;
}

Plan read_plan(const Op& op) {
  const bool views = op.attr("leaf_offsets") != nullptr;
  fused::verify_region(op, views, /*reshaped=*/false, /*reshaped_result=*/true);  // (the result checked below)
  const Region& region = *op.regions[0];
  const Op* core = core_of(region);
  if (!core || region.ops.size() != 2)
    fail("E302", "schedule.attention: the region holds one tessera.attention (or attention_grad) of its arguments",
         op.loc);
  std::vector<const Value*> leaves;
  for (auto& a : region.args) leaves.push_back(a.get());
  Plan p = facts(*core, leaves);
  if (op.results.size() != core->results.size())
    fail("E302", "schedule.attention: its results are the attention op's", op.loc);
  // With o_perm = [0, 2, 1, 3] result 0 is o with heads and rows swapped.
  if (const Attr* perm = op.attr("o_perm")) {
    if (!perm->as_ints() || *perm->as_ints() != std::vector<int64_t>{0, 2, 1, 3} || core->name != "tessera.attention")
      fail("E302", "schedule.attention: 'o_perm' is [0, 2, 1, 3] (o written [batch, rows, heads, head dim])", op.loc);
    p.o_transposed = true;
  }
  // With o_reshaped, result 0 is a reshape of o (its bytes).
  const Attr* o_reshaped = op.attr("o_reshaped");
  const bool reshaped = o_reshaped != nullptr;
  if (reshaped && (!o_reshaped->as_bool() || !*o_reshaped->as_bool() || p.o_transposed))
    fail("E302", "schedule.attention: 'o_reshaped' is true, and not with o_perm", op.loc);
  for (size_t i = 0; i < op.results.size(); ++i) {
    const Type& want = core->result(i)->type;
    const Type& got = op.result(i)->type;
    // o written row-major, or with heads and rows swapped (o_perm), is read
    // as any reshape of that (o_reshaped, o_perm): its element count and
    // dtype are o's.
    const bool any_shape = i == 0 && (p.o_transposed || reshaped);
    const bool ok = any_shape ? got.dtype == want.dtype && got.numel() == want.numel() : got == want;
    if (!ok)
      fail("E302",
           "schedule.attention: result " + std::to_string(i) + " is not the attention op's type" +
               (i == 0 ? " (or a reshape of it: o_reshaped; with heads and rows swapped: o_perm)" : ""),
           op.loc);
  }
  const machine::Descriptor device = read_device(op);
  Plan recorded;
  read_fields(fact_fields(), op, recorded);
  for (const Field<Plan>& f : fact_fields())
    if (!f.equal(recorded, p))
      fail("E302", "schedule.attention: the recorded " + f.name + " disagrees with its region", op.loc);
  read_fields(decision_fields(), op, p);
  // The decisions must be ones the device's block takes.
  Plan want = p;
  choose(want, device, op.loc);
  if (p.strategy != want.strategy)
    fail("E302",
         std::string("schedule.attention: strategy '") + enum_name(p.strategy) + "' does not fit device " + device.name,
         op.loc);
  if (p.bm < 1 || p.bn < 1 || p.bm > 1024 || p.bn > 1024 || p.stages < 1 || p.stages > 8)
    fail("E302", "schedule.attention: block sizes must be in [1, 1024] and stages in [1, 8]", op.loc);
  if (p.grad && (p.strategy == Strategy::Wgmma || p.strategy == Strategy::Mma)) {
    const bool wgmma = p.strategy == Strategy::Wgmma;
    if (p.bm != kGradMmaRows || p.bn != kGradMmaRows || p.stages != (wgmma ? 3 : 2) || p.threads != kGradThreads ||
        p.scratch != (wgmma ? grad_wgmma_smem_bytes(p.d) : grad_mma_smem_bytes(p.d)) || p.scratch > device.shared_bytes)
      fail("E302",
           std::string("schedule.attention: the ") + (wgmma ? "wgmma" : "mma") +
               " backward block runs 128 x 128 blocks, " + (wgmma ? "three" : "two") +
               " stages, 256 threads with its shared memory",
           op.loc);
  } else if (p.strategy == Strategy::Wgmma) {
    if ((p.bm != 128 && !(p.bm == 192 && p.d == 64)) || p.bn != 128 || p.stages < 2 || p.threads != p.bm / 64 * 128)
      fail("E302",
           "schedule.attention: the wgmma block runs 128 (or, at head dim 64, 192) rows x 128 keys, >= 2 stages, "
           "128 threads per 64 rows",
           op.loc);
    if (p.scratch < wgmma_smem_bytes(p.d, p.bm, p.bn, p.stages) || p.scratch > device.shared_bytes)
      fail("E302",
           "schedule.attention: scratch must cover what the wgmma block needs and fit the device's shared memory",
           op.loc);
  } else if (p.strategy == Strategy::SplitKv) {
    if (p.bm != p.group() * p.sq || p.bn % 64 != 0 || p.stages != 1 || p.threads != kDecodeThreads || p.chunk < p.bn ||
        p.chunk % p.bn != 0 || p.chunks() > p.bn)
      fail("E302",
           "schedule.attention: the split_kv block runs heads / kv_heads * sq rows, key tiles of a multiple of 64, "
           "one stage, 128 threads, and chunks of a multiple of the tile's keys (at most that many chunks)",
           op.loc);
    if (p.scratch != decode_smem_bytes(p.d, p.bm, p.bn) || p.scratch > device.shared_bytes)
      fail("E302", "schedule.attention: the split_kv block's scratch is its shared memory, and must fit the device",
           op.loc);
  } else if (p.grad && device.gpu()) {
    if (p.threads != kGradThreads || p.scratch != grad_smem_bytes(p.d, p.bm, p.bn) || p.scratch > device.shared_bytes)
      fail("E302", "schedule.attention: the CUDA backward block runs 256 threads with its shared memory", op.loc);
  } else if (p.threads != 1 || p.scratch != 0) {
    fail("E302", "schedule.attention: a tiled program is one thread with no scratch", op.loc);
  }
  if (p.programs != p.program_count())
    fail("E302",
         "schedule.attention records " + std::to_string(p.programs) + " programs but its blocks give " +
             std::to_string(p.program_count()),
         op.loc);
  check_threads(op, device, p.threads + (p.strategy == Strategy::Wgmma && !p.grad ? Plan::kProducerThreads : 0));
  if (p.strategy != Strategy::SplitKv && p.chunk != 0)
    fail("E302", "schedule.attention: only the split_kv block has a 'chunk'", op.loc);
  if (p.fold_group && !(p.strategy == Strategy::Tiled && foldable(p)))
    fail("E302",
         "schedule.attention: 'fold_group' is for the tiled forward with grouped heads, not causal or one query "
         "row, no mask",
         op.loc);
  if (p.interleave && !(p.strategy == Strategy::Wgmma && p.causal && !p.grad))
    fail("E302", "schedule.attention: 'interleave' is for causal attention on the wgmma block", op.loc);
  if (p.o_transposed && !p.strided())
    fail("E302", "schedule.attention: only the wgmma and split_kv blocks write o transposed (o_perm)", op.loc);
  if (views) {
    if (!p.strided()) fail("E302", "schedule.attention: only the wgmma and split_kv blocks read views", op.loc);
    p.leaf_strides = fused::read_leaf_strides(op, 4, SIZE_MAX);
    const auto off = op.attr("leaf_offsets")->as_ints();
    if (!off || off->size() != op.operands.size())
      fail("E302", "schedule.attention: 'leaf_offsets' has one integer per operand", op.loc);
    p.leaf_offsets = *off;
    for (size_t l = 0; l < op.operands.size(); ++l) {
      const Type& arg = region.args[l]->type;
      if (!map_strides(arg.shape, p.leaf_strides[l], p.leaf_offsets[l], arg.dtype))
        fail("E302",
             "schedule.attention: operand " + std::to_string(l) +
                 "'s layout is not one a tensor map addresses (unit head-dim stride, one plane stride, 16-byte "
                 "strides and start)",
             op.loc);
      fused::check_leaf_reach(arg.shape, p.leaf_strides[l], op.operands[l]->type, op, p.leaf_offsets[l]);
    }
  }
  return p;
}

}  // namespace tessera::families::attention
