// The --device option every lowering command shares.
#pragma once
#include <string>

#include "machine/descriptor.hpp"

namespace tessera::cli {

inline std::string device_help() {
  std::string names;
  for (const std::string& n : machine::profile_names()) names += (names.empty() ? "" : ", ") + n;
  return "compile for this device profile (" + names +
         ") or descriptor line (as an evidence packet's device_descriptor records it); default: the target's "
         "device as its driver reports it, else the target's default profile";
}

}  // namespace tessera::cli
