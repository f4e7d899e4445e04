// IR types, shared by all four layers:
//   tensor<4x8xf32>, tensor<f32> (rank 0)   values of Graph and Schedule IR
//   ptr<f32>                                a buffer argument of a tile kernel
//   tile<64xf32>                            a register tile inside a kernel
//   f32, index                              scalars
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/dtype.hpp"

namespace tessera::ir {

enum class TypeKind { Tensor, Tile, Ptr, Scalar, Index };

struct Type {
  TypeKind kind = TypeKind::Index;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // Tensor and Tile only

  static Type tensor(DType d, std::vector<int64_t> s) { return {TypeKind::Tensor, d, std::move(s)}; }
  static Type tile(DType d, std::vector<int64_t> s) { return {TypeKind::Tile, d, std::move(s)}; }
  static Type ptr(DType d) { return {TypeKind::Ptr, d, {}}; }
  static Type scalar(DType d) { return {TypeKind::Scalar, d, {}}; }
  static Type index() { return {TypeKind::Index, DType::F32, {}}; }

  bool is_tensor() const { return kind == TypeKind::Tensor; }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const;  // E103 when the element count or byte size overflows int64
  // The element count, or nullopt when it or the byte size overflows int64.
  std::optional<int64_t> checked_numel() const;
  std::string str() const;
  bool operator==(const Type& o) const {
    return kind == o.kind && shape == o.shape && (kind == TypeKind::Index || dtype == o.dtype);
  }
};

}  // namespace tessera::ir
