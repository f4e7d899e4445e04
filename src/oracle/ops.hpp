// Internal to the oracle (src/oracle/*.cpp): the operand view shared by the op
// evaluators, and the evaluators of the pointwise (pointwise.cpp) and row
// (rows.cpp) ops. Like the rest of the oracle it reads op attributes itself and
// shares no code with the compiler.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/ir.hpp"
#include "oracle/reference.hpp"
#include "runtime/tensor.hpp"

namespace tessera::oracle::detail {

// An operand during evaluation: a func argument (a Tensor, exact, tolerance 0)
// or an earlier op's result (values in double with their own tolerances).
// Reading a Tensor in place avoids a double copy of possibly huge inputs.
struct Source {
  const Tensor* tensor = nullptr;
  const Expected* computed = nullptr;

  const std::vector<int64_t>& shape() const { return tensor ? tensor->shape() : computed->shape; }
  DType dtype() const { return tensor ? tensor->dtype() : computed->dtype; }
  double at(int64_t i) const { return tensor ? tensor->get(i) : computed->value[i]; }
  double tol(int64_t i) const { return tensor ? 0.0 : computed->tolerance[i]; }
};

std::string type_string(const std::vector<int64_t>& shape, DType dt);
int64_t product(const std::vector<int64_t>& shape);

// E802 "oracle: <op name>: msg" at the op.
[[noreturn]] void bad_op(const ir::Op& op, const std::string& msg);
// E802 unless every attribute key is in `allowed`.
void only_attrs(const ir::Op& op, std::initializer_list<const char*> allowed);
// E802 unless the op has `n` operands and one tensor result.
void expect_arity(const ir::Op& op, size_t n);
// A numeric attribute (float, or an integer written without a point), or
// `fallback` when it is absent.
double float_attr(const ir::Op& op, const char* key, double fallback);

// Func `name` of a Graph IR module (empty: the first); E802 when there is
// none or it has no body.
const ir::Op& pick_func(const ir::Module& graph, const std::string& name);

// An empty Expected of the declared type of result `r` (shape, dtype, sized arrays).
Expected result_like(const ir::Op& op, size_t r = 0);

// Which elements of a result an evaluation must compute: one flag per element,
// or nullptr for all of them. Elements not needed are left 0 with tolerance 0;
// a sampled check reads only the needed ones (reference.hpp, `Sample`).
using Need = const uint8_t*;
inline bool needed(Need need, int64_t i) { return !need || need[i] != 0; }

// tessera.{add,...,pow}, {neg,...,silu}, cast, constant; false if `op` is none
// of them (then `out` is untouched).
bool evaluate_pointwise(const ir::Op& op, const std::vector<Source>& in, Need need, Expected& out);
// tessera.softmax, log_softmax, layer_norm, rms_norm; false if none of them.
bool evaluate_row_op(const ir::Op& op, const std::vector<Source>& in, Need need, Expected& out);
// tessera.matmul; false if `op` is not one.
bool evaluate_matmul(const ir::Op& op, const std::vector<Source>& in, Need need, Expected& out);

// tessera.argmax, argmin (arg_reduce.cpp); false if `op` is neither.
bool is_arg_reduce(const ir::Op& op);
bool evaluate_arg_reduce(const ir::Op& op, const std::vector<Source>& in, Need need, Expected& out);
bool demand_arg_reduce(const ir::Op& op, const std::vector<std::vector<int64_t>>& in_shapes, const uint8_t* need,
                       std::vector<std::vector<uint8_t>>& in_need);

// tessera.concat; false if `op` is not one.
bool evaluate_concat(const ir::Op& op, const std::vector<Source>& in, Need need, Expected& out);
bool demand_concat(const ir::Op& op, const uint8_t* need, std::vector<std::vector<uint8_t>>& in_need);

// tessera.gather, take_along, scatter_add (indexing.cpp); false if `op` is none. An
// index outside its axis is E615.
bool is_index(const ir::Op& op);
bool evaluate_index(const ir::Op& op, const std::vector<Source>& in, Need need, Expected& out);
bool demand_index(const ir::Op& op, const uint8_t* need, std::vector<std::vector<uint8_t>>& in_need);

// View ops (reshape, transpose, slice, broadcast_to, split: several results).
bool is_view(const ir::Op& op);
// One Expected per result; need[r] flags result r's wanted elements (nullptr:
// all; kNothing: none, left empty of values).
inline const uint8_t* const kNothing = reinterpret_cast<const uint8_t*>(1);
std::vector<Expected> evaluate_view(const ir::Op& op, const Source& x, const std::vector<Need>& need);
// Sets in_need for the operand elements the flagged result elements read
// (need[r] null: result r is not needed).
void demand_view(const ir::Op& op, const std::vector<const uint8_t*>& need, std::vector<uint8_t>& in_need);

// tessera.attention (results o and, optionally, lse): like a view, one
// Expected per result, need[r] flags result r's wanted elements (kNothing: none).
bool is_attention(const ir::Op& op);
std::vector<Expected> evaluate_attention(const ir::Op& op, const std::vector<Source>& in,
                                         const std::vector<Need>& need);
// Sets in_need[0..2] (sized to q, k, v) for the rows the flagged results read
// (need[r] null: result r is not needed).
void demand_attention(const ir::Op& op, const std::vector<const uint8_t*>& need,
                      std::vector<std::vector<uint8_t>>& in_need);

// tessera.attention_grad (attention_grad.cpp; results dq, dk, dv): as attention,
// in_need sized to its six operands.
bool is_attention_grad(const ir::Op& op);
std::vector<Expected> evaluate_attention_grad(const ir::Op& op, const std::vector<Source>& in,
                                              const std::vector<Need>& need);
void demand_attention_grad(const ir::Op& op, const std::vector<const uint8_t*>& need,
                           std::vector<std::vector<uint8_t>>& in_need);

// tessera.softmax_grad, log_softmax_grad, layer_norm_grad, rms_norm_grad
// (row_grads.cpp; the norms' have several results): as attention.
bool is_row_grad(const ir::Op& op);
std::vector<Expected> evaluate_row_grad(const ir::Op& op, const std::vector<Source>& in, const std::vector<Need>& need);
void demand_row_grad(const ir::Op& op, const std::vector<const uint8_t*>& need,
                     std::vector<std::vector<uint8_t>>& in_need);

// Evaluates `ops` (in program order) with `args` bound to tensors and returns
// `results` (sampled: reference.hpp). The core of evaluate(), also used on the
// region of one kernel (kernel_check.cpp).
std::vector<Expected> evaluate_ops(const std::vector<const ir::Op*>& ops,
                                   const std::unordered_map<const ir::Value*, const Tensor*>& args,
                                   const std::vector<const ir::Value*>& results,
                                   const std::vector<std::vector<uint8_t>>* sample);

// Demand, the backward half of a sampled evaluation: given which elements of
// the op's result are needed (`need`, one flag per element), sets the flags of
// the operand elements it reads (`in_need[k]`, sized to operand k and
// zero-initialized by the caller). False if `op` is not of the family; E802
// for shapes the op cannot have.
bool demand_pointwise(const ir::Op& op, const std::vector<std::vector<int64_t>>& in_shapes, const uint8_t* need,
                      std::vector<std::vector<uint8_t>>& in_need);
bool demand_row_op(const ir::Op& op, const std::vector<std::vector<int64_t>>& in_shapes, const uint8_t* need,
                   std::vector<std::vector<uint8_t>>& in_need);
bool demand_matmul(const ir::Op& op, const std::vector<std::vector<int64_t>>& in_shapes, const uint8_t* need,
                   std::vector<std::vector<uint8_t>>& in_need);

}  // namespace tessera::oracle::detail
