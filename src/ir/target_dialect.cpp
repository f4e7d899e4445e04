#include "ir/target_dialect.hpp"

#include <optional>
#include <set>
#include <sstream>

#include "ir/graph_dialect.hpp"
#include "ir/ir_hash.hpp"
#include "ir/kernel_abi.hpp"
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
    fail("E504", "malformed buffer descriptor '" + echo(s) + "' (expected e.g. \"in f32[4096] read\")", loc);
  d.dtype = *dt;
  d.elements = std::stoll(count);
  d.written = access == "write";
  return d;
}

namespace {

std::string ints_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// "[1,2,3]" -> {1, 2, 3}: non-negative integers of at most 18 digits.
std::optional<std::vector<int64_t>> parse_ints(const std::string& s) {
  if (s.size() < 3 || s.front() != '[' || s.back() != ']') return std::nullopt;
  std::vector<int64_t> out;
  std::istringstream in(s.substr(1, s.size() - 2));
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty() || item.size() > 18 || item.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    out.push_back(std::stoll(item));
  }
  return out;
}

// The tensor map's facts against its kernel: the buffer it names, the ABI
// position, the TMA's encoding rules, and that no box can reach past the
// buffer (a map is an address range the kernel reads without bounds checks
// of its own).
void check_tensor_map(const TensorMapDesc& t, size_t index, const KernelDesc& k, const SourceLoc& loc) {
  auto bad = [&](const std::string& why) {
    fail("E504", "tensor map '" + t.str() + "' of @" + k.sym + ": " + why, loc);
  };
  const BufferDesc* buf = nullptr;
  for (const BufferDesc& b : k.buffers)
    if (b.name == t.buffer) buf = &b;
  if (!buf) bad("names no buffer of the kernel");
  if (buf->dtype != t.dtype) bad("dtype differs from the buffer's");
  if (t.param != static_cast<int64_t>(k.buffers.size() + index))
    bad("param must be " + std::to_string(k.buffers.size() + index) + " (tensor maps follow the buffers, in order)");
  const size_t rank = t.dims.size();
  if (rank < 2 || rank > 5 || t.strides.size() != rank - 1 || t.box.size() != rank)
    bad("needs 2 to 5 dims, one stride per dim after the first, one box size per dim");
  if (t.swizzle != 128) bad("swizzle must be 128B");
  const int64_t esize = static_cast<int64_t>(dtype_size(t.dtype));
  int64_t reach = esize;  // bytes from the base to one past the farthest element
  for (size_t d = 0; d < rank; ++d) {
    if (t.dims[d] < 1 || t.dims[d] > (int64_t{1} << 32)) bad("dims must be in [1, 2^32]");
    if (t.box[d] < 1 || t.box[d] > 256) bad("box sizes must be in [1, 256]");
    const int64_t stride = d == 0 ? esize : t.strides[d - 1];
    if (d > 0 && (stride % 16 != 0 || stride < 16 || stride >= (int64_t{1} << 40)))
      bad("strides must be multiples of 16 bytes below 2^40");
    reach += (t.dims[d] - 1) * stride;
    if (reach > (int64_t{1} << 50)) bad("reaches past 2^50 bytes");
  }
  if (t.box[0] * esize % 16 != 0 || t.box[0] * esize > t.swizzle)
    bad("an inner box row must be a multiple of 16 bytes within the swizzle span");
  if (t.offset < 0 || t.offset * esize % 16 != 0) bad("offset must start the map on a 16-byte boundary");
  if (reach + t.offset * esize > buf->elements * esize) bad("reaches past the end of buffer '" + buf->str() + "'");
}

}  // namespace

std::string TensorMapDesc::str() const {
  return buffer + " " + std::string(dtype_name(dtype)) + " dims=" + ints_text(dims) + " strides=" + ints_text(strides) +
         " box=" + ints_text(box) + " swizzle=" + std::to_string(swizzle) + "B param=" + std::to_string(param) +
         (offset ? " offset=" + std::to_string(offset) : "");
}

TensorMapDesc TensorMapDesc::parse(const std::string& s, const SourceLoc& loc) {
  std::istringstream in(s);
  std::string name, dt, extra;
  in >> name >> dt;
  TensorMapDesc t;
  t.buffer = name;
  bool ok = !name.empty() && parse_dtype(dt).has_value();
  if (ok) t.dtype = *parse_dtype(dt);
  bool dims = false, strides = false, box = false, swizzle = false, param = false, offset = false;
  std::string field;
  while (ok && in >> field) {
    const size_t eq = field.find('=');
    const std::string key = eq == std::string::npos ? field : field.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : field.substr(eq + 1);
    auto list = [&](std::vector<int64_t>& into, bool& seen) {
      auto v = parse_ints(value);
      if (!v || seen) return false;
      into = *v;
      return seen = true;
    };
    if (key == "dims") ok = list(t.dims, dims);
    else if (key == "strides") ok = list(t.strides, strides);
    else if (key == "box") ok = list(t.box, box);
    else if (key == "swizzle" && !swizzle && value == "128B") t.swizzle = 128, swizzle = true;
    else if (key == "param" && !param && !value.empty() && value.size() < 10 &&
             value.find_first_not_of("0123456789") == std::string::npos)
      t.param = std::stoll(value), param = true;
    else if (key == "offset" && !offset && !value.empty() && value.size() < 19 &&
             value.find_first_not_of("0123456789") == std::string::npos)
      t.offset = std::stoll(value), offset = true;
    else ok = false;
  }
  if (!ok || !dims || !strides || !box || !swizzle || !param)
    fail("E504",
         "malformed tensor map descriptor '" + echo(s) +
             "' (expected e.g. \"a bf16 dims=[1024,8192] strides=[2048] box=[64,128] swizzle=128B param=3\")",
         loc);
  return t;
}

KernelDesc read_kernel_desc(const Op& op) {
  KernelDesc k;
  k.sym = op.sym;
  k.target = string_attr(op, "target");
  k.abi = string_attr(op, "abi");
  k.source = string_attr(op, "source");
  k.sha256 = string_attr(op, "sha256");
  k.artifact_hash = string_attr(op, "artifact_hash");
  if (k.artifact_hash.size() != 64 || k.artifact_hash.find_first_not_of("0123456789abcdef") != std::string::npos)
    fail("E504", "target.kernel needs the 64-hex-digit artifact_hash of the schedule it came from", op.loc);
  k.entry = kernel_entry_symbol(k.artifact_hash);
  const Attr* grid = op.attr("grid");
  auto g = grid ? grid->as_ints() : std::nullopt;
  if (!g || g->size() != 1 || (*g)[0] < 0) fail("E504", "target.kernel needs grid = [N]", op.loc);
  k.grid = (*g)[0];
  if (const Attr* t = op.attr("threads")) {
    if (!t->as_int() || *t->as_int() < 1 || *t->as_int() > 1024)
      fail("E504", "target.kernel threads must be between 1 and 1024", op.loc);
    k.threads = *t->as_int();
  }
  if (const Attr* c = op.attr("cluster")) {  // CUDA: blocks a program; the grid counts blocks
    if (!c->as_int() || *c->as_int() < 1 || *c->as_int() > 16 || k.grid % *c->as_int() != 0)
      fail("E504", "target.kernel cluster must be an integer in [1, 16] that divides the grid", op.loc);
    k.cluster = *c->as_int();
  }
  if (const Attr* pe = op.attr("persistent")) {
    if (!pe->as_bool() || k.target != "cuda") fail("E504", "target.kernel persistent is a boolean, on cuda", op.loc);
    k.persistent = *pe->as_bool();
  }
  if (const Attr* l = op.attr("library")) {
    if (!l->as_string() || l->as_string()->empty()) fail("E504", "target.kernel library must be a name", op.loc);
    k.library = *l->as_string();
  }
  if (const Attr* d = op.attr("device")) {
    if (!d->as_string() || d->as_string()->empty()) fail("E504", "target.kernel device must be a descriptor", op.loc);
    k.device = *d->as_string();
  }
  if (const Attr* s = op.attr("shared_bytes")) {
    if (!s->as_int() || *s->as_int() < 0 || *s->as_int() > (int64_t{1} << 30))
      fail("E504", "target.kernel shared_bytes must be an integer in [0, 2^30]", op.loc);
    k.shared_bytes = *s->as_int();
  }
  if (const Attr* w = op.attr("workspace_bytes")) {
    if (!w->as_int() || *w->as_int() < 0 || *w->as_int() > (int64_t{1} << 34) || k.target != "cuda")
      fail("E504", "target.kernel workspace_bytes is an integer in [0, 2^34], on cuda", op.loc);
    k.workspace_bytes = *w->as_int();
  }
  const Attr* bufs = op.attr("buffers");
  if (!bufs || !bufs->as_list()) fail("E504", "target.kernel needs a buffers list", op.loc);
  for (const Attr& b : *bufs->as_list()) {
    if (!b.as_string()) fail("E504", "buffer descriptors are strings", op.loc);
    k.buffers.push_back(BufferDesc::parse(*b.as_string(), op.loc));
  }
  if (const Attr* maps = op.attr("tensor_maps")) {
    if (!maps->as_list()) fail("E504", "target.kernel tensor_maps must be a list of descriptors", op.loc);
    if (k.target != "cuda") fail("E504", "tensor maps are for CUDA kernels only", op.loc);
    for (const Attr& m : *maps->as_list()) {
      if (!m.as_string()) fail("E504", "tensor map descriptors are strings", op.loc);
      k.tensor_maps.push_back(TensorMapDesc::parse(*m.as_string(), op.loc));
      check_tensor_map(k.tensor_maps.back(), k.tensor_maps.size() - 1, k, op.loc);
    }
  }
  return k;
}

void verify_target(const Module& m) {
  std::set<std::string> kernels;
  for (auto& top : m.ops) {
    if (top->name == "func") continue;
    if (top->name != "target.kernel")
      fail("E505", "'" + echo(top->name) + "' is not allowed at the top level of Target IR", top->loc);
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
      if (op->name != "target.launch") fail("E505", "'" + echo(op->name) + "' is not a Target IR host op", op->loc);
      if (!kernels.count(op->sym)) fail("E505", "target.launch of unknown kernel @" + op->sym, op->loc);
      KernelDesc k = read_kernel_desc(*m.lookup(op->sym));
      if (k.buffers.size() != op->operands.size() + op->results.size())
        fail("E505", "target.launch @" + op->sym + " passes the wrong number of buffers", op->loc);
      std::vector<Value*> vals(op->operands.begin(), op->operands.end());
      for (auto& r : op->results) vals.push_back(r.get());
      for (size_t i = 0; i < vals.size(); ++i)
        if (vals[i]->type.numel() != k.buffers[i].elements || vals[i]->type.dtype != k.buffers[i].dtype)
          fail("E505",
               "target.launch @" + op->sym + ": " + vals[i]->type.str() + " does not fit buffer '" +
                   k.buffers[i].str() + "'",
               op->loc);
    }
    verify_func_return(*f);
  }
  // Last, so an edited source is reported as E503 and a bad launch as E505.
  for (auto& top : m.ops)
    if (top->name == "target.kernel") check_ir_hash(*top, m, "E507");
}

}  // namespace tessera::ir
