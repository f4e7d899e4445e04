// The kernel cache on the command line: what it holds, bounding it, emptying
// it. All three act on the directory the runtime uses (docs/cache.md), and
// take the cache's lock to evict, so running processes are never disturbed.
#include "cli_cache.hpp"

#include <fmt/core.h>

#include <cstdlib>
#include <ctime>
#include <map>
#include <string>

#include "runtime/cache_dir.hpp"
#include "support/diagnostic.hpp"

namespace tessera::cli {

namespace {

std::string max_bytes_text;

std::string utc(std::time_t t) {
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", bytes / 1048576.0); }

int info() {
  const std::string root = runtime::default_cache_root();
  const uint64_t cap = runtime::cache_max_bytes();
  const bool cap_set = std::getenv("TESSERA_CACHE_MAX_BYTES") && *std::getenv("TESSERA_CACHE_MAX_BYTES");
  const runtime::CacheSummary s = runtime::scan_cache(root);
  std::map<std::string, int> per_ns;
  for (const auto& e : s.entries) ++per_ns[e.ns];
  std::string split;
  for (auto& [ns, n] : per_ns) split += fmt::format("{}{} {}", split.empty() ? "" : ", ", ns, n);
  fmt::print("cache: {}\n", root);
  fmt::print("entries: {}{}\n", s.entries.size(), split.empty() ? "" : " (" + split + ")");
  fmt::print("bytes: {} ({})\n", s.bytes, mib(s.bytes));
  fmt::print("cap: {} ({}; {})\n", cap, mib(cap), cap_set ? "TESSERA_CACHE_MAX_BYTES" : "default");
  if (!s.entries.empty()) {
    const auto &oldest = s.entries.front(), &newest = s.entries.back();
    fmt::print("oldest use: {}  {}/{}\n", utc(oldest.last_used), oldest.ns, oldest.key);
    fmt::print("newest use: {}  {}/{}\n", utc(newest.last_used), newest.ns, newest.key);
  }
  fmt::print("temp directories: {}\n", s.temp_dirs);
  return 0;
}

int prune(uint64_t max_bytes, int stale_after_s, const char* verb) {
  const std::string root = runtime::default_cache_root();
  const runtime::PruneResult r = runtime::prune_cache(root, max_bytes, "", stale_after_s);
  const runtime::CacheSummary s = runtime::scan_cache(root);
  fmt::print("{} {}: evicted {} entries, {} bytes; reclaimed {} temp directories; {} entries, {} bytes remain\n", verb,
             root, r.evicted, r.evicted_bytes, r.reclaimed, s.entries.size(), s.bytes);
  return 0;
}

}  // namespace

CacheCommands add_cache_commands(CLI::App& app) {
  CacheCommands c;
  auto* cache = app.add_subcommand("cache", "inspect, bound or empty the kernel cache");
  cache->require_subcommand(1);
  c.info = cache->add_subcommand("info", "where the cache is, what it holds, its cap");
  c.prune = cache->add_subcommand("prune", "evict least recently used entries down to the cap; reclaim stale temps");
  c.prune
      ->add_option("--max-bytes", max_bytes_text,
                   "bound to this many bytes (K/M/G/T suffixes) instead of TESSERA_CACHE_MAX_BYTES")
      ->check([](const std::string& v) -> std::string {
        try {
          runtime::parse_byte_count(v);
          return "";
        } catch (const Error& e) {
          return e.message();
        }
      });
  c.clear = cache->add_subcommand("clear", "remove every entry (the tuning ledger stays)");
  return c;
}

int run_cache_commands(const CacheCommands& c) {
  if (c.info->parsed()) return info();
  if (c.prune->parsed())
    return prune(max_bytes_text.empty() ? runtime::cache_max_bytes() : runtime::parse_byte_count(max_bytes_text), 3600,
                 "pruned");
  // A killed process's temps go at once here; a live process's never do.
  if (c.clear->parsed()) return prune(0, 0, "cleared");
  return -1;
}

}  // namespace tessera::cli
