#include "passes/graph_to_schedule.hpp"

#include <unordered_map>

#include "families/matmul/matmul_schedule.hpp"
#include "families/pointwise/pointwise_schedule.hpp"
#include "families/reduce/reduce_schedule.hpp"
#include "families/rowwise/rowwise_schedule.hpp"
#include "ir/graph_dialect.hpp"
#include "passes/fusion.hpp"

namespace tessera::passes {

using namespace tessera::ir;

std::unique_ptr<Module> graph_to_schedule(const Module& graph, const std::string& target) {
  verify_graph(graph);
  auto out = std::make_unique<Module>();
  for (Op* f : graph.funcs()) {
    std::vector<std::pair<std::string, Type>> args;
    for (auto& a : f->regions[0]->args) args.emplace_back(a->name, a->type);
    Op& nf = add_func(*out, f->sym, args, func_result_types(*f));
    Region& body = *nf.regions[0];
    std::unordered_map<const Value*, Value*> map;
    for (size_t i = 0; i < args.size(); ++i) map[f->regions[0]->args[i].get()] = body.args[i].get();
    Builder b(body, "s");
    int index = 0;
    for (const FusedRegion& r : partition(*f)) {
      const std::string prefix = "f" + std::to_string(index++);
      switch (r.kind) {
        case FusedRegion::Kind::Pointwise:
          map[r.result] = families::pointwise::emit_schedule(b, r, map, target, prefix);
          break;
        case FusedRegion::Kind::Row:
          map[r.result] = families::rowwise::emit_schedule(b, r, map, target, prefix);
          break;
        case FusedRegion::Kind::Matmul:
          map[r.result] = families::matmul::emit_schedule(b, r, map, target, prefix);
          break;
        case FusedRegion::Kind::Reduce:
          map[r.result] = families::reduce::emit_schedule(b, r, map, target, prefix);
          break;
      }
    }
    const Op& ret = *f->regions[0]->ops.back();
    std::vector<Value*> vals;
    for (Value* v : ret.operands) vals.push_back(map.at(v));
    b.create("return", vals).loc = ret.loc;
  }
  return out;
}

}  // namespace tessera::passes
