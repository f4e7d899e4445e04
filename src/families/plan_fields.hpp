// A family's Plan as a table of fields: one entry a field (its attribute
// name, its member, when it is recorded) drives both the schedule attributes
// emit_schedule writes and the typed reading in read_plan, so the two cannot
// drift apart. Enums are recorded by name (EnumNames); a missing, mistyped or
// unknown value is E302 at the op. What a field's value must satisfy beyond
// its type stays in read_plan, where the family states it.
#pragma once
#include <array>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir/ir.hpp"
#include "ir/schedule_dialect.hpp"

namespace tessera::families {

// Specialize with `static constexpr std::array<std::pair<E, const char*>, N> names`.
template <class E>
struct EnumNames;

template <class E>
const char* enum_name(E e) {
  for (const auto& [v, n] : EnumNames<E>::names)
    if (v == e) return n;
  return "?";
}

template <class E>
bool parse_enum(const std::string& name, E& out) {
  for (const auto& [v, n] : EnumNames<E>::names)
    if (name == n) return out = v, true;
  return false;
}

template <class P>
struct Field {
  // Always: recorded and required. IfNotDefault: recorded only when it differs
  // from a default Plan's value, read as that default when absent (so adding
  // such a field leaves older schedules' text, and hashes, as they were).
  enum class When { Always, IfNotDefault };
  std::string name;
  std::function<void(const P&, ir::AttrDict&)> write;
  std::function<void(const ir::Op&, P&)> read;
  // Whether the field belongs to this plan at all (e.g. only for one strategy);
  // read after the fields before it, so it may look at them.
  std::function<bool(const P&)> applies;
  // Whether two plans agree on it (recorded facts against the region's).
  std::function<bool(const P&, const P&)> equal;
};

namespace plan_fields_detail {

template <class T>
ir::Attr to_attr(const T& v) {
  if constexpr (std::is_same_v<T, DType>) return ir::Attr(std::string(dtype_name(v)));
  else if constexpr (std::is_enum_v<T>) return ir::Attr(std::string(enum_name(v)));
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return ir::Attr::ints(v);
  else return ir::Attr(v);
}

template <class T>
T from_attr(const ir::Op& op, const std::string& key) {
  if constexpr (std::is_same_v<T, int64_t>) {
    return ir::int_attr(op, key);
  } else if constexpr (std::is_same_v<T, bool>) {
    return ir::bool_attr(op, key);
  } else if constexpr (std::is_same_v<T, double>) {
    const ir::Attr* a = op.attr(key);
    if (!a || !a->as_float()) fail("E302", "'" + op.name + "' needs a float attribute '" + key + "'", op.loc);
    return *a->as_float();
  } else if constexpr (std::is_same_v<T, std::string>) {
    return ir::string_attr(op, key);
  } else if constexpr (std::is_same_v<T, DType>) {
    auto d = parse_dtype(ir::string_attr(op, key));
    if (!d) fail("E302", "'" + key + "' must name a dtype", op.loc);
    return *d;
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    const ir::Attr* a = op.attr(key);
    auto v = a ? a->as_ints() : std::nullopt;
    if (!v) fail("E302", "'" + op.name + "' needs an integer list '" + key + "'", op.loc);
    return *v;
  } else {
    static_assert(std::is_enum_v<T>, "a plan field is an integer, bool, float, string, dtype, int list or enum");
    const std::string name = ir::string_attr(op, key);
    T v{};
    if (!parse_enum(name, v)) {
      std::string known;
      for (const auto& [_, n] : EnumNames<T>::names) known += (known.empty() ? "" : ", ") + std::string(n);
      fail("E302", "'" + op.name + "': unknown " + key + " '" + name + "' (" + known + ")", op.loc);
    }
    return v;
  }
}

}  // namespace plan_fields_detail

// The table entry for `member`, recorded as attribute `name`.
template <class P, class T>
Field<P> field(const char* name, T P::*member, typename Field<P>::When when = Field<P>::When::Always,
               std::type_identity_t<std::function<bool(const P&)>> applies = nullptr) {
  using When = typename Field<P>::When;
  Field<P> f;
  f.name = name;
  f.applies = applies ? std::move(applies) : [](const P&) { return true; };
  f.write = [name, member, when](const P& p, ir::AttrDict& attrs) {
    if (when == When::IfNotDefault && p.*member == P{}.*member) return;
    attrs[name] = plan_fields_detail::to_attr(p.*member);
  };
  f.read = [name, member, when](const ir::Op& op, P& p) {
    if (when == When::IfNotDefault && !op.attr(name)) return;
    p.*member = plan_fields_detail::from_attr<T>(op, name);
  };
  f.equal = [member](const P& a, const P& b) { return a.*member == b.*member; };
  return f;
}

// An entry for several members recorded as one integer list (e.g. a block
// shape): `members` in the order of the list.
template <class P, class T>
Field<P> int_list_field(const char* name, std::vector<T P::*> members) {
  Field<P> f;
  f.name = name;
  f.applies = [](const P&) { return true; };
  f.write = [name, members](const P& p, ir::AttrDict& attrs) {
    std::vector<int64_t> v;
    for (auto m : members) v.push_back(static_cast<int64_t>(p.*m));
    attrs[name] = ir::Attr::ints(v);
  };
  f.read = [name, members](const ir::Op& op, P& p) {
    const std::vector<int64_t> v = ir::ints_attr(op, name, members.size());
    for (size_t i = 0; i < members.size(); ++i) p.*members[i] = static_cast<T>(v[i]);
  };
  f.equal = [members](const P& a, const P& b) {
    for (auto m : members)
      if (a.*m != b.*m) return false;
    return true;
  };
  return f;
}

template <class P>
void write_fields(const std::vector<Field<P>>& fields, const P& p, ir::AttrDict& attrs) {
  for (const Field<P>& f : fields)
    if (f.applies(p)) f.write(p, attrs);
}

template <class P>
void read_fields(const std::vector<Field<P>>& fields, const ir::Op& op, P& p) {
  for (const Field<P>& f : fields)
    if (f.applies(p)) f.read(op, p);
}

}  // namespace tessera::families
