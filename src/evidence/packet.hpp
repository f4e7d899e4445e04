// Evidence packets: the JSON record of one `tessera bench` run, sealed with a
// manifest (SHA-256 of the canonical body) and optionally signed. Verification
// tells intact-and-fresh from stale (the sources changed since) from tampered
// or invalid. The manifest alone detects accidents, not forgery: anyone can
// recompute it (docs/evidence.md).
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
// `root` is the source tree to compare the recorded fingerprint with. Beyond
// the manifest: what the packet says must follow from its content
// (packet_checks.hpp), and a sealed packet's fingerprint must be that of the
// commit it names where that commit is in root's git (E861). With
// `public_key` (a PEM file), the packet must carry a signature by that key
// over its manifest (E862); otherwise a signature is reported, not checked.
Verification verify_packet(const std::string& path, const std::string& root, const std::string& public_key = "");

// Signs the packet's manifest (which covers the body) with an Ed25519 private
// key: manifest.signature = {algorithm, key_id, value}. The body, and so the
// manifest's digest, are unchanged.
void sign_packet(nlohmann::json& packet, const std::string& private_key);

}  // namespace tessera::evidence
