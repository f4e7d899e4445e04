// Graph IR: what the user means. Ops of the "tessera" dialect on tensors.
//   %y = tessera.reduce %x {kind = "sum", axes = [1], keepdims = false}
//        : tensor<4096x1024xf32> -> tensor<4096xf32>
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.hpp"

namespace tessera::ir {

enum class ReduceKind { Sum, Mean, Max, Min, Prod };
const char* reduce_kind_name(ReduceKind k);

struct ReduceSpec {
  ReduceKind kind = ReduceKind::Sum;
  std::vector<int64_t> axes;  // normalized: non-negative, sorted, unique
  bool keepdims = false;
};

// Reads and validates the attributes of a tessera.reduce against its input
// type: negative axes normalized, duplicates/out-of-range rejected (E2xx).
ReduceSpec reduce_spec(const Op& op);
ReduceSpec make_reduce_spec(const std::string& kind, std::vector<int64_t> axes, bool keepdims, const Type& input,
                            const SourceLoc& loc = {});
Type reduce_result_type(const Type& input, const ReduceSpec& spec);

// ---- pointwise and row ops (graph_pointwise.cpp) ----------------------------
//   %z = tessera.add %x, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
//   %e = tessera.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
//   %c = tessera.constant {value = 2.0} : () -> tensor<f32>
//   %y = tessera.softmax %x {axis = -1} : tensor<MxNxf32> -> tensor<MxNxf32>
//   %n = tessera.layer_norm %x, %w, %b {eps = 1.0e-05} : (tensor<MxN..>, tensor<N..>, tensor<N..>) -> tensor<MxN..>
//   %m = tessera.lt %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
//   %w = tessera.where %m, %x, %y : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
//   %i = tessera.iota {axis = 1} : () -> tensor<4x8xi32>
// Binary ops and where broadcast numpy-style and need operands of one dtype
// (E209). Integer operands (i32, i64) take neg abs add sub mul max min and the
// comparisons; and/or/not take i1; the other functions take floats (E215).
// tessera.neg abs exp log sqrt rsqrt tanh sigmoid relu gelu silu sin cos exp2
// log2 erf floor ceil round clamp not
bool is_unary_op(const std::string& name);
// tessera.add sub mul div max min pow, eq ne lt le gt ge (i1 results), and or
bool is_binary_op(const std::string& name);
bool is_comparison_op(const std::string& name);  // tessera.eq ne lt le gt ge
// unary, binary, where, iota, concat, gather, take_along, cast, constant
bool is_pointwise_op(const std::string& name);
// tessera.softmax log_softmax layer_norm rms_norm, and their gradient ops
bool is_row_op(const std::string& name);
// The numpy broadcast of two shapes; E210 names both when they do not broadcast.
std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                      const SourceLoc& loc = {});
// The pointwise function an op computes: "exp", "add", "gelu_tanh", "cast", "constant".
std::string pointwise_fn(const Op& op);
// tessera.clamp's bounds: min(max(x, lo), hi) (numpy's clip; lo > hi gives
// hi); a missing bound is infinite. E211 unless one is given and neither is NaN.
struct ClampBounds {
  double lo, hi;
};
ClampBounds clamp_bounds(const Op& op);
// tessera.iota's axis (normalized; E203 out of range, E211 missing): element
// [i0, ..., ik] of its result is i_axis.
int64_t iota_axis(const Op& op);
// Row ops: the normalized axis (softmax, log_softmax; last axis for the norms) and eps.
int64_t row_op_axis(const Op& op);
double row_op_eps(const Op& op);
// Verifies one pointwise or row op (types, attributes); E205/E209-E212, E215.
void verify_pointwise_or_row_op(const Op& op);

// ---- row gradient ops (graph_row_grad.cpp) ---------------------------------
//   %dx = tessera.softmax_grad %y, %dy {axis = -1} : (tensor<MxN..>, tensor<MxN..>) -> tensor<MxN..>
//   %dx = tessera.log_softmax_grad %y, %dy {axis = -1} : (same) -> tensor<MxN..>
//   %dx, %dw, %db = tessera.layer_norm_grad %x, %w, %dy {eps = 1.0e-05}
//        : (tensor<MxN..>, tensor<N..>, tensor<MxN..>) -> (tensor<MxN..>, tensor<N..>, tensor<N..>)
//   %dx, %dw = tessera.rms_norm_grad %x, %w, %dy {eps = 1.0e-06} : (same) -> (tensor<MxN..>, tensor<N..>)
// Row ops too (is_row_op): each is one row kernel. y is the forward op's
// result; the norms' statistics are recomputed from x.
bool is_row_grad_op(const std::string& name);
bool is_norm_grad_op(const std::string& name);  // layer_norm_grad, rms_norm_grad
void verify_row_grad_op(const Op& op);

// ---- matmul (graph_matmul.cpp) ---------------------------------------------
//   %c = tessera.matmul %a, %b {transpose_a = false, transpose_b = false}
//        : (tensor<BxMxKxbf16>, tensor<KxNxbf16>) -> tensor<BxMxNxf32>
struct MatmulSpec {
  int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false;
  std::vector<int64_t> batch_shape;           // the result's batch dims
  int64_t batch = 1;                          // their product
  bool a_batched = false, b_batched = false;  // false: one matrix shared by every batch
};
// Validates a tessera.matmul (E205, E207, E209, E211, E213, E214) and reads it.
MatmulSpec matmul_spec(const Op& op);

// ---- attention (graph_attention.cpp) -----------------------------------------
//   %o, %lse = tessera.attention %q, %k, %v {causal = true, scale = 0.125}
//        : (tensor<BxHxSqxDxbf16>, tensor<BxHkvxSkxDxbf16>, tensor<BxHkvxSkxDxbf16>)
//        -> (tensor<BxHxSqxDxbf16>, tensor<BxHxSqxf32>)
//   %o = tessera.attention %q, %k, %v, %mask : (..., tensor<SqxSkxi1>) -> ...
// The optional fourth operand broadcasts (numpy, from the right) to
// [B, H, Sq, Sk]: i1 (true: the key is attended) or an additive bias of q's
// dtype or f32, added to the scaled scores.
enum class AttentionMask { None, Bool, Bias };
struct AttentionSpec {
  int64_t batch = 0, heads = 0, kv_heads = 0, sq = 0, sk = 0, d = 0;
  bool causal = false;
  double scale = 1;  // default 1/sqrt(d)
  bool lse = false;  // the op has the second result
  AttentionMask mask = AttentionMask::None;
};
// Validates a tessera.attention (E205, E207, E209, E211, E215, E217) and reads it.
AttentionSpec attention_spec(const Op& op);
//   %dq, %dk, %dv = tessera.attention_grad %q, %k, %v, %o, %do, %lse {causal, scale}
// The gradient of attention's o (lse as the forward wrote it; o and do of
// q's type; dq of q's, dk and dv of k's). Validates it likewise (lse = false).
AttentionSpec attention_grad_spec(const Op& op);
// tessera.attention or tessera.attention_grad (the attention family's ops).
inline bool is_attention_op(const std::string& name) {
  return name == "tessera.attention" || name == "tessera.attention_grad";
}
// The lse result's dtype: f32, or f64 for f64 operands.
DType attention_lse_dtype(DType operand);

// ---- argmax / argmin (graph_arg_reduce.cpp) ----------------------------------
//   %i = tessera.argmax %x {axis = 1} : tensor<4x6xf32> -> tensor<4xi64>
//   %j = tessera.argmin %x {axis = -1, keepdims = true} : tensor<4x6xf32> -> tensor<4x1xi64>
// The position along `axis` of the largest (smallest) element, as numpy's:
// the first one on ties; a NaN counts as the largest and the smallest (the
// first NaN wins). Any element type; the axis must not be empty (E218).
bool is_arg_reduce_op(const std::string& name);  // tessera.argmax argmin
struct ArgReduceSpec {
  bool max = true;
  int64_t axis = 0;  // normalized
  bool keepdims = false;
  int64_t outer = 1, extent = 1, inner = 1;  // the operand as [outer, extent, inner]
};
// Validates a tessera.argmax/argmin (E203, E205, E207, E211, E218) and reads it.
ArgReduceSpec arg_reduce_spec(const Op& op);

// ---- indexing (graph_indexing.cpp) -------------------------------------------
//   %e = tessera.gather %table, %ids {axis = 0} : (tensor<VxDxf32>, tensor<BxSxi64>) -> tensor<BxSxDxf32>
//   %l = tessera.take_along %logits, %labels {axis = -1} : (tensor<NxVxf32>, tensor<Nx1xi64>) -> tensor<Nx1xf32>
// gather is numpy's take (an embedding lookup), take_along numpy's
// take_along_axis (x and the indices broadcast except along the axis). Indices
// are i32 or i64 in [-n, n) for an axis of extent n, a negative one counting
// from the end; any other index is an error of the run (E615), never a read
// outside the operand. A fused kernel reads x where each index points, so x
// is read from memory (like a concat's operands).
bool is_index_op(const std::string& name);  // tessera.gather take_along
struct IndexSpec {
  bool along = false;  // take_along
  int64_t axis = 0;    // normalized
  int64_t extent = 0;  // x's extent along the axis: the valid indices are [-extent, extent)
};
// Validates a gather or take_along (E203, E205, E207, E210-E212, E215, E216, E219) and reads it.
IndexSpec index_spec(const Op& op);
// The result type of a gather (along = false) or take_along of x by idx.
Type index_result_type(bool along, const Type& x, const Type& idx, int64_t axis, const SourceLoc& loc = {});
//   %d = tessera.scatter_add %g, %ids {axis = 0} : (tensor<BxSxDxf32>, tensor<BxSxi64>) -> tensor<VxDxf32>
// gather's transpose (numpy's np.add.at into zeros): the result's slice at
// each index along the axis sums the slices of g that index picked; g has
// the shape a gather of the result by the indices would have. Indices as for
// gather (E615 outside [-n, n)). The sums run in index order, so they are
// deterministic.
bool is_scatter_op(const std::string& name);  // tessera.scatter_add
// Validates a scatter_add (E203, E205, E207, E211, E212, E215, E219) and
// reads it: `axis` of the result, `extent` the result's extent there.
IndexSpec scatter_spec(const Op& op);

// ---- views (graph_views.cpp) -----------------------------------------------
//   %r = tessera.reshape %x : tensor<4x6xf32> -> tensor<2x12xf32>
//   %t = tessera.transpose %x {perm = [1, 0]} : tensor<4x6xf32> -> tensor<6x4xf32>
//   %s = tessera.slice %x {start = [0, 1], limit = [4, 6], stride = [1, 2]} : tensor<4x6xf32> -> tensor<4x3xf32>
//   %b = tessera.broadcast_to %x : tensor<1x6xf32> -> tensor<4x6xf32>
//   %p, %q = tessera.split %x {axis = 1, sizes = [2, 4]} : tensor<4x6xf32> -> (tensor<4x2xf32>, tensor<4x4xf32>)
// Each result is the operand's elements seen another way: an element of the
// result is an element of the operand at an affine offset (reshape: when the
// operand's layout allows it), so kernels read views without copies.
bool is_view_op(const std::string& name);  // reshape transpose slice broadcast_to split
// An affine layout: element [i0, ..., ik] of a tensor is element
// offset + sum(i_d * strides[d]) of a buffer.
struct Layout {
  int64_t offset = 0;
  std::vector<int64_t> strides;
  static Layout contiguous(const std::vector<int64_t>& shape);  // C order (size-1 dims: stride 0)
};
// The layout of result `result` of view op `op` whose operand has layout
// `in`, or nullopt when it has none (a reshape across dims `in` does not lay
// out contiguously: the operand must be copied first).
std::optional<Layout> view_layout(const Op& op, const Layout& in, size_t result = 0);
// Where value `v` is read from: up its chain of view ops to the first value
// that has a buffer (`has_buffer`, or any value no view op defines), and the
// layout `v` has over that buffer. A reshape its operand's layout cannot
// express calls `unviewable(operand)` and reads that operand as a buffer.
struct ViewRead {
  const Value* base;
  Layout layout;
};
ViewRead read_through_views(const Value* v, const std::function<bool(const Value*)>& has_buffer,
                            const std::function<void(const Value*)>& unviewable);
// Verifies a view op (E205, E203, E216).
void verify_view_op(const Op& op);
//   %c = tessera.concat %a, %b {axis = 1} : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<4x5xf32>
// The operands joined along `axis` (the other extents equal, one dtype). A
// fused kernel computes it where it is read (each element from the operand
// its coordinate falls in); its operands are read from memory.
int64_t concat_axis(const Op& op);  // normalized
void verify_concat(const Op& op);   // E205, E203, E209, E216

// Checks a Graph IR module: known ops, consistent types, returns that match.
void verify_graph(const Module& m);

// Shared by every layer: the func's return matches its declared results.
void verify_func_return(const Op& func);

}  // namespace tessera::ir
