#include "support/dtype.hpp"

namespace tessera {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  if (name == "f32") return DType::F32;
  if (name == "f64") return DType::F64;
  return std::nullopt;
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F16:
    case DType::BF16: return 2;
    case DType::F32: return 4;
    case DType::F64: return 8;
  }
  return 0;
}

double dtype_unit_roundoff(DType t) {
  switch (t) {
    case DType::F16: return 0x1p-11;
    case DType::BF16: return 0x1p-8;
    case DType::F32: return 0x1p-24;
    case DType::F64: return 0x1p-53;
  }
  return 0;
}

DType default_accumulation(DType storage) { return storage == DType::F64 ? DType::F64 : DType::F32; }

}  // namespace tessera
