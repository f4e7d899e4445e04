// The matmul family: C = op(A) x op(B) (batched, either operand transposed)
// with a fused pointwise epilogue on C, as one kernel. A program computes one
// [BM, BN] block of C over the whole K into f32 scratch (tile.matmul: the
// target's block library), then applies the epilogue to slabs of `slab_rows`
// rows and stores them.
//   cpu:  strategy "packed": the block library packs A and B panels and runs an
//         AVX-512 register-blocked micro-kernel (device/cpu/tessera_matmul.hpp).
//   cuda: "simt" (f32: FFMA, no TF32) or "mma" (f16/bf16: tensor cores, f32
//         accumulation); the scratch is the block's shared memory, which also
//         holds the pipeline buffers of A and B, fed by cp.async; the candidate
//         tessera_tma (`tma`: one 128x256x64 block shape at every size) feeds
//         them through TMA tensor maps from a warp-specialized producer.
// Programs are ordered in groups of `group_m` block rows so that concurrent
// programs share A and B panels in cache.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "families/fused/region.hpp"
#include "families/plan_fields.hpp"
#include "ir/ir.hpp"
#include "machine/descriptor.hpp"

namespace tessera::families::matmul {

enum class Strategy { Packed, Simt, Mma };  // CPU panels; f32 FFMA; f16/bf16 tensor cores

struct Plan {
  // "tessera": the synthesized kernel; a library name ("openblas" on the CPU,
  // "cublaslt" on CUDA): the library computes the matmul, with at most an
  // added leaf (c_leaf: library_addend), and any other epilogue is a
  // separate pointwise kernel.
  std::string candidate = "tessera";
  int64_t c_leaf = -1;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false;
  int64_t a_leaf = 0, b_leaf = 1;                  // region arguments that are A and B
  int64_t a_batch_stride = 0, b_batch_stride = 0;  // 0: one matrix for every batch
  std::vector<std::vector<int64_t>> leaf_strides;  // per leaf: [batch, m, n] in the epilogue
  DType operand = DType::F32;                      // A's and B's dtype
  Strategy strategy = Strategy::Packed;
  int64_t bm = 0, bn = 0, bk = 0, wm = 1, wn = 1, stages = 1;
  int64_t threads = 1, vector_width = 16, slab_rows = 8, group_m = 8;
  int64_t min_blocks = 1;             // GPU: blocks an SM must fit (the register budget, __launch_bounds__)
  int64_t programs = 0, scratch = 0;  // scratch: f32 elements of the block's buffer
  bool vec_a = false, vec_b = false;  // 16-byte loads along A's/B's contiguous dim are aligned
  // cuda "mma": A and B arrive by TMA (tensor maps) into a warp-specialized
  // block with one more warpgroup (the copy producer) beyond `threads`.
  bool tma = false;
  static constexpr int64_t kTmaProducerThreads = 128;
  // cuda "simt" with row-major A (experimental matmul_f32_stage_a): A goes
  // through a register stage into a transposed [BK][BM+4] smem tile, two smem
  // stages (device/gpu/tessera_matmul_simt_stage_a.cuh).
  bool stage_a = false;
  // The epilogue reads C as two column halves side by side: a split of C into
  // [.., :n/2] and [.., n/2:] in the region (SwiGLU's silu(gate) * up on one
  // [gate | up] matmul; passes/fusion.cpp). A block's BN columns are then BN/2
  // of each half (B's columns from n0 and n0 + n/2) and the kernel writes
  // [batch, m, n/2]. The TMA block only.
  bool halves = false;
  // An RMSNorm prologue: the region computes rms_norm(x, w) @ B with x the
  // leaf a_leaf and w the leaf norm_leaf (-1: none), and the block computes
  // it (tile.matmul norm_eps): B's row k scaled by w[k], C's row by
  // rsqrt(mean(x_row^2) + eps) (passes/fusion.cpp). So the normalized x
  // never reaches memory. Devices with Cap::MatmulNorm.
  int64_t norm_leaf = -1;

  // f32 elements between rows of the C block in shared memory: the TMA
  // block pads each row by 8 (rows 256 floats apart put a warp's float2
  // stores of 4 rows on the same banks; 264 spreads them over all 32).
  int64_t c_stride() const { return tma ? bn + 8 : bn; }
  int64_t tiles_m() const { return (m + bm - 1) / bm; }
  // The columns the kernel writes, and those of a block.
  int64_t out_n() const { return halves ? n / 2 : n; }
  int64_t out_bn() const { return halves ? bn / 2 : bn; }
  int64_t tiles_n() const { return (out_n() + out_bn() - 1) / out_bn(); }
  // Element strides of A (m, k) and B (k, n) within one matrix.
  int64_t sam() const { return transpose_a ? 1 : k; }
  int64_t sak() const { return transpose_a ? m : 1; }
  int64_t sbk() const { return transpose_b ? 1 : n; }
  int64_t sbn() const { return transpose_b ? k : 1; }
};

// The candidates for a matmul region on a target, with the tier they belong
// to (synthesized, per-arch, library); `unsupported` says why one does not
// apply (empty: it applies).
struct Candidate {
  std::string name, tier, unsupported;
};
std::vector<Candidate> candidates(const fused::FusedRegion& region, const machine::Descriptor& device);

// The candidate a region takes when neither the user nor the arbiter named
// one: tessera_tma where it applies and the problem fills the device with its
// large blocks (it outran the cp.async block there on the H200:
// bench/evidence/cuda/matmul.packet.json), else tessera.
std::string default_candidate(const fused::FusedRegion& region, const machine::Descriptor& device);

// Every candidate name, for diagnostics: "tessera, tessera_tma, openblas, cublaslt".
const std::string& candidate_names();
// Tessera's own kernels (tessera, tessera_tma), as opposed to library calls.
bool is_synthesized(const std::string& candidate);

// The split of the core's result into column halves in a region's ops
// (Plan::halves), or null; E302 unless it halves the last axis.
const ir::Op* halves_split(const std::vector<const ir::Op*>& ops, const ir::Op& core);

// The rms_norm among a region's ops whose result is the core's A (Plan::norm_leaf),
// or null.
const ir::Op* norm_prologue(const std::vector<const ir::Op*>& ops, const ir::Op& core);

// The value a library adds to its product in its own epilogue (out = A x B
// + C, the library's beta = 1): where a region's ops are the matmul and one
// add of its result and a third value of the result's exact type (a
// residual connection); or null.
const ir::Value* library_addend(const std::vector<const ir::Op*>& ops, const ir::Op& core);

// Whether `candidate` runs the whole region in its kernel; graph_to_schedule
// otherwise runs an RMSNorm prologue as a row kernel, the matmul alone and the
// epilogue as a pointwise kernel (libraries but for an addend; tessera for an
// epilogue on column halves, tessera_tma for a prologue).
bool runs_region(const fused::FusedRegion& region, const std::string& candidate, const machine::Descriptor& device);

// A library candidate's region holds the matmul alone, or the matmul and the
// add of its library_addend (graph_to_schedule splits any other epilogue
// off); E304 if `candidate` does not apply.
ir::Value* emit_schedule(ir::Builder& b, const fused::FusedRegion& region,
                         const std::unordered_map<const ir::Value*, ir::Value*>& map, const machine::Descriptor& device,
                         const std::string& prefix, const std::string& candidate = "tessera");

Plan read_plan(const ir::Op& schedule_op);

// The fields a schedule.matmul records: the facts of its region (checked
// against it when read) and, for a synthesized kernel, the decisions.
const std::vector<Field<Plan>>& fact_fields();
const std::vector<Field<Plan>>& decision_fields();

// Why the TMA block cannot take this plan (empty: it can): the block shape,
// the ring in the scratch, and the tensor maps' rules (16-byte row strides,
// int32 coordinates).
std::string tma_unsupported(const Plan& p);

// Why the stage_a block (row-major A through registers) cannot take this
// plan (empty: it can): strategy, layout, stages and the loader's mapping.
std::string stage_a_unsupported(const Plan& p);

}  // namespace tessera::families::matmul

namespace tessera::families {
template <>
struct EnumNames<matmul::Strategy> {
  static constexpr std::array<std::pair<matmul::Strategy, const char*>, 3> names = {
      {{matmul::Strategy::Packed, "packed"}, {matmul::Strategy::Simt, "simt"}, {matmul::Strategy::Mma, "mma"}}};
};
}  // namespace tessera::families
