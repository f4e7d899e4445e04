#pragma once
#include <CLI/CLI.hpp>

namespace tessera::cli {
// `tessera cache info | prune [--max-bytes N] | clear` (docs/cache.md).
struct CacheCommands {
  CLI::App* info = nullptr;
  CLI::App* prune = nullptr;
  CLI::App* clear = nullptr;
};
CacheCommands add_cache_commands(CLI::App& app);
// Runs whichever was parsed; returns its exit code, or -1 if none was.
int run_cache_commands(const CacheCommands& c);
}  // namespace tessera::cli
