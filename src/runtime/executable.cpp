#include "runtime/executable.hpp"

#include <chrono>
#include <map>

#include "ir/verify.hpp"
#include "runtime/thread_pool.hpp"

namespace tessera::runtime {

using namespace tessera::ir;

Executable Executable::load(const Module& m, const std::string& func, CpuModuleCache& cache) {
  if (detect_layer(m) != Layer::Target) fail("E710", "only Target IR can be loaded; lower the program first");
  verify_target(m);
  const Op* f = nullptr;
  for (Op* candidate : m.funcs())
    if (func.empty() || candidate->sym == func) {
      f = candidate;
      break;
    }
  if (!f) fail("E711", "no func @" + func + " in the module");

  Executable e;
  e.func_ = f->sym;
  std::map<const Value*, int> slot;
  for (auto& a : f->regions[0]->args) {
    slot[a.get()] = static_cast<int>(e.slot_types_.size());
    e.slot_types_.push_back(a->type);
    e.input_names_.push_back(a->name);
    e.input_types_.push_back(a->type);
  }
  std::map<std::string, size_t> kernel_index;
  for (auto& op : f->regions[0]->ops) {
    if (op->name == "return") {
      for (Value* v : op->operands) {
        e.result_slots_.push_back(slot.at(v));
        e.output_names_.push_back(v->name);
        e.output_types_.push_back(v->type);
      }
      continue;
    }
    auto [it, fresh] = kernel_index.emplace(op->sym, e.kernels_.size());
    if (fresh) {
      KernelDesc k = read_kernel_desc(*m.lookup(op->sym));
      if (k.target != "cpu")
        fail("E712", "kernel @" + k.sym + " is for target '" + k.target + "'; this runtime executes cpu kernels");
      e.fns_.push_back(cache.load(k));  // digest verified here, once
      e.kernels_.push_back(std::move(k));
    }
    Step s{it->second, {}};
    for (Value* v : op->operands) s.buffers.push_back(slot.at(v));
    for (auto& r : op->results) {
      slot[r.get()] = static_cast<int>(e.slot_types_.size());
      e.slot_types_.push_back(r->type);
      s.buffers.push_back(slot.at(r.get()));
    }
    e.steps_.push_back(std::move(s));
  }
  return e;
}

RunResult Executable::run(const std::vector<Tensor>& inputs, ThreadPool* on) const {
  if (inputs.size() != input_types_.size())
    fail("E610", "@" + func_ + " takes " + std::to_string(input_types_.size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  std::vector<Tensor> slots(slot_types_.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Type& want = input_types_[i];
    if (inputs[i].dtype() != want.dtype || inputs[i].shape() != want.shape || !inputs[i].valid())
      fail("E611", "input %" + input_names_[i] + " is " + inputs[i].type_string() + " but @" + func_ +
                       " expects " + want.str());
    slots[i] = inputs[i];
  }
  for (size_t i = inputs.size(); i < slots.size(); ++i)  // launch results and intermediates
    slots[i] = Tensor::empty(slot_types_[i].dtype, slot_types_[i].shape);
  RunResult result;
  ThreadPool& pool = on ? *on : ThreadPool::global();
  for (const Step& s : steps_) {
    const KernelDesc& k = kernels_[s.kernel];
    std::vector<void*> buffers;
    for (size_t b = 0; b < s.buffers.size(); ++b) {
      Tensor& t = slots[s.buffers[b]];
      if (t.numel() != k.buffers[b].elements || t.dtype() != k.buffers[b].dtype)  // launch guard
        fail("E612", "buffer '" + k.buffers[b].str() + "' of @" + k.sym + " got " + t.type_string());
      buffers.push_back(t.data());
    }
    CpuKernelFn fn = fns_[s.kernel];
    void* const* args = buffers.data();
    auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(k.grid, [fn, args](int64_t b, int64_t e) { fn(args, b, e); });
    auto t1 = std::chrono::steady_clock::now();
    result.launches.push_back(
        {k.sym, "native_cpu", k.sha256, k.grid, std::chrono::duration<double, std::nano>(t1 - t0).count()});
  }
  for (int r : result_slots_) result.outputs.push_back(slots[r]);
  return result;
}

}  // namespace tessera::runtime
