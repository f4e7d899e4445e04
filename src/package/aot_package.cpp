#include "package/aot_package.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "ir/parser.hpp"
#include "ir/printer.hpp"
#include "ir/target_dialect.hpp"
#include "package/rederive.hpp"
#include "passes/pipeline.hpp"
#include "runtime/disk_cache.hpp"
#include "support/atomic_file.hpp"
#include "support/ed25519.hpp"
#include "support/file_read.hpp"
#include "support/sha256.hpp"
#include "targets/lane.hpp"

namespace tessera::package {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

void write_file(const fs::path& p, const std::string& bytes) { write_file_atomic(p.string(), bytes); }

// The manifest's digest covers everything but the digest field itself (and a signature, made after it).
std::string manifest_digest(json m) {
  m.erase("manifest_sha256");
  m.erase("signature");
  return sha256_hex(m.dump());
}

// What a signature signs: the manifest without the signature, canonical, after a context string.
std::string signed_message(json m) {
  m.erase("signature");
  return std::string(kPackageFormat) + " manifest\n" + m.dump();
}

}  // namespace

WriteResult write(const ir::Module& m, const machine::Descriptor& device, const std::string& func,
                  const std::string& dir) {
  const std::string target = device.target();
  auto t = passes::lower(m, ir::Layer::Target, device);
  const targets::Lane& lane = targets::renderable(target);
  const ir::Op* f = nullptr;
  for (ir::Op* c : t->funcs())
    if (func.empty() || c->sym == func) f = f ? f : c;
  if (!f) fail("E711", "no func @" + func + " in the module");
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "kernels", ec);
  if (ec) fail("E120", "cannot create the package directory '" + dir + "/kernels': " + ec.message());
  WriteResult r;
  r.compile_check = "none (emitted only)";
  json kernels = json::array();
  for (auto& op : t->ops) {
    if (op->name != "target.kernel") continue;
    ir::KernelDesc k = ir::read_kernel_desc(*op);
    json entry = kernel_entry(*op, k, lane);
    write_file(fs::path(dir) / entry["source_file"].get<std::string>(), k.source);
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
static Verification verify_fields(const std::string& dir, const std::string& public_key) {
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
  std::unique_ptr<ir::Module> t;
  try {
    t = ir::parse_file((fs::path(dir) / tir_file).string());
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
  // The digests match; whether what the manifest says follows from the Target IR is checked apart.
  if (std::string why = contradiction(m, *t, dir); !why.empty()) {
    v.detail = why;
    return v;
  }
  std::string note;
  if (!public_key.empty()) {
    const bool has = m.contains("signature") && m["signature"].is_object();
    std::string key_id;
    if (!has) {
      v.detail = "[E862] not signed, and a signature by " + public_key + " was required";
      return v;
    }
    if (m["signature"].value("algorithm", "") != "ed25519" ||
        !ed25519_verify(public_key, signed_message(m), m["signature"].value("value", ""), &key_id)) {
      v.detail = "[E862] the signature does not verify with " + public_key +
                 " (the manifest changed after signing, or another key signed it)";
      return v;
    }
    note = "; signature verified (key " + key_id.substr(0, 12) + ")";
  } else if (m.contains("signature") && m["signature"].is_object()) {
    note = "; signed by key " + m["signature"].value("key_id", std::string("?")).substr(0, 12) +
           " (not checked: no --pubkey)";
  }
  v.verdict = Verdict::Intact;
  v.detail = "intact: " + std::to_string(m["kernels"].size()) + " kernel(s) for " + m.value("target", "?") + "; " +
             m.value("compile_check", "") + note;
  return v;
}

Verification verify(const std::string& dir, const std::string& public_key) {
  try {
    return verify_fields(dir, public_key);
  } catch (const json::exception& e) {  // a field of the wrong type
    return {Verdict::Invalid, std::string("manifest.json: a field has the wrong type: ") + e.what()};
  }
}

std::string sign(const std::string& dir, const std::string& private_key) {
  const Verification v = verify(dir);
  if (v.verdict != Verdict::Intact) fail("E864", "will not sign '" + dir + "': " + v.detail);
  const std::string path = (fs::path(dir) / "manifest.json").string();
  json m = json::parse(runtime::read_text_file(path));
  const Ed25519Signature s = ed25519_sign(private_key, signed_message(m));
  m["signature"] = {{"algorithm", "ed25519"}, {"key_id", s.key_id}, {"value", s.value_hex}};
  write_file(path, m.dump(1) + "\n");
  return s.key_id;
}

}  // namespace tessera::package
