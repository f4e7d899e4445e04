#include "ir/target_dialect.hpp"

#include <set>
#include <sstream>

#include "ir/graph_dialect.hpp"
#include "ir/schedule_dialect.hpp"
#include "support/sha256.hpp"

namespace tessera::ir {

std::string BufferDesc::str() const {
  return name + " " + std::string(dtype_name(dtype)) + "[" + std::to_string(elements) + "] " +
         (written ? "write" : "read");
}

BufferDesc BufferDesc::parse(const std::string& s, const SourceLoc& loc) {
  // "<name> <dtype>[<elements>] read|write"
  std::istringstream in(s);
  std::string name, typed, access;
  in >> name >> typed >> access;
  auto lb = typed.find('['), rb = typed.find(']');
  BufferDesc d;
  d.name = name;
  auto dt = lb == std::string::npos ? std::nullopt : parse_dtype(typed.substr(0, lb));
  std::string count = lb == std::string::npos || rb == std::string::npos ? "" : typed.substr(lb + 1, rb - lb - 1);
  if (name.empty() || !dt || count.empty() || count.size() > 18 ||
      count.find_first_not_of("0123456789") != std::string::npos || (access != "read" && access != "write"))
    fail("E504", "malformed buffer descriptor '" + s + "' (expected e.g. \"in f32[4096] read\")", loc);
  d.dtype = *dt;
  d.elements = std::stoll(count);
  d.written = access == "write";
  return d;
}

KernelDesc read_kernel_desc(const Op& op) {
  KernelDesc k;
  k.sym = op.sym;
  k.target = string_attr(op, "target");
  k.abi = string_attr(op, "abi");
  k.source = string_attr(op, "source");
  k.sha256 = string_attr(op, "sha256");
  k.artifact_hash = string_attr(op, "artifact_hash");
  const Attr* grid = op.attr("grid");
  auto g = grid ? grid->as_ints() : std::nullopt;
  if (!g || g->size() != 1 || (*g)[0] < 0) fail("E504", "target.kernel needs grid = [N]", op.loc);
  k.grid = (*g)[0];
  if (const Attr* t = op.attr("threads")) {
    if (!t->as_int() || *t->as_int() < 1 || *t->as_int() > 1024)
      fail("E504", "target.kernel threads must be between 1 and 1024", op.loc);
    k.threads = *t->as_int();
  }
  if (const Attr* c = op.attr("cluster"))  // CUDA: blocks a program; the grid counts blocks
    if (!c->as_int() || *c->as_int() < 1 || *c->as_int() > 8 || k.grid % *c->as_int() != 0)
      fail("E504", "target.kernel cluster must be an integer in [1, 8] that divides the grid", op.loc);
  if (const Attr* l = op.attr("library")) {
    if (!l->as_string() || l->as_string()->empty()) fail("E504", "target.kernel library must be a name", op.loc);
    k.library = *l->as_string();
  }
  if (const Attr* s = op.attr("shared_bytes")) {
    if (!s->as_int() || *s->as_int() < 0 || *s->as_int() > (int64_t{1} << 30))
      fail("E504", "target.kernel shared_bytes must be an integer in [0, 2^30]", op.loc);
    k.shared_bytes = *s->as_int();
  }
  const Attr* bufs = op.attr("buffers");
  if (!bufs || !bufs->as_list()) fail("E504", "target.kernel needs a buffers list", op.loc);
  for (const Attr& b : *bufs->as_list()) {
    if (!b.as_string()) fail("E504", "buffer descriptors are strings", op.loc);
    k.buffers.push_back(BufferDesc::parse(*b.as_string(), op.loc));
  }
  return k;
}

void verify_target(const Module& m) {
  std::set<std::string> kernels;
  for (auto& top : m.ops) {
    if (top->name == "func") continue;
    if (top->name != "target.kernel")
      fail("E505", "'" + top->name + "' is not allowed at the top level of Target IR", top->loc);
    KernelDesc k = read_kernel_desc(*top);
    if (sha256_hex(k.source) != k.sha256)
      fail("E503", "kernel @" + k.sym + ": source does not match its recorded sha256 (edited after synthesis?)",
           top->loc);
    kernels.insert(k.sym);
  }
  if (m.funcs().empty()) fail("E200", "the module has no func");
  for (Op* f : m.funcs()) {
    for (auto& op : f->regions[0]->ops) {
      if (op->name == "return") continue;
      if (op->name != "target.launch") fail("E505", "'" + op->name + "' is not a Target IR host op", op->loc);
      if (!kernels.count(op->sym)) fail("E505", "target.launch of unknown kernel @" + op->sym, op->loc);
      KernelDesc k = read_kernel_desc(*m.lookup(op->sym));
      if (k.buffers.size() != op->operands.size() + op->results.size())
        fail("E505", "target.launch @" + op->sym + " passes the wrong number of buffers", op->loc);
      std::vector<Value*> vals(op->operands.begin(), op->operands.end());
      for (auto& r : op->results) vals.push_back(r.get());
      for (size_t i = 0; i < vals.size(); ++i)
        if (vals[i]->type.numel() != k.buffers[i].elements || vals[i]->type.dtype != k.buffers[i].dtype)
          fail("E505", "target.launch @" + op->sym + ": " + vals[i]->type.str() + " does not fit buffer '" +
                           k.buffers[i].str() + "'", op->loc);
    }
    verify_func_return(*f);
  }
}

}  // namespace tessera::ir
