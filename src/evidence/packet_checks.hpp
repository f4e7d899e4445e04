// What a packet says that follows from the rest of it: the manifest's SHA-256
// is unkeyed, so anyone can edit a packet and recompute it. `evidence verify`
// therefore re-derives what it can instead of trusting a matching digest: the
// derived numbers from the times and sizes they came from, the bytes and
// flops from the measured program, the seal from the source it records, and
// (packet.cpp) the fingerprint from the commit it names. A forgery that is
// consistent in every one of these is caught only by a signature (signing.hpp).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "evidence/packet.hpp"

namespace tessera::evidence {

// The first claim of `packet` that contradicts its own content: tampered,
// "[E860] ..."; a field of the wrong type: invalid. nullopt when consistent.
std::optional<Verification> contradiction(const nlohmann::json& packet);

}  // namespace tessera::evidence
