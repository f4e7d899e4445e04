#include "passes/graph_to_schedule.hpp"

#include <algorithm>
#include <iterator>
#include <unordered_map>

#include "families/arg_reduce/arg_reduce_schedule.hpp"
#include "families/attention/attention_schedule.hpp"
#include "families/matmul/matmul_schedule.hpp"
#include "families/pointwise/pointwise_schedule.hpp"
#include "families/reduce/reduce_schedule.hpp"
#include "families/rowwise/rowwise_schedule.hpp"
#include "families/scatter/scatter_schedule.hpp"
#include "ir/graph_dialect.hpp"
#include "passes/check_in_place.hpp"
#include "passes/fusion.hpp"

namespace tessera::passes {

using namespace tessera::ir;

std::string matmul_region_id(const std::string& func, int index) { return func + "#" + std::to_string(index); }

namespace {

// `wide` (a schedule value in a wider float type) cast to `result`'s type by
// a pointwise kernel that defines `result`'s name.
Value* cast_to(Builder& b, const Value& result, Value* wide, const machine::Descriptor& device,
               const std::string& prefix, const SourceLoc& loc) {
  Module stage;
  Op& f = add_func(stage, "cast", {{wide->name, wide->type}}, {result.type});
  Value* arg = f.regions[0]->args[0].get();
  Op& c = Builder(*f.regions[0]).create("tessera.cast", {arg});
  c.loc = loc;
  Value* narrowed = c.add_result(result.name, result.type);
  const FusedRegion copy{FusedRegion::Kind::Pointwise, nullptr, {&c}, {arg}, narrowed, {}};
  return families::pointwise::emit_schedule(b, copy, {{arg, wide}}, device, prefix);
}

// The second stage of a norm gradient's dw or db: its [programs, extent]
// partial sums (the row kernel's result `partials`) summed over programs by a
// column reduction, then cast to the weight's dtype where that is narrower.
// The stage is written as Graph IR (a reduce, a cast) and scheduled by the
// reduce and pointwise families like any region.
Value* sum_partials(Builder& b, const Value& grad, Value* partials, const machine::Descriptor& device,
                    const std::string& prefix, const SourceLoc& loc) {
  Module stage;
  const Type& pt = partials->type;
  const bool cast = pt.dtype != grad.type.dtype;
  Op& f = add_func(stage, "stage", {{partials->name, pt}}, {grad.type});
  Value* arg = f.regions[0]->args[0].get();
  Builder gb(*f.regions[0]);
  Op& sum = gb.create("tessera.reduce", {arg}, {{"kind", Attr("sum")}, {"axes", Attr::ints({0})}});
  sum.loc = loc;
  Value* total = sum.add_result(cast ? grad.name + ".sum" : grad.name, Type::tensor(pt.dtype, grad.type.shape));
  std::unordered_map<const Value*, Value*> map = {{arg, partials}};
  const FusedRegion reduce{FusedRegion::Kind::Reduce, &sum, {&sum}, {arg}, total, {}};
  Value* out = families::reduce::emit_schedule(b, reduce, map, device, prefix);
  return cast ? cast_to(b, grad, out, device, prefix + "c", loc) : out;
}

// A view that a region's kernel writes (FusedRegion::written_as: its result
// has the view's type) is that kernel's result: a returned reshape of a
// matmul's, pointwise region's or copy's result, or the view of an
// attention's o with heads and rows swapped.
void write_as(std::unordered_map<const Value*, Value*>& map, const Value* result, const Value* view) {
  if (view) map[view] = map.at(result);
}

}  // namespace

std::unique_ptr<Module> graph_to_schedule(const Module& graph, const machine::Descriptor& device,
                                          const Candidates& candidates) {
  verify_graph(graph);
  auto out = std::make_unique<Module>();
  std::vector<std::string> regions;  // every matmul region's id, to check the named candidates against
  for (Op* f : graph.funcs()) {
    std::vector<std::pair<std::string, Type>> args;
    for (auto& a : f->regions[0]->args) args.emplace_back(a->name, a->type);
    Op& nf = add_func(*out, f->sym, args, func_result_types(*f));
    copy_func_attrs(*f, nf);
    Region& body = *nf.regions[0];
    std::unordered_map<const Value*, Value*> map;
    for (size_t i = 0; i < args.size(); ++i) map[f->regions[0]->args[i].get()] = body.args[i].get();
    Builder b(body, "s");
    int index = 0, matmuls = 0;
    auto candidate_for = [&](const std::string& id, const FusedRegion& r) {
      regions.push_back(id);
      if (auto it = candidates.find(id); it != candidates.end()) return it->second;
      if (auto it = candidates.find("*"); it != candidates.end()) return it->second;
      return families::matmul::default_candidate(r, device);
    };
    for (const FusedRegion& r : partition(*f, &device)) {
      const std::string prefix = "f" + std::to_string(index++);
      switch (r.kind) {
        case FusedRegion::Kind::Pointwise:
          map[r.result] = families::pointwise::emit_schedule(b, r, map, device, prefix);
          break;
        case FusedRegion::Kind::Row: {
          Op& op = families::rowwise::emit_schedule(b, r, map, device, prefix);
          map[r.result] = op.result(0);
          for (size_t i = 1; i < op.results.size(); ++i)
            map[r.core->result(i)] = sum_partials(b, *r.core->result(i), op.result(i), device,
                                                  prefix + "s" + std::to_string(i), r.core->loc);
          break;
        }
        case FusedRegion::Kind::Matmul: {
          const std::string candidate = candidate_for(matmul_region_id(f->sym, matmuls++), r);
          if (families::matmul::runs_region(r, candidate, device)) {
            map[r.result] = families::matmul::emit_schedule(b, r, map, device, prefix, candidate);
            break;
          }
          // A library (or a kernel that cannot pair column halves, or take an
          // RMSNorm prologue) computes the matmul alone: the prologue becomes
          // a row kernel before it, the epilogue a pointwise kernel after it,
          // which reads the halves as views.
          const Op* norm = families::matmul::norm_prologue(r.ops, *r.core);
          if (norm) {
            const FusedRegion rows{FusedRegion::Kind::Row, norm, {norm}, {norm->operands[0], norm->operands[1]},
                                   norm->result(),         {}};
            map[norm->result()] = families::rowwise::emit_schedule(b, rows, map, device, prefix + "p").result(0);
          }
          FusedRegion mm{FusedRegion::Kind::Matmul, r.core, {r.core}, {}, r.core->result(), {}};
          if (r.result == r.core->result()) mm.written_as = r.written_as;  // no epilogue kernel after it
          for (const Value* v : r.core->operands)
            if (std::find(mm.leaves.begin(), mm.leaves.end(), v) == mm.leaves.end()) mm.leaves.push_back(v);
          map[r.core->result()] = families::matmul::emit_schedule(b, mm, map, device, prefix, candidate);
          if (r.result == r.core->result()) break;  // a prologue, no epilogue
          // everything but the matmul (a producer of an epilogue leaf may precede it)
          FusedRegion epi{FusedRegion::Kind::Pointwise, nullptr, {}, {}, r.result, {}};
          std::copy_if(r.ops.begin(), r.ops.end(), std::back_inserter(epi.ops),
                       [&](const Op* op) { return op != r.core && op != norm && !is_view_op(op->name); });
          for (const Op* op : epi.ops)
            for (const Value* v : op->operands) {
              const bool inside = v->def && std::find(epi.ops.begin(), epi.ops.end(), v->def) != epi.ops.end();
              if (!inside && std::find(epi.leaves.begin(), epi.leaves.end(), v) == epi.leaves.end())
                epi.leaves.push_back(v);
            }
          epi.written_as = r.written_as;  // (the pointwise kernel writes row-major too)
          map[r.result] = families::pointwise::emit_schedule(b, epi, map, device, prefix + "e");
          break;
        }
        case FusedRegion::Kind::Attention: {
          Op& op = families::attention::emit_schedule(b, r, map, device, prefix);
          for (size_t i = 0; i < op.results.size(); ++i) map[r.core->result(i)] = op.result(i);
          break;
        }
        case FusedRegion::Kind::Reduce:
          map[r.result] = families::reduce::emit_schedule(b, r, map, device, prefix);
          break;
        case FusedRegion::Kind::Scatter: {
          // The sums in the compute type, cast to a narrower result after.
          Value* sums = families::scatter::emit_schedule(b, r, map, device, prefix);
          map[r.result] = sums->type.dtype == r.result->type.dtype
                              ? sums
                              : cast_to(b, *r.result, sums, device, prefix + "c", r.core->loc);
          break;
        }
        case FusedRegion::Kind::ArgReduce:
          map[r.result] = families::arg_reduce::emit_schedule(b, r, map, device, prefix);
          break;
      }
      write_as(map, r.result, r.written_as);
      // (an attention's o itself has no buffer then: its kernel wrote the view)
      if (r.kind == FusedRegion::Kind::Attention && r.written_as) map.erase(r.result);
    }
    const Op& ret = *f->regions[0]->ops.back();
    // A result written in place whose kernel cannot write into its argument
    // (passes/check_in_place.hpp) is copied into it by a kernel of its own, last.
    if (const Attr* in_place = f->attr("in_place"))
      for (size_t r = 0; r < in_place->as_ints()->size(); ++r) {
        const int64_t a = (*in_place->as_ints())[r];
        if (a < 0) continue;
        const Value* v = ret.operands[r];
        Value* arg = body.args[a].get();
        Value* value = map.at(v);
        if (value == arg) continue;
        const bool twice = std::count(ret.operands.begin(), ret.operands.end(), v) > 1;
        if (value->def && !twice && writes_in_place(body, *value->def, arg)) continue;
        const FusedRegion copy{FusedRegion::Kind::Pointwise,         nullptr, {}, {v}, v,
                               "written in place into %" + arg->name};
        map[v] = families::pointwise::emit_schedule(b, copy, map, device, "f" + std::to_string(index++));
        map[v]->name = v->name + ".in_place";
      }
    std::vector<Value*> vals;
    for (Value* v : ret.operands) vals.push_back(map.at(v));
    b.create("return", vals).loc = ret.loc;
  }
  // A candidate named for a region the program does not have is a typo, not a no-op.
  for (const auto& [id, candidate] : candidates)
    if (id != "*" && std::find(regions.begin(), regions.end(), id) == regions.end()) {
      std::string known;
      for (const std::string& r : regions) known += (known.empty() ? "" : ", ") + r;
      fail("E304", "matmul candidate '" + candidate + "' names region '" + id + "', which this program does not have" +
                       (known.empty() ? " (it has no matmul region)" : " (its regions: " + known + ")"));
    }
  return out;
}

}  // namespace tessera::passes
