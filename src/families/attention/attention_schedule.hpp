// The attention family: o = softmax(scale * q k^T [causal mask]) v per
// (batch, head), online (FlashAttention): no Sq x Sk buffer. A program
// computes `bm` query rows of one (batch, head) against every key it sees,
// `bn` keys at a time (tile.attention: the target's attention block).
//   cpu:  strategy "tiled": f32 (f64 for f64) online softmax, vectorized, one
//         program a thread (device/cpu/tessera_attention.hpp).
//   cuda: "wgmma" (f16/bf16, head dims 64 and 128, a device with TMA and
//         wgmma): q, k and v arrive by TMA into an mbarrier ring fed by a
//         producer warpgroup; consumer warpgroups of 64 rows run q k^T and
//         p v on warpgroup MMA with the softmax in registers
//         (device/gpu/tessera_attention.cuh, device/gpu/ATTENTION_CONTRACT.md).
//         "split_kv" where a kv head has at most 8 query rows (decode:
//         heads / kv_heads * sq <= 8): a program a (batch, kv head, chunk of
//         `chunk` keys) on CUDA cores, f32 partials in the kernel's
//         workspace combined by the plane's last program
//         (device/gpu/tessera_attention_decode.cuh).
// Its gradient (tessera.attention_grad: dq, dk and dv from q, k, v, o, do
// and lse) is the same family with `grad`: key programs (a block of `bn`
// keys of a kv head: its dk and dv) then query programs (a block of `bm`
// rows: their dq), each recomputing its probabilities from lse, nothing
// accumulated across programs (device/cpu/tessera_attention_grad.hpp).
//   cpu:  strategy "tiled" as above, or "tiled_one_pass": a program a kv
//         head, its key blocks in order against every row that sees them,
//         dq added into the program's own buffer (five products a pair, not
//         seven), where there are kv heads enough to keep threads busy and
//         the buffer is small.
//   cuda: on a device whose descriptor has attention_grad_block: strategy
//         "mma" for f16/bf16 at head dims 64 and 128 on tensor cores (128
//         resident keys or rows a program, the other side streamed 32 at a
//         time, mma.sync; device/gpu/tessera_attention_grad_mma.cuh), else
//         "tiled" in a plain CUDA-core block (256 threads, f32 math in
//         shared memory; device/gpu/tessera_attention_grad.cuh).
// A mask operand (i1, or an additive bias) is read by the CPU block only;
// GPUs refuse it (E506) until their blocks read one.
// Other devices and configurations are refused (E506), never run elsewhere.
#pragma once
#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "families/fused/region.hpp"
#include "families/plan_fields.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/ir.hpp"
#include "machine/descriptor.hpp"

namespace tessera::families::attention {

enum class Strategy { Tiled, Wgmma, TiledOnePass, SplitKv, Mma };

struct Plan {
  // facts (from the tessera.attention op)
  int64_t batch = 0, heads = 0, kv_heads = 0, sq = 0, sk = 0, d = 0;
  bool causal = false, lse = false, grad = false;
  double scale = 1;
  DType dtype = DType::F32;
  // Region arguments that are q, k and v, and the gradient's o, do and lse
  // (one tensor may be several of them).
  int64_t q_leaf = 0, k_leaf = 1, v_leaf = 2, o_leaf = 3, do_leaf = 4, lse_leaf = 5;
  // The forward's mask operand (ir::AttentionSpec): its kind, region
  // argument and element strides over [batch, heads, sq, sk] (0 where it
  // broadcasts).
  ir::AttentionMask mask = ir::AttentionMask::None;
  int64_t mask_leaf = 3;
  std::vector<int64_t> mask_strides;
  // decisions
  Strategy strategy = Strategy::Tiled;
  int64_t bm = 0, bn = 0, stages = 1, threads = 1, programs = 0;
  int64_t scratch = 0;  // bytes of the block's shared memory (cuda); 0 on the cpu
  int64_t chunk = 0;    // split_kv: keys a program (a multiple of bn; at most bn chunks)
  // wgmma, causal: row blocks longest first across all heads (the last rows
  // of every head, then the rows before them...), so that the grid's last
  // wave holds only short blocks; chosen where every head's k and v fit half
  // the device's L2 (otherwise heads go one after another, their blocks
  // longest first, so a head's k and v stay in cache).
  bool interleave = false;
  // tiled forward: the query rows of a kv head's group of heads are one
  // plane of group * sq rows (q and o are [batch, kv_heads, group * sq, d]
  // row-major; lse likewise), so the block reads that kv head's k and v once
  // for all of them. Where no row's keys depend on its position: not causal,
  // or one query row (which sees every key), and no mask.
  bool fold_group = false;
  // Views (the strided blocks, Plan::strided: wgmma's tensor maps and
  // split_kv's pointers address any such layout): per region argument its
  // strides over [batch, heads, rows, head dim] and its first element in its
  // base's buffer; empty when every argument is its own contiguous buffer.
  std::vector<std::vector<int64_t>> leaf_strides;
  std::vector<int64_t> leaf_offsets;
  // The wgmma block writes o as [batch, rows, heads, head dim] (the schedule
  // op's `o_perm = [0, 2, 1, 3]`): the transposed view its reader takes is
  // then a buffer, with no copy.
  bool o_transposed = false;
  static constexpr int64_t kProducerThreads = 128;

  // o's element strides over [batch, heads, rows] (the head dim's is 1).
  std::vector<int64_t> o_strides() const {
    if (o_transposed) return {sq * heads * d, d, heads * d};
    return {heads * sq * d, sq * d, d};
  }

  // The query planes and their rows the forward's programs cover.
  int64_t q_planes() const { return batch * (fold_group ? kv_heads : heads); }
  int64_t q_rows() const { return fold_group ? group() * sq : sq; }
  int64_t m_blocks() const { return bm > 0 ? (q_rows() + bm - 1) / bm : 0; }
  int64_t n_blocks() const { return bn > 0 ? (sk + bn - 1) / bn : 0; }
  // The gradient's key programs, which come before its query programs.
  int64_t key_programs() const { return grad ? batch * kv_heads * n_blocks() : 0; }
  // split_kv: programs of a (batch, kv head), one a chunk of keys (one when there are none).
  int64_t chunks() const { return chunk > 0 ? std::max<int64_t>(1, (sk + chunk - 1) / chunk) : 0; }
  int64_t program_count() const {
    if (strategy == Strategy::SplitKv) return batch * kv_heads * chunks();
    return strategy == Strategy::TiledOnePass ? batch * kv_heads : key_programs() + q_planes() * m_blocks();
  }
  // The block that reads q, k and v as views and writes o through strides.
  bool strided() const { return (strategy == Strategy::Wgmma && !grad) || strategy == Strategy::SplitKv; }
  int64_t group() const { return kv_heads ? heads / kv_heads : 1; }
};

// Shared memory the CUDA block needs: tsr::attention_smem_bytes's formula
// (device/gpu/ATTENTION_CONTRACT.md), which the kernel static_asserts.
int64_t wgmma_smem_bytes(int64_t d, int64_t bm, int64_t bn, int64_t stages);
// Shared memory of the CUDA backward block: tsr::attn_grad_smem's size
// (k, v, q, do rows of d + 1 floats, P and dS rows of bn + 1, delta and lse).
int64_t grad_smem_bytes(int64_t d, int64_t bm, int64_t bn);
constexpr int64_t kGradThreads = 256;  // tsr::ATTN_GRAD_THREADS, tsr::attn_grad_mma::THREADS
// The tensor-core backward block: tsr::attention_grad_mma_smem_bytes (its
// resident rows and streamed steps: kGradMmaRows, 32).
constexpr int64_t kGradMmaRows = 128;  // tsr::attn_grad_mma::RES
int64_t grad_mma_smem_bytes(int64_t d);
// The backward block on warpgroup MMA: tsr::attention_grad_wgmma_smem_bytes
// (the same 128-row programs, 64 rows streamed a step).
int64_t grad_wgmma_smem_bytes(int64_t d);
// The split-KV block: tsr::attention_decode_smem_bytes and
// tsr::attention_decode_workspace_bytes (device/gpu/tessera_attention_decode.cuh).
constexpr int64_t kDecodeThreads = 128;  // tsr::ATTN_DECODE_THREADS
int64_t decode_smem_bytes(int64_t d, int64_t rows, int64_t bn);
int64_t decode_workspace_bytes(const Plan& p);

// The schedule.attention op of the region (the attention or attention_grad
// op alone): its results are the op's (o, and lse when it has it; dq, dk,
// dv). E506 where the device has no block for the configuration.
ir::Op& emit_schedule(ir::Builder& b, const fused::FusedRegion& region,
                      const std::unordered_map<const ir::Value*, ir::Value*>& map, const machine::Descriptor& device,
                      const std::string& prefix);

Plan read_plan(const ir::Op& schedule_op);

// Whether the kernel of `core` (an attention op) on `device` writes its
// result o as view `v` of it (reshapes and transposes of o) whose row-major
// bytes are o with heads and rows swapped ([batch, rows, heads, head dim]):
// the wgmma block stores o's rows with any strides. (Fusion checks that
// nothing else reads o or the views between.)
bool writes_view(const ir::Op& core, const ir::Value* v, const machine::Descriptor& device);

// Whether the kernel of `core` (an attention op) on `device` reads view `v`,
// one of its operands, from its base's buffer (has_buffer: which values have
// one) instead of a copy: the wgmma block takes q, k and v as tensor maps,
// which address a head-dim-contiguous layout with one stride between rows,
// one between heads and one between batches, on 16-byte boundaries.
bool reads_view(const ir::Op& core, const ir::Value* v, const machine::Descriptor& device,
                const std::function<bool(const ir::Value*)>& has_buffer);

// The element strides of a tensor map's rows, heads and batches over a
// [batch, heads, rows, head dim] operand with element strides `st` (a dim
// of extent 1 gets one that encodes): nullopt where no map addresses that
// layout (the head dim not contiguous, a stride or the start off a 16-byte
// boundary).
std::optional<std::array<int64_t, 3>> map_strides(const std::vector<int64_t>& shape, const std::vector<int64_t>& st,
                                                  int64_t offset, DType dtype);

const std::vector<Field<Plan>>& fact_fields();
const std::vector<Field<Plan>>& decision_fields();

}  // namespace tessera::families::attention

namespace tessera::families {
template <>
struct EnumNames<ir::AttentionMask> {
  static constexpr std::array<std::pair<ir::AttentionMask, const char*>, 3> names = {
      {{ir::AttentionMask::None, "none"}, {ir::AttentionMask::Bool, "bool"}, {ir::AttentionMask::Bias, "bias"}}};
};
template <>
struct EnumNames<attention::Strategy> {
  static constexpr std::array<std::pair<attention::Strategy, const char*>, 5> names = {
      {{attention::Strategy::Tiled, "tiled"},
       {attention::Strategy::Wgmma, "wgmma"},
       {attention::Strategy::TiledOnePass, "tiled_one_pass"},
       {attention::Strategy::SplitKv, "split_kv"},
       {attention::Strategy::Mma, "mma"}}};
};
}  // namespace tessera::families
