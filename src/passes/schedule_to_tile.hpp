#pragma once
#include <memory>

#include "ir/ir.hpp"

namespace tessera::passes {
// Schedule IR -> Tile IR: re-derives every artifact_hash (fails closed with
// E301 "schedule altered after hashing"), then builds one tile.kernel per
// scheduled op and a host schedule of tile.launch ops.
std::unique_ptr<ir::Module> schedule_to_tile(const ir::Module& schedule);
}  // namespace tessera::passes
