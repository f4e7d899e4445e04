#pragma once
#include <CLI/CLI.hpp>

namespace tessera::cli {
// `tessera bench` and `tessera evidence verify|report|fingerprint`.
struct EvidenceCommands {
  CLI::App* bench = nullptr;
  CLI::App* verify = nullptr;
  CLI::App* report = nullptr;
  CLI::App* fingerprint = nullptr;
  CLI::App* sign = nullptr;
};
EvidenceCommands add_evidence_commands(CLI::App& app);
// Runs whichever was parsed; returns its exit code, or -1 if none was.
int run_evidence_commands(const EvidenceCommands& c);
}  // namespace tessera::cli
