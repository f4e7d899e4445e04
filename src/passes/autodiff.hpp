// Reverse-mode differentiation of a Graph IR func (`tessera grad`): a new
// func @<name>_grad with the same arguments that returns the loss (the
// func's first result, a rank-0 float tensor) and its gradient with respect
// to each argument named in `wrt` (every float argument when `wrt` is empty),
// in that order. The forward ops stay as they are; the backward ops follow
// them and read the forward values they need (the saved activations, visible
// in the printed Graph IR). The result is ordinary Graph IR: fusion and the
// families compile it like any program.
//
// Rules and their edge cases (ties, NaN, non-differentiable ops) are stated in
// docs/semantics.md ("Gradients"). A gradient asked through an op that has
// none is E262; through an op whose rule is not written yet, E263.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.hpp"

namespace tessera::passes {

std::unique_ptr<ir::Module> differentiate(const ir::Module& graph, const std::string& func,
                                          const std::vector<std::string>& wrt);

}  // namespace tessera::passes
