#include "passes/graph_to_schedule.hpp"

#include <unordered_map>

#include "families/reduce/reduce_schedule.hpp"
#include "ir/graph_dialect.hpp"

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
    for (auto& op : f->regions[0]->ops) {
      if (op->name == "return") {
        std::vector<Value*> vals;
        for (Value* v : op->operands) vals.push_back(map.at(v));
        b.create("return", vals).loc = op->loc;
        continue;
      }
      // One family today; a table keyed by op name joins it as families grow.
      Op remapped;
      remapped.name = op->name;
      remapped.attrs = op->attrs;
      remapped.loc = op->loc;
      for (Value* v : op->operands) remapped.operands.push_back(map.at(v));
      for (auto& r : op->results) remapped.add_result(r->name, r->type);
      map[op->result(0)] = families::reduce::emit_schedule(b, remapped, target);
    }
  }
  return out;
}

}  // namespace tessera::passes
