#include "arbiter/region_program.hpp"

#include <algorithm>
#include <map>

#include "families/matmul/matmul_schedule.hpp"
#include "ir/graph_dialect.hpp"
#include "passes/fusion.hpp"
#include "passes/graph_to_schedule.hpp"

namespace tessera::arbiter {

using namespace tessera::ir;

std::vector<MatmulRegion> matmul_regions(const Module& graph, const machine::Descriptor* device) {
  std::vector<MatmulRegion> out;
  for (Op* f : graph.funcs()) {
    int i = 0;
    for (const families::fused::FusedRegion& r : passes::partition(*f, device))
      if (r.kind == families::fused::FusedRegion::Kind::Matmul)
        out.push_back({passes::matmul_region_id(f->sym, i++), r});
  }
  return out;
}

double region_macs(const families::fused::FusedRegion& r) {
  MatmulSpec s = matmul_spec(*r.core);
  return double(s.batch) * double(s.m) * double(s.n) * double(s.k);
}

MnDims mn_dims(const families::fused::FusedRegion& r, const Value* v) {
  const Op& core = *r.core;
  const MatmulSpec s = matmul_spec(core);
  const Type& t = v->type;
  if (!t.is_tensor() || t.rank() == 0) return {};
  const int64_t rank = t.rank();
  auto dim = [&](int64_t d, int64_t extent) { return d >= 0 && t.shape[d] == extent && extent != 1 ? d : -1; };
  // An RMSNorm prologue's x has A's dims (row-major), its weight neither.
  const Op* norm = families::matmul::norm_prologue(r.ops, core);
  if (norm && v == norm->operands[1]) return {};
  if (v == core.operands[0] || (norm && v == norm->operands[0]))
    return {dim(s.transpose_a ? rank - 1 : rank - 2, s.m), -1, false};
  if (v == core.operands[1]) return {-1, dim(s.transpose_b ? rank - 2 : rank - 1, s.n), false};
  // Past a split into column halves, the epilogue's values are half as wide.
  const bool half = v != core.result() && families::matmul::halves_split(r.ops, core);
  return {dim(rank - 2, s.m), dim(rank - 1, half ? s.n / 2 : s.n), half};
}

std::unique_ptr<Module> region_program(const families::fused::FusedRegion& r, int64_t rows, int64_t cols) {
  const Op& core = *r.core;
  const MatmulSpec s = matmul_spec(core);
  const int64_t m2 = rows > 0 ? rows : s.m, n2 = cols > 0 ? cols : s.n;
  // Resizing rewrites dims by role; a value with two roles (A is B, or an
  // operand also read by the epilogue) has no consistent resize.
  if (m2 != s.m || n2 != s.n) {
    const Op* norm = families::matmul::norm_prologue(r.ops, core);
    const Value *a = core.operands[0], *b = core.operands[1], *x = norm ? norm->operands[0] : a;
    bool shared = a == b || x == b;
    for (const Op* op : r.ops)
      if (op != &core && op != norm)
        for (const Value* v : op->operands) shared = shared || v == a || v == b || v == x;
    if (shared) fail("E770", "matmul region: an operand has two roles, so M and N cannot be resized");
  }
  // Dims are rewritten by position: the M and N dims of A, B and of values
  // shaped like (or broadcast to) the result.
  const Op* split = families::matmul::halves_split(r.ops, core);
  if (split && n2 % 2 != 0) fail("E770", "matmul region on column halves: N must stay even");
  auto resize = [&](const Value* v) {
    Type t = v->type;
    const MnDims d = mn_dims(r, v);
    if (d.m >= 0) t.shape[d.m] = m2;
    if (d.n >= 0) t.shape[d.n] = d.half ? n2 / 2 : n2;
    return t;
  };
  auto m = std::make_unique<Module>();
  std::vector<std::pair<std::string, Type>> args;
  for (const Value* leaf : r.leaves) args.emplace_back(leaf->name, resize(leaf));
  Op& f = add_func(*m, "region", args, {resize(r.result)});
  Region& body = *f.regions[0];
  std::map<const Value*, Value*> map;
  for (size_t i = 0; i < r.leaves.size(); ++i) map[r.leaves[i]] = body.args[i].get();
  Builder b(body, "r");
  for (const Op* op : r.ops) {
    std::vector<Value*> operands;
    for (const Value* v : op->operands) operands.push_back(map.at(v));
    Op& copy = b.create(op->name, operands, op->attrs);
    copy.loc = op->loc;
    if (op == split) copy.attrs["sizes"] = Attr::ints({n2 / 2, n2 / 2});
    for (auto& res : op->results) map[res.get()] = copy.add_result(res->name, resize(res.get()));
  }
  b.create("return", {map.at(r.result)});
  verify_graph(*m);
  return m;
}

}  // namespace tessera::arbiter
