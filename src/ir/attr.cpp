#include "ir/attr.hpp"

#include <cmath>
#include <cstdio>

namespace tessera::ir {

Attr Attr::ints(const std::vector<int64_t>& xs) {
  AttrList l;
  for (int64_t x : xs) l.emplace_back(x);
  return Attr(std::move(l));
}

std::optional<std::vector<int64_t>> Attr::as_ints() const {
  const AttrList* l = as_list();
  if (!l) return std::nullopt;
  std::vector<int64_t> out;
  for (const Attr& a : *l) {
    if (!a.as_int()) return std::nullopt;
    out.push_back(*a.as_int());
  }
  return out;
}

std::string quote_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\%02X", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// Shortest text that reads back to the same double, always marked as a float.
std::string format_double(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string Attr::str() const {
  struct Visit {
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return format_double(d); }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(const std::string& s) const { return quote_string(s); }
    std::string operator()(const Type& t) const { return t.str(); }
    std::string operator()(const AttrList& l) const {
      std::string s = "[";
      for (size_t i = 0; i < l.size(); ++i) s += (i ? ", " : "") + l[i].str();
      return s + "]";
    }
  };
  return std::visit(Visit{}, v);
}

}  // namespace tessera::ir
