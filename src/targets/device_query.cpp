#include "targets/device_query.hpp"

#include "runtime/cuda/cuda_device.hpp"
#include "support/diagnostic.hpp"

namespace tessera::targets {

machine::Descriptor describe_target(const std::string& target, const std::string& profile) {
  const machine::Descriptor& fallback = machine::default_for_target(target);  // E506 for an unknown target
  if (!profile.empty()) {
    // a profile's name, or a whole descriptor line (what a packet's device_descriptor records)
    const machine::Descriptor named = profile.find('=') != std::string::npos ? machine::parse(profile)
                                                                             : machine::profile(profile);
    if (named.kind != fallback.kind)
      fail("E507", "device profile '" + profile + "' is a " + named.target() + " device, not a " + target + " one");
    return named;
  }
  if (fallback.kind == machine::Kind::Cuda && runtime::cuda::device_present()) return runtime::cuda::describe_device();
  return fallback;
}

}  // namespace tessera::targets
