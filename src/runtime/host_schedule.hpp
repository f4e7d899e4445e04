// The host side of a Target IR func, shared by every backend: which kernels
// run in which order on which value slots (args first, then launch results),
// and the shape guards of its inputs.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir/ir.hpp"
#include "ir/target_dialect.hpp"

namespace tessera::runtime {

struct HostSchedule {
  struct Step {
    size_t kernel;
    std::vector<int> buffers;  // value slots: the launch's inputs, then its results
    size_t inputs = 0;         // how many of `buffers` are inputs
  };
  std::string func;
  std::vector<std::string> input_names, output_names;
  std::vector<ir::Type> input_types, output_types;
  std::vector<ir::KernelDesc> kernels;  // each distinct kernel once
  std::vector<ir::Type> slot_types;     // one per SSA value
  std::vector<std::string> slot_names;  // its name in the Target IR (the Graph IR value's, where it has one)
  std::vector<Step> steps;
  std::vector<int> result_slots;
  // The func's index guards (passes/index_guards.hpp): trailing results that
  // are not outputs; each holds a tensor<f32> > 0 when an index was outside
  // its axis. A runtime reads them after every run: check_guards.
  std::vector<int> guard_slots;
  std::vector<std::string> guard_messages;
  // Per output: the input whose buffer receives it (the func's in_place,
  // which passes/check_in_place.hpp proved safe), or -1. A runtime binds the
  // result's slot to that input, so the kernels update it in place.
  std::vector<int> output_into;
  // The input the value slot `slot` is written into, or -1.
  int written_into(int slot) const;

  // `func` empty = the first func; every kernel must be for `target` (E712).
  static HostSchedule from(const ir::Module& target_ir, const std::string& func, const std::string& target);
  // E610/E611 unless `inputs` (host or device tensors: anything with
  // dtype() and shape()) match the func's inputs. Allocates nothing: it is on
  // every launch path.
  template <class T>
  void check_inputs(const std::vector<T>& inputs) const {
    if (inputs.size() != input_types.size()) wrong_input_count(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].dtype() != input_types[i].dtype || inputs[i].shape() != input_types[i].shape)
        wrong_input_type(i, inputs[i].dtype(), inputs[i].shape());
  }
  // E615 with the message of the first guard g whose value(g) is > 0.
  void check_guards(const std::function<float(size_t guard)>& value) const;
  [[noreturn]] void wrong_input_count(size_t got) const;
  [[noreturn]] void wrong_input_type(size_t i, DType dtype, const std::vector<int64_t>& shape) const;
};

}  // namespace tessera::runtime
