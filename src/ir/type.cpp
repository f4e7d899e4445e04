#include "ir/type.hpp"

#include "support/diagnostic.hpp"

namespace tessera::ir {

std::optional<int64_t> Type::checked_numel() const {
  int64_t n = 1, bytes = 0;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(dtype_size(dtype)), &bytes)) return std::nullopt;
  return n;
}

// The parser refuses a type whose size overflows (E103 with its location); a
// type derived from others (a broadcast, a matmul) can still reach here.
int64_t Type::numel() const {
  auto n = checked_numel();
  if (!n) fail("E103", "type " + str() + " has more elements or bytes than fit in 64 bits");
  return *n;
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
