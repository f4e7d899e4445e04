// The --device option every lowering command shares.
#pragma once
#include <string>

#include "machine/descriptor.hpp"

namespace tessera::cli {

inline std::string device_help() {
  std::string names;
  for (const std::string& n : machine::profile_names()) names += (names.empty() ? "" : ", ") + n;
  return "compile for this device profile (" + names +
         "); default: the target's device as its driver reports it, else the target's default profile";
}

}  // namespace tessera::cli
