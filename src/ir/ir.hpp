// The one IR data structure behind all four layers (Graph, Schedule, Tile,
// Target): a module of ops; an op has SSA operands and results, attributes and
// nested regions. Layers differ only in which ops (dialects) they contain,
// which is what their verifiers check.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/attr.hpp"
#include "ir/type.hpp"
#include "support/diagnostic.hpp"

namespace tessera::ir {

struct Op;

struct Value {
  std::string name;  // printed as %name; unique within a func / kernel
  Type type;
  Op* def = nullptr;  // defining op, or nullptr for a region argument
};

struct Region {
  std::vector<std::unique_ptr<Value>> args;
  std::vector<std::unique_ptr<Op>> ops;

  Value* add_arg(std::string name, Type t);
};

struct Op {
  std::string name;  // "tessera.reduce", "func", "return", ...
  std::string sym;   // "@row_sum" without the '@'; empty if none
  std::vector<Value*> operands;
  std::vector<std::unique_ptr<Value>> results;
  AttrDict attrs;
  std::vector<std::unique_ptr<Region>> regions;
  SourceLoc loc;

  Value* result(size_t i = 0) const { return results.at(i).get(); }
  Value* add_result(std::string name, Type t);
  Region& add_region();
  const Attr* attr(const std::string& key) const;
  std::string dialect() const;  // "tessera" for "tessera.reduce"; "" for func/return
};

struct Module {
  std::vector<std::unique_ptr<Op>> ops;  // funcs and top-level kernels

  Op* lookup(const std::string& sym) const;
  std::vector<Op*> funcs() const;
};

// Builds ops in order at the end of a region, naming values uniquely.
class Builder {
 public:
  explicit Builder(Region& r, std::string prefix = "v") : region_(&r), prefix_(std::move(prefix)) {}
  Op& create(std::string name, std::vector<Value*> operands, AttrDict attrs = {});
  // Shorthand: create an op with a single result of type t.
  Value* create1(std::string name, std::vector<Value*> operands, Type t, AttrDict attrs = {});
  std::string fresh_name();
  Region& region() { return *region_; }
  void set_region(Region& r) { region_ = &r; }

 private:
  Region* region_;
  std::string prefix_;
  int next_ = 0;
};

// func @name(args) -> results { body }
Op& add_func(Module& m, const std::string& name, const std::vector<std::pair<std::string, Type>>& args,
             const std::vector<Type>& results);
std::vector<Type> func_result_types(const Op& func);
// Copies a func's own attributes (all but its result types: index_guards,
// in_place) onto the func a pass builds from it.
void copy_func_attrs(const Op& from, Op& to);

// Deep copy (values renamed identically), used by passes that keep a layer's
// structure and rewrite parts of it.
std::unique_ptr<Module> clone(const Module& m);

}  // namespace tessera::ir
