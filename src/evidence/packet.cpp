#include "evidence/packet.hpp"

#include <optional>

#include "evidence/packet_checks.hpp"
#include "evidence/provenance.hpp"
#include "support/ed25519.hpp"
#include "support/file_read.hpp"
#include "support/sha256.hpp"

namespace tessera::evidence {

namespace {
std::string body_digest(nlohmann::json packet) {
  packet.erase("manifest");
  return sha256_hex(packet.dump());
}

// What a signature signs: the manifest without the signature, in canonical
// form, after a context string (so it cannot be taken for another kind of signature).
std::string signed_message(nlohmann::json manifest) {
  manifest.erase("signature");
  return std::string(kPacketFormat) + " manifest\n" + manifest.dump();
}

// With a key: the packet must be signed by it. Without: say who signed it, unchecked.
std::optional<Verification> check_signature(const nlohmann::json& p, const std::string& public_key, std::string& note) {
  const nlohmann::json& m = p["manifest"];
  const bool has = m.contains("signature") && m["signature"].is_object();
  if (public_key.empty()) {
    if (has)
      note = "; signed by key " + m["signature"].value("key_id", std::string("?")).substr(0, 12) +
             " (not checked: no --pubkey)";
    return std::nullopt;
  }
  if (!has)
    return Verification{Verdict::Tampered, "[E862] not signed, and a signature by " + public_key + " was required"};
  const nlohmann::json& sig = m["signature"];
  std::string key_id;
  const bool ok = sig.value("algorithm", "") == "ed25519" &&
                  ed25519_verify(public_key, signed_message(m), sig.value("value", ""), &key_id);
  if (!ok)
    return Verification{Verdict::Tampered, "[E862] the signature does not verify with " + public_key +
                                               " (the manifest changed after signing, or another key signed it)"};
  note = "; signature verified (key " + key_id.substr(0, 12) + ")";
  return std::nullopt;
}
}  // namespace

void sign_packet(nlohmann::json& packet, const std::string& private_key) {
  const Ed25519Signature s = ed25519_sign(private_key, signed_message(packet["manifest"]));
  packet["manifest"]["signature"] = {{"algorithm", "ed25519"}, {"key_id", s.key_id}, {"value", s.value_hex}};
}

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
static Verification verify_packet_fields(const std::string& path, const std::string& root,
                                         const std::string& public_key) {
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
  // The digest matches, which anyone can arrange: what can be re-derived is.
  if (std::optional<Verification> v = contradiction(p)) return *v;
  std::string note;
  if (std::optional<Verification> v = check_signature(p, public_key, note)) return *v;
  if (!p.value("sealed", false))
    return {Verdict::Unsealed, "intact, but recorded unsealed (dirty tree): it proves nothing about a commit" + note};
  const std::string recorded = p["source"].value("fingerprint", "");
  const std::string commit = p["source"].value("commit", "?");
  const std::optional<FingerprintScope> scope = recorded_scope(p["source"]);
  if (!scope)
    return {Verdict::Tampered, "[E861] its fingerprint covers " + p["source"]["fingerprint_covers"].dump() +
                                   ", which is not a scope Tessera fingerprints"};
  if (std::optional<std::string> at = source_fingerprint_at(root, commit, *scope)) {
    if (*at != recorded)
      return {Verdict::Tampered, "[E861] its fingerprint " + recorded.substr(0, 12) + " is not that of the commit it " +
                                     "names, " + commit + " (" + at->substr(0, 12) + ")"};
    note = "; fingerprint matches commit " + commit.substr(0, 12) + note;
  } else {
    note = "; commit " + commit.substr(0, 12) + " is not in this checkout, its fingerprint unchecked" + note;
  }
  const std::string now = source_fingerprint(root, *scope);
  if (recorded != now)
    return {Verdict::Stale, "sources changed since it was recorded at " + commit + " (fingerprint " +
                                recorded.substr(0, 12) + " vs now " + now.substr(0, 12) + ")" + note};
  return {Verdict::Fresh, "intact; recorded at " + commit + " from the same sources" + note};
}

Verification verify_packet(const std::string& path, const std::string& root, const std::string& public_key) {
  try {
    return verify_packet_fields(path, root, public_key);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
    return {Verdict::Invalid, std::string("a field has the wrong type: ") + e.what()};
  }
}

}  // namespace tessera::evidence
