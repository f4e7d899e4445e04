// User-facing errors carry a stable code (documented in docs/errors.md) so
// scripts and tests can match on them; internal invariants use assert().
#pragma once
#include <stdexcept>
#include <string>

namespace tessera {

struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
  bool known() const { return line > 0; }
};

class Error : public std::runtime_error {
 public:
  Error(std::string code, std::string message, SourceLoc loc = {})
      : std::runtime_error(format(code, message, loc)),
        code_(std::move(code)), message_(std::move(message)), loc_(std::move(loc)) {}
  const std::string& code() const { return code_; }
  const std::string& message() const { return message_; }
  const SourceLoc& loc() const { return loc_; }

 private:
  static std::string format(const std::string& code, const std::string& msg,
                            const SourceLoc& loc) {
    std::string out;
    if (loc.known())
      out += loc.file + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": ";
    out += "error[" + code + "]: " + msg;
    return out;
  }
  std::string code_, message_;
  SourceLoc loc_;
};

[[noreturn]] inline void fail(const std::string& code, const std::string& msg,
                              const SourceLoc& loc = {}) {
  throw Error(code, msg, loc);
}

}  // namespace tessera
