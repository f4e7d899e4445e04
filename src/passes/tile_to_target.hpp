#pragma once
#include <memory>
#include <string>

#include "ir/ir.hpp"

namespace tessera::passes {
// Tile IR -> Target IR: renders each tile.kernel for the target, records its
// SHA-256, ABI id and launch descriptor; the host schedule becomes target.launch.
std::unique_ptr<ir::Module> tile_to_target(const ir::Module& tile, const std::string& target);
}  // namespace tessera::passes
