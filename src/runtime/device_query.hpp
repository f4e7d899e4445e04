// Which machine a program is compiled for. A named profile when the user
// names one; else, for cuda on a machine with a driver and a device, that
// device as its driver describes it; else the target's default profile. The
// choice is printed in Schedule IR (`device`), so it is never implicit.
#pragma once
#include <string>

#include "machine/descriptor.hpp"
#include "support/diagnostic.hpp"

namespace tessera::runtime {

machine::Descriptor describe_target(const std::string& target, const std::string& profile = "");

namespace cuda {
// Device 0 as the driver reports it (E730 without a driver or device).
machine::Descriptor describe_device();
// Whether a driver and a device are present (loads the driver once; never throws).
bool device_present();
}  // namespace cuda

}  // namespace tessera::runtime
