// The targets whose programs are GPU thread blocks: they share the CUDA
// schedules (HIP and Metal untuned for their hardware; the choice shows in
// --emit schedule and in the artifact hash, which covers the target).
#pragma once
#include <string>

namespace tessera::families {

inline bool uses_gpu_schedule(const std::string& target) {
  return target == "cuda" || target == "hip" || target == "metal";
}

}  // namespace tessera::families
