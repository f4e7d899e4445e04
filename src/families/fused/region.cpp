#include "families/fused/region.hpp"

namespace tessera::families::fused {

using namespace tessera::ir;

Op& create_region_op(Builder& b, const std::string& name, const std::vector<const Value*>& leaves,
                     const std::vector<const Op*>& ops, const Value* yielded,
                     const std::unordered_map<const Value*, Value*>& outer, const std::string& prefix) {
  std::vector<Value*> operands;
  for (const Value* v : leaves) operands.push_back(outer.at(v));
  Op& op = b.create(name, operands);
  Region& r = op.add_region();
  std::unordered_map<const Value*, Value*> inner;
  for (const Value* v : leaves) inner[v] = r.add_arg(prefix + "." + v->name, v->type);
  Builder rb(r);
  for (const Op* g : ops) {
    std::vector<Value*> args;
    for (const Value* v : g->operands) args.push_back(inner.at(v));
    Op& c = rb.create(g->name, args, g->attrs);
    c.loc = g->loc;
    for (auto& res : g->results) inner[res.get()] = c.add_result(prefix + "." + res->name, res->type);
    if (g->result() == yielded) break;
  }
  rb.create("schedule.yield", {inner.at(yielded)});
  return op;
}

}  // namespace tessera::families::fused
