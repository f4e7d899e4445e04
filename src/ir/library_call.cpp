#include "ir/library_call.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "ir/schedule_dialect.hpp"
#include "ir/target_dialect.hpp"
#include "support/sha256.hpp"

namespace tessera::ir {

std::string LibraryMatmul::to_text() const {
  std::ostringstream s;
  s << "// Tessera library call: not compiled; the runtime calls " << library
    << (add_c ? " with buffers (a, b, c, out): out = a x b + c.\n" : " with buffers (a, b, out).\n")
    << "library = " << library << "\nop = matmul\noperand = " << dtype_name(operand)
    << "\nresult = " << dtype_name(result) << "\nbatch = " << batch << "\nm = " << m << "\nn = " << n << "\nk = " << k
    << "\ntranspose_a = " << transpose_a << "\ntranspose_b = " << transpose_b << "\na_batch_stride = " << a_batch_stride
    << "\nb_batch_stride = " << b_batch_stride << "\n";
  if (add_c) s << "add_c = 1\n";
  return s.str();
}

LibraryMatmul LibraryMatmul::parse(const std::string& text) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.rfind("//", 0) == 0) continue;
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos) fail("E504", "library call record: malformed line '" + line + "'");
    kv[line.substr(0, eq)] = line.substr(eq + 3);
  }
  auto get = [&](const char* key) {
    auto it = kv.find(key);
    if (it == kv.end()) fail("E504", std::string("library call record: missing '") + key + "'");
    return it->second;
  };
  auto num = [&](const char* key) {
    const std::string v = get(key);
    try {
      size_t used = 0;
      const long long x = std::stoll(v, &used);
      if (used != v.size() || x < 0) throw std::invalid_argument(v);
      return static_cast<int64_t>(x);
    } catch (const std::exception&) {
      fail("E504", std::string("library call record: '") + key + "' must be a non-negative integer");
    }
  };
  LibraryMatmul c;
  c.library = get("library");
  if (get("op") != "matmul") fail("E504", "library call record: unknown op '" + get("op") + "'");
  auto dt = [&](const char* key) {
    auto d = parse_dtype(get(key));
    if (!d) fail("E504", std::string("library call record: bad dtype for '") + key + "'");
    return *d;
  };
  c.operand = dt("operand");
  c.result = dt("result");
  c.batch = num("batch"), c.m = num("m"), c.n = num("n"), c.k = num("k");
  c.transpose_a = num("transpose_a") != 0, c.transpose_b = num("transpose_b") != 0;
  c.a_batch_stride = num("a_batch_stride"), c.b_batch_stride = num("b_batch_stride");
  c.add_c = kv.count("add_c") && num("add_c") == 1;
  if (c.to_text() != text) fail("E504", "library call record is not in canonical form");
  return c;
}

LibraryMatmul load_library_call(const KernelDesc& k, const std::string& library) {
  if (k.library != library)
    fail("E712", "kernel @" + k.sym + " calls library '" + k.library + "'; this runtime has " + library);
  if (sha256_hex(k.source) != k.sha256) fail("E701", "library call @" + k.sym + " does not match its sha256");
  LibraryMatmul c = LibraryMatmul::parse(k.source);
  // The call must stay inside the buffers it is launched on.
  const int64_t mk = c.m * c.k, kn = c.k * c.n, mn = c.m * c.n, last = std::max<int64_t>(c.batch - 1, 0);
  const size_t out = c.add_c ? 3 : 2;  // c, where there is one, comes before out with out's dtype and size
  const bool fits = k.buffers.size() == out + 1 && k.buffers[0].dtype == c.operand && k.buffers[1].dtype == c.operand &&
                    k.buffers[out].dtype == c.result && k.buffers[out].elements == c.batch * mn &&
                    (!c.add_c || (k.buffers[2].dtype == c.result && k.buffers[2].elements == c.batch * mn)) &&
                    (mk == 0 || k.buffers[0].elements >= last * c.a_batch_stride + mk) &&
                    (kn == 0 || k.buffers[1].elements >= last * c.b_batch_stride + kn);
  if (!fits) fail("E504", "library call @" + k.sym + ": the record does not match its buffers (a, b[, c], out)");
  return c;
}

LibraryMatmul LibraryMatmul::from_kernel(const Op& k) {
  LibraryMatmul c;
  c.library = string_attr(k, "library");
  const Region& body = *k.regions.at(0);
  c.add_c = k.attr("add_c") != nullptr;
  if (c.add_c && (!k.attr("add_c")->as_bool() || !*k.attr("add_c")->as_bool()))
    fail("E403", "tile.extern_kernel @" + k.sym + ": 'add_c' is true where present", k.loc);
  if (body.args.size() != (c.add_c ? 4u : 3u))
    fail("E403", "tile.extern_kernel @" + k.sym + " takes buffers (a, b, out), or (a, b, c, out) with add_c", k.loc);
  c.operand = body.args[0]->type.dtype;
  if (body.args[1]->type.dtype != c.operand)
    fail("E403", "tile.extern_kernel @" + k.sym + ": a and b differ in dtype", k.loc);
  c.result = body.args.back()->type.dtype;
  if (c.add_c && body.args[2]->type.dtype != c.result)
    fail("E403", "tile.extern_kernel @" + k.sym + ": c and out differ in dtype", k.loc);
  c.batch = int_attr(k, "batch"), c.m = int_attr(k, "m"), c.n = int_attr(k, "n"), c.k = int_attr(k, "k");
  auto flag = [&](const char* key) {
    const Attr* a = k.attr(key);
    if (!a || !a->as_bool()) fail("E403", std::string("tile.extern_kernel needs a boolean '") + key + "'", k.loc);
    return *a->as_bool();
  };
  c.transpose_a = flag("transpose_a"), c.transpose_b = flag("transpose_b");
  c.a_batch_stride = int_attr(k, "a_batch_stride"), c.b_batch_stride = int_attr(k, "b_batch_stride");
  return c;
}

}  // namespace tessera::ir
