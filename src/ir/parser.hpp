#pragma once
#include <memory>
#include <string>

#include "ir/ir.hpp"

namespace tessera::ir {
// Parses any layer's text. Errors throw tessera::Error with file:line:col and a
// stable code (E1xx, see docs/errors.md); never crashes, never loops.
std::unique_ptr<Module> parse(const std::string& text, const std::string& filename = "<input>");
std::unique_ptr<Module> parse_file(const std::string& path);
// Parses one type ("tensor<4x8xf32>"); for the C++ API and CLI.
Type parse_type(const std::string& text);
}  // namespace tessera::ir
