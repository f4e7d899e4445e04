// The CUDA device as a machine descriptor (machine/descriptor.hpp).
#pragma once
#include "machine/descriptor.hpp"

namespace tessera::runtime::cuda {

// Device 0 as the driver reports it (E730 without a driver or device).
machine::Descriptor describe_device();
// Whether a driver and a device are present (loads the driver once; never throws).
bool device_present();

}  // namespace tessera::runtime::cuda
