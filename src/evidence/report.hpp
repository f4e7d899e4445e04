// `tessera evidence report DIR`: every packet under DIR as one markdown table
// (DIR/report.md) and a bar chart of achieved bandwidth against the ceiling
// measured in the same run (DIR/report.svg), each row marked fresh or stale.
#pragma once
#include <string>

namespace tessera::evidence {

// Returns the number of packets rendered; E856 if none.
int write_report(const std::string& dir, const std::string& source_root);

}  // namespace tessera::evidence
