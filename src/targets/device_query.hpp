// Which machine a program is compiled for. A named profile when the user
// names one; else, for cuda on a machine with a driver and a device, that
// device as its driver describes it; else the target's default profile. The
// choice is printed in Schedule IR (`device`), so it is never implicit.
#pragma once
#include <string>

#include "machine/descriptor.hpp"

namespace tessera::targets {

machine::Descriptor describe_target(const std::string& target, const std::string& profile = "");

}  // namespace tessera::targets
