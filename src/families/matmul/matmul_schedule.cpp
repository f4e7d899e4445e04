#include "families/matmul/matmul_schedule.hpp"

#include <algorithm>

#include "families/device_attr.hpp"
#include "families/fused/expr_tile.hpp"
#include "families/fused/leaf_map.hpp"
#include "families/transpose/transpose_schedule.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/schedule_dialect.hpp"
#include "support/experimental.hpp"

namespace tessera::families::matmul {

using namespace tessera::ir;

namespace {

bool pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }
int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// Elements of the operand dtype in one 16-byte vector.
int64_t per_vector(DType d) { return 16 / static_cast<int64_t>(dtype_size(d)); }

// Whether 16-byte loads along A's (B's) contiguous dim are aligned: its other
// stride, the batch stride and (when blocks step along the contiguous dim:
// A transposed, B not) the block size are whole vectors.
bool vec_aligned(const Plan& p, bool a) {
  const int64_t epv = per_vector(p.operand);
  if (a)
    return (p.transpose_a ? p.m : p.k) % epv == 0 && p.a_batch_stride % epv == 0 && (!p.transpose_a || p.bm % epv == 0);
  return (p.transpose_b ? p.k : p.n) % epv == 0 && p.b_batch_stride % epv == 0 && (p.transpose_b || p.bn % epv == 0);
}

// f32 elements of a program's scratch: the C block (whole slabs of it) and, on
// GPUs, the pipeline buffers of A and B it shares memory with (see
// device/gpu/MATMUL_CONTRACT.md for the allowance).
int64_t scratch_elements(const Plan& p, const machine::Descriptor& device) {
  const int64_t block = round_up(p.bm, p.slab_rows) * p.c_stride();
  if (!device.gpu()) return block;
  const int64_t esize = static_cast<int64_t>(dtype_size(p.operand));
  const int64_t pad = p.operand == DType::F32 ? 4 : 8;
  const int64_t pipeline_bytes = p.stages * (p.bm + p.bn) * (p.bk + pad) * esize;
  return std::max(block, (pipeline_bytes + 3) / 4);
}

}  // namespace

std::string tma_unsupported(const Plan& p) {
  if (p.strategy != Strategy::Mma) return "is for the tensor-core (mma) strategy";
  if (p.bm != 128 || (p.bn != 256 && p.bn != 128) || p.bk != 64 || p.wm != 2 || p.wn != 4 || p.stages < 2)
    return "needs blocks of 128 x 256 (or 128) x 64 on 2 x 4 warps and at least 2 stages";
  // Ring of STAGES (A + B) slices, its mbarriers, 1 KiB alignment slack (tessera_matmul_tma.cuh).
  const int64_t ring = 1024 + p.stages * (p.bm + p.bn) * p.bk * 2 + 16 * p.stages;
  if (ring > p.scratch * 4) return "needs a scratch of " + std::to_string(ring) + " bytes for its ring";
  // The f32 C block (rows padded to c_stride) is staged over the ring and must
  // not reach the mbarriers after it (128 x 128 blocks need 3 stages).
  const int64_t c_bytes = p.bm * p.c_stride() * 4, ring_bytes = p.stages * (p.bm + p.bn) * p.bk * 2;
  if (c_bytes > ring_bytes)
    return "needs its C block (" + std::to_string(c_bytes) + " bytes) to fit in its ring of " +
           std::to_string(ring_bytes) + " bytes (more stages)";
  if (p.m < 1 || p.n < 1 || p.k < 1) return "needs non-empty operands (a tensor map has no empty dims)";
  if (p.halves && p.bn % 128 != 0) return "pairs column halves in blocks of 128-column multiples (whole boxes)";
  // A box's innermost coordinate must fall on 16 bytes: B's second half starts
  // N/2 columns in (row-major B; stored N x K it starts N/2 rows down).
  if (p.halves && !p.transpose_b && p.n / 2 * 2 % 16 != 0)
    return "pairs the column halves of a row-major B only where N/2 is a multiple of 8 (16-byte box starts)";
  const int64_t limit = int64_t{1} << 31;  // TMA coordinates are int32
  if (p.m >= limit || p.n >= limit || p.k >= limit || p.batch >= limit) return "needs dims below 2^31";
  // Row strides (bytes) of the operands as stored; batch strides are whole rows of them.
  const int64_t a_row = (p.transpose_a ? p.m : p.k) * 2, b_row = (p.transpose_b ? p.k : p.n) * 2;
  if (a_row % 16 != 0 || b_row % 16 != 0)
    return "needs 16-byte row strides (the contiguous extent of A and B a multiple of 8)";
  return "";
}

std::string stage_a_unsupported(const Plan& p) {
  if (p.strategy != Strategy::Simt) return "is for the f32 FFMA (simt) strategy";
  if (p.transpose_a) return "is for row-major A (M x K)";
  if (p.stages != 2) return "runs two shared-memory stages (stages = 2)";
  // The register loader: 4-k groups, 16 rows a half-warp, whole rows a thread step.
  if (p.bk % 4 != 0 || p.bm % 16 != 0 || p.threads % (4 * p.bk) != 0 || p.bm % (p.threads * 4 / p.bk) != 0)
    return "needs BK % 4 == 0, BM % 16 == 0, threads % (4 BK) == 0 and BM % (4 threads / BK) == 0";
  // Two stages of A as [BK][BM+4] and B as [BK][BN] or [BN][BK+4].
  const int64_t b_tile = p.transpose_b ? p.bn * (p.bk + 4) : p.bk * p.bn;
  if (2 * (p.bk * (p.bm + 4) + b_tile) > p.scratch)
    return "needs a scratch of " + std::to_string(2 * (p.bk * (p.bm + 4) + b_tile)) + " f32 for its stages";
  return "";
}

namespace {

// tma: the plan of the TMA block (tessera_tma), which has one block shape at
// every problem size.
void choose(Plan& p, const machine::Descriptor& d, bool tma) {
  if (!d.has(machine::Cap::BlockMatmul))
    fail("E506", std::string("device ") + d.name + " (target " + d.target() + ") has no matmul block library");
  if (!d.gpu()) {
    // Blocks of 96 x 256 (the micro-kernel is 12 x 32 on AVX-512, 6 x 16 on AVX2)
    // with K in chunks of 256: A's chunk (96 KiB) and B's (256 KiB) stay in L2.
    // Small problems shrink the block to what they need.
    p.strategy = Strategy::Packed;
    p.bm = std::min<int64_t>(96, round_up(std::max<int64_t>(p.m, 1), 12));
    p.bn = std::min<int64_t>(256, next_pow2(std::max<int64_t>(p.n, 32)));
    p.bk = 256;
    p.wm = p.wn = p.stages = 1;
    p.threads = 1;
    p.vector_width = 16;
    p.slab_rows = 8;
  } else {
    if (p.operand == DType::F32) {
      // FFMA (device/gpu/tessera_matmul_simt.cuh): 128x128 blocks of 8x8 per
      // thread, two blocks an SM (128 registers), for problems that fill two
      // waves of the SMs; smaller ones take 64x64 blocks of 64 threads (six
      // an SM), which keep more SMs busy. With both operands outer-contiguous
      // (A stored K x M, B row-major; what stage_through_transpose makes of
      // the other layouts) 128x128 blocks of four 64x64 warp tiles (128
      // threads, 255 registers, two blocks an SM) are faster still. Measured
      // on the H200: docs/journal.md (the f32 matmul entries) and
      // bench/evidence/cuda/matmul.packet.json.
      p.strategy = Strategy::Simt;
      const int64_t big = p.batch * ((p.m + 127) / 128) * ((p.n + 127) / 128);
      const int64_t two_waves = 2 * d.compute_units;
      if (big >= two_waves && p.transpose_a && !p.transpose_b)
        p.bm = 128, p.bn = 128, p.bk = 16, p.wm = 2, p.wn = 2, p.stages = 3, p.min_blocks = 2;
      else if (big >= two_waves) p.bm = 128, p.bn = 128, p.bk = 16, p.wm = 2, p.wn = 4, p.stages = 3, p.min_blocks = 2;
      else p.bm = 64, p.bn = 64, p.bk = 16, p.wm = 1, p.wn = 2, p.stages = 3, p.min_blocks = 6;
      if (scratch_elements(p, d) * 4 > d.shared_bytes)  // 64 KiB blocks (AMD), 32 KiB (Apple)
        p.bm = 64, p.bn = 64, p.bk = 16, p.wm = 1, p.wn = 2, p.stages = 3, p.min_blocks = 6;
      // Row-major A is the slow layout of that block (its smem tile is k
      // contiguous: 8 A values of one k are 8 rows apart). The experimental
      // stage_a block transposes it through registers (two smem stages and a
      // register stage); opt-in: its GPU tests pass, but it won at one size
      // and lost at another on the H200 (docs/journal.md, opt-in paths).
      if (!p.transpose_a && experimental("matmul_f32_stage_a")) p.stage_a = true, p.stages = 2;
    } else {
      if (!d.has(machine::Cap::TensorCores))
        fail("E506",
             "device " + d.name + " has no tensor cores for " + std::string(dtype_name(p.operand)) + " operands");
      // Tensor cores (device/gpu/tessera_matmul_mma.cuh): 128x256x64 blocks
      // with 4 stages take the warpgroup-MMA (wgmma) path; below ~100 such
      // blocks (a partial wave) 64x128x32 blocks on mma.sync, two an SM, keep
      // more SMs busy and were faster on the H200. The TMA block
      // (tessera_tma) always takes the large blocks. Measurements:
      // bench/evidence/cuda/matmul.packet.json and docs/journal.md.
      p.strategy = Strategy::Mma;
      const int64_t big = p.batch * ((p.m + 127) / 128) * ((p.n + 255) / 256);
      if (tma || 4 * big > 3 * d.compute_units)
        p.bm = 128, p.bn = 256, p.bk = 64, p.wm = 2, p.wn = 4, p.stages = 4, p.min_blocks = 1;
      else p.bm = 64, p.bn = 128, p.bk = 32, p.wm = 2, p.wn = 4, p.stages = 4, p.min_blocks = 2;
      // A device whose blocks hold less shared memory (64 KiB on AMD GPUs)
      // takes the small block.
      if (!tma && scratch_elements(p, d) * 4 > d.shared_bytes)
        p.bm = 64, p.bn = 128, p.bk = 32, p.wm = 2, p.wn = 4, p.stages = 4, p.min_blocks = 2;
      if (!tma && scratch_elements(p, d) * 4 > d.shared_bytes)  // 32 KiB blocks (Apple)
        p.bm = 64, p.bn = 64, p.bk = 32, p.wm = 2, p.wn = 2, p.stages = 2, p.min_blocks = 2;
    }
    p.threads = p.wm * p.wn * d.simd_width;  // a warp is the device's SIMD group (wavefronts of 64 on CDNA)
    p.vector_width = 4;
    p.slab_rows = 16 * p.threads / p.out_bn();  // 16 lanes of a slab per thread
  }
  p.group_m = 8;
  p.vec_a = vec_aligned(p, true);
  p.vec_b = vec_aligned(p, false);
  p.programs = p.batch * p.tiles_m() * p.tiles_n();
  p.scratch = scratch_elements(p, d);
}

// Whether the synthesized CUDA f32 block should read operand A (a) or B (!a)
// from a transposed copy (schedule.transpose, families/transpose) instead of
// in its k-contiguous layout (row-major A, B stored N x K), which the FFMA
// block reads slowly. The copy moves 2*M*K*4 bytes, a small share of a big
// matmul's time, and the block gains more than that from the layout (the
// H200 probe and its numbers: docs/journal.md, f32 FFMA). Only for the 128x128
// blocks (big problems) and when the other extent is at least 1024 (the
// copy's share grows as 1/N); not for an operand the epilogue also reads or
// that is both A and B (one region argument cannot be two layouts). The
// experimental stage_a block is the other answer to row-major A: asked for,
// it takes A as stored.
bool stage_through_transpose(const Plan& p, bool a, const machine::Descriptor& device) {
  if (!device.has(machine::Cap::TransposeBlock)) return false;  // no copy kernel on this device
  if (p.strategy != Strategy::Simt || p.bm != 128 || p.a_leaf == p.b_leaf || (a && (p.stage_a || p.norm_leaf >= 0)))
    return false;
  const int64_t leaf = a ? p.a_leaf : p.b_leaf;
  if (p.leaf_strides[leaf] != std::vector<int64_t>{0, 0, 0}) return false;  // the epilogue reads it
  return a ? !p.transpose_a && p.n >= 1024 : p.transpose_b && p.m >= 1024;
}

// The facts a schedule.matmul must agree with, from its region's matmul op
// (and the split of its result into halves, and an RMSNorm producing A, among `ops`).
Plan facts(const Op& core, const std::vector<const Value*>& leaves, const std::vector<const Op*>& ops) {
  MatmulSpec s = matmul_spec(core);
  Plan p;
  p.batch = s.batch;
  p.m = s.m, p.n = s.n, p.k = s.k;
  p.transpose_a = s.transpose_a, p.transpose_b = s.transpose_b;
  p.a_batch_stride = s.a_batched ? s.m * s.k : 0;
  p.b_batch_stride = s.b_batched ? s.k * s.n : 0;
  p.operand = core.operands[0]->type.dtype;
  auto leaf_of = [&](const Value* v) {
    auto it = std::find(leaves.begin(), leaves.end(), v);
    if (it == leaves.end()) fail("E302", "schedule.matmul: a matmul operand is not a region argument", core.loc);
    return static_cast<int64_t>(it - leaves.begin());
  };
  const Op* norm = norm_prologue(ops, core);
  p.a_leaf = leaf_of(norm ? norm->operands[0] : core.operands[0]);
  p.b_leaf = leaf_of(core.operands[1]);
  if (norm) p.norm_leaf = leaf_of(norm->operands[1]);
  p.halves = halves_split(ops, core) != nullptr;
  return p;
}

const Op* core_of(const Region& region) {
  for (auto& op : region.ops)
    if (op->name == "tessera.matmul") return op.get();
  return nullptr;
}

}  // namespace

const std::string& candidate_names() {
  static const std::string names = "tessera, tessera_tma, openblas, cublaslt";
  return names;
}

bool is_synthesized(const std::string& candidate) { return candidate == "tessera" || candidate == "tessera_tma"; }

const Op* halves_split(const std::vector<const Op*>& ops, const Op& core) {
  const Value* c = core.result();
  auto reads_c = [&](const Op* op) {
    return std::find(op->operands.begin(), op->operands.end(), c) != op->operands.end();
  };
  const Op* split = nullptr;
  for (const Op* op : ops)
    if (op->name == "tessera.split" && reads_c(op)) split = op;
  if (!split) return nullptr;
  // Two results of C's shape with half its columns: only a split of the last axis gives that.
  std::vector<int64_t> half = c->type.shape;
  const bool even = !half.empty() && half.back() >= 2 && half.back() % 2 == 0;
  if (even) half.back() /= 2;
  if (!even || split->results.size() != 2 || split->result(0)->type.shape != half ||
      split->result(1)->type.shape != half)
    fail("E302", "a split of a fused matmul's result must cut its columns into two equal halves", split->loc);
  for (const Op* op : ops)
    if (op != split && op != &core && reads_c(op))
      fail("E302", "a fused matmul's result split into halves is read only through them", op->loc);
  return split;
}

const Op* norm_prologue(const std::vector<const Op*>& ops, const Op& core) {
  const Op* norm = nullptr;
  for (const Op* op : ops)
    if (op->name == "tessera.rms_norm" && op->result() == core.operands[0]) norm = op;
  if (norm && matmul_spec(core).transpose_a)
    fail("E302", "an RMSNorm prologue of a fused matmul needs A row-major (its rows normalized)", norm->loc);
  return norm;
}

const Value* library_addend(const std::vector<const Op*>& ops, const Op& core) {
  if (ops.size() != 2) return nullptr;
  const Op* add = ops[0] == &core ? ops[1] : ops[1] == &core ? ops[0] : nullptr;
  if (!add || add->name != "tessera.add" || add->operands.size() != 2) return nullptr;
  const Value* r = core.result();
  const Value* c = add->operands[0] == r ? add->operands[1] : add->operands[1] == r ? add->operands[0] : nullptr;
  if (!c || c == r || c == core.operands[0] || c == core.operands[1] || !(c->type == r->type) ||
      !(add->result()->type == r->type))
    return nullptr;
  return c;
}

bool runs_region(const fused::FusedRegion& region, const std::string& candidate, const machine::Descriptor& device) {
  if (!is_synthesized(candidate)) return region.ops.size() == 1 || library_addend(region.ops, *region.core);
  const bool norm = norm_prologue(region.ops, *region.core) != nullptr;
  if (candidate == "tessera_tma") return !norm;
  return !halves_split(region.ops, *region.core) && (!norm || device.has(machine::Cap::MatmulNorm));
}

std::vector<Candidate> candidates(const fused::FusedRegion& region, const machine::Descriptor& device) {
  const Op& core = *region.core;
  const DType in = core.operands[0]->type.dtype, out = core.result()->type.dtype;
  std::vector<Candidate> c = {{"tessera", "synthesized", ""}};
  // The Hopper block: tessera's large tensor-core schedule with A and B
  // copied by TMA into a warp-specialized block (device/gpu/tessera_matmul_tma.cuh).
  std::string tma_why = device.has(machine::Cap::Tma) && device.has(machine::Cap::Wgmma)
                            ? ""
                            : "needs a device with TMA and wgmma (" + device.name + ", " + device.arch + ", has not)";
  if (tma_why.empty()) {
    Plan p = facts(core, region.leaves, region.ops);
    choose(p, device, true);
    tma_why = tma_unsupported(p);
  }
  c.push_back({"tessera_tma", "per-arch", tma_why});
  auto library = [&](const std::string& name, bool dtypes_ok, const std::string& dtypes) {
    std::string why;
    if (device.blas != name)
      why = "is not a library of " + device.name + (device.blas.empty() ? "" : " (its library: " + device.blas + ")");
    else if (!dtypes_ok) why = "takes " + dtypes;
    else if (core.operands[0] == core.operands[1]) why = "needs distinct operand buffers";
    c.push_back({name, "library", why});
  };
  library("openblas", in == DType::F32 && out == DType::F32, "f32 operands and an f32 result (sgemm)");
  library("cublaslt", in == DType::F32 ? out == DType::F32 : out == in || out == DType::F32,
          "f32 -> f32, or f16/bf16 -> the same or f32");
  return c;
}

std::string default_candidate(const fused::FusedRegion& region, const machine::Descriptor& device) {
  if (!device.has(machine::Cap::Tma) || !device.has(machine::Cap::Wgmma)) return "tessera";
  Plan p = facts(*region.core, region.leaves, region.ops);
  choose(p, device, false);
  const bool large_blocks = p.strategy == Strategy::Mma && p.bm == 128;  // the problem fills the SMs
  choose(p, device, true);
  return large_blocks && tma_unsupported(p).empty() ? "tessera_tma" : "tessera";
}

const std::vector<Field<Plan>>& fact_fields() {
  static const std::vector<Field<Plan>> fields = {
      field("batch", &Plan::batch),
      field("m", &Plan::m),
      field("n", &Plan::n),
      field("k", &Plan::k),
      field("transpose_a", &Plan::transpose_a),
      field("transpose_b", &Plan::transpose_b),
      field("a_leaf", &Plan::a_leaf),
      field("b_leaf", &Plan::b_leaf),
      field("a_batch_stride", &Plan::a_batch_stride),
      field("b_batch_stride", &Plan::b_batch_stride),
      field("operand", &Plan::operand),
      field("halves", &Plan::halves, Field<Plan>::When::IfNotDefault),
      field("norm_leaf", &Plan::norm_leaf, Field<Plan>::When::IfNotDefault),
  };
  return fields;
}

const std::vector<Field<Plan>>& decision_fields() {
  using When = Field<Plan>::When;
  static const std::vector<Field<Plan>> fields = {
      field("strategy", &Plan::strategy),
      int_list_field<Plan, int64_t>("block", {&Plan::bm, &Plan::bn, &Plan::bk}),
      int_list_field<Plan, int64_t>("warps", {&Plan::wm, &Plan::wn}),
      field("stages", &Plan::stages),
      field("min_blocks", &Plan::min_blocks),
      field("threads", &Plan::threads),
      field("vector_width", &Plan::vector_width),
      field("slab_rows", &Plan::slab_rows),
      field("group_m", &Plan::group_m),
      field("programs", &Plan::programs),
      field("scratch", &Plan::scratch),
      int_list_field<Plan, bool>("vec", {&Plan::vec_a, &Plan::vec_b}),
      field("tma", &Plan::tma, When::Always, [](const Plan& p) { return p.strategy == Strategy::Mma; }),
      // absent (not false) when off, so default schedules stay as they were
      field("stage_a", &Plan::stage_a, When::IfNotDefault),
  };
  return fields;
}

Value* emit_schedule(Builder& b, const fused::FusedRegion& region, const std::unordered_map<const Value*, Value*>& map,
                     const machine::Descriptor& device, const std::string& prefix, const std::string& candidate) {
  const Op& core = *region.core;
  bool known = false;
  for (const Candidate& c : candidates(region, device)) {
    if (c.name != candidate) continue;
    known = true;
    if (!c.unsupported.empty())
      fail("E304", "matmul candidate '" + candidate + "' does not apply here: it " + c.unsupported, core.loc);
  }
  if (!known) fail("E304", "unknown matmul candidate '" + candidate + "' (" + candidate_names() + ")", core.loc);
  if (!is_synthesized(candidate) && region.ops.size() != 1 && !library_addend(region.ops, core))
    fail("E303", "a library matmul's region holds the matmul alone, or with an added leaf (graph_to_schedule)",
         core.loc);
  Plan p = facts(core, region.leaves, region.ops);
  p.candidate = candidate;
  if (p.halves && candidate != "tessera_tma")
    fail("E303", "a matmul epilogue on column halves runs in the TMA block only (graph_to_schedule splits it off)",
         core.loc);
  const Op* norm = norm_prologue(region.ops, core);
  if (norm && !runs_region(region, candidate, device))
    fail("E303",
         "an RMSNorm prologue runs in the tessera block of a device with matmul_norm (graph_to_schedule splits it off)",
         core.loc);
  // The epilogue's space: C, or one of its halves.
  const Type& c = region.result->type;
  const std::vector<int> groups = {static_cast<int>(c.rank() - 2), 1, 1};
  for (const Value* leaf : region.leaves) {
    // Leaves the epilogue reads are addressed over [batch, m, n]; A and B
    // (and an RMSNorm prologue's x and w) only through the block library.
    bool in_epilogue = false;
    for (const Op* op : region.ops)
      if (op != &core && op != norm && std::find(op->operands.begin(), op->operands.end(), leaf) != op->operands.end())
        in_epilogue = true;
    if (!in_epilogue) {
      p.leaf_strides.push_back({0, 0, 0});
      continue;
    }
    auto st = fused::group_strides(leaf->type.shape, c.shape, groups);
    if (!st) fail("E303", "fused region: an epilogue leaf is not linear in [batch, m, n] (a fusion bug)");
    p.leaf_strides.push_back(*st);
  }
  // A leaf fusion left as a view is its base's buffer reshaped: the kernel
  // reads that buffer (fusion.cpp, reshaped_buffer).
  std::unordered_map<const Value*, Value*> bases = map;
  std::vector<bool> reshaped(region.leaves.size(), false);
  for (size_t l = 0; l < region.leaves.size(); ++l) {
    const Value* v = region.leaves[l];
    if (map.count(v)) continue;
    const ViewRead r = read_through_views(
        v, [&](const Value* u) { return map.count(u) > 0; },
        [&](const Value*) {
          fail("E303", "fused region: matmul leaf %" + v->name + " is not a reshaped buffer (a fusion bug)");
        });
    bases[v] = map.at(r.base);
    reshaped[l] = true;
  }
  // Operands read from a transposed copy: (leaf, the copy).
  std::vector<std::pair<int64_t, Value*>> copies;
  if (is_synthesized(candidate)) {
    p.tma = candidate == "tessera_tma";
    choose(p, device, p.tma);
    const bool copy_a = stage_through_transpose(p, true, device) && !reshaped[p.a_leaf],
               copy_b = stage_through_transpose(p, false, device) && !reshaped[p.b_leaf];
    for (auto [copy, leaf] : {std::pair{copy_a, p.a_leaf}, std::pair{copy_b, p.b_leaf}})
      if (copy) {
        const Value* v = region.leaves[leaf];
        copies.push_back(
            {leaf, transpose::emit_schedule(b, map.at(v), device, prefix + "." + v->name + "_t", core.loc)});
      }
    if (!copies.empty()) {
      p.transpose_a = p.transpose_a != copy_a;
      p.transpose_b = p.transpose_b != copy_b;
      choose(p, device, false);
    }
  }
  Op& op = fused::create_region_op(b, "schedule.matmul", region.leaves, region.ops, region.result, bases, prefix);
  // The region reads each copied operand as stored: the copy's type, and the
  // matmul's flag for it flipped.
  for (auto [leaf, copy] : copies) {
    op.operands[leaf] = copy;
    op.regions[0]->args[leaf]->type = copy->type;
  }
  if (!copies.empty())
    for (auto& inner : op.regions[0]->ops)
      if (inner->name == "tessera.matmul") {
        inner->attrs["transpose_a"] = p.transpose_a;
        inner->attrs["transpose_b"] = p.transpose_b;
      }
  AttrDict& a = op.attrs;
  a["family"] = "matmul";
  a["candidate"] = candidate;
  // A returned view of the result (row-major, every element) is written as it is.
  const Value& written = region.written_as ? *region.written_as : *region.result;
  record_device(a, device);
  write_fields(fact_fields(), p, a);
  a["leaf_strides"] = fused::leaf_strides_attr(p.leaf_strides);
  a["accum"] = std::string("f32");
  if (!is_synthesized(candidate)) {  // the library decides its own blocking
    op.loc = core.loc;
    Value* result = op.add_result(written.name, written.type);
    stamp_artifact_hash(op);
    return result;
  }
  write_fields(decision_fields(), p, a);
  op.loc = core.loc;
  Value* result = op.add_result(written.name, written.type);
  stamp_artifact_hash(op);
  return result;
}

Plan read_plan(const Op& op) {
  fused::verify_region(op, /*views=*/false, /*reshaped=*/true);
  const Region& region = *op.regions[0];
  const Op* core = core_of(region);
  if (!core) fail("E302", "schedule.matmul: the region has no tessera.matmul", op.loc);
  std::vector<const Value*> leaves;
  for (auto& a : region.args) leaves.push_back(a.get());
  std::vector<const Op*> ops;
  for (auto& inner : region.ops) ops.push_back(inner.get());
  Plan p = facts(*core, leaves, ops);
  // The kernel writes batch*m*out_n elements: an epilogue may not broadcast
  // the result wider. The result may be typed as that block reshaped (a
  // returned view, FusedRegion::written_as): the same bytes.
  std::vector<int64_t> written = core->result()->type.shape;
  written.back() = p.out_n();
  if (region.ops.back()->operands[0]->type.shape != written)
    fail("E302",
         "schedule.matmul: the result " + region.ops.back()->operands[0]->type.str() + " is not the matmul's shape " +
             core->result()->type.str() + (p.halves ? " with half its columns" : ""),
         op.loc);
  const machine::Descriptor device = read_device(op);
  // The recorded facts must be the region's.
  Plan recorded;
  read_fields(fact_fields(), op, recorded);
  for (const Field<Plan>& f : fact_fields())
    if (!f.equal(recorded, p))
      fail("E302", "schedule.matmul: the recorded " + f.name + " disagrees with its region", op.loc);
  if (string_attr(op, "accum") != "f32") fail("E302", "schedule.matmul: accum is f32", op.loc);
  p.leaf_strides = fused::read_leaf_strides(op, 3, 2);
  p.candidate = string_attr(op, "candidate");
  if (!is_synthesized(p.candidate)) {
    if (p.candidate != device.blas)
      fail("E302", "schedule.matmul: candidate '" + p.candidate + "' is not a library of device " + device.name,
           op.loc);
    // The matmul alone on two distinct operands (leaves 0 and 1), or with a
    // third leaf added to its result (the library's beta = 1).
    ops.pop_back();  // (the yield)
    const Value* addend = library_addend(ops, *core);
    const size_t n = addend ? 3 : 2;
    if (ops.size() != n - 1 || leaves.size() != n || p.a_leaf != 0 || p.b_leaf != 1 ||
        (addend && addend != leaves[2]) || region.ops.back()->operands[0] != ops.back()->result())
      fail("E302",
           "schedule.matmul: a library call's region holds the matmul on two distinct operands, alone or with a "
           "third one added to its result",
           op.loc);
    p.c_leaf = addend ? 2 : -1;
    return p;
  }
  if (p.norm_leaf >= 0 && !device.has(machine::Cap::MatmulNorm))
    fail("E302",
         "schedule.matmul: an RMSNorm prologue (norm_leaf) on device " + device.name +
             ", whose matmul block has none (no matmul_norm)",
         op.loc);
  for (size_t l = 0; l < p.leaf_strides.size(); ++l) {
    const int64_t i = static_cast<int64_t>(l);
    const bool operand_only = (i == p.a_leaf || i == p.b_leaf || i == p.norm_leaf) &&
                              p.leaf_strides[l] == std::vector<int64_t>{0, 0, 0};
    if (!operand_only)  // A and B are read by the block library, within their shapes
      fused::check_leaf_reach({p.batch, p.m, p.out_n()}, p.leaf_strides[l], op.operands[l]->type, op);
  }
  read_fields(decision_fields(), op, p);
  const bool cpu = !device.gpu();
  if (!device.has(machine::Cap::BlockMatmul) ||
      (cpu ? p.strategy != Strategy::Packed : p.strategy != (p.operand == DType::F32 ? Strategy::Simt : Strategy::Mma)))
    fail("E302",
         std::string("schedule.matmul: strategy '") + enum_name(p.strategy) + "' does not fit device " + device.name +
             " and " + std::string(dtype_name(p.operand)) + " operands",
         op.loc);
  if (p.min_blocks < 1 || p.min_blocks > 32) fail("E302", "schedule.matmul: min_blocks must be in [1, 32]", op.loc);
  if (p.strategy != Strategy::Mma && op.attr("tma"))
    fail("E302", "schedule.matmul: 'tma' is for the mma strategy only", op.loc);
  for (int64_t v : {p.bm, p.bn, p.bk, p.wm, p.wn, p.stages, p.group_m})
    if (v < 1 || v > 1024)
      fail("E302", "schedule.matmul: block, warps, stages and group_m must be in [1, 1024]", op.loc);
  if (!pow2(p.bn) || !pow2(p.slab_rows) || p.slab_rows * p.out_bn() > (1 << 16))
    fail("E302", "schedule.matmul: the block's columns and slab rows must be powers of two (slabs up to 2^16 lanes)",
         op.loc);
  if (p.threads < 1 || p.vector_width < 1 ||
      (cpu ? (p.bm % 12 != 0 || p.bn % 32 != 0 || p.threads != 1)
           : (p.threads != p.wm * p.wn * device.simd_width || p.threads > 1024 ||
              (p.slab_rows * p.out_bn()) % (p.threads * p.vector_width))))
    fail("E302",
         "schedule.matmul: block, warps, threads or slab do not fit the " + std::string(device.target()) +
             " block library",
         op.loc);
  fused::check_tile_shape(op, p.threads, p.vector_width, 1);
  if ((p.vec_a && !vec_aligned(p, true)) || (p.vec_b && !vec_aligned(p, false)))
    fail("E302", "schedule.matmul: 'vec' claims aligned 16-byte loads the layout does not give", op.loc);
  if (p.programs != p.batch * p.tiles_m() * p.tiles_n())
    fail("E302",
         "schedule.matmul records " + std::to_string(p.programs) + " programs but its blocks give " +
             std::to_string(p.batch * p.tiles_m() * p.tiles_n()),
         op.loc);
  check_threads(op, device, p.threads + (p.tma ? Plan::kTmaProducerThreads : 0));
  if (p.scratch < scratch_elements(p, device) || p.scratch > (1 << 20))
    fail("E302", "schedule.matmul: scratch is smaller than the block library needs (or over 2^20)", op.loc);
  if (device.gpu() && p.scratch * 4 > device.shared_bytes)
    fail("E302",
         "schedule.matmul: a scratch of " + std::to_string(p.scratch * 4) + " bytes exceeds the " +
             std::to_string(device.shared_bytes) + " bytes of shared memory a block of " + device.name + " holds",
         op.loc);
  if (p.tma != (p.candidate == "tessera_tma"))
    fail("E302", "schedule.matmul: 'tma' is set exactly for the candidate tessera_tma", op.loc);
  if (p.halves && !p.tma) fail("E302", "schedule.matmul: an epilogue on column halves needs the TMA block", op.loc);
  if (p.tma) {
    if (!device.has(machine::Cap::Tma) || !device.has(machine::Cap::Wgmma))
      fail("E302", "schedule.matmul: 'tma' on device " + device.name + ", which has no TMA and wgmma", op.loc);
    const std::string why = tma_unsupported(p);
    if (!why.empty()) fail("E302", "schedule.matmul: 'tma' claims a TMA block that " + why, op.loc);
  }
  if (p.stage_a) {
    const std::string why = stage_a_unsupported(p);
    if (!why.empty()) fail("E302", "schedule.matmul: 'stage_a' claims a register-staged A block that " + why, op.loc);
  }
  return p;
}

}  // namespace tessera::families::matmul
