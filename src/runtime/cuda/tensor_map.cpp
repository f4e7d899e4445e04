#include "runtime/cuda/tensor_map.hpp"

#include "runtime/cuda/cuda_api.hpp"
#include "support/diagnostic.hpp"

namespace tessera::runtime::cuda {

CUtensorMap encode_tensor_map(const ir::TensorMapDesc& d, CUdeviceptr buffer) {
  buffer += static_cast<CUdeviceptr>(d.offset) * dtype_size(d.dtype);  // a view's first element
  if (buffer % 16 != 0)
    fail("E613", "tensor map '" + d.str() + "': the buffer's address is not 16-byte aligned (the TMA needs it)");
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  switch (d.dtype) {
    case DType::F16: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
    case DType::BF16: type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
    case DType::F32: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
    case DType::F64: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT64; break;
    case DType::I1: type = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;
    case DType::I32: type = CU_TENSOR_MAP_DATA_TYPE_INT32; break;
    case DType::I64: type = CU_TENSOR_MAP_DATA_TYPE_INT64; break;
  }
  const cuuint32_t rank = static_cast<cuuint32_t>(d.dims.size());
  cuuint64_t dims[5] = {}, strides[4] = {};
  cuuint32_t box[5] = {}, element_strides[5] = {};
  for (cuuint32_t i = 0; i < rank; ++i) {
    dims[i] = static_cast<cuuint64_t>(d.dims[i]);
    box[i] = static_cast<cuuint32_t>(d.box[i]);
    element_strides[i] = 1;
    if (i + 1 < rank) strides[i] = static_cast<cuuint64_t>(d.strides[i]);
  }
  CUtensorMap map;
  // Out-of-bounds elements are zeros (OOB_FILL_NONE): partial blocks and the
  // k tail contribute nothing. 256-byte L2 promotion: whole rows of a box.
  check(driver().cuTensorMapEncodeTiled(&map, type, rank, reinterpret_cast<void*>(buffer), dims, strides, box,
                                        element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeTiled");
  return map;
}

}  // namespace tessera::runtime::cuda
