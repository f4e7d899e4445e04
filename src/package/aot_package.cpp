#include "package/aot_package.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "ir/parser.hpp"
#include "ir/printer.hpp"
#include "ir/target_dialect.hpp"
#include "passes/pipeline.hpp"
#include "runtime/disk_cache.hpp"
#include "support/file_read.hpp"
#include "support/sha256.hpp"
#include "targets/lane.hpp"

namespace tessera::package {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream o(p, std::ios::binary);
  o << bytes;
  if (!o) fail("E120", "cannot write '" + p.string() + "'");
}

// The manifest's digest covers everything but the digest field itself.
std::string manifest_digest(json m) {
  m.erase("manifest_sha256");
  return sha256_hex(m.dump());
}

}  // namespace

WriteResult write(const ir::Module& m, const std::string& target, const std::string& func, const std::string& dir) {
  auto t = passes::lower(m, ir::Layer::Target, target);
  const targets::Lane& lane = targets::renderable(target);
  const ir::Op* f = nullptr;
  for (ir::Op* c : t->funcs())
    if (func.empty() || c->sym == func) f = f ? f : c;
  if (!f) fail("E711", "no func @" + func + " in the module");
  fs::create_directories(fs::path(dir) / "kernels");
  WriteResult r;
  r.compile_check = "none (emitted only)";
  json kernels = json::array();
  for (auto& op : t->ops) {
    if (op->name != "target.kernel") continue;
    ir::KernelDesc k = ir::read_kernel_desc(*op);
    const std::string src_file = "kernels/" + k.sym + lane.source_extension;
    write_file(fs::path(dir) / src_file, k.source);
    json buffers = json::array();
    for (auto& b : k.buffers) buffers.push_back(b.str());
    json entry = {{"sym", k.sym},         {"sha256", k.sha256}, {"source_file", src_file},         {"grid", k.grid},
                  {"threads", k.threads}, {"buffers", buffers}, {"artifact_hash", k.artifact_hash}};
    if (!k.tensor_maps.empty()) {  // CUDA TMA: encoded by the loader over its buffers, passed after them
      json maps = json::array();
      for (auto& t : k.tensor_maps) maps.push_back(t.str());
      entry["tensor_maps"] = maps;
    }
    // CUDA: a program is a cluster of this many blocks (grid counts blocks; the
    // source fixes the shape with __cluster_dims__, so a plain launch forms them).
    if (const ir::Attr* c = op->attr("cluster")) entry["cluster"] = *c->as_int();
    if (lane.package_kernel)  // what its loader needs, or its compile check and product
      if (std::string check = lane.package_kernel(k, dir, entry); !check.empty()) r.compile_check = check;
    kernels.push_back(entry);
    ++r.kernels;
  }
  const std::string tir = ir::print(*t);
  const std::string tir_file = f->sym + ".target.tsr";
  write_file(fs::path(dir) / tir_file, tir);
  json manifest = {{"format", kPackageFormat},
                   {"target", target},
                   {"func", f->sym},
                   {"target_ir", {{"file", tir_file}, {"sha256", sha256_hex(tir)}}},
                   {"kernels", kernels},
                   {"compile_check", r.compile_check},
                   {"proves", lane.package_proves}};
  manifest["manifest_sha256"] = manifest_digest(manifest);
  write_file(fs::path(dir) / "manifest.json", manifest.dump(1) + "\n");
  return r;
}

// Fields are read with their types assumed; verify turns a wrong type into
// an invalid package.
static Verification verify_fields(const std::string& dir) {
  Verification v;
  json m;
  try {
    std::string why;  // never a FIFO or device: it could block
    auto text = read_regular_file((fs::path(dir) / "manifest.json").string(), why);
    if (!text) throw std::runtime_error(why);
    m = json::parse(*text);
  } catch (const std::exception& e) {
    v.detail = std::string("manifest.json is missing or not JSON: ") + e.what();
    return v;
  }
  if (!m.is_object() || m.value("format", "") != kPackageFormat || !m.contains("kernels") || !m.contains("target_ir") ||
      !m.contains("manifest_sha256")) {
    v.detail = std::string("manifest.json is not a ") + kPackageFormat + " manifest";
    return v;
  }
  v.verdict = Verdict::Tampered;
  if (m["manifest_sha256"] != manifest_digest(m)) {
    v.detail = "manifest.json was edited after it was written (its digest does not match)";
    return v;
  }
  auto file_digest = [&](const std::string& rel) -> std::string {
    std::string why;
    auto bytes = read_regular_file((fs::path(dir) / rel).string(), why);
    return bytes ? sha256_hex(*bytes) : "missing";
  };
  const std::string tir_file = m["target_ir"].value("file", "");
  if (file_digest(tir_file) != m["target_ir"].value("sha256", "")) {
    v.detail = tir_file + " does not match its recorded sha256";
    return v;
  }
  std::map<std::string, std::string> tir_digest;  // sym -> sha256 recorded in the Target IR
  try {
    auto t = ir::parse_file((fs::path(dir) / tir_file).string());
    ir::verify_target(*t);  // every embedded source against its sha256
    for (auto& op : t->ops)
      if (op->name == "target.kernel") tir_digest[op->sym] = ir::read_kernel_desc(*op).sha256;
  } catch (const Error& e) {
    v.detail = std::string("the Target IR does not verify: ") + e.what();
    return v;
  }
  if (tir_digest.size() != m["kernels"].size()) {
    v.detail = "the manifest and the Target IR list different kernels";
    return v;
  }
  for (const json& k : m["kernels"]) {
    const std::string sym = k.value("sym", "?");
    if (!tir_digest.count(sym) || tir_digest[sym] != k.value("sha256", "")) {
      v.detail = "kernel @" + sym + ": the manifest and the Target IR disagree on its sha256";
      return v;
    }
    if (file_digest(k.value("source_file", "")) != k.value("sha256", "")) {
      v.detail = "kernel @" + sym + ": " + k.value("source_file", "") + " does not match its sha256";
      return v;
    }
    if (k.contains("code_object") &&
        file_digest(k["code_object"].value("file", "")) != k["code_object"].value("sha256", "")) {
      v.detail = "kernel @" + sym + ": the code object does not match its sha256";
      return v;
    }
  }
  v.verdict = Verdict::Intact;
  v.detail = "intact: " + std::to_string(m["kernels"].size()) + " kernel(s) for " + m.value("target", "?") + "; " +
             m.value("compile_check", "");
  return v;
}

Verification verify(const std::string& dir) {
  try {
    return verify_fields(dir);
  } catch (const json::exception& e) {  // a field of the wrong type
    return {Verdict::Invalid, std::string("manifest.json: a field has the wrong type: ") + e.what()};
  }
}

}  // namespace tessera::package
