#include "passes/matvecs_as_reductions.hpp"

#include "ir/graph_dialect.hpp"

namespace tessera::passes {

using namespace tessera::ir;

namespace {

// Builds the rewrite's new ops, to go right before the matmul they replace.
struct Before {
  std::vector<std::unique_ptr<Op>> ops;
  std::string base;
  SourceLoc loc;

  Value* add(const std::string& name, std::vector<Value*> operands, Type type, AttrDict attrs = {}) {
    auto op = std::make_unique<Op>();
    op->name = name;
    op->operands = std::move(operands);
    op->attrs = std::move(attrs);
    op->loc = loc;
    Value* out = op->add_result(base + "." + std::to_string(ops.size()), std::move(type));
    ops.push_back(std::move(op));
    return out;
  }
  Value* reshape(Value* v, std::vector<int64_t> shape) {
    return v->type.shape == shape ? v : add("tessera.reshape", {v}, Type::tensor(v->type.dtype, std::move(shape)));
  }
  Value* cast(Value* v, DType d) {
    return v->type.dtype == d ? v : add("tessera.cast", {v}, Type::tensor(d, v->type.shape));
  }
};

}  // namespace

void matvecs_as_reductions(Module& graph) {
  for (Op* f : graph.funcs()) {
    Region& body = *f->regions[0];
    for (size_t i = 0; i < body.ops.size(); ++i) {
      Op& mm = *body.ops[i];
      if (mm.name != "tessera.matmul" || mm.operands.size() != 2 || mm.results.size() != 1) continue;
      if (mm.operands[0]->type.rank() != 2 || mm.operands[1]->type.rank() != 2) continue;
      const MatmulSpec s = matmul_spec(mm);
      if (s.m != 1 && s.n != 1) continue;
      const Type result = mm.result()->type;
      // Same dtypes compute in it; mixed ones (f16 x f16 -> f32, f32 x f32 -> bf16) in f32.
      const DType compute = mm.operands[0]->type.dtype == result.dtype ? result.dtype : DType::F32;
      Before b{{}, mm.result()->name, mm.loc};
      Value* a = b.cast(mm.operands[0], compute);
      Value* w = b.cast(mm.operands[1], compute);
      // The vector side becomes a row or column broadcast along the matrix as stored.
      Value *matrix, *vector;
      bool vector_is_column;  // [K, 1] against a matrix stored K-major in its rows' direction
      if (s.m == 1) {
        matrix = w, vector = a, vector_is_column = !s.transpose_b;  // W [K, N], or stored [N, K]
      } else {
        matrix = a, vector = w, vector_is_column = s.transpose_a;  // A [M, K], or stored [K, M]
      }
      vector = b.reshape(vector, vector_is_column ? std::vector<int64_t>{s.k, 1} : std::vector<int64_t>{1, s.k});
      const Type products = Type::tensor(compute, matrix->type.shape);
      Value* p = b.add("tessera.mul", {matrix, vector}, products);
      // Summed over K's axis as stored, keeping it where that gives the result's shape already.
      const int64_t axis = vector_is_column ? 0 : 1;
      const bool keep = (s.m == 1) == (axis == 0);
      std::vector<int64_t> kept = {matrix->type.shape[1 - axis]};
      if (keep) kept.insert(kept.begin() + axis, 1);
      Value* sum = b.add("tessera.reduce", {p}, Type::tensor(compute, kept),
                         {{"kind", Attr("sum")}, {"axes", Attr::ints({axis})}, {"keepdims", Attr(keep)}});
      sum = b.cast(sum, result.dtype);
      // The matmul becomes the last step (a reshape to [1, N] or [M, 1], or the
      // sum itself), so its readers keep their operand.
      Op& last = *b.ops.back();
      if (sum->type.shape != result.shape) {
        mm.name = "tessera.reshape";
        mm.operands = {sum};
        mm.attrs.clear();
      } else {
        mm.name = last.name;
        mm.operands = last.operands;
        mm.attrs = last.attrs;
        b.ops.pop_back();
      }
      const auto at = body.ops.begin() + static_cast<std::ptrdiff_t>(i);
      i += b.ops.size();
      body.ops.insert(at, std::make_move_iterator(b.ops.begin()), std::make_move_iterator(b.ops.end()));
    }
  }
}

}  // namespace tessera::passes
