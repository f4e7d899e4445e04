#pragma once
#include <string>

#include "ir/ir.hpp"

namespace tessera::ir {
// Canonical text of a module; parse(print(m)) prints identically.
std::string print(const Module& m);
std::string print_op(const Op& op, int indent = 0);
}  // namespace tessera::ir
