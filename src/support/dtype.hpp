// Element types Tessera understands, with their names and sizes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera {

// Floats F16..F64 (f16/bf16 are storage types, computed in f32); integers
// I32/I64 (two's complement, wrapping as numpy's do) and I1, a boolean held
// in one byte as 0 or 1 (numpy's bool_).
enum class DType : uint8_t { F16, BF16, F32, F64, I1, I32, I64 };

std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
std::size_t dtype_size(DType t);
// Unit roundoff (half an ulp at 1.0) of the type: the basis of every tolerance.
double dtype_unit_roundoff(DType t);
// Storage-only types are widened to f32 for arithmetic.
DType default_accumulation(DType storage);
bool is_float(DType t);
bool is_integer(DType t);  // i32, i64 (not i1)
// The value of `v` converted to integer type `t` (I1, I32, I64) by
// docs/semantics.md's rule: truncation toward zero, saturating at the type's
// range, NaN to 0; for I1, any nonzero value (NaN included) is 1.
int64_t to_integer(double v, DType t);

}  // namespace tessera
