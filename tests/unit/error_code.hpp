// The stable code of the tessera::Error that `f` throws, or "none".
#pragma once
#include <functional>
#include <string>

#include "support/diagnostic.hpp"

namespace tessera {

inline std::string code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return "none";
}

}  // namespace tessera
