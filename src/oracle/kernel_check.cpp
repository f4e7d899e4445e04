#include "oracle/kernel_check.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <unordered_map>

#include "oracle/ops.hpp"
#include "oracle/sample.hpp"
#include "support/diagnostic.hpp"

namespace tessera::oracle {

namespace {

// Launch units: launches joined by values the graph does not have.
std::vector<std::vector<size_t>> units_of(const std::vector<LaunchValues>& launches,
                                          const std::set<std::string>& internal) {
  std::vector<size_t> parent(launches.size());
  std::iota(parent.begin(), parent.end(), size_t{0});
  auto root = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  std::map<std::string, size_t> producer;
  for (size_t l = 0; l < launches.size(); ++l) {
    for (const std::string& in : launches[l].inputs)
      if (internal.count(in) && producer.count(in)) parent[root(l)] = root(producer[in]);
    for (const std::string& out : launches[l].outputs) producer[out] = l;
  }
  std::map<size_t, std::vector<size_t>> groups;
  for (size_t l = 0; l < launches.size(); ++l) groups[root(l)].push_back(l);
  std::vector<std::vector<size_t>> units;
  for (auto& [_, g] : groups) units.push_back(g);
  std::sort(units.begin(), units.end());
  return units;
}

}  // namespace

std::vector<KernelCheck> check_kernels(const ir::Module& graph, const std::string& func,
                                       const std::vector<LaunchValues>& launches,
                                       const std::map<std::string, Tensor>& values, int64_t rows, int64_t cols) {
  const ir::Op& f = detail::pick_func(graph, func);
  const ir::Region& body = *f.regions[0];
  // The graph's values by name, and the op that defines each.
  std::unordered_map<std::string, const ir::Value*> named;
  std::unordered_map<const ir::Value*, const ir::Op*> def;
  for (const auto& a : body.args) named[a->name] = a.get();
  for (const auto& op : body.ops)
    for (const auto& r : op->results) {
      named[r->name] = r.get();
      def[r.get()] = op.get();
    }
  auto graph_value = [&](const std::string& name) -> const ir::Value* {
    auto it = named.find(name);
    auto vt = values.find(name);
    if (it == named.end() || vt == values.end()) return nullptr;
    const Tensor& t = vt->second;
    return t.shape() == it->second->type.shape && t.dtype() == it->second->type.dtype ? it->second : nullptr;
  };
  std::set<std::string> internal;
  for (const LaunchValues& l : launches)
    for (const std::string& out : l.outputs)
      if (!graph_value(out)) internal.insert(out);

  std::vector<KernelCheck> checks;
  for (const std::vector<size_t>& unit : units_of(launches, internal)) {
    std::vector<std::string> kernels;
    std::set<std::string> produced;
    std::vector<const ir::Value*> outputs;
    for (size_t l : unit) {
      kernels.push_back(launches[l].kernel);
      for (const std::string& out : launches[l].outputs) {
        produced.insert(out);
        if (const ir::Value* v = graph_value(out)) outputs.push_back(v);
      }
    }
    // Its inputs: the graph values it reads that it does not make, bound to
    // what the kernels received.
    std::unordered_map<const ir::Value*, const Tensor*> args;
    for (size_t l : unit)
      for (const std::string& in : launches[l].inputs)
        if (!produced.count(in))
          if (const ir::Value* v = graph_value(in)) args[v] = &values.at(in);
    // Its region: the ops between those inputs and its outputs.
    std::set<const ir::Op*> region;
    std::vector<const ir::Value*> todo(outputs.begin(), outputs.end());
    while (!todo.empty()) {
      const ir::Value* v = todo.back();
      todo.pop_back();
      if (args.count(v)) continue;
      auto d = def.find(v);
      if (d == def.end())
        fail("E803", "kernel check: @" + kernels.front() + " computes %" + outputs.front()->name + " from %" + v->name +
                         ", which it did not receive");
      if (!region.insert(d->second).second) continue;
      for (const ir::Value* o : d->second->operands) todo.push_back(o);
    }
    std::vector<const ir::Op*> ops;
    for (const auto& op : body.ops)
      if (region.count(op.get())) ops.push_back(op.get());

    std::vector<std::vector<uint8_t>> sample;
    for (const ir::Value* v : outputs) sample.push_back(sample_elements(v->type.shape, rows, cols));
    std::vector<Expected> expected = detail::evaluate_ops(ops, args, outputs, &sample);
    for (size_t o = 0; o < outputs.size(); ++o) {
      KernelCheck c;
      c.kernels = kernels;
      c.value = outputs[o]->name;
      c.elements = values.at(outputs[o]->name).numel();
      c.comparison = compare(expected[o], values.at(outputs[o]->name));
      checks.push_back(std::move(c));
    }
  }
  return checks;
}

}  // namespace tessera::oracle
