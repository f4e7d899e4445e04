#pragma once
#include <memory>
#include <string>

#include "ir/ir.hpp"

namespace tessera::passes {
// Graph IR -> Schedule IR: each graph op becomes its family's scheduled ops,
// every one stamped with its artifact_hash.
std::unique_ptr<ir::Module> graph_to_schedule(const ir::Module& graph, const std::string& target);
}  // namespace tessera::passes
