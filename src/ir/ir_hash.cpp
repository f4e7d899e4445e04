#include "ir/ir_hash.hpp"

#include "ir/printer.hpp"
#include "support/sha256.hpp"

namespace tessera::ir {

namespace {
bool is_kernel(const Op& op) {
  return op.name == "tile.kernel" || op.name == "tile.extern_kernel" || op.name == "target.kernel";
}
}  // namespace

std::string compute_ir_hash(const Op& kernel, const Module& m) {
  std::string c = "op=" + kernel.name + ";sym=" + kernel.sym + ";";
  for (auto& [k, v] : kernel.attrs)
    if (k != "ir_hash") c += k + "=" + v.str() + ";";
  for (auto& region : kernel.regions) {
    for (auto& arg : region->args) c += "arg=%" + arg->name + ":" + arg->type.str() + ";";
    for (auto& inner : region->ops) c += "body=" + print_op(*inner);
  }
  // The buffers' sizes come from the launches' tensor types (tile_to_target).
  for (Op* f : m.funcs())
    for (auto& op : f->regions[0]->ops)
      if (op->sym == kernel.sym && (op->name == "tile.launch" || op->name == "target.launch")) {
        c += "launch=@" + f->sym;
        for (Value* v : op->operands) c += " " + v->type.str();
        c += " ->";
        for (auto& r : op->results) c += " " + r->type.str();
        c += ";";
      }
  return sha256_hex(c);
}

void stamp_ir_hashes(Module& m) {
  for (auto& op : m.ops)
    if (is_kernel(*op)) op->attrs["ir_hash"] = Attr(compute_ir_hash(*op, m));
}

void check_ir_hash(const Op& kernel, const Module& m, const char* code) {
  const Attr* h = kernel.attr("ir_hash");
  if (!h || !h->as_string())
    fail(code,
         "kernel @" + echo(kernel.sym) +
             " has no ir_hash (Tile and Target IR are compiler output; lower the program again)",
         kernel.loc);
  if (*h->as_string() != compute_ir_hash(kernel, m))
    fail(code,
         "kernel @" + echo(kernel.sym) +
             " altered after lowering: it no longer matches its ir_hash (lower the program again instead of editing "
             "Tile or Target IR)",
         kernel.loc);
}

}  // namespace tessera::ir
