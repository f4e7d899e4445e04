// The straight-line lowering: Graph -> Schedule -> Tile -> Target. Starts at
// whatever layer the input is at (verifying it first), stops at `to`.
#pragma once
#include <memory>
#include <string>

#include "ir/ir.hpp"
#include "ir/verify.hpp"

namespace tessera::passes {

std::unique_ptr<ir::Module> lower(const ir::Module& in, ir::Layer to, const std::string& target);

}  // namespace tessera::passes
