// Evidence packets: the JSON record of one `tessera bench` run, sealed with a
// manifest (SHA-256 of the canonical body). Verification tells intact-and-fresh
// from stale (the sources changed since) from tampered or invalid.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace tessera::evidence {

inline constexpr const char* kPacketFormat = "tessera-evidence-v1";

// Adds "manifest": {"body_sha256": ...} over everything else.
void seal(nlohmann::json& packet);

enum class Verdict { Fresh = 0, Stale = 10, Unsealed = 11, Tampered = 20, Invalid = 21 };
const char* verdict_name(Verdict v);

struct Verification {
  Verdict verdict;
  std::string detail;
};
// `root` is the source tree to compare the recorded fingerprint with.
Verification verify_packet(const std::string& path, const std::string& root);

}  // namespace tessera::evidence
