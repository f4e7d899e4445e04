#include "ir/type.hpp"

namespace tessera::ir {

int64_t Type::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string Type::str() const {
  auto shaped = [&](const char* head) {
    std::string s = std::string(head) + "<";
    for (int64_t d : shape) s += std::to_string(d) + "x";
    return s + std::string(dtype_name(dtype)) + ">";
  };
  switch (kind) {
    case TypeKind::Tensor: return shaped("tensor");
    case TypeKind::Tile: return shaped("tile");
    case TypeKind::Ptr: return "ptr<" + std::string(dtype_name(dtype)) + ">";
    case TypeKind::Scalar: return std::string(dtype_name(dtype));
    case TypeKind::Index: return "index";
  }
  return "?";
}

}  // namespace tessera::ir
