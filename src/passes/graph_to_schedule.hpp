#pragma once
#include <map>
#include <memory>
#include <string>

#include "ir/ir.hpp"
#include "machine/descriptor.hpp"

namespace tessera::passes {

// Which candidate implements each matmul region ("tessera", "openblas",
// "cublaslt"), keyed by region id "<func>#<i>" (the i-th matmul of the func,
// see matmul_region_id) or "*" for every one. Absent: "tessera".
using Candidates = std::map<std::string, std::string>;
std::string matmul_region_id(const std::string& func, int index);

// Graph IR -> Schedule IR: each graph op becomes its family's scheduled ops,
// every one stamped with its artifact_hash; decisions ask `device`.
std::unique_ptr<ir::Module> graph_to_schedule(const ir::Module& graph, const machine::Descriptor& device,
                                              const Candidates& candidates = {});

}  // namespace tessera::passes
