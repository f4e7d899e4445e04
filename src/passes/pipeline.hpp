// The straight-line lowering: Graph -> Schedule -> Tile -> Target. Starts at
// whatever layer the input is at (verifying it first), stops at `to`.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "ir/ir.hpp"
#include "ir/verify.hpp"
#include "machine/descriptor.hpp"

namespace tessera::passes {

// `candidates` picks the implementation of matmul regions (graph_to_schedule.hpp);
// `device` is the machine the schedule is for, its kind the lane that renders.
std::unique_ptr<ir::Module> lower(const ir::Module& in, ir::Layer to, const machine::Descriptor& device,
                                  const std::map<std::string, std::string>& candidates = {});
// The Graph IR rewrites `lower` starts with (simplify, fold_batch_sums,
// fold_matmul_transposes, matvecs_as_reductions), for a caller that partitions
// the graph as graph_to_schedule will (the arbiter: its regions and ids are
// those). keep_matmuls: every matmul stays one (a candidate forced for all of
// them, `candidates["*"]`, is obeyed, not turned into a reduction).
void rewrite_graph(ir::Module& graph, bool keep_matmuls = false);
// For the target's default profile (machine::default_for_target).
std::unique_ptr<ir::Module> lower(const ir::Module& in, ir::Layer to, const std::string& target,
                                  const std::map<std::string, std::string>& candidates = {});

}  // namespace tessera::passes
