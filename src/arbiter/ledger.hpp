// The tuning ledger: the arbiter's decisions, persisted as one JSON file
// (<cache root>/tuning-ledger.json). An entry is found only by its key, a
// SHA-256 over everything the decision depends on (target, device identity,
// toolchain and library versions, the region with its exact shapes, and
// every candidate's kernel digests), so a change to any of them is a miss
// and the arbiter measures again: an entry is never trusted past its key.
// Writes go to a temporary file renamed over the ledger (readers never see
// half a file); a ledger that does not parse is set aside, not trusted.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tessera::arbiter {

class Ledger {
 public:
  explicit Ledger(std::string path);
  static std::string default_path();  // <cache root>/tuning-ledger.json
  const std::string& path() const { return path_; }

  std::optional<nlohmann::json> lookup(const std::string& key) const;
  void record(const std::string& key, const nlohmann::json& entry);  // re-reads, merges, publishes

 private:
  nlohmann::json read() const;
  std::string path_;
};

}  // namespace tessera::arbiter
