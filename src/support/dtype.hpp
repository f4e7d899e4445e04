// Element types Tessera understands, with their names and sizes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera {

enum class DType : uint8_t { F16, BF16, F32, F64 };

std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
std::size_t dtype_size(DType t);
// Unit roundoff (half an ulp at 1.0) of the type: the basis of every tolerance.
double dtype_unit_roundoff(DType t);
// Storage-only types are widened to f32 for arithmetic.
DType default_accumulation(DType storage);

}  // namespace tessera
