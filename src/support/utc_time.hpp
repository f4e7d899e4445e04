// The current time as an ISO 8601 UTC string, as recorded in evidence packets
// and arbiter ledgers.
#pragma once
#include <string>

namespace tessera {

std::string utc_now_iso();  // e.g. "2024-05-01T12:00:00Z"

}  // namespace tessera
