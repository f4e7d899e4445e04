#include "package/rederive.hpp"

#include <fmt/core.h>

#include <set>

#include "machine/descriptor.hpp"

namespace tessera::package {

using json = nlohmann::json;

json kernel_entry(const ir::Op& op, const ir::KernelDesc& k, const targets::Lane& lane) {
  json buffers = json::array();
  for (auto& b : k.buffers) buffers.push_back(b.str());
  json entry = {{"sym", k.sym},       {"entry", k.entry},
                {"sha256", k.sha256}, {"source_file", "kernels/" + k.sym + lane.source_extension},
                {"grid", k.grid},     {"threads", k.threads},
                {"buffers", buffers}, {"artifact_hash", k.artifact_hash}};
  if (!k.tensor_maps.empty()) {  // CUDA TMA: encoded by the loader over its buffers, passed after them
    json maps = json::array();
    for (auto& t : k.tensor_maps) maps.push_back(t.str());
    entry["tensor_maps"] = maps;
  }
  // CUDA: device memory the loader keeps per binding, zero before the first
  // launch, passed after the tensor maps (the split-KV attention's partials).
  if (k.workspace_bytes > 0) entry["workspace_bytes"] = k.workspace_bytes;
  // CUDA: a program is a cluster of this many blocks (grid counts blocks; the
  // source fixes the shape with __cluster_dims__, so a plain launch forms them).
  if (const ir::Attr* c = op.attr("cluster")) entry["cluster"] = *c->as_int();
  return entry;
}

namespace {

std::string said(const json& manifest_value) { return manifest_value.is_null() ? "nothing" : manifest_value.dump(); }

std::string kernel_contradiction(const json& entry, const ir::Op& op, const targets::Lane& lane,
                                 const std::string& dir) {
  const ir::KernelDesc k = ir::read_kernel_desc(op);
  if (k.target != lane.name)
    return fmt::format("kernel @{} was rendered for {}, the manifest says the package is for {}", k.sym, k.target,
                       lane.name);
  json expected = kernel_entry(op, k, lane);
  // A lane's extras that follow from the kernel alone (Metal's dispatch
  // geometry) are derived again; a compile check (HIP) writes its product and
  // is not re-run here.
  if (lane.package_kernel && lane.execution != targets::Execution::kCompileCheckOnly)
    lane.package_kernel(k, dir, expected);
  std::set<std::string> allowed;
  for (auto& [key, value] : expected.items()) {
    allowed.insert(key);
    const json got = entry.contains(key) ? entry[key] : json();
    if (got != value)
      return fmt::format("kernel @{}: the manifest says {} {}, its Target IR gives {}", k.sym, key, said(got),
                         value.dump());
  }
  if (lane.execution == targets::Execution::kCompileCheckOnly) {
    allowed.insert("code_object");
    const json& co = entry.contains("code_object") ? entry["code_object"] : json();
    if (!co.is_object() || !co.contains("arch") || !co["arch"].is_string())
      return fmt::format("kernel @{}: a {} package's kernels carry their code object, this one none", k.sym, lane.name);
    // The arch is the one the kernel was scheduled for.
    if (!k.device.empty() && co["arch"] != machine::parse(k.device).arch)
      return fmt::format("kernel @{}: its code object is for {}, its Target IR's device is {}", k.sym, said(co["arch"]),
                         machine::parse(k.device).arch);
    const std::string file = fmt::format("kernels/{}.{}.co", k.sym, co["arch"].get<std::string>());
    if (co.value("file", json()) != file)
      return fmt::format("kernel @{}: its code object is {}, not {}", k.sym, said(co.value("file", json())), file);
  }
  for (auto& [key, value] : entry.items())
    if (!allowed.count(key))
      return fmt::format("kernel @{}: the manifest adds {}, which its Target IR does not give", k.sym, key);
  return "";
}

std::string first_contradiction(const json& m, const ir::Module& t, const std::string& dir) {
  const json target = m.value("target", json());
  const targets::Lane* lane = target.is_string() ? targets::find(target.get<std::string>()) : nullptr;
  if (!lane) return "the manifest names no target this build knows: " + said(target);
  if (m.value("proves", json()) != lane->package_proves)
    return fmt::format("the manifest says it proves {}; a {} package proves \"{}\"", said(m.value("proves", json())),
                       lane->name, lane->package_proves);
  const json func = m.value("func", json());
  bool has_func = false;
  for (const ir::Op* f : t.funcs()) has_func = has_func || (func.is_string() && f->sym == func.get<std::string>());
  if (!has_func) return "the manifest names func " + said(func) + ", which its Target IR does not hold";
  if (m["target_ir"].value("file", json()) != func.get<std::string>() + ".target.tsr")
    return "the Target IR file is not named after the func the manifest names";
  std::map<std::string, const json*> entries;
  for (const json& e : m["kernels"])
    if (e.is_object() && e.contains("sym") && e["sym"].is_string()) entries[e["sym"].get<std::string>()] = &e;
  size_t kernels = 0;
  for (auto& op : t.ops) {
    if (op->name != "target.kernel") continue;
    ++kernels;
    auto it = entries.find(op->sym);
    if (it == entries.end()) return "kernel @" + op->sym + " of the Target IR is not in the manifest";
    if (std::string why = kernel_contradiction(*it->second, *op, *lane, dir); !why.empty()) return why;
  }
  if (kernels != m["kernels"].size()) return "the manifest lists kernels its Target IR does not hold";
  // Only a compile-check lane's writer records a check; the others emit only.
  const json check = m.value("compile_check", json());
  if (lane->execution != targets::Execution::kCompileCheckOnly && check != "none (emitted only)")
    return fmt::format("the manifest claims a compile check ({}) that a {} package does not do", said(check),
                       lane->name);
  return "";
}

}  // namespace

std::string contradiction(const json& manifest, const ir::Module& target_ir, const std::string& dir) {
  std::string why;
  try {
    why = first_contradiction(manifest, target_ir, dir);
  } catch (const json::exception& e) {
    why = std::string("the manifest has a field of the wrong type: ") + e.what();
  }
  return why.empty() ? why : "[E865] " + why;
}

}  // namespace tessera::package
