#include "runtime/device_query.hpp"

namespace tessera::runtime {

machine::Descriptor describe_target(const std::string& target, const std::string& profile) {
  const machine::Descriptor& fallback = machine::default_for_target(target);  // E506 for an unknown target
  if (!profile.empty()) {
    const machine::Descriptor& named = machine::profile(profile);
    if (named.kind != fallback.kind)
      fail("E507", "device profile '" + profile + "' is a " + named.target() + " device, not a " + target + " one");
    return named;
  }
  if (fallback.kind == machine::Kind::Cuda && cuda::device_present()) return cuda::describe_device();
  return fallback;
}

}  // namespace tessera::runtime
