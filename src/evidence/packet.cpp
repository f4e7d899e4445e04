#include "evidence/packet.hpp"

#include <optional>

#include "evidence/provenance.hpp"
#include "support/file_read.hpp"
#include "support/sha256.hpp"

namespace tessera::evidence {

namespace {
std::string body_digest(nlohmann::json packet) {
  packet.erase("manifest");
  return sha256_hex(packet.dump());
}
}  // namespace

void seal(nlohmann::json& packet) {
  packet["manifest"] = {{"body_sha256", body_digest(packet)}, {"algorithm", "sha256 of the JSON body, keys sorted"}};
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Fresh: return "fresh";
    case Verdict::Stale: return "stale";
    case Verdict::Unsealed: return "unsealed";
    case Verdict::Tampered: return "tampered";
    case Verdict::Invalid: return "invalid";
  }
  return "?";
}

// Fields are read with their types assumed; verify_packet turns a wrong type
// into an invalid packet.
static Verification verify_packet_fields(const std::string& path, const std::string& root) {
  std::string why;
  std::optional<std::string> text = read_regular_file(path, why);
  if (!text) return {Verdict::Invalid, "cannot read " + path + ": " + why};
  nlohmann::json p;
  try {
    p = nlohmann::json::parse(*text);
  } catch (const std::exception& e) {
    return {Verdict::Invalid, std::string("not valid JSON (truncated?): ") + e.what()};
  }
  if (!p.is_object() || p.value("format", "") != kPacketFormat)
    return {Verdict::Invalid, std::string("not a ") + kPacketFormat + " packet"};
  if (!p.contains("manifest") || !p["manifest"].is_object() || !p["manifest"].contains("body_sha256"))
    return {Verdict::Tampered, "no manifest: the packet was never sealed or its manifest was removed"};
  if (p["manifest"]["body_sha256"] != body_digest(p))
    return {Verdict::Tampered, "the body does not match the manifest's SHA-256 (edited after sealing)"};
  if (!p.value("sealed", false))
    return {Verdict::Unsealed, "intact, but recorded unsealed (dirty tree): it proves nothing about a commit"};
  const std::string recorded = p["source"].value("fingerprint", "");
  const std::string now = source_fingerprint(root);
  if (recorded != now)
    return {Verdict::Stale, "sources changed since it was recorded at " + p["source"].value("commit", "?") +
                                " (fingerprint " + recorded.substr(0, 12) + " vs now " + now.substr(0, 12) + ")"};
  return {Verdict::Fresh, "intact; recorded at " + p["source"].value("commit", "?") + " from the same sources"};
}

Verification verify_packet(const std::string& path, const std::string& root) {
  try {
    return verify_packet_fields(path, root);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
    return {Verdict::Invalid, std::string("a field has the wrong type: ") + e.what()};
  }
}

}  // namespace tessera::evidence
