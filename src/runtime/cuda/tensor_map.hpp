// Encoding the tensor maps a CUDA kernel takes (Target IR's tensor_maps) over
// the device buffers of one binding: the driver's cuTensorMapEncodeTiled, once
// per binding; the kernel gets the 128 bytes by value.
#pragma once
#include <cuda.h>

#include "ir/target_dialect.hpp"

namespace tessera::runtime::cuda {

// E613 when the buffer's address is not 16-byte aligned (the TMA's rule;
// Target IR has already checked the strides and that boxes stay inside the
// buffer), E732 with the driver's message when it refuses the map.
CUtensorMap encode_tensor_map(const ir::TensorMapDesc& desc, CUdeviceptr buffer);

}  // namespace tessera::runtime::cuda
