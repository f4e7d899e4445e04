#include "runtime/host_schedule.hpp"

#include <map>

#include "ir/verify.hpp"

namespace tessera::runtime {

using namespace tessera::ir;

HostSchedule HostSchedule::from(const Module& m, const std::string& func, const std::string& target) {
  if (detect_layer(m) != Layer::Target) fail("E710", "only Target IR can be loaded; lower the program first");
  verify_target(m);
  const Op* f = nullptr;
  for (Op* candidate : m.funcs())
    if (func.empty() || candidate->sym == func) {
      f = candidate;
      break;
    }
  if (!f) fail("E711", "no func @" + func + " in the module");
  HostSchedule h;
  h.func = f->sym;
  std::map<const Value*, int> slot;
  auto add_slot = [&](const Value* v) {
    slot[v] = static_cast<int>(h.slot_types.size());
    h.slot_types.push_back(v->type);
    h.slot_names.push_back(v->name);
  };
  for (auto& a : f->regions[0]->args) {
    add_slot(a.get());
    h.input_names.push_back(a->name);
    h.input_types.push_back(a->type);
  }
  std::map<std::string, size_t> kernel_index;
  for (auto& op : f->regions[0]->ops) {
    if (op->name == "return") {
      for (Value* v : op->operands) {
        h.result_slots.push_back(slot.at(v));
        h.output_names.push_back(v->name);
        h.output_types.push_back(v->type);
      }
      continue;
    }
    auto [it, fresh] = kernel_index.emplace(op->sym, h.kernels.size());
    if (fresh) {
      KernelDesc k = read_kernel_desc(*m.lookup(op->sym));
      if (k.target != target)
        fail("E712", "kernel @" + k.sym + " is for target '" + k.target + "'; this runtime executes " + target +
                         " kernels (compile with --target " + target + ")");
      h.kernels.push_back(std::move(k));
    }
    Step s{it->second, {}};
    for (Value* v : op->operands) s.buffers.push_back(slot.at(v));
    s.inputs = s.buffers.size();
    for (auto& r : op->results) {
      add_slot(r.get());
      s.buffers.push_back(slot.at(r.get()));
    }
    h.steps.push_back(std::move(s));
  }
  if (const Attr* g = f->attr("index_guards")) {  // verify_target checked them: trailing tensor<f32> results
    for (const Attr& message : *g->as_list()) h.guard_messages.push_back(*message.as_string());
    const size_t outputs = h.result_slots.size() - h.guard_messages.size();
    h.guard_slots.assign(h.result_slots.begin() + static_cast<std::ptrdiff_t>(outputs), h.result_slots.end());
    h.result_slots.resize(outputs);
    h.output_names.resize(outputs);
    h.output_types.resize(outputs);
  }
  h.output_into.assign(h.result_slots.size(), -1);
  if (const Attr* a = f->attr("in_place"))  // verify_target checked the indices and types
    for (size_t r = 0; r < a->as_ints()->size() && r < h.output_into.size(); ++r)
      h.output_into[r] = static_cast<int>((*a->as_ints())[r]);
  return h;
}

int HostSchedule::written_into(int slot) const {
  for (size_t r = 0; r < result_slots.size(); ++r)
    if (result_slots[r] == slot && output_into[r] >= 0) return output_into[r];
  return -1;
}

void HostSchedule::check_guards(const std::function<float(size_t guard)>& value) const {
  for (size_t g = 0; g < guard_slots.size(); ++g)
    if (value(g) > 0) fail("E615", guard_messages[g]);
}

void HostSchedule::wrong_input_count(size_t got) const {
  fail("E610", "@" + func + " takes " + std::to_string(input_types.size()) + " inputs, got " + std::to_string(got));
}

void HostSchedule::wrong_input_type(size_t i, DType dtype, const std::vector<int64_t>& shape) const {
  fail("E611", "input %" + input_names[i] + " is " + Type::tensor(dtype, shape).str() + " but @" + func + " expects " +
                   input_types[i].str());
}

}  // namespace tessera::runtime
