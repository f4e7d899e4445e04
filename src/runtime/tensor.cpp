#include "runtime/tensor.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "runtime/block_cache.hpp"
#include "support/diagnostic.hpp"
#include "support/half.hpp"

namespace tessera {

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

namespace {

// E601 unless every extent is >= 0 and the element count stays below 2^60.
int64_t checked_elements(const Tensor& t) {
  int64_t n = 1;
  for (int64_t d : t.shape()) {
    if (d < 0) fail("E601", "negative tensor extent");
    if (d != 0 && n > (int64_t{1} << 60) / d) fail("E601", "tensor " + t.type_string() + " is too large");
    n *= d;
  }
  return n;
}

}  // namespace

Tensor Tensor::empty(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  checked_elements(t);
  std::size_t bytes = t.nbytes();
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = runtime::host_blocks().take(rounded);
  if (!p) fail("E602", "out of host memory allocating " + std::to_string(bytes) + " bytes");
  t.data_ = std::shared_ptr<std::byte>(static_cast<std::byte*>(p),
                                       [rounded](std::byte* q) { runtime::host_blocks().give(q, rounded); });
  return t;
}

Tensor Tensor::borrow(DType dtype, std::vector<int64_t> shape, void* data, std::shared_ptr<void> owner) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  const int64_t n = checked_elements(t);
  if (n > 0 && (!data || reinterpret_cast<std::uintptr_t>(data) % dtype_size(dtype) != 0))
    fail("E603", "borrowed " + t.type_string() + " data is not aligned to its " + std::to_string(dtype_size(dtype)) +
                     "-byte elements");
  // The aliasing constructor: the tensor points at `data`, `owner` keeps it alive.
  t.data_ = std::shared_ptr<std::byte>(std::move(owner), static_cast<std::byte*>(data));
  return t;
}

double Tensor::get(int64_t i) const {
  const std::byte* p = data_.get();
  switch (dtype_) {
    case DType::F16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return f16_to_float(h);
    }
    case DType::BF16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return bf16_to_float(h);
    }
    case DType::F32: {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      return f;
    }
    case DType::F64: {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      return d;
    }
    case DType::I1: return static_cast<double>(static_cast<uint8_t>(p[i]) != 0);
    case DType::I32: {
      int32_t x;
      std::memcpy(&x, p + 4 * i, 4);
      return x;
    }
    case DType::I64: {
      int64_t x;
      std::memcpy(&x, p + 8 * i, 8);
      return static_cast<double>(x);
    }
  }
  return 0;
}

void Tensor::set(int64_t i, double v) {
  std::byte* p = data_.get();
  switch (dtype_) {
    case DType::F16: {
      uint16_t h = double_to_f16(v);
      std::memcpy(p + 2 * i, &h, 2);
      break;
    }
    case DType::BF16: {
      uint16_t h = double_to_bf16(v);
      std::memcpy(p + 2 * i, &h, 2);
      break;
    }
    case DType::F32: {
      float f = float(v);
      std::memcpy(p + 4 * i, &f, 4);
      break;
    }
    case DType::F64: std::memcpy(p + 8 * i, &v, 8); break;
    case DType::I1: p[i] = std::byte{static_cast<uint8_t>(to_integer(v, dtype_))}; break;
    case DType::I32: {
      const int32_t x = static_cast<int32_t>(to_integer(v, dtype_));
      std::memcpy(p + 4 * i, &x, 4);
      break;
    }
    case DType::I64: {
      const int64_t x = to_integer(v, dtype_);
      std::memcpy(p + 8 * i, &x, 8);
      break;
    }
  }
}

std::string Tensor::type_string() const {
  std::string s = "tensor<";
  for (int64_t d : shape_) s += std::to_string(d) + "x";
  s += dtype_name(dtype_);
  return s + ">";
}

}  // namespace tessera
