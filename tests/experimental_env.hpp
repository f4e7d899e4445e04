// Turns on experimental schedule features (src/support/experimental.hpp) for
// one test's scope, and off again after it.
#pragma once
#include <cstdlib>

namespace tessera::test {

struct ExperimentalEnv {
  explicit ExperimentalEnv(const char* features) { setenv("TESSERA_EXPERIMENTAL", features, 1); }
  ~ExperimentalEnv() { unsetenv("TESSERA_EXPERIMENTAL"); }
  ExperimentalEnv(const ExperimentalEnv&) = delete;
  ExperimentalEnv& operator=(const ExperimentalEnv&) = delete;
};

}  // namespace tessera::test
