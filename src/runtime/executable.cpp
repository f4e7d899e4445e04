#include "runtime/executable.hpp"

namespace tessera::runtime {

void Executable::check_inputs(const std::vector<Tensor>& inputs) const {
  for (const Tensor& t : inputs)
    if (!t.valid()) fail("E611", "an input tensor has no storage");
  h_.check_inputs(inputs);
}

void Executable::check_owner(const Binding& b) const {
  if (b.owner != this)
    fail("E614", "@" + h_.func + ": this binding was made by another executable (bind on the one that launches)");
}

}  // namespace tessera::runtime
