#include "support/dtype.hpp"

#include <algorithm>
#include <cmath>

namespace tessera {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::I1: return "i1";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  if (name == "f32") return DType::F32;
  if (name == "f64") return DType::F64;
  if (name == "i1") return DType::I1;
  if (name == "i32") return DType::I32;
  if (name == "i64") return DType::I64;
  return std::nullopt;
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F16:
    case DType::BF16: return 2;
    case DType::I1: return 1;
    case DType::F32:
    case DType::I32: return 4;
    case DType::F64:
    case DType::I64: return 8;
  }
  return 0;
}

double dtype_unit_roundoff(DType t) {
  switch (t) {
    case DType::F16: return 0x1p-11;
    case DType::BF16: return 0x1p-8;
    case DType::F32: return 0x1p-24;
    case DType::F64: return 0x1p-53;
    case DType::I1:
    case DType::I32:
    case DType::I64: return 0;  // integers are exact
  }
  return 0;
}

DType default_accumulation(DType storage) {
  if (!is_float(storage)) return storage;
  return storage == DType::F64 ? DType::F64 : DType::F32;
}

bool is_float(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64; }
bool is_integer(DType t) { return t == DType::I32 || t == DType::I64; }

int64_t to_integer(double v, DType t) {
  if (t == DType::I1) return v != 0 || std::isnan(v) ? 1 : 0;
  if (std::isnan(v)) return 0;
  if (t == DType::I32) return static_cast<int64_t>(std::clamp(std::trunc(v), -0x1p31, 0x1p31 - 1));
  if (v >= 0x1p63) return INT64_MAX;  // not a double: 2^63 - 1 rounds up to 2^63
  return v <= -0x1p63 ? INT64_MIN : static_cast<int64_t>(std::trunc(v));
}

}  // namespace tessera
