#include "ir/ir.hpp"

#include <unordered_map>

namespace tessera::ir {

Value* Region::add_arg(std::string name, Type t) {
  args.push_back(std::make_unique<Value>(Value{std::move(name), std::move(t), nullptr}));
  return args.back().get();
}

Value* Op::add_result(std::string n, Type t) {
  results.push_back(std::make_unique<Value>(Value{std::move(n), std::move(t), this}));
  return results.back().get();
}

Region& Op::add_region() {
  regions.push_back(std::make_unique<Region>());
  return *regions.back();
}

const Attr* Op::attr(const std::string& key) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? nullptr : &it->second;
}

std::string Op::dialect() const {
  auto dot = name.find('.');
  return dot == std::string::npos ? "" : name.substr(0, dot);
}

Op* Module::lookup(const std::string& s) const {
  for (auto& op : ops)
    if (op->sym == s) return op.get();
  return nullptr;
}

std::vector<Op*> Module::funcs() const {
  std::vector<Op*> out;
  for (auto& op : ops)
    if (op->name == "func") out.push_back(op.get());
  return out;
}

Op& Builder::create(std::string name, std::vector<Value*> operands, AttrDict attrs) {
  auto op = std::make_unique<Op>();
  op->name = std::move(name);
  op->operands = std::move(operands);
  op->attrs = std::move(attrs);
  region_->ops.push_back(std::move(op));
  return *region_->ops.back();
}

Value* Builder::create1(std::string name, std::vector<Value*> operands, Type t, AttrDict attrs) {
  Op& op = create(std::move(name), std::move(operands), std::move(attrs));
  return op.add_result(fresh_name(), std::move(t));
}

std::string Builder::fresh_name() { return prefix_ + std::to_string(next_++); }

Op& add_func(Module& m, const std::string& name, const std::vector<std::pair<std::string, Type>>& args,
             const std::vector<Type>& results) {
  auto f = std::make_unique<Op>();
  f->name = "func";
  f->sym = name;
  AttrList rs;
  for (const Type& t : results) rs.emplace_back(t);
  f->attrs["result_types"] = Attr(std::move(rs));
  Region& body = f->add_region();
  for (auto& [n, t] : args) body.add_arg(n, t);
  m.ops.push_back(std::move(f));
  return *m.ops.back();
}

void copy_func_attrs(const Op& from, Op& to) {
  for (const auto& [key, value] : from.attrs)
    if (key != "result_types") to.attrs[key] = value;
}

std::vector<Type> func_result_types(const Op& func) {
  std::vector<Type> out;
  if (const Attr* a = func.attr("result_types"))
    if (const AttrList* l = a->as_list())
      for (const Attr& t : *l)
        if (t.as_type()) out.push_back(*t.as_type());
  return out;
}

namespace {
using ValueMap = std::unordered_map<const Value*, Value*>;

std::unique_ptr<Op> clone_op(const Op& src, ValueMap& map);

void clone_region(const Region& src, Region& dst, ValueMap& map) {
  for (auto& a : src.args) map[a.get()] = dst.add_arg(a->name, a->type);
  for (auto& op : src.ops) dst.ops.push_back(clone_op(*op, map));
}

std::unique_ptr<Op> clone_op(const Op& src, ValueMap& map) {
  auto op = std::make_unique<Op>();
  op->name = src.name;
  op->sym = src.sym;
  op->attrs = src.attrs;
  op->loc = src.loc;
  for (Value* v : src.operands) {
    auto it = map.find(v);
    op->operands.push_back(it == map.end() ? v : it->second);
  }
  for (auto& r : src.regions) clone_region(*r, op->add_region(), map);
  for (auto& r : src.results) map[r.get()] = op->add_result(r->name, r->type);
  return op;
}
}  // namespace

std::unique_ptr<Module> clone(const Module& m) {
  auto out = std::make_unique<Module>();
  ValueMap map;
  for (auto& op : m.ops) out->ops.push_back(clone_op(*op, map));
  return out;
}

}  // namespace tessera::ir
