// User-facing errors carry a stable code (documented in docs/errors.md) so
// scripts and tests can match on them. A broken compiler invariant is never
// one of those: TESSERA_ASSERT raises InternalError, which the CLI and the C
// ABI report as E999 "internal error" naming the compiler source file:line.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace tessera {

// Input quoted in a diagnostic (a name, a number, a type, a string attribute):
// control and non-ASCII bytes are escaped as \xNN and at most `max` bytes are
// shown, so an error line stays one short, printable line whatever the input.
inline std::string echo(std::string_view s, size_t max = 200) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (s.size() > max) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

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
        code_(std::move(code)),
        message_(std::move(message)),
        loc_(std::move(loc)) {}
  const std::string& code() const { return code_; }
  const std::string& message() const { return message_; }
  const SourceLoc& loc() const { return loc_; }

 private:
  static std::string format(const std::string& code, const std::string& msg, const SourceLoc& loc) {
    std::string out;
    if (loc.known())
      out += echo(loc.file, 1000) + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": ";
    out += "error[" + code + "]: " + printable(msg);
    return out;
  }
  // The last guard for a message that quotes input without echo(): every
  // line printable, none longer than kMaxLine bytes. Lines are kept (a
  // compiler's log, a table of candidates follow some messages).
  static std::string printable(const std::string& msg) {
    constexpr size_t kMaxLine = 1000;
    std::string out;
    size_t start = 0;
    while (start <= msg.size()) {
      size_t end = msg.find('\n', start);
      if (end == std::string::npos) end = msg.size();
      std::string_view line(msg.data() + start, end - start);
      for (size_t i = 0; i < line.size() && i < kMaxLine; ++i) {
        const auto c = static_cast<unsigned char>(line[i]);
        out += (c < 0x20 && c != '\t') || c == 0x7f ? echo(line.substr(i, 1)) : std::string(1, line[i]);
      }
      if (line.size() > kMaxLine) out += "... (" + std::to_string(line.size()) + " bytes)";
      if (end == msg.size()) break;
      out += '\n';
      start = end + 1;
    }
    return out;
  }
  std::string code_, message_;
  SourceLoc loc_;
};

[[noreturn]] inline void fail(const std::string& code, const std::string& msg, const SourceLoc& loc = {}) {
  throw Error(code, msg, loc);
}

// A bug in Tessera, not in its input: deliberately not an Error, so no caller
// can take it for (or catch it as) a user diagnostic.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// `file` is __FILE__; it is shortened to the path below src/ (or tools/) so
// the message does not depend on where the tree was built.
[[noreturn]] inline void internal_error(const char* file, int line, const std::string& msg) {
  std::string where = file;
  for (const char* root : {"/src/", "/tools/"})
    if (auto at = where.rfind(root); at != std::string::npos) {
      where = where.substr(at + 1);
      break;
    }
  throw InternalError(where + ":" + std::to_string(line) + ": " + msg + " (this is a bug in Tessera)");
}

}  // namespace tessera

// Checks an invariant the compiler relies on (e.g. that a verified op has the
// attributes its table entry declares). `msg` is only evaluated on failure.
#define TESSERA_ASSERT(cond, msg)                                      \
  do {                                                                 \
    if (!(cond)) ::tessera::internal_error(__FILE__, __LINE__, (msg)); \
  } while (0)
