// Graph IR's tessera.attention: softmax(scale * q k^T [+ causal mask]) v per
// (batch, head), with grouped-query heads.
//   %o = tessera.attention %q, %k, %v {causal = true, scale = 0.088388}
//        : (tensor<BxHxSqxDxbf16>, tensor<BxHkvxSkxDxbf16>, tensor<BxHkvxSkxDxbf16>) -> tensor<BxHxSqxDxbf16>
//   %o, %lse = tessera.attention ... -> (tensor<BxHxSqxDxbf16>, tensor<BxHxSqxf32>)
//   %dq, %dk, %dv = tessera.attention_grad %q, %k, %v, %o, %do, %lse {causal, scale}
// Query head h reads key/value head h / (H / Hkv). Causal: key j is visible
// to query i when j <= i + (Sk - Sq) (aligned to the end). The optional second
// result is the natural-log log-sum-exp of each row's scaled visible scores
// (f32; f64 for f64 inputs). docs/semantics.md states the rest.
#include <cmath>
#include <limits>

#include "ir/graph_dialect.hpp"

namespace tessera::ir {

namespace {
[[noreturn]] void bad(const Op& op, const char* code, const std::string& msg) {
  fail(code, op.name + ": " + msg, op.loc);
}

// q, k and v (the first three operands) and the attributes, shared by the
// forward op and its gradient.
AttentionSpec qkv_spec(const Op& op) {
  for (auto& [k, _] : op.attrs)
    if (k != "causal" && k != "scale") bad(op, "E205", "unknown attribute '" + k + "'");
  for (Value* v : op.operands)
    if (!v->type.is_tensor()) bad(op, "E207", "operands must be tensors, got " + v->type.str());
  const Type &q = op.operands[0]->type, &k = op.operands[1]->type, &v = op.operands[2]->type;
  if (q.dtype != k.dtype || q.dtype != v.dtype)
    bad(op, "E209", "q, k and v must have one dtype, got " + q.str() + ", " + k.str() + ", " + v.str());
  if (!is_float(q.dtype)) bad(op, "E215", "takes float tensors, got " + q.str());
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
    bad(op, "E217",
        "q, k and v are [batch, heads, sequence, head_dim] (rank 4), got " + q.str() + ", " + k.str() + ", " + v.str());
  if (!(k == v)) bad(op, "E217", "k and v must have one shape, got " + k.str() + " and " + v.str());
  AttentionSpec s;
  s.batch = q.shape[0];
  s.heads = q.shape[1];
  s.sq = q.shape[2];
  s.d = q.shape[3];
  s.kv_heads = k.shape[1];
  s.sk = k.shape[2];
  if (k.shape[0] != s.batch || k.shape[3] != s.d)
    bad(op, "E217", "k and v must have q's batch and head_dim, got q " + q.str() + " and k " + k.str());
  if (s.kv_heads == 0 ? s.heads != 0 : s.heads % s.kv_heads != 0)
    bad(op, "E217",
        "q's " + std::to_string(s.heads) + " heads must be a multiple of k's " + std::to_string(s.kv_heads) +
            " (grouped-query attention)");
  if (const Attr* c = op.attr("causal")) {
    if (!c->as_bool()) bad(op, "E211", "'causal' must be true or false");
    s.causal = *c->as_bool();
  }
  s.scale = s.d > 0 ? 1.0 / std::sqrt(static_cast<double>(s.d)) : 1.0;
  if (const Attr* a = op.attr("scale")) {
    const double* f = a->as_float();
    const int64_t* i = a->as_int();
    if (!f && !i) bad(op, "E211", "'scale' must be a number");
    s.scale = f ? *f : static_cast<double>(*i);
    // finite in the compute type (f32 but for f64 inputs)
    const double most = q.dtype == DType::F64 ? std::numeric_limits<double>::max() : std::numeric_limits<float>::max();
    if (!(std::fabs(s.scale) <= most)) bad(op, "E211", "'scale' must be finite in the compute type");
  }
  return s;
}

}  // namespace

DType attention_lse_dtype(DType operand) { return operand == DType::F64 ? DType::F64 : DType::F32; }

AttentionSpec attention_spec(const Op& op) {
  if (op.operands.size() < 3 || op.operands.size() > 4 || op.results.empty() || op.results.size() > 2)
    bad(op, "E205",
        "takes three or four operands (q, k, v, and optionally a mask) and has one or two results (o, and "
        "optionally lse)");
  AttentionSpec s = qkv_spec(op);
  const Type& q = op.operands[0]->type;
  if (op.operands.size() == 4) {
    const Type& m = op.operands[3]->type;
    if (m.dtype == DType::I1) s.mask = AttentionMask::Bool;
    else if (m.dtype == q.dtype || m.dtype == DType::F32) s.mask = AttentionMask::Bias;
    else bad(op, "E209", "the mask is i1 (true: attend) or an additive bias of q's dtype or f32, got " + m.str());
    const std::vector<int64_t> scores = {s.batch, s.heads, s.sq, s.sk};
    if (m.rank() > 4 || broadcast_shapes(m.shape, scores, op.loc) != scores)
      bad(op, "E217",
          "the mask " + m.str() +
              " does not broadcast to the scores' [batch, heads, sq, sk] = " + Type::tensor(m.dtype, scores).str());
  }
  if (!(op.results[0]->type == q))
    bad(op, "E205", "the result o is " + op.results[0]->type.str() + " but " + q.str() + " follows from q");
  s.lse = op.results.size() == 2;
  if (s.lse) {
    const Type want = Type::tensor(attention_lse_dtype(q.dtype), {s.batch, s.heads, s.sq});
    if (!(op.results[1]->type == want))
      bad(op, "E205", "the result lse is " + op.results[1]->type.str() + " but " + want.str() + " follows from q");
  }
  return s;
}

AttentionSpec attention_grad_spec(const Op& op) {
  if (op.operands.size() != 6 || op.results.size() != 3)
    bad(op, "E205", "takes six operands (q, k, v, o, do, lse) and has three results (dq, dk, dv)");
  const AttentionSpec s = qkv_spec(op);
  const Type &q = op.operands[0]->type, &k = op.operands[1]->type;
  const char* names[] = {"q", "k", "v", "o", "do", "lse"};
  for (int i : {3, 4})
    if (!(op.operands[i]->type == q))
      bad(op, "E217", std::string(names[i]) + " must have q's type " + q.str() + ", got " + op.operands[i]->type.str());
  const Type lse = Type::tensor(attention_lse_dtype(q.dtype), {s.batch, s.heads, s.sq});
  if (!(op.operands[5]->type == lse))
    bad(op, "E217", "lse must be " + lse.str() + " (the forward's log-sum-exp), got " + op.operands[5]->type.str());
  const Type want[] = {q, k, k};
  for (int i = 0; i < 3; ++i)
    if (!(op.results[i]->type == want[i]))
      bad(op, "E205",
          std::string("the result d") + names[i] + " is " + op.results[i]->type.str() + " but " + want[i].str() +
              " follows from " + names[i]);
  return s;
}

}  // namespace tessera::ir
