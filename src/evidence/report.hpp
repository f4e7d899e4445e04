// `tessera evidence report DIR`: every packet under DIR as one markdown table
// (DIR/report.md) and a bar chart of achieved bandwidth against the ceiling
// measured in the same run (DIR/report.svg), each row marked fresh or stale.
#pragma once
#include <string>

namespace tessera::evidence {

// Returns the number of packets rendered; E856 if none.
int write_report(const std::string& dir, const std::string& source_root);

// The README's performance table: a few headline cases, one markdown row each
// (case, target and device, Tessera's throughput and time, ratios to the
// anchors and to a library candidate measured on the same program, and the
// packet's date and fresh/stale verdict). The cases are those DIR/headlines.json
// names, in its order ({"packets": [{"packet": "cpu/reduce.packet.json",
// "cases": ["sum_8192x8192_axis1", ...]}, ...]}); without that file, every case
// of every packet. E857 when it names a packet or a case that is not there.
std::string headline_table(const std::string& dir, const std::string& source_root);

inline constexpr const char* kTableBegin = "<!-- perf-table:begin -->";
inline constexpr const char* kTableEnd = "<!-- perf-table:end -->";
// `text` with the lines between the kTableBegin and kTableEnd lines replaced by
// `table`; E857 when the markers are missing or out of order.
std::string splice_table(const std::string& text, const std::string& table);

}  // namespace tessera::evidence
