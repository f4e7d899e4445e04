#include "support/experimental.hpp"

#include <cstdlib>
#include <sstream>

#include "support/diagnostic.hpp"

namespace tessera {

namespace {
const char* const kFeatures[] = {"rows_cluster", "matmul_f32_stage_a", "rows_walk"};
}

// Read on every call (cheap, and tests can set the variable per case).
bool experimental(const std::string& feature) {
  const char* env = std::getenv("TESSERA_EXPERIMENTAL");
  if (!env || !*env) return false;
  bool on = false;
  std::stringstream list(env);
  for (std::string name; std::getline(list, name, ',');) {
    if (name.empty()) continue;
    bool known = false;
    std::string names;
    for (const char* f : kFeatures) {
      known = known || name == f;
      names += std::string(names.empty() ? "" : ", ") + f;
    }
    if (!known) fail("E305", "TESSERA_EXPERIMENTAL: unknown feature '" + name + "' (known: " + names + ")");
    on = on || name == feature;
  }
  return on;
}

}  // namespace tessera
