// Graph IR's tessera.matmul: C = op(A) x op(B), 2-D or batched.
//   %c = tessera.matmul %a, %b {transpose_a = false, transpose_b = true}
//        : (tensor<8x512x256xbf16>, tensor<1024x256xbf16>) -> tensor<8x512x1024xf32>
// A is [..., M, K] ([..., K, M] with transpose_a), B is [..., K, N] ([..., N, K]
// with transpose_b). Batch dims broadcast like numpy, with one restriction a
// kernel relies on: each operand's batch is either the result's whole batch or
// absent (rank 2, shared by every batch). A and B share one dtype (f32, f16 or
// bf16); the result states its own dtype (f32 accumulation in every case).
#include "ir/graph_dialect.hpp"

namespace tessera::ir {

namespace {
[[noreturn]] void bad(const Op& op, const char* code, const std::string& msg) {
  fail(code, "tessera.matmul: " + msg, op.loc);
}
bool flag(const Op& op, const char* key) {
  const Attr* a = op.attr(key);
  if (!a) return false;
  if (!a->as_bool()) bad(op, "E211", std::string("'") + key + "' must be true or false");
  return *a->as_bool();
}
bool matmul_dtype(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }
}  // namespace

MatmulSpec matmul_spec(const Op& op) {
  if (op.operands.size() != 2 || op.results.size() != 1)
    bad(op, "E205", "takes two operands (a, b) and has one result");
  for (auto& [k, _] : op.attrs)
    if (k != "transpose_a" && k != "transpose_b") bad(op, "E205", "unknown attribute '" + k + "'");
  const Type &a = op.operands[0]->type, &b = op.operands[1]->type, &c = op.results[0]->type;
  if (!a.is_tensor() || !b.is_tensor() || !c.is_tensor()) bad(op, "E207", "operands and result must be tensors");
  if (a.rank() < 2 || b.rank() < 2)
    bad(op, "E213", "operands need rank 2 or more (matrices, or batches of them), got " + a.str() + " and " + b.str());
  if (a.dtype != b.dtype)
    bad(op, "E209",
        "operands have dtypes " + std::string(dtype_name(a.dtype)) + " and " + std::string(dtype_name(b.dtype)) +
            "; insert a tessera.cast (no implicit promotion)");
  if (!matmul_dtype(a.dtype) || !matmul_dtype(c.dtype))
    bad(op, "E214",
        "supports f32, f16 and bf16 operands and results (f32 accumulation), got " + a.str() + " -> " + c.str());
  MatmulSpec s;
  s.transpose_a = flag(op, "transpose_a");
  s.transpose_b = flag(op, "transpose_b");
  const int64_t ra = a.rank(), rb = b.rank();
  s.m = a.shape[ra - (s.transpose_a ? 1 : 2)];
  s.k = a.shape[ra - (s.transpose_a ? 2 : 1)];
  const int64_t kb = b.shape[rb - (s.transpose_b ? 1 : 2)];
  s.n = b.shape[rb - (s.transpose_b ? 2 : 1)];
  if (kb != s.k)
    bad(op, "E213",
        "contraction sizes differ: a gives K = " + std::to_string(s.k) + ", b gives " + std::to_string(kb) + " (" +
            a.str() + " x " + b.str() + ")");
  std::vector<int64_t> ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  s.batch_shape = broadcast_shapes(ba, bb, op.loc);
  // An operand with more than one matrix must have exactly the result's batch
  // dims (a kernel steps through it with one stride per batch).
  auto batched = [&](const std::vector<int64_t>& ob) {
    int64_t n = 1;
    for (int64_t d : ob) n *= d;
    if (n != 1 && ob != s.batch_shape)
      bad(op, "E213",
          "an operand's batch dims must be the result's whole batch or absent; got " + a.str() + " x " + b.str());
    return n != 1;
  };
  s.a_batched = batched(ba);
  s.b_batched = batched(bb);
  for (int64_t d : s.batch_shape) s.batch *= d;
  std::vector<int64_t> shape = s.batch_shape;
  shape.push_back(s.m);
  shape.push_back(s.n);
  const Type want = Type::tensor(c.dtype, shape);
  if (!(c == want)) bad(op, "E205", "result type is " + c.str() + " but " + want.str() + " follows from the operands");
  return s;
}

}  // namespace tessera::ir
