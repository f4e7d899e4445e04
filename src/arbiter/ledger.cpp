#include "arbiter/ledger.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "runtime/disk_cache.hpp"
#include "support/diagnostic.hpp"

namespace tessera::arbiter {

namespace fs = std::filesystem;

Ledger::Ledger(std::string path) : path_(std::move(path)) {}

std::string Ledger::default_path() { return (fs::path(runtime::default_cache_root()) / "tuning-ledger.json").string(); }

nlohmann::json Ledger::read() const {
  std::ifstream in(path_);
  if (!in) return {{"version", 1}, {"entries", nlohmann::json::object()}};
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("version", 0) != 1 || !j.contains("entries") ||
      !j["entries"].is_object()) {
    std::error_code ec;
    fs::rename(path_, path_ + ".corrupt", ec);  // never trusted, kept for a look
    return {{"version", 1}, {"entries", nlohmann::json::object()}};
  }
  return j;
}

std::optional<nlohmann::json> Ledger::lookup(const std::string& key) const {
  nlohmann::json j = read();
  auto it = j["entries"].find(key);
  if (it == j["entries"].end() || !it->is_object() || it->value("key", "") != key) return std::nullopt;
  return *it;
}

void Ledger::record(const std::string& key, const nlohmann::json& entry) {
  std::error_code ec;
  fs::create_directories(fs::path(path_).parent_path(), ec);
  nlohmann::json j = read();
  nlohmann::json e = entry;
  e["key"] = key;
  j["entries"][key] = e;
  const std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    if (!out) fail("E771", "cannot write the tuning ledger at " + tmp);
    out << j.dump(1) << "\n";
  }
  fs::rename(tmp, path_, ec);
  if (ec) fail("E771", "cannot publish the tuning ledger at " + path_ + ": " + ec.message());
}

}  // namespace tessera::arbiter
