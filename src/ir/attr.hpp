// Attributes: the compile-time facts attached to an op (kind, axes, decisions).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/type.hpp"

namespace tessera::ir {

struct Attr;
using AttrList = std::vector<Attr>;

struct Attr {
  std::variant<int64_t, double, bool, std::string, Type, AttrList> v;

  Attr() : v(int64_t{0}) {}
  Attr(int64_t i) : v(i) {}
  Attr(int i) : v(int64_t{i}) {}
  Attr(double d) : v(d) {}
  Attr(bool b) : v(b) {}
  Attr(std::string s) : v(std::move(s)) {}
  Attr(const char* s) : v(std::string(s)) {}
  Attr(Type t) : v(std::move(t)) {}
  Attr(AttrList l) : v(std::move(l)) {}
  static Attr ints(const std::vector<int64_t>& xs);

  const int64_t* as_int() const { return std::get_if<int64_t>(&v); }
  const double* as_float() const { return std::get_if<double>(&v); }
  const bool* as_bool() const { return std::get_if<bool>(&v); }
  const std::string* as_string() const { return std::get_if<std::string>(&v); }
  const Type* as_type() const { return std::get_if<Type>(&v); }
  const AttrList* as_list() const { return std::get_if<AttrList>(&v); }
  // The list as integers, or nullopt if it is not a list of integers.
  std::optional<std::vector<int64_t>> as_ints() const;

  std::string str() const;  // textual form, exactly re-parseable
  bool operator==(const Attr& o) const { return str() == o.str(); }
};

// Sorted by name, so printing is canonical.
using AttrDict = std::map<std::string, Attr>;

std::string quote_string(const std::string& s);
std::string format_double(double d);

}  // namespace tessera::ir
