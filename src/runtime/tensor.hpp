// A dense, C-order host tensor. Storage is shared, so copies of a Tensor are
// cheap views of the same bytes. Tensors Tessera allocates are 64-byte
// aligned; a borrowed one (a caller's array, taken without a copy) is only
// as aligned as its element type.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/dtype.hpp"

namespace tessera {

class Tensor {
 public:
  Tensor() = default;
  static Tensor empty(DType dtype, std::vector<int64_t> shape);
  // A view of caller-owned memory; `owner` keeps it alive as long as any copy
  // of the tensor (what a Python array gives without a copy). E603 unless
  // `data` is aligned to the element size (or null with no elements).
  static Tensor borrow(DType dtype, std::vector<int64_t> shape, void* data, std::shared_ptr<void> owner);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  bool valid() const { return data_ != nullptr || numel() == 0; }

  // Element i as a double (exact but for i64 beyond 2^53); for oracles and tests.
  double get(int64_t i) const;
  void set(int64_t i, double v);  // rounds to a float type; converts to an integer one (to_integer)

  std::string type_string() const;  // "tensor<4x8xf32>"

 private:
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_;
  std::shared_ptr<std::byte> data_;
};

}  // namespace tessera
